//! Bindings for `crate::lsp`: a native `LanguageIntelligence` handle and the frame codec
//! for hosts.
//!
//! Calls do not go through napi's `async fn` bridge, which creates a promise, a
//! threadsafe function and an env cleanup hook per call and spawns two tasks. Instead the
//! handle owns one weak threadsafe function, `done(token, ok, text)`, created with it:
//! `start(op, input, token, cancellable)` spawns one task on the LSP runtime
//! ([`lsp_runtime`]) and returns at once; the task's result (JSON text, or an encoded
//! error) comes back through `done`, and the JS layer settles the promise it keeps under
//! `token`. While any call is outstanding the threadsafe function is referenced, so Node
//! does not exit under a call; when none is, it is not, so an idle instance never keeps
//! Node alive. That completion path is `calls.rs`' `Completions`, shared with store and
//! artifact calls; `done` must not hold the native handle.
//! `cancel(token)` drops the Rust future of a cancellable call, which sends
//! `$/cancelRequest` for its request.

use super::calls::{Completion, Completions};
use super::{guard, guard_async, to_js_error};
use crate::error::{LspCode, PrismError};
use crate::lsp::framing::{encode_frame, split_frames};
use crate::lsp::intelligence::{Intelligence, LIMITS};
use crate::util::caps;
use crate::util::sync::lock;
use napi::bindgen_prelude::{BufferSlice, Function};
use napi::Env;
use napi_derive::napi;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::oneshot;

type Cancels = Arc<Mutex<HashMap<u32, oneshot::Sender<()>>>>;

/// The native side of `LanguageIntelligence`.
#[napi]
pub struct NativeLanguageIntelligence {
    inner: Arc<Intelligence>,
    cancels: Cancels,
    completions: Completions,
}

/// The runtime every LSP call and server connection runs on: one current-thread tokio
/// runtime on its own thread, shared by every instance. LSP work is latency-bound
/// message passing; on one thread a request, its write, the server's answer and the
/// completion never hop between workers (measured ~10% faster hover round trips than on
/// napi's shared multi-thread runtime, see `npm run bench -- lsp`), and slow artifact or
/// HTTP work on napi's runtime cannot delay it. Blocking file work inside LSP calls goes
/// to tokio's blocking pool (`tokio::fs`).
fn lsp_runtime() -> Result<&'static tokio::runtime::Handle, PrismError> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Handle, String>> = OnceLock::new();
    let rt = RT.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the LSP runtime: {e}"))?;
        let handle = rt.handle().clone();
        std::thread::Builder::new()
            .name("prism-lsp".into())
            .spawn(move || rt.block_on(std::future::pending::<()>()))
            .map_err(|e| format!("cannot start the LSP runtime thread: {e}"))?;
        Ok(handle)
    });
    rt.as_ref().map_err(|e| PrismError::internal(e.clone()))
}

fn cancelled() -> PrismError {
    PrismError::lsp(LspCode::Server, "the operation was aborted")
}

#[napi]
impl NativeLanguageIntelligence {
    /// `options` is the JSON text of the options without `policy`; `done(token, ok, text)`
    /// receives every call's outcome on the JS thread.
    #[napi(constructor)]
    pub fn new(
        options: String,
        #[napi(ts_arg_type = "(token: number, ok: boolean, text: string) => void")] done: Function<
            '_,
            Completion,
            (),
        >,
    ) -> napi::Result<Self> {
        let inner = guard(|| Intelligence::from_json(&options))?;
        Ok(Self {
            inner: Arc::new(inner),
            cancels: Arc::new(Mutex::new(HashMap::new())),
            completions: Completions::new(done)?,
        })
    }

    /// Start one operation; its outcome arrives through `done(token, …)`. A `cancellable`
    /// call can be aborted with [`Self::cancel`].
    #[napi]
    pub fn start(
        &self,
        env: Env,
        op: String,
        input: String,
        token: u32,
        cancellable: bool,
    ) -> napi::Result<()> {
        guard(|| {
            let runtime = lsp_runtime()?;
            let done = self.completions.acquire(&env);
            let inner = self.inner.clone();
            let cancels = self.cancels.clone();
            let rx = cancellable.then(|| {
                let (tx, rx) = oneshot::channel::<()>();
                lock(&cancels).insert(token, tx);
                rx
            });
            let task = async move {
                let result = guard_async(async move {
                    let value = match rx {
                        None => inner.call(&op, &input).await?,
                        Some(rx) => tokio::select! {
                            r = inner.call(&op, &input) => r?,
                            _ = rx => return Err(cancelled()),
                        },
                    };
                    serde_json::to_string(&value).map_err(|e| PrismError::internal(e.to_string()))
                })
                .await;
                if cancellable {
                    lock(&cancels).remove(&token);
                }
                done.complete(token, result.map_err(|e| e.reason));
            };
            runtime.spawn(task);
            Ok(())
        })
    }

    /// Abort the call with this token (no-op when it already finished).
    #[napi]
    pub fn cancel(&self, token: u32) {
        let tx = lock(&self.cancels).remove(&token);
        if let Some(tx) = tx {
            let _ = tx.send(());
        }
    }
}

fn max_message(value: Option<f64>) -> Result<usize, PrismError> {
    let max = caps::resolve_f64("maxMessageBytes", value, LIMITS[0])?;
    usize::try_from(max).map_err(|_| PrismError::internal("frame cap out of range"))
}

/// `LspFrameReader`'s cap: `maxMessageBytes` checked (`RangeError` outside `1..hard`),
/// the default when absent.
#[napi(js_name = "lspFrameMax")]
pub fn lsp_frame_max(max_message_bytes: Option<f64>) -> napi::Result<u32> {
    guard(|| {
        let max = max_message(max_message_bytes)?;
        u32::try_from(max).map_err(|_| PrismError::internal("frame cap out of range"))
    })
}

/// What one `LspFrameReader.push` found: how many leading bytes the complete frames used,
/// and their bodies as the JSON text of one array.
#[napi(object)]
pub struct FrameScan {
    pub consumed: u32,
    pub messages: String,
}

/// The complete frames at the start of `bytes`. The reader's buffer is a JavaScript
/// `Buffer` (so V8 sees and collects its memory: napi finalizers of native objects are
/// deferred to `setImmediate`, so a synchronous loop making readers would grow without
/// bound — issue 17); this only scans it. Each body is validated on its own (two bodies
/// can never merge into one value), then all are handed to one `JSON.parse`.
#[napi(js_name = "lspFrameScan")]
pub fn lsp_frame_scan(bytes: BufferSlice<'_>, max_message_bytes: u32) -> napi::Result<FrameScan> {
    guard(|| {
        let hard = LIMITS[0].hard;
        let max = (max_message_bytes as usize).min(hard as usize);
        let (frames, used) = split_frames(&bytes, max)?;
        let mut out = String::with_capacity(used + 2);
        out.push('[');
        for (i, range) in frames.into_iter().enumerate() {
            let body = bytes.get(range).unwrap_or(&[]);
            serde_json::from_slice::<serde::de::IgnoredAny>(body).map_err(|e| {
                PrismError::lsp(
                    LspCode::Framing,
                    format!("frame body is not valid JSON: {e}"),
                )
            })?;
            let text = std::str::from_utf8(body)
                .map_err(|_| PrismError::lsp(LspCode::Framing, "frame body is not UTF-8"))?;
            if i > 0 {
                out.push(',');
            }
            out.push_str(text);
        }
        out.push(']');
        Ok(FrameScan {
            consumed: u32::try_from(used).map_err(|_| PrismError::internal("frame too large"))?,
            messages: out,
        })
    })
}

/// One frame for the JSON text of a message, in a buffer V8 owns (copied once), so the
/// garbage collector sees its size.
#[napi(js_name = "lspEncodeFrame")]
pub fn lsp_encode_frame(env: &Env, json_text: String) -> napi::Result<BufferSlice<'_>> {
    let hard = LIMITS[0].hard;
    if json_text.len() as u64 > hard {
        return Err(to_js_error(PrismError::lsp(
            LspCode::Limit,
            format!("message of {} bytes exceeds {hard} bytes", json_text.len()),
        )));
    }
    BufferSlice::copy_from(env, encode_frame(json_text.as_bytes()))
}

/// `applyTextEdits`: the UTF-16 spans `[[start, end, index], …]` of the edits (JSON text)
/// in `text`, in application order, as JSON text; the JS layer splices.
#[napi(js_name = "lspTextEditSpans")]
pub fn lsp_text_edit_spans(text: String, edits_json: String) -> napi::Result<String> {
    guard(|| {
        let spans = crate::lsp::edits::utf16_spans(&text, &edits_json)?;
        serde_json::to_string(&spans).map_err(|e| PrismError::internal(e.to_string()))
    })
}

/// `resolveLanguageIntelligenceLimits(limits?)`: JSON text in and out.
#[napi(js_name = "lspResolveLimits")]
pub fn lsp_resolve_limits(limits_json: String) -> napi::Result<String> {
    guard(|| Ok(crate::lsp::intelligence::Limits::resolve_json(&limits_json)?.to_string()))
}

/// Constants the JS layer charges while it writes a frame: `{ maxMessageBytesHard }`.
#[napi(js_name = "lspConstants")]
pub fn lsp_constants() -> String {
    serde_json::json!({ "maxMessageBytesHard": LIMITS[0].hard }).to_string()
}
