//! The CPU accounting identity, whole (study "Benchmarking Post-Quantum Key Encapsulation
//! in S3-Compatible Object Storage under Client Concurrency", sections IV-C and V-C,
//! Table XV).
//!
//! For one run, throughput is the client cores it used divided by the client CPU each
//! request took: `T = U / C` (requests/s = core-seconds/s ÷ core-seconds per request). For
//! the pairs `i = 1..n` of a comparison (the blocks holding both mode *m* and baseline
//! *b*), with
//!
//! - `d_obs = ln(T_m / T_b)` (the observed throughput ratio),
//! - `d_cpu = ln(C_m / C_b)` (the CPU-per-request ratio, Table XIII's column),
//! - `d_cores = ln(U_m / U_b)` (the cores-used ratio),
//!
//! the identity reads `d_obs = d_cores − d_cpu` pair by pair, up to how the three were
//! measured (windows, sampling). Each term is summarised as a
//! [`RatioInterval`] (ratio `exp(d̄)`, 90 % and 95 % t
//! intervals, p of `d̄ = 0`) from its own per-pair log ratios:
//!
//! | field | per-pair log ratio | meaning |
//! |---|---|---|
//! | `observed` | `d_obs` | throughput ratio |
//! | `cpu` | `d_cpu` | CPU per request ratio (also TOST at the margin: `cpu_tost_p`) |
//! | `cores` | `d_cores` | cores-used ratio |
//! | `implied_equal_cores` | `−d_cpu` | `1 / CPU ratio`, the throughput ratio the CPU implies if both modes use the same cores (Table XV, "implied by CPU") |
//! | `implied` | `d_cores − d_cpu` | `cores ratio / CPU ratio`, the throughput ratio the identity implies |
//! | `residual` | `d_obs − (d_cores − d_cpu)` | `observed ÷ implied`: 1 if the accounting is complete |
//! | `gap` | `d_obs + d_cpu` | `observed ÷ implied_equal_cores`: 1 if the CPU ratio alone carries the throughput ratio |
//!
//! Two judgements at a tolerance τ: the identity `holds` if the residual's 90 % interval
//! lies inside `[1 − τ, 1 + τ]`; `cpu_predicts_throughput` if the gap's 90 % interval does.
//! The second is the case the study's migration procedure rests on: with equal cores (a
//! saturated client, section V-C at 500 workers) the CPU ratio alone predicts the
//! throughput ratio, which turns a migration question into a CPU measurement. Where the
//! costlier mode uses more cores (128 workers), the identity still holds but the gap is not
//! 1: the equal-cores reading "overstates the loss" (section V-C).
//!
//! Both come from the same runs, so neither is a prediction in the statistical sense
//! (section IV-C): the identity becomes one only when applied to data it was not computed
//! from.

use serde::{Deserialize, Serialize};

use crate::paired::{Paired, RatioInterval, log_ratios};
use crate::{Error, Result, check_prob};

/// One pair (block) of runs: `(mode, baseline)` of each measure, all positive and finite.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdentityPair {
    /// Throughput `T` (successful requests per second).
    pub throughput: (f64, f64),
    /// Client CPU per request `C` (any unit, the same for both).
    pub cpu_per_request: (f64, f64),
    /// Client cores used `U` over the measured window.
    pub cores_used: (f64, f64),
}

/// The identity's terms and judgements for one comparison (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Identity {
    /// Throughput ratio, from `d_obs`.
    pub observed: RatioInterval,
    /// CPU-per-request ratio, from `d_cpu` (Table XIII's column).
    pub cpu: RatioInterval,
    /// TOST p of `d_cpu` at the margin (unadjusted).
    pub cpu_tost_p: f64,
    /// Cores-used ratio, from `d_cores`.
    pub cores: RatioInterval,
    /// `1 / CPU ratio`, from `−d_cpu`: the throughput ratio implied by CPU alone if both
    /// modes use the same cores (Table XV, "implied by CPU").
    pub implied_equal_cores: RatioInterval,
    /// `cores ratio / CPU ratio`, from `d_cores − d_cpu`: the throughput ratio the identity
    /// implies.
    pub implied: RatioInterval,
    /// `observed ÷ implied`, from `d_obs − (d_cores − d_cpu)`.
    pub residual: RatioInterval,
    /// `observed ÷ implied_equal_cores`, from `d_obs + d_cpu`.
    pub gap: RatioInterval,
    /// The residual's 90 % interval lies inside `[1 − tolerance, 1 + tolerance]`.
    pub holds: bool,
    /// The gap's 90 % interval lies inside `[1 − tolerance, 1 + tolerance]`: with equal
    /// cores the CPU ratio alone carries the throughput ratio (the safe case for turning a
    /// migration question into a CPU measurement).
    pub cpu_predicts_throughput: bool,
}

/// Applies the identity to `pairs` (at least two): every term's [`RatioInterval`], the TOST
/// p of the CPU ratio at `margin` and the two judgements at `tolerance` (both in (0, 1)).
/// A non-positive or non-finite measurement is a domain error.
pub fn identity(pairs: &[IdentityPair], margin: f64, tolerance: f64) -> Result<Identity> {
    if pairs.len() < 2 {
        return Err(Error::TooFewPairs {
            what: "the CPU accounting identity",
            need: 2,
            got: pairs.len(),
        });
    }
    let tolerance = check_prob("identity tolerance", tolerance)?;
    let of =
        |f: fn(&IdentityPair) -> (f64, f64)| log_ratios(&pairs.iter().map(f).collect::<Vec<_>>());
    let d_obs = of(|p| p.throughput)?;
    let d_cpu = of(|p| p.cpu_per_request)?;
    let d_cores = of(|p| p.cores_used)?;
    let combine = |f: fn(f64, f64, f64) -> f64| -> Vec<f64> {
        d_obs
            .iter()
            .zip(&d_cpu)
            .zip(&d_cores)
            .map(|((&obs, &cpu), &cores)| f(obs, cpu, cores))
            .collect()
    };
    let residual = RatioInterval::of(&combine(|obs, cpu, cores| obs - (cores - cpu)))?;
    let gap = RatioInterval::of(&combine(|obs, cpu, _| obs + cpu))?;
    let inside = |ci: (f64, f64)| ci.0 >= 1.0 - tolerance && ci.1 <= 1.0 + tolerance;
    Ok(Identity {
        observed: RatioInterval::of(&d_obs)?,
        cpu: RatioInterval::of(&d_cpu)?,
        cpu_tost_p: Paired::from_log_ratios(&d_cpu)?.tost(margin)?.p,
        cores: RatioInterval::of(&d_cores)?,
        implied_equal_cores: RatioInterval::of(&combine(|_, cpu, _| -cpu))?,
        implied: RatioInterval::of(&combine(|_, cpu, cores| cores - cpu))?,
        holds: inside(residual.ci90),
        cpu_predicts_throughput: inside(gap.ci90),
        residual,
        gap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs with `T = U / C` exactly per run (up to rounding).
    fn exact(cores_factor: f64) -> Vec<IdentityPair> {
        (0..8)
            .map(|i| {
                let i = f64::from(i);
                let (c_m, c_b) = (1.79e-3 * (1.0 + 0.003 * i), 1.71e-3 * (1.0 - 0.002 * i));
                let (u_m, u_b) = (15.9 * cores_factor * (1.0 + 0.001 * i), 15.9);
                IdentityPair {
                    throughput: (u_m / c_m, u_b / c_b),
                    cpu_per_request: (c_m, c_b),
                    cores_used: (u_m, u_b),
                }
            })
            .collect()
    }

    #[test]
    fn an_exact_identity_leaves_no_residual() {
        for factor in [1.0, 1.05] {
            let id = identity(&exact(factor), 0.05, 0.01).expect("identity");
            let r = id.residual;
            assert!((r.ratio - 1.0).abs() < 1e-12, "{r:?}");
            assert!((r.ci90.0 - 1.0).abs() < 1e-12 && (r.ci90.1 - 1.0).abs() < 1e-12);
            assert!(id.holds);
            assert!((id.implied.ratio / id.observed.ratio - 1.0).abs() < 1e-12);
            assert!((id.implied_equal_cores.ratio * id.cpu.ratio - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn equal_cores_make_the_cpu_ratio_carry_the_throughput_ratio() {
        let id = identity(&exact(1.0), 0.05, 0.01).expect("identity");
        let mut pairs = exact(1.0);
        for p in &mut pairs {
            p.cores_used.0 = p.cores_used.1;
            p.throughput.0 = p.cores_used.0 / p.cpu_per_request.0;
        }
        let eq = identity(&pairs, 0.05, 0.01).expect("equal cores");
        assert!((eq.gap.ratio - 1.0).abs() < 1e-12, "{:?}", eq.gap);
        assert!(eq.cpu_predicts_throughput && eq.holds);
        assert!((eq.cores.ratio - 1.0).abs() < 1e-15);
        // Cores differing by ~0.35 % on average (exact(1.0) lets U_m drift up): the gap is
        // the cores ratio.
        assert!((id.gap.ratio / id.cores.ratio - 1.0).abs() < 1e-12);
        // 5 % more cores: the identity holds, the equal-cores reading does not.
        let more = identity(&exact(1.05), 0.05, 0.01).expect("more cores");
        assert!(more.holds && !more.cpu_predicts_throughput, "{more:?}");
        // The CPU ratio is ~1.065, outside the 5 % margin, so TOST cannot reject.
        assert!(more.cpu.ratio > 1.04 && more.cpu_tost_p > 0.5);
    }

    #[test]
    fn bad_input_is_refused() {
        let pairs = exact(1.0);
        assert!(matches!(
            identity(&pairs[..1], 0.05, 0.01),
            Err(Error::TooFewPairs { got: 1, .. })
        ));
        let mut bad = pairs.clone();
        bad[3].cores_used.1 = 0.0;
        assert!(matches!(
            identity(&bad, 0.05, 0.01),
            Err(Error::Domain { .. })
        ));
        bad[3].cores_used.1 = f64::NAN;
        assert!(identity(&bad, 0.05, 0.01).is_err());
        assert!(identity(&pairs, 0.05, 0.0).is_err());
        assert!(identity(&pairs, 1.5, 0.01).is_err());
    }
}
