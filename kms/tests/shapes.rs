//! The wire shapes against the AWS KMS service model as recorded in
//! `tests/fixtures/kms-api.json` (extracted from botocore's `kms/2014-11-01/service-2.json`
//! by `tests/fixtures/extract.py`; its provenance is in the file): every member the crate
//! writes or reads exists in the model's shape with the model's spelling, every member the
//! model requires is written, blobs are base64, and enumerated values are the model's
//! (except the `X25519` key spec, the service's documented extension).

use std::collections::BTreeSet;

use kms::wire;
use serde_json::Value;
use zeroize::Zeroizing;

fn model() -> Value {
    serde_json::from_str(include_str!("fixtures/kms-api.json")).unwrap_or_else(|e| panic!("{e}"))
}

/// Checks a serialized `value` against the model's `op`.`side` shape.
fn check(model: &Value, op: &str, side: &str, value: &Value) {
    let shape = &model["operations"][op][side];
    let members = shape["members"]
        .as_object()
        .unwrap_or_else(|| panic!("{op}.{side} is not in the fixture"));
    let written = value
        .as_object()
        .unwrap_or_else(|| panic!("{op}.{side}: not an object"));
    for (name, v) in written {
        let m = members
            .get(name)
            .unwrap_or_else(|| panic!("{op}.{side}: member {name} is not in the AWS model"));
        match m["type"].as_str() {
            Some("blob") => {
                use base64::Engine as _;
                let s = v
                    .as_str()
                    .unwrap_or_else(|| panic!("{op}.{name}: a blob is a string"));
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .unwrap_or_else(|e| panic!("{op}.{name}: not base64: {e}"));
            }
            Some("string") => {
                let s = v
                    .as_str()
                    .unwrap_or_else(|| panic!("{op}.{name}: not a string"));
                if let Some(e) = m["enum"].as_array() {
                    let ok = e.iter().any(|x| x.as_str() == Some(s)) || s == "X25519";
                    assert!(ok, "{op}.{name}: {s} is not in the model's enum {e:?}");
                }
            }
            Some("boolean") => assert!(v.is_boolean(), "{op}.{name}"),
            Some("structure") => {
                let known: BTreeSet<&str> = m["members"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for k in v.as_object().map(|o| o.keys()).into_iter().flatten() {
                    assert!(
                        known.contains(k.as_str()),
                        "{op}.{name}.{k} is not in the AWS model"
                    );
                }
            }
            Some("list") => assert!(v.is_array(), "{op}.{name}"),
            other => panic!("{op}.{name}: unexpected model type {other:?}"),
        }
    }
    for r in shape["required"].as_array().into_iter().flatten() {
        let r = r.as_str().unwrap_or_default();
        assert!(
            written.contains_key(r),
            "{op}.{side}: required member {r} is missing"
        );
    }
}

fn json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn requests_and_responses_follow_the_aws_model() {
    let m = model();
    assert_eq!(m["metadata"]["targetPrefix"], "TrentService");
    assert_eq!(
        format!("{}.", m["metadata"]["targetPrefix"].as_str().unwrap_or("")),
        wire::TARGET_PREFIX
    );
    assert_eq!(m["metadata"]["jsonVersion"], "1.1");
    assert_eq!(m["metadata"]["endpointPrefix"], wire::SIGNING_NAME);
    let blob = || Zeroizing::new(vec![1u8, 2, 3]);
    let id = "ab".repeat(32);
    let arn = wire::key_arn("us-east-1", &id);

    check(
        &m,
        "CreateKey",
        "input",
        &json(&wire::CreateKeyRequest {
            key_spec: Some("ML_KEM_768".into()),
            key_usage: Some(wire::USAGE_KEM.into()),
            description: Some("d".into()),
        }),
    );
    check(
        &m,
        "CreateKey",
        "output",
        &json(&wire::CreateKeyResponse {
            key_metadata: wire::KeyMetadata {
                key_id: id.clone(),
                arn: arn.clone(),
                aws_account_id: wire::ACCOUNT.into(),
                creation_date: 1.0,
                enabled: true,
                key_state: "Enabled".into(),
                key_usage: wire::USAGE_KEM.into(),
                key_spec: "ML_KEM_1024".into(),
                origin: "AWS_KMS".into(),
                encapsulation_algorithms: Some(vec![wire::ALG_ML_KEM.into()]),
                key_agreement_algorithms: Some(vec![wire::ALG_ECDH.into()]),
            },
        }),
    );
    check(
        &m,
        "GetPublicKey",
        "input",
        &json(&wire::GetPublicKeyRequest { key_id: id.clone() }),
    );
    check(
        &m,
        "GetPublicKey",
        "output",
        &json(&wire::GetPublicKeyResponse {
            key_id: arn.clone(),
            public_key: blob(),
            key_spec: "ML_KEM_768".into(),
            key_usage: wire::USAGE_KEM.into(),
            encapsulation_algorithms: Some(vec![wire::ALG_ML_KEM.into()]),
            key_agreement_algorithms: None,
        }),
    );
    check(
        &m,
        "Decapsulate",
        "input",
        &json(&wire::DecapsulateRequest {
            key_id: id.clone(),
            shared_secret_ciphertext_blob: blob(),
            encapsulation_algorithm: wire::ALG_ML_KEM.into(),
            dry_run: Some(false),
        }),
    );
    check(
        &m,
        "Decapsulate",
        "output",
        &json(&wire::DecapsulateResponse {
            key_id: arn.clone(),
            shared_secret: blob(),
            encapsulation_algorithm: wire::ALG_ML_KEM.into(),
        }),
    );
    check(
        &m,
        "DeriveSharedSecret",
        "input",
        &json(&wire::DeriveSharedSecretRequest {
            key_id: id.clone(),
            key_agreement_algorithm: wire::ALG_ECDH.into(),
            public_key: blob(),
            dry_run: Some(false),
        }),
    );
    check(
        &m,
        "DeriveSharedSecret",
        "output",
        &json(&wire::DeriveSharedSecretResponse {
            key_id: arn,
            shared_secret: blob(),
            key_agreement_algorithm: wire::ALG_ECDH.into(),
            key_origin: "AWS_KMS".into(),
        }),
    );
}

/// The key specs the service offers are the model's, but for its X25519 extension; and
/// the error codes it answers with are in the model's lists for its operations or are
/// the protocol's common ones (AWS documents them for every operation: "Common Errors").
#[test]
fn key_specs_and_error_codes_are_the_models() {
    let m = model();
    let specs: Vec<&str> = m["operations"]["CreateKey"]["input"]["members"]["KeySpec"]["enum"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for spec in kms::KeySpec::ALL {
        assert!(
            specs.contains(&spec.name()) || spec == kms::KeySpec::X25519,
            "{spec} is not an AWS key spec"
        );
    }
    let common = [
        "ThrottlingException",
        "AccessDeniedException",
        "IncompleteSignatureException",
        "InvalidSignatureException",
        "MissingAuthenticationTokenException",
        "UnrecognizedClientException",
        "ValidationException",
        "SerializationException",
        "UnknownOperationException",
    ];
    let source = include_str!("../src/server.rs");
    let listed: BTreeSet<&str> = m["error_shapes"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    // Every code string the service writes (bad("...") / refused(..., "...")).
    let mut codes = BTreeSet::new();
    for (i, _) in source.match_indices("Exception\"") {
        let start = source[..i].rfind('"').map(|s| s + 1).unwrap_or(i);
        codes.insert(&source[start..i + "Exception".len()]);
    }
    assert!(codes.len() >= 8, "found {codes:?}");
    for code in codes {
        assert!(
            listed.contains(code) || common.contains(&code),
            "the service answers {code}, which is neither in the model nor a common error"
        );
        assert_ne!(kms::KmsClass::of(code, 400), kms::KmsClass::Other, "{code}");
    }
}
