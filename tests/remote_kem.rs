//! `examples/remote-kem.yaml` end to end, as a user runs it: `pqbench run` as a process,
//! the example's text as it ships except for shorter windows and fewer blocks (the full
//! run's verdicts are in the closing note). It checks that `pqbench run` starts one
//! key service per added round trip, that every remote arm's runs read through it without
//! a failed request, that each declared comparison has its verdict, and that the key
//! service's credentials stay in the keys directory (0600), out of every result file. A
//! test binary of its own, so that nothing else runs beside its pinned servers and clients.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use common::{edited_example, files_under, ok, pqbench_in, s};

#[test]
fn remote_arms_read_through_the_key_service_and_get_their_verdicts() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("examples/remote-kem.yaml")).expect("example");
    let text = edited_example(
        &text,
        "examples/remote-kem.yaml",
        &[
            ("  repetitions: 4\n", "  repetitions: 2\n"),
            ("  warmup: 1s\n", "  warmup: 200ms\n"),
            ("  measured: 3s\n", "  measured: 600ms\n"),
        ],
    );
    let file = dir.path().join("remote-kem.yaml");
    std::fs::write(&file, text).expect("write");
    let out = dir.path().join("results");
    let state = dir.path().join("state");
    let o = pqbench_in(&state, &["run", s(&file), "--out", s(&out)]);
    ok(&o, "pqbench run remote-kem.yaml");
    let log = String::from_utf8_lossy(&o.stderr);
    for rtt in ["0s", "1ms"] {
        assert!(
            log.contains(&format!("key service (rtt {rtt}) on http://127.0.0.1:")),
            "{log}"
        );
    }

    let camp = out.join("remote-kem");
    let md = std::fs::read_to_string(camp.join("report.md")).expect("report.md");
    for pair in [
        "mlkem-kms-0ms vs mlkem-local",
        "x25519-kms-0ms vs x25519-local",
        "mlkem-kms-0ms vs x25519-kms-0ms",
        "mlkem-kms-1ms vs x25519-kms-1ms",
        "mlkem-kms-1ms vs mlkem-kms-0ms",
        "mlkem-kms-1ms-cached vs mlkem-kms-1ms",
    ] {
        assert!(
            md.contains(&format!("| get-4KiB-c8-cores1 | {pair} | 2 |")),
            "no verdict row for {pair}:\n{md}"
        );
    }

    // Every run of every arm: valid, no failed request; the remote ones' specs name their
    // key service.
    let mut remote = 0;
    for run in std::fs::read_dir(camp.join("runs")).expect("runs") {
        let run = run.expect("entry").path();
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(run.join("p0/summary.json")).expect("summary"),
        )
        .expect("json");
        assert_eq!(v["counts"]["failed"], 0, "{}: {v}", run.display());
        assert!(
            v["counts"]["ok"].as_u64().unwrap_or(0) > 0,
            "{}",
            run.display()
        );
        let spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("p0/spec.json")).expect("spec"))
                .expect("json");
        let name = run.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.contains("-kms-") {
            remote += 1;
            assert!(
                spec["kms"]["endpoint"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("http://127.0.0.1:")),
                "{name}: {spec}"
            );
            assert!(spec["cell"]["kms"].is_object(), "{name}");
            // The key service's CPU, sampled from its /metrics as the S3 server's.
            let cores = v["server"]["keyServiceCpuCores"].as_f64().unwrap_or(0.0);
            assert!(cores > 0.0, "{name}: {}", v["server"]);
        } else {
            assert!(spec.get("kms").is_none(), "{name}");
            assert!(v["server"].get("keyServiceCpuCores").is_none(), "{name}");
        }
    }
    assert_eq!(remote, 2 * 5, "2 blocks × 5 remote arms");

    // The key services' credentials: in the campaign's keys directory, 0600, and in no
    // file of the results.
    let keys = files_under(&state.join("pqbench/keys"));
    let envs: Vec<_> = keys
        .iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("kms-") && n.ends_with(".env"))
        })
        .collect();
    assert_eq!(envs.len(), 2, "{keys:?}");
    for env in envs {
        let mode = std::fs::metadata(env).expect("meta").permissions().mode();
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", env.display());
        let secret = std::fs::read_to_string(env)
            .expect("env")
            .lines()
            .find_map(|l| l.strip_prefix("AWS_SECRET_ACCESS_KEY=").map(str::to_owned))
            .expect("a secret line");
        for f in files_under(&camp) {
            let bytes = std::fs::read(&f).expect("read");
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "the key service's secret is in {}",
                f.display()
            );
        }
    }
}
