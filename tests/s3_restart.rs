//! The S3 server stopped and restarted under `pqbench run` (issue 22): the campaign runs
//! against an external server (`pqbench serve-s3`, its own process, `--endpoint`), which is
//! killed with SIGKILL and started again on the same port, data directory and credentials
//! twice: once in the middle of a run's measured window, and once just after a run has
//! written its files (between runs).
//!
//! - The run cut in its measured window completes with its records kept and fails its
//!   validity checks (its error rate); the campaign keeps that attempt under `attempts/`
//!   and runs it again.
//! - A run starting while the server is down is tried again once it is back: nothing is
//!   given up.
//! - At the end every planned run exists exactly once, complete and checksummed
//!   (`pqbench validate`), and the report counts the attempts.
//!
//! What happened is printed (`cargo test --test s3_restart -- --nocapture`).

mod common;

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{files_under, ok, run_complete, s};

const CAMPAIGN: &str = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: outage}
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells:
    - {operation: [get], objectSize: [16KiB], concurrency: [2]}
  repetitions: 2
  warmup: 1s
  measured: 3s
  seed: 5
  fixtures: 4
  pause: {enabled: false}
  analysis: {bootstrapResamples: 1000}
";

/// The external server: `pqbench serve-s3` on a fixed port, data directory and
/// credentials, so that it can be killed and started again as the same server.
struct Server {
    addr: SocketAddr,
    dir: PathBuf,
    access_key: String,
    secret_key: String,
    child: Option<Child>,
}

impl Server {
    fn start(&mut self) {
        assert!(self.child.is_none());
        let child = Command::new(env!("CARGO_BIN_EXE_pqbench"))
            .args(["serve-s3", "--credentials-from-env", "--bucket", "outage"])
            .args(["--port", &self.addr.port().to_string(), "--dir"])
            .arg(&self.dir)
            .env("AWS_ACCESS_KEY_ID", &self.access_key)
            .env("AWS_SECRET_ACCESS_KEY", &self.secret_key)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pqbench serve-s3 starts");
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(self.addr).is_err() {
            assert!(
                Instant::now() < until,
                "serve-s3 did not listen on {}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill9(&mut self) {
        let mut c = self.child.take().expect("a running server");
        c.kill().expect("SIGKILL");
        c.wait().expect("reaped");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_run_cut_by_the_s3_server_s_restart_is_kept_invalid_and_run_again() {
    let tmp = tempfile::tempdir().expect("dir");
    let file = tmp.path().join("outage.yaml");
    std::fs::write(&file, CAMPAIGN).expect("campaign");
    let out = tmp.path().join("out");
    let state = tmp.path().join("state");
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let mut server = Server {
        addr,
        dir: tmp.path().join("s3"),
        access_key: "PQOUTAGETEST0001".into(),
        secret_key: "outage-test-secret-0123456789abcdef".into(),
        child: None,
    };
    server.start();

    let log = tmp.path().join("run.log");
    let mut run = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .args(["run", s(&file), "--out", s(&out), "--bucket", "outage"])
        .args(["--endpoint", &format!("http://{addr}")])
        .env("XDG_STATE_HOME", &state)
        .env("AWS_ACCESS_KEY_ID", &server.access_key)
        .env("AWS_SECRET_ACCESS_KEY", &server.secret_key)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("pqbench run starts");

    let dir = out.join("outage");
    let runs = dir.join("runs");
    let started = Instant::now();
    let until = started + Duration::from_secs(300);
    let mut plan: Vec<String> = Vec::new();
    let mut outages: Vec<String> = Vec::new();
    let status = loop {
        if let Some(st) = run.try_wait().expect("wait") {
            break st;
        }
        assert!(
            Instant::now() < until,
            "pqbench run did not finish: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
        if plan.is_empty() {
            let Ok(text) = std::fs::read_to_string(dir.join("plan.json")) else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_str(&text).expect("plan.json");
            plan = v["runs"]
                .as_array()
                .expect("runs")
                .iter()
                .map(|r| r["runId"].as_str().expect("runId").to_owned())
                .collect();
        }
        // In the middle of the second run's measured window: its directory appears when
        // its processes start; fixtures, the gate and the 1 s warm-up come before it.
        if outages.is_empty() && runs.join(&plan[1]).exists() {
            std::thread::sleep(Duration::from_millis(3000));
            server.kill9();
            std::thread::sleep(Duration::from_millis(1000));
            server.start();
            outages.push(format!(
                "during {} (at {:.1} s)",
                plan[1],
                started.elapsed().as_secs_f64()
            ));
        }
        // Between runs: the third run has just written its files.
        if outages.len() == 1 && run_complete(&runs.join(&plan[2])) {
            server.kill9();
            std::thread::sleep(Duration::from_millis(1000));
            server.start();
            outages.push(format!(
                "after {} (at {:.1} s)",
                plan[2],
                started.elapsed().as_secs_f64()
            ));
        }
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!("outages: {outages:?}\n--- pqbench run ---\n{text}");
    assert!(status.success(), "pqbench run: {status}");
    assert_eq!(outages.len(), 2, "both outages happened");

    // Every planned run exactly once, complete, and nothing else.
    let dirs: BTreeSet<String> = std::fs::read_dir(&runs)
        .expect("runs/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(dirs, plan.iter().cloned().collect(), "runs/ holds the plan");
    for r in &plan {
        assert!(run_complete(&runs.join(r)), "{r} is complete");
    }
    // The run cut in its measured window: its first attempt kept with its records, invalid.
    let kept = dir.join("attempts").join(&plan[1]).join("a1");
    let summaries: Vec<PathBuf> = files_under(&kept)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "summary.json"))
        .collect();
    assert!(
        !summaries.is_empty(),
        "the cut attempt is kept in {}",
        kept.display()
    );
    let mut errors = 0;
    for p in &summaries {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).expect("summary")).expect("json");
        assert_eq!(v["valid"], false, "{}: {v}", p.display());
        errors += v["counts"]["failed"].as_u64().expect("counts.failed");
        let records = p.with_file_name("records.parquet");
        assert!(
            std::fs::metadata(&records).is_ok_and(|m| m.len() > 0),
            "{} keeps its records",
            records.display()
        );
    }
    assert!(errors > 0, "the cut attempt recorded the failed requests");
    assert!(
        text.contains(&format!("run {} attempt 1 failed", plan[1])),
        "{text}"
    );
    assert!(!text.contains("given up"), "{text}");
    let validate = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .args(["validate", s(&runs)])
        .output()
        .expect("pqbench validate");
    ok(&validate, "pqbench validate");
}
