//! The object key a body lives under, derived from its ref and never shown in errors.
//!
//! With a tenant it is the reference's `prism-artifacts/{tenantId}/{threadId}/{artifactId}/{version}`.
//! Without one, the owner is named under its own top-level prefix,
//! `prism-artifacts-scoped/{a:accountId | -}/{u:userId | -}/{threadId}/{artifactId}/{version}`:
//! no tenant key can start with that prefix, and a present member (`a:…`, `u:…`) never
//! equals an absent one (`-`), so two refs share a key only when they name the same owner,
//! thread, artifact and version. Inside a segment `%` becomes `%25` and `/` becomes `%2F`
//! (S3 keys treat `/` as an ordinary character, so an id holding one must not split a
//! segment); ids without either, like every id the artifact service issues, are unchanged.
//! On the wire every segment is then percent-encoded on its own (RFC 3986).

use super::sigv4::uri_encode;
use super::BodyRef;

/// The key's segments, unencoded.
pub fn segments(r: &BodyRef) -> Vec<String> {
    let mut out = Vec::with_capacity(7);
    match non_empty(&r.tenant_id) {
        Some(t) => {
            out.push("prism-artifacts".to_string());
            out.push(escape(t));
        }
        None => {
            out.push("prism-artifacts-scoped".to_string());
            out.push(non_empty(&r.account_id).map_or("-".into(), |a| format!("a:{}", escape(a))));
            out.push(non_empty(&r.user_id).map_or("-".into(), |u| format!("u:{}", escape(u))));
        }
    }
    out.push(escape(&r.thread_id));
    out.push(escape(&r.artifact_id));
    out.push(r.version.to_string());
    out
}

fn escape(s: &str) -> String {
    s.replace('%', "%25").replace('/', "%2F")
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

/// `s3ObjectKey(ref)`: the segments joined with `/`, unencoded (as the reference).
pub fn object_key(r: &BodyRef) -> String {
    segments(r).join("/")
}

/// The key as it appears in a request path: each segment percent-encoded.
pub fn encoded_key(r: &BodyRef) -> String {
    segments(r)
        .iter()
        .map(|s| uri_encode(s, true))
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(t: Option<&str>, a: Option<&str>, u: Option<&str>, thread: &str) -> BodyRef {
        BodyRef {
            tenant_id: t.map(Into::into),
            account_id: a.map(Into::into),
            user_id: u.map(Into::into),
            artifact_id: "art".into(),
            thread_id: thread.into(),
            version: 1,
            mime: "text/plain".into(),
            size: 0,
            hash: [0; 32],
        }
    }

    #[test]
    fn keys() {
        assert_eq!(
            object_key(&r(Some("t1"), Some("a"), None, "th")),
            "prism-artifacts/t1/th/art/1"
        );
        assert_eq!(
            object_key(&r(None, Some("a"), None, "th")),
            "prism-artifacts-scoped/a:a/-/th/art/1"
        );
        assert_eq!(
            object_key(&r(None, None, Some("u"), "th")),
            "prism-artifacts-scoped/-/u:u/th/art/1"
        );
        assert_ne!(
            object_key(&r(Some("t"), None, None, "a/b")),
            object_key(&r(Some("t/a"), None, None, "b"))
        );
        assert_ne!(
            object_key(&r(Some("t"), None, None, "a%2Fb")),
            object_key(&r(Some("t"), None, None, "a/b"))
        );
        assert_eq!(
            encoded_key(&r(Some("t!'()*"), None, None, "th")),
            "prism-artifacts/t%21%27%28%29%2A/th/art/1"
        );
        assert!(!object_key(&r(None, Some("x"), None, "th")).contains("undefined"));
    }
}
