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
