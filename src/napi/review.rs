//! Bindings for `crate::review`.
