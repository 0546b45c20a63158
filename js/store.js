'use strict'
// store: see the issue for this area.
module.exports = {}
