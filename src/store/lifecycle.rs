//! Open/closed state shared by the stores that have a `close()` (SQLite, PostgreSQL).
//!
//! - [`Lifecycle::admit`] runs synchronously when the JS binding requests an operation:
//!   it fails once close has begun, and otherwise hands out a ticket close waits for.
//! - [`Lifecycle::enter`] is taken by every operation while it touches the backend; close
//!   takes it exclusively after the tickets drain, so Rust callers' operations in flight
//!   finish too, and later ones are refused.

use super::{invalid, Admission};
use crate::error::{PrismError, Result};
use std::sync::{Arc, Mutex, MutexGuard};

pub(crate) struct Lifecycle {
    what: &'static str,
    gate: tokio::sync::RwLock<bool>,
    /// `(closing, tickets out)`.
    admission: Mutex<(bool, usize)>,
    drained: tokio::sync::Notify,
}

struct Ticket(Arc<Lifecycle>);

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut a = self.0.admission();
        a.1 = a.1.saturating_sub(1);
        if a.1 == 0 {
            self.0.drained.notify_waiters();
        }
    }
}

/// Held while an operation uses the backend.
pub(crate) type Entered<'a> = tokio::sync::RwLockReadGuard<'a, bool>;

impl Lifecycle {
    pub(crate) fn new(what: &'static str) -> Arc<Self> {
        Arc::new(Self {
            what,
            gate: tokio::sync::RwLock::new(false),
            admission: Mutex::new((false, 0)),
            drained: tokio::sync::Notify::new(),
        })
    }

    fn admission(&self) -> MutexGuard<'_, (bool, usize)> {
        crate::util::sync::lock(&self.admission)
    }

    pub(crate) fn closed_error(&self) -> PrismError {
        invalid(format!("the {} persistence is closed", self.what))
    }

    pub(crate) fn admit(self: &Arc<Self>) -> Result<Admission> {
        let mut a = self.admission();
        if a.0 {
            return Err(self.closed_error());
        }
        a.1 = a.1.saturating_add(1);
        drop(a);
        Ok(Some(Box::new(Ticket(self.clone()))))
    }

    pub(crate) async fn enter(&self) -> Result<Entered<'_>> {
        let gate = self.gate.read().await;
        if *gate {
            return Err(self.closed_error());
        }
        Ok(gate)
    }

    /// Refuse every admission from now on (called synchronously when the caller calls
    /// `close()`, so a call made after it is refused even while earlier ones run).
    pub(crate) fn begin_close(&self) {
        self.admission().0 = true;
    }

    /// Refuse new admissions, wait for the tickets out, then for operations inside, and
    /// mark closed. Answers `false` when it was closed already.
    pub(crate) async fn close(&self) -> bool {
        self.begin_close();
        loop {
            let drained = self.drained.notified();
            if self.admission().1 == 0 {
                break;
            }
            drained.await;
        }
        let mut closed = self.gate.write().await;
        if *closed {
            return false;
        }
        *closed = true;
        true
    }
}
