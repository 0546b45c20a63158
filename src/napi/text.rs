//! Request text read from JS in one pass (issue 13).
//!
//! napi-rs reads a JS string into a `String` in two passes over it (V8 measures its UTF-8
//! length, then writes it into a zeroed buffer): about 2k instructions of a memory-store
//! call. [`JsText`] asks V8 for the string's length in UTF-16 units (no pass over it) and
//! writes it once into a buffer of the most UTF-8 bytes that many units can take (three
//! each); a long string (over [`ONE_PASS_UNITS`]) is read as napi-rs reads it, so no
//! request reserves more than it needs by more than 48 KiB. (Answers stay napi-rs
//! strings: handing ASCII text to V8 as Latin-1 measured slower than UTF-8.)

use napi::bindgen_prelude::{FromNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, Status, ValueType};
use std::ptr;

/// Longest string (in UTF-16 units) [`JsText`] reads in one pass.
const ONE_PASS_UNITS: usize = 16 * 1024;

/// A JS string argument, as UTF-8 (`ts_arg_type = "string"`).
pub struct JsText(pub String);

impl TypeName for JsText {
    fn type_name() -> &'static str {
        "String"
    }

    fn value_type() -> ValueType {
        ValueType::String
    }
}

impl ValidateNapiValue for JsText {}

fn expect_ok(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            Status::StringExpected,
            "expected a string".to_string(),
        ))
    }
}

impl FromNapiValue for JsText {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        let mut units = 0usize;
        // SAFETY: a null buffer asks only for the length (UTF-16 units), as napi documents.
        expect_ok(unsafe {
            sys::napi_get_value_string_utf16(env, value, ptr::null_mut(), 0, &mut units)
        })?;
        if units > ONE_PASS_UNITS {
            // SAFETY: the caller's env and value, as given to us.
            return unsafe { String::from_napi_value(env, value) }.map(JsText);
        }
        // A UTF-16 unit takes at most three UTF-8 bytes (a lone surrogate becomes U+FFFD,
        // three too), and napi writes a terminating NUL after the text.
        let capacity = units * 3 + 1;
        let mut bytes: Vec<u8> = Vec::with_capacity(capacity);
        let mut written = 0usize;
        // SAFETY: napi writes at most `capacity` bytes (the text and its NUL) into the
        // buffer, and reports how many bytes of text it wrote.
        expect_ok(unsafe {
            sys::napi_get_value_string_utf8(
                env,
                value,
                bytes.as_mut_ptr().cast(),
                capacity,
                &mut written,
            )
        })?;
        // SAFETY: `written` bytes were initialized, and `written < capacity`.
        unsafe { bytes.set_len(written.min(capacity - 1)) };
        String::from_utf8(bytes).map(JsText).map_err(|_| {
            napi::Error::new(
                Status::InvalidArg,
                "a string did not convert to UTF-8".to_string(),
            )
        })
    }
}
