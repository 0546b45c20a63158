//! Language intelligence: a robust LSP client.
//!
//! - [`framing`]: bounded `Content-Length` framing (also exported to JS).
//! - [`transport`]: reader + writer tasks, pending map by id, cancel-on-drop requests
//!   (JSON on the wire).
//! - [`process`]: server processes in their own group, parent-death signal, watchdog.
//! - [`client`]: one initialized server session and the typed protocol
//!   (`request::<R>()` / `notify::<N>()` over `lsp_types`), pull diagnostics.
//! - [`server_requests`]: answers to server→client requests, registrations, publishes.
//! - [`tsserver`]: the typescript-language-server quirk (diagnostics asked of tsserver).
//! - [`documents`]: workspace paths, URIs, language ids, position encodings.
//! - [`edits`]: text edits as checked byte spans (rename, `applyTextEdits`).
//! - [`fs`]: atomic file writes.
//! - [`intelligence`]: the public operations of `LanguageIntelligence`, one job per file.

pub mod client;
pub mod documents;
pub mod edits;
pub mod framing;
pub mod fs;
pub mod intelligence;
pub mod process;
pub mod server_requests;
pub mod transport;
pub mod tsserver;
