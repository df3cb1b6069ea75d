//! `examples/cluster-minio.yaml` as the API server holds it, for the tests that answer in
//! the API server's place (the mock of `operator/src/fixtures.rs`, `operator/tests/trace.rs`).

use serde_json::{Value, json};

/// The example, as its text parses, stored as campaign `quick` in `ns`: with the metadata
/// the API server adds, and `finalizers`.
pub(crate) fn cluster_minio(ns: &str, finalizers: &[&str]) -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/cluster-minio.yaml"
    ))
    .expect("examples/cluster-minio.yaml");
    let mut v: Value = serde_yaml_ng::from_str(&text).expect("the example parses");
    v["metadata"] = json!({
        "name": "quick",
        "namespace": ns,
        "uid": "0000-1111",
        "generation": 1,
        "creationTimestamp": "2026-11-30T12:00:00Z",
        "resourceVersion": "1",
        "finalizers": finalizers,
    });
    v
}
