//! The embedded S3 server: `s3s` + `s3s-fs` (pinned `=0.14.1`, the last release that builds
//! on rustc 1.95) served by hyper on `127.0.0.1`, with generated credentials (SigV4 is
//! checked) and `TCP_NODELAY` on every accepted socket (without it, small keep-alive GETs
//! stall ~40 ms on Nagle + delayed ACK; DESIGN.md "Real components").
//!
//! The server runs on its own thread with its own Tokio runtime, so that [`EmbeddedS3::stop`]
//! is synchronous and can be called from anywhere (a test stopping the server in the middle
//! of an upload, a signal handler). Stopping closes every connection at once: requests in
//! flight fail, as they would if the server process died.
//!
//! `s3s-fs` does not implement ListMultipartUploads; [`Fs`] adds it by reading the upload
//! records `s3s-fs` keeps in its root directory, so that `gc` can find abandoned uploads here
//! as on any other server.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::mpsc;
use std::thread::JoinHandle;

use base64::Engine as _;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::dto::*;
use s3s::{S3, S3Request, S3Response, S3Result};
use tokio::sync::oneshot;
use zeroize::Zeroizing;

use crate::{Error, Result, S3Settings};

/// A running embedded S3 server. Stops when [`EmbeddedS3::stop`] is called or it is dropped.
pub struct EmbeddedS3 {
    endpoint: String,
    access_key: String,
    secret_key: Zeroizing<String>,
    dir: PathBuf,
    stop_tx: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for EmbeddedS3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedS3")
            .field("endpoint", &self.endpoint)
            .field("access_key", &self.access_key)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b).map_err(|e| Error::Server(format!("no randomness: {e}")))?;
    Ok(hex::encode(b))
}

impl EmbeddedS3 {
    /// Starts a server storing its data in `dir` (created if missing), listening on
    /// `127.0.0.1:port` (`0`: any free port), with freshly generated credentials.
    pub fn start(dir: &Path, port: u16) -> Result<Self> {
        Self::start_generated(dir, SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// Starts a server on `addr` with freshly generated credentials.
    pub fn start_generated(dir: &Path, addr: SocketAddr) -> Result<Self> {
        let access_key = format!("PQ{}", random_hex(9)?.to_uppercase());
        let secret_key = Zeroizing::new(random_hex(20)?);
        Self::start_with(dir, addr, &access_key, &secret_key)
    }

    /// Starts a server on `addr` with the given credentials.
    pub fn start_with(
        dir: &Path,
        addr: SocketAddr,
        access_key: &str,
        secret_key: &str,
    ) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Server(format!("cannot create {}: {e}", dir.display())))?;
        let dir = dir
            .canonicalize()
            .map_err(|e| Error::Server(format!("{}: {e}", dir.display())))?;
        let fs = s3s_fs::FileSystem::new(&dir)
            .map_err(|e| Error::Server(format!("{}: {e:?}", dir.display())))?;
        let service = {
            let mut b = s3s::service::S3ServiceBuilder::new(Fs {
                inner: std::sync::Arc::new(fs),
                root: dir.clone(),
            });
            b.set_auth(s3s::auth::SimpleAuth::from_single(
                access_key,
                s3s::auth::SecretKey::from(secret_key),
            ));
            b.build()
        };

        let (ready_tx, ready_rx) = mpsc::channel::<Result<SocketAddr>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("pqbench-s3".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("pqbench-s3-rt")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(Error::Server(format!("runtime: {e}"))));
                        return;
                    }
                };
                rt.block_on(serve(addr, service, ready_tx, stop_rx));
                // Dropping the runtime cancels every connection task: in-flight requests
                // fail as if the process had died.
                rt.shutdown_background();
            })
            .map_err(|e| Error::Server(format!("cannot spawn the server thread: {e}")))?;
        let bound = ready_rx
            .recv()
            .map_err(|_| Error::Server("the server thread ended before listening".into()))??;
        Ok(Self {
            endpoint: format!("http://{bound}"),
            access_key: access_key.into(),
            secret_key: Zeroizing::new(secret_key.into()),
            dir,
            stop_tx: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The access key id.
    pub fn access_key(&self) -> &str {
        &self.access_key
    }

    /// The secret access key.
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// The data directory (buckets are its subdirectories).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Client settings for this server.
    pub fn settings(&self) -> S3Settings {
        S3Settings::new(&self.endpoint, &self.access_key, &self.secret_key)
    }

    /// Creates a bucket (a directory in the data directory).
    pub fn create_bucket(&self, name: &str) -> Result<()> {
        let ok = (3..=63).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !name.starts_with(['-', '.'])
            && !name.ends_with(['-', '.']);
        if !ok {
            return Err(Error::Settings(format!(
                "bucket name {name:?} is not a valid S3 bucket name (3-63 of a-z 0-9 . -)"
            )));
        }
        std::fs::create_dir_all(self.dir.join(name))
            .map_err(|e| Error::Server(format!("cannot create bucket {name}: {e}")))
    }

    /// Stops the server: stops accepting, closes every connection, joins the thread.
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

impl Drop for EmbeddedS3 {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn serve(
    addr: SocketAddr,
    service: s3s::service::S3Service,
    ready: mpsc::Sender<Result<SocketAddr>>,
    mut stop: oneshot::Receiver<()>,
) {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            let _ = ready.send(Err(Error::Server(format!("cannot listen on {addr}: {e}"))));
            return;
        }
    };
    match listener.local_addr() {
        Ok(a) => {
            let _ = ready.send(Ok(a));
        }
        Err(e) => {
            let _ = ready.send(Err(Error::Server(format!("local address: {e}"))));
            return;
        }
    }
    let http = ConnBuilder::new(TokioExecutor::new());
    loop {
        tokio::select! {
            _ = &mut stop => break,
            r = listener.accept() => {
                let Ok((socket, _)) = r else { continue };
                // Without it, small keep-alive responses wait for the client's delayed ACK.
                let _ = socket.set_nodelay(true);
                let conn = http
                    .serve_connection(TokioIo::new(socket), service.clone())
                    .into_owned();
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
        }
    }
}

/// `s3s-fs` plus ListMultipartUploads, and writes that finish once begun.
struct Fs {
    inner: std::sync::Arc<s3s_fs::FileSystem>,
    root: PathBuf,
}

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = S3Result<S3Response<T>>> + Send + 'a>>;

/// Forwards S3 operations to `s3s-fs`; an operation marked `if bucket_exists` only once
/// its bucket exists: `s3s-fs` makes a missing bucket's directory on a write (and answers a
/// read with NoSuchKey), where S3 answers NoSuchBucket. A client that never created its
/// bucket must fail here as it would on any other server.
macro_rules! forward {
    ($($name:ident: $input:ty => $output:ty $(, if $check:ident)?;)*) => {
        $(
            fn $name<'life0, 'async_trait>(
                &'life0 self,
                req: S3Request<$input>,
            ) -> BoxFut<'async_trait, $output>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                Box::pin(async move {
                    $(self.$check(&req.input.bucket)?;)?
                    self.inner.$name(req).await
                })
            }
        )*
    };
}

impl Fs {
    /// `op` on `s3s-fs`, in a task of its own that finishes even when the request's
    /// future is dropped (its client went away), once `bucket` is known to exist.
    fn to_the_end<'a, T, F>(
        &'a self,
        bucket: &str,
        op: impl FnOnce(std::sync::Arc<s3s_fs::FileSystem>) -> F + Send + 'static,
    ) -> BoxFut<'a, T>
    where
        T: Send + 'static,
        F: Future<Output = S3Result<S3Response<T>>> + Send + 'static,
    {
        let checked = self.bucket_exists(bucket);
        let fs = std::sync::Arc::clone(&self.inner);
        Box::pin(async move {
            checked?;
            tokio::spawn(op(fs))
                .await
                .map_err(|e| s3s::s3_error!(InternalError, "the write's task failed: {e}"))?
        })
    }

    /// NoSuchBucket unless `bucket` is a bucket (a directory of the data directory).
    fn bucket_exists(&self, bucket: &str) -> S3Result<()> {
        let name_ok =
            !bucket.is_empty() && !bucket.contains('/') && bucket != "." && bucket != "..";
        if name_ok && self.root.join(bucket).is_dir() {
            Ok(())
        } else {
            Err(s3s::s3_error!(NoSuchBucket, "the bucket does not exist"))
        }
    }
}

impl S3 for Fs {
    forward! {
        create_bucket: CreateBucketInput => CreateBucketOutput;
        delete_bucket: DeleteBucketInput => DeleteBucketOutput;
        head_bucket: HeadBucketInput => HeadBucketOutput;
        list_buckets: ListBucketsInput => ListBucketsOutput;
        get_bucket_location: GetBucketLocationInput => GetBucketLocationOutput;
        get_object: GetObjectInput => GetObjectOutput, if bucket_exists;
        head_object: HeadObjectInput => HeadObjectOutput, if bucket_exists;
        delete_object: DeleteObjectInput => DeleteObjectOutput, if bucket_exists;
        delete_objects: DeleteObjectsInput => DeleteObjectsOutput, if bucket_exists;
        list_objects: ListObjectsInput => ListObjectsOutput, if bucket_exists;
        list_objects_v2: ListObjectsV2Input => ListObjectsV2Output, if bucket_exists;
        create_multipart_upload: CreateMultipartUploadInput => CreateMultipartUploadOutput, if bucket_exists;
        upload_part: UploadPartInput => UploadPartOutput, if bucket_exists;
        abort_multipart_upload: AbortMultipartUploadInput => AbortMultipartUploadOutput, if bucket_exists;
        list_parts: ListPartsInput => ListPartsOutput, if bucket_exists;
    }

    // `s3s-fs` commits an object in two steps, the data file renamed into place and then its
    // attributes (the user metadata) written beside it. Hyper drops a request's future when
    // its client goes away; dropped between the two steps, the object stayed without its
    // metadata for ever (a v2 header in metadata lost, the version unreadable: found by
    // `tests/migrate.rs`, whose SIGKILLs land mid-PUT). The two commits run as tasks of
    // their own, to the end, whatever the connection does; so does CopyObject, which copies
    // the data file and then writes the replaced metadata (a re-wrap's new header).
    fn put_object<'life0, 'async_trait>(
        &'life0 self,
        req: S3Request<PutObjectInput>,
    ) -> BoxFut<'async_trait, PutObjectOutput>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let bucket = req.input.bucket.clone();
        self.to_the_end(&bucket, move |fs| async move { fs.put_object(req).await })
    }

    fn copy_object<'life0, 'async_trait>(
        &'life0 self,
        req: S3Request<CopyObjectInput>,
    ) -> BoxFut<'async_trait, CopyObjectOutput>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let bucket = req.input.bucket.clone();
        self.to_the_end(&bucket, move |fs| async move { fs.copy_object(req).await })
    }

    fn complete_multipart_upload<'life0, 'async_trait>(
        &'life0 self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> BoxFut<'async_trait, CompleteMultipartUploadOutput>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let bucket = req.input.bucket.clone();
        self.to_the_end(&bucket, move |fs| async move {
            fs.complete_multipart_upload(req).await
        })
    }

    fn list_multipart_uploads<'life0, 'async_trait>(
        &'life0 self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> BoxFut<'async_trait, ListMultipartUploadsOutput>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            self.bucket_exists(&req.input.bucket)?;
            let input = req.input;
            let uploads = list_uploads(&self.root, &input.bucket, input.prefix.as_deref())
                .map_err(|e| s3s::s3_error!(InternalError, "listing uploads: {e}"))?;
            Ok(S3Response::new(ListMultipartUploadsOutput {
                bucket: Some(input.bucket),
                prefix: input.prefix,
                is_truncated: Some(false),
                uploads: Some(uploads),
                ..Default::default()
            }))
        })
    }
}

/// Reads `s3s-fs`'s records of open multipart uploads: a metadata file
/// `.bucket-{b64(bucket)}.object-{b64(key)}.upload-{uuid}.metadata.json` written at
/// CreateMultipartUpload, and `.upload-{uuid}.json`, removed at completion or abort.
fn list_uploads(
    root: &Path,
    bucket: &str,
    prefix: Option<&str>,
) -> std::io::Result<Vec<MultipartUpload>> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let head = format!(".bucket-{}.object-", b64.encode(bucket));
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(rest) = name
            .strip_prefix(&head)
            .and_then(|r| r.strip_suffix(".metadata.json"))
        else {
            continue;
        };
        let Some((key_b64, upload_id)) = rest.split_once(".upload-") else {
            continue;
        };
        if !root.join(format!(".upload-{upload_id}.json")).exists() {
            continue;
        }
        let Some(key) = b64
            .decode(key_b64)
            .ok()
            .and_then(|k| String::from_utf8(k).ok())
        else {
            continue;
        };
        if prefix.is_some_and(|p| !key.starts_with(p)) {
            continue;
        }
        let initiated = entry.metadata()?.modified()?;
        out.push(MultipartUpload {
            key: Some(key),
            upload_id: Some(upload_id.to_owned()),
            initiated: Some(Timestamp::from(initiated)),
            ..Default::default()
        });
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}
