//! RSA-OAEP key transport (RFC 8017 section 7.1, SHA-256 with MGF1-SHA-256, empty label)
//! on both backends. The sender transports a fresh random 32-byte secret; the recipient
//! accepts exactly 32 bytes back. Keys: SubjectPublicKeyInfo DER (public) and PKCS#8 DER
//! (private), with the public exponent e = 65537 (FORMAT.md §7); any other exponent is
//! refused when a key is loaded, on both backends.

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
use aws_lc_rs::rsa as lc;
use rand_core::CryptoRng;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::traits::PublicKeyParts;
use zeroize::Zeroizing;

use crate::symmetric::Secret32;
use crate::{Backend, Error, Result};

/// The only public exponent FORMAT.md §7 allows, 65537, as a minimal big-endian DER
/// integer (format constant).
const EXPONENT: [u8; 3] = [0x01, 0x00, 0x01];

fn check_exponent(e: &[u8]) -> Result<()> {
    if e == EXPONENT {
        return Ok(());
    }
    let shown = if e.len() <= 8 {
        e.iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
            .to_string()
    } else {
        format!("a {}-byte number", e.len())
    };
    Err(Error::Key(format!(
        "RSA public exponent is {shown}; pqbench keys use e = 65537 (FORMAT.md §7)"
    )))
}

/// The public exponent of an SPKI DER key must be 65537 (read from the DER, the same on
/// both backends; AWS-LC's encryption keys do not expose it).
fn check_spki_exponent(spki: &[u8]) -> Result<()> {
    let bad = || Error::Key("invalid RSA public key (expected SubjectPublicKeyInfo DER)".into());
    let info = rsa::pkcs8::SubjectPublicKeyInfoRef::try_from(spki).map_err(|_| bad())?;
    let key = info.subject_public_key.as_bytes().ok_or_else(bad)?;
    let key = rsa::pkcs1::RsaPublicKeyRef::try_from(key).map_err(|_| bad())?;
    check_exponent(key.public_exponent.as_bytes())
}

/// The public exponent of a PKCS#8 DER private key must be 65537.
fn check_pkcs8_exponent(pkcs8: &[u8]) -> Result<()> {
    let bad = || Error::Key("invalid RSA private key (expected PKCS#8 DER)".into());
    let info = rsa::pkcs8::PrivateKeyInfoRef::try_from(pkcs8).map_err(|_| bad())?;
    let key =
        rsa::pkcs1::RsaPrivateKeyRef::try_from(info.private_key.as_bytes()).map_err(|_| bad())?;
    check_exponent(key.public_exponent.as_bytes())
}

/// Generates an RSA key pair of `bits` with AWS-LC (fast on both backends; key generation is
/// not on the measured path). Returns (SPKI DER, PKCS#8 DER).
pub(crate) fn generate(bits: usize) -> Result<(Vec<u8>, Zeroizing<Vec<u8>>)> {
    let size = match bits {
        3072 => lc::KeySize::Rsa3072,
        4096 => lc::KeySize::Rsa4096,
        _ => return Err(Error::Key(format!("unsupported RSA size {bits}"))),
    };
    let sk = lc::PrivateDecryptingKey::generate(size).map_err(|_| Error::Crypto("rsa keygen"))?;
    let pkcs8: Pkcs8V1Der<'_> = sk.as_der().map_err(|_| Error::Crypto("rsa pkcs8"))?;
    let spki: PublicKeyX509Der<'_> = sk
        .public_key()
        .as_der()
        .map_err(|_| Error::Crypto("rsa spki"))?;
    Ok((
        spki.as_ref().to_vec(),
        Zeroizing::new(pkcs8.as_ref().to_vec()),
    ))
}

/// The public key bytes (SPKI DER) that belong to a PKCS#8 private key.
pub(crate) fn public_from_secret(pkcs8: &[u8]) -> Result<Vec<u8>> {
    let sk = lc::PrivateDecryptingKey::from_pkcs8(pkcs8)
        .map_err(|_| Error::Key("invalid RSA private key".into()))?;
    let spki: PublicKeyX509Der<'_> = sk
        .public_key()
        .as_der()
        .map_err(|_| Error::Crypto("rsa spki"))?;
    Ok(spki.as_ref().to_vec())
}

/// A parsed RSA public key.
pub(crate) enum PublicKey {
    /// AWS-LC OAEP key.
    Aws(lc::OaepPublicEncryptingKey),
    /// RustCrypto key.
    Rc(Box<rsa::PublicKey>),
}

/// libcrux (and openssl, here) have no RSA: the RSA modes refuse the backend (see
/// [`Backend::check_supports`]).
fn no_rsa(backend: Backend) -> Error {
    Error::Usage(format!(
        "backend {backend} does not implement RSA-OAEP; use aws-lc or rustcrypto"
    ))
}

impl PublicKey {
    /// Parses SPKI DER and checks the modulus size and the exponent.
    pub(crate) fn parse(backend: Backend, bits: usize, spki: &[u8]) -> Result<Self> {
        let bad =
            || Error::Key("invalid RSA public key (expected SubjectPublicKeyInfo DER)".into());
        check_spki_exponent(spki)?;
        let key = match backend {
            Backend::AwsLc => {
                let k = lc::PublicEncryptingKey::from_der(spki).map_err(|_| bad())?;
                PublicKey::Aws(lc::OaepPublicEncryptingKey::new(k).map_err(|_| bad())?)
            }
            Backend::RustCrypto => PublicKey::Rc(Box::new(
                rsa::PublicKey::from_public_key_der(spki).map_err(|_| bad())?,
            )),
            Backend::Libcrux | Backend::OpenSsl => return Err(no_rsa(backend)),
        };
        let got = match &key {
            PublicKey::Aws(k) => k.key_size_bits(),
            PublicKey::Rc(k) => k.size() * 8,
        };
        if got != bits {
            return Err(Error::Key(format!(
                "RSA key is {got} bits, the mode needs {bits}"
            )));
        }
        Ok(key)
    }

    /// Encrypts `secret` with OAEP-SHA256; the ciphertext is exactly the modulus size.
    pub(crate) fn encrypt<R: CryptoRng + ?Sized>(
        &self,
        secret: &[u8; 32],
        rng: &mut R,
    ) -> Result<Vec<u8>> {
        match self {
            PublicKey::Aws(k) => {
                let mut out = vec![0u8; k.ciphertext_size()];
                let n = k
                    .encrypt(&lc::OAEP_SHA256_MGF1SHA256, secret, &mut out, None)
                    .map_err(|_| Error::Crypto("rsa-oaep encrypt"))?
                    .len();
                out.truncate(n);
                Ok(out)
            }
            PublicKey::Rc(k) => k
                .oaep_encrypt_with_rng::<sha2::Sha256, _>(rng, secret)
                .map_err(|_| Error::Crypto("rsa-oaep encrypt")),
        }
    }
}

/// A parsed RSA private key.
pub(crate) enum SecretKey {
    /// AWS-LC OAEP key.
    Aws(lc::OaepPrivateDecryptingKey),
    /// RustCrypto key (blinded decryption with the OS RNG).
    Rc(Box<rsa::PrivateKey>),
}

impl SecretKey {
    /// Parses PKCS#8 DER and checks the modulus size and the exponent.
    pub(crate) fn parse(backend: Backend, bits: usize, pkcs8: &[u8]) -> Result<Self> {
        let bad = || Error::Key("invalid RSA private key (expected PKCS#8 DER)".into());
        check_pkcs8_exponent(pkcs8)?;
        let key = match backend {
            Backend::AwsLc => {
                let k = lc::PrivateDecryptingKey::from_pkcs8(pkcs8).map_err(|_| bad())?;
                SecretKey::Aws(lc::OaepPrivateDecryptingKey::new(k).map_err(|_| bad())?)
            }
            Backend::RustCrypto => SecretKey::Rc(Box::new(
                rsa::PrivateKey::from_pkcs8_der(pkcs8).map_err(|_| bad())?,
            )),
            Backend::Libcrux | Backend::OpenSsl => return Err(no_rsa(backend)),
        };
        let got = match &key {
            SecretKey::Aws(k) => k.key_size_bits(),
            SecretKey::Rc(k) => k.size() * 8,
        };
        if got != bits {
            return Err(Error::Key(format!(
                "RSA key is {got} bits, the mode needs {bits}"
            )));
        }
        Ok(key)
    }

    /// Decrypts and returns the 32-byte secret. Every failure (padding, length) is the same
    /// opaque [`Error::Decrypt`], so no padding oracle is exposed.
    pub(crate) fn decrypt(&self, ct: &[u8]) -> Result<Secret32> {
        let pt: Zeroizing<Vec<u8>> = match self {
            SecretKey::Aws(k) => {
                let mut out = Zeroizing::new(vec![0u8; k.min_output_size()]);
                let n = k
                    .decrypt(&lc::OAEP_SHA256_MGF1SHA256, ct, &mut out, None)
                    .map_err(|_| Error::Decrypt)?
                    .len();
                out.truncate(n);
                out
            }
            SecretKey::Rc(k) => Zeroizing::new(
                k.oaep_decrypt::<sha2::Sha256>(ct)
                    .map_err(|_| Error::Decrypt)?,
            ),
        };
        let arr: [u8; 32] = pt.as_slice().try_into().map_err(|_| Error::Decrypt)?;
        Ok(Zeroizing::new(arr))
    }
}
