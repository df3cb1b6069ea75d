//! Streaming keeps memory bounded: sealing and opening a 96 MiB object through
//! `seal_stream`/`open_stream` must not raise the process's peak RSS (VmHWM) by more than a
//! few chunks. This binary holds exactly one test, so the process-wide peak is this test's.

use std::io::{self, Read, Write};

use envelope::{
    Backend, KeyType, Mode, ObjectId, Receiver, SealKey, SecretKey, Sender, open_stream,
    seal_stream,
};

const SIZE: u64 = 96 * 1024 * 1024;
const CHUNK: u64 = 4 * 1024 * 1024;

/// A reader producing `remaining` bytes of a pattern, without holding them.
struct Pattern {
    remaining: u64,
    counter: u8,
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = usize::try_from(self.remaining.min(buf.len() as u64)).unwrap_or(0);
        for b in &mut buf[..n] {
            *b = self.counter;
            self.counter = self.counter.wrapping_add(1);
        }
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// A writer that keeps only what the test needs: a bounded spool file for the ciphertext
/// (on disk, not in memory) or a running check of the plaintext pattern.
struct PatternCheck {
    counter: u8,
    seen: u64,
}

impl Write for PatternCheck {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &b in buf {
            assert_eq!(b, self.counter, "plaintext differs at byte {}", self.seen);
            self.counter = self.counter.wrapping_add(1);
            self.seen += 1;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[test]
fn seal_and_open_of_96_mib_stay_within_a_few_chunks() {
    let sk = SecretKey::generate(KeyType::MlKem768, &mut envelope::os_rng()).expect("keygen");
    let pk = sk.public_key().expect("pk").expect("pk");
    let sender = Sender::new(Mode::MlKem768, Backend::AwsLc, SealKey::Public(&pk)).expect("sender");
    let receiver = Receiver::new(Mode::MlKem768, Backend::RustCrypto, Some(&sk)).expect("receiver");
    let id = ObjectId::new_version("t", "b", "big").expect("id");
    let dir = tempfile::tempdir().expect("tmp");
    let spool = dir.path().join("data.enc");

    // Warm up allocator and libraries with one small object, then take the baseline.
    let mut warm = Vec::new();
    seal_stream(
        &sender,
        &id,
        10,
        Pattern {
            remaining: 10,
            counter: 0,
        },
        &mut warm,
        &mut envelope::os_rng(),
    )
    .expect("warm-up");
    let before = peak_rss_kib();

    let out = std::io::BufWriter::new(std::fs::File::create(&spool).expect("spool"));
    let sealed = seal_stream(
        &sender,
        &id,
        SIZE,
        Pattern {
            remaining: SIZE,
            counter: 0,
        },
        out,
        &mut envelope::os_rng(),
    )
    .expect("seal");
    let input = std::io::BufReader::new(std::fs::File::open(&spool).expect("spool"));
    let mut check = PatternCheck {
        counter: 0,
        seen: 0,
    };
    open_stream(&receiver, &id, &sealed.manifest, input, &mut check).expect("open");
    assert_eq!(check.seen, SIZE);

    let growth_kib = peak_rss_kib().saturating_sub(before);
    // One chunk buffer each for seal and open, plus allocator slack: well under 4 chunks.
    assert!(
        growth_kib * 1024 < 4 * CHUNK,
        "peak RSS grew by {growth_kib} KiB while streaming 96 MiB (limit {} KiB)",
        4 * CHUNK / 1024
    );
    eprintln!("peak RSS growth while streaming 96 MiB: {growth_kib} KiB");
}
