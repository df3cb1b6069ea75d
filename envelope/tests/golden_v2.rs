//! Golden format-v2 and v2.1 objects (`tests/golden/v2-<kem>-<placement>.json`,
//! `tests/golden/v2.1-<kem>-<placement>.json`, and one v2.1 object re-wrapped from X25519
//! to ML-KEM-768, `tests/golden/v2.1-rewrapped.json`): a 37-byte plaintext
//! sealed on `rustcrypto` with a ChaCha20 RNG seeded per file, to a key pair from HPKE's
//! `DeriveKeyPair` of a fixed `ikm`. Each file holds the keys, the identity, the header and
//! the chunks. Checked: both backends open the stored bytes; re-sealing with the same seed
//! reproduces them byte for byte (on `rustcrypto`: AWS-LC draws ML-KEM's encapsulation
//! randomness itself, so its output cannot be pinned; its equality with `rustcrypto`'s is
//! what the HPKE-PQ vectors check); the header's length is that of FORMAT-v2 §8.
//!
//! Regenerate with `PQBENCH_BLESS=1 cargo test -p envelope --test golden_v2` (only when the
//! format changes on purpose; `make golden` does both formats).

#![allow(clippy::unwrap_used, reason = "tests")]

use envelope::hpke::{self, KemId, PrivateKey};
use envelope::v2::{self, HeaderVersion, Placement, To};
use envelope::{Backend, ObjectId};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use serde_json::{Value, json};

const CASES: [(KemId, Placement); 7] = [
    (KemId::X25519, Placement::Metadata),
    (KemId::X25519, Placement::Prefix),
    (KemId::MlKem768, Placement::Metadata),
    (KemId::MlKem768, Placement::Prefix),
    (KemId::MlKem1024, Placement::Prefix),
    (KemId::XWing, Placement::Metadata),
    (KemId::XWing, Placement::Prefix),
];

fn placement_name(p: Placement) -> &'static str {
    match p {
        Placement::Metadata => "metadata",
        Placement::Prefix => "prefix",
    }
}

fn path(version: HeaderVersion, kem: KemId, p: Placement) -> String {
    format!(
        "{}/tests/golden/{}-{}-{}.json",
        env!("CARGO_MANIFEST_DIR"),
        version.name(),
        kem.name(),
        placement_name(p)
    )
}

fn id() -> ObjectId {
    ObjectId::new(
        "tenant-golden",
        "bucket-golden",
        "dir/golden.bin",
        "01937a3c-8f00-7000-8000-000000000002",
    )
    .unwrap()
}

const PLAINTEXT: &[u8] = "pqbench golden object: format v2 \u{1f512}".as_bytes();

#[test]
fn golden_v2_objects_pin_the_format() {
    golden(HeaderVersion::V2, 0x5eed_2000);
}

#[test]
fn golden_v2_1_objects_pin_the_format() {
    golden(HeaderVersion::V2_1, 0x5eed_2100);
}

fn golden(version: HeaderVersion, seeds: u64) {
    let bless = std::env::var_os("PQBENCH_BLESS").is_some();
    let pt = PLAINTEXT;
    assert_eq!(pt.len(), 37);
    for (i, (kem, placement)) in CASES.into_iter().enumerate() {
        let seed = seeds + i as u64;
        let kp = hpke::derive_key_pair(kem, &[u8::try_from(i).unwrap() + 1; 32]).unwrap();
        let seal = || {
            v2::seal_as(
                version,
                Backend::RustCrypto,
                &id(),
                &[To {
                    kem,
                    public: &kp.public,
                }],
                false,
                placement,
                pt,
                &mut ChaCha20Rng::seed_from_u64(seed),
            )
            .unwrap()
        };
        let file = path(version, kem, placement);
        if bless {
            let s = seal();
            let doc = json!({
                "description": format!("pqbench envelope format {} golden object (seeded; see envelope/tests/golden_v2.rs)", version.name()),
                "kem": kem.name(),
                "kem_id": format!("{:04x}", kem.id()),
                "placement": placement_name(placement),
                "seed": seed,
                "secret_key_hex": hex::encode(&kp.secret[..]),
                "public_key_hex": hex::encode(&kp.public),
                "tenant": "tenant-golden", "bucket": "bucket-golden", "key": "dir/golden.bin",
                "version": id().version,
                "plaintext_hex": hex::encode(pt),
                "header_hex": hex::encode(&s.header),
                "metadata_entry": (placement == Placement::Metadata).then(|| v2::encode_metadata(&s.header)),
                "chunks_hex": hex::encode(&s.chunks),
            });
            std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
            continue;
        }
        let doc: Value = serde_json::from_str(
            &std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}")),
        )
        .unwrap();
        let field = |k: &str| hex::decode(doc[k].as_str().unwrap()).unwrap();
        let (header, chunks) = (field("header_hex"), field("chunks_hex"));
        assert_eq!(field("public_key_hex"), kp.public, "{file}: key drifted");
        assert_eq!(
            header.len(),
            version.fixed_len() + 86 + kem.enc_len(),
            "{file}: FORMAT-v2 §8 size"
        );
        for b in Backend::ALL {
            let sk = PrivateKey::new(b, kem, &field("secret_key_hex")).unwrap();
            let out = v2::open(&id(), &sk, &header, placement, &chunks)
                .unwrap_or_else(|e| panic!("{file} on {b}: {e}"));
            assert_eq!(out.as_slice(), pt, "{file} on {b}");
        }
        let again = seal();
        assert_eq!(
            hex::encode(&again.header),
            hex::encode(&header),
            "{file}: header drifted"
        );
        assert_eq!(again.chunks, chunks, "{file}: chunks drifted");
    }
}

/// The v2.1 X25519 golden object in placement metadata, re-wrapped (§10.1) by its
/// recipient to an ML-KEM-768 key as another version: the file holds both headers and the
/// one body; both keys open it, each under its own header and version.
#[test]
fn a_golden_rewrap_pins_section_10() {
    let bless = std::env::var_os("PQBENCH_BLESS").is_some();
    let (old_kem, new_kem) = (KemId::X25519, KemId::MlKem768);
    let source = path(HeaderVersion::V2_1, old_kem, Placement::Metadata);
    let file = format!(
        "{}/tests/golden/v2.1-rewrapped.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let new_id = ObjectId::new(
        "tenant-golden",
        "bucket-golden",
        "dir/golden.bin",
        "01937a3c-8f00-7000-8000-000000000003",
    )
    .unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&source).unwrap()).unwrap();
    let field = |d: &Value, k: &str| hex::decode(d[k].as_str().unwrap()).unwrap();
    let new_kp = hpke::derive_key_pair(new_kem, &[0x42; 32]).unwrap();
    let seed = 0x5eed_2200;
    let rewrap = || {
        let old_sk = envelope::SecretKey::from_bytes(
            envelope::KeyType::X25519,
            field(&doc, "secret_key_hex"),
        )
        .unwrap();
        let new_pk =
            envelope::PublicKey::from_bytes(envelope::KeyType::MlKem768, new_kp.public.clone())
                .unwrap();
        let to =
            v2::Sender::new(Backend::RustCrypto, &[&new_pk], false, Placement::Metadata).unwrap();
        v2::Receiver::new(Backend::RustCrypto, &old_sk)
            .unwrap()
            .rewrap(
                &id(),
                &field(&doc, "header_hex"),
                Placement::Metadata,
                &new_id,
                &to,
                &mut ChaCha20Rng::seed_from_u64(seed),
            )
            .unwrap()
    };
    if bless {
        let header = rewrap();
        let out = json!({
            "description": "pqbench format v2.1 re-wrap (FORMAT-v2.md §10.1): v2.1-x25519-metadata.json re-wrapped by its recipient to an ML-KEM-768 key as version `version` (seeded; see envelope/tests/golden_v2.rs)",
            "source": "v2.1-x25519-metadata.json",
            "kem": new_kem.name(),
            "kem_id": format!("{:04x}", new_kem.id()),
            "placement": "metadata",
            "seed": seed,
            "secret_key_hex": hex::encode(&new_kp.secret[..]),
            "public_key_hex": hex::encode(&new_kp.public),
            "tenant": "tenant-golden", "bucket": "bucket-golden", "key": "dir/golden.bin",
            "version": new_id.version,
            "plaintext_hex": hex::encode(PLAINTEXT),
            "header_hex": hex::encode(&header),
            "metadata_entry": v2::encode_metadata(&header),
            "chunks_hex": doc["chunks_hex"],
        });
        std::fs::write(&file, serde_json::to_string_pretty(&out).unwrap() + "\n").unwrap();
        return;
    }
    let out: Value = serde_json::from_str(
        &std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}")),
    )
    .unwrap();
    let header = field(&out, "header_hex");
    assert_eq!(
        out["chunks_hex"], doc["chunks_hex"],
        "{file}: the body is the source's"
    );
    assert_eq!(
        header.len(),
        v2::FIXED_LEN_REWRAPPABLE + 86 + new_kem.enc_len()
    );
    for b in Backend::ALL {
        let sk = PrivateKey::new(b, new_kem, &field(&out, "secret_key_hex")).unwrap();
        let got = v2::open(
            &new_id,
            &sk,
            &header,
            Placement::Metadata,
            &field(&out, "chunks_hex"),
        )
        .unwrap_or_else(|e| panic!("{file} on {b}: {e}"));
        assert_eq!(got.as_slice(), PLAINTEXT, "{file} on {b}");
    }
    assert_eq!(
        hex::encode(rewrap()),
        hex::encode(&header),
        "{file}: header drifted"
    );
}
