//! The v1 reader on a mutated golden object (manifest + `data.enc`), for each key-establishment
//! family and on both backends. Property: the opener returns plaintext only for the golden
//! object itself: the manifest may differ only in insignificant whitespace (it must parse to
//! the golden manifest), `data.enc` not at all, and the plaintext is the golden one. Anything
//! else fails, and never panics. The `plaintext` baseline authenticates nothing by design:
//! there the property is that it returns `data.enc` unchanged.
//!
//! Readers are built once per object and backend (an RSA key's parse costs more than the
//! rest of an execution), except for `ml-kem-768-session`, whose reader caches roots: a
//! fresh one per execution keeps every execution independent of the ones before it.

#![no_main]

use std::sync::LazyLock;

use envelope::{Backend, Manifest, Mode, Receiver, open_stream};
use libfuzzer_sys::fuzz_target;
use pqbench_fuzz::{GoldenV1, V1_FILES, golden_v1, split};

static GOLDEN: LazyLock<Vec<GoldenV1>> =
    LazyLock::new(|| V1_FILES.iter().map(|t| golden_v1(t)).collect());

fn receiver(g: &GoldenV1, backend: Backend) -> Receiver {
    Receiver::new(g.mode, backend, g.key.as_ref()).expect("golden key loads")
}

/// Per golden object, a reader per backend that implements its mode (in `Backend::ALL`
/// order; libcrux has no RSA).
static READERS: LazyLock<Vec<[Option<Receiver>; Backend::ALL.len()]>> = LazyLock::new(|| {
    GOLDEN
        .iter()
        .map(|g| Backend::ALL.map(|b| b.supports(g.mode).then(|| receiver(g, b))))
        .collect()
});

fuzz_target!(|data: &[u8]| {
    let Some(s) = split(data) else { return };
    let i = usize::from(s.select) % GOLDEN.len();
    let g = &GOLDEN[i];
    for (b, backend) in Backend::ALL.into_iter().enumerate() {
        let Some(reader) = &READERS[i][b] else {
            continue;
        };
        let fresh;
        let receiver = if g.mode == Mode::MlKem768Session {
            fresh = receiver(g, backend);
            &fresh
        } else {
            reader
        };
        let mut out = Vec::new();
        if open_stream(receiver, &g.id, s.first, s.second, &mut out).is_err() {
            continue;
        }
        if g.mode == Mode::Plaintext {
            // The baseline has no integrity (FORMAT.md §1): it passes data.enc through.
            assert_eq!(out, s.second, "plaintext on {backend}: not data.enc");
        } else {
            let golden = Manifest::parse(&g.manifest, g.mode).expect("golden manifest");
            assert_eq!(
                Manifest::parse(s.first, g.mode).ok(),
                Some(golden),
                "{} on {backend}: opened under another manifest",
                g.mode
            );
            assert_eq!(
                s.second, g.data,
                "{} on {backend}: opened other data.enc",
                g.mode
            );
            assert_eq!(out, g.plaintext, "{} on {backend}: other plaintext", g.mode);
        }
    }
});
