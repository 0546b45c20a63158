// The work draft service through the public JS API, on every store kind (memory, a host
// JavaScript store written to the reference interface, SQLite, PostgreSQL when reachable).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as prism from '../index.mjs'
import { storeKinds } from './fixtures/artifact-stores.mjs'
import { mailDraft, ref, ownership, isReason, service } from './fixtures/drafts.mjs'

const { draftPayloadDigest, WorkDraftError } = prism

for (const kind of storeKinds()) {
  const open = (t, options) => {
    const k = kind.open()
    t.after(() => k.close())
    return { ...k, svc: service(k.store, options) }
  }

  test(`[${kind.name}] create: revision 1 bound to its JCS digest; explicit id is get-or-create, another payload is a conflict`, async (t) => {
    const { svc } = open(t)
    const d = await svc.create(mailDraft())
    assert.equal(d.version, 1)
    assert.equal(d.status, 'pending')
    assert.equal(d.latestRevision, 1)
    assert.equal(d.revisions[0].payloadDigest, draftPayloadDigest(mailDraft().payload))
    assert.equal(d.revisions[0].author, 'agent:planner')
    assert.deepEqual(await svc.create(mailDraft()), d)
    await assert.rejects(svc.create(mailDraft({ payload: { ...mailDraft().payload, subject: 'other' } })), isReason('conflict'))
    await assert.rejects(svc.create(mailDraft({ op: 'delete' })), isReason('conflict'))
    const page = await svc.list({ ownership, threadId: 'thread-1' })
    assert.deepEqual(page.items.map((x) => x.id), ['mail-1'])
  })

  test(`[${kind.name}] approve -> edit -> the old approval no longer lets the old payload execute`, async (t) => {
    const { svc } = open(t)
    await svc.create(mailDraft())
    const approved = await svc.decide({ ...ref, expectedVersion: 1, decision: 'approve', reviewer: 'user:rev' })
    assert.equal(approved.status, 'approved')
    const oldDigest = approved.revisions[0].payloadDigest
    const edit = { to: ['ann@example.test'], subject: 'Q3 plan', body: 'Shorter' }
    const edited = await svc.decide({ ...ref, expectedVersion: 2, decision: 'approve', modifiedArguments: edit, reviewer: 'user:rev' })
    assert.equal(edited.latestRevision, 2)
    assert.equal(edited.revisions[1].payloadDigest, draftPayloadDigest(edit))
    assert.ok(edited.approvals[0].invalidatedAt, 'the approval of revision 1 is invalidated')
    assert.deepEqual(
      { revision: edited.approvals[1].revision, payloadDigest: edited.approvals[1].payloadDigest, decision: edited.approvals[1].decision },
      { revision: 2, payloadDigest: draftPayloadDigest(edit), decision: 'approve' },
    )
    await assert.rejects(svc.claimExecution({ ...ref, expectedVersion: 3, payloadDigest: oldDigest }), isReason('not_approved'))
    const claimed = await svc.claimExecution({ ...ref, expectedVersion: 3, payloadDigest: draftPayloadDigest(edit), claimedBy: 'worker-1' })
    assert.equal(claimed.status, 'executing')
    assert.equal(claimed.execution.revision, 2)
    await assert.rejects(svc.claimExecution({ ...ref, expectedVersion: 4, payloadDigest: draftPayloadDigest(edit) }), isReason('already_executed'))
    await assert.rejects(svc.decide({ ...ref, expectedVersion: 4, decision: 'deny', reviewer: 'user:rev' }), isReason('already_executed'))
    const done = await svc.markExecuted({ ...ref, expectedVersion: 4, outcome: { messageId: 'm-1' } })
    assert.equal(done.status, 'executed')
    assert.deepEqual(done.execution.outcome, { messageId: 'm-1' })
    await assert.rejects(svc.markFailed({ ...ref, expectedVersion: 5, error: 'x' }), isReason('already_executed'))
  })

  test(`[${kind.name}] AG-UI editedArgs; editsRequireReapproval leaves the edit pending`, async (t) => {
    const { svc } = open(t, { editsRequireReapproval: true })
    await svc.create(mailDraft())
    const edit = { to: ['bob@example.test'], subject: 'Q3' }
    const d = await svc.decide({ ...ref, expectedVersion: 1, decision: 'approve', editedArgs: edit, reviewer: 'user:rev' })
    assert.equal(d.status, 'pending')
    assert.deepEqual(d.approvals, [])
    await assert.rejects(svc.claimExecution({ ...ref, expectedVersion: 2, payloadDigest: draftPayloadDigest(edit) }), isReason('not_approved'))
    const again = await svc.decide({ ...ref, expectedVersion: 2, decision: 'approve', reviewer: 'user:rev2' })
    assert.equal(again.status, 'approved')
    assert.equal(again.approvals[0].revision, 2)
  })

  test(`[${kind.name}] deny records a bounded reason; a denied draft cannot be claimed; deny with edits is malformed`, async (t) => {
    const { svc } = open(t)
    const d0 = await svc.create(mailDraft())
    await assert.rejects(
      svc.decide({ ...ref, expectedVersion: 1, decision: 'deny', modifiedArguments: { to: ['ann@example.test'], subject: 's' }, reviewer: 'u:r' }),
      isReason('malformed_edit'),
    )
    await assert.rejects(svc.decide({ ...ref, expectedVersion: 1, decision: 'deny', reason: 'x'.repeat(5000), reviewer: 'u:r' }), isReason('invalid_input'))
    const d = await svc.decide({ ...ref, expectedVersion: 1, decision: 'deny', reason: 'wrong audience', reviewer: 'u:r' })
    assert.equal(d.status, 'denied')
    assert.equal(d.approvals[0].reason, 'wrong audience')
    await assert.rejects(svc.claimExecution({ ...ref, expectedVersion: 2, payloadDigest: d0.revisions[0].payloadDigest }), isReason('not_approved'))
  })

  test(`[${kind.name}] ${16} concurrent deciders on one version: exactly one winner, no lost or duplicated revision`, async (t) => {
    const { svc } = open(t)
    await svc.create(mailDraft())
    for (let round = 1; round <= 3; round++) {
      const results = await Promise.allSettled(
        Array.from({ length: 16 }, (_, i) =>
          svc.decide({
            ...ref,
            expectedVersion: round,
            decision: 'approve',
            modifiedArguments: { to: ['ann@example.test'], subject: `round ${round} by ${i}` },
            reviewer: `user:r${i}`,
          }),
        ),
      )
      const wins = results.filter((r) => r.status === 'fulfilled')
      assert.equal(wins.length, 1, `round ${round}: exactly one winner`)
      for (const r of results) if (r.status === 'rejected') assert.ok(isReason('conflict')(r.reason), String(r.reason))
      const d = await svc.get(ref)
      assert.equal(d.version, round + 1)
      assert.equal(d.revisions.length, round + 1)
      assert.deepEqual(d.revisions.map((r) => r.revision), Array.from({ length: round + 1 }, (_, i) => i + 1))
      assert.equal(d.revisions[round].payload.subject, wins[0].value.revisions[round].payload.subject)
      assert.equal(d.approvals.filter((a) => !a.invalidatedAt).length, 1)
    }
  })
}

test('malformed edits fail closed and write nothing', async () => {
  const store = prism.createMemoryCheckpointStore()
  const svc = service(store)
  await svc.create(mailDraft())
  const base = { to: ['ann@example.test'], subject: 's' }
  const cyclic = { ...base }
  cyclic.self = cyclic
  const accessor = { ...base }
  Object.defineProperty(accessor, 'body', { get: () => 'x', enumerable: true })
  class Mail {
    constructor() {
      this.to = ['ann@example.test']
      this.subject = 's'
    }
  }
  let deep = { subject: 's' }
  for (let i = 0; i < 40; i++) deep = { k: deep }
  const cases = {
    array: [1],
    string: 'x',
    null: null,
    NaN: { ...base, n: NaN },
    Infinity: { ...base, n: Infinity },
    negativeZero: { ...base, n: -0 },
    BigInt: { ...base, n: 1n },
    undefined: { ...base, body: undefined },
    function: { ...base, body: () => 1 },
    cycle: cyclic,
    accessor,
    classInstance: new Mail(),
    protoKey: JSON.parse('{"to":["ann@example.test"],"subject":"s","__proto__":{"admin":true}}'),
    sparse: { ...base, cc: [, 'a'] }, // eslint-disable-line no-sparse-arrays
    tooDeep: deep,
    date: { ...base, when: new Date(0) },
  }
  for (const [name, edit] of Object.entries(cases)) {
    await assert.rejects(
      svc.decide({ ...ref, expectedVersion: 1, decision: 'approve', modifiedArguments: edit, reviewer: 'u:r' }),
      (e) => isReason('malformed_edit')(e) || assert.fail(`${name}: ${e.reason} ${e.message}`),
      name,
    )
  }
  await assert.rejects(
    svc.decide({ ...ref, expectedVersion: 1, decision: 'approve', modifiedArguments: base, editedArgs: base, reviewer: 'u:r' }),
    isReason('malformed_edit'),
  )
  const big = service(store, { limits: { payloadBytes: 256 } })
  await assert.rejects(
    big.decide({ ...ref, expectedVersion: 1, decision: 'approve', modifiedArguments: { ...base, body: 'x'.repeat(300) }, reviewer: 'u:r' }),
    isReason('payload_too_large'),
  )
  const d = await svc.get(ref)
  assert.equal(d.version, 1, 'nothing was written')
  assert.equal(d.revisions.length, 1)
})

test('schema violations, recipient escalation and immutable fields fail closed; messages name pointers, never values or addresses', async () => {
  const svc = service(prism.createMemoryCheckpointStore())
  await svc.create(mailDraft({ payload: { ...mailDraft().payload, share: { role: 'commenter' } } }))
  const decide = (modifiedArguments, extra = {}) =>
    svc.decide({ ...ref, expectedVersion: 1, decision: 'approve', modifiedArguments, reviewer: 'u:r', ...extra })
  const base = { to: ['ann@example.test'], subject: 's' }
  for (const [edit, reason, pointer] of [
    [{ ...base, subject: 31337 }, 'schema_violation', '/subject'],
    [{ to: ['ann@example.test'] }, 'schema_violation', '/subject'],
    [{ ...base, bcc: ['mallory@evil.test'] }, 'schema_violation', '/bcc'],
    [{ ...base, to: [] }, 'schema_violation', '/to'],
    [{ ...base, to: ['ann@example.test', 'mallory@evil.test'] }, 'recipient_escalation'],
    [{ ...base, cc: ['mallory@evil.test'] }, 'recipient_escalation'],
    [{ ...base, share: { role: 'editor' } }, 'recipient_escalation'],
    [{ ...base, op: 'delete' }, 'immutable_field'],
  ]) {
    const e = await decide(edit).then(
      () => assert.fail(`accepted ${JSON.stringify(edit)}`),
      (err) => err,
    )
    assert.ok(e instanceof WorkDraftError, String(e))
    assert.equal(e.reason, reason, `${JSON.stringify(edit)}: ${e.message}`)
    assert.ok(!e.message.includes('mallory') && !e.message.includes('31337') && !e.message.includes('editor'), e.message)
    if (pointer) assert.ok(e.message.includes(pointer), e.message)
  }
  await assert.rejects(decide(base, { provider: 'calendar' }), isReason('immutable_field'))
  await assert.rejects(decide(base, { idempotencyKey: 'k' }), isReason('immutable_field'))
  await assert.rejects(decide(base, { expectedVersion: 9 }), isReason('conflict'))
  // Narrowing is fine: fewer recipients, a narrower role.
  const ok = await decide({ ...base, share: { role: 'viewer' } })
  assert.equal(ok.latestRevision, 2)
})

test('immutable payload keys: an edit may not change provider/op/ownership keys inside the payload', async () => {
  const svc = service(prism.createMemoryCheckpointStore())
  await svc.create(mailDraft({ schema: undefined, payload: { to: ['ann@example.test'], subject: 's', op: 'send' } }))
  await assert.rejects(
    svc.decide({ ...ref, expectedVersion: 1, decision: 'approve', modifiedArguments: { to: ['ann@example.test'], subject: 's', op: 'forward' }, reviewer: 'u:r' }),
    isReason('immutable_field'),
  )
  await assert.rejects(
    svc.decide({ ...ref, expectedVersion: 1, decision: 'approve', modifiedArguments: { to: ['ann@example.test'], subject: 's', op: 'send', tenantId: 't2' }, reviewer: 'u:r' }),
    isReason('immutable_field'),
  )
})

test('recipientPolicy: deny by default, asked on create and on every edit; a throwing policy refuses', async () => {
  const asked = []
  const policy = {
    async allow(address) {
      asked.push(address)
      if (address === 'boom@example.test') throw new Error('policy down')
      return address.endsWith('@example.test') && address !== 'bob@example.test' ? true : 'yes'
    },
  }
  const svc = service(prism.createMemoryCheckpointStore(), { recipientPolicy: policy })
  await assert.rejects(svc.create(mailDraft()), (e) => isReason('recipient_escalation')(e) && !e.message.includes('bob'))
  const d = await svc.create(mailDraft({ payload: { to: ['ann@example.test', 'cy@example.test'], subject: 's' } }))
  assert.ok(asked.includes('ann@example.test'))
  await assert.rejects(
    svc.create(mailDraft({ draftId: 'm2', payload: { to: ['boom@example.test'], subject: 's' } })),
    isReason('recipient_escalation'),
  )
  asked.length = 0
  await svc.decide({ ...ref, expectedVersion: d.version, decision: 'approve', modifiedArguments: { to: ['ann@example.test'], subject: 's' }, reviewer: 'u:r' })
  assert.deepEqual(asked, ['ann@example.test'])
})

test('a payload changed after approval without a new revision cannot be claimed', async () => {
  const store = prism.createMemoryCheckpointStore()
  const svc = service(store)
  await svc.create(mailDraft())
  const d = await svc.decide({ ...ref, expectedVersion: 1, decision: 'approve', reviewer: 'u:r' })
  const digest = d.revisions[0].payloadDigest
  const cp = await store.loadCheckpoint({ namespace: prism.WORK_DRAFT_CHECKPOINT_NAMESPACE, key: 'thread-1:mail-1', ...ownership })
  const tampered = structuredClone(cp.value)
  tampered.revisions[0].payload.to.push('mallory@evil.test')
  const { namespace, key, category } = cp
  await store.saveCheckpoint({ namespace, key, category, ...ownership, value: tampered, version: cp.version + 1, expectedVersion: cp.version })
  await assert.rejects(svc.claimExecution({ ...ref, expectedVersion: cp.version + 1, payloadDigest: digest }), isReason('not_approved'))
  const changed = draftPayloadDigest(tampered.revisions[0].payload)
  await assert.rejects(svc.claimExecution({ ...ref, expectedVersion: cp.version + 1, payloadDigest: changed }), isReason('not_approved'))
})

test('redaction: registered secrets never reach the store or events; the digest is over the stored payload', async () => {
  const { createMapStore } = await import('./fixtures/map-store.mjs')
  for (const redactor of [prism.createSecretRedactor(['sk-live-123']), { redact: (v) => JSON.parse(JSON.stringify(v).replaceAll('sk-live-123', '[REDACTED]')) }]) {
    const store = createMapStore()
    const events = []
    const svc = prism.createWorkDraftService(store, { redactor, onDecision: (e) => events.push(e) })
    const d = await svc.create(mailDraft({ schema: undefined, payload: { to: ['ann@example.test'], subject: 's', body: 'token sk-live-123' } }))
    await svc.decide({
      ...ref,
      expectedVersion: 1,
      decision: 'approve',
      modifiedArguments: { to: ['ann@example.test'], subject: 's', body: 'new sk-live-123' },
      reason: 'ok sk-live-123',
      reviewer: 'u:r',
    })
    const raw = JSON.stringify([...store.map.values()])
    assert.ok(!raw.includes('sk-live-123') && raw.includes('[REDACTED]'))
    assert.ok(!JSON.stringify(events).includes('sk-live-123'))
    assert.deepEqual(events.map((e) => e.type), ['work_draft_created', 'work_draft_edited'])
    assert.equal(d.revisions[0].payloadDigest, draftPayloadDigest(d.revisions[0].payload))
    assert.equal(d.revisions[0].payload.body, 'token [REDACTED]')
  }
})

test('ownership: cross-owner reads are not_found; lists are owner and thread scoped', async () => {
  const svc = service(prism.createMemoryCheckpointStore())
  await svc.create(mailDraft())
  await svc.create(mailDraft({ threadId: 'thread-2' }))
  const other = { tenantId: 't2' }
  await assert.rejects(svc.get({ ...ref, ownership: other }), isReason('not_found'))
  await assert.rejects(svc.decide({ ...ref, ownership: other, expectedVersion: 1, decision: 'approve', reviewer: 'u:r' }), isReason('not_found'))
  assert.deepEqual((await svc.list({ ownership: other, threadId: 'thread-1' })).items, [])
  const page = await svc.list({ ownership, threadId: 'thread-1', limit: 1 })
  assert.deepEqual(page.items.map((d) => d.threadId), ['thread-1'])
})

test('draftPayloadDigest is the hex SHA-256 of the RFC 8785 canonical JSON', async () => {
  const { createHash } = await import('node:crypto')
  const payload = { b: [1.5, 1e21, 'é'], a: { z: null, y: true } }
  const jcs = '{"a":{"y":true,"z":null},"b":[1.5,1e+21,"é"]}'
  assert.equal(draftPayloadDigest(payload), createHash('sha256').update(jcs).digest('hex'))
  assert.throws(() => draftPayloadDigest({ n: NaN }), isReason('invalid_input'))
  assert.throws(() => draftPayloadDigest([1]), isReason('invalid_input'))
  assert.deepEqual(prism.WORK_DRAFT_ERROR_REASONS.includes('recipient_escalation'), true)
  assert.throws(() => prism.resolveWorkDraftLimits({ payloadBytes: 0 }), RangeError)
})
