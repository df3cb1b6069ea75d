//! # campaign: a pqbench campaign, its schema and its design
//!
//! A pure crate (no async runtime, no network, no Kubernetes client) holding what the local
//! `pqbench run` and the operator share before any run is timed (study sections IV-B and
//! IV-C; DESIGN.md "A campaign"):
//!
//! - [`spec`]: the `BenchmarkCampaign` manifest (`pqbench.io/v1alpha1`) and its spec, the
//!   pre-registration: arms, baseline, backends, cells (list-valued fields expand to a
//!   grid), loop, repetitions, durations, seed, session grid, analysis settings, pause rule
//!   and placement. Human units (`64KiB`, `20s`); errors name the field path.
//! - [`design`]: the randomized complete block design, deterministic from the spec, and
//!   the pre-registration hash (SHA-256 of the canonical spec).
//! - [`units`]: human sizes and durations; [`yaml`]: reading campaign files;
//!   [`cluster`] and [`placement`]: where a campaign runs.
//!
//! The analysis of a campaign's runs is the `analysis` crate and its rendering the
//! `report` crate; both depend on this one, never the other way round.

pub mod cluster;
pub mod design;
mod file;
pub mod placement;
#[cfg(feature = "schema")]
mod schema;
pub mod spec;
pub mod units;
mod validate;
pub mod yaml;

pub use design::Plan;
pub use file::CampaignFile;
pub use spec::{CampaignSpec, Manifest, Operation};
pub use yaml::{from_value, from_yaml};

/// What can go wrong with a campaign.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The campaign file is malformed or inconsistent; the message names the file and the
    /// field path, and says what is allowed.
    #[error("{0}")]
    Spec(String),
}

/// This crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
