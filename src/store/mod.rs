//! Checkpoint stores: the versioned JSON records the artifact service keeps its state
//! in. One trait, [`CheckpointStore`] (the `CheckpointStore` interface of
//! `@arnilo/prism`), implemented by the memory store, the SQLite store, the PostgreSQL
//! store and (through the binding layer) a host's own JavaScript store.
//!
//! Semantics every native store follows (the conformance suite checks them):
//! - A checkpoint is addressed by `(namespace, key)` **and its owner** (`tenantId`,
//!   `accountId`, `userId`, each optional): two owners never collide on a key, and
//!   another owner's checkpoint is simply absent. (The reference keeps one key space
//!   and rejects cross-owner access, which tells a caller the key exists.)
//! - `save` carries a caller-assigned `version` that must be greater than the stored
//!   one; `expected_version` (`0`: create only) must equal the stored version (0 when
//!   absent); a stored `fencing_token` refuses a write whose token is absent or lower.
//!   Any of these is `ErrorKind::CheckpointConflict` and changes nothing.
//! - `load` answers `None` on a miss; `delete` answers whether something was deleted.
//! - `list` filters by namespace, key prefix, categories and owner members, ordered by
//!   `(namespace, key, owner)` (ascending or descending), in pages with an opaque keyset
//!   cursor ([`cursor`]).
//!
//! Layout: [`model`] (shapes and rules), [`wire`] (the JS argument text), [`cursor`],
//! one file per store, [`lifecycle`] (close for the database stores).

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future: the return type of every store operation.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What [`CheckpointStore::admit`] returns: dropped when the admitted operation ends.
pub type Admission = Option<Box<dyn std::any::Any + Send>>;

/// What [`CheckpointStore::create_capped`] did: saved, or wrote nothing because the
/// listing it counted held `cap` or more checkpoints (how many it counted). The caller
/// made the record it created, so a save answers nothing more.
#[derive(Debug, Clone, PartialEq)]
pub enum Capped {
    Saved,
    Full(u64),
}

/// The store contract. Errors are `PrismError`s: `CheckpointConflict` for the CAS,
/// version and fencing rules (and malformed keys, versions and cursors, as the
/// reference's stores), `Range`/`Type` for other bad input, `Internal` for backend
/// failures.
pub trait CheckpointStore: Send + Sync {
    /// Called synchronously when a caller (the JS binding) requests an operation, before
    /// its future first runs; the ticket is held until the operation finishes. Stores
    /// with a `close()` count these so that close waits for every operation requested
    /// before it, and refuse new ones after it. The default admits everything.
    fn admit(&self) -> crate::error::Result<Admission> {
        Ok(None)
    }
    /// `saveCheckpoint`: the stored record.
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, crate::error::Result<Checkpoint>>;
    /// `loadCheckpoint`: the record, `None` on a miss.
    fn load<'a>(
        &'a self,
        key: &'a CheckpointKey,
    ) -> BoxFuture<'a, crate::error::Result<Option<Checkpoint>>>;
    /// `listCheckpoints`: one page.
    fn list(&self, query: ListCheckpoints)
        -> BoxFuture<'_, crate::error::Result<Page<Checkpoint>>>;
    /// `deleteCheckpoint`: whether a record was deleted. With `expected_version`, only
    /// the record at that version (a conflict otherwise).
    fn delete<'a>(
        &'a self,
        key: &'a CheckpointKey,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, crate::error::Result<bool>>;

    /// `load`, answered as JSON text (what the binding returns and the artifact service
    /// reads). The memory store answers from the text it keeps; the default serializes.
    fn load_text<'a>(
        &'a self,
        key: &'a CheckpointKey,
    ) -> BoxFuture<'a, crate::error::Result<Option<CheckpointText>>> {
        Box::pin(async move { Ok(self.load(key).await?.map(CheckpointText::of_checkpoint)) })
    }

    /// `list`, each checkpoint answered as JSON text (what the binding returns): a store
    /// that keeps text answers it as kept, its values not read into values and written
    /// again (so a value saved as text, lone surrogate escapes included, lists as it
    /// loads). The default serializes.
    fn list_text(
        &self,
        query: ListCheckpoints,
    ) -> BoxFuture<'_, crate::error::Result<Page<CheckpointText>>> {
        Box::pin(async move {
            let page = self.list(query).await?;
            Ok(Page {
                items: page
                    .items
                    .into_iter()
                    .map(CheckpointText::of_checkpoint)
                    .collect(),
                next_cursor: page.next_cursor,
            })
        })
    }

    /// `save`, answered as JSON text. `value_text`, when given, is the JSON text of
    /// `req.value` (the artifact service has it; the binding has the text
    /// `JSON.stringify` wrote), or, for a store whose [`Self::beside_text`] is not
    /// [`BesideText::Value`], the value itself (`req.value` is then `null`, and for
    /// [`BesideText::Memo`] `req.memo` may hold the saver's parsed form of it): a store
    /// that keeps or writes text keeps exactly it instead of serializing the value again,
    /// and the answer carries it as the value (not a store's normalized copy, e.g.
    /// PostgreSQL `jsonb` key order).
    fn save_text(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
    ) -> BoxFuture<'_, crate::error::Result<CheckpointText>> {
        Box::pin(async move {
            let cp = self.save(req).await?;
            Ok(match value_text {
                Some(t) => CheckpointText::of_value_text(cp, t),
                None => CheckpointText::of_checkpoint(cp),
            })
        })
    }

    /// [`Self::save_text`] for a caller that needs no answer (the artifact service): a
    /// store that builds its answer apart from the write (the memory store copies its
    /// entry) skips it, and one that copies the value text into what it keeps (the
    /// memory store) reads it borrowed.
    fn write_text(
        &self,
        req: SaveCheckpoint,
        value_text: Option<&str>,
    ) -> BoxFuture<'_, crate::error::Result<()>> {
        let saved = self.save_text(req, value_text.map(str::to_string));
        Box::pin(async move { saved.await.map(drop) })
    }

    /// A hint, never an answer: what this store's own last write under `key` (by
    /// [`Self::write_text`] or [`Self::create_capped`]) left there, while the store
    /// remembers it ([`recent`]); `None` by default. Another connection or process may
    /// have written since, so a replacement computed from it must be written with
    /// [`Self::write_over`].
    fn recent_write(&self, _key: &CheckpointKey) -> Option<RecentWrite> {
        None
    }

    /// [`Self::write_text`] of a replacement computed from `over`, a
    /// [`Self::recent_write`] hint (`req.expected_version` is its version): a
    /// `CheckpointConflict`, writing nothing, unless the stored value is still exactly
    /// `over`'s text, so a stale hint never overwrites a record its caller did not see.
    /// The default refuses every such write (a store that gives no hints gets none).
    fn write_over(
        &self,
        _req: SaveCheckpoint,
        _value_text: Option<&str>,
        _over: &RecentWrite,
    ) -> BoxFuture<'_, crate::error::Result<()>> {
        Box::pin(async {
            Err(crate::error::PrismError::conflict(
                "this store remembers no writes to replace; load the checkpoint",
            ))
        })
    }

    /// What a [`Self::save_text`] caller hands beside a value text: the value (the
    /// default), or only its own parsed form as a [`model::ValueMemo`] (the memory
    /// store: it keeps the text, reads the value back from it when a [`Checkpoint`] is
    /// asked for, and answers the memo with loads of that text while it keeps the memo,
    /// for its most recent saves, issue 13; SQLite keeps the text and remembers the memo
    /// with its most recent writes, [`Self::recent_write`]).
    fn beside_text(&self) -> BesideText {
        BesideText::Value
    }

    /// What listing `query` page after page (pages of `query.limit`, as the store clamps
    /// it) counts by the first page that reaches `cap`, when the store can count without
    /// loading the checkpoints (the memory store); `None`: list them.
    fn count(
        &self,
        _query: &ListCheckpoints,
        _cap: u64,
    ) -> Option<BoxFuture<'_, crate::error::Result<u64>>> {
        None
    }

    /// [`Self::save_text`] of a create (`req.expected_version` is `Some(0)`) bounded by a
    /// count, in one atomic step: when the key is free and listing `within` counts (as
    /// [`Self::count`]) `cap` or more checkpoints, nothing is written and the answer is
    /// [`Capped::Full`]. A taken key is the save's own conflict, whatever the count. No
    /// concurrent create (of this process or another) can slip between the count and
    /// the write, so the listing never grows past `cap` through this call. `None`: the
    /// store cannot count and write in one step; the caller counts before and after.
    fn create_capped(
        &self,
        _req: SaveCheckpoint,
        _value_text: Option<String>,
        _within: &ListCheckpoints,
        _cap: u64,
    ) -> Option<BoxFuture<'_, crate::error::Result<Capped>>> {
        None
    }
}

/// See [`CheckpointStore::beside_text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BesideText {
    /// `req.value` too.
    Value,
    /// `req.value` may be `null`: the store keeps the text as given, and `req.memo`
    /// with it (the memory store with its entry, SQLite with its recent writes:
    /// [`CheckpointStore::recent_write`]).
    Memo,
}

/// The four [`CheckpointStore`] methods of a store that does its work in inherent
/// `async fn`s `save_impl`, `load_impl`, `list_impl` and `delete_impl` (boxing their
/// futures), for use inside its `impl CheckpointStore` block.
macro_rules! boxed_store_methods {
    () => {
        fn save(
            &self,
            req: $crate::store::SaveCheckpoint,
        ) -> $crate::store::BoxFuture<'_, $crate::error::Result<$crate::store::Checkpoint>> {
            Box::pin(self.save_impl(req))
        }

        fn load<'a>(
            &'a self,
            key: &'a $crate::store::CheckpointKey,
        ) -> $crate::store::BoxFuture<'a, $crate::error::Result<Option<$crate::store::Checkpoint>>>
        {
            Box::pin(self.load_impl(key))
        }

        fn list(
            &self,
            query: $crate::store::ListCheckpoints,
        ) -> $crate::store::BoxFuture<
            '_,
            $crate::error::Result<$crate::store::Page<$crate::store::Checkpoint>>,
        > {
            Box::pin(self.list_impl(query))
        }

        fn delete<'a>(
            &'a self,
            key: &'a $crate::store::CheckpointKey,
            expected_version: Option<u64>,
        ) -> $crate::store::BoxFuture<'a, $crate::error::Result<bool>> {
            Box::pin(self.delete_impl(key, expected_version))
        }
    };
}
pub(crate) use boxed_store_methods;

/// `ArtifactError('invalid_input')` with this message (store options, closed stores).
pub fn invalid(message: impl Into<String>) -> crate::error::PrismError {
    crate::error::PrismError::artifact(crate::error::ArtifactReason::InvalidInput, message)
}

pub mod cursor;
pub mod host;
mod lifecycle;
pub mod memory;
pub mod model;
pub mod options;
pub mod postgres;
pub mod recent;
pub mod sqlite;
pub mod wire;

#[cfg(test)]
pub(crate) mod conformance;

pub use host::{HostCaller, HostCheckpointStore, HostOp};
pub use memory::{MemoryLimits, MemoryStore};
pub use model::{
    value_bytes, Checkpoint, CheckpointKey, CheckpointText, ListCheckpoints, Ownership, Page,
    SaveCheckpoint, SignalRef, ValueMemo, VALUE_BYTES_HARD,
};
pub use postgres::{PostgresOptions, PostgresPersistence};
pub use recent::RecentWrite;
pub use sqlite::{SqliteOptions, SqlitePersistence};
pub use wire::{parse_delete, parse_key, parse_list, parse_save, parse_save_text};
