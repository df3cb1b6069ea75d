//! Golden format-v2 objects (`tests/golden/v2-<kem>-<placement>.json`): a 37-byte plaintext
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
use envelope::v2::{self, Placement, To};
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

fn path(kem: KemId, p: Placement) -> String {
    format!(
        "{}/tests/golden/v2-{}-{}.json",
        env!("CARGO_MANIFEST_DIR"),
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

#[test]
fn golden_v2_objects_pin_the_format() {
    let bless = std::env::var_os("PQBENCH_BLESS").is_some();
    let pt = "pqbench golden object: format v2 \u{1f512}".as_bytes();
    assert_eq!(pt.len(), 37);
    for (i, (kem, placement)) in CASES.into_iter().enumerate() {
        let seed = 0x5eed_2000 + i as u64;
        let kp = hpke::derive_key_pair(kem, &[u8::try_from(i).unwrap() + 1; 32]).unwrap();
        let seal = || {
            v2::seal(
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
        let file = path(kem, placement);
        if bless {
            let s = seal();
            let doc = json!({
                "description": "pqbench envelope format v2 golden object (seeded; see envelope/tests/golden_v2.rs)",
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
            v2::FIXED_LEN + 86 + kem.enc_len(),
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
