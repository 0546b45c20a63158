'use strict'
// http: see the issue for this area.
module.exports = {}
