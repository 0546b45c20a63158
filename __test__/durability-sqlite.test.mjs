// Issue 3, through the artifact review service: several Node processes sharing one SQLite
// file (createSqlitePersistence({ filename }).checkpoints). The store-level versions of
// these tests are in store-sqlite.test.mjs.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openPersistence, openService, ownership, THREAD, noteOf, attachRevised } from './fixtures/durability-child.mjs'
import { start, runTogether, parse, shuffle, assertDecidedOnce } from './fixtures/durability-spawn.mjs'
import { integrity } from './fixtures/sqlite-integrity.mjs'

const dir = mkdtempSync(join(tmpdir(), 'prism-durability-'))
after(() => rmSync(dir, { recursive: true, force: true }))

async function listAll(svc, threadId) {
  const records = []
  let cursor
  do {
    const page = await svc.list({ ownership, threadId, limit: 200, ...(cursor ? { cursor } : {}) })
    records.push(...page.items)
    cursor = page.nextCursor
  } while (cursor)
  return records
}

test('four processes approving concurrently in one SQLite file: every resolved approval exactly once, lastValidated = highest approved, integrity ok', async (t) => {
  const filename = join(dir, 'four.db')
  const ARTIFACTS = 4
  const REVISIONS = 24
  const PROCESSES = 4

  // The shared artifacts, each with REVISIONS revisions, written before the load.
  const setup = openPersistence({ store: 'sqlite', filename })
  const svc0 = openService(setup)
  const plan = []
  for (let k = 0; k < ARTIFACTS; k++) {
    const artifactId = `a${k}`
    await attachRevised(svc0, artifactId, REVISIONS)
    // Approve most revisions; reject every fifth and the top k+1, so the highest approved
    // version differs per artifact and rejections land after approvals of lower versions.
    for (let v = 1; v <= REVISIONS; v++) plan.push([artifactId, v, v % 5 === 0 || v >= REVISIONS - k ? 'reject' : 'approve'])
  }
  await setup.close()

  // Every process gets a quarter of the decisions, in an order that mixes the artifacts,
  // and runs two concurrent reviewers; all four start together.
  const order = shuffle(plan, 3)
  const results = await runTogether(
    Array.from({ length: PROCESSES }, (_, id) => ({
      store: 'sqlite', filename, mode: 'decide', id, reviewers: 2,
      plan: order.filter((_, i) => i % PROCESSES === id),
    })),
  )
  const resolved = []
  let conflicts = 0
  for (const [id, r] of results.entries()) {
    assert.equal(r.code, 0, r.stderr)
    const { ok, errors, other, conflicts: c } = parse(r.lines)
    assert.deepEqual(other, [])
    assert.deepEqual(errors, [], 'on SQLite the only failure to retry is conflict')
    assert.equal(ok.length, order.filter((_, i) => i % PROCESSES === id).length, `process ${id} resolved its whole plan`)
    for (const [artifactId, version, state, note] of ok) resolved.push({ id, artifactId, version: Number(version), state, note })
    conflicts += c
  }
  t.diagnostic(`conflicts retried across processes: ${conflicts}`)

  assert.deepEqual(await integrity(filename), ['ok'])

  const p = openPersistence({ store: 'sqlite', filename })
  const svc = openService(p)
  for (let k = 0; k < ARTIFACTS; k++) {
    const artifactId = `a${k}`
    const rec = await svc.get({ ownership, threadId: THREAD, artifactId })
    const mine = resolved.filter((d) => d.artifactId === artifactId)
    assert.equal(mine.length, REVISIONS)
    assert.equal(rec.latestVersion, REVISIONS)
    assert.equal(rec.approvals.length, mine.length, `${artifactId}: one decision per resolved approval, none extra`)
    assertDecidedOnce(rec, mine, artifactId)
    const highest = Math.max(...mine.filter((d) => d.state === 'approved').map((d) => d.version))
    assert.equal(highest, REVISIONS - k - 1 - (k === 3 ? 1 : 0), 'the plan approves what the test expects')
    assert.equal(rec.lastValidatedVersion, highest, `${artifactId}: lastValidatedVersion is the highest approved version`)
    assert.equal((await svc.lastValidated({ ownership, threadId: THREAD, artifactId })).version, highest)
    // One checkpoint write per revision and per decision: no lost and no duplicated save.
    const cp = await p.checkpoints.loadCheckpoint({ namespace: 'prism.artifact', key: `${THREAD}:${artifactId}`, ...ownership })
    assert.equal(cp.version, REVISIONS + REVISIONS)
  }
  await p.close()
})

test('a process killed with SIGKILL mid approve/revise loop on SQLite: every resolved operation survives, integrity ok', async () => {
  const filename = join(dir, 'killed.db')
  const KILL_AFTER = 42 // lines: ten full cycles and the attach+revise of the eleventh
  // A second process runs the same loop alongside, so the kill lands while the file is busy.
  const other = start({ store: 'sqlite', filename, mode: 'loop', id: 9, threadPrefix: 'other', cycles: 15 })
  let seen = 0
  const victim = start({ store: 'sqlite', filename, mode: 'loop', id: 1, threadPrefix: 'victim', cycles: 'forever' }, (line, proc) => {
    if (line.startsWith('ok ') && ++seen === KILL_AFTER) proc.kill('SIGKILL')
  })
  await Promise.all([victim.ready, other.ready])
  victim.go()
  other.go()
  const [v, o] = await Promise.all([victim.done, other.done])
  assert.equal(v.signal, 'SIGKILL', v.stderr)
  assert.equal(o.code, 0, o.stderr)
  const vOps = parse(v.lines)
  const oOps = parse(o.lines)
  assert.deepEqual([...vOps.other, ...oOps.other], [])
  assert.ok(vOps.ok.length >= KILL_AFTER, `victim resolved ${vOps.ok.length} operations`)
  assert.equal(oOps.ok.length, 15 * 4)

  assert.deepEqual(await integrity(filename), ['ok'])

  const p = openPersistence({ store: 'sqlite', filename })
  const svc = openService(p)
  for (const [op, threadId, artifactId, version, id] of [...vOps.ok.map((l) => [...l, 1]), ...oOps.ok.map((l) => [...l, 9])]) {
    const rec = await svc.get({ ownership, threadId, artifactId })
    const n = Number(version)
    if (op === 'attach' || op === 'revise') {
      const rev = rec.revisions.find((r) => r.version === n)
      assert.ok(rev, `${op} ${artifactId} v${n} survived`)
      assert.equal(rev.uri, `https://blob.example/${artifactId}/${n}`)
    } else {
      const found = rec.approvals.filter((a) => a.version === n)
      assert.equal(found.length, 1, `${op} ${artifactId} v${n} survived exactly once`)
      assert.equal(found[0].state, op === 'approve' ? 'approved' : 'rejected')
      assert.equal(found[0].note, noteOf(id, artifactId, n))
      assert.equal(rec.lastValidatedVersion, 2, 'a later rejection of v1 never clears the validated v2')
    }
  }
  // Every victim record, including the one it was writing when killed, is whole: its
  // revisions are 1..latest and its decisions are about them.
  const records = await listAll(svc, 'victim-0')
  const attached = vOps.ok.filter(([op]) => op === 'attach').length
  assert.ok(records.length === attached || records.length === attached + 1, `${records.length} victim artifacts, ${attached} attaches resolved`)
  for (const rec of records) {
    assert.deepEqual(rec.revisions.map((r) => r.version), Array.from({ length: rec.latestVersion }, (_, i) => i + 1))
    for (const a of rec.approvals) assert.ok(a.version <= rec.latestVersion)
  }
  // The file still takes writes after the crash.
  const last = records.at(-1)
  const ref = { ownership, threadId: 'victim-0', artifactId: last.id }
  const revised = await svc.revise({ ...ref, uri: 'https://blob.example/after-crash', hash: 'sha256:after' })
  const approved = await svc.approve({ ...ref, version: revised.latestVersion, reviewer: 'user:after' })
  assert.equal(approved.lastValidatedVersion, revised.latestVersion)
  await p.close()
})
