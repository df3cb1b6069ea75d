//! `crdgen [--check] [PATH]`: writes the `BenchmarkCampaign` CRD (default
//! `crds/benchmarkcampaigns.pqbench.io.yaml`); `--check` fails if the file differs.

use std::path::PathBuf;
use std::process::ExitCode;

const DEFAULT: &str = "crds/benchmarkcampaigns.pqbench.io.yaml";

fn main() -> ExitCode {
    let mut check = false;
    let mut path = PathBuf::from(DEFAULT);
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--check" => check = true,
            "-h" | "--help" => {
                println!("crdgen [--check] [PATH]  (default {DEFAULT})");
                return ExitCode::SUCCESS;
            }
            p => path = PathBuf::from(p),
        }
    }
    let yaml = match operator::crd_yaml() {
        Ok(y) => y,
        Err(e) => {
            eprintln!("crdgen: {e}");
            return ExitCode::from(2);
        }
    };
    if check {
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == yaml {
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "crdgen: {} is not what the Rust types generate; run `cargo run -p operator --bin crdgen`",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::write(&path, yaml) {
        eprintln!("crdgen: cannot write {}: {e}", path.display());
        return ExitCode::from(2);
    }
    println!("wrote {}", path.display());
    ExitCode::SUCCESS
}
