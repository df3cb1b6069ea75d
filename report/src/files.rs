//! The files of a report directory: `report.json`, `report.md` and `plots/*.svg`.

use serde::Serialize;

use analysis::Report;

use crate::markdown::{Header, markdown};

/// `report.json`: the analysis with the campaign's name, hash and excluded runs.
#[derive(Serialize)]
struct ReportFile<'a> {
    campaign: &'a str,
    prereg_hash: &'a str,
    excluded_runs: Vec<ExcludedRun>,
    #[serde(flatten)]
    report: &'a Report,
}

#[derive(Serialize)]
struct ExcludedRun {
    run: String,
    reason: String,
}

/// The report's files, by path relative to the report directory: `report.json`,
/// `report.md` and `plots/*.svg` (their links are added to `header`). Shared by
/// `pqbench run`/`analyze` and the operator, so a campaign's report is the same wherever
/// it ran.
pub fn files(report: &Report, header: &mut Header) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for p in crate::plots::all(report) {
        let path = format!("plots/{}", p.file);
        header.plots.push((path.clone(), p.title.clone()));
        out.push((path, p.svg.into_bytes()));
    }
    let file = ReportFile {
        campaign: header.campaign.as_deref().unwrap_or(""),
        prereg_hash: header.prereg_hash.as_deref().unwrap_or(""),
        excluded_runs: header
            .excluded
            .iter()
            .map(|(run, reason)| ExcludedRun {
                run: run.clone(),
                reason: reason.clone(),
            })
            .collect(),
        report,
    };
    // Plain data with finite numbers; serializing cannot fail.
    let mut json = serde_json::to_vec_pretty(&file).unwrap_or_default();
    json.push(b'\n');
    out.insert(0, ("report.json".to_owned(), json));
    out.insert(
        1,
        (
            "report.md".to_owned(),
            markdown(report, header).into_bytes(),
        ),
    );
    out
}
