//! A host's own store (any JavaScript object with `saveCheckpoint`, `loadCheckpoint`,
//! `listCheckpoints`, `deleteCheckpoint`) seen as a [`CheckpointStore`].
//!
//! The core knows nothing of napi: the binding layer supplies a [`HostCaller`] that sends
//! JSON text of the request to the host and answers the JSON text of an envelope,
//! `{"ok": <result>}` or `{"error": {"code"?, "message"?}}` (the JS layer builds it around
//! the host's promise). This module checks everything the host answers:
//! - an error whose `code` is `ERR_PRISM_CHECKPOINT_CONFLICT` is a conflict on save, list
//!   and delete, and "not there" (`None`) on load (how hosts signal ownership mismatch);
//! - any other error is an `ERR_PRISM_INTERNAL` error naming the host operation;
//! - a malformed result is an `ERR_PRISM_INTERNAL` error too, never a panic;
//! - fail closed on ownership: a loaded checkpoint of another namespace, key or owner is
//!   `None`; listed items of another namespace, prefix or (filtered) owner are dropped.

use super::{
    now_iso8601, validate_target, BoxFuture, Checkpoint, CheckpointStore, ListCheckpoints,
    Ownership, Page, SaveCheckpoint, MAX_SAFE_INTEGER, VALUE_BYTES_HARD,
};
use crate::error::{PrismError, Result};
use serde::Deserialize;
use serde_json::{json, Value};

/// The host operation being called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostOp {
    Save,
    Load,
    List,
    Delete,
}

impl HostOp {
    /// The host method's name.
    pub fn method(self) -> &'static str {
        match self {
            HostOp::Save => "saveCheckpoint",
            HostOp::Load => "loadCheckpoint",
            HostOp::List => "listCheckpoints",
            HostOp::Delete => "deleteCheckpoint",
        }
    }
}

/// Calls one host method with the JSON text of its argument and answers the JSON text
/// of the result envelope. A failure to call at all is an error.
pub trait HostCaller: Send + Sync {
    fn call(&self, op: HostOp, request: String) -> BoxFuture<'_, Result<String>>;
}

/// [`CheckpointStore`] over a [`HostCaller`].
pub struct HostCheckpointStore<C> {
    caller: C,
}

impl<C: HostCaller> HostCheckpointStore<C> {
    pub fn new(caller: C) -> Self {
        Self { caller }
    }
}

/// `code` of a host conflict.
pub const CONFLICT_CODE: &str = "ERR_PRISM_CHECKPOINT_CONFLICT";

enum Outcome {
    Ok(Value),
    Conflict(String),
}

fn host_failure(op: HostOp, what: impl std::fmt::Display) -> PrismError {
    PrismError::internal(format!("host checkpoint store: {} {what}", op.method()))
}

fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn parse_envelope(op: HostOp, text: &str) -> Result<Outcome> {
    if text.len() > VALUE_BYTES_HARD.saturating_mul(64) {
        return Err(host_failure(op, "returned a result that is too large"));
    }
    let v: Value = serde_json::from_str(text)
        .map_err(|e| host_failure(op, format!("returned a malformed result: {e}")))?;
    let Value::Object(mut obj) = v else {
        return Err(host_failure(op, "returned a malformed result envelope"));
    };
    if let Some(err) = obj.remove("error") {
        let code = err.get("code").and_then(Value::as_str).unwrap_or("");
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        let message = clip(message, 1024);
        if code == CONFLICT_CODE {
            return Ok(Outcome::Conflict(message.to_string()));
        }
        let code = clip(code, 128);
        return Err(if code.is_empty() {
            host_failure(op, format!("failed: {message}"))
        } else {
            host_failure(op, format!("failed ({code}): {message}"))
        });
    }
    match obj.remove("ok") {
        Some(v) => Ok(Outcome::Ok(v)),
        None => Err(host_failure(op, "returned a malformed result envelope")),
    }
}

/// A checkpoint as a host answers it: timestamps may be missing (then "now").
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HostCheckpoint {
    namespace: String,
    key: String,
    version: u64,
    ownership: Ownership,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    value: Value,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
}

fn checkpoint(op: HostOp, v: Value) -> Result<Checkpoint> {
    let h: HostCheckpoint = serde_json::from_value(v)
        .map_err(|e| host_failure(op, format!("returned a malformed checkpoint: {e}")))?;
    if h.version == 0 || h.version > MAX_SAFE_INTEGER {
        return Err(host_failure(
            op,
            "returned a checkpoint with an invalid version",
        ));
    }
    let now = now_iso8601();
    let created_at = h.created_at.unwrap_or_else(|| now.clone());
    let updated_at = h.updated_at.unwrap_or_else(|| created_at.clone());
    Ok(Checkpoint {
        namespace: h.namespace,
        key: h.key,
        version: h.version,
        ownership: h.ownership,
        category: h.category,
        value: h.value,
        created_at,
        updated_at,
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HostPage {
    items: Vec<Value>,
    #[serde(default)]
    next_cursor: Option<String>,
}

impl<C: HostCaller> HostCheckpointStore<C> {
    async fn call(&self, op: HostOp, request: Value) -> Result<Outcome> {
        let text = serde_json::to_string(&request)
            .map_err(|e| PrismError::internal(format!("cannot encode a host request: {e}")))?;
        let answer = self.caller.call(op, text).await?;
        parse_envelope(op, &answer)
    }

    async fn save_impl(&self, req: SaveCheckpoint) -> Result<Checkpoint> {
        req.validate()?;
        let (ns, key, owner) = (
            req.namespace.clone(),
            req.key.clone(),
            req.ownership.clone(),
        );
        let request = serde_json::to_value(&req)
            .map_err(|e| PrismError::internal(format!("cannot encode a host request: {e}")))?;
        match self.call(HostOp::Save, request).await? {
            Outcome::Conflict(m) => Err(PrismError::conflict(m)),
            Outcome::Ok(v) => {
                let cp = checkpoint(HostOp::Save, v)?;
                if cp.namespace != ns || cp.key != key || cp.ownership != owner {
                    return Err(host_failure(
                        HostOp::Save,
                        "returned a checkpoint of another namespace, key or owner",
                    ));
                }
                Ok(cp)
            }
        }
    }

    async fn load_impl(
        &self,
        ns: &str,
        key: &str,
        owner: &Ownership,
    ) -> Result<Option<Checkpoint>> {
        validate_target(ns, key, owner)?;
        let request = json!({ "namespace": ns, "key": key, "ownership": owner });
        match self.call(HostOp::Load, request).await? {
            Outcome::Conflict(_) | Outcome::Ok(Value::Null) => Ok(None),
            Outcome::Ok(v) => {
                let cp = checkpoint(HostOp::Load, v)?;
                Ok((cp.namespace == ns && cp.key == key && &cp.ownership == owner).then_some(cp))
            }
        }
    }

    async fn list_impl(&self, query: ListCheckpoints) -> Result<Page<Checkpoint>> {
        query.validate()?;
        let request = serde_json::to_value(&query)
            .map_err(|e| PrismError::internal(format!("cannot encode a host request: {e}")))?;
        let v = match self.call(HostOp::List, request).await? {
            Outcome::Conflict(m) => return Err(PrismError::conflict(m)),
            Outcome::Ok(v) => v,
        };
        let page: HostPage = serde_json::from_value(v)
            .map_err(|e| host_failure(HostOp::List, format!("returned a malformed page: {e}")))?;
        let prefix = query.prefix.as_deref().unwrap_or("");
        let mut items = Vec::with_capacity(page.items.len());
        for item in page.items {
            let cp = checkpoint(HostOp::List, item)?;
            let owner_ok = query.ownership.as_ref().is_none_or(|o| o == &cp.ownership);
            if cp.namespace == query.namespace && cp.key.starts_with(prefix) && owner_ok {
                items.push(cp);
            }
        }
        Ok(Page {
            items,
            next_cursor: page.next_cursor,
        })
    }

    async fn delete_impl(
        &self,
        ns: &str,
        key: &str,
        owner: &Ownership,
        expected_version: Option<u64>,
    ) -> Result<bool> {
        validate_target(ns, key, owner)?;
        let mut request = json!({ "namespace": ns, "key": key, "ownership": owner });
        if let Some(v) = expected_version {
            request["expectedVersion"] = json!(v);
        }
        match self.call(HostOp::Delete, request).await? {
            Outcome::Conflict(m) => Err(PrismError::conflict(m)),
            Outcome::Ok(Value::Bool(b)) => Ok(b),
            Outcome::Ok(_) => Err(host_failure(HostOp::Delete, "must resolve to a boolean")),
        }
    }
}

impl<C: HostCaller> CheckpointStore for HostCheckpointStore<C> {
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        Box::pin(self.save_impl(req))
    }

    fn load<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        ownership: &'a Ownership,
    ) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(self.load_impl(namespace, key, ownership))
    }

    fn list(&self, query: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        Box::pin(self.list_impl(query))
    }

    fn delete<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        ownership: &'a Ownership,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(self.delete_impl(namespace, key, ownership, expected_version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::store::{MemoryLimits, MemoryStore};
    use std::sync::{Arc, Mutex};

    /// A host that answers through a real store, as the JS layer does.
    struct Loopback(MemoryStore);

    fn envelope<T: serde::Serialize>(r: Result<T>) -> String {
        match r {
            Ok(v) => json!({ "ok": v }).to_string(),
            Err(e) => json!({ "error": { "code": e.code(), "message": e.message } }).to_string(),
        }
    }

    impl HostCaller for Loopback {
        fn call(&self, op: HostOp, request: String) -> BoxFuture<'_, Result<String>> {
            Box::pin(async move {
                Ok(match op {
                    HostOp::Save => envelope(match crate::store::parse_save(&request) {
                        Ok(r) => self.0.save(r).await,
                        Err(e) => Err(e),
                    }),
                    HostOp::Load => {
                        let t = crate::store::parse_load(&request)?;
                        envelope(self.0.load(&t.namespace, &t.key, &t.ownership).await)
                    }
                    HostOp::List => {
                        envelope(self.0.list(crate::store::parse_list(&request)?).await)
                    }
                    HostOp::Delete => {
                        let t = crate::store::parse_delete(&request)?;
                        envelope(
                            self.0
                                .delete(&t.namespace, &t.key, &t.ownership, t.expected_version)
                                .await,
                        )
                    }
                })
            })
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_through_the_envelope() {
        let store = HostCheckpointStore::new(Loopback(MemoryStore::new(MemoryLimits::default())));
        crate::store::conformance::run(&store).await;
    }

    /// A host that answers canned envelopes.
    struct Canned(Mutex<Vec<String>>, Arc<Mutex<Vec<(HostOp, String)>>>);

    impl HostCaller for Canned {
        fn call(&self, op: HostOp, request: String) -> BoxFuture<'_, Result<String>> {
            self.1.lock().unwrap().push((op, request));
            let next = self.0.lock().unwrap().pop();
            Box::pin(async move { next.ok_or_else(|| PrismError::internal("no answer")) })
        }
    }

    fn canned(answer: &str) -> HostCheckpointStore<Canned> {
        HostCheckpointStore::new(Canned(
            Mutex::new(vec![answer.to_string()]),
            Arc::new(Mutex::new(Vec::new())),
        ))
    }

    fn owner() -> Ownership {
        Ownership {
            user_id: Some("u".into()),
            ..Default::default()
        }
    }

    fn save_req() -> SaveCheckpoint {
        SaveCheckpoint {
            namespace: "n".into(),
            key: "k".into(),
            ownership: owner(),
            category: None,
            value: json!(1),
            expected_version: Some(0),
        }
    }

    #[tokio::test]
    async fn host_errors_map_to_typed_errors() {
        let conflict = r#"{"error":{"code":"ERR_PRISM_CHECKPOINT_CONFLICT","message":"lost"}}"#;
        let e = canned(conflict).save(save_req()).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::CheckpointConflict);
        assert_eq!(e.message, "lost");
        assert!(canned(conflict)
            .load("n", "k", &owner())
            .await
            .unwrap()
            .is_none());
        let e = canned(conflict)
            .delete("n", "k", &owner(), None)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::CheckpointConflict);

        let other = r#"{"error":{"code":"EIO","message":"disk on fire"}}"#;
        let e = canned(other).save(save_req()).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal);
        assert!(
            e.message
                .contains("saveCheckpoint failed (EIO): disk on fire"),
            "{e}"
        );

        for bad in [
            "",
            "not json",
            "[]",
            "{}",
            r#"{"ok":5}"#,
            r#"{"ok":{"namespace":"n"}}"#,
            r#"{"ok":{"namespace":"n","key":"k","version":0,"ownership":{"userId":"u"},"value":1}}"#,
            r#"{"ok":{"namespace":"n","key":"other","version":1,"ownership":{"userId":"u"},"value":1}}"#,
            r#"{"ok":{"namespace":"n","key":"k","version":1,"ownership":{"userId":"x"},"value":1}}"#,
        ] {
            let e = canned(bad).save(save_req()).await.unwrap_err();
            assert_eq!(e.kind, ErrorKind::Internal, "{bad}");
        }
        for bad in [r#"{"ok":"yes"}"#, r#"{"ok":null}"#, r#"{"ok":1}"#] {
            let e = canned(bad)
                .delete("n", "k", &owner(), None)
                .await
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Internal, "{bad}");
        }
        for bad in [r#"{"ok":null}"#, r#"{"ok":{"items":5}}"#, r#"{"ok":[]}"#] {
            let q = ListCheckpoints {
                namespace: "n".into(),
                ..Default::default()
            };
            assert_eq!(
                canned(bad).list(q).await.unwrap_err().kind,
                ErrorKind::Internal
            );
        }
    }

    #[tokio::test]
    async fn fails_closed_on_foreign_results() {
        let foreign = r#"{"ok":{"namespace":"n","key":"k","version":1,"ownership":{"userId":"x"},"value":1}}"#;
        assert!(canned(foreign)
            .load("n", "k", &owner())
            .await
            .unwrap()
            .is_none());
        let page = r#"{"ok":{"items":[
            {"namespace":"n","key":"a1","version":1,"ownership":{"userId":"u"},"value":1},
            {"namespace":"n","key":"a2","version":1,"ownership":{"userId":"x"},"value":1},
            {"namespace":"m","key":"a3","version":1,"ownership":{"userId":"u"},"value":1},
            {"namespace":"n","key":"b4","version":1,"ownership":{"userId":"u"},"value":1}
        ],"nextCursor":"c"}}"#;
        let q = ListCheckpoints {
            namespace: "n".into(),
            prefix: Some("a".into()),
            ownership: Some(owner()),
            ..Default::default()
        };
        let p = canned(page).list(q).await.unwrap();
        let keys: Vec<_> = p.items.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["a1"]);
        assert_eq!(p.next_cursor.as_deref(), Some("c"));
        // Missing timestamps are filled in.
        let loaded = canned(r#"{"ok":{"namespace":"n","key":"k","version":2,"ownership":{"userId":"u"},"value":1}}"#)
            .load("n", "k", &owner())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(loaded.created_at.len(), 24);
    }

    #[tokio::test]
    async fn requests_are_validated_before_the_host_is_called() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let store = HostCheckpointStore::new(Canned(Mutex::new(vec![]), log.clone()));
        let mut bad = save_req();
        bad.ownership = Ownership::default();
        assert_eq!(
            store.save(bad).await.unwrap_err().reason(),
            Some("invalid_input")
        );
        assert!(log.lock().unwrap().is_empty());
    }
}
