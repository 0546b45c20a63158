//! The store conformance suite: one set of checks every [`CheckpointStore`] passes (memory,
//! SQLite, PostgreSQL, the host bridge), with forced two-writer interleavings for CAS in
//! the manner of Kubernetes' storage tests. Each store's test module calls [`run`].

use super::model::{Metadata, Order};
use super::*;
use crate::error::{ErrorKind, Result};
use serde_json::{json, Value};

pub(crate) fn owner(t: &str) -> Ownership {
    Ownership {
        tenant_id: Some(t.into()),
        account_id: None,
        user_id: Some("u1".into()),
    }
}

/// A save of `value` at `version` with no CAS, fence, category or metadata.
pub(crate) fn save(
    ns: &str,
    key: &str,
    o: &Ownership,
    version: u64,
    value: Value,
) -> SaveCheckpoint {
    SaveCheckpoint {
        namespace: ns.into(),
        key: key.into(),
        owner: o.clone(),
        version,
        expected_version: None,
        fencing_token: None,
        value,
        category: None,
        metadata: None,
        signal: None,
        memo: None,
    }
}

/// A compare-and-swap save: `expected` → `expected + 1`.
pub(crate) fn cas(
    ns: &str,
    key: &str,
    o: &Ownership,
    expected: u64,
    value: Value,
) -> SaveCheckpoint {
    SaveCheckpoint {
        expected_version: Some(expected),
        ..save(ns, key, o, expected + 1, value)
    }
}

pub(crate) fn key(ns: &str, k: &str, o: &Ownership) -> CheckpointKey {
    CheckpointKey::new(ns, k, o)
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
    let run_id = format!("{:x}", std::process::id()) + &crate::util::time::now_iso();
    crud(store, &format!("crud-{run_id}"), keeps_key_order).await;
    versions_and_fencing(store, &format!("fence-{run_id}")).await;
    owner_scoping(store, &format!("own-{run_id}")).await;
    listing(store, &format!("list-{run_id}")).await;
    cursor_stability(store, &format!("cursor-{run_id}")).await;
    counter(store, &format!("cas-{run_id}")).await;
    two_writers(store, &format!("race-{run_id}")).await;
    bad_input(store, &format!("bad-{run_id}")).await;
    text_and_counts(store, &format!("text-{run_id}")).await;
    listed_texts(store, &format!("ltext-{run_id}")).await;
    values_kept_as_text(store, &format!("raw-{run_id}")).await;
    capped_creates(store, &format!("capped-{run_id}")).await;
    written_without_an_answer(store, &format!("write-{run_id}")).await;
}

/// `write_text` (the artifact service's saves, which read no answer) writes what
/// `save_text` writes: a create, a compare-and-swap (a lost one is a conflict and
/// writes nothing), the creation time kept by a replace, the value given.
async fn written_without_an_answer(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    let k = key(ns, "w", &o);
    let write = |expected: u64, n: u64| {
        let text = format!(r#"{{"n":{n}}}"#);
        let req = cas(ns, "w", &o, expected, json!({ "n": n }));
        async move { store.write_text(req, Some(&text)).await }
    };
    write(0, 1).await.unwrap();
    let first = store.load(&k).await.unwrap().unwrap();
    assert_eq!((first.version, &first.value), (1, &json!({ "n": 1 })));
    assert!(is_conflict(&write(0, 9).await), "a create of a taken key");
    // A millisecond apart at least, so a replace that rewrote the creation time shows.
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    write(1, 2).await.unwrap();
    assert!(is_conflict(&write(1, 3).await), "a lost compare-and-swap");
    let second = store.load(&k).await.unwrap().unwrap();
    assert_eq!((second.version, &second.value), (2, &json!({ "n": 2 })));
    assert_eq!(second.created_at, first.created_at);
    assert!(second.updated_at >= first.updated_at);
}

/// Issue 13: `create_capped`, where a store offers it, counts and writes in one step: 16
/// racing creates under a cap of 5 leave exactly 5 (each loser told `Full` with the count
/// it saw, nothing written); a taken key is a conflict even when full; another owner's
/// listing is not counted; a saved create loads as written (version 1, the text given).
async fn capped_creates(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    let within = ListCheckpoints {
        namespace: Some(ns.into()),
        key_prefix: Some("th:".into()),
        owner: o.clone(),
        exact_owner: true,
        limit: Some(5),
        ..ListCheckpoints::default()
    };
    let create = |k: String, who: &Ownership| {
        let req = cas(ns, &k, who, 0, json!({ "k": k }));
        let text = req.value.to_string();
        (req, text)
    };
    let (req, text) = create("th:probe".into(), &o);
    let Some(first) = store.create_capped(req, Some(text.clone()), &within, 5) else {
        return;
    };
    match first.await.unwrap() {
        Capped::Saved => {
            let loaded = store
                .load_text(&key(ns, "th:probe", &o))
                .await
                .unwrap()
                .unwrap();
            let value: Value = serde_json::from_str(loaded.value_text()).unwrap();
            assert_eq!((loaded.version(), value), (1, json!({ "k": "th:probe" })));
        }
        Capped::Full(n) => panic!("an empty listing is full ({n})"),
    }
    // Another owner's records and keys outside the prefix do not count.
    for k in ["th:x", "th:y"] {
        let (req, text) = create(k.into(), &owner("t2"));
        store.save_text(req, Some(text)).await.unwrap();
    }
    let (req, text) = create("other:1".into(), &o);
    store.save_text(req, Some(text)).await.unwrap();
    let outcomes = std::sync::Mutex::new(Vec::new());
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let (req, text) = create(format!("th:{i:02}"), &o);
            let outcomes = &outcomes;
            let within = &within;
            async move {
                let r = store
                    .create_capped(req, Some(text), within, 5)
                    .unwrap()
                    .await;
                outcomes.lock().unwrap().push(r.map(|c| match c {
                    Capped::Saved => None,
                    Capped::Full(n) => Some(n),
                }));
            }
        })
        .collect();
    futures_join_all(tasks).await;
    let outcomes = outcomes.into_inner().unwrap();
    let saved = outcomes.iter().filter(|r| matches!(r, Ok(None))).count();
    assert_eq!(
        saved, 4,
        "the probe and 4 racers fill the cap: {outcomes:?}"
    );
    for r in &outcomes {
        if let Ok(Some(n)) = r {
            assert!(*n >= 5, "a refused create saw {n} < 5");
        }
    }
    assert_eq!(list_all(store, within.clone()).await.len(), 5);
    // Full, and the key is taken: the save's conflict, nothing changed.
    let (req, text) = create("th:probe".into(), &o);
    let taken = store
        .create_capped(req, Some(text.clone()), &within, 5)
        .unwrap()
        .await;
    assert!(is_conflict(&taken), "{taken:?}");
    // Full, key free: refused with the count, nothing written.
    let (req, text) = create("th:late".into(), &o);
    match store
        .create_capped(req, Some(text), &within, 5)
        .unwrap()
        .await
        .unwrap()
    {
        Capped::Full(n) => assert!(n >= 5),
        Capped::Saved => panic!("a create past the cap was saved"),
    }
    assert!(store.load(&key(ns, "th:late", &o)).await.unwrap().is_none());
    // Not full, key taken: still the conflict.
    let (req, text) = create("th:probe".into(), &o);
    let taken = store
        .create_capped(req, Some(text), &within, 50)
        .unwrap()
        .await;
    assert!(is_conflict(&taken), "{taken:?}");
}

/// Issue 13: `save_text` answers the record `load` answers, as serde writes it, and
/// `load_text` the same record (as JSON: a database may answer its own value text);
/// `count`, where a store offers it, is what paging through the listing counts.
async fn text_and_counts(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    let k = key(ns, "k", &o);
    let mut create = cas(ns, "k", &o, 0, json!({ "v": [1, 2.5, "\u{e9}\"\\"] }));
    create.category = Some("c".into());
    create.metadata = json!({ "m": 1 }).as_object().map(Metadata::from_map);
    let saved = store.save_text(create, None).await.expect("save_text");
    let loaded = store.load(&k).await.unwrap().expect("saved");
    let serde = serde_json::to_string(&loaded).unwrap();
    assert_eq!(saved.text(), serde);
    // The same record; its value's text as the store answers it (PostgreSQL: as the
    // server writes `jsonb`, spaces after separators).
    let text = store.load_text(&k).await.unwrap().expect("saved");
    let read = |t: &str| serde_json::from_str::<Value>(t).expect("JSON");
    assert_eq!(read(&text.text()), read(&serde));
    assert_eq!(read(text.value_text()), loaded.value);
    assert_eq!((text.version(), text.owner(), text.key()), (1, &o, "k"));
    assert!(store
        .load_text(&key(ns, "absent", &o))
        .await
        .unwrap()
        .is_none());
    // With the value's text given, that text is what is stored and answered.
    let v2 = json!({ "w": "x" });
    let t2 = store
        .save_text(cas(ns, "k", &o, 1, v2.clone()), Some(v2.to_string()))
        .await
        .expect("save_text with text");
    assert_eq!(
        (t2.version(), t2.value_text()),
        (2, v2.to_string().as_str())
    );
    assert_eq!(store.load(&k).await.unwrap().unwrap().value, v2);
    assert!(is_conflict(
        &store.save_text(cas(ns, "k", &o, 1, json!(3)), None).await
    ));
    for i in 0..7 {
        store
            .save(save(ns, &format!("th:{i}"), &o, 1, json!(i)))
            .await
            .unwrap();
    }
    store
        .save(save(ns, "th:other", &owner("t2"), 1, json!(0)))
        .await
        .unwrap();
    for (page, cap) in [
        (1u32, 1u64),
        (2, 2),
        (3, 3),
        (3, 7),
        (3, 8),
        (2, 5),
        (50, 50),
    ] {
        let q = ListCheckpoints {
            namespace: Some(ns.into()),
            key_prefix: Some("th:".into()),
            owner: o.clone(),
            exact_owner: true,
            limit: Some(page),
            ..ListCheckpoints::default()
        };
        let listed = listed_count(store, &q, cap).await;
        if let Some(counted) = store.count(&q, cap) {
            assert_eq!(counted.await.unwrap(), listed, "page {page}, cap {cap}");
        }
    }
}

/// `list_text` answers what `list` does, page by page in both orders (each page's text
/// reads as the serialized page: items, values, metadata, cursor).
async fn listed_texts(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    for i in 0..5 {
        let mut req = save(
            ns,
            &format!("k{i}"),
            &o,
            1,
            json!({ "i": i, "s": "\u{e9}\"" }),
        );
        req.category = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        req.metadata = json!({ "m": i }).as_object().map(Metadata::from_map);
        store.save_text(req, None).await.unwrap();
    }
    store
        .save(save(ns, "k9", &owner("t2"), 1, json!(null)))
        .await
        .unwrap();
    for (order, limit, categories) in [
        (Order::Asc, 2, None),
        (Order::Desc, 2, None),
        (Order::Asc, 50, Some(vec!["odd".to_string()])),
    ] {
        let mut q = ListCheckpoints {
            namespace: Some(ns.into()),
            owner: o.clone(),
            order,
            limit: Some(limit),
            categories,
            ..ListCheckpoints::default()
        };
        let mut pages = 0;
        loop {
            let page = store.list(q.clone()).await.unwrap();
            let text = store.list_text(q.clone()).await.unwrap();
            let read: Value = serde_json::from_str(&text.to_text()).expect("a page text is JSON");
            assert_eq!(
                read,
                serde_json::to_value(&page).unwrap(),
                "{order:?} {limit}"
            );
            assert_eq!(text.next_cursor, page.next_cursor);
            pages += 1;
            match page.next_cursor {
                Some(c) => q.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(pages, if limit == 2 { 3 } else { 1 });
    }
}

/// A store that keeps text (`beside_text` not `Value`) keeps a value's text exactly as
/// given, `req.value` left `null`: a lone surrogate escape and JavaScript's own number
/// form load and list back byte for byte, and such a text is never marked as its saver's
/// own form (no memo came with it).
async fn values_kept_as_text(store: &dyn CheckpointStore, ns: &str) {
    if store.beside_text() == BesideText::Value {
        return;
    }
    let o = owner("t1");
    let given = r#"{"s":"a\ud800b","t":"\udfff","n":1e+21,"e":"\u00e9"}"#;
    let saved = store
        .save_text(save(ns, "k", &o, 1, Value::Null), Some(given.into()))
        .await
        .unwrap();
    assert_eq!(saved.value_text(), given);
    let loaded = store.load_text(&key(ns, "k", &o)).await.unwrap().unwrap();
    assert_eq!(loaded.value_text(), given);
    assert!(!loaded.value_as_given && loaded.memo.is_none());
    let q = ListCheckpoints {
        namespace: Some(ns.into()),
        owner: o.clone(),
        ..ListCheckpoints::default()
    };
    let page = store.list_text(q).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].value_text(), given);
    assert!(page.to_text().contains(given));
    // A later save of a value replaces the text.
    store
        .save_text(cas(ns, "k", &o, 1, Value::Null), Some("[1]".into()))
        .await
        .unwrap();
    let loaded = store.load(&key(ns, "k", &o)).await.unwrap().unwrap();
    assert_eq!((loaded.version, loaded.value), (2, json!([1])));
}

/// What listing `q` page after page counts by the first page that reaches `cap` (what
/// [`CheckpointStore::count`] answers without listing).
pub(crate) async fn listed_count(
    store: &dyn CheckpointStore,
    q: &ListCheckpoints,
    cap: u64,
) -> u64 {
    let mut q = q.clone();
    let mut listed = 0u64;
    loop {
        let p = store.list(q.clone()).await.unwrap();
        listed += p.items.len() as u64;
        match p.next_cursor {
            Some(c) if listed < cap && !p.items.is_empty() => q.cursor = Some(c),
            _ => return listed,
        }
    }
}

async fn crud(store: &dyn CheckpointStore, ns: &str, keeps_key_order: bool) {
    let o = owner("t1");
    let value = json!({ "a": [1, 2.5, "\u{e9}\u{1f600}"], "z": null, "b": { "c": true } });
    let meta = json!({ "run": "r1", "n": 2 })
        .as_object()
        .map(Metadata::from_map);
    let mut create = cas(ns, "k", &o, 0, value.clone());
    create.category = Some("artifact".into());
    create.metadata = meta.clone();
    let c1 = store.save(create).await.expect("create");
    assert_eq!(
        (c1.version, c1.namespace.as_str(), c1.key.as_str()),
        (1, ns, "k")
    );
    assert_eq!(c1.owner, o);
    assert_eq!(c1.category.as_deref(), Some("artifact"));
    assert_eq!(c1.metadata, meta);
    assert_eq!(c1.fencing_token, None);
    assert_eq!(c1.value, value);
    assert_eq!(c1.created_at, c1.updated_at);
    assert_eq!(c1.created_at.len(), 24);

    let loaded = store
        .load(&key(ns, "k", &o))
        .await
        .unwrap()
        .expect("loaded");
    assert_eq!(loaded, c1);
    if keeps_key_order {
        assert_eq!(
            serde_json::to_string(&loaded.value).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }

    let c2 = store
        .save(cas(ns, "k", &o, 1, json!("two")))
        .await
        .expect("replace at version 1");
    assert_eq!(c2.version, 2);
    assert_eq!(c2.category, None, "a save replaces the category too");
    assert_eq!(c2.metadata, None, "and the metadata");
    assert_eq!(c2.created_at, c1.created_at);
    // Without expectedVersion any greater version writes; versions may jump.
    let c3 = store
        .save(save(ns, "k", &o, 7, json!(3)))
        .await
        .expect("upsert");
    assert_eq!(c3.version, 7);
    assert_eq!(
        store.load(&key(ns, "k", &o)).await.unwrap().unwrap().value,
        json!(3)
    );

    assert!(store.load(&key(ns, "missing", &o)).await.unwrap().is_none());
    assert!(store
        .load(&key("other-namespace-x", "k", &o))
        .await
        .unwrap()
        .is_none());

    let fresh = store
        .save(save(ns, "fresh", &o, 4, json!(null)))
        .await
        .unwrap();
    assert_eq!(fresh.version, 4, "a new key takes the caller's version");
    assert_eq!(fresh.value, json!(null));

    assert!(store.delete(&key(ns, "k", &o), Some(7)).await.unwrap());
    assert!(store.load(&key(ns, "k", &o)).await.unwrap().is_none());
    assert!(!store.delete(&key(ns, "k", &o), None).await.unwrap());
    assert!(store.delete(&key(ns, "fresh", &o), None).await.unwrap());
    // Re-creating after delete starts from nothing.
    let again = store.save(cas(ns, "k", &o, 0, json!(1))).await.unwrap();
    assert_eq!(again.version, 1);
}

async fn versions_and_fencing(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    let fenced = |version: u64, fence: Option<u64>| SaveCheckpoint {
        fencing_token: fence,
        ..save(ns, "k", &o, version, json!(version))
    };
    assert_eq!(
        store.save(fenced(3, Some(5))).await.unwrap().fencing_token,
        Some(5)
    );
    // The version must increase: equal or lower is stale, with or without CAS.
    for version in [1, 2, 3] {
        assert!(
            is_conflict(&store.save(fenced(version, Some(5))).await),
            "{version}"
        );
    }
    let mut stale = cas(ns, "k", &o, 3, json!(0));
    stale.version = 3;
    stale.fencing_token = Some(5);
    assert!(
        is_conflict(&store.save(stale).await),
        "right expectedVersion, stale version"
    );
    assert!(
        is_conflict(&store.save(fenced(4, None)).await),
        "no fence under a stored fence"
    );
    assert!(
        is_conflict(&store.save(fenced(4, Some(4))).await),
        "a lower fence"
    );
    let cp = store.load(&key(ns, "k", &o)).await.unwrap().unwrap();
    assert_eq!(
        (cp.version, cp.value, cp.fencing_token),
        (3, json!(3), Some(5))
    );
    assert_eq!(
        store.save(fenced(4, Some(5))).await.unwrap().fencing_token,
        Some(5)
    );
    assert_eq!(
        store.save(fenced(5, Some(9))).await.unwrap().fencing_token,
        Some(9)
    );
    assert!(is_conflict(&store.save(fenced(6, Some(5))).await));
    assert_eq!(
        store
            .load(&key(ns, "k", &o))
            .await
            .unwrap()
            .unwrap()
            .version,
        5
    );
    // An unfenced key accepts any token, and no token.
    store.save(save(ns, "free", &o, 1, json!(0))).await.unwrap();
    store.save(save(ns, "free", &o, 2, json!(0))).await.unwrap();
}

async fn owner_scoping(store: &dyn CheckpointStore, ns: &str) {
    let a = owner("t1");
    let b = owner("t2");
    let partial = Ownership {
        tenant_id: Some("t1".into()),
        ..Default::default()
    };
    let unowned = Ownership::default();
    store.save(cas(ns, "k", &a, 0, json!("a"))).await.unwrap();
    // Every other owner has its own, empty slot for the same key.
    for (i, other) in [&b, &partial, &unowned].into_iter().enumerate() {
        assert!(store.load(&key(ns, "k", other)).await.unwrap().is_none());
        assert!(!store.delete(&key(ns, "k", other), None).await.unwrap());
        assert!(is_conflict(
            &store.save(cas(ns, "k", other, 1, json!("x"))).await
        ));
        let mine = store
            .save(cas(ns, "k", other, 0, json!(i)))
            .await
            .expect("another owner creates its own key");
        assert_eq!((mine.version, &mine.owner), (1, other));
    }
    store.save(cas(ns, "k", &b, 1, json!("b2"))).await.unwrap();
    assert!(store.delete(&key(ns, "k", &partial), None).await.unwrap());
    let cp = store.load(&key(ns, "k", &a)).await.unwrap().unwrap();
    assert_eq!((cp.version, cp.value), (1, json!("a")));
    assert_eq!(
        store.load(&key(ns, "k", &b)).await.unwrap().unwrap().value,
        json!("b2")
    );
    assert_eq!(
        store
            .load(&key(ns, "k", &unowned))
            .await
            .unwrap()
            .unwrap()
            .value,
        json!(2)
    );
}

async fn list_all(store: &dyn CheckpointStore, mut q: ListCheckpoints) -> Vec<String> {
    let mut keys = Vec::new();
    loop {
        let page = store.list(q.clone()).await.unwrap();
        assert!(page.items.len() <= q.limit.unwrap_or(u32::MAX).max(1) as usize);
        keys.extend(
            page.items
                .iter()
                .map(|c| format!("{}@{}", c.key, c.owner.tenant_id.as_deref().unwrap_or("-"))),
        );
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
        let mut s = save(ns, k, o, 1, json!(i));
        s.category = Some(if i < 4 { "x" } else { "y" }.into());
        store.save(s).await.unwrap();
    }
    // The same key under both owners lists twice, owner key breaking the tie.
    store
        .save(save(ns, "t:2", &a, 1, json!("a")))
        .await
        .unwrap();
    store
        .save(save(&format!("{ns}-other"), "t:1", &a, 1, json!(0)))
        .await
        .unwrap();
    let q =
        |prefix: Option<&str>, filter: Option<&Ownership>, limit: Option<u32>| ListCheckpoints {
            namespace: Some(ns.into()),
            key_prefix: prefix.map(str::to_string),
            owner: filter.cloned().unwrap_or_default(),
            limit,
            ..Default::default()
        };
    let all = [
        "s:9@t2",
        "t@t2",
        "t:1@t1",
        "t:10@t2",
        "t:2@t1",
        "t:2@t2",
        "t:3@t1",
        "t:\u{e9}@t1",
        "u:1@t1",
    ];
    for limit in [Some(1), Some(2), Some(3), Some(100), None] {
        assert_eq!(
            list_all(store, q(None, None, limit)).await,
            all,
            "limit {limit:?}"
        );
        assert_eq!(
            list_all(store, q(Some("t:"), None, limit)).await,
            [
                "t:1@t1",
                "t:10@t2",
                "t:2@t1",
                "t:2@t2",
                "t:3@t1",
                "t:\u{e9}@t1"
            ],
        );
        assert_eq!(
            list_all(store, q(Some("t:"), Some(&a), limit)).await,
            ["t:1@t1", "t:2@t1", "t:3@t1", "t:\u{e9}@t1"],
        );
        let mut desc = q(None, Some(&b), limit);
        desc.order = Order::Desc;
        assert_eq!(
            list_all(store, desc).await,
            ["t:2@t2", "t:10@t2", "t@t2", "s:9@t2"]
        );
    }
    // Filters: partial owner, exact owner, category (one, a set, the empty set).
    let tenant_only = Ownership {
        tenant_id: Some("t1".into()),
        ..Default::default()
    };
    assert_eq!(
        list_all(store, q(Some("t:1"), Some(&tenant_only), None)).await,
        ["t:1@t1"]
    );
    let mut exact = q(Some("t:1"), Some(&tenant_only), None);
    exact.exact_owner = true;
    assert!(list_all(store, exact).await.is_empty());
    let by_category = |set: &[&str]| ListCheckpoints {
        categories: Some(set.iter().map(|s| s.to_string()).collect()),
        ..q(None, None, None)
    };
    assert_eq!(
        list_all(store, by_category(&["y"])).await,
        ["s:9@t2", "t@t2", "t:\u{e9}@t1", "u:1@t1"]
    );
    assert_eq!(list_all(store, by_category(&["x", "y"])).await.len(), 8);
    assert!(list_all(store, by_category(&[])).await.is_empty());
    assert!(list_all(store, q(Some("zz"), None, None)).await.is_empty());
    assert!(list_all(store, q(None, Some(&owner("t3")), None))
        .await
        .is_empty());
    // Without a namespace: every namespace, still in order.
    let across = ListCheckpoints {
        key_prefix: Some("t:1".into()),
        owner: a.clone(),
        ..Default::default()
    };
    let page = store.list(across).await.unwrap();
    let namespaces: Vec<_> = page
        .items
        .iter()
        .filter(|c| c.namespace.starts_with(ns))
        .map(|c| c.namespace.clone())
        .collect();
    assert_eq!(namespaces, [ns.to_string(), format!("{ns}-other")]);
    // A limit below 1 gives one item; a cursor only when more follow.
    let page = store.list(q(None, None, Some(0))).await.unwrap();
    assert_eq!(page.items.len(), 1);
    let page = store.list(q(Some("t:"), None, Some(6))).await.unwrap();
    assert_eq!(page.items.len(), 6);
    assert!(page.next_cursor.is_none());
}

async fn cursor_stability(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    for k in ["b", "d", "f", "h"] {
        store.save(save(ns, k, &o, 1, json!(k))).await.unwrap();
    }
    for order in [Order::Asc, Order::Desc] {
        let q = ListCheckpoints {
            namespace: Some(ns.into()),
            limit: Some(2),
            order,
            ..Default::default()
        };
        let p1 = store.list(q.clone()).await.unwrap();
        let keys: Vec<_> = p1.items.iter().map(|c| c.key.clone()).collect();
        let cursor = p1.next_cursor.expect("more pages");
        // Writes between pages: on both sides of the cursor, and deletes of seen keys.
        let seen = keys[0].clone();
        store.save(save(ns, "a", &o, 1, json!(0))).await.unwrap();
        store.save(save(ns, "c", &o, 1, json!(0))).await.unwrap();
        store.save(save(ns, "e", &o, 1, json!(0))).await.unwrap();
        store.save(save(ns, "g", &o, 1, json!(0))).await.unwrap();
        assert!(store.delete(&key(ns, &seen, &o), None).await.unwrap());
        let rest = list_all(
            store,
            ListCheckpoints {
                cursor: Some(cursor.clone()),
                ..q.clone()
            },
        )
        .await;
        let want: Vec<String> = match order {
            Order::Asc => ["e", "f", "g", "h"]
                .iter()
                .map(|k| format!("{k}@t1"))
                .collect(),
            Order::Desc => ["e", "d", "c", "b", "a"]
                .iter()
                .map(|k| format!("{k}@t1"))
                .collect(),
        };
        assert_eq!(rest, want, "{order:?}: continues strictly after the cursor");
        let again = list_all(
            store,
            ListCheckpoints {
                cursor: Some(cursor),
                ..q
            },
        )
        .await;
        assert_eq!(again, rest, "the same cursor gives the same continuation");
        // Restore the deleted key and remove the additions for the next order.
        store.save(save(ns, &seen, &o, 1, json!(0))).await.unwrap();
        for k in ["a", "c", "e", "g"] {
            assert!(store.delete(&key(ns, k, &o), None).await.unwrap());
        }
    }
}

async fn counter(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    assert!(is_conflict(
        &store.save(cas(ns, "k", &o, 1, json!(1))).await
    ));
    assert!(
        store.load(&key(ns, "k", &o)).await.unwrap().is_none(),
        "a failed CAS creates nothing"
    );
    store.save(cas(ns, "k", &o, 0, json!(1))).await.unwrap();
    assert!(is_conflict(
        &store.save(cas(ns, "k", &o, 0, json!(2))).await
    ));
    assert!(is_conflict(
        &store.save(cas(ns, "k", &o, 2, json!(2))).await
    ));
    assert!(is_conflict(&store.delete(&key(ns, "k", &o), Some(2)).await));
    let cp = store.load(&key(ns, "k", &o)).await.unwrap().unwrap();
    assert_eq!(
        (cp.version, cp.value),
        (1, json!(1)),
        "failed CAS changes nothing"
    );
    store.save(cas(ns, "k", &o, 1, json!(2))).await.unwrap();
    assert!(is_conflict(
        &store.save(cas(ns, "k", &o, 1, json!(3))).await
    ));
    assert!(!store
        .delete(&key(ns, "missing", &o), Some(1))
        .await
        .unwrap());

    // Concurrent read-modify-write with retry: no increment is lost.
    let workers = 8u64;
    let per = 5u64;
    store
        .save(cas(ns, "counter", &o, 0, json!(0)))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let o = o.clone();
        tasks.push(async move {
            for _ in 0..per {
                loop {
                    let cur = store.load(&key(ns, "counter", &o)).await.unwrap().unwrap();
                    let n = cur.value.as_u64().unwrap();
                    let r = store
                        .save(cas(ns, "counter", &o, cur.version, json!(n + 1)))
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
    let cp = store.load(&key(ns, "counter", &o)).await.unwrap().unwrap();
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
    store.save(save(ns, "k", &o, 1, json!("v1"))).await.unwrap();
    for round in 0..5u64 {
        let a = store.load(&key(ns, "k", &o)).await.unwrap().unwrap();
        let b = store.load(&key(ns, "k", &o)).await.unwrap().unwrap();
        assert_eq!(a.version, b.version);
        let (ra, rb) = tokio::join!(
            store.save(cas(ns, "k", &o, a.version, json!(["a", round]))),
            store.save(cas(ns, "k", &o, b.version, json!(["b", round]))),
        );
        assert_eq!(
            [&ra, &rb].iter().filter(|r| r.is_ok()).count(),
            1,
            "one writer wins"
        );
        assert!(
            is_conflict(&ra) || is_conflict(&rb),
            "the loser sees a conflict"
        );
        let winner = match (ra, rb) {
            (Ok(w), _) | (_, Ok(w)) => w,
            (Err(e), _) => panic!("no winner: {e}"),
        };
        assert_eq!(winner.version, a.version + 1);
        let now = store.load(&key(ns, "k", &o)).await.unwrap().unwrap();
        assert_eq!(now, winner, "the winner's value is what is stored");
    }
    // Two racing writers without CAS but with the same caller version: one wins.
    let cur = store
        .load(&key(ns, "k", &o))
        .await
        .unwrap()
        .unwrap()
        .version;
    let (ra, rb) = tokio::join!(
        store.save(save(ns, "k", &o, cur + 1, json!("x"))),
        store.save(save(ns, "k", &o, cur + 1, json!("y"))),
    );
    assert_eq!([&ra, &rb].iter().filter(|r| r.is_ok()).count(), 1);
    // Two racing creates: exactly one wins.
    let (ra, rb) = tokio::join!(
        store.save(cas(ns, "new", &o, 0, json!("a"))),
        store.save(cas(ns, "new", &o, 0, json!("b"))),
    );
    assert_eq!([&ra, &rb].iter().filter(|r| r.is_ok()).count(), 1);
    assert!(is_conflict(&ra) || is_conflict(&rb));
    // Two racing deletes at the same version: exactly one deletes.
    let cur = store.load(&key(ns, "new", &o)).await.unwrap().unwrap();
    let k = key(ns, "new", &o);
    let (da, db) = tokio::join!(
        store.delete(&k, Some(cur.version)),
        store.delete(&k, Some(cur.version))
    );
    let deleted = [&da, &db].iter().filter(|r| matches!(r, Ok(true))).count();
    assert_eq!(deleted, 1);
}

async fn bad_input(store: &dyn CheckpointStore, ns: &str) {
    let o = owner("t1");
    let kind = |r: Result<Checkpoint>| r.unwrap_err().kind;
    assert_eq!(
        kind(store.save(save("", "k", &o, 1, json!(1))).await),
        ErrorKind::CheckpointConflict
    );
    assert_eq!(
        kind(store.save(save(ns, "", &o, 1, json!(1))).await),
        ErrorKind::CheckpointConflict
    );
    assert_eq!(
        kind(store.save(save(ns, "k", &o, 0, json!(1))).await),
        ErrorKind::CheckpointConflict
    );
    assert_eq!(
        kind(
            store
                .save(save(
                    ns,
                    &"k".repeat(model::MAX_KEY_BYTES + 1),
                    &o,
                    1,
                    json!(1)
                ))
                .await
        ),
        ErrorKind::Range
    );
    assert_eq!(
        kind(store.save(save(ns, "k\0", &o, 1, json!(1))).await),
        ErrorKind::Type
    );
    let r = store.load(&key(ns, "", &o)).await;
    assert!(matches!(r, Err(e) if e.kind == ErrorKind::CheckpointConflict));
    for cursor in ["", "not-a-cursor"] {
        let r = store
            .list(ListCheckpoints {
                namespace: Some(ns.into()),
                cursor: Some(cursor.into()),
                ..Default::default()
            })
            .await;
        assert!(
            matches!(r, Err(e) if e.kind == ErrorKind::CheckpointConflict),
            "{cursor:?}"
        );
    }
    let page = store
        .list(ListCheckpoints {
            namespace: Some(ns.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(page.items.is_empty(), "bad input changed nothing");
}

/// What a database store remembers of its own writes (`recent_write`, issue 13), `a` and
/// `b` two persistences of one database: the text and version `write_text` and
/// `create_capped` wrote, with the saver's memo where the store keeps one; a plain save,
/// a delete, a failed write or a capped create that wrote nothing (the listing full, the
/// key taken) forgets the key; `b` remembers nothing of `a`'s writes. A
/// write over a remembered one lands only while the stored value is still its text: after
/// `b` deleted and recreated the key at the same version with another value, it is a
/// conflict that writes nothing.
pub(crate) async fn own_writes_remembered(a: &dyn CheckpointStore, b: &dyn CheckpointStore) {
    let owner = Ownership {
        account_id: Some("a".into()),
        ..Default::default()
    };
    // A compare-and-swap save of `{"k": v}` over `expected`, and that value's text.
    let save =
        |k: &str, expected: u64, v: &str| cas("recent", k, &owner, expected, json!({ "k": v }));
    let text = |v: &str| json!({ "k": v }).to_string();
    let stored = |cp: CheckpointText| {
        let value: Value = serde_json::from_str(cp.value_text()).unwrap();
        (cp.version(), value)
    };
    let k = key("recent", "k", &owner);

    let mut first = save("k", 0, "one");
    first.memo = Some(ValueMemo::new(7_u32));
    a.write_text(first, Some(&text("one"))).await.unwrap();
    let one = a.recent_write(&k).unwrap();
    assert_eq!((one.version, &*one.text), (1, text("one").as_str()));
    if a.beside_text() == BesideText::Memo {
        assert_eq!(one.memo.as_ref().unwrap().take::<u32>(), Some(7));
    }
    assert!(b.recent_write(&k).is_none());
    let unowned = key("recent", "k", &Ownership::default());
    assert!(a.recent_write(&unowned).is_none());

    a.write_over(save("k", 1, "two"), Some(&text("two")), &one)
        .await
        .unwrap();
    let two = a.recent_write(&k).unwrap();
    assert_eq!((two.version, &*two.text), (2, text("two").as_str()));
    let now = stored(a.load_text(&k).await.unwrap().unwrap());
    assert_eq!(now, (2, json!({ "k": "two" })));
    // A write over a remembered one replaces a version: it never creates.
    let e = a
        .write_over(save("new", 0, "x"), Some(&text("x")), &two)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Internal, "{e}");

    // b deletes the key and writes it again up to version 2, another value.
    assert!(b.delete(&k, None).await.unwrap());
    b.save(save("k", 0, "theirs")).await.unwrap();
    b.save(save("k", 1, "theirs")).await.unwrap();
    let e = a
        .write_over(save("k", 2, "three"), Some(&text("three")), &two)
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::CheckpointConflict, "{e}");
    let now = stored(a.load_text(&k).await.unwrap().unwrap());
    assert_eq!(now, (2, json!({ "k": "theirs" })));
    assert!(
        a.recent_write(&k).is_none(),
        "a failed write forgets the key"
    );

    // create_capped remembers; a plain save forgets; write_text remembers; delete forgets.
    let c = key("recent", "c", &owner);
    let within = ListCheckpoints {
        namespace: Some("recent".into()),
        owner: owner.clone(),
        ..Default::default()
    };
    let created = a
        .create_capped(save("c", 0, "c1"), Some(text("c1")), &within, 10)
        .unwrap()
        .await
        .unwrap();
    assert_eq!(created, Capped::Saved);
    assert_eq!(&*a.recent_write(&c).unwrap().text, text("c1"));
    a.save(save("c", 1, "c2")).await.unwrap();
    assert!(a.recent_write(&c).is_none());
    a.write_text(save("c", 2, "c3"), Some(&text("c3")))
        .await
        .unwrap();
    assert_eq!(a.recent_write(&c).unwrap().version, 3);
    assert!(a.delete(&c, None).await.unwrap());
    assert!(a.recent_write(&c).is_none());
    // A create refused by the cap remembers nothing.
    let full = a
        .create_capped(save("d", 0, "d"), Some(text("d")), &within, 1)
        .unwrap()
        .await
        .unwrap();
    assert_eq!(full, Capped::Full(1));
    assert!(a.recent_write(&key("recent", "d", &owner)).is_none());

    // A capped create that wrote nothing forgets what was remembered of its key: here a
    // memory another persistence made stale (it deleted the key, then took it again).
    let e = key("recent", "e", &owner);
    let remember_e = |value: &'static str| {
        a.create_capped(save("e", 0, value), Some(text(value)), &within, 10)
            .unwrap()
    };
    assert_eq!(remember_e("e1").await.unwrap(), Capped::Saved);
    assert!(b.delete(&e, None).await.unwrap());
    let listed = a.count(&within, 10).unwrap().await.unwrap();
    let full = a
        .create_capped(save("e", 0, "e2"), Some(text("e2")), &within, listed)
        .unwrap()
        .await
        .unwrap();
    assert_eq!(full, Capped::Full(listed));
    assert!(
        a.recent_write(&e).is_none(),
        "a create refused by the cap forgets the key"
    );
    assert_eq!(remember_e("e3").await.unwrap(), Capped::Saved);
    assert!(b.delete(&e, None).await.unwrap());
    b.write_text(save("e", 0, "theirs"), Some(&text("theirs")))
        .await
        .unwrap();
    let taken = a
        .create_capped(save("e", 0, "e4"), Some(text("e4")), &within, 10)
        .unwrap()
        .await;
    assert!(is_conflict(&taken), "the key is taken: {taken:?}");
    assert!(
        a.recent_write(&e).is_none(),
        "a create refused by a taken key forgets the key"
    );
}
