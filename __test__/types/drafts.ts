// Compiles under tsc --strict: every work draft export, the mail draft flow and the handler.
import http from 'node:http'
import {
  WORK_DRAFT_CHECKPOINT_NAMESPACE,
  WORK_DRAFT_ERROR_REASONS,
  WorkDraftError,
  createMemoryCheckpointStore,
  createSecretRedactor,
  createWorkDraftHandler,
  createWorkDraftService,
  draftPayloadDigest,
  resolveWorkDraftLimits,
  toNodeListener,
  type DecideWorkDraftInput,
  type ResolvedWorkDraftLimits,
  type WorkDraft,
  type WorkDraftAuthorizer,
  type WorkDraftErrorReason,
  type WorkDraftEvent,
  type WorkDraftOperation,
  type WorkDraftService,
  type WorkDraftStatus,
} from 'prism-review'

const ns: 'prism.work-draft' = WORK_DRAFT_CHECKPOINT_NAMESPACE
const reasons: readonly WorkDraftErrorReason[] = WORK_DRAFT_ERROR_REASONS
const limits: ResolvedWorkDraftLimits = resolveWorkDraftLimits({ payloadBytes: 32 * 1024 })
const cap: number = limits.revisionsPerDraft

const events: WorkDraftEvent[] = []
const drafts: WorkDraftService = createWorkDraftService(createMemoryCheckpointStore(), {
  redactor: createSecretRedactor([]),
  recipientPolicy: { allow: async (address: string) => address.endsWith('@example.com') },
  onDecision: (e) => {
    events.push(e)
  },
  editsRequireReapproval: false,
  limits: { revisionsPerDraft: 8 },
})

export async function flow(): Promise<WorkDraftStatus> {
  const ownership = { tenantId: 'acme', userId: 'u1' }
  const created: WorkDraft = await drafts.create({
    ownership,
    threadId: 'thread-1',
    draftId: 'mail-1',
    provider: 'mail',
    op: 'send',
    payload: { to: ['a@example.com', 'b@example.com'], subject: 'Hi', n: 1, flags: [true, null] },
    schema: { type: 'object' },
    recipients: ['/to', '/cc'],
    scopes: [{ path: '/share/role', order: ['viewer', 'editor'] }],
    idempotencyKey: 'tool-call-1',
  })
  const input: DecideWorkDraftInput = {
    ownership,
    threadId: 'thread-1',
    draftId: created.id,
    expectedVersion: created.version,
    decision: 'approve',
    modifiedArguments: { to: ['a@example.com'], subject: 'Hi' },
    reviewer: 'user:u1',
  }
  const approved = await drafts.decide(input)
  const latest = approved.revisions[approved.revisions.length - 1]
  const digest: string = draftPayloadDigest(latest.payload)
  const claimed = await drafts.claimExecution({ ownership, threadId: 'thread-1', draftId: created.id, expectedVersion: approved.version, payloadDigest: digest })
  const done = await drafts.markExecuted({ ownership, threadId: 'thread-1', draftId: created.id, expectedVersion: claimed.version, outcome: { id: 'm1' } })
  const page = await drafts.list({ ownership, threadId: 'thread-1', limit: 10 })
  const first: WorkDraft | undefined = page.items[0]
  void first
  await drafts.markFailed({ ownership, threadId: 'thread-1', draftId: 'other', expectedVersion: 1, error: 'x' }).catch((e: unknown) => {
    if (e instanceof WorkDraftError && e.reason === 'not_found') return null
    throw e
  })
  return done.status
}

const authorize: WorkDraftAuthorizer = ({ request, operation }) => {
  const op: WorkDraftOperation = operation
  return request.headers.get('x-user') && op !== 'work-draft.resume' ? { ownership: { tenantId: 'acme' } } : false
}
export const server = http.createServer(toNodeListener(createWorkDraftHandler({ service: drafts, authorize, basePath: '/api' })))

// @ts-expect-error decisions are approve or deny
export const bad: DecideWorkDraftInput = { ownership: {}, threadId: 't', draftId: 'd', expectedVersion: 1, decision: 'maybe' }

const e = new WorkDraftError('m', 'conflict')
const code: 'ERR_PRISM_WORK_DRAFT' = e.code
void [ns, reasons, cap, code]
