//! Subcommands: `keygen`, `seal`, `open`, `inspect`, `modes`. Each documented in README.md.

use std::fs;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::{Args, Parser, Subcommand};
use envelope::{
    Backend, KeyType, Manifest, Mode, ObjectId, PublicKey, Receiver, SealKey, SecretKey, Sender,
    SessionBounds, keys, open_stream, seal_stream,
};

use crate::layout::{self, DATA, MANIFEST, Staged};
use crate::s3cmd;

/// pqbench: what per-object ML-KEM costs on the data path of an S3 object store.
#[derive(Parser, Debug)]
#[command(name = "pqbench", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate a recipient key pair (or a pre-shared key) for a mode.
    Keygen(KeygenArgs),
    /// Encrypt a file into the S3 layout `<key>.pqcs/<version>/{data.enc,manifest.json}`.
    Seal(SealArgs),
    /// Decrypt and verify an object; writes the output only if every chunk authenticates.
    Open(OpenArgs),
    /// Show a stored version's manifest fields and byte sizes (no secrets).
    Inspect(InspectArgs),
    /// Print every mode with its sizes, and time seal/open of one object per mode and backend.
    Modes(ModesArgs),
    /// Encrypt a file and commit it to S3 as a new version (data first, manifest last).
    Put(s3cmd::PutArgs),
    /// Read, verify and decrypt a version from S3 (the output is written only if it all
    /// authenticates).
    Get(s3cmd::GetArgs),
    /// List pqbench keys in a bucket, or the committed versions of one key.
    Ls(s3cmd::LsArgs),
    /// Delete a version (manifest first, so it disappears at once, then data).
    Rm(s3cmd::RmArgs),
    /// Remove uncommitted data and abandoned multipart uploads older than a grace period.
    Gc(s3cmd::GcArgs),
    /// Run the embedded S3 server (s3s-fs) in the foreground; prints endpoint and credentials.
    ServeS3(s3cmd::ServeArgs),
    /// Client CPU per request of PUT/GET against a local S3 server in a separate process.
    BenchStore(crate::bench::BenchArgs),
    /// Run one run (warm-up, measured window, records, summary) against a local S3 server
    /// in a separate process or an endpoint, and print its summary.
    RunOne(crate::runcmd::RunOneArgs),
    /// Check a data set of runs (checksums, schema, stage sums, unaccounted time, session
    /// bounds, failures) and refuse it if any check fails.
    Validate(crate::runcmd::ValidateArgs),
    /// Print a campaign's design (cells, arms, blocks, run order), its pre-registration
    /// hash, and estimates of requests, wall time and cost.
    Plan(crate::campaigncmd::PlanArgs),
    /// Run a whole campaign locally (the embedded S3 server by default), resumably, then
    /// validate, analyse and report.
    Run(crate::campaigncmd::RunArgs),
    /// Analyse run data (a results directory or a CSV of runs) into verdicts, report.json,
    /// report.md and plots.
    Analyze(crate::campaigncmd::AnalyzeArgs),
    /// One process of one run, its spec on stdin (used by `pqbench run`).
    #[command(hide = true)]
    RunSpec(crate::campaigncmd::RunSpecArgs),
}

#[derive(Args, Debug)]
struct KeygenArgs {
    /// Mode (name or study code: B1 R1 B2 P1 P2 P3 N1 C2, ...).
    #[arg(long)]
    mode: Mode,
    /// Output directory; receives recipient.pub and recipient.key (psk.key for psk).
    #[arg(long)]
    out: PathBuf,
}

/// The writer's mode and key, shared by `seal` and `put`.
#[derive(Args, Debug)]
pub(crate) struct SenderArgs {
    /// Mode (name or study code).
    #[arg(long)]
    mode: Mode,
    /// Crypto backend: aws-lc (default) or rustcrypto.
    #[arg(long, default_value = "aws-lc")]
    backend: Backend,
    /// Recipient public key file (every public-key mode).
    #[arg(long)]
    recipient: Option<PathBuf>,
    /// Pre-shared key file (mode psk), as written by `keygen --mode psk`.
    #[arg(long)]
    psk: Option<PathBuf>,
    /// ml-kem-768-session: B_max, objects per session.
    #[arg(long, default_value_t = 100)]
    session_max_objects: u64,
    /// ml-kem-768-session: T_max in seconds.
    #[arg(long, default_value_t = 10.0)]
    session_max_age: f64,
}

/// The reader's expected mode and key, shared by `open` and `get`.
#[derive(Args, Debug)]
pub(crate) struct ReceiverArgs {
    /// The mode the object must be in (a different one is refused: no downgrade).
    #[arg(long)]
    expect_mode: Mode,
    /// Crypto backend: aws-lc (default) or rustcrypto.
    #[arg(long, default_value = "aws-lc")]
    backend: Backend,
    /// Recipient secret key file (must be mode 0600).
    #[arg(long)]
    secret: Option<PathBuf>,
    /// Pre-shared key file (mode psk), as written by `keygen --mode psk`.
    #[arg(long)]
    psk: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct IdArgs {
    /// Tenant of the object identity.
    #[arg(long)]
    tenant: String,
    /// Bucket of the object identity.
    #[arg(long)]
    bucket: String,
    /// Object key.
    #[arg(long)]
    key: String,
}

#[derive(Args, Debug)]
struct SealArgs {
    #[command(flatten)]
    sender: SenderArgs,
    #[command(flatten)]
    id: IdArgs,
    /// Version (UUIDv7); a fresh one by default.
    #[arg(long)]
    version: Option<String>,
    /// Plaintext file.
    #[arg(long = "in")]
    input: PathBuf,
    /// Output root directory.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
struct OpenArgs {
    #[command(flatten)]
    receiver: ReceiverArgs,
    #[command(flatten)]
    id: IdArgs,
    /// Version to open.
    #[arg(long)]
    version: String,
    /// Root directory holding `<key>.pqcs/<version>/`.
    #[arg(long = "in")]
    input: PathBuf,
    /// Plaintext output file (written only on success).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
struct InspectArgs {
    /// A version directory `<root>/<key>.pqcs/<version>`.
    path: PathBuf,
}

#[derive(Args, Debug)]
struct ModesArgs {
    /// Object size (bytes, or with a unit: 64KiB, 1MiB).
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    size: u64,
    /// Seal+open round trips per mode and backend (median reported).
    #[arg(long, default_value_t = 200)]
    iterations: u32,
}

/// Parses `123`, `64KiB`, `1MiB`, `2GiB`, `10kB`.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    campaign::units::parse_size(s)
}

/// Parses `500ms`, `20s`, `5m`, `1h`, or plain seconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    campaign::units::parse_duration(s)
}

pub(crate) fn run(cli: Cli) -> Result<std::process::ExitCode> {
    let done = match cli.command {
        // More outcomes than success and error (0/1/2, as `pqbench-worker`).
        Command::RunSpec(a) => return crate::campaigncmd::run_spec_cmd(a),
        // Exit 130 after Ctrl-C, with what is kept and how to resume.
        Command::Run(a) => return crate::campaigncmd::run_cmd(a),
        Command::Keygen(a) => keygen(a),
        Command::Seal(a) => seal(a),
        Command::Open(a) => open(a),
        Command::Inspect(a) => inspect(a),
        Command::Modes(a) => modes(a),
        Command::Put(a) => s3cmd::put(a),
        Command::Get(a) => s3cmd::get(a),
        Command::Ls(a) => s3cmd::ls(a),
        Command::Rm(a) => s3cmd::rm(a),
        Command::Gc(a) => s3cmd::gc(a),
        Command::ServeS3(a) => s3cmd::serve(a),
        Command::BenchStore(a) => crate::bench::run(a),
        Command::RunOne(a) => crate::runcmd::run_one(a),
        Command::Validate(a) => crate::runcmd::validate(a),
        Command::Plan(a) => crate::campaigncmd::plan_cmd(a),
        Command::Analyze(a) => crate::campaigncmd::analyze_cmd(a),
    };
    done.map(|()| std::process::ExitCode::SUCCESS)
}

fn keygen(a: KeygenArgs) -> Result<()> {
    let kt = a.mode.key_type();
    if kt == KeyType::None {
        bail!("mode plaintext uses no key; nothing to generate");
    }
    fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let sk = SecretKey::generate(kt, &mut envelope::os_rng())?;
    if kt == KeyType::Psk {
        let path = a.out.join("psk.key");
        sk.write_file(&path)?;
        println!(
            "pre-shared key {} (key id {}) written, mode 0600",
            path.display(),
            sk.key_id_hex()?
        );
        return Ok(());
    }
    let pk = sk.public_key()?.context("mode has no public key")?;
    let (pub_path, key_path) = (a.out.join("recipient.pub"), a.out.join("recipient.key"));
    for p in [&pub_path, &key_path] {
        if p.exists() {
            bail!(
                "{} already exists; refusing to overwrite a key (choose another --out)",
                p.display()
            );
        }
    }
    sk.write_file(&key_path)?;
    keys::write_public_file(&pk, &pub_path)?;
    println!(
        "{kt} key pair for mode {}: key id {}",
        a.mode,
        pk.key_id_hex()
    );
    println!("  public  {}", pub_path.display());
    println!("  secret  {} (mode 0600)", key_path.display());
    Ok(())
}

fn read_psk(path: Option<&Path>) -> Result<SecretKey> {
    let p = path.context("mode psk needs --psk FILE (from `pqbench keygen --mode psk`)")?;
    let sk = SecretKey::read_file(p)?;
    if sk.key_type() != KeyType::Psk {
        bail!(
            "{} holds a {} key, not a pre-shared key",
            p.display(),
            sk.key_type()
        );
    }
    Ok(sk)
}

impl SenderArgs {
    /// The sender: reads the recipient public key or the pre-shared key, and sets the
    /// session bounds of `ml-kem-768-session`.
    pub(crate) fn sender(&self) -> Result<Sender> {
        let mode = self.mode;
        let mut sender = match mode.key_type() {
            KeyType::None => Sender::new(mode, self.backend, SealKey::None)?,
            KeyType::Psk => Sender::new(
                mode,
                self.backend,
                SealKey::Psk(&read_psk(self.psk.as_deref())?),
            )?,
            kt => {
                let p = self.recipient.as_deref().with_context(|| {
                    format!("mode {mode} needs --recipient FILE (a {kt} public key)")
                })?;
                Sender::new(
                    mode,
                    self.backend,
                    SealKey::Public(&PublicKey::read_file(p)?),
                )?
            }
        };
        if mode == Mode::MlKem768Session {
            if !(self.session_max_age.is_finite() && self.session_max_age > 0.0) {
                bail!("--session-max-age must be a positive number of seconds");
            }
            sender = sender.with_session_bounds(SessionBounds {
                max_objects: self.session_max_objects,
                max_age: Duration::from_secs_f64(self.session_max_age),
            })?;
        }
        Ok(sender)
    }
}

impl ReceiverArgs {
    /// The receiver: reads the recipient secret key (0600) or the pre-shared key.
    pub(crate) fn receiver(&self) -> Result<Receiver> {
        let mode = self.expect_mode;
        let sk = match mode.key_type() {
            KeyType::None => None,
            KeyType::Psk => Some(read_psk(self.psk.as_deref())?),
            kt => {
                let p = self.secret.as_deref().with_context(|| {
                    format!("mode {mode} needs --secret FILE (a {kt} secret key)")
                })?;
                Some(SecretKey::read_file(p)?)
            }
        };
        Ok(Receiver::new(mode, self.backend, sk.as_ref())?)
    }
}

/// A freshly generated recipient key for `mode` (none for `plaintext`), for in-process
/// measurements (`modes`, `bench-store`).
pub(crate) struct FreshKeys {
    mode: Mode,
    sk: Option<SecretKey>,
    pk: Option<PublicKey>,
}

impl FreshKeys {
    /// Generates the key `mode` uses.
    pub(crate) fn generate(mode: Mode) -> Result<Self> {
        let kt = mode.key_type();
        let sk = (kt != KeyType::None)
            .then(|| SecretKey::generate(kt, &mut envelope::os_rng()))
            .transpose()?;
        let pk = sk
            .as_ref()
            .map(SecretKey::public_key)
            .transpose()?
            .flatten();
        Ok(Self { mode, sk, pk })
    }

    /// A sender to this key.
    pub(crate) fn sender(&self, backend: Backend) -> Result<Sender> {
        let key = match (&self.pk, &self.sk) {
            (Some(p), _) => SealKey::Public(p),
            (None, Some(s)) => SealKey::Psk(s),
            _ => SealKey::None,
        };
        Ok(Sender::new(self.mode, backend, key)?)
    }

    /// A receiver holding this key.
    pub(crate) fn receiver(&self, backend: Backend) -> Result<Receiver> {
        Ok(Receiver::new(self.mode, backend, self.sk.as_ref())?)
    }
}

fn seal(a: SealArgs) -> Result<()> {
    let version = a.version.unwrap_or_else(envelope::new_version);
    let id = ObjectId::new(&a.id.tenant, &a.id.bucket, &a.id.key, &version)?;
    let sender = a.sender.sender()?;
    let input = fs::File::open(&a.input)
        .with_context(|| format!("cannot open --in {}", a.input.display()))?;
    let size = input
        .metadata()
        .with_context(|| format!("cannot stat {}", a.input.display()))?
        .len();
    let dir = layout::version_dir(&a.out, &id.key, &id.version)?;
    if dir.join(MANIFEST).exists() {
        bail!(
            "version {} of {:?} already exists in {}",
            id.version,
            id.key,
            a.out.display()
        );
    }
    let mut data = Staged::create(&dir.join(DATA))?;
    let sealed = seal_stream(
        &sender,
        &id,
        size,
        BufReader::new(input),
        BufWriter::new(data.file()),
        &mut envelope::os_rng(),
    )
    .with_context(|| format!("sealing {}", a.input.display()))?;
    data.commit()?;
    let mut manifest = Staged::create(&dir.join(MANIFEST))?;
    std::io::Write::write_all(manifest.file(), &sealed.manifest).context("writing manifest")?;
    manifest.commit()?;
    println!("{version}");
    Ok(())
}

fn open(a: OpenArgs) -> Result<()> {
    let id = ObjectId::new(&a.id.tenant, &a.id.bucket, &a.id.key, &a.version)?;
    let receiver = a.receiver.receiver()?;
    let dir = layout::version_dir(&a.input, &id.key, &id.version)?;
    let manifest_path = dir.join(MANIFEST);
    let manifest = fs::File::open(&manifest_path)
        .with_context(|| {
            format!(
                "version {} of {:?} is not committed (no {})",
                id.version,
                id.key,
                manifest_path.display()
            )
        })
        .and_then(|f| {
            Manifest::read_bounded(f)
                .with_context(|| format!("reading {}", manifest_path.display()))
        })?;
    let data_path = dir.join(DATA);
    let data = fs::File::open(&data_path)
        .with_context(|| format!("cannot open {}", data_path.display()))?;
    let mut out = Staged::create(&a.out)?;
    open_stream(
        &receiver,
        &id,
        &manifest,
        BufReader::new(data),
        BufWriter::new(out.file()),
    )
    .with_context(|| format!("opening {}", dir.display()))?;
    out.commit()?;
    Ok(())
}

fn inspect(a: InspectArgs) -> Result<()> {
    let manifest_path = a.path.join(MANIFEST);
    let bytes = fs::File::open(&manifest_path)
        .map_err(envelope::Error::Io)
        .and_then(Manifest::read_bounded)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let data_len = fs::metadata(a.path.join(DATA)).map(|m| m.len()).ok();
    let mode = Manifest::peek_mode(&bytes)?;
    let m = Manifest::parse(&bytes, mode)
        .with_context(|| format!("{} is not a valid manifest", manifest_path.display()))?;
    let c = &m.ctx;
    println!("manifest        {}", manifest_path.display());
    println!(
        "mode            {mode}{}",
        mode.study_code()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default()
    );
    println!(
        "identity        tenant={} bucket={} key={} version={}",
        c.tenant, c.bucket, c.key, c.version
    );
    println!(
        "algorithms      kem={} kdf={} aead={}",
        c.kem, c.kdf, c.aead
    );
    println!(
        "recipient key   {}",
        if c.recipient_key_id.is_empty() {
            "-"
        } else {
            &c.recipient_key_id
        }
    );
    println!(
        "plaintext       {} bytes in {} chunk(s) of {} bytes",
        c.plaintext_size, c.chunk_count, c.chunk_size
    );
    println!("C               {} bytes, sha256 {}", m.c.len(), c.c_sha256);
    println!(
        "salt / prefix   {} / {} bytes",
        m.salt.len(),
        m.nonce_prefix.len()
    );
    if let Some(s) = c.session {
        println!(
            "session         object {} of at most {}, root age {} ms of at most {} ms",
            s.index + 1,
            s.max_objects,
            s.age_ms,
            s.max_age_ms
        );
    }
    println!("manifest size   {} bytes", bytes.len());
    match data_len {
        Some(n) if n == m.ciphertext_size() => {
            println!("data.enc        {n} bytes (as the manifest says)")
        }
        Some(n) => println!(
            "data.enc        {n} bytes, but the manifest says {}: truncated or extended",
            m.ciphertext_size()
        ),
        None => println!(
            "data.enc        missing (expected {} bytes)",
            m.ciphertext_size()
        ),
    }
    Ok(())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn modes(a: ModesArgs) -> Result<()> {
    let len = usize::try_from(a.size).context("--size does not fit in memory")?;
    if a.iterations == 0 {
        bail!("--iterations must be at least 1");
    }
    let pt = vec![0x42u8; len];
    println!(
        "{:<20} {:>4} {:>7} {:>9} {:>10} | {:<10} {:>10} {:>10} {:>10} {:>10}",
        "mode",
        "code",
        "C (B)",
        "manifest",
        "vs x25519",
        "backend",
        "seal µs",
        "open µs",
        "KE seal",
        "KE open"
    );
    let mut x25519_manifest = None;
    let mut rows = Vec::new();
    for mode in Mode::ALL {
        let keys = FreshKeys::generate(mode)?;
        for backend in Backend::ALL {
            let sender = keys.sender(backend)?;
            let receiver = keys.receiver(backend)?;
            let (mut seal_t, mut open_t, mut ke_s, mut ke_o) = (vec![], vec![], vec![], vec![]);
            let mut manifest_len = 0;
            let mut data = Vec::with_capacity(len + 64);
            let mut out = Vec::with_capacity(len);
            for i in 0..=a.iterations {
                let id = ObjectId::new_version("tenant", "bucket", "modes/object")?;
                data.clear();
                out.clear();
                let t = Instant::now();
                let sealed = seal_stream(
                    &sender,
                    &id,
                    a.size,
                    &pt[..],
                    &mut data,
                    &mut envelope::os_rng(),
                )?;
                let t1 = t.elapsed();
                let t = Instant::now();
                let opened = open_stream(&receiver, &id, &sealed.manifest, &data[..], &mut out)?;
                let t2 = t.elapsed();
                if i == 0 {
                    continue; // warm-up: lazy library initialization stays out of the figures
                }
                manifest_len = sealed.manifest.len();
                seal_t.push(t1);
                open_t.push(t2);
                ke_s.push(sealed.times.key_establishment);
                ke_o.push(opened.times.key_establishment);
            }
            if mode == Mode::X25519 {
                x25519_manifest = Some(manifest_len);
            }
            rows.push((
                mode,
                backend,
                manifest_len,
                [median(seal_t), median(open_t), median(ke_s), median(ke_o)],
            ));
        }
    }
    let base = x25519_manifest.unwrap_or_default();
    for (mode, backend, mlen, t) in rows {
        let us = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e6);
        println!(
            "{:<20} {:>4} {:>7} {:>9} {:>+10} | {:<10} {:>10} {:>10} {:>10} {:>10}",
            mode.name(),
            mode.study_code().unwrap_or("-"),
            mode.ciphertext_len(),
            mlen,
            i64::try_from(mlen).unwrap_or_default() - i64::try_from(base).unwrap_or_default(),
            backend.name(),
            us(t[0]),
            us(t[1]),
            us(t[2]),
            us(t[3])
        );
    }
    println!(
        "object size {} bytes; medians of {} round trips; KE = key establishment",
        a.size, a.iterations
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("KiB").is_err());
    }

    #[test]
    fn durations() {
        use super::parse_duration;
        use std::time::Duration;
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("5 days").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}

/// Request traces (OTLP) of a run: `--otlp-endpoint` and friends. Absent flags leave the
/// standard `OTEL_*` variables in charge.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct TraceArgs {
    /// Export request traces (one `pqbench.request` span per traced request, a child per
    /// stage and per S3 call) to this OTLP collector: http://HOST:4317 (gRPC) or
    /// http://HOST:4318 (HTTP). Default: OTEL_EXPORTER_OTLP_ENDPOINT; none, no traces.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// OTLP transport: grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else
    /// gRPC on port 4317 and HTTP on any other).
    #[arg(long, value_name = "PROTOCOL")]
    pub(crate) otlp_protocol: Option<run::trace::OtlpProtocol>,
    /// Share of requests traced, 0 to 1; failed requests always are (default:
    /// OTEL_TRACES_SAMPLER_ARG, else 0.01).
    #[arg(long, value_name = "RATIO")]
    pub(crate) trace_sample_ratio: Option<f64>,
}

impl TraceArgs {
    /// The run spec's `traces` block, if any flag was given.
    pub(crate) fn spec(&self) -> Option<run::trace::TraceSpec> {
        (self.otlp_endpoint.is_some()
            || self.otlp_protocol.is_some()
            || self.trace_sample_ratio.is_some())
        .then(|| run::trace::TraceSpec {
            endpoint: self.otlp_endpoint.clone(),
            protocol: self.otlp_protocol,
            sample_ratio: self.trace_sample_ratio,
        })
    }
}
