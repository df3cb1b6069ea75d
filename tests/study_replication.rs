//! `examples/study-replication.yaml` end to end, as a user runs it: `pqbench run` on the
//! embedded server, then `pqbench report DIR --tables latex|md`, both as processes. The
//! example's text is used as it ships except for shorter windows and two blocks (the full
//! run takes about 14 minutes; its report is in the closing note): the test checks
//! that every section the study's tables need is there and filled, not the figures, which
//! need the full windows. A test binary of its own, so that nothing else runs beside its
//! pinned server and clients.

mod common;

use std::path::Path;

use common::{edited_example, ok, pqbench_in, s};

/// The example with short windows: each replaced line must be in the file as it ships, so
/// that a change to the example shows here instead of passing unnoticed.
fn short_windows(text: &str) -> String {
    edited_example(
        text,
        "examples/study-replication.yaml",
        &[
            ("  repetitions: 5\n", "  repetitions: 2\n"),
            ("  warmup: 1s\n", "  warmup: 200ms\n"),
            ("  measured: 3s\n", "  measured: 600ms\n"),
        ],
    )
}

/// A section of report.md, from its heading to the next, which must exist and hold a
/// table row.
fn section<'a>(md: &'a str, heading: &str) -> &'a str {
    let rest = md
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("report.md has no {heading:?}:\n{md}"));
    let body = rest.split("\n## ").next().unwrap_or(rest);
    assert!(
        body.lines().filter(|l| l.starts_with("| ")).count() >= 2,
        "{heading} has no rows:\n{body}"
    );
    body
}

#[test]
fn the_study_replication_fills_every_section_and_writes_the_tables() {
    let dir = tempfile::tempdir().expect("tmp");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text =
        std::fs::read_to_string(root.join("examples/study-replication.yaml")).expect("the example");
    let file = dir.path().join("study-replication.yaml");
    std::fs::write(&file, short_windows(&text)).expect("write");
    let out = dir.path().join("results");
    let state = dir.path().join("state");
    let o = pqbench_in(&state, &["run", s(&file), "--out", s(&out)]);
    let log = ok(&o, "pqbench run study-replication.yaml");
    let camp = out.join("study-replication");
    let md = std::fs::read_to_string(camp.join("report.md")).expect("report.md");

    // Tables VII and VIII, Fig. 2: every arm at one worker, PUT and GET, 1 KiB and 64 KiB.
    let kem = section(&md, "## Key establishment per request");
    for arm in [
        "x25519",
        "ml-kem-768",
        "x-wing",
        "concat-hybrid",
        "rsa-oaep-4096",
        "x25519-padded",
    ] {
        for cell in [
            "put-1KiB-c1-cores1",
            "get-1KiB-c1-cores1",
            "put-64KiB-c1-cores1",
            "get-64KiB-c1-cores1",
        ] {
            assert!(
                kem.contains(&format!("| {cell} | {arm} | ")),
                "no {cell} {arm} in:\n{kem}"
            );
        }
    }
    assert!(kem.contains("of the request"), "{kem}");
    assert!(
        camp.join("plots/latency.svg").is_file(),
        "no Fig. 2 plot\n{log}"
    );
    // Table X and section VI, Table XIV, IV-C, V-C.
    section(&md, "## CPU, memory and spread per arm");
    section(&md, "## The original interval rule");
    let pred = section(&md, "## Predictions");
    assert!(
        pred.contains("| get-1KiB-c8-cores1 | ml-kem-768 vs x25519 | 0.956 |"),
        "{pred}"
    );
    let controls = section(
        &md,
        "## Controls: how much of the deficit each control removes",
    );
    assert!(
        controls.contains("| get-1KiB-c8-cores1 | ml-kem-768 | x25519-padded | x25519 |"),
        "{controls}"
    );
    // IV-A, V-B: the testbed's ceilings, every probe taken on this host, and each cell's
    // bottleneck; the client-bound cell (8 workers on one core) is labelled so.
    let baselines: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(camp.join("baselines.json")).expect("baselines.json"),
    )
    .expect("baselines.json is JSON");
    for probe in ["network", "disk", "roundTrip"] {
        assert!(
            baselines[probe].get("measured").is_some(),
            "{probe} not measured: {}",
            baselines[probe]
        );
    }
    let ceilings = section(&md, "## Ceilings and bottlenecks");
    assert!(
        ceilings.contains("measured on this host before the first run"),
        "{ceilings}"
    );
    let rows: Vec<&str> = ceilings
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| cell"))
        .collect();
    assert_eq!(rows.len(), 5, "{ceilings}");
    assert!(
        rows.iter()
            .any(|l| l.starts_with("| get-1KiB-c8-cores1 | client | **")),
        "{ceilings}"
    );
    assert!(!ceilings.contains("Not judged"), "{ceilings}");
    // The study comparison: measured figures beside the study's, not only "not comparable".
    let study = section(&md, "## Study comparison");
    let measured = study
        .lines()
        .filter(|l| l.contains("**agree**") || l.contains("**differ**"))
        .count();
    assert!(measured >= 12, "only {measured} measured rows:\n{study}");
    for what in [
        "ml-kem-768 key establishment per GET, one worker, 64 KiB",
        "rsa-oaep-4096 key establishment per GET, one worker, 64 KiB",
        "ML-KEM-768's share of a 1 KiB PUT at one worker",
        "of which ciphertext",
    ] {
        let row = study
            .lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no {what:?} row:\n{study}"));
        assert!(!row.contains("not comparable"), "{row}");
    }
    // The ciphertexts are the standards' sizes: 1,088 − 32 bytes.
    let ct = study
        .lines()
        .find(|l| l.contains("of which ciphertext"))
        .expect("ciphertext row");
    assert!(
        ct.contains("| 1056 B | 1056 B |") && ct.contains("**agree**"),
        "{ct}"
    );

    // The tables, both formats, as the user asks for them.
    for (format, ext) in [("latex", "tex"), ("md", "md")] {
        let o = pqbench_in(&state, &["report", s(&camp), "--tables", format]);
        let said = ok(&o, &format!("pqbench report --tables {format}"));
        for n in ["VII", "VIII", "XII", "XIII", "XV", "XXI"] {
            let path = camp.join("tables").join(format!("table-{n}.{ext}"));
            let t = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}\n{said}", path.display()));
            assert!(
                said.contains(&format!("Table {n:<5} {}", path.display())),
                "{said}"
            );
            if ext == "tex" {
                assert!(
                    t.contains("\\begin{tabular}") && t.trim_end().ends_with("\\end{table}"),
                    "{t}"
                );
                assert!(
                    !t.contains("µ") && !t.contains("–"),
                    "unescaped in {n}: {t}"
                );
            } else {
                assert!(t.starts_with(&format!("**Table {n}.**")), "{t}");
            }
        }
        assert!(!said.contains("skipped"), "{said}");
    }
    let vii = std::fs::read_to_string(camp.join("tables/table-VII.md")).expect("VII");
    assert!(
        vii.contains("| rsa-oaep-4096 | rsa-oaep-4096 | aws-lc | "),
        "{vii}"
    );
    // A directory without a report: the error names the file and what writes it.
    let o = pqbench_in(&state, &["report", s(dir.path()), "--tables", "md"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("report.json") && err.contains("pqbench analyze"),
        "{err}"
    );
}
