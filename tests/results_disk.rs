//! The results directory on a bad disk under `pqbench run` (issue 22).
//!
//! **Full.** The campaign writes to a small tmpfs of its own; once its first run is
//! complete, the test fills what is left of it but half the size of that run's records, so
//! that the next run starts, measures, and runs out of space while it writes its files.
//! Then:
//!
//! - `pqbench run` stops with an error that names the full file system and says how to
//!   go on (free space, run the same command again), instead of spending its retries;
//! - the complete run is untouched (`pqbench validate`), and no other run is counted
//!   complete: none has a checksum manifest, whatever the writer had half-written;
//! - with the space freed, the same command resumes and completes every planned run,
//!   each exactly once.
//!
//! **Slow.** The campaign writes through a FUSE file system that delays every write and
//! every fsync (`tests/support/slowfs.py`, run by the oracle's Python, `PQBENCH_PYTHON`).
//! While it runs, the test reads every checksum manifest as soon as it appears and checks
//! each file it lists against it: a manifest is never visible before the files it vouches
//! for are whole. The campaign completes every run, and `pqbench validate` passes.
//!
//! Mounting needs root (CAP_SYS_ADMIN) and `/dev/fuse`, which CI has. Without them the tests
//! fail and say so, unless `PQBENCH_DISK_SKIP` holds the reason they cannot run here.

mod common;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ok, run_complete, s};

const CAMPAIGN: &str = "apiVersion: pqbench.io/v1alpha1
kind: BenchmarkCampaign
metadata: {name: disk}
spec:
  modes: [x25519, ml-kem-768]
  baseline: x25519
  cells:
    - {operation: [get], objectSize: [16KiB], concurrency: [2]}
  repetitions: 2
  warmup: 1s
  measured: 2s
  seed: 9
  fixtures: 4
  pause: {enabled: false}
  analysis: {bootstrapResamples: 1000}
";

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Self, String> {
        std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).trim().to_owned());
        }
        Ok(Self(at.to_owned()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Fills the file system `filler` is on until `room` bytes are left.
fn fill(filler: &Path, room: u64) {
    let mut f = std::fs::File::create(filler).expect("filler");
    let chunk = vec![0xa5u8; 64 * 1024];
    loop {
        match f.write_all(&chunk) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::StorageFull => break,
            Err(e) => panic!("filling: {e}"),
        }
    }
    // Small writes until not one byte fits, then `room` given back (tmpfs frees the pages
    // of a truncated file).
    while f.write_all(&[0]).is_ok() {}
    let _ = f.flush();
    let len = f.metadata().expect("filler size").len();
    f.set_len(len.saturating_sub(room)).expect("truncate");
}

/// Every file named SHA256SUMS under `dir`.
fn manifests(dir: &Path) -> BTreeSet<PathBuf> {
    if !dir.exists() {
        return BTreeSet::new();
    }
    common::files_under(dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "SHA256SUMS"))
        .collect()
}

/// A mount this test could not make: fails the test with what it needs, or skips it
/// loudly when `PQBENCH_DISK_SKIP` gives the reason.
fn cannot_mount(what: &str, e: &str) {
    if let Ok(reason) = std::env::var("PQBENCH_DISK_SKIP") {
        eprintln!("\n*** SKIPPED: the {what} test did not run: {reason} ({e}) ***\n");
        return;
    }
    panic!(
        "cannot mount the {what} for the results directory ({e}): the test needs root and \
         /dev/fuse (CI has both); set PQBENCH_DISK_SKIP to the reason to skip it"
    );
}

/// A campaign directory and `pqbench run` on it, its key store beside it.
struct Campaign {
    file: PathBuf,
    out: PathBuf,
    state: PathBuf,
}

impl Campaign {
    fn new(tmp: &Path, out: &Path) -> Self {
        let file = tmp.join("disk.yaml");
        std::fs::write(&file, CAMPAIGN).expect("campaign");
        Self {
            file,
            out: out.to_owned(),
            state: tmp.join("state"),
        }
    }

    fn runs(&self) -> PathBuf {
        self.out.join("disk/runs")
    }

    /// `pqbench run FILE --out OUT`, its stderr to `log`.
    fn spawn(&self, log: &Path) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_pqbench"))
            .args(["run", s(&self.file), "--out", s(&self.out)])
            .env("XDG_STATE_HOME", &self.state)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("log"))
            .spawn()
            .expect("pqbench run starts")
    }

    /// Every planned run is in `runs/` once, complete, and `pqbench validate` passes.
    fn check_all_complete(&self) {
        let plan: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(self.out.join("disk/plan.json")).expect("plan"),
        )
        .expect("plan.json");
        let planned: BTreeSet<String> = plan["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|r| r["runId"].as_str().expect("runId").to_owned())
            .collect();
        let runs = self.runs();
        let present: BTreeSet<String> = std::fs::read_dir(&runs)
            .expect("runs/")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(present, planned, "every planned run, once");
        for r in &planned {
            assert!(run_complete(&runs.join(r)), "{r} complete");
        }
        let validate = Command::new(env!("CARGO_BIN_EXE_pqbench"))
            .args(["validate", s(&runs)])
            .output()
            .expect("pqbench validate");
        ok(&validate, "pqbench validate");
    }
}

#[test]
fn a_full_results_disk_stops_the_campaign_clearly_and_loses_nothing() {
    let tmp = tempfile::tempdir().expect("dir");
    let out = tmp.path().join("out");
    let _mount = match Tmpfs::mount(&out, "32m") {
        Ok(m) => m,
        Err(e) => return cannot_mount("tmpfs", &e),
    };
    let c = Campaign::new(tmp.path(), &out);
    let runs = c.runs();
    let log = tmp.path().join("first.log");
    let mut first = c.spawn(&log);
    let filler = out.join("filler");
    let started = Instant::now();
    let mut filled: Option<(Instant, PathBuf)> = None;
    let status = loop {
        if let Some(st) = first.try_wait().expect("wait") {
            break st;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "pqbench run went on with a full disk: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        if filled.is_none()
            && let Some(r) = std::fs::read_dir(&runs)
                .ok()
                .into_iter()
                .flatten()
                .filter_map(|e| Some(e.ok()?.path()))
                .find(|r| run_complete(r))
        {
            // Room for the next run's small files (its ready marker, the start instant)
            // but not for its records, so that the disk fills while it writes them.
            let records = std::fs::metadata(r.join("p0/records.parquet")).map_or(0, |m| m.len());
            fill(&filler, records / 2);
            filled = Some((Instant::now(), r));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    eprintln!("--- pqbench run, disk filled ---\n{text}");
    let (at, done) = filled.expect("a run completed before the disk was filled");
    assert!(!status.success(), "pqbench run failed: {status}");
    assert!(
        text.contains("No space left on device") && text.contains("free space"),
        "the error names the full disk and what to do: {text}"
    );
    eprintln!(
        "stopped {:.1} s after the disk was full",
        at.elapsed().as_secs_f64()
    );
    // Only the run complete before the disk filled is complete now.
    let sums = manifests(&runs);
    assert_eq!(
        sums.iter()
            .map(|p| p.parent().and_then(Path::parent).expect("run dir"))
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([done.as_path()]),
        "no run but the one complete before is counted complete: {sums:?}"
    );
    let validate = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .args(["validate", s(&done)])
        .output()
        .expect("pqbench validate");
    ok(&validate, "the run complete before the disk filled");

    // Space freed: the same command resumes and completes the campaign.
    std::fs::remove_file(&filler).expect("free the space");
    let log2 = tmp.path().join("second.log");
    let st = c.spawn(&log2).wait().expect("resumed run");
    let text2 = std::fs::read_to_string(&log2).unwrap_or_default();
    assert!(st.success(), "the resumed campaign: {text2}");
    c.check_all_complete();
}

/// The slow disk: `tests/support/slowfs.py` serving `root` at `mount`; unmounted when
/// dropped.
struct SlowFs {
    mount: PathBuf,
    child: std::process::Child,
}

impl SlowFs {
    fn mount(
        root: &Path,
        mount: &Path,
        write_delay: &str,
        fsync_delay: &str,
    ) -> Result<Self, String> {
        std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(mount).map_err(|e| e.to_string())?;
        let python = std::env::var("PQBENCH_PYTHON").unwrap_or_else(|_| "python3".into());
        let log = root.with_extension("log");
        let mut child = Command::new(&python)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/slowfs.py"
            ))
            .args([s(root), s(mount), write_delay, fsync_delay])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).map_err(|e| e.to_string())?)
            .spawn()
            .map_err(|e| format!("{python}: {e}"))?;
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
            if mounts
                .lines()
                .any(|l| l.split(' ').nth(1) == Some(s(mount)))
            {
                return Ok(Self {
                    mount: mount.to_owned(),
                    child,
                });
            }
            if child.try_wait().ok().flatten().is_some() || Instant::now() > until {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "slowfs.py did not mount ({python}, `make python` installs mfusepy): {}",
                    std::fs::read_to_string(&log).unwrap_or_default().trim()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SlowFs {
    fn drop(&mut self) {
        let _ = Command::new("fusermount3")
            .arg("-u")
            .arg(&self.mount)
            .status();
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(500));
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Checks every file a manifest lists against it; the number of files.
fn verify(manifest: &Path) -> usize {
    use sha2::{Digest as _, Sha256};
    let text = std::fs::read_to_string(manifest).expect("a manifest that exists is whole");
    let dir = manifest.parent().expect("process dir");
    let mut n = 0;
    for line in text.lines() {
        let (hash, name) = line.split_once("  ").expect("`hash  name` lines");
        let bytes = std::fs::read(dir.join(name)).unwrap_or_else(|e| {
            panic!(
                "{} lists {name}, which cannot be read: {e}",
                manifest.display()
            )
        });
        assert_eq!(
            hex::encode(Sha256::digest(&bytes)),
            hash,
            "{name} is whole when {} appears",
            manifest.display()
        );
        n += 1;
    }
    n
}

#[test]
fn on_a_slow_results_disk_a_manifest_never_shows_before_its_files() {
    let tmp = tempfile::tempdir().expect("dir");
    let out = tmp.path().join("out");
    // 20 ms before every write and 300 ms before every fsync.
    let _slow = match SlowFs::mount(&tmp.path().join("backing"), &out, "0.02", "0.3") {
        Ok(m) => m,
        Err(e) => return cannot_mount("slow FUSE file system", &e),
    };
    let c = Campaign::new(tmp.path(), &out);
    let log = tmp.path().join("run.log");
    let started = Instant::now();
    let mut run = c.spawn(&log);
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut files = 0;
    let status = loop {
        let done = run.try_wait().expect("wait");
        for m in manifests(&c.runs()) {
            if !seen.contains(&m) {
                files += verify(&m);
                seen.insert(m);
            }
        }
        if let Some(st) = done {
            break st;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "pqbench run did not finish on the slow disk: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(status.success(), "pqbench run on the slow disk: {text}");
    assert!(!text.contains("given up"), "{text}");
    eprintln!(
        "slow disk: {} manifests checked as they appeared ({files} files), campaign done in {:.1} s",
        seen.len(),
        started.elapsed().as_secs_f64()
    );
    c.check_all_complete();
}
