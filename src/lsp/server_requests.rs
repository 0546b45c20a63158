//! What a server sends us: every server→client request is answered in one match over
//! the typed methods (a request we cannot serve gets JSON-RPC MethodNotFound, never
//! silence), registrations are tracked, and `publishDiagnostics` is recorded.

use super::client::{pull, DiagnosticSet, PushEntry, SessionState};
use super::documents::Workspace;
use super::transport::{Incoming, ServerMessage, Transport};
use crate::error::{PrismError, Result};
use crate::util::sync::lock;
use lsp_types::notification::{Notification, PublishDiagnostics};
use lsp_types::request::{
    ApplyWorkspaceEdit, CodeLensRefresh, InlayHintRefreshRequest, InlineValueRefreshRequest,
    RegisterCapability, Request, SemanticTokensRefresh, ShowDocument, ShowMessageRequest,
    UnregisterCapability, WorkDoneProgressCreate, WorkspaceConfiguration,
    WorkspaceDiagnosticRefresh, WorkspaceFoldersRequest,
};
use lsp_types::{
    ApplyWorkspaceEditResponse, ConfigurationParams, Diagnostic, RegistrationParams,
    ShowDocumentResult, UnregistrationParams, WorkspaceFolder,
};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// JSON-RPC MethodNotFound.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC InvalidParams.
pub const INVALID_PARAMS: i64 = -32602;
/// `workspace/foldingRange/refresh` (LSP 3.18; lsp-types 0.97 has no type for it).
const FOLDING_RANGE_REFRESH: &str = "workspace/foldingRange/refresh";
/// Most registrations kept per session, and per request.
const MAX_REGISTRATIONS: usize = 10_000;
const MAX_PER_REQUEST: usize = 1000;

/// The one workspace folder, as the protocol's type.
pub fn workspace_folder(ws: &Workspace) -> Result<WorkspaceFolder> {
    let name = ws
        .root
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "workspace".into());
    Ok(WorkspaceFolder {
        uri: super::client::uri(&ws.root_uri)?,
        name,
    })
}

/// Answer every server request; record notifications.
pub async fn dispatch(
    mut incoming: Incoming,
    transport: Arc<Transport>,
    state: Arc<SessionState>,
    workspace: Workspace,
    timeout: Duration,
) {
    while let Some(msg) = incoming.recv().await {
        match msg {
            ServerMessage::Request { id, method, params } => {
                let answer = answer_request(&method, params, &state, &workspace);
                let _ = transport.respond(id, answer);
                if method == WorkspaceDiagnosticRefresh::METHOD {
                    // Acknowledged above; now re-pull every open document.
                    state.refreshes.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(repull(transport.clone(), state.clone(), timeout));
                }
            }
            ServerMessage::Notification { method, params } => {
                if method == PublishDiagnostics::METHOD {
                    record_publish(&state, params);
                }
            }
        }
    }
}

async fn repull(transport: Arc<Transport>, state: Arc<SessionState>, timeout: Duration) {
    let docs: Vec<(String, i64)> = lock(&state.open)
        .iter()
        .map(|(u, d)| (u.clone(), d.version))
        .collect();
    for (uri, version) in docs {
        let _ = pull(&transport, &state, &uri, version, timeout).await;
    }
}

/// Record one `publishDiagnostics`. Quirks: servers publish with or without `version`
/// (typescript-language-server never names one), so both are kept apart; a malformed
/// diagnostic is dropped on its own rather than losing the whole set.
pub fn record_publish(state: &SessionState, params: Value) {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return;
    };
    let version = params.get("version").and_then(Value::as_i64);
    let diagnostics: DiagnosticSet = Arc::new(
        params
            .get("diagnostics")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|d| serde_json::from_value::<Diagnostic>(d.clone()).ok())
                    .collect()
            })
            .unwrap_or_default(),
    );
    let seq = state
        .push_seq
        .fetch_add(1, Ordering::SeqCst)
        .wrapping_add(1);
    {
        let mut push = lock(&state.push);
        let entry: &mut PushEntry = push.entry(uri.to_string()).or_default();
        match version {
            Some(v) => {
                if entry.versioned.as_ref().is_none_or(|(old, _)| v >= *old) {
                    entry.versioned = Some((v, diagnostics));
                }
            }
            None => entry.unversioned = Some((seq, Instant::now(), diagnostics)),
        }
    }
    state.bump();
}

fn params_of<R: Request>(params: Value) -> std::result::Result<R::Params, (i64, String)> {
    serde_json::from_value(params)
        .map_err(|e| (INVALID_PARAMS, format!("invalid {} params: {e}", R::METHOD)))
}

fn result_of<T: serde::Serialize>(v: T) -> std::result::Result<Value, (i64, String)> {
    serde_json::to_value(v).map_err(|e| (-32603, format!("cannot answer: {e}")))
}

/// The one match over server requests. Unknown methods get MethodNotFound.
pub fn answer_request(
    method: &str,
    params: Value,
    state: &SessionState,
    workspace: &Workspace,
) -> std::result::Result<Value, (i64, String)> {
    match method {
        WorkspaceConfiguration::METHOD => {
            let p: ConfigurationParams = params_of::<WorkspaceConfiguration>(params)?;
            // No settings of our own: `null` for every item asked.
            Ok(Value::Array(vec![Value::Null; p.items.len().min(10_000)]))
        }
        WorkDoneProgressCreate::METHOD => Ok(Value::Null),
        RegisterCapability::METHOD => {
            let p: RegistrationParams = params_of::<RegisterCapability>(params)?;
            let mut map = lock(&state.registrations);
            for r in p.registrations.into_iter().take(MAX_PER_REQUEST) {
                if map.len() < MAX_REGISTRATIONS {
                    map.insert(r.id, (r.method, r.register_options));
                }
            }
            drop(map);
            state.bump();
            Ok(Value::Null)
        }
        UnregisterCapability::METHOD => {
            // The protocol spells the field `unregisterations` (lsp-types reads it so).
            let p: UnregistrationParams = params_of::<UnregisterCapability>(params)?;
            let mut map = lock(&state.registrations);
            for r in p.unregisterations {
                map.remove(&r.id);
            }
            drop(map);
            state.bump();
            Ok(Value::Null)
        }
        WorkspaceFoldersRequest::METHOD => {
            let folder =
                workspace_folder(workspace).map_err(|e: PrismError| (-32603, e.message))?;
            result_of(Some(vec![folder]))
        }
        WorkspaceDiagnosticRefresh::METHOD
        | SemanticTokensRefresh::METHOD
        | InlayHintRefreshRequest::METHOD
        | InlineValueRefreshRequest::METHOD
        | CodeLensRefresh::METHOD
        | FOLDING_RANGE_REFRESH => Ok(Value::Null),
        ShowMessageRequest::METHOD => Ok(Value::Null),
        ShowDocument::METHOD => result_of(ShowDocumentResult { success: false }),
        ApplyWorkspaceEdit::METHOD => result_of(ApplyWorkspaceEditResponse {
            applied: false,
            failure_reason: Some("prism-review applies edits only through rename()".into()),
            failed_change: None,
        }),
        _ => Err((METHOD_NOT_FOUND, format!("method not found: {method}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ws() -> Workspace {
        Workspace::new(&std::env::temp_dir().to_string_lossy()).unwrap()
    }

    #[test]
    fn every_server_request_gets_an_answer() {
        let st = SessionState::default();
        let w = ws();
        assert_eq!(
            answer_request(
                "workspace/configuration",
                json!({"items": [{}, {}, {}]}),
                &st,
                &w
            ),
            Ok(json!([null, null, null]))
        );
        assert_eq!(
            answer_request(
                "window/workDoneProgress/create",
                json!({"token": "t"}),
                &st,
                &w
            ),
            Ok(Value::Null)
        );
        assert_eq!(
            answer_request("workspace/diagnostic/refresh", Value::Null, &st, &w),
            Ok(Value::Null)
        );
        let folders = answer_request("workspace/workspaceFolders", Value::Null, &st, &w).unwrap();
        assert_eq!(folders[0]["uri"], json!(w.root_uri));
        let applied = answer_request("workspace/applyEdit", json!({}), &st, &w).unwrap();
        assert_eq!(applied["applied"], json!(false));
        assert_eq!(
            answer_request("window/showDocument", json!({}), &st, &w).unwrap(),
            json!({ "success": false })
        );
        let err = answer_request("x/unknown", Value::Null, &st, &w).unwrap_err();
        assert_eq!(err.0, METHOD_NOT_FOUND);
        // Malformed params of a known request are answered with InvalidParams.
        let err =
            answer_request("workspace/configuration", json!({"items": 3}), &st, &w).unwrap_err();
        assert_eq!(err.0, INVALID_PARAMS);
    }

    #[test]
    fn registrations_are_tracked() {
        let st = SessionState::default();
        let w = ws();
        let reg = json!({"registrations": [{"id": "1", "method": "textDocument/diagnostic", "registerOptions": {"identifier": "p"}}]});
        answer_request("client/registerCapability", reg, &st, &w).unwrap();
        assert_eq!(lock(&st.registrations).len(), 1);
        let unreg = json!({"unregisterations": [{"id": "1", "method": "textDocument/diagnostic"}]});
        answer_request("client/unregisterCapability", unreg, &st, &w).unwrap();
        assert!(lock(&st.registrations).is_empty());
    }

    #[test]
    fn versioned_publishes_keep_the_newest_and_malformed_items_drop_alone() {
        let st = SessionState::default();
        let d = |m: &str| json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}, "message": m});
        record_publish(
            &st,
            json!({"uri": "file:///a", "version": 3, "diagnostics": [d("new"), {"message": "no range"}]}),
        );
        record_publish(
            &st,
            json!({"uri": "file:///a", "version": 2, "diagnostics": [d("old")]}),
        );
        record_publish(&st, json!({"uri": "file:///a", "diagnostics": []}));
        let e = lock(&st.push).get("file:///a").cloned().unwrap();
        let (v, set) = e.versioned.unwrap();
        assert_eq!(v, 3);
        assert_eq!(set.len(), 1);
        assert_eq!(set[0].message, "new");
        let (seq, _, set) = e.unversioned.unwrap();
        assert_eq!(seq, 3);
        assert!(set.is_empty());
        // Garbage params are ignored.
        record_publish(&st, json!({"diagnostics": 5}));
    }
}
