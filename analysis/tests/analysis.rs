//! The analysis on synthetic data: pairing within blocks, the primary family, CSV,
//! declared comparisons and invalid rates, the CPU identity, second endpoints, control
//! attribution and the knee.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use analysis::{Family, RunRow, analyze, analyze_with, rows_from_csv, rows_to_csv};
use stats::Verdict;

mod plant;
use plant::rows::{cfg, control_rows, declared_comparisons, row};

#[test]
fn analysis_pairs_within_blocks_and_adjusts_the_primary_family() {
    // Cell a: ml-kem equal to x25519 within 1 %; cell b: ml-kem 10 % slower.
    let noise = [1.0, 1.004, 0.997, 1.002, 0.999, 1.001];
    let mut rows = Vec::new();
    for (b, n) in (0u32..).zip(noise) {
        let base = 1000.0 + 100.0 * f64::from(b); // block effects cancel in the pairing
        rows.push(row("a", "x25519", b, base, 100.0));
        rows.push(row("a", "ml-kem-768", b, base * n, 101.0));
        rows.push(row("a", "x25519-aa", b, base * (2.0 - n), 100.0));
        rows.push(row("b", "x25519", b, base, 100.0));
        rows.push(row("b", "ml-kem-768", b, base * 0.9 * n, 111.0));
    }
    let r = analyze(&rows, &cfg(&["a", "b"])).unwrap();
    let e = |cell: &str, mode: &str| {
        r.comparisons
            .iter()
            .find(|e| e.cell == cell && e.mode == mode)
            .unwrap()
    };
    let a = e("a", "ml-kem-768");
    let b = e("b", "ml-kem-768");
    assert_eq!(r.primary_family_size, 2);
    assert_eq!((a.family, b.family), (Family::Primary, Family::Primary));
    assert_eq!(e("a", "x25519-aa").family, Family::Control);
    assert_eq!(a.verdict, Verdict::Equivalent);
    assert_eq!(b.verdict, Verdict::NotEquivalent);
    assert!(b.deficit && !b.advantage);
    // Holm over two: the smaller p doubled, the larger kept (capped at 1, monotone).
    let (lo, hi) = if a.tost_p < b.tost_p { (a, b) } else { (b, a) };
    assert!((lo.tost_p_adjusted - (2.0 * lo.tost_p).min(1.0)).abs() < 1e-15);
    assert!((hi.tost_p_adjusted - hi.tost_p.max(lo.tost_p_adjusted)).abs() < 1e-15);
    // The same numbers as the stats crate gives for the pairs.
    let d: Vec<f64> = noise.iter().map(|n| (0.9 * n).ln()).collect();
    let p = stats::Paired::from_log_ratios(&d).unwrap();
    assert!((b.ratio - p.ratio()).abs() < 1e-12);
    // CPU accounting: 11 % more CPU per request implies 1/1.11.
    assert!((b.implied_ratio.unwrap() - 100.0 / 111.0).abs() < 1e-12);
    assert_eq!(b.pairs, 6);
    assert!(!a.saturated);
}

#[test]
fn csv_round_trip_and_errors() {
    let rows = vec![
        row("a", "x25519", 0, 1000.0, 100.0),
        RunRow {
            latency_p50_ms: Some(1.25),
            latency_p99_ms: Some(3.5),
            max_rss_bytes: Some(5e7),
            rss_growth_bytes: Some(-4096.0),
            stages_us: Some([45.0, 6.5, 30.0, 12.25, 900.0]),
            position: Some(1),
            started_unix_s: Some(1_796_000_000.25),
            drift_throughput_change: Some(-0.031),
            drift_latency_change: Some(0.0125),
            ..row("a", "ml-kem-768", 0, 990.0, 101.0)
        },
    ];
    let csv = rows_to_csv(&rows);
    assert_eq!(rows_from_csv(&csv, "runs.csv").unwrap(), rows);
    let err = rows_from_csv("run_id,cell\nx,y\n", "runs.csv")
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing column \"mode\""), "{err}");
    let bad = csv.replace(",1000,", ",fast,");
    let err = rows_from_csv(&bad, "runs.csv").unwrap_err().to_string();
    assert!(err.contains("runs.csv:2: column throughput_rps"), "{err}");
    let dup = format!("{csv}{}", csv.lines().nth(1).unwrap());
    let err = analyze(&rows_from_csv(&dup, "d").unwrap(), &cfg(&[]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("appears twice"), "{err}");
}

/// Issue 18: declared comparisons between any two arms of a cell (RustCrypto vs aws-lc on
/// the same mode), a primary family of named comparisons, blocks with an arm missing
/// dropped for every arm, and the invalid-rate test over the attempts.
#[test]
fn declared_comparisons_balanced_blocks_and_invalid_rates() {
    let (rows, attempts, c) = declared_comparisons();
    let r = analyze_with(&rows, &attempts, &c).unwrap();
    assert_eq!(r.comparisons.len(), 2);
    let (kem, rc) = (&r.comparisons[0], &r.comparisons[1]);
    assert_eq!(
        (kem.mode.as_str(), kem.baseline.as_str()),
        ("ml-kem-768", "x25519")
    );
    assert_eq!(
        (rc.mode.as_str(), rc.baseline.as_str()),
        ("ml-kem-768-rustcrypto", "ml-kem-768")
    );
    // Both rest on the same six complete blocks.
    assert_eq!((kem.pairs, rc.pairs), (6, 6));
    assert_eq!(r.dropped_blocks, [("c".to_owned(), 6)]);
    assert!(
        r.warnings.iter().any(|w| w.contains("c block 6")),
        "{:?}",
        r.warnings
    );
    // Only the named comparison is primary.
    assert_eq!(r.primary_family_size, 1);
    assert_eq!(
        (kem.family, rc.family),
        (Family::Exploratory, Family::Primary)
    );
    assert!((rc.ratio - 0.8).abs() < 1e-9 && rc.deficit);
    assert_eq!(rc.verdict, Verdict::NotEquivalent);
    assert_eq!(
        rc.meaning(0.05),
        "ml-kem-768-rustcrypto 20 % slower than ml-kem-768, a deficit"
    );
    assert_eq!(kem.verdict, Verdict::Equivalent);
    assert_eq!(kem.meaning(0.05), "equivalent within ±5 %");
    // Attempts per arm, and the invalid-rate test: Fisher on [[9, 6], [0, 7]] (SciPy:
    // scipy.stats.fisher_exact([[9, 6], [0, 7]]) → p = 0.016676048409794534).
    let rca = r
        .attempts
        .iter()
        .find(|a| a.arm == "ml-kem-768-rustcrypto")
        .unwrap();
    assert_eq!((rca.runs, rca.attempts, rca.invalid), (7, 15, 9));
    let x = r
        .invalid_rates
        .iter()
        .find(|x| x.arm == "ml-kem-768-rustcrypto")
        .unwrap();
    let want = 0.016_676_048_409_794_534;
    assert!((x.p - want).abs() < 1e-12 && x.differs, "{x:?}");
    let same = r
        .invalid_rates
        .iter()
        .find(|x| x.arm == "ml-kem-768")
        .unwrap();
    assert!(!same.differs && (same.p - 1.0).abs() < 1e-12);
    // (The terminal table's lines: report/tests/rendered.rs.)
}

/// Issue 20: the CPU identity with intervals, second endpoints with BH over the difference
/// tests, and the manifest-size control's share of the deficit.
#[test]
fn identity_second_endpoints_and_control_attribution() {
    let mut c = cfg(&[]);
    c.control = None;
    let r = analyze(&control_rows(), &c).unwrap();
    let sec = |mode: &str| r.secondary.iter().find(|s| s.mode == mode).unwrap();
    let p = sec("ml-kem-768");
    // Throughput is cores ÷ CPU per request in every run: the identity holds exactly, and
    // every arm used one core, so the CPU ratio alone carries the throughput ratio.
    let id = p.identity.unwrap();
    assert!((id.residual.ratio - 1.0).abs() < 1e-12, "{id:?}");
    assert!(id.holds && id.cpu_predicts_throughput);
    assert!((id.implied_equal_cores.ratio - id.observed.ratio).abs() < 1e-12);
    let e = r
        .comparisons
        .iter()
        .find(|e| e.mode == "ml-kem-768")
        .unwrap();
    assert!((id.cpu.ratio - e.cpu_ratio.unwrap()).abs() < 1e-12);
    // Second endpoints: latency and stage times at one worker, BH over all of them; the
    // exploratory comparison's BH p is its throughput difference test's.
    for name in [
        "throughput",
        "client CPU per request",
        "p50 latency",
        "p99 latency",
        "peak RSS",
        "RSS growth",
        "stage key_establishment",
        "stage manifest",
    ] {
        assert!(
            p.endpoint(name).is_some(),
            "{name} missing: {:?}",
            p.endpoints
        );
    }
    let kem = p.endpoint("stage key_establishment").unwrap();
    assert!((kem.estimate - 7.0).abs() < 1e-9 && kem.marked, "{kem:?}");
    let p99 = p.endpoint("p99 latency").unwrap();
    assert!((p99.estimate - 1.04).abs() < 1e-9, "{p99:?}");
    let all: Vec<f64> = r
        .secondary
        .iter()
        .flat_map(|s| s.endpoints.iter().map(|e| e.p))
        .collect();
    let bh = stats::multiplicity::benjamini_hochberg(&all);
    let tp = p.endpoint("throughput").unwrap();
    let i = all.iter().position(|x| *x == tp.p).unwrap();
    assert_eq!(tp.bh_p, bh[i]);
    assert_eq!(e.bh_p_adjusted, Some(tp.bh_p));
    // Control attribution: 1 − ln(0.967)/ln(0.960) = 17.8 %, within its interval.
    let a = &r.attributions[0];
    assert_eq!(
        (a.mode.as_str(), a.control.as_str(), a.baseline.as_str()),
        ("ml-kem-768", "x25519-padded", "x25519")
    );
    let sh = a.share.unwrap();
    let want = 1.0 - 0.967f64.ln() / 0.960f64.ln();
    let (lo, hi) = sh.ci90.unwrap();
    assert!(
        (sh.share - want).abs() < 0.03 && lo < sh.share && sh.share < hi,
        "{sh:?}"
    );
    assert_eq!(sh.n, 10);
    // (report.md's sections: report/tests/rendered.rs.)
}

/// Issue 20: the knee interpolated between the bracketing rates and predicted by M/M/c
/// from the closed-loop runs.
#[test]
fn knee_is_interpolated_and_predicted() {
    let mut rows = Vec::new();
    let op = Some(campaign::spec::Operation::Put);
    for b in 0..2u32 {
        // Closed loop: 1 worker at 500/s (S = 2 ms), 16 workers at 4000/s (the peak).
        for (cell, c, tp) in [("put-1KiB-c1", 1, 500.0), ("put-1KiB-c16", 16, 4000.0)] {
            rows.push(RunRow {
                operation: op,
                object_size: Some(1024),
                concurrency: Some(c),
                ..row(cell, "x25519", b, tp, 100.0)
            });
        }
        // Open loop with 64 threads: response 2, 2.2, 3, 6 ms at 1000…4000/s.
        for (rate, resp) in [(1000.0, 2.0), (2000.0, 2.2), (3000.0, 3.0), (4000.0, 6.0)] {
            rows.push(RunRow {
                operation: op,
                object_size: Some(1024),
                concurrency: Some(64),
                offered_rps: Some(rate),
                mean_response_ms: Some(resp),
                ..row(&format!("put-1KiB-t64-r{rate}"), "x25519", b, rate, 100.0)
            });
        }
    }
    let r = analyze(&rows, &cfg(&[])).unwrap();
    let k = &r.knees[0];
    let knee = k.knee.unwrap();
    // 2 × 2 ms = 4 ms lies between 3 ms at 3000/s and 6 ms at 4000/s: a third of the way.
    assert!(
        (knee.rate - (3000.0 + 1000.0 / 3.0)).abs() < 1e-9,
        "{knee:?}"
    );
    assert_eq!((knee.lower_rate, knee.upper_rate), (3000.0, 4000.0));
    let p = k.predicted.unwrap();
    assert_eq!(p.servers, 8); // 4000/s × 2 ms
    assert!((p.service_time - 0.002).abs() < 1e-12);
    assert!(p.rate > 0.0 && p.rate < 4000.0);
    let want = knee.rate / p.rate;
    assert!((k.measured_over_predicted.unwrap() - want).abs() < 1e-12);
    // The M/M/c response time at the predicted rate is twice the service time.
    let resp = stats::queueing::mmc_response(p.service_time, p.servers, p.rate).unwrap();
    assert!((resp - 2.0 * p.service_time).abs() < 1e-9, "{resp}");
}

/// The stall rule flags a run whose server CPU and throughput both fell; an interleaved
/// run's server CPU is its whole block's, so there the rule does not judge, and says so.
#[test]
fn the_stall_rule_judges_runs_by_their_own_server_cpu_only() {
    let rows = |interleaved: bool| -> Vec<RunRow> {
        let mut out = Vec::new();
        for b in 0..6 {
            for mode in ["x25519", "ml-kem-768"] {
                let stalled = b == 3 && mode == "ml-kem-768";
                out.push(RunRow {
                    server_cpu_cores: Some(if stalled { 0.2 } else { 1.0 }),
                    interleaved,
                    ..row(
                        "c",
                        mode,
                        b,
                        if stalled {
                            300.0
                        } else {
                            1000.0 + f64::from(b)
                        },
                        100.0,
                    )
                });
            }
        }
        out
    };
    let r = analyze(&rows(false), &cfg(&[])).unwrap();
    assert_eq!(r.stalls, ["c-ml-kem-768-3"]);
    assert!(!r.warnings.iter().any(|w| w.contains("stall rule")));
    let r = analyze(&rows(true), &cfg(&[])).unwrap();
    assert!(r.stalls.is_empty(), "{:?}", r.stalls);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("the stall rule does not judge interleaved runs")),
        "{:?}",
        r.warnings
    );
}
