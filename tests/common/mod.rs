//! Helpers shared by the test binaries that run `pqbench` as a process.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

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

/// Kills the whole process group of `child` (spawned with `process_group(0)`) with SIGKILL.
#[allow(dead_code, reason = "not every test binary kills processes")]
pub(crate) fn kill_group(child: &Child) {
    let sent = std::process::Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{}", child.id())])
        .status()
        .expect("kill");
    assert!(sent.success(), "kill -KILL the process group");
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

/// A running `pqbench serve-kms`; killed when dropped.
#[allow(dead_code, reason = "not every test binary runs a key service")]
pub(crate) struct KmsService {
    pub(crate) child: Child,
    pub(crate) env_file: PathBuf,
    /// (key id, key spec) of the keys it printed.
    pub(crate) keys: Vec<(String, String)>,
}

impl Drop for KmsService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[allow(dead_code, reason = "not every test binary uses every helper")]
impl KmsService {
    pub(crate) fn start(keys: &Path, env_file: PathBuf, extra: &[&str]) -> Self {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pqbench"))
            .args(["serve-kms", "--keys", s(keys), "--env-file", s(&env_file)])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start pqbench serve-kms");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut keys_seen = Vec::new();
        for line in out.lines() {
            let line = line.expect("serve-kms output");
            if let Some(rest) = line.strip_prefix("key ") {
                let mut f = rest.split_whitespace();
                keys_seen.push((
                    f.next().expect("id").to_owned(),
                    f.next().expect("spec").to_owned(),
                ));
            }
            if line.starts_with("(Ctrl-C") {
                break;
            }
        }
        Self {
            child,
            env_file,
            keys: keys_seen,
        }
    }

    pub(crate) fn key(&self, spec: &str) -> &str {
        &self
            .keys
            .iter()
            .find(|(_, sp)| sp == spec)
            .unwrap_or_else(|| panic!("no {spec} key in {:?}", self.keys))
            .0
    }

    /// The env file's variables.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        std::fs::read_to_string(&self.env_file)
            .expect("env file")
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}
