// Code written against @arnilo/prism runs here unchanged: a host CheckpointStore written
// to the reference's interface (one key space, cross-owner access rejected) backs the
// service and is called with exactly the reference's shapes; records the reference's
// service wrote load and work on every store; the helper exports behave as the reference's.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  createArtifactService,
  createArtifactHandler,
  createSecretRedactor,
  artifactApprovalState,
  artifactCheckpointKey,
  ARTIFACT_CHECKPOINT_NAMESPACE,
  CheckpointConflictError,
} from '../index.mjs'
import { storeKinds, LINK_SECRET, ownership, isReason } from './fixtures/artifact-stores.mjs'

const doc = { uri: 'https://blob.example/doc', mime: 'text/markdown', hash: 'sha256:aaa' }
const sameOwner = (a, b) => a.tenantId === b.tenantId && a.accountId === b.accountId && a.userId === b.userId

/** A host store as the reference's documentation has hosts write one: a class over a Map,
 *  one key space per (namespace, key), another owner's key rejected as a conflict. */
class ReferenceStyleStore {
  records = new Map()
  calls = []

  #id(input) {
    return `${input.namespace}\u0000${input.key}`
  }

  #owned(input) {
    const record = this.records.get(this.#id(input))
    if (record && !sameOwner(input, record)) throw new CheckpointConflictError('Checkpoint ownership mismatch')
    return record
  }

  async saveCheckpoint(input) {
    this.calls.push(['save', input])
    input.signal?.throwIfAborted()
    const existing = this.#owned(input)
    if (input.expectedVersion !== undefined && input.expectedVersion !== (existing?.version ?? 0)) {
      throw new CheckpointConflictError('Checkpoint compare-and-swap failed')
    }
    if (existing && input.version <= existing.version) throw new CheckpointConflictError('Stale checkpoint version')
    const now = new Date().toISOString()
    const { signal, expectedVersion, ...rest } = input
    const record = { ...structuredClone(rest), createdAt: existing?.createdAt ?? now, updatedAt: now }
    this.records.set(this.#id(input), record)
    return record
  }

  async loadCheckpoint(input) {
    this.calls.push(['load', input])
    return this.#owned(input) ?? null
  }

  async listCheckpoints(query = {}) {
    this.calls.push(['list', query])
    const items = [...this.records.values()]
      .filter((r) => (query.namespace === undefined || r.namespace === query.namespace) && r.key.startsWith(query.keyPrefix ?? ''))
      .filter((r) => ['tenantId', 'accountId', 'userId'].every((k) => query[k] === undefined || r[k] === query[k]))
    const offset = Number(query.cursor ?? 0)
    const page = items.slice(offset, offset + (query.limit ?? 100))
    return { items: page, ...(offset + page.length < items.length ? { nextCursor: String(offset + page.length) } : {}) }
  }

  async deleteCheckpoint(input) {
    this.calls.push(['delete', input])
    return this.#owned(input) ? this.records.delete(this.#id(input)) : false
  }
}

const service = (store, options = {}) => createArtifactService(store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET, ...options })

test('a host store written to the reference\'s interface is called with exactly the reference\'s shapes', async () => {
  const store = new ReferenceStyleStore()
  const svc = service(store)
  const controller = new AbortController()
  const signal = controller.signal
  await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...doc, signal })
  await svc.approve({ ownership, threadId: 'thread-1', artifactId: 'a', version: 1, reviewer: 'user:r', signal })
  await svc.list({ ownership, threadId: 'thread-1', limit: 5 })
  const shapes = store.calls.map(([op, input]) => [op, Object.fromEntries(Object.entries(input).map(([k, v]) => [k, k === 'value' ? typeof v : v]))])
  assert.deepEqual(shapes, [
    ['load', { namespace: 'prism.artifact', key: 'thread-1:a', tenantId: 't1', userId: 'u1', signal }],
    ['list', { namespace: 'prism.artifact', keyPrefix: 'thread-1:', tenantId: 't1', userId: 'u1', limit: 64, signal }],
    ['save', { namespace: 'prism.artifact', key: 'thread-1:a', tenantId: 't1', userId: 'u1', version: 1, expectedVersion: 0, value: 'object', category: 'artifact', signal }],
    ['list', { namespace: 'prism.artifact', keyPrefix: 'thread-1:', tenantId: 't1', userId: 'u1', limit: 65, signal }],
    ['load', { namespace: 'prism.artifact', key: 'thread-1:a', tenantId: 't1', userId: 'u1', signal }],
    ['save', { namespace: 'prism.artifact', key: 'thread-1:a', tenantId: 't1', userId: 'u1', version: 2, expectedVersion: 1, value: 'object', category: 'artifact', signal }],
    ['list', { namespace: 'prism.artifact', keyPrefix: 'thread-1:', tenantId: 't1', userId: 'u1', limit: 5 }],
  ])
  assert.ok(store.calls.every(([, input]) => input.signal === undefined || input.signal === signal), 'the caller\'s own AbortSignal')
  const stored = store.records.get('prism.artifact\u0000thread-1:a')
  assert.deepEqual([stored.version, stored.tenantId, stored.value.tenantId, stored.value.lastValidatedVersion], [2, 't1', 't1', 1])
  // An abort reaches the host store through the signal it was given.
  const aborting = new ReferenceStyleStore()
  const svc2 = service({
    saveCheckpoint: (i) => aborting.saveCheckpoint(i),
    listCheckpoints: (i) => aborting.listCheckpoints(i),
    deleteCheckpoint: (i) => aborting.deleteCheckpoint(i),
    async loadCheckpoint(i) {
      controller.abort(new Error('user left'))
      return aborting.loadCheckpoint(i)
    },
  })
  await assert.rejects(svc2.attach({ ownership, threadId: 'thread-1', id: 'b', ...doc, signal }), (e) => e.message === 'user left')
  assert.equal(aborting.calls.filter(([op]) => op === 'save').length, 0)
})

test('null and undefined are both a miss from a host store', async () => {
  for (const miss of [null, undefined]) {
    const inner = new ReferenceStyleStore()
    const svc = service({
      saveCheckpoint: (i) => inner.saveCheckpoint(i),
      listCheckpoints: (i) => inner.listCheckpoints(i),
      deleteCheckpoint: (i) => inner.deleteCheckpoint(i),
      loadCheckpoint: async (i) => (await inner.loadCheckpoint(i)) ?? miss,
    })
    await assert.rejects(svc.get({ ownership, threadId: 'thread-1', artifactId: 'nope' }), isReason('not_found'))
    assert.equal((await svc.attach({ ownership, threadId: 'thread-1', id: 'new', ...doc })).id, 'new')
  }
})

test('one key space: a cross-owner collision is answered exactly as not_found, over the API and over HTTP', async () => {
  const store = new ReferenceStyleStore()
  const svc = service(store)
  await svc.attach({ ownership, threadId: 'thread-1', id: 'taken', ...doc })
  const other = { tenantId: 't2' }
  const taken = await svc.attach({ ownership: other, threadId: 'thread-1', id: 'taken', ...doc }).catch((e) => e)
  const missing = await svc.get({ ownership: other, threadId: 'thread-1', artifactId: 'taken' }).catch((e) => e)
  assert.ok(isReason('not_found')(taken), String(taken))
  assert.equal(taken.message, missing.message, 'indistinguishable from a missing artifact')
  for (const op of ['get', 'lastValidated', 'deliveryLink']) {
    await assert.rejects(svc[op]({ ownership: other, threadId: 'thread-1', artifactId: 'taken' }), isReason('not_found'), op)
  }
  assert.equal((await svc.attach({ ownership: other, threadId: 'thread-1', id: 'free', ...doc })).tenantId, 't2', 'a free id still attaches')
  assert.equal(store.records.get('prism.artifact\u0000thread-1:taken').value.tenantId, 't1', 'the owner\'s record is untouched')

  const handler = createArtifactHandler({ service: svc, linkSecret: LINK_SECRET, authorize: () => ({ ownership: other }) })
  const post = (path, body) => handler(new Request(`https://x.test/prism/artifacts${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))
  const httpTaken = await post('/thread-1', { id: 'taken', ...doc })
  const httpMissing = await handler(new Request('https://x.test/prism/artifacts/thread-1/taken'))
  assert.deepEqual([httpTaken.status, await httpTaken.json()], [httpMissing.status, await httpMissing.json()])
  assert.equal(httpMissing.status, 404)
})

// Exactly what @arnilo/prism-server's service stores after attach, revise and approve.
const referenceRecord = {
  id: 'ref-1',
  threadId: 'thread-1',
  tenantId: 't1',
  userId: 'u1',
  title: 'Doc',
  revisions: [
    {
      version: 1, uri: 'https://blob.example/v1', mime: 'text/markdown', hash: 'sha256:a', size: 10, changeNote: 'first',
      producerRunId: 'run-1', citations: [{ uri: 'https://wiki.example/p', title: 'P', kind: 'web' }], createdAt: '2026-01-01T00:00:00.000Z',
    },
    { version: 2, uri: 'https://blob.example/v2', mime: 'text/markdown', hash: 'sha256:b', createdAt: '2026-01-02T00:00:00.000Z' },
  ],
  approvals: [{ version: 1, state: 'approved', reviewer: 'user:u1', note: 'ok', decidedAt: '2026-01-01T01:00:00.000Z' }],
  lastValidatedVersion: 1,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-02T00:00:00.000Z',
}

for (const kind of [...storeKinds(), { name: 'reference-style host', open: () => ({ store: new ReferenceStyleStore(), close() {} }) }]) {
  test(`[${kind.name}] a record written by the reference's service loads and works`, async (t) => {
    const { store, close } = kind.open()
    t.after(close)
    await store.saveCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:ref-1', ...ownership, version: 3, value: referenceRecord, category: 'artifact' })
    const svc = service(store)
    const ref = { ownership, threadId: 'thread-1', artifactId: 'ref-1' }
    const rec = await svc.get(ref)
    assert.deepEqual([rec.state, rec.latestVersion, rec.tenantId, rec.revisions[0].changeNote], ['pending', 2, 't1', 'first'])
    assert.equal(artifactApprovalState(rec), 'pending')
    assert.equal((await svc.lastValidated(ref)).producerRunId, 'run-1')
    assert.deepEqual((await svc.list({ ownership, threadId: 'thread-1' })).items.map((r) => r.id), ['ref-1'])
    const approved = await svc.approve({ ...ref, version: 2, reviewer: 'user:r' })
    assert.deepEqual([approved.state, approved.lastValidatedVersion, approved.approvals.length], ['approved', 2, 2])
    const revised = await svc.revise({ ...ref, uri: 'https://blob.example/v3', hash: 'sha256:c', changeNote: 'third' })
    assert.equal(revised.revisions[2].mime, 'text/markdown')
    const cp = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:ref-1', ...ownership })
    assert.equal(cp.version, 5, 'checkpoint versions continue from the reference\'s')
    assert.deepEqual(cp.value.revisions[0].citations, referenceRecord.revisions[0].citations)
    assert.equal((await svc.deliveryLink(ref)).token.version, 2)
  })
}

test('a record of prism-review 0.1 (nested ownership, note, producer) loads', async () => {
  const { store } = storeKinds()[0].open()
  const old = {
    id: 'old', threadId: 'thread-1', ownership, state: 'approved', latestVersion: 1,
    revisions: [{ version: 1, uri: 'https://x', mime: 'm', hash: 'h', note: 'n', producer: { runId: 'r1', agentId: 'a' }, createdAt: 'c' }],
    approvals: [], createdAt: 'c', updatedAt: 'c',
  }
  await store.saveCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:old', ...ownership, version: 1, value: old })
  const rec = await service(store).get({ ownership, threadId: 'thread-1', artifactId: 'old' })
  assert.deepEqual([rec.tenantId, rec.state, rec.revisions[0].changeNote, rec.revisions[0].producerRunId], ['t1', 'pending', 'n', 'r1'])
  assert.equal('ownership' in rec || 'note' in rec.revisions[0] || 'producer' in rec.revisions[0], false)
})

test('artifactApprovalState reads only revisions and approvals; the checkpoint key and namespace are the reference\'s', () => {
  const rev = (version) => ({ version, uri: `u${version}`, mime: 'text/plain', hash: `h${version}`, createdAt: 'c' })
  const decision = (version, state) => ({ version, state, reviewer: 'r', decidedAt: 'd' })
  const record = (revisions, approvals = []) => ({ id: 'a1', threadId: 't1', revisions, approvals, createdAt: 'c', updatedAt: 'c' })
  assert.equal(artifactApprovalState(record([])), 'pending')
  assert.equal(artifactApprovalState(record([rev(1)], [decision(1, 'approved')])), 'approved')
  assert.equal(artifactApprovalState(record([rev(1)], [decision(1, 'rejected')])), 'rejected')
  assert.equal(artifactApprovalState(record([rev(1), rev(2)], [decision(1, 'approved')])), 'pending')
  assert.equal(artifactApprovalState({ revisions: [{ version: 3 }], approvals: [{ version: 3, state: 'approved' }] }), 'approved')
  assert.throws(() => artifactApprovalState({ revisions: [] }), TypeError)
  assert.equal(ARTIFACT_CHECKPOINT_NAMESPACE, 'prism.artifact')
  assert.equal(artifactCheckpointKey('t1', 'a1'), 't1:a1')
  assert.notEqual(artifactCheckpointKey('t1', 'a1'), artifactCheckpointKey('t2', 'a1'))
  assert.throws(() => artifactCheckpointKey('t1'), TypeError)
})
