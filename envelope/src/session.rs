//! Bounded sessions of mode `ml-kem-768-session` (study code N1) (study section V-F).
//!
//! The sender establishes one ML-KEM-768 root per session and uses it for at most B_max
//! objects and for at most T_max after it was established; every object still gets its own
//! data key, derived from the root with its own random salt and its own ctx (which names the
//! object and carries the session bookkeeping). The receiver caches roots by `SHA-256(C)`;
//! a cache belongs to one [`crate::Receiver`], so roots are scoped to one recipient key.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::ctx::MAX_CTX_INTEGER;
use crate::symmetric::Secret32;
use crate::{Error, Result, SessionBounds};

/// What one sealed object used of its session; visible to callers so a validator can check
/// that no session exceeded its bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// Sequence number of the session within its [`crate::Sender`] (0, 1, 2, …).
    pub session: u64,
    /// 0-based index of the object within the session (< B_max).
    pub index: u64,
    /// Age of the root when the object was sealed (≤ T_max).
    pub age: Duration,
    /// Whether this object started a new session (a KEM encapsulation happened).
    pub rekeyed: bool,
    /// The bounds in force.
    pub bounds: SessionBounds,
}

struct Active {
    seq: u64,
    c: Vec<u8>,
    root: Secret32,
    started: Instant,
    used: u64,
}

/// Sender-side session state, shared by all threads sealing through one `Sender`.
pub(crate) struct SenderSessions {
    bounds: SessionBounds,
    state: Mutex<(Option<Active>, u64)>,
}

impl SenderSessions {
    pub(crate) fn new(bounds: SessionBounds) -> Result<Self> {
        if bounds.max_objects == 0 {
            return Err(Error::Usage(
                "session bound max_objects (B_max) must be at least 1".into(),
            ));
        }
        if bounds.max_age.is_zero() {
            return Err(Error::Usage(
                "session bound max_age (T_max) must be positive".into(),
            ));
        }
        // Both bounds are written into every object's ctx, whose integers stop at 2^53 − 1.
        if bounds.max_objects > MAX_CTX_INTEGER {
            return Err(Error::Usage(format!(
                "session bound max_objects (B_max) {} is above 2^53 - 1",
                bounds.max_objects
            )));
        }
        if bounds.max_age.as_millis() > u128::from(MAX_CTX_INTEGER) {
            return Err(Error::Usage(format!(
                "session bound max_age (T_max) {:?} is above 2^53 - 1 milliseconds",
                bounds.max_age
            )));
        }
        Ok(Self {
            bounds,
            state: Mutex::new((None, 0)),
        })
    }

    /// Returns (C, root, info) for the next object, establishing a new root with `establish`
    /// when there is none or the current one is exhausted or too old.
    pub(crate) fn next(
        &self,
        establish: impl FnOnce() -> Result<(Vec<u8>, Secret32)>,
    ) -> Result<(Vec<u8>, Secret32, SessionInfo)> {
        let mut guard = self
            .state
            .lock()
            .map_err(|_| Error::Usage("session state poisoned".into()))?;
        let (active, started_count) = &mut *guard;
        let now = Instant::now();
        let fresh = match active {
            Some(a) => {
                a.used >= self.bounds.max_objects
                    || now.duration_since(a.started) >= self.bounds.max_age
            }
            None => true,
        };
        if fresh {
            let (c, root) = establish()?;
            *active = Some(Active {
                seq: *started_count,
                c,
                root,
                started: Instant::now(),
                used: 0,
            });
            *started_count += 1;
        }
        let a = active
            .as_mut()
            .ok_or_else(|| Error::Usage("no active session".into()))?;
        let info = SessionInfo {
            session: a.seq,
            index: a.used,
            age: Instant::now().duration_since(a.started),
            rekeyed: fresh,
            bounds: self.bounds,
        };
        a.used += 1;
        Ok((a.c.clone(), a.root.clone(), info))
    }
}

/// Counters of a receiver's root cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Roots found in the cache (no decapsulation).
    pub hits: u64,
    /// Roots decapsulated and inserted.
    pub misses: u64,
}

/// Receiver-side cache of session roots, keyed by SHA-256(C). Bounded; the oldest root is
/// evicted (and zeroized) first.
pub(crate) struct RootCache {
    capacity: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Default)]
struct CacheInner {
    map: HashMap<[u8; 32], Secret32>,
    order: VecDeque<[u8; 32]>,
    stats: CacheStats,
}

impl RootCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(CacheInner::default()),
        }
    }

    /// Looks up the root of `c_sha256`, or recovers it with `recover` and caches it.
    pub(crate) fn get_or_recover(
        &self,
        c_sha256: &[u8; 32],
        recover: impl FnOnce() -> Result<Secret32>,
    ) -> Result<Secret32> {
        {
            let mut g = self.inner.lock().map_err(|_| Error::Decrypt)?;
            if let Some(root) = g.map.get(c_sha256).cloned() {
                g.stats.hits += 1;
                return Ok(root);
            }
        }
        // Decapsulate outside the lock: other objects keep flowing meanwhile.
        let root = recover()?;
        let mut g = self.inner.lock().map_err(|_| Error::Decrypt)?;
        g.stats.misses += 1;
        if g.map.insert(*c_sha256, root.clone()).is_none() {
            g.order.push_back(*c_sha256);
        }
        while g.order.len() > self.capacity {
            if let Some(old) = g.order.pop_front() {
                g.map.remove(&old);
            }
        }
        Ok(root)
    }

    pub(crate) fn stats(&self) -> CacheStats {
        self.inner.lock().map(|g| g.stats).unwrap_or_default()
    }
}
