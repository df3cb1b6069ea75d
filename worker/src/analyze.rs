//! The analysis of a campaign's results bucket: the operator's analysis Job
//! (`pqbench-worker --analysis-env PQBENCH_ANALYSIS_SPEC`). It downloads every run's files,
//! validates and analyses them exactly as `pqbench analyze` does ([`crate::collect`],
//! [`analysis`]), uploads `runs.csv`, `report.json`, `report.md` and `plots/`
//! under the campaign's prefix, and last the outcome ([`run::verdicts::OUTCOME`]), which
//! the operator reads into status.

use std::path::Path;

use analysis::Config;
use report::Header;
use run::runspec::Output;
use run::verdicts::{AnalysisOutcome, AnalysisSpec, LeftOut, OUTCOME, verdict_rows};
use s3::ResultsBucket;

use crate::collect::collect;
use crate::engine::results_store_settings;
use crate::{Error, Result};

/// The digests' name beside the report ([`digests`]).
pub const DIGESTS: &str = "digests.json";

/// Analyses the bucket `spec` names, with scratch space under `tmp`, and writes the outcome
/// there. `Err` only when the results store cannot be reached to write it.
pub async fn analyze_bucket(spec: &AnalysisSpec, tmp: &Path) -> Result<AnalysisOutcome> {
    let Output::S3 { bucket, prefix, .. } = &spec.results else {
        return Err(Error::Config(
            "the analysis reads a results bucket: results must be S3 output".into(),
        ));
    };
    let store = ResultsBucket::new(
        &results_store_settings(&spec.s3, &spec.results)?,
        bucket,
        prefix,
    )?;
    let outcome = match analyze(spec, &store, tmp).await {
        Ok(a) => a,
        Err((reason, fatal)) => AnalysisOutcome::Failed { reason, fatal },
    };
    let body = serde_json::to_vec_pretty(&outcome).map_err(|e| Error::Output {
        path: OUTCOME.into(),
        detail: e.to_string(),
    })?;
    store.put(&format!("{prefix}{OUTCOME}"), body).await?;
    Ok(outcome)
}

/// Downloads every run's files under `dir` in the layout of a campaign directory
/// ([`crate::attempts`]): `runs/<runId>/p<index>/<file>`, and the attempts kept beside
/// them (`attempts/…`, `incomplete/…`); how many.
async fn download(store: &ResultsBucket, dir: &Path) -> Result<usize> {
    let mut n = 0;
    for key in store.keys("").await? {
        let Some(path) = key
            .strip_prefix(store.prefix())
            .and_then(|rest| run_file_path(dir, rest))
        else {
            continue;
        };
        let out_err = |e: std::io::Error| Error::Output {
            path: path.display().to_string(),
            detail: e.to_string(),
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(out_err)?;
        }
        let Some(bytes) = store.get(&key).await? else {
            continue;
        };
        std::fs::write(&path, &bytes).map_err(out_err)?;
        n += 1;
    }
    Ok(n)
}

/// Where the results-bucket key `rest` (the key under the campaign prefix) goes under
/// `dir`, if it is a run file: `<runId>/p<index>/<file>` with a run id as RunSpecs allow it
/// (letters, digits, `-`, `_`, `.`, not starting with `.`), a process index and one of the
/// six run files. Anything else in the bucket is foreign and not downloaded: the start gate
/// and ready markers, another tool's objects, and keys such as `../p0/x`, which joined
/// as they were would write outside `dir`.
fn run_file_path(dir: &Path, rest: &str) -> Option<std::path::PathBuf> {
    use crate::attempts::{ATTEMPTS, INCOMPLETE};
    let parts = rest.split('/').collect::<Vec<_>>();
    let (place, [run, p, name]) = (match parts[..] {
        [kept, run, a, p, name] if kept == ATTEMPTS && is_attempt(a) => {
            Some((Path::new(ATTEMPTS).join(run).join(a), [run, p, name]))
        }
        [aside, run, p, name] if aside == INCOMPLETE => {
            Some((Path::new(INCOMPLETE).join(run), [run, p, name]))
        }
        [run, p, name] => Some((Path::new("runs").join(run), [run, p, name])),
        _ => None,
    })?;
    let run_ok = run::runspec::is_valid_name(run);
    let p_ok = run::summary::files::process_index(p).is_some();
    let name_ok = run::summary::files::DATA
        .into_iter()
        .chain([run::summary::files::CHECKSUMS])
        .any(|f| f == name);
    (run_ok && p_ok && name_ok).then(|| dir.join(place).join(p).join(name))
}

/// The testbed's baselines at `<prefix>baselines.json`, when a pre-flight probe left them
/// ([`crate::testbed`]); unreadable ones are left out with a note on stderr (the report's
/// bottleneck section then says no baselines were taken).
async fn baselines(store: &ResultsBucket) -> Option<analysis::testbed::Baselines> {
    let key = format!("{}{BASELINES}", store.prefix());
    let bytes = match store.get(&key).await {
        Ok(b) => b?,
        Err(e) => {
            eprintln!("note: cannot read {key}: {e}; the report judges no network or disk ceiling");
            return None;
        }
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| eprintln!("note: {key} is not readable as baselines ({e})"))
        .ok()
}

/// The baselines' name under the campaign's prefix.
pub use run::preflight::BASELINES;

/// `a<N>` or `a<N>-<unix ms>`: a kept attempt's directory.
fn is_attempt(a: &str) -> bool {
    a.strip_prefix('a').is_some_and(|rest| {
        !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit() || c == '-')
    })
}

/// The digests of a data set and its report ([`run::verdicts::Digests`]): `runs` a
/// directory of `<runId>/p<index>/<file>` (a campaign directory's `runs/`, or the analysis
/// Job's download of the bucket), `report_json` the report's bytes as written. Both
/// executors compute them so, so a report can be checked against the data it came from.
pub fn digests(runs: &Path, report_json: &[u8]) -> std::io::Result<run::verdicts::Digests> {
    use sha2::{Digest as _, Sha256};
    fn walk(
        dir: &Path,
        base: &Path,
        out: &mut Vec<(String, std::path::PathBuf)>,
    ) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            if p.is_dir() {
                walk(&p, base, out)?;
            } else if let Some(rel) = p.strip_prefix(base).ok().and_then(Path::to_str) {
                out.push((rel.to_owned(), p.clone()));
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(runs, runs, &mut files)?;
    files.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut list = Sha256::new();
    for (rel, path) in &files {
        let h = Sha256::digest(std::fs::read(path)?);
        list.update(format!("{}  {rel}\n", hex::encode(h)).as_bytes());
    }
    Ok(run::verdicts::Digests {
        data_sha256: hex::encode(list.finalize()),
        data_files: u32::try_from(files.len()).unwrap_or(u32::MAX),
        report_sha256: hex::encode(Sha256::digest(report_json)),
    })
}

/// `Err((why, fatal))`: fatal when the data cannot give verdicts (no valid run), else worth
/// another try (the store, the disk).
async fn analyze(
    spec: &AnalysisSpec,
    store: &ResultsBucket,
    tmp: &Path,
) -> std::result::Result<AnalysisOutcome, (String, bool)> {
    let retry = |e: &dyn std::fmt::Display| (e.to_string(), false);
    let dir = tempfile::Builder::new()
        .prefix("pqbench-analysis-")
        .tempdir_in(tmp)
        .map_err(|e| {
            retry(&format!(
                "cannot make a directory in {}: {e}",
                tmp.display()
            ))
        })?;
    download(store, dir.path()).await.map_err(|e| retry(&e))?;
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).map_err(|e| retry(&e))?;
    let collected = collect(&runs).map_err(|e| retry(&e))?;
    if collected.rows.is_empty() {
        return Err((
            format!(
                "no valid run among {} in the results bucket",
                collected.excluded.len()
            ),
            true,
        ));
    }
    let m = &spec.campaign;
    let plan = campaign::design::plan(m);
    let mut cfg = Config::from_spec(&m.spec);
    cfg.baselines = baselines(store).await;
    cfg.implementations = collected.implementations();
    let excluded = collected.excluded_runs();
    // The attempts as the operator kept them, counted as `pqbench run`'s are.
    let attempts = crate::attempts::run_attempts(dir.path(), &plan, &collected, &spec.given_up);
    let report = analysis::analyze_full(&collected.rows, &attempts, &excluded, &cfg)
        .map_err(|e| (e.to_string(), true))?;
    let mut header = Header {
        campaign: Some(plan.campaign.clone()),
        prereg_hash: Some(plan.prereg_hash.clone()),
        excluded: excluded.clone(),
        plots: Vec::new(),
    };
    let mut uploads = report::files(&report, &mut header);
    let report_json = uploads
        .iter()
        .find(|(n, _)| n == "report.json")
        .map(|(_, b)| b.clone())
        .unwrap_or_default();
    let digests = digests(&runs, &report_json).map_err(|e| retry(&e))?;
    uploads.push((
        "runs.csv".to_owned(),
        analysis::rows_to_csv(&collected.rows).into_bytes(),
    ));
    uploads.push((
        DIGESTS.to_owned(),
        serde_json::to_vec_pretty(&digests).map_err(|e| retry(&e))?,
    ));
    for (name, bytes) in uploads {
        store
            .put(&format!("{}{name}", store.prefix()), bytes)
            .await
            .map_err(|e| retry(&e))?;
    }
    let (per_request, format_ratios) = run::verdicts::per_request_rows(&report);
    Ok(AnalysisOutcome::Analyzed {
        kem_times: run::verdicts::kem_time_rows(&report),
        findings: run::verdicts::findings(&report),
        per_request,
        format_ratios,
        digests: Some(digests),
        deviations: u32::try_from(report.deviations.len()).unwrap_or(u32::MAX),
        verdicts: verdict_rows(&report),
        excluded: excluded
            .into_iter()
            .map(|(run, reason)| LeftOut { run, reason })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// The data set's digest is what coreutils' `sha256sum` says of the files' listing,
    /// as the user guide tells a reader to recompute it.
    #[test]
    fn the_data_digest_is_sha256sum_of_the_sorted_listing() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path();
        for (rel, body) in [
            ("r1-b/p0/summary.json", &b"{}"[..]),
            ("r1-b/p0/SHA256SUMS", b"x"),
            ("r1-a/p1/records.parquet", b"\x00\x01"),
            ("r1-a/p0/records.parquet", b"PAR1"),
            ("R0/p0/summary.json", b"upper case sorts first"),
        ] {
            let p = runs.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let d = digests(runs, b"{\"report\":1}").unwrap();
        assert_eq!(d.data_files, 5);
        let sh = |script: &str| {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(runs)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()[..64].to_owned()
        };
        assert_eq!(
            d.data_sha256,
            sh("find . -type f | sed 's|^./||' | LC_ALL=C sort | xargs sha256sum | sha256sum")
        );
        assert_eq!(d.report_sha256, sh("printf '{\"report\":1}' | sha256sum"));
    }

    #[test]
    fn only_run_files_are_downloaded_and_never_outside_the_directory() {
        let dir = Path::new("/tmp/analysis");
        assert_eq!(
            run_file_path(dir, "quick-b0-x25519/p0/records.parquet"),
            Some(dir.join("runs/quick-b0-x25519/p0/records.parquet"))
        );
        assert_eq!(
            run_file_path(dir, "r1/p12/SHA256SUMS"),
            Some(dir.join("runs/r1/p12/SHA256SUMS"))
        );
        // Attempts kept by the operator, in the campaign directory's layout.
        assert_eq!(
            run_file_path(dir, "attempts/r1/a0/p0/summary.json"),
            Some(dir.join("attempts/r1/a0/p0/summary.json"))
        );
        assert_eq!(
            run_file_path(dir, "attempts/r1/a2-1764800000000/p1/SHA256SUMS"),
            Some(dir.join("attempts/r1/a2-1764800000000/p1/SHA256SUMS"))
        );
        assert_eq!(
            run_file_path(dir, "incomplete/r1-1764800000000/p0/summary.json"),
            Some(dir.join("incomplete/r1-1764800000000/p0/summary.json"))
        );
        for foreign in [
            "../p0/records.parquet",
            "./p0/records.parquet",
            ".hidden/p0/records.parquet",
            "r1/p0/../../x",
            "r1/../summary.json",
            "r1/p0/notes.txt",
            "r1/ready/p0",
            "r1/start-at",
            "r1/pX/summary.json",
            "r1/p/summary.json",
            "r1/p0/sub/summary.json",
            "/p0/summary.json",
            "r1//summary.json",
            "analysis.json",
            "report/report.md",
            "r 1/p0/summary.json",
            "attempts/r1/b0/p0/summary.json",
            "attempts/r1/a/p0/summary.json",
            "attempts/../a0/p0/summary.json",
            "incomplete/../p0/summary.json",
            "attempts/r1/a0/p0/x/summary.json",
        ] {
            assert_eq!(run_file_path(dir, foreign), None, "{foreign}");
        }
    }
}
