// Two processes race to claim the same approved drafts in one SQLite file: for every
// draft exactly one claim succeeds (the other is `conflict`), so it executes once.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import * as prism from '../index.mjs'
import { mailDraft, ownership, service } from './fixtures/drafts.mjs'

const DRAFTS = 20

function child(filename) {
  const proc = spawn(process.execPath, [new URL('./fixtures/drafts-claimer.mjs', import.meta.url).pathname, filename], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: proc.stdout })
  const waiting = []
  const queued = []
  lines.on('line', (l) => (waiting.length ? waiting.shift()(l) : queued.push(l)))
  const next = () => (queued.length ? Promise.resolve(queued.shift()) : new Promise((r) => waiting.push(r)))
  return { proc, next }
}

test('two processes claiming one SQLite draft: exactly one executes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'prism-drafts-'))
  const filename = join(dir, 'drafts.db')
  const persistence = prism.createSqlitePersistence({ filename })
  t.after(async () => {
    await persistence.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const svc = service(persistence.checkpoints)
  const approved = []
  for (let i = 0; i < DRAFTS; i++) {
    await svc.create(mailDraft({ draftId: `d${i}` }))
    const d = await svc.decide({ ownership, threadId: 'thread-1', draftId: `d${i}`, expectedVersion: 1, decision: 'approve', reviewer: 'user:r' })
    approved.push(d)
  }
  const a = child(filename)
  const b = child(filename)
  t.after(() => {
    a.proc.kill()
    b.proc.kill()
  })
  assert.equal(await a.next(), 'ready')
  assert.equal(await b.next(), 'ready')
  for (const d of approved) {
    const line = `${d.id} ${d.version} ${d.revisions[0].payloadDigest}\n`
    a.proc.stdin.write(line)
    b.proc.stdin.write(line)
  }
  for (const d of approved) {
    const answers = [await a.next(), await b.next()].map((l) => l.split(' ')[1]).sort()
    assert.deepEqual(answers, ['conflict', 'ok'], `${d.id}: ${answers}`)
    const after = await svc.get({ ownership, threadId: 'thread-1', draftId: d.id })
    assert.equal(after.status, 'executing')
    assert.equal(after.version, d.version + 1)
  }
  a.proc.stdin.end()
  b.proc.stdin.end()
})
