//! prism-review: artifact review, coding patch review, diagnostics and an LSP client
//! for Node agent runtimes.
//!
//! The core modules (`error`, `json`, `review`, `diagnostics`, …) are pure Rust and know
//! nothing of Node. `napi` is the only module that sees napi types: it converts JSON text
//! from JavaScript into core inputs, core errors into JS errors, and guards every call
//! against panics.
//!
//! The modules are `pub(crate)`; [`fuzz`] is the narrow public facade the cargo-fuzz
//! targets use.

pub(crate) mod artifacts;
pub(crate) mod bodies;
pub(crate) mod credentials;
pub(crate) mod diagnostics;
pub(crate) mod drafts;
pub(crate) mod error;
pub(crate) mod http;
pub(crate) mod inline;
pub(crate) mod json;
pub(crate) mod lsp;
pub(crate) mod review;
pub(crate) mod store;
pub(crate) mod util;

// In `cargo test` builds nothing calls the #[napi] exports, so they look dead.
#[cfg_attr(test, allow(dead_code))]
mod napi;

pub use error::{ErrorKind, PrismError};

/// The crate's only other public surface: what the cargo-fuzz targets in `fuzz/` call (the
/// crate is an `rlib` for them). Every other module is `pub(crate)`, so rustc reports
/// whatever nothing uses; add an item here only when a fuzz target needs it.
pub mod fuzz {
    pub use crate::artifacts::link::{sign, sign_text, verify};
    pub use crate::diagnostics::json::{delta_indices_json, identity_json, normalize_json};
    pub use crate::http::{
        check_authorization, check_body, check_content_type, match_route, validate_base_path,
        Operation, RouteError,
    };
    pub use crate::lsp::framing::{encode_frame, split_frames, FrameReader};
    pub use crate::review::{assert_accepted_json, create_manifest_binding, resolve_limits_json};
}

/// mimalloc (see Cargo.toml); cargo-fuzz builds keep the system allocator, which
/// AddressSanitizer instruments, and so does aarch64 musl.
#[cfg(not(any(fuzzing, all(target_arch = "aarch64", target_env = "musl"))))]
mod allocator;
#[cfg(not(any(fuzzing, all(target_arch = "aarch64", target_env = "musl"))))]
#[global_allocator]
static ALLOCATOR: allocator::MiMalloc = allocator::MiMalloc;
