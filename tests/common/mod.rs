//! Helpers shared by the test binaries that run `pqbench` as a process.

use std::path::Path;
use std::process::Output;

/// The stdout of a command that must have succeeded; its stderr in the panic otherwise.
pub(crate) fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf8")
}

/// A path as an argument.
pub(crate) fn s(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}
