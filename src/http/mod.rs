//! http: see the issue for this area.
