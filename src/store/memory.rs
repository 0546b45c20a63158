//! The bounded in-memory store: for tests and single-process hosts. Past `max_records`
//! the least recently **saved** checkpoint is evicted (a save moves a checkpoint to the
//! back), as the reference's memory store.

use super::cursor::{self, Position};
use super::model::{
    value_too_large, Checkpoint, CheckpointKey, CheckpointText, KeptText, ListCheckpoints, Order,
    Ownership, Page, SaveCheckpoint, ValueMemo, WeakMemo, PAGE_SIZE_HARD, VALUE_BYTES_HARD,
};
use super::{BesideText, BoxFuture, CheckpointStore};
use crate::error::{PrismError, Result};
use crate::util::caps::{self, Cap};
use crate::util::drop_later::DropLater;
use crate::util::time::now_iso;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::ops::Bound;
use std::sync::Arc;
use std::sync::Mutex;

/// Caps of a [`MemoryStore`]; each must be within `1..=hard` (a `RangeError` otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimits {
    pub max_records: usize,
    pub max_value_bytes: usize,
    pub max_page_size: u32,
}

impl MemoryLimits {
    pub const DEFAULT_MAX_RECORDS: usize = 10_000;
    pub const HARD_MAX_RECORDS: usize = 1_000_000;
    pub const DEFAULT_MAX_VALUE_BYTES: usize = 1024 * 1024;
    pub const DEFAULT_MAX_PAGE_SIZE: u32 = 500;

    /// Resolve optional caps: absent means the default; present must be `1..=hard`.
    pub fn resolve(
        max_records: Option<u64>,
        max_value_bytes: Option<u64>,
        max_page_size: Option<u64>,
    ) -> Result<Self> {
        let pick = |name: &'static str, v: Option<u64>, default: u64, hard: u64| {
            caps::resolve(name, v, Cap::new(name, default, hard))
        };
        let records = pick(
            "maxRecords",
            max_records,
            Self::DEFAULT_MAX_RECORDS as u64,
            Self::HARD_MAX_RECORDS as u64,
        )?;
        let bytes = pick(
            "maxValueBytes",
            max_value_bytes,
            Self::DEFAULT_MAX_VALUE_BYTES as u64,
            VALUE_BYTES_HARD as u64,
        )?;
        let page = pick(
            "maxPageSize",
            max_page_size,
            u64::from(Self::DEFAULT_MAX_PAGE_SIZE),
            u64::from(PAGE_SIZE_HARD),
        )?;
        Ok(Self {
            max_records: usize::try_from(records).unwrap_or(Self::HARD_MAX_RECORDS),
            max_value_bytes: usize::try_from(bytes).unwrap_or(VALUE_BYTES_HARD),
            max_page_size: u32::try_from(page).unwrap_or(PAGE_SIZE_HARD),
        })
    }
}

impl Default for MemoryLimits {
    fn default() -> Self {
        Self {
            max_records: Self::DEFAULT_MAX_RECORDS,
            max_value_bytes: Self::DEFAULT_MAX_VALUE_BYTES,
            max_page_size: Self::DEFAULT_MAX_PAGE_SIZE,
        }
    }
}

struct Entry {
    /// Its place in the save order (see `State::saved`).
    seq: u64,
    /// Its position: the key of `by_id` and `ordered`.
    slot: Slot,
    /// The checkpoint, its value kept once, as text (`Entry::checkpoint` reads it back):
    /// loads answer it without serializing or copying the value, and its whole text is
    /// written only for an answer that asks for it.
    kept: KeptText,
    /// The value's text is the one its saver handed with its memo (see [`written`]).
    value_as_given: bool,
    /// The saver's memo of the text, while one of the [`MEMOS_KEPT`] kept still holds it.
    memo: Option<WeakMemo>,
}

impl Entry {
    fn new(
        seq: u64,
        slot: Slot,
        (kept, value_as_given): (KeptText, bool),
        memo: Option<&ValueMemo>,
    ) -> Self {
        Self {
            seq,
            slot,
            kept,
            value_as_given,
            memo: memo.map(ValueMemo::downgrade),
        }
    }

    /// Saved again, as `seq`: the same position, what it keeps replaced.
    fn rewrite(
        &mut self,
        seq: u64,
        (kept, value_as_given): (KeptText, bool),
        memo: Option<&ValueMemo>,
    ) {
        self.seq = seq;
        self.kept = kept;
        self.value_as_given = value_as_given;
        self.memo = memo.map(ValueMemo::downgrade);
    }

    /// The checkpoint, its value unused (see [`KeptText::checkpoint`]).
    fn cp(&self) -> &Checkpoint {
        self.kept.checkpoint()
    }

    /// The text, with the saver's memo while it is kept.
    fn text(&self) -> CheckpointText {
        let memo = self.memo.as_ref().and_then(WeakMemo::upgrade);
        self.kept.answer(self.value_as_given, memo)
    }

    /// The text, without the saver's memo.
    fn listed(&self) -> CheckpointText {
        self.kept.answer(self.value_as_given, None)
    }

    /// The checkpoint, its value read back from the text.
    fn checkpoint(&self) -> Checkpoint {
        // The text is the value's JSON text (the `save_text` contract): it parses unless
        // it holds what a Rust string cannot (a lone surrogate escape), which only the
        // text answers (`load_text`, `list_text`) carry.
        let value = serde_json::from_str(self.kept.value_text()).unwrap_or(Value::Null);
        Self::with_value(self.cp(), value)
    }

    fn with_value(cp: &Checkpoint, value: Value) -> Checkpoint {
        let mut cp = cp.clone();
        cp.value = value;
        cp
    }
}

#[derive(Default)]
struct State {
    /// Every checkpoint, where `by_id` and `ordered` say (issue 13: a point call searched
    /// an ordered map, a dozen string comparisons; now one hash of its position).
    entries: slab::Slab<Entry>,
    /// Position → entry, for the point calls (save, load, delete). Hashed with foldhash
    /// (per-process random seeds, as hashbrown's default), not SipHash: a position is a
    /// few dozen bytes hashed once or twice per call, ~1k of the instructions of a
    /// memory-store `approve` under SipHash (issue 13, callgrind).
    by_id: HashMap<Slot, usize, foldhash::fast::RandomState>,
    /// The same positions in listing order → entry, for list and count ranges.
    ordered: BTreeMap<Slot, usize>,
    /// Save order, for eviction: `(seq, at)` for each save, oldest first. An element is
    /// live while the entry at `at` is still the one saved as `seq` (an update or a delete
    /// leaves the old element behind, to be skipped: issue 13, removing it from an ordered
    /// map and inserting the new one was ~1k instructions of a memory-store `approve`).
    /// Compacted when the stale elements outnumber the live ones ([`State::compact_saved`]).
    saved: VecDeque<(u64, usize)>,
    next_seq: u64,
    /// The memos of the most recent saves that came with one, oldest first, with the
    /// length of the value text each stands for: at most [`MEMOS_KEPT`] of them, standing
    /// for at most [`MEMO_TEXT_BYTES_KEPT`] (an entry holds only a [`WeakMemo`] of its own).
    memos: VecDeque<(ValueMemo, usize)>,
    memo_text_bytes: usize,
    /// The memos no longer kept (withdrawn: no load answers them), dropped off
    /// the calling thread (their memory is cold).
    dropped_memos: DropLater<ValueMemo>,
}

/// How many of the most recent saves keep their saver's memo ([`super::ValueMemo`]). A
/// memo is the saver's parsed form of the value (an artifact record's: about 1.5 KB for a
/// 0.5 KB text), so memos are bounded apart from `maxRecords`, by count and by the text
/// they stand for; the entry of a dropped memo keeps 32 bytes of it (a weak reference) and
/// is read from its text, as it would be without a memo.
pub const MEMOS_KEPT: usize = 4096;
/// The most value text the kept memos stand for, in bytes.
pub const MEMO_TEXT_BYTES_KEPT: usize = 4 << 20;

impl State {
    /// Forget the checkpoint at `slot` (its place in the save order becomes stale).
    fn remove(&mut self, slot: &Slot) {
        self.ordered.remove(slot);
        if let Some(at) = self.by_id.remove(slot) {
            self.entries.remove(at);
        }
    }

    /// Whether the save-order element `(seq, at)` is live (see `saved`).
    fn is_live(&self, (seq, at): (u64, usize)) -> bool {
        self.entries.get(at).is_some_and(|e| e.seq == seq)
    }

    /// `(seq, at)` is the newest save: put last in the save order, which is compacted once
    /// its stale elements outnumber the live ones (so each save pays O(1) amortized).
    fn push_saved(&mut self, seq: u64, at: usize) {
        self.saved.push_back((seq, at));
        if self.saved.len() > 2 * self.entries.len() + 64 {
            self.compact_saved();
        }
    }

    /// The save order without its stale elements.
    fn compact_saved(&mut self) {
        let mut saved = std::mem::take(&mut self.saved);
        saved.retain(|&e| self.is_live(e));
        self.saved = saved;
    }

    /// Evict the least recently saved checkpoint; false when there is none.
    fn evict_oldest(&mut self) -> bool {
        while let Some(e) = self.saved.pop_front() {
            if self.is_live(e) {
                let slot = self.entries[e.1].slot.clone();
                self.remove(&slot);
                return true;
            }
        }
        false
    }

    /// Keep `memo` (of a `text_bytes` long value text) as the most recent; past either
    /// bound the oldest kept are dropped.
    fn keep_memo(&mut self, memo: ValueMemo, text_bytes: usize) {
        self.memos.push_back((memo, text_bytes));
        self.memo_text_bytes += text_bytes;
        while self.memos.len() > MEMOS_KEPT || self.memo_text_bytes > MEMO_TEXT_BYTES_KEPT {
            let Some((memo, bytes)) = self.memos.pop_front() else {
                break;
            };
            self.memo_text_bytes -= bytes;
            memo.withdraw();
            self.dropped_memos.push(memo);
        }
    }
}

/// A bounded in-memory [`CheckpointStore`].
pub struct MemoryStore {
    limits: MemoryLimits,
    state: Mutex<State>,
}

thread_local! {
    /// The buffer [`OwnerKey`] writes in (one string per thread, not one per call).
    static OWNER_KEY_BUFFER: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// An ownership's owner key, written into this thread's reused buffer, which it hands
/// back when dropped (issue 13: a lookup allocated a key it compared and dropped).
struct OwnerKey(String);

impl OwnerKey {
    fn of(owner: &Ownership) -> Self {
        let mut text = OWNER_KEY_BUFFER.take();
        text.clear();
        owner.write_owner_key(&mut text);
        Self(text)
    }

    fn as_str(&self) -> &str {
        &self.0
    }
}

impl Drop for OwnerKey {
    fn drop(&mut self) {
        let text = std::mem::take(&mut self.0);
        // While the thread's locals are being destroyed there is nothing to hand back to.
        let _ = OWNER_KEY_BUFFER.try_with(|b| b.set(text));
    }
}

fn id_of(namespace: &str, key: &str, owner_key: String) -> Slot {
    Slot(Arc::new(Position {
        namespace: namespace.to_string(),
        key: key.to_string(),
        owner_key,
    }))
}

/// A position as the store's maps hold it: one copy shared by the three of them. Equal,
/// ordered and hashed by its parts (as [`PositionParts`]), so a lookup names it by
/// borrowed strings, and a range by [`Position`] bounds.
#[derive(Clone)]
struct Slot(Arc<Position>);

impl PartialEq for Slot {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for Slot {}

impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Slot {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl Hash for Slot {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0.as_ref() as &dyn PositionParts).hash(state);
    }
}

impl std::borrow::Borrow<Position> for Slot {
    fn borrow(&self) -> &Position {
        &self.0
    }
}

impl<'a> std::borrow::Borrow<dyn PositionParts + 'a> for Slot {
    fn borrow(&self) -> &(dyn PositionParts + 'a) {
        self.0.as_ref()
    }
}

/// A [`Position`]'s three parts, so a lookup can name one by borrowed strings (a
/// memory-store call otherwise copied the namespace and key into a `Position` for each
/// search; issue 13). Equal and hashed as [`Slot`] is.
trait PositionParts {
    fn parts(&self) -> (&str, &str, &str);
}

impl PositionParts for Position {
    fn parts(&self) -> (&str, &str, &str) {
        (&self.namespace, &self.key, &self.owner_key)
    }
}

impl PositionParts for (&str, &str, &str) {
    fn parts(&self) -> (&str, &str, &str) {
        *self
    }
}

impl PartialEq for dyn PositionParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn PositionParts + '_ {}

/// As [`Slot`] hashes: its parts, in order.
impl Hash for dyn PositionParts + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

/// The checkpoint `req` writes over `existing` as it is kept (with whether its value text
/// is marked `value_as_given`), the saver's memo of that text, and the value `req` held
/// (`null` when it came as text). The value is kept once, as the text. Only a text handed
/// with the saver's memo (the artifact service's own record) is marked `value_as_given`
/// and keeps the memo: a saver reads such a text back as its own form, which a text the
/// binding handed (a host's value) must never pass for. The whole text is written now
/// only for a save that answers it (`whole`: the binding's `save_text`).
fn written(
    mut req: SaveCheckpoint,
    existing: Option<&Checkpoint>,
    now: &str,
    (value_text, as_given): (&str, bool),
    whole: bool,
) -> Result<((KeptText, bool), Option<ValueMemo>, Value)> {
    let memo = req.memo.take().filter(|_| as_given);
    let mut cp = req.apply(existing, now)?;
    let value = std::mem::take(&mut cp.value);
    let given = memo.is_some();
    Ok(((KeptText::new(cp, value_text, whole), given), memo, value))
}

fn bound(namespace: String, key: String) -> Position {
    Position {
        namespace,
        key,
        owner_key: String::new(),
    }
}

/// The positions a query can select, as a range (the rest is filtered while walking).
fn range_of(q: &ListCheckpoints) -> (Bound<Position>, Bound<Position>) {
    let Some(ns) = &q.namespace else {
        return (Bound::Unbounded, Bound::Unbounded);
    };
    let prefix = q.key_prefix.clone().unwrap_or_default();
    let after_namespace = Bound::Excluded(bound(format!("{ns}\0"), String::new()));
    let hi = match cursor::prefix_upper_bound(&prefix) {
        Some(upper) if !prefix.is_empty() => Bound::Excluded(bound(ns.clone(), upper)),
        _ => after_namespace,
    };
    (Bound::Included(bound(ns.clone(), prefix)), hi)
}

fn max_bound(a: Bound<Position>, b: Bound<Position>) -> Bound<Position> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if y > x || (y == x && matches!(b, Bound::Excluded(_))) {
                b
            } else {
                a
            }
        }
    }
}

fn min_bound(a: Bound<Position>, b: Bound<Position>) -> Bound<Position> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if y < x || (y == x && matches!(b, Bound::Excluded(_))) {
                b
            } else {
                a
            }
        }
    }
}

/// The positions a listing walks: the query's range past its cursor; `None` when empty.
fn walk_range(q: &ListCheckpoints) -> Result<Option<(Bound<Position>, Bound<Position>)>> {
    let (mut lo, mut hi) = range_of(q);
    if let Some(after) = cursor::after(q)? {
        match q.order {
            Order::Asc => lo = max_bound(lo, Bound::Excluded(after)),
            Order::Desc => hi = min_bound(hi, Bound::Excluded(after)),
        }
    }
    let empty = matches!((&lo, &hi), (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) if a > b);
    Ok((!empty).then_some((lo, hi)))
}

impl MemoryStore {
    pub fn new(limits: MemoryLimits) -> Self {
        Self {
            limits,
            state: Mutex::new(State::default()),
        }
    }

    /// Number of checkpoints held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // No code path panics while holding the lock; recover the data if one ever did.
        crate::util::sync::lock(&self.state)
    }

    /// Save; `answer` reads the stored entry and the value `req` held. `whole`: the
    /// answer is the checkpoint's whole text, written at the save (see [`written`]).
    fn save_sync<T>(
        &self,
        req: SaveCheckpoint,
        value_text: Option<&str>,
        whole: bool,
        answer: impl FnOnce(&Entry, Value) -> T,
    ) -> Result<T> {
        match self.save_capped_sync(req, value_text, whole, None, answer)? {
            Ok(out) => Ok(out),
            Err(_) => Err(PrismError::internal(
                "memory store: an uncapped save was capped",
            )),
        }
    }

    /// [`Self::save_sync`], and with `capped` = `(within, cap)` a create that first
    /// counts `within` under the same lock: `Err(count)` (nothing written) when the key
    /// is free and the count reached `cap`.
    fn save_capped_sync<T>(
        &self,
        req: SaveCheckpoint,
        value_text: Option<&str>,
        whole: bool,
        capped: Option<(&ListCheckpoints, u64)>,
        answer: impl FnOnce(&Entry, Value) -> T,
    ) -> Result<std::result::Result<T, u64>> {
        req.validate()?;
        let capped = match capped {
            Some((q, cap)) => {
                q.validate()?;
                Some((q, cap, walk_range(q)?))
            }
            None => None,
        };
        let as_given = value_text.is_some();
        let serialized;
        let value_text = match value_text {
            Some(text) => text,
            None => {
                serialized = serde_json::to_string(&req.value).unwrap_or_default();
                serialized.as_str()
            }
        };
        let bytes = value_text.len();
        if bytes > self.limits.max_value_bytes {
            return Err(value_too_large(bytes, self.limits.max_value_bytes));
        }
        let now = now_iso();
        let owner_key = OwnerKey::of(&req.owner);
        let mut guard = self.lock();
        let st = &mut *guard;
        let seq = st.next_seq;
        let found = (req.namespace.as_str(), req.key.as_str(), owner_key.as_str());
        if let Some(&at) = st.by_id.get(&found as &dyn PositionParts) {
            // An update: replaced in place (one lookup), moved to the end of the save
            // order under its own position (no copy of it is made; every entry has one).
            let entry = &mut st.entries[at];
            let (kept, memo, value) =
                written(req, Some(entry.cp()), &now, (value_text, as_given), whole)?;
            entry.rewrite(seq, kept, memo.as_ref());
            let out = answer(entry, value);
            st.push_saved(seq, at);
            st.next_seq = seq.wrapping_add(1);
            if let Some(memo) = memo {
                st.keep_memo(memo, bytes);
            }
            return Ok(Ok(out));
        }
        if let Some((q, cap, range)) = capped {
            let n = range.map_or(0, |(lo, hi)| self.count_in(st, q, cap, lo, hi));
            if n >= cap {
                return Ok(Err(n));
            }
        }
        let id = id_of(&req.namespace, &req.key, owner_key.as_str().to_string());
        let (kept, memo, value) = written(req, None, &now, (value_text, as_given), whole)?;
        let entry = Entry::new(seq, id.clone(), kept, memo.as_ref());
        let out = answer(&entry, value);
        let at = st.entries.insert(entry);
        st.push_saved(seq, at);
        st.ordered.insert(id.clone(), at);
        st.by_id.insert(id, at);
        st.next_seq = seq.wrapping_add(1);
        if let Some(memo) = memo {
            st.keep_memo(memo, bytes);
        }
        while st.entries.len() > self.limits.max_records && st.evict_oldest() {}
        Ok(Ok(out))
    }

    /// The entry at `key`, read by `read`.
    fn load_sync<T>(
        &self,
        key: &CheckpointKey,
        read: impl FnOnce(&Entry) -> T,
    ) -> Result<Option<T>> {
        key.validate()?;
        let owner_key = OwnerKey::of(&key.owner);
        let id = (key.namespace.as_str(), key.key.as_str(), owner_key.as_str());
        let st = self.lock();
        Ok(st
            .by_id
            .get(&id as &dyn PositionParts)
            .map(|&at| read(&st.entries[at])))
    }

    /// What listing `q` in pages of its clamped limit counts by the first page that
    /// reaches `cap` (see [`CheckpointStore::count`]), without copying a checkpoint.
    fn count_sync(&self, q: &ListCheckpoints, cap: u64) -> Result<u64> {
        q.validate()?;
        let Some((lo, hi)) = walk_range(q)? else {
            return Ok(0);
        };
        Ok(self.count_in(&self.lock(), q, cap, lo, hi))
    }

    /// [`Self::count_sync`] over the held state, in the listing's key range.
    fn count_in(
        &self,
        st: &State,
        q: &ListCheckpoints,
        cap: u64,
        lo: Bound<Position>,
        hi: Bound<Position>,
    ) -> u64 {
        // Pages are read until one ends at or past `cap`: whole pages up to there.
        let page = u64::from(q.page_size(self.limits.max_page_size));
        let stop = cap.div_ceil(page).max(1).saturating_mul(page);
        let mut n: u64 = 0;
        for (_, &at) in st.ordered.range::<Position, _>((lo, hi)) {
            if st.entries[at].cp().selected_by(q) {
                n += 1;
                if n == stop {
                    break;
                }
            }
        }
        n
    }

    /// One page of `q`, each selected entry answered as `item` makes it (under the lock).
    fn list_sync<T>(&self, q: &ListCheckpoints, item: impl Fn(&Entry) -> T) -> Result<Page<T>> {
        q.validate()?;
        let limit = q.page_size(self.limits.max_page_size) as usize;
        let Some((lo, hi)) = walk_range(q)? else {
            return Ok(Page {
                items: Vec::new(),
                next_cursor: None,
            });
        };
        let st = self.lock();
        let range = st.ordered.range::<Position, _>((lo, hi));
        let walk: Box<dyn Iterator<Item = (&Slot, &usize)>> = match q.order {
            Order::Asc => Box::new(range),
            Order::Desc => Box::new(range.rev()),
        };
        let mut items = Vec::new();
        let mut last = None;
        let mut more = false;
        for (pos, &at) in walk {
            let entry = &st.entries[at];
            if !entry.cp().selected_by(q) {
                continue;
            }
            if items.len() == limit {
                more = true;
                break;
            }
            items.push(item(entry));
            last = Some(pos);
        }
        let next_cursor = if more {
            last.map(|pos| cursor::encode(&pos.0))
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    fn delete_sync(&self, key: &CheckpointKey, expected: Option<u64>) -> Result<bool> {
        key.validate()?;
        let owner_key = OwnerKey::of(&key.owner);
        let id = (key.namespace.as_str(), key.key.as_str(), owner_key.as_str());
        let id = &id as &dyn PositionParts;
        let mut st = self.lock();
        let Some((slot, &at)) = st.by_id.get_key_value(id) else {
            return Ok(false);
        };
        let entry = &st.entries[at];
        if let Some(v) = expected {
            if v != entry.cp().version {
                return Err(super::model::conflict(format!(
                    "Checkpoint compare-and-swap failed (expected {v}, current {})",
                    entry.cp().version
                )));
            }
        }
        let slot = slot.clone();
        st.remove(&slot);
        Ok(true)
    }
}

impl CheckpointStore for MemoryStore {
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        // The value as given, not read back from its text.
        let r = self.save_sync(req, None, false, |entry, value| {
            Entry::with_value(entry.cp(), value)
        });
        Box::pin(async move { r })
    }

    fn save_text(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
    ) -> BoxFuture<'_, Result<CheckpointText>> {
        let r = self.save_sync(req, value_text.as_deref(), true, |entry, _| entry.listed());
        Box::pin(async move { r })
    }

    fn write_text(
        &self,
        req: SaveCheckpoint,
        value_text: Option<&str>,
    ) -> BoxFuture<'_, Result<()>> {
        let r = self.save_sync(req, value_text, false, |_, _| ());
        Box::pin(async move { r })
    }

    /// Only the text is kept (`Entry::checkpoint`), with the saver's memo of it.
    fn beside_text(&self) -> BesideText {
        BesideText::Memo
    }

    fn load<'a>(&'a self, key: &'a CheckpointKey) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        let r = self.load_sync(key, Entry::checkpoint);
        Box::pin(async move { r })
    }

    fn load_text<'a>(
        &'a self,
        key: &'a CheckpointKey,
    ) -> BoxFuture<'a, Result<Option<CheckpointText>>> {
        let r = self.load_sync(key, Entry::text);
        Box::pin(async move { r })
    }

    fn list(&self, query: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        let r = self.list_sync(&query, Entry::checkpoint);
        Box::pin(async move { r })
    }

    /// The texts as kept: no value is read or written again.
    fn list_text(&self, query: ListCheckpoints) -> BoxFuture<'_, Result<Page<CheckpointText>>> {
        let r = self.list_sync(&query, Entry::listed);
        Box::pin(async move { r })
    }

    fn count(&self, query: &ListCheckpoints, cap: u64) -> Option<BoxFuture<'_, Result<u64>>> {
        let r = self.count_sync(query, cap);
        Some(Box::pin(async move { r }))
    }

    /// Counted and written under one lock.
    fn create_capped(
        &self,
        req: SaveCheckpoint,
        value_text: Option<String>,
        within: &ListCheckpoints,
        cap: u64,
    ) -> Option<BoxFuture<'_, Result<super::Capped>>> {
        let r = req.require_create().and_then(|()| {
            self.save_capped_sync(
                req,
                value_text.as_deref(),
                false,
                Some((within, cap)),
                |_, _| (),
            )
            .map(|out| match out {
                Ok(()) => super::Capped::Saved,
                Err(n) => super::Capped::Full(n),
            })
        });
        Some(Box::pin(async move { r }))
    }

    fn delete<'a>(
        &'a self,
        key: &'a CheckpointKey,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<bool>> {
        let r = self.delete_sync(key, expected_version);
        Box::pin(async move { r })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::conformance::{cas, key, owner, save};
    use crate::store::Ownership;
    use serde_json::json;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance() {
        let store = MemoryStore::new(MemoryLimits::default());
        crate::store::conformance::run(&store).await;
    }

    /// The three maps over the entries (hashed, ordered, save order) hold the same
    /// positions and name the same entries through saves, updates, deletes and evictions
    /// that reuse the places of removed entries (issue 13's hashed index).
    #[tokio::test]
    async fn the_index_maps_agree_through_updates_deletes_and_evictions() {
        fn check(store: &MemoryStore) {
            let st = store.lock();
            let n = st.entries.len();
            assert_eq!((st.by_id.len(), st.ordered.len()), (n, n));
            for (slot, &at) in &st.ordered {
                assert_eq!(st.by_id.get(slot), Some(&at));
                assert!(
                    st.entries[at].slot == *slot,
                    "an entry knows its own position"
                );
                let cp = st.entries[at].cp();
                assert_eq!((&cp.namespace, &cp.key), (&slot.0.namespace, &slot.0.key));
            }
            // The save order: one live element per entry, oldest first, its stale
            // elements bounded by the compaction rule.
            let live: Vec<(u64, usize)> = st
                .saved
                .iter()
                .copied()
                .filter(|&e| st.is_live(e))
                .collect();
            assert_eq!(live.len(), n, "one live save-order element per entry");
            assert!(live.windows(2).all(|w| w[0].0 < w[1].0), "oldest first");
            let most = 2 * store.limits.max_records + 65;
            assert!(st.saved.len() <= most, "stale elements are compacted");
        }
        // 37 keys over 26 places: keys are saved again while they live (updates) and the
        // store fills up (evictions).
        let store = MemoryStore::new(MemoryLimits::resolve(Some(26), None, None).unwrap());
        let o = owner("t1");
        let owner_key = OwnerKey::of(&o).as_str().to_string();
        let mut live: std::collections::BTreeMap<String, u64> = Default::default();
        // The live keys, least recently saved first: what eviction must follow.
        let mut recency: Vec<String> = Vec::new();
        let (mut evicted, mut updated) = (0, 0);
        for step in 0..400u64 {
            let k = format!("k{:02}", (step * 7919) % 37);
            match step % 5 {
                0..=2 => {
                    let saved = match live.get(&k) {
                        Some(&v) => {
                            updated += 1;
                            store.save(cas("n", &k, &o, v, json!(step))).await
                        }
                        None => store.save(save("n", &k, &o, 1, json!(step))).await,
                    }
                    .unwrap();
                    live.insert(k.clone(), saved.version);
                    recency.retain(|r| *r != k);
                    recency.push(k.clone());
                }
                3 => {
                    let gone = store.delete(&key("n", &k, &o), None).await.unwrap();
                    assert_eq!(gone, live.remove(&k).is_some());
                    recency.retain(|r| *r != k);
                }
                _ => {
                    let found = store.load(&key("n", &k, &o)).await.unwrap();
                    assert_eq!(found.map(|cp| cp.version), live.get(&k).copied());
                }
            }
            // Evicted records are gone from every map; what is left lists in key order.
            let before = live.len();
            live.retain(|k, _| {
                let at = ("n", k.as_str(), owner_key.as_str());
                store.lock().by_id.contains_key(&at as &dyn PositionParts)
            });
            let now_evicted = before - live.len();
            // Exactly the least recently saved were evicted.
            let (gone, kept) = recency.split_at(now_evicted);
            assert!(
                gone.iter().all(|k| !live.contains_key(k)),
                "step {step}: evicted {gone:?} first"
            );
            assert!(kept.iter().all(|k| live.contains_key(k)));
            recency = kept.to_vec();
            evicted += now_evicted;
            check(&store);
            let page = store
                .list_sync(
                    &ListCheckpoints {
                        namespace: Some("n".into()),
                        limit: Some(100),
                        ..Default::default()
                    },
                    |e| e.cp().key.clone(),
                )
                .unwrap();
            assert_eq!(page.items, live.keys().cloned().collect::<Vec<_>>());
        }
        assert!(evicted > 0, "the workload evicts");
        assert!(updated > 0, "the workload updates");
    }

    /// Loads and in-place updates find their record by borrowed parts in a tree many
    /// levels deep, where namespaces, keys and owners each decide an order (issue 13);
    /// an update keeps the record count and moves the record to the end of the save order.
    #[tokio::test]
    async fn records_are_found_by_borrowed_parts_in_a_deep_tree() {
        let store = MemoryStore::new(MemoryLimits::resolve(Some(3000), None, None).unwrap());
        let owners = [owner("t1"), owner("t2"), Ownership::default()];
        let name = |i: usize| (format!("ns{}", i % 3), format!("k{:03}", (i * 37) % 1000));
        for i in 0..1000 {
            let (ns, k) = name(i);
            let o = &owners[i % 3];
            store.save(save(&ns, &k, o, 1, json!(i))).await.unwrap();
        }
        assert_eq!(store.len(), 1000);
        for i in 0..1000 {
            let (ns, k) = name(i);
            let o = &owners[i % 3];
            let cp = store.load(&key(&ns, &k, o)).await.unwrap().expect("found");
            assert_eq!(cp.value, json!(i));
            // Another owner's scope under the same namespace and key holds nothing.
            let other = &owners[(i + 1) % 3];
            assert!(store.load(&key(&ns, &k, other)).await.unwrap().is_none());
        }
        // Updates in place: same count; the first record saved again is evicted last.
        let (ns0, k0) = name(0);
        store
            .save(cas(&ns0, &k0, &owners[0], 1, json!("again")))
            .await
            .unwrap();
        assert_eq!(store.len(), 1000);
        // Deletes find theirs the same way, and only theirs.
        let (ns5, k5) = name(5);
        assert!(!store
            .delete(&key(&ns5, &k5, &owners[0]), None)
            .await
            .unwrap());
        assert!(store
            .delete(&key(&ns5, &k5, &owners[2]), None)
            .await
            .unwrap());
        assert_eq!(store.len(), 999);
        assert!(store
            .load(&key(&ns0, &k0, &owners[0]))
            .await
            .unwrap()
            .is_some());
        let small = MemoryStore::new(MemoryLimits::resolve(Some(3), None, None).unwrap());
        for k in ["a", "b", "c"] {
            small
                .save(save("n", k, &owners[0], 1, json!(k)))
                .await
                .unwrap();
        }
        small
            .save(cas("n", "a", &owners[0], 1, json!("a2")))
            .await
            .unwrap();
        small
            .save(save("n", "d", &owners[0], 1, json!("d")))
            .await
            .unwrap();
        assert!(small
            .load(&key("n", "b", &owners[0]))
            .await
            .unwrap()
            .is_none());
        assert_eq!(
            small
                .load(&key("n", "a", &owners[0]))
                .await
                .unwrap()
                .unwrap()
                .value,
            json!("a2")
        );
    }

    /// Updates under capacity leave stale save-order elements behind; they stay bounded
    /// (compacted), every entry keeps its one live element, and eviction still takes the
    /// least recently saved.
    #[tokio::test]
    async fn updates_leave_a_bounded_save_order_that_still_evicts_the_oldest() {
        let store = MemoryStore::new(MemoryLimits::resolve(Some(3), None, None).unwrap());
        let o = Ownership::default();
        store.save(save("n", "x", &o, 1, json!(0))).await.unwrap();
        store.save(save("n", "a", &o, 1, json!(0))).await.unwrap();
        store.save(save("n", "b", &o, 1, json!(0))).await.unwrap();
        for v in 1..1000u64 {
            let k = if v % 2 == 0 { "b" } else { "x" };
            // "x" and "b" take turns: saved at versions 1, 2, ... each.
            store
                .save(cas("n", k, &o, v.div_ceil(2), json!(v)))
                .await
                .unwrap();
            let st = store.lock();
            let live = st.saved.iter().filter(|&&e| st.is_live(e)).count();
            assert_eq!(live, st.entries.len(), "one live element per entry");
            assert!(
                st.saved.len() <= 2 * st.entries.len() + 65,
                "{}",
                st.saved.len()
            );
        }
        // "a" was saved before every update: it goes first, then "b" (last saved at
        // v = 998, "x" at 999).
        store.save(save("n", "c", &o, 1, json!(0))).await.unwrap();
        assert!(store.load(&key("n", "a", &o)).await.unwrap().is_none());
        store.save(save("n", "d", &o, 1, json!(0))).await.unwrap();
        assert!(store.load(&key("n", "b", &o)).await.unwrap().is_none());
        for k in ["x", "c", "d"] {
            assert!(store.load(&key("n", k, &o)).await.unwrap().is_some(), "{k}");
        }
    }

    #[tokio::test]
    async fn evicts_the_least_recently_saved_past_max_records() {
        let store = MemoryStore::new(MemoryLimits::resolve(Some(3), None, None).unwrap());
        let o = Ownership::default();
        for k in ["a", "b", "c"] {
            store.save(save("n", k, &o, 1, json!(k))).await.unwrap();
        }
        // Saving "a" again makes it the most recently saved: "b" is evicted next.
        store
            .save(save("n", "a", &o, 2, json!("a2")))
            .await
            .unwrap();
        store.save(save("n", "d", &o, 1, json!("d"))).await.unwrap();
        assert_eq!(store.len(), 3);
        assert!(store.load(&key("n", "b", &o)).await.unwrap().is_none());
        for k in ["a", "c", "d"] {
            assert!(store.load(&key("n", k, &o)).await.unwrap().is_some(), "{k}");
        }
        // A deleted record frees its slot without evicting another.
        assert!(store.delete(&key("n", "c", &o), None).await.unwrap());
        store.save(save("n", "e", &o, 1, json!("e"))).await.unwrap();
        for k in ["a", "d", "e"] {
            assert!(store.load(&key("n", k, &o)).await.unwrap().is_some(), "{k}");
        }
        // A refused save moves nothing: "a" (saved before "d") is still evicted first.
        assert!(store
            .save(save("n", "a", &o, 1, json!("stale")))
            .await
            .is_err());
        store.save(save("n", "f", &o, 1, json!("f"))).await.unwrap();
        assert!(store.load(&key("n", "a", &o)).await.unwrap().is_none());
    }

    /// A saver's memo is kept with its text, for the MEMOS_KEPT most recent saves that
    /// came with one: older keepers drop theirs (their text stays), a save again makes a
    /// record recent again, and a plain save keeps none.
    /// Whether its whole text is kept (the binding's `save_text`, which answers it) or
    /// written when asked (a save with the saver's memo: the artifact service's; a save
    /// of a value: the work drafts'), a checkpoint's text is exactly serde's, in every
    /// answer.
    #[tokio::test]
    async fn whole_texts_are_serdes_whether_kept_or_written_when_asked() {
        let store = MemoryStore::new(MemoryLimits::default());
        let o = owner("t1");
        let value = json!({"a": [1, "x\u{1}y"], "b": null});
        for (k, memo) in [("kept", false), ("written", true)] {
            let mut req = save("n", k, &o, 1, Value::Null);
            req.category = Some("c".into());
            if memo {
                req.memo = Some(ValueMemo::new(1u8));
            }
            let saved = store.save_text(req, Some(value.to_string())).await.unwrap();
            let cp = store.load(&key("n", k, &o)).await.unwrap().unwrap();
            assert_eq!(cp.value, value);
            let serde = serde_json::to_string(&cp).unwrap();
            assert_eq!(saved.text(), serde, "{k}: saved");
            assert_eq!(saved.value_text(), value.to_string());
            let loaded = store.load_text(&key("n", k, &o)).await.unwrap().unwrap();
            assert_eq!(loaded.text(), serde, "{k}: loaded");
            let page = store
                .list_text(ListCheckpoints {
                    namespace: Some("n".into()),
                    key_prefix: Some(k.into()),
                    ..Default::default()
                })
                .await
                .unwrap();
            assert_eq!(page.items.len(), 1);
            assert_eq!(page.items[0].text(), serde, "{k}: listed");
        }
        // A save of the value itself (the work drafts'): its whole text is written when
        // asked, the value answered as given.
        let mut req = save("n", "plain", &o, 1, value.clone());
        req.category = Some("c".into());
        assert_eq!(store.save(req).await.unwrap().value, value);
        let cp = store.load(&key("n", "plain", &o)).await.unwrap().unwrap();
        assert_eq!(cp.value, value);
        let loaded = store
            .load_text(&key("n", "plain", &o))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(loaded.text(), serde_json::to_string(&cp).unwrap());
        assert_eq!(loaded.value_text(), value.to_string());
    }

    #[tokio::test]
    async fn memos_are_kept_for_the_most_recent_saves_only() {
        let store = MemoryStore::new(MemoryLimits::default());
        let o = Ownership::default();
        let with_memo = |k: &str, version: u64| {
            let mut req = save("n", k, &o, version, Value::Null);
            req.memo = Some(crate::store::ValueMemo::new(format!("{k}@{version}")));
            req
        };
        let memo_of = |cp: CheckpointText| cp.memo.and_then(|m| m.cloned::<String>());
        let total = MEMOS_KEPT + 3;
        for i in 0..total {
            let k = format!("k{i}");
            store
                .save_text(with_memo(&k, 1), Some(format!("{i}")))
                .await
                .unwrap();
        }
        let load = |k: String| {
            let store = &store;
            let o = o.clone();
            async move { store.load_text(&key("n", &k, &o)).await.unwrap().unwrap() }
        };
        for i in [0, 1, 2] {
            let cp = load(format!("k{i}")).await;
            assert_eq!(memo_of(cp.clone()), None, "k{i}: an older keeper");
            assert_eq!(cp.value_text(), format!("{i}"), "its text stays");
        }
        for i in [3, total / 2, total - 1] {
            assert_eq!(
                memo_of(load(format!("k{i}")).await),
                Some(format!("k{i}@1"))
            );
        }
        // k0 saved again with a memo is recent again; the oldest keeper (k3) drops its memo.
        store
            .save_text(with_memo("k0", 2), Some("0".into()))
            .await
            .unwrap();
        assert_eq!(memo_of(load("k0".into()).await), Some("k0@2".into()));
        assert_eq!(memo_of(load("k3".into()).await), None);
        assert_eq!(memo_of(load("k4".into()).await), Some("k4@1".into()));
        // A memo handed without a value text, or a plain save over a keeper, keeps none.
        store.save_text(with_memo("k5", 2), None).await.unwrap();
        store.save(save("n", "k6", &o, 2, json!(6))).await.unwrap();
        assert_eq!(memo_of(load("k5".into()).await), None);
        assert_eq!(memo_of(load("k6".into()).await), None);
        assert!(store.lock().memos.len() <= MEMOS_KEPT);

        // Bounded by the text the memos stand for too: a memo past it is not kept, and
        // newer memos push the oldest out.
        let store = MemoryStore::new(MemoryLimits::resolve(None, Some(8 << 20), None).unwrap());
        let big = |n: usize| format!("\"{}\"", "x".repeat(n));
        // Texts of 12 bytes, 2.5 MiB and 1.5 MiB: the last two are exactly the bound.
        for (k, n) in [("small", 10), ("a", (5 << 19) - 2), ("b", (3 << 19) - 2)] {
            store
                .save_text(with_memo(k, 1), Some(big(n)))
                .await
                .unwrap();
        }
        let memo_at = |k: &'static str| {
            let store = &store;
            let o = o.clone();
            async move { memo_of(store.load_text(&key("n", k, &o)).await.unwrap().unwrap()) }
        };
        assert!(
            memo_at("small").await.is_none(),
            "pushed out by the text after it"
        );
        assert_eq!(memo_at("a").await, Some("a@1".into()));
        assert_eq!(memo_at("b").await, Some("b@1".into()));
        store
            .save_text(with_memo("huge", 1), Some(big(5 << 20)))
            .await
            .unwrap();
        assert!(
            memo_at("huge").await.is_none(),
            "larger than the bound alone"
        );
        assert!(memo_at("a").await.is_none() && memo_at("b").await.is_none());
        let st = store.lock();
        assert!(st.memos.is_empty() && st.memo_text_bytes == 0);
    }

    #[tokio::test]
    async fn refuses_values_over_max_value_bytes_and_keeps_the_old_value() {
        let store = MemoryStore::new(MemoryLimits::resolve(None, Some(10), None).unwrap());
        let o = Ownership::default();
        store
            .save(save("n", "k", &o, 1, json!("12345678")))
            .await
            .unwrap();
        let e = store
            .save(save("n", "k", &o, 2, json!("123456789")))
            .await
            .unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Range);
        assert!(e.message.contains("maxValueBytes"), "{e}");
        let cp = store.load(&key("n", "k", &o)).await.unwrap().unwrap();
        assert_eq!((cp.value, cp.version), (json!("12345678"), 1));
    }

    #[tokio::test]
    async fn page_size_is_capped_by_max_page_size() {
        let store = MemoryStore::new(MemoryLimits::resolve(None, None, Some(2)).unwrap());
        let o = Ownership::default();
        for k in ["a", "b", "c"] {
            store.save(save("n", k, &o, 1, json!(1))).await.unwrap();
        }
        let page = store
            .list(ListCheckpoints {
                namespace: Some("n".into()),
                limit: Some(50),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(page.items.len(), 2);
        assert!(page.next_cursor.is_some());
    }

    /// Issue 13: `count` answers exactly what listing page after page counts by the first
    /// page that reaches the cap (the artifact service's per-thread count), whatever the
    /// page size and the store's page cap, and counts only what the query selects.
    #[tokio::test]
    async fn count_is_what_paging_through_the_listing_counts() {
        let o = Ownership {
            tenant_id: Some("t".into()),
            ..Ownership::default()
        };
        for max_page in [2u64, 3, 500] {
            let store =
                MemoryStore::new(MemoryLimits::resolve(None, None, Some(max_page)).unwrap());
            for i in 0..23 {
                store
                    .save(save("n", &format!("th:{i:02}"), &o, 1, json!(i)))
                    .await
                    .unwrap();
                // Not selected: another owner, another prefix, another namespace.
                store
                    .save(save(
                        "n",
                        &format!("th:{i:02}"),
                        &Ownership::default(),
                        1,
                        json!(i),
                    ))
                    .await
                    .unwrap();
                store
                    .save(save("n", &format!("tz:{i:02}"), &o, 1, json!(i)))
                    .await
                    .unwrap();
                store
                    .save(save("m", &format!("th:{i:02}"), &o, 1, json!(i)))
                    .await
                    .unwrap();
            }
            for cap in [0u64, 1, 2, 3, 5, 7, 22, 23, 24, 200, 201] {
                let q = ListCheckpoints {
                    namespace: Some("n".into()),
                    key_prefix: Some("th:".into()),
                    owner: o.clone(),
                    exact_owner: true,
                    limit: Some(u32::try_from(cap.min(200)).unwrap()),
                    ..ListCheckpoints::default()
                };
                let listed = crate::store::conformance::listed_count(&store, &q, cap).await;
                let counted = store.count(&q, cap).unwrap().await.unwrap();
                assert_eq!(counted, listed, "max page {max_page}, cap {cap}");
            }
        }
    }

    #[test]
    fn limits_outside_one_to_hard_are_range_errors() {
        for (r, b, p) in [
            (Some(0), None, None),
            (Some(1_000_001), None, None),
            (None, Some(0), None),
            (None, Some(16 * 1024 * 1024 + 1), None),
            (None, None, Some(0)),
            (None, None, Some(1001)),
        ] {
            let e = MemoryLimits::resolve(r, b, p).unwrap_err();
            assert_eq!(e.class_name(), "RangeError");
        }
        assert_eq!(
            MemoryLimits::resolve(None, None, None).unwrap(),
            MemoryLimits::default()
        );
    }
}
