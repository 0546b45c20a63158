//! Routing and status mapping for the fetch-style artifact handler
//! (`createArtifactHandler`). Pure Rust: the request/response plumbing lives in
//! `js/http.js`; this module decides which route a method + path is, whether the ids
//! and the body are acceptable, and which status an error becomes.

pub mod body;
pub mod route;
pub mod status;

pub use body::{check_body, RESERVED_KEYS};
pub use route::{
    decode_id, match_route, percent_decode, route_error_response, validate_base_path, Operation,
    Route, RouteError, DEFAULT_BASE_PATH, MAX_ID_BYTES,
};
pub use status::{status_for_reason, status_for_reason_str, HttpError, ALL_REASONS};

/// Default cap on a request body, in bytes (64 KiB).
pub const DEFAULT_MAX_REQUEST_BYTES: u64 = 64 * 1024;
/// Hard cap on a request body, in bytes (1 MiB): `maxRequestBytes` outside `1..=HARD` is a
/// `RangeError`.
pub const HARD_MAX_REQUEST_BYTES: u64 = 1024 * 1024;

/// Resolve `limits.maxRequestBytes`: absent is the default; otherwise an integer in
/// `1..=HARD_MAX_REQUEST_BYTES`, never clamped.
pub fn resolve_max_request_bytes(value: Option<&serde_json::Value>) -> crate::error::Result<u64> {
    let Some(v) = value else {
        return Ok(DEFAULT_MAX_REQUEST_BYTES);
    };
    match crate::json::as_u64(v) {
        Some(n) if (1..=HARD_MAX_REQUEST_BYTES).contains(&n) => Ok(n),
        _ if v.is_number() => Err(crate::error::PrismError::range(format!(
            "limits.maxRequestBytes must be an integer in 1..{HARD_MAX_REQUEST_BYTES}, got {v}"
        ))),
        _ => Err(crate::error::PrismError::type_error(format!(
            "limits.maxRequestBytes must be a number, got {}",
            crate::json::type_name(v)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    #[test]
    fn max_request_bytes_limits() {
        assert_eq!(resolve_max_request_bytes(None).unwrap(), 65536);
        assert_eq!(resolve_max_request_bytes(Some(&json!(1))).unwrap(), 1);
        assert_eq!(
            resolve_max_request_bytes(Some(&json!(1048576))).unwrap(),
            1048576
        );
        for bad in [json!(0), json!(1048577), json!(-1), json!(1.5)] {
            assert_eq!(
                resolve_max_request_bytes(Some(&bad)).unwrap_err().kind,
                ErrorKind::Range
            );
        }
        assert_eq!(
            resolve_max_request_bytes(Some(&json!("64")))
                .unwrap_err()
                .kind,
            ErrorKind::Type
        );
    }
}
