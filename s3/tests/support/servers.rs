//! The two real S3 servers the store is tested against, behind one interface so that every
//! test body runs unchanged on both:
//!
//! - the embedded server (`s3s` + `s3s-fs`, in-process, its own thread and runtime);
//! - Garage 2.5.0, a separate process (`cargo install garage --version 2.5.0 --locked`),
//!   started single-node on 127.0.0.1 with a temp directory. If its binary cannot be found
//!   the Garage tests fail with a message saying how to install it; they never pass
//!   silently.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use s3::{EmbeddedS3, S3Settings, Store};

pub(crate) const BUCKET: &str = "pqbench-test";
pub(crate) const TENANT: &str = "tenant-a";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Embedded,
    Garage,
}

enum Proc {
    Embedded(Option<EmbeddedS3>),
    Garage(Option<Child>),
}

/// A running test server with one bucket, restartable on the same data.
pub(crate) struct TestServer {
    kind: Kind,
    proc: Proc,
    dir: tempfile::TempDir,
    addr: SocketAddr,
    access_key: String,
    secret_key: String,
    region: String,
    admin: SocketAddr,
    metrics_token: String,
}

/// A port for a server started later (Garage binds it itself, so there is a window between
/// this check and its bind). Taken below the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`, 32768-60999 by default) at random: a port from
/// `bind(127.0.0.1:0)` is an ephemeral one, which the outgoing connections of the tests
/// running beside may take in that window (Garage then failed with "Address already in
/// use" and the test waited out its 60 s).
fn free_port() -> SocketAddr {
    for _ in 0..1000 {
        let mut b = [0u8; 2];
        getrandom::fill(&mut b).expect("randomness");
        let port = 20_000 + u16::from_le_bytes(b) % 12_000;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            return l.local_addr().expect("local addr");
        }
    }
    panic!("no free port in 20000-31999 on 127.0.0.1")
}

fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).expect("randomness");
    hex::encode(b)
}

/// The Garage binary: `$PQBENCH_GARAGE`, else `garage` on PATH, else `~/.cargo/bin/garage`.
pub(crate) fn garage_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("PQBENCH_GARAGE") {
        return PathBuf::from(p);
    }
    let candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("garage"))
                .collect()
        })
        .unwrap_or_default();
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    for c in candidates
        .into_iter()
        .chain(home.map(|h| h.join("bin").join("garage")))
    {
        if c.is_file() {
            return c;
        }
    }
    panic!(
        "the Garage tests need the garage 2.5.0 binary and none was found (looked at \
         $PQBENCH_GARAGE, PATH and ~/.cargo/bin). Install it with \
         `scripts/garage-install.sh` (as `.ci/run` does) or `cargo install garage --version \
         2.5.0 --locked`, or point PQBENCH_GARAGE at it."
    );
}

impl TestServer {
    pub(crate) fn start(kind: Kind) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let addr = free_port();
        let mut s = match kind {
            Kind::Embedded => Self {
                kind,
                proc: Proc::Embedded(None),
                dir,
                addr,
                access_key: format!("PQ{}", random_hex(9).to_uppercase()),
                secret_key: random_hex(20),
                region: "us-east-1".into(),
                admin: addr,
                metrics_token: String::new(),
            },
            Kind::Garage => Self {
                kind,
                proc: Proc::Garage(None),
                dir,
                addr,
                // Garage's key format: "GK" + 24 hex digits, secret 64 hex digits.
                access_key: format!("GK{}", random_hex(12)),
                secret_key: random_hex(32),
                region: "garage".into(),
                admin: free_port(),
                metrics_token: random_hex(16),
            },
        };
        s.launch();
        s
    }

    fn launch(&mut self) {
        match self.kind {
            Kind::Embedded => {
                let data = self.dir.path().join("data");
                let s =
                    EmbeddedS3::start_with(&data, self.addr, &self.access_key, &self.secret_key)
                        .expect("start the embedded S3 server");
                s.create_bucket(BUCKET).expect("bucket");
                self.proc = Proc::Embedded(Some(s));
            }
            Kind::Garage => {
                let child = self.launch_garage();
                self.proc = Proc::Garage(Some(child));
                self.wait_ready();
            }
        }
    }

    fn launch_garage(&self) -> Child {
        let bin = garage_binary();
        let d = self.dir.path();
        let conf = d.join("garage.toml");
        if !conf.exists() {
            let rpc = free_port();
            let text = format!(
                r#"metadata_dir = "{meta}"
data_dir = "{data}"
db_engine = "lmdb"
replication_factor = 1
rpc_bind_addr = "{rpc}"
rpc_public_addr = "{rpc}"
rpc_secret = "{secret}"

[s3_api]
s3_region = "garage"
api_bind_addr = "{s3}"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "{admin}"
metrics_token = "{metrics}"
"#,
                meta = d.join("meta").display(),
                data = d.join("blocks").display(),
                rpc = rpc,
                secret = random_hex(32),
                s3 = self.addr,
                admin = self.admin,
                metrics = self.metrics_token,
            );
            std::fs::write(&conf, text).expect("write garage.toml");
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.join("garage.log"))
            .expect("garage log");
        Command::new(&bin)
            .arg("-c")
            .arg(&conf)
            .args([
                "server",
                "--single-node",
                "--default-access-key",
                "--default-bucket",
            ])
            .env("GARAGE_DEFAULT_ACCESS_KEY", &self.access_key)
            .env("GARAGE_DEFAULT_SECRET_KEY", &self.secret_key)
            .env("GARAGE_DEFAULT_BUCKET", BUCKET)
            .env("RUST_LOG", "garage=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()))
    }

    /// Waits until the bucket answers a LIST (Garage needs a moment to apply its layout).
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Proc::Garage(Some(c)) = &mut self.proc
                && let Ok(Some(status)) = c.try_wait()
            {
                let log =
                    std::fs::read_to_string(self.dir.path().join("garage.log")).unwrap_or_default();
                panic!("garage exited with {status} during startup:\n{log}");
            }
            // Probe on a thread of its own, so that this works inside or outside a runtime.
            let store = self.store();
            let ok = std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime")
                    .block_on(async { store.versions("probe").await.is_ok() })
            })
            .join()
            .expect("probe thread");
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "garage did not answer within 60 s; log:\n{}",
                std::fs::read_to_string(self.dir.path().join("garage.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(crate) fn settings(&self) -> S3Settings {
        let mut s = S3Settings::new(
            &format!("http://{}", self.addr),
            &self.access_key,
            &self.secret_key,
        );
        s.region = self.region.clone();
        s
    }

    /// Garage's Prometheus endpoint and its bearer token.
    #[allow(dead_code, reason = "used by some test crates only")]
    pub(crate) fn metrics(&self) -> Option<(String, String)> {
        (self.kind == Kind::Garage).then(|| {
            (
                format!("http://{}/metrics", self.admin),
                self.metrics_token.clone(),
            )
        })
    }

    /// The server's process id, when it is a separate process.
    #[allow(dead_code, reason = "used by some test crates only")]
    pub(crate) fn pid(&self) -> Option<u32> {
        match &self.proc {
            Proc::Garage(Some(c)) => Some(c.id()),
            _ => None,
        }
    }

    #[allow(dead_code, reason = "used by some test crates only")]
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// An AWS SDK client for raw objects beside the protocol (listing, planting, reading).
    #[allow(dead_code, reason = "used by some test crates only")]
    pub(crate) fn sdk(&self) -> s3::aws_sdk_s3::Client {
        self.settings().client().expect("sdk client")
    }

    pub(crate) fn store(&self) -> Store {
        Store::new(&self.settings(), BUCKET, TENANT).expect("store")
    }

    /// A store on the given S3 client.
    #[allow(dead_code, reason = "used by some test crates only")]
    pub(crate) fn store_on(&self, client: s3::S3ClientKind) -> Store {
        let mut s = self.settings();
        s.s3_client = client;
        Store::new(&s, BUCKET, TENANT).expect("store")
    }

    /// Stops the server abruptly (connections closed, process killed); data stays.
    pub(crate) fn stop(&mut self) {
        match &mut self.proc {
            Proc::Embedded(s) => {
                if let Some(s) = s.take() {
                    s.stop();
                }
            }
            Proc::Garage(c) => {
                if let Some(mut c) = c.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
        }
    }

    /// Starts the server again on the same data, address and credentials.
    #[allow(dead_code, reason = "used by some test crates only")]
    pub(crate) fn restart(&mut self) {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        // The port may linger briefly after the old listener closed.
        while TcpListener::bind(self.addr).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        match self.kind {
            Kind::Embedded => {
                let data = self.dir.path().join("data");
                let s =
                    EmbeddedS3::start_with(&data, self.addr, &self.access_key, &self.secret_key)
                        .expect("restart the embedded S3 server");
                self.proc = Proc::Embedded(Some(s));
            }
            Kind::Garage => {
                let child = self.launch_garage();
                self.proc = Proc::Garage(Some(child));
                self.wait_ready();
            }
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}
