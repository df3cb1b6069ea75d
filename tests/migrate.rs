//! `pqbench migrate` as a user runs it, against the embedded S3 server and Garage over
//! HTTP (docs/src/envelope/migration.md): killed with SIGKILL ten times at random instants
//! while another writer commits fresh versions to some keys, then run to the end, it leaves
//! a bucket where every key's latest version opens with the new key to its newest content,
//! no version is lost or doubled, and the old versions stay until `--delete-old`; a key
//! whose version changed under a started move is reported, not overwritten. On the
//! embedded server the runs re-wrap the v2.1 versions (`--rewrap`, FORMAT-v2.md §10) and
//! re-encrypt the rest; on Garage they re-encrypt everything.

#[path = "../s3/tests/support/servers.rs"]
#[allow(
    dead_code,
    reason = "the migrate test uses part of the servers' interface"
)]
mod servers;

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{kill_group, ok, s};
use servers::{BUCKET, Kind, TestServer};

/// `pqbench` against `server`, its credentials in the environment and its temporary files
/// under `tmp` (a SIGKILL skips every clean-up).
fn cmd(server: &TestServer, tmp: &Path, args: &[&str]) -> Command {
    let st = server.settings();
    let t = tmp.join("tmp");
    std::fs::create_dir_all(&t).expect("TMPDIR");
    let mut c = Command::new(env!("CARGO_BIN_EXE_pqbench"));
    c.env("AWS_ENDPOINT_URL", &st.endpoint)
        .env("AWS_ACCESS_KEY_ID", &st.access_key)
        .env("AWS_SECRET_ACCESS_KEY", st.secret_key.as_str())
        .env("AWS_REGION", &st.region)
        .env("TMPDIR", t)
        .args(args);
    c
}

fn run(server: &TestServer, tmp: &Path, args: &[&str]) -> Output {
    cmd(server, tmp, args).output().expect("run pqbench")
}

/// SplitMix64, for reproducible random instants.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

struct Bucket<'a> {
    server: &'a TestServer,
    tmp: PathBuf,
    keys: PathBuf,
}

impl<'a> Bucket<'a> {
    /// The bucket of `server`, with the old (x25519) and new (ml-kem-768) key pairs made
    /// by `pqbench keygen` under `dir`.
    fn new(server: &'a TestServer, dir: &Path) -> Self {
        let b = Bucket {
            server,
            tmp: dir.to_owned(),
            keys: dir.join("keys"),
        };
        for (name, mode) in [("old", "x25519"), ("new", "ml-kem-768")] {
            let out = b.keys.join(name);
            ok(
                &run(
                    server,
                    &b.tmp,
                    &["keygen", "--mode", mode, "--out", s(&out)],
                ),
                "keygen",
            );
        }
        b
    }

    fn key(&self, name: &str, file: &str) -> String {
        s(&self.keys.join(name).join(file)).to_owned()
    }

    fn put(&self, key: &str, content: &[u8], how: &[&str]) {
        let input = self.tmp.join(format!("in-{}", key.replace('/', "_")));
        std::fs::write(&input, content).expect("input");
        let mut args = vec!["put", "--bucket", BUCKET, "--key", key, "--in", s(&input)];
        args.extend_from_slice(how);
        ok(&run(self.server, &self.tmp, &args), &format!("put {key}"));
    }

    /// `pqbench ls --key`: (version, format) oldest first.
    fn versions(&self, key: &str) -> Vec<(String, String)> {
        let out = ok(
            &run(
                self.server,
                &self.tmp,
                &["ls", "--bucket", BUCKET, "--key", key],
            ),
            "ls",
        );
        out.lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let v = w.next()?;
                let f = w.next()?;
                (v.len() == 36).then(|| (v.to_owned(), f.to_owned()))
            })
            .collect()
    }

    /// The plaintext of `key`'s latest version read with `secret` (format v1 or v2).
    fn read(&self, key: &str, version: Option<&str>, format: &str, secret: &str) -> Vec<u8> {
        let out = self.tmp.join("out");
        let _ = std::fs::remove_file(&out);
        let mut args = vec![
            "get",
            "--bucket",
            BUCKET,
            "--key",
            key,
            "--format",
            format,
            "--secret",
            secret,
            "--out",
            s(&out),
        ];
        if format == "v1" {
            args.extend_from_slice(&["--expect-mode", "x25519"]);
        }
        if let Some(v) = version {
            args.extend_from_slice(&["--version", v]);
        }
        ok(&run(self.server, &self.tmp, &args), &format!("get {key}"));
        std::fs::read(&out).expect("plaintext")
    }
}

fn content(key: &str, round: u32, len: usize) -> Vec<u8> {
    let seed = format!("{key}/{round}/");
    seed.bytes().cycle().take(len).collect()
}

fn migrate_args<'a>(b: &'a Bucket<'_>, journal: &'a str, extra: &[&'a str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "migrate",
        "--bucket",
        BUCKET,
        "--prefix",
        "m/",
        "--secret",
        &b.key("old", "recipient.key"),
        "--recipient",
        &b.key("new", "recipient.pub"),
        "--verify-secret",
        &b.key("new", "recipient.key"),
        "--journal",
        journal,
        "--concurrency",
        "3",
    ]
    .iter()
    .map(|x| (*x).to_owned())
    .collect();
    a.extend(extra.iter().map(|x| (*x).to_owned()));
    a
}

fn killed_ten_times(kind: Kind, rewrap: bool) {
    let server = TestServer::start(kind);
    let dir = tempfile::tempdir().expect("tmp");
    let b = Bucket::new(&server, dir.path());
    let old_pub = b.key("old", "recipient.pub");
    let new_pub = b.key("new", "recipient.pub");
    // 40 classical keys (v1, v2, v2.1 with the header in metadata and as a prefix; 1 KiB
    // to 2 MiB), 4 already post-quantum, and for 5 of the classical ones an older classical
    // version too.
    let mut latest: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut rewrappable: Vec<String> = Vec::new();
    let mut pq: Vec<String> = Vec::new();
    for i in 0..40u32 {
        let key = format!("m/k{i:02}");
        let len = [1024, 5000, 70_000, 2_100_000][i as usize % 4];
        if i < 5 {
            b.put(
                &key,
                &content(&key, 0, 300),
                &["--mode", "x25519", "--recipient", &old_pub],
            );
        }
        let c = content(&key, 1, len);
        let v2 = ["--format", "v2", "--recipient", &old_pub];
        match i % 5 {
            1 => b.put(&key, &c, &v2),
            2 => b.put(&key, &c, &[&v2[..], &["--rewrappable"]].concat()),
            3 => b.put(
                &key,
                &c,
                &[&v2[..], &["--rewrappable", "--header", "prefix"]].concat(),
            ),
            _ => b.put(&key, &c, &["--mode", "x25519", "--recipient", &old_pub]),
        }
        if matches!(i % 5, 2 | 3) {
            rewrappable.push(key.clone());
        }
        latest.insert(key, c);
    }
    for i in 0..4u32 {
        let key = format!("m/pq{i}");
        b.put(
            &key,
            &content(&key, 1, 2000),
            &["--format", "v2", "--recipient", &new_pub],
        );
        pq.push(key);
    }
    let before: BTreeMap<String, Vec<(String, String)>> = latest
        .keys()
        .chain(&pq)
        .map(|k| (k.clone(), b.versions(k)))
        .collect();

    let journal = dir.path().join("journal");
    let journal_s = s(&journal).to_owned();
    let how: &[&str] = if rewrap { &["--rewrap"] } else { &[] };
    let args = migrate_args(&b, &journal_s, how);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Each kill lands while the run is moving: after 1 to 4 new journal lines (a move
    // started or done) and a random 0-20 ms more.
    let mut rng = Rng(match kind {
        Kind::Embedded => 42,
        Kind::Garage => 43,
    });
    let lines = || {
        std::fs::read_to_string(journal.join("migrate.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    let mut interrupted = 0;
    let mut fresh: Vec<String> = Vec::new();
    for n in 0..10u32 {
        let stderr = dir.path().join(format!("migrate-{n}.txt"));
        let base = lines();
        let mut child = cmd(&server, &b.tmp, &args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr"))
            .process_group(0)
            .spawn()
            .expect("spawn migrate");
        let want = base + 1 + usize::try_from(rng.below(4)).expect("small");
        let t0 = Instant::now();
        while lines() < want && child.try_wait().expect("wait").is_none() {
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "run {n} made no progress"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // Another writer, during the move: a fresh classical version of one key.
        if n % 3 == 1 {
            let key = format!("m/k{:02}", rng.below(40));
            let c = content(&key, 2 + n, 3000);
            b.put(&key, &c, &["--mode", "x25519", "--recipient", &old_pub]);
            latest.insert(key.clone(), c);
            fresh.push(key);
        }
        std::thread::sleep(Duration::from_millis(rng.below(20)));
        match child.try_wait().expect("wait") {
            Some(status) => {
                let err = std::fs::read_to_string(&stderr).unwrap_or_default();
                assert!(status.success(), "run {n} failed by itself: {err}");
            }
            None => {
                kill_group(&child);
                let _ = child.wait();
                interrupted += 1;
            }
        }
    }
    let last = run(&server, &b.tmp, &args);
    let out = ok(&last, "the last, uninterrupted run");
    assert!(out.contains(" 0 failed"), "{out}");
    println!(
        "{kind:?}: {interrupted} of 10 runs killed mid-move; fresh writes to {fresh:?}; last run: {out}"
    );
    assert!(
        interrupted >= 5,
        "only {interrupted} of 10 kills landed mid-move"
    );

    // Every classical key: its versions before, the fresh ones, and exactly one new v2
    // version per version that was moved; the latest opens with the new key to the newest
    // content. Post-quantum keys are untouched.
    let journal_text = std::fs::read_to_string(journal.join("migrate.jsonl")).expect("journal");
    let events: Vec<serde_json::Value> = journal_text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let slot = |v: &serde_json::Value| (v["key"].clone(), v["old"].clone());
    let changed: Vec<&serde_json::Value> =
        events.iter().filter(|v| v["event"] == "changed").collect();
    let changed_slots: Vec<_> = changed.iter().map(|v| slot(v)).collect();
    // A move later found to shadow another writer's version is undone ("changed"): its
    // new version is gone, its old version stays.
    let undone: Vec<&serde_json::Value> = events
        .iter()
        .filter(|v| v["event"] == "done" && changed_slots.contains(&slot(v)))
        .collect();
    let done: Vec<serde_json::Value> = events
        .iter()
        .filter(|v| v["event"] == "done" && !changed_slots.contains(&slot(v)))
        .cloned()
        .collect();
    println!("{kind:?}: changed by the other writer: {changed:#?}");
    // A re-wrap is journalled without a plaintext hash (it never decrypts): exactly the
    // moves of a v2.1 key's own version, when asked for.
    let rewrapped: Vec<&serde_json::Value> =
        done.iter().filter(|d| d.get("sha256").is_none()).collect();
    for d in &rewrapped {
        let key = d["key"].as_str().expect("key");
        assert!(
            rewrappable.iter().any(|k| k == key),
            "{key}: re-wrapped, not v2.1"
        );
        assert_eq!(
            d["old"].as_str(),
            before[key].last().map(|v| v.0.as_str()),
            "{key}: only its v2.1 version is re-wrapped"
        );
    }
    if rewrap {
        assert!(
            rewrapped.len() >= rewrappable.len() - fresh.len(),
            "{rewrapped:#?}"
        );
    } else {
        assert!(
            rewrapped.is_empty(),
            "re-wrapped without --rewrap: {rewrapped:#?}"
        );
    }
    for u in &undone {
        let key = u["key"].as_str().expect("key");
        let new = u["new"].as_str().expect("new");
        assert!(
            !b.versions(key).iter().any(|v| v.0 == new),
            "{key}: undone {new} remains"
        );
    }
    for (key, c) in &latest {
        let now = b.versions(key);
        let was = &before[key];
        for v in was {
            assert!(now.contains(v), "{key}: version {v:?} was lost: {now:?}");
        }
        let added: Vec<&(String, String)> = now.iter().filter(|v| !was.contains(v)).collect();
        let ours: Vec<&str> = done
            .iter()
            .filter(|d| d["key"] == key.as_str())
            .map(|d| d["new"].as_str().expect("new"))
            .collect();
        let mut unique = ours.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            ours.len(),
            "{key}: a version journalled done twice"
        );
        for (v, f) in &added {
            if f == "v2" {
                assert!(
                    ours.contains(&v.as_str()),
                    "{key}: {v} is not in the journal: {now:?}"
                );
            }
        }
        let latest_version = now.last().expect("a version");
        assert_eq!(
            latest_version.1, "v2",
            "{key}: latest is not a moved version: {now:?}"
        );
        let got = b.read(key, None, "v2", &b.key("new", "recipient.key"));
        assert!(
            &got == c,
            "{key}: the latest version does not hold the newest content"
        );
    }
    for key in &pq {
        assert_eq!(b.versions(key), before[key], "{key} was touched");
    }

    // --delete-old removes exactly the moved versions, and nothing else.
    let args = migrate_args(&b, &journal_s, &[how, &["--delete-old"]].concat());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ok(&run(&server, &b.tmp, &args), "--delete-old");
    assert!(out.contains(" 0 failed"), "{out}");
    for d in &done {
        let key = d["key"].as_str().expect("key");
        let now = b.versions(key);
        let old = d["old"].as_str().expect("old");
        let new = d["new"].as_str().expect("new");
        assert!(!now.iter().any(|v| v.0 == old), "{key}: {old} not deleted");
        assert!(now.iter().any(|v| v.0 == new), "{key}: {new} lost");
    }
    // The first classical versions of k00..k04 were never latest, so never moved: kept.
    for i in 0..5 {
        let key = format!("m/k{i:02}");
        let first = &before[&key][0];
        assert!(
            b.versions(&key).contains(first),
            "{key}: an unmoved version was deleted"
        );
    }
}

#[test]
fn migrate_with_rewrap_killed_ten_times_on_the_embedded_server() {
    killed_ten_times(Kind::Embedded, true);
}

#[test]
fn migrate_killed_ten_times_on_garage() {
    killed_ten_times(Kind::Garage, false);
}

/// A run killed after journalling a started move; another writer commits before the
/// resumed run: the key is reported, its new version is the other writer's, and nothing
/// of the migration is left.
#[test]
fn a_key_changed_under_a_started_move_is_reported_not_overwritten() {
    let server = TestServer::start(Kind::Embedded);
    let dir = tempfile::tempdir().expect("tmp");
    let b = Bucket::new(&server, dir.path());
    let old_pub = b.key("old", "recipient.pub");
    b.put(
        "m/doc",
        b"stale",
        &["--mode", "x25519", "--recipient", &old_pub],
    );
    let old = b.versions("m/doc")[0].0.clone();
    // What a run killed right after its "started" line leaves: that line, no object.
    let journal = dir.path().join("journal");
    std::fs::create_dir_all(&journal).expect("journal dir");
    let ours = "01a00000-0000-7000-8000-000000000001";
    std::fs::write(
        journal.join("migrate.jsonl"),
        format!(
            "{{\"event\":\"started\",\"key\":\"m/doc\",\"old\":\"{old}\",\"new\":\"{ours}\",\"sha256\":\"00\"}}\n"
        ),
    )
    .expect("journal");
    b.put(
        "m/doc",
        b"fresh",
        &["--mode", "x25519", "--recipient", &old_pub],
    );
    let args = migrate_args(&b, s(&journal), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = ok(&run(&server, &b.tmp, &args), "migrate");
    assert!(out.contains("1 changed by another writer"), "{out}");
    assert!(out.contains(&format!("changed: m/doc {old}")), "{out}");
    let now = b.versions("m/doc");
    assert!(!now.iter().any(|v| v.0 == ours), "{now:?}");
    // The other writer's version, newest, was moved in the same run: "fresh" under the new key.
    assert_eq!(now.last().expect("latest").1, "v2", "{now:?}");
    assert_eq!(
        b.read("m/doc", None, "v2", &b.key("new", "recipient.key")),
        b"fresh"
    );
    assert_eq!(
        b.read("m/doc", Some(&old), "v1", &b.key("old", "recipient.key")),
        b"stale"
    );
}

/// A writer that drew its version before ours and committed after our last check: our
/// copy, the greatest version, shadows its newer content. The next run removes our copy,
/// moves the other writer's version instead, and never deletes the old version whose move
/// was undone.
#[test]
fn a_copy_that_shadows_a_later_commit_is_removed_by_the_next_run() {
    let server = TestServer::start(Kind::Embedded);
    let dir = tempfile::tempdir().expect("tmp");
    let b = Bucket::new(&server, dir.path());
    let old_pub = b.key("old", "recipient.pub");
    b.put(
        "m/doc",
        b"stale",
        &["--mode", "x25519", "--recipient", &old_pub],
    );
    let journal = dir.path().join("journal");
    let args = migrate_args(&b, s(&journal), &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(&server, &b.tmp, &args), "first run");
    let vs = b.versions("m/doc");
    let (old, ours) = (vs[0].0.clone(), vs[1].0.clone());
    // The other writer's version: after the old one in the same millisecond, so before
    // ours; committed now, through the library as any writer would.
    let other = format!("{}ffffffffffff", &old[..24]);
    assert!(old < other && other < ours, "{old} {other} {ours}");
    let store = s3::Store::new(&server.settings(), BUCKET, "default").expect("store");
    let public = envelope::PublicKey::read_file(Path::new(&old_pub)).expect("public key");
    let sender = envelope::v2::Sender::new(
        envelope::Backend::AwsLc,
        &[&public],
        false,
        envelope::v2::Placement::Metadata,
    )
    .expect("sender");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(store.put_v2_as(&sender, "m/doc", &other, 5, &b"fresh"[..], &mut |_| {}))
        .expect("the other writer's version");
    assert_eq!(b.versions("m/doc").last().expect("latest").0, ours);

    let out = run(&server, &b.tmp, &args);
    let stdout = ok(&out, "second run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "changed: m/doc {old}: {other} was committed under our copy {ours}"
        )),
        "{stderr}"
    );
    assert!(stdout.contains("1 moved"), "{stdout}");
    let now = b.versions("m/doc");
    assert!(!now.iter().any(|v| v.0 == ours), "{now:?}");
    assert_eq!(
        b.read("m/doc", None, "v2", &b.key("new", "recipient.key")),
        b"fresh"
    );

    // --delete-old deletes the other writer's moved version, never the one whose move
    // was undone.
    let args = migrate_args(&b, s(&journal), &["--delete-old"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(&server, &b.tmp, &args), "--delete-old");
    let now = b.versions("m/doc");
    assert!(now.iter().any(|v| v.0 == old), "{now:?}");
    assert!(!now.iter().any(|v| v.0 == other), "{now:?}");
    assert_eq!(
        b.read("m/doc", None, "v2", &b.key("new", "recipient.key")),
        b"fresh"
    );
}
