//! # dataset: a run's files on disk, written and read back
//!
//! A process of a run leaves a directory `<runId>/p<index>/` (study section IV-A; docs/src/runs.md,
//! "Run files"): `records.parquet`, `samples.parquet`, `process.json`, `spec.json`, `summary.json`
//! and `SHA256SUMS`, written last as the directory's commit record. This crate is everything that
//! touches those files and nothing that touches a network:
//!
//! - [`parquet`] writes and reads the run tables ([`run::table`]) as Parquet;
//! - [`checksums`] hashes files for the `SHA256SUMS` manifest;
//! - [`validate`] refuses a data set that fails any of the study's checks (`pqbench validate`);
//! - [`collect`] reads a results directory into the analysis's rows (`pqbench analyze`).
//!
//! The run engine ([`worker`](../worker/index.html)) writes with it; the analysis reads with
//! it; the fuzz target `run_dir` (fuzz/) feeds it hostile files. Every failure is an
//! [`Error`] naming the file.

pub mod checksums;
pub mod collect;
mod error;
mod guard;
pub mod parquet;
pub mod validate;

pub use error::{Error, Result};
