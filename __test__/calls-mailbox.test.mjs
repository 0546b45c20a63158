// While the event loop stays awake for a call (js/calls.js), a call that finishes leaves
// its outcome in the port's mailbox, taken on the loop's next turn, instead of going
// through the completion threadsafe function (src/napi/calls.rs, issue 13). Each call
// still settles exactly once with its own answer or error, and while the loop does not
// poll, outcomes come through the threadsafe function.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { createSqlitePersistence, CheckpointConflictError } from '../index.mjs'

const require = createRequire(import.meta.url)
const native = require('../js/native.js')
const dir = mkdtempSync(join(tmpdir(), 'prism-mailbox-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** Resolves once `ready()` holds, checked on every turn of the loop (at most 20 s). */
async function until(ready, what) {
  const deadline = performance.now() + 20_000
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

test('outcomes go to the mailbox exactly while it is polled, else to done, each once with its own token', async () => {
  const startCall = native.callStarter()
  const poll = native.completionPoller()
  /** @type {Array<[number, boolean, string]>} */
  const viaDone = []
  const port = new native.CallPort((token, ok, text) => viaDone.push([token, ok, text]))
  const mailbox = port.mailbox()
  const handle = native.createSqlitePersistence(JSON.stringify({ filename: join(dir, 'native.sqlite') }))
  const target = handle.checkpoints().callTarget(port)
  const load = JSON.stringify({ namespace: 'n', key: 'k', tenantId: 't' })
  // A call is polled once on this thread before it waits: on a loaded machine a SQLite
  // thread may answer before that poll ends, and the call answers at once (its outcome
  // then goes nowhere else). Otherwise it answers later, exactly once.
  /** @type {Map<number, [boolean, string]>} */
  const atOnce = new Map()
  const begin = (op, input, token) => {
    try {
      const text = startCall(target, op, input, token)
      if (text !== null) atOnce.set(token, [true, text])
    } catch (err) {
      atOnce.set(token, [false, err.message])
    }
  }
  const later = (tokens) => tokens.filter((t) => !atOnce.has(t))

  // Not polled: a save (on the SQLite writer) answers through done.
  assert.equal(poll(mailbox, false), null)
  begin(0, JSON.stringify({ namespace: 'n', key: 'k', version: 1, value: { a: 1 }, tenantId: 't' }), 1)
  await until(() => viaDone.length === later([1]).length, 'the save')
  const [ok1, text1] = atOnce.get(1) ?? viaDone[0].slice(1)
  assert.equal(ok1, true)
  assert.equal(JSON.parse(text1).version, 1)

  // Polled: twenty reads (on SQLite's reader threads) answer through the mailbox only.
  const doneBefore = viaDone.length
  assert.equal(poll(mailbox, true), null)
  const reads = Array.from({ length: 20 }, (_, i) => i + 2)
  for (const token of reads) begin(1, load, token)
  const expected = later(reads)
  const taken = []
  await until(() => {
    assert.equal(viaDone.length, doneBefore, 'no outcome goes through done while polled')
    taken.push(...(poll(mailbox, true) ?? []))
    return taken.length >= 3 * expected.length
  }, 'the reads through the mailbox')
  assert.equal(taken.length, 3 * expected.length)
  assert.equal(viaDone.length, doneBefore, 'no outcome went through done while polled')
  const tokens = []
  for (let i = 0; i < taken.length; i += 3) {
    tokens.push(taken[i])
    assert.equal(taken[i + 1], true)
    assert.deepEqual(JSON.parse(taken[i + 2]).value, { a: 1 })
  }
  assert.deepEqual(
    tokens.sort((a, b) => a - b),
    expected,
  )
  for (const token of reads) if (atOnce.has(token)) assert.deepEqual(JSON.parse(atOnce.get(token)[1]).value, { a: 1 })
  // A failure is left there too, as its encoded error.
  begin(0, JSON.stringify({ namespace: 'n', key: 'k', version: 2, expectedVersion: 5, value: {}, tenantId: 't' }), 22)
  const failed = []
  await until(() => {
    failed.push(...(poll(mailbox, true) ?? []))
    return failed.length >= 3 * later([22]).length
  }, 'the refused save')
  const [ok22, text22] = atOnce.get(22) ?? failed.slice(1)
  assert.equal(ok22, false)
  assert.match(text22, /ERR_PRISM_CHECKPOINT_CONFLICT/)
  assert.equal(viaDone.length, doneBefore)

  // No longer polled: the last poll took everything; later outcomes come through done.
  assert.equal(poll(mailbox, false), null)
  begin(1, load, 23)
  await until(() => viaDone.length === doneBefore + later([23]).length, 'a read after polling stopped')
  if (!atOnce.has(23)) assert.equal(viaDone.at(-1)[0], 23)
  assert.equal(poll(mailbox, false), null, 'nothing was left in the mailbox')
  const closing = viaDone.length
  if (handle.close(port, 24) === null) {
    await until(() => viaDone.length === closing + 1, 'close')
    assert.deepEqual(viaDone.at(-1).slice(0, 2), [24, true])
  }
})

test('sequential SQLite calls through the service layer settle each with its own answer or error', async () => {
  const p = createSqlitePersistence({ filename: join(dir, 'mailbox.sqlite') })
  try {
    const store = p.checkpoints
    for (let i = 0; i < 8; i++) await store.saveCheckpoint({ namespace: 'n', key: `k${i}`, version: 1, value: { i }, tenantId: 't' })
    for (let i = 0; i < 40; i++) {
      const key = `k${i % 8}`
      const cp = await store.loadCheckpoint({ namespace: 'n', key, tenantId: 't' })
      assert.equal(cp.key, key)
      assert.deepEqual(cp.value, { i: i % 8 })
      assert.equal(await store.loadCheckpoint({ namespace: 'n', key: `missing-${i}`, tenantId: 't' }), null)
    }
    // A failing call among them is its own typed error; the calls around it are not disturbed.
    const saved = await store.loadCheckpoint({ namespace: 'n', key: 'k0', tenantId: 't' })
    await assert.rejects(store.saveCheckpoint({ namespace: 'n', key: 'k0', version: 2, expectedVersion: 7, value: {}, tenantId: 't' }), CheckpointConflictError)
    assert.deepEqual(await store.loadCheckpoint({ namespace: 'n', key: 'k0', tenantId: 't' }), saved)
    // Concurrent calls (the loop does not poll for them), then sequential ones again.
    const all = await Promise.all(Array.from({ length: 24 }, (_, i) => store.loadCheckpoint({ namespace: 'n', key: `k${i % 8}`, tenantId: 't' })))
    assert.deepEqual(
      all.map((cp) => cp.value.i),
      Array.from({ length: 24 }, (_, i) => i % 8),
    )
    for (let i = 0; i < 8; i++) assert.equal((await store.loadCheckpoint({ namespace: 'n', key: `k${i}`, tenantId: 't' })).value.i, i)
  } finally {
    await p.close()
  }
})
