//! Bindings for `crate::http`: route matching, body checks and the status table used by
//! `js/http.js`. Results cross as JSON text.

// Under `cargo test` the napi registration is not generated, so the exports look unused.

use super::guard;
use crate::error::PrismError;
use crate::http::{self, HttpError, Operation};
use napi_derive::napi;
use serde_json::{json, Value};

fn error_json(e: &HttpError) -> String {
    json!({ "error": { "status": e.status, "code": e.code, "message": e.message } }).to_string()
}

/// Validate and normalise a `basePath` (TypeError when it is not acceptable).
#[napi]
pub fn http_validate_base_path(base: String) -> napi::Result<String> {
    guard(|| http::validate_base_path(&base))
}

/// Match a route: `{ operation, threadId?, artifactId? }` or `{ error: { status, code, message } }`.
#[napi]
pub fn http_match_route(base: String, method: String, path: String) -> napi::Result<String> {
    guard(|| {
        Ok(match http::match_route(&base, &method, &path) {
            Ok(route) => {
                let mut out = json!({
                    "operation": route.operation.as_str(),
                    "method": route.operation.method(),
                    "body": route.operation.has_body(),
                });
                if let Some(t) = route.thread_id {
                    out["threadId"] = Value::String(t);
                }
                if let Some(a) = route.artifact_id {
                    out["artifactId"] = Value::String(a);
                }
                out.to_string()
            }
            Err(e) => {
                let (status, code, message) = http::route_error_response(&e);
                error_json(&HttpError::new(status, code, message))
            }
        })
    })
}

/// Check a request body for `operation` (its `authorize` name) under the path ids:
/// `{ body }` as the service reads it, or `{ error: { status, code, message } }`.
#[napi]
pub fn http_check_body(
    operation: String,
    text: String,
    thread_id: Option<String>,
    artifact_id: Option<String>,
) -> napi::Result<String> {
    guard(|| {
        let op = Operation::from_name(&operation)
            .ok_or_else(|| PrismError::type_error(format!("unknown operation {operation:?}")))?;
        Ok(
            match http::check_body(op, &text, thread_id.as_deref(), artifact_id.as_deref()) {
                Ok(body) => json!({ "body": body }).to_string(),
                Err(e) => error_json(&e),
            },
        )
    })
}

/// `{ reason: status }` for every `ArtifactError.reason`, and `successStatus` per operation.
#[napi]
pub fn http_status_table() -> napi::Result<String> {
    guard(|| {
        let mut reasons = serde_json::Map::new();
        for &r in crate::error::ArtifactReason::ALL {
            reasons.insert(r.as_str().into(), http::status_for_reason(r).into());
        }
        let mut ops = serde_json::Map::new();
        for o in Operation::ALL {
            ops.insert(o.as_str().into(), o.success_status().into());
        }
        Ok(json!({
            "reasons": reasons,
            "success": ops,
            "defaultBasePath": http::DEFAULT_BASE_PATH,
            "minSecretBytes": crate::artifacts::link::MIN_SECRET_BYTES,
            "maxSecretBytes": crate::artifacts::link::MAX_SECRET_BYTES,
        })
        .to_string())
    })
}
