//! The Prometheus exposition both binaries serve on `/metrics`: OpenMetrics for a scraper
//! that asks for it, else the Prometheus text format 0.0.4 (the guide's docs/src/observability.md).

use prometheus_client::registry::Registry;

/// The OpenMetrics content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The Prometheus text format content type.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition of `registry` for a scraper sending `accept`: OpenMetrics if it accepts
/// `application/openmetrics-text`, else the Prometheus text format 0.0.4. Returns the
/// content type and the body.
pub fn exposition(registry: &Registry, accept: Option<&str>) -> (&'static str, String) {
    let mut om = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut om, registry);
    if accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
        (OPENMETRICS, om)
    } else {
        (PROMETHEUS_TEXT, prometheus_text(&om))
    }
}

/// Rewrites OpenMetrics text as the Prometheus text format 0.0.4: a counter family is
/// named with its `_total` suffix in `# HELP`/`# TYPE` (0.0.4 names families by their
/// samples), `unknown` becomes `untyped`, `# UNIT` and `# EOF` lines go, and exemplars
/// (`… # {trace_id="…"} 0.5`) are cut from sample lines.
pub fn prometheus_text(openmetrics: &str) -> String {
    use std::collections::HashSet;
    let mut counters = HashSet::new();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some((name, kind)) = rest.split_once(' ')
            && kind == "counter"
        {
            counters.insert(name.to_owned());
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = line
            .strip_prefix("# HELP ")
            .map(|r| ("# HELP ", r))
            .or_else(|| line.strip_prefix("# TYPE ").map(|r| ("# TYPE ", r)));
        if let Some((tag, rest)) = meta {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            let name = if counters.contains(name) {
                format!("{name}_total")
            } else {
                name.to_owned()
            };
            let tail = if tag == "# TYPE " && tail == "unknown" {
                "untyped"
            } else {
                tail
            };
            out.push_str(tag);
            out.push_str(&name);
            out.push(' ');
            out.push_str(tail);
            out.push('\n');
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        out.push_str(strip_exemplar(line));
        out.push('\n');
    }
    out
}

/// A sample line without its exemplar: the first ` # ` outside the label set's quotes.
fn strip_exemplar(line: &str) -> &str {
    let bytes = line.as_bytes();
    let (mut in_labels, mut in_quotes, mut escaped) = (false, false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if in_quotes {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_quotes = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'{' => in_labels = true,
            b'}' => in_labels = false,
            b'"' if in_labels => in_quotes = true,
            b'#' if !in_labels && i > 0 && bytes[i - 1] == b' ' => {
                return line[..i].trim_end();
            }
            _ => {}
        }
    }
    line
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn prometheus_text_names_counters_by_their_samples_and_drops_exemplars() {
        let om = "# HELP x_seconds Time.\n# TYPE x_seconds histogram\n# UNIT x_seconds seconds\n\
                  x_seconds_bucket{le=\"0.5\",a=\"q # r\"} 1 # {trace_id=\"ab\"} 0.2\n\
                  x_seconds_sum 0.2\n# HELP n Things.\n# TYPE n counter\nn_total 3\n\
                  # TYPE u unknown\nu 1\n# EOF\n";
        let text = prometheus_text(om);
        assert_eq!(
            text,
            "# HELP x_seconds Time.\n# TYPE x_seconds histogram\n\
             x_seconds_bucket{le=\"0.5\",a=\"q # r\"} 1\nx_seconds_sum 0.2\n\
             # HELP n_total Things.\n# TYPE n_total counter\nn_total 3\n\
             # TYPE u untyped\nu 1\n"
        );
    }
}
