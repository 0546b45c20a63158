'use strict'
// artifacts: see the issue for this area.
module.exports = {}
