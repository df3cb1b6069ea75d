//! A campaign's design placed on a cluster: where the store under test and the results
//! bucket are, which run specs the worker pods get, which keys they need (DESIGN.md
//! "Operator"; the plan itself is `campaign::design`). Pure: names and plain data only.

use campaign::spec::KmsSpec;
use campaign::units::Dur;
use campaign::{CampaignSpec, Manifest, Plan};
use envelope::KeyType;
use run::keyservice::KeyServiceSpec;
use run::runspec::{
    Credentials, KeyRef, KmsTarget, Output, PromSource, RunSpec, S3Target, StartGate, Telemetry,
};

use crate::api::{BenchmarkCampaign, ResultsLocation};
use crate::resources::{NODE_EXPORTER_PORT, Owner, Placement, S3_PORT};
use crate::{Error, Result};

/// The results bucket when the spec names none.
pub const DEFAULT_RESULTS_BUCKET: &str = "pqbench-results";
/// The bucket under test on the campaign's own MinIO.
pub const MINIO_BUCKET: &str = "pqbench";
/// Where a worker pod mounts the keys Secret (read-only, `<key-type>.key` files).
pub const KEYS_DIR: &str = "/var/run/pqbench/keys";
/// Where worker and analysis pods mount the credentials Secret of the store under test.
pub const S3_CREDENTIALS_DIR: &str = "/var/run/pqbench/s3";
/// Where worker and analysis pods mount the results store's own credentials Secret.
pub const RESULTS_CREDENTIALS_DIR: &str = "/var/run/pqbench/results";
/// Where worker pods of a campaign with remote arms, and its key service's pod, mount the
/// key service's credentials Secret.
pub const KMS_CREDENTIALS_DIR: &str = "/var/run/pqbench/kms";
/// Where worker pods mount the credentials Secret of each key service given by endpoint
/// (`<dir>/<Secret name>`).
pub const KMS_EXTERNAL_DIR: &str = "/var/run/pqbench/kms-external";

/// The manifest of a campaign object (what `pqbench plan` would read).
pub fn manifest(c: &BenchmarkCampaign) -> Manifest {
    Manifest {
        api_version: "pqbench.io/v1alpha1".into(),
        kind: "BenchmarkCampaign".into(),
        metadata: campaign::spec::Metadata {
            name: c.metadata.name.clone().unwrap_or_default(),
            namespace: c.metadata.namespace.clone(),
            labels: Default::default(),
            annotations: Default::default(),
        },
        spec: c.spec.campaign.clone(),
    }
}

/// Whether the store under test is reached with the pods' identity (an external server
/// without a credentials Secret).
pub fn server_uses_identity(spec: &CampaignSpec) -> bool {
    spec.server
        .external
        .as_ref()
        .is_some_and(|e| e.credentials_secret.is_none())
}

/// Whether the results store is reached with the pods' identity (its own endpoint without
/// a credentials Secret, or the server's endpoint reached that way).
pub fn results_use_identity(spec: &CampaignSpec) -> bool {
    match &spec.results {
        Some(r) if r.credentials_secret.is_some() => false,
        Some(r) if r.endpoint.is_some() => true,
        _ => server_uses_identity(spec),
    }
}

/// What the API server's schema cannot check but the operator cannot run.
pub fn unsupported(spec: &CampaignSpec) -> Option<String> {
    let identity = server_uses_identity(spec) || results_use_identity(spec);
    if identity && spec.clients.service_account_name.is_none() {
        return Some(
            "an external server or results store without credentialsSecret is reached with the pods' identity: set clients.serviceAccountName to a ServiceAccount with that access (IRSA: annotated with eks.amazonaws.com/role-arn), or give credentialsSecret"
                .into(),
        );
    }
    if let Some((i, _)) = external_kms(spec).find(|(_, k)| k.credentials_secret.is_none()) {
        return Some(format!(
            "arms[{i}].kms.credentialsSecret: the key service at kms.endpoint is reached with a credentials Secret (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) labelled {}=true; the pods' identity is not used for a key service",
            crate::policy::CREDENTIALS_LABEL
        ));
    }
    egress(spec).err().map(|e| e.to_string())
}

/// The external endpoints given as plain `http://` (field, URL): the server under test
/// and the results store. The campaign's own MinIO is in-cluster and not among them.
pub fn plain_http_endpoints(spec: &CampaignSpec) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(e) = &spec.server.external {
        out.push(("spec.server.external.endpoint", e.endpoint.clone()));
    }
    if let Some(e) = spec.results.as_ref().and_then(|r| r.endpoint.clone()) {
        out.push(("spec.results.endpoint", e));
    }
    for (_, k) in external_kms(spec) {
        if let Some(e) = &k.endpoint {
            out.push(("spec.arms[].kms.endpoint", e.clone()));
        }
    }
    out.retain(|(_, url)| {
        url.get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    });
    out
}

/// A destination of a campaign's worker and analysis pods besides DNS (their
/// NetworkPolicy's egress, [`crate::resources::workers_network_policy`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Egress {
    /// The campaign's own MinIO pods, on the S3 and node-exporter ports.
    Minio,
    /// The campaign's key service pods (remote arms), on its ports.
    KeyService,
    /// A host named by a campaign field, on one TCP port.
    Host {
        /// The field naming it (`spec.server.external.endpoint`, ...).
        field: &'static str,
        /// The address when the host is an IP literal; `None`: a DNS name, reachable at
        /// any address but the excepted ones (a NetworkPolicy cannot name a host).
        ip: Option<std::net::IpAddr>,
        /// TCP port (the URL's, else 443 for `https`, 80 for `http`).
        port: u16,
    },
}

/// The STS endpoint a pod's identity is exchanged at (IRSA), on HTTPS.
const STS: Egress = Egress::Host {
    field: "clients.serviceAccountName (STS)",
    ip: None,
    port: 443,
};

fn host_of(field: &'static str, url: &str) -> Result<Egress> {
    let bad = || Error::Endpoint {
        field,
        url: url.to_owned(),
    };
    let uri: hyper::Uri = url.parse().map_err(|_| bad())?;
    let host = uri.host().ok_or_else(bad)?;
    let port = match (uri.port_u16(), uri.scheme_str()) {
        (Some(p), _) => p,
        (None, Some(s)) if s.eq_ignore_ascii_case("https") => 443,
        (None, Some(s)) if s.eq_ignore_ascii_case("http") => 80,
        _ => return Err(bad()),
    };
    let ip = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok();
    Ok(Egress::Host { field, ip, port })
}

/// Whether the campaign has remote arms on the embedded key service (`arms[].backend:
/// remote` without `kms.endpoint`): the operator then runs its key service
/// ([`key_service`]).
pub fn has_remote_arms(spec: &CampaignSpec) -> bool {
    spec.arms
        .iter()
        .any(|a| a.backend.is_remote() && a.kms.as_ref().is_none_or(KmsSpec::embedded))
}

/// The remote arms that name a key service by endpoint (`arms[i].kms.endpoint`), with
/// their index: the operator deploys nothing for them, and their workers reach the
/// endpoint with the Secret `kms.credentialsSecret`.
pub fn external_kms(spec: &CampaignSpec) -> impl Iterator<Item = (usize, &KmsSpec)> {
    spec.arms
        .iter()
        .enumerate()
        .filter(|(_, a)| a.backend.is_remote())
        .filter_map(|(i, a)| a.kms.as_ref().filter(|k| !k.embedded()).map(|k| (i, k)))
}

/// The credentials Secrets of the key services given by endpoint, each once, sorted: the
/// worker pods mount each at [`KMS_EXTERNAL_DIR`]`/<name>`.
pub fn external_kms_secrets(spec: &CampaignSpec) -> Vec<String> {
    let mut out: Vec<String> = external_kms(spec)
        .filter_map(|(_, k)| k.credentials_secret.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The key service of a plan with remote arms (`None` without): one port per distinct
/// round trip, the keys and credentials where its pod mounts them.
pub fn key_service(plan: &Plan) -> Result<Option<KeyServiceSpec>> {
    let rtts = plan.kms_rtts();
    if rtts.is_empty() {
        return Ok(None);
    }
    let spec = KeyServiceSpec::new(
        KEYS_DIR.into(),
        Credentials::Mounted(KMS_CREDENTIALS_DIR.into()),
        &rtts,
    )?;
    Ok(Some(spec))
}

/// The key types of the plan's remote arms on the embedded key service (the keys it
/// holds).
pub fn key_service_key_types(plan: &Plan) -> Vec<KeyType> {
    let mut out: Vec<KeyType> = plan
        .arms
        .iter()
        .filter(|a| a.kms.as_ref().is_some_and(KmsSpec::embedded))
        .map(|a| a.mode.key_type())
        .collect();
    out.sort_by_key(|kt| kt.name());
    out.dedup();
    out
}

/// Where the worker pods of a remote arm reach the key service: its Service's port of each
/// round trip, with its credentials Secret mounted.
pub fn kms_targets(owner: &Owner, ks: &KeyServiceSpec) -> Vec<(Dur, KmsTarget)> {
    ks.ports
        .iter()
        .map(|p| {
            let target = KmsTarget {
                endpoint: owner.kms_endpoint(p.port),
                region: ks.region.clone(),
                credentials: Credentials::Mounted(KMS_CREDENTIALS_DIR.into()),
            };
            (p.rtt, target)
        })
        .collect()
}

/// Where a campaign's worker and analysis pods connect besides DNS: the store under test
/// (its MinIO, or the external endpoint), the key service of its remote arms, the results store's own endpoint, the OTLP
/// collector, and STS when they use the pods' identity. An endpoint that is not a URL
/// with a host is an error naming its field.
pub fn egress(spec: &CampaignSpec) -> Result<Vec<Egress>> {
    let mut out = Vec::new();
    match &spec.server.external {
        Some(e) => out.push(host_of("spec.server.external.endpoint", &e.endpoint)?),
        None => out.push(Egress::Minio),
    }
    if has_remote_arms(spec) {
        out.push(Egress::KeyService);
    }
    for (_, k) in external_kms(spec) {
        if let Some(e) = &k.endpoint {
            out.push(host_of("spec.arms[].kms.endpoint", e)?);
        }
    }
    if let Some(e) = spec.results.as_ref().and_then(|r| r.endpoint.as_deref()) {
        out.push(host_of("spec.results.endpoint", e)?);
    }
    if let Some(t) = &spec.telemetry {
        out.push(host_of("spec.telemetry.otlpEndpoint", &t.otlp_endpoint)?);
    }
    if server_uses_identity(spec) || results_use_identity(spec) {
        out.push(STS);
    }
    Ok(out)
}

/// The signing region of the results store: `results.region`, else the server's.
pub fn results_region(spec: &CampaignSpec) -> String {
    spec.results
        .as_ref()
        .and_then(|r| r.region.clone())
        .or_else(|| spec.server.external.as_ref().map(|e| e.region.clone()))
        .unwrap_or_else(|| "us-east-1".to_owned())
}

/// The endpoint under test.
pub fn server_endpoint(owner: &Owner, spec: &CampaignSpec) -> String {
    spec.server
        .external
        .as_ref()
        .map_or_else(|| owner.minio_endpoint(), |e| e.endpoint.clone())
}

/// The Secret holding the keys of the store under test (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`); `None`: the pods' identity.
pub fn server_credentials_secret(owner: &Owner, spec: &CampaignSpec) -> Option<String> {
    match &spec.server.external {
        Some(e) => e.credentials_secret.clone(),
        None => Some(owner.credentials_secret()),
    }
}

/// The Secret holding the results store's keys; `None`: the pods' identity.
pub fn results_credentials_secret(owner: &Owner, spec: &CampaignSpec) -> Option<String> {
    if results_use_identity(spec) {
        return None;
    }
    spec.results
        .as_ref()
        .and_then(|r| r.credentials_secret.clone())
        .or_else(|| server_credentials_secret(owner, spec))
}

/// Where the run files and the report go: `<namespace>/<name>/<uid>/` in the results
/// bucket, so that a campaign recreated under the same name never mixes with the old one.
pub fn results_location(owner: &Owner, spec: &CampaignSpec) -> ResultsLocation {
    let r = spec.results.clone().unwrap_or_default();
    ResultsLocation {
        endpoint: r.endpoint.unwrap_or_else(|| server_endpoint(owner, spec)),
        bucket: r
            .bucket
            .unwrap_or_else(|| DEFAULT_RESULTS_BUCKET.to_owned()),
        prefix: format!(
            "{}/{}/{}/",
            owner.namespace, owner.name, owner.reference.uid
        ),
    }
}

/// The key types the plan's arms need (one recipient key each).
pub fn key_types(plan: &Plan) -> Vec<KeyType> {
    let mut out: Vec<KeyType> = Vec::new();
    for kt in plan.arms.iter().map(|a| a.mode.key_type()) {
        if kt != KeyType::None && !out.contains(&kt) {
            out.push(kt);
        }
    }
    out
}

/// Telemetry of the worker pods: MinIO's own metrics and the node-exporter sidecar in
/// its pod (host-wide memory, disk and CPU: `/proc/meminfo`, `/proc/diskstats` and
/// `/proc/stat` are not namespaced), which the pause rule reads. An external server
/// gives neither, so its campaigns run without the pause.
pub fn telemetry(owner: &Owner, spec: &CampaignSpec) -> Telemetry {
    if spec.server.external.is_some() {
        return Telemetry::default();
    }
    let host = format!("{}.{}.svc", owner.minio(), owner.namespace);
    Telemetry {
        server_metrics: Some(PromSource {
            url: format!("http://{host}:{S3_PORT}/minio/v2/metrics/node"),
            bearer_token_env: None,
            bearer_token_file: None,
        }),
        node_exporter: Some(PromSource {
            url: format!("http://{host}:{NODE_EXPORTER_PORT}/metrics"),
            bearer_token_env: None,
            bearer_token_file: None,
        }),
        ..Telemetry::default()
    }
}

/// The run specs' environment on the cluster.
pub fn environment(owner: &Owner, spec: &CampaignSpec) -> run::planner::Environment {
    let results = results_location(owner, spec);
    let own_results_keys = spec
        .results
        .as_ref()
        .is_some_and(|r| r.credentials_secret.is_some());
    let results_identity =
        results_use_identity(spec) && spec.results.as_ref().is_some_and(|r| r.endpoint.is_some());
    let (endpoint, region, bucket) = match &spec.server.external {
        Some(e) => (e.endpoint.clone(), e.region.clone(), e.bucket.clone()),
        None => (
            owner.minio_endpoint(),
            "us-east-1".to_owned(),
            MINIO_BUCKET.to_owned(),
        ),
    };
    run::planner::Environment {
        cpus: None,
        // The key service's endpoints come from the plan ([`run_spec`]).
        kms: Vec::new(),
        kms_external: Some(run::planner::ExternalKmsCredentials::MountedUnder(
            KMS_EXTERNAL_DIR.into(),
        )),
        s3: S3Target {
            endpoint: endpoint.clone(),
            region,
            bucket,
            credentials: if server_uses_identity(spec) {
                Credentials::Identity
            } else {
                Credentials::Mounted(S3_CREDENTIALS_DIR.into())
            },
            client: Default::default(),
        },
        keys: KeyRef::Mounted(KEYS_DIR.into()),
        output: Output::S3 {
            bucket: results.bucket,
            prefix: results.prefix,
            endpoint: (results.endpoint != endpoint).then_some(results.endpoint),
            credentials: if own_results_keys {
                Some(Credentials::Mounted(RESULTS_CREDENTIALS_DIR.into()))
            } else {
                results_identity.then_some(Credentials::Identity)
            },
            region: spec.results.as_ref().and_then(|r| r.region.clone()),
        },
        telemetry: telemetry(owner, spec),
        traces: spec.telemetry.as_ref().map(|t| run::trace::TraceSpec {
            endpoint: Some(t.otlp_endpoint.clone()),
            protocol: t.otlp_protocol,
            sample_ratio: Some(t.sample_ratio),
        }),
    }
}

/// The run spec of a planned run as a worker Job gets it: one spec for every pod (each
/// takes its index from `JOB_COMPLETION_INDEX`), started by the start gate.
pub fn run_spec(m: &Manifest, plan: &Plan, index: u32, owner: &Owner) -> Result<RunSpec> {
    let run = plan.runs.get(index as usize).ok_or(Error::Invalid {
        what: "run index beyond the plan",
    })?;
    let mut env = environment(owner, &m.spec);
    if let Some(ks) = key_service(plan)? {
        env.kms = kms_targets(owner, &ks);
    }
    let mut specs = run::planner::run_specs(m, plan, run, &env)?;
    let mut s = specs.swap_remove(0);
    s.start_gate = Some(StartGate::default());
    s.validate()?;
    Ok(s)
}

/// The server node group's placement: MinIO's, and the key service's (as `pqbench run`
/// pins it on the server's CPUs) whether the server is the campaign's MinIO or external.
pub fn server_placement(c: &BenchmarkCampaign) -> Result<Placement> {
    let sp = &c.spec.server;
    Placement::new(
        &sp.node_group,
        sp.node_selector.as_ref(),
        &sp.tolerations,
        sp.affinity.as_ref(),
        "spec.server.affinity",
    )
}

/// MinIO as a campaign on its own MinIO gets it (`None` with an external server): its
/// settings, with `server.cpus` as whole CPUs (requests = limits, Guaranteed QoS), and its
/// placement on the server node group.
pub fn server_pods(
    c: &BenchmarkCampaign,
) -> Result<Option<(campaign::cluster::MinioServer, Placement)>> {
    let sp = &c.spec.server;
    if sp.external.is_some() {
        return Ok(None);
    }
    let placement = server_placement(c)?;
    let mut minio = sp.minio.clone().unwrap_or_default();
    if let Some(n) = sp.cpus.as_ref().and_then(campaign::placement::Cpus::count) {
        minio.resources = Some(crate::resources::guaranteed(minio.resources.as_ref(), n));
    }
    Ok(Some((minio, placement)))
}

/// What every worker pod of a campaign gets (image, processes, resources, Secrets by
/// reference, the recipient key types, the deadline) and where it is placed: the client
/// node group. `default_image` is the operator's when the campaign names none.
pub fn worker_pods<'a>(
    default_image: &'a str,
    c: &'a BenchmarkCampaign,
    owner: &Owner,
    key_types: &'a [envelope::KeyType],
    deadline: std::time::Duration,
) -> Result<(crate::resources::WorkerPods<'a>, Placement)> {
    let cl = &c.spec.clients;
    let placement = Placement::new(
        &cl.node_group,
        cl.node_selector.as_ref(),
        &cl.tolerations,
        cl.affinity.as_ref(),
        "spec.clients.affinity",
    )?;
    let spec_ = &c.spec.campaign;
    let pods = crate::resources::WorkerPods {
        image: cl.image.as_deref().unwrap_or(default_image),
        processes: cl.processes,
        resources: cl.resources.as_ref(),
        image_pull_secrets: &cl.image_pull_secrets,
        server_credentials: server_credentials_secret(owner, spec_),
        service_account_name: cl.service_account_name.clone(),
        results_credentials: spec_
            .results
            .as_ref()
            .and_then(|r| r.credentials_secret.clone()),
        key_types,
        kms_credentials: has_remote_arms(spec_).then(|| owner.kms_credentials_secret()),
        kms_external: external_kms_secrets(spec_),
        active_deadline_seconds: i64::try_from(deadline.as_secs()).unwrap_or(i64::MAX),
        cpus: cl.cpus.as_ref().and_then(campaign::placement::Cpus::count),
    };
    Ok((pods, placement))
}

/// How long and how wide the testbed probes run for the campaign ([`run::preflight::ProbeSettings::of`]).
pub fn probe_settings(m: &Manifest, plan: &Plan) -> run::preflight::ProbeSettings {
    run::preflight::ProbeSettings::of(plan, m.spec.measured.0)
}

/// The probes beside the campaign's MinIO (`testbed.baselines`, not with an external
/// server): the disk-probe init container and the iperf3 sidecar, in `image`.
pub fn server_probe<'a>(
    m: &Manifest,
    plan: &Plan,
    image: &'a str,
) -> Option<crate::resources::ServerProbe<'a>> {
    (m.spec.testbed.baselines && m.spec.server.external.is_none()).then(|| {
        crate::resources::ServerProbe {
            image,
            seconds: probe_settings(m, plan).seconds,
        }
    })
}

/// What the pre-flight probe Job's pod is (the worker pods' placement, Secrets and
/// deadline, in the operator's probe image whatever `clients.image` names) and where it
/// goes: the client node group.
pub fn probe_pods<'a>(
    probe_image: &'a str,
    c: &'a BenchmarkCampaign,
    owner: &Owner,
    deadline: std::time::Duration,
) -> Result<(crate::resources::WorkerPods<'a>, Placement)> {
    let (pods, placement) = worker_pods(probe_image, c, owner, &[], deadline)?;
    let pods = crate::resources::WorkerPods {
        image: probe_image,
        ..pods
    };
    Ok((pods, placement))
}

/// The pre-flight probe Job's spec ([`run::preflight`]): from the clients' node group to
/// the server, iperf3 both ways to the sidecar beside the campaign's MinIO (an external
/// server has none: its network is not measured, and its disk neither) and ping; `disk`
/// as MinIO's init container left it; `baselines.json` under the results prefix.
pub fn probe_spec(
    c: &BenchmarkCampaign,
    m: &Manifest,
    plan: &Plan,
    owner: &Owner,
    disk: run::preflight::Probe<run::preflight::Disk>,
) -> run::preflight::ProbeSpec {
    let env = environment(owner, &m.spec);
    let (iperf3, disk) = match &m.spec.server.external {
        Some(e) => (
            Err(format!(
                "the server is external ({}): no iperf3 server beside it",
                e.endpoint
            )),
            run::preflight::Probe::NotMeasured(format!(
                "the server is external ({}): its disk is not the operator's to probe",
                e.endpoint
            )),
        ),
        None => (Ok(run::preflight::IPERF3_PORT), disk),
    };
    // MinIO's CPU limit (`server.cpus` sets it, requests = limits): the cores it has.
    let server_cores = server_pods(c)
        .ok()
        .flatten()
        .and_then(|(minio, _)| cpu_cores(&minio.resources?.limits.get("cpu")?.0));
    run::preflight::ProbeSpec {
        site: format!("node group {}", c.spec.clients.node_group),
        iperf3,
        disk,
        server_cores,
        settings: probe_settings(m, plan),
        s3: env.s3,
        results: env.output,
    }
}

/// Cores in a Kubernetes CPU quantity (`"8"`, `"2.5"`, `"500m"`); `None` for anything
/// else.
pub fn cpu_cores(q: &str) -> Option<f64> {
    let q = q.trim();
    let n = match q.strip_suffix('m') {
        Some(milli) => milli.parse::<f64>().ok()? / 1000.0,
        None => q.parse::<f64>().ok()?,
    };
    (n.is_finite() && n > 0.0).then_some(n)
}

/// The analysis Job's spec: the campaign, the store under test (whose endpoint and
/// credentials the results store shares unless it has its own) and the results.
pub fn analysis_spec(m: &Manifest, owner: &Owner) -> run::verdicts::AnalysisSpec {
    let env = environment(owner, &m.spec);
    run::verdicts::AnalysisSpec {
        campaign: m.clone(),
        s3: env.s3,
        results: env.output,
        given_up: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn owner() -> Owner {
        crate::resources::tests::owner()
    }

    use crate::fixtures::quick;

    #[test]
    fn run_specs_point_at_minio_and_the_results_prefix_and_wait_at_the_gate() {
        let m = quick();
        let plan = campaign::design::plan(&m);
        let s = run_spec(&m, &plan, 0, &owner()).unwrap();
        assert_eq!(s.s3.endpoint, "http://quick-minio.bench.svc:9000");
        assert_eq!(s.s3.bucket, MINIO_BUCKET);
        assert_eq!(
            s.s3.credentials,
            Credentials::Mounted(S3_CREDENTIALS_DIR.into())
        );
        assert_eq!(
            s.output,
            Output::S3 {
                bucket: DEFAULT_RESULTS_BUCKET.into(),
                prefix: "bench/quick/0000-1111/".into(),
                endpoint: None,
                credentials: None,
                region: None,
            }
        );
        assert!(s.start_gate.is_some());
        assert!(s.start_at.is_none());
        // The quick campaign interleaves: the run takes its turn among its block's three
        // arms, as `pqbench run` has it, its windows stretched by the arms.
        let i = m.spec.interleave.unwrap();
        let t = s.turns.unwrap();
        assert_eq!((t.slice, t.of, t.turn), (i.slice, 3, plan.runs[0].position));
        assert_eq!(s.measured.0, m.spec.measured.0 * 3);
        assert_eq!(s.run_id, plan.runs[0].run_id);
        assert_eq!(s.processes.count, m.spec.clients.processes);
        assert_eq!(
            s.recipient_key,
            (s.cell.mode != envelope::Mode::Plaintext).then(|| KeyRef::Mounted(KEYS_DIR.into()))
        );
        let t = s.telemetry.node_exporter.unwrap();
        assert_eq!(t.url, "http://quick-minio.bench.svc:9100/metrics");
        // The pause rule applies because the node exporter is there.
        assert_eq!(s.pause.is_some(), m.spec.pause.enabled);
    }

    #[test]
    fn external_servers_and_results_stores_use_their_own_endpoints_and_keys() {
        let mut m = quick();
        m.spec.server.external = Some(campaign::cluster::ExternalServer {
            endpoint: "https://s3.eu-west-1.amazonaws.com".into(),
            credentials_secret: Some("aws-keys".into()),
            region: "eu-west-1".into(),
            bucket: "bench-data".into(),
        });
        m.spec.results = Some(campaign::cluster::Results {
            bucket: Some("bench-results".into()),
            endpoint: Some("https://results.example".into()),
            credentials_secret: Some("results-keys".into()),
            region: Some("ap-southeast-2".into()),
        });
        assert_eq!(unsupported(&m.spec), None);
        let plan = campaign::design::plan(&m);
        let o = owner();
        let s = run_spec(&m, &plan, 1, &o).unwrap();
        assert_eq!(s.s3.endpoint, "https://s3.eu-west-1.amazonaws.com");
        assert_eq!(s.s3.region, "eu-west-1");
        assert_eq!(s.telemetry, Telemetry::default());
        assert!(s.pause.is_none(), "no view of an external server's host");
        let Output::S3 {
            endpoint,
            credentials,
            bucket,
            ..
        } = &s.output
        else {
            panic!("S3 output");
        };
        assert_eq!(bucket, "bench-results");
        assert_eq!(endpoint.as_deref(), Some("https://results.example"));
        let Output::S3 { region, .. } = &s.output else {
            panic!("S3 output");
        };
        assert_eq!(region.as_deref(), Some("ap-southeast-2"));
        assert_eq!(results_region(&m.spec), "ap-southeast-2");
        assert!(
            credentials.as_ref() == Some(&Credentials::Mounted(RESULTS_CREDENTIALS_DIR.into()))
        );
        assert_eq!(
            server_credentials_secret(&o, &m.spec).as_deref(),
            Some("aws-keys")
        );
        assert_eq!(
            results_credentials_secret(&o, &m.spec).as_deref(),
            Some("results-keys")
        );
        // Without Secrets: the pods' identity, which needs a ServiceAccount.
        m.spec.server.external.as_mut().unwrap().credentials_secret = None;
        m.spec.results.as_mut().unwrap().credentials_secret = None;
        assert!(
            unsupported(&m.spec)
                .unwrap()
                .contains("clients.serviceAccountName")
        );
        m.spec.clients.service_account_name = Some("pqbench-irsa".into());
        assert_eq!(unsupported(&m.spec), None);
        assert_eq!(server_credentials_secret(&o, &m.spec), None);
        assert_eq!(results_credentials_secret(&o, &m.spec), None);
        let s = run_spec(&m, &plan, 1, &o).unwrap();
        assert_eq!(s.s3.credentials, Credentials::Identity);
        let Output::S3 { credentials, .. } = &s.output else {
            panic!("S3 output");
        };
        assert_eq!(credentials, &Some(Credentials::Identity));
    }

    #[test]
    fn key_types_are_those_of_the_arms() {
        let m = quick();
        let plan = campaign::design::plan(&m);
        let kts = key_types(&plan);
        assert!(!kts.is_empty());
        assert!(!kts.contains(&KeyType::None));
    }
}

#[cfg(test)]
mod require_pq_tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    /// An arm's `requirePq` reaches its runs' specs, which the worker pods' reader follows
    /// (and `pqbench run`'s: the same planner).
    #[test]
    fn an_arm_requiring_post_quantum_gives_its_runs_a_reader_that_does() {
        let m = campaign::Manifest::parse(
            "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: pq, namespace: bench}
spec:
  arms:
    - {mode: ml-kem-768, format: v2}
    - {mode: ml-kem-768, format: v2, requirePq: true, name: ml-kem-768-pq}
  baseline: ml-kem-768
  analysis: {comparisons: [{arm: ml-kem-768-pq, against: ml-kem-768}]}
  cells: [{operation: [get], objectSize: [64KiB], concurrency: [1]}]
  repetitions: 2
  seed: 1
",
            "test",
        )
        .unwrap();
        let plan = campaign::design::plan(&m);
        let o = crate::resources::tests::owner();
        let by_arm: Vec<(String, bool)> = (0..u32::try_from(plan.runs.len()).unwrap())
            .map(|i| {
                let s = super::run_spec(&m, &plan, i, &o).unwrap();
                (s.arm.unwrap(), s.cell.require_pq)
            })
            .collect();
        assert!(
            by_arm.contains(&("ml-kem-768-pq".into(), true)),
            "{by_arm:?}"
        );
        assert!(by_arm.contains(&("ml-kem-768".into(), false)), "{by_arm:?}");
        assert!(by_arm.iter().all(|(a, r)| *r == (a == "ml-kem-768-pq")));
    }
}
