'use strict'
// prism-review: the CommonJS entry. Every export is defined in `js/` over the native
// addon; `index.mjs` re-exports the same names for ESM.

const errors = require('./js/errors.js')

module.exports = {
  // errors
  ArtifactError: errors.ArtifactError,
  CHECKPOINT_CONFLICT_CODE: errors.CHECKPOINT_CONFLICT_CODE,
  CheckpointConflictError: errors.CheckpointConflictError,
  CodingPatchReviewError: errors.CodingPatchReviewError,
  LanguageIntelligenceError: errors.LanguageIntelligenceError,
  ArtifactBodyStoreError: errors.ArtifactBodyStoreError,
  ARTIFACT_BODY_ERROR_CODES: errors.ARTIFACT_BODY_ERROR_CODES,
  WorkDraftError: errors.WorkDraftError,

  // coding patch review
  ...require('./js/review.js'),

  // diagnostics
  ...require('./js/diagnostics.js'),

  // checkpoint stores
  ...require('./js/store.js'),

  // artifact review service
  ...require('./js/artifacts.js'),

  // business action drafts
  ...require('./js/drafts.js'),
  // artifact bodies (S3-compatible body store)
  ...require('./js/bodies.js'),

  // HTTP adapter
  ...require('./js/http.js'),
  ...require('./js/drafts-http.js'),
  ...require('./js/node-listener.js'),

  // credential redaction for free text
  ...require('./js/credentials.js'),

  // language intelligence
  ...require('./js/lsp.js'),
}
