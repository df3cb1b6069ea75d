//! `pqbench serve-kms`: the embedded key service (`kms` crate, `kms/PROTOCOL.md`) in the
//! foreground, as `serve-s3` runs the embedded S3 server: it prints its endpoint and
//! credentials as `export` lines and serves until Ctrl-C or SIGTERM.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use envelope::KeyType;
use kms::{EmbeddedKms, KeyStore, ServiceOptions};

#[derive(Args, Debug)]
pub(crate) struct ServeKmsArgs {
    /// The key directory: pqbench secret key files (`*.key`, 0600), created 0700 if
    /// missing, never inside a git working tree. A campaign's keys directory can be served
    /// as it is; keys made by CreateKey are written here as `<key id>.key`.
    #[arg(long)]
    keys: PathBuf,
    /// Port (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Address to listen on. Any loopback address (127.0.0.0/8) keeps it on this machine;
    /// another exposes it to the network.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    /// The region in the keys' ARNs (signatures are accepted for any region).
    #[arg(long, default_value = "us-east-1")]
    region: String,
    /// Round-trip time added to every response (e.g. 1ms, 0.5ms): the link to a remote key
    /// service.
    #[arg(long, default_value = "0ms", value_parser = campaign::units::parse_duration)]
    rtt: std::time::Duration,
    /// Requests per second answered (a token bucket as deep); those over it get
    /// ThrottlingException. Default: no limit.
    #[arg(long)]
    rate: Option<u32>,
    /// Create a key of this type at start (ml-kem-768, ml-kem-1024 or x25519; repeatable)
    /// and print its key id.
    #[arg(long = "create", value_parser = parse_key_type)]
    create: Vec<KeyType>,
    /// Take the credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the
    /// environment instead of generating them (never from the command line).
    #[arg(long)]
    credentials_from_env: bool,
    /// Also write the `export` lines (endpoint and credentials) to this new file, mode 0600.
    #[arg(long)]
    env_file: Option<PathBuf>,
    /// Worker threads of the service.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Confine the service to these CPUs before it starts its threads (a list as
    /// `taskset -c` takes it: 1, 0-3,8).
    #[arg(long)]
    cpus: Option<String>,
}

fn parse_key_type(s: &str) -> Result<KeyType, String> {
    KeyType::from_name(s).map_err(|e| e.to_string())
}

/// The `export` lines of a running service (`AWS_ENDPOINT_URL_KMS` is the AWS SDKs'
/// service-specific endpoint variable).
pub(crate) fn exports(endpoint: &str, access_key: &str, secret_key: &str) -> String {
    format!(
        "export AWS_ENDPOINT_URL_KMS={endpoint}\nexport AWS_ACCESS_KEY_ID={access_key}\n\
         export AWS_SECRET_ACCESS_KEY={secret_key}\n"
    )
}

pub(crate) fn serve(a: ServeKmsArgs) -> Result<()> {
    if let Some(cpus) = &a.cpus {
        worker::affinity::confine(cpus).map_err(|e| anyhow::anyhow!("--cpus: {e}"))?;
    }
    // Refused credentials stop it before any key is created.
    let credentials = a
        .credentials_from_env
        .then(crate::serverproc::credentials_from_env)
        .transpose()?;
    let store = Arc::new(KeyStore::open(&a.keys).context("--keys")?);
    let mut created = Vec::new();
    for kt in &a.create {
        let id = store.create_type(*kt).context("--create")?;
        created.push(id);
    }
    let options = ServiceOptions {
        addr: std::net::SocketAddr::new(a.host, a.port),
        region: a.region.clone(),
        rtt: a.rtt,
        rate: a.rate,
        threads: a.threads,
        metrics: Some(worker::keyservice::metrics_source()),
    };
    let service = match &credentials {
        Some((access, secret)) => EmbeddedKms::start_with(store.clone(), &options, access, secret)?,
        None => EmbeddedKms::start(store.clone(), &options)?,
    };
    let lines = exports(
        service.endpoint(),
        service.access_key(),
        service.secret_key(),
    );
    if let Some(p) = &a.env_file {
        crate::serverproc::write_new_private(p, &lines)
            .with_context(|| format!("--env-file {}", p.display()))?;
    }
    {
        // A service keeps serving when whoever started it stops reading its output.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "pqbench key service on {} (region {}, rtt {}, rate {}), keys in {}",
            service.endpoint(),
            service.region(),
            campaign::units::format_duration(a.rtt),
            a.rate.map_or("unlimited".into(), |r| format!("{r}/s")),
            store.dir().display()
        );
        for id in store.key_ids() {
            let spec = store.spec(&id).map(|s| s.name()).unwrap_or_default();
            let new = if created.contains(&id) {
                " (created)"
            } else {
                ""
            };
            let _ = writeln!(out, "key {id} {spec}{new}");
        }
        for (path, why) in store.skipped() {
            let _ = writeln!(out, "skipped {}: {why}", path.display());
        }
        if a.credentials_from_env {
            let _ = writeln!(
                out,
                "export AWS_ENDPOINT_URL_KMS={}\n(credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY as given)",
                service.endpoint()
            );
        } else {
            let _ = write!(out, "{lines}");
        }
        let _ = writeln!(out, "(Ctrl-C or SIGTERM stops it)");
        let _ = out.flush();
    }
    crate::serverproc::until_stopped()?;
    let (ok, throttled, refused) = service.counts();
    service.stop();
    let _ = writeln!(
        std::io::stderr(),
        "pqbench key service stopped ({ok} answered, {throttled} throttled, {refused} refused)"
    );
    Ok(())
}

/// The endpoint and credentials in a key-service env file: `[export ]NAME=value` lines of
/// AWS_ENDPOINT_URL_KMS, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (blank lines and `#`
/// comments allowed), as `serve-kms --env-file` writes them. The file must be mode 0600
/// (it holds a secret key).
pub(crate) fn read_env_file(path: &std::path::Path) -> Result<kms::KmsSettings> {
    use std::os::unix::fs::PermissionsExt as _;
    let shown = path.display();
    let meta = std::fs::metadata(path).with_context(|| format!("--kms {shown}"))?;
    if meta.permissions().mode() & 0o077 != 0 {
        anyhow::bail!(
            "--kms {shown} is readable by others (mode {:o}) and holds a secret key: chmod 600 it",
            meta.permissions().mode() & 0o777
        );
    }
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path).with_context(|| format!("--kms {shown}"))?,
    );
    let (mut endpoint, mut access, mut secret) = (None, None, None);
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let body = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = body.split_once('=') else {
            anyhow::bail!("--kms {shown} line {}: not NAME=value", n + 1);
        };
        match name.trim() {
            "AWS_ENDPOINT_URL_KMS" => endpoint = Some(value.trim().to_owned()),
            "AWS_ACCESS_KEY_ID" => access = Some(value.trim().to_owned()),
            "AWS_SECRET_ACCESS_KEY" => {
                secret = Some(zeroize::Zeroizing::new(value.trim().to_owned()))
            }
            _ => {}
        }
    }
    let missing = |what: &str| format!("--kms {shown} has no {what} line");
    let endpoint = endpoint.with_context(|| missing("AWS_ENDPOINT_URL_KMS"))?;
    let access = access.with_context(|| missing("AWS_ACCESS_KEY_ID"))?;
    let secret = secret.with_context(|| missing("AWS_SECRET_ACCESS_KEY"))?;
    Ok(kms::KmsSettings::new(
        &endpoint,
        "us-east-1",
        &access,
        &secret,
    ))
}

/// A reader whose key is `key` (id or ARN) in the key service of `env_file`, in the
/// format and mode `how` says: its public key fetched with GetPublicKey, no cache (one
/// object). The signing region is the ARN's, else us-east-1.
pub(crate) async fn remote_reader(
    env_file: &std::path::Path,
    key: &str,
    how: &crate::args::RemoteRead,
) -> Result<s3::Reader> {
    let mut settings = read_env_file(env_file)?;
    if let Some(region) = key.strip_prefix("arn:").and_then(|r| r.split(':').nth(2)) {
        settings.region = region.to_owned();
    }
    let client = Arc::new(kms::Client::new(&settings).context("--kms")?);
    let pk = client
        .get_public_key(key)
        .await
        .with_context(|| format!("--kms-key {key}"))?;
    let remote = kms::RemoteKey::new(client, &pk, false)?;
    let Some(mode) = how.mode else {
        let receiver = envelope::v2::RemoteReceiver::new(how.backend, &pk)
            .with_context(|| format!("--kms-key {key} (format v2)"))?;
        let receiver = if how.require_pq {
            receiver.requiring_pq()?
        } else {
            receiver
        };
        return Ok(s3::Reader::RemoteV2 {
            receiver,
            key: remote,
        });
    };
    let receiver = envelope::Receiver::remote(mode, how.backend, &pk)
        .with_context(|| format!("--kms-key {key} with --expect-mode {mode}"))?;
    Ok(s3::Reader::Remote {
        receiver,
        key: remote,
    })
}
