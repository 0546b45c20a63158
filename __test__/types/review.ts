// The seed's coding-review example (seed 000, "Review lifecycle"), compiled under
// tsc --strict. Changes from the seed: the import path is 'prism-review'; the seed's second
// import (createArtifactService from the artifact service package) is replaced by the
// `declare const artifacts` below, because this file only checks the review typings; the
// free variables the example uses are declared; and the body is wrapped in an async
// function because this file is compiled as CommonJS (no top-level await).
import { createCodingPatchReviewManifest, assertCodingPatchAccepted } from 'prism-review'
import type { CodingPatchArtifactInput, CodingPatchReviewArtifact, CodingPatchReviewState, CodingPatchReviewReason } from 'prism-review'

declare const sha256Fingerprint: string
declare const patchSha: string
declare const ownership: { tenantId?: string; accountId?: string; userId?: string }
declare const identity: { tenantId: string; principal: { kind: string; id: string }; scopes: string[]; issuedAt: string; verified: true }
declare const artifacts: {
  attach(input: CodingPatchArtifactInput & { ownership: typeof ownership; identity: typeof identity }): Promise<CodingPatchReviewArtifact & { latestVersion?: number }>
}

export async function seedExample(): Promise<CodingPatchReviewState> {
  const { review, artifactInput } = createCodingPatchReviewManifest({
    threadId: "thread-1",
    artifactId: "patch-1",
    identity: { repositoryId: "app", remoteFingerprint: sha256Fingerprint, defaultBranch: "main" },
    base: "main",
    head: "feature-1",
    patch: { kind: "patch", uri: "artifacts/patch-1.patch", sha256: patchSha, bytes: 4096 },
    changedPaths: ["src/a.ts"],
    diffstat: [{ file: "src/a.ts", additions: 10, deletions: 2 }],
    checks: [{ name: "build", exitCode: 0, summary: "ok" }],
  });
  const record = await artifacts.attach({ ...artifactInput, ownership, identity });

  // later, after a human approve/reject on the artifact:
  const outcome = assertCodingPatchAccepted({ review, artifact: record });
  // outcome.state: "accepted" | "rejected" | "pending" | "superseded"
  return outcome.state
}

// The unions are exact: each literal is assignable, and a typo is not.
export const states: CodingPatchReviewState[] = ['pending', 'accepted', 'rejected', 'superseded']
export const reasons: CodingPatchReviewReason[] = ['no_decision', 'approved', 'patch_changed', 'newer_revision', 'identity_changed', 'review_digest_changed']
// @ts-expect-error 'approved' is a reason, not a state
export const notAState: CodingPatchReviewState = 'approved'

export function describeOutcome(review: ReturnType<typeof createCodingPatchReviewManifest>['review'], artifact: CodingPatchReviewArtifact): string {
  const o = assertCodingPatchAccepted({ review, artifact, limits: { maxReviewRevisions: 32 } })
  const state: 'pending' | 'accepted' | 'rejected' | 'superseded' = o.state
  const who: string | undefined = o.reviewer
  // @ts-expect-error the manifest is read-only
  review.digest = 'x'
  return `${state}:${o.reason}:${o.version}:${who ?? ''}:${review.changedPaths.length}:${review.diagnostics.map((d) => d.hints).join()}`
}

// The manifest and the artifact input are plain JSON-shaped types: they fit a host's
// JSON-valued preview type without casts.
type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
export function asJson(r: ReturnType<typeof createCodingPatchReviewManifest>): { [key: string]: Json } {
  const preview: Record<string, Json> = r.artifactInput.preview
  const input: Record<string, unknown> = r.artifactInput
  void input
  return preview
}
