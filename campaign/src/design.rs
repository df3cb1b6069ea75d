//! The design of a campaign (study section IV-B): cells × arms × repetitions in randomized
//! complete blocks, and the pre-registration hash.
//!
//! - Cells: each `cells` entry expands to operation × object size × concurrency (closed
//!   loop) or × offered rate (open loop), × client cores. A cell's id is
//!   `<op>-<size>-c<concurrency>` (closed) or `<op>-<size>-r<rate>-t<threads>` (open),
//!   with `-cores<k>` appended when the cell confines its clients ([`cells`]).
//! - Arms: (mode, backend, S3 client) triples: `arms` as listed, or `modes` × `backends` on
//!   `clients.s3Client`. A listed arm's
//!   label is its `name`, else its mode's name; a shorthand arm's is its mode's name, with
//!   `-<backend>` when `backends` lists more than one;
//!   with a session grid, `ml-kem-768-session` becomes one arm per `maxObjects` × `maxAge`
//!   pair (`ml-kem-768-session-b10-t1s`); an A/A control adds `<baseline arm>-aa`
//!   ([`arms`]). Every arm runs in every block of every cell.
//! - Comparisons: `analysis.comparisons`, or by default every arm against the baseline
//!   mode's arm on the same backend and S3 client ([`comparisons`]).
//! - Blocks: one block per cell and repetition holds every arm once, in an order shuffled
//!   from the seed; then the order of all blocks is shuffled from the seed. Modes are
//!   compared only within a block ([`plan`]).
//! - The shuffles are Fisher–Yates driven by ChaCha8 seeded with the campaign seed, written
//!   out here rather than taken from `rand`, so that the plan depends on nothing but the
//!   spec: the same YAML gives the same plan, byte for byte, whatever library versions.
//! - The pre-registration hash is the SHA-256 of the spec's RFC 8785 canonical JSON
//!   (defaults filled in, so formatting and comments do not change it) ([`prereg_hash`]).

use std::collections::BTreeMap;
use std::time::Duration;

use envelope::{Backend, Mode};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::spec::{
    CampaignSpec, ComparisonSpec, KmsSpec, LoopGrid, Manifest, ObjectFormat, Operation,
    S3ClientKind,
};
use crate::units::{Dur, Size, format_duration};

/// How requests arrive in one cell.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Arrival {
    /// Back to back.
    Closed,
    /// Poisson arrivals at `rate` requests/s.
    Open {
        /// Offered rate, requests/s over the whole run.
        rate: f64,
    },
}

/// One cell of the design.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CellDef {
    /// The id the analysis and `analysis.primary` use.
    pub id: String,
    /// PUT or GET.
    pub operation: Operation,
    /// Plaintext size.
    pub object_size: Size,
    /// Workers (closed loop) or serving threads (open loop).
    pub concurrency: u32,
    /// Closed or open loop.
    pub arrival: Arrival,
    /// Cores the run's worker processes are confined to (`clientCores`), if the cell says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cores: Option<u32>,
    /// Blocks of this cell.
    pub repetitions: u32,
}

/// One arm: a mode, possibly with session bounds, possibly the A/A control.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Arm {
    /// The label in the plan, the run ids and the report.
    pub label: String,
    /// The envelope mode.
    pub mode: Mode,
    /// The crypto backend.
    pub backend: Backend,
    /// The S3 client.
    #[serde(default, skip_serializing_if = "S3ClientKind::is_default")]
    pub client: S3ClientKind,
    /// The object format.
    #[serde(default, skip_serializing_if = "ObjectFormat::is_default")]
    pub format: ObjectFormat,
    /// Its reader requires post-quantum recipients (`arms[].requirePq`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_pq: bool,
    /// Its recipient key is in a key service (`backend: remote`, issue 41); `backend` is
    /// then aws-lc, the backend of its local primitives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms: Option<KmsSpec>,
    /// `(maxObjects, maxAge)` for a session arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<(u64, Dur)>,
    /// Whether this is the A/A control (the baseline again).
    #[serde(default)]
    pub control: bool,
}

/// One run of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedRun {
    /// Position in the run order, from 0.
    pub index: u32,
    /// `r<index>-<cell>-<arm>`.
    pub run_id: String,
    /// Cell id.
    pub cell: String,
    /// Arm label.
    pub arm: String,
    /// Block number in run order, from 0.
    pub block: u32,
    /// Position within the block, from 0.
    pub position: u32,
    /// Repetition of the cell this block is, from 0.
    pub repetition: u32,
    /// The run's workload seed, derived from the campaign seed and the run id.
    pub seed: u64,
}

/// The whole design.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Campaign name.
    pub campaign: String,
    /// Pre-registration hash (hex SHA-256 of the canonical spec).
    pub prereg_hash: String,
    /// Cells in expansion order.
    pub cells: Vec<CellDef>,
    /// Arms in the order of the spec.
    pub arms: Vec<Arm>,
    /// The comparisons made in every cell, in order.
    pub comparisons: Vec<ComparisonSpec>,
    /// Number of blocks.
    pub blocks: u32,
    /// Runs in execution order.
    pub runs: Vec<PlannedRun>,
}

impl Plan {
    /// The distinct added round trips of the remote arms' embedded key services
    /// (`arms[].kms.rtt`; arms with `kms.endpoint` use a service already running),
    /// shortest first: one key service per value, on either executor.
    pub fn kms_rtts(&self) -> Vec<crate::units::Dur> {
        let mut rtts: Vec<_> = self
            .arms
            .iter()
            .filter_map(|a| a.kms.as_ref().filter(|k| k.embedded()).map(|k| k.rtt))
            .collect();
        rtts.sort();
        rtts.dedup();
        rtts
    }

    /// The cell of a run.
    pub fn cell(&self, id: &str) -> Option<&CellDef> {
        self.cells.iter().find(|c| c.id == id)
    }

    /// The arm of a run.
    pub fn arm(&self, label: &str) -> Option<&Arm> {
        self.arms.iter().find(|a| a.label == label)
    }

    /// The runs of a block (numbered over the whole plan, so all of one cell), in run order.
    pub fn block_runs(&self, block: u32) -> impl Iterator<Item = &PlannedRun> {
        self.runs.iter().filter(move |r| r.block == block)
    }

    /// The label of the baseline arm: the baseline mode's first arm (storage overhead and
    /// the plots' reference).
    pub fn baseline_label(spec: &CampaignSpec) -> String {
        baseline_arm(&arms(spec), spec.baseline, None)
            .map_or_else(|| spec.baseline.name().to_owned(), |a| a.label.clone())
    }
}

/// Where an arm runs, for finding its baseline: backend, S3 client, format and key service.
type Setting<'a> = (Backend, S3ClientKind, ObjectFormat, Option<&'a KmsSpec>);

/// The baseline mode's arm on `on`'s backend, S3 client, format and key service (any when
/// `None`): the first such arm that is neither a session arm with bounds nor the A/A
/// control.
fn baseline_arm<'a>(arms: &'a [Arm], baseline: Mode, on: Option<Setting<'_>>) -> Option<&'a Arm> {
    arms.iter().find(|a| {
        a.mode == baseline
            && !a.control
            && on.is_none_or(|on| (a.backend, a.client, a.format, a.kms.as_ref()) == on)
    })
}

fn rate_label(r: f64) -> String {
    if r.fract() == 0.0 && r.abs() < 1e15 {
        format!("{r:.0}")
    } else {
        format!("{r}")
    }
}

/// A cell's id: `<op>-<size>-c<concurrency>` (closed loop) or
/// `<op>-<size>-r<rate>-t<threads>` (open loop), with `-cores<k>` appended when the cell
/// confines its clients to k cores.
pub fn cell_id(
    op: Operation,
    size: Size,
    concurrency: u32,
    arrival: Arrival,
    client_cores: Option<u32>,
) -> String {
    let id = match arrival {
        Arrival::Closed => format!("{}-{size}-c{concurrency}", op.as_str()),
        Arrival::Open { rate } => format!(
            "{}-{size}-r{}-t{concurrency}",
            op.as_str(),
            rate_label(rate)
        ),
    };
    match client_cores {
        Some(k) => format!("{id}-cores{k}"),
        None => id,
    }
}

/// Expands the cell grid (see the module docs for ids and order).
pub fn cells(spec: &CampaignSpec) -> Vec<CellDef> {
    let mut out = Vec::new();
    for g in &spec.cells {
        let reps = g.repetitions.unwrap_or(spec.repetitions);
        let loads: Vec<(u32, Arrival)> = match &g.arrival {
            LoopGrid::Closed => g
                .concurrency
                .as_ref()
                .map(|c| c.0.iter().map(|&n| (n, Arrival::Closed)).collect())
                .unwrap_or_default(),
            LoopGrid::Open { rates, threads } => rates
                .0
                .iter()
                .map(|&rate| (*threads, Arrival::Open { rate }))
                .collect(),
        };
        let cores: Vec<Option<u32>> = g
            .client_cores
            .as_ref()
            .map_or_else(|| vec![None], |k| k.0.iter().copied().map(Some).collect());
        for &op in &g.operation.0 {
            for &size in &g.object_size.0 {
                for &(conc, arrival) in &loads {
                    for &client_cores in &cores {
                        out.push(CellDef {
                            id: cell_id(op, size, conc, arrival, client_cores),
                            operation: op,
                            object_size: size,
                            concurrency: conc,
                            arrival,
                            client_cores,
                            repetitions: reps,
                        });
                    }
                }
            }
        }
    }
    out
}

/// One arm of the spec before session grids expand it.
struct ArmDef {
    mode: Mode,
    backend: Backend,
    client: S3ClientKind,
    format: ObjectFormat,
    require_pq: bool,
    kms: Option<KmsSpec>,
    name: Option<String>,
}

/// The arms of the spec: `arms` as listed, or `modes` × `backends`, with each arm's given
/// name and S3 client (`clients.s3Client` unless the arm names its own).
fn arm_defs(spec: &CampaignSpec) -> Vec<ArmDef> {
    let client = spec.clients.s3_client;
    if spec.arms.is_empty() {
        spec.backends
            .iter()
            .flat_map(|&backend| {
                spec.modes.iter().map(move |&mode| ArmDef {
                    mode,
                    backend,
                    client,
                    format: ObjectFormat::V1,
                    require_pq: false,
                    kms: None,
                    name: None,
                })
            })
            .collect()
    } else {
        spec.arms
            .iter()
            .map(|a| ArmDef {
                mode: a.mode,
                backend: a.backend.local(),
                client: a.s3_client.unwrap_or(client),
                format: a.format,
                require_pq: a.require_pq,
                kms: a
                    .backend
                    .is_remote()
                    .then(|| a.kms.clone().unwrap_or_default()),
                // A remote arm's default label says so: `ml-kem-768-remote`.
                name: a.name.clone().or_else(|| {
                    a.backend
                        .is_remote()
                        .then(|| format!("{}-remote", a.mode.name()))
                }),
            })
            .collect()
    }
}

/// The interop matrix of the campaign's modes over its arms' backends (issue 40): every
/// backend seals, every backend opens, in both formats. `Err` names the round trips that
/// failed between two of the campaign's backends: such a campaign is refused before
/// anything is timed, on both executors.
pub fn interop(spec: &CampaignSpec) -> std::result::Result<envelope::interop::Matrix, String> {
    let arms = arms(spec);
    let mut modes: Vec<Mode> = Vec::new();
    let mut backends: Vec<Backend> = Vec::new();
    for a in &arms {
        if !modes.contains(&a.mode) {
            modes.push(a.mode);
        }
        // A backend this build does not have (openssl without its cargo feature, as in
        // the operator) is checked by the workers that time it, before their runs.
        if a.backend.built() && !backends.contains(&a.backend) {
            backends.push(a.backend);
        }
    }
    backends.sort();
    let m = envelope::interop::matrix(&modes, &backends);
    m.require_among(&backends).map_err(|e| e.to_string())?;
    Ok(m)
}

/// The arms (see the module docs).
pub fn arms(spec: &CampaignSpec) -> Vec<Arm> {
    let defs = arm_defs(spec);
    // The shorthand names arms by mode and, with several backends, backend; listed arms
    // by their name or mode.
    let multi_backend = spec.arms.is_empty() && spec.backends.len() > 1;
    let suffix = |b: Backend| {
        if multi_backend {
            format!("-{}", b.name())
        } else {
            String::new()
        }
    };
    let mut out = Vec::new();
    for ArmDef {
        mode,
        backend,
        client,
        format,
        require_pq,
        kms,
        name,
    } in defs
    {
        match (&spec.sessions, mode) {
            (Some(grid), Mode::MlKem768Session) => {
                for &b in &grid.max_objects.0 {
                    for &t in &grid.max_age.0 {
                        let base = name.clone().unwrap_or_else(|| mode.name().to_owned());
                        out.push(Arm {
                            label: format!(
                                "{base}-b{b}-t{}{}",
                                format_duration(t.0),
                                if name.is_some() {
                                    String::new()
                                } else {
                                    suffix(backend)
                                }
                            ),
                            mode,
                            backend,
                            client,
                            format,
                            require_pq,
                            kms: kms.clone(),
                            session: Some((b, t)),
                            control: false,
                        });
                    }
                }
            }
            _ => out.push(Arm {
                label: name.unwrap_or_else(|| format!("{}{}", mode.name(), suffix(backend))),
                mode,
                backend,
                client,
                format,
                require_pq,
                kms,
                session: None,
                control: false,
            }),
        }
    }
    if spec.aa_control
        && let Some(base) = baseline_arm(&out, spec.baseline, None).cloned()
    {
        out.push(Arm {
            label: format!("{}-aa", base.label),
            control: true,
            ..base
        });
    }
    out
}

/// The comparisons of the spec: `analysis.comparisons`, or by default every arm against
/// the baseline mode's arm on its backend, S3 client and format (arms without one are not
/// compared)
/// and the A/A control against the arm it repeats.
pub fn comparisons(spec: &CampaignSpec, arms: &[Arm]) -> Vec<ComparisonSpec> {
    if !spec.analysis.comparisons.is_empty() {
        return spec.analysis.comparisons.clone();
    }
    let mut out = Vec::new();
    for a in arms {
        let on = (!a.control).then_some((a.backend, a.client, a.format, a.kms.as_ref()));
        let Some(base) = baseline_arm(arms, spec.baseline, on) else {
            continue;
        };
        if base.label != a.label {
            out.push(ComparisonSpec {
                arm: a.label.clone(),
                against: base.label.clone(),
            });
        }
    }
    out
}

/// The pre-registration hash: hex SHA-256 of the spec's RFC 8785 canonical JSON.
pub fn prereg_hash(spec: &CampaignSpec) -> String {
    // Serializing plain data (strings, numbers, lists, maps) cannot fail.
    let canonical = serde_jcs::to_vec(spec).unwrap_or_default();
    hex::encode(Sha256::digest(&canonical))
}

/// Fisher–Yates (Durstenfeld): for i from n−1 down to 1, swap i with a uniform j ≤ i.
fn shuffle<T>(v: &mut [T], rng: &mut ChaCha8Rng) {
    for i in (1..v.len()).rev() {
        let j = stats::uniform_below(rng, i + 1);
        v.swap(i, j);
    }
}

fn run_seed(seed: u64, run_id: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(run_id.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

/// Expands a validated manifest into its plan.
pub fn plan(m: &Manifest) -> Plan {
    let spec = &m.spec;
    let cells = cells(spec);
    let arms = arms(spec);
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    // Blocks in (cell, repetition) order, each with its arms shuffled …
    let mut blocks: Vec<(usize, u32, Vec<usize>)> = Vec::new();
    for (ci, c) in cells.iter().enumerate() {
        for rep in 0..c.repetitions {
            let mut order: Vec<usize> = (0..arms.len()).collect();
            shuffle(&mut order, &mut rng);
            blocks.push((ci, rep, order));
        }
    }
    // … then the run order of the blocks.
    shuffle(&mut blocks, &mut rng);
    let mut runs = Vec::new();
    let mut index = 0u32;
    for (b, (ci, rep, order)) in (0u32..).zip(&blocks) {
        for (pos, &ai) in (0u32..).zip(order) {
            let run_id = format!("r{index:04}-{}-{}", cells[*ci].id, arms[ai].label);
            runs.push(PlannedRun {
                index,
                seed: run_seed(spec.seed, &run_id),
                run_id,
                cell: cells[*ci].id.clone(),
                arm: arms[ai].label.clone(),
                block: b,
                position: pos,
                repetition: *rep,
            });
            index += 1;
        }
    }
    Plan {
        campaign: m.metadata.name.clone(),
        prereg_hash: prereg_hash(spec),
        blocks: u32::try_from(blocks.len()).unwrap_or(u32::MAX),
        comparisons: comparisons(spec, &arms),
        cells,
        arms,
        runs,
    }
}

/// What the planner assumes where the spec cannot say.
#[derive(Clone, Debug, PartialEq)]
pub struct Assumptions {
    /// Closed-loop requests per second per worker (the spec cannot know the store's speed).
    pub closed_rps_per_worker: f64,
    /// Per-run setup outside warm-up and window: process start, key check, known-answer
    /// gate, fixtures, cleanup.
    pub run_overhead: Duration,
    /// Typical pause between runs (the study's confirmatory median was 3.0 s).
    pub typical_pause: Duration,
}

impl Default for Assumptions {
    fn default() -> Self {
        Self {
            closed_rps_per_worker: 500.0,
            run_overhead: Duration::from_secs(3),
            typical_pause: Duration::from_secs(3),
        }
    }
}

/// The planner's estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    /// Runs in the plan.
    pub runs: usize,
    /// Requests offered by open-loop runs (rate × (warm-up + window)); exact up to Poisson
    /// noise.
    pub open_loop_requests: f64,
    /// Requests of closed-loop runs at the assumed per-worker rate.
    pub closed_loop_requests_assumed: f64,
    /// Expected wall time.
    pub wall: Duration,
    /// Wall time if every pause ran to its maximum.
    pub wall_worst: Duration,
}

/// The power calculation before the data for one primary comparison (study section IV-C:
/// "a normal-approximation calculation at α = 0.05/8 and power 0.8").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PowerRow {
    /// Cell id.
    pub cell: String,
    /// Arm.
    pub arm: String,
    /// Against.
    pub against: String,
    /// The paired sd assumed.
    pub sd: f64,
    /// Where it came from: `assumedSd`, or `pilot` (the earlier campaign's own figure).
    pub source: String,
    /// Blocks needed for the pre-registered power at α/k and the margin.
    pub needed: u32,
    /// Blocks planned.
    pub planned: u32,
    /// `planned < needed`.
    pub underpowered: bool,
}

/// The primary comparisons of a plan as `(cell, arm, against, blocks planned)`.
pub fn primary_comparisons<'a>(
    plan: &'a Plan,
    spec: &'a CampaignSpec,
) -> Vec<(&'a str, &'a str, &'a str, u32)> {
    plan.cells
        .iter()
        .flat_map(|c| {
            plan.comparisons
                .iter()
                .filter(|x| {
                    spec.analysis
                        .primary
                        .iter()
                        .any(|p| p.selects(&c.id, &x.arm, &x.against))
                        && !plan.arm(&x.arm).is_some_and(|a| a.control)
                })
                .map(move |x| {
                    (
                        c.id.as_str(),
                        x.arm.as_str(),
                        x.against.as_str(),
                        c.repetitions,
                    )
                })
        })
        .collect()
}

/// Blocks each primary comparison needs, from the pilot's paired sd of the same (cell,
/// arm, against) where `pilot` has one, else `analysis.assumedSd`; comparisons with
/// neither are left out. Empty without a primary family.
pub fn power(
    plan: &Plan,
    spec: &CampaignSpec,
    pilot: &BTreeMap<(String, String, String), f64>,
) -> Vec<PowerRow> {
    let a = &spec.analysis;
    let family = primary_comparisons(plan, spec);
    let k = family.len();
    family
        .iter()
        .filter_map(|&(cell, arm, against, planned)| {
            let key = (cell.to_owned(), arm.to_owned(), against.to_owned());
            let (sd, source) = match (pilot.get(&key), a.assumed_sd) {
                (Some(&sd), _) => (sd, "pilot"),
                (None, Some(sd)) => (sd, "assumedSd"),
                (None, None) => return None,
            };
            let needed = stats::power::repetitions_needed(sd, a.margin, a.alpha, k, a.power)
                .ok()?
                .needed;
            Some(PowerRow {
                cell: cell.to_owned(),
                arm: arm.to_owned(),
                against: against.to_owned(),
                sd,
                source: source.to_owned(),
                needed,
                planned,
                underpowered: planned < needed,
            })
        })
        .collect()
}

/// Estimates runs, requests and wall time of a plan.
pub fn estimate(plan: &Plan, spec: &CampaignSpec, a: &Assumptions) -> Estimate {
    let (mut open, mut closed) = (0.0, 0.0);
    let timed = spec.warmup.0 + spec.measured.0;
    let mut wall = Duration::ZERO;
    let mut worst = Duration::ZERO;
    let pause_max = if spec.pause.enabled {
        spec.pause.max_wait.0
    } else {
        Duration::ZERO
    };
    let pause_typ = if spec.pause.enabled {
        a.typical_pause.min(pause_max)
    } else {
        Duration::ZERO
    };
    // Interleaved, the runs of a block share one start, one pause and one overhead.
    let shared = |r: &PlannedRun, d: Duration| match spec.interleave {
        Some(_) => {
            d / u32::try_from(plan.block_runs(r.block).count())
                .unwrap_or(1)
                .max(1)
        }
        None => d,
    };
    for r in &plan.runs {
        let Some(c) = plan.cell(&r.cell) else {
            continue;
        };
        let mut t = shared(r, a.run_overhead) + timed;
        match c.arrival {
            Arrival::Open { rate } => {
                open += rate * timed.as_secs_f64();
                t += spec.drain.0 / 2;
            }
            Arrival::Closed => {
                closed += a.closed_rps_per_worker * f64::from(c.concurrency) * timed.as_secs_f64();
            }
        }
        wall += t + shared(r, pause_typ);
        worst += t + spec.drain.0 + shared(r, pause_max);
    }
    Estimate {
        runs: plan.runs.len(),
        open_loop_requests: open,
        closed_loop_requests_assumed: closed,
        wall,
        wall_worst: worst,
    }
}
