//! Bindings for `crate::artifacts`. Values cross as JSON text; every call runs under
//! `guard`/`guard_async`. The JS layer (`js/artifacts.js`) owns argument checks that only
//! JavaScript can do (AbortSignal, host redactor objects, `onDecision`).

// napi registers these for the addon; in `cargo test` builds nothing calls them.

use super::call_target::CallTarget;
use super::calls::CallPort;
use super::guard;
use super::redaction::SecretRedactorHandle;
use super::store::CheckpointStoreHandle;
use super::text::JsText;
use crate::artifacts::{api, invalid, AbortFlag, ArtifactLimits, ArtifactService, ServiceConfig};
use crate::error::{PrismError, Result};
use crate::json;
use base64::Engine;
use napi::Env;
use napi_derive::napi;
use serde_json::Value;
use std::sync::Arc;

fn type_err(m: String) -> PrismError {
    PrismError::type_error(m)
}

fn secret_bytes(b64: &str) -> Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| PrismError::type_error("secret is not valid"))
}

fn text_of(v: &Value) -> Result<String> {
    serde_json::to_string(v).map_err(|e| PrismError::internal(e.to_string()))
}

/// Set from the JS side when the caller's AbortSignal fires. `signal_id` names the
/// caller's signal in `js/store.js`'s registry, so host stores receive it as `signal`.
#[napi]
pub struct ArtifactAbortFlag {
    pub(crate) inner: AbortFlag,
}

#[napi]
impl ArtifactAbortFlag {
    #[napi(constructor)]
    pub fn new(signal_id: Option<u32>) -> Self {
        Self {
            inner: signal_id.map_or_else(AbortFlag::new, AbortFlag::with_signal),
        }
    }

    #[napi]
    pub fn abort(&self) {
        self.inner.abort();
    }
}

/// The artifact service over a checkpoint store handle.
#[napi]
pub struct ArtifactServiceHandle {
    calls: Arc<ServiceCalls>,
}

/// What a service call needs: shared by the handle and its [`CallTarget`].
struct ServiceCalls {
    inner: Arc<ArtifactService>,
    store: Arc<dyn crate::store::CheckpointStore>,
    /// Where calls that do not finish on the calling thread complete.
    port: CallPort,
    /// The flag of calls without a signal: never set.
    never_aborted: AbortFlag,
}

#[napi]
impl ArtifactServiceHandle {
    /// `options_json`: `{ linkSecretBase64, limits?, bodies?, events? }` (see
    /// `ServiceConfig::parse`); `port`: this environment's.
    #[napi(constructor)]
    pub fn new(
        store: &CheckpointStoreHandle,
        redactor: &SecretRedactorHandle,
        port: &CallPort,
        options_json: String,
    ) -> napi::Result<Self> {
        guard(|| {
            let options = json::parse(&options_json, type_err)?;
            let config = ServiceConfig::parse(&options)?;
            Ok(Self {
                calls: Arc::new(ServiceCalls {
                    inner: Arc::new(ArtifactService::new(
                        store.inner.clone(),
                        redactor.inner.clone(),
                        config,
                    )),
                    store: store.inner.clone(),
                    port: port.clone(),
                    never_aborted: AbortFlag::new(),
                }),
            })
        })
    }

    /// Resolved limits as JSON text.
    #[napi]
    pub fn limits(&self) -> napi::Result<String> {
        guard(|| text_of(&self.calls.inner.limits().to_value()))
    }

    /// This service's calls without a signal, for `startCall(target, op, input, token)`
    /// (`call_target.rs`): operation `OPERATIONS[op]` on the JSON request, answering JSON
    /// `{ result, event? }` when it finished on this thread (the memory store), else `null`
    /// and the text arrives through the port's `done(token, …)` (see `calls.rs`). Admitted
    /// synchronously, so a store's `close()` after a call waits for it (and refuses
    /// operations requested after it).
    #[napi(ts_return_type = "object")]
    pub fn call_target(&self) -> CallTarget {
        let calls = self.calls.clone();
        CallTarget::of(Box::new(move |env, op, input, token| {
            calls.run(env, op, input, calls.never_aborted.clone(), token)
        }))
    }

    /// A call under an AbortSignal: as `startCall`, with the abort flag the caller's
    /// signal sets.
    #[napi(ts_return_type = "string | null")]
    pub fn start_abortable(
        &self,
        env: &Env,
        op: u32,
        #[napi(ts_arg_type = "string")] input_json: JsText,
        abort: &ArtifactAbortFlag,
        token: u32,
    ) -> napi::Result<Option<String>> {
        self.calls
            .run(env, op, input_json.0, abort.inner.clone(), token)
    }
}

impl ServiceCalls {
    fn run(
        &self,
        env: &Env,
        op: u32,
        input_json: String,
        flag: AbortFlag,
        token: u32,
    ) -> napi::Result<Option<String>> {
        let Some(&op) = crate::artifacts::service::OPERATIONS.get(op as usize) else {
            return Err(super::to_js_error(PrismError::type_error(format!(
                "unknown artifact operation {op}"
            ))));
        };
        let service = self.inner.clone();
        let ticket = self.store.admit().map_err(super::to_js_error)?;
        self.port.start(env, token, async move {
            let _ticket = ticket;
            if input_json.len() > crate::artifacts::input::MAX_INPUT_BYTES {
                return Err(crate::artifacts::err(
                    crate::error::ArtifactReason::RecordTooLarge,
                    format!(
                        "the request is {} bytes; at most {} are accepted",
                        input_json.len(),
                        crate::artifacts::input::MAX_INPUT_BYTES
                    ),
                ));
            }
            let input = crate::artifacts::input::read_request(&input_json)?;
            service.call_json(op, input, &input_json, &flag).await
        })
    }
}

/// `resolveArtifactLimits(limits?)`: JSON text in, resolved JSON text out.
#[napi]
pub fn artifacts_resolve_limits(limits_json: String) -> napi::Result<String> {
    guard(|| {
        let v = json::parse(&limits_json, type_err)?;
        text_of(&ArtifactLimits::resolve(Some(&v))?.to_value())
    })
}

/// `signArtifactDeliveryLink(token, secret)`: signs the token's JSON text exactly.
#[napi]
pub fn artifacts_sign_link(token_json: String, secret_base64: String) -> napi::Result<String> {
    guard(|| api::sign_link(&token_json, &secret_bytes(&secret_base64)?))
}

/// `verifyArtifactDeliveryLink(link, secret, maxBytes?, now?)`: `now_ms` absent = now.
#[napi]
pub fn artifacts_verify_link(
    link_json: String,
    secret_base64: String,
    max_bytes: Option<f64>,
    now_ms: Option<f64>,
) -> napi::Result<String> {
    guard(|| {
        let link = json::parse(&link_json, |m| {
            crate::artifacts::err(crate::error::ArtifactReason::InvalidLink, m)
        })?;
        // Non-negative finite numbers (JS checked); a fraction rounds down.
        let max = max_bytes.map(|m| m.max(0.0) as u64);
        let now = now_ms.map_or_else(crate::util::time::now_ms, |n| n as i64);
        text_of(&api::verify_link(
            &link,
            &secret_bytes(&secret_base64)?,
            max,
            now,
        )?)
    })
}

/// `artifactCheckpointKey(threadId, artifactId)`.
#[napi]
pub fn artifacts_checkpoint_key(thread_id: String, artifact_id: String) -> String {
    crate::artifacts::record_key(&thread_id, &artifact_id)
}

/// Constants the JS layer needs: `{ namespace, operations }` (the
/// `ARTIFACT_CHECKPOINT_NAMESPACE` export and the service's method names).
#[napi]
pub fn artifacts_constants() -> String {
    serde_json::json!({
        "namespace": crate::artifacts::NAMESPACE,
        "operations": crate::artifacts::service::OPERATIONS,
        "maxInputBytes": crate::artifacts::input::MAX_INPUT_BYTES,
        "maxDepth": crate::json::MAX_DEPTH,
    })
    .to_string()
}

/// `artifactApprovalState`: `"pending" | "approved" | "rejected"`.
#[napi]
pub fn artifacts_approval_state(record_json: String) -> napi::Result<String> {
    guard(|| {
        let record = json::parse(&record_json, PrismError::type_error)?;
        api::approval_state(&record).map(str::to_string)
    })
}

/// `approvalEvidenceIntact`.
#[napi]
pub fn artifacts_evidence_intact(record_json: String, version_json: String) -> napi::Result<bool> {
    guard(|| {
        api::evidence_intact(
            &json::parse(&record_json, invalid)?,
            &json::parse(&version_json, invalid)?,
        )
    })
}

/// `citationBindingDigest`.
#[napi]
pub fn artifacts_citation_digest(citations_json: String) -> napi::Result<String> {
    // Read as the service reads a request's citations (a lone surrogate as U+FFFD), so a
    // host's digest of the citations it sent is the one the service recorded.
    guard(|| api::citation_digest(&json::parse_well_formed(&citations_json, invalid)?.0))
}

/// `checkCitationIntegrity`.
#[napi]
pub fn artifacts_check_integrity(input_json: String) -> napi::Result<String> {
    guard(|| text_of(&api::integrity(&json::parse(&input_json, invalid)?)?))
}
