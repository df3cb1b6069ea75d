//! Against a real Kubernetes API server: `../shared/tools/k8s-test-apiserver` (Kubernetes
//! 1.36's CRD machinery on etcd), which `make test` starts and points `KUBECONFIG` at.
//! The generated CRD installs and becomes Established; two examples, sent as their text,
//! are accepted (every example file, valid and invalid, is checked against `pqbench plan`
//! in the workspace's `tests/examples.rs`); a spec edit is refused; a status written by server-side
//! apply lands; the MinIO Secret, Service and StatefulSet the builders make apply and keep
//! the campaign's owner reference and the server node group.
//!
//! Without the server these tests fail and say how to start it, unless
//! `PQBENCH_K8S_SKIP` holds the reason it could not be built (then they say so loudly and
//! pass: only this tier is skipped).
#![allow(clippy::unwrap_used, reason = "tests")]

#[path = "support/k8s.rs"]
mod k8s;

use std::path::Path;

use k8s::{client_or_skip, install_crd, namespace};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use operator::resources::{self, Owner};
use operator::{BenchmarkCampaign, CampaignStatus, Phase};

fn api_error(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("expected an API error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_examples_cel_immutability_and_status() {
    if client_or_skip().is_none() {
        return;
    }
    let client = Client::try_default().await.expect("client from KUBECONFIG");
    install_crd(&client).await;
    let ns = namespace("t");
    let api: Api<BenchmarkCampaign> = Api::namespaced(client.clone(), &ns);

    // Two examples as their text, untyped (as `kubectl apply -f` sends them; every example
    // and its decision is checked in the workspace's tests/examples.rs).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let ar = ApiResource::erase::<BenchmarkCampaign>(&());
    let dynamic: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
    for name in ["quick.yaml", "cluster-minio.yaml"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let object: DynamicObject = serde_yaml_ng::from_str(&text).unwrap();
        dynamic
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("{name} refused: {e}"));
    }

    // The server's children, from the pure builders, apply and keep their owner reference.
    let owned = api.get("cluster-minio").await.unwrap();
    let owner = Owner::of(&owned).unwrap();
    let minio = owned.spec.server.minio.clone().unwrap_or_default();
    let placement = resources::Placement::new(
        &owned.spec.server.node_group,
        owned.spec.server.node_selector.as_ref(),
        &owned.spec.server.tolerations,
        owned.spec.server.affinity.as_ref(),
        "spec.server.affinity",
    )
    .unwrap();
    let ssa = PatchParams::apply("pqbench-operator").force();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let secret = resources::credentials_secret(&owner, "access", "not-logged");
    secrets
        .patch(&owner.credentials_secret(), &ssa, &Patch::Apply(&secret))
        .await
        .expect("secret applies");
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    services
        .patch(
            &owner.minio(),
            &ssa,
            &Patch::Apply(&resources::minio_service(&owner)),
        )
        .await
        .expect("service applies");
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    let set = resources::minio_statefulset(
        &owner,
        &minio,
        placement,
        resources::DEFAULT_NODE_EXPORTER_IMAGE,
        Some(resources::ServerProbe {
            image: "ghcr.io/pqbench/pqbench-probe:test",
            seconds: 5,
        }),
    );
    sets.patch(&owner.minio(), &ssa, &Patch::Apply(&set))
        .await
        .expect("statefulset applies");
    let back = sets.get(&owner.minio()).await.unwrap();
    let refs = back.metadata.owner_references.unwrap();
    assert_eq!(refs[0].uid, owned.metadata.uid.clone().unwrap());
    assert_eq!(refs[0].controller, Some(true));
    let pod = back.spec.unwrap().template.spec.unwrap();
    assert_eq!(
        pod.node_selector.unwrap()["eks.amazonaws.com/nodegroup"],
        "server"
    );
    assert_eq!(pod.tolerations.unwrap()[0].value.as_deref(), Some("server"));
    // The testbed probes beside MinIO pass the API server's validation: the disk probe
    // before MinIO on its data volume, the iperf3 server beside it.
    let init = pod.init_containers.unwrap();
    assert_eq!(init[0].name, resources::DISK_PROBE_CONTAINER);
    assert_eq!(
        init[0].termination_message_path.as_deref(),
        Some("/dev/termination-log")
    );
    assert_eq!(pod.containers[2].name, "iperf3");

    // The spec is the pre-registration: an edit is refused.
    let mut quick = api.get("quick").await.unwrap();
    quick.spec.campaign.repetitions += 1;
    let (code, message) = api_error(
        api.replace("quick", &PostParams::default(), &quick)
            .await
            .expect_err("a spec edit is refused"),
    );
    assert_eq!(code, 422, "{message}");
    assert!(
        message.contains("spec is the pre-registration and cannot change; create a new campaign"),
        "{message}"
    );

    // Status goes through server-side apply on /status and lands.
    let status = serde_json::json!({
        "apiVersion": "pqbench.io/v1alpha1",
        "kind": "BenchmarkCampaign",
        "status": CampaignStatus {
            phase: Phase::Running,
            prereg_hash: Some("ab".repeat(32)),
            ..CampaignStatus::default()
        },
    });
    api.patch_status(
        "quick",
        &PatchParams::apply("pqbench-operator").force(),
        &Patch::Apply(&status),
    )
    .await
    .expect("status apply");
    let back = api.get_status("quick").await.unwrap();
    assert_eq!(back.status.unwrap().phase, Phase::Running);
    assert_eq!(back.spec.campaign, quick_spec(&dir));
}

fn quick_spec(dir: &Path) -> campaign::CampaignSpec {
    let text = std::fs::read_to_string(dir.join("quick.yaml")).unwrap();
    campaign::Manifest::parse(&text, "quick.yaml").unwrap().spec
}
