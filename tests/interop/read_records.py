"""Open a run's Parquet files with three independent readers and report what they see.

Usage: read_records.py PROCESS_DIR

pyarrow checks the documented column names and types, polars and DuckDB count the
records by phase and outcome; all three must agree. Prints one JSON object.
"""
import json
import sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

RECORDS = {
    "run_id": pa.string(), "campaign": pa.string(), "process": pa.int64(),
    "worker": pa.int64(), "seq": pa.int64(), "phase": pa.string(),
    "operation": pa.string(), "mode": pa.string(), "backend": pa.string(),
    "object_size": pa.int64(), "start": pa.timestamp("ns", tz="UTC"),
    "offset_ns": pa.int64(), "total_ns": pa.int64(),
    "key_establishment_ns": pa.int64(), "key_derivation_ns": pa.int64(),
    "aead_ns": pa.int64(), "manifest_ns": pa.int64(), "storage_ns": pa.int64(),
    "queue_wait_ns": pa.int64(), "crypto_cpu_ns": pa.int64(),
    "bytes_sent": pa.int64(), "bytes_received": pa.int64(),
    "manifest_bytes": pa.int64(), "s3_requests": pa.int64(),
    "outcome": pa.string(), "error_class": pa.string(),
    "session_id": pa.int64(), "session_index": pa.int64(), "session_age_ns": pa.int64(),
}


def main():
    d = sys.argv[1]
    t = pq.read_table(f"{d}/records.parquet")
    got = {f.name: f.type for f in t.schema}
    if list(got) != list(RECORDS):
        sys.exit(f"columns differ: {list(got)}")
    for name, typ in RECORDS.items():
        if got[name] != typ:
            sys.exit(f"column {name}: {got[name]}, expected {typ}")
    df = pl.read_parquet(f"{d}/records.parquet")
    by_phase = {r["phase"]: r["len"] for r in df.group_by("phase").len().to_dicts()}
    ok_measured = df.filter((pl.col("phase") == "measured") & (pl.col("outcome") == "ok")).height
    con = duckdb.connect()
    duck_ok = con.execute(
        f"select count(*) from read_parquet('{d}/records.parquet') "
        "where phase = 'measured' and outcome = 'ok'"
    ).fetchone()[0]
    mean_total_ms = con.execute(
        f"select avg(total_ns) / 1e6 from read_parquet('{d}/records.parquet') "
        "where phase = 'measured' and outcome = 'ok'"
    ).fetchone()[0]
    samples = pq.read_table(f"{d}/samples.parquet")
    print(json.dumps({
        "rows": t.num_rows,
        "by_phase": by_phase,
        "ok_measured_polars": ok_measured,
        "ok_measured_duckdb": duck_ok,
        "mean_total_ms": mean_total_ms,
        "first_start_year": t.column("start").cast(pa.timestamp("us", tz="UTC"), safe=False)[0].as_py().year,
        "sample_rows": samples.num_rows,
        "sample_time_type": str(samples.schema.field("time").type),
    }))


if __name__ == "__main__":
    main()
