//! The analysis of a campaign on a cluster as a Job of its own (README "What the operator
//! does with a campaign"): what the Job is given ([`AnalysisSpec`]), and what it leaves
//! for the operator as the last object it writes ([`AnalysisOutcome`] at [`OUTCOME`] under
//! the campaign's prefix). The operator reads the outcome into status; it links neither
//! the run files' Parquet reader nor the analysis.

use campaign::Manifest;
use campaign::analysis::Report;
use serde::{Deserialize, Serialize};

use crate::runspec::{Output, S3Target};

/// The outcome's name under the campaign's prefix in the results bucket.
pub const OUTCOME: &str = "analysis.json";

/// What the analysis Job analyses (`pqbench-worker --analysis-env VAR`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnalysisSpec {
    /// The campaign as applied (its spec gives the baseline, margin, alpha, families).
    pub campaign: Manifest,
    /// The store under test: the results store's endpoint, region and credentials where
    /// `results` gives none of its own.
    pub s3: S3Target,
    /// The results: S3 output, whose prefix holds the campaign's runs.
    pub results: Output,
    /// The runs given up (the operator's `failedRuns`), for the report's Attempts table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub given_up: Vec<crate::schedule::GivenUp>,
}

/// One comparison's verdict (a compact `report.json` entry; `status.verdicts`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct VerdictRow {
    /// Cell id.
    pub cell: String,
    /// Arm compared.
    pub mode: String,
    /// Baseline arm.
    pub baseline: String,
    /// Pairs (blocks holding both).
    pub pairs: u32,
    /// Throughput ratio mode/baseline, 4 significant digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<String>,
    /// 90 % interval of the ratio (`0.912–1.034`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci90: Option<String>,
    /// Multiplicity-adjusted TOST p.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tost_p_adjusted: Option<String>,
    /// `Equivalent`, `NotEquivalent` or `Inconclusive` (absent with fewer than 2 pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// `primary`, `control`, `deficit`, `advantage`, `underpowered`, `saturated`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// A run the analysis left out, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOut {
    /// The run id (or its directory, when unreadable).
    pub run: String,
    /// The failed checks.
    pub reason: String,
}

/// What the analysis came to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum AnalysisOutcome {
    /// The report is uploaded; the compact verdicts for status.
    Analyzed {
        /// One row per comparison.
        verdicts: Vec<VerdictRow>,
        /// Runs left out as invalid.
        excluded: Vec<LeftOut>,
        /// Departures from the pre-registered plan the report's deviations log lists.
        #[serde(default)]
        deviations: u32,
    },
    /// No report.
    Failed {
        /// Why.
        reason: String,
        /// The data cannot give verdicts (no valid run): trying again will not help.
        fatal: bool,
    },
}

fn sig4(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        x.to_string()
    }
}

/// The compact verdict rows of a report (status holds these, never the raw data).
pub fn verdict_rows(r: &Report) -> Vec<VerdictRow> {
    r.comparisons
        .iter()
        .map(|e| {
            let enough = e.pairs >= 2;
            VerdictRow {
                cell: e.cell.clone(),
                mode: e.mode.clone(),
                baseline: e.baseline.clone(),
                pairs: u32::try_from(e.pairs).unwrap_or(u32::MAX),
                ratio: enough.then(|| sig4(e.ratio)),
                ci90: enough.then(|| format!("{}–{}", sig4(e.ci90[0]), sig4(e.ci90[1]))),
                tost_p_adjusted: enough.then(|| format!("{:.4}", e.tost_p_adjusted)),
                verdict: enough.then(|| format!("{:?}", e.verdict)),
                flags: e.flags().into_iter().map(str::to_owned).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn the_outcome_reads_back_as_written_and_says_which_it_is() {
        let ok = AnalysisOutcome::Analyzed {
            verdicts: vec![VerdictRow {
                cell: "get-64KiB-c1".into(),
                mode: "ml-kem-768".into(),
                baseline: "x25519".into(),
                pairs: 3,
                ratio: Some("0.9870".into()),
                ci90: Some("0.9500–1.0250".into()),
                tost_p_adjusted: Some("0.0310".into()),
                verdict: Some("Equivalent".into()),
                flags: vec!["primary".into()],
            }],
            excluded: vec![LeftOut {
                run: "r0003".into(),
                reason: "unaccounted time".into(),
            }],
            deviations: 1,
        };
        let text = serde_json::to_string(&ok).unwrap();
        assert!(text.starts_with(r#"{"outcome":"analyzed""#), "{text}");
        assert_eq!(serde_json::from_str::<AnalysisOutcome>(&text).unwrap(), ok);
        let failed: AnalysisOutcome =
            serde_json::from_str(r#"{"outcome":"failed","reason":"no valid run","fatal":true}"#)
                .unwrap();
        assert_eq!(
            failed,
            AnalysisOutcome::Failed {
                reason: "no valid run".into(),
                fatal: true
            }
        );
    }
}
