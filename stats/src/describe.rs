//! Absolute figures of one arm, unpaired: the mean of a per-run measurement with its t
//! interval, and the run-to-run coefficient of variation.
//!
//! - Study section V-A, Tables VII and VIII: key-establishment time per request, "mean
//!   [95 % CI], one worker" over the runs of an arm; Table X: server CPU per request and
//!   memory growth, means over runs. [`mean_interval`]: `x̄ ± t(1 − (1 − level)/2, n − 1) ·
//!   s/√n`, s with n − 1 (SciPy: `scipy.stats.t.interval(level, n − 1, loc=x̄,
//!   scale=scipy.stats.sem(x))`).
//! - Section VI: "the coefficient of variation of throughput across runs is at most 2.2 %".
//!   [`variation`]: `s / x̄`, s with n − 1 (SciPy: `scipy.stats.variation(x, ddof=1)`).
//! - Section IV-C and Table XIV: the exploratory campaign's original rule, "95 % interval
//!   inside ±5 %", three-way: [`interval_rule`].
//!
//! These are descriptive: the runs of one arm are not paired with anything, and the
//! intervals are not adjusted for multiplicity.

use serde::{Deserialize, Serialize};

use crate::dist::t_ppf;
use crate::paired::as_f64;
use crate::{Error, Result, Verdict};

/// The mean of per-run values with its two-sided t interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanInterval {
    /// Runs.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Standard deviation (n − 1).
    pub sd: f64,
    /// The interval at the level asked for.
    pub ci: (f64, f64),
}

/// The mean of `x` with its t interval at `level` (0.95 for the study's tables). Needs
/// two finite values.
pub fn mean_interval(x: &[f64], level: f64) -> Result<MeanInterval> {
    let level = crate::check_prob("confidence level", level)?;
    let (n, mean, sd) = moments(x, "a mean interval")?;
    let t = t_ppf(0.5 + level / 2.0, as_f64(n) - 1.0)?;
    let half = t * sd / as_f64(n).sqrt();
    Ok(MeanInterval {
        n,
        mean,
        sd,
        ci: (mean - half, mean + half),
    })
}

/// The coefficient of variation `s / x̄` (s with n − 1). Needs two finite values and a
/// mean that is not zero.
pub fn variation(x: &[f64]) -> Result<f64> {
    let (_, mean, sd) = moments(x, "a coefficient of variation")?;
    if mean == 0.0 {
        return Err(Error::Domain {
            what: "the mean of a coefficient of variation",
            allowed: "non-zero",
            value: mean,
        });
    }
    Ok(sd / mean)
}

/// The exploratory campaign's original rule (study Table XIV) on a ratio's 95 % interval
/// `(lo, hi)` at margin δ: equivalent when it lies inside `[1 − δ, 1 + δ]`, different when
/// it lies entirely outside, inconclusive otherwise. No test, no multiplicity control: a
/// description, as the study says.
pub fn interval_rule(ci95: (f64, f64), margin: f64) -> Result<Verdict> {
    let m = crate::check_prob("margin", margin)?;
    let (lo, hi) = ci95;
    if !(lo.is_finite() && hi.is_finite()) || lo > hi {
        return Err(Error::Domain {
            what: "an interval's bounds",
            allowed: "finite and ordered",
            value: if lo.is_finite() { hi } else { lo },
        });
    }
    Ok(if lo >= 1.0 - m && hi <= 1.0 + m {
        Verdict::Equivalent
    } else if hi < 1.0 - m || lo > 1.0 + m {
        Verdict::NotEquivalent
    } else {
        Verdict::Inconclusive
    })
}

/// n, mean and sd (n − 1) of at least two finite values.
fn moments(x: &[f64], what: &'static str) -> Result<(usize, f64, f64)> {
    if x.len() < 2 {
        return Err(Error::TooFewRuns {
            what,
            need: 2,
            got: x.len(),
        });
    }
    if let Some(&bad) = x.iter().find(|v| !v.is_finite()) {
        return Err(Error::Domain {
            what: "a measurement",
            allowed: "finite",
            value: bad,
        });
    }
    let n = as_f64(x.len());
    let mean = x.iter().sum::<f64>() / n;
    let ss: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    Ok((x.len(), mean, (ss / (n - 1.0)).sqrt()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "test code")]
mod tests {
    use super::*;

    #[test]
    fn the_interval_rule_has_three_outcomes() {
        let v = |lo, hi| interval_rule((lo, hi), 0.05).unwrap();
        assert_eq!(v(0.97, 1.03), Verdict::Equivalent);
        assert_eq!(v(0.95, 1.05), Verdict::Equivalent);
        assert_eq!(v(0.94, 1.01), Verdict::Inconclusive);
        assert_eq!(v(0.90, 0.949), Verdict::NotEquivalent);
        assert_eq!(v(1.051, 1.2), Verdict::NotEquivalent);
        assert!(interval_rule((f64::NAN, 1.0), 0.05).is_err());
        assert!(interval_rule((1.1, 1.0), 0.05).is_err());
    }

    #[test]
    fn too_few_or_bad_values_are_refused() {
        assert!(mean_interval(&[1.0], 0.95).is_err());
        assert!(mean_interval(&[1.0, f64::INFINITY], 0.95).is_err());
        assert!(variation(&[1.0, -1.0]).is_err());
    }
}
