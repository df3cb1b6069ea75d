//! The key-service client: one HTTP/1.1 `POST /` per call over hyper-util's pooled client,
//! signed with SigV4 by `aws-sigv4` (as the lean S3 client signs), nothing else on the
//! request path: no retries (a timed run counts every failure; the run decides what a
//! failure means), an explicit timeout on the whole call, errors in [`KmsClass`]es.
//!
//! [`RemoteKey`] is what a reader holds: the client, the recipient's key id, and optionally a
//! cache of shared secrets keyed by SHA-256 of the ciphertext (the shape of the AWS
//! Encryption SDK's caching materials manager: a repeated ciphertext costs no round trip).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_smithy_runtime_api::client::identity::Identity;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper_util::client::legacy::Client as Pool;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use envelope::{KeyRequest, PublicKey};

use crate::wire::{self, Blob, KeySpec, Op};
use crate::{Error, KmsClass, Result, sigv4};

/// Where the key service is and how to call it.
#[derive(Clone)]
pub struct KmsSettings {
    /// `http://host:port` (plain HTTP: the in-cluster or loopback path; `https://` is
    /// refused, as TLS would be measured too).
    pub endpoint: String,
    /// The region signatures are scoped to.
    pub region: String,
    /// Access key id.
    pub access_key: String,
    /// Secret access key.
    pub secret_key: Zeroizing<String>,
    /// Bound on a whole call (connect, request, response).
    pub timeout: Duration,
    /// Idle keep-alive connections kept (size it to the concurrency).
    pub pool: usize,
}

impl std::fmt::Debug for KmsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KmsSettings")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("access_key", &self.access_key)
            .field("timeout", &self.timeout)
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl KmsSettings {
    /// Settings with a 10 s timeout and a pool of 64 connections.
    pub fn new(endpoint: &str, region: &str, access_key: &str, secret_key: &str) -> Self {
        Self {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            region: region.to_owned(),
            access_key: access_key.to_owned(),
            secret_key: Zeroizing::new(secret_key.to_owned()),
            timeout: Duration::from_secs(10),
            pool: 64,
        }
    }
}

/// A key-service client. Cheap to share (`Arc`), `Send + Sync`.
pub struct Client {
    pool: Pool<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    endpoint: String,
    uri: String,
    region: String,
    identity: Identity,
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `settings`. Refuses an endpoint that is not `http(s)://host[:port]`.
    /// `https` verifies the service's certificate against the system's roots
    /// (`SSL_CERT_FILE` and `SSL_CERT_DIR` override them), as AWS KMS needs; plain `http`
    /// is the embedded service's in-cluster or loopback path, where TLS would be measured
    /// as well.
    pub fn new(settings: &KmsSettings) -> Result<Self> {
        let ep = &settings.endpoint;
        let uri: http::Uri = format!("{ep}/").parse().map_err(|e| {
            Error::Settings(format!(
                "endpoint {ep:?} is not a URL ({e}); the key-service client takes \
                     http(s)://host[:port]"
            ))
        })?;
        if !matches!(uri.scheme_str(), Some("http" | "https"))
            || uri.host().is_none()
            || uri.path() != "/"
        {
            return Err(Error::Settings(format!(
                "endpoint {ep:?}: the key-service client takes http(s)://host[:port]"
            )));
        }
        if settings.access_key.is_empty() || settings.secret_key.is_empty() {
            return Err(Error::Settings(
                "credentials: the access key and the secret key must not be empty".into(),
            ));
        }
        if settings.timeout.is_zero() {
            return Err(Error::Settings("timeout must be more than 0".into()));
        }
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(settings.timeout));
        connector.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| Error::Settings(format!("TLS roots for {ep}: {e}")))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let pool = Pool::builder(TokioExecutor::new())
            .pool_max_idle_per_host(settings.pool.max(1))
            .build(connector);
        Ok(Self {
            pool,
            endpoint: ep.clone(),
            uri: uri.to_string(),
            region: settings.region.clone(),
            identity: sigv4::identity(&settings.access_key, &settings.secret_key),
            timeout: settings.timeout,
        })
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// One call: `op` with `request`, its answer parsed as `A`.
    async fn call<Q: Serialize, A: DeserializeOwned>(&self, op: Op, request: &Q) -> Result<A> {
        let body = serde_json::to_vec(request).map_err(|e| Error::Request(e.to_string()))?;
        let target = format!("{}{}", wire::TARGET_PREFIX, op.name());
        let headers = [
            ("content-type", wire::CONTENT_TYPE),
            ("x-amz-target", target.as_str()),
        ];
        let signed = sigv4::sign_request(
            &self.identity,
            &self.region,
            &self.uri,
            &headers,
            &body,
            SystemTime::now(),
        )
        .map_err(Error::Request)?;
        let mut req = Request::builder().method("POST").uri(&self.uri);
        for (k, v) in headers {
            req = req.header(k, v);
        }
        for (k, v) in &signed {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Error::Request(format!("building the request: {e}")))?;
        let transport = |class: KmsClass, detail: String| Error::Transport {
            op,
            class,
            endpoint: self.endpoint.clone(),
            detail,
        };
        let exchange = async {
            let resp = self
                .pool
                .request(req)
                .await
                .map_err(|e| transport(KmsClass::Unavailable, error_chain(&e)))?;
            let status = resp.status();
            let bytes = Limited::new(resp.into_body(), wire::MAX_RESPONSE_BODY)
                .collect()
                .await
                .map_err(|e| {
                    transport(KmsClass::Unavailable, format!("reading the response: {e}"))
                })?
                .to_bytes();
            Ok::<_, Error>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| {
                transport(
                    KmsClass::Timeout,
                    format!("no answer within {} ms", self.timeout.as_millis()),
                )
            })??;
        if status == StatusCode::OK {
            return serde_json::from_slice(&bytes).map_err(|e| Error::Protocol {
                op,
                detail: format!("the {op} response does not parse: {e}"),
            });
        }
        let (code, message) = match serde_json::from_slice::<wire::ErrorBody>(&bytes) {
            Ok(b) => (b.code().to_owned(), b.message),
            Err(_) => (
                String::new(),
                String::from_utf8_lossy(&bytes).chars().take(200).collect(),
            ),
        };
        Err(Error::Service {
            op,
            class: KmsClass::of(&code, status.as_u16()),
            code,
            status: status.as_u16(),
            message,
        })
    }

    /// Creates a key of `spec` in the service.
    pub async fn create_key(&self, spec: KeySpec) -> Result<wire::KeyMetadata> {
        let r: wire::CreateKeyResponse = self
            .call(
                Op::CreateKey,
                &wire::CreateKeyRequest {
                    key_spec: Some(spec.name().into()),
                    key_usage: Some(spec.usage().into()),
                    description: Some("pqbench".into()),
                },
            )
            .await?;
        Ok(r.key_metadata)
    }

    /// The public key of `key_id` (a key id or key ARN), checked to be of a spec the
    /// service holds and decoded from its `SubjectPublicKeyInfo`.
    pub async fn get_public_key(&self, key_id: &str) -> Result<PublicKey> {
        let op = Op::GetPublicKey;
        let r: wire::GetPublicKeyResponse = self
            .call(
                op,
                &wire::GetPublicKeyRequest {
                    key_id: key_id.into(),
                },
            )
            .await?;
        let spec = KeySpec::from_name(&r.key_spec).ok_or_else(|| Error::Protocol {
            op,
            detail: format!("KeySpec {:?} is not one pqbench uses", r.key_spec),
        })?;
        let raw = wire::spki::decode(spec, &r.public_key).map_err(|e| Error::Protocol {
            op,
            detail: e.to_string(),
        })?;
        Ok(PublicKey::from_bytes(spec.key_type(), raw)?)
    }

    /// `Decapsulate`: the shared secret of an ML-KEM ciphertext under `key_id`.
    pub async fn decapsulate(&self, key_id: &str, ciphertext: &[u8]) -> Result<Blob> {
        let r: wire::DecapsulateResponse = self
            .call(
                Op::Decapsulate,
                &wire::DecapsulateRequest {
                    key_id: key_id.into(),
                    shared_secret_ciphertext_blob: Zeroizing::new(ciphertext.to_vec()),
                    encapsulation_algorithm: wire::ALG_ML_KEM.into(),
                    dry_run: None,
                },
            )
            .await?;
        Ok(r.shared_secret)
    }

    /// `DeriveSharedSecret`: ECDH (X25519 here) of `key_id` with a peer's raw public key.
    pub async fn derive_shared_secret(&self, key_id: &str, peer: &[u8; 32]) -> Result<Blob> {
        let r: wire::DeriveSharedSecretResponse = self
            .call(
                Op::DeriveSharedSecret,
                &wire::DeriveSharedSecretRequest {
                    key_id: key_id.into(),
                    key_agreement_algorithm: wire::ALG_ECDH.into(),
                    public_key: Zeroizing::new(wire::spki::encode(KeySpec::X25519, peer)),
                    dry_run: None,
                },
            )
            .await?;
        Ok(r.shared_secret)
    }
}

/// The error and its sources, as one line (hyper's errors say little at the top).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// Shared secrets a [`RemoteKey`] keeps when its cache is on.
const CACHE_CAPACITY: usize = 4096;

/// A bounded map from SHA-256(request) to the 32-byte secret, oldest evicted first.
#[derive(Default)]
struct Cache {
    map: HashMap<[u8; 32], Zeroizing<[u8; 32]>>,
    order: VecDeque<[u8; 32]>,
    hits: u64,
    misses: u64,
}

/// Hits and misses of a [`RemoteKey`]'s cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Requests answered from the cache.
    pub hits: u64,
    /// Requests sent to the service.
    pub misses: u64,
}

/// A recovered shared secret.
pub struct Recovered {
    /// The 32-byte shared secret.
    pub secret: Zeroizing<Vec<u8>>,
    /// Whether the service was asked (false: answered from the cache).
    pub remote: bool,
}

/// A recipient key held in a key service, as a reader uses it.
pub struct RemoteKey {
    client: Arc<Client>,
    key_id: String,
    spec: KeySpec,
    cache: Option<Mutex<Cache>>,
}

impl std::fmt::Debug for RemoteKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteKey")
            .field("endpoint", &self.client.endpoint())
            .field("key_id", &self.key_id)
            .field("spec", &self.spec)
            .field("cache", &self.cache.is_some())
            .finish()
    }
}

impl RemoteKey {
    /// The key whose public key is `public` (its key id names it in the service), with a
    /// cache of shared secrets when `cache`.
    pub fn new(client: Arc<Client>, public: &PublicKey, cache: bool) -> Result<Self> {
        let spec = KeySpec::of(public.key_type()).ok_or_else(|| {
            Error::Request(format!(
                "a {} key cannot be in the key service: it holds ML-KEM-768, ML-KEM-1024 and \
                 X25519 keys",
                public.key_type()
            ))
        })?;
        Ok(Self {
            client,
            key_id: public.key_id_hex(),
            spec,
            cache: cache.then(|| Mutex::new(Cache::default())),
        })
    }

    /// The key `key_id` (an id or ARN the service gave it, as AWS KMS's key ids are not
    /// derived from the key) whose public key is `public`.
    pub fn with_key_id(
        client: Arc<Client>,
        public: &PublicKey,
        key_id: &str,
        cache: bool,
    ) -> Result<Self> {
        let mut key = Self::new(client, public, cache)?;
        key_id.clone_into(&mut key.key_id);
        Ok(key)
    }

    /// The key id.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The key spec.
    pub fn spec(&self) -> KeySpec {
        self.spec
    }

    /// The cache's counts (`None`: no cache).
    pub fn cache_counts(&self) -> Option<CacheCounts> {
        let c = self.cache.as_ref()?.lock().ok()?;
        Some(CacheCounts {
            hits: c.hits,
            misses: c.misses,
        })
    }

    /// Performs `request` in the service (or answers it from the cache): `Decapsulate` for
    /// an ML-KEM key, `DeriveSharedSecret` for an X25519 key. The secret must be 32 bytes.
    pub async fn recover(&self, request: KeyRequest<'_>) -> Result<Recovered> {
        // The cache's key: SHA-256 of the request, computed only when there is a cache.
        let digest: Option<[u8; 32]> = self
            .cache
            .as_ref()
            .map(|_| Sha256::digest(request.bytes()).into());
        if let (Some(cache), Some(digest)) = (&self.cache, &digest) {
            let mut c = cache
                .lock()
                .map_err(|_| Error::Request("the secret cache's lock is poisoned".into()))?;
            if let Some(s) = c.map.get(digest).map(|s| Zeroizing::new(s.to_vec())) {
                c.hits += 1;
                return Ok(Recovered {
                    secret: s,
                    remote: false,
                });
            }
            c.misses += 1;
        }
        let (op, secret) = match (self.spec.recover_op(), request) {
            (Op::Decapsulate, KeyRequest::Decapsulate(c)) => (
                Op::Decapsulate,
                self.client.decapsulate(&self.key_id, c).await?,
            ),
            (Op::DeriveSharedSecret, KeyRequest::Agree(p)) => (
                Op::DeriveSharedSecret,
                self.client.derive_shared_secret(&self.key_id, p).await?,
            ),
            _ => {
                return Err(Error::Request(format!(
                    "a {} key cannot perform this request",
                    self.spec
                )));
            }
        };
        let fixed: [u8; 32] = secret.as_slice().try_into().map_err(|_| Error::Protocol {
            op,
            detail: format!("the shared secret is {} bytes, not 32", secret.len()),
        })?;
        let fixed = Zeroizing::new(fixed);
        if let (Some(cache), Some(digest)) = (&self.cache, digest)
            && let Ok(mut c) = cache.lock()
        {
            if c.map.len() >= CACHE_CAPACITY
                && let Some(old) = c.order.pop_front()
            {
                c.map.remove(&old);
            }
            if c.map.insert(digest, fixed.clone()).is_none() {
                c.order.push_back(digest);
            }
        }
        Ok(Recovered {
            secret: Zeroizing::new(fixed.to_vec()),
            remote: true,
        })
    }
}
