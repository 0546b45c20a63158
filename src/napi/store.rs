//! Bindings for `crate::store`: the native store handle every store is seen through
//! (memory, SQLite, a host's JavaScript store), and the factories.
//!
//! Other bindings (the artifact service) take `&CheckpointStoreHandle` and clone `inner`.

// Under `cargo test` nothing calls the exported functions (Node does).

use super::calls::CallPort;
use super::{guard, guard_async};
use crate::error::PrismError;
use crate::json::Fields;
use crate::store::{
    self, CheckpointStore, HostCaller, HostCheckpointStore, HostOp, MemoryLimits, MemoryStore,
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
            let req = store::parse_save(&input)?;
            Ok(inner.save_text(req, None).await?.text.to_string())
        }
        LOAD => {
            let key = store::parse_key(&input)?;
            Ok(match inner.load_text(&key).await? {
                Some(cp) => cp.text.to_string(),
                None => "null".to_string(),
            })
        }
        LIST => {
            let q = store::parse_list(&input)?;
            to_json(&inner.list(q).await?)
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
    /// Start store operation `op` (0 save, 1 load, 2 list, 3 delete) on the JSON text of
    /// its input: the result's JSON text when it finished on this thread, else `null` and
    /// the text arrives through the port's `done(token, …)` (see `calls.rs`). Admitted
    /// synchronously, so a `close()` after this call waits for it.
    #[napi(ts_return_type = "string | null")]
    pub fn start(
        &self,
        env: &Env,
        port: &CallPort,
        op: u32,
        input: String,
        token: u32,
    ) -> napi::Result<Option<String>> {
        let ticket = self.inner.admit().map_err(super::to_js_error)?;
        let inner = self.inner.clone();
        port.start(env, token, async move {
            let out = run_op(inner, op, input).await;
            drop(ticket);
            out
        })
    }
}

fn invalid_owned(m: String) -> PrismError {
    store::invalid(m)
}

/// `createMemoryCheckpointStore(options)`; `options` is JSON text of an object.
#[napi]
pub fn create_memory_checkpoint_store(options: String) -> napi::Result<CheckpointStoreHandle> {
    guard(|| {
        let v = crate::json::parse(&options, invalid_owned)?;
        let f = Fields::new(&v, "options", invalid_owned)?;
        for k in f.object().keys() {
            if !["maxRecords", "maxValueBytes", "maxPageSize"].contains(&k.as_str()) {
                return Err(store::invalid(format!(
                    "options has an unknown field {k:?} (allowed: maxRecords, maxValueBytes, maxPageSize)"
                )));
            }
        }
        let limit = |name: &str| -> crate::error::Result<Option<u64>> {
            match f.get(name) {
                None => Ok(None),
                Some(v) => match crate::json::as_u64(v) {
                    Some(n) => Ok(Some(n)),
                    None if v.is_number() => Err(PrismError::range(format!(
                        "options.{name} must be a positive integer"
                    ))),
                    None => Err(store::invalid(format!(
                        "options.{name} must be a positive integer, got {}",
                        crate::json::type_name(v)
                    ))),
                },
            }
        };
        let limits = MemoryLimits::resolve(
            limit("maxRecords")?,
            limit("maxValueBytes")?,
            limit("maxPageSize")?,
        )?;
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
    save: HostFn,
    load: HostFn,
    list: HostFn,
    remove: HostFn,
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

/// `createSqlitePersistence(options)`: the database file and its checkpoint store.
#[napi]
pub struct SqlitePersistenceHandle {
    inner: Arc<store::SqlitePersistence>,
    checkpoints: Arc<dyn CheckpointStore>,
}

#[napi]
impl SqlitePersistenceHandle {
    /// The checkpoint store over this database.
    #[napi]
    pub fn checkpoints(&self) -> CheckpointStoreHandle {
        CheckpointStoreHandle::new(self.checkpoints.clone())
    }

    /// Test helper, not wrapped by `js/store.js`: `PRAGMA integrity_check` rows.
    #[napi]
    pub async fn integrity_check(&self) -> napi::Result<Vec<String>> {
        let inner = self.inner.clone();
        guard_async(async move { inner.query_strings("PRAGMA integrity_check".into()).await }).await
    }

    /// Refuse every operation requested from now on (at once, on this thread), wait for
    /// work in flight, close the database. Idempotent. Completes like a store call.
    #[napi(ts_return_type = "string | null")]
    pub fn close(&self, env: &Env, port: &CallPort, token: u32) -> napi::Result<Option<String>> {
        self.inner.begin_close();
        let inner = self.inner.clone();
        port.start(env, token, async move {
            inner.close().await?;
            Ok("null".to_string())
        })
    }
}

/// `options` is JSON text of `{ filename, busyTimeoutMs? }`.
#[napi]
pub fn create_sqlite_persistence(options: String) -> napi::Result<SqlitePersistenceHandle> {
    guard(|| {
        let v = crate::json::parse(&options, invalid_owned)?;
        let f = Fields::new(&v, "options", invalid_owned)?;
        for k in f.object().keys() {
            if !["filename", "busyTimeoutMs"].contains(&k.as_str()) {
                return Err(store::invalid(format!(
                    "options has an unknown field {k:?} (allowed: filename, busyTimeoutMs)"
                )));
            }
        }
        let filename = f.str("filename")?;
        let busy = match f.get("busyTimeoutMs") {
            None => None,
            Some(v) => match crate::json::as_u64(v) {
                Some(n) => Some(n),
                None if v.is_number() => {
                    return Err(PrismError::range(
                        "options.busyTimeoutMs must be a positive integer",
                    ))
                }
                None => {
                    return Err(store::invalid(format!(
                        "options.busyTimeoutMs must be a positive integer, got {}",
                        crate::json::type_name(v)
                    )))
                }
            },
        };
        let persistence = store::SqlitePersistence::new(store::SqliteOptions::new(filename, busy)?);
        let checkpoints = persistence.checkpoints();
        Ok(SqlitePersistenceHandle {
            inner: Arc::new(persistence),
            checkpoints,
        })
    })
}

/// `createPostgresPersistence(options)`: a pool over a PostgreSQL database.
#[napi]
pub struct PostgresPersistenceHandle {
    inner: Arc<store::PostgresPersistence>,
    checkpoints: Arc<dyn CheckpointStore>,
}

#[napi]
impl PostgresPersistenceHandle {
    /// The checkpoint store over this database.
    #[napi]
    pub fn checkpoints(&self) -> CheckpointStoreHandle {
        CheckpointStoreHandle::new(self.checkpoints.clone())
    }

    /// Refuse every operation requested from now on (at once, on this thread), wait for
    /// work in flight, close the pool. Idempotent. Completes like a store call.
    #[napi(ts_return_type = "string | null")]
    pub fn close(&self, env: &Env, port: &CallPort, token: u32) -> napi::Result<Option<String>> {
        self.inner.begin_close();
        let inner = self.inner.clone();
        port.start(env, token, async move {
            inner.close().await?;
            Ok("null".to_string())
        })
    }
}

fn opt_limit(f: &Fields<'_>, name: &str) -> crate::error::Result<Option<u64>> {
    match f.get(name) {
        None => Ok(None),
        Some(v) => match crate::json::as_u64(v) {
            Some(n) => Ok(Some(n)),
            None if v.is_number() => Err(PrismError::range(format!(
                "options.{name} must be a positive integer"
            ))),
            None => Err(store::invalid(format!(
                "options.{name} must be a positive integer, got {}",
                crate::json::type_name(v)
            ))),
        },
    }
}

/// `options` is JSON text of `{ connectionString, maxConnections?, schema?, connectTimeoutMs? }`.
#[napi]
pub fn create_postgres_persistence(options: String) -> napi::Result<PostgresPersistenceHandle> {
    guard(|| {
        let v = crate::json::parse(&options, invalid_owned)?;
        let f = Fields::new(&v, "options", invalid_owned)?;
        const ALLOWED: [&str; 4] = [
            "connectionString",
            "maxConnections",
            "schema",
            "connectTimeoutMs",
        ];
        for k in f.object().keys() {
            if !ALLOWED.contains(&k.as_str()) {
                return Err(store::invalid(format!(
                    "options has an unknown field {k:?} (allowed: {})",
                    ALLOWED.join(", ")
                )));
            }
        }
        let options = store::PostgresOptions::new(
            f.str("connectionString")?,
            opt_limit(&f, "maxConnections")?,
            f.opt_str("schema")?,
            opt_limit(&f, "connectTimeoutMs")?,
        )?;
        // Building the pool needs the runtime context (its timers); no connection is made.
        let persistence = napi::bindgen_prelude::within_runtime_if_available(|| {
            store::PostgresPersistence::new(options)
        })?;
        let checkpoints = persistence.checkpoints();
        Ok(PostgresPersistenceHandle {
            inner: Arc::new(persistence),
            checkpoints,
        })
    })
}
