//! Records the git commit the binary is built from (`PQBENCH_GIT_COMMIT`), for run
//! summaries. Outside a git checkout (a crate tarball, a container build without `.git`) the
//! variable is unset and summaries say `unknown`; an explicit `PQBENCH_GIT_COMMIT` in the
//! build environment wins (Docker builds pass it as a build argument).

use std::process::Command;

fn main() {
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
