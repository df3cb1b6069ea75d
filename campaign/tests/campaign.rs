//! The campaign schema, the design and the analysis, on the shipped examples and on
//! synthetic data.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::collections::BTreeMap;

use campaign::analysis::{Config, Family, RunRow, analyze, rows_from_csv, rows_to_csv};
use campaign::design::plan;
use campaign::{CampaignFile, Manifest};
use stats::Verdict;

const QUICK: &str = include_str!("../../examples/quick.yaml");
const STUDY: &str = include_str!("../../examples/study-primary.yaml");

#[test]
fn examples_parse_and_plan() {
    for (name, text) in [("quick", QUICK), ("study-primary", STUDY)] {
        let m = Manifest::parse(text, name).unwrap();
        let p = plan(&m);
        assert!(!p.runs.is_empty(), "{name}");
    }
    let study = plan(&Manifest::parse(STUDY, "study").unwrap());
    // Eight primary cells, 10 repetitions and 20 at the knee, two arms.
    assert_eq!(study.cells.len(), 8);
    assert_eq!(study.runs.len(), (7 * 10 + 20) * 2);
}

/// A file as `kubectl apply -f` takes it: a credentials Secret beside the campaign. The
/// campaign is found, the Secret named and left out of the campaign's own copy.
#[test]
fn multi_document_files_hold_one_campaign() {
    let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  AWS_SECRET_ACCESS_KEY: not-a-real-one\n";
    let text = format!("{secret}---\n{QUICK}---\n");
    let f = CampaignFile::parse(&text, "two.yaml").unwrap();
    assert_eq!(f.others, ["Secret creds"]);
    assert_eq!(f.manifest, Manifest::parse(QUICK, "quick").unwrap());
    let own = f.campaign_only.expect("the campaign document alone");
    assert!(
        !own.contains("not-a-real-one") && !own.contains("Secret"),
        "{own}"
    );
    assert_eq!(Manifest::parse(&own, "own").unwrap(), f.manifest);
    // A single-document file is its own copy.
    assert_eq!(CampaignFile::parse(QUICK, "q").unwrap().campaign_only, None);

    let err = |t: &str| CampaignFile::parse(t, "f.yaml").unwrap_err().to_string();
    let e = err(&format!("{QUICK}---\n{QUICK}"));
    assert!(e.contains("2 BenchmarkCampaign documents"), "{e}");
    let e = err(&format!("{secret}---\n{secret}"));
    assert!(
        e.contains("no BenchmarkCampaign document among the file's 2 (Secret creds, Secret creds)"),
        "{e}"
    );
    let e = err(&format!("{QUICK}---\njust: data\n"));
    assert!(e.contains("document 2 is not a Kubernetes object"), "{e}");
    let e = err("");
    assert!(e.contains("no YAML document"), "{e}");
}

#[test]
fn design_is_deterministic_and_balanced() {
    let m = Manifest::parse(QUICK, "quick").unwrap();
    let a = serde_json::to_string(&plan(&m)).unwrap();
    let b = serde_json::to_string(&plan(&Manifest::parse(QUICK, "quick").unwrap())).unwrap();
    assert_eq!(a, b, "same YAML, same plan byte for byte");

    let p = plan(&m);
    let arms: Vec<&str> = p.arms.iter().map(|x| x.label.as_str()).collect();
    let mut blocks: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    let mut per_cell: BTreeMap<&str, std::collections::BTreeSet<u32>> = BTreeMap::new();
    for r in &p.runs {
        blocks.entry(r.block).or_default().push(&r.arm);
        per_cell.entry(&r.cell).or_default().insert(r.block);
    }
    for (b, v) in &blocks {
        let mut v = v.clone();
        v.sort_unstable();
        let mut want = arms.clone();
        want.sort_unstable();
        assert_eq!(v, want, "block {b} holds every arm once");
    }
    for c in &p.cells {
        assert_eq!(
            per_cell[c.id.as_str()].len(),
            c.repetitions as usize,
            "{}",
            c.id
        );
    }
    let ids: std::collections::BTreeSet<&str> = p.runs.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids.len(), p.runs.len(), "run ids are unique");
    // Orders are shuffled: not every block runs the arms in the spec's order.
    assert!(blocks.values().any(|v| v.as_slice() != arms.as_slice()));

    // Another seed, another order; the same cells and blocks.
    let other = Manifest::parse(&QUICK.replace("seed: 20261130", "seed: 7"), "q").unwrap();
    let q = plan(&other);
    assert_ne!(
        serde_json::to_string(&q.runs).unwrap(),
        serde_json::to_string(&p.runs).unwrap()
    );
    assert_eq!(q.runs.len(), p.runs.len());
}

#[test]
fn prereg_hash_ignores_formatting_not_content() {
    let m = Manifest::parse(QUICK, "quick").unwrap();
    let h = plan(&m).prereg_hash;
    // Comments, flow style and defaults written out do not change the hash …
    let reformatted = QUICK
        .replace("# Short windows", "# Other comment. Short windows")
        .replace("    margin: 0.05\n", "    margin: 0.05\n    alpha: 0.05\n");
    assert_eq!(
        plan(&Manifest::parse(&reformatted, "r").unwrap()).prereg_hash,
        h
    );
    // … a margin does.
    let changed = QUICK.replace("margin: 0.05", "margin: 0.04");
    assert_ne!(
        plan(&Manifest::parse(&changed, "c").unwrap()).prereg_hash,
        h
    );
    assert_eq!(h.len(), 64);
}

#[test]
fn malformed_files_name_the_field() {
    let cases = [
        (
            "baseline: x25519",
            "baseline: rsa-oaep-4096",
            "spec.baseline: rsa-oaep-4096 is not one of modes",
        ),
        (
            "modes: [x25519, ml-kem-768, x-wing]",
            "modes: [x25519, ml-kem-512]",
            "spec.modes[1]",
        ),
        (
            "concurrency: [1]",
            "concurrency: [1, 0]",
            "spec.cells[0].concurrency[1]: must be at least 1",
        ),
        (
            "concurrency: [1]",
            "concurrency: [two]",
            "spec.cells[0].concurrency[0]",
        ),
        (
            "objectSize: [64KiB]",
            "objectSize: [64 parsecs]",
            "spec.cells[0].objectSize[0]",
        ),
        // A single value where the CRD wants a list: refused, naming the list form.
        (
            "concurrency: [1]",
            "concurrency: 1",
            "spec.cells[0].concurrency: must be a list: write [1]",
        ),
        (
            "objectSize: [64KiB]",
            "objectSize: 64KiB",
            "spec.cells[0].objectSize: must be a list: write [64KiB]",
        ),
        (
            "operation: [get, put]",
            "operation: get",
            "spec.cells[0].operation: must be a list: write [get]",
        ),
        (
            "repetitions: 3",
            "repetitions: 1",
            "spec.repetitions: 1 is too few",
        ),
        (
            "margin: 0.05",
            "margin: 0.7",
            "spec.analysis.margin: 0.7 must lie strictly between 0 and 0.5",
        ),
        (
            "primary: [get-64KiB-c1, put-64KiB-c1]",
            "primary: [get-64KiB-c3]",
            "spec.analysis.primary[0]: \"get-64KiB-c3\" is not a cell",
        ),
        ("measured: 3s", "measured: 3 fortnights", "spec.measured"),
        (
            "seed: 20261130",
            "seed: 20261130\n  colour: blue",
            "unknown field `colour`",
        ),
        (
            "kind: BenchmarkCampaign",
            "kind: Campaign",
            "kind: \"Campaign\" must be BenchmarkCampaign",
        ),
        ("name: quick", "name: Quick_1", "metadata.name"),
        (
            "      concurrency: [1]",
            "      loop: {type: open, rates: [100, -1], threads: 2}",
            "spec.cells[0].loop.rates[1]",
        ),
        ("seed: 20261130", "", "missing field `seed`"),
    ];
    for (from, to, want) in cases {
        assert!(QUICK.contains(from), "{from}");
        let text = QUICK.replacen(from, to, 1);
        let err = Manifest::parse(&text, "quick.yaml")
            .expect_err(to)
            .to_string();
        assert!(err.contains(want), "{to:?}: {err}");
        assert!(err.starts_with("quick.yaml: "), "{err}");
    }
    let err = Manifest::parse("spec: [unclosed", "bad.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.yaml"), "{err}");
}

fn row(cell: &str, mode: &str, block: u32, tp: f64, cpu: f64) -> RunRow {
    RunRow {
        run_id: format!("{cell}-{mode}-{block}"),
        cell: cell.into(),
        mode: mode.into(),
        block,
        throughput_rps: tp,
        cpu_per_request_us: cpu,
        client_cores_used: 1.0,
        client_cores_available: 2.0,
        server_cpu_cores: Some(1.0),
        operation: None,
        object_size: None,
        concurrency: None,
        offered_rps: None,
        mean_response_ms: None,
        manifest_bytes: None,
    }
}

fn cfg(primary: &[&str]) -> Config {
    let analysis = campaign::spec::Analysis {
        primary: primary.iter().map(|s| (*s).to_owned()).collect(),
        bootstrap_resamples: 2000,
        ..campaign::spec::Analysis::default()
    };
    Config {
        baseline: "x25519".into(),
        control: Some("x25519-aa".into()),
        analysis,
        seed: 1,
    }
}

#[test]
fn analysis_pairs_within_blocks_and_adjusts_the_primary_family() {
    // Cell a: ml-kem equal to x25519 within 1 %; cell b: ml-kem 10 % slower.
    let noise = [1.0, 1.004, 0.997, 1.002, 0.999, 1.001];
    let mut rows = Vec::new();
    for (b, n) in (0u32..).zip(noise) {
        let base = 1000.0 + 100.0 * f64::from(b); // block effects cancel in the pairing
        rows.push(row("a", "x25519", b, base, 100.0));
        rows.push(row("a", "ml-kem-768", b, base * n, 101.0));
        rows.push(row("a", "x25519-aa", b, base * (2.0 - n), 100.0));
        rows.push(row("b", "x25519", b, base, 100.0));
        rows.push(row("b", "ml-kem-768", b, base * 0.9 * n, 111.0));
    }
    let r = analyze(&rows, &cfg(&["a", "b"])).unwrap();
    let e = |cell: &str, mode: &str| {
        r.comparisons
            .iter()
            .find(|e| e.cell == cell && e.mode == mode)
            .unwrap()
    };
    let a = e("a", "ml-kem-768");
    let b = e("b", "ml-kem-768");
    assert_eq!(r.primary_family_size, 2);
    assert_eq!((a.family, b.family), (Family::Primary, Family::Primary));
    assert_eq!(e("a", "x25519-aa").family, Family::Control);
    assert_eq!(a.verdict, Verdict::Equivalent);
    assert_eq!(b.verdict, Verdict::NotEquivalent);
    assert!(b.deficit && !b.advantage);
    // Holm over two: the smaller p doubled, the larger kept (capped at 1, monotone).
    let (lo, hi) = if a.tost_p < b.tost_p { (a, b) } else { (b, a) };
    assert!((lo.tost_p_adjusted - (2.0 * lo.tost_p).min(1.0)).abs() < 1e-15);
    assert!((hi.tost_p_adjusted - hi.tost_p.max(lo.tost_p_adjusted)).abs() < 1e-15);
    // The same numbers as the stats crate gives for the pairs.
    let d: Vec<f64> = noise.iter().map(|n| (0.9 * n).ln()).collect();
    let p = stats::Paired::from_log_ratios(&d).unwrap();
    assert!((b.ratio - p.ratio()).abs() < 1e-12);
    // CPU accounting: 11 % more CPU per request implies 1/1.11.
    assert!((b.implied_ratio.unwrap() - 100.0 / 111.0).abs() < 1e-12);
    assert_eq!(b.pairs, 6);
    assert!(!a.saturated);
}

#[test]
fn csv_round_trip_and_errors() {
    let rows = vec![
        row("a", "x25519", 0, 1000.0, 100.0),
        row("a", "ml-kem-768", 0, 990.0, 101.0),
    ];
    let csv = rows_to_csv(&rows);
    assert_eq!(rows_from_csv(&csv, "runs.csv").unwrap(), rows);
    let err = rows_from_csv("run_id,cell\nx,y\n", "runs.csv")
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing column \"mode\""), "{err}");
    let bad = csv.replace(",1000,", ",fast,");
    let err = rows_from_csv(&bad, "runs.csv").unwrap_err().to_string();
    assert!(err.contains("runs.csv:2: column throughput_rps"), "{err}");
    let dup = format!("{csv}{}", csv.lines().nth(1).unwrap());
    let err = analyze(&rows_from_csv(&dup, "d").unwrap(), &cfg(&[]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("appears twice"), "{err}");
}
