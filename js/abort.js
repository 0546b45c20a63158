'use strict'
// The caller's AbortSignal around a native call that can be cancelled: the artifact and
// work draft services (an abort flag, js/service.js) and the S3 body store (a transfer's
// abort handle, js/bodies.js).

/**
 * `fn(handle)` under `signal`: an already aborted signal throws its reason before anything
 * starts; otherwise `makeHandle()` makes the native handle, an abort calls its `abort()`,
 * and the call then rejects with the signal's reason.
 * @template {{ abort(): void }} H
 * @template T
 * @param {AbortSignal | undefined} signal
 * @param {() => H} makeHandle
 * @param {(handle: H) => T | Promise<T>} fn
 * @returns {Promise<T>}
 */
async function underSignal(signal, makeHandle, fn) {
  signal?.throwIfAborted()
  const handle = makeHandle()
  const onAbort = () => handle.abort()
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    return await fn(handle)
  } catch (err) {
    if (signal?.aborted) throw signal.reason
    throw err
  } finally {
    signal?.removeEventListener('abort', onAbort)
  }
}

module.exports = { underSignal }
