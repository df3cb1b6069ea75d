//! The local executor: a campaign carried out on this machine (`pqbench run`), the twin of
//! the operator's (`operator/src/step.rs` deciding, `operator/src/reconcile.rs` acting)
//! around the one decision both follow, [`run::schedule::decide`]: start a run (with its
//! block's mates when the campaign interleaves), settle each mate of an attempt that is
//! over, retry, re-run an invalid run in its block position, give up, done. Neither
//! executor decides anything about runs of its own; this one maps the schedule's answers
//! onto processes and directories:
//!
//! - an attempt: one `pqbench run-spec` process per client process of each run in it,
//!   behind start gates in the runs directory that open together
//!   ([`run::schedule::LOCAL_START_LEAD`] after the last process is ready);
//! - an invalid attempt's files kept as `attempts/<runId>/a<N>/` (a mate's as `a0`), a
//!   failed or cut-off attempt's moved to `incomplete/<runId>-<unix ms>/`, never analysed
//!   and never deleted; the operator keeps them under the same keys in the results bucket;
//! - the runs given up in `failed-runs.json` (the operator's `failedRuns`, and the same
//!   object in the bucket).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, Result, bail};
use campaign::Manifest;
use campaign::design::Plan;
use run::planner::Environment;
use run::runspec::{RunSpec, StartGate, ready_key, start_key};
use run::schedule::{self, Attempt, AttemptState, GivenUp, Observed, Policy};
use worker::progress::{Progress, Unit};

/// POSIX SIGINT, the signal of a terminal's Ctrl-C.
const SIGINT: i32 = 2;

/// Set by the Ctrl-C (SIGINT) handler of `pqbench run`, or when a run's process ended by
/// SIGINT.
pub(crate) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether a run directory holds every process's checksummed files.
pub(crate) fn run_complete(run_dir: &Path, processes: u32) -> bool {
    (0..processes).all(|i| {
        run_dir
            .join(format!("p{i}"))
            .join(run::summary::files::CHECKSUMS)
            .is_file()
    })
}

use run::schedule::kept;
pub(crate) use worker::attempts::GIVEN_UP;

pub(crate) fn read_given_up(dir: &Path) -> Result<Vec<GivenUp>> {
    let path = dir.join(GIVEN_UP);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a list of given-up runs; repair or delete it",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn write_given_up(dir: &Path, runs: &[GivenUp]) -> Result<()> {
    let path = dir.join(GIVEN_UP);
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(runs)? + "\n")
        .and_then(|()| std::fs::rename(&tmp, &path))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The runs of `plan` whose every process has its checksummed files.
pub(crate) fn complete_runs(runs_dir: &Path, plan: &Plan, processes: u32) -> BTreeSet<String> {
    plan.runs
        .iter()
        .filter(|r| run_complete(&runs_dir.join(&r.run_id), processes))
        .map(|r| r.run_id.clone())
        .collect()
}

/// The results directory's file system had no room left (what failed).
#[derive(Debug)]
pub(crate) struct FullDisk(pub(crate) String);

impl std::fmt::Display for FullDisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FullDisk {}

/// Whether the file system of `dir` has no room for a 64 KiB file: the error, if so.
pub(crate) fn out_of_space(dir: &Path) -> Option<String> {
    worker::output::no_room(dir).map(|e| format!("{}: {e}", dir.display()))
}

/// Sleeps for `d` in short steps; false if Ctrl-C came meanwhile.
fn wait_unless_interrupted(d: Duration) -> bool {
    let until = std::time::Instant::now() + d;
    while std::time::Instant::now() < until {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    !INTERRUPTED.load(Ordering::SeqCst)
}

fn unix_millis() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
}

/// A campaign carried out on this machine: the I/O around [`schedule::decide`] (the run
/// directories, `failed-runs.json`, one `pqbench run-spec` process per client process).
pub(crate) struct Local<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) runs_dir: &'a Path,
    pub(crate) plan: &'a Plan,
    pub(crate) manifest: &'a Manifest,
    pub(crate) env: &'a Environment,
    pub(crate) policy: &'a Policy,
    /// Where each worker process gets its own `TMPDIR`.
    pub(crate) scratch: &'a Path,
}

impl Local<'_> {
    /// Decides and acts until every run is complete or given up, or Ctrl-C.
    pub(crate) fn carry_out(&self, given_up: &mut Vec<GivenUp>) -> Result<()> {
        let processes = self.manifest.spec.clients.processes;
        let since = SystemTime::now();
        let mut finished_since = 0;
        let mut current: Option<(Attempt, AttemptState)> = None;
        let mut mate_states: BTreeMap<String, AttemptState> = BTreeMap::new();
        let bar = Progress::new(
            "runs",
            u64::try_from(self.plan.runs.len()).unwrap_or(u64::MAX),
            Unit::Count,
        );
        loop {
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Ok(());
            }
            let complete = complete_runs(self.runs_dir, self.plan, processes);
            let d = schedule::decide(
                self.plan,
                self.policy,
                &Observed {
                    now: SystemTime::now(),
                    complete: &complete,
                    given_up: given_up.as_slice(),
                    current: current.as_ref().map(|(a, s)| (a, s)),
                    mates: &mate_states,
                    since,
                    finished_since,
                },
            );
            finished_since += u32::try_from(d.completed.len()).unwrap_or(u32::MAX);
            for m in &d.mates {
                self.settle_mate(&bar, m)?;
            }
            let (run_id, index, attempt, mates) = match d.next {
                schedule::Next::Done => return Ok(()),
                schedule::Next::Wait => {
                    bail!("internal: the schedule waits for an attempt that is not going")
                }
                schedule::Next::GiveUp(g) => {
                    let aside = self.move_aside(&g.run_id)?;
                    bar.line(&format!(
                        "run {} failed {} attempt(s) ({}); given up, the campaign goes on without it{}",
                        g.run_id,
                        g.attempts,
                        g.reason,
                        aside
                            .map(|p| format!(" (its files moved to {})", p.display()))
                            .unwrap_or_default()
                    ));
                    given_up.push(g);
                    write_given_up(self.dir, given_up)?;
                    finished_since += 1;
                    current = None;
                    continue;
                }
                schedule::Next::Start {
                    run_id,
                    index,
                    mates,
                } => {
                    if let Some(aside) = self.move_aside(&run_id)? {
                        bar.line(&format!(
                            "run {run_id} was cut off; its files moved to {} and it runs again",
                            aside.display()
                        ));
                    }
                    (run_id, index, 1, mates)
                }
                schedule::Next::Retry {
                    run_id,
                    index,
                    attempt,
                    why,
                    keep,
                    mates,
                } => {
                    let aside = if keep {
                        self.keep_attempt(&run_id, attempt - 1)?
                    } else {
                        self.move_aside(&run_id)?
                    };
                    let delay = schedule::retry_delay(attempt);
                    bar.line(&format!(
                        "run {run_id} attempt {} failed ({why}){}; attempt {attempt} of {} in {}",
                        attempt - 1,
                        aside
                            .map(|p| format!("; its files moved to {}", p.display()))
                            .unwrap_or_default(),
                        self.policy.retries + 1,
                        campaign::units::format_duration(delay)
                    ));
                    if !wait_unless_interrupted(delay) {
                        return Ok(());
                    }
                    (run_id, index, attempt, mates)
                }
            };
            let r = &self.plan.runs[index as usize];
            let eta = d
                .progress
                .eta
                .map(|t| t.duration_since(SystemTime::now()).unwrap_or_default());
            bar.set(
                u64::from(d.progress.done),
                &format!("done; next {} (block {})", r.run_id, r.block),
                eta,
            );
            // Interleaved: the block's other runs still to do take their turns beside it.
            let mut specs = run::planner::run_specs(self.manifest, self.plan, r, self.env)?;
            for m in &mates {
                if let Some(aside) = self.move_aside(&m.run_id)? {
                    bar.line(&format!(
                        "run {} was cut off; its files moved to {} and it runs again",
                        m.run_id,
                        aside.display()
                    ));
                }
                let planned = &self.plan.runs[m.index as usize];
                specs.extend(run::planner::run_specs(
                    self.manifest,
                    self.plan,
                    planned,
                    self.env,
                )?);
            }
            let a = Attempt {
                run_id,
                index,
                attempt,
                started: SystemTime::now(),
                mates,
            };
            let mut states = self.attempt(&specs, a.started)?;
            // A results disk without room fails every attempt alike: stop instead of
            // spending the retries (the caller says what to do).
            if states.values().any(|s| !matches!(s, AttemptState::Going))
                && let Some(detail) = out_of_space(self.dir)
            {
                bail!(FullDisk(detail));
            }
            let state = states.remove(&a.run_id).unwrap_or(AttemptState::Going);
            mate_states = states;
            current = Some((a, state));
        }
    }

    /// Keeps an invalid attempt's files as `attempts/<runId>/a<attempt>/` (never analysed,
    /// never deleted; counted in the report's attempts table).
    fn keep_attempt(&self, run_id: &str, attempt: u32) -> Result<Option<PathBuf>> {
        let run_dir = self.runs_dir.join(run_id);
        if !run_dir.exists() {
            return Ok(None);
        }
        let kept = self.dir.join(kept::attempt_dir(run_id, attempt, None));
        std::fs::create_dir_all(kept.parent().unwrap_or(self.dir))?;
        if kept.exists() {
            // A resumed campaign repeating an attempt number: keep both.
            let alt = self
                .dir
                .join(kept::attempt_dir(run_id, attempt, Some(unix_millis())));
            std::fs::rename(&run_dir, &alt)?;
            return Ok(Some(alt));
        }
        std::fs::rename(&run_dir, &kept)
            .with_context(|| format!("cannot move {} to {}", run_dir.display(), kept.display()))?;
        Ok(Some(kept))
    }

    /// Moves what an earlier attempt of `run_id` left to `incomplete/` (never analysed, never
    /// deleted); where it went, if there was anything.
    fn move_aside(&self, run_id: &str) -> Result<Option<PathBuf>> {
        let run_dir = self.runs_dir.join(run_id);
        if !run_dir.exists() {
            return Ok(None);
        }
        let aside = self.dir.join(kept::incomplete_dir(run_id, unix_millis()));
        std::fs::create_dir_all(aside.parent().unwrap_or(self.dir))?;
        std::fs::rename(&run_dir, &aside)
            .with_context(|| format!("cannot move {} aside", run_dir.display()))?;
        Ok(Some(aside))
    }

    /// Carries out the schedule's settlement of a mate ([`schedule::MateFate`]): an invalid
    /// attempt's files kept as `attempts/<runId>/a0`, a failed one's moved aside; either
    /// runs again when the schedule starts it.
    fn settle_mate(&self, bar: &Progress, m: &schedule::Settled) -> Result<()> {
        let (aside, why) = match &m.fate {
            schedule::MateFate::Complete => return Ok(()),
            schedule::MateFate::Invalid(why) => (self.keep_attempt(&m.run_id, 0)?, why),
            schedule::MateFate::Failed(why) => (self.move_aside(&m.run_id)?, why),
        };
        bar.line(&format!(
            "run {} (in its block's turns) failed ({why}){}; it runs again",
            m.run_id,
            aside
                .map(|p| format!("; its files moved to {}", p.display()))
                .unwrap_or_default()
        ));
        Ok(())
    }

    /// Carries out one attempt of one run, or (interleaved) of the runs of one block at
    /// once: one fresh `pqbench run-spec` process per client process of each run, all behind
    /// the start gates in the runs directory, which open together
    /// [`schedule::LOCAL_START_LEAD`] after the last process is ready. Per run:
    /// `Invalid(why)`: every file is there but the run failed validation; `Ended(why)`: the
    /// attempt failed (a process could not carry it out, and the run's other processes are
    /// stopped while the other runs go on; or the run deadline passed and every process was
    /// stopped). `Going` stands for "complete and valid" (and for an interruption, which the
    /// caller checks first). An error ([`FullDisk`]) when a process found the results
    /// directory's file system full: no attempt can do better until space is freed.
    fn attempt(
        &self,
        specs: &[RunSpec],
        started: SystemTime,
    ) -> Result<BTreeMap<String, AttemptState>> {
        let exe = std::env::current_exe().context("own executable")?;
        let mut runs: BTreeMap<String, u32> = BTreeMap::new();
        for s in specs {
            *runs.entry(s.run_id.clone()).or_default() += 1;
        }
        let of = |run_id: &str| {
            if runs.len() > 1 {
                format!(" of {run_id}")
            } else {
                String::new()
            }
        };
        let mut children = Vec::new();
        let mut tmpdirs = Vec::new();
        for s in specs {
            let mut s = s.clone();
            s.start_gate = Some(StartGate::default());
            let tmp = self
                .scratch
                .join(format!("{}-p{}", s.run_id, s.processes.index));
            std::fs::create_dir_all(&tmp)
                .with_context(|| format!("cannot create {}", tmp.display()))?;
            tmpdirs.push(tmp.clone());
            let mut child = Command::new(&exe)
                .arg("run-spec")
                .env("TMPDIR", &tmp)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .context("cannot start a worker process")?;
            let mut stdin = child.stdin.take().context("worker stdin")?;
            // A process stopped at once (Ctrl-C) closes the pipe: judged after its exit status.
            let handed = stdin.write_all(serde_json::to_string(&s)?.as_bytes());
            drop(stdin);
            children.push(Child {
                child,
                handed,
                status: None,
                run_id: s.run_id,
                index: s.processes.index,
            });
        }
        let mut failed: BTreeMap<String, String> = BTreeMap::new();
        let mut invalid: BTreeSet<String> = BTreeSet::new();
        let mut no_space: Option<String> = None;
        let mut gate_open = false;
        while children.iter().any(|c| c.status.is_none()) {
            std::thread::sleep(Duration::from_millis(100));
            // Read before the processes are polled: a process still going at the poll was
            // still going at `now`, so it is late only if `now` is past the deadline.
            let now = SystemTime::now();
            for c in &mut children {
                if c.status.is_some() {
                    continue;
                }
                let Some(status) = c.child.try_wait()? else {
                    continue;
                };
                c.status = Some(status);
                // SIGINT reaches the processes from the terminal, possibly before this
                // process's handler has run: a process ended by it means an interruption.
                if status.signal() == Some(SIGINT) || INTERRUPTED.load(Ordering::SeqCst) {
                    INTERRUPTED.store(true, Ordering::SeqCst);
                    continue;
                }
                let (i, run_id) = (c.index, &c.run_id);
                if let Err(e) = &c.handed {
                    failed.entry(run_id.clone()).or_insert(format!(
                        "process {i}{} did not get its spec: {e}",
                        of(run_id)
                    ));
                    continue;
                }
                match status.code() {
                    Some(0) => {}
                    Some(1) => {
                        invalid.insert(run_id.clone());
                    }
                    Some(code) if code == i32::from(worker::process::Outcome::NoSpace.code()) => {
                        no_space = Some(format!(
                            "process {i}{} could not write its files",
                            of(run_id)
                        ));
                        failed
                            .entry(run_id.clone())
                            .or_insert(format!("process {i}{}: the disk is full", of(run_id)));
                    }
                    _ => {
                        failed.entry(run_id.clone()).or_insert(format!(
                            "process {i}{} could not carry the run out ({status}; its messages are above)",
                            of(run_id)
                        ));
                    }
                }
            }
            let late = now
                .duration_since(started)
                .is_ok_and(|d| d > self.policy.run_deadline);
            if late {
                for c in children.iter().filter(|c| c.status.is_none()) {
                    failed
                        .entry(c.run_id.clone())
                        .or_insert_with(|| self.policy.deadline_exceeded());
                }
            }
            // A failed run's other processes would wait at the gate or measure alone: they
            // are stopped; so is every process on an interruption.
            let all = INTERRUPTED.load(Ordering::SeqCst);
            for c in &mut children {
                if c.status.is_none() && (all || failed.contains_key(&c.run_id)) {
                    let _ = c.child.kill();
                    c.status = Some(c.child.wait()?);
                }
            }
            if all {
                break;
            }
            if !gate_open {
                let going: BTreeMap<String, u32> = runs
                    .iter()
                    .filter(|(r, _)| !failed.contains_key(*r))
                    .map(|(r, n)| (r.clone(), *n))
                    .collect();
                gate_open = going.is_empty() || self.open_gates(&going)?;
            }
        }
        for t in tmpdirs {
            // What a process stopped with SIGKILL left behind.
            let _ = std::fs::remove_dir_all(t);
        }
        if let Some(what) = no_space {
            bail!(FullDisk(what));
        }
        let mut out = BTreeMap::new();
        for (run_id, count) in runs {
            let dir = self.runs_dir.join(&run_id);
            let state = if INTERRUPTED.load(Ordering::SeqCst) {
                AttemptState::Going
            } else if let Some(w) = failed.remove(&run_id) {
                AttemptState::Ended(w)
            } else if !run_complete(&dir, count) {
                AttemptState::Ended("the processes ended without every process's files".into())
            } else if invalid.contains(&run_id) {
                AttemptState::Invalid(failed_checks(&dir))
            } else {
                AttemptState::Going
            };
            out.insert(run_id, state);
        }
        Ok(out)
    }

    /// Writes one start instant for the runs once every process of every one of them is
    /// ready ([`schedule::start_at`]), at the keys the engine's gate uses under the runs
    /// directory; whether it is written.
    fn open_gates(&self, runs: &BTreeMap<String, u32>) -> Result<bool> {
        let processes: u32 = runs.values().sum();
        let ready = runs
            .iter()
            .map(|(run_id, &n)| {
                (0..n)
                    .filter(|&i| self.runs_dir.join(ready_key("", run_id, i)).is_file())
                    .count()
            })
            .sum::<usize>();
        let Some(at) = schedule::start_at(
            u32::try_from(ready).unwrap_or(0),
            processes,
            SystemTime::now(),
            schedule::LOCAL_START_LEAD,
        ) else {
            return Ok(false);
        };
        let at = humantime::format_rfc3339_millis(at).to_string();
        for run_id in runs.keys() {
            let path = self.runs_dir.join(start_key("", run_id));
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, &at)
                .and_then(|()| std::fs::rename(&tmp, &path))
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(true)
    }
}

/// One `pqbench run-spec` process of an attempt.
struct Child {
    child: std::process::Child,
    /// Whether it got its spec on stdin.
    handed: std::io::Result<()>,
    /// Its exit status, once it has ended (or been stopped).
    status: Option<std::process::ExitStatus>,
    /// The run it carries out, and its process index in that run.
    run_id: String,
    index: u32,
}

/// The names of the failed checks of a run's processes (from their `summary.json`).
fn failed_checks(run_dir: &Path) -> String {
    let mut names = BTreeSet::new();
    for p in std::fs::read_dir(run_dir).into_iter().flatten().flatten() {
        let Some(s) = std::fs::read_to_string(p.path().join(run::summary::files::SUMMARY))
            .ok()
            .and_then(|t| serde_json::from_str::<run::summary::RunSummary>(&t).ok())
        else {
            continue;
        };
        names.extend(s.checks.into_iter().filter(|c| !c.passed).map(|c| c.name));
    }
    if names.is_empty() {
        "failed validation".into()
    } else {
        names.into_iter().collect::<Vec<_>>().join(", ")
    }
}
