//! `pqbench serve-s3` as a child process: the local S3 server that `bench-store` and
//! `run-one` measure against, in a process of its own so that its CPU is not counted as the
//! client's (and can be read from `/proc/<pid>`).

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

use anyhow::{Context as _, Result, bail};
use worker::S3Settings;

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
/// directory, and reads its endpoint and credentials.
pub(crate) fn spawn_server(bucket: &str) -> Result<ServerChild> {
    let dir = tempfile::tempdir().context("temp dir for the server")?;
    let exe = std::env::current_exe().context("own executable")?;
    let mut child = Command::new(exe)
        .args(["serve-s3", "--port", "0", "--bucket", bucket, "--dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start `pqbench serve-s3`")?;
    let stdout = child.stdout.take().context("server stdout")?;
    let (mut ep, mut ak, mut sk) = (None, None, None);
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading the server's output")?;
        if let Some(v) = line.strip_prefix("export AWS_ENDPOINT_URL=") {
            ep = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("export AWS_ACCESS_KEY_ID=") {
            ak = Some(v.to_owned());
        } else if let Some(v) = line.strip_prefix("export AWS_SECRET_ACCESS_KEY=") {
            sk = Some(v.to_owned());
            break;
        }
    }
    let (Some(ep), Some(ak), Some(sk)) = (ep, ak, sk) else {
        let status = child.try_wait().ok().flatten();
        let _ = child.kill();
        bail!("`pqbench serve-s3` did not print its endpoint and credentials (exit: {status:?})");
    };
    Ok(ServerChild {
        child,
        settings: S3Settings::new(&ep, &ak, &sk),
        _dir: dir,
    })
}
