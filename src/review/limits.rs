//! The review caps (default / hard, @arnilo/prism's names) and the byte caps around them.

use super::manifest::model::{LimitValue, LimitsInput};
use super::text::limit_err;
use crate::error::Result;
use serde::Serialize;

/// Bytes of one check summary, at most (after control characters are stripped).
pub const CHECK_SUMMARY_BYTES: usize = 8 * 1024;
/// Bytes of the patch artifact URI, at most.
pub const URI_BYTES: usize = 2048;
/// Bytes of the JSON text handed to `createCodingPatchReviewManifest`, at most. Refused before
/// parsing; generous next to the hard manifest cap so unusual-but-valid inputs fit.
pub const MANIFEST_INPUT_BYTES: usize = 4 * 1024 * 1024;
/// Bytes of the JSON text handed to `assertCodingPatchAccepted`, at most: room for records
/// whose revisions' previews embed manifests at the hard byte cap.
pub const ASSERT_INPUT_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of a reviewer note returned by `assertCodingPatchAccepted` (as the rejection
/// `reason`), at most (truncated on a character boundary after control characters are
/// stripped).
pub const NOTE_BYTES: usize = 2048;
/// Bytes of a reviewer reference returned by `assertCodingPatchAccepted`, at most.
pub const REVIEWER_BYTES: usize = 256;
/// Changed paths and diffstat rows a manifest may hold per allowed revision (so 2000 / 8000).
pub const PATHS_PER_REVISION: usize = 250;

// Smallest JSON each retained entry can take in the manifest; used to refuse oversized
// inputs from their counts before any entry is read.
const MIN_PATH_JSON: usize = 4; // "a",
const MIN_DIFFSTAT_JSON: usize = 41; // {"additions":0,"deletions":0,"file":"a"},
const MIN_CHECK_JSON: usize = 39; // {"exitCode":0,"name":"a","summary":""},
const MIN_DIAGNOSTIC_JSON: usize = 56; // {"count":0,"file":"a","generation":0,"severity":"info"},

/// The configurable caps (@arnilo/prism's `CodingReviewLimits`). Each must be an integer in
/// `1..=hard`; anything else is a `RangeError`, never clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewLimits {
    /// Check summaries in one manifest, and a 250-per-revision budget of changed paths and
    /// diffstat rows (8 / 32).
    pub max_revisions: usize,
    /// Diagnostic summary rows in one manifest (500 / 5000).
    pub max_diagnostics: usize,
    /// Bytes of the manifest's JSON (64 KiB / 256 KiB).
    pub max_manifest_bytes: usize,
}

impl ReviewLimits {
    pub const DEFAULT: ReviewLimits = ReviewLimits {
        max_revisions: 8,
        max_diagnostics: 500,
        max_manifest_bytes: 64 * 1024,
    };
    pub const HARD: ReviewLimits = ReviewLimits {
        max_revisions: 32,
        max_diagnostics: 5000,
        max_manifest_bytes: 256 * 1024,
    };

    /// The caps from a `limits` object already read; `root` names it in messages.
    pub fn from_input(input: &LimitsInput, root: &str) -> Result<Self> {
        let pick = |v: Option<LimitValue>, name: &str, hard: usize, default: usize| match v {
            None => Ok(default),
            Some(v) => in_range(v, &format!("{root}.{name}"), hard),
        };
        let (d, h) = (Self::DEFAULT, Self::HARD);
        Ok(Self {
            max_revisions: pick(
                input.max_revisions,
                "maxRevisions",
                h.max_revisions,
                d.max_revisions,
            )?,
            max_diagnostics: pick(
                input.max_diagnostics,
                "maxDiagnostics",
                h.max_diagnostics,
                d.max_diagnostics,
            )?,
            max_manifest_bytes: pick(
                input.max_manifest_bytes,
                "maxManifestBytes",
                h.max_manifest_bytes,
                d.max_manifest_bytes,
            )?,
        })
    }

    /// Changed paths, and diffstat rows, a manifest may hold.
    pub fn max_paths(&self) -> usize {
        self.max_revisions * PATHS_PER_REVISION
    }

    /// Charge the list lengths before any entry is read: the counts of each list, then the
    /// smallest JSON those entries can take against `maxManifestBytes`.
    pub fn counts_fit(
        &self,
        paths: usize,
        diffstat: usize,
        checks: usize,
        diagnostics: usize,
    ) -> Result<()> {
        let max_paths = self.max_paths();
        if paths > max_paths {
            return Err(limit_err(format!(
                "input.changedPaths has {paths} paths; the cap is {max_paths} (250 per maxRevisions)"
            )));
        }
        if diffstat > max_paths {
            return Err(limit_err(format!(
                "input.diffstat has {diffstat} rows; the cap is {max_paths} (250 per maxRevisions)"
            )));
        }
        if checks > self.max_revisions {
            return Err(limit_err(format!(
                "input.checks has {checks} checks; maxRevisions is {}",
                self.max_revisions
            )));
        }
        if diagnostics > self.max_diagnostics {
            return Err(limit_err(format!(
                "input.diagnostics has {diagnostics} summaries; maxDiagnostics is {}",
                self.max_diagnostics
            )));
        }
        let floor = paths * MIN_PATH_JSON
            + diffstat * MIN_DIFFSTAT_JSON
            + checks * MIN_CHECK_JSON
            + diagnostics * MIN_DIAGNOSTIC_JSON;
        if floor > self.max_manifest_bytes {
            return Err(limit_err(format!(
                "input has {paths} changed paths, {diffstat} diffstat rows, {checks} checks and {diagnostics} diagnostic summaries: at least {floor} bytes of manifest, over maxManifestBytes ({})",
                self.max_manifest_bytes
            )));
        }
        Ok(())
    }
}

fn in_range(v: LimitValue, path: &str, hard: usize) -> Result<usize> {
    let got = match v {
        LimitValue::Integer(n) => match usize::try_from(n) {
            Ok(n) if (1..=hard).contains(&n) => return Ok(n),
            _ => n.to_string(),
        },
        LimitValue::Other(f) => f.to_string(),
        LimitValue::Null => "NaN, Infinity or null".to_string(),
    };
    Err(crate::util::caps::out_of_range(path, hard as u64, got))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorKind, ReviewCode};
    use crate::review::manifest::read::read_limits;
    use serde_json::{json, Value};

    fn read(v: Value) -> Result<ReviewLimits> {
        read_limits(&v, "input.limits")
    }

    #[test]
    fn defaults_and_hard_caps() {
        assert_eq!(read(json!({})).unwrap(), ReviewLimits::DEFAULT);
        let l =
            read(json!({"maxRevisions": 32, "maxDiagnostics": 5000, "maxManifestBytes": 262144}))
                .unwrap();
        assert_eq!(l, ReviewLimits::HARD);
        assert_eq!(read(json!({"maxRevisions": 1})).unwrap().max_revisions, 1);
        assert_eq!(read(json!({"maxRevisions": 3.0})).unwrap().max_revisions, 3);
    }

    #[test]
    fn outside_range_is_range_error_never_clamped() {
        for bad in [
            json!({"maxRevisions": 33}),
            json!({"maxRevisions": 0}),
            json!({"maxDiagnostics": 5001}),
            json!({"maxManifestBytes": 262145}),
            json!({"maxManifestBytes": -1}),
            json!({"maxManifestBytes": 1.5}),
            json!({"maxManifestBytes": null}),
        ] {
            let e = read(bad.clone()).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Range, "{bad}");
            assert!(e.message.starts_with("input.limits.max"), "{}", e.message);
        }
    }

    #[test]
    fn wrong_types_and_unknown_members_are_input_errors() {
        for (bad, says) in [
            (
                json!({"maxManifestBytes": "64"}),
                "input.limits.maxManifestBytes must be a number, got string",
            ),
            (
                json!({"maxBytes": 1}),
                "input.limits.maxBytes is not a known field",
            ),
            (
                json!({"maxReviewRevisions": 8}),
                "input.limits.maxReviewRevisions is not a known field",
            ),
            (
                json!({"maxRevisions": [8]}),
                "input.limits.maxRevisions must be a number, got array",
            ),
            (json!([1]), "input.limits must be an object, got array"),
        ] {
            let e = read(bad.clone()).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Review(ReviewCode::Input), "{bad}");
            assert!(e.message.starts_with(says), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn counts_are_charged_per_list() {
        let l = ReviewLimits::DEFAULT;
        assert!(l.counts_fit(2000, 2000, 8, 500).is_err(), "bytes floor");
        assert!(l.counts_fit(2000, 0, 8, 0).is_ok());
        for (p, d, c, g) in [
            (2001, 0, 0, 0),
            (0, 2001, 0, 0),
            (0, 0, 9, 0),
            (0, 0, 0, 501),
        ] {
            let e = l.counts_fit(p, d, c, g).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Review(ReviewCode::Limit));
        }
    }
}
