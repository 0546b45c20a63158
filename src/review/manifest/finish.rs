//! After reading: every rule on every member (`ERR_PRISM_REVIEW_INPUT`, naming the member),
//! the caps (`ERR_PRISM_REVIEW_LIMIT`), the canonical order of the lists, the digest and
//! the exact manifest size. Both input paths (JSON text, columns) end here with the same
//! [`Content`], so they give the same result and the same errors.

use super::canonical::{canonical_json, review_prefix};
use super::model::{Check, Content, Diagnostic, Text, SEVERITIES};
use crate::error::Result;
use crate::json;
use crate::review::limits::{ReviewLimits, CHECK_SUMMARY_BYTES, URI_BYTES};
use crate::review::text::{
    check_id, check_ident, check_kind, check_name, check_ref, check_rel_path, check_uri, elem_path,
    input_err, is_hex64, is_iso_utc, limit_err, strip_controls,
};
use crate::util::MAX_SAFE_INTEGER;
use std::borrow::Cow;

/// A validated, normalized manifest, still borrowing from the input.
pub(super) struct Parts<'a> {
    pub content: Content<'a>,
    pub review_id: String,
    /// The manifest's JSON text up to the content members (`{"reviewId":…,"digest":"…",`).
    pub prefix: Vec<u8>,
    /// RFC 8785 canonical JSON of the content: what the digest hashes.
    pub canonical: Vec<u8>,
}

impl Parts<'_> {
    /// Bytes of the manifest's JSON text (`JSON.stringify(review)`).
    pub fn manifest_bytes(&self) -> usize {
        self.prefix.len() + self.canonical.len().saturating_sub(1)
    }
}

/// Check, charge, normalize and digest. `now` gives the default `createdAt`.
pub(super) fn finish<'a>(
    mut c: Content<'a>,
    limits: ReviewLimits,
    now: impl FnOnce() -> String,
) -> Result<Parts<'a>> {
    limits.counts_fit(
        c.changed_paths.len(),
        c.diffstat.len(),
        c.checks.len(),
        c.diagnostics.len(),
    )?;
    check_members(&c)?;
    check_paths(&mut c)?;
    check_diffstat(&mut c)?;
    check_checks(&mut c)?;
    check_diagnostics(&mut c)?;
    let canonical = canonical_json(&c)?;
    let digest = json::sha256_hex(&canonical);
    let review_id = match &c.review_id {
        Some(id) => id.as_str().to_string(),
        None => format!("review-{}", digest.get(..24).unwrap_or(&digest)),
    };
    let created_at = c
        .created_at
        .as_ref()
        .map_or_else(now, |t| t.as_str().to_string());
    let parts = Parts {
        prefix: review_prefix(&review_id, &created_at, &digest),
        content: c,
        review_id,
        canonical,
    };
    if parts.manifest_bytes() > limits.max_manifest_bytes {
        return Err(limit_err(format!(
            "the manifest is {} bytes of JSON; maxManifestBytes is {}",
            parts.manifest_bytes(),
            limits.max_manifest_bytes
        )));
    }
    Ok(parts)
}

/// The single-valued members: ids, identity, refs, patch, review id, timestamp, title.
fn check_members(c: &Content<'_>) -> Result<()> {
    check_id(c.thread_id.as_str(), "input.threadId")?;
    check_id(c.artifact_id.as_str(), "input.artifactId")?;
    let id = &c.identity;
    check_id(id.repository_id.as_str(), "input.identity.repositoryId")?;
    if !is_hex64(id.remote_fingerprint.as_str()) {
        return Err(input_err(
            "input.identity.remoteFingerprint must be 64 lowercase hex digits (a SHA-256)".into(),
        ));
    }
    check_ref(id.default_branch.as_str(), "input.identity.defaultBranch")?;
    if let Some(p) = &id.worktree_path {
        check_rel_path(p.as_str(), "input.identity.worktreePath")?;
    }
    check_ref(c.base.as_str(), "input.base")?;
    check_ref(c.head.as_str(), "input.head")?;
    check_kind(c.patch.kind.as_str(), "input.patch.kind")?;
    check_uri(c.patch.uri.as_str(), "input.patch.uri", URI_BYTES)?;
    if !is_hex64(c.patch.sha256.as_str()) {
        return Err(input_err(
            "input.patch.sha256 must be 64 lowercase hex digits (a SHA-256)".into(),
        ));
    }
    safe(c.patch.bytes, || "input.patch.bytes".into())?;
    if let Some(id) = &c.review_id {
        check_id(id.as_str(), "input.reviewId")?;
    }
    if let Some(t) = &c.created_at {
        if !is_iso_utc(t.as_str()) {
            return Err(input_err(
                "input.createdAt must be an ISO-8601 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.fff]Z)"
                    .into(),
            ));
        }
    }
    if let Some(t) = &c.title {
        check_ident(t.as_str(), "input.title")?;
    }
    Ok(())
}

fn safe(n: u64, path: impl FnOnce() -> String) -> Result<u64> {
    if n > MAX_SAFE_INTEGER {
        return Err(input_err(format!(
            "{} must be at most 2^53 - 1 (a safe integer)",
            path()
        )));
    }
    Ok(n)
}

/// Sort `v` by `key` unless it already is (git lists paths in order; the check is one pass).
fn sort_by_str<T>(v: &mut [T], key: impl Fn(&T) -> &str) {
    if !v.is_sorted_by(|a, b| key(a) <= key(b)) {
        v.sort_unstable_by(|a, b| key(a).cmp(key(b)));
    }
}

/// `sorted` must be sorted; refuse the first value that repeats.
fn refuse_duplicate<K: PartialEq + std::fmt::Debug>(
    sorted: impl Iterator<Item = K>,
    path: &str,
    rule: &str,
) -> Result<()> {
    let mut prev: Option<K> = None;
    for cur in sorted {
        if prev.as_ref() == Some(&cur) {
            return Err(input_err(format!(
                "{path} lists {cur:?} more than once ({rule})"
            )));
        }
        prev = Some(cur);
    }
    Ok(())
}

/// A workspace-relative path, named by its position in the caller's list on failure.
fn rel_path(p: &str, at: u32, list: &str, member: &str) -> Result<()> {
    if check_rel_path(p, "").is_err() {
        // Re-run with the element's name for the message (only on the error path).
        check_rel_path(p, &format!("{}{member}", elem_path(list, at as usize)))?;
    }
    Ok(())
}

/// Changed paths: workspace-relative; stored sorted by code point, deduplicated.
fn check_paths(c: &mut Content<'_>) -> Result<()> {
    for p in &c.changed_paths {
        rel_path(p.path.as_str(), p.at, "input.changedPaths", "")?;
    }
    sort_by_str(&mut c.changed_paths, |p| p.path.as_str());
    c.changed_paths.dedup_by(|a, b| a.path == b.path);
    Ok(())
}

/// Diffstat rows: workspace-relative file, safe counts; one row per file, sorted by file.
fn check_diffstat(c: &mut Content<'_>) -> Result<()> {
    for r in &c.diffstat {
        let at = || elem_path("input.diffstat", r.at as usize);
        rel_path(r.file.as_str(), r.at, "input.diffstat", ".file")?;
        safe(r.additions, || format!("{}.additions", at()))?;
        safe(r.deletions, || format!("{}.deletions", at()))?;
    }
    sort_by_str(&mut c.diffstat, |r| r.file.as_str());
    refuse_duplicate(
        c.diffstat.iter().map(|r| r.file.as_str()),
        "input.diffstat",
        "one row per file",
    )
}

/// Checks: name rule, safe exit code, summary cleaned and capped; one per name, sorted.
fn check_checks(c: &mut Content<'_>) -> Result<()> {
    for (i, check) in c.checks.iter_mut().enumerate() {
        let at = elem_path("input.checks", i);
        check_name(check.name.as_str(), &format!("{at}.name"))?;
        if check.exit_code.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(input_err(format!("{at}.exitCode must be a safe integer")));
        }
        clean_summary(check, &at)?;
    }
    sort_by_str(&mut c.checks, |c| c.name.as_str());
    refuse_duplicate(
        c.checks.iter().map(|c| c.name.as_str()),
        "input.checks",
        "one entry per check name",
    )
}

/// The summary without control characters (other than newline and tab) and bidi
/// overrides, at most [`CHECK_SUMMARY_BYTES`] after cleaning.
fn clean_summary(check: &mut Check<'_>, at: &str) -> Result<()> {
    let s = check.summary.as_str();
    let dirty = s.chars().any(|c| {
        (c.is_control() && c != '\n' && c != '\t')
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    });
    if dirty {
        check.summary = Text(Cow::Owned(strip_controls(s)));
    }
    let len = check.summary.as_str().len();
    if len > CHECK_SUMMARY_BYTES {
        return Err(limit_err(format!(
            "{at}.summary is {len} bytes; the cap is {CHECK_SUMMARY_BYTES} bytes per check summary"
        )));
    }
    Ok(())
}

/// Diagnostic rows: workspace-relative file, a known severity, safe count and generation;
/// one row per file and severity, sorted by file then severity (error, warning, info, hint).
fn check_diagnostics(c: &mut Content<'_>) -> Result<()> {
    for g in &mut c.diagnostics {
        let at = || elem_path("input.diagnostics", g.at as usize);
        rel_path(g.file.as_str(), g.at, "input.diagnostics", ".file")?;
        g.rank = g.severity_rank();
        if usize::from(g.rank) == SEVERITIES.len() {
            return Err(input_err(format!(
                "{}.severity must be \"error\", \"warning\", \"info\" or \"hint\"",
                at()
            )));
        }
        safe(g.count, || format!("{}.count", at()))?;
        safe(g.generation, || format!("{}.generation", at()))?;
    }
    let order = |a: &Diagnostic<'_>, b: &Diagnostic<'_>| {
        (a.file.as_str(), a.rank).cmp(&(b.file.as_str(), b.rank))
    };
    if !c.diagnostics.is_sorted_by(|a, b| order(a, b).is_le()) {
        c.diagnostics.sort_unstable_by(order);
    }
    refuse_duplicate(
        c.diagnostics
            .iter()
            .map(|g| (g.file.as_str(), g.severity.as_str())),
        "input.diagnostics",
        "one row per file and severity",
    )
}
