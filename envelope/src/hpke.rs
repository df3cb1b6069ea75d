//! HPKE base mode (RFC 9180 §5.1) with the post-quantum KEMs of draft-ietf-hpke-pq-05, as
//! format v2 wraps its data keys (`FORMAT-v2.md` §5).
//!
//! One implementation of HPKE's logic, over the envelope's KEM layer (its ML-KEM, X-Wing
//! and X25519 modules: the same keys, caches and refusals format v1 uses, on both backends) and each backend's HMAC/HKDF and AEAD. So the two backends run the same
//! HPKE and differ only in their primitives, and v1 against v2 compares formats, not KEM
//! implementations. The official HPKE-PQ and RFC 9180 vectors check both
//! (`envelope/tests/hpke.rs`), and pyca `cryptography`'s `hpke` (OpenSSL) checks them from
//! outside (`tests/interop`).
//!
//! - KEMs (draft-ietf-hpke-pq-05 table 1, RFC 9180 §7.1): DHKEM(X25519, HKDF-SHA256)
//!   `0x0020`; ML-KEM-768 `0x0041` and ML-KEM-1024 `0x0042` (the shared secret is
//!   ML-KEM's, no ExtractAndExpand; private keys are the 64-byte seed `d ‖ z`); X-Wing
//!   `0x647a` (private key the 32-byte seed).
//! - KDFs: HKDF-SHA256 `0x0001`, HKDF-SHA384 `0x0002` (two-stage, RFC 9180 §4).
//! - AEADs: AES-128-GCM `0x0001`, AES-256-GCM `0x0002`, ChaCha20-Poly1305 `0x0003`.
//! - `DeriveKeyPair` (for vectors and deterministic keys): RFC 9180 §7.1.3 for X25519;
//!   `SHAKE256.LabeledDerive(ikm, "DeriveKeyPair", "", Nsk)` for the others (draft §3, §4).
//!
//! Not implemented: the PSK, Auth and AuthPSK modes (the post-quantum KEMs have no Auth mode),
//! and the single-stage SHAKE KDFs.

use aws_lc_rs::{aead as lc_aead, hkdf as lc_hkdf, hmac as lc_hmac};
use rand_core::CryptoRng;
use shake::{ExtendableOutput, Update, XofReader};
use zeroize::Zeroizing;

use crate::mlkem::{self, Params};
use crate::symmetric::Secret32;
use crate::{Backend, Error, Result, x25519, xwing};

/// A KEM of the HPKE registry that pqbench implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KemId {
    /// DHKEM(X25519, HKDF-SHA256), RFC 9180.
    X25519 = 0x0020,
    /// ML-KEM-768, draft-ietf-hpke-pq.
    MlKem768 = 0x0041,
    /// ML-KEM-1024.
    MlKem1024 = 0x0042,
    /// MLKEM768-X25519 (X-Wing).
    XWing = 0x647a,
}

/// A KDF of the HPKE registry that pqbench implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KdfId {
    /// HKDF-SHA256.
    HkdfSha256 = 0x0001,
    /// HKDF-SHA384.
    HkdfSha384 = 0x0002,
}

/// An AEAD of the HPKE registry that pqbench implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AeadId {
    /// AES-128-GCM.
    Aes128Gcm = 0x0001,
    /// AES-256-GCM.
    Aes256Gcm = 0x0002,
    /// ChaCha20-Poly1305.
    ChaCha20Poly1305 = 0x0003,
}

impl KemId {
    /// pqbench's name of the KEM (as its key files' key types).
    pub const fn name(self) -> &'static str {
        match self {
            Self::X25519 => "x25519",
            Self::MlKem768 => "ml-kem-768",
            Self::MlKem1024 => "ml-kem-1024",
            Self::XWing => "x-wing",
        }
    }

    /// The registry value.
    pub const fn id(self) -> u16 {
        self as u16
    }

    /// From a registry value.
    pub fn from_id(id: u16) -> Option<Self> {
        [Self::X25519, Self::MlKem768, Self::MlKem1024, Self::XWing]
            .into_iter()
            .find(|k| k.id() == id)
    }

    /// `Nenc`: length of `enc`.
    pub const fn enc_len(self) -> usize {
        match self {
            Self::X25519 => 32,
            Self::MlKem768 => 1088,
            Self::MlKem1024 => 1568,
            Self::XWing => 1120,
        }
    }

    /// `Npk`: length of a public key.
    pub const fn public_len(self) -> usize {
        match self {
            Self::X25519 => 32,
            Self::MlKem768 => 1184,
            Self::MlKem1024 => 1568,
            Self::XWing => 1216,
        }
    }

    /// `Nsk`: length of a private key (ML-KEM: the seed `d ‖ z`; X-Wing: its seed).
    pub const fn secret_len(self) -> usize {
        match self {
            Self::X25519 | Self::XWing => 32,
            Self::MlKem768 | Self::MlKem1024 => 64,
        }
    }

    /// Whether the KEM resists a quantum adversary (X-Wing does through its ML-KEM half).
    pub const fn post_quantum(self) -> bool {
        !matches!(self, Self::X25519)
    }

    fn suite_id(self) -> [u8; 5] {
        let [a, b] = self.id().to_be_bytes();
        [b'K', b'E', b'M', a, b]
    }
}

impl KdfId {
    /// The registry value.
    pub const fn id(self) -> u16 {
        self as u16
    }

    /// From a registry value.
    pub fn from_id(id: u16) -> Option<Self> {
        [Self::HkdfSha256, Self::HkdfSha384]
            .into_iter()
            .find(|k| k.id() == id)
    }

    /// `Nh`: the hash's output length.
    pub const fn hash_len(self) -> usize {
        match self {
            Self::HkdfSha256 => 32,
            Self::HkdfSha384 => 48,
        }
    }
}

impl AeadId {
    /// The registry value.
    pub const fn id(self) -> u16 {
        self as u16
    }

    /// From a registry value.
    pub fn from_id(id: u16) -> Option<Self> {
        [Self::Aes128Gcm, Self::Aes256Gcm, Self::ChaCha20Poly1305]
            .into_iter()
            .find(|k| k.id() == id)
    }

    /// `Nk`: key length.
    pub const fn key_len(self) -> usize {
        match self {
            Self::Aes128Gcm => 16,
            Self::Aes256Gcm | Self::ChaCha20Poly1305 => 32,
        }
    }

    /// `Nn`: nonce length.
    pub const fn nonce_len(self) -> usize {
        12
    }

    /// `Nt`: tag length.
    pub const fn tag_len(self) -> usize {
        16
    }
}

/// A ciphersuite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Suite {
    /// The KEM.
    pub kem: KemId,
    /// The KDF of the key schedule.
    pub kdf: KdfId,
    /// The AEAD.
    pub aead: AeadId,
}

impl Suite {
    /// `"HPKE" ‖ I2OSP(kem_id, 2) ‖ I2OSP(kdf_id, 2) ‖ I2OSP(aead_id, 2)` (RFC 9180 §5.1).
    fn suite_id(self) -> [u8; 10] {
        let mut s = [0u8; 10];
        s[..4].copy_from_slice(b"HPKE");
        s[4..6].copy_from_slice(&self.kem.id().to_be_bytes());
        s[6..8].copy_from_slice(&self.kdf.id().to_be_bytes());
        s[8..].copy_from_slice(&self.aead.id().to_be_bytes());
        s
    }
}

/// Secret bytes of any length, zeroized on drop.
type SecretVec = Zeroizing<Vec<u8>>;

// ---------------------------------------------------------------------------------------
// The two-stage KDF on each backend (RFC 5869), and the labelled forms (RFC 9180 §4).

/// HKDF-Extract(salt, ikm) = HMAC(salt, ikm); an empty salt is `Nh` zero bytes.
fn extract(backend: Backend, kdf: KdfId, salt: &[u8], ikm: &[&[u8]]) -> Result<SecretVec> {
    let zeros = vec![0u8; kdf.hash_len()];
    let salt = if salt.is_empty() { &zeros[..] } else { salt };
    match backend {
        Backend::AwsLc | Backend::Libcrux => {
            let alg = match kdf {
                KdfId::HkdfSha256 => lc_hmac::HMAC_SHA256,
                KdfId::HkdfSha384 => lc_hmac::HMAC_SHA384,
            };
            let mut ctx = lc_hmac::Context::with_key(&lc_hmac::Key::new(alg, salt));
            for part in ikm {
                ctx.update(part);
            }
            Ok(Zeroizing::new(ctx.sign().as_ref().to_vec()))
        }
        Backend::RustCrypto => {
            let joined: SecretVec = Zeroizing::new(ikm.concat());
            Ok(match kdf {
                KdfId::HkdfSha256 => {
                    let (prk, _) = hkdf::Hkdf::<sha2::Sha256>::extract(Some(salt), &joined);
                    Zeroizing::new(prk.to_vec())
                }
                KdfId::HkdfSha384 => {
                    let (prk, _) = hkdf::Hkdf::<sha2::Sha384>::extract(Some(salt), &joined);
                    Zeroizing::new(prk.to_vec())
                }
            })
        }
        Backend::OpenSsl => crate::ossl::hmac(kdf, salt, ikm),
    }
}

/// HKDF-Expand(prk, info, len) with `len ≤ 255 · Nh`.
fn expand(
    backend: Backend,
    kdf: KdfId,
    prk: &[u8],
    info: &[&[u8]],
    len: usize,
) -> Result<SecretVec> {
    let mut out = Zeroizing::new(vec![0u8; len]);
    let too_long = || Error::Crypto("hpke: expand length above 255 · Nh");
    match backend {
        Backend::AwsLc | Backend::Libcrux => {
            struct Len(usize);
            impl lc_hkdf::KeyType for Len {
                fn len(&self) -> usize {
                    self.0
                }
            }
            let alg = match kdf {
                KdfId::HkdfSha256 => lc_hkdf::HKDF_SHA256,
                KdfId::HkdfSha384 => lc_hkdf::HKDF_SHA384,
            };
            lc_hkdf::Prk::new_less_safe(alg, prk)
                .expand(info, Len(len))
                .map_err(|_| too_long())?
                .fill(&mut out)
                .map_err(|_| too_long())?;
        }
        Backend::OpenSsl => {
            return crate::ossl::hkdf_expand(kdf, prk, &info.concat(), len);
        }
        Backend::RustCrypto => {
            let info = info.concat();
            let bad_prk = |_| Error::Crypto("hpke: pseudorandom key shorter than Nh");
            match kdf {
                KdfId::HkdfSha256 => hkdf::Hkdf::<sha2::Sha256>::from_prk(prk)
                    .map_err(bad_prk)?
                    .expand(&info, &mut out)
                    .map_err(|_| too_long())?,
                KdfId::HkdfSha384 => hkdf::Hkdf::<sha2::Sha384>::from_prk(prk)
                    .map_err(bad_prk)?
                    .expand(&info, &mut out)
                    .map_err(|_| too_long())?,
            }
        }
    }
    Ok(out)
}

const HPKE_V1: &[u8] = b"HPKE-v1";

/// `LabeledExtract(salt, label, ikm) = Extract(salt, "HPKE-v1" ‖ suite_id ‖ label ‖ ikm)`.
fn labeled_extract(
    backend: Backend,
    kdf: KdfId,
    suite_id: &[u8],
    salt: &[u8],
    label: &[u8],
    ikm: &[u8],
) -> Result<SecretVec> {
    extract(backend, kdf, salt, &[HPKE_V1, suite_id, label, ikm])
}

/// `LabeledExpand(prk, label, info, L) = Expand(prk, I2OSP(L, 2) ‖ "HPKE-v1" ‖ suite_id ‖
/// label ‖ info, L)`.
fn labeled_expand(
    backend: Backend,
    kdf: KdfId,
    suite_id: &[u8],
    prk: &[u8],
    label: &[u8],
    info: &[u8],
    len: usize,
) -> Result<SecretVec> {
    let l = u16::try_from(len)
        .map_err(|_| Error::Crypto("hpke: expand length above 65535"))?
        .to_be_bytes();
    expand(
        backend,
        kdf,
        prk,
        &[&l, HPKE_V1, suite_id, label, info],
        len,
    )
}

/// `SHAKE256.LabeledDerive(ikm, "DeriveKeyPair", "", L)` (draft-ietf-hpke-pq §3, §4):
/// `SHAKE256(ikm ‖ "HPKE-v1" ‖ suite_id ‖ lp("DeriveKeyPair") ‖ I2OSP(L, 2))[..L]`.
fn shake_derive(kem: KemId, ikm: &[u8], len: usize) -> SecretVec {
    let label = b"DeriveKeyPair";
    let mut x = shake::Shake256::default();
    x.update(ikm);
    x.update(HPKE_V1);
    x.update(&kem.suite_id());
    x.update(&u16::try_from(label.len()).unwrap_or(u16::MAX).to_be_bytes());
    x.update(label);
    x.update(&u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes());
    let mut out = Zeroizing::new(vec![0u8; len]);
    x.finalize_xof().read(&mut out);
    out
}

// ---------------------------------------------------------------------------------------
// KEMs.

/// A key pair of a KEM, as its serialised private and public keys.
pub struct KeyPair {
    /// The private key (`Nsk` bytes).
    pub secret: SecretVec,
    /// The public key (`Npk` bytes).
    pub public: Vec<u8>,
}

/// `DeriveKeyPair(ikm)` of `kem` (RFC 9180 §7.1.3; draft-ietf-hpke-pq §3, §4).
pub fn derive_key_pair(kem: KemId, ikm: &[u8]) -> Result<KeyPair> {
    match kem {
        KemId::X25519 => {
            // DHKEM's labelled HKDF-SHA256 with suite_id "KEM" ‖ 0x0020; one try suffices
            // for X25519 (any 32 bytes are a scalar).
            let sid = kem.suite_id();
            let b = Backend::RustCrypto;
            let prk = labeled_extract(b, KdfId::HkdfSha256, &sid, b"", b"dkp_prk", ikm)?;
            let sk = labeled_expand(b, KdfId::HkdfSha256, &sid, &prk, b"sk", b"", 32)?;
            let mut arr = [0u8; 32];
            arr.copy_from_slice(&sk);
            let public = x25519::public_from_secret(&arr).to_vec();
            Ok(KeyPair { secret: sk, public })
        }
        KemId::MlKem768 | KemId::MlKem1024 => {
            let seed = shake_derive(kem, ikm, 64);
            let mut arr = Zeroizing::new([0u8; 64]);
            arr.copy_from_slice(&seed);
            let public = mlkem::public_from_seed(params(kem), &arr);
            Ok(KeyPair {
                secret: seed,
                public,
            })
        }
        KemId::XWing => {
            let seed = shake_derive(kem, ikm, 32);
            let mut arr = Zeroizing::new([0u8; 32]);
            arr.copy_from_slice(&seed);
            let public = xwing::public_from_seed(&arr);
            Ok(KeyPair {
                secret: seed,
                public,
            })
        }
    }
}

fn params(kem: KemId) -> Params {
    if kem == KemId::MlKem1024 {
        Params::K1024
    } else {
        Params::K768
    }
}

/// Where an encapsulation's randomness comes from.
pub enum Randomness<'a, R: CryptoRng + ?Sized> {
    /// Drawn from a generator (AWS-LC draws ML-KEM's `m` itself).
    Rng(&'a mut R),
    /// Given (known-answer tests): X25519 `ikmE` (through DeriveKeyPair), ML-KEM's 32-byte
    /// `m`, X-Wing's 64 bytes. ML-KEM and X-Wing take it on RustCrypto only.
    Fixed(&'a [u8]),
}

/// DHKEM(X25519)'s `ExtractAndExpand(dh, enc ‖ pkR)` (RFC 9180 §4.1).
pub(crate) fn dhkem_shared(
    backend: Backend,
    dh: &[u8],
    enc: &[u8],
    pk_r: &[u8],
) -> Result<Secret32> {
    let sid = KemId::X25519.suite_id();
    let kdf = KdfId::HkdfSha256;
    let prk = labeled_extract(backend, kdf, &sid, b"", b"eae_prk", dh)?;
    let ctx = [enc, pk_r].concat();
    let ss = labeled_expand(backend, kdf, &sid, &prk, b"shared_secret", &ctx, 32)?;
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&ss);
    Ok(out)
}

fn array<const N: usize>(bytes: &[u8], what: &str) -> Result<[u8; N]> {
    bytes
        .try_into()
        .map_err(|_| Error::Key(format!("{what} is {} bytes, expected {N}", bytes.len())))
}

/// `Encap(pkR)`: `(enc, shared_secret)`.
pub fn encap<R: CryptoRng + ?Sized>(
    backend: Backend,
    kem: KemId,
    pk_r: &[u8],
    randomness: Randomness<'_, R>,
) -> Result<(Vec<u8>, Secret32)> {
    let fixed_unsupported = || {
        Error::Usage(format!(
            "deterministic {kem:?} encapsulation is not available on the aws-lc and openssl \
             backends (use rustcrypto or libcrux)"
        ))
    };
    match kem {
        KemId::X25519 => {
            let peer: [u8; 32] = array(pk_r, "an X25519 public key")?;
            let (enc, dh) = match randomness {
                Randomness::Rng(rng) => x25519::ephemeral_agree(backend, &peer, rng)?,
                Randomness::Fixed(ikm_e) => {
                    x25519::check_public(&peer)?;
                    let e = derive_key_pair(kem, ikm_e)?;
                    let sk: [u8; 32] = array(&e.secret, "an X25519 secret key")?;
                    let dh = x25519::StaticKey::new(backend, &sk)?.agree(&peer)?;
                    (array(&e.public, "an X25519 public key")?, dh)
                }
            };
            let ss = dhkem_shared(backend, &dh[..], &enc, pk_r)?;
            Ok((enc.to_vec(), ss))
        }
        KemId::MlKem768 | KemId::MlKem1024 => {
            let ek = mlkem::EncapKey::parse(backend, params(kem), pk_r)?;
            match randomness {
                Randomness::Rng(rng) => ek.encapsulate(rng),
                Randomness::Fixed(m) => ek
                    .encapsulate_deterministic(&array(m, "ML-KEM encapsulation randomness")?)
                    .ok_or_else(fixed_unsupported),
            }
        }
        KemId::XWing => {
            let ek = xwing::EncapKey::parse(backend, pk_r)?;
            match randomness {
                Randomness::Rng(rng) => ek.encapsulate(rng),
                Randomness::Fixed(e) => ek
                    .encapsulate_deterministic(&array(e, "X-Wing encapsulation randomness")?)
                    .ok_or_else(fixed_unsupported),
            }
        }
    }
}

/// A recipient's private key, loaded (and for ML-KEM and X-Wing expanded) once.
pub struct PrivateKey {
    backend: Backend,
    kem: KemId,
    inner: Inner,
    public: Vec<u8>,
}

enum Inner {
    X25519(x25519::StaticKey),
    MlKem(mlkem::DecapKey),
    XWing(xwing::DecapKey),
}

impl PrivateKey {
    /// Loads a serialised private key (`Nsk` bytes) of `kem`.
    pub fn new(backend: Backend, kem: KemId, secret: &[u8]) -> Result<Self> {
        let (inner, public) = match kem {
            KemId::X25519 => {
                let sk: Zeroizing<[u8; 32]> =
                    Zeroizing::new(array(secret, "an X25519 secret key")?);
                (
                    Inner::X25519(x25519::StaticKey::new(backend, &sk)?),
                    x25519::public_from_secret(&sk).to_vec(),
                )
            }
            KemId::MlKem768 | KemId::MlKem1024 => {
                let seed: Zeroizing<[u8; 64]> = Zeroizing::new(array(secret, "an ML-KEM seed")?);
                (
                    Inner::MlKem(mlkem::DecapKey::from_seed(backend, params(kem), &seed)?),
                    mlkem::public_from_seed(params(kem), &seed),
                )
            }
            KemId::XWing => {
                let seed: Zeroizing<[u8; 32]> = Zeroizing::new(array(secret, "an X-Wing seed")?);
                (
                    Inner::XWing(xwing::DecapKey::from_seed(backend, &seed)?),
                    xwing::public_from_seed(&seed),
                )
            }
        };
        Ok(Self {
            backend,
            kem,
            inner,
            public,
        })
    }

    /// The public key.
    pub fn public(&self) -> &[u8] {
        &self.public
    }

    /// The KEM.
    pub fn kem(&self) -> KemId {
        self.kem
    }

    /// The backend it was loaded on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `Decap(enc, skR)`; any failure is the opaque [`Error::Decrypt`].
    pub fn decap(&self, enc: &[u8]) -> Result<Secret32> {
        if enc.len() != self.kem.enc_len() {
            return Err(Error::Decrypt);
        }
        match &self.inner {
            Inner::X25519(k) => {
                let e: [u8; 32] = array(enc, "enc").map_err(|_| Error::Decrypt)?;
                let dh = k.agree(&e)?;
                dhkem_shared(self.backend, &dh[..], enc, &self.public)
            }
            Inner::MlKem(k) => k.decapsulate(enc),
            Inner::XWing(k) => k.decapsulate(enc),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The key schedule (base mode) and the encryption context.

/// An HPKE encryption context (RFC 9180 §5.2): the sender's or the receiver's.
pub struct Context {
    backend: Backend,
    suite: Suite,
    key: SecretVec,
    base_nonce: Vec<u8>,
    exporter_secret: SecretVec,
    seq: u64,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("suite", &self.suite)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// `KeySchedule(mode_base, shared_secret, info, "", "")` (RFC 9180 §5.1).
fn key_schedule(
    backend: Backend,
    suite: Suite,
    shared_secret: &[u8],
    info: &[u8],
) -> Result<Context> {
    let sid = suite.suite_id();
    let kdf = suite.kdf;
    let psk_id_hash = labeled_extract(backend, kdf, &sid, b"", b"psk_id_hash", b"")?;
    let info_hash = labeled_extract(backend, kdf, &sid, b"", b"info_hash", info)?;
    let ksc = [&[0u8][..], &psk_id_hash, &info_hash].concat();
    let secret = labeled_extract(backend, kdf, &sid, shared_secret, b"secret", b"")?;
    let key = labeled_expand(
        backend,
        kdf,
        &sid,
        &secret,
        b"key",
        &ksc,
        suite.aead.key_len(),
    )?;
    let base_nonce = labeled_expand(
        backend,
        kdf,
        &sid,
        &secret,
        b"base_nonce",
        &ksc,
        suite.aead.nonce_len(),
    )?;
    let exporter_secret =
        labeled_expand(backend, kdf, &sid, &secret, b"exp", &ksc, kdf.hash_len())?;
    Ok(Context {
        backend,
        suite,
        key,
        base_nonce: base_nonce.to_vec(),
        exporter_secret,
        seq: 0,
    })
}

/// `SetupBaseS(pkR, info)`: `(enc, context)`.
pub fn setup_base_s<R: CryptoRng + ?Sized>(
    backend: Backend,
    suite: Suite,
    pk_r: &[u8],
    info: &[u8],
    randomness: Randomness<'_, R>,
) -> Result<(Vec<u8>, Context)> {
    let (enc, ss) = encap(backend, suite.kem, pk_r, randomness)?;
    Ok((enc, key_schedule(backend, suite, &ss[..], info)?))
}

/// `SetupBaseR` once the KEM's shared secret is known (its `Decap` done elsewhere: a key
/// service): the key schedule alone.
pub(crate) fn setup_base_r_shared(
    backend: Backend,
    suite: Suite,
    shared_secret: &[u8],
    info: &[u8],
) -> Result<Context> {
    key_schedule(backend, suite, shared_secret, info)
}

/// `SetupBaseR(enc, skR, info)`.
pub fn setup_base_r(suite: Suite, enc: &[u8], sk_r: &PrivateKey, info: &[u8]) -> Result<Context> {
    if sk_r.kem != suite.kem {
        return Err(Error::Usage(format!(
            "a {:?} key cannot open a {:?} encapsulation",
            sk_r.kem, suite.kem
        )));
    }
    let ss = sk_r.decap(enc)?;
    key_schedule(sk_r.backend, suite, &ss[..], info)
}

impl Context {
    /// `base_nonce XOR I2OSP(seq, Nn)`.
    fn nonce(&self) -> [u8; 12] {
        let mut n = [0u8; 12];
        n.copy_from_slice(&self.base_nonce);
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    fn advance(&mut self) -> Result<()> {
        self.seq = self
            .seq
            .checked_add(1)
            .ok_or(Error::Crypto("hpke: message limit reached"))?;
        Ok(())
    }

    /// `Seal(aad, pt)`: the ciphertext with its tag.
    pub fn seal(&mut self, aad: &[u8], pt: &[u8]) -> Result<Vec<u8>> {
        let nonce = self.nonce();
        let mut buf = pt.to_vec();
        aead_seal(
            self.backend,
            self.suite.aead,
            &self.key,
            &nonce,
            aad,
            &mut buf,
        )?;
        self.advance()?;
        Ok(buf)
    }

    /// `Open(aad, ct)`; failure is the opaque [`Error::Decrypt`] (and the sequence number
    /// does not advance, RFC 9180 §5.2).
    pub fn open(&mut self, aad: &[u8], ct: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        let nonce = self.nonce();
        let pt = aead_open(self.backend, self.suite.aead, &self.key, &nonce, aad, ct)?;
        self.advance()?;
        Ok(pt)
    }

    /// `Export(exporter_context, L)` (RFC 9180 §5.3).
    pub fn export(&self, exporter_context: &[u8], len: usize) -> Result<SecretVec> {
        labeled_expand(
            self.backend,
            self.suite.kdf,
            &self.suite.suite_id(),
            &self.exporter_secret,
            b"sec",
            exporter_context,
            len,
        )
    }
}

// ---------------------------------------------------------------------------------------
// AEADs on each backend.

fn aead_seal(
    backend: Backend,
    aead: AeadId,
    key: &[u8],
    nonce: &[u8; 12],
    aad: &[u8],
    buf: &mut Vec<u8>,
) -> Result<()> {
    let fail = || Error::Crypto("hpke: seal");
    match backend {
        Backend::AwsLc | Backend::Libcrux => {
            let k = lc_aead::LessSafeKey::new(
                lc_aead::UnboundKey::new(lc_alg(aead), key).map_err(|_| fail())?,
            );
            k.seal_in_place_append_tag(
                lc_aead::Nonce::assume_unique_for_key(*nonce),
                lc_aead::Aad::from(aad),
                buf,
            )
            .map_err(|_| fail())
        }
        Backend::OpenSsl => crate::ossl::aead_seal(aead, key, nonce, aad, buf),
        Backend::RustCrypto => {
            use aes_gcm::aead::{Aead as _, KeyInit as _, Payload};
            let payload = Payload { msg: buf, aad };
            let out = match aead {
                AeadId::Aes128Gcm => aes_gcm::Aes128Gcm::new_from_slice(key)
                    .map_err(|_| fail())?
                    .encrypt(nonce.into(), payload),
                AeadId::Aes256Gcm => aes_gcm::Aes256Gcm::new_from_slice(key)
                    .map_err(|_| fail())?
                    .encrypt(nonce.into(), payload),
                AeadId::ChaCha20Poly1305 => chacha20poly1305::ChaCha20Poly1305::new_from_slice(key)
                    .map_err(|_| fail())?
                    .encrypt(nonce.into(), payload),
            }
            .map_err(|_| fail())?;
            *buf = out;
            Ok(())
        }
    }
}

fn aead_open(
    backend: Backend,
    aead: AeadId,
    key: &[u8],
    nonce: &[u8; 12],
    aad: &[u8],
    ct: &[u8],
) -> Result<Zeroizing<Vec<u8>>> {
    match backend {
        Backend::AwsLc | Backend::Libcrux => {
            let k = lc_aead::LessSafeKey::new(
                lc_aead::UnboundKey::new(lc_alg(aead), key).map_err(|_| Error::Decrypt)?,
            );
            let mut buf = Zeroizing::new(ct.to_vec());
            let n = k
                .open_in_place(
                    lc_aead::Nonce::assume_unique_for_key(*nonce),
                    lc_aead::Aad::from(aad),
                    &mut buf,
                )
                .map_err(|_| Error::Decrypt)?
                .len();
            buf.truncate(n);
            Ok(buf)
        }
        Backend::OpenSsl => crate::ossl::aead_open(aead, key, nonce, aad, ct),
        Backend::RustCrypto => {
            use aes_gcm::aead::{Aead as _, KeyInit as _, Payload};
            let payload = Payload { msg: ct, aad };
            let out = match aead {
                AeadId::Aes128Gcm => aes_gcm::Aes128Gcm::new_from_slice(key)
                    .map_err(|_| Error::Decrypt)?
                    .decrypt(nonce.into(), payload),
                AeadId::Aes256Gcm => aes_gcm::Aes256Gcm::new_from_slice(key)
                    .map_err(|_| Error::Decrypt)?
                    .decrypt(nonce.into(), payload),
                AeadId::ChaCha20Poly1305 => chacha20poly1305::ChaCha20Poly1305::new_from_slice(key)
                    .map_err(|_| Error::Decrypt)?
                    .decrypt(nonce.into(), payload),
            };
            out.map(Zeroizing::new).map_err(|_| Error::Decrypt)
        }
    }
}

fn lc_alg(aead: AeadId) -> &'static lc_aead::Algorithm {
    match aead {
        AeadId::Aes128Gcm => &lc_aead::AES_128_GCM,
        AeadId::Aes256Gcm => &lc_aead::AES_256_GCM,
        AeadId::ChaCha20Poly1305 => &lc_aead::CHACHA20_POLY1305,
    }
}
