//! The run summary over digests: drift within the window and its check, bounded-session
//! figures, and percentiles of the rounded latencies against exact ones.

#![allow(clippy::unwrap_used, clippy::cast_precision_loss, reason = "tests")]

use std::time::Duration;

use run::digest::Digest;
use run::records::{Outcome, Record, RequestPhase};
use run::runspec::RunSpec;
use run::summary::{DRIFT_LIMIT, ProcessData, ProcessInfo, RunSummary, summarize};

fn spec(extra: &str) -> RunSpec {
    spec_of("x25519", extra)
}

fn spec_of(mode: &str, extra: &str) -> RunSpec {
    let yaml = format!(
        "
runId: r0001
cell: {{mode: {mode}, operation: get, objectSize: 1KiB, concurrency: 4}}
s3: {{endpoint: 'http://127.0.0.1:9000', bucket: b}}
recipientKey: {{file: /keys/x25519.key}}
output: {{dir: /tmp/out}}
warmup: 0s
{extra}
"
    );
    RunSpec::parse(&yaml, "spec").unwrap()
}

/// Closed-loop records over `window_s` whose rate goes linearly from `r0` to `r1` per
/// second, each taking `latency(t)` ms.
fn ramp(window_s: f64, r0: f64, r1: f64, latency: impl Fn(f64) -> f64) -> Vec<Record> {
    let mut out = Vec::new();
    let mut t = 0.0;
    let mut seq = 0;
    while t < window_s {
        let rate = r0 + (r1 - r0) * t / window_s;
        out.push(Record {
            worker: u32::try_from(seq % 4).unwrap(),
            seq,
            phase: Some(RequestPhase::Measured),
            outcome: Some(Outcome::Ok),
            offset: Duration::from_secs_f64(t),
            total: Duration::from_secs_f64(latency(t) / 1e3),
            storage: Duration::from_secs_f64(latency(t) / 1e3),
            ..Record::default()
        });
        t += 1.0 / rate;
        seq += 1;
    }
    out
}

fn summary(spec: &RunSpec, records: &[Record]) -> RunSummary {
    summarize(
        spec,
        &[ProcessData {
            info: ProcessInfo::default(),
            digest: Digest::of(spec, records),
            samples: Vec::new(),
        }],
    )
}

fn drift_check(s: &RunSummary) -> &run::summary::Check {
    s.checks.iter().find(|c| c.name == "drift").unwrap()
}

#[test]
fn a_steady_long_run_passes_the_drift_check() {
    let sp = spec("measured: 120s");
    let s = summary(&sp, &ramp(120.0, 100.0, 100.0, |_| 5.0));
    let d = s.drift.as_ref().unwrap();
    assert!(d.throughput_change.unwrap().abs() < 0.01, "{d:?}");
    assert!(d.latency_change.unwrap().abs() < 1e-9, "{d:?}");
    assert_eq!(d.throughput_rps.len(), run::digest::BINS);
    let c = drift_check(&s);
    assert!(c.passed && c.detail.contains("fails beyond ±20 %"), "{c:?}");
}

/// Throughput falling from 100/s to 60/s over a 2-minute window: the last third runs at
/// about 0.71 of the first (−28.6 %), beyond the bound, with a trend whose interval is
/// below 0; the run fails. The same fall within 4 s is reported, not checked.
#[test]
fn a_long_run_whose_throughput_falls_fails_and_a_short_one_is_only_reported() {
    let sp = spec("measured: 120s");
    let s = summary(&sp, &ramp(120.0, 100.0, 60.0, |_| 5.0));
    let d = s.drift.as_ref().unwrap();
    // Mean rates over the thirds: 100 − 40/6 and 60 + 40/6.
    let want = (60.0 + 40.0 / 6.0) / (100.0 - 40.0 / 6.0) - 1.0;
    assert!(
        (d.throughput_change.unwrap() - want).abs() < 0.01,
        "{d:?} {want}"
    );
    assert!(d.throughput_change.unwrap() < -DRIFT_LIMIT);
    let t = d.throughput_trend.unwrap();
    assert!(t.ci95.1 < 0.0 && t.per_window < -0.3, "{t:?}");
    let c = drift_check(&s);
    assert!(!c.passed, "{c:?}");
    assert!(!s.valid);

    let short = spec("measured: 4s");
    let s = summary(&short, &ramp(4.0, 100.0, 60.0, |_| 5.0));
    assert!(s.drift.as_ref().unwrap().throughput_change.unwrap() < -DRIFT_LIMIT);
    let c = drift_check(&s);
    assert!(c.passed && c.detail.contains("not applied"), "{c:?}");
}

/// Latency that doubles over the window with throughput held fails too.
#[test]
fn a_long_run_whose_latency_climbs_fails() {
    let sp = spec("measured: 90s");
    let s = summary(&sp, &ramp(90.0, 50.0, 50.0, |t| 4.0 + 4.0 * t / 90.0));
    let d = s.drift.as_ref().unwrap();
    assert!(d.latency_change.unwrap() > 0.5, "{d:?}");
    assert!(!drift_check(&s).passed);
}

/// With turns, a bin's throughput is per second of the run's own time in it.
#[test]
fn drift_with_turns_divides_by_own_time() {
    let sp = spec("measured: 9s\nturns: {slice: 100ms, of: 3, turn: 1}");
    // Requests only in own slices ([100, 200) ms of each 300 ms), 100 per own second.
    let recs: Vec<Record> = (0..300u64)
        .map(|i| {
            let cycle = i / 10;
            Record {
                seq: i,
                phase: Some(RequestPhase::Measured),
                outcome: Some(Outcome::Ok),
                offset: Duration::from_millis(cycle * 300 + 100 + (i % 10) * 10),
                total: Duration::from_millis(1),
                storage: Duration::from_millis(1),
                ..Record::default()
            }
        })
        .collect();
    let s = summary(&sp, &recs);
    let d = s.drift.unwrap();
    for r in d.throughput_rps.iter().flatten() {
        assert!((r - 100.0).abs() < 1e-6, "{:?}", d.throughput_rps);
    }
    assert!((s.throughput_rps - 100.0).abs() < 1e-6);
}

/// Sessions of B_max = 3 over two processes: a full session ends by B_max, one cut short
/// by a later session ends by T_max, each process's last short session by the run's end.
#[test]
fn session_figures_say_what_bound_each_session() {
    let sp = spec_of(
        "ml-kem-768-session",
        "session: {maxObjects: 3, maxAge: 10s}\nmeasured: 10s",
    );
    let rec = |session: u64, index: u64| Record {
        seq: session * 10 + index,
        phase: Some(RequestPhase::Measured),
        outcome: Some(Outcome::Ok),
        offset: Duration::from_millis(session * 100 + index),
        total: Duration::from_millis(2),
        storage: Duration::from_millis(2),
        session_id: Some(session),
        session_index: Some(index),
        session_age: Some(Duration::from_millis(index * 400)),
        ..Record::default()
    };
    // Process 0: session 0 full (3), session 1 two objects then session 2 one object.
    let p0 = vec![
        rec(0, 0),
        rec(0, 1),
        rec(0, 2),
        rec(1, 0),
        rec(1, 1),
        rec(2, 0),
    ];
    // Process 1: session 0 full, session 1 full.
    let p1 = vec![
        rec(0, 0),
        rec(0, 1),
        rec(0, 2),
        rec(1, 0),
        rec(1, 1),
        rec(1, 2),
    ];
    let mut sp1 = sp.clone();
    sp1.processes.index = 1;
    let part = |spec: &RunSpec, recs: &[Record], index| ProcessData {
        info: ProcessInfo {
            index,
            root_cache: None,
            ..ProcessInfo::default()
        },
        digest: Digest::of(spec, recs),
        samples: Vec::new(),
    };
    let s = summarize(&sp, &[part(&sp, &p0, 0), part(&sp1, &p1, 1)]);
    let f = s.session.unwrap();
    assert_eq!(f.sessions, 5);
    assert_eq!(f.objects, 12);
    assert_eq!(
        (f.ended_by_max_objects, f.ended_by_max_age, f.ended_by_run),
        (3, 1, 1)
    );
    assert!((f.key_establishments_per_object - 5.0 / 12.0).abs() < 1e-12);
    assert!((f.objects_per_session_mean - 12.0 / 5.0).abs() < 1e-12);
    assert_eq!(f.objects_per_session_max, 3);
    assert_eq!(f.bytes_per_root_max, 3 * 1024);
    assert_eq!(f.max_index_seen, 2);
    assert!((f.max_age_seen_ms - 800.0).abs() < 1e-9);
}

/// The receiver's root cache over the window, summed over processes, gives the hit rate.
#[test]
fn the_root_cache_hit_rate_sums_processes() {
    let sp = spec_of("ml-kem-768-session", "measured: 10s");
    let recs = ramp(10.0, 20.0, 20.0, |_| 2.0);
    let part = |index, hits, misses| ProcessData {
        info: ProcessInfo {
            index,
            root_cache: Some(run::summary::RootCacheFigures { hits, misses }),
            ..ProcessInfo::default()
        },
        digest: Digest::of(&sp, &recs),
        samples: Vec::new(),
    };
    let s = summarize(&sp, &[part(0, 90, 10), part(1, 45, 5)]);
    let f = s.session.unwrap();
    assert_eq!(f.sessions, 0);
    assert!((f.root_cache_hit_rate.unwrap() - 0.9).abs() < 1e-12);
}

/// Percentiles over the digest are those of the exact latencies to within 0.5 µs.
#[test]
fn digest_percentiles_match_exact_ones_to_half_a_microsecond() {
    let sp = spec("measured: 10s");
    let recs = ramp(10.0, 300.0, 300.0, |t| 1.0 + (t * 7919.0).sin().abs() * 3.0);
    let s = summary(&sp, &recs);
    let mut ms: Vec<f64> = recs.iter().map(|r| r.total.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    for (got, q) in [
        (s.latency_ms.p50, 0.5),
        (s.latency_ms.p90, 0.9),
        (s.latency_ms.p99, 0.99),
    ] {
        let want = run::summary::percentile(&ms, q);
        assert!((got - want).abs() <= 0.5e-3, "q {q}: {got} vs {want}");
    }
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    assert!((s.latency_ms.mean - mean).abs() < 1e-9);
}
