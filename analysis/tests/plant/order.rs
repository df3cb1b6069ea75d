//! Synthetic campaigns with planted order, time and carry-over effects (study section VI).

use analysis::order::{Factor, OrderCheck, Term};
use analysis::{Config, Report, RunRow};
use campaign::spec::Operation;
/// The campaign's first window opens here.
pub const T0: f64 = 1.7e9;

pub const MODES: [(&str, f64); 3] = [("ml-kem-768", 0.95), ("x-wing", 0.97), ("x25519", 1.0)];

/// The six orders of three arms, as positions of `MODES[0..3]`.
pub const ORDERS: [[u32; 3]; 6] = [
    [0, 1, 2],
    [2, 0, 1],
    [1, 2, 0],
    [0, 2, 1],
    [1, 0, 2],
    [2, 1, 0],
];

/// Deterministic noise in [−1, 1], uncorrelated with position and time.
pub fn noise(i: u32) -> f64 {
    let h = i.wrapping_mul(2_654_435_761).rotate_left(13) ^ 0x5bd1_e995;
    f64::from(h % 2001) / 1000.0 - 1.0
}

pub fn cfg(primary: &[&str]) -> Config {
    Config {
        baseline: "x25519".into(),
        control: None,
        analysis: campaign::spec::Analysis {
            primary: primary
                .iter()
                .map(|s| campaign::spec::PrimarySpec::cell(s))
                .collect(),
            bootstrap_resamples: 200,
            ..campaign::spec::Analysis::default()
        },
        seed: 1,
        arms: Vec::new(),
        comparisons: Vec::new(),
        arm_details: Vec::new(),
        analysis_time_settings: Vec::new(),
        baselines: None,
        implementations: None,
    }
}

/// What a synthetic campaign plants.
pub struct Plant {
    /// Throughput factor per position step: `1 + position_step·position`.
    pub position_step: f64,
    /// `exp(time_rate·hours)`.
    pub time_rate: f64,
    /// Factor after a PUT.
    pub after_put: f64,
    /// Relative noise amplitude.
    pub noise: f64,
    /// Hours each run takes (by its index in campaign order).
    pub duration_h: fn(u32) -> f64,
}

/// Blocks run in the order of `cells` (one cell per block), the arms of a block in one of
/// [`ORDERS`]; each run's throughput is the cell's base × the arm's factor × the planted
/// effects × noise.
pub fn campaign(cells: &[(&str, Operation)], plant: &Plant) -> Vec<RunRow> {
    let mut rows = Vec::new();
    let (mut t, mut i, mut previous_put) = (T0, 0u32, false);
    for (block, &(cell, op)) in (0u32..).zip(cells) {
        let order = ORDERS[usize::try_from((block * 5 + block / 3) % 6).unwrap()];
        let mut runs: Vec<(u32, usize)> = order.iter().copied().zip(0..).collect();
        runs.sort_unstable();
        for (position, arm) in runs {
            let (mode, factor) = MODES[arm];
            let hours = (t - T0) / 3600.0;
            let base = if op == Operation::Put { 800.0 } else { 2000.0 };
            let tp = base
                * factor
                * (1.0 + plant.position_step * f64::from(position))
                * (plant.time_rate * hours).exp()
                * if previous_put { plant.after_put } else { 1.0 }
                * (1.0 + plant.noise * noise(i));
            rows.push(RunRow {
                run_id: format!("r{i}-{cell}-{mode}"),
                cell: cell.into(),
                mode: mode.into(),
                block,
                throughput_rps: tp,
                cpu_per_request_us: 100.0,
                client_cores_used: 1.0,
                client_cores_available: 2.0,
                server_cpu_cores: Some(1.0),
                operation: Some(op),
                position: Some(position),
                started_unix_s: Some(t),
                ..RunRow::default()
            });
            t += (plant.duration_h)(i) * 3600.0;
            i += 1;
            previous_put = op == Operation::Put;
        }
    }
    rows
}

pub fn check<'a>(r: &'a Report, cell: &str) -> &'a OrderCheck {
    r.order
        .iter()
        .find(|c| c.cell == cell)
        .unwrap_or_else(|| panic!("no order check for {cell}: {:?}", r.order))
}

pub fn term(c: &OrderCheck, f: Factor) -> &Term {
    c.terms
        .iter()
        .find(|t| t.factor == f)
        .unwrap_or_else(|| panic!("{}: no {f:?} term: {c:?}", c.cell))
}

/// Two interleaved cells (PUT and GET), three arms, eight blocks each; runs last 0.2 to
/// 2 hours so that elapsed time varies within blocks apart from position.
pub fn planted() -> Vec<RunRow> {
    let put = ("put-1KiB", Operation::Put);
    let get = ("get-1KiB", Operation::Get);
    let cells = [
        put, get, get, put, put, get, put, get, get, put, get, put, put, get, get, put,
    ];
    campaign(
        &cells,
        &Plant {
            position_step: -0.01,
            time_rate: -0.02,
            after_put: 0.98,
            noise: 0.002,
            duration_h: |i| 0.2 + 0.18 * f64::from((i * 37) % 11),
        },
    )
}

/// One GET cell whose runs take a minute, give or take seconds: elapsed time is almost the
/// block's start plus a minute per position (its VIF in the thousands), and a planted
/// drift of −2 % per minute is then carried by the block and position terms. Its
/// throughput still moves with the seconds of jitter, so the time term can come out
/// significant: not a thing the design can tell apart.
pub fn collinear() -> Vec<RunRow> {
    let cells = [("get-256KiB", Operation::Get); 8];
    campaign(
        &cells,
        &Plant {
            position_step: 0.0,
            time_rate: -1.2,
            after_put: 1.0,
            noise: 0.002,
            duration_h: |i| (60.0 + 0.5 * f64::from((i * 37) % 11)) / 3600.0,
        },
    )
}

/// One GET cell, no order effect, every run 6 minutes: within a block elapsed time is the
/// block's start plus 0.1 h per position, so it cannot be told from position.
pub fn evenly_spaced() -> Vec<RunRow> {
    let cells = [("get-1MiB", Operation::Get); 8];
    campaign(
        &cells,
        &Plant {
            position_step: 0.0,
            time_rate: 0.0,
            after_put: 1.0,
            noise: 0.004,
            duration_h: |_| 0.1,
        },
    )
}
