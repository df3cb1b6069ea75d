//! The command tree: every subcommand and where it is carried out. The CLI reference
//! (`docs/src/reference/cli/`) is generated from it by the hidden `pqbench cli-reference`.

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::envcmd::{
    InspectArgs, KeygenArgs, ModesArgs, OpenArgs, SealArgs, inspect, keygen, modes, open, seal,
};
use crate::s3cmd;

/// pqbench: what per-object ML-KEM costs on the data path of an S3 object store.
#[derive(Parser, Debug)]
#[command(name = "pqbench", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate a recipient key pair (or a pre-shared key) for a mode.
    Keygen(KeygenArgs),
    /// Encrypt a file into the S3 layout on disk: v1 `<key>.pqcs/<version>/` with
    /// `data.enc` and `manifest.json` (FORMAT.md), v2 `<key>.pqcs/<version>/object.v2` with
    /// its HPKE header as a prefix (FORMAT-v2.md).
    Seal(SealArgs),
    /// Decrypt and verify a sealed version (v1 or v2, `--format`); writes the output only if
    /// every chunk authenticates.
    Open(OpenArgs),
    /// Show a stored version's fields and byte sizes, no secrets: v1 its manifest, v2 its
    /// header (recipients, KEMs, strength, commitment).
    Inspect(InspectArgs),
    /// Print every mode with its sizes, and time seal/open of one object per mode and backend.
    Modes(ModesArgs),
    /// Encrypt a file and commit it to S3 as a new version: v1 data first, manifest last;
    /// v2 one object, its header in user metadata (default) or as a body prefix.
    Put(s3cmd::PutArgs),
    /// Read, verify and decrypt a version from S3, v1 or v2 (`--format`); the output is
    /// written only if it all authenticates.
    Get(s3cmd::GetArgs),
    /// List pqbench keys in a bucket, or the committed versions of one key.
    Ls(s3cmd::LsArgs),
    /// Delete a version: v1 manifest first (it disappears at once), then data; v2 its one
    /// object.
    Rm(s3cmd::RmArgs),
    /// Remove v1 data without a manifest and abandoned multipart uploads (v1 or v2) older
    /// than a grace period; never a committed object.
    Gc(s3cmd::GcArgs),
    /// What in a bucket is classical, mixed or post-quantum, read from envelopes only (no
    /// payload, no key), and what re-encrypting the classical versions would cost (requests,
    /// bytes, client CPU measured here); a table, JSON and a plot.
    Inventory(crate::inventory::InventoryArgs),
    /// Re-encrypt every latest classical or mixed version as a new v2 version sealed to new
    /// recipients: verified, journalled and resumable; old versions deleted only when asked.
    Migrate(crate::migrate::MigrateArgs),
    /// Run the embedded S3 server (s3s-fs) in the foreground; prints endpoint and credentials.
    ServeS3(s3cmd::ServeArgs),
    /// Run the embedded key service (the AWS KMS JSON subset: CreateKey, GetPublicKey,
    /// Decapsulate, DeriveSharedSecret; SigV4) in the foreground; prints endpoint and
    /// credentials.
    ServeKms(crate::kmscmd::ServeKmsArgs),
    /// Client CPU per request of PUT/GET against a local S3 server in a separate process.
    BenchStore(crate::bench::BenchArgs),
    /// Run one run (warm-up, measured window, records, summary) against a local S3 server
    /// in a separate process or an endpoint, and print its summary.
    RunOne(crate::runcmd::RunOneArgs),
    /// Check a data set of runs (checksums, schema, stage sums, unaccounted time, session
    /// bounds, failures) and refuse it if any check fails.
    Validate(crate::runcmd::ValidateArgs),
    /// Print a campaign's design (cells, arms, blocks, run order), its pre-registration
    /// hash, and estimates of requests, wall time and cost.
    Plan(crate::campaigncmd::PlanArgs),
    /// Run a whole campaign locally (the embedded S3 server by default), resumably, then
    /// validate, analyse and report.
    Run(crate::campaigncmd::RunArgs),
    /// Analyse run data (a results directory or a CSV of runs) into verdicts, report.json,
    /// report.md and plots.
    Analyze(crate::campaigncmd::AnalyzeArgs),
    /// Write the study's tables (VII, VIII, XII, XIII, XV, XXI) as LaTeX or Markdown from a
    /// results directory's report.json.
    Report(crate::reportcmd::ReportArgs),
    /// One process of one run, its spec on stdin (used by `pqbench run`).
    #[command(hide = true)]
    RunSpec(crate::campaigncmd::RunSpecArgs),
    /// Write (or with --check compare) the Markdown CLI reference of the user guide.
    #[command(hide = true)]
    CliReference(crate::clidoc::CliReferenceArgs),
}

pub(crate) fn run(cli: Cli) -> Result<std::process::ExitCode> {
    let done = match cli.command {
        // More outcomes than success and error (0/1/2, as `pqbench-worker`).
        Command::RunSpec(a) => return crate::campaigncmd::run_spec_cmd(a),
        // Exit 130 after Ctrl-C, with what is kept and how to resume.
        Command::Run(a) => return crate::campaigncmd::run_cmd(a),
        Command::Keygen(a) => keygen(a),
        Command::Seal(a) => seal(a),
        Command::Open(a) => open(a),
        Command::Inspect(a) => inspect(a),
        Command::Modes(a) => modes(a),
        Command::Put(a) => s3cmd::put(a),
        Command::Get(a) => s3cmd::get(a),
        Command::Ls(a) => s3cmd::ls(a),
        Command::Rm(a) => s3cmd::rm(a),
        Command::Gc(a) => s3cmd::gc(a),
        Command::Inventory(a) => crate::inventory::inventory(a),
        Command::Migrate(a) => crate::migrate::migrate(a),
        Command::ServeS3(a) => s3cmd::serve(a),
        Command::ServeKms(a) => crate::kmscmd::serve(a),
        Command::BenchStore(a) => crate::bench::run(a),
        Command::RunOne(a) => crate::runcmd::run_one(a),
        Command::Validate(a) => crate::runcmd::validate(a),
        Command::Plan(a) => crate::campaigncmd::plan_cmd(a),
        Command::Analyze(a) => crate::campaigncmd::analyze_cmd(a),
        Command::Report(a) => crate::reportcmd::report_cmd(&a),
        Command::CliReference(a) => crate::clidoc::run(a),
    };
    done.map(|()| std::process::ExitCode::SUCCESS)
}
