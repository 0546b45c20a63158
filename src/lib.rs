//! prism-review: artifact review, coding patch review, diagnostics and an LSP client
//! for Node agent runtimes.
//!
//! The core modules (`error`, `json`, `review`, `diagnostics`, …) are pure Rust and know
//! nothing of Node. `napi` is the only module that sees napi types: it converts JSON text
//! from JavaScript into core inputs, core errors into JS errors, and guards every call
//! against panics.

pub mod diagnostics;
pub mod error;
pub mod json;
pub mod review;

mod napi;

pub use error::{ErrorKind, PrismError};
