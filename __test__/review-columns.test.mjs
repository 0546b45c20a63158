// createCodingPatchReviewManifest has two native paths (js/review.js): the columns path for
// plain inputs and the JSON text path for everything else. These tests run both on the
// same inputs and require identical results (deep equality, member order, the digest) and
// identical errors, and check which inputs the columns path declines.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { createCodingPatchReviewManifest } from '../index.mjs'

const require = createRequire(import.meta.url)
const { internal } = require('../js/review.js')

const FP = '1f'.repeat(32)
const SHA = '2a'.repeat(32)

function input(overrides = {}) {
  return {
    threadId: 'thread-1',
    artifactId: 'patch-1',
    identity: { repositoryId: 'app', remoteFingerprint: FP, defaultBranch: 'main', worktreePath: 'wt/one' },
    base: 'main',
    head: 'feature-1',
    patch: { kind: 'patch', uri: 'artifacts/patch-1.patch', sha256: SHA, bytes: 4096 },
    changedPaths: ['src/b.ts', 'src/a.ts', 'src/b.ts'],
    diffstat: [
      { file: 'src/b.ts', additions: 1, deletions: 0 },
      { file: 'src/a.ts', additions: 10, deletions: 2 },
    ],
    checks: [{ name: 'test', exitCode: -1, summary: 'fail\u0007ed "x" \\ y\n' }, { name: 'build', exitCode: 0 }],
    diagnostics: [
      { file: 'src/b.ts', severity: 'error', count: 1, generation: 2 },
      { file: 'src/a.ts', severity: 'hint', count: 2, generation: 2 },
      { file: 'src/b.ts', severity: 'info', count: 3, generation: 1 },
    ],
    createdAt: '2026-01-02T03:04:05.678Z',
    ...overrides,
  }
}

function big(shuffle) {
  let files = Array.from({ length: 1500 }, (_, i) => `packages/m-${i % 41}/src/file-${String(i).padStart(4, '0')}.ts`).sort()
  let rows = files.map((file, i) => ({ file, additions: (i * 7) % 300, deletions: (i * 3) % 120 }))
  const severities = ['error', 'warning', 'info', 'hint']
  let diags = files.filter((_, i) => i % 3 === 0).map((file, i) => ({ file, severity: severities[i % 4], count: i % 5, generation: 7 }))
  if (shuffle) {
    files = [...files].reverse()
    rows = [...rows.slice(700), ...rows.slice(0, 700)]
    diags = [...diags].reverse()
  }
  return input({ changedPaths: files, diffstat: rows, diagnostics: diags, limits: { maxManifestBytes: 256 * 1024 } })
}

/** Both paths on `value`: the columns path must take it and agree with the JSON path. */
function same(value) {
  const viaJson = internal.manifestViaJson(value)
  const viaColumns = internal.manifestViaColumns(value)
  assert.notEqual(viaColumns, null, 'the columns path declined a plain input')
  assert.deepStrictEqual(viaColumns, viaJson)
  assert.equal(JSON.stringify(viaColumns), JSON.stringify(viaJson))
  assert.equal(viaColumns.artifactInput.preview.review, viaColumns.review)
  return viaColumns
}

function errorOf(fn) {
  try {
    fn()
  } catch (err) {
    return { name: err.name, code: err.code, message: err.message, cls: err.constructor.name }
  }
  assert.fail('expected an error')
}

test('columns and JSON paths agree on plain inputs', () => {
  same(input())
  same(input({ identity: { repositoryId: 'app', remoteFingerprint: FP, defaultBranch: 'main' } }))
  same(input({ title: 'Fix the thing', reviewId: 'review-7' }))
  same(input({ diagnostics: undefined, checks: undefined }))
  same(input({ diagnostics: [], checks: [], changedPaths: [], diffstat: [] }))
  same(big(false))
  same(big(true))
})

test('columns path: non-ASCII and escaped text is carried exactly', () => {
  const files = ['src/ünïcødé.ts', 'src/日本語/ファイル.ts', 'src/emoji-😀.ts', 'src/q"uote.ts', 'src/dollar$ & percent%.ts', 'src/a.ts']
  const out = same(input({
    changedPaths: files,
    diffstat: files.map((file, i) => ({ file, additions: i, deletions: 2 * i })),
    diagnostics: files.map((file, i) => ({ file, severity: 'warning', count: i, generation: 1 })),
  }))
  assert.equal(out.review.changedPaths.length, files.length)
})

test('columns path: counts -0 come back as 0; absent lists are empty', () => {
  const out = same(input({
    diffstat: [{ file: 'src/a.ts', additions: -0, deletions: -0 }],
    diagnostics: [{ file: 'src/a.ts', severity: 'error', count: -0, generation: -0 }],
  }))
  assert.ok(Object.is(out.review.diffstat[0].additions, 0))
  assert.ok(Object.is(out.review.diagnostics[0].count, 0))
  assert.ok(Object.is(out.review.diagnostics[0].generation, 0))
  const none = same(input({ changedPaths: undefined, diffstat: undefined, diagnostics: undefined }))
  assert.deepEqual([none.review.changedPaths, none.review.diffstat, none.review.diagnostics], [[], [], []])
})

test('columns path: null-prototype rows, accessor rows and undefined extras are read like JSON', () => {
  const row = Object.create(null)
  row.file = 'src/a.ts'
  row.additions = 1
  row.deletions = 2
  const getters = { get file() { return 'src/b.ts' }, get additions() { return 3 }, get deletions() { return 4 } }
  same(input({ diffstat: [row, getters] }))
  same(input({ title: undefined, extra: undefined }))
  // Proxies are read through their traps once, as JSON.stringify reads them.
  same(input({
    changedPaths: new Proxy(['src/b.ts', 'src/a.ts'], {}),
    diffstat: [new Proxy({ file: 'src/a.ts', additions: 1, deletions: 2 }, {})],
  }))
})

test('columns path declines what it does not read exactly as JSON.stringify, and both paths agree', () => {
  class Row { constructor() { this.file = 'src/a.ts'; this.additions = 1; this.deletions = 1 } }
  const inherited = Object.create({ deletions: 1 })
  inherited.file = 'src/a.ts'
  inherited.additions = 1
  const declined = [
    input({ diffstat: [new Row()] }),
    input({ diffstat: [inherited] }),
    input({ diffstat: [{ file: 'src/a.ts', additions: 1, deletions: 1, extra: undefined }] }),
    input({ diffstat: [{ file: 'src/a.ts', additions: 1, deletions: 1, toJSON() { return { file: 'src/z.ts', additions: 2, deletions: 2 } } }] }),
    input({ changedPaths: Object.assign(['src/a.ts'], { toJSON() { return ['src/q.ts'] } }) }),
    input({ changedPaths: ['src/\ud800.ts'] }),
    input({ diffstat: [{ file: 'src/a.ts', additions: 1.5, deletions: 1 }] }),
    input({ diffstat: [{ file: 'src/a.ts', additions: 2 ** 53, deletions: 1 }] }),
    input({ diagnostics: [{ file: 'src/a.ts', severity: 'error', count: null, generation: 1 }] }),
    input({ diagnostics: [{ file: 'src/a.ts', severity: 'error', count: 1 }] }),
    input({ diagnostics: [{ file: 'src/a.ts', severity: 2, count: 1, generation: 1 }] }),
    input({ diagnostics: [{ file: 'src/a.ts', errors: 0, warnings: 0 }] }),
    input({ diagnostics: null }),
    input({ changedPaths: [new String('src/a.ts')] }),
    input({ toJSON() { return input() } }),
    input({ unknown: 1 }),
    input({ identity: { repositoryId: 'app', remoteFingerprint: FP, defaultBranch: 'main', x: 1 } }),
    input({ patch: { kind: 'patch', uri: 'u', sha256: SHA, bytes: '1' } }),
    input({ changedPaths: [, 'src/a.ts'] }), // eslint-disable-line no-sparse-arrays
    input({ changedPaths: new Proxy(['src/a.ts'], { get: (t, k) => (k === 'length' ? '1' : t[k]) }) }),
    input({ diffstat: new Proxy([], { get: (t, k) => (k === 'length' ? 1e9 : t[k]) }) }),
  ]
  for (const value of declined) {
    assert.equal(internal.manifestViaColumns(value), null)
    // The public call gives exactly what the JSON text path gives (a result or an error).
    let expected
    try {
      expected = { ok: internal.manifestViaJson(value) }
    } catch (err) {
      expected = { err: errorOf(() => { throw err }) }
    }
    if (expected.ok) {
      assert.deepStrictEqual(createCodingPatchReviewManifest(value), expected.ok)
    } else {
      assert.deepStrictEqual(errorOf(() => createCodingPatchReviewManifest(value)), expected.err)
    }
  }
})

test('columns path: a throwing accessor gives the JSON path typed error, not a raw one', () => {
  const value = input()
  Object.defineProperty(value, 'diffstat', { enumerable: true, get() { throw new Error('boom') } })
  const e = errorOf(() => createCodingPatchReviewManifest(value))
  assert.deepStrictEqual(e, errorOf(() => internal.manifestViaJson(value)))
  assert.equal(e.code, 'ERR_PRISM_REVIEW_INPUT')
})

test('columns and JSON paths give identical errors after reading', () => {
  const cases = [
    input({ changedPaths: ['../escape.ts'] }),
    input({ changedPaths: ['/abs.ts'] }),
    input({ diffstat: [{ file: 'src/a.ts', additions: 1, deletions: 1 }, { file: 'src/a.ts', additions: 2, deletions: 2 }] }),
    input({ diagnostics: [{ file: 'src/a.ts', severity: 'info', count: 0, generation: 1 }, { file: 'src/a.ts', severity: 'info', count: 1, generation: 2 }] }),
    input({ diagnostics: [{ file: 'src/a.ts', severity: 'information', count: 0, generation: 1 }] }),
    input({ diagnostics: Array.from({ length: 501 }, (_, i) => ({ file: `f${i}.ts`, severity: 'error', count: 0, generation: 0 })) }),
    input({ checks: Array.from({ length: 9 }, (_, i) => ({ name: `c${i}`, exitCode: 0 })) }),
    input({ head: 'has space' }),
    input({ changedPaths: Array.from({ length: 3000 }, (_, i) => `src/long/path/number-${i}.ts`) }),
    input({ limits: { maxManifestBytes: 10 } }),
    input({ limits: { maxManifestBytes: 10 ** 9 } }),
    input({ identity: { repositoryId: 'app', remoteFingerprint: 'nothex', defaultBranch: 'main' } }),
    input({ diffstat: [{ file: 'src/a\u0001.ts', additions: 1, deletions: 1 }] }),
  ]
  // Over the 4 MiB input cap: declined, so the JSON path gives its LIMIT error.
  const huge = input({ changedPaths: Array.from({ length: 60000 }, (_, i) => `src/${'x'.repeat(60)}/${i}.ts`) })
  assert.equal(internal.manifestViaColumns(huge), null)
  assert.equal(errorOf(() => createCodingPatchReviewManifest(huge)).code, 'ERR_PRISM_REVIEW_LIMIT')
  for (const value of cases) {
    const viaJson = errorOf(() => internal.manifestViaJson(value))
    // The columns path either declines (its rest of the input is refused while reading:
    // the JSON path then reports) or fails with exactly the same error.
    let declined = false
    try {
      declined = internal.manifestViaColumns(value) === null
    } catch {}
    if (!declined) assert.deepStrictEqual(errorOf(() => internal.manifestViaColumns(value)), viaJson)
    assert.deepStrictEqual(errorOf(() => createCodingPatchReviewManifest(value)), viaJson)
  }
  // Errors found after reading come from the shared checks, never from a decline.
  for (const value of cases.slice(0, 6)) assert.notEqual(errorOf(() => internal.manifestViaColumns(value)), null)
})

test('columns path: the digest does not depend on the input order', () => {
  assert.equal(same(big(true)).review.digest, same(big(false)).review.digest)
})

test('public call and JSON path agree on seeded random garbage in the bulk lists', () => {
  const pool = [null, NaN, Infinity, -1, 1.5, 2 ** 53, 2 ** 53 - 1, -0, 0, 7, '', 'x', 'src/ok.ts', '../x', 'a\u0000b', 'src/\udc00', {}, [], true, undefined, 10n]
  let s = 42
  const rand = (n) => {
    s = (s * 1103515245 + 12345) % 2147483648
    return s % n
  }
  const outcome = (fn) => {
    try {
      return { ok: fn() }
    } catch (err) {
      return { err: { name: err.name, code: err.code, message: err.message } }
    }
  }
  for (let round = 0; round < 300; round++) {
    const value = input()
    const list = ['changedPaths', 'diffstat', 'diagnostics'][rand(3)]
    const arr = value[list]
    const at = rand(arr.length + 1)
    const v = pool[rand(pool.length)]
    if (list === 'changedPaths' || at === arr.length) {
      arr[at] = v
    } else {
      const keys = list === 'diffstat' ? ['file', 'additions', 'deletions', 'other'] : ['file', 'severity', 'count', 'generation', 'other']
      arr[at] = { ...arr[at], [keys[rand(keys.length)]]: v }
    }
    assert.deepStrictEqual(outcome(() => createCodingPatchReviewManifest(value)), outcome(() => internal.manifestViaJson(value)), `round ${round}`)
  }
})
