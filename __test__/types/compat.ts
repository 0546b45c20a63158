// Written as a host writes against @arnilo/prism's documented types (a CheckpointStore
// class of its own, an ArtifactAuthorizer, service calls, delivery links), with only the
// import path changed to 'prism-review'. Compiles under tsc --strict.
import {
  ARTIFACT_CHECKPOINT_NAMESPACE,
  artifactApprovalState,
  artifactCheckpointKey,
  ArtifactError,
  CHECKPOINT_CONFLICT_CODE,
  CheckpointConflictError,
  createArtifactHandler,
  createPostgresPersistence,
  createSqlitePersistence,
  createArtifactService,
  createSecretRedactor,
  resolveArtifactLimits,
  signArtifactDeliveryLink,
  verifyArtifactDeliveryLink,
  type ArtifactApproval,
  type ArtifactApprovalState,
  type ArtifactAttachInput,
  type ArtifactAuthorizationInput,
  type ArtifactAuthorizer,
  type ArtifactCitation,
  type ArtifactDecisionEvent,
  type ArtifactDeliveryResult,
  type ArtifactDeliveryToken,
  type ArtifactLimits,
  type ArtifactOperation,
  type ArtifactRecord,
  type ArtifactRevision,
  type ArtifactService,
  type CheckpointKey,
  type CheckpointQuery,
  type CheckpointRecord,
  type CheckpointSaveInput,
  type CheckpointStore,
  type CreateArtifactHandlerOptions,
  type CreateArtifactServiceOptions,
  type OwnershipScope,
  type PersistencePage,
  type PrismServerAuthorization,
  type ResolvedArtifactLimits,
} from 'prism-review'

/** A host's own store: one row per (namespace, key, owner), as the README advises. */
export class HostCheckpointStore implements CheckpointStore {
  private readonly rows = new Map<string, CheckpointRecord>()

  private id(input: CheckpointKey): string {
    return JSON.stringify([input.namespace, input.key, input.tenantId ?? null, input.accountId ?? null, input.userId ?? null])
  }

  async saveCheckpoint(input: CheckpointSaveInput): Promise<CheckpointRecord> {
    input.signal?.throwIfAborted()
    const current = this.rows.get(this.id(input))
    if (input.expectedVersion !== undefined && input.expectedVersion !== (current?.version ?? 0)) {
      throw new CheckpointConflictError(`expected ${input.expectedVersion}, current ${current?.version ?? 0}`)
    }
    if (current && input.version <= current.version) throw new CheckpointConflictError('stale version')
    if (current?.fencingToken !== undefined && (input.fencingToken ?? -1) < current.fencingToken) {
      throw new CheckpointConflictError('stale fencing token')
    }
    const now = new Date().toISOString()
    const record: CheckpointRecord = {
      namespace: input.namespace,
      key: input.key,
      version: input.version,
      ...(input.fencingToken === undefined ? {} : { fencingToken: input.fencingToken }),
      value: structuredClone(input.value),
      ...(input.category === undefined ? {} : { category: input.category }),
      ...(input.tenantId === undefined ? {} : { tenantId: input.tenantId }),
      ...(input.accountId === undefined ? {} : { accountId: input.accountId }),
      ...(input.userId === undefined ? {} : { userId: input.userId }),
      createdAt: current?.createdAt ?? now,
      updatedAt: now,
      ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
    }
    this.rows.set(this.id(input), record)
    return record
  }

  async loadCheckpoint(input: CheckpointKey): Promise<CheckpointRecord | null> {
    input.signal?.throwIfAborted()
    return this.rows.get(this.id(input)) ?? null
  }

  async listCheckpoints(query: CheckpointQuery = {}): Promise<PersistencePage<CheckpointRecord>> {
    const categories = query.category === undefined ? undefined : ([] as string[]).concat(query.category)
    const items = [...this.rows.values()].filter(
      (r) =>
        (query.namespace === undefined || r.namespace === query.namespace) &&
        (query.keyPrefix === undefined || r.key.startsWith(query.keyPrefix)) &&
        (categories === undefined || (r.category !== undefined && categories.includes(r.category))) &&
        (query.tenantId === undefined || r.tenantId === query.tenantId),
    )
    const offset = Number(query.cursor ?? 0)
    const limit = Math.min(Math.max(1, query.limit ?? 100), 500)
    const page = items.slice(offset, offset + limit)
    return { items: page, ...(offset + limit < items.length ? { nextCursor: String(offset + limit) } : {}) }
  }

  async deleteCheckpoint(input: CheckpointKey): Promise<boolean> {
    return this.rows.delete(this.id(input))
  }
}

const limits: ArtifactLimits = { artifactsPerThread: 32, citations: 8, listPageLimit: 20, deliveryLinkTtlSeconds: 600 }
const resolved: ResolvedArtifactLimits = resolveArtifactLimits(limits)

const events: ArtifactDecisionEvent[] = []
const options: CreateArtifactServiceOptions = {
  redactor: createSecretRedactor(['sk-live-123']),
  linkSecret: 'demo-delivery-link-secret',
  limits,
  onDecision: (event) => {
    events.push(event)
    switch (event.type) {
      case 'artifact_approved':
      case 'artifact_rejected': {
        const reviewer: string = event.reviewer
        void reviewer
        break
      }
      default: {
        const actor: string | undefined = event.actor
        void [actor, event.timestamp]
      }
    }
  },
}
export const service: ArtifactService = createArtifactService(new HostCheckpointStore(), options)

export async function reviewLoop(ownership: OwnershipScope): Promise<ArtifactDeliveryResult> {
  const citations: readonly ArtifactCitation[] = [{ uri: 'https://wiki.example/page', title: 'Page', kind: 'web' }]
  const input: ArtifactAttachInput = {
    ownership,
    threadId: 'thread-release-plan',
    uri: 'https://storage.example/release-plan.md',
    mime: 'text/markdown',
    hash: 'sha256:aaa111',
    size: 2048,
    title: 'Release plan',
    changeNote: 'first draft',
    producerRunId: 'run-42',
    citations,
  }
  const attached: ArtifactRecord = await service.attach(input)
  const revised: ArtifactRecord = await service.revise({
    ownership,
    threadId: attached.threadId,
    artifactId: attached.id,
    uri: 'https://storage.example/release-plan.md',
    hash: 'sha256:bbb222',
    changeNote: 'Added rollout dates',
  })
  const latest: ArtifactRevision | undefined = revised.revisions[revised.revisions.length - 1]
  const approved = await service.approve({ ownership, threadId: attached.threadId, artifactId: attached.id, version: latest?.version ?? 1, reviewer: 'reviewer-1' })
  const decision: ArtifactApproval | undefined = approved.approvals.find((a) => a.version === approved.lastValidatedVersion)
  const state: ArtifactApprovalState = artifactApprovalState(approved)
  const page: PersistencePage<ArtifactRecord> = await service.list({ ownership, threadId: attached.threadId, limit: resolved.listPageLimit })
  const diff = await service.compare({ ownership, threadId: attached.threadId, artifactId: attached.id, from: 1, to: 2 })
  const validated: ArtifactRevision = await service.lastValidated({ ownership, threadId: attached.threadId, artifactId: attached.id })
  const key: string = artifactCheckpointKey(attached.threadId, attached.id)
  const stored = await new HostCheckpointStore().loadCheckpoint({ namespace: ARTIFACT_CHECKPOINT_NAMESPACE, key, ...ownership })
  void [decision, state, page.nextCursor, diff.changed.hash, validated.changeNote, stored?.version]
  try {
    return await service.deliveryLink({ ownership, threadId: attached.threadId, artifactId: attached.id, ttlSeconds: 120 })
  } catch (error) {
    if (error instanceof ArtifactError && error.reason === 'not_validated') throw error
    if (error instanceof RangeError) throw error
    throw error
  }
}

export function links(token: ArtifactDeliveryToken, secret: string): ArtifactDeliveryToken {
  const link: string = signArtifactDeliveryLink(token, secret)
  return verifyArtifactDeliveryLink(link, secret, 16 * 1024)
}

const authorize: ArtifactAuthorizer = async (input: ArtifactAuthorizationInput) => {
  const operation: ArtifactOperation = input.operation
  const user = input.request.headers.get('x-user')
  if (!user) return false
  if (operation === 'artifact.download' && input.deliveryToken && input.deliveryToken.userId !== user) return false
  const grant: PrismServerAuthorization = {
    ownership: { tenantId: 'tenant-a', userId: user },
    identity: { tenantId: 'tenant-a', userId: user, principal: { kind: 'user', id: user }, scopes: [], issuedAt: new Date().toISOString(), verified: true },
  }
  return grant
}

const handlerOptions: CreateArtifactHandlerOptions = { service, authorize, linkSecret: 'demo-delivery-link-secret', limits }
export const handler: (request: Request) => Promise<Response> = createArtifactHandler(handlerOptions)

// The persistence factories with the options @arnilo/prism's documentation shows.
const conflictCode: 'ERR_PRISM_CHECKPOINT_CONFLICT' = CHECKPOINT_CONFLICT_CODE
export const isConflict = (e: unknown): boolean => (e as { code?: unknown }).code === conflictCode
export const ephemeral = createSqlitePersistence({ filename: ':memory:' })
export const onDisk = createSqlitePersistence({
  filename: './data/prism.db',
  wal: true,
  busyTimeoutMs: 5000,
  fileMode: 0o600,
  skipMigrations: false,
  feedbackRedactor: createSecretRedactor(['secret']),
})
export async function openPostgres(connectionString: string) {
  const persistence = await createPostgresPersistence({
    connectionString,
    schema: 'prism',
    poolMax: 10,
    skipMigrations: false,
    eventCursorSecret: 'replica-shared-secret',
  })
  return createArtifactService(persistence.checkpoints, { redactor: createSecretRedactor(['secret']), linkSecret: 'demo-delivery-link-secret' })
}
