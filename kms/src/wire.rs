//! The wire format: the subset of AWS KMS's JSON 1.1 protocol (API version 2014-11-01) that
//! the key service speaks, as `kms/PROTOCOL.md` describes it.
//!
//! Every request is `POST /` with `Content-Type: application/x-amz-json-1.1` and
//! `X-Amz-Target: TrentService.<Operation>`, signed with SigV4 for the service `kms`.
//! Blobs (ciphertexts, public keys, shared secrets) are base64 (RFC 4648, with padding) in
//! the JSON bodies. An error is an HTTP 4xx/5xx response whose body is
//! `{"__type": "<ErrorCode>", "message": "..."}`.
//!
//! Member names, required members and enumerations are those of the AWS KMS service model
//! (botocore's `kms/2014-11-01/service-2.json`); `kms/tests/fixtures/kms-api.json` records
//! the subset with its provenance, and this module's tests check the shapes against it.

use serde::{Deserialize, Serialize};

use envelope::KeyType;

use crate::{Error, Result};

/// `X-Amz-Target` prefix of every operation.
pub const TARGET_PREFIX: &str = "TrentService.";
/// The content type of requests and responses.
pub const CONTENT_TYPE: &str = "application/x-amz-json-1.1";
/// The SigV4 service name.
pub const SIGNING_NAME: &str = "kms";
/// The largest request body the service reads (an ML-KEM-1024 ciphertext in base64 is
/// about 2 KiB; a CreateKey policy document can be 32 KiB).
pub const MAX_REQUEST_BODY: usize = 64 * 1024;
/// The largest response body the client reads.
pub const MAX_RESPONSE_BODY: usize = 64 * 1024;

/// The operations the service implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Creates a key pair in the service.
    CreateKey,
    /// Returns a key's public key (DER `SubjectPublicKeyInfo`).
    GetPublicKey,
    /// ML-KEM decapsulation with the key's secret key.
    Decapsulate,
    /// Key agreement (ECDH) with the key's secret key: X25519 here.
    DeriveSharedSecret,
}

impl Op {
    /// Every operation.
    pub const ALL: [Op; 4] = [
        Op::CreateKey,
        Op::GetPublicKey,
        Op::Decapsulate,
        Op::DeriveSharedSecret,
    ];

    /// The operation's name, as in `X-Amz-Target` and the service model.
    pub const fn name(self) -> &'static str {
        match self {
            Op::CreateKey => "CreateKey",
            Op::GetPublicKey => "GetPublicKey",
            Op::Decapsulate => "Decapsulate",
            Op::DeriveSharedSecret => "DeriveSharedSecret",
        }
    }

    /// The operation an `X-Amz-Target` header names, if the service implements it.
    pub fn from_target(target: &str) -> Option<Op> {
        let name = target.strip_prefix(TARGET_PREFIX)?;
        Op::ALL.into_iter().find(|op| op.name() == name)
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The key specs the service creates and uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeySpec {
    /// ML-KEM-768 (FIPS 203), key usage `ENCAPSULATE_DECAPSULATE`.
    #[serde(rename = "ML_KEM_768")]
    MlKem768,
    /// ML-KEM-1024 (FIPS 203), key usage `ENCAPSULATE_DECAPSULATE`.
    #[serde(rename = "ML_KEM_1024")]
    MlKem1024,
    /// X25519 (RFC 7748), key usage `KEY_AGREEMENT`. **Not an AWS KMS key spec**: AWS KMS
    /// agrees keys on NIST curves only. The embedded service offers it as the classical
    /// baseline of the post-quantum modes, through the same `DeriveSharedSecret` shape.
    #[serde(rename = "X25519")]
    X25519,
}

impl KeySpec {
    /// Every key spec.
    pub const ALL: [KeySpec; 3] = [KeySpec::MlKem768, KeySpec::MlKem1024, KeySpec::X25519];

    /// The name on the wire.
    pub const fn name(self) -> &'static str {
        match self {
            KeySpec::MlKem768 => "ML_KEM_768",
            KeySpec::MlKem1024 => "ML_KEM_1024",
            KeySpec::X25519 => "X25519",
        }
    }

    /// Parses a wire name.
    pub fn from_name(name: &str) -> Option<KeySpec> {
        KeySpec::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The pqbench key type of the spec.
    pub const fn key_type(self) -> KeyType {
        match self {
            KeySpec::MlKem768 => KeyType::MlKem768,
            KeySpec::MlKem1024 => KeyType::MlKem1024,
            KeySpec::X25519 => KeyType::X25519,
        }
    }

    /// The pqbench mode whose one secret-key operation a key of this spec performs.
    pub const fn mode(self) -> envelope::Mode {
        match self {
            KeySpec::MlKem768 => envelope::Mode::MlKem768,
            KeySpec::MlKem1024 => envelope::Mode::MlKem1024,
            KeySpec::X25519 => envelope::Mode::X25519,
        }
    }

    /// The key spec of a pqbench key type, if the service holds keys of that type.
    pub const fn of(key_type: KeyType) -> Option<KeySpec> {
        match key_type {
            KeyType::MlKem768 => Some(KeySpec::MlKem768),
            KeyType::MlKem1024 => Some(KeySpec::MlKem1024),
            KeyType::X25519 => Some(KeySpec::X25519),
            _ => None,
        }
    }

    /// The key usage the spec requires at CreateKey.
    pub const fn usage(self) -> &'static str {
        match self {
            KeySpec::MlKem768 | KeySpec::MlKem1024 => USAGE_KEM,
            KeySpec::X25519 => USAGE_AGREEMENT,
        }
    }

    /// The operation that recovers a shared secret with a key of this spec.
    pub const fn recover_op(self) -> Op {
        match self {
            KeySpec::MlKem768 | KeySpec::MlKem1024 => Op::Decapsulate,
            KeySpec::X25519 => Op::DeriveSharedSecret,
        }
    }
}

impl std::fmt::Display for KeySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `KeyUsage` of ML-KEM keys.
pub const USAGE_KEM: &str = "ENCAPSULATE_DECAPSULATE";
/// `KeyUsage` of key-agreement keys.
pub const USAGE_AGREEMENT: &str = "KEY_AGREEMENT";
/// The only `EncapsulationAlgorithm`.
pub const ALG_ML_KEM: &str = "ML_KEM";
/// The only `KeyAgreementAlgorithm`.
pub const ALG_ECDH: &str = "ECDH";

/// Base64 (standard alphabet, padded) as the JSON protocol encodes blobs.
pub mod b64 {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};
    use zeroize::Zeroizing;

    /// Serializes bytes as base64.
    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    /// Deserializes base64 into bytes that are zeroized when dropped (blobs include shared
    /// secrets).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Zeroizing<Vec<u8>>, D::Error> {
        let s = Zeroizing::new(String::deserialize(d)?);
        STANDARD
            .decode(s.as_bytes())
            .map(Zeroizing::new)
            .map_err(|e| serde::de::Error::custom(format!("not base64: {e}")))
    }
}

/// A blob member: base64 on the wire, zeroized in memory.
pub type Blob = zeroize::Zeroizing<Vec<u8>>;

/// `CreateKey` request (members the service reads; others are ignored).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateKeyRequest {
    /// The key spec; required here (AWS defaults to `SYMMETRIC_DEFAULT`, which the service
    /// does not offer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_spec: Option<String>,
    /// The key usage; must match the spec when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_usage: Option<String>,
    /// A description (public; never put a secret here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `KeyMetadata` of a `CreateKey` response (the members the service fills).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KeyMetadata {
    /// The key id: the pqbench key id (lowercase hex SHA-256 of the public key).
    pub key_id: String,
    /// The key ARN.
    pub arn: String,
    /// The AWS account (the service's placeholder account).
    #[serde(rename = "AWSAccountId")]
    pub aws_account_id: String,
    /// Creation time, seconds since the epoch.
    pub creation_date: f64,
    /// Always true.
    pub enabled: bool,
    /// Always `Enabled`.
    pub key_state: String,
    /// The key usage.
    pub key_usage: String,
    /// The key spec.
    pub key_spec: String,
    /// Always `AWS_KMS`.
    pub origin: String,
    /// `["ML_KEM"]` for ML-KEM keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encapsulation_algorithms: Option<Vec<String>>,
    /// `["ECDH"]` for key-agreement keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_agreement_algorithms: Option<Vec<String>>,
}

/// `CreateKey` response.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateKeyResponse {
    /// The new key.
    pub key_metadata: KeyMetadata,
}

/// `GetPublicKey` request.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct GetPublicKeyRequest {
    /// Key id or key ARN.
    pub key_id: String,
}

/// `GetPublicKey` response.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct GetPublicKeyResponse {
    /// The key ARN.
    pub key_id: String,
    /// DER `SubjectPublicKeyInfo` ([`spki`]).
    #[serde(with = "b64")]
    pub public_key: Blob,
    /// The key spec.
    pub key_spec: String,
    /// The key usage.
    pub key_usage: String,
    /// `["ML_KEM"]` for ML-KEM keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encapsulation_algorithms: Option<Vec<String>>,
    /// `["ECDH"]` for key-agreement keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_agreement_algorithms: Option<Vec<String>>,
}

/// `Decapsulate` request.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DecapsulateRequest {
    /// Key id or key ARN.
    pub key_id: String,
    /// The ML-KEM ciphertext.
    #[serde(with = "b64")]
    pub shared_secret_ciphertext_blob: Blob,
    /// Must be `ML_KEM`.
    pub encapsulation_algorithm: String,
    /// Checks permissions only (answered with `DryRunOperationException`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
}

/// `Decapsulate` response.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DecapsulateResponse {
    /// The key ARN.
    pub key_id: String,
    /// The 32-byte shared secret (pseudo-random for a wrong ciphertext: implicit rejection).
    #[serde(with = "b64")]
    pub shared_secret: Blob,
    /// `ML_KEM`.
    pub encapsulation_algorithm: String,
}

/// `DeriveSharedSecret` request.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeriveSharedSecretRequest {
    /// Key id or key ARN.
    pub key_id: String,
    /// Must be `ECDH`.
    pub key_agreement_algorithm: String,
    /// The peer's public key, DER `SubjectPublicKeyInfo` ([`spki`]).
    #[serde(with = "b64")]
    pub public_key: Blob,
    /// Checks permissions only (answered with `DryRunOperationException`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
}

/// `DeriveSharedSecret` response.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeriveSharedSecretResponse {
    /// The key ARN.
    pub key_id: String,
    /// The raw shared secret (32 bytes for X25519).
    #[serde(with = "b64")]
    pub shared_secret: Blob,
    /// `ECDH`.
    pub key_agreement_algorithm: String,
    /// `AWS_KMS`.
    pub key_origin: String,
}

/// An error response body.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error code (`NotFoundException`, ...), possibly with a `namespace#` prefix.
    #[serde(rename = "__type")]
    pub kind: String,
    /// What went wrong (public).
    #[serde(default, alias = "Message")]
    pub message: String,
}

impl ErrorBody {
    /// The code without a `namespace#` prefix.
    pub fn code(&self) -> &str {
        self.kind.rsplit('#').next().unwrap_or(&self.kind)
    }
}

/// The service's placeholder account in ARNs.
pub const ACCOUNT: &str = "000000000000";

/// The key ARN of `key_id` in `region`.
pub fn key_arn(region: &str, key_id: &str) -> String {
    format!("arn:aws:kms:{region}:{ACCOUNT}:key/{key_id}")
}

/// The key id a `KeyId` member names: the id itself, or the last path segment of a key ARN.
/// Aliases are not supported.
pub fn key_id_of(member: &str) -> Result<&str> {
    let id = match member.strip_prefix("arn:") {
        Some(rest) => rest
            .rsplit_once(":key/")
            .map(|(_, id)| id)
            .ok_or_else(|| Error::Request(format!("KeyId {member:?} is not a key ARN")))?,
        None if member.starts_with("alias/") => {
            return Err(Error::Request(format!(
                "KeyId {member:?}: aliases are not supported; use the key id or key ARN"
            )));
        }
        None => member,
    };
    if id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(id)
    } else {
        Err(Error::Request(format!(
            "KeyId {member:?}: a key id is 64 lowercase hex digits (a pqbench key id)"
        )))
    }
}

/// DER `SubjectPublicKeyInfo` of the keys the service holds (RFC 5280 §4.1.2.7): ML-KEM
/// with the NIST algorithm identifiers `id-alg-ml-kem-768` (2.16.840.1.101.3.4.4.2) and
/// `id-alg-ml-kem-1024` (2.16.840.1.101.3.4.4.3), absent parameters (RFC 9935 / the LAMPS
/// ML-KEM certificate profile), the public key as the BIT STRING; X25519 with
/// `id-X25519` (1.3.101.110, RFC 8410).
pub mod spki {
    use super::KeySpec;
    use crate::{Error, Result};

    /// DER of the algorithm OIDs (tag, length, value).
    const OID_ML_KEM_768: &[u8] = &[
        0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x04, 0x02,
    ];
    const OID_ML_KEM_1024: &[u8] = &[
        0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x04, 0x03,
    ];
    const OID_X25519: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x6e];

    fn oid(spec: KeySpec) -> &'static [u8] {
        match spec {
            KeySpec::MlKem768 => OID_ML_KEM_768,
            KeySpec::MlKem1024 => OID_ML_KEM_1024,
            KeySpec::X25519 => OID_X25519,
        }
    }

    /// The public key length of a spec.
    pub const fn key_len(spec: KeySpec) -> usize {
        match spec {
            KeySpec::MlKem768 => 1184,
            KeySpec::MlKem1024 => 1568,
            KeySpec::X25519 => 32,
        }
    }

    /// DER length octets of `n`.
    fn der_len(n: usize, out: &mut Vec<u8>) {
        // The long form's first octet: 0x80 | the number of length octets (at most 8).
        const LONG: [u8; 9] = [0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88];
        let bytes = n.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        match &bytes[skip..] {
            [] => out.push(0),
            [b] if *b < 0x80 => out.push(*b),
            significant => {
                out.push(LONG[significant.len()]);
                out.extend_from_slice(significant);
            }
        }
    }

    fn tlv(tag: u8, value: &[u8], out: &mut Vec<u8>) {
        out.push(tag);
        der_len(value.len(), out);
        out.extend_from_slice(value);
    }

    /// Encodes `key` (the raw public key of `spec`).
    pub fn encode(spec: KeySpec, key: &[u8]) -> Vec<u8> {
        let mut alg = Vec::new();
        tlv(0x30, oid(spec), &mut alg);
        let mut bits = Vec::with_capacity(key.len() + 1);
        bits.push(0); // no unused bits
        bits.extend_from_slice(key);
        let mut body = alg;
        tlv(0x03, &bits, &mut body);
        let mut out = Vec::with_capacity(body.len() + 4);
        tlv(0x30, &body, &mut out);
        out
    }

    /// Decodes a DER `SubjectPublicKeyInfo` that must be of `spec`: the whole encoding
    /// must be exactly what [`encode`] writes for a key of the spec's length (DER is
    /// canonical, so there is one encoding), else the error says what differs.
    pub fn decode(spec: KeySpec, der: &[u8]) -> Result<Vec<u8>> {
        let n = key_len(spec);
        let prefix = encode(spec, &vec![0; n]);
        let head = prefix.len() - n;
        if der.len() != prefix.len() {
            return Err(Error::Request(format!(
                "PublicKey: a {spec} SubjectPublicKeyInfo is {} bytes, this one is {}",
                prefix.len(),
                der.len()
            )));
        }
        if der[..head] != prefix[..head] {
            return Err(Error::Request(format!(
                "PublicKey: not a DER SubjectPublicKeyInfo of a {spec} key (algorithm or \
                 structure differs)"
            )));
        }
        Ok(der[head..].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spki_lengths_are_the_known_ones() {
        // X25519: RFC 8410 §10.1 example, 44 bytes with the 12-byte prefix 302a300506032b656e032100.
        let x = spki::encode(KeySpec::X25519, &[7; 32]);
        assert_eq!(hex::encode(&x[..12]), "302a300506032b656e032100");
        assert_eq!(x.len(), 44);
        // ML-KEM-768: 30 82 04b2 (30 0b OID) 03 82 04a1 00 || 1184 bytes.
        let m = spki::encode(KeySpec::MlKem768, &[1; 1184]);
        assert_eq!(
            hex::encode(&m[..22]),
            "308204b2300b0609608648016503040402038204a100"
        );
        assert_eq!(
            spki::decode(KeySpec::MlKem768, &m).ok(),
            Some(vec![1; 1184])
        );
        let k = spki::encode(KeySpec::MlKem1024, &[2; 1568]);
        assert_eq!(
            spki::decode(KeySpec::MlKem1024, &k).ok(),
            Some(vec![2; 1568])
        );
    }

    #[test]
    fn spki_of_another_algorithm_or_length_is_refused() {
        let m = spki::encode(KeySpec::MlKem768, &[1; 1184]);
        assert!(spki::decode(KeySpec::MlKem1024, &m).is_err());
        let mut x = spki::encode(KeySpec::X25519, &[7; 32]);
        assert!(spki::decode(KeySpec::MlKem768, &x).is_err());
        x[8] ^= 1; // the OID
        let e = spki::decode(KeySpec::X25519, &x)
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("algorithm")));
        assert!(spki::decode(KeySpec::X25519, &x[..43]).is_err());
    }

    #[test]
    fn key_ids_and_arns() {
        let id = "ab".repeat(32);
        assert_eq!(key_id_of(&id).ok(), Some(id.as_str()));
        let arn = key_arn("eu-west-1", &id);
        assert_eq!(key_id_of(&arn).ok(), Some(id.as_str()));
        for bad in [
            "alias/x",
            "arn:aws:kms:r:1:alias/x",
            "ABCD",
            &"AB".repeat(32),
        ] {
            assert!(key_id_of(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn error_codes_lose_their_namespace() {
        let b: ErrorBody = serde_json::from_str(
            r#"{"__type":"com.amazonaws.kms#NotFoundException","message":"m"}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(b.code(), "NotFoundException");
    }
}
