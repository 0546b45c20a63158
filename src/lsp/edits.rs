//! Text edits: LSP `TextEdit` ranges turned into byte spans of one text, checked and
//! applied. One rule for `rename` (positions in the server's encoding) and for the
//! exported `applyTextEdits` (positions in UTF-16, JavaScript string indexes).
//!
//! A position past the end of its line is the end of that line, a line past the end of
//! the text is the end of the text (LSP: "defaults back to the line length"). Edits must
//! not overlap; inserts at one position apply in the order given.

use super::documents::{Encoding, Text};
use crate::error::{PrismError, Result};
use crate::json::{type_name, Fields};
use serde_json::Value;

/// One edit: `(start line, start character, end line, end character)` and the new text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    pub start: (u64, u64),
    pub end: (u64, u64),
    pub new_text: String,
}

/// A checked edit: byte span of the text it replaces, and its index in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub index: usize,
}

/// Byte spans of `edits` in `text` (positions counted in `enc`), sorted by position with
/// ties in input order. A span whose end precedes its start, or two spans that overlap,
/// are refused with `err(message)`.
pub fn spans(
    text: &str,
    edits: &[TextEdit],
    enc: Encoding,
    err: impl Fn(String) -> PrismError,
) -> Result<Vec<Span>> {
    let t = Text::new(text);
    let mut out = Vec::with_capacity(edits.len());
    for (index, e) in edits.iter().enumerate() {
        let start = t.offset(e.start.0, e.start.1, enc);
        let end = t.offset(e.end.0, e.end.1, enc);
        if end < start {
            return Err(err(format!("edit {index} ends before it starts")));
        }
        out.push(Span { start, end, index });
    }
    out.sort_by_key(|s| (s.start, s.end, s.index));
    for w in out.windows(2) {
        if let [a, b] = w {
            if b.start < a.end {
                return Err(err(format!("edits {} and {} overlap", a.index, b.index)));
            }
        }
    }
    Ok(out)
}

/// `text` with the checked `spans` of `edits` applied.
pub fn apply(text: &str, edits: &[TextEdit], spans: &[Span]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0usize;
    for s in spans {
        out.push_str(text.get(at..s.start).unwrap_or(""));
        if let Some(e) = edits.get(s.index) {
            out.push_str(&e.new_text);
        }
        at = s.end;
    }
    out.push_str(text.get(at..).unwrap_or(""));
    out
}

/// A non-negative integer position field.
fn position(f: &Fields<'_>, name: &str) -> Result<u64> {
    f.u64(name)
}

/// One edit as the API takes it: `{ range: { start, end }, newText }` (@arnilo/prism's
/// `LanguageTextEdit`), or the flat `{ line, character, endLine, endCharacter, newText }`
/// that `rename` returns.
pub fn parse_edit(v: &Value, path: &str) -> Result<TextEdit> {
    let f = Fields::new(v, path.to_string(), PrismError::type_error)?;
    let new_text = f.str("newText")?.to_string();
    if let Some(range) = f.opt_object("range")? {
        let start = range.object_field("start")?;
        let end = range.object_field("end")?;
        return Ok(TextEdit {
            start: (position(&start, "line")?, position(&start, "character")?),
            end: (position(&end, "line")?, position(&end, "character")?),
            new_text,
        });
    }
    Ok(TextEdit {
        start: (position(&f, "line")?, position(&f, "character")?),
        end: (position(&f, "endLine")?, position(&f, "endCharacter")?),
        new_text,
    })
}

/// `applyTextEdits(text, edits)` for the binding: the edits' spans in UTF-16 code units,
/// as `[[start, end, index], …]` in application order, so the JS layer splices the
/// caller's own string (which may hold lone surrogates) without it crossing back.
pub fn utf16_spans(text: &str, edits_json: &str) -> Result<Vec<[u64; 3]>> {
    let v = crate::json::parse(edits_json, PrismError::type_error)?;
    let Value::Array(items) = &v else {
        return Err(PrismError::type_error(format!(
            "edits must be an array, got {}",
            type_name(&v)
        )));
    };
    let edits = items
        .iter()
        .enumerate()
        .map(|(i, e)| parse_edit(e, &format!("edits[{i}]")))
        .collect::<Result<Vec<_>>>()?;
    let spans = spans(text, &edits, Encoding::Utf16, PrismError::range)?;
    // Byte offsets → UTF-16 offsets in one pass over the text.
    let mut marks: Vec<usize> = spans.iter().flat_map(|s| [s.start, s.end]).collect();
    marks.sort_unstable();
    marks.dedup();
    let mut units = std::collections::HashMap::with_capacity(marks.len());
    let (mut byte, mut unit) = (0usize, 0u64);
    let mut chars = text.char_indices();
    for m in marks {
        while byte < m {
            match chars.next() {
                Some((i, c)) => {
                    byte = i + c.len_utf8();
                    unit += c.len_utf16() as u64;
                }
                None => break,
            }
        }
        units.insert(m, unit);
    }
    let at = |b: usize| units.get(&b).copied().unwrap_or(unit);
    Ok(spans
        .iter()
        .map(|s| [at(s.start), at(s.end), s.index as u64])
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(l: u64, c: u64, el: u64, ec: u64, t: &str) -> TextEdit {
        TextEdit {
            start: (l, c),
            end: (el, ec),
            new_text: t.into(),
        }
    }

    fn run(text: &str, edits: &[TextEdit]) -> Result<String> {
        let s = spans(text, edits, Encoding::Utf16, PrismError::range)?;
        Ok(apply(text, edits, &s))
    }

    #[test]
    fn applies_in_position_order_whatever_the_input_order() {
        let edits = [edit(0, 8, 0, 11, "baz"), edit(0, 0, 0, 3, "qux")];
        assert_eq!(run("foo bar foo", &edits).unwrap(), "qux bar baz");
        let lines = [edit(1, 0, 1, 1, "Y"), edit(0, 2, 1, 0, "-\n")];
        assert_eq!(run("ab\ncd\r\nef", &lines).unwrap(), "ab-\nYd\r\nef");
    }

    #[test]
    fn positions_clamp_and_inserts_keep_their_order() {
        assert_eq!(
            run("ab\ncd", &[edit(0, 99, 0, 99, "!"), edit(9, 0, 9, 0, "$")]).unwrap(),
            "ab!\ncd$"
        );
        let inserts = [edit(0, 1, 0, 1, "x"), edit(0, 1, 0, 1, "y")];
        assert_eq!(run("ab", &inserts).unwrap(), "axyb");
        // UTF-16 columns on astral text.
        assert_eq!(run("🙂é", &[edit(0, 2, 0, 3, "e")]).unwrap(), "🙂e");
    }

    #[test]
    fn overlaps_and_inverted_ranges_are_refused() {
        let e = run("abcdef", &[edit(0, 0, 0, 3, "x"), edit(0, 2, 0, 4, "y")]).unwrap_err();
        assert_eq!(e.code(), "ERR_OUT_OF_RANGE");
        assert!(run("abc", &[edit(0, 2, 0, 1, "x")]).is_err());
        // An insert at a replace's start comes before it; touching edits do not overlap.
        assert_eq!(
            run("abc", &[edit(0, 0, 0, 2, "x"), edit(0, 0, 0, 0, "y")]).unwrap(),
            "yxc"
        );
        assert_eq!(
            run("abc", &[edit(0, 0, 0, 1, "x"), edit(0, 1, 0, 2, "y")]).unwrap(),
            "xyc"
        );
    }

    #[test]
    fn utf16_spans_of_both_edit_shapes() {
        let edits = r#"[{"file":"a.ts","newText":"B","range":{"start":{"line":0,"character":3},"end":{"line":0,"character":4}}},
                        {"line":0,"character":0,"endLine":0,"endCharacter":2,"newText":"A"}]"#;
        assert_eq!(
            utf16_spans("🙂xy", edits).unwrap(),
            vec![[0, 2, 1], [3, 4, 0]]
        );
        assert_eq!(
            utf16_spans("x", r#"[{"newText":1}]"#).unwrap_err().code(),
            "ERR_INVALID_ARG_TYPE"
        );
        assert_eq!(
            utf16_spans("x", "{}").unwrap_err().code(),
            "ERR_INVALID_ARG_TYPE"
        );
    }
}
