//! Request body checks for the artifact handler: the body is one JSON object, it never
//! carries what only `authorize` may set, ids it repeats agree with the path, and the
//! fields the handler knows have the right JSON types. The service validates values
//! (lengths, caps, URIs); this layer only makes sure a wrongly typed body is a 400 that
//! names the field, and reads it as the reference's handler does: integer fields may be
//! decimal strings (`"2"`), and a body may repeat the path's `threadId`/`artifactId`.

use super::route::Operation;
use super::status::HttpError;
use crate::json::{as_u64, type_name};
use serde_json::{Map, Value};

/// Keys a request body must never carry: ownership and identity come only from
/// `authorize`, `signal` only from the request.
pub const RESERVED_KEYS: [&str; 3] = ["ownership", "identity", "signal"];

/// A body that does not read, even with its lone surrogates read as U+FFFD: JSON's own
/// error (serde_json's recursion limit, 128, bounds nesting).
fn invalid_json(message: String) -> HttpError {
    HttpError::new(400, "invalid_json", message)
}

fn invalid_input(message: impl Into<String>) -> HttpError {
    HttpError::new(400, "invalid_input", message)
}

#[derive(Clone, Copy)]
enum Kind {
    String,
    Integer,
    Object,
    Array,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::String => "a string",
            Kind::Integer => "a non-negative integer",
            Kind::Object => "an object",
            Kind::Array => "an array",
        }
    }
    fn accepts(self, v: &Value) -> bool {
        match self {
            Kind::String => v.is_string(),
            Kind::Integer => as_u64(v).is_some(),
            Kind::Object => v.is_object(),
            Kind::Array => v.is_array(),
        }
    }
}

/// `(field, kind, required)` for each body route.
fn schema(op: Operation) -> &'static [(&'static str, Kind, bool)] {
    use Kind::*;
    match op {
        Operation::Attach => &[
            ("uri", String, true),
            ("mime", String, true),
            ("hash", String, true),
            ("id", String, false),
            ("kind", String, false),
            ("title", String, false),
            ("changeNote", String, false),
            ("producerRunId", String, false),
            ("size", Integer, false),
            ("preview", Object, false),
            ("citations", Array, false),
        ],
        Operation::Revise => &[
            ("uri", String, true),
            ("hash", String, true),
            ("mime", String, false),
            ("title", String, false),
            ("changeNote", String, false),
            ("producerRunId", String, false),
            ("size", Integer, false),
            ("preview", Object, false),
            ("citations", Array, false),
        ],
        Operation::Compare => &[("from", Integer, false), ("to", Integer, false)],
        Operation::Approve | Operation::Reject => &[
            ("version", Integer, true),
            ("reviewer", String, false),
            ("note", String, false),
        ],
        Operation::DeliveryLink => &[("version", Integer, false), ("ttlSeconds", Integer, false)],
        _ => &[],
    }
}

/// A decimal string an integer field may be given as (`"12"`; at most 15 digits).
fn decimal(v: &Value) -> Option<Value> {
    let s = v.as_str()?;
    if s.is_empty() || s.len() > 15 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().map(Value::from)
}

/// A path id the body repeats: equal is accepted (and dropped), different is a 400.
fn repeated_id(
    obj: &mut Map<String, Value>,
    key: &str,
    path: Option<&str>,
) -> Result<(), HttpError> {
    let Some(given) = obj.remove(key) else {
        return Ok(());
    };
    match path {
        Some(p) if given.as_str() == Some(p) => Ok(()),
        Some(_) => Err(invalid_input(format!(
            "body.{key} differs from the {key} of the path"
        ))),
        None => Err(invalid_input(format!(
            "request body must not contain \"{key}\" on this route"
        ))),
    }
}

/// The only media type a request body may have: `application/json`, any letter case,
/// with optional parameters (`; charset=utf-8`). A body route refuses anything else, an
/// absent Content-Type included, with 415 before `authorize` runs: a cross-site form post
/// (`text/plain`, `application/x-www-form-urlencoded`, `multipart/form-data`) or a
/// body-less no-cors fetch never reaches a host whose `authorize` trusts cookies.
pub fn check_content_type(header: Option<&str>) -> Result<(), HttpError> {
    let essence = header
        .and_then(|h| h.split(';').next())
        .map(|t| t.trim_matches([' ', '\t']));
    match essence {
        Some(t) if t.eq_ignore_ascii_case("application/json") => Ok(()),
        _ => Err(HttpError::new(
            415,
            "unsupported_media_type",
            "request body must be application/json",
        )),
    }
}

/// Check one request body (UTF-8 text; empty means `{}`) for `op` under the path ids,
/// and return it as the service reads it.
pub fn check_body(
    op: Operation,
    text: &str,
    thread_id: Option<&str>,
    artifact_id: Option<&str>,
) -> Result<Map<String, Value>, HttpError> {
    let value: Value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        // Strings are read as the service reads them: a lone surrogate as U+FFFD, except
        // in identities (docs/artifacts.md).
        let read = crate::json::read_well_formed("request body", text).map_err(invalid_json)?;
        crate::artifacts::input::well_formed_request(read).map_err(|e| invalid_input(e.message))?
    };
    let mut obj = match value {
        Value::Object(obj) => obj,
        other => {
            return Err(invalid_input(format!(
                "request body must be a JSON object, got {}",
                type_name(&other)
            )))
        }
    };
    for key in RESERVED_KEYS {
        if obj.contains_key(key) {
            let from = if key == "signal" {
                "the request"
            } else {
                "authorization"
            };
            return Err(invalid_input(format!(
                "request body must not contain \"{key}\": it comes from {from}"
            )));
        }
    }
    repeated_id(&mut obj, "threadId", thread_id)?;
    repeated_id(&mut obj, "artifactId", artifact_id)?;
    for (field, kind, required) in schema(op) {
        let Some(v) = obj.get_mut(*field) else {
            if *required {
                return Err(invalid_input(format!(
                    "body.{field} is required ({})",
                    kind.name()
                )));
            }
            continue;
        };
        if matches!(kind, Kind::Integer) {
            if let Some(n) = decimal(v) {
                *v = n;
            }
        }
        if !kind.accepts(v) {
            return Err(invalid_input(format!(
                "body.{field} must be {}, got {}",
                kind.name(),
                describe(v)
            )));
        }
    }
    Ok(obj)
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Number(n) if n.is_f64() => "a non-integer or out-of-range number",
        Value::Number(_) => "a negative number",
        other => type_name(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_bodies() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ;charset=UTF-8",
            "application/json\t",
        ] {
            assert_eq!(check_content_type(Some(ok)), Ok(()), "{ok}");
        }
        for bad in [
            None,
            Some(""),
            Some("text/plain"),
            Some("text/plain; charset=utf-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("application/json, text/plain"),
            Some("application/jsonp"),
            Some("application/ld+json"),
        ] {
            assert_eq!(check_content_type(bad).unwrap_err().status, 415, "{bad:?}");
        }
    }

    fn err(op: Operation, text: &str) -> HttpError {
        check_body(op, text, Some("t1"), Some("a1")).unwrap_err()
    }

    #[test]
    fn accepts_well_typed_bodies() {
        let ok = |op, text| check_body(op, text, Some("t1"), Some("a1")).unwrap();
        ok(
            Operation::Attach,
            r#"{"uri":"https://x","mime":"text/plain","hash":"sha256:a","extra":1,"changeNote":"n","producerRunId":"r:1"}"#,
        );
        ok(Operation::Approve, r#"{"version":2,"note":"ok"}"#);
        ok(Operation::DeliveryLink, "");
        ok(Operation::DeliveryLink, "  \n");
        ok(Operation::Compare, r#"{"from":1,"to":2}"#);
        ok(Operation::Approve, r#"{"version":2.0}"#);
    }

    #[test]
    fn repeated_path_ids_are_accepted_when_equal() {
        let attach = r#"{"threadId":"t1","uri":"https://x","mime":"m","hash":"h"}"#;
        let body = check_body(Operation::Attach, attach, Some("t1"), None).unwrap();
        assert!(
            !body.contains_key("threadId"),
            "the path's id is what the service gets"
        );
        let e = check_body(Operation::Attach, attach, Some("t2"), None).unwrap_err();
        assert_eq!((e.status, e.code), (400, "invalid_input"));
        assert!(e.message.contains("threadId"), "{}", e.message);
        let approve = r#"{"threadId":"t1","artifactId":"a1","version":1}"#;
        assert!(check_body(Operation::Approve, approve, Some("t1"), Some("a1")).is_ok());
        assert!(check_body(Operation::Approve, approve, Some("t1"), Some("a2")).is_err());
        let e = check_body(
            Operation::Attach,
            r#"{"artifactId":"a1","uri":"u","mime":"m","hash":"h"}"#,
            Some("t1"),
            None,
        );
        assert!(
            e.is_err(),
            "attach names its artifact with id, not artifactId"
        );
    }

    #[test]
    fn integer_fields_may_be_decimal_strings() {
        let body = check_body(
            Operation::Approve,
            r#"{"version":"2"}"#,
            Some("t1"),
            Some("a1"),
        )
        .unwrap();
        assert_eq!(body["version"], 2);
        let body = check_body(
            Operation::DeliveryLink,
            r#"{"ttlSeconds":"60","version":"1"}"#,
            Some("t1"),
            Some("a1"),
        )
        .unwrap();
        assert_eq!(
            (body["ttlSeconds"].clone(), body["version"].clone()),
            (Value::from(60), Value::from(1))
        );
        for bad in [r#""-1""#, r#""1.5""#, r#""""#, r#""0x10""#, r#"" 2""#] {
            let text = format!(r#"{{"version":{bad}}}"#);
            assert!(
                check_body(Operation::Approve, &text, Some("t1"), Some("a1")).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn malformed_json_is_invalid_json() {
        for t in ["{", "nul", "{\"a\":}", "{} {}", "{\"a\":\"\\ud800\"} x"] {
            let e = err(Operation::Approve, t);
            assert_eq!((e.status, e.code), (400, "invalid_json"), "{t}");
        }
        let deep = "[".repeat(5000) + &"]".repeat(5000);
        assert_eq!(err(Operation::Approve, &deep).code, "invalid_json");
    }

    /// A lone surrogate reads as U+FFFD, as the service reads it; in the reviewer (an
    /// identity) it is refused, saying why.
    #[test]
    fn lone_surrogates_read_as_the_service_reads_them() {
        let body = r#"{"version":1,"note":"cut \ud83d","reviewer":"user:r"}"#;
        let obj = check_body(Operation::Approve, body, Some("t1"), Some("a1")).unwrap();
        assert_eq!(obj["note"], "cut \u{fffd}");
        let e = err(
            Operation::Approve,
            r#"{"version":1,"reviewer":"user:\udfff"}"#,
        );
        assert_eq!((e.status, e.code), (400, "invalid_input"));
        assert!(e.message.contains("lone UTF-16 surrogate"), "{}", e.message);
        assert_eq!(err(Operation::Approve, r#""\ud800""#).code, "invalid_input");
    }

    #[test]
    fn non_objects_and_reserved_keys_are_invalid_input() {
        for t in ["[]", "1", "\"x\"", "null", "true"] {
            let e = err(Operation::Approve, t);
            assert_eq!((e.status, e.code), (400, "invalid_input"), "{t}");
        }
        for k in RESERVED_KEYS {
            let e = err(
                Operation::Approve,
                &format!("{{\"version\":1,\"{k}\":{{}}}}"),
            );
            assert!(e.message.contains(k), "{}", e.message);
        }
    }

    #[test]
    fn wrong_types_name_the_field() {
        let e = err(Operation::Approve, r#"{"version":"two"}"#);
        assert_eq!(e.code, "invalid_input");
        assert!(e
            .message
            .contains("body.version must be a non-negative integer, got string"));
        assert!(err(Operation::Approve, r#"{"version":-1}"#)
            .message
            .contains("negative"));
        assert!(err(Operation::Approve, r#"{"version":1.5}"#)
            .message
            .contains("non-integer"));
        assert!(err(Operation::Approve, "{}")
            .message
            .contains("body.version is required"));
        assert!(err(Operation::Attach, r#"{"uri":"u","mime":"m"}"#)
            .message
            .contains("body.hash"));
        assert!(err(
            Operation::Attach,
            r#"{"uri":"u","mime":"m","hash":"h","citations":{}}"#
        )
        .message
        .contains("body.citations must be an array"));
        assert!(err(Operation::Revise, r#"{"uri":1,"hash":"h"}"#)
            .message
            .contains("body.uri"));
        assert!(err(Operation::DeliveryLink, r#"{"ttlSeconds":null}"#)
            .message
            .contains("ttlSeconds"));
    }
}
