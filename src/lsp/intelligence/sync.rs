//! Document sync: a file is read (bounded by `maxMessageBytes`, UTF-8) and sent as
//! `didOpen` (version 1) the first time, then as a full-content `didChange` with the
//! version + 1.

use super::{lsp, type_err, Intelligence};
use crate::error::{LspCode, Result};
use crate::lsp::client::{uri, OpenDoc, Session};
use crate::lsp::documents::{language_id, line_starts, path_to_uri};
use crate::util::sync::lock;
use lsp_types::notification::{DidChangeTextDocument, DidOpenTextDocument};
use lsp_types::{
    DidChangeTextDocumentParams, DidOpenTextDocumentParams, TextDocumentContentChangeEvent,
    TextDocumentItem, VersionedTextDocumentIdentifier,
};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// `didChange` with the full text when the document is open, else `didOpen`.
fn send_text(
    session: &Session,
    doc_uri: &str,
    rel: &str,
    doc: &OpenDoc,
    was_open: bool,
) -> Result<()> {
    let version = i32::try_from(doc.version)
        .map_err(|_| lsp(LspCode::Limit, format!("{rel:?} was synced too many times")))?;
    let u = uri(doc_uri)?;
    if was_open {
        session.notify::<DidChangeTextDocument>(DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier { uri: u, version },
            content_changes: vec![TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: doc.text.as_str().to_string(),
            }],
        })
    } else {
        session.notify::<DidOpenTextDocument>(DidOpenTextDocumentParams {
            text_document: TextDocumentItem {
                uri: u,
                language_id: language_id(rel).to_string(),
                version,
                text: doc.text.as_str().to_string(),
            },
        })
    }
}

impl Intelligence {
    pub(super) async fn read_text(&self, path: &Path, rel: &str) -> Result<String> {
        let meta = tokio::fs::metadata(path)
            .await
            .map_err(|e| lsp(LspCode::Workspace, format!("cannot read {rel:?}: {e}")))?;
        if meta.len() > self.limits.max_message as u64 {
            return Err(lsp(
                LspCode::Limit,
                format!(
                    "{rel:?} is {} bytes; maxMessageBytes is {}",
                    meta.len(),
                    self.limits.max_message
                ),
            ));
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| lsp(LspCode::Workspace, format!("cannot read {rel:?}: {e}")))?;
        String::from_utf8(bytes)
            .map_err(|_| lsp(LspCode::Unsupported, format!("{rel:?} is not UTF-8 text")))
    }

    /// didOpen (version 1) or full-content didChange (version + 1).
    pub(super) async fn sync_path(
        &self,
        path: &Path,
        rel: &str,
        idx: usize,
    ) -> Result<(Arc<Session>, String, OpenDoc)> {
        // The session first, outside the lock: concurrent syncs wait for one shared start
        // instead of each starting the server after the previous one failed.
        let session = self.session(idx).await?;
        let _serial = self.sync_lock.lock().await;
        let text = self.read_text(path, rel).await?;
        let session = match self.session(idx).await {
            Ok(s) => s,
            Err(_) => session,
        };
        let uri = path_to_uri(path);
        let version = {
            let mut v = lock(&self.versions);
            let e = v.entry(path.to_path_buf()).or_insert(0);
            *e += 1;
            *e
        };
        let was_open = lock(&session.state.open).contains_key(&uri);
        let doc = OpenDoc {
            version,
            lines: Arc::new(line_starts(&text)),
            text: Arc::new(text),
            push_mark: session.state.push_seq.load(Ordering::SeqCst),
        };
        lock(&session.state.open).insert(uri.clone(), doc.clone());
        let sent = send_text(&session, &uri, rel, &doc, was_open);
        if let Err(e) = sent {
            lock(&session.state.open).remove(&uri);
            return Err(e);
        }
        Ok((session, uri, doc))
    }

    /// The document open in the live session, syncing it first when it is not.
    pub(super) async fn ensure_open(
        &self,
        path: &Path,
        rel: &str,
        idx: usize,
    ) -> Result<(Arc<Session>, String, OpenDoc)> {
        let session = self.session(idx).await?;
        let uri = path_to_uri(path);
        let open = lock(&session.state.open).get(&uri).cloned();
        match open {
            Some(doc) => Ok((session, uri, doc)),
            None => self.sync_path(path, rel, idx).await,
        }
    }

    /// `syncDocument(file)` → `{ version }`.
    pub async fn sync_document(&self, input: &Value) -> Result<Value> {
        let file = input
            .get("file")
            .and_then(Value::as_str)
            .ok_or_else(|| type_err("file must be a string".into()))?;
        let (path, rel, idx) = self.locate(file)?;
        let (_, _, doc) = self.sync_path(&path, &rel, idx).await?;
        Ok(json!({ "version": doc.version }))
    }
}
