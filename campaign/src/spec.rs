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

use std::collections::BTreeMap;
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
    /// Crypto backends (`aws-lc`, `rustcrypto`, `libcrux`, `openssl`) of the `modes` shorthand: each mode runs on
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
    /// The testbed's ceilings, measured before the first run (study IV-A).
    #[serde(default, skip_serializing_if = "Testbed::is_default")]
    pub testbed: Testbed,
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
/// chunks); `v2.1` and `v2.1-prefix` the same with a re-wrappable v2.1 header (FORMAT-v2.md
/// §10, 32 bytes longer). v2 takes the modes `x25519`, `ml-kem-768`, `ml-kem-1024` (prefix
/// only: its header exceeds S3's 2 KB of metadata) and `x-wing`.
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
    /// Format v2.1 (re-wrappable), the header in metadata.
    #[serde(rename = "v2.1")]
    V2_1,
    /// Format v2.1 (re-wrappable), the header before the chunks.
    #[serde(rename = "v2.1-prefix")]
    V2_1Prefix,
}

impl ObjectFormat {
    /// The name used in files and labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1 => "v1",
            Self::V2 => "v2",
            Self::V2Prefix => "v2-prefix",
            Self::V2_1 => "v2.1",
            Self::V2_1Prefix => "v2.1-prefix",
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
            Self::V2 | Self::V2Prefix | Self::V2_1 | Self::V2_1Prefix => envelope::Format::V2,
        }
    }

    /// The v2 header version written (`None` in v1).
    pub fn header_version(self) -> Option<envelope::v2::HeaderVersion> {
        match self {
            Self::V1 => None,
            Self::V2 | Self::V2Prefix => Some(envelope::v2::HeaderVersion::V2),
            Self::V2_1 | Self::V2_1Prefix => Some(envelope::v2::HeaderVersion::V2_1),
        }
    }

    /// Where a v2 header goes (`None` in v1).
    pub fn placement(self) -> Option<envelope::v2::Placement> {
        match self {
            Self::V1 => None,
            Self::V2 | Self::V2_1 => Some(envelope::v2::Placement::Metadata),
            Self::V2Prefix | Self::V2_1Prefix => Some(envelope::v2::Placement::Prefix),
        }
    }

    /// Why `mode` cannot be written in this format, if it cannot.
    pub fn refuses(self, mode: Mode) -> Option<String> {
        match self {
            Self::V1 => None,
            _ if !envelope::interop::Format::V2.has(mode) => Some(format!(
                "format {} wraps with HPKE to x25519, ml-kem-768, ml-kem-1024 or x-wing keys; mode {mode} has no v2 suite (use format v1)",
                self.as_str()
            )),
            Self::V2 | Self::V2_1 if mode == Mode::MlKem1024 => Some(format!(
                "format {} puts the header in S3 user metadata, and ML-KEM-1024's (1,745 bytes or more) exceeds its 2 KB; use format {}-prefix",
                self.as_str(),
                self.as_str()
            )),
            _ => None,
        }
    }
}

impl std::str::FromStr for ObjectFormat {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        [
            Self::V1,
            Self::V2,
            Self::V2Prefix,
            Self::V2_1,
            Self::V2_1Prefix,
        ]
        .into_iter()
        .find(|f| f.as_str() == s)
        .ok_or_else(|| {
            format!("unknown format {s:?}: expected v1, v2, v2-prefix, v2.1 or v2.1-prefix")
        })
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
    /// The crypto backend (default `aws-lc`), or `remote`: the recipient's secret key is in
    /// a key service (the AWS KMS protocol, `kms`), which performs each object's
    /// decapsulation (ML-KEM) or key agreement (X25519); encapsulation and the data layer
    /// stay local on aws-lc.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(schema_with = "crate::schema::arm_backend")
    )]
    pub backend: ArmBackend,
    /// The key service of a `backend: remote` arm (default: the embedded one, no added
    /// round trip, no cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms: Option<KmsSpec>,
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

/// An arm's `backend`: a crypto backend, or `remote` (issue 41).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArmBackend {
    /// Every primitive on this crypto backend.
    Local(Backend),
    /// The recipient's secret-key operation in a key service; the rest on aws-lc.
    Remote,
}

impl Default for ArmBackend {
    fn default() -> Self {
        ArmBackend::Local(Backend::AwsLc)
    }
}

impl ArmBackend {
    /// The crypto backend of the arm's local primitives (aws-lc for a remote arm).
    pub const fn local(self) -> Backend {
        match self {
            ArmBackend::Local(b) => b,
            ArmBackend::Remote => Backend::AwsLc,
        }
    }

    /// Whether the arm's key is in a key service.
    pub const fn is_remote(self) -> bool {
        matches!(self, ArmBackend::Remote)
    }

    /// `remote` or the backend's name.
    pub const fn name(self) -> &'static str {
        match self {
            ArmBackend::Local(b) => b.name(),
            ArmBackend::Remote => "remote",
        }
    }
}

impl std::fmt::Display for ArmBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for ArmBackend {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for ArmBackend {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        if name == "remote" {
            return Ok(ArmBackend::Remote);
        }
        name.parse::<Backend>().map(ArmBackend::Local).map_err(|_| {
            de::Error::custom(format!(
                "unknown backend {name:?}: expected aws-lc, rustcrypto, libcrux, openssl or remote"
            ))
        })
    }
}

/// The key service of a remote arm (`arms[].kms`, issue 41): by default the embedded
/// service (`pqbench serve-kms`), which the executor starts on the server's CPUs with the
/// campaign's keys; with `endpoint`, a key service already running (AWS KMS, or
/// `pqbench serve-kms` elsewhere) that holds the arm's key `keyId`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KmsSpec {
    /// Round-trip time the embedded service adds to every answer (`0ms`, `1ms`, ...): the
    /// link to a key service elsewhere. Default 0. Not with `endpoint` (a real service's
    /// round trip is the network's).
    #[serde(default, skip_serializing_if = "Dur::is_zero")]
    pub rtt: Dur,
    /// Keep recovered shared secrets per run process, keyed by ciphertext, so a repeated
    /// object costs no round trip (the AWS Encryption SDK's caching materials manager).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache: bool,
    /// A key service already running, speaking the AWS KMS JSON protocol with SigV4
    /// (`kms/PROTOCOL.md`): `https://kms.eu-west-1.amazonaws.com`, or `http://host:port` on
    /// a private path. The executor starts nothing for the arm. Credentials: `pqbench run
    /// --kms-credentials FILE` locally, `credentialsSecret` on a cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The arm's key in the service at `endpoint` (a key id or key ARN; required with
    /// `endpoint`): a key of the arm's mode (`ML_KEM_768`, `ML_KEM_1024`, `ECC_X25519`...).
    /// Writers take its public key from `GetPublicKey` before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// Signing region of the service at `endpoint` (default `us-east-1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// On a cluster: the Secret (in the campaign's namespace, labelled
    /// `pqbench.io/credentials: "true"` by its owner) holding `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY` for the service at `endpoint`; required there. `pqbench run`
    /// takes `--kms-credentials` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
}

impl KmsSpec {
    /// Whether the executor starts this arm's key service (no `endpoint`).
    pub const fn embedded(&self) -> bool {
        self.endpoint.is_none()
    }

    /// The signing region of the service at `endpoint`.
    pub fn region(&self) -> &str {
        self.region.as_deref().unwrap_or("us-east-1")
    }

    /// Refuses fields that do not fit together; errors name the field under `at`
    /// (`arms[2].kms`) and say what to do.
    pub fn check(&self, at: &str) -> Result<(), String> {
        let Some(endpoint) = &self.endpoint else {
            for (field, set) in [
                ("keyId", self.key_id.is_some()),
                ("region", self.region.is_some()),
                ("credentialsSecret", self.credentials_secret.is_some()),
            ] {
                if set {
                    return Err(format!(
                        "{at}.{field}: belongs to a key service given by endpoint; the embedded \
                         service holds the campaign's own keys. Set {at}.endpoint or drop {field}"
                    ));
                }
            }
            return Ok(());
        };
        if !is_endpoint(endpoint) {
            return Err(format!(
                "{at}.endpoint: {endpoint:?} is not http(s)://host[:port] (a DNS name or IPv4 \
                 address; no path, query or credentials)"
            ));
        }
        if !self.rtt.is_zero() {
            return Err(format!(
                "{at}.rtt: the embedded service adds a round trip; the service at {endpoint} \
                 has the network's. Drop rtt or drop endpoint"
            ));
        }
        let Some(id) = &self.key_id else {
            return Err(format!(
                "{at}.keyId: required with endpoint: the id or ARN of the arm's key in that \
                 service (`pqbench serve-kms --create` prints one)"
            ));
        };
        if id.is_empty()
            || id.len() > 2048
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_:/.".contains(&b))
        {
            return Err(format!(
                "{at}.keyId: {id:?} is not a key id or ARN (letters, digits, '-', '_', ':', \
                 '/', '.')"
            ));
        }
        if let Some(r) = &self.region
            && (r.is_empty()
                || r.len() > 64
                || !r
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
        {
            return Err(format!(
                "{at}.region: {r:?} is not a region name (eu-west-1)"
            ));
        }
        if let Some(n) = &self.credentials_secret
            && !crate::cluster::is_dns_subdomain(n)
        {
            return Err(format!(
                "{at}.credentialsSecret: {n:?} is not a Secret name (lower-case letters, \
                 digits, '-' and '.', at most 253)"
            ));
        }
        Ok(())
    }
}

/// Whether `url` is `http(s)://host[:port]` with an optional trailing `/`, the host a DNS
/// name or IPv4 address (checked without a URL library: the campaign crate stays free of
/// HTTP stacks).
fn is_endpoint(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
    else {
        return false;
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (rest, None),
    };
    crate::cluster::is_dns_subdomain(host)
        && port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0))
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

/// An advance prediction (`analysis.predictions`, study section IV-C: "the identity becomes
/// a prediction only when applied to data it was not computed from"): the throughput ratio
/// `arm / against` expected in `cell`, fixed before the campaign, typically an earlier
/// campaign's CPU-implied ratio. The report scores it against the measured ratio.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PredictionSpec {
    /// The cell, as `pqbench plan` prints it.
    pub cell: String,
    /// The arm measured.
    pub arm: String,
    /// The arm it is measured against.
    pub against: String,
    /// The predicted throughput ratio `arm / against`, in (0, 10).
    pub ratio: f64,
    /// Where the prediction comes from, in words (`implied by CPU in campaign quick-0412`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A declared control (`analysis.controls`, study section V-C): the share of `arm`'s
/// deficit against `against` that `control` removes, `1 − ln(arm/control) ÷
/// ln(arm/against)`, in every cell holding the three arms. Without any, the report
/// attributes the manifest size (ML-KEM-768 against X25519 with the padded-manifest control)
/// wherever those arms run.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ControlSpec {
    /// The arm with the deficit (P1).
    pub arm: String,
    /// The control arm: the same arm with one suspected cause removed (C2, or the binding
    /// control).
    pub control: String,
    /// The arm the deficit is measured against (B2).
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
    /// Advance predictions of throughput ratios, scored in the report.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predictions: Vec<PredictionSpec>,
    /// Declared controls, each attributed its share of a deficit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controls: Vec<ControlSpec>,
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
            predictions: Vec::new(),
            controls: Vec::new(),
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

/// The testbed's baselines: the ceilings each cell's bottleneck label is read against.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Testbed {
    /// Before the first run, measure the network each way (iperf3), the server disk's
    /// sequential writes (fio) and the round trip (ping), each for about a tenth of the
    /// measured window (1 to 5 s), and keep them as `baselines.json`: `pqbench run` on this
    /// host (the embedded server's CPUs and disk); the operator with fio in an init
    /// container on MinIO's data volume, an iperf3 server beside MinIO, and a pre-flight
    /// probe Job on the clients' node group (iperf3 both ways, ping), under the campaign's
    /// results prefix. An external server gets ping alone. A missing tool or a failed probe
    /// is a note in the report, not a failure. Default true.
    #[serde(default = "yes")]
    pub baselines: bool,
}

impl Default for Testbed {
    fn default() -> Self {
        Self { baselines: true }
    }
}

impl Testbed {
    /// Whether this is the default (then it is not serialised, and the pre-registration
    /// hashes of campaigns written before it stay what they were).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
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
            (
                "arms[].kms.credentialsSecret",
                self.arms.iter().any(|a| {
                    a.kms
                        .as_ref()
                        .is_some_and(|k| k.credentials_secret.is_some())
                }),
            ),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// The modes of the arms (`modes`, or the modes of `arms`).
    pub fn arm_modes(&self) -> Vec<Mode> {
        if self.arms.is_empty() {
            self.modes.clone()
        } else {
            self.arms.iter().map(|a| a.mode).collect()
        }
    }
}

/// The JSON Schemas of the spec's own wrapper types, for the operator's CRD (the shared
/// pieces are in `crate::schema`).
#[cfg(feature = "schema")]
mod json_schema {
    use std::borrow::Cow;

    use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

    use super::{List, LoopGrid};

    impl<T: JsonSchema> JsonSchema for List<T> {
        fn inline_schema() -> bool {
            true
        }
        fn schema_name() -> Cow<'static, str> {
            format!("ListOf{}", T::schema_name()).into()
        }
        fn json_schema(g: &mut SchemaGenerator) -> Schema {
            // A structural schema cannot say "a value or a list", and a field it leaves untyped
            // is invisible to CEL and unchecked: these fields are lists, and `List`'s
            // deserializer refuses a single value too, so a file means one thing everywhere.
            json_schema!({
                "type": "array",
                "items": g.subschema_for::<T>(),
                "description": "A list of values, also for one value ([32]); a single value is refused, by pqbench run as by the API server."
            })
        }
    }

    impl JsonSchema for LoopGrid {
        fn inline_schema() -> bool {
            true
        }
        fn schema_name() -> Cow<'static, str> {
            "Loop".into()
        }
        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "description": "How requests arrive: `{type: closed}` (every worker issues requests back to back; the default) or `{type: open, rates: [...], threads: N}` (Poisson arrivals at each offered rate, requests/s, served by N workers; each rate is its own cell).",
                "type": "object",
                "required": ["type"],
                "properties": {
                    "type": { "type": "string", "enum": ["closed", "open"] },
                    "rates": {
                        "type": "array",
                        "items": { "type": "number" },
                        "description": "Offered rates in requests per second (open loop)."
                    },
                    "threads": {
                        "type": "integer",
                        "format": "uint32",
                        "minimum": 1,
                        "description": "Workers serving the queue (open loop)."
                    }
                },
                "x-kubernetes-validations": [{
                    "rule": "self.type == 'open' ? (has(self.rates) && has(self.threads)) : (!has(self.rates) && !has(self.threads))",
                    "message": "loop: an open loop needs rates and threads; a closed loop takes neither"
                }]
            })
        }
    }
}
