//! Diagnostics of the requested files: asked for (pull `textDocument/diagnostic` with
//! result ids, or tsserver) or waited for (`publishDiagnostics` of the synced version),
//! normalized to the API's shape, and diffed against a previous view.

use super::{lsp, type_err, Intelligence, SETTLE};
use crate::diagnostics::{self as diag, NormalizeOptions, NormalizedDiagnostic};
use crate::error::{LspCode, PrismError, Result};
use crate::json::{type_name, Fields};
use crate::lsp::client::{DiagnosticSet, OpenDoc, Session};
use crate::lsp::documents::{Encoding, Text};
use crate::util::sync::lock;
use lsp_types::{Diagnostic, NumberOrString, Position};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// `source` of a server diagnostic that names none (@arnilo/prism: "lsp").
const LSP_SOURCE: &str = "lsp";

/// One server diagnostic as a raw entry of `normalizeDiagnostics` (so one validator
/// serves every path): positions converted to UTF-16, severity as the LSP number (absent
/// is an error), a missing source is "lsp", the code kept as given.
fn raw_entry(d: &Diagnostic, rel: &str, text: &Text<'_>, enc: Encoding, version: i64) -> Value {
    let (s, e) = (d.range.start, d.range.end);
    let col = |p: Position| text.convert(p.line.into(), p.character.into(), enc, Encoding::Utf16);
    let severity = d
        .severity
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|v| v.as_u64())
        .filter(|n| (1..=4).contains(n))
        .unwrap_or(1);
    let source = d
        .source
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or(LSP_SOURCE);
    let mut o = json!({
        "file": rel,
        "line": s.line, "character": col(s),
        "endLine": e.line, "endCharacter": col(e),
        "severity": severity,
        "message": d.message,
        "source": source,
        "generation": version,
    });
    match &d.code {
        Some(NumberOrString::Number(n)) => o["code"] = json!(n),
        Some(NumberOrString::String(c)) => o["code"] = json!(c),
        None => {}
    }
    o
}

/// How a document's diagnostics are asked for.
#[derive(Clone, Copy)]
enum Fetch {
    /// `textDocument/diagnostic`.
    Pull,
    /// tsserver's diagnostics through `typescript.tsserverRequest`.
    Probe,
}

impl Intelligence {
    /// The diagnostics of the document's current version: pulled when the server offers
    /// pull diagnostics, else the push set of that version; `None` when it did not arrive
    /// before `deadline`.
    async fn current_set(
        &self,
        session: &Arc<Session>,
        uri: &str,
        deadline: Instant,
    ) -> Result<Option<(DiagnosticSet, OpenDoc)>> {
        let mut changes = session.changes();
        let mut closed = session.transport.subscribe_closed();
        // Publishes without a version can come per kind (typescript-language-server sends
        // syntax errors before a slow semantic check ends) or not at all (a file that stays
        // clean), so a server that can be asked is asked; if asking fails, its publishes
        // are waited for.
        let mut probe = session.probe_supported();
        loop {
            // Checked on every wake: a server may register pull diagnostics after start.
            if session.pull_supported() {
                return self.fetch_set(session, uri, deadline, Fetch::Pull).await;
            }
            if probe {
                match self.fetch_set(session, uri, deadline, Fetch::Probe).await {
                    Err(_) if !session.is_closed() => probe = false,
                    other => return other,
                }
            }
            let Some(doc) = lock(&session.state.open).get(uri).cloned() else {
                return Ok(None);
            };
            let entry = lock(&session.state.push)
                .get(uri)
                .cloned()
                .unwrap_or_default();
            let now = Instant::now();
            let mut wake = deadline;
            if let Some((v, set)) = &entry.versioned {
                if *v == doc.version {
                    return Ok(Some((set.clone(), doc)));
                }
            }
            if let Some((seq, at, set)) = &entry.unversioned {
                if *seq > doc.push_mark {
                    let settled = *at + SETTLE;
                    if now >= settled {
                        return Ok(Some((set.clone(), doc)));
                    }
                    wake = wake.min(settled);
                }
            }
            if let Some(e) = session.transport.closed() {
                return Err(e);
            }
            if now >= deadline {
                return Ok(None);
            }
            tokio::select! {
                _ = changes.changed() => {}
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => {}
                _ = closed.wait_for(|c| *c) => {}
            }
        }
    }

    /// Ask the server for the document's current set (pull, or a tsserver probe); `None`
    /// when no answer came before `deadline`. At most `fetch_permits` such requests run
    /// at once, so a delta over many files stays under `maxPendingRequests`.
    async fn fetch_set(
        &self,
        session: &Arc<Session>,
        uri: &str,
        deadline: Instant,
        how: Fetch,
    ) -> Result<Option<(DiagnosticSet, OpenDoc)>> {
        loop {
            let Some(doc) = lock(&session.state.open).get(uri).cloned() else {
                return Ok(None);
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let ask = async {
                let _permit = self
                    .fetch_permits
                    .acquire()
                    .await
                    .map_err(|_| PrismError::internal("diagnostic permits closed"))?;
                match how {
                    Fetch::Pull => session.pull(uri, doc.version).await,
                    Fetch::Probe => session.probe(uri, doc.version).await,
                }
            };
            let items = match tokio::time::timeout(left, ask).await {
                Ok(Ok(items)) => items,
                Ok(Err(e)) if e.code() == "ERR_PRISM_LSP_TIMEOUT" => return Ok(None),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(None),
            };
            // A sync that raced the request leaves the answer's version unknown: ask again.
            let now = lock(&session.state.open).get(uri).map(|d| d.version);
            if now == Some(doc.version) {
                return Ok(Some((items, doc)));
            }
        }
    }

    /// LSP diagnostics → normalized entries (UTF-16 positions, generation = version).
    fn normalize(
        &self,
        session: &Session,
        rel: &str,
        doc: &OpenDoc,
        items: &[Diagnostic],
    ) -> Result<Vec<NormalizedDiagnostic>> {
        let text = Text::with_index(&doc.text, &doc.lines);
        let raw: Vec<Value> = items
            .iter()
            .map(|d| raw_entry(d, rel, &text, session.encoding, doc.version))
            .collect();
        let mut opts = NormalizeOptions::new(
            self.ws.root.to_string_lossy().to_string(),
            doc.version as u64,
        );
        opts.max_diagnostics_per_file = self.limits.max_diagnostics;
        diag::normalize(&raw, &opts)
    }

    pub(super) fn parse_files(&self, v: Option<&Value>) -> Result<Vec<(PathBuf, String, usize)>> {
        let Some(Value::Array(files)) = v else {
            return Err(type_err(
                "files must be an array of workspace-relative paths".into(),
            ));
        };
        if files.len() > self.limits.max_results {
            return Err(lsp(
                LspCode::Limit,
                format!(
                    "files has {} entries; maxResultsPerQuery is {}",
                    files.len(),
                    self.limits.max_results
                ),
            ));
        }
        let mut out: Vec<(PathBuf, String, usize)> = Vec::new();
        for (i, f) in files.iter().enumerate() {
            let Value::String(s) = f else {
                return Err(type_err(format!(
                    "files[{i}] must be a string, got {}",
                    type_name(f)
                )));
            };
            let (path, rel, idx) = self.locate(s)?;
            if !out.iter().any(|(_, r, _)| *r == rel) {
                out.push((path, rel, idx));
            }
        }
        Ok(out)
    }

    /// Refresh the diagnostics of each file (syncing files not open yet) and wait for
    /// the set of its current version until `deadline`.
    async fn refresh(
        self: &Arc<Self>,
        files: Vec<(PathBuf, String, usize)>,
        deadline: Instant,
    ) -> Result<Vec<(String, Option<Vec<NormalizedDiagnostic>>, i64)>> {
        let mut set = tokio::task::JoinSet::new();
        for (i, (path, rel, idx)) in files.into_iter().enumerate() {
            let me = self.clone();
            set.spawn(async move {
                let (session, uri, _) = me.ensure_open(&path, &rel, idx).await?;
                let got = me.current_set(&session, &uri, deadline).await?;
                let out = match got {
                    Some((items, doc)) => (
                        rel.clone(),
                        Some(me.normalize(&session, &rel, &doc, &items)?),
                        doc.version,
                    ),
                    None => (rel.clone(), None, 0),
                };
                Ok::<_, PrismError>((i, out))
            });
        }
        let mut results = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok(Ok(v)) => results.push(v),
                Ok(Err(e)) => return Err(e),
                Err(e) => {
                    return Err(PrismError::internal(format!(
                        "diagnostics task failed: {e}"
                    )))
                }
            }
        }
        results.sort_by_key(|(i, _)| *i);
        Ok(results.into_iter().map(|(_, v)| v).collect())
    }

    /// `diagnosticDelta({ files, previous? })`.
    pub async fn diagnostic_delta(
        self: &Arc<Self>,
        input: &Value,
        deadline: Instant,
    ) -> Result<Value> {
        self.check_live()?;
        let f = Fields::new(input, "input", type_err)?;
        let previous = parse_previous(f.get("previous"))?;
        let files = self.parse_files(f.get("files"))?;
        let refreshed = self.refresh(files, self.wait_until(deadline)).await?;
        // The newest document version refreshed (seed: "generation-stamped with the
        // document version").
        let mut generation = 0u64;
        let mut out = Map::new();
        let mut incomplete = Vec::new();
        for (rel, next, version) in refreshed {
            let Some(next) = next else {
                incomplete.push(Value::String(rel));
                continue;
            };
            let version = u64::try_from(version).unwrap_or(0);
            generation = generation.max(version);
            let prev = previous.get(&rel);
            // A previous view newer than this refresh is not overwritten: the file is
            // omitted (seed: "a stale-version response never overwrites newer results").
            if prev.and_then(|p| p.generation).is_some_and(|g| g > version) {
                continue;
            }
            let d = diag::delta(&next, prev.map(|p| p.entries.as_slice()), Some(version));
            out.insert(
                rel,
                serde_json::to_value(d).map_err(|e| PrismError::internal(e.to_string()))?,
            );
        }
        Ok(json!({ "files": out, "generation": generation, "incomplete": incomplete }))
    }

    /// `diagnostics(file?)`: the current set of one file (waiting for it), or of every
    /// open document whose current set is known.
    pub async fn diagnostics(self: &Arc<Self>, input: &Value, deadline: Instant) -> Result<Value> {
        self.check_live()?;
        match input.get("file") {
            Some(Value::String(file)) => {
                let files = self.parse_files(Some(&json!([file])))?;
                let refreshed = self.refresh(files, self.wait_until(deadline)).await?;
                match refreshed.into_iter().next() {
                    Some((_, Some(list), _)) => Ok(serde_json::to_value(list)
                        .map_err(|e| PrismError::internal(e.to_string()))?),
                    _ => Err(lsp(
                        LspCode::Timeout,
                        format!(
                            "diagnostics of {file:?} did not arrive within {} ms",
                            self.limits.timeout.as_millis()
                        ),
                    )),
                }
            }
            None | Some(Value::Null) => {
                let mut all = Vec::new();
                for slot in &self.slots {
                    let session = lock(&slot.state).session.clone();
                    let Some(session) = session.filter(|s| !s.is_closed()) else {
                        continue;
                    };
                    let docs: Vec<(String, OpenDoc)> = lock(&session.state.open)
                        .iter()
                        .map(|(u, d)| (u.clone(), d.clone()))
                        .collect();
                    for (uri, doc) in docs {
                        let Some((_, rel)) = self.ws.resolve_uri(&uri) else {
                            continue;
                        };
                        let items = known_set(&session, &uri, &doc);
                        if let Some(items) = items {
                            all.extend(self.normalize(&session, &rel, &doc, &items)?);
                        }
                    }
                }
                all.sort_by(diag::identity_cmp);
                Ok(serde_json::to_value(all).map_err(|e| PrismError::internal(e.to_string()))?)
            }
            Some(other) => Err(type_err(format!(
                "file must be a string, got {}",
                type_name(other)
            ))),
        }
    }
}

/// The current set of an open document when already known (no waiting).
fn known_set(session: &Session, uri: &str, doc: &OpenDoc) -> Option<DiagnosticSet> {
    let asked = lock(&session.state.pulled)
        .get(uri)
        .filter(|p| p.version == doc.version)
        .map(|p| p.items.clone());
    if asked.is_some() || session.pull_supported() {
        return asked;
    }
    let entry = lock(&session.state.push).get(uri).cloned()?;
    if let Some((v, set)) = entry.versioned {
        if v == doc.version {
            return Some(set);
        }
    }
    match entry.unversioned {
        Some((seq, at, set)) if seq > doc.push_mark && at.elapsed() >= SETTLE => Some(set),
        _ => None,
    }
}

/// One file's previous view: its generation (`None` for an empty list of entries) and
/// its entries.
#[derive(Debug)]
struct PreviousView {
    generation: Option<u64>,
    entries: Vec<NormalizedDiagnostic>,
}

const PREVIOUS_SHAPES: &str =
    "{ generation, diagnostics }, a DiagnosticDelta or an array of NormalizedDiagnostic";

/// `previous` of `diagnosticDelta`: a map file → view, where a view is
/// `{ generation, diagnostics }` (@arnilo/prism's `LanguageFileDiagnostics`), a
/// `DiagnosticDelta` (its view is `added` + `unchanged`) or `NormalizedDiagnostic[]`; or a
/// whole previous result `{ files, generation, … }`. Anything else is a `TypeError`, never
/// read as an empty view.
fn parse_previous(v: Option<&Value>) -> Result<HashMap<String, PreviousView>> {
    let mut out = HashMap::new();
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(out);
    };
    let Value::Object(o) = v else {
        return Err(type_err(format!(
            "previous must be an object (file → {PREVIOUS_SHAPES}), got {}",
            type_name(v)
        )));
    };
    let files = match (o.get("files"), o.get("generation")) {
        (Some(Value::Object(f)), Some(Value::Number(_))) => f,
        _ => o,
    };
    for (file, view) in files {
        out.insert(file.clone(), previous_view(file, view)?);
    }
    Ok(out)
}

fn previous_view(file: &str, view: &Value) -> Result<PreviousView> {
    let bad = || {
        type_err(format!(
            "previous[{file:?}] must be {PREVIOUS_SHAPES}, got {}",
            type_name(view)
        ))
    };
    let (generation, lists): (Option<u64>, Vec<&Vec<Value>>) = match view {
        Value::Array(a) => (None, vec![a]),
        Value::Object(o) => {
            let generation = match o.get("generation") {
                Some(g) => Some(crate::json::as_u64(g).ok_or_else(|| {
                    type_err(format!(
                        "previous[{file:?}].generation must be a non-negative integer"
                    ))
                })?),
                None => return Err(bad()),
            };
            match (o.get("diagnostics"), o.get("added"), o.get("unchanged")) {
                (Some(Value::Array(d)), None, None) => (generation, vec![d]),
                (None, Some(Value::Array(a)), Some(Value::Array(u))) => (generation, vec![a, u]),
                _ => return Err(bad()),
            }
        }
        _ => return Err(bad()),
    };
    let mut entries = Vec::new();
    for e in lists.into_iter().flatten() {
        let d: NormalizedDiagnostic = serde_json::from_value(e.clone()).map_err(|err| {
            type_err(format!(
                "previous[{file:?}] holds an entry that is not a NormalizedDiagnostic: {err}"
            ))
        })?;
        entries.push(d);
    }
    let generation = generation.or_else(|| entries.iter().map(|d| d.generation).max());
    Ok(PreviousView {
        generation,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previous_views() {
        let d = json!({"file":"a.ts","line":1,"character":2,"severity":"error","message":"m","generation":3});
        let p = parse_previous(Some(&json!({"files": {"a.ts": {"added":[d.clone()],"removed":[],"unchanged":[d.clone()],"generation":4}}, "generation": 1, "incomplete": []}))).unwrap();
        assert_eq!(
            (p["a.ts"].entries.len(), p["a.ts"].generation),
            (2, Some(4))
        );
        let p = parse_previous(Some(&json!({"a.ts": [d.clone()], "b.ts": []}))).unwrap();
        assert_eq!(
            (p["a.ts"].entries.len(), p["a.ts"].generation),
            (1, Some(3))
        );
        assert_eq!(p["b.ts"].generation, None);
        // @arnilo/prism's shape: file → { generation, diagnostics }.
        let p = parse_previous(Some(
            &json!({"a.ts": {"generation": 5, "diagnostics": [d.clone()]}}),
        ))
        .unwrap();
        assert_eq!(
            (p["a.ts"].entries.len(), p["a.ts"].generation),
            (1, Some(5))
        );
        // Any other shape is a TypeError, never an empty view.
        for bad in [
            json!({"a.ts": 1}),
            json!({"a.ts": [{"x":1}]}),
            json!({"a.ts": {}}),
            json!({"a.ts": {"generation": 1}}),
            json!({"a.ts": {"diagnostics": [d.clone()]}}),
            json!({"a.ts": {"generation": -1, "diagnostics": []}}),
            json!({"a.ts": {"generation": 1, "added": [], "removed": []}}),
            json!({"a.ts": {"generation": 1, "diagnostics": {}}}),
            json!([]),
            json!("a.ts"),
        ] {
            let e = parse_previous(Some(&bad)).unwrap_err();
            assert_eq!(e.code(), "ERR_INVALID_ARG_TYPE", "{bad}");
        }
    }
}
