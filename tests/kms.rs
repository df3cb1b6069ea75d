//! The key service as its users meet it, as processes: `pqbench serve-kms` serving a key
//! made by `pqbench keygen`; `pqbench put` sealing to its public key; `pqbench get --kms`
//! opening through the service what `pqbench get --secret` opens with the key file; the
//! service throttled or stopped, giving the named failure and no output file; and boto3's
//! KMS client (botocore's own model and signer, OpenSSL through pyca for the client side)
//! getting the secret OpenSSL derives (`tests/interop/kms_boto3.py`).
//!
//! Fails (never skips) when Python or boto3 is missing: `.ci/run` installs them.

mod common;

use std::path::Path;
use std::process::Command;

use common::{KmsService as Service, ok, s};

fn python() -> String {
    std::env::var("PQBENCH_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn pqbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pqbench"))
}

/// The embedded S3 server's environment for `pqbench put/get`.
fn s3_env(server: &s3::EmbeddedS3) -> [(&'static str, String); 3] {
    [
        ("AWS_ENDPOINT_URL", server.endpoint().to_owned()),
        ("AWS_ACCESS_KEY_ID", server.access_key().to_owned()),
        ("AWS_SECRET_ACCESS_KEY", server.secret_key().to_owned()),
    ]
}

fn object_args(key: &str) -> [&str; 6] {
    ["--tenant", "t", "--bucket", "kmsb", "--key", key]
}

#[test]
fn objects_open_through_the_key_service_and_with_the_key_file_alike() {
    let t = tempfile::tempdir().expect("tmp");
    let keys = t.path().join("keys");
    for (mode, dir) in [("ml-kem-768", "mlkem"), ("x25519", "x")] {
        ok(
            &pqbench()
                .args(["keygen", "--mode", mode, "--out", s(&keys.join(dir))])
                .output()
                .expect("keygen"),
            "keygen",
        );
    }
    // The service holds both keys (each keygen directory served as it is, in turn).
    let server = s3::EmbeddedS3::start(&t.path().join("s3"), 0).expect("s3 server");
    server.create_bucket("kmsb").expect("bucket");
    let data = t.path().join("in.bin");
    let plaintext: Vec<u8> = (0..300_000u32).map(|i| i.to_le_bytes()[0] ^ 0x5a).collect();
    std::fs::write(&data, &plaintext).expect("write");

    for (mode, dir, spec) in [
        ("ml-kem-768", "mlkem", "ML_KEM_768"),
        ("x25519", "x", "X25519"),
    ] {
        let kdir = keys.join(dir);
        let service = Service::start(
            &kdir,
            t.path().join(format!("{dir}.env")),
            &["--rtt", "1ms"],
        );
        let key_id = service.key(spec).to_owned();
        let key = format!("obj-{dir}");
        let put = ok(
            &pqbench()
                .arg("put")
                .args(object_args(&key))
                .args([
                    "--mode",
                    mode,
                    "--recipient",
                    s(&kdir.join("recipient.pub")),
                ])
                .args(["--in", s(&data)])
                .envs(s3_env(&server))
                .output()
                .expect("put"),
            "put",
        );
        let version = put.lines().next().expect("version").trim().to_owned();

        // Through the service, by key ARN (as an AWS user names a KMS key).
        let arn = format!("arn:aws:kms:eu-west-1:000000000000:key/{key_id}");
        let remote_out = t.path().join(format!("{dir}.remote"));
        ok(
            &pqbench()
                .arg("get")
                .args(object_args(&key))
                .args(["--version", &version, "--expect-mode", mode])
                .args(["--kms", s(&service.env_file), "--kms-key", &arn])
                .args(["--out", s(&remote_out)])
                .envs(s3_env(&server))
                .output()
                .expect("get --kms"),
            "get --kms",
        );
        assert_eq!(
            std::fs::read(&remote_out).expect("remote out"),
            plaintext,
            "{mode}"
        );

        // Format v2 to the same key: HPKE's decapsulation (or DH) in the service, the key
        // schedule and the chunks here.
        let key_v2 = format!("obj-{dir}-v2");
        let put = ok(
            &pqbench()
                .arg("put")
                .args(object_args(&key_v2))
                .args([
                    "--format",
                    "v2",
                    "--recipient",
                    s(&kdir.join("recipient.pub")),
                ])
                .args(["--in", s(&data)])
                .envs(s3_env(&server))
                .output()
                .expect("put v2"),
            "put --format v2",
        );
        let version_v2 = put.lines().next().expect("version").trim().to_owned();
        let v2_out = t.path().join(format!("{dir}.v2.remote"));
        ok(
            &pqbench()
                .arg("get")
                .args(object_args(&key_v2))
                .args(["--version", &version_v2, "--format", "v2"])
                .args(["--kms", s(&service.env_file), "--kms-key", &key_id])
                .args(["--out", s(&v2_out)])
                .envs(s3_env(&server))
                .output()
                .expect("get --format v2 --kms"),
            "get --format v2 --kms",
        );
        assert_eq!(
            std::fs::read(&v2_out).expect("v2 out"),
            plaintext,
            "{mode} v2"
        );

        // With the key file, on another backend.
        let local_out = t.path().join(format!("{dir}.local"));
        ok(
            &pqbench()
                .arg("get")
                .args(object_args(&key))
                .args(["--version", &version, "--expect-mode", mode])
                .args([
                    "--backend",
                    "rustcrypto",
                    "--secret",
                    s(&kdir.join("recipient.key")),
                ])
                .args(["--out", s(&local_out)])
                .envs(s3_env(&server))
                .output()
                .expect("get --secret"),
            "get --secret",
        );
        assert_eq!(std::fs::read(&local_out).expect("local out"), plaintext);
    }
}

/// Throttled, unknown key, stopped service: each a named failure, no output file.
#[test]
fn a_failing_key_service_gives_its_class_and_no_plaintext() {
    let t = tempfile::tempdir().expect("tmp");
    let kdir = t.path().join("k");
    ok(
        &pqbench()
            .args(["keygen", "--mode", "ml-kem-768", "--out", s(&kdir)])
            .output()
            .expect("keygen"),
        "keygen",
    );
    let server = s3::EmbeddedS3::start(&t.path().join("s3"), 0).expect("s3 server");
    server.create_bucket("kmsb").expect("bucket");
    let data = t.path().join("in.bin");
    std::fs::write(&data, vec![7u8; 5000]).expect("write");
    let put = ok(
        &pqbench()
            .arg("put")
            .args(object_args("o"))
            .args([
                "--mode",
                "ml-kem-768",
                "--recipient",
                s(&kdir.join("recipient.pub")),
            ])
            .args(["--in", s(&data)])
            .envs(s3_env(&server))
            .output()
            .expect("put"),
        "put",
    );
    let version = put.lines().next().expect("version").trim().to_owned();
    // One request per second: `get` makes two (GetPublicKey, Decapsulate) at once.
    let service = Service::start(&kdir, t.path().join("k.env"), &["--rate", "1"]);
    let key_id = service.key("ML_KEM_768").to_owned();
    let env_file = service.env_file.clone();
    let get = |key: &str, out: &Path| {
        pqbench()
            .arg("get")
            .args(object_args("o"))
            .args(["--version", &version, "--expect-mode", "ml-kem-768"])
            .args(["--kms", s(&env_file), "--kms-key", key])
            .args(["--out", s(out)])
            .envs(s3_env(&server))
            .output()
            .expect("get --kms")
    };
    let out = t.path().join("out");
    let o = get(&key_id, &out);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("ThrottlingException") && e.contains("throttled"),
        "{e}"
    );
    assert!(!out.exists(), "a plaintext file was written");

    std::thread::sleep(std::time::Duration::from_millis(1100));
    let o = get(&"0".repeat(64), &out);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("NotFoundException") && e.contains("not_found"),
        "{e}"
    );
    assert!(!out.exists());

    let env = service.env();
    drop(service);
    let o = get(&key_id, &out);
    let e = String::from_utf8_lossy(&o.stderr);
    let endpoint = &env
        .iter()
        .find(|(k, _)| k == "AWS_ENDPOINT_URL_KMS")
        .expect("endpoint")
        .1;
    assert!(
        e.contains("unavailable") && e.contains(endpoint.as_str()),
        "{e}"
    );
    let secret = &env
        .iter()
        .find(|(k, _)| k == "AWS_SECRET_ACCESS_KEY")
        .expect("secret")
        .1;
    assert!(
        !e.contains(secret.as_str()),
        "the key service's secret is in the error"
    );
    assert!(!out.exists());
}

#[test]
fn an_env_file_others_can_read_is_refused() {
    let t = tempfile::tempdir().expect("tmp");
    let env = t.path().join("kms.env");
    std::fs::write(
        &env,
        "export AWS_ENDPOINT_URL_KMS=http://127.0.0.1:1\nexport AWS_ACCESS_KEY_ID=a\nexport AWS_SECRET_ACCESS_KEY=b\n",
    )
    .expect("write");
    std::fs::set_permissions(&env, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    let o = pqbench()
        .arg("get")
        .args(object_args("o"))
        .args([
            "--expect-mode",
            "ml-kem-768",
            "--kms",
            s(&env),
            "--kms-key",
            &"0".repeat(64),
        ])
        .args(["--out", s(&t.path().join("out"))])
        .args([
            "--endpoint",
            "http://127.0.0.1:1",
            "--access-key",
            "a",
            "--secret-key",
            "b",
        ])
        .output()
        .expect("get");
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("chmod 600"), "{e}");
}

#[test]
fn boto3_calls_the_key_service_and_gets_the_secret_openssl_derives() {
    let t = tempfile::tempdir().expect("tmp");
    let service = Service::start(
        &t.path().join("keys"),
        t.path().join("kms.env"),
        &["--create", "ml-kem-768", "--create", "x25519"],
    );
    let o = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/kms_boto3.py"))
        .args([
            "--mlkem",
            service.key("ML_KEM_768"),
            "--x25519",
            service.key("X25519"),
        ])
        .envs(service.env())
        .env_remove("AWS_PROFILE")
        .env("AWS_CONFIG_FILE", "/dev/null")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
        .output()
        .expect("run kms_boto3.py (pip install -r tests/interop/requirements.txt)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "kms_boto3.py: {out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(
        r["has_decapsulate"], true,
        "botocore {} has no Decapsulate",
        r["botocore"]
    );
    assert_eq!(r["mlkem_spec"], "ML_KEM_768");
    assert_eq!(r["mlkem_same_secret"], true);
    assert_eq!(r["flipped_len"], 32);
    assert_eq!(r["flipped_differs"], true);
    assert_eq!(r["short_code"], "InvalidCiphertextException");
    assert_eq!(r["x25519_same_secret"], true);
    assert_eq!(r["created_spec"], "ML_KEM_1024");
    assert_eq!(r["created_same_secret"], true);
    assert_eq!(r["unknown_code"], "NotFoundException");
    assert_eq!(r["usage_code"], "InvalidKeyUsageException");
}
