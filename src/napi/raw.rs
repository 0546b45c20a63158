//! Plain N-API functions over tagged external values: the per-call entries of store and
//! artifact calls (issue 13).
//!
//! A `#[napi]` class method costs about 4k instructions per call before any work (napi-rs
//! checks the receiver's type tag and unwraps it through private symbol lookups, and
//! records every borrowed class argument for async work). The entries called once or more
//! per store or service call (`startCall`, `pollCompletions`) are instead plain functions
//! made with `napi_create_function`, whose receiver is an [`External`]: a Rust value handed
//! to JS once as an external value and read back by pointer, after a tag check.

use super::{panic_message, to_js_error};
use crate::error::PrismError;
use napi::bindgen_prelude::{ToNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, ValueType};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// A Rust value JS may hold as an [`External`]: `TAG` marks the external values made for
/// it, so a foreign one is refused before anything else is read.
pub trait Tagged: Send + 'static {
    const TAG: u64;
    /// Its name in messages and typings.
    const NAME: &'static str;
}

/// What an external value points at: the tag first, then the value.
#[repr(C)]
struct Tag<T> {
    tag: u64,
    value: T,
}

/// `T` as a JS external value (`ts` type `object`), dropped when V8 collects it.
pub struct External<T: Tagged>(Box<Tag<T>>);

impl<T: Tagged> External<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Box::new(Tag { tag: T::TAG, value }))
    }
}

impl<T: Tagged> TypeName for External<T> {
    fn type_name() -> &'static str {
        T::NAME
    }

    fn value_type() -> ValueType {
        ValueType::External
    }
}

impl<T: Tagged> ValidateNapiValue for External<T> {}

unsafe extern "C" fn finalize<T: Tagged>(
    _env: sys::napi_env,
    data: *mut c_void,
    _hint: *mut c_void,
) {
    // SAFETY: `data` is the pointer `to_napi_value` leaked for this external, finalized once.
    drop(unsafe { Box::from_raw(data.cast::<Tag<T>>()) });
}

impl<T: Tagged> ToNapiValue for External<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let data = Box::into_raw(val.0);
        let mut out = ptr::null_mut();
        // SAFETY: `data` lives until V8 finalizes the external (`finalize`).
        let status = unsafe {
            sys::napi_create_external(
                env,
                data.cast(),
                Some(finalize::<T>),
                ptr::null_mut(),
                &mut out,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not handed to V8, so still ours.
            drop(unsafe { Box::from_raw(data) });
            return Err(napi::Error::from_reason(format!(
                "could not create a {}",
                T::NAME
            )));
        }
        Ok(out)
    }
}

/// The `T` an external value made by [`External::new`] points at; `None` for any other
/// value.
///
/// # Safety
/// `value` is a live value of `env`, read on the JS thread during a call. Externals reach
/// this only from the JS layer, which passes the ones this addon made (alive while the
/// caller holds them); the tag is read first.
pub(crate) unsafe fn external<'a, T: Tagged>(
    env: sys::napi_env,
    value: sys::napi_value,
) -> Option<&'a T> {
    let mut data = ptr::null_mut();
    // SAFETY: napi refuses (`napi_invalid_arg`) a value that is not an external.
    let status = unsafe { sys::napi_get_value_external(env, value, &mut data) };
    if status != sys::Status::napi_ok || data.is_null() {
        return None;
    }
    let tagged = data.cast::<Tag<T>>();
    // SAFETY: as documented; every external this addon makes starts with its `u64` tag.
    unsafe { ((*tagged).tag == T::TAG).then(|| &(*tagged).value) }
}

/// The first `N` arguments of a plain function's call; `None` when fewer were given.
///
/// # Safety
/// N-API callback arguments, on the JS thread.
pub(crate) unsafe fn args<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> Option<[sys::napi_value; N]> {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
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
    (status == sys::Status::napi_ok && argc >= N).then_some(argv)
}

/// A plain function's answer: `body`'s value, or its error (or panic, as an
/// `ERR_PRISM_INTERNAL` error) thrown.
///
/// # Safety
/// Called from a plain function's callback, on the JS thread, with its own `env`.
pub(crate) unsafe fn answer<T: ToNapiValue>(
    env: sys::napi_env,
    body: impl FnOnce() -> napi::Result<T>,
) -> sys::napi_value {
    let out = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(out) => out,
        Err(panic) => Err(to_js_error(PrismError::internal(format!(
            "internal error (a bug in prism-review): {}",
            panic_message(panic)
        )))),
    };
    // SAFETY: as documented.
    match out.and_then(|v| unsafe { T::to_napi_value(env, v) }) {
        Ok(value) => value,
        Err(e) => {
            // SAFETY: as above; the error becomes the pending exception.
            unsafe { napi::JsError::from(e).throw_into(env) };
            ptr::null_mut()
        }
    }
}

/// A plain JS function over a static callback and no data, made for each environment
/// that asks for it.
pub(crate) struct PlainFunction {
    pub name: &'static str,
    pub callback: unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value,
}

impl TypeName for PlainFunction {
    fn type_name() -> &'static str {
        "Function"
    }

    fn value_type() -> ValueType {
        ValueType::Function
    }
}

impl ToNapiValue for PlainFunction {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: a plain function of `env` over a static callback and no data.
        let status = unsafe {
            sys::napi_create_function(
                env,
                val.name.as_ptr().cast(),
                val.name.len() as isize,
                Some(val.callback),
                ptr::null_mut(),
                &mut out,
            )
        };
        if status != sys::Status::napi_ok {
            return Err(napi::Error::from_reason(format!(
                "could not create {}",
                val.name
            )));
        }
        Ok(out)
    }
}
