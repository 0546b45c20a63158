//! One error type for the whole core. Every failure the package reports is a
//! [`PrismError`]: an [`ErrorKind`] naming the JavaScript class and code it becomes,
//! and a human-readable message. The binding layer turns it into the JS error class
//! with one function, so every error looks the same.

use std::fmt;

/// Which JavaScript error a core error becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `ArtifactError` with `code: "ERR_PRISM_ARTIFACT"` and this `reason`.
    Artifact(ArtifactReason),
    /// `CheckpointConflictError` (`ERR_PRISM_CHECKPOINT_CONFLICT`).
    CheckpointConflict,
    /// `CodingPatchReviewError` with `ERR_PRISM_REVIEW_<code>`.
    Review(ReviewCode),
    /// `LanguageIntelligenceError` with `ERR_PRISM_LSP_<code>`.
    Lsp(LspCode),
    /// `ArtifactBodyStoreError` with `ERR_PRISM_ARTIFACT_BODY_<code>`.
    Body(BodyCode),
    /// `WorkDraftError` with `code: "ERR_PRISM_WORK_DRAFT"` and this `reason`.
    WorkDraft(WorkDraftReason),
    /// `S3ArtifactBodyError` with `ERR_PRISM_S3_<code>` and `reason` `<code>`.
    S3(S3Code),
    /// A JavaScript `RangeError` (a limit outside `1..hard`).
    Range,
    /// A JavaScript `TypeError` (an argument of the wrong type where no domain error fits).
    Type,
    /// A bug: a panic or an invariant that cannot hold. `ERR_PRISM_INTERNAL`.
    Internal,
    /// The store's backend failed (a dropped or refused database connection, a disk
    /// full, a lock held past the busy timeout): not the caller's fault, retryable.
    /// `ERR_PRISM_STORE_UNAVAILABLE`, an `Error`.
    StoreUnavailable,
}

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];
            /// The wire spelling.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

string_enum!(
    /// `ArtifactError.reason`.
    ArtifactReason {
        InvalidInput => "invalid_input",
        InvalidId => "invalid_id",
        Ownership => "ownership",
        NotFound => "not_found",
        NotValidated => "not_validated",
        Conflict => "conflict",
        TooManyArtifacts => "too_many_artifacts",
        TooManyRevisions => "too_many_revisions",
        TooManyCitations => "too_many_citations",
        RecordTooLarge => "record_too_large",
        PreviewTooLarge => "preview_too_large",
        CitationTooLarge => "citation_too_large",
        MimeTooLarge => "mime_too_large",
        HashTooLarge => "hash_too_large",
        UriTooLarge => "uri_too_large",
        NoteTooLarge => "note_too_large",
        TitleTooLarge => "title_too_large",
        UnsafeUri => "unsafe_uri",
        InvalidLink => "invalid_link",
        LinkExpired => "link_expired",
        LinkTooLarge => "link_too_large",
    }
);

string_enum!(
    /// Suffix of `CodingPatchReviewError.code` (`ERR_PRISM_REVIEW_<suffix>`).
    ReviewCode {
        Input => "INPUT",
        Limit => "LIMIT",
        Binding => "BINDING",
        State => "STATE",
        Ownership => "OWNERSHIP",
    }
);

string_enum!(
    /// Suffix of `LanguageIntelligenceError.code` (`ERR_PRISM_LSP_<suffix>`).
    LspCode {
        Framing => "FRAMING",
        Server => "SERVER",
        Timeout => "TIMEOUT",
        Limit => "LIMIT",
        Unsupported => "UNSUPPORTED",
        Workspace => "WORKSPACE",
    }
);

string_enum!(
    /// Suffix of `ArtifactBodyStoreError.code` (`ERR_PRISM_ARTIFACT_BODY_<suffix>`).
    BodyCode {
        Ownership => "OWNERSHIP",
        HashMismatch => "HASH_MISMATCH",
        SizeMismatch => "SIZE_MISMATCH",
        MimeMismatch => "MIME_MISMATCH",
        Held => "HELD",
        Store => "STORE",
    }
);

string_enum!(
    /// `WorkDraftError.reason`.
    WorkDraftReason {
        InvalidInput => "invalid_input",
        MalformedEdit => "malformed_edit",
        SchemaViolation => "schema_violation",
        RecipientEscalation => "recipient_escalation",
        ImmutableField => "immutable_field",
        NotFound => "not_found",
        Conflict => "conflict",
        NotApproved => "not_approved",
        AlreadyExecuted => "already_executed",
        TooManyRevisions => "too_many_revisions",
        PayloadTooLarge => "payload_too_large",
    }
);

string_enum!(
    /// Suffix of `S3ArtifactBodyError.code` (`ERR_PRISM_S3_<suffix>`), also its `reason`.
    S3Code {
        Presign => "PRESIGN",
        Upload => "UPLOAD",
        Download => "DOWNLOAD",
        Delete => "DELETE",
        Credentials => "CREDENTIALS",
    }
);

/// The single error type of the core.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PrismError {
    pub kind: ErrorKind,
    pub message: String,
}

impl PrismError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
    pub fn artifact(reason: ArtifactReason, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Artifact(reason), message)
    }
    pub fn review(code: ReviewCode, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Review(code), message)
    }
    pub fn lsp(code: LspCode, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Lsp(code), message)
    }
    pub fn body(code: BodyCode, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Body(code), message)
    }
    pub fn work_draft(reason: WorkDraftReason, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::WorkDraft(reason), message)
    }
    pub fn s3(code: S3Code, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::S3(code), message)
    }
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::CheckpointConflict, message)
    }
    pub fn range(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Range, message)
    }
    pub fn type_error(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Type, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    pub fn store_unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::StoreUnavailable, message)
    }

    /// The JavaScript class name this error becomes.
    pub fn class_name(&self) -> &'static str {
        match self.kind {
            ErrorKind::Artifact(_) => "ArtifactError",
            ErrorKind::CheckpointConflict => "CheckpointConflictError",
            ErrorKind::Review(_) => "CodingPatchReviewError",
            ErrorKind::Lsp(_) => "LanguageIntelligenceError",
            ErrorKind::Body(_) => "ArtifactBodyStoreError",
            ErrorKind::WorkDraft(_) => "WorkDraftError",
            ErrorKind::S3(_) => "S3ArtifactBodyError",
            ErrorKind::Range => "RangeError",
            ErrorKind::Type => "TypeError",
            ErrorKind::Internal | ErrorKind::StoreUnavailable => "Error",
        }
    }

    /// The `code` property of the JavaScript error.
    pub fn code(&self) -> String {
        match self.kind {
            ErrorKind::Artifact(_) => "ERR_PRISM_ARTIFACT".into(),
            ErrorKind::CheckpointConflict => crate::store::host::CONFLICT_CODE.into(),
            ErrorKind::Review(c) => format!("ERR_PRISM_REVIEW_{c}"),
            ErrorKind::Lsp(c) => format!("ERR_PRISM_LSP_{c}"),
            ErrorKind::Body(c) => format!("ERR_PRISM_ARTIFACT_BODY_{c}"),
            ErrorKind::WorkDraft(_) => "ERR_PRISM_WORK_DRAFT".into(),
            ErrorKind::S3(c) => format!("ERR_PRISM_S3_{c}"),
            ErrorKind::Range => "ERR_OUT_OF_RANGE".into(),
            ErrorKind::Type => "ERR_INVALID_ARG_TYPE".into(),
            ErrorKind::Internal => "ERR_PRISM_INTERNAL".into(),
            ErrorKind::StoreUnavailable => STORE_UNAVAILABLE.into(),
        }
    }

    /// The `reason` property, where the class has one.
    pub fn reason(&self) -> Option<&'static str> {
        match self.kind {
            ErrorKind::Artifact(r) => Some(r.as_str()),
            ErrorKind::WorkDraft(r) => Some(r.as_str()),
            ErrorKind::Body(c) => Some(c.as_str()),
            ErrorKind::S3(c) => Some(c.as_str()),
            _ => None,
        }
    }
}

/// The `code` of a store backend failure: retry the call, nothing else.
pub const STORE_UNAVAILABLE: &str = "ERR_PRISM_STORE_UNAVAILABLE";

/// Result alias used across the core.
pub type Result<T, E = PrismError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_classes() {
        let e = PrismError::artifact(ArtifactReason::NotFound, "x");
        assert_eq!(e.code(), "ERR_PRISM_ARTIFACT");
        assert_eq!(e.reason(), Some("not_found"));
        assert_eq!(e.class_name(), "ArtifactError");
        let e = PrismError::review(ReviewCode::Limit, "x");
        assert_eq!(e.code(), "ERR_PRISM_REVIEW_LIMIT");
        assert_eq!(e.reason(), None);
        assert_eq!(
            PrismError::lsp(LspCode::Timeout, "t").code(),
            "ERR_PRISM_LSP_TIMEOUT"
        );
        assert_eq!(
            PrismError::body(BodyCode::Held, "t").code(),
            "ERR_PRISM_ARTIFACT_BODY_HELD"
        );
        assert_eq!(
            PrismError::conflict("c").class_name(),
            "CheckpointConflictError"
        );
    }
}
