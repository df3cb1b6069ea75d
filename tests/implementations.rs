//! `examples/implementations.yaml` end to end, as a user runs it: `pqbench run` on the
//! embedded server as a process, the example's text as it ships except for shorter windows
//! and fewer blocks (the full run takes about 5 minutes; its verdicts are in the issue's
//! closing note). The test checks that every pairwise comparison of the four backends has
//! a verdict line in both cells and that the interop matrix and each backend's crates reach
//! the runs' summaries and the report, not the figures, which need the full windows. A test
//! binary of its own, so that nothing else runs beside its pinned server and clients.

mod common;

use std::path::Path;

use common::{edited_example, ok, pqbench_in, s};

fn short_windows(text: &str) -> String {
    edited_example(
        text,
        "examples/implementations.yaml",
        &[
            ("  repetitions: 6\n", "  repetitions: 2\n"),
            ("  warmup: 1s\n", "  warmup: 200ms\n"),
            ("  measured: 3s\n", "  measured: 600ms\n"),
        ],
    )
}

#[test]
fn every_backend_is_compared_pairwise_after_the_interop_matrix() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text =
        std::fs::read_to_string(root.join("examples/implementations.yaml")).expect("the example");
    let file = dir.path().join("implementations.yaml");
    std::fs::write(&file, short_windows(&text)).expect("write");
    let out = dir.path().join("results");
    let state = dir.path().join("state");
    let o = pqbench_in(&state, &["run", s(&file), "--out", s(&out)]);
    ok(&o, "pqbench run implementations.yaml");
    let log = String::from_utf8_lossy(&o.stderr);
    // The matrix before the first run: ML-KEM-768 on 4 backends, 16 ordered pairs, v1 and v2.
    assert!(
        log.contains("interop: 32 of 32 round trips interoperate (4 backends, 1 modes, v1 and v2)"),
        "{log}"
    );
    let camp = out.join("implementations");
    let md = std::fs::read_to_string(camp.join("report.md")).expect("report.md");
    for cell in ["get-1KiB-c8-cores1", "get-256KiB-c8-cores1"] {
        for pair in [
            "rustcrypto vs aws-lc",
            "libcrux vs aws-lc",
            "libcrux vs rustcrypto",
            "openssl vs aws-lc",
            "openssl vs rustcrypto",
            "openssl vs libcrux",
        ] {
            assert!(
                md.contains(&format!("| {cell} | {pair} | 2 |")),
                "no verdict row for {cell} {pair}:\n{md}"
            );
            assert!(
                md.contains(&format!("- {cell} · {pair}: ")),
                "no in-words line for {cell} {pair}:\n{md}"
            );
        }
    }
    let section = md
        .split("## Implementations and interop")
        .nth(1)
        .unwrap_or_else(|| panic!("no interop section:\n{md}"));
    assert!(
        section.contains("32 of 32 round trips interoperate"),
        "{section}"
    );
    for crate_version in [
        "aws-lc-rs 1.19.0",
        "ml-kem 0.3.4",
        "libcrux-ml-kem 0.0.11",
        "openssl-src 300.6.1+3.6.3",
    ] {
        assert!(
            section.contains(crate_version),
            "{crate_version}:\n{section}"
        );
    }
    assert!(
        section.contains("| ml-kem-768 | v1 | 16 of 16 | – |"),
        "{section}"
    );
    assert!(
        section.contains("| ml-kem-768 | v2 | 16 of 16 | – |"),
        "{section}"
    );
    // Every run's summary carries the matrix its worker checked before timing.
    let mut summaries = 0;
    for run in std::fs::read_dir(camp.join("runs")).expect("runs") {
        let p = run.expect("entry").path().join("p0/summary.json");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).expect("summary")).expect("json");
        let cells = v["interop"]["cells"].as_array().expect("interop cells");
        assert_eq!(cells.len(), 32, "{}", p.display());
        assert!(
            cells.iter().all(|c| c.get("error").is_none()),
            "{}",
            p.display()
        );
        assert_eq!(v["interop"]["backends"].as_array().map(Vec::len), Some(4));
        summaries += 1;
    }
    assert_eq!(summaries, 2 * 2 * 4, "2 blocks × 2 cells × 4 arms");
}
