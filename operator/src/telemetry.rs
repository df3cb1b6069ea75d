//! Logs and traces of the operator (STYLE.md "Observability").
//!
//! - Logs: `RUST_LOG` filters (default `info`), `PQBENCH_LOG_FORMAT=json` for JSON lines.
//!   Secrets never reach a log line: the reconciler logs names, never Secret data.
//! - Traces: every reconcile pass is a span (`reconcile`, with the campaign and namespace),
//!   exported over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `_TRACES_ENDPOINT`) is set;
//!   `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_TRACES_SAMPLER(_ARG)` and `OTEL_SERVICE_NAME`
//!   apply as usual ([`run::trace::TraceConfig::resolve`]). Passes are few, so every
//!   pass is traced unless `OTEL_TRACES_SAMPLER` says otherwise. The pass's trace id is the
//!   exemplar of `pqbench_operator_reconcile_duration_seconds` ([`trace_id`]).

use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use run::trace::{TraceConfig, TraceSpec};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Keeps the trace exporter alive; [`Telemetry::shutdown`] flushes it.
#[derive(Debug, Default)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    /// Where spans go, if anywhere.
    pub traces: Option<TraceConfig>,
}

impl Telemetry {
    /// Flushes the spans still queued (call before exiting; it blocks up to 10 s).
    pub fn shutdown(&self) {
        if let Some(p) = &self.provider {
            let _ = p.shutdown_with_timeout(std::time::Duration::from_secs(10));
        }
    }
}

/// The trace settings from the environment: the standard `OTEL_*` variables, every pass
/// traced unless `OTEL_TRACES_SAMPLER` is set.
pub fn trace_config(env: &dyn Fn(&str) -> Option<String>) -> run::Result<Option<TraceConfig>> {
    let spec = TraceSpec {
        sample_ratio: env("OTEL_TRACES_SAMPLER").is_none().then_some(1.0),
        ..TraceSpec::default()
    };
    TraceConfig::resolve(Some(&spec), env)
}

/// Installs the global subscriber: logs, and OTLP traces when configured. Call inside the
/// Tokio runtime. A bad `OTEL_*` setting is an error naming the variable.
pub fn init() -> anyhow::Result<Telemetry> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let json = std::env::var("PQBENCH_LOG_FORMAT").is_ok_and(|v| v == "json");
    let config = trace_config(&|v| std::env::var(v).ok())?;
    let provider = config.as_ref().map(provider).transpose()?;
    let otel = provider.as_ref().map(layer);
    let registry = tracing_subscriber::registry().with(filter).with(otel);
    if json {
        registry
            .with(tracing_subscriber::fmt::layer().json())
            .try_init()?;
    } else {
        registry.with(tracing_subscriber::fmt::layer()).try_init()?;
    }
    Ok(Telemetry {
        provider,
        traces: config,
    })
}

/// The operator's span exporter for `config` (batched OTLP, parent-based ratio sampling).
pub fn provider(config: &TraceConfig) -> Result<SdkTracerProvider, obs::Error> {
    Ok(obs::otlp::provider(
        config,
        "pqbench-operator",
        Vec::new(),
        Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(config.sample_ratio))),
    )?
    .0)
}

/// The `tracing` layer that turns the operator's spans into OpenTelemetry spans.
pub fn layer<S>(provider: &SdkTracerProvider) -> impl tracing_subscriber::Layer<S> + use<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer("pqbench-operator"))
}

/// The trace id of the current span, if it is being traced (32 hex digits).
pub fn trace_id() -> Option<String> {
    let cx = tracing::Span::current().context();
    let span = cx.span();
    let sc = span.span_context();
    (sc.is_valid() && sc.is_sampled()).then(|| sc.trace_id().to_string())
}
