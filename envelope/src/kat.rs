//! Known-answer-test access to the primitives behind the modes, on a chosen backend.
//!
//! Not part of the stable API: integration tests (`envelope/tests/kat.rs`) use it to run the
//! official vectors (NIST ACVP ML-KEM, the X-Wing draft, RFC 5869, NIST GCM) against exactly
//! the code paths the modes use, and the run engine's known-answer gate uses it to refuse a
//! misconfigured backend before anything is timed.

use crate::mlkem::{self, Params};
use crate::symmetric::{self, Aead};
use crate::{Backend, Error, Mode, PublicKey, Result, SealKey, Sender, rsa_oaep, x25519, xwing};

fn params(level: u16) -> Result<Params> {
    match level {
        768 => Ok(Params::K768),
        1024 => Ok(Params::K1024),
        _ => Err(Error::Usage(format!("ML-KEM-{level} is not supported"))),
    }
}

/// ML-KEM key generation from `d ‖ z`: returns (ek, expanded dk).
pub fn ml_kem_keygen(level: u16, seed: &[u8; 64]) -> Result<(Vec<u8>, Vec<u8>)> {
    let p = params(level)?;
    Ok((
        mlkem::public_from_seed(p, seed),
        mlkem::expanded_from_seed(p, seed).to_vec(),
    ))
}

/// ML-KEM deterministic encapsulation with message `m` (RustCrypto; AWS-LC does not expose
/// it, so for `aws-lc` this returns `None`).
pub fn ml_kem_encaps_deterministic(
    backend: Backend,
    level: u16,
    ek: &[u8],
    m: &[u8; 32],
) -> Result<Option<(Vec<u8>, [u8; 32])>> {
    let k = mlkem::EncapKey::parse(backend, params(level)?, ek)?;
    Ok(k.encapsulate_deterministic(m).map(|(c, ss)| (c, *ss)))
}

/// ML-KEM randomized encapsulation (the path the modes use).
pub fn ml_kem_encaps(backend: Backend, level: u16, ek: &[u8]) -> Result<(Vec<u8>, [u8; 32])> {
    let k = mlkem::EncapKey::parse(backend, params(level)?, ek)?;
    let (c, ss) = k.encapsulate(&mut crate::os_rng())?;
    Ok((c, *ss))
}

/// ML-KEM decapsulation with an expanded key `dk`.
pub fn ml_kem_decaps_expanded(
    backend: Backend,
    level: u16,
    dk: &[u8],
    c: &[u8],
) -> Result<[u8; 32]> {
    let k = mlkem::DecapKey::from_expanded(backend, params(level)?, dk)?;
    Ok(*k.decapsulate(c)?)
}

/// ML-KEM decapsulation with a key loaded from its seed (the path the modes use).
pub fn ml_kem_decaps_seed(
    backend: Backend,
    level: u16,
    seed: &[u8; 64],
    c: &[u8],
) -> Result<[u8; 32]> {
    let k = mlkem::DecapKey::from_seed(backend, params(level)?, seed)?;
    Ok(*k.decapsulate(c)?)
}

/// X-Wing public key of a 32-byte seed.
pub fn x_wing_public(seed: &[u8; 32]) -> Vec<u8> {
    xwing::public_from_seed(seed)
}

/// X-Wing deterministic encapsulation with 64 bytes of randomness (RustCrypto only).
pub fn x_wing_encaps_deterministic(
    backend: Backend,
    pk: &[u8],
    eseed: &[u8; 64],
) -> Result<Option<(Vec<u8>, [u8; 32])>> {
    let k = xwing::EncapKey::parse(backend, pk)?;
    Ok(k.encapsulate_deterministic(eseed).map(|(c, ss)| (c, *ss)))
}

/// X-Wing randomized encapsulation (the path mode `x-wing` uses).
pub fn x_wing_encaps(backend: Backend, pk: &[u8]) -> Result<(Vec<u8>, [u8; 32])> {
    let k = xwing::EncapKey::parse(backend, pk)?;
    let (c, ss) = k.encapsulate(&mut crate::os_rng())?;
    Ok((c, *ss))
}

/// X-Wing decapsulation with a key expanded from its seed (the path mode `x-wing` uses).
pub fn x_wing_decaps(backend: Backend, seed: &[u8; 32], c: &[u8]) -> Result<[u8; 32]> {
    Ok(*xwing::DecapKey::from_seed(backend, seed)?.decapsulate(c)?)
}

/// X25519(scalar, u) as the modes compute it (all-zero outputs rejected).
pub fn x25519(backend: Backend, scalar: &[u8; 32], u: &[u8; 32]) -> Result<[u8; 32]> {
    Ok(*x25519::StaticKey::new(backend, scalar)?.agree(u)?)
}

/// The sending side's ephemeral X25519 exchange with a recipient's `peer` key, as modes
/// `x25519`, `x25519-padded` and `concat-hybrid` (and X-Wing on `aws-lc`) run it: returns
/// (ephemeral public key, shared secret).
pub fn x25519_ephemeral(backend: Backend, peer: &[u8; 32]) -> Result<([u8; 32], [u8; 32])> {
    let (epub, ss) = x25519::ephemeral_agree(backend, peer, &mut crate::os_rng())?;
    Ok((epub, *ss))
}

/// A [`Sender`] for `mode` to recipient key bytes that did not go through the checks of
/// [`PublicKey::from_bytes`], so that tests reach the checks the sender makes itself.
pub fn sender_unchecked(mode: Mode, backend: Backend, public: Vec<u8>) -> Result<Sender> {
    let pk = PublicKey::unchecked(mode.key_type(), public);
    Sender::new(mode, backend, SealKey::Public(&pk))
}

/// X25519 public key of a scalar.
pub fn x25519_public(scalar: &[u8; 32]) -> [u8; 32] {
    x25519::public_from_secret(scalar)
}

/// HKDF-SHA256 to 32 bytes.
pub fn hkdf_sha256(backend: Backend, salt: &[u8], ikm: &[u8], info: &[u8]) -> Result<[u8; 32]> {
    Ok(*symmetric::hkdf_sha256(backend, salt, ikm, info)?)
}

/// AES-256-GCM seal: returns ciphertext ‖ tag.
pub fn aes_256_gcm_seal(
    backend: Backend,
    key: &[u8; 32],
    nonce: &[u8; 12],
    aad: &[u8],
    pt: &[u8],
) -> Result<Vec<u8>> {
    let mut buf = pt.to_vec();
    Aead::new(backend, key)?.seal_in_place(nonce, aad, &mut buf)?;
    Ok(buf)
}

/// AES-256-GCM open of ciphertext ‖ tag.
pub fn aes_256_gcm_open(
    backend: Backend,
    key: &[u8; 32],
    nonce: &[u8; 12],
    aad: &[u8],
    ct_tag: &[u8],
) -> Result<Vec<u8>> {
    let mut buf = ct_tag.to_vec();
    Aead::new(backend, key)?.open_in_place(nonce, aad, &mut buf)?;
    Ok(buf)
}

/// SHA3-256.
pub fn sha3_256(backend: Backend, data: &[u8]) -> [u8; 32] {
    symmetric::sha3_256(backend, &[data])
}

/// RSA-OAEP-SHA256 encryption of a 32-byte secret to an SPKI DER key of `bits`.
pub fn rsa_oaep_encrypt(
    backend: Backend,
    bits: usize,
    spki: &[u8],
    secret: &[u8; 32],
) -> Result<Vec<u8>> {
    rsa_oaep::PublicKey::parse(backend, bits, spki)?.encrypt(secret, &mut crate::os_rng())
}

/// RSA-OAEP-SHA256 decryption with a PKCS#8 DER key of `bits`.
pub fn rsa_oaep_decrypt(backend: Backend, bits: usize, pkcs8: &[u8], c: &[u8]) -> Result<[u8; 32]> {
    Ok(*rsa_oaep::SecretKey::parse(backend, bits, pkcs8)?.decrypt(c)?)
}
