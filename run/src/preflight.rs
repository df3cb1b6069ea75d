//! The operator's pre-flight probe (study IV-A, the testbed baselines on a cluster): what
//! its Job is given ([`ProbeSpec`]) and what it leaves, `baselines.json` under the
//! campaign's prefix in the results bucket (the name `pqbench run` keeps beside its
//! results), which the analysis Job reads.
//!
//! The probe is split where the hardware is. The server disk's writes are measured by an
//! init container in MinIO's pod, on MinIO's data volume before MinIO starts
//! (`pqbench-worker --disk-probe /data`), which leaves its [`Probe`] of the disk as the
//! container's termination message; the operator reads it from the pod's status and hands
//! it to the Job here. The network (iperf3 both ways, against an `iperf3 -s` sidecar in
//! MinIO's pod) and the round trip (ping to MinIO's pod) are measured by the Job, on the
//! clients' node group, before the first run.

pub use analysis::testbed::{Baselines, Disk, Probe, ProbeSettings};
use serde::{Deserialize, Serialize};

use crate::runspec::{Output, S3Target};

/// The baselines' name under the campaign's prefix (and beside `pqbench run`'s results).
pub const BASELINES: &str = "baselines.json";

/// The most of `baselines.json` the operator reads (bytes): the file is written by a pod of
/// the campaign, in a bucket the campaign's pods may write.
pub const BASELINES_LIMIT: usize = 64 << 10;

/// The baselines in words (`network … up, … down; disk …; round trip …`), as the report and
/// `pqbench run` say them.
pub fn words(b: &Baselines) -> String {
    analysis::words::baselines(b)
}

/// The environment variable the operator's probe Job passes its spec in.
pub const PROBE_SPEC_ENV: &str = "PQBENCH_PROBE_SPEC";

/// The port of the `iperf3 -s` sidecar beside MinIO (iperf3's default).
pub const IPERF3_PORT: u16 = 5201;

/// The largest termination message Kubernetes keeps (bytes): the disk probe's JSON must
/// fit, and the operator reads no more.
pub const TERMINATION_MESSAGE_LIMIT: usize = 4096;

/// What the pre-flight probe Job measures and where it writes `baselines.json`
/// (`pqbench-worker --probe-env PQBENCH_PROBE_SPEC`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProbeSpec {
    /// Where the baselines are taken (`node group clients`).
    pub site: String,
    /// The port of the iperf3 server beside the server, or why there is none (an external
    /// server).
    pub iperf3: Result<u16, String>,
    /// The server disk's probe, taken beside the server (or why not).
    pub disk: Probe<Disk>,
    /// The server's CPUs (MinIO's `server.cpus`), when confined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<f64>,
    /// How long and how wide each probe runs.
    pub settings: ProbeSettings,
    /// The store under test (its endpoint's host is ping's target, and iperf3's when it
    /// has a sidecar): the results store's endpoint, region and credentials where
    /// `results` gives none of its own.
    pub s3: S3Target,
    /// The results: S3 output, whose prefix gets `baselines.json`.
    pub results: Output,
}

/// Reads the disk probe's termination message (the init container's JSON) as the operator
/// gets it from the pod's status. Anything else, or nothing, is "not measured" with the
/// reason: the message is the pod's, not trusted to be well formed.
pub fn disk_from_message(message: Option<&str>) -> Probe<Disk> {
    let Some(m) = message.map(str::trim).filter(|m| !m.is_empty()) else {
        return Probe::NotMeasured(
            "MinIO's disk-probe init container left no termination message".into(),
        );
    };
    if m.len() > TERMINATION_MESSAGE_LIMIT {
        return Probe::NotMeasured(format!(
            "MinIO's disk-probe termination message is {} bytes, more than Kubernetes keeps",
            m.len()
        ));
    }
    serde_json::from_str::<Probe<Disk>>(m).unwrap_or_else(|e| {
        Probe::NotMeasured(format!(
            "MinIO's disk-probe termination message is not a disk probe ({e})"
        ))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn the_disk_probes_message_is_read_and_anything_else_is_a_reason() {
        let d = Disk {
            write_bytes_per_s: 5e8,
            write_latency_ms: 2.0,
            block_bytes: 1 << 20,
            direct: true,
            tool: "fio-3.33".into(),
        };
        let m = serde_json::to_string(&Probe::Measured(d.clone())).unwrap();
        assert_eq!(disk_from_message(Some(&m)), Probe::Measured(d));
        let why = |m: Option<&str>| match disk_from_message(m) {
            Probe::NotMeasured(w) => w,
            Probe::Measured(_) => panic!("{m:?} read as a measurement"),
        };
        assert!(why(None).contains("no termination message"));
        assert!(why(Some("  ")).contains("no termination message"));
        assert!(why(Some("Error: fio")).contains("not a disk probe"));
        assert!(why(Some(&"x".repeat(5000))).contains("5000 bytes"));
        let not = serde_json::to_string(&Probe::<Disk>::NotMeasured("fio is not installed".into()))
            .unwrap();
        assert_eq!(why(Some(&not)), "fio is not installed");
    }
}
