//! A panic inside the `parquet` crate's reader, made an error.
//!
//! The crate is not panic-free on hostile files: its own docs list panics
//! (`ColumnChunkMetaData::byte_range`), and the `run_dir` fuzz target found more deep in page
//! decoding (`Decoder for dict should have been set`, a data page that names a dictionary
//! the column chunk does not have; parquet 60.1.0, `column/reader/decoder.rs`). A damaged or
//! hostile run file must fail `pqbench validate`'s `schema` check with a reason, not abort the
//! validator, so every call into the reader runs under [`reading`]: a panic there is caught
//! and becomes [`Error::File`](crate::Error::File) naming the file and the reader's message.
//!
//! While a thread is inside [`reading`], the panic hook stays silent for that thread (the
//! error carries the message); every other panic goes to the hook that was there before, so a
//! panic in pqbench's own code still prints and fails as always (and still aborts a fuzz
//! target).

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Once;

use crate::Result;
use crate::error::file_err;

thread_local! {
    static IN_READER: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once per process, a panic hook that is silent inside [`reading`] and otherwise
/// calls the hook it replaced.
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_READER.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// The text of a panic's payload.
fn message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Runs `f`, a call into the parquet reader for the file at `path`; a panic inside it is
/// returned as an error saying the file is damaged. `f` must only call the reader: the
/// caller's own logic stays outside, so that its panics are not mistaken for a bad file.
pub(crate) fn reading<T>(path: &Path, f: impl FnOnce() -> T) -> Result<T> {
    install_hook();
    let was = IN_READER.with(|r| r.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    IN_READER.with(|r| r.set(was));
    outcome.map_err(|payload| {
        file_err(
            path,
            format!(
                "damaged Parquet file: the parquet reader failed on it ({})",
                message(payload.as_ref())
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_becomes_an_error_naming_the_file_and_the_reader_message() {
        let e = reading(Path::new("/d/p0/samples.parquet"), || -> u8 {
            panic!("Decoder for dict should have been set")
        })
        .expect_err("caught");
        assert_eq!(
            e.to_string(),
            "output /d/p0/samples.parquet: damaged Parquet file: the parquet reader failed on it \
             (Decoder for dict should have been set)"
        );
        assert!(!IN_READER.with(Cell::get), "the flag is restored");
        assert_eq!(reading(Path::new("x"), || 7).expect("no panic"), 7);
    }

    #[test]
    fn a_panic_outside_still_unwinds_to_its_caller() {
        install_hook();
        let outside = std::panic::catch_unwind(|| panic!("pqbench's own bug"));
        assert!(outside.is_err());
    }
}
