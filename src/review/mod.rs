//! Coding patch review: bounded manifests bound to a patch digest and repository identity,
//! and the pure derivation of `pending | accepted | rejected | superseded`.
//!
//! - [`create_manifest`] validates every field (`ERR_PRISM_REVIEW_INPUT`, naming it), charges
//!   the caps before retaining anything (`ERR_PRISM_REVIEW_LIMIT`), normalizes the lists into
//!   one canonical order, and computes the digest of API-NOTES ("Review manifest digest").
//! - [`assert_accepted`] derives the state from an artifact record (see `accept.rs` for the
//!   rules in order).
//!
//! Both have `*_json` twins (JSON text in and out) that the binding layer calls.

mod accept;
mod canon;
mod limits;
mod manifest;
mod text;

pub use accept::{
    assert_accepted, assert_accepted_json, review_digest, Outcome, OutcomeReason, ReviewState,
};
pub use limits::{
    ReviewLimits, ASSERT_INPUT_BYTES, CHECK_SUMMARY_BYTES, MANIFEST_INPUT_BYTES, NOTE_BYTES,
    REVIEWER_BYTES, URI_BYTES,
};
pub use manifest::{
    create_manifest, create_manifest_binding, create_manifest_columns, create_manifest_json,
    create_manifest_text, digest_of_manifest_value, ArtifactInputHead, CheckSummary, Columns,
    ColumnsOutput, DiagnosticSummary, DiffstatEntry, ManifestContent, ManifestOutput, PatchRef,
    RepositoryIdentity, ReviewManifest, MAX_SAFE_INTEGER, UNBOUND_MEMBERS,
};
pub use text::{format_iso_millis, is_iso_utc, now_iso, IDENT_BYTES, PATH_BYTES};

#[cfg(test)]
mod tests;
