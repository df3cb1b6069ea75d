//! The operator's metrics: a closed set of names, labels from fixed enums (STYLE.md
//! "Observability"), served on `/metrics` (OpenMetrics with exemplars when the scraper
//! accepts it, else the Prometheus text format: [`obs::exposition::exposition`]).
//!
//! - `pqbench_operator_reconciliations_total`: reconcile passes.
//! - `pqbench_operator_reconcile_failures_total{error}`: failed passes by error kind
//!   (`kube`, `store`, `finalizer`, …: [`crate::Error::kind`]).
//! - `pqbench_operator_reconcile_duration_seconds`: time per pass, with the pass's trace id
//!   as exemplar when traces are exported.
//! - `pqbench_operator_campaigns{phase}`: campaigns this replica has seen, by current phase.
//! - `pqbench_operator_campaign_phase_transitions_total{phase}`: campaigns entering a phase.
//! - `pqbench_operator_runs_total{outcome}`: runs `completed`, `retried`, `failed`.
//! - `pqbench_operator_leader`: 1 while this replica holds the Lease.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicI64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::api::Phase;

/// Label of a run outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Outcome {
    /// `completed`, `retried` or `failed`.
    pub outcome: &'static str,
}

/// Label of a failed pass.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabel {
    /// The error kind.
    pub error: &'static str,
}

/// Label of a phase.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabel {
    /// The phase.
    pub phase: &'static str,
}

/// Exemplar label of a reconcile pass.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TraceLabel {
    /// The pass's trace id (32 hex digits).
    pub trace_id: String,
}

const PHASES: [Phase; 6] = [
    Phase::Pending,
    Phase::Provisioning,
    Phase::Running,
    Phase::Analyzing,
    Phase::Succeeded,
    Phase::Failed,
];

/// The operator's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Reconcile passes.
    pub reconciliations: Counter,
    /// Failed passes by error kind.
    pub failures: Family<ErrorLabel, Counter>,
    /// Time per pass (trace id exemplars).
    pub reconcile_duration: HistogramWithExemplars<TraceLabel>,
    /// Phase transitions.
    pub transitions: Family<PhaseLabel, Counter>,
    /// Runs by outcome.
    pub runs: Family<Outcome, Counter>,
    /// Whether this replica leads.
    pub leader: Gauge<i64, AtomicI64>,
    campaigns: Family<PhaseLabel, Gauge<i64, AtomicI64>>,
    phases: Mutex<BTreeMap<String, Phase>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("pqbench_operator");
        let reconciliations = Counter::default();
        registry.register(
            "reconciliations",
            "Reconcile passes",
            reconciliations.clone(),
        );
        let failures = Family::<ErrorLabel, Counter>::default();
        registry.register(
            "reconcile_failures",
            "Failed reconcile passes by error kind",
            failures.clone(),
        );
        let reconcile_duration = HistogramWithExemplars::new(
            [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0].into_iter(),
        );
        registry.register_with_unit(
            "reconcile_duration",
            "Time per reconcile pass",
            prometheus_client::registry::Unit::Seconds,
            reconcile_duration.clone(),
        );
        let campaigns = Family::<PhaseLabel, Gauge<i64, AtomicI64>>::default();
        registry.register(
            "campaigns",
            "Campaigns this replica has seen, by current phase",
            campaigns.clone(),
        );
        for p in PHASES {
            campaigns
                .get_or_create(&PhaseLabel { phase: p.as_str() })
                .set(0);
        }
        let transitions = Family::<PhaseLabel, Counter>::default();
        registry.register(
            "campaign_phase_transitions",
            "Campaigns entering a phase",
            transitions.clone(),
        );
        let runs = Family::<Outcome, Counter>::default();
        registry.register("runs", "Runs by outcome", runs.clone());
        let leader = Gauge::<i64, AtomicI64>::default();
        registry.register(
            "leader",
            "1 while this replica holds the Lease",
            leader.clone(),
        );
        Self {
            registry,
            reconciliations,
            failures,
            reconcile_duration,
            transitions,
            runs,
            leader,
            campaigns,
            phases: Mutex::new(BTreeMap::new()),
        }
    }
}

impl Metrics {
    /// Records the phase of campaign `key` (`namespace/name`); `None` when it is gone.
    pub fn campaign_phase(&self, key: &str, phase: Option<Phase>) {
        let Ok(mut phases) = self.phases.lock() else {
            return;
        };
        match phase {
            Some(p) => phases.insert(key.to_owned(), p),
            None => phases.remove(key),
        };
        for p in PHASES {
            let n = phases.values().filter(|&&q| q == p).count();
            self.campaigns
                .get_or_create(&PhaseLabel { phase: p.as_str() })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// The exposition for a scraper sending `accept`: content type and body.
    pub fn render(&self, accept: Option<&str>) -> (&'static str, String) {
        obs::exposition::exposition(&self.registry, accept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_the_closed_set() {
        let m = Metrics::default();
        m.reconciliations.inc();
        m.failures
            .get_or_create(&ErrorLabel { error: "kube" })
            .inc();
        m.transitions
            .get_or_create(&PhaseLabel { phase: "Running" })
            .inc();
        m.campaign_phase("ns/a", Some(Phase::Running));
        m.campaign_phase("ns/b", Some(Phase::Running));
        m.campaign_phase("ns/b", None);
        m.reconcile_duration.observe(
            0.2,
            Some(TraceLabel {
                trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
            }),
            None,
        );
        let (ct, om) = m.render(Some("application/openmetrics-text;version=1.0.0"));
        assert!(ct.starts_with("application/openmetrics-text"));
        assert!(
            om.contains("# {trace_id=\"0af7651916cd43dd8448eb211c80319c\"} 0.2"),
            "{om}"
        );
        let (ct, text) = m.render(None);
        assert!(ct.starts_with("text/plain; version=0.0.4"));
        for name in [
            "# TYPE pqbench_operator_reconciliations_total counter",
            "pqbench_operator_reconciliations_total 1",
            "pqbench_operator_reconcile_failures_total{error=\"kube\"} 1",
            "pqbench_operator_campaign_phase_transitions_total{phase=\"Running\"} 1",
            "pqbench_operator_campaigns{phase=\"Running\"} 1",
            "pqbench_operator_campaigns{phase=\"Failed\"} 0",
            "pqbench_operator_reconcile_duration_seconds_count 1",
            "pqbench_operator_leader 0",
        ] {
            assert!(text.contains(name), "{name} missing from\n{text}");
        }
        assert!(
            !text.contains("trace_id") && !text.contains("# EOF"),
            "{text}"
        );
    }
}
