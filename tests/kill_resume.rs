//! `pqbench run` killed for real (issue 22): SIGKILL to the campaign's whole process group
//! (the CLI, its embedded S3 server, its worker processes) at 10 instants spread over a
//! small campaign, resuming after each, then once more to the end. The instants: one at
//! start-up (key generation), one while a run writes its files (a `p0/` with data files and
//! no `SHA256SUMS` yet), one during the analysis (every planned run complete, no report
//! yet), and seven at seeded random delays, which land in fixtures, warm-ups and measured
//! windows. Afterwards:
//!
//! - every planned run exists exactly once, complete (`runs/<id>/p0/SHA256SUMS`), and no
//!   other run directory is complete;
//! - every run that was complete before a kill is byte for byte the same at the end (a
//!   complete run is never rewritten, never run again);
//! - the report the resumed campaign wrote equals the report of a further, uninterrupted
//!   invocation over the same files (nothing of the kills leaks into the analysis but what
//!   the files hold).
//!
//! A second test kills `pqbench keygen` at random instants of its short life: a key file
//! is then absent or whole, never half-written (a half-written key would be taken for a key
//! by the next run and fail it forever).
//!
//! The phase each kill landed in is printed (`cargo test --test kill_resume -- --nocapture`).

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{kill_group, ok, s};
use sha2::{Digest as _, Sha256};

const CAMPAIGN: &str = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: killed}
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells:
    - {operation: [get], objectSize: [16KiB], concurrency: [1]}
  repetitions: 4
  warmup: 1s
  measured: 1s
  seed: 22
  fixtures: 4
  pause: {enabled: false}
  analysis: {primary: [{cell: get-16KiB-c1}], bootstrapResamples: 1000}
";

/// `pqbench` as a process, with its key store and its temporary files under `state`: a
/// SIGKILL skips every clean-up, so what a killed run had in its temporary directory (the
/// fio probe's 64 MiB file, the runs' scratch) goes with the test's directory instead of
/// filling the host's `/tmp` run after run.
fn cmd(state: &Path) -> Command {
    let tmp = state.join("tmp");
    std::fs::create_dir_all(&tmp).expect("TMPDIR");
    let mut c = Command::new(env!("CARGO_BIN_EXE_pqbench"));
    c.env("XDG_STATE_HOME", state).env("TMPDIR", tmp);
    c
}

/// When to kill one invocation.
#[derive(Clone, Copy, Debug)]
enum Trigger {
    /// This long after it started.
    After(Duration),
    /// As soon as a run is writing its files (data files in `p0/`, no `SHA256SUMS`), or
    /// after the duration if none is seen by then.
    WritingFiles(Duration),
    /// As soon as every planned run is complete (the analysis is under way).
    Analysis,
}

struct Campaign {
    file: PathBuf,
    out: PathBuf,
    state: PathBuf,
}

impl Campaign {
    fn dir(&self) -> PathBuf {
        self.out.join("killed")
    }

    fn runs(&self) -> PathBuf {
        self.dir().join("runs")
    }

    fn start(&self, stderr: &Path) -> Child {
        cmd(&self.state)
            .args(["run", s(&self.file), "--out", s(&self.out)])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(stderr).expect("stderr file"))
            .process_group(0)
            .spawn()
            .expect("spawn pqbench run")
    }

    fn planned(&self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(self.dir().join("plan.json")) else {
            return Vec::new();
        };
        let plan: serde_json::Value = serde_json::from_str(&text).expect("plan.json");
        plan["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| r["runId"].as_str().expect("runId").to_owned())
            .collect()
    }

    /// Every complete run directory under `runs/`, with the SHA-256 of each of its files.
    fn complete(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut out = BTreeMap::new();
        for e in std::fs::read_dir(self.runs())
            .into_iter()
            .flatten()
            .flatten()
        {
            let p0 = e.path().join("p0");
            if !p0.join("SHA256SUMS").is_file() {
                continue;
            }
            let files = std::fs::read_dir(&p0)
                .expect("p0")
                .flatten()
                .map(|f| {
                    let bytes = std::fs::read(f.path()).expect("run file");
                    (
                        f.file_name().to_string_lossy().into_owned(),
                        hex::encode(Sha256::digest(bytes)),
                    )
                })
                .collect();
            out.insert(e.file_name().to_string_lossy().into_owned(), files);
        }
        out
    }

    /// A run writing its files: data files in `p0/` and no `SHA256SUMS` yet.
    fn writing(&self) -> bool {
        std::fs::read_dir(self.runs())
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let p0 = e.path().join("p0");
                !p0.join("SHA256SUMS").exists()
                    && (p0.join("summary.json").exists() || p0.join("process.json").exists())
            })
    }
}

/// Runs one invocation until `trigger`, kills it, and says where it was. `None` when the
/// invocation ended by itself first.
fn run_until(c: &Campaign, trigger: Trigger, n: usize) -> Option<String> {
    let stderr = c.out.with_file_name(format!("stderr-{n}.txt"));
    let mut child = c.start(&stderr);
    let t0 = Instant::now();
    let hard = Duration::from_secs(300);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let err = std::fs::read_to_string(&stderr).unwrap_or_default();
            assert!(status.success(), "invocation {n} failed by itself: {err}");
            return None;
        }
        let elapsed = t0.elapsed();
        let fire = match trigger {
            Trigger::After(d) => elapsed >= d,
            Trigger::WritingFiles(d) => c.writing() || elapsed >= d,
            Trigger::Analysis => {
                let planned = c.planned();
                !planned.is_empty() && {
                    let done = c.complete();
                    planned.iter().all(|id| done.contains_key(id))
                }
            }
        };
        if fire {
            let writing = c.writing();
            kill_group(&child);
            let _ = child.wait();
            let err = std::fs::read_to_string(&stderr).unwrap_or_default();
            let last = err
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("(nothing printed yet)");
            let phase = if writing {
                "a run writing its files".to_owned()
            } else {
                format!("after: {last}")
            };
            return Some(format!(
                "kill {n} at {:.2} s ({trigger:?}), {} run(s) complete; {phase}",
                elapsed.as_secs_f64(),
                c.complete().len()
            ));
        }
        assert!(
            elapsed < hard,
            "invocation {n} made no progress in {hard:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A small deterministic generator for the random delays (SplitMix64).
fn delays(seed: u64, n: usize, lo: Duration, hi: Duration) -> Vec<Duration> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let span = u64::try_from((hi - lo).as_millis()).expect("span");
            lo + Duration::from_millis(z % span)
        })
        .collect()
}

#[test]
fn campaign_survives_ten_sigkills_with_no_run_lost_or_repeated() {
    let tmp = tempfile::tempdir().expect("tmp");
    let c = Campaign {
        file: tmp.path().join("killed.yaml"),
        out: tmp.path().join("results"),
        state: tmp.path().join("state"),
    };
    std::fs::write(&c.file, CAMPAIGN).expect("write campaign");

    let mut triggers = vec![Trigger::After(Duration::from_millis(60))];
    let random = delays(
        22,
        7,
        Duration::from_millis(300),
        Duration::from_millis(3500),
    );
    triggers.extend(random[..3].iter().map(|&d| Trigger::After(d)));
    triggers.push(Trigger::WritingFiles(Duration::from_secs(8)));
    triggers.extend(random[3..].iter().map(|&d| Trigger::After(d)));
    triggers.push(Trigger::Analysis);

    let mut seen: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut kills = Vec::new();
    for (n, trigger) in triggers.into_iter().enumerate() {
        let Some(what) = run_until(&c, trigger, n + 1) else {
            panic!(
                "invocation {} ended before its kill ({trigger:?}): {kills:#?}",
                n + 1
            );
        };
        // A complete run is never rewritten: what was complete is unchanged, byte for byte.
        let now = c.complete();
        for (id, files) in &seen {
            assert_eq!(now.get(id), Some(files), "{id} changed after {what}");
        }
        seen = now;
        println!("{what}");
        kills.push(what);
    }
    assert_eq!(kills.len(), 10);

    // Resumed to the end.
    let o = cmd(&c.state)
        .args(["run", s(&c.file), "--out", s(&c.out)])
        .output()
        .expect("run");
    ok(&o, "the resumed campaign");
    let planned = c.planned();
    assert_eq!(planned.len(), 8, "2 arms x 4 repetitions");
    let done = c.complete();
    for (id, files) in &seen {
        assert_eq!(done.get(id), Some(files), "{id} changed in the last resume");
    }
    let extra: Vec<_> = done.keys().filter(|id| !planned.contains(id)).collect();
    assert!(
        extra.is_empty(),
        "complete runs outside the plan: {extra:?}"
    );
    for id in &planned {
        assert!(done.contains_key(id), "{id} was lost: {kills:#?}");
        let spec: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(c.runs().join(id).join("p0/spec.json")).expect("spec"),
        )
        .expect("spec.json");
        assert_eq!(spec["runId"], id.as_str(), "one directory per run");
    }
    // Each planned run appears once among the analysed rows.
    let csv = std::fs::read_to_string(c.dir().join("runs.csv")).expect("runs.csv");
    let mut header = csv.lines().next().expect("header").split(',');
    let col = header.position(|h| h == "run_id").expect("run_id column");
    let mut rows: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).expect("run_id"))
        .collect();
    rows.sort_unstable();
    let mut want: Vec<&str> = planned.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(rows, want, "every run analysed exactly once");

    // The report equals that of an uninterrupted invocation over the same files.
    let report = |name: &str| std::fs::read(c.dir().join(name)).expect(name);
    let (md, json) = (report("report.md"), report("report.json"));
    let o = cmd(&c.state)
        .args(["run", s(&c.file), "--out", s(&c.out)])
        .output()
        .expect("run");
    ok(&o, "an uninterrupted invocation");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("8 complete run(s) kept, 0 to go"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(report("report.md") == md, "report.md differs");
    assert!(report("report.json") == json, "report.json differs");
}

#[test]
fn keygen_killed_at_random_instants_leaves_no_half_written_key() {
    let tmp = tempfile::tempdir().expect("tmp");
    let keygen = |out: &Path| {
        cmd(tmp.path())
            .args(["keygen", "--mode", "ml-kem-768", "--out", s(out)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn keygen")
    };
    // How long one keygen lives here: the kills are spread over 0 to 1.5 times that.
    let t0 = Instant::now();
    let status = keygen(&tmp.path().join("timed")).wait().expect("keygen");
    assert!(status.success());
    let life = t0.elapsed().max(Duration::from_millis(1));
    let span = Duration::from_micros(u64::try_from(life.as_micros() * 3 / 2).expect("short"));
    let (mut absent, mut whole) = (0, 0);
    for (i, delay) in delays(7, 100, Duration::ZERO, span.max(Duration::from_millis(2)))
        .into_iter()
        .enumerate()
    {
        let out = tmp.path().join(format!("k{i}"));
        let mut child = keygen(&out);
        std::thread::sleep(delay);
        kill_group(&child);
        let _ = child.wait();
        let key = out.join("recipient.key");
        let public = out.join("recipient.pub");
        let checks: [(&Path, envelope::Result<()>); 2] = [
            (&key, envelope::SecretKey::read_file(&key).map(drop)),
            (&public, envelope::PublicKey::read_file(&public).map(drop)),
        ];
        for (p, read) in checks {
            if p.exists() {
                read.unwrap_or_else(|e| panic!("kill {i} after {delay:?}: {e}"));
                whole += 1;
            } else {
                absent += 1;
            }
        }
    }
    println!(
        "keygen: 100 kills over {span:?}: {whole} key files whole, {absent} absent, none half-written"
    );
}
