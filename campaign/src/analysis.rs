//! From run rows to the report (study sections IV-C and V; the definitions are those of
//! the [`stats`] crate, which cites them).
//!
//! Input: one [`RunRow`] per valid run (from a results directory or a CSV with the
//! columns `run_id,cell,mode,block,throughput_rps,cpu_per_request_us,client_cores_used,
//! client_cores_available,server_cpu_cores`, plus optional columns for the storage and
//! knee tables). Output: a [`Report`] with one [`Entry`] per (cell, mode vs baseline).
//!
//! - The comparisons are the campaign's declared ones (`analysis.comparisons`, by arm
//!   label), made in every cell holding both arms; without a declaration, every arm against
//!   the baseline.
//! - Pairs are the **complete** blocks of a cell: those holding a valid run of every arm of
//!   the cell. A block with an arm missing (its run invalid after every attempt, or given
//!   up) leaves the analysis for every arm of that cell, so that every comparison of a cell
//!   rests on the same blocks; the report says which blocks were dropped.
//! - The primary family is named in `analysis.primary` (a cell's every comparison, or one
//!   comparison of it; the A/A control never); its TOST p-values are Holm-adjusted and its
//!   verdicts use the adjusted p. Every other comparison is exploratory: its verdict uses
//!   the unadjusted p. Its difference test (does the 95 % interval exclude 1) is
//!   Benjamini–Hochberg-adjusted together with every second endpoint ([`crate::endpoints`]),
//!   as the study does for its exploratory tables.
//! - The CPU identity with intervals, second endpoints (latency, CPU, memory, stage
//!   times) and the manifest-size control's share of a deficit: [`crate::endpoints`],
//!   [`Attribution`]. Every departure from the plan: [`crate::deviations`].
//! - Order and time: per compared cell, log throughput regressed on arm, block, position
//!   in the block, whether the run before was a PUT and elapsed time, with the adjusted
//!   ratios beside the paired ones ([`crate::order`]); a significant position or time
//!   term adds a warning and a deviation.
//! - Attempts: with the attempts of each run given, the report counts attempts and invalid
//!   attempts per arm, and flags each compared pair of arms whose invalid rates differ by
//!   Fisher's exact test at α = 0.05 (a mode-dependent exclusion biases the comparison).
//! - Sensitivity verdicts at the other margins use unadjusted p-values.
//! - Stalls (closed loop only) are flagged per cell and every verdict is recomputed with
//!   stalled blocks excluded (the primary family re-adjusted) as a sensitivity analysis.
//! - A comparison whose 90 % interval is wider than the margin band `[1−δ, 1+δ]` is
//!   `underpowered`, with the repetitions the power calculation asks for at its own
//!   paired sd (at α / primary family size for primary comparisons).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use stats::paired::{Comparison, Flags, Settings, log_ratios, verdict};
use stats::regime::{OpenPoint, RunLoad, cell_saturated, implied_ratio, knee, stalls};
use stats::{Paired, Verdict};

use crate::spec::{Analysis, CampaignSpec, ComparisonSpec, Correction, Operation};
use crate::{Error, Result};

/// One run as the analysis sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// Run id.
    pub run_id: String,
    /// Cell id.
    pub cell: String,
    /// Arm label (mode).
    pub mode: String,
    /// Block number.
    pub block: u32,
    /// Successful requests per second of the window.
    pub throughput_rps: f64,
    /// Client process CPU per successful request, µs.
    pub cpu_per_request_us: f64,
    /// Client cores used over the window.
    pub client_cores_used: f64,
    /// Client cores available (cgroup quota and affinity).
    pub client_cores_available: f64,
    /// Server CPU in cores over the window, if measured.
    pub server_cpu_cores: Option<f64>,
    /// Operation (for the knee table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    /// Object size in bytes (storage and knee tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_size: Option<u64>,
    /// Workers or serving threads (knee table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Offered rate of an open-loop run, requests/s (knee table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
    /// Mean response time (queue wait + service), ms (knee table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_response_ms: Option<f64>,
    /// Mean manifest bytes per object (storage table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_bytes: Option<f64>,
    /// S3 requests per logical request ([`crate::wire`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3_requests: Option<f64>,
    /// Bytes sent per logical request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_sent: Option<f64>,
    /// Bytes received per logical request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_received: Option<f64>,
    /// Median latency of successful requests, ms (second endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p50_ms: Option<f64>,
    /// 99th-percentile latency, ms (second endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p99_ms: Option<f64>,
    /// Peak client resident memory over the window, bytes (second endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_bytes: Option<f64>,
    /// Client resident memory at the window's end minus at its start, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_growth_bytes: Option<f64>,
    /// Mean stage times, µs, in the order of [`STAGES`] (second endpoint at one worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages_us: Option<[f64; 5]>,
    /// Position of the run within its block (the order check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u32>,
    /// When the run's window opened, seconds since the Unix epoch (the order check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    /// Drift within the window: throughput in its last third over its first, minus 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_throughput_change: Option<f64>,
    /// … mean latency likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_latency_change: Option<f64>,
    /// Throughput in each bin of the window over the run's mean (the drift plot; not in
    /// the CSV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_bins: Option<Vec<Option<f64>>>,
    /// Bounded sessions (`ml-kem-768-session`; not in the CSV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRow>,
}

/// What a run's bounded sessions exposed and cost (study section V-F).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    /// B_max.
    pub max_objects: u64,
    /// T_max, ms.
    pub max_age_ms: f64,
    /// Sessions (roots established).
    pub sessions: u64,
    /// Objects sealed under them.
    pub objects: u64,
    /// Mean objects per root.
    pub objects_per_session_mean: f64,
    /// Mean plaintext bytes per root.
    pub bytes_per_root_mean: f64,
    /// Most plaintext bytes under one root.
    pub bytes_per_root_max: u64,
    /// Key establishments per object.
    pub key_establishments_per_object: f64,
    /// Sessions ended by B_max.
    pub ended_by_max_objects: u64,
    /// Sessions ended by T_max.
    pub ended_by_max_age: u64,
    /// Sessions cut by the end of the run.
    pub ended_by_run: u64,
    /// Receiver root-cache hits / lookups over the window (GET).
    pub root_cache_hit_rate: Option<f64>,
}

/// The stage timers a run row carries, in the order of [`RunRow::stages_us`] (study
/// Table XVI).
pub const STAGES: [&str; 5] = [
    "key_establishment",
    "key_derivation",
    "aead",
    "manifest",
    "storage",
];

/// The CSV columns `pqbench analyze --runs` requires, in order.
pub const CSV_COLUMNS: [&str; 9] = [
    "run_id",
    "cell",
    "mode",
    "block",
    "throughput_rps",
    "cpu_per_request_us",
    "client_cores_used",
    "client_cores_available",
    "server_cpu_cores",
];

/// Optional CSV columns, read when present.
pub const CSV_OPTIONAL: [&str; 22] = [
    "operation",
    "object_size",
    "concurrency",
    "offered_rps",
    "mean_response_ms",
    "manifest_bytes",
    "latency_p50_ms",
    "latency_p99_ms",
    "max_rss_bytes",
    "rss_growth_bytes",
    "stage_key_establishment_us",
    "stage_key_derivation_us",
    "stage_aead_us",
    "stage_manifest_us",
    "stage_storage_us",
    "position",
    "started_unix_s",
    "drift_throughput_change",
    "drift_latency_change",
    "s3_requests",
    "bytes_sent",
    "bytes_received",
];

/// Parses run rows from CSV text (comma-separated, a header row, no quoting needed for
/// these fields; empty `server_cpu_cores` means not measured). `origin` names the file in
/// errors, which give the line and column.
pub fn rows_from_csv(text: &str, origin: &str) -> Result<Vec<RunRow>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(Error::Data(format!(
            "{origin}: empty file; expected a header row: {}",
            CSV_COLUMNS.join(",")
        )));
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let find = |name: &str| cols.iter().position(|c| *c == name);
    let mut idx = BTreeMap::new();
    for c in CSV_COLUMNS {
        let i = find(c).ok_or_else(|| {
            Error::Data(format!(
                "{origin}: missing column {c:?}; the header must hold {}",
                CSV_COLUMNS.join(",")
            ))
        })?;
        idx.insert(c, i);
    }
    for c in CSV_OPTIONAL {
        if let Some(i) = find(c) {
            idx.insert(c, i);
        }
    }
    let mut out = Vec::new();
    for (ln, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let at = |c: &str| -> Option<&str> {
            idx.get(c)
                .and_then(|&i| f.get(i).copied())
                .filter(|s| !s.is_empty())
        };
        let bad =
            |c: &str, why: &str| Error::Data(format!("{origin}:{}: column {c}: {why}", ln + 1));
        let req = |c: &str| at(c).ok_or_else(|| bad(c, "missing value"));
        let num = |c: &str| -> Result<f64> {
            let s = req(c)?;
            let v: f64 = s
                .parse()
                .map_err(|_| bad(c, &format!("{s:?} is not a number")))?;
            if !v.is_finite() || v < 0.0 {
                return Err(bad(c, &format!("{s:?} must be a non-negative number")));
            }
            Ok(v)
        };
        let opt_num = |c: &str| -> Result<Option<f64>> {
            if at(c).is_some() {
                num(c).map(Some)
            } else {
                Ok(None)
            }
        };
        let opt_signed = |c: &str| -> Result<Option<f64>> {
            at(c)
                .map(|s| {
                    s.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| bad(c, &format!("{s:?} is not a finite number")))
                })
                .transpose()
        };
        let int = |c: &str| -> Result<Option<u64>> {
            at(c)
                .map(|s| {
                    s.parse::<u64>()
                        .map_err(|_| bad(c, &format!("{s:?} is not a whole number")))
                })
                .transpose()
        };
        out.push(RunRow {
            run_id: req("run_id")?.to_owned(),
            cell: req("cell")?.to_owned(),
            mode: req("mode")?.to_owned(),
            block: u32::try_from(int("block")?.ok_or_else(|| bad("block", "missing value"))?)
                .map_err(|_| bad("block", "too large"))?,
            throughput_rps: num("throughput_rps")?,
            cpu_per_request_us: num("cpu_per_request_us")?,
            client_cores_used: num("client_cores_used")?,
            client_cores_available: num("client_cores_available")?,
            server_cpu_cores: opt_num("server_cpu_cores")?,
            operation: match at("operation") {
                None => None,
                Some("put") => Some(Operation::Put),
                Some("get") => Some(Operation::Get),
                Some(o) => return Err(bad("operation", &format!("{o:?} must be put or get"))),
            },
            object_size: int("object_size")?,
            concurrency: int("concurrency")?.map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
            offered_rps: opt_num("offered_rps")?,
            mean_response_ms: opt_num("mean_response_ms")?,
            manifest_bytes: opt_num("manifest_bytes")?,
            latency_p50_ms: opt_num("latency_p50_ms")?,
            latency_p99_ms: opt_num("latency_p99_ms")?,
            max_rss_bytes: opt_num("max_rss_bytes")?,
            rss_growth_bytes: opt_signed("rss_growth_bytes")?,
            stages_us: {
                let v = STAGES
                    .iter()
                    .map(|st| opt_num(&format!("stage_{st}_us")))
                    .collect::<Result<Vec<_>>>()?;
                match v.iter().copied().collect::<Option<Vec<f64>>>() {
                    Some(all) => Some([all[0], all[1], all[2], all[3], all[4]]),
                    None if v.iter().all(Option::is_none) => None,
                    None => {
                        return Err(bad(
                            "stage_*_us",
                            "give all five stage columns a value, or none",
                        ));
                    }
                }
            },
            position: int("position")?
                .map(|p| u32::try_from(p).map_err(|_| bad("position", "too large")))
                .transpose()?,
            started_unix_s: opt_num("started_unix_s")?,
            drift_throughput_change: opt_signed("drift_throughput_change")?,
            drift_latency_change: opt_signed("drift_latency_change")?,
            s3_requests: opt_num("s3_requests")?,
            bytes_sent: opt_num("bytes_sent")?,
            bytes_received: opt_num("bytes_received")?,
            drift_bins: None,
            session: None,
        });
    }
    Ok(out)
}

/// Writes rows as CSV (the required columns, then the optional ones).
pub fn rows_to_csv(rows: &[RunRow]) -> String {
    let mut s = format!("{},{}\n", CSV_COLUMNS.join(","), CSV_OPTIONAL.join(","));
    let o = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in rows {
        let mut f: Vec<String> = vec![
            r.run_id.clone(),
            r.cell.clone(),
            r.mode.clone(),
            r.block.to_string(),
            r.throughput_rps.to_string(),
            r.cpu_per_request_us.to_string(),
            r.client_cores_used.to_string(),
            r.client_cores_available.to_string(),
            o(r.server_cpu_cores),
            r.operation
                .map(Operation::as_str)
                .unwrap_or_default()
                .to_owned(),
            r.object_size.map(|v| v.to_string()).unwrap_or_default(),
            r.concurrency.map(|v| v.to_string()).unwrap_or_default(),
            o(r.offered_rps),
            o(r.mean_response_ms),
            o(r.manifest_bytes),
            o(r.latency_p50_ms),
            o(r.latency_p99_ms),
            o(r.max_rss_bytes),
            o(r.rss_growth_bytes),
        ];
        f.extend((0..STAGES.len()).map(|i| o(r.stages_us.map(|st| st[i]))));
        f.push(r.position.map(|v| v.to_string()).unwrap_or_default());
        f.push(o(r.started_unix_s));
        f.push(o(r.drift_throughput_change));
        f.push(o(r.drift_latency_change));
        f.push(o(r.s3_requests));
        f.push(o(r.bytes_sent));
        f.push(o(r.bytes_received));
        s.push_str(&f.join(","));
        s.push('\n');
    }
    s
}

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
    pub arm_details: Vec<crate::design::Arm>,
    /// Settings given at analysis time rather than pre-registered, in words (`--margin
    /// 0.03 replaces the pre-registered 0.05`); the deviations log lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub analysis_time_settings: Vec<String>,
}

impl Config {
    /// The configuration a campaign spec pre-registers.
    pub fn from_spec(spec: &CampaignSpec) -> Self {
        let arms = crate::design::arms(spec);
        Self {
            baseline: crate::design::Plan::baseline_label(spec),
            control: arms.iter().find(|a| a.control).map(|a| a.label.clone()),
            analysis: spec.analysis.clone(),
            seed: spec.seed,
            comparisons: crate::design::comparisons(spec, &arms),
            arms: arms.iter().map(|a| a.label.clone()).collect(),
            arm_details: arms,
            analysis_time_settings: Vec::new(),
        }
    }
}

/// The attempts of one planned run, for the attempts table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunAttempts {
    /// Run id.
    pub run_id: String,
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub arm: String,
    /// Attempts made (0: not run yet).
    pub attempts: u32,
    /// Attempts whose run failed validation.
    pub invalid: u32,
    /// Attempts that failed (no files, or past the deadline).
    pub failed: u32,
    /// Why the invalid attempts were invalid (their failed checks), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
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

/// The family a comparison belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Pre-registered: Holm-adjusted.
    Primary,
    /// Everything else: unadjusted (BH alongside).
    Exploratory,
    /// The A/A control against the baseline: the noise floor.
    Control,
}

/// The verdict recomputed without stalled blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WithoutStalls {
    /// Pairs left.
    pub pairs: usize,
    /// Ratio over those pairs.
    pub ratio: Option<f64>,
    /// 90 % interval over those pairs.
    pub ci90: Option<[f64; 2]>,
    /// Verdict (primary: re-adjusted over the family), `None` with fewer than 2 pairs.
    pub verdict: Option<Verdict>,
}

/// One comparison: a cell, a mode against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub mode: String,
    /// Baseline arm label.
    pub baseline: String,
    /// Family.
    pub family: Family,
    /// Number of pairs (blocks holding both).
    pub pairs: usize,
    /// `exp(d̄)` of throughput.
    pub ratio: f64,
    /// 90 % t interval of the ratio.
    pub ci90: [f64; 2],
    /// 95 % t interval of the ratio.
    pub ci95: [f64; 2],
    /// Paired sd of the log ratios.
    pub sd: f64,
    /// TOST p at the margin, unadjusted.
    pub tost_p: f64,
    /// TOST p after the family's correction (Holm for primary; the same as `tost_p`
    /// otherwise).
    pub tost_p_adjusted: f64,
    /// Benjamini–Hochberg-adjusted p of the difference test (ratio ≠ 1) over every
    /// second endpoint of the report; for non-primary comparisons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bh_p_adjusted: Option<f64>,
    /// Verdict at the margin.
    pub verdict: Verdict,
    /// Verdict at each sensitivity margin (unadjusted), keyed by the margin.
    pub verdicts_at_margins: BTreeMap<String, Verdict>,
    /// 90 % interval below `1 − threshold`.
    pub deficit: bool,
    /// 90 % interval above `1 + threshold`.
    pub advantage: bool,
    /// Percentile-bootstrap 90 % interval of the ratio.
    pub bootstrap_ci90: [f64; 2],
    /// Verdict with the bootstrap interval in place of the t interval (equivalent if it
    /// lies inside the margin band), the study's check of the distributional assumption.
    pub bootstrap_verdict: Verdict,
    /// `exp` of the mean paired log ratio of client CPU per request.
    pub cpu_ratio: Option<f64>,
    /// The throughput ratio the CPU accounting identity implies: `1 / cpu_ratio`.
    pub implied_ratio: Option<f64>,
    /// Every arm of the cell used ≥ 0.95 of its client cores.
    pub saturated: bool,
    /// The 90 % interval is wider than the margin band.
    pub underpowered: bool,
    /// Repetitions the power calculation asks for at this comparison's sd.
    pub repetitions_needed: u32,
    /// The verdict without stalled blocks.
    pub without_stalls: WithoutStalls,
}

impl Entry {
    /// What the comparison means, in one line: `equivalent within ±5 %`, `rustcrypto 18 %
    /// slower, a deficit`, `inconclusive: …`.
    pub fn meaning(&self, margin: f64) -> String {
        let pct = |x: f64| format!("{:.0}", (x * 100.0).abs());
        let band = format!("±{} %", pct(margin));
        let change = self.ratio - 1.0;
        let direction = if change < 0.0 { "slower" } else { "faster" };
        let size = format!(
            "{} {} % {direction} than {}",
            self.mode,
            pct(change),
            self.baseline
        );
        match self.verdict {
            Verdict::Equivalent => format!("equivalent within {band}"),
            Verdict::NotEquivalent if self.deficit => format!("{size}, a deficit"),
            Verdict::NotEquivalent if self.advantage => format!("{size}, an advantage"),
            Verdict::NotEquivalent => format!("{size}: not equivalent at {band}"),
            Verdict::Inconclusive => {
                let why = if self.deficit {
                    format!("{size} (a deficit), but the interval reaches into {band}")
                } else if self.advantage {
                    format!("{size} (an advantage), but the interval reaches into {band}")
                } else {
                    format!(
                        "the 90 % interval {:.3}–{:.3} crosses the {band} band",
                        self.ci90[0], self.ci90[1]
                    )
                };
                let more = if self.underpowered {
                    format!("; about {} blocks would settle it", self.repetitions_needed)
                } else {
                    String::new()
                };
                format!("inconclusive: {why}{more}")
            }
        }
    }

    /// The flags a table shows beside the verdict, in a fixed order: the family
    /// (`primary`, `A/A control`), `deficit`, `advantage`, `saturated`, `underpowered`.
    pub fn flags(&self) -> Vec<&'static str> {
        let family = match self.family {
            Family::Primary => Some("primary"),
            Family::Control => Some("A/A control"),
            Family::Exploratory => None,
        };
        family
            .into_iter()
            .chain(self.deficit.then_some("deficit"))
            .chain(self.advantage.then_some("advantage"))
            .chain(self.saturated.then_some("saturated"))
            .chain(self.underpowered.then_some("underpowered"))
            .collect()
    }
}

/// Storage overhead of one arm at one object size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StorageRow {
    /// Arm label.
    pub mode: String,
    /// The arm's object format (`v1` when unknown): v1's figures are the JSON manifest's,
    /// v2's the binary header's.
    #[serde(default, skip_serializing_if = "crate::spec::ObjectFormat::is_default")]
    pub format: crate::spec::ObjectFormat,
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
    /// Things the reader should know (cells without a baseline, primary cells with no
    /// data, …).
    pub warnings: Vec<String>,
}

/// Control attribution (study section V-C): in a cell with a post-quantum arm P, the
/// manifest-size control C (X25519 padded to P's manifest size) and X25519 B on the same
/// backend and S3 client, the share of P's deficit against B that the manifest size
/// explains: `1 − ln(r_P/C) / ln(r_P/B)`, with a percentile-bootstrap 90 % interval over
/// blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// Cell id.
    pub cell: String,
    /// The post-quantum arm (P1).
    pub mode: String,
    /// The padded control (C2).
    pub control: String,
    /// The classical baseline (B2).
    pub baseline: String,
    /// The share, its interval and the two ratios; `None` when P shows no deficit to
    /// explain (`r_P/B` within 1e-12 of 1) or the share cannot be computed.
    pub share: Option<stats::attribution::Share>,
    /// Why `share` is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[allow(clippy::cast_precision_loss, reason = "counts are small")]
fn mean(v: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (s, n) = v
        .into_iter()
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

fn margin_key(m: f64) -> String {
    format!("{m}")
}

/// Analyses run rows (attempts unknown).
pub fn analyze(rows: &[RunRow], cfg: &Config) -> Result<Report> {
    analyze_with(rows, &[], cfg)
}

/// Analyses run rows, with the attempts of every planned run for the attempts table and
/// the invalid-rate test.
pub fn analyze_with(rows: &[RunRow], attempts: &[RunAttempts], cfg: &Config) -> Result<Report> {
    analyze_full(rows, attempts, &[], cfg)
}

/// Analyses run rows, with the attempts of every planned run and the runs left invalid
/// after their last attempt (run id, failed checks) for the deviations log.
pub fn analyze_full(
    rows: &[RunRow],
    attempts: &[RunAttempts],
    excluded: &[(String, String)],
    cfg: &Config,
) -> Result<Report> {
    let a = &cfg.analysis;
    let mut warnings = Vec::new();
    // Index: cell → block → arm → row. Duplicate (cell, block, arm) is a data error.
    let mut cells: Vec<String> = Vec::new();
    let mut by_cell: BTreeMap<&str, BTreeMap<u32, BTreeMap<&str, &RunRow>>> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for r in rows {
        if !ids.insert(r.run_id.as_str()) {
            return Err(Error::Data(format!("run {} appears twice", r.run_id)));
        }
        if !cells.contains(&r.cell) {
            cells.push(r.cell.clone());
        }
        let slot = by_cell
            .entry(&r.cell)
            .or_default()
            .entry(r.block)
            .or_default();
        if let Some(prev) = slot.insert(&r.mode, r) {
            return Err(Error::Data(format!(
                "cell {} block {} holds mode {} twice (runs {} and {}); a block holds each mode once",
                r.cell, r.block, r.mode, prev.run_id, r.run_id
            )));
        }
    }
    if !rows.iter().any(|r| r.mode == cfg.baseline) {
        let modes: BTreeSet<&str> = rows.iter().map(|r| r.mode.as_str()).collect();
        warnings.push(format!(
            "no valid run of the baseline {:?} (the data holds {}); nothing can be compared",
            cfg.baseline,
            if modes.is_empty() {
                "no valid runs".to_owned()
            } else {
                modes.into_iter().collect::<Vec<_>>().join(", ")
            }
        ));
    }
    for p in &a.primary {
        if !by_cell.contains_key(p.cell.as_str()) {
            warnings.push(format!("primary cell {} has no valid runs", p.cell));
        }
    }
    let dropped_blocks = drop_incomplete_blocks(&mut by_cell, &cfg.arms);
    if !dropped_blocks.is_empty() {
        warnings.push(format!(
            "{} block(s) left out because an arm of their cell has no valid run in them: {}",
            dropped_blocks.len(),
            dropped_blocks
                .iter()
                .map(|(c, b)| format!("{c} block {b}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }

    // Stalls: closed-loop runs only (offered_rps absent), per cell, blind to the mode.
    let mut stalled: BTreeSet<&str> = BTreeSet::new();
    for cell in &cells {
        let runs: Vec<&RunRow> = by_cell[cell.as_str()]
            .values()
            .flat_map(|b| b.values().copied())
            .filter(|r| r.offered_rps.is_none())
            .collect();
        let loads: Vec<RunLoad> = runs
            .iter()
            .map(|r| RunLoad {
                throughput: r.throughput_rps,
                server_cpu: r.server_cpu_cores,
            })
            .collect();
        for (r, s) in runs.iter().zip(stalls(&loads, a.stall_rule.into())) {
            if s {
                stalled.insert(&r.run_id);
            }
        }
    }

    let settings = Settings {
        margin: a.margin,
        sensitivity_margins: a.sensitivity_margins.clone(),
        deficit_threshold: a.deficit_threshold,
        bootstrap_resamples: a.bootstrap_resamples,
        seed: cfg.seed,
    };
    struct Raw<'a> {
        cell: &'a str,
        mode: &'a str,
        baseline: &'a str,
        family: Family,
        cmp: Comparison,
        cpu_ratio: Option<f64>,
        saturated: bool,
        d_no_stall: Vec<f64>,
    }
    let comparisons: Vec<ComparisonSpec> = if cfg.comparisons.is_empty() {
        every_arm_against(rows, &cfg.baseline)
    } else {
        cfg.comparisons.clone()
    };
    let mut raw: Vec<Raw<'_>> = Vec::new();
    let mut secondary: Vec<crate::endpoints::Secondary> = Vec::new();
    for cell in &cells {
        let blocks = &by_cell[cell.as_str()];
        let mut arms: Vec<&str> = blocks.values().flat_map(|b| b.keys().copied()).collect();
        arms.sort_unstable();
        arms.dedup();
        let per_arm: Vec<(Vec<f64>, Vec<f64>)> = arms
            .iter()
            .map(|m| {
                let rs = blocks.values().filter_map(|b| b.get(m));
                rs.map(|r| (r.client_cores_used, r.client_cores_available))
                    .unzip()
            })
            .collect();
        let saturated = cell_saturated(&per_arm);
        if cfg.comparisons.is_empty() && !arms.contains(&cfg.baseline.as_str()) {
            warnings.push(format!(
                "cell {cell} has no baseline run; its modes are not compared"
            ));
            continue;
        }
        for c in &comparisons {
            let (m, base) = (c.arm.as_str(), c.against.as_str());
            if !arms.contains(&m) || !arms.contains(&base) {
                if !cfg.comparisons.is_empty() {
                    warnings.push(format!(
                        "cell {cell}, {m} vs {base}: no complete block holds both arms; not compared"
                    ));
                }
                continue;
            }
            let pairs: Vec<(&RunRow, &RunRow)> = blocks
                .values()
                .filter_map(|b| Some((*b.get(m)?, *b.get(base)?)))
                .collect();
            if pairs.len() < 2 {
                warnings.push(format!(
                    "cell {cell}, {m} vs {base}: {} pair(s); a comparison needs at least 2",
                    pairs.len()
                ));
                continue;
            }
            let tp: Vec<(f64, f64)> = pairs
                .iter()
                .map(|(x, b)| (x.throughput_rps, b.throughput_rps))
                .collect();
            let d = log_ratios(&tp)?;
            let cmp = Comparison::compute(&d, &settings)?;
            let cpu: Vec<(f64, f64)> = pairs
                .iter()
                .map(|(x, b)| (x.cpu_per_request_us, b.cpu_per_request_us))
                .collect();
            let cpu_ratio = log_ratios(&cpu)
                .ok()
                .and_then(|d| Paired::from_log_ratios(&d).ok())
                .map(|p| p.ratio());
            let d_no_stall: Vec<f64> = pairs
                .iter()
                .zip(&d)
                .filter(|((x, b), _)| {
                    !stalled.contains(x.run_id.as_str()) && !stalled.contains(b.run_id.as_str())
                })
                .map(|(_, v)| *v)
                .collect();
            let family = if cfg.control.as_deref() == Some(m) {
                Family::Control
            } else if a.primary.iter().any(|p| p.selects(cell, m, base)) {
                Family::Primary
            } else {
                Family::Exploratory
            };
            secondary.push(crate::endpoints::secondary(
                (cell, m, base),
                &pairs,
                (family != Family::Primary).then_some(d.as_slice()),
                a.margin,
                a.deficit_threshold,
            )?);
            raw.push(Raw {
                cell,
                mode: m,
                baseline: base,
                family,
                cmp,
                cpu_ratio,
                saturated,
                d_no_stall,
            });
        }
    }

    // Multiplicity.
    let primary: Vec<usize> = (0..raw.len())
        .filter(|&i| raw[i].family == Family::Primary)
        .collect();
    let adjust = |ps: &[f64]| match a.correction {
        Correction::Holm => stats::multiplicity::holm(ps),
        Correction::None => ps.to_vec(),
    };
    let mut adjusted: Vec<f64> = raw.iter().map(|r| r.cmp.tost.p).collect();
    for (&i, p) in primary.iter().zip(adjust(
        &primary
            .iter()
            .map(|&i| raw[i].cmp.tost.p)
            .collect::<Vec<_>>(),
    )) {
        adjusted[i] = p;
    }
    // Benjamini–Hochberg over the difference tests of every second endpoint, throughput
    // of the non-primary comparisons among them (study Table XX).
    crate::endpoints::adjust(&mut secondary);
    let bh: Vec<Option<f64>> = secondary
        .iter()
        .map(|s| s.endpoint("throughput").map(|e| e.bh_p))
        .collect();
    // Without stalls: recompute, re-adjusting the primary family.
    let no_stall: Vec<Option<Paired>> = raw
        .iter()
        .map(|r| Paired::from_log_ratios(&r.d_no_stall).ok())
        .collect();
    let ns_p: Vec<Option<f64>> = no_stall
        .iter()
        .map(|p| p.and_then(|p| p.tost(a.margin).ok()).map(|t| t.p))
        .collect();
    let mut ns_adj = ns_p.clone();
    let fam_ok: Vec<usize> = primary
        .iter()
        .copied()
        .filter(|&i| ns_p[i].is_some())
        .collect();
    for (&i, p) in fam_ok.iter().zip(adjust(
        &fam_ok.iter().filter_map(|&i| ns_p[i]).collect::<Vec<_>>(),
    )) {
        ns_adj[i] = Some(p);
    }

    let family_size = primary.len().max(1);
    let mut entries = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let c = &r.cmp;
        let band = [1.0 - a.margin, 1.0 + a.margin];
        let ci90 = [c.ci90.0, c.ci90.1];
        let flags: Flags = c.flags;
        let fam_n = if r.family == Family::Primary {
            family_size
        } else {
            1
        };
        let reps =
            stats::power::repetitions_needed(c.paired.sd, a.margin, a.alpha, fam_n, a.power)?;
        let boot = c.bootstrap_ci90;
        let bootstrap_verdict = if boot.0 > band[0] && boot.1 < band[1] {
            Verdict::Equivalent
        } else if boot.0 > band[1] || boot.1 < band[0] {
            Verdict::NotEquivalent
        } else {
            Verdict::Inconclusive
        };
        let without_stalls = match no_stall[i] {
            Some(p) => {
                let ci = p.ratio_interval(0.90)?;
                WithoutStalls {
                    pairs: p.n,
                    ratio: Some(p.ratio()),
                    ci90: Some([ci.0, ci.1]),
                    verdict: ns_adj[i].map(|pa| verdict(pa, ci, a.margin, a.alpha)),
                }
            }
            None => WithoutStalls {
                pairs: r.d_no_stall.len(),
                ratio: None,
                ci90: None,
                verdict: None,
            },
        };
        entries.push(Entry {
            cell: r.cell.to_owned(),
            mode: r.mode.to_owned(),
            baseline: r.baseline.to_owned(),
            family: r.family,
            pairs: c.paired.n,
            ratio: c.ratio,
            ci90,
            ci95: [c.ci95.0, c.ci95.1],
            sd: c.paired.sd,
            tost_p: c.tost.p,
            tost_p_adjusted: adjusted[i],
            bh_p_adjusted: bh[i],
            verdict: verdict(adjusted[i], c.ci90, a.margin, a.alpha),
            verdicts_at_margins: c
                .tost_at_margins
                .iter()
                .map(|&(m, p)| (margin_key(m), verdict(p, c.ci90, m, a.alpha)))
                .collect(),
            deficit: flags.deficit,
            advantage: flags.advantage,
            bootstrap_ci90: [boot.0, boot.1],
            bootstrap_verdict,
            cpu_ratio: r.cpu_ratio,
            implied_ratio: r.cpu_ratio.map(implied_ratio),
            saturated: r.saturated,
            underpowered: ci90[1] - ci90[0] > band[1] - band[0],
            repetitions_needed: reps.needed,
            without_stalls,
        });
    }

    let per_arm = arm_attempts(attempts);
    let stalls: Vec<String> = stalled.into_iter().map(str::to_owned).collect();
    let order = order_checks(rows, &by_cell, &cells, &entries);
    warnings.extend(crate::order::warnings(&order));
    let mut deviations = crate::deviations::log(crate::deviations::Inputs {
        settings: &cfg.analysis_time_settings,
        attempts,
        excluded,
        dropped_blocks: &dropped_blocks,
        stalls: &stalls,
        rows,
    });
    deviations.extend(crate::order::deviations(&order));
    let arm_modes = arm_modes(cfg, rows);
    let sessions = crate::longrun::session_rows(rows, &entries);
    let wire = crate::wire::wire_rows(rows, &arm_modes);
    let format_ratios = crate::wire::format_ratios(&wire, &comparisons);
    Ok(Report {
        config: cfg.clone(),
        runs: rows.len(),
        primary_family_size: primary.len(),
        comparisons: entries,
        stalls,
        arms: arm_summaries(rows, &cells),
        storage: storage(rows, &cfg.baseline, &arm_modes),
        knees: knees(rows),
        invalid_rates: invalid_rates(&per_arm, &comparisons)?,
        attempts: per_arm,
        attributions: attributions(&by_cell, &cells, &arm_modes, cfg)?,
        secondary,
        deviations,
        order,
        drift: crate::longrun::drift_rows(rows),
        sessions,
        wire,
        format_ratios,
        dropped_blocks,
        warnings,
    })
}

/// The order-and-time check of every cell with a comparison, over the runs of its
/// complete blocks, with the campaign order of every valid run.
fn order_checks(
    rows: &[RunRow],
    by_cell: &Blocks<'_>,
    cells: &[String],
    entries: &[Entry],
) -> Vec<crate::order::OrderCheck> {
    let timeline = crate::order::Timeline::of(rows);
    cells
        .iter()
        .filter_map(|cell| {
            let compared: Vec<crate::order::Compared<'_>> = entries
                .iter()
                .filter(|e| &e.cell == cell)
                .map(|e| crate::order::Compared {
                    mode: &e.mode,
                    baseline: &e.baseline,
                    paired_ratio: e.ratio,
                })
                .collect();
            let blocks = by_cell.get(cell.as_str())?;
            if compared.is_empty() {
                return None;
            }
            let runs: Vec<&RunRow> = blocks.values().flat_map(|b| b.values().copied()).collect();
            Some(crate::order::check(cell, &runs, &compared, &timeline))
        })
        .collect()
}

/// What each arm label is: the campaign's arms, or for runs from a CSV alone the mode the
/// label names (on the default backend and S3 client).
fn arm_modes(cfg: &Config, rows: &[RunRow]) -> BTreeMap<String, crate::design::Arm> {
    if !cfg.arm_details.is_empty() {
        return cfg
            .arm_details
            .iter()
            .map(|a| (a.label.clone(), a.clone()))
            .collect();
    }
    rows.iter()
        .filter_map(|r| {
            let mode = r.mode.parse::<envelope::Mode>().ok()?;
            Some((
                r.mode.clone(),
                crate::design::Arm {
                    label: r.mode.clone(),
                    mode,
                    backend: envelope::Backend::default(),
                    client: crate::spec::S3ClientKind::default(),
                    format: crate::spec::ObjectFormat::default(),
                    require_pq: false,
                    session: None,
                    control: false,
                },
            ))
        })
        .collect()
}

/// The manifest-size control's share of each ML-KEM-768 arm's deficit, in every cell
/// holding ML-KEM-768, `x25519-padded` and `x25519` arms on one backend and S3 client.
fn attributions(
    by_cell: &Blocks<'_>,
    cells: &[String],
    arms: &BTreeMap<String, crate::design::Arm>,
    cfg: &Config,
) -> Result<Vec<Attribution>> {
    use envelope::Mode;
    let mut out = Vec::new();
    for cell in cells {
        let Some(blocks) = by_cell.get(cell.as_str()) else {
            continue;
        };
        let labels: BTreeSet<&str> = blocks.values().flat_map(|b| b.keys().copied()).collect();
        let with = |mode: Mode| -> Vec<&crate::design::Arm> {
            labels
                .iter()
                .filter_map(|l| arms.get(*l))
                .filter(|a| a.mode == mode && !a.control)
                .collect()
        };
        for c in with(Mode::X25519Padded) {
            let same = |a: &&crate::design::Arm| a.backend == c.backend && a.client == c.client;
            let Some(b) = with(Mode::X25519).into_iter().find(same) else {
                continue;
            };
            for p in with(Mode::MlKem768).into_iter().filter(same) {
                let mut d_pc = Vec::new();
                let mut d_pb = Vec::new();
                for runs in blocks.values() {
                    if let (Some(tp), Some(tc), Some(tb)) = (
                        runs.get(p.label.as_str()),
                        runs.get(c.label.as_str()),
                        runs.get(b.label.as_str()),
                    ) {
                        let l = log_ratios(&[
                            (tp.throughput_rps, tc.throughput_rps),
                            (tp.throughput_rps, tb.throughput_rps),
                        ])?;
                        d_pc.push(l[0]);
                        d_pb.push(l[1]);
                    }
                }
                let share = stats::attribution::manifest_share(
                    &d_pc,
                    &d_pb,
                    cfg.analysis.bootstrap_resamples,
                    cfg.seed,
                );
                out.push(Attribution {
                    cell: cell.clone(),
                    mode: p.label.clone(),
                    control: c.label.clone(),
                    baseline: b.label.clone(),
                    note: share.as_ref().err().map(ToString::to_string),
                    share: share.ok(),
                });
            }
        }
    }
    Ok(out)
}

/// Every arm of the data against `baseline` (the comparisons when none are declared).
fn every_arm_against(rows: &[RunRow], baseline: &str) -> Vec<ComparisonSpec> {
    let mut arms: Vec<&str> = rows.iter().map(|r| r.mode.as_str()).collect();
    arms.sort_unstable();
    arms.dedup();
    arms.into_iter()
        .filter(|m| *m != baseline)
        .map(|m| ComparisonSpec {
            arm: m.to_owned(),
            against: baseline.to_owned(),
        })
        .collect()
}

type Blocks<'a> = BTreeMap<&'a str, BTreeMap<u32, BTreeMap<&'a str, &'a RunRow>>>;

/// Removes the blocks of each cell that lack a valid run of one of the cell's arms
/// (`arms`, or the arms the cell's data holds); returns them as (cell, block).
fn drop_incomplete_blocks(by_cell: &mut Blocks<'_>, arms: &[String]) -> Vec<(String, u32)> {
    let mut dropped = Vec::new();
    for (cell, blocks) in by_cell.iter_mut() {
        let expected: BTreeSet<&str> = if arms.is_empty() {
            blocks.values().flat_map(|b| b.keys().copied()).collect()
        } else {
            arms.iter().map(String::as_str).collect()
        };
        blocks.retain(|&block, runs| {
            let complete = expected.iter().all(|a| runs.contains_key(a));
            if !complete {
                dropped.push(((*cell).to_owned(), block));
            }
            complete
        });
    }
    dropped
}

fn arm_attempts(attempts: &[RunAttempts]) -> Vec<ArmAttempts> {
    let mut by_arm: BTreeMap<&str, ArmAttempts> = BTreeMap::new();
    for r in attempts {
        let e = by_arm.entry(&r.arm).or_insert_with(|| ArmAttempts {
            arm: r.arm.clone(),
            runs: 0,
            attempts: 0,
            invalid: 0,
            failed: 0,
        });
        e.runs += 1;
        e.attempts += r.attempts;
        e.invalid += r.invalid;
        e.failed += r.failed;
    }
    by_arm.into_values().collect()
}

/// Fisher's exact test of invalid vs valid attempts for each compared pair of arms.
fn invalid_rates(
    per_arm: &[ArmAttempts],
    comparisons: &[ComparisonSpec],
) -> Result<Vec<InvalidRate>> {
    let find = |l: &str| per_arm.iter().find(|a| a.arm == l);
    let mut out = Vec::new();
    for c in comparisons {
        let (Some(x), Some(y)) = (find(&c.arm), find(&c.against)) else {
            continue;
        };
        let row = |a: &ArmAttempts| {
            let judged = a.attempts.saturating_sub(a.failed);
            [
                u64::from(a.invalid),
                u64::from(judged.saturating_sub(a.invalid)),
            ]
        };
        let p = stats::contingency::fisher_exact([row(x), row(y)])?;
        out.push(InvalidRate {
            arm: c.arm.clone(),
            against: c.against.clone(),
            p,
            differs: p < INVALID_RATE_ALPHA,
        });
    }
    Ok(out)
}

fn arm_summaries(rows: &[RunRow], cells: &[String]) -> Vec<ArmSummary> {
    let mut out = Vec::new();
    for cell in cells {
        let mut modes: Vec<&str> = rows
            .iter()
            .filter(|r| &r.cell == cell)
            .map(|r| r.mode.as_str())
            .collect();
        modes.sort_unstable();
        modes.dedup();
        for m in modes {
            let rs: Vec<&RunRow> = rows
                .iter()
                .filter(|r| &r.cell == cell && r.mode == m)
                .collect();
            let first = rs[0];
            out.push(ArmSummary {
                cell: cell.clone(),
                mode: m.to_owned(),
                runs: rs.len(),
                throughput_rps: mean(rs.iter().map(|r| r.throughput_rps)).unwrap_or(0.0),
                cpu_per_request_us: mean(rs.iter().map(|r| r.cpu_per_request_us)).unwrap_or(0.0),
                client_cores_used: mean(rs.iter().map(|r| r.client_cores_used)).unwrap_or(0.0),
                client_saturation: mean(
                    rs.iter()
                        .filter(|r| r.client_cores_available > 0.0)
                        .map(|r| r.client_cores_used / r.client_cores_available),
                )
                .unwrap_or(0.0),
                operation: first.operation,
                object_size: first.object_size,
                concurrency: first.concurrency,
                offered_rps: first.offered_rps,
            });
        }
    }
    out
}

fn storage(
    rows: &[RunRow],
    baseline: &str,
    arms: &BTreeMap<String, crate::design::Arm>,
) -> Vec<StorageRow> {
    // Mean manifest bytes per (object size, arm); the baseline's at the same size.
    let mut acc: BTreeMap<(Option<u64>, &str), Vec<f64>> = BTreeMap::new();
    for r in rows {
        if let Some(b) = r.manifest_bytes {
            acc.entry((r.object_size, &r.mode)).or_default().push(b);
        }
    }
    let bytes = |v: &Vec<f64>| -> u64 {
        let m = mean(v.iter().copied()).unwrap_or(0.0).round();
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "manifest sizes are small and non-negative"
        )]
        let b = m as u64;
        b
    };
    let mut out = Vec::new();
    for ((size, mode), v) in &acc {
        let base = acc.get(&(*size, baseline)).map_or(0, bytes);
        let m = bytes(v);
        let arm = arms.get(*mode);
        let format = arm.map(|a| a.format).unwrap_or_default();
        let c_len = |a: &crate::design::Arm| u64::try_from(a.mode.ciphertext_len()).unwrap_or(0);
        let (overhead, breakdown) = if format.format() == envelope::Format::V2 {
            (
                stats::storage::overhead_v2(m, base),
                arm.map(|a| stats::storage::breakdown_v2(m, c_len(a))),
            )
        } else {
            (
                stats::storage::overhead(m, base),
                arm.map(|a| stats::storage::breakdown(m, c_len(a))),
            )
        };
        out.push(StorageRow {
            mode: (*mode).to_owned(),
            format,
            object_size: *size,
            overhead,
            breakdown,
        });
    }
    out
}

fn knees(rows: &[RunRow]) -> Vec<KneeRow> {
    // Series: (op, size, threads, mode) over open-loop rows. Closed loop, per (op, size,
    // mode): each cell's workers and mean throughput, for the peak and the service time.
    // Key: (operation, size, threads, mode) → offered rate (as bits) → mean responses.
    type Series<'a> = BTreeMap<(Operation, u64, u32, &'a str), BTreeMap<u64, Vec<f64>>>;
    type Closed<'a> = BTreeMap<(Operation, u64, &'a str), BTreeMap<&'a str, (u32, Vec<f64>)>>;
    let mut series: Series<'_> = BTreeMap::new();
    let mut closed: Closed<'_> = BTreeMap::new();
    for r in rows {
        let (Some(op), Some(size)) = (r.operation, r.object_size) else {
            continue;
        };
        match (r.offered_rps, r.mean_response_ms, r.concurrency) {
            (Some(rate), Some(resp), Some(t)) => {
                series
                    .entry((op, size, t, &r.mode))
                    .or_default()
                    .entry(rate.to_bits())
                    .or_default()
                    .push(resp);
            }
            (None, _, c) => closed
                .entry((op, size, &r.mode))
                .or_default()
                .entry(&r.cell)
                .or_insert_with(|| (c.unwrap_or(0), Vec::new()))
                .1
                .push(r.throughput_rps),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for ((op, size, threads, mode), pts) in series {
        let points: Vec<OpenPoint> = pts
            .iter()
            .map(|(bits, v)| OpenPoint {
                rate: f64::from_bits(*bits),
                mean_response: mean(v.iter().copied()).unwrap_or(0.0),
            })
            .collect();
        // (workers, mean throughput) of each closed-loop cell.
        let cells: Vec<(u32, f64)> = closed
            .get(&(op, size, mode))
            .map(|cells| {
                cells
                    .values()
                    .filter_map(|(c, v)| Some((*c, mean(v.iter().copied())?)))
                    .collect()
            })
            .unwrap_or_default();
        let peak = cells.iter().map(|c| c.1).fold(0.0, f64::max);
        let peak = (peak > 0.0).then_some(peak);
        let knee = knee(&points, peak);
        // Little's law at the fewest workers: S = workers / throughput (seconds).
        let predicted = cells
            .iter()
            .filter(|(c, x)| *c > 0 && *x > 0.0)
            .min_by_key(|(c, _)| *c)
            .and_then(|(c, x)| stats::queueing::predict_knee(f64::from(*c) / x, peak?).ok());
        out.push(KneeRow {
            series: format!("{}-{}-t{threads}", op.as_str(), crate::units::Size(size)),
            mode: mode.to_owned(),
            measured_over_predicted: knee
                .zip(predicted)
                .map(|(k, p)| k.rate / p.rate)
                .filter(|r| r.is_finite()),
            knee,
            predicted,
            points,
        });
    }
    out
}
