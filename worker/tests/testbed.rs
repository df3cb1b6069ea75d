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
