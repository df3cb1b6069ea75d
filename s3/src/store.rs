//! The commit protocol of the study's Algorithm 1 (section III) over S3, as DESIGN.md
//! "Envelope format v1" makes it precise:
//!
//! - PUT of a version: `data.enc` is streamed while it is encrypted (one PutObject when it
//!   is at most [`MULTIPART_THRESHOLD`] bytes; otherwise a multipart upload of
//!   [`PART_SIZE`] parts, each encrypted and then uploaded, so at most one part and one
//!   chunk are in memory), then `manifest.json` is written last as the commit record. A PUT
//!   that stops before the manifest leaves no visible version; [`Store::gc`] removes what
//!   it left behind.
//! - GET of a known version: the manifest (first read), then `data.enc` (second read),
//!   decrypted chunk by chunk into a sink. The reader names the mode it expects (the
//!   [`Receiver`]). A chunk reaches the sink only after it authenticated; the object is
//!   complete only when [`Store::get`] returns `Ok`.
//! - Latest version: one LIST of `<key>.pqcs/`, the newest committed UUIDv7.
//!
//! Every operation measures itself ([`OpStats`]) on one clock whose laps tile it (see
//! [`crate::timing`]): the four envelope stages come from the envelope's own timers,
//! storage is the S3 calls with what prepares them and the reading and release of response
//! bodies, and what the caller's source, sink and progress callback take is left as
//! unaccounted time, so that it stays visible and small.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use envelope::layout::{self, Part};
use envelope::v2::{self, Placement};
use envelope::{Format, ObjectId, Receiver, Sender, SessionInfo};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::objects::Body;
use crate::timing::{Call, cpu};
use crate::{Error, ObjectClient, OpStats, Result, S3Class, S3Settings};

/// Size of a multipart part of `data.enc` (the last part may be smaller).
pub const PART_SIZE: u64 = 8 * 1024 * 1024;
/// `data.enc` up to this size is written with one PutObject; above it, multipart.
pub const MULTIPART_THRESHOLD: u64 = PART_SIZE;

/// Progress of a PUT or GET, for progress bars and for tests that need to act at a given
/// point of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// `done` of `total` bytes of `data.enc` uploaded.
    Sent {
        /// Bytes uploaded so far.
        done: u64,
        /// Size of `data.enc`.
        total: u64,
    },
    /// `data.enc` is stored; the manifest is next.
    DataStored,
    /// The manifest is stored: the version is committed.
    Committed,
    /// `done` of `total` bytes of `data.enc` received and authenticated.
    Received {
        /// Bytes received so far.
        done: u64,
        /// Size of `data.enc`.
        total: u64,
    },
}

/// A committed PUT.
#[derive(Clone, Debug)]
pub struct PutOutcome {
    /// The identity written (with its new version).
    pub id: ObjectId,
    /// The manifest written.
    pub manifest: Bytes,
    /// Size of `data.enc`.
    pub ciphertext_size: u64,
    /// Session bookkeeping (`ml-kem-768-session`).
    pub session: Option<SessionInfo>,
    /// What it cost.
    pub stats: OpStats,
}

/// A complete, authenticated GET.
#[derive(Clone, Debug)]
pub struct GetOutcome {
    /// Plaintext bytes written to the sink.
    pub plaintext_size: u64,
    /// What it cost.
    pub stats: OpStats,
}

/// One committed version as a listing shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionInfo {
    /// The UUIDv7 version.
    pub version: String,
    /// Its format.
    pub format: Format,
    /// Size of `data.enc` (v1) or `object.v2` (v2) (`None`: the data is missing, the
    /// version is broken).
    pub data_size: Option<u64>,
    /// Size of `manifest.json` (v1); 0 in v2, whose header is in `object.v2` or its
    /// metadata.
    pub manifest_size: u64,
    /// When the commit record (`manifest.json`, or `object.v2`) was stored (server clock).
    pub committed_at: Option<SystemTime>,
    /// The version's UUIDv7 time is more than [`envelope::layout::MAX_VERSION_SKEW`] after
    /// `committed_at` (or `committed_at` is unknown): it is never chosen as the latest
    /// (FORMAT.md §1; a writer picks its own version, so `ffff…` would pin latest forever).
    pub future_dated: bool,
}

/// What [`Store::gc`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// `data.enc` objects without a manifest, older than the grace period, deleted (or, in
    /// a dry run, to be deleted).
    pub deleted_data: Vec<String>,
    /// Abandoned multipart uploads of `data.enc` aborted: (object key, upload id).
    pub aborted_uploads: Vec<(String, String)>,
    /// Uncommitted data or uploads younger than the grace period, left alone.
    pub kept_young: usize,
    /// Manifests whose `data.enc` is missing: committed but broken versions, reported, not
    /// deleted.
    pub broken_versions: Vec<String>,
    /// False if the server cannot list multipart uploads, so abandoned ones were not looked
    /// for.
    pub uploads_listed: bool,
    /// Committed versions that are future-dated (their manifests' keys): skipped when
    /// choosing the latest version, reported, never deleted.
    pub future_dated: Vec<String>,
}

/// What [`Store::sealing`] read.
#[derive(Clone, Debug)]
pub struct EnvelopeRead {
    /// What the envelope says.
    pub sealing: envelope::survey::Sealing,
    /// Envelope bytes read (v2 in metadata: the entry's base64).
    pub bytes: u64,
    /// S3 requests made.
    pub requests: u32,
}

/// The largest object one CopyObject copies (S3's limit).
const MAX_COPY: u64 = 5 << 30;

/// What a re-wrap wrote ([`Store::rewrap_v2_as`]).
#[derive(Debug)]
pub struct RewrapOutcome {
    /// The new version: its identity, header (`manifest`), size and costs.
    pub put: PutOutcome,
    /// Whether the body stayed on the server (one CopyObject); otherwise it passed through
    /// the client unchanged, behind the new header.
    pub server_side: bool,
}

/// Objects of a listing that are not pqbench versions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Foreign {
    /// How many.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// One key of a listing: its committed versions (oldest first) and uncommitted ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyListing {
    /// The logical object key.
    pub key: String,
    /// Committed versions, in UUIDv7 order.
    pub versions: Vec<VersionInfo>,
    /// `data.enc` objects without a manifest (v2 has no uncommitted state).
    pub uncommitted: usize,
}

impl KeyListing {
    /// The version `get` without `--version` reads: see [`latest_of`].
    pub fn latest(&self) -> Option<&VersionInfo> {
        latest_of(&self.versions)
    }
}

/// The latest of committed `versions` (oldest first): the greatest one that is not
/// future-dated (FORMAT.md §1).
pub fn latest_of(versions: &[VersionInfo]) -> Option<&VersionInfo> {
    versions.iter().rev().find(|v| !v.future_dated)
}

#[derive(Default)]
struct Entry {
    data: Option<(u64, Option<SystemTime>)>,
    manifest: Option<(u64, Option<SystemTime>)>,
    v2: Option<(u64, Option<SystemTime>)>,
}

impl Entry {
    /// The version's format and its commit record's (size, time): `manifest.json` (v1) or
    /// `object.v2` (v2); `None`: not committed.
    fn committed(&self) -> Option<(Format, u64, Option<SystemTime>)> {
        match (self.manifest, self.v2) {
            (Some((n, at)), _) => Some((Format::V1, n, at)),
            (None, Some((n, at))) => Some((Format::V2, n, at)),
            (None, None) => None,
        }
    }
}

/// The commit protocol over one bucket of one S3 endpoint, for one tenant.
#[derive(Clone, Debug)]
pub struct Store {
    s3: ObjectClient,
    bucket: String,
    tenant: String,
}

fn len_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Runs one S3 request, counting it and adding the interval it claims (since the last
/// clock reading: preparing the request, then the call) to the storage stage and to the
/// operation's timeline.
async fn timed<T>(st: &mut OpStats, op: &'static str, request: impl Future<Output = T>) -> T {
    st.s3_requests += 1;
    let r = request.await;
    let (start, storage) = st.lap();
    st.storage += storage;
    st.timeline
        .calls
        .push(crate::timing::S3Call { op, start, storage });
    r
}

impl Store {
    /// A store over `bucket` at the endpoint of `settings`, for objects of `tenant`.
    pub fn new(settings: &S3Settings, bucket: &str, tenant: &str) -> Result<Self> {
        if bucket.is_empty() || tenant.is_empty() {
            return Err(Error::Settings(
                "bucket and tenant must not be empty".into(),
            ));
        }
        Ok(Self {
            s3: ObjectClient::new(settings)?,
            bucket: bucket.into(),
            tenant: tenant.into(),
        })
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The tenant.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The S3 client the store sends its requests with (for fixtures, controls and tests:
    /// raw objects on the same client as the protocol's).
    pub fn objects(&self) -> &ObjectClient {
        &self.s3
    }

    /// `r`, with S3's NotFound for a version's commit record (`record`: its file name) said
    /// as [`Error::NotCommitted`].
    fn committed<T>(
        &self,
        r: Result<T>,
        key: &str,
        version: &str,
        record: &'static str,
    ) -> Result<T> {
        r.map_err(|err| {
            if err.s3_class() == Some(S3Class::NotFound) {
                self.not_committed(key, version, record)
            } else {
                err
            }
        })
    }

    fn not_committed(&self, key: &str, version: &str, record: &'static str) -> Error {
        Error::NotCommitted {
            bucket: self.bucket.clone(),
            key: key.into(),
            version: version.into(),
            record,
        }
    }

    /// Creates the bucket; succeeds if it already exists and is ours.
    pub async fn create_bucket(&self) -> Result<()> {
        self.s3.create_bucket(&self.bucket).await
    }

    /// Encrypts `size` bytes read from `src` as a new version of `key` and commits it:
    /// `data.enc` first, `manifest.json` last. On an S3 failure it tries once to remove
    /// what it wrote (abort the multipart upload, delete the data); what remains if that
    /// also fails, or if the future is dropped, is invisible to readers and is removed by
    /// [`Store::gc`].
    pub async fn put<R>(
        &self,
        sender: &Sender,
        key: &str,
        size: u64,
        mut src: R,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<PutOutcome>
    where
        R: AsyncRead + Unpin + Send,
    {
        let mut st = OpStats::begin();
        // The new identity goes into ctx and the manifest: manifest handling.
        let id = ObjectId::new_version(&self.tenant, &self.bucket, key)?;
        st.manifest_lap();
        let mut sealer = cpu(&mut st, Call::Object, || {
            sender.seal(&id, size, &mut envelope::os_rng())
        })?;
        let total = sealer.ciphertext_size();
        let data_key = layout::data_key(key, &id.version);
        let target = Target {
            key: &data_key,
            total,
            head: &[],
            meta: &[],
        };
        self.upload(&mut sealer, &mut src, &target, &mut st, on)
            .await?;
        on(Event::DataStored);
        st.outside();

        let sealed = cpu(&mut st, Call::Object, || sealer.finish())?;
        st.add_envelope(&sealed.times);
        let manifest_key = layout::manifest_key(key, &id.version);
        let manifest = Bytes::from(sealed.manifest);
        st.bytes_sent += len_u64(manifest.len());
        st.manifest_bytes = len_u64(manifest.len());
        let r = timed(
            &mut st,
            "PutObject",
            self.s3.put_object(
                &self.bucket,
                &manifest_key,
                manifest.clone(),
                Some("application/json"),
                &[],
            ),
        )
        .await;
        if let Err(err) = r {
            // Best effort: the version is invisible anyway; gc removes the data otherwise.
            let _ = self.s3.delete_object(&self.bucket, &data_key).await;
            return Err(err);
        }
        on(Event::Committed);
        st.outside();
        st.finish();
        Ok(PutOutcome {
            id,
            manifest,
            ciphertext_size: sealed.ciphertext_size,
            session: sealed.session,
            stats: st,
        })
    }

    /// Encrypts `size` bytes read from `src` as a new format-v2 version of `key`: one
    /// `object.v2`, the header in its metadata or before the chunks ([`v2::Sender`]'s
    /// placement), written with one PutObject, or a multipart upload above
    /// [`MULTIPART_THRESHOLD`] (FORMAT-v2.md §2: the object exists whole, or not at all, so
    /// its existence is the commit). On a failed upload it aborts it once; [`Store::gc`]
    /// aborts what remains. [`PutOutcome::manifest`] holds the header.
    pub async fn put_v2<R>(
        &self,
        sender: &v2::Sender,
        key: &str,
        size: u64,
        src: R,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<PutOutcome>
    where
        R: AsyncRead + Unpin + Send,
    {
        let version = envelope::new_version();
        self.put_v2_as(sender, key, &version, size, src, on).await
    }

    /// [`Store::put_v2`] as the given `version` (a UUIDv7 the caller drew and recorded
    /// first, so that a resumed writer knows which version is its own: `pqbench migrate`).
    /// It overwrites an `object.v2` of that version: draw a new one per object.
    pub async fn put_v2_as<R>(
        &self,
        sender: &v2::Sender,
        key: &str,
        version: &str,
        size: u64,
        mut src: R,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<PutOutcome>
    where
        R: AsyncRead + Unpin + Send,
    {
        let mut st = OpStats::begin();
        let id = ObjectId::new(&self.tenant, &self.bucket, key, version)?;
        st.manifest_lap();
        let mut sealer = cpu(&mut st, Call::Object, || {
            sender.seal(&id, size, &mut envelope::os_rng())
        })?;
        let header = Bytes::copy_from_slice(sealer.header());
        let (head, meta) = match sender.placement() {
            Placement::Prefix => (header.clone(), Vec::new()),
            Placement::Metadata => (
                Bytes::new(),
                vec![(META_HEADER, v2::encode_metadata(&header))],
            ),
        };
        st.bytes_sent += meta.iter().map(|(_, v)| len_u64(v.len())).sum::<u64>();
        st.manifest_bytes = len_u64(header.len());
        let total = len_u64(head.len()) + sealer.chunks_size();
        let object_key = layout::object_v2_key(key, &id.version);
        let target = Target {
            key: &object_key,
            total,
            head: &head,
            meta: &meta,
        };
        self.upload(&mut sealer, &mut src, &target, &mut st, on)
            .await?;
        let times = cpu(&mut st, Call::Object, || sealer.finish())?;
        st.add_envelope(&times);
        on(Event::Committed);
        st.outside();
        st.finish();
        Ok(PutOutcome {
            id,
            manifest: header,
            ciphertext_size: total,
            session: None,
            stats: st,
        })
    }

    /// Uploads `target.head` followed by every chunk `sealer` seals from `src`: one
    /// PutObject up to [`MULTIPART_THRESHOLD`] bytes, a multipart upload above.
    async fn upload<S, R>(
        &self,
        sealer: &mut S,
        src: &mut R,
        target: &Target<'_>,
        st: &mut OpStats,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<()>
    where
        S: ChunkSeal + Send,
        R: AsyncRead + Unpin + Send,
    {
        if target.total > MULTIPART_THRESHOLD {
            return self.put_multipart(sealer, src, target, st, on).await;
        }
        let total = target.total;
        let mut body = target.head.to_vec();
        let mut chunk = Vec::new();
        while seal_next(sealer, src, &mut chunk, st).await? {
            if body.is_empty() && sealer.next_chunk_len().is_none() {
                // A one-chunk object: the sealed chunk is the body, not a copy of it.
                body = std::mem::take(&mut chunk);
            } else {
                body.reserve_exact(
                    usize::try_from(total)
                        .unwrap_or(0)
                        .saturating_sub(body.len()),
                );
                body.extend_from_slice(&chunk);
            }
        }
        st.bytes_sent += len_u64(body.len());
        timed(
            st,
            "PutObject",
            self.s3.put_object(
                &self.bucket,
                target.key,
                Bytes::from(body),
                None,
                target.meta,
            ),
        )
        .await?;
        on(Event::Sent { done: total, total });
        st.outside();
        Ok(())
    }

    async fn put_multipart<S, R>(
        &self,
        sealer: &mut S,
        src: &mut R,
        target: &Target<'_>,
        st: &mut OpStats,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<()>
    where
        S: ChunkSeal + Send,
        R: AsyncRead + Unpin + Send,
    {
        let upload_id = timed(
            st,
            "CreateMultipartUpload",
            self.s3
                .create_multipart(&self.bucket, target.key, target.meta),
        )
        .await?;

        let result = self
            .upload_parts(sealer, src, target, &upload_id, st, on)
            .await;
        if result.is_err() {
            // Best effort; abandoned uploads are collected by gc otherwise.
            let _ = self
                .s3
                .abort_multipart(&self.bucket, target.key, &upload_id)
                .await;
        }
        result
    }

    async fn upload_parts<S, R>(
        &self,
        sealer: &mut S,
        src: &mut R,
        target: &Target<'_>,
        upload_id: &str,
        st: &mut OpStats,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<()>
    where
        S: ChunkSeal + Send,
        R: AsyncRead + Unpin + Send,
    {
        let part_size = usize::try_from(PART_SIZE).unwrap_or(usize::MAX);
        let mut buf = BytesMut::with_capacity(part_size.saturating_mul(2));
        buf.extend_from_slice(target.head);
        let mut chunk = Vec::new();
        let mut parts = Vec::new();
        let mut done = 0u64;
        loop {
            let more = seal_next(sealer, src, &mut chunk, st).await?;
            if more {
                buf.extend_from_slice(&chunk);
            }
            while buf.len() >= part_size || (!more && !buf.is_empty()) {
                let take = buf.len().min(part_size);
                let body = buf.split_to(take).freeze();
                let number = i32::try_from(parts.len() + 1).unwrap_or(i32::MAX);
                st.bytes_sent += len_u64(take);
                let e_tag = timed(
                    st,
                    "UploadPart",
                    self.s3
                        .upload_part(&self.bucket, target.key, upload_id, number, body),
                )
                .await?;
                parts.push((number, e_tag));
                done += len_u64(take);
                on(Event::Sent {
                    done,
                    total: target.total,
                });
                st.outside();
            }
            if !more {
                break;
            }
        }
        timed(
            st,
            "CompleteMultipartUpload",
            self.s3
                .complete_multipart(&self.bucket, target.key, upload_id, &parts),
        )
        .await
    }

    /// Re-wraps format-v2.1 version `version` of `key` as the new version `new_version`
    /// (FORMAT-v2.md §10.1): `receiver`, one of its recipients, unwraps the data key, which
    /// is wrapped anew to `sender`'s recipients in `sender`'s placement; the body is not
    /// decrypted. Metadata to metadata, that is one HeadObject and one server-side
    /// CopyObject with the new header as replaced metadata, conditional on the old
    /// object's ETag: no body byte through the client. Any other placement pair, and a body
    /// above S3's 5 GiB copy limit, reads the object and writes its chunks unchanged behind
    /// the new header. A v2 object is refused
    /// ([`envelope::Error::NotRewrappable`]). Like [`Store::put_v2_as`], it overwrites an
    /// `object.v2` of `new_version`.
    pub async fn rewrap_v2_as(
        &self,
        receiver: &v2::Receiver,
        sender: &v2::Sender,
        key: &str,
        version: &str,
        new_version: &str,
    ) -> Result<RewrapOutcome> {
        let mut st = OpStats::begin();
        let old_id = ObjectId::new(&self.tenant, &self.bucket, key, version)?;
        let id = ObjectId::new(&self.tenant, &self.bucket, key, new_version)?;
        st.manifest_lap();
        let object = layout::object_v2_key(key, version);
        let target = layout::object_v2_key(key, new_version);
        let rewrap = |st: &mut OpStats, old: &[u8], found| {
            cpu(st, Call::Object, || {
                receiver.rewrap(&old_id, old, found, &id, sender, &mut envelope::os_rng())
            })
        };
        if sender.placement() == Placement::Metadata {
            let head = timed(&mut st, "HeadObject", self.s3.head(&self.bucket, &object))
                .await?
                .ok_or_else(|| self.not_committed(key, version, layout::OBJECT_V2_NAME))?;
            // S3 copies at most 5 GiB in one CopyObject; a larger body goes the long way.
            let copyable = head.size.is_some_and(|n| n <= MAX_COPY);
            if let (Some(value), Some(e_tag), true) =
                (head.metadata.get(v2::METADATA_KEY), &head.e_tag, copyable)
            {
                st.bytes_received += len_u64(value.len());
                let header = rewrap(&mut st, &v2::decode_metadata(value)?, Placement::Metadata)?;
                let meta = [(META_HEADER, v2::encode_metadata(&header))];
                st.bytes_sent += len_u64(meta[0].1.len());
                st.manifest_bytes = len_u64(header.len());
                timed(
                    &mut st,
                    "CopyObject",
                    self.s3
                        .copy_object(&self.bucket, &object, &target, e_tag, &meta),
                )
                .await?;
                st.outside();
                st.finish();
                return Ok(RewrapOutcome {
                    put: PutOutcome {
                        id,
                        manifest: Bytes::from(header),
                        ciphertext_size: head.size.unwrap_or_default(),
                        session: None,
                        stats: st,
                    },
                    server_side: true,
                });
            }
        }
        let body = timed(&mut st, "GetObject", async {
            let r = self.s3.get_object(&self.bucket, &object).await;
            self.committed(r, key, version, layout::OBJECT_V2_NAME)
        })
        .await?;
        let announced = body.content_length;
        let mut stream = Stream {
            body,
            pending: Bytes::new(),
        };
        let (old, found) = stream.v2_header().await?;
        let header = rewrap(&mut st, &old, found)?;
        let (h, _) = v2::Header::parse(&header)?;
        let chunks = v2::chunks_len(h.plaintext_size);
        let old_len = chunks
            + if found == Placement::Prefix {
                len_u64(old.len())
            } else {
                0
            };
        if announced.is_some_and(|n| n != old_len) {
            return Err(envelope::Error::Header(format!(
                "object.v2 is {} bytes; its header implies {old_len}",
                announced.unwrap_or_default()
            ))
            .into());
        }
        st.bytes_received += old_len;
        let (head, meta) = match sender.placement() {
            Placement::Prefix => (header.clone(), Vec::new()),
            Placement::Metadata => (
                Vec::new(),
                vec![(META_HEADER, v2::encode_metadata(&header))],
            ),
        };
        st.manifest_bytes = len_u64(header.len());
        let total = len_u64(head.len()) + chunks;
        let (mut src, feed) = stream.into_reader();
        let mut unchanged = Unchanged { left: chunks };
        let sent = self
            .upload(
                &mut unchanged,
                &mut src,
                &Target {
                    key: &target,
                    total,
                    head: &head,
                    meta: &meta,
                },
                &mut st,
                &mut |_| {},
            )
            .await;
        drop(src);
        let fed = feed
            .await
            .map_err(|e| Error::Source(std::io::Error::other(e)))?;
        // A read failure of the old object explains a short source better than the
        // source's end does.
        if sent.is_err() {
            fed?;
        }
        sent?;
        st.outside();
        st.finish();
        Ok(RewrapOutcome {
            put: PutOutcome {
                id,
                manifest: Bytes::from(header),
                ciphertext_size: total,
                session: None,
                stats: st,
            },
            server_side: false,
        })
    }

    /// Reads version `version` of `key` (manifest, then data) and writes the plaintext to
    /// `sink` chunk by chunk, each chunk only after it authenticated. Returns `Ok` only when
    /// the whole object, including its final chunk, authenticated; on any error the sink
    /// holds an incomplete prefix that the caller must discard.
    pub async fn get<W>(
        &self,
        receiver: &Receiver,
        key: &str,
        version: &str,
        sink: W,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<GetOutcome>
    where
        W: AsyncWrite + Unpin + Send,
    {
        self.get_keyed(receiver, None, key, version, sink, on).await
    }

    /// [`Store::get`] for a reader whose key is in a key service ([`Receiver::remote`]):
    /// between validating the manifest and deriving the data key, the key service performs
    /// the key request (one `Decapsulate` or `DeriveSharedSecret`, or none on a cache hit).
    /// Its wait is the key-establishment stage. A key-service failure is
    /// [`Error::KeyService`] with its class; a wrong secret, the opaque decryption error.
    pub async fn get_remote<W>(
        &self,
        receiver: &Receiver,
        remote: &kms::RemoteKey,
        key: &str,
        version: &str,
        sink: W,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<GetOutcome>
    where
        W: AsyncWrite + Unpin + Send,
    {
        self.get_keyed(receiver, Some(remote), key, version, sink, on)
            .await
    }

    async fn get_keyed<W>(
        &self,
        receiver: &Receiver,
        remote: Option<&kms::RemoteKey>,
        key: &str,
        version: &str,
        mut sink: W,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<GetOutcome>
    where
        W: AsyncWrite + Unpin + Send,
    {
        let mut st = OpStats::begin();
        // The requested identity is what the manifest is validated against: manifest handling.
        let id = ObjectId::new(&self.tenant, &self.bucket, key, version)?;
        st.manifest_lap();

        let manifest = self.read_manifest(key, version, &mut st).await?;
        let mut opener = match remote {
            None => cpu(&mut st, Call::Object, || receiver.open(&id, &manifest))?,
            Some(k) => {
                let pending = cpu(&mut st, Call::Object, || receiver.begin(&id, &manifest))?;
                complete_remote(&mut st, k, pending).await?
            }
        };
        let total = opener.ciphertext_size();

        let data_key = layout::data_key(key, version);
        let body = timed(
            &mut st,
            "GetObject",
            self.s3.get_object(&self.bucket, &data_key),
        )
        .await?;
        let stream = Stream {
            body,
            pending: Bytes::new(),
        };
        let plaintext_size =
            read_chunks(&mut opener, stream, total, &mut st, &mut sink, on).await?;
        let opened = cpu(&mut st, Call::Object, || opener.finish())?;
        st.add_envelope(&opened.times);
        sink.flush().await.map_err(Error::Sink)?;
        st.outside();
        st.finish();
        Ok(GetOutcome {
            plaintext_size,
            stats: st,
        })
    }

    /// Reads format-v2 version `version` of `key` with one GetObject of `object.v2`: the
    /// header from the metadata entry, or else from the body's start (FORMAT-v2.md §2, §4),
    /// checked with the commitment before any chunk; then the chunks into `sink`, each only
    /// after it authenticated. `Ok` only when the whole object authenticated; on any error
    /// the sink holds an incomplete prefix that the caller must discard.
    pub async fn get_v2<W>(
        &self,
        receiver: &v2::Receiver,
        key: &str,
        version: &str,
        sink: W,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<GetOutcome>
    where
        W: AsyncWrite + Unpin + Send,
    {
        self.get_v2_keyed(V2Key::Local(receiver), key, version, sink, on)
            .await
    }

    /// [`Store::get_v2`] for a reader whose key is in a key service
    /// ([`v2::RemoteReceiver`]): between the header's checks and HPKE's key schedule, the
    /// key service performs the entry's key request (none on a cache hit); its wait is the
    /// key-establishment stage. A key-service failure is [`Error::KeyService`] with its
    /// class; a wrong secret, the opaque decryption error.
    pub async fn get_v2_remote<W>(
        &self,
        receiver: &v2::RemoteReceiver,
        remote: &kms::RemoteKey,
        key: &str,
        version: &str,
        sink: W,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<GetOutcome>
    where
        W: AsyncWrite + Unpin + Send,
    {
        self.get_v2_keyed(V2Key::Remote(receiver, remote), key, version, sink, on)
            .await
    }

    async fn get_v2_keyed<W>(
        &self,
        reader: V2Key<'_>,
        key: &str,
        version: &str,
        mut sink: W,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<GetOutcome>
    where
        W: AsyncWrite + Unpin + Send,
    {
        let mut st = OpStats::begin();
        let id = ObjectId::new(&self.tenant, &self.bucket, key, version)?;
        st.manifest_lap();
        let object_key = layout::object_v2_key(key, version);
        let body = timed(&mut st, "GetObject", async {
            let r = self.s3.get_object(&self.bucket, &object_key).await;
            self.committed(r, key, version, layout::OBJECT_V2_NAME)
        })
        .await?;
        let mut stream = Stream {
            body,
            pending: Bytes::new(),
        };
        let (header, found) = stream.v2_header().await?;
        if found == Placement::Prefix {
            st.bytes_received += len_u64(header.len());
        }
        st.storage_lap();
        st.manifest_bytes = len_u64(header.len());
        let mut opener = match reader {
            V2Key::Local(r) => cpu(&mut st, Call::Object, || r.open(&id, &header, found))?,
            V2Key::Remote(r, k) => {
                let pending = cpu(&mut st, Call::Object, || r.begin(&id, &header, found))?;
                complete_remote(&mut st, k, pending).await?
            }
        };
        let total = opener.chunks_size();
        let plaintext_size =
            read_chunks(&mut opener, stream, total, &mut st, &mut sink, on).await?;
        let times = cpu(&mut st, Call::Object, || opener.finish())?;
        st.add_envelope(&times);
        sink.flush().await.map_err(Error::Sink)?;
        st.outside();
        st.finish();
        Ok(GetOutcome {
            plaintext_size,
            stats: st,
        })
    }

    /// Reads `manifest.json` of a version, refusing it as soon as it is known to be longer
    /// than [`envelope::MAX_MANIFEST_LEN`]: from its Content-Length before any body byte,
    /// else after at most one body frame past the limit (a planted 400 MiB manifest never
    /// reaches memory; the connection is dropped with the rest unread).
    async fn read_manifest(&self, key: &str, version: &str, st: &mut OpStats) -> Result<Bytes> {
        let manifest_key = layout::manifest_key(key, version);
        let limit = len_u64(envelope::MAX_MANIFEST_LEN);
        let r: Result<Bytes> = timed(st, "GetObject", async {
            let r = self.s3.get_object(&self.bucket, &manifest_key).await;
            let mut body: Body = self.committed(r, key, version, layout::MANIFEST_NAME)?;
            let announced = body.content_length;
            if let Some(n) = announced.filter(|&n| n > limit) {
                return Err(envelope::Manifest::too_large(n).into());
            }
            let mut buf =
                Vec::with_capacity(usize::try_from(announced.unwrap_or(0).min(limit)).unwrap_or(0));
            while let Some(frame) = body.next().await? {
                if len_u64(buf.len() + frame.len()) > limit {
                    return Err(
                        envelope::Manifest::too_large(len_u64(buf.len() + frame.len())).into(),
                    );
                }
                buf.extend_from_slice(&frame);
            }
            Ok(Bytes::from(buf))
        })
        .await;
        let manifest = r?;
        st.bytes_received += len_u64(manifest.len());
        st.manifest_bytes = len_u64(manifest.len());
        Ok(manifest)
    }

    /// Lists every layout object under `prefix` (following continuation pages).
    async fn scan(&self, prefix: &str) -> Result<BTreeMap<(String, String), Entry>> {
        Ok(self.scan_all(prefix).await?.0)
    }

    /// [`Self::scan`], and the objects under `prefix` that are not pqbench's (their count
    /// and bytes).
    async fn scan_all(&self, prefix: &str) -> Result<(BTreeMap<(String, String), Entry>, Foreign)> {
        let mut out: BTreeMap<(String, String), Entry> = BTreeMap::new();
        let mut foreign = Foreign::default();
        let mut token = None;
        loop {
            let page = self.s3.list_objects(&self.bucket, prefix, token).await?;
            for o in page.objects {
                let Some(lk) = layout::parse_key(&o.key) else {
                    foreign.objects += 1;
                    foreign.bytes += o.size;
                    continue;
                };
                let e = out
                    .entry((lk.key.to_owned(), lk.version.to_owned()))
                    .or_default();
                let v = Some((o.size, o.last_modified));
                match lk.part {
                    Part::Data => e.data = v,
                    Part::Manifest => e.manifest = v,
                    Part::ObjectV2 => e.v2 = v,
                }
            }
            match page.next {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok((out, foreign))
    }

    /// Committed versions of `key`, oldest first (one LIST, more pages if needed).
    pub async fn versions(&self, key: &str) -> Result<Vec<VersionInfo>> {
        Ok(self
            .keys(&layout::versions_prefix(key))
            .await?
            .into_iter()
            .find(|l| l.key == key)
            .map(|l| l.versions)
            .unwrap_or_default())
    }

    /// The latest committed version of `key`: the greatest in UUIDv7 order that is not
    /// future-dated ([`latest_of`]), or `None`.
    pub async fn latest(&self, key: &str) -> Result<Option<String>> {
        Ok(latest_of(&self.versions(key).await?).map(|v| v.version.clone()))
    }

    /// Every key under `prefix` with its committed versions (oldest first) and the number
    /// of uncommitted ones.
    pub async fn keys(&self, prefix: &str) -> Result<Vec<KeyListing>> {
        Ok(self.survey(prefix).await?.0)
    }

    /// [`Self::keys`], and the objects under `prefix` that are not pqbench versions (no
    /// `.pqcs/<version>/` in their key): one listing for both.
    pub async fn survey(&self, prefix: &str) -> Result<(Vec<KeyListing>, Foreign)> {
        let (scanned, foreign) = self.scan_all(prefix).await?;
        let mut out: Vec<KeyListing> = Vec::new();
        for ((key, version), e) in scanned {
            if out.last().map(|l| &l.key) != Some(&key) {
                out.push(KeyListing {
                    key: key.clone(),
                    versions: Vec::new(),
                    uncommitted: 0,
                });
            }
            let Some(last) = out.last_mut() else { continue };
            match e.committed() {
                Some((format, size, committed_at)) => last.versions.push(VersionInfo {
                    future_dated: layout::is_future_dated(&version, committed_at),
                    version,
                    format,
                    data_size: match format {
                        Format::V1 => e.data.map(|d| d.0),
                        Format::V2 => Some(size),
                    },
                    manifest_size: if format == Format::V1 { size } else { 0 },
                    committed_at,
                }),
                None => last.uncommitted += 1,
            }
        }
        Ok((out, foreign))
    }

    /// What one committed version's envelope says, read from public bytes only and never
    /// its payload (`pqbench inventory`): v1 its `manifest.json` (refused above
    /// [`envelope::MAX_MANIFEST_LEN`] unread); v2 one HeadObject when the header is in
    /// metadata, else after it ranged GetObjects: the first 4 KiB (every one-recipient
    /// header), then the rest of a longer header. No more than 4 KiB past the header is
    /// ever sent.
    pub async fn sealing(&self, key: &str, version: &str, format: Format) -> Result<EnvelopeRead> {
        use envelope::survey::Sealing;
        if format == Format::V1 {
            let bytes = self
                .read_manifest(key, version, &mut OpStats::default())
                .await?;
            return Ok(EnvelopeRead {
                sealing: Sealing::of_manifest(&bytes)?,
                bytes: len_u64(bytes.len()),
                requests: 1,
            });
        }
        let object = layout::object_v2_key(key, version);
        let name = layout::OBJECT_V2_NAME;
        let Some(head) = self.s3.head(&self.bucket, &object).await? else {
            return Err(self.not_committed(key, version, name));
        };
        let size = head.size;
        if let Some(value) = head.metadata.get(v2::METADATA_KEY) {
            let header = v2::decode_metadata(value)?;
            return Ok(EnvelopeRead {
                sealing: Sealing::of_v2_header(&header, Placement::Metadata)?,
                bytes: len_u64(value.len()),
                requests: 1,
            });
        }
        // A first range that holds every one-recipient header (ML-KEM-1024's is 1,745
        // bytes); a longer header is fetched by a second range, so at most this many bytes
        // past the header are ever sent.
        const FIRST: u64 = 4096;
        let size = size.unwrap_or(0);
        let mut header: Vec<u8> = Vec::new();
        let mut want = 8;
        let mut requests = 1;
        while header.len() < want {
            let first = len_u64(header.len());
            if first >= size {
                return Err(envelope::Error::Header(format!(
                    "object.v2 ends after {first} bytes, inside its header"
                ))
                .into());
            }
            let last = if first == 0 { FIRST } else { len_u64(want) }
                .min(size)
                .max(first + 1)
                - 1;
            let r = self
                .s3
                .get_object_range(&self.bucket, &object, first, last)
                .await;
            requests += 1;
            let body = self.committed(r, key, version, name)?;
            let got = body
                .collect_at_most(usize::try_from(last - first + 1).unwrap_or(usize::MAX))
                .await?;
            if got.is_empty() {
                return Err(envelope::Error::Header(format!(
                    "object.v2 ends after {first} bytes, inside its header"
                ))
                .into());
            }
            header.extend_from_slice(&got);
            if want == 8 && header.len() >= 8 {
                let start: [u8; 8] = header[..8].try_into().unwrap_or_default();
                want = v2::announced_len(&start)?;
            }
        }
        header.truncate(want);
        Ok(EnvelopeRead {
            bytes: len_u64(header.len()),
            sealing: Sealing::of_v2_header(&header, Placement::Prefix)?,
            requests,
        })
    }

    /// Reads a version back and checks it is the one written: the stored manifest equals
    /// `manifest` byte for byte and `data.enc` has `ciphertext_size` bytes.
    pub async fn verify(
        &self,
        key: &str,
        version: &str,
        manifest: &[u8],
        ciphertext_size: u64,
    ) -> Result<()> {
        let fail = |reason: String| Error::Verify {
            bucket: self.bucket.clone(),
            key: key.into(),
            version: version.into(),
            reason,
        };
        let stored = self
            .read_manifest(key, version, &mut OpStats::default())
            .await?;
        if stored.as_ref() != manifest {
            return Err(fail(
                "the stored manifest differs from the one written".into(),
            ));
        }
        let data_key = layout::data_key(key, version);
        let size = self.s3.head_object(&self.bucket, &data_key).await?;
        if size != Some(ciphertext_size) {
            return Err(fail(format!(
                "data.enc has {size:?} bytes, {ciphertext_size} written"
            )));
        }
        Ok(())
    }

    /// Reads a v2 version back and checks it is the one written: `object.v2` has `size`
    /// bytes and its header (in the metadata entry or at the body's start) equals `header`
    /// byte for byte. One GetObject, of which at most the header's bytes are read.
    pub async fn verify_v2(
        &self,
        key: &str,
        version: &str,
        header: &[u8],
        size: u64,
    ) -> Result<()> {
        let fail = |reason: String| Error::Verify {
            bucket: self.bucket.clone(),
            key: key.into(),
            version: version.into(),
            reason,
        };
        let body = self
            .s3
            .get_object(&self.bucket, &layout::object_v2_key(key, version))
            .await?;
        if body.content_length != Some(size) {
            return Err(fail(format!(
                "object.v2 has {:?} bytes, {size} written",
                body.content_length
            )));
        }
        let mut stream = Stream {
            body,
            pending: Bytes::new(),
        };
        let stored = match stream.v2_header().await {
            Ok((stored, _)) => stored,
            Err(Error::Envelope(e)) => return Err(fail(format!("the stored v2 header: {e}"))),
            Err(e) => return Err(e),
        };
        if stored != header {
            return Err(fail(
                "the stored v2 header differs from the one written".into(),
            ));
        }
        Ok(())
    }

    /// Deletes a version: v1's manifest first (the version disappears at once), then its
    /// data; v2's one object. Fails with [`Error::NotCommitted`] if none of them exists.
    pub async fn delete_version(&self, key: &str, version: &str) -> Result<()> {
        envelope::ObjectId::new(&self.tenant, &self.bucket, key, version)?;
        let mut found = Vec::new();
        for k in [
            layout::manifest_key(key, version),
            layout::data_key(key, version),
            layout::object_v2_key(key, version),
        ] {
            match self.s3.head_object(&self.bucket, &k).await {
                Ok(_) => found.push(k),
                Err(err) => {
                    if err.s3_class() != Some(S3Class::NotFound) {
                        return Err(err);
                    }
                }
            }
        }
        if found.is_empty() {
            return Err(self.not_committed(key, version, "manifest.json or object.v2"));
        }
        for k in &found {
            self.s3.delete_object(&self.bucket, k).await?;
        }
        Ok(())
    }

    /// Deletes many committed versions of `format` with batched DeleteObjects calls (up to
    /// 1,000 keys each): in v1 every manifest first, so no version stays readable with its
    /// data gone, then the data; in v2 the objects. Returns how many versions were deleted and the keys that could not be
    /// (the run engine's cleanup, outside the timed window).
    pub async fn delete_many(
        &self,
        versions: &[(String, String)],
        format: Format,
    ) -> Result<(u64, Vec<String>)> {
        let mut failed = Vec::new();
        let passes: &[fn(&str, &str) -> String] = match format {
            Format::V1 => &[layout::manifest_key, layout::data_key],
            Format::V2 => &[layout::object_v2_key],
        };
        for name in passes {
            let keys: Vec<String> = versions.iter().map(|(k, v)| name(k, v)).collect();
            for batch in keys.chunks(1000) {
                failed.extend(self.s3.delete_objects(&self.bucket, batch).await?);
            }
        }
        let deleted = versions.len().saturating_sub(failed.len()) as u64;
        Ok((deleted, failed))
    }

    /// Garbage-collects uncommitted data under `prefix` (a key prefix; `""` for the whole
    /// bucket): `data.enc` without a manifest and multipart uploads of `data.enc` or
    /// `object.v2`, all older than `grace` by the server's clock (FORMAT-v2.md §2: a v2
    /// version has no other partial state, and `object.v2` is never deleted). With
    /// `dry_run` nothing is deleted. Objects that are not in pqbench's layout are never
    /// touched.
    pub async fn gc(&self, prefix: &str, grace: Duration, dry_run: bool) -> Result<GcReport> {
        let now = SystemTime::now();
        let old = |t: Option<SystemTime>| {
            t.is_none_or(|t| now.duration_since(t).unwrap_or_default() >= grace)
        };
        let mut report = GcReport::default();
        for ((key, version), e) in self.scan(prefix).await? {
            match (e.data, e.manifest) {
                (Some((_, at)), None) if old(at) => {
                    let k = layout::data_key(&key, &version);
                    if !dry_run {
                        self.s3.delete_object(&self.bucket, &k).await?;
                    }
                    report.deleted_data.push(k);
                }
                (Some(_), None) => report.kept_young += 1,
                (None, Some(_)) => report
                    .broken_versions
                    .push(layout::manifest_key(&key, &version)),
                _ => {}
            }
            if let Some((format, _, committed_at)) = e.committed()
                && layout::is_future_dated(&version, committed_at)
            {
                report.future_dated.push(match format {
                    Format::V1 => layout::manifest_key(&key, &version),
                    Format::V2 => layout::object_v2_key(&key, &version),
                });
            }
        }

        let mut markers = None;
        loop {
            let Some(page) = self.s3.list_uploads(&self.bucket, prefix, markers).await? else {
                return Ok(report);
            };
            report.uploads_listed = true;
            for u in page.uploads {
                // Uploads of data.enc (v1) and of object.v2 (v2: invisible until Complete).
                if !matches!(
                    layout::parse_key(&u.key).map(|l| l.part),
                    Some(Part::Data | Part::ObjectV2)
                ) {
                    continue;
                }
                if !old(u.initiated) {
                    report.kept_young += 1;
                    continue;
                }
                if !dry_run {
                    self.s3
                        .abort_multipart(&self.bucket, &u.key, &u.upload_id)
                        .await?;
                }
                report.aborted_uploads.push((u.key, u.upload_id));
            }
            match page.next {
                Some(next) => markers = Some(next),
                None => break,
            }
        }
        Ok(report)
    }
}

/// A writer of either format, for callers that choose the format at run time.
pub enum Writer {
    /// Format v1 ([`Store::put`]).
    V1(Sender),
    /// Format v2 ([`Store::put_v2`]).
    V2(v2::Sender),
}

/// A reader of either format.
pub enum Reader {
    /// Format v1 ([`Store::get`]).
    V1(Receiver),
    /// Format v2 ([`Store::get_v2`]).
    V2(v2::Receiver),
    /// Format v1 with the recipient's secret key in a key service ([`Store::get_remote`]).
    Remote {
        /// The reader ([`Receiver::remote`]).
        receiver: Receiver,
        /// The key in the service.
        key: kms::RemoteKey,
    },
    /// Format v2 with the recipient's secret key in a key service
    /// ([`Store::get_v2_remote`]).
    RemoteV2 {
        /// The reader.
        receiver: v2::RemoteReceiver,
        /// The key in the service.
        key: kms::RemoteKey,
    },
}

/// The key of a v2 read: local, or in a key service.
enum V2Key<'a> {
    Local(&'a v2::Receiver),
    Remote(&'a v2::RemoteReceiver, &'a kms::RemoteKey),
}

impl Reader {
    /// The format it reads.
    pub fn format(&self) -> Format {
        match self {
            Self::V1(_) | Self::Remote { .. } => Format::V1,
            Self::V2(_) | Self::RemoteV2 { .. } => Format::V2,
        }
    }
}

impl Writer {
    /// The format it writes.
    pub fn format(&self) -> Format {
        match self {
            Self::V1(_) => Format::V1,
            Self::V2(_) => Format::V2,
        }
    }
}

impl Store {
    /// [`Store::put`] or [`Store::put_v2`], as `writer` says.
    pub async fn put_with<R>(
        &self,
        writer: &Writer,
        key: &str,
        size: u64,
        src: R,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<PutOutcome>
    where
        R: AsyncRead + Unpin + Send,
    {
        match writer {
            Writer::V1(s) => self.put(s, key, size, src, on).await,
            Writer::V2(s) => self.put_v2(s, key, size, src, on).await,
        }
    }

    /// [`Store::get`] or [`Store::get_v2`], as `reader` says.
    pub async fn get_with<W>(
        &self,
        reader: &Reader,
        key: &str,
        version: &str,
        sink: W,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<GetOutcome>
    where
        W: AsyncWrite + Unpin + Send,
    {
        match reader {
            Reader::V1(r) => self.get(r, key, version, sink, on).await,
            Reader::V2(r) => self.get_v2(r, key, version, sink, on).await,
            Reader::Remote { receiver, key: k } => {
                self.get_remote(receiver, k, key, version, sink, on).await
            }
            Reader::RemoteV2 { receiver, key: k } => {
                self.get_v2_remote(receiver, k, key, version, sink, on)
                    .await
            }
        }
    }
}

/// The full header name of v2's metadata entry (FORMAT-v2.md §2).
const META_HEADER: &str = "x-amz-meta-pqbench-v2";

/// Where an upload goes: the object key, its total size, the bytes before the first chunk
/// (v2's header in placement prefix) and its user metadata (v2's header in placement
/// metadata).
struct Target<'a> {
    key: &'a str,
    total: u64,
    head: &'a [u8],
    meta: &'a [(&'static str, String)],
}

/// What the store needs of a chunk sealer, v1's or v2's.
trait ChunkSeal {
    fn next_chunk_len(&self) -> Option<usize>;
    fn seal_chunk(&mut self, buf: &mut Vec<u8>) -> envelope::Result<()>;
}

impl ChunkSeal for envelope::Sealer {
    fn next_chunk_len(&self) -> Option<usize> {
        envelope::Sealer::next_chunk_len(self)
    }
    fn seal_chunk(&mut self, buf: &mut Vec<u8>) -> envelope::Result<()> {
        envelope::Sealer::seal_chunk(self, buf)
    }
}

impl ChunkSeal for v2::Sealer {
    fn next_chunk_len(&self) -> Option<usize> {
        v2::Sealer::next_chunk_len(self)
    }
    fn seal_chunk(&mut self, buf: &mut Vec<u8>) -> envelope::Result<()> {
        v2::Sealer::seal_chunk(self, buf)
    }
}

/// What the store needs of a chunk opener, v1's or v2's.
trait ChunkOpen {
    fn next_chunk_len(&self) -> Option<usize>;
    fn open_chunk(&mut self, buf: &mut Vec<u8>) -> envelope::Result<()>;
}

impl ChunkOpen for envelope::Opener {
    fn next_chunk_len(&self) -> Option<usize> {
        envelope::Opener::next_chunk_len(self)
    }
    fn open_chunk(&mut self, buf: &mut Vec<u8>) -> envelope::Result<()> {
        envelope::Opener::open_chunk(self, buf)
    }
}

impl ChunkOpen for v2::Opener {
    fn next_chunk_len(&self) -> Option<usize> {
        v2::Opener::next_chunk_len(self)
    }
    fn open_chunk(&mut self, buf: &mut Vec<u8>) -> envelope::Result<()> {
        v2::Opener::open_chunk(self, buf)
    }
}

/// A re-wrap's chunks, passed through as they are: the next chunk's ciphertext length
/// (every chunk but the last is full).
struct Unchanged {
    left: u64,
}

impl ChunkSeal for Unchanged {
    fn next_chunk_len(&self) -> Option<usize> {
        let full = u64::from(v2::CHUNK_SIZE) + len_u64(envelope::TAG_LEN);
        (self.left > 0).then(|| usize::try_from(self.left.min(full)).unwrap_or(usize::MAX))
    }
    fn seal_chunk(&mut self, buf: &mut Vec<u8>) -> envelope::Result<()> {
        self.left -= len_u64(buf.len());
        Ok(())
    }
}

/// A response body read in exact amounts.
struct Stream {
    body: Body,
    pending: Bytes,
}

impl Stream {
    /// True if the body has bytes left (reading the next frame if none is pending).
    async fn has_more(&mut self) -> Result<bool> {
        while self.pending.is_empty() {
            match self.body.next().await? {
                Some(b) => self.pending = b,
                None => break,
            }
        }
        Ok(!self.pending.is_empty())
    }

    /// Appends to `buf` until it holds `want` bytes or the body ends.
    async fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> Result<()> {
        while buf.len() < want && self.has_more().await? {
            let n = (want - buf.len()).min(self.pending.len());
            buf.extend_from_slice(&self.pending.split_to(n));
        }
        Ok(())
    }

    /// The rest of the body as a reader, fed by a task of its own (which ends when the
    /// body does, or the reader is dropped, and says whether reading the body failed).
    fn into_reader(mut self) -> (tokio::io::DuplexStream, tokio::task::JoinHandle<Result<()>>) {
        let (mut w, r) = tokio::io::duplex(1 << 20);
        let feed = tokio::spawn(async move {
            while self.has_more().await? {
                let b = std::mem::take(&mut self.pending);
                if w.write_all(&b).await.is_err() {
                    break; // the reader is gone
                }
            }
            Ok(())
        });
        (r, feed)
    }

    /// A v2 object's header and where it was found (FORMAT-v2.md §2, §4 check 1): the
    /// metadata entry, decoded, or else the body's first `header_len` bytes.
    async fn v2_header(&mut self) -> Result<(Vec<u8>, Placement)> {
        if let Some(value) = self.body.metadata.get(v2::METADATA_KEY) {
            return Ok((v2::decode_metadata(value)?, Placement::Metadata));
        }
        let mut header = Vec::new();
        self.fill(&mut header, 8).await?;
        let start: [u8; 8] = header
            .as_slice()
            .try_into()
            .map_err(|_| envelope::Error::Header("the object is shorter than a header".into()))?;
        let n = v2::announced_len(&start)?;
        self.fill(&mut header, n).await?;
        Ok((header, Placement::Prefix))
    }
}

/// Has the key service answer `pending`'s key request (none on a cache hit) and completes
/// the opening with the answer. The wait is claimed by the next envelope call's interval
/// and attributed to key establishment there (add_envelope subtracts it from the object
/// calls), as a local key recovery's time is.
async fn complete_remote<P>(st: &mut OpStats, k: &kms::RemoteKey, pending: P) -> Result<P::Opener>
where
    P: envelope::AwaitingKey + Send,
{
    let t = std::time::Instant::now();
    let got = k.recover(pending.key_request()?).await?;
    let took = t.elapsed();
    Ok(cpu(st, Call::Object, || {
        pending.complete(&got.secret, took)
    })?)
}

/// Reads, authenticates and writes to `sink` every chunk `opener` expects from `stream`
/// (`total` bytes in all); refuses bytes after the final chunk. Returns the plaintext size.
async fn read_chunks<O, W>(
    opener: &mut O,
    mut stream: Stream,
    total: u64,
    st: &mut OpStats,
    sink: &mut W,
    on: &mut (dyn FnMut(Event) + Send),
) -> Result<u64>
where
    O: ChunkOpen + Send,
    W: AsyncWrite + Unpin + Send,
{
    let mut buf = Vec::new();
    let mut done = 0u64;
    let mut plaintext_size = 0u64;
    while let Some(want) = opener.next_chunk_len() {
        // Receiving the chunk, copy into the buffer included, is storage time.
        buf.clear();
        stream.fill(&mut buf, want).await?;
        st.storage_lap();
        st.bytes_received += len_u64(buf.len());
        // A short chunk (truncated data) fails here, as an authentication failure.
        cpu(st, Call::Chunk, || opener.open_chunk(&mut buf))?;
        done += len_u64(want);
        plaintext_size += len_u64(buf.len());
        sink.write_all(&buf).await.map_err(Error::Sink)?;
        on(Event::Received { done, total });
        st.outside();
    }
    // Bytes after the final chunk (an extended object) fail authentication too.
    if stream.has_more().await? {
        return Err(envelope::Error::Decrypt.into());
    }
    // Releasing the response (its connection back to the pool) is storage work too.
    drop(stream);
    st.storage_lap();
    Ok(plaintext_size)
}

/// Reads and seals the next chunk into `chunk`; `false` when every chunk is sealed.
async fn seal_next<S, R>(
    sealer: &mut S,
    src: &mut R,
    chunk: &mut Vec<u8>,
    st: &mut OpStats,
) -> Result<bool>
where
    S: ChunkSeal,
    R: AsyncRead + Unpin + Send,
{
    let Some(n) = sealer.next_chunk_len() else {
        return Ok(false);
    };
    // The plaintext is read straight into spare capacity (no zeroing first), with room for
    // the tag, so that sealing in place never reallocates. Reading the caller's source is
    // outside every stage (unaccounted time), and so is what preceded it since the last
    // step: copying the previous sealed chunk into the request body.
    chunk.clear();
    chunk.reserve_exact(n + envelope::TAG_LEN);
    let got = (&mut *src)
        .take(len_u64(n))
        .read_to_end(chunk)
        .await
        .map_err(Error::Source)?;
    st.outside();
    if got != n {
        return Err(Error::Source(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the source ended before the announced plaintext size",
        )));
    }
    cpu(st, Call::Chunk, || sealer.seal_chunk(chunk))?;
    Ok(true)
}
