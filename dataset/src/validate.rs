//! The data-set validator, `pqbench validate DIR` (study section IV-A: "A validator checks
//! every data set before analysis and refuses it if any check fails").
//!
//! A data set is any directory tree holding process directories (`…/<runId>/p<index>/` with
//! a `SHA256SUMS`). Checks, each reported with where it failed:
//!
//! | check | what |
//! |---|---|
//! | `checksums` | every file listed in `SHA256SUMS` has that SHA-256; no file is missing or unlisted |
//! | `schema` | `records.parquet` and `samples.parquet` have exactly the documented columns, types and nullability; the JSON files parse |
//! | `complete` | every run has all the processes its spec names |
//! | `stage_sum` | no successful request's stage timers sum above its total |
//! | `unaccounted_p99` | per run, the 99th percentile of unaccounted / total < 2 % |
//! | `unaccounted_aggregate` | per run and over the whole data set, Σ unaccounted / Σ total < 1 % |
//! | `session_bounds` | `ml-kem-768-session`: no object index ≥ B_max, no root age > T_max |
//! | `failures` | measured failures within the run's allowed fraction (0 by default) |
//! | `pause_quiet` | every process's pause found the server host quiet (a pause that gave up at `maxWait` fails; no pause taken, no check) |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use run::checks::{Process, data_set_checks};
use run::records::{RECORD_SCHEMA, SAMPLE_SCHEMA};
use run::runspec::RunSpec;
use run::summary::{ProcessInfo, RunSummary, files};
use run::table::Table;

use crate::parquet::TableFile as _;

pub use run::checks::Finding;

/// The validator's verdict.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every finding, passed and failed.
    pub findings: Vec<Finding>,
    /// Runs seen.
    pub runs: usize,
    /// Process directories seen.
    pub processes: usize,
    /// Records seen.
    pub records: usize,
}

impl Report {
    /// True if every check passed and there was something to check.
    pub fn ok(&self) -> bool {
        self.processes > 0 && self.findings.iter().all(|f| f.passed)
    }

    /// The failed findings.
    pub fn failures(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| !f.passed)
    }
}

pub(crate) fn find_process_dirs(root: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    if entries
        .iter()
        .any(|p| p.file_name().is_some_and(|n| n == files::CHECKSUMS))
    {
        out.push(root.to_path_buf());
    }
    for p in entries {
        if p.is_dir() {
            find_process_dirs(&p, out);
        }
    }
}

fn check_sums(dir: &Path, loc: &str) -> Finding {
    let fail = |detail: String| Finding {
        check: "checksums",
        location: loc.to_owned(),
        passed: false,
        detail,
    };
    let text = match std::fs::read_to_string(dir.join(files::CHECKSUMS)) {
        Ok(t) => t,
        Err(e) => return fail(format!("cannot read {}: {e}", files::CHECKSUMS)),
    };
    let mut listed = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some((sum, name)) = line.split_once("  ") else {
            return fail(format!(
                "{} line {} is not `<sha256>  <file>`",
                files::CHECKSUMS,
                i + 1
            ));
        };
        if name.contains('/') || name.contains("..") {
            return fail(format!(
                "{} names a file outside its directory: {name}",
                files::CHECKSUMS
            ));
        }
        match crate::checksums::sha256_file(&dir.join(name)) {
            Ok(got) if got == sum => {}
            Ok(_) => return fail(format!("{name}: SHA-256 differs from {}", files::CHECKSUMS)),
            Err(_) => return fail(format!("{name}: listed but missing")),
        }
        listed.push(name.to_owned());
    }
    let mut unlisted: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n != files::CHECKSUMS && !listed.contains(n))
                .collect()
        })
        .unwrap_or_default();
    unlisted.sort();
    for required in files::DATA {
        if !listed.iter().any(|l| l == required) {
            return fail(format!("{required} is not listed in {}", files::CHECKSUMS));
        }
    }
    if !unlisted.is_empty() {
        return fail(format!(
            "files not covered by {}: {}",
            files::CHECKSUMS,
            unlisted.join(", ")
        ));
    }
    Finding {
        check: "checksums",
        location: loc.to_owned(),
        passed: true,
        detail: format!("{} files match", listed.len()),
    }
}

fn check_schema(dir: &Path, loc: &str) -> (Finding, Option<Process>) {
    let fail = |detail: String| {
        (
            Finding {
                check: "schema",
                location: loc.to_owned(),
                passed: false,
                detail,
            },
            None,
        )
    };
    for (name, schema) in [
        (files::RECORDS, RECORD_SCHEMA),
        (files::SAMPLES, SAMPLE_SCHEMA),
    ] {
        match Table::check_schema(&dir.join(name), schema) {
            Ok(d) if d.is_empty() => {}
            Ok(d) => return fail(format!("{name}: {}", d.join("; "))),
            Err(e) => return fail(format!("{name}: {e}")),
        }
    }
    let read =
        |name: &str| std::fs::read_to_string(dir.join(name)).map_err(|e| format!("{name}: {e}"));
    let parsed = (|| -> Result<(RunSpec, ProcessInfo), String> {
        // Its names become paths (a runId such as `../x` is refused).
        let spec = crate::collect::spec_file(&read(files::SPEC)?)
            .map_err(|e| format!("{}: {e}", files::SPEC))?;
        let info: ProcessInfo = serde_json::from_str(&read(files::PROCESS)?)
            .map_err(|e| format!("{}: {e}", files::PROCESS))?;
        let _: RunSummary = serde_json::from_str(&read(files::SUMMARY)?)
            .map_err(|e| format!("{}: {e}", files::SUMMARY))?;
        Ok((spec, info))
    })();
    let (spec, info) = match parsed {
        Ok(x) => x,
        Err(e) => return fail(e),
    };
    let digest = match crate::collect::digest_of(&spec, &dir.join(files::RECORDS)) {
        Ok(d) => d,
        Err(e) => return fail(format!("{}: {e}", files::RECORDS)),
    };
    if let Err(e) = Table::read_parquet(&dir.join(files::SAMPLES), SAMPLE_SCHEMA) {
        return fail(format!("{}: {e}", files::SAMPLES));
    }
    (
        Finding {
            check: "schema",
            location: loc.to_owned(),
            passed: true,
            detail: format!("{} records with the documented columns", digest.records),
        },
        Some(Process { spec, info, digest }),
    )
}

/// Validates every process directory under `root`.
pub fn validate(root: &Path) -> Report {
    let mut dirs = Vec::new();
    find_process_dirs(root, &mut dirs);
    let mut report = Report {
        processes: dirs.len(),
        ..Report::default()
    };
    if dirs.is_empty() {
        report.findings.push(Finding {
            check: "checksums",
            location: root.display().to_string(),
            passed: false,
            detail: format!(
                "no run data here: no directory holds a {} (expected <runId>/p<index>/)",
                files::CHECKSUMS
            ),
        });
        return report;
    }
    let mut runs: BTreeMap<String, Vec<Process>> = BTreeMap::new();
    for dir in &dirs {
        let loc = dir
            .strip_prefix(root)
            .map_or_else(|_| dir.display().to_string(), |p| p.display().to_string());
        let loc = if loc.is_empty() { ".".to_owned() } else { loc };
        let sums = check_sums(dir, &loc);
        let sums_ok = sums.passed;
        report.findings.push(sums);
        if !sums_ok {
            continue;
        }
        let (f, loaded) = check_schema(dir, &loc);
        report.findings.push(f);
        if let Some(l) = loaded {
            report.records += usize::try_from(l.digest.records).unwrap_or(usize::MAX);
            runs.entry(l.spec.run_id.clone()).or_default().push(l);
        }
    }
    report.runs = runs.len();
    report.findings.extend(data_set_checks(&runs));
    report
}
