//! Text rules for diagnostics: control-character stripping and UTF-8 truncation.

use std::borrow::Cow;

/// The longest prefix of `s` that is at most `max_bytes` bytes of UTF-8 and ends on a
/// character boundary. Never adds anything: the result is always a prefix of `s`.
pub fn truncate_utf8(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    // A UTF-8 character is at most 4 bytes, so this walks back at most 3 steps.
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

/// A Unicode control character (general category Cc: C0, DEL, C1) other than
/// tab and line feed, which messages keep.
fn is_stripped_control(c: char) -> bool {
    c.is_control() && c != '\t' && c != '\n'
}

/// True when `s` has something [`strip_controls`] would remove. Scans 64-byte blocks with
/// a branch-free test (which the compiler vectorizes) and looks closely only at blocks
/// holding a candidate byte (C0, DEL, or the `C2` lead byte of U+0080..U+00BF).
fn has_controls(s: &str) -> bool {
    let bytes = s.as_bytes();
    let exact = |from: usize, to: usize| {
        (from..to).any(|i| match bytes.get(i) {
            Some(&b) => {
                (b < 0x20 && b != b'\t' && b != b'\n')
                    || b == 0x7f
                    // C1 controls U+0080..U+009F are encoded as C2 80..C2 9F.
                    || (b == 0xc2 && matches!(bytes.get(i + 1), Some(0x80..=0x9f)))
            }
            None => false,
        })
    };
    let mut start = 0;
    for block in bytes.chunks(64) {
        let candidate = block.iter().fold(false, |acc, &b| {
            acc | (b < 0x20) | (b == 0x7f) | (b == 0xc2)
        });
        if candidate && exact(start, start + block.len()) {
            return true;
        }
        start += block.len();
    }
    false
}

/// Strip control characters: every Unicode `Cc` character except `\t` and `\n` (so `\r\n`
/// becomes `\n`). Terminal escape sequences are removed whole, not just their `ESC`: a
/// CSI sequence (`ESC [` parameters, final byte `@`..`~`, e.g. colours `ESC[31m`) and an
/// OSC sequence (`ESC ]` … `BEL` or `ESC \`, e.g. hyperlinks). Borrowed when nothing changes.
pub fn strip_controls(s: &str) -> Cow<'_, str> {
    if !has_controls(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.peek() {
                Some('[') => {
                    chars.next();
                    // Parameter and intermediate bytes, then one final byte.
                    while let Some(&p) = chars.peek() {
                        if ('\u{20}'..='\u{3f}').contains(&p) {
                            chars.next();
                        } else {
                            if ('\u{40}'..='\u{7e}').contains(&p) {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    while let Some(p) = chars.next() {
                        if p == '\u{7}' {
                            break;
                        }
                        if p == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        if !is_stripped_control(c) {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// True when `s` contains any `Cc` control character (tab and newline included).
pub fn has_any_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// UTF-16 code units (a JavaScript string) as UTF-8 text, and whether it was exact: a lone
/// surrogate becomes U+FFFD and makes it inexact. Same result as
/// `String::from_utf16_lossy`, in one tight pass.
pub fn utf16_to_string(units: &[u16]) -> (String, bool) {
    let mut out: Vec<u8> = Vec::with_capacity(units.len().saturating_mul(3));
    let mut exact = true;
    let mut i = 0;
    while let Some(&u) = units.get(i) {
        i += 1;
        let c = u32::from(u);
        if c < 0x80 {
            out.push(c as u8);
        } else if c < 0x800 {
            out.extend_from_slice(&[0xc0 | (c >> 6) as u8, 0x80 | (c & 0x3f) as u8]);
        } else if !(0xd800..=0xdfff).contains(&c) {
            out.extend_from_slice(&[
                0xe0 | (c >> 12) as u8,
                0x80 | ((c >> 6) & 0x3f) as u8,
                0x80 | (c & 0x3f) as u8,
            ]);
        } else {
            match units.get(i).map(|&l| u32::from(l)) {
                Some(lo) if c < 0xdc00 && (0xdc00..=0xdfff).contains(&lo) => {
                    i += 1;
                    let cp = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                    out.extend_from_slice(&[
                        0xf0 | (cp >> 18) as u8,
                        0x80 | ((cp >> 12) & 0x3f) as u8,
                        0x80 | ((cp >> 6) & 0x3f) as u8,
                        0x80 | (cp & 0x3f) as u8,
                    ]);
                }
                _ => {
                    exact = false;
                    out.extend_from_slice("\u{fffd}".as_bytes());
                }
            }
        }
    }
    // The encoder above only writes well-formed UTF-8; the check is cheap insurance.
    match String::from_utf8(out) {
        Ok(s) => (s, exact),
        Err(_) => (String::from_utf16_lossy(units), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn truncation_never_splits_a_character() {
        let s = "a\u{e9}\u{20ac}\u{1f600}"; // 1 + 2 + 3 + 4 bytes
        assert_eq!(truncate_utf8(s, 0), "");
        assert_eq!(truncate_utf8(s, 1), "a");
        assert_eq!(truncate_utf8(s, 2), "a");
        assert_eq!(truncate_utf8(s, 3), "a\u{e9}");
        assert_eq!(truncate_utf8(s, 5), "a\u{e9}");
        assert_eq!(truncate_utf8(s, 6), "a\u{e9}\u{20ac}");
        assert_eq!(truncate_utf8(s, 9), "a\u{e9}\u{20ac}");
        assert_eq!(truncate_utf8(s, 10), s);
        assert_eq!(truncate_utf8(s, 100), s);
    }

    #[test]
    fn strips_controls_keeps_tab_and_newline() {
        assert_eq!(
            strip_controls("a\u{0}b\r\nc\td\u{7f}e\u{85}f\u{9f}g"),
            "ab\nc\tdefg"
        );
        assert_eq!(strip_controls("\u{1b}[1;31merror\u{1b}[0m: x"), "error: x");
        assert_eq!(
            strip_controls("see \u{1b}]8;;https://x.test\u{7}link\u{1b}]8;;\u{1b}\\ now"),
            "see link now"
        );
        assert_eq!(strip_controls("lone \u{1b} esc"), "lone  esc");
        assert!(matches!(
            strip_controls("plain \u{e9} text\n"),
            Cow::Borrowed(_)
        ));
        // Non-control characters from the same UTF-8 lead byte as C1 survive.
        assert_eq!(strip_controls("\u{a0}\u{bf}\u{85}"), "\u{a0}\u{bf}");
    }

    proptest! {
        #[test]
        fn utf16_conversion_matches_std(units in prop::collection::vec(any::<u16>(), 0..64), text in any::<String>()) {
            let (s, exact) = utf16_to_string(&units);
            prop_assert_eq!(&s, &String::from_utf16_lossy(&units));
            prop_assert_eq!(exact, String::from_utf16(&units).is_ok());
            let wide: Vec<u16> = text.encode_utf16().collect();
            prop_assert_eq!(utf16_to_string(&wide), (text.clone(), true));
        }

        #[test]
        fn truncation_is_a_bounded_char_boundary_prefix(s in any::<String>(), max in 0usize..64) {
            let t = truncate_utf8(&s, max);
            prop_assert!(t.len() <= max);
            prop_assert!(s.starts_with(t));
            prop_assert!(s.is_char_boundary(t.len()));
            // Maximal: the next character would not fit.
            if t.len() < s.len() {
                let next = s[t.len()..].chars().next().map(char::len_utf8).unwrap_or(0);
                prop_assert!(t.len() + next > max);
            }
        }

        #[test]
        fn stripped_text_has_no_controls(s in any::<String>()) {
            let out = strip_controls(&s);
            prop_assert!(!out.chars().any(is_stripped_control));
            // Only removes: every kept character comes from the input, in order.
            let mut it = s.chars();
            for c in out.chars() {
                prop_assert!(it.any(|x| x == c));
            }
        }
    }
}
