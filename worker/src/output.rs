//! Writes a process's files and their checksum manifest, and uploads them to a results
//! bucket when the spec asks for one.
//!
//! Layout: `<root>/<runId>/p<index>/` holding `records.parquet`, `samples.parquet`,
//! `process.json`, `spec.json`, `summary.json` and `SHA256SUMS` (`sha256sum -c` format,
//! covering every other file). Files are written to `*.tmp`, flushed to the disk (fsync)
//! and renamed, the directory flushed, and the checksum manifest written the same way last:
//! a directory with a `SHA256SUMS` is complete, after a crash or a power cut too. A write
//! that fails (a full disk) leaves no manifest, so the run is not counted complete.

use std::path::{Path, PathBuf};

use crate::engine::Executed;
use crate::parquet::TableFile as _;
use crate::{Error, Result};
use run::records::samples_table;
use run::runspec::Output;
use run::summary::{RunSummary, files, summarize};
use s3::S3Settings;

fn out_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Output {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}

/// The error of writing `path` (an I/O error, its kind kept: a full disk is
/// [`Error::NoSpace`]).
fn io_err(path: &Path, e: &std::io::Error) -> Error {
    Error::writing(path, e)
}

/// The error of writing 64 KiB into `dir` if its file system is full (the writer of run
/// files asks while a failed write's partial file still takes its space, since the
/// writer's own error may not say why; `pqbench run` asks after a failed attempt).
pub fn no_room(dir: &Path) -> Option<std::io::Error> {
    use std::io::Write as _;
    let probe = dir.join(".space-probe");
    let tried = std::fs::File::create(&probe).and_then(|mut f| {
        f.write_all(&[0u8; 64 * 1024])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&probe);
    tried.err().filter(crate::error::is_full)
}

/// What a failed write of `tmp` leaves: nothing (the partial file removed), and the error,
/// said as [`Error::NoSpace`] if the file system is full.
fn failed(tmp: &Path, e: Error) -> Error {
    let full = !matches!(e, Error::NoSpace { .. }) && tmp.parent().and_then(no_room).is_some();
    let _ = std::fs::remove_file(tmp);
    if full {
        Error::NoSpace {
            path: tmp.display().to_string(),
            detail: e.to_string(),
        }
    } else {
        e
    }
}

/// Writes `bytes` to `path` through `path.tmp`, flushed to the disk before the rename.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension("tmp");
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written {
        return Err(failed(&tmp, io_err(&tmp, &e)));
    }
    std::fs::rename(&tmp, path).map_err(|e| io_err(path, &e))
}

/// Flushes `tmp` (written by someone else) to the disk, then renames it to `path`.
fn settle(tmp: &Path, path: &Path) -> Result<()> {
    if let Err(e) = std::fs::File::open(tmp).and_then(|f| f.sync_all()) {
        return Err(failed(tmp, io_err(tmp, &e)));
    }
    std::fs::rename(tmp, path).map_err(|e| io_err(path, &e))
}

/// Flushes a directory's entries (the renames into it) to the disk.
fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_err(dir, &e))
}

pub use dataset::checksums::sha256_file;

/// Where a run's process directory is (or is staged, for S3 output).
pub fn process_dir(root: &Path, run_id: &str, index: u32) -> PathBuf {
    root.join(run_id).join(format!("p{index}"))
}

/// What was written.
#[derive(Debug)]
pub struct Written {
    /// The local process directory.
    pub dir: PathBuf,
    /// The summary written.
    pub summary: RunSummary,
    /// `s3://bucket/prefix…/` if uploaded.
    pub uploaded_to: Option<String>,
    /// The staging directory of an S3 upload (removed when dropped).
    pub staging: Option<tempfile::TempDir>,
    /// Where the process's request traces went (absent: not traced).
    pub traces: Option<crate::traces::TraceReport>,
}

/// Summarises, writes and (for S3 output) uploads one process's data.
pub async fn write(ex: &Executed, results: Option<&S3Settings>) -> Result<Written> {
    let spec = &ex.spec;
    let (root, staging) = match &spec.output {
        Output::Dir(d) => (d.clone(), None),
        Output::S3 { .. } => {
            let t = tempfile::tempdir().map_err(|e| out_err(Path::new("staging"), e))?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let dir = process_dir(&root, &spec.run_id, spec.processes.index);
    if dir.join(files::CHECKSUMS).exists() {
        return Err(out_err(
            &dir,
            "already holds a completed run; use a new runId or another output directory",
        ));
    }
    std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, &e))?;
    let summary = summarize(spec, std::slice::from_ref(&ex.data));
    let json = |v: &dyn erased::Json| v.to_json();
    let r = dir.join(files::RECORDS);
    // The records are on disk already (the spool): copied beside their final name (the
    // temporary directory may be another file system), then renamed into place. Copied
    // into a new file, not with `fs::copy`, which would give it the spool's private mode.
    let copy = |from: &Path, to: &Path| {
        std::io::copy(
            &mut std::fs::File::open(from)?,
            &mut std::fs::File::create(to)?,
        )
    };
    if let Err(e) = copy(&ex.records, &r.with_extension("tmp")) {
        let tmp = r.with_extension("tmp");
        return Err(failed(&tmp, io_err(&tmp, &e)));
    }
    settle(&r.with_extension("tmp"), &r)?;
    let s = dir.join(files::SAMPLES);
    if let Err(e) = samples_table(&ex.data.samples).write_parquet(&s.with_extension("tmp")) {
        return Err(failed(&s.with_extension("tmp"), e.into()));
    }
    settle(&s.with_extension("tmp"), &s)?;
    write_atomic(&dir.join(files::PROCESS), &json(&ex.data.info)?)?;
    write_atomic(&dir.join(files::SPEC), &json(spec)?)?;
    write_atomic(&dir.join(files::SUMMARY), &json(&summary)?)?;
    let mut sums = String::new();
    for name in files::DATA {
        sums.push_str(&format!("{}  {name}\n", sha256_file(&dir.join(name))?));
    }
    // The data files' names are on the disk before the manifest says they are complete.
    sync_dir(&dir)?;
    write_atomic(&dir.join(files::CHECKSUMS), sums.as_bytes())?;
    sync_dir(&dir)?;

    let mut uploaded_to = None;
    if let Output::S3 { bucket, prefix, .. } = &spec.output {
        let settings =
            results.ok_or_else(|| out_err(&dir, "S3 output needs the results store's settings"))?;
        let s3 = settings.client()?;
        let base = format!("{prefix}{}/p{}/", spec.run_id, spec.processes.index);
        // The checksum manifest goes last: its presence marks a complete upload.
        for name in files::DATA.into_iter().chain([files::CHECKSUMS]) {
            let p = dir.join(name);
            let body = aws_sdk_s3::primitives::ByteStream::from_path(&p)
                .await
                .map_err(|e| out_err(&p, e))?;
            s3.put_object()
                .bucket(bucket)
                .key(format!("{base}{name}"))
                .body(body)
                .send()
                .await
                .map_err(|e| {
                    Error::Store(s3::Error::s3(
                        "PutObject",
                        bucket,
                        &format!("{base}{name}"),
                        e,
                    ))
                })?;
        }
        uploaded_to = Some(format!("s3://{bucket}/{base}"));
    }
    Ok(Written {
        dir,
        summary,
        uploaded_to,
        staging,
        traces: ex.data.info.traces.clone(),
    })
}

mod erased {
    use crate::{Error, Result};

    /// Pretty JSON of any serializable value (object-safe).
    pub(super) trait Json {
        fn to_json(&self) -> Result<Vec<u8>>;
    }

    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> Result<Vec<u8>> {
            let mut v = serde_json::to_vec_pretty(self).map_err(|e| Error::Output {
                path: "(a run file)".into(),
                detail: format!("serializing: {e}"),
            })?;
            v.push(b'\n');
            Ok(v)
        }
    }
}
