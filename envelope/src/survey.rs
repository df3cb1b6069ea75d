//! What a stored version's envelope says of its protection, read from public bytes only (a
//! v1 `manifest.json`, a v2 header): the classification `pqbench inventory` counts
//! (`docs/src/envelope/migration.md`). No key is needed and none is touched.
//!
//! - FORMAT.md §5 (a v1 manifest's mode and recipient key id) and §7 (key ids);
//! - FORMAT-v2.md §3 (each KEM's strength; "Mixed strength") and §4 (the header).

use crate::hpke::KemId;
use crate::v2::{self, Placement};
use crate::{Format, KeyType, Manifest, Mode, Result};

/// How a version's data key is protected against a quantum adversary who records it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protection {
    /// Every wrap is post-quantum (ML-KEM, X-Wing, or the concatenated hybrid).
    PostQuantum,
    /// Post-quantum and classical wraps in one object (v2 `--allow-mixed`): as strong as
    /// the classical one.
    Mixed,
    /// Only classical wraps (X25519, RSA-OAEP).
    Classical,
    /// A pre-shared 256-bit key, no KEM (v1 `psk`).
    Symmetric,
    /// Not encrypted (v1 `plaintext`, the study's B0).
    Plaintext,
}

impl Protection {
    /// Every class, in the order reports list them.
    pub const ALL: [Protection; 5] = [
        Protection::Classical,
        Protection::Mixed,
        Protection::PostQuantum,
        Protection::Symmetric,
        Protection::Plaintext,
    ];

    /// The class's name in reports and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Protection::PostQuantum => "post-quantum",
            Protection::Mixed => "mixed",
            Protection::Classical => "classical",
            Protection::Symmetric => "symmetric",
            Protection::Plaintext => "plaintext",
        }
    }

    /// Whether a migration to post-quantum recipients moves versions of this class.
    pub const fn needs_migration(self) -> bool {
        matches!(self, Protection::Classical | Protection::Mixed)
    }
}

/// One wrap of the data key: who can open the version, and with what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wrap {
    /// The recipient key's type name (`ml-kem-768`, `x25519`, `rsa-4096`, …), the same for
    /// v1 and v2.
    pub kem: &'static str,
    /// The recipient's key id, hex (`None` where the format records none: v1 `psk`).
    pub key_id: Option<String>,
    /// Whether the KEM resists a quantum adversary.
    pub post_quantum: bool,
    /// The recipient's key type (what a throwaway key of the same kind is generated as).
    pub key_type: KeyType,
}

/// The key type of a v2 KEM (FORMAT-v2.md §3; the inverse of [`v2::kem_of`]).
pub const fn key_type_of(kem: KemId) -> KeyType {
    match kem {
        KemId::X25519 => KeyType::X25519,
        KemId::MlKem768 => KeyType::MlKem768,
        KemId::MlKem1024 => KeyType::MlKem1024,
        KemId::XWing => KeyType::XWing,
    }
}

/// What one version's envelope says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sealing {
    /// v1 or v2.
    pub format: Format,
    /// The v1 mode (`None` for v2, whose recipients each name their KEM).
    pub mode: Option<Mode>,
    /// The v2 header's placement (`None` for v1).
    pub placement: Option<Placement>,
    /// The data key's wraps, in the envelope's order (none for `plaintext`).
    pub wraps: Vec<Wrap>,
    /// Whether the envelope commits to its data key (v2 does, v1 does not).
    pub commitment: bool,
    /// Whether a holder of the data key can replace the recipients without touching the
    /// body: a v2.1 header (FORMAT-v2.md §10).
    pub rewrappable: bool,
    /// The plaintext's size, as the envelope states it.
    pub plaintext_size: u64,
    /// The class.
    pub protection: Protection,
}

impl Sealing {
    /// A v1 version's, from its `manifest.json` (at most [`crate::MAX_MANIFEST_LEN`] bytes,
    /// parsed and checked as a reader checks it).
    pub fn of_manifest(bytes: &[u8]) -> Result<Self> {
        let mode = Manifest::peek_mode(bytes)?;
        let m = Manifest::parse(bytes, mode)?;
        let key_id = Some(m.ctx.recipient_key_id.clone()).filter(|k| !k.is_empty());
        let wraps = if mode == Mode::Plaintext {
            Vec::new()
        } else {
            vec![Wrap {
                kem: mode.key_type().name(),
                key_id,
                post_quantum: mode.post_quantum(),
                key_type: mode.key_type(),
            }]
        };
        let protection = match mode {
            Mode::Plaintext => Protection::Plaintext,
            Mode::Psk => Protection::Symmetric,
            m if m.post_quantum() => Protection::PostQuantum,
            _ => Protection::Classical,
        };
        Ok(Sealing {
            format: Format::V1,
            mode: Some(mode),
            placement: None,
            wraps,
            commitment: false,
            rewrappable: false,
            plaintext_size: m.ctx.plaintext_size,
            protection,
        })
    }

    /// A v2 version's, from its header's bytes (checked as a reader's checks 1, 2, 3 and 5
    /// check it; `found` is where the header was: the flag must agree).
    pub fn of_v2_header(bytes: &[u8], found: Placement) -> Result<Self> {
        let (h, _) = v2::Header::parse(bytes)?;
        if h.placement != found {
            return Err(crate::Error::Header(format!(
                "the header says placement {:?} but was found in {found:?}",
                h.placement
            )));
        }
        let wraps: Vec<Wrap> = h
            .recipients
            .iter()
            .map(|e| Wrap {
                kem: key_type_of(e.kem).name(),
                key_id: Some(hex::encode(e.key_id)),
                post_quantum: e.kem.post_quantum(),
                key_type: key_type_of(e.kem),
            })
            .collect();
        let pq = wraps.iter().filter(|w| w.post_quantum).count();
        let protection = match (pq, wraps.len() - pq) {
            (_, 0) => Protection::PostQuantum,
            (0, _) => Protection::Classical,
            _ => Protection::Mixed,
        };
        Ok(Sealing {
            format: Format::V2,
            mode: None,
            placement: Some(h.placement),
            wraps,
            commitment: true,
            rewrappable: h.origin_hash.is_some(),
            plaintext_size: h.plaintext_size,
            protection,
        })
    }

    /// The KEMs of the wraps, joined with `+` in order (`"none"` for plaintext).
    pub fn kems(&self) -> String {
        if self.wraps.is_empty() {
            return "none".into();
        }
        let names: Vec<&str> = self.wraps.iter().map(|w| w.kem).collect();
        names.join("+")
    }
}
