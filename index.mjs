// prism-review: the ESM entry. The same objects as the CommonJS entry; a test checks
// that every CommonJS export is listed here.
import { createRequire } from 'node:module'

const cjs = createRequire(import.meta.url)('./index.js')

// errors
export const {
  ArtifactError,
  CHECKPOINT_CONFLICT_CODE,
  CheckpointConflictError,
  CodingPatchReviewError,
  LanguageIntelligenceError,
  ArtifactBodyStoreError,
  ARTIFACT_BODY_ERROR_CODES,
  WorkDraftError,
} = cjs

// coding patch review
export const { createCodingPatchReviewManifest, assertCodingPatchAccepted, resolveCodingReviewLimits } = cjs

// diagnostics
export const { normalizeDiagnostics, diagnosticDelta, diagnosticIdentity, resolveDiagnosticsLimits } = cjs

// checkpoint stores
export const { createMemoryCheckpointStore, createSqlitePersistence, createPostgresPersistence } = cjs

// artifact review service
export const {
  ARTIFACT_CHECKPOINT_NAMESPACE,
  artifactCheckpointKey,
  createArtifactService,
  createSecretRedactor,
  resolveArtifactLimits,
  signArtifactDeliveryLink,
  verifyArtifactDeliveryLink,
  artifactApprovalState,
  checkCitationIntegrity,
  citationBindingDigest,
  approvalEvidenceIntact,
} = cjs

// business action drafts
export const {
  WORK_DRAFT_CHECKPOINT_NAMESPACE,
  WORK_DRAFT_ERROR_REASONS,
  createWorkDraftService,
  createWorkDraftHandler,
  draftPayloadDigest,
  resolveWorkDraftLimits,
} = cjs

// artifact bodies (S3-compatible body store)
export const {
  createS3ArtifactBodyStore,
  resolveArtifactBodyLimits,
  s3ObjectKey,
  signV4,
  sha256Hex,
  S3ArtifactBodyError,
  DEFAULT_ARTIFACT_BODY_LIMITS,
  HARD_ARTIFACT_BODY_LIMITS,
} = cjs

// HTTP adapter
export const { createArtifactHandler, toNodeListener } = cjs

// credential redaction for free text
export const { createCredentialRedactor } = cjs

// language intelligence
export const { createLanguageIntelligence, LanguageIntelligence, encodeLspFrame, LspFrameReader, LspFrameError, applyTextEdits, resolveLanguageIntelligenceLimits } = cjs

export default cjs
