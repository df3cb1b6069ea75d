//! The run summary: one JSON document per run with every figure the analysis needs (study
//! section IV-A "A summarizer … writes one row per run"; section IV-C for the CPU figures).
//!
//! [`summarize`] is a pure function of the run spec and what each process recorded
//! ([`ProcessData`]); it is used by the worker for its own part, and over all processes'
//! files for the whole run (`worker::collect::load_process`). Definitions:
//!
//! - the measured window is `[startAt + warmup, startAt + warmup + measured)`; a request
//!   belongs to it by its start (open loop: arrival) time;
//! - throughput = successful measured requests / window length (requests/s), and times the
//!   object size (MiB/s);
//! - latency figures are over successful measured requests; percentiles interpolate
//!   linearly between order statistics (NumPy's default);
//! - unaccounted time of a request = total − the five stage timers; its fraction = that /
//!   total; the run's figures are the 99th percentile of the fraction and the aggregate
//!   (Σ unaccounted / Σ total);
//! - client CPU per request = process CPU (user + system, all threads) over the window /
//!   successful measured requests; cores used = process CPU / window length, summed over
//!   processes, as are cores available;
//! - server figures are over the window from the samples of process 0 (every process
//!   samples the same server).

/// Percentiles as NumPy's default (shared with the campaign statistics).
pub use stats::percentile;
use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::records::{Outcome, Record, RequestPhase, Sample};
use crate::runspec::{Loop, PauseRule, RunSpec};
use crate::s3conf::ClientRecord;

/// What one process knew besides its records and samples (`process.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessInfo {
    /// Process index.
    pub index: u32,
    /// Global indices of its workers.
    pub workers: Vec<u32>,
    /// The scheduled start (RFC 3339, ms).
    pub start_at: String,
    /// The scheduled start, nanoseconds since the Unix epoch.
    pub start_at_unix_ns: i64,
    /// How long before `startAt` the process was ready (negative: late, and the run failed).
    pub ready_lead_ms: f64,
    /// Preparation time: key parsing, known-answer gate, warm-up round trip, fixtures.
    pub prepare_ms: f64,
    /// Worker start offsets relative to `startAt` (first request of each worker), ms.
    pub worker_start_ms: Vec<f64>,
    /// Process CPU (user + system) over the measured window, exact at its boundaries.
    pub window_cpu_s: f64,
    /// Length of the measured window as actually observed, s.
    pub window_wall_s: f64,
    /// Runtime worker threads.
    pub runtime_threads: usize,
    /// The host.
    pub host: HostInfo,
    /// The S3 client settings in force.
    pub client: Option<ClientRecord>,
    /// Known-answer gate result.
    pub gate: String,
    /// Pause taken before getting ready.
    pub pause: Option<PauseTaken>,
    /// Objects deleted after the window (PUT outputs and GET fixtures).
    pub cleanup_deleted: u64,
    /// Deletions that failed (their keys are listed, at most 100).
    pub cleanup_failed: Vec<String>,
    /// Cleanup time, s.
    pub cleanup_s: f64,
    /// Sampler scrape errors (at most 20).
    pub sampler_errors: Vec<String>,
    /// Where this process's request traces went (absent: not traced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<crate::trace::TraceReport>,
    /// The CPUs the local S3 server may run on, read from `/proc/<pid>/status` (absent: no
    /// local server, or not readable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_list: Option<String>,
}

/// Everything one process recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessData {
    /// Process facts.
    pub info: ProcessInfo,
    /// Per-request records.
    pub records: Vec<Record>,
    /// 1 Hz samples.
    pub samples: Vec<Sample>,
}

/// Distribution of a duration, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dist {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

/// Request counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Warm-up requests (any outcome).
    pub warmup: u64,
    /// Measured requests (any outcome).
    pub measured: u64,
    /// Successful measured requests.
    pub ok: u64,
    /// Failed measured requests (errors and, open loop, not started).
    pub failed: u64,
    /// Of those, open-loop arrivals never started.
    pub not_started: u64,
}

/// Mean stage times in microseconds over successful measured requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StageMeans {
    /// Key establishment.
    pub key_establishment: f64,
    /// Key derivation.
    pub key_derivation: f64,
    /// AES-GCM.
    pub aead: f64,
    /// Manifest handling.
    pub manifest: f64,
    /// Storage.
    pub storage: f64,
    /// Total minus the stages.
    pub unaccounted: f64,
    /// Queue wait (open loop).
    pub queue_wait: f64,
    /// Crypto CPU.
    pub crypto_cpu: f64,
}

/// Unaccounted time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Unaccounted {
    /// 99th percentile of unaccounted / total over successful measured requests.
    pub p99_fraction: f64,
    /// Σ unaccounted / Σ total.
    pub aggregate_fraction: f64,
}

/// Client CPU figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuFigures {
    /// Process CPU over the window, s (all processes).
    pub process_cpu_s: f64,
    /// Cores used (process CPU / window).
    pub cores_used: f64,
    /// Cores available (cgroup quota and affinity), summed over processes.
    pub cores_available: f64,
    /// Process CPU per successful request, µs.
    pub cpu_per_request_us: f64,
    /// Crypto-stage thread CPU per successful request, µs.
    pub crypto_cpu_per_request_us: f64,
    /// Peak resident memory of a worker process during the window, bytes.
    pub max_rss_bytes: Option<f64>,
    /// Resident memory at the window's last sample minus at its first, summed over the
    /// processes, bytes (growth over the window; absent from older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_growth_bytes: Option<f64>,
    /// Host CPU utilisation over the window (busy / all), process 0's host.
    pub host_cpu_utilization: Option<f64>,
    /// Host network receive rate, MiB/s.
    pub net_rx_mib_s: Option<f64>,
    /// Host network send rate, MiB/s.
    pub net_tx_mib_s: Option<f64>,
}

/// Where a run's processes ran: the CPU sets as each process measured them, and the cores
/// available.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementFigures {
    /// The CPU set the run spec asked the clients to use (`cpus`), if any.
    pub clients_asked: Option<String>,
    /// Each process's allowed CPUs as it measured them (`Cpus_allowed_list`), by process.
    pub clients: Vec<Option<String>>,
    /// The local server's allowed CPUs as measured (absent: no local server).
    pub server: Option<String>,
    /// Whether the clients' and the server's measured sets share no CPU (absent when
    /// either is unknown).
    pub disjoint: Option<bool>,
    /// Cores available to the clients (affinity and cgroup quota), summed over processes.
    pub cores_available: f64,
}

/// Server figures over the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerFigures {
    /// Server process CPU in cores.
    pub cpu_cores_used: Option<f64>,
    /// Peak resident memory, bytes.
    pub max_rss_bytes: Option<f64>,
    /// Peak dirty + write-back memory, bytes.
    pub max_dirty_writeback_bytes: Option<f64>,
    /// Disk write rate, MiB/s.
    pub disk_write_mib_s: Option<f64>,
    /// Fraction of server CPU time in I/O wait.
    pub iowait_fraction: Option<f64>,
    /// Scrape errors.
    pub errors: Vec<String>,
}

/// Start synchronisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartFigures {
    /// Smallest lead of readiness before `startAt` over processes, ms.
    pub min_ready_lead_ms: f64,
    /// Start skew: latest minus earliest first-request start over all workers, ms.
    pub skew_ms: f64,
    /// Latest first-request start after `startAt`, ms.
    pub max_late_ms: f64,
}

/// Session figures of `ml-kem-768-session` PUT runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFigures {
    /// B_max in force.
    pub max_objects: u64,
    /// T_max in force, ms.
    pub max_age_ms: f64,
    /// Sessions started (over processes).
    pub sessions: u64,
    /// Largest object index seen.
    pub max_index_seen: u64,
    /// Largest root age seen, ms.
    pub max_age_seen_ms: f64,
}

/// One validity check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// Check name (`stage_sum`, `unaccounted_p99`, …).
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What was found.
    pub detail: String,
}

/// Software that produced the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Software {
    /// pqbench version.
    pub pqbench: String,
    /// Git commit the binary was built from (`unknown` outside a checkout).
    pub git_commit: String,
    /// Build profile (`release` or `debug`).
    pub profile: String,
    /// Target triple parts.
    pub target: String,
    /// Compiler (`rustc -V`).
    #[serde(default)]
    pub rustc: String,
    /// Versions of the crates on the measured path (crypto backends, S3 SDK, runtime).
    #[serde(default)]
    pub crates: String,
}

impl Software {
    /// This binary.
    pub fn this() -> Self {
        Self {
            pqbench: env!("CARGO_PKG_VERSION").into(),
            git_commit: option_env!("PQBENCH_GIT_COMMIT")
                .unwrap_or("unknown")
                .into(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            target: format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
            rustc: option_env!("PQBENCH_RUSTC").unwrap_or("unknown").into(),
            crates: option_env!("PQBENCH_CRATES").unwrap_or("unknown").into(),
        }
    }
}

/// The run summary (`summary.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// Summary format version.
    pub format: u32,
    /// Run id.
    pub run_id: String,
    /// Campaign.
    pub campaign: String,
    /// Processes summarised.
    pub processes: Vec<u32>,
    /// All checks passed.
    pub valid: bool,
    /// The checks.
    pub checks: Vec<Check>,
    /// Measured time, s: the window, or with turns (`spec.turns`) the run's own slices
    /// within it. Throughput and cores used are per second of it.
    pub window_s: f64,
    /// When the measured window opened (the scheduled start plus the warm-up), seconds
    /// since the Unix epoch; absent from older summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_start_unix_s: Option<f64>,
    /// Counts.
    pub counts: Counts,
    /// Successful measured requests per second.
    pub throughput_rps: f64,
    /// … times the object size, MiB/s.
    pub throughput_mib_s: f64,
    /// Open loop: offered rate, requests/s.
    pub offered_rps: Option<f64>,
    /// Mean manifest bytes per successful measured request (the storage overhead per
    /// object; section V-E).
    #[serde(default)]
    pub manifest_bytes_mean: f64,
    /// Failed measured requests by error class.
    pub failures_by_class: BTreeMap<String, u64>,
    /// Latency of successful measured requests, ms.
    pub latency_ms: Dist,
    /// Queue wait (open loop), ms.
    pub queue_wait_ms: Option<Dist>,
    /// Mean stage times, µs.
    pub stages_mean_us: StageMeans,
    /// Unaccounted time.
    pub unaccounted: Unaccounted,
    /// Client CPU.
    pub cpu: CpuFigures,
    /// Server.
    pub server: ServerFigures,
    /// Start synchronisation.
    pub start: StartFigures,
    /// Sessions.
    pub session: Option<SessionFigures>,
    /// Pauses taken (per process).
    pub pause: Vec<PauseTaken>,
    /// Objects deleted after the window.
    pub cleanup_deleted: u64,
    /// Deletions that failed.
    pub cleanup_failed: Vec<String>,
    /// Host of process 0.
    pub host: HostInfo,
    /// Where the run's processes ran.
    #[serde(default)]
    pub placement: PlacementFigures,
    /// Software.
    pub software: Software,
    /// S3 client settings of process 0.
    pub client: Option<ClientRecord>,
    /// Known-answer gate of process 0.
    pub gate: String,
    /// The spec.
    pub spec: RunSpec,
}

#[allow(clippy::cast_precision_loss, reason = "counts below 2^53")]
fn f(n: u64) -> f64 {
    n as f64
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn dist(mut v: Vec<f64>) -> Dist {
    if v.is_empty() {
        return Dist::default();
    }
    v.sort_by(f64::total_cmp);
    Dist {
        mean: v.iter().sum::<f64>() / f(v.len() as u64),
        p50: percentile(&v, 0.5),
        p90: percentile(&v, 0.9),
        p99: percentile(&v, 0.99),
        max: v[v.len() - 1],
    }
}

/// Whether a record is a successful measured request.
pub fn is_measured_ok(r: &Record) -> bool {
    r.phase == Some(RequestPhase::Measured) && r.outcome == Some(Outcome::Ok)
}

/// Unaccounted fraction of a request (0 for a zero total).
pub fn unaccounted_fraction(r: &Record) -> f64 {
    let t = r.total.as_secs_f64();
    if t > 0.0 {
        r.total.saturating_sub(r.stage_sum()).as_secs_f64() / t
    } else {
        0.0
    }
}

/// The samples taken within `[from, to]` (offsets in ns).
fn in_window(samples: &[Sample], from: i64, to: i64) -> impl DoubleEndedIterator<Item = &Sample> {
    samples
        .iter()
        .filter(move |s| s.offset_ns >= from && s.offset_ns <= to)
}

/// Rate of a cumulative counter over the samples within `[from, to]` (offsets in ns).
fn counter_rate(
    samples: &[Sample],
    from: i64,
    to: i64,
    get: fn(&Sample) -> Option<f64>,
) -> Option<f64> {
    let pts: Vec<(i64, f64)> = in_window(samples, from, to)
        .filter_map(|s| Some((s.offset_ns, get(s)?)))
        .collect();
    let (a, b) = (pts.first()?, pts.last()?);
    let dt = f(u64::try_from(b.0 - a.0).ok()?) / 1e9;
    (dt > 0.0).then(|| (b.1 - a.1).max(0.0) / dt)
}

fn gauge_max(
    samples: &[Sample],
    from: i64,
    to: i64,
    get: impl Fn(&Sample) -> Option<f64>,
) -> Option<f64> {
    in_window(samples, from, to)
        .filter_map(get)
        .reduce(f64::max)
}

/// The last value of a gauge within `[from, to]` minus the first (`None` with fewer than
/// two samples carrying it).
fn gauge_growth(
    samples: &[Sample],
    from: i64,
    to: i64,
    get: impl Fn(&Sample) -> Option<f64>,
) -> Option<f64> {
    let mut v = in_window(samples, from, to).filter_map(get);
    let first = v.next()?;
    v.next_back().map(|last| last - first)
}

/// Limits of the validity checks (study section IV-A).
pub const UNACCOUNTED_P99_LIMIT: f64 = 0.02;
/// Aggregate unaccounted limit.
pub const UNACCOUNTED_AGGREGATE_LIMIT: f64 = 0.01;

/// The record-level checks shared by the worker and `pqbench validate`: stage sums,
/// unaccounted time (per run), session bounds, failures.
pub fn record_checks(spec: &RunSpec, records: &[Record]) -> Vec<Check> {
    let mut checks = Vec::new();
    let over: Vec<&Record> = records
        .iter()
        .filter(|r| r.outcome == Some(Outcome::Ok) && r.stage_sum() > r.total)
        .collect();
    checks.push(Check {
        name: "stage_sum".into(),
        passed: over.is_empty(),
        detail: match over.first() {
            None => "no request's stage timers sum above its total".into(),
            Some(r) => format!(
                "{} requests have stage sums above their totals, first: worker {} seq {} ({:.1} µs > {:.1} µs)",
                over.len(),
                r.worker,
                r.seq,
                us(r.stage_sum()),
                us(r.total)
            ),
        },
    });
    let ok: Vec<&Record> = records.iter().filter(|r| is_measured_ok(r)).collect();
    let mut fr: Vec<f64> = ok.iter().map(|r| unaccounted_fraction(r)).collect();
    fr.sort_by(f64::total_cmp);
    let p99 = percentile(&fr, 0.99);
    checks.push(Check {
        name: "unaccounted_p99".into(),
        passed: p99 < UNACCOUNTED_P99_LIMIT,
        detail: format!(
            "p99 of unaccounted time is {:.3} % of request time (limit {} %)",
            p99 * 100.0,
            UNACCOUNTED_P99_LIMIT * 100.0
        ),
    });
    let (un, tot) = ok.iter().fold((0.0, 0.0), |(u, t), r| {
        (
            u + r.total.saturating_sub(r.stage_sum()).as_secs_f64(),
            t + r.total.as_secs_f64(),
        )
    });
    let agg = if tot > 0.0 { un / tot } else { 0.0 };
    checks.push(Check {
        name: "unaccounted_aggregate".into(),
        passed: agg < UNACCOUNTED_AGGREGATE_LIMIT,
        detail: format!(
            "unaccounted time is {:.3} % of all request time (limit {} %)",
            agg * 100.0,
            UNACCOUNTED_AGGREGATE_LIMIT * 100.0
        ),
    });
    if let Some(b) = spec.session_bounds() {
        let bad: Vec<&Record> = records
            .iter()
            .filter(|r| {
                r.session_index.is_some_and(|i| i >= b.max_objects)
                    || r.session_age.is_some_and(|a| a > b.max_age)
            })
            .collect();
        let missing = spec.cell.operation == crate::runspec::Operation::Put
            && records
                .iter()
                .any(|r| r.outcome == Some(Outcome::Ok) && r.session_index.is_none());
        checks.push(Check {
            name: "session_bounds".into(),
            passed: bad.is_empty() && !missing,
            detail: match (bad.first(), missing) {
                (Some(r), _) => format!(
                    "{} objects outside B_max = {} / T_max = {:?}, first: worker {} seq {} (index {:?}, age {:?})",
                    bad.len(),
                    b.max_objects,
                    b.max_age,
                    r.worker,
                    r.seq,
                    r.session_index,
                    r.session_age
                ),
                (None, true) => "a successful session PUT has no session bookkeeping".into(),
                (None, false) => format!(
                    "every object within B_max = {} and T_max = {:?}",
                    b.max_objects, b.max_age
                ),
            },
        });
    }
    let measured = records
        .iter()
        .filter(|r| r.phase == Some(RequestPhase::Measured))
        .count();
    let failed = records
        .iter()
        .filter(|r| r.phase == Some(RequestPhase::Measured) && r.outcome != Some(Outcome::Ok))
        .count();
    let frac = if measured > 0 {
        f(failed as u64) / f(measured as u64)
    } else {
        1.0
    };
    checks.push(Check {
        name: "failures".into(),
        passed: measured > 0 && frac <= spec.allowed_failure_fraction,
        detail: if measured == 0 {
            "no measured requests".into()
        } else {
            format!(
                "{failed} of {measured} measured requests failed (allowed fraction {})",
                spec.allowed_failure_fraction
            )
        },
    });
    checks
}

/// The pause check (`pause_quiet`): every process's pause before the run found the server
/// host quiet. A pause that waited `maxWait` without the host going quiet gave up, and the
/// run then measured a server still writing back: the check fails, and the run is invalid.
/// `pauses` are the pauses taken, by process index; none taken (no pause rule, or no view
/// of the server host), no check.
pub fn pause_check(rule: Option<&PauseRule>, pauses: &[(u32, &PauseTaken)]) -> Option<Check> {
    let mib = |x: Option<f64>, unit: &str| {
        x.map_or_else(
            || "n/a".to_owned(),
            |b| format!("{:.1} {unit}", b / f64::from(1u32 << 20)),
        )
    };
    let max =
        |what: &str, v: Option<String>| v.map_or_else(String::new, |v| format!(" ({what} {v})"));
    let gave_up: Vec<&(u32, &PauseTaken)> = pauses.iter().filter(|(_, p)| !p.quiet).collect();
    let longest = pauses.iter().map(|(_, p)| p.waited_s).reduce(f64::max)?;
    let detail = match gave_up.first() {
        None => format!(
            "every pause found the server host quiet ({} {}, longest wait {longest:.1} s)",
            pauses.len(),
            if pauses.len() == 1 {
                "process"
            } else {
                "processes"
            }
        ),
        Some((i, p)) => format!(
            "process {i}: the pause gave up after {:.1} s{} without the server host quiet{}; last reading: dirty + write-back {}{}, disk writes {}{}{}",
            p.waited_s,
            max("maxWait", rule.map(|r| r.max_wait.to_string())),
            rule.map_or_else(String::new, |r| format!(" for {}", r.quiet_for)),
            mib(p.last_dirty_bytes, "MiB"),
            max("maxDirty", rule.map(|r| r.max_dirty.to_string())),
            mib(p.last_disk_write_per_s, "MiB/s"),
            max(
                "maxDiskWritePerS",
                rule.map(|r| format!("{}/s", r.max_disk_write_per_s))
            ),
            if gave_up.len() > 1 {
                format!(
                    "; {} of {} processes' pauses gave up",
                    gave_up.len(),
                    pauses.len()
                )
            } else {
                String::new()
            }
        ),
    };
    Some(Check {
        name: "pause_quiet".into(),
        passed: gave_up.is_empty(),
        detail,
    })
}

/// Summarises a run from its processes' data.
pub fn summarize(spec: &RunSpec, parts: &[ProcessData]) -> RunSummary {
    let warm = spec.warmup.0;
    let window = spec.measured.0;
    let from = i64::try_from(warm.as_nanos()).unwrap_or(i64::MAX);
    let to = i64::try_from((warm + window).as_nanos()).unwrap_or(i64::MAX);
    let all: Vec<Record> = parts
        .iter()
        .flat_map(|p| p.records.iter().cloned())
        .collect();
    let ok: Vec<&Record> = all.iter().filter(|r| is_measured_ok(r)).collect();
    let mut counts = Counts::default();
    let mut failures = BTreeMap::new();
    for r in &all {
        match r.phase {
            Some(RequestPhase::Warmup) => counts.warmup += 1,
            Some(RequestPhase::Measured) => {
                counts.measured += 1;
                match r.outcome {
                    Some(Outcome::Ok) => counts.ok += 1,
                    o => {
                        counts.failed += 1;
                        if o == Some(Outcome::NotStarted) {
                            counts.not_started += 1;
                        }
                        *failures
                            .entry(r.error_class.unwrap_or("unknown").to_owned())
                            .or_insert(0) += 1;
                    }
                }
            }
            None => {}
        }
    }
    // Interleaved: the run's own slices within the window are its measured time.
    let w = spec
        .turns
        .map_or(window, |t| t.own_time(warm, warm + window))
        .as_secs_f64();
    let n_ok = f(counts.ok);
    let mean_us = |g: fn(&Record) -> Duration| {
        if ok.is_empty() {
            0.0
        } else {
            ok.iter().map(|r| us(g(r))).sum::<f64>() / n_ok
        }
    };
    let stages = StageMeans {
        key_establishment: mean_us(|r| r.key_establishment),
        key_derivation: mean_us(|r| r.key_derivation),
        aead: mean_us(|r| r.aead),
        manifest: mean_us(|r| r.manifest),
        storage: mean_us(|r| r.storage),
        unaccounted: mean_us(|r| r.total.saturating_sub(r.stage_sum())),
        queue_wait: mean_us(|r| r.queue_wait),
        crypto_cpu: mean_us(|r| r.crypto_cpu),
    };
    let mut fr: Vec<f64> = ok.iter().map(|r| unaccounted_fraction(r)).collect();
    fr.sort_by(f64::total_cmp);
    let tot: f64 = ok.iter().map(|r| r.total.as_secs_f64()).sum();
    let unacc: f64 = ok
        .iter()
        .map(|r| r.total.saturating_sub(r.stage_sum()).as_secs_f64())
        .sum();
    let process_cpu_s: f64 = parts.iter().map(|p| p.info.window_cpu_s).sum();
    let cores_available: f64 = parts.iter().map(|p| p.info.host.cores_available).sum();
    let crypto_cpu: f64 = ok.iter().map(|r| r.crypto_cpu.as_secs_f64()).sum();
    let s0: &[Sample] = parts.first().map_or(&[], |p| &p.samples);
    let mib = f(1 << 20);
    let host_util = {
        let busy = counter_rate(s0, from, to, |s| s.host_cpu_busy_s);
        let all = counter_rate(s0, from, to, |s| s.host_cpu_total_s);
        busy.zip(all).and_then(|(b, a)| (a > 0.0).then(|| b / a))
    };
    let cpu = CpuFigures {
        process_cpu_s,
        cores_used: if w > 0.0 { process_cpu_s / w } else { 0.0 },
        cores_available,
        cpu_per_request_us: if counts.ok > 0 {
            process_cpu_s * 1e6 / n_ok
        } else {
            0.0
        },
        crypto_cpu_per_request_us: if counts.ok > 0 {
            crypto_cpu * 1e6 / n_ok
        } else {
            0.0
        },
        max_rss_bytes: parts
            .iter()
            .filter_map(|p| gauge_max(&p.samples, from, to, |s| s.process_rss_bytes))
            .reduce(f64::max),
        rss_growth_bytes: parts
            .iter()
            .filter_map(|p| gauge_growth(&p.samples, from, to, |s| s.process_rss_bytes))
            .reduce(|a, b| a + b),
        host_cpu_utilization: host_util,
        net_rx_mib_s: counter_rate(s0, from, to, |s| s.net_rx_bytes).map(|x| x / mib),
        net_tx_mib_s: counter_rate(s0, from, to, |s| s.net_tx_bytes).map(|x| x / mib),
    };
    let server = ServerFigures {
        cpu_cores_used: counter_rate(s0, from, to, |s| s.server_cpu_s),
        max_rss_bytes: gauge_max(s0, from, to, |s| s.server_rss_bytes),
        max_dirty_writeback_bytes: gauge_max(s0, from, to, |s| {
            match (s.server_dirty_bytes, s.server_writeback_bytes) {
                (Some(d), Some(w)) => Some(d + w),
                (d, w) => d.or(w),
            }
        }),
        disk_write_mib_s: counter_rate(s0, from, to, |s| s.server_disk_written_bytes)
            .map(|x| x / mib),
        iowait_fraction: {
            let io = counter_rate(s0, from, to, |s| s.server_iowait_s);
            let all = counter_rate(s0, from, to, |s| s.server_cpu_total_s);
            io.zip(all).and_then(|(i, a)| (a > 0.0).then(|| i / a))
        },
        errors: parts
            .iter()
            .flat_map(|p| p.info.sampler_errors.iter().cloned())
            .take(20)
            .collect(),
    };
    let starts: Vec<f64> = parts
        .iter()
        .flat_map(|p| p.info.worker_start_ms.iter().copied())
        .collect();
    let start = StartFigures {
        min_ready_lead_ms: parts
            .iter()
            .map(|p| p.info.ready_lead_ms)
            .reduce(f64::min)
            .unwrap_or(0.0),
        skew_ms: match (
            starts.iter().copied().reduce(f64::max),
            starts.iter().copied().reduce(f64::min),
        ) {
            (Some(a), Some(b)) => a - b,
            _ => 0.0,
        },
        max_late_ms: starts.iter().copied().reduce(f64::max).unwrap_or(0.0),
    };
    let session = spec.session_bounds().map(|b| {
        let sess: std::collections::BTreeSet<(u32, u64)> = parts
            .iter()
            .flat_map(|p| {
                p.records
                    .iter()
                    .filter_map(move |r| r.session_id.map(|s| (p.info.index, s)))
            })
            .collect();
        SessionFigures {
            max_objects: b.max_objects,
            max_age_ms: ms(b.max_age),
            sessions: sess.len() as u64,
            max_index_seen: all
                .iter()
                .filter_map(|r| r.session_index)
                .max()
                .unwrap_or(0),
            max_age_seen_ms: all
                .iter()
                .filter_map(|r| r.session_age)
                .max()
                .map_or(0.0, ms),
        }
    });
    let mut checks = record_checks(spec, &all);
    checks.push(Check {
        name: "start".into(),
        passed: start.min_ready_lead_ms >= 0.0,
        detail: format!(
            "every process ready at least {:.0} ms before startAt; start skew {:.1} ms",
            start.min_ready_lead_ms, start.skew_ms
        ),
    });
    let pauses: Vec<(u32, &PauseTaken)> = parts
        .iter()
        .filter_map(|p| p.info.pause.as_ref().map(|t| (p.info.index, t)))
        .collect();
    checks.extend(pause_check(spec.pause.as_ref(), &pauses));
    let valid = checks.iter().all(|c| c.passed);
    let p0 = parts.first();
    RunSummary {
        format: 1,
        run_id: spec.run_id.clone(),
        campaign: spec.campaign.clone(),
        processes: parts.iter().map(|p| p.info.index).collect(),
        valid,
        checks,
        window_s: w,
        #[allow(
            clippy::cast_precision_loss,
            reason = "ns since the epoch fit a double to µs"
        )]
        window_start_unix_s: parts
            .first()
            .filter(|p| p.info.start_at_unix_ns > 0)
            .map(|p| p.info.start_at_unix_ns as f64 / 1e9 + warm.as_secs_f64()),
        counts,
        throughput_rps: if w > 0.0 { n_ok / w } else { 0.0 },
        throughput_mib_s: if w > 0.0 {
            n_ok * f(spec.cell.object_size.0) / mib / w
        } else {
            0.0
        },
        offered_rps: match spec.cell.arrival {
            Loop::Open { rate } => Some(rate),
            Loop::Closed => None,
        },
        manifest_bytes_mean: if ok.is_empty() {
            0.0
        } else {
            ok.iter().map(|r| f(r.manifest_bytes)).sum::<f64>() / n_ok
        },
        failures_by_class: failures,
        latency_ms: dist(ok.iter().map(|r| ms(r.total)).collect()),
        queue_wait_ms: matches!(spec.cell.arrival, Loop::Open { .. })
            .then(|| dist(ok.iter().map(|r| ms(r.queue_wait)).collect())),
        stages_mean_us: stages,
        unaccounted: Unaccounted {
            p99_fraction: percentile(&fr, 0.99),
            aggregate_fraction: if tot > 0.0 { unacc / tot } else { 0.0 },
        },
        cpu,
        server,
        start,
        session,
        pause: parts.iter().filter_map(|p| p.info.pause.clone()).collect(),
        cleanup_deleted: parts.iter().map(|p| p.info.cleanup_deleted).sum(),
        cleanup_failed: parts
            .iter()
            .flat_map(|p| p.info.cleanup_failed.iter().cloned())
            .take(100)
            .collect(),
        host: p0.map(|p| p.info.host.clone()).unwrap_or_default(),
        placement: placement(spec, parts, cpu.cores_available),
        software: Software::this(),
        client: p0.and_then(|p| p.info.client.clone()),
        gate: p0.map(|p| p.info.gate.clone()).unwrap_or_default(),
        spec: spec.clone(),
    }
}

/// The placement figures of a run from its processes' measured CPU sets.
fn placement(spec: &RunSpec, parts: &[ProcessData], cores_available: f64) -> PlacementFigures {
    let parse = |l: &Option<String>| {
        l.as_deref()
            .and_then(|l| campaign::placement::parse_cpu_list(l).ok())
    };
    let clients: Vec<Option<String>> = parts.iter().map(|p| p.info.host.cpu_list.clone()).collect();
    let server = parts.iter().find_map(|p| p.info.server_cpu_list.clone());
    let client_sets: Option<Vec<Vec<u32>>> = clients.iter().map(parse).collect();
    let disjoint = match (client_sets, parse(&server)) {
        (Some(c), Some(s)) if !c.is_empty() => {
            Some(c.iter().all(|set| set.iter().all(|x| !s.contains(x))))
        }
        _ => None,
    };
    PlacementFigures {
        clients_asked: spec.cpus.clone(),
        clients,
        server,
        disjoint,
        cores_available,
    }
}

/// A human-readable rendering of a summary (what `run-one` and `pqbench-worker` print).
pub fn render(s: &RunSummary) -> String {
    use std::fmt::Write as _;
    let c = &s.spec.cell;
    let mut o = String::new();
    let opt = |v: Option<f64>, unit: &str, k: f64| {
        v.map_or_else(|| "n/a".to_owned(), |x| format!("{:.2} {unit}", x * k))
    };
    let _ = writeln!(
        o,
        "run {} ({}): {} {} {} on {}, {} workers, {} loop{}",
        s.run_id,
        if s.valid { "valid" } else { "INVALID" },
        c.operation.as_str().to_uppercase(),
        c.object_size,
        c.mode,
        c.backend,
        c.concurrency,
        c.arrival.as_str(),
        s.offered_rps
            .map_or(String::new(), |r| format!(" at {r} req/s offered"))
    );
    let _ = writeln!(
        o,
        "  throughput   {:.1} req/s, {:.2} MiB/s ({} ok, {} failed, {} warm-up, window {:.1} s)",
        s.throughput_rps,
        s.throughput_mib_s,
        s.counts.ok,
        s.counts.failed,
        s.counts.warmup,
        s.window_s
    );
    if let Some(t) = &s.spec.turns {
        let _ = writeln!(
            o,
            "  turns        {} of {} in slices of {} (the window is its own slices)",
            t.turn + 1,
            t.of,
            t.slice
        );
    }
    if !s.failures_by_class.is_empty() {
        let f: Vec<String> = s
            .failures_by_class
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(o, "  failures     {}", f.join(", "));
    }
    let l = &s.latency_ms;
    let _ = writeln!(
        o,
        "  latency ms   mean {:.3}  p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}",
        l.mean, l.p50, l.p90, l.p99, l.max
    );
    if let Some(q) = &s.queue_wait_ms {
        let _ = writeln!(
            o,
            "  queue ms     mean {:.3}  p50 {:.3}  p99 {:.3}",
            q.mean, q.p50, q.p99
        );
    }
    let st = &s.stages_mean_us;
    let _ = writeln!(
        o,
        "  stages µs    key est. {:.1}  kdf {:.1}  aead {:.1}  manifest {:.1}  storage {:.1}  unaccounted {:.1} (p99 {:.2} %, aggregate {:.2} %)",
        st.key_establishment,
        st.key_derivation,
        st.aead,
        st.manifest,
        st.storage,
        st.unaccounted,
        s.unaccounted.p99_fraction * 100.0,
        s.unaccounted.aggregate_fraction * 100.0
    );
    let cpu = &s.cpu;
    let _ = writeln!(
        o,
        "  client CPU   {:.1} µs/request (crypto {:.1}), {:.2} of {:.2} cores, RSS {}, host CPU {}",
        cpu.cpu_per_request_us,
        cpu.crypto_cpu_per_request_us,
        cpu.cores_used,
        cpu.cores_available,
        opt(cpu.max_rss_bytes, "MiB", 1.0 / f64::from(1u32 << 20)),
        opt(cpu.host_cpu_utilization, "%", 100.0)
    );
    let pl = &s.placement;
    if pl.server.is_some() || pl.clients_asked.is_some() {
        let _ = writeln!(
            o,
            "  placement    clients on CPU {}, server on CPU {}",
            pl.clients
                .iter()
                .map(|c| c.as_deref().unwrap_or("?"))
                .collect::<Vec<_>>()
                .join(" / "),
            pl.server.as_deref().unwrap_or("?")
        );
    }
    let sv = &s.server;
    let _ = writeln!(
        o,
        "  server       CPU {}, RSS {}, dirty+wb {}, disk {}, iowait {}",
        opt(sv.cpu_cores_used, "cores", 1.0),
        opt(sv.max_rss_bytes, "MiB", 1.0 / f64::from(1u32 << 20)),
        opt(
            sv.max_dirty_writeback_bytes,
            "MiB",
            1.0 / f64::from(1u32 << 20)
        ),
        opt(sv.disk_write_mib_s, "MiB/s", 1.0),
        opt(sv.iowait_fraction, "%", 100.0)
    );
    let _ = writeln!(
        o,
        "  start        ready {:.0} ms before startAt, skew {:.2} ms",
        s.start.min_ready_lead_ms, s.start.skew_ms
    );
    if let Some(se) = &s.session {
        let _ = writeln!(
            o,
            "  sessions     {} (B_max {}, T_max {:.0} ms; max index {}, max age {:.0} ms)",
            se.sessions, se.max_objects, se.max_age_ms, se.max_index_seen, se.max_age_seen_ms
        );
    }
    for c in s.checks.iter().filter(|c| !c.passed) {
        let _ = writeln!(o, "  FAILED {}: {}", c.name, c.detail);
    }
    o
}

/// File names in a process directory (`<out>/<runId>/p<index>/`).
pub mod files {
    /// Per-request records.
    pub const RECORDS: &str = "records.parquet";
    /// 1 Hz samples.
    pub const SAMPLES: &str = "samples.parquet";
    /// [`super::ProcessInfo`].
    pub const PROCESS: &str = "process.json";
    /// The process's [`super::RunSummary`].
    pub const SUMMARY: &str = "summary.json";
    /// The spec as run.
    pub const SPEC: &str = "spec.json";
    /// SHA-256 of every other file, in `sha256sum` format.
    pub const CHECKSUMS: &str = "SHA256SUMS";
    /// Every file the checksum manifest covers, in the order it lists them.
    pub const DATA: [&str; 5] = [RECORDS, SAMPLES, PROCESS, SPEC, SUMMARY];
}

/// The host and the process's CPU budget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// CPU feature flags relevant to the crypto code paths (AES-NI, AVX2, AVX-512, SHA, …).
    pub cpu_flags: Vec<String>,
    /// Kernel release.
    pub kernel: String,
    /// CPU architecture.
    pub arch: String,
    /// Logical CPUs of the host.
    pub host_cpus: usize,
    /// CPUs this process may run on (affinity mask).
    pub affinity_cpus: Option<usize>,
    /// CPU quota of the process's cgroup in cores (`None`: no quota).
    pub cgroup_quota_cores: Option<f64>,
    /// Cores available to the process: the smaller of affinity and quota.
    pub cores_available: f64,
    /// The CPUs this process may run on, as Linux lists them (`Cpus_allowed_list`, e.g.
    /// `0` or `0-3,8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_list: Option<String>,
    /// Total memory of the host in bytes.
    pub memory_bytes: Option<u64>,
}

/// The pause taken before a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseTaken {
    /// Seconds waited.
    pub waited_s: f64,
    /// Whether the server became quiet (false: gave up at `maxWait`).
    pub quiet: bool,
    /// Last dirty + write-back reading in bytes.
    pub last_dirty_bytes: Option<f64>,
    /// Last disk write rate in bytes/s.
    pub last_disk_write_per_s: Option<f64>,
}
