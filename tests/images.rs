//! The container images as a kind or EKS user meets them first (issue 23), built by
//! `make images` and run with podman (`make image-check` runs these tests; they are
//! `#[ignore]`d in `cargo test` because they need the images and root):
//!
//! - the worker image runs one run exactly as the operator's worker Job starts it: the Job
//!   comes from the operator's own builders (`deploy::run_spec`, `deploy::worker_pods`,
//!   `resources::worker_job`) for an external-server campaign pointed at `pqbench serve-s3`
//!   on this host, its pod template is played with podman (`support/podman.rs`: read-only
//!   root, user 65532, no privilege escalation, capabilities dropped, `/tmp` the only
//!   writable mount, the run spec in `PQBENCH_RUN_SPEC`, credentials and recipient keys from
//!   the Secrets the Job names), this test opens the start gate as the operator does
//!   (`ResultsStore::open_gate`), and the run ends valid with its files in the results
//!   bucket;
//! - SIGTERM to that container in its measured window (`podman stop`, the pod's grace
//!   period): it exits 143 well within the grace period and the run is not complete in the
//!   bucket (no `SHA256SUMS`);
//! - the operator image against the test Kubernetes API server with a kubeconfig mounted
//!   read-only: `/healthz`, `/readyz` and `/metrics` answer, it takes the Lease, and
//!   `examples/quick.yaml`, applied as its text, reaches Provisioning with its children
//!   (Secrets, MinIO's Service and StatefulSet) created.

#![allow(clippy::unwrap_used, reason = "tests")]

#[path = "support/podman.rs"]
mod podman;

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt as _;
use kube::api::ObjectMeta;
use operator::resources::Owner;
use operator::results::ResultsStore;
use operator::{BenchmarkCampaign, deploy, resources};
use podman::{PodContext, PodRun, image, pod_run, podman, require_images};

/// `pqbench serve-s3` as a separate process with the campaign's two buckets.
struct Server {
    child: Child,
    endpoint: String,
    access_key: String,
    secret_key: String,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let env_file = dir.path().join("s3.env");
        let child = Command::new(env!("CARGO_BIN_EXE_pqbench"))
            .args(["serve-s3", "--port", "0", "--bucket", "pqbench-bench"])
            .args(["--bucket", deploy::DEFAULT_RESULTS_BUCKET, "--dir"])
            .arg(dir.path().join("data"))
            .arg("--env-file")
            .arg(&env_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let until = Instant::now() + Duration::from_secs(30);
        while !env_file.exists() {
            assert!(Instant::now() < until, "serve-s3 never wrote its env file");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(100));
        let text = std::fs::read_to_string(&env_file).unwrap();
        let var = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export {name}=")))
                .unwrap()
                .to_owned()
        };
        Self {
            child,
            endpoint: var("AWS_ENDPOINT_URL"),
            access_key: var("AWS_ACCESS_KEY_ID"),
            secret_key: var("AWS_SECRET_ACCESS_KEY"),
            _dir: dir,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A one-run campaign against `server` (an external server, as a campaign names S3 that
/// the operator does not deploy), as the API server would hold it.
fn campaign(server: &Server, measured: &str) -> BenchmarkCampaign {
    let yaml = format!(
        "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {{name: img, namespace: images, uid: 6f1f3f5e-0d6b-4c4e-9b57-000000000023}}
spec:
  modes: [ml-kem-768]
  baseline: ml-kem-768
  cells:
    - {{operation: [get], objectSize: [64KiB], concurrency: [2]}}
  repetitions: 1
  warmup: 1s
  measured: {measured}
  fixtures: 8
  seed: 23
  pause: {{enabled: false}}
  server:
    external:
      endpoint: {}
      region: us-east-1
      bucket: pqbench-bench
      credentialsSecret: s3-under-test
",
        server.endpoint
    );
    serde_yaml_ng::from_str(&yaml).unwrap()
}

fn secret(name: &str, ns: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(ns.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        ),
        ..Secret::default()
    }
}

/// The worker Job of the campaign's first run, built by the operator's own code, and its
/// pod as podman runs it, with the Secrets the operator would have made (recipient keys)
/// or the user would have (the external server's credentials).
struct PlayedRun {
    run: PodRun,
    run_id: String,
    results: ResultsStore,
    /// The pod's Secret volumes (outside the working tree).
    _volumes: tempfile::TempDir,
}

fn played_run(server: &Server, c: &BenchmarkCampaign) -> PlayedRun {
    let owner = Owner::of(c).unwrap();
    let m = deploy::manifest(c);
    let plan = campaign::design::plan(&m);
    let spec = deploy::run_spec(&m, &plan, 0, &owner).unwrap();
    let key_types = deploy::key_types(&plan);
    let worker_image = image("pqbench-worker");
    let (pods, placement) = deploy::worker_pods(
        &worker_image,
        c,
        &owner,
        &key_types,
        Duration::from_secs(600),
    )
    .unwrap();
    let name = operator::step::job_name(&owner.name, 0, 0);
    let job = resources::worker_job(&owner, &name, &spec, 0, 0, &pods, placement).unwrap();
    let keys: Vec<_> = key_types
        .iter()
        .map(|&kt| {
            let sk = envelope::SecretKey::generate(kt, &mut envelope::os_rng()).unwrap();
            (kt, sk.to_file_json().unwrap())
        })
        .collect();
    let ns = owner.namespace.clone();
    let secrets: BTreeMap<String, Secret> = [
        resources::keys_secret(&owner, &keys),
        secret(
            "s3-under-test",
            &ns,
            &[
                (resources::ACCESS_KEY, &server.access_key),
                (resources::SECRET_KEY, &server.secret_key),
            ],
        ),
    ]
    .into_iter()
    .map(|s| (s.metadata.name.clone().unwrap(), s))
    .collect();
    let template = job.spec.unwrap().template;
    let pod = template.spec.unwrap();
    let volumes = tempfile::tempdir().unwrap();
    let ctx = PodContext {
        name: format!("{name}-0-{}", std::process::id()),
        namespace: ns,
        secrets,
        completion_index: Some(0),
        volumes_root: Some(volumes.path().to_owned()),
        ..PodContext::default()
    };
    let run = pod_run(&pod, &pod.containers[0], &ctx).unwrap();
    let loc = deploy::results_location(&owner, &c.spec.campaign);
    let settings = s3::S3Settings::new(&server.endpoint, &server.access_key, &server.secret_key);
    PlayedRun {
        run,
        run_id: spec.run_id,
        results: ResultsStore::new(&settings, &loc.bucket, &loc.prefix).unwrap(),
        _volumes: volumes,
    }
}

/// Waits until the run's process is ready in the bucket, then opens the gate 1 s ahead,
/// as the operator does; returns the start instant.
async fn open_gate_when_ready(p: &PlayedRun, child: &mut Child) -> SystemTime {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let view = p.results.observe(1).await.unwrap();
        if view.ready.get(&p.run_id).copied() == Some(1) {
            break;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!(
                "the worker container ended before it was ready ({st}):\n{}",
                output(child)
            );
        }
        assert!(Instant::now() < until, "the worker never got ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let at = SystemTime::now() + Duration::from_secs(1);
    p.results
        .open_gate(&p.run_id, &humantime::format_rfc3339_millis(at).to_string())
        .await
        .unwrap();
    at
}

fn output(child: &mut Child) -> String {
    let mut s = String::new();
    if let Some(o) = child.stdout.as_mut() {
        let _ = o.read_to_string(&mut s);
    }
    if let Some(e) = child.stderr.as_mut() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

/// `podman inspect` of a running container: (user, read-only root, no-new-privileges,
/// dropped capabilities).
fn inspect(name: &str) -> serde_json::Value {
    let o = podman().args(["inspect", name]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v[0].clone()
}

fn assert_hardened(name: &str) {
    let c = inspect(name);
    assert_eq!(c["Config"]["User"], "65532:65532", "{c}");
    assert_eq!(c["HostConfig"]["ReadonlyRootfs"], true, "{c}");
    let opts = c["HostConfig"]["SecurityOpt"].to_string();
    assert!(opts.contains("no-new-privileges"), "{opts}");
    assert_eq!(
        c["EffectiveCaps"].as_array().map_or(0, Vec::len),
        0,
        "no capabilities: {}",
        c["EffectiveCaps"]
    );
    assert_eq!(c["HostConfig"]["NetworkMode"], "host");
}

#[test]
#[ignore = "needs podman and the images: make image-check"]
fn the_worker_image_runs_a_valid_run_as_the_operators_job_starts_it() {
    require_images();
    let server = Server::start();
    let c = campaign(&server, "3s");
    let p = played_run(&server, &c);
    // Nothing secret is on podman's command line.
    let args = p.run.args.join(" ");
    assert!(!args.contains(&server.secret_key), "{args}");
    assert!(p.run.env("PQBENCH_RUN_SPEC").is_some());
    let mut child = p.run.spawn();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(open_gate_when_ready(&p, &mut child));
    assert_hardened(&p.run.name);
    let status = child.wait().unwrap();
    let out = output(&mut child);
    assert!(status.success(), "the run was not valid ({status}):\n{out}");
    let view = rt.block_on(p.results.observe(1)).unwrap();
    assert!(view.completed.contains(&p.run_id), "{view:?}\n{out}");
}

#[test]
#[ignore = "needs podman and the images: make image-check"]
fn sigterm_stops_the_worker_container_within_its_grace_period_and_the_run_stays_incomplete() {
    require_images();
    let server = Server::start();
    let c = campaign(&server, "60s");
    let p = played_run(&server, &c);
    let mut child = p.run.spawn();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let at = rt.block_on(open_gate_when_ready(&p, &mut child));
    // Into the measured window (1 s warm-up).
    let measuring = at + Duration::from_secs(3);
    std::thread::sleep(
        measuring
            .duration_since(SystemTime::now())
            .unwrap_or_default(),
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "{}",
        output(&mut child)
    );
    let sent = Instant::now();
    p.run.stop();
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    let out = output(&mut child);
    assert_eq!(status.code(), Some(143), "{out}");
    assert!(
        took < Duration::from_secs(5) && took < p.run.grace,
        "stopped {took:?} after SIGTERM; grace period {:?}",
        p.run.grace
    );
    assert!(out.contains("stopped by SIGTERM"), "{out}");
    let view = rt.block_on(p.results.observe(1)).unwrap();
    assert!(!view.completed.contains(&p.run_id), "{view:?}");
    assert_eq!(view.started.len(), 1, "the gate was open: {view:?}");
}

fn http_get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
    Some((code, body))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[path = "../operator/tests/support/k8s.rs"]
mod k8s;

#[test]
#[ignore = "needs podman, the images and the test API server: make image-check"]
fn the_operator_image_serves_health_and_provisions_the_quick_campaign() {
    require_images();
    if k8s::client_or_skip().is_none() {
        panic!("the operator image check needs the test API server (PQBENCH_K8S_SKIP is set)");
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt.block_on(kube::Client::try_default()).unwrap();
    rt.block_on(k8s::install_crd(&client));
    let ns = k8s::namespace("img");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = podman::self_contained_kubeconfig(dir.path());
    let metrics = format!("127.0.0.1:{}", free_port());
    let name = format!("pqbench-operator-{}", std::process::id());
    let mut child = podman::operator_container(&name, &ns, &kubeconfig, &metrics, &[], None)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stop = |child: &mut Child| {
        let _ = podman()
            .args(["stop", "--time", "10", &name])
            .stdout(Stdio::null())
            .status();
        let _ = child.wait();
    };
    let until = Instant::now() + Duration::from_secs(60);
    let health = loop {
        if let Some(r) = http_get(&metrics, "/healthz") {
            break r;
        }
        if child.try_wait().unwrap().is_some() || Instant::now() > until {
            stop(&mut child);
            panic!(
                "the operator never served /healthz:\n{}",
                output(&mut child)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(health, (200, "ok\n".to_owned()));
    assert_eq!(
        http_get(&metrics, "/readyz"),
        Some((200, "ready\n".to_owned()))
    );
    assert_hardened(&name);

    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quick.yaml"))
            .unwrap();
    let outcome = rt.block_on(async {
        use k8s_openapi::api::apps::v1::StatefulSet;
        use k8s_openapi::api::core::v1::Service;
        use kube::Api;
        let created = k8s::apply(&client, &ns, &text).await.unwrap().name_any();
        let camps: Api<BenchmarkCampaign> = Api::namespaced(client.clone(), &ns);
        let until = Instant::now() + Duration::from_secs(90);
        loop {
            let c = camps.get(&created).await.unwrap();
            let phase = c.status.as_ref().map(|s| s.phase);
            let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
            let svcs: Api<Service> = Api::namespaced(client.clone(), &ns);
            let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
            let owner = Owner::of(&c).unwrap();
            let children = sets.get_opt(&owner.minio()).await.unwrap().is_some()
                && svcs.get_opt(&owner.minio()).await.unwrap().is_some()
                && secrets
                    .get_opt(&owner.credentials_secret())
                    .await
                    .unwrap()
                    .is_some()
                && secrets
                    .get_opt(&owner.keys_secret())
                    .await
                    .unwrap()
                    .is_some();
            if phase == Some(operator::Phase::Provisioning) && children {
                break Ok(c);
            }
            if Instant::now() > until {
                break Err(format!("phase {phase:?}, children made: {children}"));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
    let (code, body) = http_get(&metrics, "/metrics").unwrap();
    stop(&mut child);
    let logs = output(&mut child);
    let c = outcome.unwrap_or_else(|e| panic!("{e}\noperator:\n{logs}"));
    assert_eq!(code, 200);
    assert!(body.contains("pqbench_operator_leader 1"), "{body}");
    assert!(
        c.status.unwrap().prereg_hash.is_some(),
        "the pre-registration is recorded"
    );
}
