//! Bindings for `crate::diagnostics`: JSON text in, JSON text out (see `src/napi/mod.rs`).

use super::guard;
use crate::diagnostics::json;
use napi_derive::napi;

/// `normalizeDiagnostics(raw, options)`: returns the JSON array of normalized diagnostics.
#[napi(js_name = "diagnosticsNormalize")]
pub fn diagnostics_normalize(raw_json: String, options_json: String) -> napi::Result<String> {
    guard(|| json::normalize_json(&raw_json, &options_json))
}

/// `diagnosticDelta(input)`: returns `{ added, removed, unchanged, generation }` as indices
/// into `input.next` / `input.previous`; the JS layer maps them back to entries.
#[napi(js_name = "diagnosticsDeltaIndices")]
pub fn diagnostics_delta_indices(input_json: String) -> napi::Result<String> {
    guard(|| json::delta_indices_json(&input_json))
}

/// `diagnosticIdentity(d)`: the identity string.
#[napi(js_name = "diagnosticsIdentity")]
pub fn diagnostics_identity(diagnostic_json: String) -> napi::Result<String> {
    guard(|| json::identity_json(&diagnostic_json))
}
