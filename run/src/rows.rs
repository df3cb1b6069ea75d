//! The analysis rows of runs (study section IV-C: one row per run): the mapping from a
//! whole-run [`RunSummary`] to the campaign analysis's [`RunRow`], and what a results
//! directory yields (rows, excluded runs, summaries). Reading the directory is the
//! `worker` crate's (`worker::collect`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use analysis::{RunRow, SessionRow};
use campaign::design::{Arrival, cell_id};
use envelope::Mode;

use crate::runspec::{Loop, RunSpec};
use crate::summary::RunSummary;

/// A run left out of the analysis, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Excluded {
    /// Run directory.
    pub dir: PathBuf,
    /// Run id, if it could be read.
    pub run_id: Option<String>,
    /// The failed checks.
    pub reason: String,
}

/// The rows of a results directory.
#[derive(Clone, Debug, Default)]
pub struct Collected {
    /// One row per valid run, in run-id order.
    pub rows: Vec<RunRow>,
    /// Runs that failed validation.
    pub excluded: Vec<Excluded>,
    /// Whole-run summaries by run id (valid runs).
    pub summaries: BTreeMap<String, RunSummary>,
}

impl Collected {
    /// The valid runs' interop matrices merged (`None` when no summary carried one).
    pub fn implementations(&self) -> Option<analysis::implementations::Implementations> {
        analysis::implementations::merge(
            self.summaries
                .values()
                .filter_map(|s| s.interop.as_ref().map(|m| (s.host.hostname.as_str(), m))),
        )
    }

    /// The excluded runs as `(run id, or the directory when unreadable; reason)` pairs, as
    /// reports list them.
    pub fn excluded_runs(&self) -> Vec<(String, String)> {
        self.excluded
            .iter()
            .map(|e| {
                (
                    e.run_id
                        .clone()
                        .unwrap_or_else(|| e.dir.display().to_string()),
                    e.reason.clone(),
                )
            })
            .collect()
    }
}

/// The arm label of a run: its campaign label if it has one, else the mode (with the
/// session bounds for `ml-kem-768-session`).
pub fn arm_label(spec: &RunSpec) -> String {
    if let Some(a) = &spec.arm {
        return a.clone();
    }
    match (spec.cell.mode, &spec.session) {
        (Mode::MlKem768Session, Some(s)) => format!(
            "{}-b{}-t{}",
            spec.cell.mode.name(),
            s.max_objects,
            campaign::units::format_duration(s.max_age.0)
        ),
        (m, _) => m.name().to_owned(),
    }
}

/// The cell id of a run: its campaign id if it has one, else derived from the cell.
pub fn cell_label(spec: &RunSpec) -> String {
    spec.cell_id.clone().unwrap_or_else(|| {
        let c = &spec.cell;
        let arrival = match c.arrival {
            Loop::Closed => Arrival::Closed,
            Loop::Open { rate } => Arrival::Open { rate },
        };
        cell_id(c.operation, c.object_size, c.concurrency, arrival, None)
    })
}

/// The analysis row of a whole-run summary.
pub fn row(s: &RunSummary) -> RunRow {
    RunRow {
        run_id: s.run_id.clone(),
        cell: cell_label(&s.spec),
        mode: arm_label(&s.spec),
        block: s.spec.block,
        throughput_rps: s.throughput_rps,
        cpu_per_request_us: s.cpu.cpu_per_request_us,
        client_cores_used: s.cpu.cores_used,
        client_cores_available: s.cpu.cores_available,
        server_cpu_cores: s.server.cpu_cores_used,
        interleaved: s.spec.turns.is_some(),
        server_max_rss_bytes: s.server.max_rss_bytes,
        server_rss_growth_bytes: s.server.rss_growth_bytes,
        server_disk_write_mib_s: s.server.disk_write_mib_s,
        server_disk_write_latency_ms: s.server.disk_write_latency_ms,
        server_disk_queue_depth: s.server.disk_queue_depth,
        key_service_cpu_cores: s.server.key_service_cpu_cores,
        operation: Some(s.spec.cell.operation),
        object_size: Some(s.spec.cell.object_size.0),
        concurrency: Some(s.spec.cell.concurrency),
        offered_rps: s.offered_rps,
        mean_response_ms: s.queue_wait_ms.as_ref().map(|q| q.mean + s.latency_ms.mean),
        manifest_bytes: (s.manifest_bytes_mean > 0.0).then_some(s.manifest_bytes_mean),
        s3_requests: s.wire.map(|w| w.s3_requests_mean),
        bytes_sent: s.wire.map(|w| w.bytes_sent_mean),
        bytes_received: s.wire.map(|w| w.bytes_received_mean),
        latency_p50_ms: (s.counts.ok > 0).then_some(s.latency_ms.p50),
        latency_p99_ms: (s.counts.ok > 0).then_some(s.latency_ms.p99),
        max_rss_bytes: s.cpu.max_rss_bytes,
        rss_growth_bytes: s.cpu.rss_growth_bytes,
        stages_us: (s.counts.ok > 0).then(|| {
            let m = &s.stages_mean_us;
            [
                m.key_establishment,
                m.key_derivation,
                m.aead,
                m.manifest,
                m.storage,
            ]
        }),
        position: Some(s.spec.position),
        started_unix_s: s.window_start_unix_s,
        drift_throughput_change: s.drift.as_ref().and_then(|d| d.throughput_change),
        drift_latency_change: s.drift.as_ref().and_then(|d| d.latency_change),
        drift_bins: s.drift.as_ref().and_then(|d| normalised(&d.throughput_rps)),
        session: s.session.as_ref().map(|f| SessionRow {
            max_objects: f.max_objects,
            max_age_ms: f.max_age_ms,
            sessions: f.sessions,
            objects: f.objects,
            objects_per_session_mean: f.objects_per_session_mean,
            bytes_per_root_mean: f.bytes_per_root_mean,
            bytes_per_root_max: f.bytes_per_root_max,
            key_establishments_per_object: f.key_establishments_per_object,
            ended_by_max_objects: f.ended_by_max_objects,
            ended_by_max_age: f.ended_by_max_age,
            ended_by_run: f.ended_by_run,
            root_cache_hit_rate: f.root_cache_hit_rate,
        }),
    }
}

/// Per-bin values over their mean (`None` when there are none or the mean is 0).
fn normalised(bins: &[Option<f64>]) -> Option<Vec<Option<f64>>> {
    let v: Vec<f64> = bins.iter().flatten().copied().collect();
    #[allow(clippy::cast_precision_loss, reason = "30 bins")]
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (!v.is_empty() && mean > 0.0).then(|| bins.iter().map(|b| b.map(|x| x / mean)).collect())
}
