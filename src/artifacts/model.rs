//! The persisted shapes. Optional fields are absent (never `null`) when serialised.

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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// A string or a number (the host's revision identifier).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrieved_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// A host judge's score in `0..=1`: stored, never proof, never read by integrity checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support: Option<f64>,
}

/// Producer-run attribution of a revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Producer {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// `ArtifactRevision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Revision {
    pub version: u64,
    pub uri: String,
    pub mime: String,
    pub hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citations: Option<Vec<Citation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer: Option<Producer>,
    /// Actor ref (`kind:id`) of the verified identity that created the revision.
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `citationBindingDigest(revision.citations ?? [])`, stamped on approve.
    #[serde(skip_serializing_if = "Option::is_none")]
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

/// `ArtifactRecord`: the checkpoint value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub id: String,
    pub thread_id: String,
    pub ownership: Ownership,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Review state of the latest revision.
    pub state: ReviewState,
    pub latest_version: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_validated_version: Option<u64>,
    pub revisions: Vec<Revision>,
    /// At most one decision per revision, ordered by version.
    pub approvals: Vec<Approval>,
    pub created_at: String,
    pub updated_at: String,
}

impl Record {
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
}
