// Coding patch review through the public API, exactly as a user calls it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import {
  createCodingPatchReviewManifest,
  assertCodingPatchAccepted,
  resolveCodingReviewLimits,
  CodingPatchReviewError,
} from '../index.mjs'

const FP = '1f'.repeat(32)
const SHA = '2a'.repeat(32)
const SHA2 = '3b'.repeat(32)

function input(overrides = {}) {
  return {
    threadId: 'thread-1',
    artifactId: 'patch-1',
    identity: { repositoryId: 'app', remoteFingerprint: FP, defaultBranch: 'main' },
    base: 'main',
    head: 'feature-1',
    patch: { kind: 'patch', uri: 'artifacts/patch-1.patch', sha256: SHA, bytes: 4096 },
    changedPaths: ['src/a.ts', 'src/b.ts'],
    diffstat: [
      { file: 'src/a.ts', additions: 10, deletions: 2 },
      { file: 'src/b.ts', additions: 1, deletions: 0 },
    ],
    checks: [{ name: 'build', exitCode: 0, summary: 'ok' }],
    diagnostics: [{ file: 'src/a.ts', severity: 'warning', count: 1, generation: 3 }],
    ...overrides,
  }
}

/** An artifact service record as `attach` returns it (seed 001 shape). */
function attach(artifactInput) {
  return {
    id: artifactInput.id,
    threadId: artifactInput.threadId,
    revisions: [{ version: 1, uri: artifactInput.uri, mime: artifactInput.mime, hash: artifactInput.hash, size: artifactInput.size, preview: structuredClone(artifactInput.preview), createdAt: '2026-01-01T00:00:00.000Z' }],
    approvals: [],
    latestVersion: 1,
  }
}

function decide(record, version, state, extra = {}) {
  record.approvals.push({ version, state, reviewer: 'user:ann', decidedAt: '2026-01-01T01:00:00.000Z', ...extra })
  return record
}

/** The review of `input()` and its artifact record with revision 1 approved. */
function approvedReview() {
  const { review, artifactInput } = createCodingPatchReviewManifest(input())
  return { review, record: decide(attach(artifactInput), 1, 'approved') }
}

/** The outcome that refuses a stale acceptance: `superseded` at `version`, with its reason and rule. */
function superseded(version, reason, rule) {
  return { state: 'superseded', version, reason, rule }
}

function revise(record, hash, preview) {
  const version = Math.max(...record.revisions.map((r) => r.version)) + 1
  record.revisions.push({ version, uri: `artifacts/v${version}.patch`, mime: 'application/x-patch', hash, ...(preview ? { preview } : {}) })
  record.latestVersion = version
  return record
}

function expectReviewError(fn, code, pattern) {
  assert.throws(fn, (err) => {
    assert.ok(err instanceof CodingPatchReviewError, `expected CodingPatchReviewError, got ${err && err.name}: ${err && err.message}`)
    assert.equal(err.name, 'CodingPatchReviewError')
    assert.equal(err.code, code, err.message)
    if (pattern) assert.match(err.message, pattern)
    return true
  })
}

/** RFC 8785 for the manifest's value space (strings, safe integers, arrays, objects). */
function jcs(v) {
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort() // ASCII keys: UTF-16 order is code point order
    return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}`
  }
  return JSON.stringify(v)
}

function recomputeDigest(review) {
  const { digest, reviewId, createdAt, state, ...content } = review
  return createHash('sha256').update(jcs(content), 'utf8').digest('hex')
}

test('the seed example: manifest, artifact input, attach, approve, accepted', () => {
  const { review, artifactInput } = createCodingPatchReviewManifest({
    threadId: 'thread-1',
    artifactId: 'patch-1',
    identity: { repositoryId: 'app', remoteFingerprint: FP, defaultBranch: 'main' },
    base: 'main',
    head: 'feature-1',
    patch: { kind: 'patch', uri: 'artifacts/patch-1.patch', sha256: SHA, bytes: 4096 },
    changedPaths: ['src/a.ts'],
    diffstat: [{ file: 'src/a.ts', additions: 10, deletions: 2 }],
    checks: [{ name: 'build', exitCode: 0, summary: 'ok' }],
  })
  assert.equal(review.state, 'pending')
  assert.equal(review.schemaVersion, 1)
  assert.match(review.digest, /^[0-9a-f]{64}$/)
  assert.equal(review.reviewId, `review-${review.digest.slice(0, 24)}`)
  assert.ok(!Number.isNaN(Date.parse(review.createdAt)))
  assert.match(review.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  assert.deepEqual(review.checks, [{ name: 'build', exitCode: 0, summary: 'ok' }])
  assert.deepEqual(review.diagnostics, [])
  assert.deepEqual(artifactInput, {
    threadId: 'thread-1',
    id: 'patch-1',
    uri: 'artifacts/patch-1.patch',
    mime: 'application/x-patch',
    hash: SHA,
    size: 4096,
    title: `Coding patch review ${review.reviewId}`,
    changeNote: 'head feature-1 over base main',
    preview: { review },
  })
  assert.equal(artifactInput.preview.review, review)
  const record = attach(artifactInput)
  assert.deepEqual(assertCodingPatchAccepted({ review, artifact: record }), {
    state: 'pending',
    version: 1,
    reason: 'no decision recorded for the bound revision',
    rule: 'no_decision',
  })
  decide(record, 1, 'approved')
  assert.deepEqual(assertCodingPatchAccepted({ review, artifact: record }), { state: 'accepted', version: 1, reviewer: 'user:ann' })
})

test('diagnostic summaries are rows { file, severity, count, generation }, one per file and severity', () => {
  const diagnostics = [
    { file: 'src/b.ts', severity: 'hint', count: 4, generation: 2 },
    { file: 'src/a.ts', severity: 'info', count: 3, generation: 2 },
    { file: 'src/a.ts', severity: 'error', count: 1, generation: 2 },
    { file: 'src/a.ts', severity: 'warning', count: 2, generation: 1 },
  ]
  const { review } = createCodingPatchReviewManifest(input({ diagnostics }))
  assert.deepEqual(review.diagnostics, [
    { count: 1, file: 'src/a.ts', generation: 2, severity: 'error' },
    { count: 2, file: 'src/a.ts', generation: 1, severity: 'warning' },
    { count: 3, file: 'src/a.ts', generation: 2, severity: 'info' },
    { count: 4, file: 'src/b.ts', generation: 2, severity: 'hint' },
  ])
  for (const bad of [{ severity: 'information' }, { severity: 'fatal' }, { count: -1 }, { generation: 1.5 }, { count: '1' }]) {
    expectReviewError(() => createCodingPatchReviewManifest(input({ diagnostics: [{ ...diagnostics[0], ...bad }] })), 'ERR_PRISM_REVIEW_INPUT', /input\.diagnostics\[0\]\.(severity|count|generation)/)
  }
  expectReviewError(
    () => createCodingPatchReviewManifest(input({ diagnostics: [diagnostics[0], { ...diagnostics[0], count: 9 }] })),
    'ERR_PRISM_REVIEW_INPUT',
    /one row per file and severity/,
  )
  // The shape of our earlier releases is refused, not misread.
  expectReviewError(() => createCodingPatchReviewManifest(input({ diagnostics: [{ file: 'src/a.ts', errors: 1, warnings: 0 }] })), 'ERR_PRISM_REVIEW_INPUT', /errors is not a known field/)
})

test('the digest is the API-NOTES formula, recomputable by any client', () => {
  const { review } = createCodingPatchReviewManifest(input({ identity: { repositoryId: 'app', remoteFingerprint: FP, defaultBranch: 'main', worktreePath: 'wt/é' } }))
  assert.equal(recomputeDigest(review), review.digest)
  // Also after a JSON round trip, as a host would store it.
  assert.equal(recomputeDigest(JSON.parse(JSON.stringify(review))), review.digest)
})

test('same inputs later give the same digest; reviewId and createdAt are not bound', async () => {
  const a = createCodingPatchReviewManifest(input()).review
  await new Promise((r) => setTimeout(r, 5))
  const b = createCodingPatchReviewManifest(input()).review
  assert.equal(a.digest, b.digest)
  const c = createCodingPatchReviewManifest(input({ reviewId: 'r-42', createdAt: '2030-01-02T03:04:05Z', limits: { maxRevisions: 32 } })).review
  assert.equal(c.digest, a.digest)
  assert.equal(c.reviewId, 'r-42')
  assert.equal(c.createdAt, '2030-01-02T03:04:05Z')
})

test('the digest ignores key order and list order', () => {
  const d0 = createCodingPatchReviewManifest(input()).review.digest
  const reordered = {
    diagnostics: [{ generation: 3, count: 1, severity: 'warning', file: 'src/a.ts' }],
    checks: [{ summary: 'ok', exitCode: 0, name: 'build' }],
    diffstat: [
      { deletions: 0, additions: 1, file: 'src/b.ts' },
      { deletions: 2, file: 'src/a.ts', additions: 10 },
    ],
    changedPaths: ['src/b.ts', 'src/a.ts', 'src/b.ts'],
    patch: { bytes: 4096, sha256: SHA, uri: 'artifacts/patch-1.patch', kind: 'patch' },
    head: 'feature-1',
    base: 'main',
    identity: { defaultBranch: 'main', remoteFingerprint: FP, repositoryId: 'app' },
    artifactId: 'patch-1',
    threadId: 'thread-1',
  }
  const r = createCodingPatchReviewManifest(reordered).review
  assert.equal(r.digest, d0)
  assert.deepEqual(r.changedPaths, ['src/a.ts', 'src/b.ts'])
  assert.deepEqual(r.diffstat.map((d) => d.file), ['src/a.ts', 'src/b.ts'])
})

test('any change of patch, identity, worktree, base, head, paths, diffstat, checks or diagnostics changes the digest', () => {
  const d0 = createCodingPatchReviewManifest(input()).review.digest
  const base = input()
  const variants = {
    'patch.kind': { patch: { ...base.patch, kind: 'diff' } },
    'patch.uri': { patch: { ...base.patch, uri: 'artifacts/other.patch' } },
    'patch.sha256': { patch: { ...base.patch, sha256: SHA2 } },
    'patch.bytes': { patch: { ...base.patch, bytes: 4097 } },
    'identity.repositoryId': { identity: { ...base.identity, repositoryId: 'app2' } },
    'identity.remoteFingerprint': { identity: { ...base.identity, remoteFingerprint: SHA2 } },
    'identity.defaultBranch': { identity: { ...base.identity, defaultBranch: 'trunk' } },
    'identity.worktreePath': { identity: { ...base.identity, worktreePath: 'wt/one' } },
    base: { base: 'release' },
    head: { head: 'feature-2' },
    threadId: { threadId: 'thread-2' },
    artifactId: { artifactId: 'patch-2' },
    changedPaths: { changedPaths: ['src/a.ts'] },
    diffstat: { diffstat: [{ file: 'src/a.ts', additions: 10, deletions: 3 }] },
    'checks.exitCode': { checks: [{ name: 'build', exitCode: 2, summary: 'ok' }] },
    'checks.summary': { checks: [{ name: 'build', exitCode: 0, summary: 'ok!' }] },
    'checks.added': { checks: [...base.checks, { name: 'lint', exitCode: 0 }] },
    'diagnostics.count': { diagnostics: [{ file: 'src/a.ts', severity: 'warning', count: 2, generation: 3 }] },
    'diagnostics.severity': { diagnostics: [{ file: 'src/a.ts', severity: 'error', count: 1, generation: 3 }] },
    'diagnostics.generation': { diagnostics: [{ file: 'src/a.ts', severity: 'warning', count: 1, generation: 4 }] },
    'diagnostics.file': { diagnostics: [{ file: 'src/b.ts', severity: 'warning', count: 1, generation: 3 }] },
  }
  const seen = new Set([d0])
  for (const [name, change] of Object.entries(variants)) {
    const d = createCodingPatchReviewManifest(input(change)).review.digest
    assert.ok(!seen.has(d), `${name} must change the digest`)
    seen.add(d)
  }
  const wt2 = createCodingPatchReviewManifest(input({ identity: { ...base.identity, worktreePath: 'wt/two' } })).review.digest
  assert.ok(!seen.has(wt2), 'another worktree path is another digest')
})

test('pending, accepted, rejected: reason is the reviewer\'s note on rejected, an explanation otherwise', () => {
  const { review, artifactInput } = createCodingPatchReviewManifest(input())
  const record = attach(artifactInput)
  assert.equal(assertCodingPatchAccepted({ review, artifact: record }).state, 'pending')
  decide(record, 1, 'rejected', { note: `needs tests\u001b[0m ${'x'.repeat(5000)}` })
  const o = assertCodingPatchAccepted({ review, artifact: record })
  assert.deepEqual(Object.keys(o).sort(), ['reason', 'reviewer', 'state', 'version'])
  assert.equal(o.state, 'rejected')
  assert.equal(o.reviewer, 'user:ann')
  assert.ok(o.reason.startsWith('needs tests[0m '), o.reason)
  assert.ok(Buffer.byteLength(o.reason) <= 2048)
  // A later approval of the same revision wins over the earlier rejection.
  decide(record, 1, 'approved', { reviewer: 'user:bo', note: 'lgtm' })
  assert.deepEqual(assertCodingPatchAccepted({ review, artifact: record }), { state: 'accepted', version: 1, reviewer: 'user:bo' })
  // An unknown decision state never reads as acceptance.
  decide(record, 1, 'revoked')
  assert.deepEqual(assertCodingPatchAccepted({ review, artifact: record }), {
    state: 'pending',
    version: 1,
    reason: 'decision for the bound revision is not approved',
    rule: 'unknown_decision',
  })
})

test('superseded: a new patch digest (no revision matches)', () => {
  const { review, record } = approvedReview()
  record.revisions[0].hash = SHA2
  assert.deepEqual(assertCodingPatchAccepted({ review, artifact: record }), superseded(0, 'no artifact revision matches the patch digest', 'patch_changed'))
})

test('superseded: a newer revision attached after the decision (stale acceptance refused)', () => {
  const { review, record } = approvedReview()
  assert.equal(assertCodingPatchAccepted({ review, artifact: record }).state, 'accepted')
  revise(record, SHA2)
  assert.deepEqual(assertCodingPatchAccepted({ review, artifact: record }), superseded(1, 'a newer patch revision supersedes this acceptance', 'newer_revision'))
  // The review of the new patch binds version 2 and starts pending.
  const next = createCodingPatchReviewManifest(input({ patch: { ...input().patch, sha256: SHA2 } }))
  record.revisions[1].preview = { review: next.review }
  assert.equal(assertCodingPatchAccepted({ review: next.review, artifact: record }).rule, 'no_decision')
  // No cap on the record's revisions (the reference has none): ten revisions are read.
  for (let i = 0; i < 8; i++) revise(record, SHA2)
  assert.equal(assertCodingPatchAccepted({ review, artifact: record }).rule, 'newer_revision')
})

test('superseded: a changed review digest', () => {
  const { review, record } = approvedReview()
  // A new review of the same patch bytes with different checks.
  const other = createCodingPatchReviewManifest(input({ checks: [{ name: 'build', exitCode: 1 }] })).review
  assert.deepEqual(assertCodingPatchAccepted({ review: other, artifact: record }), superseded(1, 'review digest changed after the decision (patch, identity, base, or head changed)', 'review_digest_changed'))
  // The stored manifest's content edited, its digest kept.
  const tampered = structuredClone(record)
  tampered.revisions[0].preview.review.changedPaths.push('src/evil.ts')
  assert.equal(assertCodingPatchAccepted({ review, artifact: tampered }).rule, 'review_digest_changed')
  // No stored manifest.
  const bare = structuredClone(record)
  delete bare.revisions[0].preview
  assert.deepEqual(assertCodingPatchAccepted({ review, artifact: bare }), superseded(1, 'artifact revision carries no review binding', 'review_missing'))
})

test('superseded: tampered identity, worktree, base or head in the stored preview', () => {
  const { review, record } = approvedReview()
  const edits = [
    (r) => { r.identity.repositoryId = 'other' },
    (r) => { r.identity.remoteFingerprint = SHA2 },
    (r) => { r.identity.worktreePath = 'wt/x' },
    (r) => { r.base = 'evil' },
    (r) => { r.head = 'evil' },
  ]
  for (const edit of edits) {
    const tampered = structuredClone(record)
    edit(tampered.revisions[0].preview.review)
    assert.deepEqual(
      assertCodingPatchAccepted({ review, artifact: tampered }),
      superseded(1, 'repository/worktree/base/head identity changed after the decision', 'identity_changed'),
      String(edit),
    )
  }
})

test('a review whose digest does not match its own content is superseded; another thread or artifact is OWNERSHIP', () => {
  const { review, record } = approvedReview()
  for (const forged of [{ ...review, head: 'other' }, { ...review, note: 'x' }, { ...review, digest: 'd'.repeat(64) }, { ...review, digest: 'not hex' }]) {
    assert.deepEqual(assertCodingPatchAccepted({ review: forged, artifact: record }), superseded(1, 'review digest changed after the decision (patch, identity, base, or head changed)', 'review_digest_changed'))
  }
  // The unbound members may change.
  assert.equal(assertCodingPatchAccepted({ review: { ...review, reviewId: 'x', createdAt: '2000-01-01T00:00:00Z' }, artifact: record }).state, 'accepted')
  expectReviewError(() => assertCodingPatchAccepted({ review, artifact: { ...record, threadId: 'thread-2' } }), 'ERR_PRISM_REVIEW_OWNERSHIP')
  expectReviewError(() => assertCodingPatchAccepted({ review, artifact: { ...record, id: 'patch-2' } }), 'ERR_PRISM_REVIEW_OWNERSHIP')
})

test('limits are maxRevisions, maxDiagnostics, maxManifestBytes; resolveCodingReviewLimits fills the defaults', () => {
  assert.deepEqual(resolveCodingReviewLimits(), { maxRevisions: 8, maxDiagnostics: 500, maxManifestBytes: 65536 })
  assert.deepEqual(resolveCodingReviewLimits({ maxRevisions: 32, maxManifestBytes: 262144 }), { maxRevisions: 32, maxDiagnostics: 500, maxManifestBytes: 262144 })
  for (const bad of [{ maxRevisions: 0 }, { maxRevisions: 33 }, { maxDiagnostics: 5001 }, { maxManifestBytes: 262145 }, { maxRevisions: 1.5 }, { maxRevisions: NaN }]) {
    assert.throws(() => resolveCodingReviewLimits(bad), RangeError, JSON.stringify(bad))
  }
  expectReviewError(() => resolveCodingReviewLimits({ maxReviewRevisions: 8 }), 'ERR_PRISM_REVIEW_INPUT', /maxReviewRevisions is not a known field/)
  // maxRevisions caps the check summaries and, 250 per revision, changed paths and diffstat rows.
  const checks = (n) => Array.from({ length: n }, (_, i) => ({ name: `c${i}`, exitCode: 0, summary: 'x' }))
  expectReviewError(() => createCodingPatchReviewManifest(input({ checks: checks(9) })), 'ERR_PRISM_REVIEW_LIMIT', /maxRevisions is 8/)
  assert.equal(createCodingPatchReviewManifest(input({ checks: checks(9), limits: { maxRevisions: 9 } })).review.checks.length, 9)
  const paths = (n) => Array.from({ length: n }, (_, i) => `f/${i}`)
  expectReviewError(() => createCodingPatchReviewManifest(input({ changedPaths: paths(501), limits: { maxRevisions: 2 } })), 'ERR_PRISM_REVIEW_LIMIT', /the cap is 500/)
  assert.ok(createCodingPatchReviewManifest(input({ changedPaths: paths(500), limits: { maxRevisions: 2 } })))
  // assertCodingPatchAccepted takes no limits (the reference's takes none).
  const { review, artifactInput } = createCodingPatchReviewManifest(input())
  expectReviewError(() => assertCodingPatchAccepted({ review, artifact: attach(artifactInput), limits: {} }), 'ERR_PRISM_REVIEW_INPUT', /input\.limits is not a known field/)
})

test('assertCodingPatchAccepted never mutates its input and accepts frozen input', () => {
  const { review, artifactInput } = createCodingPatchReviewManifest(input())
  const record = decide(attach(artifactInput), 1, 'approved', { note: 'ok \u0007' })
  const arg = { review: structuredClone(review), artifact: record }
  const before = structuredClone(arg)
  const deepFreeze = (o) => { Object.freeze(o); for (const v of Object.values(o)) if (v && typeof v === 'object' && !Object.isFrozen(v)) deepFreeze(v); return o }
  deepFreeze(arg)
  const o = assertCodingPatchAccepted(arg)
  assert.equal(o.state, 'accepted')
  assert.deepEqual(arg, before)
})

test('patch bodies, commands, environment and unknown members are refused, never embedded', () => {
  const base = input()
  const cases = [
    { patch: { ...base.patch, body: 'diff --git a/x b/x' } },
    { command: 'npm test' },
    { env: { GITHUB_TOKEN: 'ghp_secret' } },
    { identity: { ...base.identity, token: 'ghp_secret' } },
    { checks: [{ name: 'build', exitCode: 0, command: 'make all' }] },
    { checks: [{ name: 'build', exitCode: 0, env: { A: '1' } }] },
    { diffstat: [{ file: 'a', additions: 0, deletions: 0, patch: '+x' }] },
    { limits: { maxSomething: 1 } },
    { schemaVersion: 1 },
  ]
  for (const c of cases) {
    expectReviewError(() => createCodingPatchReviewManifest(input(c)), 'ERR_PRISM_REVIEW_INPUT', /is not a known field/)
  }
  expectReviewError(() => createCodingPatchReviewManifest(input({ patch: { ...base.patch, body: 'x' } })), 'ERR_PRISM_REVIEW_INPUT', /input\.patch\.body.*never embeds patch bodies/)
  // And nothing of an accepted input is more than its known fields.
  const { review, artifactInput } = createCodingPatchReviewManifest(input())
  assert.deepEqual(Object.keys(review).sort(), ['artifactId', 'base', 'changedPaths', 'checks', 'createdAt', 'diagnostics', 'diffstat', 'digest', 'head', 'identity', 'patch', 'reviewId', 'schemaVersion', 'state', 'threadId'])
  assert.deepEqual(Object.keys(artifactInput), ['threadId', 'id', 'uri', 'mime', 'hash', 'size', 'title', 'changeNote', 'preview'])
})

test('URIs that are local paths, embedded bodies or carry credentials are refused', () => {
  for (const uri of ['/tmp/p.patch', 'file:///tmp/p.patch', 'C:\\p.patch', 'data:text/x-patch;base64,AAAA', 'https://user:pw@blob.example/p', 'https://blob.example/p?X-Amz-Signature=abc', 'a/../../p', 'has space']) {
    expectReviewError(() => createCodingPatchReviewManifest(input({ patch: { ...input().patch, uri } })), 'ERR_PRISM_REVIEW_INPUT', /input\.patch\.uri/)
  }
  for (const uri of ['https://blob.example/p/1.patch', 's3://bucket/key.patch?versionId=2', 'artifacts/p.patch']) {
    assert.equal(createCodingPatchReviewManifest(input({ patch: { ...input().patch, uri } })).artifactInput.uri, uri)
  }
})

test('summaries are stripped of control characters', () => {
  const { review } = createCodingPatchReviewManifest(input({
    checks: [
      { name: 'test', exitCode: 1, summary: '\u001b[31m2 failed\u001b[0m\r\n- a\u0000\u202e\tb' },
      { name: 'lint', exitCode: 0, summary: '\u0007' },
    ],
  }))
  assert.deepEqual(review.checks, [
    { name: 'lint', exitCode: 0, summary: '' },
    { name: 'test', exitCode: 1, summary: '[31m2 failed[0m\n- a\tb' },
  ])
})

test('caps are charged before retaining: diagnostics, checks, paths, manifest bytes, check summaries, URIs, input size', () => {
  const diag = (n) => Array.from({ length: n }, (_, i) => ({ file: `f${i}.ts`, severity: 'error', count: 1, generation: 1 }))
  expectReviewError(() => createCodingPatchReviewManifest(input({ diagnostics: diag(501) })), 'ERR_PRISM_REVIEW_LIMIT', /maxDiagnostics is 500/)
  // Counted before entries are read: 501 garbage entries are a LIMIT error, not an INPUT error.
  expectReviewError(() => createCodingPatchReviewManifest(input({ diagnostics: Array(501).fill(null) })), 'ERR_PRISM_REVIEW_LIMIT')
  expectReviewError(() => createCodingPatchReviewManifest(input({ checks: Array(9).fill(null) })), 'ERR_PRISM_REVIEW_LIMIT')
  assert.equal(createCodingPatchReviewManifest(input({ diagnostics: diag(501), limits: { maxDiagnostics: 501 } })).review.diagnostics.length, 501)
  expectReviewError(() => createCodingPatchReviewManifest(input({ diagnostics: diag(5001), limits: { maxDiagnostics: 5000 } })), 'ERR_PRISM_REVIEW_LIMIT')

  const paths = Array.from({ length: 1900 }, (_, i) => `src/components/dir-${i}/file-${i}.tsx`)
  expectReviewError(() => createCodingPatchReviewManifest(input({ changedPaths: paths })), 'ERR_PRISM_REVIEW_LIMIT', /maxManifestBytes/)
  const big = createCodingPatchReviewManifest(input({ changedPaths: paths, limits: { maxManifestBytes: 256 * 1024 } }))
  assert.equal(big.review.changedPaths.length, 1900)
  expectReviewError(() => createCodingPatchReviewManifest(input({ changedPaths: [...paths, ...paths.map((p) => `x/${p}`)] })), 'ERR_PRISM_REVIEW_LIMIT', /changedPaths has 3800 paths; the cap is 2000/)
  // The cap is on the manifest's JSON bytes, exactly.
  const exact = Buffer.byteLength(JSON.stringify(createCodingPatchReviewManifest(input({ createdAt: '2026-01-01T00:00:00.000Z' })).review))
  assert.ok(createCodingPatchReviewManifest(input({ createdAt: '2026-01-01T00:00:00.000Z', limits: { maxManifestBytes: exact } })))
  expectReviewError(() => createCodingPatchReviewManifest(input({ createdAt: '2026-01-01T00:00:00.000Z', limits: { maxManifestBytes: exact - 1 } })), 'ERR_PRISM_REVIEW_LIMIT')
  expectReviewError(() => createCodingPatchReviewManifest(input({ limits: { maxManifestBytes: 64 } })), 'ERR_PRISM_REVIEW_LIMIT')

  expectReviewError(() => createCodingPatchReviewManifest(input({ checks: [{ name: 'b', exitCode: 0, summary: 'é'.repeat(4097) }] })), 'ERR_PRISM_REVIEW_LIMIT', /input\.checks\[0\]\.summary/)
  assert.ok(createCodingPatchReviewManifest(input({ checks: [{ name: 'b', exitCode: 0, summary: 'é'.repeat(4096) }] })))
  // Charged after control characters are stripped (what is kept is what counts).
  assert.ok(createCodingPatchReviewManifest(input({ checks: [{ name: 'b', exitCode: 0, summary: `${'x'.repeat(8192)}\u0007\u0007` }] })))
  expectReviewError(() => createCodingPatchReviewManifest(input({ patch: { ...input().patch, uri: `https://h/${'a'.repeat(2039)}` } })), 'ERR_PRISM_REVIEW_LIMIT', /input\.patch\.uri/)
  assert.ok(createCodingPatchReviewManifest(input({ patch: { ...input().patch, uri: `https://h/${'a'.repeat(2038)}` } })))
  expectReviewError(() => createCodingPatchReviewManifest(input({ threadId: 'x'.repeat(5 * 1024 * 1024) })), 'ERR_PRISM_REVIEW_LIMIT')
})

test('limits outside 1..hard are RangeErrors, never clamped', () => {
  const cases = [
    { maxRevisions: 0 }, { maxRevisions: 33 },
    { maxDiagnostics: 0 }, { maxDiagnostics: 5001 },
    { maxManifestBytes: 0 }, { maxManifestBytes: 256 * 1024 + 1 },
    { maxManifestBytes: 1.5 }, { maxManifestBytes: -5 }, { maxManifestBytes: NaN }, { maxManifestBytes: Infinity },
  ]
  for (const limits of cases) {
    assert.throws(() => createCodingPatchReviewManifest(input({ limits })), (e) => e instanceof RangeError && /1\.\.=/.test(e.message), JSON.stringify(limits))
  }
  expectReviewError(() => createCodingPatchReviewManifest(input({ limits: { maxManifestBytes: '65536' } })), 'ERR_PRISM_REVIEW_INPUT')
  expectReviewError(() => createCodingPatchReviewManifest(input({ limits: [] })), 'ERR_PRISM_REVIEW_INPUT')
})

test('every field is validated with ERR_PRISM_REVIEW_INPUT naming it', () => {
  const base = input()
  const cases = [
    ['input.threadId', { threadId: null }], ['input.threadId', { threadId: 42 }], ['input.threadId', { threadId: '' }],
    ['input.threadId', { threadId: 'x'.repeat(1025) }], ['input.threadId', { threadId: 'a\u0000b' }],
    ['input.artifactId', { artifactId: ['patch-1'] }], ['input.artifactId', { artifactId: undefined }],
    ['input.identity', { identity: 'app' }], ['input.identity', { identity: [] }], ['input.identity', { identity: null }],
    ['input.identity.repositoryId', { identity: { ...base.identity, repositoryId: {} } }],
    ['input.identity.remoteFingerprint', { identity: { ...base.identity, remoteFingerprint: 'abc' } }],
    ['input.identity.remoteFingerprint', { identity: { ...base.identity, remoteFingerprint: FP.toUpperCase() } }],
    ['input.identity.remoteFingerprint', { identity: { ...base.identity, remoteFingerprint: 'https://user:token@github.com/a/b' } }],
    ['input.identity.defaultBranch', { identity: { ...base.identity, defaultBranch: true } }],
    ['input.identity.worktreePath', { identity: { ...base.identity, worktreePath: '/abs/wt' } }],
    ['input.identity.worktreePath', { identity: { ...base.identity, worktreePath: '../wt' } }],
    ['input.identity.worktreePath', { identity: { ...base.identity, worktreePath: 'C:\\wt' } }],
    ['input.base', { base: 7 }], ['input.head', { head: '   ' }],
    ['input.patch', { patch: 'artifacts/p.patch' }],
    ['input.patch.kind', { patch: { ...base.patch, kind: 'Patch' } }],
    ['input.patch.kind', { patch: { ...base.patch, kind: 'x/y' } }],
    ['input.patch.sha256', { patch: { ...base.patch, sha256: SHA.toUpperCase() } }],
    ['input.patch.sha256', { patch: { ...base.patch, sha256: `sha256:${SHA}` } }],
    ['input.patch.bytes', { patch: { ...base.patch, bytes: -1 } }],
    ['input.patch.bytes', { patch: { ...base.patch, bytes: 1.5 } }],
    ['input.patch.bytes', { patch: { ...base.patch, bytes: NaN } }],
    ['input.patch.bytes', { patch: { ...base.patch, bytes: '4096' } }],
    ['input.patch.bytes', { patch: { ...base.patch, bytes: 2 ** 60 } }],
    ['input.changedPaths', { changedPaths: 'src/a.ts' }], ['input.changedPaths', { changedPaths: null }],
    ['input.changedPaths[0]', { changedPaths: [1] }], ['input.changedPaths[1]', { changedPaths: ['ok', '../escape'] }],
    ['input.changedPaths[0]', { changedPaths: ['/etc/passwd'] }], ['input.changedPaths[0]', { changedPaths: [{ path: 'a' }] }],
    ['input.diffstat', { diffstat: {} }], ['input.diffstat[0]', { diffstat: [null] }], ['input.diffstat[0]', { diffstat: [['a', 1, 2]] }],
    ['input.diffstat[0].additions', { diffstat: [{ file: 'a', additions: -1, deletions: 0 }] }],
    ['input.diffstat[0].deletions', { diffstat: [{ file: 'a', additions: 0 }] }],
    ['input.diffstat[0].file', { diffstat: [{ file: 'a\\b', additions: 0, deletions: 0 }] }],
    ['input.diffstat', { diffstat: [{ file: 'a', additions: 0, deletions: 0 }, { file: 'a', additions: 1, deletions: 0 }] }],
    ['input.checks', { checks: { name: 'x' } }],
    ['input.checks[0].name', { checks: [{ name: '', exitCode: 0 }] }],
    ['input.checks[0].exitCode', { checks: [{ name: 'b', exitCode: 0.5 }] }],
    ['input.checks[0].exitCode', { checks: [{ name: 'b', exitCode: '0' }] }],
    ['input.checks[0].exitCode', { checks: [{ name: 'b' }] }],
    ['input.checks[0].summary', { checks: [{ name: 'b', exitCode: 0, summary: 5 }] }],
    ['input.checks', { checks: [{ name: 'b', exitCode: 0 }, { name: 'b', exitCode: 1 }] }],
    ['input.diagnostics[0].count', { diagnostics: [{ file: 'a', severity: 'error', count: '1', generation: 0 }] }],
    ['input.diagnostics[0].generation', { diagnostics: [{ file: 'a', severity: 'error', count: 0, generation: -2 }] }],
    ['input.diagnostics[0].severity', { diagnostics: [{ file: 'a', severity: 'Error', count: 0, generation: 0 }] }],
    ['input.diagnostics[0].file', { diagnostics: [{ file: 'a/../../b', severity: 'error', count: 0, generation: 0 }] }],
    ['input.threadId', { threadId: 'bad thread' }], ['input.threadId', { threadId: '-leading' }], ['input.artifactId', { artifactId: 'a/b' }],
    ['input.identity.repositoryId', { identity: { ...base.identity, repositoryId: 'acme/app' } }],
    ['input.identity.defaultBranch', { identity: { ...base.identity, defaultBranch: 'a..b' } }],
    ['input.base', { base: 'a..b' }], ['input.head', { head: 'has space' }], ['input.head', { head: 'HEAD~1' }],
    ['input.head', { head: 'topic.lock' }], ['input.head', { head: 'a\u0007b' }], ['input.head', { head: 'x'.repeat(256) }],
    ['input.checks[0].name', { checks: [{ name: 'bad name', exitCode: 0 }] }], ['input.checks[0].name', { checks: [{ name: 'a.b', exitCode: 0 }] }],
    ['input.reviewId', { reviewId: '' }], ['input.reviewId', { reviewId: 3 }],
    ['input.createdAt', { createdAt: 'yesterday' }], ['input.createdAt', { createdAt: '2026-01-01T00:00:00+02:00' }],
    ['input.createdAt', { createdAt: '2026-02-30T00:00:00Z' }], ['input.createdAt', { createdAt: new Date(0).getTime() }],
    ['input.title', { title: {} }],
  ]
  for (const [named, change] of cases) {
    assert.throws(() => createCodingPatchReviewManifest(input(change)), (e) => {
      assert.ok(e instanceof CodingPatchReviewError, `${JSON.stringify(change)}: ${e}`)
      assert.equal(e.code, 'ERR_PRISM_REVIEW_INPUT', `${JSON.stringify(change)}: ${e.message}`)
      assert.ok(e.message.includes(named), `${JSON.stringify(change)}: message ${JSON.stringify(e.message)} must name ${named}`)
      return true
    })
  }
  // A Date for createdAt serialises to an ISO string, which is accepted.
  assert.equal(createCodingPatchReviewManifest(input({ createdAt: new Date(Date.UTC(2026, 0, 2)) })).review.createdAt, '2026-01-02T00:00:00.000Z')
})

test('bad input of every wrong type is a typed error, never a crash', () => {
  const cyclic = input()
  cyclic.self = cyclic
  const withBigInt = input({ patch: { ...input().patch, bytes: 10n } })
  const throwing = input()
  Object.defineProperty(throwing, 'threadId', { enumerable: true, get() { throw new Error('boom') } })
  const proto = JSON.parse(`{"__proto__": {"polluted": true}, ${JSON.stringify(input()).slice(1)}`)
  const nestedGarbage = input({ identity: { repositoryId: { a: [[[{ b: null }]]] }, remoteFingerprint: [FP], defaultBranch: NaN } })
  let deep = []
  for (let i = 0; i < 5000; i++) deep = [deep]
  const bad = [undefined, null, 0, 1, -1, NaN, Infinity, 'input', '', true, [], [input()], Symbol('x'), () => input(), new Map(), cyclic, withBigInt, throwing, proto, nestedGarbage, input({ changedPaths: deep }), input({ diagnostics: { length: 3 } })]
  for (const value of bad) {
    assert.throws(() => createCodingPatchReviewManifest(value), (e) => e instanceof CodingPatchReviewError && e.code === 'ERR_PRISM_REVIEW_INPUT', String(typeof value === 'symbol' ? 'symbol' : typeof value))
    assert.throws(() => assertCodingPatchAccepted(value), (e) => e instanceof CodingPatchReviewError && e.code === 'ERR_PRISM_REVIEW_INPUT')
  }
  assert.equal(Object.prototype.polluted, undefined)
  // Lone surrogates cannot be UTF-8: refused, not mangled.
  expectReviewError(() => createCodingPatchReviewManifest(input({ head: 'feature-\ud800' })), 'ERR_PRISM_REVIEW_INPUT')
  // Huge strings in assert input.
  expectReviewError(() => assertCodingPatchAccepted({ review: 'x'.repeat(17 * 1024 * 1024), artifact: {} }), 'ERR_PRISM_REVIEW_LIMIT')
})

test('malformed artifact records are INPUT errors', () => {
  const { review, artifactInput } = createCodingPatchReviewManifest(input())
  const record = attach(artifactInput)
  const mutations = [
    { revisions: null }, { revisions: {} }, { revisions: [null] },
    { revisions: [{ version: 0, hash: SHA }] }, { revisions: [{ version: '1', hash: SHA }] },
    { revisions: [{ version: 1 }] }, { revisions: [{ version: 1, hash: SHA }, { version: 1, hash: SHA2 }] },
    { approvals: {} }, { approvals: [7] }, { approvals: [{ state: 'approved' }] }, { approvals: [{ version: 1 }] },
    { threadId: undefined }, { id: 5 },
  ]
  for (const m of mutations) {
    expectReviewError(() => assertCodingPatchAccepted({ review, artifact: { ...record, ...m } }), 'ERR_PRISM_REVIEW_INPUT')
  }
  expectReviewError(() => assertCodingPatchAccepted({ review, artifact: [record] }), 'ERR_PRISM_REVIEW_INPUT')
  // A record without revisions binds nothing: superseded, as in the reference.
  assert.equal(assertCodingPatchAccepted({ review, artifact: { ...record, revisions: [] } }).rule, 'patch_changed')
  expectReviewError(() => assertCodingPatchAccepted({ review: null, artifact: record }), 'ERR_PRISM_REVIEW_INPUT')
  expectReviewError(() => assertCodingPatchAccepted({ review, artifact: record, extra: 1 }), 'ERR_PRISM_REVIEW_INPUT')
})
