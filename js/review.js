'use strict'
// Coding patch review: createCodingPatchReviewManifest, assertCodingPatchAccepted.
// Values cross to the native core as JSON text; every failure is a CodingPatchReviewError
// (or a RangeError for a limit outside 1..hard).

const native = require('./native.js')
const { CodingPatchReviewError, callNative, toJson } = require('./errors.js')

// The native core refuses larger inputs too; checking the text length here (UTF-16 units,
// never more than its UTF-8 bytes) refuses a huge input before it is copied across.
const MANIFEST_INPUT_BYTES = 4 * 1024 * 1024
const ASSERT_INPUT_BYTES = 16 * 1024 * 1024

function inputError(message) {
  return new CodingPatchReviewError('INPUT', message)
}

function encode(value, cap) {
  const text = toJson(value, inputError)
  if (text.length > cap) {
    throw new CodingPatchReviewError('LIMIT', `input is more than ${cap} bytes of JSON; the cap is ${cap} bytes`)
  }
  return text
}

/**
 * Build a bounded coding patch review manifest and the structural artifact attach input
 * that carries it. The native side returns the artifact input's JSON text (without
 * `preview`) and the manifest's JSON text separated by a newline, so the manifest crosses
 * and is parsed once; `artifactInput.preview.review` is the same object as `review`.
 */
function createCodingPatchReviewManifest(input) {
  const out = callNative(native.reviewCreateManifest, encode(input, MANIFEST_INPUT_BYTES))
  const nl = out.indexOf('\n')
  const artifactInput = JSON.parse(out.slice(0, nl))
  const review = JSON.parse(out.slice(nl + 1))
  artifactInput.preview = { review }
  return { review, artifactInput }
}

/**
 * Derive `pending | accepted | rejected | superseded` for `review` from an artifact
 * record. Synchronous and pure: the input is serialised, never changed.
 */
function assertCodingPatchAccepted(input) {
  return JSON.parse(callNative(native.reviewAssertAccepted, encode(input, ASSERT_INPUT_BYTES)))
}

module.exports = { createCodingPatchReviewManifest, assertCodingPatchAccepted }
