//! One comparison's result: a cell, an arm against the baseline, its family, ratio,
//! intervals and verdicts ([`Entry`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stats::Verdict;

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
    /// The exploratory campaign's original rule on the 95 % interval (study Table XIV):
    /// equivalent inside the margin band, not equivalent entirely outside, inconclusive
    /// otherwise; no test, no correction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_rule: Option<Verdict>,
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
