//! End-to-end tests of the `pqbench` binary: keygen → seal → inspect → open for every mode,
//! sealed on one backend and opened on the other, and the failure contract of `open`
//! (non-zero exit, one clear line, no output file left behind).

#![allow(
    clippy::cast_possible_truncation,
    reason = "test data is generated with wrapping byte arithmetic and small sizes"
)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{ok, run_complete, s};

/// This test binary's `XDG_STATE_HOME` (a temporary directory): the keys `pqbench run`
/// keeps there stay out of the user's home.
fn state_home() -> &'static Path {
    static STATE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    STATE
        .get_or_init(|| tempfile::tempdir().expect("state dir"))
        .path()
}

/// `pqbench` as a process, with [`state_home`] as its `XDG_STATE_HOME`.
fn cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pqbench"));
    c.env("XDG_STATE_HOME", state_home());
    c
}

fn pqbench(args: &[&str]) -> Output {
    cmd().args(args).output().expect("run pqbench")
}

const MODES: [&str; 11] = [
    "plaintext",
    "psk",
    "rsa-oaep-4096",
    "rsa-oaep-3072",
    "x25519",
    "ml-kem-768",
    "ml-kem-1024",
    "concat-hybrid",
    "x-wing",
    "ml-kem-768-session",
    "x25519-padded",
];

struct Keys {
    seal: Vec<String>,
    open: Vec<String>,
}

fn keys(dir: &Path, mode: &str) -> Keys {
    if mode == "plaintext" {
        return Keys {
            seal: vec![],
            open: vec![],
        };
    }
    ok(
        &pqbench(&["keygen", "--mode", mode, "--out", s(dir)]),
        "keygen",
    );
    if mode == "psk" {
        let p = s(&dir.join("psk.key")).to_owned();
        return Keys {
            seal: vec!["--psk".into(), p.clone()],
            open: vec!["--psk".into(), p],
        };
    }
    Keys {
        seal: vec!["--recipient".into(), s(&dir.join("recipient.pub")).into()],
        open: vec!["--secret".into(), s(&dir.join("recipient.key")).into()],
    }
}

/// The arguments of `pqbench seal` for object `key` of tenant `t1`, bucket `b1`.
fn seal_args(
    mode: &str,
    backend: &str,
    key: &str,
    k: &Keys,
    input: &Path,
    out: &Path,
) -> Vec<String> {
    let mut a: Vec<String> = [
        "seal",
        "--mode",
        mode,
        "--backend",
        backend,
        "--tenant",
        "t1",
        "--bucket",
        "b1",
        "--key",
        key,
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    a.extend(k.seal.iter().cloned());
    a.extend([
        "--in".into(),
        s(input).into(),
        "--out".into(),
        s(out).into(),
    ]);
    a
}

fn run(args: &[String]) -> Output {
    pqbench(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn every_mode_round_trips_across_backends() {
    let _one_at_a_time = one_at_a_time();
    let t = tempfile::tempdir().expect("tmp");
    let input = t.path().join("in.bin");
    let data: Vec<u8> = (0..70_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(&input, &data).expect("write");
    let s3 = t.path().join("s3");
    for mode in MODES {
        let k = keys(&t.path().join(format!("k-{mode}")), mode);
        for (seal_b, open_b) in [("aws-lc", "rustcrypto"), ("rustcrypto", "aws-lc")] {
            let key = format!("objects/{mode}-{seal_b}");
            let version = ok(
                &run(&seal_args(mode, seal_b, &key, &k, &input, &s3)),
                "seal",
            )
            .trim()
            .to_owned();
            let vdir = s3.join(format!("{key}.pqcs/{version}"));
            let info = ok(&pqbench(&["inspect", s(&vdir)]), "inspect");
            assert!(info.contains(&format!("mode            {mode}")), "{info}");
            assert!(info.contains("(as the manifest says)"), "{info}");
            let out = t.path().join(format!("out-{mode}-{seal_b}"));
            let mut o = vec![
                "open",
                "--expect-mode",
                mode,
                "--backend",
                open_b,
                "--tenant",
                "t1",
                "--bucket",
                "b1",
                "--key",
                &key,
                "--version",
                &version,
            ];
            o.extend(k.open.iter().map(String::as_str));
            o.extend(["--in", s(&s3), "--out", s(&out)]);
            ok(&pqbench(&o), "open");
            assert!(
                std::fs::read(&out).expect("read") == data,
                "{mode} {seal_b}->{open_b}"
            );
        }
    }
}

#[test]
fn study_codes_are_accepted() {
    let _one_at_a_time = one_at_a_time();
    let t = tempfile::tempdir().expect("tmp");
    let out = ok(
        &pqbench(&["keygen", "--mode", "P3", "--out", s(&t.path().join("k"))]),
        "keygen P3",
    );
    assert!(out.contains("x-wing"), "{out}");
}

/// Asserts a failed `open`: non-zero exit, one line on stderr starting with `error:`, and
/// neither the output file nor a temporary file left behind.
fn assert_clean_failure(o: &Output, out: &Path, what: &str) -> String {
    assert!(!o.status.success(), "{what}: unexpectedly succeeded");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{what}: not one line: {err}");
    assert!(err.starts_with("error: "), "{what}: {err}");
    assert!(!out.exists(), "{what}: output file left behind");
    let dir = out.parent().expect("parent");
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "{what}: temporary files left: {leftovers:?}"
    );
    err
}

#[test]
fn open_failures_are_clean() {
    let _one_at_a_time = one_at_a_time();
    let t = tempfile::tempdir().expect("tmp");
    let input = t.path().join("in.bin");
    std::fs::write(&input, vec![7u8; 5 * 1024 * 1024]).expect("write");
    let k = keys(&t.path().join("k"), "ml-kem-768");
    let s3 = t.path().join("s3");
    let version = ok(
        &run(&seal_args("ml-kem-768", "aws-lc", "obj", &k, &input, &s3)),
        "seal",
    )
    .trim()
    .to_owned();
    let outdir = t.path().join("outdir");
    std::fs::create_dir_all(&outdir).expect("mkdir");
    let out = outdir.join("plain.bin");
    let open_args = |mode: &'static str, version: &str| -> Vec<String> {
        let mut o: Vec<String> = [
            "open",
            "--expect-mode",
            mode,
            "--tenant",
            "t1",
            "--bucket",
            "b1",
            "--key",
            "obj",
            "--version",
            version,
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        o.extend(k.open.iter().cloned());
        o.extend(["--in".into(), s(&s3).into(), "--out".into(), s(&out).into()]);
        o
    };

    let data_path = s3.join(format!("obj.pqcs/{version}/data.enc"));
    let orig = std::fs::read(&data_path).expect("read");

    // Tampered in the second chunk: the first chunk authenticates and was written to the
    // temporary file, but no output file may appear.
    let mut bad = orig.clone();
    bad[4 * 1024 * 1024 + 100] ^= 1;
    std::fs::write(&data_path, &bad).expect("write");
    let e = assert_clean_failure(
        &run(&open_args("ml-kem-768", &version)),
        &out,
        "tampered second chunk",
    );
    assert!(e.contains("decryption failed"), "{e}");
    // Truncated.
    std::fs::write(&data_path, &orig[..orig.len() - 16]).expect("write");
    assert_clean_failure(&run(&open_args("ml-kem-768", &version)), &out, "truncated");
    std::fs::write(&data_path, &orig).expect("restore");
    // Wrong expected mode (downgrade attempt, or a reader configured for another mode).
    let e = assert_clean_failure(&run(&open_args("plaintext", &version)), &out, "wrong mode");
    assert!(e.contains("mode mismatch"), "{e}");
    // A version that was never committed.
    let e = assert_clean_failure(
        &run(&open_args("ml-kem-768", &envelope::new_version())),
        &out,
        "missing version",
    );
    assert!(e.contains("not committed"), "{e}");
    // The intact object opens.
    ok(&run(&open_args("ml-kem-768", &version)), "open intact");
    assert_eq!(std::fs::read(&out).expect("out").len(), 5 * 1024 * 1024);
}

/// A `recipient.pub` as a user (or an attacker) would write it: the key bytes with a key id
/// that matches them.
fn public_key_file(path: &Path, key_type: &str, key: &[u8]) {
    use base64::Engine as _;
    use sha2::Digest as _;
    let text = serde_json::json!({
        "format": "pqbench-public-key/1",
        "key_id": hex::encode(sha2::Sha256::digest(key)),
        "key_type": key_type,
        "key": base64::engine::general_purpose::STANDARD.encode(key),
    });
    std::fs::write(path, text.to_string()).expect("write key file");
}

/// Issue 16 items 2 and 3 as a user meets them: `seal --mode x-wing --backend rustcrypto`
/// to a `recipient.pub` whose X25519 part is u = 1 used to commit an object; an RSA-3072
/// key with e = 3 round-tripped. Both are refused at key load, on both backends, and no
/// version is written.
#[test]
fn seal_refuses_small_order_and_weak_exponent_recipient_keys() {
    let _one_at_a_time = one_at_a_time();
    let t = tempfile::tempdir().expect("tmp");
    let t = t.path();
    let input = t.join("in.bin");
    std::fs::write(&input, b"hello").expect("write");
    ok(
        &pqbench(&["keygen", "--mode", "x-wing", "--out", s(&t.join("xw"))]),
        "keygen",
    );
    let real: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.join("xw/recipient.pub")).expect("pub"))
            .expect("json");
    use base64::Engine as _;
    let mut key = base64::engine::general_purpose::STANDARD
        .decode(real["key"].as_str().expect("key"))
        .expect("b64");
    key[1184..].copy_from_slice(&[
        1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0,
    ]);
    let xw = t.join("xw-u1.pub");
    public_key_file(&xw, "x-wing", &key);

    let vectors: serde_json::Value =
        serde_json::from_str(include_str!("../envelope/tests/vectors/rsa-exponent.json"))
            .expect("json");
    let e3 = &vectors["cases"][0];
    assert_eq!(
        (e3["bits"].as_u64(), e3["e"].as_u64()),
        (Some(3072), Some(3))
    );
    let rsa = t.join("rsa-e3.pub");
    public_key_file(
        &rsa,
        "rsa-3072",
        &hex::decode(e3["spki"].as_str().expect("spki")).expect("hex"),
    );

    for (mode, file, says) in [
        ("x-wing", &xw, "small-order point"),
        ("rsa-oaep-3072", &rsa, "RSA public exponent is 3"),
    ] {
        for backend in ["rustcrypto", "aws-lc"] {
            let out = t.join(format!("out-{mode}-{backend}"));
            let o = pqbench(&[
                "seal",
                "--mode",
                mode,
                "--backend",
                backend,
                "--recipient",
                s(file),
                "--tenant",
                "t",
                "--bucket",
                "b",
                "--key",
                "k",
                "--in",
                s(&input),
                "--out",
                s(&out),
            ]);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert!(
                !o.status.success(),
                "{mode} on {backend}: sealed to a refused key"
            );
            assert!(stderr.contains(says), "{mode} on {backend}: {stderr}");
            assert!(
                !out.join("k.pqcs").exists(),
                "{mode} on {backend}: wrote a version"
            );
        }
    }
}

#[test]
fn helpful_errors_for_bad_input() {
    let _one_at_a_time = one_at_a_time();
    let t = tempfile::tempdir().expect("tmp");
    let input = t.path().join("in.bin");
    std::fs::write(&input, b"hello").expect("write");
    // Missing recipient.
    let o = pqbench(&[
        "seal",
        "--mode",
        "x25519",
        "--tenant",
        "t",
        "--bucket",
        "b",
        "--key",
        "k",
        "--in",
        s(&input),
        "--out",
        s(t.path()),
    ]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("needs --recipient"),
        "{o:?}"
    );
    // Unknown mode names the allowed ones.
    let o = pqbench(&["keygen", "--mode", "kyber", "--out", s(t.path())]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("ml-kem-768"),
        "{o:?}"
    );
    // A key that would escape the output directory.
    let s3 = t.path().join("s3");
    let k = keys(&t.path().join("k"), "x25519");
    assert!(
        String::from_utf8_lossy(
            &run(&seal_args("x25519", "aws-lc", "../escape", &k, &input, &s3)).stderr
        )
        .contains("'..'")
    );
    // keygen never overwrites a key.
    let o = pqbench(&[
        "keygen",
        "--mode",
        "x25519",
        "--out",
        s(&t.path().join("k")),
    ]);
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("refusing to overwrite"),
        "{o:?}"
    );
    // A corrupt manifest is reported by inspect.
    let v = ok(
        &run(&seal_args("x25519", "aws-lc", "k", &k, &input, &s3)),
        "seal",
    )
    .trim()
    .to_owned();
    let vdir = s3.join(format!("k.pqcs/{v}"));
    let mpath = vdir.join("manifest.json");
    let m = std::fs::read_to_string(&mpath)
        .expect("read")
        .replace("\"chunk_count\":1", "\"chunk_count\":2");
    std::fs::write(&mpath, m).expect("write");
    let o = pqbench(&["inspect", s(&vdir)]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("chunk_count"),
        "{o:?}"
    );
}

#[test]
fn modes_table_lists_every_mode() {
    let _one_at_a_time = one_at_a_time();
    let out = ok(
        &pqbench(&["modes", "--size", "1KiB", "--iterations", "2"]),
        "modes",
    );
    for m in MODES {
        assert_eq!(
            out.lines()
                .filter(|l| l.starts_with(&format!("{m} ")))
                .count(),
            // One row per backend that implements the mode (libcrux has no RSA).
            envelope::Backend::ALL
                .iter()
                .filter(|b| b.supports(m.parse().expect("a mode")))
                .count(),
            "{m}: {out}"
        );
    }
    // Format v2's header table (FORMAT-v2.md §8): bytes, S3's count, what fits.
    for row in [
        "  x25519                209 (290)",
        "  ml-kem-768          1265 (1698)     2439 (3262)*",
        "  ml-kem-1024        1745 (2338)*",
    ] {
        assert!(out.contains(row), "{row}: {out}");
    }
}

/// A `pqbench serve-s3` child process, stopped with SIGTERM-equivalent kill on drop.
struct Serve {
    child: std::process::Child,
    env: Vec<(String, String)>,
    // Kept open: the server must not see a closed stdout while the test runs.
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, env_file: &Path) -> Serve {
    use std::io::BufRead as _;
    let mut child = cmd()
        .args(["serve-s3", "--dir", s(dir), "--bucket", "cli-bucket"])
        .args(["--env-file", s(env_file)])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("serve-s3");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut env = Vec::new();
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).expect("line") == 0 {
            break;
        }
        let line = line.trim_end();
        if let Some((k, v)) = line.strip_prefix("export ").and_then(|l| l.split_once('=')) {
            env.push((k.to_owned(), v.to_owned()));
            if k == "AWS_SECRET_ACCESS_KEY" {
                break;
            }
        }
    }
    assert_eq!(
        env.len(),
        3,
        "serve-s3 prints endpoint and credentials: {env:?}"
    );
    Serve {
        child,
        env,
        _stdout: out,
    }
}

fn with_env(srv: &Serve, args: &[&str]) -> Output {
    cmd()
        .args(args)
        .envs(srv.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("run pqbench")
}

/// `serve-s3` as a stand-in for a server whose keys are given (the played MinIO of the
/// image tests): on another loopback address, with the credentials from its environment,
/// which it never prints; `ls` reaches it with those keys and is refused with others.
#[test]
fn serve_s3_listens_where_told_with_the_credentials_it_is_given() {
    use std::io::BufRead as _;
    let _one_at_a_time = one_at_a_time();
    let tmp = tempfile::tempdir().expect("tmp");
    let secret = "given-secret-9f2c71d0";
    let mut child = cmd()
        .args([
            "serve-s3",
            "--dir",
            s(&tmp.path().join("s3")),
            "--bucket",
            "given",
        ])
        .args(["--host", "127.0.0.23", "--credentials-from-env"])
        .env("AWS_ACCESS_KEY_ID", "PQGIVENKEY")
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("serve-s3");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut printed = String::new();
    let endpoint = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).expect("line") > 0, "{printed}");
        printed.push_str(&line);
        if let Some(e) = line.trim_end().strip_prefix("export AWS_ENDPOINT_URL=") {
            break e.to_owned();
        }
    };
    let mut rest = String::new();
    out.read_line(&mut rest).expect("line");
    printed.push_str(&rest);
    assert!(endpoint.starts_with("http://127.0.0.23:"), "{endpoint}");
    assert!(
        !printed.contains(secret),
        "the given secret is not printed: {printed}"
    );
    let ls = |secret: &str| {
        cmd()
            .args(["ls", "--bucket", "given"])
            .env("AWS_ENDPOINT_URL", &endpoint)
            .env("AWS_ACCESS_KEY_ID", "PQGIVENKEY")
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .output()
            .expect("ls")
    };
    ok(&ls(secret), "ls with the given keys");
    assert!(
        !ls("another-secret").status.success(),
        "other keys are refused"
    );
    let _ = child.kill();
    let _ = child.wait();
    // Without the variables it says which one is missing.
    let o = cmd()
        .args([
            "serve-s3",
            "--dir",
            s(&tmp.path().join("s3b")),
            "--credentials-from-env",
        ])
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .expect("serve-s3");
    let e = err(&o, "serve-s3 without credentials");
    assert!(
        e.contains("--credentials-from-env: AWS_ACCESS_KEY_ID is not set"),
        "{e}"
    );
}

#[test]
fn s3_commands_against_serve_s3() {
    let _one_at_a_time = one_at_a_time();
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let env_file = t.join("s3.env");
    let srv = serve(&t.join("s3"), &env_file);
    // The credentials file is private and holds the same three exports.
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::metadata(&env_file).expect("env file");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(&env_file).expect("env file");
    for (k, v) in &srv.env {
        assert!(text.contains(&format!("export {k}={v}\n")), "{k} in {text}");
    }
    let k = keys(&t.join("keys"), "ml-kem-768");
    let data: Vec<u8> = (0..(9 * 1024 * 1024 + 1) as u32)
        .map(|i| (i % 249) as u8)
        .collect();
    std::fs::write(t.join("in.bin"), &data).expect("write");

    let mut put = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "a/b",
        "--mode",
        "P1",
        "--verify",
    ];
    put.extend(k.seal.iter().map(String::as_str));
    let input = t.join("in.bin");
    put.extend(["--in", s(&input)]);
    // A bucket that does not exist: the error says which flag creates it.
    let mut missing = put.clone();
    missing[2] = "no-such-bucket";
    let e = err(&with_env(&srv, &missing), "put into a missing bucket");
    assert!(
        e.contains("bucket no-such-bucket does not exist: pass --create-bucket to create it")
            && e.contains("no such bucket"),
        "{e}"
    );
    let out = ok(&with_env(&srv, &put), "put");
    let version = out.lines().next().expect("version").to_owned();
    assert!(out.contains("verified"), "{out}");
    assert!(
        out.contains("key establishment"),
        "stage timers printed: {out}"
    );

    let ls = ok(&with_env(&srv, &["ls", "--bucket", "cli-bucket"]), "ls");
    assert!(ls.contains("a/b  1 version(s)"), "{ls}");
    assert!(ls.contains(&version), "{ls}");
    let ls = ok(
        &with_env(&srv, &["ls", "--bucket", "cli-bucket", "--key", "a/b"]),
        "ls key",
    );
    assert!(ls.starts_with(&version), "{ls}");

    // Latest by default; the output appears only after the whole object authenticated.
    let mut get = vec![
        "get",
        "--bucket",
        "cli-bucket",
        "--key",
        "a/b",
        "--expect-mode",
        "ml-kem-768",
    ];
    get.extend(k.open.iter().map(String::as_str));
    let dest = t.join("out.bin");
    get.extend(["--out", s(&dest)]);
    ok(&with_env(&srv, &get), "get");
    assert!(std::fs::read(&dest).expect("out") == data);

    // A wrong expected mode is refused and writes nothing.
    let wrong = t.join("wrong.bin");
    let mut bad = get.clone();
    let n = bad.len();
    bad[n - 1] = s(&wrong);
    bad[6] = "ml-kem-1024";
    let o = with_env(&srv, &bad);
    assert!(!o.status.success());
    assert!(!wrong.exists());

    ok(
        &with_env(
            &srv,
            &[
                "rm",
                "--bucket",
                "cli-bucket",
                "--key",
                "a/b",
                "--version",
                &version,
            ],
        ),
        "rm",
    );
    let o = with_env(
        &srv,
        &[
            "rm",
            "--bucket",
            "cli-bucket",
            "--key",
            "a/b",
            "--version",
            &version,
        ],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not committed"));
    let gc = ok(
        &with_env(&srv, &["gc", "--bucket", "cli-bucket", "--grace", "0s"]),
        "gc",
    );
    assert!(gc.contains("0 uncommitted object(s)"), "{gc}");
    let ls = ok(&with_env(&srv, &["ls", "--bucket", "cli-bucket"]), "ls");
    assert!(ls.contains("no pqbench objects"), "{ls}");
}

/// Format v2 as a user drives it (issue 21): `put --format v2` with the header in metadata
/// (one ML-KEM-768 recipient: two post-quantum wraps do not fit in 2 KB) and as a prefix
/// (two recipients, ML-KEM-768 and X-Wing); `ls` shows one object; `get` opens with each
/// recipient's secret key and refuses a third; the errors for flags of the other format;
/// then `seal`/`open`/`inspect` of a v2 version in a directory.
#[test]
fn format_v2_put_get_seal_open_inspect() {
    let _one_at_a_time = one_at_a_time();
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let srv = serve(&t.join("s3"), &t.join("s3.env"));
    let a = keys(&t.join("ka"), "ml-kem-768");
    let b = keys(&t.join("kb"), "x-wing");
    let stranger = keys(&t.join("kc"), "ml-kem-768");
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
    let input = t.join("in.bin");
    std::fs::write(&input, &data).expect("write");

    for (header, recipients) in [("metadata", vec![&a]), ("prefix", vec![&a, &b])] {
        let key = format!("v2/{header}");
        let mut put = vec![
            "put",
            "--bucket",
            "cli-bucket",
            "--key",
            &key,
            "--format",
            "v2",
        ];
        put.extend(["--header", header, "--verify"]);
        for r in &recipients {
            put.extend(r.seal.iter().map(String::as_str));
        }
        put.extend(["--in", s(&input)]);
        let out = ok(&with_env(&srv, &put), "put v2");
        let version = out.lines().next().expect("version").to_owned();
        assert!(out.contains("1 S3 requests"), "one PutObject: {out}");
        assert!(out.contains("object.v2 size and header"), "{out}");
        // v2 speaks of its header, never of a manifest.
        // 91 + Σ (86 + Nenc): ML-KEM-768 alone; ML-KEM-768 and X-Wing (FORMAT-v2.md §4).
        let n = if header == "metadata" { 1265 } else { 2471 };
        assert!(out.contains(&format!("B received, header {n} B")), "{out}");
        assert!(
            out.contains(", header ") && !out.contains("manifest"),
            "{out}"
        );
        let ls = ok(
            &with_env(&srv, &["ls", "--bucket", "cli-bucket", "--key", &key]),
            "ls",
        );
        assert!(ls.contains(&format!("{version}  v2  object")), "{ls}");
        for (who, k) in recipients.iter().enumerate() {
            let dest = t.join(format!("out-{header}-{who}.bin"));
            let mut get = vec![
                "get",
                "--bucket",
                "cli-bucket",
                "--key",
                &key,
                "--format",
                "v2",
            ];
            get.extend(k.open.iter().map(String::as_str));
            get.extend(["--out", s(&dest)]);
            let out = ok(&with_env(&srv, &get), "get v2");
            assert!(out.contains("1 S3 requests"), "one GetObject: {out}");
            assert!(!out.contains("manifest"), "{out}");
            assert!(std::fs::read(&dest).expect("out") == data);
        }
        let dest = t.join("stranger.bin");
        let mut get = vec![
            "get",
            "--bucket",
            "cli-bucket",
            "--key",
            &key,
            "--format",
            "v2",
        ];
        get.extend(stranger.open.iter().map(String::as_str));
        get.extend(["--out", s(&dest)]);
        let e = err(&with_env(&srv, &get), "get v2 by a stranger");
        assert!(e.contains("decryption failed"), "{e}");
        // A version that is not there: named by v2's object, not v1's manifest.
        let mut get = vec![
            "get",
            "--bucket",
            "cli-bucket",
            "--key",
            &key,
            "--format",
            "v2",
            "--version",
            "01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f",
        ];
        get.extend(a.open.iter().map(String::as_str));
        get.extend(["--out", s(&dest)]);
        let e = err(&with_env(&srv, &get), "get v2 of a missing version");
        assert!(
            e.contains("is not committed (no object.v2) or does not exist"),
            "{e}"
        );
        assert!(!dest.exists(), "nothing written");
    }

    // Flags of the other format say what to do.
    let mut bad = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "x",
        "--format",
        "v2",
    ];
    bad.extend(["--mode", "ml-kem-768", "--in", s(&input)]);
    bad.extend(a.seal.iter().map(String::as_str));
    assert!(err(&with_env(&srv, &bad), "v2 with --mode").contains("drop --mode"));
    let mut bad = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "x",
        "--mode",
        "P1",
    ];
    bad.extend(["--header", "prefix", "--in", s(&input)]);
    bad.extend(a.seal.iter().map(String::as_str));
    assert!(err(&with_env(&srv, &bad), "v1 with --header").contains("add --format v2"));
    let mut bad = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "x",
        "--mode",
        "P1",
    ];
    bad.extend(["--in", s(&input)]);
    bad.extend(a.seal.iter().map(String::as_str));
    bad.extend(b.seal.iter().map(String::as_str));
    assert!(err(&with_env(&srv, &bad), "v1, two recipients").contains("need --format v2"));
    let c = keys(&t.join("kx"), "x25519");
    let mut bad = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "x",
        "--format",
        "v2",
    ];
    bad.extend(["--in", s(&input)]);
    bad.extend(a.seal.iter().map(String::as_str));
    bad.extend(c.seal.iter().map(String::as_str));
    assert!(err(&with_env(&srv, &bad), "mixed").contains("refusing to mix"));
    let big = keys(&t.join("k1024"), "ml-kem-1024");
    let mut bad = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "x",
        "--format",
        "v2",
    ];
    bad.extend(["--in", s(&input)]);
    bad.extend(big.seal.iter().map(String::as_str));
    let e = err(&with_env(&srv, &bad), "ml-kem-1024 in metadata");
    assert!(
        e.contains("1745 bytes") && e.contains("prefix placement"),
        "{e}"
    );
    let mut bad = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "x",
        "--format",
        "v2",
    ];
    bad.extend(["--in", s(&input)]);
    bad.extend(a.seal.iter().map(String::as_str));
    bad.extend(b.seal.iter().map(String::as_str));
    let e = err(&with_env(&srv, &bad), "two PQ recipients in metadata");
    assert!(e.contains("2471 bytes"), "{e}");

    // Locally: seal (prefix by default), inspect, open.
    let root = t.join("local");
    let mut seal = vec!["seal", "--format", "v2", "--tenant", "t1", "--bucket", "b1"];
    seal.extend(["--key", "doc", "--in", s(&input), "--out", s(&root)]);
    seal.extend(a.seal.iter().map(String::as_str));
    let version = ok(&pqbench(&seal), "seal v2").trim().to_owned();
    let dir = root.join(format!("doc.pqcs/{version}"));
    assert!(dir.join("object.v2").exists() && !dir.join("manifest.json").exists());
    let ins = ok(&pqbench(&["inspect", s(&dir)]), "inspect v2");
    assert!(
        ins.contains("format          v2, header 1265 bytes"),
        "{ins}"
    );
    assert!(ins.contains("ml-kem-768"), "{ins}");
    assert!(ins.contains("(as the header says)"), "{ins}");
    let dest = t.join("opened.bin");
    let mut open = vec!["open", "--format", "v2", "--tenant", "t1", "--bucket", "b1"];
    open.extend(["--key", "doc", "--version", &version, "--in", s(&root)]);
    open.extend(["--out", s(&dest)]);
    open.extend(a.open.iter().map(String::as_str));
    ok(&pqbench(&open), "open v2");
    assert!(std::fs::read(&dest).expect("opened") == data);
    // A flipped chunk byte: refused, nothing written.
    let obj = dir.join("object.v2");
    let mut bytes = std::fs::read(&obj).expect("object");
    let n = bytes.len();
    bytes[n - 20] ^= 1;
    std::fs::write(&obj, &bytes).expect("tamper");
    let dest2 = t.join("opened2.bin");
    let n = open.len();
    open[n - 3] = s(&dest2);
    let e = err(&pqbench(&open), "open tampered v2");
    assert!(e.contains("decryption failed"), "{e}");
    assert!(!dest2.exists());
    let mut seal_meta = seal.clone();
    seal_meta.extend(["--header", "metadata"]);
    let e = err(&pqbench(&seal_meta), "seal v2 metadata");
    assert!(e.contains("no object metadata"), "{e}");
}

/// Issue 16 item 6: latest was the largest writer-chosen UUIDv7, so a version
/// `ffffffff-ffff-7fff-bfff-ffffffffffff` (a valid object sealed to the public key) planted
/// by anyone who can write the bucket stayed newest forever, and `get` returned it with
/// exit 0. The planted object is sealed by `pqbench seal` straight into the server's bucket
/// directory (serve-s3 stores the same layout on disk).
#[test]
fn a_planted_future_version_does_not_become_latest() {
    let _one_at_a_time = one_at_a_time();
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let s3dir = t.join("s3");
    let srv = serve(&s3dir, &t.join("s3.env"));
    let k = keys(&t.join("keys"), "x25519");
    std::fs::write(t.join("real.txt"), b"the real object").expect("write");
    std::fs::write(t.join("planted.txt"), b"planted by a writer").expect("write");

    let mut put = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "doc",
        "--mode",
        "x25519",
    ];
    put.extend(k.seal.iter().map(String::as_str));
    let real_in = t.join("real.txt");
    put.extend(["--in", s(&real_in)]);
    let real = ok(&with_env(&srv, &put), "put");
    let real = real.lines().next().expect("version").to_owned();

    let pinned = "ffffffff-ffff-7fff-bfff-ffffffffffff";
    let bucket_dir = s3dir.join("cli-bucket");
    let planted_in = t.join("planted.txt");
    let mut seal = vec![
        "seal",
        "--mode",
        "x25519",
        "--tenant",
        "default",
        "--bucket",
        "cli-bucket",
        "--key",
        "doc",
        "--version",
        pinned,
    ];
    seal.extend(k.seal.iter().map(String::as_str));
    seal.extend(["--in", s(&planted_in), "--out", s(&bucket_dir)]);
    ok(&pqbench(&seal), "seal the planted version");

    // Without --version, get reads the real version; the planted one only when named.
    let mut get = vec![
        "get",
        "--bucket",
        "cli-bucket",
        "--key",
        "doc",
        "--expect-mode",
        "x25519",
    ];
    get.extend(k.open.iter().map(String::as_str));
    let dest = t.join("latest.out");
    let mut latest = get.clone();
    latest.extend(["--out", s(&dest)]);
    let out = ok(&with_env(&srv, &latest), "get latest");
    assert!(out.starts_with(&real), "{out}");
    assert_eq!(std::fs::read(&dest).expect("out"), b"the real object");
    let named = t.join("named.out");
    let mut by_version = get.clone();
    by_version.extend(["--version", pinned, "--out", s(&named)]);
    ok(
        &with_env(&srv, &by_version),
        "get the planted version by name",
    );
    assert_eq!(std::fs::read(&named).expect("out"), b"planted by a writer");

    // ls and gc report it; gc leaves it in place.
    let ls = ok(&with_env(&srv, &["ls", "--bucket", "cli-bucket"]), "ls");
    assert!(
        ls.contains(&format!("doc  2 version(s), latest {real}")),
        "{ls}"
    );
    assert!(ls.contains("1 FUTURE-DATED"), "{ls}");
    let ls = ok(
        &with_env(&srv, &["ls", "--bucket", "cli-bucket", "--key", "doc"]),
        "ls --key",
    );
    let line = |v: &str| {
        ls.lines()
            .find(|l| l.starts_with(v))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line(&real).ends_with("(latest)"), "{ls}");
    assert!(
        line(pinned).contains("FUTURE-DATED: its version says"),
        "{ls}"
    );
    let gc = ok(
        &with_env(&srv, &["gc", "--bucket", "cli-bucket", "--grace", "0s"]),
        "gc",
    );
    assert!(
        gc.contains(&format!("FUTURE-DATED: doc.pqcs/{pinned}/manifest.json")),
        "{gc}"
    );
    ok(
        &with_env(&srv, &by_version),
        "the planted version is still there after gc",
    );

    // With only the planted version left, get without --version refuses and says why.
    let rm = [
        "rm",
        "--bucket",
        "cli-bucket",
        "--key",
        "doc",
        "--version",
        real.as_str(),
    ];
    ok(&with_env(&srv, &rm), "rm");
    let refused = t.join("refused.out");
    let mut only = get.clone();
    only.extend(["--out", s(&refused)]);
    let o = with_env(&srv, &only);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "got the planted version as latest");
    assert!(stderr.contains("future-dated"), "{stderr}");
    assert!(!refused.exists());
}

#[test]
fn s3_commands_say_what_is_missing() {
    let _one_at_a_time = one_at_a_time();
    /// Runs `pqbench` with `remove` taken out of the environment and `set` put in; it must
    /// fail, and its stderr is returned.
    fn failing(args: &[&str], remove: &[&str], set: &[(&str, &str)]) -> String {
        let mut c = cmd();
        c.args(args).envs(set.iter().copied());
        for k in remove {
            c.env_remove(k);
        }
        let o = c.output().expect("run");
        assert!(!o.status.success(), "{args:?} must fail");
        String::from_utf8_lossy(&o.stderr).into_owned()
    }

    let e = failing(&["ls", "--bucket", "b"], &["AWS_ENDPOINT_URL"], &[]);
    assert!(
        e.contains("needs an S3 server") && e.contains("serve-s3"),
        "{e}"
    );

    let unreachable = ["ls", "--bucket", "b", "--endpoint", "http://127.0.0.1:9"];
    let e = failing(
        &unreachable,
        &["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
        &[],
    );
    assert!(e.contains("needs S3 credentials"), "{e}");

    let mut args = unreachable.to_vec();
    args.extend(["--connect-timeout", "1s"]);
    let e = failing(
        &args,
        &[],
        &[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "b")],
    );
    assert!(e.contains("cannot connect to the S3 endpoint"), "{e}");
    assert!(!e.contains("DispatchFailure {"), "no Debug dumps: {e}");
}

/// `run-one` refuses inconsistent loop options with a message naming the flag; `validate`
/// refuses a directory without run data and accepts what `run-one` wrote (or names the
/// failed check).
#[test]
fn run_one_and_validate() {
    let _one_at_a_time = one_at_a_time();
    let e = err(
        &pqbench(&["run-one", "--mode", "x25519", "--loop", "open"]),
        "open loop without a rate",
    );
    assert!(e.contains("--rate"), "{e}");
    let e = err(
        &pqbench(&["run-one", "--mode", "x25519", "--rate", "10"]),
        "rate in a closed loop",
    );
    assert!(e.contains("--loop open"), "{e}");

    let dir = tempfile::tempdir().expect("tempdir");
    let e = err(&pqbench(&["validate", s(dir.path())]), "empty directory");
    assert!(e.contains("validation failed"), "{e}");

    let out = dir.path().join("res");
    let o = pqbench(&[
        "run-one",
        "--mode",
        "ml-kem-768",
        "--op",
        "get",
        "--size",
        "1KiB",
        "--concurrency",
        "2",
        "--loop",
        "open",
        "--rate",
        "40",
        "--warmup",
        "1s",
        "--measured",
        "2s",
        "--drain",
        "1s",
        "--fixtures",
        "4",
        "--run-id",
        "cli",
        "--out",
        s(&out),
    ]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        text.contains("run cli (") && text.contains("throughput"),
        "{text}"
    );
    assert!(
        text.contains("server       CPU") && !text.contains("CPU n/a"),
        "server CPU from /proc: {text}"
    );
    let v = pqbench(&["validate", "--verbose", s(&out)]);
    let vt = String::from_utf8_lossy(&v.stdout).to_string();
    assert!(vt.contains("1 runs, 1 process directories"), "{vt}");
    // run-one and validate agree on validity.
    assert_eq!(o.status.success(), v.status.success(), "{text}\n{vt}");
    if !v.status.success() {
        assert!(
            vt.lines()
                .filter(|l| l.starts_with("FAIL"))
                .all(|l| l.contains("unaccounted")),
            "{vt}"
        );
    }
}

fn err(o: &Output, what: &str) -> String {
    assert!(!o.status.success(), "{what}: unexpectedly succeeded");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const TINY: &str = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: tiny}
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells:
    - {operation: [get], objectSize: [64KiB], concurrency: [1]}
  repetitions: REPS
  warmup: 1s
  measured: 1s
  seed: 11
  fixtures: 4
  pause: {enabled: false}
  analysis: {primary: [{cell: get-64KiB-c1}], bootstrapResamples: 2000}
";

/// Blocks the study's power formula asks for at paired sd `sd`, margin 0.05, α 0.05/`k`,
/// power 0.8: `((z(1 − α/k) + z(0.9)) · sd / ln 1.05)²`, rounded up (z from a table).
fn stats_needed(sd: f64, k: usize) -> u32 {
    assert_eq!(k, 1, "z below is for α = 0.05");
    let z = 1.644_853_626_951_472_2 + 1.281_551_565_544_600_5;
    let n = (z * sd / 1.05f64.ln()).powi(2).ceil();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "small"
    )]
    let n = n as u32;
    n.max(2)
}

/// Every test here takes this lock, so they run one at a time: a campaign keeps both cores
/// busy for up to a minute and a half, and anything running beside it preempts its workers
/// between stage timers, which fails the study's unaccounted-time check and drops runs from
/// the analysis (seen: the end-to-end campaign losing a baseline run to a parallel test).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn tiny(dir: &Path, reps: u32) -> std::path::PathBuf {
    let p = dir.join("tiny.yaml");
    std::fs::write(&p, TINY.replace("REPS", &reps.to_string())).expect("write campaign");
    p
}

#[test]
fn campaign_run_end_to_end() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().expect("tmp");
    let file = tiny(dir.path(), 3);
    let out = dir.path().join("results");
    let o = pqbench(&["run", s(&file), "--out", s(&out)]);
    let text = ok(&o, "pqbench run");
    assert!(text.contains("Verdicts at margin ±0.05"), "{text}");
    let camp = out.join("tiny");
    for f in [
        "plan.json",
        "campaign.yaml",
        "runs.csv",
        "report.md",
        "baselines.json",
    ] {
        assert!(camp.join(f).is_file(), "{f} missing:\n{text}");
    }
    secrets_kept_outside(&out, &camp);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(camp.join("report.json")).expect("report"))
            .expect("json");
    // A debug build's run, preempted between its stage timers on a loaded machine, can fail
    // the study's unaccounted-time check (p99 < 2 %; seen here at 2.0-2.2 % beside the
    // other tests and on CI); the analysis leaves it out with its pair. The comparison
    // holds exactly the blocks with both runs valid, and needs 2 of the 3.
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(camp.join("plan.json")).expect("plan"))
            .expect("json");
    let excluded = report["excluded_runs"].as_array().expect("excluded_runs");
    let left_out: Vec<&str> = excluded.iter().filter_map(|x| x["run"].as_str()).collect();
    let pairs = (0..3)
        .filter(|&rep| {
            plan["runs"]
                .as_array()
                .expect("runs")
                .iter()
                .filter(|r| r["repetition"] == rep)
                .all(|r| !left_out.contains(&r["runId"].as_str().expect("runId")))
        })
        .count();
    let c = &report["comparisons"][0];
    // An invalid run is run again in its block position (issue 18), so every block should
    // end complete; a comparison missing is a failure, with the reasons.
    assert!(
        pairs >= 2,
        "only {pairs} complete block(s) after the retries; runs left out: {excluded:?}\n{text}"
    );
    {
        assert!(camp.join("plots/forest.svg").is_file(), "{text}");
        assert_eq!(c["cell"], "get-64KiB-c1");
        assert_eq!(c["mode"], "ml-kem-768");
        assert_eq!(c["baseline"], "x25519");
        assert_eq!(c["pairs"], pairs, "{text}");
        for key in [
            "ratio",
            "ci90",
            "ci95",
            "tost_p",
            "tost_p_adjusted",
            "verdict",
            "verdicts_at_margins",
            "deficit",
            "advantage",
            "bootstrap_ci90",
            "cpu_ratio",
            "implied_ratio",
            "saturated",
        ] {
            assert!(!c[key].is_null(), "{key} missing in {c}");
        }
    }
    assert_eq!(report["prereg_hash"].as_str().map(str::len), Some(64));

    // `analyze` on the directory and on the CSV reproduces the verdicts.
    let again = dir.path().join("again.json");
    ok(
        &pqbench(&["analyze", s(&camp), "--json", s(&again)]),
        "analyze DIR",
    );
    let r2: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&again).expect("again")).expect("json");
    assert_eq!(r2["comparisons"], report["comparisons"]);
    let from_csv = dir.path().join("csv.json");
    let csv = camp.join("runs.csv");
    let o = pqbench(&[
        "analyze",
        "--runs",
        s(&csv),
        "--baseline",
        "x25519",
        "--primary",
        "get-64KiB-c1",
        "--seed",
        "11",
        "--json",
        s(&from_csv),
    ]);
    ok(&o, "analyze --runs");
    let r3: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&from_csv).expect("csv report"))
            .expect("json");
    assert_eq!(r3["comparisons"][0]["ratio"], c["ratio"]);
    assert_eq!(r3["comparisons"][0]["verdict"], c["verdict"]);
    // Second endpoints and the CPU identity come from the run files, and the CSV carries
    // what they need.
    assert_eq!(r3["secondary"], report["secondary"]);
    let sec = &report["secondary"][0];
    assert!(!sec["identity"]["residual"].is_null(), "{sec}");
    let names: Vec<&str> = sec["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    for want in [
        "client CPU per request",
        "p50 latency",
        "p99 latency",
        "stage key_establishment",
    ] {
        assert!(names.contains(&want), "{want}: {names:?}");
    }
    // A margin given at analysis time is a deviation from the pre-registration.
    let changed = dir.path().join("changed.json");
    ok(
        &pqbench(&[
            "analyze",
            s(&camp),
            "--margin",
            "0.03",
            "--json",
            s(&changed),
        ]),
        "analyze --margin",
    );
    let r4: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&changed).expect("changed")).expect("json");
    assert!(
        r4["deviations"]
            .as_array()
            .expect("deviations")
            .iter()
            .any(|d| d["kind"] == "analysis-setting"
                && d["detail"]
                    .as_str()
                    .is_some_and(|t| t.contains("--margin 0.03 replaces the pre-registered 0.05"))),
        "{}",
        r4["deviations"]
    );

    // The power calculation before the data: an assumed sd of 10 % needs far more than
    // the planned blocks, and `plan` says so.
    let planned = dir.path().join("powered.yaml");
    std::fs::write(
        &planned,
        TINY.replace("REPS", "3").replace(
            "bootstrapResamples: 2000}",
            "bootstrapResamples: 2000, assumedSd: 0.1}",
        ),
    )
    .expect("write");
    let o = pqbench(&["plan", s(&planned)]);
    ok(&o, "plan with assumedSd");
    let (so, se) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    let need = stats_needed(0.1, 1);
    assert!(
        so.contains(&format!(
            "get-64KiB-c1 · ml-kem-768 vs x25519: sd 0.1000 (assumedSd) needs {need} blocks, 3 planned  UNDERPOWERED"
        )),
        "{so}"
    );
    assert!(
        se.contains("warning: get-64KiB-c1 · ml-kem-768 vs x25519 is underpowered"),
        "{se}"
    );
    // A pilot: the earlier campaign's own sd, read from its report.json.
    std::fs::write(
        &planned,
        TINY.replace("REPS", "3").replace(
            "bootstrapResamples: 2000}",
            &format!("bootstrapResamples: 2000, pilot: {}}}", camp.display()),
        ),
    )
    .expect("write");
    let o = pqbench(&["plan", s(&planned), "--json"]);
    ok(&o, "plan with a pilot");
    let pj: serde_json::Value = serde_json::from_slice(&o.stdout).expect("plan json");
    assert_eq!(pj["power"][0]["source"], "pilot", "{pj}");
    assert_eq!(pj["power"][0]["sd"], c["sd"], "{pj}");

    // A changed pre-registration is refused in the same directory.
    std::fs::write(
        &file,
        TINY.replace("REPS", "3").replace("seed: 11", "seed: 12"),
    )
    .expect("edit");
    let o = pqbench(&["run", s(&file), "--out", s(&out)]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("pre-registration"), "{e}");
}

/// The S3 client as a campaign factor (issue 19): the same modes on the AWS SDK and on the
/// lean client share every block; each run records the client it used, the report's arms
/// table names it, and the default comparisons stay on one client.
#[test]
fn campaign_compares_across_s3_clients() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("clients.yaml");
    std::fs::write(
        &file,
        "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: clients}
spec:
  arms:
    - {mode: x25519}
    - {mode: ml-kem-768}
    - {mode: x25519, s3Client: lean, name: x25519-lean}
    - {mode: ml-kem-768, s3Client: lean, name: ml-kem-768-lean}
  baseline: x25519
  cells:
    - {operation: [get], objectSize: [4KiB], concurrency: [2]}
  repetitions: 3
  warmup: 1s
  measured: 1s
  seed: 19
  fixtures: 4
  pause: {enabled: false}
  analysis: {primary: [{cell: get-4KiB-c2}], bootstrapResamples: 1000}
",
    )
    .expect("write campaign");
    let out = dir.path().join("results");
    let text = ok(
        &pqbench(&["run", s(&file), "--out", s(&out)]),
        "pqbench run",
    );
    let camp = out.join("clients");
    let mut seen = std::collections::BTreeMap::new();
    for run in std::fs::read_dir(camp.join("runs")).expect("runs dir") {
        let run = run.expect("entry").path();
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(run.join("p0/summary.json")).expect("summary.json"),
        )
        .expect("json");
        let arm = summary["spec"]["arm"].as_str().expect("arm").to_owned();
        let client = summary["client"]["client"].as_str().expect("client record");
        let sdk = summary["client"]["sdk"].as_str().expect("sdk");
        let want = if arm.ends_with("-lean") {
            "lean"
        } else {
            "aws-sdk"
        };
        assert_eq!(client, want, "{arm} in {}", run.display());
        assert_eq!(sdk.starts_with("lean"), want == "lean", "{arm}: {sdk}");
        *seen.entry(arm).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 4, "{seen:?}\n{text}");
    let report = std::fs::read_to_string(camp.join("report.md")).expect("report.md");
    assert!(
        report.contains("| x25519-lean | x25519 | aws-lc | lean |")
            && report.contains("| ml-kem-768 | ml-kem-768 | aws-lc | aws-sdk |"),
        "{report}"
    );
    // The default comparisons pair arms on one client: in the plan, and in the report,
    // where (as in campaign_run_end_to_end) a debug-build run that fails the
    // unaccounted-time check leaves its block out, so three blocks leave at least two.
    let pairs_of = |v: &serde_json::Value, arm: &str, against: &str| -> Vec<(String, String)> {
        v.as_array()
            .expect("comparisons")
            .iter()
            .map(|c| {
                (
                    c[arm].as_str().unwrap_or("").to_owned(),
                    c[against].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let want = [
        ("ml-kem-768".to_owned(), "x25519".to_owned()),
        ("ml-kem-768-lean".to_owned(), "x25519-lean".to_owned()),
    ];
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(camp.join("plan.json")).expect("plan"))
            .expect("plan.json");
    assert_eq!(pairs_of(&plan["comparisons"], "arm", "against"), want);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(camp.join("report.json")).expect("json"))
            .expect("report.json");
    assert_eq!(
        pairs_of(&json["comparisons"], "mode", "baseline"),
        want,
        "{text}"
    );
}

/// Issue 16 item 8: the results directory holds no secret (no key file, no credentials);
/// the campaign's keys and the embedded server's credentials are in its keys directory
/// under `XDG_STATE_HOME`, 0700 with 0600 files.
fn secrets_kept_outside(out: &Path, camp: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let files = common::files_under(out);
    let secret = |p: &Path| {
        p.extension().is_some_and(|x| x == "key") || p.file_name().is_some_and(|n| n == "s3.env")
    };
    let leaked: Vec<_> = files.iter().filter(|p| secret(p)).collect();
    assert!(
        leaked.is_empty(),
        "secrets in the results directory: {leaked:?}"
    );
    // Shared as it is: every file in the results directory has the one mode the umask
    // gives, the records (copied from the worker's private spool) too.
    let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    let mut modes: BTreeMap<u32, Vec<&PathBuf>> = BTreeMap::new();
    for f in &files {
        modes.entry(mode(f)).or_default().push(f);
    }
    assert_eq!(modes.len(), 1, "files of differing modes: {modes:#?}");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(camp.join("plan.json")).expect("plan"))
            .expect("json");
    let hash = plan["preregHash"].as_str().expect("preregHash");
    let keys = state_home()
        .join("pqbench/keys")
        .join(format!("tiny-{}", &hash[..12]));
    assert_eq!(mode(&keys), 0o700, "{}", keys.display());
    for f in ["x25519.key", "ml-kem-768.key", "s3.env"] {
        assert_eq!(mode(&keys.join(f)), 0o600, "{f} in {}", keys.display());
    }
}

/// Keys are never written inside a git working tree: neither to a `--keys-dir` there nor
/// to a default location there (a home directory under git); nothing is written then.
#[test]
fn campaign_refuses_keys_inside_a_git_work_tree() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().expect("tmp");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
    let file = tiny(dir.path(), 2);
    let out = dir.path().join("results");
    let keys = repo.join("sub/keys");
    let o = pqbench(&["run", s(&file), "--out", s(&out), "--keys-dir", s(&keys)]);
    let e = err(&o, "keys inside a repository");
    assert!(e.contains("inside the git working tree"), "{e}");
    assert!(e.contains("--keys-dir"), "{e}");
    assert!(!keys.exists() && !out.exists(), "something was written");
    let o = cmd()
        .args(["run", s(&file), "--out", s(&out)])
        .env("XDG_STATE_HOME", repo.join("state"))
        .output()
        .expect("run");
    let e = err(&o, "default keys directory inside a repository");
    assert!(e.contains("inside the git working tree"), "{e}");
    assert!(
        !repo.join("state").exists() && !out.exists(),
        "something was written"
    );
    // The main job of the README writes to ./pqbench-results: git ignores it in this repository.
    let ignore = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.gitignore"))
        .expect(".gitignore");
    assert!(ignore.lines().any(|l| l == "/pqbench-results/"), "{ignore}");
}

/// The files of every complete run under `runs` (one process each), with their bytes.
fn complete_files(runs: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for run in std::fs::read_dir(runs).expect("runs").flatten() {
        let p0 = run.path().join("p0");
        if !run_complete(&run.path()) {
            continue;
        }
        for f in std::fs::read_dir(&p0).expect("p0").flatten() {
            if !f.path().is_file() {
                continue;
            }
            let bytes = std::fs::read(f.path()).expect("read");
            files.insert(f.path(), bytes);
        }
    }
    files
}

/// Starts `pqbench run` in its own process group, as a terminal would, its stderr piped.
fn spawn_run_in_own_group(file: &Path, out: &Path) -> std::process::Child {
    use std::os::unix::process::CommandExt as _;
    cmd()
        .args(["run", s(file), "--out", s(out)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn")
}

/// Starts `pqbench run` in its own process group (as a terminal would) and returns once one
/// run is complete, so that a signal to the group lands in a later run.
fn start_campaign_until_one_run(file: &Path, out: &Path) -> std::process::Child {
    let runs = out.join("tiny").join("runs");
    let mut child = spawn_run_in_own_group(file, out);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let dirs: Vec<_> = std::fs::read_dir(&runs)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        if dirs.iter().any(|d| run_complete(d)) {
            return child;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("pqbench run ended before a run completed: {status}");
        }
        assert!(std::time::Instant::now() < deadline, "no progress");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Sends `signal` to the whole process group of `child` (pqbench, its run-spec processes
/// and its server), as Ctrl-C in a terminal or a kill of the session does.
fn signal_group(child: &std::process::Child, signal: &str) {
    let sent = Command::new("kill")
        .args(["-s", signal, "--", &format!("-{}", child.id())])
        .status()
        .expect("kill");
    assert!(sent.success(), "kill -s {signal} the process group");
}

/// Ctrl-C while the testbed is being probed: nothing half-measured is kept (no
/// baselines.json), the campaign says how to resume, and the resumed one measures them.
#[test]
fn ctrl_c_during_the_baselines_keeps_none_and_the_resumed_campaign_takes_them() {
    use std::io::{BufRead as _, Read as _};
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().expect("tmp");
    let file = tiny(dir.path(), 2);
    let out = dir.path().join("results");
    let mut child = spawn_run_in_own_group(&file, &out);
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut said = String::new();
    // The line printed as the probes start.
    while !said.contains("testbed baselines: network (iperf3") {
        let mut line = String::new();
        let n = stderr.read_line(&mut line).expect("stderr");
        assert!(
            n > 0,
            "pqbench run ended before probing the testbed:\n{said}"
        );
        said.push_str(&line);
    }
    signal_group(&child, "INT");
    stderr.read_to_string(&mut said).expect("stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(
        said.contains("testbed baselines: interrupted, not kept"),
        "{said}"
    );
    let camp = out.join("tiny");
    assert!(!camp.join("baselines.json").exists(), "{said}");
    let o = pqbench(&["run", s(&file), "--out", s(&out)]);
    let text = ok(&o, "the resumed run");
    let b: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(camp.join("baselines.json")).expect("baselines.json"),
    )
    .expect("JSON");
    assert!(b["network"].get("measured").is_some(), "{b}\n{text}");
}

#[test]
fn campaign_ctrl_c_reports_and_resumes() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().expect("tmp");
    let file = tiny(dir.path(), 2);
    let out = dir.path().join("results");
    let child = start_campaign_until_one_run(&file, &out);
    // A second invocation on the same results directory is refused while the first holds
    // it (both would carry out the same runs), and changes nothing there.
    let before = complete_files(&out.join("tiny").join("runs"));
    let second = pqbench(&["run", s(&file), "--out", s(&out)]);
    let refused = err(&second, "a second pqbench run on the same --out");
    assert_eq!(second.status.code(), Some(1), "{refused}");
    assert!(
        refused.contains(&format!(
            "{} is in use by another pqbench run (process {}): wait for it to end",
            out.join("tiny").display(),
            child.id()
        )),
        "{refused}"
    );
    assert!(!before.is_empty());
    let after = complete_files(&out.join("tiny").join("runs"));
    for (path, bytes) in &before {
        assert!(
            after.get(path) == Some(bytes),
            "{} changed beside the refused run",
            path.display()
        );
    }
    signal_group(&child, "INT");
    let o = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains("interrupted: ") && err.contains("to resume"),
        "{err}"
    );
    let kept = std::fs::read_dir(out.join("tiny").join("runs"))
        .expect("runs")
        .filter_map(Result::ok)
        .filter(|e| run_complete(&e.path()))
        .count();
    assert!(
        err.contains(&format!("interrupted: {kept} of 4 runs complete")),
        "{err}"
    );
    let o = pqbench(&["run", s(&file), "--out", s(&out)]);
    let text = ok(&o, "resumed run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("resuming: {kept} complete run(s) kept")),
        "{err}"
    );
    assert!(text.contains("Verdicts"), "{text}");
}

/// The local runner follows the schedule the operator follows (`run::schedule`, whose
/// scenario table the operator's step is tested through too), here with real processes: a
/// run whose processes cannot carry it out is retried `runRetries` times, then given up and
/// recorded, and the campaign goes on; a resumed campaign does not try it again; an attempt
/// past `deadlines.run` is stopped and counts as failed.
#[test]
fn campaign_retries_gives_up_and_goes_on_by_the_shared_schedule() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().expect("tmp");
    let text = TINY.replace("REPS", "2").replace(
        "  pause: {enabled: false}\n",
        "  pause: {enabled: false}\n  runRetries: 1\n",
    );
    let file = dir.path().join("tiny.yaml");
    std::fs::write(&file, text).expect("write campaign");
    let out = dir.path().join("results");
    // A malformed ML-KEM key: every process of an ml-kem-768 run refuses it at load (exit
    // 2, not carried out); the x25519 runs are unaffected.
    let keys = dir.path().join("keys");
    std::fs::create_dir_all(&keys).expect("keys dir");
    std::fs::write(keys.join("ml-kem-768.key"), b"not a key\n").expect("bad key");
    let o = pqbench(&["run", s(&file), "--out", s(&out), "--keys-dir", s(&keys)]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let camp = out.join("tiny");
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(camp.join("plan.json")).expect("plan"))
            .expect("plan json");
    let ids = |arm: &str| -> Vec<String> {
        plan["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .filter(|r| r["arm"] == arm)
            .map(|r| r["runId"].as_str().expect("id").to_owned())
            .collect()
    };
    let (mlkem, x25519) = (ids("ml-kem-768"), ids("x25519"));
    assert_eq!((mlkem.len(), x25519.len()), (2, 2), "{plan}");
    for id in &mlkem {
        assert!(
            err.contains(&format!(
                "run {id} attempt 1 failed (process 0 could not carry the run out"
            )),
            "{err}"
        );
        assert!(err.contains("attempt 2 of 2"), "{err}");
        assert!(
            err.contains(&format!("run {id} failed 2 attempt(s)")),
            "{err}"
        );
        assert!(!run_complete(&camp.join("runs").join(id)), "{id}");
    }
    for id in &x25519 {
        assert!(run_complete(&camp.join("runs").join(id)), "{id}: {err}");
    }
    let given: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(camp.join("failed-runs.json")).expect("failed-runs.json"),
    )
    .expect("json");
    let given = given.as_array().expect("list");
    assert_eq!(given.len(), 2, "{given:?}");
    for g in given {
        assert!(mlkem.iter().any(|id| g["runId"] == id.as_str()), "{g}");
        assert_eq!(g["attempts"], 2, "{g}");
        assert!(
            g["reason"]
                .as_str()
                .expect("reason")
                .contains("could not carry"),
            "{g}"
        );
    }
    assert!(
        err.contains("2 run(s) failed every attempt and were given up"),
        "{err}"
    );
    // The deviations log lists each given-up run: retried, and never completed.
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(camp.join("report.json")).expect("report.json"),
    )
    .expect("json");
    let devs = report["deviations"].as_array().expect("deviations");
    for id in &mlkem {
        for kind in ["retried", "not-completed"] {
            assert!(
                devs.iter()
                    .any(|d| d["kind"] == kind && d["subject"] == id.as_str()),
                "{kind} {id}: {devs:?}"
            );
        }
    }
    let md = std::fs::read_to_string(camp.join("report.md")).expect("report.md");
    assert!(md.contains("## Deviations from the plan"), "{md}");

    // Resumed: the given-up runs are not tried again, nothing else runs.
    let o = pqbench(&["run", s(&file), "--out", s(&out), "--keys-dir", s(&keys)]);
    let again = String::from_utf8_lossy(&o.stderr);
    assert!(
        again.contains("resuming: 2 complete run(s) kept, 0 to go"),
        "{again}"
    );
    assert!(
        again.contains("2 run(s) given up earlier are not run again"),
        "{again}"
    );
    assert!(!again.contains("attempt 1 failed"), "{again}");

    // Interleaved, the same bad key: a block's ML-KEM run fails beside its X25519 run, whose
    // processes go on in their turns and complete; the ML-KEM runs are then tried alone, and
    // given up after their own attempts.
    let text = TINY.replace("REPS", "2").replace(
        "  pause: {enabled: false}\n",
        "  pause: {enabled: false}\n  runRetries: 1\n  interleave: {slice: 100ms}\n",
    );
    std::fs::write(&file, text).expect("write campaign");
    let out = dir.path().join("interleaved");
    let o = pqbench(&["run", s(&file), "--out", s(&out), "--keys-dir", s(&keys)]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let camp = out.join("tiny");
    for id in &x25519 {
        let dir = camp.join("runs").join(id);
        assert!(run_complete(&dir), "{id}: {err}");
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("p0").join("summary.json")).expect("summary"),
        )
        .expect("json");
        assert_eq!(summary["spec"]["turns"]["of"], 2, "{summary}");
        assert_eq!(
            summary["spec"]["measured"], "2s",
            "each arm's 1 s, in turns"
        );
        assert!(
            (summary["windowS"].as_f64().expect("windowS") - 1.0).abs() < 1e-9,
            "{summary}"
        );
    }
    for id in &mlkem {
        assert!(!run_complete(&camp.join("runs").join(id)), "{id}");
        assert!(
            err.contains(&format!("run {id} failed 2 attempt(s)")),
            "{err}"
        );
    }
    assert!(
        err.contains("2 run(s) failed every attempt and were given up"),
        "{err}"
    );

    // The run deadline: every attempt is stopped at 1 s, before its window ends.
    let text = TINY.replace("REPS", "2").replace(
        "  pause: {enabled: false}\n",
        "  pause: {enabled: false}\n  runRetries: 0\n  deadlines: {run: 1s}\n",
    );
    std::fs::write(&file, text).expect("write campaign");
    let out = dir.path().join("late");
    // The processes stopped at the deadline (SIGKILL) leave nothing in the temporary
    // directory: their records spools went under the runner's, removed after each attempt.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    let o = cmd()
        .args(["run", s(&file), "--out", s(&out)])
        .env("TMPDIR", &tmp)
        .output()
        .expect("run pqbench");
    let err = String::from_utf8_lossy(&o.stderr);
    let left: Vec<_> = common::files_under(&tmp);
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    let given: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("tiny").join("failed-runs.json"))
            .expect("failed-runs.json"),
    )
    .expect("json");
    let given = given.as_array().expect("list");
    assert_eq!(given.len(), 4, "{err}");
    for g in given {
        assert_eq!(g["reason"], "run deadline of 1s exceeded", "{g}");
        assert_eq!(g["attempts"], 1, "{g}");
    }
    // No run is left to analyse: the command fails and says so.
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("no run data"), "{err}");
}

#[test]
fn campaign_resumes_after_kill() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().expect("tmp");
    let file = tiny(dir.path(), 2);
    let out = dir.path().join("results");
    let runs = out.join("tiny").join("runs");
    // Wait until one run is complete and the next has started, then kill everything.
    let mut child = start_campaign_until_one_run(&file, &out);
    signal_group(&child, "KILL");
    let _ = child.wait();
    let kept: Vec<(std::path::PathBuf, Vec<u8>)> = std::fs::read_dir(&runs)
        .expect("runs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| run_complete(d))
        .map(|d| {
            let sums = std::fs::read(d.join("p0").join("SHA256SUMS")).expect("sums");
            (d, sums)
        })
        .collect();
    assert!(!kept.is_empty());
    // A run killed while writing its files leaves a directory without SHA256SUMS: plant
    // one for a run that has not completed.
    let plan: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("tiny").join("plan.json")).expect("plan"),
    )
    .expect("plan json");
    let pending = plan["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["runId"].as_str().expect("id").to_owned())
        .find(|id| !run_complete(&runs.join(id)))
        .expect("a run left");
    std::fs::create_dir_all(runs.join(&pending).join("p0")).expect("partial");
    std::fs::write(
        runs.join(&pending).join("p0").join("records.parquet"),
        b"PAR1 cut",
    )
    .expect("partial file");

    let o = pqbench(&["run", s(&file), "--out", s(&out)]);
    let text = ok(&o, "resumed run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("resuming: {} complete run(s) kept", kept.len())),
        "{err}"
    );
    assert!(err.contains("was cut off"), "{err}");
    assert!(text.contains("Verdicts"), "{text}");
    // Nothing measured was lost or repeated: the complete runs are byte for byte the same.
    for (d, sums) in &kept {
        assert_eq!(
            &std::fs::read(d.join("p0").join("SHA256SUMS")).expect("sums"),
            sums
        );
    }
    let incomplete = std::fs::read_dir(out.join("tiny").join("incomplete"))
        .expect("aside")
        .count();
    assert_eq!(incomplete, 1, "the cut-off run is kept aside");
    let all = std::fs::read_dir(&runs)
        .expect("runs")
        .filter_map(Result::ok)
        .filter(|e| run_complete(&e.path()))
        .count();
    assert_eq!(all, 4);

    // A third invocation runs nothing and analyses again.
    let o = pqbench(&["run", s(&file), "--out", s(&out)]);
    ok(&o, "nothing to do");
    assert!(String::from_utf8_lossy(&o.stderr).contains("4 complete run(s) kept, 0 to go"));
}

/// Everything a campaign can hold beyond the tiny one: a session-bound grid, an A/A
/// control arm, open-loop cells, and two client processes per run.
const WIDE: &str = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: wide}
spec:
  modes: [x25519, ml-kem-768-session]
  baseline: x25519
  aaControl: true
  sessions: {maxObjects: [64], maxAge: [1m]}
  cells:
    - {operation: [get], objectSize: [64KiB], concurrency: [2]}
    - {operation: [put], objectSize: [4KiB], concurrency: [2]}
    - operation: [get]
      objectSize: [64KiB]
      loop: {type: open, rates: [20, 60], threads: 2}
  repetitions: 2
  warmup: 1s
  measured: 1s
  seed: 5
  fixtures: 4
  pause: {enabled: false}
  clients: {processes: 2}
  analysis: {primary: [{cell: get-64KiB-c2}], bootstrapResamples: 2000}
";

#[test]
fn campaign_sessions_control_open_loop_two_processes() {
    let _one_at_a_time = one_at_a_time();
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("wide.yaml");
    std::fs::write(&file, WIDE).expect("write campaign");
    let out = dir.path().join("results");
    let o = pqbench(&["run", s(&file), "--out", s(&out)]);
    let text = ok(&o, "pqbench run");
    let camp = out.join("wide");

    // The design: 3 arms (x25519, the session bound, the A/A control) × 4 cells (two closed,
    // two open) × 2 repetitions.
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(camp.join("plan.json")).expect("plan"))
            .expect("plan json");
    let runs = plan["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 24);
    let arms: std::collections::BTreeSet<&str> = runs
        .iter()
        .map(|r| r["arm"].as_str().expect("arm"))
        .collect();
    assert_eq!(
        arms.into_iter().collect::<Vec<_>>(),
        ["ml-kem-768-session-b64-t60s", "x25519", "x25519-aa"]
    );
    // Every run ran as two processes with one start, and each wrote its own files.
    for r in runs {
        let id = r["runId"].as_str().expect("id");
        for p in ["p0", "p1"] {
            let d = camp.join("runs").join(id).join(p);
            assert!(d.join("SHA256SUMS").is_file(), "{id}/{p} incomplete");
            let spec: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(d.join("spec.json")).expect("spec"))
                    .expect("spec json");
            assert_eq!(spec["processes"]["count"], 2, "{id}/{p}");
            assert_eq!(spec["arm"], r["arm"], "{id}/{p}");
            if r["arm"].as_str().is_some_and(|a| a.contains("-b64-")) {
                assert_eq!(spec["session"]["maxObjects"], 64, "{id}/{p}");
            }
        }
        let (a, b) = (
            std::fs::read_to_string(camp.join("runs").join(id).join("p0/spec.json")).expect("p0"),
            std::fs::read_to_string(camp.join("runs").join(id).join("p1/spec.json")).expect("p1"),
        );
        let start = |t: &str| {
            serde_json::from_str::<serde_json::Value>(t).expect("json")["startAt"].clone()
        };
        assert!(
            start(&a).is_string() && start(&a) == start(&b),
            "{id}: one startAt"
        );
    }

    // The analysis: every valid run is a row of runs.csv; open-loop rows carry the offered
    // rate and the mean response time, closed-loop rows neither.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(camp.join("report.json")).expect("report"))
            .expect("json");
    let excluded = report["excluded_runs"].as_array().map_or(0, Vec::len);
    let csv = std::fs::read_to_string(camp.join("runs.csv")).expect("runs.csv");
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (cell, rate, resp) = (col("cell"), col("offered_rps"), col("mean_response_ms"));
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len() + excluded, 24, "{csv}");
    let mut open_rows = 0;
    for r in &rows {
        if r[cell].starts_with("get-64KiB-r") {
            open_rows += 1;
            let offered: f64 = r[rate].parse().expect("offered rate");
            assert!(offered == 20.0 || offered == 60.0, "{r:?}");
            assert!(r[resp].parse::<f64>().expect("response") > 0.0, "{r:?}");
        } else {
            assert!(r[rate].is_empty() && r[resp].is_empty(), "{r:?}");
        }
    }
    // Light open-loop runs pass validation on this kind of machine (docs/src/development/tests.md).
    assert!(open_rows > 0, "no open-loop run was valid: {text}");
    // One knee series per arm with a valid open-loop run, over the rates measured. A knee,
    // if reached (a slow machine reaches it at 60/s), lies between the two measured rates
    // around it, where the interpolated response time is twice the light-load one.
    let knees = report["knees"].as_array().expect("knees");
    assert!(!knees.is_empty(), "{report}");
    for k in knees {
        assert_eq!(k["series"], "get-64KiB-t2", "{k}");
        for p in k["points"].as_array().expect("points") {
            let r = p["rate"].as_f64().expect("rate");
            assert!(r == 20.0 || r == 60.0, "{k}");
        }
        if let Some(knee) = k["knee"].as_object() {
            let f = |name: &str| knee[name].as_f64().unwrap_or_else(|| panic!("{name}: {k}"));
            let (lo, hi, r) = (f("lower_rate"), f("upper_rate"), f("rate"));
            assert_eq!((lo, hi), (20.0, 60.0), "{k}");
            assert!(lo <= r && r <= hi, "{k}");
        }
    }
    // Comparisons name the arms; the A/A control is its own family.
    for c in report["comparisons"].as_array().expect("comparisons") {
        let mode = c["mode"].as_str().expect("mode");
        assert_ne!(mode, "x25519");
        assert_eq!(c["baseline"], "x25519");
        assert_eq!(c["family"] == "control", mode == "x25519-aa", "{c}");
    }
    // Bounded sessions (study V-F): the session arm's PUTs used roots of at most 64
    // objects, so at least one key establishment per 64 objects; its GETs found the
    // fixtures' roots in the receiver's cache.
    let md = std::fs::read_to_string(camp.join("report.md")).expect("report.md");
    assert!(md.contains("## Bounded sessions (section V-F)"), "{md}");
    assert!(md.contains("## Drift within runs"), "{md}");
    let sessions = report["sessions"].as_array().expect("sessions");
    let put = sessions
        .iter()
        .find(|x| x["cell"] == "put-4KiB-c2")
        .unwrap_or_else(|| panic!("no PUT session row: {sessions:?}"));
    assert_eq!(put["mode"], "ml-kem-768-session-b64-t60s");
    assert_eq!(put["max_objects"], 64);
    let ke = put["key_establishments_per_object"].as_f64().expect("ke");
    assert!((1.0 / 64.0..=1.0).contains(&ke), "{put}");
    let per_root = put["objects_per_root"].as_f64().expect("objects per root");
    assert!(per_root > 1.0 && per_root <= 64.0, "{put}");
    assert!((ke * per_root - 1.0).abs() < 1e-9, "{put}");
    assert!(
        put["versus"].as_array().is_some_and(|v| !v.is_empty()),
        "{put}"
    );
    let get = sessions
        .iter()
        .find(|x| x["cell"] == "get-64KiB-c2")
        .unwrap_or_else(|| panic!("no GET session row: {sessions:?}"));
    let hit = get["root_cache_hit_rate"].as_f64().expect("hit rate");
    assert!(hit > 0.5, "{get}");
    // Drift figures for every arm of every cell with valid runs.
    let drift = report["drift"].as_array().expect("drift");
    assert!(
        drift.iter().any(|d| d["cell"] == "put-4KiB-c2"),
        "{drift:?}"
    );
}

/// `--require-pq` as a user gives it (issue 37): `open` and `get` of a v2 object that mixes
/// ML-KEM-768 with X25519 (sealed with `--allow-mixed`) are refused naming the classical
/// entry, nothing written; without the flag, and for an object whose recipients are all
/// post-quantum, they open; a v1 reader of a classical mode cannot require it.
#[test]
fn require_pq_refuses_objects_with_a_classical_recipient() {
    let _one_at_a_time = one_at_a_time();
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let srv = serve(&t.join("s3"), &t.join("s3.env"));
    let pq = keys(&t.join("kpq"), "ml-kem-768");
    let hybrid = keys(&t.join("kxw"), "x-wing");
    let classic = keys(&t.join("kx"), "x25519");
    let input = t.join("in.bin");
    std::fs::write(&input, b"require post-quantum").expect("write");
    let root = t.join("local");
    let seal = |key: &str, recipients: &[&Keys], mixed: bool| {
        let mut a = vec!["seal", "--format", "v2", "--tenant", "t1", "--bucket", "b1"];
        a.extend(["--key", key, "--in", s(&input), "--out", s(&root)]);
        for r in recipients {
            a.extend(r.seal.iter().map(String::as_str));
        }
        if mixed {
            a.push("--allow-mixed");
        }
        ok(&pqbench(&a), "seal").trim().to_owned()
    };
    let mixed = seal("mixed", &[&pq, &classic], true);
    let pure = seal("pure", &[&pq, &hybrid], false);
    let open = |key: &str, version: &str, require: bool| {
        let out = t.join(format!("{key}-{require}.bin"));
        let mut a = vec!["open", "--format", "v2", "--tenant", "t1", "--bucket", "b1"];
        a.extend(["--key", key, "--version", version, "--in", s(&root)]);
        a.extend(["--out", s(&out)]);
        a.extend(pq.open.iter().map(String::as_str));
        if require {
            a.push("--require-pq");
        }
        (pqbench(&a), out)
    };
    let (o, out) = open("mixed", &mixed, true);
    let e = err(&o, "open --require-pq of a mixed object");
    assert!(
        e.contains("refused by --require-pq: recipient 1 is X25519, a classical KEM"),
        "{e}"
    );
    assert!(!out.exists(), "nothing written");
    let (o, _) = open("mixed", &mixed, false);
    ok(&o, "open of a mixed object without --require-pq");
    let (o, out) = open("pure", &pure, true);
    ok(&o, "open --require-pq of ML-KEM-768 and X-Wing");
    assert_eq!(std::fs::read(out).expect("out"), b"require post-quantum");

    // On S3: get refuses the same object.
    let mut put = vec![
        "put",
        "--bucket",
        "cli-bucket",
        "--key",
        "mixed",
        "--format",
        "v2",
    ];
    put.extend(["--header", "prefix", "--allow-mixed", "--in", s(&input)]);
    put.extend(pq.seal.iter().map(String::as_str));
    put.extend(classic.seal.iter().map(String::as_str));
    ok(&with_env(&srv, &put), "put mixed");
    let dest = t.join("got.bin");
    let mut get = vec![
        "get",
        "--bucket",
        "cli-bucket",
        "--key",
        "mixed",
        "--format",
        "v2",
    ];
    get.extend(["--require-pq", "--out", s(&dest)]);
    get.extend(pq.open.iter().map(String::as_str));
    let e = err(&with_env(&srv, &get), "get --require-pq of a mixed object");
    assert!(
        e.contains("refused by --require-pq: recipient 1 is X25519"),
        "{e}"
    );
    assert!(!dest.exists());

    // Readers that could open nothing under the requirement say so.
    let mut a = vec!["open", "--format", "v2", "--tenant", "t1", "--bucket", "b1"];
    a.extend(["--key", "mixed", "--version", &mixed, "--in", s(&root)]);
    a.extend(["--out", s(&dest), "--require-pq"]);
    a.extend(classic.open.iter().map(String::as_str));
    let e = err(&pqbench(&a), "an X25519 reader requiring post-quantum");
    assert!(e.contains("every object would be refused"), "{e}");
    let mut a = vec!["open", "--tenant", "t1", "--bucket", "b1", "--key", "x"];
    a.extend(["--version", &mixed, "--in", s(&root), "--out", s(&dest)]);
    a.extend(["--expect-mode", "x25519", "--require-pq"]);
    a.extend(classic.open.iter().map(String::as_str));
    let e = err(&pqbench(&a), "a v1 x25519 reader requiring post-quantum");
    assert!(
        e.contains("x25519 is not post-quantum key establishment"),
        "{e}"
    );
}

/// `get --format v2` without `--version` when the newest version is v1 (issue 37): said
/// plainly, with how to read it, rather than an older v2 version handed out as the latest
/// or "not committed (no object.v2)"; the v2 version named by `--version` still opens.
#[test]
fn get_says_when_the_newest_version_is_in_the_other_format() {
    let _one_at_a_time = one_at_a_time();
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let srv = serve(&t.join("s3"), &t.join("s3.env"));
    let k = keys(&t.join("k"), "ml-kem-768");
    let input = t.join("in.bin");
    std::fs::write(&input, b"two formats").expect("write");
    let put = |format: &[&str]| {
        let mut a = vec!["put", "--bucket", "cli-bucket", "--key", "doc"];
        a.extend(format);
        a.extend(["--in", s(&input)]);
        a.extend(k.seal.iter().map(String::as_str));
        let out = ok(&with_env(&srv, &a), "put");
        out.lines().next().expect("version").to_owned()
    };
    let v2 = put(&["--format", "v2"]);
    let v1 = put(&["--mode", "ml-kem-768"]);
    let dest = t.join("out.bin");
    let mut get = vec![
        "get",
        "--bucket",
        "cli-bucket",
        "--key",
        "doc",
        "--format",
        "v2",
    ];
    get.extend(["--out", s(&dest)]);
    get.extend(k.open.iter().map(String::as_str));
    let e = err(&with_env(&srv, &get), "get v2 when the newest is v1");
    assert!(
        e.contains(&format!(
            "the newest version of s3://cli-bucket/doc is {v1}, in format v1: read it with --format v1"
        )),
        "{e}"
    );
    assert!(!dest.exists());
    get.extend(["--version", &v2]);
    ok(&with_env(&srv, &get), "get v2 by its version");
    assert_eq!(std::fs::read(&dest).expect("out"), b"two formats");
}
