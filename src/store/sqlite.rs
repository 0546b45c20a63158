//! SQLite persistence (rusqlite, bundled SQLite): one WAL-mode database file, one table
//! keyed by `(namespace, key, owner_key)` (the owner scopes every key; see `super`).
//! Every statement runs on tokio's blocking pool, never on the JavaScript thread; one
//! connection behind a mutex serialises this process's work, and SQLite's locking (with
//! a busy timeout) serialises processes.
//!
//! - A save is one statement: `INSERT … ON CONFLICT DO NOTHING` (create only), `UPDATE …
//!   WHERE version = ?` (compare-and-swap), `INSERT … ON CONFLICT DO UPDATE … WHERE`
//!   (upsert), each with the version and fencing rules in SQL and `RETURNING`; no row
//!   back is a conflict, explained from the stored row by the model's own rules.
//! - Listing walks `(namespace, key, owner_key)` (or the owner index) from the keyset
//!   cursor, ascending or descending.
//! - A database made by an earlier schema (one key per `(namespace, key)`, no owner key,
//!   fencing token or metadata: ours before 0.2, or `@arnilo/prism-session-store-sqlite`'s)
//!   is migrated when it is opened, in one transaction.
//! - `close()` refuses new work, waits for work in flight, then closes the connection;
//!   use after close is `ArtifactError('invalid_input')` ("persistence is closed").
//! - `SQLITE_BUSY` after the busy timeout is a conflict on writes (retryable), a backend
//!   error on reads; other database failures are `ERR_PRISM_INTERNAL` errors naming
//!   SQLite's message.

use super::cursor::{self, Position};
use super::lifecycle::Lifecycle;
use super::model::{
    value_too_large, Checkpoint, CheckpointKey, ListCheckpoints, Order, Ownership, Page,
    SaveCheckpoint, PAGE_SIZE_SQL, VALUE_BYTES_HARD,
};
use super::{invalid, now_iso8601, BoxFuture, CheckpointStore};
use crate::error::{ArtifactReason, ErrorKind, PrismError, Result};
use rusqlite::types::Value as SqlValue;
use rusqlite::{
    params, params_from_iter, Connection, ErrorCode, OpenFlags, OptionalExtension, Row,
};
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
        let ms = super::resolve_cap(
            "options.busyTimeoutMs",
            busy_timeout_ms,
            Self::DEFAULT_BUSY_TIMEOUT_MS,
            Self::HARD_BUSY_TIMEOUT_MS,
        )?;
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

const TABLE: &str = "
CREATE TABLE IF NOT EXISTS prism_checkpoints (
  namespace     TEXT NOT NULL,
  key           TEXT NOT NULL,
  owner_key     TEXT NOT NULL,
  version       INTEGER NOT NULL CHECK (version >= 1),
  fencing_token INTEGER,
  tenant_id     TEXT,
  account_id    TEXT,
  user_id       TEXT,
  category      TEXT,
  value         TEXT NOT NULL,
  metadata      TEXT,
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL,
  PRIMARY KEY (namespace, key, owner_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS prism_checkpoints_owner_key
  ON prism_checkpoints (namespace, owner_key, key);
";

const COLUMNS: &str = "namespace, key, version, fencing_token, tenant_id, account_id, user_id, \
                       category, value, metadata, created_at, updated_at, owner_key";

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
    conn.set_prepared_statement_cache_capacity(64);
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
    migrate_earlier_schema(&tx)?;
    tx.execute_batch(TABLE).map_err(db_error)?;
    tx.commit().map_err(db_error)?;
    Ok(conn)
}

/// Move a `prism_checkpoints` table of an earlier schema (no `owner_key`) into the
/// current one: every row keeps its namespace, key, owner, version, value and times;
/// fencing tokens and metadata come along when the old table had them.
fn migrate_earlier_schema(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let columns: Vec<String> = tx
        .prepare("SELECT name FROM pragma_table_info('prism_checkpoints')")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(db_error)?;
    if columns.is_empty() || columns.iter().any(|c| c == "owner_key") {
        return Ok(());
    }
    let has = |c: &str| columns.iter().any(|x| x == c);
    let optional = |c: &str| {
        if has(c) {
            c.to_string()
        } else {
            format!("NULL AS {c}")
        }
    };
    tx.execute_batch(
        "DROP INDEX IF EXISTS prism_checkpoints_by_owner;
         DROP INDEX IF EXISTS prism_checkpoints_list_idx;
         ALTER TABLE prism_checkpoints RENAME TO prism_checkpoints_before_owner_key;",
    )
    .map_err(db_error)?;
    tx.execute_batch(TABLE).map_err(db_error)?;
    let select = format!(
        "SELECT namespace, key, version, {}, tenant_id, account_id, user_id, category, value, {}, \
         created_at, updated_at FROM prism_checkpoints_before_owner_key",
        optional("fencing_token"),
        optional("metadata")
    );
    let mut read = tx.prepare(&select).map_err(db_error)?;
    let mut write = tx
        .prepare(&format!(
            "INSERT INTO prism_checkpoints ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
        ))
        .map_err(db_error)?;
    let mut rows = read.query([]).map_err(db_error)?;
    while let Some(r) = rows.next().map_err(db_error)? {
        let owner = Ownership {
            tenant_id: r.get(4).map_err(db_error)?,
            account_id: r.get(5).map_err(db_error)?,
            user_id: r.get(6).map_err(db_error)?,
        };
        let mut values: Vec<SqlValue> = (0..12)
            .map(|i| r.get::<_, SqlValue>(i))
            .collect::<rusqlite::Result<_>>()
            .map_err(db_error)?;
        values.push(SqlValue::Text(owner.owner_key()));
        write.execute(params_from_iter(values)).map_err(db_error)?;
    }
    drop(rows);
    drop(read);
    drop(write);
    tx.execute_batch("DROP TABLE prism_checkpoints_before_owner_key;")
        .map_err(db_error)
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

/// A row as read, the JSON texts still unparsed.
struct RawRow {
    cp: Checkpoint,
    value: String,
    metadata: Option<String>,
    owner_key: String,
}

fn read_row(row: &Row<'_>) -> rusqlite::Result<RawRow> {
    let num = |i: usize| -> rusqlite::Result<u64> {
        Ok(u64::try_from(row.get::<_, i64>(i)?).unwrap_or(0))
    };
    let fence: Option<i64> = row.get(3)?;
    Ok(RawRow {
        cp: Checkpoint {
            namespace: row.get(0)?,
            key: row.get(1)?,
            version: num(2)?,
            fencing_token: fence.map(|f| u64::try_from(f).unwrap_or(0)),
            value: serde_json::Value::Null,
            category: row.get(7)?,
            owner: Ownership {
                tenant_id: row.get(4)?,
                account_id: row.get(5)?,
                user_id: row.get(6)?,
            },
            created_at: row.get(10)?,
            updated_at: row.get(11)?,
            metadata: None,
        },
        value: row.get(8)?,
        metadata: row.get(9)?,
        owner_key: row.get(12)?,
    })
}

fn finish(raw: RawRow) -> Result<Checkpoint> {
    let mut cp = raw.cp;
    let bad = |e: serde_json::Error| {
        PrismError::internal(format!("sqlite: stored JSON is malformed: {e}"))
    };
    cp.value = serde_json::from_str(&raw.value).map_err(bad)?;
    cp.metadata = match raw.metadata {
        None => None,
        Some(t) => match serde_json::from_str(&t).map_err(bad)? {
            serde_json::Value::Object(m) => Some(m),
            _ => None,
        },
    };
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

fn to_i64(v: u64) -> i64 {
    // Versions and fencing tokens are validated to be at most 2^53 - 1.
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The JSON texts a save writes.
struct SaveTexts {
    value: String,
    metadata: Option<String>,
}

fn save_sync(conn: &mut Connection, req: SaveCheckpoint, texts: SaveTexts) -> Result<Checkpoint> {
    let now = now_iso8601();
    let owner_key = req.owner.owner_key();
    let o = &req.owner;
    let returning = format!("RETURNING {COLUMNS}");
    let insert = format!(
        "INSERT INTO prism_checkpoints ({COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12)"
    );
    let (version, fence) = (to_i64(req.version), req.fencing_token.map(to_i64));
    let row = match req.expected_version {
        Some(0) => conn
            .prepare_cached(&format!("{insert} ON CONFLICT DO NOTHING {returning}"))
            .and_then(|mut s| {
                s.query_row(
                    params![
                        req.namespace,
                        req.key,
                        version,
                        fence,
                        o.tenant_id,
                        o.account_id,
                        o.user_id,
                        req.category,
                        texts.value,
                        texts.metadata,
                        now,
                        owner_key
                    ],
                    read_row,
                )
                .optional()
            }),
        Some(expected) => conn
            .prepare_cached(&format!(
                "UPDATE prism_checkpoints SET version = ?4, fencing_token = ?5, category = ?6,
                   value = ?7, metadata = ?8, updated_at = ?9
                 WHERE namespace = ?1 AND key = ?2 AND owner_key = ?3 AND version = ?10
                   AND version < ?4 AND (fencing_token IS NULL OR ?5 >= fencing_token)
                 {returning}"
            ))
            .and_then(|mut s| {
                s.query_row(
                    params![
                        req.namespace,
                        req.key,
                        owner_key,
                        version,
                        fence,
                        req.category,
                        texts.value,
                        texts.metadata,
                        now,
                        to_i64(expected)
                    ],
                    read_row,
                )
                .optional()
            }),
        None => conn
            .prepare_cached(&format!(
                "{insert} ON CONFLICT (namespace, key, owner_key) DO UPDATE SET
                   version = excluded.version, fencing_token = excluded.fencing_token,
                   category = excluded.category, value = excluded.value,
                   metadata = excluded.metadata, updated_at = excluded.updated_at
                 WHERE prism_checkpoints.version < excluded.version
                   AND (prism_checkpoints.fencing_token IS NULL
                        OR excluded.fencing_token >= prism_checkpoints.fencing_token)
                 {returning}"
            ))
            .and_then(|mut s| {
                s.query_row(
                    params![
                        req.namespace,
                        req.key,
                        version,
                        fence,
                        o.tenant_id,
                        o.account_id,
                        o.user_id,
                        req.category,
                        texts.value,
                        texts.metadata,
                        now,
                        owner_key
                    ],
                    read_row,
                )
                .optional()
            }),
    }
    .map_err(db_error)?;
    match row {
        Some(raw) => finish(raw),
        None => Err(refusal(conn, req)),
    }
}

/// Why a save wrote nothing: the model's rules applied to the stored row.
fn refusal(conn: &mut Connection, req: SaveCheckpoint) -> PrismError {
    let key = CheckpointKey::new(&req.namespace, &req.key, &req.owner);
    match load_sync(conn, &key) {
        Ok(existing) => match req.apply(existing.as_ref(), "") {
            Err(e) => e,
            Ok(_) => PrismError::conflict("Checkpoint changed concurrently; retry"),
        },
        Err(e) => e,
    }
}

fn load_sync(conn: &mut Connection, k: &CheckpointKey) -> Result<Option<Checkpoint>> {
    let raw = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM prism_checkpoints WHERE namespace = ?1 AND key = ?2 AND owner_key = ?3"
        ))
        .and_then(|mut s| {
            s.query_row(params![k.namespace, k.key, k.owner.owner_key()], read_row)
                .optional()
        })
        .map_err(db_error)?;
    raw.map(finish).transpose()
}

/// The `WHERE … ORDER BY … LIMIT` of a listing, with its parameters.
fn list_sql(q: &ListCheckpoints, after: Option<&Position>, fetch: i64) -> (String, Vec<SqlValue>) {
    let mut sql = format!("SELECT {COLUMNS} FROM prism_checkpoints WHERE 1 = 1");
    let mut p: Vec<SqlValue> = Vec::new();
    let mut add = |sql: &mut String, clause: &str, v: SqlValue| {
        p.push(v);
        sql.push_str(&clause.replace('?', &format!("?{}", p.len())));
    };
    if let Some(ns) = &q.namespace {
        add(&mut sql, " AND namespace = ?", SqlValue::Text(ns.clone()));
    }
    if let Some(prefix) = q.key_prefix.as_ref().filter(|p| !p.is_empty()) {
        add(&mut sql, " AND key >= ?", SqlValue::Text(prefix.clone()));
        if let Some(upper) = cursor::prefix_upper_bound(prefix) {
            add(&mut sql, " AND key < ?", SqlValue::Text(upper));
        }
    }
    if q.exact_owner {
        add(
            &mut sql,
            " AND owner_key = ?",
            SqlValue::Text(q.owner.owner_key()),
        );
    } else {
        for (column, m) in ["tenant_id", "account_id", "user_id"]
            .iter()
            .zip(q.owner.members())
        {
            if let Some(v) = m.1 {
                add(
                    &mut sql,
                    &format!(" AND {column} = ?"),
                    SqlValue::Text(v.to_string()),
                );
            }
        }
    }
    if let Some(set) = &q.categories {
        let json = serde_json::to_string(set).unwrap_or_else(|_| "[]".into());
        add(
            &mut sql,
            " AND category IN (SELECT value FROM json_each(?))",
            SqlValue::Text(json),
        );
    }
    let (cmp, dir) = match q.order {
        Order::Asc => (">", "ASC"),
        Order::Desc => ("<", "DESC"),
    };
    if let Some(a) = after {
        p.push(SqlValue::Text(a.namespace.clone()));
        p.push(SqlValue::Text(a.key.clone()));
        p.push(SqlValue::Text(a.owner_key.clone()));
        let n = p.len();
        sql.push_str(&format!(
            " AND (namespace, key, owner_key) {cmp} (?{}, ?{}, ?{n})",
            n - 2,
            n - 1
        ));
    }
    p.push(SqlValue::Integer(fetch));
    sql.push_str(&format!(
        " ORDER BY namespace {dir}, key {dir}, owner_key {dir} LIMIT ?{}",
        p.len()
    ));
    (sql, p)
}

/// One page from rows fetched one past the page: the extra row means a next cursor.
fn page_of(rows: Vec<RawRow>, q: &ListCheckpoints, limit: usize) -> Result<Page<Checkpoint>> {
    let mut items = Vec::with_capacity(rows.len().min(limit));
    let mut last = None;
    let mut more = false;
    for raw in rows {
        if items.len() == limit {
            more = true;
            break;
        }
        let position = Position {
            namespace: raw.cp.namespace.clone(),
            key: raw.cp.key.clone(),
            owner_key: raw.owner_key.clone(),
        };
        let cp = finish(raw)?;
        if cp.selected_by(q) {
            items.push(cp);
        }
        last = Some(position);
    }
    let next_cursor = if more {
        last.as_ref().map(cursor::encode)
    } else {
        None
    };
    Ok(Page { items, next_cursor })
}

fn list_sync(conn: &mut Connection, q: &ListCheckpoints) -> Result<Page<Checkpoint>> {
    let limit = q.page_size(PAGE_SIZE_SQL);
    let after = cursor::after(q)?;
    let (sql, p) = list_sql(q, after.as_ref(), i64::from(limit) + 1);
    let mut stmt = conn.prepare_cached(&sql).map_err(db_error)?;
    let rows = stmt
        .query_map(params_from_iter(p), read_row)
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(db_error)?;
    page_of(rows, q, limit as usize)
}

fn delete_sync(conn: &mut Connection, k: &CheckpointKey, expected: Option<u64>) -> Result<bool> {
    let owner_key = k.owner.owner_key();
    let deleted = conn
        .prepare_cached(
            "DELETE FROM prism_checkpoints WHERE namespace = ?1 AND key = ?2 AND owner_key = ?3
               AND (?4 IS NULL OR version = ?4)",
        )
        .and_then(|mut s| s.execute(params![k.namespace, k.key, owner_key, expected.map(to_i64)]))
        .map_err(db_error)?;
    if deleted > 0 || expected.is_none() {
        return Ok(deleted > 0);
    }
    // Nothing deleted under a version: absent (false) or at another version (conflict).
    match load_sync(conn, k)? {
        None => Ok(false),
        Some(cp) => Err(super::model::conflict(format!(
            "Checkpoint compare-and-swap failed (expected {}, current {})",
            expected.unwrap_or(0),
            cp.version
        ))),
    }
}

impl SqliteCheckpointStore {
    async fn save_impl(&self, req: SaveCheckpoint) -> Result<Checkpoint> {
        req.validate()?;
        let value = serde_json::to_string(&req.value)
            .map_err(|e| PrismError::internal(format!("cannot encode the value: {e}")))?;
        if value.len() > VALUE_BYTES_HARD {
            return Err(value_too_large(value.len(), VALUE_BYTES_HARD));
        }
        let metadata = req
            .metadata
            .as_ref()
            .map(|m| serde_json::to_string(m).unwrap_or_else(|_| "{}".into()));
        let texts = SaveTexts { value, metadata };
        run(&self.shared, move |c| save_sync(c, req, texts)).await
    }
}

impl CheckpointStore for SqliteCheckpointStore {
    fn admit(&self) -> Result<super::Admission> {
        self.shared.life.admit()
    }

    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        Box::pin(self.save_impl(req))
    }

    fn load<'a>(&'a self, key: &'a CheckpointKey) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move {
            key.validate()?;
            let k = key.clone();
            run(&self.shared, move |c| load_sync(c, &k))
                .await
                .map_err(busy_read)
        })
    }

    fn list(&self, query: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        Box::pin(async move {
            query.validate()?;
            cursor::after(&query)?;
            run(&self.shared, move |c| list_sync(c, &query))
                .await
                .map_err(busy_read)
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a CheckpointKey,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            key.validate()?;
            let k = key.clone();
            run(&self.shared, move |c| delete_sync(c, &k, expected_version)).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::conformance::{cas, key};
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
        let e = p
            .checkpoints()
            .load(&key("ns", "k", &owner))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal, "{e}");
        let e = p
            .checkpoints()
            .list(ListCheckpoints {
                namespace: Some("ns".into()),
                ..ListCheckpoints::default()
            })
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal, "{e}");
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
        let p = SqlitePersistence::new(
            SqliteOptions::new("/nonexistent-dir-prism/x/y.db", None).unwrap(),
        );
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
            serde_json::Value::Object(cp.metadata.unwrap()),
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
}
