//! One process of one run, the one way both binaries carry it out: `pqbench-worker` (the
//! operator's pods) and `pqbench run-spec` (the processes `pqbench run` starts). Run the
//! spec, validate its files, report, and exit with what happened.

use std::process::ExitCode;

use run::runspec::RunSpec;

use crate::engine::{RunOptions, run_and_validate};

/// What a process prints besides the failed checks (always on stderr).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Nothing more (the local campaign runner reports for its processes).
    Quiet,
    /// The summary as text on stdout, where the files went, and where the traces went.
    Text,
    /// The summary as JSON on stdout, and where the traces went.
    Json,
}

/// How the run went, as an exit status: 0 valid; 1 the run completed but is invalid (its
/// files are kept and say why); 2 it could not be carried out (bad spec, key, gate, not
/// ready by `startAt`, S3 unreachable before the start); 3 its files could not be written
/// because their file system is full (no retry can help until space is freed); 143
/// (128 + SIGTERM) stopped by SIGTERM, incomplete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A valid run.
    Valid,
    /// Complete but invalid.
    Invalid,
    /// Not carried out.
    NotCarriedOut,
    /// Its files could not be written: their file system is full.
    NoSpace,
    /// Stopped by SIGTERM before its files were complete.
    Terminated,
}

impl Outcome {
    /// The exit code.
    pub const fn code(self) -> u8 {
        match self {
            Self::Valid => 0,
            Self::Invalid => 1,
            Self::NotCarriedOut => 2,
            Self::NoSpace => 3,
            Self::Terminated => 143,
        }
    }
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> Self {
        ExitCode::from(o.code())
    }
}

/// Runs one process of one run and reports as `report` says.
pub fn carry_out(spec: &RunSpec, opts: &RunOptions, report: Report) -> Outcome {
    let checked = match run_and_validate(spec, opts) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("run {} process {}: {e}", spec.run_id, spec.processes.index);
            return match e {
                crate::Error::Terminated => Outcome::Terminated,
                crate::Error::NoSpace { .. } => Outcome::NoSpace,
                _ => Outcome::NotCarriedOut,
            };
        }
    };
    let written = &checked.written;
    match report {
        Report::Quiet => {}
        Report::Json => match serde_json::to_string_pretty(&written.summary) {
            Ok(j) => println!("{j}"),
            Err(e) => eprintln!("cannot print the summary: {e}"),
        },
        Report::Text => {
            print!("{}", run::summary::render(&written.summary));
            println!(
                "files: {}",
                written
                    .uploaded_to
                    .clone()
                    .unwrap_or_else(|| written.dir.display().to_string())
            );
        }
    }
    if report != Report::Quiet
        && let Some(t) = &written.traces
    {
        eprintln!("{}", t.describe());
    }
    checked.eprint_failures();
    if checked.valid() {
        Outcome::Valid
    } else {
        Outcome::Invalid
    }
}

/// Waits until the process is told to stop: SIGTERM (a pod's deletion, `kill`) or Ctrl-C.
/// What a serving process (`pqbench serve-s3`, `serve-kms`, the operator's key service)
/// blocks on.
pub fn until_stopped() -> crate::Result<()> {
    use crate::Error;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?
        .block_on(async {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .map_err(Error::Runtime)?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r.map_err(Error::Runtime)?,
                _ = term.recv() => {}
            }
            Ok(())
        })
}
