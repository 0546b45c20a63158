//! Bindings for `crate::lsp`.
