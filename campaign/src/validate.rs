//! The cross-field rules of a campaign that serde cannot express (study section IV-B: a
//! pre-registration that cannot be carried out is refused before anything runs). Each
//! message names the field path and says what is allowed. The rules that need the arms,
//! cells and comparisons the spec expands to ask [`crate::design`].

use std::collections::BTreeSet;

use envelope::Mode;

use crate::spec::{
    API_VERSION, Analysis, CampaignSpec, CellGrid, ComparisonSpec, Interleave, KIND, LoopGrid,
    MAX_CONCURRENCY, MAX_FIXTURES, MAX_RUNS, Manifest, ObjectFormat, Operation, S3ClientKind,
};

/// The most predictions, and the most controls, one campaign declares.
const MAX_DECLARED: usize = 100;

impl Manifest {
    /// Cross-field rules serde cannot express. The message names the field path.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.api_version != API_VERSION {
            return Err(format!(
                "apiVersion: {:?} is not supported; use {API_VERSION}",
                self.api_version
            ));
        }
        if self.kind != KIND {
            return Err(format!("kind: {:?} must be {KIND}", self.kind));
        }
        let n = &self.metadata.name;
        if n.is_empty()
            || n.len() > 63
            || !n
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            || n.starts_with('-')
            || n.ends_with('-')
        {
            return Err(format!(
                "metadata.name: {n:?} must be 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit"
            ));
        }
        self.spec.validate().map_err(|e| format!("spec.{e}"))
    }
}

fn in_open(field: &str, v: f64, lo: f64, hi: f64) -> std::result::Result<(), String> {
    if v.is_finite() && v > lo && v < hi {
        Ok(())
    } else {
        Err(format!(
            "{field}: {v} must lie strictly between {lo} and {hi}"
        ))
    }
}
impl CampaignSpec {
    /// Cross-field rules; the message starts with the field path below `spec`.
    pub fn validate(&self) -> std::result::Result<(), String> {
        // First: everything after this may expand the grids.
        self.validate_scale()?;
        self.validate_arms()?;
        if self.repetitions < 2 {
            return Err(format!(
                "repetitions: {} is too few; a paired comparison needs at least 2 blocks",
                self.repetitions
            ));
        }
        if self.measured.0.is_zero() {
            return Err("measured: must be positive".into());
        }
        if self.cells.is_empty() {
            return Err("cells: list at least one cell".into());
        }
        for (i, c) in self.cells.iter().enumerate() {
            c.validate(self.clients.processes)
                .map_err(|e| format!("cells[{i}].{e}"))?;
        }
        if let Some(i) = &self.interleave {
            if i.slice.0 < Interleave::MIN_SLICE {
                return Err(format!(
                    "interleave.slice: {} is shorter than 10ms; timers and requests in flight would decide the arms' shares",
                    i.slice
                ));
            }
            if i.slice.0 > self.measured.0 {
                return Err(format!(
                    "interleave.slice: {} is longer than measured ({}); every arm needs whole turns in its window",
                    i.slice, self.measured
                ));
            }
            if let Some(k) = self.cells.iter().position(CellGrid::has_open_loop) {
                return Err(format!(
                    "cells[{k}].loop: interleave applies to closed-loop cells only (an open loop's arrivals do not wait for a turn); drop interleave or the open loop"
                ));
            }
        }
        let has_session = self.arm_modes().contains(&Mode::MlKem768Session);
        match &self.sessions {
            Some(_) if !has_session => {
                return Err("sessions: a session grid needs an ml-kem-768-session arm".into());
            }
            Some(s) => {
                if s.max_objects.0.is_empty() || s.max_objects.0.contains(&0) {
                    return Err("sessions.maxObjects: list one or more positive counts".into());
                }
                if s.max_age.0.is_empty() || s.max_age.0.iter().any(|d| d.0.is_zero()) {
                    return Err("sessions.maxAge: list one or more positive durations".into());
                }
            }
            None => {}
        }
        if self.baseline == Mode::MlKem768Session
            && self
                .sessions
                .as_ref()
                .is_some_and(|s| s.max_objects.0.len() * s.max_age.0.len() > 1)
        {
            return Err("baseline: ml-kem-768-session with a session grid is several arms; choose another baseline".into());
        }
        if self.server.minio.is_some() && self.server.external.is_some() {
            return Err("server: give minio or external, not both".into());
        }
        if let Some(x) = &self.server.external
            && (x.endpoint.starts_with("https://") || x.credentials_secret.is_none())
            && let Some(lean) = crate::design::arms(self)
                .into_iter()
                .find(|a| a.client == S3ClientKind::Lean)
        {
            return Err(format!(
                "arms: {} uses the lean S3 client, which speaks plain http with static keys; \
                 server.external ({}{}) needs the aws-sdk client (s3Client: aws-sdk)",
                lean.label,
                x.endpoint,
                if x.credentials_secret.is_none() {
                    ", pod identity"
                } else {
                    ""
                }
            ));
        }
        if let Some(t) = &self.telemetry
            && !(0.0..=1.0).contains(&t.sample_ratio)
        {
            return Err(format!(
                "telemetry.sampleRatio: {} must lie in [0, 1]",
                t.sample_ratio
            ));
        }
        if let Some(t) = &self.telemetry
            && !t.otlp_endpoint.starts_with("http://")
        {
            return Err(format!(
                "telemetry.otlpEndpoint {:?}: use a plaintext http://host:port collector (TLS \
                 export is not supported; put an agent next to the workers)",
                t.otlp_endpoint
            ));
        }
        if self.fixtures == 0
            && self
                .cells
                .iter()
                .any(|c| c.operation.0.contains(&Operation::Get))
        {
            return Err("fixtures: a GET cell needs at least 1 fixture object".into());
        }
        if !(0.0..=1.0).contains(&self.allowed_failure_fraction) {
            return Err(format!(
                "allowedFailureFraction: {} must lie within [0, 1]",
                self.allowed_failure_fraction
            ));
        }
        if self.clients.processes == 0 {
            return Err("clients.processes: must be at least 1".into());
        }
        self.analysis
            .validate()
            .map_err(|e| format!("analysis.{e}"))?;
        self.validate_comparisons()
    }

    /// Refuses a campaign too large to plan or to run, before any grid is expanded: a
    /// mistyped `repetitions: 1000000000` made `pqbench plan` build a billion blocks (the
    /// hostile-input table, `tests/hostile.rs`). The run count is an upper bound (the
    /// session grid multiplies every arm), computed without overflow.
    fn validate_scale(&self) -> std::result::Result<(), String> {
        if self.fixtures > MAX_FIXTURES {
            return Err(format!(
                "fixtures: {} is more than {MAX_FIXTURES} objects written before each GET run",
                self.fixtures
            ));
        }
        for (i, c) in self.cells.iter().enumerate() {
            let loads = match &c.arrival {
                LoopGrid::Closed => c.concurrency.as_ref().map_or(&[][..], |l| &l.0[..]),
                LoopGrid::Open { threads, .. } => std::slice::from_ref(threads),
            };
            if let Some(n) = loads.iter().find(|&&n| n > MAX_CONCURRENCY) {
                return Err(format!(
                    "cells[{i}].{}: {n} workers is more than one run drives ({MAX_CONCURRENCY} at most)",
                    if matches!(c.arrival, LoopGrid::Closed) {
                        "concurrency"
                    } else {
                        "loop.threads"
                    }
                ));
            }
        }
        let len = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let sessions = self.sessions.as_ref().map_or(Some(1), |g| {
            len(g.max_objects.0.len()).checked_mul(len(g.max_age.0.len()))
        });
        let arms = if self.arms.is_empty() {
            len(self.modes.len()).checked_mul(len(self.backends.len().max(1)))
        } else {
            Some(len(self.arms.len()))
        }
        .zip(sessions)
        .and_then(|(a, s)| a.checked_mul(s.max(1)));
        let runs = self.cells.iter().try_fold(0u64, |total, c| {
            let loads = match &c.arrival {
                LoopGrid::Closed => c.concurrency.as_ref().map_or(0, |l| l.0.len()),
                LoopGrid::Open { rates, .. } => rates.0.len(),
            };
            [
                c.operation.0.len(),
                c.object_size.0.len(),
                loads,
                c.client_cores.as_ref().map_or(1, |k| k.0.len()),
            ]
            .into_iter()
            .try_fold(
                u64::from(c.repetitions.unwrap_or(self.repetitions)),
                |n, k| n.checked_mul(len(k)),
            )
            .and_then(|n| n.checked_mul(arms?))
            .and_then(|n| total.checked_add(n))
        });
        match runs {
            Some(n) if n <= MAX_RUNS => Ok(()),
            n => Err(format!(
                "repetitions × arms × cells is {} runs; one campaign plans at most {MAX_RUNS} \
                 (split it, or lower repetitions or the cell lists)",
                n.map_or_else(|| "more than 2^64".to_owned(), |n| n.to_string())
            )),
        }
    }

    fn validate_arms(&self) -> std::result::Result<(), String> {
        match (self.modes.is_empty(), self.arms.is_empty()) {
            (false, false) => {
                return Err("arms: give modes (with backends) or arms, not both".into());
            }
            (true, true) => {
                return Err(
                    "modes: list at least two modes (the baseline and one to compare), or list arms"
                        .into(),
                );
            }
            _ => {}
        }
        let mut seen = BTreeSet::new();
        for (i, m) in self.modes.iter().enumerate() {
            if !seen.insert(m.name()) {
                return Err(format!("modes[{i}]: {m} is listed twice"));
            }
        }
        for (i, a) in self.arms.iter().enumerate() {
            if let Some(n) = &a.name
                && !is_label(n)
            {
                return Err(format!(
                    "arms[{i}].name: {n:?} must be 1-40 lower-case letters, digits or '-'"
                ));
            }
            if let Some(why) = a.format.refuses(a.mode) {
                return Err(format!("arms[{i}].format: {why}"));
            }
            if !a.backend.local().implements(a.mode) {
                return Err(format!(
                    "arms[{i}].backend: {} does not implement {} (libcrux and openssl have no \
                     RSA here); use aws-lc or rustcrypto for this arm",
                    a.backend, a.mode
                ));
            }
            if a.backend.is_remote() {
                if !envelope::REMOTE_MODES.contains(&a.mode) {
                    return Err(format!(
                        "arms[{i}].backend: remote: a key service performs ML-KEM \
                         decapsulation or X25519 agreement, so a remote arm's mode is \
                         ml-kem-768, ml-kem-1024 or x25519, not {}",
                        a.mode
                    ));
                }
                if let Some(k) = &a.kms {
                    k.check(&format!("arms[{i}].kms"))?;
                }
            } else if a.kms.is_some() {
                return Err(format!(
                    "arms[{i}].kms: only a `backend: remote` arm has a key service; set \
                     backend: remote or drop kms"
                ));
            }
            if a.require_pq && a.format == ObjectFormat::V1 {
                return Err(format!(
                    "arms[{i}].requirePq: a format v2 reader's check (a v1 reader opens only its \
                     own mode); set format: v2, v2-prefix, v2.1 or v2.1-prefix, or drop requirePq"
                ));
            }
            if a.require_pq && !a.mode.post_quantum() {
                return Err(format!(
                    "arms[{i}].requirePq: {} is not post-quantum, so the arm's reader would \
                     refuse every object its writer makes; drop requirePq",
                    a.mode
                ));
            }
        }
        let mut modes = self.arm_modes();
        modes.dedup();
        if !modes.contains(&self.baseline) {
            let field = if self.arms.is_empty() {
                "modes"
            } else {
                "arms"
            };
            return Err(format!(
                "baseline: {} is not the mode of any arm ({field}: {})",
                self.baseline,
                modes
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.backends.is_empty() {
            return Err(
                "backends: list at least one backend (aws-lc, rustcrypto, libcrux, openssl)".into(),
            );
        }
        for (j, b) in self.backends.iter().enumerate() {
            if let Some((i, m)) = self
                .modes
                .iter()
                .enumerate()
                .find(|(_, m)| !b.implements(**m))
            {
                return Err(format!(
                    "backends[{j}]: {b} does not implement modes[{i}] {m} (libcrux and openssl have no \
                     RSA here); list arms to pair each mode with the backends that implement it"
                ));
            }
        }
        let mut seen = BTreeSet::new();
        for (i, b) in self.backends.iter().enumerate() {
            if !seen.insert(b.name()) {
                return Err(format!("backends[{i}]: {} is listed twice", b.name()));
            }
        }
        let arms = crate::design::arms(self);
        let mut seen = BTreeSet::new();
        for a in &arms {
            if !seen.insert(a.label.as_str()) {
                return Err(format!(
                    "arms: two arms are labelled {:?}; give them distinct names",
                    a.label
                ));
            }
        }
        if arms.len() < 2 {
            let field = if self.arms.is_empty() {
                "modes"
            } else {
                "arms"
            };
            return Err(format!(
                "{field}: list at least two modes (the baseline and one to compare), or set aaControl"
            ));
        }
        Ok(())
    }

    fn validate_comparisons(&self) -> std::result::Result<(), String> {
        let arms = crate::design::arms(self);
        let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
        let known = |field: String, l: &str| {
            if labels.contains(&l) {
                Ok(())
            } else {
                Err(format!(
                    "{field}: {l:?} is not an arm of this campaign; its arms are: {}",
                    labels.join(", ")
                ))
            }
        };
        let mut seen = BTreeSet::new();
        for (i, c) in self.analysis.comparisons.iter().enumerate() {
            known(format!("analysis.comparisons[{i}].arm"), &c.arm)?;
            known(format!("analysis.comparisons[{i}].against"), &c.against)?;
            if c.arm == c.against {
                return Err(format!(
                    "analysis.comparisons[{i}]: {} against itself compares nothing",
                    c.arm
                ));
            }
            if !seen.insert((&c.arm, &c.against)) {
                return Err(format!(
                    "analysis.comparisons[{i}]: {} against {} is listed twice",
                    c.arm, c.against
                ));
            }
        }
        let comparisons = crate::design::comparisons(self, &arms);
        let ids: BTreeSet<String> = crate::design::cells(self)
            .into_iter()
            .map(|c| c.id)
            .collect();
        for (i, p) in self.analysis.primary.iter().enumerate() {
            if !ids.contains(&p.cell) {
                return Err(format!(
                    "analysis.primary[{i}].cell: {:?} is not a cell of this campaign; its cells are: {}",
                    p.cell,
                    ids.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
            match (&p.arm, &p.against) {
                (None, None) => {}
                (Some(a), Some(b)) => {
                    if !comparisons.iter().any(|c| &c.arm == a && &c.against == b) {
                        return Err(format!(
                            "analysis.primary[{i}]: {a} against {b} is not one of the comparisons ({}); \
                             declare it in analysis.comparisons",
                            comparisons
                                .iter()
                                .map(|c| format!("{} vs {}", c.arm, c.against))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
                _ => {
                    return Err(format!(
                        "analysis.primary[{i}]: give both arm and against, or neither (every comparison of the cell)"
                    ));
                }
            }
        }
        self.validate_predictions(&comparisons, &ids)?;
        self.validate_controls(&labels)
    }

    /// Each prediction names a cell and a declared comparison, with a positive ratio.
    fn validate_predictions(
        &self,
        comparisons: &[ComparisonSpec],
        cells: &BTreeSet<String>,
    ) -> std::result::Result<(), String> {
        let predictions = &self.analysis.predictions;
        if predictions.len() > MAX_DECLARED {
            return Err(format!(
                "analysis.predictions: {} predictions; at most {MAX_DECLARED}",
                predictions.len()
            ));
        }
        for (i, p) in predictions.iter().enumerate() {
            let field = format!("analysis.predictions[{i}]");
            if !cells.contains(&p.cell) {
                return Err(format!(
                    "{field}.cell: {:?} is not a cell of this campaign",
                    p.cell
                ));
            }
            if !comparisons
                .iter()
                .any(|c| c.arm == p.arm && c.against == p.against)
            {
                return Err(format!(
                    "{field}: {} against {} is not one of the comparisons; a prediction is scored against a comparison, so declare it in analysis.comparisons",
                    p.arm, p.against
                ));
            }
            if !(p.ratio.is_finite() && p.ratio > 0.0 && p.ratio < 10.0) {
                return Err(format!(
                    "{field}.ratio: {} must lie strictly between 0 and 10",
                    p.ratio
                ));
            }
            if p.source.as_ref().is_some_and(|s| s.chars().count() > 200) {
                return Err(format!("{field}.source: at most 200 characters"));
            }
        }
        Ok(())
    }

    /// Each control names three distinct arms of the campaign.
    fn validate_controls(&self, labels: &[&str]) -> std::result::Result<(), String> {
        let controls = &self.analysis.controls;
        if controls.len() > MAX_DECLARED {
            return Err(format!(
                "analysis.controls: {} controls; at most {MAX_DECLARED}",
                controls.len()
            ));
        }
        for (i, c) in controls.iter().enumerate() {
            for (key, l) in [
                ("arm", &c.arm),
                ("control", &c.control),
                ("against", &c.against),
            ] {
                if !labels.contains(&l.as_str()) {
                    return Err(format!(
                        "analysis.controls[{i}].{key}: {l:?} is not an arm of this campaign; its arms are: {}",
                        labels.join(", ")
                    ));
                }
            }
            if c.arm == c.control || c.arm == c.against || c.control == c.against {
                return Err(format!(
                    "analysis.controls[{i}]: arm, control and against must be three different arms"
                ));
            }
        }
        Ok(())
    }
}

/// An arm label: 1–40 lower-case letters, digits or '-' (it goes into run ids, directory
/// names and Kubernetes object names).
fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

impl CellGrid {
    fn validate(&self, processes: u32) -> std::result::Result<(), String> {
        if self.operation.0.is_empty() {
            return Err("operation: list put, get or both".into());
        }
        if self.object_size.0.is_empty() {
            return Err("objectSize: list at least one size".into());
        }
        for (i, s) in self.object_size.0.iter().enumerate() {
            if s.0 > envelope::MAX_PLAINTEXT_SIZE {
                return Err(format!("objectSize[{i}]: {s} exceeds the format's maximum"));
            }
        }
        if let Some(r) = self.repetitions
            && r < 2
        {
            return Err(format!("repetitions: {r} is too few; at least 2"));
        }
        if let Some(k) = &self.client_cores {
            if k.0.is_empty() {
                return Err("clientCores: list at least one core count, e.g. [1]".into());
            }
            if let Some(i) = k.0.iter().position(|&n| n == 0) {
                return Err(format!("clientCores[{i}]: must be at least 1"));
            }
            if let Some(i) = k.0.iter().position(|&n| n < processes) {
                return Err(format!(
                    "clientCores[{i}]: {} is below clients.processes ({processes}); each process \
                     needs a core of its own, or the processes preempt each other between stage \
                     timers and fail the unaccounted-time check",
                    k.0[i]
                ));
            }
        }
        match (&self.arrival, &self.concurrency) {
            (LoopGrid::Closed, None) => {
                Err("concurrency: a closed-loop cell needs concurrency (a list, e.g. [4])".into())
            }
            (LoopGrid::Closed, Some(c)) => {
                if c.0.is_empty() {
                    return Err("concurrency: list at least one value".into());
                }
                for (i, &n) in c.0.iter().enumerate() {
                    if n == 0 {
                        return Err(format!("concurrency[{i}]: must be at least 1"));
                    }
                    if n < processes {
                        return Err(format!(
                            "concurrency[{i}]: {n} is below clients.processes ({processes}); every process needs a worker"
                        ));
                    }
                }
                Ok(())
            }
            (LoopGrid::Open { .. }, Some(_)) => Err(
                "concurrency: an open-loop cell takes its workers from loop.threads; remove concurrency".into(),
            ),
            (LoopGrid::Open { rates, threads }, None) => {
                if *threads == 0 || *threads < processes {
                    return Err(format!(
                        "loop.threads: {threads} must be at least 1 and at least clients.processes ({processes})"
                    ));
                }
                if rates.0.is_empty() {
                    return Err("loop.rates: list at least one offered rate (requests/s)".into());
                }
                for (i, r) in rates.0.iter().enumerate() {
                    if !(r.is_finite() && *r > 0.0) {
                        return Err(format!(
                            "loop.rates[{i}]: {r} must be a positive number of requests per second"
                        ));
                    }
                }
                Ok(())
            }
        }
    }
}

impl Analysis {
    fn validate(&self) -> std::result::Result<(), String> {
        in_open("margin", self.margin, 0.0, 0.5)?;
        in_open("alpha", self.alpha, 0.0, 0.5)?;
        for (i, m) in self.sensitivity_margins.iter().enumerate() {
            in_open(&format!("sensitivityMargins[{i}]"), *m, 0.0, 0.5)?;
        }
        if self.bootstrap_resamples < 1000 {
            return Err(format!(
                "bootstrapResamples: {} is too few for a 90 % percentile interval; use at least 1000 (the study used 20000)",
                self.bootstrap_resamples
            ));
        }
        in_open("deficitThreshold", self.deficit_threshold, 0.0, 0.5)?;
        in_open(
            "stallRule.serverCpuFactor",
            self.stall_rule.server_cpu_factor,
            0.0,
            1.0,
        )?;
        in_open(
            "stallRule.throughputFactor",
            self.stall_rule.throughput_factor,
            0.0,
            1.0,
        )?;
        in_open("power", self.power, 0.0, 1.0)?;
        if let Some(sd) = self.assumed_sd {
            in_open("assumedSd", sd, 0.0, 2.0)?;
        }
        if self.pilot.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(
                "pilot: give the results directory of an earlier campaign, or leave pilot out"
                    .into(),
            );
        }
        let mut seen = BTreeSet::new();
        for (i, p) in self.primary.iter().enumerate() {
            if !seen.insert((&p.cell, &p.arm, &p.against)) {
                return Err(format!("primary[{i}]: {:?} is listed twice", p.cell));
            }
        }
        Ok(())
    }
}
