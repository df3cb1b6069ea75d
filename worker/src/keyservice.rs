//! The operator's key service pod (`pqbench-worker --serve-kms-env VAR`, issue 41): the
//! embedded key service of crate `kms` (`kms/PROTOCOL.md`) on one port per round trip of
//! the campaign's remote arms ([`run::keyservice::KeyServiceSpec`]), the keys read from
//! the campaign's keys Secret mounted read-only ([`kms::KeyStore::open_mounted`]), the
//! credentials from its own Secret. It serves until SIGTERM (the Deployment's deletion), as
//! `pqbench serve-kms` does for `pqbench run`.

use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use kms::{EmbeddedKms, KeyStore, ServiceOptions};
use run::keyservice::KeyServiceSpec;

use crate::{Error, Result};

/// The key service's `GET /metrics`: this process's CPU seconds and resident memory under
/// the Prometheus client libraries' standard names ([`run::keyservice::CPU_METRIC`],
/// [`run::keyservice::RSS_METRIC`]), which a remote run's sampler reads each second.
pub fn metrics_source() -> kms::MetricsSource {
    kms::MetricsSource(Arc::new(|| {
        let cpu = cpu_time::ProcessTime::try_now()
            .ok()
            .map(|t| t.as_duration().as_secs_f64());
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, v: Option<f64>| {
            if let Some(v) = v {
                out.push_str(&format!(
                    "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}\n"
                ));
            }
        };
        metric(
            run::keyservice::CPU_METRIC,
            "counter",
            "Total user and system CPU time spent in seconds.",
            cpu,
        );
        metric(
            run::keyservice::RSS_METRIC,
            "gauge",
            "Resident memory size in bytes.",
            crate::host::own_rss(),
        );
        out
    }))
}

/// Serves `spec` until SIGTERM or Ctrl-C; then prints what each port answered.
pub fn serve(spec: &KeyServiceSpec) -> Result<()> {
    spec.validate()?;
    let store = Arc::new(KeyStore::open_mounted(&spec.keys).map_err(s3::Error::from)?);
    let (access, secret) =
        crate::engine::resolve_credentials(&spec.credentials).map_err(|e| match e {
            Error::Credentials(m) => Error::Config(format!("key service credentials: {m}")),
            other => other,
        })?;
    let secret = zeroize::Zeroizing::new(secret);
    let mut services = Vec::new();
    for p in &spec.ports {
        let options = ServiceOptions {
            // Every address of the pod: the workers reach it through its Service.
            addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, p.port)),
            region: spec.region.clone(),
            rtt: p.rtt.0,
            rate: None,
            threads: spec.threads,
            metrics: Some(metrics_source()),
        };
        let service = EmbeddedKms::start_with(store.clone(), &options, &access, &secret)
            .map_err(s3::Error::from)?;
        services.push((p.clone(), service));
    }
    {
        // A service keeps serving when nobody reads its output.
        let mut out = std::io::stdout().lock();
        for (p, _) in &services {
            let _ = writeln!(
                out,
                "pqbench key service on port {} (rtt {}, region {}), keys in {}",
                p.port,
                campaign::units::format_duration(p.rtt.0),
                spec.region,
                store.dir().display()
            );
        }
        for id in store.key_ids() {
            let name = store.spec(&id).map(|s| s.name()).unwrap_or_default();
            let _ = writeln!(out, "key {id} {name}");
        }
        for (path, why) in store.skipped() {
            let _ = writeln!(out, "skipped {}: {why}", path.display());
        }
        let _ = out.flush();
    }
    crate::process::until_stopped()?;
    for (p, service) in services {
        let (ok, throttled, refused) = service.counts();
        service.stop();
        eprintln!(
            "pqbench key service on port {} stopped ({ok} answered, {throttled} throttled, \
             {refused} refused)",
            p.port
        );
    }
    Ok(())
}
