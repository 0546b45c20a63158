//! Artifact bodies: the `ArtifactBodyStore` contract's core types (the ref, its checks,
//! media-type comparison, cancellation) and the native S3 adapter.
//!
//! - `sigv4`: AWS Signature Version 4 by hand.
//! - `key`: the object key derived from a ref.
//! - `limits`: the store's caps.
//! - `s3` (+ `transport`, `spool`): the S3-compatible store over hyper.
//!
//! Nothing here sees napi: the binding supplies the host's credential resolver and
//! legal-hold check as trait objects.

pub mod key;
pub mod limits;
pub mod s3;
pub mod sigv4;
mod spool;
mod transport;

pub use limits::BodyLimits;
pub use s3::{S3BodyStore, S3Options};
pub use spool::Spool;

use crate::error::{BodyCode, PrismError, Result};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// `ArtifactBodyRef`: ownership plus the body's identity and expected content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyRef {
    pub tenant_id: Option<String>,
    pub account_id: Option<String>,
    pub user_id: Option<String>,
    pub artifact_id: String,
    pub thread_id: String,
    pub version: u64,
    pub mime: String,
    pub size: u64,
    /// SHA-256 of the body (plaintext when a `kms` hook is set).
    pub hash: [u8; 32],
}

/// Longest id (thread, artifact, owner member) in a ref, in bytes.
pub const MAX_ID_BYTES: usize = 128;
/// Longest MIME type, in bytes.
pub const MAX_MIME_BYTES: usize = 512;

fn store_err(m: impl Into<String>) -> PrismError {
    PrismError::body(BodyCode::Store, m)
}

/// 1..=128 bytes, no control characters, not a dot segment (`.`, `..`), which a path
/// could collapse.
fn id_ok(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= MAX_ID_BYTES
        && v != "."
        && v != ".."
        && !v.chars().any(char::is_control)
}

/// Parse 64 hex digits (either case) into bytes.
pub fn parse_hash(text: &str) -> Option<[u8; 32]> {
    let b = text.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in b.chunks(2).enumerate() {
        let hi = (pair[0] as char).to_digit(16)?;
        let lo = (pair[1] as char).to_digit(16)?;
        out[i] = (hi * 16 + lo) as u8;
    }
    Some(out)
}

impl BodyRef {
    /// Parse and check the JSON text of a ref: ownership first (`OWNERSHIP`), then every
    /// field (`STORE`), then its size against the caps.
    pub fn parse(text: &str, limits: &BodyLimits) -> Result<Self> {
        let v: Value = crate::json::parse(text, store_err)?;
        let Value::Object(o) = &v else {
            return Err(store_err("a body reference must be an object"));
        };
        let owner = |name: &str| -> Result<Option<String>> {
            match o.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.is_empty() => Ok(None),
                Some(Value::String(s)) if id_ok(s) => Ok(Some(s.clone())),
                Some(_) => Err(store_err(format!(
                    "{name} must be a string of 1..={MAX_ID_BYTES} bytes"
                ))),
            }
        };
        let (tenant_id, account_id, user_id) =
            (owner("tenantId")?, owner("accountId")?, owner("userId")?);
        if tenant_id.is_none() && account_id.is_none() && user_id.is_none() {
            return Err(PrismError::body(
                BodyCode::Ownership,
                "ownership (tenantId, accountId or userId) is required on every body reference",
            ));
        }
        let id = |name: &str| -> Result<String> {
            match o.get(name) {
                Some(Value::String(s)) if id_ok(s) => Ok(s.clone()),
                _ => Err(store_err(format!(
                    "{name} must be a string of 1..={MAX_ID_BYTES} bytes without control characters, not . or .."
                ))),
            }
        };
        let (thread_id, artifact_id) = (id("threadId")?, id("artifactId")?);
        let version = o
            .get("version")
            .and_then(crate::json::as_u64)
            .filter(|v| *v >= 1)
            .ok_or_else(|| store_err("version must be a positive safe integer"))?;
        let size = o
            .get("size")
            .and_then(crate::json::as_u64)
            .filter(|s| *s <= limits.max_body_bytes)
            .ok_or_else(|| {
                store_err("size must be a non-negative safe integer at or below maxBodyBytes")
            })?;
        let hash = o
            .get("hash")
            .and_then(Value::as_str)
            .and_then(parse_hash)
            .ok_or_else(|| store_err("hash must be a 64-character SHA-256 hex digest"))?;
        let mime = match o.get("mime") {
            Some(Value::String(m)) if !m.is_empty() && m.len() <= MAX_MIME_BYTES => m.clone(),
            _ => {
                return Err(store_err(format!(
                    "mime must be a non-empty string of at most {MAX_MIME_BYTES} bytes"
                )))
            }
        };
        if text.len() as u64 > limits.max_ref_bytes {
            return Err(store_err("the body reference exceeds maxRefBytes"));
        }
        Ok(Self {
            tenant_id,
            account_id,
            user_id,
            artifact_id,
            thread_id,
            version,
            mime,
            size,
            hash,
        })
    }
}

/// The media type of a MIME value: before any `;`, trimmed, lowercase.
pub fn media_type(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether two MIME values name the same media type (parameters ignored).
pub fn same_media_type(a: &str, b: &str) -> bool {
    media_type(a) == media_type(b)
}

/// Check a whole body against its ref: size, then SHA-256.
pub fn verify_body(r: &BodyRef, body: &[u8]) -> Result<()> {
    use sha2::{Digest, Sha256};
    if body.len() as u64 != r.size {
        return Err(size_mismatch(body.len() as u64, r.size));
    }
    let digest: [u8; 32] = Sha256::digest(body).into();
    if digest != r.hash {
        return Err(hash_mismatch());
    }
    Ok(())
}

pub(crate) fn size_mismatch(got: u64, want: u64) -> PrismError {
    PrismError::body(
        BodyCode::SizeMismatch,
        format!("the body is {got} bytes, the reference says {want}"),
    )
}

pub(crate) fn hash_mismatch() -> PrismError {
    PrismError::body(
        BodyCode::HashMismatch,
        "the body's SHA-256 does not match the reference hash",
    )
}

/// A cancellation flag an operation can await.
#[derive(Clone, Default)]
pub struct Abort(Arc<(AtomicBool, Notify)>);

impl Abort {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn abort(&self) {
        self.0 .0.store(true, Ordering::SeqCst);
        self.0 .1.notify_waiters();
    }
    pub fn is_aborted(&self) -> bool {
        self.0 .0.load(Ordering::SeqCst)
    }
    /// Resolves once aborted.
    pub async fn aborted(&self) {
        loop {
            let notified = self.0 .1.notified();
            if self.is_aborted() {
                return;
            }
            notified.await;
        }
    }
}

/// Boxed future used by the host hooks.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The host's credential resolver, called once per operation. Its failure is an error
/// whose text the adapter never shows.
pub trait CredentialSource: Send + Sync {
    fn resolve(&self) -> BoxFuture<'_, std::result::Result<sigv4::Credentials, ()>>;
}

/// The host's legal-hold check (`isHeld(ref)`), given the ref's JSON text.
pub trait HoldCheck: Send + Sync {
    fn is_held(&self, ref_json: String) -> BoxFuture<'_, std::result::Result<bool, ()>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    #[test]
    fn refs_are_checked() {
        let l = BodyLimits::defaults();
        let ok = format!(
            r#"{{"tenantId":"t","artifactId":"a","threadId":"th","version":1,"mime":"text/plain","size":5,"hash":"{H}"}}"#
        );
        let r = BodyRef::parse(&ok, &l).unwrap();
        assert_eq!(r.size, 5);
        verify_body(&r, b"hello").unwrap();
        assert_eq!(
            verify_body(&r, b"hellO").unwrap_err().code(),
            "ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH"
        );
        assert_eq!(
            verify_body(&r, b"hell").unwrap_err().code(),
            "ERR_PRISM_ARTIFACT_BODY_SIZE_MISMATCH"
        );
        let no_owner = ok.replace(r#""tenantId":"t","#, "");
        assert_eq!(
            BodyRef::parse(&no_owner, &l).unwrap_err().code(),
            "ERR_PRISM_ARTIFACT_BODY_OWNERSHIP"
        );
        for bad in [
            ok.replace("\"version\":1", "\"version\":0"),
            ok.replace(H, "xyz"),
            ok.replace("text/plain", ""),
        ] {
            assert_eq!(
                BodyRef::parse(&bad, &l).unwrap_err().code(),
                "ERR_PRISM_ARTIFACT_BODY_STORE"
            );
        }
    }

    #[test]
    fn media_types() {
        assert!(same_media_type("Text/Plain; charset=utf-8", "text/plain"));
        assert!(!same_media_type("text/html", "text/plain"));
    }
}
