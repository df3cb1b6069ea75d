//! `crdgen [--check] [PATH...]`: writes the `BenchmarkCampaign` CRD to
//! `crds/benchmarkcampaigns.pqbench.io.yaml` and the Helm chart's copy
//! (`charts/pqbench/files/`), and the operator's RBAC rules to
//! `charts/pqbench/files/rbac-rules.yaml` (`operator::rbac`); or the CRD only to the given
//! paths. `--check` fails if any differs.

use std::path::PathBuf;
use std::process::ExitCode;

const DEFAULT: [&str; 2] = [
    "crds/benchmarkcampaigns.pqbench.io.yaml",
    "charts/pqbench/files/benchmarkcampaigns.pqbench.io.yaml",
];
/// Where the chart's Role rules come from.
const RBAC: &str = "charts/pqbench/files/rbac-rules.yaml";

fn main() -> ExitCode {
    let mut check = false;
    let mut paths: Vec<PathBuf> = Vec::new();
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                println!(
                    "crdgen [--check] [PATH...]  (default {})",
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
