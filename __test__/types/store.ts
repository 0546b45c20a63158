// Compiles under tsc --strict: the stores' typings, and the seed's store line
// (`createSqlitePersistence({ filename: "prism.db" })` whose `.checkpoints` feeds the service).
import {
  createMemoryCheckpointStore,
  createSqlitePersistence,
  CheckpointConflictError,
  type Checkpoint,
  type CheckpointStore,
  type OwnershipScope,
  type PersistencePage,
  type SqlitePersistence,
} from 'prism-review'

const persistence: SqlitePersistence = createSqlitePersistence({ filename: 'prism.db' })
const sqliteStore: CheckpointStore = persistence.checkpoints
const memory: CheckpointStore = createMemoryCheckpointStore({ maxRecords: 100, maxValueBytes: 4096, maxPageSize: 50 })
const defaults: CheckpointStore = createMemoryCheckpointStore()

const ownership: OwnershipScope = { tenantId: 'acme', userId: 'u1' }

export async function roundTrip(store: CheckpointStore): Promise<number> {
  const saved: Checkpoint = await store.saveCheckpoint({
    namespace: 'prism.artifact',
    key: 'thread-1:art_1',
    ownership,
    category: 'artifact',
    value: { n: 1 },
    expectedVersion: 0,
  })
  const loaded = await store.loadCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:art_1', ownership })
  const n: number = loaded === undefined ? 0 : (loaded.value as { n: number }).n
  const page: PersistencePage<Checkpoint> = await store.listCheckpoints({ namespace: 'prism.artifact', prefix: 'thread-1:', limit: 10 })
  const cursor: string | undefined = page.nextCursor
  const deleted: boolean = await store.deleteCheckpoint({ namespace: 'prism.artifact', key: 'thread-1:art_1', ownership, expectedVersion: saved.version })
  return n + page.items.length + (cursor ? 1 : 0) + (deleted ? 1 : 0)
}

// A host's own store satisfies the interface structurally.
const rows = new Map<string, Checkpoint>()
export const hostStore: CheckpointStore = {
  async saveCheckpoint(input) {
    const prev = rows.get(input.key)
    if (input.expectedVersion !== undefined && (prev?.version ?? 0) !== input.expectedVersion) throw new CheckpointConflictError()
    const now = new Date().toISOString()
    const cp = { ...input, version: (prev?.version ?? 0) + 1, createdAt: prev?.createdAt ?? now, updatedAt: now }
    rows.set(input.key, cp)
    return cp
  },
  async loadCheckpoint(input) {
    return rows.get(input.key)
  },
  async listCheckpoints() {
    return { items: [...rows.values()] }
  },
  async deleteCheckpoint(input) {
    return rows.delete(input.key)
  },
}

export const all = [sqliteStore, memory, defaults, hostStore]
export const closing: Promise<void> = persistence.close()

import { createPostgresPersistence, type PostgresPersistence } from 'prism-review'
const pg: PostgresPersistence = createPostgresPersistence({ connectionString: 'postgres://postgres@127.0.0.1:5432/test', maxConnections: 8, schema: 'prism', connectTimeoutMs: 5000 })
export const pgStore: CheckpointStore = pg.checkpoints
export const pgClosing: Promise<void> = pg.close()
