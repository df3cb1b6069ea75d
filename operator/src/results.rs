//! The results bucket as the operator uses it: which runs are complete (every process's
//! `SHA256SUMS`, the last file a worker uploads), which pods are ready, the start gate,
//! clearing a failed attempt, and the analysis Job's outcome (`analysis.json`, which the
//! Job writes after the report: `worker::analyze`). The key layout is the worker's
//! (`run::runspec::{ready_key, start_key}`, `worker::output`):
//! `<prefix><runId>/p<index>/<file>`.

use run::schedule::kept;
use run::summary::files;
use run::verdicts::{AnalysisOutcome, OUTCOME};
use s3::{ResultsBucket, S3Settings};

use crate::Result;

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

/// The largest `summary.json` the operator reads (a summary is a few KiB).
pub const SUMMARY_LIMIT: usize = 1 << 20;
/// The largest `analysis.json` the operator reads (verdicts, per-request rows, digests:
/// tens of KiB for the largest campaign the planner accepts).
pub const OUTCOME_LIMIT: usize = 8 << 20;
/// The most keys the operator lists under a campaign's prefix (a run leaves about ten per
/// process: 100,000 is ten times a campaign of 1,000 runs of a process each), and under
/// one run's.
pub const KEYS_LIMIT: usize = 100_000;
/// The largest object the operator moves when it keeps or sets aside an attempt (it is
/// copied through the operator's memory and read back: twice this at most).
pub const MOVE_LIMIT: usize = 256 << 20;

/// Whether an error is a bound of this module exceeded (the campaign's fault, not the
/// store's: it fails the campaign rather than being retried).
pub fn exceeded(e: &crate::Error) -> bool {
    matches!(e, crate::Error::Store(s3::Error::TooLarge { .. }))
}
use crate::step::BucketView;

/// The view of the bucket from its keys under the campaign prefix (pure).
pub fn view_from_keys<'a>(
    keys: impl IntoIterator<Item = &'a str>,
    prefix: &str,
    processes: u32,
) -> BucketView {
    let mut sums: std::collections::BTreeMap<String, u32> = Default::default();
    let mut view = BucketView {
        exists: true,
        ..BucketView::default()
    };
    for key in keys {
        let Some(rest) = key.strip_prefix(prefix) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        match parts.as_slice() {
            [run, "start-at"] => {
                view.started.insert((*run).to_owned());
            }
            [run, "ready", p] if p.starts_with('p') => {
                *view.ready.entry((*run).to_owned()).or_default() += 1;
            }
            [run, p, name]
                if *name == files::CHECKSUMS
                    && files::process_index(p).is_some_and(|i| i < processes) =>
            {
                *sums.entry((*run).to_owned()).or_default() += 1;
            }
            _ => {}
        }
    }
    view.completed = sums
        .into_iter()
        .filter(|(_, n)| *n >= processes)
        .map(|(r, _)| r)
        .collect();
    view
}

/// The campaign's part of the results bucket, as the operator uses it.
#[derive(Clone, Debug)]
pub struct ResultsStore {
    bucket: ResultsBucket,
}

impl ResultsStore {
    /// A client for the results store.
    pub fn new(settings: &S3Settings, bucket: &str, prefix: &str) -> Result<Self> {
        Ok(Self {
            bucket: ResultsBucket::new(settings, bucket, prefix)?,
        })
    }

    /// What the bucket says about the runs; `exists: false` when the bucket is missing.
    pub async fn observe(&self, processes: u32) -> Result<BucketView> {
        if !self.bucket.exists().await? {
            return Ok(BucketView::default());
        }
        let keys = self.bucket.keys_at_most("", KEYS_LIMIT).await?;
        Ok(view_from_keys(
            keys.iter().map(String::as_str),
            self.bucket.prefix(),
            processes,
        ))
    }

    /// Creates the results bucket if it is missing.
    pub async fn create_bucket(&self) -> Result<()> {
        Ok(self.bucket.create_bucket().await?)
    }

    /// Whether a complete run failed validation: the failed checks of its processes'
    /// `summary.json` (each read only up to [`SUMMARY_LIMIT`]), `None` when every process
    /// says valid. A summary that cannot be read or parsed counts as invalid, saying so.
    pub async fn invalid(&self, run_id: &str, processes: u32) -> Result<Option<String>> {
        let mut failed = std::collections::BTreeSet::new();
        for i in 0..processes {
            let key = format!("{}{run_id}/p{i}/{}", self.bucket.prefix(), files::SUMMARY);
            let summary = match self.bucket.get_at_most(&key, SUMMARY_LIMIT).await {
                Ok(Some(b)) => serde_json::from_slice::<run::summary::RunSummary>(&b).ok(),
                Ok(None) | Err(s3::Error::TooLarge { .. }) => None,
                Err(e) => return Err(e.into()),
            };
            match summary {
                Some(s) if s.valid => {}
                Some(s) => {
                    failed.extend(s.checks.into_iter().filter(|c| !c.passed).map(|c| c.name))
                }
                None => {
                    failed.insert(format!("p{i}/{} unreadable", files::SUMMARY));
                }
            }
        }
        Ok((!failed.is_empty()).then(|| failed.into_iter().collect::<Vec<_>>().join(", ")))
    }

    /// Moves a run's files (`<runId>/p<i>/<file>`) to `<to>p<i>/<file>` under the
    /// campaign prefix: each object copied, read back and compared, then deleted; its
    /// control objects (ready markers, start instant) are deleted. How many files moved.
    pub async fn move_run(&self, run_id: &str, to: &str) -> Result<usize> {
        let prefix = self.bucket.prefix().to_owned();
        let mut moved = 0;
        for key in self
            .bucket
            .keys_at_most(&format!("{run_id}/"), KEYS_LIMIT)
            .await?
        {
            let Some(rest) = key
                .strip_prefix(&prefix)
                .and_then(|r| r.strip_prefix(run_id))
                .and_then(|r| r.strip_prefix('/'))
            else {
                continue;
            };
            let is_file = matches!(
                rest.split('/').collect::<Vec<_>>()[..],
                [p, _] if files::process_index(p).is_some()
            );
            if is_file {
                let Some(body) = self.bucket.get_at_most(&key, MOVE_LIMIT).await? else {
                    continue;
                };
                let dest = format!("{prefix}{to}{rest}");
                self.bucket.put(&dest, body.clone()).await?;
                let back = self.bucket.get_at_most(&dest, MOVE_LIMIT).await?;
                if back.as_deref() != Some(body.as_slice()) {
                    return Err(crate::Error::ResultsUnavailable(format!(
                        "the copy of {key} at {dest} does not read back the same; the original is kept"
                    )));
                }
                moved += 1;
            }
            self.bucket.delete(&key).await?;
        }
        Ok(moved)
    }

    /// Keeps an invalid attempt: [`Self::move_run`] to `attempts/<runId>/a<attempt>/`.
    /// An attempt number kept before (a mate invalid twice, a resumed campaign) is kept
    /// beside it as `a<attempt>-<unix ms>`.
    pub async fn keep_attempt(&self, run_id: &str, attempt: u32) -> Result<usize> {
        let mut to = format!("{}/", kept::attempt_dir(run_id, attempt, None));
        if !self.bucket.keys_at_most(&to, KEYS_LIMIT).await?.is_empty() {
            to = format!("{}/", kept::attempt_dir(run_id, attempt, Some(unix_ms())));
        }
        self.move_run(run_id, &to).await
    }

    /// Sets a failed or cut-off attempt aside: [`Self::move_run`] to
    /// `incomplete/<runId>-<unix ms>/` (when it left any file).
    pub async fn set_aside(&self, run_id: &str) -> Result<usize> {
        let to = format!("{}/", kept::incomplete_dir(run_id, unix_ms()));
        self.move_run(run_id, &to).await
    }

    /// Writes a run's start instant (the start gate).
    pub async fn open_gate(&self, run_id: &str, at: &str) -> Result<()> {
        let key = run::runspec::start_key(self.bucket.prefix(), run_id);
        Ok(self.bucket.put(&key, at.as_bytes().to_vec()).await?)
    }

    fn outcome_key(&self) -> String {
        format!("{}{OUTCOME}", self.bucket.prefix())
    }

    /// The analysis Job's outcome, if it wrote one (read up to [`OUTCOME_LIMIT`]);
    /// [`crate::Error::ResultsUnavailable`] when it is not an outcome.
    pub async fn outcome(&self) -> Result<Option<AnalysisOutcome>> {
        let key = self.outcome_key();
        let Some(bytes) = self.bucket.get_at_most(&key, OUTCOME_LIMIT).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            crate::Error::ResultsUnavailable(format!(
                "s3://{}/{key} is not an analysis outcome: {e}",
                self.bucket.bucket()
            ))
        })
    }

    /// The pre-flight probe's baselines, if it wrote them (read up to
    /// [`run::preflight::BASELINES_LIMIT`]); [`crate::Error::ResultsUnavailable`] when they
    /// are not baselines.
    pub async fn baselines(&self) -> Result<Option<run::preflight::Baselines>> {
        let key = format!("{}{}", self.bucket.prefix(), run::preflight::BASELINES);
        let limit = run::preflight::BASELINES_LIMIT;
        let Some(bytes) = self.bucket.get_at_most(&key, limit).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            crate::Error::ResultsUnavailable(format!(
                "s3://{}/{key} is not testbed baselines: {e}",
                self.bucket.bucket()
            ))
        })
    }

    /// Deletes an earlier analysis attempt's outcome.
    pub async fn clear_outcome(&self) -> Result<()> {
        Ok(self.bucket.delete(&self.outcome_key()).await?)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_run_is_complete_when_every_process_uploaded_its_checksums() {
        let p = "ns/c/uid/";
        let keys = [
            "ns/c/uid/r0000-a-x25519/p0/SHA256SUMS",
            "ns/c/uid/r0000-a-x25519/p1/SHA256SUMS",
            "ns/c/uid/r0001-a-ml-kem-768/p0/SHA256SUMS",
            "ns/c/uid/r0001-a-ml-kem-768/p0/summary.json",
            "ns/c/uid/r0001-a-ml-kem-768/ready/p0",
            "ns/c/uid/r0001-a-ml-kem-768/ready/p1",
            "ns/c/uid/r0001-a-ml-kem-768/start-at",
            "ns/c/uid/r0002-a-x25519/p2/SHA256SUMS",
            "ns/c/uid/report.json",
            "ns/other/uid/r0003-a-x25519/p0/SHA256SUMS",
        ];
        let v = view_from_keys(keys, p, 2);
        assert!(v.exists);
        assert_eq!(v.completed.iter().collect::<Vec<_>>(), ["r0000-a-x25519"]);
        assert_eq!(v.ready.get("r0001-a-ml-kem-768"), Some(&2));
        assert!(v.started.contains("r0001-a-ml-kem-768"));
        // p2 is beyond two processes: not a process of this campaign.
        assert!(!v.completed.contains("r0002-a-x25519"));
    }
}
