'use strict'
// The call path of native store, artifact and LanguageIntelligence calls (see
// src/napi/calls.rs): a call is started with a token; when it finished on the calling
// thread its result text comes back at once, otherwise it arrives later through the one
// completion callback of this environment's port, which settles the promise kept under
// the token.

const native = require('./native.js')
const { translate } = require('./errors.js')

/**
 * What a native call that left this thread waits with: its promise's functions and, for
 * an operation that keeps a record of how long it takes (`invoke`'s `took`), that record,
 * its index, when it started, whether the loop stayed awake for it (`timed`: only such a
 * call's time is recorded) and whether it measures its operation afresh (`probe`).
 * @typedef {{ resolve: (text: string) => void, reject: (err: unknown) => void, took?: Float64Array, op: number, started: number, timed: boolean, probe: boolean }} Outstanding
 */
/** token → every outstanding native call. */
/** @type {Map<number, Outstanding>} */
const calls = new Map()
/**
 * How many of them keep a record of their time (store and artifact calls; not a
 * LanguageIntelligence call, whose answer the loop does not stay awake for): the loop
 * stays awake only while exactly one is outstanding.
 */
let recorded = 0
/** @type {import('../binding.js').CallPort | undefined} */
let port
/** The port's mailbox (`pollCompletions`, below). @type {object} */
let mailbox
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
  if (call.took) recorded--
  if (call.took && call.timed) {
    const ms = performance.now() - call.started
    const at = SLOTS * call.op + TIME
    const before = call.took[at]
    call.took[at] = before === 0 ? ms : call.probe ? Math.min(before, ms) : 0.75 * before + 0.25 * ms
  }
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

// The slots of one operation in a `callTimes` record.
const TIME = 0
const ASLEEP = 1
const PROBE_LEFT = 2
const SLOTS = 3

/**
 * A record of how long the calls of `n` operations take, for `invoke`: per operation, how
 * long its calls that left this thread took lately with the event loop awake for them (ms,
 * a moving average, 0 before the first; after a probe, its fastest call), how many of its
 * calls since then left the loop asleep, and how many calls of a probe are left.
 * @param {number} n
 * @returns {Float64Array}
 */
function callTimes(n) {
  return new Float64Array(SLOTS * n)
}

/**
 * `start(port, token)` starts one native call → its result text, or a promise of it.
 * A synchronous native failure is thrown, translated. `took`, when given, is the
 * `callTimes` record of `op`'s operations; it decides whether the event loop stays awake
 * for the answer (below).
 * @param {(port: import('../binding.js').CallPort, token: number) => string | null | undefined} start
 * @param {Float64Array} [took]
 * @param {number} [op]
 * @returns {string | Promise<string>}
 */
function invoke(start, took, op = 0) {
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
  const started = performance.now()
  /** @type {Outstanding} */
  const call = { resolve: settledLater, reject: settledLater, took, op, started, timed: false, probe: false }
  const pending = /** @type {Promise<string>} */ (
    new Promise((resolve, reject) => {
      call.resolve = resolve
      call.reject = reject
    })
  )
  calls.set(token, call)
  if (took !== undefined && ++recorded === 1) {
    const at = SLOTS * op
    if (took[at + TIME] >= AWAKE_MS && took[at + PROBE_LEFT] === 0 && took[at + ASLEEP] + 1 >= PROBE_EVERY) {
      // A probe measures afresh: what was measured before the calls that slept is stale.
      took[at + TIME] = 0
      took[at + PROBE_LEFT] = PROBE_CALLS
    }
    if (took[at + PROBE_LEFT] > 0) {
      took[at + PROBE_LEFT]--
      call.probe = true
    }
    if (call.probe || took[at + TIME] < AWAKE_MS) {
      took[at + ASLEEP] = 0
      call.timed = true
      stayAwake(started)
    } else took[at + ASLEEP]++
  }
  return pending
}

/** The placeholder of a promise's functions until its executor ran (at once). */
function settledLater() {}

// A call that left this thread (a SQLite read on its lane, a PostgreSQL query) often
// answers within a couple of hundred µs. Meanwhile an idle event loop sleeps in the
// kernel, and waking it costs 25-30 µs on a virtual machine (issue 13: a sequential SQLite
// loadCheckpoint took a median 38-59 µs with the loop asleep, 27-34 µs awake). So while
// exactly one store or artifact call is outstanding (a caller awaiting its calls one after
// another; a LanguageIntelligence call waiting meanwhile does not count) and its
// operation lately answered within AWAKE_MS, the loop keeps turning through setImmediate
// for at most AWAKE_MS: it never blocks (timers and I/O run as usual) and stops as soon as
// the call answers. With more calls in flight, or for an operation that takes longer (a
// durable write waits for its fsync), it sleeps as usual and leaves the CPU to the
// threads (and the database) doing the work.
//
// How long an operation takes is measured only on calls the loop stayed awake for: with
// the loop asleep a call takes the wake-ups longer, and a PostgreSQL read that answers in
// ~0.12 ms awake took ~0.24 ms asleep, so one slow start left it asleep for good (issue 13:
// `get` 243 µs where `loadCheckpoint` of the same row took 101). An operation that leaves
// the loop asleep is measured again after PROBE_EVERY - 1 such calls: PROBE_CALLS calls
// in a row with the loop awake, of which the fastest counts (the first of them pays for
// waking the threads and the database that the calls before it let sleep).
const AWAKE_MS = 0.2
const PROBE_EVERY = 16
const PROBE_CALLS = 4
let awakeUntil = 0
let awake = false

/** @param {number} now */
function stayAwake(now) {
  awakeUntil = now + AWAKE_MS
  if (!awake) {
    awake = true
    // While it turns, calls that finish leave their outcomes in the port's mailbox, taken
    // on each turn, instead of waking the loop through the completion callback (issue 13:
    // a sequential SQLite read 9.5-10.9 → 8.0-8.3 µs; src/napi/calls.rs).
    deliver(pollCompletions(mailbox, true))
    setImmediate(turnAwake)
  }
}

function turnAwake() {
  deliver(pollCompletions(mailbox, true))
  if (recorded === 1 && performance.now() < awakeUntil) setImmediate(turnAwake)
  else {
    awake = false
    // No longer polled: what finished until now is taken here, later outcomes come
    // through the completion callback.
    deliver(pollCompletions(mailbox, false))
  }
}

/**
 * Settle the outcomes taken from the mailbox, as the completion callback would.
 * @param {Array<number | boolean | string> | null} taken
 */
function deliver(taken) {
  if (taken === null) return
  for (let i = 0; i < taken.length; i += 3) {
    done(/** @type {number} */ (taken[i]), /** @type {boolean} */ (taken[i + 1]), /** @type {string} */ (taken[i + 2]))
  }
}

/**
 * `startCall(target, op, input, token)` (src/napi/call_target.rs): a call without a
 * signal on a handle's `callTarget(…)`.
 */
const startCall = native.callStarter()

/**
 * `pollCompletions(mailbox, polling)` (src/napi/calls.rs): says whether the event loop
 * polls the port's mailbox, and takes what it holds (`[token, ok, text, …]` or `null`).
 */
const pollCompletions = native.completionPoller()

/** This environment's port (made on first use). */
function callPort() {
  if (port === undefined) {
    port = new native.CallPort(done)
    mailbox = port.mailbox()
  }
  return port
}

module.exports = { invoke, callTimes, callPort, startCall }
