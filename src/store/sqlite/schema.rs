//! Opening a SQLite database: WAL mode (waiting out a concurrent switch), `synchronous=FULL`,
//! the table, and the migration of a table of an earlier schema.

use super::{db_error, Ownership, SqliteOptions, COLUMNS};
use crate::error::{ArtifactReason, PrismError, Result};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params_from_iter, Connection, ErrorCode, OpenFlags};
use std::time::Duration;

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

/// What every connection of a store is set to, the writer's and each reader's: the busy
/// timeout, a statement cache, and the query planner stability guarantee. Without it,
/// SQLite 3.50 reads a bound `LIMIT ?` while planning and marks the statement to be
/// planned again whenever that parameter is bound (`sqlite3ExprIsInteger` →
/// `sqlite3VdbeSetVarmask`), so every listing (and `attach`'s count of its thread, on the
/// writer) parsed and planned its SQL once more on each call however it was cached
/// (issue 13: ~7% of the writer's time under 32 reviewers). With it the plan depends on
/// the SQL alone; our statements' plans do not need the bound values (each is an index
/// lookup or an index-ordered range).
pub(super) fn configure(conn: &Connection, busy_timeout: Duration) -> Result<()> {
    conn.busy_timeout(busy_timeout).map_err(db_error)?;
    conn.set_prepared_statement_cache_capacity(64);
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map_err(db_error)?;
    Ok(())
}

pub(super) fn open(options: &SqliteOptions) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let cannot_open = |e: &dyn std::fmt::Display| {
        PrismError::artifact(
            ArtifactReason::InvalidInput,
            format!(
                "cannot open the SQLite database {:?}: {e}",
                options.filename
            ),
        )
    };
    if let Some(file) = options.plain_file() {
        create_file(file, options.file_mode).map_err(|e| cannot_open(&e))?;
    }
    let mut conn =
        Connection::open_with_flags(&options.path, flags).map_err(|e| cannot_open(&e))?;
    configure(&conn, options.busy_timeout)?;
    // An in-memory database has no WAL (its VFS has no shared memory): rollback journal.
    if options.wal && !options.is_memory() {
        let mode = switch_to_wal(&conn, options.busy_timeout)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(PrismError::internal(format!(
                "sqlite: could not switch to WAL mode (journal_mode is {mode})"
            )));
        }
    }
    if let Some(file) = options.plain_file() {
        restrict_mode(file, options.file_mode).map_err(|e| cannot_open(&e))?;
    }
    // FULL: a resolved write survives power loss too, not only a killed process.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(db_error)?;
    if options.skip_migrations {
        return Ok(conn);
    }
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(db_error)?;
    migrate_earlier_schema(&tx)?;
    tx.execute_batch(TABLE).map_err(db_error)?;
    tx.commit().map_err(db_error)?;
    Ok(conn)
}

/// A database file's directory (created when missing, as the reference does) and, when
/// the file is missing, the file itself with `mode`, so that SQLite never creates it (nor
/// its `-wal` and `-shm` files, which take the database's mode) readable by others.
fn create_file(file: &std::path::Path, mode: u32) -> std::io::Result<()> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, mode);
    #[cfg(not(unix))]
    let _ = mode;
    match open.open(file) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Set `mode` on the database file and its `-wal` and `-shm` files where they exist (the
/// reference sets it on every open, whatever the file had; Unix only). A file this process
/// may write but does not own (a database shared through its group) keeps its mode: only
/// its owner may change it.
fn restrict_mode(file: &std::path::Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::io::ErrorKind::{NotFound, PermissionDenied};
        use std::os::unix::fs::PermissionsExt;
        for suffix in ["", "-wal", "-shm"] {
            let mut name = file.as_os_str().to_owned();
            name.push(suffix);
            match std::fs::set_permissions(&name, std::fs::Permissions::from_mode(mode)) {
                Err(e) if e.kind() == PermissionDenied => {}
                Err(e) if suffix.is_empty() || e.kind() != NotFound => return Err(e),
                _ => {}
            }
        }
    }
    #[cfg(not(unix))]
    let _ = (file, mode);
    Ok(())
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
