//! Bindings for `crate::drafts`: the work draft service over a checkpoint store handle,
//! the host's recipient policy bridged through a threadsafe function, the payload
//! digest, the limits and the constants `js/drafts.js` reads (operations, reasons,
//! HTTP statuses, depth cap). Values cross as JSON text.

use super::artifacts::ArtifactAbortFlag;
use super::redaction::SecretRedactorHandle;
use super::store::CheckpointStoreHandle;
use super::{guard, guard_async};
use crate::drafts::{self, DraftConfig, DraftLimits, RecipientPolicy, WorkDraftService};
use crate::error::{PrismError, Result, WorkDraftReason};
use crate::json;
use napi::bindgen_prelude::{Promise, PromiseRaw};
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::Value;
use std::sync::Arc;

fn text_of(v: &Value) -> Result<String> {
    serde_json::to_string(v).map_err(|e| PrismError::internal(e.to_string()))
}

/// The host policy: called with the JSON array of addresses, answers a promise of the
/// JSON array of booleans (`null` when the host's `allow` threw). Weak: it never keeps
/// the process alive by itself.
type PolicyFn = ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

struct HostPolicy(PolicyFn);

impl RecipientPolicy for HostPolicy {
    fn allow<'a>(
        &'a self,
        addresses: &'a [String],
    ) -> crate::store::BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(async move {
            let fail = || PrismError::internal("the host recipientPolicy.allow failed");
            let request = serde_json::to_string(addresses).map_err(|_| fail())?;
            let promise = self.0.call_async_catch(request).await.map_err(|_| fail())?;
            let answer = promise.await.map_err(|_| fail())?;
            let answers: Vec<bool> = serde_json::from_str(&answer).map_err(|_| fail())?;
            if answers.len() != addresses.len() {
                return Err(fail());
            }
            Ok(answers)
        })
    }
}

/// The work draft service over a checkpoint store handle.
#[napi]
pub struct WorkDraftServiceHandle {
    inner: Arc<WorkDraftService>,
    store: Arc<dyn crate::store::CheckpointStore>,
}

#[napi]
impl WorkDraftServiceHandle {
    /// `options_json`: `{ limits?, editsRequireReapproval? }`; `policy`: the host's
    /// `recipientPolicy` bridge, when one is given.
    #[napi(constructor)]
    pub fn new(
        store: &CheckpointStoreHandle,
        redactor: &SecretRedactorHandle,
        options_json: String,
        #[napi(ts_arg_type = "(json: string) => Promise<string>")] policy: Option<PolicyFn>,
    ) -> napi::Result<Self> {
        guard(|| {
            let options = json::parse(&options_json, PrismError::type_error)?;
            let config = DraftConfig::parse(&options)?;
            let policy = policy.map(|p| Arc::new(HostPolicy(p)) as Arc<dyn RecipientPolicy>);
            Ok(Self {
                inner: Arc::new(WorkDraftService::new(
                    store.inner.clone(),
                    redactor.inner.clone(),
                    policy,
                    config,
                )),
                store: store.inner.clone(),
            })
        })
    }

    /// Resolved limits as JSON text.
    #[napi]
    pub fn limits(&self) -> napi::Result<String> {
        guard(|| text_of(&self.inner.limits().to_value()))
    }

    /// Run `op` with the JSON request; resolves to JSON `{ result, event? }`.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn call<'e>(
        &self,
        env: &'e Env,
        op: String,
        input_json: String,
        abort: &ArtifactAbortFlag,
    ) -> napi::Result<PromiseRaw<'e, String>> {
        let service = self.inner.clone();
        let flag = abort.inner.clone();
        let ticket = self.store.admit().map_err(super::to_js_error)?;
        env.spawn_future(async move {
            let _ticket = ticket;
            guard_async(async move {
                if input_json.len() > crate::artifacts::input::MAX_INPUT_BYTES {
                    return Err(drafts::werr(
                        WorkDraftReason::PayloadTooLarge,
                        format!(
                            "the request is {} bytes; at most {} are accepted",
                            input_json.len(),
                            crate::artifacts::input::MAX_INPUT_BYTES
                        ),
                    ));
                }
                let input = json::parse(&input_json, drafts::invalid)?;
                let out = service.call(&op, input, &flag).await?;
                let mut v = serde_json::json!({ "result": out.result });
                if let Some(e) = out.event {
                    v["event"] = e;
                }
                text_of(&v)
            })
            .await
        })
    }
}

/// `draftPayloadDigest(payload)`: JSON text of the payload in, hex digest out (the
/// payload must be a plain JSON object within the hard caps).
#[napi]
pub fn drafts_payload_digest(payload_json: String) -> napi::Result<String> {
    guard(|| {
        let v = json::parse(&payload_json, drafts::invalid)?;
        drafts::payload::check(
            &v,
            "payload",
            WorkDraftReason::InvalidInput,
            &DraftLimits::hard(),
        )?;
        Ok(drafts::payload::digest(&v))
    })
}

/// `resolveWorkDraftLimits(limits?)`.
#[napi]
pub fn drafts_resolve_limits(limits_json: String) -> napi::Result<String> {
    guard(|| {
        let v = json::parse(&limits_json, PrismError::type_error)?;
        text_of(&DraftLimits::resolve(Some(&v))?.to_value())
    })
}

/// Constants for the JS layer: namespace, operations, reasons with their HTTP statuses,
/// the hard depth cap, immutable payload keys.
#[napi]
pub fn drafts_constants() -> String {
    let mut reasons = serde_json::Map::new();
    for &r in WorkDraftReason::ALL {
        reasons.insert(r.as_str().into(), crate::http::drafts::status_for(r).into());
    }
    serde_json::json!({
        "namespace": drafts::NAMESPACE,
        "operations": drafts::service::OPERATIONS,
        "reasons": reasons,
        "maxDepth": DraftLimits::hard().payload_depth(),
        "maxInputBytes": crate::artifacts::input::MAX_INPUT_BYTES,
        "maxInputDepth": crate::json::MAX_DEPTH,
        "immutableKeys": drafts::payload::IMMUTABLE_KEYS,
        "defaultBasePath": crate::http::drafts::DEFAULT_BASE_PATH,
    })
    .to_string()
}

fn http_error_json(status: u16, code: &str, message: &str) -> String {
    serde_json::json!({ "error": { "status": status, "code": code, "message": message } })
        .to_string()
}

/// Match a draft route: `{ operation, method, body, threadId, draftId? }` or
/// `{ error: { status, code, message } }`.
#[napi]
pub fn drafts_match_route(base: String, method: String, path: String) -> napi::Result<String> {
    guard(|| {
        Ok(
            match crate::http::drafts::match_route(&base, &method, &path) {
                Ok(r) => {
                    let mut out = serde_json::json!({
                        "operation": r.operation, "method": r.method, "body": r.body, "threadId": r.thread_id,
                    });
                    if let Some(d) = r.draft_id {
                        out["draftId"] = Value::String(d);
                    }
                    out.to_string()
                }
                Err(e) => {
                    let (status, code, message) = crate::http::route_error_response(&e);
                    http_error_json(status, code, &message)
                }
            },
        )
    })
}

/// Check a resume body: `{ body }` or `{ error: { status, code, message } }`.
#[napi]
pub fn drafts_check_resume_body(
    text: String,
    thread_id: String,
    draft_id: String,
) -> napi::Result<String> {
    guard(|| {
        Ok(
            match crate::http::drafts::check_resume_body(&text, &thread_id, &draft_id) {
                Ok(body) => serde_json::json!({ "body": body }).to_string(),
                Err(e) => http_error_json(e.status, e.code, &e.message),
            },
        )
    })
}
