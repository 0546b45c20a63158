//! prism-review: artifact review, coding patch review, diagnostics and an LSP client
//! for Node agent runtimes.
//!
//! The core modules (`error`, `json`, `review`, `diagnostics`, …) are pure Rust and know
//! nothing of Node. `napi` is the only module that sees napi types: it converts JSON text
//! from JavaScript into core inputs, core errors into JS errors, and guards every call
//! against panics.

pub mod artifacts;
pub mod bodies;
pub mod credentials;
pub mod diagnostics;
pub mod drafts;
pub mod error;
pub mod http;
pub mod inline;
pub mod json;
pub mod lsp;
pub mod review;
pub mod store;
pub mod util;

// In `cargo test` builds nothing calls the #[napi] exports, so they look dead.
#[cfg_attr(test, allow(dead_code))]
mod napi;

pub use error::{ErrorKind, PrismError};
