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

use super::text::JsText;
use super::{panic_message, to_js_error};
use crate::error::PrismError;
use napi::bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, Env, ValueType};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// A handle's call: `(env, op, input text, token)` → the result's text when the call
/// finished on this thread, else `None` (see [`super::calls::CallPort::start`]).
pub(crate) type StartFn =
    dyn Fn(&Env, u32, String, u32) -> napi::Result<Option<String>> + Send + Sync + 'static;

/// Marks an external value as a [`CallTarget`] this addon made.
const TAG: u64 = 0x7072_6973_6d2d_6374; // "prism-ct"

/// What an external value made by [`CallTarget::new`] points at.
#[repr(C)]
struct Target {
    /// [`TAG`], first, so a foreign external is refused before anything else is read.
    tag: u64,
    start: Box<StartFn>,
}

/// A handle's calls as a JS external value (`ts` type `object`): returned once to the JS
/// layer, which passes it to `startCall` with every call. Dropped when V8 collects it.
pub struct CallTarget(Box<Target>);

impl CallTarget {
    pub(crate) fn new(start: Box<StartFn>) -> Self {
        Self(Box::new(Target { tag: TAG, start }))
    }
}

impl TypeName for CallTarget {
    fn type_name() -> &'static str {
        "CallTarget"
    }

    fn value_type() -> ValueType {
        ValueType::External
    }
}

impl ValidateNapiValue for CallTarget {}

unsafe extern "C" fn finalize_target(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the pointer `to_napi_value` leaked for this external, finalized once.
    drop(unsafe { Box::from_raw(data.cast::<Target>()) });
}

impl ToNapiValue for CallTarget {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let data = Box::into_raw(val.0);
        let mut out = ptr::null_mut();
        // SAFETY: `data` lives until V8 finalizes the external (`finalize_target`).
        let status = unsafe {
            sys::napi_create_external(
                env,
                data.cast(),
                Some(finalize_target),
                ptr::null_mut(),
                &mut out,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not handed to V8, so still ours.
            drop(unsafe { Box::from_raw(data) });
            return Err(napi::Error::from_reason("could not create a call target"));
        }
        Ok(out)
    }
}

/// The target an external value points at, `None` for any other value.
///
/// # Safety
/// `value` is a live value of `env`, read on the JS thread during a call.
unsafe fn target<'a>(env: sys::napi_env, value: sys::napi_value) -> Option<&'a Target> {
    let mut data = ptr::null_mut();
    // SAFETY: napi refuses (`napi_invalid_arg`) a value that is not an external.
    let status = unsafe { sys::napi_get_value_external(env, value, &mut data) };
    if status != sys::Status::napi_ok || data.is_null() {
        return None;
    }
    let target = data.cast::<Target>();
    // SAFETY: externals reach this function only from the JS layer, which passes the ones
    // `CallTarget` made (alive while the caller holds them); the tag is checked first.
    unsafe { ((*target).tag == TAG).then(|| &*target) }
}

/// Read `startCall`'s arguments and run the call.
///
/// # Safety
/// N-API callback arguments, on the JS thread.
unsafe fn start_call(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> napi::Result<Option<String>> {
    let mut argc = 4usize;
    let mut argv = [ptr::null_mut(); 4];
    // SAFETY: `argv` has room for `argc` values.
    let status = unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    if status != sys::Status::napi_ok || argc < 4 {
        return Err(to_js_error(PrismError::type_error(
            "startCall takes (target, op, input, token)",
        )));
    }
    // SAFETY: the callback's own arguments.
    let target = unsafe { target(env, argv[0]) }
        .ok_or_else(|| to_js_error(PrismError::type_error("startCall: not a call target")))?;
    // SAFETY: as above; each conversion checks its value's type.
    let (op, input, token) = unsafe {
        (
            u32::from_napi_value(env, argv[1])?,
            JsText::from_napi_value(env, argv[2])?,
            u32::from_napi_value(env, argv[3])?,
        )
    };
    let env = Env::from_raw(env);
    match catch_unwind(AssertUnwindSafe(|| {
        (target.start)(&env, op, input.0, token)
    })) {
        Ok(out) => out,
        Err(panic) => Err(to_js_error(PrismError::internal(format!(
            "internal error (a bug in prism-review): {}",
            panic_message(panic)
        )))),
    }
}

unsafe extern "C" fn start_call_callback(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: N-API calls this with its own env and callback info, on the JS thread.
    let out = unsafe { start_call(env, info) }.and_then(|text| {
        // SAFETY: as above.
        unsafe { <Option<String> as ToNapiValue>::to_napi_value(env, text) }
    });
    match out {
        Ok(value) => value,
        Err(e) => {
            // SAFETY: as above; the error becomes the pending exception.
            unsafe { napi::JsError::from(e).throw_into(env) };
            ptr::null_mut()
        }
    }
}

/// The raw `startCall` function, made once per environment by `callStarter()`.
pub struct StartCallFunction;

impl TypeName for StartCallFunction {
    fn type_name() -> &'static str {
        "Function"
    }

    fn value_type() -> ValueType {
        ValueType::Function
    }
}

impl ToNapiValue for StartCallFunction {
    unsafe fn to_napi_value(env: sys::napi_env, _val: Self) -> napi::Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        let name = "startCall";
        // SAFETY: a plain function of `env` over a static callback and no data.
        let status = unsafe {
            sys::napi_create_function(
                env,
                name.as_ptr().cast(),
                name.len() as isize,
                Some(start_call_callback),
                ptr::null_mut(),
                &mut out,
            )
        };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_reason("could not create startCall"));
        }
        Ok(out)
    }
}

/// `callStarter()`: `startCall(target, op, input, token)`, the entry of store and artifact
/// calls without a signal: the result's JSON text when the call finished on this thread,
/// else `null` and the text arrives through the port's `done(token, …)`. A `target` is a
/// handle's `callTarget(…)`.
#[napi_derive::napi(
    ts_return_type = "(target: object, op: number, input: string, token: number) => string | null"
)]
pub fn call_starter() -> StartCallFunction {
    StartCallFunction
}
