//! Repetitions needed for an equivalence test (study section IV-C: "a normal-approximation
//! calculation at α = 0.05/8 and power 0.8").
//!
//! For TOST when the true ratio is 1, with paired log-ratio standard deviation σ (from a
//! pilot, or from the comparison itself), margin δ and a family of k comparisons:
//!
//! `n = ((z₁₋α/k + z₁₋β/2) · σ / Δ)²`, `Δ = ln(1 + δ)`, `β = 1 − power`,
//!
//! rounded up and at least 2. `Δ` is the nearer of the two log bounds (`|ln(1 − δ)| >
//! ln(1 + δ)`), and each one-sided test gets β/2, the usual conservative approximation.

use serde::{Deserialize, Serialize};

use crate::dist::norm_ppf;
use crate::{Error, Result, check_prob};

/// The result of [`repetitions_needed`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Repetitions {
    /// The unrounded `n` of the formula.
    pub exact: f64,
    /// `max(2, ⌈exact⌉)`.
    pub needed: u32,
}

/// Repetitions (pairs) for `power` at α/`family` and margin δ given the paired sd.
pub fn repetitions_needed(
    sd: f64,
    margin: f64,
    alpha: f64,
    family: usize,
    power: f64,
) -> Result<Repetitions> {
    if !(sd.is_finite() && sd >= 0.0) {
        return Err(Error::Domain {
            what: "paired standard deviation",
            allowed: "finite and non-negative",
            value: sd,
        });
    }
    let margin = check_prob("margin", margin)?;
    let power = check_prob("power", power)?;
    #[allow(clippy::cast_precision_loss, reason = "family sizes are small")]
    let a = check_prob("alpha", alpha)? / family.max(1) as f64;
    let z = norm_ppf(1.0 - a)? + norm_ppf(1.0 - (1.0 - power) / 2.0)?;
    let exact = (z * sd / (1.0 + margin).ln()).powi(2);
    let needed = if exact > f64::from(u32::MAX) {
        u32::MAX
    } else {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "range checked above"
        )]
        let n = exact.ceil() as u32;
        n.max(2)
    };
    Ok(Repetitions { exact, needed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_sd_and_family() {
        let a = repetitions_needed(0.02, 0.05, 0.05, 1, 0.8).expect("a");
        let b = repetitions_needed(0.02, 0.05, 0.05, 8, 0.8).expect("b");
        let c = repetitions_needed(0.04, 0.05, 0.05, 8, 0.8).expect("c");
        assert!(a.needed <= b.needed && b.needed < c.needed);
        assert!((c.exact / b.exact - 4.0).abs() < 1e-12);
        assert_eq!(
            repetitions_needed(0.0, 0.05, 0.05, 8, 0.8)
                .expect("z")
                .needed,
            2
        );
        assert!(repetitions_needed(-1.0, 0.05, 0.05, 8, 0.8).is_err());
    }
}
