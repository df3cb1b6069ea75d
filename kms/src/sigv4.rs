//! AWS Signature Version 4 for the key service's requests ("Create a signed AWS API
//! request", AWS IAM User Guide; the `Authorization` header form): the verification the
//! service performs, and the client's signing through `aws-sigv4` (the AWS SDK's signer).
//!
//! Verification recomputes the signature from what arrived, never trusting a value the
//! request states about itself: the canonical request is built from the method, the path
//! (`/` only: the JSON protocol posts to the root), an empty query, the headers that
//! `SignedHeaders` names (which must include `host` and `x-amz-date`) with their values
//! trimmed and inner runs of spaces collapsed, and the SHA-256 of the body as received. The
//! credential scope must be `<date>/<region>/kms/aws4_request` with `<date>` the date of
//! `X-Amz-Date`, which must be within 15 minutes of the service's clock. Signatures are
//! compared in constant time. Each failure names its cause with AWS's error code (public
//! facts only: never the expected signature).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::wire::SIGNING_NAME;

/// The only algorithm.
const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// How far a request's time may be from the service's clock.
pub const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// Why a request's signature was refused: AWS's error code and a public message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `MissingAuthenticationTokenException`, `IncompleteSignatureException`,
    /// `UnrecognizedClientException` or `InvalidSignatureException`.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

fn refuse(code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
    }
}

fn incomplete(message: impl Into<String>) -> Refusal {
    refuse("IncompleteSignatureException", message)
}

/// The parts of an `Authorization` header.
struct Authorization<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: &'a str,
    signature: &'a str,
}

fn parse_authorization(value: &str) -> Result<Authorization<'_>, Refusal> {
    let rest = value
        .strip_prefix(ALGORITHM)
        .and_then(|r| r.strip_prefix(' '))
        .ok_or_else(|| incomplete(format!("Authorization must start with {ALGORITHM}")))?;
    let (mut credential, mut signed_headers, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let (k, v) = part
            .trim()
            .split_once('=')
            .ok_or_else(|| incomplete("Authorization: a part without '='"))?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed_headers = Some(v),
            "Signature" => signature = Some(v),
            _ => return Err(incomplete(format!("Authorization: unknown part {k}"))),
        }
    }
    let (Some(credential), Some(signed_headers), Some(signature)) =
        (credential, signed_headers, signature)
    else {
        return Err(incomplete(
            "Authorization needs Credential, SignedHeaders and Signature",
        ));
    };
    let parts: Vec<&str> = credential.split('/').collect();
    let [access_key, date, region, service, "aws4_request"] = parts[..] else {
        return Err(incomplete(
            "Credential must be <access key>/<date>/<region>/<service>/aws4_request",
        ));
    };
    Ok(Authorization {
        access_key,
        date,
        region,
        service,
        signed_headers,
        signature,
    })
}

/// Parses `YYYYMMDD'T'HHMMSS'Z'` (the `X-Amz-Date` form).
pub fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (h, mi, sec) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    // Days from the civil date (H. Hinnant's algorithm, proleptic Gregorian).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + h * 3600 + mi * 60 + sec).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Canonical form of a header value: trimmed, inner runs of spaces as one.
fn canonical_value(v: &str) -> String {
    v.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Verifies the signature of a request. `secret_of` gives the secret key of an access key
/// (`None`: unknown). Returns the access key that signed.
pub fn verify<'a>(
    method: &str,
    path: &str,
    query: Option<&str>,
    headers: &http::HeaderMap,
    body: &[u8],
    now: SystemTime,
    secret_of: impl Fn(&str) -> Option<&'a str>,
) -> Result<String, Refusal> {
    let auth = headers
        .get(http::header::AUTHORIZATION)
        .ok_or_else(|| {
            refuse(
                "MissingAuthenticationTokenException",
                "the request is not signed (no Authorization header)",
            )
        })?
        .to_str()
        .map_err(|_| incomplete("Authorization is not visible ASCII"))?;
    let a = parse_authorization(auth)?;
    if a.service != SIGNING_NAME {
        return Err(incomplete(format!(
            "Credential scope names service {:?}; this is {SIGNING_NAME}",
            a.service
        )));
    }
    if path != "/" || query.is_some_and(|q| !q.is_empty()) {
        return Err(refuse(
            "InvalidSignatureException",
            "the JSON protocol posts to / without a query",
        ));
    }
    let amz_date = headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| incomplete("X-Amz-Date is missing"))?;
    let when =
        parse_amz_date(amz_date).ok_or_else(|| incomplete("X-Amz-Date is not YYYYMMDDTHHMMSSZ"))?;
    if !amz_date.starts_with(a.date) || a.date.len() != 8 {
        return Err(incomplete(
            "the Credential scope's date is not the date of X-Amz-Date",
        ));
    }
    let skew = now
        .duration_since(when)
        .or_else(|e| Ok::<_, ()>(e.duration()))
        .unwrap_or_default();
    if skew > MAX_SKEW {
        return Err(refuse(
            "InvalidSignatureException",
            format!(
                "Signature expired: the request's time {amz_date} is {} s from the service's \
                 clock (at most {} s)",
                skew.as_secs(),
                MAX_SKEW.as_secs()
            ),
        ));
    }
    let names: Vec<&str> = a.signed_headers.split(';').collect();
    for must in ["host", "x-amz-date"] {
        if !names.contains(&must) {
            return Err(incomplete(format!("SignedHeaders must include {must}")));
        }
    }
    if names.windows(2).any(|w| w[0] >= w[1]) || names.iter().any(|n| n.is_empty()) {
        return Err(incomplete(
            "SignedHeaders must be sorted, lowercase and unique",
        ));
    }
    let mut canonical_headers = String::new();
    for name in &names {
        let mut values = Vec::new();
        for v in headers.get_all(*name) {
            let v = v
                .to_str()
                .map_err(|_| incomplete(format!("header {name} is not visible ASCII")))?;
            values.push(canonical_value(v));
        }
        if values.is_empty() {
            return Err(incomplete(format!("signed header {name} is missing")));
        }
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let canonical_request = format!(
        "{method}\n/\n\n{canonical_headers}\n{}\n{}",
        a.signed_headers,
        hex::encode(Sha256::digest(body))
    );
    let scope = format!("{}/{}/{}/aws4_request", a.date, a.region, a.service);
    let string_to_sign = format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical_request.as_bytes()))
    );
    let secret = secret_of(a.access_key).ok_or_else(|| {
        refuse(
            "UnrecognizedClientException",
            "The security token included in the request is invalid (unknown access key)",
        )
    })?;
    let key = v4::generate_signing_key(secret, when, a.region, a.service);
    let expected = v4::calculate_signature(key, string_to_sign.as_bytes());
    if expected.len() != a.signature.len()
        || !bool::from(expected.as_bytes().ct_eq(a.signature.as_bytes()))
    {
        return Err(refuse(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided",
        ));
    }
    Ok(a.access_key.to_owned())
}

/// Signs a JSON-protocol request for the client: returns the headers to add (`authorization`,
/// `x-amz-date`). `headers` are the request's other headers, all signed (with `host`, which
/// the signer takes from `uri`).
pub fn sign_request(
    identity: &Identity,
    region: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    now: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    let params = v4::SigningParams::builder()
        .identity(identity)
        .region(region)
        .name(SIGNING_NAME)
        .time(now)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("signing parameters: {e}"))?
        .into();
    let signable = SignableRequest::new(
        "POST",
        uri,
        headers.iter().copied(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| format!("signing: {e}"))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| format!("signing: {e}"))?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect())
}

/// The identity of static credentials.
pub fn identity(access_key: &str, secret_key: &str) -> Identity {
    Credentials::from_keys(access_key, secret_key, None).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(
        access: &str,
        secret: &str,
        body: &[u8],
        now: SystemTime,
    ) -> (http::HeaderMap, String) {
        let uri = "http://127.0.0.1:4566/";
        let extra = [
            ("content-type", "application/x-amz-json-1.1"),
            ("x-amz-target", "TrentService.Decapsulate"),
        ];
        let add = sign_request(
            &identity(access, secret),
            "eu-west-1",
            uri,
            &extra,
            body,
            now,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut h = http::HeaderMap::new();
        h.insert("host", http::HeaderValue::from_static("127.0.0.1:4566"));
        for (k, v) in extra {
            h.insert(k, http::HeaderValue::from_static(v));
        }
        for (k, v) in add {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap_or_else(|e| panic!("{e}")),
                http::HeaderValue::from_str(&v).unwrap_or_else(|e| panic!("{e}")),
            );
        }
        (h, uri.to_owned())
    }

    fn check(h: &http::HeaderMap, body: &[u8], now: SystemTime) -> Result<String, Refusal> {
        verify("POST", "/", None, h, body, now, |ak| {
            (ak == "AKIDEXAMPLE").then_some("secret/EXAMPLE")
        })
    }

    /// The SDK's signer and the service's verifier agree, and any change is refused.
    #[test]
    fn what_the_sdk_signs_verifies_and_nothing_else_does() {
        let now = SystemTime::now();
        let body = br#"{"KeyId":"k"}"#;
        let (h, _) = signed("AKIDEXAMPLE", "secret/EXAMPLE", body, now);
        assert_eq!(check(&h, body, now).ok().as_deref(), Some("AKIDEXAMPLE"));

        let code = |r: Result<String, Refusal>| r.err().map(|e| e.code);
        assert_eq!(
            code(check(&h, br#"{"KeyId":"j"}"#, now)),
            Some("InvalidSignatureException")
        );
        let mut other_target = h.clone();
        other_target.insert(
            "x-amz-target",
            http::HeaderValue::from_static("TrentService.CreateKey"),
        );
        assert_eq!(
            code(check(&other_target, body, now)),
            Some("InvalidSignatureException")
        );
        let (wrong_secret, _) = signed("AKIDEXAMPLE", "another", body, now);
        assert_eq!(
            code(check(&wrong_secret, body, now)),
            Some("InvalidSignatureException")
        );
        let (unknown, _) = signed("AKIDOTHER", "secret/EXAMPLE", body, now);
        assert_eq!(
            code(check(&unknown, body, now)),
            Some("UnrecognizedClientException")
        );
        let later = now + Duration::from_secs(16 * 60);
        let e = check(&h, body, later).err();
        assert!(e.is_some_and(|e| e.message.starts_with("Signature expired")));
        let mut unsigned = h.clone();
        unsigned.remove(http::header::AUTHORIZATION);
        assert_eq!(
            code(check(&unsigned, body, now)),
            Some("MissingAuthenticationTokenException")
        );
        assert_eq!(
            code(verify("POST", "/x", None, &h, body, now, |_| Some(
                "secret/EXAMPLE"
            ))),
            Some("InvalidSignatureException")
        );
    }

    /// The AWS SigV4 test suite's `get-vanilla` date, and the civil-date conversion around
    /// leap days and the epoch.
    #[test]
    fn amz_dates() {
        let t =
            |s| parse_amz_date(s).map(|t| t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).ok());
        assert_eq!(t("19700101T000000Z"), Some(Some(0)));
        assert_eq!(t("20150830T123600Z"), Some(Some(1_440_938_160)));
        assert_eq!(t("20240229T235959Z"), Some(Some(1_709_251_199)));
        for bad in [
            "20150830T123600",
            "2015-08-30T12:36:00Z",
            "20151330T123600Z",
            "2015083xT123600Z",
        ] {
            assert_eq!(t(bad), None, "{bad}");
        }
    }
}
