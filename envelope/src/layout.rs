//! Object layout in a bucket (DESIGN.md "Envelope format v1", study section III, Algorithm 1):
//! a version of `key` is stored as `<key>.pqcs/<version>/data.enc` followed by
//! `<key>.pqcs/<version>/manifest.json`. The manifest is written last and is the commit
//! record: a version without it does not exist for readers.
//!
//! Pure string functions shared by the local `seal`/`open` commands and the S3 object store.

use std::time::{Duration, SystemTime};

use crate::ctx::validate_version;

/// How far a version's UUIDv7 time may lie after the server's LastModified of its manifest
/// before the version counts as future-dated and is skipped when choosing the latest version
/// (FORMAT.md §1): 15 minutes, the clock skew S3 tolerates between a SigV4 request's time
/// and the server's. Format constant of the reading protocol.
pub const MAX_VERSION_SKEW: Duration = Duration::from_secs(15 * 60);

/// Suffix appended to an object key to form its version directory.
/// Format constant: changing it breaks existing objects.
pub const VERSIONS_SUFFIX: &str = ".pqcs";
/// Name of the ciphertext stream inside a version directory.
/// Format constant: changing it breaks existing objects.
pub const DATA_NAME: &str = "data.enc";
/// Name of the manifest (the commit record) inside a version directory.
/// Format constant: changing it breaks existing objects.
pub const MANIFEST_NAME: &str = "manifest.json";
/// Name of a format-v2 version's one object (FORMAT-v2.md §2).
/// Format constant: changing it breaks existing objects.
pub const OBJECT_V2_NAME: &str = "object.v2";

/// `<key>.pqcs/`: the prefix under which every version of `key` lives.
pub fn versions_prefix(key: &str) -> String {
    format!("{key}{VERSIONS_SUFFIX}/")
}

/// `<key>.pqcs/<version>/data.enc`.
pub fn data_key(key: &str, version: &str) -> String {
    format!("{key}{VERSIONS_SUFFIX}/{version}/{DATA_NAME}")
}

/// `<key>.pqcs/<version>/manifest.json`.
pub fn manifest_key(key: &str, version: &str) -> String {
    format!("{key}{VERSIONS_SUFFIX}/{version}/{MANIFEST_NAME}")
}

/// `<key>.pqcs/<version>/object.v2` (format v2: the whole version in one object).
pub fn object_v2_key(key: &str, version: &str) -> String {
    format!("{key}{VERSIONS_SUFFIX}/{version}/{OBJECT_V2_NAME}")
}

/// Which file of a version an S3 key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// `data.enc`.
    Data,
    /// `manifest.json`.
    Manifest,
    /// `object.v2` (format v2).
    ObjectV2,
}

/// A bucket key of the layout, split into its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutKey<'a> {
    /// The logical object key.
    pub key: &'a str,
    /// The version (a valid lowercase UUIDv7).
    pub version: &'a str,
    /// The file.
    pub part: Part,
}

/// Splits `<key>.pqcs/<version>/{data.enc|manifest.json|object.v2}`; `None` for any other bucket key
/// (foreign objects, malformed versions), so listings skip what pqbench did not write.
pub fn parse_key(s3_key: &str) -> Option<LayoutKey<'_>> {
    let (dir, file) = s3_key.rsplit_once('/')?;
    let part = match file {
        DATA_NAME => Part::Data,
        MANIFEST_NAME => Part::Manifest,
        OBJECT_V2_NAME => Part::ObjectV2,
        _ => return None,
    };
    let (versions, version) = dir.rsplit_once('/')?;
    let key = versions.strip_suffix(VERSIONS_SUFFIX)?;
    if key.is_empty() || validate_version(version).is_err() {
        return None;
    }
    Some(LayoutKey { key, version, part })
}

/// The writer's clock that a version carries: its UUIDv7 `unix_ts_ms` (the first 48 bits,
/// RFC 9562 §5.7), in milliseconds since the Unix epoch; `None` if `version` is not a valid
/// lowercase UUIDv7.
pub fn version_time_ms(version: &str) -> Option<u64> {
    validate_version(version).ok()?;
    let hex: String = version.chars().filter(|&c| c != '-').take(12).collect();
    u64::from_str_radix(&hex, 16).ok()
}

/// Whether a committed version is future-dated (FORMAT.md §1): its UUIDv7 time is more than
/// [`MAX_VERSION_SKEW`] after `committed_at`, the server's LastModified of its manifest, or
/// that time is unknown. Such a version is never chosen as the latest.
pub fn is_future_dated(version: &str, committed_at: Option<SystemTime>) -> bool {
    let (Some(ms), Some(at)) = (version_time_ms(version), committed_at) else {
        return true;
    };
    let Ok(since_epoch) = at.duration_since(SystemTime::UNIX_EPOCH) else {
        return true;
    };
    let limit = (since_epoch + MAX_VERSION_SKEW).as_millis();
    u128::from(ms) > limit
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: &str = "0192f1d2-3c4b-7a5e-8f00-112233445566";

    #[test]
    fn version_time_and_future_dating() {
        // 0x0192f1d23c4b ms = 2024-11-05T...: the first 12 hex digits.
        assert_eq!(version_time_ms(V), Some(0x0192_f1d2_3c4b));
        assert_eq!(version_time_ms("not-a-version"), None);
        let at = |ms: u64| Some(SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
        let t = 0x0192_f1d2_3c4b;
        let skew = u64::try_from(MAX_VERSION_SKEW.as_millis()).expect("small");
        assert!(!is_future_dated(V, at(t)));
        assert!(
            !is_future_dated(V, at(t - skew)),
            "exactly the skew is allowed"
        );
        assert!(is_future_dated(V, at(t - skew - 1)));
        assert!(
            !is_future_dated(V, at(t + 3_600_000)),
            "older than its commit is fine"
        );
        assert!(
            is_future_dated(V, None),
            "no server time: not trusted as latest"
        );
        let pinned = "ffffffff-ffff-7fff-bfff-ffffffffffff";
        assert!(is_future_dated(pinned, Some(SystemTime::now())));
    }

    #[test]
    fn keys_round_trip() {
        let d = data_key("a/b.csv", V);
        assert_eq!(d, format!("a/b.csv.pqcs/{V}/data.enc"));
        assert_eq!(
            parse_key(&d),
            Some(LayoutKey {
                key: "a/b.csv",
                version: V,
                part: Part::Data
            })
        );
        let m = manifest_key("a/b.csv", V);
        assert_eq!(parse_key(&m).map(|k| k.part), Some(Part::Manifest));
        assert!(m.starts_with(&versions_prefix("a/b.csv")));
        let o = object_v2_key("a/b.csv", V);
        assert_eq!(o, format!("a/b.csv.pqcs/{V}/object.v2"));
        assert_eq!(parse_key(&o).map(|k| k.part), Some(Part::ObjectV2));
    }

    #[test]
    fn foreign_keys_are_skipped() {
        for k in [
            "plain.txt",
            "x.pqcs/data.enc",
            &format!("x.pqcs/{V}/other"),
            &format!("x/{V}/data.enc"),
            &format!(".pqcs/{V}/data.enc"),
            "x.pqcs/0192F1D2-3C4B-7A5E-8F00-112233445566/data.enc",
            "x.pqcs/0192f1d2-3c4b-4a5e-8f00-112233445566/data.enc",
        ] {
            assert_eq!(parse_key(k), None, "{k}");
        }
    }
}
