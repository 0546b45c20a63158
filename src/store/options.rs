//! The options objects of the store factories (`createMemoryCheckpointStore`,
//! `createSqlitePersistence`, `createPostgresPersistence`) from the JSON text the binding
//! receives: the allowed fields, the integer caps, then each store's own checks
//! ([`MemoryLimits::resolve`], [`SqliteOptions::new`], [`PostgresOptions::new`]).

use super::{invalid, MemoryLimits, PostgresOptions, SqliteOptions};
use crate::error::{PrismError, Result};
use crate::json::{self, Fields};
use crate::util::caps::{self, Cap};

fn invalid_owned(m: String) -> PrismError {
    invalid(m)
}

/// The fields of one factory's options beside those it reads.
struct Known<'a> {
    /// Read by the factory.
    read: &'a [&'a str],
    /// The reference's options for what this package does not have (its persistences'
    /// feedback tables and event sources): accepted and ignored, so that code written
    /// against `@arnilo/prism` runs unchanged.
    ignored: &'a [&'a str],
    /// The reference's options that hand it a live driver handle or driver settings, which
    /// a native store cannot take: each refused with what to pass instead.
    refused: &'a [(&'a str, &'a str)],
}

/// Parse `text` as an `options` object with only the `known` fields and hand it to `f`.
fn with_options<T>(
    text: &str,
    known: &Known<'_>,
    f: impl FnOnce(&Fields<'_>) -> Result<T>,
) -> Result<T> {
    let v = json::parse(text, invalid_owned)?;
    let fields = Fields::new(&v, "options", invalid_owned)?;
    if let Some((name, instead)) = known
        .refused
        .iter()
        .find(|(name, _)| fields.get(name).is_some())
    {
        return Err(invalid(format!(
            "options.{name} is not supported by the native store: {instead}"
        )));
    }
    if let Some(k) = fields
        .names()
        .find(|k| !known.read.contains(k) && !known.ignored.contains(k))
    {
        return Err(invalid(format!(
            "options has an unknown field {k:?} (allowed: {})",
            known.read.join(", ")
        )));
    }
    f(&fields)
}

/// Options that only read fields.
fn reads<'a>(read: &'a [&'a str]) -> Known<'a> {
    Known {
        read,
        ignored: &[],
        refused: &[],
    }
}

/// An optional cap: absent, or a non-negative integer (any other number is a `RangeError`,
/// any other type invalid input); its range is the store's rule.
fn opt_limit(f: &Fields<'_>, name: &str) -> Result<Option<u64>> {
    opt_integer(f, name, "a positive integer")
}

/// An optional integer option that must be `what`: absent, or a non-negative integer; any
/// other number is a `RangeError`, any other type invalid input.
fn opt_integer(f: &Fields<'_>, name: &str, what: &str) -> Result<Option<u64>> {
    match f.get(name) {
        None => Ok(None),
        Some(v) => match json::as_u64(v) {
            Some(n) => Ok(Some(n)),
            None if v.is_number() => {
                Err(PrismError::range(format!("options.{name} must be {what}")))
            }
            None => Err(invalid(format!(
                "options.{name} must be {what}, got {}",
                json::type_name(v)
            ))),
        },
    }
}

/// `createMemoryCheckpointStore(options)`: `{ maxRecords?, maxValueBytes?, maxPageSize? }`.
pub fn memory_limits_json(text: &str) -> Result<MemoryLimits> {
    let known = reads(&["maxRecords", "maxValueBytes", "maxPageSize"]);
    with_options(text, &known, |f| {
        MemoryLimits::resolve(
            opt_limit(f, "maxRecords")?,
            opt_limit(f, "maxValueBytes")?,
            opt_limit(f, "maxPageSize")?,
        )
    })
}

/// `createSqlitePersistence(options)`: `{ filename, busyTimeoutMs?, wal?, fileMode?,
/// skipMigrations? }` (the reference's `feedbackRedactor` ignored, its `database` refused).
pub fn sqlite_options_json(text: &str) -> Result<SqliteOptions> {
    let known = Known {
        read: &[
            "filename",
            "busyTimeoutMs",
            "wal",
            "fileMode",
            "skipMigrations",
        ],
        ignored: &["feedbackRedactor"],
        refused: &[(
            "database",
            "it opens the file itself; pass filename instead of a better-sqlite3 handle",
        )],
    };
    with_options(text, &known, |f| {
        SqliteOptions::new(f.str("filename")?, opt_limit(f, "busyTimeoutMs")?)?.with(
            f.opt_bool("wal")?,
            opt_integer(f, "fileMode", "a permission mode in 0..0o777")?,
            f.opt_bool("skipMigrations")?,
        )
    })
}

/// `createPostgresPersistence(options)`: `{ connectionString, poolMax? (or maxConnections?),
/// schema?, connectTimeoutMs?, skipMigrations? }` (the reference's `feedbackRedactor`,
/// `eventSource` and `eventCursorSecret` ignored, its `pool` and `poolConfig` refused).
pub fn postgres_options_json(text: &str) -> Result<PostgresOptions> {
    let known = Known {
        read: &[
            "connectionString",
            "poolMax",
            "maxConnections",
            "schema",
            "connectTimeoutMs",
            "skipMigrations",
        ],
        ignored: &["feedbackRedactor", "eventSource", "eventCursorSecret"],
        refused: &[
            (
                "pool",
                "it keeps its own connections; pass connectionString (and poolMax) instead of a pg Pool",
            ),
            (
                "poolConfig",
                "put the connection settings in connectionString; poolMax sets the pool size",
            ),
        ],
    };
    with_options(text, &known, |f| {
        let pool_max = opt_limit(f, "poolMax")?;
        // Checked under its own name; the range is the store's.
        if pool_max.is_some() {
            let cap = Cap::new(
                "poolMax",
                PostgresOptions::DEFAULT_MAX_CONNECTIONS,
                PostgresOptions::HARD_MAX_CONNECTIONS,
            );
            caps::resolve("options.poolMax", pool_max, cap)?;
        }
        let max_connections = opt_limit(f, "maxConnections")?;
        if let (Some(a), Some(b)) = (pool_max, max_connections) {
            if a != b {
                return Err(invalid(format!(
                    "options.poolMax ({a}) and options.maxConnections ({b}) name the same setting: give one"
                )));
            }
        }
        let mut options = PostgresOptions::new(
            f.str("connectionString")?,
            pool_max.or(max_connections),
            f.opt_str("schema")?,
            opt_limit(f, "connectTimeoutMs")?,
        )?;
        options.skip_migrations = f.opt_bool("skipMigrations")?.unwrap_or(false);
        Ok(options)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ArtifactReason, ErrorKind};
    use std::time::Duration;

    fn kind<T: std::fmt::Debug>(r: Result<T>) -> (ErrorKind, String) {
        let e = r.unwrap_err();
        (e.kind, e.message)
    }
    const INVALID: ErrorKind = ErrorKind::Artifact(ArtifactReason::InvalidInput);

    #[test]
    fn memory_defaults_caps_and_refusals() {
        assert_eq!(memory_limits_json("{}").unwrap(), MemoryLimits::default());
        let l = memory_limits_json(r#"{"maxRecords":3,"maxPageSize":2}"#).unwrap();
        assert_eq!((l.max_records, l.max_page_size), (3, 2));
        assert_eq!(
            kind(memory_limits_json(r#"{"maxRecords":3,"ttl":1}"#)),
            (
                INVALID,
                r#"options has an unknown field "ttl" (allowed: maxRecords, maxValueBytes, maxPageSize)"#.into()
            )
        );
        assert_eq!(
            kind(memory_limits_json(r#"{"maxRecords":1.5}"#)),
            (
                ErrorKind::Range,
                "options.maxRecords must be a positive integer".into()
            )
        );
        assert_eq!(
            kind(memory_limits_json(r#"{"maxValueBytes":"1"}"#)),
            (
                INVALID,
                "options.maxValueBytes must be a positive integer, got string".into()
            )
        );
        // The range itself is the store's rule.
        assert_eq!(
            kind(memory_limits_json(r#"{"maxRecords":0}"#)).0,
            ErrorKind::Range
        );
        assert_eq!(kind(memory_limits_json("[]")).0, INVALID);
        assert_eq!(kind(memory_limits_json("{")).0, INVALID);
    }

    #[test]
    fn sqlite_filename_and_busy_timeout() {
        let o = sqlite_options_json(r#"{"filename":"a.db","busyTimeoutMs":250}"#).unwrap();
        assert_eq!(o.filename, "a.db");
        assert_eq!(o.busy_timeout, Duration::from_millis(250));
        let d = sqlite_options_json(r#"{"filename":"a.db"}"#).unwrap();
        assert_eq!(
            d.busy_timeout,
            Duration::from_millis(SqliteOptions::DEFAULT_BUSY_TIMEOUT_MS)
        );
        assert_eq!(
            kind(sqlite_options_json(r#"{"filename":"a.db","schema":"x"}"#)),
            (
                INVALID,
                r#"options has an unknown field "schema" (allowed: filename, busyTimeoutMs, wal, fileMode, skipMigrations)"#
                    .into()
            )
        );
        assert!(kind(sqlite_options_json("{}"))
            .1
            .contains("options.filename is required"));
        assert_eq!(
            kind(sqlite_options_json(
                r#"{"filename":"a.db","busyTimeoutMs":-1}"#
            )),
            (
                ErrorKind::Range,
                "options.busyTimeoutMs must be a positive integer".into()
            )
        );
    }

    #[test]
    fn sqlite_takes_the_references_options() {
        let d = sqlite_options_json(r#"{"filename":"a.db"}"#).unwrap();
        assert_eq!(
            (d.wal, d.file_mode, d.skip_migrations, d.path.as_str()),
            (true, 0o600, false, "a.db")
        );
        let o = sqlite_options_json(
            r#"{"filename":"a.db","wal":false,"fileMode":416,"skipMigrations":true,"feedbackRedactor":{}}"#,
        )
        .unwrap();
        assert_eq!(
            (o.wal, o.file_mode, o.skip_migrations),
            (false, 0o640, true)
        );
        assert_eq!(
            kind(sqlite_options_json(r#"{"filename":"a.db","fileMode":512}"#)),
            (
                ErrorKind::Range,
                "options.fileMode must be a permission mode in 0..0o777".into()
            )
        );
        assert_eq!(
            kind(sqlite_options_json(r#"{"filename":"a.db","wal":"yes"}"#)).0,
            INVALID
        );
        // A driver handle is refused by name, before anything else is read.
        let (k, m) = kind(sqlite_options_json(r#"{"database":"[Database]"}"#));
        assert_eq!(k, INVALID);
        assert!(m.starts_with("options.database is not supported"), "{m}");
    }

    #[test]
    fn memory_databases_are_named_per_persistence_and_memory_uris_refused() {
        let a = sqlite_options_json(r#"{"filename":":memory:"}"#).unwrap();
        let b = sqlite_options_json(r#"{"filename":":memory:"}"#).unwrap();
        assert!(a.is_memory() && a.plain_file().is_none());
        assert!(a.path.starts_with("file:/prism-review-memory-") && a.path.ends_with("?vfs=memdb"));
        assert_ne!(a.path, b.path);
        for uri in [
            "file::memory:",
            "file::memory:?cache=shared",
            "file:x.db?mode=memory&cache=shared",
        ] {
            let (k, m) = kind(sqlite_options_json(&format!(r#"{{"filename":{uri:?}}}"#)));
            assert_eq!(k, INVALID, "{uri}");
            assert!(m.contains("in-memory URI"), "{m}");
        }
        let file_uri = sqlite_options_json(r#"{"filename":"file:x.db?mode=rw"}"#).unwrap();
        assert!(file_uri.plain_file().is_none() && !file_uri.is_memory());
    }

    #[test]
    fn postgres_takes_the_references_pool_max_and_refuses_its_handles() {
        let url = "postgres://u@h/db";
        let o = postgres_options_json(&format!(
            r#"{{"connectionString":"{url}","poolMax":4,"skipMigrations":true,"eventSource":{{}},"eventCursorSecret":"s","feedbackRedactor":{{}}}}"#
        ))
        .unwrap();
        assert_eq!((o.max_connections, o.skip_migrations), (4, true));
        let same = postgres_options_json(&format!(
            r#"{{"connectionString":"{url}","poolMax":4,"maxConnections":4}}"#
        ))
        .unwrap();
        assert_eq!(same.max_connections, 4);
        assert_eq!(
            kind(postgres_options_json(&format!(
                r#"{{"connectionString":"{url}","poolMax":4,"maxConnections":5}}"#
            )))
            .0,
            INVALID
        );
        assert_eq!(
            kind(postgres_options_json(&format!(
                r#"{{"connectionString":"{url}","poolMax":101}}"#
            ))),
            (
                ErrorKind::Range,
                "options.poolMax must be an integer in 1..=100, got 101".into()
            )
        );
        for (field, value) in [("pool", r#""[Pool]""#), ("poolConfig", r#"{"host":"h"}"#)] {
            let (k, m) = kind(postgres_options_json(&format!(r#"{{"{field}":{value}}}"#)));
            assert_eq!(k, INVALID);
            assert!(
                m.starts_with(&format!("options.{field} is not supported")),
                "{m}"
            );
        }
    }

    #[test]
    fn postgres_fields_and_connection_string() {
        let o = postgres_options_json(
            r#"{"connectionString":"postgres://u@h/db","maxConnections":3,"schema":"s"}"#,
        )
        .unwrap();
        assert_eq!((o.max_connections, o.schema.as_str()), (3, "s"));
        assert_eq!(
            kind(postgres_options_json(r#"{"connectionString":"postgres://u@h/db","ssl":true}"#)),
            (INVALID, r#"options has an unknown field "ssl" (allowed: connectionString, poolMax, maxConnections, schema, connectTimeoutMs, skipMigrations)"#.into())
        );
        assert_eq!(
            kind(postgres_options_json(r#"{"connectionString":""}"#)).0,
            ErrorKind::Type
        );
        assert_eq!(
            kind(postgres_options_json(
                r#"{"connectionString":"postgres://u@h/db","connectTimeoutMs":"5"}"#
            )),
            (
                INVALID,
                "options.connectTimeoutMs must be a positive integer, got string".into()
            )
        );
    }
}
