//! Field validators shared by the manifest and acceptance code: identifiers, workspace-relative
//! paths, artifact URIs, hex digests, timestamps, and summary text cleaning.

use crate::error::{PrismError, Result, ReviewCode};
use crate::json::Fields;

/// Longest identifier (thread, artifact, repository, branch, ref, check name, review id), in bytes.
pub const IDENT_BYTES: usize = 1024;
/// Longest workspace-relative path, in bytes.
pub const PATH_BYTES: usize = 4096;

pub(crate) fn input_err(message: String) -> PrismError {
    PrismError::review(ReviewCode::Input, message)
}

pub(crate) fn limit_err(message: String) -> PrismError {
    PrismError::review(ReviewCode::Limit, message)
}

/// Refuse every member of `f` not named in `allowed`.
pub(crate) fn deny_unknown(f: &Fields<'_>, allowed: &[&str]) -> Result<()> {
    for key in f.names() {
        if !allowed.contains(&key) {
            return Err(input_err(format!(
                "{}{}",
                f.path(&display_key(key)),
                unknown_field_message(key, allowed)
            )));
        }
    }
    Ok(())
}

/// What follows an unknown member's path in its message. Unknown members never reach the
/// manifest: a caller who passes `patch.body`, `command` or `env` learns at once that the
/// manifest does not bind (or carry) them.
pub(crate) fn unknown_field_message(key: &str, allowed: &[&str]) -> String {
    let hint = match key {
        "body" | "content" | "diff" | "patch" | "command" | "commands" | "env" | "environment"
        | "secret" | "secrets" | "token" | "password" | "credentials" => {
            " (a review manifest never embeds patch bodies, commands, environment or secrets)"
        }
        _ => "",
    };
    format!(
        " is not a known field{hint}; known fields: {}",
        allowed.join(", ")
    )
}

/// A key as shown in a message: bounded and free of control characters.
pub(crate) fn display_key(key: &str) -> String {
    let mut chars = key.chars().filter(|c| !c.is_control());
    let cleaned: String = chars.by_ref().take(64).collect();
    if chars.next().is_some() {
        format!("{cleaned}…")
    } else {
        cleaned
    }
}

/// A thread, artifact, repository or review id (@arnilo/prism's rule):
/// `[A-Za-z0-9][A-Za-z0-9._:-]*`, at most [`IDENT_BYTES`].
pub(crate) fn check_id(s: &str, path: &str) -> Result<()> {
    let b = s.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'));
    if !ok {
        return Err(input_err(format!(
            "{path} must match [A-Za-z0-9][A-Za-z0-9._:-]*"
        )));
    }
    if b.len() > IDENT_BYTES {
        return Err(input_err(format!(
            "{path} is {} bytes; at most {IDENT_BYTES} bytes",
            b.len()
        )));
    }
    Ok(())
}

/// A check name (@arnilo/prism's rule): `[A-Za-z][A-Za-z0-9_-]{0,63}`.
pub(crate) fn check_name(s: &str, path: &str) -> Result<()> {
    let b = s.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.len() <= 64
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(input_err(format!(
            "{path} must match [A-Za-z][A-Za-z0-9_-]{{0,63}}"
        )))
    }
}

/// Longest ref (`defaultBranch`, `base`, `head`), in UTF-16 code units as @arnilo/prism counts.
pub const REF_UNITS: usize = 255;

/// A branch, ref or commit id (`defaultBranch`, `base`, `head`): 1..=255 characters without
/// whitespace or `..` (@arnilo/prism's rule), and a valid git ref name
/// (`git check-ref-format --allow-onelevel`): no control characters, none of `~ ^ : ? * [ \`,
/// no `@{`, not `@`, no leading, trailing or doubled `/`, no component starting with `.` or
/// ending with `.lock`, not ending with `.`. A commit id (hex) is such a name.
pub(crate) fn check_ref(s: &str, path: &str) -> Result<()> {
    let fail = |why: &str| {
        Err(input_err(format!(
            "{path} must be a git ref name or commit id: {why}"
        )))
    };
    let units = s.encode_utf16().count();
    if units == 0 || units > REF_UNITS {
        return fail("1 to 255 characters");
    }
    if s.chars().any(|c| c.is_whitespace() || c == '\u{feff}') {
        return fail("no whitespace");
    }
    if s.chars().any(char::is_control) {
        return fail("no control characters");
    }
    if s.contains("..") {
        return fail("no '..'");
    }
    if let Some(c) = s.chars().find(|c| "~^:?*[\\".contains(*c)) {
        return fail(&format!("no '{c}'"));
    }
    if s.contains("@{") || s == "@" {
        return fail("no '@{' and not '@'");
    }
    if s.starts_with('/') || s.ends_with('/') || s.contains("//") {
        return fail("no leading, trailing or doubled '/'");
    }
    if s.ends_with('.') {
        return fail("not ending with '.'");
    }
    if s.split('/')
        .any(|c| c.starts_with('.') || c.ends_with(".lock"))
    {
        return fail("no component starting with '.' or ending with '.lock'");
    }
    Ok(())
}

pub(crate) fn check_ident(s: &str, path: &str) -> Result<()> {
    if s.trim().is_empty() {
        return Err(input_err(format!("{path} must not be empty")));
    }
    if s.len() > IDENT_BYTES {
        return Err(input_err(format!(
            "{path} is {} bytes; at most {IDENT_BYTES} bytes",
            s.len()
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(input_err(format!(
            "{path} must not contain control characters"
        )));
    }
    Ok(())
}

/// A workspace-relative path: non-empty, at most [`PATH_BYTES`], `/`-separated segments that
/// are neither empty, `.` nor `..`; not absolute (`/…`), not a drive path (`C:…`), no
/// backslash, no control characters.
pub(crate) fn check_rel_path(s: &str, path: &str) -> Result<()> {
    if s.is_empty() {
        return Err(input_err(format!("{path} must not be empty")));
    }
    if s.len() > PATH_BYTES {
        return Err(input_err(format!(
            "{path} is {} bytes; at most {PATH_BYTES} bytes",
            s.len()
        )));
    }
    if s.starts_with('/') {
        return Err(input_err(format!(
            "{path} must be workspace-relative, not absolute"
        )));
    }
    if is_drive_prefixed(s) {
        return Err(input_err(format!(
            "{path} must be workspace-relative, not a drive path"
        )));
    }
    let b = s.as_bytes();
    // Fast path (branch-free, so it vectorizes): no byte below 0x20, DEL, backslash, or
    // 0xC2 (the UTF-8 lead byte of the C1 controls). Then only the segments need a look.
    let plain = b.iter().fold(true, |acc, &c| {
        acc & (c >= 0x20) & (c != 0x7f) & (c != b'\\') & (c != 0xc2)
    });
    if plain {
        // Segments: none empty, none made of one or two dots only.
        let (mut len, mut dots) = (0usize, 0usize);
        for &c in b {
            if c == b'/' {
                if len == 0 || (len == dots && dots <= 2) {
                    break;
                }
                len = 0;
                dots = 0;
            } else {
                len += 1;
                dots += usize::from(c == b'.');
            }
        }
        if len != 0 && !(len == dots && dots <= 2) {
            return Ok(());
        }
        // Some segment is bad: find and name it on the slow path below.
    }
    // Slow path, one pass: control characters (C0, DEL, and C1 as UTF-8 `C2 80..9F`),
    // backslashes, and the segments between '/'.
    let mut seg_start = 0;
    for (i, &c) in b.iter().enumerate() {
        match c {
            0..=0x1f | 0x7f => return Err(control(path)),
            0xc2 if matches!(b.get(i + 1), Some(0x80..=0x9f)) => return Err(control(path)),
            b'\\' => {
                return Err(input_err(format!(
                    "{path} must use '/' separators (no backslash)"
                )))
            }
            b'/' => {
                check_segment(b.get(seg_start..i).unwrap_or_default(), path)?;
                seg_start = i + 1;
            }
            _ => {}
        }
    }
    check_segment(b.get(seg_start..).unwrap_or_default(), path)
}

fn control(path: &str) -> PrismError {
    input_err(format!("{path} must not contain control characters"))
}

fn check_segment(seg: &[u8], path: &str) -> Result<()> {
    match seg {
        b"" => Err(input_err(format!(
            "{path} must not contain empty segments ('//' or a trailing '/')"
        ))),
        b"." | b".." => Err(input_err(format!(
            "{path} must not contain '.' or '..' segments"
        ))),
        _ => Ok(()),
    }
}

fn is_drive_prefixed(s: &str) -> bool {
    let b = s.as_bytes();
    matches!(b, [first, b':', ..] if first.is_ascii_alphabetic())
}

/// Exactly 64 lowercase hex digits (a SHA-256).
pub(crate) fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A patch kind becomes the MIME subtype `application/x-<kind>`: a lowercase token of
/// 1..=64 characters from `a-z 0-9 . + -`, starting with a letter or digit.
pub(crate) fn check_kind(s: &str, path: &str) -> Result<()> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 64
        && b.first()
            .is_some_and(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        && b.iter().all(|c| {
            c.is_ascii_digit() || c.is_ascii_lowercase() || matches!(c, b'.' | b'+' | b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(input_err(format!(
            "{path} must be a lowercase MIME token (a-z 0-9 . + -, 1..64 characters), e.g. \"patch\""
        )))
    }
}

/// Query parameter names that carry credentials; a URI holding one is refused.
const SECRET_PARAMS: &[&str] = &[
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "signature",
    "sig",
    "token",
    "access_token",
    "id_token",
    "api_key",
    "apikey",
    "key",
    "password",
    "secret",
    "client_secret",
];

/// A patch artifact URI: at most `max_bytes` (else `ERR_PRISM_REVIEW_LIMIT`), no whitespace,
/// control characters or backslashes; not a local filesystem path (`file:`, absolute, drive);
/// not a `data:`/`javascript:` URI (which would embed a body); no credentials (userinfo or
/// credential query parameters); a relative reference has no `.`/`..` segments.
pub(crate) fn check_uri(s: &str, path: &str, max_bytes: usize) -> Result<()> {
    if s.len() > max_bytes {
        return Err(limit_err(format!(
            "{path} is {} bytes; the cap is {max_bytes} bytes",
            s.len()
        )));
    }
    if s.is_empty() {
        return Err(input_err(format!("{path} must not be empty")));
    }
    if s.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(input_err(format!(
            "{path} must not contain whitespace or control characters"
        )));
    }
    if s.contains('\\') {
        return Err(input_err(format!("{path} must not contain backslashes")));
    }
    let (before_query, query) = match s.find(['?', '#']) {
        Some(i) => (s.get(..i).unwrap_or(s), s.get(i..).unwrap_or("")),
        None => (s, ""),
    };
    if let Some(scheme) = scheme_of(before_query) {
        let lower = scheme.to_ascii_lowercase();
        if scheme.len() == 1 {
            return Err(input_err(format!("{path} must not be a local drive path")));
        }
        if matches!(
            lower.as_str(),
            "file" | "data" | "javascript" | "vbscript" | "blob"
        ) {
            return Err(input_err(format!(
                "{path} must not use the '{lower}:' scheme (a reference to the host artifact store, never a local path or an embedded body)"
            )));
        }
        let rest = before_query.get(scheme.len() + 1..).unwrap_or("");
        if let Some(auth) = rest.strip_prefix("//") {
            let authority = auth.split('/').next().unwrap_or("");
            if authority.contains('@') {
                return Err(input_err(format!(
                    "{path} must not carry credentials (user info)"
                )));
            }
        }
    } else {
        if before_query.starts_with('/') {
            return Err(input_err(format!(
                "{path} must not be an absolute local path"
            )));
        }
        if before_query.split('/').any(|seg| seg == "." || seg == "..") {
            return Err(input_err(format!(
                "{path} must not contain '.' or '..' segments"
            )));
        }
    }
    if let Some(q) = query.strip_prefix('?') {
        let q = q.split('#').next().unwrap_or("");
        for pair in q.split('&') {
            let name = pair.split('=').next().unwrap_or("").to_ascii_lowercase();
            if SECRET_PARAMS.contains(&name.as_str()) {
                return Err(input_err(format!(
                    "{path} must not carry credentials (query parameter '{name}')"
                )));
            }
        }
    }
    Ok(())
}

/// The scheme of an absolute URI (`[A-Za-z][A-Za-z0-9+.-]*:`), if any.
fn scheme_of(s: &str) -> Option<&str> {
    let colon = s.find(':')?;
    let scheme = s.get(..colon)?;
    let mut bytes = scheme.bytes();
    let first = bytes.next()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    if bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')) {
        Some(scheme)
    } else {
        None
    }
}

/// Remove control characters (every Unicode `Cc` except `\n` and `\t`) and the bidirectional
/// override/isolate characters (U+202A..U+202E, U+2066..U+2069) that can disguise text.
pub(crate) fn strip_controls(s: &str) -> String {
    s.chars()
        .filter(|&c| {
            !((c.is_control() && c != '\n' && c != '\t')
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c))
        })
        .collect()
}

pub(crate) use crate::diagnostics::text::truncate_utf8;

/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`, a real calendar date and time of day (UTC only).
pub fn is_iso_utc(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 20 || b.len() > 30 || b.last() != Some(&b'Z') {
        return false;
    }
    let num = |from: usize, len: usize| -> Option<u32> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(
            part.iter()
                .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0')),
        )
    };
    let sep = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
        return false;
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(min), Some(sec)) = (
        num(0, 4),
        num(5, 2),
        num(8, 2),
        num(11, 2),
        num(14, 2),
        num(17, 2),
    ) else {
        return false;
    };
    // Fraction: nothing, or '.' followed by 1..=9 digits, then the final 'Z'.
    let frac = b.get(19..b.len() - 1).unwrap_or(&[]);
    if !frac.is_empty() {
        let ok = frac.first() == Some(&b'.')
            && (2..=10).contains(&frac.len())
            && frac.iter().skip(1).all(u8::is_ascii_digit);
        if !ok {
            return false;
        }
    }
    (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
        && hour < 24
        && min < 60
        && sec < 60
}

fn is_leap(year: u32) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => 0,
    }
}

/// A JSON array member by index, with a path for messages.
pub(crate) fn elem_path(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        for ok in [
            "src/a.ts",
            "a",
            "dir/sub/file.rs",
            "~/x",
            ".github/workflows/ci.yml",
            "a..b/c",
            "...",
            "\u{e9}/\u{fc}\u{a0}/\u{1f600}",
            "\u{a9}2026/\u{100}",
            "with space/and\"quote",
        ] {
            assert!(check_rel_path(ok, "p").is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a/./b",
            "./a",
            "a//b",
            "a/",
            "C:/x",
            "c:x",
            "a\\b",
            "a\u{0}b",
            "a\nb",
            "a\u{7f}",
            "\u{e9}/a\u{85}b",
            "a\u{9f}",
            "\u{e9}\\x",
            "\u{a9}/../x",
            "\u{a9}//x",
            "/",
            ".",
            "..",
        ] {
            assert!(check_rel_path(bad, "p").is_err(), "{bad:?}");
        }
        assert!(check_rel_path(&"a".repeat(PATH_BYTES + 1), "p").is_err());
    }

    #[test]
    fn uris() {
        for ok in [
            "artifacts/patch-1.patch",
            "https://blob.example/p/1.patch",
            "s3://bucket/key.patch?versionId=3",
            "artifact://thread-1/patch-1",
        ] {
            assert!(check_uri(ok, "u", 2048).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "file:///etc/passwd",
            "FILE:/x",
            "data:text/x-patch;base64,AAAA",
            "/abs/path.patch",
            "C:/x.patch",
            "c:\\x",
            "https://user:pw@host/x",
            "https://host/x?X-Amz-Signature=abc",
            "https://host/x?a=1&token=abc",
            "a/../b",
            "has space",
            "a\u{7}b",
        ] {
            assert!(check_uri(bad, "u", 2048).is_err(), "{bad:?}");
        }
        let long = format!("https://h/{}", "a".repeat(2048));
        let e = check_uri(&long, "u", 2048).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Review(ReviewCode::Limit));
    }

    #[test]
    fn kinds_and_hex() {
        assert!(check_kind("patch", "k").is_ok());
        assert!(check_kind("git-diff+v2", "k").is_ok());
        for bad in ["", "Patch", "pa tch", "-x", "a/b", &"a".repeat(65)] {
            assert!(check_kind(bad, "k").is_err(), "{bad:?}");
        }
        assert!(is_hex64(&"a".repeat(64)));
        assert!(!is_hex64(&"A".repeat(64)));
        assert!(!is_hex64(&"a".repeat(63)));
        assert!(!is_hex64(&"g".repeat(64)));
    }

    #[test]
    fn iso_timestamps() {
        for ok in [
            "2026-01-02T03:04:05Z",
            "2026-01-02T03:04:05.123Z",
            "2024-02-29T23:59:59.123456789Z",
            "2000-02-29T00:00:00Z",
        ] {
            assert!(is_iso_utc(ok), "{ok}");
        }
        for bad in [
            "2026-01-02",
            "2026-01-02T03:04:05",
            "2026-01-02T03:04:05+00:00",
            "2026-01-02t03:04:05z",
            "2026-13-02T03:04:05Z",
            "2026-02-29T03:04:05Z",
            "1900-02-29T03:04:05Z",
            "2026-04-31T03:04:05Z",
            "2026-01-02T24:00:00Z",
            "2026-01-02T03:60:00Z",
            "2026-01-02T03:04:60Z",
            "2026-01-02T03:04:05.Z",
            "2026-01-02T03:04:05.1234567890Z",
            "２０２6-01-02T03:04:05Z",
            "",
        ] {
            assert!(!is_iso_utc(bad), "{bad}");
        }
        assert!(is_iso_utc(&crate::util::time::now_iso()));
    }

    #[test]
    fn strip_and_truncate() {
        assert_eq!(
            strip_controls("ok\u{1b}[31m red\r\n\tx\u{202e}y\u{7f}"),
            "ok[31m red\n\txy"
        );
        assert_eq!(truncate_utf8("héllo", 2), "h");
        assert_eq!(truncate_utf8("héllo", 3), "hé");
        assert_eq!(truncate_utf8("😀", 3), "");
        assert_eq!(truncate_utf8("abc", 10), "abc");
    }
}
