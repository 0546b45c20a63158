'use strict'
// Reading caller input. Whatever the caller's own code throws while we read its input (a
// getter, a Proxy trap, a toJSON, a revoked Proxy) becomes one of our errors, a TypeError
// (`ERR_INVALID_ARG_TYPE`) with the caller's error as `cause`: never the caller's raw
// error. Errors the native side raised are translated as everywhere else.

const { ERROR_MARKER, translate, typeError, isOurs } = require('./errors.js')

function messageOf(err) {
  return err && typeof err.message === 'string' ? err.message : String(err)
}

/** The TypeError that stands for `err`, thrown by the caller's code while `what` was read. */
function fromCaller(err, what) {
  const e = typeError(`${what} could not be read: ${messageOf(err)}`)
  e.cause = err
  return e
}

/** `fn()`, which only reads caller input (no validation of ours inside). */
function readInput(what, fn) {
  try {
    return fn()
  } catch (err) {
    throw fromCaller(err, what)
  }
}

/** Whether `err` was raised by the native addon (and so is translated, not wrapped). */
function isNative(err) {
  return !!err && typeof err.message === 'string' && err.message.startsWith(ERROR_MARKER)
}

/**
 * A native call that reads caller input: its own errors translated; anything else (the
 * caller's getter or trap throwing while the native side read it, or a value napi could
 * not convert) a TypeError with that error as `cause`.
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

module.exports = { readInput, callReading, jsonOf, isNative, fromCaller, entryPoint }
