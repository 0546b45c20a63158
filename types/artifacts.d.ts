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

/**
 * Caps of the service (`@arnilo/prism`'s `ArtifactLimits`), each optional: the default
 * when absent; an integer in `1..hard` otherwise (else a `RangeError`, never clamped).
 */
export interface ArtifactLimits {
  /** Artifacts per thread (default 64, hard 256; `too_many_artifacts`). */
  readonly artifactsPerThread?: number
  /** Revisions per artifact (default 32, hard 128; `too_many_revisions`). */
  readonly revisionsPerArtifact?: number
  /** Serialized record bytes, the aggregate backstop (default 8 KiB, hard 64 KiB; `record_too_large`). */
  readonly recordBytes?: number
  /** Serialized preview bytes (default 16 KiB, hard 64 KiB; `preview_too_large`). */
  readonly previewBytes?: number
  /** Citations per revision (default 32, hard 128; `too_many_citations`). */
  readonly citations?: number
  /** Serialized bytes of one citation (default 2 KiB, hard 8 KiB; `citation_too_large`). */
  readonly citationBytes?: number
  /** MIME type bytes (default 128, hard 512; `mime_too_large`). */
  readonly mimeBytes?: number
  /** Hash bytes (default 256, hard 1 KiB; `hash_too_large`). */
  readonly hashBytes?: number
  /** URI bytes (default 2 KiB, hard 8 KiB; `uri_too_large`). */
  readonly uriBytes?: number
  /** Change note and decision note bytes (default 1 KiB, hard 8 KiB; `note_too_large`). */
  readonly noteBytes?: number
  /** Title bytes, also artifact `kind` and citation titles (default 256, hard 2 KiB; `title_too_large`). */
  readonly titleBytes?: number
  /** Largest list page; larger requested limits are reduced to it (default 50, hard 200). */
  readonly listPageLimit?: number
  /** Longest delivery-link lifetime and the default TTL, in seconds (default 300, hard 86 400). */
  readonly deliveryLinkTtlSeconds?: number
  /** Largest delivery link, in bytes (default 4 KiB, hard 16 KiB; `link_too_large`). */
  readonly deliveryLinkTokenBytes?: number
  /** Largest HTTP request body the handler reads (default 64 KiB, hard 1 MiB); the service ignores it. */
  readonly maxRequestBytes?: number
}

/** Every cap, resolved (`resolveArtifactLimits`, `service.limits`): see {@link ArtifactLimits}. */
export interface ResolvedArtifactLimits {
  /** Artifacts per thread. */
  readonly artifactsPerThread: number
  /** Revisions per artifact. */
  readonly revisionsPerArtifact: number
  /** Serialized record bytes. */
  readonly recordBytes: number
  /** Serialized preview bytes. */
  readonly previewBytes: number
  /** Citations per revision. */
  readonly citations: number
  /** Serialized bytes of one citation. */
  readonly citationBytes: number
  /** MIME type bytes. */
  readonly mimeBytes: number
  /** Hash bytes. */
  readonly hashBytes: number
  /** URI bytes. */
  readonly uriBytes: number
  /** Note bytes. */
  readonly noteBytes: number
  /** Title bytes. */
  readonly titleBytes: number
  /** Largest list page. */
  readonly listPageLimit: number
  /** Longest and default delivery-link lifetime, in seconds. */
  readonly deliveryLinkTtlSeconds: number
  /** Largest delivery link, in bytes. */
  readonly deliveryLinkTokenBytes: number
  /** Largest HTTP request body, in bytes. */
  readonly maxRequestBytes: number
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

/** One immutable revision of an artifact: a reference with metadata, never the body. */
export interface ArtifactRevision extends ArtifactRevisionFields {
  /** Revision number, 1-based and consecutive. */
  readonly version: number
  /** MIME type. */
  readonly mime: string
  /** (Addition) Actor ref (`kind:id`) of the verified identity that created it. */
  readonly createdBy?: string
  /** ISO-8601. */
  readonly createdAt: string
}

/** Review state of an artifact's latest revision. */
export type ArtifactApprovalState = 'pending' | 'approved' | 'rejected'

/** A resolved decision on one revision (pending is the absence of a decision). */
export type ArtifactDecisionState = Exclude<ArtifactApprovalState, 'pending'>

/** The one decision on one revision (a later decision on the same revision replaces it). */
export interface ArtifactApproval {
  /** The decided revision. */
  readonly version: number
  /** The decision. */
  readonly state: ArtifactDecisionState
  /** Reviewer ref: explicit `reviewer`, else the identity's `kind:id`. */
  readonly reviewer: string
  /** Change request or rejection note. */
  readonly note?: string
  /** (Addition) `citationBindingDigest(revision.citations ?? [])`, stamped on approve. */
  readonly evidenceDigest?: string
  /** ISO-8601. */
  readonly decidedAt: string
}

/**
 * A durable artifact review record, the checkpoint value (namespace `prism.artifact`, key
 * `threadId:artifactId`). Records the reference's service wrote load as they are; the
 * additions `state` and `latestVersion` are always present on records this package
 * returns (derived from `revisions` and `approvals`, never trusted from storage).
 */
export interface ArtifactRecord extends OwnershipScope {
  /** Artifact id (given on attach, or generated as `art_<24 hex>`). */
  readonly id: string
  /** Owning thread. */
  readonly threadId: string
  /** Title given on attach (or by a later revision that had one). */
  readonly title?: string
  /** Every revision, oldest first. */
  readonly revisions: readonly ArtifactRevision[]
  /** At most one decision per revision, ordered by version. */
  readonly approvals: readonly ArtifactApproval[]
  /** Highest approved revision; never moves backwards, never cleared by a rejection. */
  readonly lastValidatedVersion?: number
  /** ISO-8601 creation time. */
  readonly createdAt: string
  /** ISO-8601 time of the last change. */
  readonly updatedAt: string
  /** (Addition) Artifact kind given on attach. */
  readonly kind?: string
  /** (Addition) Review state of the latest revision (a new revision is `pending`). */
  readonly state?: ArtifactApprovalState
  /** (Addition) Number of the latest revision. */
  readonly latestVersion?: number
}

/** Signed, expiring delivery authorization; reauthorized per download, never a bearer secret. */
export interface ArtifactDeliveryToken extends OwnershipScope {
  /** The artifact. */
  readonly artifactId: string
  /** Its thread. */
  readonly threadId: string
  /** The delivered revision. */
  readonly version: number
  /** ISO-8601. */
  readonly issuedAt: string
  /** ISO-8601; at or after it the link is `link_expired`. */
  readonly expiresAt: string
}

/** Members every operation takes. */
export interface ArtifactServiceInput {
  /** From host `authorize`; another owner's artifact is `not_found`. */
  readonly ownership: OwnershipScope
  /** Optional verified identity (refused when unverified, expired, revoked or conflicting). */
  readonly identity?: AgentIdentity
  /** Honoured before and between store calls (and handed to host stores); the call rejects with `signal.reason`. */
  readonly signal?: AbortSignal
}

/** The members of a new revision, shared by `attach` and `revise`. */
export interface ArtifactRevisionFields {
  /** Host blob reference; `file:`, absolute, drive, UNC and home paths are `unsafe_uri`. */
  readonly uri: string
  /** MIME type (`mimeBytes`); on `revise` it defaults to the previous revision's. */
  readonly mime?: string
  /** Content hash (`hashBytes`). */
  readonly hash: string
  /** Expected body byte length (a non-negative safe integer). */
  readonly size?: number
  /** Note on this revision (`noteBytes`, else `note_too_large`). */
  readonly changeNote?: string
  /** The producing run: `^[A-Za-z0-9][A-Za-z0-9._:-]*$`, at most 128 (else `invalid_id`). */
  readonly producerRunId?: string
  /** Citations (`citations`, each `citationBytes`). */
  readonly citations?: readonly ArtifactCitation[]
  /** Preview metadata (`previewBytes`; at most 32 levels deep). */
  readonly preview?: Readonly<Record<string, unknown>>
  /** Title (`titleBytes`); on `revise` (an addition) a new title for the record. */
  readonly title?: string
}

/** `attach` input. */
export interface ArtifactAttachInput extends ArtifactServiceInput, ArtifactRevisionFields {
  /** Thread id: 1..128 characters of `A-Z a-z 0-9 . _ -`. */
  readonly threadId: string
  /** MIME type (`mimeBytes`). */
  readonly mime: string
  /** Explicit id: attach is then an idempotent get-or-create. */
  readonly id?: string
  /** (Addition) Artifact kind (bounded like titles). */
  readonly kind?: string
}

/** `list` input. */
export interface ArtifactListInput extends ArtifactServiceInput {
  /** The thread. */
  readonly threadId: string
  /** `nextCursor` of the previous page. */
  readonly cursor?: string
  /** Page size; reduced to `limits.listPageLimit`. */
  readonly limit?: number
}

/** Input addressing one artifact. */
export interface ArtifactRefInput extends ArtifactServiceInput {
  /** The thread. */
  readonly threadId: string
  /** The artifact. */
  readonly artifactId: string
}

/** `revise` input. */
export interface ArtifactReviseInput extends ArtifactRefInput, ArtifactRevisionFields {}

/** `compare` input: two distinct revision numbers. */
export interface ArtifactCompareInput extends ArtifactRefInput {
  /** One revision number. */
  readonly from: number
  /** Another revision number (must differ from `from`). */
  readonly to: number
}

/**
 * `compare` result: hash and metadata only. `from` and `to` are the revision numbers
 * compared (the reference returns the two revisions there; see README, Differences).
 */
export interface ArtifactCompareResult {
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
  /** Decision note (`noteBytes`). */
  readonly note?: string
  /** Explicit reviewer ref (1..256 bytes); without it the identity's `kind:id` is used. */
  readonly reviewer?: string
}

/** `deliveryLink` input. */
export interface ArtifactDeliveryInput extends ArtifactRefInput {
  /** Defaults to the last validated revision, else the latest. */
  readonly version?: number
  /** An integer in `1..limits.deliveryLinkTtlSeconds` (the default); otherwise a `RangeError`. */
  readonly ttlSeconds?: number
}

/** A signed link and the token it carries. */
export interface ArtifactDeliveryResult {
  /** `base64url(JSON.stringify(token)).base64url(HMAC-SHA256)`. */
  readonly link: string
  /** The signed token. */
  readonly token: ArtifactDeliveryToken
  /** A presigned URL of the revision's body, when a body store is wired; it never outlives the link. */
  readonly url?: string
}

/** An attach or revise audit event (redacted; actor refs only); owner members are additions. */
export interface ArtifactContentEvent extends OwnershipScope {
  /** What happened. */
  readonly type: 'artifact_attached' | 'artifact_revised'
  /** The artifact. */
  readonly artifactId: string
  /** Its thread. */
  readonly threadId: string
  /** The revision created. */
  readonly version: number
  /** Actor ref (`kind:id`) of the identity, when one was given. */
  readonly actor?: string
  /** ISO-8601. */
  readonly timestamp: string
}

/** An approve or reject audit event (redacted); owner members and `state` are additions. */
export interface ArtifactReviewEvent extends OwnershipScope {
  /** What happened. */
  readonly type: 'artifact_approved' | 'artifact_rejected'
  /** The artifact. */
  readonly artifactId: string
  /** Its thread. */
  readonly threadId: string
  /** The revision decided. */
  readonly version: number
  /** The reviewer ref. */
  readonly reviewer: string
  /** ISO-8601. */
  readonly timestamp: string
  /** (Addition) The decision. */
  readonly state?: ArtifactDecisionState
}

/** The `onDecision` audit event, as the reference's `ArtifactDecisionEvent`. */
export type ArtifactDecisionEvent = ArtifactContentEvent | ArtifactReviewEvent

export { createSecretRedactor, type SecretRedactor } from './redaction'
import type { SecretRedactor } from './redaction'
import type { ArtifactBodyStore } from './bodies'

/** Options of {@link createArtifactService}. */
export interface CreateArtifactServiceOptions {
  /** Runs before persist and on every response and audit event. */
  readonly redactor: SecretRedactor
  /** HMAC key for delivery links: 16..4096 bytes (a shorter one is a `TypeError`). */
  readonly linkSecret: string | Uint8Array
  /** Caps; each must be an integer in `1..hard` (`RangeError` otherwise). */
  readonly limits?: ArtifactLimits
  /**
   * Audit seam, awaited after each durable attach/revise/approve/reject. If it throws, the
   * operation rejects with an `ArtifactError` carrying `committed: true`, `record` and `cause`.
   */
  readonly onDecision?: (event: ArtifactDecisionEvent) => void | Promise<void>
  /**
   * Body store: `deliveryLink` then also returns `url` from `bodies.presign` (a revision
   * without a recorded `size` is `invalid_input`), and the HTTP download route a fresh one.
   */
  readonly bodies?: ArtifactBodyStore
}

/**
 * The artifact review service. Every operation rejects with an `ArtifactError` when a rule
 * refuses the call (a `ttlSeconds` out of range: a `RangeError`); a failure of the store's
 * backend itself (a dropped database connection, a full disk) is an `Error` with
 * `code: "ERR_PRISM_STORE_UNAVAILABLE"` (retry) and a message without credentials.
 * Request strings are read as `String.prototype.toWellFormed()` makes them (a lone UTF-16
 * surrogate becomes U+FFFD), except in `ownership`, `identity` and `reviewer`, where one is
 * refused (`ownership` / `invalid_input`).
 */
export interface ArtifactService {
  /** Create revision 1 (pending); with `id`, returns the existing record if there is one (no event). */
  attach(input: ArtifactAttachInput): Promise<ArtifactRecord>
  /** One page of the thread's artifacts for this ownership. */
  list(input: ArtifactListInput): Promise<PersistencePage<ArtifactRecord>>
  /** One record (`not_found` when absent or owned by another scope). */
  get(input: ArtifactRefInput): Promise<ArtifactRecord>
  /** Append a revision; state resets to `pending`. */
  revise(input: ArtifactReviseInput): Promise<ArtifactRecord>
  /** Hash/metadata comparison of two distinct revisions. */
  compare(input: ArtifactCompareInput): Promise<ArtifactCompareResult>
  /** Approve a revision: advances `lastValidatedVersion`, stamps `evidenceDigest`. */
  approve(input: ArtifactDecisionInput): Promise<ArtifactRecord>
  /** Reject (request changes); never clears `lastValidatedVersion`. */
  reject(input: ArtifactDecisionInput): Promise<ArtifactRecord>
  /** The last approved revision; `not_validated` before any approval. */
  lastValidated(input: ArtifactRefInput): Promise<ArtifactRevision>
  /** A signed, expiring delivery link. */
  deliveryLink(input: ArtifactDeliveryInput): Promise<ArtifactDeliveryResult>
}

/** Create the service over any checkpoint store; `limits` (an addition) holds the resolved caps. */
export declare function createArtifactService(
  store: CheckpointStore,
  options: CreateArtifactServiceOptions,
): ArtifactService & { readonly limits: ResolvedArtifactLimits }

/** The frozen resolved caps; a value outside `1..hard` is a `RangeError`, an unknown name a `TypeError`. */
export declare function resolveArtifactLimits(limits?: ArtifactLimits): ResolvedArtifactLimits

/**
 * Sign exactly `token`: `base64url(JSON.stringify(token))` `.` `base64url(HMAC-SHA256)`
 * keyed with the secret's bytes (a string's UTF-8) → the link. A token without the members
 * a verifier reads, or an empty secret, is a `TypeError`; a link over 16 KiB `link_too_large`.
 */
export declare function signArtifactDeliveryLink(token: ArtifactDeliveryToken, secret: string | Uint8Array): string

/**
 * Verify a link: over `maxBytes` (default 16 KiB) → `link_too_large`; bad shape, signature
 * (a wrong secret of any length) or payload → `invalid_link`; at or after `expiresAt` →
 * `link_expired`. `now` (an addition) is the current time, default `Date.now()`.
 */
export declare function verifyArtifactDeliveryLink(
  link: string,
  secret: string | Uint8Array,
  maxBytes?: number,
  now?: Date | number,
): ArtifactDeliveryToken

/** The decision on the record's latest revision, else `pending`; reads only `revisions` and `approvals`. */
export declare function artifactApprovalState(record: Pick<ArtifactRecord, 'revisions' | 'approvals'>): ArtifactApprovalState

/** Checkpoint key of an artifact: `threadId:artifactId` (thread-scoped, so a thread lists by prefix). */
export declare function artifactCheckpointKey(threadId: string, artifactId: string): string

/** Checkpoint namespace of artifact records. */
export declare const ARTIFACT_CHECKPOINT_NAMESPACE: 'prism.artifact'

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
