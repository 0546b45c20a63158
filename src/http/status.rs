//! Error → HTTP status mapping for the artifact handler.

use crate::error::ArtifactReason;

/// An error response of the handler: status and the `{ "error": { code, message } }` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}

impl HttpError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }
}

/// The HTTP status for an `ArtifactError` reason:
/// 400 bad input, 401 bad link signature, 403 ownership, 404 not found / not validated,
/// 409 conflict, 410 expired link, 422 too many artifacts or revisions.
pub fn status_for_reason(reason: ArtifactReason) -> u16 {
    use ArtifactReason::*;
    match reason {
        InvalidInput | InvalidId | UnsafeUri | TooManyCitations | RecordTooLarge
        | PreviewTooLarge | CitationTooLarge | MimeTooLarge | HashTooLarge | UriTooLarge
        | NoteTooLarge | TitleTooLarge | LinkTooLarge => 400,
        InvalidLink => 401,
        Ownership => 403,
        // `lastValidated` before any approval: there is no validated revision to return.
        NotFound | NotValidated => 404,
        Conflict => 409,
        LinkExpired => 410,
        TooManyArtifacts | TooManyRevisions => 422,
    }
}

/// The status for a reason given as text; `None` for an unknown reason (the JS layer
/// treats an unknown reason as an internal error and never echoes its message).
#[cfg(test)]
pub fn status_for_reason_str(reason: &str) -> Option<u16> {
    ArtifactReason::ALL
        .iter()
        .find(|r| r.as_str() == reason)
        .map(|r| status_for_reason(*r))
}

/// The response for a failure that is not an `ArtifactError` but has a `code` of ours the
/// handler answers with its own status: `(code, status, body code, message)`. A store
/// conflict is 409; a store backend failure 503, the one status a client should retry.
pub const CODE_STATUSES: [(&str, u16, &str, &str); 2] = [
    (
        "ERR_PRISM_CHECKPOINT_CONFLICT",
        409,
        "conflict",
        "the artifact changed concurrently; retry",
    ),
    (
        crate::error::STORE_UNAVAILABLE,
        503,
        "store_unavailable",
        "the store is unavailable; retry",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_api_notes() {
        assert_eq!(status_for_reason_str("invalid_input"), Some(400));
        assert_eq!(status_for_reason_str("invalid_id"), Some(400));
        assert_eq!(status_for_reason_str("unsafe_uri"), Some(400));
        assert_eq!(status_for_reason_str("record_too_large"), Some(400));
        assert_eq!(status_for_reason_str("invalid_link"), Some(401));
        assert_eq!(status_for_reason_str("ownership"), Some(403));
        assert_eq!(status_for_reason_str("not_found"), Some(404));
        assert_eq!(status_for_reason_str("not_validated"), Some(404));
        assert_eq!(status_for_reason_str("conflict"), Some(409));
        assert_eq!(status_for_reason_str("link_expired"), Some(410));
        assert_eq!(status_for_reason_str("too_many_artifacts"), Some(422));
        assert_eq!(status_for_reason_str("too_many_revisions"), Some(422));
        assert_eq!(status_for_reason_str("nope"), None);
        let store = CODE_STATUSES
            .iter()
            .find(|c| c.0 == "ERR_PRISM_STORE_UNAVAILABLE");
        assert_eq!(store.map(|c| c.1), Some(503));
    }

    #[test]
    fn every_reason_is_a_4xx() {
        for &r in ArtifactReason::ALL {
            let s = status_for_reason(r);
            assert!((400..500).contains(&s), "{r} -> {s}");
        }
        let mut names: Vec<_> = ArtifactReason::ALL.iter().map(|r| r.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ArtifactReason::ALL.len());
    }
}
