//! Does the envelope add overhead around its primitives?
//!
//! For `ml-kem-768` open of a 64 KiB object on `aws-lc`, compares, in one process and
//! interleaved round by round (so machine noise hits both sides alike):
//!
//! - **envelope**: `Receiver::open` + `Opener::open_chunk` + `finish` (manifest parsing and
//!   validation, ctx canonicalization, decapsulation, HKDF, AES-GCM open, bookkeeping);
//! - **primitives**: AWS-LC ML-KEM-768 decapsulation with a pre-parsed key + HKDF-SHA256 +
//!   AES-256-GCM open of the same 64 KiB ciphertext, called directly on aws-lc-rs.
//!
//! Then the same for **format v2** (`v2::Receiver::open` + `open_chunk` + `finish`: header
//! parse and checks, HPKE `SetupBaseR` with ML-KEM-768, the wrapped key's open, the
//! commitment, the data key and the chunk) against its primitives called directly on
//! aws-lc-rs: ML-KEM-768 decapsulation, the nine HKDF-SHA256 steps (HPKE's key schedule: three
//! extracts and three expands; v2: one extract and two expands, on inputs of the same sizes),
//! SHA-256 of the header (twice: its fixed part and the whole) and of the public key (the key
//! id), AES-256-GCM open of the 48-byte wrap and of the 64 KiB chunk.
//!
//! Prints the medians and their ratios (target ≤ 1.25). Run:
//! `cargo bench -p envelope --bench overhead`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use aws_lc_rs::{aead, digest, hkdf, kem};
use envelope::v2;
use envelope::{
    Backend, KeyType, Mode, ObjectId, Receiver, SealKey, SecretKey, Sender, kat, seal_stream,
};

const SIZE: usize = 64 * 1024;
const ROUNDS: usize = 21;
const PER_ROUND: u32 = 400;

struct Len32;
impl hkdf::KeyType for Len32 {
    fn len(&self) -> usize {
        32
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

/// Both sides warmed up, then timed in `ROUNDS` interleaved rounds of `PER_ROUND` calls:
/// their medians per call and the ratio envelope ÷ primitives.
fn interleaved<'a>(
    envelope_open: &'a mut dyn FnMut(),
    primitives: &'a mut dyn FnMut(),
) -> (Duration, Duration, f64) {
    for _ in 0..PER_ROUND {
        envelope_open();
        primitives();
    }
    let (mut env_t, mut prim_t) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for (side, times) in [
            (&mut *envelope_open, &mut env_t),
            (&mut *primitives, &mut prim_t),
        ] {
            let t = Instant::now();
            for _ in 0..PER_ROUND {
                side();
            }
            times.push(t.elapsed() / PER_ROUND);
        }
    }
    let (e, p) = (median(env_t), median(prim_t));
    (e, p, e.as_secs_f64() / p.as_secs_f64())
}

fn main() {
    let mut rng = envelope::os_rng();
    let sk = SecretKey::generate(KeyType::MlKem768, &mut rng).expect("keygen");
    let pk = sk.public_key().expect("pk").expect("pk");
    let sender = Sender::new(Mode::MlKem768, Backend::AwsLc, SealKey::Public(&pk)).expect("sender");
    let receiver = Receiver::new(Mode::MlKem768, Backend::AwsLc, Some(&sk)).expect("receiver");
    let id = ObjectId::new_version("tenant", "bucket", "bench/overhead").expect("id");
    let pt = vec![0x33u8; SIZE];
    let mut data = Vec::new();
    let sealed =
        seal_stream(&sender, &id, SIZE as u64, &pt[..], &mut data, &mut rng).expect("seal");

    // The primitive baseline's inputs: the same C, salt, nonce, AD and ciphertext.
    let seed: [u8; 64] = sk.expose_secret().try_into().expect("seed");
    let (_, dk_bytes) = kat::ml_kem_keygen(768, &seed).expect("keygen");
    let dk = kem::DecapsulationKey::new(&kem::ML_KEM_768, &dk_bytes).expect("dk");
    let opener = receiver.open(&id, &sealed.manifest).expect("open");
    let m = opener.manifest().clone();
    let ctx_bytes = m.ctx.canonical_bytes().expect("ctx");
    let mut nonce = [0u8; 12];
    nonce[..4].copy_from_slice(&m.nonce_prefix);
    let mut ad = ctx_bytes.clone();
    ad.extend_from_slice(&0u64.to_be_bytes());
    ad.extend_from_slice(&(SIZE as u64).to_be_bytes());
    ad.push(1);

    let mut buf = Vec::with_capacity(SIZE + 16);
    let mut envelope_open = || {
        let mut o = receiver.open(&id, &sealed.manifest).expect("open");
        buf.clear();
        buf.extend_from_slice(&data);
        o.open_chunk(&mut buf).expect("chunk");
        black_box(o.finish().expect("finish"));
    };
    let mut buf2 = Vec::with_capacity(SIZE + 16);
    let mut primitives = || {
        let ss = dk
            .decapsulate(kem::Ciphertext::from(&m.c[..]))
            .expect("decaps");
        let mut key = [0u8; 32];
        hkdf::Salt::new(hkdf::HKDF_SHA256, &m.salt)
            .extract(ss.as_ref())
            .expand(&[&ctx_bytes], Len32)
            .expect("expand")
            .fill(&mut key)
            .expect("fill");
        let k =
            aead::LessSafeKey::new(aead::UnboundKey::new(&aead::AES_256_GCM, &key).expect("key"));
        buf2.clear();
        buf2.extend_from_slice(&data);
        black_box(
            k.open_in_place(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(&ad[..]),
                &mut buf2,
            )
            .expect("open")
            .len(),
        );
    };
    let (e, p, ratio) = interleaved(&mut envelope_open, &mut primitives);
    println!(
        "ml-kem-768 open of 64 KiB on aws-lc, medians of {ROUNDS} interleaved rounds of {PER_ROUND}:"
    );
    println!(
        "  envelope open                          {:8.2} µs",
        e.as_secs_f64() * 1e6
    );
    println!(
        "  primitives (decaps + HKDF + GCM open)  {:8.2} µs",
        p.as_secs_f64() * 1e6
    );
    println!("  ratio envelope / primitives            {ratio:8.3}   (target <= 1.25)");
    v2_overhead(&sk, &pk, &dk, &pt);
}

/// Format v2's open against its primitives (module docs).
fn v2_overhead(
    sk: &SecretKey,
    pk: &envelope::PublicKey,
    dk: &kem::DecapsulationKey<kem::AlgorithmId>,
    pt: &[u8],
) {
    let mut rng = envelope::os_rng();
    let id = ObjectId::new_version("tenant", "bucket", "bench/overhead-v2").expect("id");
    let sender =
        v2::Sender::new(Backend::AwsLc, &[pk], false, v2::Placement::Metadata).expect("sender");
    let mut sealer = sender.seal(&id, SIZE as u64, &mut rng).expect("seal");
    let header = sealer.header().to_vec();
    let mut chunk = pt.to_vec();
    sealer.seal_chunk(&mut chunk).expect("chunk");
    sealer.finish().expect("finish");
    let receiver = v2::Receiver::new(Backend::AwsLc, sk).expect("receiver");
    let (h, _) = v2::Header::parse(&header).expect("header");
    let entry = h.recipients[0].clone();

    let mut buf = Vec::with_capacity(SIZE + 16);
    let mut envelope_open = || {
        let mut o = receiver
            .open(&id, &header, v2::Placement::Metadata)
            .expect("open");
        buf.clear();
        buf.extend_from_slice(&chunk);
        o.open_chunk(&mut buf).expect("chunk");
        black_box(o.finish().expect("finish"));
    };
    // The primitives on inputs of the sizes v2 uses; the keys are derived, not the real
    // ones, so the AES-GCM opens are of data sealed here with those keys.
    let hk = |salt: &[u8], ikm: &[u8], info: &[&[u8]]| -> [u8; 32] {
        let mut out = [0u8; 32];
        hkdf::Salt::new(hkdf::HKDF_SHA256, salt)
            .extract(ikm)
            .expand(info, Len32)
            .expect("expand")
            .fill(&mut out)
            .expect("fill");
        out
    };
    let gcm = |key: &[u8; 32]| {
        aead::LessSafeKey::new(aead::UnboundKey::new(&aead::AES_256_GCM, key).expect("key"))
    };
    let wrap_key = [7u8; 32];
    let mut wrapped = vec![9u8; 32];
    gcm(&wrap_key)
        .seal_in_place_append_tag(
            aead::Nonce::assume_unique_for_key([0; 12]),
            aead::Aad::from(&[0u8; 32]),
            &mut wrapped,
        )
        .expect("seal");
    let data_key = [8u8; 32];
    let mut sealed_chunk = pt.to_vec();
    gcm(&data_key)
        .seal_in_place_append_tag(
            aead::Nonce::assume_unique_for_key([0; 12]),
            aead::Aad::from(&[0u8; 49]),
            &mut sealed_chunk,
        )
        .expect("seal");
    let mut buf2 = Vec::with_capacity(SIZE + 16);
    let mut wbuf = Vec::with_capacity(48);
    let mut primitives = || {
        let ss = dk
            .decapsulate(kem::Ciphertext::from(&entry.enc[..]))
            .expect("decaps");
        black_box(digest::digest(&digest::SHA256, pk.as_bytes()));
        black_box(digest::digest(&digest::SHA256, &header[..v2::FIXED_LEN]));
        // HPKE: psk_id_hash, info_hash, secret (extracts); key, base_nonce, exporter (expands).
        let a = hk(b"", b"", &[b"HPKE-v1", b"psk_id_hash"]);
        let b = hk(b"", &[0u8; 83], &[b"HPKE-v1", b"info_hash"]);
        let secret = hk(ss.as_ref(), b"", &[b"HPKE-v1", &a, &b]);
        let k = hk(&secret, b"", &[b"key"]);
        black_box(hk(&secret, b"", &[b"base_nonce"]));
        black_box(hk(&secret, b"", &[b"exp"]));
        wbuf.clear();
        wbuf.extend_from_slice(&wrapped);
        black_box(k);
        gcm(&wrap_key)
            .open_in_place(
                aead::Nonce::assume_unique_for_key([0; 12]),
                aead::Aad::from(&[0u8; 32]),
                &mut wbuf,
            )
            .expect("open wrap");
        // v2: PRK, commitment, K.
        black_box(hk(
            &h.identity_hash,
            &wbuf[..32],
            &[b"pqbench-v2 commitment"],
        ));
        let hh = digest::digest(&digest::SHA256, &header);
        black_box(hk(
            &h.identity_hash,
            &wbuf[..32],
            &[b"pqbench-v2 data", hh.as_ref()],
        ));
        buf2.clear();
        buf2.extend_from_slice(&sealed_chunk);
        black_box(
            gcm(&data_key)
                .open_in_place(
                    aead::Nonce::assume_unique_for_key([0; 12]),
                    aead::Aad::from(&[0u8; 49]),
                    &mut buf2,
                )
                .expect("open")
                .len(),
        );
    };
    let (e, p, ratio) = interleaved(&mut envelope_open, &mut primitives);
    println!(
        "format v2, ml-kem-768 open of 64 KiB on aws-lc, medians of {ROUNDS} interleaved rounds of {PER_ROUND}:"
    );
    println!(
        "  envelope open (v2)                     {:8.2} µs",
        e.as_secs_f64() * 1e6
    );
    println!(
        "  primitives (decaps + 9 HKDF + 3 SHA-256 + 2 GCM opens) {:8.2} µs",
        p.as_secs_f64() * 1e6
    );
    println!("  ratio envelope / primitives            {ratio:8.3}   (target <= 1.25)");
}
