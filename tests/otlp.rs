//! `pqbench run-one --otlp-endpoint` against a separate collector process (issue 7): Rotel
//! (`rotel` from PyPI, `tests/interop/requirements.txt`), listening on OTLP gRPC and HTTP
//! on 127.0.0.1 with the blackhole exporter and a debug log of the traces it receives. Its
//! log must name the request, stage and S3 call spans, and run-one must say where the spans
//! went and that the collector accepted all of them.
//!
//! Fails (never skips) when Rotel is missing: `.ci/run` installs the venv.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn python() -> String {
    std::env::var("PQBENCH_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn rotel_agent() -> PathBuf {
    let out = Command::new(python())
        .args([
            "-c",
            "import os, rotel; print(os.path.join(os.path.dirname(rotel.__file__), 'rotel-agent'))",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python()));
    assert!(
        out.status.success(),
        "rotel is not installed for {}: pip install -r tests/interop/requirements.txt ({})",
        python(),
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Two distinct free ports (both held while the second is chosen).
fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let b = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = |l: &std::net::TcpListener| l.local_addr().expect("addr").port();
    (port(&a), port(&b))
}

struct Rotel {
    child: Child,
    log: PathBuf,
    grpc: u16,
    http: u16,
}

impl Rotel {
    fn start(dir: &Path) -> Self {
        let (grpc, http) = free_ports();
        let log = dir.join("rotel.log");
        let child = Command::new(rotel_agent())
            .args(["start", "--otlp-grpc-endpoint"])
            .arg(format!("127.0.0.1:{grpc}"))
            .arg("--otlp-http-endpoint")
            .arg(format!("127.0.0.1:{http}"))
            .args(["--exporter", "blackhole", "--debug-log", "traces"])
            .args(["--debug-log-verbosity", "detailed"])
            .arg("--pid-file")
            .arg(dir.join("rotel.pid"))
            .arg("--log-file")
            .arg(dir.join("rotel-daemon.log"))
            .env("NO_COLOR", "1")
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(Stdio::null())
            .spawn()
            .expect("rotel-agent");
        let give_up = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", grpc)).is_err()
            || std::net::TcpStream::connect(("127.0.0.1", http)).is_err()
        {
            assert!(Instant::now() < give_up, "rotel did not listen within 20 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            log,
            grpc,
            http,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Rotel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_one(dir: &Path, run_id: &str, op: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pqbench"));
    cmd.args(["run-one", "--mode", "ml-kem-768", "--op", op])
        .args(["--size", "4KiB", "--warmup", "500ms", "--measured", "1s"])
        .args(["--run-id", run_id])
        .arg("--out")
        .arg(dir.join("out"))
        .args(extra);
    for (k, _) in std::env::vars() {
        if k.starts_with("OTEL_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .envs(env.iter().copied())
        .output()
        .expect("pqbench run-one");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // A run the study's checks call invalid (on a loaded 2-core machine, the collector's
    // debug log competes for the CPU) still exports its spans; that is what is tested here.
    assert!(
        out.status.success() || stderr.contains("the run is invalid"),
        "run-one failed:\n{stderr}"
    );
    stderr
}

fn wait_for(rotel: &Rotel, needles: &[&str]) -> String {
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let log = rotel.log();
        if needles.iter().all(|n| log.contains(n)) {
            return log;
        }
        assert!(
            Instant::now() < give_up,
            "rotel's debug log lacks one of {needles:?}:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The "traces: …" line run-one prints: every span handed over was accepted.
fn all_accepted(stderr: &str, endpoint: &str, protocol: &str) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("traces: "))
        .unwrap_or_else(|| panic!("no traces line:\n{stderr}"));
    assert!(line.contains(endpoint) && line.contains(protocol), "{line}");
    assert!(!line.contains("LOST"), "{line}");
    // "traces: N requests traced (…), S spans → … : A accepted"
    let before = |word: &str| -> u64 {
        let head = &line[..line
            .find(word)
            .unwrap_or_else(|| panic!("{word} in {line}"))];
        let digits: String = head
            .trim_end()
            .chars()
            .rev()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .chars()
            .rev()
            .collect::<String>()
            .parse()
            .expect("a count")
    };
    let (n, s, a) = (
        before(" requests traced"),
        before(" spans"),
        before(" accepted"),
    );
    assert!(n > 0 && s >= 6 * n && a == s, "{line}");
}

#[test]
fn run_one_exports_spans_to_a_separate_collector_over_grpc_and_http() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rotel = Rotel::start(dir.path());

    // gRPC, configured by the standard variables alone.
    let grpc = format!("http://127.0.0.1:{}", rotel.grpc);
    let err = run_one(
        dir.path(),
        "otlp-grpc",
        "put",
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &grpc),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.2"),
        ],
    );
    all_accepted(&err, &grpc, "grpc");
    wait_for(
        &rotel,
        &[
            "pqbench.request",
            "key_establishment",
            "key_derivation",
            "aead",
            "manifest",
            "storage",
            "S3.PutObject",
            "otlp-grpc",
        ],
    );

    // HTTP/protobuf, configured by flags: the base endpoint gets /v1/traces.
    let http = format!("http://127.0.0.1:{}", rotel.http);
    let err = run_one(
        dir.path(),
        "otlp-http",
        "get",
        &[
            "--otlp-endpoint",
            &http,
            "--otlp-protocol",
            "http/protobuf",
            "--trace-sample-ratio",
            "0.2",
        ],
        &[],
    );
    all_accepted(&err, &format!("{http}/v1/traces"), "http/protobuf");
    wait_for(&rotel, &["S3.GetObject", "otlp-http"]);
}
