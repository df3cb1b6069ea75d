//! Format v2.1 (`FORMAT-v2.md` §10) in memory: v2.1 objects round-trip for every KEM and
//! placement on both backends; a re-wrap moves an object to new recipients and a new
//! identity with its body byte for byte unchanged; and each claim of §10.2 holds: a v2
//! header cannot be re-wrapped, the old key does not open the new header, an entry
//! transplanted from another object, an added, dropped, reordered or edited entry and every
//! edited fixed field fail every recipient, a damaged wrap fails its recipient alone, and a
//! re-wrapped header does not open another body or the same body under another identity.

#![allow(clippy::unwrap_used, reason = "tests")]

use envelope::hpke::{self, KemId, PrivateKey};
use envelope::v2::{self, HeaderVersion, Placement, To};
use envelope::{Backend, Error, KeyType, ObjectId, PublicKey, SecretKey};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng as _;

const KEMS: [KemId; 4] = [
    KemId::X25519,
    KemId::MlKem768,
    KemId::MlKem1024,
    KemId::XWing,
];

fn id(version: &str) -> ObjectId {
    ObjectId::new("tenant-a", "bucket", "reports/2026.csv", version).unwrap()
}

const OLD: &str = "01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e5f";
const NEW: &str = "01937f3c-7b5e-7cc2-9d4e-6a1b2c3d4e60";

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

fn key_type(kem: KemId) -> KeyType {
    envelope::survey::key_type_of(kem)
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

fn receiver(b: Backend, k: &Key) -> v2::Receiver {
    let sk = SecretKey::from_bytes(key_type(k.kem), k.secret.clone()).unwrap();
    v2::Receiver::new(b, &sk).unwrap()
}

fn sender(b: Backend, keys: &[&Key], mixed: bool, placement: Placement) -> v2::Sender {
    let pks: Vec<PublicKey> = keys
        .iter()
        .map(|k| PublicKey::from_bytes(key_type(k.kem), k.public.clone()).unwrap())
        .collect();
    let refs: Vec<&PublicKey> = pks.iter().collect();
    v2::Sender::new(b, &refs, mixed, placement).unwrap()
}

fn rng() -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(20_261_206)
}

fn plaintext(n: usize) -> Vec<u8> {
    (0..n).map(|i| u8::try_from(i * 7 % 251).unwrap()).collect()
}

fn sealed21(keys: &[&Key], placement: Placement, pt: &[u8]) -> v2::Sealed {
    v2::seal_as(
        HeaderVersion::V2_1,
        Backend::AwsLc,
        &id(OLD),
        &to(keys),
        false,
        placement,
        pt,
        &mut rng(),
    )
    .unwrap()
}

fn open(
    version: &str,
    k: &Key,
    header: &[u8],
    placement: Placement,
    chunks: &[u8],
) -> Result<Vec<u8>, Error> {
    v2::open(
        &id(version),
        &private(Backend::AwsLc, k),
        header,
        placement,
        chunks,
    )
    .map(|p| p.to_vec())
}

#[test]
fn v2_1_objects_round_trip_for_every_kem_placement_and_backend() {
    let pt = plaintext(1000);
    for kem in KEMS {
        let k = key(kem, 3);
        for placement in [Placement::Metadata, Placement::Prefix] {
            let fits = HeaderVersion::V2_1.header_len([kem].into_iter()) <= v2::MAX_METADATA_HEADER;
            for b in [Backend::AwsLc, Backend::RustCrypto] {
                let s = v2::seal_as(
                    HeaderVersion::V2_1,
                    b,
                    &id(OLD),
                    &to(&[&k]),
                    false,
                    placement,
                    &pt,
                    &mut rng(),
                );
                if placement == Placement::Metadata && !fits {
                    assert!(matches!(s, Err(Error::Usage(_))), "{kem:?} in metadata");
                    continue;
                }
                let s = s.unwrap();
                assert_eq!(s.header[8], 3, "version byte");
                assert_eq!(s.header.len(), 123 + 86 + kem.enc_len());
                let (h, _) = v2::Header::parse(&s.header).unwrap();
                assert_eq!(h.origin_hash, Some(v2::identity_hash(&id(OLD))));
                for rb in [Backend::AwsLc, Backend::RustCrypto] {
                    let got = v2::open(&id(OLD), &private(rb, &k), &s.header, placement, &s.chunks)
                        .unwrap();
                    assert_eq!(&got[..], &pt[..], "{kem:?} {placement:?} {b:?}->{rb:?}");
                }
            }
        }
    }
    // §10.1's sizes: one ML-KEM-768 recipient is 1,297 bytes and fits in metadata, X-Wing 1,329.
    assert_eq!(
        HeaderVersion::V2_1.header_len([KemId::MlKem768].into_iter()),
        1297
    );
    assert_eq!(
        HeaderVersion::V2_1.header_len([KemId::XWing].into_iter()),
        1329
    );
    // A v2.1 writer refuses what no longer fits: twelve X25519 recipients are 1,507 bytes
    // in v2 and 1,539 in v2.1.
    let keys: Vec<Key> = (1..=12).map(|n| key(KemId::X25519, n)).collect();
    let refs: Vec<&Key> = keys.iter().collect();
    let twelve = sender(Backend::AwsLc, &refs, false, Placement::Metadata);
    assert_eq!(twelve.header_len(), 1507);
    assert!(matches!(
        twelve.with_header_version(HeaderVersion::V2_1),
        Err(Error::Usage(_))
    ));
}

#[test]
fn a_rewrap_moves_the_object_to_new_recipients_with_the_body_unchanged() {
    let pt = plaintext(4_194_304 + 77); // two chunks
    let old_key = key(KemId::X25519, 1);
    for placement in [Placement::Metadata, Placement::Prefix] {
        let s = sealed21(&[&old_key], placement, &pt);
        let (new_a, new_b) = (key(KemId::MlKem768, 7), key(KemId::XWing, 8));
        for b in [Backend::AwsLc, Backend::RustCrypto] {
            let to_new = sender(b, &[&new_a], false, placement);
            let header = receiver(b, &old_key)
                .rewrap(
                    &id(OLD),
                    &s.header,
                    placement,
                    &id(NEW),
                    &to_new,
                    &mut rng(),
                )
                .unwrap();
            let (h, _) = v2::Header::parse(&header).unwrap();
            assert_eq!(h.identity_hash, v2::identity_hash(&id(NEW)));
            assert_eq!(h.origin_hash, Some(v2::identity_hash(&id(OLD))));
            assert_eq!(h.recipients.len(), 1);
            assert_eq!(h.recipients[0].kem, KemId::MlKem768);
            // The new key opens the untouched body as the new version …
            assert_eq!(
                open(NEW, &new_a, &header, placement, &s.chunks).unwrap(),
                pt
            );
            // … the old key does not open the new header, nor the new key the old one.
            assert!(matches!(
                open(NEW, &old_key, &header, placement, &s.chunks),
                Err(Error::Decrypt)
            ));
            assert!(matches!(
                open(OLD, &new_a, &s.header, placement, &s.chunks),
                Err(Error::Decrypt)
            ));
            // The new header names the new identity: asked as the old version, it is refused.
            assert!(matches!(
                open(OLD, &new_a, &header, placement, &s.chunks),
                Err(Error::Decrypt)
            ));
            // The old header still opens the body (what §10.3 says a re-wrap does not protect).
            assert_eq!(
                open(OLD, &old_key, &s.header, placement, &s.chunks).unwrap(),
                pt
            );

            // A re-wrap of the re-wrap, by the new recipient, to two recipients: the origin stays.
            let two = sender(b, &[&new_a, &new_b], false, Placement::Prefix);
            let again = receiver(b, &new_a)
                .rewrap(&id(NEW), &header, placement, &id(OLD), &two, &mut rng())
                .unwrap();
            assert_eq!(
                v2::Header::parse(&again).unwrap().0.origin_hash,
                h.origin_hash
            );
            for k in [&new_a, &new_b] {
                assert_eq!(
                    open(OLD, k, &again, Placement::Prefix, &s.chunks).unwrap(),
                    pt
                );
            }
        }
    }
}

#[test]
fn a_v2_header_and_a_reader_without_an_entry_cannot_rewrap() {
    let (k, other) = (key(KemId::X25519, 1), key(KemId::X25519, 2));
    let to_new = sender(
        Backend::AwsLc,
        &[&key(KemId::MlKem768, 3)],
        false,
        Placement::Metadata,
    );
    let v2obj = v2::seal(
        Backend::AwsLc,
        &id(OLD),
        &to(&[&k]),
        false,
        Placement::Metadata,
        b"x",
        &mut rng(),
    )
    .unwrap();
    let r = receiver(Backend::AwsLc, &k).rewrap(
        &id(OLD),
        &v2obj.header,
        Placement::Metadata,
        &id(NEW),
        &to_new,
        &mut rng(),
    );
    assert!(matches!(r, Err(Error::NotRewrappable)), "{r:?}");
    let s = sealed21(&[&k], Placement::Metadata, b"x");
    let r = receiver(Backend::AwsLc, &other).rewrap(
        &id(OLD),
        &s.header,
        Placement::Metadata,
        &id(NEW),
        &to_new,
        &mut rng(),
    );
    assert!(matches!(r, Err(Error::Decrypt)), "{r:?}");
    let r = receiver(Backend::AwsLc, &k).rewrap(
        &id(NEW),
        &s.header,
        Placement::Metadata,
        &id(NEW),
        &to_new,
        &mut rng(),
    );
    assert!(
        matches!(r, Err(Error::Decrypt)),
        "asked as another identity: {r:?}"
    );
}

/// The byte offsets of a v2.1 header with entries of these KEMs: where entry `i` starts.
fn entry_at(kems: &[KemId], i: usize) -> usize {
    123 + kems[..i].iter().map(|k| 86 + k.enc_len()).sum::<usize>()
}

#[test]
fn the_wraps_keep_the_header_integral_section_10_2() {
    let pt = plaintext(300);
    let (a, b) = (key(KemId::X25519, 1), key(KemId::MlKem768, 2));
    let kems = [KemId::X25519, KemId::MlKem768];
    let s = v2::seal_as(
        HeaderVersion::V2_1,
        Backend::AwsLc,
        &id(OLD),
        &to(&[&a, &b]),
        true,
        Placement::Prefix,
        &pt,
        &mut rng(),
    )
    .unwrap();
    for k in [&a, &b] {
        assert_eq!(
            open(OLD, k, &s.header, Placement::Prefix, &s.chunks).unwrap(),
            pt
        );
    }
    let fails_for_both = |h: &[u8], what: &str| {
        for k in [&a, &b] {
            let r = open(OLD, k, h, Placement::Prefix, &s.chunks);
            assert!(
                matches!(r, Err(Error::Decrypt | Error::Header(_))),
                "{what}: {r:?}"
            );
        }
    };
    // Every fixed field an attacker could edit without breaking the structure checks.
    for (at, what) in [
        (48, "origin_hash"),
        (85, "plaintext_size"),
        (90, "commitment"),
    ] {
        let mut h = s.header.clone();
        h[at] ^= 1;
        fails_for_both(&h, what);
    }
    // An entry's kem-independent public parts: key id and enc of entry 0 fail entry 1 too.
    for (off, what) in [(2, "key_id of entry 0"), (2 + 32 + 2 + 5, "enc of entry 0")] {
        let mut h = s.header.clone();
        h[entry_at(&kems, 0) + off] ^= 1;
        fails_for_both(&h, what);
    }
    // A damaged wrap fails its recipient alone.
    let mut h = s.header.clone();
    let wrapped0 = entry_at(&kems, 0) + 2 + 32 + 2 + KemId::X25519.enc_len() + 2;
    h[wrapped0 + 3] ^= 1;
    assert!(matches!(
        open(OLD, &a, &h, Placement::Prefix, &s.chunks),
        Err(Error::Decrypt)
    ));
    assert_eq!(open(OLD, &b, &h, Placement::Prefix, &s.chunks).unwrap(), pt);

    // Dropping entry 0 (count and length fixed up, the flag cleared): entry 1 fails.
    let (mut parsed, _) = v2::Header::parse(&s.header).unwrap();
    parsed.recipients.remove(0);
    parsed.mixed = false;
    let dropped = parsed.encode();
    assert!(matches!(
        open(OLD, &b, &dropped, Placement::Prefix, &s.chunks),
        Err(Error::Decrypt)
    ));
    // Reordering the entries: both fail.
    let (mut parsed, _) = v2::Header::parse(&s.header).unwrap();
    parsed.recipients.swap(0, 1);
    fails_for_both(&parsed.encode(), "reordered");
    // An entry transplanted from another object to the same key, added to this header.
    let other = sealed21(&[&key(KemId::XWing, 9)], Placement::Prefix, &pt);
    let (mut parsed, _) = v2::Header::parse(&s.header).unwrap();
    let (o, _) = v2::Header::parse(&other.header).unwrap();
    parsed.recipients.push(o.recipients[0].clone());
    fails_for_both(&parsed.encode(), "added entry");
    assert!(matches!(
        open(
            OLD,
            &key(KemId::XWing, 9),
            &parsed.encode(),
            Placement::Prefix,
            &s.chunks
        ),
        Err(Error::Decrypt)
    ));
}

#[test]
fn a_rewrapped_header_opens_its_body_only() {
    let k = key(KemId::X25519, 1);
    let n = key(KemId::MlKem768, 2);
    let s1 = sealed21(&[&k], Placement::Metadata, &plaintext(500));
    let s2 = v2::seal_as(
        HeaderVersion::V2_1,
        Backend::AwsLc,
        &id(OLD),
        &to(&[&k]),
        false,
        Placement::Metadata,
        &plaintext(500),
        &mut ChaCha20Rng::seed_from_u64(2),
    )
    .unwrap();
    assert_ne!(s1.chunks, s2.chunks, "two data keys");
    let to_new = sender(Backend::AwsLc, &[&n], false, Placement::Metadata);
    let h1 = receiver(Backend::AwsLc, &k)
        .rewrap(
            &id(OLD),
            &s1.header,
            Placement::Metadata,
            &id(NEW),
            &to_new,
            &mut rng(),
        )
        .unwrap();
    // Same identity, size and recipients, another data key: the commitment refuses it.
    assert!(matches!(
        open(NEW, &n, &h1, Placement::Metadata, &s2.chunks),
        Err(Error::Decrypt)
    ));
    // A truncated or extended body fails as in v2.
    let mut short = s1.chunks.clone();
    short.pop();
    assert!(matches!(
        open(NEW, &n, &h1, Placement::Metadata, &short),
        Err(Error::Decrypt)
    ));
    assert_eq!(
        open(NEW, &n, &h1, Placement::Metadata, &s1.chunks).unwrap(),
        plaintext(500)
    );
    // The placement flag still has to say where the header was found.
    assert!(matches!(
        open(NEW, &n, &h1, Placement::Prefix, &s1.chunks),
        Err(Error::Header(_))
    ));
}
