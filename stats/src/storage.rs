//! Storage overhead of the manifest (study section V-E): the bytes each mode stores with
//! every object beyond the data, the difference to the baseline, what that is per billion
//! objects, and whether the manifest would fit Amazon S3's user-defined metadata.

use serde::{Deserialize, Serialize};

/// Amazon S3 limits user-defined metadata to 2 KB (2,048 bytes of keys and values).
pub const S3_USER_METADATA_LIMIT: u64 = 2048;

/// One mode's storage overhead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Manifest bytes per object.
    pub manifest_bytes: u64,
    /// `manifest_bytes` minus the baseline's (negative if smaller).
    pub extra_bytes_vs_baseline: i64,
    /// Manifest bytes for 10⁹ objects in decimal terabytes (10¹² bytes).
    pub per_billion_tb: f64,
    /// The same in tebibytes (2⁴⁰ bytes).
    pub per_billion_tib: f64,
    /// Extra bytes vs the baseline for 10⁹ objects, in decimal terabytes.
    pub extra_per_billion_tb: f64,
    /// Extra bytes vs the baseline for 10⁹ objects, in tebibytes.
    pub extra_per_billion_tib: f64,
    /// Whether the manifest exceeds S3's 2 KB user-metadata limit (it could not be stored
    /// as metadata and needs its own object, as pqbench does).
    pub over_s3_metadata_limit: bool,
}

/// The overhead of a manifest of `manifest_bytes` against a baseline of `baseline_bytes`.
pub fn overhead(manifest_bytes: u64, baseline_bytes: u64) -> Overhead {
    const BILLION: f64 = 1e9;
    const TB: f64 = 1e12;
    const TIB: f64 = 1_099_511_627_776.0;
    #[allow(clippy::cast_precision_loss, reason = "manifests are a few KiB")]
    let (m, b) = (manifest_bytes as f64, baseline_bytes as f64);
    let extra = m - b;
    Overhead {
        manifest_bytes,
        extra_bytes_vs_baseline: i64::try_from(manifest_bytes).unwrap_or(i64::MAX)
            - i64::try_from(baseline_bytes).unwrap_or(i64::MAX),
        per_billion_tb: m * BILLION / TB,
        per_billion_tib: m * BILLION / TIB,
        extra_per_billion_tb: extra * BILLION / TB,
        extra_per_billion_tib: extra * BILLION / TIB,
        over_s3_metadata_limit: manifest_bytes > S3_USER_METADATA_LIMIT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn study_figures() {
        // Section V-E: ML-KEM-768 stores 1,056 bytes more per object than an X25519 key,
        // i.e. 1.056 TB per billion objects.
        let o = overhead(2000 + 1056, 2000);
        assert_eq!(o.extra_bytes_vs_baseline, 1056);
        assert!((o.extra_per_billion_tb - 1.056).abs() < 1e-12);
        assert!((o.extra_per_billion_tib - 1056e9 / 1_099_511_627_776.0).abs() < 1e-12);
        assert!(o.over_s3_metadata_limit);
        assert!(!overhead(2048, 0).over_s3_metadata_limit);
        assert_eq!(overhead(600, 700).extra_bytes_vs_baseline, -100);
    }
}
