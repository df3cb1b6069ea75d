//! `pqbench bench-store`: client CPU per logical request for PUT and GET through the commit
//! protocol, against an S3 server in a separate process (by default `pqbench serve-s3`
//! started as a child), so that the server's CPU is not counted.
//!
//! For each cell (operation × mode × concurrency) it measures, over the same number of
//! requests and in the same process:
//! - process CPU (user + system, all threads) per logical request;
//! - crypto CPU: thread CPU time inside the four envelope stages (the store measures it);
//! - an S3-only control: the same S3 requests with bodies of the same sizes and no
//!   envelope work, whose CPU per request is the cost of SigV4, HTTP and the runtime;
//! - the rest: process CPU − crypto − control (manifest I/O glue, buffers, scheduling).
//!
//! Cells run in rounds, interleaved, so that a noisy neighbour hits every cell alike; the
//! median over rounds is reported.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use cpu_time::ProcessTime;
use envelope::{Backend, Mode};
use s3::{OpStats, Reader, S3ClientKind, S3Settings, SdkKnobs, Store, Writer};
use serde::Serialize;

use worker::progress::{Progress, Unit};

use crate::args::{FreshKeys, parse_size};
use crate::serverproc::spawn_server;

const BUCKET: &str = "pqbench-bench";

#[derive(Args, Debug)]
pub(crate) struct BenchArgs {
    /// S3 endpoint to measure against; by default a `pqbench serve-s3` child process.
    /// Credentials then come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
    #[arg(long)]
    endpoint: Option<String>,
    /// Object size.
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    size: u64,
    /// Modes to measure (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "x25519,ml-kem-768")]
    modes: Vec<Mode>,
    /// Concurrency levels (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,32")]
    concurrency: Vec<usize>,
    /// Measured requests per cell and round.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Rounds (cells interleaved; medians reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Object formats to measure each mode in (comma-separated: v1, v2, v2-prefix, v2.1,
    /// v2.1-prefix); a v2
    /// cell is labelled `<mode>/v2`. The S3-only control stays v1's (two objects), so the
    /// "rest" column of a v2 row is not comparable; its CPU µs/req is.
    #[arg(long, value_delimiter = ',', default_value = "v1")]
    formats: Vec<run::runspec::ObjectFormat>,
    /// Operations to measure (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "put,get")]
    ops: Vec<Op>,
    /// Crypto backend.
    #[arg(long, default_value = "aws-lc")]
    backend: Backend,
    /// S3 clients to measure (comma-separated: aws-sdk, lean); each is its own cell, in
    /// the same rounds. `aws-sdk:none` is the SDK with none of pqbench's trimming knobs,
    /// `aws-sdk:endpoint`, `aws-sdk:identity` and `aws-sdk:express` with that one alone.
    #[arg(long, value_delimiter = ',', default_value = "aws-sdk")]
    s3_client: Vec<ClientChoice>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Leave the objects written in the bucket (for profiles that count the process's
    /// syscalls from start to end; scripts/profile-s3-client.sh).
    #[arg(long, hide = true)]
    no_cleanup: bool,
}

/// A client to measure: its kind and, for the SDK, which knobs are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ClientChoice {
    kind: S3ClientKind,
    knobs: SdkKnobs,
    label: &'static str,
}

impl std::str::FromStr for ClientChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let only = |f: fn(&mut SdkKnobs)| {
            let mut k = SdkKnobs::NONE;
            f(&mut k);
            k
        };
        let (kind, knobs, label) = match s {
            "aws-sdk" => (S3ClientKind::AwsSdk, SdkKnobs::ALL, "aws-sdk"),
            "lean" => (S3ClientKind::Lean, SdkKnobs::ALL, "lean"),
            "aws-sdk:none" => (S3ClientKind::AwsSdk, SdkKnobs::NONE, "aws-sdk:none"),
            "aws-sdk:endpoint" => (
                S3ClientKind::AwsSdk,
                only(|k| k.fixed_endpoint = true),
                "aws-sdk:endpoint",
            ),
            "aws-sdk:identity" => (
                S3ClientKind::AwsSdk,
                only(|k| k.no_identity_cache = true),
                "aws-sdk:identity",
            ),
            "aws-sdk:express" => (
                S3ClientKind::AwsSdk,
                only(|k| k.no_s3_express = true),
                "aws-sdk:express",
            ),
            _ => {
                return Err(format!(
                    "unknown S3 client {s:?}; use aws-sdk or lean (or aws-sdk:none, \
                     aws-sdk:endpoint, aws-sdk:identity, aws-sdk:express to measure the SDK's knobs)"
                ));
            }
        };
        Ok(Self { kind, knobs, label })
    }
}

impl Serialize for ClientChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.label)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
enum Op {
    Put,
    Get,
}

/// What one cell measured in one round, per logical request.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct Sample {
    requests_per_s: f64,
    cpu_us: f64,
    /// User and system parts of `cpu_us` (getrusage of the whole process).
    user_us: f64,
    sys_us: f64,
    crypto_cpu_us: f64,
    control_cpu_us: f64,
    total_us: f64,
    storage_us: f64,
    unaccounted_us: f64,
    /// Heap allocations per logical request, whole process (feature `alloc-count` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    allocations: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Row {
    op: Op,
    mode: String,
    client: ClientChoice,
    concurrency: usize,
    median: Sample,
    rounds: Vec<Sample>,
}

struct Keys {
    sender: Arc<Writer>,
    receiver: Arc<Reader>,
}

fn keys(mode: Mode, backend: Backend, format: run::runspec::ObjectFormat) -> Result<Keys> {
    if let Some(why) = format.refuses(mode) {
        bail!("--formats {format} with mode {mode}: {why}");
    }
    let k = FreshKeys::generate(mode)?;
    let (sender, receiver) = match format.placement() {
        None => (
            Writer::V1(k.sender(backend)?),
            Reader::V1(k.receiver(backend)?),
        ),
        Some(p) => {
            let (w, r) = k.v2(backend, p)?;
            match (w, format.header_version()) {
                (Writer::V2(s), Some(v)) => (Writer::V2(s.with_header_version(v)?), r),
                (w, _) => (w, r),
            }
        }
    };
    Ok(Keys {
        sender: Arc::new(sender),
        receiver: Arc::new(receiver),
    })
}

#[derive(Default)]
struct Acc {
    crypto_cpu: Duration,
    total: Duration,
    storage: Duration,
    unaccounted: Duration,
    written: Vec<(String, String)>,
}

impl Acc {
    fn add(&mut self, st: &OpStats) {
        self.crypto_cpu += st.crypto_cpu;
        self.total += st.total;
        self.storage += st.storage;
        self.unaccounted += st.unaccounted();
    }
    fn merge(&mut self, o: Acc) {
        self.crypto_cpu += o.crypto_cpu;
        self.total += o.total;
        self.storage += o.storage;
        self.unaccounted += o.unaccounted;
        self.written.extend(o.written);
    }
}

/// What one request does.
#[derive(Clone)]
enum Work {
    Put(Arc<Writer>),
    Get(Arc<Reader>, Arc<Vec<(String, String)>>),
    /// The S3-only control of a PUT: data and manifest bodies of the same sizes.
    ControlPut(usize),
    /// The S3-only control of a GET: two reads of objects of the same sizes.
    ControlGet,
}

async fn one(store: &Store, work: &Work, i: usize, body: &[u8], acc: &mut Acc) -> Result<()> {
    match work {
        Work::Put(sender) => {
            let key = "bench/put";
            let out = store
                .put_with(sender, key, body.len() as u64, body, &mut |_| {})
                .await?;
            acc.add(&out.stats);
            acc.written.push((key.to_owned(), out.id.version));
        }
        Work::Get(receiver, fixtures) => {
            let (key, version) = &fixtures[i % fixtures.len()];
            let st = store
                .get_with(receiver, key, version, tokio::io::sink(), &mut |_| {})
                .await?
                .stats;
            acc.add(&st);
        }
        // The controls use the store's own client, so they cost what its S3 calls cost.
        Work::ControlPut(manifest_len) => {
            let s3 = store.objects();
            for (k, len) in [
                ("control/data", body.len()),
                ("control/manifest", *manifest_len),
            ] {
                s3.put_object(
                    BUCKET,
                    k,
                    body[..len.min(body.len())].to_vec().into(),
                    None,
                    &[],
                )
                .await
                .with_context(|| format!("control PutObject {k}"))?;
            }
        }
        Work::ControlGet => {
            let s3 = store.objects();
            for k in ["control/manifest", "control/data"] {
                s3.get_object(BUCKET, k)
                    .await
                    .with_context(|| format!("control GetObject {k}"))?
                    .collect()
                    .await
                    .context("control body")?;
            }
        }
    }
    Ok(())
}

/// What one drive of a cell cost the process.
struct Driven {
    wall: Duration,
    cpu: Duration,
    user: Duration,
    sys: Duration,
    allocations: Option<u64>,
    acc: Acc,
}

/// User and system CPU time of the whole process so far.
fn rusage() -> Result<(Duration, Duration)> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_SELF).context("getrusage")?;
    let d = |t: nix::sys::time::TimeVal| {
        Duration::new(
            u64::try_from(t.tv_sec()).unwrap_or(0),
            u32::try_from(t.tv_usec()).unwrap_or(0) * 1000,
        )
    };
    Ok((d(u.user_time()), d(u.system_time())))
}

/// Runs `n` requests with `c` concurrent tasks.
async fn drive(
    store: &Store,
    work: &Work,
    body: &Arc<Vec<u8>>,
    n: usize,
    c: usize,
) -> Result<Driven> {
    let next = Arc::new(AtomicUsize::new(0));
    let allocs0 = crate::allocations();
    let (user0, sys0) = rusage()?;
    let cpu0 = ProcessTime::try_now().context("process CPU clock")?;
    let t0 = Instant::now();
    let mut tasks = Vec::with_capacity(c);
    for _ in 0..c {
        let (store, work, body, next) = (store.clone(), work.clone(), body.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut acc = Acc::default();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                one(&store, &work, i, &body, &mut acc).await?;
            }
            anyhow::Ok(acc)
        }));
    }
    let mut acc = Acc::default();
    for t in tasks {
        acc.merge(t.await.context("bench task panicked")??);
    }
    let (wall, cpu) = (t0.elapsed(), cpu0.elapsed());
    let (user1, sys1) = rusage()?;
    let allocations = crate::allocations()
        .zip(allocs0)
        .map(|(a, b)| a.saturating_sub(b));
    Ok(Driven {
        wall,
        cpu,
        user: user1.saturating_sub(user0),
        sys: sys1.saturating_sub(sys0),
        allocations,
        acc,
    })
}

/// A runtime with `threads` workers: one per concurrent request up to the cores, so that a
/// single request is not handed between threads.
fn runtime(threads: usize) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn us_per(d: Duration, n: usize) -> f64 {
    #[allow(clippy::cast_precision_loss, reason = "request counts are small")]
    let n = n as f64;
    d.as_secs_f64() * 1e6 / n
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

pub(crate) fn run(a: BenchArgs) -> Result<()> {
    if a.requests == 0 || a.rounds == 0 || a.concurrency.contains(&0) {
        bail!("--requests, --rounds and every --concurrency must be at least 1");
    }
    if a.s3_client.is_empty() {
        bail!("--s3-client: list at least one client (aws-sdk, lean)");
    }
    let size = usize::try_from(a.size).context("--size does not fit in memory")?;
    let (_server, settings) = match &a.endpoint {
        None => {
            let child = spawn_server(BUCKET, None)?;
            let s = child.settings.clone();
            (Some(child), s)
        }
        Some(ep) => {
            let ak = std::env::var("AWS_ACCESS_KEY_ID").context("AWS_ACCESS_KEY_ID is not set")?;
            let sk = std::env::var("AWS_SECRET_ACCESS_KEY")
                .context("AWS_SECRET_ACCESS_KEY is not set")?;
            (None, S3Settings::new(ep, &ak, &sk))
        }
    };
    let rt = runtime(1)?;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    println!(
        "bench-store: {} objects, backend {}, {} requests x {} rounds per cell, server {} in a separate process, client runtime threads = min(concurrency, {cores} cores)",
        a.size,
        a.backend.name(),
        a.requests,
        a.rounds,
        settings.endpoint
    );
    let mut records = Vec::new();
    for &client in &a.s3_client {
        let mut s = settings.clone();
        s.s3_client = client.kind;
        s.sdk_knobs = client.knobs;
        let record = s.record();
        println!(
            "client {} ({}): payload signed {}, checksums {:?}, retries off, TCP_NODELAY on{}",
            client.label,
            record.sdk,
            record.payload_signed,
            record.checksums,
            if client.kind == S3ClientKind::AwsSdk {
                format!(", knobs {:?}", client.knobs)
            } else {
                String::new()
            }
        );
        records.push(record);
    }

    {
        let body = Arc::new({
            let mut v = vec![0u8; size];
            for (i, b) in v.iter_mut().enumerate() {
                *b = u8::try_from(i % 251).unwrap_or(0);
            }
            v
        });
        let mut mode_keys = Vec::new();
        for &m in &a.modes {
            for &f in &a.formats {
                let label = if f.is_default() {
                    m.name().to_owned()
                } else {
                    format!("{}/{f}", m.name())
                };
                mode_keys.push((label, keys(m, a.backend, f)?));
            }
        }
        // (op, concurrency, client, mode index); None = the S3-only control.
        let mut cells: Vec<(Op, usize, ClientChoice, Option<usize>)> = Vec::new();
        for &op in &a.ops {
            for &c in &a.concurrency {
                for &client in &a.s3_client {
                    cells.push((op, c, client, None));
                    for i in 0..mode_keys.len() {
                        cells.push((op, c, client, Some(i)));
                    }
                }
            }
        }
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); cells.len()];
        let mut control_cpu: Vec<Vec<f64>> = vec![Vec::new(); cells.len()];
        // One object of the measured mode tells the manifest size the control must send.
        let manifest_len = rt.block_on(async {
            let st = Store::new(&settings, BUCKET, "bench")?;
            let k = &mode_keys.last().context("--modes is empty")?.1;
            let out = st
                .put_with(&k.sender, "bench/probe", a.size, &body[..], &mut |_| {})
                .await?;
            st.delete_version("bench/probe", &out.id.version).await?;
            anyhow::Ok(usize::try_from(out.stats.manifest_bytes).unwrap_or(1200))
        })?;
        let total_cells = cells.len() * a.rounds;
        let bar = Progress::new(
            "bench-store",
            u64::try_from(total_cells).unwrap_or(u64::MAX),
            Unit::Count,
        );
        for round in 0..a.rounds {
            for (ci, &(op, c, client, m)) in cells.iter().enumerate() {
                let cell_rt = runtime(c.min(cores))?;
                let cell = cell_rt.block_on(async {
                    let mut s = settings.clone();
                    s.concurrency = c;
                    s.s3_client = client.kind;
                    s.sdk_knobs = client.knobs;
                    let store = Store::new(&s, BUCKET, "bench")?;
                    let work = match (op, m) {
                        (Op::Put, None) => Work::ControlPut(manifest_len),
                        (Op::Get, None) => {
                            // The control reads objects of the same sizes as a GET does.
                            one(
                                &store,
                                &Work::ControlPut(manifest_len),
                                0,
                                &body,
                                &mut Acc::default(),
                            )
                            .await?;
                            Work::ControlGet
                        }
                        (Op::Put, Some(i)) => Work::Put(mode_keys[i].1.sender.clone()),
                        (Op::Get, Some(i)) => {
                            let k = &mode_keys[i].1;
                            let mut fixtures = Vec::new();
                            for j in 0..c.max(8) {
                                let key = format!("bench/fixture-{j}");
                                let out = store
                                    .put_with(&k.sender, &key, a.size, &body[..], &mut |_| {})
                                    .await?;
                                fixtures.push((key, out.id.version));
                            }
                            Work::Get(k.receiver.clone(), Arc::new(fixtures))
                        }
                    };
                    // Warm-up: connections opened, code paths hot.
                    drive(&store, &work, &body, (a.requests / 10).max(c * 4), c).await?;
                    let Driven {
                        wall,
                        cpu,
                        user,
                        sys,
                        allocations: allocs,
                        acc,
                    } = drive(&store, &work, &body, a.requests, c).await?;
                    let n = a.requests;
                    let sample = Sample {
                        requests_per_s: {
                            #[allow(
                                clippy::cast_precision_loss,
                                reason = "request counts are small"
                            )]
                            let x = n as f64;
                            x / wall.as_secs_f64()
                        },
                        cpu_us: us_per(cpu, n),
                        user_us: us_per(user, n),
                        sys_us: us_per(sys, n),
                        crypto_cpu_us: us_per(acc.crypto_cpu, n),
                        control_cpu_us: f64::NAN,
                        total_us: us_per(acc.total, n),
                        storage_us: us_per(acc.storage, n),
                        unaccounted_us: us_per(acc.unaccounted, n),
                        #[allow(clippy::cast_precision_loss, reason = "counts are small")]
                        allocations: allocs.map(|x| x as f64 / n as f64),
                    };
                    // Clean up outside the measurement.
                    let written: &[(String, String)] =
                        if a.no_cleanup { &[] } else { &acc.written };
                    for (k, v) in written {
                        store.delete_version(k, v).await?;
                    }
                    if let Work::Get(_, fixtures) = &work
                        && !a.no_cleanup
                    {
                        for (k, v) in fixtures.iter() {
                            store.delete_version(k, v).await?;
                        }
                    }
                    anyhow::Ok(sample)
                });
                drop(cell_rt);
                let sample = cell?;
                if m.is_none() {
                    control_cpu[ci].push(sample.cpu_us);
                }
                samples[ci].push(sample);
                let done = round * cells.len() + ci + 1;
                bar.set(
                    u64::try_from(done).unwrap_or(u64::MAX),
                    &format!("round {}/{}", round + 1, a.rounds),
                    None,
                );
            }
        }
        bar.finish();

        println!(
            "{:<4} {:<12} {:<16} {:>4} | {:>9} {:>10} {:>9} {:>12} {:>8} | {:>9} {:>11}",
            "op",
            "mode",
            "client",
            "conc",
            "req/s",
            "CPU µs/req",
            "crypto",
            "SigV4+HTTP*",
            "rest",
            "wall µs",
            "unacct. µs"
        );
        let mut rows = Vec::new();
        for (ci, &(op, c, client, m)) in cells.iter().enumerate() {
            let Some(mi) = m else { continue };
            // The control of the same op, concurrency and client.
            let ctrl_idx = cells
                .iter()
                .position(|&(o, cc, cl, mm)| o == op && cc == c && cl == client && mm.is_none())
                .unwrap_or(ci);
            let control = median(control_cpu[ctrl_idx].clone());
            let rounds: Vec<Sample> = samples[ci]
                .iter()
                .map(|s| Sample {
                    control_cpu_us: control,
                    ..*s
                })
                .collect();
            let med = |f: fn(&Sample) -> f64| median(rounds.iter().map(f).collect());
            let median_sample = Sample {
                requests_per_s: med(|s| s.requests_per_s),
                cpu_us: med(|s| s.cpu_us),
                user_us: med(|s| s.user_us),
                sys_us: med(|s| s.sys_us),
                crypto_cpu_us: med(|s| s.crypto_cpu_us),
                control_cpu_us: control,
                total_us: med(|s| s.total_us),
                storage_us: med(|s| s.storage_us),
                unaccounted_us: med(|s| s.unaccounted_us),
                allocations: rounds[0]
                    .allocations
                    .map(|_| med(|s| s.allocations.unwrap_or(f64::NAN))),
            };
            let rest = median_sample.cpu_us - median_sample.crypto_cpu_us - control;
            println!(
                "{:<4} {:<12} {:<16} {:>4} | {:>9.0} {:>10.1} {:>9.1} {:>12.1} {:>8.1} | {:>9.1} {:>11.1}",
                format!("{op:?}").to_lowercase(),
                mode_keys[mi].0,
                client.label,
                c,
                median_sample.requests_per_s,
                median_sample.cpu_us,
                median_sample.crypto_cpu_us,
                control,
                rest,
                median_sample.total_us,
                median_sample.unaccounted_us,
            );
            let allocs = median_sample.allocations.map(|x| {
                let ctrl = median(
                    samples[ctrl_idx]
                        .iter()
                        .filter_map(|s| s.allocations)
                        .collect(),
                );
                format!("; allocations {x:.0} per request (S3-only control {ctrl:.0})")
            });
            println!(
                "{:>33} user {:.1} µs + sys {:.1} µs{}",
                "",
                median_sample.user_us,
                median_sample.sys_us,
                allocs.unwrap_or_default()
            );
            rows.push(Row {
                op,
                mode: mode_keys[mi].0.clone(),
                client,
                concurrency: c,
                median: median_sample,
                rounds,
            });
        }
        println!(
            "CPU = process CPU (user+sys, all client threads) per logical request; crypto = thread CPU in the four envelope stages;\n\
             * SigV4+HTTP = CPU per request of an S3-only control (same requests and body sizes, no envelope); rest = CPU - crypto - control."
        );
        if let Some(p) = &a.json {
            let doc = serde_json::json!({
                "size": a.size,
                "backend": a.backend.name(),
                "requests": a.requests,
                "rounds": a.rounds,
                "cores": cores,
                "clients": records,
                "rows": rows,
            });
            std::fs::write(p, serde_json::to_vec_pretty(&doc)?)
                .with_context(|| format!("cannot write {}", p.display()))?;
            println!("results written to {}", p.display());
        }
        Ok(())
    }
}
