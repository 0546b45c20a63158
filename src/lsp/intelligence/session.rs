//! Server sessions: each server starts on first use, once for every caller waiting at
//! that moment (a caller whose call times out or aborts leaves; the start goes on), and
//! restarts after a crash within a budget counted over a time window.

use super::options::ServerConfig;
use super::{disposed, lsp, Intelligence, GRACE};
use crate::error::{LspCode, PrismError, Result};
use crate::lsp::client::{Session, SessionConfig};
use crate::lsp::process::Launch;
use crate::util::sync::lock;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// The outcome of one server start, shared by every caller that waits for it.
type StartOutcome = Option<Result<Arc<Session>>>;

/// A start in progress: its outcome, and the task running it (aborted by `dispose`,
/// which kills the process).
pub(super) struct Starting {
    pub(super) outcome: watch::Receiver<StartOutcome>,
    pub(super) task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
pub(super) struct SlotState {
    pub(super) session: Option<Arc<Session>>,
    pub(super) starting: Option<Starting>,
    /// When each start within the current restart window began.
    pub(super) starts: VecDeque<Instant>,
    /// Set by `dispose`: nothing starts any more.
    pub(super) closed: bool,
}

/// One configured server and its state. Never locked across an await.
pub(super) struct Slot {
    pub(super) cfg: ServerConfig,
    pub(super) state: Mutex<SlotState>,
}

impl Intelligence {
    /// The live session of a server, starting (or restarting, within the budget) it.
    /// Concurrent callers share one start; each waits for it only as long as its own
    /// call's deadline allows (the caller's timeout bounds the wait, not the start).
    pub(super) async fn session(&self, idx: usize) -> Result<Arc<Session>> {
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
}
