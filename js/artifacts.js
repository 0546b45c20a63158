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
const { invoke } = require('./calls.js')
const { ArtifactError, callNative, toJson, typeError, describe, isObject, isOurs } = require('./errors.js')
const { entryPoint, fromCaller, boundedJson } = require('./input.js')
const { toStoreHandle, registerSignal, releaseSignal } = require('./store.js')
const { createSecretRedactor, nativeRedactors } = require('./redaction.js')
// The service's method names and the checkpoint namespace: Rust's (src/artifacts/).
const CONSTANTS = JSON.parse(native.artifactsConstants())
const OPERATIONS = CONSTANTS.operations

/** Marks a service with a body store wired (the HTTP download route then adds a presigned URL). */
const BODIES_WIRED = Symbol.for('prism-review.artifact-bodies')

let emptyRedactor
let neverAborted

function invalidInput(message, options) {
  return new ArtifactError(message, 'invalid_input', options)
}

function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function limitsJson(limits) {
  if (limits === undefined) return 'null'
  if (!isPlainObject(limits)) throw typeError('limits must be an object')
  // NaN and Infinity travel as null, which the native caps rule refuses as out of range.
  return toJson(limits, typeError)
}

/** The frozen resolved limits; a value outside 1..hard is a RangeError. */
function resolveArtifactLimits(limits) {
  return entryPoint('resolveArtifactLimits', () => {
    const json = limitsJson(limits)
    return Object.freeze(JSON.parse(callNative(native.artifactsResolveLimits, json)))
  })
}

function isAbortSignal(s) {
  return (
    (typeof AbortSignal === 'function' && s instanceof AbortSignal) ||
    (s !== null && typeof s === 'object' && typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function')
  )
}

function sameJson(a, b) {
  try {
    return JSON.stringify(a) === JSON.stringify(b)
  } catch {
    return false
  }
}

/**
 * The artifact review service over any checkpoint store.
 * @param store a native store or a host object with saveCheckpoint/loadCheckpoint/listCheckpoints/deleteCheckpoint
 * @param options `{ redactor, linkSecret, limits?, onDecision? }`
 */
function createArtifactService(store, options) {
  return entryPoint('createArtifactService(store, options)', () => buildService(store, options))
}

function buildService(store, options) {
  if (!isPlainObject(options)) throw typeError('createArtifactService(store, options): options must be an object')
  for (const k of Object.keys(options)) {
    if (!['redactor', 'linkSecret', 'limits', 'onDecision', 'bodies'].includes(k)) throw typeError(`options.${k} is not a known option`)
  }
  const { redactor, linkSecret, limits, onDecision, bodies } = options
  if (bodies !== undefined && (!isPlainObject(bodies) || !['put', 'get', 'delete', 'presign'].every((m) => typeof bodies[m] === 'function'))) {
    throw typeError('options.bodies must be an ArtifactBodyStore (put, get, delete, presign)')
  }
  if (redactor === null || (typeof redactor !== 'object' && typeof redactor !== 'function') || typeof redactor.redact !== 'function') {
    throw typeError('options.redactor must be a SecretRedactor ({ redact(value) })')
  }
  if (onDecision !== undefined && typeof onDecision !== 'function') throw typeError('options.onDecision must be a function')
  const secret = secretOf(linkSecret, 'options.linkSecret')
  const limitsText = limitsJson(limits)
  const storeHandle = toStoreHandle(store)
  let redactorHandle = nativeRedactors.get(redactor)
  const hostRedactor = redactorHandle ? null : redactor
  if (!redactorHandle) {
    emptyRedactor ??= callNative(() => new native.SecretRedactorHandle('[]'))
    redactorHandle = emptyRedactor
  }
  const handle = callNative(
    () => new native.ArtifactServiceHandle(storeHandle, redactorHandle, `{"linkSecretBase64":${JSON.stringify(secret)},"limits":${limitsText}${bodies ? ',"bodies":true' : ''}}`),
  )

  async function hostRedact(value, what) {
    try {
      return await hostRedactor.redact(value)
    } catch (cause) {
      throw invalidInput(`the host redactor failed on the ${what}`, { cause })
    }
  }

  /** The request's JSON text and signal; a promise of them with a host redactor. */
  function prepare(input) {
    if (!isPlainObject(input)) {
      throw invalidInput(`input must be an object, got ${input === null ? 'null' : Array.isArray(input) ? 'array' : typeof input}`)
    }
    let rest, signal
    try {
      ;({ signal, ...rest } = input)
    } catch (cause) {
      throw invalidInput('input cannot be read', { cause })
    }
    if (signal !== undefined && !isAbortSignal(signal)) throw invalidInput('input.signal must be an AbortSignal')
    if (hostRedactor) return hostRedactRequest(rest).then((redacted) => ({ signal, json: requestJson(redacted) }))
    return { signal, json: requestJson(rest) }
  }

  async function hostRedactRequest(rest) {
    const { ownership, ...request } = rest
    if (ownership !== undefined && !sameJson(await hostRedact(ownership, 'ownership'), ownership)) {
      throw new ArtifactError('input.ownership holds a registered secret', 'ownership')
    }
    const redacted = await hostRedact(request, 'request')
    if (!isPlainObject(redacted)) throw invalidInput('the host redactor must return the request as an object')
    return ownership === undefined ? redacted : { ownership, ...redacted }
  }

  function requestJson(request) {
    // Caps charged while reading (issue 17): hostile input costs at most the cap.
    return boundedJson(request, CONSTANTS.maxInputBytes, CONSTANTS.maxDepth, (m) => new ArtifactError(m, 'record_too_large'))
  }

  async function run(op, input) {
    let prepared
    try {
      prepared = hostRedactor ? await prepare(input) : prepare(input)
    } catch (err) {
      // A getter or Proxy trap of the caller's input that threw: our TypeError, `cause` it.
      if (isOurs(err)) throw err
      throw fromCaller(err, `${op}(input)`)
    }
    const { signal, json } = prepared
    signal?.throwIfAborted()
    // Without a signal nothing can abort: one shared flag that is never set. With one,
    // host stores receive it as `signal` (by the id the flag carries).
    const signalId = signal ? registerSignal(signal) : undefined
    const flag = signal ? new native.ArtifactAbortFlag(signalId) : (neverAborted ??= new native.ArtifactAbortFlag())
    const onAbort = () => flag.abort()
    signal?.addEventListener('abort', onAbort, { once: true })
    let text
    try {
      // A call that finished on this thread answers its text itself: no promise to wait on.
      text = invoke((port, token) => handle.start(port, op, json, flag, token))
      if (typeof text !== 'string') text = await text
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      if (hostRedactor && err instanceof ArtifactError) {
        // Messages may quote a field name of the request: never a registered secret.
        try {
          const m = await hostRedactor.redact(err.message)
          if (typeof m === 'string') err.message = m
        } catch {}
      }
      throw err
    } finally {
      if (signal) {
        signal.removeEventListener('abort', onAbort)
        releaseSignal(signalId)
      }
    }
    let { result, event, body } = JSON.parse(text)
    if (hostRedactor) {
      result = await hostRedact(result, 'result')
      if (event !== undefined) event = await hostRedact(event, 'audit event')
    }
    // deliveryLink with a body store: the revision's presigned URL, bounded by the link.
    if (body !== undefined && bodies) {
      const url = await bodies.presign(body.ref, { ttlMs: body.ttlMs, notAfter: body.notAfter, ...(signal ? { signal } : {}) })
      if (typeof url !== 'string' || url === '') throw new ArtifactError('the body store did not return a URL', 'invalid_input')
      result = { ...result, url }
    }
    if (event !== undefined && onDecision) {
      try {
        await onDecision(event)
      } catch (cause) {
        const e = invalidInput(`onDecision threw after the ${event.type} was durably saved; the change is committed (see error.cause)`, {
          cause,
        })
        e.committed = true
        e.record = result
        e.event = event
        throw e
      }
    }
    return result
  }

  const service = {}
  for (const op of OPERATIONS) {
    Object.defineProperty(service, op, {
      value: Object.defineProperty((input) => run(op, input), 'name', { value: op }),
      enumerable: true,
    })
  }
  if (bodies) Object.defineProperty(service, BODIES_WIRED, { value: true })
  Object.defineProperty(service, 'limits', { value: Object.freeze(JSON.parse(callNative(() => handle.limits()))), enumerable: true })
  return Object.freeze(service)
}

function secretOf(secret, what) {
  if (typeof secret === 'string') return Buffer.from(secret, 'utf8').toString('base64')
  if (secret instanceof Uint8Array) return Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength).toString('base64')
  throw typeError(`${what} must be a string or a Uint8Array`)
}

/**
 * Sign exactly `token` (an ArtifactDeliveryToken): `base64url(JSON.stringify(token))` "."
 * `base64url(HMAC-SHA256(secret, that text))` → the link.
 */
function signArtifactDeliveryLink(token, secret) {
  return entryPoint('signArtifactDeliveryLink(token, secret)', () => signLink(token, secret))
}

function signLink(token, secret) {
  if (!isObject(token)) throw typeError(`signArtifactDeliveryLink(token, secret): token must be an object, got ${describe(token)}`)
  const key = secretOf(secret, 'signArtifactDeliveryLink: secret')
  return callNative(native.artifactsSignLink, toJson(token, typeError), key)
}

/**
 * Verify a delivery link (size, then signature and shape, then expiry) → its
 * ArtifactDeliveryToken. `maxBytes` defaults to 16 KiB; `now` (an addition) is the
 * current time, a Date or epoch milliseconds.
 */
function verifyArtifactDeliveryLink(link, secret, maxBytes, now) {
  return entryPoint('verifyArtifactDeliveryLink(link, secret, maxBytes, now)', () => verifyLink(link, secret, maxBytes, now))
}

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

/** `"pending" | "approved" | "rejected"`: the decision on the record's latest revision. */
function artifactApprovalState(record) {
  if (!isObject(record)) throw typeError(`artifactApprovalState(record): record must be an object, got ${describe(record)}`)
  return callNative(native.artifactsApprovalState, toJson(record, typeError))
}

/** The checkpoint key of an artifact: `threadId:artifactId`. */
function artifactCheckpointKey(threadId, artifactId) {
  if (typeof threadId !== 'string' || typeof artifactId !== 'string') {
    throw typeError('artifactCheckpointKey(threadId, artifactId): both must be strings')
  }
  return native.artifactsCheckpointKey(threadId, artifactId)
}

/** Hex SHA-256 of the JCS of the citations' identity tuples. */
function citationBindingDigest(citations) {
  return callNative(native.artifactsCitationDigest, toJson(citations, invalidInput))
}

/** Whether the approval of `version` (default: last validated) still binds its revision's citations. */
function approvalEvidenceIntact(record, version) {
  if (version !== undefined && (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1)) {
    throw invalidInput('version must be a positive integer')
  }
  return callNative(native.artifactsEvidenceIntact, toJson(record, invalidInput), version === undefined ? 'null' : String(version))
}

/** Check citations against the host's already-retrieved snapshots. */
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
