//! The binding layer: the only code that sees napi types.
//!
//! Conventions (every binding follows them):
//! - Values cross as JSON text. The JS layer (`js/*.js`) calls `JSON.stringify` on the
//!   caller's input and `JSON.parse` on the result, so objects come out shaped exactly like
//!   the TypeScript API (absent optional fields are absent, never `null`).
//! - Every exported function runs under [`guard`] (sync) or [`guard_async`] (async), which
//!   turns a core [`PrismError`] into a JS error through [`to_js_error`] and a panic into
//!   an `ERR_PRISM_INTERNAL` error, so no panic reaches the process.
//! - `LanguageIntelligence` calls are latency-bound, so they skip napi's per-call promise
//!   bridge: each handle completes its calls through one threadsafe function, on a
//!   dedicated runtime (see `lsp.rs`).
//! - Errors cross as `ERROR_MARKER` + JSON `{ class, code, reason?, message }` in the
//!   message; `js/errors.js` turns that into the right error class. One place.

mod artifacts;
mod bodies;
mod call_target;
mod calls;
mod credentials;
mod diagnostics;
mod drafts;
mod http;
mod lsp;
mod raw;
mod redaction;
mod review;
mod runtime;
mod store;
mod text;

use crate::error::PrismError;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// Prefix of an encoded error message. Never shown to users: the JS layer decodes it.
pub const ERROR_MARKER: &str = "\u{1f}PRISM";

/// The one function that turns a core error into a JS error.
pub fn to_js_error(err: PrismError) -> napi::Error {
    let mut payload = serde_json::json!({
        "class": err.class_name(),
        "code": err.code(),
        "message": err.message,
    });
    if let Some(reason) = err.reason() {
        payload["reason"] = reason.into();
    }
    napi::Error::new(
        napi::Status::GenericFailure,
        format!("{ERROR_MARKER}{payload}"),
    )
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Run a synchronous core call: core errors become typed JS errors, panics become
/// `ERR_PRISM_INTERNAL` errors.
pub fn guard<T>(f: impl FnOnce() -> Result<T, PrismError>) -> napi::Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_js_error(e)),
        Err(panic) => Err(to_js_error(PrismError::internal(format!(
            "internal error (a bug in prism-review): {}",
            panic_message(panic)
        )))),
    }
}

/// Polls a future inside `catch_unwind`, so a panic while polling becomes an `Err` in
/// place, without the extra task hop a `tokio::spawn` would cost on every call.
struct CatchUnwind<F: Future>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// Run an async core call (napi drives it on the tokio runtime); a panic inside it is
/// caught where it happens and becomes an `ERR_PRISM_INTERNAL` error.
pub async fn guard_async<T, F>(fut: F) -> napi::Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T, PrismError>> + Send + 'static,
{
    match CatchUnwind(Box::pin(fut)).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_js_error(e)),
        Err(panic) => Err(to_js_error(PrismError::internal(format!(
            "internal error (a bug in prism-review): {}",
            panic_message(panic)
        )))),
    }
}

/// The codes and reasons of every error class, from the enums that produce them: the JS
/// layer builds `ARTIFACT_BODY_ERROR_CODES` from it and a test compares it with the typings.
#[napi_derive::napi]
pub fn error_tables() -> napi::Result<String> {
    use crate::error::{ArtifactReason, BodyCode, LspCode, ReviewCode, S3Code, WorkDraftReason};
    fn all<T: Copy>(values: &[T], text: fn(T) -> &'static str) -> Vec<&'static str> {
        values.iter().map(|v| text(*v)).collect()
    }
    guard(|| {
        Ok(serde_json::json!({
            "artifactReasons": all(ArtifactReason::ALL, ArtifactReason::as_str),
            "reviewCodes": all(ReviewCode::ALL, ReviewCode::as_str),
            "lspCodes": all(LspCode::ALL, LspCode::as_str),
            "bodyCodes": all(BodyCode::ALL, BodyCode::as_str),
            "workDraftReasons": all(WorkDraftReason::ALL, WorkDraftReason::as_str),
            "s3Codes": all(S3Code::ALL, S3Code::as_str),
            "checkpointConflictCode": crate::store::host::CONFLICT_CODE,
        })
        .to_string())
    })
}

/// Test hook (feature `test-exports`): panics on purpose so tests can prove a panic never
/// reaches the process.
#[cfg(feature = "test-exports")]
#[napi_derive::napi]
pub fn debug_panic(kind: String) -> napi::Result<String> {
    guard(|| -> Result<String, PrismError> {
        match kind.as_str() {
            "panic" => panic!("deliberate panic for testing"),
            "error" => Err(PrismError::review(
                crate::error::ReviewCode::Input,
                "deliberate typed error",
            )),
            _ => Ok(kind),
        }
    })
}

/// Async twin of [`debug_panic`] (feature `test-exports`).
#[cfg(feature = "test-exports")]
#[napi_derive::napi]
pub async fn debug_panic_async(kind: String) -> napi::Result<String> {
    guard_async(async move {
        match kind.as_str() {
            "panic" => panic!("deliberate async panic for testing"),
            _ => Ok(kind),
        }
    })
    .await
}
