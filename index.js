'use strict'
// prism-review: the CommonJS entry. Every export is defined in `js/` over the native
// addon; `index.mjs` re-exports the same names for ESM.

const errors = require('./js/errors.js')

module.exports = {
  ArtifactError: errors.ArtifactError,
  CheckpointConflictError: errors.CheckpointConflictError,
  CodingPatchReviewError: errors.CodingPatchReviewError,
  LanguageIntelligenceError: errors.LanguageIntelligenceError,
  ArtifactBodyStoreError: errors.ArtifactBodyStoreError,
  ...require('./js/review.js'),
  ...require('./js/diagnostics.js'),
}
