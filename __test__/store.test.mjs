// Store rules beyond the conformance suite: memory caps and least-recently-saved
// eviction, native stores as plain objects of closures (spread, detached methods, the
// native fast path), the host store bridge's error mapping, and the internal toStoreHandle.
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

test('memory store: past maxRecords the least recently saved checkpoint is evicted', async () => {
  const s = createMemoryCheckpointStore({ maxRecords: 2 })
  await s.saveCheckpoint({ namespace: 'n', key: 'a', version: 1, value: null })
  await s.saveCheckpoint({ namespace: 'n', key: 'b', version: 1, value: null })
  // Saving "a" again makes it the most recently saved: "b" goes first.
  await s.saveCheckpoint({ namespace: 'n', key: 'a', version: 2, value: null })
  await s.saveCheckpoint({ namespace: 'n', key: 'c', version: 1, value: null })
  assert.equal((await s.loadCheckpoint({ namespace: 'n', key: 'a' })).version, 2)
  assert.equal(await s.loadCheckpoint({ namespace: 'n', key: 'b' }), null)
  assert.notEqual(await s.loadCheckpoint({ namespace: 'n', key: 'c' }), null)
  // A refused save is not a save: it does not protect "a" from eviction.
  await assert.rejects(s.saveCheckpoint({ namespace: 'n', key: 'a', version: 2, value: null }), CheckpointConflictError)
  await s.saveCheckpoint({ namespace: 'n', key: 'd', version: 1, value: null })
  assert.equal(await s.loadCheckpoint({ namespace: 'n', key: 'a' }), null)
})

test('memory store: maxValueBytes is a RangeError and maxPageSize bounds a page', async () => {
  const s = createMemoryCheckpointStore({ maxValueBytes: 10, maxPageSize: 2 })
  await s.saveCheckpoint({ namespace: 'n', key: 'k', ...A, version: 1, value: '12345678' })
  await assert.rejects(s.saveCheckpoint({ namespace: 'n', key: 'k', ...A, version: 2, value: '123456789' }), (e) => e instanceof RangeError && /maxValueBytes/.test(e.message))
  assert.equal((await s.loadCheckpoint({ namespace: 'n', key: 'k', ...A })).value, '12345678')
  for (const key of ['a', 'b', 'c']) await s.saveCheckpoint({ namespace: 'p', key, ...A, version: 1, value: 1 })
  const page = await s.listCheckpoints({ namespace: 'p', limit: 50 })
  assert.equal(page.items.length, 2, 'a page never exceeds maxPageSize')
  assert.equal(typeof page.nextCursor, 'string')
  assert.equal((await s.listCheckpoints({ namespace: 'p', ...A, limit: 2, cursor: page.nextCursor })).items.length, 1)
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
})

test('a native store is a plain object: methods work detached, and a spread copy with one method replaced is a store', async () => {
  const base = createMemoryCheckpointStore()
  assert.equal(Object.getPrototypeOf(base), Object.prototype)
  const { saveCheckpoint, loadCheckpoint } = base
  await saveCheckpoint({ namespace: 'n', key: 'k', ...A, version: 1, value: 'detached' })
  assert.equal((await loadCheckpoint({ namespace: 'n', key: 'k', ...A })).value, 'detached')
  const seen = []
  const wrapped = {
    ...base,
    async saveCheckpoint(input) {
      seen.push(input.version)
      return base.saveCheckpoint(input)
    },
  }
  const service = prism.createArtifactService(wrapped, { redactor: prism.createSecretRedactor([]), linkSecret: 'x'.repeat(16) })
  const rec = await service.attach({ ownership: A, threadId: 't', id: 'a', uri: 'https://x', mime: 'm', hash: 'h' })
  await service.approve({ ownership: A, threadId: 't', artifactId: 'a', version: 1, reviewer: 'user:r' })
  assert.deepEqual(seen, [1, 2], 'the replaced method is called, with the reference versions')
  assert.equal((await base.loadCheckpoint({ namespace: 'prism.artifact', key: 't:a', ...A })).value.id, rec.id, 'the other methods are the base store')
})

test('toStoreHandle: the native fast path only while all four methods are one store\'s own; a non-store is a TypeError', () => {
  const mem = createMemoryCheckpointStore()
  const h = toStoreHandle(mem)
  assert.equal(toStoreHandle(mem), h)
  assert.equal(toStoreHandle({ ...mem }), h, 'a spread copy of the four methods is still native')
  assert.notEqual(toStoreHandle({ ...mem, loadCheckpoint: async () => null }), h, 'a replaced method is bridged')
  const other = createMemoryCheckpointStore()
  assert.notEqual(toStoreHandle({ ...mem, loadCheckpoint: other.loadCheckpoint }), h, 'methods of two stores are bridged')
  mem.deleteCheckpoint = async () => false
  assert.notEqual(toStoreHandle(mem), h, 'a mutated store is bridged')
  for (const bad of [null, undefined, 1, 'store', {}, { saveCheckpoint() {} }, [], () => 1]) {
    assert.throws(() => toStoreHandle(bad), TypeError)
  }
  assert.ok(toStoreHandle(createMapStore()))
})

function hostWith(overrides) {
  const base = createMapStore()
  return wrapHandle(toStoreHandle({ ...base, ...overrides }))
}

const save = { namespace: 'n', key: 'k', ...A, version: 1, value: 1 }
const key = { namespace: 'n', key: 'k', ...A }

test('host bridge: a rejection with the conflict code is a CheckpointConflictError (on load: a miss)', async () => {
  const conflict = async () => {
    throw Object.assign(new Error('custom conflict'), { code: 'ERR_PRISM_CHECKPOINT_CONFLICT' })
  }
  const s = hostWith({ saveCheckpoint: conflict, loadCheckpoint: conflict, deleteCheckpoint: conflict })
  await assert.rejects(s.saveCheckpoint(save), (e) => e instanceof CheckpointConflictError && e.message === 'custom conflict')
  await assert.rejects(s.deleteCheckpoint(key), (e) => e instanceof CheckpointConflictError)
  assert.equal(await s.loadCheckpoint(key), null)
  const s2 = hostWith({ saveCheckpoint: async () => { throw new CheckpointConflictError('lost') } })
  await assert.rejects(s2.saveCheckpoint(save), CheckpointConflictError)
  // null and undefined are both a miss.
  assert.equal(await hostWith({ loadCheckpoint: async () => undefined }).loadCheckpoint(key), null)
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
    [async () => ({ namespace: 'n' }), /malformed checkpoint/],
    [async () => ({ namespace: 'n', key: 'k', version: 10n, ...A, value: 1 }), /saveCheckpoint failed/],
    [async () => ({ namespace: 'n', key: 'other', version: 1, ...A, value: 1 }), /another namespace, key or owner/],
    [async () => ({ namespace: 'n', key: 'k', version: 1, tenantId: 'x', value: 1 }), /another namespace, key or owner/],
    [() => 'not a promise', /malformed checkpoint/],
    [async () => { const c = {}; c.c = c; return c }, /saveCheckpoint failed/],
  ]
  for (const [fn, re] of cases) {
    await assert.rejects(hostWith({ saveCheckpoint: fn }).saveCheckpoint(save), internal(re), String(re))
  }
  const saved = await hostWith({ saveCheckpoint: async () => undefined }).saveCheckpoint(save)
  assert.deepEqual([saved.version, saved.value, saved.tenantId], [1, 1, 't1'], 'a store that resolves to nothing saved what it was given')
  await assert.rejects(hostWith({ deleteCheckpoint: async () => 'yes' }).deleteCheckpoint(key), internal(/boolean/))
  await assert.rejects(hostWith({ listCheckpoints: async () => [] }).listCheckpoints({ namespace: 'n' }), internal(/malformed page/))
  await assert.rejects(hostWith({ loadCheckpoint: async () => 'x' }).loadCheckpoint(key), internal(/malformed checkpoint/))
})

test('host bridge: fails closed on another owner\'s record and checks input before calling the host', async () => {
  const base = createMapStore()
  const s = wrapHandle(toStoreHandle({
    ...base,
    loadCheckpoint: async () => ({ namespace: 'n', key: 'k', version: 1, tenantId: 'other', value: 'secret' }),
    listCheckpoints: async () => ({
      items: [
        { namespace: 'n', key: 'a', version: 1, ...A, value: 1 },
        { namespace: 'n', key: 'b', version: 1, tenantId: 'other', value: 'secret' },
      ],
    }),
  }))
  assert.equal(await s.loadCheckpoint(key), null)
  assert.deepEqual((await s.listCheckpoints({ namespace: 'n', ...A })).items.map((c) => c.key), ['a'])
  base.calls.length = 0
  await assert.rejects(s.saveCheckpoint({ ...save, version: 0 }), CheckpointConflictError)
  await assert.rejects(s.deleteCheckpoint({ ...key, key: '' }), CheckpointConflictError)
  assert.deepEqual(base.calls, [], 'the host is not called with bad input')
})

test('host bridge: the host receives the reference\'s shapes, owner spread flat', async () => {
  const base = createMapStore()
  const s = wrapHandle(toStoreHandle(base))
  await s.saveCheckpoint({ ...save, category: 'c', expectedVersion: 0, metadata: { m: 1 } })
  await s.loadCheckpoint(key)
  await s.listCheckpoints({ namespace: 'n', keyPrefix: 'k', category: ['c', 'd'], ...A, limit: 5, order: 'desc' })
  await s.deleteCheckpoint(key)
  assert.deepEqual(base.requests.map((r) => r.input), [
    { namespace: 'n', key: 'k', tenantId: 't1', version: 1, expectedVersion: 0, value: 1, category: 'c', metadata: { m: 1 } },
    { namespace: 'n', key: 'k', tenantId: 't1' },
    { namespace: 'n', keyPrefix: 'k', category: ['c', 'd'], tenantId: 't1', limit: 5, order: 'desc' },
    { namespace: 'n', key: 'k', tenantId: 't1' },
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
    globalThis.keep.deleteCheckpoint({ namespace: 'n', key: 'k', userId: 'u' }).then((v) => console.log('deleted', v))
  `
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 })
  assert.equal(r.signal, null, 'exited by itself')
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'deleted true')
})

test('request text crosses into Rust exactly: non-ASCII, astral, escapes, short and long requests', async () => {
  // Requests are read in one pass up to a length (in UTF-16 units) and in two beyond it
  // (src/napi/text.rs): the widths below straddle that length, with 1-, 2-, 3- and 4-byte
  // UTF-8 characters at the end where a short buffer would cut them. (A lone surrogate
  // never arrives raw: JSON.stringify escapes it.)
  const s = createMemoryCheckpointStore()
  const tails = ['a', 'é', '€', '😀', '\u2028\u0000"\\']
  let version = 0
  for (let width = 16_000; width <= 16_800; width += 97) {
    for (const tail of tails) {
      for (const fill of ['a', '€']) {
        const value = { text: fill.repeat(width) + tail, tail }
        version++
        const saved = await s.saveCheckpoint({ namespace: 'n', key: 'k', ...A, version, value })
        assert.deepEqual(saved.value, value)
        assert.deepEqual((await s.loadCheckpoint({ namespace: 'n', key: 'k', ...A })).value, value)
      }
    }
  }
  // The key and owner cross the same way.
  const key = 'ключ-😀-' + '€'.repeat(100)
  await s.saveCheckpoint({ namespace: 'n', key, tenantId: 'арендатор', version: 1, value: 1 })
  assert.equal((await s.loadCheckpoint({ namespace: 'n', key, tenantId: 'арендатор' })).key, key)
})
