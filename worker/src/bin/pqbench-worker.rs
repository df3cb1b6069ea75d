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
use worker::spec::RunSpec;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Run one pqbench run spec (one process of one run).
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The run spec (YAML or JSON); `-` reads it from stdin.
    #[arg(long)]
    spec: PathBuf,
    /// No progress on stderr.
    #[arg(long)]
    quiet: bool,
    /// Print the summary as JSON instead of text.
    #[arg(long)]
    json: bool,
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
    let spec = if args.spec.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the run spec from stdin")?;
        RunSpec::parse(&text, "stdin")?
    } else {
        RunSpec::read(&args.spec)?
    };
    let checked = worker::engine::run_and_validate(&spec, !args.quiet)?;
    let written = &checked.written;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&written.summary)?);
    } else {
        print!("{}", worker::summary::render(&written.summary));
        println!(
            "files: {}",
            written
                .uploaded_to
                .clone()
                .unwrap_or_else(|| written.dir.display().to_string())
        );
    }
    checked.eprint_failures();
    Ok(checked.valid())
}
