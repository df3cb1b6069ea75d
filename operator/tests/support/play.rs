//! Plays the pods of the operator's Jobs where no kubelet runs (the test API server): a
//! worker Job's processes run the worker's engine with the Job's run spec, the analysis
//! Job runs `worker::analyze`, the pre-flight probe Job runs `worker::testbed::preflight`
//! (this host's ping; iperf3 and fio as its spec says), each with the Secret volumes the Job mounts written as the
//! kubelet writes them (`pod_env::secret_mounts`), the spec's paths inside the pod
//! translated to their directories here.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use run::runspec::RunSpec;

use crate::pod_env::{PodContext, SecretMount, secret_mounts};

/// The Job's pod's Secret volumes, written under `dir`, as `pod` (a name of its own).
fn mounts(
    job: &Job,
    secrets: &BTreeMap<String, Secret>,
    dir: &std::path::Path,
    pod: &str,
) -> Vec<SecretMount> {
    let spec = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    pod_mounts(spec, secrets, dir, pod)
}

fn pod_mounts(
    spec: &k8s_openapi::api::core::v1::PodSpec,
    secrets: &BTreeMap<String, Secret>,
    dir: &std::path::Path,
    pod: &str,
) -> Vec<SecretMount> {
    let ctx = PodContext {
        name: pod.to_owned(),
        secrets: secrets.clone(),
        ..PodContext::default()
    };
    secret_mounts(spec, &spec.containers[0], &ctx, &dir.join("volumes"), false)
        .unwrap_or_else(|e| panic!("pod {pod}: {e}"))
}

/// The value of a pod's environment variable: its value, or the Secret key it references.
pub(crate) fn env_value(job: &Job, secrets: &BTreeMap<String, Secret>, name: &str) -> String {
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let e = pod.containers[0]
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("env {name}"));
    if let Some(v) = &e.value {
        return v.clone();
    }
    let r = e
        .value_from
        .as_ref()
        .unwrap()
        .secret_key_ref
        .as_ref()
        .unwrap();
    let s = &secrets[&r.name];
    String::from_utf8(s.data.as_ref().unwrap()[&r.key].0.clone()).unwrap()
}

/// Plays the pod of the analysis Job: `pqbench-worker --analysis-env` with the Job's
/// spec, the credentials read from the Secrets it references.
pub(crate) fn play_analysis(
    job: &Job,
    secrets: &BTreeMap<String, Secret>,
    dir: &std::path::Path,
) -> std::thread::JoinHandle<()> {
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(
        pod.containers[0].args.as_deref().unwrap(),
        ["--analysis-env", "PQBENCH_ANALYSIS_SPEC"]
    );
    let mounts = mounts(job, secrets, dir, "analysis");
    let spec: run::verdicts::AnalysisSpec = serde_json::from_str(&SecretMount::on_host(
        &mounts,
        &env_value(job, secrets, "PQBENCH_ANALYSIS_SPEC"),
    ))
    .unwrap();
    let tmp = dir.join("analysis-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        match rt.block_on(worker::analyze::analyze_bucket(&spec, &tmp)) {
            Ok(o) => eprintln!(
                "played analysis: {}",
                serde_json::to_string(&o).unwrap_or_default()
            ),
            Err(e) => eprintln!("played analysis: {e}"),
        }
    })
}

/// Plays a worker Job: each pod a worker carrying out the Job's run spec, as the pod would.
/// With `never_quiet` (a node exporter's URL), the pods wait for a server host that never
/// goes quiet and give up after 1 s: the run's `pause_quiet` check fails and the run is
/// invalid, as a run on a busy cluster would be.
pub(crate) fn play_job(
    job: &Job,
    secrets: &BTreeMap<String, Secret>,
    dir: &std::path::Path,
    never_quiet: Option<&str>,
) -> Vec<std::thread::JoinHandle<()>> {
    play_job_reaching(job, secrets, dir, never_quiet, &[])
}

/// [`play_job`] with the cluster's Service addresses the spec names (`from`) replaced by
/// where they are on this host (`to`), as cluster DNS and the Service's proxy would take
/// the pod there.
pub(crate) fn play_job_reaching(
    job: &Job,
    secrets: &BTreeMap<String, Secret>,
    dir: &std::path::Path,
    never_quiet: Option<&str>,
    services: &[(String, String)],
) -> Vec<std::thread::JoinHandle<()>> {
    let spec = job.spec.as_ref().unwrap();
    let mounts = mounts(job, secrets, dir, &job.metadata.name.clone().unwrap());
    let text = services.iter().fold(
        SecretMount::on_host(&mounts, &env_value(job, secrets, "PQBENCH_RUN_SPEC")),
        |t, (from, to)| t.replace(from, to),
    );
    let mut run: RunSpec = serde_json::from_str(&text).unwrap();
    if let Some(url) = never_quiet {
        crate::invalid_run::make_invalid(&mut run, url);
    }
    let n = spec.completions.unwrap();
    (0..u32::try_from(n).unwrap())
        .map(|i| {
            let mut s = run.clone();
            s.processes.index = i;
            std::thread::spawn(move || {
                if let Err(e) =
                    worker::engine::run_to_files(&s, &worker::engine::RunOptions::default())
                {
                    eprintln!("played worker {} p{i}: {e}", s.run_id);
                }
            })
        })
        .collect()
}

/// Plays the pod of the pre-flight probe Job: `pqbench-worker --probe-env` with the Job's
/// spec (this host's network: the pods share it here), then writes the Job's status as
/// its controller would (`Complete` once the pod succeeded, `Failed` if it did not), which
/// is what the operator waits for. The baselines it wrote, or the error.
pub(crate) async fn play_probe(
    client: &kube::Client,
    ns: &str,
    job: &Job,
    secrets: &BTreeMap<String, Secret>,
    dir: &std::path::Path,
) -> Result<analysis::testbed::Baselines, String> {
    use kube::api::{Api, Patch, PatchParams};
    let pod = job.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    assert_eq!(
        pod.containers[0].args.as_deref().unwrap(),
        ["--probe-env", "PQBENCH_PROBE_SPEC"]
    );
    let mounts = mounts(job, secrets, dir, "probe");
    let spec: run::preflight::ProbeSpec = serde_json::from_str(&SecretMount::on_host(
        &mounts,
        &env_value(job, secrets, "PQBENCH_PROBE_SPEC"),
    ))
    .unwrap();
    let name = job.metadata.name.clone().unwrap();
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let started = serde_json::json!({"status": {"startTime": now(), "active": 1}});
    jobs.patch_status(&name, &PatchParams::default(), &Patch::Merge(&started))
        .await
        .unwrap();
    let taken = worker::testbed::preflight(&spec)
        .await
        .map_err(|e| e.to_string());
    let (type_, reason, succeeded, failed) = match &taken {
        Ok(_) => ("Complete", "CompletionsReached", 1, 0),
        Err(_) => ("Failed", "BackoffLimitExceeded", 0, 1),
    };
    let mut status = serde_json::json!({
        "active": 0, "succeeded": succeeded, "failed": failed,
        "conditions": [{"type": type_, "status": "True", "reason": reason,
                        "message": reason, "lastProbeTime": now(),
                        "lastTransitionTime": now()}]
    });
    if succeeded == 1 {
        status["completionTime"] = now().into();
    }
    jobs.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({ "status": status })),
    )
    .await
    .unwrap();
    taken
}

fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[allow(dead_code, reason = "shared_cluster plays no key service")]
/// A key service pod played as a process: `pqbench-worker --serve-kms-env` with the
/// Deployment's spec and Secret volumes, each port of the pod on a free port of this host.
pub(crate) struct KeyServicePod {
    child: std::process::Child,
    /// (the Service's address in the cluster, where it is on this host) per port.
    pub(crate) services: Vec<(String, String)>,
    log: std::path::PathBuf,
}

#[allow(dead_code, reason = "shared_cluster plays no key service")]
/// Starts the key service Deployment `d`'s pod with `worker` (the `pqbench-worker`
/// binary), its Service `service` in namespace `ns`, and waits until every port listens.
pub(crate) fn play_key_service(
    d: &k8s_openapi::api::apps::v1::Deployment,
    service: &str,
    ns: &str,
    secrets: &BTreeMap<String, Secret>,
    dir: &std::path::Path,
    worker: &std::path::Path,
) -> KeyServicePod {
    use std::io::BufRead as _;
    let pod = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
    let c = &pod.containers[0];
    assert_eq!(
        c.args.as_deref().unwrap(),
        ["--serve-kms-env", run::keyservice::KEY_SERVICE_SPEC_ENV]
    );
    let env = c.env.as_deref().unwrap();
    assert_eq!(env.len(), 1, "the spec is the pod's only variable: {env:?}");
    let mounts = pod_mounts(pod, secrets, dir, "kms");
    let mut spec = run::keyservice::KeyServiceSpec::parse(&SecretMount::on_host(
        &mounts,
        env[0].value.as_deref().unwrap(),
    ))
    .unwrap();
    let mut services = Vec::new();
    for p in &mut spec.ports {
        let host = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        services.push((
            format!("http://{service}.{ns}.svc:{}", p.port),
            format!("http://127.0.0.1:{host}"),
        ));
        p.port = host;
    }
    let log = dir.join("kms.log");
    let mut child = std::process::Command::new(worker)
        .args(c.args.as_deref().unwrap())
        .env(
            run::keyservice::KEY_SERVICE_SPEC_ENV,
            serde_json::to_string(&spec).unwrap(),
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    for _ in &spec.ports {
        let line = lines.next().unwrap().unwrap();
        assert!(line.starts_with("pqbench key service on port"), "{line}");
    }
    // What it prints later (nothing) is not waited for: the pipe's reader goes.
    std::thread::spawn(move || lines.for_each(drop));
    KeyServicePod {
        child,
        services,
        log,
    }
}

/// A test that fails before [`KeyServicePod::stop`] leaves no key service behind.
impl Drop for KeyServicePod {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[allow(dead_code, reason = "shared_cluster plays no key service")]
impl KeyServicePod {
    /// SIGTERM, as the Deployment's deletion sends it; its exit status and its log.
    pub(crate) fn stop(mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = self.child.wait().unwrap();
        (status, std::fs::read_to_string(&self.log).unwrap())
    }
}
