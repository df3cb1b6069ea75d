//! Format v2 in the object store (FORMAT-v2.md §2) against two real S3 servers over HTTP,
//! the embedded `s3s-fs` server and Garage, on both S3 clients: one `object.v2` per version
//! written with one PutObject (multipart above 8 MiB, the metadata entry given at
//! CreateMultipartUpload) and read with one GetObject, in both placements; several
//! recipients; latest, delete and gc across v1 and v2 versions of one key; and the tamper
//! cases that exist only in a bucket: the header edited in either placement, metadata and
//! body that disagree, the placement changed, a v1 manifest relabelled v2 and the reverse,
//! truncation and extension, an object moved to another version; and re-wrapping v2.1
//! objects (FORMAT-v2.md §10.1): one server-side CopyObject with the new header as replaced
//! metadata and the old ETag as its condition, or the body passed through unchanged.

#[path = "support/servers.rs"]
mod servers;

use std::future::Future;
use std::time::Duration;

use envelope::v2::{self, Placement};
use envelope::{Backend, Format, KeyType, Mode, PublicKey, SealKey, SecretKey, Sender, layout};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use s3::{Error, Event, S3ClientKind, Store};
use servers::{BUCKET, Kind, TestServer};

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;
const META: &str = "x-amz-meta-pqbench-v2";

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

fn keypair(kt: KeyType) -> (SecretKey, PublicKey) {
    let sk = SecretKey::generate(kt, &mut envelope::os_rng()).expect("keygen");
    let pk = sk.public_key().expect("public").expect("has a public key");
    (sk, pk)
}

fn quiet() -> impl FnMut(Event) + Send {
    |_| {}
}

async fn put(store: &Store, sender: &v2::Sender, key: &str, data: &[u8]) -> s3::PutOutcome {
    store
        .put_v2(sender, key, data.len() as u64, data, &mut quiet())
        .await
        .unwrap_or_else(|e| panic!("put_v2 {key} ({} bytes): {e}", data.len()))
}

async fn get(
    store: &Store,
    sk: &SecretKey,
    backend: Backend,
    key: &str,
    version: &str,
) -> Result<(Vec<u8>, s3::GetOutcome), Error> {
    let receiver = v2::Receiver::new(backend, sk).expect("receiver");
    let mut out = Vec::new();
    let got = store
        .get_v2(&receiver, key, version, &mut out, &mut quiet())
        .await?;
    Ok((out, got))
}

async fn raw_put(store: &Store, key: &str, body: Vec<u8>, meta: Option<String>) {
    let meta: Vec<(&'static str, String)> = meta.map(|m| (META, m)).into_iter().collect();
    store
        .objects()
        .put_object(BUCKET, key, body.into(), None, &meta)
        .await
        .expect("raw put");
}

/// The stored object: its body and its metadata entry, if any.
async fn raw_get(store: &Store, key: &str) -> (Vec<u8>, Option<String>) {
    let body = store
        .objects()
        .get_object(BUCKET, key)
        .await
        .expect("raw get");
    let meta = body.metadata.get(v2::METADATA_KEY).cloned();
    (body.collect().await.expect("body").to_vec(), meta)
}

fn is_decrypt(r: &Result<(Vec<u8>, s3::GetOutcome), Error>) -> bool {
    matches!(r, Err(Error::Envelope(envelope::Error::Decrypt)))
}

fn is_refused(r: &Result<(Vec<u8>, s3::GetOutcome), Error>) -> bool {
    matches!(
        r,
        Err(Error::Envelope(
            envelope::Error::Decrypt | envelope::Error::Header(_)
        ))
    )
}

fn round_trips((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    run(async {
        for kt in [
            KeyType::MlKem768,
            KeyType::MlKem1024,
            KeyType::XWing,
            KeyType::X25519,
        ] {
            let (sk, pk) = keypair(kt);
            for placement in [Placement::Metadata, Placement::Prefix] {
                let Ok(sender) = v2::Sender::new(Backend::AwsLc, &[&pk], false, placement) else {
                    assert!(
                        kt == KeyType::MlKem1024 && placement == Placement::Metadata,
                        "only ML-KEM-1024's header exceeds the metadata limit"
                    );
                    continue;
                };
                for (i, size) in [0, 64 * KIB, 9 * MIB].into_iter().enumerate() {
                    let key = format!("v2/{}/{placement:?}/{size}", kt.name());
                    let data = payload(size, i as u64);
                    let out = put(&store, &sender, &key, &data).await;
                    let st = &out.stats;
                    let header = out.manifest.len() as u64;
                    assert_eq!(header, sender.header_len() as u64);
                    let chunks = v2::chunks_len(size as u64);
                    let body = chunks
                        + if placement == Placement::Prefix {
                            header
                        } else {
                            0
                        };
                    assert_eq!(out.ciphertext_size, body);
                    let requests = if body <= s3::MULTIPART_THRESHOLD {
                        1
                    } else {
                        2 + u32::try_from(body.div_ceil(s3::PART_SIZE)).expect("parts")
                    };
                    assert_eq!(st.s3_requests, requests, "{kt:?} {placement:?} {size}");
                    let meta_bytes = if placement == Placement::Metadata {
                        v2::encode_metadata(&out.manifest).len() as u64
                    } else {
                        0
                    };
                    assert_eq!(st.bytes_sent, body + meta_bytes);

                    let (raw, meta) =
                        raw_get(&store, &layout::object_v2_key(&key, &out.id.version)).await;
                    assert_eq!(raw.len() as u64, body, "one object holds the version");
                    match placement {
                        Placement::Metadata => {
                            assert_eq!(meta, Some(v2::encode_metadata(&out.manifest)));
                        }
                        Placement::Prefix => {
                            assert_eq!(meta, None);
                            assert_eq!(&raw[..out.manifest.len()], &out.manifest[..]);
                        }
                    }
                    let versions = store.versions(&key).await.expect("versions");
                    assert_eq!(versions.len(), 1);
                    assert_eq!(versions[0].format, Format::V2);
                    assert_eq!(versions[0].data_size, Some(body));
                    assert_eq!(
                        store.latest(&key).await.expect("latest").as_deref(),
                        Some(out.id.version.as_str())
                    );
                    for backend in [Backend::AwsLc, Backend::RustCrypto] {
                        let (plain, got) = get(&store, &sk, backend, &key, &out.id.version)
                            .await
                            .unwrap_or_else(|e| panic!("get {kt:?} {placement:?} {size}: {e}"));
                        assert!(
                            plain == data,
                            "{kt:?} {placement:?} {size}: plaintext differs"
                        );
                        assert_eq!(got.stats.s3_requests, 1, "a v2 GET is one read");
                        assert_eq!(got.stats.manifest_bytes, header);
                        let received = chunks
                            + if placement == Placement::Prefix {
                                header
                            } else {
                                0
                            };
                        assert_eq!(got.stats.bytes_received, received);
                        assert!(got.stats.accounted() <= got.stats.total);
                        assert!(got.stats.key_establishment > Duration::ZERO);
                    }
                }
            }
        }
    });
}

fn recipients((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    run(async {
        let keys: Vec<(SecretKey, PublicKey)> =
            (0..3).map(|_| keypair(KeyType::MlKem768)).collect();
        let pks: Vec<&PublicKey> = keys.iter().map(|k| &k.1).collect();
        let sender = v2::Sender::new(Backend::RustCrypto, &pks, false, Placement::Prefix)
            .expect("three recipients");
        let data = payload(100 * KIB, 7);
        let out = put(&store, &sender, "shared", &data).await;
        for (sk, _) in &keys {
            let (plain, _) = get(&store, sk, Backend::AwsLc, "shared", &out.id.version)
                .await
                .expect("every recipient opens");
            assert!(plain == data);
        }
        let (stranger, _) = keypair(KeyType::MlKem768);
        let r = get(&store, &stranger, Backend::AwsLc, "shared", &out.id.version).await;
        assert!(
            is_decrypt(&r),
            "a key not listed gets the opaque error: {r:?}"
        );

        let (_, classical) = keypair(KeyType::X25519);
        let mixed = [&keys[0].1, &classical];
        let err = v2::Sender::new(Backend::AwsLc, &mixed, false, Placement::Prefix)
            .expect_err("mixed strengths need the flag");
        assert!(err.to_string().contains("refusing to mix"), "{err}");
        let allowed = v2::Sender::new(Backend::AwsLc, &mixed, true, Placement::Metadata)
            .expect("mixed with the flag");
        let out = put(&store, &allowed, "mixed", b"m").await;
        let (h, _) = v2::Header::parse(&out.manifest).expect("header");
        assert!(h.mixed, "the header records that mixing was allowed");
        let (plain, _) = get(&store, &keys[0].0, Backend::AwsLc, "mixed", &out.id.version)
            .await
            .expect("opens");
        assert_eq!(plain, b"m");
    });
}

fn latest_delete_gc((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    run(async {
        let (sk, pk) = keypair(KeyType::MlKem768);
        let v1 = Sender::new(Mode::MlKem768, Backend::AwsLc, SealKey::Public(&pk)).expect("v1");
        let first = store
            .put(&v1, "doc", 3, &b"one"[..], &mut quiet())
            .await
            .expect("v1 put");
        let sender =
            v2::Sender::new(Backend::AwsLc, &[&pk], false, Placement::Metadata).expect("v2");
        let second = put(&store, &sender, "doc", b"two").await;
        let versions = store.versions("doc").await.expect("versions");
        let formats: Vec<Format> = versions.iter().map(|v| v.format).collect();
        assert_eq!(formats, [Format::V1, Format::V2]);
        assert_eq!(
            store.latest("doc").await.expect("latest").as_deref(),
            Some(second.id.version.as_str()),
            "the newest version is the latest, whatever its format"
        );

        // An abandoned multipart upload of object.v2 is invisible and gc aborts it; gc
        // never deletes a committed object.v2.
        let id = envelope::ObjectId::new_version(store.tenant(), BUCKET, "doc").expect("id");
        let abandoned = layout::object_v2_key("doc", &id.version);
        store
            .objects()
            .create_multipart(BUCKET, &abandoned, &[])
            .await
            .expect("create");
        assert_eq!(store.versions("doc").await.expect("versions").len(), 2);
        let report = store.gc("", Duration::ZERO, false).await.expect("gc");
        assert!(report.deleted_data.is_empty(), "{report:?}");
        assert!(
            report.uploads_listed,
            "{kind:?} must list multipart uploads"
        );
        assert_eq!(report.aborted_uploads.len(), 1, "{report:?}");
        assert_eq!(report.aborted_uploads[0].0, abandoned);
        assert!(
            get(&store, &sk, Backend::AwsLc, "doc", &second.id.version)
                .await
                .is_ok()
        );

        store
            .delete_version("doc", &second.id.version)
            .await
            .expect("delete v2");
        assert_eq!(
            store.latest("doc").await.expect("latest").as_deref(),
            Some(first.id.version.as_str())
        );
        assert!(matches!(
            get(&store, &sk, Backend::AwsLc, "doc", &second.id.version).await,
            Err(Error::NotCommitted { .. })
        ));
        let more: Vec<(String, String)> = {
            let mut v = Vec::new();
            for i in 0..3 {
                let k = format!("many/{i}");
                let o = put(&store, &sender, &k, b"x").await;
                v.push((k, o.id.version));
            }
            v
        };
        let (deleted, failed) = store
            .delete_many(&more, Format::V2)
            .await
            .expect("delete_many");
        assert_eq!((deleted, failed.len()), (3, 0));
        assert!(store.keys("many/").await.expect("keys").is_empty());
    });
}

/// A tamper case: its name, the object key, the body and metadata entry to store, and
/// whether only the opaque error is acceptable (else a header rejection too).
type Case = (&'static str, String, Vec<u8>, Option<String>, bool);

fn tampered((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    run(async {
        let (sk, pk) = keypair(KeyType::MlKem768);
        let data = payload(5 * MIB, 3);
        let meta_sender =
            v2::Sender::new(Backend::AwsLc, &[&pk], false, Placement::Metadata).expect("meta");
        let prefix_sender =
            v2::Sender::new(Backend::AwsLc, &[&pk], false, Placement::Prefix).expect("prefix");
        let m = put(&store, &meta_sender, "t/m", &data).await;
        let p = put(&store, &prefix_sender, "t/p", &data).await;
        let other = put(&store, &meta_sender, "t/other", &data).await;
        let m_key = layout::object_v2_key("t/m", &m.id.version);
        let p_key = layout::object_v2_key("t/p", &p.id.version);
        let (m_body, m_meta) = raw_get(&store, &m_key).await;
        let (p_body, _) = raw_get(&store, &p_key).await;
        let (_, other_meta) =
            raw_get(&store, &layout::object_v2_key("t/other", &other.id.version)).await;
        let m_header = m.manifest.to_vec();
        let hl = p.manifest.len();

        // (name, object key, body, metadata entry, expected: opaque only)
        let mut cases: Vec<Case> = Vec::new();
        for (at, field) in [
            (14, "identity_hash"),
            (30, "plaintext_size"),
            (60, "commitment"),
            (95, "key_id"),
            (200, "enc"),
            (hl - 3, "wrapped"),
        ] {
            let mut h = m_header.clone();
            h[at] ^= 1;
            cases.push((
                field,
                m_key.clone(),
                m_body.clone(),
                Some(v2::encode_metadata(&h)),
                false,
            ));
            let mut b = p_body.clone();
            b[at] ^= 1;
            cases.push((field, p_key.clone(), b, None, false));
        }
        cases.push((
            "metadata of another object",
            m_key.clone(),
            m_body.clone(),
            other_meta.clone(),
            true,
        ));
        cases.push((
            "non-canonical base64",
            m_key.clone(),
            m_body.clone(),
            m_meta.clone().map(|v| v.trim_end_matches('=').to_owned()),
            false,
        ));
        cases.push((
            "metadata header moved into the body",
            m_key.clone(),
            [m_header.clone(), m_body.clone()].concat(),
            None,
            false,
        ));
        cases.push((
            "prefix header copied into metadata",
            p_key.clone(),
            p_body.clone(),
            Some(v2::encode_metadata(&p.manifest)),
            false,
        ));
        cases.push((
            "metadata entry dropped",
            m_key.clone(),
            m_body.clone(),
            None,
            false,
        ));
        cases.push((
            "truncated",
            p_key.clone(),
            p_body[..p_body.len() - 1].to_vec(),
            None,
            true,
        ));
        cases.push((
            "extended",
            p_key.clone(),
            [p_body.clone(), vec![0]].concat(),
            None,
            true,
        ));
        cases.push((
            "a chunk bit",
            p_key.clone(),
            {
                let mut b = p_body.clone();
                b[hl + 10] ^= 1;
                b
            },
            None,
            true,
        ));
        let v1_manifest = {
            let v1 = Sender::new(Mode::MlKem768, Backend::AwsLc, SealKey::Public(&pk)).expect("v1");
            store
                .put(&v1, "t/v1", 4, &b"four"[..], &mut quiet())
                .await
                .expect("v1 put")
                .manifest
                .to_vec()
        };
        cases.push((
            "a v1 manifest relabelled v2",
            p_key.clone(),
            [v1_manifest, p_body[hl..].to_vec()].concat(),
            None,
            false,
        ));

        for (name, key, body, meta, opaque) in cases {
            raw_put(&store, &key, body, meta).await;
            let version = if key == m_key {
                &m.id.version
            } else {
                &p.id.version
            };
            let logical = if key == m_key { "t/m" } else { "t/p" };
            for backend in [Backend::AwsLc, Backend::RustCrypto] {
                let r = get(&store, &sk, backend, logical, version).await;
                if opaque {
                    assert!(is_decrypt(&r), "{name}: {r:?}");
                } else {
                    assert!(is_refused(&r), "{name}: {r:?}");
                }
            }
        }

        // The v2 object moved to another version of the same key: the identity differs.
        let moved = envelope::ObjectId::new_version(store.tenant(), BUCKET, "t/p").expect("id");
        raw_put(
            &store,
            &layout::object_v2_key("t/p", &moved.version),
            p_body.clone(),
            None,
        )
        .await;
        assert!(is_decrypt(
            &get(&store, &sk, Backend::AwsLc, "t/p", &moved.version).await
        ));

        // A v2 header relabelled v1: written as manifest.json and data.enc, a v1 reader
        // refuses it.
        let rel = envelope::ObjectId::new_version(store.tenant(), BUCKET, "t/rel").expect("id");
        raw_put(
            &store,
            &layout::manifest_key("t/rel", &rel.version),
            p.manifest.to_vec(),
            None,
        )
        .await;
        raw_put(
            &store,
            &layout::data_key("t/rel", &rel.version),
            p_body[hl..].to_vec(),
            None,
        )
        .await;
        let receiver =
            envelope::Receiver::new(Mode::MlKem768, Backend::AwsLc, Some(&sk)).expect("r");
        let r = store
            .get(
                &receiver,
                "t/rel",
                &rel.version,
                &mut Vec::new(),
                &mut quiet(),
            )
            .await;
        // Read by a v1 reader: v1's manifest check refuses the v2 header.
        assert!(
            matches!(
                r,
                Err(Error::Envelope(
                    envelope::Error::Manifest(_) | envelope::Error::Decrypt
                ))
            ),
            "{r:?}"
        );

        // The untouched object still opens.
        raw_put(&store, &p_key, p_body, None).await;
        assert!(
            get(&store, &sk, Backend::AwsLc, "t/p", &p.id.version)
                .await
                .is_ok()
        );
    });
}

fn rewraps((kind, client): (Kind, S3ClientKind)) {
    let server = TestServer::start(kind);
    let store = server.store_on(client);
    run(async {
        let (old_sk, old_pk) = keypair(KeyType::X25519);
        let (new_sk, new_pk) = keypair(KeyType::MlKem768);
        let sender = |pk: &PublicKey, p| {
            v2::Sender::new(Backend::AwsLc, &[pk], false, p)
                .and_then(|s| s.with_header_version(v2::HeaderVersion::V2_1))
                .expect("v2.1 sender")
        };
        let old_r = v2::Receiver::new(Backend::AwsLc, &old_sk).expect("receiver");
        let places = [Placement::Metadata, Placement::Prefix];
        for (i, size) in [0, 64 * KIB, 9 * MIB].into_iter().enumerate() {
            let data = payload(size, 40 + i as u64);
            for from in places {
                for to in places {
                    let key = format!("rw/{size}/{from:?}-{to:?}");
                    let old = put(&store, &sender(&old_pk, from), &key, &data).await;
                    let new = envelope::new_version();
                    let out = store
                        .rewrap_v2_as(&old_r, &sender(&new_pk, to), &key, &old.id.version, &new)
                        .await
                        .unwrap_or_else(|e| panic!("rewrap {key}: {e}"));
                    let st = &out.put.stats;
                    let ops: Vec<&str> = st.timeline.calls.iter().map(|c| c.op).collect();
                    if (from, to) == (Placement::Metadata, Placement::Metadata) {
                        assert!(out.server_side, "{key}");
                        assert_eq!(ops, ["HeadObject", "CopyObject"], "{key}");
                        assert!(
                            st.bytes_received < 4 * KIB as u64 && st.bytes_sent < 4 * KIB as u64,
                            "{key}: no body through the client: {} B in, {} B out",
                            st.bytes_received,
                            st.bytes_sent
                        );
                    } else {
                        assert!(!out.server_side, "{key}");
                        // (To metadata, a HeadObject first finds the old header is not there.)
                        assert!(
                            ops.contains(&"GetObject") && !ops.contains(&"CopyObject"),
                            "{key}: {ops:?}"
                        );
                    }
                    // The new version opens with the new key only, to the same plaintext;
                    // the old one still opens with the old key (FORMAT-v2.md §10.3).
                    let got = get(&store, &new_sk, Backend::AwsLc, &key, &new).await;
                    assert_eq!(got.expect("new version opens").0, data, "{key}");
                    assert!(is_decrypt(
                        &get(&store, &old_sk, Backend::AwsLc, &key, &new).await
                    ));
                    let got = get(&store, &old_sk, Backend::AwsLc, &key, &old.id.version).await;
                    assert_eq!(got.expect("old version opens").0, data, "{key}");
                    // The chunks are the old ones, byte for byte.
                    let strip = |(body, meta): (Vec<u8>, Option<String>)| match meta {
                        Some(_) => body,
                        None => {
                            let start: [u8; 8] = body[..8].try_into().expect("8 bytes");
                            body[v2::announced_len(&start).expect("header")..].to_vec()
                        }
                    };
                    let old_body =
                        strip(raw_get(&store, &layout::object_v2_key(&key, &old.id.version)).await);
                    let new_body = strip(raw_get(&store, &layout::object_v2_key(&key, &new)).await);
                    assert!(old_body == new_body, "{key}: the body changed");
                    assert_eq!(
                        store.versions(&key).await.expect("versions").len(),
                        2,
                        "{key}"
                    );
                }
            }
        }

        // The condition: a CopyObject whose ETag is not the source's is refused with 412.
        let key = "rw/condition";
        let old = put(&store, &sender(&old_pk, Placement::Metadata), key, b"x").await;
        let source = layout::object_v2_key(key, &old.id.version);
        let r = store
            .objects()
            .copy_object(
                BUCKET,
                &source,
                &layout::object_v2_key(key, &envelope::new_version()),
                "\"00000000000000000000000000000000\"",
                &[],
            )
            .await;
        assert!(
            r.as_ref().is_err_and(Error::precondition_failed),
            "a stale ETag: {r:?}"
        );

        // A v2 object has no re-wrap.
        let v2_sender = v2::Sender::new(Backend::AwsLc, &[&old_pk], false, Placement::Metadata)
            .expect("sender");
        let plain_v2 = put(&store, &v2_sender, "rw/v2", b"x").await;
        let r = store
            .rewrap_v2_as(
                &old_r,
                &sender(&new_pk, Placement::Metadata),
                "rw/v2",
                &plain_v2.id.version,
                &envelope::new_version(),
            )
            .await;
        assert!(
            matches!(r, Err(Error::Envelope(envelope::Error::NotRewrappable))),
            "{r:?}"
        );
    });
}

macro_rules! server_tests {
    ($name:ident, $kind:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn v2_round_trips_every_kem_placement_and_size_in_one_request() {
                round_trips($kind);
            }

            #[test]
            fn v2_opens_for_every_recipient_and_no_stranger() {
                recipients($kind);
            }

            #[test]
            fn v2_latest_delete_and_gc_beside_v1() {
                latest_delete_gc($kind);
            }

            #[test]
            fn v2_tampered_objects_are_refused_in_both_placements() {
                tampered($kind);
            }

            #[test]
            fn v2_1_objects_rewrap_with_one_copy_in_metadata_and_unchanged_chunks_otherwise() {
                rewraps($kind);
            }
        }
    };
}

server_tests!(embedded, (Kind::Embedded, S3ClientKind::AwsSdk));
server_tests!(garage, (Kind::Garage, S3ClientKind::AwsSdk));
server_tests!(embedded_lean, (Kind::Embedded, S3ClientKind::Lean));
server_tests!(garage_lean, (Kind::Garage, S3ClientKind::Lean));
