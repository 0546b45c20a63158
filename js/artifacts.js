'use strict'
// The artifact review service and its pure helpers over the native core.
//
// Redaction: a redactor made by `createSecretRedactor` carries a hidden native handle, so
// the service redacts natively (request before validation and persistence, result and
// audit event on the way out). A host redactor object `{ redact(value) }` is applied here,
// around the native call, at the same three points: the request (every member but
// `ownership`, which must come back unchanged) before it is sent, and the result and the
// event before they are returned or handed to `onDecision`. Either way the store only ever
// sees redacted data.

const native = require('./native.js')
const { invoke, callTimes, callPort, startCall } = require('./calls.js')
const { ArtifactError, callNative, toJson, typeError, describe, isObject, isOurs } = require('./errors.js')
const { entryPoint, fromCaller, boundedJson } = require('./input.js')
const { toStoreHandle } = require('./store.js')
const { createSecretRedactor } = require('./redaction.js')
const { serviceRedactor, splitSignal, hostRedaction, runNative, notifyDecision, serviceObject } = require('./service.js')
// The service's method names and the checkpoint namespace: Rust's (src/artifacts/).
const CONSTANTS = JSON.parse(native.artifactsConstants())
const OPERATIONS = CONSTANTS.operations
/** @type {Map<string, number>} operation name → its index in Rust's list (what `start` takes) */
const OPERATION_INDEX = new Map(OPERATIONS.map((/** @type {string} */ op, /** @type {number} */ i) => [op, i]))

/** Marks a service with a body store wired (the HTTP download route then adds a presigned URL). */
const BODIES_WIRED = Symbol.for('prism-review.artifact-bodies')

/**
 * @param {string} message
 * @param {ErrorOptions} [options]
 */
function invalidInput(message, options) {
  return new ArtifactError(message, 'invalid_input', options)
}

/**
 * @param {unknown} v
 * @returns {v is Record<string, unknown>}
 */
function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/** @param {unknown} limits */
function limitsJson(limits) {
  if (limits === undefined) return 'null'
  if (!isPlainObject(limits)) throw typeError('limits must be an object')
  // NaN and Infinity travel as null, which the native caps rule refuses as out of range.
  return toJson(limits, typeError)
}

/**
 * The frozen resolved limits; a value outside 1..hard is a RangeError.
 * @param {import('../types/artifacts').ArtifactLimits} [limits]
 * @returns {import('../types/artifacts').ResolvedArtifactLimits}
 */
function resolveArtifactLimits(limits) {
  return entryPoint('resolveArtifactLimits', () => {
    const json = limitsJson(limits)
    return Object.freeze(JSON.parse(callNative(native.artifactsResolveLimits, json)))
  })
}

/**
 * @param {unknown} a
 * @param {unknown} b
 */
function sameJson(a, b) {
  try {
    return JSON.stringify(a) === JSON.stringify(b)
  } catch {
    return false
  }
}

/**
 * The artifact review service over any checkpoint store.
 * @param {import('../types/store').CheckpointStore} store a native store or a host object with saveCheckpoint/loadCheckpoint/listCheckpoints/deleteCheckpoint
 * @param {import('../types/artifacts').CreateArtifactServiceOptions} options `{ redactor, linkSecret, limits?, onDecision?, bodies? }`
 * @returns {import('../types/artifacts').ArtifactService & { readonly limits: import('../types/artifacts').ResolvedArtifactLimits }}
 */
function createArtifactService(store, options) {
  return entryPoint('createArtifactService(store, options)', () => buildService(store, options))
}

/**
 * @param {unknown} store
 * @param {import('../types/artifacts').CreateArtifactServiceOptions} options
 * @returns {import('../types/artifacts').ArtifactService & { readonly limits: import('../types/artifacts').ResolvedArtifactLimits }}
 */
function buildService(store, options) {
  if (!isPlainObject(options)) throw typeError('createArtifactService(store, options): options must be an object')
  for (const k of Object.keys(options)) {
    if (!['redactor', 'linkSecret', 'limits', 'onDecision', 'bodies'].includes(k)) throw typeError(`options.${k} is not a known option`)
  }
  const { redactor, linkSecret, limits, onDecision, bodies } = options
  if (bodies !== undefined && (!isPlainObject(bodies) || !['put', 'get', 'delete', 'presign'].every((m) => typeof bodies[m] === 'function'))) {
    throw typeError('options.bodies must be an ArtifactBodyStore (put, get, delete, presign)')
  }
  const { redactorHandle, hostRedactor } = serviceRedactor(redactor)
  if (onDecision !== undefined && typeof onDecision !== 'function') throw typeError('options.onDecision must be a function')
  const secret = secretOf(linkSecret, 'options.linkSecret')
  const limitsText = limitsJson(limits)
  const storeHandle = toStoreHandle(store)
  const handle = callNative(
    () => new native.ArtifactServiceHandle(storeHandle, redactorHandle, callPort(), `{"linkSecretBase64":${JSON.stringify(secret)},"limits":${limitsText}${bodies ? ',"bodies":true' : ''}${onDecision ? '' : ',"events":false'}}`),
  )
  const host = hostRedactor && hostRedaction(hostRedactor, invalidInput)
  const target = handle.callTarget()
  // How long each operation's calls take lately (js/calls.js's `invoke`).
  const took = callTimes(OPERATIONS.length)

  /**
   * The request's JSON text and signal; a promise of them with a host redactor.
   * @param {unknown} input
   * @returns {{ signal: AbortSignal | undefined, json: string } | Promise<{ signal: AbortSignal | undefined, json: string }>}
   */
  function prepare(input) {
    if (!isPlainObject(input)) {
      throw invalidInput(`input must be an object, got ${input === null ? 'null' : Array.isArray(input) ? 'array' : typeof input}`)
    }
    const { rest, signal } = splitSignal(input, invalidInput)
    if (host) {
      const ownershipError = () => new ArtifactError('input.ownership holds a registered secret', 'ownership')
      return host.request(rest, sameJson, ownershipError, isPlainObject).then((redacted) => ({ signal, json: requestJson(redacted) }))
    }
    return { signal, json: requestJson(rest) }
  }

  /** @param {unknown} request */
  function requestJson(request) {
    // Caps charged while reading (issue 17): hostile input costs at most the cap.
    return boundedJson(request, CONSTANTS.maxInputBytes, CONSTANTS.maxDepth, (m) => new ArtifactError(m, 'record_too_large'))
  }

  /**
   * @param {string} op
   * @param {unknown} input
   */
  async function run(op, input) {
    let prepared
    try {
      prepared = host ? await prepare(input) : prepare(input)
    } catch (err) {
      // A getter or Proxy trap of the caller's input that threw: our TypeError, `cause` it.
      if (isOurs(err)) throw err
      throw fromCaller(err, `${op}(input)`)
    }
    const { signal, json } = /** @type {{ signal: AbortSignal | undefined, json: string }} */ (prepared)
    // A call that finished on this thread answers its text itself: no promise to wait on.
    const index = /** @type {number} */ (OPERATION_INDEX.get(op))
    let text = runNative(signal, hostRedactor, ArtifactError, (flag) =>
      invoke((_, token) => (flag ? handle.startAbortable(index, json, flag, token) : startCall(target, index, json, token)), took, index),
    )
    if (typeof text !== 'string') text = await text
    let { result, event, body } = JSON.parse(text)
    if (host) {
      result = await host.redact(result, 'result')
      if (event !== undefined) event = await host.redact(event, 'audit event')
    }
    // deliveryLink with a body store: the revision's presigned URL, bounded by the link.
    if (body !== undefined && bodies) {
      const url = await bodies.presign(body.ref, { ttlMs: body.ttlMs, notAfter: body.notAfter, ...(signal ? { signal } : {}) })
      if (typeof url !== 'string' || url === '') throw new ArtifactError('the body store did not return a URL', 'invalid_input')
      result = { ...result, url }
    }
    if (event !== undefined && onDecision) await notifyDecision(onDecision, event, result, 'record', invalidInput)
    return result
  }

  // The operations are Rust's list (the declared ArtifactService's methods; the typings
  // drift test compares them).
  return /** @type {import('../types/artifacts').ArtifactService & { readonly limits: import('../types/artifacts').ResolvedArtifactLimits }} */ (
    serviceObject(OPERATIONS, run, callNative(() => handle.limits()), bodies ? BODIES_WIRED : undefined)
  )
}

/**
 * @param {unknown} secret
 * @param {string} what
 */
function secretOf(secret, what) {
  if (typeof secret === 'string') return Buffer.from(secret, 'utf8').toString('base64')
  if (secret instanceof Uint8Array) return Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength).toString('base64')
  throw typeError(`${what} must be a string or a Uint8Array`)
}

/**
 * Sign exactly `token` (an ArtifactDeliveryToken): `base64url(JSON.stringify(token))` "."
 * `base64url(HMAC-SHA256(secret, that text))` → the link.
 * @param {import('../types/artifacts').ArtifactDeliveryToken} token
 * @param {string | Uint8Array} secret
 * @returns {string}
 */
function signArtifactDeliveryLink(token, secret) {
  return entryPoint('signArtifactDeliveryLink(token, secret)', () => signLink(token, secret))
}

/**
 * @param {unknown} token
 * @param {unknown} secret
 */
function signLink(token, secret) {
  if (!isObject(token)) throw typeError(`signArtifactDeliveryLink(token, secret): token must be an object, got ${describe(token)}`)
  const key = secretOf(secret, 'signArtifactDeliveryLink: secret')
  return callNative(native.artifactsSignLink, toJson(token, typeError), key)
}

/**
 * Verify a delivery link (size, then signature and shape, then expiry) → its
 * ArtifactDeliveryToken. `maxBytes` defaults to 16 KiB; `now` (an addition) is the
 * current time, a Date or epoch milliseconds.
 * @param {string} link
 * @param {string | Uint8Array} secret
 * @param {number} [maxBytes]
 * @param {Date | number} [now]
 * @returns {import('../types/artifacts').ArtifactDeliveryToken}
 */
function verifyArtifactDeliveryLink(link, secret, maxBytes, now) {
  return entryPoint('verifyArtifactDeliveryLink(link, secret, maxBytes, now)', () => verifyLink(link, secret, maxBytes, now))
}

/**
 * @param {unknown} link
 * @param {unknown} secret
 * @param {unknown} maxBytes
 * @param {unknown} now
 */
function verifyLink(link, secret, maxBytes, now) {
  if (typeof link !== 'string') {
    throw new ArtifactError(`invalid delivery link: expected a string, got ${describe(link)}`, 'invalid_link')
  }
  const key = secretOf(secret, 'verifyArtifactDeliveryLink: secret')
  if (maxBytes !== undefined && !(typeof maxBytes === 'number' && maxBytes >= 0 && Number.isFinite(maxBytes))) {
    throw typeError('verifyArtifactDeliveryLink: maxBytes must be a non-negative number')
  }
  let nowMs
  if (now !== undefined) {
    nowMs = now instanceof Date ? now.getTime() : now
    if (typeof nowMs !== 'number' || !Number.isFinite(nowMs)) {
      throw typeError('verifyArtifactDeliveryLink: now must be a Date or epoch milliseconds')
    }
  }
  return JSON.parse(callNative(native.artifactsVerifyLink, JSON.stringify(link), key, maxBytes, nowMs))
}

/**
 * `"pending" | "approved" | "rejected"`: the decision on the record's latest revision.
 * @param {Pick<import('../types/artifacts').ArtifactRecord, 'revisions' | 'approvals'>} record
 * @returns {import('../types/artifacts').ArtifactApprovalState}
 */
function artifactApprovalState(record) {
  if (!isObject(record)) throw typeError(`artifactApprovalState(record): record must be an object, got ${describe(record)}`)
  // The native side answers one of the three states.
  return /** @type {import('../types/artifacts').ArtifactApprovalState} */ (callNative(native.artifactsApprovalState, toJson(record, typeError)))
}

/**
 * The checkpoint key of an artifact: `threadId:artifactId`.
 * @param {string} threadId
 * @param {string} artifactId
 */
function artifactCheckpointKey(threadId, artifactId) {
  if (typeof threadId !== 'string' || typeof artifactId !== 'string') {
    throw typeError('artifactCheckpointKey(threadId, artifactId): both must be strings')
  }
  return native.artifactsCheckpointKey(threadId, artifactId)
}

/**
 * Hex SHA-256 of the JCS of the citations' identity tuples.
 * @param {readonly import('../types/artifacts').ArtifactCitation[]} citations
 */
function citationBindingDigest(citations) {
  return callNative(native.artifactsCitationDigest, toJson(citations, invalidInput))
}

/**
 * Whether the approval of `version` (default: last validated) still binds its revision's citations.
 * @param {import('../types/artifacts').ArtifactRecord} record
 * @param {number} [version]
 */
function approvalEvidenceIntact(record, version) {
  if (version !== undefined && (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1)) {
    throw invalidInput('version must be a positive integer')
  }
  return callNative(native.artifactsEvidenceIntact, toJson(record, invalidInput), version === undefined ? 'null' : String(version))
}

/**
 * Check citations against the host's already-retrieved snapshots.
 * @param {import('../types/artifacts').CitationIntegrityInput} input
 * @returns {import('../types/artifacts').CitationIntegrityReport}
 */
function checkCitationIntegrity(input) {
  return JSON.parse(callNative(native.artifactsCheckIntegrity, toJson(input, invalidInput)))
}

module.exports = {
  ARTIFACT_CHECKPOINT_NAMESPACE: CONSTANTS.namespace,
  artifactCheckpointKey,
  createArtifactService,
  createSecretRedactor,
  resolveArtifactLimits,
  signArtifactDeliveryLink,
  verifyArtifactDeliveryLink,
  artifactApprovalState,
  checkCitationIntegrity,
  citationBindingDigest,
  approvalEvidenceIntact,
}

// Internal: non-enumerable, so `index.js` (which spreads this module) does not export it.
Object.defineProperty(module.exports, 'BODIES_WIRED', { value: BODIES_WIRED, enumerable: false })
