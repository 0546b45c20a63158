//! What a database store remembers of its own most recent writes (issue 13): the value
//! text each left under its key, at the version it wrote, with the saver's memo of it
//! ([`ValueMemo`]), so that a caller about to replace a record this process just wrote
//! (the artifact service's `approve` after `attach`, `revise` after `approve`) needs no
//! read first. A hint, never an answer: another connection or process may have written
//! since. A replacement computed from it is written with
//! [`super::CheckpointStore::write_over`], which the store refuses as a conflict unless
//! the stored value is still exactly this text at this version; the caller then reads
//! and tries again.

use super::{Capped, CheckpointKey, Ownership, SaveCheckpoint, ValueMemo};
use crate::error::{PrismError, Result};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// A store's own last write under a key: see the module.
#[derive(Clone, Debug)]
pub struct RecentWrite {
    /// The version it wrote.
    pub version: u64,
    /// The value text it wrote.
    pub text: Arc<str>,
    /// The saver's memo of `text`, when it handed one (taken by the first loader that
    /// replaces the value, as the memory store's).
    pub memo: Option<ValueMemo>,
}

/// `req`, a write over a remembered one, replaces a version (a create or an unconditional
/// write cannot be one).
pub fn require_replace(req: &SaveCheckpoint) -> Result<()> {
    match req.expected_version {
        Some(v) if v > 0 => Ok(()),
        _ => Err(not_a_replace()),
    }
}

/// What [`require_replace`] answers a write that is no replacement.
pub fn not_a_replace() -> PrismError {
    PrismError::internal("a write over a remembered one must compare and swap a version")
}

/// How many writes are remembered, the most recent ones.
pub const RECENT_KEPT: usize = 4096;
/// The most value text the remembered writes hold, in bytes.
pub const RECENT_TEXT_BYTES: usize = 4 << 20;
/// A longer value text is not remembered (the read it saves is small beside its write).
pub const RECENT_TEXT_MAX: usize = 64 << 10;

/// Where a write is remembered: its namespace, key and owner key, each length-prefixed
/// (no separator can be forged by a key).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Slot(String);

impl Slot {
    /// The slot of `owner`'s checkpoint `key` in `namespace`.
    pub fn of(namespace: &str, key: &str, owner: &Ownership) -> Self {
        Self::new(namespace, key, &owner.owner_key())
    }

    fn new(namespace: &str, key: &str, owner_key: &str) -> Self {
        use std::fmt::Write;
        let mut s = String::with_capacity(namespace.len() + key.len() + owner_key.len() + 24);
        for part in [namespace, key] {
            // Writing a length into a String cannot fail.
            let _ = write!(s, "{}:", part.len());
            s.push_str(part);
        }
        s.push_str(owner_key);
        Self(s)
    }
}

/// The remembered writes: at most [`RECENT_KEPT`] holding at most [`RECENT_TEXT_BYTES`],
/// the least recently written forgotten first.
#[derive(Default)]
pub struct RecentWrites(Mutex<Kept>);

#[derive(Default)]
struct Kept {
    /// Each slot's write and the sequence number it was remembered as.
    by_slot: HashMap<Slot, (u64, RecentWrite)>,
    /// `(seq, slot)`, oldest first; an element whose slot was remembered again since (or
    /// forgotten) is stale and skipped.
    order: VecDeque<(u64, Slot)>,
    text_bytes: usize,
    next_seq: u64,
}

impl Kept {
    fn remove(&mut self, slot: &Slot) {
        if let Some((_, w)) = self.by_slot.remove(slot) {
            self.text_bytes -= w.text.len();
        }
    }

    fn is_live(&self, (seq, slot): &(u64, Slot)) -> bool {
        self.by_slot.get(slot).is_some_and(|(s, _)| s == seq)
    }

    /// Forget the oldest until both bounds hold; drop stale order elements once they
    /// outnumber the live ones (so each write pays O(1) amortized).
    fn trim(&mut self) {
        while self.by_slot.len() > RECENT_KEPT || self.text_bytes > RECENT_TEXT_BYTES {
            let Some(e) = self.order.pop_front() else {
                break;
            };
            if self.is_live(&e) {
                self.remove(&e.1);
            }
        }
        if self.order.len() > 2 * self.by_slot.len() + 64 {
            let mut order = std::mem::take(&mut self.order);
            order.retain(|e| self.is_live(e));
            self.order = order;
        }
    }
}

impl RecentWrites {
    /// Remember `write` under `slot`, unless a write of a higher version is remembered
    /// there (two writes of one key may finish in either order).
    pub fn remember(&self, slot: Slot, write: RecentWrite) {
        if write.text.len() > RECENT_TEXT_MAX {
            self.forget(&slot);
            return;
        }
        let mut kept = crate::util::sync::lock(&self.0);
        if kept
            .by_slot
            .get(&slot)
            .is_some_and(|(_, w)| w.version > write.version)
        {
            return;
        }
        kept.remove(&slot);
        let seq = kept.next_seq;
        kept.next_seq += 1;
        kept.text_bytes += write.text.len();
        kept.order.push_back((seq, slot.clone()));
        kept.by_slot.insert(slot, (seq, write));
        kept.trim();
    }

    /// After a write of `version` under `slot` (with the saver's `memo`): remember the
    /// value text it wrote, or forget the slot when it failed; the write's outcome.
    pub fn settle(
        &self,
        slot: Slot,
        version: u64,
        memo: Option<ValueMemo>,
        written: Result<String>,
    ) -> Result<()> {
        match written {
            Ok(text) => {
                let write = RecentWrite {
                    version,
                    text: text.into(),
                    memo,
                };
                self.remember(slot, write);
                Ok(())
            }
            Err(e) => {
                self.forget(&slot);
                Err(e)
            }
        }
    }

    /// After a capped create of `version` under `slot` ([`super::CheckpointStore::create_capped`]:
    /// the value text it wrote, or the count of a full listing): the text is remembered;
    /// a create that wrote nothing (the listing full, the key taken, a failure) forgets
    /// the slot, as any write that did not land. The create's outcome.
    pub fn settle_capped(
        &self,
        slot: Slot,
        version: u64,
        memo: Option<ValueMemo>,
        out: Result<std::result::Result<String, u64>>,
    ) -> Result<Capped> {
        let written = match out {
            Ok(Err(count)) => {
                self.forget(&slot);
                return Ok(Capped::Full(count));
            }
            Ok(Ok(text)) => Ok(text),
            Err(e) => Err(e),
        };
        self.settle(slot, version, memo, written)
            .map(|()| Capped::Saved)
    }

    /// Forget what `slot` holds (a write failed there, another kind of write or a delete
    /// happened).
    pub fn forget(&self, slot: &Slot) {
        crate::util::sync::lock(&self.0).remove(slot);
    }

    /// The write remembered for `key` (see [`super::CheckpointStore::recent_write`]).
    pub fn recall_key(&self, key: &CheckpointKey) -> Option<RecentWrite> {
        self.recall(&Slot::of(&key.namespace, &key.key, &key.owner))
    }

    /// The write remembered under `slot`.
    fn recall(&self, slot: &Slot) -> Option<RecentWrite> {
        crate::util::sync::lock(&self.0)
            .by_slot
            .get(slot)
            .map(|(_, w)| w.clone())
    }

    #[cfg(test)]
    fn counts(&self) -> (usize, usize, usize) {
        let kept = crate::util::sync::lock(&self.0);
        (kept.by_slot.len(), kept.order.len(), kept.text_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(version: u64, text: &str) -> RecentWrite {
        RecentWrite {
            version,
            text: text.into(),
            memo: None,
        }
    }

    #[test]
    fn slots_cannot_be_forged_by_separators_in_keys() {
        assert_ne!(Slot::new("a:1", "b", "{}"), Slot::new("a", "1b", "{}"));
        assert_ne!(Slot::new("ns", "k", "{}"), Slot::new("ns", "k{", "}"));
    }

    #[test]
    fn the_higher_version_stays_and_forget_drops_it() {
        let r = RecentWrites::default();
        let s = Slot::new("ns", "k", "{}");
        r.remember(s.clone(), write(3, "\"three\""));
        r.remember(s.clone(), write(2, "\"two\""));
        assert_eq!(r.recall(&s).unwrap().version, 3);
        assert_eq!(&*r.recall(&s).unwrap().text, "\"three\"");
        r.remember(s.clone(), write(4, "\"four\""));
        assert_eq!(r.recall(&s).unwrap().version, 4);
        assert_eq!(r.counts().2, "\"four\"".len());
        r.forget(&s);
        assert!(r.recall(&s).is_none());
        assert_eq!(r.counts().2, 0);
        // After a forget (a delete), a lower version (a new record) is remembered.
        r.remember(s.clone(), write(1, "1"));
        assert_eq!(r.recall(&s).unwrap().version, 1);
        // A text past the per-write bound is not kept, and forgets the older one.
        r.remember(s.clone(), write(2, &"x".repeat(RECENT_TEXT_MAX + 1)));
        assert!(r.recall(&s).is_none());
    }

    #[test]
    fn both_bounds_hold_the_oldest_forgotten_first() {
        let r = RecentWrites::default();
        let slot = |i: usize| Slot::new("ns", &format!("k{i}"), "{}");
        for i in 0..RECENT_KEPT + 10 {
            r.remember(slot(i), write(1, "1"));
            // Writing one slot again and again leaves stale order elements behind.
            r.remember(slot(0), write(i as u64 + 2, "1"));
        }
        let (n, order, _) = r.counts();
        assert_eq!(n, RECENT_KEPT);
        assert!(order <= 2 * n + 64, "{order}");
        // The oldest went; slot 0, written last, stays.
        assert!(r.recall(&slot(1)).is_none());
        assert!(r.recall(&slot(RECENT_KEPT + 9)).is_some());
        assert!(r.recall(&slot(0)).is_some());

        let big = "y".repeat(RECENT_TEXT_MAX);
        for i in 0..(RECENT_TEXT_BYTES / RECENT_TEXT_MAX) + 5 {
            r.remember(slot(100_000 + i), write(1, &big));
        }
        assert!(r.counts().2 <= RECENT_TEXT_BYTES);
        assert!(r.recall(&slot(100_000)).is_none());
    }
}
