//! What one logical request costs on the wire and on the client, per cell and arm: S3
//! requests, bytes sent and received, client CPU and latency (issue 21: format v1 stores a
//! version as two S3 objects, v2 as one). Means over the arm's runs of each run's per-request
//! means; latency is the median over runs of the runs' p50. For every comparison whose two
//! arms differ in format, the arm's figures over its counterpart's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::rows::RunRow;
use campaign::design::Arm;
use campaign::spec::{ComparisonSpec, ObjectFormat};

/// One cell and arm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireRow {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub arm: String,
    /// The arm's object format (`v1` when unknown).
    pub format: ObjectFormat,
    /// Runs with figures.
    pub runs: usize,
    /// S3 requests per logical request.
    pub s3_requests: f64,
    /// Bytes sent per logical request.
    pub bytes_sent: f64,
    /// Bytes received per logical request.
    pub bytes_received: f64,
    /// Client CPU per request, µs.
    pub cpu_per_request_us: f64,
    /// Median over runs of the median latency, ms.
    pub latency_p50_ms: f64,
    /// Mean throughput, requests/s.
    pub throughput_rps: f64,
}

/// A comparison across formats: the arm's figures over its counterpart's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FormatRatio {
    /// Cell id.
    pub cell: String,
    /// The arm.
    pub arm: String,
    /// The arm it is compared against.
    pub against: String,
    /// Their formats.
    pub formats: (ObjectFormat, ObjectFormat),
    /// S3 requests per logical request, arm ÷ against.
    pub s3_requests: f64,
    /// Client CPU per request, arm ÷ against.
    pub cpu_per_request: f64,
    /// Median latency, arm ÷ against.
    pub latency_p50: f64,
    /// Throughput, arm ÷ against.
    pub throughput: f64,
}

fn mean(v: &[f64]) -> f64 {
    #[allow(clippy::cast_precision_loss, reason = "run counts are small")]
    let n = v.len() as f64;
    v.iter().sum::<f64>() / n
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    }
}

/// The rows, in cell then arm order, of every (cell, arm) whose runs carry wire figures.
pub fn wire_rows(rows: &[RunRow], arms: &BTreeMap<String, Arm>) -> Vec<WireRow> {
    let mut by: BTreeMap<(&str, &str), Vec<&RunRow>> = BTreeMap::new();
    for r in rows {
        if r.s3_requests.is_some() {
            by.entry((&r.cell, &r.mode)).or_default().push(r);
        }
    }
    by.into_iter()
        .map(|((cell, arm), rs)| {
            let col = |f: fn(&RunRow) -> Option<f64>| -> Vec<f64> {
                rs.iter().filter_map(|r| f(r)).collect()
            };
            let or_nan = |v: Vec<f64>| if v.is_empty() { f64::NAN } else { mean(&v) };
            WireRow {
                cell: cell.to_owned(),
                arm: arm.to_owned(),
                format: arms.get(arm).map(|a| a.format).unwrap_or_default(),
                runs: rs.len(),
                s3_requests: or_nan(col(|r| r.s3_requests)),
                bytes_sent: or_nan(col(|r| r.bytes_sent)),
                bytes_received: or_nan(col(|r| r.bytes_received)),
                cpu_per_request_us: or_nan(col(|r| Some(r.cpu_per_request_us))),
                latency_p50_ms: {
                    let v = col(|r| r.latency_p50_ms);
                    if v.is_empty() { f64::NAN } else { median(v) }
                },
                throughput_rps: or_nan(col(|r| Some(r.throughput_rps))),
            }
        })
        .collect()
}

/// For every comparison whose arms differ in format, in every cell holding both.
pub fn format_ratios(wire: &[WireRow], comparisons: &[ComparisonSpec]) -> Vec<FormatRatio> {
    let find = |cell: &str, arm: &str| wire.iter().find(|w| w.cell == cell && w.arm == arm);
    let mut out = Vec::new();
    for w in wire {
        for c in comparisons.iter().filter(|c| c.arm == w.arm) {
            let Some(o) = find(&w.cell, &c.against) else {
                continue;
            };
            if o.format == w.format {
                continue;
            }
            out.push(FormatRatio {
                cell: w.cell.clone(),
                arm: w.arm.clone(),
                against: o.arm.clone(),
                formats: (w.format, o.format),
                s3_requests: w.s3_requests / o.s3_requests,
                cpu_per_request: w.cpu_per_request_us / o.cpu_per_request_us,
                latency_p50: w.latency_p50_ms / o.latency_p50_ms,
                throughput: w.throughput_rps / o.throughput_rps,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cell: &str, arm: &str, req: f64, cpu: f64, p50: f64, tp: f64) -> RunRow {
        RunRow {
            run_id: format!("{cell}-{arm}-{req}-{cpu}"),
            cell: cell.into(),
            mode: arm.into(),
            s3_requests: Some(req),
            bytes_sent: Some(100.0),
            bytes_received: Some(200.0),
            cpu_per_request_us: cpu,
            latency_p50_ms: Some(p50),
            throughput_rps: tp,
            ..RunRow::default()
        }
    }

    fn arm(label: &str, format: ObjectFormat) -> (String, Arm) {
        (
            label.into(),
            Arm {
                label: label.into(),
                mode: envelope::Mode::MlKem768,
                backend: envelope::Backend::AwsLc,
                client: Default::default(),
                format,
                require_pq: false,
                kms: None,
                session: None,
                control: false,
            },
        )
    }

    #[test]
    fn means_medians_and_ratios_across_formats_only() {
        let rows = vec![
            row("c", "v1", 2.0, 300.0, 2.0, 1000.0),
            row("c", "v1", 2.0, 340.0, 4.0, 900.0),
            row("c", "v1", 2.0, 320.0, 3.0, 1100.0),
            row("c", "v2", 1.0, 160.0, 1.0, 2000.0),
            row("c", "v2", 1.0, 160.0, 1.5, 2000.0),
            row("c", "x", 2.0, 300.0, 3.0, 1000.0),
        ];
        let arms: BTreeMap<String, Arm> = [
            arm("v1", ObjectFormat::V1),
            arm("v2", ObjectFormat::V2),
            arm("x", ObjectFormat::V1),
        ]
        .into_iter()
        .collect();
        let w = wire_rows(&rows, &arms);
        let v1 = w.iter().find(|r| r.arm == "v1").expect("v1");
        assert_eq!(v1.runs, 3);
        assert!((v1.cpu_per_request_us - 320.0).abs() < 1e-9);
        assert!((v1.latency_p50_ms - 3.0).abs() < 1e-9, "median of 2, 4, 3");
        let v2 = w.iter().find(|r| r.arm == "v2").expect("v2");
        assert!(
            (v2.latency_p50_ms - 1.25).abs() < 1e-9,
            "median of an even count"
        );
        let comparisons = vec![
            ComparisonSpec {
                arm: "v2".into(),
                against: "v1".into(),
            },
            ComparisonSpec {
                arm: "v1".into(),
                against: "x".into(),
            },
        ];
        let r = format_ratios(&w, &comparisons);
        assert_eq!(r.len(), 1, "same-format comparisons are left out: {r:?}");
        assert_eq!(r[0].formats, (ObjectFormat::V2, ObjectFormat::V1));
        assert!((r[0].s3_requests - 0.5).abs() < 1e-12);
        assert!((r[0].cpu_per_request - 0.5).abs() < 1e-12);
        assert!((r[0].latency_p50 - 1.25 / 3.0).abs() < 1e-12);
        assert!((r[0].throughput - 2.0).abs() < 1e-12);
    }
}
