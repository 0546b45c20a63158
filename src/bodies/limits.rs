//! The body store's caps (default / hard): `maxBodyBytes` 64 MiB / 512 MiB,
//! `maxConcurrentTransfers` 4 / 16, `presignTtlMs` 10 min / 24 h, `maxRefBytes` 256 B / 1 KiB.
//! A value outside `1..=hard` is a `RangeError`, never clamped.

use crate::error::{PrismError, Result};
use crate::util::caps::{self, Cap};
use serde::Serialize;
use serde_json::Value;

/// Resolved limits, serialized with the reference's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BodyLimits {
    pub max_body_bytes: u64,
    pub max_concurrent_transfers: u64,
    pub presign_ttl_ms: u64,
    pub max_ref_bytes: u64,
}

/// Every cap.
pub const SPEC: [Cap; 4] = [
    Cap::new("maxBodyBytes", 64 * 1024 * 1024, 512 * 1024 * 1024),
    Cap::new("maxConcurrentTransfers", 4, 16),
    Cap::new("presignTtlMs", 10 * 60 * 1000, 24 * 3600 * 1000),
    Cap::new("maxRefBytes", 256, 1024),
];

impl BodyLimits {
    const fn from_values(v: [u64; 4]) -> Self {
        Self {
            max_body_bytes: v[0],
            max_concurrent_transfers: v[1],
            presign_ttl_ms: v[2],
            max_ref_bytes: v[3],
        }
    }

    pub const fn defaults() -> Self {
        Self::from_values([
            SPEC[0].default,
            SPEC[1].default,
            SPEC[2].default,
            SPEC[3].default,
        ])
    }

    pub const fn hard() -> Self {
        Self::from_values([SPEC[0].hard, SPEC[1].hard, SPEC[2].hard, SPEC[3].hard])
    }

    /// Resolve `input` (absent, `null`, or an object of the four names; other members
    /// are ignored as the reference does) by the one caps rule.
    pub fn resolve(input: Option<&Value>) -> Result<Self> {
        let obj = match input {
            None | Some(Value::Null) => return Ok(Self::defaults()),
            Some(Value::Object(obj)) => obj,
            Some(_) => return Err(PrismError::type_error("limits must be an object")),
        };
        let mut v = [0u64; 4];
        for (slot, cap) in v.iter_mut().zip(SPEC) {
            *slot = caps::resolve_json(&format!("limits.{}", cap.name), obj.get(cap.name), cap)?;
        }
        Ok(Self::from_values(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(BodyLimits::resolve(None).unwrap(), BodyLimits::defaults());
        let l =
            BodyLimits::resolve(Some(&json!({"maxBodyBytes": 4, "presignTtlMs": 60000}))).unwrap();
        assert_eq!(l.max_body_bytes, 4);
        assert_eq!(l.presign_ttl_ms, 60000);
        for bad in [
            json!({"maxBodyBytes": 0}),
            json!({"maxBodyBytes": 512 * 1024 * 1024 + 1}),
            json!({"maxConcurrentTransfers": 17}),
            json!({"presignTtlMs": 1.5}),
            json!({"maxRefBytes": -1}),
        ] {
            assert_eq!(
                BodyLimits::resolve(Some(&bad)).unwrap_err().kind,
                ErrorKind::Range
            );
        }
    }
}
