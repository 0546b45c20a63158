//! Coding patch review: bounded manifests bound to a patch digest and repository identity,
//! and the pure derivation of `pending | accepted | rejected | superseded`.
//!
//! - [`manifest`] builds `createCodingPatchReviewManifest`'s manifest: one reader
//!   (`manifest/read.rs`), the rules and caps (`manifest/finish.rs`), the canonical JSON and
//!   the digest of API-NOTES ("Review manifest digest", `manifest/canonical.rs`).
//! - [`accept`] derives the state from an artifact record (see `accept.rs` for the rules in
//!   order).
//!
//! The binding layer calls the JSON text entry points.

mod accept;
mod canon;
mod limits;
pub mod manifest;
mod text;

pub use accept::{assert_accepted, assert_accepted_json, Outcome, ReviewState, Rule};
pub use limits::{
    ReviewLimits, ASSERT_INPUT_BYTES, CHECK_SUMMARY_BYTES, MANIFEST_INPUT_BYTES, NOTE_BYTES,
    REVIEWER_BYTES, URI_BYTES,
};
pub use manifest::{
    create_manifest_binding, create_manifest_columns, digest_of_manifest_value,
    resolve_limits_json, Columns, ColumnsOutput, UNBOUND_MEMBERS,
};
pub use text::{is_iso_utc, IDENT_BYTES, PATH_BYTES};

#[cfg(test)]
mod tests;
