'use strict'
// Diagnostics: normalizeDiagnostics, diagnosticDelta, diagnosticIdentity.
//
// Unlike the package default (JSON text), the bulk arrays are read by the native side
// directly through Node-API (each property once) and results are built as objects there:
// JSON text both ways measured 4-6x a JSON round trip at n >= 10 000 against a 3x target
// (this path: 1.9-2.8x; `npm run bench -- diagnostics`).
// `diagnosticDelta` gets back only indices into `next` / `previous` (the Rust core
// validates, dedupes, orders and diffs), so messages never travel back: the result
// entries are rebuilt here from the caller's own entries, fields in one fixed order.
// Options and single diagnostics are small and cross as JSON text.

const native = require('./native.js')
const { translate, toJson, typeError, describe, isObject } = require('./errors.js')

// Our typed errors pass through; anything else thrown while the native side read the
// input (a throwing getter or Proxy trap) becomes a TypeError with the original as cause.
function call(fn, ...args) {
  try {
    return fn(...args)
  } catch (err) {
    const e = translate(err)
    if (e && typeof e.code === 'string' && (e.code.startsWith('ERR_PRISM_') || e.code.startsWith('ERR_INVALID') || e.code === 'ERR_OUT_OF_RANGE')) {
      throw e
    }
    const t = typeError(`input could not be read: ${e && e.message ? e.message : String(e)}`)
    t.cause = e
    throw t
  }
}

/**
 * Validate and bound host-parsed diagnostics. Malformed entries are dropped whole;
 * a non-array `raw` or bad `options` is a TypeError (RangeError for a limit out of range).
 */
function normalizeDiagnostics(raw, options) {
  if (!isObject(options)) {
    throw typeError(`options must be an object with workspaceRoot and generation, got ${describe(options)}`)
  }
  if (!Array.isArray(raw)) throw typeError(`raw must be an array of diagnostics, got ${describe(raw)}`)
  return call(native.diagnosticsNormalize, raw, toJson(options, typeError))
}

function entry(d) {
  const o = { file: d.file, line: d.line, character: d.character }
  if (d.endLine !== undefined) o.endLine = d.endLine
  if (d.endCharacter !== undefined) o.endCharacter = d.endCharacter
  o.severity = d.severity
  o.message = d.message
  if (d.source !== undefined) o.source = d.source
  if (d.code !== undefined) o.code = d.code
  o.generation = d.generation
  return o
}

function pick(list, indices) {
  const out = new Array(indices.length)
  for (let i = 0; i < indices.length; i++) out[i] = entry(list[indices[i]])
  return out
}

/**
 * `added` / `removed` / `unchanged` between `previous` and `next`, each in canonical order
 * (file, line, character, source, code), duplicates deduped, stale previous entries ignored.
 */
function diagnosticDelta(input) {
  if (!isObject(input)) {
    throw typeError(`diagnosticDelta expects an object { next, previous?, generation? }, got ${describe(input)}`)
  }
  // Read each argument once, so the arrays mapped below are the ones the native side saw.
  const { next, previous, generation, identity } = input
  if (identity !== undefined) {
    throw typeError('input.identity is not supported: identity is always diagnosticIdentity (file:source:line:character:code)')
  }
  const r = JSON.parse(call(native.diagnosticsDeltaIndices, { next, previous, generation }))
  return {
    added: pick(next, r.added),
    removed: r.removed.length === 0 ? [] : pick(previous, r.removed),
    unchanged: pick(next, r.unchanged),
    generation: r.generation,
    truncated: r.truncated,
  }
}

/** The effective caps of normalizeDiagnostics for `options` (defaults filled in). */
function resolveDiagnosticsLimits(options) {
  if (options !== undefined && !isObject(options)) throw typeError(`options must be an object, got ${describe(options)}`)
  return JSON.parse(call(native.diagnosticsResolveLimits, toJson(options ?? {}, typeError)))
}

/** The stable identity `file:source:line:character:code` (empty for absent source/code). */
function diagnosticIdentity(diagnostic) {
  if (!isObject(diagnostic)) throw typeError(`diagnostic must be an object, got ${describe(diagnostic)}`)
  return call(native.diagnosticsIdentity, toJson(diagnostic, typeError))
}

module.exports = { normalizeDiagnostics, diagnosticDelta, diagnosticIdentity, resolveDiagnosticsLimits }
