//! Format v2 (`FORMAT-v2.md`): the binary header, the HPKE-wrapped data key with its
//! commitment, and the chunks. Section numbers below are FORMAT-v2.md's.
//!
//! [`Sealer`] builds the header at once and then seals chunk by chunk (so a store can send
//! the header first, or put it in the request's metadata, and stream the body); [`Opener`]
//! checks the header against the identity the reader asked for (§4), unwraps the
//! data key with the reader's entry (§5), checks the commitment before any chunk (§5), and
//! opens the chunks one at a time (§6). [`Sender`] and [`Receiver`] hold the keys;
//! [`seal`] and [`open`] do the same in memory.
//!
//! Errors (§4 "Errors"): a header that fails a structure check (checks 1-3 and 5: public
//! bytes, before any key is used) is [`Error::Header`], naming the check; the identity
//! (check 4), the reader's entry, the unwrap, the commitment, the body's length and every
//! chunk are the one opaque [`Error::Decrypt`].
//!
//! v2.1 (§10, header `version = 3`): the chunks bind `body_hash` instead of the whole
//! header and every wrap's AAD covers the recipient entries, so a holder of the data key
//! can write a new header for the same body ([`Receiver::rewrap`]). A [`Sender`] writes
//! v2.1 when made so ([`Sender::with_header_version`]); readers take both.

use std::time::Instant;

use rand_core::CryptoRng;
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use crate::ctx::{MAX_PLAINTEXT_SIZE, ObjectId};
use crate::hpke::{self, AeadId, KdfId, KemId, PrivateKey, Randomness, Suite};
use crate::symmetric::{Aead, NONCE_LEN, TAG_LEN, sha256};
use crate::{Backend, Error, KeyRequest, KeyType, PublicKey, Result, SecretKey, StageTimes};

/// `magic`: ASCII `PQB2`.
pub const MAGIC: [u8; 4] = *b"PQB2";
/// `version` of a v2 header.
pub const VERSION: u8 = 2;
/// `version` of a v2.1 header (§10): re-wrappable.
pub const VERSION_REWRAPPABLE: u8 = 3;
/// Most recipients per object.
pub const MAX_RECIPIENTS: usize = 16;
/// The chunk size (as v1).
pub const CHUNK_SIZE: u32 = 4_194_304;
/// The user-metadata entry of placement metadata (§2).
pub const METADATA_KEY: &str = "pqbench-v2";
/// The largest header placement metadata can carry: `10 + len(b64(header)) ≤ 2048`.
pub const MAX_METADATA_HEADER: usize = 1527;
/// The largest header a reader accepts.
pub const MAX_HEADER: usize = 65_536;
/// The wrapped data key: 32 bytes and the AEAD tag.
const WRAPPED_LEN: usize = 48;
/// Bytes of the fixed part (§4).
pub const FIXED_LEN: usize = 91;
/// Bytes of a v2.1 header's fixed part (§10.1: `origin_hash` added).
pub const FIXED_LEN_REWRAPPABLE: usize = FIXED_LEN + 32;
const FLAG_MIXED: u8 = 0b01;
const FLAG_PREFIX: u8 = 0b10;
/// The suite of every wrap (§3).
const KDF: KdfId = KdfId::HkdfSha256;
const AEAD: AeadId = AeadId::Aes256Gcm;

/// Which header a writer writes: v2 (§4), or v2.1 (§10), whose recipients can be
/// replaced without touching the body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeaderVersion {
    /// `version = 2`.
    #[default]
    V2,
    /// `version = 3`: re-wrappable.
    V2_1,
}

impl HeaderVersion {
    /// `v2` or `v2.1`.
    pub const fn name(self) -> &'static str {
        match self {
            HeaderVersion::V2 => "v2",
            HeaderVersion::V2_1 => "v2.1",
        }
    }

    /// The fixed part's length.
    pub const fn fixed_len(self) -> usize {
        match self {
            HeaderVersion::V2 => FIXED_LEN,
            HeaderVersion::V2_1 => FIXED_LEN_REWRAPPABLE,
        }
    }

    /// The header's length for recipients of these KEMs: `fixed + Σ (86 + Nenc)`.
    pub fn header_len(self, kems: impl Iterator<Item = KemId>) -> usize {
        self.fixed_len() + kems.map(|k| 86 + k.enc_len()).sum::<usize>()
    }
}

/// Where the header travels (§2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// In the user-metadata entry [`METADATA_KEY`], base64.
    Metadata,
    /// At the start of the body.
    Prefix,
}

/// One recipient entry of a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The recipient's KEM.
    pub kem: KemId,
    /// The recipient's key id (`SHA-256` of its encoded public key).
    pub key_id: [u8; 32],
    /// HPKE `enc`.
    pub enc: Vec<u8>,
    /// The sealed data key.
    pub wrapped: Vec<u8>,
}

/// A parsed header (§4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Flag bit 0: strengths may be mixed.
    pub mixed: bool,
    /// Flag bit 1.
    pub placement: Placement,
    /// The identity's hash.
    pub identity_hash: [u8; 32],
    /// v2.1 (`version = 3`, §10) only: the `identity_hash` the body was sealed for.
    pub origin_hash: Option<[u8; 32]>,
    /// Plaintext bytes.
    pub plaintext_size: u64,
    /// The commitment to the data key.
    pub commitment: [u8; 32],
    /// The recipients.
    pub recipients: Vec<Entry>,
}

/// `SHA-256("pqbench-identity/2" ‖ 0x00 ‖ lp(tenant) ‖ lp(bucket) ‖ lp(key) ‖ lp(version))`.
pub fn identity_hash(id: &ObjectId) -> [u8; 32] {
    let mut b = b"pqbench-identity/2\0".to_vec();
    for part in [&id.tenant, &id.bucket, &id.key, &id.version] {
        lp(&mut b, part.as_bytes());
    }
    sha256(Backend::RustCrypto, &b)
}

fn lp(out: &mut Vec<u8>, x: &[u8]) {
    // Identity strings are at most 1,024 bytes (ObjectId::validate).
    out.extend_from_slice(&u16::try_from(x.len()).unwrap_or(u16::MAX).to_be_bytes());
    out.extend_from_slice(x);
}

/// `n` of v1's chunking: `max(1, ⌈size / 4 MiB⌉)`.
fn chunk_count(size: u64) -> u64 {
    size.div_ceil(u64::from(CHUNK_SIZE)).max(1)
}

/// The body length a header implies: the chunk ciphertexts (plus the header in prefix).
pub fn chunks_len(plaintext_size: u64) -> u64 {
    plaintext_size + chunk_count(plaintext_size) * TAG_LEN as u64
}

impl Header {
    /// The fixed part (§4): `magic` through `recipient_count`.
    fn fixed(&self, header_len: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(self.version().fixed_len());
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&header_len.to_be_bytes());
        b.push(match self.version() {
            HeaderVersion::V2 => VERSION,
            HeaderVersion::V2_1 => VERSION_REWRAPPABLE,
        });
        let mut flags = 0;
        if self.mixed {
            flags |= FLAG_MIXED;
        }
        if self.placement == Placement::Prefix {
            flags |= FLAG_PREFIX;
        }
        b.push(flags);
        b.extend_from_slice(&KDF.id().to_be_bytes());
        b.extend_from_slice(&AEAD.id().to_be_bytes());
        b.extend_from_slice(&self.identity_hash);
        if let Some(origin) = &self.origin_hash {
            b.extend_from_slice(origin);
        }
        b.extend_from_slice(&self.plaintext_size.to_be_bytes());
        b.extend_from_slice(&CHUNK_SIZE.to_be_bytes());
        b.extend_from_slice(&self.commitment);
        b.push(u8::try_from(self.recipients.len()).unwrap_or(u8::MAX));
        b
    }

    /// Which header this is: v2.1 when it has an `origin_hash`.
    pub fn version(&self) -> HeaderVersion {
        if self.origin_hash.is_some() {
            HeaderVersion::V2_1
        } else {
            HeaderVersion::V2
        }
    }

    /// The header's length: `91 + Σ (86 + Nenc)` (v2.1: `123 + …`).
    pub fn len(&self) -> usize {
        self.version().fixed_len()
            + self
                .recipients
                .iter()
                .map(|r| 86 + r.enc.len())
                .sum::<usize>()
    }

    /// Never: a header has its fixed part.
    pub fn is_empty(&self) -> bool {
        false
    }

    fn header_len(&self) -> u32 {
        u32::try_from(self.len()).unwrap_or(u32::MAX)
    }

    /// `SHA-256(fixed part)`.
    fn fixed_hash(&self) -> [u8; 32] {
        sha256(Backend::RustCrypto, &self.fixed(self.header_len()))
    }

    /// Every wrap's AAD: `fixed_hash` (v2, §5); `fixed_hash ‖ recipients_hash` (v2.1,
    /// §10.1), where `recipients_hash = SHA-256(Σ kem_id ‖ key_id ‖ lp(enc))` covers every
    /// entry but its `wrapped` field.
    fn wrap_aad(&self) -> Vec<u8> {
        let mut aad = self.fixed_hash().to_vec();
        if self.origin_hash.is_some() {
            let mut b = Vec::new();
            for r in &self.recipients {
                b.extend_from_slice(&r.kem.id().to_be_bytes());
                b.extend_from_slice(&r.key_id);
                lp(&mut b, &r.enc);
            }
            aad.extend_from_slice(&sha256(Backend::RustCrypto, &b));
        }
        aad
    }

    /// HKDF's salt for `PRK`: `identity_hash` (v2, §5), `origin_hash` (v2.1, §10.1).
    fn salt(&self) -> &[u8; 32] {
        self.origin_hash.as_ref().unwrap_or(&self.identity_hash)
    }

    /// What the chunks bind (§6, §10.1): v2, `("pqbench-v2 data", SHA-256(header))`; v2.1,
    /// `("pqbench-v2.1 data", body_hash)` with `body_hash = SHA-256("pqbench-v2.1 body" ‖
    /// 0x00 ‖ kdf_id ‖ aead_id ‖ origin_hash ‖ plaintext_size ‖ chunk_size ‖ commitment)`.
    fn chunk_binding(&self, backend: Backend, bytes: &[u8]) -> (&'static [u8], [u8; 32]) {
        match &self.origin_hash {
            None => (b"pqbench-v2 data", sha256(backend, bytes)),
            Some(origin) => {
                let mut b = b"pqbench-v2.1 body\0".to_vec();
                b.extend_from_slice(&KDF.id().to_be_bytes());
                b.extend_from_slice(&AEAD.id().to_be_bytes());
                b.extend_from_slice(origin);
                b.extend_from_slice(&self.plaintext_size.to_be_bytes());
                b.extend_from_slice(&CHUNK_SIZE.to_be_bytes());
                b.extend_from_slice(&self.commitment);
                (b"pqbench-v2.1 data", sha256(backend, &b))
            }
        }
    }

    /// The header's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = self.fixed(self.header_len());
        for r in &self.recipients {
            b.extend_from_slice(&r.kem.id().to_be_bytes());
            b.extend_from_slice(&r.key_id);
            b.extend_from_slice(&u16::try_from(r.enc.len()).unwrap_or(0).to_be_bytes());
            b.extend_from_slice(&r.enc);
            b.extend_from_slice(&u16::try_from(r.wrapped.len()).unwrap_or(0).to_be_bytes());
            b.extend_from_slice(&r.wrapped);
        }
        b
    }

    /// Parses a header from the start of `bytes` (reader checks 1, 3 and 5 of §4; the
    /// identity and the placement are [`open`]'s). Returns it and its length.
    pub fn parse(bytes: &[u8]) -> Result<(Self, usize)> {
        let mut r = Reader { b: bytes, at: 0 };
        if r.take(4)? != MAGIC {
            return Err(bad("magic is not PQB2"));
        }
        let header_len = usize::try_from(r.u32()?).unwrap_or(usize::MAX);
        if header_len > MAX_HEADER || header_len > bytes.len() {
            return Err(bad(&format!(
                "header_len {header_len} exceeds the header limit or the bytes available"
            )));
        }
        let mut r = Reader {
            b: &bytes[..header_len],
            at: 8,
        };
        let version = match r.u8()? {
            VERSION => HeaderVersion::V2,
            VERSION_REWRAPPABLE => HeaderVersion::V2_1,
            _ => return Err(bad("version is not 2 (v2) or 3 (v2.1)")),
        };
        let flags = r.u8()?;
        if flags & !(FLAG_MIXED | FLAG_PREFIX) != 0 {
            return Err(bad("reserved flag bits are set"));
        }
        if (r.u16()?, r.u16()?) != (KDF.id(), AEAD.id()) {
            return Err(bad("kdf_id/aead_id are not HKDF-SHA256/AES-256-GCM"));
        }
        let identity_hash = r.array()?;
        let origin_hash = match version {
            HeaderVersion::V2 => None,
            HeaderVersion::V2_1 => Some(r.array()?),
        };
        let plaintext_size = r.u64()?;
        if plaintext_size > (1 << 53) - 1 {
            return Err(bad("plaintext_size above 2^53 - 1"));
        }
        if r.u32()? != CHUNK_SIZE {
            return Err(bad("chunk_size is not 4194304"));
        }
        let commitment = r.array()?;
        let count = usize::from(r.u8()?);
        if !(1..=MAX_RECIPIENTS).contains(&count) {
            return Err(bad("recipient_count is not 1..16"));
        }
        let mut recipients: Vec<Entry> = Vec::with_capacity(count);
        for i in 0..count {
            let kem = KemId::from_id(r.u16()?)
                .ok_or_else(|| bad(&format!("recipient {i}: unknown kem_id")))?;
            let key_id = r.array()?;
            let enc_len = usize::from(r.u16()?);
            if enc_len != kem.enc_len() {
                return Err(bad(&format!(
                    "recipient {i}: enc_len is not the KEM's Nenc"
                )));
            }
            let enc = r.take(enc_len)?.to_vec();
            if usize::from(r.u16()?) != WRAPPED_LEN {
                return Err(bad(&format!("recipient {i}: wrapped_len is not 48")));
            }
            let wrapped = r.take(WRAPPED_LEN)?.to_vec();
            if recipients.iter().any(|e| e.key_id == key_id) {
                return Err(bad(&format!("recipient {i}: key_id listed twice")));
            }
            recipients.push(Entry {
                kem,
                key_id,
                enc,
                wrapped,
            });
        }
        if r.at != header_len {
            return Err(bad("header_len is not the length of the fields"));
        }
        let strengths = strengths(recipients.iter().map(|e| e.kem));
        let mixed = flags & FLAG_MIXED != 0;
        if mixed != (strengths == Strengths::Mixed) {
            return Err(bad(
                "the mixed-strength flag does not match the recipients' KEMs",
            ));
        }
        Ok((
            Self {
                mixed,
                placement: if flags & FLAG_PREFIX != 0 {
                    Placement::Prefix
                } else {
                    Placement::Metadata
                },
                identity_hash,
                origin_hash,
                plaintext_size,
                commitment,
                recipients,
            },
            header_len,
        ))
    }
}

fn bad(what: &str) -> Error {
    Error::Header(what.to_owned())
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| bad("truncated"))?;
        let out = &self.b[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }
}

#[derive(PartialEq, Eq)]
enum Strengths {
    PostQuantum,
    Classical,
    Mixed,
}

fn strengths(kems: impl Iterator<Item = KemId>) -> Strengths {
    let (mut pq, mut cl) = (false, false);
    for k in kems {
        if k.post_quantum() {
            pq = true;
        } else {
            cl = true;
        }
    }
    match (pq, cl) {
        (true, true) => Strengths::Mixed,
        (false, true) => Strengths::Classical,
        _ => Strengths::PostQuantum,
    }
}

/// `PRK = HKDF-Extract(salt, DK)`, the salt `identity_hash` (v2) or `origin_hash` (v2.1);
/// `commitment` and `K` expand from it (§5, §6, §10.1).
fn prk(dk: &[u8; 32], salt: &[u8; 32]) -> hkdf::Hkdf<sha2::Sha256> {
    hkdf::Hkdf::<sha2::Sha256>::new(Some(salt), dk)
}

fn expand32(prk: &hkdf::Hkdf<sha2::Sha256>, info: &[&[u8]]) -> Result<Zeroizing<[u8; 32]>> {
    let mut out = Zeroizing::new([0u8; 32]);
    prk.expand(&info.concat(), out.as_mut())
        .map_err(|_| Error::Crypto("v2: hkdf expand"))?;
    Ok(out)
}

/// `info_i` (§5; v2.1 §10.1 with its own label).
fn info(version: HeaderVersion, identity_hash: &[u8; 32], key_id: &[u8; 32]) -> Vec<u8> {
    let label: &[u8] = match version {
        HeaderVersion::V2 => b"pqbench-envelope/2\0",
        HeaderVersion::V2_1 => b"pqbench-envelope/2.1\0",
    };
    [label, identity_hash, key_id].concat()
}

fn chunk_nonce(j: u64) -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    n[4..].copy_from_slice(&j.to_be_bytes());
    n
}

fn chunk_ad(binding: &[u8; 32], j: u64, len: u64, last: bool) -> Vec<u8> {
    let mut ad = binding.to_vec();
    ad.extend_from_slice(&j.to_be_bytes());
    ad.extend_from_slice(&len.to_be_bytes());
    ad.push(u8::from(last));
    ad
}

/// A recipient to seal to: its KEM and encoded public key.
#[derive(Clone, Copy, Debug)]
pub struct To<'a> {
    /// The KEM.
    pub kem: KemId,
    /// The encoded public key (`Npk` bytes).
    pub public: &'a [u8],
}

/// A sealed version: the header and the chunk ciphertexts (in placement prefix the body is
/// `header ‖ chunks`; in placement metadata the header goes in [`METADATA_KEY`]).
pub struct Sealed {
    /// The header's bytes.
    pub header: Vec<u8>,
    /// `CT_0 ‖ … ‖ CT_{n−1}`.
    pub chunks: Vec<u8>,
}

/// The KEM v2 wraps to for a key type (`None`: the key type has no v2 suite; v2 wraps to
/// ML-KEM-768, ML-KEM-1024, X-Wing and X25519 keys, §3).
pub fn kem_of(key_type: KeyType) -> Option<KemId> {
    match key_type {
        KeyType::MlKem768 => Some(KemId::MlKem768),
        KeyType::MlKem1024 => Some(KemId::MlKem1024),
        KeyType::XWing => Some(KemId::XWing),
        KeyType::X25519 => Some(KemId::X25519),
        _ => None,
    }
}

fn v2_kem(key_type: KeyType) -> Result<KemId> {
    kem_of(key_type).ok_or_else(|| {
        Error::Key(format!(
            "a {} key has no format-v2 suite: v2 wraps to ml-kem-768, ml-kem-1024, x-wing or x25519 keys",
            key_type.name()
        ))
    })
}

/// A writer of v2 objects: the recipients' public keys, the backend, the placement and
/// whether mixed strengths are allowed. Checks what it can once, at construction.
#[derive(Clone, Debug)]
pub struct Sender {
    backend: Backend,
    recipients: Vec<(KemId, Vec<u8>)>,
    checked: Checked,
    placement: Placement,
    version: HeaderVersion,
}

impl Sender {
    /// A writer to `recipients` (1–16 distinct public keys of a v2 suite).
    pub fn new(
        backend: Backend,
        recipients: &[&PublicKey],
        allow_mixed: bool,
        placement: Placement,
    ) -> Result<Self> {
        if !backend.built() {
            return Err(crate::ossl::unavailable());
        }
        let recipients = recipients
            .iter()
            .map(|pk| Ok((v2_kem(pk.key_type())?, pk.as_bytes().to_vec())))
            .collect::<Result<Vec<_>>>()?;
        let to: Vec<To<'_>> = recipients
            .iter()
            .map(|(kem, public)| To { kem: *kem, public })
            .collect();
        let checked = check_recipients(backend, &to, allow_mixed, placement, HeaderVersion::V2)?;
        Ok(Self {
            backend,
            recipients,
            checked,
            placement,
            version: HeaderVersion::V2,
        })
    }

    /// This writer, writing headers of `version`: v2.1 (§10) is re-wrappable and 32 bytes
    /// longer, refused when the longer header no longer fits placement metadata.
    pub fn with_header_version(mut self, version: HeaderVersion) -> Result<Self> {
        fits(
            self.placement,
            version.header_len(self.recipients.iter().map(|r| r.0)),
        )?;
        self.version = version;
        Ok(self)
    }

    /// The header version this writer writes.
    pub fn header_version(&self) -> HeaderVersion {
        self.version
    }

    fn to(&self) -> Vec<To<'_>> {
        self.recipients
            .iter()
            .map(|(kem, public)| To { kem: *kem, public })
            .collect()
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The placement.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The header's length for these recipients.
    pub fn header_len(&self) -> usize {
        self.version.header_len(self.recipients.iter().map(|r| r.0))
    }

    /// Starts sealing `size` plaintext bytes as version `id` (the recipients were checked,
    /// and their key ids computed, once in [`Sender::new`]).
    pub fn seal<R: CryptoRng + ?Sized>(
        &self,
        id: &ObjectId,
        size: u64,
        rng: &mut R,
    ) -> Result<Sealer> {
        Sealer::build(
            self.backend,
            id,
            &self.to(),
            &self.checked,
            (self.placement, self.version),
            size,
            rng,
        )
    }
}

/// A reader of v2 objects: one recipient's private key, loaded once.
pub struct Receiver {
    key: PrivateKey,
    key_id: [u8; 32],
    require_pq: bool,
}

impl Receiver {
    /// A reader with `key` (a secret key of a v2 suite) on `backend`.
    pub fn new(backend: Backend, key: &SecretKey) -> Result<Self> {
        if !backend.built() {
            return Err(crate::ossl::unavailable());
        }
        let kem = v2_kem(key.key_type())?;
        let key = PrivateKey::new(backend, kem, key.expose_secret())?;
        Ok(Self {
            key_id: sha256(backend, key.public()),
            key,
            require_pq: false,
        })
    }

    /// This reader, refusing any object with a classical-only recipient entry, and so any
    /// with the mixed-strength flag ([`Error::NotPostQuantum`], before any key is used). A classical
    /// key (X25519) is refused here: such a reader could open nothing.
    pub fn requiring_pq(mut self) -> Result<Self> {
        if !self.key.kem().post_quantum() {
            return Err(Error::Usage(format!(
                "--require-pq with a {:?} key: its entry in any object is classical, so every \
                 object would be refused; read with a post-quantum key",
                self.key.kem()
            )));
        }
        self.require_pq = true;
        Ok(self)
    }

    /// The reader's private key.
    pub fn key(&self) -> &PrivateKey {
        &self.key
    }

    /// Starts opening version `id` from its header as `found` (see [`Opener::new`]).
    pub fn open(&self, id: &ObjectId, header: &[u8], found: Placement) -> Result<Opener> {
        Opener::with_key_id(id, &self.key, &self.key_id, header, found, self.require_pq)
    }

    /// Re-wraps version `old`'s v2.1 header, as found in `found`, for version `new` to
    /// `to`'s recipients and placement (§10.1): this reader's entry gives the data key, its
    /// commitment is checked, and the key is wrapped anew; `origin_hash`, the size and the
    /// commitment stay, so the unchanged body opens under the new header. Returns the new
    /// header's bytes (always v2.1). A v2 header is refused ([`Error::NotRewrappable`]):
    /// its chunks bind the whole header.
    pub fn rewrap<R: CryptoRng + ?Sized>(
        &self,
        old: &ObjectId,
        header: &[u8],
        found: Placement,
        new: &ObjectId,
        to: &Sender,
        rng: &mut R,
    ) -> Result<Vec<u8>> {
        new.validate()?;
        let (h, entry, mut times) = check_header(
            old,
            &self.key_id,
            self.key.kem(),
            header,
            found,
            self.require_pq,
        )?;
        let Some(origin) = h.origin_hash else {
            return Err(Error::NotRewrappable);
        };
        fits(
            to.placement,
            HeaderVersion::V2_1.header_len(to.recipients.iter().map(|r| r.0)),
        )?;
        let ss = self.key.decap(&h.recipients[entry].enc)?;
        let (dk, _) = unwrap_key(
            &h,
            entry,
            &self.key_id,
            self.key.backend(),
            &ss[..],
            &mut times,
        )?;
        let mut new_header = Header {
            mixed: to.checked.mixed,
            placement: to.placement,
            identity_hash: identity_hash(new),
            origin_hash: Some(origin),
            plaintext_size: h.plaintext_size,
            commitment: h.commitment,
            recipients: Vec::new(),
        };
        wrap(
            to.backend,
            &mut new_header,
            &to.to(),
            &to.checked,
            &dk,
            rng,
            &mut times,
        )
    }
}

/// A reader of v2 objects whose private key is in a key service (issue 41): it holds the
/// recipient's public key only. Opening is in two steps: [`RemoteReceiver::begin`] checks
/// the header and names the one private-key operation ([`Pending::key_request`]: ML-KEM's
/// `Decap(enc)`, or X25519 with the entry's ephemeral key, DHKEM's `DH(skR, pkE)`), done by
/// the service; [`Pending::complete`] takes its answer and finishes HPKE's `SetupBaseR`
/// (for DHKEM, `ExtractAndExpand` over the DH output and `enc ‖ pkR`) and §5 locally.
pub struct RemoteReceiver {
    backend: Backend,
    kem: KemId,
    public: Vec<u8>,
    key_id: [u8; 32],
    require_pq: bool,
}

impl RemoteReceiver {
    /// A reader for the recipient `public` (ML-KEM-768, ML-KEM-1024 or X25519: the KEMs a
    /// key service decapsulates or agrees with) on `backend`.
    pub fn new(backend: Backend, public: &PublicKey) -> Result<Self> {
        if !backend.built() {
            return Err(crate::ossl::unavailable());
        }
        let kem = v2_kem(public.key_type())?;
        if !matches!(kem, KemId::MlKem768 | KemId::MlKem1024 | KemId::X25519) {
            return Err(Error::Key(format!(
                "a {:?} key cannot be in a key service: the remote KEMs are ML-KEM-768, \
                 ML-KEM-1024 and X25519",
                kem
            )));
        }
        let public = public.as_bytes().to_vec();
        Ok(Self {
            backend,
            kem,
            key_id: sha256(backend, &public),
            public,
            require_pq: false,
        })
    }

    /// This reader, refusing any object with a classical recipient entry (as
    /// [`Receiver::requiring_pq`]).
    pub fn requiring_pq(mut self) -> Result<Self> {
        if !self.kem.post_quantum() {
            return Err(Error::Usage(format!(
                "--require-pq with a {:?} key: its entry in any object is classical",
                self.kem
            )));
        }
        self.require_pq = true;
        Ok(self)
    }

    /// Checks version `id`'s header as found in `found` (§4) and finds the reader's entry.
    pub fn begin<'h>(
        &self,
        id: &ObjectId,
        header: &'h [u8],
        found: Placement,
    ) -> Result<Pending<'_, 'h>> {
        let (h, entry, times) =
            check_header(id, &self.key_id, self.kem, header, found, self.require_pq)?;
        Ok(Pending {
            receiver: self,
            header,
            h,
            entry,
            times,
        })
    }
}

/// A v2 object whose header checked, waiting for its key request's answer
/// ([`RemoteReceiver::begin`]).
pub struct Pending<'r, 'h> {
    receiver: &'r RemoteReceiver,
    header: &'h [u8],
    h: Header,
    entry: usize,
    times: StageTimes,
}

impl Pending<'_, '_> {
    /// What the key service must do: decapsulate the entry's `enc` (ML-KEM) or agree with
    /// it as the ephemeral public key (X25519).
    pub fn key_request(&self) -> Result<KeyRequest<'_>> {
        let enc = &self.h.recipients[self.entry].enc;
        match self.receiver.kem {
            KemId::X25519 => enc
                .as_slice()
                .try_into()
                .map(KeyRequest::Agree)
                .map_err(|_| Error::Decrypt),
            _ => Ok(KeyRequest::Decapsulate(enc)),
        }
    }

    /// Finishes opening with the service's answer `shared` (the ML-KEM shared secret, or
    /// the X25519 output), `took` long: a secret that is not 32 bytes, an all-zero X25519
    /// output, or a wrong one is the opaque [`Error::Decrypt`].
    pub fn complete(self, shared: &[u8], took: std::time::Duration) -> Result<Opener> {
        let r = self.receiver;
        if shared.len() != 32 {
            return Err(Error::Decrypt);
        }
        let mut times = self.times;
        let t = Instant::now();
        let ss = match r.kem {
            KemId::X25519 => {
                if bool::from(shared.ct_eq(&[0u8; 32])) {
                    return Err(Error::Decrypt);
                }
                let enc = &self.h.recipients[self.entry].enc;
                Zeroizing::new(hpke::dhkem_shared(r.backend, shared, enc, &r.public)?.to_vec())
            }
            _ => Zeroizing::new(shared.to_vec()),
        };
        times.key_establishment += took + t.elapsed();
        Opener::unwrap(
            self.header,
            self.h,
            self.entry,
            &r.key_id,
            r.backend,
            &ss,
            times,
        )
    }
}

impl crate::AwaitingKey for Pending<'_, '_> {
    type Opener = Opener;
    fn key_request(&self) -> Result<KeyRequest<'_>> {
        Pending::key_request(self)
    }
    fn complete(self, shared: &[u8], took: std::time::Duration) -> Result<Opener> {
        Pending::complete(self, shared, took)
    }
}

/// Why a header is not post-quantum only: its first classical recipient entry. (A header
/// with the mixed-strength flag has one: check 5 refuses the flag without it.)
fn not_post_quantum(h: &Header) -> Option<String> {
    let (i, e) = h
        .recipients
        .iter()
        .enumerate()
        .find(|(_, e)| !e.kem.post_quantum())?;
    Some(format!(
        "recipient {i} is {:?}, a classical KEM: whoever breaks it reads the object",
        e.kem
    ))
}

/// A writer's check that a header of `len` bytes fits `placement` (§2, §8).
fn fits(placement: Placement, len: usize) -> Result<()> {
    if placement == Placement::Metadata && len > MAX_METADATA_HEADER {
        return Err(Error::Usage(format!(
            "the v2 header is {len} bytes; S3's 2 KB of user metadata holds at most {MAX_METADATA_HEADER} (use the prefix placement)"
        )));
    }
    Ok(())
}

/// What checking a recipient list established: each recipient's key id and whether their
/// strengths are mixed.
#[derive(Clone, Debug)]
struct Checked {
    key_ids: Vec<[u8; 32]>,
    mixed: bool,
}

/// The writer's checks of §4-§5 on a recipient list: 1-16 recipients, mixed strengths only
/// when allowed, distinct keys, and a header that fits its placement.
fn check_recipients(
    backend: Backend,
    to: &[To<'_>],
    allow_mixed: bool,
    placement: Placement,
    version: HeaderVersion,
) -> Result<Checked> {
    if !(1..=MAX_RECIPIENTS).contains(&to.len()) {
        return Err(Error::Usage(format!(
            "a v2 object has 1 to {MAX_RECIPIENTS} recipients, not {}",
            to.len()
        )));
    }
    let mixed = strengths(to.iter().map(|t| t.kem)) == Strengths::Mixed;
    if mixed && !allow_mixed {
        return Err(Error::Usage(
            "refusing to mix post-quantum and classical recipients: the object would be only as strong as its classical wrap (allow it explicitly to record it in the header)".into(),
        ));
    }
    let key_ids: Vec<[u8; 32]> = to.iter().map(|t| sha256(backend, t.public)).collect();
    if key_ids
        .iter()
        .enumerate()
        .any(|(i, id)| key_ids[..i].contains(id))
    {
        return Err(Error::Usage("a recipient is listed twice".into()));
    }
    fits(placement, version.header_len(to.iter().map(|t| t.kem)))?;
    Ok(Checked { key_ids, mixed })
}

/// §4's checks of `header` as found in `found`, for the reader of key id `key_id` and KEM
/// `kem` asking for identity `id`: the structure ([`Error::Header`]), post-quantum entries
/// only with `require_pq` ([`Error::NotPostQuantum`]), the identity and the reader's entry
/// (the opaque [`Error::Decrypt`]). The header, the index of the reader's entry, and the
/// time taken as manifest handling.
fn check_header(
    id: &ObjectId,
    key_id: &[u8; 32],
    kem: KemId,
    header: &[u8],
    found: Placement,
    require_pq: bool,
) -> Result<(Header, usize, StageTimes)> {
    let t = Instant::now();

    let (h, len) = Header::parse(header)?;
    if len != header.len() {
        return Err(bad("bytes follow the header where only the header belongs"));
    }
    if h.placement != found {
        return Err(bad(
            "the header's placement flag does not say where it was found",
        ));
    }
    if found == Placement::Metadata && len > MAX_METADATA_HEADER {
        return Err(bad(&format!(
            "a header in metadata is at most {MAX_METADATA_HEADER} bytes; this one is {len}"
        )));
    }
    if require_pq && let Some(why) = not_post_quantum(&h) {
        return Err(Error::NotPostQuantum(why));
    }
    if !bool::from(h.identity_hash.ct_eq(&identity_hash(id))) {
        return Err(Error::Decrypt);
    }
    // The reader's entry: its key id and its key's KEM (§4); an entry with its key id
    // but another KEM is not the reader's.
    let entry = h
        .recipients
        .iter()
        .position(|e| e.key_id == *key_id && e.kem == kem)
        .ok_or(Error::Decrypt)?;
    let times = StageTimes {
        manifest: t.elapsed(),
        ..StageTimes::default()
    };
    Ok((h, entry, times))
}

/// The length of the header whose first 8 bytes (`magic ‖ header_len`) are `start`: how
/// many bytes of a prefix-placement body to read before [`Opener::new`] (§4 check 1).
pub fn announced_len(start: &[u8; 8]) -> Result<usize> {
    if start[..4] != MAGIC {
        return Err(bad("magic is not PQB2"));
    }
    let n = usize::try_from(u32::from_be_bytes([start[4], start[5], start[6], start[7]]))
        .unwrap_or(usize::MAX);
    if !(FIXED_LEN..=MAX_HEADER).contains(&n) {
        return Err(bad(&format!(
            "header_len {n} is outside {FIXED_LEN}..={MAX_HEADER}"
        )));
    }
    Ok(n)
}

/// The metadata entry's value for `header` (placement metadata, §2): `b64(header)`.
pub fn encode_metadata(header: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(header)
}

/// The header in a metadata entry's value, as the S3 API returns it: canonical padded
/// base64 (v1's rule; no whitespace anywhere) of at most [`MAX_METADATA_HEADER`] bytes
/// (§2, §4 check 1); anything else is [`Error::Header`].
pub fn decode_metadata(value: &str) -> Result<Vec<u8>> {
    use base64::Engine as _;
    if value.len() > MAX_METADATA_HEADER.div_ceil(3) * 4 {
        return Err(bad(&format!(
            "the metadata entry is longer than a header in metadata may be ({MAX_METADATA_HEADER} bytes)"
        )));
    }
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .map_err(|_| bad("the metadata entry is not canonical base64"))
}

/// Which chunk comes next and how long it is, shared by [`Sealer`] and [`Opener`].
struct Chunks {
    /// `SHA-256(header)` (v2) or `body_hash` (v2.1).
    binding: [u8; 32],
    aead: Aead,
    plaintext_size: u64,
    count: u64,
    next: u64,
}

impl Chunks {
    /// The chunks of the object whose parsed header is `h` and whose header bytes are
    /// `bytes`.
    fn new(
        prk: &hkdf::Hkdf<sha2::Sha256>,
        backend: Backend,
        h: &Header,
        bytes: &[u8],
    ) -> Result<Self> {
        let (label, binding) = h.chunk_binding(backend, bytes);
        let k = expand32(prk, &[label, &binding])?;
        let size = h.plaintext_size;
        Ok(Self {
            binding,
            aead: Aead::new(backend, &k)?,
            plaintext_size: size,
            count: chunk_count(size),
            next: 0,
        })
    }

    /// Plaintext length of the next chunk.
    fn next_len(&self) -> Option<usize> {
        (self.next < self.count).then(|| {
            let len = if self.next + 1 == self.count {
                self.plaintext_size - self.next * u64::from(CHUNK_SIZE)
            } else {
                u64::from(CHUNK_SIZE)
            };
            usize::try_from(len).unwrap_or(usize::MAX)
        })
    }

    fn ad(&self, len: usize) -> Vec<u8> {
        chunk_ad(
            &self.binding,
            self.next,
            len as u64,
            self.next + 1 == self.count,
        )
    }
}

/// Fills `header`'s recipient entries with `dk` wrapped to each of `to` (their key ids in
/// `checked`) and returns the header's bytes (§5; v2.1 §10.1). Every HPKE context is set up
/// first: v2.1's AAD covers every entry's `enc`.
fn wrap<R: CryptoRng + ?Sized>(
    backend: Backend,
    header: &mut Header,
    to: &[To<'_>],
    checked: &Checked,
    dk: &[u8; 32],
    rng: &mut R,
    times: &mut StageTimes,
) -> Result<Vec<u8>> {
    let t = Instant::now();
    let version = header.version();
    let mut contexts = Vec::with_capacity(to.len());
    header.recipients.clear();
    for (t, &key_id) in to.iter().zip(&checked.key_ids) {
        let suite = Suite {
            kem: t.kem,
            kdf: KDF,
            aead: AEAD,
        };
        let (enc, ctx) = hpke::setup_base_s(
            backend,
            suite,
            t.public,
            &info(version, &header.identity_hash, &key_id),
            Randomness::Rng(&mut *rng),
        )?;
        contexts.push(ctx);
        header.recipients.push(Entry {
            kem: t.kem,
            key_id,
            enc,
            wrapped: vec![0; WRAPPED_LEN],
        });
    }
    let aad = header.wrap_aad();
    for (e, ctx) in header.recipients.iter_mut().zip(&mut contexts) {
        e.wrapped = ctx.seal(&aad, &dk[..])?;
    }
    times.key_establishment += t.elapsed();
    let t = Instant::now();
    let bytes = header.encode();
    times.manifest += t.elapsed();
    Ok(bytes)
}

/// Seals one v2 object chunk by chunk: the header is known at once (§4, §5), so in placement
/// prefix it is sent first, and in placement metadata it goes with the request's headers.
pub struct Sealer {
    header: Vec<u8>,
    chunks: Chunks,
    times: StageTimes,
}

impl Sealer {
    /// Starts sealing `size` bytes as version `id` to `to` (1–16 recipients, distinct keys),
    /// §5. Mixing post-quantum and classical recipients needs `allow_mixed`; placement
    /// metadata refuses a header above [`MAX_METADATA_HEADER`] bytes.
    pub fn new<R: CryptoRng + ?Sized>(
        backend: Backend,
        id: &ObjectId,
        to: &[To<'_>],
        allow_mixed: bool,
        placement: Placement,
        size: u64,
        rng: &mut R,
    ) -> Result<Self> {
        let checked = check_recipients(backend, to, allow_mixed, placement, HeaderVersion::V2)?;
        Self::build(
            backend,
            id,
            to,
            &checked,
            (placement, HeaderVersion::V2),
            size,
            rng,
        )
    }

    /// [`Sealer::new`] for recipients already checked, writing a header of `version`.
    fn build<R: CryptoRng + ?Sized>(
        backend: Backend,
        id: &ObjectId,
        to: &[To<'_>],
        checked: &Checked,
        (placement, version): (Placement, HeaderVersion),
        size: u64,
        rng: &mut R,
    ) -> Result<Self> {
        let t = Instant::now();
        id.validate()?;
        if size > MAX_PLAINTEXT_SIZE {
            return Err(Error::Usage(format!(
                "plaintext of {size} bytes exceeds the largest object, {MAX_PLAINTEXT_SIZE} bytes"
            )));
        }
        let identity_hash = identity_hash(id);
        let origin_hash = (version == HeaderVersion::V2_1).then_some(identity_hash);
        let mut times = StageTimes {
            manifest: t.elapsed(),
            ..StageTimes::default()
        };

        let t = Instant::now();
        let mut dk = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(dk.as_mut());
        let prk = prk(&dk, origin_hash.as_ref().unwrap_or(&identity_hash));
        let commitment = *expand32(&prk, &[b"pqbench-v2 commitment"])?;
        times.key_derivation += t.elapsed();

        let mut header = Header {
            mixed: checked.mixed,
            placement,
            identity_hash,
            origin_hash,
            plaintext_size: size,
            commitment,
            recipients: Vec::new(),
        };
        let bytes = wrap(backend, &mut header, to, checked, &dk, rng, &mut times)?;
        let t = Instant::now();
        let chunks = Chunks::new(&prk, backend, &header, &bytes)?;
        times.key_derivation += t.elapsed();
        Ok(Self {
            header: bytes,
            chunks,
            times,
        })
    }

    /// The header's bytes.
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// `CT_0 ‖ … ‖ CT_{n−1}`'s length once every chunk is sealed.
    pub fn chunks_size(&self) -> u64 {
        chunks_len(self.chunks.plaintext_size)
    }

    /// Plaintext length the next [`Sealer::seal_chunk`] call must get (`None`: all sealed).
    pub fn next_chunk_len(&self) -> Option<usize> {
        self.chunks.next_len()
    }

    /// Encrypts the next chunk in place: `buf` holds exactly [`Sealer::next_chunk_len`]
    /// plaintext bytes and afterwards the ciphertext and its 16-byte tag.
    pub fn seal_chunk(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        let Some(want) = self.chunks.next_len() else {
            return Err(Error::Usage(
                "all chunks of this object are already sealed".into(),
            ));
        };
        if buf.len() != want {
            return Err(Error::Usage(format!(
                "chunk {} must hold {want} bytes, got {}",
                self.chunks.next,
                buf.len()
            )));
        }
        let t = Instant::now();
        let ad = self.chunks.ad(want);
        self.chunks
            .aead
            .seal_in_place(&chunk_nonce(self.chunks.next), &ad, buf)?;
        self.times.aead += t.elapsed();
        self.chunks.next += 1;
        Ok(())
    }

    /// Finishes the object (its stage timers); fails if a chunk is missing.
    pub fn finish(self) -> Result<StageTimes> {
        if self.chunks.next != self.chunks.count {
            return Err(Error::Usage(format!(
                "object not complete: {} of {} chunks sealed",
                self.chunks.next, self.chunks.count
            )));
        }
        Ok(self.times)
    }
}

/// The data key, unwrapped with entry `entry` of `h` (the reader's, key id `key_id`) from
/// the KEM's shared secret `ss`, its commitment checked (§5), and the `PRK` the chunk key
/// expands from: any failure is the opaque [`Error::Decrypt`].
fn unwrap_key(
    h: &Header,
    entry: usize,
    key_id: &[u8; 32],
    backend: Backend,
    ss: &[u8],
    times: &mut StageTimes,
) -> Result<(Zeroizing<[u8; 32]>, hkdf::Hkdf<sha2::Sha256>)> {
    let t = Instant::now();
    let e = &h.recipients[entry];
    let suite = Suite {
        kem: e.kem,
        kdf: KDF,
        aead: AEAD,
    };
    let mut ctx = hpke::setup_base_r_shared(
        backend,
        suite,
        ss,
        &info(h.version(), &h.identity_hash, key_id),
    )?;
    let dk_bytes = ctx.open(&h.wrap_aad(), &e.wrapped)?;
    times.key_establishment += t.elapsed();

    let t = Instant::now();
    let dk: Zeroizing<[u8; 32]> =
        Zeroizing::new(dk_bytes.as_slice().try_into().map_err(|_| Error::Decrypt)?);
    let prk = prk(&dk, h.salt());
    let commitment = expand32(&prk, &[b"pqbench-v2 commitment"])?;
    times.key_derivation += t.elapsed();
    if !bool::from(commitment.ct_eq(&h.commitment)) {
        return Err(Error::Decrypt);
    }
    Ok((dk, prk))
}

/// Opens one v2 object chunk by chunk, after every header check of §4 and the commitment
/// of §5 passed.
pub struct Opener {
    header: Header,
    chunks: Chunks,
    times: StageTimes,
}

impl Opener {
    /// Checks `header` (exactly the header's bytes: the decoded metadata entry, or the
    /// body's first [`announced_len`] bytes) as found in `found` against the identity `id`
    /// the reader asked for, unwraps the data key with `key`'s entry and checks the
    /// commitment (§4, §5). A structure check that fails is [`Error::Header`]; the identity,
    /// the reader's entry and every later failure are the opaque [`Error::Decrypt`].
    pub fn new(id: &ObjectId, key: &PrivateKey, header: &[u8], found: Placement) -> Result<Self> {
        let key_id = sha256(key.backend(), key.public());
        Self::with_key_id(id, key, &key_id, header, found, false)
    }

    /// [`Opener::new`] with `key`'s key id already computed (a [`Receiver`] keeps it).
    fn with_key_id(
        id: &ObjectId,
        key: &PrivateKey,
        key_id: &[u8; 32],
        header: &[u8],
        found: Placement,
        require_pq: bool,
    ) -> Result<Self> {
        let (h, entry, mut times) = check_header(id, key_id, key.kem(), header, found, require_pq)?;
        let t = Instant::now();
        let ss = key.decap(&h.recipients[entry].enc)?;
        times.key_establishment += t.elapsed();
        Self::unwrap(header, h, entry, key_id, key.backend(), &ss[..], times)
    }

    /// The data key unwrapped with the reader's entry's HPKE context from the KEM's
    /// shared secret `ss`, the commitment checked (§5), the chunks ready. `times` holds the
    /// key establishment so far; the unwrap adds to it.
    fn unwrap(
        header: &[u8],
        h: Header,
        entry: usize,
        key_id: &[u8; 32],
        backend: Backend,
        ss: &[u8],
        mut times: StageTimes,
    ) -> Result<Self> {
        let (_, prk) = unwrap_key(&h, entry, key_id, backend, ss, &mut times)?;
        let t = Instant::now();
        let chunks = Chunks::new(&prk, backend, &h, header)?;
        times.key_derivation += t.elapsed();
        Ok(Self {
            header: h,
            chunks,
            times,
        })
    }

    /// The checked header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Opens `chunks` (`CT_0 ‖ … ‖ CT_{n−1}`, all in memory) to the plaintext, each chunk
    /// only after it authenticated; a length that is not the header's is the opaque
    /// [`Error::Decrypt`].
    pub fn open_all(mut self, chunks: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        if chunks.len() as u64 != self.chunks_size() {
            return Err(Error::Decrypt);
        }
        let mut out = Zeroizing::new(Vec::with_capacity(
            usize::try_from(self.header.plaintext_size).unwrap_or(0),
        ));
        let mut at = 0;
        while let Some(n) = self.next_chunk_len() {
            let mut buf = chunks[at..at + n].to_vec();
            at += n;
            self.open_chunk(&mut buf)?;
            out.extend_from_slice(&buf);
        }
        self.finish()?;
        Ok(out)
    }

    /// `CT_0 ‖ … ‖ CT_{n−1}`'s expected length (the body after the header).
    pub fn chunks_size(&self) -> u64 {
        chunks_len(self.header.plaintext_size)
    }

    /// Ciphertext length (chunk and tag) the next [`Opener::open_chunk`] call must get
    /// (`None`: all chunks opened).
    pub fn next_chunk_len(&self) -> Option<usize> {
        self.chunks.next_len().map(|n| n + TAG_LEN)
    }

    /// Verifies and decrypts the next chunk in place: `buf` holds exactly
    /// [`Opener::next_chunk_len`] bytes, afterwards the plaintext. On failure `buf` is
    /// wiped and the error is the opaque [`Error::Decrypt`].
    pub fn open_chunk(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        let (Some(want), Some(plain)) = (self.next_chunk_len(), self.chunks.next_len()) else {
            buf.clear();
            return Err(Error::Decrypt);
        };
        if buf.len() != want {
            buf.clear();
            return Err(Error::Decrypt);
        }
        let t = Instant::now();
        let ad = self.chunks.ad(plain);
        let r = self
            .chunks
            .aead
            .open_in_place(&chunk_nonce(self.chunks.next), &ad, buf);
        self.times.aead += t.elapsed();
        if r.is_err() {
            buf.zeroize();
            buf.clear();
            return Err(Error::Decrypt);
        }
        self.chunks.next += 1;
        Ok(())
    }

    /// Finishes: succeeds (with the stage timers) only if every chunk, the final one
    /// included, was opened.
    pub fn finish(self) -> Result<StageTimes> {
        if self.chunks.next != self.chunks.count {
            return Err(Error::Decrypt);
        }
        Ok(self.times)
    }
}

/// Seals `plaintext` as version `id` to `to` in memory ([`Sealer`] over the whole buffer).
pub fn seal<R: CryptoRng + ?Sized>(
    backend: Backend,
    id: &ObjectId,
    to: &[To<'_>],
    allow_mixed: bool,
    placement: Placement,
    plaintext: &[u8],
    rng: &mut R,
) -> Result<Sealed> {
    seal_as(
        HeaderVersion::V2,
        backend,
        id,
        to,
        allow_mixed,
        placement,
        plaintext,
        rng,
    )
}

/// [`seal`] with a header of `version` (v2.1: re-wrappable, §10).
#[allow(
    clippy::too_many_arguments,
    reason = "seal's arguments and the header version"
)]
pub fn seal_as<R: CryptoRng + ?Sized>(
    version: HeaderVersion,
    backend: Backend,
    id: &ObjectId,
    to: &[To<'_>],
    allow_mixed: bool,
    placement: Placement,
    plaintext: &[u8],
    rng: &mut R,
) -> Result<Sealed> {
    let checked = check_recipients(backend, to, allow_mixed, placement, version)?;
    let mut sealer = Sealer::build(
        backend,
        id,
        to,
        &checked,
        (placement, version),
        plaintext.len() as u64,
        rng,
    )?;
    let mut chunks = Vec::with_capacity(usize::try_from(sealer.chunks_size()).unwrap_or(0));
    let mut at = 0;
    while let Some(n) = sealer.next_chunk_len() {
        let mut buf = plaintext[at..at + n].to_vec();
        at += n;
        sealer.seal_chunk(&mut buf)?;
        chunks.extend_from_slice(&buf);
    }
    let header = sealer.header.clone();
    sealer.finish()?;
    Ok(Sealed { header, chunks })
}

/// Opens version `id` with `key` in memory: `header` as found in `found` (the metadata
/// entry, decoded, or the body's start), `chunks` the chunk ciphertexts. The plaintext only
/// if every check of §4-§6 passed.
pub fn open(
    id: &ObjectId,
    key: &PrivateKey,
    header: &[u8],
    found: Placement,
    chunks: &[u8],
) -> Result<Zeroizing<Vec<u8>>> {
    let (_, len) = Header::parse(header)?;
    if found == Placement::Metadata && len != header.len() {
        return Err(bad("the metadata entry holds bytes after the header"));
    }
    Opener::new(id, key, &header[..len], found)?.open_all(chunks)
}
