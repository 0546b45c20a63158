/**
 * Who owns a record: the scope a host derives from its own `authorize`, never from
 * request JSON. At least one member must be a non-empty string. Two scopes are the same
 * owner only when all three members are equal (absent equals absent only).
 */
export interface OwnershipScope {
  /** Tenant (organisation) id. */
  readonly tenantId?: string
  /** Account id within the tenant. */
  readonly accountId?: string
  /** User id. */
  readonly userId?: string
}

/** One page of a listing. */
export interface PersistencePage<T> {
  /** The items of this page, in key order. */
  readonly items: readonly T[]
  /** Present when more items follow: pass it as `cursor` to get the next page. */
  readonly nextCursor?: string
}

/** A stored, versioned checkpoint. */
export interface Checkpoint<T = unknown> {
  /** The namespace (for example `"prism.artifact"`). */
  readonly namespace: string
  /** The key within the namespace (for example `"thread-1:art_1"`). */
  readonly key: string
  /** Counts the saves of this key, 1 on create: the compare-and-swap counter. */
  readonly version: number
  /** The owner; a checkpoint is invisible to every other owner. */
  readonly ownership: OwnershipScope
  /** Optional free-form category. */
  readonly category?: string
  /** The JSON value. */
  readonly value: T
  /** ISO-8601 UTC time of creation. */
  readonly createdAt: string
  /** ISO-8601 UTC time of the last save. */
  readonly updatedAt: string
}

/** Input of {@link CheckpointStore.saveCheckpoint}. */
export interface SaveCheckpointInput<T = unknown> {
  /** Namespace: 1..256 bytes. */
  namespace: string
  /** Key: 1..1024 bytes. */
  key: string
  /** The owner; saving over another owner's checkpoint is a {@link CheckpointConflictError}. */
  ownership: OwnershipScope
  /** Optional category, at most 256 bytes; a save replaces it (absent clears it). */
  category?: string
  /** Any JSON value, bounded by the store's value cap (`record_too_large` past it). */
  value: T
  /**
   * Compare-and-swap: `0` creates only (conflict if the key exists); `n` replaces only
   * the checkpoint at version `n`; absent upserts.
   */
  expectedVersion?: number
}

/** Input of {@link CheckpointStore.loadCheckpoint}. */
export interface LoadCheckpointInput {
  /** Namespace. */
  namespace: string
  /** Key. */
  key: string
  /** The caller's ownership; another owner's checkpoint loads as `undefined`. */
  ownership: OwnershipScope
}

/** Input of {@link CheckpointStore.listCheckpoints}. */
export interface ListCheckpointsInput {
  /** Namespace to list. */
  namespace: string
  /** Only keys starting with this prefix. */
  prefix?: string
  /** Only checkpoints of exactly this owner. */
  ownership?: OwnershipScope
  /** The `nextCursor` of the previous page. */
  cursor?: string
  /** Page size, at least 1; capped by the store's page cap. */
  limit?: number
}

/** Input of {@link CheckpointStore.deleteCheckpoint}. */
export interface DeleteCheckpointInput {
  /** Namespace. */
  namespace: string
  /** Key. */
  key: string
  /** The caller's ownership; deleting another owner's checkpoint is a conflict. */
  ownership: OwnershipScope
  /** Delete only the checkpoint at this version (conflict otherwise). */
  expectedVersion?: number
}

/**
 * A versioned key/value store of JSON checkpoints. The native stores implement it, and
 * so may a host's own object: the artifact service accepts any object with these four
 * methods. A host store signals a compare-and-swap conflict or an ownership mismatch by
 * rejecting with an error whose `code` is `"ERR_PRISM_CHECKPOINT_CONFLICT"`
 * (for example a `CheckpointConflictError`). Values are `unknown`: narrow them where
 * you read them.
 */
export interface CheckpointStore {
  /** Create, replace or upsert one checkpoint; resolves to the stored checkpoint. */
  saveCheckpoint(input: SaveCheckpointInput): Promise<Checkpoint>
  /** The checkpoint, or `undefined` when absent or owned by someone else. */
  loadCheckpoint(input: LoadCheckpointInput): Promise<Checkpoint | undefined>
  /** One page of checkpoints of a namespace, in key order. */
  listCheckpoints(input: ListCheckpointsInput): Promise<PersistencePage<Checkpoint>>
  /** Delete one checkpoint; `false` when there was none. */
  deleteCheckpoint(input: DeleteCheckpointInput): Promise<boolean>
}

/** Caps of {@link createMemoryCheckpointStore}; each an integer in `1..hard` (else `RangeError`). */
export interface MemoryCheckpointStoreOptions {
  /** Most checkpoints held; past it the oldest created is evicted. Default 10 000, hard 1 000 000. */
  maxRecords?: number
  /** Largest value (its JSON text) in bytes. Default 1 MiB, hard 16 MiB. */
  maxValueBytes?: number
  /** Largest page a listing returns. Default 100, hard 1000. */
  maxPageSize?: number
}

/** A bounded in-memory checkpoint store, for tests and single-process hosts. */
export declare function createMemoryCheckpointStore(options?: MemoryCheckpointStoreOptions): CheckpointStore

/** Options of {@link createSqlitePersistence}. */
export interface SqlitePersistenceOptions {
  /** Path of the database file (created when missing), or `":memory:"`. */
  filename: string
  /** How long a write waits for another process's lock, in ms. Default 5000, `1..600000` (else `RangeError`). */
  busyTimeoutMs?: number
}

/** A SQLite database holding checkpoints. */
export interface SqlitePersistence {
  /** The checkpoint store over this database (pass it to `createArtifactService`). */
  readonly checkpoints: CheckpointStore
  /**
   * Refuse new work, wait for work in flight, close the database. Idempotent. Later
   * calls on `checkpoints` reject with `ArtifactError('invalid_input')`.
   */
  close(): Promise<void>
}

/**
 * SQLite persistence (bundled SQLite, WAL mode, `synchronous=FULL`): one table keyed by
 * `(namespace, key)`, compare-and-swap in one statement, indexed listing. All database
 * work runs off the JavaScript thread; several processes may share one file. The file is
 * opened on first use, so a bad path surfaces as `ArtifactError('invalid_input')` then.
 */
export declare function createSqlitePersistence(options: SqlitePersistenceOptions): SqlitePersistence

/** Options of {@link createPostgresPersistence}. */
export interface PostgresPersistenceOptions {
  /**
   * A libpq-style connection string or URL (`postgres://user@host:5432/db`). Connections
   * are unencrypted (no TLS in this build). It never appears in an error message.
   */
  connectionString: string
  /** Pool size. Default 10, `1..100` (else `RangeError`). */
  maxConnections?: number
  /** Schema holding the tables: a plain identifier. Default `"public"`. */
  schema?: string
  /** Connect and pool-wait timeout in ms. Default 10 000, `1..600000` (else `RangeError`). */
  connectTimeoutMs?: number
}

/** A PostgreSQL database holding checkpoints. */
export interface PostgresPersistence {
  /** The checkpoint store over this database (pass it to `createArtifactService`). */
  readonly checkpoints: CheckpointStore
  /**
   * Refuse new work, wait for work in flight, close the pool. Idempotent. Later calls on
   * `checkpoints` reject with `ArtifactError('invalid_input')`.
   */
  close(): Promise<void>
}

/**
 * PostgreSQL persistence (`tokio-postgres` + `deadpool-postgres`): the same table,
 * semantics and conformance as the SQLite store, with a `jsonb` value (object keys come
 * back in PostgreSQL's order). Many Node instances may share one database. Connection
 * failures and timeouts reject with an `Error` whose `code` is `"ERR_PRISM_INTERNAL"`.
 */
export declare function createPostgresPersistence(options: PostgresPersistenceOptions): PostgresPersistence
