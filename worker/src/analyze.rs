//! The analysis of a campaign's results bucket: the operator's analysis Job
//! (`pqbench-worker --analysis-env PQBENCH_ANALYSIS_SPEC`). It downloads every run's files,
//! validates and analyses them exactly as `pqbench analyze` does ([`crate::collect`],
//! [`campaign::analysis`]), uploads `runs.csv`, `report.json`, `report.md` and `plots/`
//! under the campaign's prefix, and last the outcome ([`run::verdicts::OUTCOME`]), which
//! the operator reads into status.

use std::path::Path;

use campaign::analysis::{self, Config};
use campaign::report::Header;
use run::runspec::Output;
use run::verdicts::{AnalysisOutcome, AnalysisSpec, LeftOut, OUTCOME, verdict_rows};
use s3::ResultsBucket;

use crate::collect::collect;
use crate::engine::results_store_settings;
use crate::{Error, Result};

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

/// Downloads every run's files under `dir` (`<runId>/p<index>/<file>`); how many.
async fn download(store: &ResultsBucket, dir: &Path) -> Result<usize> {
    let mut n = 0;
    for key in store.keys("").await? {
        let Some(rest) = key.strip_prefix(store.prefix()) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let [run, p, name] = parts.as_slice() else {
            continue;
        };
        if *p == "ready" || !p.starts_with('p') || name.is_empty() {
            continue;
        }
        let path = dir.join(run).join(p).join(name);
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
    let collected = collect(dir.path()).map_err(|e| retry(&e))?;
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
    let cfg = Config::from_spec(&m.spec);
    let excluded = collected.excluded_runs();
    let report = analysis::analyze_full(&collected.rows, &[], &excluded, &cfg)
        .map_err(|e| (e.to_string(), true))?;
    let mut header = Header {
        campaign: Some(plan.campaign.clone()),
        prereg_hash: Some(plan.prereg_hash.clone()),
        excluded: excluded.clone(),
        plots: Vec::new(),
    };
    let mut uploads = campaign::report::files(&report, &mut header);
    uploads.push((
        "runs.csv".to_owned(),
        analysis::rows_to_csv(&collected.rows).into_bytes(),
    ));
    for (name, bytes) in uploads {
        store
            .put(&format!("{}{name}", store.prefix()), bytes)
            .await
            .map_err(|e| retry(&e))?;
    }
    Ok(AnalysisOutcome::Analyzed {
        deviations: u32::try_from(report.deviations.len()).unwrap_or(u32::MAX),
        verdicts: verdict_rows(&report),
        excluded: excluded
            .into_iter()
            .map(|(run, reason)| LeftOut { run, reason })
            .collect(),
    })
}
