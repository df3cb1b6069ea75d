//! The report rendered from planted campaigns: each section of `report.md` and the
//! terminal table shows what the analysis found, on the same synthetic runs the analysis's
//! own tests check (`analysis/tests/plant`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use analysis::order::Factor;
use analysis::{analyze, analyze_with};
use report::{Header, markdown, terminal};

#[path = "../../analysis/tests/plant/mod.rs"]
mod plant;
use plant::order::{check, evenly_spaced, planted, term};
use plant::rows::{absolute_rows, cfg, control_rows, declared_comparisons};

/// A planted position and time effect: the order section lists the time term per hour,
/// flags it, names the comparisons it adjusts, and the deviations table has the row.
#[test]
fn the_order_section_shows_flagged_terms_and_the_deviation() {
    let r = analyze(&planted(), &plant::order::cfg(&["put-1KiB", "get-1KiB"])).unwrap();
    let md = markdown(&r, &Header::default());
    let section = md
        .split("## Order and time")
        .nth(1)
        .expect("an order section");
    let hours = term(check(&r, "put-1KiB"), Factor::ElapsedHours).estimate * 100.0;
    let row = format!("| put-1KiB | 24 | elapsed hours | {hours:+.2} % per hour |");
    assert!(section.contains(&row), "{row} in {section}");
    assert!(section.contains("**yes**"), "{section}");
    // Each term's VIF in the last column: elapsed time's in the thousands.
    let t = term(check(&r, "put-1KiB"), Factor::ElapsedHours);
    let vif = format!(" | **yes** | {:.0} |", t.vif.unwrap());
    assert!(section.contains("| flagged | VIF |"), "{section}");
    assert!(section.contains(&vif), "{vif} in {section}");
    assert!(section.contains("ml-kem-768 vs x25519"), "{section}");
    assert!(md.contains("| order effect | put-1KiB |"), "{md}");
}

/// Elapsed time that cannot be told from position is shown as not estimable, with why.
#[test]
fn a_term_not_estimable_is_shown_with_its_reason() {
    let r = analyze(&evenly_spaced(), &plant::order::cfg(&["get-1MiB"])).unwrap();
    let md = markdown(&r, &Header::default());
    assert!(
        md.contains("| get-1MiB | 24 | elapsed hours | not estimable: column `elapsed hours`"),
        "{md}"
    );
}

/// Rows without start times: the order section is there, with its note.
#[test]
fn the_order_section_is_there_without_start_times() {
    let mut rows = planted();
    for r in &mut rows {
        r.started_unix_s = None;
    }
    let r = analyze(&rows, &plant::order::cfg(&[])).unwrap();
    let md = markdown(&r, &Header::default());
    let section = md
        .split("## Order and time")
        .nth(1)
        .expect("an order section");
    assert!(section.contains("no start time"), "{section}");
}

/// The terminal table says in words what each comparison means and which arms' invalid
/// rates differ.
#[test]
fn the_terminal_table_says_what_each_comparison_means() {
    let (rows, attempts, c) = declared_comparisons();
    let r = analyze_with(&rows, &attempts, &c).unwrap();
    let text = terminal(&r);
    assert!(
        text.contains("invalid-run rates of ml-kem-768-rustcrypto and ml-kem-768 differ"),
        "{text}"
    );
    assert!(
        text.contains("c · ml-kem-768 vs x25519: equivalent within ±5 %"),
        "{text}"
    );
    assert!(
        text.contains(
            "c · ml-kem-768-rustcrypto vs ml-kem-768: ml-kem-768-rustcrypto 20 % slower than ml-kem-768, a deficit"
        ),
        "{text}"
    );
}

/// The study's controls: the identity, the second endpoints and the control attribution
/// each get their section, and no deviation is reported.
#[test]
fn identity_second_endpoints_and_controls_have_their_sections() {
    let mut c = cfg(&[]);
    c.control = None;
    let r = analyze(&control_rows(), &c).unwrap();
    let md = markdown(&r, &Header::default());
    for want in [
        "## CPU accounting identity",
        "## Second endpoints (exploratory)",
        "## Controls: how much of the deficit each control removes",
        "- get-64KiB-c1: the x25519-padded control removed",
        "| get-64KiB-c1 | ml-kem-768 | x25519-padded | x25519 | 10 |",
        "## Deviations from the plan",
        "None: every planned run",
    ] {
        assert!(md.contains(want), "{want} missing:\n{md}");
    }
}

/// The study's absolute figures have their sections: key establishment per request with
/// its share (Tables VII, VIII, Fig. 2), CPU and memory per arm (Table X), the original
/// interval rule (Table XIV) and the predictions (IV-C).
#[test]
fn the_absolute_figures_rule_and_predictions_have_their_sections() {
    let mut c = cfg(&[]);
    c.control = None;
    c.analysis.predictions = vec![campaign::spec::PredictionSpec {
        cell: "get-64KiB-c4".into(),
        arm: "ml-kem-768".into(),
        against: "x25519".into(),
        ratio: 0.95,
        source: Some("an earlier campaign's CPU ratio".into()),
    }];
    let r = analyze(&absolute_rows(), &c).unwrap();
    let md = markdown(&r, &Header::default());
    let section = |title: &str| {
        md.split(title)
            .nth(1)
            .unwrap_or_else(|| panic!("no section {title:?} in\n{md}"))
            .split("\n## ")
            .next()
            .unwrap()
            .to_owned()
    };
    let kem = section("## Key establishment per request");
    assert!(
        kem.contains(
            "| get-64KiB-c1 | ml-kem-768 | ml-kem-768 | aws-lc | get | 64KiB | 5 | 12.0 ["
        ),
        "{kem}"
    );
    assert!(
        kem.contains("- get-64KiB-c1: ml-kem-768 (aws-lc) takes 12.0 µs (95 % CI "),
        "{kem}"
    );
    assert!(kem.contains("of the request"), "{kem}");
    assert!(
        !kem.contains("c4"),
        "four workers is not a one-worker cell: {kem}"
    );
    let res = section("## CPU, memory and spread per arm");
    assert!(res.contains("| get-64KiB-c4 | x25519 | 5 | "), "{res}");
    assert!(res.contains(" 2.00 ["), "server RSS growth 2 MiB: {res}");
    let rule = section("## The original interval rule");
    assert!(
        rule.contains("| ml-kem-768 vs x25519 | 3 | 3 | 0 | 0 |"),
        "{rule}"
    );
    let pred = section("## Predictions");
    assert!(
        pred.contains("| get-64KiB-c4 | ml-kem-768 vs x25519 | 0.950 | an earlier campaign's CPU ratio | 1.010 ["),
        "{pred}"
    );
    assert!(pred.contains("**no**: missed"), "{pred}");
    let study = section("## Study comparison");
    assert!(
        study.contains("| Table VIII (V-A) | ml-kem-768 key establishment per GET, one worker, 64 KiB | 47.0 µs | 12.0 ["),
        "{study}"
    );
    assert!(
        study.contains("**differ**") && study.contains("**not comparable**"),
        "{study}"
    );
    assert!(
        study.contains("- Table VIII (V-A): \"and 0.047 ms to decapsulate on GET\""),
        "{study}"
    );
}

/// Ceilings and bottlenecks: the baselines in words, one row per cell with its label and
/// the reached ceiling in bold, and the plot with one group per cell.
#[test]
fn the_ceilings_section_and_plot_label_each_cell() {
    use plant::testbed::{baselines, config, rows};
    let r = analyze(&rows(), &config(Some(baselines()))).unwrap();
    let md = markdown(&r, &Header::default());
    let section = md
        .split("## Ceilings and bottlenecks (study IV-A, V-B)")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a ceilings section");
    assert!(
        section.contains(
            "network 1.00 Gbit/s up, 2.00 Gbit/s down (iperf 3.12, 4 streams, 1 s); disk 105 MB/s in 1MiB direct writes, 1.00 ms each (fio-3.33); round trip 0.200 ms (ping, 5 answers)"
        ),
        "{section}"
    );
    for (cell, label) in [
        ("get-1KiB-c8", "client"),
        ("get-1MiB-c8", "network"),
        ("put-1MiB-c8", "disk"),
        ("put-1KiB-c8", "latency"),
    ] {
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| {cell} |")))
            .unwrap_or_else(|| panic!("no {cell} row in {section}"));
        assert!(row.starts_with(&format!("| {cell} | {label} |")), "{row}");
        assert_eq!(row.contains("**"), label != "latency", "{row}");
    }
    assert!(!section.contains("Not judged"), "{section}");
    let plot = report::plots::all(&r)
        .into_iter()
        .find(|p| p.file == "bottlenecks.svg")
        .expect("bottlenecks.svg");
    for header in [
        "get-1KiB-c8: client-bound",
        "get-1MiB-c8: network-bound",
        "put-1MiB-c8: disk-bound",
        "put-1KiB-c8: latency-bound",
    ] {
        assert!(plot.svg.contains(header), "{header}");
    }
    assert_eq!(plot.svg.matches(" · reached</text>").count(), 3);
    // Without baselines: the section says so and the plot shows the CPUs alone.
    let r = analyze(&rows(), &config(None)).unwrap();
    let md = markdown(&r, &Header::default());
    assert!(md.contains("No testbed baselines were taken"), "{md}");
    assert!(md.contains("Not judged (–): disk: no baselines were taken (no baselines.json)"));
}
