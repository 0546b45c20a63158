// Issue 17 point 7 (first half): the artifact service charges its input cap while
// reading the caller's value, so hostile input costs at most the cap; and the bounded
// reader writes exactly what JSON.stringify writes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { createArtifactService, createMemoryCheckpointStore, createSecretRedactor, ArtifactError } from '../index.mjs'

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
