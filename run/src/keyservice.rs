//! The operator's key service (issue 41; `kms/PROTOCOL.md`): what its pod is given
//! ([`KeyServiceSpec`], in the environment variable [`KEY_SERVICE_SPEC_ENV`] of
//! `pqbench-worker --serve-kms-env`). One process serves one port per distinct added round
//! trip of the campaign's remote arms ([`campaign::Plan::kms_rtts`]), as `pqbench run`
//! starts one `pqbench serve-kms` per value; the worker pods of a remote arm reach the
//! port of their arm's round trip ([`crate::runspec::KmsTarget`]).
//!
//! The spec carries no secret: the recipient keys and the service's credentials are files
//! of Secrets mounted read-only ([`crate::runspec::KeyRef::Mounted`],
//! [`crate::runspec::Credentials::Mounted`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::runspec::Credentials;
use crate::units::Dur;
use crate::{Error, Result};

/// The environment variable the operator's key service Deployment passes its spec in.
pub const KEY_SERVICE_SPEC_ENV: &str = "PQBENCH_KMS_SPEC";

/// The first port of the key service; the `i`-th round trip is served on `BASE_PORT + i`.
pub const BASE_PORT: u16 = 9500;

/// The most ports (round trips) one key service serves.
pub const MAX_PORTS: usize = 16;

/// The path of the key service's metrics page (`GET`, unsigned), on every port.
pub const METRICS_PATH: &str = "/metrics";

/// Its counter of the service process's CPU seconds (the Prometheus client libraries'
/// standard process metric).
pub const CPU_METRIC: &str = "process_cpu_seconds_total";

/// Its gauge of the service process's resident memory, bytes.
pub const RSS_METRIC: &str = "process_resident_memory_bytes";

/// One listening port of the key service and the round trip added to its answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyServicePort {
    /// TCP port, on every address of the pod.
    pub port: u16,
    /// Round trip added to every answer (`arms[].kms.rtt`).
    pub rtt: Dur,
}

/// What the key service process serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyServiceSpec {
    /// A directory of `<key-type>.key` files mounted from the campaign's keys Secret.
    pub keys: PathBuf,
    /// The credentials requests must be signed with (a mounted Secret's files).
    pub credentials: Credentials,
    /// The region in the keys' ARNs.
    #[serde(default = "region")]
    pub region: String,
    /// One entry per round trip, ports distinct.
    pub ports: Vec<KeyServicePort>,
    /// Worker threads of each port's service.
    #[serde(default = "threads")]
    pub threads: usize,
}

fn region() -> String {
    "us-east-1".into()
}

fn threads() -> usize {
    2
}

impl KeyServiceSpec {
    /// The spec of a campaign's key service: one port per round trip of `rtts` (as
    /// [`campaign::Plan::kms_rtts`] lists them), from [`BASE_PORT`].
    pub fn new(keys: PathBuf, credentials: Credentials, rtts: &[Dur]) -> Result<Self> {
        let ports = rtts
            .iter()
            .enumerate()
            .map(|(i, rtt)| KeyServicePort {
                port: BASE_PORT + u16::try_from(i).unwrap_or(u16::MAX - BASE_PORT),
                rtt: *rtt,
            })
            .collect();
        let spec = Self {
            keys,
            credentials,
            region: region(),
            ports,
            threads: threads(),
        };
        spec.validate()?;
        Ok(spec)
    }

    /// The port serving round trip `rtt`.
    pub fn port_of(&self, rtt: Dur) -> Option<u16> {
        self.ports.iter().find(|p| p.rtt == rtt).map(|p| p.port)
    }

    /// Parses and validates a spec (JSON, as the operator writes it).
    pub fn parse(text: &str) -> Result<Self> {
        let spec: Self =
            serde_json::from_str(text).map_err(|e| Error::Spec(format!("key service: {e}")))?;
        spec.validate()?;
        Ok(spec)
    }

    /// Refuses what the service could not serve, naming the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Spec(format!("key service: {m}")));
        if self.ports.is_empty() {
            return bad("ports: none (a key service serves one port per round trip)".into());
        }
        if self.ports.len() > MAX_PORTS {
            return bad(format!(
                "ports: {} round trips, at most {MAX_PORTS}",
                self.ports.len()
            ));
        }
        for (i, p) in self.ports.iter().enumerate() {
            if p.port == 0 {
                return bad(format!("ports[{i}].port: 0 (a fixed port is needed)"));
            }
            if self.ports[..i].iter().any(|q| q.port == p.port) {
                return bad(format!("ports[{i}].port: {} is served twice", p.port));
            }
        }
        if !(1..=64).contains(&self.threads) {
            return bad(format!("threads: {} (1 to 64)", self.threads));
        }
        if matches!(self.credentials, Credentials::Identity) {
            return bad(
                "credentials: identity (the service needs keys to verify signatures)".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Dur {
        Dur(std::time::Duration::from_millis(n))
    }

    #[test]
    fn one_port_per_round_trip_and_back_from_json() {
        let s = KeyServiceSpec::new(
            "/k".into(),
            Credentials::Mounted("/c".into()),
            &[ms(0), ms(1)],
        )
        .expect("spec");
        assert_eq!(s.port_of(ms(0)), Some(BASE_PORT));
        assert_eq!(s.port_of(ms(1)), Some(BASE_PORT + 1));
        assert_eq!(s.port_of(ms(2)), None);
        let text = serde_json::to_string(&s).expect("json");
        assert_eq!(KeyServiceSpec::parse(&text).expect("parse"), s);
    }

    #[test]
    fn what_cannot_be_served_is_refused_by_field() {
        let creds = Credentials::Mounted("/c".into());
        let e = KeyServiceSpec::new("/k".into(), creds.clone(), &[]).expect_err("refused");
        assert!(e.to_string().contains("ports: none"), "{e}");
        let e =
            KeyServiceSpec::new("/k".into(), Credentials::Identity, &[ms(0)]).expect_err("refused");
        assert!(e.to_string().contains("credentials: identity"), "{e}");
        let mut s = KeyServiceSpec::new("/k".into(), creds, &[ms(0), ms(1)]).expect("spec");
        s.ports[1].port = s.ports[0].port;
        let e = s.validate().expect_err("refused");
        assert!(e.to_string().contains("ports[1].port"), "{e}");
        let e = KeyServiceSpec::parse(r#"{"keys":"/k","credentials":"identity","ports":[],"x":1}"#)
            .expect_err("refused");
        assert!(e.to_string().contains("unknown field `x`"), "{e}");
    }
}
