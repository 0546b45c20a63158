//! Bindings for `crate::lsp`: a native `LanguageIntelligence` handle and the frame codec
//! for hosts.
//!
//! Calls do not go through napi's `async fn` bridge, which creates a promise, a
//! threadsafe function and an env cleanup hook per call and spawns two tasks. Instead a
//! call completes through the environment's [`CallPort`], the one completion path of store
//! and artifact calls (`calls.rs`): `start(op, input, token, cancellable)` spawns one task
//! on the LSP runtime ([`lsp_runtime`]) and returns at once; the task's result (JSON text,
//! or an encoded error) reaches the port's `done`, and `js/calls.js` settles the promise it
//! keeps under `token`. While any call is outstanding the port's threadsafe function is
//! referenced, so Node does not exit under a call; an idle instance never keeps Node
//! alive. The event loop sleeps while an LSP call waits (`js/lsp.js`): the thread that
//! stays awake is the LSP thread ([`Awake`]).
//! `cancel(token)` drops the Rust future of a cancellable call, which sends
//! `$/cancelRequest` for its request.

use super::calls::CallPort;
use super::{guard, guard_async, to_js_error};
use crate::error::{LspCode, PrismError};
use crate::lsp::framing::{encode_frame, split_frames};
use crate::lsp::intelligence::{Intelligence, LIMITS};
use crate::util::caps;
use crate::util::lane::SPIN;
use crate::util::sync::lock;
use napi::bindgen_prelude::BufferSlice;
use napi::Env;
use napi_derive::napi;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use tokio::sync::oneshot;

type Cancels = Arc<Mutex<HashMap<u32, oneshot::Sender<()>>>>;

/// The native side of `LanguageIntelligence`.
#[napi]
pub struct NativeLanguageIntelligence {
    inner: Arc<Intelligence>,
    cancels: Cancels,
    /// Where every call completes: this environment's port.
    port: CallPort,
}

/// The runtime every LSP call and server connection runs on: one current-thread tokio
/// runtime on its own thread, shared by every instance. LSP work is latency-bound
/// message passing; on one thread a request, its write, the server's answer and the
/// completion never hop between workers (measured ~10% faster hover round trips than on
/// napi's shared multi-thread runtime, see `npm run bench -- lsp`), and slow artifact or
/// HTTP work on napi's runtime cannot delay it. Blocking file work inside LSP calls goes
/// to tokio's blocking pool (`tokio::fs`).
struct LspRuntime {
    handle: tokio::runtime::Handle,
    awake: Awake,
}

fn lsp_runtime() -> Result<&'static LspRuntime, PrismError> {
    static RT: OnceLock<std::result::Result<LspRuntime, String>> = OnceLock::new();
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
        Ok(LspRuntime {
            handle,
            awake: Awake::new(),
        })
    });
    rt.as_ref().map_err(|e| PrismError::internal(e.clone()))
}

/// Keeps the LSP thread polling instead of sleeping for [`SPIN`] after each call starts
/// or finishes. A call waits on that thread twice (to write its request, and to read the
/// answer and complete), and on the virtual machines measured waking a sleeping thread
/// costs 25-50 µs each time (issue 13: an LSP call that does no I/O took 100-133 µs with
/// the thread asleep, 9-19 µs with it polling). While it polls, each turn yields the CPU
/// to any other thread ready to run there (`sched_yield`, as `crate::util::lane` does) and
/// lets the runtime check its I/O (`tokio::task::yield_now`), so a server's answer is read
/// as soon as it arrives. The JavaScript thread does not also turn for the answer (as it
/// does for a store call): the server is another process that needs a core, and on two
/// cores, with both threads polling, a hover round trip to a stdio server took a mean
/// 168-413 µs against 158-163 µs with only this one (raw JSON-RPC from Node 121-186 µs).
struct Awake {
    epoch: Instant,
    /// Nanoseconds from `epoch` to the last start or finish of a call.
    last: AtomicU64,
    /// A task keeps the thread polling.
    polling: AtomicBool,
}

impl Awake {
    fn new() -> Self {
        Self {
            epoch: Instant::now(),
            last: AtomicU64::new(0),
            polling: AtomicBool::new(false),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Whether [`SPIN`] passed since the last start or finish.
    fn quiet(&self) -> bool {
        let spin = u64::try_from(SPIN.as_nanos()).unwrap_or(u64::MAX);
        self.now().saturating_sub(self.last.load(Ordering::SeqCst)) >= spin
    }

    /// A call starts or finishes (on any thread): the LSP thread polls for [`SPIN`] from
    /// now, with one task started for it unless one runs. (Sequentially consistent, so a
    /// task that stops polling either sees this stir's time or leaves `polling` clear for
    /// it to start another.)
    fn stir(&'static self, handle: &tokio::runtime::Handle) {
        self.last.fetch_max(self.now(), Ordering::SeqCst);
        if !self.polling.swap(true, Ordering::SeqCst) {
            handle.spawn(self.poll());
        }
    }

    async fn poll(&self) {
        loop {
            if self.quiet() {
                self.polling.store(false, Ordering::SeqCst);
                // A call that stirred after the check above and saw `polling` still set
                // started no task: keep polling for it, unless one started meanwhile.
                if self.quiet() || self.polling.swap(true, Ordering::SeqCst) {
                    return;
                }
            }
            std::thread::yield_now();
            tokio::task::yield_now().await;
        }
    }
}

fn cancelled() -> PrismError {
    PrismError::lsp(LspCode::Server, "the operation was aborted")
}

#[napi]
impl NativeLanguageIntelligence {
    /// `options` is the JSON text of the options without `policy`; every call's outcome
    /// arrives through `port` (this environment's).
    #[napi(constructor)]
    pub fn new(options: String, port: &CallPort) -> napi::Result<Self> {
        let inner = guard(|| Intelligence::from_json(&options))?;
        Ok(Self {
            inner: Arc::new(inner),
            cancels: Arc::new(Mutex::new(HashMap::new())),
            port: port.clone(),
        })
    }

    /// Start one operation; its outcome arrives through the port under `token`. A
    /// `cancellable` call can be aborted with [`Self::cancel`].
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
            let done = self.port.completer(&env);
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
                // A caller awaiting calls in sequence starts its next one soon.
                runtime.awake.stir(&runtime.handle);
            };
            runtime.handle.spawn(task);
            runtime.awake.stir(&runtime.handle);
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

#[cfg(test)]
mod tests {
    use super::{Awake, SPIN};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    /// One task polls however often calls stir, and it ends once [`SPIN`] passed without
    /// a stir: the thread then sleeps.
    #[test]
    fn one_task_polls_until_spin_passes_without_a_stir() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let thread = std::thread::spawn(move || rt.block_on(std::future::pending::<()>()));
        let awake: &'static Awake = Box::leak(Box::new(Awake::new()));
        let tasks = || handle.metrics().num_alive_tasks();
        awake.stir(&handle);
        assert_eq!(tasks(), 1, "a stir starts one polling task");
        let started = Instant::now();
        // Stirred for four times SPIN: one polling task all along (two for a moment when
        // a stir comes just as a task ends, on a machine slow to run this thread).
        while started.elapsed() < SPIN * 4 {
            awake.stir(&handle);
            assert!(awake.polling.load(Ordering::SeqCst));
            assert!(tasks() <= 2, "{} polling tasks", tasks());
            std::thread::sleep(SPIN / 10);
        }
        let quiet = Instant::now();
        while tasks() > 0 || awake.polling.load(Ordering::SeqCst) {
            assert!(
                quiet.elapsed() < Duration::from_secs(5),
                "still polling {:?} after the last stir",
                quiet.elapsed()
            );
            std::thread::sleep(SPIN / 4);
        }
        // A stir after it stopped starts polling again.
        awake.stir(&handle);
        assert!(awake.polling.load(Ordering::SeqCst));
        drop(thread);
    }
}
