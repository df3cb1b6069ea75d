//! Issue 36, a shared cluster, against the real Kubernetes API server
//! (`../shared/tools/k8s-test-apiserver`, started by `make test`) and the embedded S3
//! server:
//!
//! - Ownership: a tenant whose campaign is named `cluster-minio` must not get, overwrite
//!   or, on cleanup, delete another team's Secret `cluster-minio-keys` or StatefulSet
//!   `cluster-minio-minio`. The campaign file is applied as its text; the foreign objects
//!   are compared whole (resourceVersion and managedFields included) before and after the
//!   campaign and after its deletion, and the operator's requests (recorded on its
//!   client) show it read their metadata only.
//! - Bounded reads and namespaces: one operator watching two namespaces; one tenant's
//!   oversized `analysis.json` fails that campaign, the other's runs to `Succeeded`.
//!
//! Every request the operator makes is checked against its Role's rules
//! (`operator::rbac`). What this server cannot show: RBAC enforcement itself (every client
//! is system:masters here; the chart README's `kubectl auth can-i` checks are for a real
//! cluster) and garbage collection (none runs).
#![allow(clippy::unwrap_used, reason = "tests")]

#[path = "support/invalid_run.rs"]
mod invalid_run;
#[path = "support/k8s.rs"]
mod k8s;
#[path = "support/play.rs"]
mod play;
#[path = "../../tests/support/pod_env.rs"]
mod pod_env;
#[path = "support/recording.rs"]
mod recording;

use std::time::Duration;

use k8s::{client_or_skip, install_crd, namespace, wait_for};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt as _};
use operator::{BenchmarkCampaign, Phase};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_whose_child_names_are_taken_fails_naming_them_and_leaves_them_alone() {
    if client_or_skip().is_none() {
        return;
    }
    let client = Client::try_default().await.unwrap();
    install_crd(&client).await;
    let ns = namespace("collide");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/cluster-minio.yaml"
    ))
    .unwrap();
    let name = "cluster-minio";
    assert!(
        text.contains(&format!("name: {name}\n")),
        "the example's name"
    );

    // Another team's objects at two of the campaign's child names: a Secret of its own and
    // a StatefulSet its Deployment controls.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    let keys = format!("{name}-keys");
    let minio = format!("{name}-minio");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": keys, "labels": {"team": "auth"}},
                // `data`: this API server does not convert `stringData` of built-in kinds.
                "data": {"signing-key": "bm90IHRoZSBvcGVyYXRvcidz"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    sets.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": minio, "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "Deployment", "name": "db",
                "uid": "3d0c8f6e-5f50-4b8e-9c1e-000000000036", "controller": true
            }]},
            "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}}},
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let before = || async {
        (
            serde_json::to_value(secrets.get(&keys).await.unwrap()).unwrap(),
            serde_json::to_value(sets.get(&minio).await.unwrap()).unwrap(),
        )
    };
    let foreign = before().await;

    let recorded = recording::controller(&[&ns]).await;
    k8s::apply(&client, &ns, &text).await.unwrap();
    let api: Api<BenchmarkCampaign> = Api::namespaced(client.clone(), &ns);
    let c = wait_for("the campaign to fail", 60, async || {
        let c = api.get(name).await.ok()?;
        (c.status.as_ref()?.phase == Phase::Failed).then_some(c)
    })
    .await;
    let st = c.status.unwrap();
    let msg = st.message.clone().unwrap();
    assert!(
        msg.contains(&format!(
            "Secret {keys} exists and is not owned by this campaign"
        )) && msg.contains(&format!(
            "StatefulSet {minio} exists and is owned by Deployment db"
        )) && msg.contains("rename the campaign or remove the object"),
        "{msg}"
    );
    let ready = st.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "NameCollision"),
        "{ready:?}"
    );
    let ev = k8s::event(&client, &ns, "NameCollision").await;
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert!(ev.note.unwrap_or_default().contains(&keys));
    // Nothing of the campaign was made, and the foreign objects are as they were.
    assert!(
        secrets
            .get_opt(&format!("{name}-s3-credentials"))
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(before().await, foreign, "a foreign object was changed");

    // Deleting the campaign runs its cleanup, which deletes only what is the campaign's.
    api.delete(name, &DeleteParams::default()).await.unwrap();
    wait_for("the campaign to be gone", 60, async || {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
    assert_eq!(
        before().await,
        foreign,
        "the cleanup touched a foreign object"
    );

    // What the operator did, as the API server saw it: only what its Role grants, in this
    // namespace; the foreign objects looked at by their metadata alone and never written.
    let calls = recorded.calls();
    recording::assert_allowed(&calls, &ns);
    for c in calls
        .iter()
        .filter(|c| c.name.as_deref() == Some(&*keys) || c.name.as_deref() == Some(&*minio))
    {
        assert!(
            c.verb == "get" && c.meta_only,
            "the operator did more than read the metadata of a foreign object: {c:?}"
        );
    }
    assert!(
        calls
            .iter()
            .any(|c| c.name.as_deref() == Some(&*keys) && c.meta_only),
        "the foreign Secret's metadata was never looked at: {calls:#?}"
    );
}

#[test]
fn the_recording_client_reads_paths_as_the_authorizer_does() {
    let c = recording::call(
        "GET",
        "/apis/batch/v1/namespaces/t/jobs",
        "labelSelector=a&watch=true",
        "",
    )
    .unwrap();
    assert_eq!(
        (c.verb.as_str(), c.group.as_str(), c.resource.as_str()),
        ("watch", "batch", "jobs")
    );
    let c = recording::call(
        "PATCH",
        "/apis/pqbench.io/v1alpha1/namespaces/t/benchmarkcampaigns/q/status",
        "",
        "",
    )
    .unwrap();
    assert_eq!(
        (c.verb.as_str(), c.resource.as_str(), c.name.as_deref()),
        ("patch", "benchmarkcampaigns/status", Some("q"))
    );
    let c = recording::call("GET", "/api/v1/namespaces/t/secrets/q-keys", "", "").unwrap();
    assert_eq!(
        (c.verb.as_str(), c.group.as_str(), c.namespace.as_deref()),
        ("get", "", Some("t"))
    );
    let c = recording::call("GET", "/api/v1/namespaces/t/secrets", "", "").unwrap();
    assert_eq!(c.verb, "list");
    assert!(recording::call("GET", "/apis", "", "").is_none());
    let c = recording::call("GET", "/apis/batch/v1/jobs", "", "").unwrap();
    assert_eq!((c.verb.as_str(), c.namespace), ("list", None));
}

/// An external-server campaign small enough to run here in a minute: two modes, two
/// blocks, one process per run.
fn small_campaign(name: &str, endpoint: &str) -> String {
    format!(
        r"
apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata:
  name: {name}
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells:
    - operation: [get]
      objectSize: [4KiB]
      loop: {{type: open, rates: [20], threads: 2}}
  repetitions: 2
  warmup: 1s
  measured: 1s
  drain: 1s
  fixtures: 4
  seed: 36
  pause:
    enabled: false
  server:
    external:
      endpoint: {endpoint}
      bucket: under-test
      credentialsSecret: s3-keys
  deadlines:
    run: 60s
"
    )
}

/// One tenant's results bucket holding more than the operator reads (an `analysis.json`
/// of 9 MiB, written where its analysis Job would write it) fails that campaign with a
/// condition naming the object, read no further than its limit, while another tenant's
/// campaign in another namespace, run by the same operator, reaches `Succeeded`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_analysis_fails_its_campaign_only() {
    if client_or_skip().is_none() {
        return;
    }
    let client = Client::try_default().await.unwrap();
    install_crd(&client).await;
    let (ns_a, ns_b) = (namespace("tenant-a"), namespace("tenant-b"));
    let dir = tempfile::tempdir().unwrap();
    let s3 = s3::EmbeddedS3::start(&dir.path().join("s3"), 0).unwrap();
    s3.create_bucket("under-test").unwrap();
    for ns in [&ns_a, &ns_b] {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
        k8s::create_credentials_secret(&secrets, "s3-keys", s3.access_key(), s3.secret_key()).await;
    }
    // One operator for both namespaces, each watched on its own (a Role in each).
    let recorded = recording::controller(&[&ns_a, &ns_b]).await;

    for (ns, name) in [(&ns_a, "a"), (&ns_b, "b")] {
        k8s::apply(&client, ns, &small_campaign(name, s3.endpoint()))
            .await
            .unwrap();
    }
    let store = s3.settings().client().unwrap();
    let mut played = std::collections::BTreeSet::new();
    let mut threads = Vec::new();
    let until = std::time::Instant::now() + Duration::from_secs(300);
    let (a, b) = loop {
        let a = Api::<BenchmarkCampaign>::namespaced(client.clone(), &ns_a)
            .get("a")
            .await
            .unwrap();
        let b = Api::<BenchmarkCampaign>::namespaced(client.clone(), &ns_b)
            .get("b")
            .await
            .unwrap();
        let done = |c: &BenchmarkCampaign| {
            c.status
                .as_ref()
                .is_some_and(|s| matches!(s.phase, Phase::Succeeded | Phase::Failed))
        };
        if done(&a) && done(&b) {
            break (a, b);
        }
        assert!(
            std::time::Instant::now() < until,
            "not finished: a {:?}, b {:?}",
            a.status.map(|s| s.message),
            b.status.map(|s| s.message)
        );
        for (ns, c) in [(&ns_a, &a), (&ns_b, &b)] {
            let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
            let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
            for job in jobs.list(&ListParams::default()).await.unwrap() {
                let key = format!("{ns}/{}", job.name_any());
                if !played.insert(key) {
                    continue;
                }
                let all: std::collections::BTreeMap<String, Secret> = secrets
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|s| (s.name_any(), s))
                    .collect();
                let component = job
                    .labels()
                    .get("app.kubernetes.io/component")
                    .cloned()
                    .unwrap_or_default();
                if component == "probe" {
                    // The pre-flight probe: this host's ping to the shared server.
                    play::play_probe(&client, ns, &job, &all, dir.path())
                        .await
                        .unwrap();
                    continue;
                }
                match (component == "analysis", c.name_any().as_str()) {
                    // Tenant a's "analysis": 9 MiB where the outcome goes.
                    (true, "a") => {
                        let loc = c.status.as_ref().unwrap().results.clone().unwrap();
                        store
                            .put_object()
                            .bucket(&loc.bucket)
                            .key(format!("{}analysis.json", loc.prefix))
                            .body(vec![b' '; 9 << 20].into())
                            .send()
                            .await
                            .unwrap();
                    }
                    (true, _) => threads.push(play::play_analysis(&job, &all, dir.path())),
                    (false, _) => threads.extend(play::play_job(&job, &all, dir.path(), None)),
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    for t in threads {
        t.join().unwrap();
    }
    let sa = a.status.unwrap();
    assert_eq!(sa.phase, Phase::Failed, "{:?}", sa.message);
    let msg = sa.message.unwrap();
    assert!(
        msg.contains(
            "analysis.json: an object of 9437184 bytes exceeds the limit of 8388608 bytes"
        ),
        "{msg}"
    );
    let ready = sa.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(ready.reason, "ResultsTooLarge");
    let sb = b.status.unwrap();
    assert_eq!(sb.phase, Phase::Succeeded, "{:?}", sb.message);
    assert!(!sb.verdicts.is_empty());
    // Each namespace's calls stayed in it and within its Role.
    let calls = recorded.calls();
    for ns in [&ns_a, &ns_b] {
        let mine: Vec<recording::Call> = calls
            .iter()
            .filter(|c| c.namespace.as_deref() == Some(ns.as_str()))
            .cloned()
            .collect();
        recording::assert_allowed(&mine, ns);
    }
    assert!(
        calls
            .iter()
            .all(|c| c.namespace.as_deref() == Some(&*ns_a)
                || c.namespace.as_deref() == Some(&*ns_b)),
        "a call outside the watched namespaces"
    );
}

/// The tenant-input policy: a campaign naming a worker image outside the policy and a
/// credentials Secret its namespace's owner did not label is refused before anything is
/// made, the condition and the event naming both fields, and that Secret's data is never
/// read (the operator's requests on it are metadata-only GETs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_outside_the_policy_is_refused_naming_its_fields_and_the_secret_is_never_read() {
    if client_or_skip().is_none() {
        return;
    }
    let client = Client::try_default().await.unwrap();
    install_crd(&client).await;
    let ns = namespace("policy");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    // Somebody's keys, not labelled for campaigns.
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "prod-s3"},
                "data": {"AWS_ACCESS_KEY_ID": "cHJvZA==", "AWS_SECRET_ACCESS_KEY": "c2VjcmV0"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let recorded = recording::controller(&[&ns]).await;
    let text = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata:
  name: greedy
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells:
    - operation: [get]
      objectSize: [4KiB]
      concurrency: [1]
  repetitions: 2
  seed: 36
  server:
    external:
      endpoint: https://s3.example.com
      bucket: theirs
      credentialsSecret: prod-s3
  clients:
    image: docker.io/attacker/miner:1
";
    k8s::apply(&client, &ns, text).await.unwrap();
    let api: Api<BenchmarkCampaign> = Api::namespaced(client.clone(), &ns);
    let c = wait_for("the campaign to be refused", 60, async || {
        let c = api.get("greedy").await.ok()?;
        (c.status.as_ref()?.phase == Phase::Failed).then_some(c)
    })
    .await;
    let st = c.status.unwrap();
    let msg = st.message.unwrap();
    assert!(
        msg.contains("the cluster's policy refuses spec.clients.image: image docker.io/attacker/miner:1 is not allowed here")
            && msg.contains("spec.server.external.credentialsSecret: Secret prod-s3 is not labelled pqbench.io/credentials: \"true\""),
        "{msg}"
    );
    let ready = st.conditions.iter().find(|c| c.type_ == "Ready").unwrap();
    assert_eq!(ready.reason, "PolicyRefused");
    let ev = k8s::event(&client, &ns, "PolicyRefused").await;
    assert!(ev.note.unwrap_or_default().contains("spec.clients.image"));
    let calls = recorded.calls();
    recording::assert_allowed(&calls, &ns);
    let on_secret: Vec<&recording::Call> = calls
        .iter()
        .filter(|c| c.resource == "secrets" && c.name.as_deref() == Some("prod-s3"))
        .collect();
    assert!(
        !on_secret.is_empty(),
        "the Secret's label was never looked at"
    );
    assert!(
        on_secret.iter().all(|c| c.verb == "get" && c.meta_only),
        "the operator read the unlabelled Secret: {on_secret:#?}"
    );
    // Nothing was created for it.
    assert!(
        calls
            .iter()
            .all(|c| c.verb != "create" || c.resource == "events"),
        "{calls:#?}"
    );
}
