// Redaction: the stored bytes, every result and every audit event hold no byte sequence
// of a registered secret, with the native redactor and with a host redactor object.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync, existsSync } from 'node:fs'
import { dirname, join, basename } from 'node:path'
import { createArtifactService, createSecretRedactor, ArtifactError } from '../index.mjs'
import { storeKinds, LINK_SECRET, ownership, identity, isReason } from './fixtures/artifact-stores.mjs'

const SECRETS = ['sk-live-4f9a8b7c6d5e', 'hunter2-password', 'Bearer eyJhbGciOi']

async function storedBytes(kind, opened) {
  if (opened.raw) return opened.raw()
  if (opened.filename) {
    const dir = dirname(opened.filename)
    return readdirSync(dir)
      .filter((f) => f.startsWith(basename(opened.filename)))
      .map((f) => readFileSync(join(dir, f)).toString('latin1'))
      .join('\n')
  }
  const page = await opened.store.listCheckpoints({ namespace: 'prism.artifact', limit: 1000 })
  return JSON.stringify(page)
}

function hostRedactor(secrets) {
  const walk = (v) => {
    if (typeof v === 'string') return secrets.reduce((s, x) => s.split(x).join('***'), v)
    if (Array.isArray(v)) return v.map(walk)
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [walk(k), walk(x)]))
    return v
  }
  return { redact: walk }
}

const redactors = [
  { name: 'native', make: () => createSecretRedactor(SECRETS), marker: '[REDACTED]' },
  { name: 'host', make: () => hostRedactor(SECRETS), marker: '***' },
]

for (const kind of storeKinds()) {
  for (const r of redactors) {
    test(`[${kind.name}/${r.name} redactor] stored bytes, results and audit events hold no registered secret`, async (t) => {
      const opened = kind.open()
      t.after(opened.close)
      const events = []
      const svc = createArtifactService(opened.store, { redactor: r.make(), linkSecret: LINK_SECRET, onDecision: (e) => events.push(e) })
      const results = []
      const ref = { ownership, threadId: 'thread-1', artifactId: 'a' }
      results.push(
        await svc.attach({
          ownership,
          identity: identity({ principal: { kind: 'user', id: `bob ${SECRETS[1]}` } }),
          threadId: 'thread-1',
          id: 'a',
          uri: `https://blob.example/doc?key=${SECRETS[0]}`,
          mime: 'text/markdown',
          hash: 'sha256:aaa',
          title: `Report ${SECRETS[2]}`,
          changeNote: `token ${SECRETS[0]} and ${SECRETS[1]}`,
          preview: { [SECRETS[0]]: [SECRETS[1], { deep: { deeper: SECRETS[2] } }], count: 3 },
          citations: [{ uri: 'https://src.example/1', excerpt: `quoted ${SECRETS[1]}`, sourceId: 's1' }],
          kind: `run-${SECRETS[0]}`,
        }),
      )
      results.push(await svc.revise({ ...ref, uri: 'https://blob.example/v2', hash: 'sha256:bbb', changeNote: SECRETS[2] }))
      results.push(await svc.approve({ ...ref, version: 2, reviewer: `user:${SECRETS[1]}`, note: `ok ${SECRETS[0]}` }))
      results.push(await svc.reject({ ...ref, version: 1, identity: identity(), note: SECRETS[1] }))
      results.push(await svc.get(ref))
      results.push(await svc.list({ ownership, threadId: 'thread-1' }))
      results.push(await svc.lastValidated(ref))
      results.push(await svc.compare({ ...ref, from: 1, to: 2 }))
      results.push(await svc.deliveryLink(ref))
      const stored = await storedBytes(kind, opened)
      assert.ok(stored.includes('thread-1:a'), 'the stored bytes hold the record')
      const everything = [stored, JSON.stringify(results), JSON.stringify(events)].join('\n')
      for (const s of SECRETS) assert.equal(everything.includes(s), false, `secret ${s} leaked`)
      assert.equal(events.length, 4)
      assert.ok(JSON.stringify(events).includes(r.marker), 'actor refs are redacted, not dropped')
      assert.equal(results[0].revisions[0].uri, `https://blob.example/doc?key=${r.marker}`)
      if (opened.filename) assert.ok(existsSync(opened.filename))
    })
  }
}

test('ids and ownership that hold a registered secret are refused, never stored; error messages never quote one', async () => {
  for (const redactor of [createSecretRedactor(SECRETS), hostRedactor(SECRETS)]) {
    const { store } = storeKinds()[0].open()
    const svc = createArtifactService(store, { redactor, linkSecret: LINK_SECRET })
    const doc = { uri: 'https://x', mime: 'm', hash: 'h' }
    await assert.rejects(svc.attach({ ownership, threadId: `t-${SECRETS[0]}`, ...doc }), (e) => e instanceof ArtifactError && ['invalid_id'].includes(e.reason))
    await assert.rejects(svc.attach({ ownership: { tenantId: SECRETS[1] }, threadId: 't', ...doc }), isReason('ownership'))
    const err = await svc.get({ ownership, threadId: 't', artifactId: 'a', [SECRETS[0]]: 1 }).catch((e) => e)
    assert.ok(err instanceof ArtifactError && err.reason === 'invalid_input')
    assert.ok(!err.message.includes(SECRETS[0]), err.message)
    const page = await store.listCheckpoints({ namespace: 'prism.artifact' })
    assert.equal(page.items.length, 0)
  }
})

test('a throwing host redactor is a typed error and nothing is stored', async () => {
  const { store } = storeKinds()[0].open()
  const svc = createArtifactService(store, {
    redactor: {
      redact() {
        throw new Error('redactor down')
      },
    },
    linkSecret: LINK_SECRET,
  })
  await assert.rejects(svc.attach({ ownership, threadId: 't', uri: 'https://x', mime: 'm', hash: 'h' }), isReason('invalid_input'))
  assert.equal((await store.listCheckpoints({ namespace: 'prism.artifact' })).items.length, 0)
})
