//! The operator killed for real (issue 22): the `pqbench-operator` binary, two replicas
//! holding the Lease, against the test Kubernetes API server, with a campaign's worker and
//! analysis pods played as real `pqbench-worker` processes, and the leader killed with
//! SIGKILL at random instants of each stage of the campaign, then started again:
//!
//! - while provisioning;
//! - while a run's Job is active (its workers preparing, waiting at the gate or measuring);
//! - between runs (a run's files just uploaded, the next Job not yet made);
//! - while analysing (the analysis Job made; its pod is started once the first kill of the
//!   analysis has landed, since an analysis can be over before a kill's delay is);
//! - once, between runs, the leader stays down: the standby must take the Lease over and
//!   carry the campaign on, and the old leader comes back as the standby.
//!
//! The campaign must reach `Succeeded` with every planned run carried out exactly once
//! (one Job per run, its first attempt, each worker process exiting as a run that was
//! carried out does), no run failed or retried, every run's files in the results bucket and
//! no other run's, status, events and the report agreeing, and no secret of the campaign
//! in any of it (operator logs, worker logs, status, events, Jobs, the results bucket).
//!
//! The test plays what a cluster does around the operator (test code, not product):
//! - **the Job controller and the kubelet**: each Job's pods are started as its pod template
//!   says (the container's args and environment resolved as a kubelet does, Secrets by
//!   reference, `JOB_COMPLETION_INDEX`), as processes of the `pqbench-worker` binary; the
//!   emptyDir `/tmp` is a directory of its own per pod (`TMPDIR`); the pods share this
//!   host's network, so the worker's metrics port is any free one; exits go into the Job's
//!   status as the Job controller writes it; a deleted Job's pods get SIGTERM;
//! - **the S3 server** is the embedded one, in this process (an external-server campaign).
//!
//! `PQBENCH_KILL_SEED` replays a draw of instants (the test prints its seed).
#![allow(clippy::unwrap_used, reason = "tests")]

#[path = "support/job_controller.rs"]
mod job_controller;
#[path = "support/k8s.rs"]
mod k8s;
#[path = "../../tests/support/pod_env.rs"]
mod pod_env;
#[path = "support/worker_bin.rs"]
mod worker_bin;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use job_controller::JobTally;
use k8s::{client_or_skip, install_crd, namespace};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt as _};
use operator::{BenchmarkCampaign, Phase};
use pod_env::{PodContext, SecretMount, env_of, secret_mounts};
use serde_json::json;

/// The campaign: 2 modes × 3 repetitions = 6 runs of 2 processes, on the embedded server,
/// each run once (`runRetries: 0`).
fn campaign_yaml(endpoint: &str) -> String {
    format!(
        r"apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata:
  name: killed
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells:
    - operation: [get]
      objectSize: [64KiB]
      loop: {{type: open, rates: [20], threads: 2}}
  repetitions: 3
  warmup: 1s
  measured: 2s
  drain: 1s
  fixtures: 8
  seed: 11
  pause:
    enabled: false
  server:
    external:
      endpoint: {endpoint}
      bucket: under-test
      credentialsSecret: s3-keys
  clients:
    processes: 2
  deadlines:
    run: 120s
  # Each run once: a debug-built worker on a loaded machine may fail a run's validity
  # checks, and an invalid run is run again; this test is about the operator's kills
  # (operator/tests/controller.rs has a run made invalid and run again).
  runRetries: 0
"
    )
}

/// splitmix64: the draw of kill instants, replayable from its seed.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A duration drawn uniformly from `lo..hi` milliseconds.
    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.next() % (hi - lo))
    }
}

/// One replica of the operator: the real binary, its output appended to one log across
/// its restarts.
struct Replica {
    identity: String,
    ns: String,
    log: PathBuf,
    child: Option<Child>,
    starts: u32,
}

impl Replica {
    fn new(identity: &str, ns: &str, dir: &Path) -> Self {
        Self {
            identity: identity.to_owned(),
            ns: ns.to_owned(),
            log: dir.join(format!("{identity}.log")),
            child: None,
            starts: 0,
        }
    }

    fn start(&mut self) {
        assert!(self.child.is_none(), "{} is running", self.identity);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_pqbench-operator"))
            // The Deployment's environment: the pod's name and namespace (downward API).
            .env("POD_NAME", &self.identity)
            .env("POD_NAMESPACE", &self.ns)
            .env("PQBENCH_WATCH_NAMESPACE", &self.ns)
            .env("PQBENCH_METRICS_ADDR", "127.0.0.1:0")
            .env(
                "PQBENCH_WORKER_IMAGE",
                "ghcr.io/pqbench/pqbench-worker:test",
            )
            .env("RUST_LOG", "info")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        self.starts += 1;
    }

    /// SIGKILL, and the process reaped.
    fn kill9(&mut self) {
        let mut c = self.child.take().expect("a running replica");
        c.kill().unwrap();
        let st = c.wait().unwrap();
        assert!(
            st.code().is_none(),
            "{} had exited on its own before the kill ({st}); its log: {}",
            self.identity,
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    /// Fails the test if the replica exited on its own.
    fn check_alive(&mut self) {
        if let Some(c) = &mut self.child
            && let Some(st) = c.try_wait().unwrap()
        {
            panic!(
                "operator {} exited on its own ({st}); its log:\n{}",
                self.identity,
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One pod played as a `pqbench-worker` process.
struct Pod {
    index: u32,
    child: Child,
    log: PathBuf,
}

/// A Job as its controller tracks it.
struct PlayedJob {
    uid: String,
    pods: Vec<Pod>,
    tally: JobTally,
}

/// What happened during one pass of the harness.
#[derive(Default)]
struct Seen {
    /// Worker Jobs whose pods were started.
    started: Vec<String>,
    /// Runs whose every process's checksums have just reached the results bucket (the
    /// instant the operator may move on; the processes exit a little later).
    completed: usize,
    /// The analysis Job's pod started.
    analysis: bool,
}

/// The Job controller and the kubelet, for worker and analysis Jobs.
struct Kubelet {
    client: Client,
    ns: String,
    worker: PathBuf,
    dir: PathBuf,
    jobs: BTreeMap<String, PlayedJob>,
    /// Every Job played, in order: (name, uid, component).
    played: Vec<(String, String, String)>,
    /// Every pod's exit: (pod, exit code or signal).
    exits: Vec<(String, String)>,
    /// Pods of deleted Jobs, stopping.
    stopping: Vec<Child>,
    /// Every pod's log.
    logs: Vec<PathBuf>,
}

impl Kubelet {
    async fn secrets(&self) -> BTreeMap<String, Secret> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.ns);
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|s| (s.name_any(), s))
            .collect()
    }

    /// Starts pod `index` of `job` as its template says.
    async fn start_pod(&mut self, job: &Job, index: u32, indexed: bool) -> Pod {
        let name = job.name_any();
        let pod = job.spec.clone().unwrap().template.spec.unwrap();
        let c = &pod.containers[0];
        let pod_name = format!("{name}-{index}-{}", self.logs.len());
        let ctx = PodContext {
            name: pod_name.clone(),
            namespace: self.ns.clone(),
            secrets: self.secrets().await,
            completion_index: indexed.then_some(index),
            ..PodContext::default()
        };
        let env = env_of(c, &ctx).unwrap_or_else(|e| panic!("Job {name}: {e}"));
        // Its Secret volumes, written as the kubelet writes them; without a mount
        // namespace, the paths in the pod's environment name their directories here.
        let mounts = secret_mounts(&pod, c, &ctx, &self.dir.join("volumes"), false)
            .unwrap_or_else(|e| panic!("Job {name}: {e}"));
        let env: Vec<(String, String)> = env
            .into_iter()
            .map(|(k, v)| (k, SecretMount::on_host(&mounts, &v)))
            .collect();
        // The pod's emptyDir /tmp.
        let tmp = self.dir.join("pods").join(&pod_name);
        std::fs::create_dir_all(&tmp).unwrap();
        let mut args = c.args.clone().unwrap_or_default();
        // Pods share this host's network here: any free port for the metrics.
        if let Some(i) = args.iter().position(|a| a == "--metrics-addr") {
            args[i + 1] = "127.0.0.1:0".into();
        }
        let log = self.dir.join(format!("{pod_name}.log"));
        let f = std::fs::File::create(&log).unwrap();
        let child = Command::new(&self.worker)
            .args(&args)
            .env_clear()
            .envs(env)
            .env("TMPDIR", &tmp)
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap();
        self.logs.push(log.clone());
        Pod { index, child, log }
    }

    /// One pass: pods for new Jobs, exits into the Jobs' status, deleted Jobs' pods
    /// stopped. With `hold_analysis`, the analysis Job's pod is not started yet: the
    /// analysis can take less time than a kill's delay, and the campaign stays in
    /// `Analyzing` until its kill has landed (as provisioning waits for the S3 server).
    async fn tick(&mut self, hold_analysis: bool) -> Seen {
        let mut seen = Seen::default();
        let api: Api<Job> = Api::namespaced(self.client.clone(), &self.ns);
        let jobs = api.list(&ListParams::default()).await.unwrap().items;
        let live: BTreeMap<String, String> = jobs
            .iter()
            .map(|j| (j.name_any(), j.uid().unwrap_or_default()))
            .collect();
        let gone: Vec<String> = self
            .jobs
            .iter()
            .filter(|(n, p)| live.get(*n) != Some(&p.uid))
            .map(|(n, _)| n.clone())
            .collect();
        for n in gone {
            for pod in self.jobs.remove(&n).unwrap().pods {
                // Deleted: SIGTERM (a worker stops within its grace period).
                let _ = Command::new("kill")
                    .args(["-TERM", &pod.child.id().to_string()])
                    .status();
                self.stopping.push(pod.child);
            }
        }
        for job in jobs {
            let name = job.name_any();
            let component = job
                .labels()
                .get("app.kubernetes.io/component")
                .cloned()
                .unwrap_or_default();
            if !self.jobs.contains_key(&name) {
                if component == "analysis" && hold_analysis {
                    continue;
                }
                let tally = JobTally::of(job.spec.as_ref().unwrap());
                let started = tally.started();
                let mut pods = Vec::new();
                for i in 0..tally.completions {
                    pods.push(self.start_pod(&job, i, tally.indexed).await);
                }
                self.jobs.insert(
                    name.clone(),
                    PlayedJob {
                        uid: job.uid().unwrap_or_default(),
                        pods,
                        tally,
                    },
                );
                self.played.push((
                    name.clone(),
                    job.uid().unwrap_or_default(),
                    component.clone(),
                ));
                match component.as_str() {
                    "analysis" => seen.analysis = true,
                    "worker" => seen.started.push(name.clone()),
                    _ => {}
                }
                api.patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({ "status": started })),
                )
                .await
                .unwrap();
                continue;
            }
            if !self.jobs[&name].tally.finished {
                self.settle(&api, &job).await;
            }
        }
        self.stopping
            .retain_mut(|c| c.try_wait().ok().flatten().is_none());
        seen
    }

    /// Collects a Job's exited pods, retries as the Job allows, and writes its status.
    async fn settle(&mut self, api: &Api<Job>, job: &Job) {
        let name = job.name_any();
        let mut exited = Vec::new();
        {
            let played = self.jobs.get_mut(&name).unwrap();
            let mut i = 0;
            while i < played.pods.len() {
                if let Some(st) = played.pods[i].child.try_wait().unwrap() {
                    exited.push((played.pods.remove(i), st));
                } else {
                    i += 1;
                }
            }
        }
        if exited.is_empty() {
            return;
        }
        let mut retry = Vec::new();
        for (pod, st) in exited {
            self.exits.push((
                pod.log.file_stem().unwrap().to_string_lossy().into_owned(),
                st.to_string(),
            ));
            let played = self.jobs.get_mut(&name).unwrap();
            if played.tally.exited(pod.index, st.success()) {
                retry.push(pod.index);
            }
        }
        for i in retry {
            let pod = self.start_pod(job, i, false).await;
            self.jobs.get_mut(&name).unwrap().pods.push(pod);
        }
        let played = self.jobs.get_mut(&name).unwrap();
        let status = played.tally.status(played.pods.len(), false);
        // The operator may have deleted the Job meanwhile.
        let _ = api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await;
    }

    /// Stops every pod still running.
    fn shutdown(&mut self) {
        for (_, mut j) in std::mem::take(&mut self.jobs) {
            for p in &mut j.pods {
                let _ = p.child.kill();
                let _ = p.child.wait();
            }
        }
        for mut c in std::mem::take(&mut self.stopping) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Kubelet {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A stage of the campaign at which the leader is killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Provisioning,
    JobActive,
    BetweenRuns,
    Analysing,
}

/// A kill to come: when, at which stage, and whether the leader stays down until the
/// standby has taken the Lease over.
#[derive(Clone, Copy, Debug)]
struct Kill {
    at: Instant,
    stage: Stage,
    takeover: bool,
}

/// The kills of the harness: when each is due (armed by what the campaign and its pods
/// do), the replica down and when it comes back, and what each kill met.
struct Killer {
    draw: Draw,
    applied: Instant,
    pending: Vec<Kill>,
    /// Stage, the phase status showed, and what it said.
    kills: Vec<(Stage, Phase, String)>,
    /// A killed replica and when it starts again (`None`: once the other holds the Lease).
    down: Option<(usize, Option<Instant>)>,
    killed_at: Instant,
    /// Who lost the Lease to whom, and how long it took.
    takeover: Option<(String, String, Duration)>,
    worker_jobs: usize,
    completed_runs: usize,
    provisioning_armed: bool,
    analysing_armed: bool,
}

/// The one leader kept down until the standby takes over: after the fourth run.
const TAKEOVER_AFTER: usize = 3;
/// The campaign's runs.
const RUNS: usize = 6;

impl Killer {
    fn new(seed: u64, applied: Instant) -> Self {
        Self {
            draw: Draw(seed),
            applied,
            pending: Vec::new(),
            kills: Vec::new(),
            down: None,
            killed_at: applied,
            takeover: None,
            worker_jobs: 0,
            completed_runs: 0,
            provisioning_armed: false,
            analysing_armed: false,
        }
    }

    fn killed_in(&self, stage: Stage) -> bool {
        self.kills.iter().any(|k| k.0 == stage)
    }

    fn push(&mut self, stage: Stage, lo_ms: u64, hi_ms: u64, takeover: bool) {
        let at = Instant::now() + self.draw.millis(lo_ms, hi_ms);
        self.pending.push(Kill {
            at,
            stage,
            takeover,
        });
    }

    /// Arms the kills what just happened calls for: one while provisioning; while every
    /// other run's Job is active; between runs, just after the others' files reached the
    /// bucket (once kept down for the takeover); two in the analysis.
    fn arm(&mut self, st: &operator::CampaignStatus, seen: &Seen) {
        if st.phase == Phase::Provisioning && !self.provisioning_armed {
            self.provisioning_armed = true;
            self.push(Stage::Provisioning, 0, 2000, false);
        }
        for _ in &seen.started {
            if self.worker_jobs.is_multiple_of(2) {
                self.push(Stage::JobActive, 200, 6000, false);
            }
            self.worker_jobs += 1;
        }
        for _ in 0..seen.completed {
            // Not after the last run: that is the analysis's turn, and a replica down then
            // would hold its kills back until the analysis may be over.
            let last = self.completed_runs + 1 == RUNS;
            if !self.completed_runs.is_multiple_of(2) && !last {
                let takeover = self.completed_runs == TAKEOVER_AFTER;
                self.push(Stage::BetweenRuns, 0, 300, takeover);
            }
            self.completed_runs += 1;
        }
        if seen.analysis {
            self.push(Stage::Analysing, 0, 500, false);
        }
        if st.phase == Phase::Analyzing && !self.analysing_armed {
            self.analysing_armed = true;
            self.push(Stage::Analysing, 0, 300, false);
        }
    }

    /// Brings a replica that is down back when its time has come, or fires the next kill
    /// that is due while both are up.
    async fn step(
        &mut self,
        replicas: &mut [Replica; 2],
        leases: &Api<Lease>,
        api: &Api<BenchmarkCampaign>,
    ) {
        match self.down {
            Some((i, Some(at))) if Instant::now() >= at => {
                replicas[i].start();
                self.down = None;
            }
            Some((i, None)) => {
                let other = replicas[1 - i].identity.clone();
                if holder(leases).await.as_deref() == Some(other.as_str()) {
                    let lost = replicas[i].identity.clone();
                    self.takeover = Some((lost, other, self.killed_at.elapsed()));
                    replicas[i].start();
                    self.down = None;
                }
            }
            _ => {}
        }
        self.pending.sort_by_key(|k| k.at);
        if self.down.is_some() || self.pending.first().is_none_or(|k| Instant::now() < k.at) {
            return;
        }
        let st = api.get("killed").await.unwrap().status.unwrap_or_default();
        if matches!(st.phase, Phase::Succeeded | Phase::Failed) {
            return;
        }
        let k = self.pending.remove(0);
        let leader = holder(leases).await.expect("a Lease holder");
        let i = replicas.iter().position(|r| r.identity == leader).unwrap();
        replicas[i].kill9();
        self.killed_at = Instant::now();
        let when = self.applied.elapsed().as_secs_f64();
        let what = format!(
            "{leader} at {when:.1} s: {}",
            st.message.unwrap_or_default()
        );
        self.kills.push((k.stage, st.phase, what));
        let back = (!k.takeover).then(|| Instant::now() + self.draw.millis(0, 1000));
        self.down = Some((i, back));
    }

    /// Every kill came in the phase meant, every stage had one, and the standby took the
    /// Lease over in time; the two leaders, in turn.
    async fn check(&self, leases: &Api<Lease>) -> (String, String) {
        eprintln!("kills ({}):", self.kills.len());
        for (stage, phase, what) in &self.kills {
            eprintln!("  {stage:?} ({phase:?}): {what}");
        }
        eprintln!("Lease takeover: {:?}", self.takeover);
        for (stage, phase, what) in &self.kills {
            let expected = match stage {
                Stage::Provisioning => [Phase::Provisioning].as_slice(),
                Stage::JobActive => &[Phase::Running],
                Stage::BetweenRuns => &[Phase::Running],
                Stage::Analysing => &[Phase::Analyzing],
            };
            assert!(
                expected.contains(phase),
                "a kill meant for {stage:?} came in {phase:?}: {what}"
            );
        }
        let stages: BTreeSet<Stage> = self.kills.iter().map(|(s, _, _)| *s).collect();
        assert_eq!(
            stages,
            BTreeSet::from([
                Stage::Provisioning,
                Stage::JobActive,
                Stage::BetweenRuns,
                Stage::Analysing
            ]),
            "{:?}",
            self.kills
        );
        let (from, to, took) = self
            .takeover
            .clone()
            .expect("the standby took the Lease over");
        assert_ne!(from, to);
        let lease = leases.get("pqbench-operator").await.unwrap();
        assert!(
            lease.spec.unwrap().lease_transitions.unwrap_or(0) >= 1,
            "the Lease records the takeover"
        );
        assert!(
            took <= operator::lease::DURATION + Duration::from_secs(10),
            "the takeover took {took:?}"
        );
        (from, to)
    }
}

/// The Lease's holder, if any.
async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt("pqbench-operator")
        .await
        .ok()
        .flatten()?
        .spec?
        .holder_identity
}

/// Every byte string that would show a secret: the S3 secret access key, and each
/// recipient key file of the keys Secret (its text, its key in base64 and hex, and raw).
fn secret_forms(secrets: &BTreeMap<String, Secret>, s3_secret: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![(
        "S3 secret access key".to_owned(),
        s3_secret.as_bytes().to_vec(),
    )];
    let keys = &secrets["killed-keys"];
    for (name, v) in keys.data.as_ref().unwrap() {
        let file: serde_json::Value = serde_json::from_slice(&v.0).unwrap();
        let b64 = file["key"].as_str().unwrap().to_owned();
        // A ByteString's JSON is its standard base64: decode through it.
        let raw: k8s_openapi::ByteString =
            serde_json::from_value(serde_json::Value::String(b64.clone())).unwrap();
        assert!(raw.0.len() >= 16, "{name}: {} bytes", raw.0.len());
        out.push((format!("{name} key (base64)"), b64.into_bytes()));
        out.push((
            format!("{name} key (hex)"),
            hex::encode(&raw.0).into_bytes(),
        ));
        out.push((format!("{name} key (raw)"), raw.0));
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The runs under the results prefix whose two processes have uploaded their checksums.
async fn complete_runs(
    store: &s3::aws_sdk_s3::Client,
    loc: &operator::api::ResultsLocation,
) -> BTreeSet<String> {
    let Ok(page) = store
        .list_objects_v2()
        .bucket(&loc.bucket)
        .prefix(&loc.prefix)
        .send()
        .await
    else {
        // The bucket is not made yet.
        return BTreeSet::new();
    };
    let mut sums: BTreeMap<String, usize> = BTreeMap::new();
    for k in page.contents().iter().filter_map(|o| o.key()) {
        if let Some(run) = k
            .strip_prefix(&loc.prefix)
            .and_then(|r| r.strip_suffix("/SHA256SUMS"))
            .and_then(|r| r.split_once('/'))
        {
            *sums.entry(run.0.to_owned()).or_default() += 1;
        }
    }
    sums.into_iter()
        .filter(|(_, n)| *n == 2)
        .map(|(r, _)| r)
        .collect()
}

/// Every object under the campaign's results prefix, with its bytes.
async fn bucket_objects(
    s3: &s3::EmbeddedS3,
    loc: &operator::api::ResultsLocation,
) -> Vec<(String, Vec<u8>)> {
    let store = s3.settings().client().unwrap();
    let mut keys = Vec::new();
    let mut token = None;
    loop {
        let page = store
            .list_objects_v2()
            .bucket(&loc.bucket)
            .prefix(&loc.prefix)
            .set_continuation_token(token)
            .send()
            .await
            .unwrap();
        keys.extend(
            page.contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_owned)),
        );
        token = page.next_continuation_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    let mut objects = Vec::new();
    for k in keys {
        let o = store
            .get_object()
            .bucket(&loc.bucket)
            .key(&k)
            .send()
            .await
            .unwrap();
        objects.push((k, o.body.collect().await.unwrap().into_bytes().to_vec()));
    }
    objects
}

/// Every process of every planned run uploaded its checksums, no other run did, and the
/// report is the plan's and holds the verdicts status shows.
fn check_bucket(
    objects: &[(String, Vec<u8>)],
    loc: &operator::api::ResultsLocation,
    plan: &campaign::Plan,
    st: &operator::api::CampaignStatus,
) {
    let sums: BTreeSet<&str> = objects
        .iter()
        .filter_map(|(k, _)| k.strip_prefix(&loc.prefix)?.strip_suffix("/SHA256SUMS"))
        .collect();
    let want: BTreeSet<String> = plan
        .runs
        .iter()
        .flat_map(|r| (0..2).map(move |i| format!("{}/p{i}", r.run_id)))
        .collect();
    assert_eq!(
        sums,
        want.iter().map(String::as_str).collect(),
        "every process of every run uploaded its checksums, and nothing else did"
    );
    let report = &objects
        .iter()
        .find(|(k, _)| *k == format!("{}report.json", loc.prefix))
        .expect("the report in the results bucket")
        .1;
    let json: serde_json::Value = serde_json::from_slice(report).unwrap();
    assert_eq!(json["prereg_hash"], plan.prereg_hash);
    let analysis: analysis::Report = serde_json::from_slice(report).unwrap();
    assert_eq!(st.verdicts, run::verdicts::verdict_rows(&analysis));
    // The probe's baselines, as the report read them.
    let baselines = &objects
        .iter()
        .find(|(k, _)| *k == format!("{}baselines.json", loc.prefix))
        .expect("the pre-flight probe's baselines in the results bucket")
        .1;
    let b: analysis::testbed::Baselines = serde_json::from_slice(baselines).unwrap();
    assert_eq!(analysis.config.baselines, Some(b));
}

/// Each run started and completed at most once in the events (an event is lost when the
/// operator dies between its status write and the event; it is never repeated), none
/// retried or failed, and the events come from both leaders in turn.
fn check_events(evs: &[Event], plan: &campaign::Plan, leaders: &BTreeSet<String>) {
    let mut started: BTreeMap<String, usize> = BTreeMap::new();
    let mut completed: BTreeMap<String, usize> = BTreeMap::new();
    let mut reporters = BTreeSet::new();
    for e in evs {
        let reason = e.reason.clone().unwrap_or_default();
        let note = e.note.clone().unwrap_or_default();
        assert!(
            !matches!(reason.as_str(), "RunRetried" | "RunFailed"),
            "{reason}: {note}"
        );
        reporters.extend(e.reporting_instance.clone());
        let run = plan
            .runs
            .iter()
            .find(|r| note.contains(&format!("run {} ", r.run_id)));
        match (reason.as_str(), run) {
            ("RunStarted", Some(r)) => *started.entry(r.run_id.clone()).or_default() += 1,
            ("RunCompleted", Some(r)) => *completed.entry(r.run_id.clone()).or_default() += 1,
            ("RunStarted" | "RunCompleted", None) => {
                panic!("an event names no planned run: {note}")
            }
            _ => {}
        }
    }
    assert!(
        started.values().chain(completed.values()).all(|&n| n == 1),
        "started {started:?}, completed {completed:?}"
    );
    assert_eq!(&reporters, leaders, "events come from both leaders in turn");
    eprintln!(
        "events: {} runs with their start event, {} with their completion event, of {}",
        started.len(),
        completed.len(),
        plan.runs.len()
    );
}

/// Searches `outputs` for every form of every secret of the campaign, after checking that
/// the search finds them where they are stored.
fn search_secrets(
    secrets: &BTreeMap<String, Secret>,
    s3_secret: &str,
    outputs: &[(String, Vec<u8>)],
) {
    let forms = secret_forms(secrets, s3_secret);
    // The search finds each secret in the form it is stored in (so that finding none
    // elsewhere means it is absent).
    let stored: Vec<u8> = secrets
        .values()
        .flat_map(|s| s.data.iter().flat_map(|d| d.values()))
        .flat_map(|v| v.0.iter().copied().chain([0]))
        .collect();
    for (what, form) in &forms {
        if !what.ends_with("(hex)") && !what.ends_with("(raw)") {
            assert!(contains(&stored, form), "{what} is not where it is stored");
        }
    }
    for (what, form) in &forms {
        for (name, b) in outputs {
            assert!(!contains(b, form), "{what} appears in {name}");
        }
    }
    eprintln!(
        "secret search: {} outputs, {} bytes, {} forms of {} secrets: none found",
        outputs.len(),
        outputs.iter().map(|(_, b)| b.len()).sum::<usize>(),
        forms.len(),
        1 + secrets["killed-keys"].data.as_ref().unwrap().len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_survives_its_operator_killed_at_every_stage_and_a_lease_takeover() {
    if client_or_skip().is_none() {
        return;
    }
    let worker = worker_bin::worker_binary();
    let seed = std::env::var("PQBENCH_KILL_SEED").map_or_else(
        |_| {
            let t = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap();
            t.as_secs() ^ (u64::from(t.subsec_nanos()) << 32)
        },
        |s| s.parse().expect("PQBENCH_KILL_SEED: a whole number"),
    );
    eprintln!("kill draw: PQBENCH_KILL_SEED={seed}");

    let client = Client::try_default().await.unwrap();
    install_crd(&client).await;
    let ns = namespace("kill");
    let dir = tempfile::tempdir().unwrap();
    // The S3 server is not up when the campaign is applied: provisioning waits for it, and
    // the leader is killed while it waits. The server starts after that restart, on the
    // address and with the credentials the campaign and its Secret name.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let token = |n: usize| {
        let mut b = vec![0u8; n];
        getrandom::fill(&mut b).unwrap();
        hex::encode(b)
    };
    let (access_key, secret_key) = (format!("PQ{}", token(9).to_uppercase()), token(20));
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    k8s::create_credentials_secret(&secrets, "s3-keys", &access_key, &secret_key).await;

    let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
    let mut replicas = [
        Replica::new("operator-a", &ns, dir.path()),
        Replica::new("operator-b", &ns, dir.path()),
    ];
    replicas[0].start();
    let until = Instant::now() + Duration::from_secs(60);
    while holder(&leases).await.as_deref() != Some("operator-a") {
        replicas[0].check_alive();
        assert!(Instant::now() < until, "operator-a never took the Lease");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    replicas[1].start();

    let api: Api<BenchmarkCampaign> = Api::namespaced(client.clone(), &ns);
    let text = campaign_yaml(&format!("http://{addr}"));
    let applied = Instant::now();
    let c = k8s::apply(&client, &ns, &text).await.unwrap();
    let plan = campaign::design::plan(&operator::deploy::manifest(&c));
    let runs = plan.runs.len();
    assert_eq!(runs, RUNS);

    let mut kubelet = Kubelet {
        client: client.clone(),
        ns: ns.clone(),
        worker,
        dir: dir.path().to_owned(),
        jobs: BTreeMap::new(),
        played: Vec::new(),
        exits: Vec::new(),
        stopping: Vec::new(),
        logs: Vec::new(),
    };
    let mut killer = Killer::new(seed, applied);
    let mut complete: BTreeSet<String> = BTreeSet::new();
    let mut s3: Option<s3::EmbeddedS3> = None;
    let mut store: Option<s3::aws_sdk_s3::Client> = None;
    let until = Instant::now() + Duration::from_secs(420);
    let last = loop {
        let now = api.get("killed").await.unwrap();
        let st = now.status.clone().unwrap_or_default();
        if matches!(st.phase, Phase::Succeeded | Phase::Failed) && killer.down.is_none() {
            break now;
        }
        assert!(
            Instant::now() < until,
            "the campaign did not finish: {st:?}\nkills so far: {:?}",
            killer.kills
        );
        for r in &mut replicas {
            r.check_alive();
        }
        // The S3 server comes up once the leader has been killed while provisioning.
        if s3.is_none() && killer.down.is_none() && killer.killed_in(Stage::Provisioning) {
            let server =
                s3::EmbeddedS3::start_with(&dir.path().join("s3"), addr, &access_key, &secret_key)
                    .unwrap();
            server.create_bucket("under-test").unwrap();
            store = Some(server.settings().client().unwrap());
            s3 = Some(server);
        }
        let mut seen = kubelet.tick(!killer.killed_in(Stage::Analysing)).await;
        if let (Some(store), Some(loc)) = (&store, &st.results) {
            let now_complete = complete_runs(store, loc).await;
            seen.completed = now_complete.len().saturating_sub(complete.len());
            complete = now_complete;
        }
        killer.arm(&st, &seen);
        killer.step(&mut replicas, &leases, &api).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    kubelet.shutdown();
    let st = last.status.clone().unwrap();
    eprintln!("pod exits: {:?}", kubelet.exits);
    assert_eq!(st.phase, Phase::Succeeded, "{:?}", st.message);
    let (from, to) = killer.check(&leases).await;

    // Every run carried out exactly once: one Job per planned run, its first attempt,
    // played once, and each of its pods exited as a run that was carried out (0 valid,
    // 1 invalid with its files kept; never 2, not carried out, or a signal).
    let worker_played: Vec<&(String, String, String)> = kubelet
        .played
        .iter()
        .filter(|(_, _, c)| c == "worker")
        .collect();
    let names: BTreeSet<&str> = worker_played.iter().map(|(n, _, _)| n.as_str()).collect();
    let want: BTreeSet<String> = (0..runs)
        .map(|i| operator::step::job_name(&plan.campaign, u32::try_from(i).unwrap(), 1))
        .collect();
    assert_eq!(
        worker_played.len(),
        runs,
        "one Job played per run: {worker_played:?}"
    );
    assert_eq!(
        names,
        want.iter().map(String::as_str).collect(),
        "the first attempt of every run"
    );
    // The pre-flight probe Job, played as the `pqbench-worker --probe-env` process its pod
    // runs, once, before the first run, and it succeeded (a kill while provisioning may
    // fall before or after it is made: never a second).
    let probe = operator::step::probe_job_name(&plan.campaign);
    let probes: Vec<_> = kubelet
        .played
        .iter()
        .filter(|(_, _, c)| c == "probe")
        .collect();
    assert_eq!(probes.len(), 1, "{probes:?}");
    assert_eq!(
        kubelet.played[0].2, "probe",
        "before the first run: {:?}",
        kubelet.played
    );
    let probe_exits: Vec<_> = kubelet
        .exits
        .iter()
        .filter(|(p, _)| p.starts_with(&probe))
        .collect();
    assert_eq!(
        probe_exits
            .iter()
            .map(|(_, e)| e.as_str())
            .collect::<Vec<_>>(),
        ["exit status: 0"]
    );
    let worker_exits: Vec<&(String, String)> = kubelet
        .exits
        .iter()
        .filter(|(p, _)| {
            !p.starts_with(&operator::step::analysis_job_name(&plan.campaign))
                && !p.starts_with(&probe)
        })
        .collect();
    assert_eq!(worker_exits.len(), 2 * runs, "{worker_exits:?}");
    for (pod, exit) in &worker_exits {
        assert!(
            exit == "exit status: 0" || exit == "exit status: 1",
            "pod {pod}: {exit}"
        );
    }
    assert!(st.failed_runs.is_empty(), "{:?}", st.failed_runs);
    let p = st.progress.clone().unwrap();
    assert_eq!((p.done, p.total), (6, 6));

    // The results bucket: every planned run's files, no other run's, and the report
    // agreeing with status.
    let s3 = s3.expect("the S3 server started");
    let loc = st.results.clone().unwrap();
    let objects = bucket_objects(&s3, &loc).await;
    check_bucket(&objects, &loc, &plan, &st);

    let events: Api<Event> = Api::namespaced(client.clone(), &ns);
    let evs = events.list(&ListParams::default()).await.unwrap().items;
    check_events(&evs, &plan, &BTreeSet::from([from, to]));

    // No secret in any output: operator and worker logs, status, events, Jobs, bucket.
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    for log in replicas.iter().map(|r| &r.log).chain(&kubelet.logs) {
        outputs.push((log.display().to_string(), std::fs::read(log).unwrap()));
    }
    outputs.push((
        "campaign".into(),
        serde_json::to_vec(&api.get("killed").await.unwrap()).unwrap(),
    ));
    outputs.push(("events".into(), serde_json::to_vec(&evs).unwrap()));
    let jobs: Api<Job> = Api::namespaced(client.clone(), &ns);
    outputs.push((
        "jobs".into(),
        serde_json::to_vec(&jobs.list(&ListParams::default()).await.unwrap().items).unwrap(),
    ));
    outputs.extend(objects);
    search_secrets(&kubelet.secrets().await, s3.secret_key(), &outputs);
    eprintln!(
        "operator starts: {}",
        replicas
            .iter()
            .map(|r| format!("{} {}", r.identity, r.starts))
            .collect::<Vec<_>>()
            .join(", ")
    );
    s3.stop();
}
