//! Interoperability with an independent implementation: OpenSSL 4 through Python's
//! `cryptography` 50 (`tests/interop/requirements.txt`). Primitive level in both directions
//! (ML-KEM-768/1024, X25519, RSA-OAEP), and object level: `tests/interop/pqreader.py`,
//! written only from `envelope/FORMAT.md`, opens objects that `pqbench seal` wrote.
//!
//! These tests fail (never skip) when Python or the package is missing: `.ci/run` installs it.

#![allow(
    clippy::cast_possible_truncation,
    reason = "test data is generated with wrapping byte arithmetic and small sizes"
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use envelope::{Backend, KeyType, Mode, SecretKey, kat};

fn python() -> String {
    std::env::var("PQBENCH_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

fn py(args: &[&str]) -> String {
    let out = Command::new(python())
        .arg(interop_dir().join("prims.py"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; install Python 3", python()));
    assert!(
        out.status.success(),
        "prims.py {args:?} failed: {}\n(install the oracle: pip install -r tests/interop/requirements.txt)",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf8")
        .trim()
        .to_owned()
}

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).expect("hex")
}

#[test]
fn ml_kem_both_directions_with_openssl() {
    for (level, kt) in [(768u16, KeyType::MlKem768), (1024, KeyType::MlKem1024)] {
        let sk = SecretKey::generate(kt, &mut envelope::os_rng()).expect("keygen");
        let seed: [u8; 64] = sk.expose_secret().try_into().expect("seed");
        let ek = sk
            .public_key()
            .expect("pk")
            .expect("pk")
            .as_bytes()
            .to_vec();
        let lv = level.to_string();
        // Key generation from the same seed agrees.
        assert_eq!(
            py(&["mlkem-public", &lv, &hex::encode(seed)]),
            hex::encode(&ek),
            "ML-KEM-{level} keygen"
        );
        for b in Backend::ALL {
            // OpenSSL encapsulates, we decapsulate.
            for _ in 0..5 {
                let r = py(&["mlkem-encaps", &lv, &hex::encode(&ek)]);
                let (ct, ss) = r.split_once(' ').expect("ct ss");
                assert_eq!(
                    kat::ml_kem_decaps_seed(b, level, &seed, &unhex(ct))
                        .expect("decaps")
                        .to_vec(),
                    unhex(ss),
                    "{b}"
                );
            }
            // We encapsulate, OpenSSL decapsulates.
            for _ in 0..5 {
                let (ct, ss) = kat::ml_kem_encaps(b, level, &ek).expect("encaps");
                assert_eq!(
                    py(&["mlkem-decaps", &lv, &hex::encode(seed), &hex::encode(&ct)]),
                    hex::encode(ss),
                    "{b}"
                );
            }
        }
    }
}

#[test]
fn x25519_both_directions_with_openssl() {
    let mut a = [0u8; 32];
    let mut b = [0u8; 32];
    for i in 0..5u8 {
        a.iter_mut()
            .enumerate()
            .for_each(|(j, x)| *x = i.wrapping_mul(7).wrapping_add(j as u8));
        b.iter_mut()
            .enumerate()
            .for_each(|(j, x)| *x = i.wrapping_mul(13) ^ (j as u8).wrapping_mul(3));
        let pub_a = kat::x25519_public(&a);
        let pub_b = kat::x25519_public(&b);
        assert_eq!(py(&["x25519-public", &hex::encode(a)]), hex::encode(pub_a));
        let theirs = py(&["x25519-exchange", &hex::encode(b), &hex::encode(pub_a)]);
        for be in Backend::ALL {
            assert_eq!(
                hex::encode(kat::x25519(be, &a, &pub_b).expect("dh")),
                theirs,
                "{be}"
            );
        }
    }
}

#[test]
fn rsa_oaep_both_directions_with_openssl() {
    for (bits, kt) in [(3072usize, KeyType::Rsa3072), (4096, KeyType::Rsa4096)] {
        let secret = [0xa5u8; 32];
        // OpenSSL's key: we encrypt, OpenSSL decrypts.
        let keys = py(&["rsa-generate", &bits.to_string()]);
        let (spki, pkcs8) = keys.split_once(' ').expect("keys");
        for b in Backend::ALL
            .into_iter()
            .filter(|b| b.supports(Mode::RsaOaep4096))
        {
            let c = kat::rsa_oaep_encrypt(b, bits, &unhex(spki), &secret).expect("encrypt");
            assert_eq!(
                py(&["rsa-decrypt", pkcs8, &hex::encode(&c)]),
                hex::encode(secret),
                "{b}"
            );
        }
        // Our key: OpenSSL encrypts, we decrypt on both backends.
        let sk = SecretKey::generate(kt, &mut envelope::os_rng()).expect("keygen");
        let pk = sk.public_key().expect("pk").expect("pk");
        let c = unhex(&py(&[
            "rsa-encrypt",
            &hex::encode(pk.as_bytes()),
            &hex::encode(secret),
        ]));
        for b in Backend::ALL
            .into_iter()
            .filter(|b| b.supports(Mode::RsaOaep4096))
        {
            assert_eq!(
                kat::rsa_oaep_decrypt(b, bits, sk.expose_secret(), &c).expect("decrypt"),
                secret,
                "{b}"
            );
        }
    }
}

/// HPKE base mode (`envelope::hpke`, format v2's wraps) against pyca's `hpke` module
/// (OpenSSL): for every KEM format v2 offers, on both backends, OpenSSL opens what pqbench
/// seals and pqbench opens what OpenSSL seals, with and without AAD; pqbench refuses
/// OpenSSL's wrap under another `info`.
#[test]
fn hpke_wraps_both_directions_with_openssl() {
    use envelope::hpke::{AeadId, KdfId, KemId, PrivateKey, Randomness, Suite};
    let mut rng = envelope::os_rng();
    for kem in [
        KemId::X25519,
        KemId::MlKem768,
        KemId::MlKem1024,
        KemId::XWing,
    ] {
        let id = format!("{:04x}", kem.id());
        let suite = Suite {
            kem,
            kdf: KdfId::HkdfSha256,
            aead: AeadId::Aes256Gcm,
        };
        let ikm: Vec<u8> = (0..32u8)
            .map(|i| i.wrapping_mul(29) ^ kem.id() as u8)
            .collect();
        let kp = envelope::hpke::derive_key_pair(kem, &ikm).expect("derive");
        let (pk, sk) = (hex::encode(&kp.public), hex::encode(&kp.secret[..]));
        let dk: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(7)).collect();
        for backend in Backend::ALL {
            let what = format!("{kem:?} on {backend}");
            for aad in [&b"header hash"[..], b""] {
                let aad_hex = if aad.is_empty() {
                    "-".to_owned()
                } else {
                    hex::encode(aad)
                };
                // pqbench seals, OpenSSL opens.
                let (enc, mut ctx) = envelope::hpke::setup_base_s(
                    backend,
                    suite,
                    &kp.public,
                    b"pqbench info",
                    Randomness::Rng(&mut rng),
                )
                .expect("setup sender");
                let ct = ctx.seal(aad, &dk).expect("seal");
                let pt = py(&[
                    "hpke-open",
                    &id,
                    &sk,
                    &hex::encode(&enc),
                    &hex::encode(b"pqbench info"),
                    &aad_hex,
                    &hex::encode(&ct),
                ]);
                assert_eq!(unhex(&pt), dk, "{what}: OpenSSL opens pqbench's wrap");
                // OpenSSL seals, pqbench opens.
                let out = py(&[
                    "hpke-seal",
                    &id,
                    &pk,
                    &hex::encode(b"pqbench info"),
                    &aad_hex,
                    &hex::encode(&dk),
                ]);
                let (enc, ct) = out.split_once(' ').expect("ENC CT");
                let key = PrivateKey::new(backend, kem, &kp.secret).expect("key");
                let mut r = envelope::hpke::setup_base_r(suite, &unhex(enc), &key, b"pqbench info")
                    .expect("setup receiver");
                assert_eq!(
                    r.open(aad, &unhex(ct)).expect("open").as_slice(),
                    &dk[..],
                    "{what}: pqbench opens OpenSSL's wrap"
                );
                let mut wrong = envelope::hpke::setup_base_r(suite, &unhex(enc), &key, b"other")
                    .expect("setup receiver");
                assert!(
                    matches!(wrong.open(aad, &unhex(ct)), Err(envelope::Error::Decrypt)),
                    "{what}: another info is refused"
                );
            }
        }
    }
}

/// Format v2 read by `tests/interop/pqreader2.py`, written only from
/// `envelope/FORMAT-v2.md` on OpenSSL and hashlib: every KEM, both backends, both
/// placements (metadata where the header fits), a multi-chunk object and an object with
/// three recipients, each opened with its own key; a flipped chunk byte and another
/// identity are refused.
#[test]
fn python_reader_written_from_format_v2_opens_v2_objects() {
    use base64::Engine as _;
    use envelope::hpke::KemId;
    use envelope::v2::{Placement, To};
    let dir = tempfile::tempdir().expect("tmp");
    let id = envelope::ObjectId::new(
        "tenant-a",
        "bucket",
        "v2/object.bin",
        "01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f",
    )
    .expect("id");
    let read = |sealed: &envelope::v2::Sealed,
                placement: Placement,
                kem: KemId,
                secret: &[u8],
                key: &str| {
        let (h, c) = (dir.path().join("header"), dir.path().join("chunks"));
        match placement {
            Placement::Metadata => {
                let b64 = base64::engine::general_purpose::STANDARD.encode(&sealed.header);
                std::fs::write(&h, b64).expect("write");
                std::fs::write(&c, &sealed.chunks).expect("write");
            }
            Placement::Prefix => {
                std::fs::write(&h, [&sealed.header[..], &sealed.chunks].concat()).expect("write");
            }
        }
        Command::new(python())
            .arg(interop_dir().join("pqreader2.py"))
            .arg(&h)
            .arg(if placement == Placement::Metadata {
                "metadata"
            } else {
                "prefix"
            })
            .arg(&c)
            .args(["tenant-a", "bucket", key, &id.version])
            .arg(format!("{:04x}", kem.id()))
            .arg(hex::encode(secret))
            .output()
            .expect("run pqreader2.py")
    };
    let mut rng = envelope::os_rng();
    let keys: Vec<(KemId, envelope::hpke::KeyPair)> = [
        KemId::X25519,
        KemId::MlKem768,
        KemId::MlKem1024,
        KemId::XWing,
    ]
    .into_iter()
    .map(|k| {
        (
            k,
            envelope::hpke::derive_key_pair(k, &[k.id() as u8; 32]).expect("keys"),
        )
    })
    .collect();
    for (kem, kp) in &keys {
        for backend in Backend::ALL {
            for placement in [Placement::Metadata, Placement::Prefix] {
                if placement == Placement::Metadata && *kem == KemId::MlKem1024 {
                    continue;
                }
                let pt: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
                let to = [To {
                    kem: *kem,
                    public: &kp.public,
                }];
                let s = envelope::v2::seal(backend, &id, &to, false, placement, &pt, &mut rng)
                    .expect("seal");
                let out = read(&s, placement, *kem, &kp.secret, &id.key);
                let what = format!("{kem:?} {backend} {placement:?}");
                assert!(
                    out.status.success(),
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                assert_eq!(
                    unhex(String::from_utf8_lossy(&out.stdout).trim()),
                    pt,
                    "{what}"
                );
                // Refused: a flipped chunk byte, another identity.
                let mut bad = envelope::v2::Sealed {
                    header: s.header.clone(),
                    chunks: s.chunks.clone(),
                };
                bad.chunks[10] ^= 1;
                assert!(
                    !read(&bad, placement, *kem, &kp.secret, &id.key)
                        .status
                        .success(),
                    "{what}"
                );
                assert!(
                    !read(&s, placement, *kem, &kp.secret, "v2/other.bin")
                        .status
                        .success(),
                    "{what}"
                );
            }
        }
    }
    // Three recipients, two chunks: each key opens it.
    let to: Vec<To<'_>> = keys[1..]
        .iter()
        .map(|(k, kp)| To {
            kem: *k,
            public: &kp.public,
        })
        .collect();
    let pt: Vec<u8> = (0..4_194_309u32).map(|i| (i % 253) as u8).collect();
    let s = envelope::v2::seal(
        Backend::AwsLc,
        &id,
        &to,
        false,
        Placement::Prefix,
        &pt,
        &mut rng,
    )
    .expect("seal");
    for (kem, kp) in &keys[1..] {
        let out = read(&s, Placement::Prefix, *kem, &kp.secret, &id.key);
        assert!(
            out.status.success(),
            "{kem:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            unhex(String::from_utf8_lossy(&out.stdout).trim()) == pt,
            "{kem:?}"
        );
    }
}

fn pqbench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .args(args)
        .output()
        .expect("run pqbench")
}

fn pqreader(args: &[&str]) -> std::process::Output {
    Command::new(python())
        .arg(interop_dir().join("pqreader.py"))
        .args(args)
        .output()
        .expect("run pqreader.py")
}

/// Objects sealed by pqbench (both backends, one and two chunks) open in the Python reader
/// written from FORMAT.md; a modified object and a wrong expected mode are refused.
#[test]
fn python_reader_written_from_format_md_opens_pqbench_objects() {
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let small: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let large: Vec<u8> = (0..(4 * 1024 * 1024 + 3) as u32)
        .map(|i| (i % 253) as u8)
        .collect();
    std::fs::write(t.join("small.bin"), &small).expect("write");
    std::fs::write(t.join("large.bin"), &large).expect("write");
    let s3 = t.join("s3");
    let s3s = s3.to_str().expect("utf8");
    for mode in [
        "x25519",
        "ml-kem-768",
        "rsa-oaep-4096",
        "psk",
        "ml-kem-1024",
        "x25519-padded",
        "rsa-oaep-3072",
        "plaintext",
    ] {
        let kdir = t.join(format!("keys-{mode}"));
        let kdirs = kdir.to_str().expect("utf8");
        let mut key_args: Vec<String> = Vec::new();
        let mut read_args: Vec<String> = Vec::new();
        if mode != "plaintext" {
            let o = pqbench(&["keygen", "--mode", mode, "--out", kdirs]);
            assert!(
                o.status.success(),
                "keygen {mode}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            if mode == "psk" {
                let p = kdir.join("psk.key").to_str().expect("utf8").to_owned();
                key_args = vec!["--psk".into(), p.clone()];
                read_args = vec!["--psk".into(), p];
            } else {
                key_args = vec![
                    "--recipient".into(),
                    kdir.join("recipient.pub").to_str().expect("utf8").into(),
                ];
                read_args = vec![
                    "--secret".into(),
                    kdir.join("recipient.key").to_str().expect("utf8").into(),
                ];
            }
        }
        for backend in ["aws-lc", "rustcrypto"] {
            for (name, data) in [("small.bin", &small), ("large.bin", &large)] {
                if name == "large.bin" && backend == "rustcrypto" && mode.starts_with("rsa") {
                    continue; // one large object per mode is enough; keep the test quick
                }
                let key = format!("{mode}/{backend}/{name}");
                let inp = t.join(name);
                let mut args: Vec<&str> = vec![
                    "seal",
                    "--mode",
                    mode,
                    "--backend",
                    backend,
                    "--tenant",
                    "tenant",
                    "--bucket",
                    "bkt",
                    "--key",
                    &key,
                ];
                args.extend(key_args.iter().map(String::as_str));
                args.extend(["--in", inp.to_str().expect("utf8"), "--out", s3s]);
                let o = pqbench(&args);
                assert!(
                    o.status.success(),
                    "seal {mode} {backend}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                let version = String::from_utf8(o.stdout).expect("utf8").trim().to_owned();
                let out = t.join(format!("out-{mode}-{backend}-{name}"));
                let outs = out.to_str().expect("utf8");
                let mut rargs: Vec<&str> = vec![
                    "--expect-mode",
                    mode,
                    "--tenant",
                    "tenant",
                    "--bucket",
                    "bkt",
                    "--key",
                    &key,
                    "--version",
                    &version,
                    "--in",
                    s3s,
                    "--out",
                    outs,
                ];
                rargs.extend(read_args.iter().map(String::as_str));
                let o = pqreader(&rargs);
                assert!(
                    o.status.success(),
                    "pqreader {mode} {backend} {name}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                assert!(
                    std::fs::read(&out).expect("out") == *data,
                    "pqreader {mode} {backend} {name}: plaintext differs"
                );

                if mode != "plaintext" && name == "small.bin" {
                    // Tampered data.enc: refused, no output file.
                    let data_path = s3.join(format!("{key}.pqcs/{version}/data.enc"));
                    let orig = std::fs::read(&data_path).expect("data");
                    let mut bad = orig.clone();
                    bad[orig.len() / 2] ^= 0x10;
                    std::fs::write(&data_path, &bad).expect("write");
                    std::fs::remove_file(&out).expect("rm");
                    let o = pqreader(&rargs);
                    assert!(
                        !o.status.success() && !out.exists(),
                        "pqreader accepted a tampered {mode} object"
                    );
                    std::fs::write(&data_path, &orig).expect("restore");
                    // Wrong expected mode: refused.
                    let wrong = if mode == "x25519" {
                        "ml-kem-768"
                    } else {
                        "x25519"
                    };
                    let mut w = rargs.clone();
                    w[1] = wrong;
                    assert!(
                        !pqreader(&w).status.success(),
                        "pqreader accepted {mode} as {wrong}"
                    );
                }
            }
        }
    }
}

/// FORMAT.md's manifest syntax rules (issue 16 item 7), as two implementations read them:
/// `pqbench open` and the Python reader must both open an empty x25519 object as sealed,
/// and both refuse it with a byte-order mark in front of its manifest, or with its
/// `plaintext_size` of 0 written as `-0`, `0.0` or `0e0` (Python's json module reads `-0`
/// as the integer 0, so the reader has to refuse it on purpose).
#[test]
fn both_readers_refuse_the_same_manifest_syntax() {
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let s = |p: &std::path::Path| p.to_str().expect("utf8").to_owned();
    let keys = t.join("keys");
    assert!(
        pqbench(&["keygen", "--mode", "x25519", "--out", &s(&keys)])
            .status
            .success()
    );
    std::fs::write(t.join("empty"), b"").expect("write");
    let root = t.join("objects");
    let o = pqbench(&[
        "seal",
        "--mode",
        "x25519",
        "--recipient",
        &s(&keys.join("recipient.pub")),
        "--tenant",
        "tn",
        "--bucket",
        "bk",
        "--key",
        "e",
        "--in",
        &s(&t.join("empty")),
        "--out",
        &s(&root),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let version = String::from_utf8(o.stdout).expect("utf8").trim().to_owned();
    let manifest = root.join(format!("e.pqcs/{version}/manifest.json"));
    let sealed = std::fs::read_to_string(&manifest).expect("manifest");
    assert!(sealed.contains("\"plaintext_size\":0,"), "{sealed}");
    let out = t.join("out");
    let secret = s(&keys.join("recipient.key"));
    let common = [
        "--expect-mode",
        "x25519",
        "--tenant",
        "tn",
        "--bucket",
        "bk",
        "--key",
        "e",
        "--version",
        &version,
        "--out",
    ];
    let opens = |edited: &str| {
        std::fs::write(&manifest, edited).expect("write manifest");
        let _ = std::fs::remove_file(&out);
        let mut a: Vec<&str> = vec!["open"];
        a.extend(common);
        let outs = s(&out);
        let roots = s(&root);
        a.extend([outs.as_str(), "--secret", &secret, "--in", roots.as_str()]);
        let by_pqbench = pqbench(&a).status.success();
        let _ = std::fs::remove_file(&out);
        let mut r: Vec<&str> = common.to_vec();
        r.extend([outs.as_str(), "--secret", &secret, "--in", roots.as_str()]);
        let by_python = pqreader(&r).status.success();
        (by_pqbench, by_python)
    };
    assert_eq!(opens(&sealed), (true, true), "the object as sealed");
    let bom = format!("\u{feff}{sealed}");
    let mut cases = vec![("a byte-order mark", bom)];
    for form in ["-0", "0.0", "0e0"] {
        cases.push((
            form,
            sealed.replace(
                "\"plaintext_size\":0,",
                &format!("\"plaintext_size\":{form},"),
            ),
        ));
    }
    for (what, edited) in cases {
        assert_ne!(edited, sealed);
        assert_eq!(
            opens(&edited),
            (false, false),
            "{what}: both must refuse it"
        );
    }
}

/// Objects written to S3 by `pqbench put` (single PUT and multipart) are ordinary S3
/// objects: boto3 lists and downloads `data.enc` and `manifest.json`, and the Python reader
/// written from FORMAT.md opens them.
#[test]
fn boto3_downloads_pqbench_objects_and_the_python_reader_opens_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let server = s3::EmbeddedS3::start(&t.join("s3"), 0).expect("server");
    server.create_bucket("interop").expect("bucket");
    let small: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let large: Vec<u8> = (0..(9 * 1024 * 1024 + 5) as u32)
        .map(|i| (i % 253) as u8)
        .collect();
    std::fs::write(t.join("small.bin"), &small).expect("write");
    std::fs::write(t.join("large.bin"), &large).expect("write");
    let env = [
        ("AWS_ENDPOINT_URL", server.endpoint()),
        ("AWS_ACCESS_KEY_ID", server.access_key()),
        ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
    ];
    let mut written = Vec::new();
    for mode in ["ml-kem-768", "x25519", "psk", "rsa-oaep-3072"] {
        let kdir = t.join(format!("keys-{mode}"));
        let o = pqbench(&[
            "keygen",
            "--mode",
            mode,
            "--out",
            kdir.to_str().expect("utf8"),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let (put_key, get_key) = if mode == "psk" {
            let p = kdir.join("psk.key").to_str().expect("utf8").to_owned();
            (
                vec!["--psk".to_owned(), p.clone()],
                vec!["--psk".to_owned(), p],
            )
        } else {
            (
                vec![
                    "--recipient".to_owned(),
                    kdir.join("recipient.pub").to_str().expect("utf8").into(),
                ],
                vec![
                    "--secret".to_owned(),
                    kdir.join("recipient.key").to_str().expect("utf8").into(),
                ],
            )
        };
        for (name, data) in [("small.bin", &small), ("large.bin", &large)] {
            let key = format!("interop/{mode}/{name}");
            let inp = t.join(name);
            let mut args = vec![
                "put",
                "--tenant",
                "tenant",
                "--bucket",
                "interop",
                "--key",
                &key,
                "--mode",
                mode,
                "--in",
                inp.to_str().expect("utf8"),
            ];
            args.extend(put_key.iter().map(String::as_str));
            let version = put_version(&args, env, &key);
            written.push((mode, key, version, get_key.clone(), data.clone()));
        }
    }

    let root = t.join("downloaded");
    let o = Command::new(python())
        .arg(interop_dir().join("s3_fetch.py"))
        .args([
            "--endpoint",
            server.endpoint(),
            "--bucket",
            "interop",
            "--prefix",
            "interop/",
        ])
        .arg("--out")
        .arg(&root)
        .envs(env)
        .output()
        .expect("run s3_fetch.py (needs boto3: pip install -r tests/interop/requirements.txt)");
    assert!(
        o.status.success(),
        "boto3: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let listed: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("s3_fetch.py prints JSON");
    assert_eq!(
        listed["keys"].as_array().expect("keys").len(),
        written.len() * 2,
        "boto3 lists data.enc and manifest.json of every version: {listed}"
    );

    for (mode, key, version, get_key, data) in &written {
        let out = t.join(format!("plain-{}", key.replace('/', "_")));
        let mut args: Vec<&str> = vec![
            "--expect-mode",
            mode,
            "--tenant",
            "tenant",
            "--bucket",
            "interop",
            "--key",
            key,
            "--version",
            version,
            "--in",
            root.to_str().expect("utf8"),
            "--out",
            out.to_str().expect("utf8"),
        ];
        args.extend(get_key.iter().map(String::as_str));
        let o = pqreader(&args);
        assert!(
            o.status.success(),
            "pqreader {key}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            std::fs::read(&out).expect("output") == *data,
            "{key}: plaintext differs"
        );
    }
}

/// Runs `pqbench put` with `args` and `env` (the S3 settings) and returns the version it
/// printed; a failure fails the test, naming `what`.
fn put_version(args: &[&str], env: [(&str, &str); 3], what: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .args(args)
        .envs(env)
        .output()
        .expect("pqbench put");
    assert!(
        o.status.success(),
        "put {what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .next()
        .expect("version line")
        .trim()
        .to_owned()
}

/// The golden v2 and v2.1 objects (`envelope/tests/golden/v2-*.json`, `v2.1-*.json`, the
/// re-wrapped one included) open in the Python reader
/// written from FORMAT-v2.md, in their placement, to the plaintext they record.
#[test]
fn python_v2_reader_opens_the_golden_v2_and_v2_1_objects() {
    let dir = tempfile::tempdir().expect("tmp");
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("envelope/tests/golden");
    let mut seen = 0;
    for e in std::fs::read_dir(&golden).expect("golden dir") {
        let p = e.expect("entry").path();
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        // v2 and v2.1 (FORMAT-v2.md §10), the re-wrapped one included.
        if !name.starts_with("v2-") && !name.starts_with("v2.1-") {
            continue;
        }
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
        let f = |k: &str| doc[k].as_str().expect(k).to_owned();
        let (header, chunks) = (dir.path().join("header"), dir.path().join("chunks"));
        let placement = f("placement");
        let body = [unhex(&f("header_hex")), unhex(&f("chunks_hex"))].concat();
        if placement == "metadata" {
            std::fs::write(&header, f("metadata_entry")).expect("write");
            std::fs::write(&chunks, unhex(&f("chunks_hex"))).expect("write");
        } else {
            std::fs::write(&header, &body).expect("write");
        }
        let o = Command::new(python())
            .arg(interop_dir().join("pqreader2.py"))
            .arg(&header)
            .arg(&placement)
            .arg(&chunks)
            .args([f("tenant"), f("bucket"), f("key"), f("version")])
            .args([f("kem_id"), f("secret_key_hex")])
            .output()
            .expect("run pqreader2.py");
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&o.stdout).trim(),
            f("plaintext_hex"),
            "{name}"
        );
        seen += 1;
    }
    assert_eq!(seen, 15, "every golden v2 and v2.1 object");
}

/// Format v2 objects written to S3 by `pqbench put --format v2` (header in metadata and as
/// a prefix; one PutObject and a multipart upload) are ordinary S3 objects: boto3 lists and
/// downloads each `object.v2` with its `pqbench-v2` metadata entry, and the Python reader
/// written from FORMAT-v2.md opens them with each recipient's key.
#[test]
fn boto3_downloads_v2_objects_and_the_python_v2_reader_opens_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let server = s3::EmbeddedS3::start(&t.join("s3"), 0).expect("server");
    server.create_bucket("interop").expect("bucket");
    let small: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let large: Vec<u8> = (0..(9 * 1024 * 1024 + 5) as u32)
        .map(|i| (i % 253) as u8)
        .collect();
    std::fs::write(t.join("small.bin"), &small).expect("write");
    std::fs::write(t.join("large.bin"), &large).expect("write");
    let env = [
        ("AWS_ENDPOINT_URL", server.endpoint()),
        ("AWS_ACCESS_KEY_ID", server.access_key()),
        ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
    ];
    let path = |p: &std::path::Path| p.to_str().expect("utf8").to_owned();
    let mut recipients = Vec::new();
    for mode in ["ml-kem-768", "x-wing"] {
        let kdir = t.join(format!("keys-{mode}"));
        let o = pqbench(&["keygen", "--mode", mode, "--out", &path(&kdir)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let sk = envelope::SecretKey::read_file(&kdir.join("recipient.key")).expect("key");
        let kem = envelope::v2::kem_of(sk.key_type()).expect("v2 kem");
        recipients.push((
            path(&kdir.join("recipient.pub")),
            format!("{:04x}", kem.id()),
            hex::encode(sk.expose_secret()),
        ));
    }
    // (key, header placement, recipients used, plaintext)
    let mut written = Vec::new();
    for (header, n) in [("metadata", 1), ("prefix", 2)] {
        for (name, data) in [("small.bin", &small), ("large.bin", &large)] {
            let key = format!("interop/{header}/{name}");
            let mut args = vec!["put", "--format", "v2", "--header", header];
            args.extend(["--tenant", "tenant", "--bucket", "interop", "--key", &key]);
            let inp = path(&t.join(name));
            args.extend(["--in", &inp]);
            for r in &recipients[..n] {
                args.extend(["--recipient", &r.0]);
            }
            let version = put_version(&args, env, &key);
            written.push((key, version, header, n, data.clone()));
        }
    }

    let root = t.join("downloaded");
    let o = Command::new(python())
        .arg(interop_dir().join("s3_fetch.py"))
        .args(["--endpoint", server.endpoint(), "--bucket", "interop"])
        .args(["--prefix", "interop/", "--out", &path(&root)])
        .envs(env)
        .output()
        .expect("run s3_fetch.py (needs boto3: pip install -r tests/interop/requirements.txt)");
    assert!(
        o.status.success(),
        "boto3: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let listed: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("s3_fetch.py prints JSON");
    assert_eq!(
        listed["keys"].as_array().expect("keys").len(),
        written.len(),
        "one object per version: {listed}"
    );
    for (key, version, header, n, data) in &written {
        let object = root.join(format!("{key}.pqcs/{version}/object.v2"));
        let meta = object.with_extension("v2.meta");
        assert_eq!(
            meta.exists(),
            *header == "metadata",
            "{key}: the metadata entry"
        );
        let header_file = if *header == "metadata" {
            &meta
        } else {
            &object
        };
        for (_, kem, secret) in &recipients[..*n] {
            let o = Command::new(python())
                .arg(interop_dir().join("pqreader2.py"))
                .arg(header_file)
                .arg(header)
                .arg(&object)
                .args(["tenant", "interop", key, version, kem, secret])
                .output()
                .expect("run pqreader2.py");
            assert!(
                o.status.success(),
                "pqreader2 {key} with {kem}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert!(
                unhex(String::from_utf8_lossy(&o.stdout).trim()) == **data,
                "{key} with {kem}: plaintext differs"
            );
        }
    }
}

/// A run's records and samples open in three independent Parquet readers (pyarrow, polars,
/// DuckDB) with the documented columns and types, and they count what the summary counts.
#[test]
fn run_records_open_in_pyarrow_polars_and_duckdb() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("results");
    let o = pqbench(&[
        "run-one",
        "--mode",
        "x25519",
        "--op",
        "put",
        "--size",
        "4KiB",
        "--concurrency",
        "2",
        "--warmup",
        "1s",
        "--measured",
        "2s",
        "--run-id",
        "interop",
        "--json",
        "--out",
        out.to_str().expect("utf8"),
    ]);
    // Exit 1 means an invalid run (this shared machine may fail the unaccounted-time checks);
    // the summary is printed and the files are kept either way.
    assert!(
        o.status.success() || o.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).expect("summary JSON");
    let p0 = out.join("interop/p0");
    let r = Command::new(python())
        .arg(interop_dir().join("read_records.py"))
        .arg(&p0)
        .output()
        .expect("run read_records.py");
    assert!(
        r.status.success(),
        "read_records.py failed (pip install -r tests/interop/requirements.txt): {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&r.stdout).expect("reader JSON");
    let counts = &summary["counts"];
    assert_eq!(seen["by_phase"]["warmup"], counts["warmup"]);
    assert_eq!(seen["by_phase"]["measured"], counts["measured"]);
    assert_eq!(seen["ok_measured_polars"], counts["ok"]);
    assert_eq!(seen["ok_measured_duckdb"], counts["ok"]);
    let mean = seen["mean_total_ms"].as_f64().expect("mean");
    let want = summary["latencyMs"]["mean"].as_f64().expect("summary mean");
    assert!(
        (mean - want).abs() < 1e-6 * want.max(1.0),
        "{mean} vs {want}"
    );
    assert!(seen["first_start_year"].as_i64().expect("year") >= 2026);
    assert!(seen["sample_rows"].as_i64().expect("samples") >= 3);
    assert_eq!(seen["sample_time_type"], "timestamp[ns, tz=UTC]");
}

/// FORMAT-v2.md §4 "Errors", held by both readers: `pqbench open --format v2` (a process)
/// and the Python reader written from the text refuse each tampered object in the same
/// class: a structure check (public bytes) names itself, in the binary as "object header
/// rejected: <check>", in Python as "refused: header: ..."; the identity, the reader's
/// entry, the unwrap, the commitment, the body's length and the chunks are one opaque
/// error, the binary's message the same for every such case.
#[test]
fn both_v2_readers_fail_each_check_in_the_class_section_4_gives_it() {
    use base64::Engine as _;
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let s = |p: &std::path::Path| p.to_str().expect("utf8").to_owned();
    let (keys, other) = (t.join("keys"), t.join("other"));
    for k in [&keys, &other] {
        let o = pqbench(&["keygen", "--mode", "ml-kem-768", "--out", &s(k)]);
        assert!(o.status.success(), "keygen");
    }
    let input = t.join("in.bin");
    std::fs::write(&input, vec![7u8; 5000]).expect("write");
    let root = t.join("objects");
    let o = pqbench(&[
        "seal",
        "--format",
        "v2",
        "--tenant",
        "tn",
        "--bucket",
        "bk",
        "--key",
        "doc",
        "--in",
        &s(&input),
        "--out",
        &s(&root),
        "--recipient",
        &s(&keys.join("recipient.pub")),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let version = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let good = std::fs::read(root.join(format!("doc.pqcs/{version}/object.v2"))).expect("object");
    let hlen = u32::from_be_bytes(good[4..8].try_into().expect("len")) as usize;
    let secret_hex = |dir: &std::path::Path| {
        let f: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("recipient.key")).expect("key"))
                .expect("json");
        hex::encode(
            base64::engine::general_purpose::STANDARD
                .decode(f["key"].as_str().expect("key"))
                .expect("b64"),
        )
    };
    // Both readers on `bytes` as the object, asked for `key` with the secret in `dir`.
    let read = |bytes: &[u8], key: &str, dir: &std::path::Path| {
        let obj = root.join(format!("{key}.pqcs/{version}/object.v2"));
        std::fs::create_dir_all(obj.parent().expect("dir")).expect("mkdir");
        std::fs::write(&obj, bytes).expect("write");
        let out = t.join("out.bin");
        let bin = pqbench(&[
            "open",
            "--format",
            "v2",
            "--tenant",
            "tn",
            "--bucket",
            "bk",
            "--key",
            key,
            "--version",
            &version,
            "--in",
            &s(&root),
            "--out",
            &s(&out),
            "--secret",
            &s(&dir.join("recipient.key")),
        ]);
        assert!(
            !bin.status.success() && !out.exists(),
            "the binary accepted it"
        );
        let py = Command::new(python())
            .arg(interop_dir().join("pqreader2.py"))
            .arg(&obj)
            .args(["prefix", "-", "tn", "bk", key, &version, "0041"])
            .arg(secret_hex(dir))
            .output()
            .expect("run pqreader2.py");
        assert!(!py.status.success(), "the Python reader accepted it");
        (
            String::from_utf8_lossy(&bin.stderr).into_owned(),
            String::from_utf8_lossy(&py.stderr).trim().to_owned(),
        )
    };
    let edit = |at: usize, with: &[u8]| {
        let mut b = good.clone();
        b[at..at + with.len()].copy_from_slice(with);
        b
    };
    let flip = |at: usize| edit(at, &[good[at] ^ 1]);
    for (what, bytes, needle) in [
        ("magic", edit(0, b"PQB3"), "magic is not PQB2"),
        // 3 is a v2.1 header (§10.1), read by both: 4 is no version.
        ("version", edit(8, &[4]), "version is not 2"),
        (
            "reserved flags",
            edit(9, &[good[9] | 0b100]),
            "reserved flag bits are set",
        ),
        ("suite", edit(10, &[0, 2]), "kdf_id/aead_id are not"),
        (
            "chunk_size",
            edit(54, &[0, 0x10, 0, 0]),
            "chunk_size is not 4194304",
        ),
        (
            "recipient_count",
            edit(90, &[0]),
            "recipient_count is not 1..16",
        ),
        (
            "kem_id",
            edit(91, &[0x12, 0x34]),
            "recipient 0: unknown kem_id",
        ),
        (
            "mixed flag",
            edit(9, &[good[9] | 1]),
            "the mixed-strength flag does not match",
        ),
    ] {
        let (bin, py) = read(&bytes, "doc", &keys);
        assert!(
            bin.contains(&format!("object header rejected: {needle}")),
            "{what}: {bin}"
        );
        assert!(py.starts_with("refused: header: "), "{what}: {py}");
    }
    let opaque =
        "decryption failed: the object is corrupt, was tampered with, or is not for this key";
    let mut longer = good.clone();
    longer.push(0);
    let mut messages = std::collections::BTreeSet::new();
    for (what, bytes, key, dir) in [
        ("another identity", good.clone(), "other-doc", &keys),
        ("not a recipient", good.clone(), "doc", &other),
        ("enc", flip(91 + 36), "doc", &keys),
        ("wrapped", flip(hlen - 1), "doc", &keys),
        ("commitment", flip(58), "doc", &keys),
        ("chunk", flip(hlen + 10), "doc", &keys),
        ("truncated", good[..good.len() - 1].to_vec(), "doc", &keys),
        ("extended", longer.clone(), "doc", &keys),
    ] {
        let (bin, py) = read(&bytes, key, dir);
        assert!(
            bin.contains(opaque) && !bin.contains("header rejected"),
            "{what}: {bin}"
        );
        assert_eq!(py, "refused: decryption failed", "{what}");
        // The same message but for the object's path, which names the key asked for.
        messages.insert(bin.replace(key, "KEY"));
    }
    assert_eq!(
        messages.len(),
        1,
        "one message for every opaque failure: {messages:?}"
    );
}

/// The Python v2 reader holds the metadata readings FORMAT-v2.md pins, as the binary does
/// (`envelope/tests/v2.rs`): a header above 1,527 bytes in metadata, and an entry that is
/// not canonical base64, are header refusals.
#[test]
fn the_python_v2_reader_refuses_oversized_and_non_canonical_metadata() {
    use envelope::hpke::KemId;
    use envelope::v2::{Placement, To};
    let dir = tempfile::tempdir().expect("tmp");
    let id =
        envelope::ObjectId::new("t", "b", "k", "01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f").expect("id");
    let kp = envelope::hpke::derive_key_pair(KemId::MlKem1024, &[9; 32]).expect("keys");
    let to = [To {
        kem: KemId::MlKem1024,
        public: &kp.public,
    }];
    let s = envelope::v2::seal(
        Backend::AwsLc,
        &id,
        &to,
        false,
        Placement::Prefix,
        b"x",
        &mut envelope::os_rng(),
    )
    .expect("seal");
    let mut big = s.header.clone();
    big[9] &= !0b10; // said to be in metadata
    let (h, c) = (dir.path().join("header"), dir.path().join("chunks"));
    std::fs::write(&c, &s.chunks).expect("write");
    let read = |entry: &str| {
        std::fs::write(&h, entry).expect("write");
        let o = Command::new(python())
            .arg(interop_dir().join("pqreader2.py"))
            .arg(&h)
            .arg("metadata")
            .arg(&c)
            .args(["t", "b", "k", &id.version, "0042"])
            .arg(hex::encode(&kp.secret))
            .output()
            .expect("run pqreader2.py");
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).trim().to_owned()
    };
    let entry = envelope::v2::encode_metadata(&big);
    assert_eq!(
        read(&entry),
        "refused: header: header in metadata above 1527 bytes"
    );
    assert_eq!(
        read(&format!(" {entry}")),
        "refused: header: metadata entry is not base64"
    );
    let mut bent = entry.into_bytes();
    let last = bent.iter().rposition(|&c| c != b'=').expect("a character");
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let at = alphabet
        .iter()
        .position(|&c| c == bent[last])
        .expect("base64");
    bent[last] = alphabet[at ^ 1];
    assert_eq!(
        read(&String::from_utf8(bent).expect("utf8")),
        "refused: header: metadata entry is not canonical base64"
    );
}

/// FORMAT-v2.md §10.1 (v2.1, re-wrappable headers) held by the Python reader written from the
/// text: `pqbench seal --format v2 --rewrappable` writes v2.1 objects (placement prefix, the
/// only one a local directory has, §2) for every KEM of §3, one of them two chunks long, and
/// `pqbench put --format v2 --rewrappable --header metadata` writes them in placement
/// metadata for the KEMs whose header fits (§8: not ML-KEM-1024), downloaded with boto3;
/// `pqreader2.py` opens each to its plaintext. Each header is `version = 3` and
/// `123 + Σ (86 + Nenc)` bytes long. Refused by both readers with the opaque error: a
/// flipped `origin_hash` byte, and in a two-recipient object a flipped `enc` byte of one
/// entry, for **both** recipients (the wrap AAD's `recipients_hash` covers every entry);
/// a damaged `wrapped_0` fails recipient 0 alone (§10.2).
#[test]
fn python_v2_reader_opens_v2_1_objects_pqbench_wrote_and_both_refuse_tampered_ones() {
    use base64::Engine as _;
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let s = |p: &std::path::Path| p.to_str().expect("utf8").to_owned();
    // §3: (pqbench mode, kem_id, Nenc).
    let kems = [
        ("x25519", "0020", 32usize),
        ("ml-kem-768", "0041", 1088),
        ("ml-kem-1024", "0042", 1568),
        ("x-wing", "647a", 1120),
    ];
    let secret_hex = |dir: &std::path::Path| {
        let sk = envelope::SecretKey::read_file(&dir.join("recipient.key")).expect("key");
        hex::encode(sk.expose_secret())
    };
    for (mode, _, _) in kems {
        let o = pqbench(&["keygen", "--mode", mode, "--out", &s(&t.join(mode))]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let pyread = |header_file: &std::path::Path,
                  placement: &str,
                  chunks_file: &std::path::Path,
                  key: &str,
                  version: &str,
                  mode: &str| {
        let kem = kems.iter().find(|k| k.0 == mode).expect("kem").1;
        Command::new(python())
            .arg(interop_dir().join("pqreader2.py"))
            .arg(header_file)
            .arg(placement)
            .arg(chunks_file)
            .args(["tn", "bk-v21", key, version, kem])
            .arg(secret_hex(&t.join(mode)))
            .output()
            .expect("run pqreader2.py")
    };
    // §10.1: version 3, and the header 32 bytes longer than v2's `91 + Σ (86 + Nenc)`.
    let check_header = |header: &[u8], nencs: &[usize], what: &str| {
        let expect = 123 + nencs.iter().map(|n| 86 + n).sum::<usize>();
        assert_eq!(header[8], 3, "{what}: version");
        assert_eq!(
            u32::from_be_bytes(header[4..8].try_into().expect("len")) as usize,
            expect,
            "{what}: header_len"
        );
        assert_eq!(header.len(), expect, "{what}: header length");
        assert_eq!(header[122], nencs.len() as u8, "{what}: recipient_count");
    };

    // Placement prefix, `pqbench seal`, every KEM; ML-KEM-768's object spans two chunks.
    let small: Vec<u8> = (0..5000u32).map(|i| (i * 13 % 251) as u8).collect();
    let large: Vec<u8> = (0..4_194_304 + 77u32).map(|i| (i % 253) as u8).collect();
    let root = t.join("objects");
    let seal = |key: &str, data: &[u8], to: &[&str], extra: &[&str]| {
        let input = t.join("in.bin");
        std::fs::write(&input, data).expect("write");
        let mut args = vec!["seal", "--format", "v2", "--rewrappable"];
        args.extend_from_slice(extra);
        let (inp, out) = (s(&input), s(&root));
        args.extend(["--tenant", "tn", "--bucket", "bk-v21", "--key", key]);
        args.extend(["--in", &inp, "--out", &out]);
        let pubs: Vec<String> = to
            .iter()
            .map(|m| s(&t.join(m).join("recipient.pub")))
            .collect();
        for p in &pubs {
            args.extend(["--recipient", p]);
        }
        pqbench(&args)
    };
    let object = |key: &str, version: &str| root.join(format!("{key}.pqcs/{version}/object.v2"));
    for (mode, _, nenc) in kems {
        let data = if mode == "ml-kem-768" { &large } else { &small };
        let key = format!("v21/{mode}");
        let o = seal(&key, data, &[mode], &[]);
        assert!(
            o.status.success(),
            "seal {mode}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let version = String::from_utf8_lossy(&o.stdout).trim().to_owned();
        let obj = object(&key, &version);
        let body = std::fs::read(&obj).expect("object");
        let hlen = u32::from_be_bytes(body[4..8].try_into().expect("len")) as usize;
        check_header(&body[..hlen], &[nenc], mode);
        assert_eq!(body[9], 0b10, "{mode}: flags say placement prefix");
        assert_eq!(
            body[14..46],
            body[46..78],
            "{mode}: a new object's origin_hash is its identity_hash"
        );
        let n = data.len().div_ceil(4_194_304).max(1);
        assert_eq!(body.len(), hlen + data.len() + 16 * n, "{mode}: §4 check 6");
        let out = pyread(&obj, "prefix", Path::new("-"), &key, &version, mode);
        assert!(
            out.status.success(),
            "pqreader2 {mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            unhex(String::from_utf8_lossy(&out.stdout).trim()) == *data,
            "pqreader2 {mode}: plaintext differs"
        );
    }
    // A local directory has no metadata (§2): seal refuses placement metadata.
    let o = seal("v21/meta", &small, &["x25519"], &["--header", "metadata"]);
    assert!(!o.status.success(), "seal --header metadata is refused");

    // Placement metadata, `pqbench put` to S3, every KEM whose v2.1 header fits in 1,527
    // bytes; downloaded with boto3 (the entry's value as S3 returns it).
    let server = s3::EmbeddedS3::start(&t.join("s3"), 0).expect("server");
    server.create_bucket("bk-v21").expect("bucket");
    let env = [
        ("AWS_ENDPOINT_URL", server.endpoint()),
        ("AWS_ACCESS_KEY_ID", server.access_key()),
        ("AWS_SECRET_ACCESS_KEY", server.secret_key()),
    ];
    std::fs::write(t.join("small.bin"), &small).expect("write");
    let mut put = Vec::new();
    for (mode, _, nenc) in kems {
        if mode == "ml-kem-1024" {
            continue;
        }
        let key = format!("meta/{mode}");
        let (inp, recipient) = (t.join("small.bin"), t.join(mode).join("recipient.pub"));
        let version = put_version(
            &[
                "put",
                "--format",
                "v2",
                "--rewrappable",
                "--header",
                "metadata",
                "--tenant",
                "tn",
                "--bucket",
                "bk-v21",
                "--key",
                &key,
                "--in",
                &s(&inp),
                "--recipient",
                &s(&recipient),
            ],
            env,
            &key,
        );
        put.push((mode, nenc, key, version));
    }
    let fetched = t.join("fetched");
    let o = Command::new(python())
        .arg(interop_dir().join("s3_fetch.py"))
        .args(["--endpoint", server.endpoint(), "--bucket", "bk-v21"])
        .args(["--prefix", "meta/", "--out", &s(&fetched)])
        .envs(env)
        .output()
        .expect("run s3_fetch.py");
    assert!(
        o.status.success(),
        "boto3: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    for (mode, nenc, key, version) in &put {
        let obj = fetched.join(format!("{key}.pqcs/{version}/object.v2"));
        let meta = obj.with_extension("v2.meta");
        let entry = std::fs::read_to_string(&meta).expect("the pqbench-v2 entry");
        let header = base64::engine::general_purpose::STANDARD
            .decode(&entry)
            .expect("base64");
        check_header(&header, &[*nenc], mode);
        assert_eq!(header[9], 0, "{mode}: flags say placement metadata");
        assert_eq!(
            std::fs::metadata(&obj).expect("object").len() as usize,
            small.len() + 16,
            "{mode}: the body is the chunks alone"
        );
        let out = pyread(&meta, "metadata", &obj, key, version, mode);
        assert!(
            out.status.success(),
            "pqreader2 {mode} in metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            unhex(String::from_utf8_lossy(&out.stdout).trim()) == small,
            "pqreader2 {mode} in metadata: plaintext differs"
        );
    }

    // Tampering: a two-recipient v2.1 object (ML-KEM-768, then X-Wing: one strength).
    let o = seal("v21/two", &small, &["ml-kem-768", "x-wing"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let version = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let obj = object("v21/two", &version);
    let good = std::fs::read(&obj).expect("object");
    check_header(
        &good[..123 + 2 * 86 + 1088 + 1120],
        &[1088, 1120],
        "two recipients",
    );
    let hlen = 123 + 2 * 86 + 1088 + 1120;
    // Both readers on `bytes` as the object, with `mode`'s key: (binary, Python) results.
    let read = |bytes: &[u8], mode: &str| {
        std::fs::write(&obj, bytes).expect("write");
        let out = t.join("out.bin");
        let _ = std::fs::remove_file(&out);
        let bin = pqbench(&[
            "open",
            "--format",
            "v2",
            "--tenant",
            "tn",
            "--bucket",
            "bk-v21",
            "--key",
            "v21/two",
            "--version",
            &version,
            "--in",
            &s(&root),
            "--out",
            &s(&out),
            "--secret",
            &s(&t.join(mode).join("recipient.key")),
        ]);
        let opened = std::fs::read(&out).ok();
        let py = pyread(&obj, "prefix", Path::new("-"), "v21/two", &version, mode);
        (bin, opened, py)
    };
    let opaque =
        "decryption failed: the object is corrupt, was tampered with, or is not for this key";
    let refused = |bytes: &[u8], mode: &str, what: &str| {
        let (bin, opened, py) = read(bytes, mode);
        let (bin_err, py_err) = (
            String::from_utf8_lossy(&bin.stderr),
            String::from_utf8_lossy(&py.stderr),
        );
        assert!(
            !bin.status.success() && opened.is_none(),
            "{what}, {mode}: pqbench accepted it"
        );
        assert!(
            bin_err.contains(opaque) && !bin_err.contains("header rejected"),
            "{what}, {mode}: pqbench: {bin_err}"
        );
        assert!(
            !py.status.success(),
            "{what}, {mode}: pqreader2 accepted it"
        );
        assert_eq!(
            py_err.trim(),
            "refused: decryption failed",
            "{what}, {mode}: pqreader2"
        );
    };
    let opens = |bytes: &[u8], mode: &str, what: &str| {
        let (bin, opened, py) = read(bytes, mode);
        assert!(
            bin.status.success() && opened.as_deref() == Some(&small[..]),
            "{what}, {mode}: pqbench: {}",
            String::from_utf8_lossy(&bin.stderr)
        );
        assert!(
            py.status.success() && unhex(String::from_utf8_lossy(&py.stdout).trim()) == small,
            "{what}, {mode}: pqreader2: {}",
            String::from_utf8_lossy(&py.stderr)
        );
    };
    let flip = |at: usize| {
        let mut b = good.clone();
        b[at] ^= 1;
        b
    };
    // Offsets (§4 with §10.1): identity_hash 14..46, origin_hash 46..78, fixed part 123
    // bytes; entry 0 at 123: kem_id, key_id, enc_len, then enc at 123 + 36; its wrapped
    // field at 123 + 36 + 1088 + 2.
    let enc0 = 123 + 36;
    let wrapped0 = enc0 + 1088 + 2;
    for mode in ["ml-kem-768", "x-wing"] {
        opens(&good, mode, "unmodified");
        refused(&flip(46 + 7), mode, "origin_hash");
        refused(&flip(enc0 + 5), mode, "entry 0's enc");
        refused(&flip(hlen + 3), mode, "a chunk");
    }
    refused(&flip(wrapped0 + 4), "ml-kem-768", "entry 0's wrapped");
    opens(&flip(wrapped0 + 4), "x-wing", "entry 0's wrapped");
}
