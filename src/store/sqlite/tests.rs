//! SQLite store tests: conformance, migrations of earlier layouts, locking, close.

use super::*;
use crate::error::ErrorKind;
use crate::store::conformance::{cas, key};
use rusqlite::Connection;
use serde_json::json;

/// Two processes opening a new file together: while another connection holds the
/// write lock of the still rollback-mode file, the WAL switch waits (up to the busy
/// timeout) instead of failing at once with SQLITE_BUSY.
#[test]
fn opening_waits_for_a_concurrent_writer_of_a_new_file() {
    let (_dir, opts) = temp_db();
    let mut other = Connection::open(&opts.filename).unwrap();
    other
        .execute_batch("CREATE TABLE other_setup (x INTEGER)")
        .unwrap();
    let tx = other
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    tx.execute("INSERT INTO other_setup VALUES (1)", [])
        .unwrap();
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let opener = std::thread::spawn(move || {
        locked_rx.recv().unwrap();
        open(&opts).map(|c| {
            c.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))
                .unwrap()
        })
    });
    locked_tx.send(()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    tx.commit().unwrap();
    drop(other);
    assert_eq!(opener.join().unwrap().unwrap(), "wal");

    // With the lock held past the busy timeout, it is the backend's (retryable) failure.
    let (_dir2, opts2) = temp_db();
    let opts2 = SqliteOptions::new(&opts2.filename, Some(200)).unwrap();
    let mut holder = Connection::open(&opts2.filename).unwrap();
    holder.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
    let held = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let started = std::time::Instant::now();
    let e = open(&opts2).err().unwrap();
    assert_eq!(e.kind, crate::error::ErrorKind::StoreUnavailable, "{e}");
    assert!(started.elapsed() >= Duration::from_millis(200));
    held.rollback().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_busy_past_the_timeout_is_a_backend_error_not_a_conflict() {
    let (_dir, opts) = temp_db();
    let opts = SqliteOptions::new(&opts.filename, Some(200)).unwrap();
    let mut holder = Connection::open(&opts.filename).unwrap();
    holder.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
    let held = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let p = SqlitePersistence::new(opts);
    let owner = Ownership {
        tenant_id: Some("t".into()),
        ..Ownership::default()
    };
    let e = p
        .checkpoints()
        .load(&key("ns", "k", &owner))
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::StoreUnavailable, "{e}");
    let e = p
        .checkpoints()
        .list(ListCheckpoints {
            namespace: Some("ns".into()),
            ..ListCheckpoints::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::StoreUnavailable, "{e}");
    // A write locked out past the timeout is the same backend failure, not a conflict.
    let e = p.checkpoints().save(save("k", Some(0))).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::StoreUnavailable, "{e}");
    assert_eq!(e.code(), "ERR_PRISM_STORE_UNAVAILABLE");
    held.rollback().unwrap();
    assert_eq!(
        p.checkpoints().load(&key("ns", "k", &owner)).await.unwrap(),
        None
    );
}

fn temp_db() -> (tempfile::TempDir, SqliteOptions) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.db");
    let opts = SqliteOptions::new(file.to_str().unwrap(), None).unwrap();
    (dir, opts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance() {
    let (_dir, opts) = temp_db();
    let p = SqlitePersistence::new(opts);
    super::super::conformance::run(&*p.checkpoints()).await;
    assert_eq!(
        p.query_strings("PRAGMA integrity_check".into())
            .await
            .unwrap(),
        ["ok"]
    );
    assert_eq!(
        p.query_strings("PRAGMA journal_mode".into()).await.unwrap(),
        ["wal"]
    );
    p.close().await.unwrap();
}

/// `":memory:"` (the reference's "ephemeral tests"): every connection of the persistence,
/// the writer's and each reader's, shares one database, which passes the whole
/// conformance run with reads racing writes; another persistence's is another database,
/// and nothing is written to disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_database_is_shared_by_the_persistences_connections_only() {
    let cwd_before: Vec<_> = std::fs::read_dir(".")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let p = SqlitePersistence::new(SqliteOptions::new(":memory:", None).unwrap());
    super::super::conformance::run(&*p.checkpoints()).await;
    // Writes and reads in flight together: every read sees what its write committed.
    let store = p.checkpoints();
    let rounds: Vec<_> = (0..40)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let k = format!("r{i}");
                store
                    .save(cas("mem", &k, &owner(), 0, json!(i)))
                    .await
                    .unwrap();
                store
                    .load(&key("mem", &k, &owner()))
                    .await
                    .unwrap()
                    .map(|c| c.version)
            })
        })
        .collect();
    let mut seen = Vec::new();
    for r in rounds {
        seen.push(r.await.unwrap());
    }
    assert!(seen.iter().all(|v| *v == Some(1)), "{seen:?}");
    let other = SqlitePersistence::new(SqliteOptions::new(":memory:", None).unwrap());
    assert!(other
        .checkpoints()
        .load(&key("mem", "r0", &owner()))
        .await
        .unwrap()
        .is_none());
    p.close().await.unwrap();
    other.close().await.unwrap();
    let cwd_after: Vec<_> = std::fs::read_dir(".")
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(cwd_before, cwd_after, "a memory database wrote a file");
}

/// `wal: false` keeps SQLite's rollback journal, and the store still passes conformance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_wal_the_rollback_journal_serves_the_store() {
    let (_dir, opts) = temp_db();
    let p = SqlitePersistence::new(opts.with(Some(false), None, None).unwrap());
    super::super::conformance::run(&*p.checkpoints()).await;
    assert_eq!(
        p.query_strings("PRAGMA journal_mode".into()).await.unwrap(),
        ["delete"]
    );
    p.close().await.unwrap();
}

/// As the reference: a missing directory is created, and the file (with its `-wal` and
/// `-shm`) is its owner's only (`0o600`, or `fileMode`), set again on every open.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_gets_its_directory_and_the_mode_asked() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a/b/t.db");
    let name = file.to_str().unwrap();
    let modes = |f: &std::path::Path| {
        ["", "-wal", "-shm"].map(|s| {
            let mut n = f.as_os_str().to_owned();
            n.push(s);
            std::fs::metadata(n).unwrap().permissions().mode() & 0o777
        })
    };
    let p = SqlitePersistence::new(SqliteOptions::new(name, None).unwrap());
    p.checkpoints().save(save("k", Some(0))).await.unwrap();
    assert_eq!(modes(&file), [0o600; 3]);
    p.close().await.unwrap();
    // An existing file opened with another mode gets that mode.
    let opts = SqliteOptions::new(name, None).unwrap();
    let q = SqlitePersistence::new(opts.with(None, Some(0o640), None).unwrap());
    assert!(q
        .checkpoints()
        .load(&key("n", "k", &owner()))
        .await
        .unwrap()
        .is_some());
    q.checkpoints().save(save("k", Some(1))).await.unwrap();
    assert_eq!(modes(&file), [0o640; 3]);
    q.close().await.unwrap();
}

/// `skipMigrations`: the table is not created, so a load names SQLite's missing table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipping_migrations_creates_no_table() {
    let (_dir, opts) = temp_db();
    let p = SqlitePersistence::new(opts.with(None, None, Some(true)).unwrap());
    let e = p
        .checkpoints()
        .load(&key("n", "k", &owner()))
        .await
        .unwrap_err();
    assert!(e.message.contains("no such table"), "{e}");
    p.close().await.unwrap();
}

fn owner() -> Ownership {
    Ownership {
        account_id: Some("a".into()),
        ..Default::default()
    }
}

fn save(k: &str, expected: Option<u64>) -> SaveCheckpoint {
    match expected {
        Some(e) => cas("n", k, &owner(), e, json!({ "k": k })),
        None => crate::store::conformance::save("n", k, &owner(), 1, json!({ "k": k })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_reopen_and_two_connections_share_the_file() {
    let (_dir, opts) = temp_db();
    let a = SqlitePersistence::new(opts.clone());
    let b = SqlitePersistence::new(opts.clone());
    a.checkpoints().save(save("k", Some(0))).await.unwrap();
    let seen = b
        .checkpoints()
        .load(&key("n", "k", &owner()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.version, 1);
    // A CAS across connections: b's stale write loses.
    a.checkpoints().save(save("k", Some(1))).await.unwrap();
    let r = b.checkpoints().save(save("k", Some(1))).await;
    assert!(matches!(r, Err(e) if e.kind == crate::error::ErrorKind::CheckpointConflict));
    a.close().await.unwrap();
    b.close().await.unwrap();
    let c = SqlitePersistence::new(opts);
    let cp = c
        .checkpoints()
        .load(&key("n", "k", &owner()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cp.version, 2);
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_waits_for_work_in_flight_and_refuses_later_work() {
    let (_dir, opts) = temp_db();
    let p = Arc::new(SqlitePersistence::new(opts));
    let store = p.checkpoints();
    let mut writes = Vec::new();
    for i in 0..20 {
        let store = store.clone();
        writes.push(tokio::spawn(async move {
            store.save(save(&format!("k{i}"), None)).await
        }));
    }
    tokio::task::yield_now().await;
    p.close().await.unwrap();
    p.close().await.unwrap();
    let mut ok = 0;
    for w in writes {
        match w.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => assert!(e.message.contains("closed"), "{e}"),
        }
    }
    let e = store.load(&key("n", "k0", &owner())).await.unwrap_err();
    assert_eq!(e.reason(), Some("invalid_input"));
    assert!(e.message.contains("closed"));
    // Every write that resolved is on disk.
    let again = SqlitePersistence::new(p.shared.options.clone());
    let page = again
        .checkpoints()
        .list(ListCheckpoints {
            namespace: Some("n".into()),
            limit: Some(100),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), ok);
    again.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_waits_for_admitted_operations() {
    let (_dir, opts) = temp_db();
    let p = Arc::new(SqlitePersistence::new(opts));
    let store = p.checkpoints();
    let ticket = store.admit().unwrap();
    let closer = {
        let p = p.clone();
        tokio::spawn(async move { p.close().await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !closer.is_finished(),
        "close waits for the admitted operation"
    );
    assert!(store.admit().is_err(), "no admission once close has begun");
    // The admitted operation still runs to completion.
    store.save(save("late", None)).await.unwrap();
    drop(ticket);
    closer.await.unwrap().unwrap();
    assert!(store.load(&key("n", "late", &owner())).await.is_err());
}

#[tokio::test]
async fn an_unopenable_file_is_a_typed_error() {
    // Under a regular file, so that no directory can be made (not even by root).
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    let name = blocker.join("x/y.db");
    let p = SqlitePersistence::new(SqliteOptions::new(name.to_str().unwrap(), None).unwrap());
    let e = p
        .checkpoints()
        .load(&key("n", "k", &owner()))
        .await
        .unwrap_err();
    assert_eq!(e.reason(), Some("invalid_input"));
    assert!(e.message.contains("cannot open"), "{e}");
}

/// The schema of prism-review before owner-scoped keys (0.1), exactly as it created it.
const OUR_EARLIER_DDL: &str = "
    CREATE TABLE prism_checkpoints (
      namespace TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL CHECK (version >= 1),
      tenant_id TEXT, account_id TEXT, user_id TEXT, category TEXT, value TEXT NOT NULL,
      created_at TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (namespace, key)
    ) WITHOUT ROWID;
    CREATE INDEX prism_checkpoints_by_owner
      ON prism_checkpoints (namespace, tenant_id, account_id, user_id, key);
    INSERT INTO prism_checkpoints VALUES
      ('prism.artifact', 't1:a1', 3, 't', NULL, 'u', 'artifact', '{\"id\":\"a1\"}',
       '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z'),
      ('other', 'k', 1, NULL, 'acct', NULL, NULL, '[1,2]',
       '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');";

/// The layout `@arnilo/prism-session-store-sqlite` creates (fencing token, metadata).
const REFERENCE_DDL: &str = "
    CREATE TABLE prism_checkpoints (
      namespace TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, fencing_token INTEGER,
      category TEXT, tenant_id TEXT, account_id TEXT, user_id TEXT, value TEXT NOT NULL,
      metadata TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (namespace, key)
    );
    CREATE INDEX prism_checkpoints_list_idx
      ON prism_checkpoints (namespace, category, tenant_id, updated_at DESC, key);
    INSERT INTO prism_checkpoints VALUES
      ('wf', 'run-1', 4, 7, 'running', 't', NULL, NULL, '{\"step\":2}', '{\"m\":1}',
       '2026-01-01T00:00:00.000Z', '2026-01-03T00:00:00.000Z');";

async fn reopen_migrated(ddl: &str) -> (tempfile::TempDir, SqlitePersistence) {
    let (dir, opts) = temp_db();
    Connection::open(&opts.filename)
        .unwrap()
        .execute_batch(ddl)
        .unwrap();
    (dir, SqlitePersistence::new(opts))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_of_our_earlier_schema_is_migrated_on_open() {
    let (_dir, p) = reopen_migrated(OUR_EARLIER_DDL).await;
    let store = p.checkpoints();
    let owner = Ownership {
        tenant_id: Some("t".into()),
        user_id: Some("u".into()),
        ..Default::default()
    };
    let cp = store
        .load(&key("prism.artifact", "t1:a1", &owner))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (cp.version, cp.value.clone(), cp.category.as_deref()),
        (3, json!({ "id": "a1" }), Some("artifact"))
    );
    assert_eq!(
        (cp.created_at.as_str(), cp.updated_at.as_str()),
        ("2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z")
    );
    assert_eq!((cp.fencing_token, cp.metadata), (None, None));
    let acct = Ownership {
        account_id: Some("acct".into()),
        ..Default::default()
    };
    assert_eq!(
        store
            .load(&key("other", "k", &acct))
            .await
            .unwrap()
            .unwrap()
            .value,
        json!([1, 2])
    );
    // Owner-scoped from now on: another owner writes its own key, the CAS goes on.
    assert!(store
        .load(&key("prism.artifact", "t1:a1", &acct))
        .await
        .unwrap()
        .is_none());
    store
        .save(cas("prism.artifact", "t1:a1", &acct, 0, json!(1)))
        .await
        .unwrap();
    assert_eq!(
        store
            .save(cas("prism.artifact", "t1:a1", &owner, 3, json!(2)))
            .await
            .unwrap()
            .version,
        4
    );
    // Opening again (another process) finds the migrated table and changes nothing.
    let again = SqlitePersistence::new(p.shared.options.clone());
    assert_eq!(
        again
            .checkpoints()
            .load(&key("prism.artifact", "t1:a1", &owner))
            .await
            .unwrap()
            .unwrap()
            .version,
        4
    );
    assert_eq!(
        p.query_strings("PRAGMA integrity_check".into())
            .await
            .unwrap(),
        ["ok"]
    );
    let tables = p
        .query_strings(
            "SELECT name FROM sqlite_master WHERE name LIKE 'prism_checkpoints%' ORDER BY name"
                .into(),
        )
        .await
        .unwrap();
    assert_eq!(tables, ["prism_checkpoints", "prism_checkpoints_owner_key"]);
    again.close().await.unwrap();
    p.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_of_the_reference_layout_is_migrated_with_fences_and_metadata() {
    let (_dir, p) = reopen_migrated(REFERENCE_DDL).await;
    let owner = Ownership {
        tenant_id: Some("t".into()),
        ..Default::default()
    };
    let cp = p
        .checkpoints()
        .load(&key("wf", "run-1", &owner))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((cp.version, cp.fencing_token), (4, Some(7)));
    assert_eq!(
        serde_json::Value::Object(cp.metadata.unwrap().to_map().unwrap()),
        json!({ "m": 1 })
    );
    assert_eq!(
        (cp.value, cp.category.as_deref()),
        (json!({ "step": 2 }), Some("running"))
    );
    let mut low = cas("wf", "run-1", &owner, 4, json!(0));
    low.fencing_token = Some(6);
    assert!(
        p.checkpoints().save(low).await.is_err(),
        "the migrated fence still holds"
    );
    p.close().await.unwrap();
}

#[test]
fn options_are_checked() {
    assert!(SqliteOptions::new("", None).is_err());
    assert!(SqliteOptions::new("a\0b", None).is_err());
    assert_eq!(
        SqliteOptions::new("x", Some(0)).unwrap_err().class_name(),
        "RangeError"
    );
    assert_eq!(
        SqliteOptions::new("x", Some(600_001))
            .unwrap_err()
            .class_name(),
        "RangeError"
    );
    assert_eq!(
        SqliteOptions::new("x", None).unwrap().busy_timeout,
        Duration::from_millis(5000)
    );
}

/// Reads never run on the calling (JavaScript) thread: the connection work of a read
/// runs on another thread (checked by the thread it ran on, not by timing: polled once,
/// a fast read may already have answered). Awaited, `load_text` answers the stored value
/// text as it was written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_leave_the_calling_thread_and_load_text_answers_the_stored_text() {
    let (_dir, opts) = temp_db();
    let p = SqlitePersistence::new(opts);
    let store = p.checkpoints();
    let k = CheckpointKey::new("n", "a", &owner());
    store.save(save("a", Some(0))).await.unwrap();
    // The first read opens a reader connection; later ones reuse it.
    assert!(store.load(&k).await.unwrap().is_some());
    let here = std::thread::current().id();
    for _ in 0..3 {
        let ran = read(&p.shared, |_| Ok(std::thread::current().id()))
            .await
            .unwrap();
        assert_ne!(ran, here, "a read ran on the calling thread");
    }
    let text = store.load_text(&k).await.unwrap().expect("saved");
    assert_eq!(text.value_text(), r#"{"k":"a"}"#);
    let cp = store.load(&k).await.unwrap().unwrap();
    assert_eq!(cp.value, json!({ "k": "a" }));
    p.close().await.unwrap();
}

/// Every connection of a store, the writer's and each reader's, plans a listing's SQL once:
/// binding its `LIMIT` (or anything else) to another value does not make SQLite parse and
/// plan it again (`configure`: the query planner stability guarantee), so the statement
/// cache saves that work on every listing and every `attach` (issue 13).
#[test]
fn listings_are_planned_once_per_connection_whatever_they_are_bound_to() {
    let (_dir, opts) = temp_db();
    let conns = conns::Conns::new(opts.clone());
    let writer = open(&opts).unwrap();
    for k in ["a", "b", "c", "d"] {
        let texts = SaveTexts {
            value: format!("{{\"k\":\"{k}\"}}"),
            metadata: None,
        };
        save_sync(&mut Db::cached(&writer), save(k, None), texts).unwrap();
    }
    let query = |limit| ListCheckpoints {
        namespace: Some("n".into()),
        owner: owner(),
        limit: Some(limit),
        ..ListCheckpoints::default()
    };
    let replans = |db: &mut Db<'_, '_>| {
        let mut found = Vec::new();
        for limit in [1, 2, 3, 4, 2] {
            let page = list_sync(db, &query(limit), Ok).unwrap();
            found.push(page.items.len());
            count_sync(db, &query(limit), u64::from(limit)).unwrap();
        }
        assert_eq!(found, [1, 2, 3, 4, 2], "each page as long as its limit");
        let status = rusqlite::StatementStatus::RePrepare;
        let mut replanned = |l: Listing| db.listing(l.shape, &l.sql).unwrap().get_status(status);
        (
            replanned(list_sql(&query(1), None, 2)),
            replanned(count_sql(&query(1), None, 2)),
        )
    };
    let mut kept = db::Kept::default();
    let mut writer_db = Db::kept(&writer, &mut kept);
    assert_eq!(replans(&mut writer_db), (0, 0), "the writer's connection");
    // The first reader opens the file as the writer does; a second one only opens it.
    let (first, second) = conns
        .read(|first| {
            let second = conns.read(|second| Ok(replans(second)))?;
            Ok((replans(first), second))
        })
        .unwrap();
    assert_eq!(first, (0, 0), "the first reader");
    assert_eq!(second, (0, 0), "a reader opened later");
    conns.close().unwrap();
}

/// The `Column` instructions of `sql`'s program: each decodes one column of a row.
fn columns_decoded(conn: &Connection, sql: &str, p: Vec<SqlValue>) -> usize {
    let mut plan = conn.prepare(&format!("EXPLAIN {sql}")).unwrap();
    let ops = plan
        .query_map(params_from_iter(p), |r| r.get::<_, String>(1))
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap();
    ops.iter().filter(|op| *op == "Column").count()
}

/// `attach` counts its thread's records on the writer, inside the group commit (issue
/// 13): the count decodes only what its conditions read (here, an exact owner under a
/// namespace and key prefix: nothing but the key), not every column of every row as a
/// listing of the same rows does.
#[test]
fn a_count_decodes_no_column_it_does_not_need() {
    let (_dir, opts) = temp_db();
    let writer = open(&opts).unwrap();
    let query = ListCheckpoints {
        namespace: Some("n".into()),
        key_prefix: Some("thread/".into()),
        owner: owner(),
        exact_owner: true,
        ..ListCheckpoints::default()
    };
    let Listing { sql, params, .. } = count_sql(&query, None, 100);
    assert_eq!(columns_decoded(&writer, &sql, params), 0, "{sql}");
    let Listing { sql, params, .. } = list_sql(&query, None, 100);
    assert!(columns_decoded(&writer, &sql, params) >= 13, "{sql}");
}

/// A listing's text is written once per shape and thread: queries that differ only in
/// what they are bound to share it; a clause more or less is another text.
#[test]
fn listing_texts_are_kept_per_shape() {
    let query = |ns: &str, prefix: &str, order| ListCheckpoints {
        namespace: Some(ns.into()),
        key_prefix: Some(prefix.into()),
        owner: owner(),
        order,
        ..ListCheckpoints::default()
    };
    let a = list_sql(&query("n", "a/", Order::Asc), None, 10);
    let b = list_sql(&query("m", "b/", Order::Asc), None, 20);
    assert!(Rc::ptr_eq(&a.sql, &b.sql), "the same shape shares one text");
    assert_eq!(a.shape, b.shape);
    assert_ne!(a.params, b.params, "bound to its own values");
    let desc = list_sql(&query("n", "a/", Order::Desc), None, 10);
    let count = count_sql(&query("n", "a/", Order::Asc), None, 10).sql;
    let unbounded = list_sql(&query("n", "", Order::Asc), None, 10);
    for other in [&desc.sql, &count, &unbounded.sql] {
        assert_ne!(a.sql, *other);
    }
    assert!(desc.shape != a.shape && unbounded.shape != a.shape);
    assert!(count.starts_with("SELECT COUNT(*) FROM (SELECT 1 FROM"));
}

/// The writer keeps each statement it prepared for its connection's life (issue 13):
/// every save of a kind, every `BEGIN` and every commit runs one statement, prepared
/// once, not one looked up again by its text on each use.
#[test]
fn the_writer_prepares_each_statement_once_for_its_connection() {
    let (_dir, opts) = temp_db();
    let writer = open(&opts).unwrap();
    let mut kept = db::Kept::default();
    let mut db = Db::kept(&writer, &mut kept);
    let texts = |k: &str| SaveTexts {
        value: format!("{{\"k\":\"{k}\"}}"),
        metadata: None,
    };
    for (i, k) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        db.run(Fixed::Begin).unwrap();
        save_sync(&mut db, save(k, None), texts(k)).unwrap();
        db.run(Fixed::Commit).unwrap();
        let key = CheckpointKey::new("n", k, &owner());
        assert!(load_sync(&mut db, &key).unwrap().is_some(), "{i}");
    }
    let runs = |db: &mut Db<'_, '_>, which| {
        let stmt = db.fixed(which).unwrap();
        let status = |s| stmt.get_status(s);
        (
            status(rusqlite::StatementStatus::Run),
            status(rusqlite::StatementStatus::RePrepare),
        )
    };
    for which in [Fixed::SaveUpsert, Fixed::Load, Fixed::Begin, Fixed::Commit] {
        assert_eq!(runs(&mut db, which), (5, 0), "{which:?}");
    }
    // A reader's connection asks rusqlite's cache: a statement it hands back is one of
    // the cache's, run as often as that text was.
    let reader = open(&opts).unwrap();
    let mut cached = Db::cached(&reader);
    for k in ["a", "b"] {
        load_sync(&mut cached, &CheckpointKey::new("n", k, &owner())).unwrap();
    }
    assert_eq!(runs(&mut cached, Fixed::Load).0, 2);
    // Its statements finalized, the writer's connection closes.
    drop(kept);
    writer.close().map_err(|(_, e)| e).unwrap();
}

/// What a persistence remembers of its own writes: see the conformance check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_writes_are_remembered_and_a_write_over_a_stale_one_is_a_conflict() {
    let (_dir, opts) = temp_db();
    let a = SqlitePersistence::new(opts.clone()).checkpoints();
    let b = SqlitePersistence::new(opts.clone()).checkpoints();
    assert_eq!(a.beside_text(), crate::store::BesideText::Memo);
    crate::store::conformance::own_writes_remembered(&*a, &*b).await;
}
