//! AWS Signature Version 4, by hand over `hmac` + `sha2`: the canonical request, the
//! string to sign, the derived key, and the two ways S3 carries a signature (an
//! `Authorization` header, or a presigned URL's query string).

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The SHA-256 of an empty payload.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// The payload hash of a presigned request.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// RFC 3986 percent-encoding as SigV4 wants it: everything but `A-Z a-z 0-9 - . _ ~` is
/// encoded, uppercase hex; `/` is kept when `encode_slash` is false.
pub fn uri_encode(value: &str, encode_slash: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for &b in value.as_bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~')
            || (b == b'/' && !encode_slash);
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    // HMAC accepts keys of any length.
    let mut mac = HmacSha256::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Access key, secret and optional session token.
#[derive(Clone)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials { .. }")
    }
}

/// Everything a signature covers.
pub struct SignInput<'a> {
    pub method: &'a str,
    /// The request path exactly as sent (already encoded).
    pub path: &'a str,
    /// Unencoded query parameters.
    pub query: &'a [(String, String)],
    /// Signed headers: lowercase names with their values.
    pub headers: &'a [(String, String)],
    pub payload_hash: &'a str,
    pub region: &'a str,
    pub service: &'a str,
    /// `YYYYMMDDTHHMMSSZ`.
    pub amz_date: &'a str,
    pub secret_access_key: &'a str,
}

/// The canonical query string: parameters encoded, then sorted.
pub fn canonical_query(query: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// `signV4(input)`: the JSON text of the reference's `SigV4SignInput` (a malformed object
/// is a `TypeError`; a signed header missing from `headers` is signed as empty), the JSON
/// text of `{ signature, canonicalRequest }` out.
pub fn sign_json(text: &str) -> crate::error::Result<String> {
    use crate::error::PrismError;
    let v = crate::json::parse(text, PrismError::type_error)?;
    let f = crate::json::Fields::new(&v, "input", PrismError::type_error)?;
    let map = |name: &str| -> crate::error::Result<Vec<(String, String)>> {
        Ok(f.opt_object(name)?
            .map(|o| {
                o.members()
                    .map(|(k, v)| (k.to_string(), v.as_str().unwrap_or("").to_string()))
                    .collect()
            })
            .unwrap_or_default())
    };
    let query = map("query")?;
    let all = map("headers")?;
    let headers: Vec<(String, String)> = f
        .opt_array("signedHeaders")?
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|n| {
            let v = all.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
            (n.to_string(), v.unwrap_or_default())
        })
        .collect();
    let s = SignInput {
        method: f.str("method")?,
        path: f.str("path")?,
        query: &query,
        headers: &headers,
        payload_hash: f.str("payloadHash")?,
        region: f.str("region")?,
        service: f.str("service")?,
        amz_date: f.str("amzDate")?,
        secret_access_key: f.str("secretAccessKey")?,
    };
    Ok(serde_json::json!({
        "signature": s.signature(),
        "canonicalRequest": s.canonical_request(),
    })
    .to_string())
}

impl SignInput<'_> {
    fn sorted_headers(&self) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
                (k.to_ascii_lowercase(), v)
            })
            .collect();
        h.sort();
        h
    }

    /// `a;b;c` of the signed header names.
    pub fn signed_headers(&self) -> String {
        self.sorted_headers()
            .into_iter()
            .map(|(k, _)| k)
            .collect::<Vec<_>>()
            .join(";")
    }

    pub fn canonical_request(&self) -> String {
        let headers: String = self
            .sorted_headers()
            .iter()
            .map(|(k, v)| format!("{k}:{v}\n"))
            .collect();
        format!(
            "{}\n{}\n{}\n{}\n{}\n{}",
            self.method,
            self.path,
            canonical_query(self.query),
            headers,
            self.signed_headers(),
            self.payload_hash
        )
    }

    /// `{date}/{region}/{service}/aws4_request`.
    pub fn scope(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            &self.amz_date[..self.amz_date.len().min(8)],
            self.region,
            self.service
        )
    }

    /// The hex signature.
    pub fn signature(&self) -> String {
        let string_to_sign = format!(
            "AWS4-HMAC-SHA256\n{}\n{}\n{}",
            self.amz_date,
            self.scope(),
            hex(&Sha256::digest(self.canonical_request().as_bytes()))
        );
        let date = &self.amz_date[..self.amz_date.len().min(8)];
        let k_date = hmac(
            format!("AWS4{}", self.secret_access_key).as_bytes(),
            date.as_bytes(),
        );
        let k_region = hmac(&k_date, self.region.as_bytes());
        let k_service = hmac(&k_region, self.service.as_bytes());
        let k_signing = hmac(&k_service, b"aws4_request");
        hex(&hmac(&k_signing, string_to_sign.as_bytes()))
    }

    /// The `Authorization` header value.
    pub fn authorization(&self, access_key_id: &str) -> String {
        format!(
            "AWS4-HMAC-SHA256 Credential={access_key_id}/{}, SignedHeaders={}, Signature={}",
            self.scope(),
            self.signed_headers(),
            self.signature()
        )
    }
}

/// A presigned URL's query string (only `host` signed, `UNSIGNED-PAYLOAD`), with the
/// session token among the signed parameters when there is one.
#[allow(clippy::too_many_arguments)]
pub fn presign_query(
    method: &str,
    path: &str,
    host: &str,
    region: &str,
    amz_date: &str,
    expires_seconds: u64,
    creds: &Credentials,
) -> String {
    let scope = format!(
        "{}/{region}/s3/aws4_request",
        &amz_date[..amz_date.len().min(8)]
    );
    let mut query = vec![
        (
            "X-Amz-Algorithm".to_string(),
            "AWS4-HMAC-SHA256".to_string(),
        ),
        (
            "X-Amz-Credential".to_string(),
            format!("{}/{scope}", creds.access_key_id),
        ),
        ("X-Amz-Date".to_string(), amz_date.to_string()),
        ("X-Amz-Expires".to_string(), expires_seconds.to_string()),
        ("X-Amz-SignedHeaders".to_string(), "host".to_string()),
    ];
    if let Some(token) = &creds.session_token {
        query.push(("X-Amz-Security-Token".to_string(), token.clone()));
    }
    let headers = [("host".to_string(), host.to_string())];
    let signature = SignInput {
        method,
        path,
        query: &query,
        headers: &headers,
        payload_hash: UNSIGNED_PAYLOAD,
        region,
        service: "s3",
        amz_date,
        secret_access_key: &creds.secret_access_key,
    }
    .signature();
    query.push(("X-Amz-Signature".to_string(), signature));
    canonical_query(&query)
}

/// `YYYYMMDDTHHMMSSZ` of a Unix time in milliseconds.
pub fn amz_date(unix_ms: i64) -> String {
    crate::util::time::format_iso(unix_ms)
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .take(15)
        .collect::<String>()
        + "Z"
}

#[cfg(test)]
mod tests;
