//! The report for people: a verdict table for the terminal ([`terminal`]) and `report.md`
//! ([`markdown`]).

use std::fmt::Write as _;

use analysis::{Entry, Report};

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
            campaign::spec::Correction::Holm => "Holm",
            campaign::spec::Correction::None => "no correction",
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
    let mut s = String::new();
    header_section(&mut s, r, h);
    arms_section(&mut s, r);
    verdicts_section(&mut s, r, h);
    sensitivity_section(&mut s, r);
    crate::figures::kem_section(&mut s, r);
    identity_section(&mut s, r);
    power_section(&mut s, r);
    secondary_section(&mut s, r);
    attribution_section(&mut s, r);
    crate::figures::cpu_split_section(&mut s, r);
    crate::figures::predictions_section(&mut s, r);
    crate::figures::interval_rule_section(&mut s, r);
    order_section(&mut s, r);
    drift_section(&mut s, r);
    sessions_section(&mut s, r);
    per_cell_section(&mut s, r);
    crate::figures::resources_section(&mut s, r);
    crate::figures::key_service_section(&mut s, r);
    crate::figures::bottleneck_section(&mut s, r);
    crate::figures::implementations_section(&mut s, r);
    attempts_section(&mut s, r);
    wire_section(&mut s, r);
    storage_section(&mut s, r);
    knee_section(&mut s, r);
    crate::figures::study_section(&mut s, r);
    deviations_section(&mut s, r);
    notes_section(&mut s, r, h);
    s
}

/// The title, the pre-registration hash and the analysis settings.
fn header_section(s: &mut String, r: &Report, h: &Header) {
    let a = &r.config.analysis;
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
}

/// What each arm is: mode, crypto backend (and, for a remote arm, its key service), S3
/// client.
fn arms_section(s: &mut String, r: &Report) {
    if !r.config.arm_details.is_empty() {
        s.push_str("## Arms\n\n| arm | mode | crypto backend | S3 client |\n|---|---|---|---|\n");
        for x in &r.config.arm_details {
            let backend = match &x.kms {
                None => x.backend.name().to_owned(),
                Some(k) => format!(
                    "{}, the key in a key service (+{} round trip{})",
                    x.backend.name(),
                    campaign::units::format_duration(k.rtt.0),
                    if k.cache { ", secrets cached" } else { "" }
                ),
            };
            let _ = writeln!(
                s,
                "| {}{} | {} | {} | {} |",
                x.label,
                if x.control { " (A/A control)" } else { "" },
                x.mode,
                backend,
                x.client
            );
        }
        s.push('\n');
    }
}

/// The verdict table, the comparisons in words, and the plots.
fn verdicts_section(s: &mut String, r: &Report, h: &Header) {
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
}

/// Verdicts at the other margins, the bootstrap check, the verdicts without stalls.
fn sensitivity_section(s: &mut String, r: &Report) {
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
}

/// Per cell and arm means.
fn per_cell_section(s: &mut String, r: &Report) {
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
}

/// Attempts per arm and the invalid-rate test.
fn attempts_section(s: &mut String, r: &Report) {
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
                analysis::INVALID_RATE_ALPHA
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
}

/// Per logical request: S3 requests, bytes, client CPU and latency, with format v2 arms.
fn wire_section(s: &mut String, r: &Report) {
    if r.wire.iter().any(|w| !w.format.is_default()) {
        s.push_str("\n## Per logical request: S3 requests, bytes, client CPU and latency\n\nWhat one logical GET or PUT cost, per cell and arm: S3 requests and bytes on the wire (v1 writes and reads `data.enc` and `manifest.json`, v2 one `object.v2`; a v2 header in metadata travels in the request's headers), client CPU per request and the median over runs of the median latency. Then, for every comparison across formats, the arm over its counterpart.\n\n| cell | arm | format | runs | S3 requests | bytes sent | bytes received | client CPU µs | p50 ms | throughput req/s |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for w in &r.wire {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.2} | {:.0} | {:.0} | {:.1} | {:.3} | {:.0} |",
                w.cell,
                w.arm,
                w.format,
                w.runs,
                w.s3_requests,
                w.bytes_sent,
                w.bytes_received,
                w.cpu_per_request_us,
                w.latency_p50_ms,
                w.throughput_rps
            );
        }
        if !r.format_ratios.is_empty() {
            s.push_str("\n| cell | arm ÷ against | formats | S3 requests | client CPU | p50 latency | throughput |\n|---|---|---|---:|---:|---:|---:|\n");
            for f in &r.format_ratios {
                let _ = writeln!(
                    s,
                    "| {} | {} ÷ {} | {} ÷ {} | {:.3} | {:.3} | {:.3} | {:.3} |",
                    f.cell,
                    f.arm,
                    f.against,
                    f.formats.0,
                    f.formats.1,
                    f.s3_requests,
                    f.cpu_per_request,
                    f.latency_p50,
                    f.throughput
                );
            }
        }
    }
}

/// Storage overhead per arm and object size (study section V-E).
fn storage_section(s: &mut String, r: &Report) {
    if !r.storage.is_empty() {
        s.push_str("\n## Storage overhead (section V-E)\n\nManifest bytes (format v1: the JSON `manifest.json`) or header bytes (format v2: the binary header, in metadata or before the chunks) split into the key-establishment ciphertext, what its encoding adds (base64 in v1, none in v2's binary header), and the fixed fields. S3 counts a metadata-carried manifest as the key `pqbench-manifest` plus the value, and a v2 header as the key `pqbench-v2` plus its base64, in UTF-8 bytes, against its 2 KB (2,048-byte) limit.\n\n| object size | mode | format | manifest / header bytes | ciphertext + encoding + fixed | extra vs baseline | per 10⁹ objects (TB) | extra per 10⁹ (TB / TiB) | S3 metadata bytes | over S3's 2 KB limit |\n|---|---|---|---:|---|---:|---:|---:|---:|---|\n");
        for st in &r.storage {
            let o = &st.overhead;
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:+} | {:.3} | {:.3} / {:.3} | {} | {} |",
                st.object_size
                    .map(|b| campaign::units::Size(b).to_string())
                    .unwrap_or_else(|| "–".into()),
                st.mode,
                st.format,
                o.manifest_bytes,
                st.breakdown.map_or_else(
                    || "–".into(),
                    |b| format!("{} + {} + {}", b.ciphertext, b.encoding, b.fixed)
                ),
                o.extra_bytes_vs_baseline,
                o.per_billion_tb,
                o.extra_per_billion_tb,
                o.extra_per_billion_tib,
                o.s3_metadata_bytes,
                if o.over_s3_metadata_limit {
                    "yes"
                } else {
                    "no"
                }
            );
        }
    }
}

/// The open-loop knees, measured and predicted.
fn knee_section(s: &mut String, r: &Report) {
    if !r.knees.is_empty() {
        s.push_str("\n## Open loop: the knee (mean response time = 2 × light load)\n\nThe knee is interpolated between the two offered rates that bracket twice the light-load response time. The prediction is an M/M/c pool: service time S = workers ÷ throughput at the fewest closed-loop workers (Little's law), c = round(closed-loop peak × S) servers, and the rate at which the M/M/c mean response time reaches 2 S (Poisson arrivals, exponential service).\n\n| series | mode | rates | knee (req/s) | between | fraction of closed-loop peak | predicted (c, S) | measured ÷ predicted |\n|---|---|---|---:|---|---:|---|---:|\n");
        for k in &r.knees {
            let rates: Vec<String> = k.points.iter().map(|p| format!("{}", p.rate)).collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                k.series,
                k.mode,
                rates.join(", "),
                k.knee
                    .map_or_else(|| "not reached".into(), |k| format!("{:.0}", k.rate)),
                k.knee.map_or_else(
                    || "–".into(),
                    |k| format!("{}–{}", k.lower_rate, k.upper_rate)
                ),
                opt3(k.knee.and_then(|k| k.fraction_of_peak)),
                k.predicted.map_or_else(
                    || "–".into(),
                    |p| format!(
                        "{:.0} (c = {}, S = {:.3} ms)",
                        p.rate,
                        p.servers,
                        p.service_time * 1e3
                    )
                ),
                opt3(k.measured_over_predicted)
            );
        }
    }
}

/// Excluded runs and warnings.
fn notes_section(s: &mut String, r: &Report, h: &Header) {
    if !h.excluded.is_empty() || !r.warnings.is_empty() {
        s.push_str("\n## Notes\n\n");
        for (run, why) in &h.excluded {
            let _ = writeln!(s, "- Excluded run {run}: {why}");
        }
        for w in &r.warnings {
            let _ = writeln!(s, "- {w}");
        }
    }
}

fn opt3(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), r3)
}

fn interval(ci: (f64, f64)) -> String {
    format!("{:.3}–{:.3}", ci.0, ci.1)
}

/// The CPU accounting identity, whole (study Tables XIII and XV).
fn identity_section(s: &mut String, r: &Report) {
    let with: Vec<_> = r
        .secondary
        .iter()
        .filter_map(|x| x.identity.map(|id| (x, id)))
        .collect();
    if with.is_empty() {
        return;
    }
    s.push_str("\n## CPU accounting identity (exploratory)\n\nPer run, throughput = client cores used ÷ client CPU per request. The CPU ratio is Table XIII's column; *implied, equal cores* is Table XV's inverse CPU ratio; *implied* adds the cores-used term; the residual is observed ÷ implied. Where the arms used the same cores (the gap observed ÷ inverse CPU ratio within ±the deficit threshold), CPU per request alone predicts the throughput ratio, and a CPU measurement answers the migration question; elsewhere it does not.\n\n| cell | arm vs against | CPU/request ratio (95 % CI) | CPU TOST p | cores-used ratio (90 % CI) | implied, equal cores | implied | observed | residual (90 % CI) | identity holds | CPU predicts throughput |\n|---|---|---|---:|---|---:|---:|---:|---|---|---|\n");
    for (x, id) in with {
        let _ = writeln!(
            s,
            "| {} | {} vs {} | {} ({}) | {} | {} ({}) | {} | {} | {} | {} ({}) | {} | {} |",
            x.cell,
            x.mode,
            x.baseline,
            r3(id.cpu.ratio),
            interval(id.cpu.ci95),
            pval(id.cpu_tost_p),
            r3(id.cores.ratio),
            interval(id.cores.ci90),
            r3(id.implied_equal_cores.ratio),
            r3(id.implied.ratio),
            r3(id.observed.ratio),
            r3(id.residual.ratio),
            interval(id.residual.ci90),
            if id.holds { "yes" } else { "**no**" },
            if id.cpu_predicts_throughput {
                "yes"
            } else {
                "no: the arms used different cores"
            }
        );
    }
}

/// Saturation, the paired sd and the repetitions the power calculation asks for.
fn power_section(s: &mut String, r: &Report) {
    let a = &r.config.analysis;
    let _ = writeln!(
        s,
        "\n## Saturation and power\n\n| cell | mode | CPU/request ratio | implied throughput ratio | observed ratio | saturated | paired sd | repetitions for power {} |\n|---|---|---:|---:|---:|---|---:|---:|",
        a.power
    );
    for e in &r.comparisons {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.4} | {}{} |",
            e.cell,
            e.mode,
            opt3(e.cpu_ratio),
            opt3(e.implied_ratio),
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
}

/// Second endpoints with their intervals and difference tests (study Tables XVI, XX).
fn secondary_section(s: &mut String, r: &Report) {
    let n: usize = r.secondary.iter().map(|x| x.endpoints.len()).sum();
    if n == 0 {
        return;
    }
    let marked = r
        .secondary
        .iter()
        .flat_map(|x| &x.endpoints)
        .filter(|e| e.marked)
        .count();
    let survive = r
        .secondary
        .iter()
        .flat_map(|x| &x.endpoints)
        .filter(|e| e.survives_bh)
        .count();
    let _ = writeln!(
        s,
        "\n## Second endpoints (exploratory)\n\nPaired over the same blocks as the verdicts: ratios (mode ÷ against) with 90 % and 95 % t intervals, differences (mode − against) with 95 % intervals. \\* = the 95 % interval excludes no change (unadjusted); \\*\\* = also at a false-discovery rate of 5 % (Benjamini–Hochberg over all {n} tests). {marked} of {n} are marked; {survive} remain after BH, so single marks should not be over-read. Stage times are compared at one worker only.\n\n| cell | arm vs against | endpoint | estimate | 90 % CI | 95 % CI | p | BH p | |\n|---|---|---|---:|---|---|---:|---:|---|"
    );
    for x in &r.secondary {
        for e in &x.endpoints {
            let est = match e.scale {
                analysis::endpoints::Scale::Ratio => r3(e.estimate),
                analysis::endpoints::Scale::Difference => format!("{:+.2} {}", e.estimate, e.unit),
            };
            let _ = writeln!(
                s,
                "| {} | {} vs {} | {} | {} | {} | {:.3}–{:.3} | {} | {} | {} |",
                x.cell,
                x.mode,
                x.baseline,
                e.name,
                est,
                e.ci90
                    .map_or_else(|| "–".into(), |c| format!("{:.3}–{:.3}", c[0], c[1])),
                e.ci95[0],
                e.ci95[1],
                pval(e.p),
                pval(e.bh_p),
                if e.survives_bh {
                    "\\*\\*"
                } else if e.marked {
                    "\\*"
                } else {
                    ""
                }
            );
        }
    }
}

/// The manifest-size control's share of a deficit (study section V-C).
fn attribution_section(s: &mut String, r: &Report) {
    if r.attributions.is_empty() {
        return;
    }
    s.push_str("\n## Controls: how much of the deficit each control removes\n\nA control C is the arm P with one suspected cause of its deficit against B removed (the manifest-size control: X25519 with a manifest exactly as long as ML-KEM-768's; a binding control: the same KEM reached another way). Share = 1 − ln(r_P/C) ÷ ln(r_P/B): the part of P's throughput ratio to B that C already shows. The interval is a percentile bootstrap over blocks (study section V-C: the manifest size 17 %, 90 % CI 14–21 %). The controls are those declared in `analysis.controls`, or without any, the manifest-size control wherever its three arms run.\n\n| cell | P | C (control) | B | blocks | P/B | P/C | share (90 % CI) |\n|---|---|---|---|---:|---:|---:|---|\n");
    for x in &r.attributions {
        let (n, pb, pc, share) = match &x.share {
            Some(sh) => (
                sh.n.to_string(),
                r3(sh.deficit_ratio),
                r3(sh.residual_ratio),
                format!(
                    "{:.0} %{}",
                    sh.share * 100.0,
                    sh.ci90.map_or_else(String::new, |c| format!(
                        " ({:.0}–{:.0} %)",
                        c.0 * 100.0,
                        c.1 * 100.0
                    ))
                ),
            ),
            None => (
                "–".into(),
                "–".into(),
                "–".into(),
                x.note.clone().unwrap_or_else(|| "–".into()),
            ),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {n} | {pb} | {pc} | {share} |",
            x.cell, x.mode, x.control, x.baseline
        );
    }
    s.push_str("\nIn words:\n\n");
    for x in &r.attributions {
        let _ = writeln!(s, "- {}", x.in_words());
    }
}

fn pct(x: f64) -> String {
    format!("{:+.1} %", x * 100.0)
}

fn spread(x: &analysis::longrun::Spread) -> String {
    format!("{} [{}, {}]", pct(x.median), pct(x.min), pct(x.max))
}

/// Drift within the runs of each arm.
fn drift_section(s: &mut String, r: &Report) {
    if r.drift.is_empty() {
        return;
    }
    let plot = if r
        .drift
        .iter()
        .any(|d| d.mean_bins.iter().any(Option::is_some))
    {
        " `plots/drift.svg` shows the bins."
    } else {
        ""
    };
    let _ = write!(
        s,
        "\n## Drift within runs\n\nEach run's window is cut into 30 bins by request start: throughput per bin (of the run's own time) and mean latency per bin, the last third against the first. A run of 60 s or more fails validation (`drift` check) when either changes by more than 20 % with a least-squares trend whose 95 % interval excludes 0; shorter runs are only reported here.{}\n\n| cell | arm | runs | throughput, last third ÷ first − 1: median [range] | mean latency, likewise |\n|---|---|---:|---|---|\n",
        plot
    );
    for d in &r.drift {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            d.cell,
            d.mode,
            d.runs,
            spread(&d.throughput_change),
            d.latency_change.as_ref().map_or_else(|| "–".into(), spread)
        );
    }
}

/// Bounded sessions of each session arm, beside its comparisons (study section V-F).
fn sessions_section(s: &mut String, r: &Report) {
    if r.sessions.is_empty() {
        return;
    }
    s.push_str("\n## Bounded sessions (section V-F)\n\nOne ML-KEM root per session, for at most B_max objects and at most T_max. Per arm over its runs: objects and plaintext bytes exposed per root, key establishments (KEM encapsulations) per object, what ended the sessions (B_max reached; T_max, a later session followed; the end of the run), and the receiver's root-cache hit rate over the window (GET). Beside it, the arm's comparisons.\n\n| cell | arm | B_max / T_max | runs | sessions per run | objects per root | bytes per root (max) | key establishments per object | ended by B_max / T_max / run end | root-cache hit rate | comparisons |\n|---|---|---|---:|---:|---:|---|---:|---|---:|---|\n");
    for x in &r.sessions {
        let vs: Vec<String> = x
            .versus
            .iter()
            .map(|v| {
                format!(
                    "vs {}: {} [{}, {}] {}",
                    v.against,
                    r3(v.ratio),
                    r3(v.ci90[0]),
                    r3(v.ci90[1]),
                    v.verdict
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} / {} ms | {} | {:.1} | {:.1} | {:.0} ({}) | {:.4} | {} / {} / {} | {} | {} |",
            x.cell,
            x.mode,
            x.max_objects,
            x.max_age_ms,
            x.runs,
            x.sessions_per_run,
            x.objects_per_root,
            x.bytes_per_root,
            x.bytes_per_root_max,
            x.key_establishments_per_object,
            x.ended_by[0],
            x.ended_by[1],
            x.ended_by[2],
            x.root_cache_hit_rate
                .map_or_else(|| "–".into(), |h| format!("{:.1} %", h * 100.0)),
            if vs.is_empty() {
                "–".into()
            } else {
                vs.join("; ")
            }
        );
    }
}

/// The order-and-time regression of each compared cell (study section VI).
fn order_section(s: &mut String, r: &Report) {
    if r.order.is_empty() {
        return;
    }
    s.push_str("\n## Order and time (exploratory)\n\nPer cell, OLS of ln(throughput) on the arm, block fixed effects, the position in the block, whether the run before (in campaign order, any cell) was a PUT, and hours since the campaign's first run (study section VI). Estimates are throughput changes, exp(β) − 1, per position step, after a PUT and per hour (over the cell's own span when its runs span less than an hour: the change it measured rather than an extrapolation), with 95 % t intervals; a position or time term with p < 0.05 is flagged. VIF is the term's variance inflation factor, 1 / (1 − R²) of it on the other columns: elapsed time is mostly block plus position, and with a VIF in the thousands its estimate rests on how the lengths of runs vary within blocks (an implausibly large time term there may mean they vary with throughput). Modes are shuffled within blocks, so such a term widens intervals but cannot favour a mode. Elapsed time is not estimable when the runs of a block are evenly spaced: it is then fixed by the block and the position.\n\n| cell | runs | term | estimate | 95 % CI | p | flagged | VIF |\n|---|---:|---|---:|---|---:|---|---:|\n");
    for c in &r.order {
        if let Some(note) = &c.note {
            let _ = writeln!(s, "| {} | {} | – | {} | | | |", c.cell, c.runs, note);
        }
        for t in &c.terms {
            // Elapsed time in a cell shorter than an hour: over its span, not per hour.
            let (estimate, ci) = match c.over_span(t) {
                Some(o) => (
                    format!(
                        "{:+.2} % over the cell's {:.1} min ({:+.2} % {} extrapolated)",
                        o.estimate * 100.0,
                        o.minutes,
                        t.estimate * 100.0,
                        t.factor.unit()
                    ),
                    o.ci95,
                ),
                None => (
                    format!("{:+.2} % {}", t.estimate * 100.0, t.factor.unit()),
                    t.ci95,
                ),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {estimate} | {:+.2} to {:+.2} % | {} | {} | {} |",
                c.cell,
                c.runs,
                t.factor.as_str(),
                ci[0] * 100.0,
                ci[1] * 100.0,
                pval(t.p),
                if t.flagged() {
                    "**yes**"
                } else if t.significant {
                    "p < 0.05 (covariate, not flagged)"
                } else {
                    "no"
                },
                t.vif.map_or_else(String::new, |v| if v < 100.0 {
                    format!("{v:.2}")
                } else {
                    format!("{v:.0}")
                })
            );
        }
        for d in &c.dropped {
            let _ = writeln!(
                s,
                "| {} | {} | {} | not estimable: {} | | | | |",
                c.cell,
                c.runs,
                d.factor.as_str(),
                d.reason.replace('|', "\\|")
            );
        }
    }
    let adjusted: Vec<_> = r
        .order
        .iter()
        .flat_map(|c| c.adjusted.iter().map(move |a| (c, a)))
        .collect();
    if adjusted.is_empty() {
        return;
    }
    s.push_str("\nThe adjusted ratio is exp(β) of the arm with the against arm as reference, beside the paired ratio the verdict uses (the study: within 1.1 % in every primary cell).\n\n| cell | arm vs against | adjusted ratio (95 % CI) | paired ratio | difference |\n|---|---|---|---:|---:|\n");
    for (c, a) in adjusted {
        let _ = writeln!(
            s,
            "| {} | {} vs {} | {} ({}–{}) | {} | {:+.2} % |",
            c.cell,
            a.mode,
            a.baseline,
            r3(a.ratio),
            r3(a.ci95[0]),
            r3(a.ci95[1]),
            r3(a.paired_ratio),
            a.difference * 100.0
        );
    }
}

/// Every departure from the pre-registered plan.
fn deviations_section(s: &mut String, r: &Report) {
    let _ = writeln!(s, "\n## Deviations from the plan\n");
    if r.deviations.is_empty() {
        s.push_str("None: every planned run was measured once, in order, and valid; no block was left out, no run stalled, and the analysis used the pre-registered settings.\n");
        return;
    }
    let _ = writeln!(
        s,
        "{} departure(s) from the pre-registered plan. Comparisons resting on settings given at analysis time are exploratory.\n\n| kind | concerns | what happened |\n|---|---|---|",
        r.deviations.len()
    );
    for d in &r.deviations {
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            d.kind.as_str(),
            d.subject,
            d.detail.replace('|', "\\|")
        );
    }
}
