//! Format pinning and properties: seeded golden vectors (re-sealing with the same seed must
//! reproduce them byte for byte), proptest round trips, session bounds under concurrency,
//! and key files (0600, refusal of readable secret keys, key-id checks).
//!
//! Regenerate the golden files with `PQBENCH_BLESS=1 cargo test -p envelope --test format`
//! (only when the format changes on purpose: that breaks every stored object).

#![allow(
    clippy::cast_possible_truncation,
    reason = "test data is generated with wrapping byte arithmetic and small sizes"
)]

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use envelope::{
    Backend, KeyType, Manifest, Mode, ObjectId, PublicKey, Receiver, SealKey, SecretKey, Sender,
    SessionBounds, keys, open_stream, seal_stream,
};
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

fn golden_path(mode: Mode) -> String {
    format!(
        "{}/tests/golden/{}.json",
        env!("CARGO_MANIFEST_DIR"),
        mode.name()
    )
}

fn seal_golden(
    mode: Mode,
    sk: Option<&SecretKey>,
    id: &ObjectId,
    pt: &[u8],
    seed: u64,
) -> (Vec<u8>, Vec<u8>) {
    let pk = sk.and_then(|s| s.public_key().expect("pk"));
    let key = match (&pk, sk) {
        (Some(pk), _) => SealKey::Public(pk),
        (None, Some(sk)) => SealKey::Psk(sk),
        _ => SealKey::None,
    };
    let sender = Sender::new(mode, Backend::RustCrypto, key).expect("sender");
    let mut data = Vec::new();
    let sealed = seal_stream(
        &sender,
        id,
        pt.len() as u64,
        pt,
        &mut data,
        &mut ChaCha20Rng::seed_from_u64(seed),
    )
    .expect("seal");
    (sealed.manifest, data)
}

/// The golden object of every mode: a 37-byte plaintext sealed on `rustcrypto` with a
/// ChaCha20 RNG seeded by the mode's position, to a key generated from the same RNG
/// (RSA keys come from AWS-LC and are stored in the file).
#[test]
fn golden_vectors_pin_the_format() {
    let bless = std::env::var_os("PQBENCH_BLESS").is_some();
    let pt = b"pqbench golden object: format v1 \xf0\x9f\x94\x92";
    for (i, mode) in Mode::ALL.into_iter().enumerate() {
        let seed = 0x5eed_0000 + i as u64;
        let path = golden_path(mode);
        if bless {
            let kt = mode.key_type();
            let sk = (kt != KeyType::None).then(|| {
                SecretKey::generate(kt, &mut ChaCha20Rng::seed_from_u64(seed ^ 0xffff))
                    .expect("keygen")
            });
            let id = ObjectId::new(
                "tenant-golden",
                "bucket-golden",
                "dir/golden.bin",
                "01937a3c-8f00-7000-8000-000000000001",
            )
            .expect("id");
            let (manifest, data) = seal_golden(mode, sk.as_ref(), &id, pt, seed);
            let doc = json!({
                "description": "pqbench envelope format v1 golden object (seeded; see envelope/tests/format.rs)",
                "mode": mode.name(),
                "seed": seed,
                "key_type": mode.key_type().name(),
                "secret_key_b64": sk.as_ref().map(|s| B64.encode(s.expose_secret())),
                "public_key_b64": sk.as_ref().and_then(|s| s.public_key().expect("pk")).map(|p| B64.encode(p.as_bytes())),
                "tenant": id.tenant, "bucket": id.bucket, "key": id.key, "version": id.version,
                "plaintext_hex": hex::encode(pt),
                "manifest": String::from_utf8(manifest).expect("utf8"),
                "data_enc_hex": hex::encode(&data),
            });
            std::fs::create_dir_all(format!("{}/tests/golden", env!("CARGO_MANIFEST_DIR")))
                .expect("mkdir");
            std::fs::write(
                &path,
                serde_json::to_string_pretty(&doc).expect("json") + "\n",
            )
            .expect("write");
            continue;
        }
        let doc: Value = serde_json::from_str(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")),
        )
        .expect("json");
        let sk = doc["secret_key_b64"].as_str().map(|s| {
            SecretKey::from_bytes(mode.key_type(), B64.decode(s).expect("b64")).expect("key")
        });
        let id = ObjectId::new(
            doc["tenant"].as_str().expect("t"),
            doc["bucket"].as_str().expect("b"),
            doc["key"].as_str().expect("k"),
            doc["version"].as_str().expect("v"),
        )
        .expect("id");
        let manifest = doc["manifest"]
            .as_str()
            .expect("manifest")
            .as_bytes()
            .to_vec();
        let data = hex::decode(doc["data_enc_hex"].as_str().expect("data")).expect("hex");
        // Every backend that implements the mode opens the stored object.
        for b in Backend::ALL.into_iter().filter(|b| b.supports(mode)) {
            let r = Receiver::new(mode, b, sk.as_ref()).expect("receiver");
            let mut out = Vec::new();
            open_stream(&r, &id, &manifest, &data[..], &mut out)
                .unwrap_or_else(|e| panic!("{mode} on {b}: {e}"));
            assert_eq!(out, pt, "{mode} on {b}");
        }
        // Re-sealing with the same seed reproduces it byte for byte. (The session mode's
        // ctx carries the root's age in ms, so only its first object is reproducible; it is.)
        let (m2, d2) = seal_golden(mode, sk.as_ref(), &id, pt, seed);
        assert_eq!(
            String::from_utf8_lossy(&m2),
            String::from_utf8_lossy(&manifest),
            "{mode}: manifest drifted"
        );
        assert_eq!(d2, data, "{mode}: data.enc drifted");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn round_trip_any_size_any_mode(
        len in 0usize..70_000,
        byte in any::<u8>(),
        mode_ix in 0usize..Mode::ALL.len(),
        seal_b in 0usize..Backend::ALL.len(),
        open_b in 0usize..Backend::ALL.len(),
        seed in any::<u64>(),
    ) {
        let mode = Mode::ALL[mode_ix];
        let kt = mode.key_type();
        if matches!(kt, KeyType::Rsa3072 | KeyType::Rsa4096) {
            // RSA key generation is slow; RSA is covered by the per-mode macro tests.
            return Ok(());
        }
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let sk = (kt != KeyType::None).then(|| SecretKey::generate(kt, &mut rng).expect("keygen"));
        let pt: Vec<u8> = (0..len).map(|i| byte ^ (i as u8)).collect();
        let id = ObjectId::new_version("t", "b", "prop").expect("id");
        let pk = sk.as_ref().and_then(|s| s.public_key().expect("pk"));
        let key = match (&pk, &sk) { (Some(p), _) => SealKey::Public(p), (None, Some(s)) => SealKey::Psk(s), _ => SealKey::None };
        let sender = Sender::new(mode, Backend::ALL[seal_b], key).expect("sender");
        let mut data = Vec::new();
        let sealed = seal_stream(&sender, &id, len as u64, &pt[..], &mut data, &mut rng).expect("seal");
        prop_assert_eq!(data.len() as u64, sealed.ciphertext_size);
        let m = Manifest::parse(&sealed.manifest, mode).expect("parse");
        prop_assert_eq!(m.c.len(), mode.ciphertext_len());
        let r = Receiver::new(mode, Backend::ALL[open_b], sk.as_ref()).expect("receiver");
        let mut out = Vec::new();
        open_stream(&r, &id, &sealed.manifest, &data[..], &mut out).expect("open");
        prop_assert_eq!(out, pt);
    }
}

fn session_fixture(bounds: SessionBounds) -> (Arc<Sender>, SecretKey) {
    let sk = SecretKey::generate(KeyType::MlKem768, &mut envelope::os_rng()).expect("keygen");
    let pk = sk.public_key().expect("pk").expect("pk");
    let s = Sender::new(Mode::MlKem768Session, Backend::AwsLc, SealKey::Public(&pk))
        .expect("sender")
        .with_session_bounds(bounds)
        .expect("bounds");
    (Arc::new(s), sk)
}

#[test]
fn session_object_bound_and_receiver_cache() {
    let (s, sk) = session_fixture(SessionBounds {
        max_objects: 3,
        max_age: Duration::from_secs(600),
    });
    let r = Receiver::new(Mode::MlKem768Session, Backend::RustCrypto, Some(&sk)).expect("r");
    let mut seen = Vec::new();
    for i in 0..7u64 {
        let id = ObjectId::new_version("t", "b", &format!("o{i}")).expect("id");
        let mut data = Vec::new();
        let sealed = seal_stream(
            &s,
            &id,
            10,
            &[1u8; 10][..],
            &mut data,
            &mut envelope::os_rng(),
        )
        .expect("seal");
        let info = sealed.session.expect("session info");
        assert_eq!(
            (info.session, info.index, info.rekeyed),
            (i / 3, i % 3, i % 3 == 0)
        );
        let m = Manifest::parse(&sealed.manifest, Mode::MlKem768Session).expect("parse");
        let sc = m.ctx.session.expect("ctx.session");
        assert_eq!((sc.index, sc.max_objects), (i % 3, 3));
        seen.push(m.ctx.c_sha256.clone());
        let mut out = Vec::new();
        open_stream(&r, &id, &sealed.manifest, &data[..], &mut out).expect("open");
    }
    // Three sessions: 3 + 3 + 1 objects; the receiver decapsulated once per session.
    let distinct: std::collections::HashSet<_> = seen.iter().collect();
    assert_eq!(distinct.len(), 3);
    let stats = r.session_cache_stats().expect("stats");
    assert_eq!((stats.misses, stats.hits), (3, 4));
    // A different recipient key has its own cache and cannot use these roots.
    let other = SecretKey::generate(KeyType::MlKem768, &mut envelope::os_rng()).expect("keygen");
    assert_eq!(
        Receiver::new(Mode::MlKem768Session, Backend::AwsLc, Some(&other))
            .expect("r")
            .session_cache_stats(),
        Some(Default::default())
    );
}

#[test]
fn session_time_bound() {
    let (s, _) = session_fixture(SessionBounds {
        max_objects: 1000,
        max_age: Duration::from_millis(40),
    });
    let id = ObjectId::new_version("t", "b", "k").expect("id");
    let first = s
        .seal(&id, 0, &mut envelope::os_rng())
        .expect("seal")
        .session()
        .expect("info");
    let second = s
        .seal(&id, 0, &mut envelope::os_rng())
        .expect("seal")
        .session()
        .expect("info");
    assert_eq!((first.session, second.session, second.index), (0, 0, 1));
    std::thread::sleep(Duration::from_millis(60));
    let third = s
        .seal(&id, 0, &mut envelope::os_rng())
        .expect("seal")
        .session()
        .expect("info");
    assert!(
        third.rekeyed && third.session == 1 && third.index == 0,
        "{third:?}"
    );
}

#[test]
fn session_bounds_hold_under_concurrency() {
    let (s, _) = session_fixture(SessionBounds {
        max_objects: 10,
        max_age: Duration::from_secs(600),
    });
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                (0..50)
                    .map(|i| {
                        let id = ObjectId::new_version("t", "b", &format!("{t}-{i}")).expect("id");
                        let info = s
                            .seal(&id, 0, &mut envelope::os_rng())
                            .expect("seal")
                            .session()
                            .expect("info");
                        (info.session, info.index)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut per_session: HashMap<u64, Vec<u64>> = HashMap::new();
    for h in handles {
        for (sess, ix) in h.join().expect("thread") {
            per_session.entry(sess).or_default().push(ix);
        }
    }
    assert_eq!(per_session.len(), 40, "400 objects / B_max 10");
    for (sess, mut ixs) in per_session {
        ixs.sort_unstable();
        assert_eq!(ixs, (0..10).collect::<Vec<_>>(), "session {sess}");
    }
}

#[test]
fn zero_session_bounds_are_refused() {
    let pk = SecretKey::generate(KeyType::MlKem768, &mut envelope::os_rng())
        .expect("k")
        .public_key()
        .expect("pk")
        .expect("pk");
    let s = || {
        Sender::new(Mode::MlKem768Session, Backend::AwsLc, SealKey::Public(&pk)).expect("sender")
    };
    assert!(
        s().with_session_bounds(SessionBounds {
            max_objects: 0,
            max_age: Duration::from_secs(1)
        })
        .is_err()
    );
    assert!(
        s().with_session_bounds(SessionBounds {
            max_objects: 1,
            max_age: Duration::ZERO
        })
        .is_err()
    );
}

#[test]
fn key_files_are_0600_and_readable_ones_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    for kt in [
        KeyType::MlKem768,
        KeyType::XWing,
        KeyType::X25519,
        KeyType::ConcatHybrid,
        KeyType::Psk,
        KeyType::Rsa3072,
    ] {
        let sk = SecretKey::generate(kt, &mut envelope::os_rng()).expect("keygen");
        let path = dir.path().join(format!("{}.key", kt.name()));
        sk.write_file(&path).expect("write");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{kt}");
        let back = SecretKey::read_file(&path).expect("read");
        assert_eq!(back.expose_secret(), sk.expose_secret());
        assert_eq!(back.key_id().expect("id"), sk.key_id().expect("id"));
        // Refuses to overwrite.
        assert!(
            sk.write_file(&path).is_err(),
            "{kt}: overwrote a secret key"
        );
        // Refuses a group/world-readable file.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = SecretKey::read_file(&path)
            .expect_err("readable key accepted")
            .to_string();
        assert!(err.contains("chmod 600"), "{err}");
        // No secret in the public file or in Debug output.
        if let Some(pk) = sk.public_key().expect("pk") {
            let ppath = dir.path().join(format!("{}.pub", kt.name()));
            keys::write_public_file(&pk, &ppath).expect("write pub");
            let text = std::fs::read_to_string(&ppath).expect("read");
            assert!(!text.contains(&B64.encode(sk.expose_secret())));
            assert_eq!(PublicKey::read_file(&ppath).expect("pub"), pk);
        }
        assert!(!format!("{sk:?}").contains(&hex::encode(&sk.expose_secret()[..8])));
    }
}

#[test]
fn key_file_with_wrong_key_id_is_refused() {
    let sk = SecretKey::generate(KeyType::X25519, &mut envelope::os_rng()).expect("keygen");
    let text = sk.to_file_json().expect("json");
    let mut v: Value = serde_json::from_str(&text).expect("json");
    v["key_id"] = Value::String("00".repeat(32));
    assert!(SecretKey::from_file_json(&v.to_string()).is_err());
    let pk = sk.public_key().expect("pk").expect("pk");
    let mut v: Value = serde_json::from_str(&pk.to_file_json()).expect("json");
    v["key_type"] = Value::String("ml-kem-768".into());
    assert!(PublicKey::from_file_json(&v.to_string()).is_err());
}

#[test]
fn manifests_carry_no_secret_material() {
    for mode in Mode::ALL
        .into_iter()
        .filter(|m| !matches!(m.key_type(), KeyType::Rsa3072 | KeyType::Rsa4096))
    {
        let kt = mode.key_type();
        let sk = (kt != KeyType::None)
            .then(|| SecretKey::generate(kt, &mut envelope::os_rng()).expect("keygen"));
        let id = ObjectId::new_version("t", "b", "k").expect("id");
        let (m, _) = seal_golden(mode, sk.as_ref(), &id, b"x", 1);
        let text = String::from_utf8(m).expect("utf8");
        if let Some(sk) = &sk {
            for enc in [
                B64.encode(sk.expose_secret()),
                hex::encode(sk.expose_secret()),
            ] {
                assert!(
                    !text.contains(&enc[..16]),
                    "{mode}: manifest contains the secret key"
                );
            }
        }
    }
}

/// Random corruption of the manifest or of `data.enc` (byte flips, truncation, insertion):
/// opening never panics, and never returns a plaintext other than the original.
mod corruption {
    use super::*;

    fn fixture(mode: Mode) -> (SecretKey, ObjectId, Vec<u8>, Vec<u8>, Vec<u8>) {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let sk = SecretKey::generate(mode.key_type(), &mut rng).expect("keygen");
        let pk = sk.public_key().expect("pk").expect("pk");
        let sender = Sender::new(mode, Backend::AwsLc, SealKey::Public(&pk)).expect("sender");
        let id = ObjectId::new_version("t", "b", "fuzz/object").expect("id");
        let pt: Vec<u8> = (0..3000u32).map(|i| (i % 256) as u8).collect();
        let mut data = Vec::new();
        let sealed =
            seal_stream(&sender, &id, pt.len() as u64, &pt[..], &mut data, &mut rng).expect("seal");
        (sk, id, pt, sealed.manifest, data)
    }

    fn mutate(mut v: Vec<u8>, kind: u8, pos: usize, byte: u8) -> Vec<u8> {
        let at = if v.is_empty() { 0 } else { pos % v.len() };
        match kind % 3 {
            0 if !v.is_empty() => v[at] ^= byte | 1,
            1 => v.truncate(at),
            _ => v.insert(at, byte),
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn corrupted_objects_never_yield_other_plaintext(
            x25519 in any::<bool>(),
            in_manifest in any::<bool>(),
            kind in any::<u8>(),
            pos in any::<usize>(),
            byte in any::<u8>(),
        ) {
            let mode = if x25519 { Mode::X25519 } else { Mode::MlKem768 };
            let (sk, id, pt, manifest, data) = fixture(mode);
            let (m, d) = if in_manifest {
                (mutate(manifest, kind, pos, byte), data)
            } else {
                (manifest, mutate(data, kind, pos, byte))
            };
            for b in Backend::ALL {
                let r = Receiver::new(mode, b, Some(&sk)).expect("receiver");
                let mut out = Vec::new();
                if open_stream(&r, &id, &m, &d[..], &mut out).is_ok() {
                    prop_assert_eq!(&out, &pt, "a corrupted object opened to a different plaintext");
                }
            }
        }
    }
}
