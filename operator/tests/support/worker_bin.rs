//! The `pqbench-worker` binary the operator's tests run as a pod's process (test support):
//! the one `cargo test --workspace` builds beside `pqbench-operator`.

use std::path::{Path, PathBuf};

/// The `pqbench-worker` binary beside this package's `pqbench-operator`, refused when it
/// is older than the sources it is built from (`cargo test --workspace` builds both).
pub(crate) fn worker_binary() -> PathBuf {
    let operator = Path::new(env!("CARGO_BIN_EXE_pqbench-operator"));
    let worker = operator.with_file_name("pqbench-worker");
    let how =
        "build it with `cargo build -p worker --bin pqbench-worker` (cargo test --workspace does)";
    let built = std::fs::metadata(&worker)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}; {how}", worker.display()));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut stack: Vec<PathBuf> = [
        "worker", "run", "s3", "kms", "envelope", "dataset", "stats", "campaign", "analysis",
        "report", "obs",
    ]
    .iter()
    .map(|c| root.join(c).join("src"))
    .collect();
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let changed = std::fs::metadata(&p).unwrap().modified().unwrap();
                assert!(
                    changed <= built,
                    "{} is older than {}: {how}",
                    worker.display(),
                    p.display()
                );
            }
        }
    }
    worker
}
