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
const { toStoreHandle } = require('./store.js')
const { serviceRedactor, splitSignal, hostRedaction, runNative, orNeverAborted, notifyDecision, serviceObject } = require('./service.js')
const { boundedJson } = require('./input.js')

const CONSTANTS = JSON.parse(native.draftsConstants())
const OPTION_KEYS = ['redactor', 'recipientPolicy', 'onDecision', 'editsRequireReapproval', 'limits']
// Request members that are JSON payloads, with the reason a bad JavaScript value gets.
/** @type {Record<string, string>} */
const PAYLOAD_MEMBERS = {
  payload: 'invalid_input',
  schema: 'invalid_input',
  modifiedArguments: 'malformed_edit',
  editedArgs: 'malformed_edit',
  outcome: 'invalid_input',
}

/** @param {string[]} path */
function pointer(path) {
  return path.length === 0 ? '/' : '/' + path.map((k) => String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')
}

/**
 * Refuse a JavaScript value that JSON text would not carry exactly: only plain objects,
 * arrays without holes, strings, booleans, null and finite numbers other than -0, at
 * most `CONSTANTS.maxDepth` levels, no cycles, accessors or prototype keys. Messages name
 * the JSON pointer, never the value.
 * @param {unknown} value
 * @param {string} what
 * @param {string} reason
 * @param {{ used: number }} budget the request's JSON characters charged so far
 */
function checkJsonValue(value, what, reason, budget) {
  /** @type {Set<object>} */
  const active = new Set()
  /** @type {(path: string[], why: string) => never} */
  const fail = (path, why) => {
    throw new WorkDraftError(`${what} at ${pointer(path)} ${why}`, reason)
  }
  // The least JSON text each value writes, charged before it is read (issue 17): the
  // request cap is reached before a hostile payload costs more than the cap.
  /** @param {number} n */
  const charge = (n) => {
    budget.used += n
    if (budget.used > CONSTANTS.maxInputBytes) throw tooLarge(`the request is larger than ${CONSTANTS.maxInputBytes} characters of JSON`)
  }
  /**
   * @param {unknown} v
   * @param {string[]} path
   */
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

/** @param {string} message */
function tooLarge(message) {
  return new WorkDraftError(message, 'payload_too_large')
}

/**
 * JSON text of a request, its cap charged while it is read.
 * @param {unknown} value
 */
function requestJson(value) {
  return toJson(value, invalidInput, (v) => boundedJson(v, CONSTANTS.maxInputBytes, CONSTANTS.maxInputDepth, tooLarge))
}

/**
 * @param {string} message
 * @param {ErrorOptions} [options]
 */
function invalidInput(message, options) {
  return new WorkDraftError(message, 'invalid_input', options)
}

/** @param {unknown} limits */
function limitsJson(limits) {
  if (limits === undefined) return 'null'
  if (!isObject(limits)) throw typeError('limits must be an object')
  // NaN and Infinity travel as null, which the native caps rule refuses as out of range.
  return toJson(limits, typeError)
}

/**
 * The frozen resolved limits; a value outside 1..hard is a RangeError.
 * @param {import('../types/drafts').WorkDraftLimits} [limits]
 * @returns {import('../types/drafts').ResolvedWorkDraftLimits}
 */
function resolveWorkDraftLimits(limits) {
  return Object.freeze(JSON.parse(callNative(native.draftsResolveLimits, limitsJson(limits))))
}

/**
 * Hex SHA-256 of the RFC 8785 canonical JSON of `payload` (a plain JSON object).
 * @param {import('../types/drafts').DraftPayload} payload
 * @returns {string}
 */
function draftPayloadDigest(payload) {
  if (!isObject(payload)) throw invalidInput(`draftPayloadDigest(payload): payload must be a plain object, got ${describe(payload)}`)
  checkJsonValue(payload, 'payload', 'invalid_input', { used: 0 })
  return callNative(native.draftsPayloadDigest, toJson(payload, invalidInput))
}

/**
 * The policy bridge: JSON array of addresses in, JSON array of booleans out (`null` when `allow` threw).
 * @param {import('../types/drafts').WorkDraftRecipientPolicy} policy
 * @returns {(json: string) => Promise<string>}
 */
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

/** @param {import('../types/drafts').WorkDraftServiceOptions} options */
function resolveOptions(options) {
  if (!isObject(options)) throw typeError('createWorkDraftService(store, options): options must be an object')
  for (const k of Object.keys(options)) {
    if (!OPTION_KEYS.includes(k)) throw typeError(`options.${k} is not a known option`)
  }
  const { redactor, recipientPolicy, onDecision, editsRequireReapproval } = options
  const redactors = serviceRedactor(redactor)
  if (recipientPolicy !== undefined && (!isObject(recipientPolicy) || typeof recipientPolicy.allow !== 'function')) {
    throw typeError('options.recipientPolicy must be an object with an allow(address) method')
  }
  if (onDecision !== undefined && typeof onDecision !== 'function') throw typeError('options.onDecision must be a function')
  if (editsRequireReapproval !== undefined && typeof editsRequireReapproval !== 'boolean') {
    throw typeError('options.editsRequireReapproval must be a boolean')
  }
  /** @type {{ limits: unknown, editsRequireReapproval?: boolean }} */
  const config = { limits: JSON.parse(limitsJson(options.limits)) }
  if (editsRequireReapproval !== undefined) config.editsRequireReapproval = editsRequireReapproval
  return { redactors, recipientPolicy, onDecision, config: JSON.stringify(config) }
}

/**
 * The work draft service over any checkpoint store.
 * @param {import('../types/store').CheckpointStore} store a native store or a host object with saveCheckpoint/loadCheckpoint/listCheckpoints/deleteCheckpoint
 * @param {import('../types/drafts').WorkDraftServiceOptions} options `{ redactor, recipientPolicy?, onDecision?, editsRequireReapproval?, limits? }`
 * @returns {import('../types/drafts').WorkDraftService}
 */
function createWorkDraftService(store, options) {
  const { redactors, recipientPolicy, onDecision, config } = resolveOptions(options)
  const storeHandle = toStoreHandle(store)
  const { redactorHandle, hostRedactor } = redactors
  const policy = recipientPolicy ? policyBridge(recipientPolicy) : undefined
  const handle = callNative(() => new native.WorkDraftServiceHandle(storeHandle, redactorHandle, config, policy))
  const host = hostRedactor && hostRedaction(hostRedactor, invalidInput)

  /** @param {unknown} input */
  async function prepare(input) {
    if (!isObject(input)) throw invalidInput(`input must be an object, got ${describe(input)}`)
    let { rest, signal } = splitSignal(input, invalidInput)
    const budget = { used: 0 }
    for (const [member, reason] of Object.entries(PAYLOAD_MEMBERS)) {
      if (rest[member] !== undefined) checkJsonValue(rest[member], member, reason, budget)
    }
    if (host) {
      rest = await host.request(rest, (a, b) => JSON.stringify(a) === JSON.stringify(b), () => invalidInput('input.ownership holds a registered secret'), isObject)
    }
    return { signal, json: requestJson(rest) }
  }

  /**
   * @param {string} op
   * @param {unknown} input
   */
  async function run(op, input) {
    const { signal, json } = await prepare(input)
    const text = await runNative(signal, hostRedactor, WorkDraftError, (flag) => callNativeAsync(() => handle.call(op, json, orNeverAborted(flag))))
    let { result, event } = JSON.parse(text)
    if (host) {
      result = await host.redact(result, 'result')
      if (event !== undefined) event = await host.redact(event, 'audit event')
    }
    if (event !== undefined) await notifyDecision(onDecision, event, result, 'draft', invalidInput)
    return result
  }

  // The operations are Rust's list (the declared WorkDraftService's methods).
  return /** @type {import('../types/drafts').WorkDraftService} */ (serviceObject(CONSTANTS.operations, run, callNative(() => handle.limits())))
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
