//! The 1 Hz samplers and the pause rule (study section IV-A: client and server samplers;
//! section IV: the pause between runs; DESIGN.md "A run").
//!
//! Client figures come from this process and host (`/proc`, [`crate::host`]). Server
//! figures come from, in order of preference for each field: the server's Prometheus text
//! endpoint (MinIO's metric names by default, configurable), a node-exporter endpoint on
//! the server host, or, when the server runs on this host, `/proc` directly.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

pub use run::summary::PauseTaken;
use tokio::sync::watch;

use crate::host;
use run::records::Sample;
use run::runspec::{PauseRule, PromSource, ServerMetricNames, Telemetry};

/// One series of a Prometheus text page.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Metric name.
    pub name: String,
    /// Labels.
    pub labels: Vec<(String, String)>,
    /// Value.
    pub value: f64,
}

/// Parses the Prometheus text exposition format (version 0.0.4; OpenMetrics text is a
/// superset for what is read here). Comments, malformed lines and timestamps are skipped.
pub fn parse_prometheus(text: &str) -> Vec<Series> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Series> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(line.len());
    let name = line[..name_end].to_owned();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        let (ls, after) = parse_labels(r)?;
        labels = ls;
        rest = after;
    }
    let value = rest.split_whitespace().next()?.parse().ok()?;
    Some(Series {
        name,
        labels,
        value,
    })
}

fn parse_labels(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start_matches([' ', ',']);
        if let Some(r) = s.strip_prefix('}') {
            return Some((out, r));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim().to_owned();
        s = s[eq + 1..].trim_start().strip_prefix('"')?;
        let mut val = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => val.push('\n'),
                    o => val.push(o),
                },
                '"' => break i,
                o => val.push(o),
            }
        };
        out.push((key, val));
        s = &s[end + 1..];
    }
}

/// A selector: a metric name with optional label matchers, `name` or
/// `name{label="value",…}`. It selects the sum of all matching series.
pub fn select(series: &[Series], selector: &str) -> Option<f64> {
    let (name, want) = match selector.split_once('{') {
        Some((n, r)) => (n, parse_labels(r).map(|(l, _)| l).unwrap_or_default()),
        None => (selector, Vec::new()),
    };
    let mut sum = None;
    for s in series.iter().filter(|s| s.name == name) {
        if want.iter().all(|w| s.labels.contains(w)) {
            *sum.get_or_insert(0.0) += s.value;
        }
    }
    sum
}

/// Node-exporter selectors (Linux collectors' names).
const NODE_DIRTY: &str = "node_memory_Dirty_bytes";
const NODE_WRITEBACK: &str = "node_memory_Writeback_bytes";
const NODE_DISK_WRITTEN: &str = "node_disk_written_bytes_total";
const NODE_DISK_WRITES: &str = "node_disk_writes_completed_total";
const NODE_DISK_WRITE_S: &str = "node_disk_write_time_seconds_total";
const NODE_DISK_WEIGHTED_IO_S: &str = "node_disk_io_time_weighted_seconds_total";
const NODE_IOWAIT: &str = "node_cpu_seconds_total{mode=\"iowait\"}";
const NODE_CPU: &str = "node_cpu_seconds_total";

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// Reads a Prometheus text endpoint.
#[derive(Clone)]
struct Prom {
    url: http::Uri,
    token: Option<String>,
    client: HttpsClient,
}

impl Prom {
    fn new(src: &PromSource) -> Result<Self, String> {
        let url: http::Uri = src
            .url
            .parse()
            .map_err(|e| format!("metrics URL {:?}: {e}", src.url))?;
        let token = match (&src.bearer_token_env, &src.bearer_token_file) {
            (Some(v), _) => Some(
                std::env::var(v)
                    .map_err(|_| format!("bearer token variable {v} is not set"))?
                    .trim()
                    .to_owned(),
            ),
            (None, Some(p)) => Some(
                std::fs::read_to_string(p)
                    .map_err(|e| format!("bearer token file {}: {e}", p.display()))?
                    .trim()
                    .to_owned(),
            ),
            (None, None) => None,
        };
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| format!("TLS roots: {e}"))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            url,
            token,
            client: Client::builder(TokioExecutor::new()).build(https),
        })
    }

    async fn scrape(&self) -> Result<Vec<Series>, String> {
        let mut req = http::Request::get(self.url.clone());
        if let Some(t) = &self.token {
            req = req.header(http::header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let req = req.body(Empty::new()).map_err(|e| e.to_string())?;
        let fut = async {
            let resp = self.client.request(req).await.map_err(|e| e.to_string())?;
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            if !status.is_success() {
                return Err(format!("HTTP {status}"));
            }
            Ok(parse_prometheus(&String::from_utf8_lossy(&body)))
        };
        tokio::time::timeout(Duration::from_millis(900), fut)
            .await
            .map_err(|_| "no answer within 900 ms".to_owned())?
    }
}

/// Server-side readings at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerReading {
    /// Server process CPU seconds.
    pub cpu_s: Option<f64>,
    /// Server process resident bytes.
    pub rss: Option<f64>,
    /// Server host dirty bytes.
    pub dirty: Option<f64>,
    /// Server host write-back bytes.
    pub writeback: Option<f64>,
    /// Server host bytes written to disk.
    pub disk_written: Option<f64>,
    /// Server host disk writes completed.
    pub disk_writes: Option<f64>,
    /// Server host seconds spent writing, summed over the writes.
    pub disk_write_s: Option<f64>,
    /// Server host weighted seconds doing I/O (the queue depth's integral).
    pub disk_weighted_io_s: Option<f64>,
    /// Server host I/O wait seconds.
    pub iowait_s: Option<f64>,
    /// Server host CPU seconds, all modes.
    pub cpu_total_s: Option<f64>,
    /// The key service's process CPU seconds (remote runs).
    pub kms_cpu_s: Option<f64>,
    /// The key service's process resident bytes.
    pub kms_rss: Option<f64>,
}

/// The configured sources of server figures.
#[derive(Clone)]
pub struct Sources {
    server: Option<Prom>,
    names: ServerMetricNames,
    node: Option<Prom>,
    local_pid: Option<u32>,
    kms: Option<Prom>,
    /// The last scrape error per source, for the summary (`None`: all answered).
    errors: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Sources {
    /// Builds the sources of a spec's `telemetry`. Errors name the setting.
    pub fn new(t: &Telemetry) -> Result<Self, String> {
        Ok(Self {
            server: t.server_metrics.as_ref().map(Prom::new).transpose()?,
            names: t.server_metric_names.clone(),
            node: t.node_exporter.as_ref().map(Prom::new).transpose()?,
            local_pid: t.local_server_pid,
            kms: None,
            errors: Arc::default(),
        })
    }

    /// Also reads the key service at `endpoint` (a remote run's `kms.endpoint`): its
    /// `/metrics` page ([`run::keyservice::METRICS_PATH`]), as the S3 server's.
    pub fn with_key_service(mut self, endpoint: &str) -> Result<Self, String> {
        let url = format!(
            "{}{}",
            endpoint.trim_end_matches('/'),
            run::keyservice::METRICS_PATH
        );
        self.kms = Some(Prom::new(&PromSource {
            url,
            bearer_token_env: None,
            bearer_token_file: None,
        })?);
        Ok(self)
    }

    /// Whether any source can tell the server host's dirty memory and disk writes.
    pub fn sees_server_host(&self) -> bool {
        self.node.is_some() || self.local_pid.is_some()
    }

    fn note(&self, what: &str, e: String) {
        if let Ok(mut v) = self.errors.lock()
            && v.len() < 20
        {
            v.push(format!("{what}: {e}"));
        }
    }

    /// Scrape errors seen so far (at most 20).
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Reads every source once.
    pub async fn read(&self) -> ServerReading {
        let mut r = ServerReading::default();
        if let Some(pid) = self.local_pid {
            let (cpu, rss) = host::process_counters(pid);
            let h = host::host_counters();
            r = ServerReading {
                cpu_s: cpu,
                rss,
                dirty: h.dirty,
                writeback: h.writeback,
                disk_written: h.disk.map(|d| d.written_bytes),
                disk_writes: h.disk.map(|d| d.writes),
                disk_write_s: h.disk.map(|d| d.write_s),
                disk_weighted_io_s: h.disk.map(|d| d.weighted_io_s),
                iowait_s: h.cpu_iowait_s,
                cpu_total_s: h.cpu_total_s,
                ..ServerReading::default()
            };
        }
        if let Some(p) = &self.server {
            match p.scrape().await {
                Ok(s) => {
                    r.cpu_s = select(&s, &self.names.cpu_seconds).or(r.cpu_s);
                    r.rss = select(&s, &self.names.resident_bytes).or(r.rss);
                }
                Err(e) => self.note("server metrics", e),
            }
        }
        if let Some(p) = &self.node {
            match p.scrape().await {
                Ok(s) => {
                    r.dirty = select(&s, NODE_DIRTY).or(r.dirty);
                    r.writeback = select(&s, NODE_WRITEBACK).or(r.writeback);
                    r.disk_written = select(&s, NODE_DISK_WRITTEN).or(r.disk_written);
                    r.disk_writes = select(&s, NODE_DISK_WRITES).or(r.disk_writes);
                    r.disk_write_s = select(&s, NODE_DISK_WRITE_S).or(r.disk_write_s);
                    r.disk_weighted_io_s =
                        select(&s, NODE_DISK_WEIGHTED_IO_S).or(r.disk_weighted_io_s);
                    r.iowait_s = select(&s, NODE_IOWAIT).or(r.iowait_s);
                    r.cpu_total_s = select(&s, NODE_CPU).or(r.cpu_total_s);
                }
                Err(e) => self.note("node exporter", e),
            }
        }
        if let Some(p) = &self.kms {
            match p.scrape().await {
                Ok(s) => {
                    r.kms_cpu_s = select(&s, run::keyservice::CPU_METRIC);
                    r.kms_rss = select(&s, run::keyservice::RSS_METRIC);
                }
                Err(e) => self.note("key service metrics", e),
            }
        }
        r
    }
}

/// Takes one sample now. `origin` is the run's `startAt` on the monotonic clock and
/// `origin_unix_ns` the same instant on the wall clock.
pub async fn sample(sources: &Sources, origin: Instant, origin_unix_ns: i64) -> Sample {
    let now = Instant::now();
    let offset_ns = if now >= origin {
        i64::try_from((now - origin).as_nanos()).unwrap_or(i64::MAX)
    } else {
        -i64::try_from((origin - now).as_nanos()).unwrap_or(i64::MAX)
    };
    let h = host::host_counters();
    let s = sources.read().await;
    Sample {
        unix_ns: origin_unix_ns.saturating_add(offset_ns),
        offset_ns,
        process_cpu_s: cpu_time::ProcessTime::try_now()
            .ok()
            .map(|t| t.as_duration().as_secs_f64()),
        process_rss_bytes: host::own_rss(),
        host_cpu_busy_s: h.cpu_busy_s,
        host_cpu_total_s: h.cpu_total_s,
        net_rx_bytes: h.net_rx,
        net_tx_bytes: h.net_tx,
        server_cpu_s: s.cpu_s,
        server_rss_bytes: s.rss,
        server_dirty_bytes: s.dirty,
        server_writeback_bytes: s.writeback,
        server_disk_written_bytes: s.disk_written,
        server_disk_writes: s.disk_writes,
        server_disk_write_s: s.disk_write_s,
        server_disk_weighted_io_s: s.disk_weighted_io_s,
        server_iowait_s: s.iowait_s,
        server_cpu_total_s: s.cpu_total_s,
        kms_cpu_s: s.kms_cpu_s,
        kms_rss_bytes: s.kms_rss,
    }
}

/// A running 1 Hz sampler.
pub struct Sampler {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Vec<Sample>>,
}

impl Sampler {
    /// Starts sampling now and then every second.
    pub fn start(sources: Sources, origin: Instant, origin_unix_ns: i64) -> Self {
        let (stop, mut rx) = watch::channel(false);
        let task = tokio::spawn(async move {
            let mut out = Vec::new();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => out.push(sample(&sources, origin, origin_unix_ns).await),
                    _ = rx.changed() => break,
                }
            }
            // A final sample closes the last interval.
            out.push(sample(&sources, origin, origin_unix_ns).await);
            out
        });
        Self { stop, task }
    }

    /// Stops and returns the samples.
    pub async fn finish(self) -> Vec<Sample> {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

/// Waits until the server host is quiet by `rule`, reading `sources` once per second.
pub async fn pause(sources: &Sources, rule: &PauseRule) -> PauseTaken {
    let t0 = Instant::now();
    let mut quiet_since: Option<Instant> = None;
    let mut prev: Option<(Instant, f64)> = None;
    let mut taken = PauseTaken::default();
    loop {
        let r = sources.read().await;
        let now = Instant::now();
        let dirty = match (r.dirty, r.writeback) {
            (Some(d), Some(w)) => Some(d + w),
            (d, w) => d.or(w),
        };
        let rate = match (prev, r.disk_written) {
            (Some((t, b)), Some(b2)) => {
                let dt = (now - t).as_secs_f64();
                (dt > 0.0).then(|| (b2 - b).max(0.0) / dt)
            }
            _ => None,
        };
        if let Some(b) = r.disk_written {
            prev = Some((now, b));
        }
        taken.last_dirty_bytes = dirty;
        taken.last_disk_write_per_s = rate;
        #[allow(
            clippy::cast_precision_loss,
            reason = "byte thresholds are far below 2^53"
        )]
        let ok = dirty.is_some_and(|d| d < rule.max_dirty.0 as f64)
            && rate.is_some_and(|x| x < rule.max_disk_write_per_s.0 as f64);
        if ok {
            let since = *quiet_since.get_or_insert(now);
            // Quiet at consecutive readings spanning `quiet_for`.
            if now - since >= rule.quiet_for.0 {
                taken.quiet = true;
                break;
            }
        } else {
            quiet_since = None;
        }
        // The reading's instant decides, not a later one.
        if now - t0 >= rule.max_wait.0 {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    taken.waited_s = t0.elapsed().as_secs_f64();
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_is_parsed_and_selected() {
        let text = r#"# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 100.5
node_cpu_seconds_total{cpu="0",mode="iowait"} 2
node_cpu_seconds_total{cpu="1",mode="iowait"} 3.5
node_memory_Dirty_bytes 4096
minio_node_process_cpu_total_seconds{server="127.0.0.1:9000"} 12.25 1700000000000
weird{a="x\"y",b="\\"} +Inf
"#;
        let s = parse_prometheus(text);
        assert_eq!(s.len(), 6);
        assert_eq!(select(&s, NODE_IOWAIT), Some(5.5));
        assert_eq!(select(&s, NODE_CPU), Some(106.0));
        assert_eq!(select(&s, NODE_DIRTY), Some(4096.0));
        assert_eq!(
            select(&s, "minio_node_process_cpu_total_seconds"),
            Some(12.25)
        );
        assert_eq!(s[5].labels[0], ("a".into(), "x\"y".into()));
        assert_eq!(select(&s, "absent"), None);
    }
}
