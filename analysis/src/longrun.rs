//! What happened inside the runs of each arm, beside the verdicts: drift within the window
//! (issue 20 part 4; the run-level check is the `drift` check of `run::summary`) and what
//! bounded sessions exposed and cost (study section V-F: N1 against P1).
//!
//! Both are summaries over the rows of an arm, exploratory, and absent for rows that do not
//! carry them (a CSV of runs carries the drift changes but neither the per-bin figures nor
//! the sessions).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use stats::Verdict;

use crate::entry::Entry;
use crate::rows::RunRow;

/// Median and range over runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Option<Self> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Self {
            median: stats::percentile(&v, 0.5),
            min: v[0],
            max: v[v.len() - 1],
        })
    }
}

/// Drift within the runs of one arm of one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriftRow {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub mode: String,
    /// Runs with drift figures.
    pub runs: usize,
    /// Throughput in the window's last third over its first, minus 1.
    pub throughput_change: Spread,
    /// Mean latency likewise (absent if no run had it).
    pub latency_change: Option<Spread>,
    /// Per bin of the window, the mean over runs of the bin's throughput over its run's
    /// mean (the drift plot; empty without per-bin figures).
    pub mean_bins: Vec<Option<f64>>,
}

/// Drift rows of every (cell, arm) whose runs carry drift figures, in cell and arm order.
pub fn drift_rows(rows: &[RunRow]) -> Vec<DriftRow> {
    let mut by: BTreeMap<(&str, &str), Vec<&RunRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.drift_throughput_change.is_some()) {
        by.entry((&r.cell, &r.mode)).or_default().push(r);
    }
    by.into_iter()
        .filter_map(|((cell, mode), rs)| {
            Some(DriftRow {
                cell: cell.to_owned(),
                mode: mode.to_owned(),
                runs: rs.len(),
                throughput_change: Spread::of(
                    rs.iter()
                        .filter_map(|r| r.drift_throughput_change)
                        .collect(),
                )?,
                latency_change: Spread::of(
                    rs.iter().filter_map(|r| r.drift_latency_change).collect(),
                ),
                mean_bins: mean_bins(&rs),
            })
        })
        .collect()
}

/// Bin by bin, the mean of the runs' values that are present.
fn mean_bins(rs: &[&RunRow]) -> Vec<Option<f64>> {
    let n = rs
        .iter()
        .filter_map(|r| r.drift_bins.as_ref().map(Vec::len))
        .max()
        .unwrap_or(0);
    (0..n)
        .map(|i| {
            let v: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.drift_bins.as_ref()?.get(i).copied().flatten())
                .collect();
            #[allow(clippy::cast_precision_loss, reason = "run counts")]
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect()
}

/// The comparison an arm took part in, as the sessions table shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Versus {
    /// The arm it was compared with.
    pub against: String,
    /// Throughput ratio.
    pub ratio: f64,
    /// Its 90 % interval.
    pub ci90: [f64; 2],
    /// The verdict.
    pub verdict: Verdict,
}

/// Bounded sessions of one arm of one cell, over its runs (study section V-F).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub mode: String,
    /// Runs.
    pub runs: usize,
    /// B_max.
    pub max_objects: u64,
    /// T_max, ms.
    pub max_age_ms: f64,
    /// Sessions per run (mean).
    pub sessions_per_run: f64,
    /// Objects per root, over all sessions of all runs.
    pub objects_per_root: f64,
    /// Plaintext bytes per root, over all sessions of all runs.
    pub bytes_per_root: f64,
    /// Most plaintext bytes under one root in any run.
    pub bytes_per_root_max: u64,
    /// Key establishments per object, over all runs (1 without sessions).
    pub key_establishments_per_object: f64,
    /// Sessions ended by B_max, by T_max, and cut by the end of a run, summed over runs.
    pub ended_by: [u64; 3],
    /// The receiver's root-cache hit rate, mean over the runs that measured it (GET).
    pub root_cache_hit_rate: Option<f64>,
    /// The arm's comparisons (N1 against P1 in the study).
    pub versus: Vec<Versus>,
}

/// Session summaries of every (cell, arm) whose runs carry session figures, each beside
/// the comparisons it took part in.
pub fn session_rows(rows: &[RunRow], entries: &[Entry]) -> Vec<SessionSummary> {
    let mut by: BTreeMap<(&str, &str), Vec<&RunRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.session.is_some()) {
        by.entry((&r.cell, &r.mode)).or_default().push(r);
    }
    by.into_iter()
        .map(|((cell, mode), rs)| summary(cell, mode, &rs, entries))
        .collect()
}

#[allow(clippy::cast_precision_loss, reason = "counts far below 2^53")]
fn summary(cell: &str, mode: &str, rs: &[&RunRow], entries: &[Entry]) -> SessionSummary {
    let ss: Vec<_> = rs.iter().filter_map(|r| r.session.as_ref()).collect();
    let sessions: u64 = ss.iter().map(|s| s.sessions).sum();
    let objects: u64 = ss.iter().map(|s| s.objects).sum();
    let bytes: f64 = ss
        .iter()
        .map(|s| s.bytes_per_root_mean * s.sessions as f64)
        .sum();
    let rates: Vec<f64> = ss.iter().filter_map(|s| s.root_cache_hit_rate).collect();
    let per = |a: f64, b: u64| if b > 0 { a / b as f64 } else { 0.0 };
    SessionSummary {
        cell: cell.to_owned(),
        mode: mode.to_owned(),
        runs: rs.len(),
        max_objects: ss.first().map_or(0, |s| s.max_objects),
        max_age_ms: ss.first().map_or(0.0, |s| s.max_age_ms),
        sessions_per_run: per(sessions as f64, rs.len() as u64),
        objects_per_root: per(objects as f64, sessions),
        bytes_per_root: per(bytes, sessions),
        bytes_per_root_max: ss.iter().map(|s| s.bytes_per_root_max).max().unwrap_or(0),
        key_establishments_per_object: per(sessions as f64, objects),
        ended_by: [
            ss.iter().map(|s| s.ended_by_max_objects).sum(),
            ss.iter().map(|s| s.ended_by_max_age).sum(),
            ss.iter().map(|s| s.ended_by_run).sum(),
        ],
        root_cache_hit_rate: (!rates.is_empty())
            .then(|| rates.iter().sum::<f64>() / rates.len() as f64),
        versus: entries
            .iter()
            .filter(|e| e.cell == cell && e.mode == mode)
            .map(|e| Versus {
                against: e.baseline.clone(),
                ratio: e.ratio,
                ci90: e.ci90,
                verdict: e.verdict,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::cast_precision_loss, reason = "tests")]

    use super::*;
    use crate::rows::SessionRow;

    fn row(run: &str, mode: &str, change: f64, bins: Vec<Option<f64>>) -> RunRow {
        RunRow {
            run_id: run.into(),
            cell: "c".into(),
            mode: mode.into(),
            drift_throughput_change: Some(change),
            drift_bins: Some(bins),
            ..RunRow::default()
        }
    }

    #[test]
    fn drift_rows_take_median_range_and_bin_means_over_gaps() {
        let rows = vec![
            row("1", "a", -0.02, vec![Some(1.0), None, Some(0.9)]),
            row("2", "a", 0.04, vec![Some(1.2), None, Some(1.1)]),
            row("3", "a", 0.01, vec![Some(0.8), Some(1.0), None]),
            RunRow {
                run_id: "4".into(),
                cell: "c".into(),
                mode: "b".into(),
                ..RunRow::default()
            },
        ];
        let d = drift_rows(&rows);
        assert_eq!(d.len(), 1, "an arm without drift figures has no row");
        let a = &d[0];
        assert_eq!((a.runs, a.mode.as_str()), (3, "a"));
        assert_eq!(
            a.throughput_change,
            Spread {
                median: 0.01,
                min: -0.02,
                max: 0.04
            }
        );
        assert!(a.latency_change.is_none());
        assert_eq!(a.mean_bins.len(), 3);
        assert!((a.mean_bins[0].unwrap() - 1.0).abs() < 1e-12);
        assert!((a.mean_bins[1].unwrap() - 1.0).abs() < 1e-12);
        assert!((a.mean_bins[2].unwrap() - 1.0).abs() < 1e-12);
    }

    /// Totals over runs, not means of per-run ratios: 3 sessions of 64 and one of 10
    /// objects are 202 objects under 4 roots.
    #[test]
    fn session_summaries_pool_the_runs() {
        let s = |sessions, objects, by: [u64; 3], hit| SessionRow {
            max_objects: 64,
            max_age_ms: 60_000.0,
            sessions,
            objects,
            objects_per_session_mean: objects as f64 / sessions as f64,
            bytes_per_root_mean: objects as f64 * 1024.0 / sessions as f64,
            bytes_per_root_max: 64 * 1024,
            key_establishments_per_object: sessions as f64 / objects as f64,
            ended_by_max_objects: by[0],
            ended_by_max_age: by[1],
            ended_by_run: by[2],
            root_cache_hit_rate: hit,
        };
        let rows = vec![
            RunRow {
                run_id: "1".into(),
                cell: "c".into(),
                mode: "n1".into(),
                session: Some(s(3, 192, [3, 0, 0], None)),
                ..RunRow::default()
            },
            RunRow {
                run_id: "2".into(),
                cell: "c".into(),
                mode: "n1".into(),
                session: Some(s(1, 10, [0, 0, 1], Some(0.5))),
                ..RunRow::default()
            },
        ];
        let x = &session_rows(&rows, &[])[0];
        assert_eq!(x.runs, 2);
        assert!((x.sessions_per_run - 2.0).abs() < 1e-12);
        assert!((x.objects_per_root - 202.0 / 4.0).abs() < 1e-12);
        assert!((x.key_establishments_per_object - 4.0 / 202.0).abs() < 1e-12);
        assert!((x.bytes_per_root - 202.0 * 1024.0 / 4.0).abs() < 1e-9);
        assert_eq!(x.ended_by, [3, 0, 1]);
        assert_eq!(x.root_cache_hit_rate, Some(0.5));
        assert!(x.versus.is_empty());
    }
}
