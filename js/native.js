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
    // `getReport()` is typed `object`; its `header` is documented by Node's diagnostic report.
    const report = /** @type {{ header: { glibcVersionRuntime?: string } }} */ (process.report.getReport())
    musl = !report.header.glibcVersionRuntime
  } catch {
    musl = false
  }
  return `${platform}-${arch}-${musl ? 'musl' : 'gnu'}`
}

/** @type {typeof import('../binding.js')} */
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
  // Whatever binding.js threw: read its message as the message of an error, if it has one.
  const cause = /** @type {{ message?: unknown } | null | undefined} */ (err)
  throw Object.assign(
    new Error(
      `prism-review: no native binary could be loaded for ${process.platform}-${process.arch}. ` +
        what +
        ` with a Rust toolchain: npm install && npm run build. ` +
        `Cause: ${cause && cause.message ? cause.message : String(err)}`,
      { cause: err },
    ),
    { code: 'ERR_PRISM_NATIVE_LOAD' },
  )
}

module.exports = native
