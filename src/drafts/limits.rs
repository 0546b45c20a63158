//! The caps of the work draft service (`WorkDraftLimits`). Each has a default and a hard
//! maximum; a configured value must be an integer in `1..=hard` or resolution fails with
//! a `RangeError` (never clamped). Unknown names and non-numbers are `TypeError`s.
//! `maxRequestBytes` bounds an HTTP request body (the handler's); the service ignores it.

use crate::error::{PrismError, Result};
use serde_json::{Map, Value};

const KIB: u64 = 1024;

/// `(name, default, hard)` of every cap.
pub const SPEC: [(&str, u64, u64); 10] = [
    ("payloadBytes", 64 * KIB, KIB * KIB),
    ("payloadDepth", 16, 32),
    ("revisionsPerDraft", 32, 128),
    ("recordBytes", KIB * KIB, 8 * KIB * KIB),
    ("schemaBytes", 64 * KIB, KIB * KIB),
    ("reasonBytes", KIB, 8 * KIB),
    ("outcomeBytes", 16 * KIB, 256 * KIB),
    ("recipientPaths", 16, 64),
    ("listPageLimit", 50, 200),
    ("maxRequestBytes", 128 * KIB, 2 * KIB * KIB),
];

/// Resolved caps. Sizes are UTF-8 bytes of JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DraftLimits {
    values: [u64; 10],
}

macro_rules! getters {
    ($($name:ident = $i:literal),+ $(,)?) => {
        impl DraftLimits { $(pub fn $name(&self) -> u64 { self.values[$i] })+ }
    };
}

getters!(
    payload_bytes = 0,
    payload_depth = 1,
    revisions_per_draft = 2,
    record_bytes = 3,
    schema_bytes = 4,
    reason_bytes = 5,
    outcome_bytes = 6,
    recipient_paths = 7,
    list_page_limit = 8,
    max_request_bytes = 9,
);

impl Default for DraftLimits {
    fn default() -> Self {
        Self {
            values: SPEC.map(|(_, d, _)| d),
        }
    }
}

impl DraftLimits {
    /// The hard maxima.
    pub fn hard() -> Self {
        Self {
            values: SPEC.map(|(_, _, h)| h),
        }
    }

    /// Resolve a partial `limits` object (absent or `null` = defaults).
    pub fn resolve(value: Option<&Value>) -> Result<Self> {
        let mut out = Self::default();
        let obj = match value {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Object(o)) => o,
            Some(other) => {
                return Err(PrismError::type_error(format!(
                    "limits must be an object, got {}",
                    crate::json::type_name(other)
                )))
            }
        };
        for (name, v) in obj {
            let Some(idx) = SPEC.iter().position(|(n, _, _)| n == name) else {
                return Err(PrismError::type_error(format!(
                    "limits.{name} is not a known limit (known: {})",
                    SPEC.map(|(n, _, _)| n).join(", ")
                )));
            };
            if !v.is_number() {
                return Err(PrismError::type_error(format!(
                    "limits.{name} must be a number, got {}",
                    crate::json::type_name(v)
                )));
            }
            let hard = SPEC[idx].2;
            match crate::json::as_u64(v).filter(|x| (1..=hard).contains(x)) {
                Some(x) => out.values[idx] = x,
                None => {
                    return Err(PrismError::range(format!(
                        "limits.{name} must be an integer from 1 to {hard}, got {v}"
                    )))
                }
            }
        }
        Ok(out)
    }

    /// The resolved caps as a JSON object, named as configured.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        for ((name, _, _), v) in SPEC.iter().zip(self.values) {
            m.insert((*name).into(), v.into());
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    #[test]
    fn resolves_within_bounds_and_never_clamps() {
        let l = DraftLimits::resolve(Some(&json!({ "payloadBytes": 100 }))).unwrap();
        assert_eq!(l.payload_bytes(), 100);
        assert_eq!(l.revisions_per_draft(), 32);
        let kind = |v: Value| DraftLimits::resolve(Some(&v)).unwrap_err().kind;
        assert_eq!(kind(json!({ "payloadBytes": 0 })), ErrorKind::Range);
        assert_eq!(kind(json!({ "payloadDepth": 33 })), ErrorKind::Range);
        assert_eq!(kind(json!({ "payloadDepth": 1.5 })), ErrorKind::Range);
        assert_eq!(kind(json!({ "nope": 1 })), ErrorKind::Type);
        assert_eq!(kind(json!({ "payloadDepth": "3" })), ErrorKind::Type);
        assert_eq!(DraftLimits::default().to_value()["payloadDepth"], 16);
    }
}
