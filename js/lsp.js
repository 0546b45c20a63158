'use strict'
// lsp: see the issue for this area.
module.exports = {}
