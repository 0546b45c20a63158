//! Helpers every area shares, written once: time stamps, URIs and percent-decoding,
//! poison-tolerant locks, the one rule for configurable caps, and dropping cold values
//! off the calling thread.

pub mod caps;
pub mod drop_later;
pub mod lane;
pub mod sync;
pub mod time;
pub mod uri;

/// The largest integer JavaScript represents exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;
