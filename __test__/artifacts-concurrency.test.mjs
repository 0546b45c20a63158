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
