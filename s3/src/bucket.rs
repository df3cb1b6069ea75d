//! A campaign's part of a results bucket: the objects under one key prefix
//! (docs/src/kubernetes/index.md, "What the operator does with a campaign":
//! `<namespace>/<name>/<uid>/`). The operator observes runs, opens start gates and clears failed
//! attempts through it; the analysis Job downloads the run files and uploads the report.

use aws_sdk_s3::primitives::ByteStream;

use crate::{Error, Result, S3Class, S3Settings};

/// The objects under `prefix` in `bucket`.
#[derive(Clone, Debug)]
pub struct ResultsBucket {
    client: aws_sdk_s3::Client,
    bucket: String,
    prefix: String,
}

impl ResultsBucket {
    /// A client for the results store.
    pub fn new(settings: &S3Settings, bucket: &str, prefix: &str) -> Result<Self> {
        Ok(Self {
            client: settings.client()?,
            bucket: bucket.to_owned(),
            prefix: prefix.to_owned(),
        })
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix (ends with `/`, or is empty).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Every key under `prefix` + `below`, in full.
    pub async fn keys(&self, below: &str) -> Result<Vec<String>> {
        self.keys_at_most(below, usize::MAX).await
    }

    /// Every key under `prefix` + `below`, in full, or [`Error::TooLarge`] as soon as the
    /// listing passes `max` keys (the rest is not listed: a reader's memory stays bounded
    /// whatever the bucket holds).
    pub async fn keys_at_most(&self, below: &str, max: usize) -> Result<Vec<String>> {
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
                .map_err(|e| Error::s3("ListObjectsV2", &self.bucket, &full, e))?;
            out.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
            if out.len() > max {
                return Err(Error::TooLarge {
                    bucket: self.bucket.clone(),
                    target: full,
                    what: format!("a listing of more than {max} keys"),
                    limit: format!("{max} keys"),
                });
            }
            match page.next_continuation_token() {
                Some(t) if page.is_truncated() == Some(true) => token = Some(t.to_owned()),
                _ => break,
            }
        }
        Ok(out)
    }

    /// Whether the bucket exists.
    pub async fn exists(&self) -> Result<bool> {
        match self.client.head_bucket().bucket(&self.bucket).send().await {
            Ok(_) => Ok(true),
            Err(e) => {
                let e = Error::s3("HeadBucket", &self.bucket, "", e);
                if matches!(
                    e.s3_class(),
                    Some(S3Class::NotFound | S3Class::NoSuchBucket)
                ) {
                    Ok(false)
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Creates the bucket if it is missing.
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
                    Err(Error::s3("CreateBucket", &self.bucket, "", e))
                }
            }
        }
    }

    /// Writes `body` at the full key `key`.
    pub async fn put(&self, key: &str, body: Vec<u8>) -> Result<()> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|e| Error::s3("PutObject", &self.bucket, key, e))?;
        Ok(())
    }

    /// The object at the full key `key`; `None` when there is none.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.get_at_most(key, usize::MAX).await
    }

    /// The object at the full key `key` if it holds at most `limit` bytes; `None` when there
    /// is none, [`Error::TooLarge`] when it is larger (by its length, or by what arrives:
    /// the body is read no further than `limit` + 1 bytes whatever the length says).
    pub async fn get_at_most(&self, key: &str, limit: usize) -> Result<Option<Vec<u8>>> {
        let too_large = |size: String| Error::TooLarge {
            bucket: self.bucket.clone(),
            target: key.to_owned(),
            what: format!("an object of {size}"),
            limit: format!("{limit} bytes"),
        };
        let mut o = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(o) => o,
            Err(e) => {
                let e = Error::s3("GetObject", &self.bucket, key, e);
                return match e.s3_class() {
                    Some(S3Class::NotFound) => Ok(None),
                    _ => Err(e),
                };
            }
        };
        if let Some(n) = o.content_length()
            && usize::try_from(n).map_or(true, |n| n > limit)
        {
            return Err(too_large(format!("{n} bytes")));
        }
        let mut body = Vec::new();
        while let Some(chunk) = o.body.try_next().await.map_err(|e| Error::S3 {
            op: "GetObject",
            bucket: self.bucket.clone(),
            target: key.to_owned(),
            class: S3Class::Io,
            status: None,
            detail: format!("reading the body: {e}"),
        })? {
            body.extend_from_slice(&chunk);
            if body.len() > limit {
                return Err(too_large(format!("more than {limit} bytes")));
            }
        }
        Ok(Some(body))
    }

    /// Deletes the object at the full key `key` (absent: nothing to do).
    pub async fn delete(&self, key: &str) -> Result<()> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| Error::s3("DeleteObject", &self.bucket, key, e))?;
        Ok(())
    }

    /// Deletes every object under `prefix` + `below`; how many there were.
    pub async fn delete_under(&self, below: &str) -> Result<usize> {
        let keys = self.keys(below).await?;
        for k in &keys {
            self.delete(k).await?;
        }
        Ok(keys.len())
    }
}
