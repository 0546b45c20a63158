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
 * getter or toJSON is a TypeError with the original error as `cause`. With `bound`
 * (`{ maxChars, maxDepth?, tooLarge }`) the text is charged while it is written
 * (`boundedJson`), and `tooLarge(message)` is what an oversized value throws.
 * @param {string} what
 * @param {unknown} value
 * @param {{ maxChars: number, maxDepth?: number, tooLarge: (message: string) => Error }} [bound]
 * @returns {string}
 */
function jsonOf(what, value, bound) {
  let text
  try {
    text = bound ? boundedJson(value, bound.maxChars, bound.maxDepth ?? Infinity, bound.tooLarge) : JSON.stringify(value)
  } catch (err) {
    if (isOurs(err)) throw err
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
 * reading (issue 17). A first walk charges a lower bound of the text each value will
 * write (an array's length before its elements, a string's length, every key) and stops
 * at the cap, so hostile input (a 10M-hole array, a huge string, a deep nest) costs at
 * most the cap before `tooLarge(message)` is thrown; only then does the engine's own
 * `JSON.stringify` write the text, and its exact length is checked. Nesting deeper than
 * `maxDepth` is `tooLarge` too. Cycles and BigInts are `TypeError`s as in JSON.stringify.
 * @param {unknown} value
 * @param {number} maxChars
 * @param {number} maxDepth
 * @param {(message: string) => Error} tooLarge
 * @returns {string}
 */
function boundedJson(value, maxChars, maxDepth, tooLarge) {
  const over = () => tooLarge(`the request is larger than ${maxChars} characters of JSON`)
  /** @type {object[]} */
  const stack = []
  let used = 0
  /**
   * Charges the least text `v` writes, less `prepaid` characters already charged for it;
   * false when JSON leaves it out (undefined, a function, a symbol).
   * @param {string | number} key
   * @param {unknown} v
   * @param {number} prepaid
   * @returns {boolean}
   */
  function walk(key, v, prepaid) {
    // Any object or BigInt may have a toJSON, as JSON.stringify asks.
    const withToJson = /** @type {{ toJSON?: unknown }} */ (v)
    if (v !== null && (typeof v === 'object' || typeof v === 'bigint') && typeof withToJson.toJSON === 'function') {
      v = /** @type {(key: string) => unknown} */ (withToJson.toJSON).call(v, String(key))
    }
    used -= prepaid
    switch (typeof v) {
      case 'string':
        used += v.length + 2
        break
      case 'object':
        if (v === null) used += 4
        else if (v instanceof String) used += v.length + 2
        else if (v instanceof Number || v instanceof Boolean) used += 1
        else walkObject(v)
        break
      case 'undefined':
      case 'function':
      case 'symbol':
        used += prepaid
        return false
      default:
        // A number, a boolean, or a BigInt (JSON.stringify refuses it below).
        used += 1
    }
    if (used > maxChars) throw over()
    return true
  }
  /** @param {object} v */
  function walkObject(v) {
    if (stack.includes(v)) throw new TypeError('Converting circular structure to JSON')
    if (stack.length >= maxDepth) throw tooLarge(`the request nests deeper than ${maxDepth} levels`)
    stack.push(v)
    if (Array.isArray(v)) {
      const n = v.length
      // Brackets, n - 1 commas and at least one character per element, before any is read.
      used += 2 * n + 1
      if (used > maxChars) throw over()
      for (let i = 0; i < n; i++) walk(i, v[i], 1)
    } else {
      // Braces, and per member its quoted key, colon and comma (one comma too many).
      used += 1
      const members = /** @type {Record<string, unknown>} */ (v)
      const keys = Object.keys(members)
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]
        if (walk(k, members[k], 0)) used += k.length + 4
      }
    }
    stack.pop()
  }
  walk('', value, 0)
  const text = JSON.stringify(value) ?? 'null'
  if (text.length > maxChars) throw over()
  return text
}

module.exports = { readInput, callReading, jsonOf, isNative, fromCaller, entryPoint, boundedJson }
