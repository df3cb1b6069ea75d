//! The interop matrix (issue 40): before anything is timed, every backend seals and every
//! backend opens, in every mode it implements and in both formats, so that a comparison of
//! two implementations never times a pair whose objects the other cannot read.
//!
//! A cell is one round trip: a fresh object sealed on `sealer` to the mode's golden key
//! (`tests/golden/`, the keys the known-answer gate uses) and opened on `opener` to the same
//! plaintext. The plaintext is 70,000 bytes, so that every object has a full chunk and a
//! short last one. Format v1 is [`crate::seal_stream`]/[`crate::open_stream`]; format v2 is
//! [`crate::v2::seal`]/[`crate::v2::open`] in placement prefix (the placement does not change
//! the cryptography; prefix holds every v2 suite, ML-KEM-1024's header included).
//!
//! [`backend_info`] says what each backend is: its crates and versions (pinned exactly in
//! the workspace and checked against `Cargo.lock` by a test) and the CPU features its
//! run-time dispatch can use on this machine.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};

use crate::{
    Backend, Mode, ObjectId, PublicKey, Receiver, Result, SealKey, SecretKey, Sender, gate, v2,
};

/// An object format the matrix checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// FORMAT.md: manifest beside the body.
    V1,
    /// FORMAT-v2.md: an HPKE-wrapped header in the object.
    V2,
}

impl Format {
    /// Both formats.
    pub const ALL: [Format; 2] = [Format::V1, Format::V2];

    /// Whether `mode` exists in this format: v2 wraps with HPKE to the KEMs of modes
    /// x25519, ml-kem-768, ml-kem-1024 and x-wing (the padded and session modes are v1
    /// constructions).
    pub fn has(self, mode: Mode) -> bool {
        match self {
            Format::V1 => true,
            Format::V2 => matches!(
                mode,
                Mode::X25519 | Mode::MlKem768 | Mode::MlKem1024 | Mode::XWing
            ),
        }
    }

    /// `v1` or `v2`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::V1 => "v1",
            Format::V2 => "v2",
        }
    }
}

/// One round trip of the matrix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// The mode.
    pub mode: Mode,
    /// The format.
    pub format: Format,
    /// The backend that sealed.
    pub sealer: Backend,
    /// The backend that opened.
    pub opener: Backend,
    /// `None`: the object opened to its plaintext; else what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Cell {
    /// Whether the round trip succeeded.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// What a backend is: its crates and the CPU features it can use here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendInfo {
    /// The backend.
    pub backend: Backend,
    /// `crate version` of each crate the backend's modes run on.
    pub crates: Vec<String>,
    /// The CPU features the backend's run-time dispatch can use that this CPU has.
    pub cpu_features: Vec<String>,
}

/// The matrix: every (mode, format, sealer, opener) of the backends that implement the mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Matrix {
    /// The backends, with their versions and CPU features.
    pub backends: Vec<BackendInfo>,
    /// Every round trip.
    pub cells: Vec<Cell>,
}

impl Matrix {
    /// The round trips that failed.
    pub fn failures(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(|c| !c.ok())
    }

    /// The failed round trips between two backends of `backends` (both directions, any
    /// mode and format): what refuses a campaign that compares them.
    pub fn failures_among<'a>(&'a self, backends: &'a [Backend]) -> impl Iterator<Item = &'a Cell> {
        self.failures()
            .filter(|c| backends.contains(&c.sealer) && backends.contains(&c.opener))
    }

    /// Refuses when two of `backends` do not interoperate, naming the failed round trips.
    pub fn require_among(&self, backends: &[Backend]) -> Result<()> {
        refuse(self.failures_among(backends))
    }

    /// Refuses when `backend` does not interoperate with any backend of the matrix (the
    /// run engine's check, beside the known-answer gate's own cross-checks).
    pub fn require_involving(&self, backend: Backend) -> Result<()> {
        refuse(
            self.failures()
                .filter(|c| c.sealer == backend || c.opener == backend),
        )
    }

    /// The headline and each backend's crates, in words.
    pub fn words(&self) -> String {
        let backends: Vec<String> = self
            .backends
            .iter()
            .map(|b| format!("{} ({})", b.backend, b.crates.join(", ")))
            .collect();
        format!("{}; {}", self.headline(), backends.join("; "))
    }

    /// One line: "84 of 84 round trips (3 backends, 6 modes, v1 and v2)".
    pub fn headline(&self) -> String {
        headline(&self.cells, self.backends.len())
    }
}

/// The headline of `cells` checked over `backends` backends (a matrix's, or a merge of
/// several runs' matrices).
pub fn headline(cells: &[Cell], backends: usize) -> String {
    let ok = cells.iter().filter(|c| c.ok()).count();
    let modes: std::collections::BTreeSet<_> = cells.iter().map(|c| c.mode).collect();
    let formats: std::collections::BTreeSet<_> = cells.iter().map(|c| c.format.name()).collect();
    format!(
        "{ok} of {} round trips interoperate ({backends} backends, {} modes, {})",
        cells.len(),
        modes.len(),
        formats.into_iter().collect::<Vec<_>>().join(" and ")
    )
}

/// The refusal of failed round trips, each named (`Ok` when there are none).
fn refuse<'a>(failed: impl Iterator<Item = &'a Cell>) -> Result<()> {
    let failed: Vec<String> = failed
        .map(|c| {
            format!(
                "{} {} sealed on {} does not open on {}: {}",
                c.mode,
                c.format.name(),
                c.sealer,
                c.opener,
                c.error.as_deref().unwrap_or("")
            )
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(crate::Error::Usage(format!(
            "the backends do not interoperate, so their comparison is refused before timing: {}",
            failed.join("; ")
        )))
    }
}

/// The crates behind each backend (`name`, `version`), pinned exactly in `Cargo.toml`.
pub fn crates(backend: Backend) -> &'static [(&'static str, &'static str)] {
    match backend {
        Backend::AwsLc => &[("aws-lc-rs", "1.19.0"), ("aws-lc-sys", "0.47.0")],
        Backend::RustCrypto => &[
            ("ml-kem", "0.3.4"),
            ("x-wing", "0.1.1"),
            ("x25519-dalek", "3.0.0"),
            ("rsa", "0.10.0"),
            ("aes-gcm", "0.11.1"),
            ("hkdf", "0.13.0"),
            ("sha3", "0.12.0"),
        ],
        Backend::Libcrux => &[
            ("libcrux-ml-kem", "0.0.11"),
            ("libcrux-kem", "0.0.10"),
            ("libcrux-curve25519", "0.0.9"),
            ("libcrux-sha3", "0.0.11"),
            ("aws-lc-rs", "1.19.0"),
        ],
        Backend::OpenSsl => &[
            ("openssl", "0.10.82"),
            ("openssl-sys", "0.9.118"),
            ("openssl-src", "300.6.1+3.6.3"),
        ],
    }
}

/// The CPU features `backend` dispatches on at run time that this CPU has.
#[cfg(target_arch = "x86_64")]
pub fn cpu_features(backend: Backend) -> Vec<&'static str> {
    use std::arch::is_x86_feature_detected as has;
    let candidates: Vec<(&'static str, bool)> = match backend {
        // AWS-LC's and OpenSSL's capability vectors: AES-NI and CLMUL for GCM, AVX2 and
        // BMI2/ADX for X25519's (and AWS-LC's ML-KEM's) assembly, AVX-512 for AES-GCM.
        Backend::AwsLc | Backend::OpenSsl => vec![
            ("aes", has!("aes")),
            ("pclmulqdq", has!("pclmulqdq")),
            ("avx2", has!("avx2")),
            ("bmi2", has!("bmi2")),
            ("adx", has!("adx")),
            ("avx512f", has!("avx512f")),
        ],
        // The `aes` and `polyval` crates detect AES-NI and CLMUL; `ml-kem` is portable.
        Backend::RustCrypto => vec![("aes", has!("aes")), ("pclmulqdq", has!("pclmulqdq"))],
        // libcrux-ml-kem's multiplexed API runs its AVX2 code when the CPU has it; the data
        // layer is AWS-LC's AES-NI and CLMUL.
        Backend::Libcrux => vec![
            ("avx2", libcrux_platform::simd256_support()),
            ("aes", has!("aes")),
            ("pclmulqdq", has!("pclmulqdq")),
        ],
    };
    candidates
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect()
}

/// The CPU features `backend` dispatches on at run time that this CPU has (none reported
/// off x86-64).
#[cfg(not(target_arch = "x86_64"))]
pub fn cpu_features(_: Backend) -> Vec<&'static str> {
    Vec::new()
}

/// What `backend` is (see [`BackendInfo`]).
pub fn backend_info(backend: Backend) -> BackendInfo {
    BackendInfo {
        backend,
        crates: crates(backend)
            .iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect(),
        cpu_features: cpu_features(backend)
            .into_iter()
            .map(str::to_owned)
            .collect(),
    }
}

/// The plaintext of every cell: a full chunk and a short one.
fn plaintext() -> Vec<u8> {
    (0..70_000u32)
        .map(|i| u8::try_from(i % 251).unwrap_or(0))
        .collect()
}

/// The golden secret key of `mode` (`None` for plaintext).
fn golden_key(mode: Mode) -> Result<Option<SecretKey>> {
    let g = gate::golden(mode)?;
    g.secret_key_b64
        .as_deref()
        .map(|s| {
            let bytes = B64
                .decode(s)
                .map_err(|_| crate::Error::Usage(format!("golden key of {mode} is not base64")))?;
            SecretKey::from_bytes(mode.key_type(), bytes)
        })
        .transpose()
}

/// Runs the matrix over `modes` × [`Format::ALL`] × every ordered pair of `backends`
/// (a backend with itself included) that implement the mode. Pure computation: a few
/// milliseconds per cell (RSA-4096 decryption on `rustcrypto` is the slowest).
pub fn matrix(modes: &[Mode], backends: &[Backend]) -> Matrix {
    let pt = plaintext();
    let mut cells = Vec::new();
    for &mode in modes {
        let key = golden_key(mode);
        for format in Format::ALL.into_iter().filter(|f| f.has(mode)) {
            for &sealer in backends.iter().filter(|b| b.supports(mode)) {
                for &opener in backends.iter().filter(|b| b.supports(mode)) {
                    let error = match &key {
                        Ok(sk) => round_trip(mode, format, sealer, opener, sk.as_ref(), &pt)
                            .err()
                            .map(|e| e.to_string()),
                        Err(e) => Some(e.to_string()),
                    };
                    cells.push(Cell {
                        mode,
                        format,
                        sealer,
                        opener,
                        error,
                    });
                }
            }
        }
    }
    Matrix {
        backends: backends.iter().map(|b| backend_info(*b)).collect(),
        cells,
    }
}

/// One cell: seal on `sealer`, open on `opener`, compare.
fn round_trip(
    mode: Mode,
    format: Format,
    sealer: Backend,
    opener: Backend,
    sk: Option<&SecretKey>,
    pt: &[u8],
) -> Result<()> {
    let id = ObjectId::new_version("interop", "matrix", &format!("{mode}-{}", format.name()))?;
    let pk: Option<PublicKey> = sk.map(SecretKey::public_key).transpose()?.flatten();
    let back = match format {
        Format::V1 => {
            let key = match (&pk, sk) {
                (Some(p), _) => SealKey::Public(p),
                (None, Some(s)) => SealKey::Psk(s),
                (None, None) => SealKey::None,
            };
            let sender = Sender::new(mode, sealer, key)?;
            let mut body = Vec::new();
            let sealed = crate::seal_stream(
                &sender,
                &id,
                pt.len() as u64,
                pt,
                &mut body,
                &mut crate::os_rng(),
            )?;
            let receiver = Receiver::new(mode, opener, sk)?;
            let mut out = Vec::new();
            crate::open_stream(&receiver, &id, &sealed.manifest, &body[..], &mut out)?;
            out
        }
        Format::V2 => {
            let (Some(pk), Some(sk)) = (&pk, sk) else {
                return Err(crate::Error::Usage(format!("{mode} has no v2 suite")));
            };
            let kem = v2::kem_of(mode.key_type())
                .ok_or_else(|| crate::Error::Usage(format!("{mode} has no v2 suite")))?;
            let to = [v2::To {
                kem,
                public: pk.as_bytes(),
            }];
            let sealed = v2::seal(
                sealer,
                &id,
                &to,
                false,
                v2::Placement::Prefix,
                pt,
                &mut crate::os_rng(),
            )?;
            let receiver = v2::Receiver::new(opener, sk)?;
            v2::open(
                &id,
                receiver.key(),
                &sealed.header,
                v2::Placement::Prefix,
                &sealed.chunks,
            )?
            .to_vec()
        }
    };
    if back == pt {
        Ok(())
    } else {
        Err(crate::Error::Usage(
            "the object opened to a different plaintext".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_interoperates_in_every_mode_and_format() {
        let m = matrix(&Mode::ALL, &Backend::ALL);
        let failures: Vec<_> = m.failures().collect();
        assert!(failures.is_empty(), "{failures:#?}");
        // 9 modes on every backend (n² ordered pairs), the 2 RSA modes on aws-lc and
        // rustcrypto (4 pairs), in v1; the 4 v2 suites on every backend in v2.
        let n = Backend::ALL.len();
        let cells = 9 * n * n + 2 * 4 + 4 * n * n;
        assert_eq!(m.cells.len(), cells);
        assert!(
            m.headline().starts_with(&format!(
                "{cells} of {cells} round trips interoperate ({n} backends, 11 modes"
            )),
            "{}",
            m.headline()
        );
    }

    /// A backend that computes wrong ML-KEM secrets fails exactly its cells, and the
    /// campaign check names it.
    #[test]
    fn a_corrupted_backend_fails_its_cells() {
        use crate::mlkem::fault::{Fault, inject};
        let m = inject(Backend::Libcrux, Fault::Decapsulate, || {
            matrix(&[Mode::MlKem768, Mode::X25519], &Backend::ALL)
        });
        let failed: Vec<_> = m.failures().map(|c| (c.mode, c.format, c.opener)).collect();
        // Opened on libcrux: from each sealer, in v1 and v2.
        assert_eq!(failed.len(), 2 * Backend::ALL.len(), "{failed:?}");
        assert!(
            failed
                .iter()
                .all(|(mode, _, o)| *mode == Mode::MlKem768 && *o == Backend::Libcrux)
        );
        assert_eq!(
            m.failures_among(&[Backend::AwsLc, Backend::Libcrux])
                .count(),
            4
        );
        assert_eq!(
            m.failures_among(&[Backend::AwsLc, Backend::RustCrypto])
                .count(),
            0
        );
    }

    /// The versions reported are the versions built: each pinned crate is in `Cargo.lock`
    /// at that version.
    #[test]
    fn reported_versions_are_the_locked_versions() {
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
            .expect("Cargo.lock");
        for b in Backend::ALL {
            for (name, version) in crates(b) {
                let entry = format!("name = \"{name}\"\nversion = \"{version}\"");
                assert!(lock.contains(&entry), "{b}: {name} {version} is not locked");
            }
        }
    }
}
