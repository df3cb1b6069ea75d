//! The executor around [`crate::step::decide`] (controller-rs shape): observe the campaign's
//! children and results bucket, decide, write the status (server-side apply on `/status`),
//! then act; a finalizer deletes the children when the campaign is deleted.
//!
//! The status is written before the actions, so an action cut short by a crash is decided
//! again on the next pass; every action is idempotent (children created if absent, deleted
//! if present, a start instant written once per attempt). A child is created with a plain
//! create and deleted with its UID as precondition, and only when it is the campaign's
//! ([`crate::ownership`]): an object of someone else at a child's name fails the campaign.
//! Secret data is generated here and goes only into the API server: never into a log,
//! an event or the status.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::{Action as Requeue, Controller};
use kube::runtime::events::{Event as KEvent, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as Finalizer, finalizer};
use kube::runtime::watcher;
use kube::{Client, Resource as _, ResourceExt as _};
use s3::S3Settings;
use serde_json::json;
use tracing::{info, instrument, warn};

use crate::api::{BenchmarkCampaign, Phase};
use crate::deploy;
use crate::keyservice;
use crate::metrics::{ErrorLabel, Metrics, Outcome, PhaseLabel, TraceLabel};
use crate::ownership::{self, Holder};
use crate::resources::{self, ACCESS_KEY, CAMPAIGN_LABEL, Owner, SECRET_KEY};
use crate::results::{self, ResultsStore};
use crate::step::{self, Action, Decision, Facts, JobState};
use crate::{Error, Result};

/// The finalizer the operator puts on every campaign.
pub const FINALIZER: &str = "pqbench.io/cleanup";
/// The server-side-apply field manager.
pub const MANAGER: &str = "pqbench-operator";

/// The operator's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Worker image when a campaign names none.
    pub worker_image: String,
    /// Image of the node-exporter sidecar beside MinIO.
    pub node_exporter_image: String,
    /// Image of the testbed probes (the pre-flight probe Job, the disk probe and iperf3
    /// server beside MinIO).
    pub probe_image: String,
    /// Reporter instance for events (the pod name).
    pub instance: String,
    /// What campaigns may name (images, Secrets, ServiceAccounts, signed endpoints).
    pub policy: crate::policy::Policy,
    /// The operator's own namespace (its pods reach MinIO from there; any namespace when
    /// unknown).
    pub operator_namespace: Option<String>,
    /// Addresses cut out of the whole-internet egress of a campaign's pods (CIDRs; the
    /// instance metadata addresses by default).
    pub egress_except: Vec<String>,
    /// Seconds after a campaign's end its recipient keys Secret (and, with results
    /// elsewhere, its MinIO and credentials) are deleted when the campaign does not say
    /// (`secretsTtlSecondsAfterFinished`); 0 keeps them.
    pub secrets_ttl_seconds: u32,
}

/// Shared state of the reconcilers.
#[derive(Clone)]
pub struct Context {
    /// The API client.
    pub client: Client,
    /// Event recorder.
    pub recorder: Recorder,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Settings.
    pub config: Config,
}

impl Context {
    /// A context for a client and settings.
    pub fn new(client: Client, config: Config, metrics: Arc<Metrics>) -> Self {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: MANAGER.to_owned(),
                instance: Some(config.instance.clone()),
            },
        );
        Self {
            client,
            recorder,
            metrics,
            config,
        }
    }
}

/// Reconciles one campaign (wrapped in the finalizer).
#[instrument(skip(c, ctx), fields(campaign = %c.name_any(), namespace = c.namespace().unwrap_or_default()))]
pub async fn reconcile(c: Arc<BenchmarkCampaign>, ctx: Arc<Context>) -> Result<Requeue> {
    let started = Instant::now();
    let ns = c.namespace().ok_or(Error::Invalid {
        what: "campaign without a namespace",
    })?;
    let api: Api<BenchmarkCampaign> = Api::namespaced(ctx.client.clone(), &ns);
    let out = finalizer(&api, FINALIZER, c, |event| async {
        match event {
            Finalizer::Apply(c) => apply(&c, &ctx).await,
            Finalizer::Cleanup(c) => cleanup(&c, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)));
    ctx.metrics.reconcile_duration.observe(
        started.elapsed().as_secs_f64(),
        crate::telemetry::trace_id().map(|trace_id| TraceLabel { trace_id }),
        None,
    );
    ctx.metrics.reconciliations.inc();
    if let Err(e) = &out {
        ctx.metrics
            .failures
            .get_or_create(&ErrorLabel { error: e.kind() })
            .inc();
    }
    out
}

/// After a failed pass: log it (the error names what failed) and look again in 15 s.
pub fn error_policy(c: Arc<BenchmarkCampaign>, e: &Error, _ctx: Arc<Context>) -> Requeue {
    warn!(campaign = %c.name_any(), error = %e, "reconcile failed; retrying in 15s");
    Requeue::requeue(Duration::from_secs(15))
}

fn settings(endpoint: &str, region: &str, secret: &Secret, name: &str) -> Result<S3Settings> {
    let get = |k: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(k))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .ok_or_else(|| Error::Secret {
                name: name.to_owned(),
                detail: format!("has no {k}"),
            })
    };
    let mut s = S3Settings::new(endpoint, &get(ACCESS_KEY)?, &get(SECRET_KEY)?);
    region.clone_into(&mut s.region);
    Ok(s)
}

/// The campaign's results store, from its credentials Secret.
async fn results_store(
    ctx: &Context,
    owner: &Owner,
    c: &BenchmarkCampaign,
) -> Result<ResultsStore> {
    let spec = &c.spec.campaign;
    let loc = deploy::results_location(owner, spec);
    let region = deploy::results_region(spec);
    let settings = match deploy::results_credentials_secret(owner, spec) {
        Some(name) => {
            let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &owner.namespace);
            let secret = secrets.get_opt(&name).await?.ok_or_else(|| Error::Secret {
                name: name.clone(),
                detail: "(the results store's credentials) does not exist".into(),
            })?;
            settings(&loc.endpoint, &region, &secret, &name)?
        }
        // The operator's own identity (IRSA on its ServiceAccount).
        None => {
            let mut s = S3Settings::with_identity(&loc.endpoint);
            s.region = region;
            s
        }
    };
    ResultsStore::new(&settings, &loc.bucket, &loc.prefix)
}

/// Whether the servers of the campaign answer: its MinIO (unless external) and, with
/// remote arms, its key service; and why not, when not.
async fn observe_server(
    ctx: &Context,
    owner: &Owner,
    c: &BenchmarkCampaign,
) -> Result<(bool, Option<String>)> {
    let (minio, minio_detail) = observe_minio(ctx, owner, c).await?;
    if !deploy::has_remote_arms(&c.spec.campaign) {
        return Ok((minio, minio_detail));
    }
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let (kms, kms_detail) = match find(&deployments, &owner.kms(), owner).await? {
        Found::Absent => (false, format!("Deployment {} not created yet", owner.kms())),
        Found::Foreign(what) => (false, what),
        Found::Ours(d) => {
            let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0);
            (
                ready >= 1,
                format!(
                    "Deployment {} (key service): {ready}/1 pods ready",
                    owner.kms()
                ),
            )
        }
    };
    let detail = match minio_detail {
        Some(m) => format!("{m}; {kms_detail}"),
        None => kms_detail,
    };
    Ok((minio && kms, Some(detail)))
}

async fn observe_minio(
    ctx: &Context,
    owner: &Owner,
    c: &BenchmarkCampaign,
) -> Result<(bool, Option<String>)> {
    if c.spec.server.external.is_some() {
        return Ok((true, None));
    }
    let sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    Ok(match find(&sets, &owner.minio(), owner).await? {
        Found::Absent => (
            false,
            Some(format!("StatefulSet {} not created yet", owner.minio())),
        ),
        Found::Foreign(what) => (false, Some(what)),
        Found::Ours(s) => {
            let ready = s.status.and_then(|s| s.ready_replicas).unwrap_or(0);
            (
                ready >= 1,
                Some(format!(
                    "StatefulSet {}: {ready}/1 pods ready",
                    owner.minio()
                )),
            )
        }
    })
}

async fn minio_settings(ctx: &Context, owner: &Owner) -> Result<Option<S3Settings>> {
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let name = owner.credentials_secret();
    match find(&secrets, &name, owner).await? {
        Found::Ours(s) => settings(&owner.minio_endpoint(), "us-east-1", &s, &name).map(Some),
        Found::Absent | Found::Foreign(_) => Ok(None),
    }
}

/// Whether MinIO's bucket under test exists (false also when MinIO cannot be asked).
async fn minio_bucket_exists(ctx: &Context, owner: &Owner) -> bool {
    let Ok(Some(st)) = minio_settings(ctx, owner).await else {
        return false;
    };
    let Ok(client) = st.client() else {
        return false;
    };
    client
        .head_bucket()
        .bucket(deploy::MINIO_BUCKET)
        .send()
        .await
        .is_ok()
}

/// The state of the campaign's Job `name`; a foreign Job at that name is added to
/// `foreign` and not looked at.
async fn observe_job(
    ctx: &Context,
    owner: &Owner,
    name: &str,
    foreign: &mut Vec<String>,
) -> Result<JobState> {
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let job = match find(&jobs, name, owner).await? {
        Found::Absent => return Ok(JobState::Absent),
        Found::Foreign(what) => {
            foreign.push(what);
            return Ok(JobState::NotLooked);
        }
        Found::Ours(job) => job,
    };
    let conds = job.status.and_then(|s| s.conditions).unwrap_or_default();
    let is = |t: &str| conds.iter().find(|c| c.type_ == t && c.status == "True");
    if let Some(f) = is("Failed") {
        return Ok(JobState::Failed(
            f.message
                .clone()
                .or_else(|| f.reason.clone())
                .unwrap_or_else(|| "failed".into()),
        ));
    }
    if is("Complete").is_some() {
        return Ok(JobState::Succeeded);
    }
    Ok(JobState::Active)
}

fn time_of(t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> SystemTime {
    t.map_or_else(SystemTime::now, |t| SystemTime::from(t.0))
}

/// `namespace/name`: a campaign in the phase gauge.
fn campaign_key(c: &BenchmarkCampaign) -> String {
    format!("{}/{}", c.namespace().unwrap_or_default(), c.name_any())
}

async fn apply(c: &BenchmarkCampaign, ctx: &Context) -> Result<Requeue> {
    let owner = Owner::of(c)?;
    let m = deploy::manifest(c);
    let plan = campaign::design::plan(&m);
    let mut invalid = m.validate().err().or_else(|| deploy::unsupported(&m.spec));
    let status = c.status.clone().unwrap_or_default();
    // The interop matrix, at admission only (the one phase that reads it).
    let interop = if status.phase == Phase::Pending && invalid.is_none() {
        match campaign::design::interop(&m.spec) {
            Ok(matrix) => Some(matrix.words()),
            Err(why) => {
                invalid = Some(why);
                None
            }
        }
    } else {
        None
    };
    let results = deploy::results_location(&owner, &m.spec);
    let phase = status.phase;
    ctx.metrics.campaign_phase(&campaign_key(c), Some(phase));
    let (server_ready, server_detail) = if matches!(phase, Phase::Provisioning | Phase::Running) {
        observe_server(ctx, &owner, c).await?
    } else {
        (false, None)
    };
    // The tenant-input policy, before anything of the campaign is read or created.
    let over = matches!(phase, Phase::Succeeded | Phase::Failed);
    let refused = if over {
        Vec::new()
    } else {
        refusals(ctx, &owner, &m.spec).await?
    };
    // The results store (and the Secret it is reached with) only for a campaign that goes
    // on and that the policy lets through.
    let store = if over {
        Err(Error::ResultsUnavailable(
            "not read once the campaign is over".into(),
        ))
    } else if refused.is_empty() {
        results_store(ctx, &owner, c).await
    } else {
        Err(Error::Refused(refused.join("; ")))
    };
    // A read past the results module's bounds: the campaign fails (not retried).
    let mut exceeded = None;
    let mut note = |e: Error| {
        if results::exceeded(&e) {
            exceeded = Some(e.to_string());
        }
        e.to_string()
    };
    let bucket = if server_ready && matches!(phase, Phase::Provisioning | Phase::Running) {
        match &store {
            Ok(s) => s.observe(m.spec.clients.processes).await.map_err(&mut note),
            Err(e) => Err(e.to_string()),
        }
    } else {
        Err("not looked at in this phase".into())
    };
    let server_bucket = if c.spec.server.external.is_some() || !server_ready {
        c.spec.server.external.is_some()
    } else {
        minio_bucket_exists(ctx, &owner).await
    };
    let mut foreign = match phase {
        Phase::Pending | Phase::Provisioning => foreign_children(ctx, &owner, c).await?,
        _ => Vec::new(),
    };
    let job = match (&status.current, phase) {
        (Some(cur), Phase::Running) => observe_job(ctx, &owner, &cur.job, &mut foreign).await?,
        (_, Phase::Analyzing) => {
            let name = step::analysis_job_name(&plan.campaign);
            observe_job(ctx, &owner, &name, &mut foreign).await?
        }
        // The pre-flight probe, once the server is there to be probed.
        (_, Phase::Provisioning) if m.spec.testbed.baselines && server_ready => {
            let name = step::probe_job_name(&plan.campaign);
            observe_job(ctx, &owner, &name, &mut foreign).await?
        }
        _ => JobState::NotLooked,
    };
    let mut mate_jobs = std::collections::BTreeMap::new();
    if let (Some(cur), Phase::Running) = (&status.current, phase) {
        for m in &cur.mates {
            let state = observe_job(ctx, &owner, &m.job, &mut foreign).await?;
            mate_jobs.insert(m.job.clone(), state);
        }
    }
    // Whether the current attempt's complete runs are valid (their summaries, bounded).
    let bucket = match (bucket, &status.current, &store) {
        (Ok(mut view), Some(cur), Ok(s)) => {
            let runs = std::iter::once(&cur.run_id).chain(cur.mates.iter().map(|m| &m.run_id));
            let mut failed = None;
            for run_id in runs.filter(|r| view.completed.contains(*r)) {
                match s.invalid(run_id, m.spec.clients.processes).await {
                    Ok(Some(why)) => {
                        view.invalid.insert(run_id.clone(), why);
                    }
                    Ok(None) => {}
                    Err(e) => failed = Some(note(e)),
                }
            }
            failed.map_or(Ok(view), Err)
        }
        (b, _, _) => b,
    };
    let images = if matches!(
        phase,
        Phase::Provisioning | Phase::Running | Phase::Analyzing
    ) {
        pod_images(ctx, &owner).await
    } else {
        Vec::new()
    };
    let outcome = match (phase, &store) {
        (Phase::Analyzing, Ok(s)) => s.outcome().await.map_err(&mut note).transpose(),
        (Phase::Analyzing, Err(e)) => Some(Err(e.to_string())),
        _ => None,
    };
    // The probe's baselines, for its event, once its Job succeeded.
    let baselines = match (phase, &job, &store) {
        (Phase::Provisioning, JobState::Succeeded, Ok(s)) => Some(match s.baselines().await {
            Ok(Some(b)) => Ok(run::preflight::words(&b)),
            Ok(None) => Err(format!("it left no {}", run::preflight::BASELINES)),
            Err(e) => Err(note(e)),
        }),
        (Phase::Provisioning, JobState::Succeeded, Err(e)) => Some(Err(e.to_string())),
        _ => None,
    };
    let facts = Facts {
        now: SystemTime::now(),
        created: time_of(c.metadata.creation_timestamp.as_ref()),
        generation: c.metadata.generation,
        spec: &m.spec,
        plan: &plan,
        status: &status,
        results: &results,
        server_ready,
        server_detail,
        server_bucket,
        bucket,
        job,
        mate_jobs,
        outcome,
        baselines,
        invalid,
        interop,
        foreign,
        exceeded,
        refused,
        images,
        secrets_ttl: m
            .spec
            .secrets_ttl_seconds_after_finished
            .unwrap_or(ctx.config.secrets_ttl_seconds),
    };
    let d = step::decide(&facts);
    write_status(ctx, c, &status, &d).await?;
    for a in d.actions.clone() {
        match act(ctx, c, &owner, &m, &plan, &store, a).await {
            Ok(()) => {}
            // Moving an attempt's files met an object past the bounds: decided again with
            // that fact, which fails the campaign.
            Err(e) if results::exceeded(&e) => {
                let facts = Facts {
                    exceeded: Some(e.to_string()),
                    ..facts
                };
                let failed = step::decide(&facts);
                write_status(ctx, c, &d.status, &failed).await?;
                for a in failed.actions {
                    act(ctx, c, &owner, &m, &plan, &store, a).await?;
                }
                return Ok(Requeue::await_change());
            }
            Err(e) => return Err(e),
        }
    }
    Ok(d.requeue
        .map_or_else(Requeue::await_change, Requeue::requeue))
}

async fn write_status(
    ctx: &Context,
    c: &BenchmarkCampaign,
    before: &crate::api::CampaignStatus,
    d: &Decision,
) -> Result<()> {
    if *before == d.status && c.status.is_some() {
        return Ok(());
    }
    ctx.metrics
        .campaign_phase(&campaign_key(c), Some(d.status.phase));
    if before.phase != d.status.phase {
        ctx.metrics
            .transitions
            .get_or_create(&PhaseLabel {
                phase: d.status.phase.as_str(),
            })
            .inc();
        info!(
            from = before.phase.as_str(),
            to = d.status.phase.as_str(),
            "phase"
        );
    }
    let api: Api<BenchmarkCampaign> =
        Api::namespaced(ctx.client.clone(), &c.namespace().unwrap_or_default());
    let patch = json!({
        "apiVersion": "pqbench.io/v1alpha1",
        "kind": "BenchmarkCampaign",
        "status": d.status,
    });
    api.patch_status(
        &c.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await?;
    Ok(())
}

fn random_token(bytes: usize) -> String {
    let mut b = zeroize::Zeroizing::new(vec![0u8; bytes]);
    rand_core::Rng::fill_bytes(&mut envelope::os_rng(), &mut b);
    hex::encode(&*b)
}

#[allow(
    clippy::too_many_arguments,
    reason = "the executor's whole context, passed once"
)]
async fn act(
    ctx: &Context,
    c: &BenchmarkCampaign,
    owner: &Owner,
    m: &campaign::Manifest,
    plan: &campaign::Plan,
    store: &Result<ResultsStore>,
    a: Action,
) -> Result<()> {
    let ns = &owner.namespace;
    let client = ctx.client.clone();
    let store = || {
        store
            .as_ref()
            .map_err(|e| Error::ResultsUnavailable(e.to_string()))
    };
    match a {
        Action::Provision => {
            let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
            if c.spec.server.external.is_none()
                && absent(&secrets, &owner.credentials_secret(), owner).await?
            {
                let s = resources::credentials_secret(owner, &random_token(10), &random_token(20));
                create_child(&secrets, &s, owner).await?;
            }
            if absent(&secrets, &owner.keys_secret(), owner).await? {
                let mut keys = Vec::new();
                for kt in deploy::key_types(plan) {
                    let keys_err = |source| Error::Keys {
                        key_type: kt,
                        source,
                    };
                    let sk = envelope::SecretKey::generate(kt, &mut envelope::os_rng())
                        .map_err(keys_err)?;
                    let json = sk.to_file_json().map_err(keys_err)?;
                    keys.push((kt, json));
                }
                create_child(&secrets, &resources::keys_secret(owner, &keys), owner).await?;
            }
            let nps: Api<NetworkPolicy> = Api::namespaced(client.clone(), ns);
            let fence = resources::workers_network_policy(
                owner,
                &deploy::egress(&c.spec.campaign)?,
                &ctx.config.egress_except,
            );
            create_child(&nps, &fence, owner).await?;
            if let Some((minio, placement)) = deploy::server_pods(c)? {
                let svc: Api<Service> = Api::namespaced(client.clone(), ns);
                create_child(&svc, &resources::minio_service(owner), owner).await?;
                let fence = resources::minio_network_policy(
                    owner,
                    ctx.config.operator_namespace.as_deref(),
                );
                create_child(&nps, &fence, owner).await?;
                let sets: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
                let set = resources::minio_statefulset(
                    owner,
                    &minio,
                    placement,
                    &ctx.config.node_exporter_image,
                    deploy::server_probe(m, plan, &ctx.config.probe_image),
                );
                create_child(&sets, &set, owner).await?;
            }
            if let Some(ks) = deploy::key_service(plan)? {
                provision_key_service(ctx, owner, c, plan, &ks).await?;
            }
        }
        Action::CreateBuckets => {
            store()?.create_bucket().await?;
            if c.spec.server.external.is_none()
                && let Some(st) = minio_settings(ctx, owner).await?
            {
                s3::Store::new(&st, deploy::MINIO_BUCKET, &plan.campaign)?
                    .create_bucket()
                    .await?;
            }
        }
        Action::StartJob {
            index,
            attempt,
            name,
            turns_with,
        } => {
            let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
            if absent(&jobs, &name, owner).await? {
                let spec = deploy::run_spec(m, plan, index, owner)?;
                // What a cut-off attempt left is kept aside, never deleted.
                let moved = store()?.set_aside(&spec.run_id).await?;
                if moved > 0 {
                    info!(run = %spec.run_id, files = moved, "set an earlier attempt's files aside");
                }
                let key_types = deploy::key_types(plan);
                let deadline = step::run_deadline(&c.spec.campaign);
                let (pods, placement) =
                    deploy::worker_pods(&ctx.config.worker_image, c, owner, &key_types, deadline)?;
                let job = resources::worker_job(
                    owner,
                    &name,
                    &spec,
                    attempt,
                    index,
                    &pods,
                    placement.beside(turns_with.as_deref()),
                )?;
                create_child(&jobs, &job, owner).await?;
            }
        }
        Action::DeleteJob { name } => {
            let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
            delete_ours(&jobs, &name, owner).await?;
        }
        Action::OpenGate { run_id, at } => store()?.open_gate(&run_id, &at).await?,
        Action::KeepAttempt { run_id, attempt } => {
            let moved = store()?.keep_attempt(&run_id, attempt).await?;
            info!(run = %run_id, attempt, files = moved, "kept an invalid attempt's files");
        }
        Action::SetAside { run_id } => {
            let moved = store()?.set_aside(&run_id).await?;
            info!(run = %run_id, files = moved, "set a failed attempt's files aside");
        }
        Action::StartAnalysis => {
            let name = step::analysis_job_name(&plan.campaign);
            let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
            if absent(&jobs, &name, owner).await? {
                store()?.clear_outcome().await?;
                let mut spec = deploy::analysis_spec(m, owner);
                spec.given_up = c
                    .status
                    .iter()
                    .flat_map(|s| &s.failed_runs)
                    .map(|r| run::schedule::GivenUp {
                        run_id: r.run_id.clone(),
                        attempts: r.attempts,
                        reason: r.reason.clone(),
                    })
                    .collect();
                let deadline = step::analysis_deadline(&c.spec.campaign);
                let (pods, placement) =
                    deploy::worker_pods(&ctx.config.worker_image, c, owner, &[], deadline)?;
                let job = resources::analysis_job(owner, &name, &spec, &pods, placement)?;
                create_child(&jobs, &job, owner).await?;
            }
        }
        Action::StartProbe => {
            let name = step::probe_job_name(&plan.campaign);
            let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
            if absent(&jobs, &name, owner).await? {
                let disk = if c.spec.server.external.is_some() {
                    run::preflight::Probe::NotMeasured("an external server".into())
                } else {
                    disk_probe(ctx, owner).await
                };
                let spec = deploy::probe_spec(c, m, plan, owner, disk);
                let deadline = step::provisioning_deadline(&c.spec.campaign);
                let (pods, placement) =
                    deploy::probe_pods(&ctx.config.probe_image, c, owner, deadline)?;
                let job = resources::probe_job(owner, &name, &spec, &pods, placement)?;
                create_child(&jobs, &job, owner).await?;
            }
        }
        Action::StopJobs => stop_jobs(ctx, owner).await?,
        Action::CleanUp => delete_children(ctx, owner, c).await?,
        Action::DeleteSecrets { server } => delete_secrets(ctx, owner, c, server).await?,
        Action::Event(e) => {
            if let Some(o) = e.reason.run_outcome() {
                ctx.metrics
                    .runs
                    .get_or_create(&Outcome { outcome: o })
                    .inc();
            }
            let ev = KEvent {
                type_: if e.warning {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: e.reason.as_str().to_owned(),
                note: Some(e.note.chars().take(1000).collect()),
                action: e.reason.as_str().to_owned(),
                secondary: None,
            };
            if let Err(err) = ctx.recorder.publish(&ev, &c.object_ref(&())).await {
                // An event that cannot be recorded does not stop the campaign.
                warn!(reason = e.reason.as_str(), error = %err, "cannot record an event");
            }
        }
    }
    Ok(())
}

/// The campaign's fields the tenant-input policy refuses ([`crate::policy`]): images and
/// signed endpoints from the spec, and the labels of the Secrets and ServiceAccount it
/// names, read by a metadata-only GET (their data is not read here).
async fn refusals(
    ctx: &Context,
    owner: &Owner,
    spec: &campaign::CampaignSpec,
) -> Result<Vec<String>> {
    use crate::policy;
    let own = [
        ctx.config.worker_image.as_str(),
        ctx.config.node_exporter_image.as_str(),
        campaign::cluster::DEFAULT_MINIO_IMAGE,
    ];
    let signs =
        deploy::results_use_identity(spec).then(|| deploy::results_location(owner, spec).endpoint);
    let mut out: Vec<String> = ctx
        .config
        .policy
        .check_spec(spec, &own, signs.as_deref())
        .iter()
        .map(ToString::to_string)
        .collect();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    for n in policy::secrets(spec) {
        let meta = secrets.get_metadata_opt(&n.name).await?;
        let labels = meta.map(|m| m.metadata.labels.unwrap_or_default());
        out.extend(policy::check_secret(&n, labels.as_ref()).map(|r| r.to_string()));
    }
    if let Some(n) = policy::service_account(spec) {
        let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(ctx.client.clone(), &owner.namespace);
        let meta = sas.get_metadata_opt(&n.name).await?;
        let labels = meta.map(|m| m.metadata.labels.unwrap_or_default());
        out.extend(policy::check_service_account(&n, labels.as_ref()).map(|r| r.to_string()));
    }
    Ok(out)
}

/// What is at one of the campaign's child names.
enum Found<K> {
    /// Nothing.
    Absent,
    /// The campaign's own object.
    Ours(K),
    /// Someone else's: the collision's text.
    Foreign(String),
}

/// Says whose the object at `name` is from its metadata alone (a metadata-only GET: the
/// data of someone else's Secret never reaches the operator); `Ours` carries its UID.
async fn whose<K>(api: &Api<K>, name: &str, owner: &Owner) -> Result<Found<String>>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    Ok(match api.get_metadata_opt(name).await? {
        None => Found::Absent,
        Some(o) => match ownership::holder(&o.metadata, &owner.reference.uid) {
            Holder::Ours => Found::Ours(o.metadata.uid.unwrap_or_default()),
            Holder::Foreign(whose) => {
                Found::Foreign(ownership::collision(&K::kind(&()), name, &whose))
            }
        },
    })
}

/// The object at `name` when it is the campaign's. A Secret is looked at by its metadata
/// first and read whole only when it is the campaign's.
async fn find<K>(api: &Api<K>, name: &str, owner: &Owner) -> Result<Found<K>>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if K::kind(&()) == "Secret" {
        match whose(api, name, owner).await? {
            Found::Absent => return Ok(Found::Absent),
            Found::Foreign(what) => return Ok(Found::Foreign(what)),
            Found::Ours(_) => {}
        }
    }
    Ok(match api.get_opt(name).await? {
        None => Found::Absent,
        Some(o) => match ownership::holder(o.meta(), &owner.reference.uid) {
            Holder::Ours => Found::Ours(o),
            Holder::Foreign(whose) => {
                Found::Foreign(ownership::collision(&K::kind(&()), name, &whose))
            }
        },
    })
}

/// Whether `name` is free, so the campaign's child is still to be made there: `false` when
/// it is the campaign's already, an error when it is someone else's.
async fn absent<K>(api: &Api<K>, name: &str, owner: &Owner) -> Result<bool>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match whose(api, name, owner).await? {
        Found::Absent => Ok(true),
        Found::Ours(_) => Ok(false),
        Found::Foreign(what) => Err(Error::Collision(what)),
    }
}

/// Creates a child (a plain create: never merged into an object that appeared at its name
/// meanwhile); an object already there is fine only when it is the campaign's.
async fn create_child<K>(api: &Api<K>, obj: &K, owner: &Owner) -> Result<()>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let name = obj.meta().name.clone().unwrap_or_default();
            match whose(api, &name, owner).await? {
                Found::Foreign(what) => Err(Error::Collision(what)),
                // Ours (an earlier pass made it), or gone again: decided on the next pass.
                Found::Ours(_) | Found::Absent => Ok(()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Deletes the campaign's child `name`, with the UID found as the delete's precondition
/// (an object re-created at that name meanwhile is not touched); someone else's object
/// there is left as it is.
async fn delete_ours<K>(api: &Api<K>, name: &str, owner: &Owner) -> Result<()>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let uid = match whose(api, name, owner).await? {
        Found::Absent => return Ok(()),
        Found::Foreign(what) => {
            warn!(object = %what, "not deleting an object the campaign does not own");
            return Ok(());
        }
        Found::Ours(uid) => uid,
    };
    delete_uid(api, name, uid).await
}

/// Deletes the object `name` if it is still the one with `uid` (the delete's precondition).
async fn delete_uid<K>(api: &Api<K>, name: &str, uid: String) -> Result<()>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(()),
        // Gone, or replaced by another object since it was looked at.
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The campaign's fixed child names that hold someone else's object (Pending and
/// Provisioning: before and while they are made).
async fn foreign_children(
    ctx: &Context,
    owner: &Owner,
    c: &BenchmarkCampaign,
) -> Result<Vec<String>> {
    let ns = &owner.namespace;
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    let mut found = Vec::new();
    let mut secret_names = vec![owner.keys_secret()];
    let minio = c.spec.server.external.is_none();
    if minio {
        secret_names.insert(0, owner.credentials_secret());
    }
    for name in secret_names {
        if let Found::Foreign(what) = whose(&secrets, &name, owner).await? {
            found.push(what);
        }
    }
    let nps: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), ns);
    if let Found::Foreign(what) = whose(&nps, &owner.workers_fence(), owner).await? {
        found.push(what);
    }
    if deploy::has_remote_arms(&c.spec.campaign) {
        if let Found::Foreign(what) =
            whose(&secrets, &owner.kms_credentials_secret(), owner).await?
        {
            found.push(what);
        }
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), ns);
        if let Found::Foreign(what) = whose(&deployments, &owner.kms(), owner).await? {
            found.push(what);
        }
        let svc: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
        if let Found::Foreign(what) = whose(&svc, &owner.kms(), owner).await? {
            found.push(what);
        }
        if let Found::Foreign(what) = whose(&nps, &owner.kms(), owner).await? {
            found.push(what);
        }
    }
    if minio {
        let svc: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
        if let Found::Foreign(what) = whose(&svc, &owner.minio(), owner).await? {
            found.push(what);
        }
        let sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), ns);
        if let Found::Foreign(what) = whose(&sets, &owner.minio(), owner).await? {
            found.push(what);
        }
        if let Found::Foreign(what) = whose(&nps, &owner.minio(), owner).await? {
            found.push(what);
        }
    }
    Ok(found)
}

/// The images the campaign's pods run, with the digests their kubelets resolved. A
/// listing that fails is logged and leaves the status as it is (the digests are a record,
/// not a step of the campaign).
async fn pod_images(ctx: &Context, owner: &Owner) -> Vec<crate::api::ResolvedImage> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let lp = ListParams::default().labels(&format!("{CAMPAIGN_LABEL}={}", owner.name));
    match pods.list(&lp).await {
        Ok(list) => resolved_images(&list.items),
        Err(e) => {
            warn!(error = %e, "cannot list the campaign's pods for their image digests");
            Vec::new()
        }
    }
}

/// Each container's image as its pod names it, with the `imageID` its status reports
/// (containers not started yet have none and are left out).
pub fn resolved_images(pods: &[Pod]) -> Vec<crate::api::ResolvedImage> {
    let mut out = Vec::new();
    for p in pods {
        let named = |name: &str| {
            p.spec
                .iter()
                .flat_map(|s| {
                    s.containers
                        .iter()
                        .chain(s.init_containers.iter().flatten())
                })
                .find(|c| c.name == name)
                .and_then(|c| c.image.clone())
        };
        let st = p.status.iter();
        let statuses = st.flat_map(|s| {
            s.container_statuses
                .iter()
                .flatten()
                .chain(s.init_container_statuses.iter().flatten())
        });
        for cs in statuses.filter(|cs| !cs.image_id.is_empty()) {
            let r = crate::api::ResolvedImage {
                image: named(&cs.name).unwrap_or_else(|| cs.image.clone()),
                image_id: cs.image_id.clone(),
            };
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out.sort();
    out
}

/// The disk probe MinIO's init container left as its termination message, read from the
/// pod's status (the operator lists pods, by the campaign's server labels; it may not get
/// them). Whatever it holds is read as untrusted ([`run::preflight::disk_from_message`]).
async fn disk_probe(ctx: &Context, owner: &Owner) -> run::preflight::Probe<run::preflight::Disk> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let selector = resources::labels(&owner.name, "server")
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    match pods.list(&ListParams::default().labels(&selector)).await {
        Ok(list) => run::preflight::disk_from_message(disk_probe_message(&list.items)),
        Err(e) => run::preflight::Probe::NotMeasured(format!(
            "MinIO's pod could not be listed for its disk probe: {e}"
        )),
    }
}

/// The `disk-probe` init container's termination message among `pods` (MinIO's).
pub fn disk_probe_message(pods: &[Pod]) -> Option<&str> {
    pods.iter()
        .flat_map(|p| p.status.iter())
        .flat_map(|s| s.init_container_statuses.iter().flatten())
        .filter(|cs| cs.name == resources::DISK_PROBE_CONTAINER)
        .find_map(|cs| cs.state.as_ref()?.terminated.as_ref()?.message.as_deref())
}

/// The campaign's worker, analysis and probe Jobs.
fn jobs_selector(owner: &Owner) -> ListParams {
    ListParams::default().labels(&format!(
        "{CAMPAIGN_LABEL}={},app.kubernetes.io/component in (worker, analysis, probe)",
        owner.name
    ))
}

async fn stop_jobs(ctx: &Context, owner: &Owner) -> Result<()> {
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    // The listing already says whose each Job is: no second look before the delete.
    for j in jobs.list(&jobs_selector(owner)).await? {
        match ownership::holder(&j.metadata, &owner.reference.uid) {
            Holder::Ours => delete_uid(&jobs, &j.name_any(), j.uid().unwrap_or_default()).await?,
            Holder::Foreign(whose) => {
                let what = ownership::collision("Job", &j.name_any(), &whose);
                warn!(object = %what, "not deleting an object the campaign does not own");
            }
        }
    }
    Ok(())
}

/// Deletes the recipient keys Secret with the key service of remote arms that holds them
/// (its Deployment, Service, NetworkPolicy and credentials Secret) and, with `server`,
/// MinIO (its StatefulSet, Service and NetworkPolicy) and its credentials Secret; each
/// only if it is the campaign's. The Jobs stay.
async fn delete_secrets(
    ctx: &Context,
    owner: &Owner,
    c: &BenchmarkCampaign,
    server: bool,
) -> Result<()> {
    let ns = &owner.namespace;
    if deploy::has_remote_arms(&c.spec.campaign) {
        delete_key_service(ctx, owner).await?;
    }
    if server {
        let sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), ns);
        delete_ours(&sets, &owner.minio(), owner).await?;
        let svc: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
        delete_ours(&svc, &owner.minio(), owner).await?;
        let nps: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), ns);
        delete_ours(&nps, &owner.minio(), owner).await?;
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    if server {
        delete_ours(&secrets, &owner.credentials_secret(), owner).await?;
    }
    delete_ours(&secrets, &owner.keys_secret(), owner).await
}

/// Deletes every child: worker and analysis Jobs, MinIO's StatefulSet and Service, the
/// key service, the NetworkPolicies, the credentials and keys Secrets, each only if it is the campaign's. Owner references would let the
/// garbage collector do it; doing it here stops running workers at once and works where no
/// collector runs.
async fn delete_children(ctx: &Context, owner: &Owner, c: &BenchmarkCampaign) -> Result<()> {
    stop_jobs(ctx, owner).await?;
    delete_secrets(ctx, owner, c, true).await?;
    let nps: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    delete_ours(&nps, &owner.workers_fence(), owner).await
}

/// Creates the key service of remote arms: its credentials Secret (once, generated), its
/// Service, fence and Deployment.
async fn provision_key_service(
    ctx: &Context,
    owner: &Owner,
    c: &BenchmarkCampaign,
    plan: &campaign::Plan,
    ks: &run::keyservice::KeyServiceSpec,
) -> Result<()> {
    let ns = &owner.namespace;
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    if absent(&secrets, &owner.kms_credentials_secret(), owner).await? {
        let access = format!("PQKMS{}", random_token(8).to_uppercase());
        let s = keyservice::credentials_secret(owner, &access, &random_token(20));
        create_child(&secrets, &s, owner).await?;
    }
    let svc: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
    create_child(&svc, &keyservice::service(owner, ks), owner).await?;
    let nps: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), ns);
    create_child(&nps, &keyservice::network_policy(owner), owner).await?;
    let key_types = deploy::key_types(plan);
    let deadline = step::run_deadline(&c.spec.campaign);
    let (pods, _) = deploy::worker_pods(&ctx.config.worker_image, c, owner, &key_types, deadline)?;
    let d = keyservice::deployment(
        owner,
        &pods,
        ks,
        &deploy::key_service_key_types(plan),
        deploy::server_placement(c)?,
    )?;
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), ns);
    create_child(&deployments, &d, owner).await
}

/// Deletes the key service, each object only if the campaign's.
async fn delete_key_service(ctx: &Context, owner: &Owner) -> Result<()> {
    let ns = &owner.namespace;
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), ns);
    delete_ours(&deployments, &owner.kms(), owner).await?;
    let svc: Api<Service> = Api::namespaced(ctx.client.clone(), ns);
    delete_ours(&svc, &owner.kms(), owner).await?;
    let nps: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), ns);
    delete_ours(&nps, &owner.kms(), owner).await?;
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), ns);
    delete_ours(&secrets, &owner.kms_credentials_secret(), owner).await
}

async fn cleanup(c: &BenchmarkCampaign, ctx: &Context) -> Result<Requeue> {
    let owner = Owner::of(c)?;
    delete_children(ctx, &owner, c).await?;
    ctx.metrics.campaign_phase(&campaign_key(c), None);
    let ev = KEvent {
        type_: EventType::Normal,
        reason: step::Reason::Deleted.as_str().into(),
        note: Some(
            "deleted the campaign's server, Secrets and Jobs; the results bucket is kept".into(),
        ),
        action: step::Reason::Deleted.as_str().into(),
        secondary: None,
    };
    if let Err(e) = ctx.recorder.publish(&ev, &c.object_ref(&())).await {
        warn!(error = %e, "cannot record an event");
    }
    Ok(Requeue::await_change())
}

/// Runs a controller per namespace in `namespaces` (one for every namespace when `None`)
/// until a termination signal. Watching each namespace on its own needs rights in those
/// namespaces only (a Role in each), where one cluster-wide watch would need a ClusterRole.
pub async fn run_in(ctx: Arc<Context>, namespaces: Option<&[String]>) {
    match namespaces {
        None => run(ctx, None).await,
        Some(list) => {
            futures::future::join_all(list.iter().map(|ns| run(ctx.clone(), Some(ns)))).await;
        }
    }
}

/// Runs the controller until a termination signal: campaigns in `namespace` (all when
/// `None`), woken by changes to the Jobs and StatefulSets they own.
pub async fn run(ctx: Arc<Context>, namespace: Option<&str>) {
    let client = ctx.client.clone();
    let (campaigns, jobs, sets) = match namespace {
        Some(ns) => (
            Api::<BenchmarkCampaign>::namespaced(client.clone(), ns),
            Api::<Job>::namespaced(client.clone(), ns),
            Api::<StatefulSet>::namespaced(client.clone(), ns),
        ),
        None => (
            Api::all(client.clone()),
            Api::all(client.clone()),
            Api::all(client),
        ),
    };
    let owned = watcher::Config::default().labels("app.kubernetes.io/managed-by=pqbench-operator");
    Controller::new(campaigns, watcher::Config::default().any_semantic())
        .owns(jobs, owned.clone())
        .owns(sets, owned)
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|r| async move {
            if let Err(e) = r {
                warn!(error = %e, "controller");
            }
        })
        .await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// MinIO's pod as the API server reports it once its init container has run.
    #[test]
    fn the_disk_probes_message_is_read_from_minios_init_container_status() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "q-minio-0"},
            "status": {
                "initContainerStatuses": [{
                    "name": "disk-probe", "image": "probe:1", "imageID": "", "ready": true,
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0,
                        "message": "{\"measured\":{\"writeBytesPerS\":5e8,\"writeLatencyMs\":2.0,\"blockBytes\":1048576,\"direct\":true,\"tool\":\"fio-3.33\"}}"}}
                }],
                "containerStatuses": [{"name": "minio", "image": "m", "imageID": "", "ready": true,
                                       "restartCount": 0,
                                       "state": {"running": {}}}]
            }
        }))
        .unwrap();
        let m = disk_probe_message(std::slice::from_ref(&pod));
        let disk = run::preflight::disk_from_message(m);
        assert_eq!(
            disk.measured().map(|d| d.write_bytes_per_s),
            Some(5e8),
            "{disk:?}"
        );
        // Still running, or no such container: no message, and the reason says so.
        let mut going = pod.clone();
        going
            .status
            .as_mut()
            .unwrap()
            .init_container_statuses
            .as_mut()
            .unwrap()[0]
            .state = Some(serde_json::from_value(serde_json::json!({"running": {}})).unwrap());
        assert_eq!(disk_probe_message(&[going]), None);
        assert_eq!(disk_probe_message(&[]), None);
    }
}
