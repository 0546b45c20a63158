// Issue 17 point 7: the artifact service and the native stores charge their input caps
// while reading the caller's value, so hostile input costs at most the cap; and the
// bounded reader writes exactly what JSON.stringify writes, refusing exactly what is over.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  createArtifactService,
  createMemoryCheckpointStore,
  createSecretRedactor,
  createSqlitePersistence,
  createWorkDraftService,
  createCodingPatchReviewManifest,
  assertCodingPatchAccepted,
  CodingPatchReviewError,
  ArtifactError,
  WorkDraftError,
  CheckpointConflictError,
} from '../index.mjs'

const require = createRequire(import.meta.url)
const { boundedJson } = require('../js/input.js')

const svc = createArtifactService(createMemoryCheckpointStore(), { redactor: createSecretRedactor([]), linkSecret: 'link-secret-0123456789abcdef' })
const ownership = { tenantId: 't' }
const tooLarge = (e) => e instanceof ArtifactError && e.reason === 'record_too_large'

test('a 10M-hole array is refused before any element is read', async () => {
  let reads = 0
  const holes = new Proxy(new Array(10_000_000), {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++
      return Reflect.get(target, key, receiver)
    },
  })
  await assert.rejects(svc.attach({ ownership, threadId: 't', uri: 'https://x/y', mime: 'text/plain', hash: 'h', citations: holes }), tooLarge)
  assert.equal(reads, 0)
})

test('a huge string and a deep nest are refused while reading', async () => {
  let reads = 0
  const after = { get x() { reads++; return 1 } }
  await assert.rejects(svc.attach({ ownership, threadId: 't', uri: 'https://x/y', mime: 'text/plain', hash: 'h', title: 'x'.repeat(3 * 1024 * 1024), z: after }), tooLarge)
  assert.equal(reads, 0, 'nothing after the oversized string was read')
  let deep = {}
  for (let i = 0; i < 100_000; i++) deep = { d: deep }
  await assert.rejects(svc.attach({ ownership, threadId: 't', uri: 'https://x/y', mime: 'text/plain', hash: 'h', preview: deep }), tooLarge)
})

test('the bounded reader writes what JSON.stringify writes', () => {
  const big = 1 << 30
  const fail = (m) => new Error(m)
  const date = new Date(0)
  const values = [
    null, true, false, 0, -0, 1.5, 1e21, -1e-7, NaN, Infinity, '', 'é\u2028"\\\n\u0000', '\ud800',
    [], [undefined, () => 1, Symbol('s'), null], {}, { a: undefined, b: () => 1, c: Symbol('s'), d: 1 },
    { nested: { arr: [1, { x: 'y' }], date }, toJSONed: { toJSON: (k) => `key:${k}` } },
    [new Number(3), new String('s'), new Boolean(false)], new Array(3), Object.create({ inherited: 1 }),
    { [Symbol('k')]: 1, k: 2 }, { 1: 'a', b: 'c', 0: 'z' },
  ]
  for (const [i, v] of values.entries()) assert.equal(boundedJson(v, big, 128, fail), JSON.stringify(v) ?? 'null', `value ${i}`)
  const cyc = {}
  cyc.self = cyc
  assert.throws(() => boundedJson(cyc, big, 128, fail), TypeError)
  assert.throws(() => boundedJson({ n: 1n }, big, 128, fail), TypeError)
  assert.throws(() => boundedJson('x'.repeat(10), 5, 128, fail), /larger than 5/)
})

test('the bounded reader refuses exactly the text over the cap (seeded random values)', () => {
  const fail = (m) => new RangeError(m)
  let seed = 7
  const rnd = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  }
  const gen = (d) => {
    switch (rnd(d > 4 ? 6 : 9)) {
      case 0: return null
      case 1: return rnd(2) === 0
      case 2: return rnd(100000) / (rnd(7) + 1)
      case 3: return 'x"\n\\é\u0001'.slice(0, rnd(7)).repeat(rnd(4))
      case 4: return undefined
      case 5: return () => 1
      case 6:
      case 7: return Array.from({ length: rnd(5) }, () => gen(d + 1))
      default: {
        const o = {}
        for (let i = rnd(5); i > 0; i--) o[`k${'é'.repeat(rnd(3))}${i}`] = gen(d + 1)
        return o
      }
    }
  }
  for (let i = 0; i < 3000; i++) {
    const v = gen(0)
    const text = JSON.stringify(v) ?? 'null'
    assert.equal(boundedJson(v, text.length, 128, fail), text, text)
    assert.throws(() => boundedJson(v, text.length - 1, 128, fail), RangeError, text)
  }
})

const WIRE_MAX = 16 * 1024 * 1024 + 128 * 1024
const outOfRange = (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE' && /larger than|deeper than/.test(e.message)

for (const [kind, open] of [
  ['memory', () => ({ store: createMemoryCheckpointStore({ maxValueBytes: 16 * 1024 * 1024 }), close: async () => {} })],
  [
    'SQLite',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'prism-caps-'))
      const p = createSqlitePersistence({ filename: join(dir, 'caps.db') })
      return { store: p.checkpoints, close: async () => { await p.close(); rmSync(dir, { recursive: true, force: true }) } }
    },
  ],
]) {
  test(`${kind} store: a hostile saveCheckpoint value is refused while it is read`, async () => {
    const { store, close } = open()
    try {
      let reads = 0
      const holes = new Proxy(new Array(10_000_000), {
        get(target, key, receiver) {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads++
          return Reflect.get(target, key, receiver)
        },
      })
      await assert.rejects(store.saveCheckpoint({ namespace: 'n', key: 'holes', value: holes }), outOfRange)
      assert.equal(reads, 0, 'no element was read')
      let after = 0
      const tail = { get x() { after++; return 1 } }
      await assert.rejects(store.saveCheckpoint({ namespace: 'n', key: 'str', value: { s: 'x'.repeat(WIRE_MAX), tail } }), outOfRange)
      assert.equal(after, 0, 'nothing after the oversized string was read')
      let deep = {}
      for (let i = 0; i < 100_000; i++) deep = { d: deep }
      await assert.rejects(store.saveCheckpoint({ namespace: 'n', key: 'deep', value: deep }), outOfRange)
      // Values JSON cannot carry stay the reference's conflict, with the cause kept.
      const cyc = {}
      cyc.self = cyc
      const e = await store.saveCheckpoint({ namespace: 'n', key: 'cyc', version: 1, value: cyc }).then(() => assert.fail('saved'), (x) => x)
      assert.ok(e instanceof CheckpointConflictError && e.cause instanceof TypeError, String(e))
      // Nothing was written, and an ordinary value still round-trips.
      assert.equal((await store.listCheckpoints({ namespace: 'n' })).items.length, 0)
      const value = { text: 'é'.repeat(1000), list: [1, null, 'x'] }
      await store.saveCheckpoint({ namespace: 'n', key: 'ok', version: 1, value })
      assert.deepEqual((await store.loadCheckpoint({ namespace: 'n', key: 'ok' })).value, value)
    } finally {
      await close()
    }
  })
}

test('work drafts: a hostile payload or request is refused while it is read', async () => {
  const drafts = createWorkDraftService(createMemoryCheckpointStore(), { redactor: createSecretRedactor([]) })
  const base = { ownership, threadId: 't', provider: 'mail', op: 'send' }
  const isTooLarge = (e) => e instanceof WorkDraftError && e.reason === 'payload_too_large'
  let reads = 0
  const holes = new Proxy(new Array(10_000_000), {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++
      return Reflect.get(target, key, receiver)
    },
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++
      return Reflect.getOwnPropertyDescriptor(target, key)
    },
  })
  await assert.rejects(drafts.create({ ...base, payload: { list: holes } }), isTooLarge)
  assert.equal(reads, 0, 'no element of the payload was read')
  await assert.rejects(drafts.create({ ...base, payload: { s: 'x'.repeat(5 * 1024 * 1024) } }), isTooLarge)
  // A member outside the payload is charged by the request's own bounded reader.
  await assert.rejects(drafts.create({ ...base, payload: { a: 1 }, idempotencyKey: holes }), isTooLarge)
  assert.equal(reads, 0, 'no element of the request was read')
  assert.equal((await drafts.list({ ownership, threadId: 't' })).items.length, 0)
})

test('coding review: a hostile manifest or accept input is refused while it is read', () => {
  let reads = 0
  const holes = new Proxy(new Array(10_000_000), {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++
      return Reflect.get(target, key, receiver)
    },
  })
  const isLimit = (e) => e instanceof CodingPatchReviewError && e.code === 'ERR_PRISM_REVIEW_LIMIT'
  assert.throws(() => createCodingPatchReviewManifest({ threadId: 't', changedPaths: holes }), isLimit)
  assert.throws(() => assertCodingPatchAccepted({ record: { revisions: holes } }), isLimit)
  assert.equal(reads, 0, 'no element was read')
})
