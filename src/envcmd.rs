//! The envelope commands: `keygen`, `seal`, `open`, `inspect`, `modes` (user guide:
//! `docs/src/envelope/cli.md`).

use std::fs;
use std::io::{BufReader, BufWriter, Read, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use envelope::v2::{self, Placement};
use envelope::{
    Backend, Format, KeyType, Manifest, Mode, ObjectId, SecretKey, keys, open_stream, seal_stream,
};

use crate::args::{
    FreshKeys, HeaderPlacement, Reader, ReceiverArgs, SenderArgs, Writer, parse_format, parse_size,
};
use crate::dirstore::{self, DATA, MANIFEST, OBJECT_V2, Staged};

#[derive(Args, Debug)]
pub(crate) struct KeygenArgs {
    /// Mode (name or study code: B1 R1 B2 P1 P2 P3 N1 C2, ...).
    #[arg(long)]
    mode: Mode,
    /// Output directory; receives recipient.pub and recipient.key (psk.key for psk).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
struct IdArgs {
    /// Tenant of the object identity.
    #[arg(long)]
    tenant: String,
    /// Bucket of the object identity.
    #[arg(long)]
    bucket: String,
    /// Object key.
    #[arg(long)]
    key: String,
}

#[derive(Args, Debug)]
pub(crate) struct SealArgs {
    #[command(flatten)]
    sender: SenderArgs,
    #[command(flatten)]
    id: IdArgs,
    /// Version (UUIDv7); a fresh one by default.
    #[arg(long)]
    version: Option<String>,
    /// Plaintext file.
    #[arg(long = "in")]
    input: PathBuf,
    /// Output root directory.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct OpenArgs {
    #[command(flatten)]
    receiver: ReceiverArgs,
    #[command(flatten)]
    id: IdArgs,
    /// Version to open.
    #[arg(long)]
    version: String,
    /// Root directory holding `<key>.pqcs/<version>/`.
    #[arg(long = "in")]
    input: PathBuf,
    /// Plaintext output file (written only on success).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct InspectArgs {
    /// A version directory `<root>/<key>.pqcs/<version>`.
    path: PathBuf,
    /// Which format to read: v1 (manifest.json) or v2 (object.v2); by default the one the
    /// directory holds.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
}

#[derive(Args, Debug)]
pub(crate) struct ModesArgs {
    /// Object size (bytes, or with a unit: 64KiB, 1MiB).
    #[arg(long, default_value = "64KiB", value_parser = parse_size)]
    size: u64,
    /// Seal+open round trips per mode and backend (median reported).
    #[arg(long, default_value_t = 200)]
    iterations: u32,
}

pub(crate) fn keygen(a: KeygenArgs) -> Result<()> {
    let kt = a.mode.key_type();
    if kt == KeyType::None {
        bail!("mode plaintext uses no key; nothing to generate");
    }
    fs::create_dir_all(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    let sk = SecretKey::generate(kt, &mut envelope::os_rng())?;
    if kt == KeyType::Psk {
        let path = a.out.join("psk.key");
        sk.write_file(&path)?;
        println!(
            "pre-shared key {} (key id {}) written, mode 0600",
            path.display(),
            sk.key_id_hex()?
        );
        return Ok(());
    }
    let pk = sk.public_key()?.context("mode has no public key")?;
    let (pub_path, key_path) = (a.out.join("recipient.pub"), a.out.join("recipient.key"));
    for p in [&pub_path, &key_path] {
        if p.exists() {
            bail!(
                "{} already exists; refusing to overwrite a key (choose another --out)",
                p.display()
            );
        }
    }
    sk.write_file(&key_path)?;
    keys::write_public_file(&pk, &pub_path)?;
    println!(
        "{kt} key pair for mode {}: key id {}",
        a.mode,
        pk.key_id_hex()
    );
    println!("  public  {}", pub_path.display());
    println!("  secret  {} (mode 0600)", key_path.display());
    Ok(())
}

pub(crate) fn seal(a: SealArgs) -> Result<()> {
    let version = a.version.unwrap_or_else(envelope::new_version);
    let id = ObjectId::new(&a.id.tenant, &a.id.bucket, &a.id.key, &version)?;
    let writer = a.sender.writer(HeaderPlacement::Prefix)?;
    let input = fs::File::open(&a.input)
        .with_context(|| format!("cannot open --in {}", a.input.display()))?;
    let size = input
        .metadata()
        .with_context(|| format!("cannot stat {}", a.input.display()))?
        .len();
    let dir = dirstore::version_dir(&a.out, &id.key, &id.version)?;
    if dir.join(MANIFEST).exists() || dir.join(OBJECT_V2).exists() {
        bail!(
            "version {} of {:?} already exists in {}",
            id.version,
            id.key,
            a.out.display()
        );
    }
    match writer {
        Writer::V1(sender) => {
            let mut data = Staged::create(&dir.join(DATA))?;
            let sealed = seal_stream(
                &sender,
                &id,
                size,
                BufReader::new(input),
                BufWriter::new(data.file()),
                &mut envelope::os_rng(),
            )
            .with_context(|| format!("sealing {}", a.input.display()))?;
            data.commit()?;
            let mut manifest = Staged::create(&dir.join(MANIFEST))?;
            std::io::Write::write_all(manifest.file(), &sealed.manifest)
                .context("writing manifest")?;
            manifest.commit()?;
        }
        Writer::V2(sender) => {
            if sender.placement() == Placement::Metadata {
                bail!(
                    "a local directory has no object metadata to hold a v2 header: use \
                     --header prefix (the default for seal), or `pqbench put` for S3"
                );
            }
            let mut object = Staged::create(&dir.join(OBJECT_V2))?;
            seal_v2(&sender, &id, size, input, object.file())
                .with_context(|| format!("sealing {}", a.input.display()))?;
            object.commit()?;
        }
    }
    println!("{version}");
    Ok(())
}

/// Writes `header ‖ CT_0 ‖ … ‖ CT_{n−1}` (placement prefix) of `size` bytes of `input`.
fn seal_v2(
    sender: &v2::Sender,
    id: &ObjectId,
    size: u64,
    input: fs::File,
    out: &fs::File,
) -> Result<()> {
    let mut sealer = sender.seal(id, size, &mut envelope::os_rng())?;
    let mut input = BufReader::new(input);
    let mut out = BufWriter::new(out);
    out.write_all(sealer.header())?;
    let mut buf = Vec::new();
    while let Some(n) = sealer.next_chunk_len() {
        buf.resize(n, 0);
        input
            .read_exact(&mut buf)
            .context("the input ended before its announced size")?;
        sealer.seal_chunk(&mut buf)?;
        out.write_all(&buf)?;
    }
    sealer.finish()?;
    out.flush()?;
    Ok(())
}

pub(crate) fn open(a: OpenArgs) -> Result<()> {
    let id = ObjectId::new(&a.id.tenant, &a.id.bucket, &a.id.key, &a.version)?;
    let reader = a.receiver.reader()?;
    let dir = dirstore::version_dir(&a.input, &id.key, &id.version)?;
    let receiver = match reader {
        Reader::V1(r) => r,
        Reader::Remote { .. } | Reader::RemoteV2 { .. } => {
            bail!("`pqbench open` reads with a local key (--secret)")
        }
        Reader::V2(r) => {
            let path = dir.join(OBJECT_V2);
            let file = fs::File::open(&path).with_context(|| {
                format!(
                    "version {} of {:?} is not committed in format v2 (no {})",
                    id.version,
                    id.key,
                    path.display()
                )
            })?;
            let mut out = Staged::create(&a.out)?;
            open_v2(&r, &id, file, out.file())
                .with_context(|| format!("opening {}", path.display()))?;
            out.commit()?;
            return Ok(());
        }
    };
    let manifest_path = dir.join(MANIFEST);
    let manifest = fs::File::open(&manifest_path)
        .with_context(|| {
            format!(
                "version {} of {:?} is not committed (no {})",
                id.version,
                id.key,
                manifest_path.display()
            )
        })
        .and_then(|f| {
            Manifest::read_bounded(f)
                .with_context(|| format!("reading {}", manifest_path.display()))
        })?;
    let data_path = dir.join(DATA);
    let data = fs::File::open(&data_path)
        .with_context(|| format!("cannot open {}", data_path.display()))?;
    let mut out = Staged::create(&a.out)?;
    open_stream(
        &receiver,
        &id,
        &manifest,
        BufReader::new(data),
        BufWriter::new(out.file()),
    )
    .with_context(|| format!("opening {}", dir.display()))?;
    out.commit()?;
    Ok(())
}

/// Reads a prefix-placement header from `r`: its first 8 bytes, then the rest.
fn read_v2_header(r: &mut impl Read) -> Result<Vec<u8>> {
    let mut start = [0u8; 8];
    r.read_exact(&mut start)
        .context("shorter than a v2 header")?;
    let n = v2::announced_len(&start)?;
    let mut header = start.to_vec();
    header.resize(n, 0);
    r.read_exact(&mut header[8..])
        .context("the v2 header is truncated")?;
    Ok(header)
}

/// Opens a prefix-placement `object.v2` into `out`, chunk by chunk; any byte after the
/// final chunk is refused (the caller keeps `out` only on success).
fn open_v2(r: &v2::Receiver, id: &ObjectId, file: fs::File, out: &fs::File) -> Result<()> {
    let mut input = BufReader::new(file);
    let header = read_v2_header(&mut input)?;
    let mut opener = r.open(id, &header, Placement::Prefix)?;
    let mut out = BufWriter::new(out);
    let mut buf = Vec::new();
    while let Some(n) = opener.next_chunk_len() {
        buf.resize(n, 0);
        input
            .read_exact(&mut buf)
            .map_err(|_| envelope::Error::Decrypt)?;
        opener.open_chunk(&mut buf)?;
        out.write_all(&buf)?;
    }
    if input.read(&mut [0u8; 1])? != 0 {
        return Err(envelope::Error::Decrypt.into());
    }
    opener.finish()?;
    out.flush()?;
    Ok(())
}

/// `inspect` of a v2 version directory: the header's fields (public data only).
fn inspect_v2(dir: &Path) -> Result<()> {
    let path = dir.join(OBJECT_V2);
    let mut file =
        fs::File::open(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let len = file.metadata()?.len();
    let bytes = read_v2_header(&mut file)
        .with_context(|| format!("{} does not start with a v2 header", path.display()))?;
    let (h, _) = v2::Header::parse(&bytes)
        .with_context(|| format!("{} has no valid v2 header", path.display()))?;
    println!("object          {}", path.display());
    println!(
        "format          v2, header {} bytes at the start of the body (placement {})",
        bytes.len(),
        match h.placement {
            Placement::Metadata => "metadata: the header's flag disagrees with where it is",
            Placement::Prefix => "prefix",
        }
    );
    println!("identity hash   {}", hex::encode(h.identity_hash));
    println!(
        "plaintext       {} bytes in {} chunk(s) of {} bytes",
        h.plaintext_size,
        h.plaintext_size.div_ceil(u64::from(v2::CHUNK_SIZE)).max(1),
        v2::CHUNK_SIZE
    );
    println!("commitment      {}", hex::encode(h.commitment));
    println!(
        "recipients      {}{}",
        h.recipients.len(),
        if h.mixed {
            " (post-quantum and classical mixed, allowed by the writer)"
        } else {
            ""
        }
    );
    for e in &h.recipients {
        println!(
            "  {:<13} key id {}  enc {} B  wrapped {} B",
            e.kem.name(),
            hex::encode(e.key_id),
            e.enc.len(),
            e.wrapped.len()
        );
    }
    let expect = bytes.len() as u64 + v2::chunks_len(h.plaintext_size);
    if len == expect {
        println!("object.v2       {len} bytes (as the header says)");
    } else {
        println!(
            "object.v2       {len} bytes, but the header says {expect}: truncated or extended"
        );
    }
    Ok(())
}

pub(crate) fn inspect(a: InspectArgs) -> Result<()> {
    let format = match a.format {
        Some(f) => f,
        None if a.path.join(OBJECT_V2).exists() && !a.path.join(MANIFEST).exists() => Format::V2,
        None => Format::V1,
    };
    if format == Format::V2 {
        return inspect_v2(&a.path);
    }
    let manifest_path = a.path.join(MANIFEST);
    let bytes = fs::File::open(&manifest_path)
        .map_err(envelope::Error::Io)
        .and_then(Manifest::read_bounded)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let data_len = fs::metadata(a.path.join(DATA)).map(|m| m.len()).ok();
    let mode = Manifest::peek_mode(&bytes)?;
    let m = Manifest::parse(&bytes, mode)
        .with_context(|| format!("{} is not a valid manifest", manifest_path.display()))?;
    let c = &m.ctx;
    println!("manifest        {}", manifest_path.display());
    println!(
        "mode            {mode}{}",
        mode.study_code()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default()
    );
    println!(
        "identity        tenant={} bucket={} key={} version={}",
        c.tenant, c.bucket, c.key, c.version
    );
    println!(
        "algorithms      kem={} kdf={} aead={}",
        c.kem, c.kdf, c.aead
    );
    println!(
        "recipient key   {}",
        if c.recipient_key_id.is_empty() {
            "-"
        } else {
            &c.recipient_key_id
        }
    );
    println!(
        "plaintext       {} bytes in {} chunk(s) of {} bytes",
        c.plaintext_size, c.chunk_count, c.chunk_size
    );
    println!("C               {} bytes, sha256 {}", m.c.len(), c.c_sha256);
    println!(
        "salt / prefix   {} / {} bytes",
        m.salt.len(),
        m.nonce_prefix.len()
    );
    if let Some(s) = c.session {
        println!(
            "session         object {} of at most {}, root age {} ms of at most {} ms",
            s.index + 1,
            s.max_objects,
            s.age_ms,
            s.max_age_ms
        );
    }
    println!("manifest size   {} bytes", bytes.len());
    match data_len {
        Some(n) if n == m.ciphertext_size() => {
            println!("data.enc        {n} bytes (as the manifest says)")
        }
        Some(n) => println!(
            "data.enc        {n} bytes, but the manifest says {}: truncated or extended",
            m.ciphertext_size()
        ),
        None => println!(
            "data.enc        missing (expected {} bytes)",
            m.ciphertext_size()
        ),
    }
    Ok(())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

pub(crate) fn modes(a: ModesArgs) -> Result<()> {
    let len = usize::try_from(a.size).context("--size does not fit in memory")?;
    if a.iterations == 0 {
        bail!("--iterations must be at least 1");
    }
    let pt = vec![0x42u8; len];
    println!(
        "{:<20} {:>4} {:>7} {:>9} {:>10} | {:<10} {:>10} {:>10} {:>10} {:>10}",
        "mode",
        "code",
        "C (B)",
        "manifest",
        "vs x25519",
        "backend",
        "seal µs",
        "open µs",
        "KE seal",
        "KE open"
    );
    let mut x25519_manifest = None;
    let mut rows = Vec::new();
    for mode in Mode::ALL {
        let keys = FreshKeys::generate(mode)?;
        for backend in Backend::ALL.into_iter().filter(|b| b.supports(mode)) {
            let sender = keys.sender(backend)?;
            let receiver = keys.receiver(backend)?;
            let (mut seal_t, mut open_t, mut ke_s, mut ke_o) = (vec![], vec![], vec![], vec![]);
            let mut manifest_len = 0;
            let mut data = Vec::with_capacity(len + 64);
            let mut out = Vec::with_capacity(len);
            for i in 0..=a.iterations {
                let id = ObjectId::new_version("tenant", "bucket", "modes/object")?;
                data.clear();
                out.clear();
                let t = Instant::now();
                let sealed = seal_stream(
                    &sender,
                    &id,
                    a.size,
                    &pt[..],
                    &mut data,
                    &mut envelope::os_rng(),
                )?;
                let t1 = t.elapsed();
                let t = Instant::now();
                let opened = open_stream(&receiver, &id, &sealed.manifest, &data[..], &mut out)?;
                let t2 = t.elapsed();
                if i == 0 {
                    continue; // warm-up: lazy library initialization stays out of the figures
                }
                manifest_len = sealed.manifest.len();
                seal_t.push(t1);
                open_t.push(t2);
                ke_s.push(sealed.times.key_establishment);
                ke_o.push(opened.times.key_establishment);
            }
            if mode == Mode::X25519 {
                x25519_manifest = Some(manifest_len);
            }
            rows.push((
                mode,
                backend,
                manifest_len,
                [median(seal_t), median(open_t), median(ke_s), median(ke_o)],
            ));
        }
    }
    let base = x25519_manifest.unwrap_or_default();
    for (mode, backend, mlen, t) in rows {
        let us = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e6);
        println!(
            "{:<20} {:>4} {:>7} {:>9} {:>+10} | {:<10} {:>10} {:>10} {:>10} {:>10}",
            mode.name(),
            mode.study_code().unwrap_or("-"),
            mode.ciphertext_len(),
            mlen,
            i64::try_from(mlen).unwrap_or_default() - i64::try_from(base).unwrap_or_default(),
            backend.name(),
            us(t[0]),
            us(t[1]),
            us(t[2]),
            us(t[3])
        );
    }
    println!(
        "object size {} bytes; medians of {} round trips; KE = key establishment",
        a.size, a.iterations
    );
    print_v2_headers();
    Ok(())
}

/// Format v2's header bytes per KEM and recipient count (FORMAT-v2.md §8), and what S3
/// counts for it as metadata (`pqbench-v2` + base64, limit 2,048).
fn print_v2_headers() {
    use envelope::hpke::KemId;
    const COUNTS: [usize; 5] = [1, 2, 4, 8, 16];
    println!();
    println!(
        "format v2 header bytes by recipients (S3 metadata bytes; * = over the 2 KB limit, prefix only)"
    );
    print!("  {:<14}", "kem");
    for n in COUNTS {
        print!(" {:>16}", format!("{n} recipient(s)"));
    }
    println!(" {:>22}", "most in metadata");
    for kem in [
        KemId::X25519,
        KemId::MlKem768,
        KemId::XWing,
        KemId::MlKem1024,
    ] {
        let len = |n: usize| v2::FIXED_LEN + n * (86 + kem.enc_len());
        let meta = |n: usize| 10 + len(n).div_ceil(3) * 4;
        print!("  {:<14}", kem.name());
        for n in COUNTS {
            let mark = if len(n) > v2::MAX_METADATA_HEADER {
                "*"
            } else {
                ""
            };
            print!(" {:>16}", format!("{} ({}){mark}", len(n), meta(n)));
        }
        let most = (0..=v2::MAX_RECIPIENTS)
            .rev()
            .find(|&n| len(n) <= v2::MAX_METADATA_HEADER)
            .unwrap_or(0);
        println!(" {most:>22}");
    }
}
