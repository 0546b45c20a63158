//! The persisted shapes: `@arnilo/prism`'s `ArtifactRecord` (ownership flat on the
//! record), `ArtifactRevision` (`changeNote`, `producerRunId`, `size`),
//! `ArtifactApproval` and `ArtifactCitation`, with our additions (`state`,
//! `latestVersion`, `kind`, revision `title`/`createdBy`, citation evidence fields,
//! `evidenceDigest`). Optional fields are absent (never `null`) when serialised.
//!
//! Reading is lenient ([`Record::from_stored`]): a record the reference's service wrote
//! (no `state`, `latestVersion` or `evidenceDigest`, citations `{ uri, title?, kind? }`)
//! and a record of prism-review 0.1 (nested `ownership`, revision `note`, nested
//! `producer`) both load; `state` and `latestVersion` are always derived from the
//! revisions and approvals, never trusted from storage.

use crate::json::{push_json_opt_member, push_json_opt_u64, push_json_str, push_json_u64};
use crate::store::Ownership;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A citation's span in the cited source (`start..end`, source units chosen by the host).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start: u64,
    pub end: u64,
}

/// `ArtifactCitation`: a source reference with optional evidence fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// A string or a number (the host's revision identifier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieved_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// A host judge's score in `0..=1`: stored, never proof, never read by integrity checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support: Option<f64>,
}

/// `ArtifactRevision`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub version: u64,
    pub uri: String,
    pub mime: String,
    pub hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citations: Option<Vec<Citation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Value>,
    /// Our addition: the revision's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Our addition: actor ref (`kind:id`) of the verified identity that created it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    pub created_at: String,
}

/// Review decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approved,
    Rejected,
}

/// `ArtifactApproval`: the one decision on one revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub version: u64,
    pub state: Decision,
    pub reviewer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Our addition: `citationBindingDigest(revision.citations ?? [])`, stamped on approve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_digest: Option<String>,
    pub decided_at: String,
}

/// Review state of the latest revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewState {
    Pending,
    Approved,
    Rejected,
}

impl ReviewState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Pending => "pending",
            ReviewState::Approved => "approved",
            ReviewState::Rejected => "rejected",
        }
    }
}

/// `ArtifactRecord`: the checkpoint value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub id: String,
    pub thread_id: String,
    #[serde(flatten)]
    pub owner: Ownership,
    /// Our addition: the artifact kind given on attach.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Our addition: review state of the latest revision.
    pub state: ReviewState,
    /// Our addition: the latest revision number.
    pub latest_version: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_validated_version: Option<u64>,
    pub revisions: Vec<Revision>,
    /// At most one decision per revision, ordered by version.
    pub approvals: Vec<Approval>,
    pub created_at: String,
    pub updated_at: String,
}

/// A revision as stored by any writer (see the module notes).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredRevision {
    version: u64,
    uri: String,
    mime: String,
    hash: String,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default, alias = "note")]
    change_note: Option<String>,
    #[serde(default)]
    producer_run_id: Option<String>,
    /// prism-review 0.1: `{ runId?, agentId?, toolCallId? }`.
    #[serde(default)]
    producer: Option<StoredProducer>,
    #[serde(default)]
    citations: Option<Vec<Citation>>,
    #[serde(default)]
    preview: Option<Value>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    created_by: Option<String>,
    created_at: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredProducer {
    #[serde(default)]
    run_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredRecord {
    id: String,
    thread_id: String,
    #[serde(default)]
    tenant_id: Option<String>,
    #[serde(default)]
    account_id: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    /// prism-review 0.1 nested the owner.
    #[serde(default)]
    ownership: Option<Ownership>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    last_validated_version: Option<u64>,
    revisions: Vec<StoredRevision>,
    #[serde(default)]
    approvals: Vec<Approval>,
    created_at: String,
    updated_at: String,
}

impl From<StoredRevision> for Revision {
    fn from(r: StoredRevision) -> Self {
        Revision {
            version: r.version,
            uri: r.uri,
            mime: r.mime,
            hash: r.hash,
            size: r.size,
            change_note: r.change_note,
            producer_run_id: r.producer_run_id.or(r.producer.and_then(|p| p.run_id)),
            citations: r.citations,
            preview: r.preview,
            title: r.title,
            created_by: r.created_by,
            created_at: r.created_at,
        }
    }
}

impl Record {
    /// Read a stored record written by us (any version) or by the reference's service.
    pub fn from_stored(value: Value) -> std::result::Result<Self, serde_json::Error> {
        Ok(Self::from_parts(serde_json::from_value(value)?))
    }

    /// [`Self::from_stored`] of the value whose JSON text this is, read without building
    /// the value; a malformed record fails with the error `from_stored` gives.
    pub fn from_stored_text(text: &str) -> std::result::Result<Self, serde_json::Error> {
        match serde_json::from_str(text) {
            Ok(s) => Ok(Self::from_parts(s)),
            Err(_) => Self::from_stored(serde_json::from_str(text)?),
        }
    }

    fn from_parts(s: StoredRecord) -> Self {
        let flat = Ownership {
            tenant_id: s.tenant_id,
            account_id: s.account_id,
            user_id: s.user_id,
        };
        let owner = match s.ownership {
            Some(nested) if flat.is_unowned() => nested,
            _ => flat,
        };
        let mut rec = Record {
            id: s.id,
            thread_id: s.thread_id,
            owner,
            kind: s.kind,
            title: s.title,
            state: ReviewState::Pending,
            latest_version: 0,
            last_validated_version: s.last_validated_version,
            revisions: s.revisions.into_iter().map(Revision::from).collect(),
            approvals: s.approvals,
            created_at: s.created_at,
            updated_at: s.updated_at,
        };
        rec.latest_version = rec.revisions.last().map_or(0, |r| r.version);
        rec.refresh_state();
        rec
    }

    pub fn revision(&self, version: u64) -> Option<&Revision> {
        self.revisions.iter().find(|r| r.version == version)
    }

    pub fn latest(&self) -> Option<&Revision> {
        self.revision(self.latest_version)
    }

    pub fn decision(&self, version: u64) -> Option<&Approval> {
        self.approvals.iter().find(|a| a.version == version)
    }

    /// Recompute `state` from the decision on the latest revision.
    pub fn refresh_state(&mut self) {
        self.state = match self.decision(self.latest_version).map(|a| a.state) {
            Some(Decision::Approved) => ReviewState::Approved,
            Some(Decision::Rejected) => ReviewState::Rejected,
            None => ReviewState::Pending,
        };
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// [`Self::write_text`] into a string of its own (the tests' form; the service writes
    /// records into its answer's buffer).
    #[cfg(test)]
    pub fn to_text(&self) -> String {
        let mut out = String::with_capacity(self.text_capacity());
        self.write_text(&mut out);
        out
    }

    /// Room for the record's text without growing (an estimate: about 600 bytes a record
    /// of one revision and one decision writes, more with either).
    pub fn text_capacity(&self) -> usize {
        512 + 320 * (self.revisions.len() + self.approvals.len())
    }

    /// Append the JSON text of [`Self::to_value`]: exactly what serde writes for the
    /// record (members in declaration order, absent options left out), written member by
    /// member without serde's per-member work (issue 13: the size check, the store and the
    /// answer of every change share this text). Citations and previews, rare and nested,
    /// are written by serde.
    pub fn write_text(&self, out: &mut String) {
        out.push_str("{\"id\":");
        push_json_str(out, &self.id);
        out.push_str(",\"threadId\":");
        push_json_str(out, &self.thread_id);
        for (name, member) in self.owner.members() {
            push_json_opt_member(out, name, member);
        }
        push_json_opt_member(out, "kind", self.kind.as_deref());
        push_json_opt_member(out, "title", self.title.as_deref());
        out.push_str(",\"state\":\"");
        out.push_str(self.state.as_str());
        out.push_str("\",\"latestVersion\":");
        push_json_u64(out, self.latest_version);
        push_json_opt_u64(out, "lastValidatedVersion", self.last_validated_version);
        out.push_str(",\"revisions\":[");
        for (i, r) in self.revisions.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            r.write_text(out);
        }
        out.push_str("],\"approvals\":[");
        for (i, a) in self.approvals.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            a.write_text(out);
        }
        out.push_str("],\"createdAt\":");
        push_json_str(out, &self.created_at);
        out.push_str(",\"updatedAt\":");
        push_json_str(out, &self.updated_at);
        out.push('}');
    }
}

/// `,"name":<serde's text of value>` when present.
fn opt_serde<T: Serialize>(out: &mut String, name: &str, value: Option<&T>) {
    if let Some(v) = value {
        out.push_str(",\"");
        out.push_str(name);
        out.push_str("\":");
        // Citations and JSON values always serialize.
        out.push_str(&serde_json::to_string(v).unwrap_or_default());
    }
}

impl Revision {
    /// See [`Record::write_text`].
    fn write_text(&self, out: &mut String) {
        out.push_str("{\"version\":");
        push_json_u64(out, self.version);
        out.push_str(",\"uri\":");
        push_json_str(out, &self.uri);
        out.push_str(",\"mime\":");
        push_json_str(out, &self.mime);
        out.push_str(",\"hash\":");
        push_json_str(out, &self.hash);
        push_json_opt_u64(out, "size", self.size);
        push_json_opt_member(out, "changeNote", self.change_note.as_deref());
        push_json_opt_member(out, "producerRunId", self.producer_run_id.as_deref());
        opt_serde(out, "citations", self.citations.as_ref());
        opt_serde(out, "preview", self.preview.as_ref());
        push_json_opt_member(out, "title", self.title.as_deref());
        push_json_opt_member(out, "createdBy", self.created_by.as_deref());
        out.push_str(",\"createdAt\":");
        push_json_str(out, &self.created_at);
        out.push('}');
    }
}

impl Approval {
    /// See [`Record::write_text`].
    fn write_text(&self, out: &mut String) {
        out.push_str("{\"version\":");
        push_json_u64(out, self.version);
        out.push_str(match self.state {
            Decision::Approved => ",\"state\":\"approved\"",
            Decision::Rejected => ",\"state\":\"rejected\"",
        });
        out.push_str(",\"reviewer\":");
        push_json_str(out, &self.reviewer);
        push_json_opt_member(out, "note", self.note.as_deref());
        push_json_opt_member(out, "evidenceDigest", self.evidence_digest.as_deref());
        out.push_str(",\"decidedAt\":");
        push_json_str(out, &self.decided_at);
        out.push('}');
    }
}

/// `artifactApprovalState(record)`: the decision on the last revision of `revisions`
/// (its first entry in `approvals`), else `pending`. Reads nothing else of the record,
/// as the reference's function.
pub fn approval_state_of(revisions: &[Value], approvals: &[Value]) -> ReviewState {
    let Some(latest) = revisions.last().and_then(|r| r.get("version")) else {
        return ReviewState::Pending;
    };
    let decision = approvals
        .iter()
        .find(|a| a.get("version") == Some(latest))
        .and_then(|a| a.get("state"))
        .and_then(Value::as_str);
    match decision {
        Some("approved") => ReviewState::Approved,
        Some("rejected") => ReviewState::Rejected,
        _ => ReviewState::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Exactly what `@arnilo/prism-server`'s service stores after attach, revise, approve.
    fn reference_record() -> Value {
        json!({
            "id": "art_1", "threadId": "thread-1", "tenantId": "tenant-1", "userId": "user-1",
            "title": "Doc",
            "revisions": [
                { "version": 1, "uri": "https://blob.example/doc-v1", "mime": "text/markdown", "hash": "sha256:aaa",
                  "size": 1234, "changeNote": "first", "producerRunId": "run:1",
                  "citations": [{ "uri": "https://wiki.example/p", "title": "P", "kind": "web" }],
                  "createdAt": "2026-01-01T00:00:00.000Z" },
                { "version": 2, "uri": "https://blob.example/doc-v2", "mime": "text/markdown", "hash": "sha256:bbb",
                  "createdAt": "2026-01-02T00:00:00.000Z" }
            ],
            "approvals": [{ "version": 1, "state": "approved", "reviewer": "user:user-1", "decidedAt": "2026-01-01T01:00:00.000Z" }],
            "lastValidatedVersion": 1,
            "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-02T00:00:00.000Z"
        })
    }

    #[test]
    fn a_reference_record_loads_and_writes_back_with_our_additions() {
        let rec = Record::from_stored(reference_record()).unwrap();
        assert_eq!(rec.owner.tenant_id.as_deref(), Some("tenant-1"));
        assert_eq!((rec.latest_version, rec.state), (2, ReviewState::Pending));
        assert_eq!(rec.revisions[0].change_note.as_deref(), Some("first"));
        assert_eq!(rec.revisions[0].producer_run_id.as_deref(), Some("run:1"));
        assert_eq!(
            rec.revisions[0].citations.as_ref().unwrap()[0]
                .kind
                .as_deref(),
            Some("web")
        );
        let out = rec.to_value();
        assert_eq!(out["tenantId"], "tenant-1");
        assert_eq!(
            (out["state"].clone(), out["latestVersion"].clone()),
            (json!("pending"), json!(2))
        );
        assert!(out.get("ownership").is_none());
        // Everything the reference wrote survives the round trip.
        let mut back = out.clone();
        for k in ["state", "latestVersion"] {
            back.as_object_mut().unwrap().remove(k);
        }
        assert_eq!(back, reference_record());
    }

    mod written_text {
        use super::*;
        use proptest::prelude::*;

        /// Strings with what JSON escapes (quote, backslash, controls) and what it does
        /// not (DEL, U+2028, non-ASCII).
        fn text() -> impl Strategy<Value = String> {
            "[a-z\"\\\\\u{1}\u{1f}\u{7f}é\u{2028} ]{0,6}"
        }

        fn opt_text() -> impl Strategy<Value = Option<String>> {
            proptest::option::of(text())
        }

        prop_compose! {
            fn approval()(
                version in any::<u64>(), rejected in any::<bool>(), reviewer in text(),
                note in opt_text(), evidence_digest in opt_text(), decided_at in text(),
            ) -> Approval {
                let state = if rejected { Decision::Rejected } else { Decision::Approved };
                Approval { version, state, reviewer, note, evidence_digest, decided_at }
            }
        }

        prop_compose! {
            fn revision()(
                version in any::<u64>(), uri in text(), mime in text(), hash in text(),
                size in proptest::option::of(any::<u64>()), change_note in opt_text(),
                producer_run_id in opt_text(), cited in any::<bool>(), previewed in any::<bool>(),
                title in opt_text(), created_by in opt_text(), created_at in text(),
            ) -> Revision {
                let citation = Citation {
                    uri: uri.clone(), title: title.clone(), kind: None, source_id: None,
                    revision: Some(json!(7)), content_hash: Some(hash.clone()), retrieved_at: None,
                    excerpt: Some("é\n\"x\"".into()), span: Some(Span { start: 1, end: 2 }),
                    tenant_id: None, support: Some(0.25),
                };
                Revision {
                    version, uri, mime, hash, size, change_note, producer_run_id,
                    citations: cited.then(|| vec![citation.clone(), citation]),
                    preview: previewed.then(|| json!({ "z": [1, "é\u{1}"], "a": null })),
                    title, created_by, created_at,
                }
            }
        }

        prop_compose! {
            fn record()(
                id in text(), thread_id in text(), tenant_id in opt_text(), account_id in opt_text(),
                user_id in opt_text(), kind in opt_text(), title in opt_text(), state in 0..3u8,
                latest_version in any::<u64>(), last_validated_version in proptest::option::of(any::<u64>()),
                revisions in proptest::collection::vec(revision(), 0..3),
                approvals in proptest::collection::vec(approval(), 0..3),
                created_at in text(), updated_at in text(),
            ) -> Record {
                let state = [ReviewState::Pending, ReviewState::Approved, ReviewState::Rejected][state as usize];
                let owner = Ownership { tenant_id, account_id, user_id };
                Record {
                    id, thread_id, owner, kind, title, state, latest_version, last_validated_version,
                    revisions, approvals, created_at, updated_at,
                }
            }
        }

        proptest! {
            /// Issue 13: the record's text written member by member is serde's text of it.
            #[test]
            fn to_text_is_what_serde_writes(rec in record()) {
                prop_assert_eq!(rec.to_text(), serde_json::to_string(&rec).unwrap());
            }
        }
    }

    /// Issue 13: records read from text and written as text are the records read from and
    /// written as values; a malformed record fails with the same message either way.
    #[test]
    fn records_read_and_written_as_text_are_the_value_records() {
        let stored = reference_record();
        let rec = Record::from_stored(stored.clone()).unwrap();
        assert_eq!(Record::from_stored_text(&stored.to_string()).unwrap(), rec);
        assert_eq!(rec.to_text(), rec.to_value().to_string());
        // Duplicate members: the value keeps the last, and so does the text reader.
        let dup = r#"{"id":"x","id":"art_1","threadId":"t","revisions":[],"createdAt":"c","updatedAt":"c"}"#;
        assert_eq!(Record::from_stored_text(dup).unwrap().id, "art_1");
        let bad = r#"{"id":"a","threadId":"t","revisions":"no","createdAt":"c","updatedAt":"c"}"#;
        assert_eq!(
            Record::from_stored_text(bad).unwrap_err().to_string(),
            Record::from_stored(serde_json::from_str(bad).unwrap())
                .unwrap_err()
                .to_string()
        );
    }

    #[test]
    fn a_record_of_prism_review_0_1_loads() {
        let old = json!({
            "id": "a", "threadId": "t", "ownership": { "tenantId": "t1", "userId": "u1" }, "state": "approved",
            "latestVersion": 9, "kind": "report",
            "revisions": [{ "version": 1, "uri": "https://x", "mime": "m", "hash": "h", "note": "n",
                            "producer": { "runId": "r1", "agentId": "ag" }, "createdAt": "c" }],
            "approvals": [], "createdAt": "c", "updatedAt": "c"
        });
        let rec = Record::from_stored(old).unwrap();
        assert_eq!(rec.owner.user_id.as_deref(), Some("u1"));
        assert_eq!(
            (rec.latest_version, rec.state),
            (1, ReviewState::Pending),
            "derived, not trusted"
        );
        assert_eq!(rec.revisions[0].change_note.as_deref(), Some("n"));
        assert_eq!(rec.revisions[0].producer_run_id.as_deref(), Some("r1"));
        assert_eq!(rec.kind.as_deref(), Some("report"));
    }

    #[test]
    fn approval_state_reads_only_revisions_and_approvals() {
        let revs = |vs: &[u64]| {
            vs.iter()
                .map(|v| json!({ "version": v }))
                .collect::<Vec<_>>()
        };
        let dec = |v: u64, s: &str| json!({ "version": v, "state": s });
        assert_eq!(approval_state_of(&[], &[]), ReviewState::Pending);
        assert_eq!(
            approval_state_of(&revs(&[1]), &[dec(1, "approved")]),
            ReviewState::Approved
        );
        assert_eq!(
            approval_state_of(&revs(&[1]), &[dec(1, "rejected")]),
            ReviewState::Rejected
        );
        assert_eq!(
            approval_state_of(&revs(&[1, 2]), &[dec(1, "approved")]),
            ReviewState::Pending
        );
        assert_eq!(
            approval_state_of(&revs(&[1]), &[dec(1, "rejected"), dec(1, "approved")]),
            ReviewState::Rejected,
            "the first decision on the latest revision"
        );
    }
}
