//! A run made invalid as a busy cluster would make it (test support, not product): its
//! pause waits for a server host that never goes quiet and gives up, so the run's
//! `pause_quiet` check fails. The operator's tests and the played campaign use it to see
//! an invalid run kept and run again.

#![allow(dead_code, reason = "each test binary uses part of the support")]

use std::io::{Read as _, Write as _};
use std::time::Duration;

use campaign::spec::PauseRule;
use campaign::units::{Dur, Size};
use run::runspec::{PromSource, RunSpec};

/// A node exporter whose host never goes quiet (1 GiB of dirty memory), on 127.0.0.1: its
/// metrics URL. It answers until the test process ends.
pub(crate) fn busy_node_exporter() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let body = "node_memory_Dirty_bytes 1073741824\nnode_memory_Writeback_bytes 0\n";
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// Points `spec`'s pause at the node exporter `url` and lets it wait 1 s at most: the run
/// starts after the pause gave up, and is invalid.
pub(crate) fn make_invalid(spec: &mut RunSpec, url: &str) {
    spec.pause = Some(PauseRule {
        max_dirty: Size(32 << 20),
        max_disk_write_per_s: Size(5 << 20),
        quiet_for: Dur(Duration::from_secs(1)),
        max_wait: Dur(Duration::from_secs(1)),
    });
    spec.telemetry.node_exporter = Some(PromSource {
        url: url.to_owned(),
        bearer_token_env: None,
        bearer_token_file: None,
    });
}
