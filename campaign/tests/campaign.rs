//! The campaign schema, the design and the analysis, on the shipped examples and on
//! synthetic data.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::collections::BTreeMap;

use campaign::analysis::{Config, Family, RunRow, analyze, rows_from_csv, rows_to_csv};
use campaign::design::plan;
use campaign::spec::S3ClientKind;
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
    // Eight primary cells, 10 repetitions and 20 at the knee, eight arms (P1, B2, the
    // study's controls, and P1 and B2 on the lean S3 client); the primary family is P1 vs
    // B2 in the eight cells.
    assert_eq!(study.cells.len(), 8);
    assert_eq!(study.arms.len(), 8);
    assert_eq!(study.runs.len(), (7 * 10 + 20) * 8);
    assert_eq!(study.comparisons.len(), 7);
    let lean: Vec<&str> = study
        .arms
        .iter()
        .filter(|a| a.client == S3ClientKind::Lean)
        .map(|a| a.label.as_str())
        .collect();
    assert_eq!(lean, ["x25519-lean", "ml-kem-768-lean"]);
    // The main job: three arms sharing every block of one client-bound cell.
    let quick = plan(&Manifest::parse(QUICK, "quick").unwrap());
    assert_eq!(quick.cells.len(), 1);
    assert_eq!(quick.cells[0].id, "get-1KiB-c8-cores1");
    assert_eq!(quick.cells[0].client_cores, Some(1));
    let arms: Vec<(&str, &str)> = quick
        .arms
        .iter()
        .map(|a| (a.label.as_str(), a.backend.name()))
        .collect();
    assert_eq!(
        arms,
        [
            ("x25519", "aws-lc"),
            ("ml-kem-768", "aws-lc"),
            ("ml-kem-768-rustcrypto", "rustcrypto")
        ]
    );
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
    let other = Manifest::parse(&QUICK.replace("seed: 20261201", "seed: 7"), "q").unwrap();
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
        .replace(
            "# One client-bound cell",
            "# Other comment. One client-bound cell",
        )
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
            "spec.baseline: rsa-oaep-4096 is not the mode of any arm (arms: x25519, ml-kem-768)",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-512, backend: aws-lc}",
            "spec.arms[1].mode",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: openssl}",
            "spec.arms[1].backend",
        ),
        (
            ", name: ml-kem-768-rustcrypto}",
            "}",
            "spec.arms: two arms are labelled \"ml-kem-768\"; give them distinct names",
        ),
        (
            "name: ml-kem-768-rustcrypto}",
            "name: ML_KEM}",
            "spec.arms[2].name: \"ML_KEM\" must be 1-40 lower-case letters",
        ),
        (
            "  baseline: x25519",
            "  modes: [x25519, ml-kem-768]\n  baseline: x25519",
            "spec.arms: give modes (with backends) or arms, not both",
        ),
        (
            "{arm: ml-kem-768, against: x25519}",
            "{arm: x-wing, against: x25519}",
            "spec.analysis.comparisons[0].arm: \"x-wing\" is not an arm of this campaign; its arms are: x25519, ml-kem-768, ml-kem-768-rustcrypto",
        ),
        (
            "{arm: ml-kem-768, against: x25519}",
            "{arm: x25519, against: x25519}",
            "spec.analysis.comparisons[0]: x25519 against itself compares nothing",
        ),
        (
            "- {cell: get-1KiB-c8-cores1}",
            "- get-1KiB-c8-cores1",
            "spec.analysis.primary[0]: write {cell: get-1KiB-c8-cores1}",
        ),
        (
            "- {cell: get-1KiB-c8-cores1}",
            "- {cell: get-1KiB-c8-cores2}",
            "spec.analysis.primary[0].cell: \"get-1KiB-c8-cores2\" is not a cell of this campaign; its cells are: get-1KiB-c8-cores1",
        ),
        (
            "- {cell: get-1KiB-c8-cores1}",
            "- {cell: get-1KiB-c8-cores1, arm: ml-kem-768}",
            "spec.analysis.primary[0]: give both arm and against, or neither",
        ),
        (
            "- {cell: get-1KiB-c8-cores1}",
            "- {cell: get-1KiB-c8-cores1, arm: ml-kem-768-rustcrypto, against: x25519}",
            "spec.analysis.primary[0]: ml-kem-768-rustcrypto against x25519 is not one of the comparisons (ml-kem-768 vs x25519, ml-kem-768-rustcrypto vs ml-kem-768); declare it in analysis.comparisons",
        ),
        (
            "      clientCores: [1]",
            "      clientCores: [1, 0]",
            "spec.cells[0].clientCores[1]: must be at least 1",
        ),
        (
            "      clientCores: [1]",
            "      clientCores: 1",
            "spec.cells[0].clientCores: must be a list: write [1]",
        ),
        (
            "  pause:",
            "  server: {cpus: \"1-\"}\n  pause:",
            "spec.server.cpus: \"1-\" is not a CPU list",
        ),
        (
            "  pause:",
            "  clients: {cpus: 0}\n  pause:",
            "spec.clients.cpus: 0 CPUs: give at least 1",
        ),
        (
            "concurrency: [8]",
            "concurrency: [8, 0]",
            "spec.cells[0].concurrency[1]: must be at least 1",
        ),
        (
            "concurrency: [8]",
            "concurrency: [two]",
            "spec.cells[0].concurrency[0]",
        ),
        (
            "objectSize: [1KiB]",
            "objectSize: [64 parsecs]",
            "spec.cells[0].objectSize[0]",
        ),
        // A single value where the CRD wants a list: refused, naming the list form.
        (
            "concurrency: [8]",
            "concurrency: 8",
            "spec.cells[0].concurrency: must be a list: write [8]",
        ),
        (
            "objectSize: [1KiB]",
            "objectSize: 1KiB",
            "spec.cells[0].objectSize: must be a list: write [1KiB]",
        ),
        (
            "operation: [get]",
            "operation: get",
            "spec.cells[0].operation: must be a list: write [get]",
        ),
        (
            "repetitions: 10",
            "repetitions: 1",
            "spec.repetitions: 1 is too few",
        ),
        (
            "margin: 0.05",
            "margin: 0.7",
            "spec.analysis.margin: 0.7 must lie strictly between 0 and 0.5",
        ),
        ("measured: 4s", "measured: 4 fortnights", "spec.measured"),
        (
            "seed: 20261201",
            "seed: 20261201\n  colour: blue",
            "unknown field `colour`",
        ),
        (
            "kind: BenchmarkCampaign",
            "kind: Campaign",
            "kind: \"Campaign\" must be BenchmarkCampaign",
        ),
        ("name: quick", "name: Quick_1", "metadata.name"),
        (
            "      concurrency: [8]",
            "      loop: {type: open, rates: [100, -1], threads: 2}",
            "spec.cells[0].loop.rates[1]",
        ),
        ("seed: 20261201", "", "missing field `seed`"),
        (
            "interleave: {slice: 100ms}",
            "interleave: {slice: 5ms}",
            "spec.interleave.slice: 5ms is shorter than 10ms",
        ),
        (
            "interleave: {slice: 100ms}",
            "interleave: {slice: 5s}",
            "spec.interleave.slice: 5s is longer than measured (4s)",
        ),
        (
            "      concurrency: [8]",
            "      loop: {type: open, rates: [100], threads: 2}",
            "spec.cells[0].loop: interleave applies to closed-loop cells only",
        ),
        (
            "interleave: {slice: 100ms}",
            "interleave: {slices: 100ms}",
            "unknown field `slices`",
        ),
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
        ..RunRow::default()
    }
}

fn cfg(primary: &[&str]) -> Config {
    let analysis = campaign::spec::Analysis {
        primary: primary
            .iter()
            .map(|s| campaign::spec::PrimarySpec::cell(s))
            .collect(),
        bootstrap_resamples: 2000,
        ..campaign::spec::Analysis::default()
    };
    Config {
        baseline: "x25519".into(),
        control: Some("x25519-aa".into()),
        analysis,
        seed: 1,
        arms: Vec::new(),
        comparisons: Vec::new(),
        arm_details: Vec::new(),
        analysis_time_settings: Vec::new(),
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
        RunRow {
            latency_p50_ms: Some(1.25),
            latency_p99_ms: Some(3.5),
            max_rss_bytes: Some(5e7),
            rss_growth_bytes: Some(-4096.0),
            stages_us: Some([45.0, 6.5, 30.0, 12.25, 900.0]),
            position: Some(1),
            started_unix_s: Some(1_796_000_000.25),
            drift_throughput_change: Some(-0.031),
            drift_latency_change: Some(0.0125),
            ..row("a", "ml-kem-768", 0, 990.0, 101.0)
        },
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

/// Issue 18: declared comparisons between any two arms of a cell (RustCrypto vs aws-lc on
/// the same mode), a primary family of named comparisons, blocks with an arm missing
/// dropped for every arm, and the invalid-rate test over the attempts.
#[test]
fn declared_comparisons_balanced_blocks_and_invalid_rates() {
    use campaign::analysis::{RunAttempts, analyze_with};
    use campaign::spec::{ComparisonSpec, PrimarySpec};
    let noise = [1.0, 1.004, 0.997, 1.002, 0.999, 1.001, 1.003];
    let mut rows = Vec::new();
    for (b, n) in (0u32..).zip(noise) {
        let base = 1000.0 + 50.0 * f64::from(b);
        rows.push(row("c", "x25519", b, base, 100.0));
        rows.push(row("c", "ml-kem-768", b, base * n, 100.0));
        // Block 6 lost its RustCrypto run (invalid after every attempt).
        if b != 6 {
            rows.push(row("c", "ml-kem-768-rustcrypto", b, base * 0.8 * n, 139.0));
        }
    }
    let comparisons = vec![
        ComparisonSpec {
            arm: "ml-kem-768".into(),
            against: "x25519".into(),
        },
        ComparisonSpec {
            arm: "ml-kem-768-rustcrypto".into(),
            against: "ml-kem-768".into(),
        },
    ];
    let mut c = cfg(&[]);
    c.control = None;
    c.arms = vec![
        "x25519".into(),
        "ml-kem-768".into(),
        "ml-kem-768-rustcrypto".into(),
    ];
    c.comparisons = comparisons;
    c.analysis.primary = vec![PrimarySpec {
        cell: "c".into(),
        arm: Some("ml-kem-768-rustcrypto".into()),
        against: Some("ml-kem-768".into()),
    }];
    // RustCrypto: 9 of its 15 attempts invalid; aws-lc ML-KEM: none of 7.
    let attempts: Vec<RunAttempts> = (0..7)
        .flat_map(|b| {
            let r = |arm: &str, attempts, invalid| RunAttempts {
                run_id: format!("r{b}-{arm}"),
                cell: "c".into(),
                arm: arm.into(),
                attempts,
                invalid,
                failed: 0,
                reasons: Vec::new(),
            };
            [
                r("x25519", 1, 0),
                r("ml-kem-768", 1, 0),
                r(
                    "ml-kem-768-rustcrypto",
                    if b == 6 { 3 } else { 2 },
                    if b == 6 { 3 } else { 1 },
                ),
            ]
        })
        .collect();
    let r = analyze_with(&rows, &attempts, &c).unwrap();
    assert_eq!(r.comparisons.len(), 2);
    let (kem, rc) = (&r.comparisons[0], &r.comparisons[1]);
    assert_eq!(
        (kem.mode.as_str(), kem.baseline.as_str()),
        ("ml-kem-768", "x25519")
    );
    assert_eq!(
        (rc.mode.as_str(), rc.baseline.as_str()),
        ("ml-kem-768-rustcrypto", "ml-kem-768")
    );
    // Both rest on the same six complete blocks.
    assert_eq!((kem.pairs, rc.pairs), (6, 6));
    assert_eq!(r.dropped_blocks, [("c".to_owned(), 6)]);
    assert!(
        r.warnings.iter().any(|w| w.contains("c block 6")),
        "{:?}",
        r.warnings
    );
    // Only the named comparison is primary.
    assert_eq!(r.primary_family_size, 1);
    assert_eq!(
        (kem.family, rc.family),
        (Family::Exploratory, Family::Primary)
    );
    assert!((rc.ratio - 0.8).abs() < 1e-9 && rc.deficit);
    assert_eq!(rc.verdict, Verdict::NotEquivalent);
    assert_eq!(
        rc.meaning(0.05),
        "ml-kem-768-rustcrypto 20 % slower than ml-kem-768, a deficit"
    );
    assert_eq!(kem.verdict, Verdict::Equivalent);
    assert_eq!(kem.meaning(0.05), "equivalent within ±5 %");
    // Attempts per arm, and the invalid-rate test: Fisher on [[9, 6], [0, 7]] (SciPy:
    // scipy.stats.fisher_exact([[9, 6], [0, 7]]) → p = 0.016676048409794534).
    let rca = r
        .attempts
        .iter()
        .find(|a| a.arm == "ml-kem-768-rustcrypto")
        .unwrap();
    assert_eq!((rca.runs, rca.attempts, rca.invalid), (7, 15, 9));
    let x = r
        .invalid_rates
        .iter()
        .find(|x| x.arm == "ml-kem-768-rustcrypto")
        .unwrap();
    let want = 0.016_676_048_409_794_534;
    assert!((x.p - want).abs() < 1e-12 && x.differs, "{x:?}");
    let same = r
        .invalid_rates
        .iter()
        .find(|x| x.arm == "ml-kem-768")
        .unwrap();
    assert!(!same.differs && (same.p - 1.0).abs() < 1e-12);
    let text = campaign::report::terminal(&r);
    assert!(
        text.contains("invalid-run rates of ml-kem-768-rustcrypto and ml-kem-768 differ"),
        "{text}"
    );
    assert!(
        text.contains("c · ml-kem-768 vs x25519: equivalent within ±5 %"),
        "{text}"
    );
}

/// The S3 client is an arm factor: `clients.s3Client` sets it for every arm, an arm's own
/// `s3Client` overrides it, and the default comparisons pair arms on the same client.
#[test]
fn the_s3_client_is_an_arm_factor_and_default_comparisons_stay_on_one_client() {
    let text = "apiVersion: pqbench.io/v1alpha1\nkind: BenchmarkCampaign\nmetadata: {name: clients}\n\
        spec:\n  arms:\n    - {mode: x25519}\n    - {mode: ml-kem-768}\n\
        \x20   - {mode: x25519, s3Client: aws-sdk, name: x25519-sdk}\n\
        \x20   - {mode: ml-kem-768, s3Client: aws-sdk, name: ml-kem-768-sdk}\n\
        \x20 baseline: x25519\n  clients: {s3Client: lean}\n\
        \x20 cells: [{operation: [get], objectSize: [1KiB], concurrency: [2]}]\n  repetitions: 2\n  seed: 7\n";
    let p = plan(&Manifest::parse(text, "clients.yaml").unwrap());
    let arms: Vec<(&str, S3ClientKind)> = p
        .arms
        .iter()
        .map(|a| (a.label.as_str(), a.client))
        .collect();
    assert_eq!(
        arms,
        [
            ("x25519", S3ClientKind::Lean),
            ("ml-kem-768", S3ClientKind::Lean),
            ("x25519-sdk", S3ClientKind::AwsSdk),
            ("ml-kem-768-sdk", S3ClientKind::AwsSdk),
        ]
    );
    let pairs: Vec<(&str, &str)> = p
        .comparisons
        .iter()
        .map(|c| (c.arm.as_str(), c.against.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("ml-kem-768", "x25519"), ("ml-kem-768-sdk", "x25519-sdk")]
    );

    let bad = text.replace("s3Client: lean", "s3Client: curl");
    let e = Manifest::parse(&bad, "clients.yaml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("spec.clients.s3Client"), "{e}");
}

/// Rows of a cell with the study's controls: ML-KEM-768 (P1), the padded manifest control
/// (C2) and X25519 (B2), at one worker, where per run throughput = cores ÷ CPU per request.
fn control_rows() -> Vec<RunRow> {
    // P/B = 0.960 and P/C = 0.967 as in the study's Table XVII, with block noise.
    let noise = [
        1.0, 1.003, 0.998, 1.001, 0.999, 1.002, 0.997, 1.0, 1.001, 0.999,
    ];
    let mut rows = Vec::new();
    for (b, n) in (0u32..).zip(noise) {
        let base = 1000.0 + 10.0 * f64::from(b);
        for (mode, tp, lat, stage) in [
            ("x25519", base, 1.00, 40.0),
            ("x25519-padded", base * 0.960 / 0.967 * n, 1.01, 46.0),
            ("ml-kem-768", base * 0.960 * (2.0 - n), 1.04, 47.0),
        ] {
            let cpu = 500.0 * base / tp; // one core's worth of CPU, spread over the requests
            rows.push(RunRow {
                client_cores_used: tp * cpu / 1e6,
                client_cores_available: 1.0,
                operation: Some(campaign::spec::Operation::Get),
                object_size: Some(65_536),
                concurrency: Some(1),
                latency_p50_ms: Some(lat * (1.0 + 0.001 * f64::from(b % 3))),
                latency_p99_ms: Some(3.0 * lat),
                max_rss_bytes: Some(4e7 + 1e5 * f64::from(b)),
                rss_growth_bytes: Some(1024.0 * f64::from(b % 2)),
                stages_us: Some([stage, 6.0, 30.0, 10.0 + f64::from(b % 4), 800.0]),
                position: Some(0),
                ..row("get-64KiB-c1", mode, b, tp, cpu)
            });
        }
    }
    rows
}

/// Issue 20: the CPU identity with intervals, second endpoints with BH over the difference
/// tests, and the manifest-size control's share of the deficit.
#[test]
fn identity_second_endpoints_and_control_attribution() {
    let mut c = cfg(&[]);
    c.control = None;
    let r = analyze(&control_rows(), &c).unwrap();
    let sec = |mode: &str| r.secondary.iter().find(|s| s.mode == mode).unwrap();
    let p = sec("ml-kem-768");
    // Throughput is cores ÷ CPU per request in every run: the identity holds exactly, and
    // every arm used one core, so the CPU ratio alone carries the throughput ratio.
    let id = p.identity.unwrap();
    assert!((id.residual.ratio - 1.0).abs() < 1e-12, "{id:?}");
    assert!(id.holds && id.cpu_predicts_throughput);
    assert!((id.implied_equal_cores.ratio - id.observed.ratio).abs() < 1e-12);
    let e = r
        .comparisons
        .iter()
        .find(|e| e.mode == "ml-kem-768")
        .unwrap();
    assert!((id.cpu.ratio - e.cpu_ratio.unwrap()).abs() < 1e-12);
    // Second endpoints: latency and stage times at one worker, BH over all of them; the
    // exploratory comparison's BH p is its throughput difference test's.
    for name in [
        "throughput",
        "client CPU per request",
        "p50 latency",
        "p99 latency",
        "peak RSS",
        "RSS growth",
        "stage key_establishment",
        "stage manifest",
    ] {
        assert!(
            p.endpoint(name).is_some(),
            "{name} missing: {:?}",
            p.endpoints
        );
    }
    let kem = p.endpoint("stage key_establishment").unwrap();
    assert!((kem.estimate - 7.0).abs() < 1e-9 && kem.marked, "{kem:?}");
    let p99 = p.endpoint("p99 latency").unwrap();
    assert!((p99.estimate - 1.04).abs() < 1e-9, "{p99:?}");
    let all: Vec<f64> = r
        .secondary
        .iter()
        .flat_map(|s| s.endpoints.iter().map(|e| e.p))
        .collect();
    let bh = stats::multiplicity::benjamini_hochberg(&all);
    let tp = p.endpoint("throughput").unwrap();
    let i = all.iter().position(|x| *x == tp.p).unwrap();
    assert_eq!(tp.bh_p, bh[i]);
    assert_eq!(e.bh_p_adjusted, Some(tp.bh_p));
    // Control attribution: 1 − ln(0.967)/ln(0.960) = 17.8 %, within its interval.
    let a = &r.attributions[0];
    assert_eq!(
        (a.mode.as_str(), a.control.as_str(), a.baseline.as_str()),
        ("ml-kem-768", "x25519-padded", "x25519")
    );
    let sh = a.share.unwrap();
    let want = 1.0 - 0.967f64.ln() / 0.960f64.ln();
    let (lo, hi) = sh.ci90.unwrap();
    assert!(
        (sh.share - want).abs() < 0.03 && lo < sh.share && sh.share < hi,
        "{sh:?}"
    );
    assert_eq!(sh.n, 10);
    // The report shows all three, and no deviation.
    let md = campaign::report::markdown(&r, &campaign::report::Header::default());
    for want in [
        "## CPU accounting identity",
        "## Second endpoints (exploratory)",
        "## Controls: how much of the deficit the manifest size explains",
        "| get-64KiB-c1 | ml-kem-768 | x25519-padded | x25519 | 10 |",
        "## Deviations from the plan",
        "None: every planned run",
    ] {
        assert!(md.contains(want), "{want} missing:\n{md}");
    }
}

/// Issue 20: the knee interpolated between the bracketing rates and predicted by M/M/c
/// from the closed-loop runs.
#[test]
fn knee_is_interpolated_and_predicted() {
    let mut rows = Vec::new();
    let op = Some(campaign::spec::Operation::Put);
    for b in 0..2u32 {
        // Closed loop: 1 worker at 500/s (S = 2 ms), 16 workers at 4000/s (the peak).
        for (cell, c, tp) in [("put-1KiB-c1", 1, 500.0), ("put-1KiB-c16", 16, 4000.0)] {
            rows.push(RunRow {
                operation: op,
                object_size: Some(1024),
                concurrency: Some(c),
                ..row(cell, "x25519", b, tp, 100.0)
            });
        }
        // Open loop with 64 threads: response 2, 2.2, 3, 6 ms at 1000…4000/s.
        for (rate, resp) in [(1000.0, 2.0), (2000.0, 2.2), (3000.0, 3.0), (4000.0, 6.0)] {
            rows.push(RunRow {
                operation: op,
                object_size: Some(1024),
                concurrency: Some(64),
                offered_rps: Some(rate),
                mean_response_ms: Some(resp),
                ..row(&format!("put-1KiB-t64-r{rate}"), "x25519", b, rate, 100.0)
            });
        }
    }
    let r = analyze(&rows, &cfg(&[])).unwrap();
    let k = &r.knees[0];
    let knee = k.knee.unwrap();
    // 2 × 2 ms = 4 ms lies between 3 ms at 3000/s and 6 ms at 4000/s: a third of the way.
    assert!(
        (knee.rate - (3000.0 + 1000.0 / 3.0)).abs() < 1e-9,
        "{knee:?}"
    );
    assert_eq!((knee.lower_rate, knee.upper_rate), (3000.0, 4000.0));
    let p = k.predicted.unwrap();
    assert_eq!(p.servers, 8); // 4000/s × 2 ms
    assert!((p.service_time - 0.002).abs() < 1e-12);
    assert!(p.rate > 0.0 && p.rate < 4000.0);
    let want = knee.rate / p.rate;
    assert!((k.measured_over_predicted.unwrap() - want).abs() < 1e-12);
    // The M/M/c response time at the predicted rate is twice the service time.
    let resp = stats::queueing::mmc_response(p.service_time, p.servers, p.rate).unwrap();
    assert!((resp - 2.0 * p.service_time).abs() < 1e-9, "{resp}");
}
