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

// Settling a call runs its continuation at once (Node drains the microtasks after each
// completion), and Node delivers every completion queued, up to 1000, in one turn of the
// event loop. Under many concurrent calls that one turn ran for milliseconds (issue 13:
// p99 event-loop delay 8-38 ms), so timers and I/O waited. Here a turn settles calls for
// at most TURN_BUDGET_MS; the completions after that wait, in order, for later turns
// (setImmediate), each again within the budget.
const TURN_BUDGET_MS = 0.2
/** When the current turn began settling calls; -1: it has not. */
let turnStarted = -1
/** Completions waiting for a later turn: token, ok, text, token, ok, text, … */
/** @type {Array<number | boolean | string>} */
let waiting = []
let nextTurnScheduled = false

/** @param {number} token @param {boolean} ok @param {string} text */
function settle(token, ok, text) {
  const call = calls.get(token)
  if (call === undefined) return
  calls.delete(token)
  if (ok) call.resolve(text)
  else call.reject(translate(new Error(text)))
}

function scheduleNextTurn() {
  if (nextTurnScheduled) return
  nextTurnScheduled = true
  setImmediate(nextTurn)
}

/** Settle waiting completions until the budget is spent; the rest wait for the next turn. */
async function nextTurn() {
  nextTurnScheduled = false
  turnStarted = performance.now()
  const batch = waiting
  waiting = []
  let i = 0
  while (i < batch.length && performance.now() - turnStarted <= TURN_BUDGET_MS) {
    settle(/** @type {number} */ (batch[i]), /** @type {boolean} */ (batch[i + 1]), /** @type {string} */ (batch[i + 2]))
    i += 3
    // Let the settled call's continuation run before the budget is checked again.
    await undefined
  }
  if (i < batch.length) {
    waiting = batch.slice(i).concat(waiting)
    scheduleNextTurn()
  } else if (waiting.length > 0) scheduleNextTurn()
  else turnStarted = -1
}

/**
 * It must not hold the port: the port holds it strongly.
 * @param {number} token
 * @param {boolean} ok
 * @param {string} text
 */
function done(token, ok, text) {
  if (waiting.length === 0) {
    const now = performance.now()
    if (turnStarted < 0) {
      // The first completion of this turn: the budget starts now and ends with the turn.
      turnStarted = now
      scheduleNextTurn()
    }
    if (now - turnStarted <= TURN_BUDGET_MS) return settle(token, ok, text)
  }
  waiting.push(token, ok, text)
  scheduleNextTurn()
}

/**
 * `start(port, token)` starts one native call → its result text, or a promise of it.
 * A synchronous native failure is thrown, translated.
 * @param {(port: import('../binding.js').CallPort, token: number) => string | null | undefined} start
 * @returns {string | Promise<string>}
 */
function invoke(start) {
  const port = callPort()
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

/**
 * `startCall(target, op, input, token)` (src/napi/call_target.rs): a call without a
 * signal on a handle's `callTarget(…)`.
 */
const startCall = native.callStarter()

/** This environment's port (made on first use). */
function callPort() {
  return (port ??= new native.CallPort(done))
}

module.exports = { invoke, callPort, startCall }
