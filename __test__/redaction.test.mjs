// createSecretRedactor: the output shapes of @arnilo/prism's redactor (cycles, Map, Set,
// depth, colliding keys, values kept as they are), plus what we add: number texts, never
// throwing, and secrets that could never be removed are refused.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { createSecretRedactor, createArtifactService, createMemoryCheckpointStore } from '../index.mjs'

const require = createRequire(import.meta.url)

test('strings, object keys and every occurrence are redacted; the input is not changed', () => {
  const r = createSecretRedactor(['abc123', 'sk-live'])
  assert.equal(r.redact('x abc123 y abc123'), 'x [REDACTED] y [REDACTED]')
  const input = { abc123: 'abc123abc123', nested: { list: [null, true, 'Bearer sk-live'] } }
  const before = structuredClone(input)
  assert.deepEqual(r.redact(input), { '[REDACTED]': '[REDACTED][REDACTED]', nested: { list: [null, true, 'Bearer [REDACTED]'] } })
  assert.deepEqual(input, before)
  assert.notEqual(r.redact(input).nested, input.nested, 'a copy, not the input')
})

test('cycles become "[Circular]"; shared references (diamonds) are copied, not cycles', () => {
  const r = createSecretRedactor(['sk-cycle'])
  const self = { token: 'sk-cycle' }
  self.self = self
  self.list = [self, { up: self }]
  assert.deepEqual(r.redact(self), { token: '[REDACTED]', self: '[Circular]', list: ['[Circular]', { up: '[Circular]' }] })
  const a = { secret: 'sk-cycle' }
  const b = { a }
  a.b = b
  assert.deepEqual(r.redact(a), { secret: '[REDACTED]', b: { a: '[Circular]' } })
  const map = new Map()
  map.set('me', map)
  const set = new Set()
  set.add(set)
  assert.deepEqual(r.redact({ map, set }), { map: { me: '[Circular]' }, set: ['[Circular]'] })
  const shared = { text: 'repair sk-cycle' }
  const out = r.redact({ history: [shared], input: [shared] })
  assert.deepEqual(out, { history: [{ text: 'repair [REDACTED]' }], input: [{ text: 'repair [REDACTED]' }] })
})

test('Map contents become an object and Set contents an array, redacted, never dropped', () => {
  const r = createSecretRedactor(['sk-collection'])
  const out = r.redact({
    map: new Map([
      ['key', 'Bearer sk-collection'],
      ['sk-collection', { deep: ['sk-collection'] }],
      [7, 'seven'],
      [true, 'yes'],
    ]),
    set: new Set(['sk-collection', 'plain', 3]),
  })
  assert.deepEqual(out, {
    map: { key: 'Bearer [REDACTED]', '[REDACTED]': { deep: ['[REDACTED]'] }, 7: 'seven', true: 'yes' },
    set: ['[REDACTED]', 'plain', 3],
  })
  // Keys that stringify alike are kept too (1 and "1").
  assert.deepEqual(r.redact(new Map([[1, 'number'], ['1', 'string']])), { 1: 'number', '1__2': 'string' })
  // A Map with nothing to redact still comes back as its object.
  assert.deepEqual(r.redact(new Map([['a', 1]])), { a: 1 })
})

test('keys that redact to the same text are all kept, with __2, __3 suffixes in order', () => {
  const r = createSecretRedactor(['secret-a', 'secret-b'])
  const obj = r.redact({ '[REDACTED]': 0, 'secret-a': 1, 'secret-b': 2 })
  assert.deepEqual(obj, { '[REDACTED]': 0, '[REDACTED]__2': 1, '[REDACTED]__3': 2 })
  assert.deepEqual(Object.keys(obj), ['[REDACTED]', '[REDACTED]__2', '[REDACTED]__3'])
  const fromMap = r.redact(
    new Map([
      ['[REDACTED]', 'zero'],
      ['secret-a', 'one'],
      ['secret-b', 'two'],
    ]),
  )
  assert.deepEqual(fromMap, { '[REDACTED]': 'zero', '[REDACTED]__2': 'one', '[REDACTED]__3': 'two' })
  // A later key that equals an earlier suffix is kept as well.
  assert.deepEqual(r.redact({ 'secret-a': 1, '[REDACTED]': 2, '[REDACTED]__2': 3 }), {
    '[REDACTED]': 1,
    '[REDACTED]__2': 2,
    '[REDACTED]__2__2': 3,
  })
  assert.equal(JSON.stringify(r.redact({ x: { 'a secret-a': 1, 'a secret-b': 2 } })), '{"x":{"a [REDACTED]":1,"a [REDACTED]__2":2}}')
})

test('objects nested 32 levels deep become "[MaxDepth]"; shallower ones are kept', () => {
  const r = createSecretRedactor(['sk-deep'])
  const nest = (levels) => {
    let v = { leaf: 'sk-deep' }
    for (let i = 0; i < levels; i++) v = { next: v }
    return v
  }
  // 31 wrappers: the leaf object sits at depth 31 and is kept.
  const kept = JSON.stringify(r.redact(nest(31)))
  assert.ok(kept.includes('"leaf":"[REDACTED]"') && !kept.includes('[MaxDepth]'))
  const cut = JSON.stringify(r.redact(nest(32)))
  assert.ok(cut.endsWith('{"next":"[MaxDepth]"}' + '}'.repeat(31)) && !cut.includes('leaf'), cut)
  const hostile = JSON.stringify(r.redact(nest(100000 / 100)))
  assert.ok(hostile.includes('[MaxDepth]'))
})

test('Date, RegExp, typed arrays, ArrayBuffer, functions, symbols and undefined come back as they are', () => {
  const r = createSecretRedactor(['sk-keep'])
  const date = new Date(0)
  const re = /pattern/
  const bytes = new Uint8Array([1, 2, 3])
  const buf = new ArrayBuffer(4)
  const fn = () => 'sk-keep'
  const sym = Symbol('sk-keep')
  const out = r.redact({ date, re, bytes, buf, fn, sym, nothing: undefined, yes: true, n: 1.5 })
  assert.equal(out.date, date)
  assert.equal(out.re, re)
  assert.equal(out.bytes, bytes)
  assert.equal(out.buf, buf)
  assert.equal(out.fn, fn)
  assert.equal(out.sym, sym)
  assert.ok('nothing' in out && out.nothing === undefined)
  assert.equal(out.yes, true)
  assert.equal(out.n, 1.5)
  assert.equal(r.redact(undefined), undefined)
  assert.equal(r.redact(12n), 12n)
  assert.equal(r.redact(null), null)
  // Beyond the reference: a RegExp whose source holds a secret does not carry it out.
  assert.equal(r.redact({ re: /token=sk-keep/g }).re, '/token=[REDACTED]/g')
})

test('number and BigInt texts that hold a secret become "[REDACTED]"; others stay numbers', () => {
  const r = createSecretRedactor(['4242424242'])
  assert.deepEqual(r.redact({ card: 4242424242, big: 14242424242n, ok: 7, neg: -1, inMap: new Map([['k', 4242424242]]) }), {
    card: '[REDACTED]',
    big: '[REDACTED]',
    ok: 7,
    neg: -1,
    inMap: { k: '[REDACTED]' },
  })
  assert.equal(r.redact(4242424242), '[REDACTED]')
  assert.equal(createSecretRedactor(['abc']).redact(4242424242), 4242424242)
})

test('errors keep name and message; a throwing getter yields "[REDACTED]", never an exception', () => {
  const r = createSecretRedactor(['abc123'])
  const err = new Error('boom abc123')
  err.code = 'E_abc123'
  assert.deepEqual(r.redact({ err }), { err: { name: 'Error', message: 'boom [REDACTED]', code: 'E_[REDACTED]' } })
  const hostile = {
    ok: 'abc123',
    get bad() {
      throw new Error('getter abc123')
    },
  }
  assert.deepEqual(r.redact(hostile), { ok: '[REDACTED]', bad: '[REDACTED]' })
  const badMap = new Map([['a', 1]])
  badMap[Symbol.iterator] = () => {
    throw new Error('no')
  }
  assert.equal(r.redact({ m: badMap }).m, '[REDACTED]')
  const throwingList = new Proxy(['abc123'], {
    get(t, k) {
      if (k === '0') throw new Error('trap')
      return Reflect.get(t, k)
    },
  })
  assert.deepEqual(r.redact(throwingList), ['[REDACTED]'])
})

test('secrets: undefined, null and empty entries are ignored; no secret at all returns the value itself', () => {
  const r = createSecretRedactor([undefined, 'sk-1', null, ''])
  assert.equal(r.redact('a sk-1'), 'a [REDACTED]')
  const value = { a: [1] }
  assert.equal(createSecretRedactor([]).redact(value), value)
  assert.equal(createSecretRedactor([undefined, '']).redact(value), value)
  assert.throws(() => createSecretRedactor('abc'), TypeError)
  assert.throws(() => createSecretRedactor([1]), TypeError)
  assert.throws(() => createSecretRedactor(['RED']), TypeError, 'a secret inside the marker cannot be redacted')
  assert.throws(() => createSecretRedactor(['x'.repeat(4097)]), TypeError)
})

test('a secret inside a placeholder is redacted there too', () => {
  const r = createSecretRedactor(['Circular', 'MaxDepth'])
  const c = {}
  c.c = c
  assert.deepEqual(r.redact(c), { c: '[[REDACTED]]' })
  let deep = {}
  for (let i = 0; i < 40; i++) deep = { d: deep }
  assert.ok(!JSON.stringify(r.redact(deep)).includes('MaxDepth'))
})

test('a service given a createSecretRedactor redactor redacts natively, with the same rules', async () => {
  const r = createSecretRedactor(['sk-svc'])
  const { nativeRedactors } = require('../js/redaction.js')
  assert.ok(nativeRedactors.get(r), 'the redactor carries its native handle')
  const service = createArtifactService(createMemoryCheckpointStore(), { redactor: r, linkSecret: 'l'.repeat(32) })
  const ownership = { tenantId: 't' }
  const rec = await service.attach({
    ownership,
    threadId: 'thread-1',
    id: 'a',
    uri: 'https://x/sk-svc',
    mime: 'text/plain',
    hash: 'h',
    preview: { '[REDACTED]': 1, 'sk-svc': 2 },
  })
  assert.equal(rec.revisions[0].uri, 'https://x/[REDACTED]')
  assert.deepEqual(rec.revisions[0].preview, { '[REDACTED]': 1, '[REDACTED]__2': 2 })
})
