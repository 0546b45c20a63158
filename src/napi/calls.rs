//! The call path of checkpoint store and artifact service calls (issue 13); the
//! completion path of `LanguageIntelligence` calls too (`lsp.rs`).
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
//! - While the JS layer keeps the event loop turning for an answer (`js/calls.js`: one
//!   call outstanding, lately quick), it says so (`pollCompletions(mailbox, true)`) and a
//!   call that finishes meanwhile leaves its outcome in the port's mailbox instead, which
//!   the JS layer empties on each turn: no threadsafe function call (a mutex, an `eventfd`
//!   write and read, a callback scope; a sequential SQLite read 9.5-10.9 → 8.0-8.3 µs).

use super::raw::{self, External, PlainFunction, Tagged};
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
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
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

/// A finished call's `(token, ok, text)`.
type Outcome = (u32, bool, String);

/// Where [`Shared::post_paused`] pauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PostStep {
    BeforePush,
    BeforeRecheck,
}

/// What the JS thread and the threads that finish calls share: the keep-alive count and
/// the mailbox (see the module's documentation).
#[derive(Default)]
struct Shared {
    keep_alive: KeepAlive,
    /// Set while the JS layer polls the mailbox on every turn of its event loop.
    polling: AtomicBool,
    /// Outcomes left while `polling`, in the order they finished.
    mailbox: Mutex<Vec<Outcome>>,
}

impl Shared {
    /// Leave a finished call's outcome in the mailbox while the JS layer polls it; given
    /// back when it does not (or stopped before it could see it).
    fn post(&self, item: Outcome) -> Option<Outcome> {
        self.post_paused(item, |_| {})
    }

    /// [`Self::post`], calling `pause` at the steps where the JS layer may stop polling
    /// (the tests stop it there).
    fn post_paused(&self, item: Outcome, pause: impl Fn(PostStep)) -> Option<Outcome> {
        if !self.polling.load(Ordering::SeqCst) {
            return Some(item);
        }
        let token = item.0;
        pause(PostStep::BeforePush);
        crate::util::sync::lock(&self.mailbox).push(item);
        pause(PostStep::BeforeRecheck);
        if self.polling.load(Ordering::SeqCst) {
            // Still polled: the JS layer's next poll, or the last one when it stops
            // (it clears `polling` first, then empties the mailbox), takes it.
            return None;
        }
        // It stopped meanwhile: take it back unless its last poll already took it.
        let mut mailbox = crate::util::sync::lock(&self.mailbox);
        let at = mailbox.iter().position(|c| c.0 == token)?;
        Some(mailbox.remove(at))
    }

    /// Set whether the JS layer polls (on the JS thread), and empty the mailbox: every
    /// outcome in it (the caller releases each from the keep-alive count).
    fn take(&self, polling: bool) -> Vec<Outcome> {
        self.polling.store(polling, Ordering::SeqCst);
        std::mem::take(&mut *crate::util::sync::lock(&self.mailbox))
    }
}

/// A JS function `done(token, ok, text)` as a weak threadsafe function that is referenced
/// only while calls are outstanding, and the mailbox: a [`CallPort`]'s. `done` must not
/// hold the native object that holds this (the threadsafe function holds `done` strongly,
/// so that would be a cycle no GC can collect).
#[derive(Clone)]
pub(crate) struct Completions {
    done: Arc<Done>,
    shared: Arc<Shared>,
}

/// Where a call's outcome goes; `Send`, so the call can finish on any thread.
#[derive(Clone)]
pub(crate) struct Completer {
    done: Arc<Done>,
    shared: Arc<Shared>,
}

impl Completer {
    /// Hand `token`'s outcome to the JS thread (later): the result's text, or the error
    /// encoded as `to_js_error` encodes it; through the mailbox while the JS layer polls
    /// it, else through `done`.
    pub(crate) fn complete(&self, token: u32, outcome: std::result::Result<String, String>) {
        let item = match outcome {
            Ok(text) => (token, true, text),
            Err(encoded) => (token, false, encoded),
        };
        if let Some(item) = self.shared.post(item) {
            // `Closing` only when the environment is tearing down: nobody waits.
            let _ = self
                .done
                .call(item.into(), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

impl Completions {
    pub(crate) fn new(done: Function<'_, Completion, ()>) -> napi::Result<Self> {
        let shared = Arc::new(Shared::default());
        let on_js_thread = shared.clone();
        let done = done
            .build_threadsafe_function::<Completion>()
            .callee_handled::<false>()
            .weak::<true>()
            .build_callback(move |ctx: ThreadsafeCallContext<Completion>| {
                on_js_thread.keep_alive.release(&ctx.env);
                Ok(ctx.value)
            })?;
        shared.keep_alive.tsfn.store(done.raw(), Ordering::SeqCst);
        Ok(Self {
            done: Arc::new(done),
            shared,
        })
    }

    /// Count one outstanding call (on the JS thread); its completion releases it. Each
    /// acquire must be followed by exactly one [`Completer::complete`].
    pub(crate) fn acquire(&self, env: &Env) -> Completer {
        self.shared.keep_alive.acquire(env);
        Completer {
            done: self.done.clone(),
            shared: self.shared.clone(),
        }
    }
}

/// A port's mailbox as a JS external value (`CallPort.mailbox()`), for `pollCompletions`.
pub struct PortMailbox(Arc<Shared>);

impl Tagged for PortMailbox {
    const TAG: u64 = 0x7072_6973_6d2d_6d62; // "prism-mb"
    const NAME: &'static str = "CallMailbox";
}

/// One member of what `pollCompletions` answers: `[token, ok, text, token, ok, text, …]`.
type Taken = napi::bindgen_prelude::Either3<u32, bool, String>;

/// `pollCompletions(mailbox, polling)`: set whether the JS layer polls, and take what the
/// mailbox holds: `null`, or `[token, ok, text, token, ok, text, …]`.
///
/// # Safety
/// N-API callback arguments, on the JS thread.
unsafe fn poll_completions(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::Result<Option<Vec<Taken>>> {
    let usage = || {
        to_js_error(PrismError::type_error(
            "pollCompletions takes (mailbox, polling)",
        ))
    };
    // SAFETY: as documented.
    let [mailbox, polling] = unsafe { raw::args::<2>(env, info) }.ok_or_else(usage)?;
    // SAFETY: the callback's own arguments.
    let mailbox = unsafe { raw::external::<PortMailbox>(env, mailbox) }.ok_or_else(usage)?;
    // SAFETY: as above; the conversion checks the value's type.
    let polling =
        unsafe { <bool as napi::bindgen_prelude::FromNapiValue>::from_napi_value(env, polling) }?;
    let taken = mailbox.0.take(polling);
    let env = Env::from_raw(env);
    for _ in &taken {
        mailbox.0.keep_alive.release(&env);
    }
    Ok((!taken.is_empty()).then(|| {
        taken
            .into_iter()
            .flat_map(|(token, ok, text)| [Taken::A(token), Taken::B(ok), Taken::C(text)])
            .collect()
    }))
}

unsafe extern "C" fn poll_completions_callback(
    env: napi::sys::napi_env,
    info: napi::sys::napi_callback_info,
) -> napi::sys::napi_value {
    // SAFETY: N-API calls this with its own env and callback info, on the JS thread.
    unsafe { raw::answer(env, || poll_completions(env, info)) }
}

/// `completionPoller()`: `pollCompletions(mailbox, polling)` (see `CallPort.mailbox()`).
#[napi(
    ts_return_type = "(mailbox: object, polling: boolean) => Array<number | boolean | string> | null"
)]
pub fn completion_poller() -> PlainFunction {
    PlainFunction {
        name: "pollCompletions",
        callback: poll_completions_callback,
    }
}

/// One JS environment's completion path for store, artifact and `LanguageIntelligence`
/// calls.
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

    /// This port's mailbox, for `pollCompletions(mailbox, polling)`: while the JS layer
    /// polls it, calls that finish leave their outcomes there instead of calling `done`.
    #[napi(ts_return_type = "object")]
    pub fn mailbox(&self) -> External<PortMailbox> {
        External::new(PortMailbox(self.completions.shared.clone()))
    }
}

fn panicked(panic: Box<dyn std::any::Any + Send>) -> PrismError {
    PrismError::internal(format!(
        "internal error (a bug in prism-review): {}",
        panic_message(panic)
    ))
}

impl CallPort {
    /// On the JS thread: count one outstanding call that runs elsewhere (`lsp.rs`); its
    /// outcome must be handed to the returned [`Completer`] exactly once.
    pub(crate) fn completer(&self, env: &Env) -> Completer {
        self.completions.acquire(env)
    }

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

#[cfg(test)]
mod tests {
    use super::{PostStep, Shared};
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn outcomes_go_to_the_mailbox_only_while_it_is_polled() {
        let shared = Shared::default();
        let item = |t: u32| (t, true, format!("text {t}"));
        assert_eq!(
            shared.post(item(1)),
            Some(item(1)),
            "not polled: given back"
        );
        assert!(shared.take(true).is_empty());
        assert_eq!(shared.post(item(2)), None);
        assert_eq!(shared.post(item(3)), None);
        assert_eq!(
            shared.take(true),
            vec![item(2), item(3)],
            "in the order they finished"
        );
        assert_eq!(shared.post(item(4)), None);
        assert_eq!(
            shared.take(false),
            vec![item(4)],
            "the last poll takes what is left"
        );
        assert_eq!(shared.post(item(5)), Some(item(5)));
        assert!(shared.take(false).is_empty());
    }

    /// The JS layer stops polling while a call is being left in the mailbox: before it
    /// is put there, the outcome comes back (for `done`); after, the last poll has it.
    #[test]
    fn an_outcome_left_as_polling_stops_is_given_back_or_taken_once() {
        let item = (7, false, "encoded error".to_string());
        for stop_at in [PostStep::BeforePush, PostStep::BeforeRecheck] {
            let shared = Shared::default();
            assert!(shared.take(true).is_empty());
            let last_poll = std::cell::RefCell::new(Vec::new());
            let back = shared.post_paused(item.clone(), |step| {
                if step == stop_at {
                    *last_poll.borrow_mut() = shared.take(false);
                }
            });
            let last_poll = last_poll.into_inner();
            match stop_at {
                PostStep::BeforePush => {
                    assert_eq!(back, Some(item.clone()), "given back: no poll will come");
                    assert!(last_poll.is_empty());
                }
                PostStep::BeforeRecheck => {
                    assert_eq!(back, None, "taken by the last poll");
                    assert_eq!(last_poll, vec![item.clone()]);
                }
            }
            assert!(shared.take(false).is_empty(), "nothing left behind");
        }
    }

    /// Threads finish calls while the JS side keeps switching polling on and off: every
    /// outcome arrives exactly once, through the mailbox or given back for `done`, and
    /// none is left behind once polling stops.
    #[test]
    fn every_outcome_arrives_exactly_once_while_polling_starts_and_stops() {
        const THREADS: u32 = 4;
        const EACH: u32 = 200_000;
        let shared = Arc::new(Shared::default());
        let start = Arc::new(std::sync::Barrier::new(THREADS as usize + 1));
        let finishing: Vec<_> = (0..THREADS)
            .map(|t| {
                let (shared, start) = (shared.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let mut given_back = Vec::new();
                    for i in 0..EACH {
                        let token = t * EACH + i;
                        if let Some(item) = shared.post((token, true, String::new())) {
                            given_back.push(item.0);
                        }
                    }
                    given_back
                })
            })
            .collect();
        // The JS side's rounds: polled for a turn, then stopped (its last poll takes what
        // is left; later outcomes must come back to their threads, for `done`).
        let mut seen = Vec::new();
        start.wait();
        while !finishing.iter().all(|h| h.is_finished()) {
            seen.extend(shared.take(true).into_iter().map(|c| c.0));
            seen.extend(shared.take(false).into_iter().map(|c| c.0));
        }
        for h in finishing {
            seen.extend(h.join().unwrap());
        }
        assert!(!shared.polling.load(Ordering::SeqCst));
        assert!(
            crate::util::sync::lock(&shared.mailbox).is_empty(),
            "nothing left in the mailbox after the last poll"
        );
        seen.sort_unstable();
        let all: Vec<u32> = (0..THREADS * EACH).collect();
        assert_eq!(seen, all, "each outcome exactly once");
    }
}
