//! The embedded key service's keys: a directory of pqbench secret key files (FORMAT.md §7,
//! mode 0600, the directory 0700), never inside a git working tree. A key's KMS key id is its
//! pqbench key id (lowercase hex SHA-256 of the public key), so that a campaign's keys
//! directory can be served as it is and a remote reader finds its key by the id its
//! manifests name. Keys of types the service does not hold (RSA, X-Wing, ...) are skipped
//! and listed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use envelope::{Backend, KeyType, PublicKey, Receiver, SecretKey};

use crate::wire::KeySpec;
use crate::{Error, Result};

/// One key of the service.
pub(crate) struct Held {
    /// Its spec.
    pub(crate) spec: KeySpec,
    /// Its public key.
    pub(crate) public: PublicKey,
    /// The secret key, expanded once (aws-lc).
    pub(crate) reader: Receiver,
}

/// The keys of the embedded service.
pub struct KeyStore {
    dir: PathBuf,
    keys: RwLock<HashMap<String, Arc<Held>>>,
    skipped: Vec<(PathBuf, String)>,
    /// A read-only Secret volume ([`KeyStore::open_mounted`]): CreateKey is refused.
    mounted: bool,
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStore")
            .field("dir", &self.dir)
            .field("keys", &self.key_ids())
            .finish_non_exhaustive()
    }
}

fn hold(sk: &SecretKey, spec: KeySpec) -> Result<(String, Held)> {
    let public = sk
        .public_key()?
        .ok_or_else(|| Error::Request(format!("a {spec} key has no public key")))?;
    let reader = Receiver::new(spec.mode(), Backend::AwsLc, Some(sk))?;
    Ok((
        public.key_id_hex(),
        Held {
            spec,
            public,
            reader,
        },
    ))
}

impl KeyStore {
    /// Opens (creating it 0700 if need be) the key directory `dir` and loads every `*.key`
    /// file in it. Refuses a directory inside a git working tree, and a key file that is
    /// group- or world-accessible or malformed (naming it).
    pub fn open(dir: &Path) -> Result<Self> {
        Self::load(dir, false)
    }

    /// Opens a directory mounted read-only from a Kubernetes Secret (the operator's key
    /// service pod): it must exist, and a key file may be readable by its group (the
    /// kubelet gives a Secret volume's files to the pod's `fsGroup`, mode 0440) but never
    /// by others nor writable by anyone but its owner. CreateKey is refused.
    pub fn open_mounted(dir: &Path) -> Result<Self> {
        Self::load(dir, true)
    }

    fn load(dir: &Path, mounted: bool) -> Result<Self> {
        let err = |reason: String| Error::Store {
            path: dir.to_path_buf(),
            reason,
        };
        if let Some(top) = envelope::keys::git_work_tree(dir) {
            return Err(err(format!(
                "it is inside the git working tree {}, where `git add` would pick the secret \
                 keys up; give the service a directory outside any repository",
                top.display()
            )));
        }
        if mounted && !dir.is_dir() {
            return Err(err(
                "it is not a directory (the keys Secret is not mounted)".into(),
            ));
        }
        if !dir.exists() {
            let mut b = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            b.recursive(true)
                .create(dir)
                .map_err(|e| err(format!("cannot create: {e}")))?;
        }
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| err(format!("cannot list: {e}")))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "key"))
            .collect();
        names.sort();
        let mut keys = HashMap::new();
        let mut skipped = Vec::new();
        for path in names {
            let sk = if mounted {
                SecretKey::read_mounted(&path)?
            } else {
                SecretKey::read_file(&path)?
            };
            let Some(spec) = KeySpec::of(sk.key_type()) else {
                skipped.push((
                    path,
                    format!(
                        "a {} key: the service holds ML-KEM and X25519 keys",
                        sk.key_type()
                    ),
                ));
                continue;
            };
            let (id, held) = hold(&sk, spec)?;
            keys.insert(id, Arc::new(held));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            keys: RwLock::new(keys),
            skipped,
            mounted,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Key files that were not loaded, and why.
    pub fn skipped(&self) -> &[(PathBuf, String)] {
        &self.skipped
    }

    /// The key ids held, sorted.
    pub fn key_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .keys
            .read()
            .map(|k| k.keys().cloned().collect())
            .unwrap_or_default();
        ids.sort();
        ids
    }

    /// The spec of a key held.
    pub fn spec(&self, key_id: &str) -> Option<KeySpec> {
        self.get(key_id).map(|h| h.spec)
    }

    pub(crate) fn get(&self, key_id: &str) -> Option<Arc<Held>> {
        self.keys.read().ok()?.get(key_id).cloned()
    }

    /// Creates a key of `spec`: generated from the OS's random generator, written to
    /// `<key id>.key` (0600) before the service answers. Returns its key id.
    pub fn create(&self, spec: KeySpec) -> Result<String> {
        if self.mounted {
            return Err(Error::Request(format!(
                "the keys are a read-only Secret volume ({}): the service creates no key",
                self.dir.display()
            )));
        }
        let sk = SecretKey::generate(spec.key_type(), &mut envelope::os_rng())?;
        let (id, held) = hold(&sk, spec)?;
        sk.write_file(&self.dir.join(format!("{id}.key")))?;
        self.keys
            .write()
            .map_err(|_| Error::Request("the key store's lock is poisoned".into()))?
            .insert(id.clone(), Arc::new(held));
        Ok(id)
    }

    /// Creates a key of `key_type` (refused for types the service does not hold).
    pub fn create_type(&self, key_type: KeyType) -> Result<String> {
        let spec = KeySpec::of(key_type).ok_or_else(|| {
            Error::Request(format!(
                "the key service holds ML-KEM-768, ML-KEM-1024 and X25519 keys, not {key_type}"
            ))
        })?;
        self.create(spec)
    }
}
