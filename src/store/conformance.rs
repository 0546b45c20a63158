//! The store conformance suite: one set of checks every [`CheckpointStore`] passes (memory,
//! SQLite, PostgreSQL, the host bridge), with a forced two-writer interleaving for CAS in
//! the manner of Kubernetes' storage tests. Each store's test module calls [`run`].

use super::*;
use crate::error::ErrorKind;
use serde_json::json;

fn owner(t: &str) -> Ownership {
    Ownership {
        tenant_id: Some(t.into()),
        account_id: None,
        user_id: Some("u1".into()),
    }
}

fn req(ns: &str, key: &str, o: &Ownership, value: Value, expected: Option<u64>) -> SaveCheckpoint {
    SaveCheckpoint {
        namespace: ns.into(),
        key: key.into(),
        ownership: o.clone(),
        category: None,
        value,
        expected_version: expected,
    }
}

fn is_conflict<T: std::fmt::Debug>(r: &Result<T>) -> bool {
    matches!(r, Err(e) if e.kind == ErrorKind::CheckpointConflict)
}

/// Run every check against `store`. Namespaces are unique per call, so a shared database
/// may be reused.
pub async fn run(store: &dyn CheckpointStore) {
    run_with(store, true).await
}

/// [`run`], for a store that may return object keys in its own order (PostgreSQL jsonb)
/// when `keeps_key_order` is false.
pub async fn run_with(store: &dyn CheckpointStore, keeps_key_order: bool) {
    let run_id = format!("{:x}", std::process::id()) + &now_iso8601();
    crud(store, &format!("crud-{run_id}"), keeps_key_order).await;
    ownership(store, &format!("own-{run_id}")).await;
    listing(store, &format!("list-{run_id}")).await;
    cursor_stability(store, &format!("cursor-{run_id}")).await;
    cas(store, &format!("cas-{run_id}")).await;
    two_writers(store, &format!("race-{run_id}")).await;
    bad_input(store, &format!("bad-{run_id}")).await;
}

async fn crud(store: &dyn CheckpointStore, ns: &str, keeps_key_order: bool) {
    let o = owner("t1");
    let value = json!({ "a": [1, 2.5, "\u{e9}\u{1f600}"], "z": null, "b": { "c": true } });
    let mut create = req(ns, "k", &o, value.clone(), Some(0));
    create.category = Some("artifact".into());
    let c1 = store.save(create).await.expect("create");
    assert_eq!(c1.version, 1);
    assert_eq!(c1.namespace, ns);
    assert_eq!(c1.key, "k");
    assert_eq!(c1.ownership, o);
    assert_eq!(c1.category.as_deref(), Some("artifact"));
    assert_eq!(c1.value, value);
    assert_eq!(c1.created_at, c1.updated_at);
    assert_eq!(c1.created_at.len(), 24);

    let loaded = store.load(ns, "k", &o).await.unwrap().expect("loaded");
    assert_eq!(loaded, c1);
    // Key order of the value survives the round trip.
    if keeps_key_order {
        assert_eq!(
            serde_json::to_string(&loaded.value).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }

    let c2 = store
        .save(req(ns, "k", &o, json!("two"), Some(1)))
        .await
        .expect("replace at version 1");
    assert_eq!(c2.version, 2);
    assert_eq!(c2.category, None, "a save replaces the category too");
    assert_eq!(c2.created_at, c1.created_at);
    let c3 = store
        .save(req(ns, "k", &o, json!(3), None))
        .await
        .expect("upsert");
    assert_eq!(c3.version, 3);
    assert_eq!(
        store.load(ns, "k", &o).await.unwrap().unwrap().value,
        json!(3)
    );

    assert!(store.load(ns, "missing", &o).await.unwrap().is_none());
    assert!(store
        .load("other-namespace-x", "k", &o)
        .await
        .unwrap()
        .is_none());

    let up = store
        .save(req(ns, "fresh", &o, json!(null), None))
        .await
        .unwrap();
    assert_eq!(up.version, 1, "upsert creates at version 1");
    assert_eq!(up.value, json!(null));

    assert!(store.delete(ns, "k", &o, Some(3)).await.unwrap());
    assert!(store.load(ns, "k", &o).await.unwrap().is_none());
    assert!(!store.delete(ns, "k", &o, None).await.unwrap());
    assert!(store.delete(ns, "fresh", &o, None).await.unwrap());
    // Re-creating after delete starts again at version 1.
    let again = store
        .save(req(ns, "k", &o, json!(1), Some(0)))
        .await
        .unwrap();
    assert_eq!(again.version, 1);
}

async fn ownership(store: &dyn CheckpointStore, ns: &str) {
    let mine = owner("t1");
    let theirs = owner("t2");
    let partial = Ownership {
        tenant_id: Some("t1".into()),
        ..Default::default()
    };
    store
        .save(req(ns, "k", &mine, json!("mine"), Some(0)))
        .await
        .unwrap();
    for other in [&theirs, &partial] {
        assert!(store.load(ns, "k", other).await.unwrap().is_none());
        assert!(is_conflict(
            &store.save(req(ns, "k", other, json!("x"), None)).await
        ));
        assert!(is_conflict(
            &store.save(req(ns, "k", other, json!("x"), Some(1))).await
        ));
        assert!(is_conflict(
            &store.save(req(ns, "k", other, json!("x"), Some(0))).await
        ));
        assert!(is_conflict(&store.delete(ns, "k", other, None).await));
        assert!(is_conflict(&store.delete(ns, "k", other, Some(1)).await));
    }
    let cp = store.load(ns, "k", &mine).await.unwrap().unwrap();
    assert_eq!(cp.value, json!("mine"));
    assert_eq!(cp.version, 1);
}

async fn list_all(store: &dyn CheckpointStore, mut q: ListCheckpoints) -> Vec<String> {
    let mut keys = Vec::new();
    loop {
        let page = store.list(q.clone()).await.unwrap();
        assert!(page.items.len() <= q.limit.unwrap_or(u32::MAX) as usize);
        keys.extend(page.items.iter().map(|c| c.key.clone()));
        match page.next_cursor {
            Some(c) => {
                assert!(!page.items.is_empty(), "a page with a cursor has items");
                q.cursor = Some(c);
            }
            None => break,
        }
    }
    keys
}

async fn listing(store: &dyn CheckpointStore, ns: &str) {
    let a = owner("t1");
    let b = owner("t2");
    let keys = ["t:1", "t:2", "t:3", "t:10", "u:1", "t", "t:\u{e9}", "s:9"];
    for (i, k) in keys.iter().enumerate() {
        let o = if i % 2 == 0 { &a } else { &b };
        store.save(req(ns, k, o, json!(i), None)).await.unwrap();
    }
    store
        .save(req(&format!("{ns}-other"), "t:1", &a, json!(0), None))
        .await
        .unwrap();
    let mut sorted: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
    sorted.sort();

    let q = |prefix: Option<&str>, o: Option<&Ownership>, limit: Option<u32>| ListCheckpoints {
        namespace: ns.into(),
        prefix: prefix.map(str::to_string),
        ownership: o.cloned(),
        cursor: None,
        limit,
    };
    // Every page size gives the same ordered result.
    for limit in [Some(1), Some(2), Some(3), Some(100), None] {
        assert_eq!(
            list_all(store, q(None, None, limit)).await,
            sorted,
            "limit {limit:?}"
        );
        assert_eq!(
            list_all(store, q(Some("t:"), None, limit)).await,
            ["t:1", "t:10", "t:2", "t:3", "t:\u{e9}"],
        );
        assert_eq!(
            list_all(store, q(Some("t:"), Some(&a), limit)).await,
            ["t:1", "t:3", "t:\u{e9}"],
        );
        assert_eq!(
            list_all(store, q(None, Some(&b), limit)).await,
            ["s:9", "t", "t:10", "t:2"]
        );
    }
    assert!(list_all(store, q(Some("zz"), None, None)).await.is_empty());
    assert!(list_all(store, q(None, Some(&owner("t3")), None))
        .await
        .is_empty());
    let page = store.list(q(None, None, Some(100))).await.unwrap();
    assert!(page.next_cursor.is_none(), "no cursor on the last page");
    let first = &page.items[0];
    assert_eq!(first.namespace, ns);
    assert_eq!(first.version, 1);
    // An exact page: a cursor may be returned only if more items follow.
    let page = store.list(q(Some("t:"), None, Some(5))).await.unwrap();
    assert_eq!(page.items.len(), 5);
    assert!(page.next_cursor.is_none());
}

async fn cursor_stability(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    for k in ["b", "d", "f", "h"] {
        store.save(req(ns, k, &o, json!(k), None)).await.unwrap();
    }
    let q = ListCheckpoints {
        namespace: ns.into(),
        limit: Some(2),
        ..Default::default()
    };
    let p1 = store.list(q.clone()).await.unwrap();
    let keys: Vec<_> = p1.items.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["b", "d"]);
    let cursor = p1.next_cursor.expect("more pages");
    // Writes between pages: before the cursor, after it, and a delete of a seen key.
    store.save(req(ns, "a", &o, json!(0), None)).await.unwrap();
    store.save(req(ns, "c", &o, json!(0), None)).await.unwrap();
    store.save(req(ns, "e", &o, json!(0), None)).await.unwrap();
    store
        .save(req(ns, "f", &o, json!("f2"), None))
        .await
        .unwrap();
    assert!(store.delete(ns, "b", &o, None).await.unwrap());
    let rest = list_all(
        store,
        ListCheckpoints {
            cursor: Some(cursor.clone()),
            ..q.clone()
        },
    )
    .await;
    assert_eq!(
        rest,
        ["e", "f", "h"],
        "continues strictly after the cursor key"
    );
    // The same cursor gives the same continuation again.
    let again = list_all(
        store,
        ListCheckpoints {
            cursor: Some(cursor),
            ..q
        },
    )
    .await;
    assert_eq!(again, rest);
}

async fn cas(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    assert!(is_conflict(
        &store.save(req(ns, "k", &o, json!(1), Some(1))).await
    ));
    assert!(
        store.load(ns, "k", &o).await.unwrap().is_none(),
        "a failed CAS creates nothing"
    );
    store
        .save(req(ns, "k", &o, json!(1), Some(0)))
        .await
        .unwrap();
    assert!(is_conflict(
        &store.save(req(ns, "k", &o, json!(2), Some(0))).await
    ));
    assert!(is_conflict(
        &store.save(req(ns, "k", &o, json!(2), Some(2))).await
    ));
    assert!(is_conflict(&store.delete(ns, "k", &o, Some(2)).await));
    let cp = store.load(ns, "k", &o).await.unwrap().unwrap();
    assert_eq!(
        (cp.version, cp.value),
        (1, json!(1)),
        "failed CAS changes nothing"
    );
    store
        .save(req(ns, "k", &o, json!(2), Some(1)))
        .await
        .unwrap();
    assert!(is_conflict(
        &store.save(req(ns, "k", &o, json!(3), Some(1))).await
    ));
    assert!(!store.delete(ns, "missing", &o, Some(1)).await.unwrap());

    // Concurrent read-modify-write with retry: no increment is lost.
    let workers = 8u64;
    let per = 5u64;
    store
        .save(req(ns, "counter", &o, json!(0), Some(0)))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let o = o.clone();
        tasks.push(async move {
            for _ in 0..per {
                loop {
                    let cur = store.load(ns, "counter", &o).await.unwrap().unwrap();
                    let n = cur.value.as_u64().unwrap();
                    let r = store
                        .save(req(ns, "counter", &o, json!(n + 1), Some(cur.version)))
                        .await;
                    if is_conflict(&r) {
                        tokio::task::yield_now().await;
                        continue;
                    }
                    r.unwrap();
                    break;
                }
            }
        });
    }
    futures_join_all(tasks).await;
    let cp = store.load(ns, "counter", &o).await.unwrap().unwrap();
    assert_eq!(cp.value, json!(workers * per));
    assert_eq!(cp.version, workers * per + 1);
}

async fn futures_join_all<F: std::future::Future<Output = ()>>(tasks: Vec<F>) {
    // Poll every task concurrently on this task (no extra dependency).
    let mut tasks: Vec<_> = tasks.into_iter().map(Box::pin).map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for slot in tasks.iter_mut() {
            if let Some(t) = slot {
                if t.as_mut().poll(cx).is_ready() {
                    *slot = None;
                } else {
                    pending = true;
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await
}

async fn two_writers(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    store
        .save(req(ns, "k", &o, json!("v1"), None))
        .await
        .unwrap();
    for round in 0..5u64 {
        let a = store.load(ns, "k", &o).await.unwrap().unwrap();
        let b = store.load(ns, "k", &o).await.unwrap().unwrap();
        assert_eq!(a.version, b.version);
        let (ra, rb) = tokio::join!(
            store.save(req(ns, "k", &o, json!(["a", round]), Some(a.version))),
            store.save(req(ns, "k", &o, json!(["b", round]), Some(b.version))),
        );
        let wins = [&ra, &rb].iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "exactly one of two racing writers wins");
        assert!(
            is_conflict(&ra) || is_conflict(&rb),
            "the loser sees a conflict"
        );
        let winner = match (ra, rb) {
            (Ok(w), _) | (_, Ok(w)) => w,
            (Err(e), _) => panic!("no winner: {e}"),
        };
        assert_eq!(winner.version, a.version + 1);
        let now = store.load(ns, "k", &o).await.unwrap().unwrap();
        assert_eq!(now, winner, "the winner's value is what is stored");
    }
    // Two racing creates: exactly one wins.
    let (ra, rb) = tokio::join!(
        store.save(req(ns, "new", &o, json!("a"), Some(0))),
        store.save(req(ns, "new", &o, json!("b"), Some(0))),
    );
    assert_eq!([&ra, &rb].iter().filter(|r| r.is_ok()).count(), 1);
    assert!(is_conflict(&ra) || is_conflict(&rb));
    // Two racing deletes at the same version: exactly one deletes.
    let cur = store.load(ns, "new", &o).await.unwrap().unwrap();
    let (da, db) = tokio::join!(
        store.delete(ns, "new", &o, Some(cur.version)),
        store.delete(ns, "new", &o, Some(cur.version)),
    );
    let deleted = [&da, &db].iter().filter(|r| matches!(r, Ok(true))).count();
    assert_eq!(deleted, 1);
}

async fn bad_input(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    let invalid =
        |r: &Result<Checkpoint>| matches!(r, Err(e) if e.reason() == Some("invalid_input"));
    assert!(invalid(&store.save(req("", "k", &o, json!(1), None)).await));
    assert!(invalid(&store.save(req(ns, "", &o, json!(1), None)).await));
    assert!(invalid(
        &store
            .save(req(ns, &"k".repeat(MAX_KEY_BYTES + 1), &o, json!(1), None))
            .await
    ));
    assert!(invalid(
        &store.save(req(ns, "k\0", &o, json!(1), None)).await
    ));
    assert!(invalid(
        &store
            .save(req(ns, "k", &Ownership::default(), json!(1), None))
            .await
    ));
    let r = store.load(ns, "k", &Ownership::default()).await;
    assert!(matches!(r, Err(e) if e.reason() == Some("invalid_input")));
    let r = store
        .list(ListCheckpoints {
            namespace: ns.into(),
            cursor: Some(String::new()),
            ..Default::default()
        })
        .await;
    assert!(matches!(r, Err(e) if e.reason() == Some("invalid_input")));
    let r = store
        .list(ListCheckpoints {
            namespace: ns.into(),
            limit: Some(0),
            ..Default::default()
        })
        .await;
    assert!(matches!(r, Err(e) if e.reason() == Some("invalid_input")));
    let page = store
        .list(ListCheckpoints {
            namespace: ns.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(page.items.is_empty(), "bad input changed nothing");
}
