//! The pqbench operator (issue 6): reconciles `BenchmarkCampaign` resources.
//!
//! - [`api`]: the custom resource, its status and the generated CRD;
//! - [`fieldref`]: the CRD's field reference for the user guide, from its schema;
//! - [`deploy`]: the campaign placed on a cluster (endpoints, run specs, keys);
//! - [`resources`]: pure builders of the child objects (Secrets, MinIO, worker Jobs);
//! - [`keyservice`]: pure builders of the key service of remote arms (Deployment, Service);
//! - [`step`]: the pure decision (observed facts → new status and actions);
//! - [`reconcile`]: the executor (observes, writes status, acts) and the controller;
//! - [`ownership`]: whose an object at a child's name is (never adopt another's);
//! - [`policy`]: what a campaign may name on a shared cluster (images, Secrets, ...);
//! - [`rbac`]: the permissions the operator needs in a watched namespace;
//! - [`results`]: the results bucket (what is complete, the start gate, the analysis);
//! - [`metrics`], [`lease`], [`telemetry`]: the binary's `/metrics`, leader election and
//!   logging.

pub mod api;
pub mod deploy;
pub mod fieldref;
pub mod keyservice;
pub mod lease;
pub mod metrics;
pub mod ownership;
pub mod policy;
pub mod rbac;
pub mod reconcile;
pub mod resources;
pub mod results;
pub mod step;
pub mod telemetry;

#[cfg(test)]
mod fixtures;

pub use api::{BenchmarkCampaign, BenchmarkCampaignSpec, CampaignStatus, Phase, crd};

/// Errors of the operator library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Serializing a Kubernetes object failed.
    #[error("serializing {what}: {source}")]
    Serialize {
        /// What was being serialized.
        what: &'static str,
        /// The cause.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// A campaign field does not convert to its Kubernetes type.
    #[error("{field}: {source}")]
    Field {
        /// The field path (`spec.clients.affinity`).
        field: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A campaign's endpoint that is not a URL with a host and a known port.
    #[error("{field}: {url:?} is not an http:// or https:// URL with a host")]
    Endpoint {
        /// The field.
        field: &'static str,
        /// Its value.
        url: String,
    },
    /// An object lacks what the operator needs of it.
    #[error("{what}")]
    Invalid {
        /// What is missing.
        what: &'static str,
    },
    /// The campaign cannot be turned into run specs.
    #[error("campaign: {0}")]
    Run(#[from] run::Error),
    /// A Secret the campaign names is missing or lacks a key.
    #[error("Secret {name}: {detail}")]
    Secret {
        /// The Secret.
        name: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A recipient key could not be made or encoded.
    #[error("the {key_type} recipient key: {source}")]
    Keys {
        /// The key type.
        key_type: envelope::KeyType,
        /// Why.
        #[source]
        source: envelope::Error,
    },
    /// The results store could not be reached this pass (why, as it was reported).
    #[error("results store unavailable: {0}")]
    ResultsUnavailable(String),
    /// A Kubernetes API call failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// An object at one of the campaign's child names is not the campaign's (what it is and
    /// whose); the operator neither adopts, changes nor deletes it.
    #[error("{0}")]
    Collision(String),
    /// The tenant-input policy refused the campaign (the refused fields); nothing of it is
    /// read or created.
    #[error("refused by the policy: {0}")]
    Refused(String),
    /// A call to the results store failed.
    #[error("results store: {0}")]
    Store(#[from] s3::Error),
    /// The finalizer's add, remove or cleanup step failed.
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
    /// The CRD's schema is not what the field reference reads ([`fieldref`]).
    #[error("CRD schema: {why}")]
    Schema {
        /// What is missing.
        why: String,
    },
}

impl Error {
    /// Fixed label for metrics (never the message: unbounded cardinality).
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::Serialize { .. } => "serialize",
            Self::Field { .. } => "field",
            Self::Endpoint { .. } => "endpoint",
            Self::Invalid { .. } => "invalid",
            Self::Run(_) => "spec",
            Self::Secret { .. } => "secret",
            Self::Keys { .. } => "keys",
            Self::ResultsUnavailable(_) => "store",
            Self::Kube(_) => "kube",
            Self::Collision(_) => "collision",
            Self::Refused(_) => "refused",
            Self::Store(_) => "store",
            Self::Finalizer(_) => "finalizer",
            Self::Schema { .. } => "schema",
        }
    }
}

/// Result with the operator's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The CRD as the YAML document `crds/` holds (with a header saying how it is made).
pub fn crd_yaml() -> Result<String> {
    let body = serde_yaml_ng::to_string(&crd()).map_err(|source| Error::Serialize {
        what: "the BenchmarkCampaign CRD",
        source,
    })?;
    Ok(format!(
        "# Generated by `cargo run -p operator --bin crdgen` from operator/src/api.rs and the\n\
         # campaign crate's types. Do not edit; CI regenerates it and fails on any difference.\n\
         {body}"
    ))
}
