//! The frozen caps of the artifact service, named as `@arnilo/prism`'s `ArtifactLimits`
//! (`ResolvedArtifactLimits` once resolved). Each has a default and a hard maximum; a
//! configured value must be an integer in `1..=hard` or resolution fails with a
//! `RangeError` (never clamped silently). Unknown names and non-numbers are `TypeError`s.
//! `maxRequestBytes` bounds an HTTP request body (the handler's); the service ignores it.

use crate::error::Result;
use crate::util::caps::{self, Cap};
use serde::Serialize;
use serde_json::Value;

/// Resolved caps (`ResolvedArtifactLimits` in the API). Sizes are UTF-8 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactLimits {
    pub artifacts_per_thread: u64,
    pub revisions_per_artifact: u64,
    pub record_bytes: u64,
    pub preview_bytes: u64,
    /// Citations per revision.
    pub citations: u64,
    pub citation_bytes: u64,
    pub mime_bytes: u64,
    pub hash_bytes: u64,
    pub uri_bytes: u64,
    pub note_bytes: u64,
    pub title_bytes: u64,
    pub list_page_limit: u64,
    pub delivery_link_ttl_seconds: u64,
    pub delivery_link_token_bytes: u64,
    pub max_request_bytes: u64,
}

const KIB: u64 = 1024;

/// Every cap, in declaration order.
pub const SPEC: [Cap; 15] = [
    Cap::new("artifactsPerThread", 64, 256),
    Cap::new("revisionsPerArtifact", 32, 128),
    Cap::new("recordBytes", 8 * KIB, 64 * KIB),
    Cap::new("previewBytes", 16 * KIB, 64 * KIB),
    Cap::new("citations", 32, 128),
    Cap::new("citationBytes", 2 * KIB, 8 * KIB),
    Cap::new("mimeBytes", 128, 512),
    Cap::new("hashBytes", 256, KIB),
    Cap::new("uriBytes", 2 * KIB, 8 * KIB),
    Cap::new("noteBytes", KIB, 8 * KIB),
    Cap::new("titleBytes", 256, 2 * KIB),
    Cap::new("listPageLimit", 50, 200),
    Cap::new("deliveryLinkTtlSeconds", 300, 86_400),
    Cap::new("deliveryLinkTokenBytes", 4 * KIB, 16 * KIB),
    Cap::new("maxRequestBytes", 64 * KIB, KIB * KIB),
];

impl ArtifactLimits {
    fn from_values(v: &[u64; 15]) -> Self {
        Self {
            artifacts_per_thread: v[0],
            revisions_per_artifact: v[1],
            record_bytes: v[2],
            preview_bytes: v[3],
            citations: v[4],
            citation_bytes: v[5],
            mime_bytes: v[6],
            hash_bytes: v[7],
            uri_bytes: v[8],
            note_bytes: v[9],
            title_bytes: v[10],
            list_page_limit: v[11],
            delivery_link_ttl_seconds: v[12],
            delivery_link_token_bytes: v[13],
            max_request_bytes: v[14],
        }
    }

    /// The defaults.
    #[cfg(test)]
    pub fn defaults() -> Self {
        Self::from_values(&SPEC.map(|c| c.default))
    }

    /// The hard maxima.
    pub fn hard() -> Self {
        Self::from_values(&SPEC.map(|c| c.hard))
    }

    /// Resolve a partial `limits` object (absent or `undefined` = defaults).
    pub fn resolve(value: Option<&Value>) -> Result<Self> {
        let values = caps::resolve_object("limits", value, &SPEC, |_| None)?;
        let values: [u64; 15] = values
            .try_into()
            .map_err(|_| crate::error::PrismError::internal("limits table size"))?;
        Ok(Self::from_values(&values))
    }

    /// The resolved limits as a JSON object (camelCase names).
    pub fn to_value(self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    #[test]
    fn defaults_and_hard_match_the_contract() {
        // Field by field (the names are the serialized ones), in declaration order.
        let values = |l: ArtifactLimits| -> Vec<(String, u64)> {
            let v = l.to_value();
            let o = v.as_object().unwrap();
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect()
        };
        let expect = |nums: [u64; 15]| -> Vec<(String, u64)> {
            let names = [
                "artifactsPerThread",
                "revisionsPerArtifact",
                "recordBytes",
                "previewBytes",
                "citations",
                "citationBytes",
                "mimeBytes",
                "hashBytes",
                "uriBytes",
                "noteBytes",
                "titleBytes",
                "listPageLimit",
                "deliveryLinkTtlSeconds",
                "deliveryLinkTokenBytes",
                "maxRequestBytes",
            ];
            names.iter().map(|n| n.to_string()).zip(nums).collect()
        };
        assert_eq!(
            values(ArtifactLimits::defaults()),
            expect([
                64, 32, 8192, 16384, 32, 2048, 128, 256, 2048, 1024, 256, 50, 300, 4096, 65536
            ])
        );
        assert_eq!(
            values(ArtifactLimits::hard()),
            expect([
                256, 128, 65536, 65536, 128, 8192, 512, 1024, 8192, 8192, 2048, 200, 86_400, 16384,
                1_048_576
            ])
        );
    }

    #[test]
    fn every_limit_accepts_1_and_hard_and_refuses_outside() {
        for crate::util::caps::Cap { name, hard, .. } in SPEC {
            let ok = ArtifactLimits::resolve(Some(&json!({ name: hard }))).unwrap();
            assert_eq!(ok.to_value()[name], json!(hard));
            assert!(ArtifactLimits::resolve(Some(&json!({ name: 1 }))).is_ok());
            for bad in [json!(0), json!(hard + 1), json!(-1), json!(1.5)] {
                let e = ArtifactLimits::resolve(Some(&json!({ name: bad }))).unwrap_err();
                assert_eq!(e.kind, ErrorKind::Range, "{name} {bad}");
            }
            let e = ArtifactLimits::resolve(Some(&json!({ name: "5" }))).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Type);
        }
        let e = ArtifactLimits::resolve(Some(&json!({ "nope": 1 }))).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Type);
        assert_eq!(
            ArtifactLimits::resolve(None).unwrap(),
            ArtifactLimits::defaults()
        );
    }
}
