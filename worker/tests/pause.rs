//! The pause rule's waiting branch on this host (issue 18): a writer keeps the page cache
//! dirty, the real [`pause`] over this host's `/proc` waits `maxWait` and gives up, and the
//! run check it feeds (`pause_quiet`) fails; with the writer stopped and its file deleted,
//! the same sources go quiet.

use std::fs::File;
use std::io::{Seek as _, SeekFrom, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use campaign::units::{Dur, Size};
use run::runspec::{PauseRule, Telemetry};
use run::summary::{PauseTaken, pause_check};
use worker::sampler::{Sources, pause};

/// The writer's file: rewritten over and over, never synced, so its pages stay dirty.
const FILE_BYTES: usize = 256 << 20;
const CHUNK: usize = 8 << 20;
const MIB: f64 = 1_048_576.0;

/// A thread that keeps rewriting a 256 MiB file in a temporary directory (outside the
/// source tree) without syncing it. Stopped (or dropped, should the test fail), it ends
/// and its directory goes, and with the file its dirty pages.
struct Writer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
    dir: Option<tempfile::TempDir>,
}

impl Writer {
    fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("pqbench-pause-")
            .tempdir_in(std::env::temp_dir())
            .expect("temporary directory");
        let path = dir.path().join("dirty.bin");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || -> std::io::Result<()> {
            let mut f = File::create(&path)?;
            let buf = vec![0x5a_u8; CHUNK];
            while !flag.load(Ordering::Relaxed) {
                f.seek(SeekFrom::Start(0))?;
                for _ in 0..FILE_BYTES / CHUNK {
                    if flag.load(Ordering::Relaxed) {
                        return Ok(());
                    }
                    f.write_all(&buf)?;
                }
                // Rewriting cached pages costs no disk I/O; a pass every ~100 ms keeps
                // them dirty without taking a core.
                std::thread::sleep(Duration::from_millis(100));
            }
            Ok(())
        });
        Self {
            stop,
            thread: Some(thread),
            dir: Some(dir),
        }
    }

    fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    fn path(&self) -> String {
        self.dir
            .as_ref()
            .map_or_else(String::new, |d| d.path().display().to_string())
    }

    /// Stops the writer and deletes its file (the kernel drops its dirty pages).
    fn stop(&mut self) -> std::io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let r = self.thread.take().map_or(Ok(()), |t| {
            t.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the writer panicked")))
        });
        drop(self.dir.take());
        r
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Dirty + write-back memory of this host now, as `/proc/meminfo` tells it.
fn dirty_now() -> Option<f64> {
    let h = worker::host::host_counters();
    Some(h.dirty? + h.writeback.unwrap_or(0.0))
}

fn mib(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |b| format!("{:.1} MiB", b / MIB))
}

fn pause_on_this_host(rule: &PauseRule) -> (PauseTaken, Duration) {
    // The server "runs" on this host: the sources read this process and the host's /proc.
    let sources = Sources::new(&Telemetry {
        local_server_pid: Some(std::process::id()),
        ..Telemetry::default()
    })
    .expect("local sources");
    assert!(sources.sees_server_host());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let t0 = Instant::now();
    let taken = rt.block_on(pause(&sources, rule));
    (taken, t0.elapsed())
}

/// While a writer keeps ~256 MiB of the page cache dirty, a pause whose `maxDirty` is 1 MiB
/// waits its whole `maxWait` (3 s), gives up (`quiet: false`) with the writer's dirty bytes
/// as its last reading, and `pause_quiet` fails; once the writer is gone, a pause whose
/// thresholds are above what the host does goes quiet after `quietFor`.
#[test]
fn a_pause_gives_up_at_max_wait_while_a_writer_keeps_the_page_cache_dirty() {
    let mut writer = Writer::start();
    // The writer must have made the host dirty, or this test shows nothing: fail, saying
    // what was measured.
    let want = f64::from(128u32 << 20);
    let t0 = Instant::now();
    let mut seen = dirty_now();
    while seen.is_none_or(|d| d < want) && t0.elapsed() < Duration::from_secs(5) {
        assert!(writer.running(), "the writer stopped: {:?}", writer.stop());
        std::thread::sleep(Duration::from_millis(50));
        seen = dirty_now();
    }
    assert!(
        seen.is_some_and(|d| d >= want),
        "the writer did not make the page cache dirty: /proc/meminfo Dirty + Writeback is {} \
         after {:.1} s of rewriting a {} MiB file in {} (need at least {})",
        mib(seen),
        t0.elapsed().as_secs_f64(),
        FILE_BYTES >> 20,
        writer.path(),
        mib(Some(want))
    );

    let strict = PauseRule {
        max_dirty: Size(1 << 20),
        max_disk_write_per_s: Size(5 << 20),
        quiet_for: Dur(Duration::from_secs(1)),
        max_wait: Dur(Duration::from_secs(3)),
    };
    let (taken, wall) = pause_on_this_host(&strict);
    let during = dirty_now();
    writer.stop().expect("the writer's file writes");
    assert!(
        !taken.quiet,
        "the pause went quiet under the writer: {taken:?}"
    );
    assert!(
        taken.waited_s >= 3.0 && taken.waited_s < 6.0 && wall.as_secs_f64() >= 3.0,
        "a pause that gives up waits maxWait (3 s), no more than a reading longer: \
         {taken:?}, {wall:?}"
    );
    #[allow(clippy::cast_precision_loss, reason = "1 MiB")]
    let max_dirty = strict.max_dirty.0 as f64;
    assert!(
        taken.last_dirty_bytes.is_some_and(|d| d > max_dirty),
        "the last reading is the writer's dirty pages, above maxDirty 1 MiB: {}, {taken:?} \
         (meminfo right after: {})",
        mib(taken.last_dirty_bytes),
        mib(during)
    );
    let c = pause_check(Some(&strict), &[(0, &taken)]).expect("a pause was taken");
    eprintln!("{}: {}", c.name, c.detail);
    assert!(!c.passed, "{c:?}");
    assert!(
        c.detail.starts_with(&format!(
            "process 0: the pause gave up after {:.1} s (maxWait 3s)",
            taken.waited_s
        )) && c.detail.contains(&format!(
            "dirty + write-back {} (maxDirty 1MiB)",
            mib(taken.last_dirty_bytes)
        )),
        "{}",
        c.detail
    );

    // The writer and its file gone, the same sources go quiet after `quietFor` within
    // thresholds above anything this host does (16 GiB dirty of its 24 GiB of memory,
    // 16 GiB/s of disk writes).
    let generous = PauseRule {
        max_dirty: Size(16 << 30),
        max_disk_write_per_s: Size(16 << 30),
        quiet_for: Dur(Duration::from_secs(1)),
        max_wait: Dur(Duration::from_secs(5)),
    };
    let (taken, _) = pause_on_this_host(&generous);
    assert!(
        taken.quiet && taken.waited_s >= 1.0 && taken.waited_s < 5.0,
        "{taken:?}"
    );
    assert!(
        pause_check(Some(&generous), &[(0, &taken)]).is_some_and(|c| c.passed),
        "{taken:?}"
    );
}
