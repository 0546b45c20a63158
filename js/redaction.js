'use strict'
// The secret redactor: `createSecretRedactor(secrets)` → `{ redact(value) }`.
//
// The rules of what a secret is and how it is replaced live in Rust
// (src/artifacts/redact.rs): this file walks JavaScript values, which only JavaScript can
// read, and sends every string it meets to the native redactor in one call.
//
// `redact(value)` returns a copy shaped as @arnilo/prism's redactor returns it: strings
// redacted; arrays copied; a `Map` becomes an object of its (redacted, stringified) keys
// and a `Set` an array; other objects become plain objects of their own enumerable string
// keys (an `Error` also keeps `name` and `message`); `Date`, `RegExp`, `ArrayBuffer` and
// typed arrays, booleans, `undefined`, functions and symbols are returned as they are; a
// reference back to an enclosing object is "[Circular]"; an object nested 32 levels deep is
// "[MaxDepth]"; keys that redact to the same text are kept as `key`, `key__2`, `key__3`, ….
// Beyond the reference: a number or BigInt whose text holds a secret becomes "[REDACTED]",
// so does a `RegExp` whose source holds one, and a getter that throws yields "[REDACTED]"
// instead of an exception. With no non-empty secret, `redact` returns its argument.
//
// Two passes, so each property is read once: `copy` builds the output with the strings as
// they are and lists every string; when the native call reports none changed (the common
// case) that copy is the result; otherwise `patch` replaces the changed strings and
// rebuilds the objects whose keys changed.

const native = require('./native.js')
const { callNative, typeError } = require('./errors.js')
const { readInput } = require('./input.js')

/** @typedef {import('../binding.js').SecretRedactorHandle} SecretRedactorHandle */
/** @typedef {Record<string, unknown>} Copy */

/**
 * redactor object → its native handle (only redactors made by createSecretRedactor).
 * @type {WeakMap<object, SecretRedactorHandle>}
 */
const nativeRedactors = new WeakMap()

/**
 * The redactor's constants, Rust's (src/artifacts/redact.rs).
 * @typedef {Readonly<{ maxDepth: number, marker: string, depthMarker: string, circularMarker: string }>} RedactionConstants
 */

/** @type {RedactionConstants | undefined} */
let constants
/** @returns {RedactionConstants} */
function consts() {
  return (constants ??= Object.freeze(JSON.parse(callNative(native.redactionConstants))))
}

/**
 * @param {Copy} target
 * @param {string} key
 * @param {unknown} value
 */
function define(target, key, value) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/**
 * Put `value` at `key`, or at the first free `key__2`, `key__3`, … (never overwrite).
 * @param {Copy} target
 * @param {string} key
 * @param {unknown} value
 */
function assignKey(target, key, value) {
  if (!Object.hasOwn(target, key)) return define(target, key, value)
  let n = 2
  while (Object.hasOwn(target, `${key}__${n}`)) n++
  define(target, `${key}__${n}`, value)
}

/**
 * @param {unknown} v
 * @returns {v is Copy}
 */
function isPlainCopy(v) {
  return v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype
}

class Walk {
  /** @param {boolean} numbers */
  constructor(numbers) {
    this.c = consts()
    this.numbers = numbers
    /** @type {string[]} */
    this.strs = []
    /** @type {Set<object>} */
    this.active = new Set()
    // Objects made from a Map: their keys before stringifying collisions were resolved.
    /** @type {Map<Copy, [string, unknown][]>} */
    this.mapEntries = new Map()
  }

  /** @param {string} s */
  text(s) {
    this.strs.push(s)
    return s
  }

  /**
   * @param {unknown} value
   * @param {number} depth
   * @returns {unknown}
   */
  copy(value, depth) {
    switch (typeof value) {
      case 'string':
        return this.text(value)
      case 'number':
      case 'bigint':
        if (this.numbers) this.strs.push(String(value))
        return value
      case 'object':
        if (value === null) return null
        break
      default:
        return value
    }
    if (depth >= this.c.maxDepth) return this.text(this.c.depthMarker)
    if (value instanceof Date || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value
    if (value instanceof RegExp) {
      this.strs.push(String(value))
      return value
    }
    if (this.active.has(value)) return this.text(this.c.circularMarker)
    this.active.add(value)
    try {
      if (Array.isArray(value)) return this.array(value, depth)
      if (value instanceof Map) return this.map(value, depth)
      if (value instanceof Set) return this.array(Array.from(value), depth)
      // Any other object: its own enumerable string keys are read.
      return this.object(/** @type {Copy} */ (value), depth)
    } catch {
      return this.c.marker
    } finally {
      this.active.delete(value)
    }
  }

  /**
   * @param {unknown[]} value
   * @param {number} depth
   */
  array(value, depth) {
    const n = value.length
    const out = new Array(n)
    for (let i = 0; i < n; i++) {
      if (!(i in value)) continue
      let v
      try {
        v = value[i]
      } catch {
        out[i] = this.c.marker
        continue
      }
      out[i] = this.copy(v, depth + 1)
    }
    return out
  }

  /**
   * @param {Map<unknown, unknown>} value
   * @param {number} depth
   */
  map(value, depth) {
    /** @type {Copy} */
    const out = {}
    /** @type {[string, unknown][]} */
    const entries = []
    for (const [k, v] of value) {
      let key
      try {
        key = typeof k === 'string' ? k : String(k)
      } catch {
        key = this.c.marker
      }
      const child = this.copy(v, depth + 1)
      entries.push([this.text(key), child])
      assignKey(out, key, child)
    }
    this.mapEntries.set(out, entries)
    return out
  }

  /**
   * @param {Copy} value
   * @param {number} depth
   */
  object(value, depth) {
    /** @type {Copy} */
    const out = {}
    const isError = value instanceof Error
    if (isError) {
      this.member(out, value, 'name', depth)
      this.member(out, value, 'message', depth)
    }
    for (const k of Object.keys(value)) {
      if (isError && (k === 'name' || k === 'message')) continue
      this.member(out, value, k, depth)
    }
    return out
  }

  /**
   * `value[k]` copied into `out` (a getter that throws gives the marker).
   * @param {Copy} out
   * @param {Copy} value
   * @param {string} k
   * @param {number} depth
   */
  member(out, value, k, depth) {
    let v
    try {
      v = this.copy(value[k], depth + 1)
    } catch {
      v = this.c.marker
    }
    assignKey(out, this.text(k), v)
  }

  /**
   * The copy with every changed string (and number text) replaced.
   * @param {unknown} node
   * @param {Map<string, string>} changed
   * @returns {unknown}
   */
  patch(node, changed) {
    switch (typeof node) {
      case 'string':
        return changed.get(node) ?? node
      case 'number':
      case 'bigint':
        return this.numbers && changed.has(String(node)) ? this.c.marker : node
      case 'object':
        break
      default:
        return node
    }
    if (node instanceof RegExp) {
      const text = String(node)
      return changed.has(text) ? changed.get(text) : node
    }
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        if (i in node) node[i] = this.patch(node[i], changed)
      }
      return node
    }
    if (!isPlainCopy(node)) return node
    const entries = this.mapEntries.get(node) ?? Object.keys(node).map((k) => /** @type {const} */ ([k, node[k]]))
    /** @type {Copy} */
    const out = {}
    for (const [k, v] of entries) assignKey(out, changed.get(k) ?? k, this.patch(v, changed))
    return out
  }
}

/**
 * @param {SecretRedactorHandle} handle
 * @param {unknown} value
 */
function redactWith(handle, value) {
  const walk = new Walk(handle.matchesNumbers)
  const copy = walk.copy(value, 0)
  if (walk.strs.length === 0) return copy
  const out = callNative(() => handle.redactStrings(walk.strs))
  if (out === null || out === undefined) return copy
  /** @type {Map<string, string>} */
  const changed = new Map()
  for (let i = 0; i < out.length; i++) {
    const text = out[i]
    if (text !== null && text !== undefined) changed.set(walk.strs[i], text)
  }
  return walk.patch(copy, changed)
}

/**
 * A redactor over `secrets` (`undefined`, `null` and empty entries are ignored): every
 * occurrence of each secret in strings, object and Map keys, and number texts becomes
 * "[REDACTED]". A service given this redactor applies it natively.
 * @param {readonly (string | undefined | null)[]} secrets
 * @returns {import('../types/redaction').SecretRedactor}
 */
function createSecretRedactor(secrets) {
  // Read once (a throwing getter or Proxy trap is a TypeError with it as `cause`).
  const given = readInput('createSecretRedactor(secrets)', () => (Array.isArray(secrets) ? Array.from(secrets) : null))
  if (given === null) throw typeError('createSecretRedactor(secrets): secrets must be an array of strings')
  /** @type {string[]} */
  const list = []
  for (let i = 0; i < given.length; i++) {
    const s = given[i]
    if (s === undefined || s === null) continue
    if (typeof s !== 'string') throw typeError(`createSecretRedactor(secrets): secrets[${i}] must be a string`)
    list.push(s)
  }
  const handle = callNative(() => new native.SecretRedactorHandle(JSON.stringify(list)))
  const empty = handle.size === 0
  const redactor = Object.freeze({
    /**
     * The same shape as `value` (module comment); typed as the interface promises.
     * @template T
     * @param {T} value
     * @returns {T}
     */
    redact(value) {
      return empty ? value : /** @type {T} */ (redactWith(handle, value))
    },
  })
  nativeRedactors.set(redactor, handle)
  return redactor
}

module.exports = { createSecretRedactor }

// For js/artifacts.js (the service's native fast path); not part of the package API.
Object.defineProperty(module.exports, 'nativeRedactors', { enumerable: false, value: nativeRedactors })
