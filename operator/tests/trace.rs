//! A reconcile pass is a span (issue 7): with `OTEL_EXPORTER_OTLP_ENDPOINT` naming an OTLP
//! receiver (in process; `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`), the pass's `reconcile` span
//! arrives with the campaign and its namespace, and its trace id is the exemplar of the
//! reconcile-duration histogram in the OpenMetrics exposition.
//!
//! This test is a binary of its own, with its subscriber the process's global default.
//! Inside the library's test binary it shared the process with tests that reconcile on
//! other threads: `tracing` caches a call site's interest when the call site is first hit,
//! against the dispatcher of the thread that hits it, so a `reconcile` span first hit by
//! another test cached "never" for this test's scoped subscriber too, and the span was
//! never made (CI failed so, "no reconcile span in []").

#![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

#[path = "support/stored_campaign.rs"]
mod stored_campaign;

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use tracing_subscriber::layer::SubscriberExt as _;

use operator::BenchmarkCampaign;
use operator::metrics::Metrics;
use operator::reconcile::{Config, Context, reconcile};

const NS: &str = "bench";
const CAMPAIGN: &str = "/apis/pqbench.io/v1alpha1/namespaces/bench/benchmarkcampaigns/quick";

/// One reconcile pass against a mock API server that expects exactly the finalizer patch.
async fn one_pass(metrics: Arc<Metrics>) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    // A new campaign: no finalizer yet, so the pass's one call is the patch that adds it.
    let campaign = stored_campaign::cluster_minio(NS, &[]);
    let server = tokio::spawn({
        let campaign = campaign.clone();
        async move {
            let mut handle = pin!(handle);
            let (req, send) = handle.next_request().await.expect("the finalizer patch");
            assert_eq!(
                (req.method(), req.uri().path()),
                (&Method::PATCH, CAMPAIGN),
                "{}",
                req.uri()
            );
            let body = req.into_body().collect_bytes().await.unwrap();
            let body = String::from_utf8_lossy(&body);
            assert!(body.contains("pqbench.io/cleanup"), "{body}");
            send.send_response(
                Response::builder()
                    .status(StatusCode::OK)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&campaign).unwrap()))
                    .unwrap(),
            );
            let extra =
                tokio::time::timeout(Duration::from_millis(200), handle.next_request()).await;
            if let Ok(Some((req, _))) = extra {
                panic!("unexpected call {} {}", req.method(), req.uri());
            }
        }
    });
    let ctx = Arc::new(Context::new(
        Client::new(service, NS),
        Config {
            worker_image: "worker:test".into(),
            node_exporter_image: operator::resources::DEFAULT_NODE_EXPORTER_IMAGE.into(),
            probe_image: "ghcr.io/pqbench/pqbench-probe:test".into(),
            instance: "test".into(),
            policy: operator::policy::Policy::default(),
            operator_namespace: None,
            egress_except: operator::resources::METADATA_ADDRESSES
                .map(String::from)
                .to_vec(),
            secrets_ttl_seconds: 3600,
        },
        metrics,
    ));
    let c: BenchmarkCampaign = serde_json::from_value(campaign).unwrap();
    tokio::time::timeout(Duration::from_secs(10), reconcile(Arc::new(c), ctx))
        .await
        .expect("the pass finishes")
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the finalizer patch came")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_pass_is_a_span_whose_trace_id_is_the_metric_exemplar() {
    let mut collector = fake_opentelemetry_collector::FakeCollectorServer::start()
        .await
        .unwrap();
    let endpoint = collector.endpoint();
    let config = operator::telemetry::trace_config(&|v| match v {
        "OTEL_EXPORTER_OTLP_ENDPOINT" => Some(endpoint.clone()),
        "OTEL_EXPORTER_OTLP_PROTOCOL" => Some("grpc".into()),
        _ => None,
    })
    .unwrap()
    .expect("traces configured by OTEL_EXPORTER_OTLP_ENDPOINT");
    assert!(
        (config.sample_ratio - 1.0).abs() < f64::EPSILON,
        "every pass"
    );
    let provider = operator::telemetry::provider(&config).unwrap();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(operator::telemetry::layer(&provider)),
    )
    .expect("the only subscriber of this process");
    let metrics = Arc::new(Metrics::default());
    one_pass(metrics.clone()).await;
    provider.force_flush().unwrap();
    let spans = collector.exported_spans(1, Duration::from_secs(10)).await;
    let pass = spans
        .iter()
        .find(|s| s.name == "reconcile")
        .unwrap_or_else(|| panic!("no reconcile span in {spans:?}"));
    assert!(pass.parent_span_id.is_empty(), "a pass is a root span");
    let attr = |k: &str| pass.attributes.get(k).cloned().unwrap_or_default();
    assert!(
        attr("campaign").contains("\"quick\""),
        "{:?}",
        pass.attributes
    );
    assert!(
        attr("namespace").contains(&format!("\"{NS}\"")),
        "{:?}",
        pass.attributes
    );
    assert_eq!(pass.trace_id.len(), 32);
    let (_, exposition) = metrics.render(Some("application/openmetrics-text"));
    assert!(
        exposition.contains(&format!("# {{trace_id=\"{}\"}}", pass.trace_id)),
        "the pass's trace id is the exemplar:\n{exposition}"
    );
    // The spans the kube client made inside the pass hang below it.
    assert!(
        spans
            .iter()
            .filter(|s| s.span_id != pass.span_id)
            .all(|s| s.trace_id == pass.trace_id),
        "{spans:?}"
    );
    let _ = provider.shutdown();
    collector.abort();
}
