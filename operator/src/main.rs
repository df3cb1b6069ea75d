//! `pqbench-operator`: reconciles `BenchmarkCampaign` resources, serves `/metrics`,
//! `/healthz` and `/readyz`, and holds a Lease so that one replica reconciles at a time.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use clap::Parser;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use operator::metrics::Metrics;
use operator::reconcile::{Config, Context};
use tracing::{error, info, warn};

/// The pqbench operator.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Address of `/metrics`, `/healthz` and `/readyz`.
    #[arg(long, env = "PQBENCH_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Worker image for campaigns that name none.
    #[arg(long, env = "PQBENCH_WORKER_IMAGE", default_value = concat!("ghcr.io/pqbench/pqbench-worker:", env!("CARGO_PKG_VERSION")))]
    worker_image: String,
    /// Image of the node-exporter sidecar beside MinIO.
    #[arg(long, env = "PQBENCH_NODE_EXPORTER_IMAGE", default_value = operator::resources::DEFAULT_NODE_EXPORTER_IMAGE)]
    node_exporter_image: String,
    /// Image of the testbed probes (the pre-flight probe Job, and the disk probe and iperf3
    /// server beside MinIO): Debian with iperf3, fio, ping and `pqbench-worker`.
    #[arg(long, env = "PQBENCH_PROBE_IMAGE", default_value = concat!("ghcr.io/pqbench/pqbench-probe:", env!("CARGO_PKG_VERSION")))]
    probe_image: String,
    /// Namespaces whose campaigns to run (repeat or separate with commas); the operator
    /// needs the rights of `charts/pqbench/files/rbac-rules.yaml` in each.
    #[arg(
        long,
        env = "PQBENCH_WATCH_NAMESPACE",
        value_delimiter = ',',
        required_unless_present = "all_namespaces",
        conflicts_with = "all_namespaces"
    )]
    watch_namespace: Vec<String>,
    /// Run campaigns in every namespace (needs those rights cluster-wide: a ClusterRole).
    #[arg(long)]
    all_namespaces: bool,
    /// Images campaigns may name besides the operator's own (`clients.image`,
    /// `server.minio.image`): whole references, or prefixes ending in `/` (repeat or
    /// separate with commas).
    #[arg(long, env = "PQBENCH_ALLOWED_IMAGES", value_delimiter = ',')]
    allowed_image: Vec<String>,
    /// Endpoints (`https://host[:port]`) the operator may sign for with its own identity
    /// (a campaign's `results.endpoint` without a credentials Secret).
    #[arg(long, env = "PQBENCH_ALLOWED_ENDPOINTS", value_delimiter = ',')]
    allowed_endpoint: Vec<String>,
    /// Addresses (CIDRs) cut out of the whole-internet egress of campaigns' pods (repeat or
    /// separate with commas); the default is the instance metadata addresses.
    #[arg(long, env = "PQBENCH_EGRESS_EXCEPT", value_delimiter = ',', default_values_t = operator::resources::METADATA_ADDRESSES.map(String::from))]
    egress_except: Vec<String>,
    /// Seconds after a campaign ends that its recipient keys Secret is deleted (and its
    /// MinIO with its credentials when the results are elsewhere), when the campaign does
    /// not say (`secretsTtlSecondsAfterFinished`); 0 keeps them.
    #[arg(long, env = "PQBENCH_SECRETS_TTL_SECONDS", default_value_t = 3600)]
    secrets_ttl_seconds: u32,
    /// Hold the Lease before reconciling (one active replica).
    #[arg(long, default_value_t = true, overrides_with = "no_leader_election")]
    leader_election: bool,
    /// Reconcile without a Lease (a single replica, or tests).
    #[arg(long)]
    no_leader_election: bool,
    /// Name of the Lease.
    #[arg(long, default_value = "pqbench-operator")]
    lease_name: String,
}

struct Health {
    metrics: Arc<Metrics>,
    ready: AtomicBool,
}

async fn serve(addr: SocketAddr, health: Arc<Health>) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} (--metrics-addr)"))?;
    info!(%addr, "serving /metrics, /healthz, /readyz");
    loop {
        let (stream, _) = listener.accept().await?;
        let health = health.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let health = health.clone();
                async move {
                    let text = "text/plain; charset=utf-8";
                    let (code, ct, body) = match req.uri().path() {
                        "/metrics" => {
                            let accept = req
                                .headers()
                                .get(hyper::header::ACCEPT)
                                .and_then(|v| v.to_str().ok());
                            let (ct, body) = health.metrics.render(accept);
                            (StatusCode::OK, ct, body)
                        }
                        "/healthz" => (StatusCode::OK, text, "ok\n".to_owned()),
                        "/readyz" if health.ready.load(Ordering::Relaxed) => {
                            (StatusCode::OK, text, "ready\n".to_owned())
                        }
                        "/readyz" => (
                            StatusCode::SERVICE_UNAVAILABLE,
                            text,
                            "not ready\n".to_owned(),
                        ),
                        _ => (StatusCode::NOT_FOUND, text, "not found\n".to_owned()),
                    };
                    let mut r = Response::new(Full::new(Bytes::from(body)));
                    *r.status_mut() = code;
                    if let Ok(v) = hyper::header::HeaderValue::from_str(ct) {
                        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
                    }
                    Ok::<_, Infallible>(r)
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, svc)
                .await
            {
                warn!(error = %e, "metrics connection");
            }
        });
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let telemetry = operator::telemetry::init()?;
    if let Some(t) = &telemetry.traces {
        info!(endpoint = %t.endpoint, protocol = %t.protocol, sample_ratio = t.sample_ratio, "exporting reconcile traces");
    }
    let args = Args::parse();
    if args.watch_namespace.iter().any(String::is_empty) {
        anyhow::bail!(
            "--watch-namespace (PQBENCH_WATCH_NAMESPACE) holds an empty name: list the namespaces \
             whose campaigns to run, separated by commas, or pass --all-namespaces"
        );
    }
    let client = Client::try_default()
        .await
        .context("cannot reach the Kubernetes API (in-cluster config or KUBECONFIG)")?;
    let metrics = Arc::new(Metrics::default());
    let health = Arc::new(Health {
        metrics: metrics.clone(),
        ready: AtomicBool::new(false),
    });
    // Ready once the API is reachable: a standby replica waiting for the Lease is ready
    // too (it serves /metrics and takes over when the leader goes).
    health.ready.store(true, Ordering::Relaxed);
    let server = tokio::spawn(serve(args.metrics_addr, health.clone()));
    let identity = std::env::var("POD_NAME")
        .unwrap_or_else(|_| format!("pqbench-operator-{}", std::process::id()));
    if args.leader_election && !args.no_leader_election {
        let ns = std::env::var("POD_NAMESPACE").unwrap_or_else(|_| "default".into());
        let leases: Api<Lease> = Api::namespaced(client.clone(), &ns);
        info!(lease = %args.lease_name, namespace = %ns, %identity, "waiting for the Lease");
        loop {
            match operator::lease::try_hold(&leases, &args.lease_name, &identity).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => warn!(error = %e, "Lease"),
            }
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        }
        metrics.leader.set(1);
        info!("holding the Lease");
        let name = args.lease_name.clone();
        let id = identity.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(operator::lease::RENEW).await;
                match operator::lease::try_hold(&leases, &name, &id).await {
                    Ok(true) => {}
                    Ok(false) => {
                        error!("lost the Lease; exiting so that one replica reconciles");
                        std::process::exit(1);
                    }
                    Err(e) => warn!(error = %e, "renewing the Lease"),
                }
            }
        });
    }
    let ctx = Arc::new(Context::new(
        client,
        Config {
            worker_image: args.worker_image,
            node_exporter_image: args.node_exporter_image,
            probe_image: args.probe_image,
            instance: identity,
            operator_namespace: std::env::var("POD_NAMESPACE").ok(),
            egress_except: args
                .egress_except
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect(),
            secrets_ttl_seconds: args.secrets_ttl_seconds,
            policy: operator::policy::Policy {
                allowed_images: args
                    .allowed_image
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect(),
                allowed_endpoints: args
                    .allowed_endpoint
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect(),
            },
        },
        metrics,
    ));
    let scope = if args.all_namespaces {
        info!("running campaigns in every namespace");
        None
    } else {
        info!(namespaces = ?args.watch_namespace, "running campaigns in these namespaces only");
        Some(args.watch_namespace.as_slice())
    };
    tokio::select! {
        () = operator::reconcile::run_in(ctx, scope) => info!("controller stopped"),
        r = server => match r {
            Ok(Err(e)) => return Err(e),
            Ok(Ok(())) => {}
            Err(e) => return Err(e.into()),
        },
    }
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await?;
    Ok(())
}
