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
const { typeError, describe, isObject } = require('./errors.js')
// A getter or Proxy trap that throws while the input is read (here or by the native
// side) is a TypeError with the caller's error as `cause` (js/input.js).
const { readInput, callReading, jsonOf } = require('./input.js')

/**
 * Validate and bound host-parsed diagnostics. Malformed entries are dropped whole;
 * a non-array `raw` or bad `options` is a TypeError (RangeError for a limit out of range).
 * @param {readonly import('../types/diagnostics').RawDiagnostic[]} raw
 * @param {Partial<import('../types/diagnostics').NormalizeDiagnosticsOptions>} options
 */
function normalizeDiagnostics(raw, options) {
  const [optionsType, rawIsArray] = readInput('input', () => [isObject(options) ? null : describe(options), Array.isArray(raw)])
  if (optionsType !== null) {
    throw typeError(`options must be an object with workspaceRoot and generation, got ${optionsType}`)
  }
  if (!rawIsArray) throw typeError(`raw must be an array of diagnostics, got ${readInput('raw', () => describe(raw))}`)
  return callReading('raw', native.diagnosticsNormalize, raw, jsonOf('options', options))
}

/**
 * @typedef {import('../types/diagnostics').NormalizedDiagnostic} NormalizedDiagnostic
 */

/**
 * A copy of `d` with its fields in the one fixed order.
 * @param {NormalizedDiagnostic} d
 * @returns {NormalizedDiagnostic}
 */
function entry(d) {
  /** @type {{ -readonly [K in keyof NormalizedDiagnostic]?: NormalizedDiagnostic[K] }} */
  const o = { file: d.file, line: d.line, character: d.character }
  if (d.endLine !== undefined) o.endLine = d.endLine
  if (d.endCharacter !== undefined) o.endCharacter = d.endCharacter
  o.severity = d.severity
  o.message = d.message
  if (d.source !== undefined) o.source = d.source
  if (d.code !== undefined) o.code = d.code
  o.generation = d.generation
  // Every field of `d` is copied; the optional ones only when present.
  return /** @type {NormalizedDiagnostic} */ (o)
}

/**
 * @param {readonly NormalizedDiagnostic[]} list
 * @param {number[]} indices
 */
function pick(list, indices) {
  const out = new Array(indices.length)
  for (let i = 0; i < indices.length; i++) out[i] = entry(list[indices[i]])
  return out
}

/**
 * `added` / `removed` / `unchanged` between `previous` and `next`, each in canonical order
 * (file, line, character, source, code), duplicates deduped, stale previous entries ignored.
 * @param {import('../types/diagnostics').DiagnosticDeltaInput} input
 * @returns {import('../types/diagnostics').DiagnosticDelta}
 */
function diagnosticDelta(input) {
  const inputType = readInput('input', () => (isObject(input) ? null : describe(input)))
  if (inputType !== null) {
    throw typeError(`diagnosticDelta expects an object { next, previous?, generation? }, got ${inputType}`)
  }
  // Read each argument once, so the arrays mapped below are the ones the native side saw.
  const { next, previous, generation, identity } = readInput('input', () => {
    const { next, previous, generation, identity } = input
    return { next, previous, generation, identity }
  })
  if (identity !== undefined) {
    throw typeError('input.identity is not supported: identity is always diagnosticIdentity (file:source:line:character:code)')
  }
  const r = JSON.parse(callReading('input', native.diagnosticsDeltaIndices, { next, previous, generation }))
  return readInput('input', () => ({
    added: pick(next, r.added),
    removed: r.removed.length === 0 ? [] : pick(previous ?? [], r.removed),
    unchanged: pick(next, r.unchanged),
    generation: r.generation,
    truncated: r.truncated,
  }))
}

/**
 * The effective caps of normalizeDiagnostics for `options` (defaults filled in).
 * @param {{ readonly maxMessageBytes?: number }} [options]
 */
function resolveDiagnosticsLimits(options) {
  const optionsType = readInput('options', () => (options === undefined || isObject(options) ? null : describe(options)))
  if (optionsType !== null) throw typeError(`options must be an object, got ${optionsType}`)
  return JSON.parse(callReading('options', native.diagnosticsResolveLimits, jsonOf('options', options ?? {})))
}

/**
 * The stable identity `file:source:line:character:code` (empty for absent source/code).
 * @param {Pick<NormalizedDiagnostic, 'file' | 'line' | 'character'> & { readonly source?: string, readonly code?: string | number }} diagnostic
 */
function diagnosticIdentity(diagnostic) {
  const type = readInput('diagnostic', () => (isObject(diagnostic) ? null : describe(diagnostic)))
  if (type !== null) throw typeError(`diagnostic must be an object, got ${type}`)
  return callReading('diagnostic', native.diagnosticsIdentity, jsonOf('diagnostic', diagnostic))
}

module.exports = { normalizeDiagnostics, diagnosticDelta, diagnosticIdentity, resolveDiagnosticsLimits }
