//! # worker: one process of one run
//!
//! The run engine of the study (section IV-A "A run") over the [`s3`] store, with the run
//! contract of the pure [`run`] crate:
//!
//! - [`engine::execute`] prepares (keys, the known-answer gate, a warm-up round trip,
//!   fixtures), waits for the shared `startAt`, runs the closed or open loop with exactly N
//!   workers, samples client and server once per second ([`sampler`]) and cleans up;
//!   records go to disk as they come ([`spool`]), so memory stays flat in long windows;
//! - [`parquet`] writes and reads the run tables ([`run::table`]) as Parquet, [`output`]
//!   writes the files with their checksum manifest, [`validate`] refuses a data set that
//!   fails any of the study's checks, and [`collect`] reads a results directory into the
//!   analysis's rows;
//! - [`analyze`] is the operator's analysis Job: the results bucket analysed as
//!   `pqbench analyze` does, its report uploaded, its outcome left for the operator;
//! - [`progress`] is the one progress reporter of every long command;
//! - [`metrics`] (Prometheus) and [`traces`] (OTLP request traces) observe a run while it goes;
//! - [`process::carry_out`] is one process of one run as both binaries carry it out
//!   (`pqbench-worker`, and `pqbench run-spec` for `pqbench run`).

pub mod affinity;
pub mod analyze;
pub mod collect;
pub mod engine;
mod error;
pub mod host;
pub mod metrics;
pub mod output;
pub mod parquet;
pub mod process;
pub mod progress;
pub mod sampler;
pub mod spool;
pub mod traces;
pub mod validate;

pub use error::{Error, Result};
