//! Reconciler tests against a mock API server (`tower_test`; the controller-rs and kube
//! `mock_tests.rs` shape): each [`Scenario`] is a campaign and the exact sequence of API
//! calls the executor must make for it, each answered by the mock. They pin what the
//! executor does with what [`crate::step::decide`] decides: the order (status before
//! actions), the paths, and the bodies (no Secret value outside a Secret).

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};

use crate::api::BenchmarkCampaign;
use crate::metrics::Metrics;
use crate::reconcile::{Config, Context, reconcile};

#[path = "../tests/support/stored_campaign.rs"]
mod stored_campaign;

const NS: &str = "bench";

/// `examples/quick.yaml`, parsed and validated (the unit tests' campaign).
pub(crate) fn quick() -> campaign::Manifest {
    campaign::Manifest::parse(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/quick.yaml"
        ))
        .unwrap(),
        "quick.yaml",
    )
    .unwrap()
}
const CAMPAIGNS: &str = "/apis/pqbench.io/v1alpha1/namespaces/bench/benchmarkcampaigns/quick";
const SECRETS: &str = "/api/v1/namespaces/bench/secrets";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/bench/events";
const NETPOLS: &str = "/apis/networking.k8s.io/v1/namespaces/bench/networkpolicies";

/// What the mock answers.
#[derive(Clone, Debug)]
enum Reply {
    /// 404 with a Status.
    NotFound,
    /// The request body back (201/200).
    Echo,
    /// The campaign, with the status of a status patch or the finalizer added.
    Campaign,
    /// This JSON.
    Json(Value),
}

/// A check of a request body.
type Check = Box<dyn Fn(&Value) + Send>;

/// One expected call.
struct Call {
    method: Method,
    path: String,
    check: Option<Check>,
    reply: Reply,
}

fn call(method: Method, path: impl Into<String>, reply: Reply) -> Call {
    Call {
        method,
        path: path.into(),
        check: None,
        reply,
    }
}

fn checked(
    method: Method,
    path: impl Into<String>,
    reply: Reply,
    check: impl Fn(&Value) + Send + 'static,
) -> Call {
    Call {
        method,
        path: path.into(),
        check: Some(Box::new(check)),
        reply,
    }
}

/// The scenarios.
#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// A new campaign: the finalizer goes on first.
    AddsFinalizer,
    /// Pending: status first (Provisioning, the hash), then the event, the Secrets and MinIO.
    PendingProvisions,
    /// Provisioning past its deadline with MinIO never ready: Failed, Jobs stopped (no
    /// `keepOnFailure`), a Warning event; nothing is provisioned any more.
    ProvisioningDeadline,
    /// Deleted: the finalizer deletes every child that is the campaign's (tolerating one
    /// already gone, leaving someone else's), records an event and removes itself.
    DeletionCleansUp,
}

fn base() -> Value {
    stored_campaign::cluster_minio(NS, &["pqbench.io/cleanup"])
}

fn not_found() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "reason": "NotFound", "code": 404, "message": "not found"})
}

fn job_list(names: &[&str]) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "JobList", "metadata": {"resourceVersion": "1"},
           "items": names.iter().map(|n| json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": n, "namespace": NS}})).collect::<Vec<_>>()})
}

/// An object of the campaign (its controller owner reference), as a metadata-only GET
/// answers (`PartialObjectMetadata`).
fn ours(api_version: &str, kind: &str, name: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
               "ownerReferences": [{"apiVersion": "pqbench.io/v1alpha1",
                   "kind": "BenchmarkCampaign", "name": "quick", "uid": "0000-1111",
                   "controller": true, "blockOwnerDeletion": true}]}})
}

/// The metadata-only GETs of the campaign's fixed child names before they are made
/// (Pending, Provisioning): none is there.
fn no_foreign_children() -> Vec<Call> {
    [
        format!("{SECRETS}/quick-s3-credentials"),
        format!("{SECRETS}/quick-keys"),
        format!("{NETPOLS}/quick-workers"),
        "/api/v1/namespaces/bench/services/quick-minio".to_owned(),
        "/apis/apps/v1/namespaces/bench/statefulsets/quick-minio".to_owned(),
        format!("{NETPOLS}/quick-minio"),
    ]
    .into_iter()
    .map(|p| call(Method::GET, p, Reply::NotFound))
    .collect()
}

fn deleted() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200})
}

impl Scenario {
    fn campaign(self) -> Value {
        let mut c = base();
        match self {
            Self::AddsFinalizer => {
                c["metadata"]["finalizers"] = json!([]);
            }
            Self::PendingProvisions => {}
            Self::ProvisioningDeadline => {
                c["status"] = json!({"phase": "Provisioning",
                                     "phaseSince": "2020-01-01T00:00:00Z"});
                // The example keeps a failed campaign's Jobs; this one does not.
                c["spec"]["keepOnFailure"] = json!(false);
            }
            Self::DeletionCleansUp => {
                c["metadata"]["deletionTimestamp"] = json!("2026-11-30T13:00:00Z");
                c["status"] = json!({"phase": "Running"});
            }
        }
        c
    }

    fn calls(self) -> Vec<Call> {
        // Worker, analysis and probe Jobs (as the query string carries it).
        let labels = "pqbench.io/campaign=quick,app.kubernetes.io/component+in+%28worker,+analysis,+probe%29";
        match self {
            Self::AddsFinalizer => vec![checked(Method::PATCH, CAMPAIGNS, Reply::Campaign, |b| {
                assert!(b.to_string().contains("pqbench.io/cleanup"), "{b}");
            })],
            Self::PendingProvisions => [
                // The results store's Secret, before anything exists.
                call(
                    Method::GET,
                    format!("{SECRETS}/quick-s3-credentials"),
                    Reply::NotFound,
                ),
            ]
            .into_iter()
            // Nobody else's object at the child names.
            .chain(no_foreign_children())
            .chain([
                checked(
                    Method::PATCH,
                    format!("{CAMPAIGNS}/status"),
                    Reply::Campaign,
                    |b| {
                        let st = &b["status"];
                        assert_eq!(st["phase"], "Provisioning");
                        assert_eq!(st["preregHash"].as_str().unwrap().len(), 64);
                        assert_eq!(st["registeredAt"], "2026-11-30T12:00:00Z");
                        assert_eq!(st["results"]["prefix"], "bench/quick/0000-1111/");
                    },
                ),
                checked(Method::POST, EVENTS, Reply::Echo, |b| {
                    assert_eq!(b["reason"], "Accepted");
                    assert_eq!(b["type"], "Normal");
                }),
                call(
                    Method::GET,
                    format!("{SECRETS}/quick-s3-credentials"),
                    Reply::NotFound,
                ),
                checked(Method::POST, SECRETS, Reply::Echo, |b| {
                    assert_eq!(b["metadata"]["name"], "quick-s3-credentials");
                    assert_eq!(b["immutable"], true);
                    let data = b["data"].as_object().unwrap();
                    assert_eq!(
                        data.keys().collect::<Vec<_>>(),
                        ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]
                    );
                }),
                call(
                    Method::GET,
                    format!("{SECRETS}/quick-keys"),
                    Reply::NotFound,
                ),
                checked(Method::POST, SECRETS, Reply::Echo, |b| {
                    assert_eq!(b["metadata"]["name"], "quick-keys");
                    assert!(b["data"].as_object().is_some_and(|d| !d.is_empty()));
                    assert_eq!(b["metadata"]["ownerReferences"][0]["uid"], "0000-1111");
                }),
                // The workers' fence: egress to DNS and the campaign's MinIO only.
                checked(Method::POST, NETPOLS, Reply::Echo, |b| {
                    assert_eq!(b["metadata"]["name"], "quick-workers");
                    assert_eq!(b["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
                    assert_eq!(b["spec"]["egress"].as_array().unwrap().len(), 2);
                }),
                // Created (a plain create, never an apply that would merge into an object
                // that appeared meanwhile).
                checked(
                    Method::POST,
                    "/api/v1/namespaces/bench/services",
                    Reply::Echo,
                    |b| assert_eq!(b["metadata"]["name"], "quick-minio"),
                ),
                // MinIO's fence, before MinIO.
                checked(Method::POST, NETPOLS, Reply::Echo, |b| {
                    assert_eq!(b["metadata"]["name"], "quick-minio");
                    assert_eq!(b["spec"]["policyTypes"], json!(["Ingress"]));
                }),
                checked(
                    Method::POST,
                    "/apis/apps/v1/namespaces/bench/statefulsets",
                    Reply::Echo,
                    |b| {
                        let pod = &b["spec"]["template"]["spec"];
                        assert!(pod["nodeSelector"]["eks.amazonaws.com/nodegroup"].is_string());
                        assert_eq!(pod["containers"][1]["name"], "node-exporter");
                    },
                ),
            ])
            .collect(),
            Self::ProvisioningDeadline => {
                let mut set = ours("apps/v1", "StatefulSet", "quick-minio");
                set["status"] = json!({"replicas": 1, "readyReplicas": 0});
                let mut foreign = no_foreign_children();
                foreign[4].reply = Reply::Json(ours("apps/v1", "StatefulSet", "quick-minio"));
                [
                    call(
                        Method::GET,
                        "/apis/apps/v1/namespaces/bench/statefulsets/quick-minio",
                        Reply::Json(set),
                    ),
                    call(
                        Method::GET,
                        format!("{SECRETS}/quick-s3-credentials"),
                        Reply::NotFound,
                    ),
                ]
                .into_iter()
                .chain(foreign)
                .chain([
                    // The pods' images and the digests their kubelets resolved: listed by
                    // the campaign's label, a container not started yet left out.
                    call(
                        Method::GET,
                        "/api/v1/namespaces/bench/pods?&labelSelector=pqbench.io/campaign=quick",
                        Reply::Json(json!({"apiVersion": "v1", "kind": "PodList",
                            "metadata": {"resourceVersion": "1"},
                            "items": [{"metadata": {"name": "quick-minio-0", "namespace": NS},
                                "spec": {"containers": [
                                    {"name": "minio", "image": "quay.io/minio/minio:RELEASE.2025"},
                                    {"name": "node-exporter", "image": "node-exporter:1"}]},
                                "status": {"containerStatuses": [
                                    {"name": "minio", "image": "quay.io/minio/minio:RELEASE.2025",
                                     "imageID": "quay.io/minio/minio@sha256:aa", "ready": false,
                                     "restartCount": 0},
                                    {"name": "node-exporter", "image": "node-exporter:1",
                                     "imageID": "", "ready": false, "restartCount": 0}]}}]})),
                    ),
                    checked(
                        Method::PATCH,
                        format!("{CAMPAIGNS}/status"),
                        Reply::Campaign,
                        |b| {
                            let st = &b["status"];
                            assert_eq!(
                                st["images"],
                                json!([{"image": "quay.io/minio/minio:RELEASE.2025",
                                        "imageID": "quay.io/minio/minio@sha256:aa"}])
                            );
                            assert_eq!(st["phase"], "Failed");
                            let msg = st["message"].as_str().unwrap();
                            assert!(msg.contains("not provisioned within"), "{msg}");
                            assert!(msg.contains("0/1 pods ready"), "{msg}");
                            assert!(st["finishedAt"].is_string());
                        },
                    ),
                    call(
                        Method::GET,
                        format!("/apis/batch/v1/namespaces/bench/jobs?&labelSelector={labels}"),
                        Reply::Json(job_list(&[])),
                    ),
                    checked(Method::POST, EVENTS, Reply::Echo, |b| {
                        assert_eq!(b["reason"], "ProvisioningDeadlineExceeded");
                        assert_eq!(b["type"], "Warning");
                    }),
                ])
                .collect()
            }
            Self::DeletionCleansUp => vec![
                call(
                    Method::GET,
                    format!("/apis/batch/v1/namespaces/bench/jobs?&labelSelector={labels}"),
                    Reply::Json(json!({"apiVersion": "batch/v1", "kind": "JobList",
                        "metadata": {"resourceVersion": "1"},
                        "items": [ours("batch/v1", "Job", "quick-r0003-a1"),
                            // Someone's Job carrying the campaign's labels: left alone.
                            {"apiVersion": "batch/v1", "kind": "Job",
                             "metadata": {"name": "quick-r0004-a1", "namespace": NS,
                                          "uid": "theirs"}}]})),
                ),
                // Each child: whose it is (the listing says so for the Jobs; metadata only
                // for the others), then a delete whose precondition is the UID found, so
                // an object re-created at that name is not touched.
                checked(
                    Method::DELETE,
                    "/apis/batch/v1/namespaces/bench/jobs/quick-r0003-a1",
                    Reply::Json(deleted()),
                    |b| {
                        assert_eq!(b["propagationPolicy"], "Background");
                        assert_eq!(b["preconditions"]["uid"], "uid-quick-r0003-a1");
                    },
                ),
                call(
                    Method::GET,
                    "/apis/apps/v1/namespaces/bench/statefulsets/quick-minio",
                    Reply::Json(ours("apps/v1", "StatefulSet", "quick-minio")),
                ),
                call(
                    Method::DELETE,
                    "/apis/apps/v1/namespaces/bench/statefulsets/quick-minio",
                    Reply::Json(deleted()),
                ),
                // Already gone: nothing to delete.
                call(
                    Method::GET,
                    "/api/v1/namespaces/bench/services/quick-minio",
                    Reply::NotFound,
                ),
                call(
                    Method::GET,
                    format!("{NETPOLS}/quick-minio"),
                    Reply::Json(ours("networking.k8s.io/v1", "NetworkPolicy", "quick-minio")),
                ),
                call(
                    Method::DELETE,
                    format!("{NETPOLS}/quick-minio"),
                    Reply::Json(deleted()),
                ),
                call(
                    Method::GET,
                    format!("{SECRETS}/quick-s3-credentials"),
                    Reply::Json(ours("v1", "Secret", "quick-s3-credentials")),
                ),
                call(
                    Method::DELETE,
                    format!("{SECRETS}/quick-s3-credentials"),
                    Reply::Json(deleted()),
                ),
                // Someone else's Secret at the keys' name: left alone.
                call(
                    Method::GET,
                    format!("{SECRETS}/quick-keys"),
                    Reply::Json(json!({"apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": "quick-keys", "namespace": NS, "uid": "theirs"}})),
                ),
                call(
                    Method::GET,
                    format!("{NETPOLS}/quick-workers"),
                    Reply::Json(ours(
                        "networking.k8s.io/v1",
                        "NetworkPolicy",
                        "quick-workers",
                    )),
                ),
                call(
                    Method::DELETE,
                    format!("{NETPOLS}/quick-workers"),
                    Reply::Json(deleted()),
                ),
                checked(Method::POST, EVENTS, Reply::Echo, |b| {
                    assert_eq!(b["reason"], "Deleted");
                }),
                checked(Method::PATCH, CAMPAIGNS, Reply::Campaign, |b| {
                    // The finalizer removes itself (a JSON patch on metadata.finalizers).
                    assert!(b.to_string().contains("/metadata/finalizers"), "{b}");
                }),
            ],
        }
    }
}

fn respond(campaign: &Value, reply: &Reply, body: &Value, method: &Method) -> Response<Body> {
    let (code, v) = match reply {
        Reply::NotFound => (StatusCode::NOT_FOUND, not_found()),
        Reply::Echo => (
            if *method == Method::POST {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            body.clone(),
        ),
        Reply::Campaign => {
            let mut c = campaign.clone();
            if let Some(st) = body.get("status") {
                c["status"] = st.clone();
            }
            (StatusCode::OK, c)
        }
        Reply::Json(v) => (StatusCode::OK, v.clone()),
    };
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&v).unwrap()))
        .unwrap()
}

/// Runs one reconcile of a scenario's campaign against the mock, which checks and
/// answers every call in order and fails on any call the scenario does not expect.
async fn run(s: Scenario) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, NS);
    let campaign = s.campaign();
    let calls = s.calls();
    let server = tokio::spawn({
        let campaign = campaign.clone();
        async move {
            let mut handle = pin!(handle);
            for (i, c) in calls.into_iter().enumerate() {
                let (req, send) = handle.next_request().await.unwrap_or_else(|| {
                    panic!("{s:?}: call {i} ({} {}) never came", c.method, c.path)
                });
                let method = req.method().clone();
                let uri = req.uri().to_string();
                let path = uri.split('?').next().unwrap_or("").to_owned();
                let want = c.path.split('?').next().unwrap_or("");
                assert_eq!(
                    (&method, path.as_str()),
                    (&c.method, want),
                    "{s:?}: call {i}: {uri}"
                );
                if let Some(q) = c.path.split_once('?').map(|x| x.1) {
                    let got = urlencoding_decode(&uri);
                    for part in q.split('&').filter(|p| !p.is_empty()) {
                        assert!(got.contains(part), "{s:?}: call {i}: {got} lacks {part}");
                    }
                }
                let bytes = req.into_body().collect_bytes().await.unwrap();
                let body: Value = if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).unwrap()
                };
                if let Some(check) = &c.check {
                    check(&body);
                }
                send.send_response(respond(&campaign, &c.reply, &body, &method));
            }
            // Nothing more may come.
            let extra =
                tokio::time::timeout(Duration::from_millis(200), handle.next_request()).await;
            if let Ok(Some((req, _))) = extra {
                panic!("{s:?}: unexpected call {} {}", req.method(), req.uri());
            }
        }
    });
    let ctx = Arc::new(Context::new(
        client,
        Config {
            worker_image: "worker:test".into(),
            node_exporter_image: crate::resources::DEFAULT_NODE_EXPORTER_IMAGE.into(),
            probe_image: "ghcr.io/pqbench/pqbench-probe:test".into(),
            instance: "test".into(),
            policy: crate::policy::Policy::default(),
            operator_namespace: None,
            egress_except: crate::resources::METADATA_ADDRESSES
                .map(String::from)
                .to_vec(),
            secrets_ttl_seconds: 3600,
        },
        Arc::new(Metrics::default()),
    ));
    let c: BenchmarkCampaign = serde_json::from_value(campaign).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), reconcile(Arc::new(c), ctx))
        .await
        .unwrap_or_else(|_| panic!("{s:?}: reconcile did not finish"));
    out.unwrap_or_else(|e| panic!("{s:?}: reconcile failed: {e}"));
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap_or_else(|_| panic!("{s:?}: expected calls never came"))
        .unwrap();
}

fn urlencoding_decode(s: &str) -> String {
    s.replace("%3D", "=")
        .replace("%2C", ",")
        .replace("%2F", "/")
}

#[tokio::test]
async fn a_new_campaign_gets_the_finalizer_first() {
    run(Scenario::AddsFinalizer).await;
}

#[tokio::test]
async fn pending_writes_status_then_provisions_secrets_and_minio() {
    run(Scenario::PendingProvisions).await;
}

#[tokio::test]
async fn provisioning_past_its_deadline_fails_and_stops_the_jobs() {
    run(Scenario::ProvisioningDeadline).await;
}

#[tokio::test]
async fn deleting_a_campaign_deletes_its_children_and_the_finalizer() {
    run(Scenario::DeletionCleansUp).await;
}
