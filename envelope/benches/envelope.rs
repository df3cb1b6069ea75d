//! Criterion benches per mode × backend: key establishment (sender and receiver) and
//! whole-object seal and open at 1 KiB, 64 KiB and 1 MiB (in memory, no storage).
//!
//! `cargo bench -p envelope --bench envelope` (about 9 minutes on 2 cores). Filter with a
//! criterion regex, e.g. `cargo bench -p envelope --bench envelope -- 'ml-kem-768/aws-lc'`.
//! The backends' primitives side by side in one process (issue 40), the ratios the
//! storage path's are read against:
//! `cargo bench -p envelope --features openssl --bench envelope -- 'key_establishment/.*/(ml-kem|x-wing|x25519/)'`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use envelope::{
    Backend, KeyType, Mode, ObjectId, Receiver, SealKey, SecretKey, Sender, open_stream,
    seal_stream,
};

const SIZES: [(usize, &str); 3] = [(1024, "1KiB"), (64 * 1024, "64KiB"), (1024 * 1024, "1MiB")];

fn parties(mode: Mode, backend: Backend) -> (Sender, Receiver) {
    let kt = mode.key_type();
    let sk = (kt != KeyType::None)
        .then(|| SecretKey::generate(kt, &mut envelope::os_rng()).expect("keygen"));
    let pk = sk.as_ref().and_then(|s| s.public_key().expect("pk"));
    let key = match (&pk, &sk) {
        (Some(p), _) => SealKey::Public(p),
        (None, Some(s)) => SealKey::Psk(s),
        _ => SealKey::None,
    };
    (
        Sender::new(mode, backend, key).expect("sender"),
        Receiver::new(mode, backend, sk.as_ref()).expect("receiver"),
    )
}

fn benches(c: &mut Criterion) {
    let mut rng = envelope::os_rng();
    let id = ObjectId::new_version("tenant", "bucket", "bench/object").expect("id");
    for mode in Mode::ALL {
        for backend in Backend::ALL.into_iter().filter(|b| b.supports(mode)) {
            let (sender, receiver) = parties(mode, backend);
            let name = format!("{}/{}", mode.name(), backend.name());

            let mut g = c.benchmark_group("key_establishment");
            if mode.encrypts() {
                g.bench_function(BenchmarkId::new("sender", &name), |b| {
                    b.iter(|| black_box(sender.bench_establish(&mut rng).expect("establish")))
                });
                let ct = sender.bench_establish(&mut rng).expect("establish");
                g.bench_function(BenchmarkId::new("receiver", &name), |b| {
                    b.iter(|| receiver.bench_recover(black_box(&ct)).expect("recover"))
                });
            }
            g.finish();

            for (size, label) in SIZES {
                let pt = vec![0x5au8; size];
                let mut data = Vec::with_capacity(size + 64);
                let sealed = seal_stream(&sender, &id, size as u64, &pt[..], &mut data, &mut rng)
                    .expect("seal");
                let mut g = c.benchmark_group(format!("seal_{label}"));
                g.throughput(Throughput::Bytes(size as u64));
                let mut out = Vec::with_capacity(size + 64);
                g.bench_function(&name, |b| {
                    b.iter(|| {
                        out.clear();
                        black_box(
                            seal_stream(&sender, &id, size as u64, &pt[..], &mut out, &mut rng)
                                .expect("seal"),
                        )
                    })
                });
                g.finish();
                let mut g = c.benchmark_group(format!("open_{label}"));
                g.throughput(Throughput::Bytes(size as u64));
                let mut back = Vec::with_capacity(size);
                g.bench_function(&name, |b| {
                    b.iter(|| {
                        back.clear();
                        black_box(
                            open_stream(&receiver, &id, &sealed.manifest, &data[..], &mut back)
                                .expect("open"),
                        )
                    })
                });
                g.finish();
            }
        }
    }
}

criterion_group! {
    name = envelope_benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(700));
    targets = benches
}
criterion_main!(envelope_benches);
