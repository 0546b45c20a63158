'use strict'
// The error classes of prism-review and the one place that turns an error coming from
// the native addon into an instance of them. Every export of the package goes through
// `callNative` / `callNativeAsync`, so every failure a caller sees is one of these.

const ERROR_MARKER = '\u001fPRISM'

/** The native error tables (src/napi/mod.rs `errorTables`): the codes Rust owns. */
const TABLES = JSON.parse(require('./native.js').errorTables())

/**
 * @param {Function} cls
 * @param {string} name
 */
function defineName(cls, name) {
  Object.defineProperty(cls.prototype, 'name', { value: name, writable: true, configurable: true, enumerable: false })
}

/**
 * A service error class `name`: `(message, reason, options?)` as @arnilo/prism's
 * ArtifactError (hosts construct them themselves), with the constant `code` and the
 * `reason` given. A direct subclass of Error, named `name`.
 * @param {string} name
 * @param {string} code
 */
function reasonErrorClass(name, code) {
  const cls = class extends Error {
    /**
     * @param {string} message
     * @param {string} reason
     * @param {ErrorOptions} [options]
     */
    constructor(message, reason, options) {
      super(message, options)
      this.code = code
      this.reason = reason
    }
  }
  Object.defineProperty(cls, 'name', { value: name })
  defineName(cls, name)
  return cls
}

/** Artifact service failures: `code` "ERR_PRISM_ARTIFACT" and a `reason`. */
const ArtifactError = reasonErrorClass('ArtifactError', 'ERR_PRISM_ARTIFACT')

/** The `code` of a checkpoint store's compare-and-swap conflict (@arnilo/prism's export; Rust's). */
const CHECKPOINT_CONFLICT_CODE = /** @type {'ERR_PRISM_CHECKPOINT_CONFLICT'} */ (TABLES.checkpointConflictCode)

/** A compare-and-swap conflict in a checkpoint store. Host stores reject with it. */
class CheckpointConflictError extends Error {
  /**
   * @param {string} [message]
   * @param {ErrorOptions} [options]
   */
  constructor(message = 'checkpoint version conflict', options) {
    super(message, options)
    this.code = CHECKPOINT_CONFLICT_CODE
  }
}
defineName(CheckpointConflictError, 'CheckpointConflictError')

/**
 * @param {string} prefix
 * @param {unknown} code
 */
function suffixed(prefix, code) {
  const c = String(code)
  return c.startsWith(prefix) ? c : prefix + c
}

/** Coding patch review failures: `ERR_PRISM_REVIEW_INPUT|LIMIT|BINDING|STATE|OWNERSHIP`. */
class CodingPatchReviewError extends Error {
  /**
   * @param {string} code
   * @param {string} [message]
   * @param {ErrorOptions} [options]
   */
  constructor(code, message, options) {
    super(message, options)
    this.code = suffixed('ERR_PRISM_REVIEW_', code)
  }
}
defineName(CodingPatchReviewError, 'CodingPatchReviewError')

/** Language intelligence failures: `ERR_PRISM_LSP_FRAMING|SERVER|TIMEOUT|LIMIT|UNSUPPORTED|WORKSPACE`. */
class LanguageIntelligenceError extends Error {
  /**
   * @param {string} code
   * @param {string} [message]
   * @param {ErrorOptions} [options]
   */
  constructor(code, message, options) {
    super(message, options)
    this.code = suffixed('ERR_PRISM_LSP_', code)
  }
}
defineName(LanguageIntelligenceError, 'LanguageIntelligenceError')

/**
 * Artifact body store failure codes by reason, as @arnilo/prism exports them; the reasons
 * are Rust's (`BodyCode` in src/error.rs).
 */
const ARTIFACT_BODY_ERROR_CODES = Object.freeze(
  /** @type {Record<string, string>} */ (
    Object.fromEntries(
      TABLES.bodyCodes.map((/** @type {string} */ r) => [r, `ERR_PRISM_ARTIFACT_BODY_${r}`]),
    )
  ),
)

/**
 * Artifact body store failures: `(message, reason)` with `reason` one of the keys of
 * `ARTIFACT_BODY_ERROR_CODES` and `code` derived from it, as @arnilo/prism's.
 */
class ArtifactBodyStoreError extends Error {
  /**
   * @param {string} message
   * @param {string} reason
   * @param {ErrorOptions} [options]
   */
  constructor(message, reason, options) {
    super(message, options)
    this.reason = reason
    this.code = ARTIFACT_BODY_ERROR_CODES[reason] ?? ARTIFACT_BODY_ERROR_CODES.STORE
  }
}
defineName(ArtifactBodyStoreError, 'ArtifactBodyStoreError')

/**
 * Work draft failures: `code` "ERR_PRISM_WORK_DRAFT" and a `reason` (the native table,
 * `WORK_DRAFT_ERROR_REASONS`). The constructor takes `(message, reason)` as ArtifactError's.
 */
const WorkDraftError = reasonErrorClass('WorkDraftError', 'ERR_PRISM_WORK_DRAFT')

/** Every error this package built with `withCode` (typed Node-style errors). */
const OURS = new WeakSet()

/**
 * S3 adapter failures: `(message, reason)` with `reason` one of PRESIGN, UPLOAD, DOWNLOAD,
 * DELETE, CREDENTIALS and `code` `ERR_PRISM_S3_<reason>`, as @arnilo/prism's.
 */
class S3ArtifactBodyError extends Error {
  /**
   * @param {string} message
   * @param {string} reason
   * @param {ErrorOptions} [options]
   */
  constructor(message, reason, options) {
    super(message, options)
    this.reason = reason
    this.code = `ERR_PRISM_S3_${reason}`
  }
}
defineName(S3ArtifactBodyError, 'S3ArtifactBodyError')

/**
 * @template {Error} E
 * @param {E} error
 * @param {string} code
 * @returns {E & { code: string }}
 */
function withCode(error, code) {
  const coded = /** @type {E & { code: string }} */ (error)
  coded.code = code
  OURS.add(error)
  return coded
}

/**
 * Whether `err` is one of this package's errors (not a caller's own, passing through).
 * @param {unknown} err
 */
function isOurs(err) {
  return (
    (err instanceof Error && OURS.has(err)) ||
    err instanceof ArtifactError ||
    err instanceof CheckpointConflictError ||
    err instanceof CodingPatchReviewError ||
    err instanceof LanguageIntelligenceError ||
    err instanceof ArtifactBodyStoreError ||
    err instanceof WorkDraftError ||
    err instanceof S3ArtifactBodyError
  )
}

/**
 * The error payload the native side encodes after `ERROR_MARKER` (src/error.rs).
 * (`reason` is set for the classes that carry one.)
 * @typedef {{ class: string, code: string, reason: string, message: string }} NativeErrorPayload
 */

/**
 * Build the JS error described by a decoded native payload `{ class, code, reason?, message }`.
 * @param {NativeErrorPayload} p
 */
function fromPayload(p) {
  switch (p.class) {
    case 'ArtifactError':
      return new ArtifactError(p.message, p.reason)
    case 'CheckpointConflictError':
      return new CheckpointConflictError(p.message)
    case 'CodingPatchReviewError':
      return new CodingPatchReviewError(p.code, p.message)
    case 'LanguageIntelligenceError':
      return new LanguageIntelligenceError(p.code, p.message)
    case 'ArtifactBodyStoreError':
      return new ArtifactBodyStoreError(p.message, String(p.code).slice('ERR_PRISM_ARTIFACT_BODY_'.length))
    case 'WorkDraftError':
      return new WorkDraftError(p.message, p.reason)
    case 'S3ArtifactBodyError':
      return new S3ArtifactBodyError(p.message, String(p.code).slice('ERR_PRISM_S3_'.length))
    case 'RangeError':
      return withCode(new RangeError(p.message), p.code)
    case 'TypeError':
      return withCode(new TypeError(p.message), p.code)
    default:
      return withCode(new Error(p.message), p.code || 'ERR_PRISM_INTERNAL')
  }
}

/**
 * `err.message` when `err` has a string one, else `String(err)`.
 * @param {unknown} err
 */
function messageOf(err) {
  // A property read on whatever was thrown: `err` may be any value.
  const message = err ? /** @type {{ message?: unknown }} */ (err).message : undefined
  return typeof message === 'string' ? message : String(err)
}

/**
 * The native error text behind `err` (after `ERROR_MARKER`), or undefined when the native
 * addon did not raise it.
 * @param {unknown} err
 */
function nativeText(err) {
  const message = err ? /** @type {{ message?: unknown }} */ (err).message : undefined
  return typeof message === 'string' && message.startsWith(ERROR_MARKER) ? message.slice(ERROR_MARKER.length) : undefined
}

/**
 * Turn whatever the native addon threw into a typed error; other errors pass through.
 * @param {unknown} err
 */
function translate(err) {
  const text = nativeText(err)
  if (text !== undefined) {
    /** @type {NativeErrorPayload} */
    let payload
    try {
      payload = JSON.parse(text)
    } catch {
      return withCode(new Error('internal error: undecodable native error'), 'ERR_PRISM_INTERNAL')
    }
    return fromPayload(payload)
  }
  return err
}

/**
 * `fn(...args)`, its native error translated.
 * @template {unknown[]} A
 * @template R
 * @param {(...args: A) => R} fn
 * @param {A} args
 * @returns {R}
 */
function callNative(fn, ...args) {
  try {
    return fn(...args)
  } catch (err) {
    throw translate(err)
  }
}

/**
 * `await fn(...args)`, its native error translated.
 * @template {unknown[]} A
 * @template R
 * @param {(...args: A) => R | Promise<R>} fn
 * @param {A} args
 * @returns {Promise<R>}
 */
async function callNativeAsync(fn, ...args) {
  try {
    return await fn(...args)
  } catch (err) {
    throw translate(err)
  }
}

/**
 * JSON text of `value` for the native side. Values JSON cannot carry (cycles, BigInt,
 * throwing getters) become `makeError(message)`.
 * @param {unknown} value
 * @param {(message: string) => Error} makeError
 * @returns {string}
 */
function toJson(value, makeError, stringify = JSON.stringify) {
  let text
  try {
    text = stringify(value)
  } catch (err) {
    // A limit the (bounded) writer charged is already ours: it stays what it is.
    if (isOurs(err)) throw err
    let message
    try {
      message = messageOf(err)
    } catch {
      message = 'a value threw while it was read'
    }
    const e = makeError(`input cannot be serialized: ${message}`)
    // The caller's own error stays reachable as `cause` (issue 17).
    if (e instanceof Error && e.cause === undefined) e.cause = err
    throw e
  }
  return text === undefined ? 'null' : text
}

/**
 * A `TypeError` with Node's `ERR_INVALID_ARG_TYPE` code, for arguments of the wrong type.
 * @param {string} message
 */
function typeError(message) {
  return withCode(new TypeError(message), 'ERR_INVALID_ARG_TYPE')
}

/**
 * A `RangeError` with Node's `ERR_OUT_OF_RANGE` code, for limits outside `1..hard`.
 * @param {string} message
 */
function rangeError(message) {
  return withCode(new RangeError(message), 'ERR_OUT_OF_RANGE')
}

/**
 * `Array.isArray(v)`, except that a revoked Proxy, which it throws on, is our TypeError
 * (with the engine's error as `cause`) rather than a bare one.
 * @param {unknown} v
 * @returns {v is unknown[]}
 */
function isArray(v) {
  try {
    return Array.isArray(v)
  } catch (err) {
    const e = typeError(`a revoked Proxy cannot be read: ${err && /** @type {{ message?: unknown }} */ (err).message}`)
    e.cause = err
    throw e
  }
}

/**
 * The type of `v` as error messages name it: `null`, `array`, or `typeof v`.
 * @param {unknown} v
 */
function describe(v) {
  if (v === null) return 'null'
  if (isArray(v)) return 'array'
  return typeof v
}

/**
 * True for a non-null, non-array object.
 * @param {unknown} v
 * @returns {v is Record<string, unknown>}
 */
function isObject(v) {
  return typeof v === 'object' && v !== null && !isArray(v)
}

module.exports = {
  ERROR_MARKER,
  messageOf,
  nativeText,
  isOurs,
  typeError,
  rangeError,
  describe,
  isObject,
  isArray,
  ArtifactError,
  CHECKPOINT_CONFLICT_CODE,
  CheckpointConflictError,
  CodingPatchReviewError,
  LanguageIntelligenceError,
  ArtifactBodyStoreError,
  ARTIFACT_BODY_ERROR_CODES,
  WorkDraftError,
  S3ArtifactBodyError,
  translate,
  fromPayload,
  callNative,
  callNativeAsync,
  toJson,
}
