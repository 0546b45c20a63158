//! `createCodingPatchReviewManifest`: read the input, validate every field, charge the caps,
//! normalize, digest.
//!
//! Reading has two paths that yield the same [`Draft`]: a typed serde fast path over the JSON
//! text (strict: unknown fields, `null`s and wrong types all fail it, and sequences are
//! bounded by the hard caps while they are read), and the field-by-field reader over a
//! parsed [`Value`] that names the offending field in every error. The fast path only ever
//! succeeds on input the named reader accepts; when it fails, the named reader runs and
//! produces the error (or the result, for the few inputs only it accepts, such as `1e3`).
//! Everything after reading (the semantic checks, caps, normalization, digest) is shared.

use super::canon::{write_int, write_str, write_u64};
use super::limits::{ReviewLimits, CHECK_SUMMARY_BYTES, MANIFEST_INPUT_BYTES, URI_BYTES};
use super::text::{
    check_ident, check_kind, check_rel_path, check_uri, deny_unknown, elem_path, input_err,
    is_hex64, is_iso_utc, limit_err, now_iso, strip_controls,
};
use crate::error::{PrismError, Result};
use crate::json::{self, as_i64, type_name, Fields};
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// The largest integer JSON carries exactly (2^53 - 1); counts and sizes above it are refused
/// so that every number's canonical form is its integer spelling.
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

// Output types. Members are declared in RFC 8785 order (sorted by UTF-16 code units; all
// names are ASCII), so serde_json's compact output of `ManifestContent` is its canonical JSON:
// strings are escaped alike and every number is a safe integer. A test checks it against
// the reference canonicalizer.

/// Repository identity bound by the review: credential-free remote fingerprint, default
/// branch, optional worktree path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryIdentity {
    pub default_branch: String,
    pub remote_fingerprint: String,
    pub repository_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
}

/// The patch artifact reference (never the body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchRef {
    pub bytes: u64,
    pub kind: String,
    pub sha256: String,
    pub uri: String,
}

/// One diffstat row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffstatEntry {
    pub additions: u64,
    pub deletions: u64,
    pub file: String,
}

/// One named check result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckSummary {
    pub exit_code: i64,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// Diagnostic counts for one file, by LSP severity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticSummary {
    pub errors: u64,
    pub file: String,
    pub hints: u64,
    pub information: u64,
    pub warnings: u64,
}

/// Everything the digest binds: the manifest minus `digest`, `reviewId`, `createdAt`, `state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestContent {
    pub artifact_id: String,
    pub base: String,
    /// Sorted by code point, deduplicated.
    pub changed_paths: Vec<String>,
    /// Sorted by `name`; one entry per name.
    pub checks: Vec<CheckSummary>,
    /// Sorted by `file`; one entry per file.
    pub diagnostics: Vec<DiagnosticSummary>,
    /// Sorted by `file`; one row per file.
    pub diffstat: Vec<DiffstatEntry>,
    pub head: String,
    pub identity: RepositoryIdentity,
    pub patch: PatchRef,
    pub thread_id: String,
}

impl ManifestContent {
    /// RFC 8785 canonical JSON of the content (see the note on the output types).
    pub fn canonical_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self)
            .map_err(|e| PrismError::internal(format!("serialising the manifest failed: {e}")))
    }

    /// Lowercase hex SHA-256 of [`Self::canonical_json`]: the review digest. Equal to
    /// `json::canonical_digest` of the manifest with the four unbound members removed.
    pub fn digest(&self) -> Result<String> {
        Ok(json::sha256_hex(&self.canonical_json()?))
    }
}

/// A review manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewManifest {
    pub review_id: String,
    pub created_at: String,
    /// Always `"pending"`: the manifest is a request for review; the decision lives on the
    /// artifact record (see `assertCodingPatchAccepted`).
    pub state: &'static str,
    pub digest: String,
    #[serde(flatten)]
    pub content: ManifestContent,
}

/// The structural artifact attach input (seed 001's `attach`), without `preview`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactInputHead {
    pub thread_id: String,
    pub id: String,
    pub uri: String,
    pub mime: String,
    pub hash: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// What `create_manifest` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestOutput {
    pub review: ReviewManifest,
    /// The manifest's JSON text as returned to JavaScript: `reviewId`, `createdAt`, `state`,
    /// `digest`, then the canonical content members. Its length is what `maxManifestBytes`
    /// caps.
    pub review_json: String,
    pub artifact_input: ArtifactInputHead,
}

impl ManifestOutput {
    /// `{"review": M, "artifactInput": {…, "preview": {"review": M}}}` as JSON text.
    pub fn to_json(&self) -> Result<String> {
        let head = self.artifact_input_json_head()?;
        let m = &self.review_json;
        let mut out = String::with_capacity(m.len() * 2 + head.len() + 64);
        out.push_str("{\"review\":");
        out.push_str(m);
        out.push_str(",\"artifactInput\":");
        out.push_str(&head);
        out.push_str(",\"preview\":{\"review\":");
        out.push_str(m);
        out.push_str("}}}");
        Ok(out)
    }

    /// The artifact input's JSON without its closing brace.
    fn artifact_input_json_head(&self) -> Result<String> {
        let mut head = serde_json::to_string(&self.artifact_input)
            .map_err(|e| PrismError::internal(format!("serialising artifact input failed: {e}")))?;
        head.pop();
        Ok(head)
    }
}

// ---------- the draft both readers produce ----------

struct DraftDiagnostic<'a> {
    file: &'a str,
    /// Position in the input list (the columnar binding maps results back through it).
    at: u32,
    errors: u64,
    warnings: u64,
    information: u64,
    hints: u64,
}

/// The input after type checks, before semantic checks; borrows from the input.
struct Draft<'a> {
    limits: ReviewLimits,
    thread_id: &'a str,
    artifact_id: &'a str,
    repository_id: &'a str,
    remote_fingerprint: &'a str,
    default_branch: &'a str,
    worktree_path: Option<&'a str>,
    base: &'a str,
    head: &'a str,
    kind: &'a str,
    uri: &'a str,
    sha256: &'a str,
    bytes: u64,
    review_id: Option<&'a str>,
    created_at: Option<&'a str>,
    title: Option<&'a str>,
    /// Each with its position in the input list.
    changed_paths: Vec<(&'a str, u32)>,
    /// `(file, additions, deletions, position in the input list)`.
    diffstat: Vec<(&'a str, u64, u64, u32)>,
    checks: Vec<(&'a str, i64, Option<&'a str>)>,
    diagnostics: Vec<DraftDiagnostic<'a>>,
}

const TOP_FIELDS: &[&str] = &[
    "threadId",
    "artifactId",
    "identity",
    "base",
    "head",
    "patch",
    "changedPaths",
    "diffstat",
    "checks",
    "diagnostics",
    "limits",
    "reviewId",
    "createdAt",
    "title",
];

// Smallest JSON each retained entry can take in the manifest; used to refuse oversized
// inputs from their counts before anything is built.
const MIN_PATH_JSON: usize = 4; // "a",
const MIN_DIFFSTAT_JSON: usize = 41; // {"additions":0,"deletions":0,"file":"a"},
const MIN_CHECK_JSON: usize = 26; // {"exitCode":0,"name":"a"},
const MIN_DIAGNOSTIC_JSON: usize = 60; // {"errors":0,"file":"a","hints":0,"information":0,"warnings":0},

// The most entries the hard manifest cap can hold; the fast path stops reading beyond them.
const HARD_PATHS: usize = ReviewLimits::HARD.max_manifest_bytes / MIN_PATH_JSON;
const HARD_DIFFSTAT: usize = ReviewLimits::HARD.max_manifest_bytes / MIN_DIFFSTAT_JSON;
const HARD_CHECKS: usize = ReviewLimits::HARD.max_manifest_bytes / MIN_CHECK_JSON;
const HARD_DIAGNOSTICS: usize = ReviewLimits::HARD.max_diagnostic_summaries;

/// Running lower bound of the manifest's JSON size, charged before an entry is retained.
struct Budget {
    used: usize,
    max: usize,
}

impl Budget {
    fn charge(&mut self, bytes: usize, what: &str) -> Result<()> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.max {
            return Err(limit_err(format!(
                "the manifest would exceed maxManifestBytes ({} bytes) at {what}",
                self.max
            )));
        }
        Ok(())
    }
}

/// JSON text in, JSON text out (`{ review, artifactInput }`). The text is refused over
/// [`MANIFEST_INPUT_BYTES`] before it is parsed.
pub fn create_manifest_json(text: &str) -> Result<String> {
    create_manifest_text(text, now_iso)?.to_json()
}

/// The binding's entry point: like [`create_manifest_json`], but the result is the
/// artifact input's JSON text without `preview`, a newline, and the manifest's JSON text
/// (the manifest crosses once), built without the owned [`ManifestContent`].
pub fn create_manifest_binding(text: &str) -> Result<String> {
    if text.len() > MANIFEST_INPUT_BYTES {
        return Err(input_too_large(text.len()));
    }
    match read_fast(text) {
        Ok(raw) => finish_parts(raw.draft()?, now_iso)?.binding_text(),
        Err(_) => {
            let value = json::parse(text, input_err)?;
            finish_parts(read_value(&value)?, now_iso)?.binding_text()
        }
    }
}

fn input_too_large(len: usize) -> PrismError {
    limit_err(format!(
        "input is {len} bytes of JSON; the cap is {MANIFEST_INPUT_BYTES} bytes"
    ))
}

/// JSON text in, [`ManifestOutput`] out: the typed fast path, or the named reader when it fails.
pub fn create_manifest_text(text: &str, now: impl FnOnce() -> String) -> Result<ManifestOutput> {
    if text.len() > MANIFEST_INPUT_BYTES {
        return Err(input_too_large(text.len()));
    }
    match read_fast(text) {
        Ok(raw) => finish(raw.draft()?, now),
        Err(_) => {
            let value = json::parse(text, input_err)?;
            create_manifest(&value, now)
        }
    }
}

/// The typed fast path: a JSON object, exactly the known members, no trailing text.
pub(super) fn read_fast(text: &str) -> serde_json::Result<RawInput<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let raw = RawInput::deserialize(MapOnly(&mut de))?;
    de.end()?;
    Ok(raw)
}

/// Build a manifest from a parsed input (the named reader). `now` gives the default `createdAt`.
pub fn create_manifest(input: &Value, now: impl FnOnce() -> String) -> Result<ManifestOutput> {
    finish(read_value(input)?, now)
}

/// The three bulk lists of an input, read by the binding outside JSON text and already
/// type-checked there: changed paths, diffstat rows `(file, additions, deletions)`, and
/// diagnostic summaries `(file, [errors, warnings, information, hints])` (absent counts 0).
#[derive(Debug, Default)]
pub struct Columns<'a> {
    pub changed_paths: Vec<&'a str>,
    pub diffstat: Vec<(&'a str, u64, u64)>,
    pub diagnostics: Vec<(&'a str, [u64; 4])>,
}

/// What [`create_manifest_columns`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnsOutput {
    /// `{"a":A,"r":R}`: `A` is the artifact input's JSON text without `preview`; `R` is the
    /// manifest's JSON text without `changedPaths`, `diagnostics` and `diffstat` (members in
    /// manifest order otherwise).
    pub small_json: String,
    /// Retained changed paths, diffstat rows and diagnostic summaries (in that order), each
    /// in manifest order, as positions in the input lists.
    pub order: Vec<u32>,
    /// How many of `order` belong to each of the three lists.
    pub counts: [u32; 3],
}

/// `createCodingPatchReviewManifest` over an input whose bulk lists come as [`Columns`] and
/// the rest as `rest_json` (the input's JSON text with those three members `[]`).
///
/// `Ok(None)` means "use the JSON text path": the typed fast path does not accept
/// `rest_json`, or a list is longer than the fast path reads. Then the caller must run
/// [`create_manifest_binding`] over the whole input, which produces the same error (or
/// result) as before. Otherwise the result and every error are exactly those of that path
/// for the same input: the same [`Draft`] goes through the same checks.
pub fn create_manifest_columns(
    rest_json: &str,
    cols: Columns<'_>,
    now: impl FnOnce() -> String,
) -> Result<Option<ColumnsOutput>> {
    if rest_json.len() > MANIFEST_INPUT_BYTES
        || cols.changed_paths.len() > HARD_PATHS
        || cols.diffstat.len() > HARD_DIFFSTAT
        || cols.diagnostics.len() > HARD_DIAGNOSTICS
    {
        return Ok(None);
    }
    let Ok(raw) = read_fast(rest_json) else {
        return Ok(None);
    };
    if !(raw.changed_paths.is_empty() && raw.diffstat.is_empty() && raw.diagnostics.is_empty()) {
        return Ok(None);
    }
    let mut d = raw.draft()?;
    d.changed_paths = cols
        .changed_paths
        .iter()
        .enumerate()
        .map(|(i, p)| (*p, index_u32(i)))
        .collect();
    d.diffstat = cols
        .diffstat
        .iter()
        .enumerate()
        .map(|(i, (f, a, b))| (*f, *a, *b, index_u32(i)))
        .collect();
    d.diagnostics = cols
        .diagnostics
        .iter()
        .enumerate()
        .map(
            |(i, (file, [errors, warnings, information, hints]))| DraftDiagnostic {
                file,
                at: index_u32(i),
                errors: *errors,
                warnings: *warnings,
                information: *information,
                hints: *hints,
            },
        )
        .collect();
    let parts = finish_parts(d, now)?;
    let d = &parts.d;
    let mut order =
        Vec::with_capacity(d.changed_paths.len() + d.diffstat.len() + d.diagnostics.len());
    order.extend(d.changed_paths.iter().map(|p| p.1));
    order.extend(d.diffstat.iter().map(|r| r.3));
    order.extend(d.diagnostics.iter().map(|g| g.at));
    let counts = [
        index_u32(d.changed_paths.len()),
        index_u32(d.diffstat.len()),
        index_u32(d.diagnostics.len()),
    ];
    Ok(Some(ColumnsOutput {
        small_json: parts.small_json()?,
        order,
        counts,
    }))
}

fn counts_fit(
    limits: &ReviewLimits,
    paths: usize,
    diffstat: usize,
    checks: usize,
    diagnostics: usize,
) -> Result<()> {
    if diagnostics > limits.max_diagnostic_summaries {
        return Err(limit_err(format!(
            "input.diagnostics has {diagnostics} summaries; maxDiagnosticSummaries is {}",
            limits.max_diagnostic_summaries
        )));
    }
    let floor = paths
        .saturating_mul(MIN_PATH_JSON)
        .saturating_add(diffstat.saturating_mul(MIN_DIFFSTAT_JSON))
        .saturating_add(checks.saturating_mul(MIN_CHECK_JSON))
        .saturating_add(diagnostics.saturating_mul(MIN_DIAGNOSTIC_JSON));
    if floor > limits.max_manifest_bytes {
        return Err(limit_err(format!(
            "input has {paths} changed paths, {diffstat} diffstat rows, {checks} checks and {diagnostics} diagnostic summaries: at least {floor} bytes of manifest, over maxManifestBytes ({})",
            limits.max_manifest_bytes
        )));
    }
    Ok(())
}

/// A list position as `u32` (lists are bounded far below `u32::MAX` by the input cap).
fn index_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

fn safe_u64(n: u64, path: impl FnOnce() -> String) -> Result<u64> {
    if n > MAX_SAFE_INTEGER {
        return Err(input_err(format!(
            "{} must be at most 2^53 - 1 (a safe integer)",
            path()
        )));
    }
    Ok(n)
}

/// A validated, normalized manifest that still borrows from the input: everything the
/// binding needs (the JSON texts) without building the owned [`ManifestContent`].
pub(super) struct Parts<'a> {
    d: Draft<'a>,
    summaries: Vec<Option<Cow<'a, str>>>,
    digest: String,
    review_id: String,
    created_at: String,
    review_json: String,
}

impl Parts<'_> {
    fn artifact_input(&self) -> ArtifactInputHead {
        ArtifactInputHead {
            thread_id: self.d.thread_id.to_string(),
            id: self.d.artifact_id.to_string(),
            uri: self.d.uri.to_string(),
            mime: format!("application/x-{}", self.d.kind),
            hash: self.d.sha256.to_string(),
            size: self.d.bytes,
            title: self.d.title.map(str::to_string),
        }
    }

    /// The binding's result: the artifact input's JSON text without `preview`, a newline
    /// (JSON text never holds a raw newline, so the first one separates), and the manifest's
    /// JSON text. The short part comes first so the reader finds the newline at once.
    fn binding_text(&self) -> Result<String> {
        let head = serde_json::to_string(&self.artifact_input())
            .map_err(|e| PrismError::internal(format!("serialising artifact input failed: {e}")))?;
        let mut out = String::with_capacity(self.review_json.len() + head.len() + 1);
        out.push_str(&head);
        out.push('\n');
        out.push_str(&self.review_json);
        Ok(out)
    }

    /// See [`ColumnsOutput::small_json`].
    fn small_json(&self) -> Result<String> {
        let head = serde_json::to_string(&self.artifact_input())
            .map_err(|e| PrismError::internal(format!("serialising artifact input failed: {e}")))?;
        let mut o = Vec::with_capacity(head.len() + 1024);
        o.extend_from_slice(b"{\"a\":");
        o.extend_from_slice(head.as_bytes());
        o.extend_from_slice(b",\"r\":{\"reviewId\":");
        write_str(&mut o, &self.review_id);
        o.extend_from_slice(b",\"createdAt\":");
        write_str(&mut o, &self.created_at);
        o.extend_from_slice(b",\"state\":\"pending\",\"digest\":");
        write_str(&mut o, &self.digest);
        o.extend_from_slice(b",\"artifactId\":");
        write_str(&mut o, self.d.artifact_id);
        o.extend_from_slice(b",\"base\":");
        write_str(&mut o, self.d.base);
        o.extend_from_slice(b",\"checks\":");
        write_checks(&mut o, &self.d, &self.summaries);
        o.push(b',');
        write_tail(&mut o, &self.d);
        o.push(b'}');
        String::from_utf8(o)
            .map_err(|e| PrismError::internal(format!("manifest JSON is not UTF-8: {e}")))
    }

    fn into_output(self) -> ManifestOutput {
        let artifact_input = self.artifact_input();
        let d = self.d;
        let content = ManifestContent {
            artifact_id: d.artifact_id.to_string(),
            base: d.base.to_string(),
            changed_paths: d.changed_paths.iter().map(|p| p.0.to_string()).collect(),
            checks: d
                .checks
                .iter()
                .zip(self.summaries)
                .map(|((name, exit_code, _), summary)| CheckSummary {
                    exit_code: *exit_code,
                    name: (*name).to_string(),
                    summary: summary.map(Cow::into_owned),
                })
                .collect(),
            diagnostics: d
                .diagnostics
                .iter()
                .map(|g| DiagnosticSummary {
                    errors: g.errors,
                    file: g.file.to_string(),
                    hints: g.hints,
                    information: g.information,
                    warnings: g.warnings,
                })
                .collect(),
            diffstat: d
                .diffstat
                .iter()
                .map(|(file, additions, deletions, _)| DiffstatEntry {
                    additions: *additions,
                    deletions: *deletions,
                    file: (*file).to_string(),
                })
                .collect(),
            head: d.head.to_string(),
            identity: RepositoryIdentity {
                default_branch: d.default_branch.to_string(),
                remote_fingerprint: d.remote_fingerprint.to_string(),
                repository_id: d.repository_id.to_string(),
                worktree_path: d.worktree_path.map(str::to_string),
            },
            patch: PatchRef {
                bytes: d.bytes,
                kind: d.kind.to_string(),
                sha256: d.sha256.to_string(),
                uri: d.uri.to_string(),
            },
            thread_id: d.thread_id.to_string(),
        };
        ManifestOutput {
            review: ReviewManifest {
                review_id: self.review_id,
                created_at: self.created_at,
                state: "pending",
                digest: self.digest,
                content,
            },
            review_json: self.review_json,
            artifact_input,
        }
    }
}

/// Semantic checks, caps, normalization and digest, shared by both readers.
fn finish(d: Draft<'_>, now: impl FnOnce() -> String) -> Result<ManifestOutput> {
    Ok(finish_parts(d, now)?.into_output())
}

/// Sort `v` by `key` unless it already is (git lists paths in order; the check is one pass).
fn sort_by_str<T>(v: &mut [T], key: impl Fn(&T) -> &str) {
    if !v.is_sorted_by(|a, b| key(a) <= key(b)) {
        v.sort_unstable_by(|a, b| key(a).cmp(key(b)));
    }
}

fn finish_parts<'a>(mut d: Draft<'a>, now: impl FnOnce() -> String) -> Result<Parts<'a>> {
    let limits = d.limits;
    counts_fit(
        &limits,
        d.changed_paths.len(),
        d.diffstat.len(),
        d.checks.len(),
        d.diagnostics.len(),
    )?;
    check_ident(d.thread_id, "input.threadId")?;
    check_ident(d.artifact_id, "input.artifactId")?;
    check_ident(d.repository_id, "input.identity.repositoryId")?;
    if !is_hex64(d.remote_fingerprint) {
        return Err(input_err(
            "input.identity.remoteFingerprint must be 64 lowercase hex digits (a SHA-256)".into(),
        ));
    }
    check_ident(d.default_branch, "input.identity.defaultBranch")?;
    if let Some(p) = d.worktree_path {
        check_rel_path(p, "input.identity.worktreePath")?;
    }
    check_ident(d.base, "input.base")?;
    check_ident(d.head, "input.head")?;
    check_kind(d.kind, "input.patch.kind")?;
    check_uri(d.uri, "input.patch.uri", URI_BYTES)?;
    if !is_hex64(d.sha256) {
        return Err(input_err(
            "input.patch.sha256 must be 64 lowercase hex digits (a SHA-256)".into(),
        ));
    }
    safe_u64(d.bytes, || "input.patch.bytes".into())?;
    if let Some(id) = d.review_id {
        check_ident(id, "input.reviewId")?;
    }
    if let Some(t) = d.created_at {
        if !is_iso_utc(t) {
            return Err(input_err(
                "input.createdAt must be an ISO-8601 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.fff]Z)"
                    .into(),
            ));
        }
    }
    if let Some(t) = d.title {
        check_ident(t, "input.title")?;
    }

    let mut budget = Budget {
        used: 0,
        max: limits.max_manifest_bytes,
    };
    budget.charge(
        d.thread_id.len()
            + d.artifact_id.len()
            + d.base.len()
            + d.head.len()
            + d.repository_id.len()
            + d.default_branch.len()
            + d.worktree_path.map_or(0, str::len)
            + d.uri.len()
            + d.kind.len()
            + 64 * 3,
        "the identity and patch fields",
    )?;

    for (i, (p, _)) in d.changed_paths.iter().enumerate() {
        if check_rel_path(p, "").is_err() {
            // Re-run with the element's name for the message (only on the error path).
            check_rel_path(p, &elem_path("input.changedPaths", i))?;
        }
        budget.charge(p.len() + 3, "input.changedPaths")?;
    }
    sort_by_str(&mut d.changed_paths, |p| p.0);
    d.changed_paths.dedup_by(|a, b| a.0 == b.0);

    for (i, (file, additions, deletions, _)) in d.diffstat.iter().enumerate() {
        if check_rel_path(file, "").is_err() {
            check_rel_path(file, &format!("{}.file", elem_path("input.diffstat", i)))?;
        }
        safe_u64(*additions, || {
            format!("{}.additions", elem_path("input.diffstat", i))
        })?;
        safe_u64(*deletions, || {
            format!("{}.deletions", elem_path("input.diffstat", i))
        })?;
        budget.charge(file.len() + 36, "input.diffstat")?;
    }
    sort_by_str(&mut d.diffstat, |e| e.0);
    refuse_duplicate(
        d.diffstat.iter().map(|e| e.0),
        "input.diffstat",
        "one row per file",
    )?;

    for (i, (name, exit_code, summary)) in d.checks.iter().enumerate() {
        if check_ident(name, "").is_err() {
            check_ident(name, &format!("{}.name", elem_path("input.checks", i)))?;
        }
        if exit_code.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(input_err(format!(
                "{}.exitCode must be a safe integer",
                elem_path("input.checks", i)
            )));
        }
        if let Some(s) = summary {
            if s.len() > CHECK_SUMMARY_BYTES {
                return Err(limit_err(format!(
                    "{}.summary is {} bytes; the cap is {CHECK_SUMMARY_BYTES} bytes per check summary",
                    elem_path("input.checks", i),
                    s.len()
                )));
            }
        }
        budget.charge(
            name.len() + summary.map_or(0, str::len) + 24,
            "input.checks",
        )?;
    }
    sort_by_str(&mut d.checks, |c| c.0);
    refuse_duplicate(
        d.checks.iter().map(|c| c.0),
        "input.checks",
        "one entry per check name",
    )?;
    let summaries: Vec<Option<Cow<'a, str>>> = d
        .checks
        .iter()
        .map(|(_, _, s)| s.map(clean_summary).filter(|c| !c.is_empty()))
        .collect();

    for (i, g) in d.diagnostics.iter().enumerate() {
        let at = || elem_path("input.diagnostics", i);
        if check_rel_path(g.file, "").is_err() {
            check_rel_path(g.file, &format!("{}.file", at()))?;
        }
        safe_u64(g.errors, || format!("{}.errors", at()))?;
        safe_u64(g.warnings, || format!("{}.warnings", at()))?;
        safe_u64(g.information, || format!("{}.information", at()))?;
        safe_u64(g.hints, || format!("{}.hints", at()))?;
        budget.charge(g.file.len() + 58, "input.diagnostics")?;
    }
    sort_by_str(&mut d.diagnostics, |g| g.file);
    refuse_duplicate(
        d.diagnostics.iter().map(|g| g.file),
        "input.diagnostics",
        "one summary per file",
    )?;

    let canonical = write_canonical(&d, &summaries);
    let digest = json::sha256_hex(&canonical);
    let review_id = match d.review_id {
        Some(id) => id.to_string(),
        None => format!("review-{}", digest.get(..24).unwrap_or(&digest)),
    };
    let created_at = d.created_at.map_or_else(now, str::to_string);

    // The manifest text: the four unbound members, then the canonical content members.
    let mut review_json = Vec::with_capacity(canonical.len() + review_id.len() + 160);
    review_json.extend_from_slice(b"{\"reviewId\":");
    write_str(&mut review_json, &review_id);
    review_json.extend_from_slice(b",\"createdAt\":");
    write_str(&mut review_json, &created_at);
    review_json.extend_from_slice(b",\"state\":\"pending\",\"digest\":\"");
    review_json.extend_from_slice(digest.as_bytes());
    review_json.extend_from_slice(b"\",");
    review_json.extend_from_slice(canonical.get(1..).unwrap_or_default());
    let review_json = String::from_utf8(review_json)
        .map_err(|e| PrismError::internal(format!("manifest JSON is not UTF-8: {e}")))?;
    if review_json.len() > limits.max_manifest_bytes {
        return Err(limit_err(format!(
            "the manifest is {} bytes of JSON; maxManifestBytes is {}",
            review_json.len(),
            limits.max_manifest_bytes
        )));
    }
    Ok(Parts {
        d,
        summaries,
        digest,
        review_id,
        created_at,
        review_json,
    })
}

/// A check summary without control characters (other than newline and tab) and bidi
/// overrides; borrowed when there is nothing to strip.
fn clean_summary(s: &str) -> Cow<'_, str> {
    let dirty = s.chars().any(|c| {
        (c.is_control() && c != '\n' && c != '\t')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    });
    if dirty {
        Cow::Owned(strip_controls(s))
    } else {
        Cow::Borrowed(s)
    }
}

// ---------- the canonical writer ----------

/// RFC 8785 canonical JSON of the bound content, written directly: members in sorted order
/// (all names are ASCII, so UTF-16 order is byte order), strings escaped as JSON.stringify
/// does, integers in decimal. Equal to `serde_json::to_vec(&ManifestContent)` (tested).
fn write_canonical(d: &Draft<'_>, summaries: &[Option<Cow<'_, str>>]) -> Vec<u8> {
    let paths: usize = d.changed_paths.iter().map(|p| p.0.len() + 3).sum();
    let rows: usize = d.diffstat.iter().map(|r| r.0.len() + 64).sum();
    let diags: usize = d.diagnostics.iter().map(|g| g.file.len() + 90).sum();
    let mut o = Vec::with_capacity(paths + rows + diags + 1024);
    o.extend_from_slice(b"{\"artifactId\":");
    write_str(&mut o, d.artifact_id);
    o.extend_from_slice(b",\"base\":");
    write_str(&mut o, d.base);
    o.extend_from_slice(b",\"changedPaths\":[");
    for (i, (p, _)) in d.changed_paths.iter().enumerate() {
        if i > 0 {
            o.push(b',');
        }
        write_str(&mut o, p);
    }
    o.extend_from_slice(b"],\"checks\":");
    write_checks(&mut o, d, summaries);
    o.extend_from_slice(b",\"diagnostics\":[");
    for (i, g) in d.diagnostics.iter().enumerate() {
        if i > 0 {
            o.push(b',');
        }
        o.extend_from_slice(b"{\"errors\":");
        write_u64(&mut o, g.errors);
        o.extend_from_slice(b",\"file\":");
        write_str(&mut o, g.file);
        o.extend_from_slice(b",\"hints\":");
        write_u64(&mut o, g.hints);
        o.extend_from_slice(b",\"information\":");
        write_u64(&mut o, g.information);
        o.extend_from_slice(b",\"warnings\":");
        write_u64(&mut o, g.warnings);
        o.push(b'}');
    }
    o.extend_from_slice(b"],\"diffstat\":[");
    for (i, (file, additions, deletions, _)) in d.diffstat.iter().enumerate() {
        if i > 0 {
            o.push(b',');
        }
        o.extend_from_slice(b"{\"additions\":");
        write_u64(&mut o, *additions);
        o.extend_from_slice(b",\"deletions\":");
        write_u64(&mut o, *deletions);
        o.extend_from_slice(b",\"file\":");
        write_str(&mut o, file);
        o.push(b'}');
    }
    o.extend_from_slice(b"],");
    write_tail(&mut o, d);
    o
}

/// The `checks` array (sorted, summaries cleaned) as canonical JSON.
fn write_checks(o: &mut Vec<u8>, d: &Draft<'_>, summaries: &[Option<Cow<'_, str>>]) {
    o.push(b'[');
    for (i, ((name, exit_code, _), summary)) in d.checks.iter().zip(summaries).enumerate() {
        if i > 0 {
            o.push(b',');
        }
        o.extend_from_slice(b"{\"exitCode\":");
        write_int(o, *exit_code);
        o.extend_from_slice(b",\"name\":");
        write_str(o, name);
        if let Some(s) = summary {
            o.extend_from_slice(b",\"summary\":");
            write_str(o, s);
        }
        o.push(b'}');
    }
    o.push(b']');
}

/// `"head":…,"identity":{…},"patch":{…},"threadId":…}`: the members after `diffstat`, and
/// the closing brace.
fn write_tail(o: &mut Vec<u8>, d: &Draft<'_>) {
    o.extend_from_slice(b"\"head\":");
    write_str(o, d.head);
    o.extend_from_slice(b",\"identity\":{\"defaultBranch\":");
    write_str(o, d.default_branch);
    o.extend_from_slice(b",\"remoteFingerprint\":");
    write_str(o, d.remote_fingerprint);
    o.extend_from_slice(b",\"repositoryId\":");
    write_str(o, d.repository_id);
    if let Some(w) = d.worktree_path {
        o.extend_from_slice(b",\"worktreePath\":");
        write_str(o, w);
    }
    o.extend_from_slice(b"},\"patch\":{\"bytes\":");
    write_u64(o, d.bytes);
    o.extend_from_slice(b",\"kind\":");
    write_str(o, d.kind);
    o.extend_from_slice(b",\"sha256\":");
    write_str(o, d.sha256);
    o.extend_from_slice(b",\"uri\":");
    write_str(o, d.uri);
    o.extend_from_slice(b"},\"threadId\":");
    write_str(o, d.thread_id);
    o.push(b'}');
}

/// `sorted` must be sorted; refuse the first value that repeats.
fn refuse_duplicate<'a>(
    sorted: impl Iterator<Item = &'a str>,
    path: &str,
    rule: &str,
) -> Result<()> {
    let mut prev: Option<&str> = None;
    for cur in sorted {
        if prev == Some(cur) {
            return Err(input_err(format!(
                "{path} lists {cur:?} more than once ({rule})"
            )));
        }
        prev = Some(cur);
    }
    Ok(())
}

// ---------- the named reader (over a parsed Value) ----------

fn read_value(input: &Value) -> Result<Draft<'_>> {
    let f = Fields::new(input, "input", input_err)?;
    deny_unknown(&f, TOP_FIELDS)?;
    let limits = ReviewLimits::read(f.opt_object("limits")?.as_ref())?;

    let thread_id = f.str("threadId")?;
    let artifact_id = f.str("artifactId")?;
    let identity = f.object_field("identity")?;
    deny_unknown(
        &identity,
        &[
            "repositoryId",
            "remoteFingerprint",
            "defaultBranch",
            "worktreePath",
        ],
    )?;
    let repository_id = identity.str("repositoryId")?;
    let remote_fingerprint = identity.str("remoteFingerprint")?;
    let default_branch = identity.str("defaultBranch")?;
    let worktree_path = identity.opt_str("worktreePath")?;
    let base = f.str("base")?;
    let head = f.str("head")?;
    let patch = f.object_field("patch")?;
    deny_unknown(&patch, &["kind", "uri", "sha256", "bytes"])?;
    let kind = patch.str("kind")?;
    let uri = patch.str("uri")?;
    let sha256 = patch.str("sha256")?;
    let bytes = patch.u64("bytes")?;
    let review_id = f.opt_str("reviewId")?;
    let created_at = f.opt_str("createdAt")?;
    let title = f.opt_str("title")?;

    let changed = f.opt_array("changedPaths")?.ok_or_else(|| {
        f.fail(
            "changedPaths",
            "is required (an array of workspace-relative paths)",
        )
    })?;
    let diffstat = f.opt_array("diffstat")?.ok_or_else(|| {
        f.fail(
            "diffstat",
            "is required (an array of { file, additions, deletions })",
        )
    })?;
    let checks = f.opt_array("checks")?.map(Vec::as_slice).unwrap_or(&[]);
    let diagnostics = f
        .opt_array("diagnostics")?
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    // Counts first: no entry is read for an input that cannot fit.
    counts_fit(
        &limits,
        changed.len(),
        diffstat.len(),
        checks.len(),
        diagnostics.len(),
    )?;

    let mut changed_paths = Vec::with_capacity(changed.len());
    for (i, v) in changed.iter().enumerate() {
        match v {
            Value::String(s) => changed_paths.push((s.as_str(), index_u32(i))),
            other => {
                return Err(input_err(format!(
                    "{} must be a string, got {}",
                    elem_path("input.changedPaths", i),
                    type_name(other)
                )))
            }
        }
    }
    let mut rows = Vec::with_capacity(diffstat.len());
    for (i, v) in diffstat.iter().enumerate() {
        let e = Fields::new(v, &elem_path("input.diffstat", i), input_err)?;
        deny_unknown(&e, &["file", "additions", "deletions"])?;
        rows.push((
            e.str("file")?,
            e.u64("additions")?,
            e.u64("deletions")?,
            index_u32(i),
        ));
    }
    let mut check_rows = Vec::with_capacity(checks.len());
    for (i, v) in checks.iter().enumerate() {
        let e = Fields::new(v, &elem_path("input.checks", i), input_err)?;
        deny_unknown(&e, &["name", "exitCode", "summary"])?;
        let name = e.str("name")?;
        let exit_code = match e.get("exitCode") {
            None => return Err(e.fail("exitCode", "is required (an integer)")),
            Some(v) => as_i64(v).ok_or_else(|| e.fail("exitCode", "must be an integer"))?,
        };
        check_rows.push((name, exit_code, e.opt_str("summary")?));
    }
    let mut diag_rows = Vec::with_capacity(diagnostics.len());
    for (i, v) in diagnostics.iter().enumerate() {
        let e = Fields::new(v, &elem_path("input.diagnostics", i), input_err)?;
        deny_unknown(&e, &["file", "errors", "warnings", "information", "hints"])?;
        diag_rows.push(DraftDiagnostic {
            file: e.str("file")?,
            at: index_u32(i),
            errors: e.u64("errors")?,
            warnings: e.u64("warnings")?,
            information: e.opt_u64("information")?.unwrap_or(0),
            hints: e.opt_u64("hints")?.unwrap_or(0),
        });
    }
    Ok(Draft {
        limits,
        thread_id,
        artifact_id,
        repository_id,
        remote_fingerprint,
        default_branch,
        worktree_path,
        base,
        head,
        kind,
        uri,
        sha256,
        bytes,
        review_id,
        created_at,
        title,
        changed_paths,
        diffstat: rows,
        checks: check_rows,
        diagnostics: diag_rows,
    })
}

// ---------- the typed fast path ----------

/// A JSON string, borrowed from the input text when it holds no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A deserializer that reads a struct from a JSON object only. serde's derived structs also
/// accept a JSON array (members by position); the named reader refuses that, so the fast path
/// must too.
struct MapOnly<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_any(v)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_map(v)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// `T` read through [`MapOnly`].
struct Obj<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        T::deserialize(MapOnly(d)).map(Obj)
    }
}

/// A nested object member (never an array).
fn object<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(MapOnly(d))
}

/// A present member must not be `null` (the named reader refuses `null` too); objects only.
fn present<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(MapOnly(d)).map(Some)
}

/// A sequence of at most `MAX` entries; reading stops (with an error) at entry `MAX + 1`.
fn bounded<'de, D, T, const MAX: usize>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct V<T, const MAX: usize>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>, const MAX: usize> Visitor<'de> for V<T, MAX> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "an array of at most {MAX} entries")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<T>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX));
            while let Some(Obj(item)) = seq.next_element::<Obj<T>>()? {
                if out.len() == MAX {
                    return Err(serde::de::Error::custom("too many entries"));
                }
                out.push(item);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V::<T, MAX>(std::marker::PhantomData))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawIdentity<'a> {
    #[serde(borrow)]
    repository_id: Text<'a>,
    #[serde(borrow)]
    remote_fingerprint: Text<'a>,
    #[serde(borrow)]
    default_branch: Text<'a>,
    #[serde(borrow, default, deserialize_with = "present")]
    worktree_path: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPatch<'a> {
    #[serde(borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    uri: Text<'a>,
    #[serde(borrow)]
    sha256: Text<'a>,
    bytes: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawDiffstat<'a> {
    #[serde(borrow)]
    file: Text<'a>,
    additions: u64,
    deletions: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawCheck<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    exit_code: i64,
    #[serde(borrow, default, deserialize_with = "present")]
    summary: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawDiagnostic<'a> {
    #[serde(borrow)]
    file: Text<'a>,
    errors: u64,
    warnings: u64,
    #[serde(default, deserialize_with = "present")]
    information: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    hints: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawLimits {
    #[serde(default, deserialize_with = "present")]
    max_review_revisions: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    max_diagnostic_summaries: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    max_manifest_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RawInput<'a> {
    #[serde(borrow)]
    thread_id: Text<'a>,
    #[serde(borrow)]
    artifact_id: Text<'a>,
    #[serde(borrow, deserialize_with = "object")]
    identity: RawIdentity<'a>,
    #[serde(borrow)]
    base: Text<'a>,
    #[serde(borrow)]
    head: Text<'a>,
    #[serde(borrow, deserialize_with = "object")]
    patch: RawPatch<'a>,
    #[serde(borrow, deserialize_with = "bounded::<_, _, HARD_PATHS>")]
    changed_paths: Vec<Text<'a>>,
    #[serde(borrow, deserialize_with = "bounded::<_, _, HARD_DIFFSTAT>")]
    diffstat: Vec<RawDiffstat<'a>>,
    #[serde(borrow, default, deserialize_with = "bounded::<_, _, HARD_CHECKS>")]
    checks: Vec<RawCheck<'a>>,
    #[serde(
        borrow,
        default,
        deserialize_with = "bounded::<_, _, HARD_DIAGNOSTICS>"
    )]
    diagnostics: Vec<RawDiagnostic<'a>>,
    #[serde(default, deserialize_with = "present")]
    limits: Option<RawLimits>,
    #[serde(borrow, default, deserialize_with = "present")]
    review_id: Option<Text<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    created_at: Option<Text<'a>>,
    #[serde(borrow, default, deserialize_with = "present")]
    title: Option<Text<'a>>,
}

impl RawInput<'_> {
    fn draft(&self) -> Result<Draft<'_>> {
        let limits = match &self.limits {
            None => ReviewLimits::DEFAULT,
            Some(l) => ReviewLimits::from_numbers(
                l.max_review_revisions,
                l.max_diagnostic_summaries,
                l.max_manifest_bytes,
            )?,
        };
        Ok(Draft {
            limits,
            thread_id: &self.thread_id.0,
            artifact_id: &self.artifact_id.0,
            repository_id: &self.identity.repository_id.0,
            remote_fingerprint: &self.identity.remote_fingerprint.0,
            default_branch: &self.identity.default_branch.0,
            worktree_path: self.identity.worktree_path.as_ref().map(|x| &*x.0),
            base: &self.base.0,
            head: &self.head.0,
            kind: &self.patch.kind.0,
            uri: &self.patch.uri.0,
            sha256: &self.patch.sha256.0,
            bytes: self.patch.bytes,
            review_id: self.review_id.as_ref().map(|x| &*x.0),
            created_at: self.created_at.as_ref().map(|x| &*x.0),
            title: self.title.as_ref().map(|x| &*x.0),
            changed_paths: self
                .changed_paths
                .iter()
                .enumerate()
                .map(|(i, x)| (&*x.0, index_u32(i)))
                .collect(),
            diffstat: self
                .diffstat
                .iter()
                .enumerate()
                .map(|(i, r)| (&*r.file.0, r.additions, r.deletions, index_u32(i)))
                .collect(),
            checks: self
                .checks
                .iter()
                .map(|c| (&*c.name.0, c.exit_code, c.summary.as_ref().map(|s| &*s.0)))
                .collect(),
            diagnostics: self
                .diagnostics
                .iter()
                .enumerate()
                .map(|(i, g)| DraftDiagnostic {
                    file: &g.file.0,
                    at: index_u32(i),
                    errors: g.errors,
                    warnings: g.warnings,
                    information: g.information.unwrap_or(0),
                    hints: g.hints.unwrap_or(0),
                })
                .collect(),
        })
    }
}

/// The four members the digest does not bind.
pub const UNBOUND_MEMBERS: [&str; 4] = ["digest", "reviewId", "createdAt", "state"];

/// The digest of a manifest given as a JSON object: lowercase hex SHA-256 of the RFC 8785
/// canonical JSON of the object without [`UNBOUND_MEMBERS`]. Equal to
/// `json::canonical_digest` of a copy with those members removed, without the copy.
pub fn digest_of_manifest_value(manifest: &serde_json::Map<String, Value>) -> String {
    // Fast path: the manifest value space (strings, safe integers) written directly.
    let mut out = Vec::with_capacity(4096);
    if super::canon::write_object_value(&mut out, manifest, &UNBOUND_MEMBERS) {
        return json::sha256_hex(&out);
    }
    let mut copy = manifest.clone();
    for k in UNBOUND_MEMBERS {
        copy.remove(k);
    }
    json::canonical_digest(&Value::Object(copy))
}
