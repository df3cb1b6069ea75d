//! Object layout in a bucket (DESIGN.md "Envelope format v1", study section III, Algorithm 1):
//! a version of `key` is stored as `<key>.pqcs/<version>/data.enc` followed by
//! `<key>.pqcs/<version>/manifest.json`. The manifest is written last and is the commit
//! record: a version without it does not exist for readers.
//!
//! Pure string functions shared by the local `seal`/`open` commands and the S3 object store.

use crate::ctx::validate_version;

/// Suffix appended to an object key to form its version directory.
/// Format constant: changing it breaks existing objects.
pub const VERSIONS_SUFFIX: &str = ".pqcs";
/// Name of the ciphertext stream inside a version directory.
/// Format constant: changing it breaks existing objects.
pub const DATA_NAME: &str = "data.enc";
/// Name of the manifest (the commit record) inside a version directory.
/// Format constant: changing it breaks existing objects.
pub const MANIFEST_NAME: &str = "manifest.json";

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

/// Which file of a version an S3 key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// `data.enc`.
    Data,
    /// `manifest.json`.
    Manifest,
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

/// Splits `<key>.pqcs/<version>/{data.enc|manifest.json}`; `None` for any other bucket key
/// (foreign objects, malformed versions), so listings skip what pqbench did not write.
pub fn parse_key(s3_key: &str) -> Option<LayoutKey<'_>> {
    let (dir, file) = s3_key.rsplit_once('/')?;
    let part = match file {
        DATA_NAME => Part::Data,
        MANIFEST_NAME => Part::Manifest,
        _ => return None,
    };
    let (versions, version) = dir.rsplit_once('/')?;
    let key = versions.strip_suffix(VERSIONS_SUFFIX)?;
    if key.is_empty() || validate_version(version).is_err() {
        return None;
    }
    Some(LayoutKey { key, version, part })
}

#[cfg(test)]
mod tests {
    use super::*;

    const V: &str = "0192f1d2-3c4b-7a5e-8f00-112233445566";

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
