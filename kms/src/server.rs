//! The embedded key service: the [`crate::wire`] subset of AWS KMS served by hyper, every
//! request's SigV4 signature verified ([`crate::sigv4`]), keys from a [`KeyStore`].
//!
//! Two knobs make it a stand-in for a service across a network: an added round-trip time
//! (every response, errors included, waits that long before it is sent, as if the request
//! and its answer had crossed a link of that RTT), and a rate limit (a token bucket of
//! `rate` requests per second, `rate` deep; a request over it is answered
//! `ThrottlingException`, as AWS KMS answers requests over its quota). `TCP_NODELAY` is set
//! on every accepted socket.
//!
//! It runs on its own thread with its own Tokio runtime (as the embedded S3 server does),
//! so [`EmbeddedKms::stop`] is synchronous and closes every connection at once: requests in
//! flight fail as they would if the process died.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use serde::Serialize;
use tokio::sync::oneshot;
use zeroize::Zeroizing;

use envelope::KeyRequest;

use crate::store::{Held, KeyStore};
use crate::wire::{self, KeySpec, Op};
use crate::{Error, Result, sigv4};

/// How the service runs.
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    /// Where it listens (default `127.0.0.1:0`: loopback, any free port).
    pub addr: SocketAddr,
    /// The region in its ARNs (signatures are accepted for any region in their scope).
    pub region: String,
    /// Added to every response (the round trip of a link to the service).
    pub rtt: Duration,
    /// Requests per second it answers; `None`: no limit.
    pub rate: Option<u32>,
    /// Worker threads of its runtime.
    pub threads: usize,
    /// What `GET /metrics` answers (Prometheus text: the serving process's CPU and
    /// memory, which the run's sampler reads as it reads the S3 server's); `None`: 404.
    pub metrics: Option<MetricsSource>,
}

/// The text of the service's `GET /metrics`, made by its caller at each scrape (the
/// process's own figures are the caller's to read: `worker::keyservice`).
#[derive(Clone)]
pub struct MetricsSource(pub Arc<dyn Fn() -> String + Send + Sync>);

impl std::fmt::Debug for MetricsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsSource")
    }
}

impl Default for ServiceOptions {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            region: "us-east-1".into(),
            rtt: Duration::ZERO,
            rate: None,
            threads: 2,
            metrics: None,
        }
    }
}

/// Requests the service answered, by outcome.
#[derive(Debug, Default)]
struct Counters {
    ok: AtomicU64,
    throttled: AtomicU64,
    refused: AtomicU64,
}

/// A token bucket: `rate` tokens per second, at most `rate` held.
struct Bucket {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

struct State {
    store: Arc<KeyStore>,
    region: String,
    rtt: Duration,
    bucket: Option<Mutex<Bucket>>,
    access_key: String,
    secret_key: Zeroizing<String>,
    counters: Counters,
    metrics: Option<MetricsSource>,
}

/// A running embedded key service. Stops when [`EmbeddedKms::stop`] is called or it is
/// dropped.
pub struct EmbeddedKms {
    endpoint: String,
    state: Arc<State>,
    stop_tx: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for EmbeddedKms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedKms")
            .field("endpoint", &self.endpoint)
            .field("access_key", &self.state.access_key)
            .finish_non_exhaustive()
    }
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).map_err(|e| Error::Settings(format!("no randomness: {e}")))?;
    Ok(hex::encode(b))
}

impl EmbeddedKms {
    /// Starts the service over `store` with freshly generated credentials.
    pub fn start(store: Arc<KeyStore>, options: &ServiceOptions) -> Result<Self> {
        let access_key = format!("PQKMS{}", random_hex(8)?.to_uppercase());
        let secret_key = Zeroizing::new(random_hex(20)?);
        Self::start_with(store, options, &access_key, &secret_key)
    }

    /// Starts the service over `store` with the given credentials.
    pub fn start_with(
        store: Arc<KeyStore>,
        options: &ServiceOptions,
        access_key: &str,
        secret_key: &str,
    ) -> Result<Self> {
        if access_key.is_empty() || secret_key.is_empty() {
            return Err(Error::Settings(
                "the access key and the secret key must not be empty".into(),
            ));
        }
        if options.rate == Some(0) {
            return Err(Error::Settings(
                "rate must be at least 1 request per second (leave it out for no limit)".into(),
            ));
        }
        let state = Arc::new(State {
            store,
            region: options.region.clone(),
            rtt: options.rtt,
            bucket: options.rate.map(|r| {
                Mutex::new(Bucket {
                    rate: f64::from(r),
                    tokens: f64::from(r),
                    last: Instant::now(),
                })
            }),
            access_key: access_key.into(),
            secret_key: Zeroizing::new(secret_key.into()),
            counters: Counters::default(),
            metrics: options.metrics.clone(),
        });
        let (ready_tx, ready_rx) = mpsc::channel::<Result<SocketAddr>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (addr, threads, shared) = (options.addr, options.threads.max(1), state.clone());
        let thread = std::thread::Builder::new()
            .name("pqbench-kms".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(threads)
                    .thread_name("pqbench-kms-rt")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(Error::Settings(format!("runtime: {e}"))));
                        return;
                    }
                };
                rt.block_on(serve(addr, shared, ready_tx, stop_rx));
                rt.shutdown_background();
            })
            .map_err(|e| Error::Settings(format!("cannot spawn the service thread: {e}")))?;
        let bound = ready_rx
            .recv()
            .map_err(|_| Error::Settings("the service thread ended before listening".into()))??;
        Ok(Self {
            endpoint: format!("http://{bound}"),
            state,
            stop_tx: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `http://ADDR:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The access key id.
    pub fn access_key(&self) -> &str {
        &self.state.access_key
    }

    /// The secret access key.
    pub fn secret_key(&self) -> &str {
        &self.state.secret_key
    }

    /// The region of its ARNs.
    pub fn region(&self) -> &str {
        &self.state.region
    }

    /// Client settings for this service.
    pub fn settings(&self) -> crate::KmsSettings {
        crate::KmsSettings::new(
            &self.endpoint,
            &self.state.region,
            &self.state.access_key,
            &self.state.secret_key,
        )
    }

    /// Requests answered so far: (succeeded, throttled, refused otherwise).
    pub fn counts(&self) -> (u64, u64, u64) {
        let c = &self.state.counters;
        (
            c.ok.load(Ordering::Relaxed),
            c.throttled.load(Ordering::Relaxed),
            c.refused.load(Ordering::Relaxed),
        )
    }

    /// Stops the service: stops accepting, closes every connection, joins the thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop_tx.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for EmbeddedKms {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn serve(
    addr: SocketAddr,
    state: Arc<State>,
    ready: mpsc::Sender<Result<SocketAddr>>,
    mut stop: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            let _ = ready.send(Err(Error::Settings(format!(
                "cannot listen on {addr}: {e}"
            ))));
            return;
        }
    };
    match listener.local_addr() {
        Ok(a) => {
            let _ = ready.send(Ok(a));
        }
        Err(e) => {
            let _ = ready.send(Err(Error::Settings(format!("local address: {e}"))));
            return;
        }
    }
    let http = ConnBuilder::new(TokioExecutor::new());
    loop {
        tokio::select! {
            _ = &mut stop => break,
            r = listener.accept() => {
                let Ok((socket, _)) = r else { continue };
                let _ = socket.set_nodelay(true);
                let st = state.clone();
                let svc = hyper::service::service_fn(move |req| {
                    let st = st.clone();
                    async move { Ok::<_, std::convert::Infallible>(handle(&st, req).await) }
                });
                let conn = http.serve_connection(TokioIo::new(socket), svc).into_owned();
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
        }
    }
}

/// An error answer: HTTP status, AWS's code, a public message.
struct Refused {
    status: StatusCode,
    code: &'static str,
    message: String,
}

fn refused(status: StatusCode, code: &'static str, message: impl Into<String>) -> Refused {
    Refused {
        status,
        code,
        message: message.into(),
    }
}

fn bad(code: &'static str, message: impl Into<String>) -> Refused {
    refused(StatusCode::BAD_REQUEST, code, message)
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(wire::CONTENT_TYPE),
    );
    r
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() == http::Method::GET && req.uri().path() == "/metrics" {
        // Not a key operation: unsigned, no added round trip, not counted.
        return metrics_response(state.metrics.as_ref());
    }
    let started = tokio::time::Instant::now();
    let answer = answer(state, req).await;
    let counter = match &answer {
        Ok(_) => &state.counters.ok,
        Err(r) if r.code == "ThrottlingException" => &state.counters.throttled,
        Err(_) => &state.counters.refused,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let response = match answer {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(r) => {
            let body = serde_json::to_vec(&wire::ErrorBody {
                kind: r.code.to_owned(),
                message: r.message,
            })
            .unwrap_or_default();
            json_response(r.status, body)
        }
    };
    tokio::time::sleep_until(started + state.rtt).await;
    response
}

fn metrics_response(m: Option<&MetricsSource>) -> Response<Full<Bytes>> {
    let (status, body) = match m {
        Some(m) => (StatusCode::OK, (m.0)()),
        None => (StatusCode::NOT_FOUND, "no metrics\n".to_owned()),
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    r
}

fn to_json<T: Serialize>(v: &T) -> Result<Vec<u8>, Refused> {
    serde_json::to_vec(v).map_err(|e| {
        refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "KMSInternalException",
            format!("encoding the response: {e}"),
        )
    })
}

fn parse<T: serde::de::DeserializeOwned>(op: Op, body: &[u8]) -> Result<T, Refused> {
    serde_json::from_slice(body).map_err(|e| {
        bad(
            "SerializationException",
            format!("{op}: the request body is not a valid {op} request: {e}"),
        )
    })
}

async fn answer(state: &State, req: Request<Incoming>) -> Result<Vec<u8>, Refused> {
    let (parts, body) = req.into_parts();
    if parts.method != http::Method::POST {
        return Err(bad(
            "UnknownOperationException",
            "the key service takes POST / with an X-Amz-Target",
        ));
    }
    let body = Limited::new(body, wire::MAX_REQUEST_BODY)
        .collect()
        .await
        .map_err(|e| {
            bad(
                "SerializationException",
                format!(
                    "the request body could not be read (at most {} bytes): {e}",
                    wire::MAX_REQUEST_BODY
                ),
            )
        })?
        .to_bytes();
    sigv4::verify(
        parts.method.as_str(),
        parts.uri.path(),
        parts.uri.query(),
        &parts.headers,
        &body,
        SystemTime::now(),
        |ak| (ak == state.access_key).then_some(state.secret_key.as_str()),
    )
    .map_err(|r| bad(r.code, r.message))?;
    if let Some(b) = &state.bucket {
        let ok = b
            .lock()
            .map(|mut b| b.take(Instant::now()))
            .unwrap_or(false);
        if !ok {
            return Err(bad("ThrottlingException", "Rate exceeded"));
        }
    }
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let op = Op::from_target(target).ok_or_else(|| {
        bad(
            "UnknownOperationException",
            format!(
                "X-Amz-Target {target:?}: the key service implements TrentService.CreateKey, \
                 GetPublicKey, Decapsulate and DeriveSharedSecret"
            ),
        )
    })?;
    match op {
        Op::CreateKey => create_key(state, parse(op, &body)?).await,
        Op::GetPublicKey => get_public_key(state, parse(op, &body)?),
        Op::Decapsulate => decapsulate(state, parse(op, &body)?),
        Op::DeriveSharedSecret => derive_shared_secret(state, parse(op, &body)?),
    }
}

/// The key a `KeyId` member names, and its ARN (for the response's `KeyId`).
fn key(state: &State, member: &str) -> Result<(String, Arc<Held>), Refused> {
    let id = wire::key_id_of(member).map_err(|e| bad("ValidationException", e.to_string()))?;
    let arn = wire::key_arn(&state.region, id);
    match state.store.get(id) {
        Some(held) => Ok((arn, held)),
        None => Err(bad(
            "NotFoundException",
            format!("Key '{arn}' does not exist"),
        )),
    }
}

fn algorithms(spec: KeySpec) -> (Option<Vec<String>>, Option<Vec<String>>) {
    match spec.recover_op() {
        Op::Decapsulate => (Some(vec![wire::ALG_ML_KEM.into()]), None),
        _ => (None, Some(vec![wire::ALG_ECDH.into()])),
    }
}

async fn create_key(state: &State, r: wire::CreateKeyRequest) -> Result<Vec<u8>, Refused> {
    let name = r.key_spec.as_deref().unwrap_or("SYMMETRIC_DEFAULT");
    let spec = KeySpec::from_name(name).ok_or_else(|| {
        bad(
            "ValidationException",
            format!(
                "KeySpec {name}: the key service creates ML_KEM_768, ML_KEM_1024 and X25519 keys"
            ),
        )
    })?;
    if let Some(u) = r.key_usage.as_deref().filter(|u| *u != spec.usage()) {
        return Err(bad(
            "ValidationException",
            format!(
                "KeyUsage {u} does not fit KeySpec {spec}: it must be {}",
                spec.usage()
            ),
        ));
    }
    let store = state.store.clone();
    let id = tokio::task::spawn_blocking(move || store.create(spec))
        .await
        .map_err(|e| {
            refused(
                StatusCode::INTERNAL_SERVER_ERROR,
                "KMSInternalException",
                e.to_string(),
            )
        })?
        .map_err(|e| {
            refused(
                StatusCode::INTERNAL_SERVER_ERROR,
                "KMSInternalException",
                e.to_string(),
            )
        })?;
    let (encapsulation_algorithms, key_agreement_algorithms) = algorithms(spec);
    let creation_date = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    to_json(&wire::CreateKeyResponse {
        key_metadata: wire::KeyMetadata {
            arn: wire::key_arn(&state.region, &id),
            key_id: id,
            aws_account_id: wire::ACCOUNT.into(),
            creation_date,
            enabled: true,
            key_state: "Enabled".into(),
            key_usage: spec.usage().into(),
            key_spec: spec.name().into(),
            origin: "AWS_KMS".into(),
            encapsulation_algorithms,
            key_agreement_algorithms,
        },
    })
}

fn get_public_key(state: &State, r: wire::GetPublicKeyRequest) -> Result<Vec<u8>, Refused> {
    let (arn, held) = key(state, &r.key_id)?;
    let (encapsulation_algorithms, key_agreement_algorithms) = algorithms(held.spec);
    to_json(&wire::GetPublicKeyResponse {
        key_id: arn,
        public_key: Zeroizing::new(wire::spki::encode(held.spec, held.public.as_bytes())),
        key_spec: held.spec.name().into(),
        key_usage: held.spec.usage().into(),
        encapsulation_algorithms,
        key_agreement_algorithms,
    })
}

/// Refuses a key of another operation than `op`.
fn usable_for(held: &Held, op: Op) -> Result<(), Refused> {
    if held.spec.recover_op() == op {
        Ok(())
    } else {
        Err(bad(
            "InvalidKeyUsageException",
            format!(
                "{op} cannot use a {} key (key usage {}); it takes {}",
                held.spec,
                held.spec.usage(),
                match op {
                    Op::Decapsulate => "ML-KEM keys",
                    _ => "key-agreement keys",
                }
            ),
        ))
    }
}

fn decapsulate(state: &State, r: wire::DecapsulateRequest) -> Result<Vec<u8>, Refused> {
    let (arn, held) = key(state, &r.key_id)?;
    usable_for(&held, Op::Decapsulate)?;
    if r.encapsulation_algorithm != wire::ALG_ML_KEM {
        return Err(bad(
            "ValidationException",
            format!(
                "EncapsulationAlgorithm {:?}: the only value is ML_KEM",
                r.encapsulation_algorithm
            ),
        ));
    }
    let want = held.spec.mode().ciphertext_len();
    if r.shared_secret_ciphertext_blob.len() != want {
        return Err(bad(
            "InvalidCiphertextException",
            format!(
                "the ciphertext is {} bytes; a {} ciphertext is {} bytes",
                r.shared_secret_ciphertext_blob.len(),
                held.spec,
                want
            ),
        ));
    }
    if r.dry_run == Some(true) {
        return Err(bad(
            "DryRunOperationException",
            "The request would have succeeded",
        ));
    }
    // Implicit rejection: a wrong ciphertext of the right length yields a pseudo-random
    // secret, never an error that would tell the caller so.
    let shared = held
        .reader
        .perform(KeyRequest::Decapsulate(&r.shared_secret_ciphertext_blob))
        .map_err(|_| {
            bad(
                "InvalidCiphertextException",
                "the ciphertext cannot be decapsulated",
            )
        })?;
    to_json(&wire::DecapsulateResponse {
        key_id: arn,
        shared_secret: shared,
        encapsulation_algorithm: wire::ALG_ML_KEM.into(),
    })
}

fn derive_shared_secret(
    state: &State,
    r: wire::DeriveSharedSecretRequest,
) -> Result<Vec<u8>, Refused> {
    let (arn, held) = key(state, &r.key_id)?;
    usable_for(&held, Op::DeriveSharedSecret)?;
    if r.key_agreement_algorithm != wire::ALG_ECDH {
        return Err(bad(
            "ValidationException",
            format!(
                "KeyAgreementAlgorithm {:?}: the only value is ECDH",
                r.key_agreement_algorithm
            ),
        ));
    }
    let peer = wire::spki::decode(held.spec, &r.public_key)
        .map_err(|e| bad("ValidationException", e.to_string()))?;
    let peer: [u8; 32] = peer
        .as_slice()
        .try_into()
        .map_err(|_| bad("ValidationException", "an X25519 public key is 32 bytes"))?;
    if r.dry_run == Some(true) {
        return Err(bad(
            "DryRunOperationException",
            "The request would have succeeded",
        ));
    }
    let shared = held.reader.perform(KeyRequest::Agree(&peer)).map_err(|_| {
        bad(
            "ValidationException",
            "the public key is a low-order X25519 point (the shared secret would be zero)",
        )
    })?;
    to_json(&wire::DeriveSharedSecretResponse {
        key_id: arn,
        shared_secret: shared,
        key_agreement_algorithm: wire::ALG_ECDH.into(),
        key_origin: "AWS_KMS".into(),
    })
}
