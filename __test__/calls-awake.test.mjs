// The event loop stays awake for a call that left the JS thread (js/calls.js, issue 13):
// only while exactly one call is outstanding and its operation lately answered within
// AWAKE_MS, and never in a way that holds timers back or keeps the process alive.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { createHook } from 'node:async_hooks'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSqlitePersistence, createArtifactService, createSecretRedactor, createLanguageIntelligence } from '../index.mjs'
import { workspace, fake } from './fixtures/lsp-helpers.mjs'

const dir = mkdtempSync(join(tmpdir(), 'prism-awake-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const ownership = { tenantId: 't' }
const LINK_SECRET = 'a-link-secret-of-enough-bytes'

/** Counts the turns js/calls.js schedules to keep the loop awake while `fn` runs. */
async function awakeTurns(fn) {
  let turns = 0
  const hook = createHook({
    init(_id, type, _trigger, resource) {
      if (type === 'Immediate' && resource?._onImmediate?.name === 'turnAwake') turns++
    },
  })
  hook.enable()
  try {
    await fn()
  } finally {
    hook.disable()
  }
  return turns
}

/** A host store over a Map whose every call answers after `ms` (a slow backend). */
function slowStore(ms) {
  const records = new Map()
  const later = (v) => new Promise((resolve) => setTimeout(() => resolve(v), ms))
  const id = (i) => `${i.namespace}\0${i.key}`
  return {
    async saveCheckpoint(i) {
      const now = new Date().toISOString()
      const rec = { namespace: i.namespace, key: i.key, version: i.version, value: i.value, ...(i.category ? { category: i.category } : {}), tenantId: i.tenantId, createdAt: now, updatedAt: now }
      records.set(id(i), rec)
      return later(structuredClone(rec))
    },
    async loadCheckpoint(i) {
      return later(records.has(id(i)) ? structuredClone(records.get(id(i))) : null)
    },
    async listCheckpoints() {
      return later({ items: [] })
    },
    async deleteCheckpoint(i) {
      return later(records.delete(id(i)))
    },
  }
}

test('sequential SQLite reads keep the loop awake, concurrent ones do not, and timers still fire', async () => {
  const p = createSqlitePersistence({ filename: join(dir, 'awake.sqlite') })
  try {
    const store = p.checkpoints
    await store.saveCheckpoint({ namespace: 'n', key: 'k', version: 1, value: { a: 1 }, tenantId: 't' })
    // One call at a time: each read's answer is awaited with the loop turning.
    const sequential = await awakeTurns(async () => {
      for (let i = 0; i < 20; i++) assert.equal((await store.loadCheckpoint({ namespace: 'n', key: 'k', tenantId: 't' })).version, 1)
    })
    assert.ok(sequential > 0, 'sequential reads kept the loop awake')
    // Many in flight: the loop sleeps as usual (at most the first call's turn, before the
    // others were started, was scheduled; the slow store below pins this down).
    const concurrent = await awakeTurns(async () => {
      const all = await Promise.all(Array.from({ length: 16 }, () => store.loadCheckpoint({ namespace: 'n', key: 'k', tenantId: 't' })))
      assert.equal(all.length, 16)
    })
    assert.ok(concurrent <= 1, `concurrent reads scheduled ${concurrent} awake turns`)
    // A timer due while a read is outstanding fires as usual: the loop is never held.
    let fired = false
    setTimeout(() => {
      fired = true
    }, 0)
    for (let i = 0; i < 50 && !fired; i++) await store.loadCheckpoint({ namespace: 'n', key: 'k', tenantId: 't' })
    assert.ok(fired)
  } finally {
    await p.close()
  }
})

test('an operation that answers slower than AWAKE_MS stops keeping the loop awake after its first call', async () => {
  const store = slowStore(5)
  const svc = createArtifactService(store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET })
  const rec = await svc.attach({ ownership, threadId: 'th', id: 'a1', uri: 'https://blob.example/a1', mime: 'text/markdown', hash: 'sha256:1' })
  // `get` has not run yet: its first call stays awake; the ones after it know it is slow.
  const first = await awakeTurns(() => svc.get({ ownership, threadId: 'th', artifactId: rec.id }))
  assert.ok(first > 0, 'the first call of an operation stays awake')
  const later = await awakeTurns(async () => {
    for (let i = 0; i < 5; i++) assert.equal((await svc.get({ ownership, threadId: 'th', artifactId: rec.id })).id, rec.id)
  })
  assert.equal(later, 0, 'calls of a slow operation leave the loop asleep')
  // Two calls of an operation a new service has not run (its code is warm): the first
  // stays awake until the second starts, then the loop sleeps while both wait (5 ms).
  const fresh = createArtifactService(store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET })
  const two = await awakeTurns(async () => {
    const got = await Promise.all([0, 1].map(() => fresh.get({ ownership, threadId: 'th', artifactId: rec.id })))
    assert.equal(got.length, 2)
  })
  assert.ok(two <= 1, `two outstanding calls scheduled ${two} awake turns`)
})

test('an operation measured slow is measured again after 15 calls that slept: 4 calls in a row with the loop awake', async () => {
  const svc = createArtifactService(slowStore(5), { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET })
  const rec = await svc.attach({ ownership, threadId: 'th', id: 'a1', uri: 'https://blob.example/a1', mime: 'text/markdown', hash: 'sha256:1' })
  // Per call, whether it kept the loop awake.
  const awakeOf = async (n) => {
    const out = []
    for (let i = 0; i < n; i++) {
      out.push((await awakeTurns(async () => assert.equal((await svc.get({ ownership, threadId: 'th', artifactId: rec.id })).id, rec.id))) > 0)
    }
    return out
  }
  const run = (awake, n) => Array.from({ length: n }, () => awake)
  // The first call is measured with the loop awake (5 ms: slow); the 15 after it sleep;
  // then 4 in a row stay awake to measure again (an operation that got faster is seen
  // again); still slow, the 15 after them sleep, and so on.
  assert.deepEqual(await awakeOf(1), [true], 'the first call stays awake')
  assert.deepEqual(await awakeOf(15), run(false, 15), 'the 15 calls after a measured slow one sleep')
  for (let round = 0; round < 2; round++) {
    assert.deepEqual(await awakeOf(4), run(true, 4), `round ${round}: 4 calls stay awake to measure again`)
    assert.deepEqual(await awakeOf(15), run(false, 15), `round ${round}: still slow, the next 15 sleep`)
  }
})

test('LanguageIntelligence calls never keep the loop awake, and one waiting does not stop sequential reads from doing so', async () => {
  const ws = workspace()
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  const li = createLanguageIntelligence({ workspaceRoot: ws, servers: { fake: fake({ slowMs: 300 }) } })
  const p = createSqlitePersistence({ filename: join(dir, 'awake-lsp.sqlite') })
  try {
    // The server answers hovers after 300 ms: warm it up (its start), then count.
    await li.syncDocument('a.ts')
    const lsp = await awakeTurns(async () => {
      for (let i = 0; i < 3; i++) assert.match((await li.hover({ file: 'a.ts', line: 0, character: 1 })).text, /hello/)
    })
    assert.equal(lsp, 0, `LSP calls scheduled ${lsp} awake turns`)
    const store = p.checkpoints
    await store.saveCheckpoint({ namespace: 'n', key: 'k', version: 1, value: { a: 1 }, tenantId: 't' })
    let hovered = false
    const pending = li.hover({ file: 'a.ts', line: 0, character: 1 }).then((h) => {
      hovered = true
      return h
    })
    const reads = await awakeTurns(async () => {
      for (let i = 0; i < 20; i++) assert.equal((await store.loadCheckpoint({ namespace: 'n', key: 'k', tenantId: 't' })).version, 1)
    })
    assert.equal(hovered, false, 'the hover was still waiting while the reads ran')
    assert.ok(reads > 0, 'sequential reads kept the loop awake beside a waiting LSP call')
    assert.match((await pending).text, /hello/)
  } finally {
    await p.close()
    await li.dispose()
  }
})
