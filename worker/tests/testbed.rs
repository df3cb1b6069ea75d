//! The testbed probes as `pqbench run` takes them: Debian's iperf3, fio and ping as their
//! own processes on this host (`.ci/run` installs them), read into baselines.

use std::time::Duration;

use worker::testbed::{Iperf3Server, Plan, Probe, ProbeSettings, take};

#[test]
fn iperf3_fio_and_ping_measure_this_host() {
    let disk = tempfile::tempdir().expect("a directory for fio");
    let t0 = std::time::Instant::now();
    let b = take(&Plan {
        site: "this host".into(),
        server_host: "127.0.0.1".into(),
        iperf3: Iperf3Server::Start,
        disk_dir: Ok(disk.path().to_path_buf()),
        server_cpus: None,
        client_cpus: None,
        server_cores: Some(1.0),
        settings: ProbeSettings {
            seconds: 1,
            streams: 2,
        },
    });
    let Probe::Measured(n) = &b.network else {
        panic!("network: {:?}", b.network)
    };
    // Loopback moves at least 100 Mbit/s each way on any machine that runs these tests.
    assert!(
        n.upload_bits_per_s > 1e8 && n.download_bits_per_s > 1e8,
        "{n:?}"
    );
    assert!(n.tool.starts_with("iperf 3") && n.streams == 2, "{n:?}");
    let Probe::Measured(d) = &b.disk else {
        panic!("disk: {:?}", b.disk)
    };
    assert!(
        d.write_bytes_per_s > 1e6 && d.write_latency_ms > 0.0,
        "{d:?}"
    );
    assert!(d.tool.starts_with("fio-"), "{d:?}");
    let Probe::Measured(r) = &b.round_trip else {
        panic!("round trip: {:?}", b.round_trip)
    };
    assert!(
        r.count == 5 && r.min_ms <= r.avg_ms && r.avg_ms <= r.max_ms,
        "{r:?}"
    );
    // fio's file went with its directory.
    assert_eq!(
        std::fs::read_dir(disk.path())
            .expect("fio's parent")
            .count(),
        0
    );
    // Two iperf3 seconds, one of fio, about one of ping, and the tools' start-up.
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
}

#[test]
fn a_probe_with_nothing_to_aim_at_says_why_and_the_others_still_run() {
    let b = take(&Plan {
        site: "this host".into(),
        server_host: "127.0.0.1".into(),
        iperf3: Iperf3Server::None("the S3 server is elsewhere".into()),
        disk_dir: Err("its disk is not this host's".into()),
        server_cpus: None,
        client_cpus: Some("0".into()),
        server_cores: None,
        settings: ProbeSettings {
            seconds: 1,
            streams: 1,
        },
    });
    assert_eq!(
        b.network,
        Probe::NotMeasured("the S3 server is elsewhere".into())
    );
    assert_eq!(
        b.disk,
        Probe::NotMeasured("its disk is not this host's".into())
    );
    // ping under taskset on CPU 0.
    assert!(b.round_trip.measured().is_some(), "{:?}", b.round_trip);
}

/// An `iperf3 -s` on a port of its own, stopped when dropped (the sidecar beside MinIO).
struct Iperf3Sidecar(std::process::Child, u16);

impl Iperf3Sidecar {
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("iperf3")
            .args(["-s", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("iperf3 (Debian: apt-get install iperf3)");
        Self(child, port)
    }
}

impl Drop for Iperf3Sidecar {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// MinIO's disk-probe init container as its command line runs it: the JSON on stdout and
/// in the termination log, fio's files gone from the volume after, and exit 0 with the
/// reason when fio cannot write there (the server starts either way).
#[test]
fn the_disk_probe_init_container_leaves_its_result_as_the_termination_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("the data volume");
    let log = dir.path().join("termination-log");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pqbench-worker"))
        .arg("--disk-probe")
        .arg(&data)
        .args(["--probe-seconds", "1", "--termination-log"])
        .arg(&log)
        .output()
        .expect("pqbench-worker");
    assert!(out.status.success(), "{out:?}");
    let message = std::fs::read_to_string(&log).expect("the termination log");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), message);
    let disk = run::preflight::disk_from_message(Some(&message));
    let d = disk.measured().unwrap_or_else(|| panic!("{disk:?}"));
    assert!(
        d.write_bytes_per_s > 1e6 && d.tool.starts_with("fio-"),
        "{d:?}"
    );
    assert!(message.len() < run::preflight::TERMINATION_MESSAGE_LIMIT);
    assert_eq!(
        std::fs::read_dir(&data).expect("data").count(),
        0,
        "fio's files are gone"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pqbench-worker"))
        .args(["--disk-probe", "/nonexistent/data", "--probe-seconds", "1"])
        .output()
        .expect("pqbench-worker");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    match run::preflight::disk_from_message(Some(&text)) {
        Probe::NotMeasured(why) => assert!(why.contains("/nonexistent/data"), "{why}"),
        Probe::Measured(d) => panic!("measured a directory that is not there: {d:?}"),
    }
}

/// The operator's pre-flight probe Job as its pod runs it: `pqbench-worker --probe-env
/// PQBENCH_PROBE_SPEC` as a process, iperf3 both ways against a server beside the S3
/// server (as the sidecar beside MinIO), ping, the disk as the init container's message
/// gave it; `baselines.json` lands under the results prefix.
#[test]
fn the_probe_jobs_process_writes_the_baselines_under_the_results_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = s3::EmbeddedS3::start(&dir.path().join("s3"), 0).expect("the S3 server");
    server.create_bucket("results").expect("the results bucket");
    let sidecar = Iperf3Sidecar::start();
    let disk = Probe::Measured(worker::testbed::Disk {
        write_bytes_per_s: 1.5e9,
        write_latency_ms: 0.7,
        block_bytes: 1 << 20,
        direct: true,
        tool: "fio-3.33".into(),
    });
    let s = server.settings();
    let spec = run::preflight::ProbeSpec {
        site: "node group clients".into(),
        iperf3: Ok(sidecar.1),
        disk: disk.clone(),
        server_cores: Some(2.0),
        settings: ProbeSettings {
            seconds: 1,
            streams: 2,
        },
        s3: run::runspec::S3Target {
            endpoint: s.endpoint.clone(),
            region: s.region.clone(),
            bucket: "under-test".into(),
            credentials: run::runspec::Credentials::default(),
            client: Default::default(),
        },
        results: run::runspec::Output::S3 {
            bucket: "results".into(),
            prefix: "team-a/c/u1/".into(),
            endpoint: None,
            credentials: None,
            region: None,
        },
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pqbench-worker"))
        .args(["--probe-env", run::preflight::PROBE_SPEC_ENV])
        .env(
            run::preflight::PROBE_SPEC_ENV,
            serde_json::to_string(&spec).expect("the spec"),
        )
        .env("AWS_ACCESS_KEY_ID", &s.access_key)
        .env("AWS_SECRET_ACCESS_KEY", s.secret_key.as_str())
        .output()
        .expect("pqbench-worker");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains(s.secret_key.as_str()), "{stderr}");
    let rt = tokio::runtime::Runtime::new().expect("rt");
    let body = rt.block_on(async {
        s.client()
            .expect("a client")
            .get_object()
            .bucket("results")
            .key("team-a/c/u1/baselines.json")
            .send()
            .await
            .expect("baselines.json under the prefix")
            .body
            .collect()
            .await
            .expect("its body")
            .into_bytes()
    });
    let b: worker::testbed::Baselines = serde_json::from_slice(&body).expect("baselines");
    assert_eq!(b.site, "node group clients");
    assert_eq!(b.server_host, "127.0.0.1", "the endpoint's host");
    assert_eq!(b.server_cores, Some(2.0));
    assert_eq!(b.disk, disk, "the init container's, as given");
    let n = b
        .network
        .measured()
        .unwrap_or_else(|| panic!("{:?}", b.network));
    assert!(
        n.upload_bits_per_s > 1e8 && n.download_bits_per_s > 1e8,
        "{n:?}"
    );
    assert!(b.round_trip.measured().is_some(), "{:?}", b.round_trip);
    assert!(stderr.contains("testbed baselines:"), "{stderr}");
}
