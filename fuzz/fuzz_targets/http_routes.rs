//! The artifact handler's pure parts: `basePath`, route matching, Content-Type, request
//! bodies and `authorize` results. Input: NUL-separated base path, method, path,
//! Content-Type, body (JSON text) and authorization result (JSON text). Never a panic;
//! every refusal is a 4xx (or a TypeError for a base path).
#![no_main]

use libfuzzer_sys::fuzz_target;
use prism_review::ErrorKind;
use prism_review::fuzz::{
    check_authorization, check_body, check_content_type, match_route, validate_base_path,
    Operation, RouteError,
};

const NOW: i64 = 1_767_225_600_000;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let mut next = || parts.next().unwrap_or("");
    let (base, method, path, content_type, body, auth) =
        (next(), next(), next(), next(), next(), next());
    let base = match validate_base_path(base) {
        Ok(b) => b,
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::Type, "{e:?}");
            "/prism/artifacts".to_string()
        }
    };
    let route = match_route(&base, method, path);
    if let Err(RouteError::InvalidId(_) | RouteError::UnknownRoute) = &route {}
    let ct = (!content_type.is_empty()).then_some(content_type);
    if let Err(e) = check_content_type(ct) {
        assert_eq!(e.status, 415);
    }
    let (thread, artifact) = match &route {
        Ok(r) => (r.thread_id.as_deref(), r.artifact_id.as_deref()),
        Err(_) => (Some("t"), Some("a")),
    };
    for op in Operation::ALL.into_iter().filter(|o| o.has_body()) {
        if let Err(e) = check_body(op, body, thread, artifact) {
            assert!((400..500).contains(&e.status), "{e:?}");
        }
    }
    if let Ok(result) = serde_json::from_str::<serde_json::Value>(auth) {
        let token = serde_json::from_str::<serde_json::Value>(body).ok();
        match check_authorization(&result, token.as_ref(), NOW) {
            Ok(a) => assert!(a.identity.as_ref().is_none_or(|i| i.is_object())),
            Err(e) => assert_eq!(e.status, 403),
        }
    }
});
