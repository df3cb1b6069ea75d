//! Per-operation measurements: the study's five stage timers (section IV-A: key
//! establishment, key derivation, AES-GCM, manifest handling, storage), total time, the
//! thread CPU time of the crypto stages, and bytes; and, for traces, when each stage first
//! ran and each S3 call ([`Timeline`]), on the same monotonic clock as the timers.
//!
//! The timers of one operation are laps of one clock: each reading ends one interval and
//! begins the next, and each step of the operation (an envelope call, an S3 call, reading a
//! response body, the caller's source, sink or callback) claims the interval from the
//! previous reading to its own end, the small work that prepares it included (naming the
//! object, counting bytes). Nothing between the first reading and the last escapes
//! attribution, and the clock is read once per boundary instead of twice. Unaccounted time
//! (the study's validity check) is then exactly what the caller's source, sink and
//! callbacks took, and what the caller spends around the operation; separate start/stop
//! timers left the glue between them unaccounted, 10–25 µs per 64 KiB GET at light load,
//! enough to fail the 1 % aggregate check on a slower machine.

use std::time::{Duration, Instant};

use cpu_time::ThreadTime;
use serde::Serialize;

pub use run::records::Stage;

/// One S3 call of an operation: its API name, when it was sent, and the storage time
/// attributed to it: the call itself and, for the GET of `data.enc`, the reads of its body.
/// The calls of an operation add up to its storage stage exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Call {
    /// S3 API operation (`PutObject`, `GetObject`, `UploadPart`, …).
    pub op: &'static str,
    /// Where the call's interval began: preparing the request, then sending it.
    pub start: Instant,
    /// Storage time attributed to the call.
    pub storage: Duration,
}

/// When the stages of an operation first ran, and its S3 calls (what a trace shows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The operation's start; its manifest stage starts here (the object identity).
    pub start: Option<Instant>,
    /// The first per-object envelope call (seal or open setup): key establishment, then key
    /// derivation.
    pub first_object_call: Option<Instant>,
    /// The first chunk call (AEAD).
    pub first_chunk_call: Option<Instant>,
    /// The S3 calls in the order they were sent.
    pub calls: Vec<S3Call>,
}

/// What one logical operation cost.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpStats {
    /// Key establishment.
    pub key_establishment: Duration,
    /// Key derivation.
    pub key_derivation: Duration,
    /// AES-256-GCM.
    pub aead: Duration,
    /// Manifest handling.
    pub manifest: Duration,
    /// Inside S3 requests.
    pub storage: Duration,
    /// Wall time of the whole operation, from call to return.
    pub total: Duration,
    /// CPU time of the executing thread inside the four crypto stages.
    pub crypto_cpu: Duration,
    /// HTTP body bytes sent (data and manifest).
    pub bytes_sent: u64,
    /// HTTP body bytes received.
    pub bytes_received: u64,
    /// Size of `manifest.json`.
    pub manifest_bytes: u64,
    /// S3 requests made.
    pub s3_requests: u32,
    /// Wall time inside envelope chunk calls (seal/open of one chunk), clock reads
    /// included: all of it is AEAD work.
    #[serde(skip)]
    pub(crate) chunk_calls: Duration,
    /// Wall time inside the envelope's per-object calls (seal/open setup, finish).
    #[serde(skip)]
    pub(crate) object_calls: Duration,
    /// When each stage first ran and the S3 calls (for traces).
    #[serde(skip)]
    pub timeline: Timeline,
    /// The clock's last reading: where the next step's interval begins.
    #[serde(skip)]
    pub(crate) mark: Option<Instant>,
}

impl OpStats {
    /// The measurements of an operation that starts now: its first clock reading.
    pub(crate) fn begin() -> Self {
        let now = Instant::now();
        let mut st = Self {
            mark: Some(now),
            ..Self::default()
        };
        st.timeline.start = Some(now);
        st
    }

    /// Reads the clock: the interval since the last reading (its start and length) ends
    /// now, and the next one begins. Without an earlier reading the interval is empty.
    pub(crate) fn lap(&mut self) -> (Instant, Duration) {
        let now = Instant::now();
        let from = self.mark.replace(now).unwrap_or(now);
        (from, now.saturating_duration_since(from))
    }

    /// Claims the interval since the last reading for manifest handling.
    pub(crate) fn manifest_lap(&mut self) {
        let d = self.lap().1;
        self.manifest += d;
    }

    /// Claims the interval since the last reading for storage outside a request call
    /// (reading a response body, releasing it), adding it to the last S3 call too.
    pub(crate) fn storage_lap(&mut self) {
        let d = self.lap().1;
        self.storage += d;
        if let Some(c) = self.timeline.calls.last_mut() {
            c.storage += d;
        }
    }

    /// Leaves the interval since the last reading outside every stage: the caller's source,
    /// sink or callback ran in it.
    pub(crate) fn outside(&mut self) {
        self.lap();
    }

    /// Ends the operation: its total runs from its start to now.
    pub(crate) fn finish(&mut self) {
        let now = Instant::now();
        self.total = self
            .timeline
            .start
            .map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
    }

    /// Time of one stage.
    pub fn stage(&self, s: Stage) -> Duration {
        match s {
            Stage::KeyEstablishment => self.key_establishment,
            Stage::KeyDerivation => self.key_derivation,
            Stage::Aead => self.aead,
            Stage::Manifest => self.manifest,
            Stage::Storage => self.storage,
        }
    }

    /// Where a stage's span begins: the stage's first interval (key derivation follows key
    /// establishment inside the first per-object call). `None` if the stage never ran.
    pub fn stage_start(&self, s: Stage) -> Option<Instant> {
        let t = &self.timeline;
        match s {
            Stage::Manifest => t.start,
            Stage::KeyEstablishment => t.first_object_call,
            Stage::KeyDerivation => t.first_object_call.map(|i| i + self.key_establishment),
            Stage::Aead => t.first_chunk_call,
            Stage::Storage => t.calls.first().map(|c| c.start),
        }
    }

    /// Sum of the five stages.
    pub fn accounted(&self) -> Duration {
        Stage::ALL.iter().map(|&s| self.stage(s)).sum()
    }

    /// Total minus the stages: time spent outside every stage (reading the plaintext
    /// source, writing the sink, scheduling). Zero if the stages exceed the total, which the
    /// run validator treats as an error.
    pub fn unaccounted(&self) -> Duration {
        self.total.saturating_sub(self.accounted())
    }

    /// Adds the envelope's stage times of one object. The envelope times its stages
    /// inside its calls; what the calls spend outside those timers (the thread-CPU clock
    /// reads around them, the calls' own bookkeeping) is attributed to the stage the call
    /// belongs to, so that it does not count as unaccounted time: chunk calls are AEAD, the
    /// per-object calls (setup and finish) are key establishment, key derivation and
    /// manifest handling, and their remainder is manifest handling.
    pub(crate) fn add_envelope(&mut self, t: &envelope::StageTimes) {
        self.key_establishment += t.key_establishment;
        self.key_derivation += t.key_derivation;
        self.aead += t.aead.max(self.chunk_calls);
        self.manifest += t.manifest.max(self.object_calls.saturating_sub(
            t.key_establishment + t.key_derivation + t.aead.saturating_sub(self.chunk_calls),
        ));
        self.chunk_calls = Duration::ZERO;
        self.object_calls = Duration::ZERO;
    }
}

/// Which envelope call a [`cpu`] measurement wraps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    /// Seal or open one chunk.
    Chunk,
    /// Per-object setup or finish.
    Object,
}

/// Runs a synchronous envelope call, adding its thread CPU time to `crypto_cpu` and the
/// interval it claims (since the last clock reading, the thread-CPU clock reads included)
/// to the call kind's total.
pub(crate) fn cpu<T>(st: &mut OpStats, call: Call, f: impl FnOnce() -> T) -> T {
    let t = ThreadTime::try_now().ok();
    let r = f();
    if let Some(t) = t {
        st.crypto_cpu += t.elapsed();
    }
    let (from, wall) = st.lap();
    let first = match call {
        Call::Chunk => &mut st.timeline.first_chunk_call,
        Call::Object => &mut st.timeline.first_object_call,
    };
    first.get_or_insert(from);
    match call {
        Call::Chunk => st.chunk_calls += wall,
        Call::Object => st.object_calls += wall,
    }
    r
}
