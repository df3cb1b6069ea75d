//! The worker's metrics (issue 7; STYLE.md "Observability"): a closed set of names,
//! `pqbench_<name>_<unit>[_total]` in base units, labels from fixed enums only (mode,
//! backend, operation, stage, outcome), never object keys. Served on `/metrics` by
//! [`serve`] while a run goes.
//!
//! | name | type | labels |
//! |---|---|---|
//! | `pqbench_requests_total` | counter | mode, backend, operation, outcome |
//! | `pqbench_request_duration_seconds` | histogram (successful requests) | mode, backend, operation |
//! | `pqbench_stage_duration_seconds` | histogram (successful requests) | mode, backend, operation, stage |
//! | `pqbench_sent_bytes_total` | counter (HTTP body bytes) | mode, backend, operation |
//! | `pqbench_received_bytes_total` | counter (HTTP body bytes) | mode, backend, operation |
//! | `pqbench_in_flight_requests` | gauge | mode, backend, operation |
//! | `pqbench_queue_wait_seconds` | histogram (open loop: arrival to start) | mode, backend, operation |
//!
//! The exposition is negotiated ([`exposition`]): OpenMetrics 1.0 (what `prometheus-client`
//! writes) when the scraper accepts it, else the Prometheus text format 0.0.4, which
//! `promtool check metrics` and older scrapers read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::{Error, Result};
use run::records::{Outcome, Record};
use s3::Stage;

/// Labels of a run's requests.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabels {
    /// Mode (`ml-kem-768`, …).
    pub mode: &'static str,
    /// Backend (`aws-lc`, `rustcrypto`, `libcrux`, `openssl`).
    pub backend: &'static str,
    /// `put` or `get`.
    pub operation: &'static str,
}

/// [`OpLabels`] plus the outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    /// Mode.
    pub mode: &'static str,
    /// Backend.
    pub backend: &'static str,
    /// Operation.
    pub operation: &'static str,
    /// `ok`, `error` or `not_started`.
    pub outcome: &'static str,
}

/// [`OpLabels`] plus the stage.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabels {
    /// Mode.
    pub mode: &'static str,
    /// Backend.
    pub backend: &'static str,
    /// Operation.
    pub operation: &'static str,
    /// One of the five stages.
    pub stage: &'static str,
}

fn latency_buckets() -> impl Iterator<Item = f64> {
    // 100 µs to 26 s.
    exponential_buckets(1e-4, 2.0, 19)
}

fn stage_buckets() -> impl Iterator<Item = f64> {
    // 1 µs to 36 s.
    exponential_buckets(1e-6, 2.5, 20)
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// The worker's metric families.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<OutcomeLabels, Counter>,
    request_duration: Histograms<OpLabels>,
    stage_duration: Histograms<StageLabels>,
    sent: Family<OpLabels, Counter>,
    received: Family<OpLabels, Counter>,
    in_flight: Family<OpLabels, Gauge<i64, AtomicI64>>,
    queue_wait: Histograms<OpLabels>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("pqbench");
        let requests = Family::<OutcomeLabels, Counter>::default();
        registry.register("requests", "Requests by outcome", requests.clone());
        let request_duration: Histograms<OpLabels> =
            Family::new_with_constructor(|| Histogram::new(latency_buckets()));
        registry.register_with_unit(
            "request_duration",
            "Wall time of a successful request, call to return",
            Unit::Seconds,
            request_duration.clone(),
        );
        let stage_duration: Histograms<StageLabels> =
            Family::new_with_constructor(|| Histogram::new(stage_buckets()));
        registry.register_with_unit(
            "stage_duration",
            "Time of one stage of a successful request (the study's five stage timers)",
            Unit::Seconds,
            stage_duration.clone(),
        );
        let sent = Family::<OpLabels, Counter>::default();
        registry.register_with_unit(
            "sent",
            "HTTP body bytes sent (data and manifests)",
            Unit::Bytes,
            sent.clone(),
        );
        let received = Family::<OpLabels, Counter>::default();
        registry.register_with_unit(
            "received",
            "HTTP body bytes received",
            Unit::Bytes,
            received.clone(),
        );
        let in_flight = Family::<OpLabels, Gauge<i64, AtomicI64>>::default();
        registry.register_with_unit(
            "in_flight",
            "Requests in flight",
            Unit::Other("requests".into()),
            in_flight.clone(),
        );
        let queue_wait: Histograms<OpLabels> =
            Family::new_with_constructor(|| Histogram::new(latency_buckets()));
        registry.register_with_unit(
            "queue_wait",
            "Open loop: time from a request's arrival to its start",
            Unit::Seconds,
            queue_wait.clone(),
        );
        Self {
            registry,
            requests,
            request_duration,
            stage_duration,
            sent,
            received,
            in_flight,
            queue_wait,
        }
    }
}

impl Metrics {
    /// The handles of one run's label set, resolved once so that a request touches only
    /// atomics.
    pub fn run(
        &self,
        mode: &'static str,
        backend: &'static str,
        operation: &'static str,
    ) -> RunMetrics {
        let op = OpLabels {
            mode,
            backend,
            operation,
        };
        let outcome = |outcome| {
            self.requests
                .get_or_create(&OutcomeLabels {
                    mode,
                    backend,
                    operation,
                    outcome,
                })
                .clone()
        };
        RunMetrics {
            ok: outcome(Outcome::Ok.as_str()),
            error: outcome(Outcome::Error.as_str()),
            not_started: outcome(Outcome::NotStarted.as_str()),
            duration: self.request_duration.get_or_create(&op).clone(),
            stages: Stage::ALL.map(|s| {
                self.stage_duration
                    .get_or_create(&StageLabels {
                        mode,
                        backend,
                        operation,
                        stage: s.as_str(),
                    })
                    .clone()
            }),
            sent: self.sent.get_or_create(&op).clone(),
            received: self.received.get_or_create(&op).clone(),
            in_flight: self.in_flight.get_or_create(&op).clone(),
            queue_wait: self.queue_wait.get_or_create(&op).clone(),
        }
    }

    /// The registry (for [`exposition`]).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}

/// One run's metric handles.
#[derive(Clone, Debug)]
pub struct RunMetrics {
    ok: Counter,
    error: Counter,
    not_started: Counter,
    duration: Histogram,
    stages: [Histogram; 5],
    sent: Counter,
    received: Counter,
    in_flight: Gauge<i64, AtomicI64>,
    queue_wait: Histogram,
}

impl RunMetrics {
    /// A request started.
    #[inline]
    pub fn started(&self) {
        self.in_flight.inc();
    }

    /// A request that [`RunMetrics::started`] ended with this record.
    pub fn finished(&self, r: &Record) {
        self.in_flight.dec();
        self.record(r);
    }

    /// Counts a record (a request that never started, too).
    pub fn record(&self, r: &Record) {
        match r.outcome {
            Some(Outcome::Ok) => {
                self.ok.inc();
                self.duration.observe(r.total.as_secs_f64());
                for (h, s) in self.stages.iter().zip(Stage::ALL) {
                    h.observe(r.stage(s).as_secs_f64());
                }
            }
            Some(Outcome::NotStarted) => {
                self.not_started.inc();
            }
            Some(Outcome::Error) | None => {
                self.error.inc();
            }
        }
        self.sent.inc_by(r.bytes_sent);
        self.received.inc_by(r.bytes_received);
        if r.outcome != Some(Outcome::NotStarted) && !r.queue_wait.is_zero() {
            self.queue_wait.observe(r.queue_wait.as_secs_f64());
        }
    }
}

pub use obs::exposition::{OPENMETRICS, PROMETHEUS_TEXT, exposition, prometheus_text};

/// Renders the exposition for a scraper's `Accept` header: content type and body.
pub type Render = Arc<dyn Fn(Option<&str>) -> (&'static str, String) + Send + Sync>;

/// Serves `/metrics` for `registry` on `addr` (port 0: any free port) until the returned
/// handle is aborted or the runtime ends. Returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    registry: Render,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    use http_body_util::Full;
    use hyper::body::Bytes;
    use hyper::{Response, StatusCode};

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Metrics { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| Error::Metrics { addr, source })?;
    let handle = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let render = registry.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let render = render.clone();
                        async move {
                            let resp = if req.uri().path() == "/metrics" {
                                let accept = req
                                    .headers()
                                    .get(hyper::header::ACCEPT)
                                    .and_then(|v| v.to_str().ok());
                                let (ct, body) = render(accept);
                                Response::builder()
                                    .header(hyper::header::CONTENT_TYPE, ct)
                                    .body(Full::new(Bytes::from(body)))
                            } else {
                                Response::builder()
                                    .status(StatusCode::NOT_FOUND)
                                    .body(Full::new(Bytes::from_static(b"only /metrics here\n")))
                            };
                            Ok::<_, std::convert::Infallible>(resp.unwrap_or_default())
                        }
                    },
                );
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, svc)
                    .await;
            });
        }
    });
    Ok((bound, handle))
}
