//! Argument groups and parsers several commands share: the sender and receiver of a mode
//! (`--mode`, `--backend`, keys), freshly generated keys for in-process measurements, sizes
//! and durations with units, and the request-trace flags.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use envelope::v2::{self, Placement};
use envelope::{
    Backend, Format, KeyType, Mode, PublicKey, Receiver, SealKey, SecretKey, Sender, SessionBounds,
};
pub(crate) use s3::{Reader, Writer};

/// Where a v2 header goes (`--header`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HeaderPlacement {
    /// In the object's user metadata (`x-amz-meta-pqbench-v2`), at most 1,527 bytes.
    Metadata,
    /// At the start of the object's body (no size limit).
    Prefix,
}

impl From<HeaderPlacement> for Placement {
    fn from(h: HeaderPlacement) -> Self {
        match h {
            HeaderPlacement::Metadata => Placement::Metadata,
            HeaderPlacement::Prefix => Placement::Prefix,
        }
    }
}

pub(crate) fn parse_format(s: &str) -> Result<Format, String> {
    Format::from_name(s).map_err(|e| e.to_string())
}

/// The writer's format, mode and keys, shared by `seal` and `put`.
#[derive(Args, Debug)]
pub(crate) struct SenderArgs {
    /// Object format: v1 (data.enc + manifest.json) or v2 (one object.v2, HPKE header).
    #[arg(long, default_value = "v1", value_parser = parse_format)]
    format: Format,
    /// Mode (name or study code); v1 only: a v2 object's KEMs are its recipients' keys'.
    #[arg(long)]
    mode: Option<Mode>,
    /// Crypto backend: aws-lc (default), rustcrypto, libcrux or openssl (the last two without RSA).
    #[arg(long, default_value = "aws-lc")]
    backend: Backend,
    /// Recipient public key file (every public-key mode). v2: repeat it for up to 16
    /// recipients (ml-kem-768, ml-kem-1024, x-wing or x25519 keys); any one opens.
    #[arg(long)]
    recipient: Vec<PathBuf>,
    /// v2: where the header goes (default: metadata for `put`, prefix for `seal`).
    #[arg(long, value_enum)]
    header: Option<HeaderPlacement>,
    /// v2: allow post-quantum and classical recipients in one object (recorded in its
    /// header; the object is then only as strong as its classical wrap).
    #[arg(long)]
    allow_mixed: bool,
    /// v2: write a v2.1 header (FORMAT-v2.md §10, 32 bytes longer), whose recipients
    /// `pqbench migrate --rewrap` can replace without re-encrypting the body. Readers of
    /// format v2 read both.
    #[arg(long)]
    rewrappable: bool,
    /// Pre-shared key file (mode psk), as written by `keygen --mode psk`.
    #[arg(long)]
    psk: Option<PathBuf>,
    /// ml-kem-768-session: B_max, objects per session.
    #[arg(long, default_value_t = 100)]
    session_max_objects: u64,
    /// ml-kem-768-session: T_max in seconds.
    #[arg(long, default_value_t = 10.0)]
    session_max_age: f64,
}

/// The reader's format, expected mode and key, shared by `open` and `get`.
#[derive(Args, Debug)]
pub(crate) struct ReceiverArgs {
    /// Object format: v1 or v2.
    #[arg(long, default_value = "v1", value_parser = parse_format)]
    format: Format,
    /// v1: the mode the object must be in (a different one is refused: no downgrade).
    #[arg(long)]
    expect_mode: Option<Mode>,
    /// Crypto backend: aws-lc (default), rustcrypto, libcrux or openssl (the last two without RSA).
    #[arg(long, default_value = "aws-lc")]
    backend: Backend,
    /// Recipient secret key file (must be mode 0600).
    #[arg(long)]
    secret: Option<PathBuf>,
    /// Pre-shared key file (mode psk), as written by `keygen --mode psk`.
    #[arg(long)]
    psk: Option<PathBuf>,
    /// Refuse any object whose key establishment is not post-quantum: in v2, one with a
    /// classical recipient entry (X25519), mixed strengths included, before any key is
    /// used; in v1, a reader whose --expect-mode is not post-quantum (a v1 reader opens
    /// only objects of its mode).
    #[arg(long)]
    require_pq: bool,
}

fn read_psk(path: Option<&Path>) -> Result<SecretKey> {
    let p = path.context("mode psk needs --psk FILE (from `pqbench keygen --mode psk`)")?;
    let sk = SecretKey::read_file(p)?;
    if sk.key_type() != KeyType::Psk {
        bail!(
            "{} holds a {} key, not a pre-shared key",
            p.display(),
            sk.key_type()
        );
    }
    Ok(sk)
}

impl SenderArgs {
    /// The writer of `--format`; `default_header` is the command's v2 placement when
    /// `--header` is not given.
    pub(crate) fn writer(&self, default_header: HeaderPlacement) -> Result<Writer> {
        match self.format {
            Format::V1 => {
                if self.header.is_some() || self.allow_mixed || self.rewrappable {
                    bail!(
                        "--header, --allow-mixed and --rewrappable are format v2 options; add --format v2"
                    );
                }
                Ok(Writer::V1(self.sender()?))
            }
            Format::V2 => {
                if let Some(m) = self.mode {
                    bail!(
                        "--mode {m} is a format v1 option: a v2 object's KEMs are those of its \
                         --recipient keys; drop --mode"
                    );
                }
                if self.recipient.is_empty() {
                    bail!(
                        "format v2 needs at least one --recipient FILE (an ml-kem-768, \
                         ml-kem-1024, x-wing or x25519 public key; repeat it for up to 16)"
                    );
                }
                let keys = self
                    .recipient
                    .iter()
                    .map(|p| {
                        PublicKey::read_file(p)
                            .with_context(|| format!("--recipient {}", p.display()))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let refs: Vec<&PublicKey> = keys.iter().collect();
                let placement = self.header.unwrap_or(default_header).into();
                let version = if self.rewrappable {
                    v2::HeaderVersion::V2_1
                } else {
                    v2::HeaderVersion::V2
                };
                let sender = v2::Sender::new(self.backend, &refs, self.allow_mixed, placement)
                    .context("format v2")?
                    .with_header_version(version)
                    .context("--rewrappable")?;
                Ok(Writer::V2(sender))
            }
        }
    }

    /// The v1 sender: reads the recipient public key or the pre-shared key, and sets the
    /// session bounds of `ml-kem-768-session`.
    fn sender(&self) -> Result<Sender> {
        let mode = self
            .mode
            .context("format v1 needs --mode (a name or a study code)")?;
        let mut sender = match mode.key_type() {
            KeyType::None => Sender::new(mode, self.backend, SealKey::None)?,
            KeyType::Psk => Sender::new(
                mode,
                self.backend,
                SealKey::Psk(&read_psk(self.psk.as_deref())?),
            )?,
            kt => {
                let p = match self.recipient.as_slice() {
                    [p] => p,
                    [] => bail!("mode {mode} needs --recipient FILE (a {kt} public key)"),
                    _ => bail!(
                        "format v1 seals to one recipient; several --recipient need --format v2"
                    ),
                };
                Sender::new(
                    mode,
                    self.backend,
                    SealKey::Public(&PublicKey::read_file(p)?),
                )?
            }
        };
        if mode == Mode::MlKem768Session {
            if !(self.session_max_age.is_finite() && self.session_max_age > 0.0) {
                bail!("--session-max-age must be a positive number of seconds");
            }
            sender = sender.with_session_bounds(SessionBounds {
                max_objects: self.session_max_objects,
                max_age: Duration::from_secs_f64(self.session_max_age),
            })?;
        }
        Ok(sender)
    }
}

impl ReceiverArgs {
    /// The reader of `--format`: reads the recipient secret key (0600) or the pre-shared
    /// key.
    pub(crate) fn reader(&self) -> Result<Reader> {
        match self.format {
            Format::V1 => Ok(Reader::V1(self.receiver()?)),
            Format::V2 => {
                if let Some(m) = self.expect_mode {
                    bail!(
                        "--expect-mode {m} is a format v1 option: a v2 object names its KEMs in \
                         its header; drop --expect-mode"
                    );
                }
                let p = self.secret.as_deref().context(
                    "format v2 needs --secret FILE (the secret key of one of the object's recipients)",
                )?;
                let sk = SecretKey::read_file(p)?;
                let r = v2::Receiver::new(self.backend, &sk)
                    .with_context(|| format!("--secret {}", p.display()))?;
                Ok(Reader::V2(if self.require_pq {
                    r.requiring_pq()
                        .with_context(|| format!("--secret {}", p.display()))?
                } else {
                    r
                }))
            }
        }
    }

    /// How a reader whose key is in a key service (`--kms`) reads: format v2 (the key's
    /// KEM, from the service), or format v1 in one of the modes a key service can perform.
    pub(crate) fn remote_read(&self) -> Result<RemoteRead> {
        if self.format != Format::V1 {
            return Ok(RemoteRead {
                mode: None,
                backend: self.backend,
                require_pq: self.require_pq,
            });
        }
        let mode = self
            .expect_mode
            .context("format v1 needs --expect-mode (the mode the object must be in)")?;
        if !envelope::REMOTE_MODES.contains(&mode) {
            bail!(
                "--kms with --expect-mode {mode}: a key service performs ML-KEM decapsulation \
                 or X25519 agreement, so the remote modes are ml-kem-768, ml-kem-1024 and x25519"
            );
        }
        if self.require_pq && !mode.post_quantum() {
            bail!("--require-pq with --expect-mode {mode}: {mode} is not post-quantum");
        }
        Ok(RemoteRead {
            mode: Some(mode),
            backend: self.backend,
            require_pq: false,
        })
    }

    fn receiver(&self) -> Result<Receiver> {
        let mode = self
            .expect_mode
            .context("format v1 needs --expect-mode (the mode the object must be in)")?;
        if self.require_pq && !mode.post_quantum() {
            bail!(
                "--require-pq with --expect-mode {mode}: a v1 reader opens only objects of its \
                 mode, and {mode} is not post-quantum key establishment"
            );
        }
        let sk = match mode.key_type() {
            KeyType::None => None,
            KeyType::Psk => Some(read_psk(self.psk.as_deref())?),
            kt => {
                let p = self.secret.as_deref().with_context(|| {
                    format!("mode {mode} needs --secret FILE (a {kt} secret key)")
                })?;
                Some(SecretKey::read_file(p)?)
            }
        };
        Ok(Receiver::new(mode, self.backend, sk.as_ref())?)
    }
}

/// A freshly generated recipient key for `mode` (none for `plaintext`), for in-process
/// measurements (`modes`, `bench-store`).
pub(crate) struct FreshKeys {
    mode: Mode,
    sk: Option<SecretKey>,
    pk: Option<PublicKey>,
}

impl FreshKeys {
    /// Generates the key `mode` uses.
    pub(crate) fn generate(mode: Mode) -> Result<Self> {
        let kt = mode.key_type();
        let sk = (kt != KeyType::None)
            .then(|| SecretKey::generate(kt, &mut envelope::os_rng()))
            .transpose()?;
        let pk = sk
            .as_ref()
            .map(SecretKey::public_key)
            .transpose()?
            .flatten();
        Ok(Self { mode, sk, pk })
    }

    /// A sender to this key.
    pub(crate) fn sender(&self, backend: Backend) -> Result<Sender> {
        let key = match (&self.pk, &self.sk) {
            (Some(p), _) => SealKey::Public(p),
            (None, Some(s)) => SealKey::Psk(s),
            _ => SealKey::None,
        };
        Ok(Sender::new(self.mode, backend, key)?)
    }

    /// A receiver holding this key.
    pub(crate) fn receiver(&self, backend: Backend) -> Result<Receiver> {
        Ok(Receiver::new(self.mode, backend, self.sk.as_ref())?)
    }

    /// A format-v2 writer to this key and a reader holding it.
    pub(crate) fn v2(&self, backend: Backend, placement: Placement) -> Result<(Writer, Reader)> {
        let (Some(sk), Some(pk)) = (&self.sk, &self.pk) else {
            bail!("mode {} has no key pair for format v2", self.mode);
        };
        Ok((
            Writer::V2(v2::Sender::new(backend, &[pk], false, placement)?),
            Reader::V2(v2::Receiver::new(backend, sk)?),
        ))
    }
}

/// Parses `123`, `64KiB`, `1MiB`, `2GiB`, `10kB`.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    campaign::units::parse_size(s)
}

/// Parses `500ms`, `20s`, `5m`, `1h`, or plain seconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    campaign::units::parse_duration(s)
}

/// Request traces (OTLP) of a run: `--otlp-endpoint` and friends. Absent flags leave the
/// standard `OTEL_*` variables in charge.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct TraceArgs {
    /// Export request traces (one `pqbench.request` span per traced request, a child per
    /// stage and per S3 call) to this OTLP collector: http://HOST:4317 (gRPC) or
    /// http://HOST:4318 (HTTP). Default: OTEL_EXPORTER_OTLP_ENDPOINT; none, no traces.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// OTLP transport: grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else
    /// gRPC on port 4317 and HTTP on any other).
    #[arg(long, value_name = "PROTOCOL")]
    pub(crate) otlp_protocol: Option<run::trace::OtlpProtocol>,
    /// Share of requests traced, 0 to 1; failed requests always are (default:
    /// OTEL_TRACES_SAMPLER_ARG, else 0.01).
    #[arg(long, value_name = "RATIO")]
    pub(crate) trace_sample_ratio: Option<f64>,
}

impl TraceArgs {
    /// The run spec's `traces` block, if any flag was given.
    pub(crate) fn spec(&self) -> Option<run::trace::TraceSpec> {
        (self.otlp_endpoint.is_some()
            || self.otlp_protocol.is_some()
            || self.trace_sample_ratio.is_some())
        .then(|| run::trace::TraceSpec {
            endpoint: self.otlp_endpoint.clone(),
            protocol: self.otlp_protocol,
            sample_ratio: self.trace_sample_ratio,
        })
    }
}

/// How `get --kms` reads ([`ReceiverArgs::remote_read`]).
pub(crate) struct RemoteRead {
    /// The v1 mode the object must be in; `None`: format v2 (the key's KEM).
    pub(crate) mode: Option<Mode>,
    /// The backend of the local steps.
    pub(crate) backend: Backend,
    /// A v2 reader refusing classical entries.
    pub(crate) require_pq: bool,
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("12XB").is_err());
        assert!(parse_size("KiB").is_err());
    }

    #[test]
    fn durations() {
        use super::parse_duration;
        use std::time::Duration;
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("5 days").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
