//! A host's own store (any JavaScript object with `saveCheckpoint`, `loadCheckpoint`,
//! `listCheckpoints`, `deleteCheckpoint`, written to `@arnilo/prism`'s `CheckpointStore`)
//! seen as a [`CheckpointStore`].
//!
//! The core knows nothing of napi: the binding layer supplies a [`HostCaller`] that sends
//! the JSON text of the request to the host and answers the JSON text of an envelope,
//! `{"ok": <result>}` or `{"error": {"code"?, "message"?}}` (the JS layer builds it around
//! the host's promise, and turns the request's `signal` id into the caller's AbortSignal).
//!
//! Requests have exactly the reference's shapes: the owner spread flat, a caller-assigned
//! `version`, `expectedVersion`, `keyPrefix`, `category`. Everything the host answers is
//! checked:
//! - an error whose `code` is `ERR_PRISM_CHECKPOINT_CONFLICT` is a conflict on save, list
//!   and delete, and a miss (`None`) on load (how the reference's stores answer another
//!   owner's key);
//! - any other error is an `ERR_PRISM_INTERNAL` error naming the host operation;
//! - a malformed result is an `ERR_PRISM_INTERNAL` error too, never a panic;
//! - fail closed on ownership: a loaded record of another namespace, key or owner is a
//!   miss; listed records the query does not select are dropped.
//!
//! `delete` with an expected version (the artifact service withdrawing its own create)
//! loads first and deletes only at that version: the reference interface has no
//! conditional delete.

use super::model::{
    check_version, CheckpointKey, ListCheckpoints, Metadata, Order, SaveCheckpoint,
};
use super::wire::key_request;
use super::{BoxFuture, Checkpoint, CheckpointStore, Ownership, Page, VALUE_BYTES_HARD};
use crate::error::{PrismError, Result};
use serde_json::{Map, Value};

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

fn opt_string(obj: &Map<String, Value>, name: &str) -> std::result::Result<Option<String>, String> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{name} is not a string")),
    }
}

/// A record as a host answers it (`CheckpointRecord`); unknown members are ignored,
/// missing timestamps are "now".
fn checkpoint(op: HostOp, v: Value) -> Result<Checkpoint> {
    let bad = |what: String| host_failure(op, format!("returned a malformed checkpoint: {what}"));
    let Value::Object(obj) = v else {
        return Err(bad("not an object".into()));
    };
    let num = |name: &str| match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => crate::json::as_u64(v)
            .filter(|n| *n <= crate::util::MAX_SAFE_INTEGER)
            .map(Some)
            .ok_or_else(|| bad(format!("{name} is not a non-negative safe integer"))),
    };
    let text = |name: &str| opt_string(&obj, name).map_err(&bad);
    let version = num("version")?.ok_or_else(|| bad("version is required".into()))?;
    check_version(version).map_err(|_| bad("version is not a positive safe integer".into()))?;
    let now = crate::util::time::now_iso();
    let created_at = text("createdAt")?.unwrap_or_else(|| now.clone());
    let updated_at = text("updatedAt")?.unwrap_or_else(|| created_at.clone());
    Ok(Checkpoint {
        namespace: text("namespace")?.ok_or_else(|| bad("namespace is required".into()))?,
        key: text("key")?.ok_or_else(|| bad("key is required".into()))?,
        version,
        fencing_token: num("fencingToken")?,
        value: obj.get("value").cloned().unwrap_or(Value::Null),
        category: text("category")?,
        owner: Ownership {
            tenant_id: text("tenantId")?,
            account_id: text("accountId")?,
            user_id: text("userId")?,
        },
        created_at,
        updated_at,
        metadata: match obj.get("metadata") {
            Some(Value::Object(m)) => Some(Metadata::from_map(m)),
            _ => None,
        },
    })
}

fn with_signal(mut obj: Map<String, Value>, signal: super::SignalRef) -> String {
    if let Some(id) = signal {
        obj.insert("signal".into(), Value::from(id));
    }
    Value::Object(obj).to_string()
}

fn save_request(req: &SaveCheckpoint) -> String {
    let mut obj = key_request(&CheckpointKey::new(&req.namespace, &req.key, &req.owner));
    obj.insert("version".into(), Value::from(req.version));
    if let Some(v) = req.expected_version {
        obj.insert("expectedVersion".into(), Value::from(v));
    }
    if let Some(f) = req.fencing_token {
        obj.insert("fencingToken".into(), Value::from(f));
    }
    obj.insert("value".into(), req.value.clone());
    if let Some(c) = &req.category {
        obj.insert("category".into(), Value::String(c.clone()));
    }
    if let Some(m) = &req.metadata {
        // Read when the save was (`parse_save`): a lone surrogate never reaches a host.
        obj.insert(
            "metadata".into(),
            Value::Object(m.to_map().unwrap_or_default()),
        );
    }
    with_signal(obj, req.signal)
}

fn list_request(q: &ListCheckpoints) -> String {
    let mut obj = Map::new();
    let mut put = |name: &str, v: &Option<String>| {
        if let Some(s) = v {
            obj.insert(name.into(), Value::String(s.clone()));
        }
    };
    put("namespace", &q.namespace);
    put("keyPrefix", &q.key_prefix);
    put("cursor", &q.cursor);
    match q.categories.as_deref() {
        None => {}
        Some([one]) => {
            obj.insert("category".into(), Value::String(one.clone()));
        }
        Some(set) => {
            obj.insert("category".into(), Value::from(set.to_vec()));
        }
    }
    q.owner.spread_into(&mut obj);
    if let Some(l) = q.limit {
        obj.insert("limit".into(), Value::from(l));
    }
    if q.order == Order::Desc {
        obj.insert("order".into(), Value::from("desc"));
    }
    with_signal(obj, q.signal)
}

impl<C: HostCaller> HostCheckpointStore<C> {
    async fn call(&self, op: HostOp, request: String) -> Result<Outcome> {
        let answer = self.caller.call(op, request).await?;
        parse_envelope(op, &answer)
    }

    async fn save_impl(&self, req: SaveCheckpoint) -> Result<Checkpoint> {
        req.validate()?;
        match self.call(HostOp::Save, save_request(&req)).await? {
            Outcome::Conflict(m) => Err(PrismError::conflict(m)),
            // A store that resolves to nothing saved what it was given.
            Outcome::Ok(Value::Null) => {
                let now = crate::util::time::now_iso();
                req.apply(None, &now)
            }
            Outcome::Ok(v) => {
                let cp = checkpoint(HostOp::Save, v)?;
                if cp.namespace != req.namespace || cp.key != req.key || cp.owner != req.owner {
                    return Err(host_failure(
                        HostOp::Save,
                        "returned a checkpoint of another namespace, key or owner",
                    ));
                }
                Ok(cp)
            }
        }
    }

    async fn load_impl(&self, k: &CheckpointKey) -> Result<Option<Checkpoint>> {
        k.validate()?;
        match self
            .call(HostOp::Load, with_signal(key_request(k), k.signal))
            .await?
        {
            Outcome::Conflict(_) | Outcome::Ok(Value::Null) => Ok(None),
            Outcome::Ok(v) => {
                let cp = checkpoint(HostOp::Load, v)?;
                let same = cp.namespace == k.namespace && cp.key == k.key && cp.owner == k.owner;
                Ok(same.then_some(cp))
            }
        }
    }

    async fn list_impl(&self, q: ListCheckpoints) -> Result<Page<Checkpoint>> {
        q.validate()?;
        let v = match self.call(HostOp::List, list_request(&q)).await? {
            Outcome::Conflict(m) => return Err(PrismError::conflict(m)),
            Outcome::Ok(v) => v,
        };
        let bad =
            |what: &str| host_failure(HostOp::List, format!("returned a malformed page: {what}"));
        let Value::Object(mut page) = v else {
            return Err(bad("not an object"));
        };
        let Some(Value::Array(raw)) = page.remove("items") else {
            return Err(bad("items is not an array"));
        };
        let next_cursor = match page.remove("nextCursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c),
            Some(_) => return Err(bad("nextCursor is not a string")),
        };
        let mut items = Vec::with_capacity(raw.len());
        for item in raw {
            let cp = checkpoint(HostOp::List, item)?;
            if cp.selected_by(&q) {
                items.push(cp);
            }
        }
        Ok(Page { items, next_cursor })
    }

    async fn delete_impl(&self, k: &CheckpointKey, expected: Option<u64>) -> Result<bool> {
        k.validate()?;
        if let Some(v) = expected {
            match self.load_impl(k).await? {
                None => return Ok(false),
                Some(cp) if cp.version != v => {
                    return Err(PrismError::conflict(format!(
                        "Checkpoint compare-and-swap failed (expected {v}, current {})",
                        cp.version
                    )))
                }
                Some(_) => {}
            }
        }
        match self
            .call(HostOp::Delete, with_signal(key_request(k), k.signal))
            .await?
        {
            Outcome::Conflict(m) => Err(PrismError::conflict(m)),
            Outcome::Ok(Value::Bool(b)) => Ok(b),
            Outcome::Ok(_) => Err(host_failure(HostOp::Delete, "must resolve to a boolean")),
        }
    }
}

impl<C: HostCaller> CheckpointStore for HostCheckpointStore<C> {
    super::boxed_store_methods!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::store::conformance::{cas, key};
    use crate::store::{MemoryLimits, MemoryStore};
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    /// A host that answers through a real store, reading the requests as the JS wire
    /// does (so the request shapes are exactly what the native stores accept).
    struct Loopback(MemoryStore);

    fn envelope<T: serde::Serialize>(r: Result<T>) -> String {
        match r {
            Ok(v) => json!({ "ok": v }).to_string(),
            Err(e) => json!({ "error": { "code": e.code(), "message": e.message } }).to_string(),
        }
    }

    fn without_signal(request: &str) -> String {
        let mut v: Value = serde_json::from_str(request).unwrap();
        v.as_object_mut().unwrap().remove("signal");
        v.to_string()
    }

    impl HostCaller for Loopback {
        fn call(&self, op: HostOp, request: String) -> BoxFuture<'_, Result<String>> {
            Box::pin(async move {
                let request = without_signal(&request);
                Ok(match op {
                    HostOp::Save => envelope(match crate::store::parse_save(&request) {
                        Ok(r) => self.0.save(r).await,
                        Err(e) => Err(e),
                    }),
                    HostOp::Load => {
                        envelope(self.0.load(&crate::store::parse_key(&request)?).await)
                    }
                    HostOp::List => {
                        envelope(self.0.list(crate::store::parse_list(&request)?).await)
                    }
                    HostOp::Delete => {
                        let (k, v) = crate::store::parse_delete(&request)?;
                        envelope(self.0.delete(&k, v).await)
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

    /// What a canned host was asked.
    type Log = Arc<Mutex<Vec<(HostOp, String)>>>;

    /// A host that answers canned envelopes and logs what it was asked.
    struct Canned(Mutex<Vec<String>>, Log);

    impl HostCaller for Canned {
        fn call(&self, op: HostOp, request: String) -> BoxFuture<'_, Result<String>> {
            self.1.lock().unwrap().push((op, request));
            let next = self.0.lock().unwrap().pop();
            Box::pin(async move { next.ok_or_else(|| PrismError::internal("no answer")) })
        }
    }

    fn canned_log(answers: &[&str]) -> (HostCheckpointStore<Canned>, Log) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let answers = answers.iter().rev().map(|s| s.to_string()).collect();
        (
            HostCheckpointStore::new(Canned(Mutex::new(answers), log.clone())),
            log,
        )
    }

    fn canned(answer: &str) -> HostCheckpointStore<Canned> {
        canned_log(&[answer]).0
    }

    fn owner() -> Ownership {
        Ownership {
            user_id: Some("u".into()),
            ..Default::default()
        }
    }

    fn save_req() -> SaveCheckpoint {
        let mut s = cas("n", "k", &owner(), 0, json!(1));
        s.category = Some("artifact".into());
        s.signal = Some(7);
        s
    }

    #[tokio::test]
    async fn requests_have_the_reference_shapes() {
        let (store, log) = canned_log(&[
            r#"{"ok":null}"#,
            r#"{"ok":null}"#,
            r#"{"ok":{"items":[]}}"#,
            r#"{"ok":true}"#,
        ]);
        store.save(save_req()).await.unwrap();
        let mut k = key("n", "k", &owner());
        k.signal = Some(3);
        store.load(&k).await.unwrap();
        store
            .list(ListCheckpoints {
                namespace: Some("n".into()),
                key_prefix: Some("t:".into()),
                owner: owner(),
                exact_owner: true,
                limit: Some(64),
                ..Default::default()
            })
            .await
            .unwrap();
        store.delete(&key("n", "k", &owner()), None).await.unwrap();
        let sent: Vec<Value> = log
            .lock()
            .unwrap()
            .iter()
            .map(|(_, r)| serde_json::from_str(r).unwrap())
            .collect();
        assert_eq!(
            sent,
            [
                json!({ "namespace": "n", "key": "k", "userId": "u", "version": 1, "expectedVersion": 0, "value": 1, "category": "artifact", "signal": 7 }),
                json!({ "namespace": "n", "key": "k", "userId": "u", "signal": 3 }),
                json!({ "namespace": "n", "keyPrefix": "t:", "userId": "u", "limit": 64 }),
                json!({ "namespace": "n", "key": "k", "userId": "u" }),
            ]
        );
    }

    #[tokio::test]
    async fn host_errors_map_to_typed_errors() {
        let conflict = r#"{"error":{"code":"ERR_PRISM_CHECKPOINT_CONFLICT","message":"lost"}}"#;
        let e = canned(conflict).save(save_req()).await.unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::CheckpointConflict, "lost")
        );
        assert!(canned(conflict)
            .load(&key("n", "k", &owner()))
            .await
            .unwrap()
            .is_none());
        let e = canned(conflict)
            .delete(&key("n", "k", &owner()), None)
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
            r#"{"ok":{"namespace":"n","key":"k","version":0,"userId":"u","value":1}}"#,
            r#"{"ok":{"namespace":"n","key":"k","version":1.5,"userId":"u","value":1}}"#,
            r#"{"ok":{"namespace":"n","key":"other","version":1,"userId":"u","value":1}}"#,
            r#"{"ok":{"namespace":"n","key":"k","version":1,"userId":"x","value":1}}"#,
            r#"{"ok":{"namespace":"n","key":"k","version":1,"userId":5,"value":1}}"#,
        ] {
            let e = canned(bad).save(save_req()).await.unwrap_err();
            assert_eq!(e.kind, ErrorKind::Internal, "{bad}");
        }
        for bad in [r#"{"ok":"yes"}"#, r#"{"ok":null}"#, r#"{"ok":1}"#] {
            let e = canned(bad)
                .delete(&key("n", "k", &owner()), None)
                .await
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Internal, "{bad}");
        }
        for bad in [
            r#"{"ok":null}"#,
            r#"{"ok":{"items":5}}"#,
            r#"{"ok":[]}"#,
            r#"{"ok":{"items":[],"nextCursor":3}}"#,
        ] {
            let e = canned(bad)
                .list(ListCheckpoints::default())
                .await
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Internal, "{bad}");
        }
    }

    #[tokio::test]
    async fn fails_closed_on_foreign_results() {
        let foreign = r#"{"ok":{"namespace":"n","key":"k","version":1,"userId":"x","value":1}}"#;
        assert!(canned(foreign)
            .load(&key("n", "k", &owner()))
            .await
            .unwrap()
            .is_none());
        let wider = r#"{"ok":{"namespace":"n","key":"k","version":1,"userId":"u","tenantId":"t","value":1}}"#;
        assert!(canned(wider)
            .load(&key("n", "k", &owner()))
            .await
            .unwrap()
            .is_none());
        let page = r#"{"ok":{"items":[
            {"namespace":"n","key":"a1","version":1,"userId":"u","value":1},
            {"namespace":"n","key":"a2","version":1,"userId":"x","value":1},
            {"namespace":"n","key":"a5","version":1,"userId":"u","tenantId":"t","value":1},
            {"namespace":"m","key":"a3","version":1,"userId":"u","value":1},
            {"namespace":"n","key":"b4","version":1,"userId":"u","value":1}
        ],"nextCursor":"c"}}"#;
        let q = ListCheckpoints {
            namespace: Some("n".into()),
            key_prefix: Some("a".into()),
            owner: owner(),
            exact_owner: true,
            ..Default::default()
        };
        let p = canned(page).list(q).await.unwrap();
        let keys: Vec<_> = p.items.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["a1"]);
        assert_eq!(p.next_cursor.as_deref(), Some("c"));
        // Missing timestamps and value are filled in; unknown members are ignored.
        let loaded =
            canned(r#"{"ok":{"namespace":"n","key":"k","version":2,"userId":"u","extra":true}}"#)
                .load(&key("n", "k", &owner()))
                .await
                .unwrap()
                .unwrap();
        assert_eq!(
            (loaded.created_at.len(), loaded.value.clone()),
            (24, Value::Null)
        );
    }

    #[tokio::test]
    async fn a_delete_at_a_version_loads_first_and_deletes_only_at_that_version() {
        let at = |v: u64| {
            format!(
                r#"{{"ok":{{"namespace":"n","key":"k","version":{v},"userId":"u","value":1}}}}"#
            )
        };
        let (store, log) = canned_log(&[&at(2)]);
        let e = store
            .delete(&key("n", "k", &owner()), Some(1))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::CheckpointConflict);
        assert_eq!(log.lock().unwrap().len(), 1, "no delete was sent");
        let (store, log) = canned_log(&[&at(1), r#"{"ok":true}"#]);
        assert!(store
            .delete(&key("n", "k", &owner()), Some(1))
            .await
            .unwrap());
        let ops: Vec<HostOp> = log.lock().unwrap().iter().map(|(op, _)| *op).collect();
        assert_eq!(ops, [HostOp::Load, HostOp::Delete]);
    }

    #[tokio::test]
    async fn requests_are_validated_before_the_host_is_called() {
        let (store, log) = canned_log(&[]);
        let mut bad = save_req();
        bad.version = 0;
        assert_eq!(
            store.save(bad).await.unwrap_err().kind,
            ErrorKind::CheckpointConflict
        );
        assert!(log.lock().unwrap().is_empty());
    }
}
