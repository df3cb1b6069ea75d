//! X25519 (RFC 7748) on both backends: the ephemeral-static exchange of modes `x25519`,
//! `x25519-padded` and `concat-hybrid`, and the X25519 half of X-Wing.
//!
//! A Diffie–Hellman output of all zeros (a low-order peer point) is rejected on both
//! backends (RFC 7748 section 6.1 "MAY check"; AWS-LC always does), so the backends agree.

use aws_lc_rs::agreement as lc;
use rand_core::CryptoRng;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::symmetric::Secret32;
use crate::{Backend, Error, Result};

/// Computes the public key of a 32-byte X25519 scalar.
pub(crate) fn public_from_secret(secret: &[u8; 32]) -> [u8; 32] {
    x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from(*secret)).to_bytes()
}

fn reject_zero(ss: [u8; 32]) -> Result<Secret32> {
    let ss = Zeroizing::new(ss);
    if bool::from(ss.ct_eq(&[0u8; 32])) {
        return Err(Error::Decrypt);
    }
    Ok(ss)
}

/// The sender side: generates an ephemeral key pair and agrees with the recipient's public key.
/// Returns (ephemeral public key, shared secret).
pub(crate) fn ephemeral_agree<R: CryptoRng + ?Sized>(
    backend: Backend,
    peer: &[u8; 32],
    rng: &mut R,
) -> Result<([u8; 32], Secret32)> {
    let invalid = || Error::Key("invalid X25519 public key".into());
    let (epub, ss) = match backend {
        Backend::AwsLc => {
            let eph = lc::PrivateKey::generate(&lc::X25519)
                .map_err(|_| Error::Crypto("x25519 keygen"))?;
            let mut epub = [0u8; 32];
            epub.copy_from_slice(
                eph.compute_public_key()
                    .map_err(|_| Error::Crypto("x25519 public"))?
                    .as_ref(),
            );
            let ss = lc::agree(
                &eph,
                lc::UnparsedPublicKey::new(&lc::X25519, peer),
                invalid(),
                |k| {
                    let mut out = [0u8; 32];
                    out.copy_from_slice(k);
                    Ok(out)
                },
            )?;
            (epub, ss)
        }
        Backend::RustCrypto => {
            let eph = x25519_dalek::EphemeralSecret::random_from_rng(rng);
            let epub = x25519_dalek::PublicKey::from(&eph).to_bytes();
            let ss = eph.diffie_hellman(&x25519_dalek::PublicKey::from(*peer));
            (epub, ss.to_bytes())
        }
    };
    // A low-order recipient key gives an all-zero secret on RustCrypto (AWS-LC already
    // refused it above): the same error on both backends.
    Ok((epub, reject_zero(ss).map_err(|_| invalid())?))
}

/// A static X25519 secret, parsed once.
pub(crate) enum StaticKey {
    /// AWS-LC key object.
    Aws(lc::PrivateKey),
    /// x25519-dalek static secret (zeroized on drop).
    Rc(x25519_dalek::StaticSecret),
}

impl StaticKey {
    /// Loads a 32-byte scalar.
    pub(crate) fn new(backend: Backend, secret: &[u8; 32]) -> Result<Self> {
        Ok(match backend {
            Backend::AwsLc => StaticKey::Aws(
                lc::PrivateKey::from_private_key(&lc::X25519, secret)
                    .map_err(|_| Error::Key("invalid X25519 secret key".into()))?,
            ),
            Backend::RustCrypto => StaticKey::Rc(x25519_dalek::StaticSecret::from(*secret)),
        })
    }

    /// X25519(secret, peer); an all-zero result is the opaque [`Error::Decrypt`].
    pub(crate) fn agree(&self, peer: &[u8; 32]) -> Result<Secret32> {
        match self {
            StaticKey::Aws(k) => {
                let ss = lc::agree(
                    k,
                    lc::UnparsedPublicKey::new(&lc::X25519, peer),
                    Error::Decrypt,
                    |s| {
                        let mut out = [0u8; 32];
                        out.copy_from_slice(s);
                        Ok(out)
                    },
                )?;
                reject_zero(ss)
            }
            StaticKey::Rc(k) => reject_zero(
                k.diffie_hellman(&x25519_dalek::PublicKey::from(*peer))
                    .to_bytes(),
            ),
        }
    }
}
