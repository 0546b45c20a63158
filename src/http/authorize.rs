//! The handler's checks of what the host's `authorize` returned: the ownership and the
//! optional identity, by the artifact service's own input rules
//! (`crate::artifacts::input`), and, on download, the delivery token's owner. One place
//! decides, so the handler and the service never disagree about an identity (an
//! `expiresAt` of `"Jan 1 2999"` is not a timestamp to either). Every refusal is a 403:
//! whatever `authorize` yielded is not a usable authorization.

use super::status::HttpError;
use crate::artifacts::input;
use crate::artifacts::redact::SecretRedactor;
use crate::store::Ownership;
use serde_json::{Map, Value};

const OWNERSHIP_KEYS: [&str; 3] = ["tenantId", "accountId", "userId"];

/// What the handler passes on to the service: the ownership (its three members only,
/// empty ones dropped) and the identity exactly as checked, if there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Authorization {
    pub ownership: Ownership,
    pub identity: Option<Value>,
}

fn forbidden(message: impl Into<String>) -> HttpError {
    HttpError::new(403, "forbidden", message)
}

/// Check the value `authorize` returned (as JSON: `undefined` is `null`): `false` or
/// `null` is "not authorized"; `{ ownership, identity? }` or a bare ownership object
/// otherwise. `token` is the verified delivery token on download: its owner must be
/// exactly the authorized one.
pub fn check_authorization(
    result: &Value,
    token: Option<&Value>,
    now_ms: i64,
) -> Result<Authorization, HttpError> {
    let obj = match result {
        Value::Null | Value::Bool(false) => return Err(forbidden("not authorized")),
        Value::Object(o) => o,
        _ => return Err(forbidden("authorization did not yield an ownership")),
    };
    let (ownership, identity) = match obj.get("ownership") {
        Some(o) => (o, obj.get("identity")),
        None => (result, None),
    };
    let ownership = check_ownership(ownership)?;
    let identity = match identity {
        None | Some(Value::Null) => None,
        Some(id) => {
            input::identity(Some(id), &ownership, now_ms)
                .map_err(|e| forbidden(format!("identity refused: {}", e.message)))?;
            Some(id.clone())
        }
    };
    if let Some(token) = token {
        if !same_owner(&ownership, token) {
            return Err(forbidden("the delivery link was issued to another owner"));
        }
    }
    Ok(Authorization {
        ownership,
        identity,
    })
}

/// The ownership members of `value` (others are the host's business and dropped), by
/// the service's ownership rule.
fn check_ownership(value: &Value) -> Result<Ownership, HttpError> {
    let refused = |detail: &str| {
        forbidden(format!(
            "authorization did not yield a valid ownership: {detail}"
        ))
    };
    let Value::Object(o) = value else {
        return Err(refused("not an object"));
    };
    let members: Map<String, Value> = OWNERSHIP_KEYS
        .iter()
        .filter_map(|k| o.get(*k).map(|v| ((*k).to_string(), v.clone())))
        .collect();
    input::ownership(Some(&Value::Object(members)), &SecretRedactor::none())
        .map_err(|e| refused(&e.message))
}

/// Whether the token names exactly this owner (an empty member is an absent one).
fn same_owner(owner: &Ownership, token: &Value) -> bool {
    owner.members().iter().all(|(name, mine)| {
        let theirs = token
            .get(*name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        *mine == theirs
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000_000;

    fn identity(extra: Value) -> Value {
        let mut id = json!({
            "tenantId": "t1", "principal": { "kind": "user", "id": "u" },
            "scopes": [], "issuedAt": "2026-01-01T00:00:00Z", "verified": true
        });
        for (k, v) in extra.as_object().unwrap() {
            id[k] = v.clone();
        }
        id
    }

    fn status(result: Value) -> Result<Authorization, (u16, String)> {
        check_authorization(&result, None, NOW).map_err(|e| (e.status, e.message))
    }

    #[test]
    fn ownership_wrapped_or_bare_members_only() {
        let a = status(json!({ "ownership": { "tenantId": "t1", "userId": "", "role": "x" } }))
            .unwrap();
        assert_eq!(a.ownership.tenant_id.as_deref(), Some("t1"));
        assert_eq!(a.ownership.user_id, None);
        assert_eq!(a.identity, None);
        let a = status(json!({ "userId": "u1" })).unwrap();
        assert_eq!(a.ownership.user_id.as_deref(), Some("u1"));
        for bad in [
            json!(null),
            json!(false),
            json!(true),
            json!(1),
            json!("t1"),
            json!([]),
            json!({}),
            json!({ "ownership": null }),
            json!({ "ownership": { "tenantId": "" } }),
            json!({ "ownership": { "tenantId": 1 } }),
            json!({ "ownership": { "tenantId": "x".repeat(300) } }),
        ] {
            assert_eq!(status(bad.clone()).unwrap_err().0, 403, "{bad}");
        }
    }

    #[test]
    fn identity_by_the_service_rules() {
        let owner = json!({ "tenantId": "t1" });
        let ok = |id: Value| status(json!({ "ownership": owner, "identity": id }));
        assert!(ok(identity(json!({}))).unwrap().identity.is_some());
        assert!(ok(Value::Null).unwrap().identity.is_none());
        assert!(ok(identity(json!({ "expiresAt": "2999-01-01T00:00:00Z" }))).is_ok());
        assert!(ok(identity(json!({ "expiresAt": NOW + 1000 }))).is_ok());
        for (extra, why) in [
            // Not a timestamp to the service either: refused here, never a later 400.
            (json!({ "expiresAt": "Jan 1 2999" }), "expiresAt"),
            (json!({ "expiresAt": "Jan 1 1999" }), "expiresAt"),
            (json!({ "expiresAt": "2020-01-01T00:00:00Z" }), "expired"),
            (json!({ "revokedAt": NOW - 1 }), "revoked"),
            (json!({ "verified": false }), "not verified"),
            (json!({ "tenantId": "t2" }), "conflicts"),
            (json!({ "principal": { "kind": "user" } }), "principal.id"),
        ] {
            let (s, m) = ok(identity(extra.clone())).unwrap_err();
            assert_eq!(s, 403, "{extra}");
            assert!(
                m.starts_with("identity refused: ") && m.contains(why),
                "{extra}: {m}"
            );
        }
    }

    #[test]
    fn download_token_owner_must_match_exactly() {
        let result = json!({ "tenantId": "t1", "userId": "u1" });
        let check = |token: Value| check_authorization(&result, Some(&token), NOW).is_ok();
        assert!(check(
            json!({ "tenantId": "t1", "userId": "u1", "accountId": "" })
        ));
        assert!(!check(json!({ "tenantId": "t1" })));
        assert!(!check(json!({ "tenantId": "t1", "userId": "u2" })));
        assert!(!check(
            json!({ "tenantId": "t1", "userId": "u1", "accountId": "a" })
        ));
    }
}
