//! The bottleneck label of each cell (`analysis::testbed`) on planted runs whose use of
//! each ceiling is known, through the whole analysis as both executors call it.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use analysis::testbed::{Probe, Resource};

mod plant;
use plant::testbed::{MIB, baselines, config, rows};

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
