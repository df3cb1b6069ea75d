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
        required_unless_present_any = ["spec_env", "analysis_env"],
        conflicts_with_all = ["spec_env", "analysis_env"]
    )]
    spec: Option<PathBuf>,
    /// Read the run spec from this environment variable instead (the operator's worker
    /// Jobs set `PQBENCH_RUN_SPEC`).
    #[arg(long, value_name = "VAR", conflicts_with = "analysis_env")]
    spec_env: Option<String>,
    /// Analyse a campaign's results bucket instead, the analysis spec in this environment
    /// variable (the operator's analysis Job sets `PQBENCH_ANALYSIS_SPEC`).
    #[arg(long, value_name = "VAR")]
    analysis_env: Option<String>,
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
