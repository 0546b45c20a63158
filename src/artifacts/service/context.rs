//! What a service call runs with: the resolved options, the caller's abort flag, and
//! the operation names.

use super::super::input;
use super::super::limits::ArtifactLimits;
use super::super::link;
use crate::error::{PrismError, Result};
use crate::json::Fields;
use crate::store::SignalRef;
use base64::Engine;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The service's operations (its method names), in the order `ArtifactService` lists them.
pub const OPERATIONS: [&str; 9] = [
    "attach",
    "list",
    "get",
    "revise",
    "compare",
    "approve",
    "reject",
    "lastValidated",
    "deliveryLink",
];

/// Message of the error an aborted operation ends with; the binding layer replaces it
/// with the signal's reason.
pub const ABORTED: &str = "the operation was aborted";

/// Set when the caller's `AbortSignal` fires; checked before and between store calls.
/// `signal` names the caller's signal for host stores (see `crate::store::SignalRef`).
#[derive(Debug, Clone, Default)]
pub struct AbortFlag {
    flag: Arc<AtomicBool>,
    signal: SignalRef,
}

impl AbortFlag {
    pub fn new() -> Self {
        Self::default()
    }
    /// A flag whose store calls carry the caller's signal `id`.
    pub fn with_signal(id: u32) -> Self {
        Self {
            flag: Arc::default(),
            signal: Some(id),
        }
    }
    pub fn abort(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }
    pub fn is_aborted(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
    pub fn check(&self) -> Result<()> {
        if self.is_aborted() {
            Err(PrismError::internal(ABORTED))
        } else {
            Ok(())
        }
    }
    pub fn signal(&self) -> SignalRef {
        self.signal
    }
}

/// Resolved service options.
#[derive(Clone)]
pub struct ServiceConfig {
    pub link_secret: Vec<u8>,
    pub limits: ArtifactLimits,
    /// A body store is wired: `deliveryLink` also resolves the revision's body ref.
    pub bodies: bool,
    /// Someone listens for audit events (`onDecision`): mutations build and answer them.
    /// Without a listener no event is built, serialized or crossed.
    pub events: bool,
}

impl std::fmt::Debug for ServiceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceConfig")
            .field("link_secret", &"<hidden>")
            .field("limits", &self.limits)
            .field("bodies", &self.bodies)
            .field("events", &self.events)
            .finish()
    }
}

impl ServiceConfig {
    /// From `{ linkSecretBase64, limits?, bodies?, events? }` (what the binding layer
    /// sends; `events` defaults to true).
    pub fn parse(value: &Value) -> Result<Self> {
        let f = Fields::new(value, "options", PrismError::type_error)?;
        input::only(&f, &["linkSecretBase64", "limits", "bodies", "events"])
            .map_err(|e| PrismError::type_error(e.message))?;
        let secret = base64::engine::general_purpose::STANDARD
            .decode(f.str("linkSecretBase64")?)
            .map_err(|_| PrismError::type_error("options.linkSecret is not valid"))?;
        link::check_secret(&secret)?;
        Ok(Self {
            link_secret: secret,
            limits: ArtifactLimits::resolve(f.get("limits"))?,
            bodies: f.opt_bool("bodies")?.unwrap_or(false),
            events: f.opt_bool("events")?.unwrap_or(true),
        })
    }
}
