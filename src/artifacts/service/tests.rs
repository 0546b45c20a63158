//! Service rules over the real memory store behind a switch that can fail saves (the
//! stores have their own conformance suite; the JS suites run the service over all of
//! them, host stores included).

use super::context::ABORTED;
use super::*;
use crate::artifacts::input::read_request;
use crate::artifacts::NAMESPACE;
use crate::store::{
    BesideText, BoxFuture, Checkpoint, CheckpointKey, ListCheckpoints, MemoryLimits, MemoryStore,
    Page, SaveCheckpoint, ValueMemo,
};
use serde_json::json;
use std::sync::atomic::AtomicBool;

struct MemStore {
    inner: MemoryStore,
    fail_saves: AtomicBool,
    saves: AtomicU64,
    /// Loads still to hold at the gate, and the gate ([`MemStore::hold_loads`]).
    load_gate: std::sync::Mutex<(usize, Option<Arc<tokio::sync::Barrier>>)>,
}

impl Default for MemStore {
    fn default() -> Self {
        Self {
            inner: MemoryStore::new(MemoryLimits::default()),
            fail_saves: AtomicBool::new(false),
            saves: AtomicU64::new(0),
            load_gate: std::sync::Mutex::new((0, None)),
        }
    }
}

impl MemStore {
    /// The next `n` loads wait for each other: all of them read before any goes on.
    fn hold_loads(&self, n: usize) {
        *crate::util::sync::lock(&self.load_gate) =
            (n, Some(Arc::new(tokio::sync::Barrier::new(n))));
    }

    /// The gate, when this load is one of those held.
    fn gate(&self) -> Option<Arc<tokio::sync::Barrier>> {
        let mut gate = crate::util::sync::lock(&self.load_gate);
        if gate.0 == 0 {
            return None;
        }
        gate.0 -= 1;
        gate.1.clone()
    }

    /// Every checkpoint, in listing order.
    fn all(&self) -> Vec<Checkpoint> {
        let page = futures_now(self.inner.list(ListCheckpoints {
            limit: Some(500),
            ..Default::default()
        }));
        page.unwrap().items
    }

    fn get(&self, key: &str, owner: &Ownership) -> Option<Checkpoint> {
        futures_now(self.inner.load(&CheckpointKey::new(NAMESPACE, key, owner))).unwrap()
    }
}

/// The memory store answers synchronously: drive its ready future once.
fn futures_now<T>(fut: BoxFuture<'_, T>) -> T {
    let mut fut = fut;
    let waker = std::task::Waker::noop();
    match fut
        .as_mut()
        .poll(&mut std::task::Context::from_waker(waker))
    {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the memory store is synchronous"),
    }
}

impl CheckpointStore for MemStore {
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            if self.fail_saves.load(Ordering::SeqCst) {
                return Err(PrismError::internal("disk on fire"));
            }
            let cp = self.inner.save(req).await?;
            self.saves.fetch_add(1, Ordering::SeqCst);
            Ok(cp)
        })
    }
    fn load<'a>(&'a self, key: &'a CheckpointKey) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            let out = self.inner.load(key).await;
            if let Some(gate) = self.gate() {
                gate.wait().await;
            }
            out
        })
    }
    fn list(&self, q: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        self.inner.list(q)
    }
    fn delete<'a>(&'a self, key: &'a CheckpointKey, e: Option<u64>) -> BoxFuture<'a, Result<bool>> {
        self.inner.delete(key, e)
    }
}

const SECRET: &[u8] = b"test-link-secret-0123456789";
const MARKER_TEXT: &str = crate::artifacts::redact::MARKER;

fn service_with(limits: Value, secrets: &[&str]) -> (Arc<MemStore>, ArtifactService) {
    let store = Arc::new(MemStore::default());
    let svc = ArtifactService::new(
        store.clone(),
        Arc::new(SecretRedactor::new(secrets).unwrap()),
        ServiceConfig {
            link_secret: SECRET.to_vec(),
            limits: ArtifactLimits::resolve(Some(&limits)).unwrap(),
            bodies: false,
            events: true,
        },
    );
    (store, svc)
}

fn service() -> (Arc<MemStore>, ArtifactService) {
    service_with(json!({}), &[])
}

fn owner() -> Value {
    json!({ "tenantId": "t1", "userId": "u1" })
}

fn identity() -> Value {
    json!({
        "tenantId": "t1", "userId": "u1",
        "principal": { "kind": "user", "id": "user-1" },
        "scopes": ["artifacts:write"], "issuedAt": "2026-01-01T00:00:00Z", "verified": true
    })
}

async fn run(svc: &ArtifactService, op: &str, input: Value) -> Result<Value> {
    svc.call(op, input, &AbortFlag::new())
        .await
        .map(|o| o.result)
}

/// The whole outcome (result and event) of a call that must succeed.
async fn outcome(svc: &ArtifactService, op: &str, input: Value) -> Outcome {
    svc.call(op, input, &AbortFlag::new()).await.unwrap()
}

async fn attach(svc: &ArtifactService, id: &str) -> Value {
    run(
        svc,
        "attach",
        json!({ "ownership": owner(), "identity": identity(), "threadId": "thread-1", "id": id,
                "uri": "https://blob.example/doc", "mime": "text/markdown", "hash": "sha256:aaa" }),
    )
    .await
    .unwrap()
}

async fn revise(svc: &ArtifactService, id: &str, n: u32) -> Result<Value> {
    run(
        svc,
        "revise",
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": id,
                "uri": format!("https://blob.example/doc-v{n}"), "hash": format!("sha256:{n}") }),
    )
    .await
}

fn reason(e: PrismError) -> &'static str {
    e.reason().unwrap_or("none")
}

fn snapshot(store: &MemStore) -> String {
    serde_json::to_string(&store.all()).unwrap()
}

fn owner_scope() -> Ownership {
    serde_json::from_value(owner()).unwrap()
}

#[tokio::test]
async fn attach_creates_revision_one_pending_and_is_idempotent_with_id() {
    let (store, svc) = service();
    let rec = attach(&svc, "art_1").await;
    assert_eq!(rec["id"], "art_1");
    assert_eq!(rec["state"], "pending");
    assert_eq!(rec["latestVersion"], 1);
    assert_eq!(rec["revisions"][0]["version"], 1);
    assert_eq!(rec["revisions"][0]["createdBy"], "user:user-1");
    assert!(rec.get("lastValidatedVersion").is_none());
    let again = run(
        &svc,
        "attach",
        json!({ "ownership": owner(), "threadId": "thread-1", "id": "art_1", "uri": "https://other", "mime": "text/plain", "hash": "h2" }),
    )
    .await
    .unwrap();
    assert_eq!(again, rec, "same id returns the existing record unchanged");
    assert_eq!(store.saves.load(Ordering::SeqCst), 1);
    let cp = store.get("thread-1:art_1", &owner_scope()).unwrap();
    assert_eq!(cp.version, 1);
    assert_eq!(cp.category.as_deref(), Some("artifact"));
    assert_eq!(
        cp.value["tenantId"], "t1",
        "ownership is flat on the record"
    );
    assert!(cp.value.get("ownership").is_none());
    // Without an id, a fresh one is generated each time.
    let a = run(&svc, "attach", json!({ "ownership": owner(), "threadId": "thread-1", "uri": "https://x", "mime": "m", "hash": "h" })).await.unwrap();
    let b = run(&svc, "attach", json!({ "ownership": owner(), "threadId": "thread-1", "uri": "https://x", "mime": "m", "hash": "h" })).await.unwrap();
    assert_ne!(a["id"], b["id"]);
    assert!(a["id"].as_str().unwrap().starts_with("art_"));
}

#[tokio::test]
async fn attach_event_and_revise_inherits_mime_and_resets_to_pending() {
    let (_, svc) = service();
    let out = outcome(
        &svc,
        "attach",
        json!({ "ownership": owner(), "identity": identity(), "threadId": "thread-1", "id": "a",
                    "uri": "https://x", "mime": "text/markdown", "hash": "h1" }),
    )
    .await;
    let e = out.event.unwrap();
    assert_eq!(
        (
            e["type"].as_str(),
            e["actor"].as_str(),
            e["version"].as_u64()
        ),
        (Some("artifact_attached"), Some("user:user-1"), Some(1))
    );
    run(&svc, "approve", json!({ "ownership": owner(), "identity": identity(), "threadId": "thread-1", "artifactId": "a", "version": 1 })).await.unwrap();
    let rec = revise(&svc, "a", 2).await.unwrap();
    assert_eq!(rec["revisions"][1]["mime"], "text/markdown");
    assert_eq!(rec["state"], "pending");
    assert_eq!(rec["lastValidatedVersion"], 1);
    let rec = run(&svc, "revise", json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "uri": "https://y", "hash": "h3", "mime": "text/html" })).await.unwrap();
    assert_eq!(rec["revisions"][2]["mime"], "text/html");
    assert_eq!(rec["latestVersion"], 3);
}

#[tokio::test]
async fn compare_flags_and_needs_two_distinct_revisions() {
    let (_, svc) = service();
    attach(&svc, "a").await;
    revise(&svc, "a", 2).await.unwrap();
    let base = json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a" });
    let mut q = base.clone();
    q["from"] = json!(1);
    q["to"] = json!(2);
    let c = run(&svc, "compare", q).await.unwrap();
    assert_eq!(
        c,
        json!({ "artifactId": "a", "from": 1, "to": 2, "changed": { "hash": true, "mime": false, "uri": true, "citations": false } })
    );
    let mut same = base.clone();
    same["from"] = json!(2);
    same["to"] = json!(2);
    assert_eq!(
        reason(run(&svc, "compare", same).await.unwrap_err()),
        "invalid_input"
    );
    let mut missing = base.clone();
    missing["from"] = json!(1);
    missing["to"] = json!(9);
    assert_eq!(
        reason(run(&svc, "compare", missing).await.unwrap_err()),
        "not_found"
    );
    let mut one = base;
    one["from"] = json!(1);
    assert_eq!(
        reason(run(&svc, "compare", one).await.unwrap_err()),
        "invalid_input"
    );
}

#[tokio::test]
async fn approve_advances_replaces_and_stamps_evidence_reject_keeps_last_validated() {
    let (_, svc) = service();
    run(
        &svc,
        "attach",
        json!({ "ownership": owner(), "threadId": "thread-1", "id": "a", "uri": "https://x", "mime": "m", "hash": "h",
                "citations": [{ "uri": "https://src/1", "sourceId": "s1", "contentHash": "c1", "excerpt": "e" }] }),
    )
    .await
    .unwrap();
    revise(&svc, "a", 2).await.unwrap();
    let d = |version: u64, reviewer: &str| json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": version, "reviewer": reviewer });
    let rec = run(&svc, "approve", d(1, "user:alice")).await.unwrap();
    assert_eq!(rec["lastValidatedVersion"], 1);
    let cites: Vec<crate::artifacts::model::Citation> =
        serde_json::from_value(rec["revisions"][0]["citations"].clone()).unwrap();
    assert_eq!(
        rec["approvals"][0]["evidenceDigest"],
        binding_digest(&cites)
    );
    let rec = run(&svc, "approve", d(2, "user:bob")).await.unwrap();
    assert_eq!(rec["lastValidatedVersion"], 2);
    assert_eq!(rec["state"], "approved");
    assert_eq!(
        rec["approvals"][1]["evidenceDigest"],
        crate::json::sha256_hex(b"[]")
    );
    // Re-approving version 2 replaces the earlier decision on it.
    let rec = run(&svc, "approve", d(2, "user:carol")).await.unwrap();
    assert_eq!(rec["approvals"].as_array().unwrap().len(), 2);
    assert_eq!(rec["approvals"][1]["reviewer"], "user:carol");
    // Approving an older version never moves lastValidated backwards.
    let rec = run(&svc, "approve", d(1, "user:dave")).await.unwrap();
    assert_eq!(rec["lastValidatedVersion"], 2);
    revise(&svc, "a", 3).await.unwrap();
    let rec = run(&svc, "reject", d(3, "user:erin")).await.unwrap();
    assert_eq!(rec["state"], "rejected");
    assert_eq!(rec["lastValidatedVersion"], 2);
    assert!(rec["approvals"][2].get("evidenceDigest").is_none());
    let lv = run(
        &svc,
        "lastValidated",
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a" }),
    )
    .await
    .unwrap();
    assert_eq!(lv["version"], 2);
    assert_eq!(lv["uri"], "https://blob.example/doc-v2");
    // A decision on a missing revision is not_found and changes nothing.
    assert_eq!(
        reason(run(&svc, "approve", d(9, "user:x")).await.unwrap_err()),
        "not_found"
    );
}

#[tokio::test]
async fn rejecting_the_validated_revision_revokes_it() {
    // Issue 17 point 1: attach, approve v1, reject v1 → not validated any more.
    let (_, svc) = service();
    attach(&svc, "a").await;
    let d = |version: u64| json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": version, "reviewer": "user:r" });
    let q = json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a" });
    run(&svc, "approve", d(1)).await.unwrap();
    let rec = run(&svc, "reject", d(1)).await.unwrap();
    assert!(rec.get("lastValidatedVersion").is_none(), "{rec}");
    let e = run(&svc, "lastValidated", q.clone()).await.unwrap_err();
    assert_eq!(reason(e), "not_validated");
    // deliveryLink defaults to the latest revision, not the revoked one.
    revise(&svc, "a", 2).await.unwrap();
    revise(&svc, "a", 3).await.unwrap();
    // Approve v1 and v3, reject v3: falls back to v1 (the newest still approved).
    run(&svc, "approve", d(1)).await.unwrap();
    run(&svc, "approve", d(3)).await.unwrap();
    let rec = run(&svc, "reject", d(3)).await.unwrap();
    assert_eq!(rec["lastValidatedVersion"], 1);
    assert_eq!(
        run(&svc, "lastValidated", q.clone()).await.unwrap()["version"],
        1
    );
    // Rejecting another version (v2) never clears it.
    let rec = run(&svc, "reject", d(2)).await.unwrap();
    assert_eq!(rec["lastValidatedVersion"], 1);
    // An approval replaced by a rejection no longer counts for the fallback.
    let rec = run(&svc, "reject", d(1)).await.unwrap();
    assert!(rec.get("lastValidatedVersion").is_none(), "{rec}");
    let link = run(&svc, "deliveryLink", q.clone()).await.unwrap();
    assert_eq!(link["token"]["version"], 3);
}

#[tokio::test]
async fn last_validated_fails_closed_before_any_approval() {
    let (_, svc) = service();
    attach(&svc, "a").await;
    let e = run(
        &svc,
        "lastValidated",
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a" }),
    )
    .await
    .unwrap_err();
    assert_eq!(reason(e), "not_validated");
    run(&svc, "reject", json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": 1, "reviewer": "user:r" })).await.unwrap();
    let e = run(
        &svc,
        "lastValidated",
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a" }),
    )
    .await
    .unwrap_err();
    assert_eq!(reason(e), "not_validated");
}

#[tokio::test]
async fn reviewer_ref_comes_from_identity_or_explicit_reviewer() {
    let (_, svc) = service();
    attach(&svc, "a").await;
    let base =
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": 1 });
    let e = run(&svc, "approve", base.clone()).await.unwrap_err();
    assert_eq!(reason(e), "invalid_input");
    let mut with_id = base.clone();
    with_id["identity"] = identity();
    let rec = run(&svc, "approve", with_id.clone()).await.unwrap();
    assert_eq!(rec["approvals"][0]["reviewer"], "user:user-1");
    with_id["reviewer"] = json!("service:ci-bot");
    let rec = run(&svc, "approve", with_id).await.unwrap();
    assert_eq!(rec["approvals"][0]["reviewer"], "service:ci-bot");
    let mut long = base;
    long["reviewer"] = json!("x".repeat(257));
    assert_eq!(
        reason(run(&svc, "approve", long).await.unwrap_err()),
        "invalid_input"
    );
}

#[tokio::test]
async fn identity_refusals() {
    let (store, svc) = service();
    attach(&svc, "a").await;
    let before = snapshot(&store);
    let cases = [
        ("verified", json!(false)),
        ("expiresAt", json!("2001-01-01T00:00:00Z")),
        ("revokedAt", json!("2001-01-01T00:00:00Z")),
        ("tenantId", json!("t2")),
        ("userId", json!("u2")),
    ];
    for (field, value) in cases {
        let mut id = identity();
        id[field] = value;
        let e = run(&svc, "approve", json!({ "ownership": owner(), "identity": id, "threadId": "thread-1", "artifactId": "a", "version": 1 }))
            .await
            .unwrap_err();
        assert_eq!(reason(e), "ownership", "{field}");
    }
    let mut no_verified = identity();
    no_verified.as_object_mut().unwrap().remove("verified");
    let e = run(&svc, "get", json!({ "ownership": owner(), "identity": no_verified, "threadId": "thread-1", "artifactId": "a" })).await.unwrap_err();
    assert_eq!(reason(e), "ownership");
    let mut future = identity();
    future["expiresAt"] = json!("2999-01-01T00:00:00Z");
    run(&svc, "get", json!({ "ownership": owner(), "identity": future, "threadId": "thread-1", "artifactId": "a" })).await.unwrap();
    assert_eq!(snapshot(&store), before);
}

#[tokio::test]
async fn cross_owner_access_is_not_found() {
    let (store, svc) = service();
    attach(&svc, "a").await;
    let before = snapshot(&store);
    let other = json!({ "tenantId": "t2" });
    for (op, extra) in [
        ("get", json!({})),
        ("revise", json!({ "uri": "https://z", "hash": "z" })),
        ("approve", json!({ "version": 1, "reviewer": "user:x" })),
        ("reject", json!({ "version": 1, "reviewer": "user:x" })),
        ("lastValidated", json!({})),
        ("deliveryLink", json!({})),
        ("compare", json!({ "from": 1, "to": 2 })),
    ] {
        let mut q = json!({ "ownership": other, "threadId": "thread-1", "artifactId": "a" });
        for (k, v) in extra.as_object().unwrap() {
            q[k] = v.clone();
        }
        assert_eq!(
            reason(run(&svc, op, q).await.unwrap_err()),
            "not_found",
            "{op}"
        );
    }
    let page = run(
        &svc,
        "list",
        json!({ "ownership": other, "threadId": "thread-1" }),
    )
    .await
    .unwrap();
    assert_eq!(page["items"], json!([]));
    assert_eq!(snapshot(&store), before);
    // The same id under another owner is another key: its own record, ours untouched.
    let theirs = run(&svc, "attach", json!({ "ownership": other, "threadId": "thread-1", "id": "a", "uri": "https://z", "mime": "m", "hash": "h" })).await.unwrap();
    assert_eq!(
        (theirs["tenantId"].as_str(), theirs.get("userId")),
        (Some("t2"), None)
    );
    let mine = store.get("thread-1:a", &owner_scope()).unwrap();
    assert_eq!(
        (mine.version, mine.value["revisions"][0]["uri"].as_str()),
        (1, Some("https://blob.example/doc"))
    );
    assert_eq!(store.all().len(), 2);
}

#[tokio::test]
async fn caps_refuse_with_their_reasons_and_change_nothing() {
    let (store, svc) = service_with(
        json!({ "artifactsPerThread": 2, "revisionsPerArtifact": 2, "citations": 1, "recordBytes": 4000 }),
        &[],
    );
    attach(&svc, "a").await;
    let before = snapshot(&store);
    let base = json!({ "ownership": owner(), "threadId": "thread-1", "id": "b", "uri": "https://x", "mime": "m", "hash": "h" });
    let with = |k: &str, v: Value| {
        let mut q = base.clone();
        q[k] = v;
        q
    };
    let cases = [
        (with("mime", json!("m".repeat(129))), "mime_too_large"),
        (with("hash", json!("h".repeat(257))), "hash_too_large"),
        (
            with("uri", json!(format!("https://x/{}", "u".repeat(2048)))),
            "uri_too_large",
        ),
        (
            with("changeNote", json!("n".repeat(1025))),
            "note_too_large",
        ),
        (with("producerRunId", json!("run 1")), "invalid_id"),
        (with("producerRunId", json!(":run")), "invalid_id"),
        (with("title", json!("t".repeat(257))), "title_too_large"),
        (
            with("preview", json!({ "x": "p".repeat(16 * 1024) })),
            "preview_too_large",
        ),
        (
            with(
                "citations",
                json!([{ "uri": "https://a" }, { "uri": "https://b" }]),
            ),
            "too_many_citations",
        ),
        (
            with(
                "citations",
                json!([{ "uri": "https://a", "excerpt": "e".repeat(2048) }]),
            ),
            "citation_too_large",
        ),
        (
            with("preview", json!({ "x": "p".repeat(4000) })),
            "record_too_large",
        ),
        (with("uri", json!("file:///etc/passwd")), "unsafe_uri"),
        (with("uri", json!("C:\\Users\\me\\doc.md")), "unsafe_uri"),
        (with("uri", json!("C:/Users/me/doc.md")), "unsafe_uri"),
        (with("uri", json!("\\\\server\\share\\doc")), "unsafe_uri"),
        (with("uri", json!("/home/me/doc.md")), "unsafe_uri"),
        (
            with("citations", json!([{ "uri": "file:///etc/passwd" }])),
            "unsafe_uri",
        ),
        (with("citations", json!([{ "uri": "D:\\x" }])), "unsafe_uri"),
        (with("id", json!("bad id")), "invalid_id"),
        (with("threadId", json!("a:b")), "invalid_id"),
    ];
    for (q, want) in cases {
        let e = run(&svc, "attach", q.clone()).await.unwrap_err();
        assert_eq!(reason(e), want, "{q}");
    }
    assert_eq!(snapshot(&store), before);
    run(&svc, "attach", base.clone()).await.unwrap();
    let e = run(&svc, "attach", with("id", json!("c")))
        .await
        .unwrap_err();
    assert_eq!(reason(e), "too_many_artifacts");
    // Another thread has its own count.
    let mut other_thread = with("id", json!("c"));
    other_thread["threadId"] = json!("thread-2");
    run(&svc, "attach", other_thread).await.unwrap();
    revise(&svc, "a", 2).await.unwrap();
    let e = revise(&svc, "a", 3).await.unwrap_err();
    assert_eq!(reason(e), "too_many_revisions");
    let e = run(&svc, "revise", json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "b", "uri": "file:/x", "hash": "h" })).await.unwrap_err();
    assert_eq!(reason(e), "unsafe_uri");
}

#[tokio::test]
async fn conflicts_are_retryable_and_a_throw_before_commit_persists_nothing() {
    let (store, svc) = service();
    attach(&svc, "a").await;
    let before = snapshot(&store);
    store.fail_saves.store(true, Ordering::SeqCst);
    let e = revise(&svc, "a", 2).await.unwrap_err();
    assert_eq!(e.message, "disk on fire");
    store.fail_saves.store(false, Ordering::SeqCst);
    assert_eq!(snapshot(&store), before);
    // Aborted between load and save: nothing saved.
    let flag = AbortFlag::new();
    flag.abort();
    let e = svc
        .call("approve", json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": 1, "reviewer": "user:r" }), &flag)
        .await
        .unwrap_err();
    assert_eq!(e.message, ABORTED);
    assert_eq!(snapshot(&store), before);
    // A stale CAS write is a conflict.
    let rec = Record::from_stored(attach(&svc, "a").await).unwrap();
    let text = rec.to_text();
    let never = AbortFlag::new();
    let key = svc.key(&rec.thread_id, &rec.id, &owner_scope(), &never);
    let e = svc
        .save(rec, &text, key, 7, None, &never)
        .await
        .unwrap_err();
    assert_eq!(reason(e), "conflict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reviewers_never_lose_or_duplicate_decisions() {
    let (store, svc) = service_with(json!({ "recordBytes": 65536 }), &[]);
    let svc = Arc::new(svc);
    attach(&svc, "a").await;
    for n in 2..=32 {
        revise(&svc, "a", n).await.unwrap();
    }
    // Every reviewer's first load reads the same record before any of them saves, so
    // they race whatever the machine's scheduling (all but one lose their first CAS).
    store.hold_loads(32);
    let mut tasks = Vec::new();
    for v in 1..=32u64 {
        let svc = svc.clone();
        tasks.push(tokio::spawn(async move {
            let op = if v.is_multiple_of(3) { "reject" } else { "approve" };
            let mut conflicts = 0;
            loop {
                let q = json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": v, "reviewer": format!("user:r{v}") });
                match run(&svc, op, q).await {
                    Ok(_) => return conflicts,
                    Err(e) if e.reason() == Some("conflict") => conflicts += 1,
                    Err(e) => panic!("{e}"),
                }
            }
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.unwrap();
    }
    let rec = run(
        &svc,
        "get",
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a" }),
    )
    .await
    .unwrap();
    let approvals = rec["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 32);
    for (i, a) in approvals.iter().enumerate() {
        let v = i as u64 + 1;
        assert_eq!(a["version"], v);
        assert_eq!(a["reviewer"], format!("user:r{v}"));
        assert_eq!(
            a["state"],
            if v.is_multiple_of(3) {
                "rejected"
            } else {
                "approved"
            }
        );
    }
    assert_eq!(rec["lastValidatedVersion"], 32);
    assert!(
        conflicts >= 31,
        "every reviewer but one lost its first race: {conflicts}"
    );
}

#[tokio::test]
async fn secrets_never_reach_the_store_results_or_events() {
    let (store, svc) = service_with(json!({}), &["sk-live-SECRET", "hunter2"]);
    let out = outcome(
        &svc,
        "attach",
        json!({ "ownership": owner(), "identity": { "tenantId": "t1", "principal": { "kind": "user", "id": "hunter2" }, "scopes": [], "issuedAt": 0, "verified": true },
                    "threadId": "thread-1", "id": "a", "uri": "https://x/?token=sk-live-SECRET", "mime": "m", "hash": "h",
                    "changeNote": "pw hunter2", "preview": { "sk-live-SECRET": ["hunter2", { "deep": "sk-live-SECRET" }] },
                    "citations": [{ "uri": "https://c", "excerpt": "hunter2" }] }),
    )
        .await;
    let approved = svc
        .call("approve", json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": 1, "reviewer": "user:hunter2", "note": "sk-live-SECRET" }), &AbortFlag::new())
        .await
        .unwrap();
    let all = format!(
        "{} {} {} {} {}",
        snapshot(&store),
        out.result,
        out.event.unwrap(),
        approved.result,
        approved.event.unwrap()
    );
    assert!(
        !all.contains("sk-live-SECRET") && !all.contains("hunter2"),
        "{all}"
    );
    assert!(all.contains("user:[REDACTED]"));
    // Error messages never quote a secret (here an unknown top-level field name).
    let e = run(
        &svc,
        "get",
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "hunter2": 1 }),
    )
    .await
    .unwrap_err();
    assert!(
        !e.message.contains("hunter2") && e.message.contains(MARKER_TEXT),
        "{}",
        e.message
    );
    // Ids and ownership holding a secret are refused, never silently merged.
    let e = run(
        &svc,
        "get",
        json!({ "ownership": owner(), "threadId": "hunter2", "artifactId": "a" }),
    )
    .await
    .unwrap_err();
    assert_eq!(reason(e), "invalid_id");
    let e = run(&svc, "get", json!({ "ownership": { "tenantId": "hunter2" }, "threadId": "thread-1", "artifactId": "a" })).await.unwrap_err();
    assert_eq!(reason(e), "ownership");
}

#[tokio::test]
async fn delivery_link_defaults_to_last_validated_else_latest() {
    let (_, svc) = service();
    attach(&svc, "a").await;
    revise(&svc, "a", 2).await.unwrap();
    let q = json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a" });
    let d = run(&svc, "deliveryLink", q.clone()).await.unwrap();
    assert_eq!(d["token"]["version"], 2);
    run(&svc, "approve", json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": 1, "reviewer": "user:r" })).await.unwrap();
    let d = run(&svc, "deliveryLink", q.clone()).await.unwrap();
    assert_eq!(d["token"]["version"], 1);
    let t = link::verify(d["link"].as_str().unwrap(), SECRET, 4096, time::now_ms()).unwrap();
    assert_eq!(
        (t.version, t.artifact_id.as_str(), t.thread_id.as_str()),
        (1, "a", "thread-1")
    );
    let issued = time::parse_iso(&t.issued_at).unwrap();
    assert_eq!(time::parse_iso(&t.expires_at).unwrap() - issued, 300_000);
    let mut explicit = q.clone();
    explicit["version"] = json!(2);
    explicit["ttlSeconds"] = json!(60);
    let d = run(&svc, "deliveryLink", explicit.clone()).await.unwrap();
    assert_eq!(d["token"]["version"], 2);
    for over in [json!(301), json!(0), json!(1.5), json!("60")] {
        explicit["ttlSeconds"] = over.clone();
        let e = run(&svc, "deliveryLink", explicit.clone())
            .await
            .unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::Range,
            "{over}: a RangeError, as the reference"
        );
    }
    explicit["ttlSeconds"] = json!(60);
    explicit["version"] = json!(5);
    assert_eq!(
        reason(run(&svc, "deliveryLink", explicit).await.unwrap_err()),
        "not_found"
    );
}

#[tokio::test]
async fn list_pages_are_thread_and_owner_scoped() {
    let (_, svc) = service_with(json!({ "listPageLimit": 2 }), &[]);
    for id in ["a", "b", "c"] {
        attach(&svc, id).await;
    }
    run(&svc, "attach", json!({ "ownership": owner(), "threadId": "thread-10", "id": "z", "uri": "https://x", "mime": "m", "hash": "h" })).await.unwrap();
    let p1 = run(
        &svc,
        "list",
        json!({ "ownership": owner(), "threadId": "thread-1", "limit": 100 }),
    )
    .await
    .unwrap();
    assert_eq!(
        p1["items"].as_array().unwrap().len(),
        2,
        "the page cap bounds the page"
    );
    let cursor = p1["nextCursor"].clone();
    let p2 = run(
        &svc,
        "list",
        json!({ "ownership": owner(), "threadId": "thread-1", "cursor": cursor }),
    )
    .await
    .unwrap();
    let ids: Vec<&str> = p1["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(p2["items"].as_array().unwrap())
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert!(p2.get("nextCursor").is_none());
}

#[tokio::test]
async fn bad_input_is_a_typed_error_and_changes_nothing() {
    let (store, svc) = service();
    attach(&svc, "a").await;
    revise(&svc, "a", 2).await.unwrap();
    let before = snapshot(&store);
    let mut deep = json!("x");
    for _ in 0..40 {
        deep = json!({ "d": deep });
    }
    let with = |extra: Value| on_artifact("a", extra);
    let ops: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "attach",
            json!({ "ownership": owner(), "threadId": "thread-1", "id": "q", "uri": "https://x", "mime": "m", "hash": "h" }),
            vec![
                "id",
                "uri",
                "mime",
                "hash",
                "size",
                "title",
                "kind",
                "changeNote",
                "preview",
                "citations",
                "producerRunId",
            ],
        ),
        (
            "list",
            json!({ "ownership": owner(), "threadId": "thread-1" }),
            vec!["limit", "cursor"],
        ),
        ("get", with(json!({})), vec!["artifactId"]),
        (
            "revise",
            with(json!({ "uri": "https://y", "hash": "h2" })),
            vec![
                "artifactId",
                "uri",
                "hash",
                "mime",
                "size",
                "title",
                "changeNote",
                "preview",
                "citations",
                "producerRunId",
            ],
        ),
        (
            "compare",
            with(json!({ "from": 1, "to": 2 })),
            vec!["from", "to"],
        ),
        (
            "approve",
            with(json!({ "version": 1, "reviewer": "user:r" })),
            vec!["version", "reviewer", "note"],
        ),
        (
            // Version 2: rejecting the validated version 1 would revoke it.
            "reject",
            with(json!({ "version": 2, "reviewer": "user:r" })),
            vec!["version", "reviewer", "note"],
        ),
        ("lastValidated", with(json!({})), vec!["artifactId"]),
        (
            "deliveryLink",
            with(json!({})),
            vec!["version", "ttlSeconds"],
        ),
    ];
    let bad_values = [
        json!(null),
        json!(-1),
        json!(1.5),
        json!("x".repeat(70_000)),
        json!({ "__proto__": { "polluted": true } }),
        json!([1]),
        deep.clone(),
        json!(true),
    ];
    for (op, good, fields) in &ops {
        for v in [
            json!(null),
            json!(1),
            json!("s"),
            json!([]),
            json!(true),
            deep.clone(),
        ] {
            let e = run(&svc, op, v.clone()).await.unwrap_err();
            assert!(matches!(e.kind, ErrorKind::Artifact(_)), "{op} {v}: {e:?}");
        }
        for field in fields.iter().chain(&["ownership", "threadId", "identity"]) {
            for bad in &bad_values {
                let mut q = good.clone();
                q[*field] = bad.clone();
                let e = run(&svc, op, q)
                    .await
                    .expect_err(&format!("{op}.{field} = {bad:.40}"));
                // A ttlSeconds out of range is the reference's RangeError.
                let range_ok = *field == "ttlSeconds" && e.kind == ErrorKind::Range;
                assert!(
                    matches!(e.kind, ErrorKind::Artifact(_)) || range_ok,
                    "{op}.{field}: {e:?}"
                );
            }
        }
        let mut unknown = good.clone();
        unknown["sneaky"] = json!(1);
        assert_eq!(
            reason(run(&svc, op, unknown).await.unwrap_err()),
            "invalid_input",
            "{op}"
        );
        let mut proto = good.clone();
        proto["__proto__"] = json!({ "admin": true });
        assert_eq!(
            reason(run(&svc, op, proto).await.unwrap_err()),
            "invalid_input",
            "{op}"
        );
        assert_eq!(snapshot(&store), before, "{op} changed the store");
    }
    // Every base request above is valid: each one succeeds as given.
    for (op, good, _) in &ops {
        run(&svc, op, good.clone())
            .await
            .unwrap_or_else(|e| panic!("{op}: {e:?}"));
    }
}

#[tokio::test]
async fn records_with_the_deepest_accepted_preview_pass_the_pure_functions() {
    let (_, svc) = service();
    let mut preview = json!("leaf");
    for _ in 0..30 {
        preview = json!({ "d": preview });
    }
    let rec = run(
        &svc,
        "attach",
        json!({ "ownership": owner(), "threadId": "thread-1", "id": "deep", "uri": "https://x", "mime": "m", "hash": "h", "preview": preview }),
    )
    .await
    .unwrap();
    let state = crate::artifacts::api::approval_state(&rec).unwrap();
    assert_eq!(state, "pending");
    assert!(!crate::artifacts::api::evidence_intact(&rec, &Value::Null).unwrap());
}

/// `n` attaches racing on `thread`: how many succeeded (the others must be refused with
/// `too_many_artifacts`).
async fn race_attaches(svc: Arc<ArtifactService>, thread: &str, n: usize) -> usize {
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let svc = svc.clone();
        let input = json!({ "ownership": owner(), "threadId": thread, "id": format!("r{i}"),
                            "uri": "https://blob.example/doc", "mime": "text/plain", "hash": "h" });
        set.spawn(async move { run(&svc, "attach", input).await });
    }
    let mut ok = 0;
    while let Some(joined) = set.join_next().await {
        match joined.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => assert_eq!(reason(e), "too_many_artifacts"),
        }
    }
    ok
}

#[tokio::test]
async fn racing_attaches_never_leave_a_thread_over_its_cap() {
    let (store, svc) = service_with(json!({ "artifactsPerThread": 3 }), &[]);
    let ok = race_attaches(Arc::new(svc), "thread-1", 12).await;
    let stored = store.inner.len();
    assert!(stored <= 3, "{stored} artifacts stored over a cap of 3");
    assert_eq!(
        stored, ok,
        "every success is stored, every refusal left nothing"
    );
    assert!(ok >= 1);
}

#[tokio::test]
async fn a_record_written_by_the_reference_service_loads_and_works() {
    let (store, svc) = service();
    // Exactly what @arnilo/prism-server's service stores: ownership flat, no state,
    // latestVersion or evidenceDigest, citations { uri, title?, kind? }.
    let value = json!({
        "id": "ref-1", "threadId": "thread-1", "tenantId": "t1", "userId": "u1", "title": "Doc",
        "revisions": [
            { "version": 1, "uri": "https://blob.example/v1", "mime": "text/markdown", "hash": "sha256:a",
              "size": 10, "changeNote": "first", "producerRunId": "run-1",
              "citations": [{ "uri": "https://wiki.example/p", "title": "P", "kind": "web" }],
              "createdAt": "2026-01-01T00:00:00.000Z" },
            { "version": 2, "uri": "https://blob.example/v2", "mime": "text/markdown", "hash": "sha256:b",
              "createdAt": "2026-01-02T00:00:00.000Z" }
        ],
        "approvals": [{ "version": 1, "state": "approved", "reviewer": "user:u1", "decidedAt": "2026-01-01T01:00:00.000Z" }],
        "lastValidatedVersion": 1,
        "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-02T00:00:00.000Z"
    });
    let mut save =
        crate::store::conformance::save(NAMESPACE, "thread-1:ref-1", &owner_scope(), 3, value);
    save.category = Some("artifact".into());
    store.inner.save(save).await.unwrap();
    let q = json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "ref-1" });
    let rec = run(&svc, "get", q.clone()).await.unwrap();
    assert_eq!(
        (rec["state"].as_str(), rec["latestVersion"].as_u64()),
        (Some("pending"), Some(2))
    );
    assert_eq!(rec["revisions"][0]["changeNote"], "first");
    assert_eq!(
        run(&svc, "lastValidated", q.clone()).await.unwrap()["version"],
        1
    );
    let mut approve = q.clone();
    approve["version"] = json!(2);
    approve["reviewer"] = json!("user:r");
    let rec = run(&svc, "approve", approve).await.unwrap();
    assert_eq!(
        (rec["state"].as_str(), rec["lastValidatedVersion"].as_u64()),
        (Some("approved"), Some(2))
    );
    let cp = store.get("thread-1:ref-1", &owner_scope()).unwrap();
    assert_eq!(
        cp.version, 4,
        "the service continues the reference's checkpoint versions"
    );
    assert_eq!(cp.value["revisions"][0]["citations"][0]["kind"], "web");
    let page = run(
        &svc,
        "list",
        json!({ "ownership": owner(), "threadId": "thread-1" }),
    )
    .await
    .unwrap();
    assert_eq!(page["items"][0]["id"], "ref-1");
}

#[tokio::test]
async fn decision_events_have_the_reference_shape() {
    let (_, svc) = service();
    let attached = outcome(
        &svc,
        "attach",
        json!({ "ownership": owner(), "identity": identity(), "threadId": "thread-1", "id": "a",
                    "uri": "https://x", "mime": "m", "hash": "h" }),
    )
    .await
    .event
    .unwrap();
    let keys = |e: &Value| e.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&attached),
        [
            "type",
            "artifactId",
            "threadId",
            "version",
            "actor",
            "timestamp",
            "tenantId",
            "userId"
        ]
    );
    assert!(time::parse_iso(attached["timestamp"].as_str().unwrap()).is_some());
    let approved = outcome(
        &svc,
        "approve",
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": 1, "reviewer": "user:r" }),
    )
        .await
        .event
        .unwrap();
    assert_eq!(
        keys(&approved),
        [
            "type",
            "artifactId",
            "threadId",
            "version",
            "reviewer",
            "timestamp",
            "tenantId",
            "userId",
            "state"
        ]
    );
    assert_eq!(
        (approved["type"].as_str(), approved["reviewer"].as_str()),
        (Some("artifact_approved"), Some("user:r"))
    );
}

/// Without a listener (`events: false`, what the binding sends when no `onDecision` is
/// set) mutations answer the same records and build no audit event (issue 13).
#[tokio::test]
async fn without_a_listener_mutations_answer_no_event_and_the_same_record() {
    let config = |events: bool| {
        let mut c = ServiceConfig::parse(
            &json!({ "linkSecretBase64": "dGVzdC1saW5rLXNlY3JldC0wMTIzNDU2Nzg5" }),
        )
        .unwrap();
        assert!(c.events, "events default to on");
        c.events = events;
        c
    };
    let quiet = ServiceConfig::parse(
        &json!({ "linkSecretBase64": "dGVzdC1saW5rLXNlY3JldC0wMTIzNDU2Nzg5", "events": false }),
    )
    .unwrap();
    assert!(!quiet.events);
    let mut answers = Vec::new();
    for events in [true, false] {
        let svc = ArtifactService::new(
            Arc::new(MemStore::default()),
            Arc::new(SecretRedactor::none()),
            config(events),
        );
        let ops = [
            (
                "attach",
                json!({ "ownership": owner(), "threadId": "thread-1", "id": "a", "uri": "https://x", "mime": "m", "hash": "h" }),
            ),
            (
                "revise",
                json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "uri": "https://y", "hash": "h2" }),
            ),
            (
                "approve",
                json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": 2, "reviewer": "user:r" }),
            ),
            (
                "reject",
                json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a", "version": 1, "reviewer": "user:r" }),
            ),
        ];
        let mut records = Vec::new();
        for (op, input) in ops {
            let out = outcome(&svc, op, input).await;
            assert_eq!(out.event.is_some(), events, "{op} with events {events}");
            let mut rec = out.result;
            // Stamps differ between the two runs; the rest must not.
            strip_stamps(&mut rec);
            records.push(rec);
        }
        answers.push(records);
    }
    assert_eq!(answers[0], answers[1]);
}

fn strip_stamps(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for k in ["createdAt", "updatedAt", "decidedAt"] {
                m.remove(k);
            }
            m.values_mut().for_each(strip_stamps);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_stamps),
        _ => {}
    }
}

/// A store with the reference's semantics: one key space per `(namespace, key)`, and
/// another owner's key rejected with a conflict (as `@arnilo/prism`'s stores do).
#[derive(Default)]
struct OneKeySpace(std::sync::Mutex<std::collections::BTreeMap<(String, String), Checkpoint>>);

impl OneKeySpace {
    fn check(&self, ns: &str, key: &str, owner: &Ownership) -> Result<Option<Checkpoint>> {
        let data = self.0.lock().unwrap();
        match data.get(&(ns.to_string(), key.to_string())) {
            Some(cp) if cp.owner != *owner => {
                Err(PrismError::conflict("Checkpoint ownership mismatch"))
            }
            other => Ok(other.cloned()),
        }
    }
}

impl CheckpointStore for OneKeySpace {
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        Box::pin(async move {
            let existing = self.check(&req.namespace, &req.key, &req.owner)?;
            let id = (req.namespace.clone(), req.key.clone());
            let cp = req.apply(existing.as_ref(), "now")?;
            self.0.lock().unwrap().insert(id, cp.clone());
            Ok(cp)
        })
    }
    fn load<'a>(&'a self, k: &'a CheckpointKey) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move { self.check(&k.namespace, &k.key, &k.owner) })
    }
    fn list(&self, q: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        let mut q = q;
        q.exact_owner = false;
        let items = self
            .0
            .lock()
            .unwrap()
            .values()
            .filter(|c| c.selected_by(&q))
            .cloned()
            .collect();
        Box::pin(async move {
            Ok(Page {
                items,
                next_cursor: None,
            })
        })
    }
    fn delete<'a>(&'a self, k: &'a CheckpointKey, _e: Option<u64>) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            self.check(&k.namespace, &k.key, &k.owner)?;
            Ok(self
                .0
                .lock()
                .unwrap()
                .remove(&(k.namespace.clone(), k.key.clone()))
                .is_some())
        })
    }
}

#[tokio::test]
async fn a_cross_owner_collision_in_one_key_space_is_answered_as_not_found() {
    let svc = ArtifactService::new(
        Arc::new(OneKeySpace::default()),
        Arc::new(SecretRedactor::none()),
        ServiceConfig {
            link_secret: SECRET.to_vec(),
            limits: ArtifactLimits::defaults(),
            bodies: false,
            events: true,
        },
    );
    attach(&svc, "taken").await;
    let other = json!({ "tenantId": "t2" });
    let claim = json!({ "ownership": other, "threadId": "thread-1", "id": "taken", "uri": "https://z", "mime": "m", "hash": "h" });
    let taken = run(&svc, "attach", claim).await.unwrap_err();
    let missing = run(
        &svc,
        "get",
        json!({ "ownership": other, "threadId": "thread-1", "artifactId": "taken" }),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (reason(taken.clone()), reason(missing.clone())),
        ("not_found", "not_found")
    );
    assert_eq!(
        taken.message, missing.message,
        "indistinguishable from a missing artifact"
    );
    // A free id under the other owner still attaches.
    let free = json!({ "ownership": other, "threadId": "thread-1", "id": "free", "uri": "https://z", "mime": "m", "hash": "h" });
    assert_eq!(run(&svc, "attach", free).await.unwrap()["tenantId"], "t2");
}

/// The `result` member of `get` thread-1/doc, as text (through `call_json`, the binding's path).
async fn get_result_text(svc: &ArtifactService) -> String {
    let get = json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "doc" });
    let text = get.to_string();
    let out = svc
        .call_json(
            "get",
            read_request(&text).unwrap(),
            &text,
            &AbortFlag::new(),
        )
        .await
        .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    serde_json::to_string(&v["result"]).unwrap()
}

/// Another writer's plain save of `value` over thread-1/doc at checkpoint version `over`.
async fn overwrite_doc(store: &MemoryStore, over: u64, value: Value) {
    overwrite(store, "thread-1:doc", over, value).await;
}

/// A request on artifact `id` of `thread-1` (the owner's), with `extra`'s members.
fn on_artifact(id: &str, extra: Value) -> Value {
    let mut v = json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": id });
    for (k, m) in extra.as_object().unwrap() {
        v[k] = m.clone();
    }
    v
}

/// A service over a native memory store (default limits, events as given).
fn over_memory_store(events: bool) -> (Arc<MemoryStore>, ArtifactService) {
    let store = Arc::new(MemoryStore::new(MemoryLimits::default()));
    let svc = ArtifactService::new(
        store.clone(),
        Arc::new(SecretRedactor::new(&["sk-never"]).unwrap()),
        ServiceConfig {
            link_secret: SECRET.to_vec(),
            limits: ArtifactLimits::resolve(None).unwrap(),
            bodies: false,
            events,
        },
    );
    (store, svc)
}

/// `get` over the memory store answers the text the service saved as stored (issue 13);
/// a text the service did not hand the store (a plain save over the record) is read and
/// written again, so the answer is the record's own form either way.
#[tokio::test]
async fn get_answers_its_own_saved_text_as_stored_and_rereads_any_other() {
    let (store, svc) = over_memory_store(true);
    attach(&svc, "doc").await;
    let approved = run(
        &svc,
        "approve",
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "doc",
                "version": 1, "reviewer": "user:r" }),
    )
    .await
    .unwrap();
    let key = CheckpointKey::new(NAMESPACE, "thread-1:doc", &owner_scope());
    let stored = store.load_text(&key).await.unwrap().unwrap();
    assert!(
        stored.value_as_given,
        "the service's own save is kept as given"
    );
    let answered = get_result_text(&svc).await;
    assert_eq!(answered, stored.value_text(), "answered as stored");
    assert_eq!(answered, serde_json::to_string(&approved).unwrap());
    let rec = Record::from_stored_text(&answered).unwrap();
    assert_eq!(
        rec.to_text(),
        answered,
        "the stored text is the record's own form"
    );
    // The service saved no value beside the text (`beside_text` is `Memo`): a load or
    // a listing reads the value back from the text.
    assert_eq!(store.beside_text(), BesideText::Memo);
    let as_value: Value = serde_json::from_str(&answered).unwrap();
    assert_eq!(store.load(&key).await.unwrap().unwrap().value, as_value);
    let listed = store
        .list(ListCheckpoints {
            namespace: Some(NAMESPACE.into()),
            owner: owner_scope(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].value, as_value);

    // A plain save of the same record with its members in reverse order.
    let Value::Object(members) = serde_json::from_str::<Value>(&answered).unwrap() else {
        unreachable!()
    };
    let reversed: serde_json::Map<String, Value> = members.into_iter().rev().collect();
    let reversed = Value::Object(reversed);
    overwrite_doc(&store, stored.version(), reversed.clone()).await;
    let restored = store.load_text(&key).await.unwrap().unwrap();
    assert!(!restored.value_as_given);
    assert_ne!(
        restored.value_text(),
        answered,
        "stored in another member order"
    );
    assert_eq!(
        get_result_text(&svc).await,
        answered,
        "read and written in the record's form"
    );

    // The same text handed as a host's `saveCheckpoint` crosses the binding: the value's
    // text kept as given, without a memo. It is not the service's own form either.
    let mut request = serde_json::to_value(owner_scope()).unwrap();
    request["namespace"] = json!(NAMESPACE);
    request["key"] = json!("thread-1:doc");
    request["version"] = json!(restored.version() + 1);
    request["expectedVersion"] = json!(restored.version());
    request["category"] = json!("artifact");
    let request = request.to_string();
    let request = format!("{},\"value\":{reversed}}}", &request[..request.len() - 1]);
    let (req, value) = crate::store::parse_save_text(&request).unwrap();
    store.save_text(req, Some(value.into())).await.unwrap();
    let handed = store.load_text(&key).await.unwrap().unwrap();
    assert_eq!(handed.value_text(), reversed.to_string(), "kept as given");
    assert!(!handed.value_as_given && handed.memo.is_none());
    assert_eq!(
        get_result_text(&svc).await,
        answered,
        "read and written in the record's form"
    );
}

/// The memory store keeps the service's parsed record beside the text it saved (issue 13:
/// a load need not parse its own text back). After every kind of write the memo is the
/// record its text reads as; a write of the key that did not come with a memo (the host
/// editing the record through the store's own API) drops it, and the next decision reads
/// the edited text, never the stale memo.
#[tokio::test]
async fn the_memory_store_memo_is_the_record_its_text_reads_as_and_no_other_write_keeps_it() {
    let (store, svc) = over_memory_store(false);
    let key = CheckpointKey::new(NAMESPACE, "thread-1:doc", &owner_scope());
    let memo_of = |cp: &crate::store::CheckpointText| {
        cp.memo
            .as_ref()
            .and_then(|m| m.cloned::<Record>())
            .expect("a memo of the service's record")
    };
    let with = |extra: Value| on_artifact("doc", extra);
    attach(&svc, "doc").await;
    let writes = [
        (
            "revise",
            with(json!({ "uri": "https://x/2", "hash": "sha256:2", "title": "T" })),
        ),
        (
            "approve",
            with(json!({ "version": 2, "reviewer": "user:r", "note": "ok" })),
        ),
        (
            "reject",
            with(json!({ "version": 1, "reviewer": "user:r" })),
        ),
        (
            "approve",
            with(json!({ "version": 1, "reviewer": "user:q" })),
        ),
    ];
    let cp = store.load_text(&key).await.unwrap().unwrap();
    assert_eq!(
        memo_of(&cp),
        Record::from_stored_text(cp.value_text()).unwrap()
    );
    for (op, input) in writes {
        let answered = run(&svc, op, input).await.unwrap();
        let cp = store.load_text(&key).await.unwrap().unwrap();
        let memo = memo_of(&cp);
        assert_eq!(
            memo,
            Record::from_stored_text(cp.value_text()).unwrap(),
            "{op}"
        );
        assert_eq!(
            memo.to_text(),
            cp.value_text(),
            "{op}: the memo writes its text"
        );
        assert_eq!(serde_json::to_value(&memo).unwrap(), answered, "{op}");
    }

    // The host edits the record through the store itself: no memo comes with it.
    let cp = store.load_text(&key).await.unwrap().unwrap();
    let mut edited: Value = serde_json::from_str(cp.value_text()).unwrap();
    edited["title"] = json!("edited by the host");
    store
        .save(SaveCheckpoint {
            namespace: NAMESPACE.into(),
            key: "thread-1:doc".into(),
            owner: owner_scope(),
            version: cp.version() + 1,
            expected_version: Some(cp.version()),
            fencing_token: None,
            value: edited,
            category: Some("artifact".into()),
            metadata: None,
            signal: Default::default(),
            // Even a memo handed with a plain save (no text) is not kept.
            memo: Some(ValueMemo::new(memo_of(&cp))),
        })
        .await
        .unwrap();
    let cp = store.load_text(&key).await.unwrap().unwrap();
    assert!(cp.memo.is_none() && !cp.value_as_given);
    let decided = run(
        &svc,
        "reject",
        with(json!({ "version": 2, "reviewer": "user:r" })),
    )
    .await
    .unwrap();
    assert_eq!(
        decided["title"], "edited by the host",
        "read from the edited text"
    );
    assert_eq!(decided["state"], "rejected");
    let cp = store.load_text(&key).await.unwrap().unwrap();
    assert_eq!(memo_of(&cp).title.as_deref(), Some("edited by the host"));
}

/// A revise or decision takes the memo of the record it replaces instead of copying it
/// (issue 13); reads leave it (they borrow it). A replacement refused after its load leaves the memo taken:
/// the next load reads the stored text, and answers the same record.
#[tokio::test]
async fn replacing_calls_take_the_memo_reads_copy_it_and_a_refused_one_reads_the_text_next() {
    let (store, svc) = over_memory_store(false);
    let key = CheckpointKey::new(NAMESPACE, "thread-1:doc", &owner_scope());
    let memo =
        |cp: &crate::store::CheckpointText| cp.memo.as_ref().and_then(|m| m.cloned::<Record>());
    let at = |extra: Value| on_artifact("doc", extra);
    attach(&svc, "doc").await;
    let cp = store.load_text(&key).await.unwrap().unwrap();
    let attached = memo(&cp).expect("the attach's memo");

    // Reads leave it.
    run(&svc, "get", at(json!({}))).await.unwrap();
    run(&svc, "deliveryLink", at(json!({ "version": 1 })))
        .await
        .unwrap();
    let cp = store.load_text(&key).await.unwrap().unwrap();
    assert_eq!(memo(&cp).as_ref(), Some(&attached), "reads leave the memo");

    // A decision on a revision the record lacks: refused after the load took the memo.
    let refused = run(
        &svc,
        "approve",
        at(json!({ "version": 9, "reviewer": "user:r" })),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.reason(), Some("not_found"));
    let cp = store.load_text(&key).await.unwrap().unwrap();
    assert!(
        cp.memo.is_some() && memo(&cp).is_none(),
        "taken, not copied"
    );
    assert_eq!(cp.version(), 1, "nothing saved");

    // The next loads read the text: the same record.
    let got = run(&svc, "get", at(json!({}))).await.unwrap();
    assert_eq!(got, serde_json::to_value(&attached).unwrap());
    let approved = run(
        &svc,
        "approve",
        at(json!({ "version": 1, "reviewer": "user:r" })),
    )
    .await
    .unwrap();
    assert_eq!(approved["state"], "approved");
    assert_eq!(approved["approvals"][0]["reviewer"], "user:r");
    let cp = store.load_text(&key).await.unwrap().unwrap();
    let now = memo(&cp).expect("the approval's own memo");
    assert_eq!(now, Record::from_stored_text(cp.value_text()).unwrap());
    assert_eq!(serde_json::to_value(&now).unwrap(), approved);

    // A revise takes the approval's memo; its save leaves a memo of its own record.
    let revised = run(
        &svc,
        "revise",
        at(json!({ "uri": "https://x/2", "hash": "sha256:2" })),
    )
    .await
    .unwrap();
    let cp = store.load_text(&key).await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(memo(&cp).expect("the revision's memo")).unwrap(),
        revised
    );
    assert_eq!(revised["approvals"], approved["approvals"]);
}

/// A memo is taken once, only as its own type; a copy is no longer answered after.
#[test]
fn a_memo_is_taken_once_and_only_as_its_type() {
    let memo = ValueMemo::new(String::from("record"));
    let kept = memo.clone();
    assert_eq!(memo.take::<u64>(), None, "another type leaves it");
    assert_eq!(kept.cloned::<String>().as_deref(), Some("record"));
    assert_eq!(memo.take::<String>().as_deref(), Some("record"));
    assert_eq!(kept.take::<String>(), None, "the clone shares the cell");
    assert_eq!(kept.cloned::<String>(), None);
}

/// A withdrawn memo answers nobody (neither a copy nor the value), and what it holds is
/// dropped with its last reference, not when it is withdrawn (the memory store hands that
/// reference to its drop thread).
#[test]
fn a_withdrawn_memo_answers_nobody_and_keeps_its_value_until_its_last_reference() {
    struct Tracked(Arc<std::sync::atomic::AtomicBool>);
    // A copy tracks nothing: only the memo's own value sets the flag.
    impl Clone for Tracked {
        fn clone(&self) -> Self {
            Self(Arc::default())
        }
    }
    impl Drop for Tracked {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let memo = ValueMemo::new(Tracked(dropped.clone()));
    let weak = memo.downgrade();
    assert!(memo.cloned::<Tracked>().is_some());
    assert!(!dropped.load(std::sync::atomic::Ordering::SeqCst));
    memo.withdraw();
    assert!(memo.cloned::<Tracked>().is_none());
    let upgraded = weak.upgrade().expect("still referenced");
    assert!(upgraded.take::<Tracked>().is_none(), "not taken either");
    assert!(
        !dropped.load(std::sync::atomic::Ordering::SeqCst),
        "kept until the last reference"
    );
    drop(upgraded);
    drop(memo);
    assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    assert!(weak.upgrade().is_none());
}

/// The memory store with every call it answers counted by name (`create_capped`
/// forwarded: the one-step create of issue 13).
struct Counting {
    inner: Arc<MemoryStore>,
    calls: std::sync::Mutex<Vec<&'static str>>,
}

impl Counting {
    fn note(&self, name: &'static str) {
        self.calls.lock().unwrap().push(name);
    }
    fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

impl Default for Counting {
    fn default() -> Self {
        Self {
            inner: Arc::new(MemoryStore::new(MemoryLimits::default())),
            calls: std::sync::Mutex::default(),
        }
    }
}

impl CheckpointStore for Counting {
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        self.note("save");
        self.inner.save(req)
    }
    fn save_text(
        &self,
        req: SaveCheckpoint,
        text: Option<String>,
    ) -> BoxFuture<'_, Result<crate::store::CheckpointText>> {
        self.note("save");
        self.inner.save_text(req, text)
    }
    fn load<'a>(&'a self, key: &'a CheckpointKey) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        self.note("load");
        self.inner.load(key)
    }
    fn load_text<'a>(
        &'a self,
        key: &'a CheckpointKey,
    ) -> BoxFuture<'a, Result<Option<crate::store::CheckpointText>>> {
        self.note("load");
        self.inner.load_text(key)
    }
    fn list(&self, q: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        self.note("list");
        self.inner.list(q)
    }
    fn count(&self, q: &ListCheckpoints, cap: u64) -> Option<BoxFuture<'_, Result<u64>>> {
        self.note("count");
        self.inner.count(q, cap)
    }
    fn delete<'a>(&'a self, key: &'a CheckpointKey, e: Option<u64>) -> BoxFuture<'a, Result<bool>> {
        self.note("delete");
        self.inner.delete(key, e)
    }
    fn beside_text(&self) -> BesideText {
        self.inner.beside_text()
    }
    fn create_capped(
        &self,
        req: SaveCheckpoint,
        text: Option<String>,
        within: &ListCheckpoints,
        cap: u64,
    ) -> Option<BoxFuture<'_, Result<crate::store::Capped>>> {
        self.note("create_capped");
        self.inner.create_capped(req, text, within, cap)
    }
}

/// Issue 13: over a store that counts and creates in one step, an attach is one store
/// call (no count before, no recount after); an attached id answers its record (the
/// create's conflict, then one load) even when the thread is full; a full thread refuses
/// with the count; racing attaches fill the cap exactly (none withdrawn).
#[tokio::test]
async fn attach_over_a_one_step_capped_create_is_one_store_call() {
    let store = Arc::new(Counting::default());
    let svc = ArtifactService::new(
        store.clone(),
        Arc::new(SecretRedactor::none()),
        ServiceConfig {
            link_secret: SECRET.to_vec(),
            limits: ArtifactLimits::resolve(Some(&json!({ "artifactsPerThread": 3 }))).unwrap(),
            bodies: false,
            events: true,
        },
    );
    let input = |id: &str| {
        json!({ "ownership": owner(), "threadId": "thread-1", "id": id,
                "uri": "https://blob.example/doc", "mime": "text/plain", "hash": "h" })
    };
    let first = run(&svc, "attach", input("a")).await.unwrap();
    assert_eq!(store.take(), ["create_capped"]);
    let again = run(&svc, "attach", input("a")).await.unwrap();
    assert_eq!(again, first, "an attached id answers its record");
    assert_eq!(store.take(), ["create_capped", "load"]);
    for id in ["b", "c"] {
        run(&svc, "attach", input(id)).await.unwrap();
    }
    store.take();
    let full = run(&svc, "attach", input("d")).await.unwrap_err();
    assert_eq!(reason(full.clone()), "too_many_artifacts");
    assert!(
        full.message.contains("already holds 3 artifacts"),
        "{}",
        full.message
    );
    assert_eq!(store.take(), ["create_capped"]);
    let again = run(&svc, "attach", input("b")).await.unwrap();
    assert_eq!(
        again["id"], "b",
        "an attached id answers its record when full"
    );
    // Racing attaches on a fresh thread: exactly the cap succeeds.
    assert_eq!(race_attaches(Arc::new(svc), "thread-2", 12).await, 3);
    assert!(!store.take().contains(&"delete"), "nothing withdrawn");
}

/// `call_json` answers `{"result":<text>}` with `,"event":<text>` when someone listens,
/// the result written once into the answer (issue 13): a decision's answer is exactly
/// the saved record's text (as the store keeps it) inside that frame, and a result that
/// holds a registered secret is answered redacted, never as written.
#[tokio::test]
async fn answers_frame_the_saved_text_with_the_event_and_redact_a_secret() {
    for events in [false, true] {
        let (store, svc) = over_memory_store(events);
        attach(&svc, "doc").await;
        let request = on_artifact("doc", json!({ "version": 1, "reviewer": "user:r" }));
        let text = request.to_string();
        let out = svc
            .call_json(
                "approve",
                read_request(&text).unwrap(),
                &text,
                &AbortFlag::new(),
            )
            .await
            .unwrap();
        let key = CheckpointKey::new(NAMESPACE, "thread-1:doc", &owner_scope());
        let stored = store.load_text(&key).await.unwrap().unwrap();
        let framed = format!("{{\"result\":{}", stored.value_text());
        assert!(out.starts_with(&framed), "{out}");
        let answer: Value = serde_json::from_str(&out).unwrap();
        let members: Vec<&String> = answer.as_object().unwrap().keys().collect();
        if events {
            assert_eq!(members, ["result", "event"]);
            assert_eq!(answer["event"]["type"], "artifact_approved");
            assert_eq!(answer["event"]["reviewer"], "user:r");
            assert_eq!(out, format!("{framed},\"event\":{}}}", answer["event"]));
        } else {
            assert_eq!(members, ["result"]);
            assert_eq!(out, format!("{framed}}}"));
        }
    }
    // A stored record holding the registered secret (written by another writer: the
    // service redacts what it is asked to save): answered redacted, the frame's text
    // walked and written again.
    let (store, svc) = over_memory_store(false);
    attach(&svc, "doc").await;
    let key = CheckpointKey::new(NAMESPACE, "thread-1:doc", &owner_scope());
    let stored = store.load(&key).await.unwrap().unwrap();
    let mut value = stored.value.clone();
    value["title"] = json!("key sk-never");
    overwrite_doc(&store, stored.version, value).await;
    let answered = get_result_text(&svc).await;
    assert!(!answered.contains("sk-never"), "{answered}");
    let answer: Value = serde_json::from_str(&answered).unwrap();
    assert_eq!(answer["id"], "doc");
    assert!(answer["title"].as_str().unwrap().starts_with("key "));
}

/// `call_json` of `op` on `request`: the answer's `result` as the text it was written in.
async fn result_text(svc: &ArtifactService, op: &str, request: Value) -> String {
    let text = request.to_string();
    let out = svc
        .call_json(op, read_request(&text).unwrap(), &text, &AbortFlag::new())
        .await
        .unwrap();
    let start = "{\"result\":".len();
    assert!(out.starts_with("{\"result\":") && out.ends_with('}'));
    out[start..out.len() - 1].to_string()
}

/// Another writer's plain save of `value` under `key` at checkpoint version `over`.
async fn overwrite(store: &MemoryStore, key: &str, over: u64, value: Value) {
    store
        .save(SaveCheckpoint {
            namespace: NAMESPACE.into(),
            key: key.into(),
            owner: owner_scope(),
            version: over + 1,
            expected_version: Some(over),
            fencing_token: None,
            value,
            category: Some("artifact".into()),
            metadata: None,
            signal: Default::default(),
            memo: None,
        })
        .await
        .unwrap();
}

/// `list` answers each record's text as `get` answers it (as stored where the memory store
/// kept the service's own text, read and written again where it did not: a host's plain
/// save), only the thread's own records (a record of thread `u` saved under a key of
/// thread `t` is not listed with `t`) and only the owner's (issue 13: the listing is
/// written as text).
#[tokio::test]
async fn list_answers_each_record_as_get_does_and_only_the_threads_own() {
    let (store, svc) = over_memory_store(false);
    let attach_in = |thread: &str, id: &str| json!({ "ownership": owner(), "threadId": thread, "id": id, "uri": "https://x/\u{e9}\"q", "mime": "m", "hash": "h", "title": "T" });
    for (thread, id) in [("t", "a"), ("u", "x"), ("t", "b"), ("t", "doc")] {
        run(&svc, "attach", attach_in(thread, id)).await.unwrap();
    }
    run(&svc, "approve", json!({ "ownership": owner(), "threadId": "t", "artifactId": "b", "version": 1, "reviewer": "user:r" }))
        .await
        .unwrap();
    // `b`'s text rewritten by a plain save in reverse member order: not the service's form.
    let key = CheckpointKey::new(NAMESPACE, "t:b", &owner_scope());
    let stored = store.load_text(&key).await.unwrap().unwrap();
    let Value::Object(members) = serde_json::from_str::<Value>(stored.value_text()).unwrap() else {
        unreachable!()
    };
    let reversed: serde_json::Map<String, Value> = members.into_iter().rev().collect();
    overwrite(&store, "t:b", stored.version(), Value::Object(reversed)).await;
    let get = |thread: &'static str, id: &'static str| {
        result_text(
            &svc,
            "get",
            json!({ "ownership": owner(), "threadId": thread, "artifactId": id }),
        )
    };
    let (a, b, doc, x) = (
        get("t", "a").await,
        get("t", "b").await,
        get("t", "doc").await,
        get("u", "x").await,
    );
    // Thread `u`'s record also saved under `t:x` (a key with thread `t`'s prefix).
    overwrite(&store, "t:x", 0, serde_json::from_str(&x).unwrap()).await;
    assert_eq!(
        result_text(
            &svc,
            "list",
            json!({ "ownership": owner(), "threadId": "t" })
        )
        .await,
        format!("{{\"items\":[{a},{b},{doc}]}}"),
        "the thread's records as get answers them, in key order"
    );
    assert_eq!(
        result_text(
            &svc,
            "list",
            json!({ "ownership": owner(), "threadId": "u" })
        )
        .await,
        format!("{{\"items\":[{x}]}}")
    );
    // A page and its cursor, written after the items.
    let page = result_text(
        &svc,
        "list",
        json!({ "ownership": owner(), "threadId": "t", "limit": 2 }),
    )
    .await;
    let page: Value = serde_json::from_str(&page).unwrap();
    assert_eq!(
        page.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["items", "nextCursor"]
    );
    assert_eq!(
        page["items"],
        serde_json::from_str::<Value>(&format!("[{a},{b}]")).unwrap()
    );
    // Another owner lists nothing of these.
    let other = json!({ "ownership": { "tenantId": "other" }, "threadId": "t" });
    assert_eq!(result_text(&svc, "list", other).await, "{\"items\":[]}");
}

/// `compare`, `lastValidated` and `deliveryLink` borrow the memory store's memo of the
/// record (issue 13: no copy of it) and answer exactly what they answer from the stored
/// text once no memo is kept (a host's plain save over the record); another owner's call
/// is `not_found` either way.
#[tokio::test]
async fn reads_borrow_the_memo_and_answer_as_from_the_text() {
    let (store, svc) = over_memory_store(false);
    let key = CheckpointKey::new(NAMESPACE, "thread-1:doc", &owner_scope());
    let at = |extra: Value| on_artifact("doc", extra);
    attach(&svc, "doc").await;
    revise(&svc, "doc", 2).await.unwrap();
    run(
        &svc,
        "approve",
        at(json!({ "version": 1, "reviewer": "user:r" })),
    )
    .await
    .unwrap();
    let reads = || async {
        let compare = run(&svc, "compare", at(json!({ "from": 1, "to": 2 })))
            .await
            .unwrap();
        let validated = run(&svc, "lastValidated", at(json!({}))).await.unwrap();
        let link = run(&svc, "deliveryLink", at(json!({}))).await.unwrap();
        let token = &link["token"];
        let bound = json!([token["artifactId"], token["threadId"], token["version"]]);
        let missing = run(&svc, "compare", at(json!({ "from": 1, "to": 9 })))
            .await
            .unwrap_err();
        let mut others = Vec::new();
        for (op, extra) in [
            ("compare", json!({ "from": 1, "to": 2 })),
            ("lastValidated", json!({})),
            ("deliveryLink", json!({})),
        ] {
            let mut request = at(extra);
            request["ownership"] = json!({ "tenantId": "other" });
            others.push(
                run(&svc, op, request)
                    .await
                    .unwrap_err()
                    .reason()
                    .map(str::to_string),
            );
        }
        (
            compare,
            validated,
            bound,
            missing.reason().map(str::to_string),
            others,
        )
    };
    let with_memo = reads().await;
    let cp = store.load_text(&key).await.unwrap().unwrap();
    assert!(cp.value_as_given);
    assert!(
        cp.memo
            .as_ref()
            .and_then(|m| m.cloned::<Record>())
            .is_some(),
        "the reads left the memo"
    );
    assert_eq!(with_memo.1["version"], 1, "the approved revision");
    assert_eq!(
        with_memo.2,
        json!(["doc", "thread-1", 1]),
        "the link binds the validated revision"
    );
    assert_eq!(with_memo.3.as_deref(), Some("not_found"));
    assert_eq!(with_memo.4, vec![Some("not_found".to_string()); 3]);

    // The same record saved by someone else, its members in reverse order: no memo.
    let Value::Object(members) = serde_json::from_str::<Value>(cp.value_text()).unwrap() else {
        unreachable!()
    };
    overwrite_doc(
        &store,
        cp.version(),
        Value::Object(members.into_iter().rev().collect()),
    )
    .await;
    let cp = store.load_text(&key).await.unwrap().unwrap();
    assert!(!cp.value_as_given && cp.memo.is_none());
    assert_eq!(reads().await, with_memo, "the same answers from the text");
}

/// A service over SQLite persistence `p` (default limits, events on).
fn over_sqlite(p: &crate::store::SqlitePersistence) -> ArtifactService {
    ArtifactService::new(
        p.checkpoints(),
        Arc::new(SecretRedactor::new::<&str>(&[]).unwrap()),
        ServiceConfig {
            link_secret: SECRET.to_vec(),
            limits: ArtifactLimits::resolve(None).unwrap(),
            bodies: false,
            events: true,
        },
    )
}

/// Revise, approve and reject replace a record from the store's memory of this service's
/// own last write of it, without a read (issue 13). Another writer of the same file
/// (another persistence: another process alike) makes that memory stale; each call
/// then acts on what is stored, exactly as if it had read it: the other writer's
/// revision is there to approve, a record the other writer deleted and created again at
/// the same version (another title) is the one decided (not overwritten with the stale
/// one), and an artifact the other writer deleted is not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_another_writer_replaced_is_decided_as_stored_not_as_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a.db");
    let opts = crate::store::SqliteOptions::new(file.to_str().unwrap(), None).unwrap();
    let (pa, pb) = (
        crate::store::SqlitePersistence::new(opts.clone()),
        crate::store::SqlitePersistence::new(opts),
    );
    let (a, b) = (over_sqlite(&pa), over_sqlite(&pb));
    let store_a = pa.checkpoints();
    let key = CheckpointKey::new(NAMESPACE, "thread-1:doc", &owner_scope());
    let decide = |id: &str, version: u64, op: &str| {
        json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": id,
                "version": version, "reviewer": format!("user:{op}") })
    };

    attach(&a, "doc").await;
    assert_eq!(store_a.recent_write(&key).unwrap().version, 1);
    // The other writer revises: a's memory still says one revision.
    assert_eq!(revise(&b, "doc", 2).await.unwrap()["latestVersion"], 2);
    let approved = run(&a, "approve", decide("doc", 2, "a")).await.unwrap();
    assert_eq!(approved["lastValidatedVersion"], 2);
    assert_eq!(approved["revisions"].as_array().unwrap().len(), 2);
    assert_eq!(store_a.recent_write(&key).unwrap().version, 3);
    // a's own next change needs no read: the memory is current.
    let revised = revise(&a, "doc", 3).await.unwrap();
    assert_eq!(revised["latestVersion"], 3);
    assert_eq!(revised["approvals"].as_array().unwrap().len(), 1);

    // The other writer deletes the record and writes one of its own at the version a
    // remembers (checkpoint 4), under another title.
    let stored = pb.checkpoints().load(&key).await.unwrap().unwrap();
    assert_eq!(stored.version, 4);
    let mut theirs = stored.value.clone();
    theirs["title"] = json!("theirs");
    assert!(pb.checkpoints().delete(&key, None).await.unwrap());
    for v in 1..=4 {
        let mut req = crate::store::conformance::cas(
            NAMESPACE,
            "thread-1:doc",
            &owner_scope(),
            v - 1,
            theirs.clone(),
        );
        req.category = Some(crate::artifacts::CATEGORY.into());
        pb.checkpoints().save(req).await.unwrap();
    }
    let rejected = run(&a, "reject", decide("doc", 3, "a")).await.unwrap();
    assert_eq!(rejected["title"], "theirs", "decided as stored: {rejected}");
    let now = pb.checkpoints().load(&key).await.unwrap().unwrap();
    assert_eq!((now.version, &now.value["title"]), (5, &json!("theirs")));

    // Deleted by the other writer: not found, as a read would tell.
    assert!(pb.checkpoints().delete(&key, None).await.unwrap());
    let e = run(&a, "approve", decide("doc", 1, "a")).await.unwrap_err();
    assert_eq!(reason(e), "not_found");
    pa.close().await.unwrap();
    pb.close().await.unwrap();
}
