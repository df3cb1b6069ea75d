//! `pqbench inventory`: what in a bucket is classical, and what moving it to post-quantum
//! recipients would cost (`docs/src/envelope/migration.md`).
//!
//! The listing and the envelope reads are the I/O edge ([`collect`]); the classification
//! is `envelope::survey`; the tallies and the estimate ([`Inventory::build`]) are pure; the
//! client CPU per object is measured in this process on throwaway keys ([`measure`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use envelope::survey::{Protection, Sealing};
use envelope::v2::{self, Placement};
use envelope::{Backend, Format, KeyType, Mode, ObjectId, SealKey, SecretKey};
use s3::{Foreign, KeyListing, MULTIPART_THRESHOLD, PART_SIZE, Store};
use serde::Serialize;
use worker::progress::{Progress, Unit};

use crate::s3cmd::S3Args;

/// `pqbench inventory`'s arguments.
#[derive(Args, Debug)]
pub(crate) struct InventoryArgs {
    #[command(flatten)]
    s3: S3Args,
    /// Bucket.
    #[arg(long)]
    bucket: String,
    /// Only under this key prefix (the whole bucket by default).
    #[arg(long, default_value = "")]
    prefix: String,
    /// The post-quantum mode the estimate re-encrypts to (format v2, one recipient):
    /// ml-kem-768, ml-kem-1024 or x-wing.
    #[arg(long, default_value = "ml-kem-768", value_parser = parse_target)]
    to: Mode,
    /// Backend of the measured client-CPU sample.
    #[arg(long, default_value = "aws-lc")]
    backend: Backend,
    /// Envelope reads in flight; also the estimate's requests in flight.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    concurrency: u16,
    /// Client cores the estimate spreads its CPU over (default: this machine's).
    #[arg(long)]
    cores: Option<u16>,
    /// The network rate the estimate moves bytes at, in Gbit/s.
    #[arg(long, default_value_t = 1.0)]
    link_gbps: f64,
    /// Write inventory.json and inventory.svg in this directory (created if needed).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the JSON instead of the table.
    #[arg(long)]
    json: bool,
}

fn parse_target(s: &str) -> Result<Mode, String> {
    let m: Mode = s.parse().map_err(|e: envelope::Error| e.to_string())?;
    match m {
        Mode::MlKem768 | Mode::MlKem1024 | Mode::XWing => Ok(m),
        _ => Err(format!(
            "{m} is not a post-quantum format-v2 mode: --to takes ml-kem-768, ml-kem-1024 or x-wing"
        )),
    }
}

/// One committed version, as read.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct VersionRow {
    key: String,
    version: String,
    /// The version `get` reads without `--version`.
    latest: bool,
    format: &'static str,
    /// v2: `metadata` or `prefix`.
    #[serde(skip_serializing_if = "Option::is_none")]
    placement: Option<&'static str>,
    /// Bytes stored: v1 data and manifest, v2 the object.
    stored_bytes: u64,
    /// A [`Protection`] name, or `unreadable`.
    class: &'static str,
    /// The wraps' key types joined with `+` (`none` for plaintext).
    kems: String,
    recipients: usize,
    commitment: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    plaintext_bytes: Option<u64>,
    key_ids: Vec<String>,
    /// Why an `unreadable` version could not be classified.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// The v1 mode, for the CPU sample.
    #[serde(skip)]
    source: Option<Source>,
    /// The class (`None`: unreadable).
    #[serde(skip)]
    protection: Option<Protection>,
}

impl VersionRow {
    /// Whether a migration to post-quantum recipients moves this version's class.
    fn moves(&self) -> bool {
        self.protection.is_some_and(Protection::needs_migration)
    }
}

/// What a version would be opened as, for the CPU sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    V1(Mode),
    /// A v2 object, opened as its first recipient: the mode of that key type.
    V2(Mode),
}

impl Source {
    fn of(s: &Sealing) -> Option<Self> {
        match (s.format, s.mode) {
            (Format::V1, Some(m)) => Some(Source::V1(m)),
            (Format::V2, _) => s.wraps.first().and_then(|w| {
                [Mode::X25519, Mode::MlKem768, Mode::MlKem1024, Mode::XWing]
                    .into_iter()
                    .find(|m| m.key_type() == w.key_type)
                    .map(Source::V2)
            }),
            _ => None,
        }
    }

    fn label(self) -> String {
        match self {
            Source::V1(m) => format!("v1 {m}"),
            Source::V2(m) => format!("v2 {m}"),
        }
    }
}

/// Versions and bytes of one class.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct ClassRow {
    class: &'static str,
    versions: u64,
    latest: u64,
    stored_bytes: u64,
    plaintext_bytes: u64,
}

/// Versions of one (class, format, KEMs, recipients, commitment).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct GroupRow {
    class: &'static str,
    format: &'static str,
    kems: String,
    recipients: usize,
    commitment: bool,
    versions: u64,
    latest: u64,
    stored_bytes: u64,
}

/// One recipient key and the versions it opens.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RecipientRow {
    key_id: String,
    kem: String,
    versions: u64,
    latest: u64,
}

/// Client CPU per object of one source, measured: `object_us + per_mib_us · MiB`, for
/// opening the old version, sealing the new one and opening it to verify.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct CpuSample {
    source: String,
    object_us: f64,
    per_mib_us: f64,
}

/// Requests of the estimate, by kind.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Requests {
    /// The envelope read of `migrate`'s plan, before each move.
    envelopes: u64,
    lists: u64,
    reads: u64,
    writes: u64,
    verifies: u64,
    total: u64,
}

/// What re-encrypting every latest classical or mixed version would take.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Estimate {
    to: &'static str,
    backend: &'static str,
    /// Latest versions to move.
    versions: u64,
    /// Older classical or mixed versions, not moved (they stay until deleted).
    older_versions: u64,
    /// Of the versions to move, those with a v2.1 header in metadata, which `migrate
    /// --rewrap` re-wraps with one CopyObject instead (FORMAT-v2.md §10: no body through
    /// the client; the old data key stays), and their stored bytes. The estimate above is
    /// for re-encrypting them.
    rewrappable_versions: u64,
    rewrappable_bytes: u64,
    plaintext_bytes: u64,
    requests: Requests,
    bytes_down: u64,
    bytes_up: u64,
    /// Client CPU: the envelopes' crypto plus every request at the measured CPU per request.
    cpu_seconds: f64,
    /// The crypto's part, measured on throwaway keys.
    crypto_cpu_seconds: f64,
    /// Client CPU per S3 request, measured while reading the envelopes (µs).
    request_cpu_us: f64,
    samples: Vec<CpuSample>,
    cores: u16,
    concurrency: u16,
    link_gbps: f64,
    /// The mean wall time of one S3 request of the envelope reads, measured (ms).
    request_ms: f64,
    cpu_bound_seconds: f64,
    request_bound_seconds: f64,
    transfer_bound_seconds: f64,
    /// The largest of the three: a floor.
    seconds: f64,
    bound: &'static str,
}

/// What the envelope reads cost.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct ReadCost {
    requests: u64,
    bytes: u64,
    /// The reads' wall time, added up.
    seconds: f64,
    /// This process's CPU time while reading (every thread): what the S3 client costs.
    cpu_seconds: f64,
}

/// The whole inventory (`inventory.json`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Inventory {
    schema: &'static str,
    bucket: String,
    prefix: String,
    keys: u64,
    uncommitted: u64,
    foreign_objects: u64,
    foreign_bytes: u64,
    classes: Vec<ClassRow>,
    groups: Vec<GroupRow>,
    recipients: Vec<RecipientRow>,
    estimate: Estimate,
    read: ReadCost,
    versions: Vec<VersionRow>,
}

/// What [`collect`] read.
struct Collected {
    keys: Vec<KeyListing>,
    foreign: Foreign,
    rows: Vec<VersionRow>,
    read: ReadCost,
}

const UNREADABLE: &str = "unreadable";

fn row(
    listing: &KeyListing,
    v: &s3::VersionInfo,
    latest: bool,
    read: std::result::Result<Sealing, String>,
) -> VersionRow {
    let stored_bytes = v.data_size.unwrap_or(0) + v.manifest_size;
    let format = match v.format {
        Format::V1 => "v1",
        Format::V2 => "v2",
    };
    let mut r = VersionRow {
        key: listing.key.clone(),
        version: v.version.clone(),
        latest,
        format,
        placement: None,
        stored_bytes,
        class: UNREADABLE,
        kems: String::new(),
        recipients: 0,
        commitment: false,
        plaintext_bytes: None,
        key_ids: Vec::new(),
        reason: None,
        source: None,
        protection: None,
    };
    match read {
        Ok(s) => {
            r.placement = s.placement.map(|p| match p {
                Placement::Metadata => "metadata",
                Placement::Prefix => "prefix",
            });
            r.class = s.protection.name();
            r.protection = Some(s.protection);
            r.kems = s.kems();
            r.recipients = s.wraps.len();
            r.commitment = s.commitment;
            r.plaintext_bytes = Some(s.plaintext_size);
            r.key_ids = s.wraps.iter().filter_map(|w| w.key_id.clone()).collect();
            r.source = Source::of(&s);
            if s.rewrappable {
                r.format = "v2.1";
            }
        }
        Err(reason) => r.reason = Some(reason),
    }
    r
}

/// Reads the envelopes of `jobs` (key, version), `concurrency` at a time; `on(done)` after
/// each. The results in `jobs`' order, each with its wall time.
pub(crate) async fn read_envelopes(
    store: &Store,
    jobs: Vec<(String, s3::VersionInfo)>,
    concurrency: usize,
    mut on: impl FnMut(usize),
) -> Result<Vec<(s3::Result<s3::EnvelopeRead>, Duration)>> {
    let mut results: Vec<Option<(s3::Result<s3::EnvelopeRead>, Duration)>> =
        (0..jobs.len()).map(|_| None).collect();
    let mut set = tokio::task::JoinSet::new();
    let mut next = jobs.into_iter().enumerate();
    let mut done = 0;
    loop {
        while set.len() < concurrency.max(1) {
            let Some((i, (key, info))) = next.next() else {
                break;
            };
            let store = store.clone();
            set.spawn(async move {
                let t = Instant::now();
                let r = store.sealing(&key, &info.version, info.format).await;
                (i, r, t.elapsed())
            });
        }
        let Some(joined) = set.join_next().await else {
            break;
        };
        let (i, r, took) = joined.context("an envelope read panicked")?;
        results[i] = Some((r, took));
        done += 1;
        on(done);
    }
    results
        .into_iter()
        .map(|r| r.context("an envelope read did not report"))
        .collect()
}

/// Lists the bucket and reads every committed version's envelope, `concurrency` at a
/// time, with a progress bar on a terminal.
async fn collect(store: &Store, prefix: &str, concurrency: usize) -> Result<Collected> {
    let (keys, foreign) = store
        .survey(prefix)
        .await
        .with_context(|| format!("cannot list s3://{}/{prefix}", store.bucket()))?;
    let slots: Vec<(usize, usize)> = keys
        .iter()
        .enumerate()
        .flat_map(|(k, l)| (0..l.versions.len()).map(move |v| (k, v)))
        .collect();
    let jobs = slots
        .iter()
        .map(|&(k, v)| (keys[k].key.clone(), keys[k].versions[v].clone()))
        .collect();
    let total = slots.len() as u64;
    // At most about 20 lines when stderr is not a terminal.
    let step = (total / 20).max(1);
    let progress = Progress::new("envelopes read", total, Unit::Count);
    let cpu = cpu_time::ProcessTime::try_now().context("no process CPU clock")?;
    let read = read_envelopes(store, jobs, concurrency, |done| {
        let done = done as u64;
        if done.is_multiple_of(step) || done == total {
            progress.set(done, "", None);
        }
    })
    .await?;
    progress.finish();
    let busy: Duration = read.iter().map(|(_, took)| *took).sum();
    let results: BTreeMap<(usize, usize), std::result::Result<s3::EnvelopeRead, String>> = slots
        .into_iter()
        .zip(read)
        .map(|(slot, (r, _))| (slot, r.map_err(|e| format!("{e:#}"))))
        .collect();
    let mut rows = Vec::with_capacity(results.len());
    let mut read = ReadCost {
        requests: 0,
        bytes: 0,
        seconds: busy.as_secs_f64(),
        cpu_seconds: cpu.elapsed().as_secs_f64(),
    };
    for ((k, v), r) in results {
        let l = &keys[k];
        let latest = l.latest().map(|x| &x.version) == Some(&l.versions[v].version);
        if let Ok(e) = &r {
            read.bytes += e.bytes;
            read.requests += u64::from(e.requests);
        } else {
            // A failed read made at least one request.
            read.requests += 1;
        }
        rows.push(row(l, &l.versions[v], latest, r.map(|e| e.sealing)));
    }
    Ok(Collected {
        keys,
        foreign,
        rows,
        read,
    })
}

/// `n` as a float, for estimates and sizes in words (exact below 2^53).
#[allow(clippy::cast_precision_loss, reason = "estimates and sizes in words")]
fn float(n: u64) -> f64 {
    n as f64
}

/// The new version's size: v2 chunks and a one-recipient header of `to`.
fn new_size(plaintext: u64, to: Mode) -> u64 {
    v2::chunks_len(plaintext) + (v2::FIXED_LEN + 86 + to.ciphertext_len()) as u64
}

/// Requests to move one version as `pqbench migrate` moves it: its envelope read when the
/// move is planned, the old version's reads, the key listed before and after writing (two
/// LISTs), the new one's writes (one PUT, or a multipart upload above the threshold) and
/// one read back.
fn requests_for(format: &str, new: u64) -> Requests {
    let reads = if format == "v1" { 2 } else { 1 };
    let writes = if new <= MULTIPART_THRESHOLD {
        1
    } else {
        2 + new.div_ceil(PART_SIZE)
    };
    Requests {
        envelopes: 1,
        lists: 2,
        reads,
        writes,
        verifies: 1,
        total: 1 + 2 + reads + writes + 1,
    }
}

/// The settings the estimate takes from the command line.
struct Plan {
    to: Mode,
    backend: Backend,
    cores: u16,
    concurrency: u16,
    link_gbps: f64,
}

impl Inventory {
    /// Tallies and the estimate from what was read and the measured CPU per object.
    fn build(
        bucket: &str,
        prefix: &str,
        c: Collected,
        plan: &Plan,
        samples: &BTreeMap<Source, (f64, f64)>,
    ) -> Self {
        let classes = classes(&c.rows);
        let groups = groups(&c.rows);
        let recipients = recipients(&c.rows);
        let estimate = estimate(&c.rows, plan, samples, &c.read);
        Inventory {
            schema: "pqbench.inventory/1",
            bucket: bucket.into(),
            prefix: prefix.into(),
            keys: c.keys.len() as u64,
            uncommitted: c.keys.iter().map(|k| k.uncommitted as u64).sum(),
            foreign_objects: c.foreign.objects,
            foreign_bytes: c.foreign.bytes,
            classes,
            groups,
            recipients,
            estimate,
            read: c.read,
            versions: c.rows,
        }
    }
}

fn classes(rows: &[VersionRow]) -> Vec<ClassRow> {
    let names = Protection::ALL.iter().map(|p| p.name()).chain([UNREADABLE]);
    names
        .map(|class| {
            let mut c = ClassRow {
                class,
                ..ClassRow::default()
            };
            for r in rows.iter().filter(|r| r.class == class) {
                c.versions += 1;
                c.latest += u64::from(r.latest);
                c.stored_bytes += r.stored_bytes;
                c.plaintext_bytes += r.plaintext_bytes.unwrap_or(0);
            }
            c
        })
        .collect()
}

fn groups(rows: &[VersionRow]) -> Vec<GroupRow> {
    let mut g: BTreeMap<(&str, &str, &str, usize, bool), GroupRow> = BTreeMap::new();
    for r in rows {
        let e = g
            .entry((r.class, r.format, &r.kems, r.recipients, r.commitment))
            .or_insert_with(|| GroupRow {
                class: r.class,
                format: r.format,
                kems: r.kems.clone(),
                recipients: r.recipients,
                commitment: r.commitment,
                versions: 0,
                latest: 0,
                stored_bytes: 0,
            });
        e.versions += 1;
        e.latest += u64::from(r.latest);
        e.stored_bytes += r.stored_bytes;
    }
    g.into_values().collect()
}

fn recipients(rows: &[VersionRow]) -> Vec<RecipientRow> {
    let mut m: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for r in rows {
        let kems: Vec<&str> = r.kems.split('+').collect();
        for (i, id) in r.key_ids.iter().enumerate() {
            let kem = kems.get(i).copied().unwrap_or("?").to_owned();
            let e = m.entry((id.clone(), kem)).or_default();
            e.0 += 1;
            e.1 += u64::from(r.latest);
        }
    }
    m.into_iter()
        .map(|((key_id, kem), (versions, latest))| RecipientRow {
            key_id,
            kem,
            versions,
            latest,
        })
        .collect()
}

fn estimate(
    rows: &[VersionRow],
    plan: &Plan,
    samples: &BTreeMap<Source, (f64, f64)>,
    read: &ReadCost,
) -> Estimate {
    let mut req = Requests::default();
    let (mut versions, mut older, mut plaintext, mut down, mut up, mut cpu_us) =
        (0, 0, 0, 0, 0, 0.0);
    let (mut rewrappable, mut rewrappable_bytes) = (0, 0);
    for r in rows.iter().filter(|r| r.moves()) {
        if !r.latest {
            older += 1;
            continue;
        }
        if r.format == "v2.1" && r.placement == Some("metadata") {
            rewrappable += 1;
            rewrappable_bytes += r.stored_bytes;
        }
        let pt = r.plaintext_bytes.unwrap_or(0);
        let new = new_size(pt, plan.to);
        let q = requests_for(r.format, new);
        versions += 1;
        plaintext += pt;
        down += r.stored_bytes + new;
        up += new;
        req.envelopes += q.envelopes;
        req.lists += q.lists;
        req.reads += q.reads;
        req.writes += q.writes;
        req.verifies += q.verifies;
        req.total += q.total;
        if let Some((a, b)) = r.source.and_then(|s| samples.get(&s)) {
            cpu_us += a + b * float(pt) / 1_048_576.0;
        }
    }
    let (request_ms, request_cpu_us) = if read.requests > 0 {
        (
            read.seconds * 1e3 / float(read.requests),
            read.cpu_seconds * 1e6 / float(read.requests),
        )
    } else {
        (0.0, 0.0)
    };
    let crypto_us = cpu_us;
    cpu_us += float(req.total) * request_cpu_us;
    let cpu_bound = cpu_us / 1e6 / f64::from(plan.cores.max(1));
    let request_bound = float(req.total) * request_ms / 1e3 / f64::from(plan.concurrency);
    let transfer_bound = float(down + up) * 8.0 / (plan.link_gbps * 1e9);
    let (seconds, bound) = [
        (cpu_bound, "client CPU"),
        (request_bound, "requests"),
        (transfer_bound, "transfer"),
    ]
    .into_iter()
    .fold(
        (0.0, "nothing to move"),
        |a, b| if b.0 > a.0 { b } else { a },
    );
    Estimate {
        to: plan.to.name(),
        backend: plan.backend.name(),
        versions,
        older_versions: older,
        rewrappable_versions: rewrappable,
        rewrappable_bytes,
        plaintext_bytes: plaintext,
        requests: req,
        bytes_down: down,
        bytes_up: up,
        cpu_seconds: cpu_us / 1e6,
        crypto_cpu_seconds: crypto_us / 1e6,
        request_cpu_us,
        samples: samples
            .iter()
            .map(|(s, (a, b))| CpuSample {
                source: s.label(),
                object_us: *a,
                per_mib_us: *b,
            })
            .collect(),
        cores: plan.cores,
        concurrency: plan.concurrency,
        link_gbps: plan.link_gbps,
        request_ms,
        cpu_bound_seconds: cpu_bound,
        request_bound_seconds: request_bound,
        transfer_bound_seconds: transfer_bound,
        seconds,
        bound,
    }
}

/// The thread's CPU time spent in `f`, in µs.
fn cpu_us(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = cpu_time::ThreadTime::try_now().context("no thread CPU clock")?;
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e6)
}

/// A throwaway key pair of `kt` (`None` for plaintext).
fn throwaway(kt: KeyType) -> Result<Option<SecretKey>> {
    if kt == KeyType::None {
        return Ok(None);
    }
    Ok(Some(SecretKey::generate(kt, &mut envelope::os_rng())?))
}

/// Client CPU of moving one object of `size` bytes from `source` to `to`: opening the old
/// version, sealing the new one and opening it again, mean of `reps`, in µs.
fn move_cpu(
    source: Source,
    to: &SecretKey,
    backend: Backend,
    size: usize,
    reps: u32,
) -> Result<f64> {
    let mut rng = envelope::os_rng();
    let id = ObjectId::new_version("inventory", "sample", "object")?;
    let pt = vec![0x5au8; size];
    let old = Old::seal(source, backend, &id, &pt)?;
    let to_pk = to
        .public_key()?
        .context("the target key has a public key")?;
    let kem = v2::kem_of(to.key_type()).context("the target mode has a v2 suite")?;
    let receiver = v2::Receiver::new(backend, to)?;
    let mut total = 0.0;
    for _ in 0..reps {
        total += cpu_us(|| {
            old.open(&id)?;
            let to = [v2::To {
                kem,
                public: to_pk.as_bytes(),
            }];
            let new = v2::seal(backend, &id, &to, false, Placement::Prefix, &pt, &mut rng)?;
            receiver
                .open(&id, &new.header, Placement::Prefix)?
                .open_all(&new.chunks)?;
            Ok(())
        })?;
    }
    Ok(total / f64::from(reps))
}

/// An object sealed as `source` seals, with its reader.
enum Old {
    V1 {
        receiver: envelope::Receiver,
        manifest: Vec<u8>,
        data: Vec<u8>,
    },
    V2 {
        receiver: v2::Receiver,
        sealed: v2::Sealed,
    },
}

impl Old {
    fn seal(source: Source, backend: Backend, id: &ObjectId, pt: &[u8]) -> Result<Self> {
        let mut rng = envelope::os_rng();
        match source {
            Source::V1(mode) => {
                let sk = throwaway(mode.key_type())?;
                let pk = sk
                    .as_ref()
                    .map(SecretKey::public_key)
                    .transpose()?
                    .flatten();
                let key = match (&pk, &sk) {
                    (Some(p), _) => SealKey::Public(p),
                    (None, Some(s)) => SealKey::Psk(s),
                    _ => SealKey::None,
                };
                let sender = envelope::Sender::new(mode, backend, key)?;
                let mut data = Vec::new();
                let sealed =
                    envelope::seal_stream(&sender, id, pt.len() as u64, pt, &mut data, &mut rng)?;
                Ok(Old::V1 {
                    receiver: envelope::Receiver::new(mode, backend, sk.as_ref())?,
                    manifest: sealed.manifest,
                    data,
                })
            }
            Source::V2(mode) => {
                let kt = mode.key_type();
                let sk = throwaway(kt)?.context("a v2 recipient has a key")?;
                let pk = sk.public_key()?.context("a v2 key has a public key")?;
                let kem = v2::kem_of(kt).context("a v2 suite")?;
                let to = [v2::To {
                    kem,
                    public: pk.as_bytes(),
                }];
                let sealed = v2::seal(backend, id, &to, false, Placement::Prefix, pt, &mut rng)?;
                Ok(Old::V2 {
                    receiver: v2::Receiver::new(backend, &sk)?,
                    sealed,
                })
            }
        }
    }

    fn open(&self, id: &ObjectId) -> Result<()> {
        match self {
            Old::V1 {
                receiver,
                manifest,
                data,
            } => {
                let mut out = Vec::new();
                envelope::open_stream(receiver, id, manifest, &data[..], &mut out)?;
            }
            Old::V2 { receiver, sealed } => {
                receiver
                    .open(id, &sealed.header, Placement::Prefix)?
                    .open_all(&sealed.chunks)?;
            }
        }
        Ok(())
    }
}

/// Measures every source found: the CPU of moving a 1 KiB and a 1 MiB object, as
/// `object_us + per_mib_us · MiB` (µs).
fn measure(
    sources: impl IntoIterator<Item = Source>,
    to: Mode,
    backend: Backend,
) -> Result<BTreeMap<Source, (f64, f64)>> {
    let target = throwaway(to.key_type())?.context("the target mode has a key")?;
    let mut out = BTreeMap::new();
    for s in sources {
        let backend = match s {
            // libcrux and OpenSSL have no RSA: the sample takes aws-lc for RSA sources.
            Source::V1(m) if backend.check_supports(m).is_err() => Backend::AwsLc,
            _ => backend,
        };
        let small = move_cpu(s, &target, backend, 1024, 8)
            .with_context(|| format!("measuring {}", s.label()))?;
        let large = move_cpu(s, &target, backend, 1 << 20, 2)
            .with_context(|| format!("measuring {}", s.label()))?;
        let per_mib = ((large - small) * 1_048_576.0 / (1_048_576.0 - 1024.0)).max(0.0);
        let object = (small - per_mib / 1024.0).max(0.0);
        out.insert(s, (object, per_mib));
    }
    Ok(out)
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = float(n);
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else {
        humantime::format_duration(Duration::from_secs_f64(s.round())).to_string()
    }
}

impl Inventory {
    /// The terminal table.
    fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut t = String::new();
        let versions: u64 = self.classes.iter().map(|c| c.versions).sum();
        let _ = writeln!(
            t,
            "s3://{}/{}: {versions} version(s) of {} key(s); {} object(s) not pqbench's ({}); {} uncommitted",
            self.bucket,
            self.prefix,
            self.keys,
            self.foreign_objects,
            bytes(self.foreign_bytes),
            self.uncommitted
        );
        let _ = writeln!(
            t,
            "\n{:<13} {:>9} {:>7} {:>11} {:>11}",
            "class", "versions", "latest", "stored", "plaintext"
        );
        for c in &self.classes {
            let _ = writeln!(
                t,
                "{:<13} {:>9} {:>7} {:>11} {:>11}",
                c.class,
                c.versions,
                c.latest,
                bytes(c.stored_bytes),
                bytes(c.plaintext_bytes)
            );
        }
        let _ = writeln!(
            t,
            "\n{:<13} {:<6} {:<28} {:>10} {:>10} {:>9} {:>7} {:>11}",
            "class", "format", "kems", "recipients", "commitment", "versions", "latest", "stored"
        );
        for g in &self.groups {
            let _ = writeln!(
                t,
                "{:<13} {:<6} {:<28} {:>10} {:>10} {:>9} {:>7} {:>11}",
                g.class,
                g.format,
                g.kems,
                g.recipients,
                if g.commitment { "yes" } else { "no" },
                g.versions,
                g.latest,
                bytes(g.stored_bytes)
            );
        }
        if !self.recipients.is_empty() {
            let _ = writeln!(t, "\nrecipients (key id, key type, versions, latest):");
            for r in &self.recipients {
                let _ = writeln!(
                    t,
                    "  {}  {:<18} {:>7} {:>7}",
                    r.key_id, r.kem, r.versions, r.latest
                );
            }
        }
        for r in self.versions.iter().filter(|r| r.class == UNREADABLE) {
            let _ = writeln!(
                t,
                "unreadable: {} version {}: {}",
                r.key,
                r.version,
                r.reason.as_deref().unwrap_or("")
            );
        }
        t.push_str(&self.estimate.words());
        t
    }
}

impl Estimate {
    fn words(&self) -> String {
        use std::fmt::Write as _;
        let mut t = String::new();
        let _ = writeln!(
            t,
            "\nmoving the {} latest classical or mixed version(s) ({} of plaintext) to {} (format v2, re-encryption):",
            self.versions,
            bytes(self.plaintext_bytes),
            self.to
        );
        let q = &self.requests;
        let _ = writeln!(
            t,
            "  requests     {} ({} envelope reads, {} lists, {} reads, {} writes, {} reads back)",
            q.total, q.envelopes, q.lists, q.reads, q.writes, q.verifies
        );
        let _ = writeln!(
            t,
            "  bytes        {} down, {} up",
            bytes(self.bytes_down),
            bytes(self.bytes_up)
        );
        let _ = writeln!(
            t,
            "  client CPU   {}: the requests at {:.0} µs each (measured while reading the envelopes) and {} of crypto ({}, measured here per object: open the old version, seal the new, open it again)",
            seconds(self.cpu_seconds),
            self.request_cpu_us,
            seconds(self.crypto_cpu_seconds),
            self.backend
        );
        for s in &self.samples {
            let _ = writeln!(
                t,
                "    {:<26} {:>8.1} µs per object + {:>8.1} µs per MiB",
                format!("{} → {}", s.source, self.to),
                s.object_us,
                s.per_mib_us
            );
        }
        let _ = writeln!(
            t,
            "  time         at least {}, bound by {}: CPU {} over {} core(s); {} requests of {:.1} ms, {} in flight: {}; {} at {} Gbit/s: {}",
            seconds(self.seconds),
            self.bound,
            seconds(self.cpu_seconds),
            self.cores,
            q.total,
            self.request_ms,
            self.concurrency,
            seconds(self.request_bound_seconds),
            bytes(self.bytes_down + self.bytes_up),
            self.link_gbps,
            seconds(self.transfer_bound_seconds)
        );
        if self.rewrappable_versions > 0 {
            let _ = writeln!(
                t,
                "  {} of them are v2.1 in metadata: `pqbench migrate --rewrap` moves them with one CopyObject each (6 requests: the envelope, HeadObject, CopyObject, 2 lists, a read back), {} not through the client (the old data key stays: FORMAT-v2.md §10.3)",
                self.rewrappable_versions,
                bytes(self.rewrappable_bytes)
            );
        }
        if self.older_versions > 0 {
            let _ = writeln!(
                t,
                "  {} older classical or mixed version(s) are not moved: they stay readable with the old keys until deleted",
                self.older_versions
            );
        }
        t
    }
}

/// `pqbench inventory`.
pub(crate) fn inventory(a: InventoryArgs) -> Result<()> {
    if !(a.link_gbps.is_finite() && a.link_gbps > 0.0) {
        bail!(
            "--link-gbps must be a positive number of Gbit/s, not {}",
            a.link_gbps
        );
    }
    if !a.backend.built() {
        bail!(
            "--backend {}: this build has no {} backend",
            a.backend,
            a.backend
        );
    }
    let settings = a.s3.settings("inventory")?;
    let store = Store::new(&settings, &a.bucket, "default")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let collected = rt.block_on(collect(&store, &a.prefix, usize::from(a.concurrency)))?;
    let sources: std::collections::BTreeSet<Source> = collected
        .rows
        .iter()
        .filter(|r| r.latest && r.moves())
        .filter_map(|r| r.source)
        .collect();
    let samples = measure(sources, a.to, a.backend)?;
    let cores = a.cores.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| u16::try_from(n.get()).unwrap_or(u16::MAX))
            .unwrap_or(1)
    });
    let plan = Plan {
        to: a.to,
        backend: a.backend,
        cores,
        concurrency: a.concurrency,
        link_gbps: a.link_gbps,
    };
    let inv = Inventory::build(&a.bucket, &a.prefix, collected, &plan, &samples);
    let json = serde_json::to_string_pretty(&inv)?;
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the output directory {}", dir.display()))?;
        let path = dir.join("inventory.json");
        std::fs::write(&path, format!("{json}\n"))
            .with_context(|| format!("cannot write {}", path.display()))?;
        let plot = report::plots::inventory::classes(
            &format!("s3://{}/{}", inv.bucket, inv.prefix),
            &inv.classes
                .iter()
                .map(|c| (c.class.to_owned(), c.versions, c.latest, c.stored_bytes))
                .collect::<Vec<_>>(),
        );
        let path = dir.join(plot.file);
        std::fs::write(&path, plot.svg)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if a.json {
        println!("{json}");
    } else {
        print!("{}", inv.table());
        if let Some(dir) = &a.out {
            println!(
                "\nwritten: {0}/inventory.json, {0}/inventory.svg",
                dir.display()
            );
        }
    }
    Ok(())
}
