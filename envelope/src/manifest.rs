//! The manifest `manifest.json`: the commit record of a version (FORMAT.md §5).
//!
//! It holds ctx, the key-establishment ciphertext `C`, the HKDF salt and the nonce prefix,
//! and never secret material. The parser is strict: unknown or missing fields, duplicate
//! fields, wrong types, inconsistent sizes, non-canonical encodings and a `C` that does not
//! match `ctx.c_sha256` are all rejected, and the reader must name the mode it expects.

use std::borrow::Cow;
use std::io::Read as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};

use crate::ctx::{CHUNK_SIZE, Context, FORMAT_VERSION, chunk_count, validate_identity};
use crate::symmetric::sha256;
use crate::{Backend, Error, Mode, Result};

/// `format` value of a v1 manifest (format constant).
pub const MANIFEST_FORMAT: &str = "pqbench-envelope/1";
/// HKDF salt length (format constant).
pub(crate) const SALT_LEN: usize = 32;
/// Nonce prefix length (format constant).
pub(crate) const PREFIX_LEN: usize = 4;
/// Manifests larger than this are refused before parsing (FORMAT.md §5, reader check 1).
/// Readers that fetch a manifest (the object store, the CLI) stop reading past this many
/// bytes instead of reading the whole object first.
pub const MAX_MANIFEST_LEN: usize = 64 * 1024;

/// The manifest as it appears on the wire (RFC 8785 canonical JSON). The encoded byte
/// strings are borrowed from the input when it has no escapes (it never does when canonical).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire<'a> {
    #[serde(borrow)]
    c: Cow<'a, str>,
    ctx: Context,
    #[serde(borrow)]
    format: Cow<'a, str>,
    #[serde(borrow)]
    nonce_prefix: Cow<'a, str>,
    #[serde(borrow)]
    salt: Cow<'a, str>,
}

/// A parsed and validated manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The object context.
    pub ctx: Context,
    /// The key-establishment ciphertext `C` (empty for `plaintext` and `psk`).
    pub c: Vec<u8>,
    /// HKDF salt (32 bytes; empty for `plaintext`).
    pub salt: Vec<u8>,
    /// Nonce prefix (4 bytes; empty for `plaintext`).
    pub nonce_prefix: Vec<u8>,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::Manifest(msg.into())
}

fn len_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Manifest {
    /// Serializes to canonical JSON bytes. Refuses a ctx with an integer above 2^53 − 1.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.ctx.check_integers()?;
        let wire = Wire {
            c: B64.encode(&self.c).into(),
            ctx: self.ctx.clone(),
            format: MANIFEST_FORMAT.into(),
            nonce_prefix: hex::encode(&self.nonce_prefix).into(),
            salt: B64.encode(&self.salt).into(),
        };
        // Members are declared in sorted order: serde_json output is RFC 8785 (see
        // `Context::canonical_bytes`; a test checks it against serde_jcs).
        serde_json::to_vec(&wire).map_err(|e| bad(format!("cannot serialize: {e}")))
    }

    /// Parses and validates a manifest of an object the reader expects to be in `expected`
    /// mode. Structural checks only: the identity and the recipient are checked by the reader.
    pub fn parse(bytes: &[u8], expected: Mode) -> Result<Self> {
        Self::parse_with(bytes, expected, Backend::default())
    }

    /// [`Manifest::parse`], hashing `C` with `backend`.
    pub(crate) fn parse_with(bytes: &[u8], expected: Mode, backend: Backend) -> Result<Self> {
        if bytes.len() > MAX_MANIFEST_LEN {
            return Err(Self::too_large(len_u64(bytes.len())));
        }
        let wire: Wire =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not a v1 manifest: {e}")))?;
        if wire.format != MANIFEST_FORMAT {
            return Err(bad(format!(
                "format is {:?}, expected {MANIFEST_FORMAT:?}",
                wire.format
            )));
        }
        let ctx = wire.ctx;
        // The mode check comes first: a planted object of another mode is a downgrade attempt.
        if ctx.mode != expected.name() {
            return Err(Error::ModeMismatch {
                expected,
                found: ctx.mode,
            });
        }
        let mode = expected;
        if ctx.format != FORMAT_VERSION {
            return Err(bad(format!(
                "ctx.format is {}, expected {FORMAT_VERSION}",
                ctx.format
            )));
        }
        for (field, got, want) in [
            ("kem", &ctx.kem, mode.kem_name()),
            ("kdf", &ctx.kdf, mode.kdf_name()),
            ("aead", &ctx.aead, mode.aead_name()),
        ] {
            if got != want {
                return Err(bad(format!(
                    "ctx.{field} is {got:?}, mode {mode} uses {want:?}"
                )));
            }
        }
        if ctx.chunk_size != CHUNK_SIZE {
            return Err(bad(format!(
                "ctx.chunk_size is {}, format v1 uses {CHUNK_SIZE}",
                ctx.chunk_size
            )));
        }
        // Every ctx integer, plaintext_size included, is at most 2^53 − 1: deserialization
        // refused anything larger (`ctx::ctx_integer`).
        if ctx.chunk_count != chunk_count(ctx.plaintext_size) {
            return Err(bad(format!(
                "ctx.chunk_count is {}, but {} bytes make {} chunks",
                ctx.chunk_count,
                ctx.plaintext_size,
                chunk_count(ctx.plaintext_size)
            )));
        }
        validate_identity(&ctx.tenant, &ctx.bucket, &ctx.key, &ctx.version)
            .map_err(|e| bad(format!("ctx identity: {e}")))?;
        if mode.encrypts() {
            if !is_lower_hex(&ctx.recipient_key_id, 64) {
                return Err(bad("ctx.recipient_key_id is not 64 lowercase hex digits"));
            }
        } else if !ctx.recipient_key_id.is_empty() {
            return Err(bad("ctx.recipient_key_id must be empty for plaintext"));
        }
        match (mode, &ctx.session) {
            (Mode::MlKem768Session, Some(s)) => {
                if s.max_objects == 0 || s.index >= s.max_objects {
                    return Err(bad("ctx.session.index is outside the session's bound"));
                }
                if s.age_ms > s.max_age_ms {
                    return Err(bad("ctx.session.age_ms is beyond the session's max_age_ms"));
                }
            }
            (Mode::MlKem768Session, None) => return Err(bad("ctx.session is missing")),
            (_, Some(_)) => return Err(bad(format!("ctx.session is not allowed in mode {mode}"))),
            (_, None) => {}
        }

        let c = B64
            .decode(wire.c.as_bytes())
            .map_err(|_| bad("c is not canonical base64"))?;
        if c.len() != mode.ciphertext_len() {
            return Err(bad(format!(
                "c is {} bytes, mode {mode} carries {}",
                c.len(),
                mode.ciphertext_len()
            )));
        }
        let mut want_hash = [0u8; 32];
        if !is_lower_hex(&ctx.c_sha256, 64)
            || hex::decode_to_slice(&ctx.c_sha256, &mut want_hash).is_err()
            || sha256(backend, &c) != want_hash
        {
            return Err(bad("c does not match ctx.c_sha256"));
        }
        if mode == Mode::X25519Padded && c[32..].iter().any(|&b| b != 0) {
            return Err(bad("x25519-padded: padding of c is not zero"));
        }
        let (salt_len, prefix_len) = if mode.encrypts() {
            (SALT_LEN, PREFIX_LEN)
        } else {
            (0, 0)
        };
        let salt = B64
            .decode(wire.salt.as_bytes())
            .map_err(|_| bad("salt is not canonical base64"))?;
        if salt.len() != salt_len {
            return Err(bad(format!(
                "salt is {} bytes, expected {salt_len}",
                salt.len()
            )));
        }
        if !is_lower_hex(&wire.nonce_prefix, 2 * prefix_len) {
            return Err(bad(format!(
                "nonce_prefix is not {prefix_len} bytes of lowercase hex"
            )));
        }
        let nonce_prefix = hex::decode(wire.nonce_prefix.as_bytes())
            .map_err(|_| bad("nonce_prefix is not hex"))?;
        Ok(Self {
            ctx,
            c,
            salt,
            nonce_prefix,
        })
    }

    /// The error for a manifest of at least `seen` bytes, above [`MAX_MANIFEST_LEN`]; what a
    /// reader returns once it has seen that many bytes (or a length header saying so),
    /// without reading further.
    pub fn too_large(seen: u64) -> Error {
        bad(format!(
            "{seen} bytes or more, above the {MAX_MANIFEST_LEN}-byte limit"
        ))
    }

    /// Reads a manifest from `r`, stopping as soon as it is longer than
    /// [`MAX_MANIFEST_LEN`] (at most one byte more is read): a huge object never reaches
    /// memory.
    pub fn read_bounded(r: impl std::io::Read) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        r.take(len_u64(MAX_MANIFEST_LEN) + 1)
            .read_to_end(&mut bytes)
            .map_err(Error::Io)?;
        if bytes.len() > MAX_MANIFEST_LEN {
            return Err(Self::too_large(len_u64(bytes.len())));
        }
        Ok(bytes)
    }

    /// Peeks at the mode a manifest claims, without validating it (for `inspect`).
    pub fn peek_mode(bytes: &[u8]) -> Result<Mode> {
        #[derive(Deserialize)]
        struct Peek {
            ctx: PeekCtx,
        }
        #[derive(Deserialize)]
        struct PeekCtx {
            mode: String,
        }
        let p: Peek =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("not a v1 manifest: {e}")))?;
        p.ctx.mode.parse()
    }

    /// Size of `data.enc` for this object: every chunk plus a 16-byte tag per chunk when the
    /// mode encrypts.
    pub fn ciphertext_size(&self) -> u64 {
        let tags = if self.ctx.mode == Mode::Plaintext.name() {
            0
        } else {
            self.ctx.chunk_count * 16
        };
        self.ctx.plaintext_size + tags
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctx::{ObjectId, new_version};

    #[test]
    fn manifest_bytes_are_jcs() {
        let id = ObjectId::new("t", "b", "dir/ü", &new_version()).expect("id");
        let ctx = Context::new(&id, Mode::X25519, 9, "ab".repeat(32), &[1u8; 32], None);
        let m = Manifest {
            ctx,
            c: vec![1; 32],
            salt: vec![2; 32],
            nonce_prefix: vec![3; 4],
        };
        let wire = Wire {
            c: B64.encode(&m.c).into(),
            ctx: m.ctx.clone(),
            format: MANIFEST_FORMAT.into(),
            nonce_prefix: hex::encode(&m.nonce_prefix).into(),
            salt: B64.encode(&m.salt).into(),
        };
        assert_eq!(
            m.to_bytes().expect("bytes"),
            serde_jcs::to_vec(&wire).expect("jcs")
        );
    }
}
