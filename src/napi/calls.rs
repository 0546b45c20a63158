//! The call path of checkpoint store and artifact service calls (issue 13).
//!
//! napi's `async fn` bridge costs a promise, a threadsafe function and a hop to a runtime
//! thread per call, which dominated calls that do no I/O (a memory-store load: ~90 µs).
//! Instead:
//! - A call's future is polled once **on the calling (JS) thread**, inside the runtime's
//!   context and under the panic guard. Work that is pure CPU (the memory store,
//!   validation, redaction, link signing) finishes there and the result is returned at
//!   once; the JS layer hands it back as an already settled promise.
//! - A future that must wait (a database, a host store's callback) is moved to napi's
//!   runtime and completes through one weak threadsafe function per JS environment,
//!   `done(token, ok, text)`, owned by a [`CallPort`]; the JS layer (`js/calls.js`) keeps
//!   the promise of every outstanding token. While any call is outstanding the function is
//!   referenced, so Node does not exit under a call; an idle port never keeps Node alive.

use super::{panic_message, to_js_error};
use crate::error::{PrismError, Result};
use napi::bindgen_prelude::{FnArgs, Function};
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use napi::{Env, Status};
use napi_derive::napi;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// `(token, ok, text)`: `text` is the result's text when `ok`, else the encoded error.
pub(crate) type Completion = FnArgs<(u32, bool, String)>;
type Done = ThreadsafeFunction<Completion, (), Completion, Status, false, true>;

/// Counts outstanding calls and references the completion threadsafe function while
/// there are any. Both methods run on the JS thread only (`start`, and the threadsafe
/// function's callback), as `napi_ref/unref_threadsafe_function` require.
#[derive(Default)]
struct KeepAlive {
    outstanding: AtomicUsize,
    tsfn: AtomicPtr<napi::sys::napi_threadsafe_function__>,
}

impl KeepAlive {
    fn acquire(&self, env: &Env) {
        if self.outstanding.fetch_add(1, Ordering::SeqCst) == 0 {
            // SAFETY: called on the JS thread with a live threadsafe function.
            unsafe {
                napi::sys::napi_ref_threadsafe_function(env.raw(), self.tsfn.load(Ordering::SeqCst))
            };
        }
    }

    fn release(&self, env: &Env) {
        if self.outstanding.fetch_sub(1, Ordering::SeqCst) == 1 {
            // SAFETY: as in `acquire`.
            unsafe {
                napi::sys::napi_unref_threadsafe_function(
                    env.raw(),
                    self.tsfn.load(Ordering::SeqCst),
                )
            };
        }
    }
}

/// A JS function `done(token, ok, text)` as a weak threadsafe function that is referenced
/// only while calls are outstanding: the one completion path of store and artifact calls
/// ([`CallPort`]) and of `LanguageIntelligence` calls (`lsp.rs`). `done` must not hold
/// the native object that holds this (the threadsafe function holds `done` strongly, so
/// that would be a cycle no GC can collect).
#[derive(Clone)]
pub(crate) struct Completions {
    done: Arc<Done>,
    keep_alive: Arc<KeepAlive>,
}

/// Where a call's outcome goes; `Send`, so the call can finish on any thread.
#[derive(Clone)]
pub(crate) struct Completer(Arc<Done>);

impl Completer {
    /// Hand `token`'s outcome to `done` (on the JS thread, later): the result's text, or
    /// the error encoded as `to_js_error` encodes it.
    pub(crate) fn complete(&self, token: u32, outcome: std::result::Result<String, String>) {
        let completion: Completion = match outcome {
            Ok(text) => (token, true, text),
            Err(encoded) => (token, false, encoded),
        }
        .into();
        // `Closing` only when the environment is tearing down: nobody waits.
        let _ = self
            .0
            .call(completion, ThreadsafeFunctionCallMode::NonBlocking);
    }
}

impl Completions {
    pub(crate) fn new(done: Function<'_, Completion, ()>) -> napi::Result<Self> {
        let keep_alive = Arc::new(KeepAlive::default());
        let on_js_thread = keep_alive.clone();
        let done = done
            .build_threadsafe_function::<Completion>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |ctx: ThreadsafeCallContext<Completion>| {
                on_js_thread.release(&ctx.env);
                Ok(ctx.value)
            })?;
        keep_alive.tsfn.store(done.raw(), Ordering::SeqCst);
        Ok(Self {
            done: Arc::new(done),
            keep_alive,
        })
    }

    /// Count one outstanding call (on the JS thread); its completion releases it. Each
    /// acquire must be followed by exactly one [`Completer::complete`].
    pub(crate) fn acquire(&self, env: &Env) -> Completer {
        self.keep_alive.acquire(env);
        Completer(self.done.clone())
    }
}

/// One JS environment's completion path for store and artifact calls.
#[napi]
#[derive(Clone)]
pub struct CallPort {
    completions: Completions,
}

#[napi]
impl CallPort {
    /// `done(token, ok, text)` receives the outcome of every call that did not finish
    /// on the calling thread. It must not hold the port (the port holds it strongly).
    #[napi(constructor)]
    pub fn new(
        #[napi(ts_arg_type = "(token: number, ok: boolean, text: string) => void")] done: Function<
            '_,
            Completion,
            (),
        >,
    ) -> napi::Result<Self> {
        Ok(Self {
            completions: Completions::new(done)?,
        })
    }
}

fn panicked(panic: Box<dyn std::any::Any + Send>) -> PrismError {
    PrismError::internal(format!(
        "internal error (a bug in prism-review): {}",
        panic_message(panic)
    ))
}

impl CallPort {
    /// Run `fut`: polled once here; when it finishes, its text is returned (`Some`), or
    /// its error thrown. Otherwise it continues on the runtime, `None` is returned, and
    /// its outcome arrives through `done(token, …)`.
    pub(crate) fn start<F>(&self, env: &Env, token: u32, fut: F) -> napi::Result<Option<String>>
    where
        F: Future<Output = Result<String>> + Send + 'static,
    {
        let mut fut = Box::pin(fut);
        let mut cx = Context::from_waker(Waker::noop());
        let polled = napi::bindgen_prelude::within_runtime_if_available(|| {
            catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx)))
        });
        match polled {
            Ok(Poll::Ready(Ok(text))) => Ok(Some(text)),
            Ok(Poll::Ready(Err(e))) => Err(to_js_error(e)),
            Err(panic) => Err(to_js_error(panicked(panic))),
            Ok(Poll::Pending) => {
                let runtime = napi::bindgen_prelude::within_runtime_if_available(
                    tokio::runtime::Handle::try_current,
                )
                .map_err(|e| to_js_error(PrismError::internal(format!("no async runtime: {e}"))))?;
                let task = Arc::new(Task {
                    state: AtomicU8::new(IDLE),
                    fut: Mutex::new(Some(fut)),
                    token,
                    done: self.completions.acquire(env),
                    runtime,
                });
                // Polled again when woken (nothing ran it since the first poll).
                task.run();
                Ok(None)
            }
        }
    }
}

type BoxedCall = Pin<Box<dyn Future<Output = Result<String>> + Send>>;

const IDLE: u8 = 0;
const POLLING: u8 = 1;
/// Woken while being polled: poll once more.
const NOTIFIED: u8 = 2;
const DONE: u8 = 3;

/// A call that did not finish on the calling thread. Its waker continues it on the thread
/// that woke it when that thread is at a drain point ([`crate::inline`]: the SQLite
/// writer after its commit, a reader after its query), else on the runtime; when it
/// finishes, its outcome goes to `done`.
struct Task {
    state: AtomicU8,
    fut: Mutex<Option<BoxedCall>>,
    token: u32,
    done: Completer,
    runtime: tokio::runtime::Handle,
}

impl Task {
    /// Poll until the call is pending with no wake-up missed, or finished.
    fn run(self: &Arc<Self>) {
        match self
            .state
            .compare_exchange(IDLE, POLLING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {}
            Err(POLLING) => {
                // Another thread polls it: have it poll once more.
                let _ = self.state.compare_exchange(
                    POLLING,
                    NOTIFIED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                return;
            }
            Err(_) => return,
        }
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        let _rt = self.runtime.enter();
        loop {
            let mut slot = crate::util::sync::lock(&self.fut);
            let Some(fut) = slot.as_mut() else { return };
            let outcome = match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx))) {
                Ok(Poll::Pending) => None,
                Ok(Poll::Ready(Ok(text))) => Some(Ok(text)),
                Ok(Poll::Ready(Err(e))) => Some(Err(to_js_error(e).reason)),
                Err(panic) => Some(Err(to_js_error(panicked(panic)).reason)),
            };
            if let Some(outcome) = outcome {
                *slot = None;
                drop(slot);
                self.state.store(DONE, Ordering::Release);
                self.done.complete(self.token, outcome);
                return;
            }
            drop(slot);
            if self
                .state
                .compare_exchange(POLLING, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return;
            }
            // NOTIFIED: woken while polling; poll again.
            self.state.store(POLLING, Ordering::Release);
        }
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        let task = self.clone();
        if let Err(job) = crate::inline::defer(Box::new(move || task.run())) {
            drop(job);
            let task = self.clone();
            self.runtime.spawn(async move { task.run() });
        }
    }
}
