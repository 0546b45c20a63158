//! Signed, expiring delivery links: `base64url(JSON payload).base64url(HMAC-SHA256)` over
//! `{ artifactId, threadId, version, ownership, issuedAt, expiresAt }`. Links are
//! reauthorised per download and are not bearer secrets; the signature binds the payload
//! bytes exactly as issued.

use super::input::{self, valid_id};
use super::limits::ArtifactLimits;
use super::redact::SecretRedactor;
use super::{err, time};
use crate::error::{ArtifactReason as R, PrismError, Result};
use crate::json::Fields;
use crate::store::Ownership;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::Value;
use sha2::Sha256;

/// Shortest accepted link secret, in bytes.
pub const MIN_SECRET_BYTES: usize = 16;
/// Longest accepted link secret, in bytes.
pub const MAX_SECRET_BYTES: usize = 4096;

const MAC_BYTES: usize = 32;

/// `ArtifactDeliveryToken`: what a link grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryToken {
    pub artifact_id: String,
    pub thread_id: String,
    pub version: u64,
    pub ownership: Ownership,
    pub issued_at: String,
    pub expires_at: String,
}

/// `{ link, token }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delivery {
    pub link: String,
    pub token: DeliveryToken,
}

/// Refuse a secret shorter than 16 or longer than 4096 bytes (`TypeError`).
pub fn check_secret(secret: &[u8]) -> Result<()> {
    if secret.len() < MIN_SECRET_BYTES || secret.len() > MAX_SECRET_BYTES {
        return Err(PrismError::type_error(format!(
            "linkSecret must be {MIN_SECRET_BYTES}..={MAX_SECRET_BYTES} bytes, got {}",
            secret.len()
        )));
    }
    Ok(())
}

fn mac(secret: &[u8]) -> Result<Hmac<Sha256>> {
    Hmac::<Sha256>::new_from_slice(secret)
        .map_err(|_| PrismError::type_error("linkSecret cannot key HMAC-SHA256"))
}

/// A token valid from `now_ms` for `ttl_seconds`.
pub fn issue(
    artifact_id: &str,
    thread_id: &str,
    version: u64,
    ownership: &Ownership,
    ttl_seconds: u64,
    now_ms: i64,
) -> DeliveryToken {
    let ttl_ms = i64::try_from(ttl_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
    DeliveryToken {
        artifact_id: artifact_id.to_string(),
        thread_id: thread_id.to_string(),
        version,
        ownership: ownership.clone(),
        issued_at: time::format_iso(now_ms),
        expires_at: time::format_iso(now_ms.saturating_add(ttl_ms)),
    }
}

/// The signed link of `token`; `link_too_large` past `deliveryTokenBytes`.
pub fn sign(token: &DeliveryToken, secret: &[u8], limits: &ArtifactLimits) -> Result<Delivery> {
    check_secret(secret)?;
    let payload = serde_json::to_vec(token).map_err(|e| PrismError::internal(e.to_string()))?;
    let encoded = URL_SAFE_NO_PAD.encode(payload);
    let mut m = mac(secret)?;
    m.update(encoded.as_bytes());
    let sig = URL_SAFE_NO_PAD.encode(m.finalize().into_bytes());
    let link = format!("{encoded}.{sig}");
    if link.len() as u64 > limits.delivery_token_bytes {
        return Err(err(
            R::LinkTooLarge,
            format!(
                "the delivery link is {} bytes; the cap is {}",
                link.len(),
                limits.delivery_token_bytes
            ),
        ));
    }
    Ok(Delivery {
        link,
        token: token.clone(),
    })
}

fn bad_link(what: &str) -> PrismError {
    err(R::InvalidLink, format!("invalid delivery link: {what}"))
}

/// Verify a link: size cap first (`link_too_large`), then shape and signature
/// (`invalid_link`; the signature is compared in constant time after a length check),
/// then the payload, then expiry (`link_expired` at or after `expiresAt`).
pub fn verify(
    link: &str,
    secret: &[u8],
    now_ms: i64,
    limits: &ArtifactLimits,
) -> Result<DeliveryToken> {
    check_secret(secret)?;
    if link.len() as u64 > limits.delivery_token_bytes {
        return Err(err(
            R::LinkTooLarge,
            format!(
                "the delivery link is {} bytes; the cap is {}",
                link.len(),
                limits.delivery_token_bytes
            ),
        ));
    }
    let mut parts = link.split('.');
    let (Some(payload), Some(sig), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad_link("expected <payload>.<signature>"));
    };
    let sig = URL_SAFE_NO_PAD
        .decode(sig)
        .map_err(|_| bad_link("signature is not base64url"))?;
    if sig.len() != MAC_BYTES {
        return Err(bad_link("signature has the wrong length"));
    }
    let mut m = mac(secret)?;
    m.update(payload.as_bytes());
    m.verify_slice(&sig)
        .map_err(|_| bad_link("signature does not match"))?;
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| bad_link("payload is not base64url"))?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|_| bad_link("payload is not JSON"))?;
    let token = parse_token(&value)?;
    let issued =
        time::parse_iso(&token.issued_at).ok_or_else(|| bad_link("issuedAt is not a timestamp"))?;
    let expires = time::parse_iso(&token.expires_at)
        .ok_or_else(|| bad_link("expiresAt is not a timestamp"))?;
    let hard_ms =
        i64::try_from(ArtifactLimits::hard().delivery_ttl_seconds * 1000).unwrap_or(i64::MAX);
    if expires <= issued || expires.saturating_sub(issued) > hard_ms {
        return Err(bad_link("validity window is out of bounds"));
    }
    if now_ms >= expires {
        return Err(err(
            R::LinkExpired,
            format!("the delivery link expired at {}", token.expires_at),
        ));
    }
    Ok(token)
}

fn parse_token(value: &Value) -> Result<DeliveryToken> {
    let f = Fields::new(value, "link", |_| bad_link("payload has the wrong shape"))?;
    input::only(
        &f,
        &[
            "artifactId",
            "threadId",
            "version",
            "ownership",
            "issuedAt",
            "expiresAt",
        ],
    )
    .map_err(|_| bad_link("payload has unknown members"))?;
    let none = SecretRedactor::none();
    let shape = |_: PrismError| bad_link("payload has the wrong shape");
    let artifact_id = f.str("artifactId").map_err(shape)?.to_string();
    let thread_id = f.str("threadId").map_err(shape)?.to_string();
    valid_id(&artifact_id, "artifactId", &none).map_err(shape)?;
    valid_id(&thread_id, "threadId", &none).map_err(shape)?;
    let version = f.u64("version").map_err(shape)?;
    if version == 0 {
        return Err(bad_link("payload has the wrong shape"));
    }
    let ownership = input::ownership(f.get("ownership"), &none).map_err(shape)?;
    Ok(DeliveryToken {
        artifact_id,
        thread_id,
        version,
        ownership,
        issued_at: f.str("issuedAt").map_err(shape)?.to_string(),
        expires_at: f.str("expiresAt").map_err(shape)?.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef-link-secret";

    fn owner() -> Ownership {
        Ownership {
            tenant_id: Some("t1".into()),
            ..Default::default()
        }
    }

    #[test]
    fn sign_verify_round_trip_and_format() {
        let l = ArtifactLimits::defaults();
        let t = issue("art_1", "thread-1", 2, &owner(), 300, 1_000_000);
        let d = sign(&t, SECRET, &l).unwrap();
        let (p, s) = d.link.split_once('.').unwrap();
        let payload: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap();
        assert_eq!(
            payload,
            serde_json::json!({"artifactId":"art_1","threadId":"thread-1","version":2,"ownership":{"tenantId":"t1"},
                "issuedAt":"1970-01-01T00:16:40.000Z","expiresAt":"1970-01-01T00:21:40.000Z"})
        );
        let mut m = Hmac::<Sha256>::new_from_slice(SECRET).unwrap();
        m.update(p.as_bytes());
        assert_eq!(
            URL_SAFE_NO_PAD.decode(s).unwrap(),
            m.finalize().into_bytes().to_vec()
        );
        assert_eq!(verify(&d.link, SECRET, 1_000_001, &l).unwrap(), t);
        assert_eq!(
            verify(&d.link, SECRET, 1_300_000, &l).unwrap_err().reason(),
            Some("link_expired")
        );
        assert_eq!(
            verify(&d.link, b"another-secret-of-enough-length", 1_000_001, &l)
                .unwrap_err()
                .reason(),
            Some("invalid_link")
        );
    }

    #[test]
    fn tampering_and_garbage_are_invalid() {
        let l = ArtifactLimits::defaults();
        let d = sign(
            &issue("art_1", "thread-1", 2, &owner(), 300, 1_000_000),
            SECRET,
            &l,
        )
        .unwrap();
        let (p, s) = d.link.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(
            serde_json::to_vec(&issue("art_1", "thread-1", 3, &owner(), 300, 1_000_000)).unwrap(),
        );
        for bad in [
            format!("{forged}.{s}"),
            format!("{p}.{}", &s[1..]),
            format!("{p}.{s}A"),
            format!("{p}.{s}.x"),
            p.to_string(),
            String::new(),
            "..".into(),
            format!("{p}.!!!"),
        ] {
            assert_eq!(
                verify(&bad, SECRET, 1_000_001, &l).unwrap_err().reason(),
                Some("invalid_link"),
                "{bad}"
            );
        }
        let huge = "a".repeat(4097);
        assert_eq!(
            verify(&huge, SECRET, 0, &l).unwrap_err().reason(),
            Some("link_too_large")
        );
        let tiny =
            ArtifactLimits::resolve(Some(&serde_json::json!({"deliveryTokenBytes": 10}))).unwrap();
        assert_eq!(
            sign(
                &issue("art_1", "thread-1", 2, &owner(), 300, 0),
                SECRET,
                &tiny
            )
            .unwrap_err()
            .reason(),
            Some("link_too_large")
        );
        assert!(check_secret(b"short").is_err());
    }
}
