//! A pod's container as a kubelet would start it, played with podman (test support, not
//! product): image, command and args, environment (values, `secretKeyRef`, the `fieldRef`s
//! the operator's pods use, and an Indexed Job's `JOB_COMPLETION_INDEX`), CPU and memory
//! limits, the security context (user and group, read-only root, no privilege escalation,
//! dropped capabilities), emptyDir volumes (tmpfs), Secret volumes (the files written as the
//! kubelet writes them, bind-mounted), and the grace period on deletion.
//!
//! What it cannot play: scheduling (node selectors, tolerations and affinity are not
//! evaluated; the caller may give a pod its node's CPUs), the kubelet's CPU manager, probes, NetworkPolicy, cluster DNS and
//! a network namespace per pod (every container shares the host's network; service names
//! are mapped to loopback addresses with `--add-host`, and an argument naming a declared
//! container port as `ADDR:PORT` listens on an ephemeral port of 127.0.0.1, so that pods
//! running at once do not collide), image pulls (`--pull never`).
//! Secret values reach podman through its own environment (`--env NAME`) or files under
//! the context's `volumes_root`, never its command line.
//!
//! podman runs with `scripts/containers.conf` (runc, the cgroupfs manager, explicit
//! ulimits), which this kind of host needs.

#![allow(dead_code, reason = "each test binary uses part of the support")]

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[path = "pod_env.rs"]
mod pod_env;
#[allow(unused_imports, reason = "each test binary uses part of the support")]
pub(crate) use pod_env::{PodContext, SecretMount, env_of, secret_mounts};

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The podman command, configured for this kind of host.
pub(crate) fn podman() -> Command {
    let mut c = Command::new("podman");
    c.env("CONTAINERS_CONF", containers_conf());
    c
}

/// `scripts/containers.conf` of this checkout.
pub(crate) fn containers_conf() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/containers.conf")
}

/// The tag `scripts/images.sh` gave the images (`PQBENCH_IMAGE_TAG`, default `local`).
pub(crate) fn image(name: &str) -> String {
    let tag = std::env::var("PQBENCH_IMAGE_TAG").unwrap_or_else(|_| "local".into());
    format!("localhost/{name}:{tag}")
}

/// The image ID a container runtime reports for `image` in podman's store: its repository
/// at the digest of its manifest (`localhost/pqbench-worker@sha256:...`).
pub(crate) fn image_id(image: &str) -> String {
    let out = podman()
        .args(["image", "inspect", "--format", "{{.Digest}}", image])
        .output()
        .expect("podman image inspect");
    assert!(out.status.success(), "podman image inspect {image}");
    let digest = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(digest.starts_with("sha256:"), "{image}: digest {digest:?}");
    let repo = image.rsplit_once(':').map_or(image, |(r, _)| r);
    format!("{repo}@{digest}")
}

/// Fails, saying how to build them, unless both images are in podman's store.
pub(crate) fn require_images() {
    for name in ["pqbench-operator", "pqbench-worker", "pqbench-probe"] {
        let img = image(name);
        let st = podman()
            .args(["image", "exists", &img])
            .status()
            .expect("podman runs (apt-get install podman runc)");
        assert!(
            st.success(),
            "{img} is not built: run `make images` (or scripts/images.sh build debug)"
        );
    }
}

/// One container of a pod, ready to start: podman's arguments and the environment podman
/// itself gets (every variable the container sees, passed by name).
#[derive(Clone)]
pub(crate) struct PodRun {
    /// The container's name in podman.
    pub(crate) name: String,
    /// `podman run` arguments.
    pub(crate) args: Vec<String>,
    /// The container's environment, handed to podman's own environment.
    env: Vec<(String, String)>,
    /// The pod's grace period on deletion.
    pub(crate) grace: Duration,
    /// The file on this host mounted at the container's `terminationMessagePath`, which
    /// the kubelet reads into the container's status when it ends (with `volumes_root`).
    pub(crate) termination_log: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for PodRun {
    // The environment holds Secret values: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodRun")
            .field("name", &self.name)
            .field("args", &self.args)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .finish()
    }
}

impl PodRun {
    /// Starts the container in the foreground of a child `podman run`, whose exit status
    /// is the container's.
    pub(crate) fn spawn(&self) -> Child {
        let mut c = podman();
        c.arg("run").args(&self.args);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("podman run starts")
    }

    /// Starts the container like [`PodRun::spawn`], its output going to `log`.
    pub(crate) fn spawn_to(&self, log: &std::path::Path) -> Child {
        let f = std::fs::File::create(log).expect("log file");
        let mut c = podman();
        c.arg("run").args(&self.args);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.stdout(f.try_clone().expect("log file"))
            .stderr(f)
            .spawn()
            .expect("podman run starts")
    }

    /// The value a variable of the container's environment has.
    pub(crate) fn env(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Deletes the pod as a kubelet would: SIGTERM, then SIGKILL after the grace period.
    pub(crate) fn stop(&self) -> std::process::ExitStatus {
        podman()
            .args([
                "stop",
                "--time",
                &self.grace.as_secs().to_string(),
                &self.name,
            ])
            .stdout(Stdio::null())
            .status()
            .expect("podman stop runs")
    }
}

/// CPU as podman's `--cpus` takes it (`2`, `500m`).
fn cpus(q: &Quantity) -> Result<String, String> {
    let s = q.0.as_str();
    let v = match s.strip_suffix('m') {
        Some(m) => m.parse::<f64>().map(|m| m / 1000.0),
        None => s.parse::<f64>(),
    }
    .map_err(|_| format!("cpu quantity {s}"))?;
    Ok(format!("{v}"))
}

/// Memory in bytes (`512Mi`, `2Gi`, `1G`, plain bytes).
fn bytes(q: &Quantity) -> Result<u64, String> {
    let s = q.0.as_str();
    let units: [(&str, u64); 8] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    for (suffix, mult) in units {
        if let Some(n) = s.strip_suffix(suffix) {
            return n
                .parse::<u64>()
                .map(|n| n * mult)
                .map_err(|_| format!("memory quantity {s}"));
        }
    }
    s.parse::<u64>().map_err(|_| format!("memory quantity {s}"))
}

/// The `podman run` of container `c` of `pod`, as a kubelet would start it with host
/// networking. Errors name what the pod asks for that is not played.
pub(crate) fn pod_run(pod: &PodSpec, c: &Container, ctx: &PodContext) -> Result<PodRun, String> {
    let mut args: Vec<String> = vec![
        "--name".into(),
        ctx.name.clone(),
        "--rm".into(),
        "--pull".into(),
        "never".into(),
        "--network".into(),
        "host".into(),
        // Only what the pod mounts is writable, as in a pod (podman would add tmpfs).
        "--read-only-tmpfs=false".into(),
        "--hostname".into(),
        ctx.name.chars().take(63).collect(),
    ];
    for (host, ip) in &ctx.hosts {
        args.push(format!("--add-host={host}:{ip}"));
    }
    let psc = pod.security_context.as_ref();
    let sc = c.security_context.as_ref();
    let user = sc
        .and_then(|s| s.run_as_user)
        .or_else(|| psc.and_then(|s| s.run_as_user));
    let group = sc
        .and_then(|s| s.run_as_group)
        .or_else(|| psc.and_then(|s| s.run_as_group));
    let non_root = sc
        .and_then(|s| s.run_as_non_root)
        .or_else(|| psc.and_then(|s| s.run_as_non_root))
        .unwrap_or(false);
    if non_root && user == Some(0) {
        return Err("runAsNonRoot with runAsUser 0: the kubelet refuses this pod".into());
    }
    if non_root && user.is_none() {
        return Err(
            "runAsNonRoot without runAsUser: not played (the image's user is not checked)".into(),
        );
    }
    match (user, group) {
        (Some(u), Some(g)) => args.push(format!("--user={u}:{g}")),
        (Some(u), None) => args.push(format!("--user={u}")),
        _ => {}
    }
    if let Some(s) = sc {
        if s.read_only_root_filesystem == Some(true) {
            args.push("--read-only".into());
        }
        if s.allow_privilege_escalation == Some(false) {
            args.push("--security-opt=no-new-privileges".into());
        }
        if s.privileged == Some(true) {
            return Err("privileged containers are not played".into());
        }
        if let Some(caps) = &s.capabilities {
            for d in caps.drop.iter().flatten() {
                args.push(format!("--cap-drop={}", d.to_lowercase()));
            }
            for a in caps.add.iter().flatten() {
                args.push(format!("--cap-add={}", a.to_lowercase()));
            }
        }
    }
    if let Some(cpus) = &ctx.node_cpus {
        args.push(format!("--cpuset-cpus={cpus}"));
    }
    if let Some(limits) = c.resources.as_ref().and_then(|r| r.limits.as_ref()) {
        if let Some(q) = limits.get("cpu") {
            args.push(format!("--cpus={}", cpus(q)?));
        }
        if let Some(q) = limits.get("memory") {
            args.push(format!("--memory={}", bytes(q)?));
        }
    }
    let volumes = pod.volumes.clone().unwrap_or_default();
    let secrets = match &ctx.volumes_root {
        Some(root) => secret_mounts(pod, c, ctx, root, true)?,
        None => Vec::new(),
    };
    for m in c.volume_mounts.iter().flatten() {
        let v = volumes
            .iter()
            .find(|v| v.name == m.name)
            .ok_or_else(|| format!("volume mount {} names no volume", m.name))?;
        if v.secret.is_some() {
            let s = secrets
                .iter()
                .find(|s| s.path == m.mount_path)
                .ok_or_else(|| format!("volume {}: a Secret volume needs volumes_root", v.name))?;
            let ro = if s.read_only { ",ro" } else { "" };
            args.push(format!(
                "--mount=type=bind,source={},destination={}{ro}",
                s.dir.display(),
                s.path
            ));
            continue;
        }
        if v.empty_dir.is_none() {
            return Err(format!(
                "volume {}: only emptyDir and Secret volumes are played",
                v.name
            ));
        }
        let ro = if m.read_only == Some(true) { ",ro" } else { "" };
        args.push(format!(
            "--mount=type=tmpfs,destination={},tmpfs-mode=1777{ro}",
            m.mount_path
        ));
    }
    // The termination message file, which the kubelet mounts writable whatever the root.
    let mut termination_log = None;
    if let (Some(path), Some(root)) = (&c.termination_message_path, &ctx.volumes_root) {
        let file = root.join(&ctx.name).join("termination-log");
        let made = std::fs::create_dir_all(root.join(&ctx.name))
            .and_then(|()| std::fs::write(&file, ""))
            .and_then(|()| {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666))
            });
        made.map_err(|e| format!("{}: {e}", file.display()))?;
        args.push(format!(
            "--mount=type=bind,source={},destination={path}",
            file.display()
        ));
        termination_log = Some(file);
    }
    let env = env_of(c, ctx)?;
    for (k, _) in &env {
        args.push("--env".into());
        args.push(k.clone());
    }
    if let Some(cmd) = &c.command {
        args.push(format!(
            "--entrypoint={}",
            serde_json::to_string(cmd).map_err(|e| e.to_string())?
        ));
    }
    args.push(
        c.image
            .clone()
            .ok_or_else(|| format!("container {} has no image", c.name))?,
    );
    // A pod has a network namespace of its own, so every pod may listen on its declared
    // container ports; played on the host's network, two pods would collide (the interleaved
    // Jobs of a block run at once). An argument `ADDR:PORT` naming a declared container
    // port listens on an ephemeral port of 127.0.0.1 instead.
    let ports: Vec<String> = c
        .ports
        .iter()
        .flatten()
        .map(|p| format!(":{}", p.container_port))
        .collect();
    args.extend(c.args.iter().flatten().map(|a| {
        if ports.iter().any(|p| a.ends_with(p.as_str())) && a.contains(':') {
            "127.0.0.1:0".to_owned()
        } else {
            a.clone()
        }
    }));
    let grace = Duration::from_secs(
        pod.termination_grace_period_seconds
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(30),
    );
    Ok(PodRun {
        name: ctx.name.clone(),
        args,
        env,
        grace,
        termination_log,
    })
}

/// The test API server's kubeconfig (`KUBECONFIG`) with its certificate and key files
/// inlined, written to `dir`, owned by the images' user (65532) and readable by it alone:
/// what the operator's container mounts read-only.
pub(crate) fn self_contained_kubeconfig(dir: &Path) -> PathBuf {
    use base64::Engine as _;
    let path = std::env::var("KUBECONFIG").expect("KUBECONFIG: the test API server's");
    let text = std::fs::read_to_string(&path).expect("the kubeconfig");
    let mut v: serde_json::Value = serde_yaml_ng::from_str(&text).expect("kubeconfig YAML");
    let inline = |obj: &mut serde_json::Value, key: &str| {
        if let Some(file) = obj.get(key).and_then(|f| f.as_str()).map(str::to_owned) {
            let bytes = std::fs::read(&file).expect("a file the kubeconfig names");
            obj[format!("{key}-data")] = base64::engine::general_purpose::STANDARD
                .encode(bytes)
                .into();
            if let Some(o) = obj.as_object_mut() {
                o.remove(key);
            }
        }
    };
    for c in v["clusters"].as_array_mut().into_iter().flatten() {
        inline(&mut c["cluster"], "certificate-authority");
    }
    for u in v["users"].as_array_mut().into_iter().flatten() {
        inline(&mut u["user"], "client-certificate");
        inline(&mut u["user"], "client-key");
    }
    let out = dir.join("kubeconfig");
    std::fs::write(&out, serde_yaml_ng::to_string(&v).expect("YAML")).expect("write");
    std::os::unix::fs::chown(&out, Some(65532), Some(65532)).expect("chown (needs root)");
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o400))
        .expect("chmod");
    out
}

/// The operator's container as its Deployment runs it (non-root, read-only root, no
/// privilege escalation, no capabilities), on the host's network, watching `ns`, with
/// `kubeconfig` mounted read-only, `/metrics` and the probes on `metrics_addr`, the worker
/// and probe images of these tests, `hosts` resolved, and `cpuset` its CPUs if given. Run it with
/// `.spawn()`; stop it with `podman stop NAME`.
pub(crate) fn operator_container(
    name: &str,
    ns: &str,
    kubeconfig: &Path,
    metrics_addr: &str,
    hosts: &[(String, IpAddr)],
    cpuset: Option<&str>,
) -> Command {
    let mut c = podman();
    c.args(["run", "--rm", "--pull", "never", "--name", name])
        .args(["--network", "host", "--read-only", "--user", "65532:65532"])
        .args(["--security-opt=no-new-privileges", "--cap-drop=all"])
        .arg(format!(
            "--volume={}:/etc/pqbench/kubeconfig:ro",
            kubeconfig.display()
        ))
        .args(["--env", "KUBECONFIG=/etc/pqbench/kubeconfig"])
        .args(["--env", &format!("PQBENCH_METRICS_ADDR={metrics_addr}")])
        .args(["--env", &format!("PQBENCH_WATCH_NAMESPACE={ns}")])
        .args(["--env", &format!("POD_NAMESPACE={ns}")])
        .args(["--env", &format!("POD_NAME={name}")])
        .args([
            "--env",
            &format!("PQBENCH_WORKER_IMAGE={}", image("pqbench-worker")),
        ])
        .args([
            "--env",
            &format!("PQBENCH_PROBE_IMAGE={}", image("pqbench-probe")),
        ]);
    for (host, ip) in hosts {
        c.arg(format!("--add-host={host}:{ip}"));
    }
    if let Some(cpus) = cpuset {
        c.arg(format!("--cpuset-cpus={cpus}"));
    }
    c.arg(image("pqbench-operator"));
    c
}
