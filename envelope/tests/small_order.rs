//! Small-order X25519 points are refused everywhere a peer's u-coordinate enters, in every
//! X25519-bearing mode, on both backends (FORMAT.md §6; issue 16 item 2: `seal --mode x-wing
//! --backend rustcrypto` to a key whose X25519 part is u = 1 used to commit an object whose
//! X25519 secret was all zeros, because the `x-wing` crate accepts non-contributory shares).
//!
//! One table, [`small_order`]: libsodium's seven 255-bit encodings of the points of order
//! dividing 8 on Curve25519 and its twist (0, 1, the two points of order 8, p − 1, p, p + 1;
//! `has_small_order` in libsodium's crypto_scalarmult/curve25519/ref10/x25519_ref10.c),
//! and each of them with bit 255 set (RFC 7748 §5 ignores that bit): 14 encodings. The
//! first test checks the table independently of pqbench (x25519-dalek's bare `x25519`
//! function gives all zeros for every entry, and not for random points).
//!
//! Each entry must be refused: at key load (`PublicKey::from_bytes` and a `recipient.pub`
//! file with a correct key id), at encapsulation (a sender given the raw bytes, the X-Wing
//! encapsulation, the ephemeral exchange), and at decapsulation (an object whose `C`
//! carries the point opens to the opaque decryption error).

use base64::Engine as _;
use envelope::{
    Backend, Error, KeyType, Mode, ObjectId, PublicKey, Receiver, SealKey, SecretKey, Sender, kat,
    open_stream, seal_stream,
};
use serde_json::Value;
use sha2::Digest as _;

/// libsodium's table (little-endian u-coordinates, bit 255 clear).
const LIBSODIUM: [&str; 7] = [
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0100000000000000000000000000000000000000000000000000000000000000",
    "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
    "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
];

/// The 14 encodings: each of libsodium's seven, and the same with bit 255 set.
fn small_order() -> Vec<(String, [u8; 32])> {
    let mut v = Vec::new();
    for h in LIBSODIUM {
        let mut u = [0u8; 32];
        hex::decode_to_slice(h, &mut u).expect("hex");
        v.push((h.to_owned(), u));
        u[31] |= 0x80;
        v.push((format!("{h} with bit 255 set"), u));
    }
    v
}

/// The modes that carry an X25519 share, with where it sits in the public key and in `C`.
const X25519_MODES: [(Mode, usize, usize); 4] = [
    (Mode::X25519, 0, 0),
    (Mode::X25519Padded, 0, 0),
    (Mode::ConcatHybrid, 1184, 1088),
    (Mode::XWing, 1184, 1088),
];

fn refused_as_small_order(r: Result<impl Sized, Error>, case: &str) {
    match r {
        Err(Error::Key(m)) if m.contains("small-order point") => {}
        Err(e) => panic!("{case}: refused, but not as a small-order point: {e}"),
        Ok(_) => panic!("{case}: accepted a small-order X25519 point"),
    }
}

/// A real public key of `mode`'s key type with its X25519 part replaced by `u`.
fn public_with(mode: Mode, at: usize, u: &[u8; 32]) -> (SecretKey, Vec<u8>) {
    let sk = SecretKey::generate(mode.key_type(), &mut envelope::os_rng()).expect("keygen");
    let mut bytes = sk
        .public_key()
        .expect("public")
        .expect("has a public key")
        .as_bytes()
        .to_vec();
    bytes[at..at + 32].copy_from_slice(u);
    (sk, bytes)
}

fn key_file(kt: KeyType, bytes: &[u8]) -> String {
    serde_json::json!({
        "format": "pqbench-public-key/1",
        "key_id": hex::encode(sha2::Sha256::digest(bytes)),
        "key_type": kt.name(),
        "key": base64::engine::general_purpose::STANDARD.encode(bytes),
    })
    .to_string()
}

#[test]
fn the_table_is_small_order_by_an_independent_implementation() {
    let mut scalar = [0u8; 32];
    for (i, b) in scalar.iter_mut().enumerate() {
        *b = u8::try_from(i * 37 % 251).expect("byte") | 1;
    }
    for (name, u) in small_order() {
        assert_eq!(x25519_dalek::x25519(scalar, u), [0u8; 32], "{name}");
    }
    // A point that is not of small order gives a non-zero secret (the check is not vacuous).
    let ok = x25519_dalek::x25519(scalar, x25519_dalek::X25519_BASEPOINT_BYTES);
    assert_ne!(ok, [0u8; 32]);
}

#[test]
fn key_load_refuses_every_small_order_share() {
    for (mode, at, _) in X25519_MODES {
        let kt = mode.key_type();
        for (name, u) in small_order() {
            let (_, bytes) = public_with(mode, at, &u);
            let case = format!("{mode}: {name}");
            refused_as_small_order(PublicKey::from_bytes(kt, bytes.clone()), &case);
            refused_as_small_order(PublicKey::from_file_json(&key_file(kt, &bytes)), &case);
        }
    }
}

#[test]
fn encapsulation_refuses_every_small_order_share_on_both_backends() {
    for backend in Backend::ALL {
        for (mode, at, _) in X25519_MODES {
            for (name, u) in small_order() {
                let case = format!("{mode} on {backend}: {name}");
                let (_, bytes) = public_with(mode, at, &u);
                refused_as_small_order(kat::sender_unchecked(mode, backend, bytes.clone()), &case);
                if mode == Mode::XWing {
                    refused_as_small_order(kat::x_wing_encaps(backend, &bytes), &case);
                }
            }
        }
        for (name, u) in small_order() {
            refused_as_small_order(kat::x25519_ephemeral(backend, &u), &name);
        }
    }
}

#[test]
fn decapsulation_of_a_small_order_share_is_the_opaque_error_on_both_backends() {
    let id = ObjectId::new_version("t", "b", "k").expect("id");
    for (mode, _, c_at) in X25519_MODES {
        let sk = SecretKey::generate(mode.key_type(), &mut envelope::os_rng()).expect("keygen");
        let pk = sk.public_key().expect("public").expect("public");
        let sender = Sender::new(mode, Backend::AwsLc, SealKey::Public(&pk)).expect("sender");
        let mut data = Vec::new();
        let sealed = seal_stream(
            &sender,
            &id,
            5,
            &b"hello"[..],
            &mut data,
            &mut envelope::os_rng(),
        )
        .expect("seal");
        for (name, u) in small_order() {
            // The manifest stays well-formed: C carries the point, c_sha256 its hash.
            let mut m: Value = serde_json::from_slice(&sealed.manifest).expect("json");
            let b64 = base64::engine::general_purpose::STANDARD;
            let mut c = b64.decode(m["c"].as_str().expect("c")).expect("b64");
            c[c_at..c_at + 32].copy_from_slice(&u);
            m["c"] = Value::from(b64.encode(&c));
            m["ctx"]["c_sha256"] = Value::from(hex::encode(sha2::Sha256::digest(&c)));
            let manifest = serde_json::to_vec(&m).expect("json");
            for backend in Backend::ALL {
                let receiver = Receiver::new(mode, backend, Some(&sk)).expect("receiver");
                let r = open_stream(&receiver, &id, &manifest, &data[..], &mut Vec::new());
                assert!(
                    matches!(r, Err(Error::Decrypt)),
                    "{mode} on {backend}: {name}: {r:?}"
                );
            }
        }
    }
}
