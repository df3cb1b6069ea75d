//! The reader side: manifest validation, key recovery, data-key derivation and chunk
//! opening (study Algorithm 1, GET; FORMAT.md §4–§6). The reader names the mode it expects
//! and the object it asked for; everything else comes from the manifest and is checked.

use std::time::Instant;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::ctx::ObjectId;
use crate::manifest::Manifest;
use crate::mlkem::{self, Params};
use crate::seal::ChunkState;
use crate::session::{CacheStats, RootCache};
use crate::symmetric::{Aead, TAG_LEN, hkdf_sha256};
use crate::{
    Backend, Error, KeyType, Mode, Result, SecretKey, StageTimes, rsa_oaep, x25519, xwing,
};

/// Session roots a receiver keeps (each 32 bytes).
const ROOT_CACHE_CAPACITY: usize = 4096;

/// A parsed secret key, expanded once.
enum Secret {
    None,
    Psk(Zeroizing<Vec<u8>>),
    Rsa(rsa_oaep::SecretKey),
    X25519(x25519::StaticKey),
    MlKem(mlkem::DecapKey),
    Concat {
        m: mlkem::DecapKey,
        x: x25519::StaticKey,
    },
    XWing(xwing::DecapKey),
}

/// A reader for one expected mode, backend and recipient key. `Sync`: share it between threads.
pub struct Receiver {
    mode: Mode,
    backend: Backend,
    key_id: String,
    secret: Secret,
    roots: Option<RootCache>,
}

impl Receiver {
    /// Parses (and expands, once) the secret key for reading objects of `expected` mode.
    /// `plaintext` takes no key; every other mode needs its key type.
    pub fn new(expected: Mode, backend: Backend, key: Option<&SecretKey>) -> Result<Self> {
        backend.check_supports(expected)?;
        let want = expected.key_type();
        let (secret, key_id) = match key {
            None if expected == Mode::Plaintext => (Secret::None, String::new()),
            None => return Err(Error::Key(format!("mode {expected} needs a {want} key"))),
            Some(sk) if sk.key_type() != want => {
                return Err(Error::Key(format!(
                    "mode {expected} needs a {want} key, not a {} key",
                    sk.key_type()
                )));
            }
            Some(sk) => {
                let s = match want {
                    KeyType::None => Secret::None,
                    KeyType::Psk => Secret::Psk(Zeroizing::new(sk.expose_secret().to_vec())),
                    KeyType::Rsa3072 | KeyType::Rsa4096 => Secret::Rsa(rsa_oaep::SecretKey::parse(
                        backend,
                        want.rsa_bits().unwrap_or_default(),
                        sk.expose_secret(),
                    )?),
                    KeyType::X25519 => {
                        Secret::X25519(x25519::StaticKey::new(backend, &*sk.fixed::<32>(0)?)?)
                    }
                    KeyType::MlKem768 => Secret::MlKem(mlkem::DecapKey::from_seed(
                        backend,
                        Params::K768,
                        &*sk.fixed::<64>(0)?,
                    )?),
                    KeyType::MlKem1024 => Secret::MlKem(mlkem::DecapKey::from_seed(
                        backend,
                        Params::K1024,
                        &*sk.fixed::<64>(0)?,
                    )?),
                    KeyType::ConcatHybrid => Secret::Concat {
                        m: mlkem::DecapKey::from_seed(backend, Params::K768, &*sk.fixed::<64>(0)?)?,
                        x: x25519::StaticKey::new(backend, &*sk.fixed::<32>(64)?)?,
                    },
                    KeyType::XWing => {
                        Secret::XWing(xwing::DecapKey::from_seed(backend, &*sk.fixed::<32>(0)?)?)
                    }
                };
                (s, sk.key_id_hex()?)
            }
        };
        let roots =
            (expected == Mode::MlKem768Session).then(|| RootCache::new(ROOT_CACHE_CAPACITY));
        Ok(Self {
            mode: expected,
            backend,
            key_id,
            secret,
            roots,
        })
    }

    /// The mode this reader accepts.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Lowercase hex key id of the reader's key (empty for plaintext).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// Hits and misses of the session-root cache (`ml-kem-768-session` only).
    pub fn session_cache_stats(&self) -> Option<CacheStats> {
        self.roots.as_ref().map(RootCache::stats)
    }

    /// Recovers ikm from C (every failure is the opaque [`Error::Decrypt`]).
    fn recover(&self, c: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        let v = |s: &[u8]| Zeroizing::new(s.to_vec());
        Ok(match &self.secret {
            Secret::None => Zeroizing::new(Vec::new()),
            Secret::Psk(k) => k.clone(),
            Secret::Rsa(sk) => v(sk.decrypt(c)?.as_ref()),
            Secret::X25519(sk) => {
                let epub: [u8; 32] = c
                    .get(..32)
                    .and_then(|s| s.try_into().ok())
                    .ok_or(Error::Decrypt)?;
                v(sk.agree(&epub)?.as_ref())
            }
            Secret::MlKem(sk) => v(sk.decapsulate(c)?.as_ref()),
            Secret::Concat { m, x } => {
                let (ct_m, ct_x) = c
                    .split_at_checked(Params::K768.ciphertext_len())
                    .ok_or(Error::Decrypt)?;
                let epub: [u8; 32] = ct_x.try_into().map_err(|_| Error::Decrypt)?;
                let ss_m = m.decapsulate(ct_m)?;
                let ss_x = x.agree(&epub)?;
                let mut ikm = Zeroizing::new(Vec::with_capacity(64));
                ikm.extend_from_slice(ss_m.as_ref());
                ikm.extend_from_slice(ss_x.as_ref());
                ikm
            }
            Secret::XWing(sk) => v(sk.decapsulate(c)?.as_ref()),
        })
    }

    /// Key recovery alone from `C` (decapsulation, RSA decryption or X25519 exchange; no
    /// session cache). For benchmarks; [`Receiver::open`] is the API.
    #[doc(hidden)]
    pub fn bench_recover(&self, c: &[u8]) -> Result<()> {
        self.recover(c).map(drop)
    }

    /// Starts opening the object `id` from its manifest bytes: validates the manifest,
    /// checks that it names `id`, this reader's mode and this reader's key, recovers the
    /// key and derives the data key. Then feed `data.enc` to [`Opener::open_chunk`].
    pub fn open(&self, id: &ObjectId, manifest: &[u8]) -> Result<Opener> {
        let mut times = StageTimes::default();
        let t0 = Instant::now();
        let m = Manifest::parse_with(manifest, self.mode, self.backend)?;
        m.ctx.check_identity(id)?;
        if !bool::from(
            m.ctx
                .recipient_key_id
                .as_bytes()
                .ct_eq(self.key_id.as_bytes()),
        ) {
            return Err(Error::WrongRecipient {
                expected: self.key_id.clone(),
                found: m.ctx.recipient_key_id,
            });
        }
        let ctx_bytes = m.ctx.canonical_bytes()?;
        let mut prefix = [0u8; 4];
        if self.mode.encrypts() {
            prefix.copy_from_slice(&m.nonce_prefix);
        }
        times.manifest = t0.elapsed();

        let t1 = Instant::now();
        let ikm = match &self.roots {
            Some(cache) => {
                let mut key = [0u8; 32];
                hex::decode_to_slice(&m.ctx.c_sha256, &mut key).map_err(|_| Error::Decrypt)?;
                let root = cache.get_or_recover(&key, || {
                    let ikm = self.recover(&m.c)?;
                    let mut r = Zeroizing::new([0u8; 32]);
                    r.copy_from_slice(&ikm);
                    Ok(r)
                })?;
                Zeroizing::new(root.to_vec())
            }
            None => self.recover(&m.c)?,
        };
        times.key_establishment = t1.elapsed();

        let t2 = Instant::now();
        let aead = if self.mode.encrypts() {
            let key = hkdf_sha256(self.backend, &m.salt, &ikm, &ctx_bytes)?;
            Some(Aead::new(self.backend, &key)?)
        } else {
            None
        };
        drop(ikm);
        times.key_derivation = t2.elapsed();

        Ok(Opener {
            chunks: ChunkState::new(ctx_bytes, prefix, m.ctx.plaintext_size),
            aead,
            times,
            manifest: m,
        })
    }
}

/// Opens one object chunk by chunk. Created by [`Receiver::open`]. Chunks it returns are
/// authenticated individually; the object is complete and authentic only once
/// [`Opener::finish`] succeeds.
pub struct Opener {
    chunks: ChunkState,
    aead: Option<Aead>,
    times: StageTimes,
    manifest: Manifest,
}

/// The result of opening one object.
#[derive(Clone, Debug)]
pub struct Opened {
    /// Stage timers.
    pub times: StageTimes,
    /// Plaintext size in bytes.
    pub plaintext_size: u64,
    /// The validated manifest.
    pub manifest: Manifest,
}

impl Opener {
    /// Ciphertext length (chunk plus tag) the next [`Opener::open_chunk`] call must get
    /// (`None`: all chunks opened).
    pub fn next_chunk_len(&self) -> Option<usize> {
        let tag = if self.aead.is_some() { TAG_LEN } else { 0 };
        self.chunks.next_len().map(|n| n + tag)
    }

    /// Expected size of `data.enc`.
    pub fn ciphertext_size(&self) -> u64 {
        self.manifest.ciphertext_size()
    }

    /// The validated manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Verifies and decrypts the next chunk in place: `buf` holds exactly
    /// [`Opener::next_chunk_len`] bytes of `data.enc` and afterwards the plaintext. On
    /// failure `buf` is wiped and the error is the opaque [`Error::Decrypt`].
    pub fn open_chunk(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        let (Some(want), Some(plain_len)) = (self.next_chunk_len(), self.chunks.next_len()) else {
            return Err(Error::Decrypt);
        };
        if buf.len() != want {
            buf.clear();
            return Err(Error::Decrypt);
        }
        let t = Instant::now();
        if let Some(aead) = &self.aead {
            let (nonce, ad) = self.chunks.nonce_and_ad(plain_len);
            aead.open_in_place(&nonce, ad, buf)?;
        }
        self.times.aead += t.elapsed();
        self.chunks.next += 1;
        Ok(())
    }

    /// Finishes: succeeds only if every chunk, including the final one, was opened.
    pub fn finish(self) -> Result<Opened> {
        if self.chunks.next != self.chunks.count {
            return Err(Error::Decrypt);
        }
        Ok(Opened {
            times: self.times,
            plaintext_size: self.chunks.plaintext_size,
            manifest: self.manifest,
        })
    }
}
