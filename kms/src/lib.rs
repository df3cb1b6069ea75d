//! # kms: a remote key service on the data path (issue 41)
//!
//! Most teams on AWS encrypt objects with the data key unwrapped by a key service over the
//! network; the study names this as a limit it could not measure (section VI). This crate
//! puts it on pqbench's data path with the protocol of AWS KMS, whose ML-KEM keys
//! decapsulate in the service (`Decapsulate`, with implicit rejection):
//!
//! - [`wire`]: the subset of the AWS KMS JSON 1.1 protocol spoken (`CreateKey`,
//!   `GetPublicKey`, `Decapsulate`, `DeriveSharedSecret`), its shapes checked against the
//!   AWS service model (`kms/PROTOCOL.md`, `kms/tests/fixtures/kms-api.json`).
//! - [`sigv4`]: SigV4 verification (the service) and signing (the client).
//! - [`Client`]: an async client over hyper's pooled HTTP/1.1 client, one request per call,
//!   no retries (a timed run counts every failure), errors in [`KmsClass`]es.
//! - [`RemoteKey`]: what a reader uses: a client, the recipient's key id, and an optional
//!   cache of shared secrets; it performs an [`envelope::KeyRequest`] in the service.
//! - [`KeyStore`] and [`EmbeddedKms`]: the embedded key service `pqbench serve-kms` runs,
//!   its keys in pqbench key files (0600) outside any git working tree, with an added
//!   round-trip time and a rate limit, on `127.0.0.1` by default.
//!
//! The envelope format does not change: a remote reader's object is an ordinary v1 object
//! for the recipient key, and the shared secret the service returns is the one the local
//! key recovers, so objects open with either.

mod client;
mod server;
pub mod sigv4;
mod store;
pub mod wire;

use std::path::PathBuf;

pub use client::{CacheCounts, Client, KmsSettings, Recovered, RemoteKey};
pub use server::{EmbeddedKms, MetricsSource, ServiceOptions};
pub use store::KeyStore;
pub use wire::{KeySpec, Op};

/// What kind of failure a key-service call met: a low-cardinality label for run records,
/// metrics and the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KmsClass {
    /// The service refused for its request rate (`ThrottlingException`).
    Throttled,
    /// No such key (`NotFoundException`).
    NotFound,
    /// Authentication or authorisation failed (`AccessDeniedException`, the signature
    /// errors, `UnrecognizedClientException`).
    AccessDenied,
    /// The service is unavailable: refused connection, reset, 5xx (`KMSInternalException`,
    /// `KeyUnavailableException`, `DependencyTimeoutException`).
    Unavailable,
    /// No answer within the timeout.
    Timeout,
    /// The ciphertext does not fit the key (`InvalidCiphertextException`: wrong length).
    InvalidCiphertext,
    /// The request is not valid for the key or the service (`ValidationException`,
    /// `InvalidKeyUsageException`, `UnsupportedOperationException`, ...).
    InvalidRequest,
    /// Anything else, including a response that does not follow the protocol.
    Other,
}

impl KmsClass {
    /// The label.
    pub const fn name(self) -> &'static str {
        match self {
            KmsClass::Throttled => "throttled",
            KmsClass::NotFound => "not_found",
            KmsClass::AccessDenied => "access_denied",
            KmsClass::Unavailable => "unavailable",
            KmsClass::Timeout => "timeout",
            KmsClass::InvalidCiphertext => "invalid_ciphertext",
            KmsClass::InvalidRequest => "invalid_request",
            KmsClass::Other => "other",
        }
    }

    /// The class of an error response: its code first, then its HTTP status.
    pub fn of(code: &str, status: u16) -> KmsClass {
        match code {
            "ThrottlingException" => KmsClass::Throttled,
            "NotFoundException" => KmsClass::NotFound,
            "AccessDeniedException"
            | "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "IncompleteSignatureException"
            | "MissingAuthenticationTokenException"
            | "ExpiredTokenException" => KmsClass::AccessDenied,
            "KMSInternalException" | "KeyUnavailableException" | "ServiceUnavailableException" => {
                KmsClass::Unavailable
            }
            "DependencyTimeoutException" => KmsClass::Timeout,
            "InvalidCiphertextException" => KmsClass::InvalidCiphertext,
            "ValidationException"
            | "SerializationException"
            | "UnknownOperationException"
            | "InvalidKeyUsageException"
            | "UnsupportedOperationException"
            | "DisabledException"
            | "KMSInvalidStateException"
            | "InvalidArnException"
            | "InvalidGrantTokenException"
            | "DryRunOperationException"
            // CreateKey's: quotas on keys, policies, tags, custom key stores.
            | "LimitExceededException"
            | "MalformedPolicyDocumentException"
            | "TagException"
            | "CustomKeyStoreNotFoundException"
            | "CustomKeyStoreInvalidStateException"
            | "CloudHsmClusterInvalidConfigurationException"
            | "XksKeyInvalidConfigurationException"
            | "XksKeyAlreadyInUseException"
            | "XksKeyNotFoundException" => KmsClass::InvalidRequest,
            _ if status == 429 => KmsClass::Throttled,
            _ if status == 403 => KmsClass::AccessDenied,
            _ if status >= 500 => KmsClass::Unavailable,
            _ => KmsClass::Other,
        }
    }
}

impl std::fmt::Display for KmsClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of the kms crate. Messages hold public facts only: never a shared secret,
/// a secret key or a credential.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key service answered with an error.
    #[error("key service {op}: {code} (HTTP {status}, {class}): {message}")]
    Service {
        /// The operation.
        op: Op,
        /// Its class.
        class: KmsClass,
        /// AWS's error code.
        code: String,
        /// The HTTP status.
        status: u16,
        /// The service's message.
        message: String,
    },
    /// The key service could not be reached or did not answer in time.
    #[error("key service {op} at {endpoint}: {class}: {detail}")]
    Transport {
        /// The operation.
        op: Op,
        /// `unavailable` or `timeout`.
        class: KmsClass,
        /// The endpoint.
        endpoint: String,
        /// What happened.
        detail: String,
    },
    /// The service's answer does not follow the protocol.
    #[error("key service {op}: malformed response: {detail}")]
    Protocol {
        /// The operation.
        op: Op,
        /// What is wrong.
        detail: String,
    },
    /// A request the service refuses before any key is used (its message says why), or an
    /// argument the client refuses.
    #[error("{0}")]
    Request(String),
    /// Client or service settings that cannot work (says which and what to do).
    #[error("key service settings: {0}")]
    Settings(String),
    /// The key store directory or one of its files.
    #[error("key store {}: {reason}", path.display())]
    Store {
        /// The directory or file.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A key or envelope operation failed.
    #[error(transparent)]
    Envelope(#[from] envelope::Error),
}

impl Error {
    /// The class of a call's failure (`other` for errors that are not a call's).
    pub fn class(&self) -> KmsClass {
        match self {
            Error::Service { class, .. } | Error::Transport { class, .. } => *class,
            Error::Protocol { .. } => KmsClass::Other,
            Error::Request(_) => KmsClass::InvalidRequest,
            Error::Settings(_) | Error::Store { .. } | Error::Envelope(_) => KmsClass::Other,
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_code_the_model_lists_for_our_operations_has_a_class() {
        let fixture: serde_json::Value =
            serde_json::from_str(include_str!("../tests/fixtures/kms-api.json"))
                .unwrap_or_else(|e| panic!("{e}"));
        for op in Op::ALL {
            let errors = fixture["operations"][op.name()]["errors"]
                .as_array()
                .unwrap_or_else(|| panic!("{op} has no errors in the fixture"));
            for e in errors {
                let code = e.as_str().unwrap_or_default();
                assert_ne!(
                    KmsClass::of(code, 400),
                    KmsClass::Other,
                    "{op} may answer {code}: it needs a class"
                );
            }
        }
        assert_eq!(KmsClass::of("Whatever", 503), KmsClass::Unavailable);
        assert_eq!(KmsClass::of("Whatever", 429), KmsClass::Throttled);
    }
}
