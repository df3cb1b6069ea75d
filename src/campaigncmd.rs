//! `pqbench plan`, `pqbench run` and `pqbench analyze`: a whole campaign on one machine,
//! from the `BenchmarkCampaign` YAML to verdicts (study sections IV-B, IV-C, V).
//!
//! Layout of a campaign directory (`<out>/<name>/`):
//! - `campaign.yaml` (the file as given, or only its campaign document when the file holds
//!   other objects too) and `plan.json` (the design with its pre-registration hash),
//!   written before the first run;
//! - no secrets: the recipient keys (one per key type, made once) and the embedded server's
//!   credentials live in a keys directory outside it (`--keys-dir`, by default
//!   `$XDG_STATE_HOME/pqbench/keys/<campaign>-<pre-registration hash prefix>/`, 0700), which
//!   is refused if it lies inside a git working tree;
//! - `runs/<runId>/p<index>/`: each run's files, as `pqbench-worker` writes them;
//! - `incomplete/`: runs cut off by an interruption, moved aside (never analysed, never
//!   deleted);
//! - `runs.csv`, `report.json`, `report.md` and `plots/*.svg` after the analysis;
//! - `.lock`: held (an advisory `flock`) by the `pqbench run` using the directory, with its
//!   process id inside; a second `pqbench run` on the same directory is refused, since it
//!   would carry out the same runs again beside the first.
//!
//! A rerun of the same command skips every complete run, moves a cut-off run aside and
//! runs it again, and refuses to continue a directory whose plan has another hash. Ctrl-C
//! stops after the runs already complete (the run in progress is cut off) and says how to
//! resume; the exit status is then 130.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use analysis::Config;
use anyhow::{Context as _, Result, bail};
use campaign::design::{self, Assumptions, Plan};
use campaign::units::format_duration;
use campaign::{CampaignFile, Manifest};
use clap::Args;
use envelope::{KeyType, SecretKey};
use report::Header;
use run::planner::{Environment, ExternalKmsCredentials};
use run::runspec::{KeyRef, Output, RunSpec, S3Target, Telemetry};
use run::schedule::{self, Policy};
use serde::Serialize;

use crate::local::{FullDisk, GIVEN_UP, INTERRUPTED, Local, complete_runs, read_given_up};
use crate::serverproc::local_or_embedded;

const BUCKET: &str = "pqbench-campaign";

#[derive(Args, Debug)]
pub(crate) struct PlanArgs {
    /// The campaign file (a BenchmarkCampaign manifest, YAML or JSON).
    file: PathBuf,
    /// Price of the test bed per hour (any currency) for a cost estimate.
    #[arg(long)]
    price_per_hour: Option<f64>,
    /// Assumed closed-loop requests per second per worker, for the request estimate.
    #[arg(long, default_value_t = 500.0)]
    assume_rps_per_worker: f64,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

/// Names the other objects of a multi-document campaign file, which only a cluster uses.
fn note_others(file: &Path, f: &CampaignFile) {
    if !f.others.is_empty() {
        eprintln!(
            "note: {} also holds {}; they are for the cluster (`kubectl apply -f`) and a local run ignores them",
            file.display(),
            f.others.join(", ")
        );
    }
}

/// The pilot's paired sd per (cell, arm, against), from `analysis.pilot`'s `report.json`
/// (the directory relative to the campaign file); empty without a pilot.
fn pilot_sds(
    file: &Path,
    spec: &campaign::spec::CampaignSpec,
) -> Result<BTreeMap<(String, String, String), f64>> {
    let Some(dir) = &spec.analysis.pilot else {
        return Ok(BTreeMap::new());
    };
    let base = file.parent().unwrap_or_else(|| Path::new("."));
    let path = base.join(dir).join("report.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "spec.analysis.pilot: cannot read {} (give the results directory of an earlier campaign, holding its report.json)",
            path.display()
        )
    })?;
    #[derive(serde::Deserialize)]
    struct Pilot {
        comparisons: Vec<PilotEntry>,
    }
    #[derive(serde::Deserialize)]
    struct PilotEntry {
        cell: String,
        mode: String,
        baseline: String,
        sd: f64,
    }
    let p: Pilot = serde_json::from_str(&text).with_context(|| {
        format!(
            "spec.analysis.pilot: {} is not a pqbench report (expected comparisons with cell, mode, baseline and sd)",
            path.display()
        )
    })?;
    Ok(p.comparisons
        .into_iter()
        .filter(|e| e.sd.is_finite() && e.sd >= 0.0)
        .map(|e| ((e.cell, e.mode, e.baseline), e.sd))
        .collect())
}

/// The power calculation before the data, with a warning per underpowered comparison.
fn print_power(spec: &campaign::spec::CampaignSpec, power: &[design::PowerRow], family: usize) {
    let a = &spec.analysis;
    if power.is_empty() {
        if family > 0 {
            println!(
                "power before the data: not computed (set analysis.assumedSd, or analysis.pilot to an earlier campaign's results)"
            );
        }
        return;
    }
    println!(
        "power before the data ({} at α/{family} = {:.4}, margin ±{}):",
        a.power,
        a.alpha / as_f64(family.max(1)),
        a.margin
    );
    for p in power {
        println!(
            "  {} · {} vs {}: sd {:.4} ({}) needs {} blocks, {} planned{}",
            p.cell,
            p.arm,
            p.against,
            p.sd,
            p.source,
            p.needed,
            p.planned,
            if p.underpowered { "  UNDERPOWERED" } else { "" }
        );
    }
    for p in power.iter().filter(|p| p.underpowered) {
        eprintln!(
            "warning: {} · {} vs {} is underpowered: {} blocks planned, {} needed for power {} at sd {:.4}; raise repetitions or accept an inconclusive verdict",
            p.cell, p.arm, p.against, p.planned, p.needed, a.power, p.sd
        );
    }
}

#[allow(clippy::cast_precision_loss, reason = "family sizes are small")]
fn as_f64(n: usize) -> f64 {
    n as f64
}

pub(crate) fn plan_cmd(a: PlanArgs) -> Result<()> {
    let f = CampaignFile::read(&a.file)?;
    note_others(&a.file, &f);
    let m = f.manifest;
    let plan = design::plan(&m);
    let assumptions = Assumptions {
        closed_rps_per_worker: a.assume_rps_per_worker,
        ..Assumptions::default()
    };
    let est = design::estimate(&plan, &m.spec, &assumptions);
    let power = design::power(&plan, &m.spec, &pilot_sds(&a.file, &m.spec)?);
    if a.json {
        #[derive(Serialize)]
        struct Out<'a> {
            plan: &'a Plan,
            estimate: &'a design::Estimate,
            power: &'a [design::PowerRow],
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&Out {
                plan: &plan,
                estimate: &est,
                power: &power,
            })?
        );
        return Ok(());
    }
    println!("campaign {}", plan.campaign);
    println!("pre-registration hash {}", plan.prereg_hash);
    println!("arms ({}, every one in every block):", plan.arms.len());
    for x in &plan.arms {
        let key = x.kms.as_ref().map_or_else(String::new, |k| {
            let cached = if k.cache { ", secrets cached" } else { "" };
            match (&k.endpoint, &k.key_id) {
                (Some(e), Some(id)) => format!(", key {id} in the key service at {e}{cached}"),
                _ => format!(
                    ", key in the embedded key service (+{} round trip{cached})",
                    campaign::units::format_duration(k.rtt.0),
                ),
            }
        });
        println!(
            "  {:<32} {} on {}{key}, S3 client {}, format {}{}",
            x.label,
            x.mode,
            x.backend.name(),
            x.client,
            x.format,
            if x.control { "  (A/A control)" } else { "" }
        );
    }
    println!("comparisons (in every cell):");
    for c in &plan.comparisons {
        println!("  {} vs {}", c.arm, c.against);
    }
    println!("cells ({}):", plan.cells.len());
    for c in &plan.cells {
        println!("  {:<28} {} blocks", c.id, c.repetitions);
    }
    let primary: Vec<String> = design::primary_comparisons(&plan, &m.spec)
        .into_iter()
        .map(|(cell, arm, against, _)| format!("  {cell} · {arm} vs {against}"))
        .collect();
    println!(
        "primary family ({}, {} over it at α = {}):",
        primary.len(),
        match m.spec.analysis.correction {
            campaign::spec::Correction::Holm => "Holm",
            campaign::spec::Correction::None => "no correction",
        },
        m.spec.analysis.alpha
    );
    for p in &primary {
        println!("{p}");
    }
    if primary.is_empty() {
        println!("  (none: every comparison is exploratory; name cells in analysis.primary)");
    }
    print_power(&m.spec, &power, primary.len());
    println!("blocks: {}   runs: {}", plan.blocks, plan.runs.len());
    println!("run order:");
    for r in &plan.runs {
        println!(
            "  {:>4}  block {:>3}.{}  {:<28} {}",
            r.index, r.block, r.position, r.cell, r.arm
        );
    }
    println!(
        "requests: {:.0} open-loop (rate × time) + ~{:.0} closed-loop at an assumed {} requests/s per worker",
        est.open_loop_requests, est.closed_loop_requests_assumed, a.assume_rps_per_worker
    );
    println!(
        "wall time: ~{} (every pause at its {} maximum: {})",
        humantime::format_duration(round_s(est.wall)),
        format_duration(m.spec.pause.max_wait.0),
        humantime::format_duration(round_s(est.wall_worst))
    );
    if let Some(p) = a.price_per_hour {
        let h = est.wall.as_secs_f64() / 3600.0;
        let hw = est.wall_worst.as_secs_f64() / 3600.0;
        println!("cost: ~{:.2} at {p}/h ({:.2} worst case)", h * p, hw * p);
    }
    Ok(())
}

fn round_s(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs())
}

#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// The campaign file (a BenchmarkCampaign manifest, YAML or JSON).
    file: PathBuf,
    /// An S3 endpoint to use instead of starting the embedded server (credentials from
    /// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY).
    #[arg(long)]
    endpoint: Option<String>,
    /// Bucket on the endpoint (must exist with --endpoint).
    #[arg(long, default_value = BUCKET)]
    bucket: String,
    /// Region for request signing.
    #[arg(long, default_value = "us-east-1")]
    region: String,
    /// Results root; the campaign goes to OUT/NAME/.
    #[arg(long, default_value = "pqbench-results")]
    out: PathBuf,
    /// Where the campaign's secrets go (recipient keys, the embedded server's credentials):
    /// never inside a git working tree. Default: $XDG_STATE_HOME/pqbench/keys/NAME-HASH
    /// (XDG_STATE_HOME defaults to ~/.local/state).
    #[arg(long)]
    keys_dir: Option<PathBuf>,
    /// Node exporter of the server host (for the pause rule with --endpoint).
    #[arg(long)]
    node_exporter: Option<String>,
    /// Credentials of the key services that remote arms name by endpoint
    /// (`arms[].kms.endpoint`): a file of AWS_ACCESS_KEY_ID= and AWS_SECRET_ACCESS_KEY=
    /// lines, readable by you alone, as `pqbench serve-kms --env-file` writes it.
    #[arg(long)]
    kms_credentials: Option<PathBuf>,
    #[command(flatten)]
    traces: crate::args::TraceArgs,
}

/// Makes (or checks) the campaign directory: the plan must match byte for byte.
fn prepare_dir(dir: &Path, text: &str, plan: &Plan) -> Result<()> {
    let plan_path = dir.join("plan.json");
    let plan_json = serde_json::to_string_pretty(plan)? + "\n";
    if plan_path.exists() {
        let old = std::fs::read_to_string(&plan_path)
            .with_context(|| format!("cannot read {}", plan_path.display()))?;
        if old != plan_json {
            let old_hash = serde_json::from_str::<Plan>(&old)
                .map(|p| p.prereg_hash)
                .unwrap_or_else(|_| "unreadable".into());
            bail!(
                "{} holds campaign {} with pre-registration {old_hash}, but this file's is {}: \
                 a pre-registered campaign cannot change. Use another --out or campaign name.",
                dir.display(),
                plan.campaign,
                plan.prereg_hash
            );
        }
        return Ok(());
    }
    std::fs::create_dir_all(dir.join("runs"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(dir.join("campaign.yaml"), text)?;
    std::fs::write(&plan_path, plan_json)?;
    Ok(())
}

/// The name of the lock file in a campaign directory.
const LOCK: &str = ".lock";

/// Creates the campaign directory `dir` if need be and holds it for this invocation (an
/// exclusive `flock` on `dir/.lock`, released when the returned file is closed, also by
/// the kernel when the process dies). A directory another `pqbench run` holds is refused:
/// both would see the same runs missing and carry each of them out twice.
fn lock_dir(dir: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(LOCK);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            let holder = holder.trim();
            bail!(
                "{} is in use by another pqbench run{}: wait for it to end (or stop it), \
                 or give this one another --out",
                dir.display(),
                if holder.is_empty() {
                    String::new()
                } else {
                    format!(" ({holder})")
                }
            );
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", path.display()));
        }
    }
    file.set_len(0)
        .and_then(|()| writeln!(file, "process {}", std::process::id()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(file)
}

/// The campaign's keys directory: `--keys-dir`, or
/// `$XDG_STATE_HOME/pqbench/keys/<campaign>-<first 12 hex digits of the pre-registration
/// hash>` (a resumed run of the same campaign finds its keys again).
fn keys_dir(arg: Option<&Path>, plan: &Plan) -> Result<PathBuf> {
    if let Some(d) = arg {
        return Ok(d.to_path_buf());
    }
    let state = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(v) => PathBuf::from(v),
        None => std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".local/state"))
            .context(
                "neither XDG_STATE_HOME nor HOME is set: give the keys a directory with --keys-dir",
            )?,
    };
    Ok(state
        .join("pqbench/keys")
        .join(format!("{}-{}", plan.campaign, &plan.prereg_hash[..12])))
}

/// Refuses a keys directory inside a git working tree: `git add -A` would commit the keys.
fn refuse_in_git_tree(keys: &Path) -> Result<()> {
    if let Some(top) = envelope::keys::git_work_tree(keys) {
        bail!(
            "refusing to write secret keys to {}: it is inside the git working tree {}, where \
             `git add` would pick them up; give them a directory outside any repository with \
             --keys-dir (the default is under $XDG_STATE_HOME or ~/.local/state)",
            keys.display(),
            top.display()
        );
    }
    Ok(())
}

/// One recipient key per key type the arms need, made once in `keys` (0700) and kept for
/// resumption.
fn prepare_keys(keys: &Path, plan: &Plan) -> Result<()> {
    refuse_in_git_tree(keys)?;
    if !keys.exists() {
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.recursive(true).create(keys)?;
    }
    for arm in &plan.arms {
        let kt = arm.mode.key_type();
        if kt == KeyType::None {
            continue;
        }
        let p = keys.join(format!("{}.key", kt.name()));
        if !p.exists() {
            SecretKey::generate(kt, &mut envelope::os_rng())?.write_file(&p)?;
        }
    }
    Ok(())
}

/// This machine's CPUs and where the server and the clients go on them
/// ([`campaign::placement::place`]); says so on stderr.
fn local_cpus(m: &Manifest, embedded: bool) -> Result<run::planner::LocalCpus> {
    use campaign::placement::{format_cpu_list, place};
    let allowed = worker::affinity::allowed().map_err(anyhow::Error::msg)?;
    let placement = place(
        &allowed,
        m.spec.server.cpus.as_ref(),
        m.spec.clients.cpus.as_ref(),
        embedded,
        m.spec.clients.processes,
    )
    .map_err(|e| anyhow::anyhow!("spec.{e}"))?;
    let show = |s: &Option<Vec<u32>>| {
        s.as_deref().map_or_else(
            || "any CPU".to_owned(),
            |v| format!("CPU {}", format_cpu_list(v)),
        )
    };
    match (&placement.server, &placement.clients) {
        (None, None) => eprintln!(
            "placement: none (this process may use CPU {}{}); server and clients share them \
             (set server.cpus / clients.cpus to place them)",
            format_cpu_list(&allowed),
            if allowed.len() >= 2
                && embedded
                && m.spec.server.cpus.is_none()
                && m.spec.clients.cpus.is_none()
            {
                format!(
                    "; too few to give each of the {} client processes a CPU of its own",
                    m.spec.clients.processes
                )
            } else {
                String::new()
            }
        ),
        (s, c) => eprintln!(
            "placement: {} on {}, clients on {} (server.cpus / clients.cpus; none to disable)",
            if embedded {
                "embedded server"
            } else {
                "server (not placed)"
            },
            show(s),
            show(c)
        ),
    }
    Ok(run::planner::LocalCpus { allowed, placement })
}

/// Refuses, before anything is written, a campaign whose arms name key services by
/// endpoint without `--kms-credentials`, a credentials file the runs could not use, and a
/// key those services do not hold for the arm's mode (each arm's `GetPublicKey`, as its
/// writers will call it), so that no run is timed, retried and given up on a configuration
/// error.
fn check_key_services(plan: &Plan, file: Option<&Path>) -> Result<()> {
    let external: Vec<_> = plan
        .arms
        .iter()
        .filter_map(|a| a.kms.as_ref().filter(|k| !k.embedded()).map(|k| (a, k)))
        .collect();
    let file = match file {
        None if external.is_empty() => return Ok(()),
        None => bail!(
            "arms {} name a key service by kms.endpoint: pass --kms-credentials FILE (its \
             AWS_ACCESS_KEY_ID= and AWS_SECRET_ACCESS_KEY= lines, readable by you alone)",
            external
                .iter()
                .map(|(a, _)| a.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(f) if external.is_empty() => bail!(
            "--kms-credentials {}: no arm names a key service by kms.endpoint (the embedded \
             services make their own credentials); drop it",
            f.display()
        ),
        Some(f) => f,
    };
    let credentials = run::runspec::Credentials::File(file.to_owned());
    worker::engine::resolve_credentials(&credentials)
        .map_err(|e| anyhow::anyhow!("--kms-credentials: {e}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("a runtime for the key services' check")?;
    for (arm, k) in external {
        let (Some(endpoint), Some(id)) = (&k.endpoint, &k.key_id) else {
            continue;
        };
        let target = run::runspec::KmsTarget {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            region: k.region().to_owned(),
            credentials: credentials.clone(),
        };
        rt.block_on(worker::engine::service_public_key(&target, id, arm.mode))
            .map_err(|e| anyhow::anyhow!("arm {}: {e}", arm.label))?;
    }
    Ok(())
}

pub(crate) fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    let text = campaign::yaml::read_text(&a.file)
        .with_context(|| format!("cannot read campaign file {}", a.file.display()))?;
    let f = CampaignFile::parse(&text, &a.file.display().to_string())?;
    note_others(&a.file, &f);
    let m = &f.manifest;
    let plan = design::plan(m);
    let dir = a.out.join(&m.metadata.name);
    check_key_services(&plan, a.kms_credentials.as_deref())?;
    // Keys first: a refused keys directory leaves nothing behind in the results.
    let keys = keys_dir(a.keys_dir.as_deref(), &plan)?;
    prepare_keys(&keys, &plan).with_context(|| format!("keys directory {}", keys.display()))?;
    // One invocation at a time per results directory, held from before its first write.
    let _lock = lock_dir(&dir)?;
    // The copy kept with the results is the campaign alone: the file's other objects may
    // be Secrets.
    prepare_dir(&dir, f.campaign_only.as_deref().unwrap_or(&text), &plan)?;
    if dir.join("keys").is_dir() {
        eprintln!(
            "note: {} holds secret keys an earlier pqbench kept inside the results directory; \
             they are not used any more (this campaign's keys are in {}): delete them",
            dir.join("keys").display(),
            keys.display()
        );
    }
    let runs_dir = dir.join("runs");
    let processes = m.spec.clients.processes;

    let policy = Policy::of(&m.spec, &plan);
    let mut given_up = read_given_up(&dir)?;
    let complete = complete_runs(&runs_dir, &plan, processes);
    let total = plan.runs.len();
    let settled = schedule::settled(&plan, &complete, &given_up) as usize;
    eprintln!(
        "campaign {} ({} runs, pre-registration {}), results in {}, keys in {}",
        plan.campaign,
        total,
        &plan.prereg_hash[..16],
        dir.display(),
        keys.display()
    );
    if settled > 0 {
        eprintln!(
            "resuming: {} complete run(s) kept, {} to go",
            settled - given_up.len(),
            total - settled
        );
    }
    if !given_up.is_empty() {
        eprintln!(
            "{} run(s) given up earlier are not run again (listed in {}; delete it to try them again)",
            given_up.len(),
            dir.join(GIVEN_UP).display()
        );
    }
    if settled < total {
        // Every backend of the campaign seals what every other opens, before anything is
        // timed (each run's worker checks its own backend against all of them again).
        let interop = campaign::design::interop(&m.spec).map_err(anyhow::Error::msg)?;
        eprintln!("interop: {}", interop.words());
        // A terminal's Ctrl-C reaches the run-spec processes and the server too (one process
        // group); this process only notes it, to report what is kept and how to resume.
        ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst))
            .context("cannot install the Ctrl-C handler")?;
        let cpus = local_cpus(m, a.endpoint.is_none())?;
        let server_cpus = cpus
            .placement
            .server
            .as_deref()
            .map(campaign::placement::format_cpu_list);
        // This process (the executor: polling, progress, files) keeps off the clients'
        // cores too; its children confine themselves where their specs say.
        if let Some(list) = &server_cpus {
            worker::affinity::confine(list).map_err(anyhow::Error::msg)?;
        }
        // The testbed's ceilings, on a machine nothing of the campaign runs on yet.
        crate::baselines::take_unless_kept(&dir, m, &plan, &cpus, a.endpoint.as_deref())?;
        // The embedded server lives until every run is done (dropping it stops it).
        let (server, endpoint, credentials, local_pid) = local_or_embedded(
            a.endpoint.as_deref(),
            &a.bucket,
            &keys.join("s3.env"),
            server_cpus.as_deref(),
        )?;
        // One key service per added round trip of the remote arms, on the server's CPUs,
        // serving the campaign's keys; they live as long as the S3 server.
        let kms = crate::serverproc::spawn_kms_services(&plan, &keys, server_cpus.as_deref())?;
        let env = Environment {
            kms: kms.iter().map(|k| (k.rtt, k.target.clone())).collect(),
            kms_external: a
                .kms_credentials
                .clone()
                .map(|f| ExternalKmsCredentials::All(run::runspec::Credentials::File(f))),
            s3: S3Target {
                endpoint: endpoint.clone(),
                region: a.region.clone(),
                bucket: a.bucket.clone(),
                credentials,
                client: Default::default(),
            },
            keys: KeyRef::Dir(keys.clone()),
            output: Output::Dir(runs_dir.clone()),
            telemetry: Telemetry {
                local_server_pid: local_pid,
                node_exporter: a
                    .node_exporter
                    .as_ref()
                    .map(|url| run::runspec::PromSource {
                        url: url.clone(),
                        bearer_token_env: None,
                        bearer_token_file: None,
                    }),
                ..Telemetry::default()
            },
            traces: a.traces.spec(),
            cpus: Some(cpus),
        };
        let cluster_only = m.spec.cluster_only_fields();
        if !cluster_only.is_empty() {
            eprintln!(
                "note: {} apply on a cluster (the operator) and are ignored by a local run",
                cluster_only.join(", ")
            );
        }
        if m.spec.pause.enabled && local_pid.is_none() && a.node_exporter.is_none() {
            eprintln!(
                "warning: the pause rule needs a view of the server host; pass --node-exporter URL, \
                 or runs follow each other without a pause"
            );
        }
        // The worker processes' temporary files (their records spools) go under a
        // directory of this invocation, each process's removed after its attempt: a process
        // stopped with SIGKILL (a failed run's mates, a deadline) cannot remove its own.
        let scratch = tempfile::Builder::new()
            .prefix(&format!("pqbench-run-{}-", m.metadata.name))
            .tempdir()
            .context("cannot create a temporary directory for the worker processes")?;
        let local = Local {
            dir: &dir,
            runs_dir: &runs_dir,
            plan: &plan,
            manifest: m,
            env: &env,
            policy: &policy,
            scratch: scratch.path(),
        };
        let finished = local.carry_out(&mut given_up);
        drop(kms);
        drop(server);
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Ok(interrupted(&a.file, &plan, &runs_dir, processes));
        }
        finished.map_err(|e| explain_full_disk(e, &dir, &plan, processes))?;
        eprintln!("{total}/{total} runs done");
    }
    if !given_up.is_empty() {
        eprintln!(
            "warning: {} run(s) failed every attempt and were given up (listed in {}); the \
             analysis leaves them out. Delete that file and rerun to try them again.",
            given_up.len(),
            dir.join(GIVEN_UP).display()
        );
    }

    analyze_dir(&dir, m, &plan)
        .map_err(|e| explain_full_disk(e, &dir, &plan, m.spec.clients.processes))?;
    if let Some(t) = traces_sent(&runs_dir) {
        eprintln!("{} (all runs)", t.describe());
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the runs' request traces went, summed over every process's `process.json`
/// (`None` when no run was traced).
fn traces_sent(runs_dir: &Path) -> Option<run::trace::TraceReport> {
    let mut total: Option<run::trace::TraceReport> = None;
    for run in std::fs::read_dir(runs_dir).ok()?.flatten() {
        let Ok(procs) = std::fs::read_dir(run.path()) else {
            continue;
        };
        for p in procs.flatten() {
            let path = p.path().join(run::summary::files::PROCESS);
            let Some(t) = std::fs::read_to_string(&path)
                .ok()
                .and_then(|s| serde_json::from_str::<run::summary::ProcessInfo>(&s).ok())
                .and_then(|i| i.traces)
            else {
                continue;
            };
            total.get_or_insert_with(Default::default).add(&t);
        }
    }
    total
}

/// Reports a Ctrl-C: what is kept (complete runs counted on disk, since a run may have
/// finished its files as the signal came) and the command that resumes. Exit status 130
/// (128 + SIGINT), as a shell reports an interrupted command.
fn interrupted(file: &Path, plan: &Plan, runs_dir: &Path, processes: u32) -> ExitCode {
    let total = plan.runs.len();
    let complete = complete_runs(runs_dir, plan, processes).len();
    eprintln!(
        "interrupted: {complete} of {total} runs complete and kept. \
         Rerun `pqbench run {}` with the same --out to resume; the cut-off run is moved aside \
         and runs again.",
        file.display()
    );
    ExitCode::from(130)
}

/// An error of the campaign, said as a full results disk when that is what it is: what to
/// do, and that nothing is lost.
fn explain_full_disk(e: anyhow::Error, dir: &Path, plan: &Plan, processes: u32) -> anyhow::Error {
    let detail = if let Some(f) = e.downcast_ref::<FullDisk>() {
        f.0.clone()
    } else if e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(worker::is_full)
    }) {
        format!("{e:#}")
    } else {
        return e;
    };
    let complete = complete_runs(&dir.join("runs"), plan, processes).len();
    anyhow::anyhow!(
        "the file system of the results directory {} is full ({detail}): free space on it, \
         then run the same command again; the {complete} complete run(s) are kept, and the \
         campaign resumes with the runs it has left",
        dir.display()
    )
}

/// Validates and analyses a campaign directory; writes runs.csv, report.json, report.md
/// and the plots; prints the verdict table.
fn analyze_dir(dir: &Path, m: &Manifest, plan: &Plan) -> Result<()> {
    let mut cfg = Config::from_spec(&m.spec);
    cfg.baselines = crate::baselines::read(dir);
    let header = Header {
        campaign: Some(plan.campaign.clone()),
        prereg_hash: Some(plan.prereg_hash.clone()),
        ..Header::default()
    };
    analyze_to(dir, &dir.join("runs"), &cfg, header, None, Some(plan))
}

fn analyze_to(
    out: &Path,
    data: &Path,
    cfg: &Config,
    mut header: Header,
    json_path: Option<&Path>,
    plan: Option<&Plan>,
) -> Result<()> {
    let collected = worker::collect::collect(data)?;
    if collected.rows.is_empty() && collected.excluded.is_empty() {
        // Not one run directory: nothing to analyse.
        bail!(
            "no run data under {} (expected RUN_ID/pINDEX/ directories with SHA256SUMS)",
            data.display()
        );
    }
    header.excluded = collected.excluded_runs();
    let attempts = plan
        .map(|p| {
            let given_up = read_given_up(out).unwrap_or_default();
            worker::attempts::run_attempts(out, p, &collected, &given_up)
        })
        .unwrap_or_default();
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("runs.csv"), analysis::rows_to_csv(&collected.rows))?;
    let cfg = &Config {
        implementations: collected.implementations(),
        ..cfg.clone()
    };
    write_report(
        out,
        &collected.rows,
        &attempts,
        cfg,
        header,
        json_path,
        Some(data),
    )
}

fn write_report(
    out: &Path,
    rows: &[analysis::RunRow],
    attempts: &[analysis::RunAttempts],
    cfg: &Config,
    mut header: Header,
    json_path: Option<&Path>,
    data: Option<&Path>,
) -> Result<()> {
    let report = analysis::analyze_full(rows, attempts, &header.excluded, cfg)?;
    let mut report_json = Vec::new();
    let plot_dir = out.join("plots");
    std::fs::create_dir_all(&plot_dir)?;
    let json_path = json_path.map_or_else(|| out.join("report.json"), Path::to_path_buf);
    for (name, bytes) in report::files(&report, &mut header) {
        let path = if name == "report.json" {
            report_json.clone_from(&bytes);
            json_path.clone()
        } else {
            out.join(&name)
        };
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    // What the report can be checked against, as the operator's analysis writes it.
    let digests = data
        .map(|d| worker::analyze::digests(d, &report_json))
        .transpose()
        .context("cannot read the run files for their digest")?;
    if let Some(d) = &digests {
        let path = out.join(worker::analyze::DIGESTS);
        let mut text = serde_json::to_vec_pretty(d)?;
        text.push(b'\n');
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    print!("{}", report::terminal(&report));
    for (run, why) in &header.excluded {
        println!("  excluded run {run}: {why}");
    }
    println!(
        "report: {}, {}, plots in {}",
        json_path.display(),
        out.join("report.md").display(),
        plot_dir.display()
    );
    if let Some(d) = digests {
        println!(
            "data set sha256 {} ({} files), report.json sha256 {} (in {})",
            d.data_sha256,
            d.data_files,
            d.report_sha256,
            worker::analyze::DIGESTS
        );
    }
    Ok(())
}

#[derive(Args, Debug)]
pub(crate) struct AnalyzeArgs {
    /// A results directory (a campaign directory, or any tree of RUN_ID/pINDEX/
    /// directories).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Read run rows from this CSV instead (columns run_id,cell,mode,block,throughput_rps,
    /// cpu_per_request_us,client_cores_used,client_cores_available,server_cpu_cores).
    #[arg(long)]
    runs: Option<PathBuf>,
    /// Write the JSON report here (default DIR/report.json).
    #[arg(long)]
    json: Option<PathBuf>,
    /// The campaign file giving baseline, margin, alpha and the primary family (default:
    /// DIR/campaign.yaml when present).
    #[arg(long)]
    spec: Option<PathBuf>,
    /// Baseline mode (overrides the spec).
    #[arg(long)]
    baseline: Option<String>,
    /// Equivalence margin (overrides the spec; default 0.05).
    #[arg(long)]
    margin: Option<f64>,
    /// Significance level (overrides the spec; default 0.05).
    #[arg(long)]
    alpha: Option<f64>,
    /// Primary cells, comma-separated (overrides the spec): every comparison in them.
    #[arg(long, value_delimiter = ',')]
    primary: Option<Vec<String>>,
    /// Bootstrap seed when no spec gives one.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub(crate) fn analyze_cmd(a: AnalyzeArgs) -> Result<()> {
    let spec_path = a
        .spec
        .clone()
        .or_else(|| Some(a.dir.join("campaign.yaml")).filter(|p| p.is_file()));
    let manifest = spec_path.as_deref().map(Manifest::read).transpose()?;
    let mut cfg = match &manifest {
        Some(m) => Config::from_spec(&m.spec),
        None => {
            let Some(b) = &a.baseline else {
                bail!(
                    "no campaign file: pass --spec FILE, or --baseline MODE (with --margin, --alpha, --primary as needed)"
                );
            };
            Config {
                baseline: b.clone(),
                control: None,
                analysis: campaign::spec::Analysis::default(),
                seed: a.seed,
                arms: Vec::new(),
                comparisons: Vec::new(),
                arm_details: Vec::new(),
                analysis_time_settings: vec![
                    "no campaign file: the settings come from the command line and nothing was pre-registered, so every comparison is exploratory in the study's sense".into(),
                ],
                baselines: None,
                implementations: None,
            }
        }
    };
    // With a campaign file, every flag that changes its analysis is a deviation.
    let pre = manifest.is_some();
    let mut given = Vec::new();
    if let Some(b) = &a.baseline {
        if pre && *b != cfg.baseline {
            given.push(format!(
                "--baseline {b} replaces the pre-registered {}",
                cfg.baseline
            ));
        }
        cfg.baseline.clone_from(b);
    }
    if let Some(x) = a.margin {
        if pre && x != cfg.analysis.margin {
            given.push(format!(
                "--margin {x} replaces the pre-registered {}",
                cfg.analysis.margin
            ));
        }
        cfg.analysis.margin = x;
    }
    if let Some(x) = a.alpha {
        if pre && x != cfg.analysis.alpha {
            given.push(format!(
                "--alpha {x} replaces the pre-registered {}",
                cfg.analysis.alpha
            ));
        }
        cfg.analysis.alpha = x;
    }
    if let Some(p) = &a.primary {
        let new: Vec<campaign::spec::PrimarySpec> = p
            .iter()
            .map(|c| campaign::spec::PrimarySpec::cell(c))
            .collect();
        if pre && new != cfg.analysis.primary {
            given.push(format!(
                "--primary {} replaces the pre-registered primary family",
                p.join(",")
            ));
        }
        cfg.analysis.primary = new;
    }
    cfg.analysis_time_settings.extend(given);
    for (name, v) in [
        ("--margin", cfg.analysis.margin),
        ("--alpha", cfg.analysis.alpha),
    ] {
        if !(v > 0.0 && v < 0.5) {
            bail!("{name} {v} must lie strictly between 0 and 0.5");
        }
    }
    let header = Header {
        campaign: manifest.as_ref().map(|m| m.metadata.name.clone()),
        prereg_hash: manifest.as_ref().map(|m| design::prereg_hash(&m.spec)),
        ..Header::default()
    };
    match &a.runs {
        Some(csv) => {
            let text = std::fs::read_to_string(csv)
                .with_context(|| format!("cannot read {}", csv.display()))?;
            let rows = analysis::rows_from_csv(&text, &csv.display().to_string())?;
            let out = a.json.as_deref().and_then(Path::parent).map_or_else(
                || PathBuf::from("."),
                |p| {
                    if p.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        p.to_path_buf()
                    }
                },
            );
            write_report(&out, &rows, &[], &cfg, header, a.json.as_deref(), None)
        }
        None => {
            cfg.baselines = crate::baselines::read(&a.dir);
            let data = if a.dir.join("runs").is_dir() {
                a.dir.join("runs")
            } else {
                a.dir.clone()
            };
            let plan = manifest.as_ref().map(design::plan);
            analyze_to(
                &a.dir,
                &data,
                &cfg,
                header,
                a.json.as_deref(),
                plan.as_ref(),
            )
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct RunSpecArgs {}

/// `pqbench run-spec` (hidden): one process of one run, the spec on stdin, carried out as
/// `pqbench-worker` carries it out ([`worker::process::carry_out`]); exit 0 valid, 1
/// invalid, 2 not carried out.
pub(crate) fn run_spec_cmd(_: RunSpecArgs) -> Result<std::process::ExitCode> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .context("reading the run spec")?;
    let spec = RunSpec::parse(&text, "stdin")?;
    Ok(worker::process::carry_out(
        &spec,
        &worker::engine::RunOptions::default(),
        worker::process::Report::Quiet,
    )
    .into())
}
