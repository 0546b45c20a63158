// The artifact review service rules, through the public API, on every store kind.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  createArtifactService,
  createSecretRedactor,
  verifyArtifactDeliveryLink,
  citationBindingDigest,
  approvalEvidenceIntact,
  artifactApprovalState,
  ArtifactError,
} from '../index.mjs'
import { storeKinds, LINK_SECRET, ownership, identity, isReason } from './fixtures/artifact-stores.mjs'

const base = { uri: 'https://blob.example/doc', mime: 'text/markdown', hash: 'sha256:aaa' }

for (const kind of storeKinds()) {
  const setup = (options = {}) => {
    const opened = kind.open()
    const svc = createArtifactService(opened.store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET, ...options })
    return { ...opened, svc }
  }
  const ref = (id) => ({ ownership, threadId: 'thread-1', artifactId: id })

  test(`[${kind.name}] attach: revision 1, pending, idempotent get-or-create with an explicit id`, async (t) => {
    const { svc, store, close } = setup()
    t.after(close)
    const rec = await svc.attach({ ownership, identity: identity(), threadId: 'thread-1', id: 'art_1', ...base })
    assert.equal(rec.id, 'art_1')
    assert.equal(rec.state, 'pending')
    assert.equal(rec.latestVersion, 1)
    assert.equal(rec.revisions.length, 1)
    assert.equal(rec.revisions[0].version, 1)
    assert.equal(rec.revisions[0].createdBy, 'user:user-1')
    assert.equal('lastValidatedVersion' in rec, false, 'optional fields are absent, never null')
    const again = await svc.attach({ ownership, threadId: 'thread-1', id: 'art_1', uri: 'https://other', mime: 'text/plain', hash: 'h2' })
    assert.deepEqual(again, rec)
    const cp = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:art_1', ...ownership })
    assert.equal(cp.version, 1, 'the second attach did not write')
    assert.deepEqual(cp.value, rec)
    const generated = await svc.attach({ ownership, threadId: 'thread-1', ...base })
    assert.match(generated.id, /^art_[0-9a-f]{24}$/)
  })

  test(`[${kind.name}] concurrent attaches of one explicit id create it once and all return it`, async (t) => {
    const events = []
    const { svc, close } = setup({ onDecision: (e) => events.push(e) })
    t.after(close)
    const all = await Promise.all(
      Array.from({ length: 8 }, (_, i) => svc.attach({ ownership, threadId: 'thread-1', id: 'same', ...base, changeNote: `caller ${i}` })),
    )
    for (const rec of all) assert.deepEqual(rec, all[0])
    assert.equal(events.filter((e) => e.type === 'artifact_attached').length, 1)
    assert.equal((await svc.list({ ownership, threadId: 'thread-1' })).items.length, 1)
  })

  test(`[${kind.name}] ids are validated (invalid_id)`, async (t) => {
    const { svc, close } = setup()
    t.after(close)
    for (const bad of ['', 'a:b', 'a/b', 'a b', 'x'.repeat(129), '../etc']) {
      await assert.rejects(svc.attach({ ownership, threadId: 'thread-1', id: bad, ...base }), isReason('invalid_id'), bad)
      await assert.rejects(svc.attach({ ownership, threadId: bad, ...base }), isReason('invalid_id'), bad)
      await assert.rejects(svc.get({ ownership, threadId: 'thread-1', artifactId: bad }), isReason('invalid_id'), bad)
    }
  })

  test(`[${kind.name}] revise inherits the previous MIME and resets review to pending`, async (t) => {
    const { svc, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
    await svc.approve({ ...ref('a'), identity: identity(), version: 1 })
    const rec = await svc.revise({ ...ref('a'), uri: 'https://blob.example/doc-v2', hash: 'sha256:bbb' })
    assert.equal(rec.revisions[1].mime, 'text/markdown')
    assert.equal(rec.state, 'pending')
    assert.equal(rec.latestVersion, 2)
    assert.equal(rec.lastValidatedVersion, 1)
    const explicit = await svc.revise({ ...ref('a'), uri: 'https://blob.example/doc-v3', hash: 'sha256:ccc', mime: 'text/html' })
    assert.equal(explicit.revisions[2].mime, 'text/html')
  })

  test(`[${kind.name}] compare takes exactly two distinct revisions`, async (t) => {
    const { svc, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base, citations: [{ uri: 'https://src/1' }] })
    await svc.revise({ ...ref('a'), uri: 'https://blob.example/doc-v2', hash: 'sha256:bbb' })
    assert.deepEqual(await svc.compare({ ...ref('a'), from: 1, to: 2 }), {
      artifactId: 'a',
      from: 1,
      to: 2,
      changed: { hash: true, mime: false, uri: true, citations: true },
    })
    await assert.rejects(svc.compare({ ...ref('a'), from: 2, to: 2 }), isReason('invalid_input'))
    await assert.rejects(svc.compare({ ...ref('a'), from: 1 }), isReason('invalid_input'))
    await assert.rejects(svc.compare({ ...ref('a'), from: 1, to: 3 }), isReason('not_found'))
  })

  test(`[${kind.name}] approve advances lastValidated, replaces the decision on its version, stamps evidenceDigest; reject keeps lastValidated`, async (t) => {
    const { svc, close } = setup()
    t.after(close)
    const citations = [{ uri: 'https://src/1', sourceId: 's1', contentHash: 'c1', span: { start: 0, end: 4 }, support: 0.7 }]
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base, citations })
    await svc.revise({ ...ref('a'), uri: 'https://blob.example/doc-v2', hash: 'sha256:bbb' })
    let rec = await svc.approve({ ...ref('a'), version: 1, reviewer: 'user:alice' })
    assert.equal(rec.lastValidatedVersion, 1)
    assert.equal(rec.approvals[0].evidenceDigest, citationBindingDigest(citations))
    assert.equal(approvalEvidenceIntact(rec), true)
    rec = await svc.approve({ ...ref('a'), version: 2, identity: identity() })
    assert.equal(rec.lastValidatedVersion, 2)
    assert.equal(rec.state, 'approved')
    assert.equal(rec.approvals[1].reviewer, 'user:user-1')
    assert.equal(rec.approvals[1].evidenceDigest, citationBindingDigest([]))
    rec = await svc.approve({ ...ref('a'), version: 2, reviewer: 'user:carol', note: 'again' })
    assert.equal(rec.approvals.length, 2, 'a decision on the same version replaces the earlier one')
    assert.equal(rec.approvals[1].reviewer, 'user:carol')
    rec = await svc.approve({ ...ref('a'), version: 1, reviewer: 'user:dave' })
    assert.equal(rec.lastValidatedVersion, 2, 'approving an older revision never moves lastValidated back')
    await svc.revise({ ...ref('a'), uri: 'https://blob.example/doc-v3', hash: 'sha256:ccc' })
    rec = await svc.reject({ ...ref('a'), version: 3, reviewer: 'user:erin', note: 'needs work' })
    assert.equal(rec.state, 'rejected')
    assert.equal(rec.lastValidatedVersion, 2, 'reject never clears last-validated')
    assert.equal('evidenceDigest' in rec.approvals[2], false)
    assert.equal(artifactApprovalState(rec), 'rejected')
    const lv = await svc.lastValidated(ref('a'))
    assert.equal(lv.version, 2)
    assert.equal(lv.uri, 'https://blob.example/doc-v2')
  })

  test(`[${kind.name}] lastValidated fails closed before any approval`, async (t) => {
    const { svc, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
    await assert.rejects(svc.lastValidated(ref('a')), isReason('not_validated'))
    await svc.reject({ ...ref('a'), version: 1, reviewer: 'user:r' })
    await assert.rejects(svc.lastValidated(ref('a')), isReason('not_validated'))
  })

  test(`[${kind.name}] reviewer ref from identity or an explicit bounded reviewer; refused with neither`, async (t) => {
    const { svc, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
    await assert.rejects(svc.approve({ ...ref('a'), version: 1 }), isReason('invalid_input'))
    await assert.rejects(svc.approve({ ...ref('a'), version: 1, reviewer: 'x'.repeat(257) }), isReason('invalid_input'))
    await assert.rejects(svc.approve({ ...ref('a'), version: 1, reviewer: '' }), isReason('invalid_input'))
    const rec = await svc.approve({ ...ref('a'), version: 1, identity: identity({ principal: { kind: 'agent', id: 'bot-7' } }) })
    assert.equal(rec.approvals[0].reviewer, 'agent:bot-7')
    const explicit = await svc.approve({ ...ref('a'), version: 1, identity: identity(), reviewer: 'service:ci' })
    assert.equal(explicit.approvals[0].reviewer, 'service:ci')
  })

  test(`[${kind.name}] identity refused when unverified, expired, revoked or conflicting with ownership`, async (t) => {
    const { svc, store, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
    const before = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:a', ...ownership })
    for (const bad of [
      identity({ verified: false }),
      identity({ expiresAt: '2001-01-01T00:00:00Z' }),
      identity({ expiresAt: Date.now() - 1000 }),
      identity({ revokedAt: '2020-01-01T00:00:00Z' }),
      identity({ tenantId: 't2' }),
      identity({ userId: 'u2' }),
    ]) {
      await assert.rejects(svc.approve({ ...ref('a'), identity: bad, version: 1 }), isReason('ownership'), JSON.stringify(bad))
    }
    const after = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:a', ...ownership })
    assert.deepEqual(after, before)
    const ok = await svc.get({ ...ref('a'), identity: identity({ expiresAt: '2999-01-01T00:00:00Z' }) })
    assert.equal(ok.id, 'a')
  })

  test(`[${kind.name}] cross-owner access is not_found and changes nothing`, async (t) => {
    const { svc, store, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
    const before = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:a', ...ownership })
    const other = { ownership: { tenantId: 't1', userId: 'u2' }, threadId: 'thread-1', artifactId: 'a' }
    await assert.rejects(svc.get(other), isReason('not_found'))
    await assert.rejects(svc.revise({ ...other, uri: 'https://x', hash: 'h' }), isReason('not_found'))
    await assert.rejects(svc.approve({ ...other, version: 1, reviewer: 'user:x' }), isReason('not_found'))
    await assert.rejects(svc.reject({ ...other, version: 1, reviewer: 'user:x' }), isReason('not_found'))
    await assert.rejects(svc.compare({ ...other, from: 1, to: 2 }), isReason('not_found'))
    await assert.rejects(svc.lastValidated(other), isReason('not_found'))
    await assert.rejects(svc.deliveryLink(other), isReason('not_found'))
    assert.deepEqual((await svc.list({ ownership: other.ownership, threadId: 'thread-1' })).items, [])
    assert.deepEqual(await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:a', ...ownership }), before)
    // The same id under another owner is another key (stores scope keys by owner): its own
    // record, ours untouched.
    const theirs = await svc.attach({ ownership: other.ownership, threadId: 'thread-1', id: 'a', ...base, uri: 'https://theirs' })
    assert.deepEqual([theirs.id, theirs.userId, theirs.revisions[0].uri], ['a', 'u2', 'https://theirs'])
    assert.deepEqual(await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:a', ...ownership }), before)
  })

  test(`[${kind.name}] local filesystem references are unsafe_uri in uri and citations`, async (t) => {
    const { svc, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
    for (const uri of ['file:///etc/passwd', 'FILE:/x', '/home/me/doc.md', 'C:\\Users\\me\\doc.md', 'c:/Users/me/doc.md', '\\\\server\\share\\doc', '//server/share/doc', '~/doc.md']) {
      await assert.rejects(svc.attach({ ownership, threadId: 'thread-1', ...base, uri }), isReason('unsafe_uri'), uri)
      await assert.rejects(svc.revise({ ...ref('a'), uri, hash: 'h' }), isReason('unsafe_uri'), uri)
      await assert.rejects(svc.attach({ ownership, threadId: 'thread-1', ...base, citations: [{ uri }] }), isReason('unsafe_uri'), uri)
    }
    assert.equal((await svc.get(ref('a'))).revisions.length, 1)
  })

  test(`[${kind.name}] list is thread- and owner-scoped, paged by the page cap`, async (t) => {
    const { svc, close } = setup({ limits: { listPageLimit: 2 } })
    t.after(close)
    for (const id of ['c', 'a', 'b']) await svc.attach({ ownership, threadId: 'thread-1', id, ...base })
    await svc.attach({ ownership, threadId: 'thread-10', id: 'z', ...base })
    await svc.attach({ ownership: { tenantId: 't9' }, threadId: 'thread-1', id: 'y', ...base })
    const p1 = await svc.list({ ownership, threadId: 'thread-1', limit: 100 })
    assert.equal(p1.items.length, 2)
    assert.equal(typeof p1.nextCursor, 'string')
    const p2 = await svc.list({ ownership, threadId: 'thread-1', cursor: p1.nextCursor })
    assert.deepEqual([...p1.items, ...p2.items].map((r) => r.id), ['a', 'b', 'c'])
    assert.equal('nextCursor' in p2, false)
  })

  test(`[${kind.name}] deliveryLink defaults to last validated, else latest; links verify and expire`, async (t) => {
    const { svc, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
    await svc.revise({ ...ref('a'), uri: 'https://blob.example/doc-v2', hash: 'sha256:bbb' })
    let d = await svc.deliveryLink(ref('a'))
    assert.equal(d.token.version, 2, 'latest when nothing is validated')
    await svc.approve({ ...ref('a'), version: 1, reviewer: 'user:r' })
    d = await svc.deliveryLink(ref('a'))
    assert.equal(d.token.version, 1, 'last validated')
    assert.deepEqual(Object.keys(d.token), ['artifactId', 'threadId', 'version', 'tenantId', 'userId', 'issuedAt', 'expiresAt'])
    assert.deepEqual(Object.keys(d), ['link', 'token'])
    assert.deepEqual(verifyArtifactDeliveryLink(d.link, LINK_SECRET), d.token)
    assert.equal(Date.parse(d.token.expiresAt) - Date.parse(d.token.issuedAt), 300_000)
    assert.throws(() => verifyArtifactDeliveryLink(d.link, LINK_SECRET, undefined, Date.parse(d.token.expiresAt)), isReason('link_expired'))
    const short = await svc.deliveryLink({ ...ref('a'), version: 2, ttlSeconds: 60 })
    assert.equal(short.token.version, 2)
    for (const ttlSeconds of [301, 0, 1.5, '60']) {
      await assert.rejects(svc.deliveryLink({ ...ref('a'), ttlSeconds }), RangeError, `ttlSeconds ${ttlSeconds}`)
    }
    await assert.rejects(svc.deliveryLink({ ...ref('a'), version: 9 }), isReason('not_found'))
  })

  test(`[${kind.name}] onDecision receives redacted events, is awaited, and a throw is typed after the durable save`, async (t) => {
    const events = []
    let fail = false
    const { svc, close } = setup({
      redactor: createSecretRedactor(['s3cr3t-token']),
      onDecision: async (e) => {
        await new Promise((r) => setTimeout(r, 5))
        if (fail) throw new Error('audit sink down')
        events.push(e)
      },
    })
    t.after(close)
    await svc.attach({ ownership, identity: identity({ principal: { kind: 'user', id: 'alice-s3cr3t-token' } }), threadId: 'thread-1', id: 'a', ...base })
    assert.equal(events.length, 1, 'awaited before attach resolved')
    await svc.revise({ ...ref('a'), uri: 'https://blob.example/doc-v2', hash: 'sha256:bbb' })
    await svc.approve({ ...ref('a'), version: 2, reviewer: 'user:s3cr3t-token' })
    await svc.reject({ ...ref('a'), version: 1, reviewer: 'user:bob' })
    await svc.get(ref('a'))
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base }) // idempotent: no event
    assert.deepEqual(events.map((e) => e.type), ['artifact_attached', 'artifact_revised', 'artifact_approved', 'artifact_rejected'])
    assert.equal(events[0].actor, 'user:alice-[REDACTED]')
    assert.equal(events[2].reviewer, 'user:[REDACTED]')
    assert.equal(events[2].state, 'approved')
    assert.deepEqual(Object.keys(events[0]), ['type', 'artifactId', 'threadId', 'version', 'actor', 'timestamp', 'tenantId', 'userId'])
    assert.deepEqual(Object.keys(events[3]), ['type', 'artifactId', 'threadId', 'version', 'reviewer', 'timestamp', 'tenantId', 'userId', 'state'])
    assert.equal(events[3].version, 1)
    assert.ok(!JSON.stringify(events).includes('s3cr3t-token'))
    fail = true
    const err = await svc.approve({ ...ref('a'), version: 1, reviewer: 'user:carol' }).then(
      () => assert.fail('must reject'),
      (e) => e,
    )
    assert.ok(err instanceof ArtifactError)
    assert.equal(err.committed, true)
    assert.equal(err.cause.message, 'audit sink down')
    assert.equal(err.record.approvals[0].reviewer, 'user:carol')
    fail = false
    const rec = await svc.get(ref('a'))
    assert.equal(rec.approvals[0].reviewer, 'user:carol', 'the decision was durably saved before onDecision ran')
  })

  test(`[${kind.name}] an AbortSignal is honoured before and between store calls`, async (t) => {
    const { svc, store, close } = setup()
    t.after(close)
    await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
    const aborted = AbortSignal.abort(new Error('stop'))
    await assert.rejects(svc.get({ ...ref('a'), signal: aborted }), (e) => e.message === 'stop')
    await assert.rejects(svc.approve({ ...ref('a'), version: 1, reviewer: 'user:r', signal: aborted }), (e) => e.message === 'stop')
    assert.equal((await svc.get(ref('a'))).approvals.length, 0)
    await assert.rejects(svc.get({ ...ref('a'), signal: 'nope' }), isReason('invalid_input'))
    const cp = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:a', ...ownership })
    assert.equal(cp.version, 1)
  })
}

test('an abort between the load and the save persists nothing (host store pauses the load)', async () => {
  const { createMapStore } = await import('./fixtures/map-store.mjs')
  const inner = createMapStore()
  const ac = new AbortController()
  let abortOnLoad = false
  const store = {
    saveCheckpoint: (i) => inner.saveCheckpoint(i),
    listCheckpoints: (i) => inner.listCheckpoints(i),
    deleteCheckpoint: (i) => inner.deleteCheckpoint(i),
    async loadCheckpoint(i) {
      const r = await inner.loadCheckpoint(i)
      if (abortOnLoad) ac.abort(new Error('user left'))
      return r
    },
  }
  const svc = createArtifactService(store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET })
  await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
  const saves = inner.calls.filter((c) => c === 'save').length
  abortOnLoad = true
  await assert.rejects(svc.approve({ ownership, threadId: 'thread-1', artifactId: 'a', version: 1, reviewer: 'user:r', signal: ac.signal }), (e) => e.message === 'user left')
  assert.equal(inner.calls.filter((c) => c === 'save').length, saves, 'no save after the abort')
  abortOnLoad = false
  assert.equal((await svc.get({ ownership, threadId: 'thread-1', artifactId: 'a' })).approvals.length, 0)
})

test('a host store conflict is a retryable conflict; a store failure before commit persists nothing', async () => {
  const { createMapStore } = await import('./fixtures/map-store.mjs')
  const inner = createMapStore()
  let mode = 'ok'
  const store = {
    loadCheckpoint: (i) => inner.loadCheckpoint(i),
    listCheckpoints: (i) => inner.listCheckpoints(i),
    deleteCheckpoint: (i) => inner.deleteCheckpoint(i),
    async saveCheckpoint(i) {
      if (mode === 'conflict') {
        const e = new Error('someone else wrote first')
        e.code = 'ERR_PRISM_CHECKPOINT_CONFLICT'
        throw e
      }
      if (mode === 'broken') throw new Error('disk full')
      return inner.saveCheckpoint(i)
    },
  }
  const svc = createArtifactService(store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET })
  await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...base })
  const before = JSON.stringify([...inner.map.values()])
  mode = 'conflict'
  await assert.rejects(svc.approve({ ownership, threadId: 'thread-1', artifactId: 'a', version: 1, reviewer: 'user:r' }), isReason('conflict'))
  mode = 'broken'
  await assert.rejects(svc.revise({ ownership, threadId: 'thread-1', artifactId: 'a', uri: 'https://x', hash: 'h' }), (e) => e instanceof Error)
  assert.equal(JSON.stringify([...inner.map.values()]), before)
  mode = 'ok'
  const rec = await svc.approve({ ownership, threadId: 'thread-1', artifactId: 'a', version: 1, reviewer: 'user:r' })
  assert.equal(rec.lastValidatedVersion, 1, 'the retry succeeds')
})
