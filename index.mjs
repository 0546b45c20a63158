// prism-review: the ESM entry. The same objects as the CommonJS entry.
import { createRequire } from 'node:module'

const cjs = createRequire(import.meta.url)('./index.js')

export const {
  ArtifactError,
  CheckpointConflictError,
  CodingPatchReviewError,
  LanguageIntelligenceError,
  ArtifactBodyStoreError,
  createCodingPatchReviewManifest,
  assertCodingPatchAccepted,
  normalizeDiagnostics,
  diagnosticDelta,
  diagnosticIdentity,
} = cjs

export default cjs
