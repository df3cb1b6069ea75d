//! `pqbench`: the command-line front end. Thin: parse arguments, dispatch to `cli`.

mod args;
mod baselines;
mod bench;
mod campaigncmd;
mod cli;
mod clidoc;
mod dirstore;
mod envcmd;
mod inventory;
mod kmscmd;
mod local;
mod migrate;
mod reportcmd;
mod runcmd;
mod s3cmd;
mod serverproc;

use std::process::ExitCode;

use clap::Parser as _;

/// mimalloc instead of glibc malloc: the S3 SDK allocates heavily per request, and
/// `bench-store` measured glibc's malloc/free at about a sixth of client CPU.
#[cfg(not(feature = "alloc-count"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Feature `alloc-count` (profiles only, never a release): the system allocator with
/// counters, so that `bench-store` can report allocations per request. The count of
/// allocations does not depend on the allocator; its CPU figures then do.
#[cfg(feature = "alloc-count")]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Allocations made so far by the whole process (feature `alloc-count`), else `None`.
pub(crate) fn allocations() -> Option<u64> {
    #[cfg(feature = "alloc-count")]
    {
        u64::try_from(GLOBAL.stats().allocations).ok()
    }
    #[cfg(not(feature = "alloc-count"))]
    {
        None
    }
}

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
