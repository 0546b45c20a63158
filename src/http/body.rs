//! Request body checks for the artifact handler: the body is one JSON object, it never
//! carries what only `authorize` or the path may set, and the fields the handler knows
//! have the right JSON types. The service validates values (lengths, caps, URIs); this
//! layer only makes sure a wrongly typed body is a 400 that names the field.

use super::route::Operation;
use super::status::HttpError;
use crate::json::{as_u64, type_name};
use serde_json::{Map, Value};

/// Keys a request body must never carry: ownership and identity come only from
/// `authorize`, thread and artifact ids only from the path, `signal` only from the request.
pub const RESERVED_KEYS: [&str; 5] = ["ownership", "identity", "threadId", "artifactId", "signal"];

/// serde_json's own recursion limit (128) bounds nesting; this is the message prefix.
fn invalid_json(detail: impl std::fmt::Display) -> HttpError {
    HttpError::new(
        400,
        "invalid_json",
        format!("request body is not valid JSON: {detail}"),
    )
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
            ("note", String, false),
            ("size", Integer, false),
            ("preview", Object, false),
            ("citations", Array, false),
            ("producer", Object, false),
        ],
        Operation::Revise => &[
            ("uri", String, true),
            ("hash", String, true),
            ("mime", String, false),
            ("title", String, false),
            ("note", String, false),
            ("size", Integer, false),
            ("preview", Object, false),
            ("citations", Array, false),
            ("producer", Object, false),
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

/// Check one request body (UTF-8 text; empty means `{}`) for `op`. Returns the body
/// object on success.
pub fn check_body(op: Operation, text: &str) -> Result<Map<String, Value>, HttpError> {
    let value: Value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(text).map_err(invalid_json)?
    };
    let obj = match value {
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
            return Err(invalid_input(format!(
                "request body must not contain \"{key}\": it comes from {}",
                match key {
                    "ownership" | "identity" => "authorization",
                    "signal" => "the request",
                    _ => "the path",
                }
            )));
        }
    }
    for (field, kind, required) in schema(op) {
        match obj.get(*field) {
            None if *required => {
                return Err(invalid_input(format!(
                    "body.{field} is required ({})",
                    kind.name()
                )))
            }
            None => {}
            Some(v) if !kind.accepts(v) => {
                return Err(invalid_input(format!(
                    "body.{field} must be {}, got {}",
                    kind.name(),
                    describe(v)
                )))
            }
            Some(_) => {}
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

    fn err(op: Operation, text: &str) -> HttpError {
        check_body(op, text).unwrap_err()
    }

    #[test]
    fn accepts_well_typed_bodies() {
        assert!(check_body(
            Operation::Attach,
            r#"{"uri":"https://x","mime":"text/plain","hash":"sha256:a","extra":1}"#
        )
        .is_ok());
        assert!(check_body(Operation::Approve, r#"{"version":2,"note":"ok"}"#).is_ok());
        assert!(check_body(Operation::DeliveryLink, "").is_ok());
        assert!(check_body(Operation::DeliveryLink, "  \n").is_ok());
        assert!(check_body(Operation::Compare, r#"{"from":1,"to":2}"#).is_ok());
        assert!(check_body(Operation::Approve, r#"{"version":2.0}"#).is_ok());
    }

    #[test]
    fn malformed_json_is_invalid_json() {
        for t in ["{", "nul", "{\"a\":}", "{} {}", "\"\\ud800\""] {
            let e = err(Operation::Approve, t);
            assert_eq!((e.status, e.code), (400, "invalid_json"), "{t}");
        }
        let deep = "[".repeat(5000) + &"]".repeat(5000);
        assert_eq!(err(Operation::Approve, &deep).code, "invalid_json");
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
        let e = err(Operation::Approve, r#"{"version":"2"}"#);
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
