//! `crdgen [--check] [PATH...]`: writes the `BenchmarkCampaign` CRD to
//! `crds/benchmarkcampaigns.pqbench.io.yaml` and the Helm chart's copy
//! (`charts/pqbench/files/`), and the operator's RBAC rules to
//! `charts/pqbench/files/rbac-rules.yaml` (`operator::rbac`), and the user guide's field
//! reference to `docs/src/reference/campaign-fields.md` (`operator::fieldref`); or the CRD
//! only to the given paths. `--check` fails if any differs.
//!
//! `crdgen --children DIR`: writes to `DIR/<campaign>.yaml` the objects the operator makes
//! for each example campaign in [`EXAMPLES`] (every child but its Secrets,
//! `operator::resources::children`), for `make chart-check` to scan with checkov.

use std::path::PathBuf;
use std::process::ExitCode;

const DEFAULT: [&str; 2] = [
    "crds/benchmarkcampaigns.pqbench.io.yaml",
    "charts/pqbench/files/benchmarkcampaigns.pqbench.io.yaml",
];
/// Where the chart's Role rules come from.
const RBAC: &str = "charts/pqbench/files/rbac-rules.yaml";
/// The user guide's `BenchmarkCampaign` field reference.
const FIELDS: &str = "docs/src/reference/campaign-fields.md";
/// The campaigns whose children `--children` writes: one on its own MinIO, one against an
/// external server with its results elsewhere and telemetry, and one with remote arms (the
/// key service's Deployment, Service and fence), and one whose remote arm names a key
/// service by endpoint (its credentials Secret mounted in the workers, their egress to it).
const EXAMPLES: [(&str, &str); 4] = [
    (
        "cluster-minio",
        include_str!("../../../examples/cluster-minio.yaml"),
    ),
    ("external", EXTERNAL),
    (
        "remote-kem",
        include_str!("../../../examples/remote-kem.yaml"),
    ),
    (
        "kms-endpoint",
        include_str!("../../../examples/kms-endpoint.yaml"),
    ),
];
const EXTERNAL: &str = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: external}
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells: [{operation: [get], objectSize: [64KiB], concurrency: [8]}]
  repetitions: 2
  seed: 1
  server:
    external: {endpoint: 'https://s3.eu-west-1.amazonaws.com', region: eu-west-1, bucket: bench, credentialsSecret: s3-keys}
  results: {endpoint: 'https://s3.eu-west-1.amazonaws.com', bucket: bench-results, credentialsSecret: s3-keys}
  telemetry: {otlpEndpoint: 'http://otel-collector.observability:4317'}
";

/// Writes the children of [`EXAMPLES`] to `dir`.
fn children(dir: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, text) in EXAMPLES {
        let mut c: operator::BenchmarkCampaign =
            serde_yaml_ng::from_str(text).map_err(|e| format!("{name}: {e}"))?;
        c.metadata.namespace = Some("team-a".into());
        c.metadata.uid = Some("00000000-0000-0000-0000-000000000000".into());
        let except = operator::resources::METADATA_ADDRESSES.map(String::from);
        let objects = operator::resources::children(
            &c,
            "ghcr.io/pqbench/pqbench-worker@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            operator::resources::DEFAULT_NODE_EXPORTER_IMAGE,
            "ghcr.io/pqbench/pqbench-probe@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            Some("pqbench-system"),
            &except,
        )
        .map_err(|e| format!("{name}: {e}"))?;
        let mut yaml = String::new();
        for o in objects {
            yaml.push_str("---\n");
            yaml.push_str(&serde_yaml_ng::to_string(&o).map_err(|e| format!("{name}: {e}"))?);
        }
        let path = dir.join(format!("{name}.yaml"));
        std::fs::write(&path, yaml).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut check = false;
    let mut paths: Vec<PathBuf> = Vec::new();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, dir] = args.as_slice()
        && flag == "--children"
    {
        return match children(std::path::Path::new(dir)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("crdgen: {e}");
                ExitCode::from(2)
            }
        };
    }
    for a in args {
        match a.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                println!(
                    "crdgen [--check] [PATH...]  (default {})\ncrdgen --children DIR",
                    DEFAULT.join(" ")
                );
                return ExitCode::SUCCESS;
            }
            p => paths.push(PathBuf::from(p)),
        }
    }
    let yaml = match operator::crd_yaml() {
        Ok(y) => y,
        Err(e) => {
            eprintln!("crdgen: {e}");
            return ExitCode::from(2);
        }
    };
    let mut files: Vec<(PathBuf, String)> = paths.into_iter().map(|p| (p, yaml.clone())).collect();
    if files.is_empty() {
        files = DEFAULT
            .iter()
            .map(|p| (PathBuf::from(p), yaml.clone()))
            .collect();
        files.push((PathBuf::from(RBAC), operator::rbac::rules_yaml()));
        match operator::fieldref::field_reference() {
            Ok(md) => files.push((PathBuf::from(FIELDS), md)),
            Err(e) => {
                eprintln!("crdgen: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let mut code = ExitCode::SUCCESS;
    for (path, yaml) in &files {
        if check {
            if std::fs::read_to_string(path).unwrap_or_default() != *yaml {
                eprintln!(
                    "crdgen: {} is not what the Rust code generates; run `cargo run -p operator --bin crdgen`",
                    path.display()
                );
                code = ExitCode::FAILURE;
            }
            continue;
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && let Err(e) = std::fs::create_dir_all(dir)
        {
            eprintln!("crdgen: cannot create {}: {e}", dir.display());
            return ExitCode::from(2);
        }
        if let Err(e) = std::fs::write(path, yaml) {
            eprintln!("crdgen: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
        println!("wrote {}", path.display());
    }
    code
}
