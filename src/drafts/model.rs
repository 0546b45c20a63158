//! The persisted draft record (`WorkDraft`), its revisions and decisions, and the status
//! rules. Optional fields are absent (never `null`) when serialised. `version` is the
//! checkpoint version (the CAS counter `expectedVersion` names), distinct from revision
//! numbers; it is written into the value on save and always taken from the checkpoint
//! on load.

use super::recipients::ScopeRule;
use crate::store::Ownership;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `WorkDraftStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Approved,
    Denied,
    Executing,
    Executed,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Denied => "denied",
            Status::Executing => "executing",
            Status::Executed => "executed",
            Status::Failed => "failed",
        }
    }

    /// Claimed or finished: no decision or claim applies any more.
    pub fn is_closed(self) -> bool {
        matches!(self, Status::Executing | Status::Executed | Status::Failed)
    }
}

/// A reviewer's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approve,
    Deny,
}

/// `WorkDraftRevision`: one payload, as stored (redacted) and as it executes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub revision: u64,
    pub payload: Value,
    pub payload_digest: String,
    /// Actor ref (`kind:id`) of whoever wrote it: the creating identity or the editing
    /// reviewer; absent when no identity and no explicit author was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    pub created_at: String,
}

/// `WorkDraftApproval`: one decision bound to one revision's digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub revision: u64,
    pub payload_digest: String,
    pub decision: Decision,
    pub reviewer: String,
    pub decided_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Set when a later revision (an edit) or a later decision on the same revision
    /// replaced it: it no longer lets anything execute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalidated_at: Option<String>,
}

impl Approval {
    pub fn is_live(&self) -> bool {
        self.invalidated_at.is_none()
    }
}

/// `WorkDraftExecution`: the claim and, once closed, its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    pub revision: u64,
    pub payload_digest: String,
    pub claimed_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `WorkDraft`: the checkpoint value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    pub id: String,
    pub thread_id: String,
    #[serde(flatten)]
    pub owner: Ownership,
    pub provider: String,
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<ScopeRule>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    pub status: Status,
    /// The checkpoint version (CAS counter).
    #[serde(default)]
    pub version: u64,
    pub latest_revision: u64,
    pub revisions: Vec<Revision>,
    pub approvals: Vec<Approval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Execution>,
    pub created_at: String,
    pub updated_at: String,
}

impl Draft {
    /// Read a stored value; `latestRevision` is derived from the revisions.
    pub fn from_stored(value: Value, version: u64) -> Result<Self, serde_json::Error> {
        let mut d: Draft = serde_json::from_value(value)?;
        d.version = version;
        d.latest_revision = d.revisions.iter().map(|r| r.revision).max().unwrap_or(0);
        Ok(d)
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    pub fn latest(&self) -> Option<&Revision> {
        self.revisions
            .iter()
            .find(|r| r.revision == self.latest_revision)
    }

    /// The live decision on the latest revision, if any.
    pub fn live_decision(&self) -> Option<&Approval> {
        self.approvals
            .iter()
            .rev()
            .find(|a| a.revision == self.latest_revision && a.is_live())
    }

    /// Mark live decisions invalidated: those on revisions before `revision`, or, with
    /// `same`, those on `revision` itself too.
    pub fn invalidate(&mut self, revision: u64, same: bool, now: &str) {
        for a in &mut self.approvals {
            if a.is_live() && (a.revision < revision || (same && a.revision == revision)) {
                a.invalidated_at = Some(now.to_string());
            }
        }
    }

    /// The status decisions imply (claimed and finished drafts keep theirs).
    pub fn refresh_status(&mut self) {
        if self.status.is_closed() {
            return;
        }
        self.status = match self.live_decision().map(|a| a.decision) {
            Some(Decision::Approve) => Status::Approved,
            Some(Decision::Deny) => Status::Denied,
            None => Status::Pending,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_without_nulls_and_derives_the_latest_revision() {
        let stored = json!({
            "id": "d", "threadId": "t", "userId": "u", "provider": "mail", "op": "send",
            "status": "approved", "version": 9, "latestRevision": 7,
            "revisions": [
                { "revision": 1, "payload": { "a": 1 }, "payloadDigest": "x", "createdAt": "c" },
                { "revision": 2, "payload": { "a": 2 }, "payloadDigest": "y", "author": "user:r", "createdAt": "c" }
            ],
            "approvals": [{ "revision": 2, "payloadDigest": "y", "decision": "approve", "reviewer": "user:r", "decidedAt": "c" }],
            "createdAt": "c", "updatedAt": "c"
        });
        let d = Draft::from_stored(stored, 3).unwrap();
        assert_eq!((d.version, d.latest_revision), (3, 2));
        assert_eq!(
            d.live_decision().map(|a| a.decision),
            Some(Decision::Approve)
        );
        let text = d.to_value().to_string();
        assert!(!text.contains("null"));
        assert!(text.contains(r#""userId":"u""#));
    }
}
