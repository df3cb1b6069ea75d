//! # worker: one process of one run
//!
//! The run engine of the study (section IV-A "A run") over the [`s3`] store, with the run
//! contract of the pure [`run`] crate:
//!
//! - [`engine::execute`] prepares (keys, the known-answer gate, a warm-up round trip,
//!   fixtures), waits for the shared `startAt`, runs the closed or open loop with exactly N
//!   workers, samples client and server once per second ([`sampler`]) and cleans up;
//!   records go to disk as they come ([`spool`]), so memory stays flat in long windows;
//! - [`output`] writes the run's files with their checksum manifest, through the
//!   [`dataset`] crate, which also holds the Parquet tables ([`parquet`]), the validator
//!   ([`validate`]) and the collector ([`collect`]), re-exported here;
//! - [`analyze`] is the operator's analysis Job: the results bucket analysed as
//!   `pqbench analyze` does, its report uploaded, its outcome left for the operator;
//! - [`progress`] is the one progress reporter of every long command;
//! - [`metrics`] (Prometheus) and [`traces`] (OTLP request traces) observe a run while it goes;
//! - [`testbed`] measures the testbed's ceilings (iperf3, fio, ping) before a campaign;
//! - [`keyservice`] is the operator's key service pod (remote arms);
//! - [`process::carry_out`] is one process of one run as both binaries carry it out
//!   (`pqbench-worker`, and `pqbench run-spec` for `pqbench run`).

pub mod affinity;
pub mod analyze;
pub mod attempts;
pub mod engine;
mod error;
pub mod host;
pub mod keyservice;
pub mod metrics;
pub mod output;
pub mod process;
pub mod progress;
pub mod sampler;
pub mod spool;
pub mod testbed;
pub mod traces;

pub use dataset::{collect, parquet, validate};
pub use error::{Error, Result, is_full};
