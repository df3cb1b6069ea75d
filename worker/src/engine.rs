//! The run engine: one run, executed the way the study ran it (section IV-A "A run
//! executes one configuration …"; DESIGN.md "A run").
//!
//! ```text
//! resolve spec ─▶ [pause] ─▶ prepare ─────────────────▶ wait ─▶ warm-up ─▶ measured ─▶ cleanup ─▶ files
//!                            keys, known-answer gate,     │      phase       window      delete      records.parquet
//!                            warm-up round trip,          │      (recorded,  (recorded)  outputs     samples.parquet
//!                            GET fixtures                 │       marked)                and         process.json
//!                            (not ready by startAt: fail) startAt                        fixtures    summary.json, SHA256SUMS
//! ```
//!
//! Concurrency N means exactly N workers over all processes; this process runs those whose
//! index is congruent to its own modulo the process count, each as one task issuing one
//! request at a time. Closed loop: back to back; with turns (`spec.turns`, interleaved
//! arms, [`run::turns`]) only in the run's own slices, which a turn-clock thread announces
//! to the sleeping workers (tokio's timers would open each turn up to a millisecond late).
//! Open loop: one Poisson arrival stream per
//! process at its share of the rate (its workers / N) from `startAt` to the end of the
//! window, arrivals queued for a free worker; queue wait is recorded separately. Arrivals
//! still queued at the end may start during the drain period (`drain`, default 5 s); one not
//! started by then is recorded as a `not_started` failure, never dropped. No request is retried; after a failure a
//! worker waits 10 ms before its next request, so that a dead server yields a bounded number
//! of failure records instead of a busy loop.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use envelope::v2;
use envelope::{Backend, Manifest, Mode, PublicKey, Receiver, SealKey, SecretKey, Sender};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng as _, SeedableRng};
use s3::{Reader, Writer};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Mutex;

use crate::host::host_info;
use crate::metrics::{Metrics, RunMetrics};
use crate::sampler::{Sampler, Sources};
use crate::spool::{Spool, SpoolSender};
use crate::traces::{RunAttributes, TraceConfig, Traces};
use crate::{Error, Result};
use campaign::spec::KmsSpec;
use run::records::{Outcome, Record, RequestPhase};
use run::runspec::{Credentials, KeyRef, KmsTarget, Loop, Operation, RunSpec};
use run::summary::HostInfo;
use run::summary::{ProcessData, ProcessInfo};
use s3::{OpStats, S3Settings, Store};

/// Counters a progress display can read while a run is going.
#[derive(Debug, Default)]
pub struct Monitor {
    /// Requests completed successfully (any phase).
    pub ok: AtomicU64,
    /// Requests failed (any phase).
    pub failed: AtomicU64,
    /// Requests in flight.
    pub in_flight: AtomicU64,
    /// Milliseconds from now until `startAt` at the moment the process became ready (0
    /// until then).
    pub start_in_ms: AtomicU64,
}

/// What the engine hands back: everything this process recorded, before files are written.
#[derive(Debug)]
pub struct Executed {
    /// The spec as run (with `startAt` filled in).
    pub spec: RunSpec,
    /// The records' digest, samples and facts.
    pub data: ProcessData,
    /// The records, already on disk ([`crate::spool`]): a Parquet file of
    /// [`run::records::RECORD_SCHEMA`] in the temporary directory, removed when dropped
    /// unless [`crate::output::write`] moved it into the process directory.
    pub records: tempfile::TempPath,
}

/// S3 settings for an endpoint and the credentials a spec refers to.
pub fn settings_for(endpoint: &str, region: &str, c: &Credentials) -> Result<S3Settings> {
    let mut s = if *c == Credentials::Identity {
        S3Settings::with_identity(endpoint)
    } else {
        let (ak, sk) = resolve_credentials(c)?;
        S3Settings::new(endpoint, &ak, &sk)
    };
    region.clone_into(&mut s.region);
    Ok(s)
}

/// Reads the S3 keys a spec refers to (not for [`Credentials::Identity`], which has none).
pub fn resolve_credentials(c: &Credentials) -> Result<(String, String)> {
    match c {
        Credentials::Identity => Err(Error::Credentials(
            "the pod's identity has no keys to read".into(),
        )),
        Credentials::Env {
            access_key_var,
            secret_key_var,
        } => {
            let get = |v: &str| {
                std::env::var(v)
                    .map_err(|_| Error::Credentials(format!("environment variable {v} is not set")))
            };
            Ok((get(access_key_var)?, get(secret_key_var)?))
        }
        Credentials::Mounted(dir) => {
            let get = |name: &str| {
                read_mounted(&dir.join(name))
                    .map(|v| v.trim_end_matches(['\r', '\n']).to_owned())
                    .map_err(Error::Credentials)
            };
            Ok((get("AWS_ACCESS_KEY_ID")?, get("AWS_SECRET_ACCESS_KEY")?))
        }
        Credentials::File(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Error::Credentials(format!("file {}: {e}", p.display())))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                if let Ok(m) = std::fs::metadata(p)
                    && m.permissions().mode() & 0o077 != 0
                {
                    return Err(Error::Credentials(format!(
                        "file {} is readable by others; chmod 600 it",
                        p.display()
                    )));
                }
            }
            let mut ak = None;
            let mut sk = None;
            for line in text.lines() {
                let line = line.trim();
                let line = line.strip_prefix("export ").unwrap_or(line);
                if let Some((k, v)) = line.split_once('=') {
                    let v = v.trim().trim_matches('"').to_owned();
                    match k.trim() {
                        "AWS_ACCESS_KEY_ID" => ak = Some(v),
                        "AWS_SECRET_ACCESS_KEY" => sk = Some(v),
                        _ => {}
                    }
                }
            }
            match (ak, sk) {
                (Some(a), Some(s)) => Ok((a, s)),
                _ => Err(Error::Credentials(format!(
                    "file {} must set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                    p.display()
                ))),
            }
        }
    }
}

/// Reads a file of a Secret volume ([`KeyRef::Mounted`], [`Credentials::Mounted`]):
/// [`envelope::keys::read_mounted_secret`]'s rule (0440 at most).
fn read_mounted(path: &Path) -> std::result::Result<zeroize::Zeroizing<String>, String> {
    envelope::keys::read_mounted_secret(path).map_err(|e| e.to_string())
}

/// The S3 settings of a spec for `workers` concurrent workers.
pub fn settings(spec: &RunSpec, workers: usize) -> Result<S3Settings> {
    let mut s = settings_for(&spec.s3.endpoint, &spec.s3.region, &spec.s3.credentials)?;
    s.concurrency = workers.max(1);
    s.s3_client = spec.s3.client;
    Ok(s)
}

/// The S3 settings of the results store of a spec with S3 output: its own endpoint and
/// credentials where given, else those of the store under test.
pub fn results_settings(spec: &RunSpec) -> Result<S3Settings> {
    results_store_settings(&spec.s3, &spec.output)
}

/// The S3 settings of the results store `output` (S3 output): its own endpoint, region and
/// credentials where given, else those of the store under test `s3`.
pub fn results_store_settings(
    s3: &run::runspec::S3Target,
    output: &run::runspec::Output,
) -> Result<S3Settings> {
    let mut s = settings_for(&s3.endpoint, &s3.region, &s3.credentials)?;
    if let run::runspec::Output::S3 {
        endpoint,
        credentials,
        region,
        ..
    } = output
    {
        if let Some(c) = credentials {
            s = settings_for(&s.endpoint, &s3.region, c)?;
        }
        if let Some(ep) = endpoint {
            s.endpoint.clone_from(ep);
        }
        if let Some(r) = region {
            s.region.clone_from(r);
        }
    }
    Ok(s)
}

/// Key prefix of everything this process writes.
fn prefix(spec: &RunSpec) -> String {
    format!("pqbench-runs/{}/p{}", spec.run_id, spec.processes.index)
}

struct Ctx {
    store: Store,
    sender: Writer,
    receiver: Reader,
    op: Operation,
    size: u64,
    body: Arc<Vec<u8>>,
    fixtures: Vec<(String, String)>,
    prefix: String,
    origin: Instant,
    origin_unix_ns: i64,
    measure_from: Instant,
    end: Instant,
    /// Open loop: the last instant a queued arrival may start.
    start_by: Instant,
    /// Interleaved: the slices this run may start requests in, and the turn clock that
    /// announces each of them.
    turns: Option<run::turns::Turns>,
    turn_opened: Option<tokio::sync::watch::Receiver<()>>,
    monitor: Arc<Monitor>,
    metrics: Option<RunMetrics>,
    traces: Option<Arc<Traces>>,
}

/// The turn clock of an interleaved run: a thread that sleeps to the start of each of
/// the run's own slices until `end` and announces it. Tokio's timers fire on a 1 ms tick
/// (measured: workers started their first request of a turn 0.7-1.4 ms late, by turn);
/// the thread's sleep is the kernel's, tens of microseconds.
fn turn_clock(
    t: run::turns::Turns,
    origin: Instant,
    end: Instant,
) -> Option<tokio::sync::watch::Receiver<()>> {
    let (tx, rx) = tokio::sync::watch::channel(());
    let spawned = std::thread::Builder::new()
        .name("pqbench-turns".into())
        .spawn(move || {
            loop {
                let since = Instant::now().saturating_duration_since(origin);
                // Inside an own slice, the next one starts a cycle after this one.
                let Some(at) = t
                    .next_own(since)
                    .or_else(|| t.next_own(since + t.slice.0))
                    .map(|d| origin + d)
                else {
                    break;
                };
                if at >= end {
                    break;
                }
                std::thread::sleep(at.saturating_duration_since(Instant::now()));
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
    match spawned {
        Ok(_) => Some(rx),
        Err(e) => {
            eprintln!("pqbench: no turn-clock thread ({e}); turns start on tokio's 1 ms timer");
            None
        }
    }
}

/// Waits for the own slice starting at `next`: announced by the turn clock, with a timer
/// 2 ms later as the guard should the announcement not come.
async fn wait_turn(opened: Option<&mut tokio::sync::watch::Receiver<()>>, next: Instant) {
    let guard = next + Duration::from_millis(2);
    match opened {
        Some(rx) => {
            // A stale announcement (of a slice this worker spent in a request) returns at
            // once; the caller checks the slice again.
            if let Ok(Err(_)) = tokio::time::timeout_at(guard.into(), rx.changed()).await {
                // The clock has stopped: the timer, not a busy loop.
                tokio::time::sleep_until(next.into()).await;
            }
        }
        None => tokio::time::sleep_until(next.into()).await,
    }
}

impl Ctx {
    /// Interleaved, `now` outside an own slice: the instant the next one begins.
    fn next_turn(&self, now: Instant) -> Option<Instant> {
        let t = self.turns?;
        t.next_own(now.saturating_duration_since(self.origin))
            .map(|d| self.origin + d)
    }
}

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// One request, started at `start`; returns its record and, for a PUT, what it wrote.
///
/// `start` is the instant the caller decided from that the request may start (inside the
/// window, inside an own slice, before the drain ends): the record's start is that same
/// instant, never one read a moment later, which on a loaded machine can fall past the
/// boundary the decision was made against.
async fn one(
    ctx: &Ctx,
    worker: u32,
    seq: u64,
    start: Instant,
    arrival: Option<Instant>,
) -> (Record, Option<(String, String)>) {
    // Closed loop: a request arrives when it starts.
    let arrival = arrival.unwrap_or(start);
    let phase = if arrival < ctx.measure_from {
        RequestPhase::Warmup
    } else {
        RequestPhase::Measured
    };
    ctx.monitor.in_flight.fetch_add(1, Ordering::Relaxed);
    if let Some(m) = &ctx.metrics {
        m.started();
    }
    let mut written = None;
    let res: Result<(OpStats, Option<envelope::SessionInfo>)> = match ctx.op {
        Operation::Put => {
            let key = format!("{}/w{worker}-{seq}", ctx.prefix);
            match ctx
                .store
                .put_with(&ctx.sender, &key, ctx.size, &ctx.body[..], &mut |_| {})
                .await
            {
                Ok(out) => {
                    written = Some((key, out.id.version));
                    Ok((out.stats, out.session))
                }
                Err(e) => Err(Error::from(e)),
            }
        }
        Operation::Get => {
            let i = usize::try_from(u64::from(worker).wrapping_add(seq)).unwrap_or(0)
                % ctx.fixtures.len().max(1);
            let (key, version) = &ctx.fixtures[i];
            ctx.store
                .get_with(&ctx.receiver, key, version, tokio::io::sink(), &mut |_| {})
                .await
                .map(|o| (o.stats, None))
                .map_err(Error::from)
        }
    };
    let total = start.elapsed();
    ctx.monitor.in_flight.fetch_sub(1, Ordering::Relaxed);
    let offset = arrival.saturating_duration_since(ctx.origin);
    let mut r = Record {
        worker,
        seq,
        phase: Some(phase),
        start_unix_ns: ctx.origin_unix_ns.saturating_add(nanos(offset)),
        offset,
        total,
        queue_wait: start.saturating_duration_since(arrival),
        ..Record::default()
    };
    let (stats, error) = match res {
        Ok((st, session)) => {
            ctx.monitor.ok.fetch_add(1, Ordering::Relaxed);
            r.key_establishment = st.key_establishment;
            r.key_derivation = st.key_derivation;
            r.aead = st.aead;
            r.manifest = st.manifest;
            r.storage = st.storage;
            r.crypto_cpu = st.crypto_cpu;
            r.bytes_sent = st.bytes_sent;
            r.bytes_received = st.bytes_received;
            r.manifest_bytes = st.manifest_bytes;
            r.s3_requests = st.s3_requests;
            r.outcome = Some(Outcome::Ok);
            if let Some(s) = session {
                r.session_id = Some(s.session);
                r.session_index = Some(s.index);
                r.session_age = Some(s.age);
            }
            (Some(st), None)
        }
        Err(e) => {
            ctx.monitor.failed.fetch_add(1, Ordering::Relaxed);
            r.outcome = Some(Outcome::Error);
            r.error_class = Some(e.kind());
            (None, Some(e))
        }
    };
    // Observation happens after the request, outside every timer.
    if let Some(m) = &ctx.metrics {
        m.finished(&r);
    }
    if let Some(t) = &ctx.traces
        && t.sample(error.is_some())
    {
        let msg = error.map(|e| e.to_string());
        t.record(start, &r, stats.as_ref(), msg.as_deref());
    }
    (r, written)
}

/// When the worker started its first request, ms after `startAt`; its records and the
/// objects it wrote went to the spool.
type WorkerOut = f64;

/// Hands a request's record and what it wrote to the spool.
fn spool_one(spool: &SpoolSender, r: Record, w: Option<(String, String)>) {
    if let Some((k, v)) = w {
        spool.written(k, v);
    }
    spool.record(r);
}

async fn closed_worker(ctx: Arc<Ctx>, worker: u32, spool: SpoolSender) -> WorkerOut {
    tokio::time::sleep_until(ctx.origin.into()).await;
    let started = offset_ms(ctx.origin);
    let mut seq = 0;
    let mut opened = ctx.turn_opened.clone();
    loop {
        // One instant decides whether a request starts (before the end, inside an own
        // slice) and is its start.
        let now = Instant::now();
        if now >= ctx.end {
            break;
        }
        if let Some(next) = ctx.next_turn(now) {
            if next >= ctx.end {
                break;
            }
            wait_turn(opened.as_mut(), next).await;
            continue;
        }
        let (r, w) = one(&ctx, worker, seq, now, None).await;
        let failed = r.outcome != Some(Outcome::Ok);
        spool_one(&spool, r, w);
        seq += 1;
        if failed {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    started
}

fn offset_ms(origin: Instant) -> f64 {
    let now = Instant::now();
    if now >= origin {
        (now - origin).as_secs_f64() * 1e3
    } else {
        -(origin - now).as_secs_f64() * 1e3
    }
}

type Queue = Arc<Mutex<tokio::sync::mpsc::UnboundedReceiver<(u64, Instant)>>>;

async fn open_worker(ctx: Arc<Ctx>, worker: u32, queue: Queue, spool: SpoolSender) -> WorkerOut {
    tokio::time::sleep_until(ctx.origin.into()).await;
    let started = offset_ms(ctx.origin);
    loop {
        let next = queue.lock().await.recv().await;
        let Some((seq, arrival)) = next else { break };
        // One instant decides whether the request may still start and is its start.
        let now = Instant::now();
        if now >= ctx.start_by {
            // Arrived in time but no worker was free before the end: a failure.
            ctx.monitor.failed.fetch_add(1, Ordering::Relaxed);
            let offset = arrival.saturating_duration_since(ctx.origin);
            let r = Record {
                worker,
                seq,
                phase: Some(if arrival < ctx.measure_from {
                    RequestPhase::Warmup
                } else {
                    RequestPhase::Measured
                }),
                start_unix_ns: ctx.origin_unix_ns.saturating_add(nanos(offset)),
                offset,
                queue_wait: ctx.start_by.saturating_duration_since(arrival),
                outcome: Some(Outcome::NotStarted),
                error_class: Some("not_started"),
                ..Record::default()
            };
            if let Some(m) = &ctx.metrics {
                m.record(&r);
            }
            if let Some(t) = &ctx.traces {
                t.record(
                    arrival,
                    &r,
                    None,
                    Some("arrived in time, but no worker was free before the drain period ended"),
                );
            }
            spool.record(r);
            continue;
        }
        let (r, w) = one(&ctx, worker, seq, now, Some(arrival)).await;
        let failed = r.outcome != Some(Outcome::Ok);
        spool_one(&spool, r, w);
        if failed {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    started
}

/// Poisson arrivals at `rate`/s from `origin` until `end`: exponential gaps drawn from a
/// seeded ChaCha20 stream. Arrival times are the scheduled instants, independent of timer
/// granularity; late wake-ups only batch the hand-off.
async fn arrivals(
    rate: f64,
    seed: u64,
    origin: Instant,
    end: Instant,
    tx: tokio::sync::mpsc::UnboundedSender<(u64, Instant)>,
) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut t = origin;
    let mut seq = 0;
    loop {
        // U in (0, 1]: 53 random bits.
        #[allow(clippy::cast_precision_loss, reason = "53-bit integer to f64 is exact")]
        let u = ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let gap = -u.ln() / rate;
        t += Duration::from_secs_f64(gap.min(3600.0));
        if t >= end {
            break;
        }
        if t > Instant::now() {
            tokio::time::sleep_until(t.into()).await;
        }
        if tx.send((seq, t)).is_err() {
            break;
        }
        seq += 1;
    }
}

fn load_key(spec: &RunSpec) -> Result<(Option<SecretKey>, Option<PublicKey>)> {
    let mode = spec.cell.mode;
    if mode == Mode::Plaintext {
        return Ok((None, None));
    }
    let Some(r) = &spec.recipient_key else {
        return Err(Error::RecipientKey(format!("required for {mode}")));
    };
    let path = r.path_for(mode);
    let sk = match r {
        KeyRef::Mounted(_) => {
            let text = read_mounted(&path).map_err(Error::RecipientKey)?;
            SecretKey::from_file_json(&text)
                .map_err(|e| Error::RecipientKey(format!("{}: {e}", path.display())))?
        }
        KeyRef::File(_) | KeyRef::Dir(_) => SecretKey::read_file(&path)?,
    };
    if sk.key_type() != mode.key_type() {
        return Err(Error::RecipientKey(format!(
            "{} is a {} key; mode {mode} needs a {} key",
            path.display(),
            sk.key_type(),
            mode.key_type()
        )));
    }
    let pk = sk.public_key()?;
    envelope::gate::check_key_sizes(mode.key_type(), pk.as_ref(), Some(&sk))?;
    Ok((Some(sk), pk))
}

fn endpoints(
    spec: &RunSpec,
    sk: Option<&SecretKey>,
    pk: Option<&PublicKey>,
) -> Result<(Writer, Reader)> {
    let (mode, backend): (Mode, Backend) = (spec.cell.mode, spec.cell.backend);
    if let Some(k) = &spec.cell.kms {
        return remote_endpoints(spec, k, pk);
    }
    if let Some(placement) = spec.cell.format.placement() {
        let (Some(sk), Some(pk)) = (sk, pk) else {
            return Err(Error::RecipientKey(format!(
                "format {} needs the {mode} key pair",
                spec.cell.format
            )));
        };
        let reader = v2::Receiver::new(backend, sk)?;
        let reader = if spec.cell.require_pq {
            reader.requiring_pq()?
        } else {
            reader
        };
        return Ok((
            Writer::V2(v2_sender(spec, pk, placement)?),
            Reader::V2(reader),
        ));
    }
    if spec.cell.require_pq {
        return Err(Error::Envelope(envelope::Error::Usage(format!(
            "requirePq is a format v2 reader's check; this run's format is {}",
            spec.cell.format
        ))));
    }
    let key = match (pk, sk) {
        (Some(p), _) => SealKey::Public(p),
        (None, Some(s)) => SealKey::Psk(s),
        _ => SealKey::None,
    };
    let mut sender = Sender::new(mode, backend, key)?;
    if let Some(b) = spec.session_bounds() {
        sender = sender.with_session_bounds(b)?;
    }
    let receiver = Receiver::new(mode, backend, sk)?;
    Ok((Writer::V1(sender), Reader::V1(receiver)))
}

/// The run's v2 writer to `pk`, its header in `placement`, v2.1 when the format says so.
fn v2_sender(spec: &RunSpec, pk: &PublicKey, placement: v2::Placement) -> Result<v2::Sender> {
    let version = spec.cell.format.header_version().unwrap_or_default();
    Ok(
        v2::Sender::new(spec.cell.backend, &[pk], false, placement)?
            .with_header_version(version)?,
    )
}

/// A remote run's writer (local, with the public key, in the run's format) and reader
/// (its key in the key service of `spec.kms`: one client per reader, its pool sized to the
/// run's concurrency, and a shared-secret cache when the arm asks for one).
fn remote_endpoints(
    spec: &RunSpec,
    k: &campaign::spec::KmsSpec,
    pk: Option<&PublicKey>,
) -> Result<(Writer, Reader)> {
    let (mode, backend) = (spec.cell.mode, spec.cell.backend);
    let (Some(pk), Some(target)) = (pk, &spec.kms) else {
        return Err(Error::RecipientKey(format!(
            "a remote {mode} run needs the recipient's public key and the key service (kms)"
        )));
    };
    let client = kms_client(spec, target)?;
    let key = match &k.key_id {
        Some(id) => kms::RemoteKey::with_key_id(client, pk, id, k.cache),
        None => kms::RemoteKey::new(client, pk, k.cache),
    }
    .map_err(s3::Error::from)?;
    if let Some(placement) = spec.cell.format.placement() {
        let receiver = v2::RemoteReceiver::new(backend, pk)?;
        let receiver = if spec.cell.require_pq {
            receiver.requiring_pq()?
        } else {
            receiver
        };
        let sender = v2_sender(spec, pk, placement)?;
        return Ok((Writer::V2(sender), Reader::RemoteV2 { receiver, key }));
    }
    let sender = Sender::new(mode, backend, SealKey::Public(pk))?;
    let receiver = Receiver::remote(mode, backend, pk)?;
    Ok((Writer::V1(sender), Reader::Remote { receiver, key }))
}

/// A client of the run's key service, its pool sized to the run's concurrency.
fn kms_client(spec: &RunSpec, target: &KmsTarget) -> Result<Arc<kms::Client>> {
    kms_client_of(target, usize::try_from(spec.cell.concurrency).unwrap_or(1))
}

fn kms_client_of(target: &KmsTarget, pool: usize) -> Result<Arc<kms::Client>> {
    let (ak, sk) = resolve_credentials(&target.credentials).map_err(|e| match e {
        Error::Credentials(m) => Error::Config(format!("kms.credentials: {m}")),
        other => other,
    })?;
    let mut settings = kms::KmsSettings::new(&target.endpoint, &target.region, &ak, &sk);
    settings.pool = pool;
    Ok(Arc::new(
        kms::Client::new(&settings).map_err(s3::Error::from)?,
    ))
}

/// The public key of `key_id` in the service of `target`, from its `GetPublicKey`, checked
/// to be of `mode`'s key type and of valid size: how a writer seals to a key held by a key
/// service given by endpoint, and `pqbench run`'s check of such an arm before anything is
/// written.
pub async fn service_public_key(target: &KmsTarget, key_id: &str, mode: Mode) -> Result<PublicKey> {
    let at = &target.endpoint;
    let pk = kms_client_of(target, 1)?
        .get_public_key(key_id)
        .await
        .map_err(|e| Error::RecipientKey(format!("kms.keyId {key_id} at {at}: {e}")))?;
    if pk.key_type() != mode.key_type() {
        return Err(Error::RecipientKey(format!(
            "kms.keyId {key_id} at {at} is a {} key; mode {mode} needs a {} key",
            pk.key_type(),
            mode.key_type()
        )));
    }
    envelope::gate::check_key_sizes(mode.key_type(), Some(&pk), None)?;
    Ok(pk)
}

/// The public key of a remote run whose key is in a service given by endpoint
/// (`cell.kms.keyId`); `None` for every other run.
async fn run_service_key(spec: &RunSpec) -> Result<Option<PublicKey>> {
    match (&spec.cell.kms, &spec.kms) {
        (Some(k), Some(target)) => match &k.key_id {
            Some(id) => Ok(Some(service_public_key(target, id, spec.cell.mode).await?)),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

/// The session-root cache of a v1 `ml-kem-768-session` receiver (v2 has no sessions).
fn session_cache_stats(r: &Reader) -> Option<envelope::CacheStats> {
    match r {
        Reader::V1(r) => r.session_cache_stats(),
        Reader::V2(_) | Reader::Remote { .. } | Reader::RemoteV2 { .. } => None,
    }
}

/// The recipient key of a run and the sender and receiver made with it.
struct Keys {
    sk: Option<SecretKey>,
    pk: Option<PublicKey>,
}

impl Keys {
    fn endpoints(&self, spec: &RunSpec) -> Result<(Writer, Reader)> {
        endpoints(spec, self.sk.as_ref(), self.pk.as_ref())
    }
}

/// When the run starts, on both clocks.
struct Start {
    /// `startAt` on the monotonic clock.
    origin: Instant,
    /// `startAt`, nanoseconds since the Unix epoch.
    origin_unix_ns: i64,
    /// How long before `startAt` the process was ready.
    lead: Duration,
}

/// What the measured part of a run (warm-up, window, drain) recorded.
struct Measured {
    spooled: crate::spool::Spooled,
    /// The receiver's session-root cache over the window (session mode).
    root_cache: Option<run::summary::RootCacheFigures>,
    worker_start_ms: Vec<f64>,
    window_cpu_s: f64,
    window_wall_s: f64,
    samples: Vec<run::records::Sample>,
    traces: Option<run::trace::TraceReport>,
}

/// Phase: traces (when configured), the exporter for this process's request spans.
fn start_traces(spec: &RunSpec) -> Result<Option<Arc<Traces>>> {
    let Some(config) = TraceConfig::resolve(spec.traces.as_ref(), &|v| std::env::var(v).ok())?
    else {
        return Ok(None);
    };
    Ok(Some(Arc::new(Traces::start(
        &config,
        &RunAttributes {
            run_id: spec.run_id.clone(),
            campaign: spec.campaign.clone(),
            mode: spec.cell.mode.name(),
            backend: spec.cell.backend.name(),
            operation: spec.cell.operation.as_str(),
            object_size: spec.cell.object_size.0,
            bucket: spec.s3.bucket.clone(),
        },
        vec![opentelemetry::KeyValue::new(
            "pqbench.process.index",
            i64::from(spec.processes.index),
        )],
        spec.seed ^ u64::from(spec.processes.index).rotate_left(32),
    )?)))
}

/// Phase: the known-answer gate of the mode on the backend, then the interop matrix of the
/// mode over every backend (off the runtime's threads). A backend that does not
/// interoperate with the run's is refused here, before anything is timed.
async fn known_answer_gate(
    spec: &RunSpec,
) -> Result<(envelope::gate::GateReport, envelope::interop::Matrix)> {
    let (mode, backend) = (spec.cell.mode, spec.cell.backend);
    tokio::task::spawn_blocking(move || {
        let gate = envelope::gate::known_answer_gate(mode, backend)?;
        let matrix = envelope::interop::matrix(&[mode], &envelope::Backend::ALL);
        matrix.require_involving(backend)?;
        Ok((gate, matrix))
    })
    .await
    .map_err(|e| Error::Gate(format!("gate task: {e}")))?
    .map_err(|e: envelope::Error| Error::Gate(e.to_string()))
}

/// The payload every request writes: the object size, from the run's seed.
fn payload(spec: &RunSpec) -> Result<Arc<Vec<u8>>> {
    let size = spec.cell.object_size.0;
    let mut rng = ChaCha20Rng::seed_from_u64(spec.seed ^ 0x0070_6179_6c6f_6164);
    let mut v = vec![0u8; usize::try_from(size).map_err(|_| Error::TooLarge(size))?];
    rng.fill_bytes(&mut v);
    Ok(Arc::new(v))
}

/// Phase: one full round trip in the mode under test, its ciphertext size checked and its
/// data read back; the object is deleted whatever the outcome.
async fn warm_up_round_trip(
    spec: &RunSpec,
    store: &Store,
    keys: &Keys,
    body: &Arc<Vec<u8>>,
) -> Result<()> {
    let mode = spec.cell.mode;
    let (sender, receiver) = keys.endpoints(spec)?;
    let warm_key = format!("{}/warmup", prefix(spec));
    let size = spec.cell.object_size.0;
    let put = store
        .put_with(&sender, &warm_key, size, &body[..], &mut |_| {})
        .await?;
    let check = async {
        let c_len = match sender {
            Writer::V1(_) => Manifest::parse(&put.manifest, mode)?.c.len(),
            Writer::V2(_) => v2::Header::parse(&put.manifest)?.0.recipients[0].enc.len(),
        };
        if c_len != mode.ciphertext_len() {
            return Err(Error::Gate(format!(
                "warm-up object's C is {c_len} bytes; {mode} specifies {}",
                mode.ciphertext_len()
            )));
        }
        let mut back = Vec::with_capacity(body.len());
        store
            .get_with(
                &receiver,
                &warm_key,
                &put.id.version,
                &mut back,
                &mut |_| {},
            )
            .await?;
        if back != **body {
            return Err(Error::Gate(
                "warm-up round trip returned different data".into(),
            ));
        }
        Ok(())
    }
    .await;
    let deleted = store.delete_version(&warm_key, &put.id.version).await;
    check?;
    deleted?;
    Ok(())
}

/// Phase: the GET fixtures, written concurrently outside the timed window (none for PUT).
async fn write_fixtures(
    spec: &RunSpec,
    store: &Store,
    keys: &Keys,
    body: &Arc<Vec<u8>>,
    workers: usize,
) -> Result<Vec<(String, String)>> {
    if spec.cell.operation != Operation::Get {
        return Ok(Vec::new());
    }
    let n = spec.fixtures;
    let size = spec.cell.object_size.0;
    let pre = prefix(spec);
    let par = u32::try_from(workers).unwrap_or(1).clamp(1, 16);
    let mut tasks = Vec::new();
    for t in 0..par {
        let (store, sender, body, pre) = (
            store.clone(),
            keys.endpoints(spec)?.0,
            body.clone(),
            pre.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for j in (t..n).step_by(par as usize) {
                let key = format!("{pre}/fixture-{j}");
                let o = store
                    .put_with(&sender, &key, size, &body[..], &mut |_| {})
                    .await?;
                out.push((j, key, o.id.version));
            }
            Ok::<_, Error>(out)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.map_err(|source| Error::Task {
            what: "fixture",
            source,
        })??);
    }
    all.sort_by_key(|x| x.0);
    Ok(all.into_iter().map(|(_, k, v)| (k, v)).collect())
}

/// Phase: the start. The start gate when the spec has one, else `startAt`, else one second
/// from now; `startAt` is filled into the spec. A process not ready by `startAt` fails
/// rather than starting late.
async fn start_gate(spec: &mut RunSpec, prep_t0: Instant) -> Result<Start> {
    let now_wall = SystemTime::now();
    let now_mono = Instant::now();
    let gated = match &spec.start_gate {
        Some(g) => Some(wait_for_start(spec, g).await?),
        None => None,
    };
    let (now_wall, now_mono) = if gated.is_some() {
        (SystemTime::now(), Instant::now())
    } else {
        (now_wall, now_mono)
    };
    let start_at = match gated.or_else(|| spec.start_at()) {
        Some(t) => {
            spec.start_at = Some(humantime::format_rfc3339_millis(t).to_string());
            t
        }
        None => {
            let t = now_wall + Duration::from_secs(1);
            spec.start_at = Some(humantime::format_rfc3339_millis(t).to_string());
            spec.start_at().unwrap_or(t)
        }
    };
    let Ok(lead) = start_at.duration_since(now_wall) else {
        let late = now_wall.duration_since(start_at).unwrap_or_default();
        return Err(Error::NotReady {
            late_ms: u64::try_from(late.as_millis()).unwrap_or(u64::MAX),
            prepare_ms: u64::try_from(prep_t0.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
    };
    Ok(Start {
        origin: now_mono + lead,
        origin_unix_ns: nanos(
            start_at
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default(),
        ),
        lead,
    })
}

/// Phases: warm-up, the measured window and (open loop) the drain. Exactly the spec's
/// workers run the closed or open loop from `startAt`; the samplers read client and server
/// once per second; the process CPU is read at the window's edges.
async fn measure(
    spec: &RunSpec,
    ctx: Arc<Ctx>,
    workers: &[u32],
    sources: &Sources,
    traces: Option<Arc<Traces>>,
) -> Result<Measured> {
    let (origin, measure_from, end) = (ctx.origin, ctx.measure_from, ctx.end);
    let sampler = Sampler::start(sources.clone(), origin, ctx.origin_unix_ns);
    let cache = ctx.clone();
    let window = tokio::spawn(async move {
        tokio::time::sleep_until(measure_from.into()).await;
        let c0 = cpu_time::ProcessTime::try_now().ok();
        let r0 = session_cache_stats(&cache.receiver);
        let t0 = Instant::now();
        tokio::time::sleep_until(end.into()).await;
        let cpu = c0.map_or(0.0, |c| c.elapsed().as_secs_f64());
        let roots = r0.zip(session_cache_stats(&cache.receiver)).map(|(a, b)| {
            run::summary::RootCacheFigures {
                hits: b.hits.saturating_sub(a.hits),
                misses: b.misses.saturating_sub(a.misses),
            }
        });
        (cpu, t0.elapsed().as_secs_f64(), roots)
    });
    let (spool, records_tx) = Spool::start(spec)?;
    let mut handles = Vec::new();
    match spec.cell.arrival {
        Loop::Closed => {
            for &w in workers {
                handles.push(tokio::spawn(closed_worker(
                    ctx.clone(),
                    w,
                    records_tx.clone(),
                )));
            }
        }
        Loop::Open { rate } => {
            #[allow(clippy::cast_precision_loss, reason = "worker counts are small")]
            let share = rate * workers.len() as f64 / f64::from(spec.cell.concurrency);
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let queue: Queue = Arc::new(Mutex::new(rx));
            let seed = spec.seed.wrapping_add(u64::from(spec.processes.index));
            tokio::spawn(arrivals(share, seed, origin, end, tx));
            for &w in workers {
                handles.push(tokio::spawn(open_worker(
                    ctx.clone(),
                    w,
                    queue.clone(),
                    records_tx.clone(),
                )));
            }
        }
    }
    let mut worker_start_ms = Vec::new();
    for h in handles {
        worker_start_ms.push(h.await.map_err(|source| Error::Task {
            what: "worker",
            source,
        })?);
    }
    // An interleaved run's workers stop after its last own slice, which may end up to
    // (arms − 1) slices before the window does. The spool's writer thread encodes its last
    // row group as soon as every sender is gone, so this one is held until the window's
    // end: encoding up to 16,384 records on the clients' core took it from the block-mates'
    // last slices (issue 35: every arm's last drift bin at 0.6-0.8 of its run's mean,
    // latency 2.5×, because whichever arm finished first was sorting and encoding while the
    // others measured). Without turns the workers ran to the end already.
    tokio::time::sleep_until(end.into()).await;
    drop(records_tx);
    // Every sender is gone: the spool finishes its files (blocking, off the runtime).
    let spooled = tokio::task::spawn_blocking(move || spool.finish())
        .await
        .map_err(|source| Error::Task {
            what: "records spool",
            source,
        })??;
    let (window_cpu_s, window_wall_s, root_cache) = window.await.unwrap_or((0.0, 0.0, None));
    let samples = sampler.finish().await;
    // The last spans go out before cleanup; flushing blocks, so off the runtime's threads.
    let traces = match traces {
        Some(t) => tokio::task::spawn_blocking(move || t.finish()).await.ok(),
        None => None,
    };
    Ok(Measured {
        spooled,
        root_cache,
        worker_start_ms,
        window_cpu_s,
        window_wall_s,
        samples,
        traces,
    })
}

/// Objects deleted per slice at cleanup (what is read back from the spool at a time).
const CLEANUP_SLICE: usize = 1000;

/// Phase: cleanup, outside the window. Deletes the fixtures and what the run wrote (read
/// back from the spool a slice at a time); how many objects, what failed (at most 100),
/// and how long it took.
async fn cleanup(
    store: &Store,
    format: envelope::Format,
    fixtures: &[(String, String)],
    written: &Path,
) -> (u64, Vec<String>, f64) {
    let t = Instant::now();
    let (mut deleted, mut failed) = (0, Vec::new());
    let mut delete = async |slice: &[(String, String)], failed: &mut Vec<String>| {
        match store.delete_many(slice, format).await {
            Ok((d, f)) => {
                deleted += d;
                failed.extend(f);
            }
            Err(e) => failed.push(format!("cleanup: {e}")),
        }
        failed.truncate(100);
    };
    if !fixtures.is_empty() {
        delete(fixtures, &mut failed).await;
    }
    // One slice in memory at a time: a long PUT run wrote millions of objects.
    match crate::spool::WrittenSlices::open(written, CLEANUP_SLICE) {
        Ok(mut slices) => loop {
            match slices.next_slice() {
                Ok(Some(slice)) => delete(&slice, &mut failed).await,
                Ok(None) => break,
                Err(e) => {
                    failed.push(format!("cleanup: {e}"));
                    break;
                }
            }
        },
        Err(e) => failed.push(format!("cleanup: {e}")),
    }
    (deleted, failed, t.elapsed().as_secs_f64())
}

/// Runs the spec's run in this process, phase by phase: the pause rule, keys, the
/// known-answer gate, the warm-up round trip, fixtures, the start gate, warm-up and
/// measured window (and drain), cleanup. Call inside a multi-thread Tokio runtime with
/// enough worker threads (see [`runtime_threads`]).
pub async fn execute(
    spec: &RunSpec,
    monitor: Arc<Monitor>,
    metrics: Option<&Metrics>,
) -> Result<Executed> {
    spec.validate()?;
    let prep_t0 = Instant::now();
    let mut spec = spec.clone();
    let workers = spec.processes.workers(spec.cell.concurrency);
    let settings = settings(&spec, workers.len())?;
    let store = Store::new(&settings, &spec.s3.bucket, &spec.campaign)?;
    let traces = start_traces(&spec)?;
    let run_metrics = metrics.map(|m| {
        m.run(
            spec.cell.mode.name(),
            spec.cell.backend.name(),
            spec.cell.operation.as_str(),
        )
    });
    let host: HostInfo = host_info();
    let mut sources = Sources::new(&spec.telemetry).map_err(|e| Error::Telemetry(e.to_string()))?;
    // The embedded key service's /metrics (a service given by endpoint has its own).
    if let Some(k) = spec
        .kms
        .as_ref()
        .filter(|_| spec.cell.kms.as_ref().is_some_and(KmsSpec::embedded))
    {
        sources = sources
            .with_key_service(&k.endpoint)
            .map_err(|e| Error::Telemetry(format!("kms.endpoint: {e}")))?;
    }
    let pause = match &spec.pause {
        Some(rule) => Some(crate::sampler::pause(&sources, rule).await),
        None => None,
    };

    let prepare_from = Instant::now();
    let keys = match run_service_key(&spec).await? {
        Some(pk) => Keys {
            sk: None,
            pk: Some(pk),
        },
        None => {
            let (sk, pk) = load_key(&spec)?;
            // A remote run's reader holds no secret key (the key service has it): the key
            // file gives the public key, and the secret is dropped (zeroized) here.
            let sk = sk.filter(|_| spec.cell.kms.is_none());
            Keys { sk, pk }
        }
    };
    let (gate, interop) = known_answer_gate(&spec).await?;
    let body = payload(&spec)?;
    warm_up_round_trip(&spec, &store, &keys, &body).await?;
    let fixtures = write_fixtures(&spec, &store, &keys, &body, workers.len()).await?;
    let prepare_ms = prepare_from.elapsed().as_secs_f64() * 1e3;

    let start = match start_gate(&mut spec, prep_t0).await {
        Ok(s) => s,
        Err(e) => {
            let _ = store
                .delete_many(&fixtures, spec.cell.format.format())
                .await;
            return Err(e);
        }
    };
    monitor.start_in_ms.store(
        u64::try_from(start.lead.as_millis()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    let measure_from = start.origin + spec.warmup.0;
    let end = measure_from + spec.measured.0;
    let (sender, receiver) = keys.endpoints(&spec)?;
    let ctx = Arc::new(Ctx {
        store: store.clone(),
        sender,
        receiver,
        op: spec.cell.operation,
        size: spec.cell.object_size.0,
        body,
        fixtures,
        prefix: prefix(&spec),
        origin: start.origin,
        origin_unix_ns: start.origin_unix_ns,
        measure_from,
        end,
        start_by: end + spec.drain.0,
        turns: spec.turns,
        turn_opened: spec.turns.and_then(|t| turn_clock(t, start.origin, end)),
        monitor,
        metrics: run_metrics,
        traces: traces.clone(),
    });
    let m = measure(&spec, ctx.clone(), &workers, &sources, traces).await?;

    let (cleanup_deleted, cleanup_failed, cleanup_s) = cleanup(
        &store,
        spec.cell.format.format(),
        &ctx.fixtures,
        &m.spooled.written,
    )
    .await;

    let info = ProcessInfo {
        index: spec.processes.index,
        workers,
        start_at: spec.start_at.clone().unwrap_or_default(),
        start_at_unix_ns: start.origin_unix_ns,
        ready_lead_ms: start.lead.as_secs_f64() * 1e3,
        prepare_ms,
        worker_start_ms: m.worker_start_ms,
        window_cpu_s: m.window_cpu_s,
        window_wall_s: m.window_wall_s,
        runtime_threads: tokio::runtime::Handle::current().metrics().num_workers(),
        host,
        client: Some(settings.record()),
        gate: format!(
            "passed: {} on {} (golden object, cross-backend round trip, |pk| = {}, |C| = {})",
            gate.mode, gate.backend, gate.public_key_len, gate.ciphertext_len
        ),
        interop: Some(interop),
        pause,
        cleanup_deleted,
        cleanup_failed,
        cleanup_s,
        sampler_errors: sources.errors(),
        traces: m.traces,
        server_cpu_list: spec
            .telemetry
            .local_server_pid
            .and_then(crate::affinity::cpu_list_of),
        root_cache: m.root_cache,
    };
    Ok(Executed {
        spec,
        data: ProcessData {
            info,
            digest: m.spooled.digest,
            samples: m.samples,
        },
        records: m.spooled.records,
    })
}

/// Runtime worker threads for a process running `workers` workers: one per worker up to
/// the cores available (a request is then not handed between threads more than needed).
pub fn runtime_threads(workers: usize) -> usize {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "core counts are small"
    )]
    let cores = host_info().cores_available.ceil().max(1.0) as usize;
    workers.clamp(1, cores)
}

/// The start gate ([`run::runspec::StartGate`]): announces this process ready in the
/// results bucket or the output directory, then polls for the run's start instant until
/// the gate's timeout.
async fn wait_for_start(spec: &RunSpec, gate: &run::runspec::StartGate) -> Result<SystemTime> {
    match &spec.output {
        run::runspec::Output::S3 { bucket, prefix, .. } => {
            gate_in_bucket(spec, gate, bucket, prefix).await
        }
        run::runspec::Output::Dir(root) => gate_in_dir(spec, gate, root).await,
    }
}

fn parse_start(text: &str, place: &str) -> Result<SystemTime> {
    let text = text.trim();
    humantime::parse_rfc3339_weak(text).map_err(|e| {
        Error::StartGate(format!(
            "{place} holds {text:?}, not an RFC 3339 instant: {e}"
        ))
    })
}

fn gate_timed_out(place: &str, gate: &run::runspec::StartGate, last: &str) -> Error {
    Error::StartGate(format!(
        "no start instant at {place} within {} after becoming ready ({last})",
        campaign::units::format_duration(gate.timeout.0)
    ))
}

/// The gate in a directory: `<root>/<runId>/ready/p<index>`, then `<root>/<runId>/start-at`
/// (the executor writes it whole, by rename).
async fn gate_in_dir(
    spec: &RunSpec,
    gate: &run::runspec::StartGate,
    root: &std::path::Path,
) -> Result<SystemTime> {
    let ready = root.join(run::runspec::ready_key(
        "",
        &spec.run_id,
        spec.processes.index,
    ));
    let out_err = |path: &std::path::Path, e: std::io::Error| Error::writing(path, &e);
    if let Some(dir) = ready.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| out_err(dir, e))?;
    }
    let now = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    tokio::fs::write(&ready, now)
        .await
        .map_err(|e| out_err(&ready, e))?;
    let key = root.join(run::runspec::start_key("", &spec.run_id));
    let place = key.display().to_string();
    let give_up = Instant::now() + gate.timeout.0;
    let mut last = String::from("no start instant yet");
    loop {
        // Read before looking: giving up at `now` means a look begun at or after the
        // timeout found nothing.
        let now = Instant::now();
        match tokio::fs::read_to_string(&key).await {
            Ok(text) => return parse_start(&text, &place),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => last = e.to_string(),
        }
        if now >= give_up {
            return Err(gate_timed_out(&place, gate, &last));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The gate in the results bucket: `<prefix><runId>/ready/p<index>`, then
/// `<prefix><runId>/start-at` (the operator writes it).
async fn gate_in_bucket(
    spec: &RunSpec,
    gate: &run::runspec::StartGate,
    bucket: &str,
    prefix: &str,
) -> Result<SystemTime> {
    let s3 = results_settings(spec)?.client()?;
    let ready = run::runspec::ready_key(prefix, &spec.run_id, spec.processes.index);
    let now = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    s3.put_object()
        .bucket(bucket)
        .key(&ready)
        .body(now.into_bytes().into())
        .send()
        .await
        .map_err(|e| Error::Store(s3::Error::s3("PutObject", bucket, &ready, e)))?;
    let key = run::runspec::start_key(prefix, &spec.run_id);
    let give_up = Instant::now() + gate.timeout.0;
    let mut last = String::from("no start instant yet");
    loop {
        // As in the directory: the instant is read before the look.
        let now = Instant::now();
        match s3.get_object().bucket(bucket).key(&key).send().await {
            Ok(o) => {
                let body =
                    o.body.collect().await.map_err(|e| {
                        Error::StartGate(format!("reading s3://{bucket}/{key}: {e}"))
                    })?;
                let text = String::from_utf8_lossy(&body.into_bytes()).into_owned();
                return parse_start(&text, &format!("s3://{bucket}/{key}"));
            }
            Err(e) => {
                let e = s3::Error::s3("GetObject", bucket, &key, e);
                if e.s3_class() != Some(s3::S3Class::NotFound) {
                    last = e.to_string();
                }
            }
        }
        if now >= give_up {
            return Err(gate_timed_out(&format!("s3://{bucket}/{key}"), gate, &last));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How a process runs a spec, besides the spec itself.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Phases and a once-a-second status line on stderr.
    pub progress: bool,
    /// Serve the worker's metrics ([`crate::metrics`]) on `/metrics` at this address while
    /// the run goes (port 0: any free port; the address is printed on stderr).
    pub metrics_addr: Option<std::net::SocketAddr>,
}

impl RunOptions {
    /// With progress on stderr.
    pub fn progress() -> Self {
        Self {
            progress: true,
            ..Self::default()
        }
    }
}

/// Runs a spec from start to files on a runtime of its own: prepare, execute, summarise,
/// write (and upload).
pub fn run_to_files(spec: &RunSpec, opts: &RunOptions) -> Result<crate::output::Written> {
    let progress = opts.progress;
    let workers = spec.processes.workers(spec.cell.concurrency).len();
    // Placement first: the runtime's threads inherit it, and the host info reads it.
    if let Some(cpus) = &spec.cpus {
        crate::affinity::confine(cpus).map_err(Error::Placement)?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(runtime_threads(workers))
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let monitor = Arc::new(Monitor::default());
    let show = progress.then(|| {
        let m = monitor.clone();
        let (warm, measured) = (spec.warmup.0, spec.measured.0);
        rt.spawn(crate::progress::show(m, warm, measured))
    });
    // SIGTERM (a pod's deletion, `podman stop`) stops the run wherever it is: the process
    // exits at once instead of being killed at the end of the grace period, and without a
    // checksum manifest its files never count as complete. (A container's first process
    // that installs no handler ignores SIGTERM altogether.)
    let mut term = rt
        .block_on(async { signal(SignalKind::terminate()) })
        .map_err(Error::Runtime)?;
    let res = rt.block_on(async {
        tokio::select! {
            r = run_and_write(spec, opts, &monitor, show.as_ref()) => r,
            _ = term.recv() => Err(Error::Terminated),
        }
    });
    if matches!(res, Err(Error::Terminated)) {
        // The run's tasks are abandoned mid-request, blocking ones included: no waiting.
        rt.shutdown_background();
    }
    // Aborted, the status task dropped its bar with the runtime.
    res
}

/// The run and its files, on the caller's runtime.
async fn run_and_write(
    spec: &RunSpec,
    opts: &RunOptions,
    monitor: &Arc<Monitor>,
    show: Option<&tokio::task::JoinHandle<()>>,
) -> Result<crate::output::Written> {
    let metrics = Arc::new(Metrics::default());
    let server = match opts.metrics_addr {
        Some(addr) => {
            let m = metrics.clone();
            let (bound, h) = crate::metrics::serve(
                addr,
                Arc::new(move |accept| crate::metrics::exposition(m.registry(), accept)),
            )
            .await?;
            eprintln!("metrics: http://{bound}/metrics");
            Some(h)
        }
        None => None,
    };
    let ex = execute(
        spec,
        monitor.clone(),
        opts.metrics_addr.is_some().then_some(&*metrics),
    )
    .await;
    if let Some(h) = server {
        h.abort();
    }
    if let Some(h) = show {
        h.abort();
    }
    let ex = ex?;
    let results = match &ex.spec.output {
        run::runspec::Output::S3 { .. } => Some(results_settings(&ex.spec)?),
        run::runspec::Output::Dir(_) => None,
    };
    crate::output::write(&ex, results.as_ref()).await
}

/// One process's run, written and checked on its own ([`run_and_validate`]).
#[derive(Debug)]
pub struct Checked {
    /// The files written and the summary.
    pub written: crate::output::Written,
    /// Failed validator checks (run completeness left out: the run's other processes may
    /// not have finished).
    pub failures: Vec<crate::validate::Finding>,
}

impl Checked {
    /// Whether the run is valid and its files pass every check.
    pub fn valid(&self) -> bool {
        self.written.summary.valid && self.failures.is_empty()
    }

    /// Prints the failed validator checks and the run's own failed checks on stderr.
    pub fn eprint_failures(&self) {
        for f in &self.failures {
            eprintln!(
                "validation FAILED {} at {}: {}",
                f.check, f.location, f.detail
            );
        }
        for c in self.written.summary.checks.iter().filter(|c| !c.passed) {
            eprintln!("run check FAILED {}: {}", c.name, c.detail);
        }
    }
}

/// Runs one process of a run ([`run_to_files`]) and validates its files on their own.
pub fn run_and_validate(spec: &RunSpec, opts: &RunOptions) -> Result<Checked> {
    let written = run_to_files(spec, opts)?;
    let report = crate::validate::validate(&written.dir);
    let mut failures: Vec<crate::validate::Finding> = report
        .failures()
        .filter(|f| f.check != "complete")
        .cloned()
        .collect();
    if report.processes == 0 {
        failures.push(crate::validate::Finding {
            check: "checksums",
            location: written.dir.display().to_string(),
            passed: false,
            detail: "validation found no run files".into(),
        });
    }
    Ok(Checked { written, failures })
}
