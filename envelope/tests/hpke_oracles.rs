//! Format v2's wraps (`FORMAT-v2.md` §5) against two more HPKE implementations, each through
//! its **public** API (RFC 9180's `SetupBaseS`/`SetupBaseR` and `Seal(aad, pt)`/`Open`):
//!
//! - `hpke` 0.15.1 (rozbb/rust-hpke, draft-ietf-hpke-pq suites): its own key schedule and
//!   AEAD wiring; its KEMs are RustCrypto's `ml-kem`, `x-wing` and `x25519-dalek`, the ones
//!   pqbench's RustCrypto backend uses, so against it the aws-lc backend is the independent
//!   side of the KEM.
//! - `hpke-rs` 0.8.0 with the libcrux provider (Cryspen): key schedule, KEMs (ML-KEM, X-Wing
//!   draft-06 at 0x647a, X25519), HKDF and AES-GCM all from libcrux, independent of both
//!   pqbench backends.
//!
//! For every KEM v2 offers and both oracles, whole objects, not only wraps:
//!
//! - **they open pqbench's**: pqbench seals a v2 object (each backend, each placement the
//!   header fits); the test reads it as the text says (§4 header, §5 `info_i` and AAD
//!   `fixed_hash`), the oracle unwraps the data key, the test checks the commitment (§5) and
//!   opens every chunk (§6) with it;
//! - **pqbench opens theirs**: an object written from the text with the oracle's wrap to a
//!   key pair the oracle generated (so its key encodings are the ones pqbench loads: the
//!   ML-KEM seed `d ‖ z`, X-Wing's 32-byte seed, the X25519 scalar), opened by `v2::open` on
//!   both backends; and refused (the opaque error) when the oracle wrapped under another
//!   identity's `info`.
//!
//! One case per direction has two chunks, so the chunk arithmetic of §6 is held too.
//!
//! v2.1 (§10.1, `version = 3`) the same way, from the text: `origin_hash`, `PRK` salted with
//! it, `body_hash` in the chunk keys and ADs, the "pqbench-envelope/2.1" info and the wrap
//! AAD `fixed_hash ‖ recipients_hash` (the oracle sets up every recipient's context before
//! sealing any wrap). pqbench's `seal_as(V2_1, …)` and `Receiver::rewrap` are opened by the
//! oracles; objects and re-wraps written from the text are opened by `v2::open`.

#![allow(clippy::unwrap_used, reason = "tests")]

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use envelope::hpke::{KemId, PrivateKey};
use envelope::v2::{self, Entry, Header, Placement, To};
use envelope::{Backend, Error, ObjectId};
use sha2::Digest as _;

const KEMS: [KemId; 4] = [
    KemId::X25519,
    KemId::MlKem768,
    KemId::MlKem1024,
    KemId::XWing,
];

/// `91`: the fixed part's length (§4).
const FIXED_LEN: usize = 91;
const CHUNK: usize = 4_194_304;

/// An HPKE implementation under test, in v2's suite: the recipient's KEM, HKDF-SHA256,
/// AES-256-GCM, base mode.
trait Oracle {
    fn name(&self) -> &'static str;
    /// A fresh key pair: (secret, public), in the oracle's encodings.
    fn key_pair(&self, kem: KemId) -> (Vec<u8>, Vec<u8>);
    /// `SetupBaseS(pk, info)` then `Seal(aad, pt)`: (enc, ciphertext).
    fn wrap(&self, kem: KemId, pk: &[u8], info: &[u8], aad: &[u8], pt: &[u8])
    -> (Vec<u8>, Vec<u8>);
    /// `SetupBaseS(pk, info)` alone: `enc`, and the context's first `Seal(aad, pt)` to
    /// call later (v2.1, §10.1: every `enc` is fixed before any wrap is sealed).
    fn sender(&self, kem: KemId, pk: &[u8], info: &[u8]) -> (Vec<u8>, SealFirst);
    /// `SetupBaseR(enc, sk, info)` then `Open(aad, ct)`.
    fn unwrap(
        &self,
        kem: KemId,
        sk: &[u8],
        enc: &[u8],
        info: &[u8],
        aad: &[u8],
        ct: &[u8],
    ) -> Vec<u8>;
}

/// A sender context's first `Seal(aad, pt)`.
type SealFirst = Box<dyn FnOnce(&[u8], &[u8]) -> Vec<u8>>;

/// `hpke` 0.15.1.
struct RustHpke;

mod rust_hpke {
    use hpke::aead::AesGcm256;
    use hpke::kdf::HkdfSha256;
    use hpke::{Deserializable as _, Kem, OpModeR, OpModeS, Serializable as _};

    pub(super) fn key_pair<K: Kem>() -> (Vec<u8>, Vec<u8>) {
        let (sk, pk) = K::gen_keypair();
        (sk.to_bytes().to_vec(), pk.to_bytes().to_vec())
    }

    pub(super) fn wrap<K: Kem>(
        pk: &[u8],
        info: &[u8],
        aad: &[u8],
        pt: &[u8],
    ) -> (Vec<u8>, Vec<u8>) {
        let pk = K::PublicKey::from_bytes(pk).unwrap();
        let (enc, mut ctx) =
            hpke::setup_sender::<AesGcm256, HkdfSha256, K>(&OpModeS::Base, &pk, info).unwrap();
        (enc.to_bytes().to_vec(), ctx.seal(pt, aad).unwrap())
    }

    pub(super) fn sender<K: Kem + 'static>(pk: &[u8], info: &[u8]) -> (Vec<u8>, super::SealFirst) {
        let pk = K::PublicKey::from_bytes(pk).unwrap();
        let (enc, mut ctx) =
            hpke::setup_sender::<AesGcm256, HkdfSha256, K>(&OpModeS::Base, &pk, info).unwrap();
        (
            enc.to_bytes().to_vec(),
            Box::new(move |aad: &[u8], pt: &[u8]| ctx.seal(pt, aad).unwrap()),
        )
    }

    pub(super) fn unwrap<K: Kem>(
        sk: &[u8],
        enc: &[u8],
        info: &[u8],
        aad: &[u8],
        ct: &[u8],
    ) -> Vec<u8> {
        let sk = K::PrivateKey::from_bytes(sk).unwrap();
        let enc = K::EncappedKey::from_bytes(enc).unwrap();
        let mut ctx =
            hpke::setup_receiver::<AesGcm256, HkdfSha256, K>(&OpModeR::Base, &sk, &enc, info)
                .unwrap();
        ctx.open(ct, aad).unwrap()
    }
}

/// Calls `$f::<K>` with `K` the `hpke` crate's type for `$kem`.
macro_rules! for_kem {
    ($kem:expr, $f:ident ( $($arg:expr),* )) => {
        match $kem {
            KemId::X25519 => rust_hpke::$f::<hpke::kem::X25519HkdfSha256>($($arg),*),
            KemId::MlKem768 => rust_hpke::$f::<hpke::kem::MlKem768>($($arg),*),
            KemId::MlKem1024 => rust_hpke::$f::<hpke::kem::MlKem1024>($($arg),*),
            KemId::XWing => rust_hpke::$f::<hpke::kem::XWing>($($arg),*),
        }
    };
}

impl Oracle for RustHpke {
    fn name(&self) -> &'static str {
        "hpke 0.15.1"
    }
    fn key_pair(&self, kem: KemId) -> (Vec<u8>, Vec<u8>) {
        for_kem!(kem, key_pair())
    }
    fn wrap(
        &self,
        kem: KemId,
        pk: &[u8],
        info: &[u8],
        aad: &[u8],
        pt: &[u8],
    ) -> (Vec<u8>, Vec<u8>) {
        for_kem!(kem, wrap(pk, info, aad, pt))
    }
    fn sender(&self, kem: KemId, pk: &[u8], info: &[u8]) -> (Vec<u8>, SealFirst) {
        for_kem!(kem, sender(pk, info))
    }
    fn unwrap(
        &self,
        kem: KemId,
        sk: &[u8],
        enc: &[u8],
        info: &[u8],
        aad: &[u8],
        ct: &[u8],
    ) -> Vec<u8> {
        for_kem!(kem, unwrap(sk, enc, info, aad, ct))
    }
}

/// `hpke-rs` 0.8.0 on libcrux.
struct HpkeRs;

impl HpkeRs {
    fn hpke(kem: KemId) -> hpke_rs::Hpke<hpke_rs::libcrux::HpkeLibcrux> {
        use hpke_rs::hpke_types::{AeadAlgorithm, KdfAlgorithm, KemAlgorithm};
        let kem = match kem {
            KemId::X25519 => KemAlgorithm::DhKem25519,
            KemId::MlKem768 => KemAlgorithm::MlKem768,
            KemId::MlKem1024 => KemAlgorithm::MlKem1024,
            KemId::XWing => KemAlgorithm::XWingDraft06,
        };
        hpke_rs::Hpke::new(
            hpke_rs::Mode::Base,
            kem,
            KdfAlgorithm::HkdfSha256,
            AeadAlgorithm::Aes256Gcm,
        )
    }
}

impl Oracle for HpkeRs {
    fn name(&self) -> &'static str {
        "hpke-rs 0.8.0 (libcrux)"
    }
    fn key_pair(&self, kem: KemId) -> (Vec<u8>, Vec<u8>) {
        let (sk, pk) = Self::hpke(kem).generate_key_pair().unwrap().into_keys();
        (sk.as_slice().to_vec(), pk.as_slice().to_vec())
    }
    fn wrap(
        &self,
        kem: KemId,
        pk: &[u8],
        info: &[u8],
        aad: &[u8],
        pt: &[u8],
    ) -> (Vec<u8>, Vec<u8>) {
        let pk = hpke_rs::HpkePublicKey::new(pk.to_vec());
        let (enc, mut ctx) = Self::hpke(kem)
            .setup_sender(&pk, info, None, None, None)
            .unwrap();
        (enc, ctx.seal(aad, pt).unwrap())
    }
    fn sender(&self, kem: KemId, pk: &[u8], info: &[u8]) -> (Vec<u8>, SealFirst) {
        let pk = hpke_rs::HpkePublicKey::new(pk.to_vec());
        let (enc, mut ctx) = Self::hpke(kem)
            .setup_sender(&pk, info, None, None, None)
            .unwrap();
        (
            enc,
            Box::new(move |aad: &[u8], pt: &[u8]| ctx.seal(aad, pt).unwrap()),
        )
    }
    fn unwrap(
        &self,
        kem: KemId,
        sk: &[u8],
        enc: &[u8],
        info: &[u8],
        aad: &[u8],
        ct: &[u8],
    ) -> Vec<u8> {
        let sk = hpke_rs::HpkePrivateKey::new(sk.to_vec());
        let mut ctx = Self::hpke(kem)
            .setup_receiver(enc, &sk, info, None, None, None)
            .unwrap();
        ctx.open(aad, ct).unwrap()
    }
}

fn oracles() -> [&'static dyn Oracle; 2] {
    [&RustHpke, &HpkeRs]
}

fn id(version: &str) -> ObjectId {
    ObjectId::new("tenant-a", "bucket", "reports/2026.csv", version).unwrap()
}

fn sha256(x: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(x).into()
}

fn plaintext(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| u8::try_from(i * 31 % 251).unwrap())
        .collect()
}

/// The sizes each direction is held at: empty, one chunk, and (for ML-KEM-768) two chunks.
fn sizes(kem: KemId) -> Vec<usize> {
    if kem == KemId::MlKem768 {
        vec![0, 1000, CHUNK + 1]
    } else {
        vec![0, 1000]
    }
}

/// ML-KEM-1024's header does not fit in metadata (§8); the others are held in both.
fn placements(kem: KemId) -> Vec<Placement> {
    if kem == KemId::MlKem1024 {
        vec![Placement::Prefix]
    } else {
        vec![Placement::Metadata, Placement::Prefix]
    }
}

// ---- §5 and §6 as the text says them, on hkdf and aws-lc ----

/// `info_i = "pqbench-envelope/2" ‖ 0x00 ‖ identity_hash ‖ key_id_i`.
fn info(identity_hash: &[u8; 32], key_id: &[u8; 32]) -> Vec<u8> {
    [&b"pqbench-envelope/2\0"[..], identity_hash, key_id].concat()
}

/// `HKDF-Expand(HKDF-Extract(identity_hash, DK), label, 32)`.
fn expand(dk: &[u8], identity_hash: &[u8; 32], label: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(Some(identity_hash), dk)
        .expand(label, &mut out)
        .unwrap();
    out
}

fn commitment(dk: &[u8], identity_hash: &[u8; 32]) -> [u8; 32] {
    expand(dk, identity_hash, b"pqbench-v2 commitment")
}

/// Seals `pt` chunk by chunk with `key` and each chunk's (nonce, AD, length).
fn seal_chunks(key: &LessSafeKey, params: Vec<([u8; 12], Vec<u8>, usize)>, pt: &[u8]) -> Vec<u8> {
    let mut chunks = Vec::new();
    let mut at = 0;
    for (nonce, ad, len) in params {
        let mut buf = pt[at..at + len].to_vec();
        at += len;
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&ad[..]),
            &mut buf,
        )
        .unwrap();
        chunks.extend_from_slice(&buf);
    }
    chunks
}

/// Every chunk of §6 with `K` from `dk` and the header's hash: `(nonce_j, AD_j, ℓ_j)`
/// in order, for a plaintext of `size` bytes.
fn chunk_params(header: &[u8], size: usize) -> Vec<([u8; 12], Vec<u8>, usize)> {
    chunk_params_bound(&sha256(header), size)
}

/// [`chunk_params`] with `AD_j` led by `bound`: `header_hash` (v2, §6) or `body_hash`
/// (v2.1, §10.1).
fn chunk_params_bound(bound: &[u8; 32], size: usize) -> Vec<([u8; 12], Vec<u8>, usize)> {
    let header_hash = *bound;
    let n = size.div_ceil(CHUNK).max(1);
    (0..n)
        .map(|j| {
            let len = if j + 1 < n {
                CHUNK
            } else {
                size - (n - 1) * CHUNK
            };
            let j64 = j as u64;
            let mut nonce = [0u8; 12];
            nonce[4..].copy_from_slice(&j64.to_be_bytes());
            let mut ad = header_hash.to_vec();
            ad.extend_from_slice(&j64.to_be_bytes());
            ad.extend_from_slice(&(len as u64).to_be_bytes());
            ad.push(u8::from(j + 1 == n));
            (nonce, ad, len)
        })
        .collect()
}

fn chunk_key(dk: &[u8], identity_hash: &[u8; 32], header: &[u8]) -> LessSafeKey {
    let k = expand(
        dk,
        identity_hash,
        &[&b"pqbench-v2 data"[..], &sha256(header)].concat(),
    );
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &k).unwrap())
}

/// Opens the chunks of a v2 object with its data key, as §6 says.
fn open_chunks(
    dk: &[u8],
    identity_hash: &[u8; 32],
    header: &[u8],
    size: usize,
    chunks: &[u8],
) -> Vec<u8> {
    let key = chunk_key(dk, identity_hash, header);
    let mut out = Vec::with_capacity(size);
    let mut at = 0;
    for (nonce, ad, len) in chunk_params(header, size) {
        let mut buf = chunks[at..at + len + 16].to_vec();
        at += len + 16;
        let pt = key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&ad[..]),
                &mut buf,
            )
            .unwrap();
        out.extend_from_slice(pt);
    }
    assert_eq!(at, chunks.len(), "the body ends after the final chunk");
    out
}

/// Writes a v2 object from the text: a header with one recipient whose wrap `oracle` made,
/// and the chunks. `wrap_for` is the identity whose `info` the wrap is bound to (the
/// object's own, or another to see it refused). Returns (header, chunks).
fn write_from_text(
    oracle: &dyn Oracle,
    kem: KemId,
    pk: &[u8],
    id: &ObjectId,
    wrap_for: &ObjectId,
    placement: Placement,
    pt: &[u8],
) -> (Vec<u8>, Vec<u8>) {
    let identity_hash = v2::identity_hash(id);
    let dk: [u8; 32] = std::array::from_fn(|i| u8::try_from(i).unwrap() ^ 0x5c);
    let key_id = sha256(pk);
    let mut header = Header {
        mixed: false,
        placement,
        identity_hash,
        origin_hash: None,
        plaintext_size: pt.len() as u64,
        commitment: commitment(&dk, &identity_hash),
        recipients: vec![Entry {
            kem,
            key_id,
            enc: vec![0; kem.enc_len()],
            wrapped: vec![0; 48],
        }],
    };
    let fixed_hash = sha256(&header.encode()[..FIXED_LEN]);
    let (enc, wrapped) = oracle.wrap(
        kem,
        pk,
        &info(&v2::identity_hash(wrap_for), &key_id),
        &fixed_hash,
        &dk,
    );
    assert_eq!(
        enc.len(),
        kem.enc_len(),
        "{}: Nenc of {kem:?}",
        oracle.name()
    );
    header.recipients[0].enc = enc;
    header.recipients[0].wrapped = wrapped;
    let header = header.encode();
    let key = chunk_key(&dk, &identity_hash, &header);
    let chunks = seal_chunks(&key, chunk_params(&header, pt.len()), pt);
    (header, chunks)
}

#[test]
fn both_oracles_open_objects_pqbench_sealed_for_every_kem() {
    let id = id("01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f");
    let identity_hash = v2::identity_hash(&id);
    let mut rng = envelope::os_rng();
    for oracle in oracles() {
        for kem in KEMS {
            let (sk, pk) = oracle.key_pair(kem);
            for backend in Backend::ALL {
                for placement in placements(kem) {
                    for n in sizes(kem) {
                        let what = format!(
                            "{} opens {kem:?} from {backend}, {placement:?}, {n} B",
                            oracle.name()
                        );
                        let pt = plaintext(n);
                        let to = [To { kem, public: &pk }];
                        let s =
                            v2::seal(backend, &id, &to, false, placement, &pt, &mut rng).unwrap();
                        let (h, len) = Header::parse(&s.header).unwrap();
                        assert_eq!(len, s.header.len(), "{what}");
                        let e = &h.recipients[0];
                        assert_eq!((e.kem, e.key_id), (kem, sha256(&pk)), "{what}");
                        let dk = oracle.unwrap(
                            kem,
                            &sk,
                            &e.enc,
                            &info(&identity_hash, &e.key_id),
                            &sha256(&s.header[..FIXED_LEN]),
                            &e.wrapped,
                        );
                        assert_eq!(dk.len(), 32, "{what}");
                        assert_eq!(
                            commitment(&dk, &identity_hash),
                            h.commitment,
                            "{what}: commitment"
                        );
                        assert_eq!(
                            open_chunks(&dk, &identity_hash, &s.header, n, &s.chunks),
                            pt,
                            "{what}: chunks"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn pqbench_opens_objects_whose_wraps_the_oracles_made_for_every_kem() {
    let id = id("01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f");
    let other = self::id("01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e60");
    for oracle in oracles() {
        for kem in KEMS {
            let (sk, pk) = oracle.key_pair(kem);
            for placement in placements(kem) {
                for n in sizes(kem) {
                    let pt = plaintext(n);
                    let (header, chunks) =
                        write_from_text(oracle, kem, &pk, &id, &id, placement, &pt);
                    for backend in Backend::ALL {
                        let what = format!(
                            "{backend} opens {kem:?} from {}, {placement:?}, {n} B",
                            oracle.name()
                        );
                        let key = PrivateKey::new(backend, kem, &sk).unwrap();
                        assert_eq!(
                            key.public(),
                            &pk[..],
                            "{what}: the public key pqbench derives from the oracle's secret"
                        );
                        let got = v2::open(&id, &key, &header, placement, &chunks)
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                        assert_eq!(got.as_slice(), &pt[..], "{what}");
                    }
                }
            }
            // The oracle's wrap bound to another identity's info: the opaque error.
            let (header, chunks) =
                write_from_text(oracle, kem, &pk, &id, &other, placements(kem)[0], b"x");
            for backend in Backend::ALL {
                let key = PrivateKey::new(backend, kem, &sk).unwrap();
                assert!(
                    matches!(
                        v2::open(&id, &key, &header, placements(kem)[0], &chunks),
                        Err(Error::Decrypt)
                    ),
                    "{backend}, {kem:?} from {}: a wrap under another identity's info is refused",
                    oracle.name()
                );
            }
        }
    }
}

// ---- §10.1 (v2.1, re-wrappable headers) as the text says it ----

/// `123`: a v2.1 header's fixed part, v2's 91 bytes and `origin_hash` (§10.1).
const FIXED_LEN_V2_1: usize = 123;

/// `info_i = "pqbench-envelope/2.1" ‖ 0x00 ‖ identity_hash ‖ key_id_i`.
fn info_v2_1(identity_hash: &[u8; 32], key_id: &[u8; 32]) -> Vec<u8> {
    [&b"pqbench-envelope/2.1\0"[..], identity_hash, key_id].concat()
}

/// `body_hash = SHA-256("pqbench-v2.1 body" ‖ 0x00 ‖ kdf_id ‖ aead_id ‖ origin_hash ‖
/// plaintext_size ‖ chunk_size ‖ commitment)`, each field in its header encoding (§4).
fn body_hash(origin_hash: &[u8; 32], size: u64, commitment: &[u8; 32]) -> [u8; 32] {
    let chunk = u32::try_from(CHUNK).unwrap();
    sha256(
        &[
            &b"pqbench-v2.1 body\0"[..],
            &1u16.to_be_bytes(),
            &2u16.to_be_bytes(),
            origin_hash,
            &size.to_be_bytes(),
            &chunk.to_be_bytes(),
            commitment,
        ]
        .concat(),
    )
}

/// `recipients_hash = SHA-256(for each entry in order: kem_id ‖ key_id ‖ lp(enc))`.
fn recipients_hash<'a>(entries: impl Iterator<Item = (u16, &'a [u8; 32], &'a [u8])>) -> [u8; 32] {
    let mut h = sha2::Sha256::new();
    for (kem, key_id, enc) in entries {
        h.update(kem.to_be_bytes());
        h.update(key_id);
        h.update(u16::try_from(enc.len()).unwrap().to_be_bytes());
        h.update(enc);
    }
    h.finalize().into()
}

/// `K = HKDF-Expand(PRK, "pqbench-v2.1 data" ‖ body_hash, 32)`, `PRK` salted with
/// `origin_hash`.
fn chunk_key_v2_1(dk: &[u8], origin_hash: &[u8; 32], body_hash: &[u8; 32]) -> LessSafeKey {
    let k = expand(
        dk,
        origin_hash,
        &[&b"pqbench-v2.1 data"[..], body_hash].concat(),
    );
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &k).unwrap())
}

/// A v2.1 body: what a re-wrap keeps (§10.1 step 2) and the chunks, which depend on
/// nothing else.
struct Body {
    dk: [u8; 32],
    origin_hash: [u8; 32],
    size: u64,
    commitment: [u8; 32],
    chunks: Vec<u8>,
}

/// Seals `pt` as a v2.1 body for `origin_hash` with a fixed data key, as §10.1 says.
fn seal_body(origin_hash: [u8; 32], pt: &[u8]) -> Body {
    let dk: [u8; 32] = std::array::from_fn(|i| u8::try_from(i).unwrap() ^ 0xa3);
    let commitment = expand(&dk, &origin_hash, b"pqbench-v2 commitment");
    let size = pt.len() as u64;
    let bh = body_hash(&origin_hash, size, &commitment);
    let key = chunk_key_v2_1(&dk, &origin_hash, &bh);
    let chunks = seal_chunks(&key, chunk_params_bound(&bh, pt.len()), pt);
    Body {
        dk,
        origin_hash,
        size,
        commitment,
        chunks,
    }
}

/// How [`header_v2_1`] makes its wraps: as §10.1 says, or (to see them refused) with v2's
/// info label, with v2's AAD (`fixed_hash` alone), or with another identity's `info`.
#[derive(Clone, Copy)]
enum Wraps<'a> {
    AsText,
    V2Info,
    V2Aad,
    InfoOf(&'a ObjectId),
}

/// A v2.1 header for `body` as version `id`, to `to` (KEM and public key), written from the
/// text (§4 with §10.1's `origin_hash` after `identity_hash`); `oracle` sets up every
/// recipient's HPKE context first (fixing every `enc`), then seals each wrap with AAD
/// `fixed_hash ‖ recipients_hash`.
fn header_v2_1(
    oracle: &dyn Oracle,
    to: &[(KemId, &[u8])],
    id: &ObjectId,
    body: &Body,
    placement: Placement,
    wraps: Wraps<'_>,
) -> Vec<u8> {
    let identity_hash = v2::identity_hash(id);
    let classical = to.iter().any(|(k, _)| *k == KemId::X25519);
    let pq = to.iter().any(|(k, _)| *k != KemId::X25519);
    let flags = u8::from(classical && pq) | if placement == Placement::Prefix { 2 } else { 0 };
    let header_len = FIXED_LEN_V2_1 + to.iter().map(|(k, _)| 86 + k.enc_len()).sum::<usize>();
    let mut fixed = b"PQB2".to_vec();
    fixed.extend_from_slice(&u32::try_from(header_len).unwrap().to_be_bytes());
    fixed.extend_from_slice(&[3, flags, 0, 1, 0, 2]);
    fixed.extend_from_slice(&identity_hash);
    fixed.extend_from_slice(&body.origin_hash);
    fixed.extend_from_slice(&body.size.to_be_bytes());
    fixed.extend_from_slice(&u32::try_from(CHUNK).unwrap().to_be_bytes());
    fixed.extend_from_slice(&body.commitment);
    fixed.push(u8::try_from(to.len()).unwrap());
    assert_eq!(fixed.len(), FIXED_LEN_V2_1);
    let senders: Vec<(KemId, [u8; 32], Vec<u8>, SealFirst)> = to
        .iter()
        .map(|&(kem, pk)| {
            let key_id = sha256(pk);
            let info = match wraps {
                Wraps::AsText | Wraps::V2Aad => info_v2_1(&identity_hash, &key_id),
                Wraps::V2Info => info(&identity_hash, &key_id),
                Wraps::InfoOf(other) => info_v2_1(&v2::identity_hash(other), &key_id),
            };
            let (enc, seal) = oracle.sender(kem, pk, &info);
            assert_eq!(
                enc.len(),
                kem.enc_len(),
                "{}: Nenc of {kem:?}",
                oracle.name()
            );
            (kem, key_id, enc, seal)
        })
        .collect();
    let fixed_hash = sha256(&fixed);
    let aad = match wraps {
        Wraps::V2Aad => fixed_hash.to_vec(),
        _ => [
            fixed_hash,
            recipients_hash(senders.iter().map(|s| (s.0.id(), &s.1, &s.2[..]))),
        ]
        .concat(),
    };
    let mut header = fixed;
    for (kem, key_id, enc, seal) in senders {
        let wrapped = seal(&aad, &body.dk);
        assert_eq!(wrapped.len(), 48);
        header.extend_from_slice(&kem.id().to_be_bytes());
        header.extend_from_slice(&key_id);
        header.extend_from_slice(&u16::try_from(enc.len()).unwrap().to_be_bytes());
        header.extend_from_slice(&enc);
        header.extend_from_slice(&48u16.to_be_bytes());
        header.extend_from_slice(&wrapped);
    }
    assert_eq!(header.len(), header_len);
    header
}

/// A recipient entry as read: `(kem_id, key_id, enc, wrapped)`.
type RawEntry = (u16, [u8; 32], Vec<u8>, Vec<u8>);

/// A v2.1 header read as the text lays it out (and checks it: §4 checks 1-3 and 5's
/// lengths).
struct Parsed {
    identity_hash: [u8; 32],
    origin_hash: [u8; 32],
    size: u64,
    commitment: [u8; 32],
    entries: Vec<RawEntry>,
    aad: Vec<u8>,
}

fn parse_v2_1(h: &[u8]) -> Parsed {
    let be16 = |at: usize| u16::from_be_bytes(h[at..at + 2].try_into().unwrap());
    let arr = |at: usize| -> [u8; 32] { h[at..at + 32].try_into().unwrap() };
    assert_eq!(&h[..4], b"PQB2", "magic");
    assert_eq!(
        u32::from_be_bytes(h[4..8].try_into().unwrap()) as usize,
        h.len(),
        "header_len"
    );
    assert_eq!(h[8], 3, "version = 3 (v2.1)");
    assert_eq!(h[9] & !3, 0, "reserved flags");
    assert_eq!((be16(10), be16(12)), (1, 2), "suite");
    let size = u64::from_be_bytes(h[78..86].try_into().unwrap());
    assert_eq!(&h[86..90], &4_194_304u32.to_be_bytes(), "chunk_size");
    let count = usize::from(h[122]);
    let mut entries = Vec::new();
    let mut at = FIXED_LEN_V2_1;
    for _ in 0..count {
        let (kem, key_id, nenc) = (be16(at), arr(at + 2), usize::from(be16(at + 34)));
        let enc = h[at + 36..at + 36 + nenc].to_vec();
        at += 36 + nenc;
        assert_eq!(be16(at), 48, "wrapped_len");
        entries.push((kem, key_id, enc, h[at + 2..at + 50].to_vec()));
        at += 50;
    }
    assert_eq!(at, h.len(), "the entries end the header");
    let rh = recipients_hash(entries.iter().map(|e| (e.0, &e.1, &e.2[..])));
    Parsed {
        identity_hash: arr(14),
        origin_hash: arr(46),
        size,
        commitment: arr(90),
        aad: [sha256(&h[..FIXED_LEN_V2_1]), rh].concat(),
        entries,
    }
}

/// Opens a v2.1 object as version `id` as the text says: `oracle` unwraps the data key from
/// each of `keys`' entries (KEM, secret, public), the commitment is checked under
/// `origin_hash`, and the chunks are opened with `body_hash`.
fn open_v2_1(
    oracle: &dyn Oracle,
    header: &[u8],
    id: &ObjectId,
    keys: &[(KemId, &[u8], &[u8])],
    chunks: &[u8],
) -> Vec<u8> {
    let p = parse_v2_1(header);
    assert_eq!(p.identity_hash, v2::identity_hash(id), "identity_hash");
    let mut dks = keys.iter().map(|&(kem, sk, pk)| {
        let key_id = sha256(pk);
        let e = p
            .entries
            .iter()
            .find(|e| e.0 == kem.id() && e.1 == key_id)
            .unwrap();
        let dk = oracle.unwrap(
            kem,
            sk,
            &e.2,
            &info_v2_1(&p.identity_hash, &key_id),
            &p.aad,
            &e.3,
        );
        assert_eq!(dk.len(), 32);
        assert_eq!(
            expand(&dk, &p.origin_hash, b"pqbench-v2 commitment"),
            p.commitment,
            "{}, {kem:?}: the commitment under origin_hash",
            oracle.name()
        );
        dk
    });
    let dk = dks.next().unwrap();
    for other in dks {
        assert_eq!(other, dk, "every entry wraps one data key");
    }
    let bh = body_hash(&p.origin_hash, p.size, &p.commitment);
    let key = chunk_key_v2_1(&dk, &p.origin_hash, &bh);
    let size = usize::try_from(p.size).unwrap();
    let mut out = Vec::with_capacity(size);
    let mut at = 0;
    for (nonce, ad, len) in chunk_params_bound(&bh, size) {
        let mut buf = chunks[at..at + len + 16].to_vec();
        at += len + 16;
        let pt = key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&ad[..]),
                &mut buf,
            )
            .unwrap();
        out.extend_from_slice(pt);
    }
    assert_eq!(at, chunks.len(), "the body ends after the final chunk");
    out
}

fn key_type(kem: KemId) -> envelope::KeyType {
    match kem {
        KemId::X25519 => envelope::KeyType::X25519,
        KemId::MlKem768 => envelope::KeyType::MlKem768,
        KemId::MlKem1024 => envelope::KeyType::MlKem1024,
        KemId::XWing => envelope::KeyType::XWing,
    }
}

/// §10.1, the oracles reading pqbench: v2.1 objects sealed by `v2::seal_as(V2_1, …)` (every
/// KEM, backend and placement, one to two chunks; and one object to all four KEMs, mixed)
/// open as the text says, with the oracle unwrapping under the v2.1 info and AAD; and
/// pqbench's `Receiver::rewrap` of one to another identity and KEM leaves a header the
/// oracle unwraps and under which the unchanged chunks open (origin_hash, size and
/// commitment kept).
#[test]
fn both_oracles_open_v2_1_objects_pqbench_sealed_and_rewrapped_for_every_kem() {
    use envelope::v2::HeaderVersion;
    let id = id("01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f");
    let other = self::id("01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e61");
    let mut rng = envelope::os_rng();
    for oracle in oracles() {
        let keys: Vec<(KemId, Vec<u8>, Vec<u8>)> = KEMS
            .iter()
            .map(|&k| {
                let (sk, pk) = oracle.key_pair(k);
                (k, sk, pk)
            })
            .collect();
        for (i, (kem, sk, pk)) in keys.iter().enumerate() {
            let kem = *kem;
            let to = [To { kem, public: pk }];
            for backend in Backend::ALL {
                for placement in placements(kem) {
                    for n in sizes(kem) {
                        let what = format!(
                            "{} opens v2.1 {kem:?} from {backend}, {placement:?}, {n} B",
                            oracle.name()
                        );
                        let pt = plaintext(n);
                        let s = v2::seal_as(
                            HeaderVersion::V2_1,
                            backend,
                            &id,
                            &to,
                            false,
                            placement,
                            &pt,
                            &mut rng,
                        )
                        .unwrap();
                        assert_eq!(s.header.len(), 123 + 86 + kem.enc_len(), "{what}");
                        let p = parse_v2_1(&s.header);
                        assert_eq!(
                            p.origin_hash,
                            v2::identity_hash(&id),
                            "{what}: a new object's origin_hash is its identity_hash"
                        );
                        let got = open_v2_1(oracle, &s.header, &id, &[(kem, sk, pk)], &s.chunks);
                        assert_eq!(got, pt, "{what}");
                    }
                }
                // pqbench re-wraps it for another identity, to the next KEM's key.
                let (kem2, sk2, pk2) = &keys[(i + 1) % keys.len()];
                let pt = plaintext(1000);
                let placement = placements(kem)[0];
                let s = v2::seal_as(
                    HeaderVersion::V2_1,
                    backend,
                    &id,
                    &to,
                    false,
                    placement,
                    &pt,
                    &mut rng,
                )
                .unwrap();
                let receiver = v2::Receiver::new(
                    backend,
                    &envelope::SecretKey::from_bytes(key_type(kem), sk.clone()).unwrap(),
                )
                .unwrap();
                let pub2 = envelope::PublicKey::from_bytes(key_type(*kem2), pk2.clone()).unwrap();
                let sender = v2::Sender::new(backend, &[&pub2], false, Placement::Prefix)
                    .unwrap()
                    .with_header_version(v2::HeaderVersion::V2_1)
                    .unwrap();
                let new = receiver
                    .rewrap(&id, &s.header, placement, &other, &sender, &mut rng)
                    .unwrap();
                let (old_p, new_p) = (parse_v2_1(&s.header), parse_v2_1(&new));
                let what = format!(
                    "{}: {kem:?} re-wrapped to {kem2:?} on {backend}",
                    oracle.name()
                );
                assert_eq!(new_p.identity_hash, v2::identity_hash(&other), "{what}");
                assert_eq!(
                    (new_p.origin_hash, new_p.size, new_p.commitment),
                    (old_p.origin_hash, old_p.size, old_p.commitment),
                    "{what}: origin_hash, plaintext_size and commitment kept"
                );
                let got = open_v2_1(oracle, &new, &other, &[(*kem2, sk2, pk2)], &s.chunks);
                assert_eq!(got, pt, "{what}");
            }
        }
        // One object to every KEM (mixed strengths, so flag bit 0): the oracle unwraps each
        // entry with the AAD whose recipients_hash covers all four.
        let to: Vec<To<'_>> = keys
            .iter()
            .map(|(k, _, pk)| To {
                kem: *k,
                public: pk,
            })
            .collect();
        let pt = plaintext(3000);
        let s = v2::seal_as(
            HeaderVersion::V2_1,
            Backend::AwsLc,
            &id,
            &to,
            true,
            Placement::Prefix,
            &pt,
            &mut rng,
        )
        .unwrap();
        assert_eq!(s.header[9], 0b11, "mixed, prefix");
        let all: Vec<(KemId, &[u8], &[u8])> = keys
            .iter()
            .map(|(k, sk, pk)| (*k, &sk[..], &pk[..]))
            .collect();
        assert_eq!(
            open_v2_1(oracle, &s.header, &id, &all, &s.chunks),
            pt,
            "{}: four recipients",
            oracle.name()
        );
    }
}

/// §10.1, pqbench reading the oracles: v2.1 objects written from the text (header, body_hash,
/// chunk keys and ADs) with the oracle's wraps (v2.1 info, AAD `fixed_hash ‖
/// recipients_hash`) open in `v2::open` on both backends: every KEM and placement, one to
/// two chunks, and one object to all four KEMs. A re-wrap written from the text (a new header
/// for another identity, same origin_hash and commitment, the chunks untouched) opens as
/// that identity. Refused with the opaque error: wraps under v2's info label, under v2's AAD,
/// under another identity's info, and the re-wrapped header with its own identity as
/// origin_hash.
#[test]
fn pqbench_opens_v2_1_objects_whose_wraps_the_oracles_made_for_every_kem() {
    let id = id("01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f");
    let other = self::id("01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e62");
    let opens = |kem: KemId, sk: &[u8], obj: (&[u8], &[u8]), as_id: &ObjectId, placement| {
        Backend::ALL.map(|backend| {
            let key = PrivateKey::new(backend, kem, sk).unwrap();
            v2::open(as_id, &key, obj.0, placement, obj.1).map(|pt| pt.to_vec())
        })
    };
    for oracle in oracles() {
        let keys: Vec<(KemId, Vec<u8>, Vec<u8>)> = KEMS
            .iter()
            .map(|&k| {
                let (sk, pk) = oracle.key_pair(k);
                (k, sk, pk)
            })
            .collect();
        for (kem, sk, pk) in &keys {
            let kem = *kem;
            let to = [(kem, &pk[..])];
            for placement in placements(kem) {
                for n in sizes(kem) {
                    let what = format!(
                        "pqbench opens v2.1 {kem:?} from {}, {placement:?}, {n} B",
                        oracle.name()
                    );
                    let pt = plaintext(n);
                    let body = seal_body(v2::identity_hash(&id), &pt);
                    let header = header_v2_1(oracle, &to, &id, &body, placement, Wraps::AsText);
                    for got in opens(kem, sk, (&header, &body.chunks), &id, placement) {
                        assert_eq!(got.unwrap_or_else(|e| panic!("{what}: {e}")), pt, "{what}");
                    }
                }
            }
            let placement = placements(kem)[0];
            let pt = plaintext(1000);
            let body = seal_body(v2::identity_hash(&id), &pt);
            // A re-wrap from the text: the body sealed for `id`, a header for `other`.
            let header = header_v2_1(oracle, &to, &other, &body, placement, Wraps::AsText);
            for got in opens(kem, sk, (&header, &body.chunks), &other, placement) {
                assert_eq!(
                    got.unwrap_or_else(|e| panic!("{kem:?} re-wrapped by {}: {e}", oracle.name())),
                    pt
                );
            }
            // Refused: the opaque error.
            let moved = Body {
                origin_hash: v2::identity_hash(&other),
                chunks: body.chunks.clone(),
                ..body
            };
            for (what, header, as_id) in [
                (
                    "v2's info label",
                    header_v2_1(oracle, &to, &id, &body, placement, Wraps::V2Info),
                    &id,
                ),
                (
                    "v2's AAD",
                    header_v2_1(oracle, &to, &id, &body, placement, Wraps::V2Aad),
                    &id,
                ),
                (
                    "another identity's info",
                    header_v2_1(oracle, &to, &id, &body, placement, Wraps::InfoOf(&other)),
                    &id,
                ),
                (
                    "origin_hash not the body's",
                    header_v2_1(oracle, &to, &other, &moved, placement, Wraps::AsText),
                    &other,
                ),
            ] {
                for got in opens(kem, sk, (&header, &body.chunks), as_id, placement) {
                    assert!(
                        matches!(got, Err(Error::Decrypt)),
                        "{kem:?} from {}: {what} is refused: {got:?}",
                        oracle.name()
                    );
                }
            }
        }
        // One object to every KEM (mixed strengths: flag bit 0): each key opens it.
        let to: Vec<(KemId, &[u8])> = keys.iter().map(|(k, _, pk)| (*k, &pk[..])).collect();
        let pt = plaintext(3000);
        let body = seal_body(v2::identity_hash(&id), &pt);
        let header = header_v2_1(oracle, &to, &id, &body, Placement::Prefix, Wraps::AsText);
        for (kem, sk, _) in &keys {
            for got in opens(*kem, sk, (&header, &body.chunks), &id, Placement::Prefix) {
                assert_eq!(
                    got.unwrap_or_else(|e| panic!("{kem:?} of four from {}: {e}", oracle.name())),
                    pt
                );
            }
        }
    }
}
