//! # s3: the object store side of pqbench
//!
//! The study's storage layer (section III, Algorithm 1; section IV-A "Implementation") over
//! a real S3 API, with the envelope format of the pure [`envelope`] crate:
//!
//! - [`Store`]: the commit protocol. A PUT streams `data.enc` (one PUT up to 8 MiB,
//!   multipart with 8 MiB parts above, encrypting one part at a time) and then writes
//!   `manifest.json` as the commit record; a GET reads the manifest, then the data, and
//!   decrypts chunk by chunk into a sink. Also: latest version (one LIST), committed
//!   versions, read-back verification, deletion and garbage collection of uncommitted data.
//!   Every operation returns its [`OpStats`]: the five stage timers, bytes and requests.
//! - [`S3Settings`]: the HTTP client as a benchmark needs it: pool sized to the
//!   concurrency, `TCP_NODELAY`, no automatic retries, explicit timeouts, recorded
//!   payload-signing and checksum options, and which client: the AWS SDK (`aws-sdk`) or
//!   the lean one (`lean`: hyper 1 + `aws-sigv4`, nothing else per request).
//! - [`ObjectClient`]: the S3 calls of the protocol, one method per operation, the same
//!   on both clients.
//! - [`ResultsBucket`]: a campaign's prefix in a results bucket (list, get, put, delete),
//!   for the operator and the analysis Job.
//! - [`EmbeddedS3`] (feature `server`): an in-process S3 server (`s3s` + `s3s-fs`) on
//!   `127.0.0.1`, for local runs and tests.
//!
//! ```
//! use envelope::{Backend, KeyType, Mode, Receiver, SealKey, SecretKey, Sender};
//! use s3::{EmbeddedS3, Store};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let server = EmbeddedS3::start(dir.path(), 0)?; // 127.0.0.1, any free port
//! server.create_bucket("demo")?;
//! let store = Store::new(&server.settings(), "demo", "tenant")?;
//!
//! let sk = SecretKey::generate(KeyType::MlKem768, &mut envelope::os_rng())?;
//! let pk = sk.public_key()?.expect("ML-KEM has a public key");
//! let sender = Sender::new(Mode::MlKem768, Backend::AwsLc, SealKey::Public(&pk))?;
//! let receiver = Receiver::new(Mode::MlKem768, Backend::AwsLc, Some(&sk))?;
//!
//! tokio::runtime::Runtime::new()?.block_on(async {
//!     let data = b"hello, object store";
//!     let put = store.put(&sender, "greeting", data.len() as u64, &data[..], &mut |_| {}).await?;
//!     assert_eq!(put.stats.s3_requests, 2); // data.enc, then manifest.json
//!
//!     let latest = store.latest("greeting").await?.expect("committed");
//!     let mut out = Vec::new();
//!     let got = store.get(&receiver, "greeting", &latest, &mut out, &mut |_| {}).await?;
//!     assert_eq!(out, data);
//!     assert_eq!(got.stats.s3_requests, 2); // manifest.json, then data.enc
//!     Ok::<_, s3::Error>(())
//! })?;
//! server.stop();
//! # Ok(())
//! # }
//! ```

mod bucket;
mod client;
mod error;
mod lean;
mod objects;
#[cfg(feature = "server")]
mod server;
mod store;
mod timing;

/// The AWS SDK, for callers of [`S3Settings::client`] (fixtures, tests, the results bucket).
pub use aws_sdk_s3;
pub use bucket::ResultsBucket;
pub use client::{S3Settings, SdkKnobs};
pub use error::{Error, Result, S3Class};
pub use objects::{Body, Head, ListPage, Listed, ObjectClient, Upload, UploadsPage};
pub use run::s3conf::{ChecksumPolicy, ClientRecord, PayloadSigning, S3ClientKind};
#[cfg(feature = "server")]
pub use server::EmbeddedS3;
pub use store::{
    EnvelopeRead, Event, Foreign, GcReport, GetOutcome, KeyListing, MULTIPART_THRESHOLD, PART_SIZE,
    PutOutcome, Reader, RewrapOutcome, Store, VersionInfo, Writer, latest_of,
};
pub use timing::{OpStats, S3Call, Stage, Timeline};

/// The stats of a typical 64 KiB GET (two S3 calls, one chunk) that began at `start`, for
/// the tracing benchmark.
#[doc(hidden)]
pub fn stats_for_bench(start: std::time::Instant) -> crate::OpStats {
    use std::time::Duration;
    let us = Duration::from_micros;
    let mut st = crate::OpStats {
        key_establishment: us(20),
        key_derivation: us(3),
        aead: us(15),
        manifest: us(10),
        storage: us(800),
        total: us(900),
        s3_requests: 2,
        ..crate::OpStats::default()
    };
    st.timeline = crate::Timeline {
        start: Some(start),
        first_object_call: Some(start + us(400)),
        first_chunk_call: Some(start + us(850)),
        calls: vec![
            crate::S3Call {
                op: "GetObject",
                start,
                storage: us(390),
            },
            crate::S3Call {
                op: "GetObject",
                start: start + us(430),
                storage: us(410),
            },
        ],
    };
    st
}
