import { test } from 'node:test'
import assert from 'node:assert/strict'
import { normalizeDiagnostics, diagnosticDelta, diagnosticIdentity, resolveDiagnosticsLimits } from '../index.mjs'

const ROOT = '/work/repo'
const opts = (extra = {}) => ({ workspaceRoot: ROOT, generation: 7, ...extra })
const base = () => ({ file: 'src/a.ts', line: 3, character: 4, severity: 'warning', message: 'bad' })
const one = (patch, extra) => {
  const out = normalizeDiagnostics([{ ...base(), ...patch }], opts(extra))
  assert.ok(out.length <= 1)
  return out[0]
}
const dropped = (patch, extra) => assert.equal(one(patch, extra), undefined, JSON.stringify(patch))

function nd(file, line, extra = {}) {
  return { file, line, character: 0, severity: 'error', message: `m ${file}:${line}`, generation: 1, ...extra }
}

test('a valid entry comes out in the shape of @arnilo/prism: end and source filled, code absent', () => {
  const out = one({})
  assert.deepEqual(out, { file: 'src/a.ts', line: 3, character: 4, endLine: 3, endCharacter: 4, severity: 'warning', message: 'bad', source: 'check', generation: 7 })
  assert.equal(JSON.stringify(out), '{"file":"src/a.ts","line":3,"character":4,"endLine":3,"endCharacter":4,"severity":"warning","message":"bad","source":"check","generation":7}')
  // An integer code stays a number; a string code a string.
  const full = one({ endLine: 5, endCharacter: 1, source: 'ts', code: 2322 })
  assert.deepEqual(
    [full.endLine, full.endCharacter, full.source, full.code],
    [5, 1, 'ts', 2322],
  )
  assert.equal(one({ code: 'E1' }).code, 'E1')
  assert.equal(one({ code: -7 }).code, -7)
  assert.equal(one({ source: '' }).source, 'check')
})

test('workspace containment is lexical', () => {
  assert.equal(one({ file: './a/../b' }).file, 'b')
  assert.equal(one({ file: `${ROOT}/src/x.ts` }).file, 'src/x.ts')
  assert.equal(one({ file: 'src\\win\\y.ts' }).file, 'src/win/y.ts')
  assert.equal(one({ file: `file://${ROOT}/src/a%20b.ts` }).file, 'src/a b.ts')
  for (const file of ['../x', 'a/../../x', '..\\..\\etc\\passwd', '/etc/passwd', `${ROOT}-other/a`, ROOT, `${ROOT}/../x`, '', '.', 'a\nb', 'C:foo']) {
    dropped({ file })
  }
  const win = normalizeDiagnostics([{ file: 'C:\\proj\\src\\a.ts', line: 0, message: 'm' }], { workspaceRoot: 'c:\\proj', generation: 1 })
  assert.equal(win[0].file, 'src/a.ts')
})

test('positions must be non-negative finite integers; the end never precedes the start', () => {
  for (const key of ['line', 'character', 'endLine', 'endCharacter']) {
    for (const v of [NaN, Infinity, -Infinity, -1, 1.5, '3', null, 2 ** 53, {}, [1]]) dropped({ [key]: v })
  }
  // Absent positions default to 0 (the end to the start), as @arnilo/prism.
  const bare = normalizeDiagnostics([{ file: 'a.ts', message: 'm' }], opts())[0]
  assert.deepEqual([bare.line, bare.character, bare.endLine, bare.endCharacter], [0, 0, 0, 0])
  assert.deepEqual([one({ line: undefined }).line, one({ line: undefined }).endLine], [0, 0])
  assert.equal(one({ character: undefined }).character, 0)
  dropped({ endLine: 2 })
  dropped({ endLine: 3, endCharacter: 3 })
  dropped({ endCharacter: 1 })
  assert.equal(one({ endLine: 4, endCharacter: 0 }).endLine, 4)
})

test('severity: names, LSP numbers 1..4, default error; anything else drops', () => {
  assert.equal(one({ severity: undefined }).severity, 'error')
  assert.equal(one({ severity: 'hint' }).severity, 'hint')
  // The names of @arnilo/prism; "information" is read as "info".
  assert.equal(one({ severity: 3 }).severity, 'info')
  assert.equal(one({ severity: 'info' }).severity, 'info')
  assert.equal(one({ severity: 'information' }).severity, 'info')
  for (const severity of ['Error', 'INFO', 'informational', '', 0, 5, 1.5, NaN, null, true]) dropped({ severity })
})

test('messages: control characters stripped (tab/newline kept), must stay non-empty', () => {
  assert.equal(one({ message: 'a\u0000b\r\n\tc\u001b[31md\u001b[0m\u0085e' }).message, 'ab\n\tcde')
  for (const message of ['', '   \n', '\u0000\u0007', '\u001b[0m', null, 5, { text: 'x' }, undefined]) dropped({ message })
})

test('messages truncate at the UTF-8 byte cap on a character boundary, no suffix', () => {
  const long = '€'.repeat(3000) // 9000 bytes
  const out = one({ message: long })
  assert.equal(Buffer.byteLength(out.message), 4095) // 1365 × 3 bytes: the next € would pass 4096
  assert.ok(long.startsWith(out.message))
  const emoji = '😀'.repeat(10) // 4 bytes each, 2 UTF-16 units each
  const cut = one({ message: emoji }, { maxMessageBytes: 7 })
  assert.equal(cut.message, '😀')
  dropped({ message: '😀x' }, { maxMessageBytes: 3 })
  assert.equal(one({ message: '\u0000\u0000abcd' }, { maxMessageBytes: 3 }).message, 'abc')
  // A lone surrogate becomes U+FFFD (3 bytes) rather than breaking anything.
  assert.equal(one({ message: 'a\ud800b' }).message, 'a\ufffdb')
  const hard = one({ message: 'x'.repeat(20000) }, { maxMessageBytes: 16384 })
  assert.equal(hard.message.length, 16384)
})

test('per-file cap is charged before retention: the first N valid entries per file are kept', () => {
  const mk = (file, line, message = 'x') => ({ file, line, message })
  const out = normalizeDiagnostics(
    [mk('a', 1, ''), mk('a', 2), mk('b', 1), mk('a', 3), mk('a', 4), mk('b', 2), mk('./a', 5)],
    opts({ maxDiagnosticsPerFile: 2 }),
  )
  assert.deepEqual(out.map((d) => `${d.file}:${d.line}`), ['a:2', 'b:1', 'a:3', 'b:2'])
  const many = Array.from({ length: 600 }, (_, i) => mk('f', i))
  assert.equal(normalizeDiagnostics(many, opts()).length, 500)
  assert.equal(normalizeDiagnostics(many, opts({ maxDiagnosticsPerFile: 5000 })).length, 600)
})

test('malformed entries drop whole; valid neighbours survive', () => {
  const proto = JSON.parse('{"__proto__": {"file": "a", "line": 1, "message": "m"}}')
  const raw = [null, undefined, 5, 'x', [1], {}, proto, base(), { ...base(), line: -1 }, { ...base(), code: 1.5 }, { ...base(), source: 3 }]
  const sparse = [, base()] // eslint-disable-line no-sparse-arrays
  assert.deepEqual(normalizeDiagnostics(raw, opts()).map((d) => d.file), ['src/a.ts'])
  assert.equal(normalizeDiagnostics(sparse, opts()).length, 1)
  assert.equal(Object.prototype.file, undefined)
})

test('normalizeDiagnostics: bad top-level arguments are typed errors', () => {
  const typeErr = (fn) => assert.throws(fn, (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE')
  const rangeErr = (fn) => assert.throws(fn, (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE')
  for (const raw of [null, undefined, 5, 'x', {}, { length: 1 }]) typeErr(() => normalizeDiagnostics(raw, opts()))
  for (const o of [undefined, null, 5, 'x', []]) typeErr(() => normalizeDiagnostics([], o))
  typeErr(() => normalizeDiagnostics([], { generation: 1 }))
  typeErr(() => normalizeDiagnostics([], { workspaceRoot: 5, generation: 1 }))
  typeErr(() => normalizeDiagnostics([], { workspaceRoot: 'relative', generation: 1 }))
  typeErr(() => normalizeDiagnostics([], { workspaceRoot: ROOT }))
  typeErr(() => normalizeDiagnostics([], { workspaceRoot: ROOT, generation: '1' }))
  typeErr(() => normalizeDiagnostics([], opts({ maxMessageBytes: '9' })))
  typeErr(() => normalizeDiagnostics([], opts({ maxMessageBytes: 10n })))
  rangeErr(() => normalizeDiagnostics([], { workspaceRoot: ROOT, generation: -1 }))
  rangeErr(() => normalizeDiagnostics([], { workspaceRoot: ROOT, generation: NaN }))
  for (const v of [0, 5001, 1.5, NaN, Infinity, -1]) rangeErr(() => normalizeDiagnostics([], opts({ maxDiagnosticsPerFile: v })))
  for (const v of [0, 16385, NaN]) rangeErr(() => normalizeDiagnostics([], opts({ maxMessageBytes: v })))
  const cyclic = { workspaceRoot: ROOT, generation: 1 }
  cyclic.self = cyclic
  typeErr(() => normalizeDiagnostics([], cyclic))
})

test('hostile entries never crash: getters, proxies, BigInt, huge strings, deep nesting', () => {
  const throwing = { ...base() }
  Object.defineProperty(throwing, 'message', { get() { throw new Error('boom') }, enumerable: true })
  assert.throws(() => normalizeDiagnostics([throwing], opts()), (e) => e instanceof TypeError && e.cause?.message === 'boom')
  const counted = { ...base() }
  let reads = 0
  Object.defineProperty(counted, 'message', { get() { reads++; return 'ok' }, enumerable: true })
  assert.equal(normalizeDiagnostics([counted], opts())[0].message, 'ok')
  assert.equal(reads, 1)
  const proxy = new Proxy(base(), {})
  assert.equal(normalizeDiagnostics([proxy], opts()).length, 1)
  assert.equal(normalizeDiagnostics([{ ...base(), line: 1n }], opts()).length, 0)
  assert.equal(normalizeDiagnostics([{ ...base(), message: Symbol('s') }], opts()).length, 0)
  let deep = {}
  for (let i = 0; i < 10000; i++) deep = { file: deep }
  assert.equal(normalizeDiagnostics([deep, { ...base(), nested: deep }], opts()).length, 1)
  const huge = 'é'.repeat(4 * 1024 * 1024)
  const out = normalizeDiagnostics([{ ...base(), message: huge }, { ...base(), file: huge }], opts())
  assert.equal(out.length, 1)
  assert.equal(Buffer.byteLength(out[0].message), 4096)
})

test('diagnosticIdentity is file:source:line:character:code', () => {
  assert.equal(diagnosticIdentity({ file: 'src/a.ts', source: 'ts', line: 3, character: 4, code: '2322' }), 'src/a.ts:ts:3:4:2322')
  assert.equal(diagnosticIdentity(nd('a', 0)), 'a::0:0:')
  // An integer code is its decimal text: 2322 and '2322' are one identity.
  assert.equal(diagnosticIdentity({ file: 'a', line: 0, character: 0, code: 2322 }), 'a::0:0:2322')
  for (const bad of [null, 5, 'x', [], {}, { file: 'a', line: -1, character: 0 }, { file: 'a', line: 0, character: NaN }, { file: '', line: 0, character: 0 }, { file: 'a', line: 0, character: 0, code: 5.5 }, { file: 'a', line: 0, character: 0, code: true }]) {
    assert.throws(() => diagnosticIdentity(bad), TypeError)
  }
})

test('delta: added, removed, unchanged (the next version), result generation', () => {
  const previous = [nd('a', 1), nd('b', 1)]
  const next = [nd('c', 1, { generation: 2 }), nd('b', 1, { generation: 2, message: 'new text' })]
  const r = diagnosticDelta({ next, previous })
  assert.deepEqual(r, { added: [next[0]], removed: [previous[0]], unchanged: [next[1]], generation: 2, truncated: false })
  const first = diagnosticDelta({ next })
  assert.deepEqual(first.added.map(diagnosticIdentity), ['b::1:0:', 'c::1:0:'])
})

test('delta: duplicate identities dedupe on each side', () => {
  const x = nd('a', 1, { source: 's' })
  const r = diagnosticDelta({ next: [x, { ...x }], previous: [x, x] })
  assert.deepEqual([r.added.length, r.removed.length, r.unchanged.length], [0, 0, 1])
  // `truncated` (as @arnilo/prism): next held an identity more than once.
  assert.equal(r.truncated, true)
  assert.equal(diagnosticDelta({ next: [x], previous: [x, x] }).truncated, false)
  // Integer and string codes of one value, and "information"/"info", match.
  const n = diagnosticDelta({ next: [nd('a', 1, { code: 7, severity: 'info' })], previous: [nd('a', 1, { code: '7', severity: 'information' })] })
  assert.deepEqual([n.added.length, n.removed.length, n.unchanged.length, n.unchanged[0].code], [0, 0, 1, 7])
  const y = nd('a', 1, { source: 's', message: 'other' })
  const a = diagnosticDelta({ next: [x, y] })
  const b = diagnosticDelta({ next: [y, x] })
  assert.equal(a.added.length, 1)
  assert.equal(JSON.stringify(a), JSON.stringify(b))
})

test('delta: stale previous entries (newer than the incoming generation) are ignored', () => {
  const newer = nd('a', 1, { generation: 5 })
  const older = nd('b', 1, { generation: 3 })
  const next = [nd('a', 1, { generation: 4 })]
  const r = diagnosticDelta({ next, previous: [newer, older] })
  assert.deepEqual(r.added, next)
  assert.deepEqual(r.removed, [older])
  assert.deepEqual(r.unchanged, [])
  assert.equal(r.generation, 4)
  // Same generation diffs normally: a repeated refresh is all unchanged.
  const same = diagnosticDelta({ next: [newer], previous: [newer] })
  assert.deepEqual([same.added.length, same.removed.length, same.unchanged.length], [0, 0, 1])
  // An explicit generation names an empty incoming view.
  const cleared = diagnosticDelta({ next: [], previous: [newer, older], generation: 4 })
  assert.deepEqual(cleared.removed, [older])
  assert.equal(cleared.generation, 4)
  // Without it, an empty next is older than nothing: every previous entry is removed.
  const all = diagnosticDelta({ next: [], previous: [older, newer] })
  assert.deepEqual(all.removed, [newer, older])
  assert.equal(all.generation, 5)
  assert.equal(diagnosticDelta({ next: [] }).generation, 0)
})

test('delta: canonical order (file, line, character, source, code), byte-identical under shuffles', () => {
  const items = [
    nd('b', 1), nd('a', 2), nd('a', 1, { character: 5 }), nd('a', 1, { character: 5, source: 'z' }),
    nd('a', 1, { character: 5, source: 'a', code: '2' }), nd('a', 1, { character: 5, source: 'a', code: '10' }), nd('a', 10),
  ]
  const r = diagnosticDelta({ next: items })
  assert.deepEqual(r.added.map(diagnosticIdentity), ['a::1:5:', 'a:a:1:5:10', 'a:a:1:5:2', 'a:z:1:5:', 'a::2:0:', 'a::10:0:', 'b::1:0:'])
  // Property: random sets with duplicates and mixed generations, shuffled, give identical JSON.
  let seed = 12345
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
  const shuffle = (a) => {
    const b = [...a]
    for (let i = b.length - 1; i > 0; i--) {
      const j = rand(i + 1)
      ;[b[i], b[j]] = [b[j], b[i]]
    }
    return b
  }
  const gen = () => {
    const o = { file: ['a', 'b', 'src/c'][rand(3)], line: rand(3), character: rand(2), severity: ['error', 'hint'][rand(2)], message: `m${rand(2)}`, generation: rand(4) }
    if (rand(2)) o.source = ['ts', 'lint', ''][rand(3)]
    if (rand(2)) o.code = ['1', 'E2'][rand(2)]
    return o
  }
  for (let round = 0; round < 200; round++) {
    const next = Array.from({ length: rand(20) }, gen)
    const previous = Array.from({ length: rand(20) }, gen)
    const generation = rand(3) === 0 ? undefined : rand(4)
    const a = JSON.stringify(diagnosticDelta({ next, previous, generation }))
    const b = JSON.stringify(diagnosticDelta({ next: shuffle(next), previous: shuffle(previous), generation }))
    assert.equal(a, b)
  }
})

test('delta: bad arguments are typed errors naming the entry', () => {
  for (const input of [undefined, null, 5, 'x', [], {}, { next: null }, { next: {} }, { next: [], previous: 5 }, { next: [], previous: null }]) {
    assert.throws(() => diagnosticDelta(input), (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE', JSON.stringify(input))
  }
  assert.throws(() => diagnosticDelta({ next: [nd('a', 1), { ...nd('a', 2), severity: 'fatal' }] }), /input\.next\[1\]\.severity/)
  assert.throws(() => diagnosticDelta({ next: [], previous: [{ ...nd('a', 1), line: -1 }] }), /input\.previous\[0\]\.line/)
  assert.throws(() => diagnosticDelta({ next: [{ ...nd('a', 1), message: 5 }] }), /message/)
  assert.throws(() => diagnosticDelta({ next: [{ ...nd('a', 1), generation: 1n }] }), TypeError)
  assert.throws(() => diagnosticDelta({ next: [5] }), /input\.next\[0\]/)
  for (const generation of [-1, 1.5, NaN]) {
    assert.throws(() => diagnosticDelta({ next: [], generation }), (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE')
  }
  assert.throws(() => diagnosticDelta({ next: [], generation: '1' }), TypeError)
})

test('normalize → delta round trip, and the result never aliases internal state', () => {
  const raw = [
    { file: `${ROOT}/src/a.ts`, line: 1, message: 'one', source: 'ts', code: 1 },
    { file: 'src/b.ts', line: 2, message: 'two' },
  ]
  const previous = normalizeDiagnostics(raw, opts({ generation: 1 }))
  const next = normalizeDiagnostics(raw.slice(1), opts({ generation: 2 }))
  const r = diagnosticDelta({ next, previous })
  assert.deepEqual(r.removed.map(diagnosticIdentity), ['src/a.ts:ts:1:0:1'])
  assert.deepEqual(r.unchanged.map((d) => [d.file, d.generation]), [['src/b.ts', 2]])
  r.unchanged[0].message = 'mutated'
  assert.equal(next[0].message, 'two')
})

test('the Node-API reader and the JSON-text reader agree entry for entry', async () => {
  const { createRequire } = await import('node:module')
  const native = createRequire(import.meta.url)('../js/native.js')
  const raw = [
    base(), { ...base(), file: `${ROOT}/x/../y.ts`, code: -3, source: '', severity: 4 }, { ...base(), message: 'é\u0000\u001b[1mbold\u001b[0m\r\n' },
    { ...base(), line: 1.5 }, { ...base(), endLine: 3, endCharacter: 4 }, null, 'x', { ...base(), message: 'x'.repeat(5000) + '€' },
    { ...base(), message: 'a\ud800b' }, { ...base(), file: 'file:///work/repo/z.ts' }, { ...base(), severity: 0 }, { ...base(), code: 2 ** 60 },
  ]
  for (const options of [opts(), opts({ maxMessageBytes: 5, maxDiagnosticsPerFile: 2 })]) {
    const viaObjects = normalizeDiagnostics(raw, options)
    const viaJson = JSON.parse(native.diagnosticsNormalizeJson(JSON.stringify(raw), JSON.stringify(options)))
    assert.deepEqual(viaObjects, viaJson)
  }
  const next = normalizeDiagnostics(raw, opts({ generation: 2 }))
  const previous = normalizeDiagnostics(raw.slice(3), opts({ generation: 1 }))
  assert.deepEqual(
    JSON.parse(native.diagnosticsDeltaIndices({ next, previous })),
    JSON.parse(native.diagnosticsDeltaIndicesJson(JSON.stringify({ next, previous }))),
  )
})

test('property: truncated messages never exceed the cap, never split a character, keep a prefix', () => {
  const alphabet = ['a', ' ', '\n', '\t', 'é', '€', '😀', '\u0000', '\u001b', '\u0085', '\r', '𝄞', 'ж']
  let seed = 99
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
  const strip = (s) => s.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '')
  for (let round = 0; round < 500; round++) {
    const message = Array.from({ length: rand(40) }, () => alphabet[rand(alphabet.length)]).join('')
    const maxMessageBytes = 1 + rand(24)
    const out = normalizeDiagnostics([{ file: 'a', line: 0, message }], opts({ maxMessageBytes }))
    if (out.length === 0) continue
    const m = out[0].message
    assert.ok(Buffer.byteLength(m) <= maxMessageBytes, `${JSON.stringify(message)} @${maxMessageBytes}`)
    assert.equal(m, m.toWellFormed ? m.toWellFormed() : m) // no split surrogate pair
    assert.ok(strip(message).startsWith(m))
    assert.notEqual(m.trim(), '')
    // Maximal: the next character of the stripped text would not fit.
    const rest = [...strip(message).slice(m.length)]
    if (rest.length > 0) assert.ok(Buffer.byteLength(m + rest[0]) > maxMessageBytes)
  }
})

test('huge or sparse arrays are refused or fail fast, never walked into exhaustion', () => {
  const huge = []
  huge.length = 2 ** 32 - 1
  assert.throws(() => normalizeDiagnostics(huge, opts()), (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE')
  assert.throws(() => diagnosticDelta({ next: huge }), RangeError)
  assert.throws(() => diagnosticDelta({ next: [], previous: huge }), RangeError)
  const holes = []
  holes.length = 1_000_000
  holes[999_999] = base()
  assert.equal(normalizeDiagnostics(holes, opts()).length, 1)
  // The first bad entry stops the walk: a holey next fails at index 0.
  assert.throws(() => diagnosticDelta({ next: holes }), /input\.next\[0\]/)
})

test('diagnosticDelta refuses a custom identity instead of ignoring it', () => {
  assert.throws(() => diagnosticDelta({ next: [nd('a', 1)], identity: (d) => d.file }), (e) => e instanceof TypeError && /identity/.test(e.message))
})

test('resolveDiagnosticsLimits fills the defaults; out of range is a RangeError', () => {
  assert.deepEqual(resolveDiagnosticsLimits(), { maxDiagnosticsPerFile: 500, maxMessageBytes: 4096 })
  assert.deepEqual(resolveDiagnosticsLimits({ maxMessageBytes: 16384 }), { maxDiagnosticsPerFile: 500, maxMessageBytes: 16384 })
  assert.throws(() => resolveDiagnosticsLimits({ maxDiagnosticsPerFile: 5001 }), RangeError)
  assert.throws(() => resolveDiagnosticsLimits({ maxMessageBytes: '1' }), TypeError)
  assert.throws(() => resolveDiagnosticsLimits(5), TypeError)
})

test('a throwing getter or Proxy trap anywhere in the input is a TypeError with the caller\'s error as cause', () => {
  const boom = new Error('boom')
  boom.code = 'ERR_OUT_OF_RANGE' // looks like ours: must still be wrapped, not passed through
  const getter = (obj, key) => Object.defineProperty({ ...obj }, key, { get() { throw boom }, enumerable: true })
  const trap = new Proxy([], { get() { throw boom }, getPrototypeOf() { throw boom }, ownKeys() { throw boom } })
  const throwingElement = (v) => Object.defineProperty([v, v], 1, { get() { throw boom } })
  const revoked = Proxy.revocable({}, {})
  revoked.revoke()
  const wrapped = (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE' && e.cause === boom
  const x = nd('a', 1)
  for (const fn of [
    () => diagnosticDelta(getter({ previous: [] }, 'next')),
    () => diagnosticDelta({ next: [getter(x, 'message')] }),
    () => diagnosticDelta({ next: [x], previous: [getter(x, 'file')] }),
    () => diagnosticDelta({ next: throwingElement(x) }),
    () => diagnosticDelta({ next: [x], previous: throwingElement(x) }),
    () => diagnosticDelta(new Proxy({}, { get() { throw boom } })),
    () => normalizeDiagnostics([getter(base(), 'file')], opts()),
    () => normalizeDiagnostics(throwingElement(base()), opts()),
    () => normalizeDiagnostics([], getter(opts(), 'generation')),
    () => normalizeDiagnostics([], new Proxy(opts(), { ownKeys() { throw boom } })),
    () => diagnosticIdentity(getter(x, 'file')),
    () => resolveDiagnosticsLimits(getter({}, 'maxMessageBytes')),
  ]) {
    assert.throws(fn, wrapped, String(fn))
  }
  for (const fn of [() => diagnosticDelta(revoked.proxy), () => normalizeDiagnostics(revoked.proxy, opts()), () => normalizeDiagnostics([], revoked.proxy)]) {
    assert.throws(fn, (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE' && e.cause instanceof TypeError, String(fn))
  }
  // A Proxy around an array is not an array to the native reader: our own TypeError.
  for (const fn of [() => diagnosticDelta({ next: trap }), () => normalizeDiagnostics(trap, opts())]) {
    assert.throws(fn, (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE', String(fn))
  }
})
