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

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use run::records::Record;
use s3::{OpStats, Stage};

use crate::Result;

pub use obs::otlp::{ExportStats, provider};
pub use run::trace::{DEFAULT_SAMPLE_RATIO, OtlpProtocol, TraceConfig, TraceReport, TraceSpec};

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

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
