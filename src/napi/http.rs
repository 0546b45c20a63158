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

/// Match a route: `{ operation, method, body, threadId?, artifactId? }` or
/// `{ error: { status, code, message } }`. A body route also checks the request's
/// Content-Type (415 unless JSON), before anything else runs.
#[napi]
pub fn http_match_route(
    base: String,
    method: String,
    path: String,
    content_type: Option<String>,
) -> napi::Result<String> {
    guard(|| {
        let matched = http::match_route(&base, &method, &path);
        if let Ok(route) = &matched {
            if route.operation.has_body() {
                if let Err(e) = http::check_content_type(content_type.as_deref()) {
                    return Ok(error_json(&e));
                }
            }
        }
        Ok(match matched {
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

/// Check what the host's `authorize` returned (JSON text; `undefined` as `null`), and on
/// download the verified token (JSON text): `{ ownership, identity? }` to hand to the
/// service, or `{ error: { status, code, message } }`.
#[napi]
pub fn http_check_authorization(result: String, token: Option<String>) -> napi::Result<String> {
    guard(|| {
        let parse = |text: &str| {
            serde_json::from_str::<Value>(text)
                .map_err(|e| PrismError::type_error(format!("not JSON: {e}")))
        };
        let result = parse(&result)?;
        let token = token.as_deref().map(parse).transpose()?;
        let now = crate::util::time::now_ms();
        Ok(
            match http::check_authorization(&result, token.as_ref(), now) {
                Ok(a) => {
                    let mut out = json!({ "ownership": a.ownership });
                    if let Some(id) = a.identity {
                        out["identity"] = id;
                    }
                    out.to_string()
                }
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
        let codes: serde_json::Map<String, Value> = http::CODE_STATUSES
            .iter()
            .map(|(code, status, body, message)| {
                (
                    (*code).to_string(),
                    json!({ "status": status, "code": body, "message": message }),
                )
            })
            .collect();
        Ok(json!({
            "reasons": reasons,
            "codes": codes,
            "downloadOperation": Operation::Download.as_str(),
            "success": ops,
            "defaultBasePath": http::DEFAULT_BASE_PATH,
            "minSecretBytes": crate::artifacts::link::MIN_SECRET_BYTES,
            "maxSecretBytes": crate::artifacts::link::MAX_SECRET_BYTES,
        })
        .to_string())
    })
}
