//! A key service named by endpoint (`arms[].kms.endpoint`, issue 41), as a user meets it:
//! `examples/kms-endpoint.yaml` run by `pqbench run` as a process, its endpoint and key id
//! pointed at a key service this test runs the way another team would: `pqbench serve-kms`
//! with its own keys (none of the campaign's), behind TLS with a certificate from a CA the
//! client trusts through `SSL_CERT_FILE`, as AWS KMS is reached over https. Windows are
//! short and blocks fewer than the example's.
//!
//! It checks that the campaign is refused before anything is written without
//! `--kms-credentials`; that with them the arm's writers take the service's public key
//! (GetPublicKey) and its readers, which hold no secret key, open every object through the
//! service over TLS; that the declared comparisons get their verdicts; that the
//! credentials appear in no result file; and that a key of the wrong type is refused by
//! name before anything is timed. A test binary of its own, so that nothing else runs
//! beside its pinned servers and clients. Needs the `openssl` command (`.ci/run` installs
//! it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{KmsService, edited_example, files_under, ok, s};
use tokio_rustls::rustls;

/// A TLS front for a plain-HTTP service: accepts TLS on 127.0.0.1 with a certificate for
/// IP 127.0.0.1 issued by a CA of its own, and relays each connection to `backend`.
struct TlsFront {
    endpoint: String,
    ca: PathBuf,
    accepted: Arc<AtomicUsize>,
    _rt: tokio::runtime::Runtime,
}

fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl command (apt install openssl)");
    ok(&o, &format!("openssl {}", args.join(" ")));
}

impl TlsFront {
    fn start(dir: &Path, backend: std::net::SocketAddr) -> Self {
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            dir,
            &[
                &["req", "-x509"][..],
                &ec,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=pqbench test CA",
                ],
            ]
            .concat(),
        );
        openssl(
            dir,
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "leaf.key",
                    "-out",
                    "leaf.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        );
        std::fs::write(
            dir.join("leaf.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n\
             extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n",
        )
        .expect("ext");
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "leaf.pem",
                "-days",
                "2",
                "-extfile",
                "leaf.ext",
            ],
        );
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(dir.join("leaf.pem"))
                .expect("leaf.pem")
                .collect::<Result<_, _>>()
                .expect("certificate");
        let key = PrivateKeyDer::from_pem_file(dir.join("leaf.key")).expect("leaf.key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        rt.spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let count = count.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    count.fetch_add(1, Ordering::SeqCst);
                    if let Ok(mut up) = tokio::net::TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                    }
                });
            }
        });
        Self {
            endpoint: format!("https://127.0.0.1:{port}"),
            ca: dir.join("ca.pem"),
            accepted,
            _rt: rt,
        }
    }
}

/// `pqbench` as a process trusting the front's CA, its keys under `state`.
fn pqbench(state: &Path, ca: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pqbench"))
        .env("XDG_STATE_HOME", state)
        .env("SSL_CERT_FILE", ca)
        .args(args)
        .output()
        .expect("run pqbench")
}

const ENDPOINT: &str = "endpoint: https://kms.eu-west-1.amazonaws.com";
const KEY_ID: &str =
    "keyId: arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab";

#[test]
fn an_arm_reads_through_a_key_service_named_by_endpoint_over_tls() {
    let dir = tempfile::tempdir().expect("tmp");
    let service = KmsService::start(
        &dir.path().join("service-keys"),
        dir.path().join("service.env"),
        &["--create", "ml-kem-768", "--create", "x25519"],
    );
    let plain = service
        .env()
        .into_iter()
        .find(|(k, _)| k == "AWS_ENDPOINT_URL_KMS")
        .map(|(_, v)| v)
        .expect("endpoint line");
    let backend: std::net::SocketAddr = plain
        .trim_start_matches("http://")
        .parse()
        .expect("service address");
    let front = TlsFront::start(dir.path(), backend);
    let creds = dir.path().join("service.env");

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example =
        std::fs::read_to_string(root.join("examples/kms-endpoint.yaml")).expect("example");
    let campaign = |key_id: &str| {
        edited_example(
            &example,
            "examples/kms-endpoint.yaml",
            &[
                (ENDPOINT, &format!("endpoint: {}", front.endpoint)),
                (KEY_ID, &format!("keyId: {key_id}")),
                ("  repetitions: 4\n", "  repetitions: 2\n"),
                ("  warmup: 1s\n", "  warmup: 200ms\n"),
                ("  measured: 3s\n", "  measured: 600ms\n"),
            ],
        )
    };
    let file = dir.path().join("kms-endpoint.yaml");
    std::fs::write(&file, campaign(service.key("ML_KEM_768"))).expect("write");
    let out = dir.path().join("results");
    let state = dir.path().join("state");

    // Without credentials for the service: refused by name, nothing written.
    let o = pqbench(&state, &front.ca, &["run", s(&file), "--out", s(&out)]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("mlkem-kms-endpoint") && err.contains("--kms-credentials"),
        "{err}"
    );
    assert!(!out.exists(), "a refused campaign wrote {}", out.display());

    let run_to = |out: &Path| {
        pqbench(
            &state,
            &front.ca,
            &[
                "run",
                s(&file),
                "--out",
                s(out),
                "--kms-credentials",
                s(&creds),
            ],
        )
    };
    ok(&run_to(&out), "pqbench run kms-endpoint.yaml");
    assert!(
        front.accepted.load(Ordering::SeqCst) > 0,
        "no TLS connection reached the service"
    );

    let camp = out.join("kms-endpoint");
    let md = std::fs::read_to_string(camp.join("report.md")).expect("report.md");
    for pair in [
        "mlkem-kms-endpoint vs mlkem-local",
        "mlkem-kms-endpoint vs mlkem-kms-embedded",
    ] {
        assert!(
            md.contains(&format!("| get-4KiB-c8-cores1 | {pair} | 2 |")),
            "no verdict row for {pair}:\n{md}"
        );
    }
    let mut by_endpoint = 0;
    for run in std::fs::read_dir(camp.join("runs")).expect("runs") {
        let run = run.expect("entry").path();
        let name = run.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(run.join("p0/summary.json")).expect("summary"),
        )
        .expect("json");
        assert_eq!(v["counts"]["failed"], 0, "{name}: {v}");
        assert!(v["counts"]["ok"].as_u64().unwrap_or(0) > 0, "{name}");
        let spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("p0/spec.json")).expect("spec"))
                .expect("json");
        if name.contains("mlkem-kms-endpoint") {
            by_endpoint += 1;
            // Its key is the service's: the reader had no key file to open with.
            assert_eq!(spec["kms"]["endpoint"], front.endpoint.as_str(), "{name}");
            assert_eq!(spec["kms"]["region"], "eu-west-1", "{name}");
            assert_eq!(
                spec["cell"]["kms"]["keyId"],
                service.key("ML_KEM_768"),
                "{name}"
            );
            assert!(spec["recipientKey"].is_null(), "{name}: {spec}");
            // The service is not ours to sample.
            assert!(v["server"].get("keyServiceCpuCores").is_none(), "{name}");
        } else if name.contains("mlkem-kms-embedded") {
            assert!(
                v["server"]["keyServiceCpuCores"].as_f64().unwrap_or(0.0) > 0.0,
                "{name}"
            );
        }
    }
    assert_eq!(by_endpoint, 2, "2 blocks of the endpoint arm");
    let secret = service
        .env()
        .into_iter()
        .find(|(k, _)| k == "AWS_SECRET_ACCESS_KEY")
        .map(|(_, v)| v)
        .expect("secret line");
    for f in files_under(&camp) {
        let bytes = std::fs::read(&f).expect("read");
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the service's secret is in {}",
            f.display()
        );
    }

    // The X25519 key for the ML-KEM-768 arm, and a key the service does not hold: refused
    // by name before anything is written.
    let wrong = dir.path().join("wrong");
    for (key_id, says) in [
        (
            service.key("X25519"),
            "is a x25519 key; mode ml-kem-768 needs a ml-kem-768 key".to_owned(),
        ),
        (&"0".repeat(64)[..], "NotFoundException".to_owned()),
    ] {
        std::fs::write(&file, campaign(key_id)).expect("write");
        let o = run_to(&wrong);
        assert!(!o.status.success());
        let log = String::from_utf8_lossy(&o.stderr);
        assert!(
            log.contains("arm mlkem-kms-endpoint: ") && log.contains(&says),
            "{log}"
        );
        assert!(
            !wrong.exists(),
            "a refused campaign wrote {}",
            wrong.display()
        );
    }
}
