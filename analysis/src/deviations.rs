//! The deviations log: every departure of a campaign from its pre-registered plan (study
//! section IV-C, "There were five deviations from the pre-registration"), listed so that a
//! reader sees them next to the verdicts instead of finding them in the raw data.
//!
//! What counts, each with the run, block or setting it concerns and why:
//! - a run tried more than once (its invalid or failed attempts are kept);
//! - a run left invalid after every attempt, or never completed (given up, not run);
//! - a block left out of a cell's analysis because an arm has no valid run in it;
//! - a run flagged by the stall rule (the verdicts are repeated without it);
//! - a run measured after a later block had started (a retry or a resumed campaign
//!   changes the planned order);
//! - an analysis setting given at analysis time instead of pre-registered (a changed
//!   margin, α, baseline or primary family; no campaign file at all), which makes the
//!   affected comparisons exploratory;
//! - a cell whose order-and-time check finds a significant position or time term
//!   ([`crate::order`]): the verdicts stand, but the plan's assumption that order does not
//!   matter did not hold, and the log says how far the adjusted ratios moved.

use serde::{Deserialize, Serialize};

use crate::rows::{RunAttempts, RunRow};

/// What kind of departure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An analysis setting not from the pre-registration.
    AnalysisSetting,
    /// A run tried more than once.
    Retried,
    /// A run with no valid attempt.
    Excluded,
    /// A run with no completed attempt (given up or not run).
    NotCompleted,
    /// A block left out of its cell's comparisons.
    DroppedBlock,
    /// A run flagged by the stall rule.
    Stall,
    /// A run measured out of the planned order.
    ChangedOrder,
    /// A significant position or time term in a cell's order-and-time check.
    OrderEffect,
}

impl Kind {
    /// Fixed label for tables.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AnalysisSetting => "analysis setting",
            Self::Retried => "retried",
            Self::Excluded => "excluded",
            Self::NotCompleted => "not completed",
            Self::DroppedBlock => "block left out",
            Self::Stall => "stall",
            Self::ChangedOrder => "changed order",
            Self::OrderEffect => "order effect",
        }
    }
}

/// One departure from the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deviation {
    /// What kind.
    pub kind: Kind,
    /// The run, block (`cell block N`) or setting it concerns.
    pub subject: String,
    /// What happened, in words.
    pub detail: String,
}

/// What the log is made from.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inputs<'a> {
    /// Settings given at analysis time, in words.
    pub settings: &'a [String],
    /// Attempts of every planned run (empty when unknown, as from a CSV).
    pub attempts: &'a [RunAttempts],
    /// Runs invalid after their last attempt, with the failed checks.
    pub excluded: &'a [(String, String)],
    /// Blocks left out, as (cell, block).
    pub dropped_blocks: &'a [(String, u32)],
    /// Runs flagged by the stall rule.
    pub stalls: &'a [String],
    /// The valid runs.
    pub rows: &'a [RunRow],
}

/// The deviations, settings first, then per run in run-id order within each kind.
pub fn log(i: Inputs<'_>) -> Vec<Deviation> {
    let mut out: Vec<Deviation> = i
        .settings
        .iter()
        .map(|s| Deviation {
            kind: Kind::AnalysisSetting,
            subject: "analysis".into(),
            detail: s.clone(),
        })
        .collect();
    for a in i.attempts {
        if a.attempts > 1 {
            let mut detail = format!(
                "{} attempts: {} invalid, {} failed",
                a.attempts, a.invalid, a.failed
            );
            if !a.reasons.is_empty() {
                detail.push_str(&format!("; {}", a.reasons.join("; ")));
            }
            out.push(Deviation {
                kind: Kind::Retried,
                subject: a.run_id.clone(),
                detail,
            });
        }
        let valid = i.rows.iter().any(|r| r.run_id == a.run_id);
        let excluded = i.excluded.iter().any(|(r, _)| *r == a.run_id);
        if !valid && !excluded {
            out.push(Deviation {
                kind: Kind::NotCompleted,
                subject: a.run_id.clone(),
                detail: if a.attempts == 0 {
                    "never run".into()
                } else {
                    format!("no complete attempt out of {}", a.attempts)
                },
            });
        }
    }
    out.extend(i.excluded.iter().map(|(run, why)| Deviation {
        kind: Kind::Excluded,
        subject: run.clone(),
        detail: why.clone(),
    }));
    out.extend(i.dropped_blocks.iter().map(|(cell, block)| Deviation {
        kind: Kind::DroppedBlock,
        subject: format!("{cell} block {block}"),
        detail: "an arm of the cell has no valid run in this block; every comparison of the cell leaves it out".into(),
    }));
    out.extend(i.stalls.iter().map(|run| Deviation {
        kind: Kind::Stall,
        subject: run.clone(),
        detail: "server CPU and throughput below the stall rule's fractions of the cell median; verdicts are repeated without its block".into(),
    }));
    out.extend(changed_order(i.rows));
    out
}

/// Runs whose window opened after a run of a later block had started: the measured order
/// departs from the planned one (blocks in order; a retry made at the end, or after a
/// resume, lands here).
fn changed_order(rows: &[RunRow]) -> Vec<Deviation> {
    let mut timed: Vec<(&RunRow, f64)> = rows
        .iter()
        .filter_map(|r| r.started_unix_s.map(|t| (r, t)))
        .collect();
    timed.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.run_id.cmp(&b.0.run_id)));
    let mut latest: Option<(u32, &str)> = None;
    let mut out = Vec::new();
    for (r, _) in timed {
        match latest {
            Some((b, by)) if r.block < b => out.push(Deviation {
                kind: Kind::ChangedOrder,
                subject: r.run_id.clone(),
                detail: format!(
                    "block {} measured after block {b} had started (run {by})",
                    r.block
                ),
            }),
            Some((b, _)) if r.block == b => {}
            _ => latest = Some((r.block, r.run_id.as_str())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, block: u32, t: f64) -> RunRow {
        RunRow {
            run_id: id.into(),
            block,
            started_unix_s: Some(t),
            ..RunRow::default()
        }
    }

    #[test]
    fn a_run_after_a_later_block_changed_the_order() {
        let rows = [
            row("r0", 0, 10.0),
            row("r1", 0, 10.0),
            row("r2", 1, 20.0),
            row("r3", 1, 21.0),
            row("r1b", 0, 30.0),
            row("r4", 2, 40.0),
        ];
        let d = changed_order(&rows);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].subject, "r1b");
        assert!(d[0].detail.contains("after block 1"), "{}", d[0].detail);
    }

    #[test]
    fn every_kind_is_logged() {
        let attempts = [
            RunAttempts {
                run_id: "r0".into(),
                cell: "c".into(),
                arm: "a".into(),
                attempts: 2,
                invalid: 1,
                failed: 0,
                reasons: vec!["pause_quiet: gave up".into()],
            },
            RunAttempts {
                run_id: "r1".into(),
                cell: "c".into(),
                arm: "b".into(),
                attempts: 0,
                invalid: 0,
                failed: 0,
                reasons: Vec::new(),
            },
        ];
        let rows = [row("r0", 0, 1.0)];
        let settings = ["--margin 0.03 replaces the pre-registered 0.05".to_owned()];
        let log = log(Inputs {
            settings: &settings,
            attempts: &attempts,
            excluded: &[],
            dropped_blocks: &[("c".into(), 0)],
            stalls: &["r0".into()],
            rows: &rows,
        });
        let kinds: Vec<Kind> = log.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::AnalysisSetting,
                Kind::Retried,
                Kind::NotCompleted,
                Kind::DroppedBlock,
                Kind::Stall
            ]
        );
        assert!(log[1].detail.contains("pause_quiet"), "{}", log[1].detail);
        assert_eq!(log[2].detail, "never run");
    }
}
