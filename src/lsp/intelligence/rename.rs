//! Rename: the server's `WorkspaceEdit` is planned in full (every file inside the
//! workspace and unchanged since it was synced, no stale versions, no file operations)
//! and nothing is written; after the JS layer consulted the host's policy, the plan is
//! applied with atomic writes and open documents are re-synced.

use super::{lsp, type_err, Intelligence};
use crate::error::{LspCode, Result};
use crate::json::Fields;
use crate::lsp::client::{Capability, Session};
use crate::lsp::documents::{path_to_uri, Encoding, Text};
use crate::lsp::edits::{self, TextEdit};
use crate::lsp::fs::write_atomic;
use crate::util::sync::lock;
use lsp_types::request::Rename;
use lsp_types::{DocumentChangeOperation, DocumentChanges, OneOf, RenameParams, WorkspaceEdit};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

const MAX_PLANS: usize = 16;

/// One edit as `rename` reports it: the range flat and as an LSP `range`, UTF-16.
fn api_edit(rel: &str, text: &Text<'_>, enc: Encoding, e: &TextEdit) -> Value {
    let ((l, c), (el, ec)) = (e.start, e.end);
    let (c16, ec16) = (
        text.convert(l, c, enc, Encoding::Utf16),
        text.convert(el, ec, enc, Encoding::Utf16),
    );
    json!({
        "file": rel,
        "line": l,
        "character": c16,
        "endLine": el,
        "endCharacter": ec16,
        "newText": e.new_text,
        "range": {
            "start": { "line": l, "character": c16 },
            "end": { "line": el, "character": ec16 },
        },
    })
}

struct PlannedFile {
    path: PathBuf,
    uri: String,
    old: String,
    new: String,
}

pub(super) struct RenamePlan {
    slot: usize,
    files: Vec<PlannedFile>,
    edits: Vec<Value>,
}

/// A rename's edits grouped by document URI, in URI order.
type EditsByUri = BTreeMap<String, Vec<lsp_types::TextEdit>>;

impl Intelligence {
    /// Ask the server for a rename and compute every file's new text; nothing is
    /// written. Returns `{ plan, paths, edits }`.
    pub async fn rename_plan(&self, input: &Value) -> Result<Value> {
        let f = Fields::new(input, "input", type_err)?;
        let new_name = f.str("newName")?;
        if new_name.is_empty() || new_name.len() > 1024 {
            return Err(type_err("newName must be 1..1024 bytes".into()));
        }
        let t = self.target(input).await?;
        self.require(&t.session, Capability::Rename, "rename")?;
        let r = t
            .session
            .request::<Rename>(RenameParams {
                text_document_position: t.position,
                new_name: new_name.to_string(),
                work_done_progress_params: Default::default(),
            })
            .await?;
        let by_uri = self.edits_by_uri(&t.session, r.unwrap_or_default())?;
        let total: usize = by_uri.values().map(Vec::len).sum();
        if total > self.limits.max_results {
            return Err(lsp(
                LspCode::Limit,
                format!(
                    "rename has {total} edits; maxResultsPerQuery is {}",
                    self.limits.max_results
                ),
            ));
        }
        let mut files = Vec::new();
        let mut api_edits = Vec::new();
        let mut paths = Vec::new();
        for (uri, edits) in by_uri {
            let (file, rel, mut planned) = self.plan_file(&t.session, &uri, &edits).await?;
            paths.push(Value::String(rel));
            files.push(file);
            api_edits.append(&mut planned);
        }
        let id = self.store_plan(RenamePlan {
            slot: t.idx,
            files,
            edits: api_edits.clone(),
        });
        Ok(json!({ "plan": id, "paths": paths, "edits": api_edits }))
    }

    /// The text edits of a `WorkspaceEdit` by document. `documentChanges` wins over
    /// `changes` (as the protocol says). File create/rename/delete operations are
    /// `ERR_PRISM_LSP_UNSUPPORTED`; edits naming another version of an open document are
    /// stale (`ERR_PRISM_LSP_SERVER`).
    fn edits_by_uri(&self, session: &Session, edit: WorkspaceEdit) -> Result<EditsByUri> {
        let mut by_uri = EditsByUri::new();
        let document_edits = match edit.document_changes {
            Some(DocumentChanges::Edits(e)) => Some(e),
            Some(DocumentChanges::Operations(ops)) => {
                let mut e = Vec::with_capacity(ops.len());
                for op in ops {
                    match op {
                        DocumentChangeOperation::Edit(x) => e.push(x),
                        DocumentChangeOperation::Op(_) => {
                            return Err(lsp(
                                LspCode::Unsupported,
                                "rename needs file create/rename/delete operations, which are not applied",
                            ))
                        }
                    }
                }
                Some(e)
            }
            None => None,
        };
        let Some(document_edits) = document_edits else {
            for (uri, edits) in edit.changes.unwrap_or_default() {
                by_uri
                    .entry(uri.as_str().to_string())
                    .or_default()
                    .extend(edits);
            }
            return Ok(by_uri);
        };
        for d in document_edits {
            let uri = d.text_document.uri.as_str().to_string();
            if let Some(v) = d.text_document.version {
                self.check_version(session, &uri, v)?;
            }
            let edits = d.edits.into_iter().map(|e| match e {
                OneOf::Left(e) => e,
                OneOf::Right(annotated) => annotated.text_edit,
            });
            by_uri.entry(uri).or_default().extend(edits);
        }
        Ok(by_uri)
    }

    /// Edits computed for another version of an open document are stale.
    fn check_version(&self, session: &Session, uri: &str, v: i32) -> Result<()> {
        let open = self.ws.resolve_uri(uri).and_then(|(p, _)| {
            lock(&session.state.open)
                .get(&path_to_uri(&p))
                .map(|d| d.version)
        });
        if open.is_some_and(|cur| cur != i64::from(v)) {
            return Err(lsp(
                LspCode::Server,
                format!("rename edits were computed for version {v} of {uri}, not the synced one"),
            ));
        }
        Ok(())
    }

    /// One file of a rename: inside the workspace, unchanged since it was synced; its
    /// new text, relative name and the edits as the API reports them (UTF-16).
    async fn plan_file(
        &self,
        session: &Session,
        uri: &str,
        edits: &[lsp_types::TextEdit],
    ) -> Result<(PlannedFile, String, Vec<Value>)> {
        let Some((path, rel)) = self.ws.resolve_uri(uri) else {
            return Err(lsp(
                LspCode::Workspace,
                format!("rename would edit {uri}, outside the workspace"),
            ));
        };
        let old = self.read_text(&path, &rel).await?;
        let canonical_uri = path_to_uri(&path);
        if let Some(doc) = lock(&session.state.open).get(&canonical_uri) {
            if doc.text.as_str() != old {
                return Err(lsp(
                    LspCode::Workspace,
                    format!(
                        "{rel:?} changed on disk since it was synced; call syncDocument and retry"
                    ),
                ));
            }
        }
        let enc = session.encoding;
        let parsed: Vec<TextEdit> = edits
            .iter()
            .map(|e| TextEdit {
                start: (e.range.start.line.into(), e.range.start.character.into()),
                end: (e.range.end.line.into(), e.range.end.character.into()),
                new_text: e.new_text.clone(),
            })
            .collect();
        let spans = edits::spans(&old, &parsed, enc, |m| {
            lsp(
                LspCode::Server,
                format!("rename returned bad edits for {rel:?}: {m}"),
            )
        })?;
        let new = edits::apply(&old, &parsed, &spans);
        let text = Text::new(&old);
        let api = parsed
            .iter()
            .map(|e| api_edit(&rel, &text, enc, e))
            .collect();
        let file = PlannedFile {
            path,
            uri: canonical_uri,
            old,
            new,
        };
        Ok((file, rel, api))
    }

    /// Keep a plan (the oldest go beyond [`MAX_PLANS`]); returns its id.
    fn store_plan(&self, plan: RenamePlan) -> u64 {
        let id = self.next_plan.fetch_add(1, Ordering::SeqCst);
        let mut plans = lock(&self.plans);
        while plans.len() >= MAX_PLANS {
            let Some(first) = plans.keys().next().copied() else {
                break;
            };
            plans.remove(&first);
        }
        plans.insert(id, plan);
        id
    }

    /// Forget a plan (the policy denied it).
    pub fn discard_plan(&self, input: &Value) -> Result<Value> {
        if let Some(id) = input.get("plan").and_then(Value::as_u64) {
            lock(&self.plans).remove(&id);
        }
        Ok(Value::Null)
    }

    /// Write a planned rename: every file unchanged since planning, each written to a
    /// temporary file in its folder, fsynced and renamed over the original; then the
    /// open documents are re-synced. Returns `{ edits }`.
    pub async fn rename_apply(&self, input: &Value) -> Result<Value> {
        self.check_live()?;
        let id = input.get("plan").and_then(Value::as_u64).unwrap_or(0);
        let Some(plan) = lock(&self.plans).remove(&id) else {
            return Err(lsp(LspCode::Workspace, "unknown or expired rename plan"));
        };
        for f in &plan.files {
            let now = tokio::fs::read(&f.path)
                .await
                .map_err(|e| lsp(LspCode::Workspace, format!("cannot read {:?}: {e}", f.path)))?;
            if now != f.old.as_bytes() {
                return Err(lsp(
                    LspCode::Workspace,
                    format!(
                        "{:?} changed while the rename was checked; nothing was written",
                        f.path
                    ),
                ));
            }
        }
        for f in &plan.files {
            write_atomic(&f.path, f.new.as_bytes()).await?;
        }
        // Keep the server's view in step with the files just written.
        let session = lock(&self.slot(plan.slot)?.state).session.clone();
        if let Some(session) = session.filter(|s| !s.is_closed()) {
            for f in &plan.files {
                let open = lock(&session.state.open).contains_key(&f.uri);
                if open {
                    if let Some(rel) = self.ws.relative(&f.path) {
                        let idx = self.slot_for(&rel).unwrap_or(plan.slot);
                        let _ = self.sync_path(&f.path, &rel, idx).await;
                    }
                }
            }
        }
        Ok(json!({ "edits": plan.edits }))
    }
}
