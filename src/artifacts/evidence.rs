//! Citation evidence: the binding digest approve stamps, the check that a stored approval
//! still binds its revision's citations, and the integrity check of citations against the
//! host's already-retrieved source snapshots. Nothing here fetches a URL; `support` is
//! never read.

use super::input::{self, MAX_SNAPSHOTS};
use super::invalid;
use super::limits::ArtifactLimits;
use super::model::{Citation, Decision, Record};
use crate::error::Result;
use crate::json::{canonical_digest, type_name, Fields};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Hex SHA-256 of the JCS of the identity tuples `{ uri, sourceId, revision, contentHash,
/// span, tenantId }` (absent members omitted), in citation order.
pub fn binding_digest(citations: &[Citation]) -> String {
    // Most revisions cite nothing: that digest is computed once.
    static EMPTY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if citations.is_empty() {
        return EMPTY
            .get_or_init(|| canonical_digest(&Value::Array(Vec::new())))
            .clone();
    }
    let tuples: Vec<Value> = citations
        .iter()
        .map(|c| {
            let mut m = Map::new();
            m.insert("uri".into(), Value::String(c.uri.clone()));
            if let Some(v) = &c.source_id {
                m.insert("sourceId".into(), Value::String(v.clone()));
            }
            if let Some(v) = &c.revision {
                m.insert("revision".into(), v.clone());
            }
            if let Some(v) = &c.content_hash {
                m.insert("contentHash".into(), Value::String(v.clone()));
            }
            if let Some(s) = &c.span {
                m.insert("span".into(), json!({ "start": s.start, "end": s.end }));
            }
            if let Some(v) = &c.tenant_id {
                m.insert("tenantId".into(), Value::String(v.clone()));
            }
            Value::Object(m)
        })
        .collect();
    canonical_digest(&Value::Array(tuples))
}

/// Parse a caller's citation array for the pure functions (hard caps).
pub fn parse_citations(value: &Value, path: &str) -> Result<Vec<Citation>> {
    let hard = ArtifactLimits::hard();
    input::check_shape(value, path)?;
    let Value::Array(items) = value else {
        return Err(invalid(format!(
            "{path} must be an array, got {}",
            type_name(value)
        )));
    };
    if items.len() as u64 > hard.citations {
        return Err(super::err(
            crate::error::ArtifactReason::TooManyCitations,
            format!(
                "{path} has {} entries; the cap is {}",
                items.len(),
                hard.citations
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| input::citation(v, &format!("{path}[{i}]"), &hard))
        .collect()
}

/// Parse a caller's record (`ArtifactRecord`) for the pure functions.
pub fn parse_record(value: &Value) -> Result<Record> {
    // A stored preview sits a few levels below the record root.
    input::check_shape_within(value, "record", input::MAX_INPUT_DEPTH + 8)?;
    input::object(value, "record")?;
    Record::from_stored(value.clone())
        .map_err(|e| invalid(format!("record is not an ArtifactRecord: {e}")))
}

/// `approvalEvidenceIntact(record, version = record.lastValidatedVersion)`.
pub fn approval_intact(record: &Record, version: Option<u64>) -> bool {
    let Some(version) = version.or(record.last_validated_version) else {
        return false;
    };
    let Some(approval) = record.decision(version) else {
        return false;
    };
    if approval.state != Decision::Approved {
        return false;
    }
    let (Some(stamped), Some(rev)) = (&approval.evidence_digest, record.revision(version)) else {
        return false;
    };
    let now = binding_digest(rev.citations.as_deref().unwrap_or(&[]));
    // Both are public digests of public data: a plain comparison leaks nothing.
    *stamped == now
}

/// One host snapshot of a cited source.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    source_id: String,
    revision: Option<Value>,
    content_hash: Option<String>,
    length: Option<u64>,
    tenant_id: Option<String>,
    readable: Option<bool>,
}

fn parse_snapshot(value: &Value, path: &str) -> Result<Snapshot> {
    let f = Fields::new(value, path.to_string(), invalid)?;
    input::only(
        &f,
        &[
            "sourceId",
            "revision",
            "contentHash",
            "length",
            "tenantId",
            "readable",
        ],
    )?;
    let revision = match f.get("revision") {
        None => None,
        Some(v @ Value::String(_)) => Some(v.clone()),
        Some(v @ Value::Number(_)) if crate::json::as_i64(v).is_some() => Some(v.clone()),
        Some(_) => return Err(f.fail("revision", "must be a string or an integer")),
    };
    Ok(Snapshot {
        source_id: f.str("sourceId")?.to_string(),
        revision,
        content_hash: f.opt_str("contentHash")?.map(str::to_string),
        length: f.opt_u64("length")?,
        tenant_id: f.opt_str("tenantId")?.map(str::to_string),
        readable: f.opt_bool("readable")?,
    })
}

/// One citation's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IntegrityResult {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    pub ok: bool,
    pub reasons: Vec<&'static str>,
}

/// The verdict over all citations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntegrityReport {
    pub ok: bool,
    pub results: Vec<IntegrityResult>,
}

/// `checkCitationIntegrity({ citations, snapshots, tenantId? })`.
///
/// A citation without a `sourceId`, or whose source has no snapshot, is `missing`. A pinned
/// `contentHash`/`revision` the snapshot does not confirm (different or absent) is a
/// mismatch; a `span` past the snapshot's `length` (or with no `length` to check against)
/// is `span_out_of_range`; `readable: false` is `acl_denied`; a citation or snapshot tenant
/// different from each other or from the expected `tenantId` is `tenant_mismatch`.
pub fn check_integrity(value: &Value) -> Result<IntegrityReport> {
    let f = input::request(value, &["citations", "snapshots", "tenantId"], &[])?;
    let citations = parse_citations(
        f.get("citations").unwrap_or(&Value::Null),
        "input.citations",
    )?;
    let snaps = f
        .opt_array("snapshots")?
        .ok_or_else(|| f.fail("snapshots", "is required (an array)"))?;
    if snaps.len() > MAX_SNAPSHOTS {
        return Err(f.fail(
            "snapshots",
            &format!("has more than {MAX_SNAPSHOTS} entries"),
        ));
    }
    let snaps = snaps
        .iter()
        .enumerate()
        .map(|(i, s)| parse_snapshot(s, &format!("input.snapshots[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    let tenant = f.opt_str("tenantId")?;
    let results: Vec<IntegrityResult> = citations
        .iter()
        .enumerate()
        .map(|(index, c)| {
            let mut reasons = Vec::new();
            let snap = c
                .source_id
                .as_ref()
                .and_then(|id| snaps.iter().find(|s| &s.source_id == id));
            match snap {
                None => reasons.push("missing"),
                Some(s) => {
                    if c.content_hash.is_some() && c.content_hash != s.content_hash {
                        reasons.push("hash_mismatch");
                    }
                    if c.revision.is_some() && c.revision != s.revision {
                        reasons.push("revision_mismatch");
                    }
                    if let Some(span) = &c.span {
                        if s.length.is_none_or(|len| span.end > len || span.start > span.end) {
                            reasons.push("span_out_of_range");
                        }
                    }
                    if s.readable == Some(false) {
                        reasons.push("acl_denied");
                    }
                    let differs = |a: Option<&str>, b: Option<&str>| matches!((a, b), (Some(x), Some(y)) if x != y);
                    let ct = c.tenant_id.as_deref();
                    let st = s.tenant_id.as_deref();
                    if differs(ct, st) || differs(tenant, ct) || differs(tenant, st) {
                        reasons.push("tenant_mismatch");
                    }
                }
            }
            IntegrityResult {
                index,
                source_id: c.source_id.clone(),
                ok: reasons.is_empty(),
                reasons,
            }
        })
        .collect();
    Ok(IntegrityReport {
        ok: results.iter().all(|r| r.ok),
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cites(v: Value) -> Vec<Citation> {
        parse_citations(&v, "c").unwrap()
    }

    #[test]
    fn digest_is_jcs_of_identity_tuples_in_order() {
        let c = cites(json!([
            { "uri": "https://a/1", "sourceId": "s1", "revision": 3, "contentHash": "sha256:x",
              "span": { "start": 1, "end": 4 }, "tenantId": "t1", "title": "ignored", "excerpt": "ignored", "support": 0.9 },
            { "uri": "https://b/2" }
        ]));
        let expected = crate::json::sha256_hex(
            br#"[{"contentHash":"sha256:x","revision":3,"sourceId":"s1","span":{"end":4,"start":1},"tenantId":"t1","uri":"https://a/1"},{"uri":"https://b/2"}]"#,
        );
        assert_eq!(binding_digest(&c), expected);
        assert_eq!(binding_digest(&[]), crate::json::sha256_hex(b"[]"));
        let mut swapped = c.clone();
        swapped.reverse();
        assert_ne!(binding_digest(&swapped), expected);
        let mut judged = c.clone();
        judged[0].support = Some(0.1);
        judged[0].excerpt = Some("other".into());
        assert_eq!(
            binding_digest(&judged),
            expected,
            "support/excerpt are not identity"
        );
    }

    #[test]
    fn integrity_reasons() {
        let report = check_integrity(&json!({
            "tenantId": "t1",
            "citations": [
                { "uri": "https://a", "sourceId": "ok", "contentHash": "h", "revision": "r1", "span": {"start": 0, "end": 5}, "tenantId": "t1", "support": 0 },
                { "uri": "https://a", "sourceId": "gone" },
                { "uri": "https://a" },
                { "uri": "https://a", "sourceId": "changed", "contentHash": "h", "revision": "r1" },
                { "uri": "https://a", "sourceId": "short", "span": {"start": 0, "end": 50} },
                { "uri": "https://a", "sourceId": "nolen", "span": {"start": 0, "end": 1} },
                { "uri": "https://a", "sourceId": "acl" },
                { "uri": "https://a", "sourceId": "other-tenant" },
                { "uri": "https://a", "sourceId": "unpinned", "contentHash": "h" }
            ],
            "snapshots": [
                { "sourceId": "ok", "contentHash": "h", "revision": "r1", "length": 5, "tenantId": "t1", "readable": true },
                { "sourceId": "changed", "contentHash": "h2", "revision": "r2" },
                { "sourceId": "short", "length": 10 },
                { "sourceId": "nolen" },
                { "sourceId": "acl", "readable": false },
                { "sourceId": "other-tenant", "tenantId": "t2" },
                { "sourceId": "unpinned" }
            ]
        }))
        .unwrap();
        let reasons: Vec<Vec<&str>> = report.results.iter().map(|r| r.reasons.clone()).collect();
        assert_eq!(
            reasons,
            vec![
                vec![],
                vec!["missing"],
                vec!["missing"],
                vec!["hash_mismatch", "revision_mismatch"],
                vec!["span_out_of_range"],
                vec!["span_out_of_range"],
                vec!["acl_denied"],
                vec!["tenant_mismatch"],
                vec!["hash_mismatch"],
            ]
        );
        assert!(!report.ok);
        assert!(report.results[0].ok);
        let clean = check_integrity(&json!({ "citations": [], "snapshots": [] })).unwrap();
        assert!(clean.ok);
    }
}
