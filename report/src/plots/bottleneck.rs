//! `bottlenecks.svg`: each cell's use of its ceilings (client CPU, server CPU, network,
//! disk) as horizontal bars against the dashed 100 % of the measured ceiling, the cell's
//! label in its header (study IV-A, V-B; `analysis::testbed`).

use analysis::Report;
use analysis::testbed::{CellBottleneck, Resource, Usage};

use super::{Bar, BarChart, Group, Limit, Plot, bar_chart, fmt_num};

/// A fixed colour per resource (Okabe–Ito).
fn colour(r: Resource) -> &'static str {
    match r {
        Resource::Client => "#0072B2",
        Resource::Server => "#E69F00",
        Resource::Network => "#009E73",
        Resource::Disk => "#CC79A7",
    }
}

fn label(r: Resource) -> &'static str {
    match r {
        Resource::Client => "client CPU",
        Resource::Server => "server CPU",
        Resource::Network => "network",
        Resource::Disk => "disk",
    }
}

fn bar(cell: &CellBottleneck, u: &Usage) -> Bar {
    let pct = |x: f64| fmt_num(x * 100.0);
    let interval = u.ci.map_or_else(String::new, |(lo, hi)| {
        format!(" [{}–{}]", pct(lo), pct(hi))
    });
    Bar {
        label: label(u.resource).to_owned(),
        value: (u.mean * 100.0).max(0.0),
        colour: colour(u.resource),
        note: format!(
            "{} %{interval}{}",
            pct(u.mean),
            if u.reached { " · reached" } else { "" }
        ),
        tip: format!(
            "{} · {}: {} % of its ceiling{interval} over {} runs{}",
            cell.cell,
            label(u.resource),
            pct(u.mean),
            u.runs,
            if u.reached { ", reached" } else { "" }
        ),
    }
}

/// `None` when the report judged no cell.
pub(crate) fn bottlenecks(report: &Report) -> Option<Plot> {
    let groups: Vec<Group> = report
        .bottlenecks
        .iter()
        .filter(|c| !c.usage.is_empty())
        .map(|c| Group {
            header: format!("{}: {}-bound", c.cell, c.label_word()),
            bars: c.usage.iter().map(|u| bar(c, u)).collect(),
        })
        .collect();
    if groups.is_empty() {
        return None;
    }
    Some(bar_chart(BarChart {
        file: "bottlenecks.svg",
        title: "Ceilings and bottlenecks".to_owned(),
        subtitle: "each cell's use of each measured ceiling, mean over its runs [95 % CI]; reached at 90 % (network, disk) or 95 % (CPUs)".to_owned(),
        axis: "share of the ceiling (%)",
        groups,
        limit: Some(Limit {
            at: 100.0,
            label: "the ceiling".to_owned(),
        }),
    }))
}
