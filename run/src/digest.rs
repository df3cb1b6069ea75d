//! What a run summary needs of its records, folded one record at a time, so that neither a
//! worker nor a reader of a run directory holds a run's records in memory: a 30-minute cell
//! at thousands of requests per second writes millions of records (issue 20, "long cells
//! with samples streamed to disk so memory stays flat").
//!
//! A [`Digest`] keeps counts and sums (exact), the distributions whose percentiles the
//! summary reports ([`Quantiles`]: counts of values rounded to the microsecond, or to 10⁻⁶
//! for unaccounted fractions — memory bounded by the span of values, not by the number of
//! requests), the first offender of each record check, the sessions of
//! `ml-kem-768-session` PUTs, and the window cut into [`BINS`] bins for the drift figures
//! ([`crate::summary::DriftFigures`]). Digests of a run's processes [`Digest::merge`] into
//! the run's.
//!
//! Percentiles interpolate linearly between order statistics (NumPy's default) of the
//! rounded values: a reported percentile is within 0.5 µs (5·10⁻⁷) of the one over exact
//! values.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::records::{Outcome, Record, RequestPhase};
use crate::runspec::{Operation, RunSpec};
use crate::turns::Turns;

/// Bins the measured window is cut into for the drift figures.
pub const BINS: usize = 30;

/// A distribution kept as counts of rounded values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Quantiles {
    /// Value in units of `1 / scale` → how often.
    counts: BTreeMap<u64, u64>,
    n: u64,
    sum: f64,
}

impl Quantiles {
    /// Adds a non-negative value, rounded to `1 / scale`.
    fn add(&mut self, value: f64, scale: f64) {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a non-negative value in range: rounded on purpose"
        )]
        let k = (value.max(0.0) * scale).round() as u64;
        *self.counts.entry(k).or_insert(0) += 1;
        self.n += 1;
        self.sum += value;
    }

    fn merge(&mut self, other: &Self) {
        for (k, c) in &other.counts {
            *self.counts.entry(*k).or_insert(0) += c;
        }
        self.n += other.n;
        self.sum += other.sum;
    }

    /// How many values.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// No values.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Distinct rounded values held (what the memory grows with).
    pub fn distinct(&self) -> usize {
        self.counts.len()
    }

    /// Mean of the exact values (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / f(self.n)
        }
    }

    /// The `i`-th smallest rounded value (0-based), in units of `1 / scale`.
    fn order_stat(&self, i: u64) -> u64 {
        let mut seen = 0;
        for (k, c) in &self.counts {
            seen += c;
            if seen > i {
                return *k;
            }
        }
        self.counts.keys().next_back().copied().unwrap_or(0)
    }

    /// The `q` quantile (NumPy's linear interpolation) of the rounded values, rescaled by
    /// `scale` (0 when empty).
    fn quantile(&self, q: f64, scale: f64) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let h = f(self.n - 1) * q.clamp(0.0, 1.0);
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "0 ≤ h < n"
        )]
        let lo = h.floor() as u64;
        let a = f(self.order_stat(lo));
        let b = if lo + 1 < self.n {
            f(self.order_stat(lo + 1))
        } else {
            a
        };
        (a + (h - f(lo)) * (b - a)) / scale
    }

    /// The largest rounded value, rescaled.
    fn max(&self, scale: f64) -> f64 {
        self.counts
            .keys()
            .next_back()
            .map_or(0.0, |k| f(*k) / scale)
    }
}

/// Microseconds per millisecond: latencies are kept in ms, rounded to the µs.
const MS_SCALE: f64 = 1e3;
/// Unaccounted fractions are rounded to 10⁻⁶.
const FRACTION_SCALE: f64 = 1e6;

/// A record check's offenders: how many, and the first one described.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offenders {
    /// How many.
    pub count: u64,
    /// The first (in the order records were folded), described.
    pub first: Option<String>,
}

impl Offenders {
    fn add(&mut self, describe: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(describe());
        }
    }

    fn merge(&mut self, other: &Self) {
        self.count += other.count;
        if self.first.is_none() {
            self.first.clone_from(&other.first);
        }
    }
}

/// One session's objects (an `ml-kem-768-session` PUT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionTally {
    /// Objects sealed under its root (successful requests, any phase).
    pub objects: u64,
    /// Largest object index seen.
    pub max_index: u64,
    /// Oldest root age at which an object was sealed.
    pub max_age: Duration,
}

/// One bin of the measured window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bin {
    /// Successful measured requests that started in it.
    pub ok: u64,
    /// Their latencies summed, ms.
    pub latency_ms_sum: f64,
}

/// Where a request lands in the window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Window {
    from: Duration,
    len: Duration,
}

/// The fold of a run's (or one process's) records; see the module docs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Digest {
    window: Window,
    process: u32,
    /// Warm-up requests (any outcome).
    pub warmup: u64,
    /// Measured requests (any outcome).
    pub measured: u64,
    /// Failed measured requests by error class (`not_started` among them).
    pub failures: BTreeMap<String, u64>,
    /// Failed measured requests that never started (open loop).
    pub not_started: u64,
    /// Latency of successful measured requests, ms.
    pub latency_ms: Quantiles,
    /// Their queue wait, ms.
    pub queue_wait_ms: Quantiles,
    /// Their unaccounted fraction.
    pub unaccounted_fraction: Quantiles,
    /// Their stage times summed, µs, in [`crate::records::Stage`] order.
    pub stage_us_sums: [f64; 5],
    /// Their unaccounted time summed, µs.
    pub unaccounted_us_sum: f64,
    /// Their crypto CPU summed, µs.
    pub crypto_cpu_us_sum: f64,
    /// Their total time summed, s.
    pub total_s_sum: f64,
    /// Their unaccounted time summed, s.
    pub unaccounted_s_sum: f64,
    /// Their manifest bytes summed.
    pub manifest_bytes_sum: f64,
    /// Their S3 requests, bytes sent and bytes received, summed (per logical request:
    /// what a format costs on the wire).
    pub wire_sums: [f64; 3],
    /// Successful requests whose stage timers sum above their total.
    pub stage_sum_over: Offenders,
    /// Objects outside the session bounds.
    pub session_outside: Offenders,
    /// Successful session PUTs without session bookkeeping.
    pub session_missing: u64,
    /// Sessions by (process, session number).
    pub sessions: BTreeMap<(u32, u64), SessionTally>,
    /// The measured window in [`BINS`] bins, by request start.
    pub bins: Vec<Bin>,
    /// Records folded.
    pub records: u64,
    bounds: Option<envelope::SessionBounds>,
    put: bool,
}

#[allow(clippy::cast_precision_loss, reason = "counts below 2^53")]
fn f(n: u64) -> f64 {
    n as f64
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

impl Digest {
    /// An empty digest of one process of `spec`'s run.
    pub fn new(spec: &RunSpec) -> Self {
        Self {
            window: Window {
                from: spec.warmup.0,
                len: spec.measured.0,
            },
            process: spec.processes.index,
            bins: vec![Bin::default(); BINS],
            bounds: spec.session_bounds(),
            put: spec.cell.operation == Operation::Put,
            ..Self::default()
        }
    }

    /// The digest of `records` (one process of `spec`'s run).
    pub fn of(spec: &RunSpec, records: &[Record]) -> Self {
        let mut d = Self::new(spec);
        for r in records {
            d.add(r);
        }
        d
    }

    /// Successful measured requests.
    pub fn ok(&self) -> u64 {
        self.latency_ms.len()
    }

    /// Folds one record in.
    pub fn add(&mut self, r: &Record) {
        self.records += 1;
        let ok = r.outcome == Some(Outcome::Ok);
        if ok && r.stage_sum() > r.total {
            self.stage_sum_over.add(|| {
                format!(
                    "worker {} seq {} ({:.1} µs > {:.1} µs)",
                    r.worker,
                    r.seq,
                    us(r.stage_sum()),
                    us(r.total)
                )
            });
        }
        self.add_session(r, ok);
        match r.phase {
            Some(RequestPhase::Warmup) => self.warmup += 1,
            Some(RequestPhase::Measured) => {
                self.measured += 1;
                if ok {
                    self.add_ok(r);
                } else {
                    if r.outcome == Some(Outcome::NotStarted) {
                        self.not_started += 1;
                    }
                    *self
                        .failures
                        .entry(r.error_class.unwrap_or("unknown").to_owned())
                        .or_insert(0) += 1;
                }
            }
            None => {}
        }
    }

    fn add_ok(&mut self, r: &Record) {
        let total_ms = r.total.as_secs_f64() * 1e3;
        self.latency_ms.add(total_ms, MS_SCALE);
        self.queue_wait_ms
            .add(r.queue_wait.as_secs_f64() * 1e3, MS_SCALE);
        self.unaccounted_fraction
            .add(crate::summary::unaccounted_fraction(r), FRACTION_SCALE);
        for (sum, s) in self
            .stage_us_sums
            .iter_mut()
            .zip(crate::records::Stage::ALL)
        {
            *sum += us(r.stage(s));
        }
        let unacc = r.total.saturating_sub(r.stage_sum());
        self.unaccounted_us_sum += us(unacc);
        self.unaccounted_s_sum += unacc.as_secs_f64();
        self.total_s_sum += r.total.as_secs_f64();
        self.crypto_cpu_us_sum += us(r.crypto_cpu);
        self.manifest_bytes_sum += f(r.manifest_bytes);
        for (sum, v) in self.wire_sums.iter_mut().zip([
            f64::from(r.s3_requests),
            f(r.bytes_sent),
            f(r.bytes_received),
        ]) {
            *sum += v;
        }
        if let Some(i) = self.bin_of(r.offset) {
            self.bins[i].ok += 1;
            self.bins[i].latency_ms_sum += total_ms;
        }
    }

    fn add_session(&mut self, r: &Record, ok: bool) {
        let Some(b) = self.bounds else { return };
        let outside = r.session_index.is_some_and(|i| i >= b.max_objects)
            || r.session_age.is_some_and(|a| a > b.max_age);
        if outside {
            self.session_outside.add(|| {
                format!(
                    "worker {} seq {} (index {:?}, age {:?})",
                    r.worker, r.seq, r.session_index, r.session_age
                )
            });
        }
        if self.put && ok && r.session_index.is_none() {
            self.session_missing += 1;
        }
        if let (true, Some(id)) = (ok, r.session_id) {
            let t = self.sessions.entry((self.process, id)).or_default();
            t.objects += 1;
            t.max_index = t.max_index.max(r.session_index.unwrap_or(0));
            t.max_age = t.max_age.max(r.session_age.unwrap_or_default());
        }
    }

    /// The bin of a request starting at `offset` (after `startAt`), if in the window.
    fn bin_of(&self, offset: Duration) -> Option<usize> {
        let into = offset.checked_sub(self.window.from)?;
        if into >= self.window.len || self.window.len.is_zero() {
            return None;
        }
        let i = into.as_nanos() * BINS as u128 / self.window.len.as_nanos();
        usize::try_from(i).ok().filter(|&i| i < BINS)
    }

    /// The own time of each bin: its length, or with turns the run's slices within it.
    pub fn bin_own_time(&self, turns: Option<&Turns>) -> Vec<Duration> {
        let edge = |i: usize| {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            self.window.from + self.window.len * i / u32::try_from(BINS).unwrap_or(1)
        };
        (0..BINS)
            .map(|i| {
                let (a, b) = (edge(i), edge(i + 1));
                turns.map_or(b - a, |t| t.own_time(a, b))
            })
            .collect()
    }

    /// Folds another process's digest of the same run in.
    pub fn merge(&mut self, o: &Self) {
        self.warmup += o.warmup;
        self.measured += o.measured;
        for (k, v) in &o.failures {
            *self.failures.entry(k.clone()).or_insert(0) += v;
        }
        self.not_started += o.not_started;
        self.latency_ms.merge(&o.latency_ms);
        self.queue_wait_ms.merge(&o.queue_wait_ms);
        self.unaccounted_fraction.merge(&o.unaccounted_fraction);
        for (a, b) in self.stage_us_sums.iter_mut().zip(o.stage_us_sums) {
            *a += b;
        }
        self.unaccounted_us_sum += o.unaccounted_us_sum;
        self.crypto_cpu_us_sum += o.crypto_cpu_us_sum;
        self.total_s_sum += o.total_s_sum;
        self.unaccounted_s_sum += o.unaccounted_s_sum;
        self.manifest_bytes_sum += o.manifest_bytes_sum;
        for (a, b) in self.wire_sums.iter_mut().zip(o.wire_sums) {
            *a += b;
        }
        self.stage_sum_over.merge(&o.stage_sum_over);
        self.session_outside.merge(&o.session_outside);
        self.session_missing += o.session_missing;
        self.sessions
            .extend(o.sessions.iter().map(|(k, v)| (*k, *v)));
        if self.bins.len() < o.bins.len() {
            self.bins.resize(o.bins.len(), Bin::default());
        }
        for (a, b) in self.bins.iter_mut().zip(&o.bins) {
            a.ok += b.ok;
            a.latency_ms_sum += b.latency_ms_sum;
        }
        self.records += o.records;
        if self.window == Window::default() {
            self.window = o.window;
            self.bounds = o.bounds;
            self.put = o.put;
        }
    }

    /// The latency distribution's `q` quantile, ms.
    pub fn latency_quantile(&self, q: f64) -> f64 {
        self.latency_ms.quantile(q, MS_SCALE)
    }

    /// The largest latency, ms.
    pub fn latency_max(&self) -> f64 {
        self.latency_ms.max(MS_SCALE)
    }

    /// The queue wait's `q` quantile, ms.
    pub fn queue_wait_quantile(&self, q: f64) -> f64 {
        self.queue_wait_ms.quantile(q, MS_SCALE)
    }

    /// The largest queue wait, ms.
    pub fn queue_wait_max(&self) -> f64 {
        self.queue_wait_ms.max(MS_SCALE)
    }

    /// The unaccounted fraction's `q` quantile.
    pub fn unaccounted_quantile(&self, q: f64) -> f64 {
        self.unaccounted_fraction.quantile(q, FRACTION_SCALE)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn quantiles_interpolate_as_numpy_over_rounded_values() {
        let mut q = Quantiles::default();
        for v in [4.0, 1.0, 3.0, 2.0] {
            q.add(v, 1.0);
        }
        // numpy.percentile([1, 2, 3, 4], [50, 90]) = [2.5, 3.7]
        assert!((q.quantile(0.5, 1.0) - 2.5).abs() < 1e-12);
        assert!((q.quantile(0.9, 1.0) - 3.7).abs() < 1e-12);
        assert!((q.max(1.0) - 4.0).abs() < 1e-12);
        assert!((q.mean() - 2.5).abs() < 1e-12);
        let mut r = Quantiles::default();
        r.add(10.0, 1.0);
        q.merge(&r);
        // numpy.percentile([1, 2, 3, 4, 10], 99) = 9.76
        assert!((q.quantile(0.99, 1.0) - 9.76).abs() < 1e-12);
    }

    #[test]
    fn memory_grows_with_the_span_of_values_not_the_count() {
        let mut q = Quantiles::default();
        for i in 0..2_000_000u64 {
            // Latencies between 1 and 3 ms at sub-µs resolution.
            q.add(1.0 + f(i % 2_000_003) * 1e-6, MS_SCALE);
        }
        assert_eq!(q.len(), 2_000_000);
        assert!(q.distinct() <= 2_001, "{}", q.distinct());
    }
}
