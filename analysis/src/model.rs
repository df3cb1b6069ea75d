//! The report model: what the analysis hands to the renderers (`report.json` is its
//! serialisation). It holds the outputs of every part of the analysis and computes nothing.

use serde::{Deserialize, Serialize};
use stats::regime::OpenPoint;

use campaign::spec::{Analysis, CampaignSpec, ComparisonSpec, Operation};

use crate::entry::Entry;

/// What the analysis needs beyond the rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Baseline arm label (the reference of the storage table and the plots; with no
    /// declared comparisons, every arm is compared against it).
    pub baseline: String,
    /// Label of the A/A control arm, if any.
    pub control: Option<String>,
    /// The pre-registered analysis settings.
    pub analysis: Analysis,
    /// Bootstrap seed.
    pub seed: u64,
    /// The arms of every cell (empty: the arms the data holds per cell).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arms: Vec<String>,
    /// The comparisons (empty: every arm against `baseline`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<ComparisonSpec>,
    /// What each arm is (mode, backend, S3 client), for the report's arms table (empty
    /// when the runs come from a CSV alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arm_details: Vec<campaign::design::Arm>,
    /// Settings given at analysis time rather than pre-registered, in words (`--margin
    /// 0.03 replaces the pre-registered 0.05`); the deviations log lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analysis_time_settings: Vec<String>,
    /// The testbed's ceilings measured before the first run (`baselines.json`), when the
    /// executor took them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baselines: Option<crate::testbed::Baselines>,
    /// The implementations the runs ran on and their merged interop matrix (from the runs'
    /// `summary.json`), when the executor read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementations: Option<crate::implementations::Implementations>,
}

impl Config {
    /// The configuration a campaign spec pre-registers.
    pub fn from_spec(spec: &CampaignSpec) -> Self {
        let arms = campaign::design::arms(spec);
        Self {
            baseline: campaign::design::Plan::baseline_label(spec),
            control: arms.iter().find(|a| a.control).map(|a| a.label.clone()),
            analysis: spec.analysis.clone(),
            seed: spec.seed,
            comparisons: campaign::design::comparisons(spec, &arms),
            arms: arms.iter().map(|a| a.label.clone()).collect(),
            arm_details: arms,
            analysis_time_settings: Vec::new(),
            baselines: None,
            implementations: None,
        }
    }
}

/// Attempts per arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmAttempts {
    /// Arm label.
    pub arm: String,
    /// Planned runs of the arm.
    pub runs: u32,
    /// Attempts made.
    pub attempts: u32,
    /// Attempts that failed validation.
    pub invalid: u32,
    /// Attempts that failed.
    pub failed: u32,
}

/// Two compared arms whose invalid-attempt rates differ (Fisher's exact test, α = 0.05).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvalidRate {
    /// The arm measured.
    pub arm: String,
    /// The arm it is measured against.
    pub against: String,
    /// Two-sided p of Fisher's exact test on (invalid, valid) attempts × the two arms.
    pub p: f64,
    /// `p < 0.05`.
    pub differs: bool,
}

/// The level of the invalid-rate test.
pub const INVALID_RATE_ALPHA: f64 = 0.05;

/// Storage overhead of one arm at one object size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StorageRow {
    /// Arm label.
    pub mode: String,
    /// The arm's object format (`v1` when unknown): v1's figures are the JSON manifest's,
    /// v2's the binary header's.
    #[serde(
        default,
        skip_serializing_if = "campaign::spec::ObjectFormat::is_default"
    )]
    pub format: campaign::spec::ObjectFormat,
    /// Object size in bytes, if known.
    pub object_size: Option<u64>,
    /// The figures.
    #[serde(flatten)]
    pub overhead: stats::storage::Overhead,
    /// Ciphertext, its encoding and the fixed fields, when the arm's mode is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<stats::storage::Breakdown>,
}

/// The knee of one open-loop series.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KneeRow {
    /// `<op>-<size>-t<threads>`.
    pub series: String,
    /// Arm label.
    pub mode: String,
    /// Offered rates and mean response times (ms) averaged over repetitions.
    pub points: Vec<OpenPoint>,
    /// The knee, if the series reaches it.
    pub knee: Option<stats::regime::Knee>,
    /// The knee an M/M/c model predicts from the closed-loop runs of the same operation,
    /// size and arm ([`stats::queueing::predict_knee`]): service time S = workers ÷
    /// throughput at the fewest closed-loop workers (Little's law), c = peak × S servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<stats::queueing::KneePrediction>,
    /// Measured knee ÷ predicted knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_over_predicted: Option<f64>,
}

/// Per cell and arm: what the plots and tables show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub mode: String,
    /// Runs.
    pub runs: usize,
    /// Mean throughput, requests/s.
    pub throughput_rps: f64,
    /// Mean client CPU per request, µs.
    pub cpu_per_request_us: f64,
    /// Mean client cores used.
    pub client_cores_used: f64,
    /// Mean client saturation: cores used ÷ cores available, per run (≥ 0.95: the run was
    /// client-bound).
    pub client_saturation: f64,
    /// Operation, object size and concurrency when known.
    pub operation: Option<Operation>,
    /// Object size in bytes.
    pub object_size: Option<u64>,
    /// Workers.
    pub concurrency: Option<u32>,
    /// Offered rate (open loop).
    pub offered_rps: Option<f64>,
}

/// The whole analysis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The settings used.
    pub config: Config,
    /// Runs analysed.
    pub runs: usize,
    /// Size of the primary family.
    pub primary_family_size: usize,
    /// One entry per (cell, mode vs baseline), cells in first-seen order.
    pub comparisons: Vec<Entry>,
    /// Run ids flagged by the stall rule.
    pub stalls: Vec<String>,
    /// Per cell and arm means.
    pub arms: Vec<ArmSummary>,
    /// Storage overhead per arm (and object size).
    pub storage: Vec<StorageRow>,
    /// Open-loop knees.
    pub knees: Vec<KneeRow>,
    /// Attempts per arm (empty when the attempts are not known, as from a CSV).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<ArmAttempts>,
    /// Per compared pair of arms, the invalid-rate test (empty without attempts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invalid_rates: Vec<InvalidRate>,
    /// Blocks left out because an arm of their cell has no valid run in them, as
    /// `cell block` pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_blocks: Vec<(String, u32)>,
    /// Second endpoints and the CPU identity of every comparison (exploratory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secondary: Vec<crate::endpoints::Secondary>,
    /// The manifest-size control's share of a deficit, per cell holding the three arms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributions: Vec<Attribution>,
    /// Every departure from the pre-registered plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deviations: Vec<crate::deviations::Deviation>,
    /// The order-and-time check of every cell with a comparison (study section VI).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<crate::order::OrderCheck>,
    /// Drift within the runs of each arm.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<crate::longrun::DriftRow>,
    /// Bounded sessions of each session arm, beside its comparisons (study section V-F).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<crate::longrun::SessionSummary>,
    /// Per cell and arm: S3 requests, bytes, client CPU and latency per logical request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wire: Vec<crate::wire::WireRow>,
    /// The comparisons across object formats, arm ÷ against on those figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub format_ratios: Vec<crate::wire::FormatRatio>,
    /// Key establishment per request at one worker, per arm (study Tables VII and VIII,
    /// Fig. 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kem_times: Vec<crate::absolute::KemTime>,
    /// Key establishment per request per arm and operation, pooled over the one-worker
    /// object sizes (study Table VII).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kem_pooled: Vec<crate::absolute::KemPooled>,
    /// Where each client-saturated comparison's extra CPU per request goes: key recovery
    /// (measured at one worker) and the rest (study V-C).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_splits: Vec<crate::absolute::CpuSplit>,
    /// CPU, memory and the spread of throughput per cell and arm (study Table X, section
    /// VI).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<crate::absolute::ArmResources>,
    /// Advance predictions against the measured ratios (study section IV-C).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predictions: Vec<crate::predict::PredictionScore>,
    /// What bounds each cell: client, server, network, disk, or none (latency), from the
    /// runs against the testbed's ceilings (study IV-A, V-B; [`crate::testbed`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bottlenecks: Vec<crate::testbed::CellBottleneck>,
    /// The study's published figures beside this campaign's (see [`crate::study`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub study: Vec<StudyRow>,
    /// Things the reader should know (cells without a baseline, primary cells with no
    /// data, …).
    pub warnings: Vec<String>,
}

/// Control attribution (study section V-C): in a cell with an arm P showing a deficit
/// against B, and a control C (P with one suspected cause removed: the manifest-size
/// control, X25519 padded to P's manifest size; the binding control), the share of P's
/// deficit that the control removes: `1 − ln(r_P/C) / ln(r_P/B)`, with a
/// percentile-bootstrap 90 % interval over blocks. The controls are the declared ones
/// (`analysis.controls`), or without any, the manifest-size control of each ML-KEM-768 arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// Cell id.
    pub cell: String,
    /// The arm with the deficit (P1).
    pub mode: String,
    /// The control (C2, or the binding control).
    pub control: String,
    /// The arm the deficit is measured against (B2).
    pub baseline: String,
    /// Declared in `analysis.controls` (otherwise the automatic manifest-size control).
    #[serde(default)]
    pub declared: bool,
    /// The share, its interval and the two ratios; `None` when P shows no deficit to
    /// explain (`r_P/B` within 1e-12 of 1) or the share cannot be computed.
    pub share: Option<stats::attribution::Share>,
    /// Why `share` is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One figure of the study beside this campaign's measurement of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StudyRow {
    /// Where the study publishes it (`Table VIII (V-A)`).
    pub source: String,
    /// What is measured.
    pub what: String,
    /// The study's value, with its unit (and interval, where it gives one).
    pub study: String,
    /// The study's own words.
    pub quote: String,
    /// The cell and arm of this campaign that measures it.
    pub subject: Option<String>,
    /// This campaign's value, with its unit and interval.
    pub pqbench: Option<String>,
    /// Whether they agree.
    pub agreement: crate::study::Agreement,
    /// Why they differ, or why they cannot be compared; the rule met when they agree.
    pub why: String,
}
