//! The public operations of `LanguageIntelligence`, one job per file:
//!
//! - `options`: caps (the names of @arnilo/prism) and server entries.
//! - `session`: lazy server start shared by concurrent callers, restart budget over a
//!   window.
//! - `sync`: reading files and `didOpen` / full-content `didChange` with versions.
//! - `diagnostics`: push with version matching, pull with result ids, tsserver asked;
//!   deltas against a previous view.
//! - `navigation`: hover, definitions, references, workspace symbols.
//! - `rename`: planned in full, applied after the JS layer consulted the host's policy,
//!   written atomically (`crate::lsp::fs`).
//!
//! This file holds the instance, the call dispatcher (every call bounded by its
//! `requestTimeoutMs`), path resolution and `dispose`.

mod diagnostics;
mod navigation;
mod options;
mod rename;
mod session;
mod sync;

use options::parse_servers;
pub use options::{Limits, LIMITS};

use super::documents::{language_id, Workspace};
use crate::error::{LspCode, PrismError, Result};
use crate::json::Fields;
use crate::util::sync::lock;
use rename::RenamePlan;
use serde_json::Value;
use session::{Slot, SlotState};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an unversioned push set must stay unchanged before it is taken as the set
/// of the synced version (servers without `version` publish in several steps).
const SETTLE: Duration = Duration::from_millis(300);
/// Grace period of `dispose()` between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

fn type_err(message: String) -> PrismError {
    PrismError::type_error(message)
}

fn lsp(code: LspCode, message: impl Into<String>) -> PrismError {
    PrismError::lsp(code, message)
}

fn disposed() -> PrismError {
    lsp(LspCode::Server, "LanguageIntelligence has been disposed")
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
            (self.limits.timeout / 10).clamp(Duration::from_millis(50), Duration::from_secs(1));
        deadline.checked_sub(margin).unwrap_or(deadline)
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
