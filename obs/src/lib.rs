//! # obs: what the worker and the operator show of themselves
//!
//! - [`otlp`]: the OTLP span exporter ([`otlp::provider`]) over gRPC or HTTP/protobuf,
//!   counting the spans the collector accepted ([`otlp::ExportStats`]);
//! - [`exposition`]: `/metrics` in OpenMetrics or the Prometheus text format.
//!
//! Neither binary's own metrics or spans are defined here, only how they leave the process.

pub mod exposition;
pub mod otlp;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OTLP exporter could not be built for the endpoint.
    #[error("traces: cannot build the OTLP {protocol} exporter for {endpoint}: {source}")]
    Exporter {
        /// The transport.
        protocol: String,
        /// The endpoint.
        endpoint: String,
        /// The SDK's error.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}
