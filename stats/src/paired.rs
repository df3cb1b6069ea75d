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
//! - the percentile bootstrap of `d̄`, seeded ([`bootstrap_interval`]);
//! - the two-sided p of the one-sample t test of `d̄ = 0`, `2·F(−|d̄/se|)`
//!   ([`Paired::difference_p`]), and the summary every secondary endpoint reports (client
//!   CPU per request, Table XIII; the terms of the CPU accounting identity, Table XV):
//!   ratio, 90 % and 95 % intervals, sd and that p ([`RatioInterval`]);
//! - for paired *differences* rather than ratios (mode − baseline of a quantity that may be
//!   zero or negative, e.g. the stage times in µs of Table XVI, section V-C): mean, sd, the
//!   95 % t interval of the mean difference and the paired t-test p ([`difference_interval`]).

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

    /// The two-sided p of the one-sample t test of `d̄ = 0` (no difference; SciPy's
    /// `ttest_1samp(d, 0).pvalue`): `2·F(−|d̄/se|)` with `F` the Student t CDF with `df`.
    ///
    /// With zero spread (`se = 0`) the t statistic is infinite or undefined: p is 0 if
    /// `d̄ ≠ 0` and 1 if `d̄ = 0` (SciPy returns NaN for both).
    pub fn difference_p(&self) -> Result<f64> {
        if self.se == 0.0 {
            return Ok(if self.mean == 0.0 { 1.0 } else { 0.0 });
        }
        Ok((2.0 * t_cdf(-(self.mean / self.se).abs(), self.df)?).min(1.0))
    }
}

/// The summary of a paired ratio that every secondary endpoint reports (client CPU per
/// request, Table XIII of the study; the terms of the CPU accounting identity, Table XV):
/// the ratio `exp(d̄)`, its 90 % and 95 % t intervals, the sd of the log ratios and the
/// two-sided p of `d̄ = 0`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatioInterval {
    /// Number of pairs.
    pub n: usize,
    /// `exp(d̄)`.
    pub ratio: f64,
    /// 90 % t interval of the ratio, `exp(d̄ ± t₀.₉₅,df · se)`.
    pub ci90: (f64, f64),
    /// 95 % t interval of the ratio, `exp(d̄ ± t₀.₉₇₅,df · se)`.
    pub ci95: (f64, f64),
    /// Standard deviation of the log ratios (divisor `n − 1`).
    pub sd: f64,
    /// Two-sided p of the one-sample t test of `d̄ = 0` ([`Paired::difference_p`]).
    pub difference_p: f64,
}

impl RatioInterval {
    /// Summarises log ratios `d` (at least two, all finite).
    pub fn of(d: &[f64]) -> Result<Self> {
        let p = Paired::from_log_ratios(d)?;
        Ok(Self {
            n: p.n,
            ratio: p.ratio(),
            ci90: p.ratio_interval(0.90)?,
            ci95: p.ratio_interval(0.95)?,
            sd: p.sd,
            difference_p: p.difference_p()?,
        })
    }

    /// Whether the 95 % interval excludes 1 (lies entirely above or below it).
    pub fn excludes_one(&self) -> bool {
        self.ci95.0 > 1.0 || self.ci95.1 < 1.0
    }
}

/// The summary of paired differences `mode − baseline` ([`difference_interval`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// Number of pairs.
    pub n: usize,
    /// Mean difference.
    pub mean: f64,
    /// Standard deviation of the differences (divisor `n − 1`).
    pub sd: f64,
    /// 95 % t interval of the mean difference, `mean ± t₀.₉₇₅,n−1 · sd/√n`.
    pub ci95: (f64, f64),
    /// Two-sided p of the paired t test of a zero mean difference (SciPy's
    /// `ttest_rel(mode, baseline).pvalue`; zero spread as [`Paired::difference_p`]).
    pub p: f64,
}

/// Mean, sd, 95 % t interval and paired t-test p of the differences `mode − baseline` of
/// `(mode, baseline)` pairs (stage times in µs, Table XVI of the study). Values may be zero
/// or negative; they must be finite, and so must their differences. Needs two pairs.
pub fn difference_interval(pairs: &[(f64, f64)]) -> Result<Difference> {
    let d = pairs
        .iter()
        .map(|&(m, b)| {
            let d = m - b;
            match [m, b, d].into_iter().find(|v| !v.is_finite()) {
                Some(bad) => Err(Error::Domain {
                    what: "a paired measurement or its difference",
                    allowed: "finite",
                    value: bad,
                }),
                None => Ok(d),
            }
        })
        .collect::<Result<Vec<f64>>>()?;
    if d.len() < 2 {
        return Err(Error::TooFewPairs {
            what: "a paired difference",
            need: 2,
            got: d.len(),
        });
    }
    // The moments of a vector do not care whether it holds log ratios or differences.
    let p = Paired::from_log_ratios(&d)?;
    Ok(Difference {
        n: p.n,
        mean: p.mean,
        sd: p.sd,
        ci95: p.log_interval(0.95)?,
        p: p.difference_p()?,
    })
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
        assert!(RatioInterval::of(&[0.1]).is_err());
        assert!(difference_interval(&[(1.0, 2.0)]).is_err());
        assert!(difference_interval(&[(1.0, 2.0), (f64::INFINITY, 0.0)]).is_err());
        assert!(difference_interval(&[(f64::MAX, -f64::MAX), (1.0, 0.0)]).is_err());
    }

    #[test]
    fn difference_p_and_ratio_interval() {
        // d = [0.01, 0.03]: mean 0.02, sd √2·0.01, se 0.01, t = 2 on 1 df:
        // p = 2·(1/2 − atan(2)/π) = 1 − 2·atan(2)/π.
        let p = Paired::from_log_ratios(&[0.01, 0.03]).expect("paired");
        let want = 1.0 - 2.0 * 2.0_f64.atan() / std::f64::consts::PI;
        assert!((p.difference_p().expect("p") - want).abs() < 1e-12);
        let r = RatioInterval::of(&[0.01, 0.03]).expect("interval");
        assert_eq!(r.n, 2);
        assert!((r.ratio - 0.02_f64.exp()).abs() < 1e-15);
        assert_eq!(r.ci90, p.ratio_interval(0.90).expect("ci90"));
        assert!(!r.excludes_one(), "{r:?}");
        let tight = RatioInterval::of(&[-0.05, -0.049, -0.051]).expect("tight");
        assert!(tight.excludes_one() && tight.ci95.1 < 1.0);
        // Zero spread: decided by the mean.
        let zero = Paired::from_log_ratios(&[0.0, 0.0]).expect("zero");
        assert_eq!(zero.difference_p().expect("p"), 1.0);
        let constant = Paired::from_log_ratios(&[0.01, 0.01]).expect("constant");
        assert_eq!(constant.difference_p().expect("p"), 0.0);
    }

    #[test]
    fn differences_may_be_negative_or_zero() {
        let d = difference_interval(&[(0.0, 1.0), (-2.0, -2.5), (3.0, 3.0)]).expect("d");
        // Differences −1, 0.5, 0: mean −1/6.
        assert_eq!(d.n, 3);
        assert!((d.mean + 1.0 / 6.0).abs() < 1e-15);
        assert!(d.ci95.0 < d.mean && d.mean < d.ci95.1);
        assert!(d.p > 0.5 && d.p < 1.0, "{d:?}");
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
