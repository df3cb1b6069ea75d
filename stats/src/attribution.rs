//! Control attribution: how much of a deficit a control accounts for (study "Benchmarking
//! Post-Quantum Key Encapsulation in S3-Compatible Object Storage under Client
//! Concurrency", section V-C: "the larger manifest accounts for 17 % of the deficit (90 %
//! CI 14–21 %)").
//!
//! In Control-Manifest, mode C2 is the baseline B2 (X25519) with a manifest padded to the
//! size of P1's (ML-KEM-768). Over the same blocks `i = 1..n`, with `T` the throughput of a
//! run:
//!
//! - `d_pb,i = ln(T_P1,i / T_B2,i)`: the whole deficit of P1;
//! - `d_pc,i = ln(T_P1,i / T_C2,i)`: what is left of it once the manifest is as large;
//! - the share of the deficit the manifest accounts for,
//!   `share = 1 − mean(d_pc) / mean(d_pb)` (the ratios 0.967 and 0.960 give 0.178);
//! - its 90 % percentile bootstrap interval over blocks: `resamples` resamples of the
//!   block indices with replacement (the same indices for both series, which keeps the
//!   pairing of a block's runs), ChaCha8 seeded as [`crate::paired::bootstrap_interval`],
//!   the share of each resample, and the 5th and 95th percentiles with linear
//!   interpolation (NumPy's default, SciPy's `bootstrap(..., paired=True,
//!   method="percentile")`). A resample whose mean `d_pb` is exactly 0 has no share and is
//!   skipped.
//!
//! The share is undefined without a deficit: a mean `d_pb` within 1e-12 of 0 is a domain
//! error.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng as _;
use serde::{Deserialize, Serialize};

use crate::paired::as_f64;
use crate::{Error, Result};

/// The bootstrap interval's level.
const LEVEL: f64 = 0.90;

/// A mean `d_pb` closer to 0 than this leaves the share undefined.
const NO_DEFICIT: f64 = 1e-12;

/// The share of a deficit a control accounts for ([`manifest_share`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Number of blocks.
    pub n: usize,
    /// `1 − mean(d_pc) / mean(d_pb)`.
    pub share: f64,
    /// 90 % percentile bootstrap interval of the share over blocks; `None` if fewer than
    /// two resamples had a nonzero mean `d_pb`.
    pub ci90: Option<(f64, f64)>,
    /// The whole deficit as a ratio, `exp(mean d_pb)` (P1/B2).
    pub deficit_ratio: f64,
    /// What is left with the control, `exp(mean d_pc)` (P1/C2).
    pub residual_ratio: f64,
}

/// The share of the deficit `d_pb` (per-block `ln(T_P1/T_B2)`) that the control accounts
/// for, given the per-block `d_pc = ln(T_P1/T_C2)` over the same blocks, with its 90 %
/// bootstrap interval from `resamples` resamples seeded by `seed` (module docs).
///
/// Errors: series of different lengths, a non-finite value, fewer than 2 resamples or a
/// mean `d_pb` within 1e-12 of 0 ([`Error::Domain`]); fewer than two blocks
/// ([`Error::TooFewPairs`]).
pub fn manifest_share(d_pc: &[f64], d_pb: &[f64], resamples: u32, seed: u64) -> Result<Share> {
    if d_pc.len() != d_pb.len() {
        return Err(Error::Domain {
            what: "the number of blocks of d_pb (ln P1/B2)",
            allowed: "that of d_pc (ln P1/C2)",
            value: as_f64(d_pb.len()),
        });
    }
    let n = d_pc.len();
    if n < 2 {
        return Err(Error::TooFewPairs {
            what: "the control attribution",
            need: 2,
            got: n,
        });
    }
    if let Some(&bad) = d_pc.iter().chain(d_pb).find(|v| !v.is_finite()) {
        return Err(Error::Domain {
            what: "a log ratio",
            allowed: "finite",
            value: bad,
        });
    }
    if resamples < 2 {
        return Err(Error::Domain {
            what: "bootstrap resamples",
            allowed: "at least 2",
            value: f64::from(resamples),
        });
    }
    let nf = as_f64(n);
    let mean_pc = d_pc.iter().sum::<f64>() / nf;
    let mean_pb = d_pb.iter().sum::<f64>() / nf;
    if mean_pb.abs() <= NO_DEFICIT {
        return Err(Error::Domain {
            what: "the deficit (mean ln P1/B2)",
            allowed: "nonzero (further than 1e-12 from 0)",
            value: mean_pb,
        });
    }

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut shares: Vec<f64> = (0..resamples)
        .filter_map(|_| {
            let (mut pc, mut pb) = (0.0, 0.0);
            for _ in 0..n {
                let i = crate::uniform_below(&mut rng, n);
                pc += d_pc[i];
                pb += d_pb[i];
            }
            let (pc, pb) = (pc / nf, pb / nf);
            (pb != 0.0).then(|| 1.0 - pc / pb)
        })
        .collect();
    shares.sort_by(f64::total_cmp);
    let tail = (1.0 - LEVEL) / 2.0;
    let ci90 = (shares.len() >= 2).then(|| {
        (
            crate::percentile(&shares, tail),
            crate::percentile(&shares, 1.0 - tail),
        )
    });
    Ok(Share {
        n,
        share: 1.0 - mean_pc / mean_pb,
        ci90,
        deficit_ratio: mean_pb.exp(),
        residual_ratio: mean_pc.exp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_study_figure() {
        // Section V-C: P1/C2 0.967, P1/B2 0.960: the manifest accounts for 17.8 %.
        let pc = [0.967_f64.ln(); 4];
        let pb = [0.960_f64.ln(); 4];
        let s = manifest_share(&pc, &pb, 100, 1).expect("share");
        assert!((s.share - 0.178).abs() < 5e-4, "{s:?}");
        assert!((s.deficit_ratio - 0.960).abs() < 1e-12);
        assert!((s.residual_ratio - 0.967).abs() < 1e-12);
        // Constant series: every resample has the same share.
        let (lo, hi) = s.ci90.expect("interval");
        assert!((lo - s.share).abs() < 1e-12 && (hi - s.share).abs() < 1e-12);
    }

    #[test]
    fn seeded_interval_around_the_share() {
        let pc = [
            -0.031, -0.036, -0.033, -0.030, -0.035, -0.034, -0.032, -0.037,
        ];
        let pb = [
            -0.040, -0.042, -0.039, -0.041, -0.043, -0.038, -0.040, -0.044,
        ];
        let a = manifest_share(&pc, &pb, 4000, 7).expect("a");
        assert_eq!(a, manifest_share(&pc, &pb, 4000, 7).expect("b"));
        assert_ne!(a.ci90, manifest_share(&pc, &pb, 4000, 8).expect("c").ci90);
        let (lo, hi) = a.ci90.expect("interval");
        assert!(lo < a.share && a.share < hi, "{a:?}");
    }

    #[test]
    fn bad_input_is_refused() {
        let e = manifest_share(&[0.01, -0.01], &[0.02, -0.02], 100, 0).expect_err("no deficit");
        assert!(e.to_string().contains("the deficit (mean ln P1/B2)"), "{e}");
        assert!(manifest_share(&[0.01, 0.02], &[0.01], 100, 0).is_err());
        assert!(matches!(
            manifest_share(&[0.01], &[0.02], 100, 0),
            Err(Error::TooFewPairs { .. })
        ));
        assert!(manifest_share(&[0.01, f64::NAN], &[0.02, 0.03], 100, 0).is_err());
        assert!(manifest_share(&[0.01, 0.02], &[0.02, 0.03], 1, 0).is_err());
    }
}
