//! Language intelligence: a robust LSP client.
//!
//! - [`framing`]: bounded `Content-Length` framing (also exported to JS).
//! - [`transport`]: reader + writer tasks, pending map by id, cancel-on-drop requests.
//! - [`process`]: server processes in their own group, parent-death signal, watchdog.
//! - [`client`]: one initialized server session, server-request dispatch, diagnostics
//!   bookkeeping.
//! - [`documents`]: workspace paths, URIs, language ids, position encodings.
//! - [`edits`]: text edits as checked byte spans (rename, `applyTextEdits`).
//! - [`intelligence`]: the public operations of `LanguageIntelligence`.

pub mod client;
pub mod documents;
pub mod edits;
pub mod framing;
pub mod intelligence;
pub mod process;
pub mod transport;
