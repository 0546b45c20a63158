//! The artifact review service: durable, bounded review records of agent-produced
//! artifacts (references only, never bodies) kept as versioned checkpoints.
//!
//! - [`limits`]: the frozen caps, each with a default and a hard maximum.
//! - [`model`]: `ArtifactRecord`, `ArtifactRevision`, `ArtifactApproval`, `ArtifactCitation`.
//! - [`input`]: validation of every request (ids, URIs, sizes, ownership, identity).
//! - [`redact`]: the secret redactor (string values, keys, numbers; depth-bounded).
//! - [`evidence`]: citation binding digests and integrity checks.
//! - [`link`]: signed, expiring delivery links (HMAC-SHA256).
//! - [`service`]: the operations, read-modify-write with checkpoint CAS.
//!
//! Records live in namespace [`NAMESPACE`] under key `threadId:artifactId`; the checkpoint
//! version is the CAS counter, distinct from revision numbers.

pub mod api;
pub mod evidence;
pub mod input;
pub mod limits;
pub mod link;
pub mod model;
pub mod redact;
pub mod service;

pub use limits::ArtifactLimits;
pub use service::{AbortFlag, ArtifactService, ServiceConfig};

use crate::error::{ArtifactReason, PrismError};

/// Checkpoint namespace of artifact records.
pub const NAMESPACE: &str = "prism.artifact";

/// Checkpoint category of artifact records.
pub const CATEGORY: &str = "artifact";

/// `ArtifactError` with reason `invalid_input`; the error constructor handed to `json::Fields`.
pub fn invalid(message: String) -> PrismError {
    PrismError::artifact(ArtifactReason::InvalidInput, message)
}

/// Shorthand for an `ArtifactError` with `reason`.
pub fn err(reason: ArtifactReason, message: impl Into<String>) -> PrismError {
    PrismError::artifact(reason, message)
}

/// Checkpoint key of one artifact.
pub fn record_key(thread_id: &str, artifact_id: &str) -> String {
    // Built by hand: `format!` costs more than the rest of a memory-store key (issue 13).
    let mut key = String::with_capacity(thread_id.len() + 1 + artifact_id.len());
    key.push_str(thread_id);
    key.push(':');
    key.push_str(artifact_id);
    key
}
