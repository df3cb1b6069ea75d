//! The `openssl` backend's primitives: OpenSSL 3.6 (built from source by `openssl-src`)
//! through the `openssl` crate, and `ossl-kem` for the two KEM calls the crate does not
//! wrap. ML-KEM-768/1024 (FIPS 203, OpenSSL's default provider; keys imported from the
//! stored seed, or the expanded `dk` for the ACVP vectors), X25519 (RFC 7748), HKDF-SHA256
//! (RFC 5869), AES-256-GCM, SHA-256 and SHA3-256; X-Wing is composed from these as on
//! `aws-lc` (OpenSSL has no X-Wing). No RSA (the RSA modes refuse the backend).
//!
//! Behind envelope's cargo feature `openssl`; without it every constructor here returns the
//! error that names the feature, and [`crate::Backend::supports`] is false for every mode.

use crate::symmetric::Secret32;
use crate::{Error, Result};

/// The error of a build without the feature.
#[cfg_attr(
    feature = "openssl",
    allow(dead_code, reason = "used without the feature")
)]
pub(crate) fn unavailable() -> Error {
    Error::Usage(
        "backend openssl is not in this build: build pqbench with the cargo feature \
         envelope/openssl (make test and .ci/run do)"
            .into(),
    )
}

#[cfg(feature = "openssl")]
pub(crate) use imp::*;
#[cfg(not(feature = "openssl"))]
pub(crate) use stub::*;

#[cfg(feature = "openssl")]
mod imp {
    use openssl::cipher::Cipher as EvpCipher;
    use openssl::cipher_ctx::CipherCtx;
    use openssl::derive::Deriver;
    use openssl::hash::{Hasher, MessageDigest, hash};
    use openssl::md::Md;
    use openssl::pkey::{Id, KeyType, PKey, Private, Public};
    use openssl::pkey_ctx::{HkdfMode, PkeyCtx};
    use openssl::symm::{Cipher, decrypt_aead, encrypt_aead};
    use zeroize::Zeroizing;

    use super::{Error, Result, Secret32};
    use crate::hpke::{AeadId, KdfId};
    use crate::mlkem::Params;

    fn crypto(what: &'static str) -> impl Fn(openssl::error::ErrorStack) -> Error {
        move |_| Error::Crypto(what)
    }

    fn key_type(params: Params) -> KeyType {
        match params {
            Params::K768 => KeyType::ML_KEM_768,
            Params::K1024 => KeyType::ML_KEM_1024,
        }
    }

    fn secret32(bytes: &[u8], err: Error) -> Result<Secret32> {
        let arr: [u8; 32] = bytes.try_into().map_err(|_| err)?;
        Ok(Zeroizing::new(arr))
    }

    /// An ML-KEM encapsulation key imported into OpenSSL.
    pub(crate) struct MlKemPublic(PKey<Public>);

    /// An ML-KEM decapsulation key held by OpenSSL (which zeroizes it when freed).
    pub(crate) struct MlKemPrivate(PKey<Private>, Params);

    /// Imports an encapsulation key (OpenSSL checks its encoding, FIPS 203 section 7.2).
    pub(crate) fn mlkem_public(params: Params, bytes: &[u8]) -> Result<MlKemPublic> {
        PKey::public_key_from_raw_bytes_ex(None, key_type(params), None, bytes)
            .map(MlKemPublic)
            .map_err(|_| Error::Key("invalid ML-KEM public key".into()))
    }

    /// Derives the key pair from the 64-byte seed `d ‖ z` with OpenSSL's key generation.
    pub(crate) fn mlkem_from_seed(params: Params, seed: &[u8; 64]) -> Result<MlKemPrivate> {
        PKey::private_key_from_seed(None, key_type(params), None, seed)
            .map(|k| MlKemPrivate(k, params))
            .map_err(|_| Error::Key("invalid ML-KEM secret key".into()))
    }

    /// Imports the expanded FIPS 203 `dk` (OpenSSL checks its embedded hash).
    pub(crate) fn mlkem_from_expanded(params: Params, dk: &[u8]) -> Result<MlKemPrivate> {
        PKey::private_key_from_raw_bytes_ex(None, key_type(params), None, dk)
            .map(|k| MlKemPrivate(k, params))
            .map_err(|_| Error::Key("invalid ML-KEM expanded key".into()))
    }

    impl MlKemPublic {
        /// Encapsulates; OpenSSL draws `m`.
        pub(crate) fn encapsulate(&self) -> Result<(Vec<u8>, Secret32)> {
            let (ct, ss) =
                ossl_kem::encapsulate(&self.0).map_err(|_| Error::Crypto("ml-kem encapsulate"))?;
            Ok((
                ct,
                secret32(&ss, Error::Crypto("ml-kem shared secret size"))?,
            ))
        }
    }

    impl MlKemPrivate {
        /// Decapsulates (implicit rejection); a wrong-length ciphertext is the opaque error.
        pub(crate) fn decapsulate(&self, ct: &[u8]) -> Result<Secret32> {
            if ct.len() != self.1.ciphertext_len() {
                return Err(Error::Decrypt);
            }
            let ss = ossl_kem::decapsulate(&self.0, ct).map_err(|_| Error::Decrypt)?;
            secret32(&ss, Error::Decrypt)
        }
    }

    /// A static X25519 key held by OpenSSL.
    pub(crate) struct X25519Static(PKey<Private>);

    /// Imports a 32-byte X25519 scalar.
    pub(crate) fn x25519_static(secret: &[u8; 32]) -> Result<X25519Static> {
        PKey::private_key_from_raw_bytes(secret, Id::X25519)
            .map(X25519Static)
            .map_err(|_| Error::Key("invalid X25519 secret key".into()))
    }

    fn agree(own: &PKey<Private>, peer: &[u8; 32]) -> Result<[u8; 32]> {
        let peer = PKey::public_key_from_raw_bytes(peer, Id::X25519)
            .map_err(|_| Error::Key("invalid X25519 public key".into()))?;
        let mut d = Deriver::new(own).map_err(crypto("x25519"))?;
        d.set_peer(&peer).map_err(crypto("x25519"))?;
        // OpenSSL refuses an all-zero result (a small-order peer): the caller's error.
        let out = Zeroizing::new(d.derive_to_vec().map_err(|_| Error::Decrypt)?);
        out.as_slice().try_into().map_err(|_| Error::Decrypt)
    }

    impl X25519Static {
        /// X25519(secret, peer).
        pub(crate) fn agree(&self, peer: &[u8; 32]) -> Result<[u8; 32]> {
            agree(&self.0, peer)
        }
    }

    /// A fresh ephemeral key agreed with `peer`: (ephemeral public key, shared secret).
    pub(crate) fn x25519_ephemeral(peer: &[u8; 32]) -> Result<([u8; 32], [u8; 32])> {
        let eph = PKey::generate_x25519().map_err(crypto("x25519 keygen"))?;
        let epub: [u8; 32] = eph
            .raw_public_key()
            .map_err(crypto("x25519 public"))?
            .as_slice()
            .try_into()
            .map_err(|_| Error::Crypto("x25519 public"))?;
        Ok((epub, agree(&eph, peer)?))
    }

    fn md(kdf: KdfId) -> &'static openssl::md::MdRef {
        match kdf {
            KdfId::HkdfSha256 => Md::sha256(),
            KdfId::HkdfSha384 => Md::sha384(),
        }
    }

    /// HKDF-Extract-and-Expand to 32 bytes (RFC 5869).
    pub(crate) fn hkdf_sha256(salt: &[u8], ikm: &[u8], info: &[u8]) -> Result<Secret32> {
        let mut ctx = PkeyCtx::new_id(Id::HKDF).map_err(crypto("hkdf"))?;
        ctx.derive_init().map_err(crypto("hkdf"))?;
        ctx.set_hkdf_md(Md::sha256()).map_err(crypto("hkdf"))?;
        ctx.set_hkdf_key(ikm).map_err(crypto("hkdf"))?;
        ctx.set_hkdf_salt(salt).map_err(crypto("hkdf"))?;
        ctx.add_hkdf_info(info).map_err(crypto("hkdf"))?;
        let mut out = Zeroizing::new([0u8; 32]);
        ctx.derive(Some(out.as_mut())).map_err(crypto("hkdf"))?;
        Ok(out)
    }

    /// HKDF-Extract: HMAC(salt, ikm) with the KDF's hash (RFC 5869 section 2.2).
    pub(crate) fn hmac(kdf: KdfId, salt: &[u8], ikm: &[&[u8]]) -> Result<Zeroizing<Vec<u8>>> {
        let key = PKey::hmac(salt).map_err(crypto("hpke: extract"))?;
        let digest = match kdf {
            KdfId::HkdfSha256 => MessageDigest::sha256(),
            KdfId::HkdfSha384 => MessageDigest::sha384(),
        };
        let mut s = openssl::sign::Signer::new(digest, &key).map_err(crypto("hpke: extract"))?;
        for part in ikm {
            s.update(part).map_err(crypto("hpke: extract"))?;
        }
        Ok(Zeroizing::new(
            s.sign_to_vec().map_err(crypto("hpke: extract"))?,
        ))
    }

    /// HKDF-Expand(prk, info, len) (RFC 5869 section 2.3).
    pub(crate) fn hkdf_expand(
        kdf: KdfId,
        prk: &[u8],
        info: &[u8],
        len: usize,
    ) -> Result<Zeroizing<Vec<u8>>> {
        let fail = || Error::Crypto("hpke: expand length above 255 · Nh");
        let mut ctx = PkeyCtx::new_id(Id::HKDF).map_err(|_| fail())?;
        ctx.derive_init().map_err(|_| fail())?;
        ctx.set_hkdf_mode(HkdfMode::EXPAND_ONLY)
            .map_err(|_| fail())?;
        ctx.set_hkdf_md(md(kdf)).map_err(|_| fail())?;
        ctx.set_hkdf_key(prk).map_err(|_| fail())?;
        ctx.add_hkdf_info(info).map_err(|_| fail())?;
        let mut out = Zeroizing::new(vec![0u8; len]);
        ctx.derive(Some(&mut out)).map_err(|_| fail())?;
        Ok(out)
    }

    /// SHA-256.
    pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        if let Ok(d) = hash(MessageDigest::sha256(), data) {
            out.copy_from_slice(&d);
        }
        out
    }

    /// SHA3-256 over the concatenation of `parts`.
    pub(crate) fn sha3_256(parts: &[&[u8]]) -> [u8; 32] {
        let mut out = [0u8; 32];
        let digest = Hasher::new(MessageDigest::sha3_256()).and_then(|mut h| {
            for p in parts {
                h.update(p)?;
            }
            h.finish()
        });
        if let Ok(d) = digest {
            out.copy_from_slice(&d);
        }
        out
    }

    /// AES-256-GCM with the key schedule set up once per object: one encryption and one
    /// decryption context, re-initialised with each chunk's nonce (EVP_CipherInit_ex with
    /// no cipher and no key keeps both). A mutex gives the `&self` API of the other
    /// backends; each object's chunks are sealed or opened on one thread, so it is never
    /// contended.
    pub(crate) struct Gcm(std::sync::Mutex<(CipherCtx, CipherCtx)>);

    /// The contexts for `key`.
    pub(crate) fn gcm(key: &[u8; 32]) -> Result<Gcm> {
        let fail = crypto("aes-256-gcm key");
        let mut enc = CipherCtx::new().map_err(&fail)?;
        enc.encrypt_init(Some(EvpCipher::aes_256_gcm()), Some(key), None)
            .map_err(&fail)?;
        let mut dec = CipherCtx::new().map_err(&fail)?;
        dec.decrypt_init(Some(EvpCipher::aes_256_gcm()), Some(key), None)
            .map_err(&fail)?;
        Ok(Gcm(std::sync::Mutex::new((enc, dec))))
    }

    impl Gcm {
        /// Encrypts `buf` in place and appends the 16-byte tag.
        pub(crate) fn seal_in_place(
            &self,
            nonce: &[u8; 12],
            ad: &[u8],
            buf: &mut Vec<u8>,
        ) -> Result<()> {
            let fail = crypto("aes-256-gcm seal");
            let mut g = self
                .0
                .lock()
                .map_err(|_| Error::Crypto("aes-256-gcm seal"))?;
            let enc = &mut g.0;
            enc.encrypt_init(None, None, Some(nonce)).map_err(&fail)?;
            enc.cipher_update(ad, None).map_err(&fail)?;
            let n = buf.len();
            enc.cipher_update_inplace(buf, n).map_err(&fail)?;
            enc.cipher_final(&mut []).map_err(&fail)?;
            let mut tag = [0u8; 16];
            enc.tag(&mut tag).map_err(&fail)?;
            buf.extend_from_slice(&tag);
            Ok(())
        }

        /// Verifies and decrypts `buf[..ct_len]` (its tag after it) in place: whether the
        /// tag verified (the caller clears `buf` when it did not).
        pub(crate) fn open_in_place(
            &self,
            nonce: &[u8; 12],
            ad: &[u8],
            buf: &mut [u8],
            ct_len: usize,
        ) -> bool {
            let Ok(mut g) = self.0.lock() else {
                return false;
            };
            let dec = &mut g.1;
            let (ct, tag) = buf.split_at_mut(ct_len);
            dec.decrypt_init(None, None, Some(nonce)).is_ok()
                && dec.set_tag(tag).is_ok()
                && dec.cipher_update(ad, None).is_ok()
                && dec.cipher_update_inplace(ct, ct_len).is_ok()
                && dec.cipher_final(&mut []).is_ok()
        }
    }

    fn cipher(aead: AeadId) -> Cipher {
        match aead {
            AeadId::Aes128Gcm => Cipher::aes_128_gcm(),
            AeadId::Aes256Gcm => Cipher::aes_256_gcm(),
            AeadId::ChaCha20Poly1305 => Cipher::chacha20_poly1305(),
        }
    }

    /// AEAD seal of `buf` (replaced by ciphertext ‖ 16-byte tag).
    pub(crate) fn aead_seal(
        aead: AeadId,
        key: &[u8],
        nonce: &[u8; 12],
        ad: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let mut tag = [0u8; 16];
        let mut ct = encrypt_aead(cipher(aead), key, Some(nonce), ad, buf, &mut tag)
            .map_err(crypto("aead seal"))?;
        ct.extend_from_slice(&tag);
        *buf = ct;
        Ok(())
    }

    /// AEAD open of ciphertext ‖ tag; any failure is the opaque [`Error::Decrypt`].
    pub(crate) fn aead_open(
        aead: AeadId,
        key: &[u8],
        nonce: &[u8; 12],
        ad: &[u8],
        ct_tag: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>> {
        let n = ct_tag.len().checked_sub(16).ok_or(Error::Decrypt)?;
        let (ct, tag) = ct_tag.split_at(n);
        decrypt_aead(cipher(aead), key, Some(nonce), ad, ct, tag)
            .map(Zeroizing::new)
            .map_err(|_| Error::Decrypt)
    }
}

#[cfg(not(feature = "openssl"))]
mod stub {
    //! Without the feature: uninhabited key types, constructors that name the feature.

    use zeroize::Zeroizing;

    use super::{Result, Secret32, unavailable};
    use crate::hpke::{AeadId, KdfId};
    use crate::mlkem::Params;

    /// No OpenSSL in this build.
    pub(crate) enum MlKemPublic {}
    /// No OpenSSL in this build.
    pub(crate) enum MlKemPrivate {}
    /// No OpenSSL in this build.
    pub(crate) enum X25519Static {}
    /// No OpenSSL in this build.
    pub(crate) enum Gcm {}

    pub(crate) fn gcm(_: &[u8; 32]) -> Result<Gcm> {
        Err(unavailable())
    }
    impl Gcm {
        pub(crate) fn seal_in_place(&self, _: &[u8; 12], _: &[u8], _: &mut Vec<u8>) -> Result<()> {
            match *self {}
        }
        pub(crate) fn open_in_place(&self, _: &[u8; 12], _: &[u8], _: &mut [u8], _: usize) -> bool {
            match *self {}
        }
    }

    pub(crate) fn mlkem_public(_: Params, _: &[u8]) -> Result<MlKemPublic> {
        Err(unavailable())
    }
    pub(crate) fn mlkem_from_seed(_: Params, _: &[u8; 64]) -> Result<MlKemPrivate> {
        Err(unavailable())
    }
    pub(crate) fn mlkem_from_expanded(_: Params, _: &[u8]) -> Result<MlKemPrivate> {
        Err(unavailable())
    }
    impl MlKemPublic {
        pub(crate) fn encapsulate(&self) -> Result<(Vec<u8>, Secret32)> {
            match *self {}
        }
    }
    impl MlKemPrivate {
        pub(crate) fn decapsulate(&self, _: &[u8]) -> Result<Secret32> {
            match *self {}
        }
    }
    pub(crate) fn x25519_static(_: &[u8; 32]) -> Result<X25519Static> {
        Err(unavailable())
    }
    impl X25519Static {
        pub(crate) fn agree(&self, _: &[u8; 32]) -> Result<[u8; 32]> {
            match *self {}
        }
    }
    pub(crate) fn x25519_ephemeral(_: &[u8; 32]) -> Result<([u8; 32], [u8; 32])> {
        Err(unavailable())
    }
    pub(crate) fn hkdf_sha256(_: &[u8], _: &[u8], _: &[u8]) -> Result<Secret32> {
        Err(unavailable())
    }
    pub(crate) fn hmac(_: KdfId, _: &[u8], _: &[&[u8]]) -> Result<Zeroizing<Vec<u8>>> {
        Err(unavailable())
    }
    pub(crate) fn hkdf_expand(
        _: KdfId,
        _: &[u8],
        _: &[u8],
        _: usize,
    ) -> Result<Zeroizing<Vec<u8>>> {
        Err(unavailable())
    }
    // Unreachable in practice (no key of the backend can be made); a hash is a hash, so
    // these give the right answer rather than a placeholder.
    pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
        crate::symmetric::sha256(crate::Backend::AwsLc, data)
    }
    pub(crate) fn sha3_256(parts: &[&[u8]]) -> [u8; 32] {
        crate::symmetric::sha3_256(crate::Backend::AwsLc, parts)
    }
    pub(crate) fn aead_seal(
        _: AeadId,
        _: &[u8],
        _: &[u8; 12],
        _: &[u8],
        _: &mut Vec<u8>,
    ) -> Result<()> {
        Err(unavailable())
    }
    pub(crate) fn aead_open(
        _: AeadId,
        _: &[u8],
        _: &[u8; 12],
        _: &[u8],
        _: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>> {
        Err(unavailable())
    }
}
