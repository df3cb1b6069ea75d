//! The results bucket as the operator uses it: which runs are complete (every process's
//! `SHA256SUMS`, the last file a worker uploads), which pods are ready, the start gate,
//! clearing a failed attempt, and the analysis (download, validate, analyse, upload the
//! report). The key layout is the worker's (`run::runspec::{ready_key, start_key}`,
//! `worker::output`): `<prefix><runId>/p<index>/<file>`.

use std::path::Path;

use aws_sdk_s3::primitives::ByteStream;
use campaign::analysis::{self, Config};
use campaign::report::Header;
use campaign::{Manifest, Plan};
use run::summary::files;
use s3::S3Settings;

use crate::api::VerdictRow;
use crate::step::{Analyzed, BucketView};
use crate::{Error, Result};

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
                    && p.strip_prefix('p')
                        .and_then(|i| i.parse::<u32>().ok())
                        .is_some_and(|i| i < processes) =>
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

/// The campaign's part of the results bucket.
#[derive(Clone, Debug)]
pub struct ResultsStore {
    client: aws_sdk_s3::Client,
    bucket: String,
    prefix: String,
}

fn s3_err<E>(
    op: &'static str,
    bucket: &str,
    key: &str,
    e: aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>,
) -> Error
where
    E: aws_sdk_s3::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    Error::Store(s3::Error::s3(op, bucket, key, e))
}

impl ResultsStore {
    /// A client for the results store.
    pub fn new(settings: &S3Settings, bucket: &str, prefix: &str) -> Result<Self> {
        Ok(Self {
            client: settings.client()?,
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
        })
    }

    /// Every key under `prefix` (within the campaign prefix).
    async fn keys(&self, below: &str) -> Result<Vec<String>> {
        let full = format!("{}{below}", self.prefix);
        let mut out = Vec::new();
        let mut token = None;
        loop {
            let page = self
                .client
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(&full)
                .set_continuation_token(token.take())
                .send()
                .await
                .map_err(|e| s3_err("ListObjectsV2", &self.bucket, &full, e))?;
            out.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
            match page.next_continuation_token() {
                Some(t) if page.is_truncated() == Some(true) => token = Some(t.to_owned()),
                _ => break,
            }
        }
        Ok(out)
    }

    /// What the bucket says about the runs; `exists: false` when the bucket is missing.
    pub async fn observe(&self, processes: u32) -> Result<BucketView> {
        match self.client.head_bucket().bucket(&self.bucket).send().await {
            Ok(_) => {}
            Err(e) => {
                let e = s3::Error::s3("HeadBucket", &self.bucket, "", e);
                if matches!(
                    e.s3_class(),
                    Some(s3::S3Class::NotFound | s3::S3Class::NoSuchBucket)
                ) {
                    return Ok(BucketView::default());
                }
                return Err(Error::Store(e));
            }
        }
        let keys = self.keys("").await?;
        Ok(view_from_keys(
            keys.iter().map(String::as_str),
            &self.prefix,
            processes,
        ))
    }

    /// Creates the results bucket if it is missing.
    pub async fn create_bucket(&self) -> Result<()> {
        match self
            .client
            .create_bucket()
            .bucket(&self.bucket)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => {
                let code = e.as_service_error().and_then(|s| {
                    use aws_sdk_s3::error::ProvideErrorMetadata as _;
                    s.code().map(str::to_owned)
                });
                if matches!(
                    code.as_deref(),
                    Some("BucketAlreadyOwnedByYou" | "BucketAlreadyExists")
                ) {
                    Ok(())
                } else {
                    Err(s3_err("CreateBucket", &self.bucket, "", e))
                }
            }
        }
    }

    /// Deletes everything under a run's prefix (what a failed attempt left).
    pub async fn clear_run(&self, run_id: &str) -> Result<usize> {
        let keys = self.keys(&format!("{run_id}/")).await?;
        for k in &keys {
            self.client
                .delete_object()
                .bucket(&self.bucket)
                .key(k)
                .send()
                .await
                .map_err(|e| s3_err("DeleteObject", &self.bucket, k, e))?;
        }
        Ok(keys.len())
    }

    /// Writes a run's start instant (the start gate).
    pub async fn open_gate(&self, run_id: &str, at: &str) -> Result<()> {
        let key = run::runspec::start_key(&self.prefix, run_id);
        self.put(&key, at.as_bytes().to_vec()).await
    }

    async fn put(&self, key: &str, body: Vec<u8>) -> Result<()> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| s3_err("PutObject", &self.bucket, key, e))?;
        Ok(())
    }

    /// Downloads every run's files into `dir` (`<runId>/p<index>/<file>`).
    async fn download(&self, dir: &Path) -> Result<usize> {
        let keys = self.keys("").await?;
        let mut n = 0;
        for key in &keys {
            let Some(rest) = key.strip_prefix(&self.prefix) else {
                continue;
            };
            let parts: Vec<&str> = rest.split('/').collect();
            let [run, p, name] = parts.as_slice() else {
                continue;
            };
            if *p == "ready" || !p.starts_with('p') || name.is_empty() {
                continue;
            }
            let path = dir.join(run).join(p).join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| Error::Io {
                    what: format!("creating {}", parent.display()),
                    source,
                })?;
            }
            let o = self
                .client
                .get_object()
                .bucket(&self.bucket)
                .key(key)
                .send()
                .await
                .map_err(|e| s3_err("GetObject", &self.bucket, key, e))?;
            let bytes = o
                .body
                .collect()
                .await
                .map_err(|e| Error::Spec {
                    detail: format!("reading s3://{}/{key}: {e}", self.bucket),
                })?
                .into_bytes();
            std::fs::write(&path, &bytes).map_err(|source| Error::Io {
                what: format!("writing {}", path.display()),
                source,
            })?;
            n += 1;
        }
        Ok(n)
    }

    /// The analysis: downloads the runs into a fresh directory under `tmp`, validates
    /// and analyses them exactly as `pqbench analyze` does, uploads `runs.csv`,
    /// `report.json`, `report.md` and `plots/` under the campaign prefix, and returns the
    /// compact verdicts. `Err((why, fatal))`: fatal when the data cannot give verdicts
    /// (no valid run), else worth another try (the store, the disk).
    pub async fn analyze(
        &self,
        m: &Manifest,
        plan: &Plan,
        tmp: &Path,
    ) -> std::result::Result<Analyzed, (String, bool)> {
        let dir = tempfile::Builder::new()
            .prefix("pqbench-analysis-")
            .tempdir_in(tmp)
            .map_err(|e| {
                (
                    format!("cannot make a directory in {}: {e}", tmp.display()),
                    false,
                )
            })?;
        self.download(dir.path())
            .await
            .map_err(|e| (e.to_string(), false))?;
        let collected = worker::collect::collect(dir.path()).map_err(|e| (e.to_string(), false))?;
        if collected.rows.is_empty() {
            return Err((
                format!(
                    "no valid run among {} in the results bucket",
                    collected.excluded.len()
                ),
                true,
            ));
        }
        let cfg = Config::from_spec(&m.spec);
        let report = analysis::analyze(&collected.rows, &cfg).map_err(|e| (e.to_string(), true))?;
        let excluded = collected.excluded_runs();
        let mut header = Header {
            campaign: Some(plan.campaign.clone()),
            prereg_hash: Some(plan.prereg_hash.clone()),
            excluded: excluded.clone(),
            plots: Vec::new(),
        };
        let mut uploads = campaign::report::files(&report, &mut header);
        uploads.push((
            "runs.csv".to_owned(),
            analysis::rows_to_csv(&collected.rows).into_bytes(),
        ));
        for (name, bytes) in uploads {
            self.put(&format!("{}{name}", self.prefix), bytes)
                .await
                .map_err(|e| (e.to_string(), false))?;
        }
        Ok(Analyzed {
            verdicts: verdict_rows(&report),
            excluded,
        })
    }
}

fn sig4(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        x.to_string()
    }
}

/// The compact verdict rows of a report (status holds these, never the raw data).
pub fn verdict_rows(r: &analysis::Report) -> Vec<VerdictRow> {
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
