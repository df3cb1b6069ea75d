//! A long run's memory (issue 20: "support long cells (10–30 min windows) with samples
//! streamed to disk so memory stays flat, and test a 10-minute run's memory").
//!
//! `pqbench run-one` as a process, a 1 KiB GET closed loop of 8 workers against the
//! embedded server in its own process, for `PQBENCH_SOAK_SECONDS` (default 600) of measured
//! window. The worker samples its own resident memory once a second. From the second
//! minute on (allocator arenas and connection pools have grown by then): the median of the
//! last minute may exceed the median of the second by at most 16 MiB (no growth with the
//! number of records), and no sample may exceed the second minute's median by more than
//! 32 MiB (the transient of writing a row group). Held in memory, each record would cost
//! about 260 bytes before the Parquet table doubled it: at this machine's ~1,500
//! requests/s, some 230 MiB over ten minutes.
//!
//! Ignored by default (ten minutes of a quiet machine): `make soak`.

#![allow(clippy::cast_precision_loss, reason = "sample counts and byte counts")]

use std::process::Command;

use run::records::{SAMPLE_SCHEMA, samples_from_table};
use run::summary::{RunSummary, files};
use run::table::Table;
use worker::parquet::TableFile as _;

/// Growth of resident memory allowed from the second minute to the last (medians).
const MAX_GROWTH: f64 = 16.0 * 1024.0 * 1024.0;
/// Any sample above the second minute's median by at most this.
const MAX_TRANSIENT: f64 = 32.0 * 1024.0 * 1024.0;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore = "a 10-minute run on a quiet machine: make soak"]
fn a_ten_minute_run_keeps_its_memory_flat() {
    let seconds: u64 = std::env::var("PQBENCH_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    assert!(seconds >= 120, "PQBENCH_SOAK_SECONDS must be at least 120");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .env("XDG_STATE_HOME", dir.path())
        .args([
            "run-one",
            "--mode",
            "ml-kem-768",
            "--op",
            "get",
            "--size",
            "1KiB",
            "--concurrency",
            "8",
            "--warmup",
            "5s",
            "--measured",
            &format!("{seconds}s"),
            "--run-id",
            "soak",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .output()
        .expect("run pqbench run-one");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let p0 = dir.path().join("out/soak/p0");
    let summary: RunSummary = serde_json::from_str(
        &std::fs::read_to_string(p0.join(files::SUMMARY))
            .unwrap_or_else(|e| panic!("no summary ({e}); stderr:\n{stderr}")),
    )
    .expect("summary");
    let t = Table::read_parquet(&p0.join(files::SAMPLES), SAMPLE_SCHEMA).expect("samples");
    let samples = samples_from_table(&t);
    let warm_ns = 5_000_000_000_i64;
    let rss: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.offset_ns >= warm_ns + 60_000_000_000)
        .filter_map(|s| Some(((s.offset_ns - warm_ns) as f64 / 1e9, s.process_rss_bytes?)))
        .collect();
    assert!(
        rss.len() as u64 >= seconds - 70,
        "{} RSS samples after the first minute",
        rss.len()
    );
    let series: Vec<String> = rss
        .iter()
        .step_by(30)
        .map(|(t, b)| format!("{t:.0} s {:.1}", b / 1024.0 / 1024.0))
        .collect();
    eprintln!("soak: RSS (MiB) every 30 s: {}", series.join(", "));
    let (first, last) = (rss[0], rss[rss.len() - 1]);
    let peak = rss.iter().map(|x| x.1).fold(0.0, f64::max);
    let mib = |b: f64| b / 1024.0 / 1024.0;
    eprintln!(
        "soak: {} requests in {seconds} s ({:.0}/s); RSS at {:.0} s {:.1} MiB, at {:.0} s {:.1} MiB, peak {:.1} MiB; growth over the whole window {:.1} MiB; records file {:.1} MiB",
        summary.counts.ok,
        summary.throughput_rps,
        first.0,
        mib(first.1),
        last.0,
        mib(last.1),
        mib(peak),
        mib(summary.cpu.rss_growth_bytes.unwrap_or(f64::NAN)),
        mib(std::fs::metadata(p0.join(files::RECORDS)).map_or(0.0, |m| m.len() as f64)),
    );
    assert!(
        summary.counts.ok > 100 * seconds,
        "too few requests to test anything: {}",
        summary.counts.ok
    );
    let bytes: Vec<f64> = rss.iter().map(|x| x.1).collect();
    let (early, late) = (median(&bytes[..60]), median(&bytes[bytes.len() - 60..]));
    eprintln!(
        "soak: median RSS in the second minute {:.1} MiB, in the last {:.1} MiB",
        mib(early),
        mib(late)
    );
    assert!(
        late - early < MAX_GROWTH,
        "resident memory grew {:.1} MiB from the second minute to the last (limit {:.0} MiB)",
        mib(late - early),
        mib(MAX_GROWTH)
    );
    assert!(
        peak - early < MAX_TRANSIENT,
        "resident memory peaked {:.1} MiB above the second minute's median (limit {:.0} MiB)",
        mib(peak - early),
        mib(MAX_TRANSIENT)
    );
    // The window's drift figures are there and the long-run check was applied.
    let drift = summary
        .checks
        .iter()
        .find(|c| c.name == "drift")
        .expect("drift check");
    assert!(drift.detail.contains("fails beyond"), "{drift:?}");
    assert!(summary.drift.is_some());
}
