//! Navigation: hover, definitions, references and workspace symbols through typed
//! requests; positions in UTF-16 whatever encoding the server negotiated, locations only
//! inside the workspace.

use super::{lsp, type_err, Intelligence};
use crate::error::{LspCode, Result};
use crate::json::Fields;
use crate::lsp::client::{uri, Capability, Session};
use crate::lsp::documents::{path_to_uri, Encoding, Text};
use crate::util::sync::lock;
use lsp_types::request::{GotoDefinition, HoverRequest, References, WorkspaceSymbolRequest};
use lsp_types::{
    GotoDefinitionParams, GotoDefinitionResponse, HoverContents, HoverParams, Location,
    MarkedString, OneOf, Position, Range, ReferenceContext, ReferenceParams, SymbolKind,
    TextDocumentIdentifier, TextDocumentPositionParams, WorkspaceSymbolParams,
    WorkspaceSymbolResponse,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A caller's location resolved to a server position.
pub(super) struct Target {
    pub(super) idx: usize,
    pub(super) session: Arc<Session>,
    pub(super) position: TextDocumentPositionParams,
}

/// The name of an LSP `SymbolKind` number (`unknown` outside 1..26).
fn symbol_kind(n: u64) -> &'static str {
    const KINDS: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enumMember",
        "struct",
        "event",
        "operator",
        "typeParameter",
    ];
    n.checked_sub(1)
        .and_then(|i| KINDS.get(i as usize))
        .copied()
        .unwrap_or("unknown")
}

/// The number of a `SymbolKind` (lsp-types keeps it private; it serializes as one).
fn kind_number(k: SymbolKind) -> u64 {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_u64())
        .unwrap_or(0)
}

/// Hover contents as text: markdown or plain values joined by blank lines.
fn hover_text(contents: &HoverContents) -> String {
    let marked = |m: &MarkedString| match m {
        MarkedString::String(s) => s.clone(),
        MarkedString::LanguageString(l) => l.value.clone(),
    };
    match contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(a) => a
            .iter()
            .map(marked)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        HoverContents::Markup(m) => m.value.clone(),
    }
}

/// The locations of a definition answer (`Location`, `Location[]` or `LocationLink[]`,
/// a link by its selection range).
fn definition_locations(r: Option<GotoDefinitionResponse>) -> Vec<(String, Range)> {
    match r {
        None => Vec::new(),
        Some(GotoDefinitionResponse::Scalar(l)) => vec![(l.uri.as_str().to_string(), l.range)],
        Some(GotoDefinitionResponse::Array(a)) => a
            .into_iter()
            .map(|l| (l.uri.as_str().to_string(), l.range))
            .collect(),
        Some(GotoDefinitionResponse::Link(a)) => a
            .into_iter()
            .map(|l| (l.target_uri.as_str().to_string(), l.target_selection_range))
            .collect(),
    }
}

impl Intelligence {
    /// Resolve `{ file, line, character }` (UTF-16) to a server position.
    pub(super) async fn target(&self, input: &Value) -> Result<Target> {
        self.check_live()?;
        let f = Fields::new(input, "location", type_err)?;
        let file = f.str("file")?;
        let line = f.u64("line")?;
        let character = f.u64("character")?;
        let (path, rel, idx) = self.locate(file)?;
        let (session, doc_uri, doc) = self.ensure_open(&path, &rel, idx).await?;
        let text = Text::with_index(&doc.text, &doc.lines);
        let Some(line_text) = usize::try_from(line).ok().and_then(|l| text.line(l)) else {
            return Err(crate::error::PrismError::range(format!(
                "line {line} is outside {rel:?} ({} lines)",
                text.line_count()
            )));
        };
        let len16: u64 = line_text.encode_utf16().count() as u64;
        if character > len16 {
            return Err(crate::error::PrismError::range(format!(
                "character {character} is past the end of line {line} of {rel:?} ({len16} UTF-16 units)"
            )));
        }
        let server_char = text.convert(line, character, Encoding::Utf16, session.encoding);
        let position = TextDocumentPositionParams {
            text_document: TextDocumentIdentifier {
                uri: uri(&doc_uri)?,
            },
            position: Position::new(
                u32::try_from(line).unwrap_or(u32::MAX),
                u32::try_from(server_char).unwrap_or(u32::MAX),
            ),
        };
        Ok(Target {
            idx,
            session,
            position,
        })
    }

    /// `ERR_PRISM_LSP_UNSUPPORTED` unless the server offers `c`.
    pub(super) fn require(&self, session: &Session, c: Capability, what: &str) -> Result<()> {
        if session.supports(c) {
            Ok(())
        } else {
            Err(lsp(
                LspCode::Unsupported,
                format!("language server {:?} does not provide {what}", session.name),
            ))
        }
    }

    /// Text of a file for position conversion: the open document's, else from disk.
    async fn text_of(
        &self,
        session: &Session,
        path: &Path,
        cache: &mut HashMap<PathBuf, Arc<String>>,
    ) -> Option<Arc<String>> {
        if let Some(t) = cache.get(path) {
            return Some(t.clone());
        }
        let open = lock(&session.state.open)
            .get(&path_to_uri(path))
            .map(|d| d.text.clone());
        let text = match open {
            Some(t) => t,
            None => {
                let meta = tokio::fs::metadata(path).await.ok()?;
                if meta.len() > self.limits.max_message as u64 {
                    return None;
                }
                Arc::new(String::from_utf8(tokio::fs::read(path).await.ok()?).ok()?)
            }
        };
        cache.insert(path.to_path_buf(), text.clone());
        Some(text)
    }

    /// Server locations inside the workspace as `{ file, line, character, endLine,
    /// endCharacter }` in UTF-16; an answer with only locations outside the workspace is
    /// `ERR_PRISM_LSP_WORKSPACE`.
    async fn locations(
        &self,
        session: &Session,
        items: Vec<(String, Range)>,
    ) -> Result<Vec<Value>> {
        let mut cache = HashMap::new();
        let mut out = Vec::new();
        let mut outside = 0usize;
        for (item_uri, range) in items {
            if out.len() >= self.limits.max_results {
                break;
            }
            match self.location(session, &item_uri, range, &mut cache).await {
                Some(loc) => out.push(loc),
                None => outside += 1,
            }
        }
        if out.is_empty() && outside > 0 {
            return Err(lsp(
                LspCode::Workspace,
                format!(
                    "the server answered only with {outside} location(s) outside the workspace"
                ),
            ));
        }
        Ok(out)
    }

    /// One location, `None` when it is outside the workspace.
    async fn location(
        &self,
        session: &Session,
        item_uri: &str,
        range: Range,
        cache: &mut HashMap<PathBuf, Arc<String>>,
    ) -> Option<Value> {
        let (path, rel) = self.ws.resolve_uri(item_uri)?;
        let (mut l, mut c) = (
            u64::from(range.start.line),
            u64::from(range.start.character),
        );
        let (mut el, mut ec) = (u64::from(range.end.line), u64::from(range.end.character));
        if session.encoding != Encoding::Utf16 {
            let text = self.text_of(session, &path, cache).await?;
            let t = Text::new(&text);
            c = t.convert(l, c, session.encoding, Encoding::Utf16);
            ec = t.convert(el, ec, session.encoding, Encoding::Utf16);
        }
        if el < l || (el == l && ec < c) {
            (l, c, el, ec) = (el, ec, l, c);
        }
        Some(json!({ "file": rel, "line": l, "character": c, "endLine": el, "endCharacter": ec }))
    }

    pub async fn hover(&self, input: &Value) -> Result<Value> {
        let t = self.target(input).await?;
        self.require(&t.session, Capability::Hover, "hover")?;
        let r = t
            .session
            .request::<HoverRequest>(HoverParams {
                text_document_position_params: t.position,
                work_done_progress_params: Default::default(),
            })
            .await?;
        let text = r.map(|h| hover_text(&h.contents)).unwrap_or_default();
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        Ok(json!({ "text": text }))
    }

    pub async fn definitions(&self, input: &Value) -> Result<Value> {
        let t = self.target(input).await?;
        self.require(&t.session, Capability::Definition, "definitions")?;
        let r = t
            .session
            .request::<GotoDefinition>(GotoDefinitionParams {
                text_document_position_params: t.position,
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            })
            .await?;
        let found = self.locations(&t.session, definition_locations(r)).await?;
        Ok(Value::Array(found))
    }

    pub async fn references(&self, input: &Value) -> Result<Value> {
        let t = self.target(input).await?;
        self.require(&t.session, Capability::References, "references")?;
        let r = t
            .session
            .request::<References>(ReferenceParams {
                text_document_position: t.position,
                context: ReferenceContext {
                    include_declaration: true,
                },
                work_done_progress_params: Default::default(),
                partial_result_params: Default::default(),
            })
            .await?;
        let items = r
            .unwrap_or_default()
            .into_iter()
            .map(|l: Location| (l.uri.as_str().to_string(), l.range))
            .collect();
        Ok(Value::Array(self.locations(&t.session, items).await?))
    }

    pub async fn workspace_symbols(&self, input: &Value) -> Result<Value> {
        self.check_live()?;
        let query = match input.get("query") {
            Some(Value::String(q)) if q.len() <= 1024 => q.clone(),
            Some(Value::String(_)) => {
                return Err(lsp(LspCode::Limit, "query is longer than 1024 bytes"))
            }
            _ => return Err(type_err("query must be a string".into())),
        };
        let mut out = Vec::new();
        for idx in 0..self.slots.len() {
            let session = self.session(idx).await?;
            if !session.supports(Capability::WorkspaceSymbol) {
                continue;
            }
            let r = session
                .request::<WorkspaceSymbolRequest>(WorkspaceSymbolParams {
                    query: query.clone(),
                    work_done_progress_params: Default::default(),
                    partial_result_params: Default::default(),
                })
                .await?;
            self.symbols(&session, r, &mut out).await;
        }
        Ok(Value::Array(out))
    }

    /// Append the symbols of one server's answer that lie inside the workspace (a
    /// `WorkspaceSymbol` without a range is at the start of its file).
    async fn symbols(
        &self,
        session: &Session,
        r: Option<WorkspaceSymbolResponse>,
        out: &mut Vec<Value>,
    ) {
        let items: Vec<(String, SymbolKind, Option<String>, String, Range)> = match r {
            None => Vec::new(),
            Some(WorkspaceSymbolResponse::Flat(a)) => a
                .into_iter()
                .map(|s| {
                    (
                        s.name,
                        s.kind,
                        s.container_name,
                        s.location.uri.as_str().to_string(),
                        s.location.range,
                    )
                })
                .collect(),
            Some(WorkspaceSymbolResponse::Nested(a)) => a
                .into_iter()
                .map(|s| {
                    let (u, range) = match s.location {
                        OneOf::Left(l) => (l.uri.as_str().to_string(), l.range),
                        OneOf::Right(w) => (w.uri.as_str().to_string(), Range::default()),
                    };
                    (s.name, s.kind, s.container_name, u, range)
                })
                .collect(),
        };
        let mut cache = HashMap::new();
        for (name, kind, container, item_uri, range) in items {
            if out.len() >= self.limits.max_results {
                break;
            }
            let Some(mut l) = self.location(session, &item_uri, range, &mut cache).await else {
                continue;
            };
            let kind = kind_number(kind);
            l["name"] = json!(name);
            l["kind"] = json!(kind);
            l["kindName"] = json!(symbol_kind(kind));
            if let Some(c) = container.filter(|c| !c.is_empty()) {
                l["containerName"] = json!(c);
            }
            out.push(l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::MarkupContent;

    #[test]
    fn hover_contents() {
        let markup = HoverContents::Markup(MarkupContent {
            kind: lsp_types::MarkupKind::Markdown,
            value: "x".into(),
        });
        assert_eq!(hover_text(&markup), "x");
        let list: HoverContents =
            serde_json::from_value(json!(["a", {"language":"ts","value":"b"}])).unwrap();
        assert_eq!(hover_text(&list), "a\n\nb");
    }

    #[test]
    fn kinds() {
        assert_eq!(symbol_kind(12), "function");
        assert_eq!(symbol_kind(0), "unknown");
        assert_eq!(symbol_kind(99), "unknown");
        assert_eq!(kind_number(SymbolKind::FUNCTION), 12);
    }

    #[test]
    fn definition_answers_of_every_shape() {
        let loc = json!({"uri": "file:///a.ts", "range": {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 3}}});
        let scalar: GotoDefinitionResponse = serde_json::from_value(loc.clone()).unwrap();
        assert_eq!(
            definition_locations(Some(scalar))[0].1.start,
            Position::new(1, 2)
        );
        let link: GotoDefinitionResponse = serde_json::from_value(json!([{
            "targetUri": "file:///b.ts",
            "targetRange": {"start": {"line": 0, "character": 0}, "end": {"line": 9, "character": 0}},
            "targetSelectionRange": {"start": {"line": 4, "character": 1}, "end": {"line": 4, "character": 5}}
        }]))
        .unwrap();
        let got = definition_locations(Some(link));
        assert_eq!(
            (got[0].0.as_str(), got[0].1.start),
            ("file:///b.ts", Position::new(4, 1))
        );
        assert!(definition_locations(None).is_empty());
    }
}
