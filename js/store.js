'use strict'
// Checkpoint stores: the memory store, SQLite persistence, and the bridge that lets a
// host's own JavaScript store serve the native artifact service.
//
// Every native store is a `CheckpointStoreHandle` (Rust) wrapped in a `NativeCheckpointStore`
// whose four methods are exactly the `CheckpointStore` interface. The handle of a wrapper
// is kept in a WeakMap so that `toStoreHandle` (internal, not a package export) can give
// it back to native code; any other object with the four methods is bridged through
// thread-safe functions.

const native = require('./native.js')
const { ArtifactError, callNative, callNativeAsync, toJson } = require('./errors.js')

const handles = new WeakMap()
const METHODS = ['saveCheckpoint', 'loadCheckpoint', 'listCheckpoints', 'deleteCheckpoint']
const CONFLICT_CODE = 'ERR_PRISM_CHECKPOINT_CONFLICT'

function invalidInput(message) {
  return new ArtifactError(message, 'invalid_input')
}

function isPlainObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** JSON text of an operation's input object, or an `ArtifactError('invalid_input')`. */
function inputJson(method, input) {
  if (!isPlainObject(input)) {
    throw invalidInput(`${method}: input must be an object, got ${input === null ? 'null' : Array.isArray(input) ? 'array' : typeof input}`)
  }
  return toJson(input, (m) => invalidInput(`${method}: ${m}`))
}

function handleOf(self, method) {
  const handle = handles.get(self)
  if (handle === undefined) {
    const e = new TypeError(`${method} must be called on the checkpoint store (keep \`this\`, or bind it)`)
    e.code = 'ERR_INVALID_THIS'
    throw e
  }
  return handle
}

class NativeCheckpointStore {
  /** @param {object} handle a native CheckpointStoreHandle */
  constructor(handle) {
    handles.set(this, handle)
  }

  async saveCheckpoint(input) {
    const handle = handleOf(this, 'saveCheckpoint')
    const text = await callNativeAsync((j) => handle.saveCheckpoint(j), inputJson('saveCheckpoint', input))
    return JSON.parse(text)
  }

  async loadCheckpoint(input) {
    const handle = handleOf(this, 'loadCheckpoint')
    const text = await callNativeAsync((j) => handle.loadCheckpoint(j), inputJson('loadCheckpoint', input))
    const v = JSON.parse(text)
    return v === null ? undefined : v
  }

  async listCheckpoints(input) {
    const handle = handleOf(this, 'listCheckpoints')
    const text = await callNativeAsync((j) => handle.listCheckpoints(j), inputJson('listCheckpoints', input))
    return JSON.parse(text)
  }

  async deleteCheckpoint(input) {
    const handle = handleOf(this, 'deleteCheckpoint')
    return callNativeAsync((j) => handle.deleteCheckpoint(j), inputJson('deleteCheckpoint', input))
  }
}
Object.defineProperty(NativeCheckpointStore.prototype, Symbol.toStringTag, { value: 'CheckpointStore' })

function wrapHandle(handle) {
  return new NativeCheckpointStore(handle)
}

function optionsJson(fnName, options, allowUndefined) {
  if (options === undefined && allowUndefined) return '{}'
  if (!isPlainObject(options)) {
    throw invalidInput(`${fnName}: options must be an object`)
  }
  return toJson(options, (m) => invalidInput(`${fnName}: ${m}`))
}

/** A numeric limit that is not a positive integer is a RangeError (JSON would turn NaN into null). */
function checkLimits(fnName, options, names) {
  if (!isPlainObject(options)) return
  for (const name of names) {
    const v = options[name]
    if (typeof v === 'number' && !(Number.isSafeInteger(v) && v >= 1)) {
      const e = new RangeError(`${fnName}: options.${name} must be a positive integer, got ${v}`)
      e.code = 'ERR_OUT_OF_RANGE'
      throw e
    }
  }
}

/**
 * A bounded in-memory checkpoint store (tests, single-process hosts).
 * @param {{ maxRecords?: number, maxValueBytes?: number, maxPageSize?: number }} [options]
 */
function createMemoryCheckpointStore(options) {
  checkLimits('createMemoryCheckpointStore', options, ['maxRecords', 'maxValueBytes', 'maxPageSize'])
  const json = optionsJson('createMemoryCheckpointStore', options, true)
  return wrapHandle(callNative(native.createMemoryCheckpointStore, json))
}

/**
 * SQLite persistence: one WAL-mode database file (created when missing) holding checkpoints.
 * All database work runs off the JavaScript thread.
 * @param {{ filename: string, busyTimeoutMs?: number }} options
 * @returns {{ checkpoints: object, close(): Promise<void> }}
 */
function createSqlitePersistence(options) {
  checkLimits('createSqlitePersistence', options, ['busyTimeoutMs'])
  const json = optionsJson('createSqlitePersistence', options, false)
  const handle = callNative(native.createSqlitePersistence, json)
  const checkpoints = wrapHandle(handle.checkpoints())
  return Object.freeze({
    checkpoints,
    close: () => callNativeAsync(() => handle.close()).then(() => undefined),
  })
}

/**
 * PostgreSQL persistence: a connection pool over one database that many Node instances
 * share. The schema is created or migrated on first use.
 * @param {{ connectionString: string, maxConnections?: number, schema?: string, connectTimeoutMs?: number }} options
 * @returns {{ checkpoints: object, close(): Promise<void> }}
 */
function createPostgresPersistence(options) {
  checkLimits('createPostgresPersistence', options, ['maxConnections', 'connectTimeoutMs'])
  const json = optionsJson('createPostgresPersistence', options, false)
  const handle = callNative(native.createPostgresPersistence, json)
  const checkpoints = wrapHandle(handle.checkpoints())
  return Object.freeze({
    checkpoints,
    close: () => callNativeAsync(() => handle.close()).then(() => undefined),
  })
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
 * Internal: the native handle for any store. A native store gives its own handle; any
 * other object with the four `CheckpointStore` methods is bridged.
 */
function toStoreHandle(store) {
  if (typeof store === 'object' && store !== null) {
    const h = handles.get(store)
    if (h !== undefined) return h
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
  throw invalidInput(`store must be a CheckpointStore: an object with ${METHODS.join(', ')}`)
}

module.exports = {
  createMemoryCheckpointStore,
  createSqlitePersistence,
  createPostgresPersistence,
}

// Internal helpers: non-enumerable, so `index.js` (which spreads this module) does not
// export them.
for (const [name, value] of Object.entries({ toStoreHandle, wrapHandle, CONFLICT_CODE })) {
  Object.defineProperty(module.exports, name, { value, enumerable: false })
}
