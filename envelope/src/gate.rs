//! The known-answer gate of the run engine (study section IV-A: "a start-up check verifies
//! the library version … and every call checks key and ciphertext sizes").
//!
//! Before a worker times anything it must show that the backend it will measure computes
//! the right answers for the mode under test, so that a misconfigured arm can never report
//! fast-but-wrong numbers. [`known_answer_gate`] checks, on the chosen backend:
//!
//! 1. **Known answer (receive path).** The mode's golden object (`envelope/tests/golden/`,
//!    a fixed 37-byte plaintext sealed from a seeded RNG and pinned byte for byte by
//!    `tests/format.rs`) opens to its pinned plaintext with its pinned key. This runs the
//!    mode's key recovery (decapsulation, RSA decryption or X25519), HKDF, AES-256-GCM and
//!    manifest validation on exactly the code paths a GET uses.
//! 2. **Independent cross-check (send path).** A fresh object sealed on the chosen backend to
//!    the golden public key opens on every *other* backend that implements the mode, each an
//!    independent implementation (AWS-LC, the RustCrypto crates, libcrux), and vice versa.
//! 3. **Sizes.** The golden key has the size FIPS 203 / the X-Wing draft / RFC 7748 specify
//!    for its type, and the key-establishment ciphertext `C` of the fresh object has the
//!    mode's specified length ([`Mode::ciphertext_len`]).
//!
//! [`check_key_sizes`] applies check 3 to the worker's real recipient key.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;

use crate::{
    Backend, Error, KeyType, Manifest, Mode, ObjectId, PublicKey, Receiver, Result, SealKey,
    SecretKey, Sender, open_stream, seal_stream,
};

/// What the gate verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateReport {
    /// The mode checked.
    pub mode: Mode,
    /// The backend checked.
    pub backend: Backend,
    /// Length of the golden public key (0 for modes without one).
    pub public_key_len: usize,
    /// Length of `C` in an object sealed on this backend.
    pub ciphertext_len: usize,
    /// Length of that object's manifest.
    pub manifest_len: usize,
}

#[derive(Deserialize)]
pub(crate) struct Golden {
    tenant: String,
    bucket: String,
    key: String,
    version: String,
    manifest: String,
    data_enc_hex: String,
    plaintext_hex: String,
    pub(crate) secret_key_b64: Option<String>,
}

/// The pinned golden object of `mode`, parsed.
pub(crate) fn golden(mode: Mode) -> Result<Golden> {
    serde_json::from_str(golden_text(mode))
        .map_err(|e| Error::Usage(format!("golden object of {mode} unreadable: {e}")))
}

/// The pinned golden objects (generated and checked by `tests/format.rs`).
fn golden_text(mode: Mode) -> &'static str {
    match mode {
        Mode::Plaintext => include_str!("../tests/golden/plaintext.json"),
        Mode::Psk => include_str!("../tests/golden/psk.json"),
        Mode::RsaOaep4096 => include_str!("../tests/golden/rsa-oaep-4096.json"),
        Mode::RsaOaep3072 => include_str!("../tests/golden/rsa-oaep-3072.json"),
        Mode::X25519 => include_str!("../tests/golden/x25519.json"),
        Mode::MlKem768 => include_str!("../tests/golden/ml-kem-768.json"),
        Mode::MlKem1024 => include_str!("../tests/golden/ml-kem-1024.json"),
        Mode::ConcatHybrid => include_str!("../tests/golden/concat-hybrid.json"),
        Mode::XWing => include_str!("../tests/golden/x-wing.json"),
        Mode::MlKem768Session => include_str!("../tests/golden/ml-kem-768-session.json"),
        Mode::X25519Padded => include_str!("../tests/golden/x25519-padded.json"),
    }
}

fn fail(mode: Mode, backend: Backend, what: &str) -> Error {
    Error::Usage(format!(
        "known-answer gate failed for {mode} on {backend}: {what}"
    ))
}

/// Checks that `pk`/`sk` have the sizes specified for `key_type` (public keys of fixed-size
/// types, secret keys of fixed-size types; RSA keys are DER and checked by their modulus
/// when parsed).
pub fn check_key_sizes(
    key_type: KeyType,
    pk: Option<&PublicKey>,
    sk: Option<&SecretKey>,
) -> Result<()> {
    if let (Some(want), Some(pk)) = (key_type.public_len(), pk)
        && pk.as_bytes().len() != want
    {
        return Err(Error::Key(format!(
            "{key_type} public key is {} bytes, the specification says {want}",
            pk.as_bytes().len()
        )));
    }
    if let (Some(want), Some(sk)) = (key_type.secret_len(), sk)
        && sk.expose_secret().len() != want
    {
        return Err(Error::Key(format!(
            "{key_type} secret key is {} bytes, the specification says {want}",
            sk.expose_secret().len()
        )));
    }
    Ok(())
}

/// Runs the known-answer gate for `mode` on `backend` (see the module docs). Takes a few
/// milliseconds (RSA-4096 decryption on `rustcrypto` is the slowest step, about 40 ms).
pub fn known_answer_gate(mode: Mode, backend: Backend) -> Result<GateReport> {
    backend.check_supports(mode)?;
    let g: Golden = serde_json::from_str(golden_text(mode))
        .map_err(|e| fail(mode, backend, &format!("golden object unreadable: {e}")))?;
    let sk = g
        .secret_key_b64
        .as_deref()
        .map(|s| {
            let bytes = B64
                .decode(s)
                .map_err(|_| fail(mode, backend, "golden key is not base64"))?;
            SecretKey::from_bytes(mode.key_type(), bytes)
        })
        .transpose()?;
    let pk = sk
        .as_ref()
        .map(SecretKey::public_key)
        .transpose()?
        .flatten();
    check_key_sizes(mode.key_type(), pk.as_ref(), sk.as_ref())?;
    let id = ObjectId::new(&g.tenant, &g.bucket, &g.key, &g.version)?;
    let data =
        hex::decode(&g.data_enc_hex).map_err(|_| fail(mode, backend, "golden data is not hex"))?;
    let pt = hex::decode(&g.plaintext_hex)
        .map_err(|_| fail(mode, backend, "golden plaintext is not hex"))?;

    // 1. The pinned object opens to the pinned plaintext on this backend.
    let receiver = Receiver::new(mode, backend, sk.as_ref())?;
    let mut out = Vec::new();
    open_stream(&receiver, &id, g.manifest.as_bytes(), &data[..], &mut out).map_err(|e| {
        fail(
            mode,
            backend,
            &format!("the golden object does not open: {e}"),
        )
    })?;
    if out != pt {
        return Err(fail(
            mode,
            backend,
            "the golden object opened to a different plaintext",
        ));
    }

    // 2. Seal here, open on every other backend; seal there, open here.
    let pairs = Backend::ALL
        .into_iter()
        .filter(|o| *o != backend && o.supports(mode))
        .flat_map(|o| [(backend, o), (o, backend)]);
    let key = match (&pk, &sk) {
        (Some(p), _) => SealKey::Public(p),
        (None, Some(s)) => SealKey::Psk(s),
        _ => SealKey::None,
    };
    let mut report = GateReport {
        mode,
        backend,
        public_key_len: pk.as_ref().map_or(0, |p| p.as_bytes().len()),
        ciphertext_len: 0,
        manifest_len: 0,
    };
    for (seal_on, open_on) in pairs {
        let sender = Sender::new(mode, seal_on, key)?;
        let fresh = ObjectId::new_version(&g.tenant, &g.bucket, &g.key)?;
        let mut enc = Vec::new();
        let sealed = seal_stream(
            &sender,
            &fresh,
            pt.len() as u64,
            &pt[..],
            &mut enc,
            &mut crate::os_rng(),
        )?;
        let m = Manifest::parse(&sealed.manifest, mode)?;
        if m.c.len() != mode.ciphertext_len() {
            return Err(fail(
                mode,
                backend,
                &format!(
                    "C is {} bytes on {seal_on}, the specification says {}",
                    m.c.len(),
                    mode.ciphertext_len()
                ),
            ));
        }
        let r = Receiver::new(mode, open_on, sk.as_ref())?;
        let mut back = Vec::new();
        open_stream(&r, &fresh, &sealed.manifest, &enc[..], &mut back).map_err(|e| {
            fail(
                mode,
                backend,
                &format!("an object sealed on {seal_on} does not open on {open_on}: {e}"),
            )
        })?;
        if back != pt {
            return Err(fail(
                mode,
                backend,
                "cross-backend round trip changed the data",
            ));
        }
        if seal_on == backend {
            report.ciphertext_len = m.c.len();
            report.manifest_len = sealed.manifest.len();
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_passes_on_every_backend_that_implements_it() {
        for mode in Mode::ALL {
            for backend in Backend::ALL.into_iter().filter(|b| b.supports(mode)) {
                let r = known_answer_gate(mode, backend)
                    .unwrap_or_else(|e| panic!("{mode} on {backend}: {e}"));
                assert_eq!(r.ciphertext_len, mode.ciphertext_len());
                if let Some(n) = mode.key_type().public_len() {
                    assert_eq!(r.public_key_len, n, "{mode}");
                }
            }
        }
    }

    #[test]
    fn a_backend_without_the_mode_is_refused_by_name() {
        let err = known_answer_gate(Mode::RsaOaep4096, Backend::Libcrux).expect_err("no RSA");
        assert!(err.to_string().contains("libcrux"), "{err}");
    }

    /// The gate's purpose: a backend that computes a wrong answer is refused before anything
    /// is timed. The fault flips one bit of every ML-KEM shared secret the chosen backend
    /// computes (on this thread only), on the receive or the send path.
    #[test]
    fn a_corrupted_backend_is_refused() {
        use crate::mlkem::fault::{Fault, inject};
        for backend in Backend::ALL {
            let sealed_here = format!("sealed on {backend} does not open");
            for (fault, says) in [
                (Fault::Decapsulate, "the golden object does not open"),
                (Fault::Encapsulate, sealed_here.as_str()),
            ] {
                let err = inject(backend, fault, || {
                    known_answer_gate(Mode::MlKem768, backend).expect_err("corrupted")
                });
                assert!(err.to_string().contains(says), "{backend} {fault:?}: {err}");
                // Every other backend's gate cross-checks against it, and refuses too.
                for other in Backend::ALL.into_iter().filter(|o| *o != backend) {
                    let err = inject(backend, fault, || known_answer_gate(Mode::MlKem768, other));
                    assert!(
                        err.is_err(),
                        "{other} cross-checks against corrupted {backend}"
                    );
                }
            }
        }
    }

    #[test]
    fn wrong_sizes_are_refused() {
        let sk = SecretKey::generate(KeyType::X25519, &mut crate::os_rng()).expect("key");
        let short = PublicKey::from_bytes(KeyType::X25519, vec![9; 32]).expect("pk");
        assert!(check_key_sizes(KeyType::X25519, Some(&short), Some(&sk)).is_ok());
        // A 1184-byte ML-KEM-768 key presented as ML-KEM-1024 is refused by its size.
        let ml = SecretKey::generate(KeyType::MlKem768, &mut crate::os_rng()).expect("key");
        let ml_pk = ml.public_key().expect("pk").expect("pk");
        let err = check_key_sizes(KeyType::MlKem1024, Some(&ml_pk), None).expect_err("size");
        assert!(err.to_string().contains("1568"), "{err}");
    }
}
