//! # testbed: the measured ceilings, and what bounds each cell (study IV-A, V-B)
//!
//! The study reads every cell against its testbed: "the client is the bottleneck" in the
//! saturated GET cell, the network in large GETs, the server's disk in large PUTs. pqbench
//! measures the ceilings before a campaign's first run ([`Baselines`], kept beside the
//! results as `baselines.json`): the network's rate each way with iperf3, the server disk's
//! sequential write rate with fio, the round trip with ping. `pqbench run` probes this host
//! (the server's CPUs and data directory). The operator reads `baselines.json` under the
//! campaign's results prefix but does not take baselines yet (no pre-flight probe).
//!
//! A cell's use of each ceiling, per run ([`bottlenecks`]):
//!
//! - **client**: client cores used ÷ the cores available to the client processes;
//! - **server**: the server's cores used ÷ the cores it has ([`Baselines::server_cores`]);
//! - **network**: successful requests per second × the bytes each request moves in its
//!   busier direction ÷ iperf3's rate in that direction (bytes sent against client → server,
//!   bytes received against server → client);
//! - **disk**: the server host's disk write rate ÷ fio's sequential write rate.
//!
//! Each is the mean over the cell's runs (all arms: they share the cell's machine) with its
//! 95 % t interval ([`stats::describe::mean_interval`]). A ceiling is **reached** when that
//! mean is at least [`REACHED`] of it, or for the CPUs the saturation threshold
//! ([`stats::regime::SATURATION`], the same as the saturation check's). The cell's label
//! is the reached ceiling used the most; a cell that reaches none is **latency-bound**:
//! its closed loop waits on round trips with every resource to spare.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::rows::RunRow;

/// A network or disk ceiling is reached at this share of its baseline: the baseline is a
/// best case (iperf3 streams bulk bytes; fio writes in large blocks), so a store's traffic
/// at 90 % of it has no room left.
pub const REACHED: f64 = 0.9;

/// The testbed's ceilings, measured before a campaign's first run (`baselines.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Baselines {
    /// Where they were taken (`this host` for `pqbench run`).
    pub site: String,
    /// When, seconds since the Unix epoch.
    pub taken_unix_s: f64,
    /// The server host the network probes aimed at (an address or name).
    pub server_host: String,
    /// The server's cores (its CPU list, or the MinIO pod's CPU count); `None` when not
    /// confined, and then the server's use is not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<f64>,
    /// iperf3 both ways.
    pub network: Probe<Network>,
    /// fio's sequential writes in the server's data directory.
    pub disk: Probe<Disk>,
    /// ping's round trip.
    pub round_trip: Probe<RoundTrip>,
}

/// One probe's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Probe<T> {
    /// It ran.
    Measured(T),
    /// Why it did not (a tool missing, no server host to reach, the tool's own error).
    NotMeasured(String),
}

impl<T> Probe<T> {
    /// The measurement, if taken.
    pub fn measured(&self) -> Option<&T> {
        match self {
            Self::Measured(t) => Some(t),
            Self::NotMeasured(_) => None,
        }
    }
}

/// The network's rate each way (iperf3, TCP, parallel streams).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Network {
    /// Client → server, bits per second received.
    pub upload_bits_per_s: f64,
    /// Server → client, bits per second received.
    pub download_bits_per_s: f64,
    /// Parallel streams.
    pub streams: u32,
    /// Seconds each way.
    pub seconds: u32,
    /// The tool and its version (`iperf 3.12`).
    pub tool: String,
}

/// The server disk's sequential write rate (fio).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Disk {
    /// Bytes written per second.
    pub write_bytes_per_s: f64,
    /// Mean completion time of one write, ms.
    pub write_latency_ms: f64,
    /// Block size, bytes.
    pub block_bytes: u64,
    /// Whether the writes bypassed the page cache (`O_DIRECT`); otherwise they were
    /// buffered and flushed at the end.
    pub direct: bool,
    /// The tool and its version (`fio-3.33`).
    pub tool: String,
}

/// The round trip to the server host (ping).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoundTrip {
    /// Echo requests answered.
    pub count: u32,
    /// Least round trip, ms.
    pub min_ms: f64,
    /// Mean round trip, ms.
    pub avg_ms: f64,
    /// Longest round trip, ms.
    pub max_ms: f64,
    /// ping's mean deviation, ms.
    pub mdev_ms: f64,
}

/// How long and how wide the probes run for a campaign: each probe about a tenth of the
/// measured window (at least 1 s, at most 5 s), iperf3 with as many streams as the
/// campaign's busiest cell has workers (at most 8: the link, not the streams, is measured).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeSettings {
    /// Seconds per probe (iperf3 takes whole seconds).
    pub seconds: u32,
    /// iperf3's parallel streams.
    pub streams: u32,
}

impl ProbeSettings {
    /// The settings for a plan whose runs measure for `measured`.
    pub fn of(plan: &campaign::design::Plan, measured: std::time::Duration) -> Self {
        let tenth = u32::try_from(measured.as_secs() / 10).unwrap_or(u32::MAX);
        let busiest = plan.cells.iter().map(|c| c.concurrency).max().unwrap_or(1);
        Self {
            seconds: tenth.clamp(1, 5),
            streams: busiest.clamp(1, 8),
        }
    }
}

/// A ceiling of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Resource {
    /// The client processes' CPUs.
    Client,
    /// The S3 server's CPUs.
    Server,
    /// The network between them.
    Network,
    /// The server host's disk.
    Disk,
}

impl Resource {
    /// Every resource, in the order the report lists them.
    pub const ALL: [Self; 4] = [Self::Client, Self::Server, Self::Network, Self::Disk];

    /// The word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Server => "server",
            Self::Network => "network",
            Self::Disk => "disk",
        }
    }

    /// The share of the ceiling at which it counts as reached.
    pub fn threshold(self) -> f64 {
        match self {
            Self::Client | Self::Server => stats::regime::SATURATION,
            Self::Network | Self::Disk => REACHED,
        }
    }
}

/// A cell's use of one ceiling over its runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// The resource.
    pub resource: Resource,
    /// Mean share of the ceiling used (1 = all of it).
    pub mean: f64,
    /// 95 % t interval of the mean (`None` with one run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<(f64, f64)>,
    /// Runs measured.
    pub runs: usize,
    /// The mean is at or above the resource's threshold.
    pub reached: bool,
}

/// What bounds one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CellBottleneck {
    /// The cell.
    pub cell: String,
    /// Its operation, object size in bytes and workers (where the runs say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<campaign::spec::Operation>,
    /// …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_size: Option<u64>,
    /// …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// The reached ceiling used the most; `None`: latency-bound (none reached).
    pub label: Option<Resource>,
    /// Its use of each ceiling that could be judged, in the order client, server,
    /// network, disk.
    pub usage: Vec<Usage>,
    /// The ceilings that could not be judged, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<String>,
}

impl CellBottleneck {
    /// The label in a word: `client`, `server`, `network`, `disk` or `latency`.
    pub fn label_word(&self) -> &'static str {
        self.label.map_or("latency", Resource::as_str)
    }

    /// The use of one resource, if judged.
    pub fn usage_of(&self, r: Resource) -> Option<&Usage> {
        self.usage.iter().find(|u| u.resource == r)
    }
}

/// The share of each ceiling one run used (`None` where a figure or ceiling is missing).
fn run_usage(r: &RunRow, b: Option<&Baselines>) -> [Option<f64>; 4] {
    let client =
        (r.client_cores_available > 0.0).then(|| r.client_cores_used / r.client_cores_available);
    let server = r
        .server_cpu_cores
        .zip(b.and_then(|b| b.server_cores))
        .filter(|&(_, n)| n > 0.0)
        .map(|(used, n)| used / n);
    let network = b
        .and_then(|b| b.network.measured())
        .and_then(|n| {
            let up = r.bytes_sent? * 8.0 * r.throughput_rps / n.upload_bits_per_s;
            let down = r.bytes_received? * 8.0 * r.throughput_rps / n.download_bits_per_s;
            Some(up.max(down))
        })
        .filter(|x| x.is_finite());
    let disk = b
        .and_then(|b| b.disk.measured())
        .zip(r.server_disk_write_mib_s)
        .map(|(d, mib)| mib * f64::from(1u32 << 20) / d.write_bytes_per_s)
        .filter(|x| x.is_finite());
    [client, server, network, disk]
}

/// Why a resource could not be judged in a cell whose runs lack it.
fn why_unjudged(r: Resource, b: Option<&Baselines>) -> String {
    let why = match (r, b) {
        (Resource::Client, _) => "its runs record no client cores available",
        (_, None) => "no baselines were taken (no baselines.json)",
        (Resource::Server, Some(b)) if b.server_cores.is_none() => {
            "the server's cores are not known (the server is not confined to CPUs)"
        }
        (Resource::Server, _) => "its runs did not record the server's CPU",
        (
            Resource::Network,
            Some(Baselines {
                network: Probe::NotMeasured(w),
                ..
            }),
        ) => w.as_str(),
        (Resource::Network, _) => "its runs did not record their bytes per request",
        (
            Resource::Disk,
            Some(Baselines {
                disk: Probe::NotMeasured(w),
                ..
            }),
        ) => w.as_str(),
        (Resource::Disk, _) => "its runs did not record the server host's disk writes",
    };
    format!("{}: {why}", r.as_str())
}

/// What bounds each cell, in the order the cells first appear in `rows`.
pub fn bottlenecks(rows: &[RunRow], b: Option<&Baselines>) -> Vec<CellBottleneck> {
    let mut order: Vec<&RunRow> = Vec::new();
    let mut by_cell: BTreeMap<&str, Vec<[Option<f64>; 4]>> = BTreeMap::new();
    for r in rows {
        if !by_cell.contains_key(r.cell.as_str()) {
            order.push(r);
        }
        by_cell.entry(&r.cell).or_default().push(run_usage(r, b));
    }
    order
        .into_iter()
        .map(|first| {
            let runs = &by_cell[first.cell.as_str()];
            let mut usage = Vec::new();
            let mut unjudged = Vec::new();
            for (i, res) in Resource::ALL.into_iter().enumerate() {
                let x: Vec<f64> = runs.iter().filter_map(|u| u[i]).collect();
                match usage_of(res, &x) {
                    Some(u) => usage.push(u),
                    None => unjudged.push(why_unjudged(res, b)),
                }
            }
            let label = usage
                .iter()
                .filter(|u| u.reached)
                .max_by(|a, b| a.mean.total_cmp(&b.mean))
                .map(|u| u.resource);
            CellBottleneck {
                cell: first.cell.clone(),
                operation: first.operation,
                object_size: first.object_size,
                concurrency: first.concurrency,
                label,
                usage,
                unjudged,
            }
        })
        .collect()
}

fn usage_of(resource: Resource, x: &[f64]) -> Option<Usage> {
    if x.is_empty() {
        return None;
    }
    #[allow(clippy::cast_precision_loss, reason = "run counts are small")]
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let ci = stats::describe::mean_interval(x, 0.95).ok().map(|m| m.ci);
    Some(Usage {
        resource,
        mean,
        ci,
        runs: x.len(),
        reached: mean >= resource.threshold(),
    })
}
