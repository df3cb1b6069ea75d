//! The columnar tables of a run's data (records and samples) as plain values: a fixed
//! schema of typed columns, each required or optional. The `worker` crate writes and reads
//! them as Parquet (`worker::parquet`); this crate only builds and reads the values.
//!
//! Types are limited to what the data needs: 64-bit integers, UTC nanosecond timestamps, doubles
//! and UTF-8 strings. The schema is part of the data contract (docs/src/runs.md, "Run files").

/// Column types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `INT64`.
    Int64,
    /// `INT64 (TIMESTAMP(NANOS, true))`: nanoseconds since the Unix epoch, UTC.
    TimestampNs,
    /// `DOUBLE`.
    Double,
    /// `BYTE_ARRAY (STRING)`.
    Utf8,
}

impl Kind {
    /// Name used in error messages and docs.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Int64 => "int64",
            Self::TimestampNs => "timestamp[ns, UTC]",
            Self::Double => "double",
            Self::Utf8 => "string",
        }
    }
}

/// One column of a schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnSpec {
    /// Column name.
    pub name: &'static str,
    /// Type.
    pub kind: Kind,
    /// Whether nulls are allowed.
    pub optional: bool,
    /// For a column appended after files were first written (always optional, always at
    /// the end): the change that added it. A file written before lacks it, and still
    /// validates; the column reads as empty.
    pub added: Option<&'static str>,
}

/// Column data.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// Integers or timestamps.
    I64(Vec<Option<i64>>),
    /// Doubles.
    F64(Vec<Option<f64>>),
    /// Strings.
    Str(Vec<Option<String>>),
}

impl Column {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Self::I64(v) => v.len(),
            Self::F64(v) => v.len(),
            Self::Str(v) => v.len(),
        }
    }

    /// Whether the column has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table: a schema and one column of data per schema column.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The schema.
    pub schema: &'static [ColumnSpec],
    /// The data, in schema order.
    pub columns: Vec<Column>,
}

impl Table {
    /// An empty table of `schema`.
    pub fn new(schema: &'static [ColumnSpec]) -> Self {
        let columns = schema
            .iter()
            .map(|c| match c.kind {
                Kind::Int64 | Kind::TimestampNs => Column::I64(Vec::new()),
                Kind::Double => Column::F64(Vec::new()),
                Kind::Utf8 => Column::Str(Vec::new()),
            })
            .collect();
        Self { schema, columns }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, Column::len)
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        let i = self.schema.iter().position(|c| c.name == name)?;
        self.columns.get(i)
    }

    /// Integer column `name` (empty if absent or of another type).
    pub fn i64s(&self, name: &str) -> &[Option<i64>] {
        match self.column(name) {
            Some(Column::I64(v)) => v,
            _ => &[],
        }
    }

    /// Double column `name` (empty if absent or of another type).
    pub fn f64s(&self, name: &str) -> &[Option<f64>] {
        match self.column(name) {
            Some(Column::F64(v)) => v,
            _ => &[],
        }
    }

    /// String column `name` (empty if absent or of another type).
    pub fn strs(&self, name: &str) -> &[Option<String>] {
        match self.column(name) {
            Some(Column::Str(v)) => v,
            _ => &[],
        }
    }
}

/// Appends a null to a column.
pub fn push_null(c: &mut Column) {
    match c {
        Column::I64(v) => v.push(None),
        Column::F64(v) => v.push(None),
        Column::Str(v) => v.push(None),
    }
}
