//! The writer side: key establishment to a recipient, data-key derivation, chunk sealing and
//! the manifest (study Algorithm 1, PUT; FORMAT.md §4–§6).

use std::time::Instant;

use rand_core::CryptoRng;
use zeroize::Zeroizing;

use crate::ctx::{Context, MAX_PLAINTEXT_SIZE, ObjectId, SessionCtx, chunk_count, chunk_len};
use crate::manifest::{Manifest, PREFIX_LEN, SALT_LEN};
use crate::mlkem::{self, Params};
use crate::session::{SenderSessions, SessionInfo};
use crate::symmetric::{Aead, TAG_LEN, hkdf_sha256, sha256};
use crate::{
    Backend, Error, KeyType, Mode, PublicKey, Result, SecretKey, SessionBounds, StageTimes,
    rsa_oaep, x25519, xwing,
};

/// The key a [`Sender`] seals to.
#[derive(Clone, Copy, Debug)]
pub enum SealKey<'a> {
    /// No key (`plaintext` only).
    None,
    /// A recipient public key (every public-key mode).
    Public(&'a PublicKey),
    /// A pre-shared key (`psk` only).
    Psk(&'a SecretKey),
}

/// A parsed recipient, ready to establish keys; parse once, seal many objects.
enum Recipient {
    None,
    Psk(Zeroizing<Vec<u8>>),
    Rsa(rsa_oaep::PublicKey),
    X25519([u8; 32]),
    MlKem(mlkem::EncapKey),
    Concat { m: mlkem::EncapKey, x: [u8; 32] },
    XWing(xwing::EncapKey),
}

/// A writer for one mode, backend and recipient. `Sync`: share it between threads.
pub struct Sender {
    mode: Mode,
    backend: Backend,
    key_id: String,
    recipient: Recipient,
    sessions: Option<SenderSessions>,
}

/// A recipient's X25519 public key (or the X25519 half of one): 32 bytes, not of small order.
fn x25519_pub(bytes: &[u8]) -> Result<[u8; 32]> {
    let u = bytes
        .try_into()
        .map_err(|_| Error::Key("X25519 public key must be 32 bytes".into()))?;
    x25519::check_public(&u)?;
    Ok(u)
}

impl Sender {
    /// Parses the recipient key for `mode` on `backend`. For `ml-kem-768-session` the
    /// session bounds default to [`SessionBounds::default`]; see [`Sender::with_session_bounds`].
    pub fn new(mode: Mode, backend: Backend, key: SealKey<'_>) -> Result<Self> {
        backend.check_supports(mode)?;
        let want = mode.key_type();
        let (recipient, key_id) = match (key, mode) {
            (SealKey::None, Mode::Plaintext) => (Recipient::None, String::new()),
            (SealKey::Psk(sk), Mode::Psk) if sk.key_type() == KeyType::Psk => (
                Recipient::Psk(Zeroizing::new(sk.expose_secret().to_vec())),
                sk.key_id_hex()?,
            ),
            (SealKey::Public(pk), _) if pk.key_type() == want => {
                let b = pk.as_bytes();
                let r = match want {
                    KeyType::Rsa3072 | KeyType::Rsa4096 => {
                        Recipient::Rsa(rsa_oaep::PublicKey::parse(
                            backend,
                            want.rsa_bits().unwrap_or_default(),
                            b,
                        )?)
                    }
                    KeyType::X25519 => Recipient::X25519(x25519_pub(b)?),
                    KeyType::MlKem768 => {
                        Recipient::MlKem(mlkem::EncapKey::parse(backend, Params::K768, b)?)
                    }
                    KeyType::MlKem1024 => {
                        Recipient::MlKem(mlkem::EncapKey::parse(backend, Params::K1024, b)?)
                    }
                    KeyType::ConcatHybrid => {
                        let (m, x) = b.split_at(Params::K768.public_len());
                        Recipient::Concat {
                            m: mlkem::EncapKey::parse(backend, Params::K768, m)?,
                            x: x25519_pub(x)?,
                        }
                    }
                    KeyType::XWing => Recipient::XWing(xwing::EncapKey::parse(backend, b)?),
                    KeyType::None | KeyType::Psk => {
                        return Err(Error::Key(format!("mode {mode} takes no public key")));
                    }
                };
                (r, pk.key_id_hex())
            }
            (SealKey::None, _) => {
                return Err(Error::Key(format!("mode {mode} needs a {want} key")));
            }
            (SealKey::Psk(sk), _) => {
                return Err(Error::Key(format!(
                    "mode {mode} needs a {want} key, not a {} key",
                    sk.key_type()
                )));
            }
            (SealKey::Public(pk), _) => {
                return Err(Error::Key(format!(
                    "mode {mode} needs a {want} key, not a {} key",
                    pk.key_type()
                )));
            }
        };
        let sessions = match mode {
            Mode::MlKem768Session => Some(SenderSessions::new(SessionBounds::default())?),
            _ => None,
        };
        Ok(Self {
            mode,
            backend,
            key_id,
            recipient,
            sessions,
        })
    }

    /// Sets B_max and T_max for `ml-kem-768-session` (starts a fresh session state).
    pub fn with_session_bounds(mut self, bounds: SessionBounds) -> Result<Self> {
        if self.mode != Mode::MlKem768Session {
            return Err(Error::Usage(format!(
                "session bounds apply to ml-kem-768-session, not {}",
                self.mode
            )));
        }
        self.sessions = Some(SenderSessions::new(bounds)?);
        Ok(self)
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Lowercase hex key id of the recipient (empty for plaintext).
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// Per-object key establishment: (C, ikm).
    fn establish<R: CryptoRng + ?Sized>(
        &self,
        rng: &mut R,
    ) -> Result<(Vec<u8>, Zeroizing<Vec<u8>>)> {
        let b = self.backend;
        let v = |s: &[u8]| Zeroizing::new(s.to_vec());
        Ok(match &self.recipient {
            Recipient::None => (Vec::new(), Zeroizing::new(Vec::new())),
            Recipient::Psk(k) => (Vec::new(), k.clone()),
            Recipient::Rsa(pk) => {
                let mut secret = Zeroizing::new([0u8; 32]);
                rng.fill_bytes(secret.as_mut());
                (pk.encrypt(&secret, rng)?, v(secret.as_ref()))
            }
            Recipient::X25519(pk) => {
                let (epub, ss) = x25519::ephemeral_agree(b, pk, rng)?;
                let mut c = epub.to_vec();
                if self.mode == Mode::X25519Padded {
                    c.resize(Mode::X25519Padded.ciphertext_len(), 0);
                }
                (c, v(ss.as_ref()))
            }
            Recipient::MlKem(pk) => {
                let (c, ss) = pk.encapsulate(rng)?;
                (c, v(ss.as_ref()))
            }
            Recipient::Concat { m, x } => {
                let (mut c, ss_m) = m.encapsulate(rng)?;
                let (epub, ss_x) = x25519::ephemeral_agree(b, x, rng)?;
                c.extend_from_slice(&epub);
                let mut ikm = Zeroizing::new(Vec::with_capacity(64));
                ikm.extend_from_slice(ss_m.as_ref());
                ikm.extend_from_slice(ss_x.as_ref());
                (c, ikm)
            }
            Recipient::XWing(pk) => {
                let (c, ss) = pk.encapsulate(rng)?;
                (c, v(ss.as_ref()))
            }
        })
    }

    /// Key establishment alone (one encapsulation, RSA encryption or X25519 exchange; for
    /// `ml-kem-768-session` a full encapsulation, as at a session start). Returns `C`.
    /// For benchmarks; [`Sender::seal`] is the API.
    #[doc(hidden)]
    pub fn bench_establish<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> Result<Vec<u8>> {
        self.establish(rng).map(|(c, _)| c)
    }

    /// Starts sealing a new object of exactly `plaintext_size` bytes: establishes its key
    /// (or takes the current session root), builds ctx and the manifest, derives the data
    /// key. Then feed the chunks to [`Sealer::seal_chunk`] and call [`Sealer::finish`].
    pub fn seal<R: CryptoRng + ?Sized>(
        &self,
        id: &ObjectId,
        plaintext_size: u64,
        rng: &mut R,
    ) -> Result<Sealer> {
        id.validate()?;
        if plaintext_size > MAX_PLAINTEXT_SIZE {
            return Err(Error::Usage(format!(
                "object of {plaintext_size} bytes is above the 2^53 - 1 limit"
            )));
        }
        let mut times = StageTimes::default();

        let t0 = Instant::now();
        let (c, ikm, session) = match &self.sessions {
            Some(s) => {
                let (c, root, info) = s.next(|| {
                    let (c, ikm) = self.establish(rng)?;
                    let mut root = Zeroizing::new([0u8; 32]);
                    root.copy_from_slice(&ikm);
                    Ok((c, root))
                })?;
                (c, Zeroizing::new(root.to_vec()), Some(info))
            }
            None => {
                let (c, ikm) = self.establish(rng)?;
                (c, ikm, None)
            }
        };
        times.key_establishment = t0.elapsed();

        let t1 = Instant::now();
        let encrypts = self.mode.encrypts();
        let mut salt = vec![0u8; if encrypts { SALT_LEN } else { 0 }];
        let mut prefix = [0u8; PREFIX_LEN];
        if encrypts {
            rng.fill_bytes(&mut salt);
            rng.fill_bytes(&mut prefix);
        }
        let session_ctx = session.map(|s| SessionCtx {
            age_ms: u64::try_from(s.age.as_millis()).unwrap_or(u64::MAX),
            index: s.index,
            max_age_ms: u64::try_from(s.bounds.max_age.as_millis()).unwrap_or(u64::MAX),
            max_objects: s.bounds.max_objects,
        });
        let c_sha = sha256(self.backend, &c);
        let ctx = Context::new(
            id,
            self.mode,
            plaintext_size,
            self.key_id.clone(),
            &c_sha,
            session_ctx,
        );
        let ctx_bytes = ctx.canonical_bytes()?;
        let record = Manifest {
            ctx,
            c,
            salt,
            nonce_prefix: if encrypts {
                prefix.to_vec()
            } else {
                Vec::new()
            },
        };
        let manifest = record.to_bytes()?;
        times.manifest = t1.elapsed();

        let t2 = Instant::now();
        let aead = if encrypts {
            let key = hkdf_sha256(self.backend, &record.salt, &ikm, &ctx_bytes)?;
            Some(Aead::new(self.backend, &key)?)
        } else {
            None
        };
        drop(ikm);
        times.key_derivation = t2.elapsed();

        Ok(Sealer {
            chunks: ChunkState::new(ctx_bytes, prefix, plaintext_size),
            aead,
            manifest,
            times,
            session,
        })
    }
}

/// Per-object chunk bookkeeping shared by sealing and opening.
pub(crate) struct ChunkState {
    /// ctx ‖ be64(j) ‖ be64(ℓ_j) ‖ final_j, tail rewritten per chunk.
    ad: Vec<u8>,
    ctx_len: usize,
    prefix: [u8; PREFIX_LEN],
    pub(crate) next: u64,
    pub(crate) count: u64,
    pub(crate) plaintext_size: u64,
}

impl ChunkState {
    pub(crate) fn new(ctx_bytes: Vec<u8>, prefix: [u8; PREFIX_LEN], plaintext_size: u64) -> Self {
        let ctx_len = ctx_bytes.len();
        let mut ad = ctx_bytes;
        ad.extend_from_slice(&[0u8; 17]);
        Self {
            ad,
            ctx_len,
            prefix,
            next: 0,
            count: chunk_count(plaintext_size),
            plaintext_size,
        }
    }

    /// Plaintext length of the next chunk, or `None` when all chunks are done.
    pub(crate) fn next_len(&self) -> Option<usize> {
        (self.next < self.count).then(|| {
            usize::try_from(chunk_len(self.plaintext_size, self.next)).unwrap_or(usize::MAX)
        })
    }

    /// Nonce and associated data of the next chunk (FORMAT.md §6).
    pub(crate) fn nonce_and_ad(&mut self, len: usize) -> ([u8; 12], &[u8]) {
        let j = self.next;
        let mut nonce = [0u8; 12];
        nonce[..PREFIX_LEN].copy_from_slice(&self.prefix);
        nonce[PREFIX_LEN..].copy_from_slice(&j.to_be_bytes());
        let tail = &mut self.ad[self.ctx_len..];
        tail[..8].copy_from_slice(&j.to_be_bytes());
        tail[8..16].copy_from_slice(&(len as u64).to_be_bytes());
        tail[16] = u8::from(j + 1 == self.count);
        (nonce, &self.ad)
    }
}

/// Seals one object chunk by chunk. Created by [`Sender::seal`].
pub struct Sealer {
    chunks: ChunkState,
    aead: Option<Aead>,
    manifest: Vec<u8>,
    times: StageTimes,
    session: Option<SessionInfo>,
}

/// The result of sealing one object.
#[derive(Clone, Debug)]
pub struct Sealed {
    /// The manifest bytes (`manifest.json`), to be written after `data.enc`.
    pub manifest: Vec<u8>,
    /// Stage timers.
    pub times: StageTimes,
    /// Session bookkeeping (`ml-kem-768-session` only).
    pub session: Option<SessionInfo>,
    /// Size of `data.enc` in bytes.
    pub ciphertext_size: u64,
}

impl Sealer {
    /// Plaintext length the next [`Sealer::seal_chunk`] call must get (`None`: all sealed).
    pub fn next_chunk_len(&self) -> Option<usize> {
        self.chunks.next_len()
    }

    /// Total size of `data.enc` once all chunks are sealed.
    pub fn ciphertext_size(&self) -> u64 {
        let tag = if self.aead.is_some() {
            TAG_LEN as u64
        } else {
            0
        };
        self.chunks.plaintext_size + tag * self.chunks.count
    }

    /// The manifest bytes (available at once; commit them only after the data).
    pub fn manifest(&self) -> &[u8] {
        &self.manifest
    }

    /// Session bookkeeping of this object (`ml-kem-768-session` only).
    pub fn session(&self) -> Option<SessionInfo> {
        self.session
    }

    /// Encrypts the next chunk in place: `buf` holds exactly [`Sealer::next_chunk_len`]
    /// plaintext bytes and afterwards holds the ciphertext followed by the 16-byte tag.
    pub fn seal_chunk(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        let Some(want) = self.chunks.next_len() else {
            return Err(Error::Usage(
                "all chunks of this object are already sealed".into(),
            ));
        };
        if buf.len() != want {
            return Err(Error::Usage(format!(
                "chunk {} must hold {want} bytes, got {}",
                self.chunks.next,
                buf.len()
            )));
        }
        let t = Instant::now();
        if let Some(aead) = &self.aead {
            let (nonce, ad) = self.chunks.nonce_and_ad(want);
            aead.seal_in_place(&nonce, ad, buf)?;
        }
        self.times.aead += t.elapsed();
        self.chunks.next += 1;
        Ok(())
    }

    /// Finishes the object; fails if a chunk is missing.
    pub fn finish(self) -> Result<Sealed> {
        if self.chunks.next != self.chunks.count {
            return Err(Error::Usage(format!(
                "object not complete: {} of {} chunks sealed",
                self.chunks.next, self.chunks.count
            )));
        }
        let ciphertext_size = self.ciphertext_size();
        Ok(Sealed {
            manifest: self.manifest,
            times: self.times,
            session: self.session,
            ciphertext_size,
        })
    }
}
