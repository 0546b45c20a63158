'use strict'
// Coding patch review: createCodingPatchReviewManifest, assertCodingPatchAccepted.
module.exports = {}
