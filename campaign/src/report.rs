//! The report for people: a verdict table for the terminal and `report.md`.

use std::fmt::Write as _;

use serde::Serialize;

use crate::analysis::{Entry, Report};

/// `report.json`: the analysis with the campaign's name, hash and excluded runs.
#[derive(Serialize)]
struct ReportFile<'a> {
    campaign: &'a str,
    prereg_hash: &'a str,
    excluded_runs: Vec<ExcludedRun>,
    #[serde(flatten)]
    report: &'a Report,
}

#[derive(Serialize)]
struct ExcludedRun {
    run: String,
    reason: String,
}

/// The report's files, by path relative to the report directory: `report.json`,
/// `report.md` and `plots/*.svg` (their links are added to `header`). Shared by
/// `pqbench run`/`analyze` and the operator, so a campaign's report is the same wherever
/// it ran.
pub fn files(report: &Report, header: &mut Header) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for p in crate::plots::all(report) {
        let path = format!("plots/{}", p.file);
        header.plots.push((path.clone(), p.title.clone()));
        out.push((path, p.svg.into_bytes()));
    }
    let file = ReportFile {
        campaign: header.campaign.as_deref().unwrap_or(""),
        prereg_hash: header.prereg_hash.as_deref().unwrap_or(""),
        excluded_runs: header
            .excluded
            .iter()
            .map(|(run, reason)| ExcludedRun {
                run: run.clone(),
                reason: reason.clone(),
            })
            .collect(),
        report,
    };
    // Plain data with finite numbers; serializing cannot fail.
    let mut json = serde_json::to_vec_pretty(&file).unwrap_or_default();
    json.push(b'\n');
    out.insert(0, ("report.json".to_owned(), json));
    out.insert(
        1,
        (
            "report.md".to_owned(),
            markdown(report, header).into_bytes(),
        ),
    );
    out
}

/// Context the report prints beyond the analysis.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    /// Campaign name.
    pub campaign: Option<String>,
    /// Pre-registration hash.
    pub prereg_hash: Option<String>,
    /// Runs left out (run id or directory, and why).
    pub excluded: Vec<(String, String)>,
    /// Plot files to link, relative to the report.
    pub plots: Vec<(String, String)>,
}

fn r3(x: f64) -> String {
    format!("{x:.3}")
}

fn pval(p: f64) -> String {
    if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

fn flags(e: &Entry) -> String {
    e.flags().join(", ")
}

/// One line per comparison saying what it means, each after `bullet`.
fn in_words(r: &Report, bullet: &str) -> String {
    let margin = r.config.analysis.margin;
    r.comparisons
        .iter()
        .map(|e| {
            format!(
                "{bullet}{} · {} vs {}: {}\n",
                e.cell,
                e.mode,
                e.baseline,
                e.meaning(margin)
            )
        })
        .collect()
}

/// The verdict table as fixed-width text for a terminal.
pub fn terminal(r: &Report) -> String {
    let a = &r.config.analysis;
    let mut rows: Vec<[String; 8]> = vec![[
        "cell".into(),
        "arm vs against".into(),
        "pairs".into(),
        "ratio".into(),
        "90% CI".into(),
        "TOST p (adj)".into(),
        "verdict".into(),
        "flags".into(),
    ]];
    for e in &r.comparisons {
        rows.push([
            e.cell.clone(),
            format!("{} vs {}", e.mode, e.baseline),
            e.pairs.to_string(),
            r3(e.ratio),
            format!("{}–{}", r3(e.ci90[0]), r3(e.ci90[1])),
            pval(e.tost_p_adjusted),
            e.verdict.to_string(),
            flags(e),
        ]);
    }
    let mut width = [0usize; 8];
    for row in &rows {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut s = format!(
        "Verdicts at margin ±{} (α = {}, {} over {} primary comparison(s)):\n",
        a.margin,
        a.alpha,
        match a.correction {
            crate::spec::Correction::Holm => "Holm",
            crate::spec::Correction::None => "no correction",
        },
        r.primary_family_size
    );
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}", w = w))
            .collect();
        let _ = writeln!(s, "  {}", line.join("  ").trim_end());
        if i == 0 {
            let _ = writeln!(s, "  {}", "-".repeat(width.iter().sum::<usize>() + 2 * 7));
        }
    }
    if r.comparisons.is_empty() {
        s.push_str(
            "  (no comparison: every cell needs at least 2 complete blocks holding both arms)\n",
        );
    } else {
        s.push_str("In words:\n");
        s.push_str(&in_words(r, "  "));
    }
    for x in r.invalid_rates.iter().filter(|x| x.differs) {
        let _ = writeln!(
            s,
            "  warning: invalid-run rates of {} and {} differ (Fisher exact p = {}): exclusion may bias that comparison",
            x.arm,
            x.against,
            pval(x.p)
        );
    }
    for w in &r.warnings {
        let _ = writeln!(s, "  note: {w}");
    }
    s
}

/// The whole report as Markdown.
pub fn markdown(r: &Report, h: &Header) -> String {
    let a = &r.config.analysis;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# pqbench report{}\n",
        h.campaign
            .as_deref()
            .map(|c| format!(": {c}"))
            .unwrap_or_default()
    );
    if let Some(hash) = &h.prereg_hash {
        let _ = writeln!(
            s,
            "- Pre-registration hash (SHA-256 of the canonical spec): `{hash}`"
        );
    }
    let _ = writeln!(
        s,
        "- Runs analysed: {}; baseline `{}`; margin ±{}; α = {}; correction {:?} over {} primary comparison(s); sensitivity margins {:?}; bootstrap {} resamples; deficit threshold {}.",
        r.runs,
        r.config.baseline,
        a.margin,
        a.alpha,
        a.correction,
        r.primary_family_size,
        a.sensitivity_margins,
        a.bootstrap_resamples,
        a.deficit_threshold
    );
    let _ = writeln!(
        s,
        "- Pairs are the complete blocks of a cell (a valid run of every arm); ratio = exp(mean ln(T_arm/T_against)) of throughput; intervals are t intervals of the mean log ratio (study section IV-C).\n"
    );
    if !r.config.arm_details.is_empty() {
        s.push_str("## Arms\n\n| arm | mode | crypto backend | S3 client |\n|---|---|---|---|\n");
        for x in &r.config.arm_details {
            let _ = writeln!(
                s,
                "| {}{} | {} | {} | {} |",
                x.label,
                if x.control { " (A/A control)" } else { "" },
                x.mode,
                x.backend.name(),
                x.client
            );
        }
        s.push('\n');
    }

    s.push_str("## Verdicts\n\n| cell | arm vs against | pairs | ratio | 90 % CI | 95 % CI | TOST p | adjusted p | verdict | flags |\n|---|---|---:|---:|---|---|---:|---:|---|---|\n");
    for e in &r.comparisons {
        let _ = writeln!(
            s,
            "| {} | {} vs {} | {} | {} | {}–{} | {}–{} | {} | {} | **{}** | {} |",
            e.cell,
            e.mode,
            e.baseline,
            e.pairs,
            r3(e.ratio),
            r3(e.ci90[0]),
            r3(e.ci90[1]),
            r3(e.ci95[0]),
            r3(e.ci95[1]),
            pval(e.tost_p),
            pval(e.tost_p_adjusted),
            e.verdict,
            flags(e)
        );
    }
    if !r.comparisons.is_empty() {
        s.push_str("\nIn words:\n\n");
        s.push_str(&in_words(r, "- "));
    }
    for (file, title) in &h.plots {
        let _ = writeln!(s, "\n![{title}]({file})");
    }

    s.push_str("\n## Sensitivity and checks\n\n| cell | mode | verdicts at other margins (unadjusted) | bootstrap 90 % CI | bootstrap verdict | without stalls | BH-adjusted p |\n|---|---|---|---|---|---|---:|\n");
    for e in &r.comparisons {
        let at: Vec<String> = e
            .verdicts_at_margins
            .iter()
            .map(|(m, v)| format!("±{m}: {v}"))
            .collect();
        let ns = &e.without_stalls;
        let ns_text = match (ns.ratio, ns.verdict) {
            (Some(ratio), Some(v)) => format!("{} pairs, {} ({v})", ns.pairs, r3(ratio)),
            _ => format!("{} pairs (too few)", ns.pairs),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {}–{} | {} | {} | {} |",
            e.cell,
            e.mode,
            at.join(", "),
            r3(e.bootstrap_ci90[0]),
            r3(e.bootstrap_ci90[1]),
            e.bootstrap_verdict,
            ns_text,
            e.bh_p_adjusted.map(pval).unwrap_or_else(|| "–".into())
        );
    }
    if r.stalls.is_empty() {
        s.push_str("\nStall rule: no run flagged.\n");
    } else {
        let _ = writeln!(s, "\nStall rule flagged: {}.", r.stalls.join(", "));
    }

    s.push_str("\n## CPU accounting and power\n\n| cell | mode | CPU/request ratio | implied throughput ratio | observed ratio | saturated | paired sd | repetitions for power {} |\n|---|---|---:|---:|---:|---|---:|---:|\n");
    s = s.replace("power {}", &format!("power {}", a.power));
    for e in &r.comparisons {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.4} | {}{} |",
            e.cell,
            e.mode,
            e.cpu_ratio.map(r3).unwrap_or_else(|| "–".into()),
            e.implied_ratio.map(r3).unwrap_or_else(|| "–".into()),
            r3(e.ratio),
            if e.saturated { "yes" } else { "no" },
            e.sd,
            e.repetitions_needed,
            if e.underpowered {
                " (underpowered)"
            } else {
                ""
            }
        );
    }

    s.push_str("\n## Per cell and arm\n\n| cell | arm | runs | throughput (req/s) | client CPU per request (µs) | client cores used | client saturation |\n|---|---|---:|---:|---:|---:|---:|\n");
    for m in &r.arms {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {:.1} | {:.2} | {:.0} % |",
            m.cell,
            m.mode,
            m.runs,
            m.throughput_rps,
            m.cpu_per_request_us,
            m.client_cores_used,
            m.client_saturation * 100.0
        );
    }

    if !r.attempts.is_empty() {
        s.push_str("\n## Attempts\n\nA run that fails validation is run again in its block position; every attempt is kept in the raw data.\n\n| arm | planned runs | attempts | invalid attempts | failed attempts |\n|---|---:|---:|---:|---:|\n");
        for x in &r.attempts {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                x.arm, x.runs, x.attempts, x.invalid, x.failed
            );
        }
        if !r.invalid_rates.is_empty() {
            let _ = writeln!(
                s,
                "\n| arm vs against | Fisher exact p (invalid rate) | differs at α = {} |\n|---|---:|---|",
                crate::analysis::INVALID_RATE_ALPHA
            );
            for x in &r.invalid_rates {
                let _ = writeln!(
                    s,
                    "| {} vs {} | {} | {} |",
                    x.arm,
                    x.against,
                    pval(x.p),
                    if x.differs {
                        "**yes**: exclusion may bias this comparison"
                    } else {
                        "no"
                    }
                );
            }
        }
    }

    if !r.storage.is_empty() {
        s.push_str("\n## Storage overhead (section V-E)\n\n| object size | mode | manifest bytes | extra vs baseline | per 10⁹ objects (TB) | extra per 10⁹ (TB / TiB) | over S3's 2 KB metadata limit |\n|---|---|---:|---:|---:|---:|---|\n");
        for st in &r.storage {
            let o = &st.overhead;
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:+} | {:.3} | {:.3} / {:.3} | {} |",
                st.object_size
                    .map(|b| crate::units::Size(b).to_string())
                    .unwrap_or_else(|| "–".into()),
                st.mode,
                o.manifest_bytes,
                o.extra_bytes_vs_baseline,
                o.per_billion_tb,
                o.extra_per_billion_tb,
                o.extra_per_billion_tib,
                if o.over_s3_metadata_limit {
                    "yes"
                } else {
                    "no"
                }
            );
        }
    }

    if !r.knees.is_empty() {
        s.push_str("\n## Open loop: the knee (mean response time ≥ 2 × light load)\n\n| series | mode | rates | knee (req/s) | fraction of closed-loop peak |\n|---|---|---|---:|---:|\n");
        for k in &r.knees {
            let rates: Vec<String> = k.points.iter().map(|p| format!("{}", p.rate)).collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                k.series,
                k.mode,
                rates.join(", "),
                k.knee
                    .map_or_else(|| "not reached".into(), |k| format!("{}", k.rate)),
                k.knee
                    .and_then(|k| k.fraction_of_peak)
                    .map_or_else(|| "–".into(), r3)
            );
        }
    }

    if !h.excluded.is_empty() || !r.warnings.is_empty() {
        s.push_str("\n## Notes\n\n");
        for (run, why) in &h.excluded {
            let _ = writeln!(s, "- Excluded run {run}: {why}");
        }
        for w in &r.warnings {
            let _ = writeln!(s, "- {w}");
        }
    }
    s
}
