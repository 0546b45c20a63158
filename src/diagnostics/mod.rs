//! Diagnostics: normalize host-parsed output into one bounded shape, identity, and
//! deterministic deltas between generations.
