//! The crate's one error type, with a fixed metric label per variant ([`Error::kind`]).

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};

/// What kind of S3 failure a request met. A closed set, so it can label metrics and records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum S3Class {
    /// No TCP connection could be made (refused, unreachable, DNS).
    Connect,
    /// A connect, read or operation timeout fired.
    Timeout,
    /// The connection broke while sending or receiving (server went away mid-request).
    Io,
    /// The object or version does not exist (HTTP 404 on an object).
    NotFound,
    /// The bucket does not exist.
    NoSuchBucket,
    /// The server rejected the credentials or the signature (HTTP 403).
    Denied,
    /// Any other error response from the server.
    Service,
    /// A response that could not be parsed, or any other client-side failure.
    Other,
}

impl S3Class {
    /// Fixed label for metrics and records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "s3_connect",
            Self::Timeout => "s3_timeout",
            Self::Io => "s3_io",
            Self::NotFound => "s3_not_found",
            Self::NoSuchBucket => "s3_no_such_bucket",
            Self::Denied => "s3_denied",
            Self::Service => "s3_service",
            Self::Other => "s3_other",
        }
    }

    /// The class of an S3 error response: its error code first, then its HTTP status
    /// (a HEAD's error has no body, so no code). Both clients classify by this.
    pub(crate) fn of_response(code: Option<&str>, status: Option<u16>) -> Self {
        match (code, status) {
            (Some("NoSuchBucket"), _) => Self::NoSuchBucket,
            (Some("NoSuchKey" | "NotFound" | "NoSuchUpload"), _) | (_, Some(404)) => Self::NotFound,
            (Some("AccessDenied" | "SignatureDoesNotMatch" | "InvalidAccessKeyId"), _)
            | (_, Some(403)) => Self::Denied,
            _ => Self::Service,
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Self::Connect => {
                "cannot connect to the S3 endpoint; is the server running, and is the endpoint right?"
            }
            Self::Timeout => "the request timed out",
            Self::Io => "the connection to the S3 server broke",
            Self::NotFound => "no such object",
            Self::NoSuchBucket => "no such bucket; create it first",
            Self::Denied => {
                "access denied; check the credentials (the access key pair) and the region"
            }
            Self::Service => "the server returned an error",
            Self::Other => "the request failed",
        }
    }
}

/// Errors of the object store and the embedded server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The envelope refused the object or the key. For tampered or truncated objects this is
    /// the opaque [`envelope::Error::Decrypt`]: nothing says which check failed.
    #[error(transparent)]
    Envelope(#[from] envelope::Error),
    /// An S3 request failed. Never retried: a failure is returned and counted.
    #[error("{op} s3://{bucket}/{target}: {}: {detail}", .class.hint())]
    S3 {
        /// The S3 operation (`PutObject`, `GetObject`, ...).
        op: &'static str,
        /// The bucket.
        bucket: String,
        /// The object key or prefix.
        target: String,
        /// What kind of failure.
        class: S3Class,
        /// HTTP status, when a response arrived.
        status: Option<u16>,
        /// The full error chain, for people.
        detail: String,
    },
    /// The version is not committed (no `manifest.json` in format v1, no `object.v2` in
    /// format v2) or does not exist.
    #[error(
        "s3://{bucket}/{key}: version {version} is not committed (no {record}) or does not exist"
    )]
    NotCommitted {
        /// The bucket.
        bucket: String,
        /// The object key.
        key: String,
        /// The version asked for.
        version: String,
        /// The object whose absence says so: `manifest.json` (v1), `object.v2` (v2), or
        /// both names when either would do.
        record: &'static str,
    },
    /// Read-back verification found a stored version that differs from what was written.
    #[error("verification of s3://{bucket}/{key} version {version} failed: {reason}")]
    Verify {
        /// The bucket.
        bucket: String,
        /// The object key.
        key: String,
        /// The version.
        version: String,
        /// What differed.
        reason: String,
    },
    /// Reading the plaintext source failed or it ended early.
    #[error("reading the plaintext: {0}")]
    Source(#[source] std::io::Error),
    /// Writing the plaintext sink failed.
    #[error("writing the plaintext: {0}")]
    Sink(#[source] std::io::Error),
    /// Invalid client or store settings (endpoint, credentials, sizes, names).
    #[error("invalid setting: {0}")]
    Settings(String),
    /// A request could not be built (a bug: a required field was missing).
    #[error("building the {op} request: {detail}")]
    Request {
        /// The S3 operation.
        op: &'static str,
        /// The builder's message.
        detail: String,
    },
    /// A key-service call failed (a remote reader's key recovery, issue 41). Never retried:
    /// a failure is returned and counted, under `kms_<class>`.
    #[error(transparent)]
    KeyService(#[from] kms::Error),
    /// The embedded S3 server could not start or stop.
    #[error("embedded S3 server: {0}")]
    Server(String),
    /// What a bucket holds exceeds what the reader takes (an object's bytes, a listing's
    /// keys): read no further.
    #[error("s3://{bucket}/{target}: {what} exceeds the limit of {limit}")]
    TooLarge {
        /// The bucket.
        bucket: String,
        /// The object key or listed prefix.
        target: String,
        /// What exceeded (`an object of 9 MiB`, `more than 100000 keys`).
        what: String,
        /// The limit, for people (`8 MiB`, `100000 keys`).
        limit: String,
    },
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Fixed label for metrics and per-request records (never free text).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Envelope(e) => e.kind(),
            Self::S3 { class, .. } => class.as_str(),
            Self::NotCommitted { .. } => "not_committed",
            Self::Verify { .. } => "verify",
            Self::Source(_) => "source",
            Self::Sink(_) => "sink",
            Self::Settings(_) => "config",
            Self::Request { .. } => "request",
            Self::Server(_) => "server",
            Self::TooLarge { .. } => "too_large",
            Self::KeyService(e) => match e.class() {
                kms::KmsClass::Throttled => "kms_throttled",
                kms::KmsClass::NotFound => "kms_not_found",
                kms::KmsClass::AccessDenied => "kms_access_denied",
                kms::KmsClass::Unavailable => "kms_unavailable",
                kms::KmsClass::Timeout => "kms_timeout",
                kms::KmsClass::InvalidCiphertext => "kms_invalid_ciphertext",
                kms::KmsClass::InvalidRequest => "kms_invalid_request",
                kms::KmsClass::Other => "kms_other",
            },
        }
    }

    /// The S3 failure class, if this is an S3 error.
    pub fn s3_class(&self) -> Option<S3Class> {
        match self {
            Self::S3 { class, .. } => Some(*class),
            _ => None,
        }
    }

    /// Whether the server refused a conditional request because its condition failed
    /// (HTTP 412: the object changed since its ETag was read).
    pub fn precondition_failed(&self) -> bool {
        matches!(
            self,
            Self::S3 {
                status: Some(412),
                ..
            }
        )
    }

    /// Builds [`Error::S3`] from an SDK error, classifying it.
    pub fn s3<E>(
        op: &'static str,
        bucket: &str,
        target: &str,
        err: SdkError<E, aws_smithy_runtime_api::http::Response>,
    ) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let status = err.raw_response().map(|r| r.status().as_u16());
        let class = match &err {
            SdkError::DispatchFailure(_) if not_http(&err) => S3Class::Other,
            SdkError::TimeoutError(_) => S3Class::Timeout,
            SdkError::DispatchFailure(d) if d.is_timeout() => S3Class::Timeout,
            SdkError::DispatchFailure(d) if d.is_io() => {
                // hyper reports a refused connection and a reset mid-request alike as I/O;
                // the connector's "connect" wording tells them apart.
                let text = chain(&err);
                if text.contains("connect") || text.contains("Connection refused") {
                    S3Class::Connect
                } else {
                    S3Class::Io
                }
            }
            SdkError::DispatchFailure(_) => S3Class::Connect,
            SdkError::ResponseError(_) => S3Class::Io,
            SdkError::ServiceError(s) => S3Class::of_response(s.err().code(), status),
            _ => S3Class::Other,
        };
        Self::S3 {
            op,
            bucket: bucket.to_owned(),
            target: target.to_owned(),
            class,
            status,
            detail: match status {
                // The SDK's text for an error page that is not S3 XML is "unhandled error:
                // Error"; the status is what tells a proxy's 502 from a server's refusal.
                Some(st) if !(200..300).contains(&st) => format!("HTTP {st}: {}", detail(&err)),
                _ => detail(&err),
            },
        }
    }
}

/// True if the endpoint answered with something that is not an HTTP response (bytes that
/// do not parse, a head over hyper's limit): the server is there, so "cannot connect" and
/// "the connection broke" would send the user the wrong way. Both clients use hyper 1, whose
/// error says so ([`hyper::Error::is_parse`]).
pub(crate) fn not_http(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if e.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_parse)
        {
            return true;
        }
        cur = e.source();
    }
    false
}

/// [`chain`], led by what a malformed answer means ([`not_http`]).
pub(crate) fn detail(err: &(dyn std::error::Error + 'static)) -> String {
    if not_http(err) {
        format!(
            "the endpoint's answer is not an HTTP response (is the endpoint an S3 server?): {}",
            chain(err)
        )
    } else {
        chain(err)
    }
}

/// The error and its sources as one line of Display texts, without the Debug dump that
/// `DisplayErrorContext` appends.
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every label a request's error can write into the records reads back as itself
    /// (`run::records` interns the labels it knows; any other reads back as `unknown`).
    #[test]
    fn every_error_label_is_known_to_the_records() {
        let s3 = [
            S3Class::Connect,
            S3Class::Timeout,
            S3Class::Io,
            S3Class::NotFound,
            S3Class::NoSuchBucket,
            S3Class::Denied,
            S3Class::Service,
            S3Class::Other,
        ]
        .map(|class| Error::S3 {
            op: "GetObject",
            bucket: String::new(),
            target: String::new(),
            class,
            status: None,
            detail: String::new(),
        });
        let kms = [
            kms::KmsClass::Throttled,
            kms::KmsClass::NotFound,
            kms::KmsClass::AccessDenied,
            kms::KmsClass::Unavailable,
            kms::KmsClass::Timeout,
            kms::KmsClass::InvalidCiphertext,
            kms::KmsClass::InvalidRequest,
            kms::KmsClass::Other,
        ]
        .map(|class| {
            Error::KeyService(kms::Error::Service {
                op: kms::Op::Decapsulate,
                class,
                code: String::new(),
                status: 400,
                message: String::new(),
            })
        });
        let others = [
            Error::Envelope(envelope::Error::Decrypt),
            Error::Envelope(envelope::Error::Header(String::new())),
            Error::Envelope(envelope::Error::NotPostQuantum(String::new())),
            Error::NotCommitted {
                bucket: String::new(),
                key: String::new(),
                version: String::new(),
                record: "",
            },
            Error::Settings(String::new()),
            Error::Request {
                op: "",
                detail: String::new(),
            },
            Error::TooLarge {
                bucket: String::new(),
                target: String::new(),
                what: String::new(),
                limit: String::new(),
            },
        ];
        for e in s3.iter().chain(&kms).chain(&others) {
            assert!(
                run::records::KNOWN_ERROR_CLASSES.contains(&e.kind()),
                "{} is not among the records' error classes",
                e.kind()
            );
        }
    }
}
