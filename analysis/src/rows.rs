//! The analysis's input: one [`RunRow`] per valid run, the bounded sessions of a run
//! ([`SessionRow`]), the attempts of each planned run ([`RunAttempts`]), and the CSV form
//! `pqbench analyze --runs` reads and writes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use campaign::spec::Operation;

use crate::{Error, Result};

/// One run as the analysis sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// Run id.
    pub run_id: String,
    /// Cell id.
    pub cell: String,
    /// Arm label (mode).
    pub mode: String,
    /// Block number.
    pub block: u32,
    /// Successful requests per second of the window.
    pub throughput_rps: f64,
    /// Client process CPU per successful request, µs.
    pub cpu_per_request_us: f64,
    /// Client cores used over the window.
    pub client_cores_used: f64,
    /// Client cores available (cgroup quota and affinity).
    pub client_cores_available: f64,
    /// Server CPU in cores over the window, if measured.
    pub server_cpu_cores: Option<f64>,
    /// Operation (for the knee table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Operation>,
    /// Object size in bytes (storage and knee tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_size: Option<u64>,
    /// Workers or serving threads (knee table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Offered rate of an open-loop run, requests/s (knee table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
    /// Mean response time (queue wait + service), ms (knee table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_response_ms: Option<f64>,
    /// Mean manifest bytes per object (storage table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_bytes: Option<f64>,
    /// S3 requests per logical request ([`crate::wire`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3_requests: Option<f64>,
    /// Bytes sent per logical request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_sent: Option<f64>,
    /// Bytes received per logical request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_received: Option<f64>,
    /// Median latency of successful requests, ms (second endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p50_ms: Option<f64>,
    /// 99th-percentile latency, ms (second endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_p99_ms: Option<f64>,
    /// Peak client resident memory over the window, bytes (second endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss_bytes: Option<f64>,
    /// Client resident memory at the window's end minus at its start, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_growth_bytes: Option<f64>,
    /// The run took turns with the other arms of its block (`interleave`): its window holds
    /// their turns too, so the server's figures over it are not this arm's alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interleaved: bool,
    /// Peak resident memory of the S3 server over the window, bytes (study Table X).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_max_rss_bytes: Option<f64>,
    /// The S3 server's resident memory at the window's end minus at its start, bytes
    /// (may be negative; study Table X).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_growth_bytes: Option<f64>,
    /// The server host's disk write rate over the window, MiB/s (the bottleneck label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_disk_write_mib_s: Option<f64>,
    /// The server host's mean disk write time over the window, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_disk_write_latency_ms: Option<f64>,
    /// The server host's mean disk queue depth (I/Os in flight) over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_disk_queue_depth: Option<f64>,
    /// The key service's CPU in cores over the window (remote arms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_service_cpu_cores: Option<f64>,
    /// Mean stage times, µs, in the order of [`STAGES`] (second endpoint at one worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages_us: Option<[f64; 5]>,
    /// Position of the run within its block (the order check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u32>,
    /// When the run's window opened, seconds since the Unix epoch (the order check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    /// Drift within the window: throughput in its last third over its first, minus 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_throughput_change: Option<f64>,
    /// … mean latency likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_latency_change: Option<f64>,
    /// Throughput in each bin of the window over the run's mean (the drift plot; not in
    /// the CSV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_bins: Option<Vec<Option<f64>>>,
    /// Bounded sessions (`ml-kem-768-session`; not in the CSV).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRow>,
}

/// What a run's bounded sessions exposed and cost (study section V-F).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    /// B_max.
    pub max_objects: u64,
    /// T_max, ms.
    pub max_age_ms: f64,
    /// Sessions (roots established).
    pub sessions: u64,
    /// Objects sealed under them.
    pub objects: u64,
    /// Mean objects per root.
    pub objects_per_session_mean: f64,
    /// Mean plaintext bytes per root.
    pub bytes_per_root_mean: f64,
    /// Most plaintext bytes under one root.
    pub bytes_per_root_max: u64,
    /// Key establishments per object.
    pub key_establishments_per_object: f64,
    /// Sessions ended by B_max.
    pub ended_by_max_objects: u64,
    /// Sessions ended by T_max.
    pub ended_by_max_age: u64,
    /// Sessions cut by the end of the run.
    pub ended_by_run: u64,
    /// Receiver root-cache hits / lookups over the window (GET).
    pub root_cache_hit_rate: Option<f64>,
}

/// The stage timers a run row carries, in the order of [`RunRow::stages_us`] (study
/// Table XVI).
pub const STAGES: [&str; 5] = [
    "key_establishment",
    "key_derivation",
    "aead",
    "manifest",
    "storage",
];

/// The CSV columns `pqbench analyze --runs` requires, in order.
pub const CSV_COLUMNS: [&str; 9] = [
    "run_id",
    "cell",
    "mode",
    "block",
    "throughput_rps",
    "cpu_per_request_us",
    "client_cores_used",
    "client_cores_available",
    "server_cpu_cores",
];

/// Optional CSV columns, read when present.
pub const CSV_OPTIONAL: [&str; 29] = [
    "operation",
    "object_size",
    "concurrency",
    "offered_rps",
    "mean_response_ms",
    "manifest_bytes",
    "latency_p50_ms",
    "latency_p99_ms",
    "max_rss_bytes",
    "rss_growth_bytes",
    "stage_key_establishment_us",
    "stage_key_derivation_us",
    "stage_aead_us",
    "stage_manifest_us",
    "stage_storage_us",
    "position",
    "started_unix_s",
    "drift_throughput_change",
    "drift_latency_change",
    "s3_requests",
    "bytes_sent",
    "bytes_received",
    "server_max_rss_bytes",
    "server_rss_growth_bytes",
    "interleaved",
    "server_disk_write_mib_s",
    "server_disk_write_latency_ms",
    "server_disk_queue_depth",
    "key_service_cpu_cores",
];

/// Parses run rows from CSV text (comma-separated, a header row, no quoting needed for
/// these fields; empty `server_cpu_cores` means not measured). `origin` names the file in
/// errors, which give the line and column.
pub fn rows_from_csv(text: &str, origin: &str) -> Result<Vec<RunRow>> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Err(Error::Data(format!(
            "{origin}: empty file; expected a header row: {}",
            CSV_COLUMNS.join(",")
        )));
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let find = |name: &str| cols.iter().position(|c| *c == name);
    let mut idx = BTreeMap::new();
    for c in CSV_COLUMNS {
        let i = find(c).ok_or_else(|| {
            Error::Data(format!(
                "{origin}: missing column {c:?}; the header must hold {}",
                CSV_COLUMNS.join(",")
            ))
        })?;
        idx.insert(c, i);
    }
    for c in CSV_OPTIONAL {
        if let Some(i) = find(c) {
            idx.insert(c, i);
        }
    }
    let mut out = Vec::new();
    for (ln, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let at = |c: &str| -> Option<&str> {
            idx.get(c)
                .and_then(|&i| f.get(i).copied())
                .filter(|s| !s.is_empty())
        };
        let bad =
            |c: &str, why: &str| Error::Data(format!("{origin}:{}: column {c}: {why}", ln + 1));
        let req = |c: &str| at(c).ok_or_else(|| bad(c, "missing value"));
        let num = |c: &str| -> Result<f64> {
            let s = req(c)?;
            let v: f64 = s
                .parse()
                .map_err(|_| bad(c, &format!("{s:?} is not a number")))?;
            if !v.is_finite() || v < 0.0 {
                return Err(bad(c, &format!("{s:?} must be a non-negative number")));
            }
            Ok(v)
        };
        let opt_num = |c: &str| -> Result<Option<f64>> {
            if at(c).is_some() {
                num(c).map(Some)
            } else {
                Ok(None)
            }
        };
        let opt_signed = |c: &str| -> Result<Option<f64>> {
            at(c)
                .map(|s| {
                    s.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| bad(c, &format!("{s:?} is not a finite number")))
                })
                .transpose()
        };
        let int = |c: &str| -> Result<Option<u64>> {
            at(c)
                .map(|s| {
                    s.parse::<u64>()
                        .map_err(|_| bad(c, &format!("{s:?} is not a whole number")))
                })
                .transpose()
        };
        out.push(RunRow {
            run_id: req("run_id")?.to_owned(),
            cell: req("cell")?.to_owned(),
            mode: req("mode")?.to_owned(),
            block: u32::try_from(int("block")?.ok_or_else(|| bad("block", "missing value"))?)
                .map_err(|_| bad("block", "too large"))?,
            throughput_rps: num("throughput_rps")?,
            cpu_per_request_us: num("cpu_per_request_us")?,
            client_cores_used: num("client_cores_used")?,
            client_cores_available: num("client_cores_available")?,
            server_cpu_cores: opt_num("server_cpu_cores")?,
            operation: match at("operation") {
                None => None,
                Some("put") => Some(Operation::Put),
                Some("get") => Some(Operation::Get),
                Some(o) => return Err(bad("operation", &format!("{o:?} must be put or get"))),
            },
            object_size: int("object_size")?,
            concurrency: int("concurrency")?.map(|c| u32::try_from(c).unwrap_or(u32::MAX)),
            offered_rps: opt_num("offered_rps")?,
            mean_response_ms: opt_num("mean_response_ms")?,
            manifest_bytes: opt_num("manifest_bytes")?,
            latency_p50_ms: opt_num("latency_p50_ms")?,
            latency_p99_ms: opt_num("latency_p99_ms")?,
            max_rss_bytes: opt_num("max_rss_bytes")?,
            rss_growth_bytes: opt_signed("rss_growth_bytes")?,
            stages_us: {
                let v = STAGES
                    .iter()
                    .map(|st| opt_num(&format!("stage_{st}_us")))
                    .collect::<Result<Vec<_>>>()?;
                match v.iter().copied().collect::<Option<Vec<f64>>>() {
                    Some(all) => Some([all[0], all[1], all[2], all[3], all[4]]),
                    None if v.iter().all(Option::is_none) => None,
                    None => {
                        return Err(bad(
                            "stage_*_us",
                            "give all five stage columns a value, or none",
                        ));
                    }
                }
            },
            position: int("position")?
                .map(|p| u32::try_from(p).map_err(|_| bad("position", "too large")))
                .transpose()?,
            started_unix_s: opt_num("started_unix_s")?,
            drift_throughput_change: opt_signed("drift_throughput_change")?,
            drift_latency_change: opt_signed("drift_latency_change")?,
            s3_requests: opt_num("s3_requests")?,
            bytes_sent: opt_num("bytes_sent")?,
            bytes_received: opt_num("bytes_received")?,
            server_max_rss_bytes: opt_num("server_max_rss_bytes")?,
            server_rss_growth_bytes: opt_signed("server_rss_growth_bytes")?,
            interleaved: match at("interleaved") {
                None | Some("false") => false,
                Some("true") => true,
                Some(o) => {
                    return Err(bad("interleaved", &format!("{o:?} must be true or false")));
                }
            },
            server_disk_write_mib_s: opt_num("server_disk_write_mib_s")?,
            server_disk_write_latency_ms: opt_num("server_disk_write_latency_ms")?,
            server_disk_queue_depth: opt_num("server_disk_queue_depth")?,
            key_service_cpu_cores: opt_num("key_service_cpu_cores")?,
            drift_bins: None,
            session: None,
        });
    }
    Ok(out)
}

/// Writes rows as CSV (the required columns, then the optional ones).
pub fn rows_to_csv(rows: &[RunRow]) -> String {
    let mut s = format!("{},{}\n", CSV_COLUMNS.join(","), CSV_OPTIONAL.join(","));
    let o = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in rows {
        let mut f: Vec<String> = vec![
            r.run_id.clone(),
            r.cell.clone(),
            r.mode.clone(),
            r.block.to_string(),
            r.throughput_rps.to_string(),
            r.cpu_per_request_us.to_string(),
            r.client_cores_used.to_string(),
            r.client_cores_available.to_string(),
            o(r.server_cpu_cores),
            r.operation
                .map(Operation::as_str)
                .unwrap_or_default()
                .to_owned(),
            r.object_size.map(|v| v.to_string()).unwrap_or_default(),
            r.concurrency.map(|v| v.to_string()).unwrap_or_default(),
            o(r.offered_rps),
            o(r.mean_response_ms),
            o(r.manifest_bytes),
            o(r.latency_p50_ms),
            o(r.latency_p99_ms),
            o(r.max_rss_bytes),
            o(r.rss_growth_bytes),
        ];
        f.extend((0..STAGES.len()).map(|i| o(r.stages_us.map(|st| st[i]))));
        f.push(r.position.map(|v| v.to_string()).unwrap_or_default());
        f.push(o(r.started_unix_s));
        f.push(o(r.drift_throughput_change));
        f.push(o(r.drift_latency_change));
        f.push(o(r.s3_requests));
        f.push(o(r.bytes_sent));
        f.push(o(r.bytes_received));
        f.push(o(r.server_max_rss_bytes));
        f.push(o(r.server_rss_growth_bytes));
        f.push(if r.interleaved { "true" } else { "" }.to_owned());
        f.push(o(r.server_disk_write_mib_s));
        f.push(o(r.server_disk_write_latency_ms));
        f.push(o(r.server_disk_queue_depth));
        f.push(o(r.key_service_cpu_cores));
        s.push_str(&f.join(","));
        s.push('\n');
    }
    s
}

/// The attempts of one planned run, for the attempts table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunAttempts {
    /// Run id.
    pub run_id: String,
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub arm: String,
    /// Attempts made (0: not run yet).
    pub attempts: u32,
    /// Attempts whose run failed validation.
    pub invalid: u32,
    /// Attempts that failed (no files, or past the deadline).
    pub failed: u32,
    /// Why the invalid attempts were invalid (their failed checks), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}
