// One conformance suite, run against every store: the memory store, a SQLite file, and a
// plain-JavaScript host store seen through the native bridge (as the artifact service
// sees it). CRUD, ownership filters, prefix listing and pagination with cursor stability,
// compare-and-swap, and a forced two-writer interleaving.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as prism from '../index.mjs'
import { createMapStore } from './fixtures/map-store.mjs'

const { createMemoryCheckpointStore, CheckpointConflictError, ArtifactError } = prism
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
}
if (typeof prism.createSqlitePersistence === 'function') {
  stores['sqlite file'] = () => {
    const p = prism.createSqlitePersistence({ filename: join(dir, `conf-${Math.random().toString(36).slice(2)}.db`) })
    cleanups.push(() => p.close())
    return p.checkpoints
  }
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
} else {
  test('conformance: postgresql', { skip: 'PRISM_TEST_POSTGRES_URL is not set' }, () => {})
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
const isInvalid = (e) => e instanceof ArtifactError && e.reason === 'invalid_input'

async function listAll(store, query) {
  const keys = []
  let cursor
  for (;;) {
    const page = await store.listCheckpoints({ ...query, ...(cursor ? { cursor } : {}) })
    if (query.limit) assert.ok(page.items.length <= query.limit)
    keys.push(...page.items.map((c) => c.key))
    if (page.nextCursor === undefined) break
    assert.equal(typeof page.nextCursor, 'string')
    cursor = page.nextCursor
  }
  return keys
}

for (const [name, make] of Object.entries(stores)) {
  describe(`conformance: ${name}`, () => {
    test('CRUD: create, load, replace, upsert, delete', async () => {
      const s = make()
      const ns = 'crud'
      const value = { a: [1, 2.5, 'é😀'], z: null, b: { c: true } }
      const c1 = await s.saveCheckpoint({ namespace: ns, key: 'k', ownership: A, category: 'artifact', value, expectedVersion: 0 })
      assert.equal(c1.version, 1)
      assert.equal(c1.namespace, ns)
      assert.equal(c1.key, 'k')
      assert.deepEqual(c1.ownership, A)
      assert.equal(c1.category, 'artifact')
      assert.deepEqual(c1.value, value)
      if (name !== 'postgresql') assert.equal(JSON.stringify(c1.value), JSON.stringify(value), 'key order survives')
      assert.match(c1.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.equal(c1.updatedAt, c1.createdAt)
      assert.deepEqual(await s.loadCheckpoint({ namespace: ns, key: 'k', ownership: A }), c1)

      const c2 = await s.saveCheckpoint({ namespace: ns, key: 'k', ownership: A, value: 'two', expectedVersion: 1 })
      assert.equal(c2.version, 2)
      assert.equal('category' in c2, false, 'a save replaces the category; absent stays absent')
      assert.equal(c2.createdAt, c1.createdAt)
      const c3 = await s.saveCheckpoint({ namespace: ns, key: 'k', ownership: A, value: 3 })
      assert.equal(c3.version, 3)
      assert.equal((await s.loadCheckpoint({ namespace: ns, key: 'k', ownership: A })).value, 3)
      assert.equal(await s.loadCheckpoint({ namespace: ns, key: 'missing', ownership: A }), undefined)
      assert.equal(await s.loadCheckpoint({ namespace: 'other', key: 'k', ownership: A }), undefined)

      assert.equal(await s.deleteCheckpoint({ namespace: ns, key: 'k', ownership: A, expectedVersion: 3 }), true)
      assert.equal(await s.loadCheckpoint({ namespace: ns, key: 'k', ownership: A }), undefined)
      assert.equal(await s.deleteCheckpoint({ namespace: ns, key: 'k', ownership: A }), false)
      const again = await s.saveCheckpoint({ namespace: ns, key: 'k', ownership: A, value: null, expectedVersion: 0 })
      assert.equal(again.version, 1)
      assert.equal(again.value, null)
    })

    test('ownership: another owner cannot see, replace or delete', async () => {
      const s = make()
      const ns = 'own'
      await s.saveCheckpoint({ namespace: ns, key: 'k', ownership: A, value: 'mine' })
      for (const other of [B, { tenantId: 't1' }, { tenantId: 't1', userId: 'u1', accountId: 'x' }]) {
        assert.equal(await s.loadCheckpoint({ namespace: ns, key: 'k', ownership: other }), undefined)
        await assert.rejects(s.saveCheckpoint({ namespace: ns, key: 'k', ownership: other, value: 'x' }), isConflict)
        await assert.rejects(s.saveCheckpoint({ namespace: ns, key: 'k', ownership: other, value: 'x', expectedVersion: 1 }), isConflict)
        await assert.rejects(s.deleteCheckpoint({ namespace: ns, key: 'k', ownership: other }), isConflict)
        const page = await s.listCheckpoints({ namespace: ns, ownership: other })
        assert.deepEqual(page.items, [])
      }
      const cp = await s.loadCheckpoint({ namespace: ns, key: 'k', ownership: A })
      assert.equal(cp.value, 'mine')
      assert.equal(cp.version, 1)
    })

    test('listing: prefix, ownership filter, pagination in key order', async () => {
      const s = make()
      const ns = 'list'
      const keys = ['t:1', 't:2', 't:3', 't:10', 'u:1', 't', 't:é', 's:9']
      for (const [i, key] of keys.entries()) {
        await s.saveCheckpoint({ namespace: ns, key, ownership: i % 2 === 0 ? A : B, value: i })
      }
      await s.saveCheckpoint({ namespace: `${ns}-other`, key: 't:1', ownership: A, value: 0 })
      const sorted = [...keys].sort()
      for (const limit of [1, 2, 3, 100, undefined]) {
        const q = limit === undefined ? {} : { limit }
        assert.deepEqual(await listAll(s, { namespace: ns, ...q }), sorted)
        assert.deepEqual(await listAll(s, { namespace: ns, prefix: 't:', ...q }), ['t:1', 't:10', 't:2', 't:3', 't:é'])
        assert.deepEqual(await listAll(s, { namespace: ns, prefix: 't:', ownership: A, ...q }), ['t:1', 't:3', 't:é'])
        assert.deepEqual(await listAll(s, { namespace: ns, ownership: B, ...q }), ['s:9', 't', 't:10', 't:2'])
      }
      assert.deepEqual(await listAll(s, { namespace: ns, prefix: 'zz' }), [])
      const page = await s.listCheckpoints({ namespace: ns, prefix: 't:', limit: 5 })
      assert.equal(page.items.length, 5)
      assert.equal('nextCursor' in page, false, 'no cursor when nothing follows')
      const item = page.items[0]
      assert.equal(item.namespace, ns)
      assert.equal(item.version, 1)
      assert.deepEqual(item.ownership, A)
    })

    test('pagination: a cursor continues strictly after its key, whatever changed', async () => {
      const s = make()
      const ns = 'cursor'
      for (const key of ['b', 'd', 'f', 'h']) await s.saveCheckpoint({ namespace: ns, key, ownership: A, value: key })
      const p1 = await s.listCheckpoints({ namespace: ns, limit: 2 })
      assert.deepEqual(p1.items.map((c) => c.key), ['b', 'd'])
      assert.equal(typeof p1.nextCursor, 'string')
      await s.saveCheckpoint({ namespace: ns, key: 'a', ownership: A, value: 0 })
      await s.saveCheckpoint({ namespace: ns, key: 'c', ownership: A, value: 0 })
      await s.saveCheckpoint({ namespace: ns, key: 'e', ownership: A, value: 0 })
      await s.saveCheckpoint({ namespace: ns, key: 'f', ownership: A, value: 'f2' })
      assert.equal(await s.deleteCheckpoint({ namespace: ns, key: 'b', ownership: A }), true)
      const rest = await listAll(s, { namespace: ns, limit: 2, cursor: p1.nextCursor })
      assert.deepEqual(rest, ['e', 'f', 'h'])
      assert.deepEqual(await listAll(s, { namespace: ns, limit: 2, cursor: p1.nextCursor }), rest, 'same cursor, same continuation')
    })

    test('compare-and-swap: create-only, replace-at-version, failures change nothing', async () => {
      const s = make()
      const ns = 'cas'
      const t = { namespace: ns, key: 'k', ownership: A }
      await assert.rejects(s.saveCheckpoint({ ...t, value: 1, expectedVersion: 1 }), isConflict)
      assert.equal(await s.loadCheckpoint(t), undefined, 'a failed CAS creates nothing')
      await s.saveCheckpoint({ ...t, value: 1, expectedVersion: 0 })
      await assert.rejects(s.saveCheckpoint({ ...t, value: 2, expectedVersion: 0 }), isConflict)
      await assert.rejects(s.saveCheckpoint({ ...t, value: 2, expectedVersion: 2 }), isConflict)
      await assert.rejects(s.deleteCheckpoint({ ...t, expectedVersion: 2 }), isConflict)
      const cp = await s.loadCheckpoint(t)
      assert.equal(cp.version, 1)
      assert.equal(cp.value, 1)
      await s.saveCheckpoint({ ...t, value: 2, expectedVersion: 1 })
      await assert.rejects(s.saveCheckpoint({ ...t, value: 3, expectedVersion: 1 }), isConflict)

      // Concurrent read-modify-write with retry on conflict: no increment lost.
      await s.saveCheckpoint({ namespace: ns, key: 'counter', ownership: A, value: 0, expectedVersion: 0 })
      const workers = 8
      const per = 5
      await Promise.all(
        Array.from({ length: workers }, async () => {
          for (let i = 0; i < per; i++) {
            for (;;) {
              const cur = await s.loadCheckpoint({ namespace: ns, key: 'counter', ownership: A })
              try {
                await s.saveCheckpoint({ namespace: ns, key: 'counter', ownership: A, value: cur.value + 1, expectedVersion: cur.version })
                break
              } catch (e) {
                if (!isConflict(e)) throw e
              }
            }
          }
        }),
      )
      const counter = await s.loadCheckpoint({ namespace: ns, key: 'counter', ownership: A })
      assert.equal(counter.value, workers * per)
      assert.equal(counter.version, workers * per + 1)
    })

    test('two writers at the same version: exactly one wins, the other sees a conflict', async () => {
      const s = make()
      const t = { namespace: 'race', key: 'k', ownership: A }
      await s.saveCheckpoint({ ...t, value: 'v1' })
      for (let round = 0; round < 5; round++) {
        const [a, b] = await Promise.all([s.loadCheckpoint(t), s.loadCheckpoint(t)])
        assert.equal(a.version, b.version)
        const results = await Promise.allSettled([
          s.saveCheckpoint({ ...t, value: ['a', round], expectedVersion: a.version }),
          s.saveCheckpoint({ ...t, value: ['b', round], expectedVersion: b.version }),
        ])
        const won = results.filter((r) => r.status === 'fulfilled')
        const lost = results.filter((r) => r.status === 'rejected')
        assert.equal(won.length, 1)
        assert.equal(lost.length, 1)
        assert.ok(isConflict(lost[0].reason), String(lost[0].reason))
        assert.equal(won[0].value.version, a.version + 1)
        assert.deepEqual(await s.loadCheckpoint(t), won[0].value)
      }
      const creates = await Promise.allSettled([
        s.saveCheckpoint({ ...t, key: 'new', value: 'a', expectedVersion: 0 }),
        s.saveCheckpoint({ ...t, key: 'new', value: 'b', expectedVersion: 0 }),
      ])
      assert.equal(creates.filter((r) => r.status === 'fulfilled').length, 1)
      assert.ok(isConflict(creates.find((r) => r.status === 'rejected').reason))
    })

    test('bad input of every wrong type is an ArtifactError(invalid_input) and changes nothing', async () => {
      const s = make()
      const ns = 'bad'
      const ok = { namespace: ns, key: 'k', ownership: A, value: 1 }
      const cyclic = { a: 1 }
      cyclic.self = cyclic
      const protoKey = JSON.parse('{"namespace":"bad","key":"k","ownership":{"tenantId":"t"},"value":1,"__proto__":{"x":1}}')
      const badSaves = [
        undefined, null, 42, 'text', [], true, () => 1, Symbol('s'), 10n,
        { ...ok, namespace: undefined }, { ...ok, namespace: '' }, { ...ok, namespace: 5 }, { ...ok, namespace: 'x'.repeat(257) },
        { ...ok, key: undefined }, { ...ok, key: '' }, { ...ok, key: null }, { ...ok, key: 'k'.repeat(1025) }, { ...ok, key: 'a\u0000b' },
        { ...ok, ownership: undefined }, { ...ok, ownership: {} }, { ...ok, ownership: { tenantId: '' } }, { ...ok, ownership: 'me' },
        { ...ok, ownership: { tenantId: 5 } }, { ...ok, ownership: { tenantId: 't', role: 'admin' } }, { ...ok, ownership: { tenantId: 'x'.repeat(513) } },
        { ...ok, value: undefined }, { ...ok, value: cyclic }, { ...ok, value: 10n },
        { ...ok, expectedVersion: -1 }, { ...ok, expectedVersion: 1.5 }, { ...ok, expectedVersion: '1' }, { ...ok, expectedVersion: NaN },
        { ...ok, expectedVersion: 2 ** 60 }, { ...ok, category: 7 }, { ...ok, extra: true }, protoKey,
        { ...ok, key: 'k'.repeat(10 * 1024 * 1024) }, { ...ok, value: deep(200) }, { ...ok, value: deep(100_000) },
        { ...ok, ownership: JSON.parse('{"tenantId":"t","__proto__":{"admin":true}}') },
      ]
      for (const input of badSaves) {
        await assert.rejects(s.saveCheckpoint(input), isInvalid, `saveCheckpoint(${String(input && typeof input === 'object' ? JSON.stringify(Object.keys(input)) : typeof input)})`)
      }
      const t = { namespace: ns, key: 'k', ownership: A }
      for (const input of [undefined, null, 1, [], { ...t, ownership: null }, { ...t, key: 1 }, { ...t, value: 1 }, { ...t, expectedVersion: 1 }]) {
        await assert.rejects(s.loadCheckpoint(input), isInvalid)
      }
      for (const input of [undefined, 'x', { ...t, expectedVersion: -2 }, { ...t, ownership: [] }, { ...t, namespace: {} }]) {
        await assert.rejects(s.deleteCheckpoint(input), isInvalid)
      }
      for (const input of [
        null, { namespace: ns, limit: 0 }, { namespace: ns, limit: -1 }, { namespace: ns, limit: 1.5 }, { namespace: ns, limit: '10' },
        { namespace: ns, cursor: '' }, { namespace: ns, cursor: 5 }, { namespace: ns, prefix: 3 },
        { namespace: ns, ownership: {} }, { namespace: ns, sort: 'desc' }, { namespace: 1 },
      ]) {
        await assert.rejects(s.listCheckpoints(input), isInvalid, JSON.stringify(input))
      }
      if (!name.startsWith('host')) {
        // Native cursors are checked; a host store's cursors are its own business.
        await assert.rejects(s.listCheckpoints({ namespace: ns, cursor: 'not a cursor' }), isInvalid)
      }
      // A huge value: refused as record_too_large (memory: 1 MiB by default; every store: 16 MiB hard).
      await assert.rejects(
        s.saveCheckpoint({ ...ok, value: 'x'.repeat(17 * 1024 * 1024) }),
        (e) => e instanceof ArtifactError && e.reason === 'record_too_large',
      )
      assert.deepEqual((await s.listCheckpoints({ namespace: ns })).items, [], 'nothing changed')
    })
  })
}
