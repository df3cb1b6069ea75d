//! `inventory.svg` (`pqbench inventory`, `docs/src/envelope/migration.md`): each
//! protection class's share of a bucket's versions and of its stored bytes, as horizontal
//! bars, classical first.

use super::{Bar, BarChart, Group, Plot, bar_chart, fmt_num};

/// A fixed colour per class (Okabe–Ito): the ones a migration moves in warm colours.
fn colour(class: &str) -> &'static str {
    match class {
        "classical" => "#D55E00",
        "mixed" => "#E69F00",
        "post-quantum" => "#009E73",
        "symmetric" => "#0072B2",
        "plaintext" => "#999999",
        _ => "#CC79A7",
    }
}

/// One class's row: its name, versions, latest versions and stored bytes.
pub type ClassCount = (String, u64, u64, u64);

/// `n` as a float, for a share or a size in MiB on a plot (exact below 2^53).
#[allow(
    clippy::cast_precision_loss,
    reason = "a share or a MiB figure on a plot"
)]
fn float(n: u64) -> f64 {
    n as f64
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * float(part) / float(whole)
    }
}

/// The plot of `rows` for the bucket and prefix named by `scope`; classes without a
/// version are left out.
pub fn classes(scope: &str, rows: &[ClassCount]) -> Plot {
    let present: Vec<&ClassCount> = rows.iter().filter(|r| r.1 > 0).collect();
    let versions: u64 = present.iter().map(|r| r.1).sum();
    let stored: u64 = present.iter().map(|r| r.3).sum();
    let versions_bars = present
        .iter()
        .map(|(class, n, latest, _)| Bar {
            label: class.clone(),
            value: share(*n, versions),
            colour: colour(class),
            note: format!("{n} ({latest} latest)"),
            tip: format!(
                "{class}: {n} of {versions} versions ({} %), {latest} of them latest",
                fmt_num(share(*n, versions))
            ),
        })
        .collect();
    let bytes_bars = present
        .iter()
        .map(|(class, _, _, b)| Bar {
            label: class.clone(),
            value: share(*b, stored),
            colour: colour(class),
            note: format!("{} MiB", fmt_num(float(*b) / 1_048_576.0)),
            tip: format!(
                "{class}: {b} of {stored} stored bytes ({} %)",
                fmt_num(share(*b, stored))
            ),
        })
        .collect();
    bar_chart(BarChart {
        file: "inventory.svg",
        title: format!("What is classical in {scope}"),
        subtitle: "each class's share of the committed versions and of their stored bytes; classical and mixed are what a migration moves".to_owned(),
        axis: "share (%)",
        groups: vec![
            Group {
                header: format!("versions ({versions})"),
                bars: versions_bars,
            },
            Group {
                header: format!("stored bytes ({} MiB)", fmt_num(float(stored) / 1_048_576.0)),
                bars: bytes_bars,
            },
        ],
        limit: None,
    })
}
