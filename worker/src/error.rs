//! The worker's errors: what failed while carrying out a run, keeping the source error of
//! the store or the run contract.

/// Errors of a run and of the run files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store (an S3 request, the envelope, the commit protocol) failed.
    #[error(transparent)]
    Store(#[from] s3::Error),
    /// The run spec or a run table is invalid.
    #[error(transparent)]
    Run(#[from] run::Error),
    /// The trace exporter could not be built.
    #[error(transparent)]
    Traces(#[from] obs::Error),
    /// A run file could not be written or read back (`dataset`).
    #[error(transparent)]
    Dataset(#[from] dataset::Error),
    /// The envelope refused a key or the known-answer gate's input.
    #[error(transparent)]
    Envelope(#[from] envelope::Error),
    /// Invalid settings the spec holds (a results location that cannot be).
    #[error("invalid setting: {0}")]
    Config(String),
    /// The S3 credentials the spec names cannot be read or are unsafe.
    #[error("s3.credentials: {0}")]
    Credentials(String),
    /// The recipient key the spec names is missing, unreadable or of the wrong type.
    #[error("recipientKey: {0}")]
    RecipientKey(String),
    /// A server-side sampler's source is invalid (`telemetry`).
    #[error("telemetry: {0}")]
    Telemetry(String),
    /// The object size does not fit in this machine's memory.
    #[error("objectSize {0} does not fit in memory")]
    TooLarge(u64),
    /// A task of the run (a fixture writer, a worker) panicked or was cancelled.
    #[error("{what} task failed: {source}")]
    Task {
        /// Which task.
        what: &'static str,
        /// Why.
        #[source]
        source: tokio::task::JoinError,
    },
    /// The run spec's `cpus` could not be applied (not CPUs this process may use).
    #[error("placement: {0}")]
    Placement(String),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The start gate failed: no start instant in time, or not an instant.
    #[error("start gate: {0}")]
    StartGate(String),
    /// The `/metrics` listener could not start.
    #[error("cannot listen on {addr} for /metrics: {source}")]
    Metrics {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The worker was not ready at the scheduled start (`startAt`); the run fails rather
    /// than starting late.
    #[error(
        "not ready at the scheduled start: ready {late_ms} ms after startAt; schedule startAt later (warm-up, known-answer gate and fixtures took {prepare_ms} ms)"
    )]
    NotReady {
        /// How late the process became ready.
        late_ms: u64,
        /// How long preparing took.
        prepare_ms: u64,
    },
    /// The known-answer gate or the warm-up round trip refused the configuration.
    #[error("known-answer gate: {0}")]
    Gate(String),
    /// The process was told to stop (SIGTERM: a pod being deleted, `podman stop`) before
    /// its run was written: nothing of it counts as complete (no checksum manifest).
    #[error(
        "stopped by SIGTERM during the run: it is incomplete (no SHA256SUMS was written) and will be run again"
    )]
    Terminated,
    /// Writing or uploading the run's files failed.
    #[error("output {path}: {detail}")]
    Output {
        /// The file or object.
        path: String,
        /// What went wrong.
        detail: String,
    },
    /// Writing the run's files failed because their file system is full (or the quota is
    /// spent): no attempt can do better until space is freed.
    #[error("output {path}: {detail} (the file system is full)")]
    NoSpace {
        /// The file being written.
        path: String,
        /// What went wrong.
        detail: String,
    },
}

/// Whether an I/O error says the file system is full (or the quota spent).
pub fn is_full(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error of writing `path`: [`Error::NoSpace`] when the file system is full.
    pub fn writing(path: &std::path::Path, e: &std::io::Error) -> Self {
        let (path, detail) = (path.display().to_string(), e.to_string());
        if is_full(e) {
            Self::NoSpace { path, detail }
        } else {
            Self::Output { path, detail }
        }
    }

    /// Fixed label for metrics and per-request records (never free text).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Store(e) => e.kind(),
            Self::Run(_)
            | Self::Config(_)
            | Self::Traces(_)
            | Self::Credentials(_)
            | Self::RecipientKey(_)
            | Self::Telemetry(_)
            | Self::TooLarge(_) => "config",
            Self::Task { .. } | Self::Runtime(_) => "internal",
            Self::Placement(_) => "placement",
            Self::StartGate(_) => "start_gate",
            Self::Metrics { .. } => "metrics",
            Self::Envelope(e) => e.kind(),
            Self::NotReady { .. } => "not_ready",
            Self::Gate(_) => "gate",
            Self::Output { .. } | Self::Dataset(dataset::Error::File { .. }) => "output",
            Self::NoSpace { .. } => "no_space",
            Self::Dataset(dataset::Error::Run(_)) => "config",
            Self::Terminated => "terminated",
        }
    }

    /// The S3 failure class, if this is an S3 error.
    pub fn s3_class(&self) -> Option<s3::S3Class> {
        match self {
            Self::Store(e) => e.s3_class(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_that_finds_the_disk_full_says_so() {
        let p = std::path::Path::new("/results/r0/p0/records.tmp");
        for kind in [
            std::io::ErrorKind::StorageFull,
            std::io::ErrorKind::QuotaExceeded,
        ] {
            let e = Error::writing(p, &std::io::Error::from(kind));
            assert!(matches!(e, Error::NoSpace { .. }), "{kind:?}: {e:?}");
            assert_eq!(e.kind(), "no_space");
            assert!(e.to_string().contains("the file system is full"), "{e}");
        }
        let e = Error::writing(
            p,
            &std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert!(matches!(e, Error::Output { .. }), "{e:?}");
    }
}
