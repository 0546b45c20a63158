// Bad input of every wrong type at every artifact entry point gives a typed error
// (never a crash, never a panic) and changes nothing. Plus the caps and their reasons.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  createArtifactService,
  createSecretRedactor,
  resolveArtifactLimits,
  signArtifactDeliveryLink,
  verifyArtifactDeliveryLink,
  artifactApprovalState,
  checkCitationIntegrity,
  citationBindingDigest,
  approvalEvidenceIntact,
  createMemoryCheckpointStore,
  ArtifactError,
} from '../index.mjs'
import { LINK_SECRET, ownership, isReason } from './fixtures/artifact-stores.mjs'

function deepObject(n) {
  let v = { leaf: 1 }
  for (let i = 0; i < n; i++) v = { d: v }
  return v
}
const cyclic = () => {
  const o = { a: 1 }
  o.o = o
  return o
}
const BAD = () => [
  null,
  undefined,
  NaN,
  Infinity,
  -1,
  1.5,
  0,
  '',
  'x'.repeat(3 * 1024 * 1024),
  true,
  [],
  [1, 2],
  {},
  10n,
  () => 1,
  Symbol('s'),
  deepObject(200),
  deepObject(20_000),
  cyclic(),
  JSON.parse('{"__proto__": {"polluted": true}}'),
  new Date(0),
]
// Values wrong for every single field (the whole-input list adds values some fields accept,
// such as {}, [], '' and 0).
const FIELD_BAD = () =>
  BAD().filter((v) => !(v === '' || v === 0 || (Array.isArray(v) && v.length === 0) || v instanceof Date || (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0)))
const typed = (e) => (e instanceof ArtifactError || e instanceof TypeError || e instanceof RangeError) && typeof e.code === 'string' && e.code !== 'ERR_PRISM_INTERNAL'

const doc = { uri: 'https://blob.example/doc', mime: 'text/markdown', hash: 'sha256:aaa' }
const TOKEN = { artifactId: 'a', threadId: 't', version: 1, ...ownership, issuedAt: '2026-01-01T00:00:00.000Z', expiresAt: '2999-01-01T00:00:00.000Z' }
const ref = { ownership, threadId: 'thread-1', artifactId: 'a' }
const GOOD = {
  attach: { ownership, threadId: 'thread-1', id: 'b', ...doc },
  list: { ownership, threadId: 'thread-1' },
  get: ref,
  revise: { ...ref, uri: 'https://blob.example/v2', hash: 'sha256:bbb' },
  compare: { ...ref, from: 1, to: 2 },
  approve: { ...ref, version: 1, reviewer: 'user:r' },
  // Version 2: rejecting the validated version 1 would revoke it (issue 17 point 1).
  reject: { ...ref, version: 2, reviewer: 'user:r' },
  lastValidated: ref,
  deliveryLink: ref,
}
const OPTIONAL = {
  attach: ['size', 'title', 'kind', 'changeNote', 'preview', 'citations', 'producerRunId', 'identity'],
  list: ['limit', 'cursor', 'identity'],
  get: ['identity'],
  revise: ['mime', 'size', 'title', 'changeNote', 'preview', 'citations', 'producerRunId', 'identity'],
  compare: ['identity'],
  approve: ['note', 'identity'],
  reject: ['note', 'identity'],
  lastValidated: ['identity'],
  deliveryLink: ['version', 'ttlSeconds', 'identity'],
}

async function fixture() {
  const store = createMemoryCheckpointStore()
  const events = []
  const svc = createArtifactService(store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET, onDecision: (e) => events.push(e) })
  await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...doc })
  await svc.revise({ ...ref, uri: 'https://blob.example/v2', hash: 'sha256:bbb' })
  events.length = 0
  const snapshot = async () => JSON.stringify(await store.listCheckpoints({ namespace: 'prism.artifact', limit: 1000 }))
  return { store, svc, events, snapshot }
}

test('every service operation: wrong whole inputs, wrong field values, unknown fields and __proto__ keys are typed errors and change nothing', async () => {
  const { svc, events, snapshot } = await fixture()
  const before = await snapshot()
  for (const [op, good] of Object.entries(GOOD)) {
    for (const bad of BAD()) {
      await assert.rejects(svc[op](bad), typed, `${op}(${String(typeof bad)})`)
    }
    const fields = [...Object.keys(good), ...OPTIONAL[op]]
    for (const field of fields) {
      const optional = OPTIONAL[op].includes(field) || (op === 'attach' && field === 'id')
      for (const bad of FIELD_BAD()) {
        // Leaving an optional field out (undefined, or a value JSON drops) is fine.
        if (optional && (bad === undefined || typeof bad === 'function' || typeof bad === 'symbol')) continue
        await assert.rejects(svc[op]({ ...good, [field]: bad }), typed, `${op}.${field} = ${typeof bad}`)
      }
    }
    await assert.rejects(svc[op]({ ...good, sneaky: 1 }), isReason('invalid_input'), `${op} unknown field`)
    await assert.rejects(svc[op]({ ...good, ...JSON.parse('{"__proto__": {"admin": true}}') }), isReason('invalid_input'), `${op} __proto__`)
    assert.equal(await snapshot(), before, `${op} changed the store`)
    assert.equal(events.length, 0, `${op} emitted an event`)
    assert.equal({}.polluted, undefined)
  }
  // Each good request is valid as given.
  for (const [op, good] of Object.entries(GOOD)) await svc[op](good)
})

test('createArtifactService refuses bad stores and options with typed errors', () => {
  const store = createMemoryCheckpointStore()
  const redactor = createSecretRedactor([])
  const ok = { redactor, linkSecret: LINK_SECRET }
  for (const bad of BAD()) {
    assert.throws(() => createArtifactService(bad, ok), typed, `store ${typeof bad}`)
    if (bad !== undefined) assert.throws(() => createArtifactService(store, bad), typed, `options ${typeof bad}`)
    assert.throws(() => createArtifactService(store, { ...ok, redactor: bad }), typed, `redactor ${typeof bad}`)
    assert.throws(() => createArtifactService(store, { ...ok, linkSecret: bad }), typed, `linkSecret ${typeof bad}`)
    if (bad !== undefined && typeof bad !== 'function') assert.throws(() => createArtifactService(store, { ...ok, onDecision: bad }), typed, `onDecision ${typeof bad}`)
    if (bad !== undefined && !(bad && typeof bad === 'object' && !Array.isArray(bad) && Object.keys(bad).length === 0 && !(bad instanceof Date)))
      assert.throws(() => createArtifactService(store, { ...ok, limits: bad }), typed, `limits ${typeof bad}`)
  }
  assert.throws(() => createArtifactService(store), TypeError)
  assert.throws(() => createArtifactService(store, { ...ok, extra: 1 }), TypeError)
  assert.throws(() => createArtifactService(store, { ...ok, linkSecret: 'short' }), TypeError, 'link secrets are at least 16 bytes')
  assert.throws(() => createArtifactService({ saveCheckpoint() {} }, ok), typed, 'a partial host store')
})

test('limits: defaults and hard caps; outside 1..hard is a RangeError at construction; unknown or non-numeric is a TypeError', () => {
  const d = resolveArtifactLimits()
  assert.ok(Object.isFrozen(d))
  assert.deepEqual(d, {
    artifactsPerThread: 64,
    revisionsPerArtifact: 32,
    recordBytes: 8192,
    previewBytes: 16384,
    citations: 32,
    citationBytes: 2048,
    mimeBytes: 128,
    hashBytes: 256,
    uriBytes: 2048,
    noteBytes: 1024,
    titleBytes: 256,
    listPageLimit: 50,
    deliveryLinkTtlSeconds: 300,
    deliveryLinkTokenBytes: 4096,
    maxRequestBytes: 65536,
  })
  const hard = {
    artifactsPerThread: 256,
    revisionsPerArtifact: 128,
    recordBytes: 65536,
    previewBytes: 65536,
    citations: 128,
    citationBytes: 8192,
    mimeBytes: 512,
    hashBytes: 1024,
    uriBytes: 8192,
    noteBytes: 8192,
    titleBytes: 2048,
    listPageLimit: 200,
    deliveryLinkTtlSeconds: 86400,
    deliveryLinkTokenBytes: 16384,
    maxRequestBytes: 1048576,
  }
  assert.deepEqual(resolveArtifactLimits(hard), hard)
  const store = createMemoryCheckpointStore()
  for (const [name, max] of Object.entries(hard)) {
    assert.equal(resolveArtifactLimits({ [name]: 1 })[name], 1)
    for (const bad of [0, max + 1, -5, 1.5, NaN, Infinity]) {
      assert.throws(() => resolveArtifactLimits({ [name]: bad }), RangeError, `${name}=${bad}`)
      assert.throws(
        () => createArtifactService(store, { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET, limits: { [name]: bad } }),
        RangeError,
        `service ${name}=${bad}`,
      )
    }
    assert.throws(() => resolveArtifactLimits({ [name]: '5' }), TypeError)
  }
  assert.throws(() => resolveArtifactLimits({ nope: 1 }), TypeError)
  for (const earlier of ['citationsPerRevision', 'listPageSize', 'deliveryTtlSeconds', 'deliveryTokenBytes']) {
    assert.throws(() => resolveArtifactLimits({ [earlier]: 1 }), TypeError, `${earlier} is not a limit name of the reference`)
  }
  assert.throws(() => resolveArtifactLimits('x'), TypeError)
})

test('every cap refuses with its reason and stores nothing', async () => {
  const store = createMemoryCheckpointStore()
  const svc = createArtifactService(store, {
    redactor: createSecretRedactor([]),
    linkSecret: LINK_SECRET,
    limits: { artifactsPerThread: 2, revisionsPerArtifact: 2, citations: 2, recordBytes: 6000, deliveryLinkTokenBytes: 200 },
  })
  await svc.attach({ ownership, threadId: 'thread-1', id: 'a', ...doc })
  const before = JSON.stringify(await store.listCheckpoints({ namespace: 'prism.artifact' }))
  const attach = (extra) => svc.attach({ ownership, threadId: 'thread-1', id: 'b', ...doc, ...extra })
  const cases = [
    [{ mime: 'm'.repeat(129) }, 'mime_too_large'],
    [{ hash: 'h'.repeat(257) }, 'hash_too_large'],
    [{ uri: `https://x/${'u'.repeat(2048)}` }, 'uri_too_large'],
    [{ changeNote: 'n'.repeat(1025) }, 'note_too_large'],
    [{ producerRunId: 'run 1' }, 'invalid_id'],
    [{ title: 't'.repeat(257) }, 'title_too_large'],
    [{ kind: 'k'.repeat(257) }, 'title_too_large'],
    [{ citations: [{ uri: 'https://a', title: 't'.repeat(257) }] }, 'title_too_large'],
    [{ preview: { x: 'p'.repeat(16 * 1024) } }, 'preview_too_large'],
    [{ citations: [{ uri: 'https://a' }, { uri: 'https://b' }, { uri: 'https://c' }] }, 'too_many_citations'],
    [{ citations: [{ uri: 'https://a', excerpt: 'e'.repeat(2048) }] }, 'citation_too_large'],
    [{ preview: { x: 'p'.repeat(6000) } }, 'record_too_large'],
  ]
  for (const [extra, reason] of cases) await assert.rejects(attach(extra), isReason(reason), reason)
  assert.equal(JSON.stringify(await store.listCheckpoints({ namespace: 'prism.artifact' })), before)
  await attach({})
  await assert.rejects(svc.attach({ ownership, threadId: 'thread-1', id: 'c', ...doc }), isReason('too_many_artifacts'))
  await svc.attach({ ownership, threadId: 'thread-2', id: 'c', ...doc })
  await svc.revise({ ...ref, uri: 'https://x/2', hash: 'h2' })
  await assert.rejects(svc.revise({ ...ref, uri: 'https://x/3', hash: 'h3' }), isReason('too_many_revisions'))
  await assert.rejects(svc.deliveryLink(ref), isReason('link_too_large'))
})

test('pure functions: wrong types, huge, deep, cyclic and __proto__ inputs are typed errors', () => {
  for (const bad of BAD()) {
    const t = typeof bad
    assert.throws(() => signArtifactDeliveryLink(bad, LINK_SECRET), typed, `sign ${t}`)
    assert.throws(() => verifyArtifactDeliveryLink(bad, LINK_SECRET), typed, `verify ${t}`)
    assert.throws(() => artifactApprovalState(bad), typed, `state ${t}`)
    assert.throws(() => checkCitationIntegrity(bad), typed, `integrity ${t}`)
    if (!Array.isArray(bad) || bad.length) assert.throws(() => citationBindingDigest(bad), typed, `digest ${t}`)
    assert.throws(() => approvalEvidenceIntact(bad), typed, `intact ${t}`)
    if (bad !== undefined && !(Array.isArray(bad) && bad.length === 0)) assert.throws(() => createSecretRedactor(bad), typed, `redactor ${t}`)
    // Any string is key material (as the reference's); other types are TypeErrors.
    if (bad !== undefined && (typeof bad !== 'string' || bad === '')) {
      assert.throws(() => signArtifactDeliveryLink(TOKEN, bad), typed)
    }
    if (bad !== undefined) {
      assert.throws(() => verifyArtifactDeliveryLink('a.b', bad), typed)
      assert.throws(() => verifyArtifactDeliveryLink('a.b', LINK_SECRET, bad), typed, `maxBytes ${typeof bad}`)
      assert.throws(() => verifyArtifactDeliveryLink('a.b', LINK_SECRET, undefined, bad), typed, `now ${typeof bad}`)
    }
  }
  for (const bad of FIELD_BAD()) {
    if (bad !== undefined) assert.throws(() => resolveArtifactLimits(bad), typed, `limits ${typeof bad}`)
  }
  for (const [field, bad] of [['artifactId', 5], ['threadId', undefined], ['version', 1.5], ['version', '1'], ['issuedAt', 0], ['expiresAt', null]]) {
    assert.throws(() => signArtifactDeliveryLink({ ...TOKEN, [field]: bad }, LINK_SECRET), TypeError, field)
  }
  assert.throws(() => checkCitationIntegrity({ citations: [], snapshots: [], extra: 1 }), isReason('invalid_input'))
  assert.throws(() => checkCitationIntegrity({ citations: [{ uri: 'file:///x' }], snapshots: [] }), isReason('unsafe_uri'))
  assert.throws(() => checkCitationIntegrity({ citations: [{ uri: 'https://a', span: { start: 5, end: 1 } }], snapshots: [] }), isReason('invalid_input'))
  assert.throws(() => citationBindingDigest([{ uri: 'https://a', support: 2 }]), isReason('invalid_input'))
  assert.throws(() => approvalEvidenceIntact({}, 0), isReason('invalid_input'))
})

// A string cut inside a surrogate pair (an emoji sliced by UTF-16 index, as agent output
// often is) holds a lone surrogate, which the reference keeps and a Rust string cannot:
// the service reads every request string as String.prototype.toWellFormed() makes it
// (a lone surrogate becomes U+FFFD), except identities, which are compared exactly and
// refused instead (docs/artifacts.md).
test('a lone surrogate in content is read as U+FFFD; in an identity it is refused and nothing changes', async () => {
  const svc = createArtifactService(createMemoryCheckpointStore(), { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET })
  const cut = 'cut 😀'.slice(0, 5)
  assert.equal(cut.isWellFormed(), false)
  const citations = [{ uri: 'https://src.example/a', title: cut }]
  const rec = await svc.attach({
    ownership, threadId: 'th', id: 'doc', uri: 'https://x/y', mime: 'text/plain', hash: 'h',
    title: cut, preview: { text: cut, whole: '😀 stays', [cut]: 1 }, citations,
  })
  const fixed = cut.toWellFormed()
  assert.equal(fixed, 'cut \ufffd')
  assert.equal(rec.title, fixed)
  assert.deepEqual(rec.revisions[0].preview, { text: fixed, whole: '😀 stays', [fixed]: 1 })
  assert.equal(rec.revisions[0].citations[0].title, fixed)
  const approved = await svc.approve({ ownership, threadId: 'th', artifactId: 'doc', version: 1, reviewer: 'user:r', note: cut })
  assert.equal(approved.approvals[0].note, fixed)
  // The digest a host computes over the citations it sent is the one recorded.
  assert.equal(approved.approvals[0].evidenceDigest, citationBindingDigest(citations))
  assert.equal(citationBindingDigest(citations), citationBindingDigest([{ uri: 'https://src.example/a', title: fixed }]))
  assert.deepEqual(await svc.get({ ownership, threadId: 'th', artifactId: 'doc' }), approved)

  // Identities: refused with a message that says why, nothing saved or decided.
  const lone = (e, reason) => isReason(reason)(e) && /lone UTF-16 surrogate/.test(e.message)
  await assert.rejects(
    svc.attach({ ownership: { tenantId: `t${cut}` }, threadId: 'th', id: 'x', uri: 'https://x/y', mime: 'text/plain', hash: 'h' }),
    (e) => lone(e, 'ownership'),
  )
  await assert.rejects(
    svc.reject({ ownership, threadId: 'th', artifactId: 'doc', version: 1, reviewer: `user:${cut}` }),
    (e) => lone(e, 'invalid_input'),
  )
  assert.deepEqual(await svc.get({ ownership, threadId: 'th', artifactId: 'doc' }), approved, 'nothing decided')
  assert.equal((await svc.list({ ownership, threadId: 'th' })).items.length, 1, 'nothing attached')
  // A U+FFFD the caller wrote, in a request without a lone surrogate, is an identity like any other.
  const own = { tenantId: 't\ufffd' }
  await svc.attach({ ownership: own, threadId: 'th', id: 'y', uri: 'https://x/y', mime: 'text/plain', hash: 'h' })
  assert.equal((await svc.get({ ownership: own, threadId: 'th', artifactId: 'y' })).tenantId, 't\ufffd')
})
