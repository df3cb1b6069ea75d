//! The two `/metrics` expositions (issue 7): the operator's and the worker's pass
//! `promtool check metrics` (Debian's `prometheus`) with no lint finding, and together they
//! are exactly the closed set the Grafana dashboard is checked against
//! (`charts/pqbench/dashboards/metrics.txt`, read by `scripts/dashboard-check.py`).
//!
//! Fails (never skips) without `promtool`: `.ci/run` installs it.

use std::collections::BTreeSet;
use std::time::Duration;

#[path = "../../worker/tests/support/promtool.rs"]
mod promtool;
use promtool::promtool_clean;

use operator::api::Phase;
use operator::metrics::{ErrorLabel, Metrics, Outcome, PhaseLabel, TraceLabel};
use run::records::{Outcome as RecOutcome, Record};

fn operator_text() -> String {
    let m = Metrics::default();
    m.reconciliations.inc();
    m.failures
        .get_or_create(&ErrorLabel { error: "kube" })
        .inc();
    m.reconcile_duration.observe(
        0.03,
        Some(TraceLabel {
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
        }),
        None,
    );
    m.transitions
        .get_or_create(&PhaseLabel { phase: "Running" })
        .inc();
    m.runs
        .get_or_create(&Outcome {
            outcome: "completed",
        })
        .inc();
    m.campaign_phase("default/quick", Some(Phase::Running));
    m.leader.set(1);
    m.render(None).1
}

fn worker_text() -> String {
    let m = worker::metrics::Metrics::default();
    let run = m.run("ml-kem-768", "aws-lc", "put");
    run.started();
    run.finished(&Record {
        outcome: Some(RecOutcome::Ok),
        total: Duration::from_micros(900),
        key_establishment: Duration::from_micros(20),
        storage: Duration::from_micros(800),
        queue_wait: Duration::from_micros(5),
        bytes_sent: 65_536,
        ..Record::default()
    });
    run.record(&Record {
        outcome: Some(RecOutcome::NotStarted),
        ..Record::default()
    });
    worker::metrics::exposition(m.registry(), None).1
}

#[test]
fn operator_metrics_pass_promtool() {
    promtool_clean(&operator_text());
}

#[test]
fn worker_metrics_pass_promtool() {
    promtool_clean(&worker_text());
}

/// The families an exposition declares (`# TYPE name kind`).
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' ').map(|(n, _)| n.to_owned()))
        .collect()
}

#[test]
fn the_dashboards_closed_set_is_what_the_binaries_expose() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../charts/pqbench/dashboards/metrics.txt");
    let listed: BTreeSet<String> = std::fs::read_to_string(&path)
        .expect("metrics.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let mut exposed = families(&operator_text());
    exposed.extend(families(&worker_text()));
    assert_eq!(
        listed, exposed,
        "charts/pqbench/dashboards/metrics.txt must list exactly the exposed families"
    );
}
