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

pub use accept::assert_accepted_json;
pub use limits::{ASSERT_INPUT_BYTES, MANIFEST_INPUT_BYTES};
pub use manifest::{
    create_manifest_binding, create_manifest_columns, resolve_limits_json, Columns,
};

#[cfg(test)]
mod tests;
