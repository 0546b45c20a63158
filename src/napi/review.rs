//! Bindings for `crate::review`: JSON text in, JSON text out, under `guard`.

// In `cargo test` builds napi-derive registers nothing, so the bindings look unused there.
#![cfg_attr(test, allow(dead_code))]

use super::guard;
use napi_derive::napi;

/// `createCodingPatchReviewManifest(input)`: `input` is `JSON.stringify` of the caller's
/// object; the result is the JSON text of the artifact input without `preview`, a newline,
/// and the manifest's JSON text (js/review.js puts them together).
#[napi]
pub fn review_create_manifest(input: String) -> napi::Result<String> {
    guard(|| crate::review::create_manifest_binding(&input))
}

/// `assertCodingPatchAccepted({ review, artifact, limits? })`: JSON text of the outcome.
#[napi]
pub fn review_assert_accepted(input: String) -> napi::Result<String> {
    guard(|| crate::review::assert_accepted_json(&input))
}
