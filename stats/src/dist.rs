//! The Student t and standard normal distributions the tests of section IV-C use.
//!
//! CDFs come from `statrs` (regularized incomplete beta and the error function). Quantiles
//! start from `statrs`' inverse and are polished by Newton steps on the CDF, so that they
//! agree with SciPy's `t.ppf` / `norm.ppf` to about 1e-12 relative (checked in
//! `tests/oracle.rs`).

use statrs::distribution::{Continuous, ContinuousCDF, Normal, StudentsT};

use crate::{Error, Result, check_prob};

fn student(df: f64) -> Result<StudentsT> {
    if !(df.is_finite() && df > 0.0) {
        return Err(Error::Domain {
            what: "degrees of freedom",
            allowed: "a positive finite number",
            value: df,
        });
    }
    StudentsT::new(0.0, 1.0, df).map_err(|_| Error::Domain {
        what: "degrees of freedom",
        allowed: "a positive finite number",
        value: df,
    })
}

fn std_normal() -> Normal {
    // Mean 0, sd 1 is always a valid normal distribution.
    Normal::standard()
}

/// Student t CDF `F(x; df)`.
pub fn t_cdf(x: f64, df: f64) -> Result<f64> {
    Ok(student(df)?.cdf(x))
}

/// Student t quantile: the `x` with `F(x; df) = p`.
pub fn t_ppf(p: f64, df: f64) -> Result<f64> {
    quantile(&student(df)?, check_prob("probability", p)?)
}

/// Standard normal CDF.
pub fn norm_cdf(x: f64) -> f64 {
    std_normal().cdf(x)
}

/// Standard normal quantile.
pub fn norm_ppf(p: f64) -> Result<f64> {
    quantile(&std_normal(), check_prob("probability", p)?)
}

/// The quantile of a distribution symmetric about 0, computed in the lower tail (where the
/// CDF keeps full relative precision) and polished by Newton steps on the CDF.
fn quantile<D: ContinuousCDF<f64, f64> + Continuous<f64, f64>>(d: &D, p: f64) -> Result<f64> {
    let (q, upper) = if p > 0.5 { (1.0 - p, true) } else { (p, false) };
    if q == 0.5 {
        return Ok(0.0);
    }
    let mut x = d.inverse_cdf(q);
    for _ in 0..8 {
        let step = (d.cdf(x) - q) / d.pdf(x);
        if !step.is_finite() {
            break;
        }
        x -= step;
        if step.abs() <= 1e-15 * x.abs() {
            break;
        }
    }
    Ok(if upper { -x } else { x })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_and_known_values() {
        // t_{0.975, 9} = 2.2621571627409915 (SciPy), z_{0.975} = 1.959963984540054; statrs'
        // incomplete beta is good to about 1e-12 absolute, so the quantile to ~1e-11.
        let t = t_ppf(0.975, 9.0).expect("t");
        assert!((t / 2.262_157_162_740_991_5 - 1.0).abs() < 1e-9, "{t}");
        assert!((t_ppf(0.025, 9.0).expect("t") + t).abs() < 1e-12);
        let z = norm_ppf(0.975).expect("z");
        assert!((z / 1.959_963_984_540_054 - 1.0).abs() < 1e-9, "{z}");
        assert_eq!(t_ppf(0.5, 3.0).expect("median"), 0.0);
        assert!(t_ppf(1.0, 3.0).is_err());
        assert!(t_cdf(0.0, 0.0).is_err());
    }
}
