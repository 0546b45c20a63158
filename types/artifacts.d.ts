import type { CheckpointStore, OwnershipScope, PersistencePage } from './store'

/** The principal an identity speaks for. Its reviewer ref is `"<kind>:<id>"`. */
export interface AgentPrincipal {
  /** Principal kind, e.g. `"user"`, `"agent"`, `"service"` (no `:`). */
  readonly kind: string
  /** Principal id within its kind. */
  readonly id: string
  /** Human-readable name; never used for decisions. */
  readonly displayName?: string
}

/**
 * A verified caller identity. The service refuses (`ArtifactError` reason `ownership`)
 * an identity that is not `verified: true`, has expired or been revoked, or conflicts with
 * the request's ownership (a different `tenantId`, or a different `accountId`/`userId`
 * where both are set). Other members are allowed and ignored.
 */
export interface AgentIdentity {
  /** Tenant the identity belongs to; must match `ownership.tenantId` when that is set. */
  readonly tenantId: string
  /** Account; must match `ownership.accountId` when both are set. */
  readonly accountId?: string
  /** User; must match `ownership.userId` when both are set. */
  readonly userId?: string
  /** The principal; its ref `kind:id` becomes the reviewer/actor ref. */
  readonly principal: AgentPrincipal
  /** Granted scopes (recorded by the host; not interpreted by the service). */
  readonly scopes: readonly string[]
  /** When the identity was issued: ISO-8601 or epoch milliseconds. */
  readonly issuedAt: string | number
  /** Expiry: ISO-8601 or epoch milliseconds; at or after it the identity is refused. */
  readonly expiresAt?: string | number
  /** Revocation time: ISO-8601 or epoch milliseconds; at or after it the identity is refused. */
  readonly revokedAt?: string | number
  /** Must be `true`: the host verified the identity. */
  readonly verified: true
  /** Any other host fields. */
  readonly [extra: string]: unknown
}

/** Every cap of the service, each with a default and a hard maximum (outside `1..hard` is a `RangeError`). */
export interface ArtifactLimits {
  /** Artifacts per thread (default 64, hard 256). */
  readonly artifactsPerThread: number
  /** Revisions per artifact (default 32, hard 128). */
  readonly revisionsPerArtifact: number
  /** Serialized record bytes, the aggregate backstop (default 8 KiB, hard 64 KiB). */
  readonly recordBytes: number
  /** Serialized preview bytes (default 16 KiB, hard 64 KiB). */
  readonly previewBytes: number
  /** Citations per revision (default 32, hard 128). */
  readonly citationsPerRevision: number
  /** Serialized bytes of one citation (default 2 KiB, hard 8 KiB). */
  readonly citationBytes: number
  /** MIME type bytes (default 128, hard 512). */
  readonly mimeBytes: number
  /** Hash bytes (default 256, hard 1 KiB). */
  readonly hashBytes: number
  /** URI bytes (default 2 KiB, hard 8 KiB). */
  readonly uriBytes: number
  /** Note bytes (default 1 KiB, hard 8 KiB). */
  readonly noteBytes: number
  /** Title bytes, also artifact `kind` and citation titles (default 256, hard 2 KiB). */
  readonly titleBytes: number
  /** Largest list page; larger requested limits are reduced to it (default 50, hard 200). */
  readonly listPageSize: number
  /** Longest delivery-link lifetime and the default TTL, in seconds (default 300, hard 86400). */
  readonly deliveryTtlSeconds: number
  /** Largest delivery link, in bytes (default 4 KiB, hard 16 KiB). */
  readonly deliveryTokenBytes: number
}

/** A span of the cited source, `start..end` in host-chosen units. */
export interface ArtifactCitationSpan {
  /** First unit of the span (non-negative integer). */
  readonly start: number
  /** End of the span (exclusive; not less than `start`). */
  readonly end: number
}

/**
 * A citation or data source of a revision, with optional evidence fields. `support` is a
 * host judge's score (0..1): stored, never proof, never read by integrity checks.
 */
export interface ArtifactCitation {
  /** Source reference (never a local filesystem path). */
  readonly uri: string
  /** Display title (bounded by `titleBytes`). */
  readonly title?: string
  /** Host-defined kind, e.g. `"web"`, `"document"`, `"dataset"`. */
  readonly kind?: string
  /** Host id of the cited source; integrity checks match snapshots by it. */
  readonly sourceId?: string
  /** Source revision the citation was taken from. */
  readonly revision?: string | number
  /** Hash of the cited source content. */
  readonly contentHash?: string
  /** ISO-8601 retrieval time. */
  readonly retrievedAt?: string
  /** Quoted excerpt (not part of the binding digest). */
  readonly excerpt?: string
  /** Cited range of the source; checked against the snapshot `length`. */
  readonly span?: ArtifactCitationSpan
  /** Tenant of the cited source. */
  readonly tenantId?: string
  /** Host judge score in 0..1; stored only. */
  readonly support?: number
}

/** Producer-run attribution of a revision. */
export interface ArtifactProducer {
  /** The agent run that produced the revision. */
  readonly runId?: string
  /** The producing agent. */
  readonly agentId?: string
  /** The tool call that produced it. */
  readonly toolCallId?: string
}

/** One revision of an artifact: a reference with metadata, never the body. */
export interface ArtifactRevision {
  /** Revision number, 1-based and consecutive. */
  readonly version: number
  /** Host blob reference. */
  readonly uri: string
  readonly mime: string
  /** Content hash, e.g. `"sha256:…"`. */
  readonly hash: string
  /** Body size in bytes, when recorded. */
  readonly size?: number
  /** Revision title. */
  readonly title?: string
  /** Free-text note of the producer. */
  readonly note?: string
  /** Bounded preview metadata (any JSON object). */
  readonly preview?: Readonly<Record<string, unknown>>
  /** Citations and data sources. */
  readonly citations?: readonly ArtifactCitation[]
  /** Producer-run attribution. */
  readonly producer?: ArtifactProducer
  /** Actor ref (`kind:id`) of the verified identity that created it. */
  readonly createdBy?: string
  /** ISO-8601. */
  readonly createdAt: string
}

/** Review decision states. */
export type ArtifactDecisionState = 'approved' | 'rejected'

/** Review state of an artifact's latest revision. */
export type ArtifactReviewState = 'pending' | 'approved' | 'rejected'

/** The one decision on one revision (a later decision on the same revision replaces it). */
export interface ArtifactApproval {
  /** The decided revision. */
  readonly version: number
  /** The decision. */
  readonly state: ArtifactDecisionState
  /** Reviewer ref: explicit `reviewer`, else the identity's `kind:id`. */
  readonly reviewer: string
  /** Reviewer's note (e.g. the requested changes). */
  readonly note?: string
  /** `citationBindingDigest(revision.citations ?? [])`, stamped on approve. */
  readonly evidenceDigest?: string
  /** ISO-8601. */
  readonly decidedAt: string
}

/** A durable artifact review record. */
export interface ArtifactRecord {
  /** Artifact id (given on attach, or generated as `art_<24 hex>`). */
  readonly id: string
  /** Owning thread. */
  readonly threadId: string
  /** Owner scope; only exactly this scope sees the record. */
  readonly ownership: OwnershipScope
  /** Artifact kind given on attach. */
  readonly kind?: string
  /** Title of the latest revision that had one. */
  readonly title?: string
  /** Review state of the latest revision (a new revision is `pending`). */
  readonly state: ArtifactReviewState
  /** Number of the latest revision. */
  readonly latestVersion: number
  /** Highest approved revision; never moves backwards, never cleared by a rejection. */
  readonly lastValidatedVersion?: number
  /** Every revision, oldest first. */
  readonly revisions: readonly ArtifactRevision[]
  /** At most one decision per revision, ordered by version. */
  readonly approvals: readonly ArtifactApproval[]
  /** ISO-8601 creation time. */
  readonly createdAt: string
  /** ISO-8601 time of the last change. */
  readonly updatedAt: string
}

/** What a delivery link grants (the signed payload). */
export interface ArtifactDeliveryToken {
  /** The artifact. */
  readonly artifactId: string
  /** Its thread. */
  readonly threadId: string
  /** The delivered revision. */
  readonly version: number
  /** The ownership the link was issued to; reauthorize against it on download. */
  readonly ownership: OwnershipScope
  /** ISO-8601. */
  readonly issuedAt: string
  /** ISO-8601; at or after it the link is `link_expired`. */
  readonly expiresAt: string
}

/** A signed link and the token it carries. */
export interface ArtifactDelivery {
  /** `base64url(JSON payload).base64url(HMAC-SHA256)`. */
  readonly link: string
  /** The signed payload, decoded. */
  readonly token: ArtifactDeliveryToken
}

/** Members every operation takes. */
export interface ArtifactOperationBase {
  /** From host `authorize`; cross-ownership access is `not_found`. */
  readonly ownership: OwnershipScope
  /** Optional verified identity (refused when unverified, expired, revoked or conflicting). */
  readonly identity?: AgentIdentity
  /** Honoured before and between store calls; the call rejects with `signal.reason`. */
  readonly signal?: AbortSignal
  /** Thread id: 1..128 characters of `A-Z a-z 0-9 . _ -`. */
  readonly threadId: string
}

/** Revision fields of attach/revise. */
export interface ArtifactRevisionInput {
  /** Host blob reference; `file:`, absolute, drive and UNC paths are `unsafe_uri`. */
  readonly uri: string
  /** Content hash (`hashBytes`). */
  readonly hash: string
  /** Body size in bytes. */
  readonly size?: number
  /** Title (`titleBytes`). */
  readonly title?: string
  /** Note (`noteBytes`). */
  readonly note?: string
  /** Preview metadata (`previewBytes`; at most 32 levels deep). */
  readonly preview?: Readonly<Record<string, unknown>>
  /** Citations (`citationsPerRevision`, each `citationBytes`). */
  readonly citations?: readonly ArtifactCitation[]
  /** Producer-run attribution (each member 1..256 bytes). */
  readonly producer?: ArtifactProducer
}

/** `attach` input. */
export interface ArtifactAttachInput extends ArtifactOperationBase, ArtifactRevisionInput {
  /** Explicit id: attach is then an idempotent get-or-create. */
  readonly id?: string
  /** MIME type (`mimeBytes`). */
  readonly mime: string
  /** Artifact kind (bounded like titles). */
  readonly kind?: string
}

/** `revise` input; `mime` defaults to the previous revision's. */
export interface ArtifactReviseInput extends ArtifactOperationBase, ArtifactRevisionInput {
  readonly artifactId: string
  /** MIME type; defaults to the previous revision's. */
  readonly mime?: string
}

/** `list` input. */
export interface ArtifactListInput extends ArtifactOperationBase {
  /** `nextCursor` of the previous page. */
  readonly cursor?: string
  /** Page size; reduced to `limits.listPageSize`. */
  readonly limit?: number
}

/** Input addressing one artifact. */
export interface ArtifactRefInput extends ArtifactOperationBase {
  /** The artifact id. */
  readonly artifactId: string
}

/** `compare` input: two distinct revision numbers. */
export interface ArtifactCompareInput extends ArtifactRefInput {
  /** One revision number. */
  readonly from: number
  /** Another revision number (must differ from `from`). */
  readonly to: number
}

/** `compare` result: hash and metadata only. */
export interface ArtifactComparison {
  /** The artifact. */
  readonly artifactId: string
  /** As requested. */
  readonly from: number
  /** As requested. */
  readonly to: number
  /** Which reference fields differ between the two revisions. */
  readonly changed: {
    /** Content hash differs. */
    readonly hash: boolean
    /** MIME type differs. */
    readonly mime: boolean
    /** URI differs. */
    readonly uri: boolean
    /** Citations differ (any field, any order). */
    readonly citations: boolean
  }
}

/** `approve`/`reject` input. */
export interface ArtifactDecisionInput extends ArtifactRefInput {
  /** The revision decided. */
  readonly version: number
  /** Explicit reviewer ref (1..256 bytes); without it the identity's `kind:id` is used. */
  readonly reviewer?: string
  /** Decision note (`noteBytes`). */
  readonly note?: string
}

/** `deliveryLink` input. */
export interface ArtifactDeliveryLinkInput extends ArtifactRefInput {
  /** Defaults to the last validated revision, else the latest. */
  readonly version?: number
  /** 1..limits.deliveryTtlSeconds (the default). */
  readonly ttlSeconds?: number
}

/** Event types of the `onDecision` audit seam. */
export type ArtifactDecisionEventType = 'artifact_attached' | 'artifact_revised' | 'artifact_approved' | 'artifact_rejected'

/** An audit event (redacted; actor refs only). */
export interface ArtifactDecisionEvent {
  /** What happened. */
  readonly type: ArtifactDecisionEventType
  /** The artifact. */
  readonly artifactId: string
  /** Its thread. */
  readonly threadId: string
  /** The revision created or decided. */
  readonly version: number
  /** Owner scope of the artifact. */
  readonly ownership: OwnershipScope
  /** Actor ref (`kind:id` or explicit reviewer), when known. */
  readonly actor?: string
  /** The decision, for approve/reject. */
  readonly state?: ArtifactDecisionState
  /** ISO-8601. */
  readonly at: string
}

export { createSecretRedactor, type SecretRedactor } from './redaction'
import type { SecretRedactor } from './redaction'

/** Options of {@link createArtifactService}. */
export interface ArtifactServiceOptions {
  /** Runs before persist and on every response and audit event. */
  readonly redactor: SecretRedactor
  /** HMAC key for delivery links: 16..4096 bytes. */
  readonly linkSecret: string | Uint8Array
  /** Caps; each must be an integer in `1..hard` (`RangeError` otherwise). */
  readonly limits?: Partial<ArtifactLimits>
  /**
   * Audit seam, awaited after each durable attach/revise/approve/reject. If it throws, the
   * operation rejects with an `ArtifactError` carrying `committed: true`, `record` and `cause`.
   */
  readonly onDecision?: (event: ArtifactDecisionEvent) => void | Promise<void>
}

/**
 * The artifact review service. Every operation rejects with an `ArtifactError` when a rule
 * refuses the call; a failure of the store's backend itself (a dropped database connection)
 * is an `Error` with `code: "ERR_PRISM_INTERNAL"` and a message without credentials.
 */
export interface ArtifactService {
  /** The resolved caps. */
  readonly limits: Readonly<ArtifactLimits>
  /** Create revision 1 (pending); with `id`, returns the existing record if there is one (no event). */
  attach(input: ArtifactAttachInput): Promise<ArtifactRecord>
  /** One page of the thread's artifacts for this ownership. */
  list(input: ArtifactListInput): Promise<PersistencePage<ArtifactRecord>>
  /** One record (`not_found` when absent or owned by another scope). */
  get(input: ArtifactRefInput): Promise<ArtifactRecord>
  /** Append a revision; state resets to `pending`. */
  revise(input: ArtifactReviseInput): Promise<ArtifactRecord>
  /** Hash/metadata comparison of two distinct revisions. */
  compare(input: ArtifactCompareInput): Promise<ArtifactComparison>
  /** Approve a revision: advances `lastValidatedVersion`, stamps `evidenceDigest`. */
  approve(input: ArtifactDecisionInput): Promise<ArtifactRecord>
  /** Reject (request changes); never clears `lastValidatedVersion`. */
  reject(input: ArtifactDecisionInput): Promise<ArtifactRecord>
  /** The last approved revision; `not_validated` before any approval. */
  lastValidated(input: ArtifactRefInput): Promise<ArtifactRevision>
  /** A signed, expiring delivery link. */
  deliveryLink(input: ArtifactDeliveryLinkInput): Promise<ArtifactDelivery>
}

/** Create the service over any checkpoint store. Bad options are `TypeError`/`RangeError`. */
export declare function createArtifactService(store: CheckpointStore, options: ArtifactServiceOptions): ArtifactService

/** The frozen resolved caps; a value outside `1..hard` is a `RangeError`. */
export declare function resolveArtifactLimits(limits?: Partial<ArtifactLimits>): Readonly<ArtifactLimits>

/** Input of {@link signArtifactDeliveryLink}. */
export interface ArtifactDeliveryLinkSignInput {
  /** The artifact id. */
  readonly artifactId: string
  /** Its thread id. */
  readonly threadId: string
  /** The revision to deliver. */
  readonly version: number
  /** The ownership the link is issued to. */
  readonly ownership: OwnershipScope
  /** 1..limits.deliveryTtlSeconds (the default). */
  readonly ttlSeconds?: number
}

/** Options of the link functions. */
export interface ArtifactDeliveryLinkOptions {
  /** Caps (`deliveryTtlSeconds`, `deliveryTokenBytes`). */
  readonly limits?: Partial<ArtifactLimits>
  /** The current time (tests); default `Date.now()`. */
  readonly now?: Date | number
}

/** Sign a delivery link (`link_too_large` past `deliveryTokenBytes`). */
export declare function signArtifactDeliveryLink(
  input: ArtifactDeliveryLinkSignInput,
  secret: string | Uint8Array,
  options?: ArtifactDeliveryLinkOptions,
): ArtifactDelivery

/** Verify a link: `link_too_large`, then `invalid_link` (shape, signature), then `link_expired`. */
export declare function verifyArtifactDeliveryLink(
  link: string,
  secret: string | Uint8Array,
  options?: ArtifactDeliveryLinkOptions,
): ArtifactDeliveryToken

/** Review state of a record's latest revision. */
export interface ArtifactApprovalStateResult {
  /** The latest revision number. */
  readonly version: number
  /** Its review state. */
  readonly state: ArtifactReviewState
  /** The record's last validated revision. */
  readonly lastValidatedVersion?: number
  /** The decision on the latest revision, if any. */
  readonly approval?: ArtifactApproval
}

/** Derive the review state of the latest revision from a record. */
export declare function artifactApprovalState(record: ArtifactRecord): ArtifactApprovalStateResult

/** A host's already-retrieved snapshot of a cited source. */
export interface CitationSourceSnapshot {
  /** Matches `ArtifactCitation.sourceId`. */
  readonly sourceId: string
  /** Current revision of the source. */
  readonly revision?: string | number
  /** Current content hash of the source. */
  readonly contentHash?: string
  /** Source length, in the units of citation spans. */
  readonly length?: number
  /** Tenant of the source. */
  readonly tenantId?: string
  /** `false`: the caller may not read the source (`acl_denied`). */
  readonly readable?: boolean
}

/** Why a citation failed integrity. */
export type CitationIntegrityReason =
  | 'missing'
  | 'hash_mismatch'
  | 'revision_mismatch'
  | 'span_out_of_range'
  | 'acl_denied'
  | 'tenant_mismatch'

/** Input of {@link checkCitationIntegrity}. */
export interface CitationIntegrityInput {
  /** The citations to check (e.g. a revision's). */
  readonly citations: readonly ArtifactCitation[]
  /** The host's already-retrieved snapshots (at most 1024). */
  readonly snapshots: readonly CitationSourceSnapshot[]
  /** Expected tenant of every citation and snapshot. */
  readonly tenantId?: string
}

/** One citation's verdict. */
export interface CitationIntegrityResult {
  /** Index of the citation in the input. */
  readonly index: number
  /** Its `sourceId`, when it has one. */
  readonly sourceId?: string
  /** True when `reasons` is empty. */
  readonly ok: boolean
  /** Every failed check. */
  readonly reasons: readonly CitationIntegrityReason[]
}

/** The verdict over all citations. */
export interface CitationIntegrityReport {
  /** True when every citation passed. */
  readonly ok: boolean
  /** One result per citation, in order. */
  readonly results: readonly CitationIntegrityResult[]
}

/**
 * Check citations against snapshots (no URL is fetched). A pinned hash/revision the
 * snapshot does not confirm, or a span with no snapshot `length` to check, fails closed.
 */
export declare function checkCitationIntegrity(input: CitationIntegrityInput): CitationIntegrityReport

/** Hex SHA-256 of the JCS of `{ uri, sourceId, revision, contentHash, span, tenantId }` tuples, in order. */
export declare function citationBindingDigest(citations: readonly ArtifactCitation[]): string

/** Whether the approval of `version` (default: `lastValidatedVersion`) still binds its revision's citations. */
export declare function approvalEvidenceIntact(record: ArtifactRecord, version?: number): boolean
