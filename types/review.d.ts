// Coding patch review: bounded manifests bound to a patch SHA-256 and the repository /
// worktree / base / head identity, and the pure derivation of the review state from an
// artifact record. Type names and shapes are @arnilo/prism's (`review.ts` of its coding
// agent package); additions are marked.

/** The states {@link assertCodingPatchAccepted} derives. */
export type CodingPatchReviewState = 'pending' | 'accepted' | 'rejected' | 'superseded'

/** Severity of a diagnostic summary row. */
export type ReviewDiagnosticSeverity = 'error' | 'warning' | 'info' | 'hint'

/** The result of one named check (build, test, lint, …). Never the command line or its environment. */
export type CodingPatchReviewCheckSummary = {
  /** Check name, `[A-Za-z][A-Za-z0-9_-]{0,63}`, unique within a manifest. */
  readonly name: string
  /** Exit code: a safe integer (negative values allowed). */
  readonly exitCode: number
  /**
   * Short human summary, at most 8 KiB after cleaning (`ERR_PRISM_REVIEW_LIMIT` beyond,
   * never truncated). Control characters other than newline and tab, and bidirectional
   * override/isolate characters, are stripped.
   */
  readonly summary: string
}

/**
 * A check as {@link createCodingPatchReviewManifest} takes it (addition: `summary` may be
 * omitted, and is then `""` in the manifest).
 */
export type CodingPatchReviewCheckInput = Omit<CodingPatchReviewCheckSummary, 'summary'> & {
  readonly summary?: string
}

/** How many diagnostics of one severity a file has, at the generation they were computed for. */
export type CodingPatchReviewDiagnosticSummary = {
  /** Workspace-relative path; one row per file and severity. */
  readonly file: string
  /** The severity counted. */
  readonly severity: ReviewDiagnosticSeverity
  /** How many: a non-negative safe integer. */
  readonly count: number
  /** The generation (document version) the count is for: a non-negative safe integer. */
  readonly generation: number
}

/** One diffstat row. */
export type CodingPatchReviewDiffstatEntry = {
  /**
   * Workspace-relative path: `/`-separated, no `.`/`..` or empty segments, not absolute,
   * not a drive path, no backslash or control characters. One row per file.
   */
  readonly file: string
  /** Added lines: a non-negative safe integer. */
  readonly additions: number
  /** Deleted lines: a non-negative safe integer. */
  readonly deletions: number
}

/**
 * Repository identity bound by a review. Credential-free: the remote is named by a
 * fingerprint, never by its URL.
 */
export type CodingPatchReviewIdentity = {
  /** Repository id, `[A-Za-z0-9][A-Za-z0-9._:-]*` (at most 1024 bytes), e.g. `"app"`. */
  readonly repositoryId: string
  /** SHA-256 of the normalized, credential-free remote URL: 64 lowercase hex digits. */
  readonly remoteFingerprint: string
  /** The default branch: a git ref name (see {@link CreateCodingPatchReviewInput.base}). */
  readonly defaultBranch: string
  /** Worktree path relative to the workspace (same rules as a diffstat `file`); optional. */
  readonly worktreePath?: string
}

/**
 * A coding patch review manifest. `digest` is the lowercase hex SHA-256 of the RFC 8785
 * canonical JSON (UTF-8) of this object without `digest`, `reviewId`, `createdAt` and
 * `state`; any client can recompute it. Lists are stored in canonical order (changed paths
 * sorted and deduplicated; diffstat by `file`; checks by `name`; diagnostics by `file`,
 * then severity error, warning, info, hint), so the same content always yields the same digest.
 */
export type CodingPatchReview = {
  /** Always `1`. */
  readonly schemaVersion: 1
  /** Review id (given, or `review-<first 24 hex of digest>`). */
  readonly reviewId: string
  /** `"pending"` in a manifest; the decision lives on the artifact record. */
  readonly state: CodingPatchReviewState
  /** The thread of the patch artifact. */
  readonly threadId: string
  /** The patch artifact's id. */
  readonly artifactId: string
  /** Repository identity. */
  readonly identity: CodingPatchReviewIdentity
  /** Base ref or commit. */
  readonly base: string
  /** Head ref or commit. */
  readonly head: string
  /** Reference to the patch body in the host's artifact store; the body itself is never embedded. */
  readonly patch: {
    /** The artifact's MIME type is `application/x-<kind>`. */
    readonly kind: 'patch' | 'bundle' | 'diff' | 'other'
    /**
     * Where the host stores the body: a relative reference (`artifacts/patch-1.patch`) or an
     * absolute URI, at most 2048 bytes (`ERR_PRISM_REVIEW_LIMIT`). Refused: `file:`, `data:`,
     * `javascript:`, `blob:` URIs, absolute or drive paths, `.`/`..` segments, whitespace,
     * control characters, user info and credential query parameters.
     */
    readonly uri: string
    /** SHA-256 of the patch bytes: 64 lowercase hex digits. Becomes the artifact `hash`. */
    readonly sha256: string
    /** Size of the patch in bytes: a non-negative safe integer. Becomes the artifact `size`. */
    readonly bytes: number
  }
  /** Changed paths, sorted by code point, deduplicated. */
  readonly changedPaths: readonly string[]
  /** Diffstat rows, sorted by `file`. */
  readonly diffstat: readonly CodingPatchReviewDiffstatEntry[]
  /** Check summaries, sorted by `name`. */
  readonly checks: readonly CodingPatchReviewCheckSummary[]
  /** Diagnostic summary rows, sorted by `file` then severity. */
  readonly diagnostics: readonly CodingPatchReviewDiagnosticSummary[]
  /** SHA-256 over the bound content (see above): the acceptance binding. */
  readonly digest: string
  /** Creation time, ISO-8601 UTC. */
  readonly createdAt: string
}

/**
 * Caps for coding patch review (default / hard). Each must be an integer in `1..hard`;
 * anything else is a `RangeError` (never clamped).
 */
export type CodingReviewLimits = {
  /**
   * Check summaries in one manifest, and 250 changed paths and 250 diffstat rows per
   * revision. Default 8, hard 32 (so 2000 / 8000 paths).
   */
  readonly maxRevisions?: number
  /** Diagnostic summary rows in one manifest. Default 500, hard 5000. */
  readonly maxDiagnostics?: number
  /** Bytes of the manifest's JSON (`JSON.stringify(review)`). Default 64 KiB, hard 256 KiB. */
  readonly maxManifestBytes?: number
}

/** {@link CodingReviewLimits} with every default filled in. */
export type ResolvedCodingReviewLimits = {
  readonly maxRevisions: number
  readonly maxDiagnostics: number
  readonly maxManifestBytes: number
}

/** Input of {@link createCodingPatchReviewManifest}. Unknown members are refused (`ERR_PRISM_REVIEW_INPUT`). */
export type CreateCodingPatchReviewInput = {
  /** The thread the patch artifact belongs to: `[A-Za-z0-9][A-Za-z0-9._:-]*`, at most 1024 bytes. */
  readonly threadId: string
  /** The artifact id the patch is attached under (same rule); becomes `artifactInput.id`. */
  readonly artifactId: string
  /** Repository identity. */
  readonly identity: CodingPatchReviewIdentity
  /**
   * Base ref or commit: 1..255 characters without whitespace, control characters or `..`,
   * and a valid git ref name (`git check-ref-format --allow-onelevel`: none of
   * `~ ^ : ? * [ \`, no `@{`, not `@`, no leading, trailing or doubled `/`, no component
   * starting with `.` or ending with `.lock`, not ending with `.`). A commit id is one.
   */
  readonly base: string
  /** Head ref or commit (same rules as `base`). */
  readonly head: string
  /** The patch artifact reference. */
  readonly patch: CodingPatchReview['patch']
  /** Workspace-relative changed paths; default `[]`. */
  readonly changedPaths?: readonly string[]
  /** Diffstat rows, one per file; default `[]`. */
  readonly diffstat?: readonly CodingPatchReviewDiffstatEntry[]
  /** Named check results, one per name; default `[]`. */
  readonly checks?: readonly CodingPatchReviewCheckInput[]
  /** Diagnostic summary rows, one per file and severity; default `[]`. */
  readonly diagnostics?: readonly CodingPatchReviewDiagnosticSummary[]
  /** Caps; see {@link CodingReviewLimits}. */
  readonly limits?: CodingReviewLimits
  /** Explicit review id (`[A-Za-z0-9][A-Za-z0-9._:-]*`); default `review-<first 24 hex digits of the digest>`. Not bound by the digest. */
  readonly reviewId?: string
  /** ISO-8601 UTC timestamp (`YYYY-MM-DDTHH:MM:SS[.fff]Z`); default now. Not bound by the digest. */
  readonly createdAt?: string
  /** Addition: the artifact title; default `Coding patch review <reviewId>`. Not bound by the digest. */
  readonly title?: string
}

/**
 * The structural input of the artifact service's `attach` (seed 001): spread it and add
 * `ownership`/`identity`. `hash` is the patch SHA-256, so the artifact revision binds the
 * exact patch bytes.
 */
export type CodingReviewArtifactInput = {
  readonly threadId: string
  readonly id: string
  readonly uri: string
  readonly mime: string
  readonly hash: string
  readonly size?: number
  readonly title?: string
  readonly changeNote?: string
  readonly producerRunId?: string
  readonly preview?: Readonly<Record<string, unknown>>
}

/**
 * The artifact input {@link createCodingPatchReviewManifest} returns: a
 * {@link CodingReviewArtifactInput} with every member it sets present.
 */
export type CodingPatchReviewArtifactInput = {
  /** The review's `threadId`. */
  readonly threadId: string
  /** The review's `artifactId`. */
  readonly id: string
  /** The patch `uri`. */
  readonly uri: string
  /** `application/x-<patch.kind>`. */
  readonly mime: string
  /** The patch SHA-256 (64 lowercase hex digits). */
  readonly hash: string
  /** The patch size in bytes. */
  readonly size: number
  /** The given title, or `Coding patch review <reviewId>`. */
  readonly title: string
  /** `head <head> over base <base>`: the revision's change note. */
  readonly changeNote: string
  /** The manifest (the same object as the returned `review`). */
  readonly preview: { readonly review: CodingPatchReview }
}

/**
 * The artifact record shape {@link assertCodingPatchAccepted} reads (any `ArtifactRecord`
 * of the artifact service fits; other members are ignored). The latest revision is the
 * greatest `version`; decisions are matched by `version`, the last entry for a version
 * winning.
 */
export type CodingReviewArtifactRecord = {
  /** Artifact id; must equal the review's `artifactId`. */
  readonly id: string
  /** Thread id; must equal the review's `threadId`. */
  readonly threadId: string
  readonly revisions: readonly {
    /** Revision number (a positive integer, unique in the record). */
    readonly version: number
    /** The patch SHA-256, bare or `sha256:`-prefixed (hex case-insensitive). */
    readonly hash: string
    readonly uri?: string
    /** `preview.review` holds the manifest attached with this revision. */
    readonly preview?: Readonly<Record<string, unknown>>
  }[]
  /** Approve/reject decisions, oldest first (absent: none). */
  readonly approvals?: readonly {
    readonly version: number
    /** Any state other than `approved`/`rejected` counts as no acceptance. */
    readonly state: 'pending' | 'approved' | 'rejected' | (string & {})
    readonly reviewer?: string
    readonly note?: string
  }[]
}

/** Input of {@link assertCodingPatchAccepted}. */
export type AssertCodingPatchAcceptedInput = {
  /** The manifest returned by {@link createCodingPatchReviewManifest} (as stored by the host). */
  readonly review: CodingPatchReview
  /** The artifact record returned by the artifact service. */
  readonly artifact: CodingReviewArtifactRecord
}

/**
 * Addition: which rule decided a `pending` or `superseded` state.
 * - `no_decision` (pending): no decision recorded for the bound revision.
 * - `unknown_decision` (pending): the last decision for it is neither `approved` nor `rejected`.
 * - `patch_changed` (superseded): no revision's `hash` is the review's patch SHA-256.
 * - `newer_revision` (superseded): a newer revision exists after the bound one.
 * - `review_missing` (superseded): the bound revision carries no `preview.review` manifest.
 * - `review_digest_changed` (superseded): the stored manifest's digest differs from the
 *   review's, or either no longer hashes to its own digest (altered after creation).
 * - `identity_changed` (superseded): the stored manifest's `identity`, `base` or `head`
 *   differ from the review's.
 */
export type CodingPatchReviewRule =
  | 'no_decision'
  | 'unknown_decision'
  | 'patch_changed'
  | 'newer_revision'
  | 'review_missing'
  | 'review_digest_changed'
  | 'identity_changed'

/** Result of {@link assertCodingPatchAccepted}. */
export type AssertCodingPatchAcceptedResult = {
  /** The derived state. */
  readonly state: CodingPatchReviewState
  /** The bound revision's version; `0` when no revision matches the patch (`patch_changed`). */
  readonly version: number
  /** Who decided (`accepted`/`rejected`), control characters stripped, at most 256 bytes. */
  readonly reviewer?: string
  /**
   * `rejected`: the reviewer's note (control characters stripped, at most 2048 bytes;
   * absent without a note). `pending`/`superseded`: an explanation in words.
   * `accepted`: absent.
   */
  readonly reason?: string
  /** Addition: the rule that decided a `pending` or `superseded` state (absent otherwise). */
  readonly rule?: CodingPatchReviewRule
}

/**
 * Build a bounded review manifest for a patch handoff and the artifact attach input that
 * carries it in `preview.review`. Synchronous.
 *
 * Every member is validated (`CodingPatchReviewError` `ERR_PRISM_REVIEW_INPUT`, naming the
 * member, e.g. `input.diffstat[2].additions`); caps are charged before anything is
 * retained (`ERR_PRISM_REVIEW_LIMIT`): list lengths before any entry is read, check
 * summaries (8 KiB each), the patch URI (2048 bytes), the manifest's JSON bytes, and the
 * input's JSON (4 MiB). Unknown members, such as a patch `body`, a `command` or an `env`,
 * are refused: a manifest never carries them.
 *
 * @throws {CodingPatchReviewError} `ERR_PRISM_REVIEW_INPUT` or `ERR_PRISM_REVIEW_LIMIT`.
 * @throws {RangeError} a limit outside `1..hard`.
 */
export declare function createCodingPatchReviewManifest(input: CreateCodingPatchReviewInput): {
  review: CodingPatchReview
  artifactInput: CodingPatchReviewArtifactInput
}

/**
 * Derive `pending | accepted | rejected | superseded` for a review from the artifact record.
 * Synchronous and pure; never mutates its input. Acceptance is a state assertion only: it
 * never applies, commits, pushes or merges anything. A review that no longer matches its
 * own digest is `superseded`, never accepted.
 *
 * @throws {CodingPatchReviewError} `ERR_PRISM_REVIEW_OWNERSHIP` (the record belongs to
 *   another thread or artifact), `ERR_PRISM_REVIEW_INPUT` (malformed input),
 *   `ERR_PRISM_REVIEW_LIMIT` (more than 16 MiB of JSON).
 */
export declare function assertCodingPatchAccepted(input: AssertCodingPatchAcceptedInput): AssertCodingPatchAcceptedResult

/**
 * The caps with their defaults filled in.
 *
 * @throws {RangeError} a limit outside `1..hard`.
 * @throws {CodingPatchReviewError} `ERR_PRISM_REVIEW_INPUT`: an unknown member or a value that is not a number.
 */
export declare function resolveCodingReviewLimits(options?: CodingReviewLimits): ResolvedCodingReviewLimits

/** Our earlier name of {@link CreateCodingPatchReviewInput}. */
export type CodingPatchReviewInput = CreateCodingPatchReviewInput
/** Our earlier name of {@link AssertCodingPatchAcceptedResult}. */
export type CodingPatchReviewOutcome = AssertCodingPatchAcceptedResult
