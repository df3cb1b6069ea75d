//! Key encapsulation through OpenSSL 3.5+'s `EVP_PKEY_encapsulate` / `EVP_PKEY_decapsulate`
//! (openssl(3) `EVP_PKEY_encapsulate`), which the `openssl` crate 0.10 does not wrap:
//! pqbench's `openssl` backend uses them for ML-KEM-768 and ML-KEM-1024 (FIPS 203, OpenSSL's
//! default provider). Keys are the `openssl` crate's `PKey`s; everything else (key import,
//! X25519, AES-GCM, HKDF) is the `openssl` crate's own safe API.
//!
//! This is the only crate of the workspace with unsafe code, each block next to the OpenSSL
//! contract it relies on.

use foreign_types::ForeignTypeRef;
use openssl::error::ErrorStack;
use openssl::pkey::{HasPrivate, HasPublic, PKeyRef};
use openssl::pkey_ctx::PkeyCtx;
use zeroize::Zeroizing;

/// A KEM operation failed (OpenSSL's error queue, in words).
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "openssl: {}", self.0)
    }
}

impl std::error::Error for Error {}

impl From<ErrorStack> for Error {
    fn from(e: ErrorStack) -> Self {
        Error(e.to_string())
    }
}

/// Encapsulates to `key`: `(ciphertext, shared secret)`. OpenSSL draws the randomness.
pub fn encapsulate<T: HasPublic>(key: &PKeyRef<T>) -> Result<(Vec<u8>, Zeroizing<Vec<u8>>), Error> {
    let ctx = PkeyCtx::new(key)?;
    ffi::encapsulate(&ctx)
}

/// Decapsulates `ciphertext` with `key`: the shared secret (ML-KEM's implicit rejection: a
/// modified ciphertext of the right length yields a pseudorandom secret, not an error).
pub fn decapsulate<T: HasPrivate>(
    key: &PKeyRef<T>,
    ciphertext: &[u8],
) -> Result<Zeroizing<Vec<u8>>, Error> {
    let ctx = PkeyCtx::new(key)?;
    ffi::decapsulate(&ctx, ciphertext)
}

#[allow(
    unsafe_code,
    reason = "the two OpenSSL calls the openssl crate does not wrap"
)]
mod ffi {
    use std::ptr;

    use super::{Error, ForeignTypeRef, PkeyCtx, Zeroizing};

    fn check(r: std::os::raw::c_int, what: &str) -> Result<(), Error> {
        if r > 0 {
            Ok(())
        } else {
            let stack = openssl::error::ErrorStack::get();
            Err(Error(format!("{what}: {stack}")))
        }
    }

    pub(super) fn encapsulate<T>(ctx: &PkeyCtx<T>) -> Result<(Vec<u8>, Zeroizing<Vec<u8>>), Error> {
        let p = ctx.as_ptr();
        let (mut ct_len, mut ss_len) = (0usize, 0usize);
        // SAFETY: `p` is a live EVP_PKEY_CTX owned by `ctx` for this whole function; NULL
        // params are allowed (openssl(3) EVP_PKEY_encapsulate_init); with NULL output
        // buffers EVP_PKEY_encapsulate only writes the two lengths through valid pointers.
        unsafe {
            check(
                openssl_sys::EVP_PKEY_encapsulate_init(p, ptr::null()),
                "EVP_PKEY_encapsulate_init",
            )?;
            check(
                openssl_sys::EVP_PKEY_encapsulate(
                    p,
                    ptr::null_mut(),
                    &mut ct_len,
                    ptr::null_mut(),
                    &mut ss_len,
                ),
                "EVP_PKEY_encapsulate (sizes)",
            )?;
        }
        let mut ct = vec![0u8; ct_len];
        let mut ss = Zeroizing::new(vec![0u8; ss_len]);
        // SAFETY: the buffers are exactly the lengths OpenSSL asked for, live and exclusively
        // borrowed across the call; OpenSSL writes at most those lengths and updates them.
        unsafe {
            check(
                openssl_sys::EVP_PKEY_encapsulate(
                    p,
                    ct.as_mut_ptr(),
                    &mut ct_len,
                    ss.as_mut_ptr(),
                    &mut ss_len,
                ),
                "EVP_PKEY_encapsulate",
            )?;
        }
        ct.truncate(ct_len);
        ss.truncate(ss_len);
        Ok((ct, ss))
    }

    pub(super) fn decapsulate<T>(
        ctx: &PkeyCtx<T>,
        ciphertext: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, Error> {
        let p = ctx.as_ptr();
        let mut ss_len = 0usize;
        // SAFETY: as in `encapsulate`: a live context, NULL params; with a NULL output buffer
        // EVP_PKEY_decapsulate only writes the secret's length; `ciphertext` is read for
        // exactly its length.
        unsafe {
            check(
                openssl_sys::EVP_PKEY_decapsulate_init(p, ptr::null()),
                "EVP_PKEY_decapsulate_init",
            )?;
            check(
                openssl_sys::EVP_PKEY_decapsulate(
                    p,
                    ptr::null_mut(),
                    &mut ss_len,
                    ciphertext.as_ptr(),
                    ciphertext.len(),
                ),
                "EVP_PKEY_decapsulate (size)",
            )?;
        }
        let mut ss = Zeroizing::new(vec![0u8; ss_len]);
        // SAFETY: `ss` has the length OpenSSL asked for and is exclusively borrowed;
        // `ciphertext` is read for exactly its length.
        unsafe {
            check(
                openssl_sys::EVP_PKEY_decapsulate(
                    p,
                    ss.as_mut_ptr(),
                    &mut ss_len,
                    ciphertext.as_ptr(),
                    ciphertext.len(),
                ),
                "EVP_PKEY_decapsulate",
            )?;
        }
        ss.truncate(ss_len);
        Ok(ss)
    }
}
