//! The CLI reference of the user guide (`docs/src/reference/cli/`) is what the binary
//! renders from its clap definitions: the committed pages pass `--check`, an edited,
//! deleted or stale page fails it by name, the rendering does not depend on the
//! environment it runs in, and every page is reachable from the book's SUMMARY.md.
//! Run as a user would: the binary as a process.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DOCS: &str = "docs/src/reference/cli";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pqbench(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pqbench"));
    cmd.args(args).current_dir(repo());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("pqbench runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn md_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    names
}

fn generate(dir: &Path, envs: &[(&str, &str)]) {
    let d = dir.to_str().expect("utf-8 path");
    let o = pqbench(&["cli-reference", d], envs);
    assert!(o.status.success(), "cli-reference failed: {}", stderr(&o));
}

#[test]
fn committed_reference_is_current() {
    let o = pqbench(&["cli-reference", DOCS, "--check"], &[]);
    assert!(
        o.status.success(),
        "the committed CLI reference is stale; run `make docs-reference`: {}",
        stderr(&o)
    );
    // A page per visible command: the envelope commands, the S3 ones and the campaign ones.
    let names = md_files(&repo().join(DOCS));
    for want in [
        "index.md",
        "seal.md",
        "put.md",
        "get.md",
        "run.md",
        "analyze.md",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    // Hidden commands are internal and not documented.
    assert!(
        !names
            .iter()
            .any(|n| n == "run-spec.md" || n == "cli-reference.md")
    );
}

#[test]
fn help_of_format_commands_covers_v2() {
    let dir = repo().join(DOCS);
    for page in ["seal.md", "open.md", "inspect.md", "put.md", "get.md"] {
        let text = fs::read_to_string(dir.join(page)).expect("page");
        assert!(text.contains("v2"), "{page} does not mention format v2");
        assert!(text.contains("--format"), "{page} has no --format");
    }
}

#[test]
fn drift_is_named_by_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("cli");
    generate(&dir, &[]);
    let d = dir.to_str().expect("utf-8 path");
    let clean = pqbench(&["cli-reference", d, "--check"], &[]);
    assert!(clean.status.success(), "{}", stderr(&clean));

    // A hand edit, a deleted page, and a generated page of a command that no longer exists.
    let seal = dir.join("seal.md");
    let text = fs::read_to_string(&seal).expect("seal.md");
    fs::write(&seal, text.replace("Plaintext file", "Plain-text file")).expect("edit");
    fs::remove_file(dir.join("gc.md")).expect("rm");
    let index = fs::read_to_string(dir.join("index.md")).expect("index");
    let marker = index.lines().next().expect("first line");
    fs::write(dir.join("frobnicate.md"), format!("{marker}\n# old\n")).expect("stale");
    // A hand-written page beside them is neither reported nor touched.
    fs::write(dir.join("notes.md"), "# mine\n").expect("notes");

    let o = pqbench(&["cli-reference", d, "--check"], &[]);
    assert!(!o.status.success(), "--check passed on an edited reference");
    let err = stderr(&o);
    for want in [
        "seal.md differs",
        "gc.md is missing",
        "frobnicate.md is stale",
    ] {
        assert!(err.contains(want), "{want:?} not in: {err}");
    }
    assert!(!err.contains("notes.md"), "{err}");
    assert!(err.contains("make docs-reference"), "{err}");

    // Regenerating repairs it, removes the stale page and keeps the hand-written one.
    generate(&dir, &[]);
    let again = pqbench(&["cli-reference", d, "--check"], &[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!dir.join("frobnicate.md").exists());
    assert_eq!(
        fs::read_to_string(dir.join("notes.md")).expect("notes"),
        "# mine\n"
    );
}

#[test]
fn rendering_ignores_the_environment() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let plain = tmp.path().join("plain");
    let noisy = tmp.path().join("noisy");
    generate(&plain, &[]);
    let secret = "wJalrXUtnFEMI-not-a-real-secret";
    generate(
        &noisy,
        &[
            ("COLUMNS", "40"),
            ("AWS_REGION", "eu-north-9"),
            ("AWS_ENDPOINT_URL", "http://10.9.8.7:9000"),
            ("AWS_SECRET_ACCESS_KEY", secret),
        ],
    );
    assert_eq!(md_files(&plain), md_files(&noisy));
    for name in md_files(&plain) {
        let a = fs::read_to_string(plain.join(&name)).expect("plain");
        let b = fs::read_to_string(noisy.join(&name)).expect("noisy");
        assert_eq!(a, b, "{name} depends on the environment");
        for leak in ["eu-north-9", "10.9.8.7", secret] {
            assert!(!b.contains(leak), "{name} shows {leak}");
        }
    }
}

#[test]
fn every_page_is_in_the_book() {
    let summary = fs::read_to_string(repo().join("docs/src/SUMMARY.md")).expect("SUMMARY.md");
    for name in md_files(&repo().join(DOCS)) {
        let link = format!("(reference/cli/{name})");
        assert!(
            summary.contains(&link),
            "docs/src/SUMMARY.md does not link {link}"
        );
    }
}
