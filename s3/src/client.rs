//! The S3 client, configured for measurement (study section IV-A: "the HTTP client uses a
//! connection pool sized to the worker threads and performs no automatic retries, so
//! failures are counted rather than hidden inside latency").
//!
//! - connection pool: idle connections kept per host = the concurrency, so N workers reuse
//!   N keep-alive connections;
//! - `TCP_NODELAY` on every socket (small keep-alive requests otherwise stall ~40 ms on
//!   Nagle + delayed ACK);
//! - retries disabled, stalled-stream protection disabled (it would turn a slow server into
//!   a client-side error with its own grace period), explicit connect, read and operation
//!   timeouts;
//! - payload signing and checksums configurable, defaulting to what MinIO's own SDKs do
//!   (minio-py 7.2, the study's client, and minio-go): the SHA-256 of the body is signed over
//!   plain HTTP, `UNSIGNED-PAYLOAD` is sent over HTTPS, and no CRC checksums are added.
//!   The AWS SDK's own default (a CRC32 trailer on every upload, validation of response
//!   checksums) costs client CPU that the study's client did not spend; choose
//!   [`ChecksumPolicy::WhenSupported`] to measure it.

use std::time::Duration;

use aws_credential_types::Credentials;
use aws_sdk_s3::config::{
    BehaviorVersion, Region, RequestChecksumCalculation, ResponseChecksumValidation,
    StalledStreamProtectionConfig, retry::RetryConfig, timeout::TimeoutConfig,
};
use aws_smithy_http_client::tls;
use zeroize::Zeroizing;

use crate::{ChecksumPolicy, ClientRecord, Error, PayloadSigning, Result, S3ClientKind};

/// Everything needed to reach an S3 endpoint.
#[derive(Clone)]
pub struct S3Settings {
    /// `http://host:port` or `https://host:port`.
    pub endpoint: String,
    /// SigV4 region (Garage checks it; MinIO and the embedded server accept any).
    pub region: String,
    /// Access key id.
    pub access_key: String,
    /// Secret access key.
    pub secret_key: Zeroizing<String>,
    /// Requests in flight at once; the connection pool keeps this many idle connections.
    pub concurrency: usize,
    /// TCP connect timeout.
    pub connect_timeout: Duration,
    /// Longest wait for response bytes once a request is sent.
    pub read_timeout: Duration,
    /// Longest time one S3 request may take in all.
    pub operation_timeout: Duration,
    /// Body signing.
    pub payload_signing: PayloadSigning,
    /// Flexible checksums.
    pub checksums: ChecksumPolicy,
    /// Sign with the pod's identity instead of the keys: a web-identity token exchanged
    /// for temporary credentials (`AWS_ROLE_ARN` and `AWS_WEB_IDENTITY_TOKEN_FILE`, which
    /// IRSA on EKS sets). The keys are then empty.
    pub identity: bool,
    /// Which client [`crate::Store`] sends its requests with (`aws-sdk` or `lean`). The
    /// results bucket and [`S3Settings::client`] always use the SDK.
    pub s3_client: S3ClientKind,
    /// How lean the AWS SDK client is made (all on by default; `bench-store` turns them
    /// off one by one to measure each).
    pub sdk_knobs: SdkKnobs,
}

/// The AWS SDK settings that trim its per-request work, each measured by `bench-store
/// --s3-client aws-sdk:<knob>` (CHANGELOG, issue 19). Retries, stalled-stream protection
/// and flexible checksums are off in every configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SdkKnobs {
    /// A fixed endpoint (`endpoint/bucket`, path style) instead of the S3 endpoint rules,
    /// which the SDK otherwise evaluates on every request.
    pub fixed_endpoint: bool,
    /// Static keys handed to the signer directly, without the identity cache in between.
    pub no_identity_cache: bool,
    /// S3 Express session auth disabled (no session-credential lookups per request).
    pub no_s3_express: bool,
}

impl SdkKnobs {
    /// Every knob on (the default).
    pub const ALL: Self = Self {
        fixed_endpoint: true,
        no_identity_cache: true,
        no_s3_express: true,
    };
    /// Every knob off: the SDK as pqbench configured it before issue 19.
    pub const NONE: Self = Self {
        fixed_endpoint: false,
        no_identity_cache: false,
        no_s3_express: false,
    };
}

impl Default for SdkKnobs {
    fn default() -> Self {
        Self::ALL
    }
}

/// The endpoint of a path-style S3 server as the S3 endpoint rules resolve it for a
/// custom endpoint URL, without evaluating the rules: `endpoint/bucket`, SigV4 for `s3` in
/// the region, no double encoding of the path.
#[derive(Debug)]
struct FixedEndpoint {
    endpoint: String,
    region: String,
}

impl aws_sdk_s3::config::endpoint::ResolveEndpoint for FixedEndpoint {
    fn resolve_endpoint<'a>(
        &'a self,
        params: &'a aws_sdk_s3::config::endpoint::Params,
    ) -> aws_sdk_s3::config::endpoint::EndpointFuture<'a> {
        let url = match params.bucket() {
            Some(b) => format!("{}/{b}", self.endpoint),
            None => self.endpoint.clone(),
        };
        let scheme = aws_smithy_types::endpoint::EndpointAuthScheme::with_capacity("sigv4", 3)
            .put("disableDoubleEncoding", true)
            .put("signingName", "s3".to_owned())
            .put("signingRegion", self.region.clone());
        aws_sdk_s3::config::endpoint::EndpointFuture::ready(Ok(
            aws_sdk_s3::config::endpoint::Endpoint::builder()
                .url(url)
                .auth_scheme(scheme)
                .build(),
        ))
    }
}

impl std::fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Settings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field("concurrency", &self.concurrency)
            .field("s3_client", &self.s3_client)
            .finish_non_exhaustive()
    }
}

impl S3Settings {
    /// Settings for `endpoint` with measurement defaults: concurrency 1, region
    /// `us-east-1`, connect timeout 2 s, read timeout 30 s, operation timeout 120 s.
    pub fn new(endpoint: &str, access_key: &str, secret_key: &str) -> Self {
        Self {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            region: "us-east-1".into(),
            access_key: access_key.into(),
            secret_key: Zeroizing::new(secret_key.into()),
            concurrency: 1,
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_secs(30),
            operation_timeout: Duration::from_secs(120),
            payload_signing: PayloadSigning::Auto,
            checksums: ChecksumPolicy::WhenRequired,
            identity: false,
            s3_client: S3ClientKind::AwsSdk,
            sdk_knobs: SdkKnobs::ALL,
        }
    }

    /// Settings that sign with the pod's identity ([`S3Settings::identity`]).
    pub fn with_identity(endpoint: &str) -> Self {
        Self {
            identity: true,
            ..Self::new(endpoint, "", "")
        }
    }

    /// Whether the endpoint uses TLS.
    pub fn is_https(&self) -> bool {
        self.endpoint.starts_with("https://")
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let rest = self
            .endpoint
            .strip_prefix("http://")
            .or_else(|| self.endpoint.strip_prefix("https://"))
            .ok_or_else(|| {
                Error::Settings(format!(
                    "endpoint {:?} must start with http:// or https://",
                    self.endpoint
                ))
            })?;
        if rest.is_empty() || rest.contains('/') {
            return Err(Error::Settings(format!(
                "endpoint {:?} must be scheme://host[:port] with no path",
                self.endpoint
            )));
        }
        if !self.identity && (self.access_key.is_empty() || self.secret_key.is_empty()) {
            return Err(Error::Settings(
                "S3 credentials are empty; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
                 or pass --access-key/--secret-key"
                    .into(),
            ));
        }
        if self.concurrency == 0 {
            return Err(Error::Settings("concurrency must be at least 1".into()));
        }
        Ok(())
    }

    /// What is in effect, for records and summaries.
    pub fn record(&self) -> ClientRecord {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        ClientRecord {
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            pool_idle_per_host: self.concurrency,
            tcp_nodelay: true,
            max_attempts: 1,
            connect_timeout_ms: ms(self.connect_timeout),
            read_timeout_ms: ms(self.read_timeout),
            operation_timeout_ms: ms(self.operation_timeout),
            payload_signing: self.payload_signing,
            payload_signed: self.payload_signing.signs(self.is_https()),
            // The lean client adds no flexible checksums whatever the policy says.
            checksums: match self.s3_client {
                S3ClientKind::AwsSdk => self.checksums,
                S3ClientKind::Lean => ChecksumPolicy::WhenRequired,
            },
            client: self.s3_client,
            sdk: match self.s3_client {
                S3ClientKind::AwsSdk => format!("aws-sdk-s3 {}", aws_sdk_s3::meta::PKG_VERSION),
                S3ClientKind::Lean => crate::lean::DESCRIPTION.to_owned(),
            },
        }
    }

    /// Builds the AWS SDK client (whatever [`S3Settings::s3_client`] says: the results
    /// bucket, fixtures and tests use it). Needs a Tokio runtime when requests are sent.
    pub fn client(&self) -> Result<aws_sdk_s3::Client> {
        self.validate()?;
        let http = aws_smithy_http_client::Builder::new()
            .pool_max_idle_per_host(self.concurrency)
            .tls_provider(tls::Provider::Rustls(
                tls::rustls_provider::CryptoMode::AwsLc,
            ))
            .build_https();
        let (req_ck, resp_ck) = match self.checksums {
            ChecksumPolicy::WhenRequired => (
                RequestChecksumCalculation::WhenRequired,
                ResponseChecksumValidation::WhenRequired,
            ),
            ChecksumPolicy::WhenSupported => (
                RequestChecksumCalculation::WhenSupported,
                ResponseChecksumValidation::WhenSupported,
            ),
        };
        let knobs = self.sdk_knobs;
        let mut conf = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(Region::new(self.region.clone()))
            .credentials_provider(if self.identity {
                aws_sdk_s3::config::SharedCredentialsProvider::new(
                    aws_config::web_identity_token::WebIdentityTokenCredentialsProvider::builder()
                        .build(),
                )
            } else {
                aws_sdk_s3::config::SharedCredentialsProvider::new(Credentials::new(
                    &self.access_key,
                    self.secret_key.as_str(),
                    None,
                    None,
                    "pqbench",
                ))
            })
            .force_path_style(true)
            .http_client(http)
            .retry_config(RetryConfig::disabled())
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(self.connect_timeout)
                    .read_timeout(self.read_timeout)
                    .operation_timeout(self.operation_timeout)
                    .build(),
            )
            .request_checksum_calculation(req_ck)
            .response_checksum_validation(resp_ck);
        // The knobs apply where they are exact: a fixed endpoint only for a custom
        // endpoint URL signed with keys (AWS endpoints and identity keep the rules).
        if knobs.fixed_endpoint && !self.identity {
            conf = conf.endpoint_resolver(FixedEndpoint {
                endpoint: self.endpoint.clone(),
                region: self.region.clone(),
            });
        }
        if knobs.no_identity_cache && !self.identity {
            conf = conf.identity_cache(aws_sdk_s3::config::IdentityCache::no_cache());
        }
        if knobs.no_s3_express {
            conf = conf.disable_s3_express_session_auth(true);
        }
        Ok(aws_sdk_s3::Client::from_conf(conf.build()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn identity_settings_need_no_keys_and_keys_settings_do() {
        let s = S3Settings::with_identity("https://s3.eu-west-1.amazonaws.com");
        assert!(s.identity && s.access_key.is_empty());
        s.client().unwrap();
        let e = S3Settings::new("https://s3.example", "", "")
            .client()
            .unwrap_err();
        assert!(e.to_string().contains("credentials are empty"), "{e}");
        let c: run::runspec::Credentials = serde_json::from_str("\"identity\"").unwrap();
        assert_eq!(c, run::runspec::Credentials::Identity);
    }
}
