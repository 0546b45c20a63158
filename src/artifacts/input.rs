//! Validation of every request before any store call: field types, unknown fields,
//! `__proto__` keys, nesting depth, ids, URIs, sizes, ownership and identity.

use super::limits::ArtifactLimits;
use super::model::{Citation, Span};
use super::redact::SecretRedactor;
use super::{err, invalid};
use crate::error::{ArtifactReason as R, PrismError, Result};
use crate::json::{type_name, Fields, Members};
use crate::store::Ownership;
use crate::util::time;
use serde_json::{Map, Value};

/// Longest id (`threadId`, `artifactId`), in bytes.
pub const MAX_ID_BYTES: usize = 128;
/// Longest ownership member, principal kind/id, reviewer ref.
pub const MAX_REF_BYTES: usize = 256;
/// Longest list cursor, in bytes (a store's own cursor always fits).
pub const MAX_CURSOR_BYTES: usize = crate::store::model::MAX_CURSOR_BYTES;
/// Deepest nesting accepted anywhere in a request.
pub const MAX_INPUT_DEPTH: usize = 32;
/// Largest request JSON text, in bytes (every cap together stays far below it).
pub const MAX_INPUT_BYTES: usize = 2 * 1024 * 1024;
/// Most snapshots one integrity check takes.
pub const MAX_SNAPSHOTS: usize = 1024;

/// Refuse `__proto__`/`constructor`/`prototype` keys anywhere and nesting deeper than
/// [`MAX_INPUT_DEPTH`].
pub fn check_shape(value: &Value, path: &str) -> Result<()> {
    check_shape_within(value, path, MAX_INPUT_DEPTH)
}

/// [`check_shape`] with a chosen depth bound.
pub fn check_shape_within(value: &Value, path: &str, max_depth: usize) -> Result<()> {
    walk_shape(value, 0, path, max_depth)
}

fn walk_shape(v: &Value, depth: usize, path: &str, max: usize) -> Result<()> {
    if depth > max {
        return Err(invalid(format!(
            "{path} is nested deeper than {max} levels"
        )));
    }
    match v {
        Value::Array(items) => items
            .iter()
            .try_for_each(|x| walk_shape(x, depth + 1, path, max)),
        Value::Object(obj) => obj
            .iter()
            .try_for_each(|(k, x)| shape_of_member(k, x, depth, path, max)),
        _ => Ok(()),
    }
}

/// The member `k: x` of an object at `depth`.
fn shape_of_member(k: &str, x: &Value, depth: usize, path: &str, max: usize) -> Result<()> {
    if matches!(k, "__proto__" | "constructor" | "prototype") {
        return Err(invalid(format!("{path} must not contain a \"{k}\" key")));
    }
    walk_shape(x, depth + 1, path, max)
}

/// Refuse members not in `allowed`.
pub fn only(fields: &Fields<'_>, allowed: &[&str]) -> Result<()> {
    only_in(fields, allowed, &[])
}

/// The members every service request may carry (artifacts and work drafts).
pub const REQUEST_COMMON: [&str; 3] = ["ownership", "identity", "threadId"];

/// Refuse members neither in `allowed` nor in one of the `more` sets.
pub fn only_in(fields: &Fields<'_>, allowed: &[&str], more: &[&[&str]]) -> Result<()> {
    for k in fields.names() {
        if !allowed.contains(&k) && !more.iter().any(|set| set.contains(&k)) {
            return Err(fields.fail(k, "is not a known field"));
        }
    }
    Ok(())
}

/// A request's JSON text (the binding's) as the service reads it: an object without a
/// lone surrogate is read member by member ([`Members`]); any other text takes the
/// general path ([`well_formed_request`]), whose errors say what is wrong with it.
pub fn read_request(text: &str) -> Result<Members> {
    if let Some(members) = Members::read(text) {
        return Ok(members);
    }
    let input = well_formed_request(crate::json::parse_well_formed(text, invalid)?)?;
    Members::from_value(input, "input", invalid)
}

/// A request as the service reads it, from what [`crate::json::parse_well_formed`] (or
/// `read_well_formed`) answered: its strings with each lone UTF-16 surrogate as U+FFFD,
/// except in identities, which are refused ([`identities_exact`]). The one rule for the
/// binding and the HTTP adapter.
pub fn well_formed_request((input, replaced): (Value, bool)) -> Result<Value> {
    if replaced {
        identities_exact(&input)?;
    }
    Ok(input)
}

/// After a request's lone UTF-16 surrogates were read as U+FFFD
/// ([`crate::json::parse_well_formed`]): its identity members (`ownership`, `identity`,
/// `reviewer`) must hold no U+FFFD. Identities are compared exactly, so two that differ
/// only in lone surrogates must never become one: such a member is refused, not replaced
/// (a U+FFFD the caller wrote is refused too, in a request that held a lone surrogate).
pub fn identities_exact(input: &Value) -> Result<()> {
    fn holds_replacement(v: &Value) -> bool {
        match v {
            Value::String(s) => s.contains('\u{fffd}'),
            Value::Array(items) => items.iter().any(holds_replacement),
            Value::Object(obj) => obj
                .iter()
                .any(|(k, v)| k.contains('\u{fffd}') || holds_replacement(v)),
            _ => false,
        }
    }
    for name in ["ownership", "identity", "reviewer"] {
        if input.get(name).is_some_and(holds_replacement) {
            let message = format!(
                "input.{name} holds a lone UTF-16 surrogate (a string cut inside a surrogate \
                 pair): identities are compared exactly, so it is refused, not replaced by U+FFFD"
            );
            return Err(if name == "ownership" {
                err(R::Ownership, message)
            } else {
                invalid(message)
            });
        }
    }
    Ok(())
}

fn has_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control())
}

/// An optional id field as a string (absent: `None`), else `invalid_id`.
fn opt_id_text<'a>(fields: &Fields<'a>, name: &str) -> Result<Option<&'a String>> {
    match fields.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(err(
            R::InvalidId,
            format!(
                "{} must be a string, got {}",
                fields.path(name),
                type_name(other)
            ),
        )),
    }
}

/// A `threadId`/`artifactId`: 1..=128 bytes of `[A-Za-z0-9._-]`, holding no secret.
pub fn id<'a>(fields: &Fields<'a>, name: &str, redactor: &SecretRedactor) -> Result<&'a str> {
    let v = opt_id_text(fields, name)?
        .ok_or_else(|| err(R::InvalidId, format!("{} is required", fields.path(name))))?;
    // The path is written only for an error (issue 13: two ids per call).
    match id_problem(v, redactor) {
        None => Ok(v.as_str()),
        Some(problem) => Err(err(
            R::InvalidId,
            format!("{} {problem}", fields.path(name)),
        )),
    }
}

/// What is wrong with an id, as the end of its error message.
fn id_problem(v: &str, redactor: &SecretRedactor) -> Option<String> {
    if v.is_empty()
        || v.len() > MAX_ID_BYTES
        || !v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Some(format!(
            "must be 1..={MAX_ID_BYTES} characters of A-Z a-z 0-9 . _ -"
        ));
    }
    if redactor.contains_secret(v) {
        return Some("holds a registered secret".into());
    }
    None
}

/// Ownership from host `authorize`: only `tenantId`/`accountId`/`userId`, strings, at least
/// one non-empty, each at most 256 bytes, none holding a registered secret.
pub fn ownership(value: Option<&Value>, redactor: &SecretRedactor) -> Result<Ownership> {
    let value = value.ok_or_else(|| err(R::Ownership, "input.ownership is required"))?;
    let f = Fields::new(value, "input.ownership", |m| err(R::Ownership, m))?;
    only(&f, &["tenantId", "accountId", "userId"]).map_err(|e| err(R::Ownership, e.message))?;
    let mut out = Ownership::default();
    let mut any = false;
    for (name, slot) in [
        ("tenantId", &mut out.tenant_id),
        ("accountId", &mut out.account_id),
        ("userId", &mut out.user_id),
    ] {
        if let Some(s) = f.opt_str(name)? {
            if s.len() > MAX_REF_BYTES || has_control(s) {
                return Err(f.fail(name, "must be at most 256 bytes without control characters"));
            }
            if redactor.contains_secret(s) {
                return Err(f.fail(name, "holds a registered secret"));
            }
            if !s.is_empty() {
                any = true;
                *slot = Some(s.to_string());
            }
        }
    }
    if !any {
        return Err(err(
            R::Ownership,
            "input.ownership needs at least one non-empty tenantId, accountId or userId",
        ));
    }
    Ok(out)
}

fn timestamp(f: &Fields<'_>, name: &str) -> Result<Option<i64>> {
    match f.get(name) {
        None => Ok(None),
        Some(Value::String(s)) => time::parse_iso(s)
            .map(Some)
            .ok_or_else(|| f.fail(name, "must be an ISO-8601 timestamp")),
        Some(v @ Value::Number(_)) => crate::json::as_i64(v)
            .map(Some)
            .ok_or_else(|| f.fail(name, "must be an integer (epoch milliseconds)")),
        Some(other) => Err(f.fail(
            name,
            &format!(
                "must be an ISO-8601 string or epoch milliseconds, got {}",
                type_name(other)
            ),
        )),
    }
}

fn ref_part(f: &Fields<'_>, name: &str) -> Result<String> {
    let s = f.non_empty_str(name)?;
    if s.len() > MAX_REF_BYTES || has_control(s) {
        return Err(f.fail(name, "must be at most 256 bytes without control characters"));
    }
    Ok(s.to_string())
}

/// A verified `AgentIdentity`; returns its actor ref `kind:id`. Malformed identities are
/// `invalid_input`; unverified, expired, revoked or ownership-conflicting ones `ownership`.
pub fn identity(value: Option<&Value>, owner: &Ownership, now_ms: i64) -> Result<Option<String>> {
    let Some(value) = value else { return Ok(None) };
    let f = Fields::new(value, "input.identity", invalid)?;
    let tenant = ref_part(&f, "tenantId")?;
    let account = f.opt_str("accountId")?;
    let user = f.opt_str("userId")?;
    let p = f.object_field("principal")?;
    only(&p, &["kind", "id", "displayName"])?;
    let kind = ref_part(&p, "kind")?;
    if kind.contains(':') {
        return Err(p.fail("kind", "must not contain ':'"));
    }
    let pid = ref_part(&p, "id")?;
    p.opt_str("displayName")?;
    match f.opt_array("scopes")? {
        Some(scopes) if scopes.iter().all(Value::is_string) => {}
        _ => return Err(f.fail("scopes", "must be an array of strings")),
    }
    let issued = timestamp(&f, "issuedAt")?;
    if issued.is_none() {
        return Err(f.fail("issuedAt", "is required"));
    }
    let expires = timestamp(&f, "expiresAt")?;
    let revoked = timestamp(&f, "revokedAt")?;
    match f.get("verified") {
        Some(Value::Bool(true)) => {}
        _ => return Err(err(R::Ownership, "identity is not verified")),
    }
    if expires.is_some_and(|t| t <= now_ms) {
        return Err(err(R::Ownership, "identity has expired"));
    }
    if revoked.is_some_and(|t| t <= now_ms) {
        return Err(err(R::Ownership, "identity has been revoked"));
    }
    let conflict = |mine: &Option<String>, theirs: Option<&str>| match (mine, theirs) {
        (Some(a), Some(b)) => a != b,
        _ => false,
    };
    if conflict(&owner.tenant_id, Some(tenant.as_str()))
        || conflict(&owner.account_id, account)
        || conflict(&owner.user_id, user)
    {
        return Err(err(
            R::Ownership,
            "identity conflicts with the ownership scope",
        ));
    }
    Ok(Some(format!("{kind}:{pid}")))
}

/// An explicit reviewer ref: non-empty, at most 256 bytes, no control characters.
pub fn reviewer(f: &Fields<'_>) -> Result<Option<String>> {
    match f.opt_str("reviewer")? {
        None => Ok(None),
        Some(s) if s.trim().is_empty() || s.len() > MAX_REF_BYTES || has_control(s) => Err(f.fail(
            "reviewer",
            "must be a non-empty string of at most 256 bytes without control characters",
        )),
        Some(s) => Ok(Some(s.to_string())),
    }
}

/// A string bounded by `cap` bytes (`reason` when longer).
pub fn bounded(
    f: &Fields<'_>,
    name: &str,
    cap: u64,
    reason: R,
    required: bool,
) -> Result<Option<String>> {
    let s = if required {
        Some(f.non_empty_str(name)?)
    } else {
        f.opt_str(name)?
    };
    match s {
        Some(s) if s.len() as u64 > cap => Err(err(
            reason,
            format!("{} is {} bytes; the cap is {cap}", f.path(name), s.len()),
        )),
        other => Ok(other.map(str::to_string)),
    }
}

/// True when `uri` names a local filesystem location: `file:`, an absolute or home path,
/// a drive path (`C:\`, `C:/`, `C:`), a UNC or network path (`\\host`, `//host`), or a
/// relative path (`./`, `../`).
pub fn is_local_path(uri: &str) -> bool {
    let t = uri.trim_start();
    let lower = t.get(..5).map(str::to_ascii_lowercase);
    if lower.as_deref() == Some("file:") {
        return true;
    }
    let b = t.as_bytes();
    match b {
        [b'/' | b'\\' | b'~', ..] => true,
        [d, b':', ..]
            if d.is_ascii_alphabetic() && b.get(2).is_none_or(|c| matches!(c, b'/' | b'\\')) =>
        {
            true
        }
        [b'.', b'/' | b'\\', ..] | [b'.', b'.', b'/' | b'\\', ..] => true,
        [b'.'] | [b'.', b'.'] => true,
        _ => false,
    }
}

/// A required URI: bounded, no control characters or surrounding blanks, not local.
pub fn uri(f: &Fields<'_>, name: &str, cap: u64) -> Result<String> {
    let Some(s) = bounded(f, name, cap, R::UriTooLarge, true)? else {
        return Err(f.fail(name, "is required"));
    };
    if has_control(&s) || s.trim() != s {
        return Err(f.fail(
            name,
            "must not contain control characters or surrounding blanks",
        ));
    }
    if is_local_path(&s) {
        return Err(err(
            R::UnsafeUri,
            format!(
                "{} is a local filesystem reference; pass a host blob reference",
                f.path(name)
            ),
        ));
    }
    Ok(s)
}

/// An optional size: a non-negative safe integer (`invalid_input` otherwise).
pub fn size(f: &Fields<'_>) -> Result<Option<u64>> {
    match f.opt_u64("size")? {
        Some(n) if n > crate::util::MAX_SAFE_INTEGER => {
            Err(f.fail("size", "must be a non-negative safe integer"))
        }
        other => Ok(other),
    }
}

/// Optional `preview`: a JSON object of at most `previewBytes`.
pub fn preview(f: &Fields<'_>, limits: &ArtifactLimits) -> Result<Option<Value>> {
    match f.get("preview") {
        None => Ok(None),
        Some(v @ Value::Object(_)) => {
            let n = v.to_string().len() as u64;
            if n > limits.preview_bytes {
                return Err(err(
                    R::PreviewTooLarge,
                    format!(
                        "input.preview is {n} bytes; the cap is {}",
                        limits.preview_bytes
                    ),
                ));
            }
            Ok(Some(v.clone()))
        }
        Some(other) => Err(f.fail(
            "preview",
            &format!("must be an object, got {}", type_name(other)),
        )),
    }
}

/// Optional `producerRunId`: the reference's id rule (`^[A-Za-z0-9][A-Za-z0-9._:-]*$`,
/// at most 128 bytes), else `invalid_id`.
pub fn producer_run_id(f: &Fields<'_>) -> Result<Option<String>> {
    let Some(id) = opt_id_text(f, "producerRunId")? else {
        return Ok(None);
    };
    let b = id.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= MAX_ID_BYTES
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'));
    if !ok {
        return Err(err(
            R::InvalidId,
            format!(
                "{} must be 1..={MAX_ID_BYTES} characters of A-Z a-z 0-9 . _ : - starting with a letter or digit",
                f.path("producerRunId")
            ),
        ));
    }
    Ok(Some(id.clone()))
}

const CITATION_FIELDS: [&str; 11] = [
    "uri",
    "title",
    "kind",
    "sourceId",
    "revision",
    "contentHash",
    "retrievedAt",
    "excerpt",
    "span",
    "tenantId",
    "support",
];

/// One citation; `caps` bounds the citation size and title, `None` checks types only.
pub fn citation(value: &Value, path: &str, limits: &ArtifactLimits) -> Result<Citation> {
    let f = Fields::new(value, path.to_string(), invalid)?;
    only(&f, &CITATION_FIELDS)?;
    let n = value.to_string().len() as u64;
    if n > limits.citation_bytes {
        return Err(err(
            R::CitationTooLarge,
            format!("{path} is {n} bytes; the cap is {}", limits.citation_bytes),
        ));
    }
    let uri = uri(&f, "uri", limits.uri_bytes)?;
    let title = bounded(&f, "title", limits.title_bytes, R::TitleTooLarge, false)?;
    let revision = match f.get("revision") {
        None => None,
        Some(v @ Value::String(_)) => Some(v.clone()),
        Some(v @ Value::Number(_)) if crate::json::as_i64(v).is_some() => Some(v.clone()),
        Some(_) => return Err(f.fail("revision", "must be a string or an integer")),
    };
    let retrieved_at = f.opt_str("retrievedAt")?;
    if let Some(t) = retrieved_at {
        if time::parse_iso(t).is_none() {
            return Err(f.fail("retrievedAt", "must be an ISO-8601 timestamp"));
        }
    }
    let span = match f.opt_object("span")? {
        None => None,
        Some(s) => {
            only(&s, &["start", "end"])?;
            let (start, end) = (s.u64("start")?, s.u64("end")?);
            if start > end {
                return Err(s.fail("start", "must not be greater than end"));
            }
            Some(Span { start, end })
        }
    };
    let support = match f.get("support") {
        None => None,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if (0.0..=1.0).contains(&x) => Some(x),
            _ => return Err(f.fail("support", "must be a number in 0..=1")),
        },
        Some(_) => return Err(f.fail("support", "must be a number in 0..=1")),
    };
    Ok(Citation {
        uri,
        title,
        kind: f.opt_str("kind")?.map(str::to_string),
        source_id: f.opt_str("sourceId")?.map(str::to_string),
        revision,
        content_hash: f.opt_str("contentHash")?.map(str::to_string),
        retrieved_at: retrieved_at.map(str::to_string),
        excerpt: f.opt_str("excerpt")?.map(str::to_string),
        span,
        tenant_id: f.opt_str("tenantId")?.map(str::to_string),
        support,
    })
}

/// Optional `citations`: at most `citationsPerRevision`, each within the caps.
pub fn citations(f: &Fields<'_>, limits: &ArtifactLimits) -> Result<Option<Vec<Citation>>> {
    let Some(items) = f.opt_array("citations")? else {
        return Ok(None);
    };
    if items.len() as u64 > limits.citations {
        return Err(err(
            R::TooManyCitations,
            format!(
                "input.citations has {} entries; the cap is {}",
                items.len(),
                limits.citations
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| citation(v, &format!("input.citations[{i}]"), limits))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// The input object as `Fields`, with the shape checks done: its members must be in
/// `allowed` or in one of the `more` sets.
pub fn request<'a>(value: &'a Value, allowed: &[&str], more: &[&[&str]]) -> Result<Fields<'a>> {
    checked_request(Fields::new(value, "input", invalid)?, allowed, more)
}

/// [`request`] of a request read member by member ([`read_request`]).
pub fn request_members<'a>(
    members: &'a Members,
    allowed: &[&str],
    more: &[&[&str]],
) -> Result<Fields<'a>> {
    checked_request(members.fields("input", invalid), allowed, more)
}

fn checked_request<'a>(f: Fields<'a>, allowed: &[&str], more: &[&[&str]]) -> Result<Fields<'a>> {
    for (k, v) in f.members() {
        shape_of_member(k, v, 0, "input", MAX_INPUT_DEPTH)?;
    }
    only_in(&f, allowed, more)?;
    Ok(f)
}

/// Helper for `Map` lookups in records handed in by callers.
pub fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>> {
    value.as_object().ok_or_else(|| {
        invalid(format!(
            "{path} must be an object, got {}",
            type_name(value)
        ))
    })
}

/// A positive revision number.
pub fn version(f: &Fields<'_>, name: &str, required: bool) -> Result<Option<u64>> {
    match f.opt_u64(name)? {
        Some(0) => Err(f.fail(name, "must be a positive integer")),
        None if required => Err(f.fail(name, "is required (a positive integer)")),
        other => Ok(other),
    }
}

/// Used by callers building errors with a formatted reason.
pub fn too_large(reason: R, what: &str, n: usize, cap: u64) -> PrismError {
    err(reason, format!("{what} is {n} bytes; the cap is {cap}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A request whose lone surrogates were read as U+FFFD: content members keep the
    /// replacement, identity members (nested, in keys too) refuse it with their reason.
    #[test]
    fn identities_refuse_what_a_lone_surrogate_became() {
        let text = r#"{"ownership":{"tenantId":"t"},"title":"cut \ud83d","reviewer":"user:r"}"#;
        let (v, replaced) = crate::json::parse_well_formed(text, invalid).unwrap();
        assert!(replaced);
        assert_eq!(v["title"], "cut \u{fffd}");
        identities_exact(&v).unwrap();
        for (bad, reason) in [
            (
                json!({ "ownership": { "userId": "u\u{fffd}" } }),
                R::Ownership,
            ),
            (json!({ "reviewer": "user:\u{fffd}" }), R::InvalidInput),
            (
                json!({ "identity": { "principal": { "id": "p\u{fffd}" } } }),
                R::InvalidInput,
            ),
            (json!({ "identity": { "\u{fffd}": 1 } }), R::InvalidInput),
        ] {
            let e = identities_exact(&bad).unwrap_err();
            assert_eq!(e.reason(), Some(reason.as_str()), "{bad}");
            assert!(e.message.contains("lone UTF-16 surrogate"), "{}", e.message);
        }
    }

    /// The binding's requests: an object is read member by member; a lone surrogate sends
    /// it through the general path (replaced in content, refused in identities), and text
    /// that is not an object gets the general path's message.
    #[test]
    fn requests_read_member_by_member_as_the_general_path_reads_them() {
        let text = r#"{"ownership":{"tenantId":"t"},"threadId":"th","version":2}"#;
        let m = read_request(text).unwrap();
        assert!(matches!(m, Members::Few(_)));
        let f = request_members(&m, &REQUEST_COMMON, &[&["version"]]).unwrap();
        assert_eq!(f.str("threadId").unwrap(), "th");
        assert_eq!(f.u64("version").unwrap(), 2);
        let m = read_request(r#"{"threadId":"th","title":"cut \ud83d"}"#).unwrap();
        let f = request_members(&m, &REQUEST_COMMON, &[&["title"]]).unwrap();
        assert_eq!(f.str("title").unwrap(), "cut \u{fffd}");
        let e = read_request(r#"{"ownership":{"tenantId":"cut \ud83d"}}"#).unwrap_err();
        assert_eq!(e.reason(), Some(R::Ownership.as_str()));
        assert_eq!(
            read_request("[1]").unwrap_err().message,
            "input must be an object, got array"
        );
        let e = read_request(r#"{"a":1,}"#).unwrap_err().message;
        assert!(e.starts_with("input is not valid JSON"), "{e}");
    }

    /// Read member by member, a request is checked as its value is: unknown members,
    /// prototype keys at any depth, nesting, in the same order and with the same messages.
    #[test]
    fn member_requests_are_checked_as_values_are() {
        let deep = format!("{}1{}", "[".repeat(40), "]".repeat(40));
        for text in [
            r#"{"threadId":"t","nope":1}"#.to_string(),
            r#"{"threadId":"t","__proto__":1}"#.to_string(),
            r#"{"threadId":"t","title":{"a":{"constructor":1}}}"#.to_string(),
            format!(r#"{{"threadId":"t","title":{deep}}}"#),
            r#"{"nope":1,"title":{"__proto__":1}}"#.to_string(),
            r#"{"threadId":"t","title":"x"}"#.to_string(),
        ] {
            let v: Value = serde_json::from_str(&text).unwrap();
            let m = read_request(&text).unwrap();
            let by_value = request(&v, &REQUEST_COMMON, &[&["title"]]).map(|_| ());
            let by_members = request_members(&m, &REQUEST_COMMON, &[&["title"]]).map(|_| ());
            assert_eq!(
                by_value.map_err(|e| e.message),
                by_members.map_err(|e| e.message),
                "{text}"
            );
        }
    }

    #[test]
    fn local_paths_are_detected() {
        for p in [
            "file:///etc/passwd",
            "FILE:/x",
            "/etc/passwd",
            "\\\\server\\share\\x",
            "//server/share",
            "C:\\Users\\a",
            "c:/x",
            "C:",
            "~/x",
            "./x",
            "../x",
            ".",
            "..",
            " /x",
        ] {
            assert!(is_local_path(p), "{p}");
        }
        for p in [
            "https://blob.example/doc",
            "s3://bucket/key",
            "blob:abc",
            "artifact-1",
            "mailto:a@b",
            "urn:x:y",
        ] {
            assert!(!is_local_path(p), "{p}");
        }
    }

    #[test]
    fn ids_are_bounded_and_safe() {
        let r = SecretRedactor::new(&["topsecret"]).unwrap();
        assert_eq!(id_problem("thread-1.a_b", &r), None);
        for bad in ["", "a:b", "a/b", "a b", "é", &"a".repeat(129)] {
            assert!(
                id_problem(bad, &r).unwrap().starts_with("must be 1..=128"),
                "{bad}"
            );
        }
        assert_eq!(
            id_problem("x-topsecret-y", &r).as_deref(),
            Some("holds a registered secret")
        );
    }

    #[test]
    fn ownership_needs_one_member() {
        let r = SecretRedactor::none();
        assert!(ownership(Some(&json!({"tenantId": "t"})), &r).is_ok());
        for bad in [
            json!({}),
            json!({"tenantId": ""}),
            json!({"tenantId": 1}),
            json!("t"),
            json!({"x": "y"}),
        ] {
            assert_eq!(
                ownership(Some(&bad), &r).unwrap_err().reason(),
                Some("ownership"),
                "{bad}"
            );
        }
        assert!(ownership(None, &r).is_err());
    }

    #[test]
    fn shape_refuses_proto_and_depth() {
        assert!(check_shape(&json!({"a": {"__proto__": 1}}), "input").is_err());
        let mut v = json!(1);
        for _ in 0..40 {
            v = json!([v]);
        }
        assert!(check_shape(&v, "input").is_err());
    }
}
