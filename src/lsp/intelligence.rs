//! The public operations of `LanguageIntelligence`: options and caps, lazy server start
//! with a restart budget, document sync, diagnostics (push with version matching, pull
//! with result ids) and their deltas, hover / definitions / references / workspace
//! symbols, and policy-checked atomic renames (planned here, applied after the JS layer
//! consulted the host's policy).

use super::client::{lock, OpenDoc, Session, SessionConfig};
use super::documents::{language_id, line_starts, path_to_uri, Encoding, Text, Workspace};
use super::edits::{self, TextEdit};
use super::process::Launch;
use crate::diagnostics::{self as diag, NormalizeOptions, NormalizedDiagnostic};
use crate::error::{LspCode, PrismError, Result};
use crate::json::{type_name, Fields};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// (name, default, hard) of every cap.
pub const LIMITS: [(&str, u64, u64); 8] = [
    ("maxMessageBytes", 4 * 1024 * 1024, 32 * 1024 * 1024),
    ("maxDiagnosticsPerFile", 200, 1000),
    ("maxPendingRequests", 32, 128),
    ("maxResultsPerQuery", 500, 5000),
    ("requestTimeoutMs", 30_000, 120_000),
    ("maxServers", 4, 8),
    ("maxRestartsPerServer", 3, 10),
    ("restartWindowMs", 60_000, 3_600_000),
];

/// Names this package used before it took @arnilo/prism's, for a helpful error.
const RENAMED_LIMITS: [(&str, &str); 2] = [
    ("maxResults", "maxResultsPerQuery"),
    ("maxRestarts", "maxRestartsPerServer"),
];

/// How long an unversioned push set must stay unchanged before it is taken as the set
/// of the synced version (servers without `version` publish in several steps).
const SETTLE: Duration = Duration::from_millis(300);
/// Grace period of `dispose()` between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
const MAX_PLANS: usize = 16;
/// `source` of a server diagnostic that names none.
const LSP_SOURCE: &str = "lsp";

/// Effective caps.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_message: usize,
    pub max_diagnostics: usize,
    pub max_pending: usize,
    pub max_results: usize,
    pub timeout: Duration,
    pub max_servers: usize,
    /// Restarts (starts after the first) allowed within any `restart_window`.
    pub max_restarts: u32,
    pub restart_window: Duration,
}

fn type_err(message: String) -> PrismError {
    PrismError::type_error(message)
}

fn lsp(code: LspCode, message: impl Into<String>) -> PrismError {
    PrismError::lsp(code, message)
}

fn disposed() -> PrismError {
    lsp(LspCode::Server, "LanguageIntelligence has been disposed")
}

impl Limits {
    pub fn parse(value: Option<&Value>) -> Result<Limits> {
        let mut got: HashMap<&str, u64> = LIMITS.iter().map(|(n, d, _)| (*n, *d)).collect();
        if let Some(v) = value {
            let f = Fields::new(v, "options.limits", type_err)?;
            for key in f.object().keys() {
                if !LIMITS.iter().any(|(n, _, _)| n == key) {
                    let hint = RENAMED_LIMITS
                        .iter()
                        .find(|(old, _)| old == key)
                        .map(|(_, new)| format!(" (it is called {new})"))
                        .unwrap_or_default();
                    return Err(type_err(format!(
                        "options.limits.{key} is not a known limit{hint}"
                    )));
                }
            }
            for (name, _, hard) in LIMITS {
                match f.get(name) {
                    None => {}
                    Some(Value::Number(n)) => {
                        let ok = n.as_u64().filter(|x| (1..=hard).contains(x));
                        match ok {
                            Some(x) => {
                                got.insert(name, x);
                            }
                            None => {
                                return Err(PrismError::range(format!(
                                    "options.limits.{name} must be an integer in 1..{hard}, got {n}"
                                )))
                            }
                        }
                    }
                    Some(other) => {
                        return Err(type_err(format!(
                            "options.limits.{name} must be a number, got {}",
                            type_name(other)
                        )))
                    }
                }
            }
        }
        let g = |n: &str| got.get(n).copied().unwrap_or(1);
        Ok(Limits {
            max_message: g("maxMessageBytes") as usize,
            max_diagnostics: g("maxDiagnosticsPerFile") as usize,
            max_pending: g("maxPendingRequests") as usize,
            max_results: g("maxResultsPerQuery") as usize,
            timeout: Duration::from_millis(g("requestTimeoutMs")),
            max_servers: g("maxServers") as usize,
            max_restarts: g("maxRestartsPerServer") as u32,
            restart_window: Duration::from_millis(g("restartWindowMs")),
        })
    }
}

impl Limits {
    /// `resolveLanguageIntelligenceLimits(limits?)`: every cap by its name.
    pub fn resolve_json(text: &str) -> Result<Value> {
        let v = crate::json::parse(text, type_err)?;
        let l = Limits::parse(Some(&v).filter(|v| !v.is_null()))?;
        Ok(json!({
            "maxMessageBytes": l.max_message,
            "maxDiagnosticsPerFile": l.max_diagnostics,
            "maxPendingRequests": l.max_pending,
            "maxResultsPerQuery": l.max_results,
            "requestTimeoutMs": l.timeout.as_millis() as u64,
            "maxServers": l.max_servers,
            "maxRestartsPerServer": l.max_restarts,
            "restartWindowMs": l.restart_window.as_millis() as u64,
        }))
    }
}

/// One configured server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub languages: Vec<String>,
    pub env: Vec<(String, String)>,
}

fn string_list(
    f: &Fields<'_>,
    name: &str,
    max_items: usize,
    required: bool,
) -> Result<Vec<String>> {
    let Some(items) = f.opt_array(name)? else {
        if required {
            return Err(f.fail(name, "is required (an array of strings)"));
        }
        return Ok(Vec::new());
    };
    if items.len() > max_items {
        return Err(lsp(
            LspCode::Limit,
            format!(
                "{} has {} items; at most {max_items} are allowed",
                f.path(name),
                items.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.iter().enumerate() {
        match v {
            Value::String(s) if s.len() <= 4096 && !s.contains('\0') => out.push(s.clone()),
            Value::String(_) => {
                return Err(lsp(
                    LspCode::Limit,
                    format!(
                        "{}[{i}] is longer than 4096 bytes or holds NUL",
                        f.path(name)
                    ),
                ))
            }
            other => {
                return Err(type_err(format!(
                    "{}[{i}] must be a string, got {}",
                    f.path(name),
                    type_name(other)
                )))
            }
        }
    }
    Ok(out)
}

fn parse_servers(v: &Value, max_servers: usize) -> Result<Vec<ServerConfig>> {
    let Value::Object(map) = v else {
        return Err(type_err(format!(
            "options.servers must be an object, got {}",
            type_name(v)
        )));
    };
    if map.len() > max_servers {
        return Err(lsp(
            LspCode::Limit,
            format!(
                "options.servers has {} servers; maxServers is {max_servers}",
                map.len()
            ),
        ));
    }
    let mut out = Vec::new();
    for (name, cfg) in map {
        if name.is_empty() || name.len() > 128 {
            return Err(type_err("options.servers keys must be 1..128 bytes".into()));
        }
        let path = format!("options.servers.{name}");
        let f = Fields::new(cfg, &path, type_err)?;
        let command = f.non_empty_str("command")?;
        if command.len() > 4096 || command.contains('\0') {
            return Err(lsp(
                LspCode::Limit,
                format!("{path}.command is longer than 4096 bytes or holds NUL"),
            ));
        }
        let args = string_list(&f, "args", 256, false)?;
        let languages = string_list(&f, "languages", 64, true)?;
        if languages.is_empty() {
            return Err(type_err(format!("{path}.languages must not be empty")));
        }
        let mut env = Vec::new();
        if let Some(e) = f.opt_object("env")? {
            if e.object().len() > 256 {
                return Err(lsp(
                    LspCode::Limit,
                    format!("{path}.env has more than 256 entries"),
                ));
            }
            for (k, v) in e.object() {
                let Value::String(s) = v else {
                    return Err(type_err(format!(
                        "{path}.env.{k} must be a string, got {}",
                        type_name(v)
                    )));
                };
                if k.is_empty()
                    || k.contains('=')
                    || k.contains('\0')
                    || s.contains('\0')
                    || k.len() + s.len() > 32 * 1024
                {
                    return Err(type_err(format!(
                        "{path}.env.{k} is not a valid environment entry"
                    )));
                }
                env.push((k.clone(), s.clone()));
            }
        }
        out.push(ServerConfig {
            name: name.clone(),
            command: command.to_string(),
            args,
            languages,
            env,
        });
    }
    Ok(out)
}

/// The outcome of one server start, shared by every caller that waits for it.
type StartOutcome = Option<Result<Arc<Session>>>;

/// A start in progress: its outcome, and the task running it (aborted by `dispose`,
/// which kills the process).
struct Starting {
    outcome: watch::Receiver<StartOutcome>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct SlotState {
    session: Option<Arc<Session>>,
    starting: Option<Starting>,
    /// When each start within the current restart window began.
    starts: VecDeque<Instant>,
    /// Set by `dispose`: nothing starts any more.
    closed: bool,
}

/// One configured server and its state. Never locked across an await.
struct Slot {
    cfg: ServerConfig,
    state: Mutex<SlotState>,
}

struct PlannedFile {
    path: PathBuf,
    uri: String,
    old: String,
    new: String,
}

struct RenamePlan {
    slot: usize,
    files: Vec<PlannedFile>,
    edits: Vec<Value>,
}

/// A LanguageIntelligence instance.
pub struct Intelligence {
    ws: Workspace,
    limits: Limits,
    slots: Vec<Arc<Slot>>,
    versions: Mutex<HashMap<PathBuf, i64>>,
    sync_lock: tokio::sync::Mutex<()>,
    disposed: AtomicBool,
    plans: Mutex<BTreeMap<u64, RenamePlan>>,
    next_plan: AtomicU64,
    /// Bounds concurrent diagnostic requests (half of `maxPendingRequests`).
    fetch_permits: tokio::sync::Semaphore,
}

/// How a document's diagnostics are asked for.
#[derive(Clone, Copy)]
enum Fetch {
    /// `textDocument/diagnostic`.
    Pull,
    /// tsserver's diagnostics through `typescript.tsserverRequest`.
    Probe,
}

/// A resolved input location.
struct Target {
    idx: usize,
    session: Arc<Session>,
    position: Value,
}

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

fn num(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64)
}

impl Intelligence {
    /// Build an instance from the options JSON (the JS layer removed `policy`). Nothing
    /// is spawned.
    pub fn from_json(text: &str) -> Result<Intelligence> {
        let v = crate::json::parse(text, type_err)?;
        let f = Fields::new(&v, "options", type_err)?;
        let limits = Limits::parse(f.get("limits"))?;
        let root = f.non_empty_str("workspaceRoot")?;
        let servers = match f.get("servers") {
            Some(s) => parse_servers(s, limits.max_servers)?,
            None => return Err(type_err("options.servers is required (an object)".into())),
        };
        let ws = Workspace::new(root)?;
        let fetch_permits = tokio::sync::Semaphore::new((limits.max_pending / 2).max(1));
        Ok(Intelligence {
            ws,
            limits,
            slots: servers
                .into_iter()
                .map(|cfg| {
                    Arc::new(Slot {
                        cfg,
                        state: Mutex::new(SlotState::default()),
                    })
                })
                .collect(),
            versions: Mutex::new(HashMap::new()),
            sync_lock: tokio::sync::Mutex::new(()),
            disposed: AtomicBool::new(false),
            plans: Mutex::new(BTreeMap::new()),
            next_plan: AtomicU64::new(1),
            fetch_permits,
        })
    }

    fn check_live(&self) -> Result<()> {
        if self.disposed.load(Ordering::SeqCst) {
            return Err(disposed());
        }
        Ok(())
    }

    /// Index of the server for a file, by language id.
    fn slot_for(&self, rel: &str) -> Result<usize> {
        let lang = language_id(rel);
        self.slots
            .iter()
            .position(|s| s.cfg.languages.iter().any(|l| l == lang))
            .ok_or_else(|| {
                lsp(
                    LspCode::Unsupported,
                    format!("no language server is configured for {rel:?} (language {lang})"),
                )
            })
    }

    /// A caller's file: checked lexically, then its language (as @arnilo/prism does,
    /// so a file no server handles is UNSUPPORTED whether or not it exists), then
    /// resolved on disk. Returns the canonical path, the relative name and the server.
    fn locate(&self, file: &str) -> Result<(PathBuf, String, usize)> {
        self.ws.check_lexical(file)?;
        self.slot_for(file)?;
        let (path, rel) = self.ws.resolve(file)?;
        let idx = self.slot_for(&rel)?;
        Ok((path, rel, idx))
    }

    fn slot(&self, idx: usize) -> Result<&Arc<Slot>> {
        self.slots
            .get(idx)
            .ok_or_else(|| PrismError::internal("server slot out of range"))
    }

    /// The live session of a server, starting (or restarting, within the budget) it.
    /// Concurrent callers share one start; each waits for it only as long as its own
    /// call's deadline allows (the caller's timeout bounds the wait, not the start).
    async fn session(&self, idx: usize) -> Result<Arc<Session>> {
        self.check_live()?;
        let slot = self.slot(idx)?;
        let mut outcome = {
            let mut st = lock(&slot.state);
            if st.closed {
                return Err(disposed());
            }
            if let Some(s) = &st.session {
                if !s.is_closed() {
                    return Ok(s.clone());
                }
                if let Some(old) = st.session.take() {
                    tokio::spawn(
                        async move { old.process.terminate(Duration::from_millis(0)).await },
                    );
                }
            }
            match st
                .starting
                .as_ref()
                .filter(|s| s.outcome.borrow().is_none())
            {
                Some(s) => s.outcome.clone(),
                None => self.begin_start(slot, &mut st)?,
            }
        };
        let got = outcome
            .wait_for(Option::is_some)
            .await
            .map_err(|_| disposed())?
            .clone();
        got.unwrap_or_else(|| Err(PrismError::internal("server start without an outcome")))
    }

    /// Start a server in its own task, charging the restart budget: at most
    /// `max_restarts` restarts (starts after the first) within any `restart_window`.
    fn begin_start(
        &self,
        slot: &Arc<Slot>,
        st: &mut SlotState,
    ) -> Result<watch::Receiver<StartOutcome>> {
        let now = Instant::now();
        let window = self.limits.restart_window;
        while st
            .starts
            .front()
            .is_some_and(|t| now.duration_since(*t) >= window)
        {
            st.starts.pop_front();
        }
        if st.starts.len() > self.limits.max_restarts as usize {
            let next = st.starts.front().map_or(Duration::ZERO, |t| {
                window.saturating_sub(now.duration_since(*t))
            });
            return Err(lsp(
                LspCode::Server,
                format!(
                    "language server {:?} exhausted its restart budget ({} restarts per {} ms); the next start is allowed in {} ms",
                    slot.cfg.name,
                    self.limits.max_restarts,
                    window.as_millis(),
                    next.as_millis()
                ),
            ));
        }
        st.starts.push_back(now);
        let cfg = SessionConfig {
            name: slot.cfg.name.clone(),
            launch: Launch {
                command: slot.cfg.command.clone(),
                args: slot.cfg.args.clone(),
                env: slot.cfg.env.clone(),
                cwd: self.ws.root.clone(),
            },
            workspace: self.ws.clone(),
            max_message: self.limits.max_message,
            max_pending: self.limits.max_pending,
            timeout: self.limits.timeout,
        };
        let (tx, rx) = watch::channel(None);
        let owner = slot.clone();
        let task = tokio::spawn(async move {
            let started = Session::start(cfg).await;
            let outcome = {
                let mut st = lock(&owner.state);
                st.starting = None;
                match started {
                    Ok(s) if st.closed => {
                        tokio::spawn(async move { s.shutdown(GRACE).await });
                        Err(disposed())
                    }
                    Ok(s) => {
                        st.session = Some(s.clone());
                        Ok(s)
                    }
                    Err(e) => Err(e),
                }
            };
            let _ = tx.send(Some(outcome));
        });
        st.starting = Some(Starting {
            outcome: rx.clone(),
            task,
        });
        Ok(rx)
    }

    async fn read_text(&self, path: &Path, rel: &str) -> Result<String> {
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
    async fn sync_path(
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
        let sent = if was_open {
            session.transport.notify(
                "textDocument/didChange",
                json!({
                    "textDocument": { "uri": uri, "version": version },
                    "contentChanges": [{ "text": doc.text.as_str() }]
                }),
            )
        } else {
            session.transport.notify(
                "textDocument/didOpen",
                json!({
                    "textDocument": {
                        "uri": uri,
                        "languageId": language_id(rel),
                        "version": version,
                        "text": doc.text.as_str()
                    }
                }),
            )
        };
        if let Err(e) = sent {
            lock(&session.state.open).remove(&uri);
            return Err(e);
        }
        Ok((session, uri, doc))
    }

    /// The document open in the live session, syncing it first when it is not.
    async fn ensure_open(
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

    /// Run one operation of the JS API on its JSON input. Every operation settles within
    /// `requestTimeoutMs` from its start, whatever it waits for (a server start shared with
    /// other callers, a sync, a request): past that it fails with `ERR_PRISM_LSP_TIMEOUT`
    /// and its requests are cancelled. Except `dispose` (bounded by its own grace periods)
    /// and the rename apply and discard steps (local file writes that, once begun, finish).
    pub async fn call(self: &Arc<Self>, op: &str, input: &str) -> Result<Value> {
        let v = crate::json::parse(input, type_err)?;
        let deadline = Instant::now() + self.limits.timeout;
        match op {
            "dispose" => return self.dispose().await.map(|()| Value::Null),
            "renameApply" => return self.rename_apply(&v).await,
            "renameDiscard" => return self.discard_plan(&v),
            _ => {}
        }
        let run = async {
            match op {
                "syncDocument" => self.sync_document(&v).await,
                "diagnosticDelta" => self.diagnostic_delta(&v, deadline).await,
                "diagnostics" => self.diagnostics(&v, deadline).await,
                "hover" => self.hover(&v).await,
                "definitions" => self.definitions(&v).await,
                "references" => self.references(&v).await,
                "workspaceSymbols" => self.workspace_symbols(&v).await,
                "renamePlan" => self.rename_plan(&v).await,
                other => Err(type_err(format!("unknown operation {other:?}"))),
            }
        };
        match tokio::time::timeout_at(deadline.into(), run).await {
            Ok(r) => r,
            Err(_) => Err(lsp(
                LspCode::Timeout,
                format!(
                    "{op} did not finish within {} ms (requestTimeoutMs)",
                    self.limits.timeout.as_millis()
                ),
            )),
        }
    }

    /// When waiting for diagnostics must stop so a call ending at `deadline` can still
    /// report what did not arrive (`incomplete`) rather than time out as a whole.
    fn wait_until(&self, deadline: Instant) -> Instant {
        let margin =
            (self.limits.timeout / 20).clamp(Duration::from_millis(20), Duration::from_millis(250));
        deadline.checked_sub(margin).unwrap_or(deadline)
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

    /// The diagnostics of the document's current version: pulled when the server offers
    /// pull diagnostics, else the push set of that version; `None` when it did not arrive
    /// before `deadline`.
    async fn current_set(
        &self,
        session: &Arc<Session>,
        uri: &str,
        deadline: Instant,
    ) -> Result<Option<(Arc<Vec<Value>>, OpenDoc)>> {
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
    ) -> Result<Option<(Arc<Vec<Value>>, OpenDoc)>> {
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
        items: &[Value],
    ) -> Result<Vec<NormalizedDiagnostic>> {
        let text = Text::with_index(&doc.text, &doc.lines);
        let enc = session.encoding;
        let raw: Vec<Value> = items
            .iter()
            .map(|d| {
                let range = d.get("range");
                let pos = |k: &str| range.and_then(|r| r.get(k));
                let line = num(pos("start").and_then(|p| p.get("line")));
                let ch = num(pos("start").and_then(|p| p.get("character")));
                let eline = num(pos("end").and_then(|p| p.get("line")));
                let ech = num(pos("end").and_then(|p| p.get("character")));
                let mut o = Map::new();
                o.insert("file".into(), json!(rel));
                if let (Some(l), Some(c)) = (line, ch) {
                    o.insert("line".into(), json!(l));
                    o.insert(
                        "character".into(),
                        json!(text.convert(l, c, enc, Encoding::Utf16)),
                    );
                }
                if let (Some(l), Some(c)) = (eline, ech) {
                    o.insert("endLine".into(), json!(l));
                    o.insert(
                        "endCharacter".into(),
                        json!(text.convert(l, c, enc, Encoding::Utf16)),
                    );
                }
                let severity = d
                    .get("severity")
                    .and_then(Value::as_u64)
                    .filter(|n| (2..=4).contains(n))
                    .unwrap_or(1);
                o.insert("severity".into(), json!(severity));
                if let Some(m) = d.get("message") {
                    o.insert("message".into(), m.clone());
                }
                // A diagnostic without a source is the server's (@arnilo/prism: "lsp").
                let source = match d.get("source") {
                    Some(Value::String(s)) if !s.is_empty() => s.as_str(),
                    _ => LSP_SOURCE,
                };
                o.insert("source".into(), json!(source));
                match d.get("code") {
                    Some(c @ Value::String(_)) => {
                        o.insert("code".into(), c.clone());
                    }
                    // An integer code stays a number; any other number is not kept.
                    Some(Value::Number(n)) => {
                        if let Some(i) = crate::json::as_i64(&Value::Number(n.clone())) {
                            o.insert("code".into(), json!(i));
                        }
                    }
                    _ => {}
                }
                o.insert("generation".into(), json!(doc.version));
                Value::Object(o)
            })
            .collect();
        let mut opts = NormalizeOptions::new(
            self.ws.root.to_string_lossy().to_string(),
            doc.version as u64,
        );
        opts.max_diagnostics_per_file = self.limits.max_diagnostics;
        diag::normalize(&raw, &opts)
    }

    fn parse_files(&self, v: Option<&Value>) -> Result<Vec<(PathBuf, String, usize)>> {
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

    /// Resolve `{ file, line, character }` (UTF-16) to a server position.
    async fn target(&self, input: &Value) -> Result<Target> {
        self.check_live()?;
        let f = Fields::new(input, "location", type_err)?;
        let file = f.str("file")?;
        let line = f.u64("line")?;
        let character = f.u64("character")?;
        let (path, rel, idx) = self.locate(file)?;
        let (session, uri, doc) = self.ensure_open(&path, &rel, idx).await?;
        let text = Text::with_index(&doc.text, &doc.lines);
        let Some(line_text) = usize::try_from(line).ok().and_then(|l| text.line(l)) else {
            return Err(PrismError::range(format!(
                "line {line} is outside {rel:?} ({} lines)",
                text.line_count()
            )));
        };
        let len16: u64 = line_text.encode_utf16().count() as u64;
        if character > len16 {
            return Err(PrismError::range(format!(
                "character {character} is past the end of line {line} of {rel:?} ({len16} UTF-16 units)"
            )));
        }
        let server_char = text.convert(line, character, Encoding::Utf16, session.encoding);
        Ok(Target {
            idx,
            session,
            position: json!({ "textDocument": { "uri": uri }, "position": { "line": line, "character": server_char } }),
        })
    }

    fn require(&self, session: &Session, capability: &str, method: &str, what: &str) -> Result<()> {
        if session.supports(capability, method) {
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
        uri: &str,
        path: &Path,
        cache: &mut HashMap<PathBuf, Arc<String>>,
    ) -> Option<Arc<String>> {
        if let Some(t) = cache.get(path) {
            return Some(t.clone());
        }
        let text = lock(&session.state.open).get(uri).map(|d| d.text.clone());
        let text = match text {
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

    /// Server locations (Location | Location[] | LocationLink[]) inside the workspace, as
    /// `{ file, line, character, endLine, endCharacter }` in UTF-16.
    async fn locations(&self, session: &Session, result: &Value) -> Result<Vec<Value>> {
        let items: Vec<&Value> = match result {
            Value::Array(a) => a.iter().collect(),
            Value::Object(_) => vec![result],
            _ => Vec::new(),
        };
        let mut cache = HashMap::new();
        let mut out = Vec::new();
        let mut outside = 0usize;
        for item in items {
            if out.len() >= self.limits.max_results {
                break;
            }
            let (uri, range) = match (item.get("targetUri"), item.get("uri")) {
                (Some(Value::String(u)), _) => (
                    u,
                    item.get("targetSelectionRange")
                        .or_else(|| item.get("targetRange")),
                ),
                (_, Some(Value::String(u))) => (u, item.get("range")),
                _ => continue,
            };
            match self.location(session, uri, range, &mut cache).await {
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

    async fn location(
        &self,
        session: &Session,
        uri: &str,
        range: Option<&Value>,
        cache: &mut HashMap<PathBuf, Arc<String>>,
    ) -> Option<Value> {
        let (path, rel) = self.ws.resolve_uri(uri)?;
        let p = |k: &str, f: &str| {
            range
                .and_then(|r| r.get(k))
                .and_then(|x| x.get(f))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let (mut l, mut c, mut el, mut ec) = (
            p("start", "line"),
            p("start", "character"),
            p("end", "line"),
            p("end", "character"),
        );
        if session.encoding != Encoding::Utf16 {
            let text = self
                .text_of(session, &path_to_uri(&path), &path, cache)
                .await?;
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
        self.require(&t.session, "hoverProvider", "textDocument/hover", "hover")?;
        let r = t.session.request("textDocument/hover", t.position).await?;
        let Some(contents) = r.get("contents") else {
            return Ok(Value::Null);
        };
        let text = hover_text(contents);
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        Ok(json!({ "text": text }))
    }

    pub async fn definitions(&self, input: &Value) -> Result<Value> {
        let t = self.target(input).await?;
        self.require(
            &t.session,
            "definitionProvider",
            "textDocument/definition",
            "definitions",
        )?;
        let r = t
            .session
            .request("textDocument/definition", t.position)
            .await?;
        Ok(Value::Array(self.locations(&t.session, &r).await?))
    }

    pub async fn references(&self, input: &Value) -> Result<Value> {
        let t = self.target(input).await?;
        self.require(
            &t.session,
            "referencesProvider",
            "textDocument/references",
            "references",
        )?;
        let mut params = t.position;
        params["context"] = json!({ "includeDeclaration": true });
        let r = t.session.request("textDocument/references", params).await?;
        Ok(Value::Array(self.locations(&t.session, &r).await?))
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
            if !session.supports("workspaceSymbolProvider", "workspace/symbol") {
                continue;
            }
            let r = session
                .request("workspace/symbol", json!({ "query": query }))
                .await?;
            let mut cache = HashMap::new();
            for s in r.as_array().map(Vec::as_slice).unwrap_or(&[]) {
                if out.len() >= self.limits.max_results {
                    break;
                }
                let Some(name) = s.get("name").and_then(Value::as_str) else {
                    continue;
                };
                let Some(loc) = s.get("location") else {
                    continue;
                };
                let Some(uri) = loc.get("uri").and_then(Value::as_str) else {
                    continue;
                };
                let Some(mut l) = self
                    .location(&session, uri, loc.get("range"), &mut cache)
                    .await
                else {
                    continue;
                };
                l["name"] = json!(name);
                let kind = s.get("kind").and_then(Value::as_u64).unwrap_or(0);
                l["kind"] = json!(kind);
                l["kindName"] = json!(symbol_kind(kind));
                if let Some(Value::String(c)) = s.get("containerName") {
                    if !c.is_empty() {
                        l["containerName"] = json!(c);
                    }
                }
                out.push(l);
            }
        }
        Ok(Value::Array(out))
    }

    /// Ask the server for a rename and compute every file's new text; nothing is
    /// written. Returns `{ plan, paths, edits }`.
    pub async fn rename_plan(&self, input: &Value) -> Result<Value> {
        let f = Fields::new(input, "input", type_err)?;
        let new_name = f.str("newName")?;
        if new_name.is_empty() || new_name.len() > 1024 {
            return Err(type_err("newName must be 1..1024 bytes".into()));
        }
        let t = self.target(input).await?;
        self.require(
            &t.session,
            "renameProvider",
            "textDocument/rename",
            "rename",
        )?;
        let mut params = t.position;
        params["newName"] = json!(new_name);
        let r = t.session.request("textDocument/rename", params).await?;
        let mut by_uri: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        if let Some(changes) = r.get("documentChanges").and_then(Value::as_array) {
            for c in changes {
                if c.get("kind").is_some() {
                    return Err(lsp(
                        LspCode::Unsupported,
                        "rename needs file create/rename/delete operations, which are not applied",
                    ));
                }
                let Some(uri) = c
                    .get("textDocument")
                    .and_then(|d| d.get("uri"))
                    .and_then(Value::as_str)
                else {
                    continue;
                };
                // Edits made for another version of an open document are stale.
                if let Some(v) = c
                    .get("textDocument")
                    .and_then(|d| d.get("version"))
                    .and_then(Value::as_i64)
                {
                    let open = self.ws.resolve_uri(uri).and_then(|(p, _)| {
                        lock(&t.session.state.open)
                            .get(&path_to_uri(&p))
                            .map(|d| d.version)
                    });
                    if open.is_some_and(|cur| cur != v) {
                        return Err(lsp(
                            LspCode::Server,
                            format!("rename edits were computed for version {v} of {uri}, not the synced one"),
                        ));
                    }
                }
                let edits = c
                    .get("edits")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                by_uri.entry(uri.to_string()).or_default().extend(edits);
            }
        } else if let Some(changes) = r.get("changes").and_then(Value::as_object) {
            for (uri, edits) in changes {
                let edits = edits.as_array().cloned().unwrap_or_default();
                by_uri.entry(uri.clone()).or_default().extend(edits);
            }
        }
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
        let enc = t.session.encoding;
        let mut files = Vec::new();
        let mut api_edits = Vec::new();
        let mut paths = Vec::new();
        for (uri, edits) in by_uri {
            let Some((path, rel)) = self.ws.resolve_uri(&uri) else {
                return Err(lsp(
                    LspCode::Workspace,
                    format!("rename would edit {uri}, outside the workspace"),
                ));
            };
            let old = self.read_text(&path, &rel).await?;
            let canonical_uri = path_to_uri(&path);
            if let Some(doc) = lock(&t.session.state.open).get(&canonical_uri) {
                if doc.text.as_str() != old {
                    return Err(lsp(
                        LspCode::Workspace,
                        format!("{rel:?} changed on disk since it was synced; call syncDocument and retry"),
                    ));
                }
            }
            let text = Text::new(&old);
            let mut parsed = Vec::with_capacity(edits.len());
            for e in &edits {
                let range = e.get("range");
                let p = |k: &str, f: &str| {
                    range
                        .and_then(|r| r.get(k))
                        .and_then(|x| x.get(f))
                        .and_then(Value::as_u64)
                };
                let (Some(l), Some(c), Some(el), Some(ec)) = (
                    p("start", "line"),
                    p("start", "character"),
                    p("end", "line"),
                    p("end", "character"),
                ) else {
                    return Err(lsp(
                        LspCode::Server,
                        "rename returned an edit without a valid range",
                    ));
                };
                let new_text = e.get("newText").and_then(Value::as_str).unwrap_or("");
                let (c16, ec16) = (
                    text.convert(l, c, enc, Encoding::Utf16),
                    text.convert(el, ec, enc, Encoding::Utf16),
                );
                api_edits.push(json!({
                    "file": rel,
                    "line": l,
                    "character": c16,
                    "endLine": el,
                    "endCharacter": ec16,
                    "newText": new_text,
                    "range": {
                        "start": { "line": l, "character": c16 },
                        "end": { "line": el, "character": ec16 },
                    },
                }));
                parsed.push(TextEdit {
                    start: (l, c),
                    end: (el, ec),
                    new_text: new_text.to_string(),
                });
            }
            let spans = edits::spans(&old, &parsed, enc, |m| {
                lsp(
                    LspCode::Server,
                    format!("rename returned bad edits for {rel:?}: {m}"),
                )
            })?;
            let new = edits::apply(&old, &parsed, &spans);
            paths.push(Value::String(rel));
            files.push(PlannedFile {
                path,
                uri: canonical_uri,
                old,
                new,
            });
        }
        let slot = t.idx;
        let id = self.next_plan.fetch_add(1, Ordering::SeqCst);
        {
            let mut plans = lock(&self.plans);
            while plans.len() >= MAX_PLANS {
                let Some(first) = plans.keys().next().copied() else {
                    break;
                };
                plans.remove(&first);
            }
            plans.insert(
                id,
                RenamePlan {
                    slot,
                    files,
                    edits: api_edits.clone(),
                },
            );
        }
        Ok(json!({ "plan": id, "paths": paths, "edits": api_edits }))
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

    /// `shutdown`, `exit`, close stdin, SIGTERM, SIGKILL on the group, for every server.
    /// A server still starting (e.g. one that never answers `initialize`) is not waited
    /// for: its start is aborted and its process group killed at once.
    pub async fn dispose(&self) -> Result<()> {
        self.disposed.store(true, Ordering::SeqCst);
        let mut starting = Vec::new();
        let mut sessions = Vec::new();
        for slot in &self.slots {
            let mut st = lock(&slot.state);
            st.closed = true;
            if let Some(s) = st.starting.take() {
                s.task.abort();
                starting.push(s.task);
            }
            if let Some(s) = st.session.take() {
                sessions.push(s);
            }
        }
        // An aborted start drops its process: SIGKILL to the group (ServerProcess::drop).
        for task in starting {
            let _ = task.await;
        }
        let mut set = tokio::task::JoinSet::new();
        for s in sessions {
            set.spawn(async move { s.shutdown(GRACE).await });
        }
        while set.join_next().await.is_some() {}
        Ok(())
    }
}

/// The current set of an open document when already known (no waiting).
fn known_set(session: &Session, uri: &str, doc: &OpenDoc) -> Option<Arc<Vec<Value>>> {
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

fn hover_text(contents: &Value) -> String {
    match contents {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("value")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        Value::Array(a) => a
            .iter()
            .map(hover_text)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n"),
        _ => String::new(),
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

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write to a temporary file in the same folder, fsync, rename over `path`.
pub async fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| lsp(LspCode::Workspace, "file has no parent folder"))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.prism-{}-{}.tmp",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    let path = path.to_path_buf();
    let bytes = bytes.to_vec();
    let dir = dir.to_path_buf();
    let res = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        use std::io::Write;
        let perms = std::fs::metadata(&path).map(|m| m.permissions()).ok();
        let result = (|| {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(&bytes)?;
            if let Some(p) = perms {
                f.set_permissions(p)?;
            }
            f.sync_all()?;
            drop(f);
            std::fs::rename(&tmp, &path)?;
            if let Ok(d) = std::fs::File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result
    })
    .await
    .map_err(|e| PrismError::internal(format!("write task failed: {e}")))?;
    res.map_err(|e| {
        lsp(
            LspCode::Workspace,
            format!("cannot write the renamed file: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_defaults_and_ranges() {
        let l = Limits::parse(None).unwrap();
        assert_eq!(l.max_message, 4 * 1024 * 1024);
        assert_eq!(l.timeout, Duration::from_secs(30));
        assert_eq!(l.max_restarts, 3);
        for bad in [
            json!({"maxServers": 0}),
            json!({"maxServers": 9}),
            json!({"requestTimeoutMs": 1.5}),
        ] {
            assert_eq!(
                Limits::parse(Some(&bad)).unwrap_err().code(),
                "ERR_OUT_OF_RANGE"
            );
        }
        assert_eq!(
            Limits::parse(Some(&json!({"nope": 1}))).unwrap_err().code(),
            "ERR_INVALID_ARG_TYPE"
        );
        assert_eq!(
            Limits::parse(Some(&json!({"maxResults": "1"})))
                .unwrap_err()
                .code(),
            "ERR_INVALID_ARG_TYPE"
        );
    }

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

    #[test]
    fn hover_contents() {
        assert_eq!(hover_text(&json!({"kind":"markdown","value":"x"})), "x");
        assert_eq!(
            hover_text(&json!(["a", {"language":"ts","value":"b"}])),
            "a\n\nb"
        );
    }

    #[test]
    fn kinds() {
        assert_eq!(symbol_kind(12), "function");
        assert_eq!(symbol_kind(0), "unknown");
        assert_eq!(symbol_kind(99), "unknown");
    }
}
