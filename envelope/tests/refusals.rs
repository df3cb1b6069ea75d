//! Inputs FORMAT.md forbids, refused where they enter (issue 16 items 3–5 and 7):
//!
//! - RSA keys whose public exponent is not 65537 (§7), at key load, on both backends
//!   (`tests/vectors/rsa-exponent.json`: keys made by OpenSSL with e = 3 and e = 65539; an
//!   RSA-3072 key with e = 3 used to round-trip);
//! - ctx integers above 2^53 − 1 (§3), by the reader and by the writer: an RFC 8785
//!   implementation serializes numbers through IEEE doubles, so a larger integer has
//!   another canonical form there and derives another key;
//! - integers written as `1.0`, `-0`, `1e0`, `+1`, `01`, and a leading byte-order mark
//!   (§3, §5);
//! - manifests above the 64 KiB limit, which a reader stops reading at (§5, check 1).

use std::io::Read;

use envelope::{
    Backend, Context, Error, KeyType, MAX_CTX_INTEGER, MAX_MANIFEST_LEN, Manifest, Mode, ObjectId,
    PublicKey, SealKey, SecretKey, Sender, SessionBounds, kat, seal_stream,
};
use serde_json::Value;

/// One key of `rsa-exponent.json`.
struct RsaCase {
    kt: KeyType,
    bits: usize,
    e: u64,
    spki: Vec<u8>,
    pkcs8: Vec<u8>,
}

fn rsa_cases() -> Vec<RsaCase> {
    let text = include_str!("vectors/rsa-exponent.json");
    let doc: Value = serde_json::from_str(text).expect("json");
    doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let bits = usize::try_from(c["bits"].as_u64().expect("bits")).expect("bits");
            let kt = if bits == 3072 {
                KeyType::Rsa3072
            } else {
                KeyType::Rsa4096
            };
            let e = c["e"].as_u64().expect("e");
            let hexed = |k: &str| hex::decode(c[k].as_str().expect(k)).expect("hex");
            RsaCase {
                kt,
                bits,
                e,
                spki: hexed("spki"),
                pkcs8: hexed("pkcs8"),
            }
        })
        .collect()
}

fn refused_for_exponent<T>(r: Result<T, Error>, e: u64, case: &str) {
    match r {
        Err(Error::Key(m)) => assert!(
            m.contains(&format!("RSA public exponent is {e}")) && m.contains("65537"),
            "{case}: {m}"
        ),
        Err(other) => panic!("{case}: refused for another reason: {other}"),
        Ok(_) => panic!("{case}: an RSA key with e = {e} was accepted"),
    }
}

#[test]
fn rsa_keys_with_an_exponent_other_than_65537_are_refused_at_load_on_both_backends() {
    let cases = rsa_cases();
    assert_eq!(cases.len(), 3);
    for RsaCase {
        kt,
        bits,
        e,
        spki,
        pkcs8,
    } in cases
    {
        let case = format!("{kt} e={e}");
        refused_for_exponent(PublicKey::from_bytes(kt, spki.clone()), e, &case);
        refused_for_exponent(SecretKey::from_bytes(kt, pkcs8.clone()), e, &case);
        for backend in Backend::ALL {
            let case = format!("{case} on {backend}");
            refused_for_exponent(
                kat::rsa_oaep_encrypt(backend, bits, &spki, &[7u8; 32]),
                e,
                &case,
            );
            refused_for_exponent(
                kat::rsa_oaep_decrypt(backend, bits, &pkcs8, &vec![1u8; bits / 8]),
                e,
                &case,
            );
        }
    }
    // The same loaders take a key with e = 65537 (the refusal is about e, not RSA).
    let sk = SecretKey::generate(KeyType::Rsa3072, &mut envelope::os_rng()).expect("keygen");
    let pk = sk.public_key().expect("public").expect("public");
    assert!(PublicKey::from_bytes(KeyType::Rsa3072, pk.as_bytes().to_vec()).is_ok());
    assert!(SecretKey::from_bytes(KeyType::Rsa3072, sk.expose_secret().to_vec()).is_ok());
}

/// A valid `ml-kem-768-session` manifest (every ctx integer present).
fn session_manifest() -> Vec<u8> {
    let sk = SecretKey::generate(KeyType::MlKem768, &mut envelope::os_rng()).expect("keygen");
    let pk = sk.public_key().expect("pk").expect("pk");
    let sender =
        Sender::new(Mode::MlKem768Session, Backend::AwsLc, SealKey::Public(&pk)).expect("sender");
    let id = ObjectId::new_version("t", "b", "k").expect("id");
    let mut data = Vec::new();
    let sealed = seal_stream(
        &sender,
        &id,
        3,
        &b"abc"[..],
        &mut data,
        &mut envelope::os_rng(),
    )
    .expect("seal");
    sealed.manifest
}

fn parse(manifest: &[u8]) -> Result<Manifest, Error> {
    Manifest::parse(manifest, Mode::MlKem768Session)
}

fn refused_manifest(r: Result<Manifest, Error>, needle: &str, case: &str) {
    match r {
        Err(Error::Manifest(m)) => assert!(m.contains(needle), "{case}: {m}"),
        Err(other) => panic!("{case}: refused for another reason: {other}"),
        Ok(_) => panic!("{case}: accepted"),
    }
}

const INTEGERS: [&str; 8] = [
    "chunk_count",
    "chunk_size",
    "format",
    "plaintext_size",
    "session.age_ms",
    "session.index",
    "session.max_age_ms",
    "session.max_objects",
];

fn member<'a>(m: &'a mut Value, path: &str) -> &'a mut Value {
    path.split('.').fold(&mut m["ctx"], |v, k| &mut v[k])
}

#[test]
fn the_reader_refuses_every_ctx_integer_above_2_pow_53_minus_1() {
    let manifest = session_manifest();
    assert!(parse(&manifest).is_ok(), "the unedited manifest parses");
    for name in INTEGERS {
        for n in [MAX_CTX_INTEGER + 1, u64::MAX] {
            let mut m: Value = serde_json::from_slice(&manifest).expect("json");
            *member(&mut m, name) = Value::from(n);
            let text = serde_json::to_vec(&m).expect("json");
            refused_manifest(parse(&text), "above 2^53 - 1", &format!("{name} = {n}"));
        }
    }
}

#[test]
fn integer_syntax_other_than_plain_digits_and_a_byte_order_mark_are_refused() {
    let manifest = session_manifest();
    let text = String::from_utf8(manifest.clone()).expect("utf8");
    // ctx.format is 1 and ctx.session.index is 0: both have the forms below.
    for (member, value, bad) in [
        (
            "\"format\":1,",
            "1",
            ["1.0", "1e0", "1E0", "+1", "01", "0.1e1"],
        ),
        (
            "\"index\":0,",
            "0",
            ["-0", "0.0", "0e0", "-0.0", "00", "+0"],
        ),
    ] {
        assert!(text.contains(member), "{member} in {text}");
        for b in bad {
            let edited = text.replace(member, &member.replace(value, b));
            assert_ne!(edited, text);
            refused_manifest(parse(edited.as_bytes()), "", &format!("{member} as {b}"));
        }
    }
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(&manifest);
    refused_manifest(parse(&bom), "not a v1 manifest", "leading BOM");
}

/// `c` and `salt` must be canonical base64 (FORMAT.md §5, checks 9 and 10): a last
/// character with non-zero unused bits, missing padding or a line break decodes to the same
/// bytes in lenient decoders and is refused here.
#[test]
fn salt_and_c_must_be_canonical_base64() {
    let manifest = session_manifest();
    let m: Value = serde_json::from_slice(&manifest).expect("json");
    for member in ["salt", "c"] {
        let good = m[member].as_str().expect("b64").to_owned();
        let (body, pad) = good.split_at(good.trim_end_matches('=').len());
        assert!(!pad.is_empty(), "{member} has padding");
        // The last data character of 32 (salt) or 1088 (c) bytes carries unused bits: the
        // next character of the alphabet sets the lowest of them.
        let last = body.chars().last().expect("char");
        let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let i = alphabet.find(last).expect("in alphabet");
        let bumped: String = alphabet.chars().nth(i + 1).into_iter().collect();
        let forms = [
            format!("{}{bumped}{pad}", &body[..body.len() - 1]),
            body.to_owned(),
            format!("{}\n{}", &good[..4], &good[4..]),
        ];
        for bad in forms {
            let mut edited = m.clone();
            edited[member] = Value::from(bad.clone());
            let text = serde_json::to_vec(&edited).expect("json");
            refused_manifest(
                parse(&text),
                "canonical base64",
                &format!("{member} = {bad:?}"),
            );
        }
    }
}

#[test]
fn the_writer_never_produces_a_ctx_integer_above_2_pow_53_minus_1() {
    let manifest = session_manifest();
    let good = parse(&manifest).expect("parses");
    assert!(good.to_bytes().is_ok());
    for name in INTEGERS {
        let mut ctx: Context = good.ctx.clone();
        let mut session = ctx.session.expect("session ctx");
        let slot = match name {
            "chunk_count" => &mut ctx.chunk_count,
            "chunk_size" => &mut ctx.chunk_size,
            "format" => &mut ctx.format,
            "plaintext_size" => &mut ctx.plaintext_size,
            "session.age_ms" => &mut session.age_ms,
            "session.index" => &mut session.index,
            "session.max_age_ms" => &mut session.max_age_ms,
            _ => &mut session.max_objects,
        };
        *slot = MAX_CTX_INTEGER + 1;
        ctx.session = Some(session);
        let err = |r: Result<Vec<u8>, Error>| match r {
            Err(Error::Usage(m)) => assert!(m.contains(&format!("ctx.{name}")), "{m}"),
            other => panic!("{name}: {other:?}"),
        };
        err(ctx.canonical_bytes());
        err(Manifest {
            ctx,
            ..good.clone()
        }
        .to_bytes());
    }
    // Session bounds are ctx integers too: refused when the sender is configured.
    let sk = SecretKey::generate(KeyType::MlKem768, &mut envelope::os_rng()).expect("keygen");
    let pk = sk.public_key().expect("pk").expect("pk");
    let sender = || {
        Sender::new(Mode::MlKem768Session, Backend::AwsLc, SealKey::Public(&pk)).expect("sender")
    };
    for bounds in [
        SessionBounds {
            max_objects: MAX_CTX_INTEGER + 1,
            ..SessionBounds::default()
        },
        SessionBounds {
            max_objects: 1,
            max_age: std::time::Duration::from_millis(MAX_CTX_INTEGER + 1),
        },
    ] {
        match sender().with_session_bounds(bounds) {
            Err(Error::Usage(m)) => assert!(m.contains("2^53 - 1"), "{m}"),
            other => panic!("{bounds:?}: {:?}", other.map(|_| ())),
        }
    }
    let at_limit = SessionBounds {
        max_objects: MAX_CTX_INTEGER,
        max_age: std::time::Duration::from_millis(MAX_CTX_INTEGER),
    };
    assert!(sender().with_session_bounds(at_limit).is_ok());
}

/// A reader that counts what was taken from it.
struct Counted<R> {
    inner: R,
    taken: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.taken += n as u64;
        Ok(n)
    }
}

#[test]
fn a_bounded_manifest_read_stops_one_byte_past_the_limit() {
    let limit = MAX_MANIFEST_LEN as u64;
    let mut huge = Counted {
        inner: std::io::repeat(b' ').take(100 << 20),
        taken: 0,
    };
    match Manifest::read_bounded(&mut huge) {
        Err(Error::Manifest(m)) => assert!(m.contains("65536-byte limit"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(huge.taken, limit + 1);
    let manifest = session_manifest();
    assert_eq!(
        Manifest::read_bounded(&manifest[..]).expect("small manifest"),
        manifest
    );
    let exact = vec![b' '; MAX_MANIFEST_LEN];
    assert_eq!(
        Manifest::read_bounded(&exact[..])
            .expect("at the limit")
            .len(),
        MAX_MANIFEST_LEN
    );
}
