//! The campaign schedule: one decision for both executors (study section IV-B, "runs are executed
//! in the pre-registered order"; docs/src/kubernetes/index.md, "What the operator does with a
//! campaign").
//!
//! A campaign is carried out by `pqbench run` (processes on one machine, its state on disk)
//! and by the operator (pods, its state in the status and the results bucket). Both observe,
//! call [`decide`], and act on the [`Next`] it returns; neither has rules of its own about
//! runs. The rules:
//!
//! - Runs go in plan order. A run is **complete** when every process's `SHA256SUMS` is
//!   present, valid or not.
//! - An attempt whose files are complete but whose run **failed validation** is run again
//!   in the same block position, up to [`Policy::retries`] times; the executor keeps every
//!   such attempt's files aside (never analysed, never deleted). The last attempt stands,
//!   valid or not: the analysis then leaves that block out for every arm of the cell, so
//!   the pairs stay balanced, and the report counts invalid attempts per arm.
//! - An attempt **fails** when its processes end without every process's files, or when it
//!   outlives the run deadline ([`Policy::run_deadline`]). A failed attempt is retried up to
//!   [`Policy::retries`] times (`runRetries`, default [`DEFAULT_RUN_RETRIES`]); then the run
//!   is **given up**: recorded with its attempts and the last reason, left out of the
//!   analysis, and the campaign goes on.
//! - **Interleaved blocks** ([`Policy::interleave`], the campaign's `interleave`): a run
//!   that starts, or starts again, takes the runs of its block still to do with it as
//!   **mates** ([`Mate`]), each in its own turns, all behind one start instant. The attempt
//!   is over when every run in it is complete, has failed, or the run deadline passed; until
//!   then the schedule waits. Then each mate is settled on its own ([`MateFate`]): complete
//!   and valid, it stands; invalid, its files are kept aside as attempt `a0` and it runs
//!   again later; failed, its files are moved aside and it runs again later. A mate's
//!   attempt does not count against `runRetries`: its retries are its own, once it is the
//!   run the schedule starts (alone in its turns when its block-mates are done). The
//!   attempt's own run (the **lead**) follows the rules above.
//! - A run starts [`START_LEAD`] (on one machine [`LOCAL_START_LEAD`]) after the last of
//!   its processes announced itself ready
//!   ([`start_at`]): every process has paused, loaded its keys, passed the known-answer gate
//!   and written its fixtures by then.
//! - The runs are **done** when every planned run is complete or given up.
//! - **ETA**: the mean wall time of the runs finished since the executor began counting
//!   ([`Observed::since`]), times the runs left; before the first of them, the design's
//!   estimate per run ([`Policy::per_run_estimate`]).
//!
//! Restart safety follows from the inputs: what is complete is read from the results (disk
//! or bucket), what was given up from the executor's record (a file, or the status), and an
//! attempt in progress from the executor's record of it. Deciding again from the same facts
//! gives the same answer.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use campaign::design::{Assumptions, Plan, estimate};
use campaign::spec::CampaignSpec;
use serde::{Deserialize, Serialize};

/// Where both executors keep what attempts left, under a campaign directory or, in the
/// results bucket, under the campaign's prefix (`worker::attempts` reads it back for the
/// report's Attempts table).
pub mod kept {
    /// Invalid attempts: `attempts/<runId>/a<N>/p<index>/<file>` (`a0`: one made beside
    /// its block's lead).
    pub const ATTEMPTS: &str = "attempts";
    /// Failed and cut-off attempts: `incomplete/<runId>-<unix ms>/p<index>/<file>`.
    pub const INCOMPLETE: &str = "incomplete";
    /// The runs given up, a JSON list of [`super::GivenUp`].
    pub const GIVEN_UP: &str = "failed-runs.json";

    /// Where invalid attempt `attempt` of `run_id` is kept; `again` (unix ms) when that
    /// attempt number is kept already (a mate invalid twice, a resumed campaign): beside it.
    pub fn attempt_dir(run_id: &str, attempt: u32, again: Option<u128>) -> String {
        match again {
            None => format!("{ATTEMPTS}/{run_id}/a{attempt}"),
            Some(ms) => format!("{ATTEMPTS}/{run_id}/a{attempt}-{ms}"),
        }
    }

    /// Where a failed or cut-off attempt of `run_id` is set aside, at `unix_ms`.
    pub fn incomplete_dir(run_id: &str, unix_ms: u128) -> String {
        format!("{INCOMPLETE}/{run_id}-{unix_ms}")
    }
}

/// Attempts after the first when the campaign does not say (`runRetries`).
pub const DEFAULT_RUN_RETRIES: u32 = 2;

/// How long after the last process of a run is ready the run starts on a cluster (the pods
/// poll the results bucket for the start instant every 200 ms, across the network).
pub const START_LEAD: Duration = Duration::from_secs(2);

/// The lead of `pqbench run`, whose processes read the start instant from a local file
/// (polled every 200 ms): long enough for every process to see it before it arrives.
pub const LOCAL_START_LEAD: Duration = Duration::from_millis(600);

/// The wait before a run's second attempt; each further attempt waits twice as long as
/// the one before, up to [`MAX_RETRY_DELAY`] ([`retry_delay`]).
pub const RETRY_BACKOFF: Duration = Duration::from_secs(5);
/// The longest wait before a retry.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// How long after an attempt failed attempt number `attempt` (2 for the first retry) starts:
/// 5 s, 10 s, 20 s, 40 s, then 60 s. A failure that comes from the surroundings (the S3
/// server restarting, a node draining) then has time to pass; retried at once, a run
/// burnt every attempt within a second of a one-second outage.
pub fn retry_delay(attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(2).min(8);
    RETRY_BACKOFF
        .saturating_mul(1 << doublings)
        .min(MAX_RETRY_DELAY)
}

/// What the campaign asks of its runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Attempts after the first.
    pub retries: u32,
    /// How long an attempt may take, from its start to every process's files.
    pub run_deadline: Duration,
    /// The design's estimate of one run's wall time, for the ETA before a run has finished.
    pub per_run_estimate: Duration,
    /// Whether the arms of a block run at once, in turns (`interleave`): a started run takes
    /// its block's runs still to do as mates.
    pub interleave: bool,
}

impl Policy {
    /// The policy of a campaign: `runRetries`, [`run_deadline`], and the design's estimate.
    pub fn of(spec: &CampaignSpec, plan: &Plan) -> Self {
        let runs = u32::try_from(plan.runs.len()).unwrap_or(u32::MAX).max(1);
        Self {
            retries: spec.run_retries.unwrap_or(DEFAULT_RUN_RETRIES),
            run_deadline: run_deadline(spec),
            per_run_estimate: estimate(plan, spec, &Assumptions::default()).wall / runs,
            interleave: spec.interleave.is_some(),
        }
    }

    /// Why an attempt that outlived the deadline failed.
    pub fn deadline_exceeded(&self) -> String {
        format!(
            "run deadline of {} exceeded",
            campaign::units::format_duration(self.run_deadline)
        )
    }
}

/// How long one attempt of a run may take: `deadlines.run`, else the pause's longest wait +
/// warm-up + window (interleaved: times the arms) + drain + 5 minutes (scheduling, image pulls, keys and fixtures).
pub fn run_deadline(spec: &CampaignSpec) -> Duration {
    spec.deadlines.as_ref().and_then(|d| d.run).map_or_else(
        || {
            let pause = if spec.pause.enabled {
                spec.pause.max_wait.0
            } else {
                Duration::ZERO
            };
            // Interleaved, an attempt carries out the block's runs at once, each arm's
            // windows in turns.
            let turns = if spec.interleave.is_some() {
                u32::try_from(campaign::design::arms(spec).len()).unwrap_or(u32::MAX)
            } else {
                1
            };
            pause
                + (spec.warmup.0 + spec.measured.0) * turns
                + spec.drain.0
                + Duration::from_secs(300)
        },
        |d| d.0,
    )
}

/// A run given up after its last attempt failed (`failedRuns` in the operator's status,
/// `failed-runs.json` in a local campaign directory).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GivenUp {
    /// The run.
    pub run_id: String,
    /// Attempts made.
    pub attempts: u32,
    /// Why the last attempt failed.
    pub reason: String,
}

/// The attempt in progress, as the executor recorded it when it started it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The run.
    pub run_id: String,
    /// Its plan index.
    pub index: u32,
    /// Attempt number, from 1.
    pub attempt: u32,
    /// When the attempt started (the deadline counts from here).
    pub started: SystemTime,
    /// The block-mates carried out beside it, in their own turns (interleaved).
    pub mates: Vec<Mate>,
}

/// A run of the lead's block carried out beside it (interleaved).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mate {
    /// The run.
    pub run_id: String,
    /// Its plan index.
    pub index: u32,
}

/// What becomes of a mate once its attempt is over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MateFate {
    /// Complete and valid: it stands.
    Complete,
    /// Complete but invalid: its files are kept aside (attempt `a0`) and it runs again.
    Invalid(String),
    /// Failed (why): what it left is moved aside and it runs again.
    Failed(String),
}

/// A mate settled at the end of its attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    /// The run.
    pub run_id: String,
    /// What becomes of it.
    pub fate: MateFate,
}

/// What the executor observed of the attempt in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptState {
    /// Its processes are preparing or measuring.
    Going,
    /// Its processes ended, or can no longer end well, without every process's files: why.
    Ended(String),
    /// Its files are complete but the run failed validation: why (the failed checks).
    Invalid(String),
}

/// Everything [`decide`] needs to know.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// Now.
    pub now: SystemTime,
    /// Runs with every process's files.
    pub complete: &'a BTreeSet<String>,
    /// Runs given up.
    pub given_up: &'a [GivenUp],
    /// The attempt in progress, if any, and its state.
    pub current: Option<(&'a Attempt, &'a AttemptState)>,
    /// The states of the current attempt's mates, by run id (a mate not listed: going).
    pub mates: &'a BTreeMap<String, AttemptState>,
    /// When the executor began counting finished runs for the ETA.
    pub since: SystemTime,
    /// Runs finished (complete or given up) since then.
    pub finished_since: u32,
}

/// What to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// Start the first attempt of the next run.
    Start {
        /// The run.
        run_id: String,
        /// Its plan index.
        index: u32,
        /// Its block's runs still to do, started with it (interleaved); before they
        /// start, what an earlier attempt of theirs left is moved aside.
        mates: Vec<Mate>,
    },
    /// The current attempt failed: clear what it left and start the next attempt
    /// [`retry_delay`] later.
    Retry {
        /// The run.
        run_id: String,
        /// Its plan index.
        index: u32,
        /// The attempt to start (the failed one + 1).
        attempt: u32,
        /// Why the failed attempt failed.
        why: String,
        /// The failed attempt's files are complete but invalid: keep them as attempt
        /// `attempt - 1` ([`kept::attempt_dir`]); otherwise set what it left aside
        /// ([`kept::incomplete_dir`]).
        keep: bool,
        /// Its block's runs still to do, started with it (interleaved).
        mates: Vec<Mate>,
    },
    /// The current attempt failed and was the last: stop what is left of it and record the
    /// run as given up. The next decision starts the next run.
    GiveUp(GivenUp),
    /// The current attempt is going: look again later.
    Wait,
    /// Every run is complete or given up.
    Done,
}

/// How far the campaign's runs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Runs complete or given up.
    pub done: u32,
    /// Planned runs.
    pub total: u32,
    /// When the last run should be done (absent once every run is).
    pub eta: Option<SystemTime>,
}

/// The outcome of [`decide`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// What to do.
    pub next: Next,
    /// The runs of the attempt just over whose files are complete and stand (its lead and
    /// its mates).
    pub completed: Vec<String>,
    /// The mates of the attempt just over, each settled ([`MateFate`]); the executor keeps
    /// or moves aside their files before it acts on [`Decision::next`].
    pub mates: Vec<Settled>,
    /// Progress, counting the decision's give-up.
    pub progress: Progress,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The ETA: the runs left at the rate observed since `since`, or at the design's estimate
/// before any run finished.
fn eta(policy: &Policy, o: &Observed<'_>, left: u32) -> Option<SystemTime> {
    if left == 0 {
        return None;
    }
    let per = match (o.finished_since, o.now.duration_since(o.since)) {
        (n, Ok(spent)) if n > 0 => spent / n,
        _ => policy.per_run_estimate,
    };
    Some(o.now + per * left)
}

/// Whether each planned run is settled: complete or given up.
fn settled_runs<'p>(
    plan: &'p Plan,
    complete: &BTreeSet<String>,
    given_up: &[GivenUp],
) -> impl Iterator<Item = (&'p campaign::design::PlannedRun, bool)> {
    let given_up: BTreeSet<&str> = given_up.iter().map(|g| g.run_id.as_str()).collect();
    plan.runs.iter().map(move |r| {
        let s = complete.contains(&r.run_id) || given_up.contains(r.run_id.as_str());
        (r, s)
    })
}

/// How many planned runs are complete or given up.
pub fn settled(plan: &Plan, complete: &BTreeSet<String>, given_up: &[GivenUp]) -> u32 {
    count(
        settled_runs(plan, complete, given_up)
            .filter(|(_, s)| *s)
            .count(),
    )
}

/// The runs of `lead`'s block still to do beside it, when the campaign interleaves its
/// arms: neither complete nor given up, in plan order.
pub fn mates(
    plan: &Plan,
    policy: &Policy,
    lead: &campaign::design::PlannedRun,
    complete: &BTreeSet<String>,
    given_up: &[GivenUp],
) -> Vec<Mate> {
    if !policy.interleave {
        return Vec::new();
    }
    plan.block_runs(lead.block)
        .filter(|r| r.run_id != lead.run_id && !complete.contains(&r.run_id))
        .filter(|r| given_up.iter().all(|g| g.run_id != r.run_id))
        .map(|r| Mate {
            run_id: r.run_id.clone(),
            index: r.index,
        })
        .collect()
}

/// Whether the attempt `a` is over: every run in it complete or failed, or the run
/// deadline passed.
fn attempt_over(policy: &Policy, o: &Observed<'_>, a: &Attempt, state: &AttemptState) -> bool {
    let late = o
        .now
        .duration_since(a.started)
        .is_ok_and(|d| d > policy.run_deadline);
    let going = |run_id: &str, s: Option<&AttemptState>| {
        matches!(s, None | Some(AttemptState::Going)) && !o.complete.contains(run_id)
    };
    late || (!going(&a.run_id, Some(state))
        && a.mates
            .iter()
            .all(|m| !going(&m.run_id, o.mates.get(&m.run_id))))
}

/// What becomes of each mate of an attempt that is over.
fn settle_mates(policy: &Policy, o: &Observed<'_>, a: &Attempt) -> Vec<Settled> {
    a.mates
        .iter()
        .map(|m| {
            let complete = o.complete.contains(&m.run_id);
            let fate = match o.mates.get(&m.run_id) {
                Some(AttemptState::Invalid(why)) if complete => MateFate::Invalid(why.clone()),
                Some(AttemptState::Ended(why)) if !complete => MateFate::Failed(why.clone()),
                _ if complete => MateFate::Complete,
                Some(AttemptState::Ended(why) | AttemptState::Invalid(why)) => {
                    MateFate::Failed(why.clone())
                }
                _ => MateFate::Failed(policy.deadline_exceeded()),
            };
            Settled {
                run_id: m.run_id.clone(),
                fate,
            }
        })
        .collect()
}

/// Decides what the executor does next, from what it observed.
pub fn decide(plan: &Plan, policy: &Policy, o: &Observed<'_>) -> Decision {
    let total = count(plan.runs.len());
    // An interleaved attempt is carried out as a whole: nothing is decided while a run
    // in it is still going.
    if let Some((a, state)) = o.current
        && !attempt_over(policy, o, a, state)
    {
        let done = settled(plan, o.complete, o.given_up);
        return Decision {
            next: Next::Wait,
            completed: Vec::new(),
            mates: Vec::new(),
            progress: Progress {
                done,
                total,
                eta: eta(policy, o, total - done),
            },
        };
    }
    let settled_mates = o
        .current
        .map(|(a, _)| settle_mates(policy, o, a))
        .unwrap_or_default();
    // Mates that run again are not complete, whatever files they have now.
    let mut complete = o.complete.clone();
    for m in &settled_mates {
        if m.fate != MateFate::Complete {
            complete.remove(&m.run_id);
        }
    }
    let mut completed: Vec<String> = settled_mates
        .iter()
        .filter(|m| m.fate == MateFate::Complete)
        .map(|m| m.run_id.clone())
        .collect();
    let mut done = settled(plan, &complete, o.given_up);
    let mates_of = |run_id: &str, complete: &BTreeSet<String>| {
        plan.runs
            .iter()
            .find(|r| r.run_id == run_id)
            .map(|r| mates(plan, policy, r, complete, o.given_up))
            .unwrap_or_default()
    };
    // An invalid attempt with attempts left runs again, though its files are complete.
    if let Some((a, AttemptState::Invalid(why))) = o.current
        && a.attempt <= policy.retries
        && complete.contains(&a.run_id)
    {
        complete.remove(&a.run_id);
        done -= 1;
        return Decision {
            next: Next::Retry {
                run_id: a.run_id.clone(),
                index: a.index,
                attempt: a.attempt + 1,
                why: format!("invalid: {why}"),
                keep: true,
                mates: mates_of(&a.run_id, &complete),
            },
            completed,
            mates: settled_mates,
            progress: Progress {
                done,
                total,
                eta: eta(policy, o, total - done),
            },
        };
    }
    if let Some((a, _)) = o.current
        && complete.contains(&a.run_id)
    {
        completed.insert(0, a.run_id.clone());
    }
    let next = match settled_runs(plan, &complete, o.given_up).find(|(_, s)| !s) {
        None => Next::Done,
        Some((run, _)) => match o.current {
            Some((a, state)) if a.run_id == run.run_id => {
                let failure = match state {
                    AttemptState::Ended(why) | AttemptState::Invalid(why) => why.clone(),
                    // Over and going: past the deadline.
                    AttemptState::Going => policy.deadline_exceeded(),
                };
                if a.attempt <= policy.retries {
                    Next::Retry {
                        run_id: a.run_id.clone(),
                        index: a.index,
                        attempt: a.attempt + 1,
                        why: failure,
                        keep: false,
                        mates: mates_of(&a.run_id, &complete),
                    }
                } else {
                    done += 1;
                    Next::GiveUp(GivenUp {
                        run_id: a.run_id.clone(),
                        attempts: a.attempt,
                        reason: failure,
                    })
                }
            }
            // No attempt, or one of another run (its files were removed behind the
            // executor's back): the next run starts afresh.
            _ => Next::Start {
                run_id: run.run_id.clone(),
                index: run.index,
                mates: mates(plan, policy, run, &complete, o.given_up),
            },
        },
    };
    Decision {
        next,
        completed,
        mates: settled_mates,
        progress: Progress {
            done,
            total,
            eta: eta(policy, o, total - done),
        },
    }
}

/// The start instant of a run whose processes are `ready` of `processes`: `lead`
/// ([`START_LEAD`] on a cluster, [`LOCAL_START_LEAD`] on one machine) after now once every
/// process is ready.
pub fn start_at(ready: u32, processes: u32, now: SystemTime, lead: Duration) -> Option<SystemTime> {
    (ready >= processes).then_some(now + lead)
}

/// Test support: the scenarios every executor of the schedule must agree on. The
/// schedule's own tests decide through them; the operator's step and the local runner are
/// driven through the same ones.
#[doc(hidden)]
pub mod scenarios {
    use super::*;

    /// One step of a scenario: what the executor observed, and what it must do.
    #[derive(Clone, Debug)]
    pub struct Step {
        /// What the step shows.
        pub name: &'static str,
        /// Plan indices of the complete runs.
        pub complete: Vec<u32>,
        /// Every run neither listed as complete nor given up is complete too.
        pub rest_complete: bool,
        /// Given-up runs by plan index, with their attempts.
        pub given_up: Vec<(u32, u32)>,
        /// The attempt in progress: (plan index, attempt, seconds since it started, how it
        /// ended: `None` still going).
        pub current: Option<(u32, u32, u64, Option<&'static str>)>,
        /// The campaign interleaves its blocks.
        pub interleave: bool,
        /// The current attempt's mates: (plan index, how it ended: `None` still going).
        pub mates: Vec<(u32, Option<&'static str>)>,
        /// What must follow.
        pub expect: Expect,
        /// How the current attempt's mates must be settled, by plan index.
        pub settled: Vec<(u32, SettledAs)>,
    }

    /// A mate's expected [`MateFate`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SettledAs {
        /// [`MateFate::Complete`].
        Complete,
        /// [`MateFate::Invalid`].
        Invalid,
        /// [`MateFate::Failed`].
        Failed,
    }

    /// The expected [`Next`], by plan index.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Expect {
        /// [`Next::Start`] of this run (mates not looked at).
        Start(u32),
        /// [`Next::Start`] of this run with these mates.
        StartWith(u32, Vec<u32>),
        /// [`Next::Retry`] of this run with this attempt, the reason containing the text.
        Retry(u32, u32, &'static str),
        /// [`Next::Retry`] of this run with this attempt and these mates, the reason
        /// containing the text.
        RetryWith(u32, u32, &'static str, Vec<u32>),
        /// [`Next::GiveUp`] of this run after these attempts.
        GiveUp(u32, u32),
        /// [`Next::Wait`].
        Wait,
        /// [`Next::Done`].
        Done,
    }

    /// The scenarios, for a plan of at least three runs and a policy of 2 retries and a run
    /// deadline under one hour.
    pub fn table() -> Vec<Step> {
        let s = |name, complete: &[u32], given_up: &[(u32, u32)], current, expect| Step {
            name,
            complete: complete.to_vec(),
            rest_complete: false,
            given_up: given_up.to_vec(),
            current,
            interleave: false,
            mates: Vec::new(),
            expect,
            settled: Vec::new(),
        };
        vec![
            s(
                "a fresh campaign starts its first run",
                &[],
                &[],
                None,
                Expect::Start(0),
            ),
            s(
                "an attempt going waits",
                &[],
                &[],
                Some((0, 1, 10, None)),
                Expect::Wait,
            ),
            s(
                "a complete run moves on to the next",
                &[0],
                &[],
                Some((0, 1, 30, None)),
                Expect::Start(1),
            ),
            s(
                "a failed attempt is retried",
                &[0],
                &[],
                Some((1, 1, 30, Some("process 0 could not start"))),
                Expect::Retry(1, 2, "could not start"),
            ),
            s(
                "an attempt past the run deadline fails",
                &[0],
                &[],
                Some((1, 2, 3600, None)),
                Expect::Retry(1, 3, "run deadline"),
            ),
            s(
                "the last attempt failing gives the run up",
                &[0],
                &[],
                Some((1, 3, 30, Some("again"))),
                Expect::GiveUp(1, 3),
            ),
            s(
                "after a give-up the campaign goes on",
                &[0],
                &[(1, 3)],
                None,
                Expect::Start(2),
            ),
            s(
                "a run that stays invalid is complete and not repeated",
                &[0, 1],
                &[],
                None,
                Expect::Start(2),
            ),
            s(
                "a restarted executor keeps the attempt it recorded instead of starting another",
                &[0, 1],
                &[],
                Some((2, 1, 20, None)),
                Expect::Wait,
            ),
            s(
                "resuming without a record of the cut-off attempt starts that run again",
                &[0, 1],
                &[],
                None,
                Expect::Start(2),
            ),
            s(
                "an attempt of a run no longer next does not hold the plan",
                &[1],
                &[],
                Some((1, 1, 5, None)),
                Expect::Start(0),
            ),
            Step {
                rest_complete: true,
                ..s(
                    "every run complete or given up: done",
                    &[0],
                    &[(1, 3)],
                    None,
                    Expect::Done,
                )
            },
        ]
    }

    /// The scenarios of invalid attempts (an ending `Some("invalid: …")` is an attempt
    /// whose files are complete but whose run failed validation): the local executor
    /// observes validity from its processes' exit status, the operator from the runs'
    /// `summary.json` in the results bucket.
    pub fn invalid_table() -> Vec<Step> {
        let s = |name, complete: &[u32], current, expect| Step {
            name,
            complete: complete.to_vec(),
            rest_complete: false,
            given_up: Vec::new(),
            current,
            interleave: false,
            mates: Vec::new(),
            expect,
            settled: Vec::new(),
        };
        vec![
            s(
                "an invalid attempt runs again in its position",
                &[0, 1],
                Some((1, 1, 30, Some("invalid: unaccounted_p99"))),
                Expect::Retry(1, 2, "unaccounted_p99"),
            ),
            s(
                "an invalid second attempt runs a third time",
                &[0, 1],
                Some((1, 2, 30, Some("invalid: pause quiet"))),
                Expect::Retry(1, 3, "pause quiet"),
            ),
            s(
                "the last attempt invalid: the run stands and the campaign goes on",
                &[0, 1],
                Some((1, 3, 30, Some("invalid: again"))),
                Expect::Start(2),
            ),
        ]
    }

    /// The scenarios of interleaved blocks, for a plan whose first two blocks hold runs 0–2
    /// and 3–5 (the main job's three arms): a run starts with its block's runs still to do,
    /// the attempt is over only when every run in it is, and each mate is then settled on
    /// its own.
    pub fn block_table() -> Vec<Step> {
        use SettledAs::{Complete, Failed, Invalid};
        #[allow(clippy::type_complexity, reason = "a table's row")]
        let s = |name,
                 complete: &[u32],
                 current,
                 mates: &[(u32, Option<&'static str>)],
                 expect,
                 settled: &[(u32, SettledAs)]| Step {
            name,
            complete: complete.to_vec(),
            rest_complete: false,
            given_up: Vec::new(),
            current,
            interleave: true,
            mates: mates.to_vec(),
            expect,
            settled: settled.to_vec(),
        };
        vec![
            s(
                "a block starts with its mates",
                &[],
                None,
                &[],
                Expect::StartWith(0, vec![1, 2]),
                &[],
            ),
            s(
                "a block waits while any run in it is going",
                &[0, 2],
                Some((0, 1, 10, None)),
                &[(1, None), (2, None)],
                Expect::Wait,
                &[],
            ),
            s(
                "a mate still going holds the block though the lead failed",
                &[],
                Some((0, 1, 10, Some("process 0 could not start"))),
                &[(1, None), (2, Some("process 0 could not start"))],
                Expect::Wait,
                &[],
            ),
            s(
                "a block over: every run stands and the next block starts with its mates",
                &[0, 1, 2],
                Some((0, 1, 30, None)),
                &[(1, None), (2, None)],
                Expect::StartWith(3, vec![4, 5]),
                &[(1, Complete), (2, Complete)],
            ),
            s(
                "an invalid mate is kept aside and runs again, alone in its turns",
                &[0, 1, 2],
                Some((0, 1, 30, None)),
                &[(1, Some("invalid: unaccounted_p99")), (2, None)],
                Expect::StartWith(1, vec![]),
                &[(1, Invalid), (2, Complete)],
            ),
            s(
                "a failed mate is moved aside and runs again from its first attempt",
                &[0, 2],
                Some((0, 1, 30, None)),
                &[(1, Some("process 0 could not start")), (2, None)],
                Expect::StartWith(1, vec![]),
                &[(1, Failed), (2, Complete)],
            ),
            s(
                "the lead failing while its mates stand is retried alone",
                &[1, 2],
                Some((0, 1, 30, Some("process 0 could not start"))),
                &[(1, None), (2, None)],
                Expect::RetryWith(0, 2, "could not start", vec![]),
                &[(1, Complete), (2, Complete)],
            ),
            s(
                "the lead invalid and a mate failed: the lead's retry takes the mate along",
                &[0, 2],
                Some((0, 1, 30, Some("invalid: pause quiet"))),
                &[
                    (1, Some("the processes ended without every process's files")),
                    (2, None),
                ],
                Expect::RetryWith(0, 2, "pause quiet", vec![1]),
                &[(1, Failed), (2, Complete)],
            ),
            s(
                "a block past the run deadline: the runs still going fail",
                &[1],
                Some((0, 1, 3600, None)),
                &[(1, None), (2, None)],
                Expect::RetryWith(0, 2, "run deadline", vec![2]),
                &[(1, Complete), (2, Failed)],
            ),
        ]
    }

    /// The state a scenario's ending stands for: `None` going, `"invalid: …"` invalid, any
    /// other text ended.
    pub fn state_of(ended: Option<&str>) -> AttemptState {
        ended.map_or(AttemptState::Going, |w| match w.strip_prefix("invalid: ") {
            Some(why) => AttemptState::Invalid(why.into()),
            None => AttemptState::Ended(w.into()),
        })
    }

    /// Decides one step of the table over `plan` (at least six runs in blocks of three) at
    /// `now`, under `policy` with the step's `interleave`.
    pub fn decide_step(plan: &Plan, policy: &Policy, step: &Step, now: SystemTime) -> Decision {
        let id = |i: u32| plan.runs[i as usize].run_id.clone();
        let mut complete: BTreeSet<String> = step.complete.iter().map(|&i| id(i)).collect();
        if step.rest_complete {
            complete.extend(
                plan.runs
                    .iter()
                    .filter(|r| !step.given_up.iter().any(|&(i, _)| i == r.index))
                    .map(|r| r.run_id.clone()),
            );
        }
        let given_up: Vec<GivenUp> = step
            .given_up
            .iter()
            .map(|&(i, attempts)| GivenUp {
                run_id: id(i),
                attempts,
                reason: "failed".into(),
            })
            .collect();
        let current = step.current.map(|(i, attempt, ago, ended)| {
            (
                Attempt {
                    run_id: id(i),
                    index: i,
                    attempt,
                    started: now - Duration::from_secs(ago),
                    mates: step
                        .mates
                        .iter()
                        .map(|&(m, _)| Mate {
                            run_id: id(m),
                            index: m,
                        })
                        .collect(),
                },
                state_of(ended),
            )
        });
        let mates: BTreeMap<String, AttemptState> = step
            .mates
            .iter()
            .map(|&(m, ended)| (id(m), state_of(ended)))
            .collect();
        let policy = Policy {
            interleave: step.interleave,
            ..policy.clone()
        };
        decide(
            plan,
            &policy,
            &Observed {
                mates: &mates,
                now,
                complete: &complete,
                given_up: &given_up,
                current: current.as_ref().map(|(a, s)| (a, s)),
                since: now,
                finished_since: 0,
            },
        )
    }

    /// Whether the decision's settled mates are what `step` says, by plan index.
    pub fn settled_as(plan: &Plan, step: &Step, d: &Decision) -> bool {
        let got: Vec<(String, SettledAs)> = d
            .mates
            .iter()
            .map(|m| {
                let f = match m.fate {
                    MateFate::Complete => SettledAs::Complete,
                    MateFate::Invalid(_) => SettledAs::Invalid,
                    MateFate::Failed(_) => SettledAs::Failed,
                };
                (m.run_id.clone(), f)
            })
            .collect();
        let want: Vec<(String, SettledAs)> = step
            .settled
            .iter()
            .map(|&(i, f)| (plan.runs[i as usize].run_id.clone(), f))
            .collect();
        got == want
    }

    /// Whether `next` is what `expect` says, by plan index.
    pub fn matches(plan: &Plan, expect: &Expect, next: &Next) -> bool {
        let id = |i: u32| plan.runs[i as usize].run_id.as_str();
        let same = |want: &[u32], got: &[Mate]| {
            want.len() == got.len()
                && want
                    .iter()
                    .zip(got)
                    .all(|(&i, m)| m.index == i && m.run_id == id(i))
        };
        match (expect, next) {
            (Expect::Start(i), Next::Start { run_id, index, .. }) => run_id == id(*i) && index == i,
            (
                Expect::StartWith(i, want),
                Next::Start {
                    run_id,
                    index,
                    mates,
                },
            ) => run_id == id(*i) && index == i && same(want, mates),
            (
                Expect::RetryWith(i, n, text, want),
                Next::Retry {
                    run_id,
                    attempt,
                    why,
                    mates,
                    ..
                },
            ) => run_id == id(*i) && attempt == n && why.contains(text) && same(want, mates),
            (
                Expect::Retry(i, n, text),
                Next::Retry {
                    run_id,
                    attempt,
                    why,
                    ..
                },
            ) => run_id == id(*i) && attempt == n && why.contains(text),
            (Expect::GiveUp(i, n), Next::GiveUp(g)) => g.run_id == id(*i) && g.attempts == *n,
            (Expect::Wait, Next::Wait) | (Expect::Done, Next::Done) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::scenarios::{decide_step, matches, table};
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn retries_wait_longer_each_time_up_to_a_minute() {
        let waits: Vec<u64> = (2..=8).map(|a| retry_delay(a).as_secs()).collect();
        assert_eq!(waits, [5, 10, 20, 40, 60, 60, 60]);
        assert_eq!(retry_delay(u32::MAX), MAX_RETRY_DELAY);
    }

    fn plan() -> (CampaignSpec, Plan) {
        // The main job's campaign, as its text.
        let text = include_str!("../../examples/quick.yaml");
        let m = campaign::Manifest::parse(text, "examples/quick.yaml").unwrap();
        let plan = campaign::design::plan(&m);
        (m.spec, plan)
    }

    #[test]
    fn every_scenario_of_the_table() {
        let (spec, plan) = plan();
        assert!(plan.runs.len() >= 3);
        let policy = Policy::of(&spec, &plan);
        assert_eq!(policy.retries, 2);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        // The blocks of the main job: three arms, in plan order.
        for (i, r) in plan.runs.iter().take(6).enumerate() {
            assert_eq!(r.block as usize, i / 3, "{r:?}");
        }
        for step in table()
            .into_iter()
            .chain(super::scenarios::invalid_table())
            .chain(super::scenarios::block_table())
        {
            let d = decide_step(&plan, &policy, &step, now);
            assert!(
                matches(&plan, &step.expect, &d.next),
                "{}: expected {:?}, decided {:?}",
                step.name,
                step.expect,
                d.next
            );
            // An invalid attempt's files are kept; a failed one's set aside.
            if let Next::Retry { why, keep, .. } = &d.next {
                assert_eq!(*keep, why.starts_with("invalid: "), "{}", step.name);
            }
            assert!(
                super::scenarios::settled_as(&plan, &step, &d),
                "{}: expected the mates settled as {:?}, decided {:?}",
                step.name,
                step.settled,
                d.mates
            );
        }
    }

    #[test]
    fn progress_counts_give_ups_and_the_eta_follows_the_observed_rate() {
        let (spec, plan) = plan();
        let policy = Policy::of(&spec, &plan);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let total = u32::try_from(plan.runs.len()).unwrap();
        let complete: BTreeSet<String> = [plan.runs[0].run_id.clone()].into();
        let a = Attempt {
            run_id: plan.runs[1].run_id.clone(),
            index: 1,
            attempt: 3,
            started: now - Duration::from_secs(5),
            mates: Vec::new(),
        };
        let ended = AttemptState::Ended("no files".into());
        let o = Observed {
            now,
            complete: &complete,
            given_up: &[],
            current: Some((&a, &ended)),
            mates: &BTreeMap::new(),
            since: now - Duration::from_secs(100),
            finished_since: 1,
        };
        let d = decide(&plan, &policy, &o);
        assert!(matches!(d.next, Next::GiveUp(_)));
        assert_eq!(d.progress.done, 2);
        assert_eq!(d.progress.total, total);
        // 100 s for one run: the runs left at 100 s each.
        assert_eq!(
            d.progress.eta,
            Some(now + Duration::from_secs(100) * (total - 2))
        );
        // Before any run finished: the design's estimate per run.
        let fresh = Observed {
            complete: &BTreeSet::new(),
            current: None,
            finished_since: 0,
            ..o
        };
        let d = decide(&plan, &policy, &fresh);
        assert_eq!(d.progress.eta, Some(now + policy.per_run_estimate * total));
        assert!(policy.per_run_estimate >= Duration::from_secs(4));
    }

    #[test]
    fn the_current_run_completing_is_reported_once_and_the_end_has_no_eta() {
        let (spec, plan) = plan();
        let policy = Policy::of(&spec, &plan);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let all: BTreeSet<String> = plan.runs.iter().map(|r| r.run_id.clone()).collect();
        let last = plan.runs.last().unwrap();
        let a = Attempt {
            run_id: last.run_id.clone(),
            index: last.index,
            attempt: 1,
            started: now,
            mates: Vec::new(),
        };
        let d = decide(
            &plan,
            &policy,
            &Observed {
                now,
                complete: &all,
                given_up: &[],
                current: Some((&a, &AttemptState::Going)),
                mates: &BTreeMap::new(),
                since: now,
                finished_since: 0,
            },
        );
        assert_eq!(d.next, Next::Done);
        assert_eq!(d.completed, std::slice::from_ref(&last.run_id));
        assert_eq!(d.progress.eta, None);
    }

    #[test]
    fn a_run_starts_two_seconds_after_its_last_process_is_ready() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(start_at(1, 2, now, START_LEAD), None);
        assert_eq!(start_at(2, 2, now, START_LEAD), Some(now + START_LEAD));
        assert_eq!(
            start_at(1, 1, now, LOCAL_START_LEAD),
            Some(now + LOCAL_START_LEAD)
        );
    }

    #[test]
    fn the_deadline_is_the_spec_s_or_the_windows_and_pause_plus_five_minutes() {
        let (mut spec, plan) = plan();
        let p = Policy::of(&spec, &plan);
        assert!(spec.pause.enabled);
        // Interleaved (the quick campaign's three arms): an attempt is the block's.
        assert!(spec.interleave.is_some());
        assert_eq!(
            p.run_deadline,
            spec.pause.max_wait.0
                + (spec.warmup.0 + spec.measured.0) * 3
                + spec.drain.0
                + Duration::from_secs(300)
        );
        spec.interleave = None;
        assert_eq!(
            Policy::of(&spec, &plan).run_deadline,
            spec.pause.max_wait.0
                + spec.warmup.0
                + spec.measured.0
                + spec.drain.0
                + Duration::from_secs(300)
        );
        spec.deadlines = Some(campaign::cluster::Deadlines {
            run: Some(campaign::units::Dur(Duration::from_secs(90))),
            ..Default::default()
        });
        spec.run_retries = Some(0);
        let p = Policy::of(&spec, &plan);
        assert_eq!(p.run_deadline, Duration::from_secs(90));
        assert_eq!(p.retries, 0);
        assert_eq!(p.deadline_exceeded(), "run deadline of 90s exceeded");
    }
}
