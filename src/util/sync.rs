//! Locks that outlive a panicking holder: every binding call catches panics, so a poisoned
//! mutex only means an earlier call failed; its data is still the last consistent state.

use std::sync::{Mutex, MutexGuard};

/// Lock `m`, taking the guard of a poisoned mutex as it is.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
