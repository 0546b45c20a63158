//! `createCodingPatchReviewManifest`: validate, bound, normalize, digest.

use super::limits::{ReviewLimits, CHECK_SUMMARY_BYTES, MANIFEST_INPUT_BYTES, URI_BYTES};
use super::text::{
    as_str, check_ident, check_kind, check_rel_path, check_uri, deny_unknown, elem_path, hex64,
    ident, input_err, is_iso_utc, limit_err, now_iso, opt_ident, strip_controls,
};
use crate::error::{PrismError, Result};
use crate::json::{self, as_i64, Fields};
use serde::Serialize;
use serde_json::Value;

/// Repository identity bound by the review: credential-free remote fingerprint, default
/// branch, optional worktree path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryIdentity {
    pub repository_id: String,
    pub remote_fingerprint: String,
    pub default_branch: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree_path: Option<String>,
}

/// The patch artifact reference (never the body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchRef {
    pub kind: String,
    pub uri: String,
    pub sha256: String,
    pub bytes: u64,
}

/// One diffstat row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffstatEntry {
    pub file: String,
    pub additions: u64,
    pub deletions: u64,
}

/// One named check result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckSummary {
    pub name: String,
    pub exit_code: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// Diagnostic counts for one file, by LSP severity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticSummary {
    pub file: String,
    pub errors: u64,
    pub warnings: u64,
    pub information: u64,
    pub hints: u64,
}

/// Everything the digest binds: the manifest minus `digest`, `reviewId`, `createdAt`, `state`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestContent {
    pub thread_id: String,
    pub artifact_id: String,
    pub identity: RepositoryIdentity,
    pub base: String,
    pub head: String,
    pub patch: PatchRef,
    /// Sorted by code point, deduplicated.
    pub changed_paths: Vec<String>,
    /// Sorted by `file`; one row per file.
    pub diffstat: Vec<DiffstatEntry>,
    /// Sorted by `name`; one entry per name.
    pub checks: Vec<CheckSummary>,
    /// Sorted by `file`; one entry per file.
    pub diagnostics: Vec<DiagnosticSummary>,
}

impl ManifestContent {
    /// Lowercase hex SHA-256 of the RFC 8785 canonical JSON of this content. Equal to
    /// `json::canonical_digest` of the manifest with the four unbound members removed.
    pub fn digest(&self) -> Result<String> {
        let bytes = serde_json_canonicalizer::to_vec(self)
            .map_err(|e| PrismError::internal(format!("canonical JSON failed: {e}")))?;
        Ok(json::sha256_hex(&bytes))
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
    /// The manifest's JSON text (compact, as returned to JavaScript); its length is what
    /// `maxManifestBytes` caps.
    pub review_json: String,
    pub artifact_input: ArtifactInputHead,
}

impl ManifestOutput {
    /// `{"review": M, "artifactInput": {…, "preview": {"review": M}}}` as JSON text, with the
    /// manifest text serialised once and written twice.
    pub fn to_json(&self) -> Result<String> {
        let head = serde_json::to_string(&self.artifact_input)
            .map_err(|e| PrismError::internal(format!("serialising artifact input failed: {e}")))?;
        let head = head.strip_suffix('}').unwrap_or(&head);
        let m = &self.review_json;
        let mut out = String::with_capacity(m.len() * 2 + head.len() + 64);
        out.push_str("{\"review\":");
        out.push_str(m);
        out.push_str(",\"artifactInput\":");
        out.push_str(head);
        out.push_str(",\"preview\":{\"review\":");
        out.push_str(m);
        out.push_str("}}}");
        Ok(out)
    }
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
const MIN_DIFFSTAT_JSON: usize = 41; // {"file":"a","additions":0,"deletions":0},
const MIN_CHECK_JSON: usize = 26; // {"name":"a","exitCode":0},
const MIN_DIAGNOSTIC_JSON: usize = 60; // {"file":"a","errors":0,"warnings":0,"information":0,"hints":0},

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

/// JSON text in, JSON text out (the binding's entry point). The text is refused over
/// [`MANIFEST_INPUT_BYTES`] before it is parsed.
pub fn create_manifest_json(text: &str) -> Result<String> {
    if text.len() > MANIFEST_INPUT_BYTES {
        return Err(limit_err(format!(
            "input is {} bytes of JSON; the cap is {MANIFEST_INPUT_BYTES} bytes",
            text.len()
        )));
    }
    let value = json::parse(text, input_err)?;
    create_manifest(&value, now_iso)?.to_json()
}

/// Build a manifest from a parsed input. `now` gives the default `createdAt`.
pub fn create_manifest(input: &Value, now: impl FnOnce() -> String) -> Result<ManifestOutput> {
    let f = Fields::new(input, "input", input_err)?;
    deny_unknown(&f, TOP_FIELDS)?;
    let limits = ReviewLimits::read(f.opt_object("limits")?.as_ref())?;

    let thread_id = ident(&f, "threadId")?;
    let artifact_id = ident(&f, "artifactId")?;
    let identity = read_identity(&f.object_field("identity")?)?;
    let base = ident(&f, "base")?;
    let head = ident(&f, "head")?;
    let patch = read_patch(&f.object_field("patch")?)?;
    let review_id = opt_ident(&f, "reviewId")?;
    let created_at = match f.opt_str("createdAt")? {
        None => None,
        Some(s) if is_iso_utc(s) => Some(s.to_string()),
        Some(_) => {
            return Err(f.fail(
                "createdAt",
                "must be an ISO-8601 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.fff]Z)",
            ))
        }
    };
    let title = opt_ident(&f, "title")?;

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

    // Counts first: nothing is built for an input that cannot fit.
    if diagnostics.len() > limits.max_diagnostic_summaries {
        return Err(limit_err(format!(
            "input.diagnostics has {} summaries; maxDiagnosticSummaries is {}",
            diagnostics.len(),
            limits.max_diagnostic_summaries
        )));
    }
    let floor = changed
        .len()
        .saturating_mul(MIN_PATH_JSON)
        .saturating_add(diffstat.len().saturating_mul(MIN_DIFFSTAT_JSON))
        .saturating_add(checks.len().saturating_mul(MIN_CHECK_JSON))
        .saturating_add(diagnostics.len().saturating_mul(MIN_DIAGNOSTIC_JSON));
    if floor > limits.max_manifest_bytes {
        return Err(limit_err(format!(
            "input has {} changed paths, {} diffstat rows, {} checks and {} diagnostic summaries: at least {floor} bytes of manifest, over maxManifestBytes ({})",
            changed.len(),
            diffstat.len(),
            checks.len(),
            diagnostics.len(),
            limits.max_manifest_bytes
        )));
    }

    let mut budget = Budget {
        used: 0,
        max: limits.max_manifest_bytes,
    };
    budget.charge(
        thread_id.len()
            + artifact_id.len()
            + base.len()
            + head.len()
            + identity.repository_id.len()
            + identity.default_branch.len()
            + identity.worktree_path.as_ref().map_or(0, String::len)
            + patch.uri.len()
            + patch.kind.len()
            + 64 * 3,
        "the identity and patch fields",
    )?;

    let changed_paths = read_changed_paths(changed, &mut budget)?;
    let diffstat = read_diffstat(diffstat, &mut budget)?;
    let checks = read_checks(checks, &mut budget)?;
    let diagnostics = read_diagnostics(diagnostics, &mut budget)?;

    let content = ManifestContent {
        thread_id,
        artifact_id,
        identity,
        base,
        head,
        patch,
        changed_paths,
        diffstat,
        checks,
        diagnostics,
    };
    let digest = content.digest()?;
    let review_id = match review_id {
        Some(id) => id,
        None => format!("review-{}", digest.get(..24).unwrap_or(&digest)),
    };
    let created_at = created_at.unwrap_or_else(now);
    let artifact_input = ArtifactInputHead {
        thread_id: content.thread_id.clone(),
        id: content.artifact_id.clone(),
        uri: content.patch.uri.clone(),
        mime: format!("application/x-{}", content.patch.kind),
        hash: content.patch.sha256.clone(),
        size: content.patch.bytes,
        title,
    };
    let review = ReviewManifest {
        review_id,
        created_at,
        state: "pending",
        digest,
        content,
    };
    let review_json = serde_json::to_string(&review)
        .map_err(|e| PrismError::internal(format!("serialising the manifest failed: {e}")))?;
    if review_json.len() > limits.max_manifest_bytes {
        return Err(limit_err(format!(
            "the manifest is {} bytes of JSON; maxManifestBytes is {}",
            review_json.len(),
            limits.max_manifest_bytes
        )));
    }
    Ok(ManifestOutput {
        review,
        review_json,
        artifact_input,
    })
}

fn read_identity(f: &Fields<'_>) -> Result<RepositoryIdentity> {
    deny_unknown(
        f,
        &[
            "repositoryId",
            "remoteFingerprint",
            "defaultBranch",
            "worktreePath",
        ],
    )?;
    let repository_id = ident(f, "repositoryId")?;
    let remote_fingerprint = hex64(f, "remoteFingerprint")?;
    let default_branch = ident(f, "defaultBranch")?;
    let worktree_path = match f.opt_str("worktreePath")? {
        None => None,
        Some(p) => {
            check_rel_path(p, &f.path("worktreePath"))?;
            Some(p.to_string())
        }
    };
    Ok(RepositoryIdentity {
        repository_id,
        remote_fingerprint,
        default_branch,
        worktree_path,
    })
}

fn read_patch(f: &Fields<'_>) -> Result<PatchRef> {
    deny_unknown(f, &["kind", "uri", "sha256", "bytes"])?;
    let kind = f.str("kind")?;
    check_kind(kind, &f.path("kind"))?;
    let uri = f.str("uri")?;
    check_uri(uri, &f.path("uri"), URI_BYTES)?;
    let sha256 = hex64(f, "sha256")?;
    let bytes = f.u64("bytes")?;
    Ok(PatchRef {
        kind: kind.to_string(),
        uri: uri.to_string(),
        sha256,
        bytes,
    })
}

fn read_changed_paths(items: &[Value], budget: &mut Budget) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        let s = match v {
            Value::String(s) => s.as_str(),
            _ => as_str(v, &elem_path("input.changedPaths", i))?,
        };
        if let Err(e) = check_rel_path(s, "") {
            return Err(input_err(format!(
                "{}{}",
                elem_path("input.changedPaths", i),
                e.message
            )));
        }
        budget.charge(s.len() + 3, "input.changedPaths")?;
        out.push(s.to_string());
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn read_diffstat(items: &[Value], budget: &mut Budget) -> Result<Vec<DiffstatEntry>> {
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        let path = elem_path("input.diffstat", i);
        let f = Fields::new(v, &path, input_err)?;
        deny_unknown(&f, &["file", "additions", "deletions"])?;
        let file = f.str("file")?;
        check_rel_path(file, &f.path("file"))?;
        let additions = f.u64("additions")?;
        let deletions = f.u64("deletions")?;
        budget.charge(file.len() + 36, "input.diffstat")?;
        out.push(DiffstatEntry {
            file: file.to_string(),
            additions,
            deletions,
        });
    }
    out.sort_unstable_by(|a, b| a.file.cmp(&b.file));
    if let Some(w) = out
        .windows(2)
        .find(|w| w.first().map(|a| &a.file) == w.get(1).map(|b| &b.file))
    {
        let file = w.first().map(|a| a.file.as_str()).unwrap_or("");
        return Err(input_err(format!(
            "input.diffstat lists {file:?} more than once (one row per file)"
        )));
    }
    Ok(out)
}

fn read_checks(items: &[Value], budget: &mut Budget) -> Result<Vec<CheckSummary>> {
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        let path = elem_path("input.checks", i);
        let f = Fields::new(v, &path, input_err)?;
        deny_unknown(&f, &["name", "exitCode", "summary"])?;
        let name = f.str("name")?;
        check_ident(name, &f.path("name"))?;
        let exit_code = match f.get("exitCode") {
            None => return Err(f.fail("exitCode", "is required (an integer)")),
            Some(v) => as_i64(v).ok_or_else(|| f.fail("exitCode", "must be an integer"))?,
        };
        let summary = match f.opt_str("summary")? {
            None => None,
            Some(s) => {
                if s.len() > CHECK_SUMMARY_BYTES {
                    return Err(limit_err(format!(
                        "{} is {} bytes; the cap is {CHECK_SUMMARY_BYTES} bytes per check summary",
                        f.path("summary"),
                        s.len()
                    )));
                }
                let clean = strip_controls(s);
                if clean.is_empty() {
                    None
                } else {
                    Some(clean)
                }
            }
        };
        budget.charge(
            name.len() + summary.as_ref().map_or(0, String::len) + 24,
            "input.checks",
        )?;
        out.push(CheckSummary {
            name: name.to_string(),
            exit_code,
            summary,
        });
    }
    out.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = out
        .windows(2)
        .find(|w| w.first().map(|a| &a.name) == w.get(1).map(|b| &b.name))
    {
        let name = w.first().map(|a| a.name.as_str()).unwrap_or("");
        return Err(input_err(format!(
            "input.checks lists {name:?} more than once (one entry per check name)"
        )));
    }
    Ok(out)
}

fn read_diagnostics(items: &[Value], budget: &mut Budget) -> Result<Vec<DiagnosticSummary>> {
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        let path = elem_path("input.diagnostics", i);
        let f = Fields::new(v, &path, input_err)?;
        deny_unknown(&f, &["file", "errors", "warnings", "information", "hints"])?;
        let file = f.str("file")?;
        check_rel_path(file, &f.path("file"))?;
        let errors = f.u64("errors")?;
        let warnings = f.u64("warnings")?;
        let information = f.opt_u64("information")?.unwrap_or(0);
        let hints = f.opt_u64("hints")?.unwrap_or(0);
        budget.charge(file.len() + 58, "input.diagnostics")?;
        out.push(DiagnosticSummary {
            file: file.to_string(),
            errors,
            warnings,
            information,
            hints,
        });
    }
    out.sort_unstable_by(|a, b| a.file.cmp(&b.file));
    if let Some(w) = out
        .windows(2)
        .find(|w| w.first().map(|a| &a.file) == w.get(1).map(|b| &b.file))
    {
        let file = w.first().map(|a| a.file.as_str()).unwrap_or("");
        return Err(input_err(format!(
            "input.diagnostics lists {file:?} more than once (one summary per file)"
        )));
    }
    Ok(out)
}

/// The four members the digest does not bind.
pub const UNBOUND_MEMBERS: [&str; 4] = ["digest", "reviewId", "createdAt", "state"];

/// The digest of a manifest given as a JSON object: lowercase hex SHA-256 of the RFC 8785
/// canonical JSON of the object without [`UNBOUND_MEMBERS`]. Equal to
/// `json::canonical_digest` of a copy with those members removed, without the copy.
pub fn digest_of_manifest_value(manifest: &serde_json::Map<String, Value>) -> String {
    struct Bound<'a>(&'a serde_json::Map<String, Value>);
    impl Serialize for Bound<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(None)?;
            for (k, v) in self.0 {
                if !UNBOUND_MEMBERS.contains(&k.as_str()) {
                    map.serialize_entry(k, v)?;
                }
            }
            map.end()
        }
    }
    match serde_json_canonicalizer::to_vec(&Bound(manifest)) {
        Ok(bytes) => json::sha256_hex(&bytes),
        // Cannot happen for a serde_json map; fall back to the copying path.
        Err(_) => {
            let mut copy = manifest.clone();
            for k in UNBOUND_MEMBERS {
                copy.remove(k);
            }
            json::canonical_digest(&Value::Object(copy))
        }
    }
}
