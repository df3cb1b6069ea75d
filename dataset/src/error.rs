//! The crate's one error type.

/// What failed while reading or writing a run's files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read, written or understood.
    #[error("output {path}: {detail}")]
    File {
        /// The file (or directory).
        path: String,
        /// What went wrong.
        detail: String,
    },
    /// A run table's rows break the run contract (a mistyped or impossible value).
    #[error(transparent)]
    Run(#[from] run::Error),
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An [`Error::File`] for `path`.
pub(crate) fn file_err(path: &std::path::Path, e: impl std::fmt::Display) -> Error {
    Error::File {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}
