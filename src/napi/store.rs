//! Bindings for `crate::store`.
