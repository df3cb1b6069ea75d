//! # run: what a run is, as plain data and pure functions
//!
//! The contract between whoever plans runs (`pqbench run`, the operator), the process that
//! carries one out (`pqbench-worker`, crate `worker`) and whoever reads its files
//! (`pqbench analyze`, `pqbench validate`, the operator's analysis). Study section IV-A
//! ("A run executes one configuration …") and IV-B (the campaign protocol).
//!
//! - [`runspec`]: [`runspec::RunSpec`], one run of one process, and its parts (cell,
//!   store, key and credential references, output, telemetry, the start protocol).
//! - [`planner`]: the run specs of a planned campaign run, once the environment is known.
//! - [`records`] and [`table`]: the per-request record and the 1 Hz sample, and their
//!   columnar tables (the Parquet schema of the run files; the files are `worker`'s).
//! - [`summary`]: the run summary, [`summary::summarize`] and the checks a run must pass.
//! - [`checks`]: the validator's rules over a data set's runs.
//! - [`digest`]: what the summary needs of a run's records, folded one record at a time
//!   (memory flat however long the run).
//! - [`rows`]: a whole-run summary as the analysis's row.
//! - [`schedule`]: the campaign's progress decision both executors call: what to start,
//!   retry or give up, when a run starts, when the campaign is done, and the ETA.
//! - [`verdicts`]: the analysis Job's spec and outcome, and the compact verdicts.
//! - [`preflight`]: the operator's pre-flight probe Job's spec (the testbed baselines).
//! - [`keyservice`]: the operator's key service's spec (remote arms).
//! - [`turns`]: interleaved arms, the slices a run of an interleaved block may use.
//! - [`trace`] and [`s3conf`]: the recorded trace and S3 client settings.
//!
//! No tokio, no AWS SDK, no Parquet, no sockets: every function here is a function of its
//! arguments (reading a spec file is the one exception, [`runspec::RunSpec::read`]).

pub mod checks;
pub mod digest;
pub mod keyservice;
pub mod planner;
pub mod preflight;
pub mod records;
pub mod rows;
pub mod runspec;
pub mod s3conf;
pub mod schedule;
pub mod summary;
pub mod table;
pub mod trace;
pub mod turns;
pub mod verdicts;

pub use campaign::units;

/// What went wrong, by what failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A run spec is invalid: the message names the field.
    #[error("invalid run spec: {0}")]
    Spec(String),
    /// A run spec file could not be read.
    #[error("cannot read run spec {path}: {source}")]
    ReadSpec {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A planned run names a cell or arm its plan does not have (a plan edited by hand).
    #[error("run {run_id}: {detail}")]
    Plan {
        /// The run.
        run_id: String,
        /// What is missing.
        detail: String,
    },
    /// A records table holds a value out of range or an unknown label.
    #[error("records row {row}: column {column} {what}")]
    Records {
        /// Row index.
        row: usize,
        /// Column name.
        column: String,
        /// What is wrong with the value.
        what: String,
    },
    /// A trace setting (the `traces` block or an `OTEL_*` variable) is invalid.
    #[error("invalid trace setting: {0}")]
    Trace(String),
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
