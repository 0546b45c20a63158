//! Bindings for `crate::store`: the native store handle every store is seen through
//! (memory, SQLite, a host's JavaScript store), and the factories.
//!
//! Other bindings (the artifact service) take `&CheckpointStoreHandle` and clone `inner`.

// Under `cargo test` nothing calls the exported functions (Node does).

use super::call_target::CallTarget;
use super::calls::CallPort;
use super::guard;
use crate::error::PrismError;
use crate::store::{
    self, BesideText, CheckpointStore, HostCaller, HostCheckpointStore, HostOp, MemoryStore,
};
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::Env;
use napi::Status;
use napi_derive::napi;
use std::sync::Arc;

/// A checkpoint store as JavaScript holds it. `js/store.js` wraps it in an object with
/// exactly the `CheckpointStore` interface; its methods take and answer JSON text.
#[napi]
pub struct CheckpointStoreHandle {
    pub(crate) inner: Arc<dyn CheckpointStore>,
}

impl CheckpointStoreHandle {
    pub(crate) fn new(inner: Arc<dyn CheckpointStore>) -> Self {
        Self { inner }
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> crate::error::Result<String> {
    serde_json::to_string(v)
        .map_err(|e| PrismError::internal(format!("cannot encode a result: {e}")))
}

/// The store operation a `start` call names (`js/store.js` numbers them so).
const SAVE: u32 = 0;
const LOAD: u32 = 1;
const LIST: u32 = 2;
const DELETE: u32 = 3;

async fn run_op(
    inner: Arc<dyn CheckpointStore>,
    op: u32,
    input: String,
) -> crate::error::Result<String> {
    match op {
        SAVE => {
            // A store that keeps text keeps the value's text as JSON.stringify wrote it.
            let saved = match inner.beside_text() {
                BesideText::Value => inner.save_text(store::parse_save(&input)?, None).await?,
                BesideText::Memo => {
                    let (req, value) = store::parse_save_text(&input)?;
                    let value = value.to_string();
                    inner.save_text(req, Some(value)).await?
                }
            };
            Ok(saved.text().into_owned())
        }
        LOAD => {
            let key = store::parse_key(&input)?;
            Ok(match inner.load_text(&key).await? {
                Some(cp) => cp.text().into_owned(),
                None => "null".to_string(),
            })
        }
        LIST => {
            let q = store::parse_list(&input)?;
            Ok(inner.list_text(q).await?.to_text())
        }
        DELETE => {
            let (key, expected) = store::parse_delete(&input)?;
            to_json(&inner.delete(&key, expected).await?)
        }
        other => Err(PrismError::internal(format!(
            "unknown store operation {other}"
        ))),
    }
}

#[napi]
impl CheckpointStoreHandle {
    /// This store's calls, completing through `port`, for `startCall(target, op, input,
    /// token)` (`call_target.rs`): store operation `op` (0 save, 1 load, 2 list, 3 delete)
    /// on the JSON text of its input, answering the result's JSON text when it finished on
    /// this thread, else `null` and the text arrives through the port's `done(token, …)`
    /// (see `calls.rs`). Admitted synchronously, so a `close()` after a call waits for it.
    #[napi(ts_return_type = "object")]
    pub fn call_target(&self, port: &CallPort) -> CallTarget {
        let inner = self.inner.clone();
        let port = port.clone();
        CallTarget::of(Box::new(move |env, op, input, token| {
            let ticket = inner.admit().map_err(super::to_js_error)?;
            let inner = inner.clone();
            port.start(env, token, async move {
                let out = run_op(inner, op, input).await;
                drop(ticket);
                out
            })
        }))
    }
}

/// `createMemoryCheckpointStore(options)`; `options` is JSON text of an object.
#[napi]
pub fn create_memory_checkpoint_store(options: String) -> napi::Result<CheckpointStoreHandle> {
    guard(|| {
        let limits = store::options::memory_limits_json(&options)?;
        Ok(CheckpointStoreHandle::new(Arc::new(MemoryStore::new(
            limits,
        ))))
    })
}

/// A host method: called with JSON text of its argument, answers a promise of the JSON
/// text of the result envelope (see `crate::store::host`). Weak: a host store never keeps
/// the process alive by itself.
type HostFn = ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

struct TsfnCaller {
    save: HostFn,
    load: HostFn,
    list: HostFn,
    delete: HostFn,
}

impl HostCaller for TsfnCaller {
    fn call(
        &self,
        op: HostOp,
        request: String,
    ) -> store::BoxFuture<'_, crate::error::Result<String>> {
        let f = match op {
            HostOp::Save => &self.save,
            HostOp::Load => &self.load,
            HostOp::List => &self.list,
            HostOp::Delete => &self.delete,
        };
        Box::pin(async move {
            let fail = |e: napi::Error| {
                PrismError::internal(format!(
                    "host checkpoint store: {} could not be called: {}",
                    op.method(),
                    e.reason
                ))
            };
            let promise = f.call_async_catch(request).await.map_err(fail)?;
            promise.await.map_err(fail)
        })
    }
}

/// The host store bridge: four functions that each take JSON text and answer a promise
/// of an envelope. `js/store.js` builds them around a host object's methods.
#[napi]
pub fn create_host_checkpoint_store(
    #[napi(ts_arg_type = "(json: string) => Promise<string>")] save: HostFn,
    #[napi(ts_arg_type = "(json: string) => Promise<string>")] load: HostFn,
    #[napi(ts_arg_type = "(json: string) => Promise<string>")] list: HostFn,
    #[napi(ts_arg_type = "(json: string) => Promise<string>")] remove: HostFn,
) -> napi::Result<CheckpointStoreHandle> {
    guard(|| {
        let caller = TsfnCaller {
            save,
            load,
            list,
            delete: remove,
        };
        Ok(CheckpointStoreHandle::new(Arc::new(
            HostCheckpointStore::new(caller),
        )))
    })
}

/// The database behind a [`PersistenceHandle`].
#[derive(Clone)]
enum Database {
    Sqlite(Arc<store::SqlitePersistence>),
    Postgres(Arc<store::PostgresPersistence>),
}

/// What `createSqlitePersistence(options)` and `createPostgresPersistence(options)` answer:
/// the database and its checkpoint store.
#[napi]
pub struct PersistenceHandle {
    db: Database,
    checkpoints: Arc<dyn CheckpointStore>,
}

#[napi]
impl PersistenceHandle {
    /// The checkpoint store over this database.
    #[napi]
    pub fn checkpoints(&self) -> CheckpointStoreHandle {
        CheckpointStoreHandle::new(self.checkpoints.clone())
    }

    /// Refuse every operation requested from now on (at once, on this thread), wait for
    /// work in flight, close the database (or pool). Idempotent. Completes like a store call.
    #[napi(ts_return_type = "string | null")]
    pub fn close(&self, env: &Env, port: &CallPort, token: u32) -> napi::Result<Option<String>> {
        match &self.db {
            Database::Sqlite(db) => db.begin_close(),
            Database::Postgres(db) => db.begin_close(),
        }
        let db = self.db.clone();
        port.start(env, token, async move {
            match db {
                Database::Sqlite(db) => db.close().await?,
                Database::Postgres(db) => db.close().await?,
            }
            Ok("null".to_string())
        })
    }
}

/// Test helper (feature `test-exports`), not wrapped by `js/store.js`.
#[cfg(feature = "test-exports")]
#[napi]
impl PersistenceHandle {
    /// `PRAGMA integrity_check` rows of a SQLite database.
    #[napi]
    pub async fn integrity_check(&self) -> napi::Result<Vec<String>> {
        let db = self.db.clone();
        super::guard_async(async move {
            match db {
                Database::Sqlite(db) => db.query_strings("PRAGMA integrity_check".into()).await,
                Database::Postgres(_) => Err(PrismError::internal("not a SQLite database")),
            }
        })
        .await
    }
}

/// `options` is JSON text of `{ filename, busyTimeoutMs? }`.
#[napi]
pub fn create_sqlite_persistence(options: String) -> napi::Result<PersistenceHandle> {
    guard(|| {
        let persistence =
            store::SqlitePersistence::new(store::options::sqlite_options_json(&options)?);
        Ok(PersistenceHandle {
            checkpoints: persistence.checkpoints(),
            db: Database::Sqlite(Arc::new(persistence)),
        })
    })
}

/// `options` is JSON text of `{ connectionString, maxConnections?, schema?, connectTimeoutMs? }`.
#[napi]
pub fn create_postgres_persistence(options: String) -> napi::Result<PersistenceHandle> {
    guard(|| {
        let options = store::options::postgres_options_json(&options)?;
        // Building the pool needs the runtime context (its timers); no connection is made.
        let persistence = napi::bindgen_prelude::within_runtime_if_available(|| {
            store::PostgresPersistence::new(options)
        })?;
        Ok(PersistenceHandle {
            checkpoints: persistence.checkpoints(),
            db: Database::Postgres(Arc::new(persistence)),
        })
    })
}

/// Constants the JS layer charges while it writes a store call's input:
/// `{ maxInputBytes, maxDepth }` (the wire's own limits, so JS never refuses what the
/// native side would accept).
#[napi]
pub fn store_constants() -> String {
    serde_json::json!({
        "maxInputBytes": store::wire::MAX_INPUT_BYTES,
        "maxDepth": crate::json::MAX_DEPTH,
    })
    .to_string()
}
