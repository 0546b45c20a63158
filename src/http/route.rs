//! Route matching for the fetch-style artifact handler: `basePath` validation, method +
//! path matching under the base, percent-decoding and id validation.
//!
//! The path given to [`match_route`] is a URL pathname exactly as the WHATWG URL parser
//! produced it (still percent-encoded; dot segments already resolved by the parser).

use crate::error::{ArtifactReason, PrismError, Result};

/// Longest accepted `basePath`, in bytes.
pub const MAX_BASE_PATH_BYTES: usize = 1024;
/// Longest accepted thread or artifact id after percent-decoding, in bytes: the artifact
/// service's own cap, so the router and the service agree on what an id is.
pub const MAX_ID_BYTES: usize = crate::artifacts::input::MAX_ID_BYTES;
/// Default `basePath`.
pub const DEFAULT_BASE_PATH: &str = "/prism/artifacts";
/// The reserved first segment of the download route.
pub const DOWNLOAD_SEGMENT: &str = "download";

/// One operation of the artifact service reachable over HTTP. [`Operation::as_str`] is
/// the `operation` given to `authorize` (`@arnilo/prism`'s `ArtifactOperation`),
/// [`Operation::method`] the service method that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Attach,
    List,
    Get,
    Revise,
    Compare,
    Approve,
    Reject,
    LastValidated,
    DeliveryLink,
    Download,
}

impl Operation {
    /// Every operation, in route-table order.
    pub const ALL: [Operation; 10] = [
        Operation::Attach,
        Operation::List,
        Operation::Get,
        Operation::Revise,
        Operation::Compare,
        Operation::Approve,
        Operation::Reject,
        Operation::LastValidated,
        Operation::DeliveryLink,
        Operation::Download,
    ];

    /// The `operation` name given to `authorize` (`ArtifactOperation`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Attach => "artifact.attach",
            Operation::List => "artifact.list",
            Operation::Get => "artifact.get",
            Operation::Revise => "artifact.revise",
            Operation::Compare => "artifact.compare",
            Operation::Approve => "artifact.approve",
            Operation::Reject => "artifact.reject",
            Operation::LastValidated => "artifact.last-validated",
            Operation::DeliveryLink => "artifact.delivery-link",
            Operation::Download => "artifact.download",
        }
    }

    /// The service method that serves it (`download` reads through `get`).
    pub fn method(self) -> &'static str {
        match self {
            Operation::Attach => "attach",
            Operation::List => "list",
            Operation::Get | Operation::Download => "get",
            Operation::Revise => "revise",
            Operation::Compare => "compare",
            Operation::Approve => "approve",
            Operation::Reject => "reject",
            Operation::LastValidated => "lastValidated",
            Operation::DeliveryLink => "deliveryLink",
        }
    }

    /// The operation named `name` (its [`Operation::as_str`] spelling).
    pub fn from_name(name: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// `true` for the routes that take a JSON request body.
    pub fn has_body(self) -> bool {
        matches!(
            self,
            Operation::Attach
                | Operation::Revise
                | Operation::Compare
                | Operation::Approve
                | Operation::Reject
                | Operation::DeliveryLink
        )
    }

    /// The HTTP status of a successful response.
    pub fn success_status(self) -> u16 {
        match self {
            Operation::Attach => 201,
            _ => 200,
        }
    }
}

/// A matched route: the operation and the decoded, validated path ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub operation: Operation,
    pub thread_id: Option<String>,
    pub artifact_id: Option<String>,
}

/// Why a request did not match a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteError {
    /// No route has this method and path shape: 404.
    UnknownRoute,
    /// The shape matched but an id segment is not a valid id: 400 (`invalid_id`).
    InvalidId(String),
}

/// Validate and normalise a `basePath`: absolute, no query or fragment, not `/`, no empty
/// or dot segments, only URL path characters (percent escapes must be well formed), at
/// most `MAX_BASE_PATH_BYTES` bytes. One trailing `/` is dropped (`/api/` → `/api`).
pub fn validate_base_path(base: &str) -> Result<String> {
    let fail = |what: &str| PrismError::type_error(format!("basePath {what}"));
    if base.len() > MAX_BASE_PATH_BYTES {
        return Err(fail(&format!(
            "must be at most {MAX_BASE_PATH_BYTES} bytes"
        )));
    }
    if !base.starts_with('/') {
        return Err(fail("must be an absolute path starting with \"/\""));
    }
    if base.contains('?') {
        return Err(fail("must not contain a query (\"?\")"));
    }
    if base.contains('#') {
        return Err(fail("must not contain a fragment (\"#\")"));
    }
    let trimmed = base.strip_suffix('/').unwrap_or(base);
    if trimmed.is_empty() {
        return Err(fail(
            "must not be \"/\": the artifact routes need their own prefix",
        ));
    }
    for segment in trimmed.split('/').skip(1) {
        if segment.is_empty() {
            return Err(fail("must not contain empty segments (\"//\")"));
        }
        if segment == "." || segment == ".." {
            return Err(fail("must not contain \".\" or \"..\" segments"));
        }
        let bytes = segment.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            if b == b'%' {
                let ok = matches!(
                    (bytes.get(i + 1), bytes.get(i + 2)),
                    (Some(h), Some(l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit()
                );
                if !ok {
                    return Err(fail("contains a malformed percent escape"));
                }
                i += 3;
                continue;
            }
            if !is_pchar(b) {
                return Err(fail(
                    "may contain only URL path characters (letters, digits, -._~!$&'()*+,;=:@ and %XX escapes)",
                ));
            }
            i += 1;
        }
    }
    Ok(trimmed.to_string())
}

/// RFC 3986 `pchar` minus `%` (handled separately).
fn is_pchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
        )
}

/// Decode and validate one id segment (`what` is `threadId` or `artifactId`).
pub fn decode_id(segment: &str, what: &str) -> std::result::Result<String, RouteError> {
    // A segment longer than 3× the cap cannot decode to an id within the cap.
    if segment.len() > MAX_ID_BYTES.saturating_mul(3) {
        return Err(RouteError::InvalidId(format!(
            "{what} must be at most {MAX_ID_BYTES} bytes"
        )));
    }
    let id = crate::util::uri::percent_decode(segment).ok_or_else(|| {
        RouteError::InvalidId(format!(
            "{what} is not a valid percent-encoded UTF-8 path segment"
        ))
    })?;
    if id.is_empty() {
        return Err(RouteError::InvalidId(format!("{what} must not be empty")));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(RouteError::InvalidId(format!(
            "{what} must be at most {MAX_ID_BYTES} bytes"
        )));
    }
    if id == "." || id == ".." {
        return Err(RouteError::InvalidId(format!(
            "{what} must not be \".\" or \"..\""
        )));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(RouteError::InvalidId(format!(
            "{what} must be 1..={MAX_ID_BYTES} characters of A-Z a-z 0-9 . _ -"
        )));
    }
    Ok(id)
}

/// Match `method` + `path` (a percent-encoded URL pathname) under the validated `base`.
///
/// Routes: `POST {base}/:thread` attach, `GET {base}/:thread` list,
/// `GET {base}/:thread/:artifact` get, `POST {base}/:thread/:artifact/revise|compare|approve|reject|delivery-link`,
/// `GET {base}/:thread/:artifact/last-validated`, `GET {base}/download`. The first segment
/// `download` is reserved for the download route. Anything else is [`RouteError::UnknownRoute`];
/// a route of the right shape whose id is invalid is [`RouteError::InvalidId`].
pub fn match_route(base: &str, method: &str, path: &str) -> std::result::Result<Route, RouteError> {
    let rest = path
        .strip_prefix(base)
        .and_then(|r| r.strip_prefix('/'))
        .ok_or(RouteError::UnknownRoute)?;
    let mut parts = rest.split('/');
    let first = parts.next().unwrap_or("");
    let second = parts.next();
    let third = parts.next();
    if parts.next().is_some() {
        return Err(RouteError::UnknownRoute);
    }
    if first.is_empty() || second == Some("") || third == Some("") {
        return Err(RouteError::UnknownRoute);
    }
    let is_get = method == "GET";
    let is_post = method == "POST";
    let operation = match (second, third) {
        (None, None) if first == DOWNLOAD_SEGMENT => {
            return if is_get {
                Ok(Route {
                    operation: Operation::Download,
                    thread_id: None,
                    artifact_id: None,
                })
            } else {
                Err(RouteError::UnknownRoute)
            };
        }
        (None, None) if is_post => Operation::Attach,
        (None, None) if is_get => Operation::List,
        (Some(_), None) if is_get => Operation::Get,
        (Some(_), Some(action)) => match (action, is_get, is_post) {
            ("revise", _, true) => Operation::Revise,
            ("compare", _, true) => Operation::Compare,
            ("approve", _, true) => Operation::Approve,
            ("reject", _, true) => Operation::Reject,
            ("delivery-link", _, true) => Operation::DeliveryLink,
            ("last-validated", true, _) => Operation::LastValidated,
            _ => return Err(RouteError::UnknownRoute),
        },
        _ => return Err(RouteError::UnknownRoute),
    };
    if first == DOWNLOAD_SEGMENT {
        // Reserved: `download` is never a thread id on these routes.
        return Err(RouteError::UnknownRoute);
    }
    let thread_id = decode_id(first, "threadId")?;
    let artifact_id = match second {
        Some(seg) => Some(decode_id(seg, "artifactId")?),
        None => None,
    };
    Ok(Route {
        operation,
        thread_id: Some(thread_id),
        artifact_id,
    })
}

/// The adapter's error for a route error: `(status, code, message)`.
pub fn route_error_response(err: &RouteError) -> (u16, &'static str, String) {
    match err {
        RouteError::UnknownRoute => (404, "unknown_route", "no such route".to_string()),
        RouteError::InvalidId(m) => (400, ArtifactReason::InvalidId.as_str(), m.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const B: &str = "/prism/artifacts";

    fn op(method: &str, path: &str) -> std::result::Result<Operation, RouteError> {
        match_route(B, method, path).map(|r| r.operation)
    }

    #[test]
    fn base_path_rules() {
        assert_eq!(
            validate_base_path("/prism/artifacts").unwrap(),
            "/prism/artifacts"
        );
        assert_eq!(validate_base_path("/api/").unwrap(), "/api");
        assert_eq!(validate_base_path("/a%20b").unwrap(), "/a%20b");
        for bad in [
            "",
            "/",
            "//",
            "api",
            "http://x/api",
            "/api?x=1",
            "/api#f",
            "/a//b",
            "/a/../b",
            "/a/./b",
            "/a b",
            "/a%2",
            "/a%zz",
            "/\u{e9}",
            "/a\n",
        ] {
            let e = validate_base_path(bad).unwrap_err();
            assert_eq!(e.kind, crate::error::ErrorKind::Type, "{bad:?}");
        }
        assert!(validate_base_path(&format!("/{}", "a".repeat(MAX_BASE_PATH_BYTES))).is_err());
    }

    #[test]
    fn every_route() {
        assert_eq!(op("POST", "/prism/artifacts/t1"), Ok(Operation::Attach));
        assert_eq!(op("GET", "/prism/artifacts/t1"), Ok(Operation::List));
        assert_eq!(op("GET", "/prism/artifacts/t1/a1"), Ok(Operation::Get));
        assert_eq!(
            op("POST", "/prism/artifacts/t1/a1/revise"),
            Ok(Operation::Revise)
        );
        assert_eq!(
            op("POST", "/prism/artifacts/t1/a1/compare"),
            Ok(Operation::Compare)
        );
        assert_eq!(
            op("POST", "/prism/artifacts/t1/a1/approve"),
            Ok(Operation::Approve)
        );
        assert_eq!(
            op("POST", "/prism/artifacts/t1/a1/reject"),
            Ok(Operation::Reject)
        );
        assert_eq!(
            op("POST", "/prism/artifacts/t1/a1/delivery-link"),
            Ok(Operation::DeliveryLink)
        );
        assert_eq!(
            op("GET", "/prism/artifacts/t1/a1/last-validated"),
            Ok(Operation::LastValidated)
        );
        assert_eq!(
            op("GET", "/prism/artifacts/download"),
            Ok(Operation::Download)
        );
        let r = match_route(B, "POST", "/prism/artifacts/t1/a1/approve").unwrap();
        assert_eq!(r.thread_id.as_deref(), Some("t1"));
        assert_eq!(r.artifact_id.as_deref(), Some("a1"));
    }

    #[test]
    fn unknown_routes_are_404() {
        for (m, p) in [
            ("GET", "/prism/artifacts"),
            ("GET", "/prism/artifacts/"),
            ("GET", "/prism/artifactsX/t1"),
            ("GET", "/other/t1"),
            ("GET", "/prism/artifacts/t1/"),
            ("GET", "/prism/artifacts//a1"),
            ("DELETE", "/prism/artifacts/t1"),
            ("PUT", "/prism/artifacts/t1/a1"),
            ("POST", "/prism/artifacts/t1/a1"),
            ("GET", "/prism/artifacts/t1/a1/approve"),
            ("POST", "/prism/artifacts/t1/a1/last-validated"),
            ("POST", "/prism/artifacts/t1/a1/unknown"),
            ("GET", "/prism/artifacts/t1/a1/approve/x"),
            ("POST", "/prism/artifacts/download"),
            ("GET", "/prism/artifacts/download/a1"),
            ("get", "/prism/artifacts/t1"),
        ] {
            assert_eq!(op(m, p), Err(RouteError::UnknownRoute), "{m} {p}");
        }
    }

    #[test]
    fn ids_are_decoded_and_validated() {
        let r = match_route(B, "GET", "/prism/artifacts/thread%2D1/art%5F%41").unwrap();
        assert_eq!(r.thread_id.as_deref(), Some("thread-1"));
        assert_eq!(r.artifact_id.as_deref(), Some("art_A"));
        for p in [
            "/prism/artifacts/%2e%2e",
            "/prism/artifacts/..%2F..",
            "/prism/artifacts/a%2Fb",
            "/prism/artifacts/a%5Cb",
            "/prism/artifacts/a%00b",
            "/prism/artifacts/%zz",
            "/prism/artifacts/%C3",
            "/prism/artifacts/%ff",
            "/prism/artifacts/%20a",
            "/prism/artifacts/t1/%2e",
            "/prism/artifacts/thread%201",
            "/prism/artifacts/art%C3%A9",
            "/prism/artifacts/a:b",
            "/prism/artifacts/a@b",
        ] {
            assert!(
                matches!(match_route(B, "GET", p), Err(RouteError::InvalidId(_))),
                "{p}"
            );
        }
        let long = "a".repeat(MAX_ID_BYTES + 1);
        assert!(matches!(
            match_route(B, "GET", &format!("/prism/artifacts/{long}")),
            Err(RouteError::InvalidId(_))
        ));
        let ok = "a".repeat(MAX_ID_BYTES);
        assert!(match_route(B, "GET", &format!("/prism/artifacts/{ok}")).is_ok());
        let huge = "%41".repeat(100_000);
        assert!(matches!(
            match_route(B, "GET", &format!("/prism/artifacts/{huge}")),
            Err(RouteError::InvalidId(_))
        ));
    }

    #[test]
    fn route_errors_map_to_statuses() {
        assert_eq!(route_error_response(&RouteError::UnknownRoute).0, 404);
        let (s, c, _) = route_error_response(&RouteError::InvalidId("x".into()));
        assert_eq!((s, c), (400, "invalid_id"));
    }

    proptest! {
        #[test]
        fn router_never_panics(method in "[A-Z]{0,8}", path in "\\PC{0,300}") {
            let _ = match_route(B, &method, &path);
            let _ = validate_base_path(&path);
        }

        #[test]
        fn percent_encoding_round_trips(id in "[A-Za-z0-9._-]{1,140}") {
            prop_assume!(id != "." && id != ".." && id != DOWNLOAD_SEGMENT);
            let enc: String = id.bytes().map(|b| format!("%{b:02X}")).collect();
            let r = match_route(B, "GET", &format!("{B}/{enc}"));
            if id.len() <= MAX_ID_BYTES {
                prop_assert_eq!(r.unwrap().thread_id, Some(id));
            } else {
                prop_assert!(matches!(r, Err(RouteError::InvalidId(_))));
            }
        }
    }
}
