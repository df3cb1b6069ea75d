//! The generated CRD and the shipped examples (issue 6: "every file in `examples/` is
//! accepted, the invalid sample is rejected"; the API-server half is in `apiserver.rs`).
#![allow(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};

use operator::BenchmarkCampaign;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn examples() -> Vec<(PathBuf, String)> {
    let mut v: Vec<_> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    v.sort();
    v
}

/// The drift check of `make test`: both committed copies of the CRD, the one `kubectl apply`
/// takes and the Helm chart's, are what the Rust types generate (`make crds` writes both).
#[test]
fn committed_crd_is_what_the_types_generate() {
    let generated = operator::crd_yaml().unwrap();
    for path in [
        "crds/benchmarkcampaigns.pqbench.io.yaml",
        "charts/pqbench/files/benchmarkcampaigns.pqbench.io.yaml",
    ] {
        let committed = std::fs::read_to_string(root().join(path)).expect(path);
        assert!(
            committed == generated,
            "{path} is stale: run `make crds` and commit the result"
        );
    }
}

/// The user guide's field reference is what the CRD's schema says (`make crds` writes it).
#[test]
fn committed_field_reference_is_what_the_schema_says() {
    let path = "docs/src/reference/campaign-fields.md";
    let committed = std::fs::read_to_string(root().join(path)).expect(path);
    assert!(
        committed == operator::fieldref::field_reference().unwrap(),
        "{path} is stale: run `make crds` and commit the result"
    );
}

/// The chart's Role rules are the operator's (`operator::rbac`; `make crds` writes them).
#[test]
fn committed_rbac_rules_are_what_the_operator_declares() {
    let path = "charts/pqbench/files/rbac-rules.yaml";
    let committed = std::fs::read_to_string(root().join(path)).expect(path);
    assert!(
        committed == operator::rbac::rules_yaml(),
        "{path} is stale: run `make crds` and commit the result"
    );
}

#[test]
fn crd_has_the_names_columns_subresource_and_rules() {
    let crd = serde_json::to_value(operator::crd()).unwrap();
    assert_eq!(crd["metadata"]["name"], "benchmarkcampaigns.pqbench.io");
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["names"]["shortNames"][0], "bc");
    let v = &crd["spec"]["versions"][0];
    assert_eq!(v["name"], "v1alpha1");
    assert!(v["subresources"]["status"].is_object());
    let cols: Vec<&str> = v["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Phase", "Progress", "Verdicts", "Age"]);
    let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let rules: Vec<&str> = spec["x-kubernetes-validations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"self == oldSelf"), "{rules:?}");
    assert_eq!(spec["properties"]["modes"]["maxItems"], 11);
    // Conditions merge by type under server-side apply.
    let conditions =
        &v["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(conditions["x-kubernetes-list-map-keys"][0], "type");
    // No references or unions survive: a structural schema has neither.
    let text = serde_json::to_string(&crd).unwrap();
    for bad in ["$ref", "oneOf", "anyOf", "\"allOf\""] {
        assert!(!text.contains(bad), "{bad} in the CRD schema");
    }
}

#[test]
fn examples_deserialize_as_the_custom_resource_and_the_invalid_one_is_refused() {
    let all = examples();
    assert!(all.len() >= 6, "{all:?}");
    for (path, text) in &all {
        let name = path.file_name().unwrap().to_string_lossy();
        let parsed = campaign::Manifest::parse(text, &name);
        if name.starts_with("invalid-") {
            // What each says, here and on the API server, is checked by tests/examples.rs.
            assert!(parsed.is_err(), "{name} must be refused");
            continue;
        }
        let manifest = parsed.unwrap_or_else(|e| panic!("{e}"));
        // The same file is a BenchmarkCampaign object, with the same spec.
        let object: BenchmarkCampaign = serde_yaml_ng::from_str(text).unwrap();
        assert_eq!(object.spec.campaign, manifest.spec, "{name}");
        assert_eq!(
            object.metadata.name.as_deref(),
            Some(manifest.metadata.name.as_str())
        );
    }
}
