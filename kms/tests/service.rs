//! The embedded key service over its socket, called by the crate's client: objects sealed
//! for a key the service holds open through the service and with the local key file alike;
//! a wrong ciphertext gets implicit rejection (a secret, then the opaque decryption error);
//! a throttled, unauthenticated or stopped service gives its named class, never a plaintext.

use std::sync::Arc;
use std::time::{Duration, Instant};

use envelope::{Backend, Mode, ObjectId, Receiver, SealKey, SecretKey, Sender};
use kms::{
    Client, EmbeddedKms, KeySpec, KeyStore, KmsClass, KmsSettings, RemoteKey, ServiceOptions,
};

fn keys_dir() -> tempfile::TempDir {
    // Outside the working tree: the system's temporary directory.
    tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn start(dir: &std::path::Path, options: &ServiceOptions) -> (EmbeddedKms, Arc<Client>) {
    let store = Arc::new(KeyStore::open(dir).unwrap_or_else(|e| panic!("{e}")));
    let service = EmbeddedKms::start(store, options).unwrap_or_else(|e| panic!("{e}"));
    let client = Arc::new(Client::new(&service.settings()).unwrap_or_else(|e| panic!("{e}")));
    (service, client)
}

/// Seals `plaintext` for `pk` in `mode` (v1, in memory): (id, manifest, data.enc).
fn seal(mode: Mode, pk: &envelope::PublicKey, plaintext: &[u8]) -> (ObjectId, Vec<u8>, Vec<u8>) {
    let id = ObjectId::new_version("t", "b", "k").unwrap_or_else(|e| panic!("{e}"));
    let sender =
        Sender::new(mode, Backend::AwsLc, SealKey::Public(pk)).unwrap_or_else(|e| panic!("{e}"));
    let mut data = Vec::new();
    let sealed = envelope::seal_stream(
        &sender,
        &id,
        plaintext.len() as u64,
        plaintext,
        &mut data,
        &mut envelope::os_rng(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (id, sealed.manifest, data)
}

/// Opens through the service: begin, the key request to the service, complete, chunks.
async fn open_remote(
    receiver: &Receiver,
    key: &RemoteKey,
    id: &ObjectId,
    manifest: &[u8],
    data: &[u8],
) -> Result<Vec<u8>, String> {
    let pending = receiver.begin(id, manifest).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let request = pending.key_request().map_err(|e| e.to_string())?;
    let got = key
        .recover(request)
        .await
        .map_err(|e| format!("kms: {e}"))?;
    let mut opener = pending
        .complete(&got.secret, t.elapsed())
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(n) = opener.next_chunk_len() {
        let (chunk, tail) = rest.split_at_checked(n).ok_or("short data")?;
        let mut buf = chunk.to_vec();
        opener.open_chunk(&mut buf).map_err(|e| e.to_string())?;
        out.extend_from_slice(&buf);
        rest = tail;
    }
    opener.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

#[test]
fn remote_and_local_readers_recover_the_same_secret_for_every_remote_mode() {
    let rt = runtime();
    let dir = keys_dir();
    let (service, client) = start(dir.path(), &ServiceOptions::default());
    for mode in envelope::REMOTE_MODES {
        let spec = KeySpec::of(mode.key_type()).unwrap_or_else(|| panic!("{mode}"));
        // The key is made in the service (CreateKey) and its public key fetched
        // (GetPublicKey), as a team using a KMS key would.
        let meta = rt
            .block_on(client.create_key(spec))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(meta.key_spec, spec.name());
        let pk = rt
            .block_on(client.get_public_key(&meta.arn))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pk.key_id_hex(), meta.key_id);
        let plaintext = vec![0x5a; 100_000];
        let (id, manifest, data) = seal(mode, &pk, &plaintext);

        // Through the service (the cache off and on).
        for cache in [false, true] {
            let key = RemoteKey::new(client.clone(), &pk, cache).unwrap_or_else(|e| panic!("{e}"));
            let receiver =
                Receiver::remote(mode, Backend::AwsLc, &pk).unwrap_or_else(|e| panic!("{e}"));
            for _ in 0..2 {
                let out = rt.block_on(open_remote(&receiver, &key, &id, &manifest, &data));
                assert_eq!(
                    out.as_deref().ok(),
                    Some(&plaintext[..]),
                    "{mode}, cache {cache}"
                );
            }
            let expect = cache.then_some(kms::CacheCounts { hits: 1, misses: 1 });
            assert_eq!(key.cache_counts(), expect, "{mode}");
        }

        // With the key file the service wrote (0600, in its directory): the same object
        // opens locally, on another backend, so the service's secret is the local one.
        let sk = SecretKey::read_file(&dir.path().join(format!("{}.key", meta.key_id)))
            .unwrap_or_else(|e| panic!("{e}"));
        let local =
            Receiver::new(mode, Backend::RustCrypto, Some(&sk)).unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        envelope::open_stream(&local, &id, &manifest, &data[..], &mut out)
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(out, plaintext);
    }
    service.stop();
}

/// A ciphertext changed in place (same length) is decapsulated all the same (implicit
/// rejection): the reader gets the opaque decryption error from the first chunk. One of
/// the wrong length is refused by the service as InvalidCiphertextException.
#[test]
fn a_wrong_ciphertext_gets_implicit_rejection_and_the_opaque_error() {
    let rt = runtime();
    let dir = keys_dir();
    let (service, client) = start(dir.path(), &ServiceOptions::default());
    let meta = rt
        .block_on(client.create_key(KeySpec::MlKem768))
        .unwrap_or_else(|e| panic!("{e}"));
    let pk = rt
        .block_on(client.get_public_key(&meta.key_id))
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, manifest, _) = seal(Mode::MlKem768, &pk, b"secret");
    let m: serde_json::Value = serde_json::from_slice(&manifest).unwrap_or_else(|e| panic!("{e}"));
    let c = m["c"].as_str().map(|s| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.decode(s)
    });
    let mut c = match c {
        Some(Ok(c)) => c,
        other => panic!("manifest c: {other:?}"),
    };
    let right = rt
        .block_on(client.decapsulate(&meta.key_id, &c))
        .unwrap_or_else(|e| panic!("{e}"));
    c[10] ^= 1;
    let wrong = rt
        .block_on(client.decapsulate(&meta.key_id, &c))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(wrong.len(), 32);
    assert_ne!(&wrong[..], &right[..]);
    // Deterministic: the same wrong ciphertext yields the same pseudo-random secret.
    let again = rt
        .block_on(client.decapsulate(&meta.key_id, &c))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(&again[..], &wrong[..]);

    let short = rt.block_on(client.decapsulate(&meta.key_id, &c[..1000]));
    let e = short
        .err()
        .unwrap_or_else(|| panic!("a short ciphertext was decapsulated"));
    assert_eq!(e.class(), KmsClass::InvalidCiphertext, "{e}");
    assert!(e.to_string().contains("InvalidCiphertextException"), "{e}");
    service.stop();
}

#[test]
fn failures_have_their_class() {
    let rt = runtime();
    let dir = keys_dir();
    let options = ServiceOptions {
        rate: Some(2),
        ..ServiceOptions::default()
    };
    let (service, client) = start(dir.path(), &options);
    let sk = SecretKey::generate(envelope::KeyType::MlKem768, &mut envelope::os_rng())
        .unwrap_or_else(|e| panic!("{e}"));
    let unknown = sk.key_id_hex().unwrap_or_else(|e| panic!("{e}"));

    // Not found: a key the service does not hold.
    let e = rt.block_on(client.get_public_key(&unknown)).err();
    assert_eq!(e.map(|e| e.class()), Some(KmsClass::NotFound));
    // Throttled: the bucket holds 2 tokens; the third request within the second is refused.
    let e = rt.block_on(client.get_public_key(&unknown)).err();
    assert_eq!(e.map(|e| e.class()), Some(KmsClass::NotFound));
    let e = rt.block_on(client.get_public_key(&unknown)).err();
    assert_eq!(
        e.as_ref().map(|e| e.class()),
        Some(KmsClass::Throttled),
        "{e:?}"
    );
    assert_eq!(service.counts().1, 1);

    // Access denied: wrong secret key.
    let mut bad = service.settings();
    bad.secret_key = zeroize::Zeroizing::new("not-the-secret".into());
    let bad = Client::new(&bad).unwrap_or_else(|e| panic!("{e}"));
    std::thread::sleep(Duration::from_millis(600));
    let e = rt.block_on(bad.get_public_key(&unknown)).err();
    assert_eq!(
        e.as_ref().map(|e| e.class()),
        Some(KmsClass::AccessDenied),
        "{e:?}"
    );
    let shown = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        !shown.contains(service.secret_key()),
        "the secret leaked: {shown}"
    );

    // Unavailable: the service is stopped.
    let endpoint = service.endpoint().to_owned();
    service.stop();
    let e = rt.block_on(client.get_public_key(&unknown)).err();
    assert_eq!(
        e.as_ref().map(|e| e.class()),
        Some(KmsClass::Unavailable),
        "{e:?}"
    );
    assert!(
        e.map(|e| e.to_string())
            .unwrap_or_default()
            .contains(&endpoint)
    );

    // Timeout: a service slower than the client's bound.
    let slow = ServiceOptions {
        rtt: Duration::from_millis(400),
        ..ServiceOptions::default()
    };
    let (service, _) = start(dir.path(), &slow);
    let mut hasty = service.settings();
    hasty.timeout = Duration::from_millis(100);
    let hasty = Client::new(&hasty).unwrap_or_else(|e| panic!("{e}"));
    let e = rt.block_on(hasty.get_public_key(&unknown)).err();
    assert_eq!(e.map(|e| e.class()), Some(KmsClass::Timeout));
    service.stop();
}

/// The added round trip is on every answer.
#[test]
fn the_added_round_trip_is_waited() {
    let rt = runtime();
    let dir = keys_dir();
    let options = ServiceOptions {
        rtt: Duration::from_millis(30),
        ..ServiceOptions::default()
    };
    let (service, client) = start(dir.path(), &options);
    let meta = rt
        .block_on(client.create_key(KeySpec::X25519))
        .unwrap_or_else(|e| panic!("{e}"));
    let t = Instant::now();
    for _ in 0..3 {
        rt.block_on(client.get_public_key(&meta.key_id))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(
        t.elapsed() >= Duration::from_millis(90),
        "{:?}",
        t.elapsed()
    );
    service.stop();
}

#[test]
fn a_key_directory_inside_a_git_working_tree_is_refused() {
    let repo = keys_dir();
    std::fs::create_dir(repo.path().join(".git")).unwrap_or_else(|e| panic!("{e}"));
    let e = KeyStore::open(&repo.path().join("keys"))
        .err()
        .map(|e| e.to_string());
    assert!(e.is_some_and(|e| e.contains("git working tree")));
}

/// The operator's key service reads its keys from a Secret volume: files 0440 in a
/// read-only directory. Such a file is accepted there (and refused by `open`, whose files
/// are 0600); a file others can read is refused by name; CreateKey is refused.
#[test]
fn a_mounted_secret_s_group_readable_keys_are_served_and_none_is_created() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = keys_dir();
    let path = dir.path().join("ml-kem-768.key");
    let sk = SecretKey::generate(envelope::KeyType::MlKem768, &mut envelope::os_rng())
        .unwrap_or_else(|e| panic!("{e}"));
    sk.write_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let id = sk
        .public_key()
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|p| p.key_id_hex());
    let chmod = |mode: u32| {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("{e}"));
    };
    chmod(0o440);
    let store = KeyStore::open_mounted(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(Some(store.key_ids()), id.map(|i| vec![i]));
    let e = store
        .create(KeySpec::MlKem768)
        .map(|_| ())
        .expect_err("refused");
    assert!(e.to_string().contains("read-only Secret volume"), "{e}");
    let e = KeyStore::open(dir.path()).map(|_| ()).expect_err("refused");
    assert!(e.to_string().contains("chmod 600"), "{e}");
    chmod(0o444);
    let e = KeyStore::open_mounted(dir.path())
        .map(|_| ())
        .expect_err("refused");
    assert!(
        e.to_string().contains("ml-kem-768.key") && e.to_string().contains("0444"),
        "{e}"
    );
    let e = KeyStore::open_mounted(&dir.path().join("absent"))
        .map(|_| ())
        .expect_err("refused");
    assert!(e.to_string().contains("not mounted"), "{e}");
}

/// `GET /metrics` answers what the service's caller makes of it, unsigned and at once
/// (no added round trip); a service given none answers 404. The key operations still need
/// a signature.
#[test]
fn metrics_are_served_unsigned_without_the_added_round_trip() {
    use std::io::{Read as _, Write as _};
    let get = |endpoint: &str, path: &str| {
        let addr = endpoint.trim_start_matches("http://");
        let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap_or_else(|e| panic!("{e}"));
        out
    };
    let dir = keys_dir();
    let store = Arc::new(KeyStore::open(dir.path()).unwrap_or_else(|e| panic!("{e}")));
    let options = ServiceOptions {
        rtt: Duration::from_millis(300),
        metrics: Some(kms::MetricsSource(Arc::new(|| {
            "process_cpu_seconds_total 1.5\n".to_owned()
        }))),
        ..ServiceOptions::default()
    };
    let service = EmbeddedKms::start(store.clone(), &options).unwrap_or_else(|e| panic!("{e}"));
    let t = Instant::now();
    let answer = get(service.endpoint(), "/metrics");
    assert!(
        t.elapsed() < Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.ends_with("\r\n\r\nprocess_cpu_seconds_total 1.5\n"),
        "{answer}"
    );
    let other = get(service.endpoint(), "/");
    assert!(other.starts_with("HTTP/1.1 400"), "{other}");
    assert_eq!(service.counts(), (0, 0, 1), "a scrape is not a request");
    service.stop();
    let bare =
        EmbeddedKms::start(store, &ServiceOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(get(bare.endpoint(), "/metrics").starts_with("HTTP/1.1 404"));
}

#[test]
fn an_endpoint_with_a_path_or_another_scheme_and_empty_credentials_are_refused_by_name() {
    for ep in [
        "ftp://kms.example",
        "http://127.0.0.1:1/kms",
        "kms.example:443",
    ] {
        let s = KmsSettings::new(ep, "eu-west-1", "a", "b");
        let e = Client::new(&s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("http(s)://host[:port]"), "{ep}: {e}");
    }
    // https is taken (AWS KMS), its certificate checked at the first call.
    let s = KmsSettings::new("https://kms.eu-west-1.amazonaws.com", "eu-west-1", "a", "b");
    assert!(Client::new(&s).is_ok());
    let s = KmsSettings::new("http://127.0.0.1:1", "eu-west-1", "", "b");
    assert!(Client::new(&s).is_err());
}
