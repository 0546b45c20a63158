//! Lexical workspace containment for diagnostic file paths.
//!
//! Rules (lexical only: the file system is never consulted, symlinks are not resolved):
//! - `\` is a path separator, like `/` (compilers on Windows print `src\a.ts`; treating it
//!   as a separator everywhere also stops `..\..\x` from slipping past as one component).
//! - A `file://` URI (empty or `localhost` authority) is percent-decoded to its path.
//! - Absolute paths are `/…` or `X:/…` (drive letters compare case-insensitively); they are
//!   kept only inside the workspace root and become root-relative.
//! - `.` and empty components vanish; `..` pops a component; a `..` with nothing to pop
//!   escapes and the path is dropped. Drive-relative `X:foo`, empty results and paths with
//!   control characters are dropped.
//! - The result uses `/` separators and never starts with `/` or `./`.

use std::borrow::Cow;

/// The longest file path (after normalization) a diagnostic may carry, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// A normalized absolute path: optional drive letter (uppercase) and components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbsPath {
    drive: Option<char>,
    parts: Vec<String>,
}

fn drive_prefix(s: &str) -> Option<(char, &str)> {
    let mut it = s.chars();
    let d = it.next()?;
    if d.is_ascii_alphabetic() && it.next() == Some(':') {
        Some((d.to_ascii_uppercase(), s.get(2..).unwrap_or("")))
    } else {
        None
    }
}

/// The path of a `file:` URI, or `None` when it is not a usable local file URI.
fn file_uri_path(s: &str) -> Option<String> {
    let path = String::from_utf8(crate::util::uri::file_uri_path_bytes(s)?).ok()?;
    // `file:///C:/x` names `C:/x`.
    match path.strip_prefix('/') {
        Some(p) if drive_prefix(p).is_some() => Some(p.to_string()),
        _ => Some(path),
    }
}

enum Split<'a> {
    Absolute(Option<char>, &'a str),
    Relative(&'a str),
}

fn split(s: &str) -> Option<Split<'_>> {
    if let Some((d, rest)) = drive_prefix(s) {
        // `C:foo` is relative to the current directory of drive C: ambiguous, dropped.
        return if rest.starts_with('/') {
            Some(Split::Absolute(Some(d), rest))
        } else {
            None
        };
    }
    if s.starts_with('/') {
        Some(Split::Absolute(None, s))
    } else {
        Some(Split::Relative(s))
    }
}

/// Push the components of `s` onto `parts`; `None` when a `..` escapes.
fn push_components<'a>(parts: &mut Vec<&'a str>, s: &'a str) -> Option<()> {
    for comp in s.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(())
}

fn prepare(raw: &str) -> Option<Cow<'_, str>> {
    let s: Cow<'_, str> = if raw.starts_with("file:") {
        Cow::Owned(file_uri_path(raw)?)
    } else {
        Cow::Borrowed(raw)
    };
    if super::text::has_any_control(&s) {
        return None;
    }
    if s.contains('\\') {
        Some(Cow::Owned(s.replace('\\', "/")))
    } else {
        Some(s)
    }
}

/// Parse a workspace root: it must be absolute and must not escape above `/`.
pub fn parse_root(raw: &str) -> Option<AbsPath> {
    let s = prepare(raw)?;
    match split(&s)? {
        Split::Absolute(drive, rest) => {
            let mut parts = Vec::new();
            push_components(&mut parts, rest)?;
            let parts = parts.into_iter().map(str::to_string).collect();
            Some(AbsPath { drive, parts })
        }
        Split::Relative(_) => None,
    }
}

/// The workspace-relative form of `raw`, or `None` when it is outside the workspace or
/// not a usable path.
pub fn relativize(raw: &str, root: &AbsPath) -> Option<String> {
    if raw.is_empty() || raw.len() > MAX_PATH_BYTES * 3 {
        return None;
    }
    let s = prepare(raw)?;
    let parts = match split(&s)? {
        Split::Relative(rest) => {
            let mut parts = Vec::new();
            push_components(&mut parts, rest)?;
            parts
        }
        Split::Absolute(drive, rest) => {
            if drive != root.drive {
                return None;
            }
            let mut parts = Vec::new();
            push_components(&mut parts, rest)?;
            if parts.len() <= root.parts.len()
                || !parts.iter().zip(&root.parts).all(|(a, b)| *a == b.as_str())
            {
                return None;
            }
            parts.drain(..root.parts.len());
            parts
        }
    };
    if parts.is_empty() {
        return None;
    }
    let out = parts.join("/");
    if out.len() > MAX_PATH_BYTES {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(p: &str) -> Option<String> {
        relativize(p, &parse_root("/work/repo").unwrap())
    }

    #[test]
    fn relative_paths_normalize_lexically() {
        assert_eq!(rel("src/a.ts").as_deref(), Some("src/a.ts"));
        assert_eq!(rel("./a/../b").as_deref(), Some("b"));
        assert_eq!(rel("a//b/./c/").as_deref(), Some("a/b/c"));
        assert_eq!(rel("src\\lib\\a.rs").as_deref(), Some("src/lib/a.rs"));
        assert_eq!(rel("a/../../b"), None);
        assert_eq!(rel("../repo/a"), None);
        assert_eq!(rel("..\\..\\etc\\passwd"), None);
        assert_eq!(rel("."), None);
        assert_eq!(rel("a/.."), None);
        assert_eq!(rel(""), None);
        assert_eq!(rel("a\nb"), None);
        assert_eq!(rel("a\u{0}b"), None);
        assert_eq!(rel("C:foo"), None);
    }

    #[test]
    fn absolute_paths_inside_the_root_become_relative() {
        assert_eq!(rel("/work/repo/src/a.ts").as_deref(), Some("src/a.ts"));
        assert_eq!(rel("/work/repo/./x/../y").as_deref(), Some("y"));
        assert_eq!(rel("/work/repo"), None);
        assert_eq!(rel("/work/repo/"), None);
        assert_eq!(rel("/work/repo-other/a"), None);
        assert_eq!(rel("/work/repo/../other/a"), None);
        assert_eq!(rel("/etc/passwd"), None);
        assert_eq!(rel("/../work/repo/a"), None);
        assert_eq!(rel("C:/work/repo/a"), None);
    }

    #[test]
    fn file_uris_and_windows_roots() {
        assert_eq!(
            rel("file:///work/repo/src/a%20b.ts").as_deref(),
            Some("src/a b.ts")
        );
        assert_eq!(rel("file://localhost/work/repo/a").as_deref(), Some("a"));
        assert_eq!(rel("file://host/work/repo/a"), None);
        assert_eq!(rel("file:///work/repo/%ZZ"), None);
        assert_eq!(rel("file:///work/repo/a%0Ab"), None);
        let win = parse_root("c:\\Users\\me\\proj").unwrap();
        assert_eq!(
            relativize("C:\\Users\\me\\proj\\src\\a.ts", &win).as_deref(),
            Some("src/a.ts")
        );
        assert_eq!(
            relativize("file:///c%3A/Users/me/proj/b.ts", &win).as_deref(),
            Some("b.ts")
        );
        assert_eq!(relativize("D:\\Users\\me\\proj\\a.ts", &win), None);
        assert_eq!(relativize("/Users/me/proj/a.ts", &win), None);
    }

    #[test]
    fn roots_must_be_absolute() {
        assert!(parse_root("relative/root").is_none());
        assert!(parse_root("").is_none());
        assert!(parse_root("/..").is_none());
        assert!(parse_root("C:x").is_none());
        let slash = parse_root("/").unwrap();
        assert_eq!(
            relativize("/etc/hosts", &slash).as_deref(),
            Some("etc/hosts")
        );
    }

    #[test]
    fn long_paths_are_dropped() {
        let long = "a/".repeat(MAX_PATH_BYTES);
        assert_eq!(rel(&long), None);
        let ok = "a".repeat(MAX_PATH_BYTES);
        assert_eq!(rel(&ok).map(|s| s.len()), Some(MAX_PATH_BYTES));
    }
}
