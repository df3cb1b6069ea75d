//! The attempts of a campaign's runs, as both executors keep them (study section IV-B: an
//! invalid run is re-run in its block position, every attempt kept and reported). The
//! layout is the same in a local campaign directory and, under the campaign's prefix, in
//! the operator's results bucket (the analysis Job downloads it as it is):
//!
//! - `runs/<runId>/p<index>/…` locally, `<runId>/p<index>/…` in the bucket: the attempt
//!   that stands;
//! - `attempts/<runId>/a<N>/p<index>/…`: an invalid attempt, kept (attempt `N`; `a0` for
//!   one made beside its block's lead, which does not count against `runRetries`);
//! - `incomplete/<runId>-<unix ms>/p<index>/…`: a failed or cut-off attempt;
//! - `failed-runs.json`: the runs given up, with their attempts and the last reason.

use std::path::Path;

use campaign::design::Plan;
use run::rows::Collected;
use run::schedule::GivenUp;

pub use run::schedule::kept::{ATTEMPTS, GIVEN_UP, INCOMPLETE};

/// The attempts of every planned run, from a campaign directory (`dir`) laid out as
/// [`self`] says: the run's files in `runs/` (invalid when the collector excluded it,
/// `collected` being what it collected there), its invalid attempts kept in
/// `attempts/<runId>/`, its failed or cut-off attempts in `incomplete/<runId>-*`, and for
/// a run given up (`given_up`), its attempts and reason (an attempt whose processes could
/// not carry the run out leaves no files, only its count there).
pub fn run_attempts(
    dir: &Path,
    plan: &Plan,
    collected: &Collected,
    given_up: &[GivenUp],
) -> Vec<analysis::RunAttempts> {
    let count = |d: &Path| std::fs::read_dir(d).map_or(0, |e| e.flatten().count());
    let incomplete: Vec<String> = std::fs::read_dir(dir.join(INCOMPLETE))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    plan.runs
        .iter()
        .map(|r| {
            let given = given_up.iter().find(|g| g.run_id == r.run_id);
            let final_there = dir.join("runs").join(&r.run_id).is_dir();
            let final_invalid = collected
                .excluded
                .iter()
                .any(|x| x.run_id.as_deref() == Some(r.run_id.as_str()));
            let kept = count(&dir.join(ATTEMPTS).join(&r.run_id));
            let failed = incomplete
                .iter()
                .filter(|n| {
                    n.strip_prefix(r.run_id.as_str())
                        .and_then(|rest| rest.strip_prefix('-'))
                        .is_some_and(|ms| ms.chars().all(|c| c.is_ascii_digit()))
                })
                .count();
            let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
            // The kept attempts' failed checks, then the final run's when it is invalid.
            let mut reasons: Vec<String> =
                crate::collect::collect(&dir.join(ATTEMPTS).join(&r.run_id))
                    .map(|c| c.excluded.into_iter().map(|e| e.reason).collect())
                    .unwrap_or_default();
            reasons.extend(
                collected
                    .excluded
                    .iter()
                    .filter(|x| x.run_id.as_deref() == Some(r.run_id.as_str()))
                    .map(|x| x.reason.clone()),
            );
            let invalid = n(kept + usize::from(final_there && final_invalid));
            let mut attempts = n(kept + failed + usize::from(final_there));
            let mut failed = n(failed);
            if let Some(g) = given {
                // Attempts that left no files still count: they failed.
                let unseen = g.attempts.saturating_sub(attempts);
                attempts += unseen;
                failed += unseen;
                reasons.push(format!("given up: {}", g.reason));
            }
            analysis::RunAttempts {
                run_id: r.run_id.clone(),
                cell: r.cell.clone(),
                arm: r.arm.clone(),
                attempts,
                invalid,
                failed,
                reasons,
            }
        })
        .collect()
}
