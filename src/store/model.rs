//! The checkpoint shapes of the `CheckpointStore` contract (`@arnilo/prism`'s
//! `CheckpointKey`, `CheckpointSaveInput`, `CheckpointRecord`, `CheckpointQuery`,
//! `PersistencePage`), their field rules, and the owner key native stores scope by.
//!
//! Which error a rule breaks into (all stores, the same as the reference's stores where
//! it has the rule):
//! - `CheckpointConflictError`: an empty namespace or key, a `version` that is not a
//!   positive safe integer, an `expectedVersion`/`fencingToken` that is not a
//!   non-negative safe integer, a value that is missing, a cursor the store never issued;
//! - `RangeError`: a field over its byte bound (namespace, key, category, owner member,
//!   metadata, value), too many categories;
//! - `TypeError`: a wrong JSON type, an unknown field, a NUL character.

use crate::error::{PrismError, Result};
use crate::json::{push_json_opt_member, push_json_opt_u64, push_json_str, push_json_u64};
use crate::util::MAX_SAFE_INTEGER;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// Largest namespace, in UTF-8 bytes.
pub const MAX_NAMESPACE_BYTES: usize = 256;
/// Largest key (and key prefix), in UTF-8 bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest category, in UTF-8 bytes.
pub const MAX_CATEGORY_BYTES: usize = 256;
/// Most categories one query filters by.
pub const MAX_CATEGORIES: usize = 64;
/// Largest ownership member (`tenantId`, `accountId`, `userId`), in UTF-8 bytes.
pub const MAX_OWNER_BYTES: usize = 512;
/// Largest metadata object (its JSON text), in bytes.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Largest cursor text accepted.
pub const MAX_CURSOR_BYTES: usize = 4096;
/// Hard cap of a checkpoint value (its JSON text), for every store: 16 MiB.
pub const VALUE_BYTES_HARD: usize = 16 * 1024 * 1024;
/// Hard cap of a listing page.
pub const PAGE_SIZE_HARD: u32 = 1000;
/// Page size when `limit` is absent.
pub const PAGE_SIZE_DEFAULT: u32 = 100;
/// Largest page of the SQLite and PostgreSQL stores (a larger `limit` gives this many).
pub const PAGE_SIZE_SQL: u32 = 500;
/// `OwnershipScope`: who a checkpoint belongs to. Native stores scope every key by all
/// three members (absent and present-but-empty are different owners).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ownership {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

impl Ownership {
    /// The members with their wire names.
    pub fn members(&self) -> [(&'static str, Option<&str>); 3] {
        [
            ("tenantId", self.tenant_id.as_deref()),
            ("accountId", self.account_id.as_deref()),
            ("userId", self.user_id.as_deref()),
        ]
    }

    /// No member at all (the unowned scope).
    pub fn is_unowned(&self) -> bool {
        self.members().iter().all(|(_, m)| m.is_none())
    }

    /// At least one member is a non-empty string (what the artifact service requires).
    pub fn has_owner(&self) -> bool {
        self.members()
            .iter()
            .any(|(_, m)| m.is_some_and(|s| !s.is_empty()))
    }

    /// The text native stores key by: the JSON object of the present members, in
    /// `tenantId, accountId, userId` order (`{}` for the unowned scope).
    pub fn owner_key(&self) -> String {
        let mut out = String::new();
        self.write_owner_key(&mut out);
        out
    }

    /// [`Self::owner_key`] appended to `out`: exactly serde's text of `self` (a test pins
    /// it; stores keep this text, so it never changes).
    pub fn write_owner_key(&self, out: &mut String) {
        out.push('{');
        let mut first = true;
        for (name, member) in self.members() {
            if let Some(value) = member {
                if !first {
                    out.push(',');
                }
                first = false;
                out.push('"');
                out.push_str(name);
                out.push_str("\":");
                push_json_str(out, value);
            }
        }
        out.push('}');
    }

    /// `filter` as a listing filter: every member it names must be equal here; with
    /// `exact`, the members it leaves out must be absent here too.
    pub fn matches(&self, filter: &Ownership, exact: bool) -> bool {
        self.members()
            .iter()
            .zip(filter.members())
            .all(|((_, mine), (_, wanted))| match wanted {
                Some(w) => *mine == Some(w),
                None => !exact || mine.is_none(),
            })
    }

    /// Add the present members to a JSON object (the flat spread of the reference).
    pub fn spread_into(&self, obj: &mut Map<String, Value>) {
        for (name, m) in self.members() {
            if let Some(s) = m {
                obj.insert(name.into(), Value::String(s.to_string()));
            }
        }
    }
}

/// Where a store call came from: the artifact service hands its caller's `AbortSignal`
/// to a host store as `signal`; native stores ignore it (the service checks the abort
/// flag between calls).
pub type SignalRef = Option<u32>;

/// `CheckpointRecord`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub namespace: String,
    pub key: String,
    pub version: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fencing_token: Option<u64>,
    pub value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(flatten)]
    pub owner: Ownership,
    /// ISO-8601 UTC.
    pub created_at: String,
    /// ISO-8601 UTC.
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A checkpoint's `metadata`: a JSON object kept as its text. A store that keeps text
/// (memory, SQLite) keeps it exactly as `JSON.stringify` wrote it, so a string holding a
/// lone UTF-16 surrogate (an escape such as `\ud800`, which a Rust string cannot hold)
/// loads back as it was saved, as the reference's stores keep it; a store that keeps
/// values (PostgreSQL, a host's store) reads it with [`Metadata::to_map`].
#[derive(Debug, Clone)]
pub struct Metadata(Box<serde_json::value::RawValue>);

impl Metadata {
    /// The text of `map`.
    pub fn from_map(map: &Map<String, Value>) -> Self {
        // A map of values always serializes.
        Self(serde_json::value::to_raw_value(map).unwrap_or_default())
    }

    /// `raw` (JSON already checked, lone surrogate escapes allowed) when it is an object.
    pub fn from_raw(raw: &serde_json::value::RawValue) -> Option<Self> {
        raw.get().starts_with('{').then(|| Self(raw.to_owned()))
    }

    /// `text` as metadata when it is a JSON object (lone surrogate escapes allowed),
    /// else why not.
    pub fn from_text(text: &str) -> std::result::Result<Self, String> {
        // Checked to be JSON without reading it into values (which would refuse a lone
        // surrogate escape).
        let raw = serde_json::from_str::<&serde_json::value::RawValue>(text.trim())
            .map_err(|e| e.to_string())?;
        Self::from_raw(raw).ok_or_else(|| "metadata is not a JSON object".into())
    }

    /// Its JSON text.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// Read into values: serde's error when it holds what a Rust string cannot hold (a
    /// lone surrogate escape).
    pub fn to_map(&self) -> std::result::Result<Map<String, Value>, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }
}

/// The same members and values (a PostgreSQL `jsonb` answers them in its own order and
/// spacing); texts that cannot be read are equal only as the same text.
impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
            || matches!((self.to_map(), other.to_map()), (Ok(a), Ok(b)) if a == b)
    }
}

/// Its text as it is (no copy, no second check).
impl Serialize for Metadata {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Map::<String, Value>::deserialize(d).map(|m| Self::from_map(&m))
    }
}

/// A checkpoint as its `CheckpointRecord` JSON text (what the binding answers), with the
/// members the artifact service reads: the checkpoint and its value's text, the whole text
/// around the value written at once or only when asked for ([`KeptText`]). The memory
/// store keeps one per record, so a load neither copies nor serializes the value; the
/// other stores answer their value's text (SQLite: the row's, as read), and the artifact
/// service, which reads only the value, never has the whole text written (issue 13).
#[derive(Debug, Clone)]
pub struct CheckpointText {
    kept: KeptText,
    /// The value's text is exactly the text its saver handed to
    /// [`super::CheckpointStore::save_text`] (the memory store keeps it as given), so the
    /// saver knows its form without reading it again: the artifact service answers its
    /// own record's text as stored. False wherever the text was read back or rewritten.
    pub value_as_given: bool,
    /// The saver's [`ValueMemo`] of exactly this value text, where the store keeps one
    /// (the memory store, when the saver handed one with the text).
    pub memo: Option<ValueMemo>,
}

/// A checkpoint as the memory store keeps it (and as every [`CheckpointText`] holds it):
/// the checkpoint and its value's text, with the whole text around it written or not
/// ([`KeptText::new`]). Either way the value's text is kept once, and every answer shares
/// it.
#[derive(Debug, Clone)]
pub struct KeptText(Arc<Kept>);

#[derive(Debug)]
struct Kept {
    /// Its value unused (`null`): the value is `text[value]`.
    cp: Checkpoint,
    /// The whole text when `whole`, else the value's text.
    text: Box<str>,
    value: Range<usize>,
    whole: bool,
}

impl KeptText {
    /// `cp` with the value whose JSON text is `value_text` (`cp.value` is dropped). With
    /// `whole`, the checkpoint's whole text is written now (for a save that answers it:
    /// the binding's `saveCheckpoint`); without it, [`CheckpointText::text`] writes it each
    /// time it is asked for, and nothing else does (the artifact service's and the work
    /// drafts' saves answer nothing or the value, and their loads read only the value:
    /// issue 13, writing the whole text was ~1.8k instructions of an `approve`).
    pub fn new(cp: Checkpoint, value_text: &str, whole: bool) -> Self {
        if whole {
            let (text, value) = CheckpointText::write(&cp, value_text);
            Self::of(cp, text.into_boxed_str(), value, true)
        } else {
            Self::of(cp, Box::from(value_text), 0..value_text.len(), false)
        }
    }

    /// `cp` with the value whose JSON text is `value_text`, taken as it is (not copied);
    /// the whole text is written only when asked for.
    fn of_value_text(cp: Checkpoint, value_text: String) -> Self {
        let value = 0..value_text.len();
        Self::of(cp, value_text.into_boxed_str(), value, false)
    }

    fn of(mut cp: Checkpoint, text: Box<str>, value: Range<usize>, whole: bool) -> Self {
        cp.value = Value::Null;
        Self(Arc::new(Kept {
            cp,
            text,
            value,
            whole,
        }))
    }

    /// The checkpoint, its `value` unused ([`Self::value_text`] is the value).
    pub fn checkpoint(&self) -> &Checkpoint {
        &self.0.cp
    }

    /// The value's JSON text.
    pub fn value_text(&self) -> &str {
        self.0.text.get(self.0.value.clone()).unwrap_or("null")
    }

    /// The whole text: as kept, or written now.
    fn text(&self) -> Cow<'_, str> {
        if self.0.whole {
            Cow::Borrowed(&self.0.text)
        } else {
            Cow::Owned(CheckpointText::write(&self.0.cp, &self.0.text).0)
        }
    }

    /// As an answer: `value_as_given` and `memo` as [`CheckpointText`] says.
    pub fn answer(&self, value_as_given: bool, memo: Option<ValueMemo>) -> CheckpointText {
        CheckpointText {
            kept: self.clone(),
            value_as_given,
            memo,
        }
    }
}

/// A saver's own parsed form of the value text it saves, handed beside the text
/// ([`SaveCheckpoint::memo`]) to a store that keeps values in memory (the memory store,
/// [`super::BesideText::Memo`]), which keeps it with the text and answers it with every
/// load of that text, so the saver need not parse its own text back (issue 13: the
/// artifact service's record). A store never reads it; any other write of the key drops it.
/// A loader about to replace the value may take it ([`Self::take`]): later loads of the
/// same text then read the text, as they would without a memo.
///
/// One allocation per memo: the value sits in its reference-counted cell (issue 13).
#[derive(Clone)]
pub struct ValueMemo(Arc<dyn MemoCell>);

/// A memo's cell, of whatever type its value is.
trait MemoCell: Send + Sync {
    fn as_any(&self) -> &dyn std::any::Any;
    fn withdraw(&self);
}

/// The value, until it is taken; `withdrawn`: answered to nobody any more (the value
/// stays until the cell is dropped).
struct Memo<T> {
    value: Option<T>,
    withdrawn: bool,
}

impl<T: std::any::Any + Send> MemoCell for std::sync::Mutex<Memo<T>> {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn withdraw(&self) {
        crate::util::sync::lock(self).withdrawn = true;
    }
}

impl ValueMemo {
    pub fn new<T: std::any::Any + Send>(value: T) -> Self {
        Self(Arc::new(std::sync::Mutex::new(Memo {
            value: Some(value),
            withdrawn: false,
        })))
    }

    /// `f` of the value while it is a `T`, neither taken nor withdrawn.
    fn with<T: std::any::Any, R>(&self, f: impl FnOnce(&mut Option<T>) -> Option<R>) -> Option<R> {
        let cell = self
            .0
            .as_any()
            .downcast_ref::<std::sync::Mutex<Memo<T>>>()?;
        let mut memo = crate::util::sync::lock(cell);
        if memo.withdrawn {
            return None;
        }
        f(&mut memo.value)
    }

    /// A copy of the memo, when it is a `T` and was not taken.
    pub fn cloned<T: std::any::Any + Clone>(&self) -> Option<T> {
        self.with(|value: &mut Option<T>| value.clone())
    }

    /// `f` of the memo, when it is a `T` and was not taken (no copy of it is made).
    pub fn peek<T: std::any::Any, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.with(|value: &mut Option<T>| value.as_ref().map(f))
    }

    /// The memo itself, when it is a `T` and was not taken: for a loader that replaces
    /// the value (the copy would be dropped with the old text anyway).
    pub fn take<T: std::any::Any>(&self) -> Option<T> {
        self.with(Option::take)
    }

    /// Answer the memo to nobody from now on; what it holds is dropped with the last
    /// reference to it (the memory store hands that to another thread).
    pub fn withdraw(&self) {
        self.0.withdraw();
    }

    /// A reference that does not keep the memo (only a pointer-sized cell of it).
    pub fn downgrade(&self) -> WeakMemo {
        WeakMemo(Arc::downgrade(&self.0))
    }
}

/// A [`ValueMemo`] held without keeping it: the memory store keeps the memos of its most
/// recent saves and only this of the others.
#[derive(Clone)]
pub struct WeakMemo(std::sync::Weak<dyn MemoCell>);

impl WeakMemo {
    /// The memo, while something still keeps it.
    pub fn upgrade(&self) -> Option<ValueMemo> {
        self.0.upgrade().map(ValueMemo)
    }
}

impl std::fmt::Debug for ValueMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ValueMemo")
    }
}

/// The same memo (not merely an equal one).
impl PartialEq for ValueMemo {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.0), Arc::as_ptr(&other.0))
    }
}

impl CheckpointText {
    /// `cp` as text (its value serialized once; the whole text written when asked for).
    pub fn of_checkpoint(cp: Checkpoint) -> Self {
        let value_text = serde_json::to_string(&cp.value).unwrap_or_default();
        Self::of_value_text(cp, value_text)
    }

    /// `cp`, whose value serializes to `value_text` (a database row's value as read, the
    /// text its saver wrote), taken as it is; the whole text, written as serde writes
    /// [`Checkpoint`] (members in declaration order, absent options left out), only when
    /// asked for ([`Self::text`]).
    pub fn of_value_text(cp: Checkpoint, value_text: String) -> Self {
        KeptText::of_value_text(cp, value_text).answer(false, None)
    }

    /// The text of `cp` with `value_text` as its value, and where the value sits in it.
    fn write(cp: &Checkpoint, value_text: &str) -> (String, Range<usize>) {
        let mut out = String::with_capacity(value_text.len() + 192);
        out.push_str("{\"namespace\":");
        push_json_str(&mut out, &cp.namespace);
        out.push_str(",\"key\":");
        push_json_str(&mut out, &cp.key);
        out.push_str(",\"version\":");
        push_json_u64(&mut out, cp.version);
        push_json_opt_u64(&mut out, "fencingToken", cp.fencing_token);
        out.push_str(",\"value\":");
        let start = out.len();
        out.push_str(value_text);
        let value = start..out.len();
        if let Some(c) = &cp.category {
            out.push_str(",\"category\":");
            push_json_str(&mut out, c);
        }
        for (name, m) in cp.owner.members() {
            push_json_opt_member(&mut out, name, m);
        }
        out.push_str(",\"createdAt\":");
        push_json_str(&mut out, &cp.created_at);
        out.push_str(",\"updatedAt\":");
        push_json_str(&mut out, &cp.updated_at);
        if let Some(m) = &cp.metadata {
            out.push_str(",\"metadata\":");
            out.push_str(m.text());
        }
        out.push('}');
        (out, value)
    }

    /// Exactly `serde_json::to_string(&checkpoint)` (what the binding answers): as kept,
    /// or written now.
    pub fn text(&self) -> Cow<'_, str> {
        self.kept.text()
    }

    /// The value's JSON text.
    pub fn value_text(&self) -> &str {
        self.kept.value_text()
    }

    /// The checkpoint's key.
    pub fn key(&self) -> &str {
        &self.kept.checkpoint().key
    }

    /// The checkpoint's version.
    pub fn version(&self) -> u64 {
        self.kept.checkpoint().version
    }

    /// The checkpoint's owner.
    pub fn owner(&self) -> &Ownership {
        &self.kept.checkpoint().owner
    }
}

/// `CheckpointSaveInput`: an optimistic write with a caller-assigned version.
#[derive(Debug, Clone, PartialEq)]
pub struct SaveCheckpoint {
    pub namespace: String,
    pub key: String,
    pub owner: Ownership,
    /// Must be greater than the stored version.
    pub version: u64,
    /// `Some(0)`: create only; `Some(n)`: the stored version must be `n`.
    pub expected_version: Option<u64>,
    /// A stored fencing token refuses writes with an absent or lower token.
    pub fencing_token: Option<u64>,
    pub value: Value,
    pub category: Option<String>,
    pub metadata: Option<Metadata>,
    pub signal: SignalRef,
    /// The saver's parsed form of the value text it hands beside this request (see
    /// [`ValueMemo`]); kept only by a store that asks for it, never on the wire.
    pub memo: Option<ValueMemo>,
}

/// `CheckpointKey`: what `loadCheckpoint` and `deleteCheckpoint` address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointKey {
    pub namespace: String,
    pub key: String,
    pub owner: Ownership,
    pub signal: SignalRef,
}

/// Listing order: by `(namespace, key, owner)`, ascending or descending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    #[default]
    Asc,
    Desc,
}

/// `CheckpointQuery`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListCheckpoints {
    pub namespace: Option<String>,
    pub key_prefix: Option<String>,
    /// `Some(set)`: only checkpoints whose category is in the set (an empty set matches
    /// nothing).
    pub categories: Option<Vec<String>>,
    /// Members to match (absent members match anything unless `exact_owner`).
    pub owner: Ownership,
    /// Internal (the artifact service): the owner must be exactly `owner`.
    pub exact_owner: bool,
    pub cursor: Option<String>,
    pub limit: Option<u32>,
    pub order: Order,
    pub signal: SignalRef,
}

/// `PersistencePage<T>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Page<CheckpointText> {
    /// The page's JSON text (`PersistencePage<CheckpointRecord>`), its records' texts as
    /// the store answered them.
    pub fn to_text(&self) -> String {
        let texts: Vec<Cow<'_, str>> = self.items.iter().map(CheckpointText::text).collect();
        let mut out = String::with_capacity(32 + texts.iter().map(|t| t.len() + 1).sum::<usize>());
        out.push_str("{\"items\":[");
        for (i, text) in texts.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(text);
        }
        out.push(']');
        if let Some(cursor) = &self.next_cursor {
            out.push_str(",\"nextCursor\":");
            crate::json::push_json_str(&mut out, cursor);
        }
        out.push('}');
        out
    }
}

impl Checkpoint {
    /// True when `self` is what `query` selects (every store's filter, in one place).
    pub fn selected_by(&self, q: &ListCheckpoints) -> bool {
        q.namespace.as_ref().is_none_or(|n| *n == self.namespace)
            && q.key_prefix
                .as_ref()
                .is_none_or(|p| self.key.starts_with(p.as_str()))
            && q.categories.as_ref().is_none_or(|set| {
                self.category
                    .as_ref()
                    .is_some_and(|c| set.iter().any(|s| s == c))
            })
            && self.owner.matches(&q.owner, q.exact_owner)
    }
}

/// `CheckpointConflictError` for a refused input.
pub fn conflict(message: impl Into<String>) -> PrismError {
    PrismError::conflict(message)
}

fn check_text(name: &str, s: &str, max: usize, allow_empty: bool) -> Result<()> {
    if !allow_empty && s.is_empty() {
        return Err(conflict("Checkpoint namespace and key are required"));
    }
    if s.len() > max {
        return Err(PrismError::range(format!(
            "{name} is {} bytes, more than {max}",
            s.len()
        )));
    }
    if s.contains('\0') {
        return Err(PrismError::type_error(format!(
            "{name} must not contain NUL characters"
        )));
    }
    Ok(())
}

fn check_owner(o: &Ownership) -> Result<()> {
    for (name, m) in o.members() {
        if let Some(s) = m {
            check_text(name, s, MAX_OWNER_BYTES, true)?;
        }
    }
    Ok(())
}

fn check_namespace_key(namespace: &str, key: &str) -> Result<()> {
    check_text("namespace", namespace, MAX_NAMESPACE_BYTES, false)?;
    check_text("key", key, MAX_KEY_BYTES, false)
}

/// A version: a positive safe integer.
pub fn check_version(v: u64) -> Result<()> {
    if v == 0 || v > MAX_SAFE_INTEGER {
        return Err(conflict(
            "Checkpoint version must be a positive safe integer",
        ));
    }
    Ok(())
}

impl SaveCheckpoint {
    /// What [`super::CheckpointStore::create_capped`] saves: a create (expected version
    /// 0); anything else is a bug of the caller.
    pub fn require_create(&self) -> Result<()> {
        if self.expected_version == Some(0) {
            Ok(())
        } else {
            Err(PrismError::internal(
                "create_capped saves only creates (expected version 0)",
            ))
        }
    }

    /// Field rules; the value cap is each store's.
    pub fn validate(&self) -> Result<()> {
        check_namespace_key(&self.namespace, &self.key)?;
        check_owner(&self.owner)?;
        check_version(self.version)?;
        if self.expected_version.is_some_and(|v| v > MAX_SAFE_INTEGER) {
            return Err(conflict(
                "Checkpoint expectedVersion must be a non-negative safe integer",
            ));
        }
        if self.fencing_token.is_some_and(|v| v > MAX_SAFE_INTEGER) {
            return Err(conflict(
                "Checkpoint fencingToken must be a non-negative safe integer",
            ));
        }
        if let Some(c) = &self.category {
            check_text("category", c, MAX_CATEGORY_BYTES, true)?;
        }
        if let Some(m) = &self.metadata {
            let n = m.text().len();
            if n > MAX_METADATA_BYTES {
                return Err(PrismError::range(format!(
                    "Checkpoint metadata is {n} bytes, more than {MAX_METADATA_BYTES}"
                )));
            }
        }
        Ok(())
    }

    /// The record this save writes over `existing` (`None`: a new key), at `now`, or the
    /// conflict that refuses it: the compare-and-swap, version and fencing rules of the
    /// reference, in its order.
    pub fn apply(self, existing: Option<&Checkpoint>, now: &str) -> Result<Checkpoint> {
        let current = existing.map_or(0, |c| c.version);
        if let Some(expected) = self.expected_version {
            if expected != current {
                return Err(conflict(format!(
                    "Checkpoint compare-and-swap failed (expected {expected}, current {current})"
                )));
            }
        }
        if let Some(e) = existing {
            if self.version <= e.version {
                return Err(conflict(format!(
                    "Stale checkpoint version {} (current {})",
                    self.version, e.version
                )));
            }
            if let Some(fence) = e.fencing_token {
                if self.fencing_token.is_none_or(|f| f < fence) {
                    return Err(stale_fence(self.fencing_token, fence));
                }
            }
        }
        Ok(Checkpoint {
            namespace: self.namespace,
            key: self.key,
            version: self.version,
            fencing_token: self.fencing_token,
            value: self.value,
            category: self.category,
            owner: self.owner,
            created_at: existing.map_or_else(|| now.to_string(), |e| e.created_at.clone()),
            updated_at: now.to_string(),
            metadata: self.metadata,
        })
    }
}

/// The conflict of a write whose fencing token is absent or below the stored one.
pub fn stale_fence(given: Option<u64>, current: u64) -> PrismError {
    let given = given.map_or_else(|| "missing".to_string(), |f| f.to_string());
    conflict(format!(
        "Stale checkpoint fencing token {given} (current {current})"
    ))
}

impl CheckpointKey {
    pub fn new(namespace: &str, key: &str, owner: &Ownership) -> Self {
        Self {
            namespace: namespace.to_string(),
            key: key.to_string(),
            owner: owner.clone(),
            signal: None,
        }
    }

    pub fn validate(&self) -> Result<()> {
        check_namespace_key(&self.namespace, &self.key)?;
        check_owner(&self.owner)
    }
}

impl ListCheckpoints {
    pub fn validate(&self) -> Result<()> {
        if let Some(n) = &self.namespace {
            check_text("namespace", n, MAX_NAMESPACE_BYTES, true)?;
        }
        if let Some(p) = &self.key_prefix {
            check_text("keyPrefix", p, MAX_KEY_BYTES, true)?;
        }
        if let Some(set) = &self.categories {
            if set.len() > MAX_CATEGORIES {
                return Err(PrismError::range(format!(
                    "category lists at most {MAX_CATEGORIES} categories"
                )));
            }
            for c in set {
                check_text("category", c, MAX_CATEGORY_BYTES, true)?;
            }
        }
        check_owner(&self.owner)?;
        if let Some(c) = &self.cursor {
            if c.is_empty() || c.len() > MAX_CURSOR_BYTES {
                return Err(conflict("Invalid checkpoint cursor"));
            }
        }
        Ok(())
    }

    /// The page size: `limit` within `1..=max` (`max` when absent or larger, 1 when 0),
    /// as the reference's stores clamp it.
    pub fn page_size(&self, max: u32) -> u32 {
        self.limit.unwrap_or(PAGE_SIZE_DEFAULT).clamp(1, max.max(1))
    }
}

/// JSON byte length of a value.
pub fn value_bytes(value: &Value) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |s| s.len())
}

/// A value over `max` bytes: `RangeError`, as the reference's memory store.
pub fn value_too_large(bytes: usize, max: usize) -> PrismError {
    PrismError::range(format!(
        "Checkpoint value is {bytes} bytes, more than maxValueBytes ({max})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner(t: Option<&str>, a: Option<&str>, u: Option<&str>) -> Ownership {
        Ownership {
            tenant_id: t.map(Into::into),
            account_id: a.map(Into::into),
            user_id: u.map(Into::into),
        }
    }

    #[test]
    fn owner_keys_tell_every_scope_apart() {
        let scopes = [
            owner(None, None, None),
            owner(Some(""), None, None),
            owner(Some("t"), None, None),
            owner(None, Some("t"), None),
            owner(Some("t"), None, Some("u")),
            owner(Some("t"), Some("a"), Some("u")),
        ];
        let keys: std::collections::BTreeSet<_> = scopes.iter().map(Ownership::owner_key).collect();
        assert_eq!(keys.len(), scopes.len());
        assert_eq!(owner(None, None, None).owner_key(), "{}");
        assert_eq!(
            owner(Some("t"), None, Some("u")).owner_key(),
            r#"{"tenantId":"t","userId":"u"}"#
        );
    }

    proptest::proptest! {
        /// Stores keep the owner key: it is serde's text of the ownership, whatever the
        /// members hold (quotes, control characters, non-ASCII, lone escapes).
        #[test]
        fn owner_keys_are_what_serde_writes(
            t in proptest::option::of(".{0,12}"),
            a in proptest::option::of("[a-z\"\\\\\u{0}-\u{1f}\u{7f}é\u{2028}\u{1f600} ]{0,8}"),
            u in proptest::option::of(".{0,12}"),
        ) {
            let o = owner(t.as_deref(), a.as_deref(), u.as_deref());
            proptest::prop_assert_eq!(o.owner_key(), serde_json::to_string(&o).unwrap());
        }
    }

    #[test]
    fn filters_match_named_members_and_exact_needs_the_rest_absent() {
        let rec = owner(Some("t"), Some("a"), Some("u"));
        assert!(rec.matches(&owner(Some("t"), None, None), false));
        assert!(rec.matches(&Ownership::default(), false));
        assert!(!rec.matches(&owner(Some("t"), None, Some("x")), false));
        assert!(!rec.matches(&owner(Some("t"), None, Some("u")), true));
        assert!(rec.matches(&rec, true));
    }

    #[test]
    fn records_serialize_in_the_reference_shape() {
        let cp = Checkpoint {
            namespace: "n".into(),
            key: "k".into(),
            version: 3,
            fencing_token: Some(2),
            value: json!({ "a": 1 }),
            category: Some("c".into()),
            owner: owner(Some("t"), None, Some("u")),
            created_at: "c".into(),
            updated_at: "u".into(),
            metadata: Some(Metadata::from_map(
                json!({ "m": true }).as_object().unwrap(),
            )),
        };
        assert_eq!(
            serde_json::to_string(&cp).unwrap(),
            r#"{"namespace":"n","key":"k","version":3,"fencingToken":2,"value":{"a":1},"category":"c","tenantId":"t","userId":"u","createdAt":"c","updatedAt":"u","metadata":{"m":true}}"#
        );
    }

    /// Issue 13: the text a store keeps (and the binding answers) is byte for byte what
    /// serde writes for the record, whichever optional members are present; the value's
    /// range holds exactly the value's text.
    #[test]
    fn checkpoint_text_is_the_serde_text_of_the_record() {
        let meta = Metadata::from_map(json!({ "m": [1, "x\"y"] }).as_object().unwrap());
        for fence in [None, Some(0), Some(9_007_199_254_740_991)] {
            for category in [None, Some("c\u{1}\\".to_string())] {
                for o in [
                    owner(None, None, None),
                    owner(Some("t"), None, Some("ü\n")),
                    owner(Some(""), Some("a"), Some("u")),
                ] {
                    for metadata in [None, Some(meta.clone())] {
                        let cp = Checkpoint {
                            namespace: "ns\"".into(),
                            key: "k\u{7f}\u{2028}".into(),
                            version: 7,
                            fencing_token: fence,
                            value: json!({ "z": 1.5, "a": [null, true, "s\t"], "n": -3 }),
                            category: category.clone(),
                            owner: o.clone(),
                            created_at: "2026-01-01T00:00:00.000Z".into(),
                            updated_at: "u".into(),
                            metadata,
                        };
                        let t = CheckpointText::of_checkpoint(cp.clone());
                        assert_eq!(t.text(), serde_json::to_string(&cp).unwrap());
                        assert_eq!(t.value_text(), cp.value.to_string());
                        assert_eq!(
                            (t.version(), t.owner(), t.key()),
                            (7, &cp.owner, cp.key.as_str())
                        );
                    }
                }
            }
        }
    }

    fn save(version: u64, expected: Option<u64>, fence: Option<u64>) -> SaveCheckpoint {
        SaveCheckpoint {
            namespace: "n".into(),
            key: "k".into(),
            owner: Ownership::default(),
            version,
            expected_version: expected,
            fencing_token: fence,
            value: json!(version),
            category: None,
            metadata: None,
            signal: None,
            memo: None,
        }
    }

    #[test]
    fn apply_follows_the_cas_version_and_fencing_rules() {
        let first = save(1, Some(0), Some(2)).apply(None, "t0").unwrap();
        assert_eq!((first.version, first.created_at.as_str()), (1, "t0"));
        let is_conflict = |r: Result<Checkpoint>| matches!(r, Err(e) if e.kind == crate::error::ErrorKind::CheckpointConflict);
        assert!(is_conflict(
            save(2, Some(0), Some(2)).apply(Some(&first), "t1")
        ));
        assert!(is_conflict(
            save(1, None, Some(2)).apply(Some(&first), "t1")
        ));
        assert!(is_conflict(
            save(2, Some(1), Some(1)).apply(Some(&first), "t1")
        ));
        assert!(is_conflict(
            save(2, Some(1), None).apply(Some(&first), "t1")
        ));
        assert!(is_conflict(save(5, Some(3), None).apply(None, "t1")));
        let next = save(7, Some(1), Some(3)).apply(Some(&first), "t1").unwrap();
        assert_eq!(
            (
                next.version,
                next.created_at.as_str(),
                next.updated_at.as_str()
            ),
            (7, "t0", "t1")
        );
        // No stored fence: any token (or none) may write.
        let unfenced = save(1, None, None).apply(None, "t0").unwrap();
        assert!(save(2, None, None).apply(Some(&unfenced), "t1").is_ok());
    }

    #[test]
    fn input_rules_name_their_error_class() {
        use crate::error::ErrorKind::*;
        let kind = |r: Result<()>| r.unwrap_err().kind;
        let mut s = save(1, None, None);
        s.namespace = String::new();
        assert_eq!(kind(s.validate()), CheckpointConflict);
        assert_eq!(kind(save(0, None, None).validate()), CheckpointConflict);
        assert_eq!(
            kind(save(MAX_SAFE_INTEGER + 1, None, None).validate()),
            CheckpointConflict
        );
        let mut s = save(1, None, None);
        s.key = "k".repeat(MAX_KEY_BYTES + 1);
        assert_eq!(kind(s.validate()), Range);
        let mut s = save(1, None, None);
        s.key = "a\0b".into();
        assert_eq!(kind(s.validate()), Type);
        let q = ListCheckpoints {
            categories: Some(vec!["c".into(); MAX_CATEGORIES + 1]),
            ..Default::default()
        };
        assert_eq!(kind(q.validate()), Range);
        let q = ListCheckpoints {
            cursor: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(kind(q.validate()), CheckpointConflict);
    }

    #[test]
    fn page_size_clamps_like_the_reference() {
        let q = |limit| ListCheckpoints {
            limit,
            ..Default::default()
        };
        assert_eq!(q(None).page_size(500), 100);
        assert_eq!(q(Some(0)).page_size(500), 1);
        assert_eq!(q(Some(9999)).page_size(500), 500);
        assert_eq!(q(None).page_size(2), 2);
    }
}
