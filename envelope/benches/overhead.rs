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
//! Prints both medians and their ratio (target ≤ 1.25). Run:
//! `cargo bench -p envelope --bench overhead`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use aws_lc_rs::{aead, hkdf, kem};
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
    // Warm-up.
    for _ in 0..PER_ROUND {
        envelope_open();
        primitives();
    }
    let (mut env_t, mut prim_t) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for _ in 0..PER_ROUND {
            envelope_open();
        }
        env_t.push(t.elapsed() / PER_ROUND);
        let t = Instant::now();
        for _ in 0..PER_ROUND {
            primitives();
        }
        prim_t.push(t.elapsed() / PER_ROUND);
    }
    let (e, p) = (median(env_t), median(prim_t));
    let ratio = e.as_secs_f64() / p.as_secs_f64();
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
}
