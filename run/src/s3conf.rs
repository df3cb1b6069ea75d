//! The S3 client's settings as the run files record them (docs/src/runs.md, "Run files": `client`
//! in `summary.json`): payload signing, checksums, and the resolved client configuration. The `s3`
//! crate builds the client from these; this module holds only the values.

use serde::{Deserialize, Serialize};

/// How the SigV4 signature covers the request body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PayloadSigning {
    /// MinIO SDK behaviour: signed SHA-256 over `http://`, `UNSIGNED-PAYLOAD` over `https://`.
    #[default]
    Auto,
    /// Always hash and sign the body (one SHA-256 pass over every uploaded byte).
    Signed,
    /// Never hash the body (`UNSIGNED-PAYLOAD`).
    Unsigned,
}

impl PayloadSigning {
    /// Whether bodies are signed for an endpoint with this scheme.
    pub fn signs(self, https: bool) -> bool {
        match self {
            Self::Auto => !https,
            Self::Signed => true,
            Self::Unsigned => false,
        }
    }
}

impl std::str::FromStr for PayloadSigning {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "signed" => Ok(Self::Signed),
            "unsigned" => Ok(Self::Unsigned),
            _ => Err(format!(
                "unknown payload signing {s:?}; use auto, signed or unsigned"
            )),
        }
    }
}

/// When the SDK adds and validates flexible checksums (CRC32 and friends).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChecksumPolicy {
    /// Only where the S3 API requires one (MinIO SDK behaviour).
    #[default]
    WhenRequired,
    /// Wherever the operation supports one (the AWS SDK default): a CRC32 on every upload and
    /// validation of response checksums.
    WhenSupported,
}

impl std::str::FromStr for ChecksumPolicy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "when-required" => Ok(Self::WhenRequired),
            "when-supported" => Ok(Self::WhenSupported),
            _ => Err(format!(
                "unknown checksum policy {s:?}; use when-required or when-supported"
            )),
        }
    }
}

pub use campaign::spec::S3ClientKind;

/// The client options in effect, recorded with every result (no credentials).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRecord {
    /// Endpoint URL.
    pub endpoint: String,
    /// SigV4 region.
    pub region: String,
    /// Idle connections kept in the pool.
    pub pool_idle_per_host: usize,
    /// Always true: `TCP_NODELAY` is set on every socket.
    pub tcp_nodelay: bool,
    /// Always 1: automatic retries are disabled.
    pub max_attempts: u32,
    /// Connect timeout in milliseconds.
    pub connect_timeout_ms: u64,
    /// Read timeout in milliseconds.
    pub read_timeout_ms: u64,
    /// Operation timeout in milliseconds.
    pub operation_timeout_ms: u64,
    /// The configured payload-signing option.
    pub payload_signing: PayloadSigning,
    /// Whether bodies are actually signed on this endpoint.
    pub payload_signed: bool,
    /// Flexible checksum policy.
    pub checksums: ChecksumPolicy,
    /// Which client sent the requests (absent in files written before there were two:
    /// `aws-sdk`).
    #[serde(default)]
    pub client: S3ClientKind,
    /// The client's crates and versions (`aws-sdk-s3 1.157.0`, or `lean: hyper 1, aws-sigv4 1.6`).
    pub sdk: String,
}
