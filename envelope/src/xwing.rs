//! X-Wing (draft-connolly-cfrg-xwing-kem), the hybrid KEM of mode `x-wing` (study code P3).
//!
//! The decapsulation key is a 32-byte seed; it expands with SHAKE256 to 96 bytes: the first
//! 64 are the ML-KEM-768 seed `d ‖ z`, the last 32 the X25519 scalar (draft section
//! "Key derivation"). Ciphertext = `ct_M ‖ ct_X` (1088 + 32 = 1120 bytes); encapsulation key
//! = `pk_M ‖ pk_X` (1184 + 32 = 1216 bytes); shared secret =
//! `SHA3-256(ss_M ‖ ss_X ‖ ct_X ‖ pk_X ‖ XWingLabel)` with `XWingLabel = "\.//^\"`.
//!
//! On `aws-lc` X-Wing is composed from AWS-LC's ML-KEM-768, X25519 and SHA3-256. On
//! `rustcrypto`, encapsulation uses the `x-wing` crate; decapsulation is composed from the
//! same RustCrypto parts because `x_wing::DecapsulationKey` re-expands its seed (SHAKE256 +
//! ML-KEM key generation) on every call, the per-operation re-derivation that the study
//! found to dominate. The expanded key is cached per key load instead (the draft permits it).
//! On `libcrux`, encapsulation is `libcrux-kem`'s X-Wing (draft 06), decapsulation composed
//! from libcrux's ML-KEM-768, X25519 and SHA3-256 for the same reason (`libcrux-kem` also
//! re-expands the seed per call). Every composition is checked against the draft's test
//! vectors and the crates.

use rand_core::CryptoRng;
use shake::{ExtendableOutput, Update, XofReader};
use zeroize::Zeroizing;

use crate::mlkem::{self, Params};
use crate::symmetric::{Secret32, sha3_256};
use crate::x25519;
use crate::{Backend, Error, Result};

/// The X-Wing label `\.//^\` (draft section "Combiner"; format constant).
pub(crate) const LABEL: &[u8; 6] = b"\\.//^\\";
/// Encapsulation key length.
pub(crate) const PUBLIC_LEN: usize = 1216;
/// Ciphertext length.
pub(crate) const CIPHERTEXT_LEN: usize = 1120;
const MLKEM_CT_LEN: usize = 1088;
const MLKEM_PK_LEN: usize = 1184;

/// Expands a 32-byte X-Wing seed into (ML-KEM-768 seed, X25519 scalar) with SHAKE256.
pub(crate) fn expand_seed(seed: &[u8; 32]) -> (Zeroizing<[u8; 64]>, Zeroizing<[u8; 32]>) {
    let mut shake = shake::Shake256::default();
    shake.update(seed);
    let mut reader = shake.finalize_xof();
    let mut m = Zeroizing::new([0u8; 64]);
    let mut x = Zeroizing::new([0u8; 32]);
    reader.read(m.as_mut());
    reader.read(x.as_mut());
    (m, x)
}

/// The encapsulation key `pk_M ‖ pk_X` of a seed.
pub(crate) fn public_from_seed(seed: &[u8; 32]) -> Vec<u8> {
    let (m, x) = expand_seed(seed);
    let mut pk = mlkem::public_from_seed(Params::K768, &m);
    pk.extend_from_slice(&x25519::public_from_secret(&x));
    pk
}

fn combiner(
    backend: Backend,
    ss_m: &[u8; 32],
    ss_x: &[u8; 32],
    ct_x: &[u8],
    pk_x: &[u8; 32],
) -> Secret32 {
    Zeroizing::new(sha3_256(backend, &[ss_m, ss_x, ct_x, pk_x, LABEL]))
}

/// A parsed X-Wing encapsulation key.
pub(crate) enum EncapKey {
    /// Composed from the backend's parts (AWS-LC's or OpenSSL's).
    Composed {
        /// The backend of the parts.
        backend: Backend,
        /// ML-KEM-768 half.
        pk_m: mlkem::EncapKey,
        /// X25519 half.
        pk_x: [u8; 32],
    },
    /// The `x-wing` crate.
    Rc(Box<x_wing::EncapsulationKey>),
    /// `libcrux-kem`'s X-Wing.
    Lc(Box<libcrux_kem::PublicKey>),
}

impl EncapKey {
    /// Parses `pk_M ‖ pk_X`, refusing a small-order `pk_X`.
    pub(crate) fn parse(backend: Backend, bytes: &[u8]) -> Result<Self> {
        if bytes.len() != PUBLIC_LEN {
            return Err(Error::Key(format!(
                "X-Wing public key is {} bytes, expected {PUBLIC_LEN}",
                bytes.len()
            )));
        }
        let (m, x) = bytes.split_at(MLKEM_PK_LEN);
        let mut pk_x = [0u8; 32];
        pk_x.copy_from_slice(x);
        // The `x-wing` crate accepts a small-order X25519 share (its shared secret is then
        // the ML-KEM half alone); pqbench refuses it on both backends.
        x25519::check_public(&pk_x)?;
        Ok(match backend {
            Backend::AwsLc | Backend::OpenSsl => EncapKey::Composed {
                backend,
                pk_m: mlkem::EncapKey::parse(backend, Params::K768, m)?,
                pk_x,
            },
            Backend::RustCrypto => EncapKey::Rc(Box::new(
                x_wing::EncapsulationKey::try_from(bytes)
                    .map_err(|_| Error::Key("invalid X-Wing public key".into()))?,
            )),
            Backend::Libcrux => EncapKey::Lc(Box::new(
                libcrux_kem::PublicKey::decode(libcrux_kem::Algorithm::XWingKemDraft06, bytes)
                    .map_err(|_| Error::Key("invalid X-Wing public key".into()))?,
            )),
        })
    }

    /// Encapsulates: (ciphertext `ct_M ‖ ct_X`, shared secret).
    pub(crate) fn encapsulate<R: CryptoRng + ?Sized>(
        &self,
        rng: &mut R,
    ) -> Result<(Vec<u8>, Secret32)> {
        match self {
            EncapKey::Composed {
                backend,
                pk_m,
                pk_x,
            } => {
                let (mut ct, ss_m) = pk_m.encapsulate(rng)?;
                let (ct_x, ss_x) = x25519::ephemeral_agree(*backend, pk_x, rng)?;
                let ss = combiner(*backend, &ss_m, &ss_x, &ct_x, pk_x);
                ct.extend_from_slice(&ct_x);
                Ok((ct, ss))
            }
            EncapKey::Rc(k) => {
                use x_wing::Encapsulate;
                let (ct, ss) = k.encapsulate_with_rng(rng);
                Ok((ct.to_vec(), Zeroizing::new(ss.into())))
            }
            EncapKey::Lc(_) => {
                let mut eseed = Zeroizing::new([0u8; 64]);
                rng.fill_bytes(eseed.as_mut());
                self.encapsulate_deterministic(&eseed)
                    .ok_or(Error::Crypto("x-wing encapsulate"))
            }
        }
    }

    /// Deterministic encapsulation with 64 bytes of randomness (draft test vectors;
    /// RustCrypto and libcrux: AWS-LC does not expose it).
    pub(crate) fn encapsulate_deterministic(
        &self,
        eseed: &[u8; 64],
    ) -> Option<(Vec<u8>, Secret32)> {
        match self {
            EncapKey::Composed { .. } => None,
            EncapKey::Rc(k) => {
                let (ct, ss) =
                    k.encapsulate_deterministic(&x_wing::kem::common::array::Array::from(*eseed));
                Some((ct.to_vec(), Zeroizing::new(ss.into())))
            }
            EncapKey::Lc(k) => {
                let (ss, ct) = k.encapsulate_derand(eseed).ok()?;
                let ss: [u8; 32] = ss.encode().try_into().ok()?;
                Some((ct.encode(), Zeroizing::new(ss)))
            }
        }
    }
}

/// An X-Wing decapsulation key, expanded once.
pub(crate) struct DecapKey {
    backend: Backend,
    sk_m: mlkem::DecapKey,
    sk_x: x25519::StaticKey,
    pk_x: [u8; 32],
}

impl DecapKey {
    /// Expands a 32-byte seed.
    pub(crate) fn from_seed(backend: Backend, seed: &[u8; 32]) -> Result<Self> {
        let (m, x) = expand_seed(seed);
        Ok(Self {
            backend,
            sk_m: mlkem::DecapKey::from_seed(backend, Params::K768, &m)?,
            sk_x: x25519::StaticKey::new(backend, &x)?,
            pk_x: x25519::public_from_secret(&x),
        })
    }

    /// Decapsulates `ct_M ‖ ct_X`.
    pub(crate) fn decapsulate(&self, ct: &[u8]) -> Result<Secret32> {
        if ct.len() != CIPHERTEXT_LEN {
            return Err(Error::Decrypt);
        }
        let (ct_m, ct_x) = ct.split_at(MLKEM_CT_LEN);
        let ss_m = self.sk_m.decapsulate(ct_m)?;
        let mut ct_x_arr = [0u8; 32];
        ct_x_arr.copy_from_slice(ct_x);
        let ss_x = self.sk_x.agree(&ct_x_arr)?;
        Ok(combiner(self.backend, &ss_m, &ss_x, ct_x, &self.pk_x))
    }
}
