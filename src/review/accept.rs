//! `assertCodingPatchAccepted`: derive `pending | accepted | rejected | superseded` from an
//! artifact record, bound to the exact revision, digest and identity of a review manifest.
//!
//! Rules, in the order they are applied (@arnilo/prism's order):
//! 1. Shapes: `review` and `artifact` must be objects with the members read below
//!    (`ERR_PRISM_REVIEW_INPUT`).
//! 2. Ownership: `artifact.threadId`/`artifact.id` must equal `review.threadId`/
//!    `review.artifactId` (`ERR_PRISM_REVIEW_OWNERSHIP`).
//! 3. The bound revision is the newest revision whose `hash` is the patch SHA-256 (bare or
//!    `sha256:`-prefixed). None: `superseded`, version 0 (`patch_changed`).
//! 4. A newer revision than the bound one: `superseded` (`newer_revision`), whatever was
//!    decided.
//! 5. Its `preview.review` must be an object (`review_missing`).
//! 6. Its digest must be the review's, and the review must still hash to its own digest
//!    (`review_digest_changed`: a changed or altered review is superseded, not an error).
//! 7. Its `identity`, `base` and `head` must be the review's (`identity_changed`), and its
//!    content must still hash to its digest (`review_digest_changed`).
//! 8. The last decision recorded for the bound version: `approved` → `accepted`, `rejected`
//!    → `rejected` (the reviewer's note is the `reason`), any other state → `pending`
//!    (`unknown_decision`), none → `pending` (`no_decision`).
//!
//! `reason` is @arnilo/prism's: an explanation for `pending` and `superseded`, the
//! reviewer's note for `rejected`, none for `accepted`. `rule` names the rule that decided a
//! `pending` or `superseded` state, for programs.

use super::limits::{ASSERT_INPUT_BYTES, NOTE_BYTES, REVIEWER_BYTES};
use super::manifest::digest_of_manifest_value;
use super::text::{deny_unknown, elem_path, input_err, limit_err, strip_controls, truncate_utf8};
use crate::error::{PrismError, Result, ReviewCode};
use crate::json::{self, as_u64, Fields};
use serde::Serialize;
use serde_json::{Map, Value};

/// The derived review state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewState {
    Pending,
    Accepted,
    Rejected,
    Superseded,
}

/// Which rule decided a `pending` or `superseded` state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// `pending`: no decision recorded for the bound revision.
    NoDecision,
    /// `pending`: the last decision for the bound revision has a state other than
    /// `approved`/`rejected` (never read as acceptance).
    UnknownDecision,
    /// `superseded`: no revision's hash is the review's patch SHA-256.
    PatchChanged,
    /// `superseded`: a newer revision exists after the bound one.
    NewerRevision,
    /// `superseded`: the bound revision carries no `preview.review` manifest.
    ReviewMissing,
    /// `superseded`: the stored manifest's identity, base or head differ from the review's.
    IdentityChanged,
    /// `superseded`: the stored manifest's digest differs from the review's, or either no
    /// longer hashes to its digest.
    ReviewDigestChanged,
}

impl Rule {
    /// The state this rule decides and @arnilo/prism's explanation of it.
    fn explain(self) -> (ReviewState, &'static str) {
        use ReviewState::{Pending, Superseded};
        match self {
            Rule::NoDecision => (Pending, "no decision recorded for the bound revision"),
            Rule::UnknownDecision => (Pending, "decision for the bound revision is not approved"),
            Rule::PatchChanged => (Superseded, "no artifact revision matches the patch digest"),
            Rule::NewerRevision => (
                Superseded,
                "a newer patch revision supersedes this acceptance",
            ),
            Rule::ReviewMissing => (Superseded, "artifact revision carries no review binding"),
            Rule::IdentityChanged => (
                Superseded,
                "repository/worktree/base/head identity changed after the decision",
            ),
            Rule::ReviewDigestChanged => (
                Superseded,
                "review digest changed after the decision (patch, identity, base, or head changed)",
            ),
        }
    }
}

/// What `assertCodingPatchAccepted` returns (@arnilo/prism's `AssertCodingPatchAcceptedResult`
/// plus `rule`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub state: ReviewState,
    /// The bound revision's version; 0 when no revision is bound (`patch_changed`).
    pub version: u64,
    /// Who decided (`accepted`/`rejected`), control characters stripped, at most
    /// [`REVIEWER_BYTES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    /// The explanation (`pending`/`superseded`) or the reviewer's note (`rejected`, control
    /// characters stripped, at most [`NOTE_BYTES`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The rule that decided a `pending` or `superseded` state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
}

impl Outcome {
    fn by(rule: Rule, version: u64) -> Self {
        let (state, reason) = rule.explain();
        Self {
            state,
            version,
            reviewer: None,
            reason: Some(reason.to_string()),
            rule: Some(rule),
        }
    }
}

/// JSON text in, JSON text out (the binding's entry point).
pub fn assert_accepted_json(text: &str) -> Result<String> {
    if text.len() > ASSERT_INPUT_BYTES {
        return Err(limit_err(format!(
            "input is {} bytes of JSON; the cap is {ASSERT_INPUT_BYTES} bytes",
            text.len()
        )));
    }
    let value = json::parse(text, input_err)?;
    let outcome = assert_accepted(&value)?;
    serde_json::to_string(&outcome)
        .map_err(|e| PrismError::internal(format!("serialising the outcome failed: {e}")))
}

struct Revision<'a> {
    version: u64,
    hash: &'a str,
    preview: Option<&'a Value>,
}

/// The members of the review the rules read.
struct Review<'a> {
    object: &'a Map<String, Value>,
    digest: &'a str,
    patch_sha: &'a str,
}

/// Derive the review state. Pure: reads its input, never changes it.
pub fn assert_accepted(input: &Value) -> Result<Outcome> {
    let f = Fields::new(input, "input", input_err)?;
    deny_unknown(&f, &["review", "artifact"])?;
    let review = read_review(&f)?;
    let artifact = f.object_field("artifact")?;
    let record_thread = artifact.str("threadId")?;
    let record_id = artifact.str("id")?;
    let same = |k: &str| review.object.get(k).and_then(Value::as_str);
    if Some(record_thread) != same("threadId") || Some(record_id) != same("artifactId") {
        return Err(PrismError::review(
            ReviewCode::Ownership,
            "input.artifact belongs to another thread or artifact than the review (threadId/id differ)",
        ));
    }
    let revisions = read_revisions(&artifact)?;
    // Decisions are read (and validated) before any verdict, so a malformed record is
    // refused whatever its revisions say.
    let approvals = read_approvals(&artifact)?;
    let latest = revisions.iter().map(|r| r.version).max().unwrap_or(0);
    let Some(bound) = revisions
        .iter()
        .filter(|r| hash_matches(r.hash, review.patch_sha))
        .max_by_key(|r| r.version)
    else {
        return Ok(Outcome::by(Rule::PatchChanged, 0));
    };
    if let Some(rule) = binding_broken(&review, bound, latest) {
        return Ok(Outcome::by(rule, bound.version));
    }
    Ok(decide(&approvals, bound.version))
}

/// The rule that supersedes the bound revision's acceptance, if any (rules 4 to 7).
fn binding_broken(review: &Review<'_>, bound: &Revision<'_>, latest: u64) -> Option<Rule> {
    if bound.version < latest {
        return Some(Rule::NewerRevision);
    }
    let Some(Value::Object(stored)) = bound.preview.and_then(|p| p.get("review")) else {
        return Some(Rule::ReviewMissing);
    };
    if stored.get("digest").and_then(Value::as_str) != Some(review.digest)
        || digest_of_manifest_value(review.object) != review.digest
    {
        return Some(Rule::ReviewDigestChanged);
    }
    if ["identity", "base", "head"]
        .iter()
        .any(|k| stored.get(*k) != review.object.get(*k))
    {
        return Some(Rule::IdentityChanged);
    }
    // The stored manifest is normally the review itself: equal values hash alike, so only a
    // different one is hashed again.
    if stored != review.object && digest_of_manifest_value(stored) != review.digest {
        return Some(Rule::ReviewDigestChanged);
    }
    None
}

/// Rule 8: the last decision recorded for the bound version.
fn decide(approvals: &[Approval<'_>], version: u64) -> Outcome {
    let Some(decision) = approvals.iter().rev().find(|a| a.version == version) else {
        return Outcome::by(Rule::NoDecision, version);
    };
    let state = match decision.state {
        "approved" => ReviewState::Accepted,
        "rejected" => ReviewState::Rejected,
        _ => return Outcome::by(Rule::UnknownDecision, version),
    };
    let bounded = |s: Option<&str>, max: usize| {
        s.map(|s| truncate_utf8(&strip_controls(s), max).to_string())
            .filter(|s| !s.is_empty())
    };
    Outcome {
        state,
        version,
        reviewer: bounded(decision.reviewer, REVIEWER_BYTES),
        reason: match state {
            ReviewState::Rejected => bounded(decision.note, NOTE_BYTES),
            _ => None,
        },
        rule: None,
    }
}

fn read_review<'a>(f: &Fields<'a>) -> Result<Review<'a>> {
    let value = f.get("review").ok_or_else(|| {
        f.fail(
            "review",
            "is required (the manifest from createCodingPatchReviewManifest)",
        )
    })?;
    let review = Fields::new(value, "input.review", input_err)?;
    // Fields::new refused anything but an object.
    let object = value
        .as_object()
        .ok_or_else(|| PrismError::internal("input.review is not an object"))?;
    let digest = review.str("digest")?;
    review.str("threadId")?;
    review.str("artifactId")?;
    let patch_sha = review.object_field("patch")?.str("sha256")?;
    review.object_field("identity")?;
    review.str("base")?;
    review.str("head")?;
    Ok(Review {
        object,
        digest,
        patch_sha,
    })
}

fn read_revisions<'a>(artifact: &Fields<'a>) -> Result<Vec<Revision<'a>>> {
    let items = artifact
        .opt_array("revisions")?
        .ok_or_else(|| artifact.fail("revisions", "is required (an array)"))?;
    let mut revisions: Vec<Revision<'_>> = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        let rf = Fields::new(v, elem_path("input.artifact.revisions", i), input_err)?;
        let version = rf.u64("version")?;
        if version == 0 {
            return Err(rf.fail("version", "must be a positive integer"));
        }
        if revisions.iter().any(|r| r.version == version) {
            return Err(rf.fail("version", "repeats an earlier revision's version"));
        }
        revisions.push(Revision {
            version,
            hash: rf.str("hash")?,
            preview: rf.get("preview"),
        });
    }
    Ok(revisions)
}

struct Approval<'a> {
    version: u64,
    state: &'a str,
    reviewer: Option<&'a str>,
    note: Option<&'a str>,
}

fn read_approvals<'a>(artifact: &Fields<'a>) -> Result<Vec<Approval<'a>>> {
    let Some(items) = artifact.opt_array("approvals")? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        let af = Fields::new(v, elem_path("input.artifact.approvals", i), input_err)?;
        let version = match af.get("version") {
            Some(v) => as_u64(v).ok_or_else(|| af.fail("version", "must be a positive integer"))?,
            None => return Err(af.fail("version", "is required (a positive integer)")),
        };
        out.push(Approval {
            version,
            state: af.str("state")?,
            reviewer: af.opt_str("reviewer")?,
            note: af.opt_str("note")?,
        });
    }
    Ok(out)
}

/// A revision hash names the patch: the bare hex digest or `sha256:<hex>`, hex case-insensitive.
fn hash_matches(hash: &str, sha: &str) -> bool {
    let bare = match hash.get(..7) {
        Some(p) if p.eq_ignore_ascii_case("sha256:") => hash.get(7..).unwrap_or(""),
        _ => hash,
    };
    bare.eq_ignore_ascii_case(sha)
}
