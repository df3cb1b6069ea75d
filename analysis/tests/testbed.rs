//! The bottleneck label of each cell (`analysis::testbed`) on planted runs whose use of
//! each ceiling is known, through the whole analysis as both executors call it.

use analysis::testbed::{Baselines, Disk, Network, Probe, Resource, RoundTrip};
use analysis::{Config, RunRow};
use campaign::spec::Operation;

const MIB: f64 = 1_048_576.0;

fn baselines() -> Baselines {
    Baselines {
        site: "this host".into(),
        taken_unix_s: 0.0,
        server_host: "127.0.0.1".into(),
        server_cores: Some(2.0),
        // 1 Gbit/s up, 2 down: a direction's share is easy to plant.
        network: Probe::Measured(Network {
            upload_bits_per_s: 1e9,
            download_bits_per_s: 2e9,
            streams: 4,
            seconds: 1,
            tool: "iperf 3.12".into(),
        }),
        disk: Probe::Measured(Disk {
            write_bytes_per_s: 100.0 * MIB,
            write_latency_ms: 1.0,
            block_bytes: 1 << 20,
            direct: true,
            tool: "fio-3.33".into(),
        }),
        round_trip: Probe::Measured(RoundTrip {
            count: 5,
            min_ms: 0.1,
            avg_ms: 0.2,
            max_ms: 0.3,
            mdev_ms: 0.05,
        }),
    }
}

/// A run of `cell` using `client` of its 2 cores, `server` of the server's 2, moving
/// `sent`/`received` bytes per request at `rps`, writing `disk` MiB/s.
#[allow(clippy::too_many_arguments)]
fn run(
    cell: &str,
    mode: &str,
    block: u32,
    (op, size): (Operation, u64),
    client: f64,
    server: f64,
    (rps, sent, received): (f64, f64, f64),
    disk: f64,
) -> RunRow {
    RunRow {
        run_id: format!("{cell}-{mode}-{block}"),
        cell: cell.into(),
        mode: mode.into(),
        block,
        throughput_rps: rps,
        cpu_per_request_us: 1e6 * client / rps,
        client_cores_used: client,
        client_cores_available: 2.0,
        server_cpu_cores: Some(server),
        operation: Some(op),
        object_size: Some(size),
        concurrency: Some(8),
        bytes_sent: Some(sent),
        bytes_received: Some(received),
        server_disk_write_mib_s: Some(disk),
        ..RunRow::default()
    }
}

/// Four cells, each bound by something else, two arms, three blocks.
fn rows() -> Vec<RunRow> {
    let mut out = Vec::new();
    for block in 0..3 {
        let b = f64::from(block);
        for mode in ["x25519", "ml-kem-768"] {
            // Small GETs: the client's two cores at 98–99 %.
            out.push(run(
                "get-1KiB-c8",
                mode,
                block,
                (Operation::Get, 1024),
                1.96 + 0.01 * b,
                1.0,
                (20_000.0, 400.0, 1500.0),
                0.0,
            ));
            // Large GETs: 1 MiB down at 230 requests/s ≈ 1.93 Gbit/s of 2.
            out.push(run(
                "get-1MiB-c8",
                mode,
                block,
                (Operation::Get, 1 << 20),
                0.8,
                1.2,
                (230.0 + b, 500.0, MIB + 500.0),
                0.0,
            ));
            // Large PUTs: 95 MiB/s of the disk's 100, 95 × 8 Mbit/s of 1 Gbit/s up (0.797).
            out.push(run(
                "put-1MiB-c8",
                mode,
                block,
                (Operation::Put, 1 << 20),
                0.5,
                1.0,
                (95.0, MIB, 300.0),
                94.0 + b,
            ));
            // Small PUTs at low load: nothing near a ceiling.
            out.push(run(
                "put-1KiB-c8",
                mode,
                block,
                (Operation::Put, 1024),
                0.3,
                0.4,
                (900.0, 1500.0, 300.0),
                1.0,
            ));
        }
    }
    out
}

fn config(b: Option<Baselines>) -> Config {
    Config {
        baseline: "x25519".into(),
        control: None,
        analysis: campaign::spec::Analysis::default(),
        seed: 1,
        arms: Vec::new(),
        comparisons: Vec::new(),
        arm_details: Vec::new(),
        analysis_time_settings: Vec::new(),
        baselines: b,
    }
}

#[test]
fn each_cell_is_labelled_by_the_ceiling_it_reaches() {
    let r = analysis::analyze(&rows(), &config(Some(baselines()))).expect("analysis");
    let labels: Vec<(&str, &str)> = r
        .bottlenecks
        .iter()
        .map(|c| (c.cell.as_str(), c.label_word()))
        .collect();
    assert_eq!(
        labels,
        [
            ("get-1KiB-c8", "client"),
            ("get-1MiB-c8", "network"),
            ("put-1MiB-c8", "disk"),
            ("put-1KiB-c8", "latency"),
        ]
    );
    let get = &r.bottlenecks[1];
    let net = get.usage_of(Resource::Network).expect("network judged");
    // Six runs: 231 ± 1 requests/s of (1 MiB + 500 B) down against 2 Gbit/s.
    let expect = 231.0 * (MIB + 500.0) * 8.0 / 2e9;
    assert!((net.mean - expect).abs() < 1e-12, "{net:?}");
    let (lo, hi) = net.ci.expect("an interval over six runs");
    assert!(lo < net.mean && net.mean < hi && net.runs == 6, "{net:?}");
    // The server: 1.2 of its 2 cores.
    let server = get.usage_of(Resource::Server).expect("server judged");
    assert!((server.mean - 0.6).abs() < 1e-12 && !server.reached);
    // Large PUTs: the disk at 95 %, the upload at 0.797 (not reached).
    let put = &r.bottlenecks[2];
    assert!((put.usage_of(Resource::Disk).expect("disk judged").mean - 0.95).abs() < 1e-12);
    let up = put
        .usage_of(Resource::Network)
        .expect("network judged")
        .mean;
    assert!((up - 95.0 * MIB * 8.0 / 1e9).abs() < 1e-12, "{up}");
    assert!(r.bottlenecks.iter().all(|c| c.unjudged.is_empty()));
    // The report's words and the status headline.
    assert_eq!(
        analysis::words::bottleneck_counts(&r.bottlenecks).as_deref(),
        Some("bottlenecks: 1 cell client-bound, 1 network-bound, 1 disk-bound, 1 latency-bound")
    );
    assert!(
        r.bottlenecks[3]
            .in_words()
            .starts_with("put-1KiB-c8: latency-bound, no ceiling reached (client 15.0 %"),
        "{}",
        r.bottlenecks[3].in_words()
    );
    // report.json keeps them and reads them back.
    let json = serde_json::to_string(&r).expect("report.json");
    let back: analysis::Report = serde_json::from_str(&json).expect("read back");
    assert_eq!(back.bottlenecks, r.bottlenecks);
    assert_eq!(back.config.baselines, r.config.baselines);
}

#[test]
fn without_baselines_only_the_cpus_are_judged_and_the_rest_says_why() {
    let r = analysis::analyze(&rows(), &config(None)).expect("analysis");
    let get = &r.bottlenecks[0];
    assert_eq!(get.label, Some(Resource::Client));
    assert_eq!(
        get.usage.iter().map(|u| u.resource).collect::<Vec<_>>(),
        [Resource::Client]
    );
    assert_eq!(
        get.unjudged,
        [
            "server: no baselines were taken (no baselines.json)",
            "network: no baselines were taken (no baselines.json)",
            "disk: no baselines were taken (no baselines.json)",
        ]
    );
    // A probe that could not run gives its own reason.
    let mut b = baselines();
    b.network =
        Probe::NotMeasured("iperf3 is not installed (Debian: apt-get install iperf3)".into());
    b.server_cores = None;
    let r = analysis::analyze(&rows(), &config(Some(b))).expect("analysis");
    assert_eq!(
        r.bottlenecks[1].unjudged,
        [
            "server: the server's cores are not known (the server is not confined to CPUs)",
            "network: iperf3 is not installed (Debian: apt-get install iperf3)",
        ]
    );
    // Without the network the large GETs reach nothing judged.
    assert_eq!(r.bottlenecks[1].label_word(), "latency");
}
