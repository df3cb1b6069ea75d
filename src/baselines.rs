//! `pqbench run`'s testbed baselines (`baselines.json`, [`analysis::testbed`]): taken on
//! this host before the first run, kept with the results, read by every analysis of them.

use std::path::Path;

use anyhow::{Context as _, Result};
use campaign::Manifest;
use campaign::design::Plan;
use campaign::placement::format_cpu_list;
use worker::testbed::{Baselines, Iperf3Server, ProbeSettings};

/// The file beside the results.
pub(crate) const FILE: &str = worker::analyze::BASELINES;

/// Takes the baselines of a campaign in `dir` unless it has them (a resumed campaign keeps
/// those of its first start) or its spec turns them off. `endpoint` is the S3 endpoint
/// given instead of the embedded server.
pub(crate) fn take_unless_kept(
    dir: &Path,
    m: &Manifest,
    plan: &Plan,
    cpus: &run::planner::LocalCpus,
    endpoint: Option<&str>,
) -> Result<()> {
    let path = dir.join(FILE);
    if !m.spec.testbed.baselines || path.exists() {
        return Ok(());
    }
    let settings = ProbeSettings::of(plan, m.spec.measured.0);
    let pl = &cpus.placement;
    let probe = match endpoint {
        None => worker::testbed::Plan {
            site: "this host".into(),
            server_host: "127.0.0.1".into(),
            iperf3: Iperf3Server::Start,
            disk_dir: Ok(std::env::temp_dir()),
            server_cpus: pl.server.as_deref().map(format_cpu_list),
            client_cpus: pl.clients.as_deref().map(format_cpu_list),
            server_cores: pl.server.as_ref().map(|v| cores(v.len())),
            settings,
        },
        Some(ep) => worker::testbed::Plan {
            site: "this host".into(),
            server_host: worker::testbed::endpoint_host(ep).unwrap_or_else(|| ep.to_owned()),
            iperf3: Iperf3Server::None(format!(
                "the S3 server is {ep}, not this host's embedded one: no iperf3 server beside it"
            )),
            disk_dir: Err(format!(
                "the S3 server is {ep}: its disk is not this host's"
            )),
            server_cpus: None,
            client_cpus: pl.clients.as_deref().map(format_cpu_list),
            server_cores: None,
            settings,
        },
    };
    eprintln!(
        "testbed baselines: network (iperf3, {} s each way, {} streams), disk (fio, {} s), round trip (ping) …",
        settings.seconds, settings.streams, settings.seconds
    );
    let b = worker::testbed::take(&probe);
    // Ctrl-C reaches the probes too (one process group): what they left is not a baseline,
    // and a resumed campaign measures again.
    if crate::local::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        eprintln!("testbed baselines: interrupted, not kept");
        return Ok(());
    }
    eprintln!("testbed baselines: {}", analysis::words::baselines(&b));
    let text = serde_json::to_string_pretty(&b)?;
    std::fs::write(&path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

#[allow(clippy::cast_precision_loss, reason = "CPU counts are small")]
fn cores(n: usize) -> f64 {
    n as f64
}

/// The baselines kept in `dir`, if any. An unreadable file is a warning naming it: the
/// report goes on without them (its bottleneck section says so).
pub(crate) fn read(dir: &Path) -> Option<Baselines> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path).ok()?;
    match serde_json::from_str(&text) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!(
                "warning: {} is not readable as baselines ({e}); the report judges no network or disk ceiling",
                path.display()
            );
            None
        }
    }
}
