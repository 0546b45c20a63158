'use strict'
// Coding patch review: createCodingPatchReviewManifest, assertCodingPatchAccepted,
// resolveCodingReviewLimits.
// Every failure is a CodingPatchReviewError (or a RangeError for a limit outside 1..hard).
//
// createCodingPatchReviewManifest has two paths to the one native core:
// - columns (plain inputs, the common case): the three bulk lists (changedPaths, diffstat,
//   diagnostics) are read here once, each property once, into one joined string, a length
//   per string and a Float64Array of counts; the rest of the input crosses as JSON text.
//   The native side validates, sorts, digests and returns only the positions of the
//   retained entries (and the small rest of the manifest as JSON text); the result's lists
//   are built here from the values read. Measured on bench/review.bench.mjs this avoids
//   JSON.stringify of the lists, copying 2 x 261 KB of JSON across and JSON.parse of the
//   manifest, which alone were 1.6-1.9x the benchmark's floor.
// - JSON text both ways, for everything the columns path declines: any shape it does not
//   read exactly as JSON.stringify would (toJSON, accessors that throw, non-plain rows,
//   unknown or inherited keys, non-integer or unsafe counts, lone surrogates, very large
//   inputs), and every input the native typed reader refuses. Errors therefore always
//   come from this path or from the shared checks after reading, with the same messages.
// Both paths give identical results (__test__/review-columns.test.mjs).

const native = require('./native.js')
const { CodingPatchReviewError, callNative, toJson } = require('./errors.js')
const { boundedJson } = require('./input.js')

// The core's input caps (Rust owns them). The JSON text is charged while it is written
// (UTF-16 units, never more than its UTF-8 bytes), so a huge input is refused before it
// costs more than the cap or is copied across.
const { manifestInputBytes: MANIFEST_INPUT_BYTES, assertInputBytes: ASSERT_INPUT_BYTES } = JSON.parse(native.reviewConstants())
// The columns path reads at most this many bulk entries (the hard caps admit far fewer).
const COLUMNS_MAX_ENTRIES = 80000

/** @typedef {{ review: import('../types/review').CodingPatchReview, artifactInput: import('../types/review').CodingPatchReviewArtifactInput }} ManifestResult */

/** @param {string} message */
function inputError(message) {
  return new CodingPatchReviewError('INPUT', message)
}

/**
 * @param {unknown} value
 * @param {number} cap
 */
function encode(value, cap) {
  const tooLarge = () => new CodingPatchReviewError('LIMIT', `input is more than ${cap} bytes of JSON; the cap is ${cap} bytes`)
  // No depth limit here: nesting is the native reader's to refuse, as before.
  return toJson(value, inputError, (v) => boundedJson(v, cap, Infinity, tooLarge))
}

/** The JSON text path: the native side returns the artifact input's JSON text (without
 * `preview`), a newline and the manifest's JSON text, so the manifest is parsed once.
 * @param {unknown} input
 * @returns {ManifestResult}
 */
function manifestViaJson(input) {
  const out = callNative(native.reviewCreateManifest, encode(input, MANIFEST_INPUT_BYTES))
  const nl = out.indexOf('\n')
  const artifactInput = JSON.parse(out.slice(0, nl))
  const review = JSON.parse(out.slice(nl + 1))
  artifactInput.preview = { review }
  return { review, artifactInput }
}

/**
 * @param {unknown} v
 * @returns {v is number}
 */
function isCount(v) {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
}

// A row JSON.stringify would serialise as its own enumerable properties: an ordinary or
// null-prototype object without toJSON. (Inherited enumerable keys are ruled out once per
// call: Object.prototype has none.)
/**
 * @param {unknown} r
 * @returns {r is Record<string, unknown>}
 */
function isPlainRow(r) {
  if (typeof r !== 'object' || r === null || /** @type {{ toJSON?: unknown }} */ (r).toJSON !== undefined) return false
  const proto = Object.getPrototypeOf(r)
  return proto === Object.prototype || proto === null
}

/** @param {object} obj */
function hasEnumerable(obj) {
  for (const _ in obj) return true
  return false
}

/**
 * Read the input for the columns path, or `null` to use the JSON text path. Each property
 * is read once; a throwing accessor declines (the JSON text path then reports it).
 * @param {unknown} input
 */
function readColumns(input) {
  if (typeof input !== 'object' || input === null || Array.isArray(input) || /** @type {{ toJSON?: unknown }} */ (input).toJSON !== undefined) return null
  if (hasEnumerable(Object.prototype)) return null
  /** @type {Record<string, unknown>} */
  const rest = { ...input }
  const paths = rest.changedPaths
  const rows = rest.diffstat
  const diags = rest.diagnostics
  // Each list is optional (absent means empty, as in JSON); present, it must be an array.
  /**
   * @param {unknown} v
   * @returns {v is unknown[] | undefined}
   */
  const isList = (v) => v === undefined || (Array.isArray(v) && /** @type {{ toJSON?: unknown }} */ (v).toJSON === undefined)
  if (!isList(paths) || !isList(rows) || !isList(diags)) return null
  const pathList = paths ?? []
  const rowList = rows ?? []
  const diagList = diags ?? []
  const np = pathList.length
  const nr = rowList.length
  const ng = diagList.length
  // (A Proxy may report any length; JSON.stringify would coerce it.)
  if (!isCount(np) || !isCount(nr) || !isCount(ng) || np + nr + ng > COLUMNS_MAX_ENTRIES) return null
  const strs = new Array(np + nr + 2 * ng)
  const lens = new Uint32Array(np + nr + 2 * ng)
  const nums = new Float64Array(nr * 2 + ng * 2)
  let units = 0
  for (let i = 0; i < np; i++) {
    const p = pathList[i]
    if (typeof p !== 'string') return null
    strs[i] = p
    lens[i] = p.length
    units += p.length
  }
  for (let i = 0; i < nr; i++) {
    const r = rowList[i]
    if (!isPlainRow(r)) return null
    for (const k in r) {
      if (k !== 'file' && k !== 'additions' && k !== 'deletions') return null
    }
    const file = r.file
    const additions = r.additions
    const deletions = r.deletions
    if (typeof file !== 'string' || !isCount(additions) || !isCount(deletions)) return null
    strs[np + i] = file
    lens[np + i] = file.length
    units += file.length
    nums[2 * i] = additions + 0 // + 0: -0 becomes 0, as in JSON
    nums[2 * i + 1] = deletions + 0
  }
  const base = 2 * nr
  for (let i = 0; i < ng; i++) {
    const g = diagList[i]
    if (!isPlainRow(g)) return null
    for (const k in g) {
      if (k !== 'file' && k !== 'severity' && k !== 'count' && k !== 'generation') return null
    }
    const file = g.file
    const severity = g.severity
    const count = g.count
    const generation = g.generation
    if (typeof file !== 'string' || typeof severity !== 'string' || !isCount(count) || !isCount(generation)) return null
    const at = np + nr + 2 * i
    strs[at] = file
    lens[at] = file.length
    strs[at + 1] = severity
    lens[at + 1] = severity.length
    units += file.length + severity.length
    nums[base + 2 * i] = count + 0
    nums[base + 2 * i + 1] = generation + 0
  }
  rest.changedPaths = []
  rest.diffstat = []
  rest.diagnostics = []
  const restText = JSON.stringify(rest)
  if (typeof restText !== 'string') return null
  // An upper bound of the whole input's JSON size in UTF-8 bytes (a code unit is at most
  // 6 bytes escaped, 3 raw; quotes, commas, member names and up to 16 digits per count are
  // at most 3 per path, 70 per diffstat row, 80 per diagnostic row): beyond the cap, the
  // JSON text path gives its usual LIMIT error.
  if (3 * restText.length + 6 * units + 3 * np + 80 * nr + 90 * ng > MANIFEST_INPUT_BYTES) return null
  return { restText, strs, lens, nums, np, nr, ng }
}

/**
 * @param {NonNullable<ReturnType<typeof readColumns>>} c
 * @returns {ManifestResult | null}
 */
function manifestViaColumns(c) {
  const { strs, nums, np, nr, ng } = c
  const order = new Uint32Array(np + nr + ng)
  const out = callNative(native.reviewCreateManifestColumns, c.restText, strs.join(''), c.lens, np, nr, ng, nums, order)
  if (out === null || out === undefined) return null
  const s = JSON.parse(out)
  const [c0, c1, c2] = s.n
  const changedPaths = []
  for (let j = 0; j < c0; j++) changedPaths.push(strs[order[j]])
  const diffstat = []
  for (let j = 0; j < c1; j++) {
    const i = order[c0 + j]
    diffstat.push({ additions: nums[2 * i], deletions: nums[2 * i + 1], file: strs[np + i] })
  }
  const diagnostics = []
  const base = 2 * nr
  for (let j = 0; j < c2; j++) {
    const i = order[c0 + c1 + j]
    const at = np + nr + 2 * i
    diagnostics.push({ count: nums[base + 2 * i], file: strs[at], generation: nums[base + 2 * i + 1], severity: strs[at + 1] })
  }
  // The manifest text holds the three lists empty, in place: fill them from our copies.
  const review = s.r
  review.changedPaths = changedPaths
  review.diagnostics = diagnostics
  review.diffstat = diffstat
  const artifactInput = s.a
  artifactInput.preview = { review }
  return { review, artifactInput }
}

/** @param {unknown} input */
function columnsOf(input) {
  try {
    return readColumns(input)
  } catch {
    return null
  }
}

/**
 * Build a bounded coding patch review manifest and the structural artifact attach input
 * that carries it; `artifactInput.preview.review` is the same object as `review`.
 * @param {import('../types/review').CodingPatchReviewInput} input
 * @returns {ManifestResult}
 */
function createCodingPatchReviewManifest(input) {
  const c = columnsOf(input)
  if (c !== null) {
    const out = manifestViaColumns(c)
    if (out !== null) return out
  }
  return manifestViaJson(input)
}

/**
 * Derive `pending | accepted | rejected | superseded` for `review` from an artifact
 * record. Synchronous and pure: the input is serialised, never changed.
 * @param {import('../types/review').AssertCodingPatchAcceptedInput} input
 * @returns {import('../types/review').AssertCodingPatchAcceptedResult}
 */
function assertCodingPatchAccepted(input) {
  return JSON.parse(callNative(native.reviewAssertAccepted, encode(input, ASSERT_INPUT_BYTES)))
}

/**
 * `{ maxRevisions, maxDiagnostics, maxManifestBytes }` with the defaults filled in; a value
 * outside `1..hard` is a RangeError.
 * @param {import('../types/review').CodingReviewLimits} [options]
 * @returns {import('../types/review').ResolvedCodingReviewLimits}
 */
function resolveCodingReviewLimits(options) {
  const text = options === undefined ? 'null' : toJson(options, inputError)
  return JSON.parse(callNative(native.reviewResolveLimits, text))
}

module.exports = { createCodingPatchReviewManifest, assertCodingPatchAccepted, resolveCodingReviewLimits }

// For the tests that compare the two paths (not part of the package API: not enumerable,
// so index.js does not re-export it).
Object.defineProperty(module.exports, 'internal', {
  enumerable: false,
  value: {
    manifestViaJson,
    /** @param {unknown} input */
    manifestViaColumns(input) {
      const c = columnsOf(input)
      return c === null ? null : manifestViaColumns(c)
    },
  },
})
