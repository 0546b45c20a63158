//! Signed, expiring delivery links in `@arnilo/prism`'s format: `base64url(payload)` `.`
//! `base64url(HMAC-SHA256(secret, base64url(payload)))`, where the payload is the JSON
//! text of an `ArtifactDeliveryToken` (`{ artifactId, threadId, version, tenantId?,
//! accountId?, userId?, issuedAt, expiresAt }`, ownership flat) and the key is the
//! secret's bytes (a string's UTF-8). Links are reauthorised per download and are not
//! bearer secrets; the signature binds the payload text exactly as issued, so a link
//! signed by either implementation verifies in the other.

use super::err;
use crate::error::{ArtifactReason as R, PrismError, Result};
use crate::store::Ownership;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::Value;
use sha2::Sha256;

/// Shortest link secret the artifact service and handler accept, in bytes.
pub const MIN_SECRET_BYTES: usize = 16;
/// Longest link secret the artifact service and handler accept, in bytes.
pub const MAX_SECRET_BYTES: usize = 4096;

/// base64url that decodes with or without padding (a signer may pad).
const URL_SAFE_ANY_PADDING: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// `ArtifactDeliveryToken`: what a link grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryToken {
    pub artifact_id: String,
    pub thread_id: String,
    pub version: i64,
    #[serde(flatten)]
    pub owner: Ownership,
    pub issued_at: String,
    pub expires_at: String,
}

/// `ArtifactDeliveryResult`: `{ link, token }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delivery {
    pub link: String,
    pub token: DeliveryToken,
}

/// Refuse a service or handler secret shorter than 16 or longer than 4096 bytes
/// (`TypeError`; the reference takes any non-empty secret).
pub fn check_secret(secret: &[u8]) -> Result<()> {
    if secret.len() < MIN_SECRET_BYTES || secret.len() > MAX_SECRET_BYTES {
        return Err(PrismError::type_error(format!(
            "linkSecret must be {MIN_SECRET_BYTES}..={MAX_SECRET_BYTES} bytes, got {}",
            secret.len()
        )));
    }
    Ok(())
}

/// base64url of the HMAC-SHA256 of `payload` under `secret` (any length, as HMAC allows).
fn signature(payload: &str, secret: &[u8]) -> String {
    match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mut m) => {
            m.update(payload.as_bytes());
            URL_SAFE_NO_PAD.encode(m.finalize().into_bytes())
        }
        // HMAC takes keys of every length; unreachable, and never a valid signature.
        Err(_) => String::new(),
    }
}

/// A token for `version`, valid from `now_ms` for `ttl_seconds`.
pub fn issue(
    artifact_id: &str,
    thread_id: &str,
    version: u64,
    owner: &Ownership,
    ttl_seconds: u64,
    now_ms: i64,
) -> DeliveryToken {
    let ttl_ms = i64::try_from(ttl_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
    DeliveryToken {
        artifact_id: artifact_id.to_string(),
        thread_id: thread_id.to_string(),
        version: i64::try_from(version).unwrap_or(i64::MAX),
        owner: owner.clone(),
        issued_at: crate::util::time::format_iso(now_ms),
        expires_at: crate::util::time::format_iso(now_ms.saturating_add(ttl_ms)),
    }
}

fn too_large(n: usize, cap: u64) -> PrismError {
    err(
        R::LinkTooLarge,
        format!("the delivery link is {n} bytes; the cap is {cap}"),
    )
}

/// The link of a token's JSON text (`payload`): `link_too_large` past `max_bytes`.
pub fn sign_text(payload: &str, secret: &[u8], max_bytes: u64) -> Result<String> {
    let encoded = URL_SAFE_NO_PAD.encode(payload.as_bytes());
    let sig = signature(&encoded, secret);
    let link = format!("{encoded}.{sig}");
    if link.len() as u64 > max_bytes {
        return Err(too_large(link.len(), max_bytes));
    }
    Ok(link)
}

/// Sign `token` (its JSON text, members in declaration order, as `JSON.stringify` of the
/// token object the service returns).
pub fn sign(token: &DeliveryToken, secret: &[u8], max_bytes: u64) -> Result<Delivery> {
    Ok(Delivery {
        link: sign_text(&token_text(token)?, secret, max_bytes)?,
        token: token.clone(),
    })
}

/// The JSON text of [`sign`]'s delivery (`{"link":…,"token":…}`), written without building
/// it: the token's text is the signed payload itself (issue 13).
pub fn delivery_text(token: &DeliveryToken, secret: &[u8], max_bytes: u64) -> Result<String> {
    let payload = token_text(token)?;
    let link = sign_text(&payload, secret, max_bytes)?;
    // base64url and a dot: nothing JSON escapes.
    Ok(format!("{{\"link\":\"{link}\",\"token\":{payload}}}"))
}

/// A token's JSON text: its members in declaration order, ownership flat.
fn token_text(token: &DeliveryToken) -> Result<String> {
    serde_json::to_string(token).map_err(|e| PrismError::internal(e.to_string()))
}

fn bad_link(what: &str) -> PrismError {
    err(R::InvalidLink, format!("invalid delivery link: {what}"))
}

/// Verify a link as the reference does: empty → `invalid_link`; over `max_bytes` →
/// `link_too_large`; then the signature over the payload text (constant-time, after a
/// length check) and the payload's shape → `invalid_link`; then expiry → `link_expired`
/// at or after `expiresAt` (also when it is not a timestamp).
pub fn verify(link: &str, secret: &[u8], max_bytes: u64, now_ms: i64) -> Result<DeliveryToken> {
    if link.is_empty() {
        return Err(bad_link("a link is required"));
    }
    if link.len() as u64 > max_bytes {
        return Err(too_large(link.len(), max_bytes));
    }
    let (payload, sig) = match link.rfind('.') {
        Some(dot) if dot > 0 && dot + 1 < link.len() => (&link[..dot], &link[dot + 1..]),
        _ => return Err(bad_link("expected <payload>.<signature>")),
    };
    let expected = signature(payload, secret);
    let same = expected.len() == sig.len()
        && expected
            .bytes()
            .zip(sig.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same {
        return Err(bad_link("signature does not match"));
    }
    let bytes = URL_SAFE_ANY_PADDING
        .decode(payload)
        .map_err(|_| bad_link("payload is not base64url"))?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|_| bad_link("payload is not JSON"))?;
    let token = token_of(&value).ok_or_else(|| bad_link("payload is not a delivery token"))?;
    let expired = crate::util::time::parse_iso(&token.expires_at).is_none_or(|t| now_ms >= t);
    if expired {
        return Err(err(
            R::LinkExpired,
            format!("the delivery link expired at {}", token.expires_at),
        ));
    }
    Ok(token)
}

/// The token members of a payload (or of a token to sign): `artifactId`, `threadId`,
/// `issuedAt`, `expiresAt` strings, `version` a safe integer; ownership members kept when
/// they are strings; anything else ignored.
pub fn token_of(value: &Value) -> Option<DeliveryToken> {
    let obj = value.as_object()?;
    let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
    let version = crate::json::as_i64(obj.get("version")?)
        .filter(|v| v.unsigned_abs() <= crate::util::MAX_SAFE_INTEGER)?;
    Some(DeliveryToken {
        artifact_id: text("artifactId")?,
        thread_id: text("threadId")?,
        version,
        owner: Ownership {
            tenant_id: text("tenantId"),
            account_id: text("accountId"),
            user_id: text("userId"),
        },
        issued_at: text("issuedAt")?,
        expires_at: text("expiresAt")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef-link-secret";
    const HARD: u64 = 16 * 1024;

    fn owner() -> Ownership {
        Ownership {
            tenant_id: Some("t1".into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_delivery_text_is_the_serialized_delivery() {
        let awkward = Ownership {
            tenant_id: Some("t\"1\\\u{1}é".into()),
            account_id: None,
            user_id: Some("u 1".into()),
        };
        for owner in [owner(), awkward, Ownership::default()] {
            let t = issue(
                "art\"1",
                "thread-\u{2028}",
                7,
                &owner,
                60,
                1_700_000_000_000,
            );
            let text = delivery_text(&t, SECRET, HARD).unwrap();
            let value: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                text,
                serde_json::to_string(&sign(&t, SECRET, HARD).unwrap()).unwrap()
            );
            assert_eq!(token_of(&value["token"]).unwrap(), t);
            let link = value["link"].as_str().unwrap();
            assert_eq!(verify(link, SECRET, HARD, 1_700_000_000_001).unwrap(), t);
        }
        assert_eq!(
            delivery_text(&issue("a", "t", 1, &owner(), 60, 0), SECRET, 10)
                .unwrap_err()
                .reason(),
            Some("link_too_large")
        );
    }

    #[test]
    fn sign_verify_round_trip_and_format() {
        let t = issue("art_1", "thread-1", 2, &owner(), 300, 1_000_000);
        let d = sign(&t, SECRET, 4096).unwrap();
        let (p, s) = d.link.split_once('.').unwrap();
        assert_eq!(
            String::from_utf8(URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap(),
            r#"{"artifactId":"art_1","threadId":"thread-1","version":2,"tenantId":"t1","issuedAt":"1970-01-01T00:16:40.000Z","expiresAt":"1970-01-01T00:21:40.000Z"}"#
        );
        let mut m = Hmac::<Sha256>::new_from_slice(SECRET).unwrap();
        m.update(p.as_bytes());
        assert_eq!(s, URL_SAFE_NO_PAD.encode(m.finalize().into_bytes()));
        assert_eq!(verify(&d.link, SECRET, HARD, 1_000_001).unwrap(), t);
        assert_eq!(
            verify(&d.link, SECRET, HARD, 1_300_000)
                .unwrap_err()
                .reason(),
            Some("link_expired")
        );
        for wrong in [&b"another-secret-of-enough-length"[..], b"short", b""] {
            assert_eq!(
                verify(&d.link, wrong, HARD, 1_000_001)
                    .unwrap_err()
                    .reason(),
                Some("invalid_link")
            );
        }
    }

    #[test]
    fn tampering_and_garbage_are_invalid() {
        let d = sign(
            &issue("art_1", "thread-1", 2, &owner(), 300, 1_000_000),
            SECRET,
            HARD,
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
            format!("{p}x.{s}"),
            p.to_string(),
            ".".into(),
            format!(".{s}"),
            format!("{p}."),
            format!("{p}.!!!"),
        ] {
            assert_eq!(
                verify(&bad, SECRET, HARD, 1_000_001).unwrap_err().reason(),
                Some("invalid_link"),
                "{bad}"
            );
        }
        assert_eq!(
            verify("", SECRET, HARD, 0).unwrap_err().reason(),
            Some("invalid_link")
        );
        assert_eq!(
            verify(&"a".repeat(4097), SECRET, 4096, 0)
                .unwrap_err()
                .reason(),
            Some("link_too_large")
        );
        // A signed payload that is not a token is invalid; one without a parseable expiry
        // is expired, as the reference reads `Date.parse` failing.
        let not_token = sign_text(r#"{"artifactId":"a"}"#, SECRET, HARD).unwrap();
        assert_eq!(
            verify(&not_token, SECRET, HARD, 0).unwrap_err().reason(),
            Some("invalid_link")
        );
        let odd = sign_text(
            r#"{"artifactId":"a","threadId":"t","version":1,"issuedAt":"x","expiresAt":"soon"}"#,
            SECRET,
            HARD,
        )
        .unwrap();
        assert_eq!(
            verify(&odd, SECRET, HARD, 0).unwrap_err().reason(),
            Some("link_expired")
        );
        assert_eq!(
            sign_text(&"x".repeat(100), SECRET, 10)
                .unwrap_err()
                .reason(),
            Some("link_too_large")
        );
        assert!(check_secret(b"short").is_err());
    }
}
