//! Recipient keys and key files (FORMAT.md §7).
//!
//! Secret keys are stored in their seed form where one exists, so other implementations can
//! recreate them: ML-KEM as the FIPS 203 seed `d ‖ z` (64 bytes), X-Wing as its 32-byte seed,
//! X25519 as its 32-byte scalar, `concat-hybrid` as the ML-KEM seed ‖ the X25519 scalar,
//! RSA as PKCS#8 DER, a pre-shared key as its 32 bytes. The key id is SHA-256 of the
//! encoded public key (of a domain-separated hash of the key, for a pre-shared key).
//!
//! Key files are JSON. Secret key files are created with mode 0600 and refused when group-
//! or world-accessible. This module is the only file I/O in the crate.

use std::fmt;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use rand_core::CryptoRng;
use serde::{Deserialize, Serialize};
use zeroize::{Zeroize, Zeroizing};

use crate::mlkem::{self, Params};
use crate::symmetric::sha256;
use crate::{Backend, Error, KeyType, Result, rsa_oaep, x25519, xwing};

/// `format` of a public key file (format constant).
pub const PUBLIC_FILE_FORMAT: &str = "pqbench-public-key/1";
/// `format` of a secret key file (format constant).
pub const SECRET_FILE_FORMAT: &str = "pqbench-secret-key/1";
/// Domain separation for the key id of a pre-shared key (format constant).
const PSK_ID_LABEL: &[u8] = b"pqbench psk key id v1\0";

/// A recipient public key: its type and encoded bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    key_type: KeyType,
    bytes: Vec<u8>,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey")
            .field("key_type", &self.key_type)
            .field("key_id", &self.key_id_hex())
            .finish()
    }
}

impl PublicKey {
    /// Wraps encoded public key bytes after checking them: the length; RSA keys parse as
    /// DER with the modulus size of their type and e = 65537; an X25519 part is not a
    /// small-order point.
    pub fn from_bytes(key_type: KeyType, bytes: Vec<u8>) -> Result<Self> {
        match key_type {
            KeyType::None | KeyType::Psk => {
                return Err(Error::Key(format!("key type {key_type} has no public key")));
            }
            KeyType::Rsa3072 | KeyType::Rsa4096 => {
                let bits = key_type.rsa_bits().unwrap_or_default();
                rsa_oaep::PublicKey::parse(Backend::AwsLc, bits, &bytes)?;
            }
            _ => {
                if Some(bytes.len()) != key_type.public_len() {
                    return Err(Error::Key(format!(
                        "{key_type} public key is {} bytes, expected {}",
                        bytes.len(),
                        key_type.public_len().unwrap_or_default()
                    )));
                }
            }
        }
        if let Some(at) = key_type.x25519_public_offset() {
            let u: &[u8; 32] = bytes
                .get(at..at + 32)
                .and_then(|u| u.try_into().ok())
                .ok_or_else(|| Error::Key(format!("{key_type} public key is too short")))?;
            x25519::check_public(u)?;
        }
        Ok(Self { key_type, bytes })
    }

    /// Wraps bytes without any check (for [`crate::kat::sender_unchecked`] only).
    pub(crate) fn unchecked(key_type: KeyType, bytes: Vec<u8>) -> Self {
        Self { key_type, bytes }
    }

    /// The key type.
    pub fn key_type(&self) -> KeyType {
        self.key_type
    }

    /// The encoded public key.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Key id: SHA-256 of the encoded public key.
    pub fn key_id(&self) -> [u8; 32] {
        sha256(Backend::AwsLc, &self.bytes)
    }

    /// Key id as lowercase hex.
    pub fn key_id_hex(&self) -> String {
        hex::encode(self.key_id())
    }

    /// The public key file's JSON text.
    pub fn to_file_json(&self) -> String {
        let f = KeyFile {
            format: PUBLIC_FILE_FORMAT.into(),
            key_id: self.key_id_hex(),
            key_type: self.key_type.name().into(),
            key: B64.encode(&self.bytes),
        };
        let mut s = serde_json::to_string_pretty(&f).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Parses a public key file's JSON text, checking its key id.
    pub fn from_file_json(text: &str) -> Result<Self> {
        let f: KeyFile = serde_json::from_str(text)
            .map_err(|e| Error::Key(format!("not a public key file: {e}")))?;
        if f.format != PUBLIC_FILE_FORMAT {
            return Err(Error::Key(format!(
                "format is {:?}, expected {PUBLIC_FILE_FORMAT:?}",
                f.format
            )));
        }
        let key_type = KeyType::from_name(&f.key_type)?;
        let bytes = B64
            .decode(&f.key)
            .map_err(|_| Error::Key("key is not base64".into()))?;
        let pk = Self::from_bytes(key_type, bytes)?;
        if pk.key_id_hex() != f.key_id {
            return Err(Error::Key("key_id does not match the key".into()));
        }
        Ok(pk)
    }

    /// Reads a public key file.
    pub fn read_file(path: &Path) -> Result<Self> {
        let text = fs::read_to_string(path).map_err(|e| Error::KeyFile {
            path: path.into(),
            reason: format!("cannot read: {e}"),
        })?;
        Self::from_file_json(&text).map_err(|e| Error::KeyFile {
            path: path.into(),
            reason: e.to_string(),
        })
    }
}

/// A recipient secret key (or a pre-shared key). Zeroized on drop; `Debug` prints no secret.
#[derive(Clone)]
pub struct SecretKey {
    key_type: KeyType,
    bytes: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey")
            .field("key_type", &self.key_type)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFile {
    format: String,
    key_id: String,
    key_type: String,
    key: String,
}

impl SecretKey {
    /// Generates a new key of `key_type`. Seeds come from `rng`; RSA keys are generated by
    /// AWS-LC from its own DRBG.
    pub fn generate<R: CryptoRng + ?Sized>(key_type: KeyType, rng: &mut R) -> Result<Self> {
        let bytes = match key_type {
            KeyType::None => return Err(Error::Key("plaintext has no key".into())),
            KeyType::Rsa3072 | KeyType::Rsa4096 => {
                rsa_oaep::generate(key_type.rsa_bits().unwrap_or_default())?.1
            }
            _ => {
                let mut b = Zeroizing::new(vec![0u8; key_type.secret_len().unwrap_or_default()]);
                rng.fill_bytes(&mut b);
                b
            }
        };
        Self::from_bytes(key_type, bytes.to_vec())
    }

    /// Wraps secret key bytes (seed form; PKCS#8 DER for RSA) after checking them.
    pub fn from_bytes(key_type: KeyType, bytes: Vec<u8>) -> Result<Self> {
        let sk = Self {
            key_type,
            bytes: Zeroizing::new(bytes),
        };
        match key_type {
            KeyType::None => return Err(Error::Key("plaintext has no key".into())),
            KeyType::Rsa3072 | KeyType::Rsa4096 => {
                rsa_oaep::SecretKey::parse(
                    Backend::AwsLc,
                    key_type.rsa_bits().unwrap_or_default(),
                    &sk.bytes,
                )?;
            }
            _ => {
                if Some(sk.bytes.len()) != key_type.secret_len() {
                    return Err(Error::Key(format!(
                        "{key_type} secret key is {} bytes, expected {}",
                        sk.bytes.len(),
                        key_type.secret_len().unwrap_or_default()
                    )));
                }
            }
        }
        Ok(sk)
    }

    /// Recreates an ML-KEM key from its FIPS 203 seed `d ‖ z` (64 bytes) or an X-Wing key
    /// from its 32-byte seed.
    pub fn from_seed(key_type: KeyType, seed: &[u8]) -> Result<Self> {
        match key_type {
            KeyType::MlKem768 | KeyType::MlKem1024 | KeyType::XWing => {
                Self::from_bytes(key_type, seed.to_vec())
            }
            _ => Err(Error::Key(format!(
                "{key_type} keys are not derived from a seed"
            ))),
        }
    }

    /// The key type.
    pub fn key_type(&self) -> KeyType {
        self.key_type
    }

    /// The secret bytes (seed form). Handle with care.
    pub fn expose_secret(&self) -> &[u8] {
        &self.bytes
    }

    pub(crate) fn fixed<const N: usize>(&self, offset: usize) -> Result<Zeroizing<[u8; N]>> {
        let mut out = Zeroizing::new([0u8; N]);
        let src = self
            .bytes
            .get(offset..offset + N)
            .ok_or_else(|| Error::Key("secret key too short".into()))?;
        out.copy_from_slice(src);
        Ok(out)
    }

    /// The matching public key (`None` for a pre-shared key).
    pub fn public_key(&self) -> Result<Option<PublicKey>> {
        let bytes = match self.key_type {
            KeyType::None | KeyType::Psk => return Ok(None),
            KeyType::Rsa3072 | KeyType::Rsa4096 => rsa_oaep::public_from_secret(&self.bytes)?,
            KeyType::X25519 => x25519::public_from_secret(&*self.fixed::<32>(0)?).to_vec(),
            KeyType::MlKem768 => mlkem::public_from_seed(Params::K768, &*self.fixed::<64>(0)?),
            KeyType::MlKem1024 => mlkem::public_from_seed(Params::K1024, &*self.fixed::<64>(0)?),
            KeyType::ConcatHybrid => {
                let mut pk = mlkem::public_from_seed(Params::K768, &*self.fixed::<64>(0)?);
                pk.extend_from_slice(&x25519::public_from_secret(&*self.fixed::<32>(64)?));
                pk
            }
            KeyType::XWing => xwing::public_from_seed(&*self.fixed::<32>(0)?),
        };
        PublicKey::from_bytes(self.key_type, bytes).map(Some)
    }

    /// Key id: that of the public key, or for a pre-shared key
    /// SHA-256("pqbench psk key id v1\0" ‖ psk).
    pub fn key_id(&self) -> Result<[u8; 32]> {
        match self.public_key()? {
            Some(pk) => Ok(pk.key_id()),
            None => {
                let mut buf = Zeroizing::new(PSK_ID_LABEL.to_vec());
                buf.extend_from_slice(&self.bytes);
                Ok(sha256(Backend::AwsLc, &buf))
            }
        }
    }

    /// Key id as lowercase hex.
    pub fn key_id_hex(&self) -> Result<String> {
        self.key_id().map(hex::encode)
    }

    /// The secret key file's JSON text (zeroized on drop).
    pub fn to_file_json(&self) -> Result<Zeroizing<String>> {
        let mut f = KeyFile {
            format: SECRET_FILE_FORMAT.into(),
            key_id: self.key_id_hex()?,
            key_type: self.key_type.name().into(),
            key: B64.encode(&*self.bytes),
        };
        let mut s = Zeroizing::new(serde_json::to_string_pretty(&f).unwrap_or_default());
        s.push('\n');
        f.key.zeroize();
        Ok(s)
    }

    /// Parses a secret key file's JSON text, checking its key id.
    pub fn from_file_json(text: &str) -> Result<Self> {
        let mut f: KeyFile = serde_json::from_str(text)
            .map_err(|_| Error::Key("not a secret key file (malformed JSON)".into()))?;
        let decoded = B64.decode(&f.key).map(Zeroizing::new);
        f.key.zeroize();
        if f.format != SECRET_FILE_FORMAT {
            return Err(Error::Key(format!(
                "format is {:?}, expected {SECRET_FILE_FORMAT:?}",
                f.format
            )));
        }
        let key_type = KeyType::from_name(&f.key_type)?;
        let bytes = decoded.map_err(|_| Error::Key("key is not base64".into()))?;
        let sk = Self::from_bytes(key_type, bytes.to_vec())?;
        if sk.key_id_hex()? != f.key_id {
            return Err(Error::Key("key_id does not match the key".into()));
        }
        Ok(sk)
    }

    /// Writes the secret key file, created with mode 0600. Refuses to overwrite an existing
    /// file (a lost secret key loses every object sealed to it).
    pub fn write_file(&self, path: &Path) -> Result<()> {
        write_new_file(
            path,
            0o600,
            self.to_file_json()?.as_bytes(),
            "already exists; refusing to overwrite a secret key (move it away first)",
        )
    }

    /// Reads a secret key file. Refuses one that is group- or world-accessible
    /// (`chmod 600` fixes it).
    pub fn read_file(path: &Path) -> Result<Self> {
        let err = |reason: String| Error::KeyFile {
            path: path.into(),
            reason,
        };
        let meta = fs::metadata(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(err(format!(
                "permissions {mode:04o} let other users read the secret key; run `chmod 600` on it"
            )));
        }
        let text =
            Zeroizing::new(fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?);
        Self::from_file_json(&text).map_err(|e| err(e.to_string()))
    }

    /// Reads a secret key file of a Secret volume (see [`read_mounted_secret`]).
    pub fn read_mounted(path: &Path) -> Result<Self> {
        let text = read_mounted_secret(path)?;
        Self::from_file_json(&text).map_err(|e| Error::KeyFile {
            path: path.into(),
            reason: e.to_string(),
        })
    }
}

/// Reads a file of a Kubernetes Secret volume (a key file, a credential): the kubelet gives
/// such files to the pod's `fsGroup` and makes them group-readable (mode 0440), so a
/// non-root pod can read them. It may be readable by its group, but never by others and
/// never writable by anyone but its owner; anything wider is refused by name.
pub fn read_mounted_secret(path: &Path) -> Result<Zeroizing<String>> {
    let err = |reason: String| Error::KeyFile {
        path: path.into(),
        reason,
    };
    let meta = fs::metadata(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o027 != 0 {
        return Err(err(format!(
            "permissions {mode:04o} let other users read or write it; a Secret volume's files \
             must be 0440 at most (its defaultMode)"
        )));
    }
    fs::read_to_string(path)
        .map(Zeroizing::new)
        .map_err(|e| err(format!("cannot read: {e}")))
}

/// The git working tree `path` lies in, if any: the nearest ancestor (of the nearest part
/// of `path` that exists) holding a `.git` directory or file. Secret keys are never written
/// there, where `git add -A` would commit them.
pub fn git_work_tree(path: &Path) -> Option<std::path::PathBuf> {
    let existing = path.ancestors().find(|p| p.exists())?;
    let real = existing.canonicalize().ok()?;
    real.ancestors()
        .find(|p| p.join(".git").exists())
        .map(Path::to_path_buf)
}

/// Writes a public key file (mode 0644). Refuses to overwrite an existing file.
pub fn write_public_file(pk: &PublicKey, path: &Path) -> Result<()> {
    write_new_file(
        path,
        0o644,
        pk.to_file_json().as_bytes(),
        "already exists; refusing to overwrite it",
    )
}

/// Creates `path` with permission bits `mode` (never replacing an existing file, which is
/// refused with `exists`), writes `contents` and syncs it.
fn write_new_file(path: &Path, mode: u32, contents: &[u8], exists: &str) -> Result<()> {
    let err = |reason: String| Error::KeyFile {
        path: path.into(),
        reason,
    };
    // Written whole beside its final name, synced, then linked into place: a process killed
    // (or a disk filling up) part-way leaves no half-written key at `path`, where the next
    // run would take it for a key and fail on it forever. `hard_link` refuses an existing
    // `path`, as `create_new` did.
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.partial", std::process::id()));
    // A file of this name is left by a process of the same pid that was killed: stale.
    let _ = fs::remove_file(&tmp);
    let written = (|| -> std::io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()
    })();
    let linked = written.and_then(|()| fs::hard_link(&tmp, path));
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| err(format!("cannot sync its directory: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && path.exists() => {
            Err(err(exists.into()))
        }
        Err(e) => Err(err(format!("cannot write: {e}"))),
    }
}
