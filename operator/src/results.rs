//! The results bucket as the operator uses it: which runs are complete (every process's
//! `SHA256SUMS`, the last file a worker uploads), which pods are ready, the start gate,
//! clearing a failed attempt, and the analysis Job's outcome (`analysis.json`, which the
//! Job writes after the report: `worker::analyze`). The key layout is the worker's
//! (`run::runspec::{ready_key, start_key}`, `worker::output`):
//! `<prefix><runId>/p<index>/<file>`.

use run::summary::files;
use run::verdicts::{AnalysisOutcome, OUTCOME};
use s3::{ResultsBucket, S3Settings};

use crate::Result;
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
        let keys = self.bucket.keys("").await?;
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

    /// Deletes everything under a run's prefix (what a failed attempt left).
    pub async fn clear_run(&self, run_id: &str) -> Result<usize> {
        Ok(self.bucket.delete_under(&format!("{run_id}/")).await?)
    }

    /// Writes a run's start instant (the start gate).
    pub async fn open_gate(&self, run_id: &str, at: &str) -> Result<()> {
        let key = run::runspec::start_key(self.bucket.prefix(), run_id);
        Ok(self.bucket.put(&key, at.as_bytes().to_vec()).await?)
    }

    fn outcome_key(&self) -> String {
        format!("{}{OUTCOME}", self.bucket.prefix())
    }

    /// The analysis Job's outcome, if it wrote one; `Err` (why) when it cannot be read or
    /// is not an outcome.
    pub async fn outcome(&self) -> std::result::Result<Option<AnalysisOutcome>, String> {
        let key = self.outcome_key();
        match self.bucket.get(&key).await {
            Ok(None) => Ok(None),
            Ok(Some(bytes)) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                format!(
                    "s3://{}/{key} is not an analysis outcome: {e}",
                    self.bucket.bucket()
                )
            }),
            Err(e) => Err(e.to_string()),
        }
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
