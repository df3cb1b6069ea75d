//! `promtool check metrics` (Debian's `prometheus` package) as a test assertion; shared by
//! the worker's and the operator's metrics tests.

use std::io::Write as _;
use std::process::{Command, Stdio};

/// `promtool check metrics` on an exposition: no format error, no lint finding.
pub(crate) fn promtool_clean(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; .ci/run installs it)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("promtool");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}\n{}{}\n--- exposition:\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
