//! SHA-256 of run files, as `SHA256SUMS` lists them (`sha256sum` format: `<hex>  <name>`).

use std::io::Read as _;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use crate::Result;
use crate::error::file_err;

/// SHA-256 of a file, lowercase hex, read 64 KiB at a time.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).map_err(|e| file_err(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(|e| file_err(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}
