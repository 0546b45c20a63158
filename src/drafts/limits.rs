//! The caps of the work draft service (`WorkDraftLimits`). Each has a default and a hard
//! maximum; a configured value must be an integer in `1..=hard` or resolution fails with
//! a `RangeError` (never clamped). Unknown names and non-numbers are `TypeError`s.
//! `maxRequestBytes` bounds an HTTP request body (the handler's); the service ignores it.

use crate::error::{PrismError, Result};
use crate::util::caps::{self, Cap};
use serde_json::{Map, Value};

const KIB: u64 = 1024;

/// Every cap.
pub const SPEC: [Cap; 10] = [
    Cap::new("payloadBytes", 64 * KIB, KIB * KIB),
    Cap::new("payloadDepth", 16, 32),
    Cap::new("revisionsPerDraft", 32, 128),
    Cap::new("recordBytes", KIB * KIB, 8 * KIB * KIB),
    Cap::new("schemaBytes", 64 * KIB, KIB * KIB),
    Cap::new("reasonBytes", KIB, 8 * KIB),
    Cap::new("outcomeBytes", 16 * KIB, 256 * KIB),
    Cap::new("recipientPaths", 16, 64),
    Cap::new("listPageLimit", 50, 200),
    Cap::new("maxRequestBytes", 128 * KIB, 2 * KIB * KIB),
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
);

impl Default for DraftLimits {
    fn default() -> Self {
        Self {
            values: SPEC.map(|c| c.default),
        }
    }
}

impl DraftLimits {
    /// The hard maxima.
    pub fn hard() -> Self {
        Self {
            values: SPEC.map(|c| c.hard),
        }
    }

    /// Resolve a partial `limits` object (absent or `null` = defaults).
    pub fn resolve(value: Option<&Value>) -> Result<Self> {
        let values = caps::resolve_object("limits", value, &SPEC, |_| None)?;
        let values: [u64; 10] = values
            .try_into()
            .map_err(|_| PrismError::internal("limits table size"))?;
        Ok(Self { values })
    }

    /// The resolved caps as a JSON object, named as configured.
    pub fn to_value(self) -> Value {
        let mut m = Map::new();
        for (cap, v) in SPEC.iter().zip(self.values) {
            m.insert(cap.name.into(), v.into());
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
