//! The analysis of a campaign on a cluster as a Job of its own (docs/src/kubernetes/index.md, "What
//! the operator does with a campaign"): what the Job is given ([`AnalysisSpec`]), and what it
//! leaves for the operator as the last object it writes ([`AnalysisOutcome`] at [`OUTCOME`] under
//! the campaign's prefix). The operator reads the outcome into status; it links neither the run
//! files' Parquet reader nor the analysis.

use analysis::Report;
use campaign::Manifest;
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

/// One arm's line of the report's per-request table (`status.perRequest`): what one
/// logical request costs on the wire and on the client.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PerRequestRow {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub arm: String,
    /// Object format (`v1`, `v2`).
    pub format: String,
    /// S3 requests per logical request, 4 significant digits.
    pub s3_requests: String,
    /// Client CPU per logical request, µs, 4 significant digits.
    pub cpu_per_request_us: String,
}

/// Key establishment per request at one worker (`status.keyEstablishment`): the headline of
/// the report's Tables VII and VIII, one line per one-worker cell and arm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct KemTimeRow {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub arm: String,
    /// Mean key-establishment time per request, µs, 3 significant digits.
    pub mean_us: String,
    /// Its 95 % interval, µs (`11.6–12.4`).
    pub ci95_us: String,
    /// The share of the mean request time (`1.21 %`).
    pub share: String,
}

/// A cross-format ratio of the report (`status.formatRatios`): an arm over its counterpart
/// in the other object format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FormatRatioRow {
    /// Cell id.
    pub cell: String,
    /// The arm.
    pub arm: String,
    /// The arm it is compared against.
    pub against: String,
    /// S3 requests per logical request, arm ÷ against.
    pub s3_requests: String,
    /// Client CPU per request, arm ÷ against.
    pub cpu_per_request: String,
}

/// What a report can be checked against (`status.digests`; `digests.json` beside the
/// report): the SHA-256 of the data set it came from and of `report.json` itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Digests {
    /// SHA-256 (hex) of the data set: of the text `sha256sum` prints for every file of the
    /// runs that stand (`<hex>  <runId>/p<index>/<file>` lines, sorted by path, each ending
    /// in a newline). `cd runs && find . -type f | sed 's|^./||' | LC_ALL=C sort |
    /// xargs sha256sum | sha256sum` recomputes it from a local campaign directory.
    pub data_sha256: String,
    /// How many files the data set holds.
    pub data_files: u32,
    /// SHA-256 (hex) of `report.json` as written.
    pub report_sha256: String,
}

/// The per-request table's headline and the cross-format ratios of a report.
pub fn per_request_rows(r: &Report) -> (Vec<PerRequestRow>, Vec<FormatRatioRow>) {
    let rows = r
        .wire
        .iter()
        .map(|w| PerRequestRow {
            cell: w.cell.clone(),
            arm: w.arm.clone(),
            format: w.format.to_string(),
            s3_requests: sig4(w.s3_requests),
            cpu_per_request_us: sig4(w.cpu_per_request_us),
        })
        .collect();
    let ratios = r
        .format_ratios
        .iter()
        .map(|f| FormatRatioRow {
            cell: f.cell.clone(),
            arm: f.arm.clone(),
            against: f.against.clone(),
            s3_requests: sig4(f.s3_requests),
            cpu_per_request: sig4(f.cpu_per_request),
        })
        .collect();
    (rows, ratios)
}

/// The report's key-establishment table as status lines.
pub fn kem_time_rows(r: &Report) -> Vec<KemTimeRow> {
    use analysis::words::{share_pct, sig3};
    r.kem_times
        .iter()
        .map(|k| KemTimeRow {
            cell: k.cell.clone(),
            arm: k.arm.clone(),
            mean_us: sig3(k.key_establishment_us.mean),
            ci95_us: format!(
                "{}–{}",
                sig3(k.key_establishment_us.ci.0),
                sig3(k.key_establishment_us.ci.1)
            ),
            share: share_pct(k.kem_share),
        })
        .collect()
}

/// The most findings status carries; the report has them all.
pub const MAX_FINDINGS: usize = 40;

/// The headline of each of the report's study figures beyond the verdicts, in words, for
/// `status.findings` (at most [`MAX_FINDINGS`]): the study comparison's counts, the
/// cells' bottlenecks counted, the testbed's baselines, the controls' shares, where the extra CPU goes at
/// saturation, the predictions, the original interval rule's counts, and what bounds each
/// cell.
pub fn findings(r: &Report) -> Vec<String> {
    let mut out: Vec<String> = r.study_in_words().into_iter().collect();
    out.extend(analysis::words::bottleneck_counts(&r.bottlenecks));
    out.extend(
        r.config
            .baselines
            .as_ref()
            .map(|b| format!("testbed: {}", analysis::words::baselines(b))),
    );
    out.extend(
        r.config
            .implementations
            .as_ref()
            .map(|i| format!("implementations: {}", i.headline())),
    );
    out.extend(r.attributions.iter().map(|a| a.in_words()));
    out.extend(r.cpu_splits.iter().map(|c| c.in_words()));
    out.extend(r.predictions.iter().map(|p| p.in_words()));
    out.extend(r.interval_rule_in_words());
    out.extend(r.bottlenecks.iter().map(|b| b.in_words()));
    out.truncate(MAX_FINDINGS);
    out
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
        /// The per-request table's headline, one line per cell and arm.
        #[serde(default, rename = "perRequest", skip_serializing_if = "Vec::is_empty")]
        per_request: Vec<PerRequestRow>,
        /// The cross-format ratios, where the campaign has them.
        #[serde(
            default,
            rename = "formatRatios",
            skip_serializing_if = "Vec::is_empty"
        )]
        format_ratios: Vec<FormatRatioRow>,
        /// The digests of the data set and the report.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        digests: Option<Digests>,
        /// Key establishment per request at one worker.
        #[serde(
            default,
            rename = "keyEstablishment",
            skip_serializing_if = "Vec::is_empty"
        )]
        kem_times: Vec<KemTimeRow>,
        /// The study figures' headlines in words.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        findings: Vec<String>,
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
            per_request: vec![PerRequestRow {
                cell: "get-64KiB-c1".into(),
                arm: "ml-kem-768".into(),
                format: "v1".into(),
                s3_requests: "2.000".into(),
                cpu_per_request_us: "101.3".into(),
            }],
            format_ratios: vec![],
            digests: Some(Digests {
                data_sha256: "0".repeat(64),
                data_files: 6,
                report_sha256: "1".repeat(64),
            }),
            kem_times: vec![KemTimeRow {
                cell: "get-64KiB-c1".into(),
                arm: "ml-kem-768".into(),
                mean_us: "12.0".into(),
                ci95_us: "11.6–12.4".into(),
                share: "1.21 %".into(),
            }],
            findings: vec!["ml-kem-768 vs x25519 by the original interval rule".into()],
        };
        let text = serde_json::to_string(&ok).unwrap();
        assert!(text.starts_with(r#"{"outcome":"analyzed""#), "{text}");
        assert!(text.contains(r#""perRequest":[{"cell""#), "{text}");
        assert!(text.contains(r#""digests":{"dataSha256""#), "{text}");
        assert!(text.contains(r#""keyEstablishment":[{"cell""#), "{text}");
        assert!(text.contains(r#""ci95Us":"11.6–12.4""#), "{text}");
        assert_eq!(serde_json::from_str::<AnalysisOutcome>(&text).unwrap(), ok);
        // An outcome from an analysis Job before these fields reads back without them.
        let old: AnalysisOutcome = serde_json::from_str(
            r#"{"outcome":"analyzed","verdicts":[],"excluded":[],"deviations":0}"#,
        )
        .unwrap();
        assert!(matches!(
            old,
            AnalysisOutcome::Analyzed { digests: None, .. }
        ));
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
