'use strict'
// Artifact bodies: the native S3-compatible ArtifactBodyStore and its pure helpers.
//
// The store is Rust (src/bodies/): SigV4, transport, verification, the object key and the
// caps all live there. This file only adapts JavaScript values: a Uint8Array body is
// handed over whole and a ReadableStream body chunk by chunk (each awaited, so the
// upload's backpressure reaches the caller's stream), both without a copy (the native
// side reads them in place until the put settles), and a download comes back as a
// ReadableStream over the verified spool. Host hooks (credentials, isHeld) are called
// through envelopes, so a hook's own error text never reaches an error message.

const native = require('./native.js')
const {
  ArtifactBodyStoreError,
  S3ArtifactBodyError,
  callNative,
  callNativeAsync,
  typeError,
  describe,
  isObject,
} = require('./errors.js')

const { underSignal } = require('./abort.js')

const CONSTANTS = JSON.parse(native.bodiesConstants())
/**
 * Bytes of each chunk a download is read in. The chunks are allocated in JavaScript, so
 * V8 accounts for them: 1 MiB chunks keep a 512 MiB download under 128 MiB RSS
 * (bench/bodies.bench.mjs) and take 512 native round trips instead of 8192 at 64 KiB.
 */
const READ_CHUNK = 1024 * 1024

/** @typedef {import('../binding.js').BodyAbortHandle} BodyAbortHandle */

/**
 * @param {string} message
 * @param {ErrorOptions} [options]
 */
function storeError(message, options) {
  return new ArtifactBodyStoreError(message, 'STORE', options)
}

/**
 * JSON text of a ref; what JSON cannot carry is a STORE error.
 * @param {unknown} ref
 * @returns {string}
 */
function refJson(ref) {
  if (!isObject(ref)) throw storeError(`a body reference must be an object, got ${describe(ref)}`)
  let text
  try {
    text = JSON.stringify(ref)
  } catch {
    throw storeError('the body reference cannot be serialized')
  }
  return text
}

/**
 * @param {unknown} options
 * @returns {AbortSignal | undefined}
 */
function signalOf(options) {
  if (options === undefined || options === null) return undefined
  if (!isObject(options)) throw typeError('options must be an object')
  const { signal } = options
  if (signal === undefined) return undefined
  if (signal === null || typeof signal !== 'object' || typeof (/** @type {{ aborted?: unknown }} */ (signal).aborted) !== 'boolean') {
    throw typeError('options.signal must be an AbortSignal')
  }
  // An object with a boolean `aborted`: used as an AbortSignal.
  return /** @type {AbortSignal} */ (signal)
}

/**
 * Run a native transfer under `signal`: an abort cancels it and rejects with the signal's reason.
 * @template T
 * @param {AbortSignal | undefined} signal
 * @param {(abort: BodyAbortHandle) => Promise<T>} fn
 * @returns {Promise<T>}
 */
function withSignal(signal, fn) {
  return underSignal(signal, () => new native.BodyAbortHandle(), fn)
}

/** @param {Uint8Array} bytes */
function asBuffer(bytes) {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * @param {unknown} v
 * @returns {v is ReadableStream<unknown>}
 */
function isReadableStream(v) {
  return v !== null && typeof v === 'object' && typeof (/** @type {{ getReader?: unknown }} */ (v).getReader) === 'function'
}

/**
 * Read a whole stream, refusing it past `max` bytes (only for the kms hook, which takes whole bodies).
 * @param {ReadableStream<unknown>} stream
 * @param {number} max
 */
async function readBounded(stream, max) {
  const reader = stream.getReader()
  /** @type {Uint8Array[]} */
  const chunks = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    if (!(value instanceof Uint8Array)) throw storeError('a body stream must yield Uint8Array chunks')
    total += value.byteLength
    if (total > max) {
      await reader.cancel().catch(() => {})
      throw new ArtifactBodyStoreError('the body exceeds maxBodyBytes', 'SIZE_MISMATCH')
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks, total)
}

/**
 * A host hook as the native side calls it: JSON in, an envelope out, never a rejection.
 * @template T
 * @param {(arg: string) => T | Promise<T>} fn
 * @param {(value: T) => unknown} toJson
 * @returns {(arg: string) => Promise<string>}
 */
function hook(fn, toJson) {
  return async (arg) => {
    try {
      return JSON.stringify({ ok: toJson(await fn(arg)) })
    } catch {
      return '{"error":true}'
    }
  }
}

/** @param {unknown} c */
function credentialsJson(c) {
  if (!isObject(c)) return {}
  /** @type {Record<string, string>} */
  const out = {}
  for (const k of ['accessKeyId', 'secretAccessKey', 'sessionToken']) {
    const v = c[k]
    if (typeof v === 'string') out[k] = v
  }
  return out
}

/**
 * @param {NonNullable<import('../types/bodies').S3ArtifactBodyStoreOptions['kms']>} kms
 * @param {'encrypt' | 'decrypt'} op
 * @param {Uint8Array} bytes
 */
async function callKms(kms, op, bytes) {
  let out
  try {
    out = await kms(op, bytes)
  } catch (cause) {
    throw storeError(`the kms hook failed to ${op}`, { cause })
  }
  if (!(out instanceof Uint8Array)) throw storeError(`the kms hook must ${op} to a Uint8Array`)
  return out
}

/**
 * Stream a ReadableStream body into a native streamed upload.
 * @param {import('../binding.js').S3BodyStoreHandle} handle
 * @param {string} json
 * @param {ReadableStream<unknown>} body
 * @param {AbortSignal | undefined} signal
 * @returns {Promise<void>}
 */
async function putStream(handle, json, body, signal) {
  return withSignal(signal, async (abort) => {
    const put = callNative(() => handle.startPut(json, abort))
    const result = callNativeAsync(() => put.result())
    result.catch(() => {})
    const reader = body.getReader()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        if (!(value instanceof Uint8Array)) throw storeError('a body stream must yield Uint8Array chunks')
        if (!(await put.push(asBuffer(value)))) {
          reader.cancel().catch(() => {})
          break
        }
      }
    } catch (err) {
      abort.abort()
      put.end()
      await result.catch(() => {})
      throw err
    }
    put.end()
    await result
  })
}

/**
 * A ReadableStream over a verified download. Each chunk is a fresh buffer allocated here
 * (V8 sees its size and collects it promptly) that the native side fills from the spool.
 * @param {import('../binding.js').BodyReadHandle} reader
 * @returns {ReadableStream<Uint8Array>}
 */
function readStream(reader) {
  let remaining = reader.remaining()
  return new ReadableStream({
    async pull(controller) {
      if (remaining === 0) {
        reader.close()
        controller.close()
        return
      }
      const n = Math.min(READ_CHUNK, remaining)
      const chunk = await callNativeAsync(() => reader.read(Buffer.allocUnsafeSlow(n)))
      remaining -= n
      controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, n))
    },
    cancel() {
      reader.close()
    },
  }, { highWaterMark: 0 })
}

/**
 * The native S3-compatible ArtifactBodyStore (AWS S3, MinIO, Cloudflare R2): path-style,
 * SigV4, verified put/get, legal hold on delete, bounded presigned URLs.
 * @param {import('../types/bodies').S3ArtifactBodyStoreOptions} options `{ endpoint, bucket, region = "us-east-1", credentials, isHeld?, kms?, limits? }`
 * @returns {import('../types/bodies').ArtifactBodyStore}
 */
function createS3ArtifactBodyStore(options) {
  if (!isObject(options)) throw typeError(`createS3ArtifactBodyStore(options): options must be an object, got ${describe(options)}`)
  const { endpoint, bucket, region, credentials, isHeld, kms, limits } = options
  if (typeof endpoint !== 'string') throw storeError('endpoint must be an absolute URL string')
  if (typeof bucket !== 'string') throw storeError('bucket must be a string')
  if (region !== undefined && typeof region !== 'string') throw storeError('region must be a string')
  if (typeof credentials !== 'function') throw typeError('options.credentials must be a function returning { accessKeyId, secretAccessKey, sessionToken? }')
  if (isHeld !== undefined && typeof isHeld !== 'function') throw typeError('options.isHeld must be a function')
  if (kms !== undefined && typeof kms !== 'function') throw typeError('options.kms must be a function')
  if (limits !== undefined && !isObject(limits)) throw typeError('options.limits must be an object')
  const config = JSON.stringify({ endpoint, bucket, ...(region === undefined ? {} : { region }), ...(limits === undefined ? {} : { limits }) })
  const handle = callNative(
    native.createS3BodyStore,
    config,
    hook(() => credentials(), credentialsJson),
    isHeld === undefined ? undefined : hook((json) => isHeld(JSON.parse(json)), (held) => held === true),
  )
  const maxBodyBytes = JSON.parse(handle.limits()).maxBodyBytes

  return {
    async put(ref, body, transferOptions) {
      const json = refJson(ref)
      const signal = signalOf(transferOptions)
      callNative(() => handle.checkRef(json))
      if (kms !== undefined) {
        const bytes = body instanceof Uint8Array ? body : isReadableStream(body) ? await readBounded(body, maxBodyBytes) : null
        if (bytes === null) throw typeError('body must be a Uint8Array or a ReadableStream')
        callNative(() => handle.verify(json, asBuffer(bytes)))
        const payload = await callKms(kms, 'encrypt', bytes)
        return withSignal(signal, (abort) => callNativeAsync(() => handle.putBytes(json, asBuffer(payload), true, abort)))
      }
      if (body instanceof Uint8Array) {
        return withSignal(signal, (abort) => callNativeAsync(() => handle.putBytes(json, asBuffer(body), false, abort)))
      }
      if (isReadableStream(body)) return putStream(handle, json, body, signal)
      throw typeError(`body must be a Uint8Array or a ReadableStream, got ${describe(body)}`)
    },

    async get(ref, transferOptions) {
      const json = refJson(ref)
      const signal = signalOf(transferOptions)
      if (kms !== undefined) {
        const stored = await withSignal(signal, (abort) => callNativeAsync(() => handle.getStored(json, abort)))
        const plain = await callKms(kms, 'decrypt', stored)
        callNative(() => handle.verify(json, asBuffer(plain)))
        return new ReadableStream({
          start(controller) {
            controller.enqueue(plain)
            controller.close()
          },
        })
      }
      const reader = await withSignal(signal, (abort) => callNativeAsync(() => handle.get(json, abort)))
      return readStream(reader)
    },

    async delete(ref, transferOptions) {
      const json = refJson(ref)
      const signal = signalOf(transferOptions)
      await withSignal(signal, (abort) => callNativeAsync(() => handle.delete(json, abort)))
    },

    async presign(ref, presignOptions) {
      const json = refJson(ref)
      const signal = signalOf(presignOptions)
      const ttlMs = presignOptions?.ttlMs
      if (ttlMs !== undefined && typeof ttlMs !== 'number') throw storeError('ttlMs must be a number')
      const notAfter = presignOptions?.notAfter
      if (notAfter !== undefined && typeof notAfter !== 'number') throw storeError('notAfter must be epoch milliseconds')
      return withSignal(signal, () => callNativeAsync(() => handle.presign(json, ttlMs, notAfter)))
    },
  }
}

/**
 * The resolved body store limits; a value outside 1..hard is a RangeError.
 * @param {import('../types/bodies').ArtifactBodyLimits} [limits]
 * @returns {import('../types/bodies').ResolvedArtifactBodyLimits}
 */
function resolveArtifactBodyLimits(limits) {
  if (limits !== undefined && !isObject(limits)) throw typeError('limits must be an object')
  return Object.freeze(JSON.parse(callNative(native.bodiesResolveLimits, JSON.stringify(limits ?? {}))))
}

/**
 * The object key a ref's body lives under (unencoded segments joined by `/`).
 * @param {import('../types/bodies').ArtifactBodyRef} ref
 */
function s3ObjectKey(ref) {
  return callNative(native.bodiesObjectKey, refJson(ref))
}

/**
 * AWS SigV4 over the reference's `SigV4SignInput` → `{ signature, canonicalRequest }`.
 * @param {import('../types/bodies').SigV4SignInput} input
 * @returns {Promise<{ readonly signature: string, readonly canonicalRequest: string }>}
 */
async function signV4(input) {
  if (!isObject(input)) throw typeError('signV4(input): input must be an object')
  return JSON.parse(callNative(native.bodiesSignV4, JSON.stringify(input)))
}

/**
 * Lowercase hex SHA-256 of `data`.
 * @param {Uint8Array} data
 */
async function sha256Hex(data) {
  if (!(data instanceof Uint8Array)) throw typeError('sha256Hex(data): data must be a Uint8Array')
  return native.bodiesSha256Hex(asBuffer(data))
}

module.exports = {
  createS3ArtifactBodyStore,
  resolveArtifactBodyLimits,
  s3ObjectKey,
  signV4,
  sha256Hex,
  S3ArtifactBodyError,
  DEFAULT_ARTIFACT_BODY_LIMITS: Object.freeze({ ...CONSTANTS.defaults }),
  HARD_ARTIFACT_BODY_LIMITS: Object.freeze({ ...CONSTANTS.hard }),
}
