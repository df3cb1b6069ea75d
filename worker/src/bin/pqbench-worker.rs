//! `pqbench-worker --spec FILE|-`: runs one run spec (one process of one run) and exits 0
//! only if the run is valid.
//!
//! Exit codes: 0 valid run; 1 the run completed but is invalid (its files are kept and say
//! why); 2 the run could not be carried out (bad spec, key, gate, not ready by `startAt`,
//! S3 unreachable before the start); 3 the run's files could not be written because their
//! file system is full; 143 stopped by SIGTERM (a pod's deletion): the run is incomplete,
//! no checksum manifest was written.
//!
//! `pqbench-worker --analysis-env VAR`: the operator's analysis Job
//! ([`worker::analyze`]). Exit codes: 0 analysed; 1 the analysis failed and its outcome
//! says why; 2 no outcome could be written.
//!
//! `pqbench-worker --probe-env VAR`: the operator's pre-flight probe Job
//! ([`worker::testbed::preflight`], image `pqbench-probe`). Exit codes: 0 `baselines.json`
//! written (a probe that could not run is in it as "not measured"); 2 it could not be.
//!
//! `pqbench-worker --serve-kms-env VAR`: the operator's key service Deployment
//! ([`worker::keyservice`]), its spec in VAR; serves until SIGTERM. Exit codes: 0 stopped
//! by SIGTERM; 2 it could not serve (bad spec, keys or credentials, a port in use).
//!
//! `pqbench-worker --disk-probe DIR [--probe-seconds N] [--termination-log FILE]`: MinIO's
//! `disk-probe` init container ([`worker::testbed::disk_probe`]): the disk probe's JSON on
//! stdout and in FILE. Exit code 0 even when fio could not run (the JSON says why): the
//! server starts either way.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser;
use run::runspec::RunSpec;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Run one pqbench run spec (one process of one run).
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The run spec (YAML or JSON); `-` reads it from stdin.
    #[arg(
        long,
        required_unless_present_any = ["spec_env", "analysis_env", "probe_env", "disk_probe", "serve_kms_env"],
        conflicts_with_all = ["spec_env", "analysis_env", "probe_env", "disk_probe", "serve_kms_env"]
    )]
    spec: Option<PathBuf>,
    /// Read the run spec from this environment variable instead (the operator's worker
    /// Jobs set `PQBENCH_RUN_SPEC`).
    #[arg(long, value_name = "VAR", conflicts_with_all = ["analysis_env", "probe_env", "disk_probe", "serve_kms_env"])]
    spec_env: Option<String>,
    /// Analyse a campaign's results bucket instead, the analysis spec in this environment
    /// variable (the operator's analysis Job sets `PQBENCH_ANALYSIS_SPEC`).
    #[arg(long, value_name = "VAR", conflicts_with_all = ["probe_env", "disk_probe", "serve_kms_env"])]
    analysis_env: Option<String>,
    /// Take the testbed baselines instead (the operator's pre-flight probe Job), the probe
    /// spec in this environment variable (`PQBENCH_PROBE_SPEC`).
    #[arg(long, value_name = "VAR", conflicts_with_all = ["disk_probe", "serve_kms_env"])]
    probe_env: Option<String>,
    /// Serve the key service instead (the operator's key service Deployment, for remote
    /// arms), its spec in this environment variable (`PQBENCH_KMS_SPEC`); until SIGTERM.
    #[arg(long, value_name = "VAR", conflicts_with = "disk_probe")]
    serve_kms_env: Option<String>,
    /// Measure the disk under DIR with fio instead (MinIO's `disk-probe` init container,
    /// DIR its data volume) and print the result as JSON.
    #[arg(long, value_name = "DIR")]
    disk_probe: Option<PathBuf>,
    /// Seconds fio writes for (`--disk-probe`), 1 to 60.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=60))]
    probe_seconds: u32,
    /// Also write `--disk-probe`'s JSON to FILE (a container's `/dev/termination-log`,
    /// which the operator reads from the pod's status).
    #[arg(long, value_name = "FILE", requires = "disk_probe")]
    termination_log: Option<PathBuf>,
    /// Take this process's index (`processes.index`) from this environment variable (an
    /// Indexed Job's `JOB_COMPLETION_INDEX`).
    #[arg(long, value_name = "VAR")]
    index_env: Option<String>,
    /// No progress on stderr.
    #[arg(long)]
    quiet: bool,
    /// Print the summary as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Serve the worker's Prometheus metrics on http://ADDR/metrics while the run goes
    /// (the operator's worker pods use 0.0.0.0:9464).
    #[arg(long, value_name = "ADDR", env = "PQBENCH_METRICS_ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(dir) = &args.disk_probe {
        return disk_probe(dir, args.probe_seconds, args.termination_log.as_deref());
    }
    if let Some(var) = &args.serve_kms_env {
        return match serve_kms(var) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pqbench-worker: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    if let Some(var) = &args.probe_env {
        return match probe(var) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pqbench-worker: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    if let Some(var) = &args.analysis_env {
        return match analysis(var) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("pqbench-worker: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    match spec(&args) {
        Ok(spec) => worker::process::carry_out(
            &spec,
            &worker::engine::RunOptions {
                progress: !args.quiet,
                metrics_addr: args.metrics_addr,
            },
            if args.json {
                worker::process::Report::Json
            } else {
                worker::process::Report::Text
            },
        )
        .into(),
        Err(e) => {
            eprintln!("pqbench-worker: {e:#}");
            worker::process::Outcome::NotCarriedOut.into()
        }
    }
}

/// The run spec from `--spec` or `--spec-env`, with the index from `--index-env`.
fn spec(args: &Args) -> anyhow::Result<RunSpec> {
    let mut spec = match (&args.spec, &args.spec_env) {
        (Some(p), _) if p.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading the run spec from stdin")?;
            RunSpec::parse(&text, "stdin")?
        }
        (Some(p), _) => RunSpec::read(p)?,
        (None, Some(var)) => {
            let text = std::env::var(var)
                .with_context(|| format!("environment variable {var} (the run spec) is not set"))?;
            RunSpec::parse(&text, &format!("${var}"))?
        }
        (None, None) => anyhow::bail!("give --spec FILE or --spec-env VAR"),
    };
    if let Some(var) = &args.index_env {
        let v = std::env::var(var).with_context(|| {
            format!("environment variable {var} (the process index) is not set")
        })?;
        spec.processes.index = v
            .trim()
            .parse()
            .with_context(|| format!("{var}={v:?} is not a process index"))?;
        spec.validate()?;
    }
    Ok(spec)
}

/// The key service Deployment's container: serves until SIGTERM.
fn serve_kms(var: &str) -> anyhow::Result<()> {
    let text = std::env::var(var)
        .with_context(|| format!("environment variable {var} (the key service spec) is not set"))?;
    let spec = run::keyservice::KeyServiceSpec::parse(&text).with_context(|| format!("${var}"))?;
    Ok(worker::keyservice::serve(&spec)?)
}

/// The analysis Job: whether it analysed (the outcome is in the bucket either way).
fn analysis(var: &str) -> anyhow::Result<bool> {
    let text = std::env::var(var)
        .with_context(|| format!("environment variable {var} (the analysis spec) is not set"))?;
    let spec: run::verdicts::AnalysisSpec =
        serde_json::from_str(&text).with_context(|| format!("${var} is not an analysis spec"))?;
    let rt = tokio::runtime::Runtime::new().context("starting the runtime")?;
    let outcome = rt.block_on(worker::analyze::analyze_bucket(
        &spec,
        &std::env::temp_dir(),
    ))?;
    Ok(match outcome {
        run::verdicts::AnalysisOutcome::Analyzed {
            verdicts, excluded, ..
        } => {
            eprintln!(
                "analysed: {} comparison(s), {} run(s) left out",
                verdicts.len(),
                excluded.len()
            );
            true
        }
        run::verdicts::AnalysisOutcome::Failed { reason, fatal } => {
            eprintln!(
                "the analysis failed{}: {reason}",
                if fatal {
                    " (no verdicts can come of this data)"
                } else {
                    ""
                }
            );
            false
        }
    })
}

/// MinIO's disk-probe init container: fio under `dir`, the JSON on stdout and in `log`.
fn disk_probe(dir: &std::path::Path, seconds: u32, log: Option<&std::path::Path>) -> ExitCode {
    let disk = worker::testbed::disk_probe(dir, seconds);
    let json = serde_json::to_string(&disk).unwrap_or_else(|e| {
        format!("{{\"notMeasured\":\"the disk probe's result cannot be written: {e}\"}}")
    });
    println!("{json}");
    if let Some(path) = log
        && let Err(e) = std::fs::write(path, &json)
    {
        eprintln!("pqbench-worker: cannot write {}: {e}", path.display());
    }
    ExitCode::SUCCESS
}

/// The pre-flight probe Job: the baselines written under the campaign's prefix.
fn probe(var: &str) -> anyhow::Result<()> {
    let text = std::env::var(var)
        .with_context(|| format!("environment variable {var} (the probe spec) is not set"))?;
    let spec: run::preflight::ProbeSpec =
        serde_json::from_str(&text).with_context(|| format!("${var} is not a probe spec"))?;
    eprintln!(
        "testbed baselines from {} to {}: network (iperf3, {} s each way, {} streams), round trip (ping) …",
        spec.site, spec.s3.endpoint, spec.settings.seconds, spec.settings.streams
    );
    let rt = tokio::runtime::Runtime::new().context("starting the runtime")?;
    let b = rt.block_on(worker::testbed::preflight(&spec))?;
    eprintln!("testbed baselines: {}", run::preflight::words(&b));
    Ok(())
}
