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
use envelope::{ObjectId, Receiver, Sender, SessionInfo};
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
    /// Size of `data.enc` (`None`: the data is missing, the version is broken).
    pub data_size: Option<u64>,
    /// Size of `manifest.json`.
    pub manifest_size: u64,
    /// When the manifest was stored (server clock).
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

/// One key of a listing: its committed versions (oldest first) and uncommitted ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyListing {
    /// The logical object key.
    pub key: String,
    /// Committed versions, in UUIDv7 order.
    pub versions: Vec<VersionInfo>,
    /// `data.enc` objects without a manifest.
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

    fn not_committed(&self, key: &str, version: &str) -> Error {
        Error::NotCommitted {
            bucket: self.bucket.clone(),
            key: key.into(),
            version: version.into(),
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
        let mut chunk = Vec::new();

        if total <= MULTIPART_THRESHOLD {
            let mut body = Vec::new();
            while seal_next(&mut sealer, &mut src, &mut chunk, &mut st).await? {
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
                &mut st,
                "PutObject",
                self.s3
                    .put_object(&self.bucket, &data_key, Bytes::from(body), None),
            )
            .await?;
            on(Event::Sent { done: total, total });
            st.outside();
        } else {
            self.put_multipart(&mut sealer, &mut src, &data_key, total, &mut st, on)
                .await?;
        }
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

    async fn put_multipart<R>(
        &self,
        sealer: &mut envelope::Sealer,
        src: &mut R,
        data_key: &str,
        total: u64,
        st: &mut OpStats,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<()>
    where
        R: AsyncRead + Unpin + Send,
    {
        let upload_id = timed(
            st,
            "CreateMultipartUpload",
            self.s3.create_multipart(&self.bucket, data_key),
        )
        .await?;

        let result = self
            .upload_parts(sealer, src, data_key, &upload_id, total, st, on)
            .await;
        if result.is_err() {
            // Best effort; abandoned uploads are collected by gc otherwise.
            let _ = self
                .s3
                .abort_multipart(&self.bucket, data_key, &upload_id)
                .await;
        }
        result
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one private step of put_multipart"
    )]
    async fn upload_parts<R>(
        &self,
        sealer: &mut envelope::Sealer,
        src: &mut R,
        data_key: &str,
        upload_id: &str,
        total: u64,
        st: &mut OpStats,
        on: &mut (dyn FnMut(Event) + Send),
    ) -> Result<()>
    where
        R: AsyncRead + Unpin + Send,
    {
        let part_size = usize::try_from(PART_SIZE).unwrap_or(usize::MAX);
        let mut buf = BytesMut::with_capacity(part_size.saturating_mul(2));
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
                        .upload_part(&self.bucket, data_key, upload_id, number, body),
                )
                .await?;
                parts.push((number, e_tag));
                done += len_u64(take);
                on(Event::Sent { done, total });
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
                .complete_multipart(&self.bucket, data_key, upload_id, &parts),
        )
        .await
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
        let mut opener = cpu(&mut st, Call::Object, || receiver.open(&id, &manifest))?;
        let total = opener.ciphertext_size();

        let data_key = layout::data_key(key, version);
        let mut body = timed(
            &mut st,
            "GetObject",
            self.s3.get_object(&self.bucket, &data_key),
        )
        .await?;

        let mut buf = Vec::new();
        let mut pending = Bytes::new();
        let mut done = 0u64;
        let mut plaintext_size = 0u64;
        while let Some(want) = opener.next_chunk_len() {
            // Receiving the chunk, copy into the buffer included, is storage time.
            buf.clear();
            while buf.len() < want {
                if pending.is_empty() {
                    match body.next().await? {
                        Some(b) => pending = b,
                        None => break,
                    }
                }
                let n = (want - buf.len()).min(pending.len());
                buf.extend_from_slice(&pending.split_to(n));
            }
            st.storage_lap();
            st.bytes_received += len_u64(buf.len());
            // A short chunk (truncated data) fails here, as an authentication failure.
            cpu(&mut st, Call::Chunk, || opener.open_chunk(&mut buf))?;
            done += len_u64(want);
            plaintext_size += len_u64(buf.len());
            sink.write_all(&buf).await.map_err(Error::Sink)?;
            on(Event::Received { done, total });
            st.outside();
        }
        // Bytes after the final chunk (an extended object) fail authentication too.
        while pending.is_empty() {
            match body.next().await? {
                Some(b) => pending = b,
                None => break,
            }
        }
        if !pending.is_empty() {
            return Err(envelope::Error::Decrypt.into());
        }
        // Releasing the response (its connection back to the pool) is storage work too.
        drop(body);
        st.storage_lap();
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

    /// Reads `manifest.json` of a version, refusing it as soon as it is known to be longer
    /// than [`envelope::MAX_MANIFEST_LEN`]: from its Content-Length before any body byte,
    /// else after at most one body frame past the limit (a planted 400 MiB manifest never
    /// reaches memory; the connection is dropped with the rest unread).
    async fn read_manifest(&self, key: &str, version: &str, st: &mut OpStats) -> Result<Bytes> {
        let manifest_key = layout::manifest_key(key, version);
        let limit = len_u64(envelope::MAX_MANIFEST_LEN);
        let r = timed(st, "GetObject", async {
            let mut body: Body = match self.s3.get_object(&self.bucket, &manifest_key).await {
                Ok(body) => body,
                Err(err) => {
                    return Err(if err.s3_class() == Some(S3Class::NotFound) {
                        self.not_committed(key, version)
                    } else {
                        err
                    });
                }
            };
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
        let mut out: BTreeMap<(String, String), Entry> = BTreeMap::new();
        let mut token = None;
        loop {
            let page = self.s3.list_objects(&self.bucket, prefix, token).await?;
            for o in page.objects {
                let Some(lk) = layout::parse_key(&o.key) else {
                    continue;
                };
                let e = out
                    .entry((lk.key.to_owned(), lk.version.to_owned()))
                    .or_default();
                let v = Some((o.size, o.last_modified));
                match lk.part {
                    Part::Data => e.data = v,
                    Part::Manifest => e.manifest = v,
                }
            }
            match page.next {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        Ok(out)
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
        let mut out: Vec<KeyListing> = Vec::new();
        for ((key, version), e) in self.scan(prefix).await? {
            if out.last().map(|l| &l.key) != Some(&key) {
                out.push(KeyListing {
                    key: key.clone(),
                    versions: Vec::new(),
                    uncommitted: 0,
                });
            }
            let Some(last) = out.last_mut() else { continue };
            match e.manifest {
                Some((manifest_size, committed_at)) => last.versions.push(VersionInfo {
                    future_dated: layout::is_future_dated(&version, committed_at),
                    version,
                    data_size: e.data.map(|d| d.0),
                    manifest_size,
                    committed_at,
                }),
                None => last.uncommitted += 1,
            }
        }
        Ok(out)
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

    /// Deletes a version: the manifest first (the version disappears at once), then the
    /// data. Fails with [`Error::NotCommitted`] if neither exists.
    pub async fn delete_version(&self, key: &str, version: &str) -> Result<()> {
        envelope::ObjectId::new(&self.tenant, &self.bucket, key, version)?;
        let manifest_key = layout::manifest_key(key, version);
        let data_key = layout::data_key(key, version);
        let mut found = false;
        for k in [&manifest_key, &data_key] {
            match self.s3.head_object(&self.bucket, k).await {
                Ok(_) => found = true,
                Err(err) => {
                    if err.s3_class() != Some(S3Class::NotFound) {
                        return Err(err);
                    }
                }
            }
        }
        if !found {
            return Err(self.not_committed(key, version));
        }
        for k in [&manifest_key, &data_key] {
            self.s3.delete_object(&self.bucket, k).await?;
        }
        Ok(())
    }

    /// Deletes many committed versions with batched DeleteObjects calls (up to 1,000 keys
    /// each): every manifest first, so no version stays readable with its data gone, then
    /// the data. Returns how many versions were deleted and the keys that could not be
    /// (the run engine's cleanup, outside the timed window).
    pub async fn delete_many(&self, versions: &[(String, String)]) -> Result<(u64, Vec<String>)> {
        let mut failed = Vec::new();
        for pass in 0..2 {
            let keys: Vec<String> = versions
                .iter()
                .map(|(k, v)| {
                    if pass == 0 {
                        layout::manifest_key(k, v)
                    } else {
                        layout::data_key(k, v)
                    }
                })
                .collect();
            for batch in keys.chunks(1000) {
                failed.extend(self.s3.delete_objects(&self.bucket, batch).await?);
            }
        }
        let deleted = versions.len().saturating_sub(failed.len()) as u64;
        Ok((deleted, failed))
    }

    /// Garbage-collects uncommitted data under `prefix` (a key prefix; `""` for the whole
    /// bucket): `data.enc` without a manifest and multipart uploads of `data.enc`, both
    /// older than `grace` by the server's clock. With `dry_run` nothing is deleted.
    /// Objects that are not in pqbench's layout are never touched.
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
            if let Some((_, committed_at)) = e.manifest
                && layout::is_future_dated(&version, committed_at)
            {
                report
                    .future_dated
                    .push(layout::manifest_key(&key, &version));
            }
        }

        let mut markers = None;
        loop {
            let Some(page) = self.s3.list_uploads(&self.bucket, prefix, markers).await? else {
                return Ok(report);
            };
            report.uploads_listed = true;
            for u in page.uploads {
                if layout::parse_key(&u.key).map(|l| l.part) != Some(Part::Data) {
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

/// Reads and seals the next chunk into `chunk`; `false` when every chunk is sealed.
async fn seal_next<R>(
    sealer: &mut envelope::Sealer,
    src: &mut R,
    chunk: &mut Vec<u8>,
    st: &mut OpStats,
) -> Result<bool>
where
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
