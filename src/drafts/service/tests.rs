//! Service rules over the real memory store (the JS suites run the service over SQLite,
//! PostgreSQL and host stores too).

use super::*;
use crate::store::{ListCheckpoints, MemoryLimits, MemoryStore};
use serde_json::json;

fn service_with(
    policy: Option<Arc<dyn RecipientPolicy>>,
    reapprove: bool,
    secrets: &[&str],
) -> (Arc<MemoryStore>, WorkDraftService) {
    let store = Arc::new(MemoryStore::new(MemoryLimits::default()));
    let svc = WorkDraftService::new(
        store.clone(),
        Arc::new(SecretRedactor::new(secrets).unwrap()),
        policy,
        DraftConfig {
            limits: DraftLimits::default(),
            edits_require_reapproval: reapprove,
        },
    );
    (store, svc)
}

fn service() -> WorkDraftService {
    service_with(None, false, &[]).1
}

fn owner() -> Value {
    json!({ "tenantId": "t1", "userId": "u1" })
}

fn mail() -> Value {
    json!({
        "ownership": owner(), "threadId": "th", "draftId": "d1", "provider": "mail", "op": "send",
        "payload": { "to": ["a@x.test", "b@x.test"], "subject": "Hi", "body": "text" },
        "schema": {
            "type": "object",
            "properties": {
                "to": { "type": "array", "items": { "type": "string" } },
                "cc": { "type": "array", "items": { "type": "string" } },
                "subject": { "type": "string" }, "body": { "type": "string" }
            },
            "required": ["to", "subject"], "additionalProperties": false
        },
        "recipients": ["/to", "/cc"],
        "author": "agent:a1"
    })
}

async fn call(svc: &WorkDraftService, op: &str, v: Value) -> Result<Value> {
    svc.call(op, v, &AbortFlag::new()).await.map(|o| o.result)
}

fn decide(version: u64, extra: Value) -> Value {
    let mut v = json!({ "ownership": owner(), "threadId": "th", "draftId": "d1", "expectedVersion": version, "decision": "approve", "reviewer": "user:r" });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn reason(r: Result<Value>) -> Option<&'static str> {
    r.err().and_then(|e| e.reason())
}

#[tokio::test]
async fn create_is_idempotent_by_id_and_digest_binds_the_payload() {
    let svc = service();
    let d = call(&svc, "create", mail()).await.unwrap();
    assert_eq!(
        (
            d["version"].clone(),
            d["latestRevision"].clone(),
            d["status"].clone()
        ),
        (json!(1), json!(1), json!("pending"))
    );
    assert_eq!(
        d["revisions"][0]["payloadDigest"],
        json!(payload::digest(&mail()["payload"]))
    );
    assert_eq!(d["revisions"][0]["author"], "agent:a1");
    assert_eq!(call(&svc, "create", mail()).await.unwrap(), d);
    let mut other = mail();
    other["payload"]["subject"] = json!("Other");
    assert_eq!(reason(call(&svc, "create", other).await), Some("conflict"));
}

#[tokio::test]
async fn approve_with_edits_appends_a_revision_and_invalidates_old_approvals() {
    let svc = service();
    call(&svc, "create", mail()).await.unwrap();
    let d = call(&svc, "decide", decide(1, json!({}))).await.unwrap();
    assert_eq!(
        (d["status"].clone(), d["version"].clone()),
        (json!("approved"), json!(2))
    );
    let old_digest = d["revisions"][0]["payloadDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let edit = json!({ "to": ["a@x.test"], "subject": "Hi", "body": "edited" });
    let d = call(
        &svc,
        "decide",
        decide(2, json!({ "modifiedArguments": edit })),
    )
    .await
    .unwrap();
    assert_eq!(d["latestRevision"], 2);
    assert_eq!(
        d["revisions"][1]["payloadDigest"],
        json!(payload::digest(&edit))
    );
    assert!(d["approvals"][0]["invalidatedAt"].is_string());
    assert_eq!(d["approvals"][1]["revision"], 2);
    assert!(d["approvals"][1].get("invalidatedAt").is_none());
    // The old approval no longer lets the old payload run.
    let claim = |digest: &str, v: u64| json!({ "ownership": owner(), "threadId": "th", "draftId": "d1", "expectedVersion": v, "payloadDigest": digest });
    assert_eq!(
        reason(call(&svc, "claimExecution", claim(&old_digest, 3)).await),
        Some("not_approved")
    );
    let new_digest = payload::digest(&edit);
    let d = call(&svc, "claimExecution", claim(&new_digest, 3))
        .await
        .unwrap();
    assert_eq!(d["status"], "executing");
    assert_eq!(
        reason(call(&svc, "claimExecution", claim(&new_digest, 4)).await),
        Some("already_executed")
    );
    let done = json!({ "ownership": owner(), "threadId": "th", "draftId": "d1", "expectedVersion": 4, "outcome": { "messageId": "m1" } });
    let d = call(&svc, "markExecuted", done.clone()).await.unwrap();
    assert_eq!(d["status"], "executed");
    let mut again = done;
    again["expectedVersion"] = json!(5);
    assert_eq!(
        reason(call(&svc, "markExecuted", again).await),
        Some("already_executed")
    );
}

#[tokio::test]
async fn edits_fail_closed_and_write_nothing() {
    let (store, svc) = service_with(None, false, &[]);
    call(&svc, "create", mail()).await.unwrap();
    let cases = [
        (json!({ "modifiedArguments": [1] }), "malformed_edit"),
        (
            json!({ "modifiedArguments": { "to": ["a@x.test"] }, "editedArgs": { "to": ["a@x.test"] } }),
            "malformed_edit",
        ),
        (
            json!({ "decision": "deny", "modifiedArguments": { "to": ["a@x.test"], "subject": "s" } }),
            "malformed_edit",
        ),
        (
            json!({ "modifiedArguments": { "to": ["a@x.test"], "subject": 5 } }),
            "schema_violation",
        ),
        (
            json!({ "modifiedArguments": { "to": ["a@x.test"] } }),
            "schema_violation",
        ),
        (
            json!({ "modifiedArguments": { "to": ["a@x.test"], "subject": "s", "bcc": ["e@y"] } }),
            "schema_violation",
        ),
        (
            json!({ "modifiedArguments": { "to": ["a@x.test", "evil@y.test"], "subject": "s" } }),
            "recipient_escalation",
        ),
        (
            json!({ "editedArgs": { "to": ["a@x.test"], "cc": ["evil@y.test"], "subject": "s" } }),
            "recipient_escalation",
        ),
        (json!({ "provider": "other" }), "immutable_field"),
        (
            json!({ "modifiedArguments": { "to": ["a@x.test"], "subject": "s", "op": "delete" } }),
            "immutable_field",
        ),
        (json!({ "expectedVersion": 7 }), "conflict"),
        (json!({ "surprise": 1 }), "invalid_input"),
    ];
    for (extra, want) in cases {
        let r = call(&svc, "decide", decide(1, extra.clone())).await;
        assert_eq!(reason(r), Some(want), "{extra}");
    }
    let e = call(
        &svc,
        "decide",
        decide(
            1,
            json!({ "modifiedArguments": { "to": ["a@x.test", "evil@y.test"], "subject": "s" } }),
        ),
    )
    .await
    .unwrap_err();
    assert!(!e.message.contains("evil"), "{}", e.message);
    let e = call(
        &svc,
        "decide",
        decide(
            1,
            json!({ "modifiedArguments": { "to": ["a@x.test"], "subject": 12345 } }),
        ),
    )
    .await
    .unwrap_err();
    assert!(
        e.message.contains("/subject") && !e.message.contains("12345"),
        "{}",
        e.message
    );
    let cp = store
        .load(&CheckpointKey::new(
            NAMESPACE,
            "th:d1",
            &Ownership {
                tenant_id: Some("t1".into()),
                account_id: None,
                user_id: Some("u1".into()),
            },
        ))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cp.version, 1, "nothing was written");
}

#[tokio::test]
async fn reapproval_mode_leaves_the_edit_pending() {
    let (_, svc) = service_with(None, true, &[]);
    call(&svc, "create", mail()).await.unwrap();
    let edit = json!({ "to": ["a@x.test"], "subject": "Hi" });
    let d = call(
        &svc,
        "decide",
        decide(1, json!({ "modifiedArguments": edit })),
    )
    .await
    .unwrap();
    assert_eq!(
        (d["status"].clone(), d["latestRevision"].clone()),
        (json!("pending"), json!(2))
    );
    assert_eq!(d["approvals"], json!([]));
    let d = call(&svc, "decide", decide(2, json!({}))).await.unwrap();
    assert_eq!(d["status"], "approved");
}

#[tokio::test]
async fn deny_records_a_bounded_reason_and_blocks_claims() {
    let svc = service();
    call(&svc, "create", mail()).await.unwrap();
    let long = "x".repeat(2000);
    assert_eq!(
        reason(
            call(
                &svc,
                "decide",
                decide(1, json!({ "decision": "deny", "reason": long }))
            )
            .await
        ),
        Some("invalid_input")
    );
    let d = call(
        &svc,
        "decide",
        decide(1, json!({ "decision": "deny", "reason": "no" })),
    )
    .await
    .unwrap();
    assert_eq!(
        (d["status"].clone(), d["approvals"][0]["reason"].clone()),
        (json!("denied"), json!("no"))
    );
    let digest = d["revisions"][0]["payloadDigest"].clone();
    let claim = json!({ "ownership": owner(), "threadId": "th", "draftId": "d1", "expectedVersion": 2, "payloadDigest": digest });
    assert_eq!(
        reason(call(&svc, "claimExecution", claim).await),
        Some("not_approved")
    );
}

#[tokio::test]
async fn a_payload_changed_in_the_store_cannot_be_claimed() {
    let (store, svc) = service_with(None, false, &[]);
    call(&svc, "create", mail()).await.unwrap();
    let d = call(&svc, "decide", decide(1, json!({}))).await.unwrap();
    let digest = d["revisions"][0]["payloadDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let own = Ownership {
        tenant_id: Some("t1".into()),
        account_id: None,
        user_id: Some("u1".into()),
    };
    let mut value = d.clone();
    value["revisions"][0]["payload"]["to"] = json!(["evil@y.test"]);
    store
        .save(SaveCheckpoint {
            namespace: NAMESPACE.into(),
            key: "th:d1".into(),
            owner: own,
            version: 3,
            expected_version: Some(2),
            fencing_token: None,
            value,
            category: None,
            metadata: None,
            signal: None,
            memo: None,
        })
        .await
        .unwrap();
    let claim = json!({ "ownership": owner(), "threadId": "th", "draftId": "d1", "expectedVersion": 3, "payloadDigest": digest });
    assert_eq!(
        reason(call(&svc, "claimExecution", claim).await),
        Some("not_approved")
    );
}

#[tokio::test]
async fn concurrent_deciders_have_one_winner_per_version() {
    let svc = Arc::new(service());
    call(&svc, "create", mail()).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let svc = svc.clone();
        tasks.push(tokio::spawn(async move {
            let edit = json!({ "to": ["a@x.test"], "subject": format!("s{i}") });
            call(
                &svc,
                "decide",
                decide(1, json!({ "modifiedArguments": edit })),
            )
            .await
        }));
    }
    let mut wins = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => wins += 1,
            Err(e) => assert_eq!(e.reason(), Some("conflict")),
        }
    }
    assert_eq!(wins, 1);
    let d = call(
        &svc,
        "get",
        json!({ "ownership": owner(), "threadId": "th", "draftId": "d1" }),
    )
    .await
    .unwrap();
    assert_eq!(
        (
            d["version"].clone(),
            d["revisions"].as_array().unwrap().len()
        ),
        (json!(2), 2)
    );
}

#[tokio::test]
async fn cross_owner_is_not_found_and_lists_are_scoped() {
    let svc = service();
    call(&svc, "create", mail()).await.unwrap();
    let other = json!({ "ownership": { "tenantId": "t2" }, "threadId": "th", "draftId": "d1" });
    assert_eq!(reason(call(&svc, "get", other).await), Some("not_found"));
    let mine = call(
        &svc,
        "list",
        json!({ "ownership": owner(), "threadId": "th" }),
    )
    .await
    .unwrap();
    assert_eq!(mine["items"].as_array().unwrap().len(), 1);
    let theirs = call(
        &svc,
        "list",
        json!({ "ownership": { "tenantId": "t2" }, "threadId": "th" }),
    )
    .await
    .unwrap();
    assert_eq!(theirs["items"], json!([]));
}

struct Deny;
impl RecipientPolicy for Deny {
    fn allow<'a>(&'a self, a: &'a [String]) -> crate::store::BoxFuture<'a, Result<Vec<bool>>> {
        Box::pin(async move {
            Ok(a.iter()
                .map(|s| s.ends_with("@x.test") && !s.starts_with('b'))
                .collect())
        })
    }
}

#[tokio::test]
async fn the_recipient_policy_is_asked_on_create_and_edit() {
    let (_, svc) = service_with(Some(Arc::new(Deny)), false, &[]);
    assert_eq!(
        reason(call(&svc, "create", mail()).await),
        Some("recipient_escalation")
    );
    let mut ok = mail();
    ok["payload"]["to"] = json!(["a@x.test"]);
    call(&svc, "create", ok).await.unwrap();
}

#[tokio::test]
async fn secrets_are_redacted_before_persist_and_in_events() {
    let (store, svc) = service_with(None, false, &["sk-live-123"]);
    let mut m = mail();
    m["payload"]["body"] = json!("key sk-live-123");
    let out = svc.call("create", m, &AbortFlag::new()).await.unwrap();
    let all = store
        .list(ListCheckpoints {
            limit: Some(10),
            ..Default::default()
        })
        .await
        .unwrap();
    let text = serde_json::to_string(&all).unwrap();
    assert!(!text.contains("sk-live-123") && text.contains("[REDACTED]"));
    assert!(!out.event.unwrap().to_string().contains("sk-live-123"));
    let stored = &all.items[0].value["revisions"][0];
    assert_eq!(
        stored["payloadDigest"],
        json!(payload::digest(&stored["payload"]))
    );
}
