//! `pqbench serve-s3` as a child process: the local S3 server that `bench-store` and
//! `run-one` measure against, in a process of its own so that its CPU is not counted as the
//! client's (and can be read from `/proc/<pid>`).

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, Result, bail};
use run::runspec::Credentials;
use s3::S3Settings;

/// A running `pqbench serve-s3` child; killed when dropped.
pub(crate) struct ServerChild {
    child: Child,
    /// Endpoint and credentials it printed.
    pub(crate) settings: S3Settings,
    _dir: tempfile::TempDir,
}

impl ServerChild {
    /// The child's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `pqbench serve-s3` on a free port with `bucket` created, in a temporary
/// directory, confined to `cpus` when given, and reads its endpoint and credentials.
pub(crate) fn spawn_server(bucket: &str, cpus: Option<&str>) -> Result<ServerChild> {
    let dir = tempfile::tempdir().context("temp dir for the server")?;
    let mut args: Vec<std::ffi::OsString> =
        ["serve-s3", "--port", "0", "--bucket", bucket, "--dir"]
            .map(Into::into)
            .into();
    args.push(dir.path().into());
    let (child, p) = spawn_serving(&args, cpus, "AWS_ENDPOINT_URL")?;
    Ok(ServerChild {
        child,
        settings: S3Settings::new(&p.endpoint, &p.access_key, &p.secret_key),
        _dir: dir,
    })
}

/// What a `serve-*` child printed: its endpoint and credentials.
struct Printed {
    endpoint: String,
    access_key: String,
    secret_key: zeroize::Zeroizing<String>,
}

/// Starts `pqbench ARGS` (a `serve-s3` or `serve-kms`), confined to `cpus` when given, and
/// reads the `export` lines it prints: `endpoint_var`, then the access key and the secret
/// key. Killed again if it does not print them.
fn spawn_serving(
    args: &[std::ffi::OsString],
    cpus: Option<&str>,
    endpoint_var: &str,
) -> Result<(Child, Printed)> {
    let what = format!("`pqbench {}`", args[0].to_string_lossy());
    let mut cmd = Command::new(std::env::current_exe().context("own executable")?);
    cmd.args(args);
    if let Some(c) = cpus {
        cmd.args(["--cpus", c]);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {what}"))?;
    let stdout = child.stdout.take().context("the child's stdout")?;
    let endpoint_prefix = format!("export {endpoint_var}=");
    let (mut ep, mut ak, mut sk) = (None, None, None);
    for line in BufReader::new(stdout).lines() {
        let line = line.with_context(|| format!("reading the output of {what}"))?;
        if let Some(v) = line.strip_prefix(&endpoint_prefix) {
            ep = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("export AWS_ACCESS_KEY_ID=") {
            ak = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("export AWS_SECRET_ACCESS_KEY=") {
            sk = Some(zeroize::Zeroizing::new(v.to_owned()));
            break;
        }
    }
    let (Some(endpoint), Some(access_key), Some(secret_key)) = (ep, ak, sk) else {
        let status = child.try_wait().ok().flatten();
        let _ = child.kill();
        bail!("{what} did not print its endpoint and credentials (exit: {status:?})");
    };
    Ok((
        child,
        Printed {
            endpoint,
            access_key,
            secret_key,
        },
    ))
}

/// The S3 server a local run uses: `endpoint` if given (credentials from the environment),
/// else an embedded `serve-s3` child whose credentials go to `creds_file` (0600).
/// Returns the child (it stops when dropped), the endpoint, the credentials reference and
/// the server's pid for the server-side samplers.
pub(crate) fn local_or_embedded(
    endpoint: Option<&str>,
    bucket: &str,
    creds_file: &std::path::Path,
    server_cpus: Option<&str>,
) -> Result<(Option<ServerChild>, String, Credentials, Option<u32>)> {
    let Some(ep) = endpoint else {
        let child = spawn_server(bucket, server_cpus)?;
        write_private(
            creds_file,
            &format!(
                "AWS_ACCESS_KEY_ID={}\nAWS_SECRET_ACCESS_KEY={}\n",
                child.settings.access_key,
                child.settings.secret_key.as_str()
            ),
        )?;
        let ep = child.settings.endpoint.clone();
        let pid = child.pid();
        return Ok((
            Some(child),
            ep,
            Credentials::File(creds_file.to_path_buf()),
            Some(pid),
        ));
    };
    Ok((None, ep.to_owned(), Credentials::default(), None))
}

/// Blocks until Ctrl-C or SIGTERM: how a `serve-*` command runs in the foreground.
pub(crate) fn until_stopped() -> Result<()> {
    Ok(worker::process::until_stopped()?)
}

/// The credentials a `serve-*` command takes with `--credentials-from-env`: the access key
/// and the secret key from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (never flags).
pub(crate) fn credentials_from_env() -> Result<(String, zeroize::Zeroizing<String>)> {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .filter(|v| !v.is_empty())
            .with_context(|| format!("--credentials-from-env: {name} is not set"))
    };
    Ok((
        var("AWS_ACCESS_KEY_ID")?,
        zeroize::Zeroizing::new(var("AWS_SECRET_ACCESS_KEY")?),
    ))
}

/// Writes a new file readable by its owner only (0600); refuses an existing one (an
/// `--env-file` holds a secret key, and a file someone else made could be readable).
pub(crate) fn write_new_private(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o
        .open(path)
        .with_context(|| format!("cannot create {} (it must not exist)", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Writes a new file readable by its owner only (0600), replacing an old one (a resumed
/// campaign writes its server's fresh credentials again).
pub(crate) fn write_private(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot replace {}", path.display())),
    }
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// A running `pqbench serve-kms` child (a remote arm's key service); killed when dropped.
pub(crate) struct KmsChild {
    child: Child,
    /// The round trip it adds.
    pub(crate) rtt: campaign::units::Dur,
    /// Where it is, for the run specs (credentials in a 0600 file).
    pub(crate) target: run::runspec::KmsTarget,
}

impl KmsChild {
    /// The child's process id.
    #[allow(dead_code, reason = "sampled with the server in a later change")]
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for KmsChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts one `pqbench serve-kms` per distinct added round trip of the plan's remote arms,
/// serving the campaign's keys directory `keys`, confined to `cpus` (the server's) when
/// given; each one's credentials go to `keys/kms-<rtt>.env` (0600).
pub(crate) fn spawn_kms_services(
    plan: &campaign::Plan,
    keys: &std::path::Path,
    cpus: Option<&str>,
) -> Result<Vec<KmsChild>> {
    let mut out = Vec::new();
    for rtt in plan.kms_rtts() {
        let shown = campaign::units::format_duration(rtt.0);
        let args: Vec<std::ffi::OsString> = vec![
            "serve-kms".into(),
            "--port".into(),
            "0".into(),
            "--rtt".into(),
            shown.clone().into(),
            "--keys".into(),
            keys.into(),
        ];
        let (child, p) = spawn_serving(&args, cpus, "AWS_ENDPOINT_URL_KMS")?;
        let (ep, ak, sk) = (p.endpoint, p.access_key, p.secret_key);
        let creds = keys.join(format!("kms-{shown}.env"));
        write_private(
            &creds,
            &format!(
                "AWS_ACCESS_KEY_ID={ak}\nAWS_SECRET_ACCESS_KEY={}\n",
                sk.as_str()
            ),
        )?;
        eprintln!("key service (rtt {shown}) on {ep}");
        out.push(KmsChild {
            child,
            rtt,
            target: run::runspec::KmsTarget {
                endpoint: ep,
                region: "us-east-1".into(),
                credentials: Credentials::File(creds),
            },
        });
    }
    Ok(out)
}
