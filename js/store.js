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
const { invoke } = require('./calls.js')
const { ArtifactError, CheckpointConflictError, callNative, toJson, typeError, rangeError, describe, isObject } = require('./errors.js')
const { entryPoint } = require('./input.js')

const METHODS = ['saveCheckpoint', 'loadCheckpoint', 'listCheckpoints', 'deleteCheckpoint']
/** Native store method → its handle. */
const methodHandles = new WeakMap()

function invalidInput(message) {
  return new ArtifactError(message, 'invalid_input')
}

function isAbortSignal(s) {
  return (
    (typeof AbortSignal === 'function' && s instanceof AbortSignal) ||
    (isObject(s) && typeof s.aborted === 'boolean' && typeof s.throwIfAborted === 'function')
  )
}

/** JSON text of a store call's argument without its `signal` (checked, and honoured now). */
function inputJson(method, input) {
  const { rest, signal } = entryPoint(`${method}(input)`, () => readStoreInput(method, input))
  // The caller's own abort reason is what an aborted signal rejects with (not wrapped).
  signal?.throwIfAborted()
  return entryPoint(`${method}(input)`, () => toJson(rest, (m) => new CheckpointConflictError(`Checkpoint value must be JSON serializable: ${m}`)))
}

/** The input without its `signal` (checked), and the signal. */
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

/** A native store: a plain object of four closures over `handle`. */
function wrapHandle(handle) {
  // `method(input)` → its input's JSON text (a failure rejects). A call that finished on
  // this thread answers its text itself: no promise to wait on.
  const call = async (op, method, input) => {
    const json = inputJson(method, input)
    const text = invoke((port, token) => handle.start(port, op, json, token))
    return JSON.parse(typeof text === 'string' ? text : await text)
  }
  const store = {
    saveCheckpoint: (input) => call(SAVE, 'saveCheckpoint', input),
    loadCheckpoint: (input) => call(LOAD, 'loadCheckpoint', input),
    listCheckpoints: (input = {}) => call(LIST, 'listCheckpoints', input),
    deleteCheckpoint: (input) => call(DELETE, 'deleteCheckpoint', input),
  }
  for (const m of METHODS) methodHandles.set(store[m], handle)
  return store
}

function optionsJson(fnName, options, allowUndefined) {
  if (options === undefined && allowUndefined) return '{}'
  if (!isObject(options)) {
    throw invalidInput(`${fnName}: options must be an object`)
  }
  return toJson(options, (m) => invalidInput(`${fnName}: ${m}`))
}

/** A numeric limit that is not a positive integer is a RangeError (JSON would turn NaN into null). */
function checkLimits(fnName, options, names) {
  if (!isObject(options)) return
  for (const name of names) {
    const v = options[name]
    if (typeof v === 'number' && !(Number.isSafeInteger(v) && v >= 1)) {
      throw rangeError(`${fnName}: options.${name} must be a positive integer, got ${v}`)
    }
  }
}

/**
 * A bounded in-memory checkpoint store (tests, single-process hosts).
 * @param {{ maxRecords?: number, maxValueBytes?: number, maxPageSize?: number }} [options]
 */
function createMemoryCheckpointStore(options) {
  return entryPoint('createMemoryCheckpointStore(options)', () => {
    checkLimits('createMemoryCheckpointStore', options, ['maxRecords', 'maxValueBytes', 'maxPageSize'])
    const json = optionsJson('createMemoryCheckpointStore', options, true)
    return wrapHandle(callNative(native.createMemoryCheckpointStore, json))
  })
}

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
 * @param {{ filename: string, busyTimeoutMs?: number }} options
 */
function createSqlitePersistence(options) {
  return entryPoint('createSqlitePersistence(options)', () => {
    checkLimits('createSqlitePersistence', options, ['busyTimeoutMs'])
    return persistence(callNative(native.createSqlitePersistence, optionsJson('createSqlitePersistence', options, false)))
  })
}

/**
 * PostgreSQL persistence: a connection pool over one database that many Node instances
 * share. The schema is created or migrated on first use.
 * @param {{ connectionString: string, maxConnections?: number, schema?: string, connectTimeoutMs?: number }} options
 */
function createPostgresPersistence(options) {
  return entryPoint('createPostgresPersistence(options)', () => {
    checkLimits('createPostgresPersistence', options, ['maxConnections', 'connectTimeoutMs'])
    return persistence(callNative(native.createPostgresPersistence, optionsJson('createPostgresPersistence', options, false)))
  })
}

// The AbortSignals of artifact service calls in flight, by the id native code carries in
// a host store request's `signal`.
const signals = new Map()
let nextSignalId = 0

/** Register a caller's signal for host store calls; returns its id. */
function registerSignal(signal) {
  do nextSignalId = (nextSignalId + 1) % 0xffffffff
  while (signals.has(nextSignalId))
  signals.set(nextSignalId, signal)
  return nextSignalId
}

function releaseSignal(id) {
  signals.delete(id)
}

function safeString(get, fallback) {
  try {
    const v = get()
    return typeof v === 'string' ? v : fallback
  } catch {
    return fallback
  }
}

/** One host method as the native bridge calls it: JSON text in, an envelope out, never a rejection. */
function hostMethod(store, method) {
  const fn = store[method]
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
      const code = safeString(() => err.code, undefined)
      const message = safeString(() => err.message, undefined) ?? safeString(() => String(err), 'host store failed')
      return JSON.stringify({ error: { code, message: message.slice(0, 1024) } })
    }
  }
}

/**
 * Internal: the native handle for any store. A native store (or a copy whose four methods
 * are still its own) gives its handle; any other object with the four methods is bridged.
 */
function toStoreHandle(store) {
  if (isObject(store) || typeof store === 'function') {
    const h = methodHandles.get(store.saveCheckpoint)
    if (h !== undefined && METHODS.every((m) => methodHandles.get(store[m]) === h)) return h
    if (METHODS.every((m) => typeof store[m] === 'function')) {
      return callNative(
        native.createHostCheckpointStore,
        hostMethod(store, 'saveCheckpoint'),
        hostMethod(store, 'loadCheckpoint'),
        hostMethod(store, 'listCheckpoints'),
        hostMethod(store, 'deleteCheckpoint'),
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
for (const [name, value] of Object.entries({ toStoreHandle, wrapHandle, registerSignal, releaseSignal })) {
  Object.defineProperty(module.exports, name, { value, enumerable: false })
}
