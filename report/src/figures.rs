//! The study's absolute figures as sections of `report.md`: key establishment per request
//! (study Tables VII and VIII, Finding 1) and its share of the request against object size
//! (Fig. 2); CPU, memory and the spread of throughput per arm (Table X, section VI); the
//! exploratory campaign's original interval rule (Table XIV); advance predictions scored
//! (section IV-C).

use std::fmt::Write as _;

use analysis::Report;
use analysis::absolute::KemTime;
use analysis::words::{mean_ci, share_pct, sig3};
use stats::describe::MeanInterval;

fn opt_mean_ci(m: Option<&MeanInterval>) -> String {
    m.map_or_else(|| "–".into(), mean_ci)
}

fn size(k: &KemTime) -> String {
    k.object_size
        .map_or_else(|| "–".into(), |b| campaign::units::Size(b).to_string())
}

fn op(k: &KemTime) -> &'static str {
    k.operation.map_or("–", campaign::spec::Operation::as_str)
}

/// Key establishment per request at one worker, and its share of the request (Tables VII
/// and VIII, Fig. 2).
pub(crate) fn kem_section(s: &mut String, r: &Report) {
    if r.kem_times.is_empty() {
        return;
    }
    s.push_str("\n## Key establishment per request (study V-A, Tables VII and VIII; V-B, Fig. 2)\n\nAt one worker (closed loop), per arm: the key-establishment stage's time per request (PUT encapsulates, GET decapsulates), mean over runs with its 95 % t interval; the mean request time (10⁶ ÷ throughput at one worker) and the median latency; and the key establishment's share of the request, mean KEM ÷ mean request time. Descriptive, unadjusted, as the study's tables.\n\n| cell | arm | mode | backend | op | object | runs | KEM µs [95 % CI] | request ms [95 % CI] | KEM share | median latency ms |\n|---|---|---|---|---|---:|---:|---|---|---:|---:|\n");
    for k in &r.kem_times {
        let ms = MeanInterval {
            mean: k.request_us.mean / 1e3,
            sd: k.request_us.sd / 1e3,
            ci: (k.request_us.ci.0 / 1e3, k.request_us.ci.1 / 1e3),
            n: k.request_us.n,
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            k.cell,
            k.arm,
            k.mode.as_deref().unwrap_or("–"),
            k.backend.as_deref().unwrap_or("–"),
            op(k),
            size(k),
            k.key_establishment_us.n,
            mean_ci(&k.key_establishment_us),
            mean_ci(&ms),
            share_pct(k.kem_share),
            k.latency_p50_ms.map_or_else(|| "–".into(), sig3)
        );
    }
    s.push_str("\nIn words:\n\n");
    for k in &r.kem_times {
        let _ = writeln!(s, "- {}", k.in_words());
    }
}

/// Where the extra CPU of each client-saturated comparison goes (V-C).
pub(crate) fn cpu_split_section(s: &mut String, r: &Report) {
    if r.cpu_splits.is_empty() {
        return;
    }
    s.push_str("\n## Where the extra CPU goes at saturation (study V-C)\n\nIn each client-saturated cell: the extra client CPU per request of the arm over the one it is compared with (a paired difference with its 95 % interval), against the difference of their key-establishment times at one worker for the same operation and object size, where stage timers are not distorted by waiting: the part of the extra CPU that is key recovery, and the rest (the study's native reader: 17 of 36 µs).\n\n| cell | arm vs against | extra CPU µs [95 % CI] | one-worker cell | key establishment µs | share | rest µs |\n|---|---|---|---|---:|---:|---:|\n");
    for x in &r.cpu_splits {
        let d = &x.extra_cpu_us;
        let _ = writeln!(
            s,
            "| {} | {} vs {} | {} [{}–{}] | {} | {} | {} | {} |",
            x.cell,
            x.arm,
            x.against,
            sig3(d.mean),
            sig3(d.ci95.0),
            sig3(d.ci95.1),
            x.one_worker_cell.as_deref().unwrap_or("–"),
            x.key_recovery_us.map_or_else(|| "–".into(), sig3),
            x.key_recovery_share.map_or_else(|| "–".into(), share_pct),
            match (x.key_recovery_us, x.key_recovery_share) {
                (Some(k), Some(_)) => sig3(d.mean - k),
                _ => "–".into(),
            }
        );
    }
    s.push_str("\nIn words:\n\n");
    for x in &r.cpu_splits {
        let _ = writeln!(s, "- {}", x.in_words());
    }
}

/// CPU, memory and the spread of throughput per cell and arm (Table X, section VI).
pub(crate) fn resources_section(s: &mut String, r: &Report) {
    if r.resources.is_empty() {
        return;
    }
    s.push_str("\n## CPU, memory and spread per arm (study Table X, section VI)\n\nPer cell and arm (closed loop), means over runs with 95 % t intervals: client and server CPU per request (server: its cores ÷ throughput), the server's and the client's resident-memory growth over the measured window (the server's figures are left out for interleaved runs, whose window holds every arm's turns on the one server), and the coefficient of variation of throughput across runs (the study: at most 2.2 % in six of its eight primary cells, 4–9 % at its server-bound small PUTs).\n\n| cell | arm | runs | client CPU µs/request | server CPU µs/request | server RSS growth MiB | client RSS growth MiB | throughput CV |\n|---|---|---:|---|---|---|---|---:|\n");
    for x in &r.resources {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            x.cell,
            x.arm,
            x.runs,
            opt_mean_ci(x.client_cpu_per_request_us.as_ref()),
            opt_mean_ci(x.server_cpu_per_request_us.as_ref()),
            opt_mean_ci(x.server_rss_growth_mib.as_ref()),
            opt_mean_ci(x.client_rss_growth_mib.as_ref()),
            x.throughput_cv
                .map_or_else(|| "–".into(), |v| format!("{:.1} %", v * 100.0))
        );
    }
}

/// The key service's CPU per request of each remote arm (issue 41), beside the client's:
/// what a decapsulation in the key service costs it. Only arms whose runs measured it.
pub(crate) fn key_service_section(s: &mut String, r: &Report) {
    let rows: Vec<_> = r
        .resources
        .iter()
        .filter(|x| x.key_service_cpu_per_request_us.is_some())
        .collect();
    if rows.is_empty() {
        return;
    }
    s.push_str("\n## The key service (remote arms)\n\nPer cell and remote arm (closed loop), means over runs with 95 % t intervals: the key service process's CPU per request (its cores, sampled from its `/metrics` each second as the S3 server's, ÷ throughput), beside the client's. Interleaved runs are left out: their window holds the other remote arms' turns on the same service.\n\n| cell | arm | runs | key service CPU µs/request | client CPU µs/request |\n|---|---|---:|---|---|\n");
    for x in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            x.cell,
            x.arm,
            x.runs,
            opt_mean_ci(x.key_service_cpu_per_request_us.as_ref()),
            opt_mean_ci(x.client_cpu_per_request_us.as_ref()),
        );
    }
}

/// The testbed's ceilings and what bounds each cell (`analysis::testbed`).
pub(crate) fn bottleneck_section(s: &mut String, r: &Report) {
    use analysis::testbed::{REACHED, Resource};
    if r.bottlenecks.is_empty() {
        return;
    }
    s.push_str("\n## Ceilings and bottlenecks (study IV-A, V-B)\n\n");
    match &r.config.baselines {
        Some(b) => {
            let _ = writeln!(
                s,
                "The testbed's ceilings, measured on {} before the first run (baselines.json): {}.\n",
                b.site,
                analysis::words::baselines(b)
            );
        }
        None => s.push_str("No testbed baselines were taken (no baselines.json; `testbed.baselines`), so only the CPUs are judged.\n\n"),
    }
    let _ = write!(
        s,
        "Each cell's use of each ceiling, the mean over its runs (every arm) with its 95 % t interval: client cores used ÷ available; the server's cores used ÷ its cores; requests per second × the bytes of the busier direction ÷ iperf3's rate that way; the server host's disk writes ÷ fio's rate (writes still in the page cache do not count). A ceiling is reached at {} % of it ({} % for the CPUs, the saturation check's threshold); a cell is bound by the reached ceiling it uses most, and latency-bound when it reaches none: its closed loop waits on round trips with every resource to spare.\n\n| cell | bound by | client CPU | server CPU | network | disk |\n|---|---|---|---|---|---|\n",
        sig3(REACHED * 100.0),
        sig3(stats::regime::SATURATION * 100.0)
    );
    for c in &r.bottlenecks {
        let cell = |res: Resource| {
            c.usage_of(res).map_or_else(
                || "–".to_owned(),
                |u| {
                    let v = u.share_words();
                    if u.reached { format!("**{v}**") } else { v }
                },
            )
        };
        let used: Vec<String> = Resource::ALL.map(cell).to_vec();
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            c.cell,
            c.label_word(),
            used.join(" | ")
        );
    }
    let mut unjudged: Vec<&str> = r
        .bottlenecks
        .iter()
        .flat_map(|c| c.unjudged.iter().map(String::as_str))
        .collect();
    unjudged.sort_unstable();
    unjudged.dedup();
    if !unjudged.is_empty() {
        s.push_str("\nNot judged (–): ");
        s.push_str(&unjudged.join("; "));
        s.push_str(".\n");
    }
}

/// The exploratory campaign's original rule (Table XIV): per pair of arms, how many cells'
/// 95 % intervals lie inside the margin band, outside it, or across it.
pub(crate) fn interval_rule_section(s: &mut String, r: &Report) {
    let counts = r.interval_rule_counts();
    if counts.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "\n## The original interval rule (study Table XIV)\n\nThe study's exploratory campaign judged each cell by its 95 % interval alone: equivalent inside ±{} %, different entirely outside, inconclusive across the band; no test and no multiplicity control, so these counts describe and do not confirm (the study: 38 equivalent, 6 inconclusive, 0 different over 44 cells). Each comparison's own call is in report.json (`interval_rule`).\n\n| arm vs against | cells | equivalent | inconclusive | different |\n|---|---:|---:|---:|---:|\n",
        analysis::words::plain(r.config.analysis.margin * 100.0)
    );
    for ((arm, against), [eq, inc, diff]) in &counts {
        let _ = writeln!(
            s,
            "| {arm} vs {against} | {} | {eq} | {inc} | {diff} |",
            eq + inc + diff
        );
    }
}

/// The study's published figures beside this campaign's (`analysis::study`).
pub(crate) fn study_section(s: &mut String, r: &Report) {
    if r.study.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "\n## Study comparison\n\nEvery figure pqbench measures the way the study does, its published value (quoted, with its table) beside this campaign's. They agree when the study's value lies inside this campaign's 95 % interval (a time), when the 90 % intervals overlap (a ratio), when they are equal (bytes), within ±{} % (a figure without an interval) or when the bound holds. \"Differ\" is not \"wrong\": the study's client is Python through liboqs-python on a 16-vCPU x86 host against MinIO on another host; pqbench's is compiled Rust against this campaign's store, and each row says which difference bears on it.\n\n| source | figure | study | this campaign | where | agreement | why |\n|---|---|---|---|---|---|---|\n",
        analysis::study::TOLERANCE * 100.0
    );
    for x in &r.study {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | **{}** | {} |",
            x.source,
            x.what,
            x.study,
            x.pqbench.as_deref().unwrap_or("–"),
            x.subject.as_deref().unwrap_or("–"),
            x.agreement.as_str(),
            if x.why.is_empty() { "–" } else { &x.why }
        );
    }
    s.push_str("\nThe study's words:\n\n");
    let mut seen = std::collections::BTreeSet::new();
    for x in &r.study {
        if seen.insert(&x.quote) {
            let _ = writeln!(s, "- {}: \"{}\"", x.source, x.quote);
        }
    }
}

/// Advance predictions against the measured ratios (section IV-C).
pub(crate) fn predictions_section(s: &mut String, r: &Report) {
    if r.predictions.is_empty() {
        return;
    }
    s.push_str("\n## Predictions (study IV-C)\n\nRatios declared before the campaign (`analysis.predictions`) against the measured paired ratio. A prediction holds when it lies inside the measured 95 % interval; the error is measured ÷ predicted − 1.\n\n| cell | arm vs against | predicted | source | measured [95 % CI] | error | held |\n|---|---|---:|---|---|---:|---|\n");
    for p in &r.predictions {
        let measured = match (p.observed, p.ci95) {
            (Some(o), Some(ci)) => format!("{o:.3} [{:.3}–{:.3}]", ci[0], ci[1]),
            _ => p.note.clone().unwrap_or_else(|| "–".into()),
        };
        let _ = writeln!(
            s,
            "| {} | {} vs {} | {:.3} | {} | {measured} | {} | {} |",
            p.cell,
            p.arm,
            p.against,
            p.predicted,
            p.source.as_deref().unwrap_or("–"),
            p.error
                .map_or_else(|| "–".into(), |e| format!("{:+.1} %", e * 100.0)),
            match p.held {
                Some(true) => "**yes**",
                Some(false) => "**no**: missed",
                None => "–",
            }
        );
    }
    s.push_str("\nIn words:\n\n");
    for p in &r.predictions {
        let _ = writeln!(s, "- {}", p.in_words());
    }
}

/// The implementations the runs ran on and their interop matrix (`analysis::implementations`).
pub(crate) fn implementations_section(s: &mut String, r: &Report) {
    let Some(imp) = &r.config.implementations else {
        return;
    };
    s.push_str("\n## Implementations and interop\n\n");
    let _ = writeln!(
        s,
        "Before timing, each run's worker sealed a 70,000-byte object on every backend and opened it on every backend, in every mode the backend implements and in both formats (v2 where the mode has a suite): {} (merged over {} runs; a round trip counts as failed if it failed in any run).\n",
        imp.headline(),
        imp.runs
    );
    s.push_str("| backend | crates | CPU features it can use | hosts |\n|---|---|---|---|\n");
    for b in &imp.backends {
        let features = if b.info.cpu_features.is_empty() {
            "none (portable code)".to_owned()
        } else {
            b.info.cpu_features.join(", ")
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            b.info.backend,
            b.info.crates.join(", "),
            features,
            b.hosts.join(", ")
        );
    }
    s.push_str("\n| mode | format | round trips | failed (sealer → opener) |\n|---|---|---|---|\n");
    let mut groups = Vec::new();
    for c in &imp.cells {
        if !groups.contains(&(c.mode, c.format)) {
            groups.push((c.mode, c.format));
        }
    }
    for (mode, format) in groups {
        let cells: Vec<_> = imp
            .cells
            .iter()
            .filter(|c| c.mode == mode && c.format == format)
            .collect();
        let failed: Vec<String> = cells
            .iter()
            .filter(|c| !c.ok())
            .map(|c| {
                format!(
                    "{} → {}: {}",
                    c.sealer,
                    c.opener,
                    c.error.as_deref().unwrap_or("")
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "| {mode} | {} | {} of {} | {} |",
            format.name(),
            cells.len() - failed.len(),
            cells.len(),
            if failed.is_empty() {
                "–".to_owned()
            } else {
                failed.join("; ")
            }
        );
    }
}
