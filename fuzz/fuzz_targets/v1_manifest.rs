//! The v1 manifest parser (FORMAT.md §5) on arbitrary bytes. Properties: it never panics;
//! a manifest it accepts re-serialises to canonical bytes that parse to an equal value, and
//! those bytes are a fixed point (the reader accepts insignificant whitespace, writers never
//! emit it: FORMAT.md §5).

#![no_main]

use envelope::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mode) = Manifest::peek_mode(data) else {
        return;
    };
    let Ok(m) = Manifest::parse(data, mode) else {
        return;
    };
    let canonical = m.to_bytes().expect("an accepted manifest serialises");
    let again = Manifest::parse(&canonical, mode).expect("canonical bytes parse");
    assert_eq!(again, m, "canonical form parses to another manifest");
    assert_eq!(
        again.to_bytes().expect("serialises"),
        canonical,
        "canonical form is not a fixed point"
    );
});
