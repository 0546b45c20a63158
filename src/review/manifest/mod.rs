//! `createCodingPatchReviewManifest`: read the input, validate every member, charge the caps,
//! normalize, digest.
//!
//! - [`model`]: the input/content structs (one per JSON object, members in canonical order);
//! - [`read`]: the one reader (serde over the parsed JSON, naming the member path in errors);
//! - [`finish`]: the rules, caps, canonical order, digest and size check;
//! - [`canonical`]: the canonical JSON, the manifest and artifact input texts, and the digest
//!   of a manifest given as a JSON value.
//!
//! Two entry points for the binding: [`create_manifest_binding`] (JSON text in and out) and
//! [`create_manifest_columns`] (the three bulk lists read by JavaScript, the rest as JSON
//! text). Both build the same [`model::Content`] and go through the same `finish`.

pub(crate) mod canonical;
pub(crate) mod finish;
pub(crate) mod model;
pub(crate) mod read;

pub use canonical::digest_of_manifest_value;

use super::limits::{ReviewLimits, MANIFEST_INPUT_BYTES};
use super::text::limit_err;
use crate::error::{PrismError, Result};
use model::{ChangedPath, Diagnostic, DiffstatRow, Text};
use std::borrow::Cow;

fn input_too_large(len: usize) -> PrismError {
    limit_err(format!(
        "input is {len} bytes of JSON; the cap is {MANIFEST_INPUT_BYTES} bytes"
    ))
}

/// JSON text in; out: the artifact input's JSON text without `preview`, a newline, and the
/// manifest's JSON text (the manifest crosses once). `now` gives the default `createdAt`.
pub fn create_manifest_binding(text: &str, now: impl FnOnce() -> String) -> Result<String> {
    if text.len() > MANIFEST_INPUT_BYTES {
        return Err(input_too_large(text.len()));
    }
    if let Some((content, limits)) = read::read_input_text(text) {
        return finish::finish(content, limits, now)?.binding_text();
    }
    via_value(text, now)
}

/// The parsed-value read: every input the fast read from text declines ends here.
fn via_value(text: &str, now: impl FnOnce() -> String) -> Result<String> {
    let value = read::read_text(text)?;
    let (content, limits) = read::read_input(&value)?;
    finish::finish(content, limits, now)?.binding_text()
}

/// [`create_manifest_binding`] without the fast read from text.
#[cfg(test)]
pub(crate) fn create_manifest_via_value(
    text: &str,
    now: impl FnOnce() -> String,
) -> Result<String> {
    if text.len() > MANIFEST_INPUT_BYTES {
        return Err(input_too_large(text.len()));
    }
    via_value(text, now)
}

/// The three bulk lists of an input, read by the binding outside JSON text and already
/// type-checked there: changed paths, diffstat rows `(file, additions, deletions)`, and
/// diagnostic rows `(file, severity, count, generation)`.
#[derive(Debug, Default)]
pub struct Columns<'a> {
    pub changed_paths: Vec<&'a str>,
    pub diffstat: Vec<(&'a str, u64, u64)>,
    pub diagnostics: Vec<(&'a str, &'a str, u64, u64)>,
}

/// What [`create_manifest_columns`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnsOutput {
    /// `{"a":A,"r":R}`: `A` is the artifact input's JSON text without `preview`; `R` is the
    /// manifest's JSON text with `changedPaths`, `diagnostics` and `diffstat` empty.
    pub small_json: String,
    /// Retained changed paths, diffstat rows and diagnostic rows (in that order), each in
    /// manifest order, as positions in the input lists.
    pub order: Vec<u32>,
    /// How many of `order` belong to each of the three lists.
    pub counts: [u32; 3],
}

/// `createCodingPatchReviewManifest` over an input whose bulk lists come as [`Columns`] and
/// the rest as `rest_json` (the input's JSON text with those three members `[]`).
///
/// `Ok(None)` means "use the JSON text path": the reader refuses `rest_json` (the JSON text
/// path then reports it, in the same order as for any input). Otherwise the result and
/// every error are those of the JSON text path for the same input: the same content goes
/// through the same `finish`.
pub fn create_manifest_columns(
    rest_json: &str,
    cols: Columns<'_>,
    now: impl FnOnce() -> String,
) -> Result<Option<ColumnsOutput>> {
    if rest_json.len() > MANIFEST_INPUT_BYTES {
        return Ok(None);
    }
    let Ok(value) = read::read_text(rest_json) else {
        return Ok(None);
    };
    let Ok((mut content, limits)) = read_rest(&value) else {
        return Ok(None);
    };
    fill_lists(&mut content, &cols);
    let mut parts = finish::finish(content, limits, now)?;
    let c = &parts.content;
    let mut order =
        Vec::with_capacity(c.changed_paths.len() + c.diffstat.len() + c.diagnostics.len());
    order.extend(c.changed_paths.iter().map(|p| p.at));
    order.extend(c.diffstat.iter().map(|r| r.at));
    order.extend(c.diagnostics.iter().map(|g| g.at));
    let counts = [
        read::index_u32(c.changed_paths.len()),
        read::index_u32(c.diffstat.len()),
        read::index_u32(c.diagnostics.len()),
    ];
    Ok(Some(ColumnsOutput {
        small_json: parts.small_json()?,
        order,
        counts,
    }))
}

/// The rest of a columns input: it must hold the three lists empty (or not at all).
fn read_rest(value: &serde_json::Value) -> Result<(model::Content<'_>, ReviewLimits)> {
    let (content, limits) = read::read_input(value)?;
    if content.changed_paths.is_empty()
        && content.diffstat.is_empty()
        && content.diagnostics.is_empty()
    {
        Ok((content, limits))
    } else {
        Err(PrismError::internal(
            "review columns: the rest holds list entries",
        ))
    }
}

fn fill_lists<'a>(content: &mut model::Content<'a>, cols: &Columns<'a>) {
    let text = |s: &'a str| Text(Cow::Borrowed(s));
    content.changed_paths = (cols.changed_paths.iter().enumerate())
        .map(|(i, p)| ChangedPath {
            path: text(p),
            at: read::index_u32(i),
        })
        .collect();
    content.diffstat = (cols.diffstat.iter().enumerate())
        .map(|(i, (file, additions, deletions))| DiffstatRow {
            additions: *additions,
            deletions: *deletions,
            file: text(file),
            at: read::index_u32(i),
        })
        .collect();
    content.diagnostics = (cols.diagnostics.iter().enumerate())
        .map(|(i, (file, severity, count, generation))| Diagnostic {
            count: *count,
            file: text(file),
            generation: *generation,
            severity: text(severity),
            at: read::index_u32(i),
            rank: 0,
        })
        .collect();
}

/// `resolveCodingReviewLimits(options?)`: JSON text of the options (`null` for none) in, the
/// resolved `{ maxRevisions, maxDiagnostics, maxManifestBytes }` as JSON text out.
pub fn resolve_limits_json(text: &str) -> Result<String> {
    let value = read::read_text(text)?;
    let limits = match value {
        serde_json::Value::Null => ReviewLimits::DEFAULT,
        v => read::read_limits(&v, "options")?,
    };
    serde_json::to_string(&limits).map_err(|e| PrismError::internal(e.to_string()))
}
