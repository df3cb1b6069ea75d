//! The commit protocol against two real S3 servers over HTTP: the embedded `s3s-fs` server
//! and Garage 2.5.0 as a separate process. Every test body runs on both (`server_tests!`).

#[path = "support/servers.rs"]
mod servers;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use envelope::{Backend, KeyType, Mode, PublicKey, Receiver, SealKey, SecretKey, Sender};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use s3::{Error, Event, S3Class, S3ClientKind, Store};
use servers::{BUCKET, Kind, TENANT, TestServer};
use tokio::io::{AsyncRead, ReadBuf};

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

fn run<F: Future<Output = ()>>(f: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f);
}

fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; len];
    ChaCha20Rng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

struct Keys {
    mode: Mode,
    sk: Option<SecretKey>,
    pk: Option<PublicKey>,
}

impl Keys {
    fn new(mode: Mode) -> Self {
        let kt = mode.key_type();
        let sk = (kt != KeyType::None)
            .then(|| SecretKey::generate(kt, &mut envelope::os_rng()).expect("keygen"));
        let pk = sk
            .as_ref()
            .and_then(|s| s.public_key().expect("public key"));
        Self { mode, sk, pk }
    }

    fn sender(&self, backend: Backend) -> Sender {
        let k = match (&self.pk, &self.sk) {
            (Some(pk), _) => SealKey::Public(pk),
            (None, Some(sk)) => SealKey::Psk(sk),
            (None, None) => SealKey::None,
        };
        Sender::new(self.mode, backend, k).expect("sender")
    }

    fn receiver(&self, backend: Backend) -> Receiver {
        Receiver::new(self.mode, backend, self.sk.as_ref()).expect("receiver")
    }
}

fn quiet() -> impl FnMut(Event) + Send {
    |_| {}
}

async fn put(store: &Store, keys: &Keys, key: &str, data: &[u8]) -> s3::PutOutcome {
    store
        .put(
            &keys.sender(Backend::AwsLc),
            key,
            data.len() as u64,
            data,
            &mut quiet(),
        )
        .await
        .unwrap_or_else(|e| panic!("put {key} ({} bytes): {e}", data.len()))
}

async fn get(store: &Store, keys: &Keys, key: &str, version: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    store
        .get(
            &keys.receiver(Backend::AwsLc),
            key,
            version,
            &mut out,
            &mut quiet(),
        )
        .await
        .map(|_| out)
}

/// Writes raw bytes to a bucket key, bypassing the protocol (to tamper or to plant), on the
/// store's own client.
async fn raw_put(store: &Store, key: &str, body: Vec<u8>) {
    store
        .objects()
        .put_object(BUCKET, key, body.into(), None, &[])
        .await
        .expect("raw put");
}

async fn raw_get(store: &Store, key: &str) -> Vec<u8> {
    store
        .objects()
        .get_object(BUCKET, key)
        .await
        .expect("raw get")
        .collect()
        .await
        .expect("body")
        .to_vec()
}

async fn raw_exists(store: &Store, key: &str) -> bool {
    store.objects().head_object(BUCKET, key).await.is_ok()
}

fn round_trips((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    assert_eq!(store.objects().kind(), client);
    run(async {
        // The bucket exists and is ours: creating it again succeeds.
        store
            .create_bucket()
            .await
            .expect("create_bucket of our own bucket");
        for mode in Mode::ALL {
            let keys = Keys::new(mode);
            for (i, size) in [0, KIB, 64 * KIB, 9 * MIB, 33 * MIB]
                .into_iter()
                .enumerate()
            {
                let key = format!("rt/{}/{size}", mode.name());
                let data = payload(size, i as u64);
                let out = put(&store, &keys, &key, &data).await;
                let st = out.stats;
                let expect_requests = if out.ciphertext_size <= s3::MULTIPART_THRESHOLD {
                    2
                } else {
                    // create + parts + complete, then the manifest
                    2 + u32::try_from(out.ciphertext_size.div_ceil(s3::PART_SIZE)).expect("parts")
                        + 1
                };
                assert_eq!(st.s3_requests, expect_requests, "{mode} {size}");
                assert_eq!(st.bytes_sent, out.ciphertext_size + st.manifest_bytes);
                assert!(st.accounted() <= st.total, "{mode} {size}: {st:?}");
                store
                    .verify(&key, &out.id.version, &out.manifest, out.ciphertext_size)
                    .await
                    .expect("verify");
                assert_eq!(
                    store.latest(&key).await.expect("latest").as_deref(),
                    Some(out.id.version.as_str())
                );

                let mut plain = Vec::new();
                let got = store
                    .get(
                        &keys.receiver(Backend::AwsLc),
                        &key,
                        &out.id.version,
                        &mut plain,
                        &mut quiet(),
                    )
                    .await
                    .unwrap_or_else(|e| panic!("get {mode} {size}: {e}"));
                assert!(plain == data, "{mode} {size}: plaintext differs");
                assert_eq!(got.plaintext_size, size as u64);
                assert_eq!(
                    got.stats.s3_requests, 2,
                    "a GET of a known version is two reads"
                );
                assert_eq!(
                    got.stats.bytes_received,
                    out.ciphertext_size + st.manifest_bytes
                );
                assert!(got.stats.accounted() <= got.stats.total);
                if mode.encrypts() {
                    assert!(got.stats.aead > Duration::ZERO);
                }
            }
        }
    });
}

fn cross_backend((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    run(async {
        for mode in [Mode::MlKem768, Mode::XWing, Mode::X25519] {
            let keys = Keys::new(mode);
            let data = payload(9 * MIB + 5, 7);
            let out = store
                .put(
                    &keys.sender(Backend::RustCrypto),
                    "xb",
                    data.len() as u64,
                    &data[..],
                    &mut quiet(),
                )
                .await
                .expect("put");
            let mut plain = Vec::new();
            store
                .get(
                    &keys.receiver(Backend::AwsLc),
                    "xb",
                    &out.id.version,
                    &mut plain,
                    &mut quiet(),
                )
                .await
                .expect("get");
            assert!(plain == data);
        }
    });
}

/// A source that yields `limit` bytes and then never again, signalling when it stalls.
struct Stalling {
    data: Vec<u8>,
    pos: usize,
    limit: usize,
    stalled: Arc<tokio::sync::Notify>,
}

impl AsyncRead for Stalling {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.pos >= self.limit {
            self.stalled.notify_one();
            return Poll::Pending;
        }
        let n = buf.remaining().min(self.limit - self.pos);
        let p = self.pos;
        buf.put_slice(&self.data[p..p + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

fn dropped_upload_is_invisible_and_collected((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    let keys = Keys::new(Mode::MlKem768);
    run(async {
        let stalled = Arc::new(tokio::sync::Notify::new());
        let src = Stalling {
            data: payload(33 * MIB, 1),
            pos: 0,
            limit: 20 * MIB,
            stalled: stalled.clone(),
        };
        let sender = keys.sender(Backend::AwsLc);
        let mut sent = 0u64;
        let mut on = |e: Event| {
            if let Event::Sent { done, .. } = e {
                sent = done;
            }
        };
        tokio::select! {
            r = store.put(&sender, "cut", 33 * MIB as u64, src, &mut on) => {
                panic!("the stalled put finished: {r:?}");
            }
            () = stalled.notified() => {}
        }
        // The put future is dropped here, two parts into a multipart upload.
        assert_eq!(sent, 2 * s3::PART_SIZE);
        assert!(store.versions("cut").await.expect("list").is_empty());
        assert_eq!(store.latest("cut").await.expect("latest"), None);

        // A young upload is kept by a real grace period, collected with none.
        let report = store
            .gc("", Duration::from_secs(3600), false)
            .await
            .expect("gc");
        assert!(report.aborted_uploads.is_empty());
        assert!(
            report.uploads_listed,
            "{kind:?} must list multipart uploads"
        );
        assert_eq!(report.kept_young, 1);
        let report = store.gc("", Duration::ZERO, false).await.expect("gc");
        assert_eq!(report.aborted_uploads.len(), 1, "{report:?}");
        assert!(report.aborted_uploads[0].0.starts_with("cut.pqcs/"));
        let again = store.gc("", Duration::ZERO, false).await.expect("gc");
        assert!(again.aborted_uploads.is_empty(), "{again:?}");
    });
}

/// Puts `size` bytes under `key` and stops the server at the first event for which `at`
/// holds; the put must fail with a connection error. Then restarts the server.
fn put_while_server_dies(
    server: &Arc<Mutex<TestServer>>,
    store: &Store,
    keys: &Keys,
    key: &str,
    size: usize,
    at: fn(Event) -> bool,
) {
    run(async {
        let data = payload(size, 2);
        let stopper = server.clone();
        let mut on = move |e: Event| {
            if at(e) {
                stopper.lock().expect("lock").stop();
            }
        };
        let err = store
            .put(
                &keys.sender(Backend::AwsLc),
                key,
                data.len() as u64,
                &data[..],
                &mut on,
            )
            .await
            .expect_err("the put must fail once the server is gone");
        assert!(
            matches!(err.s3_class(), Some(S3Class::Connect | S3Class::Io)),
            "{err}"
        );
    });
    server.lock().expect("lock").restart();
}

fn server_stopped_mid_upload((kind, client): (Kind, S3ClientKind)) {
    let server = Arc::new(Mutex::new(TestServer::start(kind)));
    let store = server.lock().expect("lock").store_on(client);
    let keys = Keys::new(Mode::MlKem768);

    // The server dies after the data is stored and before the manifest is written.
    put_while_server_dies(&server, &store, &keys, "died", 64 * KIB, |e| {
        e == Event::DataStored
    });
    run(async {
        assert!(store.versions("died").await.expect("list").is_empty());
        let report = store.gc("died", Duration::ZERO, false).await.expect("gc");
        assert_eq!(report.deleted_data.len(), 1, "{report:?}");
        assert!(report.deleted_data[0].ends_with("/data.enc"));
        assert!(!raw_exists(&store, &report.deleted_data[0]).await);
    });

    // The server dies in the middle of a multipart upload of data.enc.
    put_while_server_dies(
        &server,
        &store,
        &keys,
        "died-mid",
        20 * MIB,
        |e| matches!(e, Event::Sent { done, .. } if done == s3::PART_SIZE),
    );
    run(async {
        assert!(store.versions("died-mid").await.expect("list").is_empty());
        let report = store
            .gc("died-mid", Duration::ZERO, false)
            .await
            .expect("gc");
        assert_eq!(report.aborted_uploads.len(), 1, "{report:?}");
        assert!(report.deleted_data.is_empty(), "{report:?}");
        let again = store
            .gc("died-mid", Duration::ZERO, false)
            .await
            .expect("gc");
        assert!(again.aborted_uploads.is_empty(), "{again:?}");
    });
}

fn truncated_data_fails((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    let keys = Keys::new(Mode::MlKem768);
    run(async {
        let data = payload(9 * MIB, 3);
        let out = put(&store, &keys, "trunc", &data).await;
        let data_key = envelope::layout::data_key("trunc", &out.id.version);
        let full = raw_get(&store, &data_key).await;
        let chunk = usize::try_from(envelope::CHUNK_SIZE).expect("size") + envelope::TAG_LEN;
        for cut in [chunk, chunk + 1000, full.len() - 1, 10] {
            raw_put(&store, &data_key, full[..cut].to_vec()).await;
            let mut sink = Vec::new();
            let err = store
                .get(
                    &keys.receiver(Backend::AwsLc),
                    "trunc",
                    &out.id.version,
                    &mut sink,
                    &mut quiet(),
                )
                .await
                .expect_err("truncated data must fail");
            assert!(
                matches!(err, Error::Envelope(envelope::Error::Decrypt)),
                "{err}"
            );
            assert!(sink.len() < data.len(), "no complete plaintext");
        }
        // Extension fails too.
        let mut longer = full.clone();
        longer.extend_from_slice(&[0u8; 17]);
        raw_put(&store, &data_key, longer).await;
        let err = get(&store, &keys, "trunc", &out.id.version)
            .await
            .expect_err("extended");
        assert!(
            matches!(err, Error::Envelope(envelope::Error::Decrypt)),
            "{err}"
        );
    });
}

fn concurrent_writers((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    let keys = Keys::new(Mode::X25519);
    run(async {
        let a = payload(9 * MIB, 4);
        let b = payload(64 * KIB, 5);
        let sender = keys.sender(Backend::AwsLc);
        let (mut qa, mut qb) = (quiet(), quiet());
        let first = store.put(&sender, "shared", a.len() as u64, &a[..], &mut qa);
        let second = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            store
                .put(&sender, "shared", b.len() as u64, &b[..], &mut qb)
                .await
        };
        let (ra, rb) = tokio::join!(first, second);
        let (ra, rb) = (ra.expect("first"), rb.expect("second"));
        assert!(rb.id.version > ra.id.version);
        let versions = store.versions("shared").await.expect("versions");
        assert_eq!(versions.len(), 2);
        let latest = store.latest("shared").await.expect("latest").expect("some");
        assert_eq!(latest, rb.id.version);
        assert_eq!(get(&store, &keys, "shared", &latest).await.expect("get"), b);
        assert_eq!(
            get(&store, &keys, "shared", &ra.id.version)
                .await
                .expect("get"),
            a
        );
    });
}

fn short_source_refused((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    let keys = Keys::new(Mode::MlKem768);
    run(async {
        let sender = keys.sender(Backend::AwsLc);
        // One chunk and several chunks, both in one PutObject: the source ends early.
        for (announced, given) in [(64 * KIB, 1000), (3 * MIB, 2 * MIB + 7)] {
            let data = payload(given, 6);
            let err = store
                .put(&sender, "short", announced as u64, &data[..], &mut quiet())
                .await
                .expect_err("a short source must fail");
            assert!(
                matches!(&err, Error::Source(e) if e.kind() == std::io::ErrorKind::UnexpectedEof),
                "{err}"
            );
            assert!(
                err.to_string().contains("announced plaintext size"),
                "{err}"
            );
        }
        assert!(store.versions("short").await.expect("versions").is_empty());
    });
}

fn tampered_objects_refused((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    let keys = Keys::new(Mode::MlKem768);
    run(async {
        let data = payload(64 * KIB, 6);
        let out = put(&store, &keys, "t", &data).await;
        let v = out.id.version.clone();
        let data_key = envelope::layout::data_key("t", &v);
        let manifest_key = envelope::layout::manifest_key("t", &v);
        let orig_data = raw_get(&store, &data_key).await;
        let orig_manifest = raw_get(&store, &manifest_key).await;

        // One flipped bit in data.enc.
        let mut d = orig_data.clone();
        d[100] ^= 1;
        raw_put(&store, &data_key, d).await;
        let err = get(&store, &keys, "t", &v).await.expect_err("flipped data");
        assert!(
            matches!(err, Error::Envelope(envelope::Error::Decrypt)),
            "{err}"
        );
        raw_put(&store, &data_key, orig_data.clone()).await;
        assert_eq!(get(&store, &keys, "t", &v).await.expect("restored"), data);

        // A changed manifest: one character of C's hash, then the plaintext size.
        let text = String::from_utf8(orig_manifest.clone()).expect("utf8");
        let pos = text.find("\"c_sha256\":\"").expect("c_sha256") + 12;
        let mut m = orig_manifest.clone();
        m[pos] = if m[pos] == b'0' { b'1' } else { b'0' };
        raw_put(&store, &manifest_key, m).await;
        assert!(
            get(&store, &keys, "t", &v).await.is_err(),
            "edited manifest accepted"
        );
        let size = format!("\"plaintext_size\":{}", data.len());
        let edited = text.replace(&size, &format!("\"plaintext_size\":{}", data.len() - 1));
        assert_ne!(edited, text);
        raw_put(&store, &manifest_key, edited.into_bytes()).await;
        assert!(
            get(&store, &keys, "t", &v).await.is_err(),
            "edited size accepted"
        );

        // A manifest of another version (replay) is refused.
        let other = put(&store, &keys, "t", &data).await;
        raw_put(&store, &manifest_key, other.manifest.to_vec()).await;
        assert!(
            get(&store, &keys, "t", &v).await.is_err(),
            "replayed manifest accepted"
        );

        // Downgrade: a plaintext object planted under the key is refused by an ML-KEM reader.
        let plain = Keys::new(Mode::Plaintext);
        let planted = put(&store, &plain, "t", b"attacker's text").await;
        let err = get(&store, &keys, "t", &planted.id.version)
            .await
            .expect_err("downgrade");
        assert!(matches!(err, Error::Envelope(_)), "{err}");
        // ... although it is the latest version: latest is a listing, not a trust decision.
        assert_eq!(
            store.latest("t").await.expect("latest"),
            Some(planted.id.version.clone())
        );
    });
}

/// A listing longer than one page (S3 returns at most 1,000 keys) is followed through its
/// continuation tokens, which servers make opaque (base64 with `+`, `/`, `=` on some),
/// and a batched delete removes more than one page of keys.
fn listing_follows_continuation_pages((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    run(async {
        let version = envelope::new_version();
        let mut planted = Vec::new();
        for i in 0..1003 {
            let key = format!("page/k{i:04}");
            let manifest = envelope::layout::manifest_key(&key, &version);
            raw_put(&store, &manifest, b"{}".to_vec()).await;
            planted.push((key, version.clone()));
        }
        let listed = store.keys("page/").await.expect("keys");
        assert_eq!(listed.len(), 1003, "every page followed");
        assert_eq!(listed[1002].key, "page/k1002");
        let (deleted, failed) = store
            .delete_many(&planted, envelope::Format::V1)
            .await
            .expect("delete_many");
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(deleted, 1003);
        assert!(store.keys("page/").await.expect("keys").is_empty());
    });
}

fn listing_deletion_and_gc_scope((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    let keys = Keys::new(Mode::X25519);
    run(async {
        let a = put(&store, &keys, "dir/a", b"one").await;
        let b = put(&store, &keys, "dir/a", b"two").await;
        put(&store, &keys, "dir/b", b"three").await;
        // Foreign objects and uncommitted data.
        raw_put(&store, "dir/a", b"not ours".to_vec()).await;
        raw_put(&store, "notes.txt", b"not ours".to_vec()).await;
        let orphan = envelope::layout::data_key("dir/c", &envelope::new_version());
        raw_put(&store, &orphan, b"half".to_vec()).await;

        let keys_listed = store.keys("dir/").await.expect("keys");
        let names: Vec<_> = keys_listed.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(names, ["dir/a", "dir/b", "dir/c"]);
        let listed: Vec<_> = keys_listed[0]
            .versions
            .iter()
            .map(|v| (v.version.clone(), v.future_dated))
            .collect();
        assert_eq!(
            listed,
            [(a.id.version.clone(), false), (b.id.version.clone(), false)]
        );
        assert_eq!(
            (keys_listed[2].versions.len(), keys_listed[2].uncommitted),
            (0, 1)
        );

        // A version planted with a far-future UUIDv7 (a valid object, sealed to the key) is
        // listed and readable by name but never the latest, and gc reports it.
        let pinned = "ffffffff-ffff-7fff-bfff-ffffffffffff";
        let id = envelope::ObjectId::new(TENANT, BUCKET, "dir/a", pinned).expect("id");
        let mut data = Vec::new();
        let sealed = envelope::seal_stream(
            &keys.sender(Backend::AwsLc),
            &id,
            7,
            &b"planted"[..],
            &mut data,
            &mut envelope::os_rng(),
        )
        .expect("seal");
        raw_put(&store, &envelope::layout::data_key("dir/a", pinned), data).await;
        raw_put(
            &store,
            &envelope::layout::manifest_key("dir/a", pinned),
            sealed.manifest,
        )
        .await;
        let versions = store.versions("dir/a").await.expect("versions");
        assert_eq!(versions.len(), 3);
        assert!(versions[2].future_dated && versions[2].version == pinned);
        assert_eq!(
            store.latest("dir/a").await.expect("latest"),
            Some(b.id.version.clone())
        );
        assert_eq!(
            get(&store, &keys, "dir/a", pinned).await.expect("get"),
            b"planted"
        );
        let report = store
            .gc("dir/", Duration::from_secs(3600), true)
            .await
            .expect("gc");
        assert_eq!(
            report.future_dated,
            [envelope::layout::manifest_key("dir/a", pinned)]
        );
        store.delete_version("dir/a", pinned).await.expect("rm");

        // A manifest above the 64 KiB limit is refused from its length, before it is read.
        let big = envelope::new_version();
        let huge = vec![b' '; 4 << 20];
        raw_put(
            &store,
            &envelope::layout::manifest_key("dir/big", &big),
            huge,
        )
        .await;
        let err = get(&store, &keys, "dir/big", &big)
            .await
            .expect_err("oversized manifest");
        assert!(
            err.to_string()
                .contains("4194304 bytes or more, above the 65536-byte limit"),
            "{err}"
        );
        store.delete_version("dir/big", &big).await.expect("rm");

        let versions = store.versions("dir/a").await.expect("versions");
        assert_eq!(versions.len(), 2);
        assert_eq!(versions[1].data_size, Some(b.ciphertext_size));

        store
            .delete_version("dir/a", &b.id.version)
            .await
            .expect("rm");
        assert_eq!(
            store.latest("dir/a").await.expect("latest"),
            Some(a.id.version.clone())
        );
        let err = store
            .delete_version("dir/a", &b.id.version)
            .await
            .expect_err("gone");
        assert!(matches!(err, Error::NotCommitted { .. }), "{err}");
        let err = get(&store, &keys, "dir/a", &b.id.version)
            .await
            .expect_err("deleted version");
        assert!(matches!(err, Error::NotCommitted { .. }), "{err}");

        // gc: a dry run changes nothing; a real one removes only the orphan.
        let dry = store.gc("", Duration::ZERO, true).await.expect("dry");
        assert_eq!(dry.deleted_data, std::slice::from_ref(&orphan));
        assert!(raw_exists(&store, &orphan).await);
        let young = store
            .gc("", Duration::from_secs(3600), false)
            .await
            .expect("gc");
        assert!(young.deleted_data.is_empty());
        assert_eq!(young.kept_young, 1);
        let done = store.gc("", Duration::ZERO, false).await.expect("gc");
        assert_eq!(done.deleted_data, std::slice::from_ref(&orphan));
        assert!(!raw_exists(&store, &orphan).await);
        assert!(raw_exists(&store, "notes.txt").await);
        assert!(raw_exists(&store, "dir/a").await);
        assert_eq!(
            get(&store, &keys, "dir/a", &a.id.version).await.expect("a"),
            b"one"
        );
    });
}

/// A bucket nobody created: a put and a get fail with NoSuchBucket, and nothing appears
/// (the embedded server made a missing bucket's directory on a write, where S3 refuses).
fn missing_bucket((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let mut settings = server.settings();
    settings.s3_client = client;
    let store = Store::new(&settings, "no-such-bucket", TENANT).expect("store");
    let keys = Keys::new(Mode::X25519);
    let no_such_bucket = |what: &str, e: Error| match e {
        Error::S3 {
            class: S3Class::NoSuchBucket,
            ..
        } => {}
        other => panic!("{what}: {other}"),
    };
    run(async {
        let data = payload(KIB, 7);
        let e = store
            .put(
                &keys.sender(Backend::AwsLc),
                "k",
                data.len() as u64,
                &data[..],
                &mut quiet(),
            )
            .await
            .expect_err("a put into a missing bucket");
        no_such_bucket("put", e);
        let e = store
            .objects()
            .get_object("no-such-bucket", "k")
            .await
            .expect_err("a get from a missing bucket");
        no_such_bucket("get", e);
        let buckets = server
            .sdk()
            .list_buckets()
            .send()
            .await
            .expect("list buckets");
        let names: Vec<_> = buckets.buckets().iter().filter_map(|b| b.name()).collect();
        assert!(!names.contains(&"no-such-bucket"), "{names:?}");
    });
}

macro_rules! server_tests {
    ($name:ident, $kind:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn round_trips_every_mode_and_size() {
                round_trips($kind);
            }

            #[test]
            fn objects_cross_backends() {
                cross_backend($kind);
            }

            #[test]
            fn dropped_upload_is_invisible_and_gc_aborts_it() {
                dropped_upload_is_invisible_and_collected($kind);
            }

            #[test]
            fn server_stopped_mid_upload_leaves_no_version_and_gc_cleans_up() {
                server_stopped_mid_upload($kind);
            }

            #[test]
            fn truncated_or_extended_data_fails_authentication() {
                truncated_data_fails($kind);
            }

            #[test]
            fn concurrent_writers_make_two_versions() {
                concurrent_writers($kind);
            }

            #[test]
            fn a_source_shorter_than_announced_is_refused() {
                short_source_refused($kind);
            }

            #[test]
            fn tampered_objects_are_refused() {
                tampered_objects_refused($kind);
            }

            #[test]
            fn listings_follow_continuation_pages() {
                listing_follows_continuation_pages($kind);
            }

            #[test]
            fn listing_deletion_and_gc_touch_only_what_they_should() {
                listing_deletion_and_gc_scope($kind);
            }

            #[test]
            fn a_missing_bucket_is_no_such_bucket() {
                missing_bucket($kind);
            }
        }
    };
}

// Every protocol test on both clients, against both servers.
server_tests!(embedded, (Kind::Embedded, S3ClientKind::AwsSdk));
server_tests!(garage, (Kind::Garage, S3ClientKind::AwsSdk));
server_tests!(embedded_lean, (Kind::Embedded, S3ClientKind::Lean));
server_tests!(garage_lean, (Kind::Garage, S3ClientKind::Lean));

#[test]
fn unreachable_server_is_a_clear_error_within_the_timeout() {
    unreachable_server(S3ClientKind::AwsSdk);
}

#[test]
fn unreachable_server_is_a_clear_error_within_the_timeout_lean() {
    unreachable_server(S3ClientKind::Lean);
}

fn unreachable_server(client: S3ClientKind) {
    // A port that was free a moment ago: connection refused.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port");
    let mut settings = s3::S3Settings::new(&format!("http://{addr}"), "AKEXAMPLE", "secretexample");
    settings.connect_timeout = Duration::from_secs(1);
    settings.s3_client = client;
    settings.operation_timeout = Duration::from_secs(3);
    let store = Store::new(&settings, BUCKET, "t").expect("store");
    let keys = Keys::new(Mode::X25519);
    run(async {
        let t = Instant::now();
        let err = get(&store, &keys, "k", &envelope::new_version())
            .await
            .expect_err("no server");
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert_eq!(err.s3_class(), Some(S3Class::Connect), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("cannot connect to the S3 endpoint"), "{msg}");
        assert!(msg.contains("GetObject"), "{msg}");

        // A listener that accepts and never answers: the read timeout fires.
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let silent_addr = silent.local_addr().expect("addr");
        let hold = tokio::spawn(async move {
            let mut conns = Vec::new();
            while let Ok((s, _)) = silent.accept().await {
                conns.push(s);
            }
        });
        let mut settings = s3::S3Settings::new(
            &format!("http://{silent_addr}"),
            "AKEXAMPLE",
            "secretexample",
        );
        settings.read_timeout = Duration::from_millis(500);
        settings.s3_client = client;
        settings.operation_timeout = Duration::from_secs(2);
        let store = Store::new(&settings, BUCKET, "t").expect("store");
        let t = Instant::now();
        let err = get(&store, &keys, "k", &envelope::new_version())
            .await
            .expect_err("silent server");
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert_eq!(err.s3_class(), Some(S3Class::Timeout), "{err}");
        hold.abort();
    });
}

#[test]
fn no_retries_and_settings_are_recorded() {
    let settings = s3::S3Settings::new("http://127.0.0.1:9000", "ak", "sk");
    let rec = settings.record();
    assert_eq!(rec.max_attempts, 1);
    assert!(rec.tcp_nodelay);
    assert!(
        rec.payload_signed,
        "MinIO SDKs sign the payload over plain HTTP"
    );
    assert_eq!(rec.checksums, s3::ChecksumPolicy::WhenRequired);
    let https = s3::S3Settings::new("https://s3.example.com", "ak", "sk").record();
    assert!(
        !https.payload_signed,
        "and send UNSIGNED-PAYLOAD over HTTPS"
    );
    let json = serde_json::to_string(&rec).expect("json");
    assert!(!json.contains("\"sk\""), "no secret in the record: {json}");
    assert!(format!("{settings:?}").contains("<redacted>"));
    for bad in ["127.0.0.1:9000", "http://h/path", "ftp://h"] {
        let s = s3::S3Settings::new(bad, "ak", "sk");
        assert!(matches!(s.client(), Err(Error::Settings(_))), "{bad}");
    }
}
