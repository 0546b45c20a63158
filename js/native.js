'use strict'
// Loads the platform binary through the napi-rs generated loader (`binding.js`) and
// explains in one error what is missing when no binary fits this platform.

// The platform packages published next to the root (package.json `napi.targets`).
const PREBUILT = [
  'linux-x64-gnu',
  'linux-x64-musl',
  'linux-arm64-gnu',
  'linux-arm64-musl',
  'darwin-x64',
  'darwin-arm64',
  'win32-x64-msvc',
]

// The package name binding.js looks for here (it detects musl the same way: glibc reports
// its runtime version, musl does not).
function expectedPlatform() {
  const { platform, arch } = process
  if (platform === 'win32') return `${platform}-${arch}-msvc`
  if (platform !== 'linux') return `${platform}-${arch}`
  let musl = false
  try {
    musl = !process.report.getReport().header.glibcVersionRuntime
  } catch {
    musl = false
  }
  return `${platform}-${arch}-${musl ? 'musl' : 'gnu'}`
}

let native
try {
  native = require('../binding.js')
} catch (err) {
  const platform = expectedPlatform()
  const what = PREBUILT.includes(platform)
    ? `Install the optional package prism-review-${platform} (npm skips it with --omit=optional or --no-optional, ` +
      `or when a lockfile was made on another platform: reinstall with npm install --include=optional), ` +
      `or build from source`
    : `No prebuilt binary is published for ${platform} (prebuilt: ${PREBUILT.join(', ')}): build from source`
  const e = new Error(
    `prism-review: no native binary could be loaded for ${process.platform}-${process.arch}. ` +
      what +
      ` with a Rust toolchain: npm install && npm run build. ` +
      `Cause: ${err && err.message ? err.message : String(err)}`,
    { cause: err },
  )
  e.code = 'ERR_PRISM_NATIVE_LOAD'
  throw e
}

module.exports = native
