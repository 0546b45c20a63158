//! Bindings for `crate::diagnostics`.
