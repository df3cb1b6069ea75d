//! The lean S3 client (`s3.client: lean`): one HTTP/1.1 request per S3 call over hyper 1's
//! pooled client, signed with SigV4 by `aws-sigv4` (the AWS SDK's own signer, used alone),
//! and nothing else on the request path: no interceptors, endpoint rules, retry or
//! identity layers, no per-request configuration.
//!
//! - Pool: hyper-util's legacy client keeps `concurrency` idle keep-alive connections per
//!   host; every socket has `TCP_NODELAY`; connect timeout from the settings.
//! - Signing (AWS SigV4, "Signature Version 4 signing process", S3 variant): single
//!   percent-encoding of the path, no path normalisation, the `x-amz-content-sha256` header
//!   holding the body's SHA-256 (signed payload) or `UNSIGNED-PAYLOAD`, as
//!   [`crate::PayloadSigning`] decides.
//! - Timeouts: the operation timeout bounds the wait for the response head; the read
//!   timeout bounds each wait for response body bytes. Both fail as [`S3Class::Timeout`].
//! - Errors are classified as the SDK path classifies them ([`crate::Error::S3`]): the S3
//!   error document's `Code` first, then the HTTP status; connection failures by kind.
//! - Plain `http://` only: the client is for the in-cluster data path, where TLS would be
//!   measured as well; an `https://` endpoint is refused at construction.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use crate::{Error, Result, S3Class, S3Settings};

/// Characters SigV4 leaves unencoded in a query value: the RFC 3986 unreserved set.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');
/// In an object key's path, `/` stays as it is as well.
const PATH: &AsciiSet = &QUERY.remove(b'/');

/// `key` percent-encoded as a path (its `/` kept): the form `x-amz-copy-source` takes.
pub(crate) fn encode_path(key: &str) -> String {
    utf8_percent_encode(key, PATH).to_string()
}

/// Bytes asked of the socket per read: a 64 KiB object (or a part's chunk) in a few reads
/// rather than hyper's adaptive 8 KiB start, which doubled the receive calls per GET.
const READ_BUF: usize = 64 * 1024;

/// The largest error document read from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The crates doing the work, for [`crate::ClientRecord::sdk`].
pub(crate) const DESCRIPTION: &str = "lean: hyper 1 + hyper-util legacy client, aws-sigv4 1";

/// One S3 request as the lean client sends it.
pub(crate) struct Call<'a> {
    /// The S3 operation, for errors.
    pub(crate) op: &'static str,
    /// HTTP method.
    pub(crate) method: Method,
    /// The bucket.
    pub(crate) bucket: &'a str,
    /// The object key (`""` for a bucket-level request).
    pub(crate) key: &'a str,
    /// Query parameters, unencoded (`("uploads", "")` for a bare `?uploads`).
    pub(crate) query: &'a [(&'a str, &'a str)],
    /// Extra headers, signed.
    pub(crate) headers: &'a [(&'static str, String)],
    /// The body.
    pub(crate) body: Bytes,
}

impl<'a> Call<'a> {
    /// A call without query, extra headers or body.
    pub(crate) fn new(op: &'static str, method: Method, bucket: &'a str, key: &'a str) -> Self {
        Self {
            op,
            method,
            bucket,
            key,
            query: &[],
            headers: &[],
            body: Bytes::new(),
        }
    }

    /// With query parameters.
    pub(crate) fn query(self, query: &'a [(&'a str, &'a str)]) -> Self {
        Self { query, ..self }
    }

    /// With extra (signed) headers.
    pub(crate) fn headers(self, headers: &'a [(&'static str, String)]) -> Self {
        Self { headers, ..self }
    }

    /// With a body.
    pub(crate) fn body(self, body: Bytes) -> Self {
        Self { body, ..self }
    }
}

/// The lean client: a pool, the credentials and the endpoint.
#[derive(Clone)]
pub(crate) struct Lean {
    http: Client<HttpConnector, Full<Bytes>>,
    endpoint: String,
    region: String,
    identity: Identity,
    sign_payload: bool,
    read_timeout: Duration,
    operation_timeout: Duration,
}

impl std::fmt::Debug for Lean {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lean")
            .field("endpoint", &self.endpoint)
            .field("sign_payload", &self.sign_payload)
            .finish_non_exhaustive()
    }
}

/// A response whose head arrived with a success status; its body is read frame by frame.
pub(crate) struct Response {
    pub(crate) headers: HeaderMap,
    body: Incoming,
    read_timeout: Duration,
}

impl Response {
    /// The next body frame's data; `None` at the end. Trailers are skipped.
    pub(crate) async fn next(&mut self) -> std::result::Result<Option<Bytes>, BodyError> {
        loop {
            let frame = tokio::time::timeout(self.read_timeout, self.body.frame())
                .await
                .map_err(|_| BodyError::Timeout)?;
            match frame {
                None => return Ok(None),
                Some(Err(e)) => return Err(BodyError::Io(crate::error::chain(&e))),
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data()
                        && !data.is_empty()
                    {
                        return Ok(Some(data));
                    }
                }
            }
        }
    }

    /// The whole body (bounded by `limit` bytes).
    pub(crate) async fn collect(mut self, limit: usize) -> std::result::Result<Bytes, BodyError> {
        let mut out = Vec::new();
        while let Some(b) = self.next().await? {
            if out.len() + b.len() > limit {
                return Err(BodyError::TooLong(limit));
            }
            out.extend_from_slice(&b);
        }
        Ok(Bytes::from(out))
    }

    /// `Content-Length`, if announced.
    pub(crate) fn content_length(&self) -> Option<u64> {
        header_u64(&self.headers, http::header::CONTENT_LENGTH)
    }
}

fn header_u64(h: &HeaderMap, name: http::header::HeaderName) -> Option<u64> {
    h.get(name)?.to_str().ok()?.parse().ok()
}

/// A response body that broke off.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// No bytes within the read timeout.
    Timeout,
    /// The connection failed.
    Io(String),
    /// Longer than the caller accepts.
    TooLong(usize),
}

impl BodyError {
    pub(crate) fn into_error(self, op: &'static str, bucket: &str, target: &str) -> Error {
        let (class, detail) = match self {
            Self::Timeout => (
                S3Class::Timeout,
                "no response bytes within the read timeout".into(),
            ),
            Self::Io(d) => (S3Class::Io, d),
            Self::TooLong(n) => (
                S3Class::Other,
                format!("the response body exceeds {n} bytes"),
            ),
        };
        Error::S3 {
            op,
            bucket: bucket.to_owned(),
            target: target.to_owned(),
            class,
            status: None,
            detail,
        }
    }
}

/// S3's error document (`<Error><Code>…</Code><Message>…</Message></Error>`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ErrorDoc {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// The error of an S3 error document (or of a bare status, as for HEAD).
pub(crate) fn service_error(
    op: &'static str,
    bucket: &str,
    target: &str,
    status: u16,
    body: &[u8],
) -> Error {
    let doc: ErrorDoc = std::str::from_utf8(body)
        .ok()
        .and_then(|s| quick_xml::de::from_str(s).ok())
        .unwrap_or_default();
    let class = S3Class::of_response(doc.code.as_deref(), Some(status));
    let mut detail = format!("HTTP {status}");
    if let Some(c) = &doc.code {
        detail.push_str(&format!(" {c}"));
    }
    if let Some(m) = &doc.message {
        detail.push_str(&format!(": {m}"));
    }
    Error::S3 {
        op,
        bucket: bucket.to_owned(),
        target: target.to_owned(),
        class,
        status: Some(status),
        detail,
    }
}

/// The S3 error code of an error [`service_error`] made (its detail starts
/// `HTTP <status> <Code>`).
pub(crate) fn code_of(e: &Error) -> Option<&str> {
    match e {
        Error::S3 {
            status: Some(_),
            detail,
            ..
        } => detail
            .strip_prefix("HTTP ")?
            .split_whitespace()
            .nth(1)
            .map(|c| c.trim_end_matches(':')),
        _ => None,
    }
}

/// `Ok` unless the 200 response `r` of `op` holds an S3 error document in its body
/// (CompleteMultipartUpload and CopyObject may report a failure so).
pub(crate) async fn ok_unless_error_in_body(
    r: Response,
    op: &'static str,
    bucket: &str,
    key: &str,
) -> Result<()> {
    let body = r
        .collect(1024 * 1024)
        .await
        .map_err(|e| e.into_error(op, bucket, key))?;
    if error_in_ok(&body) {
        Err(service_error(op, bucket, key, 200, &body))
    } else {
        Ok(())
    }
}

/// Whether `body`, which arrived with status 200, is an S3 error document
/// (CompleteMultipartUpload may report a failure so).
pub(crate) fn error_in_ok(body: &[u8]) -> bool {
    std::str::from_utf8(body)
        .ok()
        .and_then(root_element)
        .is_some_and(|root| root == "Error")
}

/// The name of an XML document's root element.
fn root_element(text: &str) -> Option<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) | Event::Empty(e) => {
                return Some(String::from_utf8_lossy(e.name().as_ref()).into_owned());
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

impl Lean {
    /// The client for `settings` (plain `http://` endpoints, static keys).
    pub(crate) fn new(settings: &S3Settings) -> Result<Self> {
        if settings.is_https() {
            return Err(Error::Settings(format!(
                "the lean S3 client speaks plain http only, and {} is https; use the \
                 aws-sdk client (s3Client: aws-sdk, --s3-client aws-sdk) for TLS endpoints",
                settings.endpoint
            )));
        }
        if settings.identity {
            return Err(Error::Settings(
                "the lean S3 client signs with static keys only; use the aws-sdk client \
                 (s3Client: aws-sdk) with pod identity (IRSA)"
                    .into(),
            ));
        }
        let mut conn = HttpConnector::new();
        conn.set_nodelay(true);
        conn.set_connect_timeout(Some(settings.connect_timeout));
        let http = Client::builder(TokioExecutor::new())
            .http1_read_buf_exact_size(READ_BUF)
            .pool_max_idle_per_host(settings.concurrency)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(conn);
        let identity: Identity = Credentials::new(
            &settings.access_key,
            settings.secret_key.as_str(),
            None,
            None,
            "pqbench",
        )
        .into();
        Ok(Self {
            http,
            endpoint: settings.endpoint.clone(),
            region: settings.region.clone(),
            identity,
            sign_payload: settings.payload_signing.signs(false),
            read_timeout: settings.read_timeout,
            operation_timeout: settings.operation_timeout,
        })
    }

    fn uri(&self, bucket: &str, key: &str, query: &[(&str, &str)]) -> String {
        let mut uri = format!("{}/{}", self.endpoint, utf8_percent_encode(bucket, PATH));
        if !key.is_empty() {
            uri.push('/');
            uri.extend(utf8_percent_encode(key, PATH));
        }
        for (i, (k, v)) in query.iter().enumerate() {
            uri.push(if i == 0 { '?' } else { '&' });
            uri.extend(utf8_percent_encode(k, QUERY));
            uri.push('=');
            uri.extend(utf8_percent_encode(v, QUERY));
        }
        uri
    }

    fn signed(&self, call: &Call<'_>) -> Result<Request<Full<Bytes>>> {
        let target = || call.key.to_owned();
        let fail = |detail: String| Error::S3 {
            op: call.op,
            bucket: call.bucket.to_owned(),
            target: target(),
            class: S3Class::Other,
            status: None,
            detail,
        };
        let uri = self.uri(call.bucket, call.key, call.query);
        let mut settings = SigningSettings::default();
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params = v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| fail(format!("signing parameters: {e}")))?
            .into();
        // The signer hashes the payload itself (sha2, SHA-NI where the CPU has it): a
        // quarter of a 64 KiB PUT's client CPU, about what aws-lc's SHA-256 costs too.
        let body = if self.sign_payload || call.body.is_empty() {
            SignableBody::Bytes(&call.body)
        } else {
            SignableBody::UnsignedPayload
        };
        // Requests without a body carry no Content-Length, as curl and the SDK send them.
        let len = call.body.len().to_string();
        let has_body = !(call.body.is_empty()
            && matches!(call.method, Method::GET | Method::HEAD | Method::DELETE));
        let mut headers: Vec<(&str, &str)> =
            call.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        if has_body {
            headers.push(("content-length", &len));
        }
        let signable = SignableRequest::new(call.method.as_str(), &uri, headers.into_iter(), body)
            .map_err(|e| fail(format!("signing: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| fail(format!("signing: {e}")))?
            .into_parts();
        let mut req = Request::builder().method(call.method.clone()).uri(&uri);
        for (k, v) in call.headers {
            req = req.header(*k, v);
        }
        if has_body {
            req = req.header(
                http::header::CONTENT_LENGTH,
                HeaderValue::from(call.body.len()),
            );
        }
        let mut req = req
            .body(Full::new(call.body.clone()))
            .map_err(|e| fail(format!("building the request: {e}")))?;
        instructions.apply_to_request_http1x(&mut req);
        Ok(req)
    }

    /// Sends `call` and returns the response once its head arrived with a 2xx status;
    /// any other status is read as an S3 error document.
    pub(crate) async fn send(&self, call: Call<'_>) -> Result<Response> {
        let req = self.signed(&call)?;
        let err = |class: S3Class, status: Option<u16>, detail: String| Error::S3 {
            op: call.op,
            bucket: call.bucket.to_owned(),
            target: call.key.to_owned(),
            class,
            status,
            detail,
        };
        let wait = self
            .operation_timeout
            .min(self.read_timeout.max(Duration::from_millis(1)));
        let resp = match tokio::time::timeout(wait, self.http.request(req)).await {
            Err(_) => {
                return Err(err(
                    S3Class::Timeout,
                    None,
                    format!("no response within {wait:?}"),
                ));
            }
            Ok(Err(e)) => {
                let class = if crate::error::not_http(&e) {
                    S3Class::Other
                } else if e.is_connect() {
                    if crate::error::chain(&e).contains("timed out") {
                        S3Class::Timeout
                    } else {
                        S3Class::Connect
                    }
                } else {
                    S3Class::Io
                };
                return Err(err(class, None, crate::error::detail(&e)));
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status();
        let (parts, body) = resp.into_parts();
        let mut response = Response {
            headers: parts.headers,
            body,
            read_timeout: self.read_timeout,
        };
        if status.is_success() {
            return Ok(response);
        }
        let text = if call.method == Method::HEAD || status == StatusCode::NOT_MODIFIED {
            Bytes::new()
        } else {
            let mut out = Vec::new();
            while let Ok(Some(b)) = response.next().await {
                out.extend_from_slice(&b);
                if out.len() > MAX_ERROR_BODY {
                    break;
                }
            }
            Bytes::from(out)
        };
        Err(service_error(
            call.op,
            call.bucket,
            call.key,
            status.as_u16(),
            &text,
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn keys_and_query_values_are_encoded_as_sigv4_expects() {
        let s = S3Settings::new("http://127.0.0.1:9000", "ak", "sk");
        let l = Lean::new(&s).unwrap();
        assert_eq!(
            l.uri(
                "b",
                "t/a b+c~.pqcs/v/data.enc",
                &[("uploadId", "x/y=z"), ("uploads", "")]
            ),
            "http://127.0.0.1:9000/b/t/a%20b%2Bc~.pqcs/v/data.enc?uploadId=x%2Fy%3Dz&uploads="
        );
        assert_eq!(l.uri("b", "", &[]), "http://127.0.0.1:9000/b");
    }

    #[test]
    fn https_and_identity_are_refused_with_what_to_use_instead() {
        let e = Lean::new(&S3Settings::new("https://s3.example", "ak", "sk")).unwrap_err();
        assert!(e.to_string().contains("use the aws-sdk client"), "{e}");
        let e = Lean::new(&S3Settings::with_identity("http://minio:9000")).unwrap_err();
        assert!(e.to_string().contains("static keys only"), "{e}");
    }

    #[test]
    fn error_documents_are_classified_like_the_sdk_does() {
        let doc = b"<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>gone</Message></Error>";
        let e = service_error("GetObject", "b", "k", 404, doc);
        assert_eq!(e.s3_class(), Some(S3Class::NoSuchBucket));
        assert!(e.to_string().contains("HTTP 404 NoSuchBucket: gone"), "{e}");
        assert_eq!(code_of(&e), Some("NoSuchBucket"));
        let e = service_error("HeadObject", "b", "k", 404, b"");
        assert_eq!(e.s3_class(), Some(S3Class::NotFound));
        assert_eq!(code_of(&e), None);
        let e = service_error(
            "PutObject",
            "b",
            "k",
            403,
            b"<Error><Code>SignatureDoesNotMatch</Code></Error>",
        );
        assert_eq!(e.s3_class(), Some(S3Class::Denied));
        let e = service_error("PutObject", "b", "k", 500, b"not xml");
        assert_eq!(e.s3_class(), Some(S3Class::Service));
        assert!(error_in_ok(doc));
        assert!(!error_in_ok(
            b"<?xml version=\"1.0\"?><CompleteMultipartUploadResult><ETag>x</ETag></CompleteMultipartUploadResult>"
        ));
    }
}
