// Store rules beyond the conformance suite: memory caps and eviction, the host store
// bridge's error mapping, and the internal toStoreHandle.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import * as prism from '../index.mjs'
import { createMapStore } from './fixtures/map-store.mjs'

const { createMemoryCheckpointStore, ArtifactError, CheckpointConflictError } = prism
const require = createRequire(import.meta.url)
const { toStoreHandle, wrapHandle } = require('../js/store.js')

const A = { tenantId: 't1' }
const isInvalid = (e) => e instanceof ArtifactError && e.reason === 'invalid_input'

test('memory store: past maxRecords the oldest created checkpoint is evicted', async () => {
  const s = createMemoryCheckpointStore({ maxRecords: 3 })
  for (const key of ['a', 'b', 'c']) await s.saveCheckpoint({ namespace: 'n', key, ownership: A, value: key })
  await s.saveCheckpoint({ namespace: 'n', key: 'a', ownership: A, value: 'a2' }) // an update keeps its place
  await s.saveCheckpoint({ namespace: 'n', key: 'd', ownership: A, value: 'd' })
  const keys = (await s.listCheckpoints({ namespace: 'n' })).items.map((c) => c.key)
  assert.deepEqual(keys, ['b', 'c', 'd'])
})

test('memory store: maxValueBytes and maxPageSize are enforced', async () => {
  const s = createMemoryCheckpointStore({ maxValueBytes: 10, maxPageSize: 2 })
  await s.saveCheckpoint({ namespace: 'n', key: 'k', ownership: A, value: '12345678' })
  await assert.rejects(
    s.saveCheckpoint({ namespace: 'n', key: 'k', ownership: A, value: '123456789' }),
    (e) => e instanceof ArtifactError && e.reason === 'record_too_large',
  )
  assert.equal((await s.loadCheckpoint({ namespace: 'n', key: 'k', ownership: A })).value, '12345678')
  for (const key of ['a', 'b', 'c']) await s.saveCheckpoint({ namespace: 'p', key, ownership: A, value: 1 })
  const page = await s.listCheckpoints({ namespace: 'p', limit: 50 })
  assert.equal(page.items.length, 2, 'a page never exceeds maxPageSize')
  assert.equal(typeof page.nextCursor, 'string')
})

test('memory store options: RangeError outside 1..hard, ArtifactError for wrong types', () => {
  for (const options of [{ maxRecords: 0 }, { maxRecords: 1_000_001 }, { maxValueBytes: 0 }, { maxValueBytes: 16 * 1024 * 1024 + 1 },
    { maxPageSize: 0 }, { maxPageSize: 1001 }, { maxRecords: -1 }, { maxRecords: 1.5 }, { maxRecords: NaN }, { maxRecords: Infinity }]) {
    assert.throws(() => createMemoryCheckpointStore(options), RangeError, JSON.stringify(options))
  }
  for (const options of [null, 5, 'x', [], { maxRecords: '5' }, { maxRecords: null }, { unknown: 1 }, { maxRecords: 10n }]) {
    assert.throws(() => createMemoryCheckpointStore(options), isInvalid)
  }
  const s = createMemoryCheckpointStore({ maxRecords: 1_000_000, maxValueBytes: 16 * 1024 * 1024, maxPageSize: 1000 })
  assert.equal(typeof s.saveCheckpoint, 'function')
  assert.equal(Object.prototype.toString.call(s), '[object CheckpointStore]')
})

test('toStoreHandle: a native store gives its own handle; a non-store is refused', () => {
  const mem = createMemoryCheckpointStore()
  assert.equal(toStoreHandle(mem), toStoreHandle(mem))
  for (const bad of [null, undefined, 1, 'store', {}, { saveCheckpoint() {} }, [], () => 1]) {
    assert.throws(() => toStoreHandle(bad), isInvalid)
  }
  assert.ok(toStoreHandle(createMapStore()))
})

function hostWith(overrides) {
  const base = createMapStore()
  return wrapHandle(toStoreHandle({ ...base, ...overrides }))
}

const save = { namespace: 'n', key: 'k', ownership: A, value: 1 }
const load = { namespace: 'n', key: 'k', ownership: A }

test('host bridge: a rejection with the conflict code is a CheckpointConflictError (on load: not there)', async () => {
  const conflict = async () => {
    throw Object.assign(new Error('custom conflict'), { code: 'ERR_PRISM_CHECKPOINT_CONFLICT' })
  }
  const s = hostWith({ saveCheckpoint: conflict, loadCheckpoint: conflict, deleteCheckpoint: conflict })
  await assert.rejects(s.saveCheckpoint(save), (e) => e instanceof CheckpointConflictError && e.message === 'custom conflict')
  await assert.rejects(s.deleteCheckpoint(load), (e) => e instanceof CheckpointConflictError)
  assert.equal(await s.loadCheckpoint(load), undefined)
  const s2 = hostWith({ saveCheckpoint: async () => { throw new CheckpointConflictError() } })
  await assert.rejects(s2.saveCheckpoint(save), CheckpointConflictError)
})

test('host bridge: any other rejection, throw or malformed result is a typed error, never a crash or a hang', async () => {
  const internal = (re) => (e) => e instanceof Error && e.code === 'ERR_PRISM_INTERNAL' && re.test(e.message)
  const cases = [
    [async () => { throw Object.assign(new Error('disk on fire'), { code: 'EIO' }) }, /saveCheckpoint failed \(EIO\): disk on fire/],
    [() => { throw new TypeError('sync throw') }, /sync throw/],
    [async () => { throw 'a string' }, /a string/],
    [async () => { throw null }, /saveCheckpoint failed/],
    [async () => { throw Symbol('sym') }, /saveCheckpoint failed/],
    [async () => { throw new Proxy({}, { get() { throw new Error('trap') } }) }, /saveCheckpoint failed/],
    [async () => 5, /malformed checkpoint/],
    [async () => undefined, /malformed checkpoint/],
    [async () => ({ namespace: 'n' }), /malformed checkpoint/],
    [async () => ({ namespace: 'n', key: 'k', version: 10n, ownership: A, value: 1 }), /saveCheckpoint failed/],
    [async () => ({ namespace: 'n', key: 'other', version: 1, ownership: A, value: 1 }), /another namespace, key or owner/],
    [() => 'not a promise', /malformed checkpoint/],
    [async () => { const c = {}; c.c = c; return c }, /saveCheckpoint failed/],
  ]
  for (const [fn, re] of cases) {
    const s = hostWith({ saveCheckpoint: fn })
    await assert.rejects(s.saveCheckpoint(save), internal(re), String(re))
  }
  await assert.rejects(hostWith({ deleteCheckpoint: async () => 'yes' }).deleteCheckpoint(load), internal(/boolean/))
  await assert.rejects(hostWith({ listCheckpoints: async () => [] }).listCheckpoints({ namespace: 'n' }), internal(/malformed page/))
  await assert.rejects(hostWith({ loadCheckpoint: async () => 'x' }).loadCheckpoint(load), internal(/malformed checkpoint/))
})

test('host bridge: fails closed on another owner\'s checkpoint and validates before calling the host', async () => {
  const base = createMapStore()
  const s = wrapHandle(toStoreHandle({
    ...base,
    loadCheckpoint: async () => ({ namespace: 'n', key: 'k', version: 1, ownership: { tenantId: 'other' }, value: 'secret' }),
    listCheckpoints: async () => ({
      items: [
        { namespace: 'n', key: 'a', version: 1, ownership: A, value: 1 },
        { namespace: 'n', key: 'b', version: 1, ownership: { tenantId: 'other' }, value: 'secret' },
      ],
    }),
  }))
  assert.equal(await s.loadCheckpoint(load), undefined)
  const page = await s.listCheckpoints({ namespace: 'n', ownership: A })
  assert.deepEqual(page.items.map((c) => c.key), ['a'])
  base.calls.length = 0
  await assert.rejects(s.saveCheckpoint({ ...save, ownership: {} }), isInvalid)
  await assert.rejects(s.deleteCheckpoint({ ...load, key: '' }), isInvalid)
  assert.deepEqual(base.calls, [], 'the host is not called with bad input')
})

test('host bridge: the host receives plain inputs shaped like the CheckpointStore API', async () => {
  const seen = []
  const base = createMapStore()
  const s = wrapHandle(toStoreHandle({
    ...base,
    async saveCheckpoint(input) {
      seen.push(input)
      return base.saveCheckpoint(input)
    },
  }))
  await s.saveCheckpoint({ ...save, category: 'c', expectedVersion: 0 })
  await s.saveCheckpoint(save)
  assert.deepEqual(seen, [
    { namespace: 'n', key: 'k', ownership: A, category: 'c', value: 1, expectedVersion: 0 },
    { namespace: 'n', key: 'k', ownership: A, value: 1 },
  ])
})

test('a live host store does not keep the process alive', () => {
  const script = `
    const { createRequire } = require('node:module')
    const r = createRequire(${JSON.stringify(fileURLToPath(import.meta.url))})
    const { toStoreHandle, wrapHandle } = r('../js/store.js')
    globalThis.keep = wrapHandle(toStoreHandle({
      async saveCheckpoint() {}, async loadCheckpoint() {}, async listCheckpoints() {}, async deleteCheckpoint() { return true },
    }))
    globalThis.keep.deleteCheckpoint({ namespace: 'n', key: 'k', ownership: { userId: 'u' } }).then((v) => console.log('deleted', v))
  `
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 })
  assert.equal(r.signal, null, 'exited by itself')
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'deleted true')
})

test('a store method called without its store is a TypeError, not a crash', async () => {
  const { saveCheckpoint } = createMemoryCheckpointStore()
  await assert.rejects(saveCheckpoint({ namespace: 'n', key: 'k', ownership: A, value: 1 }), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_THIS')
  const s = createMemoryCheckpointStore()
  const bound = s.loadCheckpoint.bind(s)
  assert.equal(await bound({ namespace: 'n', key: 'k', ownership: A }), undefined)
})
