//! `pqbench`: the command-line front end. Thin: parse arguments, dispatch to `cli`.

mod args;
mod bench;
mod campaigncmd;
mod cli;
mod dirstore;
mod envcmd;
mod runcmd;
mod s3cmd;
mod serverproc;

use std::process::ExitCode;

use clap::Parser as _;

/// mimalloc instead of glibc malloc: the S3 SDK allocates heavily per request, and
/// `bench-store` measured glibc's malloc/free at about a sixth of client CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            // One clear line (the chain of causes joined), no backtrace noise.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
