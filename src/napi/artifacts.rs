//! Bindings for `crate::artifacts`.
