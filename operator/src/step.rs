//! The reconciler's decision, as a pure function (STYLE.md "Use the type system for
//! states"; DESIGN.md "Operator"): from what the executor observed ([`Facts`]) to the new
//! status and the [`Action`]s that bring the cluster there ([`decide`]).
//!
//! ```text
//! Pending ─▶ Provisioning ─▶ Running ─▶ Analyzing ─▶ Succeeded
//!               │ deadline      │ deadline   │ deadline
//!               ▼               ▼ (per run)  ▼
//!             Failed     retry, then FailedRun and go on        Failed
//! ```
//!
//! - Provisioning: the credentials and keys Secrets (created once), MinIO's StatefulSet
//!   and headless Service; done when the server is ready and the results bucket exists.
//! - Running: the plan's runs as the shared schedule decides them
//!   ([`run::schedule::decide`], the same decision `pqbench run` follows), one worker Job
//!   per run of an attempt (an interleaved attempt holds its block's runs still to do, the
//!   mates, placed beside the lead's pods: [`crate::resources::Placement::beside`]). A run
//!   is complete when every process's `SHA256SUMS` is in the results bucket; its
//!   `summary.json` then says whether it is valid, and an invalid run runs again in its
//!   block position (its objects kept under `attempts/`). Once every pod of the attempt
//!   announced itself ready in the bucket, the operator writes the start instant
//!   ([`run::schedule::start_at`], the worker's start gate). A failed Job, a Job that
//!   succeeded without its files, or the run deadline fails the attempt; the run is retried
//!   `runRetries` times (default 2), each retry's Job made after a backoff
//!   ([`run::schedule::retry_delay`]: 5 s, doubling), and then recorded in `failedRuns`, and the campaign goes
//!   on (condition `Degraded`). This module maps the schedule's answer onto Jobs, the gate,
//!   conditions and events.
//! - Restart: the state is the status (phase, current run and attempt, failed runs) plus
//!   the results bucket (which runs are complete), so a restarted operator neither repeats
//!   nor loses a run. The executor writes the status before it acts, so an action that did
//!   not happen is decided again, and every action is idempotent.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use campaign::{CampaignSpec, Plan};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use run::schedule::{self, Attempt, AttemptState, GivenUp, Next, Observed, Policy};

use run::verdicts::{AnalysisOutcome, LeftOut};

use crate::api::{
    CampaignStatus, CurrentRun, FailedRun, MateRun, Phase, Progress, ResultsLocation, VerdictRow,
};

pub use run::schedule::START_LEAD;

/// What the executor observed of the results bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketView {
    /// Whether the bucket exists.
    pub exists: bool,
    /// Runs whose every process has its `SHA256SUMS` in the bucket.
    pub completed: BTreeSet<String>,
    /// Ready markers per run.
    pub ready: BTreeMap<String, u32>,
    /// Runs whose start instant is written.
    pub started: BTreeSet<String>,
    /// Complete runs of the current attempt that failed validation, with the failed checks
    /// (read from their processes' `summary.json`, bounded).
    pub invalid: BTreeMap<String, String>,
}

/// The state of the current attempt's Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// No run in progress, so no Job looked at.
    NotLooked,
    /// The Job does not exist.
    Absent,
    /// Its pods are pending or running.
    Active,
    /// Every index completed.
    Succeeded,
    /// The Job failed (the reason from its condition).
    Failed(String),
}

/// Everything [`decide`] needs.
#[derive(Clone, Debug)]
pub struct Facts<'a> {
    /// Now.
    pub now: SystemTime,
    /// The campaign's creation time on the API server.
    pub created: SystemTime,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// The spec.
    pub spec: &'a CampaignSpec,
    /// Its plan.
    pub plan: &'a Plan,
    /// The status as stored.
    pub status: &'a CampaignStatus,
    /// Where results go.
    pub results: &'a ResultsLocation,
    /// Whether the server answers (MinIO ready, or external).
    pub server_ready: bool,
    /// Why the server is not ready, when it is not.
    pub server_detail: Option<String>,
    /// Whether the bucket under test exists (MinIO's, made by the operator; an external
    /// server's bucket is the user's and taken as given).
    pub server_bucket: bool,
    /// The results bucket; `Err` when it could not be read.
    pub bucket: Result<BucketView, String>,
    /// The current attempt's Job (Running), the analysis Job (Analyzing), or the
    /// pre-flight probe Job (Provisioning, once the server is ready, with
    /// `testbed.baselines`).
    pub job: JobState,
    /// The Jobs of the current attempt's mates, by Job name (Running, interleaved).
    pub mate_jobs: BTreeMap<String, JobState>,
    /// The analysis Job's outcome in the results bucket (Analyzing; `None` elsewhere or
    /// when there is none yet); `Err` when it cannot be read.
    pub outcome: Option<Result<AnalysisOutcome, String>>,
    /// The pre-flight probe's baselines in words, read once its Job succeeded
    /// (Provisioning; `None` elsewhere); `Err` when there are none or they cannot be read.
    pub baselines: Option<Result<String, String>>,
    /// A spec error the API server's schema could not catch (an interop refusal included).
    pub invalid: Option<String>,
    /// The interop matrix in words, when it was checked (at admission).
    pub interop: Option<String>,
    /// Objects at the campaign's child names that are not the campaign's (each named with
    /// whose it is; [`crate::ownership`]).
    pub foreign: Vec<String>,
    /// A read of the results bucket passed the operator's bounds (an object's bytes, a
    /// listing's keys; `crate::results`): the campaign fails, the operator reads no more.
    pub exceeded: Option<String>,
    /// The fields the tenant-input policy refuses (`crate::policy`): the campaign fails
    /// before anything of it is made.
    pub refused: Vec<String>,
    /// The images the campaign's pods run with their resolved digests (recorded in
    /// `status.images`, added to what is there).
    pub images: Vec<crate::api::ResolvedImage>,
    /// Seconds after the end the recipient keys Secret goes, and with results elsewhere
    /// MinIO and its credentials (the campaign's `secretsTtlSecondsAfterFinished`, else the
    /// operator's default); 0 keeps them.
    pub secrets_ttl: u32,
}

/// An event to record (PascalCase reason, fixed set).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Warning rather than Normal.
    pub warning: bool,
    /// The reason.
    pub reason: Reason,
    /// What happened, for people.
    pub note: String,
}

/// What the executor does, in order, after writing the new status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Create the credentials and keys Secrets if absent; apply MinIO's Service and
    /// StatefulSet.
    Provision,
    /// Create the results bucket (and, on MinIO, the bucket under test).
    CreateBuckets,
    /// Apply the Job of an attempt. If the Job does not exist yet, first delete whatever
    /// an earlier attempt left under the run's prefix (ready markers, start instant,
    /// partial files).
    StartJob {
        /// Plan index of the run.
        index: u32,
        /// Attempt, from 1 (0 for a mate).
        attempt: u32,
        /// The Job's name.
        name: String,
        /// The attempt's lead Job, whose pods this Job's pods share nodes with (one node
        /// per process index), when the attempt is interleaved.
        turns_with: Option<String>,
    },
    /// Keep an invalid attempt's objects: move them (copy, verify, delete) from
    /// `<runId>/p*/` to `attempts/<runId>/a<attempt>/p*/`.
    KeepAttempt {
        /// Run id.
        run_id: String,
        /// The attempt kept (0 for a mate's).
        attempt: u32,
    },
    /// Move what a failed or cut-off attempt left under `<runId>/p*/` to
    /// `incomplete/<runId>-<unix ms>/p*/` (copy, verify, delete).
    SetAside {
        /// Run id.
        run_id: String,
    },
    /// Delete a Job and its pods.
    DeleteJob {
        /// Job name.
        name: String,
    },
    /// Write the run's start instant to the results bucket.
    OpenGate {
        /// Run id.
        run_id: String,
        /// The instant (RFC 3339).
        at: String,
    },
    /// Apply the analysis Job ([`analysis_job_name`]). If it does not exist yet, first
    /// delete an earlier attempt's outcome.
    StartAnalysis,
    /// Create the pre-flight probe Job ([`probe_job_name`]) if absent, with the disk probe
    /// MinIO's init container left in its pod's status.
    StartProbe,
    /// Delete every worker and analysis Job of the campaign.
    StopJobs,
    /// Delete the server, Secrets and Jobs (the TTL after the end).
    CleanUp,
    /// Delete the recipient keys Secret and, with `server`, the campaign's MinIO and its
    /// credentials Secret (the secrets TTL after the end).
    DeleteSecrets {
        /// Also MinIO and its credentials: only when the results are elsewhere (on MinIO
        /// they are what its credentials open).
        server: bool,
    },
    /// Record an event.
    Event(Event),
}

/// The outcome of [`decide`].
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The status to write.
    pub status: CampaignStatus,
    /// What to do, in order.
    pub actions: Vec<Action>,
    /// When to look again (`None`: only on a change).
    pub requeue: Option<Duration>,
}

/// RFC 3339 with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn parse_time(s: Option<&str>) -> Option<SystemTime> {
    s.and_then(|s| humantime::parse_rfc3339_weak(s).ok())
}

/// `<campaign><suffix>` within 63 characters: a long campaign name is shortened and
/// gets a hash of the whole name.
fn child_name(campaign: &str, suffix: &str) -> String {
    let room = 63 - suffix.len();
    let base = if campaign.len() <= room {
        campaign.to_owned()
    } else {
        let h = campaign.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let keep = room - 7;
        format!(
            "{}-{:06x}",
            campaign[..keep].trim_end_matches('-'),
            h & 0xff_ffff
        )
    };
    format!("{base}{suffix}")
}

/// The name of an attempt's Job: `<campaign>-r<index>-a<attempt>` (a campaign name is
/// shortened so that the name stays within 63 characters).
pub fn job_name(campaign: &str, index: u32, attempt: u32) -> String {
    child_name(campaign, &format!("-r{index:04}-a{attempt}"))
}

/// The plan index of a run (0 when it is not in the plan).
fn plan_index(plan: &Plan, run_id: &str) -> u32 {
    plan.runs
        .iter()
        .find(|r| r.run_id == run_id)
        .map_or(0, |r| r.index)
}

/// The block of the run at plan index `index`.
fn block_of(plan: &Plan, index: u32) -> u32 {
    plan.runs.get(index as usize).map_or(0, |r| r.block)
}

/// The name of a mate's Job beside the lead run `lead` (plan index) in its attempt
/// `attempt`: `<campaign>-r<index>-w<lead>a<attempt>` (within 63 characters).
pub fn mate_job_name(campaign: &str, index: u32, lead: u32, attempt: u32) -> String {
    child_name(campaign, &format!("-r{index:04}-w{lead:04}a{attempt}"))
}

/// The name of the analysis Job: `<campaign>-analysis` (within 63 characters).
pub fn analysis_job_name(campaign: &str) -> String {
    child_name(campaign, "-analysis")
}

/// The pre-flight probe Job's name (the testbed baselines, [`run::preflight`]).
pub fn probe_job_name(campaign: &str) -> String {
    child_name(campaign, "-probe")
}

pub use run::schedule::run_deadline;

fn deadlines(spec: &CampaignSpec) -> campaign::cluster::Deadlines {
    spec.deadlines.clone().unwrap_or_default()
}

/// The provisioning deadline (`deadlines.provisioning`, default 10 minutes): the
/// pre-flight probe Job's too.
pub fn provisioning_deadline(spec: &CampaignSpec) -> Duration {
    deadlines(spec).provisioning.0
}

/// The analysis deadline (`deadlines.analysis`, default 10 minutes).
pub fn analysis_deadline(spec: &CampaignSpec) -> Duration {
    deadlines(spec).analysis.0
}

/// The status conditions of a campaign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionType {
    /// Server, Secrets and results bucket ready.
    Provisioned,
    /// Runs in progress.
    Running,
    /// The analysis is done.
    Analyzed,
    /// Runs failed or were left out.
    Degraded,
    /// The campaign succeeded (`True`), failed (`False`) or goes on (`Unknown`).
    Ready,
    /// An external endpoint is plain `http://` (`True`; set only then): keys, data and
    /// signatures cross the network unencrypted.
    InsecureEndpoint,
}

impl ConditionType {
    /// The condition's `type`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Provisioned => "Provisioned",
            Self::Running => "Running",
            Self::Analyzed => "Analyzed",
            Self::Degraded => "Degraded",
            Self::Ready => "Ready",
            Self::InsecureEndpoint => "InsecureEndpoint",
        }
    }
}

/// A condition's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`.
    Unknown,
}

impl ConditionStatus {
    /// The condition's `status`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

/// The reason of a condition or an event: a fixed set, PascalCase on the API server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The campaign is registered (event).
    Accepted,
    /// The power calculation before the data says a primary comparison has too few
    /// blocks (warning event).
    Underpowered,
    /// Server, Secrets and results bucket ready.
    Provisioned,
    /// Provisioning in progress.
    Provisioning,
    /// A phase that has not begun.
    NotStarted,
    /// No run has failed.
    NoFailedRuns,
    /// The campaign goes on.
    InProgress,
    /// Running the plan.
    Running,
    /// The results bucket cannot be read.
    ResultsUnreachable,
    /// A run attempt started (event).
    RunStarted,
    /// A run has every process's files (event).
    RunCompleted,
    /// A run attempt failed and the run is tried again (event).
    RunRetried,
    /// A run failed every attempt and is given up (event).
    RunFailed,
    /// Runs failed every attempt.
    RunsFailed,
    /// Runs failed or were invalid and are left out of the analysis.
    RunsLeftOut,
    /// Every run is done.
    RunsComplete,
    /// The analysis is done.
    Analyzed,
    /// The campaign succeeded.
    Succeeded,
    /// The server, Secrets and Jobs were deleted after the TTL (event).
    CleanedUp,
    /// The recipient keys Secret (and MinIO with its credentials, when the results are
    /// elsewhere) were deleted after the secrets TTL (event).
    SecretsDeleted,
    /// The campaign was deleted and its children with it (event).
    Deleted,
    /// The spec is invalid.
    InvalidSpec,
    /// An object at one of the campaign's child names is not the campaign's.
    NameCollision,
    /// The results bucket holds more than the operator reads for a campaign.
    ResultsTooLarge,
    /// The tenant-input policy refuses a field of the campaign.
    PolicyRefused,
    /// An external endpoint is plain HTTP (a warning; the campaign goes on).
    PlainHttp,
    /// Provisioning passed its deadline.
    ProvisioningDeadlineExceeded,
    /// The analysis passed its deadline.
    AnalysisDeadlineExceeded,
    /// The analysis failed for want of valid data.
    AnalysisFailed,
    /// The pre-flight probe wrote the testbed baselines.
    BaselinesTaken,
    /// The pre-flight probe failed or ran out of time (a warning; the runs start).
    BaselinesNotTaken,
}

impl Reason {
    /// The reason as the API server shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "Accepted",
            Self::Underpowered => "Underpowered",
            Self::Provisioned => "Provisioned",
            Self::Provisioning => "Provisioning",
            Self::NotStarted => "NotStarted",
            Self::NoFailedRuns => "NoFailedRuns",
            Self::InProgress => "InProgress",
            Self::Running => "Running",
            Self::ResultsUnreachable => "ResultsUnreachable",
            Self::RunStarted => "RunStarted",
            Self::RunCompleted => "RunCompleted",
            Self::RunRetried => "RunRetried",
            Self::RunFailed => "RunFailed",
            Self::RunsFailed => "RunsFailed",
            Self::RunsLeftOut => "RunsLeftOut",
            Self::RunsComplete => "RunsComplete",
            Self::Analyzed => "Analyzed",
            Self::Succeeded => "Succeeded",
            Self::CleanedUp => "CleanedUp",
            Self::SecretsDeleted => "SecretsDeleted",
            Self::Deleted => "Deleted",
            Self::InvalidSpec => "InvalidSpec",
            Self::NameCollision => "NameCollision",
            Self::ResultsTooLarge => "ResultsTooLarge",
            Self::PolicyRefused => "PolicyRefused",
            Self::PlainHttp => "PlainHttp",
            Self::ProvisioningDeadlineExceeded => "ProvisioningDeadlineExceeded",
            Self::AnalysisDeadlineExceeded => "AnalysisDeadlineExceeded",
            Self::AnalysisFailed => "AnalysisFailed",
            Self::BaselinesTaken => "BaselinesTaken",
            Self::BaselinesNotTaken => "BaselinesNotTaken",
        }
    }

    /// The `outcome` label of `pqbench_operator_runs_total` an event with this reason
    /// counts under, if any.
    pub const fn run_outcome(self) -> Option<&'static str> {
        match self {
            Self::RunCompleted => Some("completed"),
            Self::RunRetried => Some("retried"),
            Self::RunFailed => Some("failed"),
            Self::Accepted
            | Self::Underpowered
            | Self::Provisioned
            | Self::Provisioning
            | Self::NotStarted
            | Self::NoFailedRuns
            | Self::InProgress
            | Self::Running
            | Self::ResultsUnreachable
            | Self::RunStarted
            | Self::RunsFailed
            | Self::RunsLeftOut
            | Self::RunsComplete
            | Self::Analyzed
            | Self::Succeeded
            | Self::CleanedUp
            | Self::SecretsDeleted
            | Self::Deleted
            | Self::InvalidSpec
            | Self::NameCollision
            | Self::ResultsTooLarge
            | Self::PolicyRefused
            | Self::PlainHttp
            | Self::ProvisioningDeadlineExceeded
            | Self::AnalysisDeadlineExceeded
            | Self::AnalysisFailed
            | Self::BaselinesTaken
            | Self::BaselinesNotTaken => None,
        }
    }
}

/// Sets a condition, keeping its transition time when its status does not change.
pub fn set_condition(
    conds: &mut Vec<Condition>,
    type_: ConditionType,
    status: ConditionStatus,
    reason: Reason,
    message: &str,
    generation: Option<i64>,
    now: SystemTime,
) {
    let (type_, status, reason) = (type_.as_str(), status.as_str(), reason.as_str());
    let time = Time(jiff::Timestamp::try_from(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH));
    if let Some(c) = conds.iter_mut().find(|c| c.type_ == type_) {
        if c.status != status {
            c.last_transition_time = time;
        }
        c.status = status.to_owned();
        reason.clone_into(&mut c.reason);
        message.clone_into(&mut c.message);
        c.observed_generation = generation;
        return;
    }
    conds.push(Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation: generation,
        last_transition_time: time,
    });
}

struct Step<'f, 'a> {
    f: &'f Facts<'a>,
    st: CampaignStatus,
    actions: Vec<Action>,
    requeue: Option<Duration>,
}

impl Step<'_, '_> {
    fn cond(
        &mut self,
        type_: ConditionType,
        status: ConditionStatus,
        reason: Reason,
        message: &str,
    ) {
        set_condition(
            &mut self.st.conditions,
            type_,
            status,
            reason,
            message,
            self.f.generation,
            self.f.now,
        );
    }

    fn event(&mut self, warning: bool, reason: Reason, note: String) {
        self.actions.push(Action::Event(Event {
            warning,
            reason,
            note,
        }));
    }

    fn enter(&mut self, phase: Phase) {
        self.st.phase = phase;
        self.st.phase_since = Some(rfc3339(self.f.now));
    }

    fn since(&self) -> SystemTime {
        parse_time(self.st.phase_since.as_deref()).unwrap_or(self.f.now)
    }

    fn past(&self, deadline: Duration) -> bool {
        self.f
            .now
            .duration_since(self.since())
            .is_ok_and(|d| d > deadline)
    }

    fn requeue(&mut self, d: Duration) {
        self.requeue = Some(self.requeue.map_or(d, |r| r.min(d)));
    }

    /// Ends the campaign as failed.
    fn fail(&mut self, reason: Reason, message: String) {
        self.enter(Phase::Failed);
        self.st.finished_at = Some(rfc3339(self.f.now));
        self.st.message = Some(message.clone());
        self.st.current = None;
        self.cond(
            ConditionType::Ready,
            ConditionStatus::False,
            reason,
            &message,
        );
        self.cond(
            ConditionType::Running,
            ConditionStatus::False,
            reason,
            &message,
        );
        if !self.f.spec.keep_on_failure {
            self.actions.push(Action::StopJobs);
        }
        self.event(true, reason, message);
        self.ttl();
    }

    fn progress(&mut self, p: schedule::Progress, current: Option<&CurrentRun>) {
        let eta = (self.st.phase == Phase::Running)
            .then_some(p.eta)
            .flatten()
            .map(rfc3339);
        self.st.progress = Some(Progress {
            done: p.done,
            total: p.total,
            summary: format!("{}/{}", p.done, p.total),
            current_run: current.map(|c| c.run_id.clone()),
            attempt: current.map(|c| c.attempt),
            eta,
        });
    }

    fn pending(&mut self) {
        let f = self.f;
        if let Some(why) = &f.invalid {
            self.fail(
                Reason::InvalidSpec,
                format!("the campaign is invalid: {why}"),
            );
            return;
        }
        self.st.prereg_hash = Some(f.plan.prereg_hash.clone());
        self.st.interop.clone_from(&f.interop);
        self.st.registered_at = Some(humantime::format_rfc3339_seconds(f.created).to_string());
        self.st.results = Some(f.results.clone());
        self.enter(Phase::Provisioning);
        let total = u32::try_from(f.plan.runs.len()).unwrap_or(u32::MAX);
        self.progress(
            schedule::Progress {
                done: 0,
                total,
                eta: None,
            },
            None,
        );
        self.st.message = Some("provisioning the server, Secrets and results bucket".into());
        self.cond(
            ConditionType::Provisioned,
            ConditionStatus::False,
            Reason::Provisioning,
            "creating the server, Secrets and results bucket",
        );
        self.cond(
            ConditionType::Running,
            ConditionStatus::False,
            Reason::NotStarted,
            "runs start once provisioned",
        );
        self.cond(
            ConditionType::Analyzed,
            ConditionStatus::False,
            Reason::NotStarted,
            "the analysis follows the runs",
        );
        self.cond(
            ConditionType::Degraded,
            ConditionStatus::False,
            Reason::NoFailedRuns,
            "no run has failed",
        );
        self.cond(
            ConditionType::Ready,
            ConditionStatus::Unknown,
            Reason::InProgress,
            "the campaign is in progress",
        );
        self.event(
            false,
            Reason::Accepted,
            format!(
                "pre-registration {} ({} runs in {} blocks){}",
                &f.plan.prereg_hash[..f.plan.prereg_hash.len().min(16)],
                f.plan.runs.len(),
                f.plan.blocks,
                f.spec.interleave.map_or_else(String::new, |i| format!(
                    "; the arms of each block run at once in {} turns, the pods of its runs on one \
                     node per process index",
                    campaign::units::format_duration(i.slice.0)
                ))
            ),
        );
        self.warn_underpowered();
        self.warn_plain_http();
        self.actions.push(Action::Provision);
        self.requeue(Duration::from_secs(2));
    }

    /// External endpoints given as plain `http://`: accepted (a lab's MinIO may have no
    /// TLS), but said in a condition and a warning event, since credentials, keys and
    /// signed requests then cross the network in the clear.
    fn warn_plain_http(&mut self) {
        let plain = crate::deploy::plain_http_endpoints(self.f.spec);
        if plain.is_empty() {
            return;
        }
        let message = format!(
            "plain HTTP to an external endpoint: {}; requests, object data and the SigV4 signatures cross the network unencrypted (use https://)",
            plain
                .iter()
                .map(|(field, url)| format!("{field} {url}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        self.cond(
            ConditionType::InsecureEndpoint,
            ConditionStatus::True,
            Reason::PlainHttp,
            &message,
        );
        self.event(true, Reason::PlainHttp, message);
    }

    /// The power calculation before the data from `analysis.assumedSd` (a pilot directory
    /// is not readable here): one warning event naming the underpowered comparisons.
    fn warn_underpowered(&mut self) {
        let f = self.f;
        let low: Vec<String> = campaign::design::power(f.plan, f.spec, &Default::default())
            .into_iter()
            .filter(|p| p.underpowered)
            .map(|p| {
                format!(
                    "{} · {} vs {} ({} blocks planned, {} needed)",
                    p.cell, p.arm, p.against, p.planned, p.needed
                )
            })
            .collect();
        if low.is_empty() {
            return;
        }
        let pilot = if f.spec.analysis.pilot.is_some() {
            "; analysis.pilot is a local directory the operator cannot read, so assumedSd alone was used"
        } else {
            ""
        };
        self.event(
            true,
            Reason::Underpowered,
            format!(
                "at assumedSd {} and power {}, {} primary comparison(s) are underpowered: {}{pilot}",
                f.spec.analysis.assumed_sd.unwrap_or_default(),
                f.spec.analysis.power,
                low.len(),
                low.join(", ")
            ),
        );
    }

    fn provisioning(&mut self) {
        let f = self.f;
        let limit = deadlines(f.spec).provisioning.0;
        let waiting = if !f.server_ready {
            Some(format!(
                "waiting for the server: {}",
                f.server_detail.as_deref().unwrap_or("not ready")
            ))
        } else {
            match &f.bucket {
                Err(e) => Some(format!("the results bucket cannot be read: {e}")),
                Ok(b) if !b.exists || !f.server_bucket => {
                    self.actions.push(Action::CreateBuckets);
                    Some("creating the buckets".into())
                }
                Ok(_) => None,
            }
        };
        match waiting {
            Some(why) if self.past(limit) => {
                self.actions.clear();
                self.fail(
                    Reason::ProvisioningDeadlineExceeded,
                    format!(
                        "not provisioned within {}: {why}",
                        campaign::units::format_duration(limit)
                    ),
                );
            }
            Some(why) => {
                self.actions.insert(0, Action::Provision);
                self.cond(
                    ConditionType::Provisioned,
                    ConditionStatus::False,
                    Reason::Provisioning,
                    &why,
                );
                self.st.message = Some(why);
                self.requeue(Duration::from_secs(5));
            }
            None if self.probing(limit) => {}
            None => {
                self.actions.push(Action::Provision);
                self.cond(
                    ConditionType::Provisioned,
                    ConditionStatus::True,
                    Reason::Provisioned,
                    "server, Secrets and results bucket ready",
                );
                self.cond(
                    ConditionType::Running,
                    ConditionStatus::True,
                    Reason::Running,
                    "running the plan",
                );
                self.event(
                    false,
                    Reason::Provisioned,
                    "server, Secrets and results bucket ready".into(),
                );
                self.enter(Phase::Running);
                self.running();
            }
        }
    }

    /// The pre-flight probe, once everything else is provisioned (`testbed.baselines`):
    /// its Job is started and waited for, within the provisioning deadline. Whether it
    /// is still going. Its failure or lateness is a warning and the runs start: the report
    /// then judges the CPUs alone and says why.
    fn probing(&mut self, limit: Duration) -> bool {
        let f = self.f;
        if !f.spec.testbed.baselines {
            return false;
        }
        let without = "the runs start without testbed baselines (the report judges the CPUs alone)";
        let late = format!(
            "the pre-flight probe did not finish within the provisioning deadline ({}): {without}",
            campaign::units::format_duration(limit)
        );
        match &f.job {
            JobState::Absent | JobState::Active if self.past(limit) => {
                if f.job == JobState::Active {
                    self.actions.push(Action::DeleteJob {
                        name: probe_job_name(&f.plan.campaign),
                    });
                }
                self.event(true, Reason::BaselinesNotTaken, late);
                false
            }
            JobState::Absent | JobState::Active => {
                if f.job == JobState::Absent {
                    self.actions.push(Action::StartProbe);
                }
                self.actions.insert(0, Action::Provision);
                let why = "taking the testbed baselines (the pre-flight probe Job: iperf3, ping; \
                           fio ran beside the server)";
                self.cond(
                    ConditionType::Provisioned,
                    ConditionStatus::False,
                    Reason::Provisioning,
                    why,
                );
                self.st.message = Some(why.into());
                self.requeue(Duration::from_secs(5));
                true
            }
            JobState::Failed(why) => {
                self.event(
                    true,
                    Reason::BaselinesNotTaken,
                    format!("the pre-flight probe Job failed ({why}): {without}"),
                );
                false
            }
            JobState::Succeeded => {
                match &f.baselines {
                    Some(Ok(words)) => self.event(
                        false,
                        Reason::BaselinesTaken,
                        format!(
                            "testbed baselines taken ({} under the results prefix): {words}",
                            run::preflight::BASELINES
                        ),
                    ),
                    Some(Err(why)) => self.event(
                        true,
                        Reason::BaselinesNotTaken,
                        format!("the pre-flight probe Job succeeded, but {why}: {without}"),
                    ),
                    None => self.event(
                        false,
                        Reason::BaselinesTaken,
                        format!(
                            "testbed baselines taken ({} under the results prefix)",
                            run::preflight::BASELINES
                        ),
                    ),
                }
                false
            }
            // A foreign Job at the probe's name: the campaign fails on the collision.
            JobState::NotLooked => false,
        }
    }

    fn running(&mut self) {
        let f = self.f;
        let b = match &f.bucket {
            Ok(b) => b,
            Err(e) => {
                // The runs cannot be judged without the bucket; a run in progress still
                // meets its deadline on a later pass.
                self.st.message = Some(format!("the results bucket cannot be read: {e}"));
                self.cond(
                    ConditionType::Running,
                    ConditionStatus::True,
                    Reason::ResultsUnreachable,
                    &format!("the results bucket cannot be read: {e}"),
                );
                self.requeue(Duration::from_secs(10));
                return;
            }
        };
        let policy = Policy::of(f.spec, f.plan);
        let given_up: Vec<GivenUp> = self
            .st
            .failed_runs
            .iter()
            .map(|r| GivenUp {
                run_id: r.run_id.clone(),
                attempts: r.attempts,
                reason: r.reason.clone(),
            })
            .collect();
        // What became of a run of the current attempt, from its Job and the bucket.
        let state_of = |run_id: &str, job: &str, js: &JobState| {
            if let Some(why) = b.invalid.get(run_id)
                && b.completed.contains(run_id)
            {
                return AttemptState::Invalid(why.clone());
            }
            match js {
                JobState::Failed(why) if !b.completed.contains(run_id) => {
                    AttemptState::Ended(format!("Job {job} failed: {why}"))
                }
                JobState::Succeeded if !b.completed.contains(run_id) => {
                    AttemptState::Ended(format!(
                        "Job {job} succeeded but not every process's files are in the results bucket"
                    ))
                }
                _ => AttemptState::Going,
            }
        };
        let attempt = self.st.current.as_ref().map(|c| {
            let a = Attempt {
                run_id: c.run_id.clone(),
                index: c.index,
                attempt: c.attempt,
                started: parse_time(Some(&c.created_at)).unwrap_or(f.now),
                mates: c
                    .mates
                    .iter()
                    .map(|m| schedule::Mate {
                        run_id: m.run_id.clone(),
                        index: m.index,
                    })
                    .collect(),
            };
            (a, state_of(&c.run_id, &c.job, &f.job))
        });
        let mate_states: BTreeMap<String, AttemptState> = self
            .st
            .current
            .iter()
            .flat_map(|c| &c.mates)
            .map(|m| {
                let js = f.mate_jobs.get(&m.job).unwrap_or(&JobState::NotLooked);
                (m.run_id.clone(), state_of(&m.run_id, &m.job, js))
            })
            .collect();
        // Every run settled in this phase was settled by this campaign's Running phase.
        let settled = schedule::settled(f.plan, &b.completed, &given_up);
        let d = schedule::decide(
            f.plan,
            &policy,
            &Observed {
                now: f.now,
                complete: &b.completed,
                given_up: &given_up,
                current: attempt.as_ref().map(|(a, s)| (a, s)),
                mates: &mate_states,
                since: self.since(),
                finished_since: settled,
            },
        );
        let lead_state = attempt.map(|(_, s)| s);
        if let Some(cur) = self.st.current.clone() {
            for run_id in &d.completed {
                let attempt = if *run_id == cur.run_id {
                    cur.attempt
                } else {
                    0
                };
                let beside = if attempt == 0 {
                    format!(" (beside run {})", cur.run_id)
                } else {
                    format!(" (attempt {attempt})")
                };
                self.event(
                    false,
                    Reason::RunCompleted,
                    format!("run {run_id}{beside} has its files in the results bucket"),
                );
            }
            for m in &d.mates {
                let job = cur
                    .mates
                    .iter()
                    .find(|x| x.run_id == m.run_id)
                    .map(|x| x.job.clone());
                let why = match &m.fate {
                    schedule::MateFate::Complete => continue,
                    schedule::MateFate::Invalid(why) => {
                        self.actions.push(Action::KeepAttempt {
                            run_id: m.run_id.clone(),
                            attempt: 0,
                        });
                        format!("invalid: {why}; its objects kept as attempt a0")
                    }
                    schedule::MateFate::Failed(why) => {
                        self.actions.push(Action::SetAside {
                            run_id: m.run_id.clone(),
                        });
                        why.clone()
                    }
                };
                if let Some(name) = job {
                    self.actions.push(Action::DeleteJob { name });
                }
                self.event(
                    true,
                    Reason::RunRetried,
                    format!(
                        "run {} (in the turns of run {}) failed ({why}); it runs again",
                        m.run_id, cur.run_id
                    ),
                );
            }
            if !d.completed.is_empty() || !d.mates.is_empty() {
                self.st.current = None;
            }
        }
        let processes = f.spec.clients.processes;
        match d.next {
            Next::Done => {
                self.progress(d.progress, None);
                self.st.current = None;
                self.cond(
                    ConditionType::Running,
                    ConditionStatus::False,
                    Reason::RunsComplete,
                    "every run is done",
                );
                self.event(
                    false,
                    Reason::RunsComplete,
                    format!("{} runs done; analysing", d.progress.done),
                );
                self.enter(Phase::Analyzing);
                self.st.message = Some("analysing".into());
                self.analyzing();
            }
            Next::Start {
                run_id,
                index,
                mates,
            } => {
                let c = self.attempt_of(run_id, index, 1, &mates, f.now);
                let with = if c.mates.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", in turns with {} ({})",
                        c.mates
                            .iter()
                            .map(|m| m.run_id.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        c.mates
                            .iter()
                            .map(|m| m.job.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                // What a cut-off attempt of these runs left is set aside before their Jobs
                // are made (once: a Job that exists is not made again).
                self.start_jobs(&c);
                self.event(
                    false,
                    Reason::RunStarted,
                    format!(
                        "run {} ({}/{}) in Job {}{with}",
                        c.run_id,
                        index + 1,
                        f.plan.runs.len(),
                        c.job
                    ),
                );
                self.st.message = Some(format!("run {} starting", c.run_id));
                self.progress(d.progress, Some(&c));
                self.st.current = Some(c);
                self.requeue(Duration::from_secs(2));
            }
            Next::Retry {
                run_id,
                index,
                attempt,
                why,
                keep,
                mates,
            } => {
                if keep {
                    self.actions.push(Action::KeepAttempt {
                        run_id: run_id.clone(),
                        attempt: attempt - 1,
                    });
                } else {
                    self.actions.push(Action::SetAside {
                        run_id: run_id.clone(),
                    });
                }
                self.actions.push(Action::DeleteJob {
                    name: job_name(&f.plan.campaign, index, attempt - 1),
                });
                self.event(
                    true,
                    Reason::RunRetried,
                    format!(
                        "run {run_id} attempt {} failed ({why}); attempt {attempt} of {}",
                        attempt - 1,
                        policy.retries + 1
                    ),
                );
                // The next attempt's Jobs are made once the backoff has passed
                // (`Next::Wait` below); its deadline counts from then.
                let delay = schedule::retry_delay(attempt);
                let c = self.attempt_of(run_id, index, attempt, &mates, f.now + delay);
                self.st.message = Some(format!(
                    "run {} attempt {attempt} starts in {}",
                    c.run_id,
                    campaign::units::format_duration(delay)
                ));
                self.progress(d.progress, Some(&c));
                self.st.current = Some(c);
                self.requeue(delay);
            }
            Next::GiveUp(g) => {
                self.actions.push(Action::DeleteJob {
                    name: job_name(&f.plan.campaign, plan_index(f.plan, &g.run_id), g.attempts),
                });
                self.actions.push(Action::SetAside {
                    run_id: g.run_id.clone(),
                });
                let reason = format!(
                    "{} (attempt {} of {})",
                    g.reason,
                    g.attempts,
                    policy.retries + 1
                );
                self.st.failed_runs.push(FailedRun {
                    run_id: g.run_id.clone(),
                    attempts: g.attempts,
                    reason: g.reason.clone(),
                });
                let n = self.st.failed_runs.len();
                self.cond(
                    ConditionType::Degraded,
                    ConditionStatus::True,
                    Reason::RunsFailed,
                    &format!("{n} run(s) failed every attempt; the analysis leaves them out"),
                );
                self.event(
                    true,
                    Reason::RunFailed,
                    format!("run {}: {reason}; going on without it", g.run_id),
                );
                self.st.current = None;
                self.progress(d.progress, None);
                // The next run starts on the next pass.
                self.requeue(Duration::from_millis(200));
            }
            Next::Wait => {
                let Some(mut cur) = self.st.current.clone() else {
                    return;
                };
                let due = parse_time(Some(&cur.created_at)).unwrap_or(f.now);
                if f.now < due {
                    // A retry waiting out its backoff.
                    self.progress(d.progress, Some(&cur));
                    self.requeue(due.duration_since(f.now).unwrap_or_default());
                    return;
                }
                if f.job == JobState::Absent
                    || cur
                        .mates
                        .iter()
                        .any(|m| f.mate_jobs.get(&m.job) == Some(&JobState::Absent))
                {
                    // Not made yet (a retry after its backoff), deleted behind our back, or
                    // the create did not happen: apply them (a Job that exists is kept).
                    self.start_jobs(&cur);
                }
                // One start instant for every run of the attempt, once every pod of every
                // one of them is ready; a run that already failed is left out (as locally:
                // the others go on without it, and it runs again later).
                let failed =
                    |run_id: &str| match lead_state.as_ref().filter(|_| run_id == cur.run_id) {
                        Some(s) => matches!(s, AttemptState::Ended(_)),
                        None => matches!(mate_states.get(run_id), Some(AttemptState::Ended(_))),
                    };
                let runs: Vec<&str> = std::iter::once(cur.run_id.as_str())
                    .chain(cur.mates.iter().map(|m| m.run_id.as_str()))
                    .filter(|r| !failed(r))
                    .collect();
                let expected = processes * u32::try_from(runs.len()).unwrap_or(1);
                let ready: u32 = runs
                    .iter()
                    .map(|r| b.ready.get(*r).copied().unwrap_or(0))
                    .sum();
                // An instant already chosen (a restart between writing the gates) stands:
                // every run of the attempt starts at the one instant.
                let at = cur.start_at.clone().or_else(|| {
                    schedule::start_at(ready, expected, f.now, START_LEAD).map(rfc3339)
                });
                if let Some(at) = at {
                    for r in runs.iter().filter(|r| !b.started.contains(**r)) {
                        self.actions.push(Action::OpenGate {
                            run_id: (*r).to_owned(),
                            at: at.clone(),
                        });
                    }
                    cur.start_at = Some(at);
                }
                let what = if cur.mates.is_empty() {
                    format!("run {}", cur.run_id)
                } else {
                    format!(
                        "block {} (run {} and {} mates)",
                        block_of(f.plan, cur.index),
                        cur.run_id,
                        cur.mates.len()
                    )
                };
                self.st.message = Some(match (&cur.start_at, ready) {
                    (Some(at), _) => format!("{what} measuring (started {at})"),
                    (None, r) => format!("{what} preparing: {r}/{expected} pods ready"),
                });
                self.progress(d.progress, Some(&cur));
                self.st.current = Some(cur);
                self.requeue(Duration::from_secs(2));
            }
        }
    }

    /// The record of an attempt of run `index` and its mates, due at `at`.
    fn attempt_of(
        &self,
        run_id: String,
        index: u32,
        attempt: u32,
        mates: &[schedule::Mate],
        at: SystemTime,
    ) -> CurrentRun {
        let campaign = &self.f.plan.campaign;
        CurrentRun {
            run_id,
            index,
            attempt,
            job: job_name(campaign, index, attempt),
            created_at: rfc3339(at),
            start_at: None,
            mates: mates
                .iter()
                .map(|m| MateRun {
                    run_id: m.run_id.clone(),
                    index: m.index,
                    job: mate_job_name(campaign, m.index, index, attempt),
                })
                .collect(),
        }
    }

    /// Applies the Jobs of an attempt: its run's and its mates' (placed beside the lead's
    /// pods).
    fn start_jobs(&mut self, c: &CurrentRun) {
        let turns_with = (!c.mates.is_empty()).then(|| c.job.clone());
        self.actions.push(Action::StartJob {
            index: c.index,
            attempt: c.attempt,
            name: c.job.clone(),
            turns_with: turns_with.clone(),
        });
        for m in &c.mates {
            self.actions.push(Action::StartJob {
                index: m.index,
                attempt: 0,
                name: m.job.clone(),
                turns_with: turns_with.clone(),
            });
        }
    }

    fn analyzing(&mut self) {
        let f = self.f;
        let limit = deadlines(f.spec).analysis.0;
        if self.past(limit) {
            self.fail(
                Reason::AnalysisDeadlineExceeded,
                format!(
                    "the analysis did not finish within {}",
                    campaign::units::format_duration(limit)
                ),
            );
            return;
        }
        let job = analysis_job_name(&f.plan.campaign);
        // A failed attempt: why, for the message (the Job is deleted and made again).
        let failed = match (&f.outcome, &f.job) {
            (
                Some(Ok(AnalysisOutcome::Analyzed {
                    verdicts,
                    excluded,
                    deviations,
                    per_request,
                    format_ratios,
                    digests,
                    kem_times,
                    findings,
                })),
                _,
            ) => {
                self.st.key_establishment.clone_from(kem_times);
                self.st.findings.clone_from(findings);
                self.st.per_request.clone_from(per_request);
                self.st.format_ratios.clone_from(format_ratios);
                self.st.digests.clone_from(digests);
                self.analyzed(verdicts, excluded, *deviations);
                return;
            }
            (
                Some(Ok(AnalysisOutcome::Failed {
                    reason,
                    fatal: true,
                })),
                _,
            ) => {
                self.cond(
                    ConditionType::Analyzed,
                    ConditionStatus::False,
                    Reason::AnalysisFailed,
                    reason,
                );
                self.fail(
                    Reason::AnalysisFailed,
                    format!("the analysis failed: {reason}"),
                );
                return;
            }
            (Some(Err(e)), _) => {
                // The store, not the analysis: look again, the Job keeps going.
                self.st.message = Some(format!("cannot read the analysis outcome: {e}"));
                self.requeue(Duration::from_secs(15));
                return;
            }
            (_, JobState::Absent) => {
                self.actions.push(Action::StartAnalysis);
                self.st.message = Some(format!("analysing (Job {job})"));
                self.requeue(Duration::from_secs(5));
                return;
            }
            (None, JobState::NotLooked) => {
                // Just entered from Running: the next pass looks at the Job.
                self.requeue(Duration::from_secs(1));
                return;
            }
            (Some(Ok(AnalysisOutcome::Failed { reason, .. })), _) => Some(reason.clone()),
            (None, JobState::Failed(why)) => Some(format!("Job {job} failed: {why}")),
            (None, JobState::Succeeded) => Some(format!("Job {job} ended without an outcome")),
            (None, JobState::Active) => None,
        };
        match failed {
            Some(why) => {
                self.actions.push(Action::DeleteJob { name: job });
                self.st.message = Some(format!("the analysis failed, trying again: {why}"));
                self.requeue(Duration::from_secs(15));
            }
            None => {
                self.st.message = Some(format!("analysing (Job {job})"));
                self.requeue(Duration::from_secs(10));
            }
        }
    }

    /// Succeeded, verdicts in status.
    fn analyzed(&mut self, verdicts: &[VerdictRow], excluded: &[LeftOut], deviations: u32) {
        let f = self.f;
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for v in verdicts {
            *counts
                .entry(v.verdict.as_deref().unwrap_or("None"))
                .or_default() += 1;
        }
        let summary = counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        let summary = if summary.is_empty() {
            "no comparison".to_owned()
        } else {
            summary
        };
        self.st.verdicts = verdicts.to_vec();
        self.st.verdict_summary = Some(summary.clone());
        self.st.deviations = Some(deviations);
        let where_ = &f.results;
        let note = format!(
            "{summary}; report at s3://{}/{}report.md{}",
            where_.bucket,
            where_.prefix,
            if excluded.is_empty() {
                String::new()
            } else {
                format!("; {} invalid run(s) left out", excluded.len())
            }
        );
        let note = if deviations == 0 {
            note
        } else {
            format!("{note}; {deviations} deviation(s) from the plan, listed in report.md")
        };
        if !excluded.is_empty() {
            let n = excluded.len() + self.st.failed_runs.len();
            self.cond(
                ConditionType::Degraded,
                ConditionStatus::True,
                Reason::RunsLeftOut,
                &format!("{n} run(s) failed or were invalid and are left out of the analysis"),
            );
        }
        self.cond(
            ConditionType::Analyzed,
            ConditionStatus::True,
            Reason::Analyzed,
            &note,
        );
        self.cond(
            ConditionType::Ready,
            ConditionStatus::True,
            Reason::Succeeded,
            &note,
        );
        self.enter(Phase::Succeeded);
        self.st.finished_at = Some(rfc3339(f.now));
        self.st.message = Some(note.clone());
        self.event(false, Reason::Analyzed, note);
        self.ttl();
    }

    /// What goes after the end: everything after `ttlSecondsAfterFinished`; after the
    /// secrets TTL the recipient keys, and MinIO with its credentials when the results are
    /// not on it (on MinIO its credentials are what opens them); nothing of a failed
    /// campaign kept for inspection (`keepOnFailure`).
    fn ttl(&mut self) {
        let f = self.f;
        if self.st.phase == Phase::Failed && f.spec.keep_on_failure {
            return;
        }
        let end = parse_time(self.st.finished_at.as_deref()).unwrap_or(f.now);
        // Time left until `secs` after the end; `None` when due.
        let left = |secs: u32| {
            (end + Duration::from_secs(u64::from(secs)))
                .duration_since(f.now)
                .ok()
                .filter(|d| !d.is_zero())
        };
        if let Some(ttl) = f.spec.ttl_seconds_after_finished
            && self.st.cleaned_up_at.is_none()
        {
            match left(ttl) {
                Some(d) => self.requeue(d),
                None => {
                    self.actions.push(Action::CleanUp);
                    self.st.cleaned_up_at = Some(rfc3339(f.now));
                    self.event(
                        false,
                        Reason::CleanedUp,
                        format!("deleted the server, Secrets and Jobs {ttl}s after the end; the results bucket is kept"),
                    );
                }
            }
        }
        if f.secrets_ttl == 0
            || self.st.cleaned_up_at.is_some()
            || self.st.secrets_deleted_at.is_some()
        {
            return;
        }
        match left(f.secrets_ttl) {
            Some(d) => self.requeue(d),
            None => {
                let ttl = f.secrets_ttl;
                let minio = f.spec.server.external.is_none();
                let results_elsewhere = f
                    .spec
                    .results
                    .as_ref()
                    .is_some_and(|r| r.endpoint.is_some());
                let server = minio && results_elsewhere;
                self.actions.push(Action::DeleteSecrets { server });
                self.st.secrets_deleted_at = Some(rfc3339(f.now));
                let note = match (minio, server) {
                    (true, true) => format!(
                        "deleted the recipient keys, MinIO and its credentials Secret {ttl}s after the end (the results are in {}); the Jobs are kept",
                        f.results.endpoint
                    ),
                    (true, false) => format!(
                        "deleted the recipient keys Secret {ttl}s after the end; MinIO and its credentials are kept while the results live on it (ttlSecondsAfterFinished or deleting the campaign removes them)"
                    ),
                    (false, _) => format!("deleted the recipient keys Secret {ttl}s after the end"),
                };
                let note = if crate::deploy::has_remote_arms(f.spec) {
                    format!("{note}; the key service that held them went with them")
                } else {
                    note
                };
                self.event(false, Reason::SecretsDeleted, note);
            }
        }
    }
}

/// Decides the next status and actions from what was observed.
pub fn decide(f: &Facts<'_>) -> Decision {
    let mut st = f.status.clone();
    st.observed_generation = f.generation;
    for i in &f.images {
        if !st.images.contains(i) {
            st.images.push(i.clone());
        }
    }
    st.images.sort();
    let mut s = Step {
        f,
        st,
        actions: Vec::new(),
        requeue: None,
    };
    // What stops any campaign that is still going, before its phase is looked at.
    let stop = if matches!(s.st.phase, Phase::Succeeded | Phase::Failed) {
        None
    } else {
        stop_reason(f)
    };
    match (stop, s.st.phase) {
        (Some((reason, message)), _) => s.fail(reason, message),
        (None, Phase::Pending) => s.pending(),
        (None, Phase::Provisioning) => s.provisioning(),
        (None, Phase::Running) => s.running(),
        (None, Phase::Analyzing) => s.analyzing(),
        (None, Phase::Succeeded | Phase::Failed) => s.ttl(),
    }
    Decision {
        status: s.st,
        actions: s.actions,
        requeue: s.requeue,
    }
}

/// Why a campaign that is still going must stop whatever its phase: the policy refuses it,
/// someone else's object holds a child name, or its results bucket passed the bounds.
fn stop_reason(f: &Facts<'_>) -> Option<(Reason, String)> {
    if !f.refused.is_empty() {
        return Some((
            Reason::PolicyRefused,
            format!("the cluster's policy refuses {}", f.refused.join("; ")),
        ));
    }
    if !f.foreign.is_empty() {
        return Some((
            Reason::NameCollision,
            format!(
                "{}: the operator never adopts, changes or deletes an object the campaign \
                 did not create; rename the campaign or remove the object",
                f.foreign.join("; ")
            ),
        ));
    }
    f.exceeded.as_ref().map(|e| {
        (
            Reason::ResultsTooLarge,
            format!(
                "{e}: the results bucket holds more under this campaign's prefix than the \
                 operator reads (something other than its workers wrote there); the campaign \
                 stops"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// The table's scenarios: every transition, failure path and restart of [`decide`].
    struct Fixture {
        m: campaign::Manifest,
        plan: Plan,
        results: ResultsLocation,
        now: SystemTime,
    }

    impl Fixture {
        fn new() -> Self {
            let m = crate::fixtures::quick();
            let plan = campaign::design::plan(&m);
            Self {
                m,
                plan,
                results: ResultsLocation {
                    endpoint: "http://minio:9000".into(),
                    bucket: "pqbench-results".into(),
                    prefix: "ns/quick/uid/".into(),
                },
                now: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            }
        }

        fn facts<'a>(
            &'a self,
            st: &'a CampaignStatus,
            bucket: BucketView,
            job: JobState,
        ) -> Facts<'a> {
            Facts {
                now: self.now,
                created: self.now - Duration::from_secs(60),
                generation: Some(1),
                spec: &self.m.spec,
                plan: &self.plan,
                status: st,
                results: &self.results,
                server_ready: true,
                server_detail: None,
                server_bucket: true,
                bucket: Ok(bucket),
                job,
                mate_jobs: BTreeMap::new(),
                outcome: None,
                baselines: None,
                invalid: None,
                interop: None,
                foreign: Vec::new(),
                exceeded: None,
                refused: Vec::new(),
                images: Vec::new(),
                secrets_ttl: 0,
            }
        }

        fn completed(&self, n: usize) -> BucketView {
            BucketView {
                exists: true,
                completed: self.plan.runs[..n]
                    .iter()
                    .map(|r| r.run_id.clone())
                    .collect(),
                ..BucketView::default()
            }
        }

        fn running(&self, current: Option<(u32, u32)>) -> CampaignStatus {
            CampaignStatus {
                phase: Phase::Running,
                phase_since: Some(rfc3339(self.now - Duration::from_secs(30))),
                current: current.map(|(index, attempt)| CurrentRun {
                    run_id: self.plan.runs[index as usize].run_id.clone(),
                    index,
                    attempt,
                    job: job_name(&self.plan.campaign, index, attempt),
                    created_at: rfc3339(self.now - Duration::from_secs(10)),
                    start_at: None,
                    mates: Vec::new(),
                }),
                ..CampaignStatus::default()
            }
        }
    }

    /// Whether `d` applies the Job of attempt `attempt` of run `index`.
    fn starts_job(d: &Decision, index: u32, attempt: u32) -> bool {
        d.actions.iter().any(|a| {
            matches!(a, Action::StartJob { index: i, attempt: n, .. } if *i == index && *n == attempt)
        })
    }

    fn reasons(d: &Decision) -> Vec<&'static str> {
        d.actions
            .iter()
            .filter_map(|a| match a {
                Action::Event(e) => Some(e.reason.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The schedule's scenario table (`run::schedule::scenarios`), which `pqbench run` is
    /// driven through too, decided by the operator's whole step: each expected
    /// [`run::schedule::Next`] must become the matching actions and status.
    #[test]
    fn the_shared_schedule_scenarios_become_the_operator_s_actions() {
        use run::schedule::scenarios::{Expect, block_table, invalid_table, table};
        let steps = table()
            .into_iter()
            .chain(invalid_table())
            .chain(block_table());
        for step in steps {
            let mut fx = Fixture::new();
            if !step.interleave {
                fx.m.spec.interleave = None;
            }
            let fx = fx;
            let id = |i: u32| fx.plan.runs[i as usize].run_id.clone();
            let mut st = fx.running(None);
            st.current = step.current.map(|(index, attempt, ago, _)| CurrentRun {
                run_id: id(index),
                index,
                attempt,
                job: job_name(&fx.plan.campaign, index, attempt),
                created_at: rfc3339(fx.now - Duration::from_secs(ago)),
                start_at: None,
                mates: step
                    .mates
                    .iter()
                    .map(|&(m, _)| MateRun {
                        run_id: id(m),
                        index: m,
                        job: mate_job_name(&fx.plan.campaign, m, index, attempt),
                    })
                    .collect(),
            });
            st.failed_runs = step
                .given_up
                .iter()
                .map(|&(i, attempts)| FailedRun {
                    run_id: id(i),
                    attempts,
                    reason: "failed".into(),
                })
                .collect();
            let mut bucket = BucketView {
                exists: true,
                ..BucketView::default()
            };
            for r in &fx.plan.runs {
                let listed = step.complete.contains(&r.index);
                let rest = step.rest_complete && !step.given_up.iter().any(|&(i, _)| i == r.index);
                if listed || rest {
                    bucket.completed.insert(r.run_id.clone());
                }
            }
            // How a run's ending shows on a cluster: an invalid run's Job succeeded and its
            // summary says which checks failed; a failed one's Job failed.
            let mut job_of = |i: u32, ended: Option<&str>| match ended {
                Some(w) => match w.strip_prefix("invalid: ") {
                    Some(why) => {
                        bucket.invalid.insert(id(i), why.to_owned());
                        JobState::Succeeded
                    }
                    None => JobState::Failed(w.into()),
                },
                None => JobState::Active,
            };
            let job = match step.current {
                None => JobState::NotLooked,
                Some((i, _, _, ended)) => job_of(i, ended),
            };
            let mate_jobs: BTreeMap<String, JobState> = st
                .current
                .iter()
                .flat_map(|c| &c.mates)
                .zip(&step.mates)
                .map(|(m, &(i, ended))| (m.job.clone(), job_of(i, ended)))
                .collect();
            let d = decide(&Facts {
                mate_jobs,
                ..fx.facts(&st, bucket, job)
            });
            let starts: Vec<(u32, u32)> = d
                .actions
                .iter()
                .filter_map(|a| match a {
                    Action::StartJob { index, attempt, .. } => Some((*index, *attempt)),
                    _ => None,
                })
                .collect();
            let deletes = d
                .actions
                .iter()
                .filter(|a| matches!(a, Action::DeleteJob { .. }))
                .count();
            let kept: Vec<&Action> = d
                .actions
                .iter()
                .filter(|a| matches!(a, Action::KeepAttempt { .. } | Action::SetAside { .. }))
                .collect();
            let name = step.name;
            // Each mate that runs again has its Job deleted and its files kept or set aside.
            let again = step
                .settled
                .iter()
                .filter(|(_, f)| *f != run::schedule::scenarios::SettledAs::Complete)
                .count();
            for &(i, f) in &step.settled {
                let run_id = id(i);
                let acted = kept.iter().any(|a| match a {
                    Action::KeepAttempt { run_id: r, attempt } => *r == run_id && *attempt == 0,
                    Action::SetAside { run_id: r } => *r == run_id,
                    _ => false,
                });
                let want = f != run::schedule::scenarios::SettledAs::Complete;
                assert_eq!(acted, want, "{name}: mate {i} {f:?}: {kept:?}");
            }
            let with = |mates: &[u32]| {
                d.status
                    .current
                    .as_ref()
                    .is_some_and(|c| c.mates.iter().map(|m| m.index).collect::<Vec<_>>() == mates)
            };
            match step.expect {
                Expect::Start(i) | Expect::StartWith(i, _) => {
                    let mates = match &step.expect {
                        Expect::StartWith(_, m) => Some(m.clone()),
                        _ => None,
                    };
                    let mut want = vec![(i, 1)];
                    if let Some(m) = &mates {
                        want.extend(m.iter().map(|&m| (m, 0)));
                        assert!(with(m), "{name}: {:?}", d.status.current);
                    }
                    assert_eq!(starts, want, "{name}");
                    assert_eq!(deletes, again, "{name}");
                    assert_eq!(
                        d.status.current.as_ref().map(|c| c.index),
                        Some(i),
                        "{name}"
                    );
                }
                Expect::Retry(i, attempt, text) | Expect::RetryWith(i, attempt, text, _) => {
                    if let Expect::RetryWith(.., m) = &step.expect {
                        assert!(with(m), "{name}: {:?}", d.status.current);
                    }
                    // The next attempt is recorded now and its Jobs made after the backoff.
                    assert!(starts.is_empty(), "{name}");
                    let cur = d.status.current.as_ref().unwrap();
                    assert_eq!((cur.index, cur.attempt), (i, attempt), "{name}");
                    assert_eq!(
                        d.requeue,
                        Some(run::schedule::retry_delay(attempt)),
                        "{name}"
                    );
                    assert_eq!(deletes, 1 + again, "{name}");
                    // The failed attempt's objects: kept when it was invalid, else set aside.
                    let invalid = matches!(step.current, Some((_, _, _, Some(w))) if w.starts_with("invalid: "));
                    assert!(
                        kept.iter().any(|a| match a {
                            Action::KeepAttempt { run_id, attempt: n } =>
                                invalid && *run_id == id(i) && *n == attempt - 1,
                            Action::SetAside { run_id } => !invalid && *run_id == id(i),
                            _ => false,
                        }),
                        "{name}: {kept:?}"
                    );
                    assert!(reasons(&d).contains(&"RunRetried"), "{name}");
                    assert!(
                        d.actions
                            .iter()
                            .any(|a| matches!(a, Action::Event(e) if e.note.contains(text))),
                        "{name}: {:?}",
                        d.actions
                    );
                }
                Expect::GiveUp(i, attempts) => {
                    assert!(starts.is_empty(), "{name}");
                    assert_eq!(deletes, 1, "{name}");
                    let last = d.status.failed_runs.last().unwrap();
                    assert_eq!(last.run_id, id(i), "{name}");
                    assert_eq!(last.attempts, attempts, "{name}");
                    assert_eq!(d.status.current, None, "{name}");
                }
                Expect::Wait => {
                    assert!(starts.is_empty(), "{name}: {starts:?}");
                    assert_eq!(deletes, 0, "{name}");
                    assert!(kept.is_empty(), "{name}: {kept:?}");
                    assert_eq!(d.status.current, st.current, "{name}");
                }
                Expect::Done => assert_eq!(d.status.phase, Phase::Analyzing, "{name}"),
            }
        }
    }

    #[test]
    fn pending_records_the_preregistration_and_provisions() {
        let f = Fixture::new();
        let st = CampaignStatus::default();
        let d = decide(&f.facts(&st, BucketView::default(), JobState::NotLooked));
        assert_eq!(d.status.phase, Phase::Provisioning);
        assert_eq!(
            d.status.prereg_hash.as_deref(),
            Some(f.plan.prereg_hash.as_str())
        );
        assert_eq!(
            d.status.progress.as_ref().unwrap().summary,
            format!("0/{}", f.plan.runs.len())
        );
        assert!(d.actions.contains(&Action::Provision));
        assert_eq!(reasons(&d), ["Accepted"]);
        for t in ["Provisioned", "Running", "Analyzed", "Degraded", "Ready"] {
            assert!(d.status.conditions.iter().any(|c| c.type_ == t), "{t}");
        }
        // The quick campaign interleaves its arms, and the event says how.
        assert!(f.m.spec.interleave.is_some());
        assert!(
            d.actions.iter().any(|a| matches!(a, Action::Event(e)
            if e.note.contains("the arms of each block run at once in 100ms turns"))),
            "{:?}",
            d.actions
        );
    }

    /// Issue 20: the power calculation before the data, from `analysis.assumedSd`.
    #[test]
    fn an_underpowered_design_is_a_warning_event_at_acceptance() {
        let st = CampaignStatus::default();
        for (sd, warned) in [(0.10, true), (0.005, false)] {
            let mut f = Fixture::new();
            assert!(!f.m.spec.analysis.primary.is_empty());
            f.m.spec.analysis.assumed_sd = Some(sd);
            let d = decide(&f.facts(&st, BucketView::default(), JobState::NotLooked));
            let ev: Vec<&Event> = d
                .actions
                .iter()
                .filter_map(|a| match a {
                    Action::Event(e) if e.reason == Reason::Underpowered => Some(e),
                    _ => None,
                })
                .collect();
            assert_eq!(ev.len(), usize::from(warned), "sd {sd}: {ev:?}");
            if let Some(e) = ev.first() {
                assert!(e.warning && e.note.contains("blocks planned"), "{}", e.note);
            }
        }
    }

    #[test]
    fn an_invalid_spec_fails_at_once() {
        let f = Fixture::new();
        let st = CampaignStatus::default();
        let mut facts = f.facts(&st, BucketView::default(), JobState::NotLooked);
        facts.invalid = Some("server.external.credentialsSecret is required".into());
        let d = decide(&facts);
        assert_eq!(d.status.phase, Phase::Failed);
        assert_eq!(reasons(&d), ["InvalidSpec"]);
    }

    #[test]
    fn admission_records_the_interop_matrix_in_words() {
        let f = Fixture::new();
        let st = CampaignStatus::default();
        let mut facts = f.facts(&st, BucketView::default(), JobState::NotLooked);
        let matrix = campaign::design::interop(facts.spec).expect("the backends interoperate");
        facts.interop = Some(matrix.words());
        let d = decide(&facts);
        assert_eq!(d.status.phase, Phase::Provisioning);
        let words = d.status.interop.expect("interop in the status");
        assert!(words.contains("round trips interoperate"), "{words}");
        assert!(words.contains("aws-lc (aws-lc-rs 1.19.0"), "{words}");
    }

    #[test]
    fn an_object_of_someone_else_at_a_child_name_fails_the_campaign_in_any_active_phase() {
        let f = Fixture::new();
        for phase in [
            Phase::Pending,
            Phase::Provisioning,
            Phase::Running,
            Phase::Analyzing,
        ] {
            let st = CampaignStatus {
                phase,
                ..CampaignStatus::default()
            };
            let mut facts = f.facts(&st, BucketView::default(), JobState::NotLooked);
            facts.foreign = vec![
                "Secret quick-keys exists and is not owned by this campaign".into(),
                "StatefulSet quick-minio exists and is owned by Deployment db".into(),
            ];
            let d = decide(&facts);
            assert_eq!(d.status.phase, Phase::Failed, "{phase:?}");
            assert_eq!(reasons(&d), ["NameCollision"], "{phase:?}");
            let msg = d.status.message.unwrap();
            assert!(
                msg.contains("Secret quick-keys") && msg.contains("StatefulSet quick-minio"),
                "{msg}"
            );
            // Nothing is created; only the campaign's own Jobs are stopped.
            assert!(
                d.actions
                    .iter()
                    .all(|a| matches!(a, Action::StopJobs | Action::Event(_))),
                "{:?}",
                d.actions
            );
        }
        // A finished campaign stays as it ended.
        let st = CampaignStatus {
            phase: Phase::Succeeded,
            ..CampaignStatus::default()
        };
        let mut facts = f.facts(&st, BucketView::default(), JobState::NotLooked);
        facts.foreign = vec!["Secret quick-keys exists and is not owned by this campaign".into()];
        assert_eq!(decide(&facts).status.phase, Phase::Succeeded);
    }

    #[test]
    fn a_plain_http_external_endpoint_is_a_warning_condition_and_event() {
        let mut f = Fixture::new();
        f.m.spec.server.external = Some(campaign::cluster::ExternalServer {
            endpoint: "http://s3.lab.example:9000".into(),
            credentials_secret: Some("keys".into()),
            region: "us-east-1".into(),
            bucket: "b".into(),
        });
        f.m.spec.results = Some(campaign::cluster::Results {
            endpoint: Some("https://s3.example.com".into()),
            ..Default::default()
        });
        let st = CampaignStatus::default();
        let d = decide(&f.facts(&st, BucketView::default(), JobState::NotLooked));
        assert_eq!(d.status.phase, Phase::Provisioning);
        let c = d
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == "InsecureEndpoint")
            .unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "PlainHttp")
        );
        assert!(
            c.message
                .contains("spec.server.external.endpoint http://s3.lab.example:9000")
                && !c.message.contains("https://s3.example.com"),
            "{}",
            c.message
        );
        assert!(reasons(&d).contains(&"PlainHttp"));
        // The campaign's own MinIO (in-cluster, no TLS) is not an external endpoint.
        let f = Fixture::new();
        let d = decide(&f.facts(&st, BucketView::default(), JobState::NotLooked));
        assert!(!reasons(&d).contains(&"PlainHttp"));
        assert!(
            d.status
                .conditions
                .iter()
                .all(|c| c.type_ != "InsecureEndpoint")
        );
    }

    #[test]
    fn a_results_bucket_past_the_bounds_fails_the_campaign() {
        let f = Fixture::new();
        for phase in [Phase::Provisioning, Phase::Running, Phase::Analyzing] {
            let st = CampaignStatus {
                phase,
                ..CampaignStatus::default()
            };
            let mut facts = f.facts(&st, BucketView::default(), JobState::NotLooked);
            facts.exceeded = Some(
                "s3://pqbench-results/ns/quick/uid/analysis.json: an object of 9437184 bytes \
                 exceeds the limit of 8388608 bytes"
                    .into(),
            );
            let d = decide(&facts);
            assert_eq!(d.status.phase, Phase::Failed, "{phase:?}");
            assert_eq!(reasons(&d), ["ResultsTooLarge"], "{phase:?}");
            assert!(d.status.message.unwrap().contains("analysis.json"));
        }
    }

    #[test]
    fn provisioning_waits_creates_buckets_then_starts_the_first_run() {
        let f = Fixture::new();
        let st = CampaignStatus {
            phase: Phase::Provisioning,
            phase_since: Some(rfc3339(f.now - Duration::from_secs(5))),
            ..CampaignStatus::default()
        };
        let mut facts = f.facts(&st, BucketView::default(), JobState::NotLooked);
        facts.server_ready = false;
        facts.server_detail = Some("StatefulSet quick-minio: 0/1 pods ready".into());
        let d = decide(&facts);
        assert_eq!(d.status.phase, Phase::Provisioning);
        assert!(d.status.message.unwrap().contains("0/1 pods ready"));

        let d = decide(&f.facts(&st, BucketView::default(), JobState::NotLooked));
        assert!(d.actions.contains(&Action::CreateBuckets));
        assert_eq!(d.status.phase, Phase::Provisioning);

        let d = decide(&f.facts(&st, f.completed(0), JobState::NotLooked));
        assert_eq!(d.status.phase, Phase::Running);
        assert!(starts_job(&d, 0, 1));
        assert_eq!(reasons(&d), ["Provisioned", "RunStarted"]);
        assert_eq!(d.status.current.unwrap().attempt, 1);
    }

    #[test]
    fn the_pre_flight_probe_runs_once_provisioned_and_the_runs_start_after_it_either_way() {
        let f = Fixture::new();
        assert!(f.m.spec.testbed.baselines);
        let st = CampaignStatus {
            phase: Phase::Provisioning,
            phase_since: Some(rfc3339(f.now - Duration::from_secs(5))),
            ..CampaignStatus::default()
        };
        // Absent: made, and waited for.
        let d = decide(&f.facts(&st, f.completed(0), JobState::Absent));
        assert_eq!(d.status.phase, Phase::Provisioning);
        assert!(d.actions.contains(&Action::StartProbe));
        assert!(!starts_job(&d, 0, 1));
        assert!(d.status.message.unwrap().contains("testbed baselines"));
        assert_eq!(d.requeue, Some(Duration::from_secs(5)));
        // Going: waited for, not made again.
        let d = decide(&f.facts(&st, f.completed(0), JobState::Active));
        assert_eq!(d.status.phase, Phase::Provisioning);
        assert!(!d.actions.contains(&Action::StartProbe));
        // Done: the runs start, the baselines said taken, in words.
        let mut facts = f.facts(&st, f.completed(0), JobState::Succeeded);
        facts.baselines = Some(Ok("network 9.41 Gbit/s up, 9.38 Gbit/s down".into()));
        let d = decide(&facts);
        assert_eq!(d.status.phase, Phase::Running);
        assert!(starts_job(&d, 0, 1));
        assert_eq!(reasons(&d), ["BaselinesTaken", "Provisioned", "RunStarted"]);
        assert!(
            d.actions.iter().any(|a| matches!(a, Action::Event(e)
                if !e.warning && e.note.ends_with(": network 9.41 Gbit/s up, 9.38 Gbit/s down"))),
            "{:?}",
            d.actions
        );
        // A Job that succeeded without readable baselines: a warning, and the runs start.
        facts.baselines = Some(Err("it left no baselines.json".into()));
        let d = decide(&facts);
        assert_eq!(d.status.phase, Phase::Running);
        assert_eq!(
            reasons(&d),
            ["BaselinesNotTaken", "Provisioned", "RunStarted"]
        );
        // Failed: a warning naming why, and the runs start all the same.
        let d = decide(&f.facts(
            &st,
            f.completed(0),
            JobState::Failed("BackoffLimitExceeded".into()),
        ));
        assert_eq!(d.status.phase, Phase::Running);
        assert_eq!(
            reasons(&d),
            ["BaselinesNotTaken", "Provisioned", "RunStarted"]
        );
        let Some(Action::Event(e)) = d
            .actions
            .iter()
            .find(|a| matches!(a, Action::Event(e) if e.reason == Reason::BaselinesNotTaken))
        else {
            unreachable!("found above")
        };
        assert!(e.warning);
        assert!(e.note.contains("BackoffLimitExceeded"), "{}", e.note);
        assert!(e.note.contains("judges the CPUs alone"), "{}", e.note);
    }

    #[test]
    fn a_pre_flight_probe_past_the_provisioning_deadline_is_stopped_and_the_runs_start() {
        let f = Fixture::new();
        let st = CampaignStatus {
            phase: Phase::Provisioning,
            phase_since: Some(rfc3339(f.now - Duration::from_secs(601))),
            ..CampaignStatus::default()
        };
        let d = decide(&f.facts(&st, f.completed(0), JobState::Active));
        assert_eq!(d.status.phase, Phase::Running);
        assert!(d.actions.contains(&Action::DeleteJob {
            name: probe_job_name(&f.plan.campaign)
        }));
        assert_eq!(
            reasons(&d),
            ["BaselinesNotTaken", "Provisioned", "RunStarted"]
        );
        // Provisioning that took the whole deadline leaves no time for a probe: none made.
        let d = decide(&f.facts(&st, f.completed(0), JobState::Absent));
        assert_eq!(d.status.phase, Phase::Running);
        assert!(!d.actions.contains(&Action::StartProbe));
        assert_eq!(
            reasons(&d),
            ["BaselinesNotTaken", "Provisioned", "RunStarted"]
        );
    }

    #[test]
    fn without_testbed_baselines_no_probe_is_made() {
        let mut f = Fixture::new();
        f.m.spec.testbed.baselines = false;
        let st = CampaignStatus {
            phase: Phase::Provisioning,
            phase_since: Some(rfc3339(f.now - Duration::from_secs(5))),
            ..CampaignStatus::default()
        };
        let d = decide(&f.facts(&st, f.completed(0), JobState::Absent));
        assert_eq!(d.status.phase, Phase::Running);
        assert!(!d.actions.contains(&Action::StartProbe));
        assert_eq!(reasons(&d), ["Provisioned", "RunStarted"]);
    }

    #[test]
    fn provisioning_past_its_deadline_fails_and_says_why() {
        let f = Fixture::new();
        let st = CampaignStatus {
            phase: Phase::Provisioning,
            phase_since: Some(rfc3339(f.now - Duration::from_secs(601))),
            ..CampaignStatus::default()
        };
        let mut facts = f.facts(&st, BucketView::default(), JobState::NotLooked);
        facts.server_ready = false;
        facts.server_detail = Some("StatefulSet quick-minio: 0/1 pods ready".into());
        let d = decide(&facts);
        assert_eq!(d.status.phase, Phase::Failed);
        assert!(
            d.status
                .message
                .as_ref()
                .unwrap()
                .starts_with("not provisioned within")
        );
        assert!(d.actions.contains(&Action::StopJobs));
        assert_eq!(reasons(&d), ["ProvisioningDeadlineExceeded"]);
    }

    #[test]
    fn the_gate_opens_once_every_pod_is_ready() {
        let f = Fixture::new();
        let st = f.running(Some((0, 1)));
        let run = f.plan.runs[0].run_id.clone();
        let mut b = f.completed(0);
        b.ready.insert(run.clone(), f.m.spec.clients.processes);
        let d = decide(&f.facts(&st, b.clone(), JobState::Active));
        let at = rfc3339(f.now + START_LEAD);
        assert!(d.actions.contains(&Action::OpenGate {
            run_id: run.clone(),
            at: at.clone()
        }));
        assert_eq!(d.status.current.unwrap().start_at, Some(at));
        // Opened already: not again.
        b.started.insert(run);
        let d = decide(&f.facts(&st, b, JobState::Active));
        assert!(
            !d.actions
                .iter()
                .any(|a| matches!(a, Action::OpenGate { .. }))
        );
    }

    /// Interleaved: one instant for every run of the block, once all their pods are ready;
    /// a mate whose Job failed does not hold the others (as `pqbench run`: it is stopped
    /// alone and runs again later).
    #[test]
    fn a_block_opens_one_gate_for_its_runs_and_a_failed_mate_does_not_hold_it() {
        let f = Fixture::new();
        let mut st = f.running(Some((0, 1)));
        let id = |i: usize| f.plan.runs[i].run_id.clone();
        let mates: Vec<MateRun> = [1u32, 2]
            .iter()
            .map(|&i| MateRun {
                run_id: id(i as usize),
                index: i,
                job: mate_job_name(&f.plan.campaign, i, 0, 1),
            })
            .collect();
        st.current.as_mut().unwrap().mates.clone_from(&mates);
        let p = f.m.spec.clients.processes;
        let mut b = f.completed(0);
        b.ready.insert(id(0), p);
        b.ready.insert(id(2), p);
        let opened = |d: &Decision| -> Vec<(String, String)> {
            d.actions
                .iter()
                .filter_map(|a| match a {
                    Action::OpenGate { run_id, at } => Some((run_id.clone(), at.clone())),
                    _ => None,
                })
                .collect()
        };
        let jobs = |second: JobState| {
            BTreeMap::from([
                (mates[0].job.clone(), second),
                (mates[1].job.clone(), JobState::Active),
            ])
        };
        // The second run's pod is not ready yet: no gate.
        let d = decide(&Facts {
            mate_jobs: jobs(JobState::Active),
            ..f.facts(&st, b.clone(), JobState::Active)
        });
        assert!(opened(&d).is_empty(), "{:?}", d.actions);
        assert_eq!(d.status.current.as_ref().unwrap().mates, mates);
        // It failed: the other two start at one instant without it.
        let d = decide(&Facts {
            mate_jobs: jobs(JobState::Failed("BackoffLimitExceeded".into())),
            ..f.facts(&st, b.clone(), JobState::Active)
        });
        let at = rfc3339(f.now + START_LEAD);
        assert_eq!(opened(&d), [(id(0), at.clone()), (id(2), at)]);
        // Every run ready: all three at one instant.
        b.ready.insert(id(1), p);
        let d = decide(&Facts {
            mate_jobs: jobs(JobState::Active),
            ..f.facts(&st, b, JobState::Active)
        });
        let got = opened(&d);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.iter().all(|(_, t)| *t == got[0].1));
    }

    #[test]
    fn a_completed_run_moves_on_to_the_next() {
        let f = Fixture::new();
        let st = f.running(Some((0, 1)));
        let d = decide(&f.facts(&st, f.completed(1), JobState::Active));
        assert_eq!(reasons(&d), ["RunCompleted", "RunStarted"]);
        assert!(starts_job(&d, 1, 1));
        assert_eq!(d.status.progress.unwrap().done, 1);
    }

    #[test]
    fn a_failed_job_is_retried_then_recorded_and_the_campaign_goes_on() {
        let f = Fixture::new();
        let st = f.running(Some((0, 1)));
        let d = decide(&f.facts(
            &st,
            f.completed(0),
            JobState::Failed("BackoffLimitExceeded".into()),
        ));
        assert_eq!(reasons(&d), ["RunRetried"]);
        assert!(d.actions.contains(&Action::DeleteJob {
            name: job_name(&f.plan.campaign, 0, 1)
        }));
        // The second attempt waits out its backoff, then its Job is made.
        let starts = |d: &Decision| {
            d.actions.iter().any(|a| {
                matches!(
                    a,
                    Action::StartJob {
                        index: 0,
                        attempt: 2,
                        ..
                    }
                )
            })
        };
        assert!(!starts(&d));
        let backoff = run::schedule::retry_delay(2);
        assert_eq!(d.requeue, Some(backoff));
        let mut waiting = f.facts(&d.status, f.completed(0), JobState::Absent);
        waiting.now = f.now + backoff / 2;
        let d2 = decide(&waiting);
        assert!(!starts(&d2) && d2.status.current == d.status.current);
        let mut due = f.facts(&d.status, f.completed(0), JobState::Absent);
        due.now = f.now + backoff;
        assert!(starts(&decide(&due)));
        // The last attempt (1 + default 2 retries) fails: recorded, Degraded, next run.
        let st = f.running(Some((0, 3)));
        let d = decide(&f.facts(&st, f.completed(0), JobState::Failed("x".into())));
        assert_eq!(reasons(&d), ["RunFailed"]);
        assert_eq!(d.status.failed_runs.len(), 1);
        assert_eq!(d.status.failed_runs[0].attempts, 3);
        assert!(d.status.current.is_none());
        let degraded = d
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == "Degraded")
            .unwrap();
        assert_eq!(degraded.status, "True");
        let d2 = decide(&f.facts(&d.status, f.completed(0), JobState::NotLooked));
        assert!(starts_job(&d2, 1, 1));
    }

    #[test]
    fn a_run_past_its_deadline_or_done_without_files_fails_its_attempt() {
        let f = Fixture::new();
        let mut st = f.running(Some((0, 1)));
        st.current.as_mut().unwrap().created_at =
            rfc3339(f.now - run_deadline(&f.m.spec) - Duration::from_secs(1));
        let d = decide(&f.facts(&st, f.completed(0), JobState::Active));
        assert_eq!(reasons(&d), ["RunRetried"]);
        let st = f.running(Some((0, 1)));
        let d = decide(&f.facts(&st, f.completed(0), JobState::Succeeded));
        assert_eq!(reasons(&d), ["RunRetried"]);
    }

    #[test]
    fn a_restarted_operator_resumes_without_repeating_or_losing_a_run() {
        let f = Fixture::new();
        // Status says run 2 attempt 1 is in progress; its Job still exists.
        let st = f.running(Some((2, 1)));
        let d = decide(&f.facts(&st, f.completed(2), JobState::Active));
        assert!(
            !d.actions
                .iter()
                .any(|a| matches!(a, Action::StartJob { .. }))
        );
        assert_eq!(d.status.current.as_ref().unwrap().index, 2);
        // Its Job is gone (the create never happened): applied again, same attempt.
        let d = decide(&f.facts(&st, f.completed(2), JobState::Absent));
        assert!(starts_job(&d, 2, 1));
        // Status lagged behind the bucket (run 2 finished while the operator was down).
        let d = decide(&f.facts(&st, f.completed(3), JobState::Active));
        assert!(starts_job(&d, 3, 1));
        // The bucket cannot be read: nothing is decided about runs.
        let mut facts = f.facts(&st, f.completed(0), JobState::Active);
        facts.bucket = Err("connection refused".into());
        let d = decide(&facts);
        assert!(d.actions.is_empty());
        assert_eq!(d.status.phase, Phase::Running);
    }

    #[test]
    fn after_the_last_run_the_campaign_analyses_then_succeeds() {
        let f = Fixture::new();
        let st = f.running(None);
        let d = decide(&f.facts(&st, f.completed(f.plan.runs.len()), JobState::NotLooked));
        assert_eq!(d.status.phase, Phase::Analyzing);
        assert!(d.requeue.is_some_and(|r| r <= Duration::from_secs(1)));
        let analyzing = d.status;
        let at = |job: JobState, outcome: Option<Result<AnalysisOutcome, String>>| {
            let mut facts = f.facts(&analyzing, f.completed(f.plan.runs.len()), job);
            facts.outcome = outcome;
            decide(&facts)
        };
        let deletes = |d: &Decision| {
            d.actions
                .iter()
                .filter(|a| matches!(a, Action::DeleteJob { name } if name == &analysis_job_name(&f.plan.campaign)))
                .count()
        };
        // No Job yet: make it. Going: wait.
        assert_eq!(at(JobState::Absent, None).actions, [Action::StartAnalysis]);
        let going = at(JobState::Active, None);
        assert!(going.actions.is_empty());
        assert_eq!(going.status.phase, Phase::Analyzing);
        // The outcome: verdicts into status.
        let verdicts = vec![crate::api::VerdictRow {
            cell: "get-64KiB-c1".into(),
            mode: "ml-kem-768".into(),
            baseline: "x25519".into(),
            pairs: 3,
            ratio: Some("0.9950".into()),
            ci90: None,
            tost_p_adjusted: None,
            verdict: Some("Inconclusive".into()),
            flags: vec![],
        }];
        let done = at(
            JobState::Succeeded,
            Some(Ok(AnalysisOutcome::Analyzed {
                verdicts: verdicts.clone(),
                excluded: vec![],
                deviations: 2,
                per_request: vec![run::verdicts::PerRequestRow {
                    cell: "c".into(),
                    arm: "x25519".into(),
                    format: "v1".into(),
                    s3_requests: "2.000".into(),
                    cpu_per_request_us: "98.20".into(),
                }],
                format_ratios: vec![],
                digests: Some(run::verdicts::Digests {
                    data_sha256: "ab".repeat(32),
                    data_files: 12,
                    report_sha256: "cd".repeat(32),
                }),
                kem_times: vec![run::verdicts::KemTimeRow {
                    cell: "get-64KiB-c1".into(),
                    arm: "ml-kem-768".into(),
                    mean_us: "12.0".into(),
                    ci95_us: "11.6–12.4".into(),
                    share: "1.21 %".into(),
                }],
                findings: vec!["get-64KiB-c1: the x25519-padded control removed 17 %".into()],
            })),
        );
        assert_eq!(done.status.phase, Phase::Succeeded);
        assert_eq!(done.status.verdicts, verdicts);
        assert_eq!(done.status.deviations, Some(2));
        // What a platform team reads beside the verdicts: the per-request headline, and
        // the digests a report is checked against.
        assert_eq!(done.status.per_request[0].cpu_per_request_us, "98.20");
        assert_eq!(done.status.digests.as_ref().unwrap().data_files, 12);
        // And the study figures' headlines: key establishment per request, the findings.
        assert_eq!(done.status.key_establishment[0].ci95_us, "11.6–12.4");
        assert!(done.status.findings[0].contains("control removed 17 %"));
        assert_eq!(
            done.status.verdict_summary.as_deref(),
            Some("1 Inconclusive")
        );
        assert_eq!(reasons(&done), ["Analyzed"]);
        // No valid run: Failed. Anything else: the Job is made again.
        let failed = at(
            JobState::Failed("BackoffLimitExceeded".into()),
            Some(Ok(AnalysisOutcome::Failed {
                reason: "no valid run".into(),
                fatal: true,
            })),
        );
        assert_eq!(failed.status.phase, Phase::Failed);
        let again = at(
            JobState::Failed("BackoffLimitExceeded".into()),
            Some(Ok(AnalysisOutcome::Failed {
                reason: "store down".into(),
                fatal: false,
            })),
        );
        assert_eq!(again.status.phase, Phase::Analyzing);
        assert_eq!(deletes(&again), 1);
        assert!(
            again
                .status
                .message
                .as_deref()
                .unwrap()
                .contains("store down")
        );
        let crashed = at(JobState::Failed("OOMKilled".into()), None);
        assert_eq!(deletes(&crashed), 1);
        let silent = at(JobState::Succeeded, None);
        assert_eq!(deletes(&silent), 1);
        // An unreadable outcome is the store's problem: the Job is left alone.
        let unread = at(JobState::Active, Some(Err("connection refused".into())));
        assert_eq!(unread.status.phase, Phase::Analyzing);
        assert!(unread.actions.is_empty());
    }

    #[test]
    fn the_ttl_cleans_up_once_unless_a_failure_is_kept() {
        let mut f = Fixture::new();
        f.m.spec.ttl_seconds_after_finished = Some(60);
        let st = CampaignStatus {
            phase: Phase::Succeeded,
            finished_at: Some(rfc3339(f.now - Duration::from_secs(30))),
            ..CampaignStatus::default()
        };
        let d = decide(&f.facts(&st, BucketView::default(), JobState::NotLooked));
        assert_eq!(d.requeue, Some(Duration::from_secs(30)));
        let st = CampaignStatus {
            finished_at: Some(rfc3339(f.now - Duration::from_secs(61))),
            ..st
        };
        let d = decide(&f.facts(&st, BucketView::default(), JobState::NotLooked));
        assert!(d.actions.contains(&Action::CleanUp));
        let d = decide(&f.facts(&d.status, BucketView::default(), JobState::NotLooked));
        assert!(d.actions.is_empty(), "once");
        f.m.spec.keep_on_failure = true;
        let st = CampaignStatus {
            phase: Phase::Failed,
            ..st
        };
        let d = decide(&f.facts(&st, BucketView::default(), JobState::NotLooked));
        assert!(d.actions.is_empty());
    }

    #[test]
    fn the_secrets_go_after_their_ttl_once_and_zero_keeps_them() {
        let f = Fixture::new();
        let ended = |secs: u64| CampaignStatus {
            phase: Phase::Succeeded,
            finished_at: Some(rfc3339(f.now - Duration::from_secs(secs))),
            ..CampaignStatus::default()
        };
        let decide_with = |st: &CampaignStatus, ttl: u32| {
            decide(&Facts {
                secrets_ttl: ttl,
                ..f.facts(st, BucketView::default(), JobState::NotLooked)
            })
        };
        let d = decide_with(&ended(30), 3600);
        assert_eq!(d.requeue, Some(Duration::from_secs(3570)));
        assert!(d.actions.is_empty());
        let d = decide_with(&ended(3600), 3600);
        assert_eq!(d.actions, [Action::DeleteSecrets { server: false }, Action::Event(Event {
            warning: false,
            reason: Reason::SecretsDeleted,
            note: "deleted the recipient keys Secret 3600s after the end; MinIO and its credentials are kept while the results live on it (ttlSecondsAfterFinished or deleting the campaign removes them)".into(),
        })]);
        assert!(d.status.secrets_deleted_at.is_some());
        let again = decide_with(&d.status, 3600);
        assert!(again.actions.is_empty() && again.requeue.is_none(), "once");
        // 0 keeps them.
        let d = decide_with(&ended(1_000_000), 0);
        assert!(d.actions.is_empty() && d.requeue.is_none());
        // A failed campaign kept for inspection keeps them.
        let mut kept = Fixture::new();
        kept.m.spec.keep_on_failure = true;
        let st = CampaignStatus {
            phase: Phase::Failed,
            ..ended(1_000_000)
        };
        let d = decide(&Facts {
            secrets_ttl: 60,
            ..kept.facts(&st, BucketView::default(), JobState::NotLooked)
        });
        assert!(d.actions.is_empty());
        // The whole clean-up due as well: it deletes the Secrets with the rest.
        let mut both = Fixture::new();
        both.m.spec.ttl_seconds_after_finished = Some(60);
        let d = decide(&Facts {
            secrets_ttl: 60,
            ..both.facts(&ended(61), BucketView::default(), JobState::NotLooked)
        });
        assert!(d.actions.contains(&Action::CleanUp));
        assert!(
            !d.actions
                .iter()
                .any(|a| matches!(a, Action::DeleteSecrets { .. }))
        );
        // Results elsewhere: MinIO holds nothing of them and goes with its credentials.
        let mut elsewhere = Fixture::new();
        elsewhere.m.spec.results = Some(campaign::cluster::Results {
            endpoint: Some("https://results.example".into()),
            credentials_secret: Some("r".into()),
            ..Default::default()
        });
        let d = decide(&Facts {
            secrets_ttl: 60,
            ..elsewhere.facts(&ended(61), BucketView::default(), JobState::NotLooked)
        });
        assert_eq!(d.actions[0], Action::DeleteSecrets { server: true });
    }

    #[test]
    fn job_names_fit_in_63_characters() {
        let long = "a".repeat(63);
        let n = job_name(&long, 12, 3);
        assert!(n.len() <= 63, "{n}");
        assert!(n.ends_with("-r0012-a3"));
        assert_eq!(job_name("quick", 0, 1), "quick-r0000-a1");
    }
}
