//! The tokio runtime napi runs our waiting work on (PostgreSQL queries, host-store
//! callbacks, the HTTP adapter, the body store).
//!
//! napi's own runtime starts one worker per core. The JavaScript thread needs a core of
//! its own, and on a small machine a worker it does not leave free only competes with it
//! for the CPU (issue 13, two cores, PostgreSQL, 32 concurrent reviewers over 8
//! connections: event-loop delay p50 0.31-0.32 → 0.15-0.17 ms, p99 4.5-5.0 → 2.9-3.4 ms
//! with one worker instead of two, at the same throughput). So the runtime has one worker
//! per core beyond the JavaScript thread's, at least one, counted as the SQLite reader
//! lanes count theirs ([`crate::util::lane::spare_cores`]). `TOKIO_WORKER_THREADS`, when
//! set, decides instead, as it does for any tokio runtime.

/// Threads that keep a core of their own besides the runtime's workers: JavaScript's.
const BUSY_THREADS: usize = 1;

/// Runs once, when the addon is loaded (before any call can start napi's own runtime).
#[napi_derive::module_init]
fn init() {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(crate::util::lane::spare_cores(BUSY_THREADS));
    }
    // A runtime that cannot be built leaves napi to build its own on first use.
    if let Ok(runtime) = builder.build() {
        napi::bindgen_prelude::create_custom_tokio_runtime(runtime);
    }
}
