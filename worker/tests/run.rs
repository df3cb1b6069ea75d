//! The run engine against two real S3 servers over HTTP (the embedded `s3s-fs` server and
//! Garage 2.5.0 as a separate process): loop types, counts, warm-up, failures, cleanup,
//! start synchronisation of two worker processes, samplers, and the validator refusing
//! each kind of corrupted data set.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "request counts in tests are far below 2^52"
)]

#[path = "../../s3/tests/support/servers.rs"]
mod servers;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use campaign::units::{Dur, Size};
use envelope::{KeyType, Mode, SecretKey};
use run::records::{
    Outcome, RECORD_SCHEMA, RequestPhase, RunKeys, records_from_table, records_table,
};
use run::runspec::{
    Cell, Credentials, KeyRef, Loop, Operation, PromSource, RunSpec, ServerMetricNames, Session,
};
use run::summary::{ProcessInfo, files};
use run::table::{ColumnSpec, Table};
use servers::{BUCKET, Kind, TestServer};
use worker::engine::{RunOptions, run_to_files};
use worker::parquet::TableFile as _;

struct Env {
    server: TestServer,
    dir: tempfile::TempDir,
}

impl Env {
    fn new(kind: Kind) -> Self {
        let server = TestServer::start(kind);
        let dir = tempfile::tempdir().expect("tempdir");
        let s = server.settings();
        let creds = dir.path().join("s3.env");
        std::fs::write(
            &creds,
            format!(
                "export AWS_ACCESS_KEY_ID={}\nexport AWS_SECRET_ACCESS_KEY={}\n",
                s.access_key,
                s.secret_key.as_str()
            ),
        )
        .expect("creds");
        set_mode_600(&creds);
        std::fs::create_dir(dir.path().join("keys")).expect("keys dir");
        Self { server, dir }
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    fn key_dir(&self, mode: Mode) -> PathBuf {
        let d = self.dir.path().join("keys");
        let kt = mode.key_type();
        let p = d.join(format!("{}.key", kt.name()));
        if kt != KeyType::None && !p.exists() {
            SecretKey::generate(kt, &mut envelope::os_rng())
                .expect("keygen")
                .write_file(&p)
                .expect("key file");
        }
        d
    }

    fn spec(
        &self,
        run_id: &str,
        mode: Mode,
        op: Operation,
        concurrency: u32,
        arrival: Loop,
    ) -> RunSpec {
        let s = self.server.settings();
        let cell = Cell {
            mode,
            backend: envelope::Backend::AwsLc,
            operation: op,
            object_size: Size(4096),
            concurrency,
            arrival,
            format: Default::default(),
            require_pq: false,
            kms: None,
        };
        let mut spec = RunSpec::local(run_id, cell, &s.endpoint, BUCKET, &self.out());
        spec.s3.region = s.region.clone();
        spec.s3.credentials = Credentials::File(self.dir.path().join("s3.env"));
        spec.recipient_key = Some(KeyRef::Dir(self.key_dir(mode)));
        spec.warmup = Dur(Duration::from_secs(1));
        spec.measured = Dur(Duration::from_secs(2));
        spec.fixtures = 16;
        spec
    }

    /// Objects left under the run prefix (data, manifests, anything).
    fn leftovers(&self) -> usize {
        let store = self.server.sdk();
        tokio::runtime::Runtime::new().expect("rt").block_on(async {
            let out = store
                .list_objects_v2()
                .bucket(BUCKET)
                .prefix("pqbench-runs/")
                .send()
                .await
                .expect("list");
            out.contents().len()
        })
    }
}

#[cfg(unix)]
fn set_mode_600(p: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

fn records(dir: &Path) -> Vec<run::records::Record> {
    let t = Table::read_parquet(&dir.join(files::RECORDS), RECORD_SCHEMA).expect("records");
    records_from_table(&t).expect("decode").1
}

fn closed_loop_counts(kind: Kind) {
    let env = Env::new(kind);
    let spec = env.spec("closed-put", Mode::X25519, Operation::Put, 4, Loop::Closed);
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let s = &w.summary;
    assert_valid_but_unaccounted(s);
    let recs = records(&w.dir);
    let warm = recs
        .iter()
        .filter(|r| r.phase == Some(RequestPhase::Warmup))
        .count();
    let meas = recs
        .iter()
        .filter(|r| r.phase == Some(RequestPhase::Measured))
        .count();
    assert!(warm > 0 && meas > 0, "warm-up {warm}, measured {meas}");
    assert_eq!(s.counts.warmup as usize, warm);
    assert_eq!(s.counts.ok as usize, meas, "all measured requests succeed");
    // Throughput counts measured requests only: warm-up is excluded.
    assert!((s.throughput_rps - meas as f64 / 2.0).abs() < 1e-9);
    // Exactly 4 workers, each issuing back to back.
    let mut workers: Vec<u32> = recs.iter().map(|r| r.worker).collect();
    workers.sort_unstable();
    workers.dedup();
    assert_eq!(workers, [0, 1, 2, 3]);
    for r in &recs {
        assert_eq!(r.s3_requests, 2);
        assert_eq!(r.queue_wait, Duration::ZERO);
        assert!(r.stage_sum() <= r.total);
        assert!(r.crypto_cpu > Duration::ZERO);
    }
    assert!(s.cpu.cpu_per_request_us > 0.0 && s.cpu.cores_available > 0.0);
    assert_eq!(s.cleanup_deleted as usize, recs.len());
    assert_eq!(
        env.leftovers(),
        0,
        "PUT objects are deleted after the window"
    );
    let report = worker::validate::validate(&env.out());
    assert!(
        report
            .failures()
            .all(|f| f.check.starts_with("unaccounted")),
        "{:?}",
        report.findings
    );
}

/// A closed loop saturates this 2-core machine, whose server shares it; the server's threads
/// then preempt the client between its stage timers, and the unaccounted-time checks (made
/// for a dedicated client host) may fail. Every other check must pass.
fn assert_valid_but_unaccounted(s: &run::summary::RunSummary) {
    for c in &s.checks {
        assert!(
            c.passed || c.name.starts_with("unaccounted"),
            "{}\n{}",
            c.name,
            run::summary::render(s)
        );
    }
}

fn open_loop_counts(kind: Kind) {
    let env = Env::new(kind);
    let rate = 150.0;
    let mut spec = env.spec(
        "open-get",
        Mode::MlKem768,
        Operation::Get,
        8,
        Loop::Open { rate },
    );
    spec.measured = Dur(Duration::from_secs(4));
    spec.drain = Dur(Duration::from_secs(1));
    spec.seed = 7;
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let s = &w.summary;
    assert_valid_but_unaccounted(s);
    let recs = records(&w.dir);
    // Arrivals in the window are Poisson with mean rate × window; 4.5 σ bounds.
    let mean = rate * 4.0;
    let n = s.counts.measured as f64;
    assert!(
        (n - mean).abs() < 4.5 * mean.sqrt(),
        "arrivals {n}, expected ≈ {mean}"
    );
    let warm = s.counts.warmup as f64;
    assert!(
        (warm - rate).abs() < 4.5 * rate.sqrt(),
        "warm-up arrivals {warm}"
    );
    assert_eq!(s.counts.not_started, 0, "8 workers serve 150/s");
    assert!(s.queue_wait_ms.is_some());
    assert!(recs.iter().all(|r| r.outcome == Some(Outcome::Ok)));
    // Arrival times follow the offered rate over the whole run.
    let last = recs.iter().map(|r| r.offset).max().expect("records");
    assert!(last <= Duration::from_secs(5));
    assert_eq!(env.leftovers(), 0, "fixtures are deleted after the run");
}

fn open_loop_overload(kind: Kind) {
    let env = Env::new(kind);
    // One worker cannot serve 3,000 requests/s: arrivals left in the queue at the end are
    // failures, recorded, never dropped.
    let mut spec = env.spec(
        "open-over",
        Mode::X25519,
        Operation::Get,
        1,
        Loop::Open { rate: 3000.0 },
    );
    spec.drain = Dur(Duration::from_millis(500));
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let s = &w.summary;
    assert!(s.counts.not_started > 0, "{}", run::summary::render(s));
    assert!(!s.valid, "a run with failures is invalid");
    assert_eq!(
        s.failures_by_class.get("not_started").copied(),
        Some(s.counts.not_started)
    );
    let recs = records(&w.dir);
    let total = recs.len() as f64;
    assert!(
        (total - 9000.0).abs() < 4.5 * 9000f64.sqrt(),
        "all {total} arrivals recorded"
    );
    assert_eq!(env.leftovers(), 0);
}

fn server_stopped_mid_run(kind: Kind) {
    let mut env = Env::new(kind);
    let mut spec = env.spec("dies", Mode::X25519, Operation::Get, 4, Loop::Closed);
    spec.measured = Dur(Duration::from_secs(3));
    let spec2 = spec.clone();
    let h = std::thread::spawn(move || run_to_files(&spec2, &RunOptions::default()));
    // Prepare takes < 1 s, start is 1 s after ready, warm-up 1 s: stop ~1 s into the window.
    std::thread::sleep(Duration::from_millis(3500));
    env.server.stop();
    let w = h
        .join()
        .expect("thread")
        .expect("the run completes and keeps its records");
    let s = &w.summary;
    assert!(!s.valid);
    assert!(
        s.counts.ok > 0 && s.counts.failed > 0,
        "{}",
        run::summary::render(s)
    );
    let failed = s
        .checks
        .iter()
        .find(|c| c.name == "failures")
        .expect("check");
    assert!(!failed.passed);
    // A server going away refuses connections, breaks bodies, or (the embedded one, while
    // its stop closes connections and its directory goes) answers a manifest read with 404
    // (`not_committed`) or a data read with 404 (`s3_not_found`).
    assert!(
        s.failures_by_class.keys().all(|k| [
            "s3_connect",
            "s3_io",
            "s3_timeout",
            "s3_service",
            "s3_other",
            "s3_not_found",
            "not_committed"
        ]
        .contains(&k.as_str())),
        "{:?}",
        s.failures_by_class
    );
    // Records are kept and the validator refuses the data set for its failures.
    let recs = records(&w.dir);
    assert!(
        recs.iter()
            .any(|r| r.outcome == Some(Outcome::Error) && r.error_class.is_some())
    );
    let report = worker::validate::validate(&env.out());
    assert!(!report.ok());
    assert!(
        report.failures().any(|f| f.check == "failures"),
        "{:?}",
        report.findings
    );
    assert!(
        report
            .failures()
            .all(|f| f.check == "failures" || f.check.starts_with("unaccounted")),
        "{:?}",
        report.findings
    );
}

fn two_processes_start_together(kind: Kind) {
    let env = Env::new(kind);
    // A light open loop keeps the shared machine unsaturated, so each process's run is
    // valid and `pqbench-worker` exits 0.
    let mut spec = env.spec(
        "two-procs",
        Mode::MlKem768,
        Operation::Get,
        6,
        Loop::Open { rate: 120.0 },
    );
    spec.drain = Dur(Duration::from_secs(1));
    let start = SystemTime::now() + Duration::from_secs(6);
    spec.start_at = Some(humantime::format_rfc3339_millis(start).to_string());
    spec.processes.count = 2;
    let mut children = Vec::new();
    for i in 0..2 {
        let mut s = spec.clone();
        s.processes.index = i;
        let f = env.dir.path().join(format!("spec-{i}.json"));
        std::fs::write(&f, serde_json::to_vec(&s).expect("json")).expect("spec");
        children.push(
            Command::new(env!("CARGO_BIN_EXE_pqbench-worker"))
                .args(["--quiet", "--spec"])
                .arg(&f)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn pqbench-worker"),
        );
    }
    let children: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait"))
        .collect();
    let mut starts = Vec::new();
    for (i, out) in children.iter().enumerate() {
        let dir = env.out().join("two-procs").join(format!("p{i}"));
        let summary: run::summary::RunSummary = serde_json::from_slice(
            &std::fs::read(dir.join(files::SUMMARY)).unwrap_or_else(|e| {
                panic!(
                    "process {i} wrote no summary ({e}): {}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
            }),
        )
        .expect("parse");
        // Exit 0 means a valid run; 1 an invalid one, acceptable here only for the
        // unaccounted-time checks (see `assert_valid_but_unaccounted`).
        assert!(
            out.status.success() || out.status.code() == Some(1),
            "process {i}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            out.status.success(),
            summary.valid,
            "exit code follows validity: {:?} {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_valid_but_unaccounted(&summary);
        let info: ProcessInfo =
            serde_json::from_slice(&std::fs::read(dir.join(files::PROCESS)).expect("process.json"))
                .expect("parse");
        assert_eq!(info.workers.len(), 3);
        assert!(info.ready_lead_ms > 0.0);
        starts.extend(info.worker_start_ms);
    }
    let max = starts.iter().copied().fold(f64::MIN, f64::max);
    let min = starts.iter().copied().fold(f64::MAX, f64::min);
    assert!(
        max - min < 50.0,
        "start skew {:.2} ms across both processes",
        max - min
    );
    assert!(min >= 0.0, "no worker starts before startAt");
    let report = worker::validate::validate(&env.out());
    assert!(
        report
            .failures()
            .all(|f| f.check.starts_with("unaccounted")),
        "{:?}",
        report.failures().collect::<Vec<_>>()
    );
    assert_eq!(report.runs, 1);
    assert_eq!(report.processes, 2);
    assert_eq!(env.leftovers(), 0);
}

fn session_bounds_hold(kind: Kind) {
    let env = Env::new(kind);
    let mut spec = env.spec(
        "sessions",
        Mode::MlKem768Session,
        Operation::Put,
        2,
        Loop::Closed,
    );
    spec.session = Some(Session {
        max_objects: 5,
        max_age: Dur(Duration::from_secs(10)),
    });
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let s = &w.summary;
    assert_valid_but_unaccounted(s);
    let se = s.session.expect("session figures");
    assert_eq!(se.max_index_seen, 4);
    assert!(se.sessions > 1);
    let c = s
        .checks
        .iter()
        .find(|c| c.name == "session_bounds")
        .expect("check");
    assert!(c.passed);
}

macro_rules! server_tests {
    ($name:ident, $kind:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn closed_loop_records_every_request_and_excludes_warmup() {
                closed_loop_counts($kind);
            }

            #[test]
            fn open_loop_arrivals_follow_the_rate() {
                open_loop_counts($kind);
            }

            #[test]
            fn open_loop_overload_counts_unstarted_arrivals_as_failures() {
                open_loop_overload($kind);
            }

            #[test]
            fn server_stopped_mid_run_counts_failures_and_keeps_records() {
                server_stopped_mid_run($kind);
            }

            #[test]
            fn two_worker_processes_start_within_50_ms() {
                two_processes_start_together($kind);
            }

            #[test]
            fn session_runs_stay_within_their_bounds() {
                session_bounds_hold($kind);
            }
        }
    };
}

server_tests!(embedded, Kind::Embedded);
server_tests!(garage, Kind::Garage);

#[test]
fn a_process_not_ready_by_start_at_fails_the_run() {
    let env = Env::new(Kind::Embedded);
    let mut spec = env.spec("late", Mode::X25519, Operation::Get, 2, Loop::Closed);
    spec.start_at = Some(humantime::format_rfc3339_millis(SystemTime::now()).to_string());
    let err = run_to_files(&spec, &RunOptions::default()).expect_err("late");
    assert!(matches!(err, worker::Error::NotReady { .. }), "{err}");
    assert!(err.to_string().contains("startAt"), "{err}");
    assert!(
        !env.out().join("late").exists(),
        "no data for a run that never started"
    );
    assert_eq!(env.leftovers(), 0, "fixtures are removed");
}

/// Interleaved arms: a run with turn 1 of 3 in 100 ms slices starts every request in its
/// own slices (the second of every three), starts some in each of them (the turn clock
/// wakes its workers each time), and its measured time is its own slices within the window,
/// which throughput and cores used are per second of.
#[test]
fn turns_start_requests_in_own_slices_only() {
    let env = Env::new(Kind::Embedded);
    let mut spec = env.spec("turns", Mode::X25519, Operation::Get, 2, Loop::Closed);
    let turns = run::turns::Turns {
        slice: Dur(Duration::from_millis(100)),
        of: 3,
        turn: 1,
    };
    spec.turns = Some(turns);
    spec.warmup = Dur(Duration::from_millis(600));
    spec.measured = Dur(Duration::from_millis(1500));
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let s = &w.summary;
    assert_valid_but_unaccounted(s);
    let recs = records(&w.dir);
    assert!(!recs.is_empty());
    let cycle = Duration::from_millis(300).as_nanos();
    let mut cycles = std::collections::BTreeSet::new();
    for r in &recs {
        let at = r.offset.as_nanos() % cycle;
        assert!(
            (100_000_000..200_000_000).contains(&at),
            "request {}/{} started {:?} after the start, outside turn 1",
            r.worker,
            r.seq,
            r.offset
        );
        cycles.insert(r.offset.as_nanos() / cycle);
    }
    // Seven cycles of 300 ms in 2.1 s: a turn in each.
    assert_eq!(cycles.len(), 7, "turns with requests: {cycles:?}");
    let own = turns.own_time(spec.warmup.0, spec.warmup.0 + spec.measured.0);
    assert_eq!(own, Duration::from_millis(500));
    assert!((s.window_s - 0.5).abs() < 1e-9, "window {}", s.window_s);
    assert!((s.throughput_rps - s.counts.ok as f64 / 0.5).abs() < 1e-6);
    assert!((s.cpu.cores_used - s.cpu.process_cpu_s / 0.5).abs() < 1e-9);
    assert!(run::summary::render(s).contains("turns        2 of 3 in slices of 100ms"));
    // An open loop does not take turns.
    let mut open = env.spec(
        "turns-open",
        Mode::X25519,
        Operation::Get,
        2,
        Loop::Open { rate: 10.0 },
    );
    open.turns = Some(turns);
    let err = run_to_files(&open, &RunOptions::default()).expect_err("open loop with turns");
    assert!(err.to_string().contains("closed-loop runs only"), "{err}");
}

/// SIGTERM (what a pod's deletion or `podman stop` sends) during the measured window: the
/// process exits at once with 143, says the run is incomplete, and leaves no checksum
/// manifest, so nothing of the run counts as complete.
#[test]
fn sigterm_in_the_measured_window_stops_the_run_incomplete() {
    use std::io::BufRead as _;
    let env = Env::new(Kind::Embedded);
    let mut spec = env.spec("termed", Mode::X25519, Operation::Get, 2, Loop::Closed);
    spec.measured = Dur(Duration::from_secs(60));
    let f = env.dir.path().join("spec.json");
    std::fs::write(&f, serde_json::to_vec(&spec).expect("json")).expect("spec");
    // Progress on (no --quiet): its lines on stderr say when the measured window is on.
    let mut child = Command::new(env!("CARGO_BIN_EXE_pqbench-worker"))
        .arg("--spec")
        .arg(&f)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn pqbench-worker");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.expect("stderr line");
            if line.contains("measured: ok") {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the run reaches its measured window");
    let sent = std::time::Instant::now();
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let status = child.wait().expect("wait");
    let took = sent.elapsed();
    let stderr = reader.join().expect("reader");
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(
        took < Duration::from_secs(5),
        "exited {took:?} after SIGTERM (a pod's grace period is 30 s)"
    );
    assert!(
        stderr.contains("stopped by SIGTERM") && stderr.contains("incomplete"),
        "{stderr}"
    );
    let dir = env.out().join("termed").join("p0");
    assert!(
        !dir.join(files::CHECKSUMS).exists(),
        "a stopped run has no checksum manifest"
    );
    let report = worker::validate::validate(&env.out());
    assert_eq!(
        report.processes, 0,
        "no complete process: {:?}",
        report.findings
    );
}

#[test]
fn samplers_read_garage_metrics_and_the_server_process() {
    let env = Env::new(Kind::Garage);
    let (url, token) = env.server.metrics().expect("garage metrics");
    let mut spec = env.spec("sampled", Mode::X25519, Operation::Put, 2, Loop::Closed);
    // The token comes from a file (as from a mounted Secret).
    let tok = env.dir.path().join("metrics.token");
    std::fs::write(&tok, &token).expect("token");
    spec.telemetry.server_metrics = Some(PromSource {
        url,
        bearer_token_env: None,
        bearer_token_file: Some(tok),
    });
    // Garage exports no process metrics; read a gauge it does export through the
    // configurable names, and the process's CPU and memory through /proc.
    spec.telemetry.server_metric_names = ServerMetricNames {
        cpu_seconds: "absent_metric".into(),
        resident_bytes: "garage_local_disk_total".into(),
    };
    spec.telemetry.local_server_pid = env.server.pid();
    // Quiet at once: the point is that /proc readings arrive. A pause that gives up makes
    // the run invalid (`pause_quiet`), and this host may be busy; the waiting branch is
    // tests/pause.rs's.
    spec.pause = Some(run::runspec::PauseRule {
        max_dirty: Size(64 << 30),
        max_disk_write_per_s: Size(64 << 30),
        quiet_for: Dur(Duration::from_secs(1)),
        max_wait: Dur(Duration::from_secs(5)),
    });
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let s = &w.summary;
    assert_valid_but_unaccounted(s);
    // Samples were taken about once per second over the run.
    let t = Table::read_parquet(&w.dir.join(files::SAMPLES), run::records::SAMPLE_SCHEMA)
        .expect("samples");
    assert!(t.rows() >= 3, "{} samples", t.rows());
    // A scrape that misses its 900 ms budget on a starved host is a missing reading the
    // summary names (CI: Garage busy with the run's PUTs on two shared cores), not a wrong
    // one; anything else (refused, HTTP error, unparsable) fails, and most scrapes answer.
    assert!(
        s.server
            .errors
            .iter()
            .all(|e| e == "server metrics: no answer within 900 ms")
            && 2 * s.server.errors.len() < t.rows(),
        "{:?} over {} samples",
        s.server.errors,
        t.rows()
    );
    assert!(
        s.server.max_rss_bytes.is_some_and(|b| b > 1e6),
        "disk total via the metrics page"
    );
    assert!(
        s.server.cpu_cores_used.is_some_and(|c| c > 0.0),
        "Garage CPU via /proc"
    );
    assert!(s.server.max_dirty_writeback_bytes.is_some());
    let p = &s.pause[0];
    assert!(
        p.quiet && p.waited_s <= 5.0 && p.last_dirty_bytes.is_some(),
        "{p:?}"
    );

    // A wrong token is an error the summary reports; the run itself stays valid.
    let mut bad = env.spec("sampled-bad", Mode::X25519, Operation::Put, 1, Loop::Closed);
    let tok2 = env.dir.path().join("wrong.token");
    std::fs::write(&tok2, "wrong").expect("token");
    bad.telemetry.server_metrics = Some(PromSource {
        url: env.server.metrics().expect("m").0,
        bearer_token_env: None,
        bearer_token_file: Some(tok2),
    });
    let w = run_to_files(&bad, &RunOptions::default()).expect("run");
    assert_valid_but_unaccounted(&w.summary);
    assert!(
        w.summary.server.errors.iter().any(|e| e.contains("HTTP 4")),
        "{:?}",
        w.summary.server.errors
    );
}

/// The validator refuses each kind of corrupted data set, one test per check.
mod validator {
    use super::*;

    /// A valid data set: one session PUT run (so every check applies), made once and copied
    /// for each test.
    fn dataset() -> (tempfile::TempDir, PathBuf) {
        static BASE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        let base = BASE.get_or_init(|| {
            let env = Env::new(Kind::Embedded);
            let mut spec = env.spec("v", Mode::MlKem768Session, Operation::Put, 2, Loop::Closed);
            spec.session = Some(Session {
                max_objects: 8,
                max_age: Dur(Duration::from_secs(10)),
            });
            let w = run_to_files(&spec, &RunOptions::default()).expect("run");
            assert_valid_but_unaccounted(&w.summary);
            // This shared machine's scheduler leaves some time outside the stage timers
            // (see `assert_valid_but_unaccounted`); the validator's unaccounted-time checks
            // are tested on controlled values, so start from records whose totals equal
            // their stage sums, and check that the set passes before corrupting it.
            rewrite(&w.dir, |r| {
                for x in r.iter_mut().filter(|x| x.outcome == Some(Outcome::Ok)) {
                    x.total = x.stage_sum();
                }
            });
            let report = worker::validate::validate(&env.out());
            assert!(report.ok(), "{:?}", report.findings);
            let keep = tempfile::tempdir().expect("dir").keep();
            copy_tree(&env.out(), &keep);
            keep
        });
        let t = tempfile::tempdir().expect("dir");
        copy_tree(base, t.path());
        let dir = t.path().join("v").join("p0");
        (t, dir)
    }

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("read_dir") {
            let e = e.expect("entry");
            let p = e.path();
            if p.is_dir() {
                copy_tree(&p, &to.join(e.file_name()));
            } else {
                std::fs::copy(&p, to.join(e.file_name())).expect("copy");
            }
        }
    }

    fn failed_checks(root: &Path) -> Vec<&'static str> {
        let r = worker::validate::validate(root);
        let mut v: Vec<&'static str> = r.failures().map(|f| f.check).collect();
        v.dedup();
        v
    }

    /// Rewrites the records through `f` and updates the checksum manifest, so that only the
    /// check under test can notice.
    fn rewrite(dir: &Path, f: impl Fn(&mut Vec<run::records::Record>)) {
        let t = Table::read_parquet(&dir.join(files::RECORDS), RECORD_SCHEMA).expect("read");
        let (keys, mut recs) = records_from_table(&t).expect("decode");
        f(&mut recs);
        let keys: RunKeys = keys.expect("keys");
        records_table(&keys, &recs)
            .write_parquet(&dir.join(files::RECORDS))
            .expect("write");
        resum(dir);
    }

    fn resum(dir: &Path) {
        let mut sums = String::new();
        for name in files::DATA {
            sums.push_str(&format!(
                "{}  {name}\n",
                worker::output::sha256_file(&dir.join(name)).expect("sha")
            ));
        }
        std::fs::write(dir.join(files::CHECKSUMS), sums).expect("sums");
    }

    #[test]
    fn refuses_a_changed_byte() {
        let (root, dir) = dataset();
        let p = dir.join(files::RECORDS);
        let mut b = std::fs::read(&p).expect("read");
        let i = b.len() / 2;
        b[i] ^= 1;
        std::fs::write(&p, b).expect("write");
        assert_eq!(failed_checks(root.path()), ["checksums"]);
        let r = worker::validate::validate(root.path());
        let f = r.failures().next().expect("failure");
        assert!(
            f.detail.contains(files::RECORDS) && f.location.contains("v/p0"),
            "{f:?}"
        );
    }

    #[test]
    fn refuses_an_unlisted_or_missing_file() {
        let (root, dir) = dataset();
        std::fs::write(dir.join("extra.csv"), "x").expect("write");
        assert_eq!(failed_checks(root.path()), ["checksums"]);
        std::fs::remove_file(dir.join("extra.csv")).expect("rm");
        std::fs::remove_file(dir.join(files::SAMPLES)).expect("rm");
        assert_eq!(failed_checks(root.path()), ["checksums"]);
    }

    #[test]
    fn refuses_an_incomplete_schema() {
        let (root, dir) = dataset();
        // The same records without the `queue_wait_ns` column, checksums updated.
        let t = Table::read_parquet(&dir.join(files::RECORDS), RECORD_SCHEMA).expect("read");
        let keep: Vec<usize> = (0..RECORD_SCHEMA.len())
            .filter(|&i| RECORD_SCHEMA[i].name != "queue_wait_ns")
            .collect();
        let schema: &'static [ColumnSpec] = Box::leak(
            keep.iter()
                .map(|&i| RECORD_SCHEMA[i])
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let cut = Table {
            schema,
            columns: keep.iter().map(|&i| t.columns[i].clone()).collect(),
        };
        cut.write_parquet(&dir.join(files::RECORDS)).expect("write");
        resum(&dir);
        assert_eq!(failed_checks(root.path()), ["schema"]);
        let r = worker::validate::validate(root.path());
        assert!(r.failures().any(|f| f.detail.contains("queue_wait_ns")));
    }

    #[test]
    fn refuses_a_mistyped_column() {
        let (root, dir) = dataset();
        let t = Table::read_parquet(&dir.join(files::RECORDS), RECORD_SCHEMA).expect("read");
        let schema: &'static [ColumnSpec] = Box::leak(
            RECORD_SCHEMA
                .iter()
                .map(|c| {
                    if c.name == "total_ns" {
                        ColumnSpec {
                            kind: run::table::Kind::Double,
                            ..*c
                        }
                    } else {
                        *c
                    }
                })
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let columns = RECORD_SCHEMA
            .iter()
            .zip(&t.columns)
            .map(|(c, col)| match (c.name, col) {
                ("total_ns", run::table::Column::I64(v)) => {
                    run::table::Column::F64(v.iter().map(|x| x.map(|n| n as f64)).collect())
                }
                _ => col.clone(),
            })
            .collect();
        Table { schema, columns }
            .write_parquet(&dir.join(files::RECORDS))
            .expect("write");
        resum(&dir);
        assert_eq!(failed_checks(root.path()), ["schema"]);
    }

    #[test]
    fn refuses_a_stage_sum_above_the_total() {
        let (root, dir) = dataset();
        rewrite(&dir, |r| {
            let x = r
                .iter_mut()
                .find(|x| x.outcome == Some(Outcome::Ok))
                .expect("ok");
            x.storage = x.total + Duration::from_micros(1);
        });
        assert!(failed_checks(root.path()).contains(&"stage_sum"));
    }

    #[test]
    fn refuses_a_p99_of_unaccounted_time_above_2_percent() {
        let (root, dir) = dataset();
        // 3 % of requests get 5 % of their time outside every stage.
        rewrite(&dir, |r| {
            let n = r.len();
            for x in r.iter_mut().step_by(33).take(n / 33 + 1) {
                x.total = x.total.mul_f64(1.0 / 0.95);
            }
        });
        let f = failed_checks(root.path());
        assert!(f.contains(&"unaccounted_p99"), "{f:?}");
        assert!(!f.contains(&"unaccounted_aggregate"), "{f:?}");
    }

    #[test]
    fn refuses_an_aggregate_unaccounted_time_above_1_percent() {
        let (root, dir) = dataset();
        // Every request: 1.5 % unaccounted (p99 stays under 2 %, the aggregate does not).
        rewrite(&dir, |r| {
            for x in r.iter_mut() {
                x.total = x.stage_sum().mul_f64(1.0 / 0.985);
            }
        });
        let f = failed_checks(root.path());
        assert!(f.contains(&"unaccounted_aggregate"), "{f:?}");
        assert!(!f.contains(&"unaccounted_p99"), "{f:?}");
    }

    #[test]
    fn refuses_a_session_beyond_its_bounds() {
        let (root, dir) = dataset();
        rewrite(&dir, |r| {
            let x = r
                .iter_mut()
                .find(|x| x.session_index.is_some())
                .expect("session");
            x.session_index = Some(8); // B_max = 8: indices 0..=7
        });
        assert_eq!(failed_checks(root.path()), ["session_bounds"]);
        let (root, dir) = dataset();
        rewrite(&dir, |r| {
            let x = r
                .iter_mut()
                .find(|x| x.session_age.is_some())
                .expect("session");
            x.session_age = Some(Duration::from_secs(11));
        });
        assert_eq!(failed_checks(root.path()), ["session_bounds"]);
    }

    #[test]
    fn refuses_an_incomplete_run_and_an_empty_directory() {
        let (root, dir) = dataset();
        let mut spec: RunSpec =
            serde_json::from_slice(&std::fs::read(dir.join(files::SPEC)).expect("spec"))
                .expect("parse");
        spec.processes.count = 2;
        std::fs::write(
            dir.join(files::SPEC),
            serde_json::to_vec(&spec).expect("json"),
        )
        .expect("w");
        resum(&dir);
        assert_eq!(failed_checks(root.path()), ["complete"]);
        let empty = tempfile::tempdir().expect("dir");
        assert_eq!(failed_checks(empty.path()), ["checksums"]);
    }
}

/// Debian's `prometheus-node-exporter` (`apt-get install prometheus-node-exporter`; `.ci/run`
/// installs it), or `$PQBENCH_NODE_EXPORTER`.
fn node_exporter_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PQBENCH_NODE_EXPORTER") {
        return PathBuf::from(p);
    }
    for p in [
        "/usr/bin/prometheus-node-exporter",
        "/usr/local/bin/node_exporter",
    ] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!(
        "node exporter not found: apt-get install prometheus-node-exporter (Debian), or point \
         PQBENCH_NODE_EXPORTER at a node_exporter binary"
    );
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A real node exporter on 127.0.0.1 feeds the pause rule and the server-host figures.
#[test]
fn node_exporter_feeds_the_pause_rule_and_server_host_figures() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new(node_exporter_binary())
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .args([
            "--collector.disable-defaults",
            "--collector.meminfo",
            "--collector.diskstats",
            "--collector.cpu",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start the node exporter");
    let _guard = Killed(child);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "node exporter did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let env = Env::new(Kind::Embedded);
    let mut spec = env.spec(
        "node",
        Mode::X25519,
        Operation::Get,
        1,
        Loop::Open { rate: 20.0 },
    );
    spec.drain = Dur(Duration::from_secs(1));
    spec.telemetry.node_exporter = Some(PromSource {
        url: format!("http://127.0.0.1:{port}/metrics"),
        bearer_token_env: None,
        bearer_token_file: None,
    });
    spec.pause = Some(run::runspec::PauseRule {
        max_dirty: Size(64 << 30), // quiet at once: the point is that readings arrive
        max_disk_write_per_s: Size(64 << 30),
        quiet_for: Dur(Duration::from_secs(1)),
        max_wait: Dur(Duration::from_secs(10)),
    });
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let s = &w.summary;
    assert!(s.server.errors.is_empty(), "{:?}", s.server.errors);
    let p = &s.pause[0];
    assert!(
        p.quiet && p.last_dirty_bytes.is_some() && p.last_disk_write_per_s.is_some(),
        "{p:?}"
    );
    assert!(p.waited_s >= 1.0 && p.waited_s < 10.0, "{p:?}");
    assert!(
        s.server.max_dirty_writeback_bytes.is_some(),
        "{:?}",
        s.server
    );
    assert!(s.server.iowait_fraction.is_some(), "{:?}", s.server);
    assert!(s.server.disk_write_mib_s.is_some(), "{:?}", s.server);
    // The disks' queue depth from node_disk_io_time_weighted_seconds_total (a write latency
    // needs writes in the window, which this GET run need not cause).
    assert!(s.server.disk_queue_depth.is_some(), "{:?}", s.server);
    // Nothing reads server process figures from a node exporter.
    assert!(s.server.cpu_cores_used.is_none());
}

/// Output to the test server's results bucket under `results/`, with the spec's own
/// endpoint and credentials.
fn results_output() -> run::runspec::Output {
    run::runspec::Output::S3 {
        bucket: BUCKET.into(),
        prefix: "results/".into(),
        endpoint: None,
        credentials: None,
        region: None,
    }
}

/// With S3 output, the files are uploaded to the results bucket under
/// `<prefix><runId>/p<index>/`, the checksum manifest last, and they validate once
/// downloaded.
#[test]
fn s3_output_uploads_the_run_files() {
    let env = Env::new(Kind::Embedded);
    let mut spec = env.spec(
        "to-s3",
        Mode::X25519,
        Operation::Get,
        1,
        Loop::Open { rate: 20.0 },
    );
    spec.drain = Dur(Duration::from_secs(1));
    spec.output = results_output();
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    assert_eq!(
        w.uploaded_to.as_deref(),
        Some("s3://pqbench-test/results/to-s3/p0/")
    );
    let store = env.server.sdk();
    let dl = tempfile::tempdir().expect("dir");
    let p0 = dl.path().join("to-s3/p0");
    std::fs::create_dir_all(&p0).expect("mkdir");
    tokio::runtime::Runtime::new().expect("rt").block_on(async {
        let list = store
            .list_objects_v2()
            .bucket(BUCKET)
            .prefix("results/to-s3/p0/")
            .send()
            .await
            .expect("list");
        let mut names: Vec<String> = list
            .contents()
            .iter()
            .filter_map(|o| {
                o.key()
                    .map(|k| k.rsplit('/').next().unwrap_or("").to_owned())
            })
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "SHA256SUMS",
                "process.json",
                "records.parquet",
                "samples.parquet",
                "spec.json",
                "summary.json"
            ]
        );
        for n in &names {
            let o = store
                .get_object()
                .bucket(BUCKET)
                .key(format!("results/to-s3/p0/{n}"))
                .send()
                .await
                .expect("get");
            let b = o.body.collect().await.expect("body").into_bytes();
            std::fs::write(p0.join(n), b).expect("write");
        }
    });
    let report = worker::validate::validate(dl.path());
    assert!(
        report
            .failures()
            .all(|f| f.check.starts_with("unaccounted")),
        "{:?}",
        report.findings
    );
    assert_eq!(report.processes, 1);
}

/// A Secret volume's directory holding the key of `mode` at `perm`.
fn mounted_key_dir(env: &Env, mode: Mode, perm: u32) -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let kt = mode.key_type();
    let dir = tempfile::tempdir().expect("tempdir");
    let to = run::runspec::key_file_name(dir.path(), kt);
    std::fs::copy(run::runspec::key_file_name(&env.key_dir(mode), kt), &to).expect("copy");
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(perm)).expect("chmod");
    dir
}

/// A key in a Secret volume readable by others, or writable by the group, is refused
/// before the run starts, naming the file and its permissions; credentials in one alike.
#[test]
fn mounted_secrets_wider_than_0440_are_refused_naming_the_file() {
    let env = Env::new(Kind::Embedded);
    for perm in [0o444, 0o460] {
        let mut spec = env.spec("wide", Mode::X25519, Operation::Put, 1, Loop::Closed);
        let dir = mounted_key_dir(&env, Mode::X25519, perm);
        spec.recipient_key = Some(KeyRef::Mounted(dir.path().to_owned()));
        let out = Command::new(env!("CARGO_BIN_EXE_pqbench-worker"))
            .args(["--quiet", "--spec-env", "PQBENCH_RUN_SPEC"])
            .env(
                "PQBENCH_RUN_SPEC",
                serde_json::to_string(&spec).expect("json"),
            )
            .output()
            .expect("run pqbench-worker");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains(&format!(
                "x25519.key: permissions {perm:04o} let other users"
            )),
            "{err}"
        );
    }
    let creds = tempfile::tempdir().expect("tempdir");
    for (name, value) in [("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "b")] {
        let p = creds.path().join(name);
        std::fs::write(&p, value).expect("write");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let err = worker::engine::resolve_credentials(&run::runspec::Credentials::Mounted(
        creds.path().to_owned(),
    ))
    .expect_err("a world-readable credentials file");
    assert!(
        err.to_string()
            .contains("AWS_ACCESS_KEY_ID: permissions 0644"),
        "{err}"
    );
}

/// The operator's start protocol ([`run::runspec::StartGate`]) as a Job runs it: two
/// `pqbench-worker` processes read one spec from `PQBENCH_RUN_SPEC` and their index from
/// `JOB_COMPLETION_INDEX`; each announces itself ready in the results bucket; this test
/// plays the operator, writes the start instant once both are ready, and both start their
/// warm-up at it. A gate nobody opens fails the process (exit 2) and says where it waited.
#[test]
fn start_gate_starts_every_process_at_the_instant_the_operator_writes() {
    let env = Env::new(Kind::Embedded);
    let mut spec = env.spec(
        "gated",
        Mode::X25519,
        Operation::Get,
        2,
        Loop::Open { rate: 40.0 },
    );
    spec.drain = Dur(Duration::from_secs(1));
    spec.processes.count = 2;
    spec.output = results_output();
    spec.start_gate = Some(run::runspec::StartGate {
        timeout: Dur(Duration::from_secs(60)),
    });
    // The key comes from a Secret volume, its file group-readable (0440) as the kubelet
    // writes it for a non-root pod's fsGroup.
    let mounted = mounted_key_dir(&env, Mode::X25519, 0o440);
    spec.recipient_key = Some(KeyRef::Mounted(mounted.path().to_owned()));
    let json = serde_json::to_string(&spec).expect("json");
    let spawn = |i: u32, json: &str| {
        Command::new(env!("CARGO_BIN_EXE_pqbench-worker"))
            .args([
                "--quiet",
                "--spec-env",
                "PQBENCH_RUN_SPEC",
                "--index-env",
                "JOB_COMPLETION_INDEX",
            ])
            .env("PQBENCH_RUN_SPEC", json)
            .env("JOB_COMPLETION_INDEX", i.to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn pqbench-worker")
    };
    let children: Vec<_> = (0..2).map(|i| spawn(i, &json)).collect();
    let store = env.server.sdk();
    let rt = tokio::runtime::Runtime::new().expect("rt");
    let start = rt.block_on(async {
        let s3 = store.clone();
        let give_up = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let listed = s3
                .list_objects_v2()
                .bucket(BUCKET)
                .prefix("results/gated/ready/")
                .send()
                .await
                .expect("list");
            let ready: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
            if ready.len() == 2 {
                assert_eq!(
                    ready,
                    [
                        run::runspec::ready_key("results/", "gated", 0),
                        run::runspec::ready_key("results/", "gated", 1)
                    ]
                );
                break;
            }
            assert!(
                std::time::Instant::now() < give_up,
                "processes never got ready: {ready:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let at = humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(1))
            .to_string();
        s3.put_object()
            .bucket(BUCKET)
            .key(run::runspec::start_key("results/", "gated"))
            .body(at.clone().into_bytes().into())
            .send()
            .await
            .expect("put start-at");
        at
    });
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().expect("wait");
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "process {i}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let info: ProcessInfo = rt.block_on(async {
            let o = store
                .get_object()
                .bucket(BUCKET)
                .key(format!("results/gated/p{i}/{}", files::PROCESS))
                .send()
                .await
                .expect("process.json uploaded");
            serde_json::from_slice(&o.body.collect().await.expect("body").into_bytes())
                .expect("parse")
        });
        assert_eq!(
            info.start_at, start,
            "process {i} started at the written instant"
        );
        assert!(info.ready_lead_ms > 0.0);
        assert!(info.worker_start_ms.iter().all(|&ms| ms >= 0.0));
    }

    // Nobody opens the gate.
    spec.run_id = "never".into();
    spec.processes.count = 1;
    spec.start_gate = Some(run::runspec::StartGate {
        timeout: Dur(Duration::from_secs(2)),
    });
    let out = spawn(0, &serde_json::to_string(&spec).expect("json"))
        .wait_with_output()
        .expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no start instant at s3://pqbench-test/results/never/start-at within 2s"),
        "{err}"
    );
}

/// Format v2.1 arms (FORMAT-v2.md §10): PUT and GET runs in `v2.1` and `v2.1-prefix`
/// write and read re-wrappable headers, 1,297 bytes for ML-KEM-768 (v2's 1,265 and 32), in
/// every measured request's record; and ML-KEM-1024 in `v2.1` (metadata) is refused.
#[test]
fn v2_1_formats_write_and_read_rewrappable_headers() {
    use run::runspec::ObjectFormat;
    let env = Env::new(Kind::Embedded);
    for format in [ObjectFormat::V2_1, ObjectFormat::V2_1Prefix] {
        for op in [Operation::Put, Operation::Get] {
            let id = format!("{}-{op:?}", format.as_str().replace('.', "")).to_lowercase();
            let mut spec = env.spec(&id, Mode::MlKem768, op, 2, Loop::Closed);
            spec.cell.format = format;
            let w = run_to_files(&spec, &RunOptions::default()).expect("run");
            assert!(w.summary.valid, "{}", run::summary::render(&w.summary));
            let measured: Vec<u64> = records(&w.dir)
                .iter()
                .filter(|r| r.phase == Some(RequestPhase::Measured))
                .map(|r| r.manifest_bytes)
                .collect();
            assert!(!measured.is_empty(), "{id}");
            assert_eq!(w.summary.counts.ok as usize, measured.len(), "{id}");
            assert!(measured.iter().all(|&n| n == 1297), "{id}: {measured:?}");
        }
    }
    assert!(
        ObjectFormat::V2_1
            .refuses(Mode::MlKem1024)
            .is_some_and(|why| why.contains("v2.1-prefix"))
    );
}

/// `requirePq` in the run engine (issue 37): a v2 GET run whose reader requires
/// post-quantum recipients opens every ML-KEM-768 object it reads; an X25519 run that asks
/// for it, or a v1 run, is refused before it starts, saying why.
#[test]
fn a_v2_reader_requiring_post_quantum_runs_and_a_classical_one_is_refused() {
    let env = Env::new(Kind::Embedded);
    let mut spec = env.spec("pq-get", Mode::MlKem768, Operation::Get, 2, Loop::Closed);
    spec.cell.format = run::runspec::ObjectFormat::V2;
    spec.cell.require_pq = true;
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let meas = records(&w.dir)
        .iter()
        .filter(|r| r.phase == Some(RequestPhase::Measured))
        .count();
    assert!(meas > 0);
    assert_eq!(w.summary.counts.ok as usize, meas, "every read opened");
    let mut classic = env.spec("x-get", Mode::X25519, Operation::Get, 1, Loop::Closed);
    classic.cell.format = run::runspec::ObjectFormat::V2;
    classic.cell.require_pq = true;
    let Err(e) = run_to_files(&classic, &RunOptions::default()) else {
        panic!("an X25519 reader requiring post-quantum ran");
    };
    assert!(
        e.to_string().contains("every object would be refused"),
        "{e}"
    );
    let mut v1 = env.spec("v1-get", Mode::MlKem768, Operation::Get, 1, Loop::Closed);
    v1.cell.require_pq = true;
    let Err(e) = run_to_files(&v1, &RunOptions::default()) else {
        panic!("a v1 run requiring post-quantum ran");
    };
    assert!(
        e.to_string()
            .contains("requirePq is a format v2 reader's check"),
        "{e}"
    );
}

/// A remote run (its key in the embedded key service) whose service throttles, or stops in
/// the middle of the window: its GETs fail with the key service's class, the run is
/// invalid, its records are kept, and no request that failed wrote its plaintext (a
/// request succeeds only when its object authenticated).
#[test]
fn a_failing_key_service_makes_a_remote_run_invalid() {
    let env = Env::new(Kind::Embedded);
    let keys = env.key_dir(Mode::MlKem768);
    let start = |rate: Option<u32>| {
        let store = std::sync::Arc::new(kms::KeyStore::open(&keys).expect("key store"));
        let options = kms::ServiceOptions {
            rate,
            ..kms::ServiceOptions::default()
        };
        kms::EmbeddedKms::start(store, &options).expect("key service")
    };
    let remote = |service: &kms::EmbeddedKms, run_id: &str| {
        let creds = env.dir.path().join(format!("{run_id}-kms.env"));
        std::fs::write(
            &creds,
            format!(
                "AWS_ACCESS_KEY_ID={}\nAWS_SECRET_ACCESS_KEY={}\n",
                service.access_key(),
                service.secret_key()
            ),
        )
        .expect("creds");
        set_mode_600(&creds);
        let mut spec = env.spec(run_id, Mode::MlKem768, Operation::Get, 4, Loop::Closed);
        spec.cell.kms = Some(campaign::spec::KmsSpec::default());
        spec.kms = Some(run::runspec::KmsTarget {
            endpoint: service.endpoint().to_owned(),
            region: "us-east-1".into(),
            credentials: Credentials::File(creds),
        });
        spec
    };
    let invalid_with = |s: &run::summary::RunSummary, class: &str| {
        assert!(!s.valid, "{}", run::summary::render(s));
        assert!(
            s.failures_by_class.get(class).copied().unwrap_or(0) > 0,
            "{:?}",
            s.failures_by_class
        );
        assert!(
            s.failures_by_class.keys().all(|k| k.starts_with("kms_")),
            "{:?}",
            s.failures_by_class
        );
        assert!(s.counts.ok > 0, "some requests got through");
    };

    // Twenty answers a second for four workers.
    let service = start(Some(20));
    let spec = remote(&service, "kms-throttled");
    let w = run_to_files(&spec, &RunOptions::default()).expect("the run keeps its records");
    invalid_with(&w.summary, "kms_throttled");
    let recs = records(&w.dir);
    assert!(
        recs.iter()
            .any(|r| r.outcome == Some(Outcome::Error) && r.error_class == Some("kms_throttled")),
        "the records hold the class"
    );
    service.stop();

    // A service that goes away about a second into the window.
    let service = start(None);
    let mut spec = remote(&service, "kms-stopped");
    spec.measured = Dur(Duration::from_secs(3));
    let h = std::thread::spawn(move || run_to_files(&spec, &RunOptions::default()));
    std::thread::sleep(Duration::from_millis(3500));
    service.stop();
    let w = h
        .join()
        .expect("thread")
        .expect("the run keeps its records");
    invalid_with(&w.summary, "kms_unavailable");
}

/// The key service as the operator runs it: `pqbench-worker --serve-kms-env` with its keys
/// and credentials in directories laid out as mounted Secrets (files 0440), one port per
/// round trip. A remote run whose spec names those Secrets as the operator's run specs do
/// (`Mounted`) opens every object through it and is valid; SIGTERM stops the service with
/// exit 0 and what it answered.
#[test]
fn the_key_service_pod_serves_a_remote_run_from_mounted_secrets() {
    use std::io::BufRead as _;
    use std::os::unix::fs::PermissionsExt as _;
    let env = Env::new(Kind::Embedded);
    let mounted = |name: &str, files: &[(&str, &[u8])]| {
        let d = env.dir.path().join(name);
        std::fs::create_dir(&d).expect("mkdir");
        for (file, bytes) in files {
            let p = d.join(file);
            std::fs::write(&p, bytes).expect("write");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o440)).expect("chmod");
        }
        d
    };
    let kt = Mode::MlKem768.key_type();
    let key_file = env
        .key_dir(Mode::MlKem768)
        .join(format!("{}.key", kt.name()));
    let key_json = std::fs::read(&key_file).expect("key file");
    let keys = mounted("keys-secret", &[("ml-kem-768.key", &key_json)]);
    let creds = mounted(
        "kms-credentials",
        &[
            ("AWS_ACCESS_KEY_ID", b"PQKMSTESTKEY"),
            (
                "AWS_SECRET_ACCESS_KEY",
                b"a-secret-of-the-key-service-0123456789",
            ),
        ],
    );
    let free_port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port()
    };
    let (p0, p1) = (free_port(), free_port());
    let ms = |n| Dur(Duration::from_millis(n));
    let mut service_spec = run::keyservice::KeyServiceSpec::new(
        keys.clone(),
        Credentials::Mounted(creds.clone()),
        &[ms(0), ms(1)],
    )
    .expect("key service spec");
    service_spec.ports[0].port = p0;
    service_spec.ports[1].port = p1;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pqbench-worker"))
        .args(["--serve-kms-env", run::keyservice::KEY_SERVICE_SPEC_ENV])
        .env(
            run::keyservice::KEY_SERVICE_SPEC_ENV,
            serde_json::to_string(&service_spec).expect("json"),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("pqbench-worker --serve-kms-env");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut said = Vec::new();
    while said.len() < 3 {
        said.push(lines.next().expect("a line").expect("stdout"));
    }
    assert!(said[0].contains(&format!("port {p0} (rtt 0")), "{said:?}");
    assert!(said[1].contains(&format!("port {p1} (rtt 1ms")), "{said:?}");
    assert!(
        said[2].starts_with("key ") && said[2].ends_with("ML_KEM_768"),
        "{said:?}"
    );

    let mut spec = env.spec("kms-pod", Mode::MlKem768, Operation::Get, 4, Loop::Closed);
    spec.recipient_key = Some(KeyRef::Mounted(keys));
    spec.cell.kms = Some(campaign::spec::KmsSpec {
        rtt: ms(1),
        ..campaign::spec::KmsSpec::default()
    });
    spec.kms = Some(run::runspec::KmsTarget {
        endpoint: format!("http://127.0.0.1:{p1}"),
        region: "us-east-1".into(),
        credentials: Credentials::Mounted(creds),
    });
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    assert!(w.summary.valid, "{}", run::summary::render(&w.summary));
    assert!(w.summary.counts.ok > 0);
    // The service's CPU and memory, read each second from its /metrics.
    let kms = &w.summary.server;
    assert!(
        kms.key_service_cpu_cores.is_some_and(|c| c > 0.0),
        "{kms:?}"
    );
    assert!(
        kms.key_service_max_rss_bytes.is_some_and(|b| b > 1e6),
        "{kms:?}"
    );

    // Format v2 to the same key, through the other port: HPKE's decapsulation in the
    // service, its key schedule and the chunks in the worker.
    let mut v2 = spec.clone();
    v2.run_id = "kms-pod-v2".into();
    v2.cell.format = campaign::spec::ObjectFormat::V2;
    v2.cell.kms = Some(campaign::spec::KmsSpec::default());
    if let Some(k) = v2.kms.as_mut() {
        k.endpoint = format!("http://127.0.0.1:{p0}");
    }
    let w2 = run_to_files(&v2, &RunOptions::default()).expect("v2 run");
    assert!(w2.summary.valid, "{}", run::summary::render(&w2.summary));
    assert!(w2.summary.counts.ok > 0);

    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    // Each run's objects went through its own port (each port answers only what is sent
    // to it; its count also holds the run's warm-up): the v1 run's the 1 ms one, the v2
    // run's the other.
    let answered = |port: u16| -> u64 {
        let prefix = format!("pqbench key service on port {port} stopped (");
        stderr
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{stderr}"))
    };
    let (v1_ok, v2_ok) = (w.summary.counts.ok, w2.summary.counts.ok);
    assert!(answered(p1) >= v1_ok, "{stderr}");
    assert!(answered(p0) >= v2_ok, "{stderr}");
}
