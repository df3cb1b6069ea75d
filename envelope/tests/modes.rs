//! Every mode × backend gets the same cases from one macro (STYLE.md "Crypto"):
//! round trips at the chunk boundaries (sealed by one backend, opened by both), bit flips in
//! every region, chunk deletion/reordering/duplication/truncation/extension, manifests
//! swapped, replayed or relabelled, a planted plaintext object (downgrade) and a wrong
//! recipient key. Every tamper case must fail. Randomness is a seeded ChaCha20.

#![allow(
    clippy::cast_possible_truncation,
    reason = "test data is generated with wrapping byte arithmetic and small sizes"
)]

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use envelope::{
    Backend, CHUNK_SIZE, Error, KeyType, Mode, ObjectId, PublicKey, Receiver, SealKey, SecretKey,
    Sender, TAG_LEN, open_stream, seal_stream,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::Value;

const CHUNK: usize = CHUNK_SIZE as usize;

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// One secret key per (key type, slot), generated once per test binary (RSA key generation is slow).
fn key(kt: KeyType, slot: u8) -> SecretKey {
    static KEYS: OnceLock<Mutex<HashMap<(&'static str, u8), SecretKey>>> = OnceLock::new();
    let m = KEYS.get_or_init(Default::default);
    let mut g = m.lock().expect("lock");
    g.entry((kt.name(), slot))
        .or_insert_with(|| {
            SecretKey::generate(kt, &mut rng(1000 + u64::from(slot))).expect("keygen")
        })
        .clone()
}

struct Fixture {
    mode: Mode,
    backend: Backend,
    sk: Option<SecretKey>,
    pk: Option<PublicKey>,
}

impl Fixture {
    fn new(mode: Mode, backend: Backend) -> Self {
        Self::with_slot(mode, backend, 0)
    }

    fn with_slot(mode: Mode, backend: Backend, slot: u8) -> Self {
        let kt = mode.key_type();
        let sk = (kt != KeyType::None).then(|| key(kt, slot));
        let pk = sk.as_ref().and_then(|s| s.public_key().expect("public"));
        Self {
            mode,
            backend,
            sk,
            pk,
        }
    }

    fn sender(&self) -> Sender {
        let k = match (&self.pk, &self.sk) {
            (Some(pk), _) => SealKey::Public(pk),
            (None, Some(sk)) => SealKey::Psk(sk),
            (None, None) => SealKey::None,
        };
        Sender::new(self.mode, self.backend, k).expect("sender")
    }

    fn receiver(&self, backend: Backend) -> Receiver {
        Receiver::new(self.mode, backend, self.sk.as_ref()).expect("receiver")
    }

    fn seal(&self, id: &ObjectId, data: &[u8], seed: u64) -> (Vec<u8>, Vec<u8>) {
        let mut out = Vec::new();
        let sealed = seal_stream(
            &self.sender(),
            id,
            data.len() as u64,
            data,
            &mut out,
            &mut rng(seed),
        )
        .expect("seal");
        assert_eq!(out.len() as u64, sealed.ciphertext_size);
        (sealed.manifest, out)
    }
}

/// The backends that implement `mode` (libcrux has no RSA).
fn backends(mode: Mode) -> impl Iterator<Item = Backend> {
    Backend::ALL.into_iter().filter(move |b| b.supports(mode))
}

fn id(key: &str) -> ObjectId {
    ObjectId::new_version("tenant-a", "bucket-1", key).expect("id")
}

fn plaintext(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn open(r: &Receiver, id: &ObjectId, manifest: &[u8], data: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    open_stream(r, id, manifest, data, &mut out).map(|_| out)
}

/// Asserts that opening fails on both backends.
fn must_fail(f: &Fixture, id: &ObjectId, manifest: &[u8], data: &[u8], case: &str) {
    for b in backends(f.mode) {
        let r = f.receiver(b);
        assert!(
            open(&r, id, manifest, data).is_err(),
            "{} on {b}: tamper case {case:?} was not detected",
            f.mode
        );
    }
}

/// Chunk boundaries inside data.enc.
fn chunk_ranges(mode: Mode, plain_len: usize) -> Vec<std::ops::Range<usize>> {
    let tag = if mode.encrypts() { TAG_LEN } else { 0 };
    let n = envelope::chunk_count(plain_len as u64) as usize;
    let mut at = 0;
    (0..n)
        .map(|j| {
            let len = envelope::chunk_len(plain_len as u64, j as u64) as usize + tag;
            let r = at..at + len;
            at += len;
            r
        })
        .collect()
}

fn edit_manifest(manifest: &[u8], f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(manifest).expect("json");
    f(&mut v);
    serde_json::to_vec(&v).expect("json")
}

fn flip_b64(s: &str) -> String {
    use base64::Engine as _;
    let e = base64::engine::general_purpose::STANDARD;
    let mut b = e.decode(s).expect("b64");
    if b.is_empty() {
        b.push(1);
    } else {
        b[0] ^= 1;
    }
    e.encode(b)
}

// ---- the cases -------------------------------------------------------------------------

fn round_trips(mode: Mode, backend: Backend) {
    let f = Fixture::new(mode, backend);
    for (i, len) in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 7]
        .into_iter()
        .enumerate()
    {
        let oid = id("rt");
        let pt = plaintext(len, i as u8);
        let (m, data) = f.seal(&oid, &pt, i as u64);
        for b in backends(f.mode) {
            let got = open(&f.receiver(b), &oid, &m, &data)
                .unwrap_or_else(|e| panic!("{mode} {backend}->{b} len {len}: {e}"));
            assert!(
                got == pt,
                "{mode} {backend}->{b} len {len}: plaintext differs"
            );
        }
        if mode.encrypts() && len >= 16 {
            assert!(
                !data.windows(16).any(|w| w == &pt[..16]),
                "ciphertext contains the plaintext"
            );
        }
    }
}

fn bit_flips(mode: Mode, backend: Backend) {
    let f = Fixture::new(mode, backend);
    let oid = id("flip");
    let pt = plaintext(CHUNK + 100, 7);
    let (m, data) = f.seal(&oid, &pt, 11);
    let ranges = chunk_ranges(mode, pt.len());
    // Chunk bodies and tags.
    for (j, r) in ranges.iter().enumerate() {
        for (what, pos) in [
            ("body start", r.start),
            ("body end", r.end - TAG_LEN - 1),
            ("tag", r.end - 1),
            ("tag start", r.end - TAG_LEN),
        ] {
            let mut d = data.clone();
            d[pos] ^= 0x01;
            must_fail(&f, &oid, &m, &d, &format!("bit flip in chunk {j} {what}"));
        }
    }
    // Every manifest field: a changed value must be refused.
    let v: Value = serde_json::from_slice(&m).expect("json");
    let top: Vec<String> = v.as_object().expect("obj").keys().cloned().collect();
    for k in top.iter().filter(|k| *k != "ctx") {
        let t = edit_manifest(&m, |v| {
            let s = v[k.as_str()].as_str().expect("str").to_owned();
            v[k.as_str()] = Value::String(match k.as_str() {
                "c" | "salt" => flip_b64(&s),
                "nonce_prefix" => format!("{:08x}", u32::from_str_radix(&s, 16).unwrap_or(0) ^ 1),
                _ => format!("{s}x"),
            });
        });
        must_fail(&f, &oid, &t, &data, &format!("manifest field {k}"));
    }
    let ctx_keys: Vec<String> = v["ctx"].as_object().expect("ctx").keys().cloned().collect();
    for k in &ctx_keys {
        let t = edit_manifest(&m, |v| {
            let x = &mut v["ctx"][k.as_str()];
            *x = match x {
                Value::String(s) if k == "version" => Value::String(envelope::new_version()),
                Value::String(s) if k.ends_with("_id") || k == "c_sha256" => {
                    let mut c: Vec<char> = s.chars().collect();
                    c[0] = if c[0] == '0' { '1' } else { '0' };
                    Value::String(c.into_iter().collect())
                }
                Value::String(s) => Value::String(format!("{s}x")),
                Value::Number(n) => Value::from(n.as_u64().expect("u64") + 1),
                Value::Object(o) => {
                    let mut o = o.clone();
                    o.insert(
                        "index".into(),
                        Value::from(o["index"].as_u64().expect("idx") + 1),
                    );
                    Value::Object(o)
                }
                other => panic!("unexpected ctx value {other}"),
            };
        });
        must_fail(&f, &oid, &t, &data, &format!("ctx field {k}"));
    }
    // C flipped with its hash fixed up: passes the structural check, fails cryptographically.
    if mode.ciphertext_len() > 0 {
        let t = edit_manifest(&m, |v| {
            use base64::Engine as _;
            let e = base64::engine::general_purpose::STANDARD;
            let mut c = e.decode(v["c"].as_str().expect("c")).expect("b64");
            c[0] ^= 0x80;
            v["ctx"]["c_sha256"] = Value::String(hex::encode(sha256(&c)));
            v["c"] = Value::String(e.encode(&c));
        });
        must_fail(&f, &oid, &t, &data, "C flipped, hash recomputed");
    }
    // Structure: unknown field, missing field, wrong type, duplicate field.
    must_fail(
        &f,
        &oid,
        &edit_manifest(&m, |v| v["extra"] = Value::from(1)),
        &data,
        "unknown field",
    );
    must_fail(
        &f,
        &oid,
        &edit_manifest(&m, |v| v["ctx"]["extra"] = Value::from(1)),
        &data,
        "unknown ctx field",
    );
    must_fail(
        &f,
        &oid,
        &edit_manifest(&m, |v| {
            v.as_object_mut().expect("o").remove("salt");
        }),
        &data,
        "missing salt",
    );
    must_fail(
        &f,
        &oid,
        &edit_manifest(&m, |v| {
            v["ctx"]
                .as_object_mut()
                .expect("o")
                .remove("plaintext_size");
        }),
        &data,
        "missing ctx field",
    );
    must_fail(
        &f,
        &oid,
        &edit_manifest(&m, |v| v["ctx"]["chunk_count"] = Value::from("2")),
        &data,
        "wrong type",
    );
    let dup = {
        let s = String::from_utf8(m.clone()).expect("utf8");
        s.replacen("{\"c\":", "{\"format\":\"pqbench-envelope/1\",\"c\":", 1)
            .into_bytes()
    };
    must_fail(&f, &oid, &dup, &data, "duplicate field");
    must_fail(&f, &oid, b"", &data, "empty manifest");
    must_fail(&f, &oid, &m[..m.len() - 1], &data, "truncated manifest");
}

fn sha256(b: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(b).into()
}

fn chunk_surgery(mode: Mode, backend: Backend) {
    let f = Fixture::new(mode, backend);
    let oid = id("chunks");
    let pt = plaintext(2 * CHUNK + 5, 3);
    let (m, data) = f.seal(&oid, &pt, 21);
    let r = chunk_ranges(mode, pt.len());
    let c = |j: usize| data[r[j].clone()].to_vec();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("chunk 1 deleted", [c(0), c(2)].concat()),
        ("chunk 0 deleted", [c(1), c(2)].concat()),
        ("chunks 0 and 1 swapped", [c(1), c(0), c(2)].concat()),
        (
            "chunk 0 duplicated over chunk 1",
            [c(0), c(0), c(2)].concat(),
        ),
        ("chunk 0 duplicated", [c(0), c(0), c(1), c(2)].concat()),
        ("last chunk dropped", [c(0), c(1)].concat()),
        ("truncated by one byte", data[..data.len() - 1].to_vec()),
        ("truncated to a tag", data[..data.len() - 5].to_vec()),
        ("extended by one byte", [data.clone(), vec![0]].concat()),
        ("extended by a chunk", [data.clone(), c(2)].concat()),
        ("empty data", Vec::new()),
    ];
    for (case, d) in cases {
        must_fail(&f, &oid, &m, &d, case);
    }
    // A chunk spliced from another object (same key, same size): fails.
    let other = id("chunks");
    let (_, data2) = f.seal(&other, &pt, 22);
    let spliced = [c(0), data2[r[1].clone()].to_vec(), c(2)].concat();
    must_fail(&f, &oid, &m, &spliced, "chunk spliced from another object");
}

fn manifest_swaps(mode: Mode, backend: Backend) {
    let f = Fixture::new(mode, backend);
    let pt = plaintext(1000, 5);
    let a = id("object-a");
    let b = id("object-b");
    let a2 = ObjectId::new_version(&a.tenant, &a.bucket, &a.key).expect("id");
    let (ma, da) = f.seal(&a, &pt, 31);
    let (mb, db) = f.seal(&b, &pt, 32);
    let (ma2, da2) = f.seal(&a2, &pt, 33);
    // Swapped to another object: B's manifest (and data) served for A.
    must_fail(&f, &a, &mb, &db, "manifest+data of another object");
    must_fail(&f, &a, &mb, &da, "manifest of another object");
    must_fail(&f, &a, &ma, &db, "data of another object");
    // Another version of the same key.
    must_fail(&f, &a2, &ma, &da, "older version replayed as the newer");
    must_fail(&f, &a, &ma2, &da, "newer manifest with older data");
    must_fail(&f, &a2, &ma2, &da, "older data under newer manifest");
    let _ = da2;
    // Relabelled: the manifest rewritten to name the requested object.
    let relabel = edit_manifest(&mb, |v| {
        v["ctx"]["key"] = Value::String(a.key.clone());
        v["ctx"]["version"] = Value::String(a.version.clone());
    });
    must_fail(
        &f,
        &a,
        &relabel,
        &db,
        "manifest relabelled to another identity",
    );
    let relabel_tenant = edit_manifest(&ma, |v| {
        v["ctx"]["tenant"] = Value::String("tenant-b".into())
    });
    let at = ObjectId::new("tenant-b", &a.bucket, &a.key, &a.version).expect("id");
    must_fail(
        &f,
        &at,
        &relabel_tenant,
        &da,
        "manifest relabelled to another tenant",
    );
}

fn downgrade_and_wrong_key(mode: Mode, backend: Backend) {
    // A planted plaintext object read by a reader that expects this mode.
    let plain = Fixture::new(Mode::Plaintext, backend);
    let oid = id("planted");
    let pt = plaintext(100, 9);
    let (m, d) = plain.seal(&oid, &pt, 41);
    if mode != Mode::Plaintext {
        let f = Fixture::new(mode, backend);
        for b in backends(mode) {
            let err = open(&f.receiver(b), &oid, &m, &d).expect_err("planted plaintext accepted");
            assert!(matches!(err, Error::ModeMismatch { .. }), "{mode}: {err}");
        }
        // And the object of this mode relabelled as another mode is refused too.
        let (m2, d2) = f.seal(&oid, &pt, 42);
        let relabelled = edit_manifest(&m2, |v| {
            v["ctx"]["mode"] = Value::String("plaintext".into())
        });
        let r = Receiver::new(Mode::Plaintext, backend, None).expect("r");
        assert!(
            open(&r, &oid, &relabelled, &d2).is_err(),
            "{mode} relabelled as plaintext"
        );
        // Wrong recipient key of the same type.
        let other = Fixture::with_slot(mode, backend, 1);
        for b in backends(mode) {
            assert!(
                open(&other.receiver(b), &oid, &m2, &d2).is_err(),
                "{mode}: opened with the wrong key"
            );
        }
        // A key of another type is refused when the reader is built.
        let wrong_type = if mode.key_type() == KeyType::X25519 {
            KeyType::MlKem768
        } else {
            KeyType::X25519
        };
        assert!(Receiver::new(mode, backend, Some(&key(wrong_type, 0))).is_err());
    } else {
        // A plaintext reader refuses an encrypted object, and takes no key at all.
        let enc = Fixture::new(Mode::X25519, backend);
        let (m2, d2) = enc.seal(&oid, &pt, 43);
        for b in Backend::ALL {
            let err = open(
                &Receiver::new(Mode::Plaintext, b, None).expect("r"),
                &oid,
                &m2,
                &d2,
            )
            .expect_err("x25519 object accepted by a plaintext reader");
            assert!(matches!(err, Error::ModeMismatch { .. }), "{err}");
        }
        assert!(Receiver::new(Mode::Plaintext, backend, Some(&key(KeyType::X25519, 0))).is_err());
    }
}

/// Plaintext (B0) has the framing but no cryptography: modified bytes go undetected. The
/// plaintext tests pin what it does and does not detect (the floor is not an integrity mode).
fn plaintext_limits(backend: Backend) {
    let f = Fixture::new(Mode::Plaintext, backend);
    let oid = id("plain");
    let pt = plaintext(CHUNK + 3, 1);
    let (m, mut d) = f.seal(&oid, &pt, 51);
    assert_eq!(d, pt, "plaintext data.enc is the plaintext");
    d[0] ^= 1;
    let got = open(&f.receiver(backend), &oid, &m, &d)
        .expect("plaintext mode cannot detect modified bytes");
    assert_ne!(got, pt);
}

/// Plaintext: surgery that changes the length of data.enc is refused (the manifest fixes
/// the size); reordering equal-sized chunks is not detected.
fn plaintext_chunk_surgery(backend: Backend) {
    let f = Fixture::new(Mode::Plaintext, backend);
    let oid = id("plain-chunks");
    let pt = plaintext(2 * CHUNK + 5, 4);
    let (m, data) = f.seal(&oid, &pt, 52);
    let r = chunk_ranges(Mode::Plaintext, pt.len());
    let c = |j: usize| data[r[j].clone()].to_vec();
    for (case, d) in [
        ("chunk 1 deleted", [c(0), c(2)].concat()),
        ("last chunk dropped", [c(0), c(1)].concat()),
        ("truncated by one byte", data[..data.len() - 1].to_vec()),
        ("extended by one byte", [data.clone(), vec![0]].concat()),
    ] {
        must_fail(&f, &oid, &m, &d, case);
    }
    // Chunks 0 and 1 made distinct first (the test pattern repeats every 256 bytes).
    let mut swapped = [c(1), c(0), c(2)].concat();
    swapped[0] ^= 0xff;
    let got = open(&f.receiver(backend), &oid, &m, &swapped)
        .expect("plaintext mode cannot detect reordered chunks");
    assert!(
        got == swapped,
        "plaintext returns the stored bytes as they are"
    );
}

/// Plaintext: a manifest of another object or version is refused (the reader checks the
/// identity it asked for); a manifest rewritten to name the requested object is not.
fn plaintext_manifest_swaps(backend: Backend) {
    let f = Fixture::new(Mode::Plaintext, backend);
    let pt = plaintext(1000, 6);
    let a = id("plain-a");
    let b = id("plain-b");
    let a2 = ObjectId::new_version(&a.tenant, &a.bucket, &a.key).expect("id");
    let (ma, da) = f.seal(&a, &pt, 53);
    let (mb, db) = f.seal(&b, &pt, 54);
    must_fail(&f, &a, &mb, &db, "plaintext manifest of another object");
    must_fail(
        &f,
        &a2,
        &ma,
        &da,
        "plaintext older version replayed as the newer",
    );
    let relabel = edit_manifest(&mb, |v| {
        v["ctx"]["key"] = Value::String(a.key.clone());
        v["ctx"]["version"] = Value::String(a.version.clone());
    });
    open(&f.receiver(backend), &a, &relabel, &db)
        .expect("plaintext mode cannot detect a relabelled manifest");
}

macro_rules! mode_cases {
    ($($name:ident: $mode:expr, $backend:expr;)*) => {$(
        mod $name {
            use super::*;
            #[test] fn round_trip_at_chunk_boundaries_both_backends() { round_trips($mode, $backend) }
            #[test] fn bit_flips_in_every_region_fail() { if $mode.encrypts() { bit_flips($mode, $backend) } else { plaintext_limits($backend) } }
            #[test] fn chunk_surgery_fails() { if $mode.encrypts() { chunk_surgery($mode, $backend) } else { plaintext_chunk_surgery($backend) } }
            #[test] fn swapped_replayed_relabelled_manifests_fail() { if $mode.encrypts() { manifest_swaps($mode, $backend) } else { plaintext_manifest_swaps($backend) } }
            #[test] fn downgrade_and_wrong_key_fail() { downgrade_and_wrong_key($mode, $backend) }
        }
    )*};
}

mode_cases! {
    plaintext_awslc: Mode::Plaintext, Backend::AwsLc;
    plaintext_rustcrypto: Mode::Plaintext, Backend::RustCrypto;
    psk_awslc: Mode::Psk, Backend::AwsLc;
    psk_rustcrypto: Mode::Psk, Backend::RustCrypto;
    rsa4096_awslc: Mode::RsaOaep4096, Backend::AwsLc;
    rsa4096_rustcrypto: Mode::RsaOaep4096, Backend::RustCrypto;
    rsa3072_awslc: Mode::RsaOaep3072, Backend::AwsLc;
    rsa3072_rustcrypto: Mode::RsaOaep3072, Backend::RustCrypto;
    x25519_awslc: Mode::X25519, Backend::AwsLc;
    x25519_rustcrypto: Mode::X25519, Backend::RustCrypto;
    mlkem768_awslc: Mode::MlKem768, Backend::AwsLc;
    mlkem768_rustcrypto: Mode::MlKem768, Backend::RustCrypto;
    mlkem1024_awslc: Mode::MlKem1024, Backend::AwsLc;
    mlkem1024_rustcrypto: Mode::MlKem1024, Backend::RustCrypto;
    concat_hybrid_awslc: Mode::ConcatHybrid, Backend::AwsLc;
    concat_hybrid_rustcrypto: Mode::ConcatHybrid, Backend::RustCrypto;
    xwing_awslc: Mode::XWing, Backend::AwsLc;
    xwing_rustcrypto: Mode::XWing, Backend::RustCrypto;
    mlkem768_session_awslc: Mode::MlKem768Session, Backend::AwsLc;
    mlkem768_session_rustcrypto: Mode::MlKem768Session, Backend::RustCrypto;
    x25519_padded_awslc: Mode::X25519Padded, Backend::AwsLc;
    x25519_padded_rustcrypto: Mode::X25519Padded, Backend::RustCrypto;
    plaintext_libcrux: Mode::Plaintext, Backend::Libcrux;
    psk_libcrux: Mode::Psk, Backend::Libcrux;
    x25519_libcrux: Mode::X25519, Backend::Libcrux;
    mlkem768_libcrux: Mode::MlKem768, Backend::Libcrux;
    mlkem1024_libcrux: Mode::MlKem1024, Backend::Libcrux;
    concat_hybrid_libcrux: Mode::ConcatHybrid, Backend::Libcrux;
    xwing_libcrux: Mode::XWing, Backend::Libcrux;
    mlkem768_session_libcrux: Mode::MlKem768Session, Backend::Libcrux;
    x25519_padded_libcrux: Mode::X25519Padded, Backend::Libcrux;
}

#[test]
fn every_mode_is_covered_by_the_macro() {
    // 11 modes × 2 backends above; this fails when a mode is added without its cases.
    assert_eq!(Mode::ALL.len(), 11);
}

/// The manifest-size control (study section V-C, mode C2) is exactly as long as ML-KEM-768's
/// manifest for the same object, at every object size and on both backends, so that a
/// difference between them is not one of manifest bytes.
#[test]
fn padded_control_manifest_is_as_long_as_ml_kem_768() {
    for backend in [Backend::AwsLc, Backend::RustCrypto] {
        let (pad, kem) = (
            Fixture::new(Mode::X25519Padded, backend),
            Fixture::new(Mode::MlKem768, backend),
        );
        for (i, len) in [0, 1, 37, 65_536, CHUNK + 1].into_iter().enumerate() {
            let oid = id(&format!("dir/control-{len}.bin"));
            let pt = plaintext(len, 7);
            let (mp, _) = pad.seal(&oid, &pt, 70 + i as u64);
            let (mk, _) = kem.seal(&oid, &pt, 80 + i as u64);
            assert_eq!(
                mp.len(),
                mk.len(),
                "{backend:?}, {len} bytes: x25519-padded manifest {} bytes, ml-kem-768 {}",
                mp.len(),
                mk.len()
            );
        }
    }
}

// The openssl backend, in builds with envelope's `openssl` feature (make test's).
#[cfg(feature = "openssl")]
mode_cases! {
    plaintext_openssl: Mode::Plaintext, Backend::OpenSsl;
    psk_openssl: Mode::Psk, Backend::OpenSsl;
    x25519_openssl: Mode::X25519, Backend::OpenSsl;
    mlkem768_openssl: Mode::MlKem768, Backend::OpenSsl;
    mlkem1024_openssl: Mode::MlKem1024, Backend::OpenSsl;
    concat_hybrid_openssl: Mode::ConcatHybrid, Backend::OpenSsl;
    xwing_openssl: Mode::XWing, Backend::OpenSsl;
    mlkem768_session_openssl: Mode::MlKem768Session, Backend::OpenSsl;
    x25519_padded_openssl: Mode::X25519Padded, Backend::OpenSsl;
}
