//! Format v2 (`FORMAT-v2.md`): the binary header, the HPKE-wrapped data key with its
//! commitment, and the chunks, in memory. Section numbers below are FORMAT-v2.md's.
//!
//! [`seal`] gives the header and the chunk ciphertexts for one or more recipients;
//! [`open`] checks the header against the identity the reader asked for (§4), unwraps the
//! data key with the reader's entry (§5), checks the commitment before any chunk (§5), and
//! opens the chunks (§6). Every failure after parsing is the opaque [`Error::Decrypt`];
//! a header that does not parse is [`Error::Manifest`] (public data, says what is wrong).

use rand_core::CryptoRng;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::ctx::ObjectId;
use crate::hpke::{self, AeadId, KdfId, KemId, PrivateKey, Randomness, Suite};
use crate::symmetric::{Aead, NONCE_LEN, TAG_LEN, sha256};
use crate::{Backend, Error, Result};

/// `magic`: ASCII `PQB2`.
pub const MAGIC: [u8; 4] = *b"PQB2";
/// `version`.
pub const VERSION: u8 = 2;
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
const FLAG_MIXED: u8 = 0b01;
const FLAG_PREFIX: u8 = 0b10;
/// The suite of every wrap (§3).
const KDF: KdfId = KdfId::HkdfSha256;
const AEAD: AeadId = AeadId::Aes256Gcm;

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
        let mut b = Vec::with_capacity(FIXED_LEN);
        b.extend_from_slice(&MAGIC);
        b.extend_from_slice(&header_len.to_be_bytes());
        b.push(VERSION);
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
        b.extend_from_slice(&self.plaintext_size.to_be_bytes());
        b.extend_from_slice(&CHUNK_SIZE.to_be_bytes());
        b.extend_from_slice(&self.commitment);
        b.push(u8::try_from(self.recipients.len()).unwrap_or(u8::MAX));
        b
    }

    /// The header's length: `91 + Σ (86 + Nenc)`.
    pub fn len(&self) -> usize {
        FIXED_LEN
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

    /// `SHA-256(fixed part)`: the wraps' AAD.
    fn fixed_hash(&self) -> [u8; 32] {
        sha256(Backend::RustCrypto, &self.fixed(self.header_len()))
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
        if r.u8()? != VERSION {
            return Err(bad("version is not 2"));
        }
        let flags = r.u8()?;
        if flags & !(FLAG_MIXED | FLAG_PREFIX) != 0 {
            return Err(bad("reserved flag bits are set"));
        }
        if (r.u16()?, r.u16()?) != (KDF.id(), AEAD.id()) {
            return Err(bad("kdf_id/aead_id are not HKDF-SHA256/AES-256-GCM"));
        }
        let identity_hash = r.array()?;
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
                plaintext_size,
                commitment,
                recipients,
            },
            header_len,
        ))
    }
}

fn bad(what: &str) -> Error {
    Error::Manifest(format!("v2 header: {what}"))
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

/// `PRK = HKDF-Extract(identity_hash, DK)`; `commitment` and `K` expand from it (§5, §6).
fn prk(dk: &[u8; 32], identity_hash: &[u8; 32]) -> hkdf::Hkdf<sha2::Sha256> {
    hkdf::Hkdf::<sha2::Sha256>::new(Some(identity_hash), dk)
}

fn expand32(prk: &hkdf::Hkdf<sha2::Sha256>, info: &[&[u8]]) -> Result<Zeroizing<[u8; 32]>> {
    let mut out = Zeroizing::new([0u8; 32]);
    prk.expand(&info.concat(), out.as_mut())
        .map_err(|_| Error::Crypto("v2: hkdf expand"))?;
    Ok(out)
}

fn info(identity_hash: &[u8; 32], key_id: &[u8; 32]) -> Vec<u8> {
    [&b"pqbench-envelope/2\0"[..], identity_hash, key_id].concat()
}

fn chunk_nonce(j: u64) -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    n[4..].copy_from_slice(&j.to_be_bytes());
    n
}

fn chunk_ad(header_hash: &[u8; 32], j: u64, len: u64, last: bool) -> Vec<u8> {
    let mut ad = header_hash.to_vec();
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

/// Seals `plaintext` as version `id` to `to` (1–16 recipients, distinct keys), §5 and §6.
/// Mixing post-quantum and classical recipients needs `allow_mixed`; placement metadata
/// refuses a header above [`MAX_METADATA_HEADER`] bytes.
pub fn seal<R: CryptoRng + ?Sized>(
    backend: Backend,
    id: &ObjectId,
    to: &[To<'_>],
    allow_mixed: bool,
    placement: Placement,
    plaintext: &[u8],
    rng: &mut R,
) -> Result<Sealed> {
    id.validate()?;
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
    let identity_hash = identity_hash(id);
    let mut dk = Zeroizing::new([0u8; 32]);
    rng.fill_bytes(dk.as_mut());
    let prk = prk(&dk, &identity_hash);
    let commitment = *expand32(&prk, &[b"pqbench-v2 commitment"])?;
    let mut header = Header {
        mixed,
        placement,
        identity_hash,
        plaintext_size: u64::try_from(plaintext.len()).unwrap_or(u64::MAX),
        commitment,
        recipients: to
            .iter()
            .map(|t| Entry {
                kem: t.kem,
                key_id: sha256(backend, t.public),
                enc: vec![0; t.kem.enc_len()],
                wrapped: vec![0; WRAPPED_LEN],
            })
            .collect(),
    };
    for (i, e) in header.recipients.iter().enumerate() {
        if header.recipients[..i].iter().any(|o| o.key_id == e.key_id) {
            return Err(Error::Usage("a recipient is listed twice".into()));
        }
    }
    if placement == Placement::Metadata && header.len() > MAX_METADATA_HEADER {
        return Err(Error::Usage(format!(
            "the v2 header is {} bytes; S3's 2 KB of user metadata holds at most {MAX_METADATA_HEADER} (use the prefix placement)",
            header.len()
        )));
    }
    let aad = header.fixed_hash();
    for (e, t) in header.recipients.iter_mut().zip(to) {
        let suite = Suite {
            kem: t.kem,
            kdf: KDF,
            aead: AEAD,
        };
        let (enc, mut ctx) = hpke::setup_base_s(
            backend,
            suite,
            t.public,
            &info(&identity_hash, &e.key_id),
            Randomness::Rng(&mut *rng),
        )?;
        e.enc = enc;
        e.wrapped = ctx.seal(&aad, &dk[..])?;
    }
    let bytes = header.encode();
    let header_hash = sha256(backend, &bytes);
    let k = expand32(&prk, &[b"pqbench-v2 data", &header_hash])?;
    let aead = Aead::new(backend, &k)?;
    let n = chunk_count(header.plaintext_size);
    let mut chunks =
        Vec::with_capacity(plaintext.len() + TAG_LEN * usize::try_from(n).unwrap_or(1));
    let size = usize::try_from(CHUNK_SIZE).unwrap_or(usize::MAX);
    for j in 0..n {
        let from = usize::try_from(j)
            .unwrap_or(usize::MAX)
            .saturating_mul(size);
        let part =
            &plaintext[from.min(plaintext.len())..(from.saturating_add(size)).min(plaintext.len())];
        let mut buf = part.to_vec();
        let ad = chunk_ad(&header_hash, j, part.len() as u64, j + 1 == n);
        aead.seal_in_place(&chunk_nonce(j), &ad, &mut buf)?;
        chunks.extend_from_slice(&buf);
    }
    Ok(Sealed {
        header: bytes,
        chunks,
    })
}

/// Opens version `id` with `key` (its key id is `SHA-256` of its public key): `header` as
/// found in `found` (the metadata entry, decoded, or the body's start), `chunks` the chunk
/// ciphertexts. The plaintext only if every check of §4-§6 passed.
pub fn open(
    id: &ObjectId,
    key: &PrivateKey,
    header: &[u8],
    found: Placement,
    chunks: &[u8],
) -> Result<Zeroizing<Vec<u8>>> {
    let (h, len) = Header::parse(header)?;
    if found == Placement::Metadata && len != header.len() {
        return Err(bad("the metadata entry holds bytes after the header"));
    }
    if h.placement != found {
        return Err(bad(
            "the header's placement flag does not say where it was found",
        ));
    }
    let backend = key.backend();
    if !bool::from(h.identity_hash.ct_eq(&identity_hash(id))) {
        return Err(Error::Decrypt);
    }
    if chunks.len() as u64 != chunks_len(h.plaintext_size) {
        return Err(Error::Decrypt);
    }
    let key_id = sha256(backend, key.public());
    let entry = h
        .recipients
        .iter()
        .find(|e| e.key_id == key_id && e.kem == key.kem())
        .ok_or(Error::Decrypt)?;
    let suite = Suite {
        kem: entry.kem,
        kdf: KDF,
        aead: AEAD,
    };
    let mut ctx = hpke::setup_base_r(suite, &entry.enc, key, &info(&h.identity_hash, &key_id))?;
    let dk_bytes = ctx.open(&h.fixed_hash(), &entry.wrapped)?;
    let mut dk = Zeroizing::new([0u8; 32]);
    if dk_bytes.len() != 32 {
        return Err(Error::Decrypt);
    }
    dk.copy_from_slice(&dk_bytes);
    let prk = prk(&dk, &h.identity_hash);
    let commitment = expand32(&prk, &[b"pqbench-v2 commitment"])?;
    if !bool::from(commitment.ct_eq(&h.commitment)) {
        return Err(Error::Decrypt);
    }
    let header_hash = sha256(backend, &header[..len]);
    let k = expand32(&prk, &[b"pqbench-v2 data", &header_hash])?;
    let aead = Aead::new(backend, &k)?;
    let n = chunk_count(h.plaintext_size);
    let mut out = Zeroizing::new(Vec::with_capacity(
        usize::try_from(h.plaintext_size).unwrap_or(0),
    ));
    let size = u64::from(CHUNK_SIZE);
    let mut at = 0usize;
    for j in 0..n {
        let plain = if j + 1 == n {
            h.plaintext_size - j * size
        } else {
            size
        };
        let ct_len = usize::try_from(plain).map_err(|_| Error::Decrypt)? + TAG_LEN;
        let mut buf = chunks[at..at + ct_len].to_vec();
        at += ct_len;
        aead.open_in_place(
            &chunk_nonce(j),
            &chunk_ad(&header_hash, j, plain, j + 1 == n),
            &mut buf,
        )?;
        out.extend_from_slice(&buf);
    }
    Ok(out)
}
