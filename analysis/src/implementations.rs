//! The implementations a campaign ran on and whether they interoperate (issue 40): the
//! interop matrices its runs' workers computed before timing (`summary.json` `interop`),
//! merged into one for the report.
//!
//! A round trip counts as failed when it failed in any run. Each backend is listed once per
//! distinct (crates, CPU features) with the hosts it ran on, so that a campaign whose client
//! nodes differ in CPU features (one with AVX2, one without) says so.

use std::collections::BTreeMap;

use envelope::interop::{BackendInfo, Cell, Matrix};
use envelope::{Backend, Mode};
use serde::{Deserialize, Serialize};

/// A backend as it ran: its crates, its CPU features, and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendRun {
    /// The backend, its crates and its CPU features.
    #[serde(flatten)]
    pub info: BackendInfo,
    /// The client hosts it was checked on.
    pub hosts: Vec<String>,
}

/// The campaign's merged interop matrix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementations {
    /// Runs whose summaries carried a matrix.
    pub runs: usize,
    /// Each backend as it ran.
    pub backends: Vec<BackendRun>,
    /// Every round trip, failed when it failed in any run.
    pub cells: Vec<Cell>,
}

impl Implementations {
    /// `"125 of 125 round trips interoperate (3 backends, 11 modes, v1 and v2)"`.
    pub fn headline(&self) -> String {
        let distinct: std::collections::BTreeSet<Backend> =
            self.backends.iter().map(|b| b.info.backend).collect();
        envelope::interop::headline(&self.cells, distinct.len())
    }
}

/// Merges the runs' matrices (`(host, matrix)` per run); `None` when no run had one.
pub fn merge<'a>(runs: impl IntoIterator<Item = (&'a str, &'a Matrix)>) -> Option<Implementations> {
    let mut n = 0;
    let mut cells: BTreeMap<(Mode, envelope::interop::Format, Backend, Backend), Cell> =
        BTreeMap::new();
    let mut backends: Vec<BackendRun> = Vec::new();
    for (host, m) in runs {
        n += 1;
        for c in &m.cells {
            let slot = cells
                .entry((c.mode, c.format, c.sealer, c.opener))
                .or_insert_with(|| c.clone());
            if slot.error.is_none() && c.error.is_some() {
                slot.error.clone_from(&c.error);
            }
        }
        for info in &m.backends {
            match backends.iter_mut().find(|b| &b.info == info) {
                Some(b) if !b.hosts.iter().any(|h| h == host) => b.hosts.push(host.to_owned()),
                Some(_) => {}
                None => backends.push(BackendRun {
                    info: info.clone(),
                    hosts: vec![host.to_owned()],
                }),
            }
        }
    }
    backends.sort_by_key(|b| b.info.backend);
    (n > 0).then(|| Implementations {
        runs: n,
        backends,
        cells: cells.into_values().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(mode: Mode, sealer: Backend, opener: Backend, error: Option<&str>) -> Cell {
        Cell {
            mode,
            format: envelope::interop::Format::V1,
            sealer,
            opener,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn a_round_trip_failed_in_any_run_is_failed_and_hosts_are_listed_per_backend() {
        let info = |b, f: &[&str]| BackendInfo {
            backend: b,
            crates: vec!["x 1".into()],
            cpu_features: f.iter().map(|s| (*s).to_owned()).collect(),
        };
        let a = Matrix {
            backends: vec![info(Backend::Libcrux, &["avx2"])],
            cells: vec![cell(Mode::MlKem768, Backend::AwsLc, Backend::Libcrux, None)],
        };
        let b = Matrix {
            backends: vec![info(Backend::Libcrux, &[])],
            cells: vec![cell(
                Mode::MlKem768,
                Backend::AwsLc,
                Backend::Libcrux,
                Some("decrypt"),
            )],
        };
        let m = merge([("n1", &a), ("n2", &b), ("n1", &a)]).expect("merged");
        assert_eq!(m.runs, 3);
        assert_eq!(m.cells.len(), 1);
        assert_eq!(m.cells[0].error.as_deref(), Some("decrypt"));
        assert_eq!(m.backends.len(), 2, "two CPU feature sets: two entries");
        assert_eq!(m.backends[0].hosts, ["n1"]);
        assert!(
            m.headline().starts_with("0 of 1 round trips"),
            "{}",
            m.headline()
        );
        assert!(merge([]).is_none());
    }
}
