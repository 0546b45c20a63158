//! One running language server: process, transport, `initialize` handshake with real
//! client capabilities, the server-request dispatcher (one match, default MethodNotFound),
//! push-diagnostic bookkeeping, pull diagnostics, and on-demand diagnostics through
//! typescript-language-server's `typescript.tsserverRequest` command.

use super::documents::{Encoding, Text, Workspace};
use super::process::{self, Launch, ServerProcess};
use super::transport::{Incoming, ServerMessage, Transport};
use crate::error::{LspCode, PrismError, Result};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

/// JSON-RPC MethodNotFound.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The command typescript-language-server offers to forward one request to tsserver.
pub const TSSERVER_REQUEST: &str = "typescript.tsserverRequest";
/// tsserver's on-demand diagnostics, in the order typescript-language-server publishes
/// the kinds.
const TSSERVER_DIAGNOSTICS: [&str; 3] = [
    "syntacticDiagnosticsSync",
    "semanticDiagnosticsSync",
    "suggestionDiagnosticsSync",
];
const STDERR_TAIL: usize = 4096;

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The latest `publishDiagnostics` for one document.
#[derive(Debug, Default, Clone)]
pub struct PushEntry {
    /// Newest set that named its version: (version, diagnostics).
    pub versioned: Option<(i64, Arc<Vec<Value>>)>,
    /// Newest set without a version: (arrival sequence, arrival time, diagnostics).
    pub unversioned: Option<(u64, Instant, Arc<Vec<Value>>)>,
}

/// Last pull result for one document.
#[derive(Debug, Clone)]
pub struct PullEntry {
    pub result_id: Option<String>,
    pub items: Arc<Vec<Value>>,
    pub version: i64,
}

/// A document open in this session.
#[derive(Debug, Clone)]
pub struct OpenDoc {
    pub version: i64,
    pub text: Arc<String>,
    /// Line index of `text` (see `documents::line_starts`).
    pub lines: Arc<Vec<usize>>,
    /// Push sequence number when this version was sent: unversioned publishes after it
    /// belong to this version.
    pub push_mark: u64,
}

/// State shared by the session and its dispatcher task.
#[derive(Default)]
pub struct SessionState {
    pub registrations: Mutex<HashMap<String, (String, Value)>>,
    pub push: Mutex<HashMap<String, PushEntry>>,
    pub pulled: Mutex<HashMap<String, PullEntry>>,
    pub open: Mutex<HashMap<String, OpenDoc>>,
    pub push_seq: AtomicU64,
    /// Bumped on every publish, registration change and re-pull.
    pub changed: Option<watch::Sender<u64>>,
    pub refreshes: AtomicU64,
    /// The server's capabilities, once initialized.
    pub caps: std::sync::OnceLock<Value>,
}

impl SessionState {
    fn bump(&self) {
        if let Some(tx) = &self.changed {
            tx.send_modify(|v| *v = v.wrapping_add(1));
        }
    }
}

/// A started, initialized server.
pub struct Session {
    pub name: String,
    pub transport: Arc<Transport>,
    pub capabilities: Value,
    pub encoding: Encoding,
    pub state: Arc<SessionState>,
    pub process: Arc<ServerProcess>,
    pub stderr_tail: Arc<Mutex<Vec<u8>>>,
    pub timeout: Duration,
    changed_rx: watch::Receiver<u64>,
}

pub struct SessionConfig {
    pub name: String,
    pub launch: Launch,
    pub workspace: Workspace,
    pub max_message: usize,
    pub max_pending: usize,
    pub timeout: Duration,
}

/// Real client capabilities (LSP 3.17).
pub fn client_capabilities() -> Value {
    json!({
        "general": { "positionEncodings": ["utf-8", "utf-16"] },
        "workspace": {
            "configuration": true,
            "workspaceFolders": true,
            "applyEdit": false,
            "symbol": { "dynamicRegistration": true },
            "diagnostics": { "refreshSupport": true },
            "didChangeConfiguration": { "dynamicRegistration": true },
            "didChangeWatchedFiles": { "dynamicRegistration": false }
        },
        "textDocument": {
            "synchronization": { "dynamicRegistration": true, "didSave": false, "willSave": false, "willSaveWaitUntil": false },
            "publishDiagnostics": {
                "versionSupport": true,
                "relatedInformation": false,
                "codeDescriptionSupport": true,
                "dataSupport": false,
                "tagSupport": { "valueSet": [1, 2] }
            },
            "diagnostic": { "dynamicRegistration": true, "relatedDocumentSupport": false },
            "hover": { "dynamicRegistration": true, "contentFormat": ["markdown", "plaintext"] },
            "definition": { "dynamicRegistration": true, "linkSupport": true },
            "references": { "dynamicRegistration": true },
            "rename": { "dynamicRegistration": true, "prepareSupport": false },
            "documentSymbol": { "hierarchicalDocumentSymbolSupport": true }
        },
        "window": { "workDoneProgress": true, "showMessage": { "messageActionItem": { "additionalPropertiesSupport": false } } }
    })
}

impl Session {
    /// Spawn the server and complete the `initialize` / `initialized` handshake.
    pub async fn start(cfg: SessionConfig) -> Result<Arc<Session>> {
        let spawned = process::spawn(cfg.launch).await?;
        let process = spawned.process;
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut stderr) = spawned.stderr {
            let tail = stderr_tail.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut t = lock(&tail);
                    t.extend_from_slice(buf.get(..n).unwrap_or(&[]));
                    let excess = t.len().saturating_sub(STDERR_TAIL);
                    if excess > 0 {
                        t.drain(..excess);
                    }
                }
            });
        }
        let (transport, incoming) = Transport::start(
            spawned.stdout,
            spawned.stdin,
            cfg.max_message,
            cfg.max_pending,
        );
        // When the connection closes for any reason, the group goes with it.
        {
            let mut closed = transport.subscribe_closed();
            let weak: Weak<ServerProcess> = Arc::downgrade(&process);
            tokio::spawn(async move {
                let _ = closed.wait_for(|c| *c).await;
                if let Some(p) = weak.upgrade() {
                    p.terminate(Duration::from_millis(0)).await;
                }
            });
        }
        let (changed_tx, changed_rx) = watch::channel(0u64);
        let state = Arc::new(SessionState {
            changed: Some(changed_tx),
            ..Default::default()
        });
        tokio::spawn(dispatch(
            incoming,
            transport.clone(),
            state.clone(),
            cfg.workspace.clone(),
            cfg.timeout,
        ));
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": { "name": "prism-review", "version": env!("CARGO_PKG_VERSION") },
            "rootUri": cfg.workspace.root_uri,
            "rootPath": cfg.workspace.root.to_string_lossy(),
            "workspaceFolders": [workspace_folder(&cfg.workspace)],
            "capabilities": client_capabilities(),
            "initializationOptions": {},
            "trace": "off",
            "locale": "en"
        });
        let init = transport.request("initialize", params, cfg.timeout).await;
        let result = match init {
            Ok(r) => r,
            Err(e) => {
                let tail = String::from_utf8_lossy(&lock(&stderr_tail)).to_string();
                process.terminate(Duration::from_millis(200)).await;
                let mut msg = format!(
                    "language server {:?} failed to initialize: {}",
                    cfg.name, e.message
                );
                if !tail.trim().is_empty() {
                    msg.push_str(&format!(" (stderr: {})", tail.trim()));
                }
                let code = match e.kind {
                    crate::error::ErrorKind::Lsp(c) => c,
                    _ => LspCode::Server,
                };
                return Err(PrismError::lsp(code, msg));
            }
        };
        let capabilities = result.get("capabilities").cloned().unwrap_or(json!({}));
        let encoding =
            Encoding::from_server(capabilities.get("positionEncoding").and_then(Value::as_str));
        let _ = state.caps.set(capabilities.clone());
        transport.notify("initialized", json!({}))?;
        Ok(Arc::new(Session {
            name: cfg.name.to_string(),
            transport,
            capabilities,
            encoding,
            state,
            process,
            stderr_tail,
            timeout: cfg.timeout,
            changed_rx,
        }))
    }

    pub fn is_closed(&self) -> bool {
        self.transport.closed().is_some()
    }

    /// A watch that changes on every publish / registration / re-pull.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed_rx.clone()
    }

    /// Whether the server offers `method`, statically (`capability`) or by registration.
    pub fn supports(&self, capability: &str, method: &str) -> bool {
        let stat = match self.capabilities.get(capability) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(_) => true,
        };
        stat || lock(&self.state.registrations)
            .values()
            .any(|(m, _)| m == method)
    }

    pub fn pull_supported(&self) -> bool {
        self.supports("diagnosticProvider", "textDocument/diagnostic")
    }

    /// Whether the server forwards requests to tsserver (typescript-language-server), so
    /// a document's diagnostics can be asked for instead of waited for.
    pub fn probe_supported(&self) -> bool {
        self.capabilities
            .get("executeCommandProvider")
            .and_then(|p| p.get("commands"))
            .and_then(Value::as_array)
            .is_some_and(|c| c.iter().any(|x| x == TSSERVER_REQUEST))
    }

    /// The diagnostics tsserver has for `uri` now: syntactic, semantic and suggestion, as
    /// typescript-language-server would publish them. The server handles messages in
    /// order, so the answer is for the last text synced before the request. Kept as the
    /// document's known set for `version`.
    pub async fn probe(&self, uri: &str, version: i64) -> Result<Arc<Vec<Value>>> {
        let mut items = Vec::new();
        for command in TSSERVER_DIAGNOSTICS {
            let args =
                json!({ "command": TSSERVER_REQUEST, "arguments": [command, { "file": uri }] });
            let answer = self.request("workspace/executeCommand", args).await?;
            match (answer.get("success"), answer.get("body")) {
                (Some(Value::Bool(true)), Some(Value::Array(body))) => {
                    items.extend(body.iter().map(tsserver_diagnostic))
                }
                _ => {
                    return Err(PrismError::lsp(
                        LspCode::Server,
                        format!("{TSSERVER_REQUEST} {command} answered without diagnostics"),
                    ))
                }
            }
        }
        if self.encoding != Encoding::Utf16 {
            // tsserver counts UTF-16 units; the sets here are in the negotiated encoding.
            let text = lock(&self.state.open).get(uri).map(|d| d.text.clone());
            if let Some(text) = text {
                let text = Text::new(&text);
                for item in &mut items {
                    for end in ["start", "end"] {
                        let p = &mut item["range"][end];
                        let (l, c) = (p["line"].as_u64(), p["character"].as_u64());
                        if let (Some(l), Some(c)) = (l, c) {
                            p["character"] =
                                text.convert(l, c, Encoding::Utf16, self.encoding).into();
                        }
                    }
                }
            }
        }
        let items = Arc::new(items);
        lock(&self.state.pulled).insert(
            uri.to_string(),
            PullEntry {
                result_id: None,
                items: items.clone(),
                version,
            },
        );
        Ok(items)
    }

    pub async fn request(&self, method: &str, params: Value) -> Result<Value> {
        self.transport.request(method, params, self.timeout).await
    }

    /// `shutdown`, `exit`, close stdin, then SIGTERM / SIGKILL on the group.
    pub async fn shutdown(&self, grace: Duration) {
        if !self.is_closed() {
            let t = grace.min(self.timeout);
            let _ = self.transport.request("shutdown", Value::Null, t).await;
            let _ = self.transport.notify("exit", Value::Null);
            self.transport.close_input();
            self.process
                .wait_exit(grace.min(Duration::from_millis(500)))
                .await;
        }
        self.process.terminate(grace).await;
    }

    /// Pull diagnostics for `uri` (version `version`), honouring `previousResultId` and
    /// `unchanged`.
    pub async fn pull(&self, uri: &str, version: i64) -> Result<Arc<Vec<Value>>> {
        pull(&self.transport, &self.state, uri, version, self.timeout).await
    }

    pub fn stderr_tail(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr_tail))
            .trim()
            .to_string()
    }
}

/// A tsserver diagnostic (`start`/`end` as 1-based `line`/`offset` in UTF-16 units) as the
/// LSP diagnostic typescript-language-server publishes for it (its `toDiagnostic`), so a
/// set read on demand and a published set of the same text normalize alike.
fn tsserver_diagnostic(d: &Value) -> Value {
    let position = |key: &str| {
        let at = |field: &str| {
            d.get(key)
                .and_then(|p| p.get(field))
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .saturating_sub(1)
        };
        json!({ "line": at("line"), "character": at("offset") })
    };
    let severity = match d.get("category").and_then(Value::as_str) {
        Some("warning") => 2,
        Some("suggestion") => 4,
        _ => 1,
    };
    let mut out = json!({
        "range": { "start": position("start"), "end": position("end") },
        "message": d.get("text").and_then(Value::as_str).unwrap_or(""),
        "severity": severity,
        "source": d.get("source").and_then(Value::as_str).unwrap_or("typescript"),
    });
    if let Some(code) = d.get("code").filter(|c| c.is_number() || c.is_string()) {
        out["code"] = code.clone();
    }
    out
}

fn workspace_folder(ws: &Workspace) -> Value {
    let name = ws
        .root
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "workspace".into());
    json!({ "uri": ws.root_uri, "name": name })
}

fn diagnostic_identifier(state: &SessionState) -> Option<Value> {
    if let Some(id) = state
        .caps
        .get()
        .and_then(|c| c.get("diagnosticProvider"))
        .and_then(|d| d.get("identifier"))
        .filter(|v| v.is_string())
    {
        return Some(id.clone());
    }
    lock(&state.registrations)
        .values()
        .find(|(m, _)| m == "textDocument/diagnostic")
        .and_then(|(_, opts)| opts.get("identifier").filter(|v| v.is_string()).cloned())
}

async fn pull(
    transport: &Arc<Transport>,
    state: &Arc<SessionState>,
    uri: &str,
    version: i64,
    timeout: Duration,
) -> Result<Arc<Vec<Value>>> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let previous = lock(&state.pulled).get(uri).cloned();
        let mut params = json!({ "textDocument": { "uri": uri } });
        if let Some(id) = previous.as_ref().and_then(|p| p.result_id.clone()) {
            params["previousResultId"] = Value::String(id);
        }
        if let Some(ident) = diagnostic_identifier(state) {
            params["identifier"] = ident;
        }
        let result = match transport
            .request("textDocument/diagnostic", params, timeout)
            .await
        {
            Ok(r) => r,
            // ServerCancelled: the server asks to be asked again.
            Err(e) if e.message.contains("error -32802") && attempts < 3 => continue,
            Err(e) => return Err(e),
        };
        let result_id = result
            .get("resultId")
            .and_then(Value::as_str)
            .map(str::to_string);
        let items = match result.get("kind").and_then(Value::as_str) {
            Some("unchanged") => match previous {
                Some(p) => p.items,
                None if attempts < 3 => {
                    lock(&state.pulled).remove(uri);
                    continue;
                }
                None => {
                    return Err(PrismError::lsp(
                        LspCode::Server,
                        "server answered `unchanged` without a previous result",
                    ))
                }
            },
            _ => Arc::new(
                result
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            ),
        };
        lock(&state.pulled).insert(
            uri.to_string(),
            PullEntry {
                result_id,
                items: items.clone(),
                version,
            },
        );
        state.bump();
        return Ok(items);
    }
}

/// Answer every server request; record notifications.
async fn dispatch(
    mut incoming: Incoming,
    transport: Arc<Transport>,
    state: Arc<SessionState>,
    workspace: Workspace,
    timeout: Duration,
) {
    while let Some(msg) = incoming.recv().await {
        match msg {
            ServerMessage::Request { id, method, params } => {
                let answer = answer_request(&method, &params, &state, &workspace);
                let _ = transport.respond(id, answer);
                if method == "workspace/diagnostic/refresh" {
                    // Acknowledged above; now re-pull every open document.
                    state.refreshes.fetch_add(1, Ordering::SeqCst);
                    let t = transport.clone();
                    let st = state.clone();
                    tokio::spawn(async move {
                        let docs: Vec<(String, i64)> = lock(&st.open)
                            .iter()
                            .map(|(u, d)| (u.clone(), d.version))
                            .collect();
                        for (uri, version) in docs {
                            let _ = pull(&t, &st, &uri, version, timeout).await;
                        }
                    });
                }
            }
            ServerMessage::Notification { method, params } => {
                if method == "textDocument/publishDiagnostics" {
                    record_publish(&state, &params);
                }
            }
        }
    }
}

fn record_publish(state: &SessionState, params: &Value) {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return;
    };
    let diagnostics = Arc::new(
        params
            .get("diagnostics")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
    );
    let seq = state
        .push_seq
        .fetch_add(1, Ordering::SeqCst)
        .wrapping_add(1);
    {
        let mut push = lock(&state.push);
        let entry = push.entry(uri.to_string()).or_default();
        match params.get("version").and_then(Value::as_i64) {
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

/// The one match over server requests. Unknown methods get MethodNotFound.
fn answer_request(
    method: &str,
    params: &Value,
    state: &SessionState,
    workspace: &Workspace,
) -> std::result::Result<Value, (i64, String)> {
    match method {
        "workspace/configuration" => {
            let n = params
                .get("items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
                .min(10_000);
            Ok(Value::Array(vec![Value::Null; n]))
        }
        "window/workDoneProgress/create" => Ok(Value::Null),
        "client/registerCapability" => {
            if let Some(regs) = params.get("registrations").and_then(Value::as_array) {
                let mut map = lock(&state.registrations);
                for r in regs.iter().take(1000) {
                    if let (Some(id), Some(m)) = (
                        r.get("id").and_then(Value::as_str),
                        r.get("method").and_then(Value::as_str),
                    ) {
                        if map.len() < 10_000 {
                            map.insert(
                                id.to_string(),
                                (
                                    m.to_string(),
                                    r.get("registerOptions").cloned().unwrap_or(Value::Null),
                                ),
                            );
                        }
                    }
                }
            }
            state.bump();
            Ok(Value::Null)
        }
        "client/unregisterCapability" => {
            // The protocol spells the field `unregisterations`.
            let list = params
                .get("unregisterations")
                .or_else(|| params.get("unregistrations"))
                .and_then(Value::as_array);
            if let Some(list) = list {
                let mut map = lock(&state.registrations);
                for r in list {
                    if let Some(id) = r.get("id").and_then(Value::as_str) {
                        map.remove(id);
                    }
                }
            }
            state.bump();
            Ok(Value::Null)
        }
        "workspace/workspaceFolders" => Ok(json!([workspace_folder(workspace)])),
        "workspace/diagnostic/refresh"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/inlineValue/refresh"
        | "workspace/codeLens/refresh"
        | "workspace/foldingRange/refresh" => Ok(Value::Null),
        "window/showMessageRequest" => Ok(Value::Null),
        "window/showDocument" => Ok(json!({ "success": false })),
        "workspace/applyEdit" => Ok(json!({
            "applied": false,
            "failureReason": "prism-review applies edits only through rename()"
        })),
        _ => Err((METHOD_NOT_FOUND, format!("method not found: {method}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsserver_diagnostics_read_like_typescript_language_server_publishes_them() {
        let d = json!({
            "start": { "line": 2, "offset": 5 }, "end": { "line": 2, "offset": 11 },
            "text": "'x' is declared but its value is never read.", "code": 6133,
            "category": "suggestion", "reportsUnnecessary": true
        });
        assert_eq!(
            tsserver_diagnostic(&d),
            json!({
                "range": { "start": { "line": 1, "character": 4 }, "end": { "line": 1, "character": 10 } },
                "message": "'x' is declared but its value is never read.",
                "severity": 4, "source": "typescript", "code": 6133
            })
        );
        let w = json!({ "start": { "line": 1, "offset": 1 }, "end": { "line": 1, "offset": 2 },
            "text": "w", "category": "warning", "source": "ts-plugin", "code": "X1" });
        let w = tsserver_diagnostic(&w);
        assert_eq!(
            (
                w["severity"].clone(),
                w["source"].clone(),
                w["code"].clone()
            ),
            (json!(2), json!("ts-plugin"), json!("X1"))
        );
        // Unknown categories are errors (as typescript-language-server maps them); missing
        // positions stay inside the document; a code of another type is dropped.
        let m = tsserver_diagnostic(&json!({ "category": "message", "text": "m", "code": [1] }));
        assert_eq!(m["severity"], json!(1));
        assert_eq!(m["range"]["start"], json!({ "line": 0, "character": 0 }));
        assert!(m.get("code").is_none());
    }

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
                &json!({"items": [{}, {}, {}]}),
                &st,
                &w
            ),
            Ok(json!([null, null, null]))
        );
        assert_eq!(
            answer_request("window/workDoneProgress/create", &json!({}), &st, &w),
            Ok(Value::Null)
        );
        assert_eq!(
            answer_request("workspace/diagnostic/refresh", &Value::Null, &st, &w),
            Ok(Value::Null)
        );
        let folders = answer_request("workspace/workspaceFolders", &Value::Null, &st, &w).unwrap();
        assert_eq!(folders[0]["uri"], json!(w.root_uri));
        let applied = answer_request("workspace/applyEdit", &json!({}), &st, &w).unwrap();
        assert_eq!(applied["applied"], json!(false));
        let err = answer_request("x/unknown", &Value::Null, &st, &w).unwrap_err();
        assert_eq!(err.0, METHOD_NOT_FOUND);
    }

    #[test]
    fn client_capabilities_are_valid_lsp_types() {
        // Deserialising into lsp-types proves the field names: a misspelt field would
        // be dropped and read back as None.
        let caps: lsp_types::ClientCapabilities =
            serde_json::from_value(client_capabilities()).unwrap();
        let general = caps.general.unwrap();
        assert_eq!(
            general.position_encodings.unwrap(),
            vec![
                lsp_types::PositionEncodingKind::UTF8,
                lsp_types::PositionEncodingKind::UTF16
            ]
        );
        let td = caps.text_document.unwrap();
        assert_eq!(td.publish_diagnostics.unwrap().version_support, Some(true));
        assert!(td.diagnostic.is_some());
        assert_eq!(td.definition.unwrap().link_support, Some(true));
        let ws = caps.workspace.unwrap();
        assert_eq!(ws.configuration, Some(true));
        assert_eq!(ws.workspace_folders, Some(true));
        assert_eq!(caps.window.unwrap().work_done_progress, Some(true));
        // The protocol spells it `workspace.diagnostics` (vscode-languageserver-protocol);
        // lsp-types 0.97 reads `diagnostic`, so this one is checked on the JSON.
        assert_eq!(
            client_capabilities()["workspace"]["diagnostics"]["refreshSupport"],
            json!(true)
        );
    }

    #[test]
    fn registrations_are_tracked() {
        let st = SessionState::default();
        let w = ws();
        let reg = json!({"registrations": [{"id": "1", "method": "textDocument/diagnostic", "registerOptions": {"identifier": "p"}}]});
        answer_request("client/registerCapability", &reg, &st, &w).unwrap();
        assert_eq!(lock(&st.registrations).len(), 1);
        let unreg = json!({"unregisterations": [{"id": "1", "method": "textDocument/diagnostic"}]});
        answer_request("client/unregisterCapability", &unreg, &st, &w).unwrap();
        assert!(lock(&st.registrations).is_empty());
    }

    #[test]
    fn versioned_publishes_keep_the_newest() {
        let st = SessionState::default();
        record_publish(
            &st,
            &json!({"uri": "file:///a", "version": 3, "diagnostics": [{"message": "new"}]}),
        );
        record_publish(
            &st,
            &json!({"uri": "file:///a", "version": 2, "diagnostics": [{"message": "old"}]}),
        );
        record_publish(&st, &json!({"uri": "file:///a", "diagnostics": []}));
        let e = lock(&st.push).get("file:///a").cloned().unwrap();
        let (v, set) = e.versioned.unwrap();
        assert_eq!(v, 3);
        assert_eq!(set[0]["message"], json!("new"));
        let (seq, _, set) = e.unversioned.unwrap();
        assert_eq!(seq, 3);
        assert!(set.is_empty());
        // Garbage params are ignored.
        record_publish(&st, &json!({"diagnostics": 5}));
    }
}
