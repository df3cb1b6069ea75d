//! Object identity and the context `ctx` (study section III, Algorithm 1; FORMAT.md §3).
//!
//! `ctx` is the RFC 8785 (JSON Canonicalization Scheme) serialization of a JSON object whose
//! members are all strings, integers in 0 ..= 2^53 − 1 ([`MAX_CTX_INTEGER`]; bounded on
//! both the writing and the reading side), or (for sessions) an object of such integers.
//! It is bound into the data key (HKDF info) and into every chunk (AEAD associated data).

use serde::{Deserialize, Deserializer, Serialize};

use crate::{Error, Mode, Result};

/// Chunk size in bytes: 4 MiB (format constant: changing it breaks existing objects).
pub const CHUNK_SIZE: u64 = 4 * 1024 * 1024;
/// `ctx.format` of format v1 (format constant).
pub const FORMAT_VERSION: u64 = 1;
/// Largest integer anywhere in ctx (every member of ctx and of `ctx.session`): 2^53 − 1,
/// the largest integer an RFC 8785 implementation carries exactly, since JCS serializes
/// numbers through IEEE 754 doubles (RFC 8785 §3.2.2.3). A larger value would have two
/// canonical forms, so readers refuse it and writers never produce it (FORMAT.md §3).
pub const MAX_CTX_INTEGER: u64 = (1 << 53) - 1;
/// Largest plaintext size: [`MAX_CTX_INTEGER`].
pub const MAX_PLAINTEXT_SIZE: u64 = MAX_CTX_INTEGER;
/// Largest length of tenant, bucket and key in bytes (S3's key limit).
const MAX_NAME_LEN: usize = 1024;

/// Number of chunks of an object of `plaintext_size` bytes: ⌈size / 4 MiB⌉, and 1 for an
/// empty object (which still carries one authenticated, empty, final chunk).
pub const fn chunk_count(plaintext_size: u64) -> u64 {
    if plaintext_size == 0 {
        1
    } else {
        plaintext_size.div_ceil(CHUNK_SIZE)
    }
}

/// Plaintext length of chunk `j` of an object of `plaintext_size` bytes.
pub fn chunk_len(plaintext_size: u64, j: u64) -> u64 {
    let n = chunk_count(plaintext_size);
    if j + 1 < n {
        CHUNK_SIZE
    } else {
        plaintext_size - (n - 1) * CHUNK_SIZE
    }
}

/// A fresh UUIDv7 version string (RFC 9562 §5.7): time-ordered, lowercase, hyphenated.
pub fn new_version() -> String {
    uuid::Uuid::now_v7().hyphenated().to_string()
}

/// The object identity `I = (tenant, bucket, key, version)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectId {
    /// Tenant (the owner namespace).
    pub tenant: String,
    /// S3 bucket.
    pub bucket: String,
    /// S3 object key (without the `.pqcs/<version>/` suffix).
    pub key: String,
    /// UUIDv7 version, lowercase hyphenated.
    pub version: String,
}

impl ObjectId {
    /// Builds and validates an identity: non-empty names of at most 1,024 bytes without
    /// control characters; `version` a lowercase hyphenated UUIDv7.
    pub fn new(tenant: &str, bucket: &str, key: &str, version: &str) -> Result<Self> {
        let id = Self {
            tenant: tenant.into(),
            bucket: bucket.into(),
            key: key.into(),
            version: version.into(),
        };
        id.validate()?;
        Ok(id)
    }

    /// Builds an identity with a fresh UUIDv7 version.
    pub fn new_version(tenant: &str, bucket: &str, key: &str) -> Result<Self> {
        Self::new(tenant, bucket, key, &new_version())
    }

    /// Checks the rules of [`ObjectId::new`].
    pub fn validate(&self) -> Result<()> {
        validate_identity(&self.tenant, &self.bucket, &self.key, &self.version)
            .map_err(Error::Identity)
    }
}

/// The identity rules, shared by [`ObjectId::validate`] (what a caller asks for) and the
/// manifest parser (what a stored ctx names): tenant, bucket and key non-empty, at most
/// 1,024 bytes, without control characters; version a lowercase hyphenated UUIDv7.
pub(crate) fn validate_identity(
    tenant: &str,
    bucket: &str,
    key: &str,
    version: &str,
) -> std::result::Result<(), String> {
    for (field, v) in [("tenant", tenant), ("bucket", bucket), ("key", key)] {
        if v.is_empty() {
            return Err(format!("{field} is empty"));
        }
        if v.len() > MAX_NAME_LEN {
            return Err(format!("{field} is longer than {MAX_NAME_LEN} bytes"));
        }
        if v.chars().any(char::is_control) {
            return Err(format!("{field} contains a control character"));
        }
    }
    validate_version(version)
}

/// A version must be a UUIDv7 in lowercase hyphenated form (RFC 9562 §4, §5.7):
/// `xxxxxxxx-xxxx-7xxx-Yxxx-xxxxxxxxxxxx` with lowercase hex digits and `Y` in `8..=b`.
/// Checked byte by byte, without allocating (it runs on every GET).
pub(crate) fn validate_version(v: &str) -> std::result::Result<(), String> {
    let b = v.as_bytes();
    let shape_ok = b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
        });
    if !shape_ok {
        return Err(format!("version {v:?} is not a lowercase hyphenated UUID"));
    }
    if b[14] != b'7' {
        return Err(format!("version {v:?} is not a UUIDv7"));
    }
    if !matches!(b[19], b'8' | b'9' | b'a' | b'b') {
        return Err(format!("version {v:?} does not have the RFC 9562 variant"));
    }
    Ok(())
}

/// Session bookkeeping of mode `ml-kem-768-session`, carried in `ctx.session`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionCtx {
    /// Age of the session root, in milliseconds, when this object was sealed.
    #[serde(deserialize_with = "ctx_integer")]
    pub age_ms: u64,
    /// 0-based position of this object in its session.
    #[serde(deserialize_with = "ctx_integer")]
    pub index: u64,
    /// T_max in milliseconds.
    #[serde(deserialize_with = "ctx_integer")]
    pub max_age_ms: u64,
    /// B_max.
    #[serde(deserialize_with = "ctx_integer")]
    pub max_objects: u64,
}

/// A ctx integer as a reader accepts it: a JSON integer (no fraction, exponent or sign;
/// serde_json refuses `1.0`, `1e3` and `-0` for a `u64`) of at most [`MAX_CTX_INTEGER`].
fn ctx_integer<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    let n = u64::deserialize(d)?;
    if n > MAX_CTX_INTEGER {
        return Err(serde::de::Error::custom(format!(
            "integer {n} is above 2^53 - 1, the largest ctx integer (FORMAT.md §3)"
        )));
    }
    Ok(n)
}

/// The context `ctx`. Field names and order are those of the canonical serialization
/// (RFC 8785 sorts members by UTF-16 code units; all names here are ASCII).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Context {
    /// AEAD name: `AES-256-GCM` (`none` for plaintext).
    pub aead: String,
    /// Object identity: bucket.
    pub bucket: String,
    /// Lowercase hex SHA-256 of the key-establishment ciphertext `C` (of the empty string
    /// when the mode has no `C`).
    pub c_sha256: String,
    /// Number of chunks.
    #[serde(deserialize_with = "ctx_integer")]
    pub chunk_count: u64,
    /// Chunk size: 4,194,304.
    #[serde(deserialize_with = "ctx_integer")]
    pub chunk_size: u64,
    /// Format version: 1.
    #[serde(deserialize_with = "ctx_integer")]
    pub format: u64,
    /// KDF name: `HKDF-SHA256` (`none` for plaintext).
    pub kdf: String,
    /// Key-establishment algorithm name of the mode.
    pub kem: String,
    /// Object identity: key.
    pub key: String,
    /// Mode name.
    pub mode: String,
    /// Plaintext size in bytes.
    #[serde(deserialize_with = "ctx_integer")]
    pub plaintext_size: u64,
    /// Lowercase hex key id of the recipient key (empty for plaintext).
    pub recipient_key_id: String,
    /// Session bookkeeping, present exactly for `ml-kem-768-session`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_session"
    )]
    pub session: Option<SessionCtx>,
    /// Object identity: tenant.
    pub tenant: String,
    /// Object identity: version (UUIDv7).
    pub version: String,
}

/// `session` may be absent, but never `null`.
fn present_session<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<SessionCtx>, D::Error> {
    SessionCtx::deserialize(d).map(Some)
}

impl Context {
    /// The ctx of a new object.
    pub(crate) fn new(
        id: &ObjectId,
        mode: Mode,
        plaintext_size: u64,
        recipient_key_id: String,
        c_sha256: &[u8; 32],
        session: Option<SessionCtx>,
    ) -> Self {
        Self {
            aead: mode.aead_name().into(),
            bucket: id.bucket.clone(),
            c_sha256: hex::encode(c_sha256),
            chunk_count: chunk_count(plaintext_size),
            chunk_size: CHUNK_SIZE,
            format: FORMAT_VERSION,
            kdf: mode.kdf_name().into(),
            kem: mode.kem_name().into(),
            key: id.key.clone(),
            mode: mode.name().into(),
            plaintext_size,
            recipient_key_id,
            session,
            tenant: id.tenant.clone(),
            version: id.version.clone(),
        }
    }

    /// The RFC 8785 canonical bytes: HKDF info and the prefix of every chunk's associated data.
    ///
    /// For this struct, plain `serde_json` output *is* the JCS serialization: members are
    /// declared in sorted order (ASCII names, so UTF-8 and UTF-16 order agree), values are
    /// strings and integers below 2^53 only, and serde_json escapes strings exactly as JCS
    /// does (quote, backslash, `\b \f \n \r \t`, other controls as lowercase `\u00xx`,
    /// everything else literal). It is several times faster than a generic JCS serializer,
    /// and a test checks the equivalence against the `serde_jcs` crate.
    ///
    /// Refuses a ctx holding an integer above [`MAX_CTX_INTEGER`]: a writer never produces
    /// a ctx that readers (and other JCS implementations) would not read back the same.
    pub fn canonical_bytes(&self) -> Result<Vec<u8>> {
        self.check_integers()?;
        serde_json::to_vec(self)
            .map_err(|e| Error::Manifest(format!("cannot canonicalize ctx: {e}")))
    }

    /// Every integer of ctx and `ctx.session`, by member name.
    fn integers(&self) -> impl Iterator<Item = (&'static str, u64)> {
        let top = [
            ("chunk_count", self.chunk_count),
            ("chunk_size", self.chunk_size),
            ("format", self.format),
            ("plaintext_size", self.plaintext_size),
        ];
        let session = self.session.map(|s| {
            [
                ("session.age_ms", s.age_ms),
                ("session.index", s.index),
                ("session.max_age_ms", s.max_age_ms),
                ("session.max_objects", s.max_objects),
            ]
        });
        top.into_iter().chain(session.into_iter().flatten())
    }

    /// The writer's side of the integer bound (the reader's is in deserialization).
    pub(crate) fn check_integers(&self) -> Result<()> {
        match self.integers().find(|&(_, n)| n > MAX_CTX_INTEGER) {
            Some((name, n)) => Err(Error::Usage(format!(
                "ctx.{name} would be {n}, above 2^53 - 1, the largest ctx integer (FORMAT.md §3)"
            ))),
            None => Ok(()),
        }
    }

    /// Checks that this ctx names exactly `id` (field by field, so the error says which).
    pub(crate) fn check_identity(&self, id: &ObjectId) -> Result<()> {
        let pairs = [
            ("tenant", &self.tenant, &id.tenant),
            ("bucket", &self.bucket, &id.bucket),
            ("key", &self.key, &id.key),
            ("version", &self.version, &id.version),
        ];
        for (field, a, b) in pairs {
            if a != b {
                return Err(Error::IdentityMismatch { field });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunking() {
        assert_eq!(chunk_count(0), 1);
        assert_eq!(chunk_len(0, 0), 0);
        assert_eq!(chunk_count(1), 1);
        assert_eq!(chunk_count(CHUNK_SIZE), 1);
        assert_eq!(chunk_len(CHUNK_SIZE, 0), CHUNK_SIZE);
        assert_eq!(chunk_count(CHUNK_SIZE + 1), 2);
        assert_eq!(chunk_len(CHUNK_SIZE + 1, 1), 1);
        assert_eq!(chunk_count(3 * CHUNK_SIZE + 7), 4);
        assert_eq!(chunk_len(3 * CHUNK_SIZE + 7, 3), 7);
    }

    #[test]
    fn identity_validation() {
        let v = new_version();
        assert!(ObjectId::new("t", "b", "k/with/slashes", &v).is_ok());
        assert!(ObjectId::new("", "b", "k", &v).is_err());
        assert!(ObjectId::new("t", "b", "k\n", &v).is_err());
        assert!(ObjectId::new("t", "b", "k", "not-a-uuid").is_err());
        // UUIDv4 is refused.
        assert!(ObjectId::new("t", "b", "k", "2f1e7c4a-9b3d-4e8f-a1c2-3d4e5f607182").is_err());
        assert!(ObjectId::new("t", "b", "k", &v.to_uppercase()).is_err());
        assert!(
            ObjectId::new("t", "b", "k", "0190a0b0-c0d0-7e00-c000-000000000000").is_err(),
            "variant"
        );
        assert!(
            ObjectId::new("t", "b", "k", "0190a0b0c0d07e008000000000000000").is_err(),
            "unhyphenated"
        );
        // Agrees with the uuid crate on freshly generated versions.
        for _ in 0..100 {
            let v = new_version();
            assert!(validate_version(&v).is_ok(), "{v}");
            assert_eq!(
                uuid::Uuid::parse_str(&v).map(|u| u.get_version_num()).ok(),
                Some(7)
            );
        }
    }

    /// serde_json output equals RFC 8785 (serde_jcs) for every kind of value ctx can hold.
    #[test]
    fn serde_json_output_is_jcs_for_ctx() {
        let names = [
            "plain",
            "with space",
            "quote\"back\\slash",
            "ünïcødé/🔒",
            "tab\there",
            "a/b/c.txt",
            "\u{2028}",
        ];
        for (i, n) in names.iter().enumerate() {
            let id = ObjectId {
                tenant: (*n).into(),
                bucket: format!("b{i}"),
                key: format!("{n}/{i}"),
                version: new_version(),
            };
            let session = (i % 2 == 0).then_some(SessionCtx {
                age_ms: 5,
                index: 3,
                max_age_ms: 10_000,
                max_objects: 100,
            });
            let ctx = Context::new(
                &id,
                Mode::MlKem768Session,
                (1 << 53) - 1,
                "ff".repeat(32),
                &[7u8; 32],
                session,
            );
            let jcs = serde_jcs::to_vec(&ctx).expect("jcs");
            assert_eq!(ctx.canonical_bytes().expect("json"), jcs, "{n}");
        }
    }

    #[test]
    fn canonical_ctx_is_sorted_and_compact() {
        let id = ObjectId::new("t", "b", "k", "0190a0b0-c0d0-7e00-8000-000000000000").expect("id");
        let ctx = Context::new(&id, Mode::X25519, 5, "ab".into(), &[0u8; 32], None);
        let s = String::from_utf8(ctx.canonical_bytes().expect("jcs")).expect("utf8");
        assert!(s.starts_with("{\"aead\":\"AES-256-GCM\",\"bucket\":\"b\",\"c_sha256\":\"0000"));
        assert!(s.ends_with("\"recipient_key_id\":\"ab\",\"tenant\":\"t\",\"version\":\"0190a0b0-c0d0-7e00-8000-000000000000\"}"));
        assert!(!s.contains(' '));
    }
}
