//! Streaming helpers over `std::io`: seal a reader into a writer, open a reader into a
//! writer, one chunk in memory at a time (one buffer of 4 MiB + 16 bytes is reused).

use std::io::{ErrorKind, Read, Write};

use rand_core::CryptoRng;

use crate::ctx::CHUNK_SIZE;
use crate::symmetric::TAG_LEN;
use crate::{Error, ObjectId, Opened, Receiver, Result, Sealed, Sender};

fn buffer() -> Vec<u8> {
    Vec::with_capacity(usize::try_from(CHUNK_SIZE).unwrap_or(usize::MAX) + TAG_LEN)
}

/// Reads exactly `n` bytes into `buf` (replacing its contents). Returns how many bytes were
/// read before EOF if the input ended early.
fn read_exact_into<R: Read>(
    input: &mut R,
    buf: &mut Vec<u8>,
    n: usize,
) -> Result<std::result::Result<(), usize>> {
    buf.clear();
    let got = input
        .by_ref()
        .take(n as u64)
        .read_to_end(buf)
        .map_err(Error::Io)?;
    Ok(if got == n { Ok(()) } else { Err(got) })
}

/// True if `input` has at least one more byte.
fn has_more<R: Read>(input: &mut R) -> Result<bool> {
    let mut one = [0u8; 1];
    loop {
        match input.read(&mut one) {
            Ok(n) => return Ok(n > 0),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::Io(e)),
        }
    }
}

/// Seals `plaintext_size` bytes from `input` into `output` (the contents of `data.enc`) and
/// returns the manifest. The input must hold exactly `plaintext_size` bytes.
pub fn seal_stream<R: Read, W: Write, G: CryptoRng + ?Sized>(
    sender: &Sender,
    id: &ObjectId,
    plaintext_size: u64,
    mut input: R,
    mut output: W,
    rng: &mut G,
) -> Result<Sealed> {
    let mut sealer = sender.seal(id, plaintext_size, rng)?;
    let mut buf = buffer();
    let mut done: u64 = 0;
    while let Some(n) = sealer.next_chunk_len() {
        if let Err(got) = read_exact_into(&mut input, &mut buf, n)? {
            return Err(Error::Usage(format!(
                "input ended after {} bytes, but {plaintext_size} were declared",
                done + got as u64
            )));
        }
        done += n as u64;
        sealer.seal_chunk(&mut buf)?;
        output.write_all(&buf).map_err(Error::Io)?;
    }
    if has_more(&mut input)? {
        return Err(Error::Usage(format!(
            "input is longer than the declared {plaintext_size} bytes"
        )));
    }
    output.flush().map_err(Error::Io)?;
    sealer.finish()
}

/// Opens `data.enc` from `input` into `output`, given the manifest bytes. Plaintext is
/// written chunk by chunk as each chunk authenticates; the object as a whole is authentic
/// only if this returns `Ok` (a truncated, extended or reordered `data.enc` fails with the
/// opaque [`Error::Decrypt`]), so callers must not release partial output as complete.
pub fn open_stream<R: Read, W: Write>(
    receiver: &Receiver,
    id: &ObjectId,
    manifest: &[u8],
    mut input: R,
    mut output: W,
) -> Result<Opened> {
    let mut opener = receiver.open(id, manifest)?;
    let mut buf = buffer();
    while let Some(n) = opener.next_chunk_len() {
        if read_exact_into(&mut input, &mut buf, n)?.is_err() {
            return Err(Error::Decrypt);
        }
        opener.open_chunk(&mut buf)?;
        output.write_all(&buf).map_err(Error::Io)?;
    }
    if has_more(&mut input)? {
        return Err(Error::Decrypt);
    }
    output.flush().map_err(Error::Io)?;
    opener.finish()
}
