//! What a kubelet resolves for a pod's container besides its image (test support, not
//! product): the environment (values, `secretKeyRef`, the `fieldRef`s the operator's pods
//! use, and an Indexed Job's `JOB_COMPLETION_INDEX`) and its Secret volumes (written as
//! files the way the kubelet writes them). Shared by the pods played with podman
//! (`podman.rs`, which bind-mounts the files), those played as plain processes
//! (`operator/tests/kill.rs`) and in-process (`operator/tests/support/play.rs`); these two
//! have no mount namespace, so a path inside the pod is translated to the files' directory
//! on this host ([`SecretMount::on_host`]).

#![allow(dead_code, reason = "each test binary uses part of the support")]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, PodSpec, Secret};

/// What the kubelet resolves for one pod besides its spec.
#[derive(Clone, Debug, Default)]
pub(crate) struct PodContext {
    /// The pod's name (`metadata.name`) and the container's name in podman.
    pub(crate) name: String,
    /// Its namespace.
    pub(crate) namespace: String,
    /// Secrets by name, as the API server holds them.
    pub(crate) secrets: BTreeMap<String, Secret>,
    /// The completion index of an Indexed Job's pod.
    pub(crate) completion_index: Option<u32>,
    /// Host names the pod resolves (cluster DNS stand-ins): name → loopback address.
    pub(crate) hosts: Vec<(String, IpAddr)>,
    /// The CPUs of the node the pod is placed on (`--cpuset-cpus`), where this host stands
    /// in for several nodes.
    pub(crate) node_cpus: Option<String>,
    /// Where the pod's Secret volumes are written (outside the working tree); `None` when
    /// it mounts none.
    pub(crate) volumes_root: Option<PathBuf>,
}

fn secret_bytes(ctx: &PodContext, name: &str, key: &str) -> Result<Vec<u8>, String> {
    let s = ctx
        .secrets
        .get(name)
        .ok_or_else(|| format!("the pod names Secret {name}, which does not exist"))?;
    let bytes = s
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.clone())
        .or_else(|| {
            s.string_data
                .as_ref()
                .and_then(|d| d.get(key))
                .map(|v| v.clone().into_bytes())
        })
        .ok_or_else(|| format!("Secret {name} has no key {key}"))?;
    Ok(bytes)
}

fn secret_value(ctx: &PodContext, name: &str, key: &str) -> Result<String, String> {
    String::from_utf8(secret_bytes(ctx, name, key)?)
        .map_err(|_| format!("Secret {name} key {key} is not UTF-8"))
}

/// A Secret volume a container mounts: where inside the pod, and the directory on this host
/// holding its files.
#[derive(Clone, Debug)]
pub(crate) struct SecretMount {
    /// The mount path in the container.
    pub(crate) path: String,
    /// The files' directory on this host.
    pub(crate) dir: PathBuf,
    /// Whether the container mounts it read-only.
    pub(crate) read_only: bool,
}

impl SecretMount {
    /// `value` with every path under a mount translated to this host's directory (for a pod
    /// played without a mount namespace). Longest mount path first, as in a pod the deepest
    /// mount holds a path: `/var/run/pqbench/kms` must not rewrite the start of
    /// `/var/run/pqbench/kms-external/x`.
    pub(crate) fn on_host(mounts: &[Self], value: &str) -> String {
        let mut by_depth: Vec<&Self> = mounts.iter().collect();
        by_depth.sort_by_key(|m| std::cmp::Reverse(m.path.len()));
        by_depth.into_iter().fold(value.to_owned(), |v, m| {
            v.replace(&m.path, &m.dir.display().to_string())
        })
    }
}

/// The Secret volumes container `c` mounts, written under `root/<pod>/<volume>/` as the
/// kubelet writes them: the volume's items (every key of the Secret when it lists none),
/// each file of mode `defaultMode` (or the item's own mode; 0644 when unset) to which the
/// kubelet's `fsGroup` change adds group read (0440), the files given to the group
/// `fsGroup` when `chown` (a container running as that group reads them; needs root). A
/// key the Secret lacks fails as the kubelet fails such a pod.
pub(crate) fn secret_mounts(
    pod: &PodSpec,
    c: &Container,
    ctx: &PodContext,
    root: &Path,
    chown: bool,
) -> Result<Vec<SecretMount>, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let fs_group = pod
        .security_context
        .as_ref()
        .and_then(|s| s.fs_group)
        .map(|g| u32::try_from(g).map_err(|_| format!("fsGroup {g} is not a group id")))
        .transpose()?;
    let mut out = Vec::new();
    for m in c.volume_mounts.iter().flatten() {
        let Some(v) = pod.volumes.iter().flatten().find(|v| v.name == m.name) else {
            return Err(format!("volume mount {} names no volume", m.name));
        };
        let Some(sv) = &v.secret else { continue };
        let name = sv
            .secret_name
            .as_deref()
            .ok_or("a Secret volume without secretName")?;
        let items: Vec<(String, String, Option<i32>)> = match &sv.items {
            Some(items) => items
                .iter()
                .map(|i| (i.key.clone(), i.path.clone(), i.mode))
                .collect(),
            None => ctx
                .secrets
                .get(name)
                .and_then(|s| s.data.as_ref())
                .map(|d| d.keys().map(|k| (k.clone(), k.clone(), None)).collect())
                .unwrap_or_default(),
        };
        let dir = root.join(&ctx.name).join(&v.name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (key, path, mode) in items {
            let file = dir.join(&path);
            std::fs::write(&file, secret_bytes(ctx, name, &key)?)
                .map_err(|e| format!("{}: {e}", file.display()))?;
            let mut mode = u32::try_from(mode.or(sv.default_mode).unwrap_or(0o644))
                .map_err(|_| format!("volume {}: a negative mode", v.name))?;
            if let Some(g) = fs_group {
                mode |= 0o440;
                if chown {
                    std::os::unix::fs::chown(&file, None, Some(g))
                        .map_err(|e| format!("chown {}: {e}", file.display()))?;
                }
            }
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("{}: {e}", file.display()))?;
        }
        if chown && let Some(g) = fs_group {
            std::os::unix::fs::chown(&dir, None, Some(g))
                .map_err(|e| format!("chown {}: {e}", dir.display()))?;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750))
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        out.push(SecretMount {
            path: m.mount_path.clone(),
            dir,
            read_only: m.read_only == Some(true),
        });
    }
    Ok(out)
}

fn field_value(ctx: &PodContext, path: &str) -> Result<String, String> {
    let index_annotation = "metadata.annotations['batch.kubernetes.io/job-completion-index']";
    Ok(match path {
        "metadata.name" => ctx.name.clone(),
        "metadata.namespace" => ctx.namespace.clone(),
        "status.podIP" | "status.hostIP" => "127.0.0.1".into(),
        "spec.nodeName" => "podman".into(),
        p if p == index_annotation => ctx
            .completion_index
            .ok_or("the completion index of a pod outside an Indexed Job")?
            .to_string(),
        p => return Err(format!("fieldRef {p} is not played here")),
    })
}

/// A container's environment as its kubelet resolves it: values, `secretKeyRef`s,
/// `fieldRef`s, and an Indexed Job's `JOB_COMPLETION_INDEX`.
pub(crate) fn env_of(c: &Container, ctx: &PodContext) -> Result<Vec<(String, String)>, String> {
    let mut env = Vec::new();
    // The Job controller gives an Indexed Job's pods their index.
    if let Some(i) = ctx.completion_index {
        env.push(("JOB_COMPLETION_INDEX".to_owned(), i.to_string()));
    }
    for e in c.env.iter().flatten() {
        let v = match (&e.value, &e.value_from) {
            (Some(v), _) => v.clone(),
            (None, Some(src)) => match (&src.secret_key_ref, &src.field_ref) {
                (Some(r), _) => secret_value(ctx, &r.name, &r.key)?,
                (None, Some(f)) => field_value(ctx, &f.field_path)?,
                _ => {
                    return Err(format!(
                        "env {}: only secretKeyRef and fieldRef are played",
                        e.name
                    ));
                }
            },
            (None, None) => String::new(),
        };
        env.retain(|(k, _)| k != &e.name);
        env.push((e.name.clone(), v));
    }
    Ok(env)
}
