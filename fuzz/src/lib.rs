//! Shared pieces of the fuzz targets: the golden objects (compiled in, so a target needs no
//! files at run time) and the split of one fuzz input into a selector and two byte strings.
//!
//! Input layout of the two-part targets (`v1_open`, `v2_open`; `seeds.py` writes the seeds
//! the same way): byte 0 selects the golden object (modulo their number), bytes 1..3 are the
//! first part's length (big-endian, clamped to what is there), the first part follows, and
//! the rest is the second part.

#![allow(
    clippy::unwrap_used,
    reason = "the golden files are compiled in and known good"
)]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use envelope::{KeyType, Mode, ObjectId, SecretKey};
use serde_json::Value;

/// One input split into a selector and two parts.
pub struct Split<'a> {
    /// Which golden object.
    pub select: u8,
    /// Manifest (v1) or header (v2).
    pub first: &'a [u8],
    /// `data.enc` (v1) or the chunks (v2).
    pub second: &'a [u8],
}

/// Splits `data` as the module documentation says; `None` if it is shorter than 3 bytes.
pub fn split(data: &[u8]) -> Option<Split<'_>> {
    let (&select, rest) = data.split_first()?;
    let (len, rest) = rest.split_at_checked(2)?;
    let n = usize::from(u16::from_be_bytes([len[0], len[1]])).min(rest.len());
    let (first, second) = rest.split_at(n);
    Some(Split {
        select,
        first,
        second,
    })
}

/// The inverse of [`split`] (for seeds and regression tests).
pub fn join(select: u8, first: &[u8], second: &[u8]) -> Vec<u8> {
    let len = u16::try_from(first.len()).unwrap();
    let mut v = vec![select];
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(first);
    v.extend_from_slice(second);
    v
}

/// A golden v1 object, with its key.
pub struct GoldenV1 {
    /// Its mode.
    pub mode: Mode,
    /// Its identity.
    pub id: ObjectId,
    /// The recipient's secret key (`None` for `plaintext`).
    pub key: Option<SecretKey>,
    /// `manifest.json`.
    pub manifest: Vec<u8>,
    /// `data.enc`.
    pub data: Vec<u8>,
    /// The plaintext.
    pub plaintext: Vec<u8>,
}

/// The golden v1 objects the opener target uses: one per key-establishment family.
pub const V1_FILES: [&str; 8] = [
    include_str!("../../envelope/tests/golden/ml-kem-768.json"),
    include_str!("../../envelope/tests/golden/ml-kem-768-session.json"),
    include_str!("../../envelope/tests/golden/x25519.json"),
    include_str!("../../envelope/tests/golden/x-wing.json"),
    include_str!("../../envelope/tests/golden/concat-hybrid.json"),
    include_str!("../../envelope/tests/golden/psk.json"),
    include_str!("../../envelope/tests/golden/plaintext.json"),
    include_str!("../../envelope/tests/golden/rsa-oaep-3072.json"),
];

fn id_of(d: &Value) -> ObjectId {
    let s = |k: &str| d[k].as_str().unwrap();
    ObjectId::new(s("tenant"), s("bucket"), s("key"), s("version")).unwrap()
}

/// Parses one golden v1 file.
pub fn golden_v1(text: &str) -> GoldenV1 {
    let d: Value = serde_json::from_str(text).unwrap();
    let mode_name = d["mode"].as_str().unwrap();
    let mode = Mode::ALL
        .into_iter()
        .find(|m| m.name() == mode_name)
        .unwrap();
    let key = d["secret_key_b64"].as_str().map(|s| {
        let kt = KeyType::from_name(d["key_type"].as_str().unwrap()).unwrap();
        SecretKey::from_bytes(kt, B64.decode(s).unwrap()).unwrap()
    });
    GoldenV1 {
        mode,
        id: id_of(&d),
        key,
        manifest: d["manifest"].as_str().unwrap().as_bytes().to_vec(),
        data: hex::decode(d["data_enc_hex"].as_str().unwrap()).unwrap(),
        plaintext: hex::decode(d["plaintext_hex"].as_str().unwrap()).unwrap(),
    }
}

/// A golden v2 object, with its key.
pub struct GoldenV2 {
    /// Its identity.
    pub id: ObjectId,
    /// Its KEM.
    pub kem: envelope::hpke::KemId,
    /// The recipient's private key bytes.
    pub secret: Vec<u8>,
    /// Where the writer put the header.
    pub placement: envelope::v2::Placement,
    /// The header.
    pub header: Vec<u8>,
    /// The chunks.
    pub chunks: Vec<u8>,
    /// The plaintext.
    pub plaintext: Vec<u8>,
}

/// Every golden v2 object.
pub const V2_FILES: [&str; 7] = [
    include_str!("../../envelope/tests/golden/v2-ml-kem-768-prefix.json"),
    include_str!("../../envelope/tests/golden/v2-ml-kem-768-metadata.json"),
    include_str!("../../envelope/tests/golden/v2-ml-kem-1024-prefix.json"),
    include_str!("../../envelope/tests/golden/v2-x-wing-prefix.json"),
    include_str!("../../envelope/tests/golden/v2-x-wing-metadata.json"),
    include_str!("../../envelope/tests/golden/v2-x25519-prefix.json"),
    include_str!("../../envelope/tests/golden/v2-x25519-metadata.json"),
];

/// Parses one golden v2 file.
pub fn golden_v2(text: &str) -> GoldenV2 {
    use envelope::hpke::KemId;
    use envelope::v2::Placement;
    let d: Value = serde_json::from_str(text).unwrap();
    let kem = [
        KemId::X25519,
        KemId::MlKem768,
        KemId::MlKem1024,
        KemId::XWing,
    ]
    .into_iter()
    .find(|k| k.name() == d["kem"].as_str().unwrap())
    .unwrap();
    let placement = match d["placement"].as_str().unwrap() {
        "metadata" => Placement::Metadata,
        _ => Placement::Prefix,
    };
    let h = |k: &str| hex::decode(d[k].as_str().unwrap()).unwrap();
    GoldenV2 {
        id: id_of(&d),
        kem,
        secret: h("secret_key_hex"),
        placement,
        header: h("header_hex"),
        chunks: h("chunks_hex"),
        plaintext: h("plaintext_hex"),
    }
}

/// The `run_dir` target's fixture: a real process directory, compiled in, installed once
/// in a temporary directory and restored after each execution.
pub mod run_dir {
    use std::path::{Path, PathBuf};

    use sha2::{Digest as _, Sha256};

    /// The files of the fixture's process directory, with their bytes.
    pub const FILES: [(&str, &[u8]); 6] = [
        (
            "records.parquet",
            include_bytes!("../fixtures/run-dir/p0/records.parquet"),
        ),
        (
            "samples.parquet",
            include_bytes!("../fixtures/run-dir/p0/samples.parquet"),
        ),
        (
            "process.json",
            include_bytes!("../fixtures/run-dir/p0/process.json"),
        ),
        (
            "spec.json",
            include_bytes!("../fixtures/run-dir/p0/spec.json"),
        ),
        (
            "summary.json",
            include_bytes!("../fixtures/run-dir/p0/summary.json"),
        ),
        (
            "SHA256SUMS",
            include_bytes!("../fixtures/run-dir/p0/SHA256SUMS"),
        ),
    ];

    /// `SHA256SUMS` for the fixture with `name`'s content replaced by `bytes`.
    pub fn sums_with(name: &str, bytes: &[u8]) -> String {
        FILES
            .iter()
            .filter(|(n, _)| *n != "SHA256SUMS")
            .map(|(n, b)| {
                let content = if *n == name { bytes } else { b };
                format!("{}  {n}\n", hex::encode(Sha256::digest(content)))
            })
            .collect()
    }

    /// The installed fixture: `<tmp>/<runId>/p0/`.
    pub struct Fixture {
        _tmp: tempfile::TempDir,
        root: PathBuf,
    }

    impl Fixture {
        /// Writes the fixture into a new temporary directory (in /dev/shm when it exists:
        /// every execution writes two files).
        pub fn install() -> Self {
            let shm = Path::new("/dev/shm");
            let tmp = if shm.is_dir() {
                tempfile::tempdir_in(shm)
            } else {
                tempfile::tempdir()
            }
            .expect("a temporary directory");
            let root = tmp.path().to_path_buf();
            let fx = Self { _tmp: tmp, root };
            std::fs::create_dir_all(fx.process_dir()).expect("create the process directory");
            for (name, _) in FILES {
                fx.restore(name);
            }
            fx
        }

        /// The data set's root (what `pqbench validate` is given).
        pub fn root(&self) -> &Path {
            &self.root
        }

        /// The process directory.
        pub fn process_dir(&self) -> PathBuf {
            self.root.join("fuzz-run").join("p0")
        }

        /// Puts `name` and `SHA256SUMS` back as the fixture has them.
        pub fn restore(&self, name: &str) {
            let dir = self.process_dir();
            for (n, b) in FILES {
                if n == name || n == "SHA256SUMS" {
                    std::fs::write(dir.join(n), b).expect("restore the fixture");
                }
            }
        }
    }
}
