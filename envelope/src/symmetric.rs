//! Symmetric primitives on each backend (`libcrux` uses AWS-LC's, see [`Backend::Libcrux`]): HKDF-SHA256 (RFC 5869), AES-256-GCM
//! (NIST SP 800-38D, 96-bit nonces, 128-bit tags), SHA-256 (FIPS 180-4) and SHA3-256
//! (FIPS 202).

use aes_gcm::aead::{AeadInOut, KeyInit};
use aws_lc_rs::{aead as lc_aead, digest as lc_digest, hkdf as lc_hkdf};
use zeroize::{Zeroize, Zeroizing};

use crate::{Backend, Error, Result};

/// A 32-byte secret that is zeroized on drop.
pub(crate) type Secret32 = Zeroizing<[u8; 32]>;

/// AES-GCM tag length (format constant: changing it breaks existing objects).
pub const TAG_LEN: usize = 16;
/// AES-GCM nonce length (format constant).
pub const NONCE_LEN: usize = 12;

/// HKDF-SHA256 extract-and-expand to 32 bytes (RFC 5869 section 2).
pub(crate) fn hkdf_sha256(
    backend: Backend,
    salt: &[u8],
    ikm: &[u8],
    info: &[u8],
) -> Result<Secret32> {
    let mut okm = Zeroizing::new([0u8; 32]);
    match backend {
        Backend::AwsLc | Backend::Libcrux => {
            struct Len32;
            impl lc_hkdf::KeyType for Len32 {
                fn len(&self) -> usize {
                    32
                }
            }
            let prk = lc_hkdf::Salt::new(lc_hkdf::HKDF_SHA256, salt).extract(ikm);
            let info = [info];
            prk.expand(&info, Len32)
                .and_then(|okm_out| okm_out.fill(okm.as_mut()))
                .map_err(|_| Error::Crypto("hkdf"))?;
        }
        Backend::RustCrypto => {
            hkdf::Hkdf::<sha2::Sha256>::new(Some(salt), ikm)
                .expand(info, okm.as_mut())
                .map_err(|_| Error::Crypto("hkdf"))?;
        }
        Backend::OpenSsl => return crate::ossl::hkdf_sha256(salt, ikm, info),
    }
    Ok(okm)
}

/// SHA-256 of `data`.
pub(crate) fn sha256(backend: Backend, data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    match backend {
        Backend::AwsLc | Backend::Libcrux => {
            out.copy_from_slice(lc_digest::digest(&lc_digest::SHA256, data).as_ref())
        }
        Backend::RustCrypto => {
            use sha2::Digest;
            out.copy_from_slice(&sha2::Sha256::digest(data));
        }
        Backend::OpenSsl => out = crate::ossl::sha256(data),
    }
    out
}

/// SHA3-256 over the concatenation of `parts`.
pub(crate) fn sha3_256(backend: Backend, parts: &[&[u8]]) -> [u8; 32] {
    let mut out = [0u8; 32];
    match backend {
        Backend::AwsLc => {
            let mut ctx = lc_digest::Context::new(&lc_digest::SHA3_256);
            for p in parts {
                ctx.update(p);
            }
            out.copy_from_slice(ctx.finish().as_ref());
        }
        Backend::RustCrypto => {
            use sha3::Digest;
            let mut h = sha3::Sha3_256::new();
            for p in parts {
                h.update(p);
            }
            out.copy_from_slice(&h.finalize());
        }
        // libcrux-sha3 hashes one slice; the parts are short (the X-Wing combiner's 134
        // bytes, a key's fingerprint input).
        Backend::Libcrux => out = libcrux_sha3::sha256(&parts.concat()),
        Backend::OpenSsl => out = crate::ossl::sha3_256(parts),
    }
    out
}

/// An AES-256-GCM key, expanded once and reused for every chunk of an object.
pub(crate) enum Aead {
    /// aws-lc-rs key schedule.
    Aws(lc_aead::LessSafeKey),
    /// RustCrypto key schedule (boxed: the expanded AES key is large).
    Rc(Box<aes_gcm::Aes256Gcm>),
    /// OpenSSL's encryption and decryption contexts, keyed once.
    Os(Box<crate::ossl::Gcm>),
}

impl Aead {
    /// Expands `key` for `backend`.
    pub(crate) fn new(backend: Backend, key: &[u8; 32]) -> Result<Self> {
        Ok(match backend {
            Backend::AwsLc | Backend::Libcrux => Aead::Aws(lc_aead::LessSafeKey::new(
                lc_aead::UnboundKey::new(&lc_aead::AES_256_GCM, key)
                    .map_err(|_| Error::Crypto("aes-256-gcm key"))?,
            )),
            Backend::RustCrypto => Aead::Rc(Box::new(aes_gcm::Aes256Gcm::new(key.into()))),
            Backend::OpenSsl => Aead::Os(Box::new(crate::ossl::gcm(key)?)),
        })
    }

    /// Encrypts `buf` in place and appends the 16-byte tag.
    pub(crate) fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        ad: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        match self {
            Aead::Aws(key) => {
                let tag = key
                    .seal_in_place_separate_tag(
                        lc_aead::Nonce::assume_unique_for_key(*nonce),
                        lc_aead::Aad::from(ad),
                        buf.as_mut_slice(),
                    )
                    .map_err(|_| Error::Crypto("aes-256-gcm seal"))?;
                buf.extend_from_slice(tag.as_ref());
            }
            Aead::Rc(key) => {
                let tag = key
                    .encrypt_inout_detached(nonce.into(), ad, buf.as_mut_slice().into())
                    .map_err(|_| Error::Crypto("aes-256-gcm seal"))?;
                buf.extend_from_slice(&tag);
            }
            Aead::Os(gcm) => gcm.seal_in_place(nonce, ad, buf)?,
        }
        Ok(())
    }

    /// Verifies and decrypts `buf` (ciphertext ‖ tag) in place, leaving the plaintext.
    /// Any failure is the opaque [`Error::Decrypt`]; on failure `buf` is cleared so no
    /// unauthenticated plaintext can escape.
    pub(crate) fn open_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        ad: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let Some(ct_len) = buf.len().checked_sub(TAG_LEN) else {
            buf.zeroize();
            return Err(Error::Decrypt);
        };
        let ok = match self {
            Aead::Aws(key) => key
                .open_in_place(
                    lc_aead::Nonce::assume_unique_for_key(*nonce),
                    lc_aead::Aad::from(ad),
                    buf.as_mut_slice(),
                )
                .is_ok(),
            Aead::Rc(key) => {
                let (ct, tag) = buf.split_at_mut(ct_len);
                let tag = aes_gcm::Tag::try_from(&*tag).map_err(|_| Error::Decrypt)?;
                key.decrypt_inout_detached(nonce.into(), ad, ct.into(), &tag)
                    .is_ok()
            }
            Aead::Os(gcm) => gcm.open_in_place(nonce, ad, buf, ct_len),
        };
        if ok {
            buf.truncate(ct_len);
            Ok(())
        } else {
            buf.zeroize();
            Err(Error::Decrypt)
        }
    }
}
