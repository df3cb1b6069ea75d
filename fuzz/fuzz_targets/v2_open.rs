//! The v2 reader on a mutated golden object (header + chunks), for every KEM and placement
//! and on both backends. Property: plaintext comes out only for the golden object's exact
//! bytes (a v2 header has one encoding), and it is the golden plaintext; anything else fails
//! without a panic.

#![no_main]

use std::sync::LazyLock;

use envelope::Backend;
use envelope::hpke::PrivateKey;
use envelope::v2;
use libfuzzer_sys::fuzz_target;
use pqbench_fuzz::{GoldenV2, V2_FILES, golden_v2, split};

static GOLDEN: LazyLock<Vec<GoldenV2>> =
    LazyLock::new(|| V2_FILES.iter().map(|t| golden_v2(t)).collect());

/// Per golden object, its private key on each backend (in `Backend::ALL` order), loaded once.
static KEYS: LazyLock<Vec<[PrivateKey; Backend::ALL.len()]>> = LazyLock::new(|| {
    GOLDEN
        .iter()
        .map(|g| {
            Backend::ALL.map(|b| PrivateKey::new(b, g.kem, &g.secret).expect("golden key loads"))
        })
        .collect()
});

fuzz_target!(|data: &[u8]| {
    let Some(s) = split(data) else { return };
    let i = usize::from(s.select) % GOLDEN.len();
    let g = &GOLDEN[i];
    for (b, backend) in Backend::ALL.into_iter().enumerate() {
        if let Ok(pt) = v2::open(&g.id, &KEYS[i][b], s.first, g.placement, s.second) {
            assert_eq!(
                s.first,
                g.header,
                "{} on {backend}: opened another header",
                g.kem.name()
            );
            assert_eq!(
                s.second,
                g.chunks,
                "{} on {backend}: opened other chunks",
                g.kem.name()
            );
            assert_eq!(pt.as_slice(), g.plaintext, "{} on {backend}", g.kem.name());
        }
    }
});
