//! Writing: the content's RFC 8785 canonical JSON (what the digest hashes), the manifest's
//! JSON text, the artifact attach input, and the digest of a manifest given as a JSON value
//! (`assertCodingPatchAccepted` recomputes it).
//!
//! The manifest's JSON text is `{"reviewId","createdAt","state","digest"` followed by the
//! canonical content members, so the content is serialized once for both.

use super::finish::Parts;
use super::model::{ArtifactInput, Content};
use crate::error::{PrismError, Result};
use crate::json;
use crate::review::canon::{write_object_value, write_str};
use serde_json::{Map, Value};

/// The four members the digest does not bind.
pub const UNBOUND_MEMBERS: [&str; 4] = ["digest", "reviewId", "createdAt", "state"];

/// RFC 8785 canonical JSON of the content: serde_json's compact output of [`Content`],
/// whose members are declared in canonical order (see model.rs; a test checks it against
/// a general canonicalizer).
pub(super) fn canonical_json(c: &Content<'_>) -> Result<Vec<u8>> {
    serde_json::to_vec(c)
        .map_err(|e| PrismError::internal(format!("serialising the manifest failed: {e}")))
}

/// The manifest's JSON text before the content members.
pub(super) fn review_prefix(review_id: &str, created_at: &str, digest: &str) -> Vec<u8> {
    let mut o = Vec::with_capacity(review_id.len() + created_at.len() + 160);
    o.extend_from_slice(b"{\"reviewId\":");
    write_str(&mut o, review_id);
    o.extend_from_slice(b",\"createdAt\":");
    write_str(&mut o, created_at);
    o.extend_from_slice(b",\"state\":\"pending\",\"digest\":");
    write_str(&mut o, digest);
    o.push(b',');
    o
}

fn utf8(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes)
        .map_err(|e| PrismError::internal(format!("manifest JSON is not UTF-8: {e}")))
}

impl Parts<'_> {
    /// The structural artifact attach input (without `preview`), as @arnilo/prism builds it.
    pub fn artifact_input(&self) -> ArtifactInput<'_> {
        let c = &self.content;
        ArtifactInput {
            thread_id: c.thread_id.as_str(),
            id: c.artifact_id.as_str(),
            uri: c.patch.uri.as_str(),
            mime: format!("application/x-{}", c.patch.kind.as_str()),
            hash: c.patch.sha256.as_str(),
            size: c.patch.bytes,
            title: c.title.as_ref().map_or_else(
                || format!("Coding patch review {}", self.review_id),
                |t| t.as_str().to_string(),
            ),
        }
    }

    fn artifact_input_json(&self) -> Result<String> {
        serde_json::to_string(&self.artifact_input())
            .map_err(|e| PrismError::internal(format!("serialising artifact input failed: {e}")))
    }

    /// The manifest's JSON text.
    pub fn review_json(&self) -> Result<String> {
        let mut o = Vec::with_capacity(self.manifest_bytes());
        o.extend_from_slice(&self.prefix);
        o.extend_from_slice(self.canonical.get(1..).unwrap_or_default());
        utf8(o)
    }

    /// The JSON text path's result: the artifact input's JSON text without `preview`, a
    /// newline (JSON text never holds a raw newline, so the first one separates), and the
    /// manifest's JSON text. The short part comes first so the reader finds the newline at once.
    pub fn binding_text(&self) -> Result<String> {
        let head = self.artifact_input_json()?;
        let mut out = String::with_capacity(self.manifest_bytes() + head.len() + 1);
        out.push_str(&head);
        out.push('\n');
        out.push_str(&self.review_json()?);
        Ok(out)
    }

    /// The columns path's result: `{"a":A,"r":R}`, `A` the artifact input's JSON text
    /// without `preview`, `R` the manifest's JSON text with `changedPaths`, `diagnostics` and
    /// `diffstat` empty (the caller fills them from its own copies, in place).
    pub fn small_json(&mut self) -> Result<String> {
        let head = self.artifact_input_json()?;
        let c = &mut self.content;
        let lists = (
            std::mem::take(&mut c.changed_paths),
            std::mem::take(&mut c.diffstat),
            std::mem::take(&mut c.diagnostics),
        );
        let rest = canonical_json(c);
        (c.changed_paths, c.diffstat, c.diagnostics) = lists;
        let rest = rest?;
        let mut o = Vec::with_capacity(head.len() + self.prefix.len() + rest.len() + 16);
        o.extend_from_slice(b"{\"a\":");
        o.extend_from_slice(head.as_bytes());
        o.extend_from_slice(b",\"r\":");
        o.extend_from_slice(&self.prefix);
        o.extend_from_slice(rest.get(1..).unwrap_or_default());
        o.push(b'}');
        utf8(o)
    }
}

/// The digest of a manifest given as a JSON object: lowercase hex SHA-256 of the RFC 8785
/// canonical JSON of the object without [`UNBOUND_MEMBERS`]. Equal to
/// `json::canonical_digest` of a copy with those members removed, without the copy.
pub fn digest_of_manifest_value(manifest: &Map<String, Value>) -> String {
    // Fast path: the manifest value space (strings, safe integers) written directly.
    let mut out = Vec::with_capacity(4096);
    if write_object_value(&mut out, manifest, &UNBOUND_MEMBERS) {
        return json::sha256_hex(&out);
    }
    let mut copy = manifest.clone();
    for k in UNBOUND_MEMBERS {
        copy.remove(k);
    }
    json::canonical_digest(&Value::Object(copy))
}
