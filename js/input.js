'use strict'
// Reading caller input. Whatever the caller's own code throws while we read its input (a
// getter, a Proxy trap, a toJSON, a revoked Proxy) becomes one of our errors, a TypeError
// (`ERR_INVALID_ARG_TYPE`) with the caller's error as `cause`: never the caller's raw
// error. Errors the native side raised are translated as everywhere else.

const { messageOf, nativeText, translate, typeError, isOurs } = require('./errors.js')

/**
 * The TypeError that stands for `err`, thrown by the caller's code while `what` was read.
 * @param {unknown} err
 * @param {string} what
 */
function fromCaller(err, what) {
  const e = typeError(`${what} could not be read: ${messageOf(err)}`)
  e.cause = err
  return e
}

/**
 * `fn()`, which only reads caller input (no validation of ours inside).
 * @template T
 * @param {string} what
 * @param {() => T} fn
 * @returns {T}
 */
function readInput(what, fn) {
  try {
    return fn()
  } catch (err) {
    throw fromCaller(err, what)
  }
}

/**
 * Whether `err` was raised by the native addon (and so is translated, not wrapped).
 * @param {unknown} err
 */
function isNative(err) {
  return nativeText(err) !== undefined
}

/**
 * A native call that reads caller input: its own errors translated; anything else (the
 * caller's getter or trap throwing while the native side read it, or a value napi could
 * not convert) a TypeError with that error as `cause`.
 * @template {unknown[]} A
 * @template R
 * @param {string} what
 * @param {(...args: A) => R} fn
 * @param {A} args
 * @returns {R}
 */
function callReading(what, fn, ...args) {
  try {
    return fn(...args)
  } catch (err) {
    if (isNative(err)) throw translate(err)
    throw fromCaller(err, what)
  }
}

/**
 * JSON text of caller input. A value JSON cannot carry (a cycle, a BigInt) or a throwing
 * getter or toJSON is a TypeError with the original error as `cause`.
 * @param {string} what
 * @param {unknown} value
 * @returns {string}
 */
function jsonOf(what, value) {
  let text
  try {
    text = JSON.stringify(value)
  } catch (err) {
    const e = typeError(`${what} cannot be serialized: ${messageOf(err)}`)
    e.cause = err
    throw e
  }
  return text === undefined ? 'null' : text
}

/**
 * An entry point's body: every failure that is not already one of ours (the caller's
 * getter, Proxy trap or toJSON throwing while `fn` read its arguments) becomes the
 * TypeError standing for it, with the caller's error as `cause`.
 * @template T
 * @param {string} what
 * @param {() => T} fn
 * @returns {T}
 */
function entryPoint(what, fn) {
  try {
    return fn()
  } catch (err) {
    if (isOurs(err)) throw err
    if (isNative(err)) throw translate(err)
    throw fromCaller(err, what)
  }
}

/**
 * JSON text of `value`, exactly as `JSON.stringify` writes it, charging `maxChars` while
 * reading (issue 17): an array's length, a string's length and the text written so far
 * are counted before the work, so hostile input (a 10M-hole array, a huge string, a deep
 * nest) costs at most the cap before `tooLarge(message)` is thrown. Nesting deeper than
 * `maxDepth` is `tooLarge` too. Cycles and BigInts are `TypeError`s as in JSON.stringify.
 * @param {unknown} value
 * @param {number} maxChars
 * @param {number} maxDepth
 * @param {(message: string) => Error} tooLarge
 * @returns {string}
 */
function boundedJson(value, maxChars, maxDepth, tooLarge) {
  let used = 0
  /** @type {object[]} */
  const stack = []
  /** @param {number} n */
  const charge = (n) => {
    used += n
    if (used > maxChars) throw tooLarge(`the request is larger than ${maxChars} characters of JSON`)
  }
  /**
   * One value as JSON text, or undefined (omitted) for undefined, functions and symbols.
   * @param {unknown} holder
   * @param {string} key
   * @param {unknown} v
   * @returns {string | undefined}
   */
  function write(holder, key, v) {
    // Any object or BigInt may have a toJSON, as JSON.stringify asks.
    const withToJson = /** @type {{ toJSON?: unknown }} */ (v)
    if (v !== null && (typeof v === 'object' || typeof v === 'bigint') && typeof withToJson.toJSON === 'function') v = withToJson.toJSON(key)
    if (v !== null && typeof v === 'object') {
      if (v instanceof Number) v = Number(v)
      else if (v instanceof String) v = String(v)
      else if (v instanceof Boolean) v = v.valueOf()
    }
    switch (typeof v) {
      case 'string':
        charge(v.length + 2)
        return JSON.stringify(v)
      case 'number':
        charge(8)
        return Number.isFinite(v) ? String(v) : 'null'
      case 'boolean':
        charge(5)
        return v ? 'true' : 'false'
      case 'bigint':
        throw new TypeError('Do not know how to serialize a BigInt')
      case 'object':
        if (v === null) {
          charge(4)
          return 'null'
        }
        // Its own enumerable keys are read as JSON.stringify reads them.
        return writeObject(/** @type {Record<string, unknown>} */ (v))
      default:
        return undefined
    }
  }
  /**
   * @param {Record<string, unknown>} v
   * @returns {string}
   */
  function writeObject(v) {
    if (stack.includes(v)) throw new TypeError('Converting circular structure to JSON')
    if (stack.length >= maxDepth) throw tooLarge(`the request nests deeper than ${maxDepth} levels`)
    stack.push(v)
    let out
    if (Array.isArray(v)) {
      const n = v.length
      // Every element costs at least one character ("0" or a comma): charge them first.
      charge(2 + n)
      const parts = new Array(n)
      for (let i = 0; i < n; i++) parts[i] = write(v, String(i), v[i]) ?? 'null'
      out = `[${parts.join(',')}]`
    } else {
      const keys = Object.keys(v)
      charge(2 + keys.length)
      const parts = []
      for (const k of keys) {
        const text = write(v, k, v[k])
        if (text === undefined) continue
        charge(k.length + 3)
        parts.push(`${JSON.stringify(k)}:${text}`)
      }
      out = `{${parts.join(',')}}`
    }
    stack.pop()
    return out
  }
  return write({ '': value }, '', value) ?? 'null'
}

module.exports = { readInput, callReading, jsonOf, isNative, fromCaller, entryPoint, boundedJson }
