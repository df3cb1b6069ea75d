//! What every test against the real API server needs: the skip rule, the CRD installed
//! and Established, a fresh namespace name, and a campaign file applied as its text.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Client, ResourceExt as _};

/// `None` (after saying so loudly) when `PQBENCH_K8S_SKIP` holds the reason the server
/// could not be built; fails with instructions when no server is configured.
pub(crate) fn client_or_skip() -> Option<()> {
    if let Ok(reason) = std::env::var("PQBENCH_K8S_SKIP") {
        eprintln!("\n*** SKIPPED: the Kubernetes API-server tier did not run: {reason} ***\n");
        return None;
    }
    assert!(
        std::env::var_os("KUBECONFIG").is_some(),
        "KUBECONFIG is not set: start the test API server (`make test` does; or \
         `bash ../shared/tools/k8s-test-apiserver/build.sh && bash ../shared/tools/k8s-test-apiserver/start.sh` \
         and export the KUBECONFIG it prints), or set PQBENCH_K8S_SKIP to the reason it cannot run"
    );
    Some(())
}

/// Applies the generated CRD and waits until it is Established.
pub(crate) async fn install_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = operator::crd();
    crds.patch(
        &crd.name_any(),
        &PatchParams::apply("pqbench-test").force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("the generated CRD installs");
    for _ in 0..120 {
        let c = crds.get(&crd.name_any()).await.expect("read the CRD back");
        let established = c.status.and_then(|s| s.conditions).is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
        if established {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("the CRD never became Established");
}

/// A namespace name no other test run uses (`<tag>-<pid>-<ms>`).
pub(crate) fn namespace(tag: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis();
    format!("{tag}-{}-{t}", std::process::id())
}

/// Creates every document of `text` in `ns`, untyped (a `DynamicObject`), the way
/// `kubectl apply -f` sends it: no pqbench type in between to normalise the file.
/// Ok(the campaign as stored) or Err(the API server's message for the first document it
/// refused).
#[allow(dead_code, reason = "not every test binary applies campaign files")]
pub(crate) async fn apply(
    client: &Client,
    ns: &str,
    text: &str,
) -> Result<operator::BenchmarkCampaign, String> {
    let mut stored = None;
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let value: serde_json::Value =
            serde::Deserialize::deserialize(doc).expect("a YAML document");
        if value.is_null() {
            continue;
        }
        let obj: DynamicObject = serde_json::from_value(value).expect("a Kubernetes object");
        let gvk = GroupVersionKind::try_from(obj.types.as_ref().expect("apiVersion and kind"))
            .expect("a group, version and kind");
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), ns, &ApiResource::from_gvk(&gvk));
        match api.create(&PostParams::default(), &obj).await {
            Ok(created) if gvk.kind == "BenchmarkCampaign" => {
                let typed = serde_json::to_value(created)
                    .and_then(serde_json::from_value)
                    .expect("the stored campaign reads back");
                stored = Some(typed);
            }
            Ok(_) => {}
            Err(kube::Error::Api(s)) => return Err(format!("{} ({})", s.message, s.code)),
            Err(other) => panic!("creating {}: {other}", gvk.kind),
        }
    }
    Ok(stored.expect("a BenchmarkCampaign document"))
}

/// Waits up to `secs` for `f` to give a value, polling every 300 ms; fails naming `what`.
#[allow(dead_code, reason = "not every test binary waits on the API server")]
pub(crate) async fn wait_for<T>(what: &str, secs: u64, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    let until = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            std::time::Instant::now() < until,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Creates through `secrets` (its namespace) an S3 credentials Secret (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`) as a tenant makes one for a campaign to name: labelled
/// `pqbench.io/credentials: "true"` by the namespace's owner (the tenant-input policy).
/// `data`, not `stringData`: this API server does not convert built-in kinds.
#[allow(dead_code, reason = "not every test binary names a credentials Secret")]
pub(crate) async fn create_credentials_secret(
    secrets: &kube::Api<k8s_openapi::api::core::v1::Secret>,
    name: &str,
    access_key: &str,
    secret_key: &str,
) {
    let bytes = |s: &str| k8s_openapi::ByteString(s.as_bytes().to_vec());
    let secret = k8s_openapi::api::core::v1::Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                [(
                    operator::policy::CREDENTIALS_LABEL.to_owned(),
                    "true".to_owned(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        data: Some(
            [
                ("AWS_ACCESS_KEY_ID".to_owned(), bytes(access_key)),
                ("AWS_SECRET_ACCESS_KEY".to_owned(), bytes(secret_key)),
            ]
            .into(),
        ),
        ..Default::default()
    };
    secrets
        .create(&kube::api::PostParams::default(), &secret)
        .await
        .unwrap();
}

#[allow(
    dead_code,
    reason = "the controller tests report pods; other binaries share this file"
)]
/// What a kubelet reports for a Job's pod `name`: a Pod made from the Job's template (its
/// labels and spec), its status then saying each container started from the image
/// `image_id` (the digest the runtime resolved).
pub(crate) async fn report_pod(
    client: &Client,
    ns: &str,
    job: &k8s_openapi::api::batch::v1::Job,
    name: &str,
    image_id: &str,
) {
    use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodStatus};
    let template = job.spec.clone().unwrap().template;
    let spec = template.spec.unwrap();
    let statuses = spec
        .containers
        .iter()
        .map(|c| ContainerStatus {
            name: c.name.clone(),
            image: c.image.clone().unwrap_or_default(),
            image_id: image_id.to_owned(),
            ready: true,
            ..ContainerStatus::default()
        })
        .collect();
    let pod = Pod {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            labels: template.metadata.and_then(|m| m.labels),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let status = serde_json::json!({"status": PodStatus {
        phase: Some("Running".into()),
        container_statuses: Some(statuses),
        ..PodStatus::default()
    }});
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

/// The first event in `ns` with `reason`, waited for up to 30 s.
#[allow(dead_code, reason = "shared by test binaries that each use part of it")]
pub(crate) async fn event(
    client: &Client,
    ns: &str,
    reason: &str,
) -> k8s_openapi::api::events::v1::Event {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), ns);
    wait_for(&format!("the {reason} event"), 30, async || {
        events
            .list(&kube::api::ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some(reason))
    })
    .await
}
