'use strict'
// Diagnostics: normalizeDiagnostics, diagnosticDelta, diagnosticIdentity.
module.exports = {}
