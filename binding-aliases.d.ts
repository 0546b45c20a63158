// The type aliases the generated binding.d.ts names but napi-rs does not emit: Rust type
// aliases of a `ThreadsafeFunction<String, Promise<String>, …>` (src/napi/store.rs HostFn,
// src/napi/drafts.rs PolicyFn, src/napi/bodies.rs HookFn): a JS function from JSON text to
// a promise of JSON text. Only the JS glue's type check (tsconfig.json) reads this file.

/** A host store method bridge (src/napi/store.rs). */
type HostFn = (json: string) => Promise<string>
/** The work draft recipientPolicy bridge (src/napi/drafts.rs). */
type PolicyFn = (json: string) => Promise<string>
/** An S3 body store hook: credentials or isHeld (src/napi/bodies.rs). */
type HookFn = (json: string) => Promise<string>
