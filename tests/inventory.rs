//! `pqbench inventory` as a user runs it, against the embedded S3 server and Garage over
//! HTTP: a bucket of mixed v1 and v2, classical, mixed, post-quantum, symmetric and
//! plaintext versions (written by `pqbench put` processes), another tool's object and a
//! damaged one, is inventoried exactly (checked against the test's own listing and key
//! files), without reading any payload (docs/src/envelope/migration.md).

#[path = "../s3/tests/support/servers.rs"]
#[allow(
    dead_code,
    reason = "the inventory test uses part of the servers' interface"
)]
mod servers;

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{ok, s};
use serde_json::Value;
use servers::{BUCKET, Kind, TestServer};

/// `pqbench` as a process against `server`, its credentials in the environment.
fn pqbench(server: &TestServer, args: &[&str]) -> std::process::Output {
    let st = server.settings();
    Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .env("AWS_ENDPOINT_URL", &st.endpoint)
        .env("AWS_ACCESS_KEY_ID", &st.access_key)
        .env("AWS_SECRET_ACCESS_KEY", st.secret_key.as_str())
        .env("AWS_REGION", &st.region)
        .args(args)
        .output()
        .expect("run pqbench")
}

/// What the test put: key → (format, class, KEMs, plaintext bytes), per version in order.
struct Put<'a> {
    key: &'a str,
    args: Vec<String>,
    class: &'a str,
    kems: &'a str,
    size: u64,
}

fn key_id(dir: &Path, mode: &str) -> String {
    let p = dir.join(mode).join("recipient.pub");
    envelope::PublicKey::read_file(&p)
        .expect("public key")
        .key_id_hex()
}

fn inventory_is_exact(kind: Kind) {
    let server = TestServer::start(kind);
    let tmp = tempfile::tempdir().expect("tmp");
    let keys = tmp.path().join("keys");
    for (dir, mode) in [
        ("x25519", "x25519"),
        ("ml-kem-768", "ml-kem-768"),
        ("ml-kem-1024", "ml-kem-1024"),
        ("ml-kem-1024-b", "ml-kem-1024"),
        ("ml-kem-1024-c", "ml-kem-1024"),
        ("psk", "psk"),
        ("rsa-oaep-3072", "rsa-oaep-3072"),
    ] {
        let out = keys.join(dir);
        ok(
            &pqbench(&server, &["keygen", "--mode", mode, "--out", s(&out)]),
            "keygen",
        );
    }
    let small = tmp.path().join("small");
    let large = tmp.path().join("large");
    std::fs::write(&small, vec![7u8; 5_000]).expect("small");
    std::fs::write(&large, vec![9u8; 3_000_000]).expect("large");
    let pk = |m: &str| s(&keys.join(m).join("recipient.pub")).to_owned();
    let v = |a: &[&str]| a.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let puts = vec![
        Put {
            key: "a/x",
            args: v(&["--mode", "x25519", "--recipient", &pk("x25519")]),
            class: "classical",
            kems: "x25519",
            size: 5_000,
        },
        // The same key again, post-quantum: the x25519 version stays, no longer latest.
        Put {
            key: "a/x",
            args: v(&["--format", "v2", "--recipient", &pk("ml-kem-768")]),
            class: "post-quantum",
            kems: "ml-kem-768",
            size: 5_000,
        },
        Put {
            key: "a/m",
            args: v(&["--mode", "ml-kem-768", "--recipient", &pk("ml-kem-768")]),
            class: "post-quantum",
            kems: "ml-kem-768",
            size: 3_000_000,
        },
        Put {
            key: "a/v2x",
            args: v(&["--format", "v2", "--recipient", &pk("x25519")]),
            class: "classical",
            kems: "x25519",
            size: 3_000_000,
        },
        // A v2.1 header (FORMAT-v2.md §10): re-wrappable.
        Put {
            key: "a/v21",
            args: v(&[
                "--format",
                "v2",
                "--rewrappable",
                "--recipient",
                &pk("x25519"),
            ]),
            class: "classical",
            kems: "x25519",
            size: 5_000,
        },
        Put {
            key: "a/mixed",
            args: v(&[
                "--format",
                "v2",
                "--allow-mixed",
                "--recipient",
                &pk("x25519"),
                "--recipient",
                &pk("ml-kem-768"),
            ]),
            class: "mixed",
            kems: "x25519+ml-kem-768",
            size: 5_000,
        },
        Put {
            key: "a/prefix",
            args: v(&[
                "--format",
                "v2",
                "--header",
                "prefix",
                "--recipient",
                &pk("ml-kem-1024"),
            ]),
            class: "post-quantum",
            kems: "ml-kem-1024",
            size: 5_000,
        },
        // A header of 5,053 bytes at the body's start: longer than the first range read.
        Put {
            key: "a/three",
            args: v(&[
                "--format",
                "v2",
                "--header",
                "prefix",
                "--recipient",
                &pk("ml-kem-1024"),
                "--recipient",
                &pk("ml-kem-1024-b"),
                "--recipient",
                &pk("ml-kem-1024-c"),
            ]),
            class: "post-quantum",
            kems: "ml-kem-1024+ml-kem-1024+ml-kem-1024",
            size: 3_000_000,
        },
        Put {
            key: "a/psk",
            args: v(&[
                "--mode",
                "psk",
                "--psk",
                s(&keys.join("psk").join("psk.key")),
            ]),
            class: "symmetric",
            kems: "psk",
            size: 5_000,
        },
        Put {
            key: "a/rsa",
            args: v(&[
                "--mode",
                "rsa-oaep-3072",
                "--recipient",
                &pk("rsa-oaep-3072"),
            ]),
            class: "classical",
            kems: "rsa-3072",
            size: 5_000,
        },
        Put {
            key: "a/plain",
            args: v(&["--mode", "plaintext"]),
            class: "plaintext",
            kems: "none",
            size: 5_000,
        },
    ];
    for p in &puts {
        let input = if p.size == 5_000 { &small } else { &large };
        let mut args = vec!["put", "--bucket", BUCKET, "--key", p.key, "--in", s(input)];
        args.extend(p.args.iter().map(String::as_str));
        ok(&pqbench(&server, &args), &format!("put {}", p.key));
    }
    // Another tool's object, and a v2 version whose object is not a v2 object.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let objects = server.store().objects().clone();
    rt.block_on(async {
        objects
            .put_object(BUCKET, "a/notes.txt", vec![1u8; 1234].into(), None, &[])
            .await
            .expect("foreign object");
        objects
            .put_object(
                BUCKET,
                "a/broken.pqcs/019a0000-0000-7000-8000-000000000000/object.v2",
                b"PQB2 is not enough".to_vec().into(),
                None,
                &[],
            )
            .await
            .expect("broken object");
    });
    // The test's own listing: stored bytes per key and version.
    let listed: BTreeMap<String, u64> = rt.block_on(async {
        let mut m = BTreeMap::new();
        let mut token = None;
        loop {
            let page = objects.list_objects(BUCKET, "", token).await.expect("list");
            for o in page.objects {
                m.insert(o.key, o.size);
            }
            match page.next {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        m
    });

    let out = tmp.path().join("inventory");
    let client = if kind == Kind::Embedded {
        "lean"
    } else {
        "aws-sdk"
    };
    let json = ok(
        &pqbench(
            &server,
            &[
                "inventory",
                "--bucket",
                BUCKET,
                "--prefix",
                "a/",
                "--s3-client",
                client,
                "--json",
                "--out",
                s(&out),
            ],
        ),
        "inventory",
    );
    let inv: Value = serde_json::from_str(&json).expect("inventory JSON");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("inventory.json")).expect("file"))
            .expect("file JSON");
    assert_eq!(inv, file, "--json and inventory.json differ");
    let svg = std::fs::read_to_string(out.join("inventory.svg")).expect("inventory.svg");
    assert!(
        svg.starts_with("<svg") && svg.contains("classical"),
        "{svg}"
    );

    // Every version, exactly: class, KEMs, plaintext size, latest, stored bytes.
    let rows = inv["versions"].as_array().expect("versions");
    assert_eq!(rows.len(), puts.len() + 1, "{rows:#?}");
    let stored_of = |key: &str, version: &str| -> u64 {
        let dir = format!("{key}.pqcs/{version}/");
        listed
            .iter()
            .filter(|(k, _)| k.starts_with(&dir))
            .map(|(_, n)| n)
            .sum()
    };
    let mut expected_by_class: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for p in &puts {
        let matching: Vec<&Value> = rows
            .iter()
            .filter(|r| r["key"] == p.key && r["kems"] == p.kems)
            .collect();
        assert_eq!(matching.len(), 1, "{}: {matching:#?}", p.key);
        let r = matching[0];
        assert_eq!(r["class"], p.class, "{}", p.key);
        assert_eq!(r["plaintext_bytes"], p.size, "{}", p.key);
        let latest = !(p.key == "a/x" && p.kems == "x25519");
        assert_eq!(r["latest"], latest, "{}", p.key);
        let stored = stored_of(p.key, r["version"].as_str().expect("version"));
        assert_eq!(r["stored_bytes"], stored, "{}", p.key);
        let e = expected_by_class.entry(p.class).or_default();
        e.0 += 1;
        e.1 += u64::from(latest);
        e.2 += stored;
    }
    let broken: Vec<&Value> = rows.iter().filter(|r| r["key"] == "a/broken").collect();
    assert_eq!(broken.len(), 1);
    assert_eq!(broken[0]["class"], "unreadable");
    let reason = broken[0]["reason"].as_str().expect("reason");
    assert!(reason.contains("header"), "{reason}");
    expected_by_class.insert("unreadable", (1, 1, 18));

    for c in inv["classes"].as_array().expect("classes") {
        let name = c["class"].as_str().expect("class");
        let (versions, latest, stored) = expected_by_class.get(name).copied().unwrap_or_default();
        assert_eq!(c["versions"], versions, "{name}");
        assert_eq!(c["latest"], latest, "{name}");
        assert_eq!(c["stored_bytes"], stored, "{name}");
    }
    assert_eq!(inv["foreign_objects"], 1);
    assert_eq!(inv["foreign_bytes"], 1234);

    // The recipients, by the key files' ids.
    let recipients: BTreeMap<String, (String, u64, u64)> = inv["recipients"]
        .as_array()
        .expect("recipients")
        .iter()
        .map(|r| {
            (
                r["key_id"].as_str().expect("id").to_owned(),
                (
                    r["kem"].as_str().expect("kem").to_owned(),
                    r["versions"].as_u64().expect("n"),
                    r["latest"].as_u64().expect("n"),
                ),
            )
        })
        .collect();
    assert_eq!(
        recipients.get(&key_id(&keys, "x25519")),
        Some(&("x25519".to_owned(), 4, 3)),
        "{recipients:#?}"
    );
    assert_eq!(
        recipients.get(&key_id(&keys, "ml-kem-768")),
        Some(&("ml-kem-768".to_owned(), 3, 3)),
        "{recipients:#?}"
    );
    assert_eq!(
        recipients.get(&key_id(&keys, "ml-kem-1024")),
        Some(&("ml-kem-1024".to_owned(), 2, 2))
    );

    // The v2.1 version is told apart, and counted as one a re-wrap moves with one copy.
    let v21: Vec<&Value> = rows.iter().filter(|r| r["key"] == "a/v21").collect();
    assert_eq!(v21[0]["format"], "v2.1", "{v21:#?}");
    assert!(
        rows.iter()
            .filter(|r| r["key"] != "a/v21")
            .all(|r| r["format"] != "v2.1"),
        "{rows:#?}"
    );

    // The estimate: the latest classical and mixed versions (v2 x25519, v2.1 x25519, rsa,
    // mixed).
    let e = &inv["estimate"];
    assert_eq!(e["versions"], 4, "{e:#}");
    assert_eq!(e["older_versions"], 1, "{e:#}");
    assert_eq!(e["rewrappable_versions"], 1, "{e:#}");
    assert_eq!(e["plaintext_bytes"], 3_015_000u64);
    // The envelope read when the move is planned, two lists, the reads (v1: two, v2: one),
    // one PUT each (none above 8 MiB), one read back.
    assert_eq!(e["requests"]["envelopes"], 4);
    assert_eq!(e["requests"]["lists"], 8);
    assert_eq!(e["requests"]["reads"], 1 + 1 + 2 + 1);
    assert_eq!(e["requests"]["writes"], 4);
    assert_eq!(e["requests"]["total"], 4 + 8 + 5 + 4 + 4);
    let request_cpu = e["request_cpu_us"].as_f64().expect("cpu per request");
    assert!(request_cpu > 0.0, "{e:#}");
    assert!(
        e["cpu_seconds"].as_f64().expect("cpu") > e["crypto_cpu_seconds"].as_f64().expect("crypto"),
        "{e:#}"
    );
    let sources: Vec<&str> = e["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|x| x["source"].as_str().expect("source"))
        .collect();
    assert_eq!(sources, ["v1 rsa-oaep-3072", "v2 x25519"], "{e:#}");
    assert!(e["cpu_seconds"].as_f64().expect("cpu") > 0.0, "{e:#}");
    assert!(e["seconds"].as_f64().expect("s") > 0.0, "{e:#}");

    // No payload was read: the envelopes of 12 versions, three of them 3 MB objects.
    let read = inv["read"]["bytes"].as_u64().expect("bytes");
    assert!(read < 32 * 1024, "read {read} bytes");
    // One request per v1 manifest and v2 header in metadata; for a header at the body's
    // start the HeadObject and one range, or two for the 5,053-byte one; one for the
    // broken object's failed read.
    assert_eq!(
        inv["read"]["requests"],
        6 + 3 + 2 + 3 + 1,
        "{:#}",
        inv["read"]
    );

    // The table says the same in words.
    let table = ok(
        &pqbench(
            &server,
            &["inventory", "--bucket", BUCKET, "--prefix", "a/"],
        ),
        "inventory table",
    );
    assert!(
        table.contains("moving the 4 latest classical or mixed version(s)"),
        "{table}"
    );
    assert!(
        table.contains("requests     25 (4 envelope reads, 8 lists"),
        "{table}"
    );
    assert!(table.contains("1 of them are v2.1 in metadata"), "{table}");
    assert!(table.contains("unreadable: a/broken"), "{table}");
}

#[test]
fn a_mixed_bucket_is_inventoried_exactly_on_the_embedded_server() {
    inventory_is_exact(Kind::Embedded);
}

#[test]
fn a_mixed_bucket_is_inventoried_exactly_on_garage() {
    inventory_is_exact(Kind::Garage);
}

#[test]
fn a_wrong_target_or_a_missing_server_is_refused_with_what_to_do() {
    let o = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .args(["inventory", "--bucket", "b", "--to", "x25519"])
        .output()
        .expect("run");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--to takes ml-kem-768, ml-kem-1024 or x-wing"),
        "{err}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .env_remove("AWS_ENDPOINT_URL")
        .args(["inventory", "--bucket", "b"])
        .output()
        .expect("run");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("needs an S3 server"), "{err}");
}
