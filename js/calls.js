'use strict'
// The call path of native store and artifact calls (see src/napi/calls.rs): a call is
// started with a token; when it finished on the calling thread its result text comes back
// at once, otherwise it arrives later through the one completion callback of this
// environment's port, which settles the promise kept under the token.

const native = require('./native.js')
const { translate } = require('./errors.js')

/** token → { resolve, reject } of every outstanding native call. */
/** @type {Map<number, { resolve: (text: string) => void, reject: (err: unknown) => void }>} */
const calls = new Map()
/** @type {import('../binding.js').CallPort | undefined} */
let port
let nextToken = 1

/**
 * It must not hold the port: the port holds it strongly.
 * @param {number} token
 * @param {boolean} ok
 * @param {string} text
 */
function done(token, ok, text) {
  const call = calls.get(token)
  if (call === undefined) return
  calls.delete(token)
  if (ok) call.resolve(text)
  else call.reject(translate(new Error(text)))
}

/**
 * `start(port, token)` starts one native call → its result text, or a promise of it.
 * A synchronous native failure is thrown, translated.
 * @param {(port: import('../binding.js').CallPort, token: number) => string | null | undefined} start
 * @returns {string | Promise<string>}
 */
function invoke(start) {
  port ??= new native.CallPort(done)
  const token = nextToken
  nextToken = token >= 0xfffffff0 ? 1 : token + 1
  let text
  try {
    text = start(port, token)
  } catch (err) {
    throw translate(err)
  }
  if (text !== null && text !== undefined) return text
  return new Promise((resolve, reject) => calls.set(token, { resolve, reject }))
}

/** This environment's port (made on first use). */
function callPort() {
  return (port ??= new native.CallPort(done))
}

module.exports = { invoke, callPort }
