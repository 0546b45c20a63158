'use strict'
// createArtifactHandler: a WHATWG fetch handler over the artifact service. Routing, id
// and body checks, the error → status table, operation names and secret bounds are Rust
// (src/http/, src/artifacts/); this file is the request/response plumbing. Mounting in
// node:http is `toNodeListener` (js/node-listener.js).

const native = require('./native.js')
const { ArtifactError, callNative, typeError } = require('./errors.js')
const artifacts = require('./artifacts.js')
const { jsonTextResponse } = require('./node-listener.js')

const TABLE = JSON.parse(callNative(native.httpStatusTable))
const REASON_STATUS = new Map(Object.entries(TABLE.reasons))
const SERVICE_METHODS = JSON.parse(native.artifactsConstants()).operations
const OWNERSHIP_KEYS = ['tenantId', 'accountId', 'userId']
const OPTION_KEYS = ['service', 'authorize', 'linkSecret', 'basePath', 'redactor', 'limits']
const MAX_MESSAGE_CHARS = 1024
// The one body sent when even the redactor failed: constant, carries no data.
const INTERNAL_BODY = '{"error":{"code":"internal","message":"internal error"}}'

/** An error the handler answers with a JSON error body. */
class HttpFailure {
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

function resolveOptions(options) {
  if (options === null || typeof options !== 'object') {
    throw typeError('createArtifactHandler(options): options must be an object')
  }
  for (const k of Object.keys(options)) {
    if (!OPTION_KEYS.includes(k)) throw typeError(`createArtifactHandler: options.${k} is not a known option`)
  }
  const { service, authorize, linkSecret, redactor, limits } = options
  if (service === null || (typeof service !== 'object' && typeof service !== 'function')) {
    throw typeError('createArtifactHandler: options.service must be an artifact service object')
  }
  for (const m of SERVICE_METHODS) {
    if (typeof service[m] !== 'function') {
      throw typeError(`createArtifactHandler: options.service.${m} must be a function`)
    }
  }
  if (typeof authorize !== 'function') {
    throw typeError('createArtifactHandler: options.authorize must be a function')
  }
  const secretBytes =
    typeof linkSecret === 'string' ? Buffer.byteLength(linkSecret) : linkSecret instanceof Uint8Array ? linkSecret.byteLength : -1
  if (secretBytes < TABLE.minSecretBytes || secretBytes > TABLE.maxSecretBytes) {
    throw typeError(
      `createArtifactHandler: options.linkSecret must be a string or Uint8Array of ${TABLE.minSecretBytes}..${TABLE.maxSecretBytes} bytes`,
    )
  }
  const basePath = options.basePath === undefined ? TABLE.defaultBasePath : options.basePath
  if (typeof basePath !== 'string') {
    throw typeError('createArtifactHandler: options.basePath must be a string')
  }
  const base = callNative(native.httpValidateBasePath, basePath)
  if (redactor !== undefined && (redactor === null || typeof redactor !== 'object' || typeof redactor.redact !== 'function')) {
    throw typeError('createArtifactHandler: options.redactor must be an object with a redact(value) method')
  }
  // ArtifactLimits as the service takes them: maxRequestBytes bounds bodies here, and
  // deliveryLinkTokenBytes bounds links on download (else the service's own cap).
  const resolved = artifacts.resolveArtifactLimits(limits)
  const serviceTokenBytes = service.limits && service.limits.deliveryLinkTokenBytes
  const tokenBytes =
    (limits && limits.deliveryLinkTokenBytes) ?? (Number.isSafeInteger(serviceTokenBytes) ? serviceTokenBytes : resolved.deliveryLinkTokenBytes)
  // The link secret as it would appear inside JSON text, to scrub it from any response.
  const secretText = typeof linkSecret === 'string' && linkSecret.length >= 4 ? JSON.stringify(linkSecret).slice(1, -1) : null
  return { service, authorize, linkSecret, base, redactor, maxRequestBytes: resolved.maxRequestBytes, tokenBytes, secretText }
}

/**
 * `createArtifactHandler({ service, authorize, linkSecret, basePath?, redactor?, limits? })`
 * → `(request: Request) => Promise<Response>`.
 */
function createArtifactHandler(options) {
  const ctx = resolveOptions(options)
  return async function artifactHandler(request) {
    if (!(request instanceof Request)) {
      throw typeError('artifactHandler(request): request must be a WHATWG Request')
    }
    try {
      return await handle(ctx, request)
    } catch (err) {
      return failureResponse(ctx, toFailure(err, request.signal))
    }
  }
}

async function handle(ctx, request) {
  let url
  try {
    url = new URL(request.url)
  } catch {
    throw new HttpFailure(400, 'invalid_input', 'the request URL is not valid')
  }
  const route = JSON.parse(callNative(native.httpMatchRoute, ctx.base, request.method, url.pathname))
  if (route.error) throw new HttpFailure(route.error.status, route.error.code, route.error.message)
  const { operation, method, threadId, artifactId } = route
  const signal = request.signal
  if (operation === 'artifact.download') return download(ctx, request, url, signal)

  if (route.body) checkContentLength(ctx, request)
  const auth = await authorizeRequest(ctx, { request, operation, threadId, artifactId, signal })

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
  input.ownership = auth.ownership
  if (auth.identity !== undefined) input.identity = auth.identity
  input.threadId = threadId
  if (artifactId !== undefined) input.artifactId = artifactId
  input.signal = signal
  const result = await raced(ctx.service[method](input), signal)
  return jsonResponse(ctx, TABLE.success[operation] ?? 200, result)
}

function listQuery(params) {
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

async function download(ctx, request, url, signal) {
  const link = url.searchParams.get('link')
  if (link === null || link === '') {
    throw new HttpFailure(400, 'invalid_input', 'query parameter link is required')
  }
  const token = verifyLink(link, ctx.linkSecret, ctx.tokenBytes)
  const auth = await authorizeRequest(ctx, {
    request,
    operation: 'artifact.download',
    threadId: token.threadId,
    artifactId: token.artifactId,
    deliveryToken: token,
    signal,
  })
  if (!sameOwnership(auth.ownership, token)) {
    throw new HttpFailure(403, 'forbidden', 'the delivery link was issued to another owner')
  }
  const input = { ownership: auth.ownership, threadId: token.threadId, artifactId: token.artifactId, signal }
  if (auth.identity !== undefined) input.identity = auth.identity
  const record = await raced(ctx.service.get(input), signal)
  const revisions = record && Array.isArray(record.revisions) ? record.revisions : []
  const revision = revisions.find((r) => r && r.version === token.version)
  if (revision === undefined) {
    throw new HttpFailure(404, 'not_found', 'the linked revision does not exist')
  }
  const out = { artifactId: token.artifactId, threadId: token.threadId, revision }
  // A service with a body store wired adds a fresh presigned URL, valid no longer than the link.
  if (ctx.service[artifacts.BODIES_WIRED] === true) {
    const remaining = Math.floor((Date.parse(token.expiresAt) - Date.now()) / 1000)
    if (remaining < 1) throw new ArtifactError('the delivery link has expired', 'link_expired')
    const max = ctx.service.limits?.deliveryLinkTtlSeconds ?? remaining
    const fresh = await raced(ctx.service.deliveryLink({ ...input, version: token.version, ttlSeconds: Math.min(remaining, max) }), signal)
    out.url = fresh.url
  }
  return jsonResponse(ctx, 200, out)
}

/** Verify a delivery link (size, signature, expiry) → its token. */
function verifyLink(link, secret, maxBytes) {
  const token = artifacts.verifyArtifactDeliveryLink(link, secret, maxBytes)
  if (token === null || typeof token !== 'object' || typeof token.threadId !== 'string' || typeof token.artifactId !== 'string') {
    throw new ArtifactError('the delivery link does not name an artifact', 'invalid_link')
  }
  return token
}

function checkContentLength(ctx, request) {
  const cl = request.headers.get('content-length')
  if (cl !== null && /^[0-9]+$/.test(cl) && Number(cl) > ctx.maxRequestBytes) {
    throw tooLarge(ctx)
  }
}

function tooLarge(ctx) {
  return new HttpFailure(413, 'body_too_large', `request body exceeds ${ctx.maxRequestBytes} bytes`)
}

/** Read the body as UTF-8 text, refusing it as soon as it passes the cap. */
async function readBody(ctx, request, signal) {
  const body = request.body
  if (body === null) return ''
  const reader = body.getReader()
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

/** Call the host's authorize; `{ ownership, identity? }` or a 403 failure. */
async function authorizeRequest(ctx, args) {
  if (args.signal.aborted) throw abortFailure()
  const result = await raced(Promise.resolve().then(() => ctx.authorize(args)), args.signal)
  if (result === false || result === null || result === undefined) {
    throw new HttpFailure(403, 'forbidden', 'not authorized')
  }
  if (typeof result !== 'object') {
    throw new HttpFailure(403, 'forbidden', 'authorization did not yield an ownership')
  }
  const wrapped = Object.prototype.hasOwnProperty.call(result, 'ownership')
  const ownership = wrapped ? result.ownership : result
  const identity = wrapped ? result.identity : undefined
  if (!validOwnership(ownership)) {
    throw new HttpFailure(403, 'forbidden', 'authorization did not yield a valid ownership')
  }
  const clean = {}
  for (const k of OWNERSHIP_KEYS) if (ownership[k] !== undefined) clean[k] = ownership[k]
  if (identity !== undefined && identity !== null) {
    const problem = identityProblem(identity, clean, Date.now())
    if (problem) throw new HttpFailure(403, 'forbidden', `identity refused: ${problem}`)
    return { ownership: clean, identity }
  }
  return { ownership: clean }
}

function validOwnership(o) {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return false
  let some = false
  for (const k of OWNERSHIP_KEYS) {
    const v = o[k]
    if (v === undefined) continue
    if (typeof v !== 'string') return false
    if (v.length > 0) some = true
  }
  return some
}

function sameOwnership(a, b) {
  if (b === null || typeof b !== 'object') return false
  for (const k of OWNERSHIP_KEYS) {
    const x = a[k] === '' ? undefined : a[k]
    const y = b[k] === '' || b[k] === null ? undefined : b[k]
    if (x !== y) return false
  }
  return true
}

function timeOf(v) {
  if (typeof v === 'number') return Number.isFinite(v) ? v : NaN
  if (typeof v === 'string') return Date.parse(v)
  if (v instanceof Date) return v.getTime()
  return NaN
}

/** Why an identity from authorize is refused, or null when it is acceptable. */
function identityProblem(identity, ownership, now) {
  if (typeof identity !== 'object') return 'not an object'
  if (identity.verified !== true) return 'not verified'
  const p = identity.principal
  if (p === null || typeof p !== 'object' || typeof p.kind !== 'string' || typeof p.id !== 'string' || !p.kind || !p.id) {
    return 'principal must have a kind and an id'
  }
  if (identity.expiresAt !== undefined && identity.expiresAt !== null) {
    const t = timeOf(identity.expiresAt)
    if (Number.isNaN(t)) return 'expiresAt is not a time'
    if (t <= now) return 'expired'
  }
  if (identity.revokedAt !== undefined && identity.revokedAt !== null) {
    const t = timeOf(identity.revokedAt)
    if (Number.isNaN(t) || t <= now) return 'revoked'
  }
  for (const k of OWNERSHIP_KEYS) {
    const v = identity[k]
    if (v === undefined || v === null) continue
    if (typeof v !== 'string') return `${k} must be a string`
    if (ownership[k] !== undefined && ownership[k] !== v) return `${k} conflicts with the ownership`
  }
  return null
}

/** Await `promise`, but stop waiting (and fail) as soon as `signal` aborts. */
function raced(promise, signal) {
  if (!signal) return promise
  if (signal.aborted) {
    Promise.resolve(promise).catch(() => {})
    return Promise.reject(abortFailure())
  }
  return new Promise((resolve, reject) => {
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

function clip(message) {
  const m = typeof message === 'string' ? message : ''
  return m.length > MAX_MESSAGE_CHARS ? m.slice(0, MAX_MESSAGE_CHARS) + '…' : m
}

/** Map anything thrown to an HttpFailure; unknown errors never show their message. */
function toFailure(err, signal) {
  if (err instanceof HttpFailure) return err
  if (signal && signal.aborted) return abortFailure()
  if (err !== null && typeof err === 'object') {
    if (err.code === 'ERR_PRISM_ARTIFACT' && typeof err.reason === 'string') {
      const status = REASON_STATUS.get(err.reason)
      if (status !== undefined) return new HttpFailure(status, err.reason, clip(err.message))
    }
    if (err.code === 'ERR_PRISM_CHECKPOINT_CONFLICT') {
      return new HttpFailure(409, 'conflict', 'the artifact changed concurrently; retry')
    }
    // A value out of range (a ttlSeconds over the cap) is bad input, as the reference's.
    if (err instanceof RangeError) return new HttpFailure(400, 'invalid_input', clip(err.message))
  }
  return new HttpFailure(500, 'internal', 'internal error')
}

function failureResponse(ctx, f) {
  return jsonResponse(ctx, f.status, { error: { code: f.code, message: f.message } })
}

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
