//! The Job controller's bookkeeping, for the tests that play a cluster's Jobs with local
//! processes (`operator/tests/kill.rs`, `tests/played_jobs.rs`): which pods succeeded or
//! failed, whether a failed pod is started again, and the Job's status as the controller
//! writes it (`active`, `succeeded`, `failed`, `completedIndexes`, `failedIndexes`, the
//! `Complete` or `Failed` condition). Pure: the callers start and watch the pods and
//! patch the status.

use std::collections::BTreeSet;
use std::time::SystemTime;

use k8s_openapi::api::batch::v1::JobSpec;
use serde_json::{Value, json};

/// One Job's tally.
pub(crate) struct JobTally {
    /// `completionMode: Indexed` (the operator's worker Jobs, `backoffLimitPerIndex: 0`).
    pub(crate) indexed: bool,
    /// `completions`.
    pub(crate) completions: u32,
    /// `backoffLimit`, for a Job that is not indexed.
    backoff_limit: u32,
    succeeded: BTreeSet<u32>,
    failed_indexes: BTreeSet<u32>,
    failures: u32,
    /// The Job has its `Complete` or `Failed` condition.
    pub(crate) finished: bool,
}

impl JobTally {
    /// A new Job of this spec, no pod exited yet.
    pub(crate) fn of(spec: &JobSpec) -> Self {
        Self {
            indexed: spec.completion_mode.as_deref() == Some("Indexed"),
            completions: u32::try_from(spec.completions.unwrap_or(1)).unwrap(),
            backoff_limit: u32::try_from(spec.backoff_limit.unwrap_or(6)).unwrap(),
            succeeded: BTreeSet::new(),
            failed_indexes: BTreeSet::new(),
            failures: 0,
            finished: false,
        }
    }

    /// The status the controller writes when it starts the Job's pods.
    pub(crate) fn started(&self) -> Value {
        json!({"startTime": now_rfc3339(), "active": self.completions})
    }

    /// The pod of `index` exited; true when the controller starts that index again.
    pub(crate) fn exited(&mut self, index: u32, success: bool) -> bool {
        if success {
            self.succeeded.insert(index);
            return false;
        }
        self.failures += 1;
        if self.indexed {
            // backoffLimitPerIndex: 0.
            self.failed_indexes.insert(index);
            false
        } else {
            self.failures <= self.backoff_limit
        }
    }

    /// The Job's status with `active` pods running; `over_deadline` when the Job has been
    /// active past its `activeDeadlineSeconds` (its pods are being stopped). Marks the Job
    /// finished when the status carries a condition.
    pub(crate) fn status(&mut self, active: usize, over_deadline: bool) -> Value {
        let done = self.succeeded.len() + self.failed_indexes.len();
        let condition = if over_deadline {
            Some((
                "Failed",
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            ))
        } else if self.succeeded.len() == self.completions as usize {
            Some((
                "Complete",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ))
        } else if self.indexed && done == self.completions as usize {
            Some(("Failed", "FailedIndexes", "Job has failed indexes"))
        } else if !self.indexed && self.failures > self.backoff_limit {
            Some((
                "Failed",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ))
        } else {
            None
        };
        let mut status = json!({
            "active": if condition.is_some() { 0 } else { active },
            "succeeded": self.succeeded.len(),
            "failed": self.failures,
        });
        if self.indexed {
            status["completedIndexes"] = index_list(&self.succeeded).into();
            status["failedIndexes"] = index_list(&self.failed_indexes).into();
        }
        if let Some((type_, reason, message)) = condition {
            self.finished = true;
            if type_ == "Complete" {
                status["completionTime"] = now_rfc3339().into();
            }
            status["conditions"] = json!([{
                "type": type_, "status": "True", "reason": reason, "message": message,
                "lastProbeTime": now_rfc3339(), "lastTransitionTime": now_rfc3339()
            }]);
        }
        status
    }
}

/// A set of completion indexes as the Job status writes it (`0,2,3`).
fn index_list(set: &BTreeSet<u32>) -> String {
    set.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Now, as the API server's timestamps.
pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}
