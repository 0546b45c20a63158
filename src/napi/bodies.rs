//! Bindings for `crate::bodies`: the native S3 body store, its transfers (a whole body,
//! a streamed upload fed chunk by chunk, a verified download read chunk by chunk), the
//! pure helpers (`s3ObjectKey`, `resolveArtifactBodyLimits`, SigV4 signing, SHA-256) and
//! the host hooks (credentials resolver, legal-hold check) as threadsafe functions.

use super::{guard, guard_async};
use crate::bodies::sigv4::{self, Credentials};
use crate::bodies::{
    key, verify_body, Abort, BodyLimits, BodyRef, BoxFuture, CredentialSource, HoldCheck,
    S3BodyStore, S3Options, Spool,
};
use crate::error::{BodyCode, PrismError};
use bytes::Bytes;
use napi::bindgen_prelude::{Buffer, Promise, PromiseRaw};
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Env, Status};
use napi_derive::napi;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// A host hook: called with JSON text, answers a promise of the JSON text of
/// `{"ok": <value>}` or `{"error": true}` (`js/bodies.js` builds it; the host's own error
/// text never crosses). Weak: a hook never keeps the process alive.
type HookFn = ThreadsafeFunction<String, Promise<String>, String, Status, false, true>;

fn envelope(text: &str) -> Result<Value, ()> {
    let v: Value = serde_json::from_str(text).map_err(|_| ())?;
    v.get("ok").cloned().ok_or(())
}

struct JsCredentials(HookFn);

impl CredentialSource for JsCredentials {
    fn resolve(&self) -> BoxFuture<'_, Result<Credentials, ()>> {
        Box::pin(async move {
            let promise = self
                .0
                .call_async_catch(String::new())
                .await
                .map_err(|_| ())?;
            let v = envelope(&promise.await.map_err(|_| ())?)?;
            let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            Ok(Credentials {
                access_key_id: s("accessKeyId").unwrap_or_default(),
                secret_access_key: s("secretAccessKey").unwrap_or_default(),
                session_token: s("sessionToken").filter(|t| !t.is_empty()),
            })
        })
    }
}

struct JsHold(HookFn);

impl HoldCheck for JsHold {
    fn is_held(&self, ref_json: String) -> BoxFuture<'_, Result<bool, ()>> {
        Box::pin(async move {
            let promise = self.0.call_async_catch(ref_json).await.map_err(|_| ())?;
            envelope(&promise.await.map_err(|_| ())?)?
                .as_bool()
                .ok_or(())
        })
    }
}

fn store_err(m: String) -> PrismError {
    PrismError::body(BodyCode::Store, m)
}

/// Cancels the transfers it is given to (`js/bodies.js` fires it from the AbortSignal).
#[napi]
pub struct BodyAbortHandle {
    inner: Abort,
}

#[napi]
impl BodyAbortHandle {
    #[napi(constructor)]
    pub fn new() -> Self {
        Self {
            inner: Abort::new(),
        }
    }
    #[napi]
    pub fn abort(&self) {
        self.inner.abort();
    }
}

impl Default for BodyAbortHandle {
    fn default() -> Self {
        Self::new()
    }
}

/// `createS3ArtifactBodyStore(options)`: `options` is JSON text of
/// `{ endpoint, bucket, region?, limits? }`; the hooks come as functions.
#[napi]
pub fn create_s3_body_store(
    options: String,
    #[napi(ts_arg_type = "(json: string) => Promise<string>")] credentials: HookFn,
    #[napi(ts_arg_type = "(json: string) => Promise<string>")] is_held: Option<HookFn>,
) -> napi::Result<S3BodyStoreHandle> {
    guard(|| {
        let opts = S3Options::from_json(&options)?;
        let held = is_held.map(|h| Arc::new(JsHold(h)) as Arc<dyn HoldCheck>);
        let store = S3BodyStore::new(opts, Arc::new(JsCredentials(credentials)), held)?;
        Ok(S3BodyStoreHandle {
            inner: Arc::new(store),
        })
    })
}

/// The native S3 body store as JavaScript holds it.
#[napi]
pub struct S3BodyStoreHandle {
    inner: Arc<S3BodyStore>,
}

/// A verified download, read in chunks into buffers JavaScript allocates (so V8 accounts
/// for them and collects them promptly; a buffer made here would be external memory it
/// does not see).
#[napi]
pub struct BodyReadHandle {
    spool: Arc<Mutex<Option<Spool>>>,
}

fn closed() -> PrismError {
    PrismError::internal("the download was closed")
}

#[napi]
impl BodyReadHandle {
    /// Fill `buf` with the next `buf.length` bytes of the verified body and resolve with it
    /// (asking for more than remains is an error). `buf` must not be touched until then.
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn read<'env>(
        &self,
        env: &'env Env,
        mut buf: Buffer,
    ) -> napi::Result<PromiseRaw<'env, Buffer>> {
        let spool = self.spool.clone();
        env.spawn_future(guard_async(async move {
            let mut guard = spool.lock().map_err(|_| closed())?;
            guard.as_mut().ok_or_else(closed)?.read_into(&mut buf)?;
            drop(guard);
            Ok(buf)
        }))
    }

    /// Bytes not read yet.
    #[napi]
    pub fn remaining(&self) -> f64 {
        self.spool
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|s| s.remaining() as f64))
            .unwrap_or(0.0)
    }

    /// Release the spool now (off this thread: `Spool::release`); later reads fail.
    #[napi]
    pub fn close(&self) {
        let spool = self.spool.lock().ok().and_then(|mut g| g.take());
        if let Some(spool) = spool {
            spool.release();
        }
    }
}

impl Drop for BodyReadHandle {
    fn drop(&mut self) {
        self.close();
    }
}

/// A streamed upload: `push` chunks, then `end`; `result` settles with the upload.
#[napi]
pub struct BodyPutHandle {
    tx: Arc<Mutex<Option<mpsc::Sender<Bytes>>>>,
    done: Arc<Mutex<Option<oneshot::Receiver<crate::error::Result<()>>>>>,
}

#[napi]
impl BodyPutHandle {
    /// Hand one chunk to the upload (not copied: JavaScript must leave it untouched until
    /// the upload settles); `false` once the upload stopped taking chunks.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn push<'env>(
        &self,
        env: &'env Env,
        chunk: Buffer,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let bytes = Bytes::from_owner(chunk);
        let tx = self.tx.lock().ok().and_then(|g| g.clone());
        env.spawn_future(guard_async(async move {
            Ok(match tx {
                Some(tx) => tx.send(bytes).await.is_ok(),
                None => false,
            })
        }))
    }

    /// The body is complete.
    #[napi]
    pub fn end(&self) {
        if let Ok(mut g) = self.tx.lock() {
            g.take();
        }
    }

    /// Settles when the upload does.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn result<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let rx = self.done.lock().ok().and_then(|mut g| g.take());
        env.spawn_future(guard_async(async move {
            match rx {
                Some(rx) => rx
                    .await
                    .unwrap_or_else(|_| Err(PrismError::internal("the upload task ended"))),
                None => Err(PrismError::internal("result() was already taken")),
            }
        }))
    }
}

fn ms(v: Option<f64>) -> crate::error::Result<Option<u64>> {
    match v {
        None => Ok(None),
        Some(t) if t.fract() == 0.0 && (0.0..=9.007_199_254_740_991e15).contains(&t) => {
            Ok(Some(t as u64))
        }
        Some(_) => Err(store_err(
            "presign TTL must be a positive safe integer".into(),
        )),
    }
}

#[napi]
impl S3BodyStoreHandle {
    /// The store's resolved limits (JSON text).
    #[napi]
    pub fn limits(&self) -> String {
        serde_json::to_string(self.inner.limits()).unwrap_or_default()
    }

    /// Check a ref against this store (sync, so a bad ref fails before any transfer).
    #[napi]
    pub fn check_ref(&self, ref_json: String) -> napi::Result<()> {
        guard(|| self.inner.parse_ref(&ref_json).map(|_| ()))
    }

    #[napi(ts_return_type = "Promise<string>")]
    pub fn presign<'env>(
        &self,
        env: &'env Env,
        ref_json: String,
        ttl_ms: Option<f64>,
        not_after: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, String>> {
        let store = self.inner.clone();
        env.spawn_future(guard_async(async move {
            let r = store.parse_ref(&ref_json)?;
            let not_after = ms(not_after)?.map(|t| t as i64);
            store.presign(&r, ms(ttl_ms)?, not_after).await
        }))
    }

    /// `put` of a whole body, hashed as it is sent (`S3BodyStore::put_bytes`: the last
    /// slice goes only once it verified). Not copied: the bytes are
    /// read where JavaScript keeps them (the reference held until the transfer ends), so
    /// a 512 MiB body costs no second 512 MiB. A body changed while the put is pending
    /// cannot be stored under the ref: the local check or the server's check of the signed
    /// `x-amz-content-sha256` refuses it (`docs/bodies.md`).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn put_bytes<'env>(
        &self,
        env: &'env Env,
        ref_json: String,
        body: Buffer,
        verified: bool,
        abort: &BodyAbortHandle,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let store = self.inner.clone();
        let abort = abort.inner.clone();
        let bytes = Bytes::from_owner(body);
        env.spawn_future(guard_async(async move {
            let r = store.parse_ref(&ref_json)?;
            if verified {
                store.put_verified(&r, bytes, &abort).await
            } else {
                store.put_bytes(&r, bytes, &abort).await
            }
        }))
    }

    /// Start a streamed `put`; the ref is checked now.
    #[napi]
    pub fn start_put(
        &self,
        ref_json: String,
        abort: &BodyAbortHandle,
    ) -> napi::Result<BodyPutHandle> {
        guard(|| {
            let r = self.inner.parse_ref(&ref_json)?;
            let (tx, rx) = mpsc::channel(2);
            let (done_tx, done_rx) = oneshot::channel();
            let store = self.inner.clone();
            let abort = abort.inner.clone();
            napi::bindgen_prelude::spawn(async move {
                let out = guard_async(async move { Ok(store.put_stream(&r, rx, &abort).await) })
                    .await
                    .unwrap_or_else(|_| Err(PrismError::internal("the upload panicked")));
                let _ = done_tx.send(out);
            });
            Ok(BodyPutHandle {
                tx: Arc::new(Mutex::new(Some(tx))),
                done: Arc::new(Mutex::new(Some(done_rx))),
            })
        })
    }

    /// `get`: resolves once the body verified; read it through the handle.
    #[napi(ts_return_type = "Promise<BodyReadHandle>")]
    pub fn get<'env>(
        &self,
        env: &'env Env,
        ref_json: String,
        abort: &BodyAbortHandle,
    ) -> napi::Result<PromiseRaw<'env, BodyReadHandle>> {
        let store = self.inner.clone();
        let abort = abort.inner.clone();
        env.spawn_future(guard_async(async move {
            let r = store.parse_ref(&ref_json)?;
            let spool = store.get(&r, &abort).await?;
            Ok(BodyReadHandle {
                spool: Arc::new(Mutex::new(Some(spool))),
            })
        }))
    }

    /// The stored bytes, unverified (for a `kms` hook to decrypt; then `verifyArtifactBody`).
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn get_stored<'env>(
        &self,
        env: &'env Env,
        ref_json: String,
        abort: &BodyAbortHandle,
    ) -> napi::Result<PromiseRaw<'env, Buffer>> {
        let store = self.inner.clone();
        let abort = abort.inner.clone();
        env.spawn_future(guard_async(async move {
            let r = store.parse_ref(&ref_json)?;
            Ok(Buffer::from(Vec::from(store.get_stored(&r, &abort).await?)))
        }))
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub fn delete<'env>(
        &self,
        env: &'env Env,
        ref_json: String,
        abort: &BodyAbortHandle,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let store = self.inner.clone();
        let abort = abort.inner.clone();
        env.spawn_future(guard_async(async move {
            let r = store.parse_ref(&ref_json)?;
            store.delete(&r, ref_json, &abort).await
        }))
    }

    /// Size and SHA-256 of a whole body against a ref of this store.
    #[napi]
    pub fn verify(&self, ref_json: String, body: Buffer) -> napi::Result<()> {
        guard(|| verify_body(&self.inner.parse_ref(&ref_json)?, &body))
    }
}

/// `resolveArtifactBodyLimits(limits)`: JSON text of the resolved limits.
#[napi]
pub fn bodies_resolve_limits(limits: String) -> napi::Result<String> {
    guard(|| {
        let v = crate::json::parse(&limits, PrismError::type_error)?;
        let l = BodyLimits::resolve(Some(&v))?;
        Ok(serde_json::to_string(&l).unwrap_or_default())
    })
}

/// JSON text of `{ defaults, hard }`.
#[napi]
pub fn bodies_constants() -> String {
    serde_json::json!({
        "defaults": BodyLimits::defaults(),
        "hard": BodyLimits::hard(),
    })
    .to_string()
}

/// `s3ObjectKey(ref)`.
#[napi]
pub fn bodies_object_key(ref_json: String) -> napi::Result<String> {
    guard(|| {
        Ok(key::object_key(&BodyRef::parse(
            &ref_json,
            &BodyLimits::hard(),
        )?))
    })
}

/// `signV4(input)`: JSON text in (the reference's `SigV4SignInput`), JSON text of
/// `{ signature, canonicalRequest }` out.
#[napi]
pub fn bodies_sign_v4(input: String) -> napi::Result<String> {
    guard(|| sigv4::sign_json(&input))
}

/// `sha256Hex(bytes)`.
#[napi]
pub fn bodies_sha256_hex(bytes: Buffer) -> String {
    use sha2::Digest;
    sigv4::hex(&sha2::Sha256::digest(&bytes))
}
