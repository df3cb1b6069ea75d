//! One arm's absolute figures, unpaired, beside the paired ratios (study sections V-A,
//! V-B and VI):
//!
//! - [`KemTime`], Tables VII and VIII and Finding 1: key-establishment time per request,
//!   mean with its 95 % t interval over the runs of an arm, at one worker (closed loop,
//!   concurrency 1), per mode and backend; and Fig. 2: the mean request time at that
//!   worker (Little's law: one worker's mean request time is `1 / throughput`), the median
//!   latency, and the key establishment's share of the request, `mean KEM ÷ mean request
//!   time`.
//! - [`CpuSplit`], V-C: in a client-saturated cell, the extra CPU per request against the
//!   difference of key establishment at one worker.
//! - [`ArmResources`], Table X and section VI: per cell and arm (closed loop), client and
//!   server CPU per request and server memory growth, each a mean with its 95 % interval,
//!   and the coefficient of variation of throughput across runs.
//!
//! The statistics are [`stats::describe`]'s; every interval is of a mean over runs and is
//! not adjusted for multiplicity (the study reports them the same way).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stats::describe::{MeanInterval, mean_interval, variation};

use campaign::design::Arm;
use campaign::spec::Operation;

use crate::rows::RunRow;

/// The level of every interval here, as in the study's tables.
pub const LEVEL: f64 = 0.95;

/// Key establishment per request of one arm in a one-worker cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KemTime {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub arm: String,
    /// The arm's mode (`ml-kem-768`), when known.
    pub mode: Option<String>,
    /// The arm's crypto backend (`aws-lc`), when known.
    pub backend: Option<String>,
    /// Operation (PUT encapsulates, GET decapsulates).
    pub operation: Option<Operation>,
    /// Object size in bytes.
    pub object_size: Option<u64>,
    /// Key-establishment stage time per request, µs: mean over runs with its 95 % interval.
    pub key_establishment_us: MeanInterval,
    /// Mean request time, µs (`10⁶ ÷ throughput` per run at one worker), with its interval.
    pub request_us: MeanInterval,
    /// `key_establishment_us.mean ÷ request_us.mean`: the share of a request's time spent
    /// establishing its key (Fig. 2).
    pub kem_share: f64,
    /// Median over runs of each run's median latency, ms (Fig. 2's y axis).
    pub latency_p50_ms: Option<f64>,
}

/// Key establishment per request of one arm and operation over every one-worker cell,
/// whatever the object size (study Table VII: "one worker, objects up to 16 MiB").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KemPooled {
    /// Arm label.
    pub arm: String,
    /// The arm's mode, when known.
    pub mode: Option<String>,
    /// The arm's crypto backend, when known.
    pub backend: Option<String>,
    /// Operation.
    pub operation: Option<Operation>,
    /// The object sizes pooled, bytes, ascending.
    pub object_sizes: Vec<u64>,
    /// Key-establishment stage time per request, µs, over the runs of every such cell.
    pub key_establishment_us: MeanInterval,
}

/// CPU, memory and throughput spread of one arm in one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmResources {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub arm: String,
    /// Runs.
    pub runs: usize,
    /// Client CPU per request, µs.
    pub client_cpu_per_request_us: Option<MeanInterval>,
    /// Server CPU per request, µs: `server cores × 10⁶ ÷ throughput` per run; `None` for
    /// interleaved runs, whose window holds the other arms' turns on the same server.
    pub server_cpu_per_request_us: Option<MeanInterval>,
    /// Server resident memory growth over the window, MiB (`None` for interleaved runs).
    pub server_rss_growth_mib: Option<MeanInterval>,
    /// Client resident memory growth over the window, MiB.
    pub client_rss_growth_mib: Option<MeanInterval>,
    /// The key service's CPU per request, µs (remote arms: its cores × 10⁶ ÷ throughput
    /// per run; `None` for interleaved runs, whose window holds the other remote arms'
    /// turns on the same service, and for local arms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_service_cpu_per_request_us: Option<MeanInterval>,
    /// Coefficient of variation of throughput across runs (sd ÷ mean).
    pub throughput_cv: Option<f64>,
}

const MIB: f64 = 1_048_576.0;

/// The runs of each (cell, arm), in first-seen cell order and sorted arms.
fn by_cell_and_arm(
    rows: &[RunRow],
    keep: impl Fn(&RunRow) -> bool,
) -> Vec<((&str, &str), Vec<&RunRow>)> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: BTreeMap<(&str, &str), Vec<&RunRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| keep(r)) {
        if !order.contains(&r.cell.as_str()) {
            order.push(&r.cell);
        }
        groups.entry((&r.cell, &r.mode)).or_default().push(r);
    }
    let rank = |c: &str| order.iter().position(|o| *o == c);
    let mut out: Vec<_> = groups.into_iter().collect();
    out.sort_by_key(|((c, a), _)| (rank(c), *a));
    out
}

/// A closed-loop run (no offered rate).
fn closed(r: &RunRow) -> bool {
    r.offered_rps.is_none()
}

/// A closed-loop run at one worker with stage times: a run the key-establishment figures
/// (Tables VII and VIII) are taken from.
fn one_worker(r: &RunRow) -> bool {
    closed(r) && r.concurrency == Some(1) && r.stages_us.is_some()
}

/// The mean interval of `f` over the runs where it is known, when at least two are.
fn over(runs: &[&RunRow], f: impl Fn(&RunRow) -> Option<f64>) -> Option<MeanInterval> {
    let x: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
    mean_interval(&x, LEVEL).ok()
}

/// Key establishment per request of every arm in every one-worker closed-loop cell whose
/// runs carry stage times (at least two runs).
pub fn kem_times(rows: &[RunRow], arms: &BTreeMap<String, Arm>) -> Vec<KemTime> {
    by_cell_and_arm(rows, one_worker)
        .into_iter()
        .filter_map(|((cell, arm), runs)| {
            let kem = over(&runs, |r| r.stages_us.map(|s| s[0]))?;
            let request = over(&runs, |r| {
                (r.throughput_rps > 0.0).then(|| 1e6 / r.throughput_rps)
            })?;
            let first = runs[0];
            let details = arms.get(arm);
            Some(KemTime {
                cell: cell.to_owned(),
                arm: arm.to_owned(),
                mode: details.map(|a| a.mode.to_string()),
                backend: details.map(|a| a.backend.name().to_owned()),
                operation: first.operation,
                object_size: first.object_size,
                kem_share: kem.mean / request.mean,
                key_establishment_us: kem,
                request_us: request,
                latency_p50_ms: stats::median(
                    &runs
                        .iter()
                        .filter_map(|r| r.latency_p50_ms)
                        .collect::<Vec<_>>(),
                ),
            })
        })
        .collect()
}

/// Key establishment per request of every arm and operation, pooled over the object sizes
/// of its one-worker cells (at least two runs).
pub fn kem_pooled(rows: &[RunRow], arms: &BTreeMap<String, Arm>) -> Vec<KemPooled> {
    let mut groups: BTreeMap<(&str, Option<Operation>), Vec<&RunRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| one_worker(r)) {
        groups.entry((&r.mode, r.operation)).or_default().push(r);
    }
    groups
        .into_iter()
        .filter_map(|((arm, operation), runs)| {
            let mut object_sizes: Vec<u64> = runs.iter().filter_map(|r| r.object_size).collect();
            object_sizes.sort_unstable();
            object_sizes.dedup();
            let details = arms.get(arm);
            Some(KemPooled {
                arm: arm.to_owned(),
                mode: details.map(|a| a.mode.to_string()),
                backend: details.map(|a| a.backend.name().to_owned()),
                operation,
                object_sizes,
                key_establishment_us: over(&runs, |r| r.stages_us.map(|s| s[0]))?,
            })
        })
        .collect()
}

/// CPU, memory and the throughput's coefficient of variation of every arm in every
/// closed-loop cell.
pub fn resources(rows: &[RunRow]) -> Vec<ArmResources> {
    by_cell_and_arm(rows, closed)
        .into_iter()
        .map(|((cell, arm), runs)| {
            let tp: Vec<f64> = runs.iter().map(|r| r.throughput_rps).collect();
            ArmResources {
                cell: cell.to_owned(),
                arm: arm.to_owned(),
                runs: runs.len(),
                client_cpu_per_request_us: over(&runs, |r| Some(r.cpu_per_request_us)),
                server_cpu_per_request_us: over(&runs, |r| {
                    let cores = r.server_cpu_cores.filter(|_| !r.interleaved)?;
                    (r.throughput_rps > 0.0).then(|| cores * 1e6 / r.throughput_rps)
                }),
                server_rss_growth_mib: over(&runs, |r| {
                    r.server_rss_growth_bytes
                        .filter(|_| !r.interleaved)
                        .map(|b| b / MIB)
                }),
                client_rss_growth_mib: over(&runs, |r| r.rss_growth_bytes.map(|b| b / MIB)),
                key_service_cpu_per_request_us: over(&runs, |r| {
                    let cores = r.key_service_cpu_cores.filter(|_| !r.interleaved)?;
                    (r.throughput_rps > 0.0).then(|| cores * 1e6 / r.throughput_rps)
                }),
                throughput_cv: variation(&tp).ok(),
            }
        })
        .collect()
}

/// Where a client-saturated comparison's extra CPU goes (study V-C: "For ML-KEM, key
/// recovery thus accounts for about half of the extra CPU per request (17 of 36 µs)"): the
/// extra client CPU per request in the saturated cell, a paired difference with its 95 %
/// interval, against the difference of the two arms' key-establishment times at one worker
/// for the same operation and object size, where stage timers are not distorted by waiting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuSplit {
    /// The saturated cell.
    pub cell: String,
    /// The arm measured.
    pub arm: String,
    /// The arm it is measured against.
    pub against: String,
    /// Client CPU per request, arm − against, µs, over the cell's pairs.
    pub extra_cpu_us: stats::paired::Difference,
    /// The one-worker cell whose key-establishment times are used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_worker_cell: Option<String>,
    /// Key establishment per request at one worker, arm − against, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_recovery_us: Option<f64>,
    /// `key_recovery_us ÷ extra_cpu_us.mean`, when the extra CPU's interval excludes zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_recovery_share: Option<f64>,
    /// Why the split is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The split of one saturated comparison's extra CPU, over its pairs (arm run, against
/// run); `None` with fewer than two pairs.
pub fn cpu_split(
    (cell, arm, against): (&str, &str, &str),
    pairs: &[(&RunRow, &RunRow)],
    kem_times: &[KemTime],
) -> Option<CpuSplit> {
    let cpu: Vec<(f64, f64)> = pairs
        .iter()
        .map(|(a, b)| (a.cpu_per_request_us, b.cpu_per_request_us))
        .collect();
    let extra = stats::paired::difference_interval(&cpu).ok()?;
    let first = pairs.first()?.0;
    let at_one = |label: &str| {
        kem_times.iter().find(|k| {
            k.arm == label && k.operation == first.operation && k.object_size == first.object_size
        })
    };
    let mut split = CpuSplit {
        cell: cell.to_owned(),
        arm: arm.to_owned(),
        against: against.to_owned(),
        extra_cpu_us: extra,
        one_worker_cell: None,
        key_recovery_us: None,
        key_recovery_share: None,
        note: None,
    };
    let (Some(a), Some(b)) = (at_one(arm), at_one(against)) else {
        split.note = Some(format!(
            "no one-worker cell of the same operation and object size holds both {arm} and {against}"
        ));
        return Some(split);
    };
    let kem = a.key_establishment_us.mean - b.key_establishment_us.mean;
    split.one_worker_cell = Some(a.cell.clone());
    split.key_recovery_us = Some(kem);
    if extra.ci95.0 > 0.0 || extra.ci95.1 < 0.0 {
        split.key_recovery_share = Some(kem / extra.mean);
    } else {
        split.note = Some(
            "the extra CPU's 95 % interval includes zero: there is no extra CPU to split".into(),
        );
    }
    Some(split)
}
