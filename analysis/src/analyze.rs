//! From run rows to the report (study sections IV-C and V; the definitions are those of
//! the [`stats`] crate, which cites them).
//!
//! Input: one [`RunRow`] per valid run (from a results directory or a CSV with the
//! columns `run_id,cell,mode,block,throughput_rps,cpu_per_request_us,client_cores_used,
//! client_cores_available,server_cpu_cores`, plus optional columns for the storage and
//! knee tables). Output: a [`Report`] with one [`Entry`] per (cell, mode vs baseline).
//!
//! - The comparisons are the campaign's declared ones (`analysis.comparisons`, by arm
//!   label), made in every cell holding both arms; without a declaration, every arm against
//!   the baseline.
//! - Pairs are the **complete** blocks of a cell: those holding a valid run of every arm of
//!   the cell. A block with an arm missing (its run invalid after every attempt, or given
//!   up) leaves the analysis for every arm of that cell, so that every comparison of a cell
//!   rests on the same blocks; the report says which blocks were dropped.
//! - The primary family is named in `analysis.primary` (a cell's every comparison, or one
//!   comparison of it; the A/A control never); its TOST p-values are Holm-adjusted and its
//!   verdicts use the adjusted p. Every other comparison is exploratory: its verdict uses
//!   the unadjusted p. Its difference test (does the 95 % interval exclude 1) is
//!   Benjamini–Hochberg-adjusted together with every second endpoint ([`crate::endpoints`]),
//!   as the study does for its exploratory tables.
//! - The CPU identity with intervals, second endpoints (latency, CPU, memory, stage
//!   times) and the manifest-size control's share of a deficit: [`crate::endpoints`],
//!   [`Attribution`]. Every departure from the plan: [`crate::deviations`].
//! - Order and time: per compared cell, log throughput regressed on arm, block, position
//!   in the block, whether the run before was a PUT and elapsed time, with the adjusted
//!   ratios beside the paired ones ([`crate::order`]); a significant position or time
//!   term adds a warning and a deviation.
//! - Attempts: with the attempts of each run given, the report counts attempts and invalid
//!   attempts per arm, and flags each compared pair of arms whose invalid rates differ by
//!   Fisher's exact test at α = 0.05 (a mode-dependent exclusion biases the comparison).
//! - Sensitivity verdicts at the other margins use unadjusted p-values.
//! - Stalls (closed loop only) are flagged per cell and every verdict is recomputed with
//!   stalled blocks excluded (the primary family re-adjusted) as a sensitivity analysis.
//! - A comparison whose 90 % interval is wider than the margin band `[1−δ, 1+δ]` is
//!   `underpowered`, with the repetitions the power calculation asks for at its own
//!   paired sd (at α / primary family size for primary comparisons).

use std::collections::{BTreeMap, BTreeSet};

use stats::paired::{Comparison, Flags, Settings, log_ratios, verdict};
use stats::regime::{OpenPoint, RunLoad, cell_saturated, implied_ratio, knee, stalls};
use stats::{Paired, Verdict};

use campaign::spec::{ComparisonSpec, ControlSpec, Correction, Operation};

use crate::entry::{Entry, Family, WithoutStalls};
use crate::model::{
    ArmAttempts, ArmSummary, Attribution, Config, INVALID_RATE_ALPHA, InvalidRate, KneeRow, Report,
    StorageRow,
};
use crate::rows::{RunAttempts, RunRow};
use crate::{Error, Result};

#[allow(clippy::cast_precision_loss, reason = "counts are small")]
fn mean(v: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (s, n) = v
        .into_iter()
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

fn margin_key(m: f64) -> String {
    format!("{m}")
}

/// Analyses run rows (attempts unknown).
pub fn analyze(rows: &[RunRow], cfg: &Config) -> Result<Report> {
    analyze_with(rows, &[], cfg)
}

/// Analyses run rows, with the attempts of every planned run for the attempts table and
/// the invalid-rate test.
pub fn analyze_with(rows: &[RunRow], attempts: &[RunAttempts], cfg: &Config) -> Result<Report> {
    analyze_full(rows, attempts, &[], cfg)
}

/// Analyses run rows, with the attempts of every planned run and the runs left invalid
/// after their last attempt (run id, failed checks) for the deviations log.
pub fn analyze_full(
    rows: &[RunRow],
    attempts: &[RunAttempts],
    excluded: &[(String, String)],
    cfg: &Config,
) -> Result<Report> {
    let (cells, mut by_cell) = index(rows)?;
    let mut warnings = data_warnings(rows, &by_cell, cfg);
    let dropped_blocks = drop_incomplete_blocks(&mut by_cell, &cfg.arms);
    warnings.extend(dropped_warning(&dropped_blocks));
    let stalled = stalled_runs(&by_cell, &cells, cfg);
    if rows
        .iter()
        .any(|r| r.interleaved && r.offered_rps.is_none())
    {
        warnings.push("the stall rule does not judge interleaved runs: the server CPU over an interleaved run's window is its whole block's, not the run's own".into());
    }
    let comparisons: Vec<ComparisonSpec> = if cfg.comparisons.is_empty() {
        every_arm_against(rows, &cfg.baseline)
    } else {
        cfg.comparisons.clone()
    };
    let mut secondary = Vec::new();
    let mut raw = Vec::new();
    for cell in &cells {
        let compared = compare_cell(cell, &by_cell[cell.as_str()], &comparisons, &stalled, cfg)?;
        warnings.extend(compared.warnings);
        for (r, s) in compared.raw {
            raw.push(r);
            secondary.push(s);
        }
    }
    // Benjamini–Hochberg over the difference tests of every second endpoint, throughput
    // of the non-primary comparisons among them (study Table XX).
    crate::endpoints::adjust(&mut secondary);
    let adjusted = Adjusted::of(&raw, &cfg.analysis);
    let entries = raw
        .iter()
        .zip(&secondary)
        .enumerate()
        .map(|(i, (r, s))| entry(r, s, &adjusted, i, &cfg.analysis))
        .collect::<Result<Vec<Entry>>>()?;

    let per_arm = arm_attempts(attempts);
    let stalls: Vec<String> = stalled.into_iter().map(str::to_owned).collect();
    let order = order_checks(rows, &by_cell, &cells, &entries);
    warnings.extend(crate::order::warnings(&order));
    let mut deviations = crate::deviations::log(crate::deviations::Inputs {
        settings: &cfg.analysis_time_settings,
        attempts,
        excluded,
        dropped_blocks: &dropped_blocks,
        stalls: &stalls,
        rows,
    });
    deviations.extend(crate::order::deviations(&order));
    let arm_modes = arm_modes(cfg, rows);
    let wire = crate::wire::wire_rows(rows, &arm_modes);
    let kem_times = crate::absolute::kem_times(rows, &arm_modes);
    let cpu_splits = cpu_splits(&by_cell, &entries, &kem_times);
    let mut report = Report {
        config: cfg.clone(),
        runs: rows.len(),
        primary_family_size: adjusted.primary.len(),
        stalls,
        arms: arm_summaries(rows, &cells),
        storage: storage(rows, &cfg.baseline, &arm_modes),
        knees: knees(rows),
        invalid_rates: invalid_rates(&per_arm, &comparisons)?,
        attempts: per_arm,
        attributions: attributions(&by_cell, &cells, &arm_modes, cfg)?,
        secondary,
        deviations,
        order,
        drift: crate::longrun::drift_rows(rows),
        sessions: crate::longrun::session_rows(rows, &entries),
        format_ratios: crate::wire::format_ratios(&wire, &comparisons),
        wire,
        kem_times,
        cpu_splits,
        kem_pooled: crate::absolute::kem_pooled(rows, &arm_modes),
        predictions: crate::predict::score(&cfg.analysis.predictions, &entries),
        resources: crate::absolute::resources(rows),
        bottlenecks: crate::testbed::bottlenecks(rows, cfg.baselines.as_ref()),
        comparisons: entries,
        dropped_blocks,
        warnings,
        study: Vec::new(),
    };
    report.study = crate::study::compare(&report);
    Ok(report)
}

/// The split of the extra CPU of every client-saturated comparison ([`crate::absolute`]).
fn cpu_splits(
    by_cell: &Blocks<'_>,
    entries: &[Entry],
    kem_times: &[crate::absolute::KemTime],
) -> Vec<crate::absolute::CpuSplit> {
    entries
        .iter()
        .filter(|e| e.saturated)
        .filter_map(|e| {
            let blocks = by_cell.get(e.cell.as_str())?;
            let pairs: Vec<(&RunRow, &RunRow)> = blocks
                .values()
                .filter_map(|b| Some((*b.get(e.mode.as_str())?, *b.get(e.baseline.as_str())?)))
                .collect();
            crate::absolute::cpu_split((&e.cell, &e.mode, &e.baseline), &pairs, kem_times)
        })
        .collect()
}

/// The rows indexed cell → block → arm, cells in first-seen order. A run id seen twice,
/// or an arm twice in one block of a cell, is a data error.
fn index(rows: &[RunRow]) -> Result<(Vec<String>, Blocks<'_>)> {
    let mut cells: Vec<String> = Vec::new();
    let mut by_cell: Blocks<'_> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for r in rows {
        if !ids.insert(r.run_id.as_str()) {
            return Err(Error::Data(format!("run {} appears twice", r.run_id)));
        }
        if !cells.contains(&r.cell) {
            cells.push(r.cell.clone());
        }
        let slot = by_cell
            .entry(&r.cell)
            .or_default()
            .entry(r.block)
            .or_default();
        if let Some(prev) = slot.insert(&r.mode, r) {
            return Err(Error::Data(format!(
                "cell {} block {} holds mode {} twice (runs {} and {}); a block holds each mode once",
                r.cell, r.block, r.mode, prev.run_id, r.run_id
            )));
        }
    }
    Ok((cells, by_cell))
}

/// What the data lacks before anything is compared: the baseline, a primary cell.
fn data_warnings(rows: &[RunRow], by_cell: &Blocks<'_>, cfg: &Config) -> Vec<String> {
    let mut warnings = Vec::new();
    if !rows.iter().any(|r| r.mode == cfg.baseline) {
        let modes: BTreeSet<&str> = rows.iter().map(|r| r.mode.as_str()).collect();
        warnings.push(format!(
            "no valid run of the baseline {:?} (the data holds {}); nothing can be compared",
            cfg.baseline,
            if modes.is_empty() {
                "no valid runs".to_owned()
            } else {
                modes.into_iter().collect::<Vec<_>>().join(", ")
            }
        ));
    }
    for p in &cfg.analysis.primary {
        if !by_cell.contains_key(p.cell.as_str()) {
            warnings.push(format!("primary cell {} has no valid runs", p.cell));
        }
    }
    warnings
}

fn dropped_warning(dropped: &[(String, u32)]) -> Option<String> {
    (!dropped.is_empty()).then(|| {
        format!(
            "{} block(s) left out because an arm of their cell has no valid run in them: {}",
            dropped.len(),
            dropped
                .iter()
                .map(|(c, b)| format!("{c} block {b}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The run ids the stall rule flags: closed-loop runs only (`offered_rps` absent), per
/// cell, blind to the arm.
fn stalled_runs<'a>(by_cell: &Blocks<'a>, cells: &[String], cfg: &Config) -> BTreeSet<&'a str> {
    let mut stalled = BTreeSet::new();
    for cell in cells {
        let runs: Vec<&RunRow> = by_cell[cell.as_str()]
            .values()
            .flat_map(|b| b.values().copied())
            .filter(|r| r.offered_rps.is_none())
            .collect();
        let loads: Vec<RunLoad> = runs
            .iter()
            .map(|r| RunLoad {
                throughput: r.throughput_rps,
                // An interleaved run's window holds every arm's turns, so its server CPU
                // is the block's: the rule, which needs the run's own, does not apply.
                server_cpu: r.server_cpu_cores.filter(|_| !r.interleaved),
            })
            .collect();
        for (r, s) in runs
            .iter()
            .zip(stalls(&loads, cfg.analysis.stall_rule.into()))
        {
            if s {
                stalled.insert(r.run_id.as_str());
            }
        }
    }
    stalled
}

/// One comparison before multiplicity: what [`entry`] needs beyond the adjusted p-values.
struct Raw<'a> {
    cell: &'a str,
    mode: &'a str,
    baseline: &'a str,
    family: Family,
    cmp: Comparison,
    cpu_ratio: Option<f64>,
    saturated: bool,
    d_no_stall: Vec<f64>,
}

/// A cell's comparisons with their second endpoints, and what could not be compared.
struct Compared<'a> {
    raw: Vec<(Raw<'a>, crate::endpoints::Secondary)>,
    warnings: Vec<String>,
}

/// Every comparison of `comparisons` whose two arms the cell's complete blocks hold.
fn compare_cell<'a>(
    cell: &'a str,
    blocks: &BTreeMap<u32, BTreeMap<&'a str, &'a RunRow>>,
    comparisons: &'a [ComparisonSpec],
    stalled: &BTreeSet<&str>,
    cfg: &'a Config,
) -> Result<Compared<'a>> {
    let mut out = Compared {
        raw: Vec::new(),
        warnings: Vec::new(),
    };
    let mut arms: Vec<&str> = blocks.values().flat_map(|b| b.keys().copied()).collect();
    arms.sort_unstable();
    arms.dedup();
    let per_arm: Vec<(Vec<f64>, Vec<f64>)> = arms
        .iter()
        .map(|m| {
            let rs = blocks.values().filter_map(|b| b.get(m));
            rs.map(|r| (r.client_cores_used, r.client_cores_available))
                .unzip()
        })
        .collect();
    let saturated = cell_saturated(&per_arm);
    if cfg.comparisons.is_empty() && !arms.contains(&cfg.baseline.as_str()) {
        out.warnings.push(format!(
            "cell {cell} has no baseline run; its modes are not compared"
        ));
        return Ok(out);
    }
    for c in comparisons {
        let (m, base) = (c.arm.as_str(), c.against.as_str());
        if !arms.contains(&m) || !arms.contains(&base) {
            if !cfg.comparisons.is_empty() {
                out.warnings.push(format!(
                    "cell {cell}, {m} vs {base}: no complete block holds both arms; not compared"
                ));
            }
            continue;
        }
        let pairs: Vec<(&RunRow, &RunRow)> = blocks
            .values()
            .filter_map(|b| Some((*b.get(m)?, *b.get(base)?)))
            .collect();
        if pairs.len() < 2 {
            out.warnings.push(format!(
                "cell {cell}, {m} vs {base}: {} pair(s); a comparison needs at least 2",
                pairs.len()
            ));
            continue;
        }
        out.raw.push(compare_pair(
            (cell, m, base),
            &pairs,
            saturated,
            stalled,
            cfg,
        )?);
    }
    Ok(out)
}

/// One comparison over its pairs (arm run, against run): the paired throughput ratio, the
/// CPU ratio, the pairs left without stalls, the family, and the second endpoints.
fn compare_pair<'a>(
    (cell, m, base): (&'a str, &'a str, &'a str),
    pairs: &[(&RunRow, &RunRow)],
    saturated: bool,
    stalled: &BTreeSet<&str>,
    cfg: &Config,
) -> Result<(Raw<'a>, crate::endpoints::Secondary)> {
    let a = &cfg.analysis;
    let settings = Settings {
        margin: a.margin,
        sensitivity_margins: a.sensitivity_margins.clone(),
        deficit_threshold: a.deficit_threshold,
        bootstrap_resamples: a.bootstrap_resamples,
        seed: cfg.seed,
    };
    let tp: Vec<(f64, f64)> = pairs
        .iter()
        .map(|(x, b)| (x.throughput_rps, b.throughput_rps))
        .collect();
    let d = log_ratios(&tp)?;
    let cmp = Comparison::compute(&d, &settings)?;
    let cpu: Vec<(f64, f64)> = pairs
        .iter()
        .map(|(x, b)| (x.cpu_per_request_us, b.cpu_per_request_us))
        .collect();
    let cpu_ratio = log_ratios(&cpu)
        .ok()
        .and_then(|d| Paired::from_log_ratios(&d).ok())
        .map(|p| p.ratio());
    let d_no_stall: Vec<f64> = pairs
        .iter()
        .zip(&d)
        .filter(|((x, b), _)| {
            !stalled.contains(x.run_id.as_str()) && !stalled.contains(b.run_id.as_str())
        })
        .map(|(_, v)| *v)
        .collect();
    let family = if cfg.control.as_deref() == Some(m) {
        Family::Control
    } else if a.primary.iter().any(|p| p.selects(cell, m, base)) {
        Family::Primary
    } else {
        Family::Exploratory
    };
    let secondary = crate::endpoints::secondary(
        (cell, m, base),
        pairs,
        (family != Family::Primary).then_some(d.as_slice()),
        a.margin,
        a.deficit_threshold,
    )?;
    let raw = Raw {
        cell,
        mode: m,
        baseline: base,
        family,
        cmp,
        cpu_ratio,
        saturated,
        d_no_stall,
    };
    Ok((raw, secondary))
}

/// The TOST p-values after the primary family's correction, with and without stalled
/// blocks (the family re-adjusted over the comparisons left).
struct Adjusted {
    /// Indices of the primary comparisons.
    primary: Vec<usize>,
    /// TOST p per comparison, corrected within the primary family.
    tost: Vec<f64>,
    /// The comparison over its pairs without stalls (`None` with fewer than 2 pairs).
    no_stall: Vec<Option<Paired>>,
    /// Its TOST p, corrected within what is left of the primary family.
    no_stall_tost: Vec<Option<f64>>,
}

impl Adjusted {
    fn of(raw: &[Raw<'_>], a: &campaign::spec::Analysis) -> Self {
        let primary: Vec<usize> = (0..raw.len())
            .filter(|&i| raw[i].family == Family::Primary)
            .collect();
        let adjust = |ps: &[f64]| match a.correction {
            Correction::Holm => stats::multiplicity::holm(ps),
            Correction::None => ps.to_vec(),
        };
        let mut tost: Vec<f64> = raw.iter().map(|r| r.cmp.tost.p).collect();
        let family: Vec<f64> = primary.iter().map(|&i| raw[i].cmp.tost.p).collect();
        for (&i, p) in primary.iter().zip(adjust(&family)) {
            tost[i] = p;
        }
        let no_stall: Vec<Option<Paired>> = raw
            .iter()
            .map(|r| Paired::from_log_ratios(&r.d_no_stall).ok())
            .collect();
        let ns_p: Vec<Option<f64>> = no_stall
            .iter()
            .map(|p| p.and_then(|p| p.tost(a.margin).ok()).map(|t| t.p))
            .collect();
        let mut no_stall_tost = ns_p.clone();
        let left: Vec<usize> = primary
            .iter()
            .copied()
            .filter(|&i| ns_p[i].is_some())
            .collect();
        let family: Vec<f64> = left.iter().filter_map(|&i| ns_p[i]).collect();
        for (&i, p) in left.iter().zip(adjust(&family)) {
            no_stall_tost[i] = Some(p);
        }
        Self {
            primary,
            tost,
            no_stall,
            no_stall_tost,
        }
    }
}

/// The `i`-th comparison's entry: verdicts at the margin (adjusted p) and at the
/// sensitivity margins, the bootstrap check, CPU accounting, power, and the verdict
/// without stalls.
fn entry(
    r: &Raw<'_>,
    secondary: &crate::endpoints::Secondary,
    adjusted: &Adjusted,
    i: usize,
    a: &campaign::spec::Analysis,
) -> Result<Entry> {
    let c = &r.cmp;
    let band = [1.0 - a.margin, 1.0 + a.margin];
    let ci90 = [c.ci90.0, c.ci90.1];
    let flags: Flags = c.flags;
    let fam_n = if r.family == Family::Primary {
        adjusted.primary.len().max(1)
    } else {
        1
    };
    let reps = stats::power::repetitions_needed(c.paired.sd, a.margin, a.alpha, fam_n, a.power)?;
    let boot = c.bootstrap_ci90;
    let bootstrap_verdict = if boot.0 > band[0] && boot.1 < band[1] {
        Verdict::Equivalent
    } else if boot.0 > band[1] || boot.1 < band[0] {
        Verdict::NotEquivalent
    } else {
        Verdict::Inconclusive
    };
    let without_stalls = match adjusted.no_stall[i] {
        Some(p) => {
            let ci = p.ratio_interval(0.90)?;
            WithoutStalls {
                pairs: p.n,
                ratio: Some(p.ratio()),
                ci90: Some([ci.0, ci.1]),
                verdict: adjusted.no_stall_tost[i].map(|pa| verdict(pa, ci, a.margin, a.alpha)),
            }
        }
        None => WithoutStalls {
            pairs: r.d_no_stall.len(),
            ratio: None,
            ci90: None,
            verdict: None,
        },
    };
    let tost_p_adjusted = adjusted.tost[i];
    Ok(Entry {
        cell: r.cell.to_owned(),
        mode: r.mode.to_owned(),
        baseline: r.baseline.to_owned(),
        family: r.family,
        pairs: c.paired.n,
        ratio: c.ratio,
        ci90,
        ci95: [c.ci95.0, c.ci95.1],
        sd: c.paired.sd,
        tost_p: c.tost.p,
        tost_p_adjusted,
        bh_p_adjusted: secondary.endpoint("throughput").map(|e| e.bh_p),
        verdict: verdict(tost_p_adjusted, c.ci90, a.margin, a.alpha),
        verdicts_at_margins: c
            .tost_at_margins
            .iter()
            .map(|&(m, p)| (margin_key(m), verdict(p, c.ci90, m, a.alpha)))
            .collect(),
        deficit: flags.deficit,
        advantage: flags.advantage,
        bootstrap_ci90: [boot.0, boot.1],
        bootstrap_verdict,
        cpu_ratio: r.cpu_ratio,
        implied_ratio: r.cpu_ratio.map(implied_ratio),
        saturated: r.saturated,
        underpowered: ci90[1] - ci90[0] > band[1] - band[0],
        repetitions_needed: reps.needed,
        without_stalls,
        interval_rule: stats::describe::interval_rule(c.ci95, a.margin).ok(),
    })
}

/// The order-and-time check of every cell with a comparison, over the runs of its
/// complete blocks, with the campaign order of every valid run.
fn order_checks(
    rows: &[RunRow],
    by_cell: &Blocks<'_>,
    cells: &[String],
    entries: &[Entry],
) -> Vec<crate::order::OrderCheck> {
    let timeline = crate::order::Timeline::of(rows);
    cells
        .iter()
        .filter_map(|cell| {
            let compared: Vec<crate::order::Compared<'_>> = entries
                .iter()
                .filter(|e| &e.cell == cell)
                .map(|e| crate::order::Compared {
                    mode: &e.mode,
                    baseline: &e.baseline,
                    paired_ratio: e.ratio,
                })
                .collect();
            let blocks = by_cell.get(cell.as_str())?;
            if compared.is_empty() {
                return None;
            }
            let runs: Vec<&RunRow> = blocks.values().flat_map(|b| b.values().copied()).collect();
            Some(crate::order::check(cell, &runs, &compared, &timeline))
        })
        .collect()
}

/// What each arm label is: the campaign's arms, or for runs from a CSV alone the mode the
/// label names (on the default backend and S3 client).
fn arm_modes(cfg: &Config, rows: &[RunRow]) -> BTreeMap<String, campaign::design::Arm> {
    if !cfg.arm_details.is_empty() {
        return cfg
            .arm_details
            .iter()
            .map(|a| (a.label.clone(), a.clone()))
            .collect();
    }
    rows.iter()
        .filter_map(|r| {
            let mode = r.mode.parse::<envelope::Mode>().ok()?;
            Some((
                r.mode.clone(),
                campaign::design::Arm {
                    label: r.mode.clone(),
                    mode,
                    backend: envelope::Backend::default(),
                    client: campaign::spec::S3ClientKind::default(),
                    format: campaign::spec::ObjectFormat::default(),
                    require_pq: false,
                    kms: None,
                    session: None,
                    control: false,
                },
            ))
        })
        .collect()
}

/// The share of a deficit each control removes, in every cell holding its three arms: the
/// declared controls (`analysis.controls`), or without any, the manifest-size control of
/// each ML-KEM-768 arm (`x25519-padded` against `x25519` on one backend and S3 client).
fn attributions(
    by_cell: &Blocks<'_>,
    cells: &[String],
    arms: &BTreeMap<String, campaign::design::Arm>,
    cfg: &Config,
) -> Result<Vec<Attribution>> {
    let mut out = Vec::new();
    for cell in cells {
        let Some(blocks) = by_cell.get(cell.as_str()) else {
            continue;
        };
        let labels: BTreeSet<&str> = blocks.values().flat_map(|b| b.keys().copied()).collect();
        let (triples, declared) = if cfg.analysis.controls.is_empty() {
            (manifest_controls(&labels, arms), false)
        } else {
            let held = |l: &String| labels.contains(l.as_str());
            let t = cfg.analysis.controls.iter();
            let t = t.filter(|c| held(&c.arm) && held(&c.control) && held(&c.against));
            (t.cloned().collect(), true)
        };
        for c in triples {
            out.push(attribution(cell, blocks, &c, declared, cfg)?);
        }
    }
    Ok(out)
}

/// The manifest-size controls a cell holds: each ML-KEM-768 arm with the padded X25519 arm
/// and the X25519 arm on its backend and S3 client.
fn manifest_controls(
    labels: &BTreeSet<&str>,
    arms: &BTreeMap<String, campaign::design::Arm>,
) -> Vec<ControlSpec> {
    use envelope::Mode;
    let with = |mode: Mode| -> Vec<&campaign::design::Arm> {
        labels
            .iter()
            .filter_map(|l| arms.get(*l))
            .filter(|a| a.mode == mode && !a.control)
            .collect()
    };
    let mut out = Vec::new();
    for c in with(Mode::X25519Padded) {
        let same = |a: &&campaign::design::Arm| a.backend == c.backend && a.client == c.client;
        let Some(b) = with(Mode::X25519).into_iter().find(same) else {
            continue;
        };
        for p in with(Mode::MlKem768).into_iter().filter(same) {
            out.push(ControlSpec {
                arm: p.label.clone(),
                control: c.label.clone(),
                against: b.label.clone(),
            });
        }
    }
    out
}

/// One control's share of the deficit over the blocks holding its three arms.
fn attribution(
    cell: &str,
    blocks: &BTreeMap<u32, BTreeMap<&str, &RunRow>>,
    c: &ControlSpec,
    declared: bool,
    cfg: &Config,
) -> Result<Attribution> {
    let mut d_pc = Vec::new();
    let mut d_pb = Vec::new();
    for runs in blocks.values() {
        if let (Some(tp), Some(tc), Some(tb)) = (
            runs.get(c.arm.as_str()),
            runs.get(c.control.as_str()),
            runs.get(c.against.as_str()),
        ) {
            let l = log_ratios(&[
                (tp.throughput_rps, tc.throughput_rps),
                (tp.throughput_rps, tb.throughput_rps),
            ])?;
            d_pc.push(l[0]);
            d_pb.push(l[1]);
        }
    }
    // A share of a deficit the data do not establish is noise over noise (−289 % of a
    // ratio of 0.999): it is given only where the 90 % t interval of P/B excludes 1.
    if let Some(why) = no_deficit(&d_pb) {
        return Ok(Attribution {
            cell: cell.to_owned(),
            mode: c.arm.clone(),
            control: c.control.clone(),
            baseline: c.against.clone(),
            declared,
            share: None,
            note: Some(why),
        });
    }
    let share = stats::attribution::manifest_share(
        &d_pc,
        &d_pb,
        cfg.analysis.bootstrap_resamples,
        cfg.seed,
    );
    Ok(Attribution {
        cell: cell.to_owned(),
        mode: c.arm.clone(),
        control: c.control.clone(),
        baseline: c.against.clone(),
        declared,
        note: share.as_ref().err().map(ToString::to_string),
        share: share.ok(),
    })
}

/// Why there is no deficit to attribute, when the 90 % t interval of the per-block
/// `ln(P/B)` includes 0 (`None`: a deficit or an advantage the data establish, or too few
/// blocks to say, which the share's own errors then report).
fn no_deficit(d_pb: &[f64]) -> Option<String> {
    let m = stats::describe::mean_interval(d_pb, 0.90).ok()?;
    (m.ci.0 <= 0.0 && 0.0 <= m.ci.1).then(|| {
        format!(
            "no deficit to explain: P/B {:.3}, 90 % CI {:.3}–{:.3}, includes 1",
            m.mean.exp(),
            m.ci.0.exp(),
            m.ci.1.exp()
        )
    })
}

/// Every arm of the data against `baseline` (the comparisons when none are declared).
fn every_arm_against(rows: &[RunRow], baseline: &str) -> Vec<ComparisonSpec> {
    let mut arms: Vec<&str> = rows.iter().map(|r| r.mode.as_str()).collect();
    arms.sort_unstable();
    arms.dedup();
    arms.into_iter()
        .filter(|m| *m != baseline)
        .map(|m| ComparisonSpec {
            arm: m.to_owned(),
            against: baseline.to_owned(),
        })
        .collect()
}

type Blocks<'a> = BTreeMap<&'a str, BTreeMap<u32, BTreeMap<&'a str, &'a RunRow>>>;

/// Removes the blocks of each cell that lack a valid run of one of the cell's arms
/// (`arms`, or the arms the cell's data holds); returns them as (cell, block).
fn drop_incomplete_blocks(by_cell: &mut Blocks<'_>, arms: &[String]) -> Vec<(String, u32)> {
    let mut dropped = Vec::new();
    for (cell, blocks) in by_cell.iter_mut() {
        let expected: BTreeSet<&str> = if arms.is_empty() {
            blocks.values().flat_map(|b| b.keys().copied()).collect()
        } else {
            arms.iter().map(String::as_str).collect()
        };
        blocks.retain(|&block, runs| {
            let complete = expected.iter().all(|a| runs.contains_key(a));
            if !complete {
                dropped.push(((*cell).to_owned(), block));
            }
            complete
        });
    }
    dropped
}

fn arm_attempts(attempts: &[RunAttempts]) -> Vec<ArmAttempts> {
    let mut by_arm: BTreeMap<&str, ArmAttempts> = BTreeMap::new();
    for r in attempts {
        let e = by_arm.entry(&r.arm).or_insert_with(|| ArmAttempts {
            arm: r.arm.clone(),
            runs: 0,
            attempts: 0,
            invalid: 0,
            failed: 0,
        });
        e.runs += 1;
        e.attempts += r.attempts;
        e.invalid += r.invalid;
        e.failed += r.failed;
    }
    by_arm.into_values().collect()
}

/// Fisher's exact test of invalid vs valid attempts for each compared pair of arms.
fn invalid_rates(
    per_arm: &[ArmAttempts],
    comparisons: &[ComparisonSpec],
) -> Result<Vec<InvalidRate>> {
    let find = |l: &str| per_arm.iter().find(|a| a.arm == l);
    let mut out = Vec::new();
    for c in comparisons {
        let (Some(x), Some(y)) = (find(&c.arm), find(&c.against)) else {
            continue;
        };
        let row = |a: &ArmAttempts| {
            let judged = a.attempts.saturating_sub(a.failed);
            [
                u64::from(a.invalid),
                u64::from(judged.saturating_sub(a.invalid)),
            ]
        };
        let p = stats::contingency::fisher_exact([row(x), row(y)])?;
        out.push(InvalidRate {
            arm: c.arm.clone(),
            against: c.against.clone(),
            p,
            differs: p < INVALID_RATE_ALPHA,
        });
    }
    Ok(out)
}

fn arm_summaries(rows: &[RunRow], cells: &[String]) -> Vec<ArmSummary> {
    let mut out = Vec::new();
    for cell in cells {
        let mut modes: Vec<&str> = rows
            .iter()
            .filter(|r| &r.cell == cell)
            .map(|r| r.mode.as_str())
            .collect();
        modes.sort_unstable();
        modes.dedup();
        for m in modes {
            let rs: Vec<&RunRow> = rows
                .iter()
                .filter(|r| &r.cell == cell && r.mode == m)
                .collect();
            let first = rs[0];
            out.push(ArmSummary {
                cell: cell.clone(),
                mode: m.to_owned(),
                runs: rs.len(),
                throughput_rps: mean(rs.iter().map(|r| r.throughput_rps)).unwrap_or(0.0),
                cpu_per_request_us: mean(rs.iter().map(|r| r.cpu_per_request_us)).unwrap_or(0.0),
                client_cores_used: mean(rs.iter().map(|r| r.client_cores_used)).unwrap_or(0.0),
                client_saturation: mean(
                    rs.iter()
                        .filter(|r| r.client_cores_available > 0.0)
                        .map(|r| r.client_cores_used / r.client_cores_available),
                )
                .unwrap_or(0.0),
                operation: first.operation,
                object_size: first.object_size,
                concurrency: first.concurrency,
                offered_rps: first.offered_rps,
            });
        }
    }
    out
}

fn storage(
    rows: &[RunRow],
    baseline: &str,
    arms: &BTreeMap<String, campaign::design::Arm>,
) -> Vec<StorageRow> {
    // Mean manifest bytes per (object size, arm); the baseline's at the same size.
    let mut acc: BTreeMap<(Option<u64>, &str), Vec<f64>> = BTreeMap::new();
    for r in rows {
        if let Some(b) = r.manifest_bytes {
            acc.entry((r.object_size, &r.mode)).or_default().push(b);
        }
    }
    let bytes = |v: &Vec<f64>| -> u64 {
        let m = mean(v.iter().copied()).unwrap_or(0.0).round();
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "manifest sizes are small and non-negative"
        )]
        let b = m as u64;
        b
    };
    let mut out = Vec::new();
    for ((size, mode), v) in &acc {
        let base = acc.get(&(*size, baseline)).map_or(0, bytes);
        let m = bytes(v);
        let arm = arms.get(*mode);
        let format = arm.map(|a| a.format).unwrap_or_default();
        let c_len = |a: &campaign::design::Arm| u64::try_from(a.mode.ciphertext_len()).unwrap_or(0);
        let (overhead, breakdown) = if format.format() == envelope::Format::V2 {
            (
                stats::storage::overhead_v2(m, base),
                arm.map(|a| stats::storage::breakdown_v2(m, c_len(a))),
            )
        } else {
            (
                stats::storage::overhead(m, base),
                arm.map(|a| stats::storage::breakdown(m, c_len(a))),
            )
        };
        out.push(StorageRow {
            mode: (*mode).to_owned(),
            format,
            object_size: *size,
            overhead,
            breakdown,
        });
    }
    out
}

fn knees(rows: &[RunRow]) -> Vec<KneeRow> {
    // Series: (op, size, threads, mode) over open-loop rows. Closed loop, per (op, size,
    // mode): each cell's workers and mean throughput, for the peak and the service time.
    // Key: (operation, size, threads, mode) → offered rate (as bits) → mean responses.
    type Series<'a> = BTreeMap<(Operation, u64, u32, &'a str), BTreeMap<u64, Vec<f64>>>;
    type Closed<'a> = BTreeMap<(Operation, u64, &'a str), BTreeMap<&'a str, (u32, Vec<f64>)>>;
    let mut series: Series<'_> = BTreeMap::new();
    let mut closed: Closed<'_> = BTreeMap::new();
    for r in rows {
        let (Some(op), Some(size)) = (r.operation, r.object_size) else {
            continue;
        };
        match (r.offered_rps, r.mean_response_ms, r.concurrency) {
            (Some(rate), Some(resp), Some(t)) => {
                series
                    .entry((op, size, t, &r.mode))
                    .or_default()
                    .entry(rate.to_bits())
                    .or_default()
                    .push(resp);
            }
            (None, _, c) => closed
                .entry((op, size, &r.mode))
                .or_default()
                .entry(&r.cell)
                .or_insert_with(|| (c.unwrap_or(0), Vec::new()))
                .1
                .push(r.throughput_rps),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for ((op, size, threads, mode), pts) in series {
        let points: Vec<OpenPoint> = pts
            .iter()
            .map(|(bits, v)| OpenPoint {
                rate: f64::from_bits(*bits),
                mean_response: mean(v.iter().copied()).unwrap_or(0.0),
            })
            .collect();
        // (workers, mean throughput) of each closed-loop cell.
        let cells: Vec<(u32, f64)> = closed
            .get(&(op, size, mode))
            .map(|cells| {
                cells
                    .values()
                    .filter_map(|(c, v)| Some((*c, mean(v.iter().copied())?)))
                    .collect()
            })
            .unwrap_or_default();
        let peak = cells.iter().map(|c| c.1).fold(0.0, f64::max);
        let peak = (peak > 0.0).then_some(peak);
        let knee = knee(&points, peak);
        // Little's law at the fewest workers: S = workers / throughput (seconds).
        let predicted = cells
            .iter()
            .filter(|(c, x)| *c > 0 && *x > 0.0)
            .min_by_key(|(c, _)| *c)
            .and_then(|(c, x)| stats::queueing::predict_knee(f64::from(*c) / x, peak?).ok());
        out.push(KneeRow {
            series: format!("{}-{}-t{threads}", op.as_str(), campaign::units::Size(size)),
            mode: mode.to_owned(),
            measured_over_predicted: knee
                .zip(predicted)
                .map(|(k, p)| k.rate / p.rate)
                .filter(|r| r.is_finite()),
            knee,
            predicted,
            points,
        });
    }
    out
}
