//! Every shipped campaign file means one thing in both places it can go (issue 16 item 1):
//! each `examples/*.yaml` and `tests/e2e/kind/*/campaign.yaml` is given, as its text, to
//! `pqbench plan FILE` (the binary, as a process) and to the real Kubernetes API server of
//! `../shared/tools/k8s-test-apiserver` (each YAML document created untyped, as a
//! `DynamicObject`, the way `kubectl apply -f` sends it: no pqbench type in between to
//! normalise a single value into a list). Both must make the same decision.
//!
//! Accepted files must read back from the API server, defaults filled in, as the spec
//! pqbench reads from the file. A deliberately invalid example (`examples/invalid-*.yaml`,
//! one per refusal class of the CRD's CEL rules, plus the single-value-for-a-list case)
//! says in its header what `pqbench plan` says and what the API server says; both must say
//! it. A kind scenario whose `expect` has `reject:` must be refused with that message.
//!
//! Without the server this test fails and says how to start it, unless `PQBENCH_K8S_SKIP`
//! holds the reason it could not be built (then it says so loudly and passes).
#![allow(clippy::unwrap_used, reason = "tests")]

#[path = "../operator/tests/support/k8s.rs"]
mod k8s;

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s::{apply, client_or_skip, install_crd, namespace};
use kube::Client;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every shipped campaign file, sorted.
fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    for e in std::fs::read_dir(root().join("tests/e2e/kind")).unwrap() {
        let p = e.unwrap().path().join("campaign.yaml");
        if p.is_file() {
            v.push(p);
        }
    }
    v.sort();
    v
}

fn shown(p: &Path) -> String {
    p.strip_prefix(root()).unwrap().display().to_string()
}

/// `pqbench plan FILE`: Ok(stdout) or Err(stderr).
fn plan(p: &Path) -> Result<String, String> {
    let o = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .arg("plan")
        .arg(p)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if o.status.success() {
        Ok(text(&o.stdout))
    } else {
        Err(text(&o.stderr))
    }
}

/// The header comment of a file as one line (`# ` stripped, lines joined by spaces).
fn header(text: &str) -> String {
    text.lines()
        .map_while(|l| l.strip_prefix('#'))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The quoted message after `marker` in an invalid example's header: `"…"` (escaped
/// quotes inside kept).
fn quoted_after(header: &str, marker: &str, file: &str) -> String {
    let rest = &header[header
        .find(marker)
        .unwrap_or_else(|| panic!("{file}: its header must say what {marker:?} is"))
        + marker.len()..];
    let start = rest.find('"').unwrap() + 1;
    let mut out = String::new();
    let mut chars = rest[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '"' => break,
            c => out.push(c),
        }
    }
    out
}

/// `message` holds every `...`-separated part of `expected`, whitespace normalised.
fn says(message: &str, expected: &str) -> bool {
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let m = flat(message);
    expected
        .split("...")
        .all(|part| m.contains(flat(part).trim()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_campaign_file_gets_the_same_decision_from_pqbench_plan_and_the_api_server() {
    if client_or_skip().is_none() {
        return;
    }
    let client = Client::try_default().await.expect("client from KUBECONFIG");
    install_crd(&client).await;
    let all = files();
    let (mut accepted, mut refused) = (0, 0);
    for (i, path) in all.iter().enumerate() {
        let file = shown(path);
        let text = std::fs::read_to_string(path).unwrap();
        let ns = namespace(&format!("ex{i}"));
        let local = plan(path);
        let server = apply(&client, &ns, &text).await;
        match (&local, &server) {
            (Ok(_), Ok(stored)) => {
                // What the API server stored (its defaults filled in) is what pqbench reads.
                let m = campaign::Manifest::parse(&text, &file).unwrap();
                assert_eq!(stored.spec.campaign, m.spec, "{file}");
                assert!(!file.contains("invalid-"), "{file} is accepted by both");
                accepted += 1;
            }
            (Err(plan_says), Err(server_says)) => {
                if let Some(name) = path.file_name().and_then(|n| n.to_str())
                    && name.starts_with("invalid-")
                {
                    let h = header(&text);
                    let want_plan = quoted_after(&h, "`pqbench plan` says", &file);
                    let want_server = quoted_after(&h, "API server", &file);
                    assert!(
                        says(plan_says, &want_plan),
                        "{file}: pqbench plan said {plan_says:?}, its header promises {want_plan:?}"
                    );
                    assert!(
                        says(server_says, &want_server),
                        "{file}: the API server said {server_says:?}, its header promises {want_server:?}"
                    );
                } else {
                    let expect = std::fs::read_to_string(path.with_file_name("expect"))
                        .unwrap_or_else(|_| {
                            panic!(
                                "{file} is refused by pqbench plan ({plan_says}) and by the API \
                                 server ({server_says}), but it is neither an invalid-* example \
                                 nor a kind scenario that expects a rejection"
                            )
                        });
                    let reject = expect
                        .lines()
                        .find_map(|l| l.strip_prefix("reject: "))
                        .unwrap_or_else(|| panic!("{file}: refused by both, but its expect file does not say `reject:`"));
                    assert!(says(server_says, reject), "{file}: {server_says}");
                }
                refused += 1;
            }
            (Ok(_), Err(server_says)) => {
                panic!("{file}: pqbench plan accepts it, the API server refuses it: {server_says}")
            }
            (Err(plan_says), Ok(_)) => {
                panic!("{file}: the API server accepts it, pqbench plan refuses it: {plan_says}")
            }
        }
    }
    eprintln!("{accepted} files accepted and {refused} refused by both");
    let invalid = all
        .iter()
        .filter(|p| shown(p).starts_with("examples/invalid-"))
        .count();
    assert!(
        invalid >= 11,
        "one invalid example per refusal class: {invalid}"
    );
    assert!(accepted >= 10, "{accepted}");
}
