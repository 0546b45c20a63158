// Work drafts: create -> decide (approve with an edit) -> claimExecution -> markExecuted
// cycles on the memory and SQLite stores, reported next to the artifact service's cycle
// (attach -> revise -> approve -> get) measured in the same run on the same store.
import { performance } from 'node:perf_hooks'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { fmt } from './util.mjs'

const require = createRequire(import.meta.url)
const prism = require('../index.js')

const ownership = { tenantId: 'bench' }
const SCHEMA = {
  type: 'object',
  properties: { to: { type: 'array', items: { type: 'string' } }, subject: { type: 'string' }, body: { type: 'string' } },
  required: ['to', 'subject'],
  additionalProperties: false,
}

async function draftCycle(svc, threadId, draftId) {
  const at = { ownership, threadId, draftId }
  let d = await svc.create({
    ...at,
    provider: 'mail',
    op: 'send',
    payload: { to: ['a@bench.example', 'b@bench.example'], subject: 'Bench', body: 'x'.repeat(200) },
    schema: SCHEMA,
    recipients: ['/to'],
  })
  const edit = { to: ['a@bench.example'], subject: 'Bench', body: 'y'.repeat(200) }
  d = await svc.decide({ ...at, expectedVersion: d.version, decision: 'approve', modifiedArguments: edit, reviewer: 'user:bench' })
  d = await svc.claimExecution({ ...at, expectedVersion: d.version, payloadDigest: d.revisions[1].payloadDigest })
  await svc.markExecuted({ ...at, expectedVersion: d.version, outcome: { id: draftId } })
}

async function artifactCycle(svc, threadId, id) {
  const rec = await svc.attach({ ownership, threadId, id, uri: `https://blob.example/${id}`, mime: 'text/markdown', hash: 'sha256:1' })
  await svc.revise({ ownership, threadId, artifactId: rec.id, uri: `https://blob.example/${id}-v2`, hash: 'sha256:2' })
  await svc.approve({ ownership, threadId, artifactId: rec.id, version: 2, reviewer: 'user:bench' })
  await svc.get({ ownership, threadId, artifactId: rec.id })
}

async function perCycle(fn, n, tag) {
  for (let i = 0; i < Math.min(20, n); i++) await fn(`warm-${tag}`, `w${i}`)
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await fn(`${tag}-${Math.floor(i / 50)}`, `c${i}`)
  return (performance.now() - t0) / n
}

async function run(name, store, n) {
  const redactor = prism.createSecretRedactor(['sk-bench-secret'])
  const drafts = prism.createWorkDraftService(store, { redactor })
  const artifacts = prism.createArtifactService(store, { redactor, linkSecret: 'bench-link-secret-0123456789' })
  const a = await perCycle((t, id) => artifactCycle(artifacts, t, id), n, `${name}-a`)
  const d = await perCycle((t, id) => draftCycle(drafts, t, id), n, `${name}-d`)
  console.log(`| ${name} | ${n} | ${fmt(d, 3)} | ${fmt(a, 3)} | ${fmt(d / a)}x |`)
}

export default async function main() {
  console.log('| store | cycles | draft cycle ms | artifact cycle ms | draft / artifact |')
  console.log('| --- | --- | --- | --- | --- |')
  await run('memory', prism.createMemoryCheckpointStore({ maxRecords: 100_000 }), 2000)
  const dir = mkdtempSync(join(tmpdir(), 'prism-bench-drafts-'))
  const p = prism.createSqlitePersistence({ filename: join(dir, 'bench.db') })
  try {
    await run('sqlite', p.checkpoints, 500)
  } finally {
    await p.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
