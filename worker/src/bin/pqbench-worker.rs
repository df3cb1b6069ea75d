//! `pqbench-worker --spec FILE|-`: runs one run spec (one process of one run) and exits 0
//! only if the run is valid.
//!
//! Exit codes: 0 valid run; 1 the run completed but is invalid (its files are kept and say
//! why); 2 the run could not be carried out (bad spec, key, gate, not ready by `startAt`,
//! S3 unreachable before the start).

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
        required_unless_present = "spec_env",
        conflicts_with = "spec_env"
    )]
    spec: Option<PathBuf>,
    /// Read the run spec from this environment variable instead (the operator's worker
    /// Jobs set `PQBENCH_RUN_SPEC`).
    #[arg(long, value_name = "VAR")]
    spec_env: Option<String>,
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
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("pqbench-worker: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> anyhow::Result<bool> {
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
    let checked = worker::engine::run_and_validate(
        &spec,
        &worker::engine::RunOptions {
            progress: !args.quiet,
            metrics_addr: args.metrics_addr,
        },
    )?;
    let written = &checked.written;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&written.summary)?);
    } else {
        print!("{}", run::summary::render(&written.summary));
        println!(
            "files: {}",
            written
                .uploaded_to
                .clone()
                .unwrap_or_else(|| written.dir.display().to_string())
        );
    }
    if let Some(t) = &written.traces {
        eprintln!("{}", t.describe());
    }
    checked.eprint_failures();
    Ok(checked.valid())
}
