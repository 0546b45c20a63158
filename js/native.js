'use strict'
// Loads the platform binary through the napi-rs generated loader (`binding.js`) and
// explains in one error what is missing when no binary fits this platform.

let native
try {
  native = require('../binding.js')
} catch (err) {
  const platform = `${process.platform}-${process.arch}`
  const e = new Error(
    `prism-review: no native binary could be loaded for ${platform}. ` +
      `Install the matching optional package (prism-review-${platform}-*), make sure optional dependencies ` +
      `were not skipped (npm install --include=optional), or build from source with a Rust toolchain: ` +
      `npm install && npm run build. Cause: ${err && err.message ? err.message : String(err)}`,
    { cause: err },
  )
  e.code = 'ERR_PRISM_NATIVE_LOAD'
  throw e
}

module.exports = native
