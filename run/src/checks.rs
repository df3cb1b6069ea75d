//! The validator's rules over a data set's runs (study section IV-A: "A validator checks
//! every data set before analysis and refuses it if any check fails"), as pure functions of
//! what was read. Reading the files, their checksums and their schema is the `worker`
//! crate's (`worker::validate`, `pqbench validate`).

use std::collections::BTreeMap;

use crate::digest::Digest;
use crate::runspec::RunSpec;
use crate::summary::{
    PauseTaken, ProcessInfo, UNACCOUNTED_AGGREGATE_LIMIT, pause_check, record_checks,
};

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Check name.
    pub check: &'static str,
    /// Where (a file, a process directory or a run).
    pub location: String,
    /// Passed?
    pub passed: bool,
    /// What was found.
    pub detail: String,
}

/// One process of a run, as read from its directory.
#[derive(Clone, Debug)]
pub struct Process {
    /// Its spec as run.
    pub spec: RunSpec,
    /// `process.json`.
    pub info: ProcessInfo,
    /// Its records, folded.
    pub digest: Digest,
}

/// The checks of every run (its processes by run id) and of the whole data set: each run
/// has all the processes its spec names (`complete`), the record checks of the run summary
/// over all its processes' records, the pauses its processes took (`pause_quiet`), and the
/// unaccounted time over the data set.
pub fn data_set_checks(runs: &BTreeMap<String, Vec<Process>>) -> Vec<Finding> {
    let mut out = Vec::new();
    let (mut un, mut tot) = (0.0, 0.0);
    for (run, parts) in runs {
        let Some(first) = parts.first() else {
            continue;
        };
        let spec = &first.spec;
        let mut seen: Vec<u32> = parts.iter().map(|p| p.info.index).collect();
        seen.sort_unstable();
        let want: Vec<u32> = (0..spec.processes.count).collect();
        out.push(Finding {
            check: "complete",
            location: format!("run {run}"),
            passed: seen == want,
            detail: format!("processes {seen:?} of {} expected", spec.processes.count),
        });
        let mut all = Digest::default();
        for p in parts {
            all.merge(&p.digest);
        }
        for c in record_checks(spec, &all) {
            let check = match c.name.as_str() {
                "stage_sum" => "stage_sum",
                "unaccounted_p99" => "unaccounted_p99",
                "unaccounted_aggregate" => "unaccounted_aggregate",
                "session_bounds" => "session_bounds",
                "drift" => "drift",
                _ => "failures",
            };
            out.push(Finding {
                check,
                location: format!("run {run}"),
                passed: c.passed,
                detail: c.detail,
            });
        }
        let pauses: Vec<(u32, &PauseTaken)> = parts
            .iter()
            .filter_map(|p| p.info.pause.as_ref().map(|t| (p.info.index, t)))
            .collect();
        if let Some(c) = pause_check(spec.pause.as_ref(), &pauses) {
            out.push(Finding {
                check: "pause_quiet",
                location: format!("run {run}"),
                passed: c.passed,
                detail: c.detail,
            });
        }
        un += all.unaccounted_s_sum;
        tot += all.total_s_sum;
    }
    if !runs.is_empty() {
        let agg = if tot > 0.0 { un / tot } else { 0.0 };
        out.push(Finding {
            check: "unaccounted_aggregate",
            location: "data set".into(),
            passed: agg < UNACCOUNTED_AGGREGATE_LIMIT,
            detail: format!(
                "unaccounted time is {:.3} % of all request time over {} runs (limit {} %)",
                agg * 100.0,
                runs.len(),
                UNACCOUNTED_AGGREGATE_LIMIT * 100.0
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::time::Duration;

    use super::*;
    use crate::records::{Outcome, Record, RequestPhase};

    const SPEC: &str = "
runId: r0001
cell: {mode: x25519, operation: get, objectSize: 1KiB, concurrency: 2}
s3: {endpoint: 'http://127.0.0.1:9000', bucket: b}
recipientKey: {file: /keys/x25519.key}
processes: {count: 2, index: 0}
output: {dir: /tmp/out}
";

    fn process(index: u32, unaccounted_us: u64) -> Process {
        let us = Duration::from_micros;
        let rec = |seq| Record {
            worker: index,
            seq,
            phase: Some(RequestPhase::Measured),
            outcome: Some(Outcome::Ok),
            total: us(1000),
            storage: us(1000 - unaccounted_us),
            ..Record::default()
        };
        Process {
            spec: RunSpec::parse(SPEC, "spec").unwrap(),
            info: ProcessInfo {
                index,
                ..ProcessInfo::default()
            },
            digest: {
                let spec = RunSpec::parse(SPEC, "spec").unwrap();
                let records: Vec<Record> = (0..200).map(rec).collect();
                Digest::of(&spec, &records)
            },
        }
    }

    fn find<'a>(f: &'a [Finding], check: &str, location: &str) -> &'a Finding {
        f.iter()
            .find(|x| x.check == check && x.location == location)
            .unwrap_or_else(|| panic!("no {check} at {location}: {f:?}"))
    }

    #[test]
    fn a_run_needs_every_process_and_the_data_set_its_unaccounted_time_bound() {
        let mut runs = BTreeMap::new();
        runs.insert("r0001".to_owned(), vec![process(0, 1), process(1, 1)]);
        let f = data_set_checks(&runs);
        assert!(find(&f, "complete", "run r0001").passed);
        assert!(
            find(&f, "unaccounted_aggregate", "data set").passed,
            "{f:?}"
        );
        // One process missing; 5 % of every request unaccounted.
        runs.insert("r0001".to_owned(), vec![process(1, 50)]);
        let f = data_set_checks(&runs);
        let complete = find(&f, "complete", "run r0001");
        assert!(!complete.passed);
        assert_eq!(complete.detail, "processes [1] of 2 expected");
        assert!(!find(&f, "unaccounted_aggregate", "data set").passed);
        assert!(!find(&f, "unaccounted_p99", "run r0001").passed);
    }

    /// Issue 18: a pause that waited `maxWait` without the server host going quiet fails
    /// `pause_quiet`, in the run summary (the run is invalid) and in the validator.
    #[test]
    fn a_pause_that_gave_up_invalidates_the_run() {
        use campaign::units::{Dur, Size};

        use crate::runspec::PauseRule;
        use crate::summary::{PauseTaken, ProcessData, summarize};

        let rule = PauseRule {
            max_dirty: Size(32 << 20),
            max_disk_write_per_s: Size(5 << 20),
            quiet_for: Dur(Duration::from_secs(2)),
            max_wait: Dur(Duration::from_secs(40)),
        };
        let with_pause = |pause: Option<PauseTaken>| {
            let mut p = process(0, 1);
            p.spec.pause = pause.is_some().then_some(rule);
            p.info.pause = pause;
            p
        };
        let summary = |p: &Process| {
            summarize(
                &p.spec,
                &[ProcessData {
                    info: p.info.clone(),
                    digest: p.digest.clone(),
                    samples: Vec::new(),
                }],
            )
        };
        let check = |s: &crate::summary::RunSummary| {
            s.checks.iter().find(|c| c.name == "pause_quiet").cloned()
        };

        // Gave up: 300 MiB dirty at the last reading, 12 MiB/s written.
        let gave_up = with_pause(Some(PauseTaken {
            waited_s: 40.2,
            quiet: false,
            last_dirty_bytes: Some(f64::from(300u32 << 20)),
            last_disk_write_per_s: Some(f64::from(12u32 << 20)),
        }));
        let s = summary(&gave_up);
        let c = check(&s).expect("a pause was taken: pause_quiet is checked");
        assert!(!c.passed && !s.valid, "{:?}", s.checks);
        assert_eq!(
            c.detail,
            "process 0: the pause gave up after 40.2 s (maxWait 40s) without the server host \
             quiet for 2s; last reading: dirty + write-back 300.0 MiB (maxDirty 32MiB), disk \
             writes 12.0 MiB/s (maxDiskWritePerS 5MiB/s)"
        );
        assert!(crate::summary::render(&s).contains("FAILED pause_quiet: process 0"));
        // Every other check passes: the pause alone makes the run invalid.
        assert!(s.checks.iter().all(|c| c.passed || c.name == "pause_quiet"));
        let mut runs = BTreeMap::new();
        runs.insert("r0001".to_owned(), vec![gave_up]);
        let f = find(&data_set_checks(&runs), "pause_quiet", "run r0001").clone();
        assert!(!f.passed && f.detail == c.detail, "{f:?}");

        // Quiet after 3.1 s: passes, the run is valid.
        let quiet = with_pause(Some(PauseTaken {
            waited_s: 3.1,
            quiet: true,
            last_dirty_bytes: Some(1e6),
            last_disk_write_per_s: Some(0.0),
        }));
        let s = summary(&quiet);
        let c = check(&s).expect("pause_quiet");
        assert!(c.passed && s.valid, "{:?}", s.checks);
        assert_eq!(
            c.detail,
            "every pause found the server host quiet (1 process, longest wait 3.1 s)"
        );
        runs.insert("r0001".to_owned(), vec![quiet]);
        assert!(find(&data_set_checks(&runs), "pause_quiet", "run r0001").passed);

        // No pause taken (none set, or no view of the server host): nothing to check.
        let none = with_pause(None);
        let s = summary(&none);
        assert!(check(&s).is_none() && s.valid, "{:?}", s.checks);
        runs.insert("r0001".to_owned(), vec![none]);
        assert!(
            data_set_checks(&runs)
                .iter()
                .all(|f| f.check != "pause_quiet")
        );
    }
}
