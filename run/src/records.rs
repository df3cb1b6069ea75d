//! Per-request records and 1 Hz samples, the run's raw data (study section IV-A: "Every
//! request, including warm-up requests and failures, produces one record …").
//!
//! Both are written as Parquet ([`crate::table`]); the column lists below are the data
//! contract, documented in docs/src/runs.md, "Run files" and checked by `pqbench validate`.

use std::time::Duration;

use serde::Serialize;

use crate::table::{Column, ColumnSpec, Kind, Table};
use crate::{Error, Result};

/// The five stages of a request (study section IV-A).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Encapsulation/decapsulation, RSA, X25519, or the session-cache lookup.
    KeyEstablishment,
    /// HKDF-SHA256 and the AES key schedule.
    KeyDerivation,
    /// AES-256-GCM over the chunks.
    Aead,
    /// Building or parsing and validating the manifest.
    Manifest,
    /// Time inside S3 requests (signing, HTTP, waiting for the server, reading bodies).
    Storage,
}

impl Stage {
    /// All stages in record order.
    pub const ALL: [Stage; 5] = [
        Stage::KeyEstablishment,
        Stage::KeyDerivation,
        Stage::Aead,
        Stage::Manifest,
        Stage::Storage,
    ];

    /// Fixed label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KeyEstablishment => "key_establishment",
            Self::KeyDerivation => "key_derivation",
            Self::Aead => "aead",
            Self::Manifest => "manifest",
            Self::Storage => "storage",
        }
    }
}

/// The phase of the run a request belongs to, by its start (open loop: arrival) time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestPhase {
    /// The warm-up phase (first `warmup` after `startAt`): recorded, not analysed.
    Warmup,
    /// The measured window.
    Measured,
}

impl RequestPhase {
    /// Fixed label.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Warmup => "warmup",
            Self::Measured => "measured",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "warmup" => Some(Self::Warmup),
            "measured" => Some(Self::Measured),
            _ => None,
        }
    }
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Completed: committed (PUT) or fully authenticated (GET).
    Ok,
    /// Failed; `error_class` says how.
    Error,
    /// Open loop: arrived but no worker was free before the end of the run.
    NotStarted,
}

impl Outcome {
    /// Fixed label.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::NotStarted => "not_started",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "ok" => Some(Self::Ok),
            "error" => Some(Self::Error),
            "not_started" => Some(Self::NotStarted),
            _ => None,
        }
    }
}

/// Fields shared by every record of one process of one run (stored in every row so each
/// file stands alone in pandas/DuckDB).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunKeys {
    /// Run id.
    pub run_id: String,
    /// Campaign.
    pub campaign: String,
    /// Process index.
    pub process: u32,
    /// `put` or `get`.
    pub operation: String,
    /// Mode name.
    pub mode: String,
    /// Backend name.
    pub backend: String,
    /// Plaintext size.
    pub object_size: u64,
}

/// One request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Global worker index (0..concurrency).
    pub worker: u32,
    /// Sequence number of the request within its worker (open loop: within the process's
    /// arrival stream).
    pub seq: u64,
    /// Warm-up or measured.
    pub phase: Option<RequestPhase>,
    /// Start (open loop: arrival) as nanoseconds since the Unix epoch.
    pub start_unix_ns: i64,
    /// Start (open loop: arrival) relative to `startAt`, from the monotonic clock.
    pub offset: Duration,
    /// Wall time from start to completion (0 for `not_started`).
    pub total: Duration,
    /// Key establishment.
    pub key_establishment: Duration,
    /// Key derivation.
    pub key_derivation: Duration,
    /// AES-GCM.
    pub aead: Duration,
    /// Manifest handling.
    pub manifest: Duration,
    /// Inside S3 requests.
    pub storage: Duration,
    /// Open loop: from arrival to start. Closed loop: 0.
    pub queue_wait: Duration,
    /// Thread CPU time of the crypto stages.
    pub crypto_cpu: Duration,
    /// HTTP body bytes sent.
    pub bytes_sent: u64,
    /// HTTP body bytes received.
    pub bytes_received: u64,
    /// Manifest size.
    pub manifest_bytes: u64,
    /// S3 requests made.
    pub s3_requests: u32,
    /// How it ended.
    pub outcome: Option<Outcome>,
    /// Fixed error label (`connect`, `timeout`, `decrypt`, …) for failures.
    pub error_class: Option<&'static str>,
    /// `ml-kem-768-session` PUT: the session number within its process.
    pub session_id: Option<u64>,
    /// … the object's 0-based index within the session (must be < B_max).
    pub session_index: Option<u64>,
    /// … the age of the session root when the object was sealed (must be ≤ T_max).
    pub session_age: Option<Duration>,
}

impl Record {
    /// One stage timer.
    pub fn stage(&self, s: Stage) -> Duration {
        match s {
            Stage::KeyEstablishment => self.key_establishment,
            Stage::KeyDerivation => self.key_derivation,
            Stage::Aead => self.aead,
            Stage::Manifest => self.manifest,
            Stage::Storage => self.storage,
        }
    }

    /// Sum of the five stage timers.
    pub fn stage_sum(&self) -> Duration {
        self.key_establishment + self.key_derivation + self.aead + self.manifest + self.storage
    }
}

const fn col(name: &'static str, kind: Kind, optional: bool) -> ColumnSpec {
    ColumnSpec {
        name,
        kind,
        optional,
        added: None,
    }
}

/// A column appended later ([`ColumnSpec::added`]).
const fn col_added(name: &'static str, kind: Kind, added: &'static str) -> ColumnSpec {
    ColumnSpec {
        name,
        kind,
        optional: true,
        added: Some(added),
    }
}

/// The records schema (`records.parquet`). Durations are integer nanoseconds (`*_ns`).
pub const RECORD_SCHEMA: &[ColumnSpec] = &[
    col("run_id", Kind::Utf8, false),
    col("campaign", Kind::Utf8, false),
    col("process", Kind::Int64, false),
    col("worker", Kind::Int64, false),
    col("seq", Kind::Int64, false),
    col("phase", Kind::Utf8, false),
    col("operation", Kind::Utf8, false),
    col("mode", Kind::Utf8, false),
    col("backend", Kind::Utf8, false),
    col("object_size", Kind::Int64, false),
    col("start", Kind::TimestampNs, false),
    col("offset_ns", Kind::Int64, false),
    col("total_ns", Kind::Int64, false),
    col("key_establishment_ns", Kind::Int64, false),
    col("key_derivation_ns", Kind::Int64, false),
    col("aead_ns", Kind::Int64, false),
    col("manifest_ns", Kind::Int64, false),
    col("storage_ns", Kind::Int64, false),
    col("queue_wait_ns", Kind::Int64, false),
    col("crypto_cpu_ns", Kind::Int64, false),
    col("bytes_sent", Kind::Int64, false),
    col("bytes_received", Kind::Int64, false),
    col("manifest_bytes", Kind::Int64, false),
    col("s3_requests", Kind::Int64, false),
    col("outcome", Kind::Utf8, false),
    col("error_class", Kind::Utf8, true),
    col("session_id", Kind::Int64, true),
    col("session_index", Kind::Int64, true),
    col("session_age_ns", Kind::Int64, true),
];

fn ns(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

fn u(x: u64) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

fn dur(x: i64) -> Duration {
    Duration::from_nanos(u64::try_from(x).unwrap_or(0))
}

/// Builds the records table.
pub fn records_table(keys: &RunKeys, records: &[Record]) -> Table {
    let s = |v: &str| Some(v.to_owned());
    let n = records.len();
    let same_str = |v: &str| Column::Str(vec![s(v); n]);
    let same_i64 = |v: i64| Column::I64(vec![Some(v); n]);
    let i64s = |f: &dyn Fn(&Record) -> Option<i64>| Column::I64(records.iter().map(f).collect());
    let strs = |f: &dyn Fn(&Record) -> Option<String>| Column::Str(records.iter().map(f).collect());
    let columns = vec![
        same_str(&keys.run_id),
        same_str(&keys.campaign),
        same_i64(i64::from(keys.process)),
        i64s(&|r| Some(i64::from(r.worker))),
        i64s(&|r| Some(u(r.seq))),
        strs(&|r| r.phase.map(|p| p.as_str().to_owned())),
        same_str(&keys.operation),
        same_str(&keys.mode),
        same_str(&keys.backend),
        same_i64(u(keys.object_size)),
        i64s(&|r| Some(r.start_unix_ns)),
        i64s(&|r| Some(ns(r.offset))),
        i64s(&|r| Some(ns(r.total))),
        i64s(&|r| Some(ns(r.key_establishment))),
        i64s(&|r| Some(ns(r.key_derivation))),
        i64s(&|r| Some(ns(r.aead))),
        i64s(&|r| Some(ns(r.manifest))),
        i64s(&|r| Some(ns(r.storage))),
        i64s(&|r| Some(ns(r.queue_wait))),
        i64s(&|r| Some(ns(r.crypto_cpu))),
        i64s(&|r| Some(u(r.bytes_sent))),
        i64s(&|r| Some(u(r.bytes_received))),
        i64s(&|r| Some(u(r.manifest_bytes))),
        i64s(&|r| Some(i64::from(r.s3_requests))),
        strs(&|r| r.outcome.map(|o| o.as_str().to_owned())),
        strs(&|r| r.error_class.map(str::to_owned)),
        i64s(&|r| r.session_id.map(u)),
        i64s(&|r| r.session_index.map(u)),
        i64s(&|r| r.session_age.map(ns)),
    ];
    Table {
        schema: RECORD_SCHEMA,
        columns,
    }
}

/// Every error class a record can hold: `s3::Error::kind` (the S3 classes, the key
/// service's, the envelope's) and the engine's own. `s3`'s tests check its labels are here.
pub const KNOWN_ERROR_CLASSES: &[&str] = &[
    // Labels this list held before the S3 classes' (no error writes them now).
    "connect",
    "timeout",
    "io",
    "not_found",
    "no_such_bucket",
    "denied",
    "service",
    "other",
    "s3_connect",
    "s3_timeout",
    "s3_io",
    "s3_not_found",
    "s3_no_such_bucket",
    "s3_denied",
    "s3_service",
    "s3_other",
    "kms_throttled",
    "kms_not_found",
    "kms_access_denied",
    "kms_unavailable",
    "kms_timeout",
    "kms_invalid_ciphertext",
    "kms_invalid_request",
    "kms_other",
    "header",
    "not_post_quantum",
    "too_large",
    "request",
    "decrypt",
    "manifest",
    "mode_mismatch",
    "identity_mismatch",
    "wrong_recipient",
    "unknown_mode",
    "unknown_backend",
    "identity",
    "key",
    "key_file",
    "usage",
    "crypto",
    "not_committed",
    "verify",
    "source",
    "sink",
    "config",
    "server",
    "not_ready",
    "gate",
    "output",
    "not_started",
];

/// Interns an error class read back from a file (records hold `&'static str` labels).
fn intern(s: &str) -> &'static str {
    KNOWN_ERROR_CLASSES
        .iter()
        .find(|k| **k == s)
        .copied()
        .unwrap_or("unknown")
}

/// Reads records back from a table, with the run keys of its first row. Errors name the
/// row and column of a value that is out of range or not a known label.
pub fn records_from_table(t: &Table) -> Result<(Option<RunKeys>, Vec<Record>)> {
    let bad = |row: usize, col: &str, what: &str| Error::Records {
        row,
        column: col.to_owned(),
        what: what.to_owned(),
    };
    let n = t.rows();
    let get = |name: &str, i: usize| t.i64s(name).get(i).copied().flatten();
    let st = |name: &str, i: usize| t.strs(name).get(i).cloned().flatten();
    let mut out = Vec::with_capacity(n);
    let keys = (n > 0).then(|| RunKeys {
        run_id: st("run_id", 0).unwrap_or_default(),
        campaign: st("campaign", 0).unwrap_or_default(),
        process: u32::try_from(get("process", 0).unwrap_or(0)).unwrap_or(0),
        operation: st("operation", 0).unwrap_or_default(),
        mode: st("mode", 0).unwrap_or_default(),
        backend: st("backend", 0).unwrap_or_default(),
        object_size: u64::try_from(get("object_size", 0).unwrap_or(0)).unwrap_or(0),
    });
    for i in 0..n {
        let nn = |name: &'static str| -> Result<i64> {
            let v = get(name, i).ok_or_else(|| bad(i, name, "is null"))?;
            if v < 0 && name != "start" {
                return Err(bad(i, name, "is negative"));
            }
            Ok(v)
        };
        let cnt =
            |name: &'static str| -> Result<u64> { nn(name).map(|v| u64::try_from(v).unwrap_or(0)) };
        let phase = st("phase", i)
            .as_deref()
            .and_then(RequestPhase::parse)
            .ok_or_else(|| bad(i, "phase", "is not warmup or measured"))?;
        let outcome = st("outcome", i)
            .as_deref()
            .and_then(Outcome::parse)
            .ok_or_else(|| bad(i, "outcome", "is not ok, error or not_started"))?;
        out.push(Record {
            worker: u32::try_from(nn("worker")?).map_err(|_| bad(i, "worker", "is too large"))?,
            seq: cnt("seq")?,
            phase: Some(phase),
            start_unix_ns: nn("start")?,
            offset: dur(nn("offset_ns")?),
            total: dur(nn("total_ns")?),
            key_establishment: dur(nn("key_establishment_ns")?),
            key_derivation: dur(nn("key_derivation_ns")?),
            aead: dur(nn("aead_ns")?),
            manifest: dur(nn("manifest_ns")?),
            storage: dur(nn("storage_ns")?),
            queue_wait: dur(nn("queue_wait_ns")?),
            crypto_cpu: dur(nn("crypto_cpu_ns")?),
            bytes_sent: cnt("bytes_sent")?,
            bytes_received: cnt("bytes_received")?,
            manifest_bytes: cnt("manifest_bytes")?,
            s3_requests: u32::try_from(nn("s3_requests")?)
                .map_err(|_| bad(i, "s3_requests", "is too large"))?,
            outcome: Some(outcome),
            error_class: st("error_class", i).as_deref().map(intern),
            session_id: get("session_id", i).and_then(|v| u64::try_from(v).ok()),
            session_index: get("session_index", i).and_then(|v| u64::try_from(v).ok()),
            session_age: get("session_age_ns", i).map(dur),
        });
    }
    Ok((keys, out))
}

/// One 1 Hz sample. Counters are cumulative (rates are differences between samples); a
/// source that is not configured or did not answer leaves its fields empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// When, as nanoseconds since the Unix epoch.
    pub unix_ns: i64,
    /// Relative to `startAt` (negative before it).
    pub offset_ns: i64,
    /// Client process CPU (user + system), seconds, cumulative.
    pub process_cpu_s: Option<f64>,
    /// Client process resident memory, bytes.
    pub process_rss_bytes: Option<f64>,
    /// Host CPU busy time (all CPUs, all modes but idle and I/O wait), seconds, cumulative.
    pub host_cpu_busy_s: Option<f64>,
    /// Host CPU time in all modes, seconds, cumulative.
    pub host_cpu_total_s: Option<f64>,
    /// Host network bytes received (all interfaces), cumulative.
    pub net_rx_bytes: Option<f64>,
    /// Host network bytes sent (all interfaces), cumulative.
    pub net_tx_bytes: Option<f64>,
    /// Server process CPU, seconds, cumulative.
    pub server_cpu_s: Option<f64>,
    /// Server process resident memory, bytes.
    pub server_rss_bytes: Option<f64>,
    /// Server host dirty memory, bytes.
    pub server_dirty_bytes: Option<f64>,
    /// Server host write-back memory, bytes.
    pub server_writeback_bytes: Option<f64>,
    /// Server host bytes written to disk, cumulative.
    pub server_disk_written_bytes: Option<f64>,
    /// Server host disk writes completed, cumulative.
    pub server_disk_writes: Option<f64>,
    /// Server host seconds spent writing, summed over the writes, cumulative (over the
    /// writes' count: the mean write latency).
    pub server_disk_write_s: Option<f64>,
    /// Server host weighted seconds doing I/O, cumulative (its rate: the mean queue depth).
    pub server_disk_weighted_io_s: Option<f64>,
    /// Server host CPU time in I/O wait, seconds, cumulative.
    pub server_iowait_s: Option<f64>,
    /// Server host CPU time in all modes, seconds, cumulative.
    pub server_cpu_total_s: Option<f64>,
    /// The key service's process CPU, seconds, cumulative (remote runs: its `/metrics`).
    pub kms_cpu_s: Option<f64>,
    /// The key service's process resident memory, bytes.
    pub kms_rss_bytes: Option<f64>,
}

/// The samples schema (`samples.parquet`).
pub const SAMPLE_SCHEMA: &[ColumnSpec] = &[
    col("time", Kind::TimestampNs, false),
    col("offset_ns", Kind::Int64, false),
    col("process_cpu_s", Kind::Double, true),
    col("process_rss_bytes", Kind::Double, true),
    col("host_cpu_busy_s", Kind::Double, true),
    col("host_cpu_total_s", Kind::Double, true),
    col("net_rx_bytes", Kind::Double, true),
    col("net_tx_bytes", Kind::Double, true),
    col("server_cpu_s", Kind::Double, true),
    col("server_rss_bytes", Kind::Double, true),
    col("server_dirty_bytes", Kind::Double, true),
    col("server_writeback_bytes", Kind::Double, true),
    col("server_disk_written_bytes", Kind::Double, true),
    col("server_iowait_s", Kind::Double, true),
    col("server_cpu_total_s", Kind::Double, true),
    col_added("server_disk_writes", Kind::Double, "issue 39"),
    col_added("server_disk_write_s", Kind::Double, "issue 39"),
    col_added("server_disk_weighted_io_s", Kind::Double, "issue 39"),
    col_added("kms_cpu_s", Kind::Double, "issue 41"),
    col_added("kms_rss_bytes", Kind::Double, "issue 41"),
];

/// Builds the samples table.
pub fn samples_table(samples: &[Sample]) -> Table {
    let f = |g: &dyn Fn(&Sample) -> Option<f64>| Column::F64(samples.iter().map(g).collect());
    Table {
        schema: SAMPLE_SCHEMA,
        columns: vec![
            Column::I64(samples.iter().map(|s| Some(s.unix_ns)).collect()),
            Column::I64(samples.iter().map(|s| Some(s.offset_ns)).collect()),
            f(&|s| s.process_cpu_s),
            f(&|s| s.process_rss_bytes),
            f(&|s| s.host_cpu_busy_s),
            f(&|s| s.host_cpu_total_s),
            f(&|s| s.net_rx_bytes),
            f(&|s| s.net_tx_bytes),
            f(&|s| s.server_cpu_s),
            f(&|s| s.server_rss_bytes),
            f(&|s| s.server_dirty_bytes),
            f(&|s| s.server_writeback_bytes),
            f(&|s| s.server_disk_written_bytes),
            f(&|s| s.server_iowait_s),
            f(&|s| s.server_cpu_total_s),
            f(&|s| s.server_disk_writes),
            f(&|s| s.server_disk_write_s),
            f(&|s| s.server_disk_weighted_io_s),
            f(&|s| s.kms_cpu_s),
            f(&|s| s.kms_rss_bytes),
        ],
    }
}

/// Reads samples back from a table.
pub fn samples_from_table(t: &Table) -> Vec<Sample> {
    let f = |name: &str, i: usize| t.f64s(name).get(i).copied().flatten();
    let g = |name: &str, i: usize| t.i64s(name).get(i).copied().flatten().unwrap_or(0);
    (0..t.rows())
        .map(|i| Sample {
            unix_ns: g("time", i),
            offset_ns: g("offset_ns", i),
            process_cpu_s: f("process_cpu_s", i),
            process_rss_bytes: f("process_rss_bytes", i),
            host_cpu_busy_s: f("host_cpu_busy_s", i),
            host_cpu_total_s: f("host_cpu_total_s", i),
            net_rx_bytes: f("net_rx_bytes", i),
            net_tx_bytes: f("net_tx_bytes", i),
            server_cpu_s: f("server_cpu_s", i),
            server_rss_bytes: f("server_rss_bytes", i),
            server_dirty_bytes: f("server_dirty_bytes", i),
            server_writeback_bytes: f("server_writeback_bytes", i),
            server_disk_written_bytes: f("server_disk_written_bytes", i),
            server_iowait_s: f("server_iowait_s", i),
            server_cpu_total_s: f("server_cpu_total_s", i),
            server_disk_writes: f("server_disk_writes", i),
            server_disk_write_s: f("server_disk_write_s", i),
            server_disk_weighted_io_s: f("server_disk_weighted_io_s", i),
            kms_cpu_s: f("kms_cpu_s", i),
            kms_rss_bytes: f("kms_rss_bytes", i),
        })
        .collect()
}
