//! PostgreSQL persistence (`tokio-postgres` over a `deadpool-postgres` pool): one table
//! keyed by `(namespace, key, owner_key)` that every Node instance shares.
//!
//! - The schema is created or migrated on first use, under a `prism_migrations` table
//!   (`prism_review_migrations` where `@arnilo/prism`'s persistence keeps its own
//!   `prism_migrations`) and a transaction-scoped advisory lock, so instances starting
//!   together do it once. Migration 2 turns the one-key-per-`(namespace, key)` table of 0.1
//!   into the owner-scoped one and adds the fencing token and metadata columns; the
//!   reference's `prism_checkpoints` table is made ours in one step ([`adopt_reference_table`]).
//! - Keys, namespaces and owner keys use the `"C"` collation: ordering, prefix ranges and
//!   keyset cursors are UTF-8 byte order, as in the other stores. The value and metadata
//!   are `jsonb` (so object keys come back in PostgreSQL's order, and `\u0000` in a string
//!   is refused).
//! - A save is one statement (`INSERT … ON CONFLICT DO NOTHING`, `UPDATE … WHERE version =
//!   $n`, `INSERT … ON CONFLICT DO UPDATE … WHERE`), with the version and fencing rules in
//!   SQL, each `RETURNING` the row (or only that it wrote one, for a caller that reads no
//!   answer: `write_text`); no row back is a conflict, explained from the stored row by
//!   the model's own rules.
//! - Every query is parameterised; the schema name is checked to be a plain identifier.
//! - Errors: serialization failures and deadlocks are conflicts (retryable); connection
//!   failures and timeouts are `ERR_PRISM_INTERNAL` errors whose messages never carry the
//!   connection string or password; `close()` refuses new work, waits for work in flight,
//!   and closes the pool.

use super::cursor::{self, Position};
use super::lifecycle::Lifecycle;
use super::model::{
    value_bytes, value_too_large, Checkpoint, CheckpointKey, CheckpointText, ListCheckpoints,
    Metadata, Order, Ownership, Page, SaveCheckpoint, PAGE_SIZE_SQL, VALUE_BYTES_HARD,
};
use super::recent::{self, RecentWrite, RecentWrites, Slot};
use super::{invalid, CheckpointStore};
use crate::error::{PrismError, Result};
use crate::util::caps::{self, Cap};
use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};

/// Options of [`PostgresPersistence::new`].
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    config: tokio_postgres::Config,
    pub max_connections: usize,
    pub schema: String,
    pub connect_timeout: Duration,
    /// `skipMigrations`: the schema is neither created nor migrated on first use.
    pub skip_migrations: bool,
}

/// A connection string that can never connect (empty, unparsable, no host, no user) is a
/// `TypeError` at construction (issue 17 point 8); the message never quotes the string.
fn bad_connection_string(why: &str) -> PrismError {
    PrismError::type_error(format!("options.connectionString {why}"))
}

impl PostgresOptions {
    pub const DEFAULT_MAX_CONNECTIONS: u64 = 10;
    pub const HARD_MAX_CONNECTIONS: u64 = 100;
    pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;
    pub const HARD_CONNECT_TIMEOUT_MS: u64 = 600_000;
    pub const DEFAULT_SCHEMA: &'static str = "public";

    pub fn new(
        connection_string: &str,
        max_connections: Option<u64>,
        schema: Option<&str>,
        connect_timeout_ms: Option<u64>,
    ) -> Result<Self> {
        if connection_string.is_empty() || connection_string.len() > 8192 {
            return Err(bad_connection_string("must be 1..8192 bytes"));
        }
        // The parser's message could quote the string (and its password): never show it.
        let mut config = tokio_postgres::Config::from_str(connection_string)
            .map_err(|_| bad_connection_string("is not a valid PostgreSQL connection string"))?;
        let range = |name: &'static str, v: Option<u64>, default: u64, hard: u64| {
            caps::resolve(&format!("options.{name}"), v, Cap::new(name, default, hard))
        };
        let max = range(
            "maxConnections",
            max_connections,
            Self::DEFAULT_MAX_CONNECTIONS,
            Self::HARD_MAX_CONNECTIONS,
        )?;
        let timeout = range(
            "connectTimeoutMs",
            connect_timeout_ms,
            Self::DEFAULT_CONNECT_TIMEOUT_MS,
            Self::HARD_CONNECT_TIMEOUT_MS,
        )?;
        let schema = schema.unwrap_or(Self::DEFAULT_SCHEMA);
        let ident_ok = !schema.is_empty()
            && schema.len() <= 63
            && schema
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident_ok {
            return Err(invalid(
                "options.schema must be a plain identifier: a letter or _, then letters, digits or _ (at most 63)",
            ));
        }
        // What the driver would only find out at first use: no host ("postgres://",
        // " ") or no user (the driver has no default user).
        if config.get_hosts().is_empty() {
            return Err(bad_connection_string("names no host"));
        }
        if config.get_user().is_none_or(str::is_empty) {
            return Err(bad_connection_string("names no user"));
        }
        let connect_timeout = Duration::from_millis(timeout);
        config.connect_timeout(connect_timeout);
        if config.get_application_name().is_none() {
            config.application_name("prism-review");
        }
        Ok(Self {
            config,
            max_connections: usize::try_from(max).unwrap_or(10),
            schema: schema.to_string(),
            connect_timeout,
            skip_migrations: false,
        })
    }
}

struct Shared {
    pool: Pool,
    schema: String,
    table: String,
    password: Option<String>,
    connect_timeout: Duration,
    migrated: AtomicBool,
    migrate_lock: tokio::sync::Mutex<()>,
    life: Arc<Lifecycle>,
    /// The writes of this persistence the artifact service may replace without a read
    /// ([`super::recent`]).
    recent: RecentWrites,
}

/// A PostgreSQL database holding checkpoints.
pub struct PostgresPersistence {
    shared: Arc<Shared>,
}

/// The [`CheckpointStore`] of a [`PostgresPersistence`].
pub struct PostgresCheckpointStore {
    shared: Arc<Shared>,
}

fn ts(col: &str) -> String {
    format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
}

fn columns() -> String {
    format!(
        "namespace, key, version, fencing_token, tenant_id, account_id, user_id, category, value, metadata, {}, {}, owner_key",
        ts("created_at"),
        ts("updated_at")
    )
}

impl Shared {
    /// Remove anything that could be a credential from a message.
    fn scrub(&self, message: String) -> String {
        match &self.password {
            Some(p) if !p.is_empty() => message.replace(p.as_str(), "***"),
            _ => message,
        }
    }

    fn db_error(&self, e: &tokio_postgres::Error) -> PrismError {
        if let Some(db) = e.as_db_error() {
            let code = db.code().code();
            let msg = self.scrub(db.message().to_string());
            return match code {
                // serialization_failure, deadlock_detected, lock_not_available
                "40001" | "40P01" | "55P03" => {
                    PrismError::conflict(format!("postgres: {msg} ({code}), retry"))
                }
                // untranslatable_character (\u0000 in jsonb), program_limit_exceeded
                "22P05" | "54000" => invalid(format!("postgres refused the value: {msg} ({code})")),
                // The backend, not the call: connection exceptions (08), insufficient
                // resources such as a full disk (53), operator intervention such as a
                // shutdown (57P01..57P05; 57014 is a cancel), system I/O errors (58).
                c if c.starts_with("08")
                    || c.starts_with("53")
                    || c.starts_with("58")
                    || (c.starts_with("57P")) =>
                {
                    PrismError::store_unavailable(format!("postgres: {msg} ({code})"))
                }
                _ => PrismError::internal(format!("postgres: {msg} ({code})")),
            };
        }
        let text = e.to_string();
        let kind = if e.is_closed() {
            "the connection was closed".to_string()
        } else {
            self.scrub(text.clone())
        };
        // No server answer: a refused, reset, closed or timed-out connection is the
        // backend's failure (retryable); anything else from the driver is ours.
        let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
        let backend = e.is_closed()
            || io
            || text.starts_with("error connecting to server")
            || text.starts_with("timeout waiting for server");
        if backend {
            PrismError::store_unavailable(format!("postgres: {kind}"))
        } else {
            PrismError::internal(format!("postgres: {kind}"))
        }
    }

    fn pool_error(&self, e: PoolError) -> PrismError {
        match e {
            PoolError::Timeout(_) => PrismError::store_unavailable(format!(
                "postgres: no connection within {} ms",
                self.connect_timeout.as_millis()
            )),
            PoolError::Backend(e) => self.db_error(&e),
            PoolError::Closed => self.life.closed_error(),
            other => {
                PrismError::internal(format!("postgres pool: {}", self.scrub(other.to_string())))
            }
        }
    }

    async fn client(&self) -> Result<deadpool_postgres::Client> {
        let client = self.pool.get().await.map_err(|e| self.pool_error(e))?;
        if !self.migrated.load(Ordering::Acquire) {
            let _g = self.migrate_lock.lock().await;
            if !self.migrated.load(Ordering::Acquire) {
                self.migrate(&client).await?;
                self.migrated.store(true, Ordering::Release);
            }
        }
        Ok(client)
    }

    async fn migrate(&self, client: &deadpool_postgres::Client) -> Result<()> {
        let s = &self.schema;
        let lock_key = advisory_key(&format!("prism-review:{s}"));
        let steps = async {
            client
                .batch_execute(&format!(
                    "BEGIN; SELECT pg_advisory_xact_lock({lock_key}); CREATE SCHEMA IF NOT EXISTS \"{s}\";"
                ))
                .await?;
            // @arnilo/prism's persistence keeps a `prism_migrations` table of its own layout
            // (an `id` column): ours is then `prism_review_migrations`.
            let theirs = client
                .query_opt(
                    "SELECT 1 FROM information_schema.columns WHERE table_schema = $1 \
                     AND table_name = 'prism_migrations' AND column_name = 'id'",
                    &[s],
                )
                .await?
                .is_some();
            let m = if theirs {
                "prism_review_migrations"
            } else {
                "prism_migrations"
            };
            client
                .batch_execute(&format!(
                    "CREATE TABLE IF NOT EXISTS \"{s}\".{m} (
                       version integer PRIMARY KEY,
                       applied_at timestamptz NOT NULL DEFAULT now()
                     );"
                ))
                .await?;
            adopt_reference_table(client, s, m).await?;
            client.batch_execute(&migration_sql(s, m)).await
        };
        match steps.await {
            Ok(()) => Ok(()),
            Err(e) => {
                // Leave the pooled connection usable.
                let _ = client.batch_execute("ROLLBACK").await;
                Err(self.db_error(&e))
            }
        }
    }
}

/// Migration 0, inside the caller's transaction: a `prism_checkpoints` table of
/// `@arnilo/prism`'s PostgreSQL persistence (one key per `(namespace, key)`, no owner key)
/// becomes ours. Every row keeps its namespace, key, owner, version, fencing token, value,
/// category, metadata and times, and gets the owner key every store computes
/// ([`Ownership::owner_key`]); migrations 1 and 2 are then recorded in `m` as done.
async fn adopt_reference_table(
    client: &deadpool_postgres::Client,
    s: &str,
    m: &str,
) -> std::result::Result<(), tokio_postgres::Error> {
    let pending = client
        .query_one(
            &format!(
                "SELECT NOT EXISTS (SELECT 1 FROM \"{s}\".{m} WHERE version = 1)
                    AND EXISTS (SELECT 1 FROM information_schema.tables
                                WHERE table_schema = $1 AND table_name = 'prism_checkpoints')
                    AND NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1
                                    AND table_name = 'prism_checkpoints' AND column_name = 'owner_key')"
            ),
            &[&s],
        )
        .await?
        .try_get::<_, bool>(0)?;
    if !pending {
        return Ok(());
    }
    let t = format!("\"{s}\".prism_checkpoints");
    client
        .batch_execute(&format!(
            "ALTER TABLE {t}
               ADD COLUMN IF NOT EXISTS fencing_token bigint,
               ADD COLUMN IF NOT EXISTS metadata jsonb,
               ADD COLUMN owner_key text COLLATE \"C\";"
        ))
        .await?;
    let rows = client
        .query(
            &format!("SELECT namespace, key, tenant_id, account_id, user_id FROM {t}"),
            &[],
        )
        .await?;
    let (mut namespaces, mut keys, mut owners) = (Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        let owner = Ownership {
            tenant_id: row.try_get(2)?,
            account_id: row.try_get(3)?,
            user_id: row.try_get(4)?,
        };
        namespaces.push(row.try_get::<_, String>(0)?);
        keys.push(row.try_get::<_, String>(1)?);
        owners.push(owner.owner_key());
    }
    client
        .execute(
            &format!(
                "UPDATE {t} SET owner_key = v.o FROM unnest($1::text[], $2::text[], $3::text[]) AS v(n, k, o)
                 WHERE {t}.namespace = v.n AND {t}.key = v.k"
            ),
            &[&namespaces, &keys, &owners],
        )
        .await?;
    client
        .batch_execute(&format!(
            "DROP INDEX IF EXISTS \"{s}\".prism_checkpoints_list_idx;
             ALTER TABLE {t}
               DROP CONSTRAINT prism_checkpoints_pkey,
               ALTER COLUMN owner_key SET NOT NULL,
               ALTER COLUMN namespace TYPE text COLLATE \"C\",
               ALTER COLUMN key TYPE text COLLATE \"C\",
               ALTER COLUMN version TYPE bigint,
               ADD CONSTRAINT prism_checkpoints_version_check CHECK (version >= 1),
               ADD PRIMARY KEY (namespace, key, owner_key);
             CREATE INDEX prism_checkpoints_by_owner ON {t} (namespace, owner_key, key);
             INSERT INTO \"{s}\".{m} (version) VALUES (1), (2);"
        ))
        .await
}

/// Migrations 1 (the table of 0.1, one key per `(namespace, key)`) and 2 (owner-scoped
/// keys, fencing tokens and metadata) of schema `s`, kept in table `m`, inside the
/// caller's transaction, which this commits.
fn migration_sql(s: &str, m: &str) -> String {
    format!(
        "DO $prism$
         BEGIN
           IF NOT EXISTS (SELECT 1 FROM \"{s}\".{m} WHERE version = 1) THEN
             CREATE TABLE \"{s}\".prism_checkpoints (
               namespace  text COLLATE \"C\" NOT NULL,
               key        text COLLATE \"C\" NOT NULL,
               version    bigint NOT NULL CHECK (version >= 1),
               tenant_id  text,
               account_id text,
               user_id    text,
               owner_key  text COLLATE \"C\" NOT NULL,
               category   text,
               value      jsonb NOT NULL,
               created_at timestamptz NOT NULL,
               updated_at timestamptz NOT NULL,
               PRIMARY KEY (namespace, key)
             );
             CREATE INDEX prism_checkpoints_by_owner
               ON \"{s}\".prism_checkpoints (namespace, owner_key, key);
             INSERT INTO \"{s}\".{m} (version) VALUES (1);
           END IF;
           IF NOT EXISTS (SELECT 1 FROM \"{s}\".{m} WHERE version = 2) THEN
             ALTER TABLE \"{s}\".prism_checkpoints
               ADD COLUMN fencing_token bigint,
               ADD COLUMN metadata jsonb,
               DROP CONSTRAINT prism_checkpoints_pkey,
               ADD PRIMARY KEY (namespace, key, owner_key);
             INSERT INTO \"{s}\".{m} (version) VALUES (2);
           END IF;
         END
         $prism$;
         COMMIT;"
    )
}

fn unexpected_row(e: tokio_postgres::Error) -> PrismError {
    PrismError::internal(format!("postgres: unexpected row: {e}"))
}

/// A row's checkpoint with its value left `null`, and its owner key (the cursor position
/// needs it).
fn row_members(row: &Row) -> Result<(Checkpoint, String)> {
    let get = unexpected_row;
    let version: i64 = row.try_get(2).map_err(get)?;
    let fence: Option<i64> = row.try_get(3).map_err(get)?;
    // Kept as the text PostgreSQL answers (checked to be JSON, not read into values and
    // written again); anything but an object is no metadata.
    let metadata: Option<tokio_postgres::types::Json<Box<serde_json::value::RawValue>>> =
        row.try_get(9).map_err(get)?;
    Ok((
        Checkpoint {
            namespace: row.try_get(0).map_err(get)?,
            key: row.try_get(1).map_err(get)?,
            version: u64::try_from(version).unwrap_or(0),
            fencing_token: fence.map(|f| u64::try_from(f).unwrap_or(0)),
            owner: Ownership {
                tenant_id: row.try_get(4).map_err(get)?,
                account_id: row.try_get(5).map_err(get)?,
                user_id: row.try_get(6).map_err(get)?,
            },
            category: row.try_get(7).map_err(get)?,
            value: serde_json::Value::Null,
            metadata: metadata.and_then(|m| Metadata::from_raw(&m.0)),
            created_at: row.try_get(10).map_err(get)?,
            updated_at: row.try_get(11).map_err(get)?,
        },
        row.try_get(12).map_err(get)?,
    ))
}

/// `cp` (of `row`, [`row_members`]) with the row's value read into a value.
fn with_value(mut cp: Checkpoint, row: &Row) -> Result<Checkpoint> {
    cp.value = row.try_get(8).map_err(unexpected_row)?;
    Ok(cp)
}

/// `cp` (of `row`, [`row_members`]) as text, the value the JSON text PostgreSQL answered
/// (checked to be JSON, not read into values and written again: what the artifact service
/// and the binding read; issue 13).
fn with_value_text(cp: Checkpoint, row: &Row) -> Result<CheckpointText> {
    let value: tokio_postgres::types::Json<Box<serde_json::value::RawValue>> =
        row.try_get(8).map_err(unexpected_row)?;
    let text: Box<str> = value.0.into();
    Ok(CheckpointText::of_value_text(cp, text.into_string()))
}

/// A row and its owner key.
fn to_checkpoint(row: &Row) -> Result<(Checkpoint, String)> {
    let (cp, okey) = row_members(row)?;
    Ok((with_value(cp, row)?, okey))
}

fn to_i64(v: u64) -> i64 {
    // Versions and fencing tokens are validated to be at most 2^53 - 1.
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl PostgresPersistence {
    /// Builds the pool; no connection is made until the first operation.
    pub fn new(options: PostgresOptions) -> Result<Self> {
        let password = options
            .config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        let manager = Manager::from_config(
            options.config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let t = Some(options.connect_timeout);
        let pool = Pool::builder(manager)
            .max_size(options.max_connections)
            .runtime(Runtime::Tokio1)
            .wait_timeout(t)
            .create_timeout(t)
            .recycle_timeout(t)
            .build()
            .map_err(|e| PrismError::internal(format!("postgres pool: {e}")))?;
        let table = format!("\"{}\".prism_checkpoints", options.schema);
        Ok(Self {
            shared: Arc::new(Shared {
                pool,
                schema: options.schema,
                table,
                password,
                connect_timeout: options.connect_timeout,
                migrated: AtomicBool::new(options.skip_migrations),
                migrate_lock: tokio::sync::Mutex::new(()),
                life: Lifecycle::new("PostgreSQL"),
                recent: RecentWrites::default(),
            }),
        })
    }

    pub fn checkpoints(&self) -> Arc<dyn CheckpointStore> {
        Arc::new(PostgresCheckpointStore {
            shared: self.shared.clone(),
        })
    }

    /// Refuse every operation requested from now on (synchronous); [`Self::close`]
    /// then waits for the ones before.
    pub fn begin_close(&self) {
        self.shared.life.begin_close();
    }

    /// Refuse new work, wait for work in flight, close the pool. Idempotent.
    pub async fn close(&self) -> Result<()> {
        self.shared.life.close().await;
        self.shared.pool.close();
        Ok(())
    }
}

type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

/// The bound values of a save, checked (the value's size cap), kept alive while its
/// parameters borrow them.
struct SaveArgs<'a> {
    okey: String,
    json: tokio_postgres::types::Json<&'a serde_json::Value>,
    meta: Option<tokio_postgres::types::Json<&'a Metadata>>,
    version: i64,
    fence: Option<i64>,
    expected: Option<i64>,
}

impl<'a> SaveArgs<'a> {
    fn checked(req: &'a SaveCheckpoint) -> Result<Self> {
        req.validate()?;
        let bytes = value_bytes(&req.value);
        if bytes > VALUE_BYTES_HARD {
            return Err(value_too_large(bytes, VALUE_BYTES_HARD));
        }
        Ok(Self {
            okey: req.owner.owner_key(),
            json: tokio_postgres::types::Json(&req.value),
            meta: req.metadata.as_ref().map(tokio_postgres::types::Json),
            version: to_i64(req.version),
            fence: req.fencing_token.map(to_i64),
            expected: req.expected_version.map(to_i64),
        })
    }

    /// `$1..$11` (and `$12`, the expected version, for the compare-and-swap form).
    fn params(&'a self, req: &'a SaveCheckpoint) -> Params<'a> {
        let o = &req.owner;
        let row: [&(dyn ToSql + Sync); 12] = [
            &req.namespace,
            &req.key,
            &self.okey,
            &self.version,
            &self.fence,
            &o.tenant_id,
            &o.account_id,
            &o.user_id,
            &req.category,
            &self.json,
            &self.meta,
            &self.expected,
        ];
        // Only the compare-and-swap form names `$12`.
        let cas = matches!(self.expected, Some(e) if e > 0);
        row[..if cas { 12 } else { 11 }].to_vec()
    }
}

/// The columns a save's insert writes, in the order of its `$1..$11`, then the two times.
const INSERT_COLUMNS: &str = "namespace, key, owner_key, version, fencing_token, tenant_id, \
     account_id, user_id, category, value, metadata, created_at, updated_at";

/// A `pg_advisory_xact_lock` key: the first 60 bits of the text's SHA-256.
fn advisory_key(text: &str) -> i64 {
    let hex = crate::json::sha256_hex(text.as_bytes());
    i64::from_str_radix(&hex[..15], 16).unwrap_or(0)
}

/// The save statement for `expected` over `table`: `$1..$11` are `(namespace, key,
/// owner key, version, fencing token, tenant, account, user, category, value, metadata)`,
/// `$12` the expected version of the compare-and-swap form, and `$13`, `over` a
/// remembered write ([`CheckpointStore::write_over`]), the value text the stored value
/// must equal (as `jsonb`). It returns the row written, or, without `answer`, only a `1`
/// for it (the value is not sent back to be parsed and dropped: issue 13).
fn save_sql(table: &str, expected: Option<i64>, answer: bool, over: bool) -> String {
    let cols = if answer { columns() } else { "1".into() };
    let insert = format!(
        "INSERT INTO {table} AS t ({INSERT_COLUMNS})
         VALUES ($1, $2, $3, $4, $5::bigint, $6, $7, $8, $9, $10, $11, now(), now())"
    );
    match expected {
        Some(0) => format!("{insert} ON CONFLICT DO NOTHING RETURNING {cols}"),
        Some(_) => format!(
            "UPDATE {table} SET version = $4, fencing_token = $5::bigint, tenant_id = $6,
               account_id = $7, user_id = $8, category = $9, value = $10, metadata = $11,
               updated_at = now()
             WHERE namespace = $1 AND key = $2 AND owner_key = $3 AND version = $12
               AND version < $4 AND (fencing_token IS NULL OR $5::bigint >= fencing_token)
               {}
             RETURNING {cols}",
            if over {
                "AND value = $13::text::jsonb"
            } else {
                ""
            }
        ),
        None => format!(
            "{insert} ON CONFLICT (namespace, key, owner_key) DO UPDATE SET
               version = excluded.version, fencing_token = excluded.fencing_token,
               category = excluded.category, value = excluded.value,
               metadata = excluded.metadata, updated_at = now()
             WHERE t.version < excluded.version
               AND (t.fencing_token IS NULL OR excluded.fencing_token >= t.fencing_token)
             RETURNING {cols}"
        ),
    }
}

/// The bound values of a listing query, kept alive while its parameters borrow them.
struct ListArgs {
    prefix: Option<String>,
    upper: Option<String>,
    owner_key: String,
    after: Option<Position>,
    fetch: i64,
}

impl ListArgs {
    /// The values listing `q` binds, fetching `fetch` rows.
    fn new(q: &ListCheckpoints, fetch: i64) -> Result<Self> {
        let prefix = q.key_prefix.clone().filter(|p| !p.is_empty());
        Ok(Self {
            upper: prefix.as_deref().and_then(cursor::prefix_upper_bound),
            prefix,
            owner_key: q.owner.owner_key(),
            after: cursor::after(q)?,
            fetch,
        })
    }

    /// The values of counting `q` by the first page (of its clamped limit) that reaches
    /// `cap` (see [`CheckpointStore::count`]).
    fn counting(q: &ListCheckpoints, cap: u64) -> Result<Self> {
        let page = u64::from(q.page_size(PAGE_SIZE_SQL));
        let stop = cap.div_ceil(page).max(1).saturating_mul(page);
        Self::new(q, i64::try_from(stop).unwrap_or(i64::MAX))
    }
}

/// `SELECT COUNT(*)` of the rows the listing `list_sql` selects, its parameters numbered
/// after `p`'s.
fn count_sql<'a>(
    table: &str,
    q: &'a ListCheckpoints,
    a: &'a ListArgs,
    p: Params<'a>,
) -> (String, Params<'a>) {
    let (sql, p) = list_sql_after(table, q, a, p);
    (format!("SELECT COUNT(*) FROM ({sql}) AS page"), p)
}

/// The `SELECT … WHERE … ORDER BY … LIMIT` of a listing, with its parameters.
fn list_sql<'a>(table: &str, q: &'a ListCheckpoints, a: &'a ListArgs) -> (String, Params<'a>) {
    list_sql_after(table, q, a, Vec::new())
}

/// [`list_sql`], its parameters numbered after those already in `p`.
fn list_sql_after<'a>(
    table: &str,
    q: &'a ListCheckpoints,
    a: &'a ListArgs,
    mut p: Params<'a>,
) -> (String, Params<'a>) {
    let mut sql = format!("SELECT {} FROM {table} WHERE true", columns());
    let mut add = |p: &mut Params<'a>, v: &'a (dyn ToSql + Sync), clause: &str| {
        p.push(v);
        sql.push_str(&clause.replace('?', &format!("${}", p.len())));
    };
    if let Some(ns) = &q.namespace {
        add(&mut p, ns, " AND namespace = ?");
    }
    if let Some(pre) = &a.prefix {
        add(&mut p, pre, " AND key >= ?");
    }
    if let Some(u) = &a.upper {
        add(&mut p, u, " AND key < ?");
    }
    if q.exact_owner {
        add(&mut p, &a.owner_key, " AND owner_key = ?");
    } else {
        let members = [&q.owner.tenant_id, &q.owner.account_id, &q.owner.user_id];
        for (column, m) in ["tenant_id", "account_id", "user_id"].iter().zip(members) {
            if let Some(v) = m {
                add(&mut p, v, &format!(" AND {column} = ?"));
            }
        }
    }
    if let Some(set) = &q.categories {
        add(&mut p, set, " AND category = ANY(?::text[])");
    }
    let (cmp, dir) = match q.order {
        Order::Asc => (">", "ASC"),
        Order::Desc => ("<", "DESC"),
    };
    if let Some(pos) = &a.after {
        p.push(&pos.namespace);
        p.push(&pos.key);
        p.push(&pos.owner_key);
        let n = p.len();
        sql.push_str(&format!(
            " AND (namespace, key, owner_key) {cmp} (${}, ${}, ${n})",
            n - 2,
            n - 1
        ));
    }
    p.push(&a.fetch);
    sql.push_str(&format!(
        " ORDER BY namespace {dir}, key {dir}, owner_key {dir} LIMIT ${}",
        p.len()
    ));
    (sql, p)
}

impl PostgresCheckpointStore {
    /// [`Self::query`] of a statement that selects at most one row (by primary key).
    async fn query_opt(&self, sql: &str, params: &Params<'_>) -> Result<Option<Row>> {
        let mut rows = self.query(sql, params).await?;
        if rows.len() > 1 {
            return Err(PrismError::internal(format!(
                "a single-row query returned {} rows",
                rows.len()
            )));
        }
        Ok(rows.pop())
    }

    async fn query(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        let sh = &self.shared;
        let _in = sh.life.enter().await?;
        let client = sh.client().await?;
        let stmt = client
            .prepare_cached(sql)
            .await
            .map_err(|e| sh.db_error(&e))?;
        client
            .query(&stmt, params)
            .await
            .map_err(|e| sh.db_error(&e))
    }

    /// A save; what was remembered of the key is forgotten.
    async fn save_impl(&self, req: SaveCheckpoint) -> Result<Checkpoint> {
        let row = self.save_statement(&req, true, None).await;
        self.shared
            .recent
            .forget(&Slot::of(&req.namespace, &req.key, &req.owner));
        to_checkpoint(&row?).map(|(cp, _)| cp)
    }

    /// [`Self::save_impl`] without an answer, over the remembered value text `over` when
    /// given; then what it wrote (`value_text`, the value's text, or its serialization) is
    /// remembered, or the key forgotten when nothing was written.
    async fn write_impl(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
        over: Option<Arc<str>>,
    ) -> Result<()> {
        let slot = Slot::of(&req.namespace, &req.key, &req.owner);
        let out = self.save_statement(&req, false, over.as_deref()).await;
        let written = out.map(|_| value_text.unwrap_or_else(|| req.value.to_string()));
        self.shared.recent.settle(slot, req.version, None, written)
    }

    /// Run `req`'s save statement (see [`save_sql`]), over the value text `over` when
    /// given: the row it returned, or why it wrote none.
    async fn save_statement(
        &self,
        req: &SaveCheckpoint,
        answer: bool,
        over: Option<&str>,
    ) -> Result<Row> {
        let args = SaveArgs::checked(req)?;
        let sql = save_sql(&self.shared.table, args.expected, answer, over.is_some());
        let mut params = args.params(req);
        if let Some(text) = &over {
            params.push(text);
        }
        match self.query_opt(&sql, &params).await? {
            Some(row) => Ok(row),
            None => Err(self.refusal(req).await),
        }
    }

    /// Why a save wrote nothing: the model's rules applied to the stored row.
    async fn refusal(&self, req: &SaveCheckpoint) -> PrismError {
        let key = CheckpointKey::new(&req.namespace, &req.key, &req.owner);
        match self.load_impl(&key).await {
            Ok(existing) => match req.clone().apply(existing.as_ref(), "") {
                Err(e) => e,
                Ok(_) => PrismError::conflict("Checkpoint changed concurrently; retry"),
            },
            Err(e) => e,
        }
    }

    /// A create bounded by a count, in one transaction (see
    /// [`CheckpointStore::create_capped`]) sent as one pipelined round trip: `BEGIN`, a
    /// transaction-scoped advisory lock on the listing (serializing the capped creates of
    /// one listing, across pool connections and processes), an insert that counts the
    /// listing in its own `WHERE` (its snapshot is taken after the lock, under READ
    /// COMMITTED, so it sees every earlier holder's commit), `COMMIT`. Any failure aborts
    /// the transaction and the `COMMIT` rolls it back.
    ///
    /// What it wrote is remembered, or the key forgotten ([`RecentWrites::settle_capped`]).
    async fn create_capped_impl(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
        within: ListCheckpoints,
        cap: u64,
    ) -> Result<super::Capped> {
        let slot = Slot::of(&req.namespace, &req.key, &req.owner);
        let version = req.version;
        let out = self.create_capped_text(req, value_text, within, cap).await;
        self.shared.recent.settle_capped(slot, version, None, out)
    }

    /// [`Self::create_capped_impl`]'s statements: the value text written, or the count
    /// that refused the create (the listing full).
    async fn create_capped_text(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
        within: ListCheckpoints,
        cap: u64,
    ) -> Result<std::result::Result<String, u64>> {
        req.require_create()?;
        within.validate()?;
        let args = SaveArgs::checked(&req)?;
        let list = ListArgs::counting(&within, cap)?;
        let sh = &self.shared;
        let lock = advisory_key(&format!(
            "prism-review:capped:{}\0{}\0{}\0{}",
            sh.table,
            within.namespace.as_deref().unwrap_or(""),
            list.prefix.as_deref().unwrap_or(""),
            list.owner_key
        ));
        let cap_param = i64::try_from(cap).unwrap_or(i64::MAX);
        let mut p = args.params(&req);
        p.push(&cap_param);
        let cap_at = p.len();
        let (counted, p) = count_sql(&sh.table, &within, &list, p);
        let t = &sh.table;
        let insert = format!(
            "INSERT INTO {t} AS t ({INSERT_COLUMNS})
             SELECT $1::text, $2::text, $3::text, $4::bigint, $5::bigint, $6::text, $7::text,
               $8::text, $9::text, $10::jsonb, $11::jsonb, now(), now()
             WHERE ({counted}) < ${cap_at}::bigint
             ON CONFLICT DO NOTHING RETURNING 1"
        );
        let db = |e: tokio_postgres::Error| sh.db_error(&e);
        let row = {
            let _in = sh.life.enter().await?;
            let client = sh.client().await?;
            let insert = client.prepare_cached(&insert).await.map_err(db)?;
            let begin = format!("BEGIN; SELECT pg_advisory_xact_lock({lock})");
            let (begun, row, committed) = tokio::join!(
                client.batch_execute(&begin),
                client.query_opt(&insert, &p),
                client.batch_execute("COMMIT"),
            );
            begun.map_err(db)?;
            let row = row.map_err(db)?;
            committed.map_err(db)?;
            row
        };
        if row.is_some() {
            return Ok(Ok(value_text.unwrap_or_else(|| req.value.to_string())));
        }
        // Nothing inserted: the key is taken (the save's own conflict, whatever the
        // count), or the listing was full (answered with a recount, at least the cap
        // that refused the insert).
        let key = CheckpointKey::new(&req.namespace, &req.key, &req.owner);
        if self.load_impl(&key).await?.is_some() {
            return Err(self.refusal(&req).await);
        }
        Ok(Err(self.count_impl(within, cap).await?.max(cap)))
    }

    async fn load_impl(&self, k: &CheckpointKey) -> Result<Option<Checkpoint>> {
        self.load_row(k, with_value).await
    }

    /// The checkpoint `k` names, its value answered by `value` ([`with_value`],
    /// [`with_value_text`]).
    async fn load_row<T>(
        &self,
        k: &CheckpointKey,
        value: fn(Checkpoint, &Row) -> Result<T>,
    ) -> Result<Option<T>> {
        k.validate()?;
        let sql = format!(
            "SELECT {} FROM {} WHERE namespace = $1 AND key = $2 AND owner_key = $3",
            columns(),
            self.shared.table
        );
        let okey = k.owner.owner_key();
        let p: Params = vec![&k.namespace, &k.key, &okey];
        self.query_opt(&sql, &p)
            .await?
            .map(|r| value(row_members(&r)?.0, &r))
            .transpose()
    }

    async fn list_impl(&self, q: ListCheckpoints) -> Result<Page<Checkpoint>> {
        self.list_rows(q, with_value).await
    }

    /// A page of the listing `q`, each checkpoint's value answered by `value`
    /// ([`with_value`], [`with_value_text`]).
    async fn list_rows<T>(
        &self,
        q: ListCheckpoints,
        value: fn(Checkpoint, &Row) -> Result<T>,
    ) -> Result<Page<T>> {
        q.validate()?;
        let limit = q.page_size(PAGE_SIZE_SQL);
        let args = ListArgs::new(&q, i64::from(limit) + 1)?;
        let (sql, p) = list_sql(&self.shared.table, &q, &args);
        let rows = self.query(&sql, &p).await?;
        let mut items = Vec::with_capacity(rows.len().min(limit as usize));
        let mut last = None;
        let mut more = false;
        for r in &rows {
            if items.len() == limit as usize {
                more = true;
                break;
            }
            let (cp, okey) = row_members(r)?;
            let selected = cp.selected_by(&q);
            last = Some(Position {
                namespace: cp.namespace.clone(),
                key: cp.key.clone(),
                owner_key: okey,
            });
            if selected {
                items.push(value(cp, r)?);
            }
        }
        let next_cursor = if more {
            last.as_ref().map(cursor::encode)
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    /// How many rows listing `q` in pages of its clamped limit reads by the first page
    /// that reaches `cap` (see [`CheckpointStore::count`]), counted by the server.
    async fn count_impl(&self, q: ListCheckpoints, cap: u64) -> Result<u64> {
        q.validate()?;
        let args = ListArgs::counting(&q, cap)?;
        let (sql, p) = count_sql(&self.shared.table, &q, &args, Vec::new());
        let row = self.query_opt(&sql, &p).await?;
        let n: i64 = row.map_or(0, |r| r.get(0));
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// A delete; what was remembered of the key is forgotten once it ran, whatever it did.
    async fn delete_impl(&self, k: &CheckpointKey, expected: Option<u64>) -> Result<bool> {
        k.validate()?;
        let out = self.delete_row(k, expected).await;
        self.shared
            .recent
            .forget(&Slot::of(&k.namespace, &k.key, &k.owner));
        out
    }

    async fn delete_row(&self, k: &CheckpointKey, expected: Option<u64>) -> Result<bool> {
        let t = &self.shared.table;
        let okey = k.owner.owner_key();
        let expected = expected.map(to_i64);
        let sql = format!(
            "DELETE FROM {t} WHERE namespace = $1 AND key = $2 AND owner_key = $3
               AND ($4::bigint IS NULL OR version = $4::bigint) RETURNING version"
        );
        let p: Params = vec![&k.namespace, &k.key, &okey, &expected];
        if self.query_opt(&sql, &p).await?.is_some() {
            return Ok(true);
        }
        let Some(v) = expected else { return Ok(false) };
        match self.load_impl(k).await? {
            None => Ok(false),
            Some(cp) => Err(super::model::conflict(format!(
                "Checkpoint compare-and-swap failed (expected {v}, current {})",
                cp.version
            ))),
        }
    }
}

impl CheckpointStore for PostgresCheckpointStore {
    fn admit(&self) -> Result<super::Admission> {
        self.shared.life.admit()
    }

    super::boxed_store_methods!();

    /// The value is written from `req` (the text beside it is only remembered: see
    /// [`CheckpointStore::beside_text`], [`Self::recent_write`]); no row is sent back.
    fn write_text(
        &self,
        req: SaveCheckpoint,
        value_text: Option<&str>,
    ) -> super::BoxFuture<'_, Result<()>> {
        Box::pin(self.write_impl(req, value_text.map(str::to_string), None))
    }

    /// The value's text as PostgreSQL answered it ([`with_value_text`]).
    fn load_text<'a>(
        &'a self,
        key: &'a CheckpointKey,
    ) -> super::BoxFuture<'a, Result<Option<CheckpointText>>> {
        Box::pin(self.load_row(key, with_value_text))
    }

    /// The values' texts as PostgreSQL answered them ([`with_value_text`]).
    fn list_text(
        &self,
        query: ListCheckpoints,
    ) -> super::BoxFuture<'_, Result<Page<CheckpointText>>> {
        Box::pin(self.list_rows(query, with_value_text))
    }

    fn recent_write(&self, key: &CheckpointKey) -> Option<RecentWrite> {
        self.shared.recent.recall_key(key)
    }

    /// The compare-and-swap also compares the stored value with `over`'s text (as
    /// `jsonb`: equal as JSON), in the same statement.
    fn write_over(
        &self,
        req: SaveCheckpoint,
        value_text: Option<&str>,
        over: &RecentWrite,
    ) -> super::BoxFuture<'_, Result<()>> {
        let value_text = value_text.map(str::to_string);
        let over = over.text.clone();
        Box::pin(async move {
            recent::require_replace(&req)?;
            self.write_impl(req, value_text, Some(over)).await
        })
    }

    /// Counted and created in one transaction under an advisory lock.
    fn create_capped(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
        within: &ListCheckpoints,
        cap: u64,
    ) -> Option<super::BoxFuture<'_, Result<super::Capped>>> {
        Some(Box::pin(self.create_capped_impl(
            req,
            value_text,
            within.clone(),
            cap,
        )))
    }

    /// Counted by the server (one round trip, no rows fetched).
    fn count(
        &self,
        query: &ListCheckpoints,
        cap: u64,
    ) -> Option<super::BoxFuture<'_, Result<u64>>> {
        Some(Box::pin(self.count_impl(query.clone(), cap)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_without_echoing_credentials() {
        let e = PostgresOptions::new("postgres://u:s3cret@host:notaport/db", None, None, None)
            .unwrap_err();
        assert_eq!(e.class_name(), "TypeError");
        assert!(!e.message.contains("s3cret"));
        let ok = "postgres://postgres@127.0.0.1:5432/test";
        for schema in ["", "1a", "a-b", "a\"b", "a;drop", &"x".repeat(64)] {
            assert!(
                PostgresOptions::new(ok, None, Some(schema), None).is_err(),
                "{schema}"
            );
        }
        assert!(PostgresOptions::new(ok, None, Some("prism_Test_1"), None).is_ok());
        for (m, t) in [
            (Some(0), None),
            (Some(101), None),
            (None, Some(0)),
            (None, Some(600_001)),
        ] {
            let e = PostgresOptions::new(ok, m, None, t).unwrap_err();
            assert_eq!(e.class_name(), "RangeError");
        }
        let o = PostgresOptions::new(ok, None, None, None).unwrap();
        assert_eq!((o.max_connections, o.schema.as_str()), (10, "public"));
        // Strings the driver parses but could never connect with are refused now, not
        // at first use.
        for bad in [
            "postgres://",
            " ",
            "postgres:///db",
            "dbname=x",
            "postgres://127.0.0.1/db",
        ] {
            let e = PostgresOptions::new(bad, None, None, None).unwrap_err();
            assert_eq!(e.class_name(), "TypeError", "{bad:?}");
        }
        assert!(PostgresOptions::new("host=127.0.0.1 user=postgres", None, None, None).is_ok());
    }

    #[tokio::test]
    async fn an_unreachable_server_is_a_typed_error_without_the_password() {
        let o = PostgresOptions::new(
            "postgres://user:hunter2secret@127.0.0.1:1/db",
            Some(1),
            None,
            Some(2000),
        )
        .unwrap();
        let p = PostgresPersistence::new(o).unwrap();
        let owner = Ownership {
            user_id: Some("u".into()),
            ..Default::default()
        };
        let e = p
            .checkpoints()
            .load(&CheckpointKey::new("n", "k", &owner))
            .await
            .unwrap_err();
        assert_eq!(e.code(), "ERR_PRISM_STORE_UNAVAILABLE");
        assert!(e.message.starts_with("postgres"), "{e}");
        assert!(!e.message.contains("hunter2secret"), "{e}");
        p.close().await.unwrap();
        let e = p
            .checkpoints()
            .load(&CheckpointKey::new("n", "k", &owner))
            .await
            .unwrap_err();
        assert!(e.message.contains("closed"), "{e}");
    }

    /// Runs against `PRISM_TEST_POSTGRES_URL` in its own schema, dropped afterwards.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "needs PRISM_TEST_POSTGRES_URL; run with --ignored (the JS suite runs it too)"]
    async fn conformance() {
        let url = std::env::var("PRISM_TEST_POSTGRES_URL").expect("PRISM_TEST_POSTGRES_URL");
        let schema = format!("prism_test_{}", std::process::id());
        let o = PostgresOptions::new(&url, Some(8), Some(&schema), None).unwrap();
        let p = PostgresPersistence::new(o).unwrap();
        // Two instances migrating at once: the advisory lock makes it one migration.
        let o2 = PostgresOptions::new(&url, Some(2), Some(&schema), None).unwrap();
        let p2 = PostgresPersistence::new(o2).unwrap();
        let owner = Ownership {
            user_id: Some("u".into()),
            ..Default::default()
        };
        let (s1, s2) = (p.checkpoints(), p2.checkpoints());
        let k = CheckpointKey::new("n", "k", &owner);
        let (a, b) = tokio::join!(s1.load(&k), s2.load(&k));
        assert!(a.unwrap().is_none() && b.unwrap().is_none());
        // Run in a task so the schema is dropped even when a check fails.
        let (store, other) = (p.checkpoints(), p2.checkpoints());
        let outcome = tokio::spawn(async move {
            super::super::conformance::run_with(&*store, false).await;
            super::super::conformance::own_writes_remembered(&*store, &*other).await;
        })
        .await;
        p2.close().await.unwrap();
        let (client, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(conn);
        p.close().await.unwrap();
        client
            .batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
            .await
            .unwrap();
        if let Err(e) = outcome {
            std::panic::resume_unwind(e.into_panic());
        }
    }
}
