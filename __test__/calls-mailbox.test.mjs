// While the event loop stays awake for a call (js/calls.js), a call that finishes leaves
// its outcome in the port's mailbox, taken on the loop's next turn, instead of going
// through the completion threadsafe function (src/napi/calls.rs, issue 13). Each call
// still settles exactly once with its own answer or error, and once the loop stops
// polling, outcomes come through the threadsafe function again.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { createHook } from 'node:async_hooks'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSqlitePersistence, CheckpointConflictError } from '../index.mjs'

const dir = mkdtempSync(join(tmpdir(), 'prism-mailbox-'))
after(() => rmSync(dir, { recursive: true, force: true }))

// Enabled before this process makes its first call, so the port's threadsafe function
// (made with the first call) is seen being created.
const kinds = new Map()
let tsfnDeliveries = 0
const hook = createHook({
  init(id, type) {
    kinds.set(id, type)
  },
  before(id) {
    if (kinds.get(id) === 'napi_rs_threadsafe_function') tsfnDeliveries++
  },
})
hook.enable()
after(() => hook.disable())

test('sequential SQLite calls are answered through the mailbox, each with its own answer or error', async () => {
  const p = createSqlitePersistence({ filename: join(dir, 'mailbox.sqlite') })
  try {
    const store = p.checkpoints
    for (let i = 0; i < 8; i++) await store.saveCheckpoint({ namespace: 'n', key: `k${i}`, version: 1, value: { i }, tenantId: 't' })
    const before = tsfnDeliveries
    const reads = 40
    for (let i = 0; i < reads; i++) {
      const key = `k${i % 8}`
      const cp = await store.loadCheckpoint({ namespace: 'n', key, tenantId: 't' })
      assert.equal(cp.key, key)
      assert.deepEqual(cp.value, { i: i % 8 })
      assert.equal(await store.loadCheckpoint({ namespace: 'n', key: `missing-${i}`, tenantId: 't' }), null)
    }
    const through = tsfnDeliveries - before
    assert.ok(through < reads, `${through} of ${2 * reads} sequential reads came through the threadsafe function`)
    // A failing call answered while polled is still its own typed error; the calls
    // around it are not disturbed.
    const saved = await store.loadCheckpoint({ namespace: 'n', key: 'k0', tenantId: 't' })
    await assert.rejects(store.saveCheckpoint({ namespace: 'n', key: 'k0', version: 2, expectedVersion: 7, value: {}, tenantId: 't' }), CheckpointConflictError)
    assert.deepEqual(await store.loadCheckpoint({ namespace: 'n', key: 'k0', tenantId: 't' }), saved)
    // Concurrent calls (the loop no longer polls) settle through the threadsafe function,
    // each with its own record; sequential ones afterwards are polled again.
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
