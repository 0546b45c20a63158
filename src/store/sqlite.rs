//! SQLite persistence (rusqlite, bundled SQLite): one WAL-mode database file, one table
//! keyed by `(namespace, key)`. Every statement runs on tokio's blocking pool, never on
//! the JavaScript thread; one connection behind a mutex serialises this process's work,
//! and SQLite's locking (with a busy timeout) serialises processes.
//!
//! - CAS is one statement: `INSERT … ON CONFLICT DO NOTHING` (create), `UPDATE … WHERE
//!   version = ?` (replace), `INSERT … ON CONFLICT DO UPDATE … WHERE <same owner>`
//!   (upsert), each with `RETURNING`; no row back means conflict.
//! - Listing walks the primary key (or the ownership index) from the keyset cursor.
//! - `close()` refuses new work, waits for work in flight, then closes the connection;
//!   use after close is `ArtifactError('invalid_input')` ("persistence is closed").
//! - `SQLITE_BUSY` after the busy timeout is a conflict (retryable); other database
//!   failures are `ERR_PRISM_INTERNAL` errors naming SQLite's message.

use super::lifecycle::Lifecycle;
use super::{
    decode_cursor, encode_cursor, invalid, now_iso8601, page_size, prefix_upper_bound,
    validate_target, BoxFuture, Checkpoint, CheckpointStore, ListCheckpoints, Ownership, Page,
    SaveCheckpoint, MAX_SAFE_INTEGER, PAGE_SIZE_DEFAULT, PAGE_SIZE_HARD, VALUE_BYTES_HARD,
};
use crate::error::{ArtifactReason, ErrorKind, PrismError, Result};
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, Row};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Options of [`SqlitePersistence::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    pub filename: String,
    pub busy_timeout: Duration,
}

impl SqliteOptions {
    pub const DEFAULT_BUSY_TIMEOUT_MS: u64 = 5_000;
    pub const HARD_BUSY_TIMEOUT_MS: u64 = 600_000;
    pub const MAX_FILENAME_BYTES: usize = 4096;

    /// Check the filename and resolve the busy timeout (`1..=600000` ms, else RangeError).
    pub fn new(filename: &str, busy_timeout_ms: Option<u64>) -> Result<Self> {
        if filename.is_empty() || filename.len() > Self::MAX_FILENAME_BYTES {
            return Err(invalid(format!(
                "options.filename must be 1..{} bytes",
                Self::MAX_FILENAME_BYTES
            )));
        }
        if filename.contains('\0') {
            return Err(invalid("options.filename must not contain NUL characters"));
        }
        let ms = match busy_timeout_ms {
            None => Self::DEFAULT_BUSY_TIMEOUT_MS,
            Some(ms) if (1..=Self::HARD_BUSY_TIMEOUT_MS).contains(&ms) => ms,
            Some(ms) => {
                return Err(PrismError::range(format!(
                    "options.busyTimeoutMs must be an integer from 1 to {}, got {ms}",
                    Self::HARD_BUSY_TIMEOUT_MS
                )))
            }
        };
        Ok(Self {
            filename: filename.to_string(),
            busy_timeout: Duration::from_millis(ms),
        })
    }
}

struct Shared {
    options: SqliteOptions,
    /// `None` before the first operation opens it, and after close.
    conn: Mutex<Option<Connection>>,
    life: Arc<Lifecycle>,
}

/// A SQLite database file holding checkpoints. Cheap to clone the store out of.
pub struct SqlitePersistence {
    shared: Arc<Shared>,
}

/// The [`CheckpointStore`] of a [`SqlitePersistence`].
pub struct SqliteCheckpointStore {
    shared: Arc<Shared>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS prism_checkpoints (
  namespace  TEXT NOT NULL,
  key        TEXT NOT NULL,
  version    INTEGER NOT NULL CHECK (version >= 1),
  tenant_id  TEXT,
  account_id TEXT,
  user_id    TEXT,
  category   TEXT,
  value      TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS prism_checkpoints_by_owner
  ON prism_checkpoints (namespace, tenant_id, account_id, user_id, key);
";

const COLUMNS: &str =
    "namespace, key, version, tenant_id, account_id, user_id, category, value, created_at, updated_at";

fn db_error(e: rusqlite::Error) -> PrismError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            PrismError::conflict(format!("the database is busy, retry: {e}"))
        }
        _ => PrismError::internal(format!("sqlite: {e}")),
    }
}

/// A read has no compare-and-swap to lose: a database still busy past `busyTimeoutMs`
/// is a backend failure there, not a conflict (which callers of `load` read as "not
/// yours", e.g. the artifact service's `not_found`).
fn busy_read(e: PrismError) -> PrismError {
    if e.kind == ErrorKind::CheckpointConflict {
        PrismError::internal(format!("sqlite: {}", e.message))
    } else {
        e
    }
}

fn open(options: &SqliteOptions) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let mut conn = Connection::open_with_flags(&options.filename, flags).map_err(|e| {
        PrismError::artifact(
            ArtifactReason::InvalidInput,
            format!(
                "cannot open the SQLite database {:?}: {e}",
                options.filename
            ),
        )
    })?;
    conn.busy_timeout(options.busy_timeout).map_err(db_error)?;
    let mode = switch_to_wal(&conn, options.busy_timeout)?;
    if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
        return Err(PrismError::internal(format!(
            "sqlite: could not switch to WAL mode (journal_mode is {mode})"
        )));
    }
    // FULL: a resolved write survives power loss too, not only a killed process.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(db_error)?;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db_error)?;
    tx.execute_batch(SCHEMA).map_err(db_error)?;
    tx.commit().map_err(db_error)?;
    Ok(conn)
}

/// `PRAGMA journal_mode=WAL`, retried while the database is busy, up to `busy_timeout`.
///
/// SQLite does not apply the busy timeout to this switch: on a file still in rollback
/// mode it takes a read lock, then asks for the write lock without calling the busy
/// handler, so when another process is switching (or creating the schema) at the same
/// moment it fails at once with `SQLITE_BUSY`. Several processes opening a new database
/// together hit that; waiting here makes them honour `busyTimeoutMs` like every other
/// statement. A file already in WAL mode answers without any write lock.
fn switch_to_wal(conn: &Connection, busy_timeout: Duration) -> Result<String> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
            Ok(mode) => return Ok(mode),
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked)
                ) && started.elapsed() < busy_timeout =>
            {
                std::thread::sleep(pause.min(busy_timeout.saturating_sub(started.elapsed())));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(db_error(e)),
        }
    }
}

fn row_to_checkpoint(row: &Row<'_>) -> rusqlite::Result<(Checkpoint, String)> {
    let version: i64 = row.get(2)?;
    let value_text: String = row.get(7)?;
    Ok((
        Checkpoint {
            namespace: row.get(0)?,
            key: row.get(1)?,
            version: u64::try_from(version).unwrap_or(0),
            ownership: Ownership {
                tenant_id: row.get(3)?,
                account_id: row.get(4)?,
                user_id: row.get(5)?,
            },
            category: row.get(6)?,
            value: serde_json::Value::Null,
            created_at: row.get(8)?,
            updated_at: row.get(9)?,
        },
        value_text,
    ))
}

fn finish(raw: (Checkpoint, String)) -> Result<Checkpoint> {
    let (mut cp, text) = raw;
    cp.value = serde_json::from_str(&text)
        .map_err(|e| PrismError::internal(format!("sqlite: stored value is not JSON: {e}")))?;
    Ok(cp)
}

impl SqlitePersistence {
    /// No file is touched until the first operation (which runs off the JS thread).
    pub fn new(options: SqliteOptions) -> Self {
        Self {
            shared: Arc::new(Shared {
                options,
                conn: Mutex::new(None),
                life: Lifecycle::new("SQLite"),
            }),
        }
    }

    /// The checkpoint store over this database.
    pub fn checkpoints(&self) -> Arc<dyn CheckpointStore> {
        Arc::new(SqliteCheckpointStore {
            shared: self.shared.clone(),
        })
    }

    /// Refuse new work, wait for work in flight, close the connection. Idempotent.
    pub async fn close(&self) -> Result<()> {
        if !self.shared.life.close().await {
            return Ok(());
        }
        let shared = self.shared.clone();
        let conn = tokio::task::spawn_blocking(move || {
            let taken = shared.conn.lock().unwrap_or_else(|p| p.into_inner()).take();
            match taken {
                Some(c) => c.close().map_err(|(_, e)| db_error(e)),
                None => Ok(()),
            }
        })
        .await;
        conn.map_err(|e| PrismError::internal(format!("sqlite close task failed: {e}")))?
    }

    /// Run `sql` (a read-only query answering one text column) — for tests and tools
    /// such as `PRAGMA integrity_check`.
    pub async fn query_strings(&self, sql: String) -> Result<Vec<String>> {
        run(&self.shared, move |conn| {
            let mut stmt = conn.prepare(&sql).map_err(db_error)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(db_error)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db_error)
        })
        .await
    }
}

async fn run<T, F>(shared: &Arc<Shared>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
{
    let gate = shared.life.enter().await?;
    let inner = shared.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let mut slot = inner.conn.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(open(&inner.options)?);
        }
        match slot.as_mut() {
            Some(conn) => f(conn),
            None => Err(PrismError::internal("sqlite: no connection")),
        }
    })
    .await;
    drop(gate);
    match joined {
        Ok(r) => r,
        Err(e) if e.is_panic() => Err(PrismError::internal(
            "internal error (a bug in prism-review): a SQLite task panicked",
        )),
        Err(e) => Err(PrismError::internal(format!("sqlite task failed: {e}"))),
    }
}

fn to_i64(v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| invalid("version out of range"))
}

fn save_sync(conn: &mut Connection, req: SaveCheckpoint, value: String) -> Result<Checkpoint> {
    let now = now_iso8601();
    let o = &req.ownership;
    let returning = format!("RETURNING {COLUMNS}");
    let row = match req.expected_version {
        Some(0) => conn
            .query_row(
                &format!(
                    "INSERT INTO prism_checkpoints ({COLUMNS}) VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
                     ON CONFLICT (namespace, key) DO NOTHING {returning}"
                ),
                params![req.namespace, req.key, o.tenant_id, o.account_id, o.user_id, req.category, value, now],
                row_to_checkpoint,
            )
            .optional(),
        Some(expected) => conn
            .query_row(
                &format!(
                    "UPDATE prism_checkpoints SET version = version + 1, category = ?6, value = ?7, updated_at = ?8
                     WHERE namespace = ?1 AND key = ?2 AND version = ?9
                       AND tenant_id IS ?3 AND account_id IS ?4 AND user_id IS ?5 {returning}"
                ),
                params![
                    req.namespace, req.key, o.tenant_id, o.account_id, o.user_id, req.category, value, now,
                    to_i64(expected)?
                ],
                row_to_checkpoint,
            )
            .optional(),
        None => conn
            .query_row(
                &format!(
                    "INSERT INTO prism_checkpoints ({COLUMNS}) VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
                     ON CONFLICT (namespace, key) DO UPDATE SET version = version + 1,
                       category = excluded.category, value = excluded.value, updated_at = excluded.updated_at
                     WHERE tenant_id IS excluded.tenant_id AND account_id IS excluded.account_id
                       AND user_id IS excluded.user_id AND version < {MAX_SAFE_INTEGER} {returning}"
                ),
                params![req.namespace, req.key, o.tenant_id, o.account_id, o.user_id, req.category, value, now],
                row_to_checkpoint,
            )
            .optional(),
    }
    .map_err(db_error)?;
    match row {
        Some(raw) => finish(raw),
        None => Err(match req.expected_version {
            Some(0) => PrismError::conflict(format!("checkpoint {:?} already exists", req.key)),
            Some(v) => PrismError::conflict(format!(
                "checkpoint {:?} is not at the expected version {v} for this owner",
                req.key
            )),
            None => PrismError::conflict(format!(
                "checkpoint {:?} is not writable by this owner",
                req.key
            )),
        }),
    }
}

fn load_sync(
    conn: &mut Connection,
    ns: &str,
    key: &str,
    o: &Ownership,
) -> Result<Option<Checkpoint>> {
    let raw = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM prism_checkpoints WHERE namespace = ?1 AND key = ?2
               AND tenant_id IS ?3 AND account_id IS ?4 AND user_id IS ?5"
        ))
        .and_then(|mut s| {
            s.query_row(
                params![ns, key, o.tenant_id, o.account_id, o.user_id],
                row_to_checkpoint,
            )
            .optional()
        })
        .map_err(db_error)?;
    raw.map(finish).transpose()
}

fn list_sync(
    conn: &mut Connection,
    q: ListCheckpoints,
    default_page: u32,
    max_page: u32,
) -> Result<Page<Checkpoint>> {
    let limit = page_size(Some(q.limit.unwrap_or(default_page)), max_page);
    let prefix = q.prefix.clone().unwrap_or_default();
    let after = q.cursor.as_deref().map(decode_cursor).transpose()?;
    // Lower bound: strictly after the cursor when it is inside or past the prefix range.
    let (lower, exclusive) = match after {
        Some(a) if a.as_str() >= prefix.as_str() => (a, true),
        _ => (prefix.clone(), false),
    };
    let upper = prefix_upper_bound(&prefix);
    let mut sql = format!("SELECT {COLUMNS} FROM prism_checkpoints WHERE namespace = ?1");
    sql.push_str(if exclusive {
        " AND key > ?2"
    } else {
        " AND key >= ?2"
    });
    sql.push_str(" AND (?3 IS NULL OR key < ?3)");
    let owner = q.ownership.clone().unwrap_or_default();
    if q.ownership.is_some() {
        sql.push_str(" AND tenant_id IS ?4 AND account_id IS ?5 AND user_id IS ?6");
    } else {
        sql.push_str(" AND ?4 IS ?4 AND ?5 IS ?5 AND ?6 IS ?6");
    }
    sql.push_str(" ORDER BY key LIMIT ?7");
    let mut stmt = conn.prepare_cached(&sql).map_err(db_error)?;
    let rows = stmt
        .query_map(
            params![
                q.namespace,
                lower,
                upper,
                owner.tenant_id,
                owner.account_id,
                owner.user_id,
                i64::from(limit) + 1
            ],
            row_to_checkpoint,
        )
        .map_err(db_error)?;
    let mut items = Vec::new();
    let mut more = false;
    for row in rows {
        let raw = row.map_err(db_error)?;
        if items.len() == limit as usize {
            more = true;
            break;
        }
        items.push(finish(raw)?);
    }
    let next_cursor = if more {
        items.last().map(|c: &Checkpoint| encode_cursor(&c.key))
    } else {
        None
    };
    Ok(Page { items, next_cursor })
}

fn delete_sync(
    conn: &mut Connection,
    ns: &str,
    key: &str,
    o: &Ownership,
    expected: Option<u64>,
) -> Result<bool> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db_error)?;
    let expected = expected.map(to_i64).transpose()?;
    let deleted = tx
        .execute(
            "DELETE FROM prism_checkpoints WHERE namespace = ?1 AND key = ?2
               AND tenant_id IS ?3 AND account_id IS ?4 AND user_id IS ?5
               AND (?6 IS NULL OR version = ?6)",
            params![ns, key, o.tenant_id, o.account_id, o.user_id, expected],
        )
        .map_err(db_error)?;
    if deleted > 0 {
        tx.commit().map_err(db_error)?;
        return Ok(true);
    }
    // Nothing deleted: absent (false) or there but not ours / not at that version (conflict).
    let exists: Option<i64> = tx
        .query_row(
            "SELECT version FROM prism_checkpoints WHERE namespace = ?1 AND key = ?2",
            params![ns, key],
            |r| r.get(0),
        )
        .optional()
        .map_err(db_error)?;
    tx.commit().map_err(db_error)?;
    match exists {
        None => Ok(false),
        Some(_) => Err(PrismError::conflict(format!(
            "checkpoint {key:?} is not deletable by this owner at this version"
        ))),
    }
}

impl SqliteCheckpointStore {
    async fn save_impl(&self, req: SaveCheckpoint) -> Result<Checkpoint> {
        req.validate()?;
        let value = serde_json::to_string(&req.value)
            .map_err(|e| invalid(format!("input.value cannot be encoded: {e}")))?;
        if value.len() > VALUE_BYTES_HARD {
            return Err(PrismError::artifact(
                ArtifactReason::RecordTooLarge,
                format!(
                    "checkpoint value is {} bytes, more than {VALUE_BYTES_HARD}",
                    value.len()
                ),
            ));
        }
        run(&self.shared, move |c| save_sync(c, req, value)).await
    }
}

impl CheckpointStore for SqliteCheckpointStore {
    fn admit(&self) -> Result<super::Admission> {
        self.shared.life.admit()
    }

    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        Box::pin(self.save_impl(req))
    }

    fn load<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        ownership: &'a Ownership,
    ) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move {
            validate_target(namespace, key, ownership)?;
            let (ns, k, o) = (namespace.to_string(), key.to_string(), ownership.clone());
            run(&self.shared, move |c| load_sync(c, &ns, &k, &o))
                .await
                .map_err(busy_read)
        })
    }

    fn list(&self, query: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        Box::pin(async move {
            query.validate()?;
            if let Some(c) = &query.cursor {
                decode_cursor(c)?;
            }
            run(&self.shared, move |c| {
                list_sync(c, query, PAGE_SIZE_DEFAULT, PAGE_SIZE_HARD)
            })
            .await
            .map_err(busy_read)
        })
    }

    fn delete<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        ownership: &'a Ownership,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            validate_target(namespace, key, ownership)?;
            let (ns, k, o) = (namespace.to_string(), key.to_string(), ownership.clone());
            run(&self.shared, move |c| {
                delete_sync(c, &ns, &k, &o, expected_version)
            })
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

        // With the lock held past the busy timeout, it is still a (retryable) conflict.
        let (_dir2, opts2) = temp_db();
        let opts2 = SqliteOptions::new(&opts2.filename, Some(200)).unwrap();
        let mut holder = Connection::open(&opts2.filename).unwrap();
        holder.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        let held = holder
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        let started = std::time::Instant::now();
        let e = open(&opts2).err().unwrap();
        assert_eq!(e.kind, crate::error::ErrorKind::CheckpointConflict, "{e}");
        assert!(started.elapsed() >= Duration::from_millis(200));
        held.rollback().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_of_a_database_busy_past_the_timeout_is_a_backend_error_not_a_conflict() {
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
        let e = p.checkpoints().load("ns", "k", &owner).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal, "{e}");
        let e = p
            .checkpoints()
            .list(ListCheckpoints {
                namespace: "ns".into(),
                ..ListCheckpoints::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal, "{e}");
        held.rollback().unwrap();
        assert_eq!(p.checkpoints().load("ns", "k", &owner).await.unwrap(), None);
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

    fn owner() -> Ownership {
        Ownership {
            account_id: Some("a".into()),
            ..Default::default()
        }
    }

    fn save(key: &str, expected: Option<u64>) -> SaveCheckpoint {
        SaveCheckpoint {
            namespace: "n".into(),
            key: key.into(),
            ownership: owner(),
            category: None,
            value: json!({ "k": key }),
            expected_version: expected,
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
            .load("n", "k", &owner())
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
            .load("n", "k", &owner())
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
        let e = store.load("n", "k0", &owner()).await.unwrap_err();
        assert_eq!(e.reason(), Some("invalid_input"));
        assert!(e.message.contains("closed"));
        // Every write that resolved is on disk.
        let again = SqlitePersistence::new(p.shared.options.clone());
        let page = again
            .checkpoints()
            .list(ListCheckpoints {
                namespace: "n".into(),
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
        assert!(store.load("n", "late", &owner()).await.is_err());
    }

    #[tokio::test]
    async fn an_unopenable_file_is_a_typed_error() {
        let p = SqlitePersistence::new(
            SqliteOptions::new("/nonexistent-dir-prism/x/y.db", None).unwrap(),
        );
        let e = p.checkpoints().load("n", "k", &owner()).await.unwrap_err();
        assert_eq!(e.reason(), Some("invalid_input"));
        assert!(e.message.contains("cannot open"), "{e}");
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
}
