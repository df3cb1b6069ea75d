//! Where a cell sits: the stall rule, the saturation criterion, the CPU accounting
//! identity's equal-cores reading and the open-loop knee (study sections IV-C, V-B and
//! V-C). The identity with all its terms is in [`crate::identity`]; the knee an M/M/c
//! queue predicts is in [`crate::queueing`].

use serde::{Deserialize, Serialize};

use crate::median;

/// The stall rule's factors (pre-registered: 0.8 and 0.9).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StallRule {
    /// A stall has server CPU below this times the cell median.
    pub server_cpu_factor: f64,
    /// … and throughput below this times the cell median.
    pub throughput_factor: f64,
}

impl Default for StallRule {
    fn default() -> Self {
        Self {
            server_cpu_factor: 0.8,
            throughput_factor: 0.9,
        }
    }
}

/// One closed-loop run as the stall rule sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunLoad {
    /// Successful requests per second.
    pub throughput: f64,
    /// Server CPU in cores over the window, if it was measured.
    pub server_cpu: Option<f64>,
}

/// Flags the stalls among the closed-loop runs of one cell (every mode; the rule is blind
/// to the mode): a run is a stall if its server CPU is below `server_cpu_factor` × the
/// cell's median server CPU *and* its throughput below `throughput_factor` × the cell's
/// median throughput. A run without a server-CPU figure is never a stall (the rule cannot
/// be applied to it), and neither is any run of a cell without server-CPU figures.
pub fn stalls(runs: &[RunLoad], rule: StallRule) -> Vec<bool> {
    let cpus: Vec<f64> = runs.iter().filter_map(|r| r.server_cpu).collect();
    let tps: Vec<f64> = runs.iter().map(|r| r.throughput).collect();
    let (Some(mc), Some(mt)) = (median(&cpus), median(&tps)) else {
        return vec![false; runs.len()];
    };
    runs.iter()
        .map(|r| {
            r.server_cpu
                .is_some_and(|c| c < rule.server_cpu_factor * mc)
                && r.throughput < rule.throughput_factor * mt
        })
        .collect()
}

/// The saturation criterion's threshold (pre-registered for the native reader: 0.95).
pub const SATURATION: f64 = 0.95;

/// Whether one mode's runs saturate the client: mean cores used ≥ 0.95 × mean cores
/// available. A cell is saturated when this holds in every mode ([`cell_saturated`]).
pub fn mode_saturated(cores_used: &[f64], cores_available: &[f64]) -> bool {
    let (Some(u), Some(a)) = (mean(cores_used), mean(cores_available)) else {
        return false;
    };
    a > 0.0 && u >= SATURATION * a
}

/// Whether every mode of a cell is saturated (`per_mode` = (cores used, cores available)
/// of each mode's runs). False for an empty cell.
pub fn cell_saturated(per_mode: &[(Vec<f64>, Vec<f64>)]) -> bool {
    !per_mode.is_empty() && per_mode.iter().all(|(u, a)| mode_saturated(u, a))
}

fn mean(v: &[f64]) -> Option<f64> {
    #[allow(clippy::cast_precision_loss, reason = "run counts are small")]
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The CPU accounting identity (section IV-C): under client saturation the throughput
/// ratio of two modes is the inverse of their client-CPU-per-request ratio. Given that
/// ratio (`exp` of the mean paired log ratio of CPU per request), the implied throughput
/// ratio. [`crate::identity::identity`] gives this term with its intervals, together with
/// the cores used and how well the two account for the observed ratio.
pub fn implied_ratio(cpu_ratio: f64) -> f64 {
    1.0 / cpu_ratio
}

/// One open-loop run level: offered rate and mean response time (queue wait + service).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpenPoint {
    /// Offered requests per second.
    pub rate: f64,
    /// Mean response time, any unit (the same for all points).
    pub mean_response: f64,
}

/// The knee of an open-loop series.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The offered rate at which the mean response time reaches twice the light-load
    /// response time, interpolated linearly (in rate and response) between `lower_rate` and
    /// `upper_rate`.
    pub rate: f64,
    /// The last offered rate below the doubling (the rate before `upper_rate`).
    pub lower_rate: f64,
    /// The first offered rate whose mean response time is at least twice the light-load
    /// one: an upper bound of the knee.
    pub upper_rate: f64,
    /// Mean response time at the lowest offered rate (the light-load reference).
    pub light_load_response: f64,
    /// `rate` (the interpolated one) as a fraction of the closed-loop peak throughput, if
    /// one is known.
    pub fraction_of_peak: Option<f64>,
}

/// The knee (section V-B, "the mean response time doubles"; the definition is one of the
/// study's exploratory choices, section IV-C): among `points` (one per offered rate, any
/// order; points with a non-finite rate or response are ignored), the light-load response
/// time `R₀` is the mean response time at the lowest rate; the first rate whose mean
/// response time is at least `2·R₀` is `upper_rate`, the rate before it `lower_rate`, and
/// the knee the rate where the straight line through those two points reaches `2·R₀`:
///
/// `rate = r_lo + (2·R₀ − R_lo) · (r_hi − r_lo) / (R_hi − R_lo)`.
///
/// `None` if the series never doubles (the knee lies beyond the rates tried), has fewer
/// than two rates or a non-positive light-load response.
pub fn knee(points: &[OpenPoint], closed_loop_peak: Option<f64>) -> Option<Knee> {
    let mut p: Vec<OpenPoint> = points
        .iter()
        .filter(|x| x.rate.is_finite() && x.mean_response.is_finite())
        .copied()
        .collect();
    p.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let light = p.first()?.mean_response;
    if p.len() < 2 || light <= 0.0 {
        return None;
    }
    let target = 2.0 * light;
    // Every point before the first doubling is below it, so `lo` is the last one below.
    let i = 1 + p[1..].iter().position(|x| x.mean_response >= target)?;
    let (lo, hi) = (p[i - 1], p[i]);
    // R_hi ≥ 2·R₀ > R_lo, so the denominator is positive.
    let rate = lo.rate
        + (target - lo.mean_response) * (hi.rate - lo.rate) / (hi.mean_response - lo.mean_response);
    Some(Knee {
        rate,
        lower_rate: lo.rate,
        upper_rate: hi.rate,
        light_load_response: light,
        fraction_of_peak: closed_loop_peak
            .filter(|&peak| peak > 0.0)
            .map(|peak| rate / peak),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_needs_both_conditions() {
        let r = |t, c| RunLoad {
            throughput: t,
            server_cpu: Some(c),
        };
        let runs = [
            r(100.0, 2.0),
            r(101.0, 2.1),
            r(99.0, 1.9),
            r(80.0, 1.5),  // both low: stall
            r(80.0, 2.0),  // throughput low only
            r(100.0, 1.0), // CPU low only
        ];
        assert_eq!(
            stalls(&runs, StallRule::default()),
            [false, false, false, true, false, false]
        );
        let unknown = [RunLoad {
            throughput: 1.0,
            server_cpu: None,
        }];
        assert_eq!(stalls(&unknown, StallRule::default()), [false]);
    }

    #[test]
    fn saturation_in_every_mode() {
        assert!(mode_saturated(&[1.9, 1.95], &[2.0, 2.0]));
        assert!(!mode_saturated(&[1.8], &[2.0]));
        assert!(cell_saturated(&[
            (vec![1.9], vec![2.0]),
            (vec![1.91], vec![2.0])
        ]));
        assert!(!cell_saturated(&[
            (vec![1.9], vec![2.0]),
            (vec![1.0], vec![2.0])
        ]));
        assert!(!cell_saturated(&[]));
    }

    #[test]
    fn knee_is_interpolated_at_the_doubling() {
        let pt = |(rate, mean_response)| OpenPoint {
            rate,
            mean_response,
        };
        let pts = [(400.0, 3.0), (100.0, 1.0), (200.0, 1.2), (300.0, 2.4)].map(pt);
        // 2·R₀ = 2.0 lies between (200, 1.2) and (300, 2.4): 200 + 0.8 · 100 / 1.2.
        let k = knee(&pts, Some(500.0)).expect("knee");
        let want = 200.0 + 0.8 * 100.0 / 1.2;
        assert!((k.rate - want).abs() < 1e-12, "{k:?}");
        assert_eq!((k.lower_rate, k.upper_rate), (200.0, 300.0));
        assert_eq!(k.light_load_response, 1.0);
        assert!((k.fraction_of_peak.expect("fraction") - want / 500.0).abs() < 1e-15);
        // Exactly doubled at an offered rate: the knee is that rate.
        let exact = [(100.0, 1.0), (200.0, 1.2), (300.0, 2.0)].map(pt);
        let k = knee(&exact, None).expect("knee");
        assert_eq!(
            (k.rate, k.upper_rate, k.fraction_of_peak),
            (300.0, 300.0, None)
        );
        // Doubled at the second rate: interpolated from the light-load point itself.
        let k = knee(&[(100.0, 1.0), (200.0, 3.0)].map(pt), None).expect("knee");
        assert_eq!((k.rate, k.lower_rate), (150.0, 100.0));
        // A NaN point is ignored.
        let with_nan = [(100.0, 1.0), (150.0, f64::NAN), (200.0, 3.0)].map(pt);
        assert_eq!(knee(&with_nan, None).expect("knee").rate, 150.0);
        assert_eq!(knee(&pts[1..3], None), None);
        assert_eq!(knee(&pts[..1], None), None);
    }
}
