//! Business action drafts with editable approvals: an agent tool that mutates the
//! outside world (send mail, create an event, share a document) records the mutation as
//! a durable draft; a human approves, denies, or edits the payload and approves; the
//! mutation runs only under an approval bound to the digest of the exact payload that
//! runs, and at most once.
//!
//! - [`limits`]: the caps (`WorkDraftLimits`).
//! - [`model`]: `WorkDraft`, its revisions, decisions and execution.
//! - [`payload`]: what a payload and an edit must be; the payload digest.
//! - [`recipients`]: recipient and scope declarations, and the no-escalation rule.
//! - [`schema`]: JSON Schema (draft 2020-12) validation of payloads.
//! - [`service`]: the operations, read-modify-write with checkpoint CAS.
//!
//! Drafts live in namespace [`NAMESPACE`] under key `threadId:draftId`, scoped by owner.

pub mod limits;
pub mod model;
pub mod payload;
pub mod recipients;
pub mod schema;
pub mod service;

pub use limits::DraftLimits;
pub use service::{DraftConfig, WorkDraftService};

use crate::error::{PrismError, WorkDraftReason};
use crate::store::BoxFuture;

/// Checkpoint namespace of drafts.
pub const NAMESPACE: &str = "prism.work-draft";

/// Checkpoint category of drafts.
pub const CATEGORY: &str = "work-draft";

/// The members of a `decide` request besides its ids and `signal` (the HTTP resume body's).
pub const DECISION: [&str; 6] = [
    "expectedVersion",
    "decision",
    "modifiedArguments",
    "editedArgs",
    "reason",
    "reviewer",
];

/// Request members only `create` sets: a decision carrying one is refused as
/// `immutable_field` (the HTTP resume body lets them through to that refusal).
pub const CREATE_ONLY: [&str; 7] = [
    "provider",
    "op",
    "payload",
    "schema",
    "recipients",
    "scopes",
    "idempotencyKey",
];

/// A `WorkDraftError` with `reason`.
pub fn werr(reason: WorkDraftReason, message: impl Into<String>) -> PrismError {
    PrismError::work_draft(reason, message)
}

/// `WorkDraftError('invalid_input')`; the error constructor handed to `json::Fields`.
pub fn invalid(message: String) -> PrismError {
    werr(WorkDraftReason::InvalidInput, message)
}

/// Checkpoint key of one draft.
pub fn record_key(thread_id: &str, draft_id: &str) -> String {
    format!("{thread_id}:{draft_id}")
}

/// The host's `recipientPolicy`: whether each address may receive the mutation. The
/// binding layer calls the host's `allow(address)` for each; any failure is a refusal.
pub trait RecipientPolicy: Send + Sync {
    /// One answer per address, in order.
    fn allow<'a>(
        &'a self,
        addresses: &'a [String],
    ) -> BoxFuture<'a, crate::error::Result<Vec<bool>>>;
}
