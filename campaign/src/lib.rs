//! # campaign: a pqbench campaign from YAML to verdicts
//!
//! A pure crate (no async runtime, no network, no Kubernetes client) holding what the local
//! `pqbench run` and the operator share (study sections IV-B, IV-C and V; DESIGN.md
//! "A campaign"):
//!
//! - [`spec`]: the `BenchmarkCampaign` manifest (`pqbench.io/v1alpha1`) and its spec, the
//!   pre-registration: arms, baseline, backends, cells (list-valued fields expand to a
//!   grid), loop, repetitions, durations, seed, session grid, analysis settings, pause rule
//!   and placement. Human units (`64KiB`, `20s`); errors name the field path.
//! - [`design`]: the randomized complete block design, deterministic from the spec, and
//!   the pre-registration hash (SHA-256 of the canonical spec).
//! - [`analysis`]: run rows (one per run) to the report: paired ratios, TOST with Holm,
//!   verdicts, sensitivity, bootstrap, CPU accounting, saturation, stalls, power, storage
//!   and the open-loop knee (measured and predicted), using the [`stats`] crate;
//!   [`endpoints`]: second endpoints with intervals and the CPU identity, whole;
//!   [`deviations`]: every departure from the pre-registered plan; [`order`]: the
//!   order-and-time regression of each compared cell; [`longrun`]: drift within the runs
//!   of each arm and what bounded sessions exposed and cost.
//! - [`report`]: the report as Markdown and as a terminal table; [`plots`]: its SVG plots.
//! - [`units`]: human sizes and durations.

pub mod analysis;
pub mod cluster;
pub mod design;
pub mod deviations;
pub mod endpoints;
pub mod longrun;
pub mod order;
pub mod placement;
pub mod plots;
pub mod report;
#[cfg(feature = "schema")]
mod schema;
pub mod spec;
pub mod units;
pub mod wire;
pub mod yaml;

pub use design::Plan;
pub use spec::{CampaignFile, CampaignSpec, Manifest, Operation};

/// What can go wrong with a campaign.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The campaign file is malformed or inconsistent; the message names the file and the
    /// field path, and says what is allowed.
    #[error("{0}")]
    Spec(String),
    /// Run data cannot be analysed as given (a missing column, a duplicate run, an unknown
    /// baseline); the message says where.
    #[error("{0}")]
    Data(String),
    /// A statistic could not be computed.
    #[error("statistics: {0}")]
    Stats(#[from] stats::Error),
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Parses YAML (or JSON) into `T`, naming the field path on error (`spec.cells[0].loop:
/// …`). The text goes through a JSON value so that enums are written as maps (`{file:
/// path}`) in YAML as in JSON.
pub fn from_yaml<T: serde::de::DeserializeOwned>(text: &str) -> std::result::Result<T, String> {
    from_value(yaml::document(text)?)
}

/// [`from_yaml`] of a document already parsed into a JSON value.
pub fn from_value<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
) -> std::result::Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        }
    })
}
