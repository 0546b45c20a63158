// Compiles under tsc --strict: the error classes narrow by instanceof and carry codes.
import { ArtifactError, CheckpointConflictError, CodingPatchReviewError, LanguageIntelligenceError } from 'prism-review'

export function describe(e: unknown): string {
  if (e instanceof ArtifactError) {
    const reason: 'not_found' | string = e.reason
    return `${e.code}:${reason}`
  }
  if (e instanceof CheckpointConflictError) return e.code
  if (e instanceof CodingPatchReviewError) return e.code
  if (e instanceof LanguageIntelligenceError) return e.code
  return 'other'
}

export const hostConflict = new CheckpointConflictError('version moved')
export const reviewInput: 'ERR_PRISM_REVIEW_INPUT' | 'ERR_PRISM_REVIEW_LIMIT' | string = new CodingPatchReviewError('INPUT', 'x').code
