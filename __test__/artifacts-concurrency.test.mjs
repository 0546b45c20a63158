// 32 concurrent reviewers deciding different versions of one artifact, retrying on
// `conflict`: every decision is present exactly once at the end, on every store kind.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createArtifactService, createSecretRedactor } from '../index.mjs'
import { storeKinds, LINK_SECRET, ownership } from './fixtures/artifact-stores.mjs'

const REVIEWERS = 32

for (const kind of storeKinds()) {
  test(`[${kind.name}] ${REVIEWERS} concurrent reviewers with retry on conflict: every decision exactly once`, async (t) => {
    const { store, close } = kind.open()
    t.after(close)
    const svc = createArtifactService(store, {
      redactor: createSecretRedactor([]),
      linkSecret: LINK_SECRET,
      limits: { recordBytes: 64 * 1024 },
    })
    const ref = { ownership, threadId: 'thread-1', artifactId: 'a' }
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', uri: 'https://blob.example/v1', mime: 'text/plain', hash: 'sha256:1' })
    for (let v = 2; v <= REVIEWERS; v++) await svc.revise({ ...ref, uri: `https://blob.example/v${v}`, hash: `sha256:${v}` })

    let conflicts = 0
    const decide = async (version) => {
      const op = version % 4 === 0 ? 'reject' : 'approve'
      for (let attempt = 0; ; attempt++) {
        try {
          return await svc[op]({ ...ref, version, reviewer: `user:r${version}`, note: `attempt ${attempt}` })
        } catch (e) {
          if (e.reason !== 'conflict') throw e
          conflicts++
          await new Promise((r) => setImmediate(r))
        }
      }
    }
    await Promise.all(Array.from({ length: REVIEWERS }, (_, i) => decide(i + 1)))

    const rec = await svc.get(ref)
    assert.equal(rec.approvals.length, REVIEWERS)
    for (let v = 1; v <= REVIEWERS; v++) {
      const mine = rec.approvals.filter((a) => a.version === v)
      assert.equal(mine.length, 1, `version ${v} decided exactly once`)
      assert.equal(mine[0].reviewer, `user:r${v}`)
      assert.equal(mine[0].state, v % 4 === 0 ? 'rejected' : 'approved')
    }
    assert.equal(rec.lastValidatedVersion, REVIEWERS - 1, 'the highest approved version')
    const cp = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:a', ...ownership })
    assert.equal(cp.version, REVIEWERS + REVIEWERS, 'one save per attach/revise and per decision: no lost or extra writes')
    t.diagnostic(`conflicts retried: ${conflicts}`)
  })
}

// Issue 13: over SQLite and PostgreSQL, revise, approve and reject replace a record from
// the persistence's memory of its own last write of it, without a read. Another
// persistence of the same database (another process alike) writing in between is seen
// as a read would see it: its revision is there to approve, and a record it deleted and
// wrote again at the same version (another title) is the one decided, never overwritten
// with the remembered one.
for (const kind of storeKinds().filter((k) => k.databases)) {
  test(`[${kind.name}] a record another persistence of the database changed is decided as stored, not as remembered`, async (t) => {
    const { store, second, close } = kind.open()
    const other = second()
    t.after(async () => {
      await other.close()
      await close()
    })
    const options = { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET }
    const a = createArtifactService(store, options)
    const b = createArtifactService(other.store, options)
    const ref = { ownership, threadId: 'thread-1', artifactId: 'doc' }
    await a.attach({ ownership, threadId: 'thread-1', id: 'doc', uri: 'https://blob.example/v1', mime: 'text/plain', hash: 'sha256:1' })
    await b.revise({ ...ref, uri: 'https://blob.example/v2', hash: 'sha256:2' })
    const approved = await a.approve({ ...ref, version: 2, reviewer: 'user:a' })
    assert.equal(approved.lastValidatedVersion, 2)
    assert.deepEqual(approved.revisions.map((r) => r.hash), ['sha256:1', 'sha256:2'])

    const key = { namespace: 'prism.artifact', key: 'thread-1:doc', ...ownership }
    const cp = await other.store.loadCheckpoint(key)
    assert.equal(cp.version, 3)
    assert.equal(await other.store.deleteCheckpoint(key), true)
    for (let v = 1; v <= cp.version; v++) {
      await other.store.saveCheckpoint({ ...key, version: v, expectedVersion: v - 1, value: { ...cp.value, title: 'theirs' }, category: 'artifact' })
    }
    const rejected = await a.reject({ ...ref, version: 2, reviewer: 'user:a' })
    assert.equal(rejected.title, 'theirs')
    assert.equal(rejected.lastValidatedVersion, undefined)
    const now = await other.store.loadCheckpoint(key)
    assert.equal(now.version, 4)
    assert.equal(now.value.title, 'theirs')
    assert.equal(now.value.state, 'rejected')
  })
}

// The same race split over two persistences of one database (two processes alike), where
// each one's remembered writes go stale under the other's: every decision exactly once,
// and exactly one write per decision.
for (const kind of storeKinds().filter((k) => k.databases)) {
  test(`[${kind.name}] ${REVIEWERS} reviewers over two persistences of one database: every decision exactly once`, async (t) => {
    const { store, second, close } = kind.open()
    const other = second()
    t.after(async () => {
      await other.close()
      await close()
    })
    const options = { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET, limits: { recordBytes: 64 * 1024 } }
    const services = [createArtifactService(store, options), createArtifactService(other.store, options)]
    const ref = { ownership, threadId: 'thread-1', artifactId: 'a' }
    await services[0].attach({ ownership, threadId: 'thread-1', id: 'a', uri: 'https://blob.example/v1', mime: 'text/plain', hash: 'sha256:1' })
    for (let v = 2; v <= REVIEWERS; v++) await services[v % 2].revise({ ...ref, uri: `https://blob.example/v${v}`, hash: `sha256:${v}` })
    let conflicts = 0
    const decide = async (version) => {
      const svc = services[version % 2]
      const op = version % 4 === 0 ? 'reject' : 'approve'
      for (;;) {
        try {
          return await svc[op]({ ...ref, version, reviewer: `user:r${version}` })
        } catch (e) {
          if (e.reason !== 'conflict') throw e
          conflicts++
          await new Promise((r) => setImmediate(r))
        }
      }
    }
    await Promise.all(Array.from({ length: REVIEWERS }, (_, i) => decide(i + 1)))
    for (const svc of services) {
      const rec = await svc.get(ref)
      assert.deepEqual(rec.approvals.map((a) => [a.version, a.reviewer, a.state]), Array.from({ length: REVIEWERS }, (_, i) => [i + 1, `user:r${i + 1}`, (i + 1) % 4 === 0 ? 'rejected' : 'approved']))
      assert.equal(rec.lastValidatedVersion, REVIEWERS - 1)
    }
    const cp = await other.store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:a', ...ownership })
    assert.equal(cp.version, REVIEWERS + REVIEWERS, 'one write per attach/revise and per decision')
    t.diagnostic(`conflicts retried: ${conflicts}`)
  })
}

// Issue 13: attaches racing on one thread never leave it over its cap on any store; over
// the native stores the count and the create are one atomic step, so the cap
// is filled exactly (no racer withdraws), and a re-attach of a taken id answers its record
// even when the thread is full.
for (const kind of storeKinds()) {
  test(`[${kind.name}] racing attaches on one thread stop at its cap`, async (t) => {
    const { store, close } = kind.open()
    t.after(close)
    const svc = createArtifactService(store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET, limits: { artifactsPerThread: 5 } })
    const attach = (id) => svc.attach({ ownership, threadId: 'capped', id, uri: `https://blob.example/${id}`, mime: 'text/plain', hash: 'sha256:1' })
    const outcomes = await Promise.allSettled(Array.from({ length: 24 }, (_, i) => attach(`r${i}`)))
    for (const o of outcomes) if (o.status === 'rejected') assert.equal(o.reason.reason, 'too_many_artifacts', String(o.reason))
    const won = outcomes.filter((o) => o.status === 'fulfilled').map((o) => o.value.id)
    const listed = (await svc.list({ ownership, threadId: 'capped', limit: 50 })).items.map((r) => r.id)
    assert.deepEqual([...listed].sort(), [...won].sort(), 'every success is stored, every refusal left nothing')
    assert.ok(won.length <= 5, `${won.length} artifacts over a cap of 5`)
    if (kind.name !== 'host') assert.equal(won.length, 5, 'one atomic step fills the cap exactly')
    if (won.length === 5) {
      const again = await attach(won[0])
      assert.equal(again.id, won[0], 'a taken id answers its record when the thread is full')
      await assert.rejects(attach('late'), (e) => e.reason === 'too_many_artifacts')
    }
  })
}

// Each Node environment (the main thread, every worker) gets its own call entry and
// completion port: store and service calls in workers, on the memory store (settled at
// once) and on SQLite (completed later through the port), run beside the main thread's.
test('store and service calls run in worker threads beside the main thread, each on its own entry and port', async (t) => {
  const { Worker } = await import('node:worker_threads')
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const dir = mkdtempSync(join(tmpdir(), 'prism-workers-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const index = new URL('../index.js', import.meta.url).pathname
  const source = `
    const { parentPort, workerData } = require('node:worker_threads')
    const prism = require(${JSON.stringify(index)})
    ${work.toString()}
    work(prism, workerData).then((r) => parentPort.postMessage(r), (e) => parentPort.postMessage({ error: String(e && e.stack) }))
  `
  /** The same work in any environment: 60 attach+approve on memory and on a SQLite file. */
  async function work(prism, { tag, file }) {
    const counts = {}
    for (const kind of ['memory', 'sqlite']) {
      const persistence = kind === 'sqlite' ? prism.createSqlitePersistence({ filename: file }) : undefined
      const store = persistence ? persistence.checkpoints : prism.createMemoryCheckpointStore()
      const svc = prism.createArtifactService(store, { redactor: prism.createSecretRedactor([]), linkSecret: 'k'.repeat(32) })
      const ownership = { tenantId: tag }
      let approved = 0
      for (let i = 0; i < 60; i++) {
        const threadId = `t${Math.floor(i / 30)}`
        const rec = await svc.attach({ ownership, threadId, id: `a${i}`, uri: 'https://blob.example/x', mime: 'text/plain', hash: 'sha256:1' })
        const done = await svc.approve({ ownership, threadId, artifactId: rec.id, version: 1, reviewer: 'user:r' })
        if (done.state === 'approved') approved++
      }
      const listed = await svc.list({ ownership, threadId: 't1' })
      const loaded = await store.loadCheckpoint({ namespace: prism.ARTIFACT_CHECKPOINT_NAMESPACE, key: prism.artifactCheckpointKey('t0', 'a0'), ...ownership })
      counts[kind] = { approved, listed: listed.items.length, loaded: loaded !== null }
      if (persistence) await persistence.close()
    }
    return { tag, counts }
  }
  const inWorker = (n) =>
    new Promise((resolve, reject) => {
      const w = new Worker(source, { eval: true, workerData: { tag: `w${n}`, file: join(dir, `w${n}.db`) } })
      w.once('message', resolve)
      w.once('error', reject)
    })
  const prism = await import('../index.js')
  const results = await Promise.all([inWorker(1), inWorker(2), work(prism.default ?? prism, { tag: 'main', file: join(dir, 'main.db') })])
  const expected = { approved: 60, listed: 30, loaded: true }
  for (const r of results) {
    assert.equal(r.error, undefined, r.error)
    assert.deepEqual(r.counts, { memory: expected, sqlite: expected }, r.tag)
  }
})
