//! A manifest above FORMAT.md's 64 KiB limit is refused without being read (issue 16 item
//! 5: `get` of a 400 MiB `manifest.json` from `serve-s3` grew the client to 1.19 GB RSS
//! before refusing it; `open` of a 128 MiB local manifest used 144 MiB).
//!
//! A 100 MiB `manifest.json`, planted on disk both in a local layout and in the bucket
//! directory of a `pqbench serve-s3` process, is read by `pqbench open` and `pqbench get`
//! as processes. Each must fail naming the limit, leave no output, and stay under a memory
//! bound well below the manifest's size: the peak RSS of the largest waited-for child
//! (`getrusage(RUSAGE_CHILDREN)`), read after each command while the server (not yet
//! waited for) still runs. This binary holds one test, so no other child counts; the
//! `keygen` child that comes first is small and only makes the bound stricter.

use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use nix::sys::resource::{UsageWho, getrusage};

const MANIFEST_SIZE: usize = 100 << 20;
/// The bound: a client that read the manifest into memory would be above it.
const PEAK_RSS_BOUND_MIB: i64 = 60;
const VERSION: &str = "01937a3c-8f00-7000-8000-000000000001";

fn pqbench(args: &[&str], env: &[(String, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("run pqbench")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}

fn children_peak_rss_mib() -> i64 {
    getrusage(UsageWho::RUSAGE_CHILDREN)
        .expect("getrusage")
        .max_rss()
        / 1024
}

/// Writes a 100 MiB `manifest.json` (spaces then `{}`: JSON, only too large) and a small
/// `data.enc` under `root/<key>.pqcs/<version>/`.
fn plant(root: &Path, key: &str) {
    let dir = root.join(format!("{key}.pqcs")).join(VERSION);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut f = std::fs::File::create(dir.join("manifest.json")).expect("create");
    let block = vec![b' '; 1 << 20];
    for _ in 0..MANIFEST_SIZE >> 20 {
        f.write_all(&block).expect("write");
    }
    f.write_all(b"{}").expect("write");
    std::fs::write(dir.join("data.enc"), [0u8; 32]).expect("write");
}

fn refused_within_bound(o: &Output, out: &Path, what: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{what} accepted a 100 MiB manifest");
    assert!(stderr.contains("65536-byte limit"), "{what}: {stderr}");
    assert!(!out.exists(), "{what} left an output file");
    let peak = children_peak_rss_mib();
    assert!(
        peak < PEAK_RSS_BOUND_MIB,
        "{what}: peak RSS {peak} MiB, bound {PEAK_RSS_BOUND_MIB} MiB: the manifest was read into memory"
    );
    eprintln!("{what}: refused; largest child so far peaked at {peak} MiB RSS");
}

#[test]
fn a_100_mib_manifest_is_refused_by_open_and_get_without_being_read() {
    let tmp = tempfile::tempdir().expect("tmp");
    let t = tmp.path();
    let keys = t.join("keys");
    let o = pqbench(&["keygen", "--mode", "x25519", "--out", s(&keys)], &[]);
    assert!(o.status.success(), "keygen");
    let secret = keys.join("recipient.key");

    // Local layout: `pqbench open`.
    let local = t.join("local");
    plant(&local, "big");
    let out = t.join("open.out");
    let o = pqbench(
        &[
            "open",
            "--expect-mode",
            "x25519",
            "--secret",
            s(&secret),
            "--tenant",
            "t",
            "--bucket",
            "b",
            "--key",
            "big",
            "--version",
            VERSION,
            "--in",
            s(&local),
            "--out",
            s(&out),
        ],
        &[],
    );
    refused_within_bound(&o, &out, "open");

    // S3: `pqbench get` from a serve-s3 process whose bucket directory holds the object.
    let s3dir = t.join("s3");
    let mut server = Server(
        Command::new(env!("CARGO_BIN_EXE_pqbench"))
            .args(["serve-s3", "--dir", s(&s3dir), "--bucket", "lim"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("serve-s3"),
    );
    let mut lines = std::io::BufReader::new(server.0.stdout.take().expect("stdout"));
    let mut env = Vec::new();
    while env.len() < 3 {
        let mut line = String::new();
        assert!(
            lines.read_line(&mut line).expect("line") > 0,
            "serve-s3 ended"
        );
        if let Some((k, v)) = line
            .trim_end()
            .strip_prefix("export ")
            .and_then(|l| l.split_once('='))
        {
            env.push((k.to_owned(), v.to_owned()));
        }
    }
    plant(&s3dir.join("lim"), "big");
    let out = t.join("get.out");
    let o = pqbench(
        &[
            "get",
            "--bucket",
            "lim",
            "--tenant",
            "t",
            "--key",
            "big",
            "--version",
            VERSION,
            "--expect-mode",
            "x25519",
            "--secret",
            s(&secret),
            "--out",
            s(&out),
        ],
        &env,
    );
    // Measured before the server is waited for, so only the client counts.
    refused_within_bound(&o, &out, "get");
    drop(server);
}

/// The `serve-s3` child; killed and waited for when dropped (also when an assertion fails).
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
