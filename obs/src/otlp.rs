//! The OTLP span exporter both binaries use (the guide's docs/src/observability.md): a batch
//! processor on its own thread, counting what the collector accepted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
use run::trace::{OtlpProtocol, TraceConfig};

use crate::Error;

/// Spans a batch may hold before the processor drops new ones: at ratio 1 a fast run
/// makes thousands of spans a second.
pub const QUEUE: usize = 1 << 16;

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
) -> Result<(SdkTracerProvider, ExportStats), Error> {
    let build_err = |source| Error::Exporter {
        protocol: config.protocol.to_string(),
        endpoint: config.endpoint.clone(),
        source,
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
