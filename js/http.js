'use strict'
// createArtifactHandler: a WHATWG fetch handler over the artifact service. Routing, id
// and body checks, the error → status table, operation names and secret bounds are Rust
// (src/http/, src/artifacts/); this file is the request/response plumbing. Mounting in
// node:http is `toNodeListener` (js/node-listener.js).

const native = require('./native.js')
const { ArtifactError, callNative, typeError } = require('./errors.js')
const { readInput, jsonOf } = require('./input.js')
const artifacts = require('./artifacts.js')
const { jsonTextResponse } = require('./node-listener.js')

/**
 * The native HTTP tables (src/http/status.rs).
 * @typedef {{ reasons: Record<string, number>, codes: Record<string, { status: number, code: string, message: string }>,
 *   success: Record<string, number>, minSecretBytes: number, maxSecretBytes: number, defaultBasePath: string,
 *   downloadOperation: string }} StatusTable
 */
/** @type {StatusTable} */
const TABLE = JSON.parse(callNative(native.httpStatusTable))
const REASON_STATUS = new Map(Object.entries(TABLE.reasons))
/** @type {string[]} */
const SERVICE_METHODS = JSON.parse(native.artifactsConstants()).operations
const CODE_STATUS = new Map(Object.entries(TABLE.codes))
const OPTION_KEYS = ['service', 'authorize', 'linkSecret', 'basePath', 'redactor', 'limits']
const MAX_MESSAGE_CHARS = 1024
// The one body sent when even the redactor failed: constant, carries no data.
const INTERNAL_BODY = '{"error":{"code":"internal","message":"internal error"}}'

/**
 * A service as the handlers call it: its methods take a request object and answer a
 * promise of a JSON value (checked as it is read); `limits` may be there.
 * @typedef {{ [method: string]: unknown, limits?: unknown }} ServiceLike
 */

/**
 * What a handler resolved from its options (js/drafts-http.js builds one too).
 * @typedef {object} HandlerContext
 * @property {ServiceLike} service
 * @property {(input: object) => unknown} authorize
 * @property {string} base
 * @property {{ redact(value: unknown): unknown } | undefined} redactor
 * @property {number} maxRequestBytes
 * @property {string | null} secretText
 * @property {unknown} [linkSecret]
 * @property {number} [tokenBytes]
 */

/** An error the handler answers with a JSON error body. */
class HttpFailure {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    this.status = status
    this.code = code
    this.message = message
  }
}

function abortFailure() {
  // 499: the client closed the request; nobody reads this response.
  return new HttpFailure(499, 'aborted', 'the request was aborted')
}

/**
 * Everything of the caller's options the handler reads, read once: a throwing getter or
 * Proxy trap is a TypeError with the caller's error as `cause`, never the raw error.
 * @param {object} options
 */
function readOptions(options) {
  return readInput('createArtifactHandler(options)', () => {
    // The caller's options, its members not yet checked.
    const from = /** @type {Record<string, unknown>} */ (options)
    /** @type {Record<string, unknown>} */
    const given = {}
    for (const k of Object.keys(from)) given[k] = from[k]
    const { service, linkSecret, redactor, limits } = given
    const isService = service !== null && (typeof service === 'object' || typeof service === 'function')
    // Members of whatever object `service` is are read as its methods and limits.
    const members = /** @type {ServiceLike} */ (service)
    const serviceLimits = isService ? members.limits : undefined
    return {
      given,
      methodTypes: isService ? SERVICE_METHODS.map((m) => typeof members[m]) : [],
      serviceTokenBytes:
        serviceLimits !== null && typeof serviceLimits === 'object' ? /** @type {{ deliveryLinkTokenBytes?: unknown }} */ (serviceLimits).deliveryLinkTokenBytes : undefined,
      secretBytes:
        typeof linkSecret === 'string' ? Buffer.byteLength(linkSecret) : linkSecret instanceof Uint8Array ? linkSecret.byteLength : -1,
      redactType: redactor !== null && typeof redactor === 'object' ? typeof (/** @type {{ redact?: unknown }} */ (redactor).redact) : 'none',
      // A plain copy, so resolving the limits runs none of the caller's code.
      limits: limits !== null && typeof limits === 'object' && !Array.isArray(limits) ? { ...limits } : limits,
    }
  })
}

/**
 * @param {import('../types/http').CreateArtifactHandlerOptions} options
 * @returns {HandlerContext}
 */
function resolveOptions(options) {
  if (options === null || typeof options !== 'object') {
    throw typeError('createArtifactHandler(options): options must be an object')
  }
  const o = readOptions(options)
  for (const k of Object.keys(o.given)) {
    if (!OPTION_KEYS.includes(k)) throw typeError(`createArtifactHandler: options.${k} is not a known option`)
  }
  const { service, authorize, linkSecret, redactor } = o.given
  // A plain copy of the caller's limits (resolveArtifactLimits checks it).
  const limits = /** @type {import('../types/artifacts').ArtifactLimits | undefined} */ (o.limits)
  if (service === null || (typeof service !== 'object' && typeof service !== 'function')) {
    throw typeError('createArtifactHandler: options.service must be an artifact service object')
  }
  SERVICE_METHODS.forEach((m, i) => {
    if (o.methodTypes[i] !== 'function') {
      throw typeError(`createArtifactHandler: options.service.${m} must be a function`)
    }
  })
  if (typeof authorize !== 'function') {
    throw typeError('createArtifactHandler: options.authorize must be a function')
  }
  if (o.secretBytes < TABLE.minSecretBytes || o.secretBytes > TABLE.maxSecretBytes) {
    throw typeError(
      `createArtifactHandler: options.linkSecret must be a string or Uint8Array of ${TABLE.minSecretBytes}..${TABLE.maxSecretBytes} bytes`,
    )
  }
  const basePath = o.given.basePath === undefined ? TABLE.defaultBasePath : o.given.basePath
  if (typeof basePath !== 'string') {
    throw typeError('createArtifactHandler: options.basePath must be a string')
  }
  const base = callNative(native.httpValidateBasePath, basePath)
  if (redactor !== undefined && o.redactType !== 'function') {
    throw typeError('createArtifactHandler: options.redactor must be an object with a redact(value) method')
  }
  const serviceTokenBytes = o.serviceTokenBytes
  // ArtifactLimits as the service takes them: maxRequestBytes bounds bodies here, and
  // deliveryLinkTokenBytes bounds links on download (else the service's own cap).
  const resolved = artifacts.resolveArtifactLimits(limits)
  const tokenBytes =
    (limits && limits.deliveryLinkTokenBytes) ?? (typeof serviceTokenBytes === 'number' && Number.isSafeInteger(serviceTokenBytes) ? serviceTokenBytes : resolved.deliveryLinkTokenBytes)
  // The link secret as it would appear inside JSON text, to scrub it from any response.
  const secretText = typeof linkSecret === 'string' && linkSecret.length >= 4 ? JSON.stringify(linkSecret).slice(1, -1) : null
  // Checked above: an object or function with every service method, a function, and an
  // object with a redact method (or undefined).
  return {
    service: /** @type {ServiceLike} */ (service),
    authorize: /** @type {(input: object) => unknown} */ (authorize),
    linkSecret,
    base,
    redactor: /** @type {{ redact(value: unknown): unknown } | undefined} */ (redactor),
    maxRequestBytes: resolved.maxRequestBytes,
    tokenBytes,
    secretText,
  }
}

/**
 * `createArtifactHandler({ service, authorize, linkSecret, basePath?, redactor?, limits? })`
 * → `(request: Request) => Promise<Response>`.
 * @param {import('../types/http').CreateArtifactHandlerOptions} options
 * @returns {import('../types/http').PrismRequestHandler}
 */
function createArtifactHandler(options) {
  return fetchHandler('artifactHandler', resolveOptions(options), handle, toFailure)
}

/**
 * The fetch handler `name` of both handlers: `handle(ctx, request)`, any failure answered
 * with the error body of `failure(err, signal)`.
 * @param {string} name
 * @param {HandlerContext} ctx
 * @param {(ctx: HandlerContext, request: Request) => Promise<Response>} handle
 * @param {(err: unknown, signal: AbortSignal) => HttpFailure} failure
 * @returns {import('../types/http').PrismRequestHandler}
 */
function fetchHandler(name, ctx, handle, failure) {
  const handler = async (/** @type {Request} */ request) => {
    if (!(request instanceof Request)) throw typeError(`${name}(request): request must be a WHATWG Request`)
    try {
      return await handle(ctx, request)
    } catch (err) {
      return failureResponse(ctx, failure(err, request.signal))
    }
  }
  return Object.defineProperty(handler, 'name', { value: name })
}

/**
 * The request's URL, parsed (an invalid one is a 400).
 * @param {Request} request
 */
function requestUrl(request) {
  try {
    return new URL(request.url)
  } catch {
    throw new HttpFailure(400, 'invalid_input', 'the request URL is not valid')
  }
}

/**
 * The service request of a routed call: `input` (the checked body or list query) with the
 * authorized ownership and identity, the path's ids (`idKey`: artifactId or draftId) and
 * the request's signal.
 * @param {Record<string, unknown>} input
 * @param {{ ownership: unknown, identity?: unknown }} auth
 * @param {string} threadId
 * @param {string} idKey
 * @param {string | undefined} id
 * @param {AbortSignal} signal
 */
function serviceInput(input, auth, threadId, idKey, id, signal) {
  input.ownership = auth.ownership
  if (auth.identity !== undefined) input.identity = auth.identity
  input.threadId = threadId
  if (id !== undefined) input[idKey] = id
  input.signal = signal
  return input
}

/**
 * The service method `method` of `ctx.service` on `input`, raced against `signal`.
 * @param {HandlerContext} ctx
 * @param {string} method
 * @param {object} input
 * @param {AbortSignal} signal
 * @returns {Promise<unknown>}
 */
function callService(ctx, method, input, signal) {
  // resolveOptions checked that every service method is a function.
  const fn = /** @type {(input: object) => unknown} */ (ctx.service[method])
  return raced(fn.call(ctx.service, input), signal)
}

/**
 * @param {HandlerContext} ctx
 * @param {Request} request
 * @returns {Promise<Response>}
 */
async function handle(ctx, request) {
  const url = requestUrl(request)
  // A body route refuses a Content-Type other than JSON (415) here, before authorize.
  const contentType = request.headers.get('content-type') ?? undefined
  const route = JSON.parse(callNative(native.httpMatchRoute, ctx.base, request.method, url.pathname, contentType))
  if (route.error) throw new HttpFailure(route.error.status, route.error.code, route.error.message)
  const { operation, method, threadId, artifactId } = route
  const signal = request.signal
  if (operation === TABLE.downloadOperation) return download(ctx, request, url, signal)

  if (route.body) checkContentLength(ctx, request)
  const auth = await authorizeRequest(ctx, { request, operation, threadId, artifactId, signal })

  /** @type {Record<string, unknown>} */
  let input = {}
  if (route.body) {
    const text = await readBody(ctx, request, signal)
    const checked = JSON.parse(callNative(native.httpCheckBody, operation, text, threadId, artifactId))
    if (checked.error) throw new HttpFailure(checked.error.status, checked.error.code, checked.error.message)
    // Own data properties (a "__proto__" key stays data, never a prototype); the service
    // refuses such keys.
    input = checked.body
  } else if (method === 'list') {
    input = listQuery(url.searchParams)
  }
  const result = await callService(ctx, method, serviceInput(input, auth, threadId, 'artifactId', artifactId, signal), signal)
  return jsonResponse(ctx, TABLE.success[operation] ?? 200, result)
}

/**
 * @param {URLSearchParams} params
 * @returns {Record<string, unknown>}
 */
function listQuery(params) {
  /** @type {Record<string, unknown>} */
  const out = {}
  const cursor = params.get('cursor')
  if (cursor !== null) out.cursor = cursor
  const limit = params.get('limit')
  if (limit !== null) {
    if (!/^[0-9]{1,9}$/.test(limit)) {
      throw new HttpFailure(400, 'invalid_input', 'query parameter limit must be a non-negative integer')
    }
    out.limit = Number(limit)
  }
  return out
}

/**
 * @param {HandlerContext} ctx
 * @param {Request} request
 * @param {URL} url
 * @param {AbortSignal} signal
 * @returns {Promise<Response>}
 */
async function download(ctx, request, url, signal) {
  const link = url.searchParams.get('link')
  if (link === null || link === '') {
    throw new HttpFailure(400, 'invalid_input', 'query parameter link is required')
  }
  const token = verifyLink(link, ctx.linkSecret, ctx.tokenBytes)
  const auth = await authorizeRequest(ctx, {
    request,
    operation: TABLE.downloadOperation,
    threadId: token.threadId,
    artifactId: token.artifactId,
    deliveryToken: token,
    signal,
  })
  /** @type {Record<string, unknown>} */
  const input = { ownership: auth.ownership, threadId: token.threadId, artifactId: token.artifactId, signal }
  if (auth.identity !== undefined) input.identity = auth.identity
  // The service's record, read as far as it has revisions.
  const record = /** @type {{ revisions?: unknown } | null | undefined} */ (await callService(ctx, 'get', input, signal))
  /** @type {unknown[]} */
  const revisions = record && Array.isArray(record.revisions) ? record.revisions : []
  const revision = revisions.find((r) => r && /** @type {{ version?: unknown }} */ (r).version === token.version)
  if (revision === undefined) {
    throw new HttpFailure(404, 'not_found', 'the linked revision does not exist')
  }
  /** @type {{ artifactId: string, threadId: string, revision: unknown, url?: unknown }} */
  const out = { artifactId: token.artifactId, threadId: token.threadId, revision }
  // A service with a body store wired adds a fresh presigned URL, valid no longer than the link.
  if (/** @type {Record<symbol, unknown>} */ (ctx.service)[artifacts.BODIES_WIRED] === true) {
    const remaining = Math.floor((Date.parse(token.expiresAt) - Date.now()) / 1000)
    if (remaining < 1) throw new ArtifactError('the delivery link has expired', 'link_expired')
    // Such a service is ours (createArtifactService): its limits and deliveryLink result are typed.
    const limits = /** @type {import('../types/artifacts').ResolvedArtifactLimits | undefined} */ (ctx.service.limits)
    const max = limits?.deliveryLinkTtlSeconds ?? remaining
    const fresh = /** @type {import('../types/artifacts').ArtifactDeliveryResult} */ (
      await callService(ctx, 'deliveryLink', { ...input, version: token.version, ttlSeconds: Math.min(remaining, max) }, signal)
    )
    out.url = fresh.url
  }
  return jsonResponse(ctx, 200, out)
}

/**
 * Verify a delivery link (size, signature, expiry) → its token.
 * @param {string} link
 * @param {unknown} secret
 * @param {number | undefined} maxBytes
 */
function verifyLink(link, secret, maxBytes) {
  // The handler's linkSecret, checked by resolveOptions.
  const token = artifacts.verifyArtifactDeliveryLink(link, /** @type {string | Uint8Array} */ (secret), maxBytes)
  if (token === null || typeof token !== 'object' || typeof token.threadId !== 'string' || typeof token.artifactId !== 'string') {
    throw new ArtifactError('the delivery link does not name an artifact', 'invalid_link')
  }
  return token
}

/**
 * @param {HandlerContext} ctx
 * @param {Request} request
 */
function checkContentLength(ctx, request) {
  const cl = request.headers.get('content-length')
  if (cl !== null && /^[0-9]+$/.test(cl) && Number(cl) > ctx.maxRequestBytes) {
    throw tooLarge(ctx)
  }
}

/** @param {HandlerContext} ctx */
function tooLarge(ctx) {
  return new HttpFailure(413, 'body_too_large', `request body exceeds ${ctx.maxRequestBytes} bytes`)
}

/**
 * Read the body as UTF-8 text, refusing it as soon as it passes the cap.
 * @param {HandlerContext} ctx
 * @param {Request} request
 * @param {AbortSignal} signal
 * @returns {Promise<string>}
 */
async function readBody(ctx, request, signal) {
  const body = request.body
  if (body === null) return ''
  const reader = body.getReader()
  /** @type {Uint8Array[]} */
  const chunks = []
  let total = 0
  try {
    for (;;) {
      const { done, value } = await raced(reader.read(), signal)
      if (done) break
      if (!(value instanceof Uint8Array)) {
        throw new HttpFailure(400, 'invalid_input', 'request body chunks must be bytes')
      }
      total += value.byteLength
      if (total > ctx.maxRequestBytes) throw tooLarge(ctx)
      chunks.push(value)
    }
  } catch (err) {
    reader.cancel().catch(() => {})
    throw err
  }
  const bytes = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total)
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new HttpFailure(400, 'invalid_json', 'request body is not valid UTF-8')
  }
}

/**
 * Call the host's authorize; `{ ownership, identity? }` or a 403 failure. The result is
 * checked natively by the artifact service's own ownership and identity rules (and, on
 * download, against the token's owner), and what was checked is what the service gets.
 * @param {HandlerContext} ctx
 * @param {{ request: Request, operation: string, threadId?: string, signal: AbortSignal, deliveryToken?: object, [id: string]: unknown }} args
 * @returns {Promise<{ ownership: unknown, identity?: unknown }>}
 */
async function authorizeRequest(ctx, args) {
  if (args.signal.aborted) throw abortFailure()
  const result = await raced(Promise.resolve().then(() => ctx.authorize(args)), args.signal)
  const text = jsonOf('the result of authorize', result)
  const token = args.deliveryToken === undefined ? undefined : JSON.stringify(args.deliveryToken)
  const checked = JSON.parse(callNative(native.httpCheckAuthorization, text, token))
  if (checked.error) throw new HttpFailure(checked.error.status, checked.error.code, checked.error.message)
  return checked
}

/**
 * Await `promise`, but stop waiting (and fail) as soon as `signal` aborts.
 * @template T
 * @param {T | Promise<T>} promise
 * @param {AbortSignal | undefined} signal
 * @returns {Promise<T>}
 */
function raced(promise, signal) {
  if (!signal) return Promise.resolve(promise)
  if (signal.aborted) {
    Promise.resolve(promise).catch(() => {})
    return Promise.reject(abortFailure())
  }
  return new Promise((/** @type {(v: T) => void} */ resolve, reject) => {
    const onAbort = () => reject(abortFailure())
    signal.addEventListener('abort', onAbort, { once: true })
    Promise.resolve(promise).then(
      (v) => {
        signal.removeEventListener('abort', onAbort)
        resolve(v)
      },
      (e) => {
        signal.removeEventListener('abort', onAbort)
        reject(e)
      },
    )
  })
}

/** @param {unknown} message */
function clip(message) {
  const m = typeof message === 'string' ? message : ''
  return m.length > MAX_MESSAGE_CHARS ? m.slice(0, MAX_MESSAGE_CHARS) + '…' : m
}

/**
 * Map anything thrown to an HttpFailure; unknown errors never show their message.
 * @param {unknown} err
 * @param {AbortSignal | undefined} signal
 */
function toFailure(err, signal) {
  if (err instanceof HttpFailure) return err
  try {
    return knownFailure(err, signal)
  } catch {
    // A host error whose getters or traps throw while we read it.
    return new HttpFailure(500, 'internal', 'internal error')
  }
}

/**
 * @param {unknown} err
 * @param {AbortSignal | undefined} signal
 */
function knownFailure(err, signal) {
  if (signal && signal.aborted) return abortFailure()
  if (err !== null && typeof err === 'object') {
    /** @type {{ code?: unknown, reason?: unknown, message?: unknown }} */
    const e = err
    if (e.code === 'ERR_PRISM_ARTIFACT' && typeof e.reason === 'string') {
      const status = REASON_STATUS.get(e.reason)
      if (status !== undefined) return new HttpFailure(status, e.reason, clip(e.message))
    }
    // A store conflict (409) or a store backend failure (503, retryable).
    const known = typeof e.code === 'string' ? CODE_STATUS.get(e.code) : undefined
    if (known !== undefined) return new HttpFailure(known.status, known.code, known.message)
    // A value out of range (a ttlSeconds over the cap) is bad input, as the reference's.
    if (err instanceof RangeError) return new HttpFailure(400, 'invalid_input', clip(err.message))
  }
  return new HttpFailure(500, 'internal', 'internal error')
}

/**
 * @param {HandlerContext} ctx
 * @param {HttpFailure} f
 */
function failureResponse(ctx, f) {
  return jsonResponse(ctx, f.status, { error: { code: f.code, message: f.message } })
}

/**
 * @param {HandlerContext} ctx
 * @param {number} status
 * @param {unknown} value
 * @returns {Promise<Response>}
 */
async function jsonResponse(ctx, status, value) {
  let text
  try {
    const out = ctx.redactor ? await ctx.redactor.redact(value === undefined ? null : value) : value
    text = JSON.stringify(out === undefined ? null : out)
    if (ctx.secretText !== null && text.includes(ctx.secretText)) {
      text = text.split(ctx.secretText).join('[REDACTED]')
    }
  } catch {
    text = INTERNAL_BODY
    status = 500
  }
  return jsonTextResponse(text, status)
}

module.exports = { createArtifactHandler }

// Internal helpers shared with the work draft handler (js/drafts-http.js): the fetch
// handler, URL, service input and call, the request size rule, body reading,
// authorization and responses. Non-enumerable, so index.js (which spreads this module)
// does not export them.
Object.defineProperty(module.exports, 'internal', {
  value: {
    HttpFailure,
    fetchHandler,
    requestUrl,
    serviceInput,
    callService,
    checkContentLength,
    readBody,
    authorizeRequest,
    listQuery,
    toFailure,
    jsonResponse,
    clip,
  },
  enumerable: false,
})
