//! A status line on stderr while a run is going: phase, elapsed/total, requests, ETA.

use std::io::{IsTerminal as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::engine::Monitor;

/// Prints status until aborted. On a terminal the line is rewritten in place; otherwise
/// one line every 5 s.
pub(crate) async fn show(m: Arc<Monitor>, warmup: Duration, measured: Duration) {
    let tty = std::io::stderr().is_terminal();
    eprintln!("preparing: keys, known-answer gate, warm-up round trip, fixtures …");
    let start = loop {
        let ms = m.start_in_ms.load(Ordering::Relaxed);
        if ms > 0 {
            eprintln!("ready; starting in {ms} ms (warm-up {warmup:?}, measured {measured:?})");
            break Instant::now() + Duration::from_millis(ms);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let total = warmup + measured;
    let mut n = 0u64;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        n += 1;
        let el = Instant::now().saturating_duration_since(start);
        let phase = if el < warmup {
            "warm-up"
        } else if el < total {
            "measured"
        } else {
            "finishing"
        };
        let line = format!(
            "{phase}: {:.0}/{:.0} s, ok {}, failed {}, in flight {}, ETA {:.0} s",
            el.as_secs_f64().min(total.as_secs_f64()),
            total.as_secs_f64(),
            m.ok.load(Ordering::Relaxed),
            m.failed.load(Ordering::Relaxed),
            m.in_flight.load(Ordering::Relaxed),
            total.saturating_sub(el).as_secs_f64()
        );
        if tty {
            eprint!("\r\x1b[K{line}");
            let _ = std::io::stderr().flush();
        } else if n.is_multiple_of(5) {
            eprintln!("{line}");
        }
    }
}

/// Ends the status line.
pub(crate) fn clear() {
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[K");
    }
}
