//! Paired log ratios of throughput within randomized complete blocks (study section IV-C).
//!
//! A run is the experimental unit, and modes are compared only within a block: the pairs
//! `i = 1..n` of a comparison are the blocks of one cell that hold both mode *m* and the
//! baseline *b*. With `T` the throughput of a run (successful requests per second of the
//! measured window):
//!
//! - `dᵢ = ln(T_m,i / T_b,i)`; `d̄` their mean, `s` their standard deviation (divisor
//!   `n − 1`), `se = s/√n`, `df = n − 1` ([`Paired`]);
//! - ratio `= exp(d̄)`; the 90 % interval `exp(d̄ ± t₀.₉₅,df · se)`, the 95 % interval
//!   likewise with `t₀.₉₇₅,df` ([`Paired::ratio_interval`]);
//! - TOST at margin δ: bounds `[ln(1−δ), ln(1+δ)]` on `d`,
//!   `t_L = (d̄ − ln(1−δ))/se`, `t_U = (d̄ − ln(1+δ))/se`,
//!   `p = max(1 − F(t_L), F(t_U))` with `F` the Student t CDF with `df` ([`Paired::tost`]);
//! - verdict: `Equivalent` if the (adjusted) TOST p is below α, `NotEquivalent` if the
//!   90 % interval lies entirely outside `[1−δ, 1+δ]`, `Inconclusive` otherwise
//!   ([`verdict`]);
//! - deficit if the 90 % interval's upper end is below `1 − threshold`, advantage if its
//!   lower end is above `1 + threshold` (threshold 0.02 in the study; [`Flags`]);
//! - the percentile bootstrap of `d̄`, seeded ([`bootstrap_interval`]).

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng as _;
use serde::{Deserialize, Serialize};

use crate::dist::{t_cdf, t_ppf};
use crate::{Error, Result};

/// `ln(mode / baseline)` for each pair of throughputs (or of any positive measure).
pub fn log_ratios(pairs: &[(f64, f64)]) -> Result<Vec<f64>> {
    pairs
        .iter()
        .map(|&(m, b)| {
            for v in [m, b] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::Domain {
                        what: "a paired measurement",
                        allowed: "positive and finite",
                        value: v,
                    });
                }
            }
            Ok((m / b).ln())
        })
        .collect()
}

/// The summary of `n` paired log ratios.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Number of pairs.
    pub n: usize,
    /// Mean log ratio `d̄`.
    pub mean: f64,
    /// Sample standard deviation (divisor `n − 1`).
    pub sd: f64,
    /// Standard error `sd / √n`.
    pub se: f64,
    /// Degrees of freedom `n − 1`.
    pub df: f64,
}

/// The two one-sided tests at one margin.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tost {
    /// `max(p_lower, p_upper)`.
    pub p: f64,
    /// `1 − F(t_L)`: evidence that the ratio is above `1 − δ`.
    pub p_lower: f64,
    /// `F(t_U)`: evidence that the ratio is below `1 + δ`.
    pub p_upper: f64,
}

#[allow(clippy::cast_precision_loss, reason = "pair counts are far below 2^52")]
pub(crate) fn as_f64(n: usize) -> f64 {
    n as f64
}

impl Paired {
    /// Summarises log ratios; needs at least two.
    pub fn from_log_ratios(d: &[f64]) -> Result<Self> {
        if d.len() < 2 {
            return Err(Error::TooFewPairs {
                what: "a paired comparison",
                need: 2,
                got: d.len(),
            });
        }
        if let Some(&bad) = d.iter().find(|v| !v.is_finite()) {
            return Err(Error::Domain {
                what: "a log ratio",
                allowed: "finite",
                value: bad,
            });
        }
        let n = as_f64(d.len());
        let mean = d.iter().sum::<f64>() / n;
        let ss: f64 = d.iter().map(|x| (x - mean).powi(2)).sum();
        let sd = (ss / (n - 1.0)).sqrt();
        Ok(Self {
            n: d.len(),
            mean,
            sd,
            se: sd / n.sqrt(),
            df: n - 1.0,
        })
    }

    /// Summarises `(mode, baseline)` pairs of positive measurements.
    pub fn from_pairs(pairs: &[(f64, f64)]) -> Result<Self> {
        Self::from_log_ratios(&log_ratios(pairs)?)
    }

    /// The ratio `exp(d̄)`.
    pub fn ratio(&self) -> f64 {
        self.mean.exp()
    }

    /// The two-sided t interval of the ratio at `level` (0.90 → `t₀.₉₅`):
    /// `exp(d̄ ± t · se)`.
    pub fn ratio_interval(&self, level: f64) -> Result<(f64, f64)> {
        let (lo, hi) = self.log_interval(level)?;
        Ok((lo.exp(), hi.exp()))
    }

    /// The two-sided t interval of `d̄` at `level`, on the log scale.
    pub fn log_interval(&self, level: f64) -> Result<(f64, f64)> {
        let level = crate::check_prob("confidence level", level)?;
        let t = t_ppf(0.5 + level / 2.0, self.df)?;
        Ok((self.mean - t * self.se, self.mean + t * self.se))
    }

    /// TOST with bounds `[1−δ, 1+δ]` on the ratio.
    ///
    /// With zero spread (`se = 0`, every pair identical) the t statistics are infinite:
    /// both p are 0 when `d̄` lies strictly inside the bounds and 1 otherwise.
    pub fn tost(&self, margin: f64) -> Result<Tost> {
        let (lo, hi) = log_bounds(margin)?;
        if self.se == 0.0 {
            let p_lower = if self.mean > lo { 0.0 } else { 1.0 };
            let p_upper = if self.mean < hi { 0.0 } else { 1.0 };
            return Ok(Tost {
                p: f64::max(p_lower, p_upper),
                p_lower,
                p_upper,
            });
        }
        let t_l = (self.mean - lo) / self.se;
        let t_u = (self.mean - hi) / self.se;
        // 1 − F(t_L) = F(−t_L) by symmetry, which keeps precision for small p.
        let p_lower = t_cdf(-t_l, self.df)?;
        let p_upper = t_cdf(t_u, self.df)?;
        Ok(Tost {
            p: f64::max(p_lower, p_upper),
            p_lower,
            p_upper,
        })
    }
}

/// `[ln(1−δ), ln(1+δ)]` for a margin δ in (0, 1).
pub fn log_bounds(margin: f64) -> Result<(f64, f64)> {
    let m = crate::check_prob("margin", margin)?;
    Ok(((1.0 - m).ln(), (1.0 + m).ln()))
}

/// The outcome of an equivalence test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verdict {
    /// TOST rejects non-equivalence: the (adjusted) p is below α.
    Equivalent,
    /// The 90 % interval lies entirely outside `[1−δ, 1+δ]`.
    NotEquivalent,
    /// Neither: the data cannot tell at this margin.
    Inconclusive,
}

impl Verdict {
    /// Fixed label.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Equivalent => "Equivalent",
            Self::NotEquivalent => "NotEquivalent",
            Self::Inconclusive => "Inconclusive",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict at margin δ from a TOST p (adjusted for the primary family, unadjusted
/// elsewhere) and the 90 % interval of the ratio.
pub fn verdict(p: f64, ci90: (f64, f64), margin: f64, alpha: f64) -> Verdict {
    if p < alpha {
        Verdict::Equivalent
    } else if ci90.0 > 1.0 + margin || ci90.1 < 1.0 - margin {
        Verdict::NotEquivalent
    } else {
        Verdict::Inconclusive
    }
}

/// The deficit/advantage rule of section IV-C.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flags {
    /// The 90 % interval lies below `1 − threshold`.
    pub deficit: bool,
    /// The 90 % interval lies above `1 + threshold`.
    pub advantage: bool,
}

impl Flags {
    /// Applies the rule to a 90 % interval of the ratio.
    pub fn of(ci90: (f64, f64), threshold: f64) -> Self {
        Self {
            deficit: ci90.1 < 1.0 - threshold,
            advantage: ci90.0 > 1.0 + threshold,
        }
    }
}

/// The percentile bootstrap interval of the mean of `d` at `level`, on the log scale:
/// `resamples` resamples of size n drawn with replacement from a ChaCha8 stream seeded by
/// `seed`, and the `(1−level)/2` and `(1+level)/2` percentiles of their means with linear
/// interpolation (NumPy's default, as SciPy's `bootstrap(method="percentile")` uses).
pub fn bootstrap_interval(d: &[f64], resamples: u32, seed: u64, level: f64) -> Result<(f64, f64)> {
    let level = crate::check_prob("confidence level", level)?;
    if d.len() < 2 {
        return Err(Error::TooFewPairs {
            what: "the bootstrap",
            need: 2,
            got: d.len(),
        });
    }
    if resamples < 2 {
        return Err(Error::Domain {
            what: "bootstrap resamples",
            allowed: "at least 2",
            value: f64::from(resamples),
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = d.len();
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| {
            let sum: f64 = (0..n).map(|_| d[crate::uniform_below(&mut rng, n)]).sum();
            sum / as_f64(n)
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Ok((
        crate::percentile(&means, tail),
        crate::percentile(&means, 1.0 - tail),
    ))
}

/// Everything one comparison (a cell, mode *m* against baseline *b*) reports before
/// multiplicity adjustment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The paired summary.
    pub paired: Paired,
    /// `exp(d̄)`.
    pub ratio: f64,
    /// 90 % t interval of the ratio.
    pub ci90: (f64, f64),
    /// 95 % t interval of the ratio.
    pub ci95: (f64, f64),
    /// TOST at the primary margin.
    pub tost: Tost,
    /// TOST p at each sensitivity margin, unadjusted, in the order given.
    pub tost_at_margins: Vec<(f64, f64)>,
    /// Deficit/advantage at the threshold given.
    pub flags: Flags,
    /// Percentile bootstrap 90 % interval of the ratio (`exp` of the interval of `d̄`).
    pub bootstrap_ci90: (f64, f64),
}

/// Settings of [`Comparison::compute`].
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Primary margin δ.
    pub margin: f64,
    /// Sensitivity margins.
    pub sensitivity_margins: Vec<f64>,
    /// Deficit/advantage threshold.
    pub deficit_threshold: f64,
    /// Bootstrap resamples.
    pub bootstrap_resamples: u32,
    /// Bootstrap seed.
    pub seed: u64,
}

impl Comparison {
    /// Computes every per-comparison statistic from the log ratios `d`.
    pub fn compute(d: &[f64], s: &Settings) -> Result<Self> {
        let paired = Paired::from_log_ratios(d)?;
        let ci90 = paired.ratio_interval(0.90)?;
        let (blo, bhi) = bootstrap_interval(d, s.bootstrap_resamples, s.seed, 0.90)?;
        Ok(Self {
            ratio: paired.ratio(),
            ci90,
            ci95: paired.ratio_interval(0.95)?,
            tost: paired.tost(s.margin)?,
            tost_at_margins: s
                .sensitivity_margins
                .iter()
                .map(|&m| Ok((m, paired.tost(m)?.p)))
                .collect::<Result<_>>()?,
            flags: Flags::of(ci90, s.deficit_threshold),
            bootstrap_ci90: (blo.exp(), bhi.exp()),
            paired,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_rules() {
        assert_eq!(verdict(0.01, (0.97, 1.02), 0.05, 0.05), Verdict::Equivalent);
        assert_eq!(
            verdict(0.5, (0.90, 0.94), 0.05, 0.05),
            Verdict::NotEquivalent
        );
        assert_eq!(
            verdict(0.5, (1.06, 1.2), 0.05, 0.05),
            Verdict::NotEquivalent
        );
        assert_eq!(
            verdict(0.2, (0.93, 1.01), 0.05, 0.05),
            Verdict::Inconclusive
        );
        let f = Flags::of((0.95, 0.979), 0.02);
        assert!(f.deficit && !f.advantage);
        let f = Flags::of((1.021, 1.05), 0.02);
        assert!(!f.deficit && f.advantage);
        assert_eq!(Flags::of((0.97, 1.03), 0.02), Flags::default());
    }

    #[test]
    fn zero_spread_is_decided_by_the_mean() {
        let p = Paired::from_log_ratios(&[0.01, 0.01, 0.01]).expect("paired");
        assert_eq!(p.tost(0.05).expect("tost").p, 0.0);
        assert_eq!(p.tost(0.005).expect("tost").p, 1.0);
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(Paired::from_log_ratios(&[0.1]).is_err());
        assert!(log_ratios(&[(1.0, 0.0)]).is_err());
        assert!(Paired::from_log_ratios(&[0.1, f64::NAN]).is_err());
        assert!(bootstrap_interval(&[0.1, 0.2], 1, 0, 0.9).is_err());
    }

    #[test]
    fn bootstrap_is_seeded() {
        let d = [0.01, -0.02, 0.03, 0.0, 0.015];
        let a = bootstrap_interval(&d, 2000, 7, 0.9).expect("a");
        assert_eq!(a, bootstrap_interval(&d, 2000, 7, 0.9).expect("b"));
        assert_ne!(a, bootstrap_interval(&d, 2000, 8, 0.9).expect("c"));
        assert!(a.0 < a.1);
    }
}
