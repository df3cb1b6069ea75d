//! Helpers shared by the test binaries that run `pqbench` as a process.

use std::path::{Path, PathBuf};
use std::process::Output;

/// An example's text with each `(from, to)` replaced; every `from` must be in the file as
/// it ships, so that a change to the example shows in its test instead of passing unnoticed.
#[allow(dead_code, reason = "not every test binary shortens an example")]
pub(crate) fn edited_example(text: &str, example: &str, edits: &[(&str, &str)]) -> String {
    let mut out = text.to_owned();
    for (from, to) in edits {
        assert!(out.contains(from), "{example} no longer holds {from:?}");
        out = out.replace(from, to);
    }
    out
}

/// The stdout of a command that must have succeeded; its stderr in the panic otherwise.
pub(crate) fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf8")
}

/// `pqbench` as a process with `XDG_STATE_HOME` at `state`, so a campaign's keys go to a
/// temporary directory, never the user's.
#[allow(dead_code, reason = "not every test binary runs campaigns")]
pub(crate) fn pqbench_in(state: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .env("XDG_STATE_HOME", state)
        .args(args)
        .output()
        .expect("run pqbench")
}

/// A path as an argument.
pub(crate) fn s(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}

/// Every file under `dir`, at any depth.
#[allow(dead_code, reason = "not every test binary walks a directory")]
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Whether a run's every process directory (`p<index>/`; the gate's files lie beside
/// them) has its checksum manifest.
#[allow(dead_code, reason = "not every test binary watches runs")]
pub(crate) fn run_complete(run: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(run) else {
        return false;
    };
    let ps: Vec<PathBuf> = entries
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(run::summary::files::process_index)
                .is_some()
        })
        .collect();
    !ps.is_empty() && ps.iter().all(|p| p.join("SHA256SUMS").exists())
}
