/**
 * Business action drafts with editable approvals: durable, digest-bound, fail-closed.
 *
 * @packageDocumentation
 */

import type { AgentIdentity } from './artifacts'
import type { SecretRedactor } from './redaction'
import type { CheckpointStore, OwnershipScope, PersistencePage } from './store'
import type { AuthorizerResult, PrismRequestHandler } from './http'

/** Checkpoint namespace of drafts: `"prism.work-draft"` (key `threadId:draftId`). */
export declare const WORK_DRAFT_CHECKPOINT_NAMESPACE: 'prism.work-draft'

/** Every `reason` a {@link WorkDraftError} can carry. */
export type WorkDraftErrorReason =
  | 'invalid_input'
  | 'malformed_edit'
  | 'schema_violation'
  | 'recipient_escalation'
  | 'immutable_field'
  | 'not_found'
  | 'conflict'
  | 'not_approved'
  | 'already_executed'
  | 'too_many_revisions'
  | 'payload_too_large'

/** The reasons, from the native table. */
export declare const WORK_DRAFT_ERROR_REASONS: readonly WorkDraftErrorReason[]

/** A work draft failure; `conflict` (a stale `expectedVersion`) is retryable after a reload. */
export declare class WorkDraftError extends Error {
  constructor(message: string, reason: WorkDraftErrorReason | (string & {}), options?: ErrorOptions)
  readonly name: 'WorkDraftError'
  readonly code: 'ERR_PRISM_WORK_DRAFT'
  readonly reason: WorkDraftErrorReason | (string & {})
}

/** A JSON value as a payload may hold it (finite numbers other than -0, no cycles). */
export type DraftJson = string | number | boolean | null | readonly DraftJson[] | { readonly [key: string]: DraftJson }

/** A draft payload: a plain JSON object. */
export type DraftPayload = { readonly [key: string]: DraftJson }

export type WorkDraftStatus = 'pending' | 'approved' | 'denied' | 'executing' | 'executed' | 'failed'

export type WorkDraftDecision = 'approve' | 'deny'

/** Where a payload holds a sharing scope or role, with its values ordered narrow to wide. */
export interface WorkDraftScopeRule {
  /** JSON-pointer pattern; `*` matches every array element or object member. */
  readonly path: string
  readonly order: readonly string[]
}

export interface WorkDraftRevision {
  readonly revision: number
  /** The payload as stored (redacted): what executes. */
  readonly payload: DraftPayload
  /** `draftPayloadDigest(payload)`. */
  readonly payloadDigest: string
  /** Actor ref of the creating identity (or `author`) or of the editing reviewer. */
  readonly author?: string
  readonly createdAt: string
}

export interface WorkDraftApproval {
  readonly revision: number
  readonly payloadDigest: string
  readonly decision: WorkDraftDecision
  readonly reviewer: string
  readonly decidedAt: string
  readonly reason?: string
  /** Set when an edit or a later decision replaced it: it no longer lets anything execute. */
  readonly invalidatedAt?: string
}

export interface WorkDraftExecution {
  readonly revision: number
  readonly payloadDigest: string
  readonly claimedAt: string
  readonly claimedBy?: string
  readonly finishedAt?: string
  readonly outcome?: DraftJson
  readonly error?: string
}

/** What a draft declares at creation and never changes (`immutable_field`). */
export interface WorkDraftDeclaration {
  readonly provider: string
  readonly op: string
  /** JSON Schema (draft 2020-12 by default) every revision's payload must match; no external `$ref`. */
  readonly schema?: DraftJson
  /** JSON-pointer patterns of the payload members that hold recipients. */
  readonly recipients?: readonly string[]
  readonly scopes?: readonly WorkDraftScopeRule[]
  /** Without `draftId`, the id derives from it, so a retried create finds the same draft. */
  readonly idempotencyKey?: string
}

/** A draft record (the checkpoint value). */
export interface WorkDraft extends OwnershipScope, WorkDraftDeclaration {
  readonly id: string
  readonly threadId: string
  readonly status: WorkDraftStatus
  /** The checkpoint version: the CAS counter `expectedVersion` names (not a revision number). */
  readonly version: number
  readonly latestRevision: number
  readonly revisions: readonly WorkDraftRevision[]
  readonly approvals: readonly WorkDraftApproval[]
  readonly execution?: WorkDraftExecution
  readonly createdAt: string
  readonly updatedAt: string
}

/** Members of every operation. */
export interface WorkDraftContext {
  /** From the host's `authorize`, never from request JSON. */
  readonly ownership: OwnershipScope
  readonly identity?: AgentIdentity
  readonly signal?: AbortSignal
  readonly threadId: string
}

export interface CreateWorkDraftInput extends WorkDraftContext, WorkDraftDeclaration {
  /** Explicit id: get-or-create (the same id with another payload is `conflict`). */
  readonly draftId?: string
  readonly payload: DraftPayload
  /** Author ref when no identity is given. */
  readonly author?: string
}

export interface WorkDraftRef extends WorkDraftContext {
  readonly draftId: string
}

export interface ListWorkDraftsInput extends WorkDraftContext {
  readonly cursor?: string
  readonly limit?: number
}

export interface DecideWorkDraftInput extends WorkDraftRef {
  readonly expectedVersion: number
  readonly decision: WorkDraftDecision
  /** The edited payload (approve only): appends a revision and approves it. */
  readonly modifiedArguments?: DraftPayload
  /** AG-UI's name for `modifiedArguments` (give one of them). */
  readonly editedArgs?: DraftPayload
  readonly reason?: string
  /** Reviewer ref when no identity is given. */
  readonly reviewer?: string
}

export interface ClaimWorkDraftInput extends WorkDraftRef {
  readonly expectedVersion: number
  /** `draftPayloadDigest` of the payload about to run. */
  readonly payloadDigest: string
  readonly claimedBy?: string
}

export interface MarkWorkDraftExecutedInput extends WorkDraftRef {
  readonly expectedVersion: number
  readonly outcome?: DraftJson
}

export interface MarkWorkDraftFailedInput extends WorkDraftRef {
  readonly expectedVersion: number
  readonly error?: string
}

/** The audit event handed to `onDecision` (no payload). */
export interface WorkDraftEvent extends OwnershipScope {
  readonly type:
    | 'work_draft_created'
    | 'work_draft_approved'
    | 'work_draft_denied'
    | 'work_draft_edited'
    | 'work_draft_execution_claimed'
    | 'work_draft_executed'
    | 'work_draft_failed'
  readonly draftId: string
  readonly threadId: string
  readonly provider: string
  readonly op: string
  readonly version: number
  readonly revision: number
  readonly payloadDigest?: string
  readonly status: WorkDraftStatus
  readonly actor?: string
  readonly timestamp: string
}

/** Caps, each optional: the default when absent, else an integer in `1..hard` (a `RangeError` otherwise). */
export interface WorkDraftLimits {
  /** Payload JSON bytes (default 64 KiB, hard 1 MiB; `payload_too_large`). */
  readonly payloadBytes?: number
  /** Payload nesting (default 16, hard 32). */
  readonly payloadDepth?: number
  /** Revisions per draft (default 32, hard 128; `too_many_revisions`). */
  readonly revisionsPerDraft?: number
  /** Draft record JSON bytes (default 1 MiB, hard 8 MiB; `payload_too_large`). */
  readonly recordBytes?: number
  /** Schema JSON bytes (default 64 KiB, hard 1 MiB). */
  readonly schemaBytes?: number
  /** Decision reason and failure text bytes (default 1 KiB, hard 8 KiB). */
  readonly reasonBytes?: number
  /** Execution outcome JSON bytes (default 16 KiB, hard 256 KiB). */
  readonly outcomeBytes?: number
  /** Recipient patterns per draft (default 16, hard 64). */
  readonly recipientPaths?: number
  /** Drafts per list page (default 50, hard 200). */
  readonly listPageLimit?: number
  /** HTTP request body bytes for the handler (default 128 KiB, hard 2 MiB; 413). */
  readonly maxRequestBytes?: number
}

export type ResolvedWorkDraftLimits = { readonly [K in keyof WorkDraftLimits]-?: number }

/** The host's recipient policy: deny by default (anything but `true` refuses). */
export interface WorkDraftRecipientPolicy {
  allow(address: string): boolean | Promise<boolean>
}

export interface WorkDraftServiceOptions {
  readonly redactor: SecretRedactor | { redact(value: unknown): unknown }
  readonly recipientPolicy?: WorkDraftRecipientPolicy
  readonly onDecision?: (event: WorkDraftEvent) => void | Promise<void>
  /** An edit leaves its revision pending for a second decision. */
  readonly editsRequireReapproval?: boolean
  readonly limits?: WorkDraftLimits
}

export interface WorkDraftService {
  create(input: CreateWorkDraftInput): Promise<WorkDraft>
  get(input: WorkDraftRef): Promise<WorkDraft>
  list(input: ListWorkDraftsInput): Promise<PersistencePage<WorkDraft>>
  decide(input: DecideWorkDraftInput): Promise<WorkDraft>
  claimExecution(input: ClaimWorkDraftInput): Promise<WorkDraft>
  markExecuted(input: MarkWorkDraftExecutedInput): Promise<WorkDraft>
  markFailed(input: MarkWorkDraftFailedInput): Promise<WorkDraft>
  readonly limits: ResolvedWorkDraftLimits
}

export declare function createWorkDraftService(store: CheckpointStore, options: WorkDraftServiceOptions): WorkDraftService

/** Hex SHA-256 of the RFC 8785 canonical JSON of `payload`. */
export declare function draftPayloadDigest(payload: DraftPayload): string

export declare function resolveWorkDraftLimits(limits?: WorkDraftLimits): ResolvedWorkDraftLimits

/** The `operation` passed to `authorize`. */
export type WorkDraftOperation = 'work-draft.list' | 'work-draft.get' | 'work-draft.resume'

export interface WorkDraftAuthorizationInput {
  readonly request: Request
  readonly operation: WorkDraftOperation
  readonly threadId: string
  readonly draftId?: string
  readonly signal: AbortSignal
}

export type WorkDraftAuthorizer = (input: WorkDraftAuthorizationInput) => AuthorizerResult | Promise<AuthorizerResult>

export interface CreateWorkDraftHandlerOptions {
  readonly service: Pick<WorkDraftService, 'list' | 'get' | 'decide'>
  readonly authorize: WorkDraftAuthorizer
  /** Route prefix (default `/prism`): routes are `{base}/drafts/…`. */
  readonly basePath?: string
  readonly redactor?: SecretRedactor | { redact(value: unknown): unknown }
  /** `maxRequestBytes` bounds request bodies. */
  readonly limits?: WorkDraftLimits
}

/**
 * `GET {base}/drafts/:thread`, `GET {base}/drafts/:thread/:draft`,
 * `POST {base}/drafts/:thread/:draft/resume` with `{ expectedVersion, decision, modifiedArguments? | editedArgs?, reason? }`.
 * Statuses: 400 malformed or unknown keys, 403 refused, 404 unknown or foreign, 409 stale
 * version, 413 over size, 422 schema violation, recipient escalation or immutable field.
 */
export declare function createWorkDraftHandler(options: CreateWorkDraftHandlerOptions): PrismRequestHandler
