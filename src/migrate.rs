//! `pqbench migrate`: every latest classical or mixed version of a bucket re-encrypted as a
//! new format-v2 version sealed to new recipients, verified, journalled, and the old version
//! deleted only when asked (`docs/src/envelope/migration.md`).
//!
//! One version's move ([`move_one`]):
//!
//! 1. open the old version with the `--secret` its envelope names, into a 0600 temporary
//!    file (the whole object authenticates before anything is written);
//! 2. list the key: if its latest version is no longer the old one, another writer got
//!    there first: reported `changed`, nothing written;
//! 3. journal `started` with a new version drawn now, then write that version;
//! 4. list again: a version newer than the old one and not ours means another writer
//!    committed while we wrote; our version would shadow it with stale content, so it is
//!    deleted and the key reported `changed`;
//! 5. read the new version back (its stored header and size, or with `--verify-secret` its
//!    plaintext's SHA-256), journal `done`, and only then, with `--delete-old`, delete the
//!    old version.
//!
//! With `--rewrap`, a v2.1 version (FORMAT-v2.md §10) is re-wrapped instead of
//! re-encrypted: step 1 reads its header only, and step 3 writes the new version's header
//! around the unchanged body (one server-side CopyObject in placement metadata). The data
//! key stays the old one; §10.3 says what that does not protect. Every other version is
//! re-encrypted as before.
//!
//! A resumed run reads the journal: `done` keys are skipped, and a `started` one whose
//! version exists is checked and journalled instead of written again, so no version is
//! lost or doubled by a kill at any instant.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use envelope::survey::Sealing;
use envelope::v2::{self, Placement};
use envelope::{Backend, Format, PublicKey, SecretKey};
use s3::{Store, VersionInfo};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use worker::progress::{Progress, Unit};

use crate::args::HeaderPlacement;
use crate::s3cmd::S3Args;

/// `pqbench migrate`'s arguments.
#[derive(Args, Debug)]
pub(crate) struct MigrateArgs {
    #[command(flatten)]
    s3: S3Args,
    /// Tenant of the object identity (bound into every object).
    #[arg(long, default_value = "default")]
    tenant: String,
    /// Bucket.
    #[arg(long)]
    bucket: String,
    /// Only under this key prefix (the whole bucket by default).
    #[arg(long, default_value = "")]
    prefix: String,
    /// An old recipient's secret key file; each version is opened with the one its
    /// envelope names. Repeat it for several.
    #[arg(long = "secret", required = true)]
    secrets: Vec<PathBuf>,
    /// A new recipient's public key file (ml-kem-768, ml-kem-1024 or x-wing; x25519 only
    /// with --allow-mixed). Repeat it for up to 16.
    #[arg(long = "recipient", required = true)]
    recipients: Vec<PathBuf>,
    /// Allow a classical recipient among the new ones (the new versions are then mixed).
    #[arg(long)]
    allow_mixed: bool,
    /// Where the new headers go (default: metadata when they fit, else prefix).
    #[arg(long, value_enum)]
    header: Option<HeaderPlacement>,
    /// Crypto backend.
    #[arg(long, default_value = "aws-lc")]
    backend: Backend,
    /// The journal's directory (`migrate.jsonl`, `report.json`); default
    /// `pqbench-migrate/<bucket>` in the current directory. Resuming reads it.
    #[arg(long)]
    journal: Option<PathBuf>,
    /// Versions moved at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,
    /// Print what would be moved; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Delete each old version once its new version is verified (and, on a later run,
    /// those moved earlier without it).
    #[arg(long)]
    delete_old: bool,
    /// Open every new version with this secret key (one of the new recipients) and
    /// compare its plaintext's SHA-256 with the old one's; without it the stored header
    /// and size are checked.
    #[arg(long)]
    verify_secret: Option<PathBuf>,
    /// Re-wrap v2.1 versions (FORMAT-v2.md §10): a new header for the same body and data
    /// key, without decrypting it (placement metadata: one server-side CopyObject).
    /// Whoever held the old data key still reads them, and an old header recorded before
    /// the re-wrap opens the body once its classical KEM is broken (§10.3): for "harvest
    /// now, decrypt later" re-encryption (the default) is the sound move. Other versions
    /// are re-encrypted. Implies --rewrappable.
    #[arg(long)]
    rewrap: bool,
    /// Write the new versions as v2.1 (re-wrappable) headers.
    #[arg(long)]
    rewrappable: bool,
}

/// One journal line.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line {
    /// About to write `new` for `old`; `sha256` is the old plaintext's (none for a
    /// re-wrap, which never decrypts it).
    Started {
        key: String,
        old: String,
        new: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
    /// `new` is written and verified.
    Done {
        key: String,
        old: String,
        new: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
    /// The old version is deleted.
    Deleted { key: String, old: String },
    /// Another writer changed the key; nothing of ours is left.
    Changed {
        key: String,
        old: String,
        reason: String,
    },
    /// The move failed (tried again on the next run).
    Failed {
        key: String,
        old: String,
        reason: String,
    },
}

impl Line {
    fn slot(&self) -> (&str, &str) {
        match self {
            Line::Started { key, old, .. }
            | Line::Done { key, old, .. }
            | Line::Deleted { key, old }
            | Line::Changed { key, old, .. }
            | Line::Failed { key, old, .. } => (key, old),
        }
    }
}

/// What the journal says of one (key, old version).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Slot {
    /// The new version and the old plaintext's SHA-256 (none: a re-wrap).
    started: Option<(String, Option<String>)>,
    done: Option<String>,
    deleted: bool,
    changed: bool,
}

/// The journal: its state, read at start, and its file, appended and synced per line.
struct Journal {
    path: PathBuf,
    file: Mutex<std::fs::File>,
    slots: BTreeMap<(String, String), Slot>,
}

impl Journal {
    /// Reads `dir/migrate.jsonl` (a last line cut short by a kill is ignored; any other
    /// unreadable line is refused, naming it) and opens it for appending.
    fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the journal directory {}", dir.display()))?;
        let path = dir.join("migrate.jsonl");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let slots = Self::replay(&text, &path)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {} for appending", path.display()))?;
        if !text.is_empty() && !text.ends_with('\n') {
            // The cut line stays as it is; what follows starts on a line of its own.
            file.write_all(b"\n")?;
        }
        Ok(Journal {
            path,
            file: Mutex::new(file),
            slots,
        })
    }

    fn replay(text: &str, path: &Path) -> Result<BTreeMap<(String, String), Slot>> {
        let mut slots: BTreeMap<(String, String), Slot> = BTreeMap::new();
        let lines: Vec<&str> = text.split('\n').collect();
        for (i, l) in lines.iter().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let line: Line = match serde_json::from_str(l) {
                Ok(line) => line,
                // The last line, unterminated: a write cut by a kill.
                Err(_) if i + 1 == lines.len() => continue,
                Err(e) => bail!(
                    "{}:{}: not a journal line ({e}); the journal is pqbench migrate's own, \
                     do not edit it",
                    path.display(),
                    i + 1
                ),
            };
            let (key, old) = line.slot();
            let s = slots.entry((key.to_owned(), old.to_owned())).or_default();
            match line {
                // A start after a `changed` is a fresh move of a version that became the
                // latest again: it supersedes what the slot said.
                Line::Started { new, sha256, .. } => {
                    *s = Slot {
                        started: Some((new, sha256)),
                        ..Slot::default()
                    };
                }
                Line::Done { new, .. } => s.done = Some(new),
                Line::Deleted { .. } => s.deleted = true,
                Line::Changed { .. } => s.changed = true,
                Line::Failed { .. } => {}
            }
        }
        Ok(slots)
    }

    /// Appends one line and syncs it to disk before returning.
    fn append(&self, line: &Line) -> Result<()> {
        let mut text = serde_json::to_string(line)?;
        text.push('\n');
        let mut f = self
            .file
            .lock()
            .map_err(|_| anyhow::anyhow!("the journal's lock is poisoned"))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_data())
            .with_context(|| format!("cannot append to {}", self.path.display()))
    }

    fn slot(&self, key: &str, old: &str) -> Slot {
        self.slots
            .get(&(key.to_owned(), old.to_owned()))
            .cloned()
            .unwrap_or_default()
    }
}

/// One version to move (or to finish, or to delete).
#[derive(Clone, Debug)]
struct Item {
    key: String,
    old: VersionInfo,
    envelope: Envelope,
    slot: Slot,
}

/// What the plan read of an old version's envelope.
#[derive(Clone, Debug)]
enum Envelope {
    /// Not read: only the old version's deletion is left.
    NotRead,
    Read(Sealing),
    /// Why it could not be read (the item then fails, the others go on).
    Unreadable(String),
}

/// How one item ended.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    Moved {
        new: String,
        deleted: bool,
        rewrapped: bool,
    },
    Finished {
        new: String,
        deleted: bool,
        rewrapped: bool,
    },
    Deleted,
    Changed {
        reason: String,
    },
    Failed {
        reason: String,
    },
}

/// What every item shares.
struct Ctx {
    store: Store,
    secrets: Vec<(String, SecretKey)>,
    sender: v2::Sender,
    new_ids: Vec<String>,
    verify: Option<v2::Receiver>,
    backend: Backend,
    delete_old: bool,
    rewrap: bool,
    journal: Journal,
}

/// The committed versions of `key`, with a listing failure said with the key.
async fn versions(store: &Store, key: &str) -> Result<Vec<VersionInfo>> {
    store
        .versions(key)
        .await
        .with_context(|| format!("cannot list the versions of {key}"))
}

fn sha_hex(path: &Path) -> Result<String> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Opens `key`@`version` (v1 or v2) with `sk` into a new temporary file (0600).
async fn read_old(
    ctx: &Ctx,
    key: &str,
    old: &VersionInfo,
    sealing: &Sealing,
    sk: &SecretKey,
) -> Result<tempfile::NamedTempFile> {
    let tmp = tempfile::Builder::new()
        .prefix("pqbench-migrate-")
        .tempfile()
        .context("cannot create a temporary file for the plaintext")?;
    let sink = tokio::fs::File::from_std(tmp.reopen()?);
    let mut on = |_| {};
    match (old.format, sealing.mode) {
        (Format::V1, Some(mode)) => {
            let r = envelope::Receiver::new(mode, ctx.backend, Some(sk))?;
            ctx.store.get(&r, key, &old.version, sink, &mut on).await?;
        }
        _ => {
            let r = v2::Receiver::new(ctx.backend, sk)?;
            ctx.store
                .get_v2(&r, key, &old.version, sink, &mut on)
                .await?;
        }
    }
    Ok(tmp)
}

/// Writes `new` from the plaintext in `tmp`; returns the header and the object's size.
async fn write_new(
    ctx: &Ctx,
    key: &str,
    new: &str,
    tmp: &tempfile::NamedTempFile,
) -> Result<(Vec<u8>, u64)> {
    let size = tmp.as_file().metadata()?.len();
    let src = tokio::fs::File::from_std(tmp.reopen()?);
    let mut on = |_| {};
    let out = ctx
        .store
        .put_v2_as(&ctx.sender, key, new, size, src, &mut on)
        .await?;
    Ok((out.manifest.to_vec(), out.ciphertext_size))
}

/// Re-wraps `old` as `new` with `sk`, one of its recipients' keys; returns the header and
/// the object's size.
async fn rewrap_new(
    ctx: &Ctx,
    key: &str,
    old: &str,
    new: &str,
    sk: &SecretKey,
) -> Result<(Vec<u8>, u64)> {
    let r = v2::Receiver::new(ctx.backend, sk)?;
    let out = ctx
        .store
        .rewrap_v2_as(&r, &ctx.sender, key, old, new)
        .await?;
    Ok((out.put.manifest.to_vec(), out.put.ciphertext_size))
}

/// Checks the new version: with `--verify-secret` it opens, and its plaintext's SHA-256 is
/// the old one's (`sha256`; none for a re-wrap, whose body and data key are the old ones:
/// that every chunk authenticates under the unchanged commitment is the check, FORMAT-v2.md
/// §10.2); else its header's recipients are the new ones and, when we wrote it in this
/// run, its stored header and size are what was written.
async fn verify(
    ctx: &Ctx,
    key: &str,
    new: &str,
    sha256: Option<&str>,
    written: Option<&(Vec<u8>, u64)>,
) -> Result<()> {
    if let Some(r) = &ctx.verify {
        let tmp = tempfile::Builder::new()
            .prefix("pqbench-migrate-")
            .tempfile()?;
        let sink = tokio::fs::File::from_std(tmp.reopen()?);
        ctx.store
            .get_v2(r, key, new, sink, &mut |_| {})
            .await
            .with_context(|| format!("the new version {new} does not open with --verify-secret"))?;
        let got = sha_hex(tmp.path())?;
        if let Some(sha256) = sha256
            && got != sha256
        {
            bail!(
                "the new version {new}'s plaintext differs from the old one's (SHA-256 {got}, not {sha256})"
            );
        }
    }
    if let Some((header, size)) = written {
        ctx.store.verify_v2(key, new, header, *size).await?;
    } else {
        let read = ctx.store.sealing(key, new, Format::V2).await?;
        let mut ids: Vec<String> = read
            .sealing
            .wraps
            .iter()
            .filter_map(|w| w.key_id.clone())
            .collect();
        ids.sort();
        let mut want = ctx.new_ids.clone();
        want.sort();
        if ids != want {
            bail!("the new version {new} is not sealed to the new recipients");
        }
    }
    Ok(())
}

/// A version of `key` committed after `old` other than `ours`.
fn newer_than<'a>(vs: &'a [VersionInfo], old: &str, ours: Option<&str>) -> Option<&'a str> {
    vs.iter()
        .map(|v| v.version.as_str())
        .find(|v| *v > old && Some(*v) != ours)
}

/// Deletes the old version (when asked) and journals it.
async fn delete_old(ctx: &Ctx, key: &str, old: &str) -> Result<bool> {
    if !ctx.delete_old {
        return Ok(false);
    }
    ctx.store
        .delete_version(key, old)
        .await
        .with_context(|| format!("the new version is verified, but deleting {old} failed"))?;
    ctx.journal.append(&Line::Deleted {
        key: key.into(),
        old: old.into(),
    })?;
    Ok(true)
}

/// Finishes a move a killed run started: its version exists (checked, journalled) or not
/// (`None`: write it again).
async fn finish_started(
    ctx: &Ctx,
    item: &Item,
    new: &str,
    sha: Option<&str>,
) -> Result<Option<Outcome>> {
    let (key, old) = (&item.key, &item.old.version);
    let vs = versions(&ctx.store, key).await?;
    if !vs.iter().any(|v| v.version == new) {
        return Ok(None);
    }
    if let Err(e) = verify(ctx, key, new, sha, None).await {
        // Ours and never journalled done: a write cut short (or a store that committed it
        // in part). Removed, and written again.
        ctx.store
            .delete_version(key, new)
            .await
            .with_context(|| format!("removing our unverified version {new} ({e:#})"))?;
        return Ok(None);
    }
    let vs = versions(&ctx.store, key).await?;
    if let Some(other) = newer_than(&vs, old, Some(new)) {
        return conflict(ctx, key, old, new, other).await.map(Some);
    }
    ctx.journal.append(&Line::Done {
        key: key.clone(),
        old: old.clone(),
        new: new.into(),
        sha256: sha.map(str::to_owned),
    })?;
    let deleted = delete_old(ctx, key, old).await?;
    Ok(Some(Outcome::Finished {
        new: new.into(),
        deleted,
        rewrapped: sha.is_none(),
    }))
}

/// Another writer committed `other` after `old`: our `new` (if written) is removed.
async fn conflict(ctx: &Ctx, key: &str, old: &str, new: &str, other: &str) -> Result<Outcome> {
    if versions(&ctx.store, key)
        .await?
        .iter()
        .any(|v| v.version == new)
    {
        ctx.store
            .delete_version(key, new)
            .await
            .with_context(|| format!("removing our stale version {new}"))?;
    }
    let reason = format!(
        "version {other} was committed after {old} while it was being moved: the key is left to its writer, nothing of ours remains"
    );
    ctx.journal.append(&Line::Changed {
        key: key.into(),
        old: old.into(),
        reason: reason.clone(),
    })?;
    Ok(Outcome::Changed { reason })
}

/// Moves one version (see the module's steps).
async fn move_one(ctx: &Ctx, item: &Item) -> Result<Outcome> {
    let (key, old) = (&item.key, &item.old.version);
    if let Envelope::Unreadable(reason) = &item.envelope {
        bail!("{reason}");
    }
    if item.slot.done.is_some() {
        delete_old(ctx, key, old).await?;
        return Ok(Outcome::Deleted);
    }
    if let Some((new, sha)) = &item.slot.started
        && let Some(o) = finish_started(ctx, item, new, sha.as_deref()).await?
    {
        return Ok(o);
    }
    let Envelope::Read(sealing) = &item.envelope else {
        bail!("the old version's envelope was not read");
    };
    let ids: Vec<String> = sealing
        .wraps
        .iter()
        .filter_map(|w| w.key_id.clone())
        .collect();
    let Some((_, sk)) = ctx.secrets.iter().find(|(id, _)| ids.contains(id)) else {
        bail!(
            "sealed to key id(s) {}, none of them a --secret",
            ids.join(", ")
        );
    };
    // The new version is drawn before the old one is read: a writer that draws its
    // version after this one wins "latest" whenever it commits (FORMAT.md §1).
    let new = match &item.slot.started {
        Some((new, _)) => new.clone(),
        None => envelope::new_version(),
    };
    let rewrap = ctx.rewrap && sealing.rewrappable;
    let tmp = if rewrap {
        None
    } else {
        Some(read_old(ctx, key, &item.old, sealing, sk).await?)
    };
    let sha = tmp.as_ref().map(|t| sha_hex(t.path())).transpose()?;
    let vs = versions(&ctx.store, key).await?;
    if let Some(other) = newer_than(&vs, old, Some(&new)) {
        let reason = format!(
            "version {other} was committed after {old} before it was moved: the key is left to its writer"
        );
        ctx.journal.append(&Line::Changed {
            key: key.clone(),
            old: old.clone(),
            reason: reason.clone(),
        })?;
        return Ok(Outcome::Changed { reason });
    }
    ctx.journal.append(&Line::Started {
        key: key.clone(),
        old: old.clone(),
        new: new.clone(),
        sha256: sha.clone(),
    })?;
    let written = match &tmp {
        Some(tmp) => write_new(ctx, key, &new, tmp).await?,
        None => rewrap_new(ctx, key, old, &new, sk).await?,
    };
    drop(tmp);
    verify(ctx, key, &new, sha.as_deref(), Some(&written)).await?;
    // As late as possible: a writer whose version was drawn before ours and committed
    // while we wrote would be shadowed by our stale copy.
    let vs = versions(&ctx.store, key).await?;
    if let Some(other) = newer_than(&vs, old, Some(&new)) {
        return conflict(ctx, key, old, &new, other).await;
    }
    ctx.journal.append(&Line::Done {
        key: key.clone(),
        old: old.clone(),
        new: new.clone(),
        sha256: sha,
    })?;
    let deleted = delete_old(ctx, key, old).await?;
    Ok(Outcome::Moved {
        new,
        deleted,
        rewrapped: rewrap,
    })
}

/// Removes every version of ours that shadows another writer's: one drawn before ours and
/// committed after our last check (latest is the greatest version, FORMAT.md §1), so our
/// copy of older content would read as the newest. The other writer's version is latest
/// again (and moved in this run); the moved version's slot becomes `changed`, so its old
/// version is never deleted. Returns those slots.
async fn repair_shadows(
    store: &Store,
    keys: &[s3::KeyListing],
    journal: &Journal,
) -> Result<std::collections::BTreeSet<(String, String)>> {
    let mut repaired = std::collections::BTreeSet::new();
    for l in keys {
        let ours: Vec<&str> = journal
            .slots
            .iter()
            .filter(|((k, _), _)| *k == l.key)
            .flat_map(|(_, s)| {
                s.started
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .chain(s.done.as_deref())
            })
            .collect();
        let mine = journal
            .slots
            .range((l.key.clone(), String::new())..)
            .take_while(|((k, _), _)| *k == l.key);
        for ((_, old), slot) in mine {
            let Some(new) = slot.done.as_deref() else {
                continue;
            };
            if slot.changed || !l.versions.iter().any(|v| v.version == new) {
                continue;
            }
            let shadowed = l
                .versions
                .iter()
                .map(|v| v.version.as_str())
                .find(|v| *v > old.as_str() && *v < new && !ours.contains(v));
            let Some(other) = shadowed else { continue };
            store.delete_version(&l.key, new).await.with_context(|| {
                format!(
                    "removing our version {new} of {}, which shadows {other}",
                    l.key
                )
            })?;
            journal.append(&Line::Changed {
                key: l.key.clone(),
                old: old.clone(),
                reason: format!(
                    "version {other}, drawn before ours and committed after our last check, was shadowed by our copy {new} of {old}: ours is removed"
                ),
            })?;
            eprintln!(
                "changed: {} {old}: {other} was committed under our copy {new}, which is removed; {other} is moved instead",
                l.key
            );
            repaired.insert((l.key.clone(), old.clone()));
        }
    }
    Ok(repaired)
}

/// The work: every latest classical or mixed version not moved yet, every move a killed
/// run left started, and with `--delete-old` every moved version not deleted yet.
async fn plan(
    store: &Store,
    prefix: &str,
    journal: &Journal,
    delete: bool,
    concurrency: usize,
) -> Result<Vec<Item>> {
    let list = || async {
        store
            .survey(prefix)
            .await
            .map(|(keys, _)| keys)
            .with_context(|| format!("cannot list s3://{}/{prefix}", store.bucket()))
    };
    let mut keys = list().await?;
    let repaired = repair_shadows(store, &keys, journal).await?;
    if !repaired.is_empty() {
        keys = list().await?;
    }
    let ours: std::collections::BTreeSet<&str> = journal
        .slots
        .values()
        .filter(|s| s.done.is_none())
        .filter_map(|s| s.started.as_ref().map(|(new, _)| new.as_str()))
        .collect();
    // The versions to look at. Those moved earlier (`done`) are left only to be deleted;
    // the others' envelopes are read below.
    let mut todo: Vec<Item> = Vec::new();
    for l in &keys {
        for v in &l.versions {
            let mut slot = journal.slot(&l.key, &v.version);
            slot.changed |= repaired.contains(&(l.key.clone(), v.version.clone()));
            let latest = l.latest().map(|x| &x.version) == Some(&v.version);
            if slot.changed && latest {
                // Left to another writer once, and the latest again (that writer's version
                // is gone): moved afresh.
                slot = Slot::default();
            }
            let pending = slot.done.is_none() && slot.started.is_some() && !slot.changed;
            let undeleted = delete && slot.done.is_some() && !slot.deleted;
            if !(latest || pending || undeleted) || slot.changed {
                continue;
            }
            // A version a killed run started to write is finished through its slot.
            if !undeleted && (slot.done.is_some() || ours.contains(v.version.as_str())) {
                continue;
            }
            todo.push(Item {
                key: l.key.clone(),
                old: v.clone(),
                envelope: Envelope::NotRead,
                slot,
            });
        }
    }
    let to_read = |i: &Item| i.slot.done.is_none();
    let jobs = todo
        .iter()
        .filter(|i| to_read(i))
        .map(|i| (i.key.clone(), i.old.clone()))
        .collect();
    let mut reads = crate::inventory::read_envelopes(store, jobs, concurrency, |_| {})
        .await?
        .into_iter();
    let mut items = Vec::new();
    for mut item in todo {
        if to_read(&item) {
            match reads.next().context("an envelope read is missing")?.0 {
                Ok(r) if !r.sealing.protection.needs_migration() => continue,
                Ok(r) => item.envelope = Envelope::Read(r.sealing),
                Err(e) => {
                    item.envelope =
                        Envelope::Unreadable(format!("cannot read its envelope: {e:#}"));
                }
            }
        }
        items.push(item);
    }
    Ok(items)
}

/// The final report (`report.json`).
#[derive(Debug, Serialize)]
struct Report {
    bucket: String,
    prefix: String,
    to: Vec<String>,
    versions: usize,
    moved: usize,
    /// Of the moved and finished: re-wrapped (the others re-encrypted).
    rewrapped: usize,
    finished: usize,
    deleted: usize,
    changed: usize,
    failed: usize,
    plaintext_bytes: u64,
    seconds: f64,
    outcomes: Vec<(String, String, Outcome)>,
}

fn sender(a: &MigrateArgs, publics: &[PublicKey]) -> Result<v2::Sender> {
    let refs: Vec<&PublicKey> = publics.iter().collect();
    let version = if a.rewrap || a.rewrappable {
        v2::HeaderVersion::V2_1
    } else {
        v2::HeaderVersion::V2
    };
    let make =
        |p| v2::Sender::new(a.backend, &refs, a.allow_mixed, p)?.with_header_version(version);
    Ok(match a.header {
        Some(HeaderPlacement::Metadata) => make(Placement::Metadata)?,
        Some(HeaderPlacement::Prefix) => make(Placement::Prefix)?,
        None => make(Placement::Metadata).or_else(|_| make(Placement::Prefix))?,
    })
}

/// `pqbench migrate`.
pub(crate) fn migrate(a: MigrateArgs) -> Result<()> {
    let settings = a.s3.settings("migrate")?;
    let mut secrets = Vec::new();
    for p in &a.secrets {
        let sk = SecretKey::read_file(p)
            .with_context(|| format!("--secret {}: cannot use it", p.display()))?;
        secrets.push((sk.key_id_hex()?, sk));
    }
    let mut publics = Vec::new();
    for p in &a.recipients {
        publics.push(
            PublicKey::read_file(p)
                .with_context(|| format!("--recipient {}: cannot use it", p.display()))?,
        );
    }
    let sender = sender(&a, &publics).context("the new recipients")?;
    let new_ids: Vec<String> = publics.iter().map(PublicKey::key_id_hex).collect();
    let verify = match &a.verify_secret {
        Some(p) => {
            let sk = SecretKey::read_file(p)
                .with_context(|| format!("--verify-secret {}: cannot use it", p.display()))?;
            if !new_ids.contains(&sk.key_id_hex()?) {
                bail!(
                    "--verify-secret {}: not one of the new recipients' keys",
                    p.display()
                );
            }
            Some(v2::Receiver::new(a.backend, &sk)?)
        }
        None => None,
    };
    let dir = a
        .journal
        .clone()
        .unwrap_or_else(|| PathBuf::from("pqbench-migrate").join(&a.bucket));
    let journal = Journal::open(&dir)?;
    let store = Store::new(&settings, &a.bucket, &a.tenant)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let items = rt.block_on(plan(
        &store,
        &a.prefix,
        &journal,
        a.delete_old,
        usize::from(a.concurrency),
    ))?;
    if a.dry_run {
        println!(
            "would move {} version(s) of s3://{}/{} to {} (journal {}):",
            items.len(),
            a.bucket,
            a.prefix,
            new_ids.join(", "),
            journal.path.display()
        );
        for i in &items {
            let what = match (&i.envelope, i.slot.done.is_some()) {
                (_, true) => "delete (moved earlier)".to_owned(),
                (Envelope::Read(s), _) if a.rewrap && s.rewrappable => {
                    format!("v2.1 {} → re-wrap", s.kems())
                }
                (Envelope::Read(s), _) => format!(
                    "{} {} → {}",
                    i.old.format.name(),
                    s.kems(),
                    sender.header_version().name()
                ),
                (Envelope::NotRead, _) => "finish".to_owned(),
                (Envelope::Unreadable(why), _) => format!("fails: {why}"),
            };
            println!("  {} {}  {what}", i.key, i.old.version);
        }
        return Ok(());
    }
    let ctx = Arc::new(Ctx {
        store,
        secrets,
        sender,
        new_ids: new_ids.clone(),
        verify,
        backend: a.backend,
        delete_old: a.delete_old,
        rewrap: a.rewrap,
        journal,
    });
    let started = Instant::now();
    let outcomes = rt.block_on(run(
        Arc::clone(&ctx),
        items.clone(),
        usize::from(a.concurrency),
    ))?;
    let report = summarise(
        &a,
        new_ids,
        &items,
        outcomes,
        started.elapsed().as_secs_f64(),
    );
    let path = dir.join("report.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    print_report(&report, &path);
    if report.failed > 0 {
        bail!(
            "{} version(s) failed (reasons above); run the same command again to retry them",
            report.failed
        );
    }
    Ok(())
}

/// Moves the items, `concurrency` keys at a time. The items of one key (a move a killed run
/// started, and the key's latest version) go one after the other, oldest version first, so
/// that finishing or undoing the first is done before the second looks at the key.
async fn run(ctx: Arc<Ctx>, items: Vec<Item>, concurrency: usize) -> Result<Vec<Outcome>> {
    let progress = Progress::new("versions moved", items.len() as u64, Unit::Count);
    let mut out: Vec<Option<Outcome>> = vec![None; items.len()];
    let mut by_key: BTreeMap<String, Vec<(usize, Item)>> = BTreeMap::new();
    for (i, item) in items.into_iter().enumerate() {
        by_key.entry(item.key.clone()).or_default().push((i, item));
    }
    let mut set = tokio::task::JoinSet::new();
    let mut next = by_key.into_values();
    let mut done = 0u64;
    loop {
        while set.len() < concurrency {
            let Some(mut group) = next.next() else { break };
            group.sort_by(|a, b| a.1.old.version.cmp(&b.1.old.version));
            let ctx = Arc::clone(&ctx);
            set.spawn(async move {
                let mut results = Vec::with_capacity(group.len());
                for (i, item) in group {
                    let r = move_one(&ctx, &item).await;
                    results.push((i, item, r));
                }
                results
            });
        }
        let Some(joined) = set.join_next().await else {
            break;
        };
        for (i, item, r) in joined.context("a move panicked")? {
            let outcome = r.unwrap_or_else(|e| {
                let reason = format!("{e:#}");
                let _ = ctx.journal.append(&Line::Failed {
                    key: item.key.clone(),
                    old: item.old.version.clone(),
                    reason: reason.clone(),
                });
                progress.line(&format!(
                    "failed: {} {}: {reason}",
                    item.key, item.old.version
                ));
                Outcome::Failed { reason }
            });
            out[i] = Some(outcome);
            done += 1;
        }
        progress.set(done, "", None);
    }
    progress.finish();
    out.into_iter()
        .map(|o| o.context("a move did not report"))
        .collect()
}

fn summarise(
    a: &MigrateArgs,
    to: Vec<String>,
    items: &[Item],
    outcomes: Vec<Outcome>,
    seconds: f64,
) -> Report {
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    Report {
        bucket: a.bucket.clone(),
        prefix: a.prefix.clone(),
        to,
        versions: items.len(),
        moved: count(|o| matches!(o, Outcome::Moved { .. })),
        rewrapped: count(|o| {
            matches!(
                o,
                Outcome::Moved {
                    rewrapped: true,
                    ..
                } | Outcome::Finished {
                    rewrapped: true,
                    ..
                }
            )
        }),
        finished: count(|o| matches!(o, Outcome::Finished { .. })),
        deleted: count(|o| {
            matches!(
                o,
                Outcome::Deleted
                    | Outcome::Moved { deleted: true, .. }
                    | Outcome::Finished { deleted: true, .. }
            )
        }),
        changed: count(|o| matches!(o, Outcome::Changed { .. })),
        failed: count(|o| matches!(o, Outcome::Failed { .. })),
        plaintext_bytes: items
            .iter()
            .zip(&outcomes)
            .filter(|(_, o)| matches!(o, Outcome::Moved { .. } | Outcome::Finished { .. }))
            .filter_map(|(i, _)| match &i.envelope {
                Envelope::Read(s) => Some(s.plaintext_size),
                _ => None,
            })
            .sum(),
        seconds,
        outcomes: items
            .iter()
            .zip(outcomes)
            .map(|(i, o)| (i.key.clone(), i.old.version.clone(), o))
            .collect(),
    }
}

fn print_report(r: &Report, path: &Path) {
    println!(
        "s3://{}/{}: {} version(s): {} moved, {} finished from an earlier run ({} of these by re-wrap), {} old deleted, {} changed by another writer, {} failed; {} plaintext bytes in {:.1} s",
        r.bucket,
        r.prefix,
        r.versions,
        r.moved,
        r.finished,
        r.rewrapped,
        r.deleted,
        r.changed,
        r.failed,
        r.plaintext_bytes,
        r.seconds
    );
    for (key, old, o) in &r.outcomes {
        match o {
            Outcome::Changed { reason } => println!("  changed: {key} {old}: {reason}"),
            Outcome::Failed { reason } => println!("  failed: {key} {old}: {reason}"),
            _ => {}
        }
    }
    println!("report: {}", path.display());
}
