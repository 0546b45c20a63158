//! Diagnostics: normalize host-parsed output into one bounded shape, identity, and
//! deterministic deltas between generations.
//!
//! - [`normalize`] validates raw entries (workspace containment, positions, severity,
//!   message), strips control characters, truncates messages at a UTF-8 byte cap, charges
//!   a per-file cap before retaining anything, and drops malformed entries whole.
//! - [`identity`] is the stable key `file:source:line:character:code`.
//! - [`delta`] diffs two views: `added` / `removed` / `unchanged`, duplicates deduped,
//!   stale previous entries ignored, each list in one canonical order.
//!
//! [`json`] holds the JSON-text entry points (the binding reads JS arrays in place and
//! builds the same [`raw::RawEntry`] values, so one validator serves every path).
//!
//! The whole flow in a few lines is the `module_example` test in `tests.rs`.

pub mod json;
mod path;
pub mod raw;
pub mod text;

use crate::error::{PrismError, Result};
use raw::{RawEntry, RawField};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;

use crate::util::MAX_SAFE_INTEGER;
pub use text::{strip_controls, truncate_utf8};

/// Default / hard cap of diagnostics kept per file.
pub const DEFAULT_MAX_DIAGNOSTICS_PER_FILE: usize = 500;
pub const HARD_MAX_DIAGNOSTICS_PER_FILE: usize = 5000;
/// Default / hard cap of a message, in UTF-8 bytes.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4096;
pub const HARD_MAX_MESSAGE_BYTES: usize = 16384;
/// Longest `source` or `code` kept, in UTF-8 bytes (after stripping); longer entries drop.
pub const MAX_LABEL_BYTES: usize = 1024;

/// Diagnostic severity. Serialized as `"error"|"warning"|"info"|"hint"` (the names of
/// @arnilo/prism); input may also spell `"information"` or use the LSP numbers 1..4.
/// Ordered most to least severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    #[serde(alias = "information")]
    Info,
    Hint,
}

impl Severity {
    /// A severity name: `error`, `warning`, `info` (or `information`), `hint`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            "info" | "information" => Severity::Info,
            "hint" => Severity::Hint,
            _ => return None,
        })
    }

    /// The LSP `DiagnosticSeverity` number (1 = Error … 4 = Hint).
    pub fn from_lsp(n: u64) -> Option<Self> {
        Some(match n {
            1 => Severity::Error,
            2 => Severity::Warning,
            3 => Severity::Info,
            4 => Severity::Hint,
            _ => return None,
        })
    }
}

/// A diagnostic code: an integer (kept a number, as the tool gave it) or a string. Its
/// identity text is the decimal form, so `2322` and `"2322"` are one identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Code {
    Int(i64),
    Text(String),
}

impl Code {
    /// The code as identity text.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Code::Int(n) => Cow::Owned(n.to_string()),
            Code::Text(s) => Cow::Borrowed(s),
        }
    }

    /// Ties between codes of one identity text: integers first.
    fn tie(&self, other: &Code) -> Ordering {
        match (self, other) {
            (Code::Int(_), Code::Text(_)) => Ordering::Less,
            (Code::Text(_), Code::Int(_)) => Ordering::Greater,
            _ => Ordering::Equal,
        }
    }
}

impl From<&str> for Code {
    fn from(s: &str) -> Self {
        Code::Text(s.to_string())
    }
}

impl From<String> for Code {
    fn from(s: String) -> Self {
        Code::Text(s)
    }
}

impl From<i64> for Code {
    fn from(n: i64) -> Self {
        Code::Int(n)
    }
}

/// The identity text of an optional code (empty when absent).
fn code_text(c: &Option<Code>) -> Cow<'_, str> {
    c.as_ref().map_or(Cow::Borrowed(""), Code::text)
}

/// The `source` stamped on a normalized entry whose raw entry has none (as @arnilo/prism).
pub const DEFAULT_SOURCE: &str = "check";

/// One diagnostic in the bounded, validated shape. [`normalize`] always fills the end
/// and the source; entries handed back by callers may lack them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NormalizedDiagnostic {
    /// Workspace-relative path with `/` separators.
    pub file: String,
    pub line: u64,
    pub character: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub end_line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub end_character: Option<u64>,
    pub severity: Severity,
    /// Control characters stripped (tab and newline kept), at most the byte cap.
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub code: Option<Code>,
    pub generation: u64,
}

/// Options of [`normalize`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizeOptions {
    /// Absolute path (or `file://` URI) of the workspace root.
    pub workspace_root: String,
    /// Stamped on every normalized entry.
    pub generation: u64,
    /// 1..=5000, default 500.
    pub max_diagnostics_per_file: usize,
    /// 1..=16384, default 4096.
    pub max_message_bytes: usize,
}

impl NormalizeOptions {
    /// Options with the default caps.
    pub fn new(workspace_root: impl Into<String>, generation: u64) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            generation,
            max_diagnostics_per_file: DEFAULT_MAX_DIAGNOSTICS_PER_FILE,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }

    fn check(&self) -> Result<path::AbsPath> {
        check_limit(
            "maxDiagnosticsPerFile",
            self.max_diagnostics_per_file,
            HARD_MAX_DIAGNOSTICS_PER_FILE,
        )?;
        check_limit(
            "maxMessageBytes",
            self.max_message_bytes,
            HARD_MAX_MESSAGE_BYTES,
        )?;
        if self.generation > MAX_SAFE_INTEGER {
            return Err(PrismError::range(format!(
                "options.generation must be a non-negative safe integer, got {}",
                self.generation
            )));
        }
        path::parse_root(&self.workspace_root).ok_or_else(|| {
            PrismError::type_error(
                "options.workspaceRoot must be an absolute path (`/…`, `C:\\…`) or a file:// URI",
            )
        })
    }
}

fn check_limit(name: &str, value: usize, hard: usize) -> Result<()> {
    crate::util::caps::check(&format!("options.{name}"), value as u64, hard as u64).map(|_| ())
}

/// Normalize raw diagnostics. Options outside their ranges are a `RangeError`, a
/// relative `workspace_root` a `TypeError`; each malformed entry is dropped whole.
/// Output keeps input order; the first `max_diagnostics_per_file` valid entries of each
/// file are kept.
pub fn normalize(raw: &[Value], opts: &NormalizeOptions) -> Result<Vec<NormalizedDiagnostic>> {
    let entries: Vec<RawEntry<'_>> = raw.iter().map(RawEntry::from_value).collect();
    normalize_entries(entries, opts)
}

/// [`normalize`] over already-split raw entries (the binding's fast path).
pub fn normalize_entries(
    entries: Vec<RawEntry<'_>>,
    opts: &NormalizeOptions,
) -> Result<Vec<NormalizedDiagnostic>> {
    Ok(normalize_indexed(entries, opts)?
        .into_iter()
        .map(|(_, d)| d)
        .collect())
}

/// [`normalize_entries`], each kept entry with its index in the input.
pub fn normalize_indexed(
    entries: Vec<RawEntry<'_>>,
    opts: &NormalizeOptions,
) -> Result<Vec<(usize, NormalizedDiagnostic)>> {
    let mut n = Normalizer::new(opts)?;
    check_input_len(entries.len(), "raw")?;
    let mut out = Vec::with_capacity(entries.len().min(1 << 16));
    for (i, e) in entries.into_iter().enumerate() {
        if let Some(d) = n.push(e) {
            out.push((i, d));
        }
    }
    Ok(out)
}

/// The most entries one array argument may hold (a `RangeError` beyond), so a huge or
/// sparse array is refused up front instead of being walked for minutes.
pub const MAX_INPUT_ENTRIES: usize = 10_000_000;

/// `RangeError` when an input array is longer than [`MAX_INPUT_ENTRIES`].
pub fn check_input_len(len: usize, name: &str) -> Result<()> {
    if len > MAX_INPUT_ENTRIES {
        return Err(PrismError::range(format!(
            "{name} holds {len} entries; at most {MAX_INPUT_ENTRIES} are accepted"
        )));
    }
    Ok(())
}

/// Normalizes entries one at a time, charging the per-file cap as they arrive, so a
/// caller streaming input retains only what is kept.
pub struct Normalizer<'o> {
    root: path::AbsPath,
    opts: &'o NormalizeOptions,
    counts: HashMap<String, usize>,
}

impl<'o> Normalizer<'o> {
    /// Checks the options (`RangeError` / `TypeError` as [`normalize`]).
    pub fn new(opts: &'o NormalizeOptions) -> Result<Self> {
        Ok(Self {
            root: opts.check()?,
            opts,
            counts: HashMap::new(),
        })
    }

    /// The normalized entry, or `None` when it is malformed or over its file's cap.
    pub fn push(&mut self, e: RawEntry<'_>) -> Option<NormalizedDiagnostic> {
        normalize_one(e, &self.root, self.opts, &mut self.counts)
    }
}

fn position(f: &RawField<'_>) -> Option<u64> {
    match f {
        RawField::Num(n) => n.safe_u64(),
        _ => None,
    }
}

fn opt_position(f: &RawField<'_>) -> Option<Option<u64>> {
    match f {
        RawField::Absent => Some(None),
        other => position(other).map(Some),
    }
}

/// An optional label (`source`): stripped; empty becomes absent; too long drops the entry.
fn opt_label(s: &str) -> Option<Option<String>> {
    let s = strip_controls(s);
    if s.len() > MAX_LABEL_BYTES {
        return None;
    }
    Some((!s.is_empty()).then(|| s.into_owned()))
}

fn normalize_one(
    e: RawEntry<'_>,
    root: &path::AbsPath,
    opts: &NormalizeOptions,
    counts: &mut HashMap<String, usize>,
) -> Option<NormalizedDiagnostic> {
    if e.not_object.is_some() {
        return None;
    }
    let RawField::Str(file) = &e.file else {
        return None;
    };
    let file = path::relativize(file, root)?;
    let line = opt_position(&e.line)?.unwrap_or(0);
    let character = opt_position(&e.character)?.unwrap_or(0);
    // An absent end is the start (as @arnilo/prism); the end may not precede the start.
    let end_line = opt_position(&e.end_line)?.unwrap_or(line);
    let end_character = opt_position(&e.end_character)?.unwrap_or(character);
    if end_line < line || (end_line == line && end_character < character) {
        return None;
    }
    let severity = match &e.severity {
        RawField::Absent => Severity::Error,
        RawField::Str(s) => Severity::parse(s)?,
        RawField::Num(n) => Severity::from_lsp(n.safe_u64()?)?,
        _ => return None,
    };
    let source = match &e.source {
        RawField::Absent => DEFAULT_SOURCE.to_string(),
        RawField::Str(s) => opt_label(s)?.unwrap_or_else(|| DEFAULT_SOURCE.to_string()),
        _ => return None,
    };
    let code = match &e.code {
        RawField::Absent => None,
        RawField::Str(s) => opt_label(s)?.map(Code::Text),
        RawField::Num(n) => Some(Code::Int(n.safe_i64()?)),
        _ => return None,
    };
    // Charge the per-file cap before doing the expensive message work: once a file is
    // full, later entries for it are dropped whatever they hold.
    let count = counts.get(&file).copied().unwrap_or(0);
    if count >= opts.max_diagnostics_per_file {
        return None;
    }
    let RawField::Str(message) = e.message else {
        return None;
    };
    let message = clean_message(message, opts.max_message_bytes)?;
    match counts.get_mut(&file) {
        Some(c) => *c += 1,
        None => {
            counts.insert(file.clone(), 1);
        }
    }
    Some(NormalizedDiagnostic {
        file,
        line,
        character,
        end_line: Some(end_line),
        end_character: Some(end_character),
        severity,
        message,
        source: Some(source),
        code,
        generation: opts.generation,
    })
}

/// Strip controls, truncate to `max` bytes; `None` when nothing but whitespace is left.
fn clean_message(message: Cow<'_, str>, max: usize) -> Option<String> {
    let stripped = match strip_controls(&message) {
        Cow::Borrowed(_) => message,
        Cow::Owned(s) => Cow::Owned(s),
    };
    let cut = truncate_utf8(&stripped, max);
    if cut.trim().is_empty() {
        return None;
    }
    if cut.len() == stripped.len() {
        Some(stripped.into_owned())
    } else {
        Some(cut.to_string())
    }
}

/// `file:source:line:character:code`, with an empty string for an absent source or code.
pub fn identity(d: &NormalizedDiagnostic) -> String {
    format!(
        "{}:{}:{}:{}:{}",
        d.file,
        d.source.as_deref().unwrap_or(""),
        d.line,
        d.character,
        code_text(&d.code)
    )
}

/// Canonical order of identities: file, line, character, source, code (strings by
/// Unicode code point; an absent source or code equals the empty string).
pub fn identity_cmp(a: &NormalizedDiagnostic, b: &NormalizedDiagnostic) -> Ordering {
    a.file
        .cmp(&b.file)
        .then(a.line.cmp(&b.line))
        .then(a.character.cmp(&b.character))
        .then(
            a.source
                .as_deref()
                .unwrap_or("")
                .cmp(b.source.as_deref().unwrap_or("")),
        )
        .then_with(|| code_text(&a.code).cmp(&code_text(&b.code)))
}

/// A total order on whole entries: identity first, then severity, message, end, generation.
/// Among duplicates of one identity, the smallest in this order is the one kept.
pub fn full_cmp(a: &NormalizedDiagnostic, b: &NormalizedDiagnostic) -> Ordering {
    identity_cmp(a, b)
        .then(a.severity.cmp(&b.severity))
        .then(a.message.cmp(&b.message))
        .then(a.end_line.cmp(&b.end_line))
        .then(a.end_character.cmp(&b.end_character))
        .then(a.generation.cmp(&b.generation))
        // `None` and `Some("")`, `2322` and `"2322"` are one identity but serialize
        // differently.
        .then(a.source.cmp(&b.source))
        .then_with(|| match (&a.code, &b.code) {
            (Some(x), Some(y)) => x.tie(y),
            (x, y) => x.is_some().cmp(&y.is_some()),
        })
}

/// The result of [`delta`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticDelta {
    pub added: Vec<NormalizedDiagnostic>,
    pub removed: Vec<NormalizedDiagnostic>,
    pub unchanged: Vec<NormalizedDiagnostic>,
    pub generation: u64,
    /// `next` held entries of one identity more than once (all but one were dropped).
    pub truncated: bool,
}

/// [`delta`] as indices: `added` and `unchanged` index `next`, `removed` indexes `previous`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeltaIndices {
    pub added: Vec<usize>,
    pub removed: Vec<usize>,
    pub unchanged: Vec<usize>,
    pub generation: u64,
    /// `next` held entries of one identity more than once.
    pub truncated: bool,
}

/// Rank of each distinct string among `items` (by code point order).
fn ranks<'a>(items: impl Iterator<Item = &'a str>) -> HashMap<&'a str, u32> {
    let mut distinct: Vec<&str> = items.collect();
    distinct.sort_unstable();
    distinct.dedup();
    distinct
        .into_iter()
        .enumerate()
        .map(|(i, s)| (s, u32::try_from(i).unwrap_or(u32::MAX)))
        .collect()
}

/// Indices of `items` sorted by identity (ties by index). Sorts compact integer keys
/// (strings replaced by their ranks) instead of chasing pointers in every comparison.
pub fn identity_order(items: &[NormalizedDiagnostic]) -> Vec<usize> {
    let files = ranks(items.iter().map(|d| d.file.as_str()));
    let sources = ranks(items.iter().map(|d| d.source.as_deref().unwrap_or("")));
    let code_texts: Vec<Cow<'_, str>> = items.iter().map(|d| code_text(&d.code)).collect();
    let codes = ranks(code_texts.iter().map(|c| c.as_ref()));
    let rank = |m: &HashMap<&str, u32>, s: &str| m.get(s).copied().unwrap_or(u32::MAX);
    let mut keys: Vec<(u32, u64, u64, u32, u32, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, d)| {
            (
                rank(&files, &d.file),
                d.line,
                d.character,
                rank(&sources, d.source.as_deref().unwrap_or("")),
                rank(&codes, code_texts.get(i).map_or("", |c| c.as_ref())),
                i,
            )
        })
        .collect();
    keys.sort_unstable();
    keys.into_iter().map(|k| k.5).collect()
}

/// Runs of equal identity in an [`identity_order`]: `(start, end)` ranges into it.
pub fn identity_runs(items: &[NormalizedDiagnostic], order: &[usize]) -> Vec<(usize, usize)> {
    let same = |a: usize, b: usize| match (
        order.get(a).and_then(|&i| items.get(i)),
        order.get(b).and_then(|&i| items.get(i)),
    ) {
        (Some(x), Some(y)) => identity_cmp(x, y).is_eq(),
        _ => false,
    };
    let mut runs = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && same(start, end) {
            end += 1;
        }
        runs.push((start, end));
        start = end;
    }
    runs
}

/// Sorted, deduplicated indices of the entries of `items` that pass `keep`: one per
/// identity, the smallest in [`full_cmp`] order (the canonical representative).
fn canonical_indices(
    items: &[NormalizedDiagnostic],
    keep: impl Fn(&NormalizedDiagnostic) -> bool,
) -> Vec<usize> {
    let order = identity_order(items);
    let order: Vec<usize> = order
        .into_iter()
        .filter(|&i| items.get(i).is_some_and(&keep))
        .collect();
    identity_runs(items, &order)
        .into_iter()
        .filter_map(|(start, end)| {
            order.get(start..end)?.iter().copied().min_by(|&a, &b| {
                match (items.get(a), items.get(b)) {
                    (Some(x), Some(y)) => full_cmp(x, y),
                    _ => Ordering::Equal,
                }
            })
        })
        .collect()
}

/// The incoming generation: `generation` when given, else the newest of `next`'s entries;
/// `None` for an empty `next` without `generation` (nothing in `previous` is newer).
fn incoming_generation(next: &[NormalizedDiagnostic], generation: Option<u64>) -> Option<u64> {
    generation.or_else(|| next.iter().map(|d| d.generation).max())
}

/// Diff `next` against `previous` by identity, as indices. Previous entries newer than
/// the incoming generation are stale and ignored. The result's `generation` is the
/// incoming one (for an empty `next` without `generation`: the newest previous, else 0).
pub fn delta_indices(
    next: &[NormalizedDiagnostic],
    previous: Option<&[NormalizedDiagnostic]>,
    generation: Option<u64>,
) -> DeltaIndices {
    let previous = previous.unwrap_or(&[]);
    let incoming = incoming_generation(next, generation);
    let n = canonical_indices(next, |_| true);
    let truncated = n.len() < next.len();
    let p = canonical_indices(previous, |d| incoming.is_none_or(|g| d.generation <= g));
    let (mut added, mut removed, mut unchanged) = (Vec::new(), Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    loop {
        match (n.get(i), p.get(j)) {
            (Some(&a), Some(&b)) => match (next.get(a), previous.get(b)) {
                (Some(x), Some(y)) => match identity_cmp(x, y) {
                    Ordering::Less => {
                        added.push(a);
                        i += 1;
                    }
                    Ordering::Greater => {
                        removed.push(b);
                        j += 1;
                    }
                    Ordering::Equal => {
                        unchanged.push(a);
                        i += 1;
                        j += 1;
                    }
                },
                _ => break,
            },
            (Some(&a), None) => {
                added.push(a);
                i += 1;
            }
            (None, Some(&b)) => {
                removed.push(b);
                j += 1;
            }
            (None, None) => break,
        }
    }
    let generation =
        incoming.unwrap_or_else(|| previous.iter().map(|d| d.generation).max().unwrap_or(0));
    DeltaIndices {
        added,
        removed,
        unchanged,
        generation,
        truncated,
    }
}

/// Diff `next` against `previous` (see [`delta_indices`] for the rules); `unchanged`
/// holds the `next` version of each entry.
pub fn delta(
    next: &[NormalizedDiagnostic],
    previous: Option<&[NormalizedDiagnostic]>,
    generation: Option<u64>,
) -> DiagnosticDelta {
    let ix = delta_indices(next, previous, generation);
    let prev = previous.unwrap_or(&[]);
    let pick = |list: &[NormalizedDiagnostic], idx: &[usize]| -> Vec<NormalizedDiagnostic> {
        idx.iter().filter_map(|&i| list.get(i).cloned()).collect()
    };
    DiagnosticDelta {
        added: pick(next, &ix.added),
        removed: pick(prev, &ix.removed),
        unchanged: pick(next, &ix.unchanged),
        generation: ix.generation,
        truncated: ix.truncated,
    }
}

#[cfg(test)]
mod tests;
