//! The study's absolute figures on planted runs: key establishment per request at one
//! worker and its share of the request (Tables VII, VIII, Fig. 2), CPU, memory and the
//! spread of throughput per arm (Table X, section VI), the original interval rule (Table
//! XIV), advance predictions (IV-C) and declared controls (V-C). Each figure is held to
//! the numbers planted, through the `stats` functions the oracle fixture checks against
//! SciPy.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use analysis::analyze;
use campaign::spec::{ComparisonSpec, ControlSpec, PredictionSpec};
use stats::Verdict;
use stats::describe::{mean_interval, variation};

mod plant;
use plant::rows::{absolute_rows, cfg, control_rows};

#[test]
fn key_establishment_per_request_at_one_worker() {
    let rows = absolute_rows();
    let r = analyze(&rows, &cfg(&[])).unwrap();
    // Two one-worker cells × two arms; the four-worker cell is not a Table VII cell.
    let cells: Vec<(&str, &str)> = r
        .kem_times
        .iter()
        .map(|k| (k.cell.as_str(), k.arm.as_str()))
        .collect();
    assert_eq!(
        cells,
        [
            ("put-1KiB-c1", "ml-kem-768"),
            ("put-1KiB-c1", "x25519"),
            ("get-64KiB-c1", "ml-kem-768"),
            ("get-64KiB-c1", "x25519"),
        ]
    );
    let k = &r.kem_times[2];
    // Planted: 12 µs plus noise [0, 0.8, −0.5, 0.3, −0.6], mean 12.0.
    let kem: Vec<f64> = [0.0, 0.8, -0.5, 0.3, -0.6]
        .iter()
        .map(|n| 12.0 + n)
        .collect();
    let want = mean_interval(&kem, 0.95).unwrap();
    assert_eq!(k.key_establishment_us, want);
    assert!((k.key_establishment_us.mean - 12.0).abs() < 1e-12);
    assert_eq!(k.mode.as_deref(), Some("ml-kem-768"));
    assert_eq!(k.operation, Some(campaign::spec::Operation::Get));
    // One worker: the mean request time is 10⁶ / throughput per run.
    let request: Vec<f64> = rows
        .iter()
        .filter(|r| r.cell == "get-64KiB-c1" && r.mode == "ml-kem-768")
        .map(|r| 1e6 / r.throughput_rps)
        .collect();
    assert_eq!(k.request_us, mean_interval(&request, 0.95).unwrap());
    assert!((k.kem_share - want.mean / k.request_us.mean).abs() < 1e-15);
    // About 12 µs of a 990 µs request: 1.2 %.
    assert!((k.kem_share - 0.012_12).abs() < 1e-4, "{}", k.kem_share);
    assert!(k.latency_p50_ms.unwrap() > 0.8 && k.latency_p50_ms.unwrap() < 1.0);
    // Pooled over the one-worker sizes (Table VII): one size per operation here, so the
    // pooled figure is the cell's.
    let pooled: Vec<_> = r
        .kem_pooled
        .iter()
        .map(|p| (p.arm.as_str(), p.operation, p.object_sizes.clone()))
        .collect();
    assert_eq!(pooled.len(), 4, "{pooled:?}");
    let get = r
        .kem_pooled
        .iter()
        .find(|p| p.arm == "ml-kem-768" && p.operation == Some(campaign::spec::Operation::Get))
        .unwrap();
    assert_eq!(get.object_sizes, [65_536]);
    assert_eq!(get.key_establishment_us, want);
}

#[test]
fn cpu_memory_and_spread_per_arm() {
    let rows = absolute_rows();
    let r = analyze(&rows, &cfg(&[])).unwrap();
    assert_eq!(r.resources.len(), 6, "every closed-loop cell and arm");
    let x = r
        .resources
        .iter()
        .find(|x| x.cell == "get-64KiB-c4" && x.arm == "x25519")
        .unwrap();
    let runs: Vec<_> = rows
        .iter()
        .filter(|r| r.cell == "get-64KiB-c4" && r.mode == "x25519")
        .collect();
    let server: Vec<f64> = runs
        .iter()
        .map(|r| r.server_cpu_cores.unwrap() * 1e6 / r.throughput_rps)
        .collect();
    assert_eq!(
        x.server_cpu_per_request_us,
        Some(mean_interval(&server, 0.95).unwrap())
    );
    // Server RSS growth 0, 1, 2, 3, 4 MiB: mean 2 MiB.
    let growth = x.server_rss_growth_mib.unwrap();
    assert!((growth.mean - 2.0).abs() < 1e-12, "{growth:?}");
    let tp: Vec<f64> = runs.iter().map(|r| r.throughput_rps).collect();
    assert_eq!(x.throughput_cv, Some(variation(&tp).unwrap()));
    assert_eq!(x.runs, 5);
    // Interleaved runs share the server with the other arms' turns: no server figures.
    let mut rows = rows;
    for r in &mut rows {
        r.interleaved = true;
    }
    let r = analyze(&rows, &cfg(&[])).unwrap();
    assert!(
        r.resources
            .iter()
            .all(|x| x.server_cpu_per_request_us.is_none() && x.server_rss_growth_mib.is_none())
    );
    assert!(
        r.resources
            .iter()
            .all(|x| x.client_cpu_per_request_us.is_some())
    );
}

#[test]
fn the_original_interval_rule_and_predictions() {
    let rows = absolute_rows();
    let mut c = cfg(&[]);
    c.control = None;
    c.comparisons = vec![ComparisonSpec {
        arm: "ml-kem-768".into(),
        against: "x25519".into(),
    }];
    c.analysis.predictions = vec![
        PredictionSpec {
            cell: "get-64KiB-c1".into(),
            arm: "ml-kem-768".into(),
            against: "x25519".into(),
            ratio: 1.01,
            source: Some("planted".into()),
        },
        PredictionSpec {
            cell: "get-64KiB-c4".into(),
            arm: "ml-kem-768".into(),
            against: "x25519".into(),
            ratio: 0.95,
            source: None,
        },
        PredictionSpec {
            cell: "put-9KiB-c1".into(),
            arm: "ml-kem-768".into(),
            against: "x25519".into(),
            ratio: 1.0,
            source: None,
        },
    ];
    let r = analyze(&rows, &c).unwrap();
    // A planted 1 % advantage with a tight interval: inside ±5 % by the original rule.
    for e in &r.comparisons {
        assert_eq!(e.interval_rule, Some(Verdict::Equivalent), "{e:?}");
        assert!((e.ratio - 1.01).abs() < 1e-12);
    }
    let [held, missed, none] = r.predictions.as_slice() else {
        panic!("{:?}", r.predictions)
    };
    assert_eq!(held.held, Some(true), "{held:?}");
    assert!(held.error.unwrap().abs() < 1e-12);
    assert_eq!(missed.held, Some(false), "{missed:?}");
    assert!((missed.error.unwrap() - (1.01 / 0.95 - 1.0)).abs() < 1e-12);
    assert_eq!(none.held, None);
    assert!(none.note.as_deref().unwrap().contains("not measured"));
}

#[test]
fn a_declared_control_is_attributed_its_share() {
    let rows = control_rows();
    let mut c = cfg(&[]);
    c.control = None;
    // Declared: the padded arm as the control of ML-KEM-768 against X25519, as the automatic
    // rule would find; and the reverse roles, which the automatic rule never makes.
    c.analysis.controls = vec![
        ControlSpec {
            arm: "ml-kem-768".into(),
            control: "x25519-padded".into(),
            against: "x25519".into(),
        },
        ControlSpec {
            arm: "x25519-padded".into(),
            control: "ml-kem-768".into(),
            against: "x25519".into(),
        },
    ];
    let declared = analyze(&rows, &c).unwrap();
    assert_eq!(declared.attributions.len(), 2);
    assert!(declared.attributions.iter().all(|a| a.declared));
    c.analysis.controls.clear();
    let automatic = analyze(&rows, &c).unwrap();
    assert_eq!(automatic.attributions.len(), 1);
    assert!(!automatic.attributions[0].declared);
    // The same triple gives the same share either way.
    assert_eq!(
        declared.attributions[0].share,
        automatic.attributions[0].share
    );
    let reverse = declared.attributions[1].share.unwrap();
    assert_eq!(declared.attributions[1].mode, "x25519-padded");
    assert!(reverse.share.is_finite());
}

/// A control of a deficit the data do not establish gets no share (a ratio of 0.999 would
/// make any share noise over noise), and says why.
#[test]
fn a_control_without_a_deficit_gets_no_share() {
    let mut rows = control_rows();
    // ML-KEM-768 as fast as X25519 in each block, give or take the planted noise.
    let x25519: std::collections::BTreeMap<u32, f64> = rows
        .iter()
        .filter(|r| r.mode == "x25519")
        .map(|r| (r.block, r.throughput_rps))
        .collect();
    for (i, r) in rows
        .iter_mut()
        .filter(|r| r.mode == "ml-kem-768")
        .enumerate()
    {
        let wobble = if i % 2 == 0 { 1.002 } else { 0.998 };
        r.throughput_rps = x25519[&r.block] * wobble;
    }
    let mut c = cfg(&[]);
    c.control = None;
    let r = analyze(&rows, &c).unwrap();
    let a = &r.attributions[0];
    assert_eq!(a.share, None);
    let note = a.note.as_deref().unwrap_or_default();
    assert!(
        note.starts_with("no deficit to explain: P/B 1.000, 90 % CI 0.99")
            && note.ends_with("includes 1"),
        "{note}"
    );
    assert!(
        a.in_words()
            .contains("no share for the x25519-padded control"),
        "{}",
        a.in_words()
    );
}

/// The study comparison: a planted X25519 GET decapsulation of 49 µs agrees with the
/// study's 0.049 ms (inside the 95 % interval); ML-KEM-768's 12 µs differs and says why;
/// figures this campaign has no cell for are not comparable, naming what is missing.
#[test]
fn the_study_comparison_agrees_differs_and_says_what_is_missing() {
    use analysis::study::Agreement;
    let mut rows = absolute_rows();
    for r in &mut rows {
        if r.mode == "x25519" && r.cell == "get-64KiB-c1" {
            let s = r.stages_us.as_mut().unwrap();
            s[0] += 9.0; // 40 µs + noise → 49 µs + noise
        }
    }
    let r = analyze(&rows, &cfg(&[])).unwrap();
    let find = |what: &str| {
        r.study
            .iter()
            .filter(|s| s.what == what)
            .collect::<Vec<_>>()
    };
    let x = find("x25519 key establishment per GET, one worker, 64 KiB");
    assert_eq!(x.len(), 1, "{:?}", r.study);
    assert_eq!(x[0].agreement, Agreement::Agree, "{:?}", x[0]);
    assert_eq!(x[0].study, "49.0 µs");
    assert!(x[0].pqbench.as_deref().unwrap().starts_with("49.0 ["));
    let kem = find("ml-kem-768 key establishment per GET, one worker, 64 KiB");
    assert_eq!(kem[0].agreement, Agreement::Differ);
    assert!(kem[0].why.contains("Python binding"), "{}", kem[0].why);
    assert!(
        kem[0].why.starts_with("0.255× the study's"),
        "{}",
        kem[0].why
    );
    // The 1 KiB PUT share (Fig. 2): measured, without an interval, against ±10 %.
    let share = find("ML-KEM-768's share of a 1 KiB PUT at one worker");
    assert_eq!(share.len(), 1);
    assert!(share[0].pqbench.is_some());
    // No RSA arm: not comparable, and why.
    let rsa = find("rsa-oaep-4096 key establishment per GET, one worker, 64 KiB");
    assert_eq!(rsa[0].agreement, Agreement::NotComparable);
    assert!(
        rsa[0].why.contains("no one-worker GET cell"),
        "{}",
        rsa[0].why
    );
    // Every row quotes the study and names its table or section.
    assert!(r.study.iter().all(|s| !s.quote.is_empty()
        && (s.source.contains("Table")
            || s.source.contains("Fig.")
            || s.source.contains("Section"))));
    // report.json round-trips it.
    let back: analysis::Report = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back.study, r.study);
}

/// V-C: in a client-saturated cell, ML-KEM-768's extra CPU per request (here −28 µs: it is
/// cheaper) against the one-worker key-establishment difference for the same operation and
/// size (12 − 40 = −28 µs): key recovery is all of it.
#[test]
fn the_extra_cpu_at_saturation_is_split_into_key_recovery_and_the_rest() {
    let mut rows = absolute_rows();
    for r in rows.iter_mut().filter(|r| r.cell == "get-64KiB-c4") {
        r.client_cores_used = 1.0;
        r.client_cores_available = 1.0;
    }
    let r = analyze(&rows, &cfg(&[])).unwrap();
    let [split] = r.cpu_splits.as_slice() else {
        panic!("{:?}", r.cpu_splits)
    };
    assert_eq!(
        (
            split.cell.as_str(),
            split.arm.as_str(),
            split.against.as_str()
        ),
        ("get-64KiB-c4", "ml-kem-768", "x25519")
    );
    let cpu: Vec<(f64, f64)> = ["ml-kem-768", "x25519"]
        .map(|m| {
            rows.iter()
                .filter(|r| r.cell == "get-64KiB-c4" && r.mode == m)
                .map(|r| r.cpu_per_request_us)
                .collect::<Vec<_>>()
        })
        .into_iter()
        .reduce(|a, _| a)
        .unwrap()
        .into_iter()
        .zip(
            rows.iter()
                .filter(|r| r.cell == "get-64KiB-c4" && r.mode == "x25519")
                .map(|r| r.cpu_per_request_us),
        )
        .collect();
    assert_eq!(
        split.extra_cpu_us,
        stats::paired::difference_interval(&cpu).unwrap()
    );
    assert!((split.extra_cpu_us.mean + 28.0).abs() < 1e-9);
    assert_eq!(split.one_worker_cell.as_deref(), Some("get-64KiB-c1"));
    assert!((split.key_recovery_us.unwrap() + 28.0).abs() < 1e-9);
    assert!((split.key_recovery_share.unwrap() - 1.0).abs() < 1e-9);
    assert!(
        split.in_words().contains("100 % of it"),
        "{}",
        split.in_words()
    );
}
