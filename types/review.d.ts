// Coding patch review: bounded manifests bound to a patch SHA-256 and the repository /
// worktree / base / head identity, and the pure derivation of the review state from an
// artifact record.

/**
 * Repository identity bound by a review. Credential-free: the remote is named by a
 * fingerprint, never by its URL.
 */
export type RepositoryIdentity = {
  /** Host-chosen repository id, e.g. `"acme/app"` (1..1024 bytes, no control characters). */
  readonly repositoryId: string
  /** SHA-256 of the normalized, credential-free remote URL: 64 lowercase hex digits. */
  readonly remoteFingerprint: string
  /** The repository's default branch, e.g. `"main"`. */
  readonly defaultBranch: string
  /**
   * Worktree path relative to the workspace: `/`-separated, no `.`/`..` or empty segments,
   * not absolute, not a drive path, no backslash. Omit for the main checkout.
   */
  readonly worktreePath?: string
}

/** Patch kinds are MIME subtypes: the artifact's MIME type is `application/x-<kind>`. */
export type CodingPatchKind = 'patch' | 'diff' | (string & {})

/** Reference to the patch body in the host's artifact store. The body itself is never embedded. */
export type CodingPatchReference = {
  /** Lowercase MIME token (`a-z 0-9 . + -`, 1..64), e.g. `"patch"`. */
  readonly kind: CodingPatchKind
  /**
   * Where the host stores the body: a relative reference (`artifacts/patch-1.patch`) or an
   * absolute URI. At most 2048 bytes (`ERR_PRISM_REVIEW_LIMIT`). Refused: `file:`, `data:`,
   * `javascript:`, `blob:` URIs, absolute or drive paths, `.`/`..` segments, whitespace,
   * user info (`user:pass@`) and credential query parameters (`token`, `sig`, `X-Amz-Signature`, …).
   */
  readonly uri: string
  /** SHA-256 of the patch bytes: 64 lowercase hex digits. Becomes the artifact `hash`. */
  readonly sha256: string
  /** Size of the patch in bytes: a non-negative safe integer. Becomes the artifact `size`. */
  readonly bytes: number
}

/** One diffstat row. */
export type DiffstatEntry = {
  /** Workspace-relative path (same rules as {@link RepositoryIdentity.worktreePath}). */
  readonly file: string
  /** Added lines: a non-negative safe integer. */
  readonly additions: number
  /** Deleted lines: a non-negative safe integer. */
  readonly deletions: number
}

/** The result of one named check (build, test, lint, …). Never the command line or its environment. */
export type CheckSummary = {
  /** Check name, unique within a manifest (1..1024 bytes, no control characters). */
  readonly name: string
  /** Exit code: a safe integer (negative values allowed). */
  readonly exitCode: number
  /**
   * Short human summary, at most 8 KiB (`ERR_PRISM_REVIEW_LIMIT` beyond, never truncated).
   * Control characters other than newline and tab, and bidirectional override/isolate
   * characters, are stripped; an empty result is omitted.
   */
  readonly summary?: string
}

/** Diagnostic counts for one file, by LSP severity, as the caller gives them. */
export type DiagnosticSummaryInput = {
  /** Workspace-relative path; unique within a manifest. */
  readonly file: string
  /** Count of error diagnostics: a non-negative safe integer. */
  readonly errors: number
  /** Count of warning diagnostics. */
  readonly warnings: number
  /** Count of information diagnostics; default 0. */
  readonly information?: number
  /** Count of hint diagnostics; default 0. */
  readonly hints?: number
}

/** Diagnostic counts for one file, as stored in the manifest (every count present). */
export type DiagnosticSummary = {
  /** Workspace-relative path. */
  readonly file: string
  /** Count of error diagnostics. */
  readonly errors: number
  /** Count of warning diagnostics. */
  readonly warnings: number
  /** Count of information diagnostics. */
  readonly information: number
  /** Count of hint diagnostics. */
  readonly hints: number
}

/**
 * Caps for coding patch review (default / hard). Each must be an integer in `1..hard`;
 * anything else is a `RangeError` (never clamped).
 */
export type CodingPatchReviewLimits = {
  /** Revisions an artifact record may hold for {@link assertCodingPatchAccepted}: 8 / 32. */
  readonly maxReviewRevisions?: number
  /** Diagnostic summaries in one manifest: 500 / 5000. */
  readonly maxDiagnosticSummaries?: number
  /** Bytes of the manifest's JSON (`JSON.stringify(review)`): 65536 / 262144. */
  readonly maxManifestBytes?: number
}

/** Input of {@link createCodingPatchReviewManifest}. Unknown members are refused (`ERR_PRISM_REVIEW_INPUT`). */
export type CodingPatchReviewInput = {
  /** The thread the patch artifact belongs to. */
  readonly threadId: string
  /** The artifact id the patch is attached under (becomes `artifactInput.id`). */
  readonly artifactId: string
  /** Repository identity. */
  readonly identity: RepositoryIdentity
  /** Base ref or commit the patch applies to. */
  readonly base: string
  /** Head ref or commit the patch was taken from. */
  readonly head: string
  /** The patch artifact reference. */
  readonly patch: CodingPatchReference
  /** Workspace-relative changed paths; stored sorted by code point and deduplicated. */
  readonly changedPaths: readonly string[]
  /** Diffstat rows, one per file; stored sorted by `file`. */
  readonly diffstat: readonly DiffstatEntry[]
  /** Named check results, one per name; stored sorted by `name`. Default `[]`. */
  readonly checks?: readonly CheckSummary[]
  /** Diagnostic summaries, one per file; stored sorted by `file`. Default `[]`. */
  readonly diagnostics?: readonly DiagnosticSummaryInput[]
  /** Caps; see {@link CodingPatchReviewLimits}. */
  readonly limits?: CodingPatchReviewLimits
  /** Review id; default `review-<first 24 hex digits of the digest>`. Not bound by the digest. */
  readonly reviewId?: string
  /** ISO-8601 UTC timestamp (`YYYY-MM-DDTHH:MM:SS[.fff]Z`); default now. Not bound by the digest. */
  readonly createdAt?: string
  /** Optional artifact title, copied to `artifactInput.title`. Not bound by the digest. */
  readonly title?: string
}

/**
 * A coding patch review manifest. `digest` is the lowercase hex SHA-256 of the RFC 8785
 * canonical JSON (UTF-8) of this object without `digest`, `reviewId`, `createdAt` and
 * `state`; any client can recompute it. Lists are stored in canonical order, so the same
 * content always yields the same digest.
 */
export type CodingPatchReview = {
  /** Review id (given, or `review-<first 24 hex of digest>`). */
  readonly reviewId: string
  /** Creation time, ISO-8601 UTC. */
  readonly createdAt: string
  /** Always `"pending"` in a manifest; the decision lives on the artifact record. */
  readonly state: 'pending'
  /** SHA-256 over the bound content (see above). */
  readonly digest: string
  /** The thread of the patch artifact. */
  readonly threadId: string
  /** The patch artifact's id. */
  readonly artifactId: string
  /** Repository identity. */
  readonly identity: RepositoryIdentity
  /** Base ref or commit. */
  readonly base: string
  /** Head ref or commit. */
  readonly head: string
  /** The patch reference. */
  readonly patch: CodingPatchReference
  /** Changed paths, sorted by code point, deduplicated. */
  readonly changedPaths: string[]
  /** Diffstat rows, sorted by `file`. */
  readonly diffstat: DiffstatEntry[]
  /** Check summaries, sorted by `name`. */
  readonly checks: CheckSummary[]
  /** Diagnostic summaries, sorted by `file`, every count present. */
  readonly diagnostics: DiagnosticSummary[]
}

/**
 * The structural input of the artifact service's `attach` (seed 001): spread it and add
 * `ownership`/`identity`. `hash` is the patch SHA-256, so the artifact revision binds the
 * exact patch bytes.
 */
export type CodingPatchArtifactInput = {
  /** The review's `threadId`. */
  threadId: string
  /** The review's `artifactId`. */
  id: string
  /** The patch `uri`. */
  uri: string
  /** `application/x-<patch.kind>`. */
  mime: string
  /** The patch SHA-256 (64 lowercase hex digits). */
  hash: string
  /** The patch size in bytes. */
  size: number
  /** The caller's title, when given. */
  title?: string
  /** Preview metadata: the manifest (the same object as the returned `review`). */
  preview: { review: CodingPatchReview }
}

/** Result of {@link createCodingPatchReviewManifest}. */
export type CodingPatchReviewManifestResult = {
  /** The manifest. */
  readonly review: CodingPatchReview
  /** The artifact attach input carrying the manifest in `preview.review`. */
  readonly artifactInput: CodingPatchArtifactInput
}

/** The states {@link assertCodingPatchAccepted} derives. */
export type CodingPatchReviewState = 'pending' | 'accepted' | 'rejected' | 'superseded'

/**
 * Which rule decided the state:
 * - `no_decision` (pending): no decision recorded for the bound revision.
 * - `unknown_decision` (pending): the last decision for it has a state other than
 *   `approved`/`rejected`; never read as acceptance.
 * - `approved` (accepted): approved, still the latest revision, digest and identity intact.
 * - `rejected` (rejected): a `rejected` decision for the bound revision.
 * - `patch_changed` (superseded): no revision's `hash` is the review's patch SHA-256.
 * - `newer_revision` (superseded): a newer revision exists after the bound one (a stale
 *   acceptance is refused, whatever was decided).
 * - `review_missing` (superseded): the bound revision carries no `preview.review` manifest.
 * - `identity_changed` (superseded): the stored manifest's `identity`, `base` or `head`
 *   differ from the review's.
 * - `review_digest_changed` (superseded): the stored manifest's digest differs from the
 *   review's, or its content no longer hashes to it.
 */
export type CodingPatchReviewReason =
  | 'no_decision'
  | 'unknown_decision'
  | 'approved'
  | 'rejected'
  | 'patch_changed'
  | 'newer_revision'
  | 'review_missing'
  | 'identity_changed'
  | 'review_digest_changed'

/** Result of {@link assertCodingPatchAccepted}. */
export type CodingPatchReviewOutcome = {
  /** The derived state. */
  readonly state: CodingPatchReviewState
  /** The bound revision's version; the latest version when none is bound (`patch_changed`). */
  readonly version: number
  /** Who decided (`accepted`/`rejected`), control characters stripped, at most 256 bytes. */
  readonly reviewer?: string
  /** The rule that decided the state (always present). */
  readonly reason: CodingPatchReviewReason
  /**
   * The reviewer's note on the deciding entry (`accepted`/`rejected`), control characters
   * stripped, truncated on a character boundary to at most 2048 bytes.
   */
  readonly note?: string
}

/** One artifact revision as {@link assertCodingPatchAccepted} reads it (other members are ignored). */
export type CodingPatchReviewRevision = {
  /** Revision number (a positive integer, unique in the record). */
  readonly version: number
  /** Content hash: the patch SHA-256, bare or `sha256:`-prefixed (hex case-insensitive). */
  readonly hash: string
  /** Preview metadata; `preview.review` holds the manifest attached with this revision. */
  readonly preview?: unknown
}

/** One approval entry as {@link assertCodingPatchAccepted} reads it (other members are ignored). */
export type CodingPatchReviewDecision = {
  /** The revision decided on. */
  readonly version: number
  /** `approved` or `rejected` (any other state counts as no acceptance). */
  readonly state: string
  /** Reviewer reference, e.g. `"user:ann"`. */
  readonly reviewer?: string
  /** Reviewer note. */
  readonly note?: string
}

/**
 * The artifact record shape {@link assertCodingPatchAccepted} needs: any `ArtifactRecord`
 * of the artifact service fits. The latest revision is the greatest `version`; decisions are
 * matched by `version`, the last entry for a version winning.
 */
export type CodingPatchReviewArtifact = {
  /** Artifact id; must equal the review's `artifactId`. */
  readonly id: string
  /** Thread id; must equal the review's `threadId`. */
  readonly threadId: string
  /** Revisions (non-empty, at most `maxReviewRevisions`). */
  readonly revisions: readonly CodingPatchReviewRevision[]
  /** Approve/reject decisions, oldest first. */
  readonly approvals?: readonly CodingPatchReviewDecision[]
}

/** Input of {@link assertCodingPatchAccepted}. */
export type AssertCodingPatchAcceptedInput = {
  /** The manifest returned by {@link createCodingPatchReviewManifest} (as stored by the host). */
  readonly review: CodingPatchReview
  /** The artifact record returned by the artifact service. */
  readonly artifact: CodingPatchReviewArtifact
  /** Caps; only `maxReviewRevisions` applies here. */
  readonly limits?: CodingPatchReviewLimits
}

/**
 * Build a bounded review manifest for a patch handoff and the artifact attach input that
 * carries it. Synchronous.
 *
 * Every field is validated (`CodingPatchReviewError` `ERR_PRISM_REVIEW_INPUT`, naming the
 * field); caps are charged before anything is retained (`ERR_PRISM_REVIEW_LIMIT`): the
 * number of diagnostic summaries, check summaries (8 KiB each), the patch URI (2048 bytes),
 * the manifest's JSON bytes, and the input's JSON (4 MiB). Unknown members, such as a patch
 * `body`, a `command` or an `env`, are refused: a manifest never carries them.
 *
 * @throws {CodingPatchReviewError} `ERR_PRISM_REVIEW_INPUT` or `ERR_PRISM_REVIEW_LIMIT`.
 * @throws {RangeError} a limit outside `1..hard`.
 */
export declare function createCodingPatchReviewManifest(input: CodingPatchReviewInput): CodingPatchReviewManifestResult

/**
 * Derive `pending | accepted | rejected | superseded` for a review from the artifact record.
 * Synchronous and pure; never mutates its input. Acceptance is a state assertion only: it
 * never applies, commits, pushes or merges anything.
 *
 * @throws {CodingPatchReviewError} `ERR_PRISM_REVIEW_INPUT` (malformed input),
 *   `ERR_PRISM_REVIEW_BINDING` (the review no longer hashes to its own `digest`: it was
 *   altered after creation), `ERR_PRISM_REVIEW_OWNERSHIP` (the record belongs to another
 *   thread or artifact), `ERR_PRISM_REVIEW_LIMIT` (more revisions than `maxReviewRevisions`).
 * @throws {RangeError} a limit outside `1..hard`.
 */
export declare function assertCodingPatchAccepted(input: AssertCodingPatchAcceptedInput): CodingPatchReviewOutcome
