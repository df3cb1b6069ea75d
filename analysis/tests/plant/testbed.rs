//! Four cells, each bound by a different ceiling (client, network, disk, none), with the
//! testbed's baselines: the bottleneck label's planted campaign.

use analysis::testbed::{Baselines, Disk, Network, Probe, RoundTrip};
use analysis::{Config, RunRow};
use campaign::spec::Operation;

pub const MIB: f64 = 1_048_576.0;

pub fn baselines() -> Baselines {
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
pub fn rows() -> Vec<RunRow> {
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

pub fn config(b: Option<Baselines>) -> Config {
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
        implementations: None,
    }
}
