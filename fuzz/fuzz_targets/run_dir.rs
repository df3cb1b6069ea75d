//! The run-directory reader and validator (`dataset::validate`, `dataset::collect`: what
//! `pqbench validate` and `pqbench analyze` run on a results directory) with one file of a
//! real process directory (`fuzz/fixtures/run-dir/`, from a short `pqbench run-one`)
//! replaced by the fuzz input.
//!
//! Byte 0 of the input chooses the file (low bits) and whether `SHA256SUMS` is updated to
//! the new file's hash (bit 7 clear) or left as it was (bit 7 set); the rest is the file.
//! Properties: never a panic (the parquet crate's own panics on damaged files are turned
//! into errors by `dataset`, under a hook that stays silent only for them, so any other
//! panic still aborts here); with `SHA256SUMS` left as it was, a changed file always fails
//! the `checksums` check (a damaged file is never counted complete); and a directory the
//! validator accepts is one the collector reads (its run becomes a row, or is excluded
//! only by its own summary's failed checks, never by a read error).

#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use pqbench_fuzz::run_dir::{FILES, Fixture, sums_with};

static FIXTURE: LazyLock<Fixture> = LazyLock::new(Fixture::install);

fuzz_target!(|data: &[u8]| {
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    let fx = &*FIXTURE;
    let (name, original) = FILES[usize::from(sel & 0x7f) % FILES.len()];
    let keep_sums = sel & 0x80 != 0;
    let dir: PathBuf = fx.process_dir();
    std::fs::write(dir.join(name), bytes).expect("write the fuzzed file");
    if !keep_sums && name != "SHA256SUMS" {
        std::fs::write(dir.join("SHA256SUMS"), sums_with(name, bytes)).expect("write sums");
    }

    let report = dataset::validate::validate(fx.root());
    let collected = dataset::collect::collect(fx.root());

    if keep_sums && name != "SHA256SUMS" && bytes != original {
        assert!(
            report.failures().any(|f| f.check == "checksums"),
            "{name} changed under an unchanged SHA256SUMS, yet the checksums check passed"
        );
    }
    if report.ok() {
        let c = collected.expect("a validated directory is collected");
        assert!(
            c.excluded.iter().all(|e| e.run_id.is_some()),
            "validated, yet the collector could not read the run: {:?}",
            c.excluded
        );
        assert_eq!(c.rows.len() + c.excluded.len(), 1, "one run, one outcome");
    }
    fx.restore(name);
});
