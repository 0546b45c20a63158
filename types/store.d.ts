/**
 * Checkpoint stores: `@arnilo/prism`'s `CheckpointStore` contract, the native stores
 * (memory, SQLite, PostgreSQL) that implement it, and the shapes a host's own store uses.
 *
 * @packageDocumentation
 */

/**
 * Who owns a record: the scope a host derives from its own `authorize`, never from
 * request JSON. Native stores scope every key by all three members (absent and
 * present-but-empty are different owners); the artifact service needs at least one
 * non-empty member.
 */
export interface OwnershipScope {
  /** Tenant (organisation) id. */
  readonly tenantId?: string
  /** Account id within the tenant. */
  readonly accountId?: string
  /** User id. */
  readonly userId?: string
}

/** One page of a cursor-paginated listing. */
export interface PersistencePage<T> {
  /** The items of this page. */
  readonly items: readonly T[]
  /** Present when more items follow: pass it as `cursor` to get the next page. */
  readonly nextCursor?: string
  /** A total count, when a store reports one (the native stores do not). */
  readonly total?: number
}

/** Common query controls for cursor-based pagination. */
export interface PersistenceQuery {
  /** The `nextCursor` of the previous page (opaque; a store's own). */
  readonly cursor?: string
  /** Page size: below 1 counts as 1, above the store's page cap as the cap (native default 100). */
  readonly limit?: number
  /** Listing order of the native stores: by namespace, key and owner, ascending (default) or descending. */
  readonly order?: 'asc' | 'desc'
}

/** A versioned checkpoint key: namespace, key and owner. */
export interface CheckpointKey extends OwnershipScope {
  /** Namespace, 1..256 bytes (for example `"prism.artifact"`). */
  readonly namespace: string
  /** Key within the namespace, 1..1024 bytes (for example `"thread-1:art_1"`). */
  readonly key: string
  /** Checked before the call: an aborted signal rejects with its reason and changes nothing. */
  readonly signal?: AbortSignal
}

/**
 * Input of an optimistic write. Versions are the caller's and must strictly increase;
 * every refusal below is a `CheckpointConflictError` and changes nothing.
 */
export interface CheckpointSaveInput extends CheckpointKey {
  /** The new version: a positive safe integer greater than the stored one. */
  readonly version: number
  /** The exact stored version required before the write; `0` creates only. */
  readonly expectedVersion?: number
  /** Monotonic lease fence: once a record carries one, a write with a lower or absent token is refused. */
  readonly fencingToken?: number
  /**
   * Any JSON value (native stores bound its JSON text: memory `maxValueBytes`, others 16 MiB;
   * `RangeError` past it). A string holding a lone UTF-16 surrogate (cut inside a pair) is
   * kept as given by the memory and SQLite stores; PostgreSQL refuses it (`RangeError`).
   */
  readonly value: unknown
  /** Free-form category, at most 256 bytes; a save replaces it (absent clears it). */
  readonly category?: string
  /** Free-form JSON object, at most 64 KiB; a save replaces it (absent clears it). */
  readonly metadata?: Readonly<Record<string, unknown>>
}

/** A stored checkpoint. Optional members are absent, never `null`. */
export interface CheckpointRecord extends OwnershipScope {
  /** The namespace. */
  readonly namespace: string
  /** The key. */
  readonly key: string
  /** The version the last save assigned. */
  readonly version: number
  /** The lease fence of the last save, if it had one. */
  readonly fencingToken?: number
  /** The JSON value. */
  readonly value: unknown
  /** The category of the last save, if it had one. */
  readonly category?: string
  /** ISO-8601 UTC time of the first save. */
  readonly createdAt: string
  /** ISO-8601 UTC time of the last save. */
  readonly updatedAt: string
  /** The metadata of the last save, if it had one. */
  readonly metadata?: Readonly<Record<string, unknown>>
}

/** A bounded checkpoint query. Every given member filters; absent members match anything. */
export interface CheckpointQuery extends PersistenceQuery, OwnershipScope {
  /** Only this namespace (absent: every namespace). */
  readonly namespace?: string
  /** Only keys starting with this prefix. */
  readonly keyPrefix?: string
  /** Only this category, or one of these (an empty list matches nothing). */
  readonly category?: string | readonly string[]
  /** Checked before the call, as for {@link CheckpointKey.signal}. */
  readonly signal?: AbortSignal
}

/** Input of `deleteCheckpoint`: a key, and (an addition of the native stores) a version. */
export interface CheckpointDeleteInput extends CheckpointKey {
  /** Delete only the record at this version (a `CheckpointConflictError` otherwise). Host stores may ignore it. */
  readonly expectedVersion?: number
}

/**
 * The generic versioned checkpoint capability (`@arnilo/prism`'s interface). The native
 * stores implement it as plain objects whose four methods are own enumerable functions,
 * so `{ ...store, saveCheckpoint: wrapped }` is a store too; so may a host's own object.
 * A host store signals a compare-and-swap conflict (or, with one key space, another
 * owner's key) by rejecting with an error whose `code` is
 * `"ERR_PRISM_CHECKPOINT_CONFLICT"`, e.g. a `CheckpointConflictError`.
 */
export interface CheckpointStore {
  /** Write a record (see {@link CheckpointSaveInput}); resolves to what is stored. */
  saveCheckpoint(input: CheckpointSaveInput): Promise<CheckpointRecord>
  /** The record, or `null` on a miss (another owner's key is a miss in the native stores). */
  loadCheckpoint(input: CheckpointKey): Promise<CheckpointRecord | null>
  /** One page of records. */
  listCheckpoints(query?: CheckpointQuery): Promise<PersistencePage<CheckpointRecord>>
  /** Delete a record; `false` when there was none. */
  deleteCheckpoint(input: CheckpointDeleteInput): Promise<boolean>
}

/** Caps of {@link createMemoryCheckpointStore}; each an integer in `1..hard` (else `RangeError`). */
export interface MemoryCheckpointStoreOptions {
  /** Largest page a listing returns. Default 500, hard 1000. */
  readonly maxPageSize?: number
  /** Most records held; past it the least recently saved is evicted. Default 10 000, hard 1 000 000. */
  readonly maxRecords?: number
  /** Largest value (its JSON text) in bytes; larger is a `RangeError`. Default 1 MiB, hard 16 MiB. */
  readonly maxValueBytes?: number
}

/** A bounded in-memory checkpoint store, for tests and single-process hosts. */
export declare function createMemoryCheckpointStore(options?: MemoryCheckpointStoreOptions): CheckpointStore

/** Options of {@link createSqlitePersistence}. */
export interface SqlitePersistenceOptions {
  /**
   * Path of the database file (created when missing, with its directory), or `":memory:"`
   * for an ephemeral database that all of this persistence's connections share and that
   * `close()` discards. A `file:` URI naming an in-memory database (`file::memory:`,
   * `mode=memory`) is refused: each connection would get a database of its own.
   */
  readonly filename: string
  /** How long a write waits for another process's lock, in ms. Default 5000, hard 600000 (`RangeError` outside `1..hard`). */
  readonly busyTimeoutMs?: number
  /**
   * WAL journal (default `true`): reads never wait for a write. `false` leaves a new file
   * on SQLite's rollback journal, where a read waits (within `busyTimeoutMs`) while a write
   * commits; a file already in WAL mode stays in it.
   */
  readonly wal?: boolean
  /** Permission bits the database file and its `-wal`/`-shm` files get on every open (Unix). Default 384 (`0o600`), hard 511 (`0o777`); `0..hard` (else `RangeError`). */
  readonly fileMode?: number
  /** Neither create nor migrate the table on open (tests; the table must exist). Default `false`. */
  readonly skipMigrations?: boolean
  /** Accepted for `@arnilo/prism` compatibility and ignored: this persistence keeps no feedback. */
  readonly feedbackRedactor?: unknown
  /** Not supported (refused): the native store opens the file itself; pass `filename`. */
  readonly database?: never
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
 * `(namespace, key, owner)`, compare-and-swap in one statement, indexed listing. All
 * database work runs off the JavaScript thread; several processes may share one file.
 * The file is opened on first use (a bad path surfaces as `ArtifactError('invalid_input')`
 * then), and a table of an earlier layout (prism-review 0.1, or
 * `@arnilo/prism-session-store-sqlite`) is migrated then, in one transaction.
 */
export declare function createSqlitePersistence(options: SqlitePersistenceOptions): SqlitePersistence

/** Options of {@link createPostgresPersistence}. */
export interface PostgresPersistenceOptions {
  /**
   * A libpq-style connection string or URL (`postgres://user@host:5432/db`). Connections
   * are unencrypted (no TLS in this build). It never appears in an error message.
   */
  readonly connectionString: string
  /** Pool size (`@arnilo/prism`'s name). Default 10, hard 100 (`RangeError` outside `1..hard`). */
  readonly poolMax?: number
  /** Pool size, as `poolMax` (give one; both must agree). Default 10, hard 100 (`RangeError` outside `1..hard`). */
  readonly maxConnections?: number
  /**
   * Schema holding the tables: a plain identifier. Default `"public"` (`@arnilo/prism`'s is
   * `"prism"`: pass it to open the reference's checkpoints, migrated on first use).
   */
  readonly schema?: string
  /** Connect and pool-wait timeout in ms. Default 10 000, hard 600000 (`RangeError` outside `1..hard`). */
  readonly connectTimeoutMs?: number
  /** Neither create nor migrate the schema on first use (tests; the table must exist). Default `false`. */
  readonly skipMigrations?: boolean
  /** Accepted for `@arnilo/prism` compatibility and ignored: this persistence keeps no feedback. */
  readonly feedbackRedactor?: unknown
  /** Accepted for `@arnilo/prism` compatibility and ignored: this persistence has no event source. */
  readonly eventSource?: unknown
  /** Accepted for `@arnilo/prism` compatibility and ignored: this persistence has no event source. */
  readonly eventCursorSecret?: string | Uint8Array
  /** Not supported (refused): the native store keeps its own connections; pass `connectionString` and `poolMax`. */
  readonly pool?: never
  /** Not supported (refused): put the connection settings in `connectionString`. */
  readonly poolConfig?: never
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
 * PostgreSQL persistence (`tokio-postgres` + `deadpool-postgres`): the same semantics and
 * conformance as the SQLite store, with `jsonb` values (object keys come back in
 * PostgreSQL's order). Many Node instances may share one database; the schema is created
 * or migrated on first use. Connection failures and timeouts reject with an `Error` whose
 * `code` is `"ERR_PRISM_STORE_UNAVAILABLE"` (retry); an empty or unparsable connection
 * string, or one naming no host or no user, is a `TypeError` at construction.
 */
export declare function createPostgresPersistence(options: PostgresPersistenceOptions): PostgresPersistence
