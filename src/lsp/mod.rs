//! lsp: see the issue for this area.
