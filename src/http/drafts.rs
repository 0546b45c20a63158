//! Routing, body checks and statuses of the work draft handler
//! (`createWorkDraftHandler`), beside the artifact handler's: `GET {base}/drafts/:thread`
//! list, `GET {base}/drafts/:thread/:draft` get, `POST {base}/drafts/:thread/:draft/resume`
//! decide. Base paths and ids follow the artifact routes' rules ([`validate_base_path`](super::validate_base_path),
//! [`decode_id`]).

use super::route::{decode_id, RouteError};
use super::status::HttpError;
use super::RESERVED_KEYS;
use crate::drafts::{CREATE_ONLY, DECISION};
use crate::error::WorkDraftReason;
use crate::json::{as_u64, type_name};
use serde_json::{Map, Value};

/// Default `basePath`: the routes are `{base}/drafts/…`.
pub const DEFAULT_BASE_PATH: &str = "/prism";

/// The first segment under the base.
pub const SEGMENT: &str = "drafts";

/// A matched draft route: `operation` (the name `authorize` receives), the service
/// method that serves it, and the decoded ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftRoute {
    pub operation: &'static str,
    pub method: &'static str,
    pub body: bool,
    pub thread_id: String,
    pub draft_id: Option<String>,
}

/// Match `method` + `path` (a percent-encoded URL pathname) under the validated `base`.
pub fn match_route(base: &str, method: &str, path: &str) -> Result<DraftRoute, RouteError> {
    let rest = path
        .strip_prefix(base)
        .and_then(|r| r.strip_prefix('/'))
        .and_then(|r| r.strip_prefix(SEGMENT))
        .and_then(|r| r.strip_prefix('/'))
        .ok_or(RouteError::UnknownRoute)?;
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(RouteError::UnknownRoute);
    }
    let (operation, m, body) = match (parts.len(), method, parts.get(2)) {
        (1, "GET", _) => ("work-draft.list", "list", false),
        (2, "GET", _) => ("work-draft.get", "get", false),
        (3, "POST", Some(&"resume")) => ("work-draft.resume", "decide", true),
        _ => return Err(RouteError::UnknownRoute),
    };
    let thread_id = decode_id(parts[0], "threadId")?;
    let draft_id = match parts.get(1) {
        Some(seg) => Some(decode_id(seg, "draftId")?),
        None => None,
    };
    Ok(DraftRoute {
        operation,
        method: m,
        body,
        thread_id,
        draft_id,
    })
}

fn invalid(message: impl Into<String>) -> HttpError {
    HttpError::new(400, "invalid_input", message)
}

/// Check a resume body (UTF-8 text) under the path ids; the request as the service
/// reads it, or the 400 that refuses it.
pub fn check_resume_body(
    text: &str,
    thread_id: &str,
    draft_id: &str,
) -> Result<Map<String, Value>, HttpError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        HttpError::new(
            400,
            "invalid_json",
            crate::json::unreadable("request body", text, &e),
        )
    })?;
    let Value::Object(mut obj) = value else {
        return Err(invalid(format!(
            "request body must be a JSON object, got {}",
            type_name(&value)
        )));
    };
    for key in RESERVED_KEYS {
        if obj.contains_key(key) {
            return Err(invalid(format!("request body must not contain \"{key}\"")));
        }
    }
    for (key, path) in [("threadId", thread_id), ("draftId", draft_id)] {
        if let Some(given) = obj.remove(key) {
            if given.as_str() != Some(path) {
                return Err(invalid(format!(
                    "body.{key} differs from the {key} of the path"
                )));
            }
        }
    }
    // The decision's members, and those only create sets: the service refuses the latter
    // as `immutable_field` (422).
    let known = |k: &str| DECISION.contains(&k) || CREATE_ONLY.contains(&k);
    if let Some(k) = obj.keys().find(|k| !known(k)) {
        return Err(invalid(format!("body.{k} is not a known field")));
    }
    match obj.get_mut("expectedVersion") {
        None => {
            return Err(invalid(
                "body.expectedVersion is required (a positive integer)",
            ))
        }
        Some(v) => {
            if let Some(n) = v
                .as_str()
                .filter(|s| !s.is_empty() && s.len() <= 15 && s.bytes().all(|b| b.is_ascii_digit()))
            {
                *v = Value::from(n.parse::<u64>().unwrap_or(0));
            }
            if as_u64(v).is_none_or(|n| n == 0) {
                return Err(invalid("body.expectedVersion must be a positive integer"));
            }
        }
    }
    if !obj.get("decision").is_some_and(Value::is_string) {
        return Err(invalid(
            "body.decision is required (\"approve\" or \"deny\")",
        ));
    }
    Ok(obj)
}

/// The HTTP status of a `WorkDraftError` reason.
pub fn status_for(reason: WorkDraftReason) -> u16 {
    use WorkDraftReason::*;
    match reason {
        InvalidInput | MalformedEdit => 400,
        NotFound => 404,
        Conflict | NotApproved | AlreadyExecuted => 409,
        PayloadTooLarge => 413,
        SchemaViolation | RecipientEscalation | ImmutableField | TooManyRevisions => 422,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_under_the_base() {
        let r = match_route("/prism", "POST", "/prism/drafts/t1/d%2D1/resume").unwrap();
        assert_eq!(
            (r.operation, r.method, r.body),
            ("work-draft.resume", "decide", true)
        );
        assert_eq!(
            (r.thread_id.as_str(), r.draft_id.as_deref()),
            ("t1", Some("d-1"))
        );
        assert_eq!(
            match_route("/prism", "GET", "/prism/drafts/t1")
                .unwrap()
                .method,
            "list"
        );
        assert_eq!(
            match_route("/prism", "GET", "/prism/drafts/t1/d1")
                .unwrap()
                .method,
            "get"
        );
        for (m, p) in [
            ("POST", "/prism/drafts/t1"),
            ("GET", "/prism/drafts/t1/d1/resume"),
            ("POST", "/prism/drafts/t1/d1/other"),
            ("GET", "/prism/drafts/"),
            ("GET", "/prism/drafts//d1"),
            ("GET", "/prism/artifacts/t1"),
            ("GET", "/other/drafts/t1"),
        ] {
            assert_eq!(
                match_route("/prism", m, p),
                Err(RouteError::UnknownRoute),
                "{m} {p}"
            );
        }
        assert!(matches!(
            match_route("/prism", "GET", "/prism/drafts/a%20b"),
            Err(RouteError::InvalidId(_))
        ));
    }

    #[test]
    fn resume_bodies() {
        let ok = check_resume_body(
            r#"{"expectedVersion":"3","decision":"approve","threadId":"t"}"#,
            "t",
            "d",
        )
        .unwrap();
        assert_eq!(ok["expectedVersion"], 3);
        assert!(!ok.contains_key("threadId"));
        for bad in [
            "[1]",
            "{",
            r#"{"decision":"approve"}"#,
            r#"{"expectedVersion":0,"decision":"approve"}"#,
            r#"{"expectedVersion":1}"#,
            r#"{"expectedVersion":1,"decision":"approve","extra":1}"#,
            r#"{"expectedVersion":1,"decision":"approve","ownership":{}}"#,
            r#"{"expectedVersion":1,"decision":"approve","draftId":"x"}"#,
        ] {
            assert_eq!(
                check_resume_body(bad, "t", "d").unwrap_err().status,
                400,
                "{bad}"
            );
        }
        // Immutable keys reach the service (422 there).
        assert!(check_resume_body(
            r#"{"expectedVersion":1,"decision":"approve","provider":"x"}"#,
            "t",
            "d"
        )
        .is_ok());
    }

    #[test]
    fn statuses() {
        assert_eq!(status_for(WorkDraftReason::SchemaViolation), 422);
        assert_eq!(status_for(WorkDraftReason::Conflict), 409);
        assert_eq!(status_for(WorkDraftReason::PayloadTooLarge), 413);
        assert_eq!(status_for(WorkDraftReason::MalformedEdit), 400);
        for &r in WorkDraftReason::ALL.iter() {
            assert!((400..500).contains(&status_for(r)));
        }
    }
}
