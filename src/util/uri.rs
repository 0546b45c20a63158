//! Percent-decoding (RFC 3986) and `file:` URIs (RFC 8089), one policy for every area.

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The bytes `text` percent-encodes; `None` for a malformed escape (`%`, `%4`, `%zz`).
pub fn percent_decode_bytes(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hi = hex_value(*bytes.get(i + 1)?)?;
            let lo = hex_value(*bytes.get(i + 2)?)?;
            out.push((hi << 4) | lo);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some(out)
}

/// Percent-decode into UTF-8 text: `None` for a malformed escape or bytes that are not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_string());
    }
    String::from_utf8(percent_decode_bytes(text)?).ok()
}

/// The decoded path bytes of a local `file:` URI: scheme in any case, authority empty or
/// `localhost` (any case), an absolute path; query and fragment are not part of the path.
/// `None` for another scheme or host, a malformed escape, or a NUL byte.
pub fn file_uri_path_bytes(uri: &str) -> Option<Vec<u8>> {
    let scheme = uri.get(..7)?;
    if !scheme.eq_ignore_ascii_case("file://") {
        return None;
    }
    let rest = uri.get(7..)?;
    let slash = rest.find('/')?;
    let authority = rest.get(..slash)?;
    if !(authority.is_empty() || authority.eq_ignore_ascii_case("localhost")) {
        return None;
    }
    let path = rest.get(slash..)?;
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes = percent_decode_bytes(path)?;
    (!bytes.contains(&0)).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(percent_decode("plain").as_deref(), Some("plain"));
        for bad in ["%", "%4", "%zz", "%ff"] {
            assert_eq!(percent_decode(bad), None, "{bad}");
        }
        assert_eq!(percent_decode_bytes("%ff"), Some(vec![0xff]));
    }

    #[test]
    fn file_uris() {
        let p = |u: &str| file_uri_path_bytes(u).map(|b| String::from_utf8(b).unwrap());
        assert_eq!(p("file:///a/b%20c").as_deref(), Some("/a/b c"));
        assert_eq!(p("FILE://localhost/x").as_deref(), Some("/x"));
        assert_eq!(p("file://LocalHost/x?q#f").as_deref(), Some("/x"));
        assert_eq!(p("file:///C:/x").as_deref(), Some("/C:/x"));
        for bad in [
            "file://host/x",
            "http:///x",
            "file:x",
            "file:///a%00b",
            "file:///%zz",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }
}
