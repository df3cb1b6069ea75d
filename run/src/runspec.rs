//! The run specification: everything one run needs, as the campaign design (or a person)
//! writes it (study section IV-A "A run executes one configuration …"; DESIGN.md "A run").
//!
//! A [`RunSpec`] is plain data (serde; JSON or YAML with human units, `camelCase` keys,
//! unknown keys refused). It names secrets only by reference (an environment variable or a
//! file), never by value, so a spec can be logged, stored next to the results and embedded
//! in the run summary.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use envelope::{Backend, Mode, SessionBounds};
use serde::{Deserialize, Serialize};

use crate::s3conf::S3ClientKind;
use crate::units::{Dur, Size};
use crate::{Error, Result};

pub use campaign::Operation;
pub use campaign::spec::ObjectFormat;

/// How requests arrive.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Loop {
    /// Every worker issues requests back to back.
    Closed,
    /// Poisson arrivals at `rate` requests/s (over all processes), queued for a free worker.
    Open {
        /// Offered load in requests per second for the whole run.
        rate: f64,
    },
}

impl Loop {
    /// Fixed label.
    pub const fn as_str(&self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open { .. } => "open",
        }
    }
}

/// The configuration a run measures (one cell of a campaign, one mode).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cell {
    /// Envelope mode.
    pub mode: Mode,
    /// Crypto backend.
    #[serde(default)]
    pub backend: Backend,
    /// PUT or GET.
    pub operation: Operation,
    /// Plaintext size of every object.
    pub object_size: Size,
    /// Exactly this many concurrent workers over all processes.
    pub concurrency: u32,
    /// Closed or open loop.
    #[serde(rename = "loop", default = "closed")]
    pub arrival: Loop,
    /// The object format (`v1`, the default; `v2`; `v2-prefix`; `v2.1`; `v2.1-prefix`).
    #[serde(default, skip_serializing_if = "ObjectFormat::is_default")]
    pub format: ObjectFormat,
    /// v2: the reader refuses any object with a classical recipient entry (`--require-pq`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_pq: bool,
    /// The recipient key is in a key service (`backend: remote`, issue 41): its added
    /// round trip and whether readers cache secrets. The run's `kms` says where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms: Option<campaign::spec::KmsSpec>,
}

fn closed() -> Loop {
    Loop::Closed
}

/// Where the S3 credentials come from. Never the secret itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Credentials {
    /// Environment variables (default `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`).
    Env {
        /// Variable holding the access key id.
        #[serde(default = "ak_var")]
        access_key_var: String,
        /// Variable holding the secret key.
        #[serde(default = "sk_var")]
        secret_key_var: String,
    },
    /// A file of `NAME=value` lines (optionally prefixed by `export `), such as the one
    /// `pqbench serve-s3 --env-file` writes; it must not be readable by others.
    File(PathBuf),
    /// A directory mounted read-only from a Kubernetes Secret, holding the files
    /// `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (the Secret's keys). See
    /// [`KeyRef::Mounted`] for the permissions accepted.
    Mounted(PathBuf),
    /// The pod's identity (`credentials: identity`): a web-identity token exchanged for
    /// temporary credentials, as IRSA on EKS provides (`AWS_ROLE_ARN`,
    /// `AWS_WEB_IDENTITY_TOKEN_FILE`).
    Identity,
}

fn ak_var() -> String {
    "AWS_ACCESS_KEY_ID".into()
}
fn sk_var() -> String {
    "AWS_SECRET_ACCESS_KEY".into()
}

impl Default for Credentials {
    fn default() -> Self {
        Self::Env {
            access_key_var: ak_var(),
            secret_key_var: sk_var(),
        }
    }
}

/// The S3 endpoint under test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct S3Target {
    /// Endpoint URL (`http://host:port`).
    pub endpoint: String,
    /// Signing region (`us-east-1` for MinIO and the embedded server, Garage's `s3_region`).
    #[serde(default = "region")]
    pub region: String,
    /// Bucket the run writes to (must exist).
    pub bucket: String,
    /// Where the credentials come from.
    #[serde(default)]
    pub credentials: Credentials,
    /// Which S3 client sends the requests (`aws-sdk`, the default, or `lean`).
    #[serde(default, skip_serializing_if = "S3ClientKind::is_default")]
    pub client: S3ClientKind,
}

fn region() -> String {
    "us-east-1".into()
}

/// The key service of a remote run (`kms/PROTOCOL.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KmsTarget {
    /// Endpoint URL (`http://host:port`).
    pub endpoint: String,
    /// Signing region.
    #[serde(default = "region")]
    pub region: String,
    /// Where the credentials come from (a file of `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY` lines, as `pqbench serve-kms --env-file` writes them, or a
    /// mounted Secret).
    pub credentials: Credentials,
}

/// Where the recipient key comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum KeyRef {
    /// A secret key file written by `pqbench keygen` (mode 0600). The public key is derived
    /// from it.
    File(PathBuf),
    /// A directory holding `<key-type>.key` files (a mounted Kubernetes Secret); the file of
    /// the mode's key type is used.
    Dir(PathBuf),
    /// A directory mounted read-only from a Kubernetes Secret, holding `<key-type>.key`
    /// files. The kubelet gives a Secret volume's files to the pod's `fsGroup` and makes
    /// them group-readable (mode 0440), so a pod running as non-root can read them: here a
    /// file may be readable by its group, but never by others and never writable by anyone
    /// but its owner.
    Mounted(PathBuf),
}

impl KeyRef {
    /// The key file for a mode.
    pub fn path_for(&self, mode: Mode) -> PathBuf {
        match self {
            Self::File(p) => p.clone(),
            Self::Dir(d) | Self::Mounted(d) => key_file_name(d, mode.key_type()),
        }
    }
}

/// The file of a key type in a keys directory (`<dir>/<key-type>.key`).
pub fn key_file_name(dir: &std::path::Path, kt: envelope::KeyType) -> PathBuf {
    dir.join(format!("{}.key", kt.name()))
}

/// This process among the run's processes (pods).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Processes {
    /// Number of worker processes sharing the run.
    pub count: u32,
    /// This one's 0-based index.
    pub index: u32,
}

impl Default for Processes {
    fn default() -> Self {
        Self { count: 1, index: 0 }
    }
}

impl Processes {
    /// Global indices of the workers this process runs: worker `i` belongs to process
    /// `i mod count`, so shares differ by at most one.
    pub fn workers(&self, concurrency: u32) -> Vec<u32> {
        (0..concurrency)
            .filter(|i| i % self.count == self.index)
            .collect()
    }
}

/// Where the run's files go.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Output {
    /// A local directory; files go to `<dir>/<runId>/p<index>/`.
    Dir(PathBuf),
    /// An S3 results bucket; files go to `<prefix><runId>/p<index>/`. They are written to a
    /// local staging directory first and uploaded after the run.
    S3 {
        /// Bucket (must exist).
        bucket: String,
        /// Key prefix (end it with `/`).
        #[serde(default)]
        prefix: String,
        /// Endpoint of the results store; the endpoint under test if absent (with the same
        /// credentials).
        #[serde(default)]
        endpoint: Option<String>,
        /// Credentials of the results store; those of the store under test if absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        credentials: Option<Credentials>,
        /// Signing region of the results store; that of the store under test if absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        region: Option<String>,
    },
}

/// A Prometheus text endpoint to sample.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromSource {
    /// URL of the metrics page (`http://minio:9000/minio/v2/metrics/node`).
    pub url: String,
    /// Environment variable holding a bearer token, if the endpoint needs one.
    #[serde(default)]
    pub bearer_token_env: Option<String>,
    /// File holding a bearer token (a mounted Secret), if the endpoint needs one.
    #[serde(default)]
    pub bearer_token_file: Option<PathBuf>,
}

/// Names of the server metrics (defaults: MinIO's v2 node metrics).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerMetricNames {
    /// Counter of the server process's CPU seconds.
    #[serde(default = "cpu_metric")]
    pub cpu_seconds: String,
    /// Gauge of the server process's resident memory in bytes.
    #[serde(default = "rss_metric")]
    pub resident_bytes: String,
}

fn cpu_metric() -> String {
    "minio_node_process_cpu_total_seconds".into()
}
fn rss_metric() -> String {
    "minio_node_process_resident_memory_bytes".into()
}

impl Default for ServerMetricNames {
    fn default() -> Self {
        Self {
            cpu_seconds: cpu_metric(),
            resident_bytes: rss_metric(),
        }
    }
}

/// Where server-side figures come from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Telemetry {
    /// The server's Prometheus endpoint (CPU and memory of the server process).
    #[serde(default)]
    pub server_metrics: Option<PromSource>,
    /// Metric names on that endpoint.
    #[serde(default)]
    pub server_metric_names: ServerMetricNames,
    /// A node-exporter endpoint on the server host (dirty and write-back memory, disk
    /// writes, I/O wait).
    #[serde(default)]
    pub node_exporter: Option<PromSource>,
    /// The server runs on this host as process `pid` (local runs): read its CPU and memory
    /// from `/proc/<pid>`, and the host's memory, disk and I/O wait from `/proc`.
    #[serde(default)]
    pub local_server_pid: Option<u32>,
}

/// The pause rule between runs (DESIGN.md "A run"; study section IV); one definition
/// with the campaign's, whose defaults it shares.
pub use campaign::spec::PauseRule;

/// Session bounds of `ml-kem-768-session` in a spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Session {
    /// B_max.
    pub max_objects: u64,
    /// T_max.
    pub max_age: Dur,
}

impl From<Session> for SessionBounds {
    fn from(s: Session) -> Self {
        SessionBounds {
            max_objects: s.max_objects,
            max_age: s.max_age.0,
        }
    }
}

/// The start protocol of a campaign's runs (`run::schedule`; DESIGN.md "Operator"): a
/// process that is ready (paused, keys loaded, gate passed, fixtures written) announces it
/// at [`ready_key`] and polls [`start_key`], which the executor writes, holding one RFC 3339
/// instant, once every process of the run is ready ([`crate::schedule::start_at`]). All
/// processes then start their warm-up at that instant, as with `startAt`. With S3 output
/// the keys are objects in the results bucket (the operator); with a directory they are
/// files under it, `<dir>/<runId>/ready/p<index>` and `<dir>/<runId>/start-at`
/// (`pqbench run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartGate {
    /// How long to wait for the start instant after becoming ready (default 15 min); the
    /// process then gives up and the run fails.
    #[serde(default = "gate_timeout")]
    pub timeout: Dur,
}

fn gate_timeout() -> Dur {
    Dur(Duration::from_secs(15 * 60))
}

impl Default for StartGate {
    fn default() -> Self {
        Self {
            timeout: gate_timeout(),
        }
    }
}

/// The key a ready process writes: `<prefix><runId>/ready/p<index>`.
pub fn ready_key(prefix: &str, run_id: &str, index: u32) -> String {
    format!("{prefix}{run_id}/ready/p{index}")
}

/// The key holding the run's start instant: `<prefix><runId>/start-at`.
pub fn start_key(prefix: &str, run_id: &str) -> String {
    format!("{prefix}{run_id}/start-at")
}

/// One run (the experimental unit).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunSpec {
    /// Unique id of the run (letters, digits, `-`, `_`, `.`; it names directories and keys).
    pub run_id: String,
    /// Campaign the run belongs to (same character set).
    #[serde(default = "adhoc")]
    pub campaign: String,
    /// What is measured.
    pub cell: Cell,
    /// Block of the randomized complete block design.
    #[serde(default)]
    pub block: u32,
    /// Position of the run within its block.
    #[serde(default)]
    pub position: u32,
    /// Repetition number.
    #[serde(default)]
    pub repetition: u32,
    /// The campaign's cell id (`get-64KiB-c32`), when the run belongs to a campaign plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_id: Option<String>,
    /// The campaign's arm label (the mode, or `ml-kem-768-session-b10-t1s`, or
    /// `x25519-aa` for the A/A control), when the run belongs to a campaign plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    /// Seed for the run's randomness (payloads, arrival times, fixture choice).
    #[serde(default)]
    pub seed: u64,
    /// Warm-up phase after `startAt` (requests recorded, marked `warmup`).
    #[serde(default = "warmup")]
    pub warmup: Dur,
    /// Measured phase after the warm-up.
    #[serde(default = "measured")]
    pub measured: Dur,
    /// Open loop: arrivals still queued at the end of the window may start this long after
    /// it; later they count as `not_started` failures.
    #[serde(default = "drain")]
    pub drain: Dur,
    /// The store under test.
    pub s3: S3Target,
    /// The key service of a remote run (`cell.kms`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms: Option<KmsTarget>,
    /// The recipient key (absent only for `plaintext`, and for a remote run whose key is in
    /// the service at `cell.kms.endpoint`: `cell.kms.keyId`).
    #[serde(default)]
    pub recipient_key: Option<KeyRef>,
    /// Fixture objects written before a GET run (per process); workers read them round
    /// robin.
    #[serde(default = "fixtures")]
    pub fixtures: u32,
    /// Bounds for `ml-kem-768-session` (the envelope default if absent).
    #[serde(default)]
    pub session: Option<Session>,
    /// Wall-clock instant (RFC 3339) at which every process starts its warm-up phase. A
    /// process not ready by then fails. Absent: one second after this process is ready.
    #[serde(default)]
    pub start_at: Option<String>,
    /// Take `startAt` from the output instead: the results bucket, or the output directory
    /// (the start protocol of every campaign run, [`StartGate`]; not with `startAt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_gate: Option<StartGate>,
    /// Processes sharing the run and this one's index.
    #[serde(default)]
    pub processes: Processes,
    /// Where files go.
    pub output: Output,
    /// Server-side samplers.
    #[serde(default)]
    pub telemetry: Telemetry,
    /// Request traces (OTLP). Absent: the standard `OTEL_*` variables decide, and without
    /// an endpoint there are none ([`crate::trace::TraceConfig::resolve`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<crate::trace::TraceSpec>,
    /// Wait for the server to be quiet before getting ready (needs a node source in
    /// `telemetry`).
    #[serde(default)]
    pub pause: Option<PauseRule>,
    /// Fraction of failed measured requests a valid run may have (default 0: any failure
    /// invalidates the run; failures are always recorded).
    #[serde(default)]
    pub allowed_failure_fraction: f64,
    /// The CPUs this process confines itself to before it starts its threads
    /// (`sched_setaffinity`; a CPU list as `taskset -c` takes it, e.g. `"0"`), or absent to
    /// run where it was started. Refused at the start when the process may not use them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// The cores the cell confines the run's worker processes to (`clientCores`), if it
    /// does: locally `cpus` holds them; on Kubernetes each pod's whole-CPU request = limit
    /// is this divided by the processes, rounded up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cores: Option<u32>,
    /// The embedded server's CPUs when the executor placed it (recorded in the summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<String>,
    /// This run's turn when the runs of its block are interleaved (the campaign's
    /// `interleave`): its workers start requests only in its own slices, and its measured
    /// time is theirs ([`crate::turns`]). Closed loop only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<crate::turns::Turns>,
}

pub use campaign::from_yaml;

fn adhoc() -> String {
    "adhoc".into()
}
fn warmup() -> Dur {
    Dur(Duration::from_secs(5))
}
fn measured() -> Dur {
    Dur(Duration::from_secs(20))
}
fn drain() -> Dur {
    Dur(Duration::from_secs(5))
}
fn fixtures() -> u32 {
    64
}

/// True if `v` may name a run or a campaign: 1-128 letters, digits, `-`, `_` or `.`, not
/// starting with `.` (it becomes a directory name and a segment of a bucket key).
pub fn is_valid_name(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 128
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !v.starts_with('.')
}

fn check_name(field: &str, v: &str) -> Result<()> {
    if !is_valid_name(v) {
        return Err(Error::Spec(format!(
            "{field} {v:?}: use 1-128 letters, digits, '-', '_' or '.', not starting with '.'"
        )));
    }
    Ok(())
}

impl RunSpec {
    /// Parses a spec from YAML or JSON (JSON is YAML) and validates it. `origin` names the
    /// source in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let spec: RunSpec = from_yaml(text).map_err(|e| Error::Spec(format!("{origin}: {e}")))?;
        spec.validate().map_err(|e| match e {
            Error::Spec(m) => Error::Spec(format!("{origin}: {m}")),
            other => other,
        })?;
        Ok(spec)
    }

    /// Reads and parses a spec file.
    pub fn read(path: &Path) -> Result<Self> {
        let text = campaign::yaml::read_text(path).map_err(|source| Error::ReadSpec {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Checks the names that become paths and keys (`runId`, `campaign`): what a reader of
    /// a run's `spec.json` checks, since the spec as written after the run (with its start
    /// instant filled in) is not one [`RunSpec::validate`] accepts as input.
    pub fn check_names(&self) -> Result<()> {
        check_name("runId", &self.run_id)?;
        check_name("campaign", &self.campaign)
    }

    /// Checks what serde cannot: ranges and cross-field rules. Errors name the field.
    pub fn validate(&self) -> Result<()> {
        self.check_names()?;
        let c = &self.cell;
        if c.concurrency == 0 {
            return Err(Error::Spec("cell.concurrency must be at least 1".into()));
        }
        if c.concurrency > campaign::spec::MAX_CONCURRENCY {
            return Err(Error::Spec(format!(
                "cell.concurrency: {} workers is more than one run drives ({} at most)",
                c.concurrency,
                campaign::spec::MAX_CONCURRENCY
            )));
        }
        if self.fixtures > campaign::spec::MAX_FIXTURES {
            return Err(Error::Spec(format!(
                "fixtures: {} is more than {} objects written before a GET run",
                self.fixtures,
                campaign::spec::MAX_FIXTURES
            )));
        }
        if let Some(why) = c.format.refuses(c.mode) {
            return Err(Error::Spec(format!("cell.format: {why}")));
        }
        match (&c.kms, &self.kms) {
            (Some(_), None) => {
                return Err(Error::Spec(
                    "cell.kms: a remote run needs kms (the key service's endpoint and \
                     credentials)"
                        .into(),
                ));
            }
            (None, Some(_)) => {
                return Err(Error::Spec(
                    "kms: only a remote run (cell.kms) has a key service".into(),
                ));
            }
            (Some(_), Some(_)) if !envelope::REMOTE_MODES.contains(&c.mode) => {
                return Err(Error::Spec(format!(
                    "cell.kms: a remote run is in ml-kem-768, ml-kem-1024 or x25519, not {}",
                    c.mode
                )));
            }
            (Some(k), Some(t)) => {
                k.check("cell.kms").map_err(Error::Spec)?;
                if let Some(e) = &k.endpoint
                    && e.trim_end_matches('/') != t.endpoint
                {
                    return Err(Error::Spec(format!(
                        "kms.endpoint: {} is not the arm's key service {e} (cell.kms.endpoint)",
                        t.endpoint
                    )));
                }
            }
            _ => {}
        }
        if c.object_size.0 > envelope::MAX_PLAINTEXT_SIZE {
            return Err(Error::Spec(format!(
                "cell.objectSize {} exceeds the format's maximum",
                c.object_size
            )));
        }
        if let Loop::Open { rate } = c.arrival
            && !(rate.is_finite() && rate > 0.0)
        {
            return Err(Error::Spec(format!(
                "cell.loop.rate must be a positive number of requests/s, not {rate}"
            )));
        }
        if self.measured.0.is_zero() {
            return Err(Error::Spec("measured must be positive".into()));
        }
        if let Some(t) = &self.turns {
            if let Some(p) = t.problem() {
                return Err(Error::Spec(p));
            }
            if matches!(c.arrival, Loop::Open { .. }) {
                return Err(Error::Spec(
                    "turns apply to closed-loop runs only: an open loop's arrivals do not wait for a turn".into(),
                ));
            }
        }
        if self.processes.count == 0 || self.processes.index >= self.processes.count {
            return Err(Error::Spec(format!(
                "processes.index {} must be below processes.count {} (count ≥ 1)",
                self.processes.index, self.processes.count
            )));
        }
        if self.processes.count > c.concurrency {
            return Err(Error::Spec(format!(
                "processes.count {} exceeds cell.concurrency {}: every process needs a worker",
                self.processes.count, c.concurrency
            )));
        }
        if c.operation == Operation::Get && self.fixtures == 0 {
            return Err(Error::Spec(
                "fixtures must be at least 1 for a GET run".into(),
            ));
        }
        let key_in_service = c.kms.as_ref().is_some_and(|k| k.key_id.is_some());
        if c.mode != Mode::Plaintext && self.recipient_key.is_none() && !key_in_service {
            return Err(Error::Spec(format!(
                "recipientKey is required for mode {} (a key file or a key directory; or \
                 cell.kms.keyId, a key in the service at cell.kms.endpoint)",
                c.mode
            )));
        }
        if let Some(s) = &self.session {
            if c.mode != Mode::MlKem768Session {
                return Err(Error::Spec(format!(
                    "session bounds apply only to ml-kem-768-session, not {}",
                    c.mode
                )));
            }
            if s.max_objects == 0 || s.max_age.0.is_zero() {
                return Err(Error::Spec(
                    "session.maxObjects and session.maxAge must be positive".into(),
                ));
            }
        }
        for (field, v) in [("cpus", &self.cpus), ("serverCpus", &self.server_cpus)] {
            if let Some(list) = v {
                campaign::placement::parse_cpu_list(list)
                    .map_err(|e| Error::Spec(format!("{field}: {e}")))?;
            }
        }
        if !(0.0..=1.0).contains(&self.allowed_failure_fraction) {
            return Err(Error::Spec(
                "allowedFailureFraction must be within [0, 1]".into(),
            ));
        }
        if let Some(s) = &self.start_at {
            humantime::parse_rfc3339_weak(s).map_err(|e| {
                Error::Spec(format!(
                    "startAt {s:?} is not an RFC 3339 instant such as 2026-11-30T12:00:00Z: {e}"
                ))
            })?;
        }
        if self.start_gate.is_some() && self.start_at.is_some() {
            return Err(Error::Spec("give startAt or startGate, not both".into()));
        }
        if self.pause.is_some()
            && self.telemetry.node_exporter.is_none()
            && self.telemetry.local_server_pid.is_none()
        {
            return Err(Error::Spec(
                "pause needs a view of the server host: set telemetry.nodeExporter or telemetry.localServerPid".into(),
            ));
        }
        Ok(())
    }

    /// The scheduled start, if any.
    pub fn start_at(&self) -> Option<SystemTime> {
        self.start_at
            .as_deref()
            .and_then(|s| humantime::parse_rfc3339_weak(s).ok())
    }

    /// The run's measured time: the window, or with turns its own slices within it.
    pub fn measured_time(&self) -> std::time::Duration {
        let (warm, window) = (self.warmup.0, self.measured.0);
        self.turns
            .map_or(window, |t| t.own_time(warm, warm + window))
    }

    /// Session bounds in force for this run (`None` unless the mode is
    /// `ml-kem-768-session`).
    pub fn session_bounds(&self) -> Option<SessionBounds> {
        (self.cell.mode == Mode::MlKem768Session)
            .then(|| self.session.map(Into::into).unwrap_or_default())
    }

    /// A spec for a quick local run (used by `pqbench run-one` and tests).
    pub fn local(run_id: &str, cell: Cell, endpoint: &str, bucket: &str, out: &Path) -> Self {
        Self {
            run_id: run_id.into(),
            campaign: adhoc(),
            cell,
            block: 0,
            position: 0,
            repetition: 0,
            cell_id: None,
            arm: None,
            seed: 0,
            warmup: warmup(),
            measured: measured(),
            drain: drain(),
            s3: S3Target {
                endpoint: endpoint.into(),
                region: region(),
                bucket: bucket.into(),
                credentials: Credentials::default(),
                client: Default::default(),
            },
            kms: None,
            recipient_key: None,
            fixtures: fixtures(),
            session: None,
            start_at: None,
            start_gate: None,
            processes: Processes::default(),
            output: Output::Dir(out.to_path_buf()),
            telemetry: Telemetry::default(),
            traces: None,
            pause: None,
            allowed_failure_fraction: 0.0,
            cpus: None,
            client_cores: None,
            server_cpus: None,
            turns: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = r"
runId: r0001
campaign: quick
cell:
  mode: ml-kem-768
  operation: get
  objectSize: 64KiB
  concurrency: 32
  loop: {type: open, rate: 1500}
warmup: 1s
measured: 2s
s3:
  endpoint: http://127.0.0.1:9000
  bucket: pqbench
recipientKey: {file: /keys/ml-kem-768.key}
startAt: 2026-11-30T12:00:00.250Z
processes: {count: 2, index: 1}
output: {dir: /tmp/out}
";

    /// Found by the `runspec` fuzz target: serde_yaml's own enum form (a YAML tag) failed
    /// with "invalid type: enum, expected any valid JSON value" and no way forward.
    #[test]
    fn a_yaml_tag_for_a_choice_is_refused_with_the_map_form_to_use() {
        let tagged = YAML.replace(
            "recipientKey: {file: /keys/ml-kem-768.key}",
            "recipientKey: !file /keys/k",
        );
        let e = RunSpec::parse(&tagged, "spec.yaml")
            .expect_err("a tag")
            .to_string();
        assert!(e.contains("spec.yaml: recipientKey: "), "{e}");
        assert!(
            e.contains("write the choice as a map, `name: value`"),
            "{e}"
        );
    }

    #[test]
    fn parses_yaml_with_units_and_defaults() {
        let s = RunSpec::parse(YAML, "spec.yaml").expect("spec");
        assert_eq!(s.cell.object_size, Size(65536));
        assert_eq!(s.cell.arrival, Loop::Open { rate: 1500.0 });
        assert_eq!(s.cell.backend, Backend::AwsLc);
        assert_eq!(s.warmup.0, Duration::from_secs(1));
        assert_eq!(s.fixtures, 64);
        assert_eq!(s.s3.credentials, Credentials::default());
        assert_eq!(s.processes.workers(5), [1, 3]);
        let t = s.start_at().expect("start");
        assert_eq!(
            humantime::format_rfc3339_millis(t).to_string(),
            "2026-11-30T12:00:00.250Z"
        );
        // JSON round trip is lossless.
        let j = serde_json::to_string(&s).expect("json");
        assert_eq!(RunSpec::parse(&j, "json").expect("again"), s);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            ("concurrency: 32", "concurrency: 0", "cell.concurrency"),
            ("objectSize: 64KiB", "objectSize: 64 parsecs", "parsecs"),
            ("rate: 1500", "rate: -3", "cell.loop.rate"),
            ("index: 1", "index: 2", "processes.index"),
            (
                "recipientKey: {file: /keys/ml-kem-768.key}",
                "",
                "recipientKey",
            ),
            ("mode: ml-kem-768", "mode: ml-kem-512", "unknown mode"),
            ("runId: r0001", "runId: ../x", "runId"),
            (
                "startAt: 2026-11-30T12:00:00.250Z",
                "startAt: noon",
                "startAt",
            ),
            (
                "bucket: pqbench",
                "bucket: pqbench\n  buckets: 3",
                "unknown field",
            ),
        ];
        for (from, to, want) in cases {
            let text = YAML.replace(from, to);
            let err = RunSpec::parse(&text, "spec.yaml")
                .expect_err(to)
                .to_string();
            assert!(err.contains(want), "{to}: {err}");
            assert!(err.contains("spec.yaml"), "{err}");
        }
    }
}
