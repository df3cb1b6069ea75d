//! The `BenchmarkCampaign` custom resource (`pqbench.io/v1alpha1`, namespaced, short name
//! `bc`): its spec is [`campaign::CampaignSpec`], the very type `pqbench run` reads, so one
//! file runs on a laptop and on a cluster. Its status is written by the operator only.
//!
//! The CRD is generated from these types ([`crd`]; `crdgen` writes `crds/`), with the
//! cross-field rules of [`campaign::Manifest::validate`] that a structural schema cannot
//! express added as CEL (`x-kubernetes-validations`) so that the API server refuses a bad
//! campaign at `kubectl apply` with the same words (issue 6, "Build" 1).

use std::ops::Deref;

use campaign::CampaignSpec;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use kube::core::CustomResourceExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The spec of a `BenchmarkCampaign`: the pre-registered campaign, immutable once created.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "pqbench.io",
    version = "v1alpha1",
    kind = "BenchmarkCampaign",
    namespaced,
    shortname = "bc",
    status = "CampaignStatus",
    doc = "A pre-registered benchmark campaign: modes compared on an S3 data path, run by the pqbench operator, with verdicts in status.",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Progress","type":"string","jsonPath":".status.progress.summary"}"#,
    printcolumn = r#"{"name":"Verdicts","type":"string","jsonPath":".status.verdictSummary"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(transparent)]
pub struct BenchmarkCampaignSpec {
    /// The campaign.
    pub campaign: CampaignSpec,
}

impl Deref for BenchmarkCampaignSpec {
    type Target = CampaignSpec;
    fn deref(&self) -> &CampaignSpec {
        &self.campaign
    }
}

/// Where a campaign is in its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Phase {
    /// Accepted; nothing created yet.
    #[default]
    Pending,
    /// Creating the credentials and keys Secrets, the server and the results bucket.
    Provisioning,
    /// Running the planned runs, one worker Job per run.
    Running,
    /// Every run is done; computing the verdicts.
    Analyzing,
    /// Verdicts are in status and the report in the results bucket.
    Succeeded,
    /// A deadline passed, the spec is invalid, or too many runs failed; `message` says which.
    Failed,
}

impl Phase {
    /// Fixed label (metrics, events).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Provisioning => "Provisioning",
            Self::Running => "Running",
            Self::Analyzing => "Analyzing",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
        }
    }

    /// Whether the campaign has ended.
    pub const fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

/// The observed state of a campaign. Compact by design: raw records and run summaries
/// live in the results bucket, never here (etcd objects are at most 1 MiB).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignStatus {
    /// Current phase.
    #[serde(default)]
    pub phase: Phase,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// SHA-256 of the canonical spec (as `pqbench plan` prints it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prereg_hash: Option<String>,
    /// The API server's creation time of this campaign (RFC 3339), recorded with the hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registered_at: Option<String>,
    /// The interop matrix checked at admission, in words: how many round trips between the
    /// campaign's backends (every backend seals, every backend opens, in every mode and
    /// both formats) succeeded, and each backend's crates and versions. A campaign whose
    /// backends do not interoperate fails with `InvalidSpec` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interop: Option<String>,
    /// Runs done out of the plan, the run in progress and an ETA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    /// Conditions, one per type:
    /// `Provisioned` (True: server, Secrets and results bucket ready; False: not yet or
    /// failed, see reason; Unknown: not started),
    /// `Running` (True: runs in progress; False: not started or finished),
    /// `Analyzed` (True: verdicts computed and the report written),
    /// `Degraded` (True: some runs failed after their retries or were invalid and are left
    /// out; the campaign goes on),
    /// `Ready` (True: Succeeded; False: Failed; Unknown: still going),
    /// `InsecureEndpoint` (True, only then present: an external endpoint is plain
    /// `http://`; the campaign goes on).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
    /// Runs that failed every attempt (id, attempts, last reason).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_runs: Vec<FailedRun>,
    /// One row per comparison, as in `report.json` (compact).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<VerdictRow>,
    /// The report's per-request table, headline: per cell and arm, S3 requests and client
    /// CPU per logical request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_request: Vec<run::verdicts::PerRequestRow>,
    /// The report's cross-format ratios (an arm over its counterpart in the other object
    /// format), where the campaign has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub format_ratios: Vec<run::verdicts::FormatRatioRow>,
    /// SHA-256 of the data set the report came from and of `report.json` (also
    /// `digests.json` beside the report), to check a report against its data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digests: Option<run::verdicts::Digests>,
    /// The report's key establishment per request at one worker (study Tables VII and
    /// VIII): per one-worker cell and arm, the mean, its 95 % interval and its share of the
    /// request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_establishment: Vec<run::verdicts::KemTimeRow>,
    /// The headlines of the report's other study figures, in words: the study comparison's
    /// counts, the cells' bottlenecks counted and each cell's, each control's share of a
    /// deficit, each prediction scored, the original interval rule's counts (at most 40;
    /// the report has them all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// Counts of verdicts (`2 Equivalent, 1 Inconclusive`), for `kubectl get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_summary: Option<String>,
    /// Departures from the pre-registered plan (retried, excluded or unfinished runs,
    /// blocks left out, stalls, a changed order, a significant order or time effect),
    /// listed in the report's deviations log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deviations: Option<u32>,
    /// Where the run files and the report are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<ResultsLocation>,
    /// A human-readable line on the current state or the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the current phase began (RFC 3339); phase deadlines count from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_since: Option<String>,
    /// The run in progress: its Job, attempt and start instant. With the results bucket
    /// it is what a restarted operator resumes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<CurrentRun>,
    /// When the campaign ended (RFC 3339); `ttlSecondsAfterFinished` counts from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// When the server, Secrets and Jobs were deleted after the TTL (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleaned_up_at: Option<String>,
    /// When the recipient keys Secret (and, with results elsewhere, MinIO and its
    /// credentials) were deleted after the secrets TTL (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets_deleted_at: Option<String>,
    /// The images the campaign's pods ran, each with the digest its kubelet resolved
    /// (`status.containerStatuses[].imageID` of the pods), so that a tag moved later does
    /// not change what a verdict was measured with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ResolvedImage>,
}

/// An image as a campaign named it and the digest a kubelet resolved it to.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedImage {
    /// The reference in the pod spec (`ghcr.io/pqbench/pqbench-worker:0.1.0`).
    pub image: String,
    /// The resolved image (`ghcr.io/pqbench/pqbench-worker@sha256:...`), as the
    /// container runtime reports it.
    #[serde(rename = "imageID")]
    pub image_id: String,
}

/// The run in progress.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrentRun {
    /// Run id from the plan.
    pub run_id: String,
    /// Position of the run in the plan, from 0.
    pub index: u32,
    /// Attempt, from 1.
    pub attempt: u32,
    /// Name of the attempt's Job.
    pub job: String,
    /// When the attempt's Job was created (RFC 3339); the run deadline counts from it.
    pub created_at: String,
    /// The start instant written to the results bucket once every pod was ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// The block's runs carried out beside it, in their own turns (`interleave`), behind
    /// the same start instant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mates: Vec<MateRun>,
}

/// A run of the current run's block carried out beside it (interleaved).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MateRun {
    /// Run id from the plan.
    pub run_id: String,
    /// Position of the run in the plan, from 0.
    pub index: u32,
    /// Name of its Job.
    pub job: String,
}

/// Progress through the plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// Runs with their files in the results bucket (valid or not).
    pub done: u32,
    /// Runs in the plan.
    pub total: u32,
    /// `done/total` (the Progress column).
    pub summary: String,
    /// The run in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_run: Option<String>,
    /// Attempt of the run in progress (1 for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Estimated completion time (RFC 3339), from the mean time per run so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta: Option<String>,
}

/// A run that failed every attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedRun {
    /// Run id from the plan.
    pub run_id: String,
    /// Attempts made.
    pub attempts: u32,
    /// Why the last attempt failed.
    pub reason: String,
}

pub use run::verdicts::VerdictRow;

/// The results bucket of a campaign.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResultsLocation {
    /// Endpoint URL of the results store.
    pub endpoint: String,
    /// Bucket.
    pub bucket: String,
    /// Key prefix of this campaign (`<namespace>/<name>/<uid>/`).
    pub prefix: String,
}

/// `conditions`: a list map keyed by `type`, so that server-side apply merges by type.
fn conditions_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let items = g.subschema_for::<Condition>();
    schemars::json_schema!({
        "type": "array",
        "items": items,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    })
}

/// A CEL rule at a place in the spec schema.
struct Rule {
    /// Property path below `spec` (`""`: the spec itself).
    path: &'static [&'static str],
    rule: &'static str,
    message: &'static str,
}

/// The CEL rules. The messages are those of `campaign::Manifest::validate` where it has
/// one, so that `kubectl apply` and `pqbench plan` say the same thing.
const RULES: &[Rule] = &[
    Rule {
        path: &[],
        rule: "self == oldSelf",
        message: "spec is the pre-registration and cannot change; create a new campaign",
    },
    Rule {
        path: &[],
        rule: "has(self.modes) != has(self.arms)",
        message: "give modes (with backends) or arms, not both",
    },
    Rule {
        path: &[],
        rule: "(has(self.modes) && self.modes.exists(m, m == self.baseline)) || (has(self.arms) && self.arms.exists(a, a.mode == self.baseline))",
        message: "baseline must be one of modes",
    },
    Rule {
        path: &[],
        rule: "(has(self.modes) && self.modes.size() >= 2) || (has(self.arms) && self.arms.size() >= 2) || (has(self.aaControl) && self.aaControl)",
        message: "modes: list at least two modes (the baseline and one to compare), or set aaControl",
    },
    Rule {
        path: &[],
        rule: "!has(self.sessions) || (has(self.modes) && self.modes.exists(m, m == 'ml-kem-768-session')) || (has(self.arms) && self.arms.exists(a, a.mode == 'ml-kem-768-session'))",
        message: "sessions: a session grid needs an ml-kem-768-session arm",
    },
    Rule {
        path: &[],
        rule: "!has(self.arms) || self.arms.all(a, !has(a.requirePq) || !a.requirePq || (has(a.format) && a.format != 'v1' && a.mode in ['ml-kem-768', 'ml-kem-1024', 'x-wing']))",
        message: "arms[].requirePq: a format v2 reader's check, for a post-quantum mode: needs a format v2 or v2.1 (either placement) and mode ml-kem-768, ml-kem-1024 or x-wing",
    },
    Rule {
        path: &["modes"],
        rule: "self.all(m, self.exists_one(x, x == m))",
        message: "modes: each mode at most once",
    },
    Rule {
        path: &["repetitions"],
        rule: "self >= 2",
        message: "repetitions: at least 2 (a comparison needs two pairs)",
    },
    Rule {
        path: &["analysis"],
        rule: "!has(self.margin) || (self.margin > 0.0 && self.margin < 0.5)",
        message: "analysis.margin must lie strictly between 0 and 0.5",
    },
    Rule {
        path: &["analysis"],
        rule: "!has(self.alpha) || (self.alpha > 0.0 && self.alpha < 0.5)",
        message: "analysis.alpha must lie strictly between 0 and 0.5",
    },
    Rule {
        path: &["analysis"],
        rule: "!has(self.sensitivityMargins) || self.sensitivityMargins.all(m, m > 0.0 && m < 0.5)",
        message: "analysis.sensitivityMargins must each lie strictly between 0 and 0.5",
    },
    Rule {
        path: &["server"],
        rule: "!(has(self.minio) && has(self.external))",
        message: "server: give minio or external, not both",
    },
];

/// The most entries a list in the spec may hold (CEL cost estimation needs bounds).
const MAX_ITEMS: &[(&[&str], u64)] = &[
    (&["modes"], 11),
    (&["arms"], 32),
    (&["backends"], 2),
    (&["analysis", "comparisons"], 64),
    (&["cells"], 64),
    (&["analysis", "sensitivityMargins"], 8),
    (&["analysis", "primary"], 256),
];

/// The `BenchmarkCampaign` CRD: the derived schema, list bounds and the CEL rules.
pub fn crd() -> CustomResourceDefinition {
    let mut crd = BenchmarkCampaign::crd();
    for v in &mut crd.spec.versions {
        let Some(schema) = v
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        let mut value = serde_json::to_value(&*schema).unwrap_or(Value::Null);
        if let Some(spec) = value.pointer_mut("/properties/spec") {
            for (path, max) in MAX_ITEMS {
                if let Some(node) = at(spec, path) {
                    node["maxItems"] = json!(max);
                }
            }
            for r in RULES {
                if let Some(node) = at(spec, r.path) {
                    let list = node
                        .as_object_mut()
                        .map(|o| o.entry("x-kubernetes-validations").or_insert(json!([])));
                    if let Some(Value::Array(list)) = list {
                        list.push(json!({"rule": r.rule, "message": r.message}));
                    }
                }
            }
        }
        if let Ok(s) = serde_json::from_value(value) {
            *schema = s;
        }
    }
    crd
}

/// The schema node of a property path (`properties` at each step).
fn at<'a>(mut node: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    for p in path {
        node = node.get_mut("properties")?.get_mut(*p)?;
    }
    Some(node)
}
