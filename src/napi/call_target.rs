//! `startCall(target, op, input, token)`: the one native entry of store and artifact
//! calls that run without an AbortSignal (issue 13).
//!
//! A `#[napi]` class method costs about 4k instructions per call before any work: napi-rs
//! checks the receiver's type tag and unwraps it (private symbol lookups), and records
//! every borrowed class argument for async work that these calls never hand it (the
//! store's `start` took two, the handle and the port). Here the receiver is a
//! [`CallTarget`]: a handle's calls bound once, when the JS layer wraps the handle, to
//! the port they complete through, and handed to JS as an external value, which this
//! plain N-API function reads back by pointer. What a call does is unchanged: the
//! target's function is the handle's own `start` (see `calls.rs` for how it completes).

use super::raw::{self, External, PlainFunction, Tagged};
use super::text::JsText;
use super::to_js_error;
use crate::error::PrismError;
use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Env};

/// A handle's call: `(env, op, input text, token)` → the result's text when the call
/// finished on this thread, else `None` (see [`super::calls::CallPort::start`]).
pub(crate) type StartFn =
    dyn Fn(&Env, u32, String, u32) -> napi::Result<Option<String>> + Send + Sync + 'static;

/// A handle's calls, bound to the port they complete through: what an external value
/// made by [`CallTarget::new`] points at.
pub struct Target(Box<StartFn>);

impl Tagged for Target {
    const TAG: u64 = 0x7072_6973_6d2d_6374; // "prism-ct"
    const NAME: &'static str = "CallTarget";
}

/// A handle's calls as a JS external value (`ts` type `object`): returned once to the JS
/// layer, which passes it to `startCall` with every call. Dropped when V8 collects it.
pub type CallTarget = External<Target>;

impl CallTarget {
    pub(crate) fn of(start: Box<StartFn>) -> Self {
        External::new(Target(start))
    }
}

/// Read `startCall`'s arguments and run the call.
///
/// # Safety
/// N-API callback arguments, on the JS thread.
unsafe fn start_call(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> napi::Result<Option<String>> {
    // SAFETY: as documented.
    let Some([target, op, input, token]) = (unsafe { raw::args::<4>(env, info) }) else {
        return Err(to_js_error(PrismError::type_error(
            "startCall takes (target, op, input, token)",
        )));
    };
    // SAFETY: the callback's own arguments.
    let target = unsafe { raw::external::<Target>(env, target) }
        .ok_or_else(|| to_js_error(PrismError::type_error("startCall: not a call target")))?;
    // SAFETY: as above; each conversion checks its value's type.
    let (op, input, token) = unsafe {
        (
            u32::from_napi_value(env, op)?,
            JsText::from_napi_value(env, input)?,
            u32::from_napi_value(env, token)?,
        )
    };
    (target.0)(&Env::from_raw(env), op, input.0, token)
}

unsafe extern "C" fn start_call_callback(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: N-API calls this with its own env and callback info, on the JS thread.
    unsafe { raw::answer(env, || start_call(env, info)) }
}

/// `callStarter()`: `startCall(target, op, input, token)`, the entry of store and artifact
/// calls without a signal: the result's JSON text when the call finished on this thread,
/// else `null` and the text arrives through the port's `done(token, …)`. A `target` is a
/// handle's `callTarget(…)`.
#[napi_derive::napi(
    ts_return_type = "(target: object, op: number, input: string, token: number) => string | null"
)]
pub fn call_starter() -> PlainFunction {
    PlainFunction {
        name: "startCall",
        callback: start_call_callback,
    }
}
