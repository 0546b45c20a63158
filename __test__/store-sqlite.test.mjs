// SQLite persistence: options, close semantics, and the heavy tests: four processes
// writing concurrently into one file, and a process killed with SIGKILL mid-write-loop.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnLines } from './fixtures/spawn-lines.mjs'
import { mkdtempSync, rmSync, existsSync, writeFileSync, statSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createSqlitePersistence, createArtifactService, createSecretRedactor, ArtifactError } from '../index.mjs'
import { integrity } from './fixtures/sqlite-integrity.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const writer = join(here, 'fixtures', 'sqlite-writer.mjs')
const dir = mkdtempSync(join(tmpdir(), 'prism-sqlite-'))
after(() => rmSync(dir, { recursive: true, force: true }))

const ownership = { tenantId: 'multi' }
const isInvalid = (e) => e instanceof ArtifactError && e.reason === 'invalid_input'

async function allKeys(store, namespace) {
  const keys = []
  let cursor
  do {
    const page = await store.listCheckpoints({ namespace, limit: 1000, ...(cursor ? { cursor } : {}) })
    keys.push(...page.items.map((c) => c.key))
    cursor = page.nextCursor
  } while (cursor)
  return keys
}

function run(args, onLine) {
  return spawnLines(writer, args, {
    onLine: (line, child) => {
      onLine?.(line, child)
    },
  })
}

test('options: wrong types are invalid_input, a busy timeout outside 1..600000 is a RangeError', async () => {
  for (const options of [undefined, null, 'x.db', [], {}, { filename: 5 }, { filename: '' }, { filename: 'a\u0000b' },
    { filename: 'x.db', busyTimeoutMs: '10' }, { filename: 'x.db', extra: 1 }, { filename: 'x'.repeat(5000) }]) {
    assert.throws(() => createSqlitePersistence(options), isInvalid, JSON.stringify(options))
  }
  for (const busyTimeoutMs of [0, -1, 1.5, NaN, Infinity, 600_001]) {
    assert.throws(() => createSqlitePersistence({ filename: join(dir, 'x.db'), busyTimeoutMs }), RangeError)
  }
  assert.equal(existsSync(join(dir, 'x.db')), false, 'nothing was created')
})

test('":memory:" is one ephemeral database per persistence, shared by all its connections (the reference\'s "ephemeral tests")', async () => {
  const before = readdirSync('.')
  const p = createSqlitePersistence({ filename: ':memory:' })
  const service = createArtifactService(p.checkpoints, { redactor: createSecretRedactor(['memory-secret']), linkSecret: 'memory-link-secret-0123' })
  // Writes and reads in flight together (the writer's connection and the readers').
  const attached = await Promise.all(
    Array.from({ length: 30 }, (_, i) => service.attach({ ownership, threadId: 't', id: `a${i}`, uri: `https://x/${i}`, mime: 'text/plain', hash: 'sha256:1' })),
  )
  const got = await Promise.all(attached.map((r) => service.get({ ownership, threadId: 't', artifactId: r.id })))
  assert.deepEqual(got.map((r) => r.id), attached.map((r) => r.id))
  await service.approve({ ownership, threadId: 't', artifactId: 'a0', version: 1, reviewer: 'user:r' })
  assert.equal((await service.get({ ownership, threadId: 't', artifactId: 'a0' })).approvals.length, 1)
  assert.equal((await service.list({ ownership, threadId: 't', limit: 100 })).items.length, 30)
  // Another persistence's ":memory:" is another database.
  const other = createSqlitePersistence({ filename: ':memory:' })
  assert.equal(await other.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', ...ownership }), null)
  await p.checkpoints.saveCheckpoint({ namespace: 'n', key: 'k', ...ownership, version: 1, value: 1 })
  assert.equal(await other.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', ...ownership }), null)
  await Promise.all([p.close(), other.close()])
  assert.deepEqual(readdirSync('.'), before, 'nothing written to the working directory')
  // In-memory URIs would give each connection its own database: refused, naming ":memory:".
  for (const filename of ['file::memory:', 'file::memory:?cache=shared', 'file:x.db?mode=memory&cache=shared']) {
    assert.throws(() => createSqlitePersistence({ filename }), (e) => isInvalid(e) && /in-memory URI.*":memory:"/.test(e.message), filename)
  }
})

test("the reference's options: a missing directory is created, the files are the owner's only (fileMode), wal, skipMigrations; feedbackRedactor ignored, database refused", async () => {
  const filename = join(dir, 'made', 'here', 'opts.db')
  const p = createSqlitePersistence({ filename, feedbackRedactor: { redact: (v) => v } })
  await p.checkpoints.saveCheckpoint({ namespace: 'n', key: 'k', ...ownership, version: 1, value: 1 })
  const mode = (f) => statSync(f).mode & 0o777
  if (process.platform !== 'win32') {
    for (const f of [filename, `${filename}-wal`, `${filename}-shm`]) assert.equal(mode(f), 0o600, f)
  }
  await p.close()
  // wal: false (rollback journal) on an existing WAL file, and another mode.
  const q = createSqlitePersistence({ filename, wal: false, fileMode: 0o640 })
  assert.equal((await q.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', ...ownership })).version, 1)
  if (process.platform !== 'win32') assert.equal(mode(filename), 0o640)
  await q.close()
  const fresh = join(dir, 'rollback.db')
  const r = createSqlitePersistence({ filename: fresh, wal: false })
  await r.checkpoints.saveCheckpoint({ namespace: 'n', key: 'k', ...ownership, version: 1, value: 1 })
  assert.equal((await r.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', ...ownership })).value, 1)
  await r.close()
  assert.equal(existsSync(`${fresh}-wal`), false, 'no WAL file without wal')
  // skipMigrations: no table is made, so the first use names the missing table.
  const s = createSqlitePersistence({ filename: join(dir, 'unmigrated.db'), skipMigrations: true })
  await assert.rejects(s.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', ...ownership }), /no such table/)
  await s.close()
  // A better-sqlite3 handle cannot be shared with the native store: refused by name.
  class Database {}
  assert.throws(() => createSqlitePersistence({ filename, database: new Database() }), (e) => isInvalid(e) && /options\.database is not supported.*filename/.test(e.message))
  assert.throws(() => createSqlitePersistence({ filename, fileMode: 0o1000 }), RangeError)
  assert.throws(() => createSqlitePersistence({ filename, wal: 'yes' }), isInvalid)
})

test('an unopenable file is a typed error on first use; close is idempotent and later use is refused', async () => {
  // Under a regular file: no directory can be made there (a missing directory is created).
  writeFileSync(join(dir, 'a-file'), '')
  const bad = createSqlitePersistence({ filename: join(dir, 'a-file', 'such', 'dir.db') })
  await assert.rejects(bad.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', ...ownership }), (e) => isInvalid(e) && /cannot open/.test(e.message))
  await bad.close()

  const p = createSqlitePersistence({ filename: join(dir, 'close.db'), busyTimeoutMs: 1000 })
  assert.deepEqual(Object.keys(p).sort(), ['checkpoints', 'close'])
  const writes = Array.from({ length: 50 }, (_, i) =>
    p.checkpoints.saveCheckpoint({ namespace: 'n', key: `k${i}`, ...ownership, version: 1, value: i }),
  )
  await p.close() // waits for the writes already started
  const results = await Promise.allSettled(writes)
  assert.ok(results.every((r) => r.status === 'fulfilled'), 'work started before close completes')
  await p.close()
  await assert.rejects(p.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k0', ...ownership }), (e) => isInvalid(e) && /closed/.test(e.message))
  await assert.rejects(p.checkpoints.saveCheckpoint({ namespace: 'n', key: 'k0', ...ownership, version: 1, value: 1 }), isInvalid)

  const again = createSqlitePersistence({ filename: join(dir, 'close.db') })
  assert.equal((await allKeys(again.checkpoints, 'n')).length, 50)
  await again.close()
})

test('four processes writing concurrently with CAS and retry: every write present, integrity ok', async () => {
  const filename = join(dir, 'four.db')
  const perWriter = 40
  const runs = [0, 1, 2, 3].map((id) => run([filename, String(id), String(perWriter)]))
  const results = await Promise.all(runs.map((r) => r.done))
  for (const r of results) {
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.lines.length, perWriter)
  }
  assert.deepEqual(await integrity(filename), ['ok'])
  const p = createSqlitePersistence({ filename })
  const keys = new Set(await allKeys(p.checkpoints, 'multi'))
  for (const r of results) for (const key of r.lines) assert.ok(keys.has(key), `${key} present`)
  assert.equal(keys.size, 4 * perWriter + 1)
  const counter = await p.checkpoints.loadCheckpoint({ namespace: 'multi', key: 'counter', ...ownership })
  assert.equal(counter.value.n, 4 * perWriter, 'no increment lost')
  assert.equal(counter.version, 4 * perWriter)
  await p.close()
})

test('a process killed with SIGKILL mid-write-loop: every resolved write survives, integrity ok', async () => {
  const filename = join(dir, 'killed.db')
  // A second writer keeps running alongside, so the kill lands while the file is busy.
  const other = run([filename, '9', '60'])
  const victim = run([filename, '1', 'forever'], (line, child) => {
    if (line.endsWith(':000030')) child.kill('SIGKILL')
  })
  const [v, o] = await Promise.all([victim.done, other.done])
  assert.equal(v.signal, 'SIGKILL')
  assert.ok(v.lines.length >= 31, `victim resolved ${v.lines.length} writes`)
  assert.equal(o.code, 0, o.stderr)
  assert.deepEqual(await integrity(filename), ['ok'])
  const p = createSqlitePersistence({ filename })
  const keys = new Set(await allKeys(p.checkpoints, 'multi'))
  for (const key of [...v.lines, ...o.lines]) assert.ok(keys.has(key), `${key} survived`)
  // The store still works for writers after the crash.
  const counter = await p.checkpoints.loadCheckpoint({ namespace: 'multi', key: 'counter', ...ownership })
  assert.ok(counter.value.n >= v.lines.length + o.lines.length)
  await p.checkpoints.saveCheckpoint({ namespace: 'multi', key: 'counter', ...ownership, version: counter.version + 1, value: { n: 0 }, expectedVersion: counter.version })
  await p.close()
})

test('close() refuses every call made after it at once, while the calls made before it complete (issue 17)', async () => {
  const p = createSqlitePersistence({ filename: join(dir, 'close-order.db') })
  await p.checkpoints.saveCheckpoint({ namespace: 'n', key: 'warm', ...ownership, version: 1, value: 0 })
  const before = Array.from({ length: 3 }, (_, i) =>
    p.checkpoints.saveCheckpoint({ namespace: 'n', key: `before${i}`, ...ownership, version: 1, value: i }),
  )
  const closing = p.close()
  const after = Array.from({ length: 3 }, (_, i) =>
    p.checkpoints.saveCheckpoint({ namespace: 'n', key: `after${i}`, ...ownership, version: 1, value: i }),
  )
  const results = await Promise.allSettled([...before, ...after])
  await closing
  assert.deepEqual(results.slice(0, 3).map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled'])
  for (const r of results.slice(3)) assert.ok(r.status === 'rejected' && isInvalid(r.reason) && /closed/.test(r.reason.message), String(r.reason))
  const again = createSqlitePersistence({ filename: join(dir, 'close-order.db') })
  assert.deepEqual((await allKeys(again.checkpoints, 'n')).sort(), ['before0', 'before1', 'before2', 'warm'])
  await again.close()
})

test('completions that arrive together settle over several turns of the event loop, not in one (issue 13)', async () => {
  const p = createSqlitePersistence({ filename: join(dir, 'turns.db') })
  const store = p.checkpoints
  await store.saveCheckpoint({ namespace: 'turns', key: 'warm', ...ownership, version: 1, value: {} })
  // A counter of event-loop turns, and saves whose continuations each keep the thread
  // busy for 1 ms: settled all in one turn they would hold the loop for N ms.
  let turn = 0
  let ticking = true
  const tick = () => {
    turn++
    if (ticking) setImmediate(tick)
  }
  setImmediate(tick)
  const N = 20
  const turns = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      store.saveCheckpoint({ namespace: 'turns', key: `k${i}`, ...ownership, version: 1, value: { i } }).then(() => {
        const seen = turn
        const end = performance.now() + 1
        while (performance.now() < end);
        return seen
      }),
    ),
  )
  ticking = false
  assert.ok(new Set(turns).size >= N / 2, `continuations ran in ${new Set(turns).size} turns: ${turns}`)
  await p.close()
})
