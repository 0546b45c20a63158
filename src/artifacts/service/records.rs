//! How the service keeps its records: the checkpoint key of a record, loading (another
//! owner's record is absent), compare-and-swap saves and counting a thread's artifacts.

use super::{map_save_error, not_found, AbortFlag, ArtifactService, Ctx, ResultText};
use crate::artifacts::input;
use crate::artifacts::model::Record;
use crate::artifacts::{record_key, CATEGORY, NAMESPACE};
use crate::error::{ErrorKind, PrismError, Result};
use crate::json::Fields;
use crate::store::{
    BesideText, Capped, CheckpointKey, CheckpointText, ListCheckpoints, Ownership, RecentWrite,
    SaveCheckpoint, ValueMemo,
};
use std::borrow::Cow;

/// A record loaded under `key` at checkpoint `version`.
pub(super) struct Loaded {
    pub version: u64,
    pub record: Record,
    /// The key it was loaded under: a replacing caller saves under it.
    pub key: CheckpointKey,
    /// The store's memory of this service's own last write of it, when the record was
    /// taken from there rather than read (a hint: [`crate::store::CheckpointStore::recent_write`]).
    pub over: Option<RecentWrite>,
}

/// What a loader does with the record it loads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Use {
    Read,
    /// Saves a changed record over it (revise, approve, reject).
    Replace,
    /// As [`Use::Replace`], from the store's memory of its own last write of it where it
    /// has one ([`Loaded::over`]).
    ReplaceRecent,
}

impl ArtifactService {
    pub(super) fn key(
        &self,
        thread: &str,
        artifact: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> CheckpointKey {
        CheckpointKey {
            namespace: NAMESPACE.into(),
            key: record_key(thread, artifact),
            owner: owner.clone(),
            signal: abort.signal(),
        }
    }

    /// The record and its checkpoint version, or `None`: absent, another owner's (a
    /// host store's conflict on load included), or not the record this key names.
    pub(super) async fn load(
        &self,
        thread: &str,
        artifact: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> Result<Option<(u64, Record)>> {
        Ok(self
            .load_for(thread, artifact, owner, Use::Read, abort)
            .await?
            .map(|loaded| (loaded.version, loaded.record)))
    }

    /// [`Self::load`] by a caller that reads (`Use::Read`) or replaces the record.
    async fn load_for(
        &self,
        thread: &str,
        artifact: &str,
        owner: &Ownership,
        then: Use,
        abort: &AbortFlag,
    ) -> Result<Option<Loaded>> {
        abort.check()?;
        let key = self.key(thread, artifact, owner, abort);
        if then == Use::ReplaceRecent {
            if let Some(over) = self.store.recent_write(&key) {
                if let Some(record) = Self::recalled(&over, thread, artifact, owner) {
                    return Ok(Some(Loaded {
                        version: over.version,
                        record,
                        key,
                        over: Some(over),
                    }));
                }
            }
        }
        let Some((key, cp)) = self.load_at(key, abort).await? else {
            return Ok(None);
        };
        let version = cp.version();
        Ok(self
            .record_named(&cp, thread, artifact, owner, then)?
            .map(|record| Loaded {
                version,
                record,
                key,
                over: None,
            }))
    }

    /// The record a store's memory of this service's own last write under its key holds
    /// (its memo, taken, or its text read), when that is the record `thread`/`artifact`
    /// name and `owner`'s; else `None` (load it).
    fn recalled(
        over: &RecentWrite,
        thread: &str,
        artifact: &str,
        owner: &Ownership,
    ) -> Option<Record> {
        let memo = over.memo.as_ref().and_then(|m| m.take::<Record>());
        let record = memo.or_else(|| Record::from_stored_text(&over.text).ok())?;
        let named = record.thread_id == thread && record.id == artifact;
        (named && Self::owns(owner, &record)).then_some(record)
    }

    /// The record's JSON text, or `None` as [`Self::load`]. A text this service saved
    /// and the store kept as given (`value_as_given`: the memory store) is the record's
    /// own text, written under this key and owner: answered as stored, not read and
    /// written again (issue 13). Any other text is read and checked as `load` does.
    pub(super) async fn load_text(
        &self,
        thread: &str,
        artifact: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> Result<Option<ResultText>> {
        let Some((_, cp)) = self.load_checkpoint(thread, artifact, owner, abort).await? else {
            return Ok(None);
        };
        if cp.value_as_given && cp.owner() == owner {
            return Ok(Some(ResultText::of(cp.value_text())));
        }
        Ok(self
            .record_named(&cp, thread, artifact, owner, Use::Read)?
            .map(|rec| ResultText::record(&rec)))
    }

    /// The record `cp` holds when it is `owner`'s and the one `thread`/`artifact` names.
    fn record_named(
        &self,
        cp: &CheckpointText,
        thread: &str,
        artifact: &str,
        owner: &Ownership,
        then: Use,
    ) -> Result<Option<Record>> {
        Ok(self
            .record_of_text(cp, owner, then)?
            .filter(|rec| rec.thread_id == thread && rec.id == artifact))
    }

    /// The checkpoint under the record's key, with that key, or `None`: absent, or
    /// another owner's (a host store's conflict on load).
    async fn load_checkpoint(
        &self,
        thread: &str,
        artifact: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> Result<Option<(CheckpointKey, CheckpointText)>> {
        abort.check()?;
        self.load_at(self.key(thread, artifact, owner, abort), abort)
            .await
    }

    /// [`Self::load_checkpoint`] under `key`.
    async fn load_at(
        &self,
        key: CheckpointKey,
        abort: &AbortFlag,
    ) -> Result<Option<(CheckpointKey, CheckpointText)>> {
        let cp = match self.store.load_text(&key).await {
            Ok(Some(cp)) => cp,
            Ok(None) => return Ok(None),
            Err(e) if e.kind == ErrorKind::CheckpointConflict => return Ok(None),
            Err(e) => return Err(e),
        };
        abort.check()?;
        Ok(Some((key, cp)))
    }

    /// The artifact record a checkpoint read as text holds, when it belongs to `owner`
    /// (the record's own owner members, when it has any, must agree too). A text the store answers with
    /// this service's memo of it (the memory store) is not parsed again: the memo is the
    /// record that text was written from (`save_request`). A caller that replaces the
    /// record takes the memo instead of copying it (`Use::Replace`); should its save not
    /// happen, the next load reads the text.
    pub(super) fn record_of_text(
        &self,
        cp: &CheckpointText,
        owner: &Ownership,
        then: Use,
    ) -> Result<Option<Record>> {
        if cp.owner() != owner {
            return Ok(None);
        }
        let memo = match (&cp.memo, then) {
            (Some(m), Use::Read) if cp.value_as_given => m.cloned::<Record>(),
            (Some(m), Use::Replace | Use::ReplaceRecent) if cp.value_as_given => m.take::<Record>(),
            _ => None,
        };
        let rec = memo.map_or_else(|| Record::from_stored_text(cp.value_text()), Ok);
        Self::mine(rec, cp.key(), owner)
    }

    /// The JSON text of the record `cp` holds when it is `owner`'s and belongs to
    /// `thread` (a listing by the key prefix `{thread}:` may meet a key of another
    /// thread), else `None`. A text this service saved and the store kept as given
    /// (`value_as_given`), whose memo says whose record it is, is answered as stored, as
    /// [`Self::load_text`] answers it; any other text is read and checked as `load` does,
    /// and the record written again.
    pub(super) fn listed_text<'c>(
        &self,
        cp: &'c CheckpointText,
        owner: &Ownership,
        thread: &str,
    ) -> Result<Option<Cow<'c, str>>> {
        if let Some(listed) = Self::with_memo(cp, owner, |rec| rec.thread_id == thread) {
            return Ok((listed == Some(true)).then(|| Cow::Borrowed(cp.value_text())));
        }
        Ok(self
            .record_of_text(cp, owner, Use::Read)?
            .filter(|rec| rec.thread_id == thread)
            .map(|rec| {
                let mut text = String::with_capacity(rec.text_capacity());
                rec.write_text(&mut text);
                Cow::Owned(text)
            }))
    }

    /// `f` of the record `cp` holds, borrowed from this service's memo of it (under the
    /// memo's lock), where the store kept the service's own text with its memo:
    /// `Some(Some(_))` when the record is `owner`'s ([`Self::mine`]'s rule),
    /// `Some(None)` when it is not, `None` when there is no such memo (read the text).
    fn with_memo<T>(
        cp: &CheckpointText,
        owner: &Ownership,
        f: impl FnOnce(&Record) -> T,
    ) -> Option<Option<T>> {
        if cp.owner() != owner || !cp.value_as_given {
            return None;
        }
        cp.memo
            .as_ref()?
            .peek(|rec: &Record| Self::owns(owner, rec).then(|| f(rec)))
    }

    /// Whether `owner` may see `rec`: the record's own owner members, when it has any,
    /// must be `owner`'s.
    fn owns(owner: &Ownership, rec: &Record) -> bool {
        rec.owner.is_unowned() || rec.owner == *owner
    }

    pub(super) fn mine(
        rec: std::result::Result<Record, serde_json::Error>,
        key: &str,
        owner: &Ownership,
    ) -> Result<Option<Record>> {
        let rec = rec.map_err(|e| {
            PrismError::internal(format!("stored artifact record {key} is malformed: {e}"))
        })?;
        Ok(Self::owns(owner, &rec).then_some(rec))
    }

    /// The record `threadId`/`artifactId` name, for a caller that reads it (`Use::Read`)
    /// or replaces it; `not_found` when [`Self::load`] finds none.
    pub(super) async fn load_required(
        &self,
        f: &Fields<'_>,
        ctx: &Ctx,
        then: Use,
        abort: &AbortFlag,
    ) -> Result<Loaded> {
        let thread = input::id(f, "threadId", &self.redactor)?;
        let artifact = input::id(f, "artifactId", &self.redactor)?;
        self.load_for(thread, artifact, &ctx.owner, then, abort)
            .await?
            .ok_or_else(|| not_found(thread, artifact))
    }

    /// `read` of the record `threadId`/`artifactId` name, for a caller that only reads it;
    /// `not_found` as [`Self::load_required`]. Where the memory store keeps this service's
    /// memo of the record's text, `read` borrows the memo (under its lock: `read` must not
    /// call the store) instead of a copy of it (issue 13); otherwise the record is read
    /// and checked as `load` does.
    pub(super) async fn read_required<R>(
        &self,
        f: &Fields<'_>,
        ctx: &Ctx,
        abort: &AbortFlag,
        read: impl Fn(&Record) -> Result<R>,
    ) -> Result<R> {
        let thread = input::id(f, "threadId", &self.redactor)?;
        let artifact = input::id(f, "artifactId", &self.redactor)?;
        let owner = &ctx.owner;
        let missing = || not_found(thread, artifact);
        let Some((_, cp)) = self.load_checkpoint(thread, artifact, owner, abort).await? else {
            return Err(missing());
        };
        let named = |rec: &Record| rec.thread_id == thread && rec.id == artifact;
        if let Some(found) = Self::with_memo(&cp, owner, |rec| named(rec).then(|| read(rec))) {
            return found.flatten().unwrap_or_else(|| Err(missing()));
        }
        let rec = self
            .record_named(&cp, thread, artifact, owner, Use::Read)?
            .ok_or_else(missing)?;
        read(&rec)
    }

    /// Compare-and-swap save of `rec` under `key` (the record's: [`Self::key`], or the
    /// one it was loaded under) over checkpoint version `expected`, as the reference's
    /// service writes: caller version `expected + 1`, category `artifact`. Over the
    /// store's memory of a write (`over`), the stored value must still be that write's.
    pub(super) async fn save(
        &self,
        rec: Record,
        text: &str,
        key: CheckpointKey,
        expected: u64,
        over: Option<&RecentWrite>,
        abort: &AbortFlag,
    ) -> Result<()> {
        abort.check()?;
        let req = self.save_request(rec, key, expected);
        match over {
            Some(over) => self.store.write_over(req, Some(text), over).await,
            None => self.store.write_text(req, Some(text)).await,
        }
        .map_err(map_save_error)
    }

    /// The save of `rec` under `key` over checkpoint version `expected` (its text goes
    /// beside it; the record itself becomes the memo of a store that keeps one).
    fn save_request(&self, rec: Record, key: CheckpointKey, expected: u64) -> SaveCheckpoint {
        let (value, memo) = match self.store.beside_text() {
            BesideText::Value => (rec.to_value(), None),
            BesideText::Memo => (serde_json::Value::Null, Some(ValueMemo::new(rec))),
        };
        SaveCheckpoint {
            namespace: key.namespace,
            key: key.key,
            owner: key.owner,
            version: expected.saturating_add(1),
            expected_version: Some(expected),
            fencing_token: None,
            value,
            category: Some(CATEGORY.into()),
            metadata: None,
            signal: key.signal,
            memo,
        }
    }

    /// The create of a new record, counted against the thread's cap in the same atomic
    /// step when the store can ([`crate::store::CheckpointStore::create_capped`]):
    /// `Some(Ok(Ok(())))` saved, `Some(Ok(Err(count)))` when the thread was full (nothing
    /// saved), `None` when the store cannot (the caller counts before and after).
    pub(super) async fn create_capped(
        &self,
        rec: &Record,
        text: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> Option<Result<std::result::Result<(), u64>>> {
        let cap = self.config.limits.artifacts_per_thread;
        let within = self.thread_count_query(&rec.thread_id, owner, cap, abort);
        if let Err(e) = abort.check() {
            return Some(Err(e));
        }
        let key = self.key(&rec.thread_id, &rec.id, owner, abort);
        let req = self.save_request(rec.clone(), key, 0);
        let created = self
            .store
            .create_capped(req, Some(text.to_string()), &within, cap)?;
        Some(match created.await.map_err(map_save_error) {
            Ok(Capped::Saved) => Ok(Ok(())),
            Ok(Capped::Full(n)) => Ok(Err(n)),
            Err(e) => Err(e),
        })
    }

    pub(super) fn thread_query(
        &self,
        thread: &str,
        owner: &Ownership,
        abort: &AbortFlag,
    ) -> ListCheckpoints {
        ListCheckpoints {
            namespace: Some(NAMESPACE.into()),
            key_prefix: Some(format!("{thread}:")),
            owner: owner.clone(),
            exact_owner: true,
            signal: abort.signal(),
            ..ListCheckpoints::default()
        }
    }

    /// The listing [`Self::count_thread`] counts.
    fn thread_count_query(
        &self,
        thread: &str,
        owner: &Ownership,
        cap: u64,
        abort: &AbortFlag,
    ) -> ListCheckpoints {
        let mut query = self.thread_query(thread, owner, abort);
        query.limit = Some(u32::try_from(cap.min(200)).unwrap_or(200));
        query
    }

    /// Artifacts of `thread` for `owner`, counted up to `cap`.
    pub(super) async fn count_thread(
        &self,
        thread: &str,
        owner: &Ownership,
        cap: u64,
        abort: &AbortFlag,
    ) -> Result<u64> {
        let mut count: u64 = 0;
        let mut query = self.thread_count_query(thread, owner, cap, abort);
        abort.check()?;
        if let Some(counted) = self.store.count(&query, cap) {
            return counted.await;
        }
        loop {
            abort.check()?;
            let page = self.store.list(query.clone()).await?;
            count = count.saturating_add(page.items.len() as u64);
            match page.next_cursor {
                Some(c) if count < cap && !page.items.is_empty() => query.cursor = Some(c),
                _ => return Ok(count),
            }
        }
    }
}
