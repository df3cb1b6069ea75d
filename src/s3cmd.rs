//! Subcommands against an S3 endpoint: `put`, `get`, `ls`, `rm`, `gc`, and `serve-s3` (the
//! embedded server in the foreground). Each documented in the user guide,
//! `docs/src/envelope/s3.md`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use s3::{ChecksumPolicy, EmbeddedS3, Event, PayloadSigning, S3ClientKind, S3Settings, Store};

use crate::args::{HeaderPlacement, ReceiverArgs, SenderArgs, Writer, parse_duration};
use worker::progress::{Progress, Unit};

use crate::dirstore::Staged;

/// Where the S3 server is and how to talk to it.
#[derive(Args, Debug)]
pub(crate) struct S3Args {
    /// S3 endpoint, e.g. http://127.0.0.1:9000 (start one with `pqbench serve-s3`).
    #[arg(long, env = "AWS_ENDPOINT_URL")]
    endpoint: Option<String>,
    /// Access key id.
    #[arg(long, env = "AWS_ACCESS_KEY_ID", hide_env_values = true)]
    access_key: Option<String>,
    /// Secret access key (prefer the environment variable: flags show up in `ps`).
    #[arg(long, env = "AWS_SECRET_ACCESS_KEY", hide_env_values = true)]
    secret_key: Option<String>,
    /// SigV4 region (Garage checks it; MinIO accepts any).
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    region: String,
    /// Body signing: auto (MinIO SDKs: signed over http, unsigned over https), signed, unsigned.
    #[arg(long, default_value = "auto")]
    payload_signing: PayloadSigning,
    /// Flexible checksums: when-required (MinIO SDKs) or when-supported (AWS SDK default).
    #[arg(long, default_value = "when-required")]
    checksums: ChecksumPolicy,
    /// S3 client: aws-sdk (the AWS SDK for Rust) or lean (hyper + aws-sigv4, http only).
    #[arg(long, default_value = "aws-sdk")]
    s3_client: S3ClientKind,
    /// Timeout of one S3 request (e.g. 30s, 2m).
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    timeout: Duration,
    /// TCP connect timeout.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    connect_timeout: Duration,
}

impl S3Args {
    pub(crate) fn settings(&self, command: &str) -> Result<S3Settings> {
        let Some(endpoint) = &self.endpoint else {
            bail!(
                "`pqbench {command}` needs an S3 server: pass --endpoint URL or set \
                 AWS_ENDPOINT_URL (for a local one: `pqbench serve-s3 --dir DIR`)"
            );
        };
        let (Some(ak), Some(sk)) = (&self.access_key, &self.secret_key) else {
            bail!(
                "`pqbench {command}` needs S3 credentials: set AWS_ACCESS_KEY_ID and \
                 AWS_SECRET_ACCESS_KEY (or pass --access-key and --secret-key)"
            );
        };
        let mut s = S3Settings::new(endpoint, ak, sk);
        s.region = self.region.clone();
        s.payload_signing = self.payload_signing;
        s.checksums = self.checksums;
        s.s3_client = self.s3_client;
        s.operation_timeout = self.timeout;
        s.read_timeout = self.timeout;
        s.connect_timeout = self.connect_timeout;
        Ok(s)
    }
}

/// Which object.
#[derive(Args, Debug)]
pub(crate) struct ObjectArgs {
    /// Tenant of the object identity (bound into every object).
    #[arg(long, default_value = "default")]
    tenant: String,
    /// Bucket.
    #[arg(long)]
    bucket: String,
    /// Object key.
    #[arg(long)]
    key: String,
}

#[derive(Args, Debug)]
pub(crate) struct PutArgs {
    #[command(flatten)]
    s3: S3Args,
    #[command(flatten)]
    object: ObjectArgs,
    #[command(flatten)]
    sender: SenderArgs,
    /// Create the bucket first if it does not exist.
    #[arg(long)]
    create_bucket: bool,
    /// Read the version back after committing it and check it.
    #[arg(long)]
    verify: bool,
    /// Plaintext file.
    #[arg(long = "in")]
    input: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    s3: S3Args,
    #[command(flatten)]
    object: ObjectArgs,
    /// Version to read; if omitted, the newest committed one that is not future-dated
    /// (FORMAT.md §1, FORMAT-v2.md §2; costs one LIST).
    #[arg(long)]
    version: Option<String>,
    #[command(flatten)]
    receiver: ReceiverArgs,
    /// Recover the object's key in a key service instead of with --secret (format v1 in
    /// modes ml-kem-768, ml-kem-1024, x25519, or format v2 to such a key): a file of the service's endpoint and
    /// credentials as `pqbench serve-kms --env-file` writes it (AWS_ENDPOINT_URL_KMS,
    /// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; mode 0600).
    #[arg(long, requires = "kms_key", conflicts_with = "secret")]
    kms: Option<PathBuf>,
    /// The recipient key in the key service: its key id or key ARN (its public key is
    /// fetched with GetPublicKey).
    #[arg(long, requires = "kms")]
    kms_key: Option<String>,
    /// Plaintext output file (created only when every chunk authenticated).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct LsArgs {
    #[command(flatten)]
    s3: S3Args,
    /// Bucket.
    #[arg(long)]
    bucket: String,
    /// List the committed versions of this key.
    #[arg(long, conflicts_with = "prefix")]
    key: Option<String>,
    /// List the keys under this prefix (the whole bucket by default).
    #[arg(long, default_value = "")]
    prefix: String,
}

#[derive(Args, Debug)]
pub(crate) struct RmArgs {
    #[command(flatten)]
    s3: S3Args,
    /// Bucket.
    #[arg(long)]
    bucket: String,
    /// Object key.
    #[arg(long)]
    key: String,
    /// Version to delete.
    #[arg(long)]
    version: String,
}

#[derive(Args, Debug)]
pub(crate) struct GcArgs {
    #[command(flatten)]
    s3: S3Args,
    /// Bucket.
    #[arg(long)]
    bucket: String,
    /// Only under this key prefix.
    #[arg(long, default_value = "")]
    prefix: String,
    /// Leave uncommitted data younger than this alone (an upload may still be running).
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    grace: Duration,
    /// Report what would be removed, remove nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Data directory (created if missing; buckets are its subdirectories).
    #[arg(long)]
    dir: PathBuf,
    /// Port (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on. Any loopback address (127.0.0.0/8) keeps it on this machine;
    /// another exposes it to the network.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    /// Take the credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the
    /// environment instead of generating them (never from the command line).
    #[arg(long)]
    credentials_from_env: bool,
    /// Bucket to create at start (repeatable).
    #[arg(long = "bucket", default_value = "pqbench")]
    buckets: Vec<String>,
    /// Also write the `export` lines (endpoint and credentials) to this new file, mode 0600.
    #[arg(long)]
    env_file: Option<PathBuf>,
    /// Confine the server to these CPUs before it starts its threads (a list as `taskset -c`
    /// takes it: 1, 0-3,8).
    #[arg(long)]
    cpus: Option<String>,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Progress on stderr for transfers above 16 MiB ([`worker::progress`]).
fn progress(label: &'static str) -> impl FnMut(Event) + Send {
    let mut bar: Option<Progress> = None;
    move |e: Event| {
        let (done, total) = match e {
            Event::Sent { done, total } | Event::Received { done, total } => (done, total),
            Event::DataStored | Event::Committed => {
                bar = None;
                return;
            }
        };
        if total < 16 << 20 {
            return;
        }
        bar.get_or_insert_with(|| Progress::new(label, total, Unit::Bytes))
            .set(done, "", None);
    }
}

/// The stage timings and counts of a put or get, in the words of its format: v1's
/// manifest, v2's header.
fn print_stats(st: &s3::OpStats, format: envelope::Format) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let envelope_name = match format {
        envelope::Format::V1 => "manifest",
        envelope::Format::V2 => "header",
    };
    println!(
        "stages µs       key establishment {:.1}, key derivation {:.1}, aead {:.1}, {envelope_name} {:.1}, storage {:.1}",
        us(st.key_establishment),
        us(st.key_derivation),
        us(st.aead),
        us(st.manifest),
        us(st.storage)
    );
    println!(
        "total µs        {:.1} ({:.1} outside the stages); {} S3 requests, {} B sent, {} B received, {envelope_name} {} B",
        us(st.total),
        us(st.unaccounted()),
        st.s3_requests,
        st.bytes_sent,
        st.bytes_received,
        st.manifest_bytes
    );
}

pub(crate) fn put(a: PutArgs) -> Result<()> {
    let settings = a.s3.settings("put")?;
    let writer = a.sender.writer(HeaderPlacement::Metadata)?;
    let file = std::fs::File::open(&a.input)
        .with_context(|| format!("cannot open --in {}", a.input.display()))?;
    let size = file
        .metadata()
        .with_context(|| format!("cannot stat {}", a.input.display()))?
        .len();
    let store = Store::new(&settings, &a.object.bucket, &a.object.tenant)?;
    let done = runtime()?.block_on(async {
        if a.create_bucket {
            store.create_bucket().await?;
        }
        let src = tokio::io::BufReader::with_capacity(1 << 20, tokio::fs::File::from_std(file));
        let key = &a.object.key;
        let mut on = progress("uploaded");
        let out = store
            .put_with(&writer, key, size, src, &mut on)
            .await
            .with_context(|| format!("put {} ({size} bytes)", a.input.display()))?;
        let version = &out.id.version;
        if a.verify {
            match &writer {
                Writer::V1(_) => {
                    store
                        .verify(key, version, &out.manifest, out.ciphertext_size)
                        .await?
                }
                Writer::V2(_) => {
                    store
                        .verify_v2(key, version, &out.manifest, out.ciphertext_size)
                        .await?
                }
            }
        }
        println!("{version}");
        print_stats(&out.stats, writer.format());
        if a.verify {
            println!(
                "verified        {} read back",
                match writer {
                    Writer::V1(_) => "manifest and data.enc size",
                    Writer::V2(_) => "object.v2 size and header",
                }
            );
        }
        Ok(())
    });
    done.map_err(|e| {
        if no_such_bucket(&e) {
            e.context(format!(
                "bucket {} does not exist: pass --create-bucket to create it",
                a.object.bucket
            ))
        } else {
            e
        }
    })
}

/// Whether `e` is an S3 answer that the bucket does not exist.
fn no_such_bucket(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<s3::Error>().and_then(s3::Error::s3_class)
            == Some(s3::S3Class::NoSuchBucket)
    })
}

pub(crate) fn get(a: GetArgs) -> Result<()> {
    let settings = a.s3.settings("get")?;
    let rt = runtime()?;
    let reader = match (&a.kms, &a.kms_key) {
        (Some(file), Some(key)) => {
            let how = a.receiver.remote_read()?;
            rt.block_on(crate::kmscmd::remote_reader(file, key, &how))?
        }
        _ => a.receiver.reader()?,
    };
    let store = Store::new(&settings, &a.object.bucket, &a.object.tenant)?;
    rt.block_on(async {
        let version = match a.version {
            Some(v) => v,
            None => {
                let versions = store.versions(&a.object.key).await?;
                let future = versions.iter().filter(|v| v.future_dated).count();
                let latest = s3::latest_of(&versions);
                // The newest is the newest in either format: a reader of the other one is
                // told so, never handed an older version of its own format.
                if let Some(v) = latest
                    && v.format != reader.format()
                {
                    let name = |f: envelope::Format| match f {
                        envelope::Format::V1 => "v1",
                        envelope::Format::V2 => "v2",
                    };
                    bail!(
                        "the newest version of s3://{}/{} is {}, in format {}: read it with \
                         --format {} (and a key it was sealed to), or name a format {} version \
                         with --version (`pqbench ls --bucket {} --key {}` lists them)",
                        a.object.bucket,
                        a.object.key,
                        v.version,
                        name(v.format),
                        name(v.format),
                        name(reader.format()),
                        a.object.bucket,
                        a.object.key
                    );
                }
                let latest = latest.map(|v| v.version.clone());
                latest.with_context(|| {
                    let k = format!("s3://{}/{}", a.object.bucket, a.object.key);
                    if future > 0 {
                        format!(
                            "{k} has no committed version to take as latest: its {future} \
                             version(s) are future-dated (see `pqbench ls --key {}`); name one \
                             with --version to read it anyway",
                            a.object.key
                        )
                    } else {
                        format!("{k} has no committed version")
                    }
                })?
            }
        };
        let mut out = Staged::create(&a.out)?;
        let file = tokio::fs::File::from_std(out.file().try_clone().context("output file")?);
        let sink = tokio::io::BufWriter::with_capacity(1 << 20, file);
        let key = &a.object.key;
        let mut on = progress("downloaded");
        let got = store
            .get_with(&reader, key, &version, sink, &mut on)
            .await
            .with_context(|| format!("get version {version}; {} not written", a.out.display()))?;
        out.commit()?;
        println!(
            "{version}: {} bytes to {}",
            got.plaintext_size,
            a.out.display()
        );
        print_stats(&got.stats, reader.format());
        Ok(())
    })
}

pub(crate) fn ls(a: LsArgs) -> Result<()> {
    let settings = a.s3.settings("ls")?;
    let store = Store::new(&settings, &a.bucket, "default")?;
    runtime()?.block_on(async {
        if let Some(key) = &a.key {
            let versions = store.versions(key).await?;
            if versions.is_empty() {
                println!("s3://{}/{key}: no committed version", a.bucket);
            }
            let latest = s3::latest_of(&versions).map(|v| v.version.clone());
            for v in &versions {
                let data = v
                    .data_size
                    .map_or_else(|| "data MISSING".to_owned(), |n| format!("{n} B"));
                let mark = if Some(&v.version) == latest.as_ref() {
                    "  (latest)".to_owned()
                } else if v.future_dated {
                    format!("  {}", future_dated_note(v))
                } else {
                    String::new()
                };
                match v.format {
                    envelope::Format::V1 => println!(
                        "{}  v1  {data}  manifest {} B{mark}",
                        v.version, v.manifest_size
                    ),
                    envelope::Format::V2 => println!("{}  v2  object {data}{mark}", v.version),
                }
            }
            return Ok(());
        }
        let keys = store.keys(&a.prefix).await?;
        if keys.is_empty() {
            println!("s3://{}/{}: no pqbench objects", a.bucket, a.prefix);
        }
        for k in keys {
            let latest = k.latest().map_or("-", |v| v.version.as_str());
            print!("{}  {} version(s), latest {latest}", k.key, k.versions.len());
            let future = k.versions.iter().filter(|v| v.future_dated).count();
            if future > 0 {
                print!(
                    ", {future} FUTURE-DATED (not taken as latest; `pqbench ls --key {}` shows them)",
                    k.key
                );
            }
            if k.uncommitted > 0 {
                print!(", {} uncommitted (see `pqbench gc`)", k.uncommitted);
            }
            println!();
        }
        Ok(())
    })
}

/// What `ls` says of a future-dated version (FORMAT.md §1).
fn future_dated_note(v: &s3::VersionInfo) -> String {
    // RFC 3339 stops at 9999-12-31; a planted version may claim far later.
    const YEAR_10000_MS: u64 = 253_402_300_800_000;
    let stamped = envelope::layout::version_time_ms(&v.version).map(|ms| {
        if ms < YEAR_10000_MS {
            humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + Duration::from_millis(ms))
                .to_string()
        } else {
            format!("{ms} ms after 1970 (after the year 9999)")
        }
    });
    let committed = v.committed_at.map(humantime::format_rfc3339_seconds);
    match (stamped, committed) {
        (Some(s), Some(c)) => format!(
            "FUTURE-DATED: its version says {s}, the server stored it at {c}; not taken as latest (anyone who can write the bucket can plant one)"
        ),
        _ => "FUTURE-DATED: the server gave no time for its manifest; not taken as latest".into(),
    }
}

pub(crate) fn rm(a: RmArgs) -> Result<()> {
    let settings = a.s3.settings("rm")?;
    let store = Store::new(&settings, &a.bucket, "default")?;
    runtime()?.block_on(async {
        store.delete_version(&a.key, &a.version).await?;
        println!("deleted s3://{}/{} version {}", a.bucket, a.key, a.version);
        Ok(())
    })
}

pub(crate) fn gc(a: GcArgs) -> Result<()> {
    let settings = a.s3.settings("gc")?;
    let store = Store::new(&settings, &a.bucket, "default")?;
    runtime()?.block_on(async {
        let r = store.gc(&a.prefix, a.grace, a.dry_run).await?;
        let verb = if a.dry_run { "would delete" } else { "deleted" };
        for k in &r.deleted_data {
            println!("{verb} uncommitted {k}");
        }
        let verb = if a.dry_run { "would abort" } else { "aborted" };
        for (k, id) in &r.aborted_uploads {
            println!("{verb} multipart upload {id} of {k}");
        }
        for k in &r.broken_versions {
            println!("BROKEN: {k} has no data.enc (left in place; delete it with `pqbench rm`)");
        }
        for k in &r.future_dated {
            println!(
                "FUTURE-DATED: {k}: its UUIDv7 time is more than {} after the server stored it; \
                 never taken as latest (left in place; check who wrote it, delete it with `pqbench rm`)",
                humantime::format_duration(envelope::layout::MAX_VERSION_SKEW)
            );
        }
        println!(
            "{} uncommitted object(s), {} upload(s); {} younger than the grace period kept",
            r.deleted_data.len(),
            r.aborted_uploads.len(),
            r.kept_young
        );
        if !r.uploads_listed {
            println!("note: this server cannot list multipart uploads; abandoned ones were not looked for");
        }
        Ok(())
    })
}

pub(crate) fn serve(a: ServeArgs) -> Result<()> {
    if let Some(cpus) = &a.cpus {
        worker::affinity::confine(cpus).map_err(|e| anyhow::anyhow!("--cpus: {e}"))?;
    }
    let addr = std::net::SocketAddr::new(a.host, a.port);
    let server = if a.credentials_from_env {
        let (access, secret) = crate::serverproc::credentials_from_env()?;
        EmbeddedS3::start_with(&a.dir, addr, &access, &secret)?
    } else {
        EmbeddedS3::start_generated(&a.dir, addr)?
    };
    for b in &a.buckets {
        server.create_bucket(b)?;
    }
    if let Some(p) = &a.env_file {
        crate::serverproc::write_new_private(p, &exports(&server))
            .with_context(|| format!("--env-file {}", p.display()))?;
    }
    print_server(&server, &a.buckets, &a.dir, !a.credentials_from_env);
    crate::serverproc::until_stopped()?;
    server.stop();
    let _ = writeln!(std::io::stderr(), "pqbench S3 server stopped");
    Ok(())
}

fn exports(server: &EmbeddedS3) -> String {
    format!(
        "export AWS_ENDPOINT_URL={}\nexport AWS_ACCESS_KEY_ID={}\nexport AWS_SECRET_ACCESS_KEY={}\n",
        server.endpoint(),
        server.access_key(),
        server.secret_key()
    )
}

/// Prints where the server is; the credentials too when it generated them (the caller
/// has them otherwise, and a secret it gave stays out of the output).
fn print_server(server: &EmbeddedS3, buckets: &[String], dir: &Path, credentials: bool) {
    // A server keeps serving when whoever started it stops reading its output: write
    // errors (a closed pipe) are ignored instead of panicking as `println!` would.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "pqbench S3 server (s3s-fs) on {}, data in {}, buckets: {}",
        server.endpoint(),
        dir.display(),
        buckets.join(", ")
    );
    if credentials {
        let _ = write!(out, "{}", exports(server));
    } else {
        let _ = writeln!(
            out,
            "export AWS_ENDPOINT_URL={}\n(credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY as given)",
            server.endpoint()
        );
    }
    let _ = writeln!(out, "(Ctrl-C or SIGTERM stops it)");
    let _ = out.flush();
}
