//! Reads a results directory into the analysis's run rows (one per valid run), validating
//! every run first (study section IV-A: a run that fails validation is not analysed).
//!
//! A run directory is the parent of its process directories (`<runId>/p<index>/`). A run
//! with one process is read from its `summary.json`; a run with several is re-summarised
//! from all its processes' records, so the row describes the whole run.

use std::path::{Path, PathBuf};

use run::digest::Digest;
use run::records::{RECORD_SCHEMA, SAMPLE_SCHEMA, records_from_table, samples_from_table};
use run::rows::{Collected, Excluded, row};
use run::runspec::RunSpec;
use run::summary::{ProcessData, ProcessInfo, RunSummary, files, summarize};
use run::table::Table;

use crate::parquet::{TableFile as _, read_batches};
use crate::validate::{find_process_dirs, validate};
use crate::{Error, Result};

/// Reads and validates one run directory into its whole-run summary.
pub fn run_summary(run_dir: &Path) -> Result<RunSummary> {
    let mut dirs = Vec::new();
    find_process_dirs(run_dir, &mut dirs);
    match dirs.as_slice() {
        [] => Err(Error::File {
            path: run_dir.display().to_string(),
            detail: "no process directory (p0/ with SHA256SUMS) here".into(),
        }),
        [one] => {
            let path = one.join(files::SUMMARY);
            let text = std::fs::read_to_string(&path).map_err(|e| Error::File {
                path: path.display().to_string(),
                detail: e.to_string(),
            })?;
            serde_json::from_str(&text).map_err(|e| Error::File {
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
            let spec = spec.ok_or_else(|| Error::File {
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

/// Rows read from a records file at a time.
const READ_ROWS: usize = 16_384;

/// The digest of a records file, read a batch at a time (memory flat in its length).
pub fn digest_of(spec: &RunSpec, path: &Path) -> Result<Digest> {
    let mut d = Digest::new(spec);
    read_batches(path, RECORD_SCHEMA, READ_ROWS, |t| {
        let (_, records) = records_from_table(&t)?;
        for r in &records {
            d.add(r);
        }
        Ok(())
    })?;
    Ok(d)
}

/// A run's `spec.json` as written by its worker: parsed as RunSpecs are, with the names
/// that become paths checked ([`RunSpec::check_names`]).
pub(crate) fn spec_file(text: &str) -> std::result::Result<RunSpec, String> {
    let spec: RunSpec = run::runspec::from_yaml(text)?;
    spec.check_names().map_err(|e| e.to_string())?;
    Ok(spec)
}

/// Loads one process directory (without checking checksums or schema; `pqbench validate`
/// does that).
pub fn load_process(dir: &Path) -> Result<(RunSpec, ProcessData)> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| Error::File {
            path: dir.join(name).display().to_string(),
            detail: e.to_string(),
        })
    };
    // A run file from a bucket or a shared directory is input too: its names become paths
    // and keys (a runId such as `../x` is refused here).
    let spec = spec_file(&read(files::SPEC)?).map_err(|detail| Error::File {
        path: dir.join(files::SPEC).display().to_string(),
        detail,
    })?;
    let info: ProcessInfo =
        serde_json::from_str(&read(files::PROCESS)?).map_err(|e| Error::File {
            path: dir.join(files::PROCESS).display().to_string(),
            detail: e.to_string(),
        })?;
    let digest = digest_of(&spec, &dir.join(files::RECORDS))?;
    let st = Table::read_parquet(&dir.join(files::SAMPLES), SAMPLE_SCHEMA)?;
    let samples = samples_from_table(&st);
    Ok((
        spec,
        ProcessData {
            info,
            digest,
            samples,
        },
    ))
}
