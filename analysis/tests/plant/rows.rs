//! Rows of one-cell and few-cell campaigns: paired arms, the study's controls (P1, C2, B2),
//! declared comparisons with invalid attempts.

use analysis::{Config, RunAttempts, RunRow};
use campaign::spec::Operation;
use campaign::spec::{ComparisonSpec, PrimarySpec};

/// A run of `mode` in `cell`, block `block`, with throughput `tp` and CPU per request
/// `cpu` µs (one of two cores used, one server core).
pub fn row(cell: &str, mode: &str, block: u32, tp: f64, cpu: f64) -> RunRow {
    RunRow {
        run_id: format!("{cell}-{mode}-{block}"),
        cell: cell.into(),
        mode: mode.into(),
        block,
        throughput_rps: tp,
        cpu_per_request_us: cpu,
        client_cores_used: 1.0,
        client_cores_available: 2.0,
        server_cpu_cores: Some(1.0),
        operation: None,
        object_size: None,
        concurrency: None,
        offered_rps: None,
        mean_response_ms: None,
        manifest_bytes: None,
        ..RunRow::default()
    }
}

/// The configuration of the tests: baseline `x25519`, A/A control `x25519-aa`, the named
/// cells primary, 2,000 bootstrap resamples.
pub fn cfg(primary: &[&str]) -> Config {
    let analysis = campaign::spec::Analysis {
        primary: primary
            .iter()
            .map(|s| campaign::spec::PrimarySpec::cell(s))
            .collect(),
        bootstrap_resamples: 2000,
        ..campaign::spec::Analysis::default()
    };
    Config {
        baseline: "x25519".into(),
        control: Some("x25519-aa".into()),
        analysis,
        seed: 1,
        arms: Vec::new(),
        comparisons: Vec::new(),
        arm_details: Vec::new(),
        analysis_time_settings: Vec::new(),
        baselines: None,
        implementations: None,
    }
}

/// Rows of a cell with the study's controls: ML-KEM-768 (P1), the padded manifest control
/// (C2) and X25519 (B2), at one worker, where per run throughput = cores ÷ CPU per request.
pub fn control_rows() -> Vec<RunRow> {
    // P/B = 0.960 and P/C = 0.967 as in the study's Table XVII, with block noise.
    let noise = [
        1.0, 1.003, 0.998, 1.001, 0.999, 1.002, 0.997, 1.0, 1.001, 0.999,
    ];
    let mut rows = Vec::new();
    for (b, n) in (0u32..).zip(noise) {
        let base = 1000.0 + 10.0 * f64::from(b);
        for (mode, tp, lat, stage) in [
            ("x25519", base, 1.00, 40.0),
            ("x25519-padded", base * 0.960 / 0.967 * n, 1.01, 46.0),
            ("ml-kem-768", base * 0.960 * (2.0 - n), 1.04, 47.0),
        ] {
            let cpu = 500.0 * base / tp; // one core's worth of CPU, spread over the requests
            rows.push(RunRow {
                client_cores_used: tp * cpu / 1e6,
                client_cores_available: 1.0,
                operation: Some(campaign::spec::Operation::Get),
                object_size: Some(65_536),
                concurrency: Some(1),
                latency_p50_ms: Some(lat * (1.0 + 0.001 * f64::from(b % 3))),
                latency_p99_ms: Some(3.0 * lat),
                max_rss_bytes: Some(4e7 + 1e5 * f64::from(b)),
                rss_growth_bytes: Some(1024.0 * f64::from(b % 2)),
                stages_us: Some([stage, 6.0, 30.0, 10.0 + f64::from(b % 4), 800.0]),
                position: Some(0),
                ..row("get-64KiB-c1", mode, b, tp, cpu)
            });
        }
    }
    rows
}

/// Three arms of cell `c` over seven blocks, block 6 missing its RustCrypto run; the
/// comparisons ML-KEM-768 vs X25519 and RustCrypto vs aws-lc (primary); RustCrypto's
/// attempts 9 invalid of 15, aws-lc's none of 7.
pub fn declared_comparisons() -> (Vec<RunRow>, Vec<RunAttempts>, Config) {
    let noise = [1.0, 1.004, 0.997, 1.002, 0.999, 1.001, 1.003];
    let mut rows = Vec::new();
    for (b, n) in (0u32..).zip(noise) {
        let base = 1000.0 + 50.0 * f64::from(b);
        rows.push(row("c", "x25519", b, base, 100.0));
        rows.push(row("c", "ml-kem-768", b, base * n, 100.0));
        // Block 6 lost its RustCrypto run (invalid after every attempt).
        if b != 6 {
            rows.push(row("c", "ml-kem-768-rustcrypto", b, base * 0.8 * n, 139.0));
        }
    }
    let comparisons = vec![
        ComparisonSpec {
            arm: "ml-kem-768".into(),
            against: "x25519".into(),
        },
        ComparisonSpec {
            arm: "ml-kem-768-rustcrypto".into(),
            against: "ml-kem-768".into(),
        },
    ];
    let mut c = cfg(&[]);
    c.control = None;
    c.arms = vec![
        "x25519".into(),
        "ml-kem-768".into(),
        "ml-kem-768-rustcrypto".into(),
    ];
    c.comparisons = comparisons;
    c.analysis.primary = vec![PrimarySpec {
        cell: "c".into(),
        arm: Some("ml-kem-768-rustcrypto".into()),
        against: Some("ml-kem-768".into()),
    }];
    // RustCrypto: 9 of its 15 attempts invalid; aws-lc ML-KEM: none of 7.
    let attempts: Vec<RunAttempts> = (0..7)
        .flat_map(|b| {
            let r = |arm: &str, attempts, invalid| RunAttempts {
                run_id: format!("r{b}-{arm}"),
                cell: "c".into(),
                arm: arm.into(),
                attempts,
                invalid,
                failed: 0,
                reasons: Vec::new(),
            };
            [
                r("x25519", 1, 0),
                r("ml-kem-768", 1, 0),
                r(
                    "ml-kem-768-rustcrypto",
                    if b == 6 { 3 } else { 2 },
                    if b == 6 { 3 } else { 1 },
                ),
            ]
        })
        .collect();
    (rows, attempts, c)
}

/// Planted absolute figures (study Tables VII, VIII, X and Fig. 2): PUT 1 KiB and GET
/// 64 KiB at one worker and GET 64 KiB at four, arms `x25519` and `ml-kem-768` over five
/// blocks. Key establishment per request: 40 µs (X25519) and 12 µs (ML-KEM-768) plus
/// noise; one worker's throughput 400/s (PUT) and 1,000/s (GET); server CPU 0.2 cores;
/// server RSS growth 1 MiB per block.
pub fn absolute_rows() -> Vec<RunRow> {
    let noise = [0.0, 0.8, -0.5, 0.3, -0.6];
    let mut rows = Vec::new();
    for (b, n) in (0u32..).zip(noise) {
        for (cell, op, size, workers, tp) in [
            ("put-1KiB-c1", Operation::Put, 1024, 1, 400.0),
            ("get-64KiB-c1", Operation::Get, 65_536, 1, 1000.0),
            ("get-64KiB-c4", Operation::Get, 65_536, 4, 3000.0),
        ] {
            for (mode, kem, factor) in [("x25519", 40.0, 1.0), ("ml-kem-768", 12.0, 1.01)] {
                let tp = tp * factor * (1.0 + 0.002 * n);
                rows.push(RunRow {
                    operation: Some(op),
                    object_size: Some(size),
                    concurrency: Some(workers),
                    latency_p50_ms: Some(1e3 / tp * 0.9),
                    stages_us: Some([kem + n, 5.0, 30.0, 8.0, 900.0]),
                    server_rss_growth_bytes: Some(1_048_576.0 * f64::from(b)),
                    rss_growth_bytes: Some(4096.0 * f64::from(b % 2)),
                    server_cpu_cores: Some(0.2 + 0.01 * n),
                    position: Some(0),
                    ..row(cell, mode, b, tp, 100.0 + kem)
                });
            }
        }
    }
    rows
}
