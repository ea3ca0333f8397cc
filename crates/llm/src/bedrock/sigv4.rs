//! AWS Signature Version 4 for one HTTP request (the `Authorization`,
//! `X-Amz-Date` and `X-Amz-Security-Token` headers), as botocore signs
//! requests to non-S3 services: the path's percent-escapes are encoded
//! again, the payload hash is part of the canonical request but not sent,
//! and the signed headers are `content-type`, `host`, `x-amz-date` and the
//! session token's header.

use ring::{digest, hmac};

/// Long-lived or temporary AWS credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`.
    pub access_key_id: String,
    /// `AWS_SECRET_ACCESS_KEY`.
    pub secret_access_key: String,
    /// `AWS_SESSION_TOKEN` of temporary credentials.
    pub session_token: Option<String>,
}

impl std::fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// What is signed: one request.
#[derive(Debug, Clone, Copy)]
pub struct SignableRequest<'a> {
    /// HTTP method (`POST`).
    pub method: &'a str,
    /// The URL as it is sent (path already percent-encoded once).
    pub url: &'a url::Url,
    /// `Content-Type` header value, signed when present.
    pub content_type: Option<&'a str>,
    /// The body bytes.
    pub body: &'a [u8],
}

/// The headers to add to the request.
pub type SignedHeaders = Vec<(&'static str, String)>;

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn sha256_hex(data: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, data).as_ref())
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> hmac::Tag {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
}

/// Percent-encodes with AWS's unreserved set (`A-Z a-z 0-9 - _ . ~`);
/// `/` is kept when `keep_slash`.
fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char);
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The canonical query string: pairs sorted, names and values encoded.
fn canonical_query(url: &url::Url) -> String {
    let mut pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| (uri_encode(&k, false), uri_encode(&v, false)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The `Host` header value of a URL (the port only when not the default).
pub fn host_header(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

/// The canonical request and the signed-header list of `req` at `amz_date`.
fn canonical_request(
    req: &SignableRequest<'_>,
    amz_date: &str,
    session_token: Option<&str>,
) -> (String, String) {
    let path = match req.url.path() {
        "" => "/".to_string(),
        p => uri_encode(p, true),
    };
    let mut headers: Vec<(&str, String)> = Vec::with_capacity(4);
    if let Some(ct) = req.content_type {
        headers.push(("content-type", ct.trim().to_string()));
    }
    headers.push(("host", host_header(req.url)));
    headers.push(("x-amz-date", amz_date.to_string()));
    if let Some(t) = session_token {
        headers.push(("x-amz-security-token", t.trim().to_string()));
    }
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let signed: String = headers
        .iter()
        .map(|(k, _)| *k)
        .collect::<Vec<_>>()
        .join(";");
    let canonical = format!(
        "{}\n{path}\n{}\n{canonical_headers}\n{signed}\n{}",
        req.method,
        canonical_query(req.url),
        sha256_hex(req.body)
    );
    (canonical, signed)
}

/// Signs `req` for `service` in `region` at `now`; returns the headers to
/// add (`x-amz-date`, `x-amz-security-token` when the credentials have a
/// session token, `authorization`).
pub fn sign(
    req: &SignableRequest<'_>,
    creds: &AwsCredentials,
    region: &str,
    service: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> SignedHeaders {
    let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
    let date = &amz_date[..8];
    let token = creds.session_token.as_deref().filter(|t| !t.is_empty());
    let (canonical, signed) = canonical_request(req, &amz_date, token);
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let k_date = hmac_sha256(
        format!("AWS4{}", creds.secret_access_key).as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac_sha256(k_date.as_ref(), region.as_bytes());
    let k_service = hmac_sha256(k_region.as_ref(), service.as_bytes());
    let k_signing = hmac_sha256(k_service.as_ref(), b"aws4_request");
    let signature = hex(hmac_sha256(k_signing.as_ref(), string_to_sign.as_bytes()).as_ref());
    let mut out: SignedHeaders = Vec::with_capacity(3);
    out.push(("x-amz-date", amz_date));
    if let Some(t) = token {
        out.push(("x-amz-security-token", t.to_string()));
    }
    out.push((
        "authorization",
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
            creds.access_key_id
        ),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn creds(token: Option<&str>) -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: token.map(str::to_string),
        }
    }

    fn at() -> chrono::DateTime<chrono::Utc> {
        chrono::Utc
            .with_ymd_and_hms(2015, 8, 30, 12, 36, 0)
            .unwrap()
    }

    /// AWS's published test suite, `get-vanilla`.
    #[test]
    fn aws_test_vector_get_vanilla() {
        let url = url::Url::parse("https://example.amazonaws.com/").unwrap();
        let req = SignableRequest {
            method: "GET",
            url: &url,
            content_type: None,
            body: b"",
        };
        let h = sign(&req, &creds(None), "us-east-1", "service", at());
        assert_eq!(h[0], ("x-amz-date", "20150830T123600Z".to_string()));
        assert_eq!(
            h[1].1,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    /// AWS's published test suite, `get-vanilla-query-order-key-case`.
    #[test]
    fn aws_test_vector_query_order() {
        let url =
            url::Url::parse("https://example.amazonaws.com/?Param2=value2&Param1=value1").unwrap();
        let req = SignableRequest {
            method: "GET",
            url: &url,
            content_type: None,
            body: b"",
        };
        let h = sign(&req, &creds(None), "us-east-1", "service", at());
        assert!(
            h[1].1.ends_with(
                "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
            ),
            "{}",
            h[1].1
        );
    }

    #[test]
    fn a_model_id_path_is_encoded_twice_and_the_token_signed() {
        let url = url::Url::parse(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/a.b-v1%3A0/converse",
        )
        .unwrap();
        let req = SignableRequest {
            method: "POST",
            url: &url,
            content_type: Some("application/json"),
            body: b"{}",
        };
        let (canonical, signed) = canonical_request(&req, "20150830T123600Z", Some("TOKEN"));
        assert!(
            canonical.contains("\n/model/a.b-v1%253A0/converse\n"),
            "{canonical}"
        );
        assert_eq!(signed, "content-type;host;x-amz-date;x-amz-security-token");
        let h = sign(&req, &creds(Some("TOKEN")), "us-east-1", "bedrock", at());
        assert_eq!(h[1], ("x-amz-security-token", "TOKEN".to_string()));
        assert!(format!("{:?}", creds(Some("TOKEN"))).contains("<redacted>"));
    }
}
