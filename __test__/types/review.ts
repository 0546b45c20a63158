// Coding patch review typings, compiled under tsc --strict: the seed's example (seed 000,
// "Review lifecycle") and code written against @arnilo/prism's review types (its type
// names, `Parameters<>`/`Partial<>` helpers over them, spreads of a manifest), with only the
// import path changed to 'prism-review'.
import {
  assertCodingPatchAccepted,
  CodingPatchReviewError,
  createArtifactService,
  createCodingPatchReviewManifest,
  createMemoryCheckpointStore,
  createSecretRedactor,
  resolveCodingReviewLimits,
} from 'prism-review'
import type {
  AssertCodingPatchAcceptedInput,
  AssertCodingPatchAcceptedResult,
  CodingPatchReview,
  CodingPatchReviewCheckSummary,
  CodingPatchReviewDiagnosticSummary,
  CodingPatchReviewDiffstatEntry,
  CodingPatchReviewErrorCode,
  CodingPatchReviewIdentity,
  CodingPatchReviewRule,
  CodingPatchReviewState,
  CodingReviewArtifactInput,
  CodingReviewArtifactRecord,
  CodingReviewLimits,
  CreateCodingPatchReviewInput,
  ResolvedCodingReviewLimits,
  ReviewDiagnosticSeverity,
} from 'prism-review'

declare const sha256Fingerprint: string
declare const patchSha: string
declare const ownership: { tenantId?: string; accountId?: string; userId?: string }
declare const artifacts: {
  attach(input: CodingReviewArtifactInput & { ownership: typeof ownership }): Promise<CodingReviewArtifactRecord>
}

// The seed's example, unchanged but for the import path and the free variables above.
export async function seedExample(): Promise<CodingPatchReviewState> {
  const { review, artifactInput } = createCodingPatchReviewManifest({
    threadId: 'thread-1',
    artifactId: 'patch-1',
    identity: { repositoryId: 'app', remoteFingerprint: sha256Fingerprint, defaultBranch: 'main' },
    base: 'main',
    head: 'feature-1',
    patch: { kind: 'patch', uri: 'artifacts/patch-1.patch', sha256: patchSha, bytes: 4096 },
    changedPaths: ['src/a.ts'],
    diffstat: [{ file: 'src/a.ts', additions: 10, deletions: 2 }],
    checks: [{ name: 'build', exitCode: 0, summary: 'ok' }],
  })
  const record = await artifacts.attach({ ...artifactInput, ownership })
  const outcome = assertCodingPatchAccepted({ review, artifact: record })
  return outcome.state
}

// Input builders typed through the function's own parameter type.
type ManifestInput = Parameters<typeof createCodingPatchReviewManifest>[0]
const sha = (c: string): string => c.repeat(64)

export function manifestInput(overrides?: Partial<ManifestInput>): ManifestInput {
  const identity: CodingPatchReviewIdentity = { repositoryId: 'app', remoteFingerprint: sha('a'), defaultBranch: 'main', worktreePath: 'wt/1' }
  const diagnostics: CodingPatchReviewDiagnosticSummary[] = [{ file: 'src/a.ts', severity: 'warning', count: 2, generation: 1 }]
  const diffstat: CodingPatchReviewDiffstatEntry[] = [{ file: 'src/a.ts', additions: 1, deletions: 0 }]
  const checks: CodingPatchReviewCheckSummary[] = [{ name: 'lint', exitCode: 1, summary: '2 problems' }]
  return {
    threadId: 't-1',
    artifactId: 'p-1',
    identity,
    base: 'main',
    head: 'topic',
    patch: { kind: 'diff', uri: 'artifacts/p.diff', sha256: sha('b'), bytes: 10 },
    changedPaths: ['src/a.ts'],
    diffstat,
    checks,
    diagnostics,
    ...overrides,
  }
}

export function recordOf(review: CodingPatchReview, overrides?: Partial<CodingReviewArtifactRecord>): CodingReviewArtifactRecord {
  return {
    id: review.artifactId,
    threadId: review.threadId,
    revisions: [{ version: 1, hash: review.patch.sha256, uri: review.patch.uri, preview: { review } }],
    approvals: [{ version: 1, state: 'rejected', reviewer: 'user:ann', note: 'split it' }],
    ...overrides,
  }
}

export function roundTrip(): [CodingPatchReviewState, string | undefined, CodingPatchReviewRule | undefined] {
  const limits: CodingReviewLimits = { maxRevisions: 32, maxDiagnostics: 5000, maxManifestBytes: 262144 }
  const input: CreateCodingPatchReviewInput = manifestInput({ limits, createdAt: '2026-08-16T00:00:00.000Z', reviewId: 'r-1' })
  const { review, artifactInput } = createCodingPatchReviewManifest(input)
  const schema: 1 = review.schemaVersion
  void schema
  const embedded = artifactInput.preview?.review as CodingPatchReview | undefined
  const title: string = artifactInput.title
  void title
  // A manifest spread with an edited identity is still a CodingPatchReview.
  const tampered: CodingPatchReview = { ...review, identity: { ...review.identity, defaultBranch: 'other' } }
  const arg: AssertCodingPatchAcceptedInput = { review: embedded ?? tampered, artifact: recordOf(review) }
  const result: AssertCodingPatchAcceptedResult = assertCodingPatchAccepted(arg)
  return [result.state, result.reason, result.rule]
}

// A record from this package's artifact service fits the record type as it is.
export async function fromTheService(): Promise<AssertCodingPatchAcceptedResult> {
  const service = createArtifactService(createMemoryCheckpointStore(), { redactor: createSecretRedactor([undefined, 'x']), linkSecret: 'l'.repeat(32) })
  const { review, artifactInput } = createCodingPatchReviewManifest(manifestInput())
  const record = await service.attach({ ...artifactInput, ownership: { tenantId: 't' } })
  return assertCodingPatchAccepted({ review, artifact: record })
}

export function limitsAndErrors(e: unknown): ResolvedCodingReviewLimits | CodingPatchReviewErrorCode {
  if (e instanceof CodingPatchReviewError) return e.code
  return resolveCodingReviewLimits({ maxRevisions: 9 })
}

// The unions are exact: each literal is assignable, and a typo is not.
export const severities: ReviewDiagnosticSeverity[] = ['error', 'warning', 'info', 'hint']
export const rules: CodingPatchReviewRule[] = ['no_decision', 'patch_changed', 'newer_revision', 'identity_changed', 'review_digest_changed']
// @ts-expect-error 'information' is the LSP word; a summary row says 'info'
export const notASeverity: ReviewDiagnosticSeverity = 'information'
// @ts-expect-error 'approved' is a decision, not a state
export const notAState: CodingPatchReviewState = 'approved'
// @ts-expect-error the old limit names are gone
export const oldLimits: CodingReviewLimits = { maxReviewRevisions: 8 }
export function readOnly(review: CodingPatchReview): void {
  // @ts-expect-error the manifest is read-only
  review.digest = 'x'
}

// The manifest and the artifact input are JSON-shaped: they fit a host's JSON preview type.
type Json = string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json }
export function asJson(r: ReturnType<typeof createCodingPatchReviewManifest>): { readonly [key: string]: Json } {
  const preview: { readonly [key: string]: Json } = r.artifactInput.preview
  return preview
}
