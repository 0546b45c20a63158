//! One running language server: process, transport, the `initialize` handshake with real
//! client capabilities, and the typed protocol: [`Session::request`] / [`Session::notify`]
//! take and return `lsp_types` structs (the wire stays JSON in `transport`). Pull
//! diagnostics live here; server requests and publishes are in `server_requests`, the
//! tsserver quirk in `tsserver`.

use super::documents::{Encoding, Text, Workspace};
use super::process::{self, Launch, ServerProcess};
use super::server_requests::{self, workspace_folder};
use super::transport::Transport;
use super::tsserver;
use crate::error::{LspCode, PrismError, Result};
use crate::util::sync::lock;
use lsp_types::notification::{Initialized, Notification};
use lsp_types::request::{
    DocumentDiagnosticRequest, ExecuteCommand, Initialize, Request, Shutdown,
};
use lsp_types::{
    Diagnostic, DiagnosticRegistrationOptions, DiagnosticServerCapabilities,
    DocumentDiagnosticParams, DocumentDiagnosticReport, DocumentDiagnosticReportResult,
    HoverProviderCapability, InitializeParams, InitializedParams, OneOf, ServerCapabilities,
    TextDocumentIdentifier, Uri,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

const STDERR_TAIL: usize = 4096;

/// A document's diagnostics as the server reported them (positions in its encoding).
pub type DiagnosticSet = Arc<Vec<Diagnostic>>;

/// The latest `publishDiagnostics` for one document.
#[derive(Debug, Default, Clone)]
pub struct PushEntry {
    /// Newest set that named its version: (version, diagnostics).
    pub versioned: Option<(i64, DiagnosticSet)>,
    /// Newest set without a version: (arrival sequence, arrival time, diagnostics).
    pub unversioned: Option<(u64, Instant, DiagnosticSet)>,
}

/// Last pull (or tsserver) result for one document.
#[derive(Debug, Clone)]
pub struct PullEntry {
    pub result_id: Option<String>,
    pub items: DiagnosticSet,
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
    /// Dynamic registrations: id → (method, registerOptions).
    pub registrations: Mutex<HashMap<String, (String, Option<Value>)>>,
    pub push: Mutex<HashMap<String, PushEntry>>,
    pub pulled: Mutex<HashMap<String, PullEntry>>,
    pub open: Mutex<HashMap<String, OpenDoc>>,
    pub push_seq: AtomicU64,
    /// Bumped on every publish, registration change and re-pull.
    pub changed: Option<watch::Sender<u64>>,
    pub refreshes: AtomicU64,
    /// The server's capabilities, once initialized.
    pub caps: std::sync::OnceLock<ServerCapabilities>,
}

impl SessionState {
    pub fn bump(&self) {
        if let Some(tx) = &self.changed {
            tx.send_modify(|v| *v = v.wrapping_add(1));
        }
    }
}

/// A feature a server offers statically (its capabilities) or by registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    Hover,
    Definition,
    References,
    Rename,
    WorkspaceSymbol,
    PullDiagnostics,
}

impl Capability {
    /// The request method a registration names for it.
    pub fn method(self) -> &'static str {
        use lsp_types::request::{
            GotoDefinition, HoverRequest, References, Rename, WorkspaceSymbolRequest,
        };
        match self {
            Capability::Hover => HoverRequest::METHOD,
            Capability::Definition => GotoDefinition::METHOD,
            Capability::References => References::METHOD,
            Capability::Rename => Rename::METHOD,
            Capability::WorkspaceSymbol => WorkspaceSymbolRequest::METHOD,
            Capability::PullDiagnostics => DocumentDiagnosticRequest::METHOD,
        }
    }

    /// Whether `caps` offers it statically.
    fn offered_by(self, caps: &ServerCapabilities) -> bool {
        fn on<T>(o: &Option<OneOf<bool, T>>) -> bool {
            matches!(o, Some(OneOf::Left(true) | OneOf::Right(_)))
        }
        match self {
            Capability::Hover => matches!(
                caps.hover_provider,
                Some(HoverProviderCapability::Simple(true) | HoverProviderCapability::Options(_))
            ),
            Capability::Definition => on(&caps.definition_provider),
            Capability::References => on(&caps.references_provider),
            Capability::Rename => on(&caps.rename_provider),
            Capability::WorkspaceSymbol => on(&caps.workspace_symbol_provider),
            Capability::PullDiagnostics => caps.diagnostic_provider.is_some(),
        }
    }
}

/// A started, initialized server.
pub struct Session {
    pub name: String,
    pub transport: Arc<Transport>,
    pub capabilities: ServerCapabilities,
    pub encoding: Encoding,
    pub state: Arc<SessionState>,
    pub process: Arc<ServerProcess>,
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

/// The `initialize` parameters. Quirk: lsp-types 0.97 spells the workspace diagnostic
/// client capability `diagnostic` where the protocol (vscode-languageserver-protocol)
/// spells it `diagnostics`, so the capabilities are sent as the JSON of
/// [`client_capabilities`], checked against lsp-types by a test.
fn initialize_params(ws: &Workspace) -> Result<Value> {
    #[allow(deprecated)] // rootUri / rootPath: older servers still read them.
    let params = InitializeParams {
        process_id: Some(std::process::id()),
        client_info: Some(lsp_types::ClientInfo {
            name: "prism-review".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        root_uri: Some(uri(&ws.root_uri)?),
        root_path: Some(ws.root.to_string_lossy().to_string()),
        workspace_folders: Some(vec![workspace_folder(ws)?]),
        initialization_options: Some(json!({})),
        trace: Some(lsp_types::TraceValue::Off),
        locale: Some("en".into()),
        ..Default::default()
    };
    let mut v = serde_json::to_value(params).map_err(|e| PrismError::internal(e.to_string()))?;
    v["capabilities"] = client_capabilities();
    Ok(v)
}

/// A URI we made (`documents::path_to_uri`) as the protocol's type.
pub fn uri(s: &str) -> Result<Uri> {
    Uri::from_str(s).map_err(|e| PrismError::internal(format!("invalid URI {s:?}: {e}")))
}

/// Parameters as JSON. Quirk: some lsp-types structs serialize an absent optional
/// member as `null` (`DocumentDiagnosticParams.previousResultId`), which the protocol's
/// `member?: T` does not allow and strict servers refuse; such members are left out.
/// (No parameter we send has a member whose `null` means something.)
fn params_json<T: serde::Serialize>(params: T) -> Result<Value> {
    let mut v = serde_json::to_value(params).map_err(|e| PrismError::internal(e.to_string()))?;
    if let Value::Object(o) = &mut v {
        o.retain(|_, m| !m.is_null());
    }
    Ok(v)
}

/// Send request `R` and read its result as `R::Result`; a result of another shape is a
/// server error naming the method.
pub async fn call<R: Request>(
    transport: &Arc<Transport>,
    params: R::Params,
    timeout: Duration,
) -> Result<R::Result> {
    let v = params_json(params)?;
    let r = transport.request(R::METHOD, v, timeout).await?;
    parse_result::<R>(r)
}

fn parse_result<R: Request>(v: Value) -> Result<R::Result> {
    serde_json::from_value(v).map_err(|e| {
        PrismError::lsp(
            LspCode::Server,
            format!("{} answered with a malformed result: {e}", R::METHOD),
        )
    })
}

/// Send notification `N`.
pub fn send<N: Notification>(transport: &Transport, params: N::Params) -> Result<()> {
    let v = params_json(params)?;
    transport.notify(N::METHOD, v)
}

impl Session {
    /// Spawn the server and complete the `initialize` / `initialized` handshake.
    pub async fn start(cfg: SessionConfig) -> Result<Arc<Session>> {
        let spawned = process::spawn(cfg.launch).await?;
        let process = spawned.process;
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        if let Some(stderr) = spawned.stderr {
            tokio::spawn(keep_tail(stderr, stderr_tail.clone()));
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
        tokio::spawn(server_requests::dispatch(
            incoming,
            transport.clone(),
            state.clone(),
            cfg.workspace.clone(),
            cfg.timeout,
        ));
        let init = async {
            let params = initialize_params(&cfg.workspace)?;
            let r = transport
                .request(Initialize::METHOD, params, cfg.timeout)
                .await?;
            parse_result::<Initialize>(r)
        };
        let result = match init.await {
            Ok(r) => r,
            Err(e) => return Err(init_failed(&cfg.name, e, &process, &stderr_tail).await),
        };
        let capabilities = result.capabilities;
        let encoding =
            Encoding::from_server(capabilities.position_encoding.as_ref().map(|k| k.as_str()));
        let _ = state.caps.set(capabilities.clone());
        send::<Initialized>(&transport, InitializedParams {})?;
        Ok(Arc::new(Session {
            name: cfg.name,
            transport,
            capabilities,
            encoding,
            state,
            process,
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

    /// Send request `R` (bounded by the request timeout) and read its typed result.
    pub async fn request<R: Request>(&self, params: R::Params) -> Result<R::Result> {
        call::<R>(&self.transport, params, self.timeout).await
    }

    /// Send notification `N`.
    pub fn notify<N: Notification>(&self, params: N::Params) -> Result<()> {
        send::<N>(&self.transport, params)
    }

    /// Whether the server offers `c`, statically or by registration.
    pub fn supports(&self, c: Capability) -> bool {
        c.offered_by(&self.capabilities)
            || lock(&self.state.registrations)
                .values()
                .any(|(m, _)| m == c.method())
    }

    pub fn pull_supported(&self) -> bool {
        self.supports(Capability::PullDiagnostics)
    }

    /// Whether a document's diagnostics can be asked of tsserver (see `tsserver`).
    pub fn probe_supported(&self) -> bool {
        tsserver::offered(&self.capabilities)
    }

    /// The diagnostics tsserver has for `uri` now (syntactic, semantic, suggestion), in the
    /// negotiated encoding, kept as the document's known set for `version`.
    pub async fn probe(&self, uri: &str, version: i64) -> Result<DiagnosticSet> {
        let mut items = Vec::new();
        for kind in tsserver::TSSERVER_DIAGNOSTICS {
            let answer = self
                .request::<ExecuteCommand>(tsserver::command(kind, uri))
                .await?;
            items.extend(tsserver::answer(kind, answer)?);
        }
        if self.encoding != Encoding::Utf16 {
            // tsserver counts UTF-16 units; the sets here are in the negotiated encoding.
            let text = lock(&self.state.open).get(uri).map(|d| d.text.clone());
            if let Some(text) = text {
                let text = Text::new(&text);
                for item in &mut items {
                    for p in [&mut item.range.start, &mut item.range.end] {
                        let c = text.convert(
                            p.line.into(),
                            p.character.into(),
                            Encoding::Utf16,
                            self.encoding,
                        );
                        p.character = u32::try_from(c).unwrap_or(u32::MAX);
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

    /// `shutdown`, `exit`, close stdin, then SIGTERM / SIGKILL on the group.
    pub async fn shutdown(&self, grace: Duration) {
        if !self.is_closed() {
            let t = grace.min(self.timeout);
            let _ = call::<Shutdown>(&self.transport, (), t).await;
            let _ = send::<lsp_types::notification::Exit>(&self.transport, ());
            self.transport.close_input();
            self.process
                .wait_exit(grace.min(Duration::from_millis(500)))
                .await;
        }
        self.process.terminate(grace).await;
    }

    /// Pull diagnostics for `uri` (version `version`), honouring `previousResultId` and
    /// `unchanged`.
    pub async fn pull(&self, uri: &str, version: i64) -> Result<DiagnosticSet> {
        pull(&self.transport, &self.state, uri, version, self.timeout).await
    }
}

/// Keep the last [`STDERR_TAIL`] bytes the server wrote to stderr.
async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
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
}

/// The error of a failed `initialize`, with the server's stderr tail; the process is
/// terminated.
async fn init_failed(
    name: &str,
    e: PrismError,
    process: &ServerProcess,
    stderr_tail: &Mutex<Vec<u8>>,
) -> PrismError {
    let tail = String::from_utf8_lossy(&lock(stderr_tail)).to_string();
    process.terminate(Duration::from_millis(200)).await;
    let mut msg = format!(
        "language server {name:?} failed to initialize: {}",
        e.message
    );
    if !tail.trim().is_empty() {
        msg.push_str(&format!(" (stderr: {})", tail.trim()));
    }
    let code = match e.kind {
        crate::error::ErrorKind::Lsp(c) => c,
        _ => LspCode::Server,
    };
    PrismError::lsp(code, msg)
}

/// The identifier a pull-diagnostics server gave (statically or in its registration).
fn diagnostic_identifier(state: &SessionState) -> Option<String> {
    let stat = state.caps.get().and_then(|c| match &c.diagnostic_provider {
        Some(DiagnosticServerCapabilities::Options(o)) => o.identifier.clone(),
        Some(DiagnosticServerCapabilities::RegistrationOptions(r)) => {
            r.diagnostic_options.identifier.clone()
        }
        None => None,
    });
    stat.or_else(|| {
        lock(&state.registrations)
            .values()
            .filter(|(m, _)| m == DocumentDiagnosticRequest::METHOD)
            .find_map(|(_, opts)| {
                let o: DiagnosticRegistrationOptions =
                    serde_json::from_value(opts.clone()?).ok()?;
                o.diagnostic_options.identifier
            })
    })
}

/// What one pull answered: the items, or `unchanged` (reuse the previous set).
enum Pulled {
    Items(Option<String>, Vec<Diagnostic>),
    Unchanged(String),
}

fn pulled(r: DocumentDiagnosticReportResult) -> Pulled {
    match r {
        DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(f)) => {
            let f = f.full_document_diagnostic_report;
            Pulled::Items(f.result_id, f.items)
        }
        DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Unchanged(u)) => {
            Pulled::Unchanged(u.unchanged_document_diagnostic_report.result_id)
        }
        // A partial result without a report carries no items for this document.
        DocumentDiagnosticReportResult::Partial(_) => Pulled::Items(None, Vec::new()),
    }
}

pub async fn pull(
    transport: &Arc<Transport>,
    state: &Arc<SessionState>,
    uri_text: &str,
    version: i64,
    timeout: Duration,
) -> Result<DiagnosticSet> {
    let mut attempts = 0;
    loop {
        attempts += 1;
        let previous = lock(&state.pulled).get(uri_text).cloned();
        let params = DocumentDiagnosticParams {
            text_document: TextDocumentIdentifier {
                uri: uri(uri_text)?,
            },
            identifier: diagnostic_identifier(state),
            previous_result_id: previous.as_ref().and_then(|p| p.result_id.clone()),
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        let result = match call::<DocumentDiagnosticRequest>(transport, params, timeout).await {
            Ok(r) => r,
            // ServerCancelled: the server asks to be asked again.
            Err(e) if e.message.contains("error -32802") && attempts < 3 => continue,
            Err(e) => return Err(e),
        };
        let (result_id, items) = match pulled(result) {
            Pulled::Items(id, items) => (id, Arc::new(items)),
            Pulled::Unchanged(id) => match previous {
                Some(p) => (Some(id), p.items),
                None if attempts < 3 => {
                    lock(&state.pulled).remove(uri_text);
                    continue;
                }
                None => {
                    return Err(PrismError::lsp(
                        LspCode::Server,
                        "server answered `unchanged` without a previous result",
                    ))
                }
            },
        };
        lock(&state.pulled).insert(
            uri_text.to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn initialize_params_are_typed_and_carry_the_protocol_capabilities() {
        let ws = Workspace::new(&std::env::temp_dir().to_string_lossy()).unwrap();
        let v = initialize_params(&ws).unwrap();
        let p: InitializeParams = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(p.process_id, Some(std::process::id()));
        assert_eq!(p.workspace_folders.unwrap()[0].uri.as_str(), ws.root_uri);
        assert_eq!(v["rootUri"], json!(ws.root_uri));
        assert_eq!(v["capabilities"], client_capabilities());
    }

    #[test]
    fn absent_members_are_left_out_not_null() {
        let p = DocumentDiagnosticParams {
            text_document: TextDocumentIdentifier {
                uri: uri("file:///a.ts").unwrap(),
            },
            identifier: None,
            previous_result_id: None,
            work_done_progress_params: Default::default(),
            partial_result_params: Default::default(),
        };
        assert_eq!(
            params_json(p).unwrap(),
            json!({ "textDocument": { "uri": "file:///a.ts" } })
        );
    }

    #[test]
    fn capabilities_static_shapes() {
        let caps: ServerCapabilities = serde_json::from_value(json!({
            "hoverProvider": true, "definitionProvider": { "workDoneProgress": false },
            "referencesProvider": false, "renameProvider": { "prepareProvider": false }
        }))
        .unwrap();
        assert!(Capability::Hover.offered_by(&caps));
        assert!(Capability::Definition.offered_by(&caps));
        assert!(!Capability::References.offered_by(&caps));
        assert!(Capability::Rename.offered_by(&caps));
        assert!(!Capability::WorkspaceSymbol.offered_by(&caps));
        assert!(!Capability::PullDiagnostics.offered_by(&caps));
    }

    #[test]
    fn pull_reports_read_as_items_or_unchanged() {
        let full: DocumentDiagnosticReportResult = serde_json::from_value(json!({
            "kind": "full", "resultId": "r1",
            "items": [{ "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 1 } }, "message": "m" }]
        }))
        .unwrap();
        assert!(
            matches!(pulled(full), Pulled::Items(Some(id), items) if id == "r1" && items.len() == 1)
        );
        let same: DocumentDiagnosticReportResult =
            serde_json::from_value(json!({ "kind": "unchanged", "resultId": "r1" })).unwrap();
        assert!(matches!(pulled(same), Pulled::Unchanged(id) if id == "r1"));
    }
}
