//! Secrets never leave the key store (issue 22): a whole local campaign (`pqbench run` with
//! its embedded S3 server, PUT and GET cells, an X25519, an ML-KEM-768 and a PSK arm), its
//! re-analysis (`pqbench analyze`) and validation (`pqbench validate`), and then every byte they produced is searched for every secret of the
//! campaign: the S3 secret access key the server and workers share, and each secret key
//! (PSK and recipient keys) in every form a leak could take (base64 as stored, hex, and the
//! raw bytes, which a Parquet file or a plot could carry).
//!
//! The outputs searched: the stdout and stderr of every command, and every file under the
//! results directory (the campaign copy, plan, run files with their Parquet tables, failed
//! attempts, runs.csv, report.md, report.json, the plots). The key store itself
//! (`$XDG_STATE_HOME/pqbench/keys/`) is where the secrets belong and is not searched; that
//! it lies outside the results (and outside any git work tree) is `pqbench run`'s rule.

#[allow(dead_code, reason = "the shared helpers this test does not use")]
mod common;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use common::{pqbench_in, s};

const CAMPAIGN: &str = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: secrets}
spec:
  modes: [x25519, ml-kem-768, psk]
  baseline: x25519
  cells:
    - {operation: [put, get], objectSize: [4KiB], concurrency: [2]}
  repetitions: 2
  warmup: 1s
  measured: 1s
  seed: 31
  fixtures: 2
  pause: {enabled: false}
  analysis: {bootstrapResamples: 1000}
";

/// A secret and the byte strings that would show it.
struct Secret {
    name: String,
    forms: Vec<Vec<u8>>,
}

/// The campaign's secrets, read from its key store.
fn secrets(keys: &Path) -> Vec<Secret> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(keys).expect("key store") {
        let path = e.expect("entry").path();
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&path).expect("key file");
        if name == "s3.env" {
            let secret = text
                .lines()
                .find_map(|l| l.strip_prefix("AWS_SECRET_ACCESS_KEY="))
                .expect("the S3 secret in s3.env");
            out.push(Secret {
                name: "S3 secret access key".into(),
                forms: vec![secret.as_bytes().to_vec()],
            });
        } else if name.ends_with(".key") {
            let v: serde_json::Value = serde_json::from_str(&text).expect("secret key file");
            let b64 = v["key"].as_str().expect("key").to_owned();
            let raw = base64::engine::general_purpose::STANDARD
                .decode(&b64)
                .expect("base64 key");
            assert!(
                raw.len() >= 16,
                "{name}: a secret key of {} bytes",
                raw.len()
            );
            out.push(Secret {
                name: format!("secret key {name}"),
                forms: vec![b64.into_bytes(), hex::encode(&raw).into_bytes(), raw],
            });
        }
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn no_secret_of_a_whole_campaign_appears_in_any_output() {
    let tmp = tempfile::tempdir().expect("dir");
    let state = tmp.path().join("state");
    let out = tmp.path().join("out");
    let file = tmp.path().join("secrets.yaml");
    std::fs::write(&file, CAMPAIGN).expect("campaign");

    let run = pqbench_in(&state, &["run", s(&file), "--out", s(&out)]);
    assert!(
        run.status.success(),
        "pqbench run: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results = out.join("secrets");
    let analyze = pqbench_in(&state, &["analyze", s(&results)]);
    assert!(
        analyze.status.success(),
        "{}",
        String::from_utf8_lossy(&analyze.stderr)
    );
    let validate = pqbench_in(&state, &["validate", s(&results.join("runs")), "--verbose"]);
    assert!(
        validate.status.success(),
        "{}",
        String::from_utf8_lossy(&validate.stdout)
    );

    let keys: Vec<PathBuf> = std::fs::read_dir(state.join("pqbench/keys"))
        .expect("the key store")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(
        keys.len(),
        1,
        "one key directory for the campaign: {keys:?}"
    );
    let secrets = secrets(&keys[0]);
    let names: Vec<&str> = secrets.iter().map(|s| s.name.as_str()).collect();
    // What was seeded: the S3 secret and the three arms' keys.
    assert_eq!(secrets.len(), 4, "{names:?}");

    // The search finds each secret where it is stored (so an empty result means absent,
    // not a search that cannot match).
    let store: Vec<u8> = std::fs::read_dir(&keys[0])
        .expect("key store")
        .flat_map(|e| std::fs::read(e.expect("entry").path()).expect("key file"))
        .collect();
    for secret in &secrets {
        assert!(
            contains(&store, &secret.forms[0]),
            "{} not found in the key store",
            secret.name
        );
    }

    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    for (what, o) in [
        ("run", &run),
        ("analyze", &analyze),
        ("validate", &validate),
    ] {
        outputs.push((format!("pqbench {what} stdout"), o.stdout.clone()));
        outputs.push((format!("pqbench {what} stderr"), o.stderr.clone()));
    }
    let files = common::files_under(&results);
    let parquet = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .count();
    assert!(parquet >= 24, "12 runs' tables: {parquet} Parquet files");
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("12/12 runs done"),
        "the run's progress is on stderr"
    );
    for f in &files {
        outputs.push((
            f.strip_prefix(&out)
                .expect("under out")
                .display()
                .to_string(),
            std::fs::read(f).expect("read output"),
        ));
    }

    let mut leaks = Vec::new();
    for (where_, bytes) in &outputs {
        for secret in &secrets {
            if secret.forms.iter().any(|form| contains(bytes, form)) {
                leaks.push(format!("{} in {where_}", secret.name));
            }
        }
    }
    let searched: usize = outputs.iter().map(|(_, b)| b.len()).sum();
    println!(
        "searched {} outputs ({searched} bytes, {parquet} Parquet files) for {} secrets \
         ({names:?}) in {} forms: {} found",
        outputs.len(),
        secrets.len(),
        secrets.iter().map(|s| s.forms.len()).sum::<usize>(),
        leaks.len()
    );
    assert!(leaks.is_empty(), "secrets leaked:\n{}", leaks.join("\n"));
}
