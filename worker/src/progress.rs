//! One progress reporter for every long command (`pqbench run`, `run-one` and
//! `pqbench-worker`, `put`/`get` of large objects, `bench-store`): on a terminal, a bar with
//! the position, a message and an ETA (indicatif); otherwise plain lines (for counted
//! things each step, for bytes and seconds every 5 s and at the end), so a log holds
//! progress without escape codes.

use std::io::IsTerminal as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What the position counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Things (runs, cells).
    Count,
    /// Bytes.
    Bytes,
    /// Seconds of a timed window.
    Seconds,
}

/// How often a plain line is printed when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// A progress bar on stderr, or plain lines.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    len: u64,
    unit: Unit,
    started: Instant,
    /// When the last plain line was printed, and at which position.
    last_plain: Mutex<Option<(Instant, u64)>>,
}

fn fmt_pos(unit: Unit, n: u64) -> String {
    match unit {
        Unit::Count => n.to_string(),
        Unit::Seconds => format!("{n} s"),
        Unit::Bytes => indicatif::BinaryBytes(n).to_string(),
    }
}

impl Progress {
    /// A reporter for `len` units of `label`: a bar when stderr is a terminal, else plain
    /// lines.
    pub fn new(label: &str, len: u64, unit: Unit) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let pos = match unit {
                Unit::Count => "{pos}/{len}",
                Unit::Seconds => "{pos}/{len} s",
                Unit::Bytes => "{binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}",
            };
            let template = format!("{{prefix}} [{{bar:24}}] {pos} {{msg}}");
            let style = ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("#>.");
            let b = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            b.set_style(style);
            b.set_prefix(label.to_owned());
            b
        });
        Self {
            bar,
            label: label.to_owned(),
            len,
            unit,
            started: Instant::now(),
            last_plain: Mutex::new(None),
        }
    }

    /// The ETA at `pos` from the rate so far.
    fn extrapolated(&self, pos: u64) -> Option<Duration> {
        if pos == 0 || pos >= self.len {
            return None;
        }
        #[allow(clippy::cast_precision_loss, reason = "an estimate")]
        let left = (self.len - pos) as f64 / pos as f64;
        Some(self.started.elapsed().mul_f64(left))
    }

    /// Moves to `pos` with `msg`. `eta` is the caller's estimate of the time left, when it
    /// has a better one than the rate so far.
    pub fn set(&self, pos: u64, msg: &str, eta: Option<Duration>) {
        let eta = eta.or_else(|| self.extrapolated(pos));
        let eta_text = eta.map_or_else(String::new, |e| {
            format!(
                "  ETA {}",
                humantime::format_duration(Duration::from_secs(e.as_secs()))
            )
        });
        if let Some(b) = &self.bar {
            b.set_position(pos);
            b.set_message(format!("{msg}{eta_text}"));
            return;
        }
        let Ok(mut last) = self.last_plain.lock() else {
            return;
        };
        let due = match (*last, self.unit) {
            (None, _) => true,
            (Some((_, at)), Unit::Count) => at != pos,
            (Some((t, _)), Unit::Bytes | Unit::Seconds) => {
                t.elapsed() >= PLAIN_EVERY || pos >= self.len
            }
        };
        if !due {
            return;
        }
        *last = Some((Instant::now(), pos));
        eprintln!(
            "{} {}/{} {msg}{eta_text}",
            self.label,
            fmt_pos(self.unit, pos),
            fmt_pos(self.unit, self.len)
        );
    }

    /// A line of its own, above the bar.
    pub fn line(&self, text: &str) {
        match &self.bar {
            Some(b) => b.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// Removes the bar (a terminal keeps the lines printed above it).
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The engine's status while a run goes: preparation, then the warm-up and measured window
/// in seconds with the request counts. Runs until aborted.
pub(crate) async fn show(
    m: std::sync::Arc<crate::engine::Monitor>,
    warmup: Duration,
    measured: Duration,
) {
    use std::sync::atomic::Ordering;
    let total = warmup + measured;
    let p = Progress::new("run", total.as_secs().max(1), Unit::Seconds);
    p.line("preparing: keys, known-answer gate, warm-up round trip, fixtures …");
    let start = loop {
        let ms = m.start_in_ms.load(Ordering::Relaxed);
        if ms > 0 {
            p.line(&format!(
                "ready; starting in {ms} ms (warm-up {warmup:?}, measured {measured:?})"
            ));
            break Instant::now() + Duration::from_millis(ms);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let el = Instant::now().saturating_duration_since(start);
        let phase = if el < warmup {
            "warm-up"
        } else if el < total {
            "measured"
        } else {
            "finishing"
        };
        p.set(
            el.min(total).as_secs(),
            &format!(
                "{phase}: ok {}, failed {}, in flight {}",
                m.ok.load(Ordering::Relaxed),
                m.failed.load(Ordering::Relaxed),
                m.in_flight.load(Ordering::Relaxed)
            ),
            Some(total.saturating_sub(el)),
        );
    }
}
