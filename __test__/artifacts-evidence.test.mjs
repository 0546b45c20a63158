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
  assert.equal(artifactApprovalState(pending), 'pending')
  assert.equal(artifactApprovalState(rec), 'approved')
})

test('rejecting the validated revision revokes it (issue 17 point 1)', async () => {
  const svc = createArtifactService(createMemoryCheckpointStore(), { redactor: createSecretRedactor([]), linkSecret: LINK_SECRET })
  const ref = { ownership, threadId: 't', artifactId: 'a' }
  const decide = (op, version) => svc[op]({ ...ref, version, reviewer: 'user:r' })
  await svc.attach({ ownership, threadId: 't', id: 'a', uri: 'https://x/1', mime: 'm', hash: 'h1' })
  await decide('approve', 1)
  const revoked = await decide('reject', 1)
  assert.equal(revoked.lastValidatedVersion, undefined)
  assert.equal(Object.hasOwn(revoked, 'lastValidatedVersion'), false, 'absent, not null')
  assert.equal(approvalEvidenceIntact(revoked), false)
  await assert.rejects(svc.lastValidated(ref), isReason('not_validated'))
  await svc.revise({ ...ref, uri: 'https://x/2', hash: 'h2' })
  assert.equal((await svc.deliveryLink(ref)).token.version, 2, 'the default is the latest, not the revoked one')
  // Falls back to the newest version whose latest decision is approved.
  await decide('approve', 1)
  await decide('approve', 2)
  assert.equal((await decide('reject', 2)).lastValidatedVersion, 1)
  assert.equal((await svc.lastValidated(ref)).version, 1)
  assert.equal((await svc.deliveryLink(ref)).token.version, 1)
  // Rejecting a version that is not the validated one never clears it (seed 001).
  await svc.revise({ ...ref, uri: 'https://x/3', hash: 'h3' })
  assert.equal((await decide('reject', 3)).lastValidatedVersion, 1)
  assert.equal((await svc.lastValidated(ref)).version, 1)
})

// An independent implementation of the documented link format, written here with
// node:crypto only: base64url of the token's JSON text, ".", base64url of HMAC-SHA256
// keyed with the secret's UTF-8 bytes over that payload text.
const independent = {
  sign(token, secret) {
    const payload = Buffer.from(JSON.stringify(token), 'utf8').toString('base64url')
    return `${payload}.${createHmac('sha256', Buffer.from(secret, 'utf8')).update(payload).digest('base64url')}`
  },
  verify(link, secret) {
    const dot = link.lastIndexOf('.')
    const payload = link.slice(0, dot)
    const want = createHmac('sha256', Buffer.from(secret, 'utf8')).update(payload).digest('base64url')
    if (link.slice(dot + 1) !== want) throw new Error('bad signature')
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  },
}

test('delivery links: the reference format, interoperable both ways, signing exactly the given token', () => {
  const now = Date.parse('2026-07-25T04:05:00.000Z')
  const token = {
    artifactId: 'art_1',
    threadId: 'thread-1',
    version: 2,
    ...ownership,
    issuedAt: '2026-07-25T04:05:00.000Z',
    expiresAt: '2026-07-25T04:10:00.000Z',
  }
  const link = signArtifactDeliveryLink(token, LINK_SECRET)
  assert.equal(typeof link, 'string')
  assert.equal(link, independent.sign(token, LINK_SECRET), 'byte-identical to the independent signer')
  assert.deepEqual(independent.verify(link, LINK_SECRET), token, 'ours verify there')
  // Keys in the caller's order, extra members included: exactly the given token is signed.
  const reordered = { expiresAt: token.expiresAt, version: 2, threadId: 'thread-1', artifactId: 'art_1', issuedAt: token.issuedAt, note: 'x' }
  assert.equal(signArtifactDeliveryLink(reordered, LINK_SECRET), independent.sign(reordered, LINK_SECRET))
  // Theirs verify here, with a secret of any length (the reference takes any non-empty string).
  for (const secret of [LINK_SECRET, 'short', 'ünïcødé-secret', 'k'.repeat(5000)]) {
    const theirs = independent.sign(token, secret)
    assert.deepEqual(verifyArtifactDeliveryLink(theirs, secret, undefined, now), token, secret.slice(0, 12))
    assert.deepEqual(verifyArtifactDeliveryLink(theirs, Buffer.from(secret), undefined, new Date(now)), token, 'bytes work as the secret')
  }
  // A wrong secret of any length is invalid_link, never a TypeError.
  for (const wrong of ['wrong-secret', 'x', '', 'another-secret-of-enough-length', 'y'.repeat(5000)]) {
    assert.throws(() => verifyArtifactDeliveryLink(link, wrong, undefined, now), isReason('invalid_link'), JSON.stringify(wrong.slice(0, 12)))
  }
  // Only string ownership members and the token members come back.
  const { tenantId: _, ...withoutTenant } = token
  const odd = { ...token, tenantId: 7, extra: 1 }
  assert.deepEqual(verifyArtifactDeliveryLink(independent.sign(odd, LINK_SECRET), LINK_SECRET, undefined, now), withoutTenant)
  // Expiry: at or after expiresAt, and an unreadable expiresAt, are link_expired.
  assert.throws(() => verifyArtifactDeliveryLink(link, LINK_SECRET, undefined, Date.parse(token.expiresAt)), isReason('link_expired'))
  assert.throws(() => verifyArtifactDeliveryLink(independent.sign({ ...token, expiresAt: 'soon' }, LINK_SECRET), LINK_SECRET), isReason('link_expired'))
  // Tampering and garbage.
  const [payload, sig] = link.split('.')
  const forged = Buffer.from(JSON.stringify({ ...token, version: 3 })).toString('base64url')
  for (const bad of [`${forged}.${sig}`, `${payload}.${sig.slice(1)}`, `${payload}.${sig}x`, `${payload}`, '', '.', `.${sig}`, `${payload}.`, `${payload}.***`]) {
    assert.throws(() => verifyArtifactDeliveryLink(bad, LINK_SECRET, undefined, now), isReason('invalid_link'), bad)
  }
  for (const shape of [{ ...token, version: 1.5 }, { ...token, artifactId: 5 }, { threadId: 't' }, [1], 'text']) {
    assert.throws(() => verifyArtifactDeliveryLink(independent.sign(shape, LINK_SECRET), LINK_SECRET, undefined, now), isReason('invalid_link'))
  }
  // Size: 16 KiB by default, or the given maxBytes.
  assert.throws(() => verifyArtifactDeliveryLink('a'.repeat(16 * 1024 + 1), LINK_SECRET), isReason('link_too_large'))
  assert.throws(() => verifyArtifactDeliveryLink(link, LINK_SECRET, 100, now), isReason('link_too_large'))
  assert.deepEqual(verifyArtifactDeliveryLink(link, LINK_SECRET, link.length, now), token)
})
