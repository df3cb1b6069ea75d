//! Request-trace settings of a run (issue 7; the guide's docs/src/observability.md): the `traces`
//! block of a run spec, its resolution against the standard `OTEL_*` variables, and what a
//! process's traces came to. The export itself (OTLP, spans from the stage timers) is the `worker`
//! crate's (`worker::traces`).

use serde::{Deserialize, Serialize};

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
            return Err(Error::Trace(format!(
                "{from} {endpoint:?}: an OTLP endpoint is a URL, http://host:port"
            )));
        }
        if endpoint.starts_with("https://") {
            return Err(Error::Trace(format!(
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
                    .map_err(|e| Error::Trace(format!("{name}: {e}")))?,
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
                                Error::Trace(format!(
                                    "OTEL_TRACES_SAMPLER_ARG {a:?} is not a number in [0, 1]"
                                ))
                            })?,
                            "OTEL_TRACES_SAMPLER_ARG".to_owned(),
                        ),
                    }
                }
                Some(other) => {
                    return Err(Error::Trace(format!(
                        "OTEL_TRACES_SAMPLER {other:?}: use always_on, always_off or traceidratio \
                         (with OTEL_TRACES_SAMPLER_ARG)"
                    )));
                }
            },
        };
        let (sample_ratio, ratio_from) = sample_ratio;
        if !(0.0..=1.0).contains(&sample_ratio) {
            return Err(Error::Trace(format!(
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
}
