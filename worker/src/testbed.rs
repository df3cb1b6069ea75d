//! The testbed probes (study IV-A): iperf3 both ways, fio's sequential writes and ping,
//! run as the tools' own processes before a campaign's first run, read into
//! [`analysis::testbed::Baselines`] (whose module says what each ceiling is for).
//!
//! A probe that cannot run (the tool missing, nothing to aim at, the tool's own error)
//! becomes [`Probe::NotMeasured`] with the reason: the campaign goes on and the report
//! says which ceilings it could not judge. The parsers are pure functions over the tools'
//! output, tested on output captured from Debian's packages (`tests/fixtures/testbed`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use analysis::testbed::{Baselines, Disk, Network, Probe, ProbeSettings, RoundTrip};

/// Where and how to probe.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Where the baselines are taken (`this host`, a node's name).
    pub site: String,
    /// The server host: iperf3's and ping's target.
    pub server_host: String,
    /// The iperf3 server: `Start` one on this host (on `server_cpus`), `At` a port
    /// another process serves, or `None` (not measured, with the reason).
    pub iperf3: Iperf3Server,
    /// The directory on the server's disk that fio writes in (`None`: not measured, with
    /// the reason).
    pub disk_dir: Result<PathBuf, String>,
    /// CPUs of the server side (iperf3's server, fio), as `taskset -c` takes them.
    pub server_cpus: Option<String>,
    /// CPUs of the client side (iperf3's client, ping).
    pub client_cpus: Option<String>,
    /// The server's cores, recorded for the server's use of its CPUs.
    pub server_cores: Option<f64>,
    /// Duration and streams.
    pub settings: ProbeSettings,
}

/// The iperf3 server of a [`Plan`].
#[derive(Clone, Debug)]
pub enum Iperf3Server {
    /// Start `iperf3 -s` on this host for the probe.
    Start,
    /// One listens at this port of the server host.
    At(u16),
    /// None can be reached; the reason.
    None(String),
}

/// Takes every baseline, one after another (each needs the machine to itself).
pub fn take(plan: &Plan) -> Baselines {
    let taken_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    Baselines {
        site: plan.site.clone(),
        taken_unix_s,
        server_host: plan.server_host.clone(),
        server_cores: plan.server_cores,
        network: probe(network(plan)),
        disk: probe(
            plan.disk_dir
                .clone()
                .and_then(|dir| disk(&dir, plan.server_cpus.as_deref(), plan.settings.seconds)),
        ),
        round_trip: probe(round_trip(plan)),
    }
}

/// The server disk's probe alone, fio writing in a directory of its own under `dir`:
/// MinIO's `disk-probe` init container (`pqbench-worker --disk-probe /data`), on MinIO's
/// data volume before MinIO starts.
pub fn disk_probe(dir: &Path, seconds: u32) -> Probe<Disk> {
    probe(disk(dir, None, seconds))
}

/// The operator's pre-flight probe Job (`pqbench-worker --probe-env`,
/// [`run::preflight`]): the network and the round trip measured from this pod, the disk as
/// the init container beside the server measured it; written to `baselines.json` under
/// the campaign's prefix in the results bucket, and returned.
pub async fn preflight(spec: &run::preflight::ProbeSpec) -> crate::Result<Baselines> {
    let run::runspec::Output::S3 { bucket, prefix, .. } = &spec.results else {
        return Err(crate::Error::Config(
            "the pre-flight probe writes to a results bucket: results must be S3 output".into(),
        ));
    };
    let plan = Plan {
        site: spec.site.clone(),
        server_host: endpoint_host(&spec.s3.endpoint).unwrap_or_else(|| spec.s3.endpoint.clone()),
        iperf3: match &spec.iperf3 {
            Ok(port) => Iperf3Server::At(*port),
            Err(why) => Iperf3Server::None(why.clone()),
        },
        disk_dir: Err("taken beside the server".into()),
        server_cpus: None,
        client_cpus: None,
        server_cores: spec.server_cores,
        settings: spec.settings,
    };
    let mut b = tokio::task::spawn_blocking(move || take(&plan))
        .await
        .map_err(|e| crate::Error::Config(format!("the probes' thread: {e}")))?;
    b.disk = spec.disk.clone();
    let store = s3::ResultsBucket::new(
        &crate::engine::results_store_settings(&spec.s3, &spec.results)?,
        bucket,
        prefix,
    )?;
    let body = serde_json::to_vec_pretty(&b).map_err(|e| crate::Error::Output {
        path: crate::analyze::BASELINES.into(),
        detail: e.to_string(),
    })?;
    store
        .put(&format!("{prefix}{}", crate::analyze::BASELINES), body)
        .await?;
    Ok(b)
}

/// The host of an S3 endpoint URL, as `http::Uri` reads it (`http://10.0.0.5:9000` →
/// `10.0.0.5`, `http://[::1]:9000` → `::1`); `None` for an endpoint without one.
pub fn endpoint_host(endpoint: &str) -> Option<String> {
    let uri: http::Uri = endpoint.parse().ok()?;
    let host = uri.host()?;
    Some(
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned(),
    )
}

fn probe<T>(r: Result<T, String>) -> Probe<T> {
    r.map_or_else(Probe::NotMeasured, Probe::Measured)
}

/// A command, under `taskset -c cpus` when given.
fn command(tool: &str, cpus: Option<&str>) -> Command {
    match cpus {
        Some(c) => {
            let mut cmd = Command::new("taskset");
            cmd.args(["-c", c, tool]);
            cmd
        }
        None => Command::new(tool),
    }
}

/// Runs `cmd` to its end or `limit`, returning (succeeded, stdout, stderr). A missing
/// tool is an error naming the Debian package.
fn run(mut cmd: Command, tool: &str, limit: Duration) -> Result<(bool, String, String), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| missing(tool, &e))?;
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{tool} did not finish within {} s",
                    limit.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for {tool}: {e}")),
        }
    };
    let (out, err) = (drain(&mut child, true), drain(&mut child, false));
    Ok((status.success(), out, err))
}

fn drain(child: &mut Child, stdout: bool) -> String {
    let mut s = String::new();
    let _ = if stdout {
        child.stdout.take().map(|mut o| o.read_to_string(&mut s))
    } else {
        child.stderr.take().map(|mut o| o.read_to_string(&mut s))
    };
    s
}

fn missing(tool: &str, e: &std::io::Error) -> String {
    let package = match tool {
        "ping" => "iputils-ping",
        "taskset" => "util-linux",
        other => other,
    };
    if e.kind() == std::io::ErrorKind::NotFound {
        format!("{tool} is not installed (Debian: apt-get install {package})")
    } else {
        format!("cannot start {tool}: {e}")
    }
}

/// A `iperf3 -s` child, stopped when dropped.
struct Iperf3Child(Child);

impl Drop for Iperf3Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port for iperf3: {e}"))
}

fn network(plan: &Plan) -> Result<Network, String> {
    let (_server, port) = match &plan.iperf3 {
        Iperf3Server::None(why) => return Err(why.clone()),
        Iperf3Server::At(p) => (None, *p),
        Iperf3Server::Start => {
            let port = free_port()?;
            let mut cmd = command("iperf3", plan.server_cpus.as_deref());
            cmd.args(["-s", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd.spawn().map_err(|e| {
                missing(
                    if plan.server_cpus.is_some() {
                        "taskset"
                    } else {
                        "iperf3"
                    },
                    &e,
                )
            })?;
            (Some(Iperf3Child(child)), port)
        }
    };
    let s = plan.settings;
    let way = |reverse: bool| -> Result<(f64, String), String> {
        // The server may still be starting: a refused connection is tried again for 3 s.
        let until = Instant::now() + Duration::from_secs(3);
        loop {
            let mut cmd = command("iperf3", plan.client_cpus.as_deref());
            cmd.args(["-c", &plan.server_host, "-p", &port.to_string(), "-J"])
                .args(["-t", &s.seconds.to_string(), "-P", &s.streams.to_string()]);
            if reverse {
                cmd.arg("-R");
            }
            let limit = Duration::from_secs(u64::from(s.seconds) + 15);
            let (_, out, err) = run(cmd, "iperf3", limit)?;
            match parse_iperf3(&out) {
                Err(e) if e.contains("Connection refused") && Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) if out.trim().is_empty() => {
                    return Err(format!("iperf3: {e} {}", err.trim()));
                }
                r => return r,
            }
        }
    };
    let (up, tool) = way(false)?;
    let (down, _) = way(true)?;
    Ok(Network {
        upload_bits_per_s: up,
        download_bits_per_s: down,
        streams: s.streams,
        seconds: s.seconds,
        tool,
    })
}

/// Bits per second received and the version from `iperf3 -J` output; its `error` as the
/// error.
pub fn parse_iperf3(json: &str) -> Result<(f64, String), String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("unreadable JSON from iperf3 ({e})"))?;
    if let Some(e) = v.get("error").and_then(serde_json::Value::as_str) {
        return Err(e.to_owned());
    }
    let bps = v
        .pointer("/end/sum_received/bits_per_second")
        .and_then(serde_json::Value::as_f64)
        .filter(|b| b.is_finite() && *b > 0.0)
        .ok_or("iperf3's JSON has no end.sum_received.bits_per_second")?;
    let version = v
        .pointer("/start/version")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("iperf3");
    Ok((bps, version.to_owned()))
}

/// fio's block size.
const FIO_BLOCK: u64 = 1 << 20;

/// fio's sequential writes for `seconds` in a directory of its own under `parent`, under
/// `taskset -c cpus` when given.
fn disk(parent: &Path, cpus: Option<&str>, seconds: u32) -> Result<Disk, String> {
    // A directory of the probe's own, removed with what fio wrote.
    let dir = tempfile::Builder::new()
        .prefix("pqbench-fio-")
        .tempdir_in(parent)
        .map_err(|e| {
            format!(
                "cannot create a directory for fio in {}: {e}",
                parent.display()
            )
        })?;
    let attempt = |direct: bool| {
        let mut cmd = command("fio", cpus);
        cmd.args(fio_args(dir.path(), seconds, direct));
        let limit = Duration::from_secs(u64::from(seconds) + 30);
        run(cmd, "fio", limit).and_then(|(ok, out, err)| {
            if ok {
                parse_fio(&out, direct)
            } else {
                Err(format!("fio failed: {}", last_line(&err)))
            }
        })
    };
    // O_DIRECT measures the disk rather than the page cache; a file system without it
    // (tmpfs) gets buffered writes flushed at the end.
    attempt(true).or_else(|_| attempt(false))
}

fn last_line(s: &str) -> &str {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// fio's arguments: sequential 1 MiB writes to a 64 MiB file, rewritten for `seconds`.
pub fn fio_args(dir: &Path, seconds: u32, direct: bool) -> Vec<String> {
    let mut a: Vec<String> = [
        "--name=pqbench-disk",
        "--rw=write",
        "--bs=1M",
        "--size=64M",
        "--ioengine=psync",
        "--time_based",
        "--output-format=json",
    ]
    .map(str::to_owned)
    .to_vec();
    a.push(format!("--directory={}", dir.display()));
    a.push(format!("--runtime={seconds}"));
    a.push(
        if direct {
            "--direct=1"
        } else {
            "--end_fsync=1"
        }
        .to_owned(),
    );
    a
}

/// The write rate and latency from `fio --output-format=json` output.
pub fn parse_fio(json: &str, direct: bool) -> Result<Disk, String> {
    // fio may print notes before its JSON.
    let start = json.find('{').ok_or("fio printed no JSON")?;
    let v: serde_json::Value = serde_json::from_str(&json[start..])
        .map_err(|e| format!("unreadable JSON from fio ({e})"))?;
    let w = v
        .pointer("/jobs/0/write")
        .ok_or("fio's JSON has no jobs[0].write")?;
    let bw = w
        .get("bw_bytes")
        .and_then(serde_json::Value::as_f64)
        .filter(|b| *b > 0.0)
        .ok_or("fio wrote nothing (jobs[0].write.bw_bytes is 0 or missing)")?;
    let clat_ns = w
        .pointer("/clat_ns/mean")
        .and_then(serde_json::Value::as_f64)
        .ok_or("fio's JSON has no jobs[0].write.clat_ns.mean")?;
    Ok(Disk {
        write_bytes_per_s: bw,
        write_latency_ms: clat_ns / 1e6,
        block_bytes: FIO_BLOCK,
        direct,
        tool: v
            .get("fio version")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("fio")
            .to_owned(),
    })
}

fn round_trip(plan: &Plan) -> Result<RoundTrip, String> {
    let count = 5;
    let mut cmd = command("ping", plan.client_cpus.as_deref());
    cmd.args([
        "-c",
        &count.to_string(),
        "-i",
        "0.2",
        "-W",
        "2",
        "-q",
        &plan.server_host,
    ]);
    let (_, out, err) = run(cmd, "ping", Duration::from_secs(20))?;
    parse_ping(&out).ok_or_else(|| {
        format!(
            "ping {} had no answer: {}",
            plan.server_host,
            last_line(if err.trim().is_empty() { &out } else { &err })
        )
    })
}

/// The summary of `ping -q` output (iputils: `rtt min/avg/max/mdev = a/b/c/d ms`;
/// BusyBox: `round-trip min/avg/max = a/b/c ms`); `None` without answers.
pub fn parse_ping(text: &str) -> Option<RoundTrip> {
    let received: u32 = text.lines().find_map(|l| {
        let (_, rest) = l.split_once("transmitted, ")?;
        rest.split_whitespace().next()?.parse().ok()
    })?;
    let line = text
        .lines()
        .find(|l| l.starts_with("rtt ") || l.starts_with("round-trip "))?;
    let nums: Vec<f64> = line
        .split_once('=')?
        .1
        .trim()
        .trim_end_matches("ms")
        .trim()
        .split('/')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    (received > 0 && nums.len() >= 3).then(|| RoundTrip {
        count: received,
        min_ms: nums[0],
        avg_ms: nums[1],
        max_ms: nums[2],
        mdev_ms: nums.get(3).copied().unwrap_or(0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/testbed/");

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{FIXTURES}{name}")).expect(name)
    }

    #[test]
    fn iperf3_output_is_read_both_ways_and_its_error_kept() {
        let (up, v) = parse_iperf3(&fixture("iperf3-3.12.json")).expect("forward");
        assert_eq!(v, "iperf 3.12");
        assert!((up - 26_979_410_348.183_544).abs() < 1e-3, "{up}");
        let (down, _) = parse_iperf3(&fixture("iperf3-3.12-reverse.json")).expect("reverse");
        assert!((down - 26_569_521_860.215_816).abs() < 1e-3, "{down}");
        assert_eq!(
            parse_iperf3(&fixture("iperf3-3.12-refused.json")),
            Err("unable to connect to server: Connection refused".into())
        );
        assert!(parse_iperf3("not json").is_err());
    }

    #[test]
    fn fio_output_is_read() {
        let d = parse_fio(&fixture("fio-3.33.json"), true).expect("fio");
        assert_eq!(d.tool, "fio-3.33");
        assert!((d.write_bytes_per_s - 1_688_273_308.0).abs() < 1e-6);
        assert!((d.write_latency_ms - 0.598_788_765_625).abs() < 1e-12);
        assert!(d.direct && d.block_bytes == 1 << 20);
        assert!(parse_fio("fio: no JSON here", true).is_err());
    }

    #[test]
    fn the_host_of_an_endpoint() {
        let host = |e: &str| endpoint_host(e);
        assert_eq!(host("http://127.0.0.1:9000").as_deref(), Some("127.0.0.1"));
        assert_eq!(
            host("https://s3.example.com/bucket").as_deref(),
            Some("s3.example.com")
        );
        assert_eq!(host("http://[::1]:9000").as_deref(), Some("::1"));
        assert_eq!(host("minio.ns.svc:9000").as_deref(), Some("minio.ns.svc"));
    }

    #[test]
    fn ping_output_is_read() {
        let r = parse_ping(&fixture("ping-iputils-20221126.txt")).expect("ping");
        assert_eq!(
            r,
            RoundTrip {
                count: 3,
                min_ms: 0.026,
                avg_ms: 0.041,
                max_ms: 0.052,
                mdev_ms: 0.011
            }
        );
        // BusyBox's summary has no mean deviation.
        let busybox = "3 packets transmitted, 3 packets received, 0% packet loss\nround-trip min/avg/max = 0.1/0.2/0.3 ms\n";
        assert_eq!(parse_ping(busybox).map(|r| r.avg_ms), Some(0.2));
        let none = "2 packets transmitted, 0 received, 100% packet loss, time 1011ms\n";
        assert_eq!(parse_ping(none), None);
    }
}
