//! What a kubelet resolves for a pod's container besides its image (test support, not
//! product): the environment (values, `secretKeyRef`, the `fieldRef`s the operator's pods
//! use, and an Indexed Job's `JOB_COMPLETION_INDEX`). Shared by the pods played with podman
//! (`podman.rs`) and those played as plain processes (`operator/tests/kill.rs`).

#![allow(dead_code, reason = "each test binary uses part of the support")]

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Container, Secret};

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
}

fn secret_value(ctx: &PodContext, name: &str, key: &str) -> Result<String, String> {
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
    String::from_utf8(bytes).map_err(|_| format!("Secret {name} key {key} is not UTF-8"))
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
