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
//!   linearly between order statistics (NumPy's default) of the latencies rounded to the
//!   microsecond (unaccounted fractions to 10⁻⁶), which is what lets [`Digest`] fold the
//!   records without holding them;
//! - drift ([`DriftFigures`], check `drift`, bound [`DRIFT_LIMIT`]): the window cut into
//!   [`BINS`] bins by request start; throughput per bin of own time and mean latency per
//!   bin; the last third against the first, and the least-squares trend over the bins;
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

use crate::digest::{BINS, Digest};
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
    /// The interop matrix of the run's mode over every backend, with each backend's crate
    /// versions and the CPU features it can use on this host (absent from older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interop: Option<envelope::interop::Matrix>,
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
    /// The receiver's session-root cache over the measured window (`ml-kem-768-session`
    /// runs; absent otherwise and in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_cache: Option<RootCacheFigures>,
}

/// A receiver's session-root cache over the window: lookups answered from the cache
/// and roots decapsulated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootCacheFigures {
    /// Roots found in the cache (no decapsulation).
    pub hits: u64,
    /// Roots decapsulated.
    pub misses: u64,
}

/// Everything one process recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessData {
    /// Process facts.
    pub info: ProcessInfo,
    /// Its records, folded ([`Digest`]; the records themselves stay on disk).
    pub digest: Digest,
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
    /// Resident memory at the window's last sample minus at its first, bytes (study
    /// Table X's server memory growth; absent from older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_growth_bytes: Option<f64>,
    /// Peak dirty + write-back memory, bytes.
    pub max_dirty_writeback_bytes: Option<f64>,
    /// Disk write rate, MiB/s.
    pub disk_write_mib_s: Option<f64>,
    /// Fraction of server CPU time in I/O wait.
    pub iowait_fraction: Option<f64>,
    /// Mean time of one disk write on the server host over the window, ms (its seconds
    /// writing over its writes; absent without writes or from older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_write_latency_ms: Option<f64>,
    /// Mean number of I/Os in flight on the server host's disks over the window (the
    /// rate of their weighted I/O seconds; absent from older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_queue_depth: Option<f64>,
    /// The key service's process CPU in cores over the window (remote runs, from its
    /// `/metrics`; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_service_cpu_cores: Option<f64>,
    /// The key service's peak resident memory over the window, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_service_max_rss_bytes: Option<f64>,
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
    /// Objects sealed under session roots (successful PUTs, warm-up included: they used
    /// the roots too).
    #[serde(default)]
    pub objects: u64,
    /// Mean objects per session.
    #[serde(default)]
    pub objects_per_session_mean: f64,
    /// Most objects under one root.
    #[serde(default)]
    pub objects_per_session_max: u64,
    /// Plaintext bytes exposed per root (objects × object size): mean.
    #[serde(default)]
    pub bytes_per_root_mean: f64,
    /// … and the most under one root.
    #[serde(default)]
    pub bytes_per_root_max: u64,
    /// Key establishments (KEM encapsulations) per object: sessions / objects (1 without
    /// sessions).
    #[serde(default)]
    pub key_establishments_per_object: f64,
    /// Sessions that ended because they reached B_max objects.
    #[serde(default)]
    pub ended_by_max_objects: u64,
    /// Sessions that ended before B_max, so by T_max (a later session of the same process
    /// followed).
    #[serde(default)]
    pub ended_by_max_age: u64,
    /// Each process's last session below B_max: cut by the end of the run, bound by neither.
    #[serde(default)]
    pub ended_by_run: u64,
    /// The receiver's root cache over the window, summed over processes (GET runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_cache: Option<RootCacheFigures>,
    /// Hits / lookups of that cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_cache_hit_rate: Option<f64>,
}

/// The drift bound of the `drift` check: a run fails when its throughput or its mean
/// latency in the last third of the window differs from the first third by more than this
/// fraction **and** the slope over the window's [`BINS`] bins has a 95 % interval that
/// excludes zero on the same side (noise alone does not fail a run; a trend does). The
/// study's runs were 20 s and could not see slow effects (compaction, memory growth: its
/// section VI); long cells can, and a run that drifted this much measured two machines.
pub const DRIFT_LIMIT: f64 = 0.20;

/// The shortest measured time (own time, with turns) the `drift` check applies to: below
/// it a third of the window is a few seconds, whose throughput still carries the ramp out
/// of the warm-up and the machine's second-to-second swings (seen: ±40-90 % between the
/// thirds of 2 s windows on a 2-core VM). Shorter runs report their drift figures; the
/// check passes and says it was not applied.
pub const DRIFT_MIN_WINDOW: Duration = Duration::from_secs(60);

/// A trend over the window: the least-squares slope of a figure's per-bin values divided
/// by their mean, against time as a fraction of the window (so `per_window` = −0.1 is a
/// 10 % fall from the window's start to its end).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trend {
    /// Relative change over the whole window.
    pub per_window: f64,
    /// Its 95 % t interval.
    pub ci95: (f64, f64),
    /// Two-sided p of a zero slope.
    pub p: f64,
}

/// Drift within the measured window (issue 20 part 4; study section VI on slow effects).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriftFigures {
    /// Throughput in each of the window's [`BINS`] bins, requests/s of the bin's own time
    /// (`null`: the bin had no own time).
    pub throughput_rps: Vec<Option<f64>>,
    /// Mean latency of the successful requests that started in each bin, ms (`null`: none).
    pub latency_ms: Vec<Option<f64>>,
    /// Throughput in the last third over the first, minus 1.
    pub throughput_change: Option<f64>,
    /// Mean latency in the last third over the first, minus 1.
    pub latency_change: Option<f64>,
    /// Throughput trend over the bins.
    pub throughput_trend: Option<Trend>,
    /// Mean latency trend over the bins.
    pub latency_trend: Option<Trend>,
}

/// The window's drift figures from a run's digest.
pub fn drift(spec: &RunSpec, d: &Digest) -> DriftFigures {
    if d.bins.len() != BINS {
        return DriftFigures::default();
    }
    let own = d.bin_own_time(spec.turns.as_ref());
    let rate: Vec<Option<f64>> = d
        .bins
        .iter()
        .zip(&own)
        .map(|(b, t)| (!t.is_zero()).then(|| f(b.ok) / t.as_secs_f64()))
        .collect();
    let lat: Vec<Option<f64>> = d
        .bins
        .iter()
        .map(|b| (b.ok > 0).then(|| b.latency_ms_sum / f(b.ok)))
        .collect();
    let third = BINS / 3;
    let pooled = |r: std::ops::Range<usize>| -> Option<(f64, f64)> {
        let ok: u64 = d.bins[r.clone()].iter().map(|b| b.ok).sum();
        let t: f64 = own[r.clone()].iter().map(Duration::as_secs_f64).sum();
        let l: f64 = d.bins[r].iter().map(|b| b.latency_ms_sum).sum();
        (ok > 0 && t > 0.0).then(|| (f(ok) / t, l / f(ok)))
    };
    let (first, last) = (pooled(0..third), pooled(BINS - third..BINS));
    let change = |g: fn((f64, f64)) -> f64| first.zip(last).map(|(a, b)| g(b) / g(a) - 1.0);
    DriftFigures {
        throughput_change: change(|x| x.0),
        latency_change: change(|x| x.1),
        throughput_trend: trend(&rate),
        latency_trend: trend(&lat),
        throughput_rps: rate,
        latency_ms: lat,
    }
}

/// The normalised least-squares trend of per-bin values (at least a third of the bins
/// must hold a value).
fn trend(values: &[Option<f64>]) -> Option<Trend> {
    let pts: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| ((f(i as u64) + 0.5) / f(values.len() as u64), v)))
        .collect();
    if pts.len() < values.len() / 3 || pts.len() < 3 {
        return None;
    }
    let mean = pts.iter().map(|p| p.1).sum::<f64>() / f(pts.len() as u64);
    if mean <= 0.0 {
        return None;
    }
    let x: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let y: Vec<f64> = pts.iter().map(|p| p.1 / mean).collect();
    let fit = stats::regression::slope(&x, &y).ok()?;
    let t = Trend {
        per_window: fit.coef[1],
        ci95: fit.ci95[1],
        p: fit.p[1],
    };
    // JSON has no NaN: a figure that is not finite is not written at all.
    [t.per_window, t.ci95.0, t.ci95.1, t.p]
        .iter()
        .all(|v| v.is_finite())
        .then_some(t)
}

/// The `drift` check ([`DRIFT_LIMIT`]) of a run whose measured time is `measured`
/// ([`DRIFT_MIN_WINDOW`]).
pub fn drift_check(d: &DriftFigures, measured: Duration) -> Check {
    let beyond = |change: Option<f64>, t: Option<Trend>| {
        let (Some(c), Some(t)) = (change, t) else {
            return false;
        };
        c.abs() > DRIFT_LIMIT && ((c > 0.0 && t.ci95.0 > 0.0) || (c < 0.0 && t.ci95.1 < 0.0))
    };
    let pct =
        |c: Option<f64>| c.map_or_else(|| "n/a".to_owned(), |c| format!("{:+.1} %", c * 100.0));
    let tr = |t: Option<Trend>| {
        t.map_or_else(
            || "n/a".to_owned(),
            |t| {
                format!(
                    "{:+.1} % [{:+.1}, {:+.1}]",
                    t.per_window * 100.0,
                    t.ci95.0 * 100.0,
                    t.ci95.1 * 100.0
                )
            },
        )
    };
    if d.throughput_change.is_none() {
        return Check {
            name: "drift".into(),
            passed: true,
            detail: "not measured: no successful request in the first or last third of the window"
                .into(),
        };
    }
    let applied = measured >= DRIFT_MIN_WINDOW;
    let bad_t = beyond(d.throughput_change, d.throughput_trend);
    let bad_l = beyond(d.latency_change, d.latency_trend);
    Check {
        name: "drift".into(),
        passed: !applied || (!bad_t && !bad_l),
        detail: format!(
            "last third against first: throughput {}, mean latency {}; trend over the window: throughput {}, latency {} ({})",
            pct(d.throughput_change),
            pct(d.latency_change),
            tr(d.throughput_trend),
            tr(d.latency_trend),
            if applied {
                format!(
                    "fails beyond ±{} % with a trend whose 95 % interval excludes 0",
                    DRIFT_LIMIT * 100.0
                )
            } else {
                format!(
                    "not applied: {:.0} s of measured time is under the check's {} s",
                    measured.as_secs_f64(),
                    DRIFT_MIN_WINDOW.as_secs()
                )
            }
        ),
    }
}

/// The session figures of a run from its digest.
fn session_figures(
    b: envelope::SessionBounds,
    d: &Digest,
    object_size: u64,
    parts: &[ProcessData],
) -> SessionFigures {
    let tallies: Vec<_> = d.sessions.values().collect();
    let objects: u64 = tallies.iter().map(|t| t.objects).sum();
    let sessions = tallies.len() as u64;
    let last: BTreeMap<u32, u64> = d.sessions.keys().fold(BTreeMap::new(), |mut m, (p, s)| {
        let e = m.entry(*p).or_insert(*s);
        *e = (*e).max(*s);
        m
    });
    let (mut by_b, mut by_t, mut by_run) = (0, 0, 0);
    for ((p, s), t) in &d.sessions {
        if t.max_index + 1 >= b.max_objects {
            by_b += 1;
        } else if last.get(p) == Some(s) {
            by_run += 1;
        } else {
            by_t += 1;
        }
    }
    let cache = parts
        .iter()
        .filter_map(|p| p.info.root_cache)
        .reduce(|a, b| RootCacheFigures {
            hits: a.hits + b.hits,
            misses: a.misses + b.misses,
        });
    let max_objects_one = tallies.iter().map(|t| t.objects).max().unwrap_or(0);
    SessionFigures {
        max_objects: b.max_objects,
        max_age_ms: ms(b.max_age),
        sessions,
        max_index_seen: tallies.iter().map(|t| t.max_index).max().unwrap_or(0),
        max_age_seen_ms: tallies.iter().map(|t| t.max_age).max().map_or(0.0, ms),
        objects,
        objects_per_session_mean: if sessions > 0 {
            f(objects) / f(sessions)
        } else {
            0.0
        },
        objects_per_session_max: max_objects_one,
        bytes_per_root_mean: if sessions > 0 {
            f(objects) * f(object_size) / f(sessions)
        } else {
            0.0
        },
        bytes_per_root_max: max_objects_one.saturating_mul(object_size),
        key_establishments_per_object: if objects > 0 {
            f(sessions) / f(objects)
        } else {
            0.0
        },
        ended_by_max_objects: by_b,
        ended_by_max_age: by_t,
        ended_by_run: by_run,
        root_cache: cache,
        root_cache_hit_rate: cache
            .filter(|c| c.hits + c.misses > 0)
            .map(|c| f(c.hits) / f(c.hits + c.misses)),
    }
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

/// What one successful measured request cost on the wire, on average.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireFigures {
    /// S3 requests per logical request.
    pub s3_requests_mean: f64,
    /// Bytes sent (bodies, and v2's metadata entry) per logical request.
    pub bytes_sent_mean: f64,
    /// Bytes received (bodies) per logical request.
    pub bytes_received_mean: f64,
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
    /// Per successful measured request: S3 requests, bytes sent and bytes received (what
    /// one logical GET or PUT costs on the wire; v1 is two S3 requests, v2 one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireFigures>,
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
    /// Drift within the window (absent from older summaries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<DriftFigures>,
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
    /// The interop matrix of process 0 (its mode, every backend; absent from older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interop: Option<envelope::interop::Matrix>,
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

/// The record-level checks shared by the worker and `pqbench validate`, over the digest of
/// a run's records: stage sums, unaccounted time (per run), session bounds, failures, and
/// drift over the window ([`drift_check`]).
pub fn record_checks(spec: &RunSpec, d: &Digest) -> Vec<Check> {
    let mut checks = Vec::new();
    checks.push(Check {
        name: "stage_sum".into(),
        passed: d.stage_sum_over.count == 0,
        detail: match &d.stage_sum_over.first {
            None => "no request's stage timers sum above its total".into(),
            Some(first) => format!(
                "{} requests have stage sums above their totals, first: {first}",
                d.stage_sum_over.count
            ),
        },
    });
    let p99 = d.unaccounted_quantile(0.99);
    checks.push(Check {
        name: "unaccounted_p99".into(),
        passed: p99 < UNACCOUNTED_P99_LIMIT,
        detail: format!(
            "p99 of unaccounted time is {:.3} % of request time (limit {} %)",
            p99 * 100.0,
            UNACCOUNTED_P99_LIMIT * 100.0
        ),
    });
    let agg = if d.total_s_sum > 0.0 {
        d.unaccounted_s_sum / d.total_s_sum
    } else {
        0.0
    };
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
        let missing =
            spec.cell.operation == crate::runspec::Operation::Put && d.session_missing > 0;
        checks.push(Check {
            name: "session_bounds".into(),
            passed: d.session_outside.count == 0 && !missing,
            detail: match (&d.session_outside.first, missing) {
                (Some(first), _) => format!(
                    "{} objects outside B_max = {} / T_max = {:?}, first: {first}",
                    d.session_outside.count, b.max_objects, b.max_age
                ),
                (None, true) => "a successful session PUT has no session bookkeeping".into(),
                (None, false) => format!(
                    "every object within B_max = {} and T_max = {:?}",
                    b.max_objects, b.max_age
                ),
            },
        });
    }
    let failed: u64 = d.failures.values().sum();
    let frac = if d.measured > 0 {
        f(failed) / f(d.measured)
    } else {
        1.0
    };
    checks.push(Check {
        name: "failures".into(),
        passed: d.measured > 0 && frac <= spec.allowed_failure_fraction,
        detail: if d.measured == 0 {
            "no measured requests".into()
        } else {
            format!(
                "{failed} of {} measured requests failed (allowed fraction {})",
                d.measured, spec.allowed_failure_fraction
            )
        },
    });
    checks.push(drift_check(&drift(spec, d), spec.measured_time()));
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
    let mut d = Digest::default();
    for p in parts {
        d.merge(&p.digest);
    }
    let counts = Counts {
        warmup: d.warmup,
        measured: d.measured,
        ok: d.ok(),
        failed: d.failures.values().sum(),
        not_started: d.not_started,
    };
    // Interleaved: the run's own slices within the window are its measured time.
    let w = spec.measured_time().as_secs_f64();
    let n_ok = f(counts.ok);
    let mean_us = |sum: f64| if counts.ok == 0 { 0.0 } else { sum / n_ok };
    let [ke, kd, aead, manifest, storage] = d.stage_us_sums;
    let stages = StageMeans {
        key_establishment: mean_us(ke),
        key_derivation: mean_us(kd),
        aead: mean_us(aead),
        manifest: mean_us(manifest),
        storage: mean_us(storage),
        unaccounted: mean_us(d.unaccounted_us_sum),
        queue_wait: d.queue_wait_ms.mean() * 1e3,
        crypto_cpu: mean_us(d.crypto_cpu_us_sum),
    };
    let process_cpu_s: f64 = parts.iter().map(|p| p.info.window_cpu_s).sum();
    let cores_available: f64 = parts.iter().map(|p| p.info.host.cores_available).sum();
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
        crypto_cpu_per_request_us: mean_us(d.crypto_cpu_us_sum),
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
        rss_growth_bytes: gauge_growth(s0, from, to, |s| s.server_rss_bytes),
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
        disk_write_latency_ms: {
            let busy = counter_rate(s0, from, to, |s| s.server_disk_write_s);
            let writes = counter_rate(s0, from, to, |s| s.server_disk_writes);
            busy.zip(writes)
                .and_then(|(b, w)| (w > 0.0).then(|| b / w * 1e3))
        },
        disk_queue_depth: counter_rate(s0, from, to, |s| s.server_disk_weighted_io_s),
        key_service_cpu_cores: counter_rate(s0, from, to, |s| s.kms_cpu_s),
        key_service_max_rss_bytes: gauge_max(s0, from, to, |s| s.kms_rss_bytes),
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
    let session = spec
        .session_bounds()
        .map(|b| session_figures(b, &d, spec.cell.object_size.0, parts));
    let mut checks = record_checks(spec, &d);
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
        manifest_bytes_mean: if counts.ok == 0 {
            0.0
        } else {
            d.manifest_bytes_sum / n_ok
        },
        wire: (counts.ok > 0).then(|| WireFigures {
            s3_requests_mean: d.wire_sums[0] / n_ok,
            bytes_sent_mean: d.wire_sums[1] / n_ok,
            bytes_received_mean: d.wire_sums[2] / n_ok,
        }),
        failures_by_class: d.failures.clone(),
        latency_ms: Dist {
            mean: d.latency_ms.mean(),
            p50: d.latency_quantile(0.5),
            p90: d.latency_quantile(0.9),
            p99: d.latency_quantile(0.99),
            max: d.latency_max(),
        },
        queue_wait_ms: matches!(spec.cell.arrival, Loop::Open { .. }).then(|| Dist {
            mean: d.queue_wait_ms.mean(),
            p50: d.queue_wait_quantile(0.5),
            p90: d.queue_wait_quantile(0.9),
            p99: d.queue_wait_quantile(0.99),
            max: d.queue_wait_max(),
        }),
        stages_mean_us: stages,
        unaccounted: Unaccounted {
            p99_fraction: d.unaccounted_quantile(0.99),
            aggregate_fraction: if d.total_s_sum > 0.0 {
                d.unaccounted_s_sum / d.total_s_sum
            } else {
                0.0
            },
        },
        drift: Some(drift(spec, &d)),
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
        interop: p0.and_then(|p| p.info.interop.clone()),
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
        "  server       CPU {}, RSS {}, dirty+wb {}, disk {} (write {}, queue {}), iowait {}",
        opt(sv.cpu_cores_used, "cores", 1.0),
        opt(sv.max_rss_bytes, "MiB", 1.0 / f64::from(1u32 << 20)),
        opt(
            sv.max_dirty_writeback_bytes,
            "MiB",
            1.0 / f64::from(1u32 << 20)
        ),
        opt(sv.disk_write_mib_s, "MiB/s", 1.0),
        opt(sv.disk_write_latency_ms, "ms", 1.0),
        opt(sv.disk_queue_depth, "in flight", 1.0),
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

    /// The index of a process directory named `p<index>` (`p0`, `p12`): digits only, so
    /// `p`, `p+1` and `p-0` name none.
    pub fn process_index(dir: &str) -> Option<u32> {
        dir.strip_prefix('p')
            .filter(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|i| i.parse().ok())
    }
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
