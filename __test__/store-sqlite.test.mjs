// SQLite persistence: options, close semantics, and the heavy tests: four processes
// writing concurrently into one file, and a process killed with SIGKILL mid-write-loop.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnLines } from './fixtures/spawn-lines.mjs'
import { mkdtempSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createSqlitePersistence, ArtifactError } from '../index.mjs'
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

test('an unopenable file is a typed error on first use; close is idempotent and later use is refused', async () => {
  const bad = createSqlitePersistence({ filename: join(dir, 'no', 'such', 'dir.db') })
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
