// One conformance suite for @arnilo/prism's CheckpointStore, run against every store: the
// memory store, a SQLite file, PostgreSQL, and a plain-JavaScript host store seen through
// the native bridge (as the artifact service sees it). Caller-assigned versions,
// compare-and-swap, fencing, metadata, categories, owner-scoped keys, listing order and
// keyset cursors, abort signals, a forced two-writer interleaving, and input errors.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as prism from '../index.mjs'
import { createMapStore } from './fixtures/map-store.mjs'

const { createMemoryCheckpointStore, CheckpointConflictError } = prism
const require = createRequire(import.meta.url)
const { toStoreHandle, wrapHandle } = require('../js/store.js')

const dir = mkdtempSync(join(tmpdir(), 'prism-store-'))
const cleanups = []
after(async () => {
  for (const c of cleanups) await c()
  rmSync(dir, { recursive: true, force: true })
})

const stores = {
  memory: () => createMemoryCheckpointStore(),
  'host (plain JS object through the native bridge)': () => wrapHandle(toStoreHandle(createMapStore())),
  'sqlite file': () => {
    const p = prism.createSqlitePersistence({ filename: join(dir, `conf-${Math.random().toString(36).slice(2)}.db`) })
    cleanups.push(() => p.close())
    return p.checkpoints
  },
}

const postgresUrl = process.env.PRISM_TEST_POSTGRES_URL
const schema = `prism_conf_${process.pid}`
if (postgresUrl) {
  stores.postgresql = () => {
    const p = prism.createPostgresPersistence({ connectionString: postgresUrl, schema, maxConnections: 4 })
    cleanups.push(() => p.close())
    return p.checkpoints
  }
  cleanups.push(() => dropSchema(postgresUrl, schema))
}

/** Drop a test schema with psql (installed wherever the test server runs). */
async function dropSchema(url, name) {
  const { execFileSync } = await import('node:child_process')
  execFileSync('psql', [url, '-qc', `DROP SCHEMA IF EXISTS "${name}" CASCADE`], { stdio: 'ignore' })
}

const A = { tenantId: 't1', userId: 'u1' }
const B = { tenantId: 't2', userId: 'u1' }
const deep = (n) => {
  let v = 0
  for (let i = 0; i < n; i++) v = { v }
  return v
}
const isConflict = (e) => e instanceof CheckpointConflictError && e.code === 'ERR_PRISM_CHECKPOINT_CONFLICT'
const tag = (c) => `${c.key}@${c.tenantId ?? '-'}`

async function listAll(store, query) {
  const keys = []
  let cursor
  for (;;) {
    const page = await store.listCheckpoints({ ...query, ...(cursor ? { cursor } : {}) })
    if (query.limit) assert.ok(page.items.length <= Math.max(1, query.limit))
    keys.push(...page.items.map(tag))
    if (page.nextCursor === undefined) break
    assert.equal(typeof page.nextCursor, 'string')
    assert.ok(page.items.length > 0, 'a page with a cursor has items')
    cursor = page.nextCursor
  }
  return keys
}

for (const [name, make] of Object.entries(stores)) {
  describe(`conformance: ${name}`, () => {
    test('the store is a plain object whose four methods are own enumerable functions', () => {
      const s = make()
      for (const m of ['saveCheckpoint', 'loadCheckpoint', 'listCheckpoints', 'deleteCheckpoint']) {
        assert.equal(typeof s[m], 'function')
        assert.ok(Object.keys(s).includes(m), `${m} is own and enumerable`)
      }
    })

    test('CRUD with caller-assigned versions, category and metadata', async () => {
      const s = make()
      const ns = 'crud'
      const value = { a: [1, 2.5, 'é😀'], z: null, b: { c: true } }
      const metadata = { run: 'r1', n: 2 }
      const c1 = await s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 1, expectedVersion: 0, category: 'artifact', metadata, value })
      assert.deepEqual(Object.keys(c1), ['namespace', 'key', 'version', 'value', 'category', 'tenantId', 'userId', 'createdAt', 'updatedAt', 'metadata'])
      assert.deepEqual([c1.namespace, c1.key, c1.version, c1.category, c1.tenantId, c1.userId], [ns, 'k', 1, 'artifact', 't1', 'u1'])
      assert.deepEqual(c1.value, value)
      assert.deepEqual(c1.metadata, metadata)
      if (name !== 'postgresql') assert.equal(JSON.stringify(c1.value), JSON.stringify(value), 'key order survives')
      assert.match(c1.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.equal(c1.updatedAt, c1.createdAt)
      assert.deepEqual(await s.loadCheckpoint({ namespace: ns, key: 'k', ...A }), c1)

      const c2 = await s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 2, expectedVersion: 1, value: 'two' })
      assert.equal(c2.version, 2)
      assert.equal('category' in c2 || 'metadata' in c2, false, 'a save replaces category and metadata; absent stays absent')
      assert.equal(c2.createdAt, c1.createdAt)
      const c3 = await s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 9, value: 3 })
      assert.equal(c3.version, 9, 'versions may jump when no expectedVersion is given')
      assert.equal((await s.loadCheckpoint({ namespace: ns, key: 'k', ...A })).value, 3)
      assert.equal(await s.loadCheckpoint({ namespace: ns, key: 'missing', ...A }), null, 'a miss is null')
      assert.equal(await s.loadCheckpoint({ namespace: 'other', key: 'k', ...A }), null)

      assert.equal(await s.deleteCheckpoint({ namespace: ns, key: 'k', ...A }), true)
      assert.equal(await s.loadCheckpoint({ namespace: ns, key: 'k', ...A }), null)
      assert.equal(await s.deleteCheckpoint({ namespace: ns, key: 'k', ...A }), false)
      const again = await s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 1, value: null, expectedVersion: 0 })
      assert.equal(again.value, null)
      // The unowned scope (no member at all) is a scope too.
      const unowned = await s.saveCheckpoint({ namespace: ns, key: 'free', version: 1, value: 0 })
      assert.equal('tenantId' in unowned, false)
      assert.equal((await s.loadCheckpoint({ namespace: ns, key: 'free' })).version, 1)
    })

    test('versions must increase and a stored fencing token refuses lower or missing tokens', async () => {
      const s = make()
      const t = { namespace: 'fence', key: 'k', ...A }
      assert.equal((await s.saveCheckpoint({ ...t, version: 3, fencingToken: 5, value: 3 })).fencingToken, 5)
      for (const version of [1, 2, 3]) await assert.rejects(s.saveCheckpoint({ ...t, version, fencingToken: 5, value: 0 }), isConflict)
      await assert.rejects(s.saveCheckpoint({ ...t, version: 3, expectedVersion: 3, fencingToken: 5, value: 0 }), isConflict)
      await assert.rejects(s.saveCheckpoint({ ...t, version: 4, value: 0 }), isConflict, 'no token under a stored token')
      await assert.rejects(s.saveCheckpoint({ ...t, version: 4, fencingToken: 4, value: 0 }), isConflict, 'a lower token')
      assert.deepEqual(await s.loadCheckpoint(t).then((c) => [c.version, c.value, c.fencingToken]), [3, 3, 5])
      assert.equal((await s.saveCheckpoint({ ...t, version: 4, fencingToken: 5, value: 4 })).fencingToken, 5)
      assert.equal((await s.saveCheckpoint({ ...t, version: 5, fencingToken: 9, value: 5 })).fencingToken, 9)
      await assert.rejects(s.saveCheckpoint({ ...t, version: 6, fencingToken: 5, value: 6 }), isConflict)
      assert.equal((await s.loadCheckpoint(t)).version, 5)
    })

    test('keys are scoped by owner: another owner has its own, empty slot', async () => {
      const s = make()
      const ns = 'own'
      await s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 1, value: 'mine' })
      for (const [i, other] of [B, { tenantId: 't1' }, { ...A, accountId: 'x' }, {}].entries()) {
        assert.equal(await s.loadCheckpoint({ namespace: ns, key: 'k', ...other }), null)
        assert.equal(await s.deleteCheckpoint({ namespace: ns, key: 'k', ...other }), false)
        await assert.rejects(s.saveCheckpoint({ namespace: ns, key: 'k', ...other, version: 2, expectedVersion: 1, value: 'x' }), isConflict)
        const theirs = await s.saveCheckpoint({ namespace: ns, key: 'k', ...other, version: 1, expectedVersion: 0, value: i })
        assert.equal(theirs.version, 1)
      }
      const cp = await s.loadCheckpoint({ namespace: ns, key: 'k', ...A })
      assert.deepEqual([cp.value, cp.version], ['mine', 1])
      assert.equal((await s.loadCheckpoint({ namespace: ns, key: 'k', ...B })).value, 0)
    })

    test('listing: filters, (namespace, key, owner) order both ways, pages of every size', async () => {
      const s = make()
      const ns = `list-${Math.random().toString(36).slice(2, 8)}`
      const keys = ['t:1', 't:2', 't:3', 't:10', 'u:1', 't', 't:é', 's:9']
      for (const [i, key] of keys.entries()) {
        await s.saveCheckpoint({ namespace: ns, key, ...(i % 2 === 0 ? A : B), version: 1, value: i, category: i < 4 ? 'x' : 'y' })
      }
      await s.saveCheckpoint({ namespace: ns, key: 't:2', ...A, version: 1, value: 'a' })
      await s.saveCheckpoint({ namespace: `${ns}-other`, key: 't:1', ...A, version: 1, value: 0 })
      const all = ['s:9@t2', 't@t2', 't:1@t1', 't:10@t2', 't:2@t1', 't:2@t2', 't:3@t1', 't:é@t1', 'u:1@t1']
      for (const limit of [1, 2, 3, 100, undefined]) {
        const q = limit === undefined ? {} : { limit }
        assert.deepEqual(await listAll(s, { namespace: ns, ...q }), all)
        assert.deepEqual(await listAll(s, { namespace: ns, order: 'desc', ...q }), [...all].reverse())
        assert.deepEqual(await listAll(s, { namespace: ns, keyPrefix: 't:', ...q }), ['t:1@t1', 't:10@t2', 't:2@t1', 't:2@t2', 't:3@t1', 't:é@t1'])
        assert.deepEqual(await listAll(s, { namespace: ns, keyPrefix: 't:', ...A, ...q }), ['t:1@t1', 't:2@t1', 't:3@t1', 't:é@t1'])
        assert.deepEqual(await listAll(s, { namespace: ns, ...B, ...q }), ['s:9@t2', 't@t2', 't:10@t2', 't:2@t2'])
      }
      assert.deepEqual(await listAll(s, { namespace: ns, keyPrefix: 't:1', tenantId: 't1' }), ['t:1@t1'], 'absent members match anything')
      assert.deepEqual(await listAll(s, { namespace: ns, category: 'y' }), ['s:9@t2', 't@t2', 't:é@t1', 'u:1@t1'])
      assert.equal((await listAll(s, { namespace: ns, category: ['x', 'y'] })).length, 8)
      assert.deepEqual(await listAll(s, { namespace: ns, category: [] }), [], 'an empty category set matches nothing')
      assert.deepEqual(await listAll(s, { namespace: ns, keyPrefix: 'zz' }), [])
      const across = await s.listCheckpoints({ keyPrefix: 't:1', ...A })
      assert.deepEqual(
        across.items.filter((c) => c.namespace.startsWith(ns)).map((c) => c.namespace),
        [ns, `${ns}-other`],
        'without a namespace every namespace is listed',
      )
      const page = await s.listCheckpoints({ namespace: ns, keyPrefix: 't:', limit: 6 })
      assert.equal(page.items.length, 6)
      assert.equal('nextCursor' in page, false, 'no cursor when nothing follows')
      assert.equal((await s.listCheckpoints({ namespace: ns, limit: 0 })).items.length, 1, 'a limit below 1 is 1')
      assert.deepEqual(Object.keys(await s.listCheckpoints()), ['items'], 'no query lists everything')
    })

    test('pagination: a cursor continues strictly after its position, whatever changed', async () => {
      const s = make()
      const ns = 'cursor'
      for (const key of ['b', 'd', 'f', 'h']) await s.saveCheckpoint({ namespace: ns, key, ...A, version: 1, value: key })
      for (const [order, want] of [['asc', ['e@t1', 'f@t1', 'g@t1', 'h@t1']], ['desc', ['e@t1', 'd@t1', 'c@t1', 'b@t1', 'a@t1']]]) {
        const p1 = await s.listCheckpoints({ namespace: ns, limit: 2, order })
        const seen = p1.items[0].key
        for (const key of ['a', 'c', 'e', 'g']) await s.saveCheckpoint({ namespace: ns, key, ...A, version: 1, value: 0 })
        assert.equal(await s.deleteCheckpoint({ namespace: ns, key: seen, ...A }), true)
        const rest = await listAll(s, { namespace: ns, limit: 2, order, cursor: p1.nextCursor })
        assert.deepEqual(rest, want, order)
        assert.deepEqual(await listAll(s, { namespace: ns, limit: 2, order, cursor: p1.nextCursor }), rest, 'same cursor, same continuation')
        await s.saveCheckpoint({ namespace: ns, key: seen, ...A, version: 1, value: seen })
        for (const key of ['a', 'c', 'e', 'g']) await s.deleteCheckpoint({ namespace: ns, key, ...A })
      }
    })

    test('compare-and-swap: create-only, replace-at-version, failures change nothing, no lost increment', async () => {
      const s = make()
      const ns = 'cas'
      const t = { namespace: ns, key: 'k', ...A }
      await assert.rejects(s.saveCheckpoint({ ...t, version: 2, value: 1, expectedVersion: 1 }), isConflict)
      assert.equal(await s.loadCheckpoint(t), null, 'a failed CAS creates nothing')
      await s.saveCheckpoint({ ...t, version: 1, value: 1, expectedVersion: 0 })
      await assert.rejects(s.saveCheckpoint({ ...t, version: 2, value: 2, expectedVersion: 0 }), isConflict)
      await assert.rejects(s.saveCheckpoint({ ...t, version: 3, value: 2, expectedVersion: 2 }), isConflict)
      assert.deepEqual(await s.loadCheckpoint(t).then((c) => [c.version, c.value]), [1, 1])

      await s.saveCheckpoint({ namespace: ns, key: 'counter', ...A, version: 1, value: 0, expectedVersion: 0 })
      const workers = 8
      const per = 5
      await Promise.all(
        Array.from({ length: workers }, async () => {
          for (let i = 0; i < per; i++) {
            for (;;) {
              const cur = await s.loadCheckpoint({ namespace: ns, key: 'counter', ...A })
              try {
                await s.saveCheckpoint({ namespace: ns, key: 'counter', ...A, version: cur.version + 1, expectedVersion: cur.version, value: cur.value + 1 })
                break
              } catch (e) {
                if (!isConflict(e)) throw e
              }
            }
          }
        }),
      )
      const counter = await s.loadCheckpoint({ namespace: ns, key: 'counter', ...A })
      assert.deepEqual([counter.value, counter.version], [workers * per, workers * per + 1])
    })

    test('two writers that read the same version: exactly one wins, the other sees a conflict', async () => {
      const s = make()
      const t = { namespace: 'race', key: 'k', ...A }
      await s.saveCheckpoint({ ...t, version: 1, value: 'v1' })
      for (let round = 0; round < 5; round++) {
        const [a, b] = await Promise.all([s.loadCheckpoint(t), s.loadCheckpoint(t)])
        assert.equal(a.version, b.version)
        const results = await Promise.allSettled([
          s.saveCheckpoint({ ...t, version: a.version + 1, expectedVersion: a.version, value: ['a', round] }),
          s.saveCheckpoint({ ...t, version: b.version + 1, expectedVersion: b.version, value: ['b', round] }),
        ])
        const won = results.filter((r) => r.status === 'fulfilled')
        const lost = results.filter((r) => r.status === 'rejected')
        assert.deepEqual([won.length, lost.length], [1, 1])
        assert.ok(isConflict(lost[0].reason), String(lost[0].reason))
        assert.deepEqual(await s.loadCheckpoint(t), won[0].value)
      }
      const creates = await Promise.allSettled([
        s.saveCheckpoint({ ...t, key: 'new', version: 1, value: 'a', expectedVersion: 0 }),
        s.saveCheckpoint({ ...t, key: 'new', version: 1, value: 'b', expectedVersion: 0 }),
      ])
      assert.equal(creates.filter((r) => r.status === 'fulfilled').length, 1)
      assert.ok(isConflict(creates.find((r) => r.status === 'rejected').reason))
    })

    test('an aborted signal rejects with its reason and changes nothing', async () => {
      const s = make()
      const t = { namespace: 'abort', key: 'k', ...A }
      const reason = new Error('stop')
      const signal = AbortSignal.abort(reason)
      await assert.rejects(s.saveCheckpoint({ ...t, version: 1, value: 1, signal }), (e) => e === reason)
      await assert.rejects(s.loadCheckpoint({ ...t, signal }), (e) => e === reason)
      await assert.rejects(s.listCheckpoints({ namespace: 'abort', signal }), (e) => e === reason)
      await assert.rejects(s.deleteCheckpoint({ ...t, signal }), (e) => e === reason)
      assert.equal(await s.loadCheckpoint(t), null)
      const live = new AbortController().signal
      assert.equal((await s.saveCheckpoint({ ...t, version: 1, value: 1, signal: live })).version, 1, 'a live signal is fine')
    })

    test('bad input: the reference conflicts, RangeError past a bound, TypeError for wrong types; nothing changes', async () => {
      const s = make()
      const ns = 'bad'
      const ok = { namespace: ns, key: 'k', ...A, version: 1, value: 1 }
      const cyclic = { a: 1 }
      cyclic.self = cyclic
      const conflicts = [
        { ...ok, namespace: undefined }, { ...ok, namespace: '' }, { ...ok, key: undefined }, { ...ok, key: '' },
        { ...ok, version: undefined }, { ...ok, version: 0 }, { ...ok, version: -1 }, { ...ok, version: 1.5 }, { ...ok, version: '1' },
        { ...ok, version: 2 ** 60 }, { ...ok, value: undefined }, { ...ok, value: cyclic }, { ...ok, value: 10n },
        { ...ok, expectedVersion: -1 }, { ...ok, expectedVersion: 1.5 }, { ...ok, fencingToken: '1' },
      ]
      for (const input of conflicts) await assert.rejects(s.saveCheckpoint(input), isConflict, JSON.stringify(Object.keys(input)))
      const ranges = [{ ...ok, namespace: 'x'.repeat(257) }, { ...ok, key: 'k'.repeat(1025) }, { ...ok, tenantId: 'x'.repeat(513) }, { ...ok, value: deep(200) }]
      for (const input of ranges) await assert.rejects(s.saveCheckpoint(input), RangeError)
      const types = [
        undefined, null, 42, 'text', [], { ...ok, namespace: 5 }, { ...ok, key: null }, { ...ok, key: 'a\u0000b' }, { ...ok, tenantId: 5 },
        { ...ok, ownership: { tenantId: 't' } }, { ...ok, category: 7 }, { ...ok, metadata: [] }, { ...ok, extra: true }, { ...ok, signal: 'no' },
        JSON.parse('{"namespace":"bad","key":"k","version":1,"value":1,"__proto__":{"x":1}}'),
      ]
      for (const input of types) await assert.rejects(s.saveCheckpoint(input), TypeError, JSON.stringify(input))
      await assert.rejects(s.saveCheckpoint({ ...ok, value: 'x'.repeat(17 * 1024 * 1024) }), RangeError)
      const t = { namespace: ns, key: 'k', ...A }
      await assert.rejects(s.loadCheckpoint({ ...t, key: '' }), isConflict)
      for (const input of [undefined, null, 1, { ...t, key: 1 }, { ...t, value: 1 }, { ...t, version: 1 }]) {
        await assert.rejects(s.loadCheckpoint(input), TypeError)
      }
      for (const input of [null, { limit: '10' }, { cursor: 5 }, { keyPrefix: 3 }, { prefix: 'a' }, { order: 'up' }, { category: 1 }, { category: [1] }]) {
        await assert.rejects(s.listCheckpoints(input), TypeError, JSON.stringify(input))
      }
      if (!name.startsWith('host')) {
        // Native cursors are checked; a host store's cursors are its own business.
        await assert.rejects(s.listCheckpoints({ namespace: ns, cursor: 'not a cursor' }), isConflict)
      }
      assert.deepEqual((await s.listCheckpoints({ namespace: ns })).items, [], 'nothing changed')
    })

    // A string cut inside a surrogate pair (an emoji sliced by UTF-16 index, as agent
    // transcripts are) holds a lone surrogate. The reference's memory and SQLite stores
    // keep it; so do ours (the value's JSON text is kept as JSON.stringify wrote it).
    // PostgreSQL's jsonb cannot hold it, and the host bridge reads values into Rust:
    // both refuse it as docs/stores.md says, and nothing is saved.
    test('a value or metadata holding lone surrogates: kept and answered as saved where the store keeps text, else refused', async () => {
      const s = make()
      const ns = 'lone'
      const value = { cut: '😀 ok'.slice(0, 1), low: 'x\udfffy', list: ['\ud800', { '\udbff': 'k' }], n: 1e21, fine: '😀' }
      const metadata = { run: 'r\ud83d', nested: { '\udc00': ['\ud800x'] } }
      const keeps = name === 'memory' || name === 'sqlite file'
      const unreadable = (e) => e instanceof RangeError && e.code === 'ERR_OUT_OF_RANGE' && /input cannot be read: .*lone UTF-16 surrogate/.test(e.message)
      // Only the value is kept as text: a key is refused by every store.
      await assert.rejects(s.saveCheckpoint({ namespace: ns, key: 'k\ud800', ...A, version: 1, value: 1 }), unreadable)
      if (!keeps) {
        await s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 1, value: 'kept' })
        await assert.rejects(s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 2, value }), unreadable)
        await assert.rejects(s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 2, value: 'plain', metadata }), unreadable)
        const kept = await s.loadCheckpoint({ namespace: ns, key: 'k', ...A })
        assert.deepEqual([kept.version, kept.value, kept.metadata], [1, 'kept', undefined], 'nothing saved')
        return
      }
      const saved = await s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 1, value, metadata: { m: 1 } })
      assert.deepEqual(saved.value, value)
      const loaded = await s.loadCheckpoint({ namespace: ns, key: 'k', ...A })
      assert.deepEqual(loaded.value, value)
      assert.equal(loaded.value.cut, '\ud83d', 'the lone high surrogate itself')
      assert.deepEqual(loaded.metadata, { m: 1 })
      const page = await s.listCheckpoints({ namespace: ns, ...A })
      assert.equal(page.items.length, 1)
      assert.deepEqual(page.items[0].value, value)
      // Metadata too, as the reference's stores keep it (the key order as given).
      const withMeta = await s.saveCheckpoint({ namespace: ns, key: 'm', ...A, version: 1, value: 1, metadata })
      assert.deepEqual(withMeta.metadata, metadata)
      const metaLoaded = await s.loadCheckpoint({ namespace: ns, key: 'm', ...A })
      assert.deepEqual(metaLoaded.metadata, metadata)
      assert.equal(metaLoaded.metadata.run, 'r\ud83d', 'the lone high surrogate itself')
      assert.deepEqual(Object.keys(metaLoaded.metadata), ['run', 'nested'])
      const metaPage = await s.listCheckpoints({ namespace: ns, keyPrefix: 'm', ...A })
      assert.deepEqual(metaPage.items.map((c) => c.metadata), [metadata])
      assert.equal(await s.deleteCheckpoint({ namespace: ns, key: 'm', ...A }), true)
      // Replaced by a plain value, and deleted, as any other.
      await s.saveCheckpoint({ namespace: ns, key: 'k', ...A, version: 2, expectedVersion: 1, value: 'plain' })
      assert.equal((await s.loadCheckpoint({ namespace: ns, key: 'k', ...A })).value, 'plain')
      assert.equal(await s.deleteCheckpoint({ namespace: ns, key: 'k', ...A }), true)
    })
  })
}
