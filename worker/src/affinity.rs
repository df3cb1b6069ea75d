//! CPU placement of this process (`sched_setaffinity(2)`, through `nix`): a run spec's
//! `cpus` confines the worker process, and `pqbench serve-s3 --cpus` the embedded server,
//! before either starts its threads (issue 18; study section IV-A, client and server on
//! separate machines).
//!
//! Every thread of the process is moved (each task in `/proc/self/task`), so that a thread
//! started before the call does not keep running elsewhere; threads started later inherit
//! the mask.

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// The CPUs this process may run on now, ascending.
pub fn allowed() -> Result<Vec<u32>, String> {
    let set = sched_getaffinity(Pid::from_raw(0))
        .map_err(|e| format!("cannot read this process's CPU affinity: {e}"))?;
    Ok((0..CpuSet::count())
        .filter(|&i| set.is_set(i).unwrap_or(false))
        .filter_map(|i| u32::try_from(i).ok())
        .collect())
}

/// Confines every thread of this process to `cpus` (a CPU list as `taskset -c` takes it).
/// Fails, naming the CPUs, when the list is malformed or this process may not use them.
pub fn confine(cpus: &str) -> Result<(), String> {
    let list = campaign::placement::parse_cpu_list(cpus)?;
    let mut set = CpuSet::new();
    for &c in &list {
        set.set(c as usize)
            .map_err(|e| format!("CPU {c} is beyond what this system supports: {e}"))?;
    }
    let tasks: Vec<i32> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    // Pid 0 is the calling thread: covered even if /proc is not mounted.
    for tid in std::iter::once(0).chain(tasks) {
        match sched_setaffinity(Pid::from_raw(tid), &set) {
            Ok(()) => {}
            // A thread that ended since the listing.
            Err(nix::errno::Errno::ESRCH) if tid != 0 => {}
            Err(e) => {
                return Err(format!(
                    "cannot confine this process to CPU {cpus}: {e} (it may use {})",
                    allowed().map_or_else(|e| e, |a| campaign::placement::format_cpu_list(&a))
                ));
            }
        }
    }
    Ok(())
}

/// The `Cpus_allowed_list` of a process (`/proc/<pid>/status`), `None` if unreadable.
pub fn cpu_list_of(pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    cpu_list_in(&s)
}

/// The `Cpus_allowed_list:` value of `/proc/<pid>/status` text.
pub fn cpu_list_in(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// A real child process confines itself and the kernel reports the set: run in a
    /// process of its own so the test harness's threads keep their CPUs.
    #[test]
    fn confining_shows_in_proc_status() {
        let all = allowed().unwrap_or_default();
        assert!(!all.is_empty(), "no CPU allowed?");
        let exe = std::env::current_exe().unwrap_or_default();
        if std::env::var_os("PQBENCH_AFFINITY_CHILD").is_some() {
            let last = all[all.len() - 1];
            confine(&last.to_string()).unwrap_or_else(|e| panic!("{e}"));
            let mine = cpu_list_of(std::process::id());
            assert_eq!(mine, Some(last.to_string()));
            // Threads started afterwards inherit it.
            let t = std::thread::spawn(|| allowed().unwrap_or_default());
            assert_eq!(t.join().unwrap_or_default(), vec![last]);
            let e = confine("100000").unwrap_err();
            assert!(e.contains("CPU 100000"), "{e}");
            return;
        }
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "affinity::tests::confining_shows_in_proc_status",
                "--nocapture",
            ])
            .env("PQBENCH_AFFINITY_CHILD", "1")
            .output()
            .unwrap_or_else(|e| panic!("child: {e}"));
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    }

    #[test]
    fn status_text_gives_the_list() {
        let s = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        assert_eq!(cpu_list_in(s).as_deref(), Some("0-1"));
        assert_eq!(cpu_list_in("Name: x\n"), None);
    }
}
