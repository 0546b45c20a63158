//! `assertCodingPatchAccepted`: derive `pending | accepted | rejected | superseded` from an
//! artifact record, bound to the exact revision, digest and identity of a review manifest.
//!
//! Rules, in the order they are applied:
//! 1. Shapes: `review` and `artifact` must be objects with the members read below
//!    (`ERR_PRISM_REVIEW_INPUT`).
//! 2. Binding: the digest recomputed from the review's own content must equal
//!    `review.digest`; otherwise the review object was altered after it was made
//!    (`ERR_PRISM_REVIEW_BINDING`).
//! 3. Ownership: `artifact.threadId`/`artifact.id` must equal `review.threadId`/
//!    `review.artifactId` (`ERR_PRISM_REVIEW_OWNERSHIP`).
//! 4. Cap: more than `maxReviewRevisions` revisions is `ERR_PRISM_REVIEW_LIMIT`.
//! 5. The bound revision is the newest revision whose `hash` is the patch SHA-256 (bare or
//!    `sha256:`-prefixed). None: `superseded`/`patch_changed`.
//! 6. Its `preview.review` must be an object (`review_missing`), with the same `identity`,
//!    `base` and `head` (`identity_changed`), the same `digest`, and content that still hashes
//!    to that digest (`review_digest_changed`).
//! 7. A newer revision than the bound one: `superseded`/`newer_revision`, whatever was decided.
//! 8. The last decision recorded for the bound version: `approved` → `accepted`, `rejected` →
//!    `rejected`, any other state → `pending`/`unknown_decision`, none → `pending`/`no_decision`.

use super::limits::{ReviewLimits, ASSERT_INPUT_BYTES, NOTE_BYTES, REVIEWER_BYTES};
use super::manifest::digest_of_manifest_value;
use super::text::{
    deny_unknown, elem_path, input_err, is_hex64, limit_err, strip_controls, truncate_utf8,
};
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

/// Which rule decided the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeReason {
    /// `pending`: no decision recorded for the bound revision.
    NoDecision,
    /// `pending`: the last decision for the bound revision has a state other than
    /// `approved`/`rejected` (never read as acceptance).
    UnknownDecision,
    /// `accepted`: approved, latest, digest and identity intact.
    Approved,
    /// `rejected`: a `rejected` decision for the bound revision.
    Rejected,
    /// `superseded`: no revision's hash is the review's patch SHA-256.
    PatchChanged,
    /// `superseded`: a newer revision exists after the bound one.
    NewerRevision,
    /// `superseded`: the bound revision carries no `preview.review` manifest.
    ReviewMissing,
    /// `superseded`: the stored manifest's identity, base or head differ from the review's.
    IdentityChanged,
    /// `superseded`: the stored manifest's digest differs from the review's, or its content
    /// no longer hashes to it.
    ReviewDigestChanged,
}

/// What `assertCodingPatchAccepted` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub state: ReviewState,
    /// The bound revision's version; when no revision is bound (`patch_changed`), the latest.
    pub version: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    pub reason: OutcomeReason,
    /// The reviewer's note on the deciding entry, control characters stripped, at most
    /// [`NOTE_BYTES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Outcome {
    fn new(state: ReviewState, version: u64, reason: OutcomeReason) -> Self {
        Self {
            state,
            version,
            reviewer: None,
            reason,
            note: None,
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

/// Derive the review state. Pure: reads its input, never changes it.
pub fn assert_accepted(input: &Value) -> Result<Outcome> {
    let f = Fields::new(input, "input", input_err)?;
    deny_unknown(&f, &["review", "artifact", "limits"])?;
    let limits = ReviewLimits::read(f.opt_object("limits")?.as_ref())?;

    // 1. The review.
    let review_value = f.get("review").ok_or_else(|| {
        f.fail(
            "review",
            "is required (the manifest from createCodingPatchReviewManifest)",
        )
    })?;
    let review = Fields::new(review_value, "input.review", input_err)?;
    let digest = review.str("digest")?;
    if !is_hex64(digest) {
        return Err(review.fail("digest", "must be 64 lowercase hex digits"));
    }
    let thread_id = review.str("threadId")?;
    let artifact_id = review.str("artifactId")?;
    let patch = review.object_field("patch")?;
    let patch_sha = patch.str("sha256")?;
    if !is_hex64(patch_sha) {
        return Err(patch.fail("sha256", "must be 64 lowercase hex digits"));
    }
    review.object_field("identity")?;
    review.str("base")?;
    review.str("head")?;

    // 2. Binding: the review must still hash to its digest.
    if digest_of_manifest_value(review.object()) != digest {
        return Err(PrismError::review(
            ReviewCode::Binding,
            "input.review.digest does not match the review's content: the manifest was altered after it was created",
        ));
    }

    // 3. Ownership.
    let artifact = f.object_field("artifact")?;
    let record_thread = artifact.str("threadId")?;
    let record_id = artifact.str("id")?;
    if record_thread != thread_id || record_id != artifact_id {
        return Err(PrismError::review(
            ReviewCode::Ownership,
            "input.artifact belongs to another thread or artifact than the review (threadId/id differ)",
        ));
    }

    // 4. Revisions, capped before they are read.
    let revisions_value = artifact
        .opt_array("revisions")?
        .ok_or_else(|| artifact.fail("revisions", "is required (an array)"))?;
    if revisions_value.is_empty() {
        return Err(artifact.fail("revisions", "must not be empty"));
    }
    if revisions_value.len() > limits.max_review_revisions {
        return Err(limit_err(format!(
            "input.artifact.revisions has {} revisions; maxReviewRevisions is {}",
            revisions_value.len(),
            limits.max_review_revisions
        )));
    }
    let mut revisions: Vec<Revision<'_>> = Vec::with_capacity(revisions_value.len());
    for (i, v) in revisions_value.iter().enumerate() {
        let rf = Fields::new(v, &elem_path("input.artifact.revisions", i), input_err)?;
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
    let latest = revisions.iter().map(|r| r.version).max().unwrap_or(0);

    // Decisions are read (and validated) before any verdict, so a malformed record is
    // refused whatever its revisions say.
    let approvals = read_approvals(&artifact)?;

    // 5. The bound revision.
    let Some(bound) = revisions
        .iter()
        .filter(|r| hash_matches(r.hash, patch_sha))
        .max_by_key(|r| r.version)
    else {
        return Ok(Outcome::new(
            ReviewState::Superseded,
            latest,
            OutcomeReason::PatchChanged,
        ));
    };
    let superseded = |reason| Ok(Outcome::new(ReviewState::Superseded, bound.version, reason));

    // 6. The manifest stored with it.
    let stored = match bound.preview.and_then(|p| p.get("review")) {
        Some(Value::Object(m)) => m,
        _ => return superseded(OutcomeReason::ReviewMissing),
    };
    let review_obj = review.object();
    for key in ["identity", "base", "head"] {
        if stored.get(key) != review_obj.get(key) {
            return superseded(OutcomeReason::IdentityChanged);
        }
    }
    if stored.get("digest").and_then(Value::as_str) != Some(digest)
        || digest_of_manifest_value(stored) != digest
    {
        return superseded(OutcomeReason::ReviewDigestChanged);
    }

    // 7. Staleness.
    if bound.version < latest {
        return superseded(OutcomeReason::NewerRevision);
    }

    // 8. The decision.
    let Some(decision) = approvals.iter().rev().find(|a| a.version == bound.version) else {
        return Ok(Outcome::new(
            ReviewState::Pending,
            bound.version,
            OutcomeReason::NoDecision,
        ));
    };
    let (state, reason) = match decision.state {
        "approved" => (ReviewState::Accepted, OutcomeReason::Approved),
        "rejected" => (ReviewState::Rejected, OutcomeReason::Rejected),
        _ => (ReviewState::Pending, OutcomeReason::UnknownDecision),
    };
    let mut outcome = Outcome::new(state, bound.version, reason);
    if state != ReviewState::Pending {
        outcome.reviewer = decision
            .reviewer
            .map(|r| truncate_utf8(&strip_controls(r), REVIEWER_BYTES).to_string())
            .filter(|r| !r.is_empty());
        outcome.note = decision
            .note
            .map(|n| truncate_utf8(&strip_controls(n), NOTE_BYTES).to_string())
            .filter(|n| !n.is_empty());
    }
    Ok(outcome)
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
        let af = Fields::new(v, &elem_path("input.artifact.approvals", i), input_err)?;
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

/// For tests and callers holding parsed values: the review object's bound digest.
pub fn review_digest(review: &Map<String, Value>) -> String {
    digest_of_manifest_value(review)
}
