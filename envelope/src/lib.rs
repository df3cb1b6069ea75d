//! # envelope: pqbench's per-object envelope encryption, format v1
//!
//! A pure crate (no async runtime, no network) implementing the object format of the study
//! "Benchmarking Post-Quantum Key Encapsulation in S3-Compatible Object Storage under Client
//! Concurrency", section III and Algorithm 1, made precise in `envelope/FORMAT.md`:
//!
//! - an object `I = (tenant, bucket, key, version)` with UUIDv7 versions ([`ObjectId`]);
//! - a context `ctx`, the RFC 8785 canonical JSON of the identity, mode, algorithm names,
//!   chunk size and count, plaintext size, recipient key id and `SHA-256(C)` ([`Context`]);
//! - data key = HKDF-SHA256(ikm = shared secret, salt = 32 random bytes, info = ctx);
//! - 4 MiB chunks under AES-256-GCM with nonce `prefix ‖ be64(j)` and associated data
//!   `ctx ‖ be64(j) ‖ be64(ℓ_j) ‖ final_j`;
//! - a manifest (`manifest.json`) holding ctx, `C`, the salt and the nonce prefix, written
//!   last as the commit record ([`Manifest`]).
//!
//! Every key-establishment [`Mode`] runs on both [`Backend`]s (`aws-lc` and `rustcrypto`)
//! and objects sealed by one open with the other. Sealing and opening stream one chunk at a
//! time ([`Sealer`], [`Opener`], [`seal_stream`], [`open_stream`]); memory stays at about
//! one chunk whatever the object size. Each stage is timed ([`StageTimes`]) so that the run
//! engine can attribute request time to key establishment, key derivation, AEAD and
//! manifest handling.
//!
//! Decryption failures are deliberately opaque ([`Error::Decrypt`]); secrets are zeroized.
//! File I/O is limited to key files ([`keys`]), which are created 0600.
//!
//! ```
//! use envelope::{Backend, KeyType, Mode, ObjectId, Receiver, SealKey, SecretKey, Sender};
//!
//! # fn main() -> envelope::Result<()> {
//! // The recipient's key pair (stored as its FIPS 203 seed).
//! let sk = SecretKey::generate(KeyType::MlKem768, &mut envelope::os_rng())?;
//! let pk = sk.public_key()?.expect("ML-KEM keys have a public key");
//!
//! // Writer: seal one object; `data` becomes data.enc, `sealed.manifest` manifest.json.
//! let id = ObjectId::new_version("tenant", "bucket", "reports/q3.csv")?;
//! let sender = Sender::new(Mode::MlKem768, Backend::AwsLc, SealKey::Public(&pk))?;
//! let plaintext = b"quarterly numbers";
//! let mut data = Vec::new();
//! let sealed = envelope::seal_stream(
//!     &sender, &id, plaintext.len() as u64, &plaintext[..], &mut data, &mut envelope::os_rng(),
//! )?;
//!
//! // Reader (here on the other backend): names the mode and the object it expects.
//! let receiver = Receiver::new(Mode::MlKem768, Backend::RustCrypto, Some(&sk))?;
//! let mut out = Vec::new();
//! envelope::open_stream(&receiver, &id, &sealed.manifest, &data[..], &mut out)?;
//! assert_eq!(out, plaintext);
//!
//! // Any change to data.enc is refused, and the error says nothing about why.
//! data[3] ^= 1;
//! let err = envelope::open_stream(&receiver, &id, &sealed.manifest, &data[..], &mut Vec::new());
//! assert!(matches!(err, Err(envelope::Error::Decrypt)));
//! # Ok(())
//! # }
//! ```

mod ctx;
pub mod gate;
pub mod hpke;
pub mod interop;
#[doc(hidden)]
pub mod kat;
pub mod keys;
pub mod layout;
mod manifest;
mod mlkem;
mod mode;
mod open;
mod ossl;
mod rsa_oaep;
mod seal;
mod session;
mod stream;
pub mod survey;
mod symmetric;
pub mod v2;
mod x25519;
mod xwing;

use std::path::PathBuf;
use std::time::Duration;

pub use ctx::{
    CHUNK_SIZE, Context, FORMAT_VERSION, MAX_CTX_INTEGER, MAX_PLAINTEXT_SIZE, ObjectId, SessionCtx,
    chunk_count, chunk_len, new_version,
};
pub use keys::{PublicKey, SecretKey};
pub use manifest::{MANIFEST_FORMAT, MAX_MANIFEST_LEN, Manifest};
pub use mode::{Backend, KeyType, Mode, SessionBounds};
pub use open::{AwaitingKey, KeyRequest, Opened, Opener, Pending, REMOTE_MODES, Receiver};
pub use seal::{SealKey, Sealed, Sealer, Sender};
pub use session::{CacheStats, SessionInfo};
pub use stream::{open_stream, seal_stream};
pub use symmetric::{NONCE_LEN, TAG_LEN};

/// The object format a version is written in: v1 (`data.enc` and `manifest.json`,
/// `FORMAT.md`) or v2 (one `object.v2` with a binary HPKE header, `FORMAT-v2.md`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Two objects per version, the JSON manifest written last.
    #[default]
    V1,
    /// One object per version, the header in metadata or before the chunks.
    V2,
}

impl Format {
    /// `v1` or `v2`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::V1 => "v1",
            Format::V2 => "v2",
        }
    }

    /// Parses `v1` or `v2`.
    pub fn from_name(s: &str) -> Result<Self> {
        match s {
            "v1" => Ok(Format::V1),
            "v2" => Ok(Format::V2),
            other => Err(Error::Usage(format!(
                "unknown format {other:?}: expected v1 or v2"
            ))),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of the envelope crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Decryption or authentication failed. Deliberately opaque: the caller never learns
    /// which check failed (KEM, RSA padding, tag, chunk order, truncation or extension).
    #[error("decryption failed: the object is corrupt, was tampered with, or is not for this key")]
    Decrypt,
    /// The manifest is malformed or inconsistent (public data only; says what is wrong).
    #[error("manifest rejected: {0}")]
    Manifest(String),
    /// A reader that requires post-quantum recipients (`--require-pq`) met an object with a
    /// classical-only recipient entry or the mixed-strength flag (public bytes; says which).
    #[error("refused by --require-pq: {0}")]
    NotPostQuantum(String),
    /// A re-wrap (FORMAT-v2.md §10) of a header that is not v2.1: a v2 header's chunk keys
    /// bind the whole header, so only re-encryption moves it to new recipients.
    #[error(
        "the object's header is format v2, not v2.1: its chunks bind the whole header, so it cannot be re-wrapped (re-encrypt it instead)"
    )]
    NotRewrappable,
    /// A format v2 object's header fails a structure check (FORMAT-v2.md §4, checks 1-3
    /// and 5: public bytes only, before any key is used; says which check).
    #[error("object header rejected: {0}")]
    Header(String),
    /// The object's mode is not the one the reader expects (no downgrade).
    #[error("mode mismatch: the reader expects {expected} but the object says {found:?}")]
    ModeMismatch {
        /// The mode the reader named.
        expected: Mode,
        /// The mode written in the manifest.
        found: String,
    },
    /// The manifest describes another object or version than the one requested.
    #[error("manifest belongs to another object: its {field} differs from the requested one")]
    IdentityMismatch {
        /// Which identity field differs.
        field: &'static str,
    },
    /// The object was sealed for another recipient key.
    #[error("object was sealed for recipient key {found}, but this key is {expected}")]
    WrongRecipient {
        /// Key id of the reader's key.
        expected: String,
        /// Key id written in the manifest.
        found: String,
    },
    /// An unknown mode name.
    #[error(
        "unknown mode {0:?}: expected one of plaintext, psk, rsa-oaep-4096, rsa-oaep-3072, x25519, \
         ml-kem-768, ml-kem-1024, concat-hybrid, x-wing, ml-kem-768-session, x25519-padded \
         (or a study code B0 B1 R1 B2 P1 P2 P3 N1 C2)"
    )]
    UnknownMode(String),
    /// An unknown backend name.
    #[error("unknown backend {0:?}: expected aws-lc, rustcrypto, libcrux or openssl")]
    UnknownBackend(String),
    /// An invalid object identity (tenant, bucket, key or version).
    #[error("invalid object identity: {0}")]
    Identity(String),
    /// Invalid or unsuitable key material.
    #[error("key: {0}")]
    Key(String),
    /// A key file could not be used (missing, unsafe permissions, malformed).
    #[error("key file {}: {reason}", path.display())]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The API was used out of order (wrong chunk length, too many chunks, missing chunks).
    #[error("usage: {0}")]
    Usage(String),
    /// Reading or writing a stream failed.
    #[error("i/o: {0}")]
    Io(#[source] std::io::Error),
    /// An internal failure of a primitive while sealing (not attacker-triggerable).
    #[error("internal crypto failure in {0}")]
    Crypto(&'static str),
}

impl Error {
    /// A fixed, low-cardinality label for metrics and records (never `Debug` text).
    pub const fn kind(&self) -> &'static str {
        match self {
            Error::Decrypt => "decrypt",
            Error::Manifest(_) => "manifest",
            Error::Header(_) => "header",
            Error::NotPostQuantum(_) => "not_post_quantum",
            Error::NotRewrappable => "not_rewrappable",
            Error::ModeMismatch { .. } => "mode_mismatch",
            Error::IdentityMismatch { .. } => "identity_mismatch",
            Error::WrongRecipient { .. } => "wrong_recipient",
            Error::UnknownMode(_) => "unknown_mode",
            Error::UnknownBackend(_) => "unknown_backend",
            Error::Identity(_) => "identity",
            Error::Key(_) => "key",
            Error::KeyFile { .. } => "key_file",
            Error::Usage(_) => "usage",
            Error::Io(_) => "io",
            Error::Crypto(_) => "crypto",
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Time spent in each envelope stage of one object (the study's stage timers, section IV-A,
/// minus storage, which the object store measures).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageTimes {
    /// KEM encapsulation/decapsulation, RSA encryption/decryption, X25519 exchange, or a
    /// session-cache lookup.
    pub key_establishment: Duration,
    /// HKDF-SHA256 and the AES key schedule.
    pub key_derivation: Duration,
    /// AES-256-GCM over all chunks.
    pub aead: Duration,
    /// Building, serializing, parsing and validating the manifest and ctx.
    pub manifest: Duration,
}

impl StageTimes {
    /// Sum of the four stages.
    pub fn total(&self) -> Duration {
        self.key_establishment + self.key_derivation + self.aead + self.manifest
    }
}

/// The operating system's CSPRNG as a `rand_core` 0.10 `CryptoRng`.
pub fn os_rng() -> rand_core::UnwrapErr<getrandom::SysRng> {
    rand_core::UnwrapErr(getrandom::SysRng)
}
