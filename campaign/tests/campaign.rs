//! The campaign schema and the design, on the shipped examples and on malformed files.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::collections::BTreeMap;

use campaign::design::plan;
use campaign::spec::S3ClientKind;
use campaign::{CampaignFile, Manifest};

const QUICK: &str = include_str!("../../examples/quick.yaml");
const STUDY: &str = include_str!("../../examples/study-primary.yaml");
const REMOTE: &str = include_str!("../../examples/remote-kem.yaml");

#[test]
fn examples_parse_and_plan() {
    for (name, text) in [("quick", QUICK), ("study-primary", STUDY)] {
        let m = Manifest::parse(text, name).unwrap();
        let p = plan(&m);
        assert!(!p.runs.is_empty(), "{name}");
    }
    let study = plan(&Manifest::parse(STUDY, "study").unwrap());
    // Eight primary cells, 10 repetitions and 20 at the knee, ten arms (P1, B2, the study's
    // controls, the hybrid family P3 and P2, R1, and P1 and B2 on the lean S3 client); the
    // primary family is P1 vs B2 in the eight cells, with the manifest control declared and
    // the study's one prediction (V-C).
    assert_eq!(study.cells.len(), 8);
    assert_eq!(study.arms.len(), 10);
    assert_eq!(study.runs.len(), (7 * 10 + 20) * 10);
    assert_eq!(study.comparisons.len(), 11);
    let labels: Vec<&str> = study.arms.iter().map(|a| a.label.as_str()).collect();
    for arm in ["concat-hybrid", "rsa-oaep-4096", "x-wing"] {
        assert!(labels.contains(&arm), "{labels:?}");
    }
    assert!(
        study
            .comparisons
            .iter()
            .any(|c| c.arm == "x-wing" && c.against == "x25519"),
        "P3 vs B2"
    );
    let m = Manifest::parse(STUDY, "study").unwrap();
    assert_eq!(m.spec.analysis.controls.len(), 1);
    assert_eq!(m.spec.analysis.predictions[0].ratio, 0.956);
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

/// Remote arms (issue 41): their local primitives on aws-lc, their key service in the
/// plan (added round trip, cache), labels as given or `<mode>-remote`, the declared
/// comparisons kept, and by default a remote arm compared with the baseline's arm on the
/// same key service.
#[test]
fn remote_arms_carry_their_key_service_into_the_plan() {
    /// Label, backend, and the key service's (round trip in ms, cache).
    type ArmRow<'a> = (&'a str, &'a str, Option<(u128, bool)>);
    let p = plan(&Manifest::parse(REMOTE, "remote-kem").unwrap());
    let arms: Vec<ArmRow<'_>> = p
        .arms
        .iter()
        .map(|a| {
            (
                a.label.as_str(),
                a.backend.name(),
                a.kms.as_ref().map(|k| (k.rtt.0.as_millis(), k.cache)),
            )
        })
        .collect();
    assert_eq!(
        arms,
        [
            ("x25519-local", "aws-lc", None),
            ("mlkem-local", "aws-lc", None),
            ("x25519-kms-0ms", "aws-lc", Some((0, false))),
            ("mlkem-kms-0ms", "aws-lc", Some((0, false))),
            ("x25519-kms-1ms", "aws-lc", Some((1, false))),
            ("mlkem-kms-1ms", "aws-lc", Some((1, false))),
            ("mlkem-kms-1ms-cached", "aws-lc", Some((1, true))),
        ]
    );
    assert_eq!(p.comparisons.len(), 6);
    assert_eq!(p.runs.len(), 7 * 4);

    // Without declared comparisons and names: `<mode>-remote`, compared with the remote
    // baseline (ML-KEM remote vs X25519 remote), the local one with the local one.
    let text = "apiVersion: pqbench.io/v1alpha1\nkind: BenchmarkCampaign\nmetadata: {name: r}\n\
        spec:\n  arms:\n    - {mode: x25519}\n    - {mode: ml-kem-768}\n    - {mode: x25519, backend: remote}\n    \
        - {mode: ml-kem-768, backend: remote}\n  baseline: x25519\n  cells:\n    - {operation: [get], objectSize: [1KiB], concurrency: [2]}\n  \
        repetitions: 2\n  seed: 1\n  analysis:\n    primary: [{cell: get-1KiB-c2}]\n";
    let p = plan(&Manifest::parse(text, "r.yaml").unwrap());
    let pairs: Vec<(&str, &str)> = p
        .comparisons
        .iter()
        .map(|c| (c.arm.as_str(), c.against.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("ml-kem-768", "x25519"),
            ("ml-kem-768-remote", "x25519-remote")
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
            "{mode: ml-kem-768, backend: boringssl}",
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
            "    primary:",
            "    predictions:\n      - {cell: get-1KiB-c8-cores1, arm: ml-kem-768, against: x25519, ratio: 0}\n    primary:",
            "spec.analysis.predictions[0].ratio: 0 must lie strictly between 0 and 10",
        ),
        (
            "    primary:",
            "    predictions:\n      - {cell: get-1KiB-c8-cores1, arm: ml-kem-768-rustcrypto, against: x25519, ratio: 0.8}\n    primary:",
            "spec.analysis.predictions[0]: ml-kem-768-rustcrypto against x25519 is not one of the comparisons; a prediction is scored against a comparison, so declare it in analysis.comparisons",
        ),
        (
            "    primary:",
            "    predictions:\n      - {cell: get-2KiB, arm: ml-kem-768, against: x25519, ratio: 1}\n    primary:",
            "spec.analysis.predictions[0].cell: \"get-2KiB\" is not a cell of this campaign",
        ),
        (
            "    primary:",
            "    controls:\n      - {arm: ml-kem-768, control: x25519-padded, against: x25519}\n    primary:",
            "spec.analysis.controls[0].control: \"x25519-padded\" is not an arm of this campaign",
        ),
        (
            "    primary:",
            "    controls:\n      - {arm: ml-kem-768, control: ml-kem-768, against: x25519}\n    primary:",
            "spec.analysis.controls[0]: arm, control and against must be three different arms",
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
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: x-wing, backend: remote}",
            "spec.arms[1].backend: remote: a key service performs ML-KEM decapsulation or \
             X25519 agreement, so a remote arm's mode is ml-kem-768, ml-kem-1024 or x25519, \
             not x-wing",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: aws-lc, kms: {rtt: 1ms}}",
            "spec.arms[1].kms: only a `backend: remote` arm has a key service",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: remote, kms: {rtt: 1ms, endpoint: 'http://k:1', keyId: a}}",
            "spec.arms[1].kms.rtt: the embedded service adds a round trip; the service at \
             http://k:1 has the network's",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: remote, kms: {endpoint: 'https://kms.eu-west-1.amazonaws.com'}}",
            "spec.arms[1].kms.keyId: required with endpoint",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: remote, kms: {keyId: a}}",
            "spec.arms[1].kms.keyId: belongs to a key service given by endpoint",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: remote, kms: {endpoint: 'https://kms/x?a', keyId: a}}",
            "spec.arms[1].kms.endpoint: \"https://kms/x?a\" is not http(s)://host[:port]",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: remote, kms: {endpoint: 'https://u:p@kms', keyId: a}}",
            "spec.arms[1].kms.endpoint: \"https://u:p@kms\" is not http(s)://host[:port]",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: remote, kms: {endpoint: 'http://k:1', keyId: 'a b'}}",
            "spec.arms[1].kms.keyId: \"a b\" is not a key id or ARN",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: remote, kms: {endpoint: 'http://k:1', keyId: a, credentialsSecret: ../x}}",
            "spec.arms[1].kms.credentialsSecret: \"../x\" is not a Secret name",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: remote, kms: {endpoint: 'http://k:1', keyId: a, secret: x}}",
            "unknown field `secret`",
        ),
        (
            "{mode: ml-kem-768, backend: aws-lc}",
            "{mode: ml-kem-768, backend: kms}",
            "expected aws-lc, rustcrypto, libcrux, openssl or remote",
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
