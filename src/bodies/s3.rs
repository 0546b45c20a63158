//! The S3-compatible body store: path-style requests signed with SigV4, for AWS S3,
//! MinIO, Cloudflare R2 and anything else that speaks the protocol.
//!
//! - `put` sends the ref's hash as `x-amz-content-sha256` and its size as the exact
//!   `Content-Length`, both signed, so the server refuses a body that does not match too.
//!   A streamed body is hashed and counted as it flows and its last chunk is held back
//!   until it verifies, so a mismatching body never reaches the server whole.
//! - `get` fetches through a short-lived presigned URL, streams into a running hash and
//!   a spool, and hands out bytes only once size and SHA-256 verified.
//! - `delete` asks the host's legal-hold check first; 2xx and 404 are both success.
//! - Bucket, key, endpoint path and credentials never appear in an error: messages name
//!   the operation and the HTTP status (and S3's error code) only.

use super::key::encoded_key;
use super::sigv4::{self, Credentials, SignInput, EMPTY_SHA256};
use super::spool::{Spool, SpoolWriter};
use super::transport::{self, ChannelBody, ReqBody, Transport};
use super::{
    hash_mismatch, same_media_type, size_mismatch, verify_body, Abort, BodyLimits, BodyRef,
    CredentialSource, HoldCheck,
};
use crate::error::{BodyCode, PrismError, Result, S3Code};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// How long the presigned URL a `get` uses itself stays valid (it is used at once).
const GET_URL_SECONDS: u64 = 300;
/// Marker message of an aborted operation (the JS layer rejects with the signal's reason).
pub const ABORTED: &str = "the operation was aborted";

/// Construction options.
pub struct S3Options {
    pub endpoint: String,
    pub bucket: String,
    pub region: Option<String>,
    pub limits: BodyLimits,
}

impl S3Options {
    /// `createS3ArtifactBodyStore(options)`: the JSON text of
    /// `{ endpoint, bucket, region?, limits? }` (a malformed object is a `store` error; the
    /// endpoint is checked by [`S3BodyStore::new`]).
    pub fn from_json(text: &str) -> Result<Self> {
        let store_err = |m: String| PrismError::body(BodyCode::Store, m);
        let v = crate::json::parse(text, store_err)?;
        let f = crate::json::Fields::new(&v, "options", store_err)?;
        Ok(Self {
            limits: BodyLimits::resolve(f.get("limits"))?,
            endpoint: f.str("endpoint")?.to_string(),
            bucket: f.str("bucket")?.to_string(),
            region: f.opt_str("region")?.map(str::to_string),
        })
    }
}

/// A checked endpoint.
struct Endpoint {
    /// `scheme://authority`.
    origin: String,
    /// The `Host` header value.
    host: String,
    /// The path prefix, `""` or `/a/b` (kept as given: RFC 3986 path characters only).
    prefix: String,
}

fn store_err(m: &str) -> PrismError {
    PrismError::body(BodyCode::Store, m)
}

fn is_loopback(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    h == "localhost"
        || h == "[::1]"
        || h.parse::<std::net::Ipv4Addr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

fn parse_endpoint(endpoint: &str) -> Result<Endpoint> {
    let bad = || {
        store_err("endpoint must be an absolute https URL (http only for loopback) without credentials, query or fragment")
    };
    let (scheme, rest) = endpoint.split_once("://").ok_or_else(bad)?;
    let scheme = scheme.to_ascii_lowercase();
    if rest.contains(['?', '#', '@']) || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad());
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = authority.to_ascii_lowercase();
    let host_only = if authority.starts_with('[') {
        authority
            .split(']')
            .next()
            .map(|h| format!("{h}]"))
            .unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or("").to_string()
    };
    if host_only.is_empty() || host_only == "]" {
        return Err(bad());
    }
    match scheme.as_str() {
        "https" => {}
        "http" if is_loopback(&host_only) => {}
        _ => return Err(bad()),
    }
    let prefix = path.trim_end_matches('/');
    let pchar = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@%/".contains(&b);
    if !prefix.bytes().all(pchar) {
        return Err(bad());
    }
    Ok(Endpoint {
        origin: format!("{scheme}://{authority}"),
        host: authority,
        prefix: prefix.to_string(),
    })
}

fn valid_bucket(b: &str) -> bool {
    let bytes = b.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// The store.
pub struct S3BodyStore {
    endpoint: Endpoint,
    bucket: String,
    region: String,
    limits: BodyLimits,
    transport: Transport,
    permits: Arc<Semaphore>,
    credentials: Arc<dyn CredentialSource>,
    held: Option<Arc<dyn HoldCheck>>,
}

/// Which operation failed, for messages and codes.
#[derive(Clone, Copy)]
enum Op {
    Upload,
    Download,
    Delete,
}

impl Op {
    fn code(self) -> S3Code {
        match self {
            Op::Upload => S3Code::Upload,
            Op::Download => S3Code::Download,
            Op::Delete => S3Code::Delete,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Op::Upload => "upload",
            Op::Download => "download",
            Op::Delete => "delete",
        }
    }
    fn unreachable(self) -> PrismError {
        PrismError::s3(
            self.code(),
            format!(
                "{} failed: the object store could not be reached",
                self.name()
            ),
        )
    }
}

/// S3 error codes that mean the credentials (or the signature made with them) were refused.
const CREDENTIAL_CODES: [&str; 7] = [
    "InvalidAccessKeyId",
    "NotSignedUp",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "InvalidSecurity",
];

async fn status_error(op: Op, resp: Response<Incoming>) -> PrismError {
    let status = resp.status().as_u16();
    let code = transport::s3_error_code(&transport::read_small(resp, 4096).await);
    let detail = code
        .as_deref()
        .map(|c| format!(" ({c})"))
        .unwrap_or_default();
    if matches!(status, 401 | 403)
        && code
            .as_deref()
            .is_some_and(|c| CREDENTIAL_CODES.contains(&c))
    {
        return PrismError::s3(
            S3Code::Credentials,
            format!(
                "{} refused the credentials: HTTP {status}{detail}",
                op.name()
            ),
        );
    }
    PrismError::s3(
        op.code(),
        format!("{} failed with HTTP {status}{detail}", op.name()),
    )
}

fn aborted() -> PrismError {
    PrismError::internal(ABORTED)
}

/// Run `fut` unless `abort` fires first.
async fn abortable<T>(
    abort: &Abort,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    if abort.is_aborted() {
        return Err(aborted());
    }
    tokio::select! {
        out = fut => out,
        _ = abort.aborted() => Err(aborted()),
    }
}

fn now_ms() -> i64 {
    crate::util::time::now_ms()
}

impl S3BodyStore {
    pub fn new(
        options: S3Options,
        credentials: Arc<dyn CredentialSource>,
        held: Option<Arc<dyn HoldCheck>>,
    ) -> Result<Self> {
        let endpoint = parse_endpoint(&options.endpoint)?;
        if !valid_bucket(&options.bucket) {
            return Err(store_err(
                "bucket must match [A-Za-z0-9][A-Za-z0-9._-]{0,62}",
            ));
        }
        let region = options.region.unwrap_or_else(|| "us-east-1".to_string());
        if region.is_empty()
            || region.len() > 64
            || !region
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(store_err(
                "region must be 1..=64 characters of A-Z a-z 0-9 - _",
            ));
        }
        Ok(Self {
            endpoint,
            bucket: options.bucket,
            region,
            limits: options.limits,
            transport: Transport::new(),
            permits: Arc::new(Semaphore::new(
                options.limits.max_concurrent_transfers as usize,
            )),
            credentials,
            held,
        })
    }

    pub fn limits(&self) -> &BodyLimits {
        &self.limits
    }

    /// Parse and check a ref against this store's caps.
    pub fn parse_ref(&self, text: &str) -> Result<BodyRef> {
        BodyRef::parse(text, &self.limits)
    }

    fn path(&self, r: &BodyRef) -> String {
        format!(
            "{}/{}/{}",
            self.endpoint.prefix,
            self.bucket,
            encoded_key(r)
        )
    }

    async fn credentials(&self) -> Result<Credentials> {
        let creds =
            self.credentials.resolve().await.map_err(|()| {
                PrismError::s3(S3Code::Credentials, "the credentials resolver failed")
            })?;
        if creds.access_key_id.is_empty() || creds.secret_access_key.is_empty() {
            return Err(PrismError::s3(
                S3Code::Credentials,
                "credentials must provide a non-empty accessKeyId and secretAccessKey",
            ));
        }
        Ok(creds)
    }

    async fn permit(&self) -> Result<OwnedSemaphorePermit> {
        self.permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| PrismError::internal("the transfer limiter is closed"))
    }

    fn presigned_url(
        &self,
        method: &str,
        r: &BodyRef,
        seconds: u64,
        now: i64,
        creds: &Credentials,
    ) -> String {
        let path = self.path(r);
        let amz_date = sigv4::amz_date(now);
        let query = sigv4::presign_query(
            method,
            &path,
            &self.endpoint.host,
            &self.region,
            &amz_date,
            seconds,
            creds,
        );
        format!("{}{path}?{query}", self.endpoint.origin)
    }

    /// A request signed in its headers: `host`, `x-amz-date`, `x-amz-content-sha256`, the
    /// session token and `extra` are all signed.
    fn signed_request(
        &self,
        method: Method,
        path: &str,
        payload_hash: &str,
        extra: &[(String, String)],
        creds: &Credentials,
    ) -> hyper::http::request::Builder {
        let amz_date = sigv4::amz_date(now_ms());
        let mut headers = vec![
            ("host".to_string(), self.endpoint.host.clone()),
            ("x-amz-content-sha256".to_string(), payload_hash.to_string()),
            ("x-amz-date".to_string(), amz_date.clone()),
        ];
        if let Some(token) = &creds.session_token {
            headers.push(("x-amz-security-token".to_string(), token.clone()));
        }
        headers.extend(extra.iter().cloned());
        let auth = SignInput {
            method: method.as_str(),
            path,
            query: &[],
            headers: &headers,
            payload_hash,
            region: &self.region,
            service: "s3",
            amz_date: &amz_date,
            secret_access_key: &creds.secret_access_key,
        }
        .authorization(&creds.access_key_id);
        let mut b = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.endpoint.origin));
        for (k, v) in &headers {
            b = b.header(k.as_str(), v.as_str());
        }
        b.header("authorization", auth)
    }

    /// `presign(ref, { ttlMs, notAfter })`: a GET URL for this one object, valid `ttl_ms`
    /// (absent: the store's `presignTtlMs`; otherwise `1..=presignTtlMs`), rounded up to
    /// whole seconds, and never past `not_after` (epoch ms; the service passes its delivery
    /// link's expiry, so the URL never outlives the link).
    pub async fn presign(
        &self,
        r: &BodyRef,
        ttl_ms: Option<u64>,
        not_after: Option<i64>,
    ) -> Result<String> {
        let ttl = ttl_ms.unwrap_or(self.limits.presign_ttl_ms);
        if ttl == 0 || ttl > self.limits.presign_ttl_ms {
            return Err(store_err(&format!(
                "presign TTL must be an integer in 1..={} ms",
                self.limits.presign_ttl_ms
            )));
        }
        let creds = self.credentials().await?;
        let now = now_ms();
        let mut seconds = ttl.div_ceil(1000);
        if let Some(limit) = not_after {
            // X-Amz-Date is `now` rounded down to the second; the URL expires that many
            // seconds after it.
            let max = (limit - (now - now.rem_euclid(1000))).div_euclid(1000);
            if max < 1 {
                return Err(store_err("notAfter leaves less than a second"));
            }
            seconds = seconds.min(max as u64);
        }
        Ok(self.presigned_url("GET", r, seconds, now, &creds))
    }
}

mod checked;
mod ops;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn options_from_json() {
        let o = S3Options::from_json(
            r#"{"endpoint":"http://127.0.0.1:9000","bucket":"b","region":"eu-west-1"}"#,
        )
        .unwrap();
        assert_eq!(
            (o.endpoint.as_str(), o.bucket.as_str()),
            ("http://127.0.0.1:9000", "b")
        );
        assert_eq!(o.region.as_deref(), Some("eu-west-1"));
        assert_eq!(o.limits, BodyLimits::resolve(None).unwrap());
        for bad in [
            "[]",
            "{",
            r#"{"endpoint":"http://h"}"#,
            r#"{"endpoint":"http://h","bucket":"b","region":7}"#,
        ] {
            let e = S3Options::from_json(bad).err().unwrap();
            assert_eq!(e.kind, ErrorKind::Body(BodyCode::Store), "{bad}: {e:?}");
        }
    }
}
