//! The hostile-input table (issue 22): inputs a mistaken or malicious user, file, bucket or
//! server can hand pqbench, each given to the `pqbench` binary as a user gives it (a
//! campaign file to `pqbench plan`, a RunSpec on the stdin of `pqbench run-spec`, an
//! endpoint to `pqbench ls`, a results directory to `pqbench validate`), with the clear
//! error it must meet: exit status 1, the expected words on stderr, no panic, within a bound
//! that only turns a hang into a failure. Every row is run and the table printed before
//! any failure is reported (`cargo test --test hostile -- --nocapture` shows it).

#[allow(dead_code, reason = "the shared helpers this table does not use")]
mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The S3 secret every endpoint case is given: it must appear in no output.
const SECRET: &str = "hostile-secret-7Qx9ZtRv2Lk4";

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn pqbench(args: &[&str], stdin: Option<&[u8]>) -> Outcome {
    let state = tempfile::tempdir().expect("state dir");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .args(args)
        .env("XDG_STATE_HOME", state.path())
        .env("AWS_ACCESS_KEY_ID", "AKIAHOSTILETEST")
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env_remove("AWS_ENDPOINT_URL")
        .env("RUST_BACKTRACE", "0")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start pqbench");
    if let Some(bytes) = stdin {
        let mut w = child.stdin.take().expect("stdin");
        // The process may refuse before reading it all (a broken pipe is its answer).
        let _ = w.write_all(bytes);
    }
    let out = child.wait_with_output().expect("wait for pqbench");
    Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// What is wrong with an outcome that should be a refusal containing `expect`.
fn refusal_problem(o: &Outcome, expect: &str, bound: Duration) -> Option<String> {
    let all = format!("{}{}", o.stdout, o.stderr);
    if all.contains("panicked") {
        Some(format!("panicked: {}", o.stderr.trim()))
    } else if all.contains(SECRET) {
        Some("the S3 secret key appears in the output".into())
    } else if o.code != Some(1) {
        Some(format!("exit {:?} (want 1): {}", o.code, o.stderr.trim()))
    } else if !o.stderr.contains(expect) {
        Some(format!("stderr lacks {expect:?}: {}", o.stderr.trim()))
    } else if o.took > bound {
        Some(format!("took {:?} (bound {bound:?})", o.took))
    } else {
        None
    }
}

/// One row: its name, the words its refusal must hold, its time bound, and how to run it.
type Row<'a> = (String, &'a str, Duration, Box<dyn FnOnce() -> Outcome + 'a>);

/// How a damaged or foreign results directory is made.
type MakeDir = Box<dyn Fn(&Path)>;

/// Runs every row, prints the table, then fails with every row that went wrong.
fn table(title: &str, rows: Vec<Row<'_>>) {
    let mut failed = Vec::new();
    println!("\n{title}");
    println!("{:<44} {:>8}  result", "input", "ms");
    for (name, expect, bound, run) in rows {
        let o = run();
        let problem = refusal_problem(&o, expect, bound);
        let first = o.stderr.lines().next().unwrap_or("").to_owned();
        println!(
            "{name:<44} {:>8}  {}",
            o.took.as_millis(),
            match &problem {
                None => format!("refused: {}", cut(&first, 150)),
                Some(p) => format!("FAILED: {}", cut(p, 300)),
            }
        );
        if let Some(p) = problem {
            failed.push(format!("{name}: {p}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} rows failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// `text` with the first `from` replaced by `to`; the edit must apply.
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "the example no longer holds {from:?}");
    text.replacen(from, to, 1)
}

/// The billion-laughs document: nine levels of nine aliases each.
fn billion_laughs() -> String {
    let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        s.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    s
}

/// A map nested `depth` levels deep by indentation (no brackets).
fn deep_block(depth: usize) -> String {
    (0..depth).fold(String::new(), |mut s, i| {
        s.push_str(&" ".repeat(i));
        s.push_str("a:\n");
        s
    }) + &" ".repeat(depth)
        + "b: 1\n"
}

#[test]
fn campaign_files_hostile_or_mistyped_are_refused_with_what_is_wrong() {
    let quick = std::fs::read_to_string(repo("examples/quick.yaml")).expect("quick.yaml");
    let dir = tempfile::tempdir().expect("dir");
    let e = |from: &str, to: &str| edit(&quick, from, to);
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "YAML bomb (9^9 aliases)",
            billion_laughs(),
            "billion laughs",
        ),
        (
            "flow nesting 100000 deep",
            format!("a: {}{}", "[".repeat(100_000), "]".repeat(100_000)),
            "nested more than 128 deep",
        ),
        (
            "block nesting 200 deep",
            deep_block(200),
            "recursion limit exceeded",
        ),
        (
            "a 2 MiB scalar",
            e("name: quick", &format!("name: {}", "q".repeat(2 << 20))),
            "more than 1024 KiB",
        ),
        (
            "a 300 KB name",
            e("name: quick", &format!("name: {}", "q".repeat(300_000))),
            "metadata.name",
        ),
        (
            "duplicate key spec.repetitions",
            e("  repetitions: 10", "  repetitions: 10\n  repetitions: 12"),
            "duplicate entry with key \"repetitions\"",
        ),
        (
            "duplicate key in an arm",
            e(
                "{mode: x25519, backend: aws-lc}",
                "{mode: x25519, mode: x-wing, backend: aws-lc}",
            ),
            "duplicate entry with key \"mode\"",
        ),
        (
            "NaN margin",
            e("margin: 0.05", "margin: .nan"),
            "spec.analysis.margin: .nan is not a number",
        ),
        (
            "infinite repetitions",
            e("repetitions: 10", "repetitions: .inf"),
            "spec.repetitions: .inf is not a number",
        ),
        (
            "a YAML tag",
            e("interleave: {slice: 100ms}", "interleave: !slice 100ms"),
            "spec.interleave: YAML tags",
        ),
        (
            "top-level unknown field",
            e(
                "kind: BenchmarkCampaign",
                "kind: BenchmarkCampaign\nbogus: 1",
            ),
            "bogus: unknown field `bogus`",
        ),
        (
            "metadata unknown field",
            e("  name: quick", "  name: quick\n  bogus: 1"),
            "metadata.bogus: unknown field",
        ),
        (
            "spec unknown field",
            e("  repetitions: 10", "  repetitions: 10\n  bogus: 1"),
            "spec.bogus: unknown field",
        ),
        (
            "arm unknown field",
            e(
                "{mode: x25519, backend: aws-lc}",
                "{mode: x25519, backend: aws-lc, bogus: 1}",
            ),
            "spec.arms[0].bogus: unknown field",
        ),
        (
            "cell unknown field",
            e(
                "      clientCores: [1]",
                "      clientCores: [1]\n      bogus: [1]",
            ),
            "spec.cells[0].bogus: unknown field",
        ),
        (
            "interleave unknown field",
            e("{slice: 100ms}", "{slice: 100ms, bogus: 1}"),
            "spec.interleave.bogus: unknown field",
        ),
        (
            "pause unknown field",
            e("    quietFor: 1s", "    quietFor: 1s\n    bogus: 1"),
            "spec.pause.bogus: unknown field",
        ),
        (
            "analysis unknown field",
            e("    margin: 0.05", "    margin: 0.05\n    bogus: 1"),
            "spec.analysis.bogus: unknown field",
        ),
        (
            "comparison unknown field",
            e(
                "{arm: ml-kem-768, against: x25519}",
                "{arm: ml-kem-768, against: x25519, bogus: 1}",
            ),
            "spec.analysis.comparisons[0].bogus: unknown field",
        ),
        (
            "primary entry unknown field",
            e(
                "{cell: get-1KiB-c8-cores1}",
                "{cell: get-1KiB-c8-cores1, bogus: 1}",
            ),
            "spec.analysis.primary[0]: unknown field `bogus`",
        ),
        (
            "repetitions 0",
            e("repetitions: 10", "repetitions: 0"),
            "spec.repetitions: 0 is too few",
        ),
        (
            "repetitions -3",
            e("repetitions: 10", "repetitions: -3"),
            "spec.repetitions: invalid value",
        ),
        (
            "repetitions 10^9",
            e("repetitions: 10", "repetitions: 1000000000"),
            "one campaign plans at most 100000",
        ),
        (
            "concurrency 0",
            e("concurrency: [8]", "concurrency: [0]"),
            "concurrency[0]: must be at least 1",
        ),
        (
            "concurrency 10^9",
            e("concurrency: [8]", "concurrency: [1000000000]"),
            "spec.cells[0].concurrency: 1000000000 workers",
        ),
        (
            "clientCores 0",
            e("clientCores: [1]", "clientCores: [0]"),
            "clientCores[0]: must be at least 1",
        ),
        (
            "object size 1 PiB",
            e("objectSize: [1KiB]", "objectSize: [1PiB]"),
            "unknown size unit",
        ),
        (
            "object size 2^64 bytes",
            e("objectSize: [1KiB]", "objectSize: [18446744073709551616]"),
            "larger than any field takes",
        ),
        (
            "negative warm-up",
            e("warmup: 1s", "warmup: -1s"),
            "spec.warmup: \"-1s\" is not a duration",
        ),
        (
            "measured 0s",
            e("measured: 4s", "measured: 0s"),
            "spec.measured: must be positive",
        ),
        (
            "measured 10^8 hours",
            e("measured: 4s", "measured: 100000000h"),
            "out of range (at most 7 days)",
        ),
        (
            "measured 2^64-1 seconds",
            e("measured: 4s", "measured: 18446744073709551615"),
            "out of range (at most 7 days)",
        ),
        (
            "fixtures 4*10^9",
            e("fixtures: 16", "fixtures: 4000000000"),
            "spec.fixtures: 4000000000 is more than",
        ),
        (
            "margin 2",
            e("margin: 0.05", "margin: 2"),
            "must lie strictly between 0 and 0.5",
        ),
        (
            "seed above 2^64",
            e("seed: 20261201", "seed: 99999999999999999999999"),
            "spec.seed",
        ),
        (
            "slice 0ms",
            e("slice: 100ms", "slice: 0ms"),
            "shorter than 10ms",
        ),
        (
            "a list, not a map",
            "[1, 2, 3]\n".into(),
            "the document is a list",
        ),
        ("an empty file", String::new(), "holds no YAML document"),
    ];
    let mut rows: Vec<Row<'static>> = Vec::new();
    for (i, (name, text, expect)) in cases.into_iter().enumerate() {
        let path = dir.path().join(format!("case{i}.yaml"));
        std::fs::write(&path, text).expect("write case");
        rows.push((
            name.to_owned(),
            expect,
            Duration::from_secs(20),
            Box::new(move || pqbench(&["plan", common::s(&path)], None)),
        ));
    }
    // Not UTF-8, and not a file at all.
    let binary = dir.path().join("binary.yaml");
    std::fs::write(&binary, [0x80u8, 0xff, 0x00, b'a', b':', b' ', 0xc3]).expect("write");
    rows.push((
        "bytes that are not UTF-8".into(),
        "not UTF-8 text",
        Duration::from_secs(20),
        Box::new(move || pqbench(&["plan", common::s(&binary)], None)),
    ));
    let a_dir = dir.path().to_owned();
    rows.push((
        "a directory as the file".into(),
        "cannot read campaign file",
        Duration::from_secs(20),
        Box::new(move || pqbench(&["plan", common::s(&a_dir)], None)),
    ));
    table("campaign files (`pqbench plan FILE`)", rows);
}

#[test]
fn run_specs_hostile_or_out_of_range_are_refused_with_what_is_wrong() {
    let spec = std::fs::read_to_string(repo("fuzz/fixtures/run-dir/p0/spec.json"))
        .expect("a real RunSpec");
    let e = |from: &str, to: &str| edit(&spec, from, to);
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "unknown field at the top",
            e("\"block\": 0,", "\"block\": 0, \"bogus\": 1,"),
            "unknown field `bogus`",
        ),
        (
            "unknown field in the cell",
            e("\"concurrency\": 1,", "\"concurrency\": 1, \"bogus\": 1,"),
            "cell.bogus: unknown field",
        ),
        (
            "unknown field in s3",
            e(
                "\"region\": \"us-east-1\",",
                "\"region\": \"us-east-1\", \"bogus\": 1,",
            ),
            "s3.bogus: unknown field",
        ),
        (
            "duplicate key seed",
            e("\"seed\": 7,", "\"seed\": 7, \"seed\": 8,"),
            "duplicate entry with key \"seed\"",
        ),
        (
            "concurrency 0",
            e("\"concurrency\": 1,", "\"concurrency\": 0,"),
            "cell.concurrency must be at least 1",
        ),
        (
            "concurrency 10^9",
            e("\"concurrency\": 1,", "\"concurrency\": 1000000000,"),
            "cell.concurrency: 1000000000 workers",
        ),
        (
            "concurrency -1",
            e("\"concurrency\": 1,", "\"concurrency\": -1,"),
            "cell.concurrency: invalid value",
        ),
        (
            "NaN rate (YAML)",
            e("\"rate\": 8.0", "\"rate\": .nan"),
            "cell.loop.rate: .nan is not a number",
        ),
        (
            "infinite rate (YAML)",
            e("\"rate\": 8.0", "\"rate\": .inf"),
            "cell.loop.rate: .inf is not a number",
        ),
        (
            "negative rate",
            e("\"rate\": 8.0", "\"rate\": -8.0"),
            "rate",
        ),
        (
            "measured 10^6 hours",
            e("\"measured\": \"2s\"", "\"measured\": \"1000000h\""),
            "out of range (at most 7 days)",
        ),
        (
            "measured 0s",
            e("\"measured\": \"2s\"", "\"measured\": \"0s\""),
            "measured must be positive",
        ),
        (
            "fixtures 4*10^9",
            e("\"fixtures\": 4,", "\"fixtures\": 4000000000,"),
            "fixtures: 4000000000 is more than",
        ),
        (
            "process index beyond count",
            e("\"index\": 0", "\"index\": 5"),
            "processes",
        ),
        (
            "runId escaping the directory",
            e("\"runId\": \"fuzz-run\"", "\"runId\": \"../../etc\""),
            "runId \"../../etc\"",
        ),
        (
            "object size 2^70",
            e(
                "\"objectSize\": \"1KiB\"",
                "\"objectSize\": \"1180591620717411303424\"",
            ),
            "cell.objectSize",
        ),
        ("YAML bomb", billion_laughs(), "billion laughs"),
        (
            "flow nesting 100000 deep",
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            "nested more than 128 deep",
        ),
        (
            "a 2 MiB spec",
            format!("runId: {}\n", "r".repeat(2 << 20)),
            "more than 1024 KiB",
        ),
        (
            "not JSON or YAML",
            "{\"runId\": \"x\",, ]".into(),
            "invalid run spec: stdin",
        ),
    ];
    let rows = cases
        .into_iter()
        .map(|(name, text, expect)| {
            let run: Box<dyn FnOnce() -> Outcome> =
                Box::new(move || pqbench(&["run-spec"], Some(text.as_bytes())));
            (name.to_owned(), expect, Duration::from_secs(20), run)
        })
        .collect();
    table("RunSpecs (`pqbench run-spec` on stdin)", rows);
}

/// What a fake S3 endpoint answers to every request.
#[derive(Clone, Copy)]
enum Answer {
    /// Bytes that are not HTTP.
    Garbage,
    /// Accepts the request and never answers.
    Stall,
    /// A response head of 1 MiB.
    HugeHead,
    /// A listing that is not well-formed XML.
    BadXml,
    /// A 200 whose body ends before its Content-Length.
    Truncated,
    /// An error page that is not S3 XML.
    HtmlError,
    /// A well-formed listing of 20 MiB.
    HugeXml,
}

fn answer(a: Answer) -> Vec<u8> {
    let http = |status: &str, ctype: &str, body: &[u8], length: usize| {
        let mut r = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {length}\r\n\r\n"
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    };
    match a {
        Answer::Garbage => b"\x00\xffSSH-2.0-not-http\r\n\r\n".repeat(8),
        Answer::Stall => Vec::new(),
        Answer::HugeHead => {
            let mut r = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
            r.extend(std::iter::repeat_n(b'a', 1 << 20));
            r.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
            r
        }
        Answer::BadXml => {
            let body = b"<ListBucketResult><Contents><Key>a</Key><Size>many</Size></Contents";
            http("200 OK", "application/xml", body, body.len())
        }
        Answer::Truncated => {
            let body = b"<?xml version=\"1.0\"?><ListBucketResult>";
            http("200 OK", "application/xml", body, 100_000)
        }
        Answer::HtmlError => {
            let body = b"<html><body><h1>502 Bad Gateway</h1></body></html>";
            http("502 Bad Gateway", "text/html", body, body.len())
        }
        Answer::HugeXml => {
            let mut body =
                b"<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>false</IsTruncated>"
                    .to_vec();
            let entry = b"<Contents><Key>foreign/object</Key><Size>1</Size></Contents>";
            while body.len() < 20 << 20 {
                body.extend_from_slice(entry);
            }
            body.extend_from_slice(b"</ListBucketResult>");
            http("200 OK", "application/xml", &body, body.len())
        }
    }
}

/// A fake S3 endpoint on 127.0.0.1 giving `a` to every connection; its URL.
fn endpoint(a: Answer) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(&answer(a));
                let _ = conn.flush();
                // Hold the connection (a stall, or the client reading what was sent).
                std::thread::sleep(Duration::from_secs(if matches!(a, Answer::Stall) {
                    600
                } else {
                    1
                }));
            });
        }
    });
    url
}

#[test]
fn endpoints_answering_garbage_stalling_or_malformed_fail_with_what_happened() {
    let cases = [
        (
            Answer::Garbage,
            "garbage bytes",
            "not an HTTP response",
            "not an HTTP response",
        ),
        (
            Answer::HugeHead,
            "a 1 MiB response head",
            "not an HTTP response",
            "not an HTTP response",
        ),
        (
            Answer::Stall,
            "no answer at all (3 s timeout)",
            "timed out",
            "timed out",
        ),
        (
            Answer::BadXml,
            "malformed listing XML",
            "error parsing XML",
            "cannot parse the response document",
        ),
        (
            Answer::Truncated,
            "a body cut short",
            "ListObjectsV2 s3://b/",
            "ListObjectsV2 s3://b/",
        ),
        (
            Answer::HtmlError,
            "a 502 HTML page",
            "the server returned an error",
            "the server returned an error",
        ),
        (
            Answer::HugeXml,
            "a 20 MiB listing (lean client)",
            "",
            "exceeds 16777216 bytes",
        ),
    ];
    let mut rows: Vec<Row<'static>> = Vec::new();
    for (a, what, sdk, lean) in cases {
        let url = endpoint(a);
        for (client, expect) in [("aws-sdk", sdk), ("lean", lean)] {
            if expect.is_empty() {
                continue;
            }
            let url = url.clone();
            rows.push((
                format!("{what} [{client}]"),
                expect,
                Duration::from_secs(30),
                Box::new(move || {
                    pqbench(
                        &[
                            "ls",
                            "--endpoint",
                            &url,
                            "--bucket",
                            "b",
                            "--timeout",
                            "3s",
                            "--s3-client",
                            client,
                        ],
                        None,
                    )
                }),
            ));
        }
    }
    table("S3 endpoints (`pqbench ls`)", rows);

    // The AWS SDK has no size limit on a listing: a 20 MiB page of foreign keys is read and
    // lists no pqbench object (not an error, and no panic).
    let o = pqbench(
        &[
            "ls",
            "--endpoint",
            &endpoint(Answer::HugeXml),
            "--bucket",
            "b",
            "--timeout",
            "30s",
        ],
        None,
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(o.stdout.contains("no pqbench objects"), "{}", o.stdout);
    assert!(!o.stderr.contains("panicked") && !o.stderr.contains(SECRET));
}

/// A real process directory (`fuzz/fixtures/run-dir/p0`, from a `pqbench run-one`) under
/// `root/r1/p0`, with `file` replaced by `bytes` and SHA256SUMS made to match (`sums`).
fn run_dir(root: &Path, file: Option<(&str, &[u8])>, sums: bool) {
    let p0 = root.join("r1/p0");
    std::fs::create_dir_all(&p0).expect("mkdir");
    for entry in std::fs::read_dir(repo("fuzz/fixtures/run-dir/p0")).expect("fixture") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), p0.join(entry.file_name())).expect("copy");
    }
    if let Some((name, bytes)) = file {
        std::fs::write(p0.join(name), bytes).expect("write");
    }
    if sums {
        let text: String = [
            "records.parquet",
            "samples.parquet",
            "process.json",
            "spec.json",
            "summary.json",
        ]
        .iter()
        .map(|n| {
            use sha2::Digest as _;
            let bytes = std::fs::read(p0.join(n)).expect("read");
            format!("{}  {n}\n", hex::encode(sha2::Sha256::digest(bytes)))
        })
        .collect();
        std::fs::write(p0.join("SHA256SUMS"), text).expect("sums");
    }
}

#[test]
fn results_directories_holding_foreign_or_damaged_files_are_refused_by_the_validator() {
    let parquet = |n: &str| std::fs::read(repo(&format!("dataset/tests/data/{n}"))).expect("data");
    let cases: Vec<(&str, MakeDir, &str)> = vec![
        (
            "foreign files only",
            Box::new(|d| {
                std::fs::create_dir_all(d.join("a/b")).expect("mkdir");
                std::fs::write(d.join("a/b/notes.txt"), "hi").expect("write");
            }),
            "no run data here",
        ),
        (
            "SHA256SUMS naming ../../etc/passwd",
            Box::new(|d| {
                run_dir(d, None, false);
                std::fs::write(d.join("r1/p0/SHA256SUMS"), "00  ../../etc/passwd\n").expect("w");
            }),
            "names a file outside its directory",
        ),
        (
            "a foreign file beside the run files",
            Box::new(|d| {
                run_dir(d, None, false);
                std::fs::write(d.join("r1/p0/evil.sh"), "#!/bin/sh\n").expect("w");
            }),
            "files not covered by SHA256SUMS: evil.sh",
        ),
        (
            "records.parquet changed, sums not",
            Box::new(|d| run_dir(d, Some(("records.parquet", b"PAR1 not really")), false)),
            "records.parquet: SHA-256 differs",
        ),
        (
            "summary.json holding a list",
            Box::new(|d| run_dir(d, Some(("summary.json", b"[]")), true)),
            "summary.json: invalid length 0",
        ),
        (
            "spec.json with a runId escaping",
            Box::new(|d| {
                let spec = std::fs::read_to_string(repo("fuzz/fixtures/run-dir/p0/spec.json"))
                    .expect("spec");
                let bad = spec.replace("\"runId\": \"fuzz-run\"", "\"runId\": \"../../x\"");
                run_dir(d, Some(("spec.json", bad.as_bytes())), true);
            }),
            "spec.json: invalid run spec: runId \"../../x\"",
        ),
    ];
    // The damaged samples.parquet files the run_dir fuzz target found, with matching sums.
    let damaged: Vec<(&str, MakeDir, &str)> = [
        (
            "a footer pointing outside the file",
            "negative-column-offset.parquet",
            "damaged Parquet footer",
        ),
        (
            "a page naming a missing dictionary",
            "dictionary-page-missing.parquet",
            "damaged Parquet file: the parquet reader failed on it",
        ),
        (
            "a page header running past the end",
            "page-header-past-end.parquet",
            "ends inside a page",
        ),
        (
            "a dictionary claiming 2^31 values",
            "dictionary-too-large.parquet",
            "a dictionary page claims",
        ),
    ]
    .into_iter()
    .map(|(name, file, expect)| {
        let bytes = parquet(file);
        let make: MakeDir = Box::new(move |d| run_dir(d, Some(("samples.parquet", &bytes)), true));
        (name, make, expect)
    })
    .collect();
    let mut rows: Vec<Row<'static>> = Vec::new();
    for (name, make, expect) in cases.into_iter().chain(damaged) {
        let dir = tempfile::tempdir().expect("dir");
        make(dir.path());
        rows.push((
            name.to_owned(),
            expect,
            Duration::from_secs(20),
            Box::new(move || {
                let o = pqbench(&["validate", common::s(dir.path())], None);
                // The refusal is printed as the validator's table on stdout.
                Outcome {
                    stderr: format!("{}{}", o.stdout, o.stderr),
                    ..o
                }
            }),
        ));
    }
    table("results directories (`pqbench validate DIR`)", rows);
}
