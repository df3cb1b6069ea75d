//! Format v2 (`FORMAT-v2.md`) in memory: round trips for every KEM, backend and placement,
//! the header sizes of §8, several recipients, the mixed-strength rule, and the tamper
//! classes of issue 21 (header edits, recipient entries swapped, duplicated, dropped or
//! reordered, a wrap to another key, the commitment, a relabelled version, the placement,
//! chunks), each refused on both backends without releasing plaintext; and the
//! multi-recipient splitting attack, which the commitment stops.

#![allow(clippy::unwrap_used, reason = "tests")]

use envelope::hpke::{self, AeadId, KdfId, KemId, PrivateKey, Randomness, Suite};
use envelope::v2::{self, MAX_METADATA_HEADER, Placement, To};
use envelope::{Backend, Error, ObjectId};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;
use sha2::Digest as _;

const KEMS: [KemId; 4] = [
    KemId::X25519,
    KemId::MlKem768,
    KemId::MlKem1024,
    KemId::XWing,
];

fn id() -> ObjectId {
    ObjectId::new(
        "tenant-a",
        "bucket",
        "reports/2026.csv",
        "01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f",
    )
    .unwrap()
}

struct Key {
    kem: KemId,
    public: Vec<u8>,
    secret: Vec<u8>,
}

fn key(kem: KemId, n: u8) -> Key {
    let kp = hpke::derive_key_pair(kem, &[n; 32]).unwrap();
    Key {
        kem,
        public: kp.public,
        secret: kp.secret.to_vec(),
    }
}

fn to(keys: &[&Key]) -> Vec<To<'static>> {
    keys.iter()
        .map(|k| To {
            kem: k.kem,
            public: Box::leak(k.public.clone().into_boxed_slice()),
        })
        .collect()
}

fn private(b: Backend, k: &Key) -> PrivateKey {
    PrivateKey::new(b, k.kem, &k.secret).unwrap()
}

/// `v2::seal` on aws-lc for the test identity with the test rng, which must succeed.
fn sealed(keys: &[&Key], mixed: bool, placement: Placement, pt: &[u8]) -> v2::Sealed {
    v2::seal(
        Backend::AwsLc,
        &id(),
        &to(keys),
        mixed,
        placement,
        pt,
        &mut rng(),
    )
    .unwrap()
}

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(20_261_202)
}

fn plaintext(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| u8::try_from(i * 31 % 251).unwrap())
        .collect()
}

#[test]
fn every_kem_round_trips_on_both_backends_and_across_them() {
    for kem in KEMS {
        let k = key(kem, 1);
        let placement = if kem == KemId::MlKem1024 {
            Placement::Prefix
        } else {
            Placement::Metadata
        };
        for (from, by) in [
            (Backend::AwsLc, Backend::AwsLc),
            (Backend::RustCrypto, Backend::RustCrypto),
            (Backend::AwsLc, Backend::RustCrypto),
            (Backend::RustCrypto, Backend::AwsLc),
        ] {
            for n in [0usize, 1, 4_194_305] {
                if n > 1 && from != by {
                    continue;
                }
                let pt = plaintext(n);
                let s =
                    v2::seal(from, &id(), &to(&[&k]), false, placement, &pt, &mut rng()).unwrap();
                assert_eq!(s.chunks.len() as u64, v2::chunks_len(n as u64));
                let got = v2::open(&id(), &private(by, &k), &s.header, placement, &s.chunks)
                    .unwrap_or_else(|e| panic!("{kem:?} {from}→{by} {n}: {e}"));
                assert_eq!(got.as_slice(), &pt[..], "{kem:?} {from}→{by} {n}");
            }
        }
    }
}

/// §8's table: header bytes per KEM and recipient count, and what placement metadata takes.
#[test]
fn header_sizes_are_the_formats_and_metadata_refuses_what_does_not_fit() {
    for (kem, one, two, most) in [
        (KemId::X25519, 209, 327, 12),
        (KemId::MlKem768, 1265, 2439, 1),
        (KemId::XWing, 1297, 2503, 1),
        (KemId::MlKem1024, 1745, 3399, 0),
    ] {
        let keys: Vec<Key> = (1..=13).map(|i| key(kem, i)).collect();
        for (n, want) in [(1, one), (2, two)] {
            let refs: Vec<&Key> = keys.iter().take(n).collect();
            let s = v2::seal(
                Backend::AwsLc,
                &id(),
                &to(&refs),
                false,
                Placement::Prefix,
                b"x",
                &mut rng(),
            )
            .unwrap();
            assert_eq!(s.header.len(), want, "{kem:?} × {n}");
            // S3's count: the entry name and the base64 value.
            let s3 = 10 + s.header.len().div_ceil(3) * 4;
            assert_eq!(
                s.header.len() <= MAX_METADATA_HEADER,
                s3 <= 2048,
                "{kem:?} × {n}"
            );
        }
        for n in 1..=13 {
            let refs: Vec<&Key> = keys.iter().take(n).collect();
            let r = v2::seal(
                Backend::AwsLc,
                &id(),
                &to(&refs),
                false,
                Placement::Metadata,
                b"x",
                &mut rng(),
            );
            assert_eq!(r.is_ok(), n <= most, "{kem:?} × {n} in metadata");
            if let Err(e) = r {
                assert!(e.to_string().contains("prefix placement"), "{e}");
            }
        }
    }
}

#[test]
fn any_listed_recipient_opens_and_no_other() {
    let (a, b, c, stranger) = (
        key(KemId::MlKem768, 1),
        key(KemId::XWing, 2),
        key(KemId::MlKem1024, 3),
        key(KemId::MlKem768, 4),
    );
    let pt = plaintext(1000);
    let s = v2::seal(
        Backend::RustCrypto,
        &id(),
        &to(&[&a, &b, &c]),
        false,
        Placement::Prefix,
        &pt,
        &mut rng(),
    )
    .unwrap();
    for backend in Backend::ALL {
        for k in [&a, &b, &c] {
            let got = v2::open(
                &id(),
                &private(backend, k),
                &s.header,
                Placement::Prefix,
                &s.chunks,
            )
            .unwrap();
            assert_eq!(got.as_slice(), &pt[..]);
        }
        let e = v2::open(
            &id(),
            &private(backend, &stranger),
            &s.header,
            Placement::Prefix,
            &s.chunks,
        );
        assert!(matches!(e, Err(Error::Decrypt)), "{e:?}");
    }
}

#[test]
fn mixing_strengths_needs_a_flag_the_header_records() {
    let (pq, classic) = (key(KemId::MlKem768, 1), key(KemId::X25519, 2));
    let e = v2::seal(
        Backend::AwsLc,
        &id(),
        &to(&[&pq, &classic]),
        false,
        Placement::Prefix,
        b"x",
        &mut rng(),
    )
    .err()
    .unwrap();
    assert!(
        e.to_string()
            .contains("only as strong as its classical wrap"),
        "{e}"
    );
    let s = sealed(&[&pq, &classic], true, Placement::Prefix, b"x");
    assert_eq!(s.header[9] & 1, 1, "flag bit 0");
    // The flag without mixed recipients, or mixed recipients without the flag, is refused.
    let single = sealed(&[&pq], true, Placement::Prefix, b"x");
    assert_eq!(single.header[9] & 1, 0, "one strength: no flag");
    let mut flagged = single.header.clone();
    flagged[9] |= 1;
    let mut unflagged = s.header.clone();
    unflagged[9] &= !1;
    for (h, chunks) in [(&flagged, &single.chunks), (&unflagged, &s.chunks)] {
        let e = v2::open(
            &id(),
            &private(Backend::AwsLc, &pq),
            h,
            Placement::Prefix,
            chunks,
        )
        .unwrap_err();
        assert!(e.to_string().contains("mixed-strength flag"), "{e}");
    }
    // Strength is post-quantum or classical, not the security category (§3's reading):
    // ML-KEM-768 beside ML-KEM-1024 is one strength, sealed without the flag, and the flag
    // on it is refused as on any unmixed object.
    let strong = key(KemId::MlKem1024, 3);
    let both = sealed(&[&pq, &strong], false, Placement::Prefix, b"x");
    assert_eq!(both.header[9] & 1, 0, "768 beside 1024: no flag");
    let mut flagged = both.header.clone();
    flagged[9] |= 1;
    let e = v2::open(
        &id(),
        &private(Backend::AwsLc, &strong),
        &flagged,
        Placement::Prefix,
        &both.chunks,
    )
    .unwrap_err();
    assert!(e.to_string().contains("mixed-strength flag"), "{e}");
}

/// The header `h` with the ML-KEM-768 entry at `e` wrapping `dk` to `public` instead, as
/// FORMAT-v2 §5 says a wrap is made: `info` from the header's identity hash and the entry's
/// key id, the fixed part's hash as AAD.
fn rewrap(h: &[u8], e: usize, public: &[u8], dk: &[u8]) -> Vec<u8> {
    let fixed_hash: [u8; 32] = sha2::Sha256::digest(&h[..91]).into();
    let suite = Suite {
        kem: KemId::MlKem768,
        kdf: KdfId::HkdfSha256,
        aead: AeadId::Aes256Gcm,
    };
    let mut info = b"pqbench-envelope/2\0".to_vec();
    info.extend_from_slice(&h[14..46]);
    info.extend_from_slice(&h[e + 2..e + 34]);
    let (enc, mut ctx) = hpke::setup_base_s(
        Backend::RustCrypto,
        suite,
        public,
        &info,
        Randomness::Rng(&mut rng()),
    )
    .unwrap();
    let mut out = h.to_vec();
    out[e + 36..e + 36 + 1088].copy_from_slice(&enc);
    out[e + 36 + 1088 + 2..e + 36 + 1088 + 2 + 48]
        .copy_from_slice(&ctx.seal(&fixed_hash, dk).unwrap());
    out
}

/// A tampered object: what was done, its header and chunks, where the header is claimed
/// to be, and the identity asked for.
type Case = (String, Vec<u8>, Vec<u8>, Placement, ObjectId);

/// Every way issue 21 lists to tamper with an object fails, on both backends, and never
/// yields plaintext.
#[test]
fn tampering_is_refused() {
    let (a, b) = (key(KemId::MlKem768, 1), key(KemId::XWing, 2));
    let pt = plaintext(5000);
    let s = sealed(&[&a, &b], false, Placement::Prefix, &pt);
    let h = &s.header;
    // Recipient entries: a's starts at 91 (86 + 1088 bytes), b's after it.
    let (ea, eb) = (91..91 + 86 + 1088, 91 + 86 + 1088..h.len());
    let entry = |r: &std::ops::Range<usize>| h[r.clone()].to_vec();
    let with_entries = |entries: &[Vec<u8>]| {
        let mut out = h[..91].to_vec();
        out[90] = u8::try_from(entries.len()).unwrap();
        let len = u32::try_from(91 + entries.iter().map(Vec::len).sum::<usize>()).unwrap();
        out[4..8].copy_from_slice(&len.to_be_bytes());
        for e in entries {
            out.extend_from_slice(e);
        }
        out
    };
    let other_id = ObjectId::new("tenant-b", "bucket", "reports/2026.csv", &id().version).unwrap();
    let mut cases: Vec<Case> = Vec::new();
    let mut push = |what: &str, header: Vec<u8>, chunks: Vec<u8>| {
        cases.push((what.to_owned(), header, chunks, Placement::Prefix, id()));
    };
    for i in (0..91).chain([ea.start + 5, ea.start + 40, eb.start + 2, h.len() - 1]) {
        let mut t = h.clone();
        t[i] ^= 0x01;
        push(&format!("header byte {i} flipped"), t, s.chunks.clone());
    }
    push(
        "entries swapped",
        with_entries(&[entry(&eb), entry(&ea)]),
        s.chunks.clone(),
    );
    push(
        "entry duplicated",
        with_entries(&[entry(&ea), entry(&ea)]),
        s.chunks.clone(),
    );
    push(
        "entry dropped",
        with_entries(&[entry(&ea)]),
        s.chunks.clone(),
    );
    let mut relabelled = h.clone();
    relabelled[8] = 1;
    push("version relabelled 1", relabelled, s.chunks.clone());
    let mut chunk = s.chunks.clone();
    chunk[100] ^= 0x80;
    push("chunk byte flipped", h.clone(), chunk);
    push(
        "chunks truncated",
        h.clone(),
        s.chunks[..s.chunks.len() - 1].to_vec(),
    );
    push("chunks extended", h.clone(), [&s.chunks[..], &[0]].concat());
    cases.push((
        "placement metadata claimed".into(),
        h.clone(),
        s.chunks.clone(),
        Placement::Metadata,
        id(),
    ));
    cases.push((
        "another identity".into(),
        h.clone(),
        s.chunks.clone(),
        Placement::Prefix,
        other_id,
    ));
    // A's wrap replaced by one to another key under A's key id.
    let c = key(KemId::MlKem768, 9);
    cases.push((
        "a's wrap made to another key".into(),
        rewrap(h, ea.start, &c.public, &[7u8; 32]),
        s.chunks.clone(),
        Placement::Prefix,
        id(),
    ));
    for backend in Backend::ALL {
        for (what, header, chunks, found, oid) in &cases {
            for k in [&a, &b] {
                let r = v2::open(oid, &private(backend, k), header, *found, chunks);
                assert!(
                    matches!(r, Err(Error::Decrypt | Error::Header(_))),
                    "{what} on {backend}: {:?}",
                    r.map(|p| p.len())
                );
            }
        }
    }
    // The untouched object still opens for both.
    for k in [&a, &b] {
        assert!(
            v2::open(
                &id(),
                &private(Backend::AwsLc, k),
                h,
                Placement::Prefix,
                &s.chunks
            )
            .is_ok()
        );
    }
}

/// The splitting attack: the writer wraps another data key to B and encrypts B's chunks
/// under it, so that B, alone, would read another plaintext than A. The commitment names one
/// data key (the one A gets); B's wrap holds another, and B refuses before any chunk.
#[test]
fn the_commitment_stops_the_splitting_attack() {
    use aes_gcm::aead::{AeadInOut as _, KeyInit as _};
    let (a, b) = (key(KemId::MlKem768, 1), key(KemId::MlKem768, 2));
    let s = sealed(&[&a, &b], false, Placement::Prefix, b"for a");
    let h = s.header.clone();
    let eb = 91 + 86 + 1088;
    let identity_hash = &h[14..46];
    // A correct wrap to B of another data key…
    let dk2 = [0x42u8; 32];
    let forged = rewrap(&h, eb, &b.public, &dk2);
    // …and the chunk encrypted for B under it (§6), as the writer can.
    let header_hash: [u8; 32] = sha2::Sha256::digest(&forged).into();
    let prk = hkdf::Hkdf::<sha2::Sha256>::new(Some(identity_hash), &dk2);
    let mut k = [0u8; 32];
    prk.expand(&[&b"pqbench-v2 data"[..], &header_hash].concat(), &mut k)
        .unwrap();
    let mut ad = header_hash.to_vec();
    ad.extend_from_slice(&0u64.to_be_bytes());
    ad.extend_from_slice(&5u64.to_be_bytes());
    ad.push(1);
    let mut chunk = b"for b".to_vec();
    let tag = aes_gcm::Aes256Gcm::new(&k.into())
        .encrypt_inout_detached(&[0u8; 12].into(), &ad, chunk.as_mut_slice().into())
        .unwrap();
    chunk.extend_from_slice(&tag);
    for backend in Backend::ALL {
        let r = v2::open(
            &id(),
            &private(backend, &b),
            &forged,
            Placement::Prefix,
            &chunk,
        );
        assert!(
            matches!(r, Err(Error::Decrypt)),
            "{backend}: {:?}",
            r.map(|p| p.to_vec())
        );
    }
}

/// The streaming writer and reader over pqbench key files' keys: a [`v2::Sender`] built
/// from public keys seals chunk by chunk (here 3 chunks: 4 MiB, 4 MiB, 7 bytes), the
/// in-memory [`v2::open`] opens it; [`v2::seal`] output opens chunk by chunk through a
/// [`v2::Receiver`] built from the secret key; a key type without a v2 suite is refused.
#[test]
fn streaming_sender_and_receiver_agree_with_the_in_memory_functions() {
    use envelope::{KeyType, SecretKey};
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let size = 2 * v2::CHUNK_SIZE as usize + 7;
    let plaintext: Vec<u8> = (0..size).map(|i| u8::try_from(i % 251).unwrap()).collect();
    for kt in [
        KeyType::MlKem768,
        KeyType::MlKem1024,
        KeyType::XWing,
        KeyType::X25519,
    ] {
        let sk = SecretKey::generate(kt, &mut rng).unwrap();
        let pk = sk.public_key().unwrap().unwrap();
        for b in [Backend::AwsLc, Backend::RustCrypto] {
            let sender = v2::Sender::new(b, &[&pk], false, Placement::Prefix).unwrap();
            let mut sealer = sender.seal(&id(), size as u64, &mut rng).unwrap();
            assert_eq!(sealer.header().len(), sender.header_len());
            let header = sealer.header().to_vec();
            let mut chunks = Vec::new();
            let mut at = 0;
            let mut lens = Vec::new();
            while let Some(n) = sealer.next_chunk_len() {
                lens.push(n);
                let mut buf = plaintext[at..at + n].to_vec();
                at += n;
                sealer.seal_chunk(&mut buf).unwrap();
                chunks.extend_from_slice(&buf);
            }
            assert_eq!(lens, [4_194_304, 4_194_304, 7]);
            assert_eq!(chunks.len() as u64, sealer.chunks_size());
            sealer.finish().unwrap();
            let other = if b == Backend::AwsLc {
                Backend::RustCrypto
            } else {
                Backend::AwsLc
            };
            let receiver = v2::Receiver::new(other, &sk).unwrap();
            let out = v2::open(&id(), receiver.key(), &header, Placement::Prefix, &chunks).unwrap();
            assert!(out.as_slice() == plaintext.as_slice(), "{kt:?} {b:?}");

            // ML-KEM-1024's header (1,745 bytes) does not fit in metadata (§8).
            let placement = if kt == KeyType::MlKem1024 {
                Placement::Prefix
            } else {
                Placement::Metadata
            };
            let sealed = v2::seal(
                b,
                &id(),
                &[To {
                    kem: receiver.key().kem(),
                    public: pk.as_bytes(),
                }],
                false,
                placement,
                &plaintext,
                &mut rng,
            )
            .unwrap();
            let mut opener = receiver.open(&id(), &sealed.header, placement).unwrap();
            let mut got = Vec::new();
            let mut at = 0;
            while let Some(n) = opener.next_chunk_len() {
                let mut buf = sealed.chunks[at..at + n].to_vec();
                at += n;
                opener.open_chunk(&mut buf).unwrap();
                got.extend_from_slice(&buf);
            }
            let times = opener.finish().unwrap();
            assert!(got == plaintext);
            assert!(times.key_establishment > std::time::Duration::ZERO);
        }
    }
    let rsa = SecretKey::generate(KeyType::Psk, &mut rng).unwrap();
    assert!(
        matches!(v2::Receiver::new(Backend::AwsLc, &rsa), Err(Error::Key(m)) if m.contains("no format-v2 suite"))
    );
}

/// An opener given more than the header's bytes, or stopped before the final chunk,
/// releases nothing complete: `finish` fails.
#[test]
fn an_opener_refuses_trailing_header_bytes_and_a_missing_final_chunk() {
    let mut rng = ChaCha20Rng::seed_from_u64(22);
    let k = key(KemId::MlKem768, 9);
    let pt = vec![5u8; v2::CHUNK_SIZE as usize + 1];
    let sealed = v2::seal(
        Backend::AwsLc,
        &id(),
        &to(&[&k]),
        false,
        Placement::Prefix,
        &pt,
        &mut rng,
    )
    .unwrap();
    let sk = private(Backend::AwsLc, &k);
    let mut longer = sealed.header.clone();
    longer.push(0);
    assert!(matches!(
        v2::Opener::new(&id(), &sk, &longer, Placement::Prefix),
        Err(Error::Header(_))
    ));
    let mut opener = v2::Opener::new(&id(), &sk, &sealed.header, Placement::Prefix).unwrap();
    let n = opener.next_chunk_len().unwrap();
    let mut buf = sealed.chunks[..n].to_vec();
    opener.open_chunk(&mut buf).unwrap();
    assert!(matches!(opener.finish(), Err(Error::Decrypt)));
    let start: [u8; 8] = sealed.header[..8].try_into().unwrap();
    assert_eq!(v2::announced_len(&start).unwrap(), sealed.header.len());
    let mut bad = start;
    bad[4..8].copy_from_slice(&70_000u32.to_be_bytes());
    assert!(v2::announced_len(&bad).is_err());
}

/// §4 "Errors": a structure check that fails (checks 1-3 and 5, public bytes, before any
/// key is used) is `Error::Header` naming the check; the identity, the reader's entry, the
/// unwrap, the commitment, the body's length and the chunks are the one opaque
/// `Error::Decrypt`. One case per check, each pinned to its class and message.
#[test]
fn errors_fall_in_the_two_classes_of_section_4() {
    let (a, b) = (key(KemId::MlKem768, 1), key(KemId::XWing, 2));
    let s = sealed(&[&a], false, Placement::Prefix, &plaintext(5000));
    let h = &s.header;
    let edit = |at: usize, bytes: &[u8]| {
        let mut t = h.clone();
        t[at..at + bytes.len()].copy_from_slice(bytes);
        t
    };
    let mut dup = h.clone();
    dup.extend_from_slice(&h[91..]);
    dup[90] = 2;
    let len = u32::try_from(dup.len()).unwrap();
    dup[4..8].copy_from_slice(&len.to_be_bytes());
    let header_cases: Vec<(&str, Vec<u8>, Placement, &str)> = vec![
        (
            "1 magic",
            edit(0, b"PQB3"),
            Placement::Prefix,
            "magic is not PQB2",
        ),
        (
            "1 header_len",
            edit(4, &70_000u32.to_be_bytes()),
            Placement::Prefix,
            "header_len 70000 exceeds",
        ),
        (
            "2 version",
            edit(8, &[4]), // 3 is v2.1 (§10); 4 is no version
            Placement::Prefix,
            "version is not 2",
        ),
        (
            "2 reserved flags",
            edit(9, &[0b110]),
            Placement::Prefix,
            "reserved flag bits are set",
        ),
        (
            "2 placement",
            h.clone(),
            Placement::Metadata,
            "placement flag does not say where it was found",
        ),
        (
            "3 suite",
            edit(10, &[0, 2]),
            Placement::Prefix,
            "kdf_id/aead_id are not",
        ),
        (
            "3 chunk_size",
            edit(54, &[0, 0x10, 0, 0]),
            Placement::Prefix,
            "chunk_size is not 4194304",
        ),
        (
            "3 plaintext_size",
            edit(46, &u64::MAX.to_be_bytes()),
            Placement::Prefix,
            "plaintext_size above 2^53 - 1",
        ),
        (
            "5 recipient_count",
            edit(90, &[0]),
            Placement::Prefix,
            "recipient_count is not 1..16",
        ),
        (
            "5 kem_id",
            edit(91, &[0x12, 0x34]),
            Placement::Prefix,
            "recipient 0: unknown kem_id",
        ),
        (
            "5 key_id twice",
            dup,
            Placement::Prefix,
            "recipient 1: key_id listed twice",
        ),
        (
            "5 mixed flag",
            edit(9, &[0b11]),
            Placement::Prefix,
            "mixed-strength flag does not match",
        ),
    ];
    let sk = private(Backend::AwsLc, &a);
    for (what, header, found, needle) in header_cases {
        match v2::open(&id(), &sk, &header, found, &s.chunks) {
            Err(Error::Header(m)) => assert!(m.contains(needle), "{what}: {m}"),
            other => panic!("{what}: {:?}", other.map(|p| p.len())),
        }
    }
    let other_id = ObjectId::new("tenant-b", "bucket", "reports/2026.csv", &id().version).unwrap();
    let wrapped_at = h.len() - 48;
    let mut longer = s.chunks.clone();
    longer.push(0);
    // (what, identity asked for, reader's key, header, chunks)
    type Opaque<'a> = (&'a str, ObjectId, &'a Key, Vec<u8>, Vec<u8>);
    let opaque_cases: Vec<Opaque> = vec![
        ("4 identity", other_id, &a, h.clone(), s.chunks.clone()),
        ("not a recipient", id(), &b, h.clone(), s.chunks.clone()),
        (
            "unwrap: enc",
            id(),
            &a,
            edit(91 + 36, &[h[127] ^ 1]),
            s.chunks.clone(),
        ),
        (
            "unwrap: wrapped",
            id(),
            &a,
            edit(wrapped_at, &[h[wrapped_at] ^ 1]),
            s.chunks.clone(),
        ),
        (
            "commitment",
            id(),
            &a,
            edit(58, &[h[58] ^ 1]),
            s.chunks.clone(),
        ),
        ("6 body length", id(), &a, h.clone(), longer),
        (
            "6 truncated",
            id(),
            &a,
            h.clone(),
            s.chunks[..s.chunks.len() - 1].to_vec(),
        ),
        ("chunk", id(), &a, h.clone(), {
            let mut c = s.chunks.clone();
            c[10] ^= 1;
            c
        }),
    ];
    for (what, oid, k, header, chunks) in opaque_cases {
        let r = v2::open(
            &oid,
            &private(Backend::AwsLc, k),
            &header,
            Placement::Prefix,
            &chunks,
        );
        assert!(
            matches!(r, Err(Error::Decrypt)),
            "{what}: {:?}",
            r.map(|p| p.len())
        );
        assert_eq!(
            r.unwrap_err().to_string(),
            "decryption failed: the object is corrupt, was tampered with, or is not for this key",
            "{what}: one message for every opaque failure"
        );
    }
}

/// `Receiver::requiring_pq` (`--require-pq`): an object with a classical recipient entry
/// (so any with the mixed-strength flag) is refused before any key is used, naming the
/// entry; one whose recipients are all post-quantum (ML-KEM-768 beside X-Wing, ML-KEM-768
/// beside ML-KEM-1024) opens; a
/// classical reader cannot require it.
#[test]
fn a_reader_can_require_post_quantum_recipients_only() {
    use envelope::{KeyType, SecretKey};
    let (pq, hybrid, classic) = (
        key(KemId::MlKem768, 1),
        key(KemId::XWing, 2),
        key(KemId::X25519, 3),
    );
    let secret = |k: &Key, kt| SecretKey::from_bytes(kt, k.secret.clone()).unwrap();
    let reader = v2::Receiver::new(Backend::AwsLc, &secret(&pq, KeyType::MlKem768))
        .unwrap()
        .requiring_pq()
        .unwrap();
    let open = |recipients: &[&Key], mixed: bool| {
        let s = v2::seal(
            Backend::AwsLc,
            &id(),
            &to(recipients),
            mixed,
            Placement::Prefix,
            b"x",
            &mut rng(),
        )
        .unwrap();
        reader.open(&id(), &s.header, Placement::Prefix).map(|_| ())
    };
    open(&[&pq, &hybrid], false).expect("all post-quantum");
    open(&[&pq, &key(KemId::MlKem1024, 4)], false).expect("categories 3 and 5");
    match open(&[&pq, &classic], true) {
        Err(Error::NotPostQuantum(m)) => {
            assert!(
                m.starts_with("recipient 1 is X25519, a classical KEM"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Without the requirement the same mixed object opens (the writer allowed it).
    let plain = v2::Receiver::new(Backend::AwsLc, &secret(&pq, KeyType::MlKem768)).unwrap();
    let s = sealed(&[&pq, &classic], true, Placement::Prefix, b"x");
    assert!(plain.open(&id(), &s.header, Placement::Prefix).is_ok());
    let e = v2::Receiver::new(Backend::AwsLc, &secret(&classic, KeyType::X25519))
        .unwrap()
        .requiring_pq()
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("every object would be refused"),
        "{e}"
    );
}

/// The readings FORMAT-v2.md pins (issue 37): the reader's entry is the one with its key id
/// **and** its key's KEM; a header in metadata is at most 1,527 bytes for readers too, and
/// the entry is canonical base64 with nothing around it; names are compared as the UTF-8
/// bytes given, never Unicode-normalised.
#[test]
fn the_texts_readings_of_entry_metadata_and_names_hold() {
    let (a, b) = (key(KemId::MlKem768, 1), key(KemId::XWing, 2));
    let sk_a = private(Backend::AwsLc, &a);
    // b's entry carrying a's key id: not a's entry (another KEM), the opaque error.
    let s = sealed(&[&b], false, Placement::Prefix, b"x");
    let mut h = s.header.clone();
    h[93..125].copy_from_slice(&sha2::Sha256::digest(&a.public));
    assert!(matches!(
        v2::open(&id(), &sk_a, &h, Placement::Prefix, &s.chunks),
        Err(Error::Decrypt)
    ));

    // A 1,745-byte ML-KEM-1024 header said to be in metadata: refused by its size, from
    // the entry's length and from the header itself.
    let big = key(KemId::MlKem1024, 3);
    let s = sealed(&[&big], false, Placement::Prefix, b"x");
    let mut h = s.header.clone();
    assert_eq!(h.len(), 1745);
    h[9] &= !0b10; // the placement bit: metadata
    match v2::open(
        &id(),
        &private(Backend::AwsLc, &big),
        &h,
        Placement::Metadata,
        &s.chunks,
    ) {
        Err(Error::Header(m)) => assert!(
            m.contains("a header in metadata is at most 1527 bytes; this one is 1745"),
            "{m}"
        ),
        other => panic!("{:?}", other.map(|p| p.len())),
    }
    match v2::decode_metadata(&v2::encode_metadata(&h)) {
        Err(Error::Header(m)) => assert!(m.contains("(1527 bytes)"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Whitespace around or inside the entry (HTTP strips the outside before a reader sees
    // it) and non-canonical padding bits are refused.
    let small = sealed(&[&a], false, Placement::Metadata, b"x");
    let entry = v2::encode_metadata(&small.header);
    assert_eq!(v2::decode_metadata(&entry).unwrap(), small.header);
    let mut bent = entry.clone().into_bytes();
    let last = entry.trim_end_matches('=').len() - 1;
    // The last character's lowest bit is a padding bit: set it.
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let at = alphabet.iter().position(|&c| c == bent[last]).unwrap();
    bent[last] = alphabet[at ^ 1];
    for bad in [
        format!(" {entry}"),
        format!("{entry}\n"),
        format!("{} {}", &entry[..4], &entry[4..]),
        String::from_utf8(bent).unwrap(),
    ] {
        assert!(
            matches!(v2::decode_metadata(&bad), Err(Error::Header(_))),
            "{bad:?}"
        );
    }

    // "é" precomposed (NFC) and decomposed (NFD) are different names: the opaque error.
    let nfc = ObjectId::new("t", "b", "caf\u{e9}", &id().version).unwrap();
    let nfd = ObjectId::new("t", "b", "cafe\u{301}", &id().version).unwrap();
    let s = v2::seal(
        Backend::AwsLc,
        &nfc,
        &to(&[&a]),
        false,
        Placement::Prefix,
        b"x",
        &mut rng(),
    )
    .unwrap();
    assert!(v2::open(&nfc, &sk_a, &s.header, Placement::Prefix, &s.chunks).is_ok());
    assert!(matches!(
        v2::open(&nfd, &sk_a, &s.header, Placement::Prefix, &s.chunks),
        Err(Error::Decrypt)
    ));
}

/// FORMAT-v2.md §3: an X-Wing `enc` whose X25519 share is of small order is refused by the
/// decapsulation (the opaque error), stricter than the draft, which would derive a shared
/// secret from an all-zero X25519 output; on both backends. The same `enc` with its own
/// share decapsulates.
#[test]
fn an_x_wing_enc_with_a_small_order_x25519_share_is_refused() {
    let k = key(KemId::XWing, 5);
    let s = sealed(&[&k], false, Placement::Prefix, b"x");
    let enc = &s.header[91 + 36..91 + 36 + 1120];
    let mut one = [0u8; 32];
    one[0] = 1;
    for backend in Backend::ALL {
        let sk = private(backend, &k);
        assert!(sk.decap(enc).is_ok(), "{backend}");
        for u in [[0u8; 32], one] {
            let mut e = enc.to_vec();
            e[1088..].copy_from_slice(&u);
            assert!(
                matches!(sk.decap(&e), Err(Error::Decrypt)),
                "{backend}: share {u:02x?}"
            );
        }
    }
}

/// A reader whose key is in a key service (issue 41): it opens with the public key alone,
/// the service's one operation (ML-KEM's decapsulation of the entry's `enc`, or X25519
/// with it) done by a v1 reader holding the secret key, as the embedded service does; it
/// reads what the local reader reads, in both placements. A secret that is wrong, short
/// or an all-zero X25519 output is the opaque error; an X-Wing key cannot be remote.
#[test]
fn a_remote_reader_opens_with_the_services_answer_what_the_local_reader_opens() {
    use envelope::{KeyType, Mode, Receiver, SecretKey};
    let pt = plaintext(70_000);
    for (kt, mode) in [
        (KeyType::MlKem768, Mode::MlKem768),
        (KeyType::MlKem1024, Mode::MlKem1024),
        (KeyType::X25519, Mode::X25519),
    ] {
        let sk = SecretKey::generate(kt, &mut rng()).unwrap();
        let pk = sk.public_key().unwrap().unwrap();
        let kem = v2::kem_of(kt).unwrap();
        let recipient = [To {
            kem,
            public: pk.as_bytes(),
        }];
        let service = Receiver::new(mode, Backend::AwsLc, Some(&sk)).unwrap();
        let local = v2::Receiver::new(Backend::AwsLc, &sk).unwrap();
        for placement in [Placement::Metadata, Placement::Prefix] {
            if placement == Placement::Metadata && kt == KeyType::MlKem1024 {
                continue; // Its header does not fit in S3's metadata (§8).
            }
            let s = v2::seal(
                Backend::AwsLc,
                &id(),
                &recipient,
                false,
                placement,
                &pt,
                &mut rng(),
            )
            .unwrap();
            let opened = local.open(&id(), &s.header, placement).unwrap();
            assert_eq!(*opened.open_all(&s.chunks).unwrap(), pt, "{kt} local");
            for backend in [Backend::AwsLc, Backend::RustCrypto] {
                let remote = v2::RemoteReceiver::new(backend, &pk).unwrap();
                let answer =
                    |p: &v2::Pending<'_, '_>| service.perform(p.key_request().unwrap()).unwrap();
                let pending = remote.begin(&id(), &s.header, placement).unwrap();
                let shared = answer(&pending);
                let opener = pending
                    .complete(&shared, std::time::Duration::from_micros(5))
                    .unwrap();
                assert_eq!(*opener.open_all(&s.chunks).unwrap(), pt, "{kt} {backend:?}");

                let mut wrong = shared.to_vec();
                wrong[7] ^= 1;
                let pending = remote.begin(&id(), &s.header, placement).unwrap();
                let e = pending.complete(&wrong, Default::default()).err();
                assert!(matches!(e, Some(Error::Decrypt)), "{kt}: {e:?}");
                let pending = remote.begin(&id(), &s.header, placement).unwrap();
                let e = pending.complete(&shared[..31], Default::default()).err();
                assert!(matches!(e, Some(Error::Decrypt)), "{kt}: {e:?}");
                if kt == KeyType::X25519 {
                    let pending = remote.begin(&id(), &s.header, placement).unwrap();
                    let e = pending.complete(&[0u8; 32], Default::default()).err();
                    assert!(matches!(e, Some(Error::Decrypt)), "{e:?}");
                }
            }
        }
    }
    let xwing = SecretKey::generate(KeyType::XWing, &mut rng()).unwrap();
    let e = v2::RemoteReceiver::new(Backend::AwsLc, &xwing.public_key().unwrap().unwrap())
        .err()
        .map(|e| e.to_string());
    assert!(e.is_some_and(|e| e.contains("cannot be in a key service")));
}
