//! The run specs of a campaign plan: what one planned run is, for each of its processes,
//! once the campaign's environment (endpoint, credentials, keys, output) is known. Shared
//! by `pqbench run` and the operator.

use campaign::design::{Arrival, PlannedRun};
use campaign::placement::{Placement, confine, format_cpu_list};
use campaign::{Manifest, Plan};

use crate::runspec::{
    Cell, Credentials, KeyRef, KmsTarget, Loop, Output, Processes, RunSpec, S3Target, Session,
    Telemetry,
};
use crate::{Error, Result};

/// Where the runs of a campaign take place.
#[derive(Clone, Debug, PartialEq)]
pub struct Environment {
    /// The S3 endpoint under test, its region, bucket and credentials.
    pub s3: S3Target,
    /// The recipient keys: a directory of `<key-type>.key` files.
    pub keys: KeyRef,
    /// Where run files go.
    pub output: Output,
    /// Telemetry sources.
    pub telemetry: Telemetry,
    /// Request traces (OTLP).
    pub traces: Option<crate::trace::TraceSpec>,
    /// This machine's CPU placement, when the executor pins processes itself (`pqbench
    /// run`); absent on Kubernetes, where the pods' CPU requests place them.
    pub cpus: Option<LocalCpus>,
    /// The key services of the remote arms, by added round trip (`arms[].kms.rtt`): one
    /// embedded service per distinct value.
    pub kms: Vec<(crate::units::Dur, KmsTarget)>,
    /// The credentials of the key services given by endpoint (`arms[].kms.endpoint`);
    /// `None`: the executor has none, and a campaign with such an arm is refused.
    pub kms_external: Option<ExternalKmsCredentials>,
}

/// Where a run of an arm with `kms.endpoint` finds the service's credentials.
#[derive(Clone, Debug, PartialEq)]
pub enum ExternalKmsCredentials {
    /// One set for every such service (`pqbench run --kms-credentials FILE`).
    All(Credentials),
    /// Each arm's `kms.credentialsSecret`, mounted at `<dir>/<secret name>` (the operator's
    /// worker pods).
    MountedUnder(std::path::PathBuf),
}

impl ExternalKmsCredentials {
    /// The credentials of `kms`'s service, or why there are none.
    pub fn of(&self, kms: &campaign::spec::KmsSpec) -> std::result::Result<Credentials, String> {
        match self {
            ExternalKmsCredentials::All(c) => Ok(c.clone()),
            ExternalKmsCredentials::MountedUnder(dir) => kms
                .credentials_secret
                .as_ref()
                .map(|n| Credentials::Mounted(dir.join(n)))
                .ok_or_else(|| {
                    "kms.credentialsSecret: a key service given by endpoint needs the Secret \
                     of its credentials on a cluster"
                        .to_owned()
                }),
        }
    }
}

/// The CPUs of one machine and where the server and the clients go on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalCpus {
    /// The CPUs the executor may use.
    pub allowed: Vec<u32>,
    /// The server's and the clients' sets ([`campaign::placement::place`]).
    pub placement: Placement,
}

/// One run spec per process of `run`, without `startAt` (the executor sets it once every
/// process is ready).
pub fn run_specs(
    m: &Manifest,
    plan: &Plan,
    run: &PlannedRun,
    env: &Environment,
) -> Result<Vec<RunSpec>> {
    let spec = &m.spec;
    let cell = plan.cell(&run.cell).ok_or_else(|| Error::Plan {
        run_id: run.run_id.clone(),
        detail: format!("unknown cell {}", run.cell),
    })?;
    let arm = plan.arm(&run.arm).ok_or_else(|| Error::Plan {
        run_id: run.run_id.clone(),
        detail: format!("unknown arm {}", run.arm),
    })?;
    let pause_possible =
        env.telemetry.node_exporter.is_some() || env.telemetry.local_server_pid.is_some();
    let pause = (spec.pause.enabled && pause_possible).then(|| spec.pause.rule());
    let count = spec.clients.processes;
    // Locally every process is given its CPUs explicitly (unplaced clients: every CPU the
    // executor may use), so none inherits the executor's own placement.
    let cpus = match &env.cpus {
        Some(c) => Some(format_cpu_list(
            &confine(&c.placement, &c.allowed, cell.client_cores)
                .map_err(|detail| Error::Plan {
                    run_id: run.run_id.clone(),
                    detail: format!("cell {}: {detail}", cell.id),
                })?
                .unwrap_or_else(|| c.allowed.clone()),
        )),
        None => None,
    };
    let server_cpus = env
        .cpus
        .as_ref()
        .and_then(|c| c.placement.server.as_deref())
        .map(format_cpu_list);
    // Interleaved: each arm keeps its warm-up and window as its own time, the block's
    // window is as many times longer as the block has runs.
    let turns = spec.interleave.map(|i| crate::turns::Turns {
        slice: i.slice,
        of: u32::try_from(plan.block_runs(run.block).count()).unwrap_or(u32::MAX),
        turn: run.position,
    });
    let stretch = |d: crate::units::Dur| crate::units::Dur(turns.map_or(d.0, |t| d.0 * t.of));
    let kms = arm
        .kms
        .as_ref()
        .map(|k| kms_target(k, env))
        .transpose()
        .map_err(|detail| Error::Plan {
            run_id: run.run_id.clone(),
            detail: format!("arm {}: {detail}", arm.label),
        })?;
    // The recipient key of an arm whose key is in a service given by endpoint is that
    // service's (`GetPublicKey`), not the campaign's.
    let own_key = arm.mode != envelope::Mode::Plaintext
        && arm
            .kms
            .as_ref()
            .is_none_or(campaign::spec::KmsSpec::embedded);
    let mut out = Vec::new();
    for index in 0..count {
        let s = RunSpec {
            run_id: run.run_id.clone(),
            campaign: plan.campaign.clone(),
            cell: Cell {
                mode: arm.mode,
                backend: arm.backend,
                operation: cell.operation,
                object_size: cell.object_size,
                concurrency: cell.concurrency,
                arrival: match cell.arrival {
                    Arrival::Closed => Loop::Closed,
                    Arrival::Open { rate } => Loop::Open { rate },
                },
                format: arm.format,
                require_pq: arm.require_pq,
                kms: arm.kms.clone(),
            },
            block: run.block,
            position: run.position,
            repetition: run.repetition,
            cell_id: Some(cell.id.clone()),
            arm: Some(arm.label.clone()),
            seed: run.seed,
            warmup: stretch(spec.warmup),
            measured: stretch(spec.measured),
            drain: spec.drain,
            s3: crate::runspec::S3Target {
                client: arm.client,
                ..env.s3.clone()
            },
            kms: kms.clone(),
            recipient_key: own_key.then(|| env.keys.clone()),
            fixtures: spec.fixtures,
            session: arm.session.map(|(max_objects, max_age)| Session {
                max_objects,
                max_age,
            }),
            start_at: None,
            start_gate: None,
            processes: Processes { count, index },
            output: env.output.clone(),
            telemetry: env.telemetry.clone(),
            traces: env.traces.clone(),
            pause,
            allowed_failure_fraction: spec.allowed_failure_fraction,
            cpus: cpus.clone(),
            client_cores: cell.client_cores,
            server_cpus: server_cpus.clone(),
            turns,
        };
        s.validate()?;
        out.push(s);
    }
    Ok(out)
}

/// The key service of a remote arm: the embedded one of its round trip, or the one it
/// names by endpoint with the executor's credentials for it.
fn kms_target(
    k: &campaign::spec::KmsSpec,
    env: &Environment,
) -> std::result::Result<KmsTarget, String> {
    if let Some(endpoint) = &k.endpoint {
        let credentials = env
            .kms_external
            .as_ref()
            .ok_or_else(|| {
                format!(
                    "kms.endpoint {endpoint}: no credentials for a key service given by \
                     endpoint (pqbench run: --kms-credentials FILE)"
                )
            })?
            .of(k)?;
        return Ok(KmsTarget {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            region: k.region().to_owned(),
            credentials,
        });
    }
    env.kms
        .iter()
        .find(|(rtt, _)| *rtt == k.rtt)
        .map(|(_, t)| t.clone())
        .ok_or_else(|| {
            format!(
                "remote with an added round trip of {}, and no key service of that round trip \
                 was started",
                k.rtt
            )
        })
}
