'use strict'
// Checkpoint stores: the memory store, SQLite and PostgreSQL persistence, and the bridge
// that lets a host's own JavaScript store (written to @arnilo/prism's CheckpointStore)
// serve the native artifact service.
//
// A native store is a plain object whose four methods are own enumerable closures over a
// native `CheckpointStoreHandle`, as the reference's stores are, so `{ ...store,
// saveCheckpoint: wrapped }` is a store too. `toStoreHandle` (internal) gives native
// code the handle back when all four methods are still one native store's closures (the
// fast path); any other object with the four methods is bridged through thread-safe
// functions, and the artifact service's AbortSignal reaches it as `signal`.

const native = require('./native.js')
const { invoke, callTimes, callPort, startCall } = require('./calls.js')
const { ArtifactError, CheckpointConflictError, callNative, toJson, typeError, rangeError, describe, isObject } = require('./errors.js')
const { entryPoint, boundedJson } = require('./input.js')

/** @typedef {import('../binding.js').CheckpointStoreHandle} CheckpointStoreHandle */
/** @typedef {import('../types/store').CheckpointStore} CheckpointStore */

const METHODS = /** @type {const} */ (['saveCheckpoint', 'loadCheckpoint', 'listCheckpoints', 'deleteCheckpoint'])
/**
 * Native store method → its handle.
 * @type {WeakMap<Function, CheckpointStoreHandle>}
 */
const methodHandles = new WeakMap()

/** @param {string} message */
function invalidInput(message) {
  return new ArtifactError(message, 'invalid_input')
}

/**
 * @param {unknown} s
 * @returns {s is AbortSignal}
 */
function isAbortSignal(s) {
  return (
    (typeof AbortSignal === 'function' && s instanceof AbortSignal) ||
    (isObject(s) && typeof s.aborted === 'boolean' && typeof s.throwIfAborted === 'function')
  )
}

/** The wire's limits (`{ maxInputBytes, maxDepth }`), owned by Rust. */
const WIRE = JSON.parse(native.storeConstants())

/**
 * JSON text of a store call's argument without its `signal` (checked, and honoured now).
 * The text is written by the bounded reader, charging the wire's size and depth limits
 * while it reads (issue 17): a hostile value costs at most `maxInputBytes` before it is a
 * RangeError. A value JSON cannot carry (a cycle, a BigInt, a throwing toJSON) is the
 * reference's CheckpointConflictError, with the original error as `cause`.
 * @param {string} method
 * @param {unknown} input
 */
function inputJson(method, input) {
  const { rest, signal } = entryPoint(`${method}(input)`, () => readStoreInput(method, input))
  // The caller's own abort reason is what an aborted signal rejects with (not wrapped).
  signal?.throwIfAborted()
  const tooLarge = (/** @type {string} */ m) => rangeError(`${method}(input): ${m.replace('the request', 'input')}`)
  return entryPoint(`${method}(input)`, () =>
    toJson(
      rest,
      (m) => new CheckpointConflictError(`Checkpoint value must be JSON serializable: ${m}`),
      (value) => boundedJson(value, WIRE.maxInputBytes, WIRE.maxDepth, tooLarge),
    ),
  )
}

/**
 * The input without its `signal` (checked), and the signal.
 * @param {string} method
 * @param {unknown} input
 * @returns {{ rest: object, signal: AbortSignal | undefined }}
 */
function readStoreInput(method, input) {
  if (!isObject(input)) throw typeError(`${method}(input): input must be an object, got ${describe(input)}`)
  if (input.signal === undefined) return { rest: input, signal: undefined }
  const { signal, ...rest } = input
  if (!isAbortSignal(signal)) throw typeError(`${method}(input): input.signal must be an AbortSignal`)
  return { rest, signal }
}

const SAVE = 0
const LOAD = 1
const LIST = 2
const DELETE = 3

/**
 * A native store: a plain object of four closures over `handle`.
 * @param {CheckpointStoreHandle} handle
 * @returns {CheckpointStore}
 */
function wrapHandle(handle) {
  const target = handle.callTarget(callPort())
  // How long each operation's calls take lately (js/calls.js's `invoke`).
  const took = callTimes(METHODS.length)
  // `method(input)` → its input's JSON text (a failure rejects). A call that finished on
  // this thread answers its text itself: no promise to wait on.
  /**
   * @param {number} op
   * @param {string} method
   * @param {unknown} input
   */
  const call = async (op, method, input) => {
    const json = inputJson(method, input)
    const text = invoke((_, token) => startCall(target, op, json, token), took, op)
    return JSON.parse(typeof text === 'string' ? text : await text)
  }
  /** @type {CheckpointStore} */
  const store = {
    saveCheckpoint: (input) => call(SAVE, 'saveCheckpoint', input),
    loadCheckpoint: (input) => call(LOAD, 'loadCheckpoint', input),
    listCheckpoints: (input = {}) => call(LIST, 'listCheckpoints', input),
    deleteCheckpoint: (input) => call(DELETE, 'deleteCheckpoint', input),
  }
  for (const m of METHODS) methodHandles.set(store[m], handle)
  return store
}

/**
 * @param {string} fnName
 * @param {unknown} options
 * @param {boolean} allowUndefined
 */
function optionsJson(fnName, options, allowUndefined) {
  if (options === undefined && allowUndefined) return '{}'
  if (!isObject(options)) {
    throw invalidInput(`${fnName}: options must be an object`)
  }
  return toJson(options, (m) => invalidInput(`${fnName}: ${m}`), (o) =>
    JSON.stringify(
      o,
      /** @this {unknown} @param {string} key @param {unknown} value */
      function (key, value) {
        return optionValue(fnName, this === o, key, value)
      },
    ),
  )
}

/**
 * `JSON.stringify`'s replacer for an options object. A value inside it that is a live
 * object (a class instance such as a driver's pool or database handle) is sent as its
 * class's name, not serialized, so that the factory refuses it by name (the native side
 * decides which options it takes and what each must be). An option (`topLevel`) that is
 * a number JSON cannot carry (NaN, ±Infinity: it would write null) is a RangeError here,
 * as the native side makes any other number outside an option's range.
 * @param {string} fnName
 * @param {boolean} topLevel
 * @param {string} key
 * @param {unknown} value
 */
function optionValue(fnName, topLevel, key, value) {
  if (topLevel && typeof value === 'number' && !Number.isFinite(value)) {
    throw rangeError(`${fnName}: options.${key} must be a finite number, got ${value}`)
  }
  if (key === '' || value === null || typeof value !== 'object' || Array.isArray(value)) return value
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null ? value : `[${proto.constructor?.name ?? 'object'}]`
}

/**
 * A bounded in-memory checkpoint store (tests, single-process hosts).
 * @param {import('../types/store').MemoryCheckpointStoreOptions} [options]
 * @returns {CheckpointStore}
 */
function createMemoryCheckpointStore(options) {
  return entryPoint('createMemoryCheckpointStore(options)', () => {
    const json = optionsJson('createMemoryCheckpointStore', options, true)
    return wrapHandle(callNative(native.createMemoryCheckpointStore, json))
  })
}

/**
 * @param {import('../binding.js').PersistenceHandle} handle
 */
function persistence(handle) {
  return Object.freeze({
    checkpoints: wrapHandle(handle.checkpoints()),
    // Async, so that a synchronous native failure is a rejection; the native side refuses
    // every call made after this one before it returns (issue 17).
    close: async () => {
      await invoke((port, token) => handle.close(port, token))
    },
  })
}

/**
 * SQLite persistence: one WAL-mode database file (created when missing) holding checkpoints.
 * All database work runs off the JavaScript thread.
 * @param {import('../types/store').SqlitePersistenceOptions} options
 * @returns {import('../types/store').SqlitePersistence}
 */
function createSqlitePersistence(options) {
  return entryPoint('createSqlitePersistence(options)', () => {
    return persistence(callNative(native.createSqlitePersistence, optionsJson('createSqlitePersistence', options, false)))
  })
}

/**
 * PostgreSQL persistence: a connection pool over one database that many Node instances
 * share. The schema is created or migrated on first use.
 * @param {import('../types/store').PostgresPersistenceOptions} options
 * @returns {import('../types/store').PostgresPersistence}
 */
function createPostgresPersistence(options) {
  return entryPoint('createPostgresPersistence(options)', () => {
    return persistence(callNative(native.createPostgresPersistence, optionsJson('createPostgresPersistence', options, false)))
  })
}

// The AbortSignals of artifact service calls in flight, by the id native code carries in
// a host store request's `signal`.
/** @type {Map<number, AbortSignal>} */
const signals = new Map()
let nextSignalId = 0

/**
 * Register a caller's signal for host store calls; returns its id.
 * @param {AbortSignal} signal
 */
function registerSignal(signal) {
  do nextSignalId = (nextSignalId + 1) % 0xffffffff
  while (signals.has(nextSignalId))
  signals.set(nextSignalId, signal)
  return nextSignalId
}

/** @param {number} id */
function releaseSignal(id) {
  signals.delete(id)
}

/**
 * @template F
 * @param {() => unknown} get
 * @param {F} fallback
 * @returns {string | F}
 */
function safeString(get, fallback) {
  try {
    const v = get()
    return typeof v === 'string' ? v : fallback
  } catch {
    return fallback
  }
}

/**
 * One host method as the native bridge calls it: JSON text in, an envelope out, never a rejection.
 * @param {Record<string, unknown>} store
 * @param {typeof METHODS[number]} method
 * @returns {(requestJson: string) => Promise<string>}
 */
function hostMethod(store, method) {
  // The host's own function (toStoreHandle checked that it is one).
  const fn = /** @type {(this: unknown, request: unknown) => unknown} */ (store[method])
  return async (requestJson) => {
    try {
      const request = JSON.parse(requestJson)
      if (request.signal !== undefined) {
        const signal = signals.get(request.signal)
        if (signal === undefined) delete request.signal
        else request.signal = signal
      }
      const result = await fn.call(store, request)
      return JSON.stringify({ ok: result === undefined ? null : result })
    } catch (err) {
      // Whatever the host threw: its code and message are read, each guarded.
      const thrown = /** @type {{ code?: unknown, message?: unknown }} */ (err)
      const code = safeString(() => thrown.code, undefined)
      const message = safeString(() => thrown.message, undefined) ?? safeString(() => String(err), 'host store failed')
      return JSON.stringify({ error: { code, message: message.slice(0, 1024) } })
    }
  }
}

/**
 * Internal: the native handle for any store. A native store (or a copy whose four methods
 * are still its own) gives its handle; any other object with the four methods is bridged.
 * @param {unknown} store
 * @returns {CheckpointStoreHandle}
 */
function toStoreHandle(store) {
  if (isObject(store) || typeof store === 'function') {
    // Any object or function: its four members are read and checked below (a WeakMap
    // answers undefined for a member that is not a function).
    const s = /** @type {Record<string, unknown>} */ (store)
    const h = methodHandles.get(/** @type {Function} */ (s.saveCheckpoint))
    if (h !== undefined && METHODS.every((m) => methodHandles.get(/** @type {Function} */ (s[m])) === h)) return h
    if (METHODS.every((m) => typeof s[m] === 'function')) {
      return callNative(
        native.createHostCheckpointStore,
        hostMethod(s, 'saveCheckpoint'),
        hostMethod(s, 'loadCheckpoint'),
        hostMethod(s, 'listCheckpoints'),
        hostMethod(s, 'deleteCheckpoint'),
      )
    }
  }
  throw typeError(`store must be a CheckpointStore: an object with ${METHODS.join(', ')}`)
}

module.exports = {
  createMemoryCheckpointStore,
  createSqlitePersistence,
  createPostgresPersistence,
}

// Internal helpers: non-enumerable, so `index.js` (which spreads this module) does not
// export them.
Object.defineProperty(module.exports, 'toStoreHandle', { value: toStoreHandle, enumerable: false })
Object.defineProperty(module.exports, 'wrapHandle', { value: wrapHandle, enumerable: false })
Object.defineProperty(module.exports, 'registerSignal', { value: registerSignal, enumerable: false })
Object.defineProperty(module.exports, 'releaseSignal', { value: releaseSignal, enumerable: false })
