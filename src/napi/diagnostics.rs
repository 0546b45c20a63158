//! Bindings for `crate::diagnostics`.
//!
//! Unlike the package default (JSON text both ways, see `src/napi/mod.rs`), the bulk
//! calls read the caller's arrays directly through Node-API and build the result objects
//! directly: on the diagnostics benchmark JSON text in both directions measured 4-6x a
//! JSON round trip at n >= 10 000 against a 3x target; this path 1.9-2.8x (numbers and
//! command in the README). Every
//! field is read exactly once and turned into the same [`RawEntry`] the JSON path builds,
//! so one validator serves both. Small arguments (options) still cross as JSON text.

use super::guard;
use crate::diagnostics::json::{self, delta_args};
use crate::diagnostics::raw::{Num, RawDeltaInput, RawEntry, RawField, RawList};
use crate::diagnostics::text::utf16_to_string;
use crate::diagnostics::{
    check_input_len, delta_indices, identity_order, identity_runs, Code, NormalizedDiagnostic,
    Normalizer,
};
use crate::error::{PrismError, Result};
use napi::bindgen_prelude::{Env, ToNapiValue, TypeName, Unknown, ValueType};
use napi::{sys, JsValue};
use napi_derive::napi;
use std::borrow::Cow;
use std::collections::HashMap;
use std::ptr;

/// A raw JS value handed back to napi-rs unchanged.
pub struct RawJs(sys::napi_value);

impl TypeName for RawJs {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for RawJs {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        Ok(val.0)
    }
}

/// Thin safe wrappers over the Node-API calls used here. A failing call (a throwing
/// getter or Proxy trap leaves an exception pending) becomes an error; the pending JS
/// exception is what the caller sees.
struct Js {
    env: sys::napi_env,
}

const READ_FAILED: &str = "input could not be read (a getter or Proxy trap threw)";

impl Js {
    fn ok(&self, status: sys::napi_status) -> Result<()> {
        if status == sys::Status::napi_ok {
            Ok(())
        } else {
            Err(PrismError::type_error(READ_FAILED))
        }
    }

    fn string(&self, s: &str) -> Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: `s` is valid UTF-8 of the given length; `out` is a valid out-pointer.
        self.ok(unsafe {
            sys::napi_create_string_utf8(self.env, s.as_ptr().cast(), s.len() as isize, &mut out)
        })?;
        Ok(out)
    }

    fn number(&self, v: f64) -> Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: plain value creation with a valid out-pointer.
        self.ok(unsafe { sys::napi_create_double(self.env, v, &mut out) })?;
        Ok(out)
    }

    fn object(&self) -> Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: plain value creation with a valid out-pointer.
        self.ok(unsafe { sys::napi_create_object(self.env, &mut out) })?;
        Ok(out)
    }

    fn array(&self, len: usize) -> Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: plain value creation with a valid out-pointer.
        self.ok(unsafe { sys::napi_create_array_with_length(self.env, len, &mut out) })?;
        Ok(out)
    }

    fn type_of(&self, v: sys::napi_value) -> Result<i32> {
        let mut t = 0;
        // SAFETY: `v` is a live handle of this call's scope.
        self.ok(unsafe { sys::napi_typeof(self.env, v, &mut t) })?;
        Ok(t)
    }

    fn is_array(&self, v: sys::napi_value) -> Result<bool> {
        let mut b = false;
        // SAFETY: `v` is a live handle of this call's scope.
        self.ok(unsafe { sys::napi_is_array(self.env, v, &mut b) })?;
        Ok(b)
    }

    fn len(&self, arr: sys::napi_value) -> Result<u32> {
        let mut n = 0;
        // SAFETY: `arr` is a live array handle.
        self.ok(unsafe { sys::napi_get_array_length(self.env, arr, &mut n) })?;
        Ok(n)
    }

    fn element(&self, arr: sys::napi_value, i: u32) -> Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: `arr` is a live object handle; `out` is a valid out-pointer.
        self.ok(unsafe { sys::napi_get_element(self.env, arr, i, &mut out) })?;
        Ok(out)
    }

    fn get(&self, obj: sys::napi_value, key: sys::napi_value) -> Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: `obj` and `key` are live handles; `out` is a valid out-pointer.
        self.ok(unsafe { sys::napi_get_property(self.env, obj, key, &mut out) })?;
        Ok(out)
    }

    fn set(&self, obj: sys::napi_value, key: sys::napi_value, v: sys::napi_value) -> Result<()> {
        // SAFETY: all three are live handles of this call's scope.
        self.ok(unsafe { sys::napi_set_property(self.env, obj, key, v) })
    }

    fn set_element(&self, arr: sys::napi_value, i: u32, v: sys::napi_value) -> Result<()> {
        // SAFETY: `arr` and `v` are live handles.
        self.ok(unsafe { sys::napi_set_element(self.env, arr, i, v) })
    }

    fn f64(&self, v: sys::napi_value) -> Result<f64> {
        let mut out = 0.0;
        // SAFETY: `v` is a live handle whose type was checked to be number.
        self.ok(unsafe { sys::napi_get_value_double(self.env, v, &mut out) })?;
        Ok(out)
    }

    /// The text of a JS string (lone surrogates become U+FFFD). Read as UTF-16, which
    /// Node copies without transcoding, then converted here in one pass.
    fn rust_string(&self, v: sys::napi_value) -> Result<String> {
        Ok(self.rust_string_checked(v)?.0)
    }

    /// [`Self::rust_string`], and whether the text is exact (no lone surrogate replaced).
    fn rust_string_checked(&self, v: sys::napi_value) -> Result<(String, bool)> {
        let mut len = 0usize;
        // SAFETY: a null buffer asks only for the length in UTF-16 code units.
        self.ok(unsafe {
            sys::napi_get_value_string_utf16(self.env, v, ptr::null_mut(), 0, &mut len)
        })?;
        let cap = len
            .checked_add(1)
            .ok_or_else(|| PrismError::type_error("string too long"))?;
        let mut buf: Vec<u16> = Vec::with_capacity(cap);
        let mut written = 0usize;
        // SAFETY: `buf` has `cap` writable code units; Node writes at most `cap - 1` plus a
        // terminating NUL and reports how many it wrote (excluding the NUL).
        self.ok(unsafe {
            sys::napi_get_value_string_utf16(self.env, v, buf.as_mut_ptr(), cap, &mut written)
        })?;
        // SAFETY: Node initialised `written` code units (<= len < cap).
        unsafe { buf.set_len(written.min(len)) };
        Ok(utf16_to_string(&buf))
    }

    /// A JS string from Rust text, created from UTF-16 (a copy, no decoding in V8).
    fn string_utf16(&self, s: &str) -> Result<sys::napi_value> {
        // UTF-16 never needs more code units than UTF-8 has bytes.
        let mut units: Vec<u16> = Vec::with_capacity(s.len());
        units.extend(s.encode_utf16());
        let mut out = ptr::null_mut();
        // SAFETY: `units` holds `units.len()` initialised code units.
        self.ok(unsafe {
            sys::napi_create_string_utf16(self.env, units.as_ptr(), units.len() as isize, &mut out)
        })?;
        Ok(out)
    }

    /// One field as the validator sees it.
    fn field(&self, v: sys::napi_value) -> Result<RawField<'static>> {
        use sys::ValueType as T;
        Ok(match self.type_of(v)? {
            T::napi_undefined => RawField::Absent,
            T::napi_null => RawField::Null,
            T::napi_number => RawField::Num(Num::F(self.f64(v)?)),
            T::napi_string => RawField::Str(Cow::Owned(self.rust_string(v)?)),
            T::napi_boolean => RawField::Other("boolean"),
            T::napi_function => RawField::Other("function"),
            T::napi_symbol => RawField::Other("symbol"),
            T::napi_bigint => RawField::Other("bigint"),
            _ => {
                if self.is_array(v)? {
                    RawField::Other("array")
                } else {
                    RawField::Other("object")
                }
            }
        })
    }

    /// `Some(type)` for anything that is not a plain object (arrays included).
    fn field_shallow(&self, v: sys::napi_value) -> Result<Option<&'static str>> {
        use sys::ValueType as T;
        Ok(match self.type_of(v)? {
            T::napi_undefined => Some("undefined"),
            T::napi_null => Some("null"),
            T::napi_number => Some("number"),
            T::napi_string => Some("string"),
            T::napi_boolean => Some("boolean"),
            T::napi_function => Some("function"),
            T::napi_symbol => Some("symbol"),
            T::napi_bigint => Some("bigint"),
            _ if self.is_array(v)? => Some("array"),
            _ => None,
        })
    }
}

/// Property keys created once per call.
struct Keys {
    file: sys::napi_value,
    line: sys::napi_value,
    character: sys::napi_value,
    end_line: sys::napi_value,
    end_character: sys::napi_value,
    severity: sys::napi_value,
    message: sys::napi_value,
    source: sys::napi_value,
    code: sys::napi_value,
    generation: sys::napi_value,
}

impl Keys {
    fn new(js: &Js) -> Result<Self> {
        Ok(Self {
            file: js.string("file")?,
            line: js.string("line")?,
            character: js.string("character")?,
            end_line: js.string("endLine")?,
            end_character: js.string("endCharacter")?,
            severity: js.string("severity")?,
            message: js.string("message")?,
            source: js.string("source")?,
            code: js.string("code")?,
            generation: js.string("generation")?,
        })
    }
}

/// Read one entry, each known property exactly once. Returns the entry and the handle of
/// its `message` (so an unchanged message is handed back without re-encoding).
fn read_entry(
    js: &Js,
    k: &Keys,
    v: sys::napi_value,
    lazy: bool,
) -> Result<(RawEntry<'static>, Option<sys::napi_value>)> {
    if let Some(t) = js.field_shallow(v)? {
        return Ok((
            RawEntry {
                not_object: Some(t),
                ..RawEntry::default()
            },
            None,
        ));
    }
    let message = js.get(v, k.message)?;
    let is_string = js.type_of(message)? == sys::ValueType::napi_string;
    let (message_field, handle) = if is_string && lazy {
        // Checked to be a string; its text is fetched later only where needed.
        (RawField::Str(Cow::Borrowed("")), Some(message))
    } else if is_string {
        let (text, exact) = js.rust_string_checked(message)?;
        // Only an exact string may be handed back as it is.
        (RawField::Str(Cow::Owned(text)), exact.then_some(message))
    } else {
        (js.field(message)?, None)
    };
    let e = RawEntry {
        not_object: None,
        file: js.field(js.get(v, k.file)?)?,
        line: js.field(js.get(v, k.line)?)?,
        character: js.field(js.get(v, k.character)?)?,
        end_line: js.field(js.get(v, k.end_line)?)?,
        end_character: js.field(js.get(v, k.end_character)?)?,
        severity: js.field(js.get(v, k.severity)?)?,
        message: message_field,
        source: js.field(js.get(v, k.source)?)?,
        code: js.field(js.get(v, k.code)?)?,
        generation: if lazy {
            js.field(js.get(v, k.generation)?)?
        } else {
            RawField::Absent
        },
    };
    Ok((e, handle))
}

/// The array at `v`, or why not: `Ok(None)` for `undefined`, `Err(type)` otherwise.
fn as_array(js: &Js, v: sys::napi_value) -> Result<std::result::Result<Option<u32>, &'static str>> {
    if js.is_array(v)? {
        let n = js.len(v)?;
        check_input_len(n as usize, "array")?;
        return Ok(Ok(Some(n)));
    }
    Ok(match js.field_shallow(v)? {
        Some("undefined") => Ok(None),
        t => Err(t.unwrap_or("object")),
    })
}

/// A list of normalized diagnostics, validated as it is read (the first bad entry stops
/// the walk), with the message handle of each entry. Same rules and messages as
/// [`json::strict_list`].
type StrictList = (
    Option<Vec<NormalizedDiagnostic>>,
    Vec<Option<sys::napi_value>>,
);

fn read_strict_list(
    js: &Js,
    k: &Keys,
    v: sys::napi_value,
    name: &str,
    required: bool,
) -> Result<StrictList> {
    let n = match as_array(js, v)? {
        Ok(Some(n)) => n,
        Ok(None) => {
            return json::strict_list(RawList::Absent, name, required).map(|l| (l, Vec::new()))
        }
        Err(t) => {
            return json::strict_list(RawList::Wrong(t), name, required).map(|l| (l, Vec::new()))
        }
    };
    let mut list = Vec::with_capacity((n as usize).min(1 << 16));
    let mut messages = Vec::with_capacity((n as usize).min(1 << 16));
    for i in 0..n {
        let (e, m) = read_entry(js, k, js.element(v, i)?, true)?;
        list.push(json::strict_entry(e, || format!("{name}[{i}]"), true)?);
        messages.push(m);
    }
    Ok((Some(list), messages))
}

/// The result array; each kept entry comes with the caller's own message string when the
/// message came through unchanged.
fn build_output(
    js: &Js,
    k: &Keys,
    kept: &[(NormalizedDiagnostic, Option<sys::napi_value>)],
) -> Result<sys::napi_value> {
    let severities = [
        js.string("error")?,
        js.string("warning")?,
        js.string("info")?,
        js.string("hint")?,
    ];
    let mut files: HashMap<&str, sys::napi_value> = HashMap::new();
    let arr = js.array(kept.len())?;
    for (slot, (d, original)) in kept.iter().enumerate() {
        let o = js.object()?;
        let file = match files.get(d.file.as_str()) {
            Some(&f) => f,
            None => {
                let f = js.string(&d.file)?;
                files.insert(d.file.as_str(), f);
                f
            }
        };
        js.set(o, k.file, file)?;
        js.set(o, k.line, js.number(d.line as f64)?)?;
        js.set(o, k.character, js.number(d.character as f64)?)?;
        if let Some(v) = d.end_line {
            js.set(o, k.end_line, js.number(v as f64)?)?;
        }
        if let Some(v) = d.end_character {
            js.set(o, k.end_character, js.number(v as f64)?)?;
        }
        let sev = severities
            .get(d.severity as usize)
            .copied()
            .ok_or_else(|| PrismError::internal("severity out of range"))?;
        js.set(o, k.severity, sev)?;
        let message = match original {
            Some(m) => *m,
            None => js.string_utf16(&d.message)?,
        };
        js.set(o, k.message, message)?;
        if let Some(s) = &d.source {
            js.set(o, k.source, js.string(s)?)?;
        }
        match &d.code {
            Some(Code::Text(c)) => js.set(o, k.code, js.string(c)?)?,
            Some(Code::Int(n)) => js.set(o, k.code, js.number(*n as f64)?)?,
            None => {}
        }
        js.set(o, k.generation, js.number(d.generation as f64)?)?;
        let idx = u32::try_from(slot).map_err(|_| PrismError::internal("too many results"))?;
        js.set_element(arr, idx, o)?;
    }
    Ok(arr)
}

/// `normalizeDiagnostics(raw, options)`: reads `raw` (an array) directly, returns the
/// array of normalized diagnostics. `options` is JSON text.
#[napi(js_name = "diagnosticsNormalize", ts_return_type = "unknown")]
pub fn diagnostics_normalize(env: Env, raw: Unknown, options_json: String) -> napi::Result<RawJs> {
    let js = Js { env: env.raw() };
    let raw = raw.raw();
    guard(|| {
        let opts = json::parse_options_json(&options_json)?;
        let mut normalizer = Normalizer::new(&opts)?;
        let k = Keys::new(&js)?;
        let n = match as_array(&js, raw)? {
            Ok(Some(n)) => n,
            Ok(None) => {
                return Err(PrismError::type_error(
                    "raw must be an array of diagnostics, got undefined",
                ))
            }
            Err(t) => {
                return Err(PrismError::type_error(format!(
                    "raw must be an array of diagnostics, got {t}"
                )))
            }
        };
        // Streamed: only kept entries are retained.
        let mut kept = Vec::new();
        for i in 0..n {
            let (e, handle) = read_entry(&js, &k, js.element(raw, i)?, false)?;
            let len = match &e.message {
                RawField::Str(s) => s.len(),
                _ => usize::MAX,
            };
            if let Some(d) = normalizer.push(e) {
                // Stripping and truncation only remove text, so an equal UTF-8 length
                // means the message is unchanged: hand back the caller's own string.
                let reuse = handle.filter(|_| len == d.message.len());
                kept.push((d, reuse));
            }
        }
        build_output(&js, &k, &kept).map(RawJs)
    })
}

/// `diagnosticDelta(input)`: reads `input.next` / `input.previous` directly and returns
/// `{ added, removed, unchanged, generation }` as JSON text of indices into them; the JS
/// layer maps the indices back to entries.
#[napi(js_name = "diagnosticsDeltaIndices")]
pub fn diagnostics_delta_indices(env: Env, input: Unknown) -> napi::Result<String> {
    let js = Js { env: env.raw() };
    let input = input.raw();
    guard(|| {
        if let Some(t) = js.field_shallow(input)? {
            return Err(delta_args(RawDeltaInput {
                not_object: Some(t),
                ..RawDeltaInput::default()
            })
            .err()
            .unwrap_or_else(|| PrismError::type_error("input must be an object")));
        }
        let k = Keys::new(&js)?;
        let next = js.get(input, js.string("next")?)?;
        let previous = js.get(input, js.string("previous")?)?;
        let generation = js.field(js.get(input, k.generation)?)?;
        // Same order of checks as the JSON path: generation, next, previous.
        let generation = json::safe_u64_arg(&generation, "input.generation")?;
        let (next, next_msgs) = read_strict_list(&js, &k, next, "input.next", true)?;
        let (previous, prev_msgs) = read_strict_list(&js, &k, previous, "input.previous", false)?;
        let mut a = json::DeltaArgs {
            next: next.unwrap_or_default(),
            previous,
            generation,
        };
        fill_duplicate_messages(&js, &mut a.next, &next_msgs)?;
        if let Some(p) = a.previous.as_mut() {
            fill_duplicate_messages(&js, p, &prev_msgs)?;
        }
        let r = delta_indices(&a.next, a.previous.as_deref(), a.generation);
        serde_json::to_string(&r).map_err(|e| PrismError::internal(e.to_string()))
    })
}

/// Messages only decide which of several entries with one identity is kept, so only the
/// entries that share an identity get their message text (read from the handle taken
/// when the entry was read, never from the property again).
fn fill_duplicate_messages(
    js: &Js,
    list: &mut [NormalizedDiagnostic],
    handles: &[Option<sys::napi_value>],
) -> Result<()> {
    let order = identity_order(list);
    for (start, end) in identity_runs(list, &order) {
        if end - start > 1 {
            for &i in order.get(start..end).unwrap_or(&[]) {
                if let (Some(d), Some(Some(h))) = (list.get_mut(i), handles.get(i)) {
                    d.message = js.rust_string(*h)?;
                }
            }
        }
    }
    Ok(())
}

/// `resolveDiagnosticsLimits(options?)`: JSON text in and out.
#[napi(js_name = "diagnosticsResolveLimits")]
pub fn diagnostics_resolve_limits(options_json: String) -> napi::Result<String> {
    guard(|| json::resolve_limits_json(&options_json))
}

/// `diagnosticIdentity(d)`: JSON text in, the identity string out.
#[napi(js_name = "diagnosticsIdentity")]
pub fn diagnostics_identity(diagnostic_json: String) -> napi::Result<String> {
    guard(|| json::identity_json(&diagnostic_json))
}

/// Kept for the JSON-text comparison in the benchmark (feature `test-exports`):
/// `normalizeDiagnostics` with raw and options as JSON text, result as JSON text.
#[cfg(feature = "test-exports")]
#[napi(js_name = "diagnosticsNormalizeJson")]
pub fn diagnostics_normalize_json(raw_json: String, options_json: String) -> napi::Result<String> {
    guard(|| json::normalize_json(&raw_json, &options_json))
}

/// Kept for the JSON-text comparison in the benchmark (feature `test-exports`).
#[cfg(feature = "test-exports")]
#[napi(js_name = "diagnosticsDeltaIndicesJson")]
pub fn diagnostics_delta_indices_json(input_json: String) -> napi::Result<String> {
    guard(|| json::delta_indices_json(&input_json))
}
