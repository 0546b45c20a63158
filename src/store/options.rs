//! The options objects of the store factories (`createMemoryCheckpointStore`,
//! `createSqlitePersistence`, `createPostgresPersistence`) from the JSON text the binding
//! receives: the allowed fields, the integer caps, then each store's own checks
//! ([`MemoryLimits::resolve`], [`SqliteOptions::new`], [`PostgresOptions::new`]).

use super::{invalid, MemoryLimits, PostgresOptions, SqliteOptions};
use crate::error::{PrismError, Result};
use crate::json::{self, Fields};

fn invalid_owned(m: String) -> PrismError {
    invalid(m)
}

/// Parse `text` as an `options` object with only the `allowed` fields and hand it to `f`.
fn with_options<T>(
    text: &str,
    allowed: &[&str],
    f: impl FnOnce(&Fields<'_>) -> Result<T>,
) -> Result<T> {
    let v = json::parse(text, invalid_owned)?;
    let fields = Fields::new(&v, "options", invalid_owned)?;
    if let Some(k) = fields.names().find(|k| !allowed.contains(k)) {
        return Err(invalid(format!(
            "options has an unknown field {k:?} (allowed: {})",
            allowed.join(", ")
        )));
    }
    f(&fields)
}

/// An optional cap: absent, or a non-negative integer (any other number is a `RangeError`,
/// any other type invalid input); its range is the store's rule.
fn opt_limit(f: &Fields<'_>, name: &str) -> Result<Option<u64>> {
    match f.get(name) {
        None => Ok(None),
        Some(v) => match json::as_u64(v) {
            Some(n) => Ok(Some(n)),
            None if v.is_number() => Err(PrismError::range(format!(
                "options.{name} must be a positive integer"
            ))),
            None => Err(invalid(format!(
                "options.{name} must be a positive integer, got {}",
                json::type_name(v)
            ))),
        },
    }
}

/// `createMemoryCheckpointStore(options)`: `{ maxRecords?, maxValueBytes?, maxPageSize? }`.
pub fn memory_limits_json(text: &str) -> Result<MemoryLimits> {
    with_options(text, &["maxRecords", "maxValueBytes", "maxPageSize"], |f| {
        MemoryLimits::resolve(
            opt_limit(f, "maxRecords")?,
            opt_limit(f, "maxValueBytes")?,
            opt_limit(f, "maxPageSize")?,
        )
    })
}

/// `createSqlitePersistence(options)`: `{ filename, busyTimeoutMs? }`.
pub fn sqlite_options_json(text: &str) -> Result<SqliteOptions> {
    with_options(text, &["filename", "busyTimeoutMs"], |f| {
        SqliteOptions::new(f.str("filename")?, opt_limit(f, "busyTimeoutMs")?)
    })
}

/// `createPostgresPersistence(options)`:
/// `{ connectionString, maxConnections?, schema?, connectTimeoutMs? }`.
pub fn postgres_options_json(text: &str) -> Result<PostgresOptions> {
    let allowed = [
        "connectionString",
        "maxConnections",
        "schema",
        "connectTimeoutMs",
    ];
    with_options(text, &allowed, |f| {
        PostgresOptions::new(
            f.str("connectionString")?,
            opt_limit(f, "maxConnections")?,
            f.opt_str("schema")?,
            opt_limit(f, "connectTimeoutMs")?,
        )
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
                r#"options has an unknown field "schema" (allowed: filename, busyTimeoutMs)"#
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
    fn postgres_fields_and_connection_string() {
        let o = postgres_options_json(
            r#"{"connectionString":"postgres://u@h/db","maxConnections":3,"schema":"s"}"#,
        )
        .unwrap();
        assert_eq!((o.max_connections, o.schema.as_str()), (3, "s"));
        assert_eq!(
            kind(postgres_options_json(r#"{"connectionString":"postgres://u@h/db","ssl":true}"#)),
            (INVALID, r#"options has an unknown field "ssl" (allowed: connectionString, maxConnections, schema, connectTimeoutMs)"#.into())
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
