//! The reader side: manifest validation, key recovery, data-key derivation and chunk
//! opening (study Algorithm 1, GET; FORMAT.md §4–§6). The reader names the mode it expects
//! and the object it asked for; everything else comes from the manifest and is checked.
//!
//! Opening is two steps around the one secret-key operation: [`Receiver::begin`] validates
//! the manifest and names that operation's public input ([`KeyRequest`]), and
//! [`Pending::complete`] takes its result. [`Receiver::open`] does both with the reader's
//! own key; a reader made by [`Receiver::remote`] holds no secret key, and its caller has a
//! key service perform the operation in between (`kms` crate, issue 41).

use std::time::{Duration, Instant};

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::ctx::ObjectId;
use crate::manifest::Manifest;
use crate::mlkem::{self, Params};
use crate::seal::ChunkState;
use crate::session::{CacheStats, RootCache};
use crate::symmetric::{Aead, TAG_LEN, hkdf_sha256};
use crate::{
    Backend, Error, KeyType, Mode, PublicKey, Result, SecretKey, StageTimes, rsa_oaep, x25519,
    xwing,
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
    /// The secret key is in a key service (of this key type).
    Remote,
}

/// The modes whose one secret-key operation a key service can perform: ML-KEM
/// decapsulation (AWS KMS `Decapsulate`) and X25519 (`DeriveSharedSecret`).
pub const REMOTE_MODES: [Mode; 3] = [Mode::MlKem768, Mode::MlKem1024, Mode::X25519];

/// The public input of the secret-key operation that recovers an object's key (FORMAT.md
/// §5): what a key service is sent. Its result is the 32-byte shared secret, the `ikm` of
/// the data key's derivation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRequest<'a> {
    /// ML-KEM decapsulation of this ciphertext (`C`).
    Decapsulate(&'a [u8]),
    /// X25519 with this ephemeral public key (`C`).
    Agree(&'a [u8; 32]),
}

impl KeyRequest<'_> {
    /// The bytes sent: the ciphertext or the ephemeral public key.
    pub fn bytes(&self) -> &[u8] {
        match self {
            KeyRequest::Decapsulate(c) => c,
            KeyRequest::Agree(p) => &p[..],
        }
    }
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

    /// A reader whose secret key is in a key service: it validates manifests and derives
    /// data keys here, and [`Receiver::begin`] names the operation the service must perform.
    /// Only the [`REMOTE_MODES`]; `public` is the recipient's public key (its key id is the
    /// one the manifests must name).
    pub fn remote(expected: Mode, backend: Backend, public: &PublicKey) -> Result<Self> {
        if !REMOTE_MODES.contains(&expected) {
            return Err(Error::Key(format!(
                "mode {expected} cannot have its key in a key service: the remote modes are \
                 ml-kem-768, ml-kem-1024 and x25519"
            )));
        }
        backend.check_supports(expected)?;
        let want = expected.key_type();
        if public.key_type() != want {
            return Err(Error::Key(format!(
                "mode {expected} needs a {want} key, not a {} key",
                public.key_type()
            )));
        }
        Ok(Self {
            mode: expected,
            backend,
            key_id: public.key_id_hex(),
            secret: Secret::Remote,
            roots: None,
        })
    }

    /// Whether the secret key is in a key service ([`Receiver::remote`]).
    pub fn is_remote(&self) -> bool {
        matches!(self.secret, Secret::Remote)
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

    /// Performs the secret-key operation of `request` with this reader's own key: what a
    /// key service does for a remote reader (every failure of the operation is the opaque
    /// [`Error::Decrypt`]; ML-KEM decapsulation of a wrong ciphertext of the right length
    /// returns a pseudo-random secret, FIPS 203's implicit rejection). Refused for a request
    /// of another kind than the reader's mode.
    pub fn perform(&self, request: KeyRequest<'_>) -> Result<Zeroizing<Vec<u8>>> {
        let v = |s: &[u8]| Zeroizing::new(s.to_vec());
        match (&self.secret, request) {
            (Secret::MlKem(sk), KeyRequest::Decapsulate(c)) => Ok(v(sk.decapsulate(c)?.as_ref())),
            (Secret::X25519(sk), KeyRequest::Agree(epub)) => Ok(v(sk.agree(epub)?.as_ref())),
            _ => Err(Error::Usage(format!(
                "a {} reader cannot perform a {} request",
                self.mode,
                match request {
                    KeyRequest::Decapsulate(_) => "decapsulation",
                    KeyRequest::Agree(_) => "key agreement",
                }
            ))),
        }
    }

    /// Recovers ikm from C (every failure is the opaque [`Error::Decrypt`]).
    fn recover(&self, c: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        let v = |s: &[u8]| Zeroizing::new(s.to_vec());
        Ok(match &self.secret {
            Secret::Remote => {
                return Err(Error::Usage(
                    "this reader's key is in a key service: use begin, have the service \
                     perform the key request, then complete"
                        .into(),
                ));
            }
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
        let pending = self.begin(id, manifest)?;
        let t1 = Instant::now();
        let ikm = match &self.roots {
            Some(cache) => {
                let mut key = [0u8; 32];
                hex::decode_to_slice(&pending.manifest.ctx.c_sha256, &mut key)
                    .map_err(|_| Error::Decrypt)?;
                let root = cache.get_or_recover(&key, || {
                    let ikm = self.recover(&pending.manifest.c)?;
                    let mut r = Zeroizing::new([0u8; 32]);
                    r.copy_from_slice(&ikm);
                    Ok(r)
                })?;
                Zeroizing::new(root.to_vec())
            }
            None => self.recover(&pending.manifest.c)?,
        };
        pending.derive(&ikm, t1.elapsed())
    }

    /// The first step of opening the object `id`: validates the manifest and checks that
    /// it names `id`, this reader's mode and this reader's key, as [`Receiver::open`] does,
    /// and stops before the secret-key operation ([`Pending::key_request`]).
    pub fn begin(&self, id: &ObjectId, manifest: &[u8]) -> Result<Pending<'_>> {
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
        Ok(Pending {
            receiver: self,
            manifest: m,
            ctx_bytes,
            prefix,
            times,
        })
    }
}

/// An object whose manifest is validated and whose key is not recovered yet: the state
/// between [`Receiver::begin`] and [`Pending::complete`].
pub struct Pending<'r> {
    receiver: &'r Receiver,
    manifest: Manifest,
    ctx_bytes: Vec<u8>,
    prefix: [u8; 4],
    times: StageTimes,
}

/// An opening that waits for the answer to its key request from a key service: a v1
/// [`Pending`] or a v2 [`crate::v2::Pending`]. What a remote reader does with either.
pub trait AwaitingKey {
    /// What opening goes on with.
    type Opener;
    /// The one private-key operation the service must perform.
    fn key_request(&self) -> Result<KeyRequest<'_>>;
    /// Finishes with the service's answer `shared`, `took` long; a wrong answer is the
    /// opaque [`Error::Decrypt`].
    fn complete(self, shared: &[u8], took: Duration) -> Result<Self::Opener>;
}

impl AwaitingKey for Pending<'_> {
    type Opener = Opener;
    fn key_request(&self) -> Result<KeyRequest<'_>> {
        Pending::key_request(self)
    }
    fn complete(self, shared: &[u8], took: Duration) -> Result<Opener> {
        Pending::complete(self, shared, took)
    }
}

impl Pending<'_> {
    /// The secret-key operation that recovers the object's key, for the key service. A
    /// `C` of the wrong length for the mode is the opaque [`Error::Decrypt`] (an ML-KEM
    /// ciphertext of the wrong length is sent as it is: the service refuses it).
    pub fn key_request(&self) -> Result<KeyRequest<'_>> {
        let c = &self.manifest.c;
        match self.receiver.mode {
            Mode::MlKem768 | Mode::MlKem1024 => Ok(KeyRequest::Decapsulate(c)),
            Mode::X25519 => c
                .as_slice()
                .try_into()
                .map(KeyRequest::Agree)
                .map_err(|_| Error::Decrypt),
            other => Err(Error::Usage(format!(
                "mode {other} has no key request: its key cannot be in a key service"
            ))),
        }
    }

    /// The validated manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Completes opening with the key service's result: `shared` is the shared secret the
    /// service returned for [`Pending::key_request`] and `took` the time it took (the key
    /// establishment stage). A secret that is not 32 bytes, or an all-zero X25519 result,
    /// is the opaque [`Error::Decrypt`], as a wrong one is when the first chunk fails.
    pub fn complete(self, shared: &[u8], took: Duration) -> Result<Opener> {
        if shared.len() != 32 {
            return Err(Error::Decrypt);
        }
        if self.receiver.mode == Mode::X25519 && bool::from(shared.ct_eq(&[0u8; 32])) {
            return Err(Error::Decrypt);
        }
        self.derive(shared, took)
    }

    /// Derives the data key from `ikm` and makes the opener.
    fn derive(self, ikm: &[u8], key_establishment: Duration) -> Result<Opener> {
        let Pending {
            receiver,
            manifest: m,
            ctx_bytes,
            prefix,
            mut times,
        } = self;
        times.key_establishment = key_establishment;
        let t2 = Instant::now();
        let aead = if receiver.mode.encrypts() {
            let key = hkdf_sha256(receiver.backend, &m.salt, ikm, &ctx_bytes)?;
            Some(Aead::new(receiver.backend, &key)?)
        } else {
            None
        };
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
