//! Traces and metrics of a real run against the embedded S3 server (issue 7):
//!
//! - an in-process OTLP/gRPC receiver (`fake-opentelemetry-collector` 0.42) gets one
//!   `pqbench.request` span per request at sample ratio 1, each with the five stage
//!   children and the S3 calls under `storage`, parent links and attributes right, and
//!   durations equal to the recorded stage timers;
//! - the worker's `/metrics` passes `promtool check metrics` (Debian's `prometheus`
//!   package) with no lint finding, and a real Prometheus on 127.0.0.1 scrapes it during a
//!   run; a query returns the request counter.
//!
//! These tests fail (never skip) without `promtool`/`prometheus`: `.ci/run` installs them.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    reason = "span times and counts in tests are small"
)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use campaign::units::{Dur, Size};
use envelope::{KeyType, Mode, SecretKey};
use fake_opentelemetry_collector::{ExportedSpan, FakeCollectorServer};
use run::records::{Outcome, RECORD_SCHEMA, Record, records_from_table};
use run::runspec::{Cell, KeyRef, Loop, Operation, RunSpec};
use run::summary::files;
use run::table::Table;
use run::trace::{OtlpProtocol, TraceSpec};
use s3::EmbeddedS3;
use worker::engine::{RunOptions, run_to_files};
use worker::parquet::TableFile as _;

#[path = "support/promtool.rs"]
mod promtool;
use promtool::promtool_clean;

const BUCKET: &str = "observe";

struct Env {
    server: EmbeddedS3,
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = EmbeddedS3::start(&dir.path().join("s3"), 0).expect("embedded S3");
        server.create_bucket(BUCKET).expect("bucket");
        Self { server, dir }
    }

    fn spec(&self, run_id: &str, mode: Mode, op: Operation, concurrency: u32) -> RunSpec {
        let s = self.server.settings();
        let cell = Cell {
            mode,
            backend: envelope::Backend::AwsLc,
            operation: op,
            object_size: Size(16 * 1024),
            concurrency,
            arrival: Loop::Closed,
            format: Default::default(),
            require_pq: false,
            kms: None,
        };
        let mut spec = RunSpec::local(
            run_id,
            cell,
            &s.endpoint,
            BUCKET,
            &self.dir.path().join("out"),
        );
        let creds = self.dir.path().join("s3.env");
        std::fs::write(
            &creds,
            format!(
                "AWS_ACCESS_KEY_ID={}\nAWS_SECRET_ACCESS_KEY={}\n",
                s.access_key,
                s.secret_key.as_str()
            ),
        )
        .expect("creds");
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o600))
                .expect("chmod");
        }
        spec.s3.credentials = run::runspec::Credentials::File(creds);
        let keys = self.dir.path().join("keys");
        std::fs::create_dir_all(&keys).expect("keys dir");
        let kt = mode.key_type();
        let p = keys.join(format!("{}.key", kt.name()));
        if kt != KeyType::None && !p.exists() {
            SecretKey::generate(kt, &mut envelope::os_rng())
                .expect("keygen")
                .write_file(&p)
                .expect("key file");
        }
        spec.recipient_key = Some(KeyRef::Dir(keys));
        spec.warmup = Dur(Duration::from_millis(500));
        spec.measured = Dur(Duration::from_secs(1));
        spec.fixtures = 8;
        spec
    }
}

fn records(dir: &Path) -> Vec<Record> {
    let t = Table::read_parquet(&dir.join(files::RECORDS), RECORD_SCHEMA).expect("records");
    records_from_table(&t).expect("decode").1
}

/// An attribute's value as text. The receiver keeps the protobuf value's `Debug` form
/// (`Some(AnyValue { value: Some(IntValue(3)) })`); this takes the value out of it.
fn attr(s: &ExportedSpan, key: &str) -> String {
    let raw = s
        .attributes
        .get(key)
        .unwrap_or_else(|| panic!("{} has no attribute {key}: {:?}", s.name, s.attributes));
    for (tag, quoted) in [("StringValue(\"", true), ("IntValue(", false)] {
        if let Some(i) = raw.find(tag) {
            let rest = &raw[i + tag.len()..];
            let end = if quoted {
                rest.find("\")")
            } else {
                rest.find(')')
            };
            return rest[..end.expect("closing")].to_owned();
        }
    }
    panic!("unexpected attribute form {raw}")
}

fn dur(s: &ExportedSpan) -> Duration {
    Duration::from_nanos(s.end_time_unix_nano - s.start_time_unix_nano)
}

/// Two stage times agree: within 5 % (the bound) and, as built, within 1 µs.
fn agree(span: Duration, timer: Duration, what: &str) {
    let diff = span.abs_diff(timer);
    assert!(
        diff <= Duration::from_micros(1) || diff.as_secs_f64() <= 0.05 * timer.as_secs_f64(),
        "{what}: span {span:?} vs stage timer {timer:?}"
    );
}

fn traced_run(op: Operation, mode: Mode) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut collector = rt
        .block_on(FakeCollectorServer::start())
        .expect("fake collector");
    let endpoint = collector.endpoint();
    // The receiver hands spans over through a bounded channel: drain it while the run goes,
    // until `want` spans are in (set once the run says how many it sent) or 20 s after.
    let want = Arc::new(AtomicU64::new(u64::MAX));
    let drain = {
        let want = want.clone();
        rt.spawn(async move {
            let mut all = Vec::new();
            let mut deadline = None;
            loop {
                all.extend(collector.exported_spans(1, Duration::from_millis(50)).await);
                let w = want.load(Ordering::Relaxed);
                if w != u64::MAX {
                    let d =
                        *deadline.get_or_insert_with(|| Instant::now() + Duration::from_secs(20));
                    if all.len() as u64 >= w || Instant::now() > d {
                        break;
                    }
                }
            }
            collector.abort();
            all
        })
    };
    let env = Env::new();
    let mut spec = env.spec(&format!("traced-{}", op.as_str()), mode, op, 2);
    spec.traces = Some(TraceSpec {
        endpoint: Some(endpoint),
        protocol: Some(OtlpProtocol::Grpc),
        sample_ratio: Some(1.0),
    });
    let w = run_to_files(&spec, &RunOptions::default()).expect("run");
    let recs = records(&w.dir);
    assert!(recs.len() >= 4, "{} records", recs.len());
    assert!(recs.iter().all(|r| r.outcome == Some(Outcome::Ok)));
    let report = w.traces.expect("trace report");
    assert_eq!(report.requests_traced, recs.len() as u64, "{report:?}");
    assert_eq!(report.spans_exported, report.spans, "{report:?}");
    assert_eq!(report.spans_lost, 0, "{report:?}");

    want.store(report.spans, Ordering::Relaxed);
    let spans = rt.block_on(drain).expect("drain task");
    assert_eq!(
        spans.len() as u64,
        report.spans,
        "every span handed over arrived"
    );
    let by_id: BTreeMap<&str, &ExportedSpan> =
        spans.iter().map(|s| (s.span_id.as_str(), s)).collect();
    let children = |parent: &ExportedSpan| -> Vec<&ExportedSpan> {
        spans
            .iter()
            .filter(|s| s.parent_span_id == parent.span_id && s.trace_id == parent.trace_id)
            .collect()
    };
    let requests: Vec<&ExportedSpan> = spans
        .iter()
        .filter(|s| s.name == "pqbench.request")
        .collect();
    assert_eq!(requests.len(), recs.len(), "one request span per request");
    // Each request span is a root, and every other span hangs below one.
    for s in &spans {
        if s.name == "pqbench.request" {
            assert!(
                s.parent_span_id.is_empty(),
                "request span with a parent: {s:?}"
            );
        } else {
            assert!(
                by_id.contains_key(s.parent_span_id.as_str()),
                "orphan span {s:?}"
            );
        }
    }
    for req in requests {
        let worker_ix: u32 = attr(req, "pqbench.worker").parse().expect("worker");
        let seq: u64 = attr(req, "pqbench.seq").parse().expect("seq");
        let r = recs
            .iter()
            .find(|r| r.worker == worker_ix && r.seq == seq)
            .expect("the span's request is recorded");
        assert_eq!(attr(req, "pqbench.run_id"), spec.run_id);
        assert_eq!(attr(req, "pqbench.mode"), mode.name());
        assert_eq!(attr(req, "pqbench.backend"), "aws-lc");
        assert_eq!(attr(req, "pqbench.operation"), op.as_str());
        assert_eq!(attr(req, "pqbench.object_size"), "16384");
        assert_eq!(attr(req, "pqbench.outcome"), "ok");
        assert_eq!(attr(req, "pqbench.bytes_sent"), r.bytes_sent.to_string());
        assert_eq!(
            attr(req, "pqbench.bytes_received"),
            r.bytes_received.to_string()
        );
        agree(dur(req), r.total, "request");
        let kids = children(req);
        let mut names: Vec<&str> = kids.iter().map(|k| k.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "aead",
                "key_derivation",
                "key_establishment",
                "manifest",
                "storage"
            ],
            "the five stage children"
        );
        for k in &kids {
            let stage = s3::Stage::ALL
                .into_iter()
                .find(|s| s.as_str() == k.name)
                .expect("a stage");
            agree(dur(k), r.stage(stage), &k.name);
            assert!(
                k.start_time_unix_nano >= req.start_time_unix_nano,
                "{} starts inside the request",
                k.name
            );
        }
        // The S3 calls under storage add up to it.
        let storage = kids.iter().find(|k| k.name == "storage").expect("storage");
        let calls = children(storage);
        assert_eq!(calls.len() as u32, r.s3_requests, "one span per S3 call");
        let want: &[&str] = match op {
            Operation::Put => &["S3.PutObject", "S3.PutObject"],
            Operation::Get => &["S3.GetObject", "S3.GetObject"],
        };
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            want
        );
        let sum: Duration = calls.iter().map(|c| dur(c)).sum();
        agree(sum, r.storage, "sum of S3 calls");
        assert!(
            calls
                .iter()
                .all(|c| attr(c, "rpc.method") == c.name["S3.".len()..]
                    && attr(c, "aws.s3.bucket") == BUCKET)
        );
    }
}

#[test]
fn put_traces_match_the_stage_timers() {
    traced_run(Operation::Put, Mode::MlKem768);
}

#[test]
fn get_traces_match_the_stage_timers() {
    traced_run(Operation::Get, Mode::X25519);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

fn http_get(addr: &str, path: &str, accept: Option<&str>) -> Option<(String, String)> {
    use std::io::Read as _;
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).ok()?;
    let (head, body) = buf.split_once("\r\n\r\n")?;
    Some((head.to_owned(), body.to_owned()))
}

struct Prometheus(std::process::Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_scrapes_the_worker_during_a_run() {
    let env = Env::new();
    let mut spec = env.spec("scraped", Mode::MlKem768, Operation::Put, 2);
    spec.measured = Dur(Duration::from_secs(5));
    let metrics_port = free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");

    // A real Prometheus scraping the worker every second.
    let prom_dir = env.dir.path().join("prometheus");
    std::fs::create_dir_all(&prom_dir).expect("dir");
    let config = prom_dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: pqbench-worker\n    static_configs:\n      - targets: ['{metrics_addr}']\n"
        ),
    )
    .expect("config");
    let prom_port = free_port();
    let prom_addr = format!("127.0.0.1:{prom_port}");
    let _prom = Prometheus(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                prom_dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(prom_dir.join("log")).expect("log"))
            .spawn()
            .expect("prometheus (Debian package prometheus; .ci/run installs it)"),
    );

    let opts = RunOptions {
        progress: false,
        metrics_addr: Some(metrics_addr.parse().expect("addr")),
    };
    let run = std::thread::spawn(move || run_to_files(&spec, &opts));
    // While the run goes: the worker's own exposition, both formats.
    let mut text = None;
    let mut om = None;
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(50));
        if let Some((head, body)) = http_get(&metrics_addr, "/metrics", None)
            && body.contains("pqbench_requests_total{")
        {
            assert!(head.contains("text/plain; version=0.0.4"), "{head}");
            text = Some(body);
            om = http_get(
                &metrics_addr,
                "/metrics",
                Some("application/openmetrics-text;version=1.0.0"),
            );
            break;
        }
    }
    let text = text.expect("the worker served /metrics with requests during the run");
    promtool_clean(&text);
    let (head, om) = om.expect("OpenMetrics exposition");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(om.trim_end().ends_with("# EOF"), "{om}");
    for family in [
        "pqbench_requests_total",
        "pqbench_request_duration_seconds",
        "pqbench_stage_duration_seconds",
        "pqbench_sent_bytes_total",
        "pqbench_received_bytes_total",
        "pqbench_in_flight_requests",
        "pqbench_queue_wait_seconds",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family} missing:\n{text}"
        );
    }
    assert!(text.contains("stage=\"key_establishment\""), "{text}");

    // Prometheus scraped it: the counter is in its database.
    let mut found = None;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(200));
        if let Some((_, body)) = http_get(
            &prom_addr,
            "/api/v1/query?query=pqbench_requests_total%7Boutcome%3D%22ok%22%7D",
            None,
        ) && body.contains("\"result\":[{")
        {
            found = Some(body);
            break;
        }
    }
    let w = run.join().expect("run thread").expect("run");
    let body = found.unwrap_or_else(|| {
        panic!(
            "Prometheus never returned pqbench_requests_total; its log:\n{}",
            std::fs::read_to_string(prom_dir.join("log")).unwrap_or_default()
        )
    });
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    let result = &v["data"]["result"][0];
    assert_eq!(result["metric"]["mode"], "ml-kem-768", "{body}");
    assert_eq!(result["metric"]["operation"], "put", "{body}");
    assert_eq!(result["metric"]["job"], "pqbench-worker", "{body}");
    let n: f64 = result["value"][1]
        .as_str()
        .expect("value")
        .parse()
        .expect("number");
    assert!(n >= 1.0, "{body}");
    assert!(n <= records(&w.dir).len() as f64, "{body}");
}
