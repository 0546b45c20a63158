//! Bindings for `crate::review`.
//!
//! `createCodingPatchReviewManifest` has two paths (js/review.js picks):
//! - columns (the common case): js/review.js reads the three bulk lists (changed paths,
//!   diffstat rows, diagnostic rows) itself, once, into one joined string, a length per
//!   string and a `Float64Array` of counts; everything else crosses as the JSON text of
//!   the input with those lists `[]`. Only the positions of the retained entries come back
//!   (plus the small rest of the manifest as JSON text), and js/review.js builds the result
//!   from its own copies. This avoids `JSON.stringify` of the lists, copying 2 x 261 KB of
//!   JSON across and `JSON.parse` of the manifest (bench/review.bench.mjs).
//! - JSON text in, JSON text out, for any input the columns path declines (it returns
//!   `null`): unusual shapes, wrong types, lone surrogates. Errors come from this path, so
//!   every message is what it always was.

use super::guard;
use crate::error::{PrismError, Result};
use crate::review::Columns;
use crate::util::MAX_SAFE_INTEGER;
use napi::bindgen_prelude::{Env, Uint32Array, Unknown};
use napi::{sys, JsValue};
use napi_derive::napi;
use std::ptr;

/// `createCodingPatchReviewManifest(input)`: `input` is `JSON.stringify` of the caller's
/// object; the result is the JSON text of the artifact input without `preview`, a newline,
/// and the manifest's JSON text (js/review.js puts them together).
#[napi]
pub fn review_create_manifest(input: String) -> napi::Result<String> {
    guard(|| crate::review::create_manifest_binding(&input, crate::util::time::now_iso))
}

/// `resolveCodingReviewLimits(options?)`: JSON text of the options (`null` for none) in,
/// JSON text of the resolved limits out.
#[napi]
pub fn review_resolve_limits(options: String) -> napi::Result<String> {
    guard(|| crate::review::resolve_limits_json(&options))
}

/// The columns path of `createCodingPatchReviewManifest` (see the module note).
///
/// - `rest_json`: JSON text of the input with `changedPaths`, `diffstat`, `diagnostics` `[]`;
/// - `text`: the `paths + rows + 2 * diags` strings (changed paths, diffstat files, then
///   `file, severity` per diagnostic row) joined; `lens`: each one's length in UTF-16 code
///   units;
/// - `nums`: `additions, deletions` per diffstat row, then `count, generation` per
///   diagnostic row (safe non-negative integers);
/// - `order` (out, `paths + rows + diags` long): filled with the retained positions.
///
/// Returns `null` when the JSON text path must run instead, else
/// `{"n":[paths,rows,diags],"a":…,"r":…}` (see `ColumnsOutput`).
#[napi(js_name = "reviewCreateManifestColumns")]
#[allow(clippy::too_many_arguments)]
pub fn review_create_manifest_columns(
    env: Env,
    rest_json: String,
    text: Unknown,
    lens: &[u32],
    paths: u32,
    rows: u32,
    diags: u32,
    nums: &[f64],
    mut order: Uint32Array,
) -> napi::Result<Option<String>> {
    let units = read_utf16(env.raw(), text.raw());
    // SAFETY: a synchronous call on the JS thread: nothing else touches the buffer meanwhile.
    let order = unsafe { order.as_mut() };
    guard(|| {
        let units = units?;
        let (np, nr, ng) = (paths as usize, rows as usize, diags as usize);
        let (Some(strings), Some(positions), Some(want_nums)) = (
            np.checked_add(nr)
                .and_then(|n| n.checked_add(ng.checked_mul(2)?)),
            np.checked_add(nr).and_then(|n| n.checked_add(ng)),
            nr.checked_add(ng).and_then(|n| n.checked_mul(2)),
        ) else {
            return Err(PrismError::internal("review columns: counts overflow"));
        };
        if lens.len() != strings || order.len() != positions || nums.len() != want_nums {
            return Err(PrismError::internal("review columns: mismatched lengths"));
        }
        let Some((joined, bounds)) = decode(&units, lens)? else {
            return Ok(None);
        };
        let strs: Vec<&str> = bounds
            .windows(2)
            .map(|w| match w {
                [a, b] => joined.get(*a..*b).unwrap_or_default(),
                _ => "",
            })
            .collect();
        let mut counts = Vec::with_capacity(nums.len());
        for &v in nums {
            // js/review.js sends only safe non-negative integers; anything else declines.
            if !(v >= 0.0 && v <= MAX_SAFE_INTEGER as f64 && v.fract() == 0.0) {
                return Ok(None);
            }
            counts.push(v as u64);
        }
        let cols = columns(&strs, &counts, np, nr);
        let Some(out) =
            crate::review::create_manifest_columns(&rest_json, cols, crate::util::time::now_iso)?
        else {
            return Ok(None);
        };
        for (slot, v) in order.iter_mut().zip(&out.order) {
            *slot = *v;
        }
        let [a, b, c] = out.counts;
        let mut s = String::with_capacity(out.small_json.len() + 40);
        s.push_str(&format!("{{\"n\":[{a},{b},{c}],"));
        s.push_str(out.small_json.get(1..).unwrap_or_default());
        Ok(Some(s))
    })
}

/// The three lists from the strings and counts (lengths already checked).
fn columns<'a>(strs: &[&'a str], counts: &[u64], np: usize, nr: usize) -> Columns<'a> {
    let (s_paths, s_rest) = strs.split_at(np.min(strs.len()));
    let (s_rows, s_diags) = s_rest.split_at(nr.min(s_rest.len()));
    let (n_rows, n_diags) = counts.split_at((nr * 2).min(counts.len()));
    Columns {
        changed_paths: s_paths.to_vec(),
        diffstat: s_rows
            .iter()
            .zip(n_rows.chunks_exact(2))
            .map(|(f, n)| match n {
                [a, d] => (*f, *a, *d),
                _ => (*f, 0, 0),
            })
            .collect(),
        diagnostics: s_diags
            .chunks_exact(2)
            .zip(n_diags.chunks_exact(2))
            .map(|(s, n)| match (s, n) {
                ([file, severity], [count, generation]) => (*file, *severity, *count, *generation),
                _ => ("", "", 0, 0),
            })
            .collect(),
    }
}

/// The code units of a JS string (Node copies them without transcoding).
fn read_utf16(env: sys::napi_env, v: sys::napi_value) -> Result<Vec<u16>> {
    let failed = || PrismError::type_error("review columns: text must be a string");
    let mut len = 0usize;
    // SAFETY: a null buffer asks only for the length in UTF-16 code units; a non-string
    // makes the call fail (checked).
    let status = unsafe { sys::napi_get_value_string_utf16(env, v, ptr::null_mut(), 0, &mut len) };
    if status != sys::Status::napi_ok {
        return Err(failed());
    }
    let cap = len.checked_add(1).ok_or_else(failed)?;
    let mut buf: Vec<u16> = Vec::with_capacity(cap);
    let mut written = 0usize;
    // SAFETY: `buf` has `cap` writable code units; Node writes at most `cap - 1` and a NUL.
    let status =
        unsafe { sys::napi_get_value_string_utf16(env, v, buf.as_mut_ptr(), cap, &mut written) };
    if status != sys::Status::napi_ok {
        return Err(failed());
    }
    // SAFETY: Node initialised `written` code units (<= len < cap).
    unsafe { buf.set_len(written.min(len)) };
    Ok(buf)
}

/// The joined strings as UTF-8 and the byte offset where each one starts (plus the end).
/// `None` when a string holds a lone surrogate (the JSON text path decides what that means).
fn decode(units: &[u16], lens: &[u32]) -> Result<Option<(String, Vec<usize>)>> {
    let mismatch = || PrismError::internal("review columns: lengths do not match the text");
    let mut bounds = Vec::with_capacity(lens.len() + 1);
    bounds.push(0usize);
    if units.iter().all(|&u| u < 0x80) {
        let bytes: Vec<u8> = units.iter().map(|&u| u as u8).collect();
        let text = String::from_utf8(bytes).map_err(|_| mismatch())?;
        let mut at = 0usize;
        for &l in lens {
            at = at.checked_add(l as usize).ok_or_else(mismatch)?;
            bounds.push(at);
        }
        if at != units.len() {
            return Err(mismatch());
        }
        return Ok(Some((text, bounds)));
    }
    let mut text = String::with_capacity(units.len() + units.len() / 2);
    let mut at = 0usize;
    for &l in lens {
        let end = at.checked_add(l as usize).ok_or_else(mismatch)?;
        let seg = units.get(at..end).ok_or_else(mismatch)?;
        for c in char::decode_utf16(seg.iter().copied()) {
            match c {
                Ok(c) => text.push(c),
                Err(_) => return Ok(None),
            }
        }
        bounds.push(text.len());
        at = end;
    }
    if at != units.len() {
        return Err(mismatch());
    }
    Ok(Some((text, bounds)))
}

/// `assertCodingPatchAccepted({ review, artifact, limits? })`: JSON text of the outcome.
#[napi]
pub fn review_assert_accepted(input: String) -> napi::Result<String> {
    guard(|| crate::review::assert_accepted_json(&input))
}

/// Constants the JS layer charges while it writes review input:
/// `{ manifestInputBytes, assertInputBytes }` (the core's own caps).
#[napi]
pub fn review_constants() -> String {
    serde_json::json!({
        "manifestInputBytes": crate::review::MANIFEST_INPUT_BYTES,
        "assertInputBytes": crate::review::ASSERT_INPUT_BYTES,
    })
    .to_string()
}
