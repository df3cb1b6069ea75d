//! Second endpoints and the CPU accounting identity of each comparison (study sections
//! IV-C and V-C; Tables XIII, XV, XVI and XX). All of it is exploratory.
//!
//! - **The CPU identity, whole** ([`stats::identity`]): per run, throughput = cores used ÷
//!   CPU per request. Per comparison: the paired ratio of client CPU per request with its
//!   intervals and TOST (Table XIII's column), the throughput ratio it implies with equal
//!   cores (Table XV's "implied by CPU") and with the cores-used term, and the residual
//!   (observed ÷ implied). `cpu_predicts_throughput` says when the CPU ratio alone carries
//!   the throughput ratio: the arms used the same cores, within the deficit threshold. Only
//!   then does a CPU measurement answer the migration question.
//! - **Ratios with 90 % and 95 % intervals** (paired log ratios over the same complete
//!   blocks as the verdict): p50 and p99 latency, client CPU per request, peak RSS; and for
//!   exploratory comparisons throughput itself.
//! - **Differences with 95 % intervals** (paired, mode − baseline): RSS growth over the
//!   window (MiB); at one worker, each stage's mean time (µs, Table XVI). Stage timers at
//!   more workers include waiting, so the study compares them at one worker only.
//! - **Difference tests**: an endpoint is *marked* when its 95 % interval excludes no
//!   change (p < 0.05, the two-sided paired t test). Benjamini–Hochberg runs over every
//!   endpoint of the report at once, as the study does for Table XX ("of the 162 ratios,
//!   66 are marked; 50 remain at a false-discovery rate of 5 %").

use serde::{Deserialize, Serialize};
use stats::identity::{Identity, IdentityPair};
use stats::paired::{RatioInterval, difference_interval, log_ratios};

use crate::Result;
use crate::rows::{RunRow, STAGES};

/// Reads one figure of a run.
type Getter = fn(&RunRow) -> Option<f64>;

/// The level of the difference tests and of the false-discovery rate.
pub const DIFFERENCE_ALPHA: f64 = 0.05;

/// How an endpoint compares the arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// `exp` of the mean paired log ratio, mode ÷ baseline; no change is 1.
    Ratio,
    /// Mean paired difference, mode − baseline, in the endpoint's unit; no change is 0.
    Difference,
}

/// One second endpoint of one comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    /// What is compared: `throughput`, `client CPU per request`, `p50 latency`, `p99
    /// latency`, `peak RSS`, `RSS growth`, `stage key_establishment`, ….
    pub name: String,
    /// Ratio or difference.
    pub scale: Scale,
    /// Unit of a difference (`µs`, `MiB`); empty for a ratio.
    pub unit: String,
    /// Pairs.
    pub pairs: usize,
    /// The ratio, or the mean difference.
    pub estimate: f64,
    /// 90 % t interval (ratios).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci90: Option<[f64; 2]>,
    /// 95 % t interval.
    pub ci95: [f64; 2],
    /// Two-sided p of the paired t test of no change.
    pub p: f64,
    /// Benjamini–Hochberg-adjusted p over every endpoint of the report.
    pub bh_p: f64,
    /// The 95 % interval excludes no change (`p < 0.05`, unadjusted).
    pub marked: bool,
    /// … and the BH-adjusted p is below 0.05 too.
    pub survives_bh: bool,
}

/// The second endpoints of one comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Secondary {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub mode: String,
    /// The arm it is compared against.
    pub baseline: String,
    /// Pairs (complete blocks).
    pub pairs: usize,
    /// The CPU accounting identity, when every run has its CPU figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// The endpoints, in a fixed order.
    pub endpoints: Vec<Endpoint>,
}

impl Secondary {
    /// The endpoint called `name`.
    pub fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.name == name)
    }
}

/// The second endpoints of a comparison over its pairs `(mode run, baseline run)`.
/// `throughput`, the pairs' throughput log ratios, adds throughput's own difference test
/// (exploratory comparisons; a primary comparison's throughput is judged by TOST and Holm
/// instead, and passes `None`). `margin` and
/// `tolerance` are the identity's TOST margin and the band its checks use. BH is left
/// to [`adjust`].
pub fn secondary(
    (cell, mode, baseline): (&str, &str, &str),
    pairs: &[(&RunRow, &RunRow)],
    throughput: Option<&[f64]>,
    margin: f64,
    tolerance: f64,
) -> Result<Secondary> {
    let identity = identity(pairs, margin, tolerance)?;
    let mut endpoints = Vec::new();
    if let Some(d) = throughput {
        endpoints.push(ratio("throughput", &RatioInterval::of(d)?));
    }
    if let Some(id) = &identity {
        endpoints.push(ratio("client CPU per request", &id.cpu));
    }
    let ratios: [(&str, Getter); 3] = [
        ("p50 latency", |r| r.latency_p50_ms),
        ("p99 latency", |r| r.latency_p99_ms),
        ("peak RSS", |r| r.max_rss_bytes),
    ];
    for (name, get) in ratios {
        if let Some(v) = both(pairs, get).filter(|v| v.iter().all(|&(a, b)| a > 0.0 && b > 0.0)) {
            endpoints.push(ratio(name, &RatioInterval::of(&log_ratios(&v)?)?));
        }
    }
    let mib = f64::from(1u32 << 20);
    if let Some(v) = both(pairs, |r| r.rss_growth_bytes.map(|b| b / mib)) {
        endpoints.push(difference("RSS growth", "MiB", &v)?);
    }
    if pairs
        .iter()
        .all(|(m, b)| m.concurrency == Some(1) && b.concurrency == Some(1))
    {
        for (i, stage) in STAGES.iter().enumerate() {
            if let Some(v) = both(pairs, |r| r.stages_us.map(|s| s[i])) {
                endpoints.push(difference(&format!("stage {stage}"), "µs", &v)?);
            }
        }
    }
    Ok(Secondary {
        cell: cell.to_owned(),
        mode: mode.to_owned(),
        baseline: baseline.to_owned(),
        pairs: pairs.len(),
        identity,
        endpoints,
    })
}

/// Fills `bh_p` and `survives_bh` over every endpoint of every comparison at once.
pub fn adjust(all: &mut [Secondary]) {
    let ps: Vec<f64> = all
        .iter()
        .flat_map(|s| s.endpoints.iter().map(|e| e.p))
        .collect();
    let adjusted = stats::multiplicity::benjamini_hochberg(&ps);
    let mut it = adjusted.into_iter();
    for e in all.iter_mut().flat_map(|s| s.endpoints.iter_mut()) {
        e.bh_p = it.next().unwrap_or(1.0);
        e.survives_bh = e.bh_p < DIFFERENCE_ALPHA;
    }
}

/// The identity over the pairs, `None` when a run lacks a positive CPU or cores figure (a
/// CSV without them, a run that used no CPU).
fn identity(pairs: &[(&RunRow, &RunRow)], margin: f64, tolerance: f64) -> Result<Option<Identity>> {
    let ok = |r: &RunRow| {
        [r.throughput_rps, r.cpu_per_request_us, r.client_cores_used]
            .iter()
            .all(|v| v.is_finite() && *v > 0.0)
    };
    if !pairs.iter().all(|(m, b)| ok(m) && ok(b)) {
        return Ok(None);
    }
    let p: Vec<IdentityPair> = pairs
        .iter()
        .map(|(m, b)| IdentityPair {
            throughput: (m.throughput_rps, b.throughput_rps),
            cpu_per_request: (m.cpu_per_request_us, b.cpu_per_request_us),
            cores_used: (m.client_cores_used, b.client_cores_used),
        })
        .collect();
    Ok(Some(stats::identity::identity(&p, margin, tolerance)?))
}

/// `(mode, baseline)` values of every pair, if every run has one.
fn both(
    pairs: &[(&RunRow, &RunRow)],
    get: impl Fn(&RunRow) -> Option<f64>,
) -> Option<Vec<(f64, f64)>> {
    pairs
        .iter()
        .map(|(m, b)| Some((get(m)?, get(b)?)))
        .collect()
}

fn ratio(name: &str, r: &RatioInterval) -> Endpoint {
    Endpoint {
        name: name.to_owned(),
        scale: Scale::Ratio,
        unit: String::new(),
        pairs: r.n,
        estimate: r.ratio,
        ci90: Some([r.ci90.0, r.ci90.1]),
        ci95: [r.ci95.0, r.ci95.1],
        p: r.difference_p,
        bh_p: r.difference_p,
        marked: r.difference_p < DIFFERENCE_ALPHA,
        survives_bh: false,
    }
}

fn difference(name: &str, unit: &str, v: &[(f64, f64)]) -> Result<Endpoint> {
    let d = difference_interval(v)?;
    Ok(Endpoint {
        name: name.to_owned(),
        scale: Scale::Difference,
        unit: unit.to_owned(),
        pairs: d.n,
        estimate: d.mean,
        ci90: None,
        ci95: [d.ci95.0, d.ci95.1],
        p: d.p,
        bh_p: d.p,
        marked: d.p < DIFFERENCE_ALPHA,
        survives_bh: false,
    })
}
