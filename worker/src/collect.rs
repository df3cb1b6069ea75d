//! Reads a results directory into the analysis's run rows (one per valid run), validating
//! every run first (study section IV-A: a run that fails validation is not analysed).
//!
//! A run directory is the parent of its process directories (`<runId>/p<index>/`). A run
//! with one process is read from its `summary.json`; a run with several is re-summarised
//! from all its processes' records, so the row describes the whole run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use campaign::analysis::RunRow;
use campaign::design::{Arrival, cell_id};
use envelope::Mode;

use crate::spec::{Loop, RunSpec};
use crate::summary::{ProcessData, RunSummary, files, load_process, summarize};
use crate::validate::{find_process_dirs, validate};
use crate::{Error, Result};

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
            crate::units::format_duration(s.max_age.0)
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
        operation: Some(s.spec.cell.operation),
        object_size: Some(s.spec.cell.object_size.0),
        concurrency: Some(s.spec.cell.concurrency),
        offered_rps: s.offered_rps,
        mean_response_ms: s.queue_wait_ms.as_ref().map(|q| q.mean + s.latency_ms.mean),
        manifest_bytes: (s.manifest_bytes_mean > 0.0).then_some(s.manifest_bytes_mean),
    }
}

/// Reads and validates one run directory into its whole-run summary.
pub fn run_summary(run_dir: &Path) -> Result<RunSummary> {
    let mut dirs = Vec::new();
    find_process_dirs(run_dir, &mut dirs);
    match dirs.as_slice() {
        [] => Err(Error::Output {
            path: run_dir.display().to_string(),
            detail: "no process directory (p0/ with SHA256SUMS) here".into(),
        }),
        [one] => {
            let path = one.join(files::SUMMARY);
            let text = std::fs::read_to_string(&path).map_err(|e| Error::Output {
                path: path.display().to_string(),
                detail: e.to_string(),
            })?;
            serde_json::from_str(&text).map_err(|e| Error::Output {
                path: path.display().to_string(),
                detail: e.to_string(),
            })
        }
        many => {
            let mut spec: Option<RunSpec> = None;
            let mut parts: Vec<ProcessData> = Vec::new();
            for d in many {
                let (s, p) = load_process(d)?;
                spec.get_or_insert(s);
                parts.push(p);
            }
            let spec = spec.ok_or_else(|| Error::Output {
                path: run_dir.display().to_string(),
                detail: "no process data".into(),
            })?;
            Ok(summarize(&spec, &parts))
        }
    }
}

/// Collects every run under `root` (runs may sit at any depth).
pub fn collect(root: &Path) -> Result<Collected> {
    let mut dirs = Vec::new();
    find_process_dirs(root, &mut dirs);
    let mut run_dirs: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.parent().unwrap_or(root).to_path_buf())
        .collect();
    run_dirs.sort();
    run_dirs.dedup();
    let mut out = Collected::default();
    for rd in run_dirs {
        let report = validate(&rd);
        let failed: Vec<String> = report
            .failures()
            .map(|f| format!("{} at {}: {}", f.check, f.location, f.detail))
            .collect();
        let summary = run_summary(&rd);
        match (failed.is_empty(), summary) {
            (true, Ok(s)) if s.valid => {
                out.rows.push(row(&s));
                out.summaries.insert(s.run_id.clone(), s);
            }
            (_, Ok(s)) => {
                // The validator repeats the run's own failed checks; use the summary's only
                // when the validator found nothing.
                let mut reason = failed;
                if reason.is_empty() {
                    reason.extend(
                        s.checks
                            .iter()
                            .filter(|c| !c.passed)
                            .map(|c| format!("{}: {}", c.name, c.detail)),
                    );
                }
                out.excluded.push(Excluded {
                    dir: rd,
                    run_id: Some(s.run_id.clone()),
                    reason: reason.join("; "),
                });
            }
            (_, Err(e)) => {
                let mut reason = failed;
                reason.push(e.to_string());
                out.excluded.push(Excluded {
                    dir: rd,
                    run_id: None,
                    reason: reason.join("; "),
                });
            }
        }
    }
    out.rows.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    Ok(out)
}
