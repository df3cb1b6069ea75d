//! The parts of a campaign only a cluster uses (issue 6: the operator): the S3 server
//! (MinIO deployed by the operator, or an external endpoint), the client pods, the results
//! bucket, telemetry, phase deadlines and clean-up. `pqbench run` on one machine ignores
//! them (it says so), so the same file runs in both places.
//!
//! Kubernetes shapes (`resources`, `nodeSelector`, `tolerations`, `affinity`,
//! `imagePullSecrets`) are written as in a pod spec; this crate keeps them as plain data
//! (no Kubernetes dependency) and the operator turns them into the API types.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::units::Dur;

/// The node-group label of EKS managed node groups; `nodeGroup: clients` becomes
/// `nodeSelector: {eks.amazonaws.com/nodegroup: clients}` unless `nodeSelector` is given.
pub const NODE_GROUP_LABEL: &str = "eks.amazonaws.com/nodegroup";

/// Default MinIO image (pinned by tag; override with `server.minio.image`).
pub const DEFAULT_MINIO_IMAGE: &str = "quay.io/minio/minio:RELEASE.2025-09-07T16-13-09Z";

/// Compute resources of a container, as in a pod spec (`cpu: "2"`, `memory: 4Gi`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    /// Requests by resource name (`cpu`, `memory`), as Kubernetes quantities.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, Quantity>,
    /// Limits by resource name. A CPU limit on the clients caps the cores a worker pod can
    /// use; the run summary reports the cores available from the cgroup quota.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<String, Quantity>,
}

/// A Kubernetes quantity (`"500m"`, `"2"`, `4Gi`, or a number).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Quantity(pub String);

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Q {
            S(String),
            U(u64),
            F(f64),
        }
        Ok(Self(match Q::deserialize(d)? {
            Q::S(s) => s,
            Q::U(n) => n.to_string(),
            Q::F(x) => x.to_string(),
        }))
    }
}

/// A toleration, as in a pod spec.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    /// Taint key (empty with `operator: Exists` tolerates everything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `Equal` (default) or `Exists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Taint value (with `Equal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty matches all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// With `NoExecute`: how long the pod stays bound after the taint appears.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// A reference to a Secret by name, as in `imagePullSecrets`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretName {
    /// Name of a Secret in the campaign's namespace.
    pub name: String,
}

/// Whether `name` is a DNS-1123 subdomain (a Secret's name, a host name): at most 253
/// characters, dot-separated labels of lower-case letters, digits and '-', each starting and
/// ending with a letter or digit.
pub fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The node selector of a pod in `node_group`: `explicit` if given, else
/// [`NODE_GROUP_LABEL`]`: node_group`.
pub fn node_selector(
    explicit: Option<&BTreeMap<String, String>>,
    node_group: &str,
) -> BTreeMap<String, String> {
    explicit
        .cloned()
        .unwrap_or_else(|| BTreeMap::from([(NODE_GROUP_LABEL.to_owned(), node_group.to_owned())]))
}

/// MinIO, deployed by the operator as a one-replica StatefulSet with a headless Service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MinioServer {
    /// Container image.
    #[serde(default = "default_minio_image")]
    pub image: String,
    /// Container resources (the study gave the server a whole node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// Where MinIO keeps its data.
    #[serde(default)]
    pub storage: Storage,
}

fn default_minio_image() -> String {
    DEFAULT_MINIO_IMAGE.to_owned()
}

impl Default for MinioServer {
    fn default() -> Self {
        Self {
            image: default_minio_image(),
            resources: None,
            storage: Storage::default(),
        }
    }
}

/// MinIO's data volume.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Storage {
    /// A PersistentVolumeClaim of this size (`100Gi`); an emptyDir when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
    /// Storage class of the claim (the cluster default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
}

/// An S3 endpoint the campaign uses as it is (the operator deploys nothing for it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExternalServer {
    /// Endpoint URL (`https://s3.eu-west-1.amazonaws.com`).
    pub endpoint: String,
    /// Secret with `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`; absent: the pods'
    /// identity (IRSA: `clients.serviceAccountName` for the workers, the operator's own
    /// ServiceAccount for the operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
    /// Region for SigV4.
    #[serde(default = "default_region")]
    pub region: String,
    /// Bucket under test (must exist).
    pub bucket: String,
}

fn default_region() -> String {
    "us-east-1".to_owned()
}

/// The results bucket: every run's files, then `report.json`, `report.md` and the plots.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Results {
    /// Bucket name (`pqbench-results` when absent); created on the campaign's own MinIO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<String>,
    /// Endpoint of an external results store; absent: the server under test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Credentials for the external results store (keys as for `server.external`);
    /// absent with `endpoint`: the pods' identity, as for `server.external`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
    /// Signing region of the external results store (`ap-southeast-2`); absent: the
    /// server's region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// OpenTelemetry export of the workers' request traces (issue 7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TelemetrySpec {
    /// OTLP collector, plaintext `http://` (`http://otel-collector.observability:4317`).
    pub otlp_endpoint: String,
    /// Transport: `grpc` or `http/protobuf`; absent: gRPC on port 4317, HTTP on any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp_protocol: Option<OtlpProtocol>,
    /// Fraction of requests traced, in [0, 1]; failed requests are always traced.
    #[serde(default = "default_sample_ratio")]
    pub sample_ratio: f64,
}

/// OTLP transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum OtlpProtocol {
    /// OTLP/gRPC (port 4317 by convention).
    #[serde(rename = "grpc")]
    Grpc,
    /// OTLP/HTTP with protobuf bodies (port 4318 by convention; spans go to `/v1/traces`).
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

impl OtlpProtocol {
    /// The name `OTEL_EXPORTER_OTLP_PROTOCOL` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Grpc => "grpc",
            Self::HttpProtobuf => "http/protobuf",
        }
    }
}

impl std::str::FromStr for OtlpProtocol {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "grpc" => Ok(Self::Grpc),
            "http/protobuf" | "http" => Ok(Self::HttpProtobuf),
            _ => Err(format!(
                "unknown OTLP protocol {s:?}; use grpc or http/protobuf (http/json is not supported)"
            )),
        }
    }
}

impl std::fmt::Display for OtlpProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn default_sample_ratio() -> f64 {
    0.01
}

/// How long each phase may take before the campaign fails.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deadlines {
    /// Server, Secrets and results bucket ready, and the pre-flight probe's testbed
    /// baselines taken (a probe still going then is stopped, and the runs start without
    /// them).
    #[serde(default = "default_provisioning")]
    pub provisioning: Dur,
    /// One attempt of a run, from its start (the Job's creation, or the local processes')
    /// to every process's files; absent: the pause's longest wait + warm-up + window +
    /// drain + 5 minutes (image pulls, keys, fixtures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<Dur>,
    /// The analysis.
    #[serde(default = "default_analysis")]
    pub analysis: Dur,
}

fn default_provisioning() -> Dur {
    Dur(Duration::from_secs(600))
}
fn default_analysis() -> Dur {
    Dur(Duration::from_secs(600))
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            provisioning: default_provisioning(),
            run: None,
            analysis: default_analysis(),
        }
    }
}
