//! The run tables ([`run::table::Table`]) as Parquet files, with the `parquet` crate's
//! low-level API (no Arrow: it would double the build), so that records and samples open in
//! pandas, polars and DuckDB without custom code. [`TableFile::check_schema`] compares a
//! file's schema with the expected one.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as Physical};
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use parquet::record::reader::RowIter;
use parquet::schema::types::Type;

use run::table::{Column, ColumnSpec, Kind, Table, push_null};

use crate::Result;
use crate::error::file_err as out_err;
use crate::guard::reading;

fn parquet_type(c: &ColumnSpec) -> parquet::errors::Result<Type> {
    let (physical, logical) = match c.kind {
        Kind::Int64 => (Physical::INT64, None),
        Kind::TimestampNs => (
            Physical::INT64,
            Some(LogicalType::timestamp(true, TimeUnit::NANOS)),
        ),
        Kind::Double => (Physical::DOUBLE, None),
        Kind::Utf8 => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
    };
    Type::primitive_type_builder(c.name, physical)
        .with_repetition(if c.optional {
            Repetition::OPTIONAL
        } else {
            Repetition::REQUIRED
        })
        .with_logical_type(logical)
        .build()
}

fn message(schema: &[ColumnSpec]) -> parquet::errors::Result<Type> {
    let fields = schema
        .iter()
        .map(|c| parquet_type(c).map(Arc::new))
        .collect::<parquet::errors::Result<Vec<_>>>()?;
    Type::group_type_builder("schema")
        .with_fields(fields)
        .build()
}

fn split<T: Clone>(v: &[Option<T>], optional: bool) -> (Vec<T>, Option<Vec<i16>>) {
    let values = v.iter().flatten().cloned().collect();
    let defs = optional.then(|| v.iter().map(|x| i16::from(x.is_some())).collect());
    (values, defs)
}

/// A Parquet file written one row group at a time: a long run's records go to disk as they
/// come, in groups, and never sit in memory whole.
pub struct GroupWriter {
    path: std::path::PathBuf,
    schema: &'static [ColumnSpec],
    writer: SerializedFileWriter<File>,
    rows: u64,
}

impl GroupWriter {
    /// Creates (truncates) the file at `path` for tables of `schema`.
    pub fn create(path: &Path, schema: &'static [ColumnSpec]) -> Result<Self> {
        let e = |e: parquet::errors::ParquetError| out_err(path, e);
        let file = File::create(path).map_err(|x| out_err(path, x))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("pqbench {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer =
            SerializedFileWriter::new(file, Arc::new(message(schema).map_err(e)?), Arc::new(props))
                .map_err(e)?;
        Ok(Self {
            path: path.to_path_buf(),
            schema,
            writer,
            rows: 0,
        })
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Writes `t` (of this file's schema) as one Snappy-compressed row group.
    pub fn write(&mut self, t: &Table) -> Result<()> {
        let path = self.path.clone();
        let rows = t.rows();
        let same = t.schema.len() == self.schema.len()
            && t.schema
                .iter()
                .zip(self.schema)
                .all(|(a, b)| a.name == b.name);
        if !same
            || t.columns.len() != self.schema.len()
            || t.columns.iter().any(|c| c.len() != rows)
        {
            return Err(out_err(
                &path,
                "columns of unequal length or another schema (a bug)",
            ));
        }
        let e = |e: parquet::errors::ParquetError| out_err(&path, e);
        let mut rg = self.writer.next_row_group().map_err(e)?;
        let mut i = 0;
        while let Some(mut col) = rg.next_column().map_err(e)? {
            let spec = self.schema[i];
            match &t.columns[i] {
                Column::I64(v) => {
                    let (vals, defs) = split(v, spec.optional);
                    col.typed::<Int64Type>()
                        .write_batch(&vals, defs.as_deref(), None)
                        .map_err(e)?;
                }
                Column::F64(v) => {
                    let (vals, defs) = split(v, spec.optional);
                    col.typed::<DoubleType>()
                        .write_batch(&vals, defs.as_deref(), None)
                        .map_err(e)?;
                }
                Column::Str(v) => {
                    let (vals, defs) = split(v, spec.optional);
                    let vals: Vec<ByteArray> = vals
                        .into_iter()
                        .map(|s| ByteArray::from(s.into_bytes()))
                        .collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&vals, defs.as_deref(), None)
                        .map_err(e)?;
                }
            }
            col.close().map_err(e)?;
            i += 1;
        }
        rg.close().map_err(e)?;
        self.rows += rows as u64;
        Ok(())
    }

    /// Writes the footer and closes the file.
    pub fn close(self) -> Result<()> {
        let path = self.path;
        self.writer.close().map_err(|e| out_err(&path, e))?;
        Ok(())
    }
}

/// A Parquet file as the reader sees it, refusing to read past its end. The parquet crate's
/// own `File` reader lets a page header skip bytes past the end without error (its Thrift
/// `skip_bytes` ignores a short read), so a header claiming a list of 2^31 doubles spun for
/// hours (found by the `run_dir` fuzz target); and it allocates a claimed length before
/// reading it. Here a read at the end is an error, and a claimed range beyond the file is
/// refused before anything is allocated.
struct Strict {
    file: File,
    len: u64,
}

impl parquet::file::reader::Length for Strict {
    fn len(&self) -> u64 {
        self.len
    }
}

impl parquet::file::reader::ChunkReader for Strict {
    type T = NoReadPastEnd<<File as parquet::file::reader::ChunkReader>::T>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.file.get_read(start).map(NoReadPastEnd)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        let end = u64::try_from(length)
            .ok()
            .and_then(|n| start.checked_add(n));
        if end.is_none_or(|end| end > self.len) {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "bytes {start}..+{length} lie beyond the end of the {}-byte file",
                self.len
            )));
        }
        self.file.get_bytes(start, length)
    }
}

/// A reader whose end of input is an error ([`Strict`]): a well-formed Parquet file is
/// never read past its end.
struct NoReadPastEnd<R>(R);

impl<R: std::io::Read> std::io::Read for NoReadPastEnd<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        if n == 0 && !buf.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the Parquet file ends inside a page",
            ));
        }
        Ok(n)
    }
}

/// A row group whose pages are checked before the reader decodes them ([`CheckedPages`]).
struct CheckedGroup<'a>(Box<dyn RowGroupReader + 'a>);

impl RowGroupReader for CheckedGroup<'_> {
    fn metadata(&self) -> &parquet::file::metadata::RowGroupMetaData {
        self.0.metadata()
    }

    fn num_columns(&self) -> usize {
        self.0.num_columns()
    }

    fn get_column_page_reader(&self, i: usize) -> parquet::errors::Result<Box<dyn PageReader>> {
        Ok(Box::new(CheckedPages {
            inner: self.0.get_column_page_reader(i)?,
            chunk_values: u64::try_from(self.0.metadata().column(i).num_values()).unwrap_or(0),
        }))
    }

    fn get_column_bloom_filter(&self, i: usize) -> Option<&parquet::bloom_filter::Sbbf> {
        self.0.get_column_bloom_filter(i)
    }

    fn get_row_iter(&self, projection: Option<Type>) -> parquet::errors::Result<RowIter<'_>> {
        RowIter::from_row_group(projection, self)
    }
}

/// A column chunk's pages, each refused if it claims more values than its column chunk holds
/// or (a dictionary) than its bytes can encode. The parquet crate sizes a dictionary by its
/// page header before decoding it: a header claiming 2^31 doubles made it fill 16 GiB
/// (found by the `run_dir` fuzz target as an out-of-memory).
struct CheckedPages {
    inner: Box<dyn PageReader>,
    chunk_values: u64,
}

impl CheckedPages {
    fn check(&self, page: Option<Page>) -> parquet::errors::Result<Option<Page>> {
        let claim = match &page {
            Some(Page::DictionaryPage {
                buf, num_values, ..
            }) => {
                // No encoding takes less than a bit per value.
                let bits = u64::try_from(buf.len())
                    .unwrap_or(u64::MAX)
                    .saturating_mul(8);
                (u64::from(*num_values) > bits.min(self.chunk_values))
                    .then_some((*num_values, "dictionary"))
            }
            Some(Page::DataPage { num_values, .. } | Page::DataPageV2 { num_values, .. }) => {
                (u64::from(*num_values) > self.chunk_values).then_some((*num_values, "data"))
            }
            None => None,
        };
        match claim {
            Some((n, kind)) => Err(parquet::errors::ParquetError::General(format!(
                "a {kind} page claims {n} values; its column chunk holds {}",
                self.chunk_values
            ))),
            None => Ok(page),
        }
    }
}

impl Iterator for CheckedPages {
    type Item = parquet::errors::Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for CheckedPages {
    fn get_next_page(&mut self) -> parquet::errors::Result<Option<Page>> {
        let page = self.inner.get_next_page()?;
        self.check(page)
    }

    fn peek_next_page(&mut self) -> parquet::errors::Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> parquet::errors::Result<()> {
        self.inner.skip_next_page()
    }

    fn supports_deferred_dictionary(&self) -> bool {
        self.inner.supports_deferred_dictionary()
    }

    fn take_deferred_dictionary(&mut self) -> parquet::errors::Result<Option<Page>> {
        let page = self.inner.take_deferred_dictionary()?;
        self.check(page)
    }

    fn at_record_boundary(&mut self) -> parquet::errors::Result<bool> {
        self.inner.at_record_boundary()
    }
}

/// Opens the Parquet file at `path` and refuses a footer whose column chunks lie outside
/// the file, with the figures (the parquet crate asserts it in
/// `ColumnChunkMetaData::byte_range`, a panic; Arrow C++ makes the same check, `Invalid
/// column metadata (corrupt file?)`). Every later call into the reader runs under
/// [`reading`], which turns the reader's other panics into errors.
fn open(path: &Path) -> Result<SerializedFileReader<Strict>> {
    let file = File::open(path).map_err(|e| out_err(path, e))?;
    let len = file.metadata().map_err(|e| out_err(path, e))?.len();
    let r = reading(path, || SerializedFileReader::new(Strict { file, len }))?
        .map_err(|e| out_err(path, e))?;
    for (g, group) in r.metadata().row_groups().iter().enumerate() {
        for c in group.columns() {
            let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
            let size = c.compressed_size();
            let end = u64::try_from(start)
                .ok()
                .zip(u64::try_from(size).ok())
                .and_then(|(s, n)| s.checked_add(n));
            if end.is_none_or(|e| e > len) {
                return Err(out_err(
                    path,
                    format!(
                        "damaged Parquet footer: row group {g}, column {:?} claims bytes \
                         {start}..+{size} of a {len}-byte file",
                        c.column_path().string()
                    ),
                ));
            }
        }
    }
    Ok(r)
}

/// Reads a Parquet file written with `schema` in tables of at most `batch` rows, handing
/// each to `f` (a long run's records are read without holding them all). Columns are
/// matched by name and mistyped values are refused, as [`TableFile::read_parquet`].
pub fn read_batches(
    path: &Path,
    schema: &'static [ColumnSpec],
    batch: usize,
    mut f: impl FnMut(Table) -> Result<()>,
) -> Result<()> {
    let r = open(path)?;
    let mut t = Table::new(schema);
    for g in 0..r.num_row_groups() {
        let group =
            CheckedGroup(reading(path, || r.get_row_group(g))?.map_err(|e| out_err(path, e))?);
        let mut rows = reading(path, || RowIter::from_row_group(None, &group))?
            .map_err(|e| out_err(path, e))?;
        while let Some(row) = reading(path, || rows.next())? {
            let row = row.map_err(|e| out_err(path, e))?;
            push_row(&mut t, &row, path)?;
            if t.rows() >= batch.max(1) {
                f(std::mem::replace(&mut t, Table::new(schema)))?;
            }
        }
    }
    if t.rows() > 0 {
        f(t)?;
    }
    Ok(())
}

/// Appends one row to `t`, refusing a missing or mistyped column.
fn push_row(t: &mut Table, row: &parquet::record::Row, path: &Path) -> Result<()> {
    let schema = t.schema;
    let mut seen = vec![false; schema.len()];
    for (name, field) in row.get_column_iter() {
        let Some(i) = schema.iter().position(|c| c.name == name.as_str()) else {
            continue;
        };
        seen[i] = true;
        let bad = || {
            out_err(
                path,
                format!(
                    "column {name:?} holds {field:?}, expected {}",
                    schema[i].kind.name()
                ),
            )
        };
        match (&mut t.columns[i], field) {
            (_, Field::Null) if schema[i].optional => push_null(&mut t.columns[i]),
            (Column::I64(v), Field::Long(x)) => v.push(Some(*x)),
            (Column::I64(v), Field::TimestampMicros(x)) => v.push(Some(x.saturating_mul(1000))),
            (Column::I64(v), Field::TimestampMillis(x)) => {
                v.push(Some(x.saturating_mul(1_000_000)))
            }
            (Column::F64(v), Field::Double(x)) => v.push(Some(*x)),
            (Column::Str(v), Field::Str(x)) => v.push(Some(x.clone())),
            _ => return Err(bad()),
        }
    }
    for (i, seen) in seen.into_iter().enumerate() {
        if seen {
            continue;
        }
        if schema[i].added.is_none() {
            return Err(out_err(
                path,
                format!("column {:?} is missing", schema[i].name),
            ));
        }
        // A column appended after the file was written.
        push_null(&mut t.columns[i]);
    }
    Ok(())
}

/// A [`Table`] as a Parquet file.
pub trait TableFile: Sized {
    /// Writes the table as one Snappy-compressed row group.
    fn write_parquet(&self, path: &Path) -> Result<()>;
    /// The differences between the schema of the file at `path` and `schema` (empty: equal).
    fn check_schema(path: &Path, schema: &[ColumnSpec]) -> Result<Vec<String>>;
    /// Reads the file at `path`, which must have `schema`.
    fn read_parquet(path: &Path, schema: &'static [ColumnSpec]) -> Result<Self>;
}

impl TableFile for Table {
    /// Writes the table as one Snappy-compressed row group.
    fn write_parquet(&self, path: &Path) -> Result<()> {
        let mut w = GroupWriter::create(path, self.schema)?;
        w.write(self)?;
        w.close()
    }

    /// Compares the schema of the Parquet file at `path` with `schema`: the same columns in
    /// the same order with the same physical and logical types and nullability. Returns one
    /// line per difference (empty: the schema is complete and correct).
    fn check_schema(path: &Path, schema: &[ColumnSpec]) -> Result<Vec<String>> {
        let r = open(path)?;
        let descr = r.metadata().file_metadata().schema_descr_ptr();
        let want = message(schema).map_err(|e| out_err(path, e))?;
        let mut diffs = Vec::new();
        let got: Vec<_> = descr.root_schema().get_fields().to_vec();
        for (i, w) in want.get_fields().iter().enumerate() {
            match got.iter().position(|g| g.name() == w.name()) {
                // Written before the column was added: it reads as empty.
                None if schema[i].added.is_some() => {}
                None => diffs.push(format!("column {:?} is missing", w.name())),
                Some(j) => {
                    let g = &got[j];
                    if j != i {
                        diffs.push(format!(
                            "column {:?} is at position {j}, expected {i}",
                            w.name()
                        ));
                    }
                    if g.get_physical_type() != w.get_physical_type()
                        || g.get_basic_info().logical_type_ref()
                            != w.get_basic_info().logical_type_ref()
                    {
                        diffs.push(format!(
                            "column {:?} has type {:?}/{:?}, expected {}",
                            w.name(),
                            g.get_physical_type(),
                            g.get_basic_info().logical_type_ref(),
                            schema[i].kind.name()
                        ));
                    }
                    if g.get_basic_info().repetition() != w.get_basic_info().repetition() {
                        diffs.push(format!(
                            "column {:?} is {:?}, expected {}",
                            w.name(),
                            g.get_basic_info().repetition(),
                            if schema[i].optional {
                                "OPTIONAL"
                            } else {
                                "REQUIRED"
                            }
                        ));
                    }
                }
            }
        }
        for g in &got {
            if !want.get_fields().iter().any(|w| w.name() == g.name()) {
                diffs.push(format!("unexpected column {:?}", g.name()));
            }
        }
        Ok(diffs)
    }

    /// Reads a Parquet file written with `schema` (check the schema first: columns are
    /// matched by name and mistyped values are refused).
    fn read_parquet(path: &Path, schema: &'static [ColumnSpec]) -> Result<Self> {
        let mut all = Table::new(schema);
        read_batches(path, schema, usize::MAX, |t| {
            all = t;
            Ok(())
        })?;
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use run::records::{
        Outcome, RECORD_SCHEMA, Record, RequestPhase, RunKeys, SAMPLE_SCHEMA, records_from_table,
        records_table,
    };
    use run::table::{Column, ColumnSpec, Kind, Table};

    const SCHEMA: &[ColumnSpec] = &[
        ColumnSpec {
            name: "a",
            kind: Kind::Int64,
            optional: false,
            added: None,
        },
        ColumnSpec {
            name: "t",
            kind: Kind::TimestampNs,
            optional: false,
            added: None,
        },
        ColumnSpec {
            name: "x",
            kind: Kind::Double,
            optional: true,
            added: None,
        },
        ColumnSpec {
            name: "s",
            kind: Kind::Utf8,
            optional: true,
            added: None,
        },
    ];

    #[test]
    fn round_trips_and_checks_schema() {
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("t.parquet");
        let mut t = Table::new(SCHEMA);
        t.columns = vec![
            Column::I64(vec![Some(1), Some(-2), Some(3)]),
            Column::I64(vec![Some(1_700_000_000_123_456_789), Some(0), Some(5)]),
            Column::F64(vec![Some(0.5), None, Some(2.0)]),
            Column::Str(vec![None, Some("ok".into()), Some("é".into())]),
        ];
        t.write_parquet(&p).expect("write");
        assert!(Table::check_schema(&p, SCHEMA).expect("schema").is_empty());
        assert_eq!(Table::read_parquet(&p, SCHEMA).expect("read"), t);
        const OTHER: &[ColumnSpec] = &[
            ColumnSpec {
                name: "a",
                kind: Kind::Double,
                optional: false,
                added: None,
            },
            ColumnSpec {
                name: "t",
                kind: Kind::TimestampNs,
                optional: false,
                added: None,
            },
            ColumnSpec {
                name: "x",
                kind: Kind::Double,
                optional: false,
                added: None,
            },
            ColumnSpec {
                name: "s",
                kind: Kind::Utf8,
                optional: true,
                added: None,
            },
            ColumnSpec {
                name: "z",
                kind: Kind::Utf8,
                optional: true,
                added: None,
            },
        ];
        let diffs = Table::check_schema(&p, OTHER).expect("schema");
        assert_eq!(diffs.len(), 3, "{diffs:?}");
    }

    #[test]
    fn records_round_trip_through_parquet() {
        let keys = RunKeys {
            run_id: "r1".into(),
            campaign: "c".into(),
            process: 1,
            operation: "put".into(),
            mode: "ml-kem-768-session".into(),
            backend: "aws-lc".into(),
            object_size: 65536,
        };
        let ms = Duration::from_millis;
        let recs = vec![
            Record {
                worker: 3,
                seq: 0,
                phase: Some(RequestPhase::Warmup),
                start_unix_ns: 1_790_000_000_000_000_000,
                offset: ms(1),
                total: ms(5),
                storage: ms(4),
                outcome: Some(Outcome::Ok),
                session_id: Some(0),
                session_index: Some(7),
                session_age: Some(ms(30)),
                bytes_sent: 66_000,
                s3_requests: 2,
                ..Record::default()
            },
            Record {
                worker: 1,
                seq: 9,
                phase: Some(RequestPhase::Measured),
                outcome: Some(Outcome::Error),
                error_class: Some("connect"),
                ..Record::default()
            },
        ];
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("records.parquet");
        records_table(&keys, &recs)
            .write_parquet(&p)
            .expect("write");
        assert!(
            Table::check_schema(&p, RECORD_SCHEMA)
                .expect("schema")
                .is_empty()
        );
        let t = Table::read_parquet(&p, RECORD_SCHEMA).expect("read");
        let (k, back) = records_from_table(&t).expect("records");
        assert_eq!(k, Some(keys));
        assert_eq!(back, recs);
    }

    /// A samples.parquet written before columns were added (issue 39's disk columns,
    /// issue 41's key service columns; its schema the columns before them) still
    /// validates, and reads with those columns empty; a column of the first schema missing
    /// is still refused.
    #[test]
    fn a_file_written_before_columns_were_added_reads_them_empty() {
        let added = SAMPLE_SCHEMA.iter().filter(|c| c.added.is_some()).count();
        assert_eq!(added, 5);
        let old: &'static [ColumnSpec] = &SAMPLE_SCHEMA[..SAMPLE_SCHEMA.len() - added];
        assert!(old.iter().all(|c| c.added.is_none()));
        let mut t = Table::new(old);
        for (i, col) in t.columns.iter_mut().enumerate() {
            match col {
                Column::I64(v) => v.push(Some(i64::try_from(i).unwrap_or(0))),
                Column::F64(v) => v.push(Some(1.5)),
                Column::Str(v) => v.push(None),
            }
        }
        let dir = tempfile::tempdir().expect("dir");
        let p = dir.path().join("samples.parquet");
        t.write_parquet(&p).expect("write");
        assert_eq!(
            Table::check_schema(&p, SAMPLE_SCHEMA).expect("schema"),
            Vec::<String>::new()
        );
        let back = Table::read_parquet(&p, SAMPLE_SCHEMA).expect("read");
        assert_eq!(back.rows(), 1);
        assert_eq!(back.f64s("server_cpu_total_s"), [Some(1.5)]);
        assert_eq!(back.f64s("server_disk_writes"), [None]);
        // The first schema's last column is not optional to leave out.
        let older: &'static [ColumnSpec] = &old[..old.len() - 1];
        let mut t = Table::new(older);
        for col in &mut t.columns {
            match col {
                Column::I64(v) => v.push(Some(1)),
                Column::F64(v) => v.push(Some(1.0)),
                Column::Str(v) => v.push(None),
            }
        }
        t.write_parquet(&p).expect("write");
        assert_eq!(
            Table::check_schema(&p, SAMPLE_SCHEMA).expect("schema"),
            ["column \"server_cpu_total_s\" is missing"]
        );
    }

    /// A samples.parquet whose footer gives a column chunk a negative offset (found by the
    /// `run_dir` fuzz target; `fuzz/regressions/run_dir/`) is refused with what is wrong;
    /// the parquet crate alone panicked on it.
    #[test]
    fn a_footer_pointing_outside_the_file_is_refused() {
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/negative-column-offset.parquet");
        let schema_err = Table::check_schema(&p, SAMPLE_SCHEMA).expect_err("damaged footer");
        let read_err = Table::read_parquet(&p, SAMPLE_SCHEMA).expect_err("damaged footer");
        for e in [schema_err, read_err] {
            let msg = e.to_string();
            assert!(
                msg.contains("damaged Parquet footer: row group 0, column"),
                "{msg}"
            );
            assert!(msg.contains("negative-column-offset.parquet"), "{msg}");
        }
    }

    /// A samples.parquet with an intact footer whose data page names a dictionary its column
    /// chunk does not have (found by the `run_dir` fuzz target): the parquet crate panics
    /// while decoding it; pqbench refuses the file with the reader's reason.
    #[test]
    fn a_page_the_reader_panics_on_is_refused_as_damaged() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/dictionary-page-missing.parquet");
        let e = Table::read_parquet(&p, SAMPLE_SCHEMA).expect_err("damaged page");
        let msg = e.to_string();
        assert!(
            msg.contains(
                "dictionary-page-missing.parquet: damaged Parquet file: the parquet \
                          reader failed on it (Decoder for dict should have been set)"
            ),
            "{msg}"
        );
    }

    /// A samples.parquet whose page header claims a list of 2^31 values past the end of the
    /// file (found by the `run_dir` fuzz target as a 20 s timeout): the parquet crate's file
    /// reader skipped them one empty read at a time, for hours; pqbench's reader stops at
    /// the end of the file. The bound only turns a return of the hang into a failure.
    #[test]
    fn a_page_header_running_past_the_end_is_refused_at_once() {
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/page-header-past-end.parquet");
        let started = std::time::Instant::now();
        let e = Table::read_parquet(&p, SAMPLE_SCHEMA).expect_err("damaged page header");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{:?}",
            started.elapsed()
        );
        let msg = e.to_string();
        assert!(msg.contains("page-header-past-end.parquet: "), "{msg}");
        assert!(msg.contains("ends inside a page"), "{msg}");
    }

    /// A samples.parquet whose dictionary page claims 2^31-odd doubles (found by the
    /// `run_dir` fuzz target as an out-of-memory: the parquet crate filled 16 GiB for it) is
    /// refused before the dictionary is sized.
    #[test]
    fn a_dictionary_claiming_more_values_than_its_bytes_is_refused() {
        let p =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/dictionary-too-large.parquet");
        let e = Table::read_parquet(&p, SAMPLE_SCHEMA).expect_err("oversized dictionary");
        let msg = e.to_string();
        assert!(msg.contains("dictionary-too-large.parquet: "), "{msg}");
        assert!(msg.contains("a dictionary page claims"), "{msg}");
    }
}
