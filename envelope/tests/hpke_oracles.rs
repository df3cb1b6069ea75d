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

/// Every chunk of §6 with `K` from `dk` and the header's hash: `(nonce_j, AD_j, ℓ_j)`
/// in order, for a plaintext of `size` bytes.
fn chunk_params(header: &[u8], size: usize) -> Vec<([u8; 12], Vec<u8>, usize)> {
    let header_hash = sha256(header);
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
    let mut chunks = Vec::new();
    let mut at = 0;
    for (nonce, ad, len) in chunk_params(&header, pt.len()) {
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
