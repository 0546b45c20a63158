//! The bounded in-memory store: for tests and single-process hosts. Past `max_records`
//! the oldest created checkpoint is evicted (insertion order; updates keep their place).

use super::{
    decode_cursor, encode_cursor, invalid, now_iso8601, page_size, validate_target, value_bytes,
    BoxFuture, Checkpoint, CheckpointStore, ListCheckpoints, Ownership, Page, SaveCheckpoint,
    PAGE_SIZE_HARD, VALUE_BYTES_HARD,
};
use crate::error::{ArtifactReason, PrismError, Result};
use std::collections::BTreeMap;
use std::ops::Bound;
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
    pub const DEFAULT_MAX_PAGE_SIZE: u32 = super::PAGE_SIZE_DEFAULT;

    /// Resolve optional caps: absent means the default; present must be `1..=hard`.
    pub fn resolve(
        max_records: Option<u64>,
        max_value_bytes: Option<u64>,
        max_page_size: Option<u64>,
    ) -> Result<Self> {
        let pick = super::resolve_cap;
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

type Id = (String, String);

struct Entry {
    seq: u64,
    cp: Checkpoint,
}

#[derive(Default)]
struct State {
    by_id: BTreeMap<Id, Entry>,
    /// Creation order: sequence number → id, for eviction.
    order: BTreeMap<u64, Id>,
    next_seq: u64,
}

/// A bounded in-memory [`CheckpointStore`].
pub struct MemoryStore {
    limits: MemoryLimits,
    state: Mutex<State>,
}

impl MemoryStore {
    pub fn new(limits: MemoryLimits) -> Self {
        Self {
            limits,
            state: Mutex::new(State::default()),
        }
    }

    pub fn limits(&self) -> MemoryLimits {
        self.limits
    }

    /// Number of checkpoints held.
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // No code path panics while holding the lock; recover the data if one ever did.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn save_sync(&self, req: SaveCheckpoint) -> Result<Checkpoint> {
        req.validate()?;
        let bytes = value_bytes(&req.value);
        if bytes > self.limits.max_value_bytes {
            return Err(PrismError::artifact(
                ArtifactReason::RecordTooLarge,
                format!(
                    "checkpoint value is {bytes} bytes, more than maxValueBytes ({})",
                    self.limits.max_value_bytes
                ),
            ));
        }
        let now = now_iso8601();
        let mut st = self.lock();
        let id = (req.namespace.clone(), req.key.clone());
        if let Some(entry) = st.by_id.get_mut(&id) {
            if entry.cp.ownership != req.ownership {
                return Err(PrismError::conflict(format!(
                    "checkpoint {:?} is not writable by this owner",
                    req.key
                )));
            }
            if let Some(expected) = req.expected_version {
                if expected != entry.cp.version {
                    return Err(conflict_version(&req.key, expected, Some(entry.cp.version)));
                }
            }
            let version = entry
                .cp
                .version
                .checked_add(1)
                .filter(|v| *v <= super::MAX_SAFE_INTEGER)
                .ok_or_else(|| invalid("checkpoint version would overflow"))?;
            entry.cp.version = version;
            entry.cp.category = req.category;
            entry.cp.value = req.value;
            entry.cp.updated_at = now;
            return Ok(entry.cp.clone());
        }
        if let Some(expected) = req.expected_version {
            if expected != 0 {
                return Err(conflict_version(&req.key, expected, None));
            }
        }
        let cp = Checkpoint {
            namespace: req.namespace,
            key: req.key,
            version: 1,
            ownership: req.ownership,
            category: req.category,
            value: req.value,
            created_at: now.clone(),
            updated_at: now,
        };
        let seq = st.next_seq;
        st.next_seq = st.next_seq.wrapping_add(1);
        st.order.insert(seq, id.clone());
        st.by_id.insert(
            id,
            Entry {
                seq,
                cp: cp.clone(),
            },
        );
        while st.by_id.len() > self.limits.max_records {
            let Some((_, oldest)) = st.order.pop_first() else {
                break;
            };
            st.by_id.remove(&oldest);
        }
        Ok(cp)
    }

    fn load_sync(
        &self,
        namespace: &str,
        key: &str,
        ownership: &Ownership,
    ) -> Result<Option<Checkpoint>> {
        validate_target(namespace, key, ownership)?;
        let st = self.lock();
        Ok(st
            .by_id
            .get(&(namespace.to_string(), key.to_string()))
            .filter(|e| &e.cp.ownership == ownership)
            .map(|e| e.cp.clone()))
    }

    fn list_sync(&self, query: ListCheckpoints) -> Result<Page<Checkpoint>> {
        query.validate()?;
        let limit = page_size(query.limit, self.limits.max_page_size) as usize;
        let prefix = query.prefix.unwrap_or_default();
        let lower = match &query.cursor {
            Some(c) => {
                let after = decode_cursor(c)?;
                if after.as_str() >= prefix.as_str() {
                    Bound::Excluded((query.namespace.clone(), after))
                } else {
                    Bound::Included((query.namespace.clone(), prefix.clone()))
                }
            }
            None => Bound::Included((query.namespace.clone(), prefix.clone())),
        };
        let st = self.lock();
        let mut items = Vec::new();
        let mut more = false;
        for ((ns, key), entry) in st.by_id.range((lower, Bound::Unbounded)) {
            if ns != &query.namespace || !key.starts_with(&prefix) {
                break;
            }
            if query
                .ownership
                .as_ref()
                .is_some_and(|o| o != &entry.cp.ownership)
            {
                continue;
            }
            if items.len() == limit {
                more = true;
                break;
            }
            items.push(entry.cp.clone());
        }
        let next_cursor = if more {
            items.last().map(|c: &Checkpoint| encode_cursor(&c.key))
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    fn delete_sync(
        &self,
        namespace: &str,
        key: &str,
        ownership: &Ownership,
        expected_version: Option<u64>,
    ) -> Result<bool> {
        validate_target(namespace, key, ownership)?;
        let mut st = self.lock();
        let id = (namespace.to_string(), key.to_string());
        let Some(entry) = st.by_id.get(&id) else {
            return Ok(false);
        };
        if &entry.cp.ownership != ownership {
            return Err(PrismError::conflict(format!(
                "checkpoint {key:?} is not deletable by this owner"
            )));
        }
        if let Some(expected) = expected_version {
            if expected != entry.cp.version {
                return Err(conflict_version(key, expected, Some(entry.cp.version)));
            }
        }
        let seq = entry.seq;
        st.by_id.remove(&id);
        st.order.remove(&seq);
        Ok(true)
    }
}

pub(crate) fn conflict_version(key: &str, expected: u64, actual: Option<u64>) -> PrismError {
    match actual {
        Some(a) => PrismError::conflict(format!(
            "checkpoint {key:?} is at version {a}, not the expected version {expected}"
        )),
        None => PrismError::conflict(format!(
            "checkpoint {key:?} does not exist (expected version {expected})"
        )),
    }
}

impl CheckpointStore for MemoryStore {
    fn save(&self, req: SaveCheckpoint) -> BoxFuture<'_, Result<Checkpoint>> {
        let r = self.save_sync(req);
        Box::pin(async move { r })
    }

    fn load<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        ownership: &'a Ownership,
    ) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        let r = self.load_sync(namespace, key, ownership);
        Box::pin(async move { r })
    }

    fn list(&self, query: ListCheckpoints) -> BoxFuture<'_, Result<Page<Checkpoint>>> {
        let r = self.list_sync(query);
        Box::pin(async move { r })
    }

    fn delete<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        ownership: &'a Ownership,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<bool>> {
        let r = self.delete_sync(namespace, key, ownership, expected_version);
        Box::pin(async move { r })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner() -> Ownership {
        Ownership {
            tenant_id: Some("t".into()),
            ..Default::default()
        }
    }

    fn save(ns: &str, key: &str, v: serde_json::Value) -> SaveCheckpoint {
        SaveCheckpoint {
            namespace: ns.into(),
            key: key.into(),
            ownership: owner(),
            category: None,
            value: v,
            expected_version: None,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance() {
        let store = MemoryStore::new(MemoryLimits::default());
        super::super::conformance::run(&store).await;
    }

    #[tokio::test]
    async fn evicts_the_oldest_created_past_max_records() {
        let store = MemoryStore::new(MemoryLimits::resolve(Some(3), None, None).unwrap());
        for k in ["a", "b", "c"] {
            store.save(save("n", k, json!(k))).await.unwrap();
        }
        // Updating "a" keeps its place in creation order.
        store.save(save("n", "a", json!("a2"))).await.unwrap();
        store.save(save("n", "d", json!("d"))).await.unwrap();
        assert_eq!(store.len(), 3);
        assert!(store.load("n", "a", &owner()).await.unwrap().is_none());
        for k in ["b", "c", "d"] {
            assert!(store.load("n", k, &owner()).await.unwrap().is_some(), "{k}");
        }
        // A deleted record frees its slot without evicting another.
        assert!(store.delete("n", "b", &owner(), None).await.unwrap());
        store.save(save("n", "e", json!("e"))).await.unwrap();
        for k in ["c", "d", "e"] {
            assert!(store.load("n", k, &owner()).await.unwrap().is_some(), "{k}");
        }
    }

    #[tokio::test]
    async fn refuses_values_over_max_value_bytes_and_keeps_the_old_value() {
        let store = MemoryStore::new(MemoryLimits::resolve(None, Some(10), None).unwrap());
        store.save(save("n", "k", json!("12345678"))).await.unwrap();
        let e = store
            .save(save("n", "k", json!("123456789")))
            .await
            .unwrap_err();
        assert_eq!(e.reason(), Some("record_too_large"));
        let cp = store.load("n", "k", &owner()).await.unwrap().unwrap();
        assert_eq!(cp.value, json!("12345678"));
        assert_eq!(cp.version, 1);
    }

    #[tokio::test]
    async fn page_size_is_capped_by_max_page_size() {
        let store = MemoryStore::new(MemoryLimits::resolve(None, None, Some(2)).unwrap());
        for k in ["a", "b", "c"] {
            store.save(save("n", k, json!(1))).await.unwrap();
        }
        let page = store
            .list(ListCheckpoints {
                namespace: "n".into(),
                limit: Some(50),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(page.items.len(), 2);
        assert!(page.next_cursor.is_some());
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
