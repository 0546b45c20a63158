//! Configurable caps, one rule everywhere (artifacts, review, diagnostics, LSP, stores,
//! HTTP, bodies): a cap has a default and a hard maximum; a configured value must be an
//! integer in `1..=hard` or it is a `RangeError` (never clamped); a value that is not a
//! number is a `TypeError`; an unknown name in a limits object is a `TypeError`.

use crate::error::{PrismError, Result};
use serde_json::Value;
use std::fmt::Display;

/// A cap: its name in the API, its default and its hard maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    pub name: &'static str,
    pub default: u64,
    pub hard: u64,
}

impl Cap {
    pub const fn new(name: &'static str, default: u64, hard: u64) -> Self {
        Self {
            name,
            default,
            hard,
        }
    }
}

/// The `RangeError` for a value outside `1..=hard`; `got` as the caller wrote it.
pub fn out_of_range(path: &str, hard: u64, got: impl Display) -> PrismError {
    PrismError::range(format!(
        "{path} must be an integer in 1..={hard}, got {got}"
    ))
}

/// `value` when it is in `1..=hard`.
pub fn check(path: &str, value: u64, hard: u64) -> Result<u64> {
    if (1..=hard).contains(&value) {
        Ok(value)
    } else {
        Err(out_of_range(path, hard, value))
    }
}

/// An optional integer cap: absent is the default.
pub fn resolve(path: &str, value: Option<u64>, cap: Cap) -> Result<u64> {
    value.map_or(Ok(cap.default), |v| check(path, v, cap.hard))
}

/// An optional cap given as a JavaScript number.
pub fn resolve_f64(path: &str, value: Option<f64>, cap: Cap) -> Result<u64> {
    match value {
        None => Ok(cap.default),
        Some(v) if v.fract() == 0.0 && v >= 1.0 && v <= cap.hard as f64 => Ok(v as u64),
        Some(v) => Err(out_of_range(path, cap.hard, v)),
    }
}

/// An optional cap read from JSON. JavaScript's `NaN` and `Infinity` arrive as `null`, so
/// `null` is out of range too.
pub fn resolve_json(path: &str, value: Option<&Value>, cap: Cap) -> Result<u64> {
    match value {
        None => Ok(cap.default),
        Some(Value::Number(n)) => match crate::json::as_u64(&Value::Number(n.clone())) {
            Some(v) => check(path, v, cap.hard),
            None => Err(out_of_range(path, cap.hard, n)),
        },
        Some(Value::Null) => Err(out_of_range(path, cap.hard, "NaN, Infinity or null")),
        Some(other) => Err(PrismError::type_error(format!(
            "{path} must be a number, got {}",
            crate::json::type_name(other)
        ))),
    }
}

/// A partial limits object (`path` names it, e.g. `limits`): absent or `null` is every
/// default; each known name resolved by [`resolve_json`]; an unknown name is a `TypeError`
/// (`hint` may explain a renamed one). Values come back in `spec` order.
pub fn resolve_object(
    path: &str,
    value: Option<&Value>,
    spec: &[Cap],
    hint: impl Fn(&str) -> Option<String>,
) -> Result<Vec<u64>> {
    let obj = match value {
        None | Some(Value::Null) => return Ok(spec.iter().map(|c| c.default).collect()),
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(PrismError::type_error(format!(
                "{path} must be an object, got {}",
                crate::json::type_name(other)
            )))
        }
    };
    if let Some(key) = obj.keys().find(|k| !spec.iter().any(|c| c.name == *k)) {
        let extra = hint(key).map(|h| format!(" ({h})")).unwrap_or_default();
        let known: Vec<&str> = spec.iter().map(|c| c.name).collect();
        return Err(PrismError::type_error(format!(
            "{path}.{key} is not a known limit{extra} (known: {})",
            known.join(", ")
        )));
    }
    spec.iter()
        .map(|c| resolve_json(&format!("{path}.{}", c.name), obj.get(c.name), *c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    const SPEC: [Cap; 2] = [Cap::new("a", 5, 10), Cap::new("b", 1, 2)];

    #[test]
    fn one_rule_one_message() {
        assert_eq!(
            resolve_object("limits", None, &SPEC, |_| None).unwrap(),
            [5, 1]
        );
        let got = resolve_object("limits", Some(&json!({ "a": 10.0 })), &SPEC, |_| None);
        assert_eq!(got.unwrap(), [10, 1]);
        for bad in [
            json!({ "a": 0 }),
            json!({ "a": 11 }),
            json!({ "a": 1.5 }),
            json!({ "b": null }),
        ] {
            let e = resolve_object("limits", Some(&bad), &SPEC, |_| None).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Range, "{bad}");
            assert!(e.to_string().contains("must be an integer in 1..="), "{e}");
        }
        for bad in [json!({ "a": "1" }), json!({ "c": 1 }), json!(3)] {
            let e = resolve_object("limits", Some(&bad), &SPEC, |k| {
                (k == "c").then(|| "hint".into())
            });
            assert_eq!(e.unwrap_err().kind, ErrorKind::Type, "{bad}");
        }
        assert_eq!(resolve_f64("x", Some(2.0), SPEC[1]).unwrap(), 2);
        assert!(resolve_f64("x", Some(f64::NAN), SPEC[1]).is_err());
        assert_eq!(resolve("x", None, SPEC[0]).unwrap(), 5);
        assert!(resolve("x", Some(11), SPEC[0]).is_err());
    }
}
