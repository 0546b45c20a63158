//! The pure functions of the public API over JSON values, so the binding layer stays thin:
//! delivery-link signing/verification, approval state, the checkpoint key, evidence
//! digests and checks.

use super::evidence::{self, approval_intact, binding_digest, parse_record};
use super::limits::ArtifactLimits;
use super::link;
use super::model::approval_state_of;
use super::{err, invalid};
use crate::error::{ArtifactReason as R, PrismError, Result};
use crate::json::type_name;
use serde_json::Value;

/// `signArtifactDeliveryLink(token, secret)`: signs exactly `token_text` (the JSON text
/// of the caller's token object). The token must carry the members a verifier reads
/// (`TypeError` otherwise); the secret must not be empty.
pub fn sign_link(token_text: &str, secret: &[u8]) -> Result<String> {
    let value: Value = serde_json::from_str(token_text)
        .map_err(|e| PrismError::type_error(format!("token cannot be read: {e}")))?;
    if link::token_of(&value).is_none() {
        return Err(PrismError::type_error(
            "token must be an ArtifactDeliveryToken: artifactId, threadId, issuedAt and expiresAt strings and a safe-integer version",
        ));
    }
    if secret.is_empty() {
        return Err(PrismError::type_error("secret must not be empty"));
    }
    link::sign_text(
        token_text,
        secret,
        ArtifactLimits::hard().delivery_link_token_bytes,
    )
}

/// `verifyArtifactDeliveryLink(link, secret, maxBytes = 16 KiB, now?)` → the token.
pub fn verify_link(
    link_value: &Value,
    secret: &[u8],
    max_bytes: Option<u64>,
    now_ms: i64,
) -> Result<Value> {
    let Value::String(text) = link_value else {
        return Err(err(
            R::InvalidLink,
            format!(
                "invalid delivery link: expected a string, got {}",
                type_name(link_value)
            ),
        ));
    };
    let max = max_bytes.unwrap_or(ArtifactLimits::hard().delivery_link_token_bytes);
    let token = link::verify(text, secret, max, now_ms)?;
    Ok(serde_json::to_value(token).unwrap_or(Value::Null))
}

/// `artifactApprovalState(record)` → `"pending" | "approved" | "rejected"`.
pub fn approval_state(record: &Value) -> Result<&'static str> {
    let arrays = record.as_object().and_then(|o| {
        let revisions = o.get("revisions")?.as_array()?;
        let approvals = o.get("approvals")?.as_array()?;
        Some((revisions, approvals))
    });
    let Some((revisions, approvals)) = arrays else {
        return Err(PrismError::type_error(
            "record must be an ArtifactRecord with revisions and approvals arrays",
        ));
    };
    Ok(approval_state_of(revisions, approvals).as_str())
}

/// `approvalEvidenceIntact(record, version?)`.
pub fn evidence_intact(record: &Value, version: &Value) -> Result<bool> {
    let rec = parse_record(record)?;
    let version = match version {
        Value::Null => None,
        v => Some(
            crate::json::as_u64(v)
                .filter(|n| *n > 0)
                .ok_or_else(|| invalid("version must be a positive integer".into()))?,
        ),
    };
    Ok(approval_intact(&rec, version))
}

/// `citationBindingDigest(citations)`.
pub fn citation_digest(citations: &Value) -> Result<String> {
    Ok(binding_digest(&evidence::parse_citations(
        citations,
        "citations",
    )?))
}

/// `checkCitationIntegrity(input)`.
pub fn integrity(value: &Value) -> Result<Value> {
    let report = evidence::check_integrity(value)?;
    Ok(serde_json::to_value(report).unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &[u8] = b"0123456789abcdef0123";

    #[test]
    fn sign_and_verify_through_values() {
        let token = r#"{"threadId":"t","artifactId":"a","version":2,"userId":"u","issuedAt":"1970-01-01T00:00:01.000Z","expiresAt":"1970-01-01T00:01:01.000Z","extra":1}"#;
        let l = sign_link(token, b"short").unwrap();
        let t = verify_link(&json!(l), b"short", None, 2_000).unwrap();
        assert_eq!(
            t,
            json!({ "artifactId": "a", "threadId": "t", "version": 2, "userId": "u",
                    "issuedAt": "1970-01-01T00:00:01.000Z", "expiresAt": "1970-01-01T00:01:01.000Z" })
        );
        assert_eq!(
            verify_link(&json!(l), b"short", None, 61_000)
                .unwrap_err()
                .reason(),
            Some("link_expired")
        );
        assert_eq!(
            verify_link(&json!(l), SECRET, None, 2_000)
                .unwrap_err()
                .reason(),
            Some("invalid_link")
        );
        assert_eq!(
            verify_link(&json!(l), b"short", Some(10), 2_000)
                .unwrap_err()
                .reason(),
            Some("link_too_large")
        );
        assert_eq!(
            verify_link(&json!(5), SECRET, None, 0)
                .unwrap_err()
                .reason(),
            Some("invalid_link")
        );
        assert_eq!(
            sign_link(r#"{"artifactId":"a"}"#, SECRET).unwrap_err().kind,
            crate::error::ErrorKind::Type
        );
        assert_eq!(
            sign_link(token, b"").unwrap_err().kind,
            crate::error::ErrorKind::Type
        );
    }

    #[test]
    fn approval_state_and_evidence_of_a_record() {
        let rec = json!({
            "id": "a", "threadId": "t", "userId": "u", "lastValidatedVersion": 1, "createdAt": "x", "updatedAt": "x",
            "revisions": [
                { "version": 1, "uri": "https://a", "mime": "m", "hash": "h", "createdAt": "x" },
                { "version": 2, "uri": "https://b", "mime": "m", "hash": "h2", "createdAt": "x" }
            ],
            "approvals": [{ "version": 1, "state": "approved", "reviewer": "user:r", "decidedAt": "x",
                            "evidenceDigest": crate::json::sha256_hex(b"[]") }]
        });
        assert_eq!(approval_state(&rec).unwrap(), "pending");
        assert!(evidence_intact(&rec, &Value::Null).unwrap());
        assert!(!evidence_intact(&rec, &json!(2)).unwrap());
        let mut tampered = rec.clone();
        tampered["revisions"][0]["citations"] = json!([{ "uri": "https://evil" }]);
        assert!(!evidence_intact(&tampered, &Value::Null).unwrap());
        assert_eq!(
            approval_state(&json!({ "id": 1 })).unwrap_err().kind,
            crate::error::ErrorKind::Type
        );
        assert_eq!(
            approval_state(&json!({ "revisions": [], "approvals": [] })).unwrap(),
            "pending"
        );
    }
}
