// Binding fuzzer (issue 17): a seeded PRNG throws random and hostile values (throwing
// getters and Proxy traps, revoked Proxies, cycles, BigInts, lone surrogates, huge and
// deep values, valid inputs with one member replaced) at every exported entry point, and
// at the methods of what the factories return. Every failure must be one of ours: a
// `code` starting `ERR_PRISM_`, or a TypeError / RangeError with Node's
// `ERR_INVALID_ARG_TYPE` / `ERR_OUT_OF_RANGE` (API-NOTES). No crash, no hang, nothing
// thrown that is the caller's own error. The same seed gives the same run; set
// PRISM_FUZZ_SEED / PRISM_FUZZ_ROUNDS to explore further.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as prism from '../index.mjs'
import { prng } from './http-support.mjs'

const SEED = Number(process.env.PRISM_FUZZ_SEED ?? 0xb1d5)
const ROUNDS = Number(process.env.PRISM_FUZZ_ROUNDS ?? 150)
// A hang detector, not a speed assertion: no call here does I/O beyond a local file.
const HANG_MS = 30_000
const LINK_SECRET = 'fuzz-binding-secret-0123456789'

let dir
let cwd
before(() => {
  // Whatever file name a random input makes a store open lands in a scratch directory.
  dir = mkdtempSync(join(tmpdir(), 'prism-bindings-fuzz-'))
  cwd = process.cwd()
  process.chdir(dir)
})
after(() => {
  process.chdir(cwd)
  rmSync(dir, { recursive: true, force: true })
})

class CallerError extends Error {}
const boom = () => {
  throw new CallerError('the caller threw')
}

const KEYS = [
  'ownership', 'identity', 'threadId', 'artifactId', 'id', 'uri', 'mime', 'hash', 'version', 'from', 'to',
  'namespace', 'key', 'tenantId', 'accountId', 'userId', 'value', 'metadata', 'expectedVersion', 'limits',
  'filename', 'secrets', 'next', 'previous', 'generation', 'file', 'line', 'character', 'message', 'severity',
  'citations', 'snapshots', 'review', 'artifact', 'patch', 'base', 'head', 'range', 'start', 'end', 'newText',
  'maxMessageBytes', 'principal', 'verified', 'expiresAt', 'revisions', 'approvals', 'state', 'cursor', 'limit',
  'preview', 'ttlSeconds', 'reviewer', 'note', 'rootUri', 'servers', '__proto__', 'constructor', 'toJSON',
]

function hostileString(r) {
  switch (r.int(10)) {
    case 0: return ''
    case 1: return '\ud800'
    case 2: return 'a\u0000b'
    case 3: return 'x'.repeat(1 + r.int(70_000))
    case 4: return '../../etc/passwd'
    case 5: return 'file:///etc/passwd'
    case 6: return r.pick(['__proto__', 'constructor', 'NaN', '-1', '1e309', '2026-01-01T00:00:00Z', 'Jan 1 2999'])
    case 7: return '\u202e💥é'
    case 8: return r.pick(['t1', 'a1', 'user:r', 'https://x/1', 'sha256:aa', 'text/plain', 'postgres://'])
    default: return String(r.int(1e6))
  }
}

/** A random value; `depth` bounds nesting (deep values come from case 'deep'). */
function hostile(r, depth = 0) {
  const leaf = depth > 3
  switch (r.int(leaf ? 9 : 16)) {
    case 0: return undefined
    case 1: return null
    case 2: return r.pick([0, -0, -1, 1.5, NaN, Infinity, -Infinity, 2 ** 53, 2 ** 64, 1e-300, 4294967296])
    case 3: return hostileString(r)
    case 4: return r.pick([true, false])
    case 5: return r.pick([10n, Symbol('s'), () => 1, new Date(NaN), new Date(0)])
    case 6: return r.pick([new Uint8Array(r.int(64)), Buffer.from('{"a":1}'), new ArrayBuffer(4)])
    case 7: return r.pick([/re/, new Map([[1, 2]]), new Set([1]), new Error('e'), Promise.resolve(1)])
    case 8: return r.int(100)
    case 9: {
      const o = {}
      // Own data members, "__proto__" included (as JSON.parse makes them).
      for (let i = r.int(6); i > 0; i--) {
        Object.defineProperty(o, r.pick(KEYS), { value: hostile(r, depth + 1), enumerable: true, writable: true, configurable: true })
      }
      return o
    }
    case 10: return Array.from({ length: r.int(6) }, () => hostile(r, depth + 1))
    case 11: return Object.defineProperty({ ...hostile(r, 4) }, r.pick(KEYS), { get: boom, enumerable: true })
    case 12: return new Proxy({}, r.pick([{ get: boom }, { ownKeys: boom }, { getOwnPropertyDescriptor: boom }, { has: boom }, { getPrototypeOf: boom }]))
    case 13: {
      const p = Proxy.revocable({}, {})
      p.revoke()
      return p.proxy
    }
    case 14: {
      const o = { a: 1 }
      o.self = o
      return r.pick([o, { toJSON: boom }, JSON.parse('{"__proto__":{"polluted":1}}')])
    }
    default: {
      let v = {}
      for (let i = 0; i < 200 + r.int(5000); i++) v = r.next() < 0.5 ? { v } : [v]
      return v
    }
  }
}

/** A valid input with one member replaced by a hostile value (or removed). */
function mutate(r, valid) {
  if (valid === null || typeof valid !== 'object') return hostile(r)
  const out = Array.isArray(valid) ? [...valid] : { ...valid }
  const keys = Object.keys(out)
  if (keys.length === 0) return hostile(r)
  const k = r.pick(keys)
  const set = (v) => Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
  if (r.next() < 0.2) delete out[k]
  else if (r.next() < 0.5 && out[k] !== null && typeof out[k] === 'object') set(mutate(r, out[k]))
  else set(hostile(r))
  return out
}

/** One argument: hostile, or a valid one mutated, or the valid one itself. */
function arg(r, valid) {
  const x = r.next()
  if (x < 0.4) return hostile(r)
  if (x < 0.9 && valid !== undefined) return mutate(r, valid)
  return valid
}

function ours(e) {
  if (!(e instanceof Error) || e instanceof CallerError) return false
  if (typeof e.code === 'string' && e.code.startsWith('ERR_PRISM_')) return true
  return (e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE') || (e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE')
}

function describeValue(v) {
  try {
    const s = typeof v === 'bigint' || typeof v === 'symbol' ? String(v) : JSON.stringify(v)
    return (s ?? String(v)).slice(0, 200)
  } catch {
    try {
      return Object.prototype.toString.call(v)
    } catch {
      return '<unprintable>'
    }
  }
}

/** Failures that are not ours, by entry point: `name` → messages (distinct by place). */
const findings = new Map()

function remember(name, args, e) {
  const where = String(e && e.stack).split('\n').slice(1, 4).join(' |')
  const list = findings.get(name) ?? []
  if (!list.some((f) => f.where === where) && list.length < 5) {
    list.push({ where, message: `${name}(${args.map(describeValue).join(', ')}) threw ${e && e.name}: ${e && e.code} ${e && e.message}`.slice(0, 1000) + ` at ${where}` })
  }
  findings.set(name, list)
}

/** Assert no finding for `name` (each listed, not only the first). */
function assertClean(name) {
  const list = findings.get(name) ?? []
  assert.deepEqual(list.map((f) => f.message), [], `${name}: ${list.length} kind(s) of failure that are not ours`)
}

/** Run `fn`, await what it returns (bounded), and record any failure that is not ours. */
async function check(name, args, fn) {
  let timer
  try {
    const out = fn()
    if (out && typeof out.then === 'function') {
      await Promise.race([
        out,
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${name} hung`)), HANG_MS))),
      ])
    }
    return out
  } catch (e) {
    if (!ours(e)) remember(name, args, e)
    return undefined
  } finally {
    clearTimeout(timer)
  }
}

const ownership = { tenantId: 't1', userId: 'u1' }
const identity = { tenantId: 't1', userId: 'u1', principal: { kind: 'user', id: 'u1' }, scopes: [], issuedAt: '2026-01-01T00:00:00Z', verified: true }
const token = { artifactId: 'a1', threadId: 't1', version: 1, ...ownership, issuedAt: '2026-01-01T00:00:00Z', expiresAt: '2999-01-01T00:00:00Z' }
const record = { id: 'a1', threadId: 't1', revisions: [{ version: 1, uri: 'https://x/1', mime: 'm', hash: 'sha256:aa', citations: [] }], approvals: [{ version: 1, state: 'approved', reviewer: 'user:r', evidenceDigest: 'x' }], lastValidatedVersion: 1 }
const manifest = {
  threadId: 't1', artifactId: 'a1',
  identity: { repositoryId: 'repo', remoteFingerprint: 'a'.repeat(64), defaultBranch: 'main' },
  base: 'main', head: 'feature', patch: { kind: 'patch', uri: 'https://x/p', sha256: 'b'.repeat(64), bytes: 10 },
}
const diag = { file: 'a.ts', line: 1, character: 2, severity: 'error', message: 'm', source: 'ts', code: '1', generation: 1 }
const rawDiag = { uri: 'file:///ws/a.ts', range: { start: { line: 1, character: 2 }, end: { line: 1, character: 3 } }, severity: 1, message: 'm' }

// Every pure or constructing export, with a valid argument list to mutate.
const ENTRIES = [
  ['createCodingPatchReviewManifest', [manifest]],
  ['assertCodingPatchAccepted', [{ review: { ...manifest, digest: 'c'.repeat(64) }, artifact: record }]],
  ['resolveCodingReviewLimits', [{ maxRevisions: 8 }]],
  ['normalizeDiagnostics', [[rawDiag], { root: '/ws' }]],
  ['diagnosticDelta', [{ next: [diag], previous: [], generation: 2 }]],
  ['diagnosticIdentity', [diag]],
  ['resolveDiagnosticsLimits', [{ maxDiagnostics: 10 }]],
  ['createMemoryCheckpointStore', [{ maxRecords: 10 }]],
  ['artifactCheckpointKey', ['t1', 'a1']],
  ['createSecretRedactor', [['secret-1']]],
  ['resolveArtifactLimits', [{ recordBytes: 10_000 }]],
  ['signArtifactDeliveryLink', [token, LINK_SECRET]],
  ['verifyArtifactDeliveryLink', ['x.y', LINK_SECRET, 4096]],
  ['artifactApprovalState', [record]],
  ['checkCitationIntegrity', [{ citations: [{ uri: 'https://x', sourceId: 's', contentHash: 'h' }], snapshots: [{ sourceId: 's', contentHash: 'h' }] }]],
  ['citationBindingDigest', [[{ uri: 'https://x', sourceId: 's' }]]],
  ['approvalEvidenceIntact', [record, 1]],
  ['createArtifactService', [prism.createMemoryCheckpointStore(), { redactor: prism.createSecretRedactor([]), linkSecret: LINK_SECRET }]],
  ['createArtifactHandler', [{ service: {}, authorize: () => false, linkSecret: LINK_SECRET }]],
  ['toNodeListener', [async () => new Response('x')]],
  ['createCredentialRedactor', [{ secrets: ['s3cret'] }]],
  ['resolveLanguageIntelligenceLimits', [{ requestTimeoutMs: 1000 }]],
  ['createLanguageIntelligence', [{ rootUri: 'file:///ws', servers: [] }]],
  ['encodeLspFrame', [{ jsonrpc: '2.0', id: 1, method: 'x' }]],
  ['applyTextEdits', ['hello', [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } }, newText: 'j' }]]],
  ['createSqlitePersistence', [{ filename: 'fuzz.db' }]],
  ['createPostgresPersistence', [{ connectionString: 'postgres://u@127.0.0.1:1/db', connectTimeoutMs: 1000 }]],
]

/** Release whatever a call returned (persistences, intelligence) so nothing lingers. */
async function release(v) {
  if (v && typeof v === 'object') {
    if (typeof v.close === 'function') await v.close().catch(() => {})
    if (typeof v.dispose === 'function') await v.dispose().catch?.(() => {})
  }
}

async function report(t, names) {
  for (const name of names) {
    await t.test(name, () => assertClean(name))
  }
}

test(`every export: ${ROUNDS} seeded hostile calls each, every failure one of ours`, async (t) => {
  const r = prng(SEED)
  for (const [name, valid] of ENTRIES) {
    const fn = prism[name]
    assert.equal(typeof fn, 'function', name)
    for (let i = 0; i < ROUNDS; i++) {
      const args = valid.map((v) => arg(r, v))
      if (r.next() < 0.1) args.length = r.int(args.length + 1)
      // A persistence is only constructed and closed here: no random host is dialled.
      await release(await check(name, args, () => fn(...args)))
    }
  }
  await report(t, ENTRIES.map(([name]) => name))
})

test(`classes: new LanguageIntelligence, new LspFrameReader and its push, ${ROUNDS} calls each`, async (t) => {
  const r = prng(SEED + 1)
  for (let i = 0; i < ROUNDS; i++) {
    const a = arg(r, { rootUri: 'file:///ws', servers: [] })
    await release(await check('new LanguageIntelligence', [a], () => new prism.LanguageIntelligence(a)))
    const m = arg(r, { maxMessageBytes: 1024 })
    const reader = await check('new LspFrameReader', [m], () => new prism.LspFrameReader(m))
    const good = new prism.LspFrameReader(1 << 16)
    const chunk = r.next() < 0.5 ? hostile(r) : Buffer.from(`Content-Length: ${r.int(40)}\r\n\r\n${hostileString(r).slice(0, 100)}`)
    for (const rd of [reader, good]) if (rd) await check('LspFrameReader.push', [chunk], () => rd.push(chunk))
  }
  await report(t, ['new LanguageIntelligence', 'new LspFrameReader', 'LspFrameReader.push'])
})

test(`the artifact service over the memory and SQLite stores, and the stores: ${ROUNDS} hostile calls per method`, async (t) => {
  const r = prng(SEED + 2)
  const sqlite = prism.createSqlitePersistence({ filename: join(dir, 'service.db') })
  const methods = new Set()
  try {
    for (const store of [prism.createMemoryCheckpointStore(), sqlite.checkpoints]) {
      const svc = prism.createArtifactService(store, { redactor: prism.createSecretRedactor(['secret-1']), linkSecret: LINK_SECRET })
      await svc.attach({ ownership, identity, threadId: 't1', id: 'a1', uri: 'https://x/1', mime: 'm', hash: 'h' })
      const ref = { ownership, threadId: 't1', artifactId: 'a1' }
      const valid = {
        attach: { ownership, identity, threadId: 't1', id: 'a2', uri: 'https://x/2', mime: 'm', hash: 'h', citations: [{ uri: 'https://c', sourceId: 's' }], preview: { a: 1 } },
        list: { ownership, threadId: 't1', limit: 5 },
        get: ref,
        revise: { ...ref, uri: 'https://x/3', hash: 'h3' },
        compare: { ...ref, from: 1, to: 2 },
        approve: { ...ref, version: 1, reviewer: 'user:r' },
        reject: { ...ref, version: 2, reviewer: 'user:r', note: 'n' },
        lastValidated: ref,
        deliveryLink: { ...ref, ttlSeconds: 60 },
      }
      const cp = { namespace: 'ns', key: 'k', version: 1, userId: 'u', value: { a: 1 } }
      const storeValid = {
        saveCheckpoint: cp,
        loadCheckpoint: { namespace: 'ns', key: 'k', userId: 'u' },
        listCheckpoints: { namespace: 'ns', limit: 3 },
        deleteCheckpoint: { namespace: 'ns', key: 'k', userId: 'u' },
      }
      for (let i = 0; i < ROUNDS; i++) {
        for (const [m, input] of Object.entries(valid)) {
          const a = arg(r, input)
          methods.add(`service.${m}`)
          await check(`service.${m}`, [a], () => svc[m](a))
        }
        for (const [m, input] of Object.entries(storeValid)) {
          const a = arg(r, input)
          methods.add(`store.${m}`)
          await check(`store.${m}`, [a], () => store[m](a))
        }
      }
    }
  } finally {
    await sqlite.close()
  }
  await report(t, [...methods])
})
