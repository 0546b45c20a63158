//! Service rules against a tiny in-test memory store (the real stores have their own
//! conformance suite; the JS suites run the service over them).

use super::*;
use crate::store::{BoxFuture, Page};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Default)]
struct MemStore {
    data: Mutex<BTreeMap<(String, String), Checkpoint>>,
    fail_saves: AtomicBool,
    saves: AtomicU64,
}

impl CheckpointStore for MemStore {
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            if self.fail_saves.load(Ordering::SeqCst) {
                return Err(PrismError::internal("disk on fire"));
            }
            let mut data = self.data.lock().unwrap();
            let k = (req.namespace.clone(), req.key.clone());
            let existing = data.get(&k);
            if let Some(e) = existing {
                if e.ownership != req.ownership {
                    return Err(PrismError::conflict("ownership"));
                }
            }
            let current = existing.map_or(0, |e| e.version);
            if let Some(exp) = req.expected_version {
                if exp != current {
                    return Err(PrismError::conflict("version"));
                }
            }
            let cp = Checkpoint {
                namespace: req.namespace,
                key: req.key,
                version: current + 1,
                ownership: req.ownership,
                category: req.category,
                value: req.value,
                created_at: existing.map_or_else(|| "now".into(), |e| e.created_at.clone()),
                updated_at: "now".into(),
            };
            data.insert(k, cp.clone());
            self.saves.fetch_add(1, Ordering::SeqCst);
            Ok(cp)
        })
    }
    fn load<'a>(
        &'a self,
        ns: &'a str,
        key: &'a str,
        own: &'a Ownership,
    ) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            let data = self.data.lock().unwrap();
            Ok(data
                .get(&(ns.to_string(), key.to_string()))
                .filter(|c| &c.ownership == own)
                .cloned())
        })
    }
    fn list(&self, q: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        Box::pin(async move {
            let data = self.data.lock().unwrap();
            let limit = q.limit.unwrap_or(50) as usize;
            let items: Vec<Checkpoint> = data
                .values()
                .filter(|c| c.namespace == q.namespace)
                .filter(|c| {
                    q.prefix
                        .as_ref()
                        .is_none_or(|p| c.key.starts_with(p.as_str()))
                })
                .filter(|c| q.ownership.as_ref().is_none_or(|o| &c.ownership == o))
                .filter(|c| {
                    q.cursor
                        .as_ref()
                        .is_none_or(|cur| c.key.as_str() > cur.as_str())
                })
                .take(limit + 1)
                .cloned()
                .collect();
            let more = items.len() > limit;
            let items: Vec<Checkpoint> = items.into_iter().take(limit).collect();
            let next_cursor = if more {
                items.last().map(|c| c.key.clone())
            } else {
                None
            };
            Ok(Page { items, next_cursor })
        })
    }
    fn delete<'a>(
        &'a self,
        ns: &'a str,
        key: &'a str,
        own: &'a Ownership,
        _e: Option<u64>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let mut data = self.data.lock().unwrap();
            let k = (ns.to_string(), key.to_string());
            if data.get(&k).is_some_and(|c| &c.ownership == own) {
                data.remove(&k);
                return Ok(true);
            }
            Ok(false)
        })
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
    serde_json::to_string(
        &store
            .data
            .lock()
            .unwrap()
            .values()
            .cloned()
            .collect::<Vec<_>>(),
    )
    .unwrap()
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
    let key = ("prism.artifact".to_string(), "thread-1:art_1".to_string());
    let cp = store.data.lock().unwrap().get(&key).cloned().unwrap();
    assert_eq!(cp.version, 1);
    assert_eq!(cp.category.as_deref(), Some("artifact"));
    // Without an id, a fresh one is generated each time.
    let a = run(&svc, "attach", json!({ "ownership": owner(), "threadId": "thread-1", "uri": "https://x", "mime": "m", "hash": "h" })).await.unwrap();
    let b = run(&svc, "attach", json!({ "ownership": owner(), "threadId": "thread-1", "uri": "https://x", "mime": "m", "hash": "h" })).await.unwrap();
    assert_ne!(a["id"], b["id"]);
    assert!(a["id"].as_str().unwrap().starts_with("art_"));
}

#[tokio::test]
async fn attach_event_and_revise_inherits_mime_and_resets_to_pending() {
    let (_, svc) = service();
    let out = svc
        .call(
            "attach",
            json!({ "ownership": owner(), "identity": identity(), "threadId": "thread-1", "id": "a",
                    "uri": "https://x", "mime": "text/markdown", "hash": "h1" }),
            &AbortFlag::new(),
        )
        .await
        .unwrap();
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
    // Attaching the same id under another owner never touches the existing record.
    let e = run(&svc, "attach", json!({ "ownership": other, "threadId": "thread-1", "id": "a", "uri": "https://z", "mime": "m", "hash": "h" })).await.unwrap_err();
    assert_eq!(reason(e), "invalid_id");
    assert_eq!(snapshot(&store), before);
}

#[tokio::test]
async fn caps_refuse_with_their_reasons_and_change_nothing() {
    let (store, svc) = service_with(
        json!({ "artifactsPerThread": 2, "revisionsPerArtifact": 2, "citationsPerRevision": 1, "recordBytes": 4000 }),
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
        (with("note", json!("n".repeat(1025))), "note_too_large"),
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
    let rec = Record {
        ..serde_json::from_value(attach(&svc, "a").await).unwrap()
    };
    let e = svc
        .save(
            &rec,
            rec.to_value(),
            &serde_json::from_value(owner()).unwrap(),
            7,
            &AbortFlag::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(reason(e), "conflict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reviewers_never_lose_or_duplicate_decisions() {
    let (_, svc) = service_with(json!({ "recordBytes": 65536 }), &[]);
    let svc = Arc::new(svc);
    attach(&svc, "a").await;
    for n in 2..=32 {
        revise(&svc, "a", n).await.unwrap();
    }
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
    assert!(conflicts > 0, "the test must actually race");
}

#[tokio::test]
async fn secrets_never_reach_the_store_results_or_events() {
    let (store, svc) = service_with(json!({}), &["sk-live-SECRET", "hunter2"]);
    let out = svc
        .call(
            "attach",
            json!({ "ownership": owner(), "identity": { "tenantId": "t1", "principal": { "kind": "user", "id": "hunter2" }, "scopes": [], "issuedAt": 0, "verified": true },
                    "threadId": "thread-1", "id": "a", "uri": "https://x/?token=sk-live-SECRET", "mime": "m", "hash": "h",
                    "note": "pw hunter2", "preview": { "sk-live-SECRET": ["hunter2", { "deep": "sk-live-SECRET" }] },
                    "citations": [{ "uri": "https://c", "excerpt": "hunter2" }] }),
            &AbortFlag::new(),
        )
        .await
        .unwrap();
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
    let t = link::verify(
        d["link"].as_str().unwrap(),
        SECRET,
        time::now_ms(),
        svc.limits(),
    )
    .unwrap();
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
    explicit["ttlSeconds"] = json!(301);
    assert_eq!(
        reason(
            run(&svc, "deliveryLink", explicit.clone())
                .await
                .unwrap_err()
        ),
        "invalid_input"
    );
    explicit["ttlSeconds"] = json!(60);
    explicit["version"] = json!(5);
    assert_eq!(
        reason(run(&svc, "deliveryLink", explicit).await.unwrap_err()),
        "not_found"
    );
}

#[tokio::test]
async fn list_pages_are_thread_and_owner_scoped() {
    let (_, svc) = service_with(json!({ "listPageSize": 2 }), &[]);
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
    let base = json!({ "ownership": owner(), "threadId": "thread-1", "artifactId": "a" });
    let with = |extra: Value| {
        let mut q = base.clone();
        for (k, v) in extra.as_object().unwrap() {
            q[k] = v.clone();
        }
        q
    };
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
                "note",
                "preview",
                "citations",
                "producer",
            ],
        ),
        (
            "list",
            json!({ "ownership": owner(), "threadId": "thread-1" }),
            vec!["limit", "cursor"],
        ),
        ("get", base.clone(), vec!["artifactId"]),
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
                "note",
                "preview",
                "citations",
                "producer",
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
            "reject",
            with(json!({ "version": 1, "reviewer": "user:r" })),
            vec!["version", "reviewer", "note"],
        ),
        ("lastValidated", base.clone(), vec!["artifactId"]),
        ("deliveryLink", base.clone(), vec!["version", "ttlSeconds"]),
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
                assert!(
                    matches!(e.kind, ErrorKind::Artifact(_)),
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
    assert_eq!(state["state"], "pending");
    assert!(!crate::artifacts::api::evidence_intact(&rec, &Value::Null).unwrap());
}

#[tokio::test]
async fn racing_attaches_never_leave_a_thread_over_its_cap() {
    let (store, svc) = service_with(json!({ "artifactsPerThread": 3 }), &[]);
    let svc = Arc::new(svc);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..12 {
        let svc = svc.clone();
        set.spawn(async move {
            run(
                &svc,
                "attach",
                json!({ "ownership": owner(), "threadId": "thread-1", "id": format!("r{i}"),
                        "uri": "https://blob.example/doc", "mime": "text/plain", "hash": "h" }),
            )
            .await
        });
    }
    let mut ok = 0;
    while let Some(joined) = set.join_next().await {
        match joined.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => assert_eq!(reason(e), "too_many_artifacts"),
        }
    }
    let stored = store.data.lock().unwrap().len();
    assert!(stored <= 3, "{stored} artifacts stored over a cap of 3");
    assert_eq!(
        stored, ok,
        "every success is stored, every refusal left nothing"
    );
    assert!(ok >= 1);
}
