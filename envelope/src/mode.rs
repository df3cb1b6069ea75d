//! Key-establishment modes, key types and crypto backends.
//!
//! The mode table is the study's Table II (section III) extended by the two wider
//! baselines it lists as missing (`ml-kem-1024`, `rsa-oaep-3072`) and by the DESIGN.md
//! additions. Every mode shares the HKDF-SHA256 key derivation and the chunked
//! AES-256-GCM path; modes differ only in key establishment and in the size of the
//! key-establishment ciphertext `C` that every manifest carries.

use core::fmt;
use core::str::FromStr;
use std::time::Duration;

use crate::{Error, Result};

/// A key-establishment mode (the study's Table II).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Study code B0. No encryption, same framing: the floor of the data path.
    Plaintext,
    /// Study code B1. A pre-shared 32-byte key is the HKDF input: the symmetric-only floor.
    Psk,
    /// Study code R1. RSA-OAEP-4096 (SHA-256, MGF1-SHA-256) transports a random 32-byte secret.
    RsaOaep4096,
    /// RSA-OAEP-3072 (SHA-256, MGF1-SHA-256): the smaller classical baseline.
    RsaOaep3072,
    /// Study code B2. Ephemeral-static X25519.
    X25519,
    /// Study code P1. ML-KEM-768 (FIPS 203).
    MlKem768,
    /// ML-KEM-1024 (FIPS 203): the wider post-quantum baseline.
    MlKem1024,
    /// Study code P2. ML-KEM-768 ciphertext ‖ X25519 ephemeral key, both secrets into HKDF.
    /// A performance reference only: no security claim is made for this combiner.
    ConcatHybrid,
    /// Study code P3. X-Wing (draft-connolly-cfrg-xwing-kem).
    XWing,
    /// Study code N1. One ML-KEM-768 root per bounded session of objects.
    MlKem768Session,
    /// Study code C2. X25519 with `C` zero-padded to the ML-KEM-768 ciphertext size (a manifest-size control).
    X25519Padded,
}

impl Mode {
    /// Every mode, in the order of the DESIGN.md table.
    pub const ALL: [Mode; 11] = [
        Mode::Plaintext,
        Mode::Psk,
        Mode::RsaOaep4096,
        Mode::RsaOaep3072,
        Mode::X25519,
        Mode::MlKem768,
        Mode::MlKem1024,
        Mode::ConcatHybrid,
        Mode::XWing,
        Mode::MlKem768Session,
        Mode::X25519Padded,
    ];

    /// The canonical name (format constant: it is written into every manifest's `ctx.mode`).
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Plaintext => "plaintext",
            Mode::Psk => "psk",
            Mode::RsaOaep4096 => "rsa-oaep-4096",
            Mode::RsaOaep3072 => "rsa-oaep-3072",
            Mode::X25519 => "x25519",
            Mode::MlKem768 => "ml-kem-768",
            Mode::MlKem1024 => "ml-kem-1024",
            Mode::ConcatHybrid => "concat-hybrid",
            Mode::XWing => "x-wing",
            Mode::MlKem768Session => "ml-kem-768-session",
            Mode::X25519Padded => "x25519-padded",
        }
    }

    /// The study's code for the mode, where the study has one.
    pub const fn study_code(self) -> Option<&'static str> {
        match self {
            Mode::Plaintext => Some("B0"),
            Mode::Psk => Some("B1"),
            Mode::RsaOaep4096 => Some("R1"),
            Mode::X25519 => Some("B2"),
            Mode::MlKem768 => Some("P1"),
            Mode::ConcatHybrid => Some("P2"),
            Mode::XWing => Some("P3"),
            Mode::MlKem768Session => Some("N1"),
            Mode::X25519Padded => Some("C2"),
            Mode::RsaOaep3072 | Mode::MlKem1024 => None,
        }
    }

    /// Whether the mode's key establishment resists a quantum adversary: an ML-KEM, alone,
    /// in a hybrid or a session. Plaintext, the pre-shared key, RSA and X25519 are not
    /// post-quantum key establishment (what `--require-pq` asks for).
    pub const fn post_quantum(self) -> bool {
        matches!(
            self,
            Mode::MlKem768
                | Mode::MlKem1024
                | Mode::ConcatHybrid
                | Mode::XWing
                | Mode::MlKem768Session
        )
    }

    /// The key-establishment algorithm name written into `ctx.kem` (format constant).
    pub const fn kem_name(self) -> &'static str {
        match self {
            Mode::Plaintext => "none",
            Mode::Psk => "PSK-256",
            Mode::RsaOaep4096 => "RSA-OAEP-4096-SHA256",
            Mode::RsaOaep3072 => "RSA-OAEP-3072-SHA256",
            Mode::X25519 => "X25519",
            Mode::MlKem768 => "ML-KEM-768",
            Mode::MlKem1024 => "ML-KEM-1024",
            Mode::ConcatHybrid => "ML-KEM-768+X25519-concat",
            Mode::XWing => "X-Wing",
            Mode::MlKem768Session => "ML-KEM-768-session",
            Mode::X25519Padded => "X25519P",
        }
    }

    /// The key-derivation name written into `ctx.kdf` (format constant).
    pub const fn kdf_name(self) -> &'static str {
        match self {
            Mode::Plaintext => "none",
            _ => "HKDF-SHA256",
        }
    }

    /// The AEAD name written into `ctx.aead` (format constant).
    pub const fn aead_name(self) -> &'static str {
        match self {
            Mode::Plaintext => "none",
            _ => "AES-256-GCM",
        }
    }

    /// Whether the mode encrypts (every mode but `plaintext`).
    pub const fn encrypts(self) -> bool {
        !matches!(self, Mode::Plaintext)
    }

    /// Size in bytes of the key-establishment ciphertext `C` carried by every manifest.
    pub const fn ciphertext_len(self) -> usize {
        match self {
            Mode::Plaintext | Mode::Psk => 0,
            Mode::RsaOaep4096 => 512,
            Mode::RsaOaep3072 => 384,
            Mode::X25519 => 32,
            Mode::MlKem768 | Mode::MlKem768Session | Mode::X25519Padded => 1088,
            Mode::MlKem1024 => 1568,
            Mode::ConcatHybrid | Mode::XWing => 1120,
        }
    }

    /// The recipient key type the mode uses.
    pub const fn key_type(self) -> KeyType {
        match self {
            Mode::Plaintext => KeyType::None,
            Mode::Psk => KeyType::Psk,
            Mode::RsaOaep4096 => KeyType::Rsa4096,
            Mode::RsaOaep3072 => KeyType::Rsa3072,
            Mode::X25519 | Mode::X25519Padded => KeyType::X25519,
            Mode::MlKem768 | Mode::MlKem768Session => KeyType::MlKem768,
            Mode::MlKem1024 => KeyType::MlKem1024,
            Mode::ConcatHybrid => KeyType::ConcatHybrid,
            Mode::XWing => KeyType::XWing,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mode {
    type Err = Error;

    /// Parses a canonical name or a study code (case-insensitive for codes: `P1`, `p1`).
    fn from_str(s: &str) -> Result<Self> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s || m.study_code().is_some_and(|c| c.eq_ignore_ascii_case(s)))
            .ok_or_else(|| Error::UnknownMode(s.to_owned()))
    }
}

/// The kind of recipient key a mode needs; key files are typed by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// `plaintext` needs no key.
    None,
    /// 32-byte pre-shared key.
    Psk,
    /// RSA 3072-bit key pair.
    Rsa3072,
    /// RSA 4096-bit key pair.
    Rsa4096,
    /// X25519 key pair.
    X25519,
    /// ML-KEM-768 key pair (also used by `ml-kem-768-session`).
    MlKem768,
    /// ML-KEM-1024 key pair.
    MlKem1024,
    /// ML-KEM-768 and X25519 key pairs for `concat-hybrid`.
    ConcatHybrid,
    /// X-Wing key pair.
    XWing,
}

impl KeyType {
    /// Name used in key files (format constant).
    pub const fn name(self) -> &'static str {
        match self {
            KeyType::None => "none",
            KeyType::Psk => "psk",
            KeyType::Rsa3072 => "rsa-3072",
            KeyType::Rsa4096 => "rsa-4096",
            KeyType::X25519 => "x25519",
            KeyType::MlKem768 => "ml-kem-768",
            KeyType::MlKem1024 => "ml-kem-1024",
            KeyType::ConcatHybrid => "ml-kem-768+x25519",
            KeyType::XWing => "x-wing",
        }
    }

    /// All key types that have key material.
    pub const ALL: [KeyType; 8] = [
        KeyType::Psk,
        KeyType::Rsa3072,
        KeyType::Rsa4096,
        KeyType::X25519,
        KeyType::MlKem768,
        KeyType::MlKem1024,
        KeyType::ConcatHybrid,
        KeyType::XWing,
    ];

    /// Parses a key-file key type name.
    pub fn from_name(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| Error::Key(format!("unknown key type {s:?}")))
    }

    /// Length of the encoded public key, where it is fixed (RSA keys are DER, variable).
    pub const fn public_len(self) -> Option<usize> {
        match self {
            KeyType::X25519 => Some(32),
            KeyType::MlKem768 => Some(1184),
            KeyType::MlKem1024 => Some(1568),
            KeyType::ConcatHybrid => Some(1184 + 32),
            KeyType::XWing => Some(1216),
            KeyType::None | KeyType::Psk | KeyType::Rsa3072 | KeyType::Rsa4096 => None,
        }
    }

    /// Length of the encoded secret key, where it is fixed (RSA keys are PKCS#8 DER).
    pub const fn secret_len(self) -> Option<usize> {
        match self {
            KeyType::Psk | KeyType::X25519 | KeyType::XWing => Some(32),
            KeyType::MlKem768 | KeyType::MlKem1024 => Some(64),
            KeyType::ConcatHybrid => Some(64 + 32),
            KeyType::None | KeyType::Rsa3072 | KeyType::Rsa4096 => None,
        }
    }

    /// Where the X25519 u-coordinate sits in the encoded public key, for key types that
    /// carry one (`x25519`, `ml-kem-768+x25519`, `x-wing`).
    pub const fn x25519_public_offset(self) -> Option<usize> {
        match self {
            KeyType::X25519 => Some(0),
            KeyType::ConcatHybrid | KeyType::XWing => Some(1184),
            _ => None,
        }
    }

    /// RSA modulus size in bits, for RSA key types.
    pub const fn rsa_bits(self) -> Option<usize> {
        match self {
            KeyType::Rsa3072 => Some(3072),
            KeyType::Rsa4096 => Some(4096),
            _ => None,
        }
    }
}

impl fmt::Display for KeyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The crypto implementation that executes a mode. Chosen at run time; an object sealed on
/// one opens on every other that supports its mode (the interop matrix, [`crate::interop`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Backend {
    /// aws-lc-rs (AWS-LC): ML-KEM, X25519, RSA, AES-GCM, HKDF, SHA3. The default.
    #[default]
    AwsLc,
    /// The pure-Rust RustCrypto crates: `ml-kem`, `x25519-dalek`, `rsa`, `aes-gcm`, `hkdf`,
    /// `sha3`, `x-wing`.
    RustCrypto,
    /// Cryspen's formally verified libcrux for the key establishment: `libcrux-ml-kem`
    /// (portable and AVX2 code, chosen at run time), X25519 from `libcrux-curve25519`
    /// (HACL*), X-Wing encapsulation from `libcrux-kem`, SHA3-256 from `libcrux-sha3`. The
    /// data layer (HKDF-SHA256, AES-256-GCM, SHA-256) stays on AWS-LC, so that `libcrux`
    /// against `aws-lc` isolates the KEM. No RSA: the RSA modes refuse it.
    Libcrux,
    /// OpenSSL 3.6 (native ML-KEM since 3.5), built from source by `openssl-src`, through
    /// the `openssl` crate: ML-KEM, X25519, HKDF-SHA256, AES-256-GCM, SHA-256, SHA3-256;
    /// X-Wing composed from them. No RSA. Only in builds with envelope's cargo feature
    /// `openssl`; elsewhere it implements no mode and says which feature it needs.
    OpenSsl,
}

impl Backend {
    /// Every backend of this build, in the order reports list them.
    #[cfg(feature = "openssl")]
    pub const ALL: [Backend; 4] = Self::EVERY;
    /// Every backend of this build, in the order reports list them (`openssl` needs the
    /// cargo feature).
    #[cfg(not(feature = "openssl"))]
    pub const ALL: [Backend; 3] = [Backend::AwsLc, Backend::RustCrypto, Backend::Libcrux];
    /// Every backend a campaign may name, built here or not (the CRD's enumeration, so that
    /// a file is valid on every build and executor).
    pub const EVERY: [Backend; 4] = [
        Backend::AwsLc,
        Backend::RustCrypto,
        Backend::Libcrux,
        Backend::OpenSsl,
    ];

    /// The backend's command-line name.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::AwsLc => "aws-lc",
            Backend::RustCrypto => "rustcrypto",
            Backend::Libcrux => "libcrux",
            Backend::OpenSsl => "openssl",
        }
    }

    /// Whether this build has the backend (`openssl` needs the cargo feature).
    pub const fn built(self) -> bool {
        !matches!(self, Backend::OpenSsl) || cfg!(feature = "openssl")
    }

    /// Whether the backend implements `mode`'s key establishment in any build (libcrux and
    /// openssl have no RSA here): what a campaign file is validated against.
    pub const fn implements(self, mode: Mode) -> bool {
        !matches!(
            (self, mode),
            (
                Backend::Libcrux | Backend::OpenSsl,
                Mode::RsaOaep4096 | Mode::RsaOaep3072
            )
        )
    }

    /// Whether this build's backend implements `mode` ([`Backend::implements`] and
    /// [`Backend::built`]).
    pub const fn supports(self, mode: Mode) -> bool {
        self.built() && self.implements(mode)
    }

    /// Refuses a mode the backend does not implement, naming both and what to do.
    pub fn check_supports(self, mode: Mode) -> Result<()> {
        if !self.built() {
            Err(crate::ossl::unavailable())
        } else if self.supports(mode) {
            Ok(())
        } else {
            Err(Error::Usage(format!(
                "backend {self} does not implement mode {mode} (libcrux and openssl have no \
                 RSA here); use aws-lc or rustcrypto for the RSA modes"
            )))
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "aws-lc" | "aws-lc-rs" => Ok(Backend::AwsLc),
            "rustcrypto" | "rust-crypto" => Ok(Backend::RustCrypto),
            "libcrux" => Ok(Backend::Libcrux),
            "openssl" => Ok(Backend::OpenSsl),
            _ => Err(Error::UnknownBackend(s.to_owned())),
        }
    }
}

impl serde::Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Mode {
    /// Accepts the canonical name or the study code, like [`FromStr`].
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Backend {
    fn serialize<S: serde::Serializer>(&self, s: S) -> core::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Backend {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Bounds of one `ml-kem-768-session` session (the study's B_max and T_max, section V-F).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionBounds {
    /// B_max: at most this many objects share one root (≥ 1).
    pub max_objects: u64,
    /// T_max: a root is not used for a new object once it is this old.
    pub max_age: Duration,
}

impl Default for SessionBounds {
    /// B_max = 100, T_max = 10 s, the middle of the study's grid.
    fn default() -> Self {
        Self {
            max_objects: 100,
            max_age: Duration::from_secs(10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for m in Mode::ALL {
            assert_eq!(m.name().parse::<Mode>().ok(), Some(m));
            if let Some(code) = m.study_code() {
                assert_eq!(code.parse::<Mode>().ok(), Some(m));
                assert_eq!(code.to_lowercase().parse::<Mode>().ok(), Some(m));
            }
        }
        assert!("ml-kem-512".parse::<Mode>().is_err());
        assert_eq!("P1".parse::<Mode>().ok(), Some(Mode::MlKem768));
        assert_eq!("C2".parse::<Mode>().ok(), Some(Mode::X25519Padded));
    }

    #[test]
    fn ciphertext_sizes_follow_design_table() {
        let expect = [
            (Mode::RsaOaep4096, 512),
            (Mode::X25519, 32),
            (Mode::MlKem768, 1088),
            (Mode::ConcatHybrid, 1120),
            (Mode::XWing, 1120),
            (Mode::MlKem768Session, 1088),
            (Mode::X25519Padded, 1088),
            (Mode::MlKem1024, 1568),
            (Mode::RsaOaep3072, 384),
        ];
        for (m, n) in expect {
            assert_eq!(m.ciphertext_len(), n, "{m}");
        }
    }
}
