//! A run's records on their way to disk while the run goes (issue 20: long cells, memory
//! flat). Workers hand each record, and each object a PUT wrote, to one writer thread; it
//! folds the record into the run's [`Digest`] (what the summary needs), buffers up to
//! [`GROUP_ROWS`] records, and writes them as one row group of the records file, sorted by
//! start within the group. The keys written go to a second file, read back in slices at
//! cleanup. Both files live in the temporary directory until the run's files are written
//! ([`crate::output::write`] moves the records file into the process directory).
//!
//! Memory is then the writer's buffer, the digest (bounded by the span of latencies, not
//! their number) and the channel's backlog, whatever the length of the window.

use std::io::{BufRead as _, BufWriter, Write};
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;

use run::digest::Digest;
use run::records::{RECORD_SCHEMA, Record, RunKeys, records_table};
use run::runspec::RunSpec;
use tempfile::TempPath;

use crate::parquet::GroupWriter;
use crate::{Error, Result};

/// Records per row group. A group is built as a table before it is written, a transient of
/// roughly 600 bytes per record: 16,384 keep it near 10 MiB (65,536 made 40-50 MiB spikes in
/// the resident memory of a 10-minute run), and a 30-minute window at 2,000 requests/s is
/// still only about 220 groups.
pub const GROUP_ROWS: usize = 16_384;

#[allow(
    clippy::large_enum_variant,
    reason = "records are nearly every message; boxing would allocate once per request"
)]
enum Msg {
    Record(Record),
    Written(String, String),
}

/// Hands records and written objects to the writer thread (one per worker; the files are
/// finished when every sender is gone and [`Spool::finish`] is called).
#[derive(Clone)]
pub struct SpoolSender(mpsc::Sender<Msg>);

impl SpoolSender {
    /// One request's record.
    pub fn record(&self, r: Record) {
        // The writer only stops on an I/O error, which `finish` reports.
        let _ = self.0.send(Msg::Record(r));
    }

    /// An object (key, version) the run wrote, to delete at cleanup.
    pub fn written(&self, key: String, version: String) {
        let _ = self.0.send(Msg::Written(key, version));
    }
}

/// The writer thread.
pub struct Spool {
    thread: JoinHandle<Result<Spooled>>,
}

/// What the spool wrote.
#[derive(Debug)]
pub struct Spooled {
    /// The digest of every record.
    pub digest: Digest,
    /// The records file (Parquet, [`RECORD_SCHEMA`]); removed when dropped unless moved.
    pub records: TempPath,
    /// Records written.
    pub rows: u64,
    /// The objects written, one `key\tversion` per line.
    pub written: TempPath,
    /// How many.
    pub written_count: u64,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Output {
        path: path.display().to_string(),
        detail: e.to_string(),
    }
}

impl Spool {
    /// Starts the writer for one process of `spec`'s run.
    pub fn start(spec: &RunSpec) -> Result<(Self, SpoolSender)> {
        let tmp = |what: &str| {
            tempfile::Builder::new()
                .prefix(&format!("pqbench-{}-{what}-", spec.run_id))
                .tempfile()
                .map(tempfile::NamedTempFile::into_temp_path)
                .map_err(|e| io_err(&std::env::temp_dir(), e))
        };
        let records = tmp("records")?;
        let written = tmp("written")?;
        let keys = RunKeys {
            run_id: spec.run_id.clone(),
            campaign: spec.campaign.clone(),
            process: spec.processes.index,
            operation: spec.cell.operation.as_str().into(),
            mode: spec.cell.mode.name().into(),
            backend: spec.cell.backend.name().into(),
            object_size: spec.cell.object_size.0,
        };
        let digest = Digest::new(spec);
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("pqbench-spool".into())
            .spawn(move || write_all(&rx, keys, digest, records, written))
            .map_err(|e| io_err(&std::env::temp_dir(), e))?;
        Ok((Self { thread }, SpoolSender(tx)))
    }

    /// Waits for every sender to be dropped, then finishes the files.
    pub fn finish(self) -> Result<Spooled> {
        self.thread.join().map_err(|_| Error::Output {
            path: "(records spool)".into(),
            detail: "the writer thread panicked".into(),
        })?
    }
}

fn write_all(
    rx: &mpsc::Receiver<Msg>,
    keys: RunKeys,
    mut digest: Digest,
    records: TempPath,
    written: TempPath,
) -> Result<Spooled> {
    let mut out = GroupWriter::create(&records, RECORD_SCHEMA)?;
    let file = std::fs::File::create(&written).map_err(|e| io_err(&written, e))?;
    let mut keys_out = BufWriter::new(file);
    let mut buf: Vec<Record> = Vec::with_capacity(GROUP_ROWS);
    let mut written_count = 0;
    let flush = |buf: &mut Vec<Record>, out: &mut GroupWriter| -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        buf.sort_by_key(|r| (r.offset, r.worker, r.seq));
        out.write(&records_table(&keys, buf))?;
        buf.clear();
        Ok(())
    };
    for msg in rx {
        match msg {
            Msg::Record(r) => {
                digest.add(&r);
                buf.push(r);
                if buf.len() >= GROUP_ROWS {
                    flush(&mut buf, &mut out)?;
                }
            }
            Msg::Written(k, v) => {
                writeln!(keys_out, "{k}\t{v}").map_err(|e| io_err(&written, e))?;
                written_count += 1;
            }
        }
    }
    flush(&mut buf, &mut out)?;
    let rows = out.rows();
    out.close()?;
    keys_out.flush().map_err(|e| io_err(&written, e))?;
    Ok(Spooled {
        digest,
        records,
        rows,
        written,
        written_count,
    })
}

/// The objects written, read back a slice at a time (cleanup deletes each slice before
/// reading the next, so the keys never sit in memory whole).
pub struct WrittenSlices {
    lines: std::io::Lines<std::io::BufReader<std::fs::File>>,
    path: std::path::PathBuf,
    slice: usize,
}

impl WrittenSlices {
    /// Opens the file of written objects, to read `slice` of them at a time.
    pub fn open(path: &Path, slice: usize) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
        Ok(Self {
            lines: std::io::BufReader::new(file).lines(),
            path: path.to_path_buf(),
            slice: slice.max(1),
        })
    }

    /// The next slice of (key, version) pairs; `None` at the end.
    pub fn next_slice(&mut self) -> Result<Option<Vec<(String, String)>>> {
        let mut batch = Vec::new();
        while batch.len() < self.slice {
            let Some(line) = self.lines.next() else { break };
            let line = line.map_err(|e| io_err(&self.path, e))?;
            if let Some((k, v)) = line.split_once('\t') {
                batch.push((k.to_owned(), v.to_owned()));
            }
        }
        Ok((!batch.is_empty()).then_some(batch))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::time::Duration;

    use run::records::{Outcome, RequestPhase, records_from_table};
    use run::table::Table;

    use super::*;
    use crate::parquet::TableFile;

    const SPEC: &str = "
runId: r0001
cell: {mode: x25519, operation: put, objectSize: 1KiB, concurrency: 2}
s3: {endpoint: 'http://127.0.0.1:9000', bucket: b}
recipientKey: {file: /keys/x25519.key}
output: {dir: /tmp/out}
warmup: 0s
measured: 10s
";

    /// Records spread over more than two row groups come back whole, sorted within each
    /// group, and the digest equals the digest of the same records in memory.
    #[test]
    fn records_go_to_disk_in_groups_and_fold_as_in_memory() {
        let spec = RunSpec::parse(SPEC, "spec").unwrap();
        let (spool, tx) = Spool::start(&spec).unwrap();
        let n = GROUP_ROWS * 2 + 17;
        let recs: Vec<Record> = (0..n)
            .map(|i| Record {
                worker: u32::try_from(i % 2).unwrap(),
                seq: i as u64,
                phase: Some(RequestPhase::Measured),
                outcome: Some(Outcome::Ok),
                // Completion order is not start order: every pair arrives swapped.
                offset: Duration::from_micros((i ^ 1) as u64 * 100),
                total: Duration::from_micros(500 + (i % 97) as u64),
                storage: Duration::from_micros(400),
                ..Record::default()
            })
            .collect();
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let tx = tx.clone();
                let mine: Vec<Record> = recs.iter().filter(|r| r.worker == w).cloned().collect();
                std::thread::spawn(move || {
                    for r in mine {
                        tx.written(format!("k{}", r.seq), "v".into());
                        tx.record(r);
                    }
                })
            })
            .collect();
        drop(tx);
        for w in workers {
            w.join().unwrap();
        }
        let s = spool.finish().unwrap();
        assert_eq!(s.rows, n as u64);
        assert_eq!(s.written_count, n as u64);
        let back = Table::read_parquet(&s.records, RECORD_SCHEMA).unwrap();
        let (_, got) = records_from_table(&back).unwrap();
        assert_eq!(got.len(), n);
        let mut seqs: Vec<u64> = got.iter().map(|r| r.seq).collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..n as u64).collect::<Vec<_>>());
        for group in got.chunks(GROUP_ROWS) {
            assert!(group.windows(2).all(|w| w[0].offset <= w[1].offset));
        }
        let mem = Digest::of(&spec, &recs);
        assert_eq!(s.digest.ok(), mem.ok());
        // Summed in another order: equal counts, sums equal to rounding.
        for (a, b) in s.digest.bins.iter().zip(&mem.bins) {
            assert_eq!(a.ok, b.ok);
            assert!((a.latency_ms_sum - b.latency_ms_sum).abs() < 1e-9);
        }
        assert_eq!(s.digest.latency_quantile(0.99), mem.latency_quantile(0.99));
        let mut keys = 0;
        let mut slices = WrittenSlices::open(&s.written, 1000).unwrap();
        while let Some(b) = slices.next_slice().unwrap() {
            assert!(b.len() <= 1000);
            keys += b.len();
        }
        assert_eq!(keys, n);
    }
}
