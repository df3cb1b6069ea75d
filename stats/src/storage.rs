//! Storage overhead of the manifest (study section V-E): the bytes each mode stores with
//! every object beyond the data, the difference to the baseline, what that is per billion
//! objects, and whether the manifest would fit Amazon S3's user-defined metadata.
//!
//! **As S3 counts it.** Amazon S3 limits user-defined metadata to 2 KB, "measured by taking
//! the sum of the number of bytes in the UTF-8 encoding of each key and value" (the key
//! without its `x-amz-meta-` prefix). A manifest carried in metadata would be one entry,
//! [`MANIFEST_METADATA_KEY`] with the manifest's JSON text as its value, so S3 counts
//! `16 + manifest bytes` ([`s3_user_metadata_bytes`]), and that is what the limit check
//! compares. (A manifest whose object key holds non-ASCII characters would need RFC 2047
//! encoding in an HTTP header, which is longer still.)
//!
//! **Where the bytes go** ([`breakdown`]): the key-establishment ciphertext itself, what
//! its base64 encoding adds, and the fixed fields (identity, context, hashes, salt,
//! nonce prefix, JSON syntax).

use serde::{Deserialize, Serialize};

/// Amazon S3 limits user-defined metadata to 2 KB (2,048 bytes of keys and values).
pub const S3_USER_METADATA_LIMIT: u64 = 2048;

/// The user-metadata key a metadata-carried manifest would use (`x-amz-meta-pqbench-manifest`).
pub const MANIFEST_METADATA_KEY: &str = "pqbench-manifest";

/// The user-metadata key of a format-v2 header in placement metadata (`x-amz-meta-pqbench-v2`,
/// `envelope/FORMAT-v2.md` §2): its value is the base64 of the binary header.
pub const V2_METADATA_KEY: &str = "pqbench-v2";

/// The bytes S3 counts against its user-metadata limit for `entries` (key without the
/// `x-amz-meta-` prefix, value length in UTF-8 bytes).
pub fn s3_user_metadata_bytes(entries: &[(&str, u64)]) -> u64 {
    entries
        .iter()
        .map(|(k, v)| {
            u64::try_from(k.len())
                .unwrap_or(u64::MAX)
                .saturating_add(*v)
        })
        .fold(0, u64::saturating_add)
}

/// Where a manifest's bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breakdown {
    /// The key-establishment ciphertext's own bytes (e.g. 1,088 for ML-KEM-768).
    pub ciphertext: u64,
    /// What its base64 encoding adds: `4·⌈n/3⌉ − n`.
    pub encoding: u64,
    /// Everything else: identity, context, hashes, salt, nonce prefix, JSON syntax.
    pub fixed: u64,
}

/// Splits `manifest_bytes` for a mode whose ciphertext is `ciphertext_len` bytes.
pub fn breakdown(manifest_bytes: u64, ciphertext_len: u64) -> Breakdown {
    let encoding = ciphertext_len.div_ceil(3) * 4 - ciphertext_len;
    Breakdown {
        ciphertext: ciphertext_len,
        encoding,
        fixed: manifest_bytes.saturating_sub(ciphertext_len + encoding),
    }
}

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
    /// What S3 would count for the manifest carried as user metadata: the entry
    /// [`MANIFEST_METADATA_KEY`] with the manifest as its value.
    pub s3_metadata_bytes: u64,
    /// Whether that exceeds S3's 2 KB user-metadata limit (it could not be stored as
    /// metadata and needs its own object, as pqbench's format 1 does).
    pub over_s3_metadata_limit: bool,
}

/// Splits a format-v2 header of `header_bytes` with one recipient whose `enc` is
/// `ciphertext_len` bytes: binary, so no encoding; the rest is the fixed part and the
/// entry's key id, lengths and wrapped data key.
pub fn breakdown_v2(header_bytes: u64, ciphertext_len: u64) -> Breakdown {
    Breakdown {
        ciphertext: ciphertext_len,
        encoding: 0,
        fixed: header_bytes.saturating_sub(ciphertext_len),
    }
}

/// The overhead of a format-v2 header of `header_bytes` against a baseline of
/// `baseline_bytes`: as [`overhead`], with S3's count that of the entry
/// [`V2_METADATA_KEY`] holding `b64(header)`, `10 + 4·⌈h/3⌉`.
pub fn overhead_v2(header_bytes: u64, baseline_bytes: u64) -> Overhead {
    let mut o = overhead(header_bytes, baseline_bytes);
    o.s3_metadata_bytes =
        s3_user_metadata_bytes(&[(V2_METADATA_KEY, header_bytes.div_ceil(3) * 4)]);
    o.over_s3_metadata_limit = o.s3_metadata_bytes > S3_USER_METADATA_LIMIT;
    o
}

/// The overhead of a manifest of `manifest_bytes` against a baseline of `baseline_bytes`.
pub fn overhead(manifest_bytes: u64, baseline_bytes: u64) -> Overhead {
    const BILLION: f64 = 1e9;
    const TB: f64 = 1e12;
    const TIB: f64 = 1_099_511_627_776.0;
    #[allow(clippy::cast_precision_loss, reason = "manifests are a few KiB")]
    let (m, b) = (manifest_bytes as f64, baseline_bytes as f64);
    let extra = m - b;
    let s3 = s3_user_metadata_bytes(&[(MANIFEST_METADATA_KEY, manifest_bytes)]);
    Overhead {
        manifest_bytes,
        extra_bytes_vs_baseline: i64::try_from(manifest_bytes).unwrap_or(i64::MAX)
            - i64::try_from(baseline_bytes).unwrap_or(i64::MAX),
        per_billion_tb: m * BILLION / TB,
        per_billion_tib: m * BILLION / TIB,
        extra_per_billion_tb: extra * BILLION / TB,
        extra_per_billion_tib: extra * BILLION / TIB,
        s3_metadata_bytes: s3,
        over_s3_metadata_limit: s3 > S3_USER_METADATA_LIMIT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_headers_as_s3_counts_them() {
        // FORMAT-v2.md §8: ML-KEM-768, one recipient: 91 + 86 + 1,088 = 1,265 bytes,
        // base64 1,688, plus the 10-byte key: 1,698 ≤ 2,048. ML-KEM-1024: 1,745 bytes,
        // 2,338 > 2,048. The largest header that fits is 1,527 bytes.
        let o = overhead_v2(1265, 0);
        assert_eq!(o.s3_metadata_bytes, 1698);
        assert!(!o.over_s3_metadata_limit);
        assert!(overhead_v2(1745, 0).over_s3_metadata_limit);
        assert!(!overhead_v2(1527, 0).over_s3_metadata_limit);
        assert!(overhead_v2(1528, 0).over_s3_metadata_limit);
        let b = breakdown_v2(1265, 1088);
        assert_eq!((b.ciphertext, b.encoding, b.fixed), (1088, 0, 177));
    }

    #[test]
    fn study_figures() {
        // Section V-E: ML-KEM-768 stores 1,056 bytes more per object than an X25519 key,
        // i.e. 1.056 TB per billion objects.
        let o = overhead(2000 + 1056, 2000);
        assert_eq!(o.extra_bytes_vs_baseline, 1056);
        assert!((o.extra_per_billion_tb - 1.056).abs() < 1e-12);
        assert!((o.extra_per_billion_tib - 1056e9 / 1_099_511_627_776.0).abs() < 1e-12);
        assert!(o.over_s3_metadata_limit);
        // S3 counts the key name too: 2,032 manifest bytes are exactly at the limit.
        assert_eq!(overhead(2032, 0).s3_metadata_bytes, 2048);
        assert!(!overhead(2032, 0).over_s3_metadata_limit);
        assert!(overhead(2033, 0).over_s3_metadata_limit);
        assert_eq!(overhead(600, 700).extra_bytes_vs_baseline, -100);
    }

    #[test]
    fn breakdown_of_an_ml_kem_768_manifest() {
        // 1,088 bytes of ciphertext are 1,452 base64 characters: 364 added by the encoding.
        let b = breakdown(1999, 1088);
        assert_eq!((b.ciphertext, b.encoding, b.fixed), (1088, 364, 547));
        assert_eq!(
            breakdown(600, 0),
            Breakdown {
                ciphertext: 0,
                encoding: 0,
                fixed: 600
            }
        );
        assert_eq!(s3_user_metadata_bytes(&[("a", 3), ("bc", 0)]), 6);
    }
}
