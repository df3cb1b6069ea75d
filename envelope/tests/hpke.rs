//! The HPKE layer against the official vectors, on both backends (`tests/vectors/README.md`
//! for their provenance): draft-ietf-hpke-pq's cases for ML-KEM-768 + HKDF-SHA256,
//! ML-KEM-1024 + HKDF-SHA384 and X-Wing + HKDF-SHA256, and RFC 9180's DHKEM(X25519) cases
//! with AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305.
//!
//! Receiver side on both backends: DeriveKeyPair(ikmR) gives skRm and pkRm, SetupBaseR with
//! `enc` opens every encryption and gives every export. Sender side: SetupBaseS with the
//! vector's encapsulation randomness gives `enc` and every ciphertext, on RustCrypto for
//! every KEM and on aws-lc for X25519 (AWS-LC draws ML-KEM's randomness itself, so there it
//! must refuse fixed randomness, and its random encapsulations are opened by RustCrypto).

#![allow(clippy::unwrap_used, reason = "tests")]

use envelope::Backend;
use envelope::hpke::{
    AeadId, KdfId, KemId, PrivateKey, Randomness, Suite, derive_key_pair, setup_base_r,
    setup_base_s,
};
use serde_json::Value;

fn cases(file: &str) -> Vec<Value> {
    let path = format!("{}/tests/vectors/{file}", env!("CARGO_MANIFEST_DIR"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["testCases"].as_array().unwrap().clone()
}

fn hx(v: &Value) -> Vec<u8> {
    hex::decode(v.as_str().unwrap()).unwrap()
}

fn suite(c: &Value) -> Suite {
    let id = |k: &str| u16::try_from(c[k].as_u64().unwrap()).unwrap();
    Suite {
        kem: KemId::from_id(id("kem_id")).unwrap(),
        kdf: KdfId::from_id(id("kdf_id")).unwrap(),
        aead: AeadId::from_id(id("aead_id")).unwrap(),
    }
}

fn all() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = cases("hpke-pq.json")
        .into_iter()
        .map(|c| ("hpke-pq".to_owned(), c))
        .collect();
    out.extend(
        cases("hpke-rfc9180-x25519.json")
            .into_iter()
            .map(|c| ("rfc9180".to_owned(), c)),
    );
    out
}

#[test]
fn the_vectors_are_the_suites_pqbench_offers() {
    let got: Vec<(KemId, KdfId, AeadId)> = all()
        .iter()
        .map(|(_, c)| {
            let s = suite(c);
            (s.kem, s.kdf, s.aead)
        })
        .collect();
    assert_eq!(
        got,
        [
            (KemId::MlKem768, KdfId::HkdfSha256, AeadId::Aes128Gcm),
            (KemId::MlKem1024, KdfId::HkdfSha384, AeadId::Aes256Gcm),
            (KemId::XWing, KdfId::HkdfSha256, AeadId::ChaCha20Poly1305),
            (KemId::X25519, KdfId::HkdfSha256, AeadId::Aes128Gcm),
            (KemId::X25519, KdfId::HkdfSha256, AeadId::Aes256Gcm),
            (KemId::X25519, KdfId::HkdfSha256, AeadId::ChaCha20Poly1305),
        ]
    );
}

#[test]
fn derive_key_pair_gives_the_vectors_keys() {
    for (src, c) in all() {
        let kp = derive_key_pair(suite(&c).kem, &hx(&c["ikmR"])).unwrap();
        assert_eq!(
            kp.secret.as_slice(),
            hx(&c["skRm"]),
            "{src} {:?}",
            suite(&c)
        );
        assert_eq!(kp.public, hx(&c["pkRm"]), "{src} {:?}", suite(&c));
    }
}

#[test]
fn the_receiver_opens_every_encryption_and_export_on_both_backends() {
    for backend in Backend::ALL {
        for (src, c) in all() {
            let s = suite(&c);
            let what = format!("{src} {s:?} on {backend}");
            let sk = PrivateKey::new(backend, s.kem, &hx(&c["skRm"])).unwrap();
            assert_eq!(sk.public(), hx(&c["pkRm"]), "{what}");
            let mut ctx = setup_base_r(s, &hx(&c["enc"]), &sk, &hx(&c["info"])).unwrap();
            let encs = c["encryptions"].as_array().unwrap();
            assert_eq!(encs.len(), 10, "{what}");
            for (i, e) in encs.iter().enumerate() {
                let pt = ctx.open(&hx(&e["aad"]), &hx(&e["ct"])).unwrap();
                assert_eq!(pt.as_slice(), hx(&e["pt"]), "{what}: encryption {i}");
            }
            for x in c["exports"].as_array().unwrap() {
                let l = usize::try_from(x["L"].as_u64().unwrap()).unwrap();
                let got = ctx.export(&hx(&x["exporter_context"]), l).unwrap();
                assert_eq!(got.as_slice(), hx(&x["exported_value"]), "{what}: export");
            }
        }
    }
}

#[test]
fn the_sender_reproduces_enc_and_every_ciphertext() {
    for backend in Backend::ALL {
        for (src, c) in all() {
            let s = suite(&c);
            let what = format!("{src} {s:?} on {backend}");
            let ikm_e = hx(&c["ikmE"]);
            let res = setup_base_s::<rand_chacha::ChaCha20Rng>(
                backend,
                s,
                &hx(&c["pkRm"]),
                &hx(&c["info"]),
                Randomness::Fixed(&ikm_e),
            );
            if matches!(backend, Backend::AwsLc | Backend::OpenSsl) && s.kem != KemId::X25519 {
                let err = res.unwrap_err().to_string();
                assert!(
                    err.contains("not available on the aws-lc and openssl backends"),
                    "{what}: {err}"
                );
                continue;
            }
            let (enc, mut ctx) = res.unwrap();
            assert_eq!(enc, hx(&c["enc"]), "{what}");
            for (i, e) in c["encryptions"].as_array().unwrap().iter().enumerate() {
                let ct = ctx.seal(&hx(&e["aad"]), &hx(&e["pt"])).unwrap();
                assert_eq!(ct, hx(&e["ct"]), "{what}: encryption {i}");
            }
        }
    }
}

/// Random encapsulations, every KEM with pqbench's v2 suite (HKDF-SHA256, AES-256-GCM):
/// what one backend seals the other opens; a wrong `info`, a changed `enc` or a changed
/// ciphertext is the opaque error.
#[test]
fn each_backend_opens_what_the_other_seals_and_nothing_else() {
    use rand_core::SeedableRng as _;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(20_261_202);
    for kem in [
        KemId::X25519,
        KemId::MlKem768,
        KemId::MlKem1024,
        KemId::XWing,
    ] {
        let s = Suite {
            kem,
            kdf: KdfId::HkdfSha256,
            aead: AeadId::Aes256Gcm,
        };
        let kp = derive_key_pair(kem, &[7u8; 32]).unwrap();
        let pairs = Backend::ALL
            .into_iter()
            .flat_map(|a| Backend::ALL.into_iter().map(move |b| (a, b)))
            .filter(|(a, b)| a != b);
        for (from, to) in pairs {
            let what = format!("{kem:?} {from} → {to}");
            let (enc, mut sctx) =
                setup_base_s(from, s, &kp.public, b"info", Randomness::Rng(&mut rng)).unwrap();
            assert_eq!(enc.len(), kem.enc_len(), "{what}");
            let ct = sctx
                .seal(b"aad", b"a data key of 32 bytes, exactly")
                .unwrap();
            let sk = PrivateKey::new(to, kem, &kp.secret).unwrap();
            let mut rctx = setup_base_r(s, &enc, &sk, b"info").unwrap();
            assert_eq!(
                rctx.open(b"aad", &ct).unwrap().as_slice(),
                b"a data key of 32 bytes, exactly",
                "{what}"
            );
            let opaque = |r: envelope::Result<_>| {
                assert!(matches!(r, Err(envelope::Error::Decrypt)), "{what}");
            };
            let mut wrong_info = setup_base_r(s, &enc, &sk, b"other").unwrap();
            opaque(wrong_info.open(b"aad", &ct).map(|_| ()));
            let mut bad_enc = enc.clone();
            bad_enc[0] ^= 1;
            match setup_base_r(s, &bad_enc, &sk, b"info") {
                Ok(mut c) => opaque(c.open(b"aad", &ct).map(|_| ())),
                Err(e) => assert!(matches!(e, envelope::Error::Decrypt), "{what}: {e}"),
            }
            let mut bad_ct = ct.clone();
            bad_ct[3] ^= 0x80;
            let mut c = setup_base_r(s, &enc, &sk, b"info").unwrap();
            opaque(c.open(b"aad", &bad_ct).map(|_| ()));
            // A failed open does not advance the sequence: the right ciphertext still opens.
            assert!(c.open(b"aad", &ct).is_ok(), "{what}");
        }
    }
}
