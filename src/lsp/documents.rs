//! Documents: workspace paths and file URIs, language ids, and exact position conversion
//! between the API's UTF-16 code units and the encoding a server negotiated.

use crate::error::{LspCode, PrismError, Result};
use std::path::{Component, Path, PathBuf};

/// Position encoding negotiated with a server (`general.positionEncodings`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

impl Encoding {
    pub fn from_server(value: Option<&str>) -> Encoding {
        match value {
            Some("utf-8") => Encoding::Utf8,
            _ => Encoding::Utf16,
        }
    }
}

/// Language id of a file, from its extension.
pub fn language_id(path: &str) -> &'static str {
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "py" | "pyi" => "python",
        "go" => "go",
        "rs" => "rust",
        "java" => "java",
        "json" => "json",
        "jsonc" => "jsonc",
        "md" | "markdown" => "markdown",
        "css" => "css",
        "html" | "htm" => "html",
        _ => "plaintext",
    }
}

fn workspace_err(message: impl Into<String>) -> PrismError {
    PrismError::lsp(LspCode::Workspace, message)
}

/// The workspace root (canonical, symlinks resolved).
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub root_uri: String,
}

impl Workspace {
    pub fn new(root: &str) -> Result<Workspace> {
        if root.is_empty() || root.contains('\0') {
            return Err(workspace_err("workspaceRoot must be a non-empty path"));
        }
        let canonical = std::fs::canonicalize(root).map_err(|e| {
            workspace_err(format!("workspaceRoot {root:?} cannot be resolved: {e}"))
        })?;
        if !canonical.is_dir() {
            return Err(workspace_err(format!(
                "workspaceRoot {root:?} is not a directory"
            )));
        }
        let root_uri = path_to_uri(&canonical);
        Ok(Workspace {
            root: canonical,
            root_uri,
        })
    }

    /// Check a caller's path without touching the file system: a usable string, and a
    /// relative path whose `..` never climbs above the root. (Absolute paths and symlinks
    /// are judged by [`Self::resolve`].)
    pub fn check_lexical(&self, file: &str) -> Result<()> {
        if file.is_empty() || file.len() > 4096 || file.contains('\0') {
            return Err(workspace_err(
                "file must be a non-empty workspace-relative path",
            ));
        }
        let mut depth = 0usize;
        for c in Path::new(file).components() {
            match c {
                Component::Prefix(_) | Component::RootDir => return Ok(()),
                Component::CurDir => {}
                Component::ParentDir => {
                    depth = depth.checked_sub(1).ok_or_else(|| {
                        workspace_err(format!("file {file:?} escapes the workspace"))
                    })?;
                }
                Component::Normal(_) => depth += 1,
            }
        }
        Ok(())
    }

    /// Resolve a caller's workspace-relative path to an existing file inside the workspace
    /// (after following symlinks). Returns the canonical path and the relative name.
    pub fn resolve(&self, file: &str) -> Result<(PathBuf, String)> {
        self.check_lexical(file)?;
        let joined = self.root.join(file);
        let canonical = std::fs::canonicalize(&joined).map_err(|e| {
            workspace_err(format!(
                "file {file:?} cannot be resolved inside the workspace: {e}"
            ))
        })?;
        let rel = self.relative(&canonical).ok_or_else(|| {
            workspace_err(format!("file {file:?} resolves outside the workspace"))
        })?;
        if !canonical.is_file() {
            return Err(workspace_err(format!("{file:?} is not a file")));
        }
        Ok((canonical, rel))
    }

    /// The workspace-relative name (forward slashes) of a canonical path inside the root.
    pub fn relative(&self, canonical: &Path) -> Option<String> {
        let rel = canonical.strip_prefix(&self.root).ok()?;
        let mut parts = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(s) => parts.push(s.to_str()?.to_string()),
                _ => return None,
            }
        }
        if parts.is_empty() {
            return None;
        }
        Some(parts.join("/"))
    }

    /// Resolve a URI a server returned: a `file:` URI of an existing file inside the
    /// workspace after following symlinks, else `None`.
    pub fn resolve_uri(&self, uri: &str) -> Option<(PathBuf, String)> {
        let path = uri_to_path(uri)?;
        let canonical = std::fs::canonicalize(path).ok()?;
        let rel = self.relative(&canonical)?;
        Some((canonical, rel))
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// `file://` URI of an absolute path, percent-encoding everything but unreserved
/// characters and `/`.
pub fn path_to_uri(path: &Path) -> String {
    let s = path.to_string_lossy();
    let mut out = String::with_capacity(s.len() + 8);
    out.push_str("file://");
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
    out
}

/// The absolute path of a `file:` URI (authority empty or `localhost`).
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let out = crate::util::uri::file_uri_path_bytes(uri)?;
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
    }
    #[cfg(not(unix))]
    {
        Some(PathBuf::from(String::from_utf8(out).ok()?))
    }
}

/// Byte ranges of the lines of `text` (without terminators); LSP terminators are
/// `\n`, `\r\n` and `\r`.
pub fn line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = vec![0usize];
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        if b == b'\n' {
            starts.push(i + 1);
        } else if b == b'\r' {
            if bytes.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            starts.push(i + 1);
        }
        i += 1;
    }
    starts
}

fn line_slice<'a>(text: &'a str, starts: &[usize], line: usize) -> Option<&'a str> {
    let start = *starts.get(line)?;
    let end = match starts.get(line + 1) {
        Some(&next) => {
            let mut e = next;
            let b = text.as_bytes();
            if e > start && b.get(e - 1) == Some(&b'\n') {
                e -= 1;
            }
            if e > start && b.get(e - 1) == Some(&b'\r') {
                e -= 1;
            }
            e
        }
        None => text.len(),
    };
    text.get(start..end)
}

/// Byte offset within `line_text` of `character` counted in `enc` units. A character
/// past the end clamps to the end; one inside a code point clamps to its start.
pub fn column_to_byte(line_text: &str, character: u64, enc: Encoding) -> usize {
    let mut units = 0u64;
    for (idx, ch) in line_text.char_indices() {
        if units >= character {
            return idx;
        }
        let w = match enc {
            Encoding::Utf8 => ch.len_utf8() as u64,
            Encoding::Utf16 => ch.len_utf16() as u64,
        };
        if units + w > character {
            return idx;
        }
        units += w;
    }
    line_text.len()
}

/// Column in `enc` units of byte offset `byte` within `line_text` (clamped).
pub fn byte_to_column(line_text: &str, byte: usize, enc: Encoding) -> u64 {
    let mut units = 0u64;
    for (idx, ch) in line_text.char_indices() {
        if idx >= byte {
            break;
        }
        units += match enc {
            Encoding::Utf8 => ch.len_utf8() as u64,
            Encoding::Utf16 => ch.len_utf16() as u64,
        };
    }
    units
}

/// A text with its line index, for position conversion.
pub struct Text<'a> {
    pub text: &'a str,
    starts: std::borrow::Cow<'a, [usize]>,
}

impl<'a> Text<'a> {
    pub fn new(text: &'a str) -> Self {
        Self {
            starts: std::borrow::Cow::Owned(line_starts(text)),
            text,
        }
    }

    /// With a line index computed before by [`line_starts`] for this very text.
    pub fn with_index(text: &'a str, starts: &'a [usize]) -> Self {
        Self {
            starts: std::borrow::Cow::Borrowed(starts),
            text,
        }
    }

    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    pub fn line(&self, line: usize) -> Option<&'a str> {
        line_slice(self.text, &self.starts, line)
    }

    /// Byte offset of (`line`, `character` in `enc`); a line past the end clamps to the
    /// end of the text.
    pub fn offset(&self, line: u64, character: u64, enc: Encoding) -> usize {
        let Ok(l) = usize::try_from(line) else {
            return self.text.len();
        };
        match (self.starts.get(l), self.line(l)) {
            (Some(&start), Some(lt)) => start + column_to_byte(lt, character, enc),
            _ => self.text.len(),
        }
    }

    /// Convert a column on `line` between encodings (clamping past the end).
    pub fn convert(&self, line: u64, character: u64, from: Encoding, to: Encoding) -> u64 {
        if from == to {
            return character;
        }
        let Some(lt) = usize::try_from(line).ok().and_then(|l| self.line(l)) else {
            return character;
        };
        byte_to_column(lt, column_to_byte(lt, character, from), to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn languages() {
        assert_eq!(language_id("a/b.ts"), "typescript");
        assert_eq!(language_id("a.tsx"), "typescriptreact");
        assert_eq!(language_id("a.cjs"), "javascript");
        assert_eq!(language_id("a.py"), "python");
        assert_eq!(language_id("a.json"), "json");
        assert_eq!(language_id("Makefile"), "plaintext");
    }

    #[test]
    fn uris_round_trip() {
        let p = Path::new("/tmp/a b/é🙂%.ts");
        let u = path_to_uri(p);
        assert_eq!(u, "file:///tmp/a%20b/%C3%A9%F0%9F%99%82%25.ts");
        assert_eq!(uri_to_path(&u).unwrap(), p);
        assert_eq!(uri_to_path("file:///C%3A/x").unwrap(), Path::new("/C:/x"));
        assert!(uri_to_path("http://x/y").is_none());
        assert!(uri_to_path("file:///a%00b").is_none());
        assert!(uri_to_path("file:///a%zz").is_none());
    }

    #[test]
    fn positions_on_astral_and_accents() {
        let t = Text::new("a🙂é = 1\r\nnext\rlast");
        assert_eq!(t.line_count(), 3);
        assert_eq!(t.line(1), Some("next"));
        assert_eq!(t.line(2), Some("last"));
        // 'é' is at UTF-16 column 3 (a=1, 🙂=2), UTF-8 column 5.
        assert_eq!(t.convert(0, 3, Encoding::Utf16, Encoding::Utf8), 5);
        assert_eq!(t.convert(0, 5, Encoding::Utf8, Encoding::Utf16), 3);
        assert_eq!(&t.text[t.offset(0, 3, Encoding::Utf16)..][..2], "é");
        assert_eq!(t.offset(1, 0, Encoding::Utf16), "a🙂é = 1\r\n".len());
        // Clamping.
        assert_eq!(t.offset(0, 999, Encoding::Utf16), "a🙂é = 1".len());
        assert_eq!(t.offset(9, 0, Encoding::Utf16), t.text.len());
        // Inside a surrogate pair clamps to the code point start.
        assert_eq!(t.offset(0, 2, Encoding::Utf16), 1);
    }

    proptest! {
        #[test]
        fn utf16_utf8_round_trip(s in "\\PC{0,40}", k in 0usize..40) {
            let line: String = s.chars().filter(|c| *c != '\n' && *c != '\r').collect();
            let chars: Vec<char> = line.chars().collect();
            let k = k.min(chars.len());
            let u16col: u64 = chars[..k].iter().map(|c| c.len_utf16() as u64).sum();
            let u8col: u64 = chars[..k].iter().map(|c| c.len_utf8() as u64).sum();
            let t = Text::new(&line);
            prop_assert_eq!(t.convert(0, u16col, Encoding::Utf16, Encoding::Utf8), u8col);
            prop_assert_eq!(t.convert(0, u8col, Encoding::Utf8, Encoding::Utf16), u16col);
        }
    }
}
