//! The body store's caps (default / hard): `maxBodyBytes` 64 MiB / 512 MiB,
//! `maxConcurrentTransfers` 4 / 16, `presignTtlMs` 10 min / 24 h, `maxRefBytes` 256 B / 1 KiB.
//! A value outside `1..=hard` is a `RangeError`, never clamped.

use crate::error::{PrismError, Result};
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

const NAMES: [&str; 4] = [
    "maxBodyBytes",
    "maxConcurrentTransfers",
    "presignTtlMs",
    "maxRefBytes",
];

impl BodyLimits {
    pub const fn defaults() -> Self {
        Self {
            max_body_bytes: 64 * 1024 * 1024,
            max_concurrent_transfers: 4,
            presign_ttl_ms: 10 * 60 * 1000,
            max_ref_bytes: 256,
        }
    }

    pub const fn hard() -> Self {
        Self {
            max_body_bytes: 512 * 1024 * 1024,
            max_concurrent_transfers: 16,
            presign_ttl_ms: 24 * 3600 * 1000,
            max_ref_bytes: 1024,
        }
    }

    fn slot(&mut self, name: &str) -> &mut u64 {
        match name {
            "maxBodyBytes" => &mut self.max_body_bytes,
            "maxConcurrentTransfers" => &mut self.max_concurrent_transfers,
            "presignTtlMs" => &mut self.presign_ttl_ms,
            _ => &mut self.max_ref_bytes,
        }
    }

    /// Resolve `input` (absent, `null`, or an object of the four names; other members
    /// are ignored as the reference does).
    pub fn resolve(input: Option<&Value>) -> Result<Self> {
        let mut out = Self::defaults();
        let mut hard = Self::hard();
        let obj = match input {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Object(obj)) => obj,
            Some(_) => return Err(PrismError::type_error("limits must be an object")),
        };
        for name in NAMES {
            let Some(v) = obj.get(name) else { continue };
            if v.is_null() {
                continue;
            }
            let max = *hard.slot(name);
            let n = crate::json::as_u64(v)
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| {
                    PrismError::range(format!(
                        "limits.{name} must be an integer in 1..={max}, got {v}"
                    ))
                })?;
            *out.slot(name) = n;
        }
        Ok(out)
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
