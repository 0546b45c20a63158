//! The pure functions of the public API over JSON values, so the binding layer stays thin:
//! delivery-link signing/verification, approval state, evidence digests and checks.

use super::evidence::{self, approval_intact, binding_digest, parse_record};
use super::input::{self, valid_id};
use super::limits::ArtifactLimits;
use super::link;
use super::model::Decision;
use super::redact::SecretRedactor;
use super::{err, invalid, time};
use crate::error::{ArtifactReason as R, PrismError, Result};
use crate::json::{type_name, Fields};
use serde_json::{json, Value};

/// `{ limits?, nowMs? }` of the link functions.
fn link_options(options: &Value) -> Result<(ArtifactLimits, i64)> {
    if options.is_null() {
        return Ok((ArtifactLimits::defaults(), time::now_ms()));
    }
    let f = Fields::new(options, "options", PrismError::type_error)?;
    input::only(&f, &["limits", "nowMs"]).map_err(|e| PrismError::type_error(e.message))?;
    let limits = ArtifactLimits::resolve(f.get("limits"))?;
    let now = f.opt_i64("nowMs")?.unwrap_or_else(time::now_ms);
    Ok((limits, now))
}

/// `signArtifactDeliveryLink({ artifactId, threadId, version, ownership, ttlSeconds? }, secret, options?)`.
pub fn sign_link(value: &Value, secret: &[u8], options: &Value) -> Result<Value> {
    let (limits, now) = link_options(options)?;
    link::check_secret(secret)?;
    let f = input::request(
        value,
        &[
            "artifactId",
            "threadId",
            "version",
            "ownership",
            "ttlSeconds",
        ],
    )?;
    let none = SecretRedactor::none();
    let artifact = input::id(&f, "artifactId", &none)?;
    let thread = input::id(&f, "threadId", &none)?;
    let version = input::version(&f, "version", true)?.unwrap_or_default();
    let owner = input::ownership(f.get("ownership"), &none)?;
    let ttl = match f.opt_u64("ttlSeconds")? {
        None => limits.delivery_ttl_seconds,
        Some(t) if t >= 1 && t <= limits.delivery_ttl_seconds => t,
        Some(_) => {
            return Err(f.fail(
                "ttlSeconds",
                &format!("must be an integer in 1..={}", limits.delivery_ttl_seconds),
            ))
        }
    };
    let token = link::issue(&artifact, &thread, version, &owner, ttl, now);
    let delivery = link::sign(&token, secret, &limits)?;
    Ok(serde_json::to_value(delivery).unwrap_or(Value::Null))
}

/// `verifyArtifactDeliveryLink(link, secret, options?)` → the token.
pub fn verify_link(link_value: &Value, secret: &[u8], options: &Value) -> Result<Value> {
    let (limits, now) = link_options(options)?;
    link::check_secret(secret)?;
    let Value::String(text) = link_value else {
        return Err(err(
            R::InvalidLink,
            format!(
                "invalid delivery link: expected a string, got {}",
                type_name(link_value)
            ),
        ));
    };
    let token = link::verify(text, secret, now, &limits)?;
    Ok(serde_json::to_value(token).unwrap_or(Value::Null))
}

/// `artifactApprovalState(record)` → `{ version, state, lastValidatedVersion?, approval? }`
/// for the latest revision.
pub fn approval_state(record: &Value) -> Result<Value> {
    let rec = parse_record(record)?;
    let decision = rec.decision(rec.latest_version);
    let state = match decision.map(|a| a.state) {
        Some(Decision::Approved) => "approved",
        Some(Decision::Rejected) => "rejected",
        None => "pending",
    };
    let mut out = json!({ "version": rec.latest_version, "state": state });
    if let Some(v) = rec.last_validated_version {
        out["lastValidatedVersion"] = json!(v);
    }
    if let Some(a) = decision {
        out["approval"] = serde_json::to_value(a).unwrap_or(Value::Null);
    }
    Ok(out)
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

/// Validate an id the way the service does (exported for the HTTP adapter's routes).
pub fn check_id(id: &str, path: &str) -> Result<()> {
    valid_id(id, path, &SecretRedactor::none())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123";

    #[test]
    fn sign_and_verify_through_values() {
        let d = sign_link(
            &json!({ "artifactId": "a", "threadId": "t", "version": 2, "ownership": { "userId": "u" }, "ttlSeconds": 60 }),
            SECRET,
            &json!({ "nowMs": 1_000 }),
        )
        .unwrap();
        let t = verify_link(&d["link"], SECRET, &json!({ "nowMs": 2_000 })).unwrap();
        assert_eq!(t, d["token"]);
        assert_eq!(t["expiresAt"], "1970-01-01T00:01:01.000Z");
        assert_eq!(
            verify_link(&d["link"], SECRET, &json!({ "nowMs": 61_000 }))
                .unwrap_err()
                .reason(),
            Some("link_expired")
        );
        assert_eq!(
            verify_link(&json!(5), SECRET, &Value::Null)
                .unwrap_err()
                .reason(),
            Some("invalid_link")
        );
        assert!(sign_link(&json!({ "artifactId": "a", "threadId": "t", "version": 2, "ownership": { "userId": "u" }, "ttlSeconds": 301 }), SECRET, &Value::Null).is_err());
    }

    #[test]
    fn approval_state_of_latest() {
        let rec = json!({
            "id": "a", "threadId": "t", "ownership": { "userId": "u" }, "state": "approved", "latestVersion": 2,
            "lastValidatedVersion": 1, "createdAt": "x", "updatedAt": "x",
            "revisions": [
                { "version": 1, "uri": "https://a", "mime": "m", "hash": "h", "createdAt": "x" },
                { "version": 2, "uri": "https://b", "mime": "m", "hash": "h2", "createdAt": "x" }
            ],
            "approvals": [{ "version": 1, "state": "approved", "reviewer": "user:r", "decidedAt": "x",
                            "evidenceDigest": crate::json::sha256_hex(b"[]") }]
        });
        let s = approval_state(&rec).unwrap();
        assert_eq!(s["state"], "pending");
        assert_eq!(s["version"], 2);
        assert_eq!(s["lastValidatedVersion"], 1);
        assert!(evidence_intact(&rec, &Value::Null).unwrap());
        assert!(!evidence_intact(&rec, &json!(2)).unwrap());
        let mut tampered = rec.clone();
        tampered["revisions"][0]["citations"] = json!([{ "uri": "https://evil" }]);
        assert!(!evidence_intact(&tampered, &Value::Null).unwrap());
        assert!(approval_state(&json!({ "id": 1 })).is_err());
    }
}
