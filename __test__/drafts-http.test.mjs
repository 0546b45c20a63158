// createWorkDraftHandler over real HTTP (loopback node:http via toNodeListener).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as prism from '../index.mjs'
import { serve } from './http-support.mjs'
import { mailDraft, ref, ownership, service } from './fixtures/drafts.mjs'

async function setup(t, options = {}) {
  const store = prism.createMemoryCheckpointStore()
  const svc = service(store)
  const seen = []
  const handler = prism.createWorkDraftHandler({
    service: svc,
    authorize: (input) => {
      seen.push(input.operation)
      const who = input.request.headers.get('x-user')
      if (who === 'nobody') return false
      return who === 'other' ? { tenantId: 't2' } : { ownership }
    },
    ...options,
  })
  const server = await serve(handler)
  t.after(() => server.close())
  await svc.create(mailDraft({ payload: { ...mailDraft().payload, share: { role: 'viewer' } } }))
  const call = async (method, path, body, headers = {}) => {
    const init = { method, headers: { 'content-type': 'application/json', ...headers } }
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body)
    const res = await fetch(server.url + path, init)
    return { status: res.status, body: await res.json() }
  }
  return { svc, call, seen }
}

const RESUME = '/prism/drafts/thread-1/mail-1/resume'

test('GET list and get; POST resume approves with edits (modifiedArguments or editedArgs)', async (t) => {
  const { call, seen } = await setup(t)
  const list = await call('GET', '/prism/drafts/thread-1')
  assert.equal(list.status, 200)
  assert.deepEqual(list.body.items.map((d) => d.id), ['mail-1'])
  const got = await call('GET', '/prism/drafts/thread-1/mail-1')
  assert.equal(got.status, 200)
  assert.equal(got.body.version, 1)
  const edit = { to: ['ann@example.test'], subject: 'Q3 plan' }
  const r = await call('POST', RESUME, { expectedVersion: 1, decision: 'approve', editedArgs: edit, reviewer: 'user:rev' })
  assert.equal(r.status, 200, JSON.stringify(r.body))
  assert.equal(r.body.latestRevision, 2)
  assert.equal(r.body.revisions[1].payloadDigest, prism.draftPayloadDigest(edit))
  const r2 = await call('POST', RESUME, { expectedVersion: '2', decision: 'deny', reason: 'changed my mind', reviewer: 'user:rev' })
  assert.equal(r2.status, 200)
  assert.equal(r2.body.status, 'denied')
  assert.deepEqual(seen, ['work-draft.list', 'work-draft.get', 'work-draft.resume', 'work-draft.resume'])
})

test('statuses: 400 malformed or unknown keys, 403, 404 unknown or foreign, 409 stale, 413 over size, 422 schema/escalation/immutable', async (t) => {
  const { call, svc } = await setup(t, { limits: { maxRequestBytes: 4096 } })
  const ok = { expectedVersion: 1, decision: 'approve', reviewer: 'user:rev' }
  const cases = [
    ['not JSON', '{', 400, 'invalid_json'],
    ['unknown key', { ...ok, extra: 1 }, 400, 'invalid_input'],
    ['ownership in body', { ...ok, ownership }, 400, 'invalid_input'],
    ['edit not an object', { ...ok, modifiedArguments: [1] }, 400, 'malformed_edit'],
    ['-0 in edit', `{"expectedVersion":1,"decision":"approve","reviewer":"u:r","modifiedArguments":{"to":["ann@example.test"],"subject":"s","n":-0}}`, 400, 'malformed_edit'],
    ['both names', { ...ok, modifiedArguments: { to: ['ann@example.test'], subject: 's' }, editedArgs: { to: ['ann@example.test'], subject: 's' } }, 400, 'malformed_edit'],
    ['bad decision', { ...ok, decision: 'maybe' }, 400, 'invalid_input'],
    ['stale version', { ...ok, expectedVersion: 7 }, 409, 'conflict'],
    ['schema', { ...ok, modifiedArguments: { to: ['ann@example.test'], subject: 1 } }, 422, 'schema_violation'],
    ['escalation', { ...ok, modifiedArguments: { to: ['mallory@evil.test'], subject: 's' } }, 422, 'recipient_escalation'],
    ['scope widening', { ...ok, modifiedArguments: { to: ['ann@example.test'], subject: 's', share: { role: 'editor' } } }, 422, 'recipient_escalation'],
    ['immutable', { ...ok, provider: 'calendar' }, 422, 'immutable_field'],
    ['too large', { ...ok, modifiedArguments: { to: ['ann@example.test'], subject: 'x'.repeat(5000) } }, 413, 'body_too_large'],
  ]
  for (const [name, body, status, code] of cases) {
    const r = await call('POST', RESUME, body)
    assert.equal(r.status, status, `${name}: ${JSON.stringify(r.body)}`)
    assert.equal(r.body.error.code, code, name)
    assert.equal(typeof r.body.error.message, 'string')
    assert.ok(!JSON.stringify(r.body).includes('mallory'), name)
    assert.ok(!('stack' in r.body.error))
  }
  assert.equal((await call('POST', RESUME, ok, { 'x-user': 'nobody' })).status, 403)
  assert.equal((await call('GET', '/prism/drafts/thread-1/mail-1', undefined, { 'x-user': 'other' })).status, 404)
  assert.equal((await call('POST', RESUME, ok, { 'x-user': 'other' })).status, 404)
  assert.equal((await call('GET', '/prism/drafts/thread-1/nope')).status, 404)
  assert.equal((await call('GET', '/prism/drafts/thread-1/mail-1/resume')).status, 404)
  assert.equal((await call('DELETE', '/prism/drafts/thread-1/mail-1')).status, 404)
  assert.equal((await svc.get(ref)).version, 1, 'no refused request wrote anything')
})

test('payload over the service cap is 413 payload_too_large', async (t) => {
  const store = prism.createMemoryCheckpointStore()
  const svc = service(store, { limits: { payloadBytes: 512 } })
  await svc.create(mailDraft({ schema: undefined }))
  const server = await serve(prism.createWorkDraftHandler({ service: svc, authorize: () => ({ ownership }) }))
  t.after(() => server.close())
  const res = await fetch(server.url + RESUME, {
    method: 'POST',
    body: JSON.stringify({ expectedVersion: 1, decision: 'approve', reviewer: 'u:r', modifiedArguments: { to: ['ann@example.test'], subject: 'x'.repeat(600) } }),
  })
  assert.equal(res.status, 413)
  assert.equal((await res.json()).error.code, 'payload_too_large')
})

test('16 concurrent resumes over HTTP: exactly one 200, the rest 409', async (t) => {
  const { call, svc } = await setup(t)
  const results = await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      call('POST', RESUME, { expectedVersion: 1, decision: 'approve', reviewer: `user:r${i}`, modifiedArguments: { to: ['ann@example.test'], subject: `by ${i}` } }),
    ),
  )
  assert.deepEqual(results.map((r) => r.status).sort(), [200, ...Array(15).fill(409)])
  const d = await svc.get(ref)
  assert.equal(d.revisions.length, 2)
})
