//! Records the git commit the binary is built from (`PQBENCH_GIT_COMMIT`), for run
//! summaries. Outside a git checkout (a crate tarball, a container build without `.git`) the
//! variable is unset and summaries say `unknown`; an explicit `PQBENCH_GIT_COMMIT` in the
//! build environment wins (Docker builds pass it as a build argument).

use std::process::Command;

/// Crates whose versions decide the measured code paths, recorded in run summaries.
const CRATES: &[&str] = &[
    "aws-lc-rs",
    "aws-lc-sys",
    "ml-kem",
    "x-wing",
    "x25519-dalek",
    "rsa",
    "aes-gcm",
    "hkdf",
    "aws-sdk-s3",
    "hyper",
    "tokio",
    "mimalloc",
];

fn main() {
    crate_versions();
    println!("cargo:rerun-if-env-changed=PQBENCH_GIT_COMMIT");
    if let Ok(c) = std::env::var("PQBENCH_GIT_COMMIT") {
        println!("cargo:rustc-env=PQBENCH_GIT_COMMIT={c}");
        return;
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = std::path::Path::new(&dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(r).display());
        }
    }
    if let Some(c) = git(&["rev-parse", "HEAD"]) {
        println!("cargo:rustc-env=PQBENCH_GIT_COMMIT={c}");
    }
}

/// `PQBENCH_CRATES`: "name version, …" of [`CRATES`] as resolved in the workspace's
/// `Cargo.lock`; `RUSTC_VERSION`: the compiler.
fn crate_versions() {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    let mut found = Vec::new();
    let mut name: Option<&str> = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = Some(n.trim_matches('"'));
        } else if let (Some(n), Some(v)) = (name, line.strip_prefix("version = ")) {
            if CRATES.contains(&n) {
                found.push(format!("{n} {}", v.trim_matches('"')));
            }
            name = None;
        }
    }
    println!("cargo:rustc-env=PQBENCH_CRATES={}", found.join(", "));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let v = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    println!("cargo:rustc-env=PQBENCH_RUSTC={v}");
}
