//! # stats: the statistics of a pqbench campaign
//!
//! A pure crate (no I/O, no async runtime) implementing every statistic of the study
//! "Benchmarking Post-Quantum Key Encapsulation in S3-Compatible Object Storage under
//! Client Concurrency", sections IV-B, IV-C and V, in the exact form pqbench's issue 5
//! fixes (and `pqbench analyze` prints):
//!
//! - [`paired`]: pairs are the blocks of a cell that hold both mode *m* and baseline *b*;
//!   `dᵢ = ln(T_m,i / T_b,i)`, mean, sd (n−1), `se = s/√n`, `df = n−1`; the ratio
//!   `exp(d̄)` with t intervals; TOST at a margin; the verdict and the deficit/advantage
//!   flags; the percentile bootstrap of `d̄`; the p of `d̄ = 0` and the ratio summary of
//!   secondary endpoints; paired differences (section IV-C, Tables XIII and XVI).
//! - [`identity`]: the CPU accounting identity, throughput = cores used / CPU per request,
//!   with every term's paired ratio, its residual and the equal-cores gap (sections IV-C,
//!   V-C, Table XV).
//! - [`attribution`]: the share of a deficit a control accounts for, with its bootstrap
//!   interval over blocks (section V-C).
//! - [`multiplicity`]: Holm over the primary family, Benjamini–Hochberg for exploratory
//!   tables (section IV-C).
//! - [`power`]: repetitions needed for a given power (section IV-C, normal approximation).
//! - [`regime`]: the stall rule, the saturation criterion, the equal-cores CPU ratio and
//!   the open-loop knee, interpolated (sections IV-C, V-B, V-C).
//! - [`queueing`]: the knee an M/M/c pool sized by Little's law predicts (Erlang C).
//! - [`regression`]: ordinary least squares as statsmodels' OLS, for the order-and-time
//!   regression (section VI).
//! - [`storage`]: manifest overhead per object and per billion objects against the S3
//!   user-metadata limit (section V-E).
//! - [`contingency`]: Fisher's exact test (two-sided) on a 2×2 table, the check that a
//!   comparison's two arms lose runs to invalidity at the same rate.
//! - [`describe`]: one arm's absolute figures, unpaired: a mean with its t interval, the
//!   coefficient of variation, and the original interval rule (sections V-A, VI, Table
//!   XIV).
//! - [`dist`]: the Student t and normal distributions these use.
//!
//! Every function is cross-checked against SciPy/statsmodels in `tests/oracle.rs`, with
//! the reference values produced by `tests/oracle/generate.py`.

pub mod attribution;
pub mod contingency;
pub mod describe;
pub mod dist;
pub mod identity;
pub mod multiplicity;
pub mod paired;
pub mod power;
pub mod queueing;
pub mod regime;
pub mod regression;
pub mod storage;

pub use paired::{Comparison, Paired, Verdict};

/// What can go wrong in a statistic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Fewer pairs than the statistic needs.
    #[error("{what} needs at least {need} pairs, got {got}")]
    TooFewPairs {
        /// The statistic.
        what: &'static str,
        /// Pairs needed.
        need: usize,
        /// Pairs given.
        got: usize,
    },
    /// Fewer runs than an unpaired statistic of one arm needs.
    #[error("{what} needs at least {need} runs, got {got}")]
    TooFewRuns {
        /// The statistic.
        what: &'static str,
        /// Runs needed.
        need: usize,
        /// Runs given.
        got: usize,
    },
    /// A value outside the statistic's domain (a non-positive throughput, a NaN, a
    /// probability outside (0, 1), a margin outside (0, 1)).
    #[error("{what} must be {allowed}, got {value}")]
    Domain {
        /// The argument.
        what: &'static str,
        /// What is allowed.
        allowed: &'static str,
        /// The value given.
        value: f64,
    },
    /// A least-squares design without full column rank (a column that is a linear
    /// combination of the ones before it, or no more observations than columns).
    #[error("{what} is singular: {reason}")]
    Singular {
        /// The statistic.
        what: &'static str,
        /// Why, naming the offending column where there is one.
        reason: String,
    },
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn check_prob(what: &'static str, p: f64) -> Result<f64> {
    if p > 0.0 && p < 1.0 {
        Ok(p)
    } else {
        Err(Error::Domain {
            what,
            allowed: "within (0, 1)",
            value: p,
        })
    }
}

/// A uniform index in `0..n` from 64 bits of `rng` by multiply-shift (bias below n/2⁶⁴).
/// Written out, rather than taken from `rand`, so that seeded results (the bootstrap, a
/// campaign's design) depend on nothing but the seed. `n` must be positive.
pub fn uniform_below(rng: &mut rand_chacha::ChaCha8Rng, n: usize) -> usize {
    use rand_core::Rng as _;
    let n = u128::try_from(n).unwrap_or(u128::MAX);
    usize::try_from((u128::from(rng.next_u64()) * n) >> 64).unwrap_or(0)
}

/// The median (mean of the two middle values for an even count; NaN-free input assumed,
/// as NumPy's `median`). `None` for an empty slice.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    })
}

/// NumPy's default (`method="linear"`) percentile of sorted values, `q` in [0, 1]: the value
/// at position `q·(n−1)`, interpolated linearly between neighbours. 0 for no values (a run
/// summary reports an empty distribution as zeros).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return 0.0;
    };
    let pos = q * paired::as_f64(last);
    let lo = pos.floor();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "pos is within [0, len − 1]"
    )]
    let i = lo as usize;
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + (next - sorted[i]) * (pos - lo),
        None => sorted[i],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn percentiles_match_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4, 10], [0, 50, 90, 99, 100]) = [1, 3, 7.6, 9.76, 10]
        let v = [1.0, 2.0, 3.0, 4.0, 10.0];
        for (q, want) in [
            (0.0, 1.0),
            (0.5, 3.0),
            (0.9, 7.6),
            (0.99, 9.76),
            (1.0, 10.0),
        ] {
            assert!((super::percentile(&v, q) - want).abs() < 1e-12, "q = {q}");
        }
        assert_eq!(super::percentile(&[7.0], 0.3), 7.0);
        assert_eq!(super::percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn median_matches_numpy() {
        assert_eq!(super::median(&[]), None);
        assert_eq!(super::median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(super::median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
