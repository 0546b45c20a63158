// Citation evidence and delivery links, checked against independent computations with
// node:crypto so the wire formats are pinned.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, createHmac } from 'node:crypto'
import {
  citationBindingDigest,
  checkCitationIntegrity,
  approvalEvidenceIntact,
  artifactApprovalState,
  signArtifactDeliveryLink,
  verifyArtifactDeliveryLink,
  createArtifactService,
  createSecretRedactor,
  createMemoryCheckpointStore,
} from '../index.mjs'
import { LINK_SECRET, ownership, isReason } from './fixtures/artifact-stores.mjs'

const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest('hex')

test('citationBindingDigest = SHA-256 of the JCS of identity tuples, in citation order', () => {
  const citations = [
    { uri: 'https://a/1', title: 'T', kind: 'web', sourceId: 's1', revision: 3, contentHash: 'sha256:x', retrievedAt: '2026-01-01T00:00:00Z', excerpt: 'quote', span: { start: 1, end: 4 }, tenantId: 't1', support: 0.9 },
    { uri: 'https://b/2', revision: 'r-7' },
  ]
  const jcs =
    '[{"contentHash":"sha256:x","revision":3,"sourceId":"s1","span":{"end":4,"start":1},"tenantId":"t1","uri":"https://a/1"},{"revision":"r-7","uri":"https://b/2"}]'
  assert.equal(citationBindingDigest(citations), sha256(jcs))
  assert.equal(citationBindingDigest([]), sha256('[]'))
  assert.notEqual(citationBindingDigest([...citations].reverse()), sha256(jcs), 'order matters')
  const judged = citations.map((c) => ({ ...c, support: 0.1, excerpt: 'other', title: 'other' }))
  assert.equal(citationBindingDigest(judged), sha256(jcs), 'support, excerpt and title are not identity')
  const moved = [{ ...citations[0], contentHash: 'sha256:y' }, citations[1]]
  assert.notEqual(citationBindingDigest(moved), sha256(jcs))
})

test('checkCitationIntegrity: missing, hash/revision mismatch, span, ACL and tenant; support is never read', () => {
  const report = checkCitationIntegrity({
    tenantId: 't1',
    citations: [
      { uri: 'https://a', sourceId: 'ok', contentHash: 'h', revision: 'r1', span: { start: 0, end: 5 }, tenantId: 't1', support: 0 },
      { uri: 'https://a', sourceId: 'gone', support: 1 },
      { uri: 'https://a', sourceId: 'changed', contentHash: 'h', revision: 'r1', support: 1 },
      { uri: 'https://a', sourceId: 'short', span: { start: 0, end: 50 } },
      { uri: 'https://a', sourceId: 'private' },
      { uri: 'https://a', sourceId: 'foreign' },
    ],
    snapshots: [
      { sourceId: 'ok', contentHash: 'h', revision: 'r1', length: 5, tenantId: 't1', readable: true },
      { sourceId: 'changed', contentHash: 'h2', revision: 'r2' },
      { sourceId: 'short', length: 10 },
      { sourceId: 'private', readable: false },
      { sourceId: 'foreign', tenantId: 't2' },
    ],
  })
  assert.equal(report.ok, false)
  assert.deepEqual(report.results, [
    { index: 0, sourceId: 'ok', ok: true, reasons: [] },
    { index: 1, sourceId: 'gone', ok: false, reasons: ['missing'] },
    { index: 2, sourceId: 'changed', ok: false, reasons: ['hash_mismatch', 'revision_mismatch'] },
    { index: 3, sourceId: 'short', ok: false, reasons: ['span_out_of_range'] },
    { index: 4, sourceId: 'private', ok: false, reasons: ['acl_denied'] },
    { index: 5, sourceId: 'foreign', ok: false, reasons: ['tenant_mismatch'] },
  ])
  assert.deepEqual(checkCitationIntegrity({ citations: [], snapshots: [] }), { ok: true, results: [] })
})

test('approve stamps evidenceDigest; approvalEvidenceIntact detects a changed citation or a missing approval', async () => {
  const svc = createArtifactService(createMemoryCheckpointStore(), { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET })
  const citations = [{ uri: 'https://src/1', sourceId: 's1', contentHash: 'c1' }]
  await svc.attach({ ownership, threadId: 't', id: 'a', uri: 'https://x', mime: 'm', hash: 'h', citations })
  const pending = await svc.get({ ownership, threadId: 't', artifactId: 'a' })
  assert.equal(approvalEvidenceIntact(pending), false, 'no approval yet')
  const rec = await svc.approve({ ownership, threadId: 't', artifactId: 'a', version: 1, reviewer: 'user:r' })
  assert.equal(rec.approvals[0].evidenceDigest, citationBindingDigest(citations))
  assert.equal(approvalEvidenceIntact(rec), true)
  assert.equal(approvalEvidenceIntact(rec, 1), true)
  assert.equal(approvalEvidenceIntact(rec, 2), false)
  const tampered = structuredClone(rec)
  tampered.revisions[0].citations[0].contentHash = 'c2'
  assert.equal(approvalEvidenceIntact(tampered), false)
  const rejected = await svc.reject({ ownership, threadId: 't', artifactId: 'a', version: 1, reviewer: 'user:r' })
  assert.equal(approvalEvidenceIntact(rejected), false, 'a rejection replaced the approval')
  assert.deepEqual(artifactApprovalState(pending), { version: 1, state: 'pending' })
  assert.equal(artifactApprovalState(rec).state, 'approved')
})

test('delivery links: base64url(JSON payload).base64url(HMAC-SHA256), verified then expired', () => {
  const now = Date.parse('2026-07-25T04:05:00.000Z')
  const { link, token } = signArtifactDeliveryLink({ artifactId: 'art_1', threadId: 'thread-1', version: 2, ownership }, LINK_SECRET, { now })
  assert.deepEqual(token, {
    artifactId: 'art_1',
    threadId: 'thread-1',
    version: 2,
    ownership,
    issuedAt: '2026-07-25T04:05:00.000Z',
    expiresAt: '2026-07-25T04:10:00.000Z',
  })
  const [payload, sig] = link.split('.')
  assert.match(link, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
  assert.deepEqual(JSON.parse(Buffer.from(payload, 'base64url').toString()), token)
  assert.equal(sig, createHmac('sha256', LINK_SECRET).update(payload).digest('base64url'))
  assert.deepEqual(verifyArtifactDeliveryLink(link, LINK_SECRET, { now: now + 1000 }), token)
  assert.deepEqual(verifyArtifactDeliveryLink(link, Buffer.from(LINK_SECRET), { now: new Date(now) }), token, 'bytes work as the secret')
  assert.throws(() => verifyArtifactDeliveryLink(link, LINK_SECRET, { now: Date.parse(token.expiresAt) }), isReason('link_expired'))
  assert.throws(() => verifyArtifactDeliveryLink(link, 'another-secret-of-enough-length', { now }), isReason('invalid_link'))
  const forged = Buffer.from(JSON.stringify({ ...token, version: 3 })).toString('base64url')
  for (const bad of [`${forged}.${sig}`, `${payload}.${sig.slice(1)}`, `${payload}.${sig}x`, `${payload}`, `${payload}.${sig}.x`, '', '.', `${payload}.***`]) {
    assert.throws(() => verifyArtifactDeliveryLink(bad, LINK_SECRET, { now }), isReason('invalid_link'), bad)
  }
  const validSigOverBadPayload = (obj) => {
    const p = Buffer.from(JSON.stringify(obj)).toString('base64url')
    return `${p}.${createHmac('sha256', LINK_SECRET).update(p).digest('base64url')}`
  }
  assert.throws(() => verifyArtifactDeliveryLink(validSigOverBadPayload({ ...token, extra: 1 }), LINK_SECRET, { now }), isReason('invalid_link'))
  assert.throws(() => verifyArtifactDeliveryLink(validSigOverBadPayload({ ...token, version: 0 }), LINK_SECRET, { now }), isReason('invalid_link'))
  assert.throws(() => verifyArtifactDeliveryLink('a'.repeat(4097), LINK_SECRET), isReason('link_too_large'))
  assert.throws(() => verifyArtifactDeliveryLink(link, LINK_SECRET, { now, limits: { deliveryTokenBytes: 100 } }), isReason('link_too_large'))
  assert.throws(
    () => signArtifactDeliveryLink({ artifactId: 'art_1', threadId: 'thread-1', version: 2, ownership }, LINK_SECRET, { limits: { deliveryTokenBytes: 100 } }),
    isReason('link_too_large'),
  )
  const long = signArtifactDeliveryLink({ artifactId: 'a', threadId: 't', version: 1, ownership, ttlSeconds: 86400 }, LINK_SECRET, {
    now,
    limits: { deliveryTtlSeconds: 86400 },
  })
  assert.equal(Date.parse(long.token.expiresAt) - now, 86_400_000)
})
