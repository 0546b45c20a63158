//! The manifest model: one struct per JSON object, read from the caller's input (serde
//! `Deserialize`, see `read.rs`) and written as the manifest's canonical JSON (serde
//! `Serialize`, see `canonical.rs`).
//!
//! Members are declared in RFC 8785 order (sorted by UTF-16 code units; every name is
//! ASCII), so serde_json's compact output of [`Content`] is its canonical JSON: strings are
//! escaped alike and every number is a safe integer. Input-only members (`createdAt`,
//! `limits`, `reviewId`, `title`) are never serialized; `schemaVersion` is never read.
//! A new bound member is one field here (in sorted position) plus its check in `finish.rs`.

use serde::{Deserialize, Serialize, Serializer};
use std::borrow::Cow;

/// A JSON string, borrowed from the parsed input (or the columns) when possible.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Text<'a>(pub Cow<'a, str>);

impl Text<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Repository identity bound by the review: credential-free remote fingerprint, default
/// branch, optional worktree path.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity<'a> {
    #[serde(borrow)]
    pub default_branch: Text<'a>,
    #[serde(borrow)]
    pub remote_fingerprint: Text<'a>,
    #[serde(borrow)]
    pub repository_id: Text<'a>,
    #[serde(
        borrow,
        default,
        deserialize_with = "super::read::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub worktree_path: Option<Text<'a>>,
}

/// The patch artifact reference (never the body).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Patch<'a> {
    #[serde(deserialize_with = "super::read::count")]
    pub bytes: u64,
    #[serde(borrow)]
    pub kind: Text<'a>,
    #[serde(borrow)]
    pub sha256: Text<'a>,
    #[serde(borrow)]
    pub uri: Text<'a>,
}

/// One changed path (a JSON string); `at` is its position in the caller's list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct ChangedPath<'a> {
    #[serde(borrow)]
    pub path: Text<'a>,
    #[serde(skip)]
    pub at: u32,
}

impl Serialize for ChangedPath<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.path.as_str())
    }
}

/// One diffstat row.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffstatRow<'a> {
    #[serde(deserialize_with = "super::read::count")]
    pub additions: u64,
    #[serde(deserialize_with = "super::read::count")]
    pub deletions: u64,
    #[serde(borrow)]
    pub file: Text<'a>,
    #[serde(skip)]
    pub at: u32,
}

/// One named check result. `summary` is always written (`""` when the caller gave none).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check<'a> {
    #[serde(deserialize_with = "super::read::integer")]
    pub exit_code: i64,
    #[serde(borrow)]
    pub name: Text<'a>,
    #[serde(borrow, default, deserialize_with = "super::read::present_or_default")]
    pub summary: Text<'a>,
}

/// The diagnostic severities a summary row may name, in canonical order.
pub const SEVERITIES: [&str; 4] = ["error", "warning", "info", "hint"];

/// One diagnostic summary row: how many diagnostics of one severity a file has, at the
/// generation they were computed for (@arnilo/prism's shape).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic<'a> {
    #[serde(deserialize_with = "super::read::count")]
    pub count: u64,
    #[serde(borrow)]
    pub file: Text<'a>,
    #[serde(deserialize_with = "super::read::count")]
    pub generation: u64,
    #[serde(borrow)]
    pub severity: Text<'a>,
    #[serde(skip)]
    pub at: u32,
    /// Position of the severity in [`SEVERITIES`] (canonical order within a file), set
    /// when the row is checked.
    #[serde(skip)]
    pub rank: u8,
}

impl Diagnostic<'_> {
    /// Position of the severity in [`SEVERITIES`], `SEVERITIES.len()` for none of them.
    pub fn severity_rank(&self) -> u8 {
        let i = SEVERITIES.iter().position(|s| *s == self.severity.as_str());
        u8::try_from(i.unwrap_or(SEVERITIES.len())).unwrap_or(u8::MAX)
    }
}

/// A limit as given: a number, or `null` (how JSON carries NaN and Infinity).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LimitValue {
    Integer(u64),
    Other(f64),
    Null,
}

/// The `limits` member (@arnilo/prism's `CodingReviewLimits`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitsInput {
    #[serde(default, deserialize_with = "super::read::limit")]
    pub max_revisions: Option<LimitValue>,
    #[serde(default, deserialize_with = "super::read::limit")]
    pub max_diagnostics: Option<LimitValue>,
    #[serde(default, deserialize_with = "super::read::limit")]
    pub max_manifest_bytes: Option<LimitValue>,
}

/// The manifest version this crate writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaVersion;

impl Serialize for SchemaVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(1)
    }
}

/// The input of `createCodingPatchReviewManifest` and, serialized, the content the digest
/// binds (the manifest without `digest`, `reviewId`, `createdAt` and `state`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Content<'a> {
    #[serde(borrow)]
    pub artifact_id: Text<'a>,
    #[serde(borrow)]
    pub base: Text<'a>,
    /// Sorted by code point, deduplicated.
    #[serde(borrow, default, deserialize_with = "super::read::list")]
    pub changed_paths: Vec<ChangedPath<'a>>,
    /// Sorted by `name`; one entry per name.
    #[serde(borrow, default, deserialize_with = "super::read::object_list")]
    pub checks: Vec<Check<'a>>,
    #[serde(
        borrow,
        default,
        deserialize_with = "super::read::present",
        skip_serializing
    )]
    pub created_at: Option<Text<'a>>,
    /// Sorted by `file`, then severity; one row per file and severity.
    #[serde(borrow, default, deserialize_with = "super::read::object_list")]
    pub diagnostics: Vec<Diagnostic<'a>>,
    /// Sorted by `file`; one row per file.
    #[serde(borrow, default, deserialize_with = "super::read::object_list")]
    pub diffstat: Vec<DiffstatRow<'a>>,
    #[serde(borrow)]
    pub head: Text<'a>,
    #[serde(borrow, deserialize_with = "super::read::object")]
    pub identity: Identity<'a>,
    #[serde(
        default,
        deserialize_with = "super::read::present_object",
        skip_serializing
    )]
    pub limits: Option<LimitsInput>,
    #[serde(borrow, deserialize_with = "super::read::object")]
    pub patch: Patch<'a>,
    #[serde(
        borrow,
        default,
        deserialize_with = "super::read::present",
        skip_serializing
    )]
    pub review_id: Option<Text<'a>>,
    #[serde(skip_deserializing)]
    pub schema_version: SchemaVersion,
    #[serde(borrow)]
    pub thread_id: Text<'a>,
    #[serde(
        borrow,
        default,
        deserialize_with = "super::read::present",
        skip_serializing
    )]
    pub title: Option<Text<'a>>,
}

/// The structural artifact attach input (seed 001's `attach`), without `preview`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactInput<'a> {
    pub thread_id: &'a str,
    pub id: &'a str,
    pub uri: &'a str,
    pub mime: String,
    pub hash: &'a str,
    pub size: u64,
    pub title: String,
    /// `head <head> over base <base>`, as @arnilo/prism writes it.
    pub change_note: String,
}
