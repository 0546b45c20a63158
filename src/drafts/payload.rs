//! Payload rules: what a draft payload (on create) and an edit (`modifiedArguments`) must
//! be before anything is written, and the payload digest.
//!
//! A payload is a plain JSON object, nested at most `payloadDepth` levels, at most
//! `payloadBytes` of JSON text, with no `__proto__`/`constructor`/`prototype` key, no
//! `-0` and no integer outside ±(2^53 − 1) (JavaScript could not hold it exactly, so two
//! parties could read different payloads under one digest). NaN, Infinity, BigInt,
//! cycles and accessors cannot reach JSON text: `js/drafts.js` refuses them on the
//! JavaScript value before it is serialised. Messages name JSON pointers, never values.

use super::limits::DraftLimits;
use super::werr;
use crate::error::{Result, WorkDraftReason as R};
use serde_json::Value;

/// Top-level payload keys an edit may not change: they name the provider, operation,
/// owner or idempotency key of the draft, which only `create` sets.
pub const IMMUTABLE_KEYS: [&str; 7] = [
    "provider",
    "op",
    "ownership",
    "tenantId",
    "accountId",
    "userId",
    "idempotencyKey",
];

const SAFE: f64 = 9_007_199_254_740_991.0;

/// Hex SHA-256 of the RFC 8785 canonical JSON of `payload` (`draftPayloadDigest`).
pub fn digest(payload: &Value) -> String {
    crate::json::canonical_digest(payload)
}

/// JSON pointer escaping of one reference token.
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Check `payload` (named `what` in messages); shape failures are `reason`, size
/// `payload_too_large`.
pub fn check(payload: &Value, what: &str, reason: R, limits: &DraftLimits) -> Result<()> {
    if !payload.is_object() {
        return Err(werr(
            reason,
            format!(
                "{what} must be a plain JSON object, got {}",
                crate::json::type_name(payload)
            ),
        ));
    }
    walk(payload, 0, &mut String::new(), what, reason, limits)?;
    let bytes = crate::store::value_bytes(payload);
    if bytes as u64 > limits.payload_bytes() {
        return Err(werr(
            R::PayloadTooLarge,
            format!(
                "{what} is {bytes} bytes of JSON; the cap is {}",
                limits.payload_bytes()
            ),
        ));
    }
    Ok(())
}

fn walk(
    v: &Value,
    depth: u64,
    pointer: &mut String,
    what: &str,
    reason: R,
    limits: &DraftLimits,
) -> Result<()> {
    let at = |p: &str| {
        if p.is_empty() {
            "/".to_string()
        } else {
            p.to_string()
        }
    };
    match v {
        Value::Number(n) => {
            let bad = match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => (i as f64).abs() > SAFE,
                (_, Some(u), _) => u as f64 > SAFE,
                (_, _, Some(f)) => !f.is_finite() || (f == 0.0 && f.is_sign_negative()),
                _ => true,
            };
            if bad {
                return Err(werr(
                    reason,
                    format!(
                        "{what} at {} holds a number JSON cannot carry exactly (-0, non-finite or an integer beyond 2^53 - 1)",
                        at(pointer)
                    ),
                ));
            }
            Ok(())
        }
        Value::Array(_) | Value::Object(_) if depth >= limits.payload_depth() => Err(werr(
            reason,
            format!(
                "{what} at {} is nested deeper than {} levels",
                at(pointer),
                limits.payload_depth()
            ),
        )),
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                walk(x, depth + 1, pointer, what, reason, limits)?;
                pointer.truncate(len);
            }
            Ok(())
        }
        Value::Object(obj) => {
            for (k, x) in obj {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&escape(k));
                if matches!(k.as_str(), "__proto__" | "constructor" | "prototype") {
                    return Err(werr(
                        reason,
                        format!("{what} must not hold a prototype key ({})", pointer),
                    ));
                }
                walk(x, depth + 1, pointer, what, reason, limits)?;
                pointer.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// An edit may not change (add, remove or alter) any of [`IMMUTABLE_KEYS`] at the top
/// level of the payload.
pub fn check_immutable(previous: &Value, edited: &Value) -> Result<()> {
    for k in IMMUTABLE_KEYS {
        if previous.get(k) != edited.get(k) {
            return Err(werr(
                R::ImmutableField,
                format!("the edit changes /{k}, which only create may set"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason_of(v: Value) -> Option<&'static str> {
        check(&v, "payload", R::MalformedEdit, &DraftLimits::default())
            .err()
            .and_then(|e| e.reason())
    }

    #[test]
    fn only_plain_exact_json_objects_pass() {
        assert_eq!(reason_of(json!({ "to": ["a@x"], "n": 1.5, "m": -3 })), None);
        for bad in [json!([1]), json!("x"), json!(null), json!(1)] {
            assert_eq!(reason_of(bad), Some("malformed_edit"));
        }
        let neg_zero: Value = serde_json::from_str(r#"{"a":-0}"#).unwrap();
        assert_eq!(reason_of(neg_zero), Some("malformed_edit"));
        let neg_zero: Value = serde_json::from_str(r#"{"a":[-0.0]}"#).unwrap();
        assert_eq!(reason_of(neg_zero), Some("malformed_edit"));
        assert_eq!(
            reason_of(json!({ "a": 9_007_199_254_740_992u64 })),
            Some("malformed_edit")
        );
        assert_eq!(
            reason_of(json!({ "a": -9_007_199_254_740_992i64 })),
            Some("malformed_edit")
        );
        assert_eq!(reason_of(json!({ "a": 9_007_199_254_740_991u64 })), None);
        let proto: Value = serde_json::from_str(r#"{"a":{"__proto__":{"x":1}}}"#).unwrap();
        let e = check(&proto, "payload", R::MalformedEdit, &DraftLimits::default()).unwrap_err();
        assert!(e.message.contains("/a/__proto__"), "{}", e.message);
    }

    #[test]
    fn depth_and_bytes_are_capped() {
        let mut v = json!(1);
        for _ in 0..17 {
            v = json!({ "k": v });
        }
        assert_eq!(reason_of(v.clone()), Some("malformed_edit"));
        assert_eq!(reason_of(v["k"].clone()), None);
        let big = json!({ "body": "x".repeat(70 * 1024) });
        assert_eq!(reason_of(big), Some("payload_too_large"));
    }

    #[test]
    fn messages_hold_pointers_not_values() {
        let v: Value = serde_json::from_str(r#"{"secret value":{"a/b":-0}}"#).unwrap();
        let e = check(&v, "payload", R::MalformedEdit, &DraftLimits::default()).unwrap_err();
        assert!(e.message.contains("/secret value/a~1b"));
    }

    #[test]
    fn immutable_keys_cannot_change() {
        let prev = json!({ "op": "send", "to": "a" });
        assert!(check_immutable(&prev, &json!({ "op": "send", "to": "b" })).is_ok());
        for edited in [
            json!({ "op": "delete" }),
            json!({ "to": "a" }),
            json!({ "op": "send", "provider": "x" }),
        ] {
            assert_eq!(
                check_immutable(&prev, &edited).unwrap_err().reason(),
                Some("immutable_field")
            );
        }
    }

    #[test]
    fn digest_is_jcs_sha256() {
        let a: Value = serde_json::from_str(r#"{"b":1,"a":[1.0,"x"]}"#).unwrap();
        assert_eq!(
            digest(&a),
            crate::json::sha256_hex(br#"{"a":[1,"x"],"b":1}"#)
        );
    }
}
