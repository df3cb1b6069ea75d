//! # analysis: a campaign's runs to its report model
//!
//! A pure crate (no I/O) that turns the runs of a campaign into the report both executors
//! write (study sections IV-C and V; the definitions are those of the [`stats`] crate,
//! which cites them). The arrows run one way, from input to model:
//!
//! - [`rows`]: the input, one [`RunRow`] per valid run (and its CSV form), the attempts
//!   of each planned run;
//! - [`entry`]: one comparison's result ([`Entry`]);
//! - the parts, each reading rows (and entries) and returning its own rows:
//!   [`absolute`] (one arm's absolute figures: key establishment per request, its share of
//!   the request, CPU and memory per arm, the spread of throughput), [`endpoints`] (second endpoints with intervals and the CPU identity), [`deviations`]
//!   (every departure from the pre-registered plan), [`order`] (the order-and-time
//!   regression of each compared cell), [`longrun`] (drift within the runs of each arm and
//!   what bounded sessions exposed and cost), [`wire`] (S3 requests and bytes per logical
//!   request, and the comparisons across object formats), [`predict`] (advance predictions
//!   scored against the comparisons);
//! - [`testbed`]: the testbed's measured ceilings (`baselines.json`) and what bounds each
//!   cell (client, server, network, disk, or latency);
//! - [`words`]: the figures in words, for `report.md` and the operator's status alike;
//! - [`study`]: the study's published figures held against the report's;
//! - [`model`]: the report model ([`Report`]) holding every part's output, computing
//!   nothing;
//! - [`analyze`](mod@analyze): the pipeline, rows to [`Report`]: paired ratios, TOST with
//!   Holm, verdicts, sensitivity, bootstrap, CPU accounting, saturation, stalls, power,
//!   storage and the open-loop knee.
//!
//! The campaign's schema and design come from the [`campaign`] crate; the rendering of the
//! model (Markdown, SVG, LaTeX) lives in the `report` crate, which depends on this one.

pub mod absolute;
pub mod analyze;
pub mod deviations;
pub mod endpoints;
pub mod entry;
pub mod implementations;
pub mod longrun;
pub mod model;
pub mod order;
pub mod predict;
pub mod rows;
pub mod study;
pub mod testbed;
pub mod wire;
pub mod words;

pub use analyze::{analyze, analyze_full, analyze_with};
pub use entry::{Entry, Family, WithoutStalls};
pub use model::{
    ArmAttempts, ArmSummary, Attribution, Config, INVALID_RATE_ALPHA, InvalidRate, KneeRow, Report,
    StorageRow,
};
pub use rows::{
    CSV_COLUMNS, CSV_OPTIONAL, RunAttempts, RunRow, STAGES, SessionRow, rows_from_csv, rows_to_csv,
};

/// What can go wrong in the analysis.
#[derive(Debug, thiserror::Error)]
pub enum Error {
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
