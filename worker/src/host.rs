//! What the host is and what it is doing, read from Linux's `/proc` and `/sys` (study
//! section IV-A: "A client sampler records the CPU time and resident memory of the worker
//! processes and the host's CPU and network counters once per second"; section IV-C: cores
//! available and cores used for the saturation check).
//!
//! Every reader returns `None` where the file does not exist (another OS, a restricted
//! container), so a missing counter is an empty field, never a wrong number. Parsers are
//! pure functions over the file text and are unit-tested on captured text.

use std::path::{Path, PathBuf};

pub use run::summary::HostInfo;

/// Linux reports `/proc` CPU times in USER_HZ ticks, which is 100 on every Linux ABI.
const USER_HZ: f64 = 100.0;

fn read(p: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

/// Flags worth recording: they decide which code paths AWS-LC and RustCrypto take.
const FLAGS: &[&str] = &[
    "aes",
    "pclmulqdq",
    "avx",
    "avx2",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512ifma",
    "vaes",
    "vpclmulqdq",
    "sha_ni",
    "bmi2",
    "adx",
    "sha3",
    "sha2",
    "pmull",
    "asimd",
    "sve",
    "sve2",
];

/// Reads the host description and the CPU budget.
pub fn host_info() -> HostInfo {
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let (model, flags) = parse_cpuinfo(&cpuinfo);
    let host_cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let affinity = read("/proc/self/status").and_then(|s| parse_affinity(&s));
    let quota = cgroup_quota();
    let host_cpus = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
        .max(host_cpus);
    let mut avail = cores(affinity.unwrap_or(host_cpus));
    if let Some(q) = quota {
        avail = avail.min(q);
    }
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_owned())
            .unwrap_or_default(),
        cpu_model: model,
        cpu_flags: flags,
        kernel: read("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_default(),
        arch: std::env::consts::ARCH.to_owned(),
        host_cpus,
        affinity_cpus: affinity,
        cgroup_quota_cores: quota,
        cores_available: avail,
        cpu_list: read("/proc/self/status").and_then(|s| crate::affinity::cpu_list_in(&s)),
        memory_bytes: read("/proc/meminfo")
            .and_then(|s| meminfo(&s, "MemTotal"))
            .map(|b| {
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "memory sizes are far below 2^53"
                )]
                let b = b as u64;
                b
            }),
    }
}

#[allow(clippy::cast_precision_loss, reason = "CPU counts are small")]
fn cores(n: usize) -> f64 {
    n as f64
}

/// Model name and the recorded flags from `/proc/cpuinfo` text.
pub fn parse_cpuinfo(text: &str) -> (String, Vec<String>) {
    let field = |names: &[&str]| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            names.contains(&k.trim()).then(|| v.trim().to_owned())
        })
    };
    let model = field(&["model name", "Model", "cpu model"]).unwrap_or_default();
    let all = field(&["flags", "Features"]).unwrap_or_default();
    let flags = all
        .split_whitespace()
        .filter(|f| FLAGS.contains(f))
        .map(str::to_owned)
        .collect();
    (model, flags)
}

/// Counts the CPUs in `Cpus_allowed_list:` of `/proc/self/status` (`0-3,8,10-11` → 7).
pub fn parse_affinity(status: &str) -> Option<usize> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// Parses cgroup v2 `cpu.max` (`max 100000` → None, `150000 100000` → 1.5).
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next()?.parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// The CPU quota of this process's cgroup in cores, the tightest along the path to the
/// root (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`).
fn cgroup_quota() -> Option<f64> {
    let cg = read("/proc/self/cgroup")?;
    let mut best: Option<f64> = None;
    let mut consider = |q: Option<f64>| {
        if let Some(q) = q {
            best = Some(best.map_or(q, |b| b.min(q)));
        }
    };
    for line in cg.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(ctrl), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let v2 = id == "0" && ctrl.is_empty();
        let v1 = ctrl.split(',').any(|c| c == "cpu");
        if !(v2 || v1) {
            continue;
        }
        let root = if v2 {
            PathBuf::from("/sys/fs/cgroup")
        } else {
            PathBuf::from("/sys/fs/cgroup/cpu")
        };
        let mut dir = root.join(path.trim_start_matches('/'));
        loop {
            if v2 {
                consider(read(dir.join("cpu.max")).and_then(|t| parse_cpu_max(&t)));
            } else {
                let q =
                    read(dir.join("cpu.cfs_quota_us")).and_then(|t| t.trim().parse::<f64>().ok());
                let p =
                    read(dir.join("cpu.cfs_period_us")).and_then(|t| t.trim().parse::<f64>().ok());
                if let (Some(q), Some(p)) = (q, p)
                    && q > 0.0
                    && p > 0.0
                {
                    consider(Some(q / p));
                }
            }
            if dir == root || !dir.pop() {
                break;
            }
        }
    }
    best
}

/// A field of `/proc/meminfo` in bytes.
pub fn meminfo(text: &str, field: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        let kb: f64 = rest.split_whitespace().next()?.parse().ok()?;
        Some(kb * 1024.0)
    })
}

/// CPU time from the aggregate `cpu` line of `/proc/stat`: (busy, iowait, total) seconds.
/// Busy is everything but idle and I/O wait.
pub fn parse_proc_stat(text: &str) -> Option<(f64, f64, f64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    if v.len() < 5 {
        return None;
    }
    let total: f64 = v.iter().sum();
    let idle = v[3];
    let iowait = v[4];
    Some((
        (total - idle - iowait) / USER_HZ,
        iowait / USER_HZ,
        total / USER_HZ,
    ))
}

/// Bytes received and sent over all interfaces from `/proc/net/dev`.
pub fn parse_net_dev(text: &str) -> Option<(f64, f64)> {
    let mut rx = 0.0;
    let mut tx = 0.0;
    let mut any = false;
    for l in text.lines().skip(2) {
        let Some((_, rest)) = l.split_once(':') else {
            continue;
        };
        let v: Vec<f64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect();
        if v.len() >= 9 {
            rx += v[0];
            tx += v[8];
            any = true;
        }
    }
    any.then_some((rx, tx))
}

/// Write counters of the whole block devices, summed, from `/proc/diskstats` (study IV-A:
/// the disk's share of a cell's ceiling; the kernel's `Documentation/admin-guide/iostats.rst`
/// numbers the fields from 1, so its field 10 is `f[9]` here).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DiskCounters {
    /// Bytes written (field 7, sectors of 512 bytes).
    pub written_bytes: f64,
    /// Writes completed (field 5).
    pub writes: f64,
    /// Seconds spent writing, summed over the writes (field 8): its rate over the writes'
    /// rate is the mean write latency.
    pub write_s: f64,
    /// Weighted seconds doing I/O (field 11): its rate is the mean queue depth.
    pub weighted_io_s: f64,
}

/// The write counters of `devices` (the entries of `/sys/block`, minus loop, RAM, zram,
/// device-mapper and MD devices, which would count the same writes twice or not at all)
/// in `/proc/diskstats` text; `None` when none of them is there.
pub fn parse_diskstats(text: &str, devices: &[String]) -> Option<DiskCounters> {
    let mut sum = DiskCounters::default();
    let mut any = false;
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 14 || !devices.iter().any(|d| d == f[2]) {
            continue;
        }
        let n = |i: usize| f[i].parse::<f64>().unwrap_or(0.0);
        sum.written_bytes += n(9) * 512.0;
        sum.writes += n(7);
        sum.write_s += n(10) / 1000.0;
        sum.weighted_io_s += n(13) / 1000.0;
        any = true;
    }
    any.then_some(sum)
}

fn block_devices() -> Vec<String> {
    std::fs::read_dir("/sys/block")
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| {
                    !["loop", "ram", "zram", "dm-", "md"]
                        .iter()
                        .any(|p| n.starts_with(p))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// CPU seconds (user + system) of process `pid` from `/proc/<pid>/stat`.
pub fn parse_pid_stat(text: &str) -> Option<f64> {
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    let ut: f64 = f.get(11)?.parse().ok()?;
    let st: f64 = f.get(12)?.parse().ok()?;
    Some((ut + st) / USER_HZ)
}

/// Resident memory in bytes from `/proc/<pid>/status`.
pub fn parse_vm_rss(text: &str) -> Option<f64> {
    meminfo(text, "VmRSS")
}

/// Host-level counters at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostCounters {
    /// Busy CPU seconds (all CPUs).
    pub cpu_busy_s: Option<f64>,
    /// I/O wait CPU seconds.
    pub cpu_iowait_s: Option<f64>,
    /// All CPU seconds.
    pub cpu_total_s: Option<f64>,
    /// Network bytes received.
    pub net_rx: Option<f64>,
    /// Network bytes sent.
    pub net_tx: Option<f64>,
    /// Dirty memory bytes.
    pub dirty: Option<f64>,
    /// Write-back memory bytes.
    pub writeback: Option<f64>,
    /// Disk write counters.
    pub disk: Option<DiskCounters>,
}

/// Reads this host's counters.
pub fn host_counters() -> HostCounters {
    let stat = read("/proc/stat").and_then(|t| parse_proc_stat(&t));
    let net = read("/proc/net/dev").and_then(|t| parse_net_dev(&t));
    let mem = read("/proc/meminfo");
    HostCounters {
        cpu_busy_s: stat.map(|s| s.0),
        cpu_iowait_s: stat.map(|s| s.1),
        cpu_total_s: stat.map(|s| s.2),
        net_rx: net.map(|n| n.0),
        net_tx: net.map(|n| n.1),
        dirty: mem.as_deref().and_then(|m| meminfo(m, "Dirty")),
        writeback: mem.as_deref().and_then(|m| meminfo(m, "Writeback")),
        disk: read("/proc/diskstats").and_then(|t| parse_diskstats(&t, &block_devices())),
    }
}

/// CPU seconds and resident bytes of process `pid` (`None` where unreadable).
pub fn process_counters(pid: u32) -> (Option<f64>, Option<f64>) {
    (
        read(format!("/proc/{pid}/stat")).and_then(|t| parse_pid_stat(&t)),
        read(format!("/proc/{pid}/status")).and_then(|t| parse_vm_rss(&t)),
    )
}

/// Resident memory of this process in bytes.
pub fn own_rss() -> Option<f64> {
    read("/proc/self/status").and_then(|t| parse_vm_rss(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers_read_captured_text() {
        let (m, f) = parse_cpuinfo(
            "processor\t: 0\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu aes avx2 sha_ni avx512f xyz\n",
        );
        assert_eq!(m, "AMD EPYC 9R14");
        assert_eq!(f, ["aes", "avx2", "sha_ni", "avx512f"]);
        assert_eq!(
            parse_affinity("Name: x\nCpus_allowed_list:\t0-3,8,10-11\n"),
            Some(7)
        );
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("150000 100000\n"), Some(1.5));
        let stat = "cpu  100 0 50 800 25 5 5 15 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        assert_eq!(parse_proc_stat(stat), Some((1.75, 0.25, 10.0)));
        let net = "Inter-|   Receive\n face |bytes\n    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n  eth0: 50 1 0 0 0 0 0 0 70 1 0 0 0 0 0 0\n";
        assert_eq!(parse_net_dev(net), Some((150.0, 170.0)));
        // The layout of Linux 5.5 and later: fields 15-20 (discards, flushes) follow.
        let disk = " 254       0 vda 10 0 20 5 30 0 40 1500 2 900 2100 0 0 0 0 4 7\n 254       1 vda1 10 0 20 5 30 0 40 1500 0 900 2100 0 0 0 0 0 0\n   7       0 loop0 0 0 0 0\n";
        assert_eq!(
            parse_diskstats(disk, &["vda".into()]),
            Some(DiskCounters {
                written_bytes: 40.0 * 512.0,
                writes: 30.0,
                write_s: 1.5,
                weighted_io_s: 2.1,
            })
        );
        assert_eq!(parse_diskstats(disk, &["loop0".into()]), None);
        let pid = "1234 (my (odd) proc) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0";
        assert_eq!(parse_pid_stat(pid), Some(3.0));
        assert_eq!(parse_vm_rss("VmRSS:\t  2048 kB\n"), Some(2048.0 * 1024.0));
        assert_eq!(
            meminfo("Dirty:   4 kB\nWriteback: 8 kB\n", "Writeback"),
            Some(8192.0)
        );
    }

    #[test]
    fn this_host_is_readable() {
        let h = host_info();
        assert!(h.cores_available > 0.0 && h.cores_available <= cores(h.host_cpus));
        if cfg!(target_os = "linux") {
            assert!(!h.kernel.is_empty());
            let c = host_counters();
            assert!(c.cpu_total_s.is_some() && c.net_rx.is_some() && c.dirty.is_some());
            let (cpu, rss) = process_counters(std::process::id());
            assert!(cpu.is_some() && rss.is_some_and(|r| r > 0.0));
        }
    }
}
