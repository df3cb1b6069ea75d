//! `pqbench run-one` (one run against the embedded server or an endpoint, summary printed)
//! and `pqbench validate DIR` (the data-set validator).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result, bail};
use campaign::units::{Dur, Size};
use clap::{Args, ValueEnum};
use envelope::{Backend, KeyType, Mode, SecretKey};
use run::runspec::{Cell, KeyRef, Loop, Operation, PauseRule, PromSource, RunSpec, Session};

use crate::args::{parse_duration, parse_size};
use crate::serverproc::local_or_embedded;

/// Bucket `run-one` uses on its own server.
const BUCKET: &str = "pqbench-runs";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Op {
    Put,
    Get,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LoopKind {
    Closed,
    Open,
}

#[derive(Args, Debug)]
pub(crate) struct RunOneArgs {
    /// Mode (name or study code).
    #[arg(long)]
    mode: Mode,
    /// Operation.
    #[arg(long, value_enum, default_value = "get")]
    op: Op,
    /// Object size.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    size: u64,
    /// Concurrent workers.
    #[arg(long, default_value_t = 1)]
    concurrency: u32,
    /// Crypto backend.
    #[arg(long, default_value = "aws-lc")]
    backend: Backend,
    /// Object format: v1 (data.enc + manifest.json), v2 (one object.v2, header in
    /// metadata), v2-prefix (header before the chunks), v2.1 or v2.1-prefix (the same with
    /// a re-wrappable v2.1 header, FORMAT-v2.md §10).
    #[arg(long, default_value = "v1")]
    format: run::runspec::ObjectFormat,
    /// v2: the reader refuses any object with a classical recipient entry (as `get
    /// --require-pq`); needs a post-quantum mode.
    #[arg(long)]
    require_pq: bool,
    /// Closed loop (back to back) or open loop (Poisson arrivals at --rate).
    #[arg(long = "loop", value_enum, default_value = "closed")]
    arrival: LoopKind,
    /// Open loop: offered requests per second.
    #[arg(long)]
    rate: Option<f64>,
    /// Warm-up phase.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    warmup: Duration,
    /// Measured window.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    measured: Duration,
    /// Open loop: how long queued arrivals may still start after the window.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    drain: Duration,
    /// S3 endpoint; by default a `pqbench serve-s3` child process. Credentials then come
    /// from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, and the bucket must exist.
    #[arg(long, env = "AWS_ENDPOINT_URL")]
    endpoint: Option<String>,
    /// Bucket.
    #[arg(long, default_value = BUCKET)]
    bucket: String,
    /// Signing region (Garage: its s3_region).
    #[arg(long, default_value = "us-east-1")]
    region: String,
    /// S3 client: aws-sdk (the AWS SDK for Rust) or lean (hyper + aws-sigv4, http only).
    #[arg(long, default_value = "aws-sdk")]
    s3_client: s3::S3ClientKind,
    /// Recipient secret key file (from `pqbench keygen`); a fresh key if absent.
    #[arg(long)]
    key: Option<PathBuf>,
    /// Fixture objects for GET runs.
    #[arg(long, default_value_t = 64)]
    fixtures: u32,
    /// `ml-kem-768-session`: B_max.
    #[arg(long)]
    session_objects: Option<u64>,
    /// `ml-kem-768-session`: T_max.
    #[arg(long, value_parser = parse_duration)]
    session_age: Option<Duration>,
    /// Seed (payloads, arrivals).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Run id (default: run-UNIXTIME).
    #[arg(long)]
    run_id: Option<String>,
    /// Output directory: files go to OUT/RUN_ID/p0/.
    #[arg(long, default_value = "pqbench-results")]
    out: PathBuf,
    /// The server's Prometheus endpoint (MinIO: http://host:9000/minio/v2/metrics/node).
    #[arg(long)]
    server_metrics: Option<String>,
    /// Environment variable holding the metrics endpoint's bearer token.
    #[arg(long)]
    server_metrics_token_env: Option<String>,
    /// A node-exporter endpoint on the server host.
    #[arg(long)]
    node_exporter: Option<String>,
    /// Wait for the server host to be quiet first (pause rule: dirty + write-back < 32 MiB,
    /// disk writes < 5 MiB/s for 2 s, at most 40 s).
    #[arg(long)]
    pause: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Serve the worker's Prometheus metrics on http://ADDR/metrics while the run goes
    /// (e.g. 127.0.0.1:9464; port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    #[command(flatten)]
    traces: crate::args::TraceArgs,
}

pub(crate) fn run_one(a: RunOneArgs) -> Result<()> {
    let keys = tempfile::tempdir().context("temp dir")?;
    let (server, endpoint, credentials, local_pid) = local_or_embedded(
        a.endpoint.as_deref(),
        &a.bucket,
        &keys.path().join("s3.env"),
        None,
    )?;
    let recipient_key = match (&a.key, a.mode.key_type()) {
        (_, KeyType::None) => None,
        (Some(p), _) => Some(KeyRef::File(p.clone())),
        (None, kt) => {
            let p = keys.path().join("recipient.key");
            SecretKey::generate(kt, &mut envelope::os_rng())?.write_file(&p)?;
            Some(KeyRef::File(p))
        }
    };
    let arrival = match (a.arrival, a.rate) {
        (LoopKind::Closed, None) => Loop::Closed,
        (LoopKind::Closed, Some(_)) => bail!("--rate applies to --loop open"),
        (LoopKind::Open, Some(rate)) => Loop::Open { rate },
        (LoopKind::Open, None) => bail!("--loop open needs --rate (requests per second)"),
    };
    let cell = Cell {
        mode: a.mode,
        backend: a.backend,
        operation: match a.op {
            Op::Put => Operation::Put,
            Op::Get => Operation::Get,
        },
        object_size: Size(a.size),
        concurrency: a.concurrency,
        arrival,
        format: a.format,
        require_pq: a.require_pq,
        kms: None,
    };
    let run_id = a.run_id.clone().unwrap_or_else(|| {
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        format!("run-{}", t.as_secs())
    });
    let mut spec = RunSpec::local(&run_id, cell, &endpoint, &a.bucket, &a.out);
    spec.s3.region.clone_from(&a.region);
    spec.s3.credentials = credentials;
    spec.s3.client = a.s3_client;
    spec.recipient_key = recipient_key;
    spec.warmup = Dur(a.warmup);
    spec.measured = Dur(a.measured);
    spec.drain = Dur(a.drain);
    spec.seed = a.seed;
    spec.fixtures = a.fixtures;
    if a.session_objects.is_some() || a.session_age.is_some() {
        let d = envelope::SessionBounds::default();
        spec.session = Some(Session {
            max_objects: a.session_objects.unwrap_or(d.max_objects),
            max_age: Dur(a.session_age.unwrap_or(d.max_age)),
        });
    }
    spec.telemetry.local_server_pid = local_pid;
    spec.telemetry.server_metrics = a.server_metrics.as_ref().map(|url| PromSource {
        url: url.clone(),
        bearer_token_env: a.server_metrics_token_env.clone(),
        bearer_token_file: None,
    });
    spec.telemetry.node_exporter = a.node_exporter.as_ref().map(|url| PromSource {
        url: url.clone(),
        bearer_token_env: None,
        bearer_token_file: None,
    });
    if a.pause {
        spec.pause = Some(PauseRule::default());
    }
    spec.traces = a.traces.spec();
    spec.validate()?;
    eprintln!(
        "run {run_id}: {} {} {} on {}, {} workers, {} loop, against {}{}",
        spec.cell.operation.as_str(),
        spec.cell.object_size,
        spec.cell.mode,
        spec.cell.backend,
        spec.cell.concurrency,
        spec.cell.arrival.as_str(),
        endpoint,
        if server.is_some() {
            " (pqbench serve-s3, a separate process)"
        } else {
            ""
        }
    );
    let written = worker::engine::run_to_files(
        &spec,
        &worker::engine::RunOptions {
            progress: true,
            metrics_addr: a.metrics_addr,
        },
    )?;
    drop(server);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&written.summary)?);
    } else {
        print!("{}", run::summary::render(&written.summary));
        println!("files: {}", written.dir.display());
    }
    if let Some(t) = &written.traces {
        eprintln!("{}", t.describe());
    }
    if !written.summary.valid {
        bail!(
            "the run is invalid (its records are kept in {}); see the FAILED checks above",
            written.dir.display()
        );
    }
    Ok(())
}

#[derive(Args, Debug)]
pub(crate) struct ValidateArgs {
    /// A directory of run data (any tree of RUN_ID/pINDEX/ directories).
    dir: PathBuf,
    /// Also print the checks that passed.
    #[arg(long)]
    verbose: bool,
}

pub(crate) fn validate(a: ValidateArgs) -> Result<()> {
    if !a.dir.is_dir() {
        bail!("{} is not a directory", a.dir.display());
    }
    let r = worker::validate::validate(&a.dir);
    for f in &r.findings {
        if !f.passed || a.verbose {
            println!(
                "{} {:<22} {:<28} {}",
                if f.passed { "ok  " } else { "FAIL" },
                f.check,
                f.location,
                f.detail
            );
        }
    }
    let failed = r.failures().count();
    println!(
        "{} runs, {} process directories, {} records: {}",
        r.runs,
        r.processes,
        r.records,
        if r.ok() {
            "every check passed".to_owned()
        } else {
            format!("{failed} checks FAILED; the data set is refused")
        }
    );
    if !r.ok() {
        bail!("validation failed");
    }
    Ok(())
}
