// PostgreSQL persistence: options, and many Node instances sharing one database
// (eight processes × eight concurrent workers, with every connection terminated in the
// middle of the load). Skipped, never passed, without PRISM_TEST_POSTGRES_URL.
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { spawnLines } from './fixtures/spawn-lines.mjs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createPostgresPersistence, ArtifactError } from '../index.mjs'

const url = process.env.PRISM_TEST_POSTGRES_URL
const skip = url ? false : 'PRISM_TEST_POSTGRES_URL is not set'
const here = dirname(fileURLToPath(import.meta.url))
const schema = `prism_multi_${process.pid}`
const isInvalid = (e) => e instanceof ArtifactError && e.reason === 'invalid_input'

function psql(sql) {
  return execFileSync('psql', [url, '-Atqc', sql], { encoding: 'utf8' })
}
after(() => {
  if (url) psql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
})

test('options: wrong types are invalid_input, a connection string that can never connect is a TypeError, numbers out of range are RangeErrors, nothing leaks the password', () => {
  for (const options of [undefined, null, 'postgres://x', {}, { connectionString: 5 },
    { connectionString: 'postgres://h/db', schema: 'a;drop table x' },
    { connectionString: 'postgres://h/db', schema: 7 }, { connectionString: 'postgres://h/db', other: 1 }]) {
    assert.throws(() => createPostgresPersistence(options), (e) => isInvalid(e) && !/pw@/.test(e.message), JSON.stringify(options))
  }
  // Empty, unparsable, no host, no user: refused at construction, not at first use.
  for (const connectionString of ['', 'postgres://u:pw@h:notaport/db', 'postgres://', ' ', 'postgres://h/db']) {
    assert.throws(
      () => createPostgresPersistence({ connectionString }),
      (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE' && !/pw@/.test(e.message),
      JSON.stringify(connectionString),
    )
  }
  for (const extra of [{ maxConnections: 0 }, { maxConnections: 101 }, { maxConnections: 1.5 }, { connectTimeoutMs: 0 }, { connectTimeoutMs: NaN }, { poolMax: NaN }, { poolMax: -Infinity }, { poolMax: 0 }]) {
    assert.throws(() => createPostgresPersistence({ connectionString: 'postgres://h/db', ...extra }), RangeError)
  }
  // Only an option itself is a number to check: a refused option is refused by name, whatever it holds.
  assert.throws(
    () => createPostgresPersistence({ connectionString: 'postgres://h/db', poolConfig: { max: NaN } }),
    (e) => isInvalid(e) && /options\.poolConfig is not supported/.test(e.message),
  )
})

test("the reference's options: poolMax sizes the pool, skipMigrations creates nothing, its event and feedback options are ignored, a pg Pool or poolConfig is refused", { skip }, async () => {
  const sized = `${schema}_poolmax`
  try {
    const p = createPostgresPersistence({ connectionString: url, schema: sized, poolMax: 2, feedbackRedactor: {}, eventSource: { maxPageSize: 10 }, eventCursorSecret: new Uint8Array(32) })
    // 24 saves in flight on a pool of 2: the pool's connections stay open (idle) after
    // them, and there are 2 (the default pool would have opened more).
    await Promise.all(Array.from({ length: 24 }, (_, i) => p.checkpoints.saveCheckpoint({ namespace: 'n', key: `k${i}`, tenantId: 't', version: 1, value: i })))
    const open = Number(psql(`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'prism-review' AND query LIKE '%${sized}%'`))
    assert.ok(open >= 1 && open <= 2, `the pool holds 1..2 connections, saw ${open}`)
    assert.equal(Number(psql(`SELECT count(*) FROM "${sized}".prism_checkpoints`)), 24)
    await p.close()
    assert.throws(() => createPostgresPersistence({ connectionString: url, poolMax: 2, maxConnections: 3 }), isInvalid)
    assert.throws(() => createPostgresPersistence({ connectionString: url, poolMax: 0 }), RangeError)
  } finally {
    psql(`DROP SCHEMA IF EXISTS "${sized}" CASCADE`)
  }
  const bare = `${schema}_unmigrated`
  const s = createPostgresPersistence({ connectionString: url, schema: bare, skipMigrations: true })
  await assert.rejects(s.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', tenantId: 't' }), (e) => e.code === 'ERR_PRISM_INTERNAL')
  await s.close()
  assert.equal(psql(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = '${bare}'`).trim(), '0', 'nothing created')
  class Pool {}
  assert.throws(() => createPostgresPersistence({ pool: new Pool() }), (e) => isInvalid(e) && /options\.pool is not supported.*connectionString/.test(e.message))
  assert.throws(() => createPostgresPersistence({ connectionString: url, poolConfig: { host: 'h' } }), (e) => isInvalid(e) && /options\.poolConfig is not supported/.test(e.message))
})

test('an unreachable server is a typed error without credentials; close is idempotent', async () => {
  const p = createPostgresPersistence({ connectionString: 'postgres://me:hunter2secret@127.0.0.1:1/db', connectTimeoutMs: 2000 })
  await assert.rejects(
    p.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', userId: 'u' }),
    (e) => e.code === 'ERR_PRISM_STORE_UNAVAILABLE' && /^postgres/.test(e.message) && !e.message.includes('hunter2secret'),
  )
  await p.close()
  await p.close()
  await assert.rejects(p.checkpoints.loadCheckpoint({ namespace: 'n', key: 'k', userId: 'u' }), isInvalid)
})

function run(args) {
  const { done } = spawnLines(join(here, 'fixtures', 'pg-writer.mjs'), args, {
    onLine: () => {
      run.onLine?.()
    },
  })
  return done
}

test('eight processes × eight workers on one database, connections terminated mid-load: every decision exactly once', { skip }, async () => {
  const perWorker = 12
  let terminated = false
  let seen = 0
  // Terminated three times, after 150, 300 and 450 of the 768 decisions: once alone could
  // find no call in flight (every process between two calls, or done, by the time psql
  // ran on a loaded machine), and then nothing would check how in-flight calls fail.
  const terminateAt = [150, 300, 450]
  run.onLine = () => {
    seen++
    if (seen >= terminateAt[0]) {
      terminateAt.shift()
      terminated = true
      psql(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'prism-review' AND datname = current_database() AND pid <> pg_backend_pid()`)
    }
  }
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => run([url, schema, String(i), String(perWorker)])))
  run.onLine = undefined
  assert.ok(terminated, 'the connections were terminated during the load')
  const decided = []
  let typedErrors = 0
  for (const r of results) {
    assert.equal(r.code, 0, r.stderr)
    for (const line of r.lines) {
      if (line.startsWith('ok ')) decided.push(line.slice(3))
      else if (line.startsWith('err ERR_PRISM')) typedErrors++
      else assert.fail(`unexpected output ${line}`)
    }
  }
  assert.equal(decided.length, 8 * 8 * perWorker)
  assert.ok(typedErrors >= 1, 'operations in flight when the connections died failed with typed errors')

  const p = createPostgresPersistence({ connectionString: url, schema })
  const page = await p.checkpoints.listCheckpoints({ namespace: 'decisions', limit: 100 })
  assert.equal(page.items.length, 6)
  const stored = page.items.flatMap((c) => c.value.decisions)
  assert.equal(new Set(stored).size, stored.length, 'no decision stored twice')
  assert.deepEqual([...stored].sort(), [...decided].sort(), 'every decision that resolved is stored')
  for (const c of page.items) assert.equal(c.version, c.value.decisions.length, 'one save per decision')
  await p.close()
})

test('a database of the 0.1 schema (one key per namespace and key) is migrated on first use', { skip }, async () => {
  const old = `${schema}_v1`
  // Exactly what prism-review 0.1 created, with two rows of two owners.
  psql(`
    CREATE SCHEMA "${old}";
    CREATE TABLE "${old}".prism_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
    CREATE TABLE "${old}".prism_checkpoints (
      namespace text COLLATE "C" NOT NULL, key text COLLATE "C" NOT NULL, version bigint NOT NULL CHECK (version >= 1),
      tenant_id text, account_id text, user_id text, owner_key text COLLATE "C" NOT NULL, category text,
      value jsonb NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, PRIMARY KEY (namespace, key));
    CREATE INDEX prism_checkpoints_by_owner ON "${old}".prism_checkpoints (namespace, owner_key, key);
    INSERT INTO "${old}".prism_migrations (version) VALUES (1);
    INSERT INTO "${old}".prism_checkpoints VALUES
      ('prism.artifact', 't:a', 3, 't1', NULL, 'u1', '{"tenantId":"t1","userId":"u1"}', 'artifact', '{"id":"a"}',
       '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'),
      ('other', 'k', 1, NULL, 'acct', NULL, '{"accountId":"acct"}', NULL, '[1]', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');`)
  try {
    const p = createPostgresPersistence({ connectionString: url, schema: old })
    const owner = { tenantId: 't1', userId: 'u1' }
    const cp = await p.checkpoints.loadCheckpoint({ namespace: 'prism.artifact', key: 't:a', ...owner })
    assert.deepEqual([cp.version, cp.value, cp.category, cp.createdAt], [3, { id: 'a' }, 'artifact', '2026-01-01T00:00:00.000Z'])
    assert.deepEqual((await p.checkpoints.loadCheckpoint({ namespace: 'other', key: 'k', accountId: 'acct' })).value, [1])
    // Owner-scoped from now on, with fencing tokens and metadata.
    assert.equal(await p.checkpoints.loadCheckpoint({ namespace: 'prism.artifact', key: 't:a', tenantId: 't2' }), null)
    await p.checkpoints.saveCheckpoint({ namespace: 'prism.artifact', key: 't:a', tenantId: 't2', version: 1, expectedVersion: 0, value: 2 })
    const next = await p.checkpoints.saveCheckpoint({ namespace: 'prism.artifact', key: 't:a', ...owner, version: 4, expectedVersion: 3, fencingToken: 1, metadata: { m: 1 }, value: 3 })
    assert.deepEqual([next.version, next.fencingToken, next.metadata], [4, 1, { m: 1 }])
    await p.close()
    assert.equal(psql(`SELECT string_agg(version::text, ',' ORDER BY version) FROM "${old}".prism_migrations`).trim(), '1,2')
  } finally {
    psql(`DROP SCHEMA IF EXISTS "${old}" CASCADE`)
  }
})

test("a schema of @arnilo/prism's PostgreSQL persistence: its checkpoints are migrated on first use, its own prism_migrations is left alone", { skip }, async () => {
  const theirs = `${schema}_reference`
  // The reference's tables exactly as its persistence creates them (packages/session-store-postgres:
  // ddl.ts for prism_migrations, checkpoints.ts for prism_checkpoints), with rows of three owners,
  // one of them with characters JSON escapes.
  const odd = 'q"b\\s\nn\u00e9'
  psql(`CREATE SCHEMA "${theirs}";
    CREATE TABLE "${theirs}".prism_migrations (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL, version TEXT NOT NULL,
      applied_at TEXT NOT NULL, applied_by TEXT, checksum TEXT, metadata TEXT, UNIQUE (name, version));
    INSERT INTO "${theirs}".prism_migrations VALUES ('001', 'initial', '1', '2026-01-01T00:00:00Z', NULL, NULL, NULL);
    CREATE TABLE "${theirs}".prism_checkpoints (
      namespace TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,
      fencing_token BIGINT, category TEXT, tenant_id TEXT, account_id TEXT, user_id TEXT,
      value JSONB NOT NULL, metadata JSONB, created_at TIMESTAMPTZ NOT NULL,
      updated_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (namespace, key));
    CREATE INDEX prism_checkpoints_list_idx ON "${theirs}".prism_checkpoints (namespace, category, tenant_id, updated_at DESC, key);
    INSERT INTO "${theirs}".prism_checkpoints VALUES
      ('prism.artifact', 't:a', 3, 7, 'artifact', 't1', NULL, 'u1', '{"id":"a"}', '{"m":1}', '2026-01-01T00:00:00Z', '2026-01-02T00:00:00Z'),
      ('other', 'k', 1, NULL, NULL, NULL, 'acct', NULL, '[1]', NULL, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'),
      ('odd', 'k', 2, NULL, NULL, $o$${odd}$o$, NULL, NULL, '{}', NULL, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');`)
  try {
    const p = createPostgresPersistence({ connectionString: url, schema: theirs })
    const owner = { tenantId: 't1', userId: 'u1' }
    const cp = await p.checkpoints.loadCheckpoint({ namespace: 'prism.artifact', key: 't:a', ...owner })
    assert.deepEqual([cp.version, cp.fencingToken, cp.value, cp.category, cp.metadata, cp.createdAt], [3, 7, { id: 'a' }, 'artifact', { m: 1 }, '2026-01-01T00:00:00.000Z'])
    assert.deepEqual((await p.checkpoints.loadCheckpoint({ namespace: 'other', key: 'k', accountId: 'acct' })).value, [1])
    assert.equal((await p.checkpoints.loadCheckpoint({ namespace: 'odd', key: 'k', tenantId: odd })).version, 2, 'the owner key the migration computed is the store\'s own')
    // Owner-scoped from now on: another owner's key is absent, and saving there is that owner's own record.
    assert.equal(await p.checkpoints.loadCheckpoint({ namespace: 'prism.artifact', key: 't:a', tenantId: 't2' }), null)
    await p.checkpoints.saveCheckpoint({ namespace: 'prism.artifact', key: 't:a', tenantId: 't2', version: 1, expectedVersion: 0, value: 2 })
    const next = await p.checkpoints.saveCheckpoint({ namespace: 'prism.artifact', key: 't:a', ...owner, version: 4, expectedVersion: 3, fencingToken: 7, value: 3 })
    assert.equal(next.version, 4)
    assert.equal((await p.checkpoints.listCheckpoints({ namespace: 'prism.artifact', keyPrefix: 't:' })).items.length, 2)
    await p.close()
    assert.equal(psql(`SELECT string_agg(version::text, ',' ORDER BY version) FROM "${theirs}".prism_review_migrations`).trim(), '1,2')
    assert.equal(psql(`SELECT string_agg(id || '/' || version, ',') FROM "${theirs}".prism_migrations`).trim(), '001/1', 'theirs untouched')
    // Opened again: nothing to migrate, the rows as they were.
    const again = createPostgresPersistence({ connectionString: url, schema: theirs })
    assert.equal((await again.checkpoints.loadCheckpoint({ namespace: 'prism.artifact', key: 't:a', ...owner })).version, 4)
    await again.close()
  } finally {
    psql(`DROP SCHEMA IF EXISTS "${theirs}" CASCADE`)
  }
})

test('close() refuses every call made after it at once, while the calls made before it complete (issue 17)', { skip }, async () => {
  const s = `${schema}_close`
  const p = createPostgresPersistence({ connectionString: url, schema: s })
  const owner = { tenantId: 't' }
  try {
    await p.checkpoints.saveCheckpoint({ namespace: 'n', key: 'warm', ...owner, version: 1, value: 0 })
    const before = Array.from({ length: 3 }, (_, i) => p.checkpoints.saveCheckpoint({ namespace: 'n', key: `before${i}`, ...owner, version: 1, value: i }))
    const closing = p.close()
    const after = Array.from({ length: 3 }, (_, i) => p.checkpoints.saveCheckpoint({ namespace: 'n', key: `after${i}`, ...owner, version: 1, value: i }))
    const results = await Promise.allSettled([...before, ...after])
    await closing
    assert.deepEqual(results.slice(0, 3).map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled'])
    for (const r of results.slice(3)) assert.ok(r.status === 'rejected' && isInvalid(r.reason) && /closed/.test(r.reason.message), String(r.reason))
    const again = createPostgresPersistence({ connectionString: url, schema: s })
    const page = await again.checkpoints.listCheckpoints({ namespace: 'n', limit: 100 })
    assert.deepEqual(page.items.map((c) => c.key).sort(), ['before0', 'before1', 'before2', 'warm'])
    await again.close()
  } finally {
    psql(`DROP SCHEMA IF EXISTS "${s}" CASCADE`)
  }
})
