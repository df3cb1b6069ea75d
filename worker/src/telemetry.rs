//! Traces of requests (issue 7; DESIGN.md "Real components"; STYLE.md "Observability").
//!
//! Every traced request becomes one `pqbench.request` span with one child span per stage
//! of the study's stage model (section IV-A): `key_establishment`, `key_derivation`,
//! `aead`, `manifest` and `storage`, and under `storage` one span per S3 call
//! (`S3.PutObject`, `S3.GetObject`, …). The spans are built after the request returns,
//! from the same [`OpStats`] the records hold, with explicit timestamps on the same
//! monotonic clock as the stage timers:
//!
//! - a stage span starts where the stage first ran ([`OpStats::stage_start`]) and lasts
//!   exactly the stage's timer: a stage runs in several intervals (AEAD once per chunk,
//!   storage once per S3 call), and its span is their sum laid from the first one;
//! - an S3 call span starts when the call was sent and lasts the storage time attributed to
//!   it, so the calls add up to the storage span.
//!
//! So a trace and a record never disagree about a stage. Nothing is traced inside the
//! timed code: the request path only decides whether to sample, which at ratio 0 is one
//! comparison, and nothing at all when tracing is off.
//!
//! Sampling is head sampling by ratio (decided per request from a counter hashed with
//! SplitMix64, so the chosen requests are spread evenly and reproducibly), plus every failed
//! request. Spans go to an OTLP collector over gRPC or HTTP/protobuf through the SDK's batch
//! processor (its own thread), configured by the run spec's `traces` block or the standard
//! `OTEL_*` variables ([`TraceConfig::resolve`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};
use serde::{Deserialize, Serialize};

use crate::records::Record;
use crate::stats::{OpStats, Stage};
use crate::{Error, Result};

/// Default share of requests traced.
pub const DEFAULT_SAMPLE_RATIO: f64 = 0.01;

pub use campaign::cluster::OtlpProtocol;

/// The `traces` block of a run spec. Every field is optional; what is absent comes from the
/// standard `OTEL_*` variables ([`TraceConfig::resolve`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceSpec {
    /// OTLP endpoint, `http://collector:4317` (gRPC) or `http://collector:4318` (HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Transport; absent: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, `OTEL_EXPORTER_OTLP_PROTOCOL`,
    /// else gRPC on port 4317 and HTTP/protobuf on any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<OtlpProtocol>,
    /// Share of requests traced, in [0, 1] (failed requests always are); absent:
    /// `OTEL_TRACES_SAMPLER`/`OTEL_TRACES_SAMPLER_ARG`, else 0.01.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_ratio: Option<f64>,
}

/// Resolved trace export settings.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceConfig {
    /// Where spans go (for HTTP, the full URL ending in `/v1/traces`).
    pub endpoint: String,
    /// Transport.
    pub protocol: OtlpProtocol,
    /// Share of requests traced.
    pub sample_ratio: f64,
}

/// What a process's traces came to (`process.json`, and what `pqbench run` prints).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceReport {
    /// Where spans went.
    pub endpoint: String,
    /// Transport.
    pub protocol: String,
    /// Head-sampling ratio.
    pub sample_ratio: f64,
    /// Requests traced (sampled by ratio, or failed).
    pub requests_traced: u64,
    /// Spans handed to the exporter.
    pub spans: u64,
    /// Spans the collector accepted.
    pub spans_exported: u64,
    /// Spans whose export failed or that were still queued at shutdown.
    pub spans_lost: u64,
    /// The exporter's last error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl TraceReport {
    /// One line for a terminal: where the spans went and how many arrived.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "traces: {} requests traced (sample ratio {}; failed requests always), {} spans → {} ({}): {} accepted",
            self.requests_traced,
            self.sample_ratio,
            self.spans,
            self.endpoint,
            self.protocol,
            self.spans_exported
        );
        if self.spans_lost > 0 {
            s.push_str(&format!(", {} LOST", self.spans_lost));
            if let Some(e) = &self.last_error {
                s.push_str(&format!(" ({e})"));
            }
        }
        s
    }

    /// Adds another process's report (same endpoint) to this one.
    pub fn add(&mut self, o: &TraceReport) {
        if self.endpoint.is_empty() {
            self.endpoint.clone_from(&o.endpoint);
            self.protocol.clone_from(&o.protocol);
            self.sample_ratio = o.sample_ratio;
        }
        self.requests_traced += o.requests_traced;
        self.spans += o.spans;
        self.spans_exported += o.spans_exported;
        self.spans_lost += o.spans_lost;
        if o.last_error.is_some() {
            self.last_error.clone_from(&o.last_error);
        }
    }
}

fn has_path(url: &str) -> bool {
    url.split_once("://")
        .map(|(_, rest)| rest)
        .unwrap_or(url)
        .split_once('/')
        .is_some_and(|(_, p)| !p.is_empty())
}

fn port_of(url: &str) -> Option<u16> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

impl TraceConfig {
    /// Resolves the settings from a spec's `traces` block and the environment (`env`
    /// looks a variable up; `std::env::var(..).ok()` in the binaries). Precedence: the
    /// block, then `OTEL_EXPORTER_OTLP_TRACES_*`, then `OTEL_EXPORTER_OTLP_*`. `None` (no
    /// tracing) without an endpoint, or when `OTEL_SDK_DISABLED=true` or
    /// `OTEL_TRACES_EXPORTER=none`. Errors name the field or variable.
    pub fn resolve(
        spec: Option<&TraceSpec>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>> {
        let var = |name: &str| {
            env(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v == "none")
        {
            return Ok(None);
        }
        let spec = spec.cloned().unwrap_or_default();
        let (endpoint, from) = if let Some(e) = spec.endpoint.clone().filter(|e| !e.is_empty()) {
            (e, "traces.endpoint".to_owned())
        } else if let Some(e) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            (e, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".to_owned())
        } else if let Some(e) = var("OTEL_EXPORTER_OTLP_ENDPOINT") {
            (e, "OTEL_EXPORTER_OTLP_ENDPOINT".to_owned())
        } else {
            return Ok(None);
        };
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(Error::Config(format!(
                "{from} {endpoint:?}: an OTLP endpoint is a URL, http://host:port"
            )));
        }
        if endpoint.starts_with("https://") {
            return Err(Error::Config(format!(
                "{from} {endpoint:?}: this build exports over plaintext http:// only (no TLS); \
                 put the collector (or an agent) next to the workers"
            )));
        }
        let protocol = match spec.protocol {
            Some(p) => p,
            None => match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                .map(|v| ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", v))
                .or_else(|| {
                    var("OTEL_EXPORTER_OTLP_PROTOCOL").map(|v| ("OTEL_EXPORTER_OTLP_PROTOCOL", v))
                }) {
                Some((name, v)) => v
                    .parse()
                    .map_err(|e| Error::Config(format!("{name}: {e}")))?,
                None if port_of(&endpoint) == Some(4317) => OtlpProtocol::Grpc,
                None => OtlpProtocol::HttpProtobuf,
            },
        };
        // OTLP/HTTP: a base endpoint gets the signal path; a per-signal endpoint or one with
        // a path is used as it is (OTLP exporter specification).
        let endpoint = if protocol == OtlpProtocol::HttpProtobuf
            && from != "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
            && !has_path(&endpoint)
        {
            format!("{}/v1/traces", endpoint.trim_end_matches('/'))
        } else {
            endpoint
        };
        let sample_ratio = match spec.sample_ratio {
            Some(r) => (r, "traces.sampleRatio".to_owned()),
            None => match var("OTEL_TRACES_SAMPLER").as_deref() {
                None => (DEFAULT_SAMPLE_RATIO, String::new()),
                Some("always_on" | "parentbased_always_on") => (1.0, String::new()),
                Some("always_off" | "parentbased_always_off") => (0.0, String::new()),
                Some("traceidratio" | "parentbased_traceidratio") => {
                    match var("OTEL_TRACES_SAMPLER_ARG") {
                        None => (1.0, String::new()),
                        Some(a) => (
                            a.parse().map_err(|_| {
                                Error::Config(format!(
                                    "OTEL_TRACES_SAMPLER_ARG {a:?} is not a number in [0, 1]"
                                ))
                            })?,
                            "OTEL_TRACES_SAMPLER_ARG".to_owned(),
                        ),
                    }
                }
                Some(other) => {
                    return Err(Error::Config(format!(
                        "OTEL_TRACES_SAMPLER {other:?}: use always_on, always_off or traceidratio \
                         (with OTEL_TRACES_SAMPLER_ARG)"
                    )));
                }
            },
        };
        let (sample_ratio, ratio_from) = sample_ratio;
        if !(0.0..=1.0).contains(&sample_ratio) {
            return Err(Error::Config(format!(
                "{ratio_from}: {sample_ratio} must lie in [0, 1]"
            )));
        }
        Ok(Some(Self {
            endpoint,
            protocol,
            sample_ratio,
        }))
    }
}

/// Head sampling: request `n` is sampled when SplitMix64(n) falls below `ratio · 2⁶⁴`.
#[derive(Debug)]
pub struct HeadSampler {
    threshold: u64,
    all: bool,
    next: AtomicU64,
}

impl HeadSampler {
    /// A sampler keeping `ratio` of the requests; `seed` varies the choice between
    /// processes.
    pub fn new(ratio: f64, seed: u64) -> Self {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "ratio in [0, 1] scaled to the u64 range, saturating"
        )]
        let threshold = (ratio.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
        Self {
            threshold,
            all: ratio >= 1.0,
            next: AtomicU64::new(seed),
        }
    }

    /// Whether to trace the next request; failed requests always are.
    #[inline]
    pub fn sample(&self, failed: bool) -> bool {
        if failed || self.all {
            return true;
        }
        if self.threshold == 0 {
            return false;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        splitmix64(n) < self.threshold
    }
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Debug, Default)]
struct ExportCounts {
    exported: AtomicU64,
    last_error: std::sync::Mutex<Option<String>>,
}

/// The OTLP exporter, counting what the collector accepted.
#[derive(Debug)]
struct Counting<E> {
    inner: E,
    counts: Arc<ExportCounts>,
}

impl<E: SpanExporter> SpanExporter for Counting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        let r = self.inner.export(batch).await;
        // What was not accepted is derived when the report is made (handed over − accepted),
        // which also counts spans still queued or dropped by the processor.
        match &r {
            Ok(()) => {
                self.counts.exported.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => {
                if let Ok(mut last) = self.counts.last_error.lock() {
                    *last = Some(e.to_string());
                }
            }
        }
        r
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

/// What a request span says about its run (the same on every request of the run).
#[derive(Clone, Debug)]
pub struct RunAttributes {
    /// Run id.
    pub run_id: String,
    /// Campaign.
    pub campaign: String,
    /// Mode label.
    pub mode: &'static str,
    /// Backend label.
    pub backend: &'static str,
    /// `put` or `get`.
    pub operation: &'static str,
    /// Plaintext bytes per object.
    pub object_size: u64,
    /// Bucket under test.
    pub bucket: String,
}

/// The trace exporter of one process.
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    sampler: HeadSampler,
    config: TraceConfig,
    run: Vec<KeyValue>,
    bucket: String,
    anchor: (Instant, SystemTime),
    counts: ExportStats,
    requests: AtomicU64,
    spans: AtomicU64,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traces")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Spans a batch may hold before the processor drops new ones: at ratio 1 a fast run
/// makes thousands of spans a second.
const QUEUE: usize = 1 << 16;

impl Traces {
    /// Starts the exporter (inside a Tokio runtime: the gRPC channel lives on it).
    /// `resource` adds attributes to the service resource (`service.name` is
    /// `pqbench-worker` unless `OTEL_SERVICE_NAME` says otherwise).
    pub fn start(
        config: &TraceConfig,
        run: &RunAttributes,
        resource: Vec<KeyValue>,
        seed: u64,
    ) -> Result<Self> {
        // The sampling decision is made per request before a span exists ([`HeadSampler`]).
        let (provider, counts) = provider(
            config,
            "pqbench-worker",
            resource,
            opentelemetry_sdk::trace::Sampler::AlwaysOn,
        )?;
        let tracer = provider.tracer("pqbench");
        let run_attrs = vec![
            KeyValue::new("pqbench.run_id", run.run_id.clone()),
            KeyValue::new("pqbench.campaign", run.campaign.clone()),
            KeyValue::new("pqbench.mode", run.mode),
            KeyValue::new("pqbench.backend", run.backend),
            KeyValue::new("pqbench.operation", run.operation),
            KeyValue::new(
                "pqbench.object_size",
                i64::try_from(run.object_size).unwrap_or(i64::MAX),
            ),
        ];
        Ok(Self {
            provider,
            tracer,
            sampler: HeadSampler::new(config.sample_ratio, seed),
            config: config.clone(),
            run: run_attrs,
            bucket: run.bucket.clone(),
            anchor: (Instant::now(), SystemTime::now()),
            counts,
            requests: AtomicU64::new(0),
            spans: AtomicU64::new(0),
        })
    }

    /// The settings in force.
    pub fn config(&self) -> &TraceConfig {
        &self.config
    }

    /// Whether to trace a request that succeeded (`failed` false) or failed.
    #[inline]
    pub fn sample(&self, failed: bool) -> bool {
        self.sampler.sample(failed)
    }

    fn wall(&self, t: Instant) -> SystemTime {
        let (i0, w0) = self.anchor;
        if t >= i0 {
            w0 + (t - i0)
        } else {
            w0 - (i0 - t)
        }
    }

    /// Exports one request: the request span from `start` for `record.total`, its stage
    /// spans and S3 call spans from `stats` (absent for a failed request, whose record
    /// has no stage timers either), and `error` as the span status.
    pub fn record(
        &self,
        start: Instant,
        record: &Record,
        stats: Option<&OpStats>,
        error: Option<&str>,
    ) {
        let outcome = record.outcome.map_or("unknown", |o| o.as_str());
        let mut attrs = self.run.clone();
        attrs.extend([
            KeyValue::new("pqbench.worker", i64::from(record.worker)),
            KeyValue::new("pqbench.seq", i64::try_from(record.seq).unwrap_or(i64::MAX)),
            KeyValue::new(
                "pqbench.phase",
                record.phase.map_or("unknown", |p| p.as_str()),
            ),
            KeyValue::new("pqbench.outcome", outcome),
            KeyValue::new(
                "pqbench.bytes_sent",
                i64::try_from(record.bytes_sent).unwrap_or(i64::MAX),
            ),
            KeyValue::new(
                "pqbench.bytes_received",
                i64::try_from(record.bytes_received).unwrap_or(i64::MAX),
            ),
            KeyValue::new("pqbench.s3_requests", i64::from(record.s3_requests)),
        ]);
        if !record.queue_wait.is_zero() {
            attrs.push(KeyValue::new(
                "pqbench.queue_wait_ns",
                i64::try_from(record.queue_wait.as_nanos()).unwrap_or(i64::MAX),
            ));
        }
        if let Some(class) = record.error_class {
            attrs.push(KeyValue::new("error.type", class));
        }
        let mut spans = 1u64;
        let builder = self
            .tracer
            .span_builder("pqbench.request")
            .with_kind(SpanKind::Client)
            .with_start_time(self.wall(start))
            .with_attributes(attrs);
        let mut span = self.tracer.build_with_context(builder, &Context::new());
        if let Some(e) = error {
            span.set_status(Status::error(e.to_owned()));
        }
        let cx = Context::new().with_span(span);
        if let Some(st) = stats {
            for stage in Stage::ALL {
                let d = st.stage(stage);
                let Some(at) = st.stage_start(stage) else {
                    continue;
                };
                let from = self.wall(at);
                let b = self
                    .tracer
                    .span_builder(stage.as_str())
                    .with_kind(SpanKind::Internal)
                    .with_start_time(from);
                let s = self.tracer.build_with_context(b, &cx);
                spans += 1;
                // Storage is the parent of the S3 call spans.
                let scx = cx.with_span(s);
                if stage == Stage::Storage {
                    spans += self.calls(st, &scx);
                }
                scx.span().end_with_timestamp(from + d);
            }
        }
        cx.span()
            .end_with_timestamp(self.wall(start) + record.total);
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.spans.fetch_add(spans, Ordering::Relaxed);
    }

    fn calls(&self, st: &OpStats, cx: &Context) -> u64 {
        let mut n = 0;
        for c in &st.timeline.calls {
            let from = self.wall(c.start);
            let b = self
                .tracer
                .span_builder(format!("S3.{}", c.op))
                .with_kind(SpanKind::Client)
                .with_start_time(from)
                .with_attributes([
                    KeyValue::new("rpc.system", "aws-api"),
                    KeyValue::new("rpc.service", "S3"),
                    KeyValue::new("rpc.method", c.op),
                    KeyValue::new("aws.s3.bucket", self.bucket.clone()),
                ]);
            let mut s = self.tracer.build_with_context(b, cx);
            s.end_with_timestamp(from + c.storage);
            n += 1;
        }
        n
    }

    /// Flushes what is queued, shuts the exporter down and says what became of the spans.
    pub fn finish(&self) -> TraceReport {
        let _ = self.provider.force_flush();
        let _ = self.provider.shutdown_with_timeout(Duration::from_secs(10));
        let spans = self.spans.load(Ordering::Relaxed);
        let exported = self.counts.exported();
        TraceReport {
            endpoint: self.config.endpoint.clone(),
            protocol: self.config.protocol.as_str().to_owned(),
            sample_ratio: self.config.sample_ratio,
            requests_traced: self.requests.load(Ordering::Relaxed),
            spans,
            spans_exported: exported,
            spans_lost: spans.saturating_sub(exported),
            last_error: self.counts.last_error(),
        }
    }
}

/// What the exporter of a [`provider`] managed to send.
#[derive(Clone, Debug, Default)]
pub struct ExportStats(Arc<ExportCounts>);

impl ExportStats {
    /// Spans the collector accepted.
    pub fn exported(&self) -> u64 {
        self.0.exported.load(Ordering::Relaxed)
    }

    /// The exporter's last error.
    pub fn last_error(&self) -> Option<String> {
        self.0.last_error.lock().ok().and_then(|l| l.clone())
    }
}

/// A tracer provider exporting over OTLP as `config` says, through a batch processor
/// (its own thread), with `sampler`. `service` names the service unless
/// `OTEL_SERVICE_NAME` does; `OTEL_RESOURCE_ATTRIBUTES` adds to `resource`. Call it inside
/// a Tokio runtime: the gRPC channel lives there.
pub fn provider(
    config: &TraceConfig,
    service: &'static str,
    resource: Vec<KeyValue>,
    sampler: opentelemetry_sdk::trace::Sampler,
) -> Result<(SdkTracerProvider, ExportStats)> {
    let build_err = |e: opentelemetry_otlp::ExporterBuildError| {
        Error::Config(format!(
            "traces: cannot build the OTLP {} exporter for {}: {e}",
            config.protocol, config.endpoint
        ))
    };
    let counts = Arc::new(ExportCounts::default());
    let timeout = Duration::from_secs(10);
    let exporter = match config.protocol {
        OtlpProtocol::Grpc => opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(&config.endpoint)
            .with_timeout(timeout)
            .build(),
        OtlpProtocol::HttpProtobuf => opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(&config.endpoint)
            .with_timeout(timeout)
            .build(),
    }
    .map_err(build_err)?;
    let processor = batch(Counting {
        inner: exporter,
        counts: counts.clone(),
    });
    let mut res = opentelemetry_sdk::Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        res = res.with_service_name(service);
    }
    let res = res
        .with_attributes([KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))])
        .with_attributes(resource)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(sampler)
        .with_resource(res)
        .build();
    Ok((provider, ExportStats(counts)))
}

fn batch<E: SpanExporter + 'static>(e: E) -> BatchSpanProcessor {
    BatchSpanProcessor::builder(e)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(QUEUE)
                .with_max_export_batch_size(512)
                .with_scheduled_delay(Duration::from_millis(500))
                .build(),
        )
        .build()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn resolve(spec: Option<&TraceSpec>, vars: &[(&str, &str)]) -> Result<Option<TraceConfig>> {
        TraceConfig::resolve(spec, &env(vars))
    }

    #[test]
    fn no_endpoint_no_traces_and_the_standard_switches_turn_them_off() {
        assert_eq!(resolve(None, &[]).unwrap(), None);
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")];
        assert!(resolve(None, &on).unwrap().is_some());
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(resolve(None, &[on[0], off]).unwrap(), None, "{off:?}");
        }
    }

    #[test]
    fn the_spec_wins_then_per_signal_then_generic_variables() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:4318/custom",
            ),
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ];
        let c = resolve(None, &vars).unwrap().unwrap();
        // A per-signal endpoint is used as it is.
        assert_eq!(c.endpoint, "http://traces:4318/custom");
        assert_eq!(c.protocol, OtlpProtocol::HttpProtobuf);
        assert_eq!(c.sample_ratio, 0.25);
        let c = resolve(None, &vars[..1]).unwrap().unwrap();
        // A base endpoint gets the signal path.
        assert_eq!(c.endpoint, "http://generic:4318/v1/traces");
        assert_eq!(c.sample_ratio, DEFAULT_SAMPLE_RATIO);
        let spec = TraceSpec {
            endpoint: Some("http://collector:4317".into()),
            protocol: None,
            sample_ratio: Some(1.0),
        };
        let c = resolve(Some(&spec), &vars).unwrap().unwrap();
        assert_eq!(
            (c.endpoint.as_str(), c.protocol, c.sample_ratio),
            ("http://collector:4317", OtlpProtocol::Grpc, 1.0),
            "port 4317 means gRPC; the spec's ratio wins"
        );
        let c = resolve(
            None,
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:9999"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_TRACES_SAMPLER", "always_off"),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!((c.protocol, c.sample_ratio), (OtlpProtocol::Grpc, 0.0));
    }

    #[test]
    fn bad_settings_name_the_field_or_variable() {
        let ep = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317");
        for (vars, needle) in [
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4317")],
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4317")],
                "plaintext",
            ),
            (
                vec![ep, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ),
            (
                vec![ep, ("OTEL_TRACES_SAMPLER", "jaeger_remote")],
                "OTEL_TRACES_SAMPLER",
            ),
            (
                vec![
                    ep,
                    ("OTEL_TRACES_SAMPLER", "traceidratio"),
                    ("OTEL_TRACES_SAMPLER_ARG", "2"),
                ],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
        ] {
            let e = resolve(None, &vars).unwrap_err().to_string();
            assert!(e.contains(needle), "{vars:?}: {e}");
        }
        let spec = TraceSpec {
            sample_ratio: Some(-0.5),
            ..TraceSpec::default()
        };
        let e = resolve(Some(&spec), &[ep]).unwrap_err().to_string();
        assert!(e.contains("traces.sampleRatio"), "{e}");
    }

    #[test]
    fn head_sampling_keeps_the_ratio_and_every_failure() {
        let none = HeadSampler::new(0.0, 7);
        assert!((0..10_000).all(|_| !none.sample(false)));
        assert!(none.sample(true), "a failed request is always traced");
        let all = HeadSampler::new(1.0, 7);
        assert!((0..10_000).all(|_| all.sample(false)));
        // 1 % of 100 000: binomial sd ≈ 31.5, so ±160 is five standard deviations.
        let some = HeadSampler::new(0.01, 7);
        let n = (0..100_000).filter(|_| some.sample(false)).count();
        assert!((840..=1160).contains(&n), "{n} of 100000 at ratio 0.01");
    }
}
