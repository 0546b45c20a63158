//! SQLite persistence (rusqlite, bundled SQLite): one WAL-mode database file, one table
//! keyed by `(namespace, key, owner_key)` (the owner scopes every key; see `super`).
//! Writes go to one writer thread (group commit), reads to a pool of reader connections
//! on reader lanes ([`conns`]); no statement runs on the JavaScript thread.
//! SQLite's locking (with a busy timeout) serialises processes.
//!
//! - A save is one write statement: `INSERT … ON CONFLICT DO NOTHING` (create only), `UPDATE …
//!   WHERE version = ?` (compare-and-swap), `INSERT … ON CONFLICT DO UPDATE … WHERE`
//!   (upsert), each with the version and fencing rules in SQL; no row written is a
//!   conflict, explained from the stored row by the model's own rules. The saved row is
//!   the request's (a replaced row's `created_at` read back), not `RETURNING`'s; a save
//!   that answers nothing (`write_text`: the artifact service's) runs the write alone.
//! - The writer keeps its statements prepared for its connection's life ([`db`]); readers
//!   use rusqlite's statement cache.
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
    value_too_large, Checkpoint, CheckpointKey, CheckpointText, ListCheckpoints, Metadata, Order,
    Ownership, Page, SaveCheckpoint, PAGE_SIZE_SQL, VALUE_BYTES_HARD,
};
use super::recent::{self, RecentWrite, RecentWrites, Slot};
use super::{invalid, BoxFuture, CheckpointStore};
use crate::error::{PrismError, Result};
use crate::util::caps::{self, Cap};
use crate::util::time::now_iso;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, params_from_iter, ErrorCode, OptionalExtension, Row};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// Options of [`SqlitePersistence::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// The `filename` option as given (messages name it).
    pub filename: String,
    /// What every connection opens: the file, or for `":memory:"` this persistence's own
    /// in-memory database, which all its connections share (SQLite's `memdb` VFS).
    pub path: String,
    pub busy_timeout: Duration,
    /// WAL journal (`wal`, default `true`); `false` keeps SQLite's rollback journal.
    pub wal: bool,
    /// The permission bits a file database gets (`fileMode`, default `0o600`; Unix).
    pub file_mode: u32,
    /// `skipMigrations`: the table is neither created nor migrated on open.
    pub skip_migrations: bool,
}

/// `":memory:"` databases get a name each, so that this process's persistences never share one.
static MEMORY_DATABASES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl SqliteOptions {
    pub const DEFAULT_BUSY_TIMEOUT_MS: u64 = 5_000;
    pub const HARD_BUSY_TIMEOUT_MS: u64 = 600_000;
    pub const MAX_FILENAME_BYTES: usize = 4096;
    /// The reference's default: the database file is readable by its owner only.
    pub const DEFAULT_FILE_MODE: u32 = 0o600;
    /// The filename of an ephemeral database (the reference's "Use `:memory:` for ephemeral tests").
    pub const MEMORY: &'static str = ":memory:";

    /// Check the filename and resolve the busy timeout (`1..=600000` ms, else RangeError);
    /// the other options take their defaults ([`Self::with`] sets them).
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
        if is_memory_uri(filename) {
            // Each connection would open a database of its own: writes would vanish.
            return Err(invalid(format!(
                "options.filename {filename:?} is an in-memory URI, which gives each of the store's connections its own database; use {:?} for an ephemeral database",
                Self::MEMORY
            )));
        }
        let cap = Cap::new(
            "busyTimeoutMs",
            Self::DEFAULT_BUSY_TIMEOUT_MS,
            Self::HARD_BUSY_TIMEOUT_MS,
        );
        let ms = caps::resolve("options.busyTimeoutMs", busy_timeout_ms, cap)?;
        let path = if filename == Self::MEMORY {
            let n = MEMORY_DATABASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!(
                "file:/prism-review-memory-{}-{n}?vfs=memdb",
                std::process::id()
            )
        } else {
            filename.to_string()
        };
        Ok(Self {
            filename: filename.to_string(),
            path,
            busy_timeout: Duration::from_millis(ms),
            wal: true,
            file_mode: Self::DEFAULT_FILE_MODE,
            skip_migrations: false,
        })
    }

    /// `wal`, `fileMode` (`0..=0o777`, else RangeError) and `skipMigrations`, when given.
    pub fn with(
        mut self,
        wal: Option<bool>,
        file_mode: Option<u64>,
        skip_migrations: Option<bool>,
    ) -> Result<Self> {
        if let Some(mode) = file_mode {
            self.file_mode = u32::try_from(mode)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| {
                    PrismError::range("options.fileMode must be a permission mode in 0..0o777")
                })?;
        }
        self.wal = wal.unwrap_or(self.wal);
        self.skip_migrations = skip_migrations.unwrap_or(self.skip_migrations);
        Ok(self)
    }

    /// An ephemeral database (`":memory:"`): nothing on disk, gone with the persistence.
    pub fn is_memory(&self) -> bool {
        self.filename == Self::MEMORY
    }

    /// A file database named by a plain path (not a `file:` URI): its directory is created
    /// and its permissions set when it is opened.
    pub fn plain_file(&self) -> Option<&std::path::Path> {
        (!self.is_memory() && !self.filename.starts_with("file:"))
            .then(|| std::path::Path::new(&self.filename))
    }
}

/// A `file:` URI naming an in-memory database (`file::memory:`, `?mode=memory`).
fn is_memory_uri(filename: &str) -> bool {
    let Some(rest) = filename.strip_prefix("file:") else {
        return false;
    };
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    path == ":memory:" || query.split('&').any(|p| p == "mode=memory")
}

struct Shared {
    #[cfg_attr(not(test), allow(dead_code))]
    options: SqliteOptions,
    /// The writer thread and the reader pool ([`conns`]); nothing is opened before the
    /// first operation.
    conns: Arc<conns::Conns>,
    life: Arc<Lifecycle>,
    /// The writes of this persistence the artifact service may replace without a read
    /// ([`super::recent`]).
    recent: RecentWrites,
}

/// A SQLite database file holding checkpoints. Cheap to clone the store out of.
pub struct SqlitePersistence {
    shared: Arc<Shared>,
}

/// The [`CheckpointStore`] of a [`SqlitePersistence`].
pub struct SqliteCheckpointStore {
    shared: Arc<Shared>,
}

const COLUMNS: &str = "namespace, key, version, fencing_token, tenant_id, account_id, user_id, \
                       category, value, metadata, created_at, updated_at, owner_key";

/// A database still locked past `busyTimeoutMs`, a full disk or an I/O error is the
/// backend's failure (`ERR_PRISM_STORE_UNAVAILABLE`, retryable), not the caller's.
fn db_error(e: rusqlite::Error) -> PrismError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            PrismError::store_unavailable(format!("sqlite: the database is busy, retry: {e}"))
        }
        Some(ErrorCode::DiskFull) | Some(ErrorCode::SystemIoFailure) => {
            PrismError::store_unavailable(format!("sqlite: {e}"))
        }
        _ => PrismError::internal(format!("sqlite: {e}")),
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

fn malformed(e: serde_json::Error) -> PrismError {
    PrismError::internal(format!("sqlite: stored JSON is malformed: {e}"))
}

/// The record of a row, its value still text.
fn with_metadata(raw: RawRow) -> Result<(Checkpoint, String)> {
    let mut cp = raw.cp;
    cp.metadata = match raw.metadata {
        None => None,
        // Kept as saved (a lone surrogate escape included); not an object: none, as before.
        Some(t) => match Metadata::from_text(&t) {
            Ok(m) => Some(m),
            Err(_) => {
                serde_json::from_str::<serde_json::Value>(&t).map_err(malformed)?;
                None
            }
        },
    };
    Ok((cp, raw.value))
}

fn finish(raw: RawRow) -> Result<Checkpoint> {
    let value = serde_json::from_str(&raw.value).map_err(malformed)?;
    let (mut cp, _) = with_metadata(raw)?;
    cp.value = value;
    Ok(cp)
}

impl SqlitePersistence {
    /// No file is touched until the first operation (which runs off the JS thread).
    pub fn new(options: SqliteOptions) -> Self {
        Self {
            shared: Arc::new(Shared {
                conns: Arc::new(conns::Conns::new(options.clone())),
                options,
                life: Lifecycle::new("SQLite"),
                recent: RecentWrites::default(),
            }),
        }
    }

    /// The checkpoint store over this database.
    pub fn checkpoints(&self) -> Arc<dyn CheckpointStore> {
        Arc::new(SqliteCheckpointStore {
            shared: self.shared.clone(),
        })
    }

    /// Refuse every operation requested from now on (synchronous); [`Self::close`]
    /// then waits for the ones before.
    pub fn begin_close(&self) {
        self.shared.life.begin_close();
    }

    /// Refuse new work, wait for work in flight, close the connection. Idempotent.
    pub async fn close(&self) -> Result<()> {
        if !self.shared.life.close().await {
            return Ok(());
        }
        let conns = self.shared.conns.clone();
        tokio::task::spawn_blocking(move || conns.close())
            .await
            .map_err(|e| PrismError::internal(format!("sqlite close task failed: {e}")))?
    }

    /// Run `sql` (a read-only query answering one text column) — for tests and tools
    /// such as `PRAGMA integrity_check`.
    #[cfg(any(test, feature = "test-exports"))]
    pub async fn query_strings(&self, sql: String) -> Result<Vec<String>> {
        read(&self.shared, move |db| {
            let mut stmt = db.conn().prepare(&sql).map_err(db_error)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(db_error)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db_error)
        })
        .await
    }
}

/// Run `f` on a reader connection on a reader lane, never on the calling (JavaScript)
/// thread.
async fn read<T, F>(shared: &Arc<Shared>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&mut Db<'_, '_>) -> Result<T> + Send + 'static,
{
    let gate = shared.life.enter().await?;
    let conns = shared.conns.clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    // The answer is sent inside the drain point, so the call waiting for it continues
    // on this thread ([`crate::inline`]).
    let job = move || {
        crate::inline::drain_point(|| {
            let _ = tx.send(conns.read(f));
        })
    };
    // A lane that could not start (or is stopped: the read then reports the closed
    // persistence) gives the job back; tokio's blocking pool runs it.
    if let Err(job) = shared.conns.lanes.try_run(Box::new(job)) {
        drop(tokio::task::spawn_blocking(job));
    }
    let out = rx.await;
    drop(gate);
    match out {
        Ok(r) => r,
        Err(_) => Err(PrismError::internal(
            "internal error (a bug in prism-review): a SQLite read task stopped",
        )),
    }
}

/// Queue `f` for the writer (group commit); answers once its transaction committed.
async fn write<T, F>(shared: &Arc<Shared>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&mut Db<'_, '_>) -> Result<T> + Send + 'static,
{
    let gate = shared.life.enter().await?;
    let rx = shared.conns.write(f)?;
    let out = rx
        .await
        .map_err(|_| PrismError::internal("sqlite: the writer stopped before answering"));
    drop(gate);
    out?
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

fn save_insert_sql() -> String {
    format!(
        "INSERT INTO prism_checkpoints ({COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12)"
    )
}

/// The three save statements (built once; prepared once per connection), each bound to
/// `(namespace, key, version, fencing token, tenant, account, user, category, value,
/// metadata, now, owner key)` as `?1..?12`, and the compare-and-swap form to the expected
/// version as `?13`. None returns the row it wrote: SQLite answers `RETURNING` by writing
/// the row into a temporary table of the statement's own first (opened, zeroed and closed
/// on every save: issue 13), and the row is the request's but for `created_at`.
static SAVE_CREATE_SQL: LazyLock<String> =
    LazyLock::new(|| format!("{} ON CONFLICT DO NOTHING", save_insert_sql()));
macro_rules! save_cas_sql {
    () => {
        "UPDATE prism_checkpoints SET version = ?3, fencing_token = ?4, tenant_id = ?5,
           account_id = ?6, user_id = ?7, category = ?8, value = ?9, metadata = ?10,
           updated_at = ?11
         WHERE namespace = ?1 AND key = ?2 AND owner_key = ?12 AND version = ?13
           AND version < ?3 AND (fencing_token IS NULL OR ?4 >= fencing_token)"
    };
}
const SAVE_CAS_SQL: &str = save_cas_sql!();
/// [`SAVE_CAS_SQL`] over a remembered write ([`CheckpointStore::write_over`]): the stored
/// value must also be exactly its text, `?14` (compared byte for byte).
const SAVE_CAS_OVER_SQL: &str = concat!(save_cas_sql!(), " AND value = ?14");
static SAVE_UPSERT_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} ON CONFLICT (namespace, key, owner_key) DO UPDATE SET
           version = excluded.version, fencing_token = excluded.fencing_token,
           category = excluded.category, value = excluded.value,
           metadata = excluded.metadata, updated_at = excluded.updated_at
         WHERE prism_checkpoints.version < excluded.version
           AND (prism_checkpoints.fencing_token IS NULL
                OR excluded.fencing_token >= prism_checkpoints.fencing_token)",
        save_insert_sql()
    )
});

/// A save's write statement, bound from `req` and `texts` (and, over a remembered write,
/// the value text the stored one must be: `over`): when it wrote a row, the time it wrote
/// and the row's owner key; else why not (the model's rules on the stored row).
fn write_sync(
    db: &mut Db<'_, '_>,
    req: &SaveCheckpoint,
    texts: &SaveTexts,
    over: Option<&str>,
) -> Result<(String, String)> {
    let now = now_iso();
    let owner_key = req.owner.owner_key();
    let o = &req.owner;
    let (version, fence) = (to_i64(req.version), req.fencing_token.map(to_i64));
    let expected = req.expected_version.map(to_i64);
    let row: [&dyn rusqlite::ToSql; 14] = [
        &req.namespace,
        &req.key,
        &version,
        &fence,
        &o.tenant_id,
        &o.account_id,
        &o.user_id,
        &req.category,
        &texts.value,
        &texts.metadata,
        &now,
        &owner_key,
        &expected,
        &over,
    ];
    // Each form binds only what it names: the create-only and upsert forms no `?13`, the
    // compare-and-swap no `?14` unless over a remembered write.
    let (statement, bound) = match (expected, over) {
        (Some(0), None) => (Fixed::SaveCreate, &row[..12]),
        (Some(e), Some(_)) if e > 0 => (Fixed::SaveCasOver, &row[..]),
        (Some(_), None) => (Fixed::SaveCas, &row[..13]),
        (None, None) => (Fixed::SaveUpsert, &row[..12]),
        _ => return Err(recent::not_a_replace()),
    };
    let written = db
        .fixed(statement)
        .and_then(|mut s| s.execute(bound))
        .map_err(db_error)?;
    if written == 0 {
        return Err(refusal(db, req));
    }
    Ok((now, owner_key))
}

/// Save; the stored row (its value is the text written: `texts.value`).
fn save_sync(db: &mut Db<'_, '_>, req: SaveCheckpoint, texts: SaveTexts) -> Result<RawRow> {
    let (now, owner_key) = write_sync(db, &req, &texts, None)?;
    // A replaced row keeps its creation time; a created one was created now.
    let created_at = match req.expected_version {
        Some(0) => now.clone(),
        _ => db
            .fixed(Fixed::CreatedAt)
            .and_then(|mut s| s.query_row(params![req.namespace, req.key, owner_key], |r| r.get(0)))
            .map_err(db_error)?,
    };
    Ok(RawRow {
        cp: Checkpoint {
            namespace: req.namespace,
            key: req.key,
            version: req.version,
            fencing_token: req.fencing_token,
            value: serde_json::Value::Null,
            category: req.category,
            owner: req.owner,
            created_at,
            updated_at: now,
            metadata: None,
        },
        value: texts.value,
        metadata: texts.metadata,
        owner_key,
    })
}

/// Why a save wrote nothing: the model's rules applied to the stored row.
fn refusal(db: &mut Db<'_, '_>, req: &SaveCheckpoint) -> PrismError {
    let key = CheckpointKey::new(&req.namespace, &req.key, &req.owner);
    match load_sync(db, &key) {
        Ok(existing) => match req.clone().apply(existing.as_ref(), "") {
            Err(e) => e,
            Ok(_) => PrismError::conflict("Checkpoint changed concurrently; retry"),
        },
        Err(e) => e,
    }
}

static LOAD_SQL: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {COLUMNS} FROM prism_checkpoints WHERE namespace = ?1 AND key = ?2 AND owner_key = ?3")
});

fn load_raw(db: &mut Db<'_, '_>, k: &CheckpointKey) -> Result<Option<RawRow>> {
    db.fixed(Fixed::Load)
        .and_then(|mut s| {
            s.query_row(params![k.namespace, k.key, k.owner.owner_key()], read_row)
                .optional()
        })
        .map_err(db_error)
}

fn load_sync(db: &mut Db<'_, '_>, k: &CheckpointKey) -> Result<Option<Checkpoint>> {
    load_raw(db, k)?.map(finish).transpose()
}

/// The record as text, its value the stored text (checked to be JSON, not parsed into a
/// value and written again).
fn load_text_sync(db: &mut Db<'_, '_>, k: &CheckpointKey) -> Result<Option<CheckpointText>> {
    load_raw(db, k)?.map(as_text).transpose()
}

/// A row as its record's text, the value the stored text as it is (checked to be JSON:
/// a lone surrogate escape a saver wrote stays).
fn as_text(raw: RawRow) -> Result<CheckpointText> {
    serde_json::from_str::<serde::de::IgnoredAny>(&raw.value).map_err(malformed)?;
    let (cp, value) = with_metadata(raw)?;
    Ok(CheckpointText::of_value_text(cp, value))
}

/// A listing's statement: its shape, its text (of this thread's cache) and its parameters,
/// in order.
struct Listing {
    shape: Shape,
    sql: Rc<str>,
    params: Vec<SqlValue>,
}

/// A listing's `SELECT {COLUMNS} … WHERE … ORDER BY … LIMIT`, with its parameters.
fn list_sql(q: &ListCheckpoints, after: Option<&Position>, fetch: i64) -> Listing {
    selecting(Selected::Rows, q, after, fetch)
}

/// How many rows the listing of `q` (from `after`) holds, counting at most `stop`. The
/// counted rows select no column: SQLite would otherwise decode every column of each row
/// it counts, the value's text too (issue 13: `attach` counts its thread on the writer,
/// inside the group commit).
fn count_sql(q: &ListCheckpoints, after: Option<&Position>, stop: i64) -> Listing {
    selecting(Selected::Count, q, after, stop)
}

/// What a listing's statement answers: its rows' columns, or how many rows there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Selected {
    Rows,
    Count,
}

/// What a listing's SQL text depends on: which clauses it has, not what they are bound
/// to. Equal shapes have equal texts, so each thread writes a shape's text once (issue
/// 13: writing it on every call was about half of `attach`'s count on the writer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Shape {
    selected: Selected,
    namespace: bool,
    prefix: bool,
    upper: bool,
    /// `Some(members present)` when the owner's members are matched one by one, `None`
    /// for the exact owner (`owner_key`).
    members: Option<[bool; 3]>,
    categories: bool,
    order: Order,
    after: bool,
}

thread_local! {
    /// This thread's listing texts by shape (at most 1,152 shapes exist; a process uses a few).
    static LISTING_SQL: RefCell<HashMap<Shape, Rc<str>>> = RefCell::new(HashMap::new());
}

/// The listing statement selecting `selected` of `q` from `after`, `fetch` rows at most.
fn selecting(
    selected: Selected,
    q: &ListCheckpoints,
    after: Option<&Position>,
    fetch: i64,
) -> Listing {
    // At most eleven: namespace, prefix, its bound, three owner members, categories, the
    // cursor's three, the limit.
    let mut p: Vec<SqlValue> = Vec::with_capacity(11);
    let text = |v: &str| SqlValue::Text(v.to_string());
    let prefix = q.key_prefix.as_deref().filter(|k| !k.is_empty());
    let upper = prefix.and_then(cursor::prefix_upper_bound);
    p.extend(q.namespace.as_deref().map(text));
    p.extend(prefix.map(text));
    let has_upper = upper.is_some();
    p.extend(upper.map(SqlValue::Text));
    let members = if q.exact_owner {
        p.push(SqlValue::Text(q.owner.owner_key()));
        None
    } else {
        let members = q.owner.members().map(|(_, m)| m);
        p.extend(members.iter().flatten().map(|m| text(m)));
        Some(members.map(|m| m.is_some()))
    };
    if let Some(set) = &q.categories {
        p.push(SqlValue::Text(
            serde_json::to_string(set).unwrap_or_else(|_| "[]".into()),
        ));
    }
    if let Some(a) = after {
        p.extend([&a.namespace, &a.key, &a.owner_key].map(|v| text(v)));
    }
    p.push(SqlValue::Integer(fetch));
    let shape = Shape {
        selected,
        namespace: q.namespace.is_some(),
        prefix: prefix.is_some(),
        upper: has_upper,
        members,
        categories: q.categories.is_some(),
        order: q.order,
        after: after.is_some(),
    };
    let sql = LISTING_SQL.with(|cache| {
        cache
            .borrow_mut()
            .entry(shape)
            .or_insert_with(|| shape_sql(shape).into())
            .clone()
    });
    Listing {
        shape,
        sql,
        params: p,
    }
}

/// The text of a listing of `shape`; its `?N` parameters in the order `selecting` binds.
fn shape_sql(shape: Shape) -> String {
    let columns = match shape.selected {
        Selected::Rows => COLUMNS,
        Selected::Count => "1",
    };
    let mut sql = format!("SELECT {columns} FROM prism_checkpoints WHERE 1 = 1");
    // Each clause's `{}` is its parameter's number.
    let mut n = 0;
    let mut clause = |sql: &mut String, text: &str| {
        n += 1;
        sql.push_str(" AND ");
        sql.push_str(&text.replace("{}", &format!("?{n}")));
    };
    if shape.namespace {
        clause(&mut sql, "namespace = {}");
    }
    if shape.prefix {
        clause(&mut sql, "key >= {}");
    }
    if shape.upper {
        clause(&mut sql, "key < {}");
    }
    match shape.members {
        None => clause(&mut sql, "owner_key = {}"),
        Some(present) => {
            let columns = ["tenant_id = {}", "account_id = {}", "user_id = {}"];
            for (column, present) in columns.iter().zip(present) {
                if present {
                    clause(&mut sql, column);
                }
            }
        }
    }
    if shape.categories {
        clause(&mut sql, "category IN (SELECT value FROM json_each({}))");
    }
    let (cmp, dir) = match shape.order {
        Order::Asc => (">", "ASC"),
        Order::Desc => ("<", "DESC"),
    };
    if shape.after {
        sql.push_str(&format!(
            " AND (namespace, key, owner_key) {cmp} (?{}, ?{}, ?{})",
            n + 1,
            n + 2,
            n + 3
        ));
        n += 3;
    }
    sql.push_str(&format!(
        " ORDER BY namespace {dir}, key {dir}, owner_key {dir} LIMIT ?{}",
        n + 1
    ));
    match shape.selected {
        Selected::Rows => sql,
        Selected::Count => format!("SELECT COUNT(*) FROM ({sql})"),
    }
}

/// One page from rows fetched one past the page (the extra row means a next cursor),
/// each row `q` selects answered as `item` makes it.
fn page_of<T>(
    rows: Vec<RawRow>,
    q: &ListCheckpoints,
    limit: usize,
    item: fn(RawRow) -> Result<T>,
) -> Result<Page<T>> {
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
        // The filter reads no value or metadata: the row's own columns decide.
        if raw.cp.selected_by(q) {
            items.push(item(raw)?);
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

/// How many rows listing `q` in pages of its clamped limit reads by the first page that
/// reaches `cap` (see [`CheckpointStore::count`]), counted in SQL.
fn count_sync(db: &mut Db<'_, '_>, q: &ListCheckpoints, cap: u64) -> Result<u64> {
    let page = u64::from(q.page_size(PAGE_SIZE_SQL));
    let stop = cap.div_ceil(page).max(1).saturating_mul(page);
    let after = cursor::after(q)?;
    let l = count_sql(q, after.as_ref(), i64::try_from(stop).unwrap_or(i64::MAX));
    let n: i64 = db
        .listing(l.shape, &l.sql)
        .and_then(|mut s| s.query_row(params_from_iter(l.params), |r| r.get(0)))
        .map_err(db_error)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn list_sync<T>(
    db: &mut Db<'_, '_>,
    q: &ListCheckpoints,
    item: fn(RawRow) -> Result<T>,
) -> Result<Page<T>> {
    let limit = q.page_size(PAGE_SIZE_SQL);
    let after = cursor::after(q)?;
    let l = list_sql(q, after.as_ref(), i64::from(limit) + 1);
    let mut stmt = db.listing(l.shape, &l.sql).map_err(db_error)?;
    let rows = stmt
        .query_map(params_from_iter(l.params), read_row)
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(db_error)?;
    page_of(rows, q, limit as usize, item)
}

fn delete_sync(db: &mut Db<'_, '_>, k: &CheckpointKey, expected: Option<u64>) -> Result<bool> {
    let owner_key = k.owner.owner_key();
    let deleted = db
        .fixed(Fixed::Delete)
        .and_then(|mut s| s.execute(params![k.namespace, k.key, owner_key, expected.map(to_i64)]))
        .map_err(db_error)?;
    if deleted > 0 || expected.is_none() {
        return Ok(deleted > 0);
    }
    // Nothing deleted under a version: absent (false) or at another version (conflict).
    match load_sync(db, k)? {
        None => Ok(false),
        Some(cp) => Err(super::model::conflict(format!(
            "Checkpoint compare-and-swap failed (expected {}, current {})",
            expected.unwrap_or(0),
            cp.version
        ))),
    }
}

/// A create bounded by a count (see [`CheckpointStore::create_capped`]), inside the
/// writer's transaction: saved (the value text it wrote), or how many rows listing
/// `within` counted.
fn create_capped_sync(
    db: &mut Db<'_, '_>,
    req: &SaveCheckpoint,
    texts: SaveTexts,
    within: &ListCheckpoints,
    cap: u64,
) -> Result<std::result::Result<String, u64>> {
    let n = count_sync(db, within, cap)?;
    if n < cap {
        return write_sync(db, req, &texts, None).map(|_| Ok(texts.value));
    }
    // A taken key is the save's own conflict, whatever the count.
    let key = CheckpointKey::new(&req.namespace, &req.key, &req.owner);
    if load_raw(db, &key)?.is_some() {
        return Err(refusal(db, req));
    }
    Ok(Err(n))
}

impl SqliteCheckpointStore {
    /// The request checked, and the texts it writes (`value_text`, or serialized here).
    fn save_texts(req: &SaveCheckpoint, value_text: Option<String>) -> Result<SaveTexts> {
        req.validate()?;
        let value = match value_text {
            Some(t) => t,
            None => serde_json::to_string(&req.value)
                .map_err(|e| PrismError::internal(format!("cannot encode the value: {e}")))?,
        };
        if value.len() > VALUE_BYTES_HARD {
            return Err(value_too_large(value.len(), VALUE_BYTES_HARD));
        }
        let metadata = req.metadata.as_ref().map(|m| m.text().to_string());
        Ok(SaveTexts { value, metadata })
    }

    /// Save with the value's text (`value_text`, or serialized here): the stored row.
    /// What was remembered of the key is forgotten (this write leaves no memo).
    async fn save_row(&self, req: SaveCheckpoint, value_text: Option<String>) -> Result<RawRow> {
        let texts = Self::save_texts(&req, value_text)?;
        let slot = Slot::of(&req.namespace, &req.key, &req.owner);
        let out = write(&self.shared, move |c| save_sync(c, req, texts)).await;
        self.shared.recent.forget(&slot);
        out
    }

    /// Write `req` (only the write: no row read back or built, see
    /// [`CheckpointStore::write_text`]), over the remembered value text `over` when
    /// given; then remember what it wrote, with the saver's memo, or forget the key when
    /// nothing was written.
    async fn write_remembered(
        &self,
        mut req: SaveCheckpoint,
        texts: SaveTexts,
        over: Option<Arc<str>>,
    ) -> Result<()> {
        let slot = Slot::of(&req.namespace, &req.key, &req.owner);
        let (version, memo) = (req.version, req.memo.take());
        let out = write(&self.shared, move |db| {
            write_sync(db, &req, &texts, over.as_deref()).map(|_| texts.value)
        })
        .await;
        self.shared.recent.settle(slot, version, memo, out)
    }
}

impl CheckpointStore for SqliteCheckpointStore {
    fn admit(&self) -> Result<super::Admission> {
        self.shared.life.admit()
    }

    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        Box::pin(async move { finish(self.save_row(req, None).await?) })
    }

    /// The text written is the text answered: the value is not parsed back.
    fn save_text(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
    ) -> BoxFuture<'_, Result<CheckpointText>> {
        Box::pin(async move {
            let (cp, value) = with_metadata(self.save_row(req, value_text).await?)?;
            Ok(CheckpointText::of_value_text(cp, value))
        })
    }

    /// Only the write: no row read back (a replaced row's creation time) or built for an
    /// answer nobody reads (the artifact service's saves, issue 13). What it wrote is
    /// remembered ([`Self::recent_write`]).
    fn write_text(
        &self,
        req: SaveCheckpoint,
        value_text: Option<&str>,
    ) -> BoxFuture<'_, Result<()>> {
        let texts = Self::save_texts(&req, value_text.map(str::to_string));
        Box::pin(async move { self.write_remembered(req, texts?, None).await })
    }

    fn recent_write(&self, key: &CheckpointKey) -> Option<RecentWrite> {
        self.shared.recent.recall_key(key)
    }

    /// The compare-and-swap also compares the stored value with `over`'s text, in the
    /// writer's transaction.
    fn write_over(
        &self,
        req: SaveCheckpoint,
        value_text: Option<&str>,
        over: &RecentWrite,
    ) -> BoxFuture<'_, Result<()>> {
        let texts = Self::save_texts(&req, value_text.map(str::to_string));
        let over = over.text.clone();
        Box::pin(async move {
            let texts = texts?;
            recent::require_replace(&req)?;
            self.write_remembered(req, texts, Some(over)).await
        })
    }

    /// The count and the write share the writer's transaction (`BEGIN IMMEDIATE` holds
    /// the file's write lock, against other processes too): one write hop, no reads.
    fn create_capped(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
        within: &ListCheckpoints,
        cap: u64,
    ) -> Option<BoxFuture<'_, Result<super::Capped>>> {
        let within = within.clone();
        Some(Box::pin(async move {
            req.require_create()?;
            within.validate()?;
            cursor::after(&within)?;
            let mut req = req;
            let texts = Self::save_texts(&req, value_text)?;
            let slot = Slot::of(&req.namespace, &req.key, &req.owner);
            let (version, memo) = (req.version, req.memo.take());
            let out = write(&self.shared, move |c| {
                create_capped_sync(c, &req, texts, &within, cap)
            })
            .await;
            self.shared.recent.settle_capped(slot, version, memo, out)
        }))
    }

    fn count(&self, query: &ListCheckpoints, cap: u64) -> Option<BoxFuture<'_, Result<u64>>> {
        let query = query.clone();
        Some(Box::pin(async move {
            query.validate()?;
            cursor::after(&query)?;
            read(&self.shared, move |c| count_sync(c, &query, cap)).await
        }))
    }

    fn load<'a>(&'a self, key: &'a CheckpointKey) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move {
            key.validate()?;
            let k = key.clone();
            read(&self.shared, move |c| load_sync(c, &k)).await
        })
    }

    /// The stored value's text is answered as it is (see [`load_text_sync`]).
    fn load_text<'a>(
        &'a self,
        key: &'a CheckpointKey,
    ) -> BoxFuture<'a, Result<Option<CheckpointText>>> {
        Box::pin(async move {
            key.validate()?;
            let k = key.clone();
            read(&self.shared, move |c| load_text_sync(c, &k)).await
        })
    }

    fn list(&self, query: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        Box::pin(async move {
            query.validate()?;
            cursor::after(&query)?;
            read(&self.shared, move |c| list_sync(c, &query, finish)).await
        })
    }

    /// The stored value texts as they are (see [`as_text`]).
    fn list_text(&self, query: ListCheckpoints) -> BoxFuture<'_, Result<Page<CheckpointText>>> {
        Box::pin(async move {
            query.validate()?;
            cursor::after(&query)?;
            read(&self.shared, move |c| list_sync(c, &query, as_text)).await
        })
    }

    /// The value's text is kept as given: `req.value` is not read when it comes; a memo
    /// beside it is remembered with the write ([`Self::recent_write`]).
    fn beside_text(&self) -> super::BesideText {
        super::BesideText::Memo
    }

    fn delete<'a>(
        &'a self,
        key: &'a CheckpointKey,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            key.validate()?;
            let k = key.clone();
            let slot = Slot::of(&k.namespace, &k.key, &k.owner);
            let out = write(&self.shared, move |c| delete_sync(c, &k, expected_version)).await;
            self.shared.recent.forget(&slot);
            out
        })
    }
}

mod conns;
mod db;
mod schema;
use db::{Db, Fixed};
use schema::{configure, open};

#[cfg(test)]
mod tests;
