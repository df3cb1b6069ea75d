//! The S3 calls the store makes, on either client ([`crate::S3ClientKind`]): `aws-sdk`
//! (the AWS SDK for Rust) or `lean` ([`crate::lean`]). One method per S3 operation, with
//! the same arguments, results and error classes on both, so the commit protocol in
//! [`crate::Store`] is written once and a test of it tests both clients.

use std::collections::BTreeMap;
use std::time::SystemTime;

use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use http::Method;
use serde::Deserialize;

use crate::lean::{self, Call, Lean};
use crate::{Error, Result, S3Class, S3ClientKind, S3Settings};

/// The metadata entry's name in a full `x-amz-meta-<name>` header name (the SDK adds the
/// prefix itself).
fn meta_name(header: &str) -> &str {
    header.strip_prefix("x-amz-meta-").unwrap_or(header)
}

/// An S3 client of either kind, bound to one endpoint.
#[derive(Clone, Debug)]
pub struct ObjectClient {
    inner: Inner,
}

#[derive(Clone, Debug)]
enum Inner {
    Sdk {
        client: aws_sdk_s3::Client,
        unsigned: bool,
    },
    Lean(Box<Lean>),
}

/// One object of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The object key.
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was stored (server clock).
    pub last_modified: Option<SystemTime>,
}

/// One page of a ListObjectsV2 listing.
#[derive(Clone, Debug, Default)]
pub struct ListPage {
    /// The objects of the page.
    pub objects: Vec<Listed>,
    /// The continuation token of the next page, if the listing is truncated.
    pub next: Option<String>,
}

/// One multipart upload in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    /// The object key.
    pub key: String,
    /// The upload id.
    pub upload_id: String,
    /// When it was initiated.
    pub initiated: Option<SystemTime>,
}

/// One page of a ListMultipartUploads listing.
#[derive(Clone, Debug, Default)]
pub struct UploadsPage {
    /// The uploads of the page.
    pub uploads: Vec<Upload>,
    /// The (key marker, upload-id marker) of the next page, if truncated.
    pub next: Option<(String, Option<String>)>,
}

/// What HeadObject says of an object.
#[derive(Clone, Debug, Default)]
pub struct Head {
    /// Its size, if announced.
    pub size: Option<u64>,
    /// Its ETag as the server sent it (quoted), if any.
    pub e_tag: Option<String>,
    /// Its user metadata (names lowercased, without `x-amz-meta-`).
    pub metadata: BTreeMap<String, String>,
}

/// A GetObject response whose body is being read.
pub struct Body {
    inner: BodyInner,
    bucket: String,
    key: String,
    /// `Content-Length`, if announced.
    pub content_length: Option<u64>,
    /// The object's user metadata: names without `x-amz-meta-`, lowercase.
    pub metadata: BTreeMap<String, String>,
}

enum BodyInner {
    Sdk(ByteStream),
    Lean(lean::Response),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("key", &self.key)
            .field("content_length", &self.content_length)
            .finish_non_exhaustive()
    }
}

impl Body {
    /// The next bytes of the body; `None` at its end.
    pub async fn next(&mut self) -> Result<Option<Bytes>> {
        match &mut self.inner {
            BodyInner::Sdk(s) => s.try_next().await.map_err(|e| {
                let detail = crate::error::chain(&e);
                Error::S3 {
                    op: "GetObject",
                    bucket: self.bucket.clone(),
                    target: self.key.clone(),
                    // The byte-stream error has no public kind; its message names a timeout.
                    class: if detail.contains("timeout") {
                        S3Class::Timeout
                    } else {
                        S3Class::Io
                    },
                    status: None,
                    detail,
                }
            }),
            BodyInner::Lean(r) => r
                .next()
                .await
                .map_err(|e| e.into_error("GetObject", &self.bucket, &self.key)),
        }
    }

    /// The body's first `limit` bytes at most (all of it if shorter); the rest is never
    /// read (the connection is dropped with it).
    pub async fn collect_at_most(mut self, limit: usize) -> Result<Bytes> {
        let mut out = Vec::new();
        while out.len() < limit {
            let Some(b) = self.next().await? else { break };
            let take = b.len().min(limit - out.len());
            out.extend_from_slice(&b[..take]);
        }
        Ok(Bytes::from(out))
    }

    /// The whole body.
    pub async fn collect(mut self) -> Result<Bytes> {
        let mut out = Vec::new();
        while let Some(b) = self.next().await? {
            out.extend_from_slice(&b);
        }
        Ok(Bytes::from(out))
    }
}

fn to_system_time(t: Option<&aws_sdk_s3::primitives::DateTime>) -> Option<SystemTime> {
    t.and_then(|t| SystemTime::try_from(*t).ok())
}

fn parse_time(t: Option<&str>) -> Option<SystemTime> {
    let t = t?;
    aws_smithy_types::DateTime::from_str(t, aws_smithy_types::date_time::Format::DateTime)
        .ok()
        .and_then(|d| SystemTime::try_from(d).ok())
}

/// `ListBucketResult` of ListObjectsV2.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListBucketResult {
    #[serde(default)]
    contents: Vec<Contents>,
    #[serde(default)]
    is_truncated: Option<bool>,
    #[serde(default)]
    next_continuation_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Contents {
    key: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    last_modified: Option<String>,
}

/// `ListMultipartUploadsResult`.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListUploadsResult {
    #[serde(default)]
    upload: Vec<UploadXml>,
    #[serde(default)]
    is_truncated: Option<bool>,
    #[serde(default)]
    next_key_marker: Option<String>,
    #[serde(default)]
    next_upload_id_marker: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UploadXml {
    key: String,
    upload_id: String,
    #[serde(default)]
    initiated: Option<String>,
}

/// `InitiateMultipartUploadResult`.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InitiateResult {
    #[serde(default)]
    upload_id: Option<String>,
}

/// `DeleteResult` of DeleteObjects.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DeleteResult {
    #[serde(default)]
    error: Vec<DeleteError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct DeleteError {
    #[serde(default)]
    key: Option<String>,
}

fn bad_response(op: &'static str, bucket: &str, target: &str, detail: String) -> Error {
    Error::S3 {
        op,
        bucket: bucket.to_owned(),
        target: target.to_owned(),
        class: S3Class::Other,
        status: None,
        detail,
    }
}

/// Reads a lean response's XML document into `T`.
async fn xml<T: serde::de::DeserializeOwned>(
    r: lean::Response,
    op: &'static str,
    bucket: &str,
    target: &str,
) -> Result<T> {
    let body = r
        .collect(16 * 1024 * 1024)
        .await
        .map_err(|e| e.into_error(op, bucket, target))?;
    let text = std::str::from_utf8(&body).map_err(|e| {
        bad_response(
            op,
            bucket,
            target,
            format!("the response is not UTF-8: {e}"),
        )
    })?;
    quick_xml::de::from_str(text).map_err(|e| {
        bad_response(
            op,
            bucket,
            target,
            format!("cannot parse the response document: {e}"),
        )
    })
}

fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    quick_xml::escape::escape(s)
}

impl ObjectClient {
    /// The client `settings` ask for.
    pub fn new(settings: &S3Settings) -> Result<Self> {
        let inner = match settings.s3_client {
            S3ClientKind::AwsSdk => Inner::Sdk {
                client: settings.client()?,
                unsigned: !settings.payload_signing.signs(settings.is_https()),
            },
            S3ClientKind::Lean => {
                settings.validate()?;
                Inner::Lean(Box::new(Lean::new(settings)?))
            }
        };
        Ok(Self { inner })
    }

    /// Which client this is.
    pub fn kind(&self) -> S3ClientKind {
        match self.inner {
            Inner::Sdk { .. } => S3ClientKind::AwsSdk,
            Inner::Lean(_) => S3ClientKind::Lean,
        }
    }

    /// CreateBucket; succeeds if the bucket already exists and is ours.
    pub async fn create_bucket(&self, bucket: &str) -> Result<()> {
        const OURS: [&str; 2] = ["BucketAlreadyOwnedByYou", "BucketAlreadyExists"];
        match &self.inner {
            Inner::Sdk { client, .. } => match client.create_bucket().bucket(bucket).send().await {
                Ok(_) => Ok(()),
                Err(e) => {
                    let code = e
                        .as_service_error()
                        .and_then(aws_sdk_s3::error::ProvideErrorMetadata::code);
                    if code.is_some_and(|c| OURS.contains(&c)) {
                        Ok(())
                    } else {
                        Err(Error::s3("CreateBucket", bucket, "", e))
                    }
                }
            },
            Inner::Lean(l) => match l
                .send(Call::new("CreateBucket", Method::PUT, bucket, ""))
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if lean::code_of(&e).is_some_and(|c| OURS.contains(&c)) => Ok(()),
                Err(e) => Err(e),
            },
        }
    }

    /// PutObject of `body` at `key`, with user metadata `meta` (full header names,
    /// `x-amz-meta-<name>`, and ASCII values).
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        body: Bytes,
        content_type: Option<&'static str>,
        meta: &[(&'static str, String)],
    ) -> Result<()> {
        match &self.inner {
            Inner::Sdk { client, unsigned } => {
                let len = i64::try_from(body.len()).unwrap_or(i64::MAX);
                let mut b = client
                    .put_object()
                    .bucket(bucket)
                    .key(key)
                    .content_length(len)
                    .set_content_type(content_type.map(str::to_owned))
                    .body(ByteStream::from(body));
                for (name, value) in meta {
                    b = b.metadata(meta_name(name), value);
                }
                let r = if *unsigned {
                    b.customize().disable_payload_signing().send().await
                } else {
                    b.send().await
                };
                r.map(|_| ())
                    .map_err(|e| Error::s3("PutObject", bucket, key, e))
            }
            Inner::Lean(l) => {
                let headers: Vec<(&'static str, String)> = content_type
                    .map(|t| ("content-type", t.to_owned()))
                    .into_iter()
                    .chain(meta.iter().cloned())
                    .collect();
                l.send(
                    Call::new("PutObject", Method::PUT, bucket, key)
                        .headers(&headers)
                        .body(body),
                )
                .await
                .map(|_| ())
            }
        }
    }

    /// GetObject of `key`: the response head, with the body still to be read.
    pub async fn get_object(&self, bucket: &str, key: &str) -> Result<Body> {
        self.get(bucket, key, None).await
    }

    /// GetObject of the bytes `first..=last` of `key` (`Range: bytes=first-last`): the
    /// response head, with at most `last - first + 1` body bytes to read. A server that
    /// ignores the range would send more; [`Body::collect_at_most`] bounds what is read.
    pub async fn get_object_range(
        &self,
        bucket: &str,
        key: &str,
        first: u64,
        last: u64,
    ) -> Result<Body> {
        self.get(bucket, key, Some(format!("bytes={first}-{last}")))
            .await
    }

    async fn get(&self, bucket: &str, key: &str, range: Option<String>) -> Result<Body> {
        let (inner, content_length, metadata) = match &self.inner {
            Inner::Sdk { client, .. } => {
                let out = client
                    .get_object()
                    .bucket(bucket)
                    .key(key)
                    .set_range(range)
                    .send()
                    .await
                    .map_err(|e| Error::s3("GetObject", bucket, key, e))?;
                let n = out.content_length().and_then(|n| u64::try_from(n).ok());
                let meta = lowercase(out.metadata());
                (BodyInner::Sdk(out.body), n, meta)
            }
            Inner::Lean(l) => {
                let headers: Vec<(&'static str, String)> =
                    range.into_iter().map(|r| ("range", r)).collect();
                let r = l
                    .send(Call::new("GetObject", Method::GET, bucket, key).headers(&headers))
                    .await?;
                let n = r.content_length();
                let meta = user_metadata(&r.headers);
                (BodyInner::Lean(r), n, meta)
            }
        };
        Ok(Body {
            inner,
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            content_length,
            metadata,
        })
    }

    /// HeadObject of `key`: its size and ETag, if announced, and its user metadata;
    /// `None` if there is no such object.
    pub async fn head(&self, bucket: &str, key: &str) -> Result<Option<Head>> {
        match &self.inner {
            Inner::Sdk { client, .. } => {
                match client.head_object().bucket(bucket).key(key).send().await {
                    Ok(h) => Ok(Some(Head {
                        size: h.content_length().and_then(|n| u64::try_from(n).ok()),
                        e_tag: h.e_tag().map(str::to_owned),
                        metadata: lowercase(h.metadata()),
                    })),
                    Err(e) => match Error::s3("HeadObject", bucket, key, e) {
                        e if e.s3_class() == Some(S3Class::NotFound) => Ok(None),
                        e => Err(e),
                    },
                }
            }
            Inner::Lean(l) => {
                match l
                    .send(Call::new("HeadObject", Method::HEAD, bucket, key))
                    .await
                {
                    Ok(r) => Ok(Some(Head {
                        size: r.content_length(),
                        e_tag: r
                            .headers
                            .get(http::header::ETAG)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_owned),
                        metadata: user_metadata(&r.headers),
                    })),
                    Err(e) if e.s3_class() == Some(S3Class::NotFound) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// CopyObject of `source` to `key` in `bucket`, on the server (no body through the
    /// client), its user metadata replaced by `meta` (`x-amz-metadata-directive:
    /// REPLACE`), and only while `source`'s ETag is `if_match` (`x-amz-copy-source-if-match`;
    /// otherwise the server refuses with 412, [`Error::precondition_failed`]).
    pub async fn copy_object(
        &self,
        bucket: &str,
        source: &str,
        key: &str,
        if_match: &str,
        meta: &[(&'static str, String)],
    ) -> Result<()> {
        const OP: &str = "CopyObject";
        let copy_source = format!("{bucket}/{}", lean::encode_path(source));
        match &self.inner {
            Inner::Sdk { client, .. } => {
                let mut b = client
                    .copy_object()
                    .bucket(bucket)
                    .key(key)
                    .copy_source(copy_source)
                    .copy_source_if_match(if_match)
                    .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace);
                for (name, value) in meta {
                    b = b.metadata(meta_name(name), value);
                }
                b.send()
                    .await
                    .map(|_| ())
                    .map_err(|e| Error::s3(OP, bucket, key, e))
            }
            Inner::Lean(l) => {
                let headers: Vec<(&'static str, String)> = [
                    ("x-amz-copy-source", copy_source),
                    ("x-amz-copy-source-if-match", if_match.to_owned()),
                    ("x-amz-metadata-directive", "REPLACE".to_owned()),
                ]
                .into_iter()
                .chain(meta.iter().cloned())
                .collect();
                let r = l
                    .send(Call::new(OP, Method::PUT, bucket, key).headers(&headers))
                    .await?;
                lean::ok_unless_error_in_body(r, OP, bucket, key).await
            }
        }
    }

    /// HeadObject of `key`: its size, if announced.
    pub async fn head_object(&self, bucket: &str, key: &str) -> Result<Option<u64>> {
        match &self.inner {
            Inner::Sdk { client, .. } => client
                .head_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
                .map(|h| h.content_length().and_then(|n| u64::try_from(n).ok()))
                .map_err(|e| Error::s3("HeadObject", bucket, key, e)),
            Inner::Lean(l) => l
                .send(Call::new("HeadObject", Method::HEAD, bucket, key))
                .await
                .map(|r| r.content_length()),
        }
    }

    /// DeleteObject of `key`.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        match &self.inner {
            Inner::Sdk { client, .. } => client
                .delete_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| Error::s3("DeleteObject", bucket, key, e)),
            Inner::Lean(l) => l
                .send(Call::new("DeleteObject", Method::DELETE, bucket, key))
                .await
                .map(|_| ()),
        }
    }

    /// One page of ListObjectsV2 under `prefix`.
    pub async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        token: Option<String>,
    ) -> Result<ListPage> {
        const OP: &str = "ListObjectsV2";
        match &self.inner {
            Inner::Sdk { client, .. } => {
                let r = client
                    .list_objects_v2()
                    .bucket(bucket)
                    .prefix(prefix)
                    .set_continuation_token(token)
                    .send()
                    .await
                    .map_err(|e| Error::s3(OP, bucket, prefix, e))?;
                let objects = r
                    .contents()
                    .iter()
                    .filter_map(|o| {
                        Some(Listed {
                            key: o.key()?.to_owned(),
                            size: o.size().and_then(|s| u64::try_from(s).ok()).unwrap_or(0),
                            last_modified: to_system_time(o.last_modified()),
                        })
                    })
                    .collect();
                let next = match r.next_continuation_token() {
                    Some(t) if r.is_truncated() == Some(true) => Some(t.to_owned()),
                    _ => None,
                };
                Ok(ListPage { objects, next })
            }
            Inner::Lean(l) => {
                let mut query = vec![("list-type", "2"), ("prefix", prefix)];
                if let Some(t) = &token {
                    query.push(("continuation-token", t));
                }
                let r = l
                    .send(Call::new(OP, Method::GET, bucket, "").query(&query))
                    .await?;
                let doc: ListBucketResult = xml(r, OP, bucket, prefix).await?;
                let objects = doc
                    .contents
                    .into_iter()
                    .map(|c| Listed {
                        last_modified: parse_time(c.last_modified.as_deref()),
                        size: c.size.unwrap_or(0),
                        key: c.key,
                    })
                    .collect();
                let next = doc
                    .next_continuation_token
                    .filter(|_| doc.is_truncated == Some(true));
                Ok(ListPage { objects, next })
            }
        }
    }

    /// CreateMultipartUpload of `key` with user metadata `meta` (as [`Self::put_object`]):
    /// the upload id.
    pub async fn create_multipart(
        &self,
        bucket: &str,
        key: &str,
        meta: &[(&'static str, String)],
    ) -> Result<String> {
        const OP: &str = "CreateMultipartUpload";
        let id = match &self.inner {
            Inner::Sdk { client, .. } => {
                let mut b = client.create_multipart_upload().bucket(bucket).key(key);
                for (name, value) in meta {
                    b = b.metadata(meta_name(name), value);
                }
                b.send()
                    .await
                    .map_err(|e| Error::s3(OP, bucket, key, e))?
                    .upload_id
            }
            Inner::Lean(l) => {
                let r = l
                    .send(
                        Call::new(OP, Method::POST, bucket, key)
                            .query(&[("uploads", "")])
                            .headers(meta),
                    )
                    .await?;
                xml::<InitiateResult>(r, OP, bucket, key).await?.upload_id
            }
        };
        id.ok_or_else(|| bad_response(OP, bucket, key, "the response has no upload id".into()))
    }

    /// UploadPart `number` of an upload: the part's ETag.
    pub async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        number: i32,
        body: Bytes,
    ) -> Result<Option<String>> {
        match &self.inner {
            Inner::Sdk { client, unsigned } => {
                let len = i64::try_from(body.len()).unwrap_or(i64::MAX);
                let b = client
                    .upload_part()
                    .bucket(bucket)
                    .key(key)
                    .upload_id(upload_id)
                    .part_number(number)
                    .content_length(len)
                    .body(ByteStream::from(body));
                let r = if *unsigned {
                    b.customize().disable_payload_signing().send().await
                } else {
                    b.send().await
                };
                r.map(|o| o.e_tag)
                    .map_err(|e| Error::s3("UploadPart", bucket, key, e))
            }
            Inner::Lean(l) => {
                let n = number.to_string();
                let r = l
                    .send(
                        Call::new("UploadPart", Method::PUT, bucket, key)
                            .query(&[("partNumber", &n), ("uploadId", upload_id)])
                            .body(body),
                    )
                    .await?;
                Ok(r.headers
                    .get(http::header::ETAG)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned))
            }
        }
    }

    /// CompleteMultipartUpload with `parts` (number, ETag) in order.
    pub async fn complete_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(i32, Option<String>)],
    ) -> Result<()> {
        const OP: &str = "CompleteMultipartUpload";
        match &self.inner {
            Inner::Sdk { client, .. } => {
                use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
                let parts = parts
                    .iter()
                    .map(|(n, tag)| {
                        CompletedPart::builder()
                            .part_number(*n)
                            .set_e_tag(tag.clone())
                            .build()
                    })
                    .collect();
                client
                    .complete_multipart_upload()
                    .bucket(bucket)
                    .key(key)
                    .upload_id(upload_id)
                    .multipart_upload(
                        CompletedMultipartUpload::builder()
                            .set_parts(Some(parts))
                            .build(),
                    )
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| Error::s3(OP, bucket, key, e))
            }
            Inner::Lean(l) => {
                let mut doc = String::from("<CompleteMultipartUpload>");
                for (n, tag) in parts {
                    doc.push_str(&format!("<Part><PartNumber>{n}</PartNumber>"));
                    if let Some(t) = tag {
                        doc.push_str(&format!("<ETag>{}</ETag>", escape(t)));
                    }
                    doc.push_str("</Part>");
                }
                doc.push_str("</CompleteMultipartUpload>");
                let r = l
                    .send(
                        Call::new(OP, Method::POST, bucket, key)
                            .query(&[("uploadId", upload_id)])
                            .headers(&[("content-type", "application/xml".to_owned())])
                            .body(Bytes::from(doc)),
                    )
                    .await?;
                lean::ok_unless_error_in_body(r, OP, bucket, key).await
            }
        }
    }

    /// AbortMultipartUpload.
    pub async fn abort_multipart(&self, bucket: &str, key: &str, upload_id: &str) -> Result<()> {
        const OP: &str = "AbortMultipartUpload";
        match &self.inner {
            Inner::Sdk { client, .. } => client
                .abort_multipart_upload()
                .bucket(bucket)
                .key(key)
                .upload_id(upload_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| Error::s3(OP, bucket, key, e)),
            Inner::Lean(l) => l
                .send(Call::new(OP, Method::DELETE, bucket, key).query(&[("uploadId", upload_id)]))
                .await
                .map(|_| ()),
        }
    }

    /// One page of ListMultipartUploads under `prefix`; `None` if the server does not
    /// implement it (HTTP 501 or `NotImplemented`).
    pub async fn list_uploads(
        &self,
        bucket: &str,
        prefix: &str,
        markers: Option<(String, Option<String>)>,
    ) -> Result<Option<UploadsPage>> {
        const OP: &str = "ListMultipartUploads";
        let not_impl = |e: &Error| {
            matches!(
                e,
                Error::S3 {
                    status: Some(501),
                    ..
                }
            ) || matches!(e, Error::S3 { detail, .. } if detail.contains("NotImplemented"))
        };
        let (key_marker, id_marker) = match markers {
            Some((k, i)) => (Some(k), i),
            None => (None, None),
        };
        match &self.inner {
            Inner::Sdk { client, .. } => {
                let r = client
                    .list_multipart_uploads()
                    .bucket(bucket)
                    .prefix(prefix)
                    .set_key_marker(key_marker)
                    .set_upload_id_marker(id_marker)
                    .send()
                    .await;
                let r = match r {
                    Ok(r) => r,
                    Err(e) => {
                        let e = Error::s3(OP, bucket, prefix, e);
                        return if not_impl(&e) { Ok(None) } else { Err(e) };
                    }
                };
                let uploads = r
                    .uploads()
                    .iter()
                    .filter_map(|u| {
                        Some(Upload {
                            key: u.key()?.to_owned(),
                            upload_id: u.upload_id()?.to_owned(),
                            initiated: to_system_time(u.initiated()),
                        })
                    })
                    .collect();
                let next = (r.is_truncated() == Some(true))
                    .then(|| r.next_key_marker().map(str::to_owned))
                    .flatten()
                    .map(|k| (k, r.next_upload_id_marker().map(str::to_owned)));
                Ok(Some(UploadsPage { uploads, next }))
            }
            Inner::Lean(l) => {
                let mut query = vec![("uploads", ""), ("prefix", prefix)];
                if let Some(k) = &key_marker {
                    query.push(("key-marker", k));
                }
                if let Some(i) = &id_marker {
                    query.push(("upload-id-marker", i));
                }
                let r = l
                    .send(Call::new(OP, Method::GET, bucket, "").query(&query))
                    .await;
                let r = match r {
                    Ok(r) => r,
                    Err(e) => return if not_impl(&e) { Ok(None) } else { Err(e) },
                };
                let doc: ListUploadsResult = xml(r, OP, bucket, prefix).await?;
                let uploads = doc
                    .upload
                    .into_iter()
                    .map(|u| Upload {
                        initiated: parse_time(u.initiated.as_deref()),
                        key: u.key,
                        upload_id: u.upload_id,
                    })
                    .collect();
                let next = (doc.is_truncated == Some(true))
                    .then_some(doc.next_key_marker)
                    .flatten()
                    .map(|k| (k, doc.next_upload_id_marker));
                Ok(Some(UploadsPage { uploads, next }))
            }
        }
    }

    /// DeleteObjects of up to 1,000 `keys` (quiet): the keys that could not be deleted.
    pub async fn delete_objects(&self, bucket: &str, keys: &[String]) -> Result<Vec<String>> {
        const OP: &str = "DeleteObjects";
        let first = keys.first().map_or("", String::as_str);
        match &self.inner {
            Inner::Sdk { client, .. } => {
                use aws_sdk_s3::types::{Delete, ObjectIdentifier};
                let request = |e: aws_sdk_s3::error::BuildError| Error::Request {
                    op: OP,
                    detail: e.to_string(),
                };
                let objects = keys
                    .iter()
                    .map(|k| ObjectIdentifier::builder().key(k).build())
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(request)?;
                let delete = Delete::builder()
                    .set_objects(Some(objects))
                    .quiet(true)
                    .build()
                    .map_err(request)?;
                let out = client
                    .delete_objects()
                    .bucket(bucket)
                    .delete(delete)
                    .send()
                    .await
                    .map_err(|e| Error::s3(OP, bucket, first, e))?;
                Ok(out
                    .errors()
                    .iter()
                    .filter_map(|e| e.key().map(str::to_owned))
                    .collect())
            }
            Inner::Lean(l) => {
                use base64::Engine as _;
                use md5::Digest as _;
                let mut doc = String::from("<Delete><Quiet>true</Quiet>");
                for k in keys {
                    doc.push_str(&format!("<Object><Key>{}</Key></Object>", escape(k)));
                }
                doc.push_str("</Delete>");
                // DeleteObjects requires an integrity header; Content-MD5 is the one every
                // S3 implementation accepts.
                let md5 = base64::engine::general_purpose::STANDARD
                    .encode(md5::Md5::digest(doc.as_bytes()));
                let r = l
                    .send(
                        Call::new(OP, Method::POST, bucket, "")
                            .query(&[("delete", "")])
                            .headers(&[
                                ("content-type", "application/xml".to_owned()),
                                ("content-md5", md5),
                            ])
                            .body(Bytes::from(doc)),
                    )
                    .await?;
                let doc: DeleteResult = xml(r, OP, bucket, first).await?;
                Ok(doc.error.into_iter().filter_map(|e| e.key).collect())
            }
        }
    }
}

/// The SDK's user metadata, names lowercased.
fn lowercase(m: Option<&std::collections::HashMap<String, String>>) -> BTreeMap<String, String> {
    m.map(|m| {
        m.iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect()
    })
    .unwrap_or_default()
}

/// The `x-amz-meta-` headers of a response, without the prefix (hyper lowercases names).
fn user_metadata(headers: &http::HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let name = name.as_str().strip_prefix("x-amz-meta-")?;
            Some((name.to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect()
}
