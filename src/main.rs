//! `pqbench`: the command-line front end. Thin: parse arguments, dispatch to `cli`.

mod bench;
mod cli;
mod layout;
mod s3cmd;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One clear line (the chain of causes joined), no backtrace noise.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
