//! Checkpoint stores: the versioned key/value records the artifact service keeps its
//! state in. One trait, [`CheckpointStore`], implemented by the memory store, the SQLite
//! store, the PostgreSQL store and (in the binding layer) a host's own JavaScript store.
//!
//! Semantics every implementation follows (the conformance suite checks them):
//! - A checkpoint is addressed by `(namespace, key)` and carries an [`Ownership`]; the
//!   `version` counts saves of that key (1 on create) and is the compare-and-swap counter.
//! - `save` with `expected_version: Some(0)` creates and fails with a conflict if the key
//!   exists; `Some(n)` replaces only the checkpoint at version `n`; `None` upserts.
//!   A version mismatch is `ErrorKind::CheckpointConflict`.
//! - A checkpoint whose ownership differs from the caller's is never returned, replaced or
//!   deleted: `load` answers `None`, `save`/`delete` fail with a conflict (existence never
//!   leaks as a distinct error).
//! - `list` returns checkpoints of one namespace, optionally by key prefix and ownership,
//!   ordered by key, in pages with an opaque `next_cursor` (a stable keyset cursor).

use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future: the return type of every store operation.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What [`CheckpointStore::admit`] returns: dropped when the admitted operation ends.
pub type Admission = Option<Box<dyn std::any::Any + Send>>;

/// `OwnershipScope` of the API: at least one non-empty member.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ownership {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// A stored checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub namespace: String,
    pub key: String,
    pub version: u64,
    pub ownership: Ownership,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub value: serde_json::Value,
    /// ISO-8601 UTC.
    pub created_at: String,
    /// ISO-8601 UTC.
    pub updated_at: String,
}

/// Input of [`CheckpointStore::save`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SaveCheckpoint {
    pub namespace: String,
    pub key: String,
    pub ownership: Ownership,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub value: serde_json::Value,
    /// `Some(0)`: create only; `Some(n)`: replace version `n` only; `None`: upsert.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_version: Option<u64>,
}

/// Input of [`CheckpointStore::list`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListCheckpoints {
    pub namespace: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// When given, only checkpoints with exactly this ownership.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ownership: Option<Ownership>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One page of a listing (`PersistencePage<T>` in the API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The store contract. Errors are `PrismError`s: `CheckpointConflict` for CAS and
/// ownership mismatches, `Artifact(InvalidInput)` for malformed requests, and
/// `Artifact(InvalidInput)`/`Internal` for backend failures as each store documents.
pub trait CheckpointStore: Send + Sync {
    /// Called synchronously when a caller (the JS binding) requests an operation, before
    /// its future first runs; the ticket is held until the operation finishes. Stores
    /// with a `close()` count these so that close waits for every operation requested
    /// before it, and refuse new ones after it. The default admits everything.
    fn admit(&self) -> crate::error::Result<Admission> {
        Ok(None)
    }
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, crate::error::Result<Checkpoint>>;
    fn load<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        ownership: &'a Ownership,
    ) -> BoxFuture<'a, crate::error::Result<Option<Checkpoint>>>;
    fn list(&self, query: ListCheckpoints)
        -> BoxFuture<'_, crate::error::Result<Page<Checkpoint>>>;
    fn delete<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        ownership: &'a Ownership,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, crate::error::Result<bool>>;
}

/// An optional store option: absent means `default`; present must be in `1..=hard`, else a
/// `RangeError` naming the option (limits are never clamped).
pub(crate) fn resolve_cap(
    name: &str,
    value: Option<u64>,
    default: u64,
    hard: u64,
) -> crate::error::Result<u64> {
    match value {
        None => Ok(default),
        Some(v) if (1..=hard).contains(&v) => Ok(v),
        Some(v) => Err(crate::error::PrismError::range(format!(
            "{name} must be an integer from 1 to {hard}, got {v}"
        ))),
    }
}

pub mod host;
mod lifecycle;
pub mod memory;
pub mod postgres;
pub mod sqlite;

#[cfg(test)]
pub(crate) mod conformance;

pub use host::{HostCaller, HostCheckpointStore, HostOp};
pub use memory::{MemoryLimits, MemoryStore};
pub use postgres::{PostgresOptions, PostgresPersistence};
pub use sqlite::{SqliteOptions, SqlitePersistence};

use crate::error::{ArtifactReason, PrismError, Result};
use crate::json::{type_name, Fields};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;

/// Largest namespace, in UTF-8 bytes.
pub const MAX_NAMESPACE_BYTES: usize = 256;
/// Largest key (and key prefix), in UTF-8 bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest category, in UTF-8 bytes.
pub const MAX_CATEGORY_BYTES: usize = 256;
/// Largest ownership member (`tenantId`, `accountId`, `userId`), in UTF-8 bytes.
pub const MAX_OWNER_BYTES: usize = 512;
/// Largest cursor text accepted.
pub const MAX_CURSOR_BYTES: usize = 4096;
/// Hard cap of a checkpoint value (its JSON text), for every store: 16 MiB.
pub const VALUE_BYTES_HARD: usize = 16 * 1024 * 1024;
/// Hard cap of a listing page.
pub const PAGE_SIZE_HARD: u32 = 1000;
/// Default page size (when `limit` is absent and the store allows it).
pub const PAGE_SIZE_DEFAULT: u32 = 100;

/// `ArtifactError('invalid_input')` with this message.
pub fn invalid(message: impl Into<String>) -> PrismError {
    PrismError::artifact(ArtifactReason::InvalidInput, message)
}

fn invalid_owned(message: String) -> PrismError {
    invalid(message)
}

fn check_text(path: &str, s: &str, max: usize, allow_empty: bool) -> Result<()> {
    if !allow_empty && s.is_empty() {
        return Err(invalid(format!("{path} must not be empty")));
    }
    if s.len() > max {
        return Err(invalid(format!("{path} is longer than {max} bytes")));
    }
    if s.contains('\0') {
        return Err(invalid(format!("{path} must not contain NUL characters")));
    }
    Ok(())
}

impl Ownership {
    /// At least one member is a non-empty string; each member is bounded.
    pub fn validate(&self, path: &str) -> Result<()> {
        let members = [
            ("tenantId", &self.tenant_id),
            ("accountId", &self.account_id),
            ("userId", &self.user_id),
        ];
        for (name, m) in members {
            if let Some(s) = m {
                check_text(&format!("{path}.{name}"), s, MAX_OWNER_BYTES, true)?;
            }
        }
        if members
            .iter()
            .all(|(_, m)| m.as_deref().is_none_or(str::is_empty))
        {
            return Err(invalid(format!(
                "{path} needs at least one non-empty member (tenantId, accountId or userId)"
            )));
        }
        Ok(())
    }

    fn from_fields(f: &Fields<'_>, path: &str) -> Result<Self> {
        only_fields(f, path, &["tenantId", "accountId", "userId"])?;
        let o = Ownership {
            tenant_id: f.opt_str("tenantId")?.map(str::to_string),
            account_id: f.opt_str("accountId")?.map(str::to_string),
            user_id: f.opt_str("userId")?.map(str::to_string),
        };
        o.validate(path)?;
        Ok(o)
    }
}

fn only_fields(f: &Fields<'_>, path: &str, allowed: &[&str]) -> Result<()> {
    for k in f.object().keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(invalid(format!(
                "{path} has an unknown field {k:?} (allowed: {})",
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

fn namespace_key(f: &Fields<'_>) -> Result<(String, String)> {
    let namespace = f.str("namespace")?;
    check_text("input.namespace", namespace, MAX_NAMESPACE_BYTES, false)?;
    let key = f.str("key")?;
    check_text("input.key", key, MAX_KEY_BYTES, false)?;
    Ok((namespace.to_string(), key.to_string()))
}

/// JSON byte length of a value.
pub fn value_bytes(value: &Value) -> usize {
    serde_json::to_string(value)
        .map(|s| s.len())
        .unwrap_or(usize::MAX)
}

impl SaveCheckpoint {
    /// Field bounds and the ownership rule; the value cap is each store's.
    pub fn validate(&self) -> Result<()> {
        check_text(
            "input.namespace",
            &self.namespace,
            MAX_NAMESPACE_BYTES,
            false,
        )?;
        check_text("input.key", &self.key, MAX_KEY_BYTES, false)?;
        self.ownership.validate("input.ownership")?;
        if let Some(c) = &self.category {
            check_text("input.category", c, MAX_CATEGORY_BYTES, true)?;
        }
        if let Some(v) = self.expected_version {
            if v > MAX_SAFE_INTEGER {
                return Err(invalid("input.expectedVersion is larger than 2^53 - 1"));
            }
        }
        Ok(())
    }
}

impl ListCheckpoints {
    pub fn validate(&self) -> Result<()> {
        check_text(
            "input.namespace",
            &self.namespace,
            MAX_NAMESPACE_BYTES,
            false,
        )?;
        if let Some(p) = &self.prefix {
            check_text("input.prefix", p, MAX_KEY_BYTES, true)?;
        }
        if let Some(o) = &self.ownership {
            o.validate("input.ownership")?;
        }
        // Cursors are opaque: each store decodes its own (a host store's are the host's).
        if let Some(c) = &self.cursor {
            if c.is_empty() || c.len() > MAX_CURSOR_BYTES {
                return Err(invalid(format!(
                    "input.cursor must be a cursor returned by listCheckpoints (1..{MAX_CURSOR_BYTES} bytes)"
                )));
            }
        }
        if let Some(l) = self.limit {
            if l == 0 {
                return Err(invalid("input.limit must be at least 1"));
            }
        }
        Ok(())
    }
}

/// Validate the target of a load or delete.
pub fn validate_target(namespace: &str, key: &str, ownership: &Ownership) -> Result<()> {
    check_text("input.namespace", namespace, MAX_NAMESPACE_BYTES, false)?;
    check_text("input.key", key, MAX_KEY_BYTES, false)?;
    ownership.validate("input.ownership")
}

/// 2^53 - 1: versions stay exact JavaScript numbers.
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

fn parse_object(text: &str) -> Result<Value> {
    if text.len() > VALUE_BYTES_HARD + 64 * 1024 {
        return Err(PrismError::artifact(
            ArtifactReason::RecordTooLarge,
            format!(
                "input is larger than {} bytes",
                VALUE_BYTES_HARD + 64 * 1024
            ),
        ));
    }
    let v = crate::json::parse(text, invalid_owned)?;
    if !v.is_object() {
        return Err(invalid(format!(
            "input must be an object, got {}",
            type_name(&v)
        )));
    }
    Ok(v)
}

/// `saveCheckpoint` input from JSON text.
pub fn parse_save(text: &str) -> Result<SaveCheckpoint> {
    let v = parse_object(text)?;
    let f = Fields::new(&v, "input", invalid_owned)?;
    only_fields(
        &f,
        "input",
        &[
            "namespace",
            "key",
            "ownership",
            "category",
            "value",
            "expectedVersion",
        ],
    )?;
    let (namespace, key) = namespace_key(&f)?;
    let ownership = Ownership::from_fields(&f.object_field("ownership")?, "input.ownership")?;
    let category = f.opt_str("category")?.map(str::to_string);
    let value = f
        .get("value")
        .cloned()
        .ok_or_else(|| invalid("input.value is required (any JSON value)"))?;
    let expected_version = f.opt_u64("expectedVersion")?;
    let req = SaveCheckpoint {
        namespace,
        key,
        ownership,
        category,
        value,
        expected_version,
    };
    req.validate()?;
    Ok(req)
}

/// Target of `loadCheckpoint` / `deleteCheckpoint` from JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub namespace: String,
    pub key: String,
    pub ownership: Ownership,
    pub expected_version: Option<u64>,
}

/// `loadCheckpoint` input from JSON text.
pub fn parse_load(text: &str) -> Result<Target> {
    parse_target(text, false)
}

/// `deleteCheckpoint` input from JSON text.
pub fn parse_delete(text: &str) -> Result<Target> {
    parse_target(text, true)
}

fn parse_target(text: &str, with_version: bool) -> Result<Target> {
    let v = parse_object(text)?;
    let f = Fields::new(&v, "input", invalid_owned)?;
    if with_version {
        only_fields(
            &f,
            "input",
            &["namespace", "key", "ownership", "expectedVersion"],
        )?;
    } else {
        only_fields(&f, "input", &["namespace", "key", "ownership"])?;
    }
    let (namespace, key) = namespace_key(&f)?;
    let ownership = Ownership::from_fields(&f.object_field("ownership")?, "input.ownership")?;
    let expected_version = if with_version {
        f.opt_u64("expectedVersion")?
    } else {
        None
    };
    if expected_version.is_some_and(|v| v > MAX_SAFE_INTEGER) {
        return Err(invalid("input.expectedVersion is larger than 2^53 - 1"));
    }
    Ok(Target {
        namespace,
        key,
        ownership,
        expected_version,
    })
}

/// `listCheckpoints` input from JSON text.
pub fn parse_list(text: &str) -> Result<ListCheckpoints> {
    let v = parse_object(text)?;
    let f = Fields::new(&v, "input", invalid_owned)?;
    only_fields(
        &f,
        "input",
        &["namespace", "prefix", "ownership", "cursor", "limit"],
    )?;
    let namespace = f.str("namespace")?.to_string();
    let prefix = f.opt_str("prefix")?.map(str::to_string);
    let ownership = match f.opt_object("ownership")? {
        Some(o) => Some(Ownership::from_fields(&o, "input.ownership")?),
        None => None,
    };
    let cursor = f.opt_str("cursor")?.map(str::to_string);
    let limit = match f.opt_u64("limit")? {
        None => None,
        Some(l) => Some(
            u32::try_from(l)
                .ok()
                .filter(|l| *l >= 1)
                .ok_or_else(|| invalid("input.limit must be an integer from 1 to 4294967295"))?,
        ),
    };
    let q = ListCheckpoints {
        namespace,
        prefix,
        ownership,
        cursor,
        limit,
    };
    q.validate()?;
    Ok(q)
}

const CURSOR_TAG: &str = "k1:";

/// The opaque keyset cursor that continues after `key`.
pub fn encode_cursor(key: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_TAG}{key}"))
}

/// The key a cursor continues after.
pub fn decode_cursor(cursor: &str) -> Result<String> {
    let bad = || invalid("input.cursor is not a cursor returned by listCheckpoints");
    if cursor.len() > MAX_CURSOR_BYTES {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let key = text.strip_prefix(CURSOR_TAG).ok_or_else(bad)?;
    check_text("input.cursor", key, MAX_KEY_BYTES, false).map_err(|_| bad())?;
    Ok(key.to_string())
}

/// The smallest string greater than every string that starts with `prefix` (in code
/// point order, which is UTF-8 byte order), or `None` when no such bound exists.
pub fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = (last as u32).checked_add(1);
        if next == Some(0xD800) {
            next = Some(0xE000);
        }
        if let Some(c) = next.and_then(char::from_u32) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Page size for a query: the requested limit, at most `max`; `max` when absent.
pub fn page_size(limit: Option<u32>, max: u32) -> u32 {
    limit.unwrap_or(max).clamp(1, max.max(1))
}

/// Now as ISO-8601 UTC with milliseconds (`2026-07-25T04:10:00.000Z`).
pub fn now_iso8601() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    iso8601_from_millis(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// ISO-8601 UTC text of a Unix time in milliseconds (civil-from-days, proleptic
/// Gregorian calendar).
pub fn iso8601_from_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let mut y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    if m <= 2 {
        y += 1;
    }
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        sod / 3600,
        (sod % 3600) / 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_known_instants() {
        assert_eq!(iso8601_from_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            iso8601_from_millis(951_782_400_123),
            "2000-02-29T00:00:00.123Z"
        );
        assert_eq!(
            iso8601_from_millis(1_785_039_000_000),
            "2026-07-26T04:10:00.000Z"
        );
        assert_eq!(now_iso8601().len(), 24);
    }

    #[test]
    fn prefix_bounds_cover_exactly_the_prefix() {
        assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
        assert_eq!(
            prefix_upper_bound("a\u{d7ff}").as_deref(),
            Some("a\u{e000}")
        );
        assert_eq!(prefix_upper_bound("a\u{10ffff}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{10ffff}"), None);
        assert_eq!(prefix_upper_bound(""), None);
    }

    proptest::proptest! {
        #[test]
        fn prefix_range_matches_starts_with(p in "\\PC{0,4}", s in "\\PC{0,6}") {
            let in_range = s.as_str() >= p.as_str()
                && prefix_upper_bound(&p).is_none_or(|u| s.as_str() < u.as_str());
            proptest::prop_assert_eq!(in_range, s.starts_with(&p));
        }

        #[test]
        fn cursor_round_trips(k in "\\PC{1,40}") {
            proptest::prop_assume!(!k.contains('\0'));
            proptest::prop_assert_eq!(decode_cursor(&encode_cursor(&k)).unwrap(), k);
        }
    }

    #[test]
    fn parse_refuses_bad_input() {
        let ok = r#"{"namespace":"n","key":"k","ownership":{"tenantId":"t"},"value":1}"#;
        assert!(parse_save(ok).is_ok());
        for bad in [
            "[]",
            "null",
            "1",
            r#"{"namespace":"n","key":"k","ownership":{"tenantId":"t"}}"#,
            r#"{"namespace":"","key":"k","ownership":{"tenantId":"t"},"value":1}"#,
            r#"{"namespace":"n","key":5,"ownership":{"tenantId":"t"},"value":1}"#,
            r#"{"namespace":"n","key":"k","ownership":{},"value":1}"#,
            r#"{"namespace":"n","key":"k","ownership":{"tenantId":""},"value":1}"#,
            r#"{"namespace":"n","key":"k","ownership":{"tenantId":"t","x":1},"value":1}"#,
            r#"{"namespace":"n","key":"k","ownership":{"tenantId":"t"},"value":1,"__proto__":{}}"#,
            r#"{"namespace":"n","key":"k","ownership":{"tenantId":"t"},"value":1,"expectedVersion":-1}"#,
            r#"{"namespace":"n","key":"k","ownership":{"tenantId":"t"},"value":1,"expectedVersion":1.5}"#,
            r#"{"namespace":"n","key":"k","ownership":{"tenantId":"t"},"value":1,"category":3}"#,
        ] {
            let e = parse_save(bad).unwrap_err();
            assert_eq!(e.reason(), Some("invalid_input"), "{bad}: {e}");
        }
        assert!(parse_list(r#"{"namespace":"n","limit":0}"#).is_err());
        assert!(parse_list(r#"{"namespace":"n","cursor":""}"#).is_err());
        assert!(decode_cursor("zzz").is_err());
        assert!(parse_list(r#"{"namespace":"n","limit":10,"prefix":"a"}"#).is_ok());
        assert!(parse_delete(
            r#"{"namespace":"n","key":"k","ownership":{"userId":"u"},"expectedVersion":2}"#
        )
        .is_ok());
        assert!(parse_load(
            r#"{"namespace":"n","key":"k","ownership":{"userId":"u"},"expectedVersion":2}"#
        )
        .is_err());
    }
}
