//! The `BenchmarkCampaign` manifest and its spec: the pre-registration of a campaign
//! (study section IV-B, "hypotheses, primary cells, test, margin, multiplicity correction,
//! repetitions, stall rule … written into the project's versioned specification"; DESIGN.md
//! "A campaign").
//!
//! The same file is read by `pqbench run` on one machine and applied to a cluster, where
//! the operator reconciles it (group `pqbench.io`, version `v1alpha1`):
//!
//! ```yaml
//! apiVersion: pqbench.io/v1alpha1
//! kind: BenchmarkCampaign
//! metadata: {name: quick}
//! spec:
//!   modes: [x25519, ml-kem-768, x-wing]
//!   baseline: x25519
//!   cells:
//!     - operation: [get, put]
//!       objectSize: [64KiB]
//!       concurrency: [4]
//!   repetitions: 3
//!   warmup: 1s
//!   measured: 5s
//!   seed: 20261130
//!   analysis:
//!     primary: [{cell: get-64KiB-c4}]
//! ```
//!
//! Every key is `camelCase`, unknown keys are refused, sizes and durations are human
//! (`64KiB`, `20s`), and a list-valued field (`operation`, `objectSize`, `concurrency`,
//! `loop.rates`, `sessions.maxObjects`, `sessions.maxAge`) is always a list, also for one
//! value: the CRD's structural schema cannot accept "a value or a list", so a single value
//! is refused here too, and one file means the same in `pqbench run` and on a cluster.
//! [`Manifest::parse`] names the field path of any error and says what is allowed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use envelope::{Backend, Mode};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::cluster::{
    Deadlines, ExternalServer, MinioServer, Resources, Results, SecretName, TelemetrySpec,
    Toleration,
};
use crate::placement::Cpus;
use crate::units::{Dur, Size};
use crate::{Error, Result};

/// The API group and version of the manifest.
pub const API_VERSION: &str = "pqbench.io/v1alpha1";
/// The manifest's kind.
pub const KIND: &str = "BenchmarkCampaign";

/// Which operation a run measures.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// Encrypt and commit new objects.
    Put,
    /// Read and decrypt pre-written fixture objects.
    Get,
}

impl Operation {
    /// Fixed label.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Put => "put",
            Self::Get => "get",
        }
    }
}

/// A list of values (`concurrency: [1, 32, 128]`, also `concurrency: [32]` for one).
///
/// A single value without brackets is refused with a message that names the list form:
/// the API server refuses it (the CRD types these fields as arrays), and a file must mean
/// the same thing to `pqbench run` as to `kubectl apply`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

impl<T: Serialize> Serialize for List<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// The error for a single value where a list belongs: `write [5m]`.
fn scalar_for_list<E: de::Error>(shown: &str) -> E {
    E::custom(format!(
        "must be a list: write [{shown}] (a single value is refused, as the API server \
         refuses it)"
    ))
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of values")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = seq.next_element()? {
                    v.push(x);
                }
                Ok(List(v))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Self::Value, E> {
                Err(scalar_for_list(s))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> std::result::Result<Self::Value, E> {
                Err(scalar_for_list(&n.to_string()))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> std::result::Result<Self::Value, E> {
                Err(scalar_for_list(&n.to_string()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> std::result::Result<Self::Value, E> {
                Err(scalar_for_list(&n.to_string()))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The whole manifest, as applied to a cluster or given to `pqbench run`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// Must be `pqbench.io/v1alpha1`.
    pub api_version: String,
    /// Must be `BenchmarkCampaign`.
    pub kind: String,
    /// Name (and optionally namespace, labels, annotations).
    pub metadata: Metadata,
    /// The pre-registration.
    pub spec: CampaignSpec,
}

/// The manifest's metadata (the subset a campaign file carries).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// Campaign name: 1–63 lower-case letters, digits and '-' (a Kubernetes name).
    pub name: String,
    /// Namespace (operator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels (operator only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations (operator only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The pre-registered campaign.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CampaignSpec {
    /// The modes compared, by name as `pqbench modes` lists them (`x25519`, `ml-kem-768`,
    /// `x-wing`, `rsa-oaep-4096`, `ml-kem-768-session`, …): with `backends`, the shorthand
    /// for the arms `modes × backends`. Give `modes` or `arms`, not both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::modes"))]
    pub modes: Vec<Mode>,
    /// The arms, listed one by one: each a mode on a backend with an S3 client. Every arm of a cell runs once in each of its blocks, so any two
    /// arms can be compared pairwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arms: Vec<ArmSpec>,
    /// The baseline mode: by default every arm is compared against the arm of this mode on
    /// its own backend.
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::mode"))]
    pub baseline: Mode,
    /// An A/A control: the baseline runs a second time in every block as a separately
    /// labelled arm (`<baseline>-aa`), and its interval is the campaign's noise floor.
    #[serde(default)]
    pub aa_control: bool,
    /// Crypto backends (`aws-lc`, `rustcrypto`) of the `modes` shorthand: each mode runs on
    /// each backend as its own arm, in the same blocks. Ignored with `arms`.
    #[serde(default = "default_backends")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::backends"))]
    pub backends: Vec<Backend>,
    /// The cells; each entry expands to the grid of its list-valued fields.
    pub cells: Vec<CellGrid>,
    /// Blocks per cell (pairs per comparison) unless a cell says otherwise; at least 2.
    pub repetitions: u32,
    /// Warm-up before each measured window.
    #[serde(default = "default_warmup")]
    pub warmup: Dur,
    /// Measured window of each run.
    #[serde(default = "default_measured")]
    pub measured: Dur,
    /// Open loop: how long queued arrivals may still be served after the window.
    #[serde(default = "default_drain")]
    pub drain: Dur,
    /// Interleaved arms: the runs of each block start together and take turns in slices
    /// of `slice`, so that every arm meets the same machine within a fraction of a second
    /// (`pqbench run`, and the operator, whose block's pods share a node per process
    /// index). `warmup` and `measured` stay each arm's own time, so a block's window is as
    /// many times longer as it has arms. Closed-loop cells only. Absent: the runs of a
    /// block one after another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<Interleave>,
    /// Seed of the design (block and run order) and of every run's workload.
    pub seed: u64,
    /// The session-bound grid for `ml-kem-768-session` (each pair is its own arm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionGrid>,
    /// Analysis settings (the pre-registered test).
    #[serde(default)]
    pub analysis: Analysis,
    /// The pause rule between runs.
    #[serde(default)]
    pub pause: Pause,
    /// GET fixtures (objects written before the window and read round-robin).
    #[serde(default = "default_fixtures")]
    pub fixtures: u32,
    /// Failed requests a run may have and still be valid, as a fraction of its requests.
    #[serde(default)]
    pub allowed_failure_fraction: f64,
    /// Where the S3 server runs (the operator's placement).
    #[serde(default)]
    pub server: ServerPlacement,
    /// Where and how the client processes run.
    #[serde(default)]
    pub clients: ClientPlacement,
    /// The results bucket (operator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<Results>,
    /// OpenTelemetry export (operator only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySpec>,
    /// Deadlines (defaults: provisioning 10m, analysis 10m, each run its windows plus the
    /// pause plus 5m). `run` applies to `pqbench run` too; the others are the operator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadlines: Option<Deadlines>,
    /// Attempts after the first for a run that fails (its processes end without their
    /// files, or it passes `deadlines.run`); then the run is given up and the campaign goes
    /// on. Default 2; the operator and `pqbench run` alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_retries: Option<u32>,
    /// Delete the campaign's server, Secrets and Jobs this long after it ends (operator
    /// only; the results bucket is kept). Absent: keep them until the campaign is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<u32>,
    /// Delete the campaign's recipient keys Secret this long after it ends (operator only).
    /// When the results are elsewhere (`results.endpoint`), the campaign's MinIO and its
    /// credentials Secret go too; while the results live on MinIO its credentials are what
    /// opens them, and they stay (until `ttlSecondsAfterFinished` or the campaign's
    /// deletion). Absent: the operator's default (the chart's
    /// `campaignDefaults.secretsTtlSecondsAfterFinished`, 3600); 0 keeps them. A failed
    /// campaign with `keepOnFailure` keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets_ttl_seconds_after_finished: Option<u32>,
    /// Keep the server and Jobs of a failed campaign for inspection, whatever the TTL
    /// (operator only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_on_failure: bool,
}

fn default_backends() -> Vec<Backend> {
    vec![Backend::AwsLc]
}
fn default_warmup() -> Dur {
    Dur(Duration::from_secs(5))
}
fn default_measured() -> Dur {
    Dur(Duration::from_secs(20))
}
fn default_drain() -> Dur {
    Dur(Duration::from_secs(5))
}
fn default_fixtures() -> u32 {
    64
}

/// One entry of `cells`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CellGrid {
    /// `put`, `get` or both.
    pub operation: List<Operation>,
    /// Plaintext object sizes.
    pub object_size: List<Size>,
    /// Concurrent workers (closed loop); an open loop takes `loop.threads` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<List<u32>>,
    /// Closed loop (default) or open loop.
    #[serde(rename = "loop", default)]
    pub arrival: LoopGrid,
    /// Repetitions for these cells, overriding the campaign's (the study ran 20 at the
    /// knee, 10 elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u32>,
    /// Confine the worker processes of a run to this many cores (each value its own cell,
    /// id suffix `-cores<k>`): a cell made client-bound on purpose, as the study's one-core
    /// native cell. Locally the first k CPUs of `clients.cpus`; on Kubernetes each worker
    /// pod's whole-CPU request = limit is k / `clients.processes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cores: Option<List<u32>>,
}

impl Interleave {
    /// The shortest slice: below it, timers and requests in flight would decide the arms'
    /// shares.
    pub const MIN_SLICE: Duration = Duration::from_millis(10);
}

impl CellGrid {
    /// Whether the grid has open-loop cells.
    pub fn has_open_loop(&self) -> bool {
        matches!(self.arrival, LoopGrid::Open { .. })
    }
}

/// How requests arrive in a cell.
// The JSON Schema is hand-written (crate::schema): a structural schema cannot be derived
// from an internally tagged enum whose variants give `type` different values.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum LoopGrid {
    /// Every worker issues requests back to back.
    #[default]
    Closed,
    /// Poisson arrivals at each offered rate (requests/s, whole run), served by `threads`
    /// workers; each rate is its own cell.
    Open {
        /// Offered rates in requests per second.
        rates: List<f64>,
        /// Workers serving the queue.
        threads: u32,
    },
}

/// The session-bound grid (section V-F): every `maxObjects` × `maxAge` pair is an arm.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionGrid {
    /// `B_max` values: objects per encapsulation.
    pub max_objects: List<u64>,
    /// `T_max` values: session lifetime.
    pub max_age: List<Dur>,
}

/// Which S3 client implementation sends the requests (`s3.client` of a run spec, the
/// `s3Client` of a campaign arm, `--s3-client` of the CLI). Both speak the same commit
/// protocol with the same error classes, stage timers and records; they differ in what they
/// cost the client per request.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum S3ClientKind {
    /// The AWS SDK for Rust (`aws-sdk-s3`), configured for measurement.
    #[default]
    AwsSdk,
    /// pqbench's lean client: hyper 1 with a pool sized to the concurrency, SigV4 from
    /// `aws-sigv4`, one HTTP request per S3 call and nothing else (plain `http://` only).
    Lean,
}

impl S3ClientKind {
    /// The name used in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AwsSdk => "aws-sdk",
            Self::Lean => "lean",
        }
    }

    /// Whether this is the default (`aws-sdk`), for `skip_serializing_if`.
    pub fn is_default(&self) -> bool {
        *self == Self::AwsSdk
    }
}

impl std::fmt::Display for S3ClientKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for S3ClientKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "aws-sdk" => Ok(Self::AwsSdk),
            "lean" => Ok(Self::Lean),
            _ => Err(format!("unknown S3 client {s:?}; use aws-sdk or lean")),
        }
    }
}

/// The object format an arm writes and reads (issue 21): `v1` (the study's: `data.enc` and
/// a JSON `manifest.json`, two S3 objects per version), `v2` (one `object.v2`, the binary
/// HPKE header in user metadata) or `v2-prefix` (one `object.v2`, the header before the
/// chunks). v2 takes the modes `x25519`, `ml-kem-768`, `ml-kem-1024` (prefix only: its
/// header exceeds S3's 2 KB of metadata) and `x-wing`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectFormat {
    /// Format v1.
    #[default]
    V1,
    /// Format v2, the header in metadata.
    V2,
    /// Format v2, the header before the chunks.
    V2Prefix,
}

impl ObjectFormat {
    /// The name used in files and labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1 => "v1",
            Self::V2 => "v2",
            Self::V2Prefix => "v2-prefix",
        }
    }

    /// Whether this is the default (`v1`), for `skip_serializing_if`.
    pub fn is_default(&self) -> bool {
        *self == Self::V1
    }

    /// The envelope format.
    pub fn format(self) -> envelope::Format {
        match self {
            Self::V1 => envelope::Format::V1,
            Self::V2 | Self::V2Prefix => envelope::Format::V2,
        }
    }

    /// Where a v2 header goes (`None` in v1).
    pub fn placement(self) -> Option<envelope::v2::Placement> {
        match self {
            Self::V1 => None,
            Self::V2 => Some(envelope::v2::Placement::Metadata),
            Self::V2Prefix => Some(envelope::v2::Placement::Prefix),
        }
    }

    /// Why `mode` cannot be written in this format, if it cannot.
    pub fn refuses(self, mode: Mode) -> Option<String> {
        let v2_modes = [Mode::X25519, Mode::MlKem768, Mode::MlKem1024, Mode::XWing];
        match self {
            Self::V1 => None,
            _ if !v2_modes.contains(&mode) => Some(format!(
                "format {} wraps with HPKE to x25519, ml-kem-768, ml-kem-1024 or x-wing keys; mode {mode} has no v2 suite (use format v1)",
                self.as_str()
            )),
            Self::V2 if mode == Mode::MlKem1024 => Some(
                "format v2 puts the header in S3 user metadata, and ML-KEM-1024's (1,745 bytes) exceeds its 2 KB; use format v2-prefix".into(),
            ),
            _ => None,
        }
    }
}

impl std::str::FromStr for ObjectFormat {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        [Self::V1, Self::V2, Self::V2Prefix]
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| format!("unknown format {s:?}: expected v1, v2 or v2-prefix"))
    }
}

impl std::fmt::Display for ObjectFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One arm of `arms`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArmSpec {
    /// The envelope mode.
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::mode"))]
    pub mode: Mode,
    /// The crypto backend (default `aws-lc`).
    #[serde(default = "default_backend")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::backend"))]
    pub backend: Backend,
    /// The arm's label in the plan, run ids and report (default: the mode's name; two arms
    /// of one mode need names). Lower-case letters, digits and '-'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The S3 client of this arm (`aws-sdk` or `lean`; default `clients.s3Client`): two
    /// arms of one mode on two clients measure what the client costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3_client: Option<S3ClientKind>,
    /// The object format (`v1`, the default; `v2`; `v2-prefix`): two arms of one mode in
    /// two formats measure what the format costs.
    #[serde(default, skip_serializing_if = "ObjectFormat::is_default")]
    pub format: ObjectFormat,
    /// The arm's reader refuses any object with a classical recipient entry, as
    /// `pqbench get --require-pq` does (format v2 only, a post-quantum mode): what the
    /// check costs on the data path.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_pq: bool,
}

fn default_backend() -> Backend {
    Backend::AwsLc
}

/// A declared comparison (`analysis.comparisons`): `arm` against `against`, by arm label,
/// in every cell.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComparisonSpec {
    /// The arm measured.
    pub arm: String,
    /// The arm it is measured against (the ratio is `arm / against`).
    pub against: String,
}

/// A member of the primary family (`analysis.primary`): in `cell`, the comparison `arm`
/// against `against`, or every comparison of the cell when both are absent.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrimarySpec {
    /// The cell id, as `pqbench plan` prints it.
    pub cell: String,
    /// The arm measured; with `against`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    /// The arm it is measured against; with `arm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
}

impl PrimarySpec {
    /// Every comparison of `cell`.
    pub fn cell(cell: &str) -> Self {
        Self {
            cell: cell.to_owned(),
            arm: None,
            against: None,
        }
    }

    /// Whether the comparison `arm` vs `against` in `cell` belongs to this entry.
    pub fn selects(&self, cell: &str, arm: &str, against: &str) -> bool {
        self.cell == cell
            && self.arm.as_deref().is_none_or(|a| a == arm)
            && self.against.as_deref().is_none_or(|b| b == against)
    }
}

impl<'de> Deserialize<'de> for PrimarySpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Fields {
            cell: String,
            #[serde(default)]
            arm: Option<String>,
            #[serde(default)]
            against: Option<String>,
        }
        // Through a JSON value rather than an untagged enum, whose one error ("data did not
        // match any variant") hid which field was wrong.
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(c) => Err(de::Error::custom(format!(
                "write {{cell: {c}}} (an entry names its cell, and optionally arm and against)"
            ))),
            v => {
                let f = Fields::deserialize(v).map_err(de::Error::custom)?;
                Ok(Self {
                    cell: f.cell,
                    arm: f.arm,
                    against: f.against,
                })
            }
        }
    }
}

/// The multiplicity correction over the primary family.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    /// Holm's step-down procedure (family-wise error rate).
    #[default]
    Holm,
    /// No correction (every p as measured).
    None,
}

/// The pre-registered analysis.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Analysis {
    /// Equivalence margin δ: bounds `[1−δ, 1+δ]` on the throughput ratio; in (0, 0.5).
    #[serde(default = "default_margin")]
    pub margin: f64,
    /// Significance level α; in (0, 0.5).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Correction over the primary family.
    #[serde(default)]
    pub correction: Correction,
    /// Margins at which verdicts are repeated, unadjusted.
    #[serde(default = "default_sensitivity")]
    pub sensitivity_margins: Vec<f64>,
    /// The comparisons, by arm label (default: every arm against the baseline mode's arm
    /// on its backend; the A/A control against the baseline). Each is made in every cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<ComparisonSpec>,
    /// The primary family: `{cell}` (every comparison in that cell) or `{cell, arm,
    /// against}` (that one); Holm runs over these only. Cell ids as `pqbench plan` prints
    /// them.
    #[serde(default)]
    pub primary: Vec<PrimarySpec>,
    /// Percentile-bootstrap resamples.
    #[serde(default = "default_resamples")]
    pub bootstrap_resamples: u32,
    /// Deficit/advantage threshold on the 90 % interval.
    #[serde(default = "default_deficit")]
    pub deficit_threshold: f64,
    /// The stall rule.
    #[serde(default)]
    pub stall_rule: StallRule,
    /// Power the repetition calculation aims at.
    #[serde(default = "default_power")]
    pub power: f64,
    /// The paired standard deviation of log throughput ratios to assume before the data
    /// (from an earlier campaign or the study): `pqbench plan` (and the operator, in an
    /// event) computes the blocks each primary comparison needs for `power` at α/k and
    /// the margin, and warns when `repetitions` is fewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumed_sd: Option<f64>,
    /// A pilot: the results directory of an earlier campaign (relative to this file),
    /// whose `report.json` gives each comparison's paired sd; it takes precedence over
    /// `assumedSd` for the comparisons it holds. Read by `pqbench plan` on this machine;
    /// the operator cannot read it and uses `assumedSd` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<String>,
}

fn default_margin() -> f64 {
    0.05
}
fn default_alpha() -> f64 {
    0.05
}
fn default_sensitivity() -> Vec<f64> {
    vec![0.02, 0.10]
}
fn default_resamples() -> u32 {
    20_000
}
fn default_deficit() -> f64 {
    0.02
}
fn default_power() -> f64 {
    0.8
}

impl Default for Analysis {
    fn default() -> Self {
        Self {
            margin: default_margin(),
            alpha: default_alpha(),
            correction: Correction::default(),
            sensitivity_margins: default_sensitivity(),
            comparisons: Vec::new(),
            primary: Vec::new(),
            bootstrap_resamples: default_resamples(),
            deficit_threshold: default_deficit(),
            stall_rule: StallRule::default(),
            power: default_power(),
            assumed_sd: None,
            pilot: None,
        }
    }
}

/// The stall rule's factors (section IV-C).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StallRule {
    /// A stall has server CPU below this times its cell's median.
    #[serde(default = "default_cpu_factor")]
    pub server_cpu_factor: f64,
    /// … and throughput below this times its cell's median.
    #[serde(default = "default_tp_factor")]
    pub throughput_factor: f64,
}

fn default_cpu_factor() -> f64 {
    0.8
}
fn default_tp_factor() -> f64 {
    0.9
}

impl Default for StallRule {
    fn default() -> Self {
        Self {
            server_cpu_factor: default_cpu_factor(),
            throughput_factor: default_tp_factor(),
        }
    }
}

impl From<StallRule> for stats::regime::StallRule {
    fn from(r: StallRule) -> Self {
        Self {
            server_cpu_factor: r.server_cpu_factor,
            throughput_factor: r.throughput_factor,
        }
    }
}

/// Interleaved arms: the runs of a block at the same time, in turns
/// (`run::turns` has the rule and why).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Interleave {
    /// Length of one turn: at least 10ms, and shorter than the drift it is to cancel
    /// (100ms pairs the arms within a third of a second with three arms).
    pub slice: Dur,
}

/// The pause between runs (section IV-B): wait until the server host's dirty plus
/// write-back memory is below `maxDirty` and its disk write rate below
/// `maxDiskWritePerS` for `quietFor`, at most `maxWait`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pause {
    /// Off only for quick trials; the study's exploratory campaign shows what that costs.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Dirty + write-back memory threshold.
    #[serde(default = "default_dirty")]
    pub max_dirty: Size,
    /// Disk write-rate threshold per second.
    #[serde(default = "default_disk")]
    pub max_disk_write_per_s: Size,
    /// Both must hold this long.
    #[serde(default = "default_quiet")]
    pub quiet_for: Dur,
    /// Longest pause.
    #[serde(default = "default_max_wait")]
    pub max_wait: Dur,
}

fn yes() -> bool {
    true
}
fn default_dirty() -> Size {
    Size(32 << 20)
}
fn default_disk() -> Size {
    Size(5 << 20)
}
fn default_quiet() -> Dur {
    Dur(Duration::from_secs(2))
}
fn default_max_wait() -> Dur {
    Dur(Duration::from_secs(40))
}

impl Default for Pause {
    fn default() -> Self {
        let r = PauseRule::default();
        Self {
            enabled: true,
            max_dirty: r.max_dirty,
            max_disk_write_per_s: r.max_disk_write_per_s,
            quiet_for: r.quiet_for,
            max_wait: r.max_wait,
        }
    }
}

impl Pause {
    /// The rule one run applies (whether it applies at all is `enabled`).
    pub fn rule(&self) -> PauseRule {
        PauseRule {
            max_dirty: self.max_dirty,
            max_disk_write_per_s: self.max_disk_write_per_s,
            quiet_for: self.quiet_for,
            max_wait: self.max_wait,
        }
    }
}

/// The pause rule of one run, as a run spec carries it (the campaign's [`Pause`] without
/// `enabled`; same defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PauseRule {
    /// Quiet means dirty + write-back memory below this.
    #[serde(default = "default_dirty")]
    pub max_dirty: Size,
    /// … and disk writes below this many bytes per second …
    #[serde(default = "default_disk")]
    pub max_disk_write_per_s: Size,
    /// … for this long.
    #[serde(default = "default_quiet")]
    pub quiet_for: Dur,
    /// Give up waiting after this long (the run then starts, and the pause says so).
    #[serde(default = "default_max_wait")]
    pub max_wait: Dur,
}

impl Default for PauseRule {
    fn default() -> Self {
        Self {
            max_dirty: default_dirty(),
            max_disk_write_per_s: default_disk(),
            quiet_for: default_quiet(),
            max_wait: default_max_wait(),
        }
    }
}

/// Where the S3 server runs (used by the operator; `pqbench run` starts its embedded
/// server or uses `--endpoint`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerPlacement {
    /// Node group of the server pod (`eks.amazonaws.com/nodegroup`).
    #[serde(default = "server_group")]
    pub node_group: String,
    /// MinIO deployed by the operator (the default when `external` is absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minio: Option<MinioServer>,
    /// An existing S3 endpoint instead of MinIO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalServer>,
    /// Node labels the server pod requires; replaces the node-group label when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Taints the server pod tolerates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Affinity of the server pod, exactly as in a pod spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::schema::any_object")
    )]
    pub affinity: Option<serde_json::Value>,
    /// The server's CPUs: a count (`1`), a quoted CPU list (`"1"`, `"2-3"`) or `none`.
    /// `pqbench run` pins its embedded server there (default: the upper half of the CPUs
    /// when there are two or more); on Kubernetes a count is the MinIO pod's whole-CPU
    /// request = limit (Guaranteed QoS, pinned by the static CPU manager).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::cpus"))]
    pub cpus: Option<Cpus>,
}

fn server_group() -> String {
    "server".into()
}

impl Default for ServerPlacement {
    fn default() -> Self {
        Self {
            node_group: server_group(),
            minio: None,
            external: None,
            node_selector: None,
            tolerations: Vec::new(),
            affinity: None,
            cpus: None,
        }
    }
}

/// Where and how the clients run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientPlacement {
    /// Node group of the worker pods (`eks.amazonaws.com/nodegroup`).
    #[serde(default = "client_group")]
    pub node_group: String,
    /// Worker processes per run (pods on a cluster); the workers of a run are spread over
    /// them. At most the smallest concurrency of any cell.
    #[serde(default = "one")]
    pub processes: u32,
    /// Worker image (the release's `pqbench-worker` image when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Worker container resources; a CPU limit caps each pod's cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// Node labels the worker pods require; replaces the node-group label when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Taints the worker pods tolerate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Affinity of the worker pods, exactly as in a pod spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::schema::any_object")
    )]
    pub affinity: Option<serde_json::Value>,
    /// Secrets for pulling the worker image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_pull_secrets: Vec<SecretName>,
    /// ServiceAccount of the worker pods: with IRSA, one annotated with
    /// `eks.amazonaws.com/role-arn`, whose role the pods use for an external server or
    /// results store given without a `credentialsSecret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// The client processes' CPUs: a count, a quoted CPU list or `none`. `pqbench run`
    /// confines its worker processes there (default: the CPUs the server does not have); on
    /// Kubernetes a count is each worker pod's whole-CPU request = limit (Guaranteed QoS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::cpus"))]
    pub cpus: Option<Cpus>,
    /// The S3 client every arm uses unless it names its own (`arms[].s3Client`):
    /// `aws-sdk` (default) or `lean`.
    #[serde(default, skip_serializing_if = "S3ClientKind::is_default")]
    pub s3_client: S3ClientKind,
}

fn client_group() -> String {
    "clients".into()
}
fn one() -> u32 {
    1
}

impl Default for ClientPlacement {
    fn default() -> Self {
        Self {
            node_group: client_group(),
            processes: one(),
            image: None,
            resources: None,
            node_selector: None,
            tolerations: Vec::new(),
            affinity: None,
            image_pull_secrets: Vec::new(),
            service_account_name: None,
            cpus: None,
            s3_client: S3ClientKind::AwsSdk,
        }
    }
}

/// The most runs one campaign plans (repetitions × arms × cells): the study's primary
/// campaign is a few hundred; a plan of a million runs would take years to carry out.
pub const MAX_RUNS: u64 = 100_000;

/// The most concurrent workers (closed-loop concurrency, open-loop threads) of one run.
pub const MAX_CONCURRENCY: u32 = 100_000;

/// The most GET fixture objects written before a run.
pub const MAX_FIXTURES: u32 = 1_000_000;

/// A campaign file as `kubectl apply -f` takes it: one or more YAML documents, exactly one
/// of them the `BenchmarkCampaign`; the others (a credentials Secret, say) are Kubernetes
/// objects the cluster needs and a local run does not.
#[derive(Clone, Debug, PartialEq)]
pub struct CampaignFile {
    /// The campaign, parsed and validated.
    pub manifest: Manifest,
    /// The other objects, as `Kind name` (`Secret unreachable-s3`), in file order.
    pub others: Vec<String>,
    /// The campaign's own document as YAML, when the file holds other objects too (so a
    /// local copy of the campaign never carries those, which may be Secrets); `None` when
    /// the campaign is the whole file.
    pub campaign_only: Option<String>,
}

impl CampaignFile {
    /// Parses every document of `text` (YAML or JSON). `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let fail = |e: String| Error::Spec(format!("{origin}: {e}"));
        // An empty document (`---` at the end) is nothing.
        let mut docs: Vec<_> = crate::yaml::documents(text)
            .map_err(fail)?
            .into_iter()
            .filter(|v| !v.is_null())
            .collect();
        if let [v] = &docs[..]
            && !v.is_object()
        {
            return Err(fail(format!(
                "the document is {}; a campaign is a map with apiVersion, kind, metadata and spec",
                match v {
                    serde_json::Value::Array(_) => "a list",
                    serde_json::Value::String(_) => "a string",
                    serde_json::Value::Number(_) => "a number",
                    _ => "a boolean",
                }
            )));
        }
        let (v, others) = if docs.len() == 1 {
            // One document is the campaign, whatever it says: the parser names what is wrong.
            (docs.remove(0), Vec::new())
        } else {
            split_documents(docs).map_err(fail)?
        };
        let campaign_only = if others.is_empty() {
            None
        } else {
            Some(serde_yaml_ng::to_string(&v).map_err(|e| fail(e.to_string()))?)
        };
        let manifest: Manifest = crate::from_value(v).map_err(fail)?;
        manifest.validate().map_err(fail)?;
        Ok(Self {
            manifest,
            others,
            campaign_only,
        })
    }

    /// Reads and parses a campaign file.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text = crate::yaml::read_text(path).map_err(|e| {
            Error::Spec(format!("cannot read campaign file {}: {e}", path.display()))
        })?;
        Self::parse(&text, &path.display().to_string())
    }
}

/// Of several documents, the one `BenchmarkCampaign` and the others (`Kind name`).
fn split_documents(
    docs: Vec<serde_json::Value>,
) -> std::result::Result<(serde_json::Value, Vec<String>), String> {
    let mut campaigns = Vec::new();
    let mut others = Vec::new();
    for (i, v) in docs.into_iter().enumerate() {
        let field = |k: &str| {
            v.get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        match (field("apiVersion"), field("kind")) {
            (_, Some(kind)) if kind == KIND => campaigns.push(v),
            (Some(_), Some(kind)) => {
                let name = v
                    .pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("(unnamed)");
                others.push(format!("{kind} {name}"));
            }
            _ => {
                return Err(format!(
                    "document {} is not a Kubernetes object (it needs apiVersion and kind)",
                    i + 1
                ));
            }
        }
    }
    match campaigns.len() {
        1 => Ok((campaigns.remove(0), others)),
        0 if others.is_empty() => Err("the file holds no YAML document".into()),
        0 => Err(format!(
            "no {KIND} document among the file's {} ({})",
            others.len(),
            others.join(", ")
        )),
        n => Err(format!(
            "{n} {KIND} documents; a campaign file holds one (put each in its own file)"
        )),
    }
}

impl Manifest {
    /// Parses and validates a campaign file (YAML or JSON; several documents as
    /// [`CampaignFile::parse`] takes them). `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        CampaignFile::parse(text, origin).map(|f| f.manifest)
    }

    /// Reads and parses a campaign file.
    pub fn read(path: &std::path::Path) -> Result<Self> {
        CampaignFile::read(path).map(|f| f.manifest)
    }

    /// Cross-field rules serde cannot express. The message names the field path.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.api_version != API_VERSION {
            return Err(format!(
                "apiVersion: {:?} is not supported; use {API_VERSION}",
                self.api_version
            ));
        }
        if self.kind != KIND {
            return Err(format!("kind: {:?} must be {KIND}", self.kind));
        }
        let n = &self.metadata.name;
        if n.is_empty()
            || n.len() > 63
            || !n
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            || n.starts_with('-')
            || n.ends_with('-')
        {
            return Err(format!(
                "metadata.name: {n:?} must be 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit"
            ));
        }
        self.spec.validate().map_err(|e| format!("spec.{e}"))
    }
}

fn in_open(field: &str, v: f64, lo: f64, hi: f64) -> std::result::Result<(), String> {
    if v.is_finite() && v > lo && v < hi {
        Ok(())
    } else {
        Err(format!(
            "{field}: {v} must lie strictly between {lo} and {hi}"
        ))
    }
}

impl CampaignSpec {
    /// The fields set here that only the operator uses (`server.minio`, `results`, …), by
    /// path: `pqbench run` on one machine names them as ignored.
    pub fn cluster_only_fields(&self) -> Vec<&'static str> {
        let (s, c) = (&self.server, &self.clients);
        [
            ("server.minio", s.minio.is_some()),
            ("server.external", s.external.is_some()),
            ("server.nodeSelector", s.node_selector.is_some()),
            ("server.tolerations", !s.tolerations.is_empty()),
            ("server.affinity", s.affinity.is_some()),
            ("clients.image", c.image.is_some()),
            ("clients.resources", c.resources.is_some()),
            ("clients.nodeSelector", c.node_selector.is_some()),
            ("clients.tolerations", !c.tolerations.is_empty()),
            ("clients.affinity", c.affinity.is_some()),
            ("clients.imagePullSecrets", !c.image_pull_secrets.is_empty()),
            ("results", self.results.is_some()),
            ("telemetry", self.telemetry.is_some()),
            // deadlines.run and runRetries apply to a local run too (run::schedule).
            (
                "deadlines.provisioning",
                self.deadlines.as_ref().is_some_and(|d| {
                    d.provisioning != crate::cluster::Deadlines::default().provisioning
                }),
            ),
            (
                "deadlines.analysis",
                self.deadlines
                    .as_ref()
                    .is_some_and(|d| d.analysis != crate::cluster::Deadlines::default().analysis),
            ),
            (
                "ttlSecondsAfterFinished",
                self.ttl_seconds_after_finished.is_some(),
            ),
            (
                "secretsTtlSecondsAfterFinished",
                self.secrets_ttl_seconds_after_finished.is_some(),
            ),
            ("keepOnFailure", self.keep_on_failure),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// Cross-field rules; the message starts with the field path below `spec`.
    pub fn validate(&self) -> std::result::Result<(), String> {
        // First: everything after this may expand the grids.
        self.validate_scale()?;
        self.validate_arms()?;
        if self.repetitions < 2 {
            return Err(format!(
                "repetitions: {} is too few; a paired comparison needs at least 2 blocks",
                self.repetitions
            ));
        }
        if self.measured.0.is_zero() {
            return Err("measured: must be positive".into());
        }
        if self.cells.is_empty() {
            return Err("cells: list at least one cell".into());
        }
        for (i, c) in self.cells.iter().enumerate() {
            c.validate(self.clients.processes)
                .map_err(|e| format!("cells[{i}].{e}"))?;
        }
        if let Some(i) = &self.interleave {
            if i.slice.0 < Interleave::MIN_SLICE {
                return Err(format!(
                    "interleave.slice: {} is shorter than 10ms; timers and requests in flight would decide the arms' shares",
                    i.slice
                ));
            }
            if i.slice.0 > self.measured.0 {
                return Err(format!(
                    "interleave.slice: {} is longer than measured ({}); every arm needs whole turns in its window",
                    i.slice, self.measured
                ));
            }
            if let Some(k) = self.cells.iter().position(CellGrid::has_open_loop) {
                return Err(format!(
                    "cells[{k}].loop: interleave applies to closed-loop cells only (an open loop's arrivals do not wait for a turn); drop interleave or the open loop"
                ));
            }
        }
        let has_session = self.arm_modes().contains(&Mode::MlKem768Session);
        match &self.sessions {
            Some(_) if !has_session => {
                return Err("sessions: a session grid needs an ml-kem-768-session arm".into());
            }
            Some(s) => {
                if s.max_objects.0.is_empty() || s.max_objects.0.contains(&0) {
                    return Err("sessions.maxObjects: list one or more positive counts".into());
                }
                if s.max_age.0.is_empty() || s.max_age.0.iter().any(|d| d.0.is_zero()) {
                    return Err("sessions.maxAge: list one or more positive durations".into());
                }
            }
            None => {}
        }
        if self.baseline == Mode::MlKem768Session
            && self
                .sessions
                .as_ref()
                .is_some_and(|s| s.max_objects.0.len() * s.max_age.0.len() > 1)
        {
            return Err("baseline: ml-kem-768-session with a session grid is several arms; choose another baseline".into());
        }
        if self.server.minio.is_some() && self.server.external.is_some() {
            return Err("server: give minio or external, not both".into());
        }
        if let Some(x) = &self.server.external
            && (x.endpoint.starts_with("https://") || x.credentials_secret.is_none())
            && let Some(lean) = crate::design::arms(self)
                .into_iter()
                .find(|a| a.client == S3ClientKind::Lean)
        {
            return Err(format!(
                "arms: {} uses the lean S3 client, which speaks plain http with static keys; \
                 server.external ({}{}) needs the aws-sdk client (s3Client: aws-sdk)",
                lean.label,
                x.endpoint,
                if x.credentials_secret.is_none() {
                    ", pod identity"
                } else {
                    ""
                }
            ));
        }
        if let Some(t) = &self.telemetry
            && !(0.0..=1.0).contains(&t.sample_ratio)
        {
            return Err(format!(
                "telemetry.sampleRatio: {} must lie in [0, 1]",
                t.sample_ratio
            ));
        }
        if let Some(t) = &self.telemetry
            && !t.otlp_endpoint.starts_with("http://")
        {
            return Err(format!(
                "telemetry.otlpEndpoint {:?}: use a plaintext http://host:port collector (TLS \
                 export is not supported; put an agent next to the workers)",
                t.otlp_endpoint
            ));
        }
        if self.fixtures == 0
            && self
                .cells
                .iter()
                .any(|c| c.operation.0.contains(&Operation::Get))
        {
            return Err("fixtures: a GET cell needs at least 1 fixture object".into());
        }
        if !(0.0..=1.0).contains(&self.allowed_failure_fraction) {
            return Err(format!(
                "allowedFailureFraction: {} must lie within [0, 1]",
                self.allowed_failure_fraction
            ));
        }
        if self.clients.processes == 0 {
            return Err("clients.processes: must be at least 1".into());
        }
        self.analysis
            .validate()
            .map_err(|e| format!("analysis.{e}"))?;
        self.validate_comparisons()
    }

    /// Refuses a campaign too large to plan or to run, before any grid is expanded: a
    /// mistyped `repetitions: 1000000000` made `pqbench plan` build a billion blocks (the
    /// hostile-input table, `tests/hostile.rs`). The run count is an upper bound (the
    /// session grid multiplies every arm), computed without overflow.
    fn validate_scale(&self) -> std::result::Result<(), String> {
        if self.fixtures > MAX_FIXTURES {
            return Err(format!(
                "fixtures: {} is more than {MAX_FIXTURES} objects written before each GET run",
                self.fixtures
            ));
        }
        for (i, c) in self.cells.iter().enumerate() {
            let loads = match &c.arrival {
                LoopGrid::Closed => c.concurrency.as_ref().map_or(&[][..], |l| &l.0[..]),
                LoopGrid::Open { threads, .. } => std::slice::from_ref(threads),
            };
            if let Some(n) = loads.iter().find(|&&n| n > MAX_CONCURRENCY) {
                return Err(format!(
                    "cells[{i}].{}: {n} workers is more than one run drives ({MAX_CONCURRENCY} at most)",
                    if matches!(c.arrival, LoopGrid::Closed) {
                        "concurrency"
                    } else {
                        "loop.threads"
                    }
                ));
            }
        }
        let len = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let sessions = self.sessions.as_ref().map_or(Some(1), |g| {
            len(g.max_objects.0.len()).checked_mul(len(g.max_age.0.len()))
        });
        let arms = if self.arms.is_empty() {
            len(self.modes.len()).checked_mul(len(self.backends.len().max(1)))
        } else {
            Some(len(self.arms.len()))
        }
        .zip(sessions)
        .and_then(|(a, s)| a.checked_mul(s.max(1)));
        let runs = self.cells.iter().try_fold(0u64, |total, c| {
            let loads = match &c.arrival {
                LoopGrid::Closed => c.concurrency.as_ref().map_or(0, |l| l.0.len()),
                LoopGrid::Open { rates, .. } => rates.0.len(),
            };
            [
                c.operation.0.len(),
                c.object_size.0.len(),
                loads,
                c.client_cores.as_ref().map_or(1, |k| k.0.len()),
            ]
            .into_iter()
            .try_fold(
                u64::from(c.repetitions.unwrap_or(self.repetitions)),
                |n, k| n.checked_mul(len(k)),
            )
            .and_then(|n| n.checked_mul(arms?))
            .and_then(|n| total.checked_add(n))
        });
        match runs {
            Some(n) if n <= MAX_RUNS => Ok(()),
            n => Err(format!(
                "repetitions × arms × cells is {} runs; one campaign plans at most {MAX_RUNS} \
                 (split it, or lower repetitions or the cell lists)",
                n.map_or_else(|| "more than 2^64".to_owned(), |n| n.to_string())
            )),
        }
    }

    /// The modes of the arms (`modes`, or the modes of `arms`).
    pub fn arm_modes(&self) -> Vec<Mode> {
        if self.arms.is_empty() {
            self.modes.clone()
        } else {
            self.arms.iter().map(|a| a.mode).collect()
        }
    }

    fn validate_arms(&self) -> std::result::Result<(), String> {
        match (self.modes.is_empty(), self.arms.is_empty()) {
            (false, false) => {
                return Err("arms: give modes (with backends) or arms, not both".into());
            }
            (true, true) => {
                return Err(
                    "modes: list at least two modes (the baseline and one to compare), or list arms"
                        .into(),
                );
            }
            _ => {}
        }
        let mut seen = BTreeSet::new();
        for (i, m) in self.modes.iter().enumerate() {
            if !seen.insert(m.name()) {
                return Err(format!("modes[{i}]: {m} is listed twice"));
            }
        }
        for (i, a) in self.arms.iter().enumerate() {
            if let Some(n) = &a.name
                && !is_label(n)
            {
                return Err(format!(
                    "arms[{i}].name: {n:?} must be 1-40 lower-case letters, digits or '-'"
                ));
            }
            if let Some(why) = a.format.refuses(a.mode) {
                return Err(format!("arms[{i}].format: {why}"));
            }
            if a.require_pq && a.format == ObjectFormat::V1 {
                return Err(format!(
                    "arms[{i}].requirePq: a format v2 reader's check (a v1 reader opens only its \
                     own mode); set format: v2 or v2-prefix, or drop requirePq"
                ));
            }
            if a.require_pq && !a.mode.post_quantum() {
                return Err(format!(
                    "arms[{i}].requirePq: {} is not post-quantum, so the arm's reader would \
                     refuse every object its writer makes; drop requirePq",
                    a.mode
                ));
            }
        }
        let mut modes = self.arm_modes();
        modes.dedup();
        if !modes.contains(&self.baseline) {
            let field = if self.arms.is_empty() {
                "modes"
            } else {
                "arms"
            };
            return Err(format!(
                "baseline: {} is not the mode of any arm ({field}: {})",
                self.baseline,
                modes
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.backends.is_empty() {
            return Err("backends: list at least one backend (aws-lc, rustcrypto)".into());
        }
        let mut seen = BTreeSet::new();
        for (i, b) in self.backends.iter().enumerate() {
            if !seen.insert(b.name()) {
                return Err(format!("backends[{i}]: {} is listed twice", b.name()));
            }
        }
        let arms = crate::design::arms(self);
        let mut seen = BTreeSet::new();
        for a in &arms {
            if !seen.insert(a.label.as_str()) {
                return Err(format!(
                    "arms: two arms are labelled {:?}; give them distinct names",
                    a.label
                ));
            }
        }
        if arms.len() < 2 {
            let field = if self.arms.is_empty() {
                "modes"
            } else {
                "arms"
            };
            return Err(format!(
                "{field}: list at least two modes (the baseline and one to compare), or set aaControl"
            ));
        }
        Ok(())
    }

    fn validate_comparisons(&self) -> std::result::Result<(), String> {
        let arms = crate::design::arms(self);
        let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
        let known = |field: String, l: &str| {
            if labels.contains(&l) {
                Ok(())
            } else {
                Err(format!(
                    "{field}: {l:?} is not an arm of this campaign; its arms are: {}",
                    labels.join(", ")
                ))
            }
        };
        let mut seen = BTreeSet::new();
        for (i, c) in self.analysis.comparisons.iter().enumerate() {
            known(format!("analysis.comparisons[{i}].arm"), &c.arm)?;
            known(format!("analysis.comparisons[{i}].against"), &c.against)?;
            if c.arm == c.against {
                return Err(format!(
                    "analysis.comparisons[{i}]: {} against itself compares nothing",
                    c.arm
                ));
            }
            if !seen.insert((&c.arm, &c.against)) {
                return Err(format!(
                    "analysis.comparisons[{i}]: {} against {} is listed twice",
                    c.arm, c.against
                ));
            }
        }
        let comparisons = crate::design::comparisons(self, &arms);
        let ids: BTreeSet<String> = crate::design::cells(self)
            .into_iter()
            .map(|c| c.id)
            .collect();
        for (i, p) in self.analysis.primary.iter().enumerate() {
            if !ids.contains(&p.cell) {
                return Err(format!(
                    "analysis.primary[{i}].cell: {:?} is not a cell of this campaign; its cells are: {}",
                    p.cell,
                    ids.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            match (&p.arm, &p.against) {
                (None, None) => {}
                (Some(a), Some(b)) => {
                    if !comparisons.iter().any(|c| &c.arm == a && &c.against == b) {
                        return Err(format!(
                            "analysis.primary[{i}]: {a} against {b} is not one of the comparisons ({}); \
                             declare it in analysis.comparisons",
                            comparisons
                                .iter()
                                .map(|c| format!("{} vs {}", c.arm, c.against))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
                _ => {
                    return Err(format!(
                        "analysis.primary[{i}]: give both arm and against, or neither (every comparison of the cell)"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// An arm label: 1–40 lower-case letters, digits or '-' (it goes into run ids, directory
/// names and Kubernetes object names).
fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

impl CellGrid {
    fn validate(&self, processes: u32) -> std::result::Result<(), String> {
        if self.operation.0.is_empty() {
            return Err("operation: list put, get or both".into());
        }
        if self.object_size.0.is_empty() {
            return Err("objectSize: list at least one size".into());
        }
        for (i, s) in self.object_size.0.iter().enumerate() {
            if s.0 > envelope::MAX_PLAINTEXT_SIZE {
                return Err(format!("objectSize[{i}]: {s} exceeds the format's maximum"));
            }
        }
        if let Some(r) = self.repetitions
            && r < 2
        {
            return Err(format!("repetitions: {r} is too few; at least 2"));
        }
        if let Some(k) = &self.client_cores {
            if k.0.is_empty() {
                return Err("clientCores: list at least one core count, e.g. [1]".into());
            }
            if let Some(i) = k.0.iter().position(|&n| n == 0) {
                return Err(format!("clientCores[{i}]: must be at least 1"));
            }
            if let Some(i) = k.0.iter().position(|&n| n < processes) {
                return Err(format!(
                    "clientCores[{i}]: {} is below clients.processes ({processes}); each process \
                     needs a core of its own, or the processes preempt each other between stage \
                     timers and fail the unaccounted-time check",
                    k.0[i]
                ));
            }
        }
        match (&self.arrival, &self.concurrency) {
            (LoopGrid::Closed, None) => {
                Err("concurrency: a closed-loop cell needs concurrency (a list, e.g. [4])".into())
            }
            (LoopGrid::Closed, Some(c)) => {
                if c.0.is_empty() {
                    return Err("concurrency: list at least one value".into());
                }
                for (i, &n) in c.0.iter().enumerate() {
                    if n == 0 {
                        return Err(format!("concurrency[{i}]: must be at least 1"));
                    }
                    if n < processes {
                        return Err(format!(
                            "concurrency[{i}]: {n} is below clients.processes ({processes}); every process needs a worker"
                        ));
                    }
                }
                Ok(())
            }
            (LoopGrid::Open { .. }, Some(_)) => Err(
                "concurrency: an open-loop cell takes its workers from loop.threads; remove concurrency".into(),
            ),
            (LoopGrid::Open { rates, threads }, None) => {
                if *threads == 0 || *threads < processes {
                    return Err(format!(
                        "loop.threads: {threads} must be at least 1 and at least clients.processes ({processes})"
                    ));
                }
                if rates.0.is_empty() {
                    return Err("loop.rates: list at least one offered rate (requests/s)".into());
                }
                for (i, r) in rates.0.iter().enumerate() {
                    if !(r.is_finite() && *r > 0.0) {
                        return Err(format!(
                            "loop.rates[{i}]: {r} must be a positive number of requests per second"
                        ));
                    }
                }
                Ok(())
            }
        }
    }
}

impl Analysis {
    fn validate(&self) -> std::result::Result<(), String> {
        in_open("margin", self.margin, 0.0, 0.5)?;
        in_open("alpha", self.alpha, 0.0, 0.5)?;
        for (i, m) in self.sensitivity_margins.iter().enumerate() {
            in_open(&format!("sensitivityMargins[{i}]"), *m, 0.0, 0.5)?;
        }
        if self.bootstrap_resamples < 1000 {
            return Err(format!(
                "bootstrapResamples: {} is too few for a 90 % percentile interval; use at least 1000 (the study used 20000)",
                self.bootstrap_resamples
            ));
        }
        in_open("deficitThreshold", self.deficit_threshold, 0.0, 0.5)?;
        in_open(
            "stallRule.serverCpuFactor",
            self.stall_rule.server_cpu_factor,
            0.0,
            1.0,
        )?;
        in_open(
            "stallRule.throughputFactor",
            self.stall_rule.throughput_factor,
            0.0,
            1.0,
        )?;
        in_open("power", self.power, 0.0, 1.0)?;
        if let Some(sd) = self.assumed_sd {
            in_open("assumedSd", sd, 0.0, 2.0)?;
        }
        if self.pilot.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(
                "pilot: give the results directory of an earlier campaign, or leave pilot out"
                    .into(),
            );
        }
        let mut seen = BTreeSet::new();
        for (i, p) in self.primary.iter().enumerate() {
            if !seen.insert((&p.cell, &p.arm, &p.against)) {
                return Err(format!("primary[{i}]: {:?} is listed twice", p.cell));
            }
        }
        Ok(())
    }
}
