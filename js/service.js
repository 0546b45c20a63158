'use strict'
// What the artifact service (js/artifacts.js) and the work draft service (js/drafts.js)
// do alike around their native handles: the redactor (a native one, or a host object
// `{ redact(value) }` applied here to the request, the result and the audit event), the
// caller's AbortSignal (a native abort flag, and the signal handed to host stores), the
// `onDecision` hook and the frozen service object of one method per operation.

const native = require('./native.js')
const { callNative, typeError } = require('./errors.js')
const { registerSignal, releaseSignal } = require('./store.js')
const { nativeRedactors } = require('./redaction.js')
const { underSignal } = require('./abort.js')

/** @typedef {import('../binding.js').SecretRedactorHandle} SecretRedactorHandle */
/** @typedef {{ redact(value: unknown): unknown }} HostRedactor */
/** @typedef {(message: string, options?: ErrorOptions) => Error} MakeError */

/** @type {SecretRedactorHandle | undefined} */
let emptyRedactor
/** @type {import('../binding.js').ArtifactAbortFlag | undefined} */
let neverAborted

/**
 * `options.redactor`, checked: the native handle the service is built with, and the host
 * redactor applied in JavaScript (null for a redactor made by `createSecretRedactor`, which
 * the native side applies itself).
 * @param {unknown} redactor
 * @returns {{ redactorHandle: SecretRedactorHandle, hostRedactor: HostRedactor | null }}
 */
function serviceRedactor(redactor) {
  if (redactor === null || (typeof redactor !== 'object' && typeof redactor !== 'function') || typeof (/** @type {{ redact?: unknown }} */ (redactor).redact) !== 'function') {
    throw typeError('options.redactor must be a SecretRedactor ({ redact(value) })')
  }
  const handle = nativeRedactors.get(redactor)
  if (handle) return { redactorHandle: handle, hostRedactor: null }
  emptyRedactor ??= callNative(() => new native.SecretRedactorHandle('[]'))
  return { redactorHandle: emptyRedactor, hostRedactor: /** @type {HostRedactor} */ (redactor) }
}

/**
 * @param {unknown} s
 * @returns {s is AbortSignal}
 */
function isAbortSignal(s) {
  return (
    (typeof AbortSignal === 'function' && s instanceof AbortSignal) ||
    (s !== null && typeof s === 'object' && typeof (/** @type {{ aborted?: unknown }} */ (s).aborted) === 'boolean' && typeof (/** @type {{ addEventListener?: unknown }} */ (s).addEventListener) === 'function')
  )
}

/**
 * The request of a service call (an object, checked by the caller) without its `signal`,
 * and the signal (checked).
 * @param {Record<string, unknown>} input
 * @param {MakeError} invalidInput
 * @returns {{ rest: Record<string, unknown>, signal: AbortSignal | undefined }}
 */
function splitSignal(input, invalidInput) {
  /** @type {Record<string, unknown>} */
  let rest
  /** @type {unknown} */
  let signal
  try {
    // Without a `signal` member the request is the input itself (no copy).
    if (!('signal' in input)) return { rest: input, signal: undefined }
    ;({ signal, ...rest } = input)
  } catch (cause) {
    throw invalidInput('input cannot be read', { cause })
  }
  if (signal !== undefined && !isAbortSignal(signal)) throw invalidInput('input.signal must be an AbortSignal')
  return { rest, signal }
}

/**
 * A service call's host redaction: `redact(value, what)` applies the host redactor (a
 * failure is `invalidInput` with the host's error as `cause`); `request(rest)` redacts
 * every member but `ownership`, which must come back unchanged (`sameOwnership`), else
 * `ownershipError()`.
 * @param {HostRedactor} hostRedactor
 * @param {MakeError} invalidInput
 */
function hostRedaction(hostRedactor, invalidInput) {
  /**
   * @param {unknown} value
   * @param {string} what
   */
  async function redact(value, what) {
    try {
      return await hostRedactor.redact(value)
    } catch (cause) {
      throw invalidInput(`the host redactor failed on the ${what}`, { cause })
    }
  }
  /**
   * @param {Record<string, unknown>} rest
   * @param {(redacted: unknown, given: unknown) => boolean} sameOwnership
   * @param {() => Error} ownershipError
   * @param {(v: unknown) => boolean} isObject
   * @returns {Promise<Record<string, unknown>>}
   */
  async function request(rest, sameOwnership, ownershipError, isObject) {
    const { ownership, ...request } = rest
    if (ownership !== undefined && !sameOwnership(await redact(ownership, 'ownership'), ownership)) throw ownershipError()
    const redacted = await redact(request, 'request')
    if (!isObject(redacted)) throw invalidInput('the host redactor must return the request as an object')
    // The redactor returned an object (checked just above).
    const object = /** @type {Record<string, unknown>} */ (redacted)
    return ownership === undefined ? object : { ownership, ...object }
  }
  return { redact, request }
}

/**
 * Run one native service call: `start(flag)` with an abort flag that the caller's signal
 * sets (host stores receive the signal by the id the flag carries), or `undefined` when
 * there is no signal (nothing can abort the call; `orNeverAborted(flag)` is a flag that
 * is never set, for calls that need one). An aborted call rejects with the signal's
 * reason; a service error's message is host-redacted (it may quote a field name of the
 * request: never a registered secret). Without a signal and a host redactor there is
 * nothing to wait for around the call: a call that finished on the calling thread
 * answers its text itself (no promise).
 * @param {AbortSignal | undefined} signal
 * @param {HostRedactor | null} hostRedactor
 * @param {Function} ServiceError the service's error class
 * @param {(flag: import('../binding.js').ArtifactAbortFlag | undefined) => string | Promise<string>} start
 * @returns {string | Promise<string>}
 */
function runNative(signal, hostRedactor, ServiceError, start) {
  if (!signal && !hostRedactor) return start(undefined)
  return runNativeGuarded(signal, hostRedactor, ServiceError, start)
}

/**
 * `flag`, or one shared flag that is never set.
 * @param {import('../binding.js').ArtifactAbortFlag | undefined} flag
 * @returns {import('../binding.js').ArtifactAbortFlag}
 */
function orNeverAborted(flag) {
  return flag ?? (neverAborted ??= new native.ArtifactAbortFlag())
}

/**
 * {@link runNative} with a signal or a host redactor.
 * @param {AbortSignal | undefined} signal
 * @param {HostRedactor | null} hostRedactor
 * @param {Function} ServiceError
 * @param {(flag: import('../binding.js').ArtifactAbortFlag | undefined) => string | Promise<string>} start
 * @returns {Promise<string>}
 */
async function runNativeGuarded(signal, hostRedactor, ServiceError, start) {
  /** @type {number | undefined} */
  let signalId
  try {
    // Without a signal nothing can abort the call: no flag.
    if (!signal) return await start(undefined)
    const makeFlag = () => new native.ArtifactAbortFlag((signalId = registerSignal(signal)))
    return await underSignal(signal, makeFlag, start)
  } catch (err) {
    if (!signal?.aborted && hostRedactor && err instanceof ServiceError) {
      try {
        const m = await hostRedactor.redact(/** @type {Error} */ (err).message)
        if (typeof m === 'string') /** @type {Error} */ (err).message = m
      } catch {}
    }
    throw err
  } finally {
    if (signalId !== undefined) releaseSignal(signalId)
  }
}

/**
 * Hand a committed change's audit event to `onDecision`. When it throws, the change is
 * still committed: the error says so, with `committed`, the result (as `resultKey`) and
 * the event, and the hook's error as `cause`.
 * @template {{ type: string }} E
 * @param {((event: E) => unknown) | undefined} onDecision
 * @param {E} event
 * @param {unknown} result
 * @param {string} resultKey
 * @param {MakeError} invalidInput
 */
async function notifyDecision(onDecision, event, result, resultKey, invalidInput) {
  if (!onDecision) return
  try {
    await onDecision(event)
  } catch (cause) {
    const e = invalidInput(`onDecision threw after the ${event.type} was durably saved; the change is committed (see error.cause)`, { cause })
    throw Object.assign(e, { committed: true, [resultKey]: result, event })
  }
}

/**
 * The frozen service object: one enumerable method per operation (named after it) and the
 * resolved `limits`.
 * @param {readonly string[]} operations
 * @param {(op: string, input: unknown) => Promise<unknown>} run
 * @param {string} limitsJson
 * @param {symbol} [mark] a non-enumerable marker set to true
 */
function serviceObject(operations, run, limitsJson, mark) {
  const service = {}
  for (const op of operations) {
    Object.defineProperty(service, op, {
      value: Object.defineProperty((/** @type {unknown} */ input) => run(op, input), 'name', { value: op }),
      enumerable: true,
    })
  }
  if (mark !== undefined) Object.defineProperty(service, mark, { value: true })
  Object.defineProperty(service, 'limits', { value: Object.freeze(JSON.parse(limitsJson)), enumerable: true })
  return Object.freeze(service)
}

module.exports = { serviceRedactor, splitSignal, hostRedaction, runNative, orNeverAborted, notifyDecision, serviceObject }
