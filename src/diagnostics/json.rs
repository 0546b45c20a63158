//! JSON-text entry points (what the binding calls): parse the text `JSON.stringify`
//! produced, validate the top-level arguments with typed errors, run the core, and
//! serialize the result.
//!
//! Top-level argument errors: a wrong type is a `TypeError`
//! (`ERR_INVALID_ARG_TYPE`); a number out of range (including `NaN`/`Infinity`, which
//! JSON turns into `null`) is a `RangeError` (`ERR_OUT_OF_RANGE`). Entries of `raw` are
//! never errors: a malformed one is dropped. Entries of `diagnosticDelta`'s `next` and
//! `previous` must be normalized diagnostics; anything else is a `TypeError` naming it.

use super::raw::{replace_lone_surrogates, RawDeltaInput, RawEntry, RawField, RawList};
use super::{
    delta_indices, identity, normalize_entries, Code, NormalizeOptions, NormalizedDiagnostic,
    Severity, DEFAULT_MAX_DIAGNOSTICS_PER_FILE, DEFAULT_MAX_MESSAGE_BYTES,
    HARD_MAX_DIAGNOSTICS_PER_FILE, HARD_MAX_MESSAGE_BYTES,
};
use crate::error::{PrismError, Result};
use serde::Deserialize;
use serde_json::Value;
use std::cell::OnceCell;

/// Parse `text`; a lone surrogate escape (which serde_json refuses) is retried as U+FFFD.
fn parse_text<'a, T: Deserialize<'a>>(
    text: &'a str,
    store: &'a OnceCell<String>,
    what: &str,
) -> Result<T> {
    match serde_json::from_str::<T>(text) {
        Ok(v) => Ok(v),
        Err(first) => {
            if text.contains("\\u") {
                let fixed = store.get_or_init(|| replace_lone_surrogates(text));
                if let Ok(v) = serde_json::from_str::<T>(fixed) {
                    return Ok(v);
                }
            }
            let msg = first.to_string();
            Err(PrismError::type_error(if msg.contains("recursion limit") {
                format!("{what} nests more than 128 levels deep")
            } else {
                format!("{what} is not valid JSON: {msg}")
            }))
        }
    }
}

fn serialize<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v)
        .map_err(|e| PrismError::internal(format!("cannot serialize result: {e}")))
}

/// A required or optional non-negative safe integer argument.
pub fn safe_u64_arg(f: &RawField<'_>, path: &str) -> Result<Option<u64>> {
    match f {
        RawField::Absent => Ok(None),
        RawField::Num(n) => n.safe_u64().map(Some).ok_or_else(|| {
            PrismError::range(format!("{path} must be a non-negative safe integer"))
        }),
        RawField::Null => Err(PrismError::range(format!(
            "{path} must be a non-negative safe integer, got NaN, Infinity or null"
        ))),
        other => Err(PrismError::type_error(format!(
            "{path} must be a number, got {}",
            other.type_name()
        ))),
    }
}

fn limit_arg(f: &RawField<'_>, path: &str, default: usize, hard: usize) -> Result<usize> {
    let out_of_range = || {
        let got = match f {
            RawField::Num(super::raw::Num::U(n)) => n.to_string(),
            RawField::Num(super::raw::Num::I(n)) => n.to_string(),
            RawField::Num(super::raw::Num::F(n)) => n.to_string(),
            _ => "NaN, Infinity or null".to_string(),
        };
        crate::util::caps::out_of_range(path, hard as u64, got)
    };
    match f {
        RawField::Absent => Ok(default),
        RawField::Num(n) => n
            .safe_u64()
            .and_then(|v| usize::try_from(v).ok())
            .filter(|v| (1..=hard).contains(v))
            .ok_or_else(out_of_range),
        RawField::Null => Err(out_of_range()),
        other => Err(PrismError::type_error(format!(
            "{path} must be a number, got {}",
            other.type_name()
        ))),
    }
}

/// Options of `normalizeDiagnostics` from their JSON value.
pub fn parse_options(v: &Value) -> Result<NormalizeOptions> {
    let Value::Object(o) = v else {
        return Err(PrismError::type_error(format!(
            "options must be an object with workspaceRoot and generation, got {}",
            RawField::from_value(Some(v)).type_name()
        )));
    };
    let f = |k: &str| RawField::from_value(o.get(k));
    let workspace_root = match f("workspaceRoot") {
        RawField::Str(s) if !s.is_empty() => s.into_owned(),
        RawField::Str(_) => {
            return Err(PrismError::type_error(
                "options.workspaceRoot must not be empty",
            ));
        }
        other => {
            return Err(PrismError::type_error(format!(
                "options.workspaceRoot must be a string (an absolute path), got {}",
                other.type_name()
            )))
        }
    };
    let generation = safe_u64_arg(&f("generation"), "options.generation")?.ok_or_else(|| {
        PrismError::type_error("options.generation is required (a non-negative integer)")
    })?;
    Ok(NormalizeOptions {
        workspace_root,
        generation,
        max_diagnostics_per_file: limit_arg(
            &f("maxDiagnosticsPerFile"),
            "options.maxDiagnosticsPerFile",
            DEFAULT_MAX_DIAGNOSTICS_PER_FILE,
            HARD_MAX_DIAGNOSTICS_PER_FILE,
        )?,
        max_message_bytes: limit_arg(
            &f("maxMessageBytes"),
            "options.maxMessageBytes",
            DEFAULT_MAX_MESSAGE_BYTES,
            HARD_MAX_MESSAGE_BYTES,
        )?,
    })
}

/// `resolveDiagnosticsLimits(options?)`: the effective caps as JSON text
/// `{ maxDiagnosticsPerFile, maxMessageBytes }`.
pub fn resolve_limits_json(text: &str) -> Result<String> {
    let store = OnceCell::new();
    let v: Value = parse_text(text, &store, "options")?;
    let o = match &v {
        Value::Null => serde_json::Map::new(),
        Value::Object(o) => o.clone(),
        other => {
            return Err(PrismError::type_error(format!(
                "options must be an object, got {}",
                RawField::from_value(Some(other)).type_name()
            )))
        }
    };
    let f = |k: &str| RawField::from_value(o.get(k));
    let per_file = limit_arg(
        &f("maxDiagnosticsPerFile"),
        "options.maxDiagnosticsPerFile",
        DEFAULT_MAX_DIAGNOSTICS_PER_FILE,
        HARD_MAX_DIAGNOSTICS_PER_FILE,
    )?;
    let message = limit_arg(
        &f("maxMessageBytes"),
        "options.maxMessageBytes",
        DEFAULT_MAX_MESSAGE_BYTES,
        HARD_MAX_MESSAGE_BYTES,
    )?;
    Ok(format!(
        "{{\"maxDiagnosticsPerFile\":{per_file},\"maxMessageBytes\":{message}}}"
    ))
}

/// Options of `normalizeDiagnostics` from their JSON text.
pub fn parse_options_json(text: &str) -> Result<NormalizeOptions> {
    let store = OnceCell::new();
    let options: Value = parse_text(text, &store, "options")?;
    parse_options(&options)
}

/// `normalizeDiagnostics(raw, options)`: JSON texts in, JSON array of normalized
/// diagnostics out.
pub fn normalize_json(raw_text: &str, options_text: &str) -> Result<String> {
    let opts = parse_options_json(options_text)?;
    let store = OnceCell::new();
    let list: RawList<'_> = parse_text(raw_text, &store, "raw")?;
    let entries = match list {
        RawList::List(l) => l,
        RawList::Absent => Vec::new(),
        RawList::Wrong(t) => {
            return Err(PrismError::type_error(format!(
                "raw must be an array of diagnostics, got {t}"
            )))
        }
    };
    serialize(&normalize_entries(entries, &opts)?)
}

/// Why a field of a normalized diagnostic is refused (the path is added by the caller, so
/// the happy path formats nothing).
type FieldResult<T> = std::result::Result<T, (&'static str, &'static str, String)>;

fn bad<T>(field: &'static str, what: &'static str, got: &RawField<'_>) -> FieldResult<T> {
    Err((field, what, got.type_name().to_string()))
}

fn strict_u64(f: &RawField<'_>, field: &'static str) -> FieldResult<u64> {
    const WHAT: &str = "must be a non-negative safe integer";
    match f {
        RawField::Num(n) => match n.safe_u64() {
            Some(v) => Ok(v),
            None => bad(field, WHAT, f),
        },
        other => bad(field, WHAT, other),
    }
}

fn strict_opt_u64(f: &RawField<'_>, field: &'static str) -> FieldResult<Option<u64>> {
    match f {
        RawField::Absent => Ok(None),
        other => strict_u64(other, field).map(Some),
    }
}

fn strict_opt_str(f: RawField<'_>, field: &'static str) -> FieldResult<Option<String>> {
    match f {
        RawField::Absent => Ok(None),
        RawField::Str(s) => Ok(Some(s.into_owned())),
        other => bad(field, "must be a string or absent", &other),
    }
}

/// A code: a string or an integer (kept a number).
fn strict_opt_code(f: RawField<'_>) -> FieldResult<Option<Code>> {
    match f {
        RawField::Absent => Ok(None),
        RawField::Str(s) => Ok(Some(Code::Text(s.into_owned()))),
        RawField::Num(n) => match n.safe_i64() {
            Some(i) => Ok(Some(Code::Int(i))),
            None => bad("code", "must be a string, a safe integer or absent", &f),
        },
        other => bad("code", "must be a string, a safe integer or absent", &other),
    }
}

const SEVERITY_NAMES: &str =
    "must be \"error\", \"warning\", \"info\" (or \"information\") or \"hint\"";

fn strict_fields(e: RawEntry<'_>, full: bool) -> FieldResult<NormalizedDiagnostic> {
    let file = match e.file {
        RawField::Str(s) if !s.is_empty() => s.into_owned(),
        other => return bad("file", "must be a non-empty string", &other),
    };
    let line = strict_u64(&e.line, "line")?;
    let character = strict_u64(&e.character, "character")?;
    let source = strict_opt_str(e.source, "source")?;
    let code = strict_opt_code(e.code)?;
    let mut d = NormalizedDiagnostic {
        file,
        line,
        character,
        end_line: None,
        end_character: None,
        severity: Severity::Error,
        message: String::new(),
        source,
        code,
        generation: 0,
    };
    if !full {
        return Ok(d);
    }
    d.end_line = strict_opt_u64(&e.end_line, "endLine")?;
    d.end_character = strict_opt_u64(&e.end_character, "endCharacter")?;
    d.severity = match &e.severity {
        RawField::Str(s) => match Severity::parse(s) {
            Some(v) => v,
            None => return Err(("severity", SEVERITY_NAMES, format!("{s:?}"))),
        },
        other => return bad("severity", SEVERITY_NAMES, other),
    };
    d.message = match e.message {
        RawField::Str(s) => s.into_owned(),
        other => return bad("message", "must be a string", &other),
    };
    d.generation = strict_u64(&e.generation, "generation")?;
    Ok(d)
}

/// A normalized diagnostic given back to us (`diagnosticDelta`, `diagnosticIdentity`).
/// With `full` false only the identity fields are required. `path` names it in errors.
pub fn strict_entry(
    e: RawEntry<'_>,
    path: impl Fn() -> String,
    full: bool,
) -> Result<NormalizedDiagnostic> {
    if let Some(t) = e.not_object {
        return Err(PrismError::type_error(format!(
            "{} must be a normalized diagnostic object, got {t}",
            path()
        )));
    }
    strict_fields(e, full).map_err(|(field, what, got)| {
        PrismError::type_error(format!("{}.{field} {what}, got {got}", path()))
    })
}

pub fn strict_list(
    list: RawList<'_>,
    name: &str,
    required: bool,
) -> Result<Option<Vec<NormalizedDiagnostic>>> {
    match list {
        RawList::Absent if !required => Ok(None),
        RawList::Absent => Err(PrismError::type_error(format!(
            "{name} is required (an array of normalized diagnostics)"
        ))),
        RawList::Wrong(t) => Err(PrismError::type_error(format!(
            "{name} must be an array of normalized diagnostics, got {t}"
        ))),
        RawList::List(l) => {
            super::check_input_len(l.len(), name)?;
            l.into_iter()
                .enumerate()
                .map(|(i, e)| strict_entry(e, || format!("{name}[{i}]"), true))
                .collect::<Result<Vec<_>>>()
                .map(Some)
        }
    }
}

/// The validated arguments of `diagnosticDelta`.
pub struct DeltaArgs {
    pub next: Vec<NormalizedDiagnostic>,
    pub previous: Option<Vec<NormalizedDiagnostic>>,
    pub generation: Option<u64>,
}

/// Parse and validate `{ next, previous?, generation? }`.
pub fn parse_delta_args(text: &str) -> Result<DeltaArgs> {
    let store = OnceCell::new();
    let input: RawDeltaInput<'_> = parse_text(text, &store, "input")?;
    delta_args(input)
}

/// Validate already-split `diagnosticDelta` arguments.
pub fn delta_args(input: RawDeltaInput<'_>) -> Result<DeltaArgs> {
    if let Some(t) = input.not_object {
        return Err(PrismError::type_error(format!(
            "diagnosticDelta expects an object {{ next, previous?, generation? }}, got {t}"
        )));
    }
    let generation = safe_u64_arg(&input.generation, "input.generation")?;
    let next = strict_list(input.next, "input.next", true)?.unwrap_or_default();
    let previous = strict_list(input.previous, "input.previous", false)?;
    Ok(DeltaArgs {
        next,
        previous,
        generation,
    })
}

/// `diagnosticDelta(input)` as indices (`added`/`unchanged` into `next`, `removed` into
/// `previous`), so the JS layer returns the caller's entries without copying messages
/// back across the boundary.
pub fn delta_indices_json(text: &str) -> Result<String> {
    let a = parse_delta_args(text)?;
    serialize(&delta_indices(&a.next, a.previous.as_deref(), a.generation))
}

/// `diagnosticIdentity(d)`: only the identity fields are checked.
pub fn identity_json(text: &str) -> Result<String> {
    let store = OnceCell::new();
    let e: RawEntry<'_> = parse_text(text, &store, "diagnostic")?;
    Ok(identity(&strict_entry(
        e,
        || "diagnostic".to_string(),
        false,
    )?))
}
