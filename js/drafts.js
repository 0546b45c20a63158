'use strict'
// Business action drafts with editable approvals: the work draft service over the native
// core (src/drafts/). Rules live in Rust; this file does what only JavaScript can: it
// refuses JavaScript values JSON would silently change (NaN, Infinity, -0, BigInt,
// undefined, functions, cycles, accessors, class instances, prototype keys) before they
// are serialised, bridges the host's recipientPolicy and redactor, and calls onDecision.
//
// Redaction follows the artifact service: a redactor made by `createSecretRedactor`
// redacts natively; a host redactor object `{ redact(value) }` is applied here to the
// request (all but `ownership`) before it is sent and to results and events after.

const native = require('./native.js')
const { WorkDraftError, callNative, callNativeAsync, toJson, typeError, describe, isObject } = require('./errors.js')
const { toStoreHandle, registerSignal, releaseSignal } = require('./store.js')
const { nativeRedactors } = require('./redaction.js')
const { boundedJson } = require('./input.js')

const CONSTANTS = JSON.parse(native.draftsConstants())
const OPTION_KEYS = ['redactor', 'recipientPolicy', 'onDecision', 'editsRequireReapproval', 'limits']
// Request members that are JSON payloads, with the reason a bad JavaScript value gets.
const PAYLOAD_MEMBERS = {
  payload: 'invalid_input',
  schema: 'invalid_input',
  modifiedArguments: 'malformed_edit',
  editedArgs: 'malformed_edit',
  outcome: 'invalid_input',
}

let emptyRedactor
let neverAborted

function pointer(path) {
  return path.length === 0 ? '/' : '/' + path.map((k) => String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')
}

/**
 * Refuse a JavaScript value that JSON text would not carry exactly: only plain objects,
 * arrays without holes, strings, booleans, null and finite numbers other than -0, at
 * most `CONSTANTS.maxDepth` levels, no cycles, accessors or prototype keys. Messages name
 * the JSON pointer, never the value.
 */
function checkJsonValue(value, what, reason, budget) {
  const active = new Set()
  const fail = (path, why) => {
    throw new WorkDraftError(`${what} at ${pointer(path)} ${why}`, reason)
  }
  // The least JSON text each value writes, charged before it is read (issue 17): the
  // request cap is reached before a hostile payload costs more than the cap.
  const charge = (n) => {
    budget.used += n
    if (budget.used > CONSTANTS.maxInputBytes) throw tooLarge(`the request is larger than ${CONSTANTS.maxInputBytes} characters of JSON`)
  }
  const walk = (v, path) => {
    switch (typeof v) {
      case 'string':
        charge(v.length + 2)
        return
      case 'boolean':
        charge(4)
        return
      case 'number':
        if (!Number.isFinite(v)) fail(path, 'is not a finite number')
        if (Object.is(v, -0)) fail(path, 'is -0, which JSON cannot carry')
        charge(1)
        return
      case 'object':
        if (v === null) return charge(4)
        break
      default:
        fail(path, `is a ${typeof v}, which JSON cannot carry`)
    }
    if (path.length >= CONSTANTS.maxDepth) fail(path, `is nested deeper than ${CONSTANTS.maxDepth} levels`)
    if (active.has(v)) fail(path, 'refers back to an enclosing value (a cycle)')
    const isArray = Array.isArray(v)
    const proto = Object.getPrototypeOf(v)
    if (!isArray && proto !== Object.prototype && proto !== null) fail(path, 'is not a plain object')
    if (Object.getOwnPropertySymbols(v).length > 0) fail(path, 'has symbol keys')
    active.add(v)
    // Brackets and the commas between elements before any is read; braces and per member
    // its quoted key, colon and comma (one comma too many, so one brace is not charged).
    charge(isArray ? 1 + v.length : 1)
    const descriptors = Object.getOwnPropertyDescriptors(v)
    for (const key of Object.keys(descriptors)) {
      if (isArray && key === 'length') continue
      if (!isArray) charge(key.length + 4)
      const d = descriptors[key]
      const at = [...path, key]
      if (!('value' in d)) fail(at, 'is an accessor (getter or setter)')
      if (!d.enumerable) fail(at, 'is not enumerable')
      if (key === '__proto__' || key === 'constructor' || key === 'prototype') fail(at, 'is a prototype key')
      walk(d.value, at)
    }
    if (isArray && Object.keys(v).length !== v.length) fail(path, 'is a sparse array')
    active.delete(v)
  }
  walk(value, [])
}

function tooLarge(message) {
  return new WorkDraftError(message, 'payload_too_large')
}

/** JSON text of a request, its cap charged while it is read. */
function requestJson(value) {
  return toJson(value, invalidInput, (v) => boundedJson(v, CONSTANTS.maxInputBytes, CONSTANTS.maxInputDepth, tooLarge))
}

function invalidInput(message, options) {
  return new WorkDraftError(message, 'invalid_input', options)
}

function isAbortSignal(s) {
  return (
    (typeof AbortSignal === 'function' && s instanceof AbortSignal) ||
    (s !== null && typeof s === 'object' && typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function')
  )
}

function limitsJson(limits) {
  if (limits === undefined) return 'null'
  if (!isObject(limits)) throw typeError('limits must be an object')
  // NaN and Infinity travel as null, which the native caps rule refuses as out of range.
  return toJson(limits, typeError)
}

/** The frozen resolved limits; a value outside 1..hard is a RangeError. */
function resolveWorkDraftLimits(limits) {
  return Object.freeze(JSON.parse(callNative(native.draftsResolveLimits, limitsJson(limits))))
}

/** Hex SHA-256 of the RFC 8785 canonical JSON of `payload` (a plain JSON object). */
function draftPayloadDigest(payload) {
  if (!isObject(payload)) throw invalidInput(`draftPayloadDigest(payload): payload must be a plain object, got ${describe(payload)}`)
  checkJsonValue(payload, 'payload', 'invalid_input', { used: 0 })
  return callNative(native.draftsPayloadDigest, toJson(payload, invalidInput))
}

/** The policy bridge: JSON array of addresses in, JSON array of booleans out (`null` when `allow` threw). */
function policyBridge(policy) {
  return async (json) => {
    try {
      const out = []
      for (const address of JSON.parse(json)) out.push((await policy.allow(address)) === true)
      return JSON.stringify(out)
    } catch {
      return 'null'
    }
  }
}

function resolveOptions(options) {
  if (!isObject(options)) throw typeError('createWorkDraftService(store, options): options must be an object')
  for (const k of Object.keys(options)) {
    if (!OPTION_KEYS.includes(k)) throw typeError(`options.${k} is not a known option`)
  }
  const { redactor, recipientPolicy, onDecision, editsRequireReapproval } = options
  if (redactor === null || (typeof redactor !== 'object' && typeof redactor !== 'function') || typeof redactor.redact !== 'function') {
    throw typeError('options.redactor must be a SecretRedactor ({ redact(value) })')
  }
  if (recipientPolicy !== undefined && (!isObject(recipientPolicy) || typeof recipientPolicy.allow !== 'function')) {
    throw typeError('options.recipientPolicy must be an object with an allow(address) method')
  }
  if (onDecision !== undefined && typeof onDecision !== 'function') throw typeError('options.onDecision must be a function')
  if (editsRequireReapproval !== undefined && typeof editsRequireReapproval !== 'boolean') {
    throw typeError('options.editsRequireReapproval must be a boolean')
  }
  const config = { limits: JSON.parse(limitsJson(options.limits)) }
  if (editsRequireReapproval !== undefined) config.editsRequireReapproval = editsRequireReapproval
  return { redactor, recipientPolicy, onDecision, config: JSON.stringify(config) }
}

/**
 * The work draft service over any checkpoint store.
 * @param store a native store or a host object with saveCheckpoint/loadCheckpoint/listCheckpoints/deleteCheckpoint
 * @param options `{ redactor, recipientPolicy?, onDecision?, editsRequireReapproval?, limits? }`
 */
function createWorkDraftService(store, options) {
  const { redactor, recipientPolicy, onDecision, config } = resolveOptions(options)
  const storeHandle = toStoreHandle(store)
  let redactorHandle = nativeRedactors.get(redactor)
  const hostRedactor = redactorHandle ? null : redactor
  if (!redactorHandle) {
    emptyRedactor ??= callNative(() => new native.SecretRedactorHandle('[]'))
    redactorHandle = emptyRedactor
  }
  const policy = recipientPolicy ? policyBridge(recipientPolicy) : undefined
  const handle = callNative(() => new native.WorkDraftServiceHandle(storeHandle, redactorHandle, config, policy))

  async function hostRedact(value, what) {
    try {
      return await hostRedactor.redact(value)
    } catch (cause) {
      throw invalidInput(`the host redactor failed on the ${what}`, { cause })
    }
  }

  async function prepare(input) {
    if (!isObject(input)) throw invalidInput(`input must be an object, got ${describe(input)}`)
    let rest, signal
    try {
      ;({ signal, ...rest } = input)
    } catch (cause) {
      throw invalidInput('input cannot be read', { cause })
    }
    if (signal !== undefined && !isAbortSignal(signal)) throw invalidInput('input.signal must be an AbortSignal')
    const budget = { used: 0 }
    for (const [member, reason] of Object.entries(PAYLOAD_MEMBERS)) {
      if (rest[member] !== undefined) checkJsonValue(rest[member], member, reason, budget)
    }
    if (hostRedactor) {
      const { ownership, ...request } = rest
      if (ownership !== undefined && JSON.stringify(await hostRedact(ownership, 'ownership')) !== JSON.stringify(ownership)) {
        throw invalidInput('input.ownership holds a registered secret')
      }
      const redacted = await hostRedact(request, 'request')
      if (!isObject(redacted)) throw invalidInput('the host redactor must return the request as an object')
      rest = ownership === undefined ? redacted : { ownership, ...redacted }
    }
    return { signal, json: requestJson(rest) }
  }

  async function run(op, input) {
    const { signal, json } = await prepare(input)
    signal?.throwIfAborted()
    const signalId = signal ? registerSignal(signal) : undefined
    const flag = signal ? new native.ArtifactAbortFlag(signalId) : (neverAborted ??= new native.ArtifactAbortFlag())
    const onAbort = () => flag.abort()
    signal?.addEventListener('abort', onAbort, { once: true })
    let text
    try {
      text = await callNativeAsync(() => handle.call(op, json, flag))
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      if (hostRedactor && err instanceof WorkDraftError) {
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
    let { result, event } = JSON.parse(text)
    if (hostRedactor) {
      result = await hostRedact(result, 'result')
      if (event !== undefined) event = await hostRedact(event, 'audit event')
    }
    if (event !== undefined && onDecision) {
      try {
        await onDecision(event)
      } catch (cause) {
        const e = invalidInput(`onDecision threw after the ${event.type} was durably saved; the change is committed (see error.cause)`, { cause })
        e.committed = true
        e.draft = result
        e.event = event
        throw e
      }
    }
    return result
  }

  const service = {}
  for (const op of CONSTANTS.operations) {
    Object.defineProperty(service, op, {
      value: Object.defineProperty((input) => run(op, input), 'name', { value: op }),
      enumerable: true,
    })
  }
  Object.defineProperty(service, 'limits', { value: Object.freeze(JSON.parse(callNative(() => handle.limits()))), enumerable: true })
  return Object.freeze(service)
}

module.exports = {
  WORK_DRAFT_CHECKPOINT_NAMESPACE: CONSTANTS.namespace,
  WORK_DRAFT_ERROR_REASONS: Object.freeze(Object.keys(CONSTANTS.reasons)),
  createWorkDraftService,
  draftPayloadDigest,
  resolveWorkDraftLimits,
}

// Internal (non-enumerable, so index.js does not export it): the HTTP handler's tables.
Object.defineProperty(module.exports, 'DRAFT_CONSTANTS', { value: CONSTANTS, enumerable: false })
