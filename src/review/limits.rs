//! The review caps (default / hard) and the reader for a caller's `limits` object.

use super::text::input_err;
use crate::error::{PrismError, Result};
use crate::json::{as_u64, type_name, Fields};
use serde_json::Value;

/// Bytes of one check summary, at most (the raw string, charged before it is cleaned).
pub const CHECK_SUMMARY_BYTES: usize = 8 * 1024;
/// Bytes of the patch artifact URI, at most.
pub const URI_BYTES: usize = 2048;
/// Bytes of the JSON text handed to `createCodingPatchReviewManifest`, at most. Refused before
/// parsing; generous next to the hard manifest cap so unusual-but-valid inputs fit.
pub const MANIFEST_INPUT_BYTES: usize = 4 * 1024 * 1024;
/// Bytes of the JSON text handed to `assertCodingPatchAccepted`, at most: room for the hard
/// revision cap of records whose previews embed manifests at the hard byte cap.
pub const ASSERT_INPUT_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of a reviewer note returned by `assertCodingPatchAccepted`, at most (truncated on a
/// character boundary after control characters are stripped).
pub const NOTE_BYTES: usize = 2048;
/// Bytes of a reviewer reference returned by `assertCodingPatchAccepted`, at most.
pub const REVIEWER_BYTES: usize = 256;

/// The configurable caps. Each must be an integer in `1..=hard`; anything else is a
/// `RangeError`, never clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewLimits {
    /// Revisions an artifact record may hold for `assertCodingPatchAccepted` (8 / 32).
    pub max_review_revisions: usize,
    /// Diagnostic summaries in one manifest (500 / 5000).
    pub max_diagnostic_summaries: usize,
    /// Bytes of the manifest's JSON (64 KiB / 256 KiB).
    pub max_manifest_bytes: usize,
}

impl ReviewLimits {
    pub const DEFAULT: ReviewLimits = ReviewLimits {
        max_review_revisions: 8,
        max_diagnostic_summaries: 500,
        max_manifest_bytes: 64 * 1024,
    };
    pub const HARD: ReviewLimits = ReviewLimits {
        max_review_revisions: 32,
        max_diagnostic_summaries: 5000,
        max_manifest_bytes: 256 * 1024,
    };

    /// Read `limits` (absent means the defaults). Unknown members are `ERR_PRISM_REVIEW_INPUT`;
    /// a value that is not a number (or `null`, which is how JSON carries NaN and Infinity)
    /// of `1..=hard` is a `RangeError`.
    pub fn read(limits: Option<&Fields<'_>>) -> Result<Self> {
        let mut out = Self::DEFAULT;
        let Some(f) = limits else {
            return Ok(out);
        };
        super::text::deny_unknown(
            f,
            &[
                "maxReviewRevisions",
                "maxDiagnosticSummaries",
                "maxManifestBytes",
            ],
        )?;
        if let Some(v) = f.get("maxReviewRevisions") {
            out.max_review_revisions = read_limit(
                v,
                &f.path("maxReviewRevisions"),
                Self::HARD.max_review_revisions,
            )?;
        }
        if let Some(v) = f.get("maxDiagnosticSummaries") {
            out.max_diagnostic_summaries = read_limit(
                v,
                &f.path("maxDiagnosticSummaries"),
                Self::HARD.max_diagnostic_summaries,
            )?;
        }
        if let Some(v) = f.get("maxManifestBytes") {
            out.max_manifest_bytes = read_limit(
                v,
                &f.path("maxManifestBytes"),
                Self::HARD.max_manifest_bytes,
            )?;
        }
        Ok(out)
    }
}

impl ReviewLimits {
    /// The caps from numbers already read (the typed reader); same rules as [`Self::read`].
    pub fn from_numbers(
        max_review_revisions: Option<u64>,
        max_diagnostic_summaries: Option<u64>,
        max_manifest_bytes: Option<u64>,
    ) -> Result<Self> {
        let mut out = Self::DEFAULT;
        let pick = |n: Option<u64>, name: &str, hard: usize, default: usize| -> Result<usize> {
            match n {
                None => Ok(default),
                Some(n) => read_limit(&Value::from(n), &format!("input.limits.{name}"), hard),
            }
        };
        out.max_review_revisions = pick(
            max_review_revisions,
            "maxReviewRevisions",
            Self::HARD.max_review_revisions,
            out.max_review_revisions,
        )?;
        out.max_diagnostic_summaries = pick(
            max_diagnostic_summaries,
            "maxDiagnosticSummaries",
            Self::HARD.max_diagnostic_summaries,
            out.max_diagnostic_summaries,
        )?;
        out.max_manifest_bytes = pick(
            max_manifest_bytes,
            "maxManifestBytes",
            Self::HARD.max_manifest_bytes,
            out.max_manifest_bytes,
        )?;
        Ok(out)
    }
}

fn read_limit(v: &Value, path: &str, hard: usize) -> Result<usize> {
    match v {
        Value::Number(_) | Value::Null => {
            let n = as_u64(v)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=hard).contains(n));
            n.ok_or_else(|| {
                PrismError::range(format!(
                    "{path} must be an integer in 1..={hard}, got {}",
                    if v.is_null() {
                        "NaN, Infinity or null".to_string()
                    } else {
                        v.to_string()
                    }
                ))
            })
        }
        other => Err(input_err(format!(
            "{path} must be a number, got {}",
            type_name(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorKind, ReviewCode};
    use serde_json::json;

    fn read(v: Value) -> Result<ReviewLimits> {
        let f = Fields::new(&v, "input.limits", input_err)?;
        ReviewLimits::read(Some(&f))
    }

    #[test]
    fn defaults_and_hard_caps() {
        assert_eq!(ReviewLimits::read(None).unwrap(), ReviewLimits::DEFAULT);
        let l = read(json!({"maxReviewRevisions": 32, "maxDiagnosticSummaries": 5000, "maxManifestBytes": 262144})).unwrap();
        assert_eq!(l, ReviewLimits::HARD);
        assert_eq!(
            read(json!({"maxReviewRevisions": 1}))
                .unwrap()
                .max_review_revisions,
            1
        );
    }

    #[test]
    fn outside_range_is_range_error_never_clamped() {
        for bad in [
            json!({"maxReviewRevisions": 33}),
            json!({"maxReviewRevisions": 0}),
            json!({"maxDiagnosticSummaries": 5001}),
            json!({"maxManifestBytes": 262145}),
            json!({"maxManifestBytes": -1}),
            json!({"maxManifestBytes": 1.5}),
            json!({"maxManifestBytes": null}),
        ] {
            let e = read(bad.clone()).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Range, "{bad}");
        }
    }

    #[test]
    fn wrong_types_and_unknown_members_are_input_errors() {
        for bad in [
            json!({"maxManifestBytes": "64"}),
            json!({"maxBytes": 1}),
            json!({"maxReviewRevisions": [8]}),
        ] {
            let e = read(bad.clone()).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Review(ReviewCode::Input), "{bad}");
        }
        assert!(Fields::new(&json!([1]), "input.limits", input_err).is_err());
    }
}
