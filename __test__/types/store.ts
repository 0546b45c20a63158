// Compiles under tsc --strict: the stores' typings, and the seed's store line
// (`createSqlitePersistence({ filename: "prism.db" })` whose `.checkpoints` feeds the service).
import {
  createMemoryCheckpointStore,
  createSqlitePersistence,
  createPostgresPersistence,
  type CheckpointRecord,
  type CheckpointStore,
  type OwnershipScope,
  type PersistencePage,
  type SqlitePersistence,
  type PostgresPersistence,
} from 'prism-review'

const persistence: SqlitePersistence = createSqlitePersistence({ filename: 'prism.db' })
const sqliteStore: CheckpointStore = persistence.checkpoints
const memory: CheckpointStore = createMemoryCheckpointStore({ maxRecords: 100, maxValueBytes: 4096, maxPageSize: 50 })
const defaults: CheckpointStore = createMemoryCheckpointStore()

const ownership: OwnershipScope = { tenantId: 'acme', userId: 'u1' }

export async function roundTrip(store: CheckpointStore): Promise<number> {
  const saved: CheckpointRecord = await store.saveCheckpoint({
    namespace: 'prism.artifact',
    key: 'thread-1:art_1',
    ...ownership,
    version: 1,
    expectedVersion: 0,
    fencingToken: 3,
    category: 'artifact',
    metadata: { run: 'r1' },
    value: { n: 1 },
    signal: AbortSignal.timeout(1000),
  })
  const loaded = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:art_1', ...ownership })
  const n: number = loaded === null ? 0 : (loaded.value as { n: number }).n
  const page: PersistencePage<CheckpointRecord> = await store.listCheckpoints({
    namespace: 'prism.artifact',
    keyPrefix: 'thread-1:',
    category: ['artifact', 'draft'],
    tenantId: 'acme',
    limit: 10,
    order: 'desc',
  })
  const cursor: string | undefined = page.nextCursor
  const deleted: boolean = await store.deleteCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:art_1', ...ownership, expectedVersion: saved.version })
  return n + page.items.length + (cursor ? 1 : 0) + (deleted ? 1 : 0)
}

// A native store spread with one method replaced is still a store.
export const wrapped: CheckpointStore = {
  ...memory,
  async saveCheckpoint(input) {
    return memory.saveCheckpoint(input)
  },
}

export const all = [sqliteStore, memory, defaults, wrapped]
export const closing: Promise<void> = persistence.close()

const pg: PostgresPersistence = createPostgresPersistence({ connectionString: 'postgres://postgres@127.0.0.1:5432/test', maxConnections: 8, schema: 'prism', connectTimeoutMs: 5000 })
export const pgStore: CheckpointStore = pg.checkpoints
export const pgClosing: Promise<void> = pg.close()
