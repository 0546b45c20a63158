// Issue 6, through the artifact review service: eight Node processes, each with its own
// PostgreSQL pool and eight concurrent reviewers, deciding across shared artifacts; then
// the same load with every connection terminated in the middle. Skipped (never passed)
// without PRISM_TEST_POSTGRES_URL. Each test creates its own schema and drops it after.
// The store-level version is in store-postgres.test.mjs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { openPersistence, openService, ownership, THREAD, attachRevised } from './fixtures/durability-child.mjs'
import { runTogether, parse, shuffle, assertDecidedOnce } from './fixtures/durability-spawn.mjs'

const url = process.env.PRISM_TEST_POSTGRES_URL
const skip = url ? false : 'PRISM_TEST_POSTGRES_URL is not set'
const PROCESSES = 8
const REVIEWERS = 8
const ARTIFACTS = 8
const REVISIONS = 48

const quiet = { ...process.env, PGOPTIONS: '-c client_min_messages=warning' }
function psql(sql) {
  return execFileSync('psql', [url, '-Atqc', sql], { encoding: 'utf8', env: quiet }).trim()
}
function psqlAsync(sql) {
  return new Promise((resolve, reject) =>
    execFile('psql', [url, '-Atqc', sql], { encoding: 'utf8', env: quiet }, (e, out) => (e ? reject(e) : resolve(out.trim()))),
  )
}

/** The connection string with an application_name only this run's children use. */
function tagged(name) {
  const u = new URL(url)
  u.searchParams.set('application_name', name)
  return u.toString()
}

/** Approve most revisions, reject every fourth and the top (k % 3) of artifact k. */
const opFor = (k, v) => (v % 4 === 0 || v > REVISIONS - (k % 3) ? 'reject' : 'approve')

/** `artifacts` artifacts of REVISIONS revisions each; returns the shuffled decision plan. */
async function setUp(schema, artifacts = ARTIFACTS) {
  const p = openPersistence({ store: 'postgres', connectionString: tagged(`${schema}-setup`), schema })
  const svc = openService(p)
  const plan = []
  for (let k = 0; k < artifacts; k++) {
    const artifactId = `a${k}`
    await attachRevised(svc, artifactId, REVISIONS)
    for (let v = 1; v <= REVISIONS; v++) plan.push([artifactId, v, opFor(k, v)])
  }
  await p.close()
  return shuffle(plan, 6)
}

/** Run the load; `onLine(line, total)` sees each child line and the running count of resolved decisions. */
function load(schema, order, onLine) {
  let total = 0
  const configs = Array.from({ length: PROCESSES }, (_, id) => ({
    store: 'postgres', connectionString: tagged(schema), schema, mode: 'decide', id, reviewers: REVIEWERS,
    plan: order.filter((_, i) => i % PROCESSES === id),
  }))
  return runTogether(configs, (line) => {
    if (line.startsWith('ok ')) total++
    onLine?.(line, total)
  })
}

/** Every decision a child reported resolved is stored exactly once; nothing else is. */
async function verify(schema, order, results) {
  const resolved = []
  const errors = []
  for (const [id, r] of results.entries()) {
    assert.equal(r.code, 0, r.stderr)
    const parsed = parse(r.lines)
    assert.deepEqual(parsed.other, [])
    assert.equal(parsed.ok.length, order.filter((_, i) => i % PROCESSES === id).length, `process ${id} resolved its whole plan`)
    for (const [artifactId, version, state, note] of parsed.ok) resolved.push({ id, artifactId, version: Number(version), state, note })
    errors.push(...parsed.errors)
  }
  const p = openPersistence({ store: 'postgres', connectionString: tagged(`${schema}-verify`), schema })
  const svc = openService(p)
  try {
    for (let k = 0; k < order.length / REVISIONS; k++) {
      const artifactId = `a${k}`
      const rec = await svc.get({ ownership, threadId: THREAD, artifactId })
      const mine = resolved.filter((d) => d.artifactId === artifactId)
      assert.equal(mine.length, REVISIONS)
      assert.equal(rec.approvals.length, REVISIONS, `${artifactId}: one decision per resolved decision, none extra`)
      assertDecidedOnce(rec, mine, artifactId)
      for (const d of mine) assert.equal(d.state, opFor(k, d.version) === 'approve' ? 'approved' : 'rejected')
      const highest = Math.max(...mine.filter((d) => d.state === 'approved').map((d) => d.version))
      assert.equal(rec.lastValidatedVersion, highest, `${artifactId}: lastValidatedVersion is the highest approved version`)
      // One checkpoint write per revision and per decision: a decision whose outcome was
      // unknown (connection dropped) was checked, not written a second time.
      const cp = await p.checkpoints.loadCheckpoint({ namespace: 'prism.artifact', key: `${THREAD}:${artifactId}`, ...ownership })
      assert.equal(cp.version, REVISIONS + REVISIONS)
    }
  } finally {
    await p.close()
  }
  return { resolved, errors }
}

function dropSchemaAfter(t, schema) {
  t.after(() => psql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
}

test('eight processes × eight reviewers approve and reject through the service: every decision exactly once, lastValidated = highest approved', { skip }, async (t) => {
  const schema = `prism_durability_${process.pid}_load`
  dropSchemaAfter(t, schema)
  const order = await setUp(schema)
  const results = await load(schema, order)
  const { errors } = await verify(schema, order, results)
  assert.deepEqual(errors, [], 'without a disruption the only failure to retry is conflict')
  t.diagnostic(`conflicts retried: ${results.reduce((n, r) => n + parse(r.lines).conflicts, 0)}`)
})

test('the same load with every connection terminated mid-way: in-flight operations fail typed, later ones succeed, no resolved write lost', { skip }, async (t) => {
  const schema = `prism_durability_${process.pid}_kill`
  dropSchemaAfter(t, schema)
  // Twice the artifacts of the plain load, so the load outlasts several rounds of
  // termination even on a fast machine (with the plain load it once ended after two).
  const order = await setUp(schema, 2 * ARTIFACTS)
  // An eighth into the load, terminate every connection of this run's children. A
  // connection idle at that instant is replaced silently by its pool, so the round is
  // repeated (every connection again, 20 ms apart, at most 40 rounds) until a child reports
  // an operation that failed because its connection died.
  const terminate = `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '${schema}' AND pid <> pg_backend_pid()`
  let terminated = 0
  let rounds = 0
  let sawError = false
  let finished = false
  let killing
  let okAtFirstRound = 0
  const killLoop = async () => {
    for (; rounds < 40 && !sawError && !finished; rounds++) {
      terminated += Number(await psqlAsync(terminate))
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  const results = await load(schema, order, (line, total) => {
    if (line.startsWith('err ')) sawError = true
    if (!killing && total >= order.length / 8) {
      okAtFirstRound = total
      killing = killLoop()
    }
  })
  finished = true
  await killing
  assert.ok(terminated > 0, `terminated ${terminated} connections in ${rounds} rounds during the load`)
  assert.ok(okAtFirstRound < order.length, 'the termination started in the middle of the load')
  t.diagnostic(`terminated ${terminated} connections in ${rounds} round(s), starting after ${okAtFirstRound}/${order.length} decisions`)
  const { errors } = await verify(schema, order, results)

  // In-flight operations failed with typed errors; record which.
  assert.ok(errors.length >= 1, 'operations in flight when the connections died failed')
  const kinds = new Map()
  for (const e of errors) {
    assert.ok(typeof e.code === 'string' && e.code.startsWith('ERR_PRISM'), `typed error: ${JSON.stringify(e)}`)
    assert.ok(!e.message.includes('postgres://'), 'no connection string in messages')
    const kind = `${e.name} ${e.code}${e.reason ? ` ${e.reason}` : ''}: ${e.message.replace(/\d+/g, 'N').slice(0, 80)}`
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
  }
  for (const [kind, n] of kinds) t.diagnostic(`${n} × ${kind}`)
  // Later operations succeeded after reconnection: every process that saw a failure
  // resolved decisions after its last failure.
  for (const r of results) {
    const lastErr = r.lines.findLastIndex((l) => l.startsWith('err '))
    if (lastErr >= 0) assert.ok(r.lines.slice(lastErr).some((l) => l.startsWith('ok ')), 'a decision resolved after the failures')
  }
})
