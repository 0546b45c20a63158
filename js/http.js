'use strict'
// HTTP adapter: createArtifactHandler (a WHATWG fetch handler over the artifact service)
// and toNodeListener (mounts any fetch handler in node:http, with the request's
// AbortSignal tied to the client connection). Routing, id/body checks and the error →
// status table are Rust (src/http/); this file is the request/response plumbing.

const native = require('./native.js')
const { ArtifactError, callNative, toJson, typeError, rangeError } = require('./errors.js')
const artifacts = require('./artifacts.js')

const TABLE = JSON.parse(callNative(native.httpStatusTable))
const REASON_STATUS = new Map(Object.entries(TABLE.reasons))
const SUCCESS_STATUS = new Map(Object.entries(TABLE.success))
const BODY_OPERATIONS = new Set(['attach', 'revise', 'compare', 'approve', 'reject', 'deliveryLink'])
const SERVICE_METHODS = ['attach', 'list', 'get', 'revise', 'compare', 'approve', 'reject', 'lastValidated', 'deliveryLink']
const OWNERSHIP_KEYS = ['tenantId', 'accountId', 'userId']
const OPTION_KEYS = ['service', 'authorize', 'linkSecret', 'basePath', 'redactor', 'limits']
const MAX_MESSAGE_CHARS = 1024
// The artifact service's bounds on link secret material (src/artifacts/link.rs).
const MIN_SECRET_BYTES = 16
const MAX_SECRET_BYTES = 4096
const JSON_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
}
// Responses built by the handler, with their JSON text: toNodeListener writes that text
// directly instead of reading the Response body stream back (same bytes, less work).
const RESPONSE_TEXT = new WeakMap()
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
  if (secretBytes < MIN_SECRET_BYTES || secretBytes > MAX_SECRET_BYTES) {
    throw typeError(
      `createArtifactHandler: options.linkSecret must be a string or Uint8Array of ${MIN_SECRET_BYTES}..${MAX_SECRET_BYTES} bytes`,
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
  let maxRequestBytes = TABLE.defaultMaxRequestBytes
  if (limits !== undefined) {
    if (limits === null || typeof limits !== 'object') {
      throw typeError('createArtifactHandler: options.limits must be an object')
    }
    for (const k of Object.keys(limits)) {
      if (k !== 'maxRequestBytes') throw typeError(`createArtifactHandler: limits.${k} is not a known limit (only maxRequestBytes)`)
    }
    const v = limits.maxRequestBytes
    if (v !== undefined) {
      if (typeof v === 'number' && !Number.isFinite(v)) {
        throw rangeError(`limits.maxRequestBytes must be an integer in 1..${TABLE.hardMaxRequestBytes}, got ${v}`)
      }
      maxRequestBytes = callNative(native.httpResolveMaxRequestBytes, toJson(v, typeError))
    }
  }
  // The link secret as it would appear inside JSON text, to scrub it from any response.
  const secretText = typeof linkSecret === 'string' && linkSecret.length >= 4 ? JSON.stringify(linkSecret).slice(1, -1) : null
  // Verify links under the service's own cap on their size when it exposes its limits.
  const tokenBytes = service.limits && service.limits.deliveryTokenBytes
  const verifyOptions = Number.isSafeInteger(tokenBytes) ? { limits: { deliveryTokenBytes: tokenBytes } } : undefined
  return { service, authorize, linkSecret, base, redactor, maxRequestBytes, secretText, verifyOptions }
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
  const { operation, threadId, artifactId } = route
  const signal = request.signal
  if (operation === 'download') return download(ctx, request, url, signal)

  const withBody = BODY_OPERATIONS.has(operation)
  if (withBody) checkContentLength(ctx, request)
  const auth = await authorizeRequest(ctx, { request, operation, threadId, artifactId, signal })

  let input = {}
  if (withBody) {
    const text = await readBody(ctx, request, signal)
    const verdict = callNative(native.httpCheckBody, operation, text)
    if (verdict !== '') {
      const e = JSON.parse(verdict).error
      throw new HttpFailure(e.status, e.code, e.message)
    }
    // Spread defines own properties (a "__proto__" key stays data, never a prototype);
    // the service refuses such keys.
    if (text.trim() !== '') input = { ...JSON.parse(text) }
  } else if (operation === 'list') {
    input = listQuery(url.searchParams)
  }
  input.ownership = auth.ownership
  if (auth.identity !== undefined) input.identity = auth.identity
  input.threadId = threadId
  if (artifactId !== undefined) input.artifactId = artifactId
  input.signal = signal
  const result = await raced(ctx.service[operation](input), signal)
  return jsonResponse(ctx, SUCCESS_STATUS.get(operation) ?? 200, result)
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
  const token = verifyLink(link, ctx.linkSecret, ctx.verifyOptions)
  const auth = await authorizeRequest(ctx, {
    request,
    operation: 'download',
    threadId: token.threadId,
    artifactId: token.artifactId,
    deliveryToken: token,
    signal,
  })
  if (!sameOwnership(auth.ownership, token.ownership)) {
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
  return jsonResponse(ctx, 200, { artifactId: token.artifactId, threadId: token.threadId, revision })
}

/** Verify a delivery link with the artifact service's verifier (signature, then expiry). */
function verifyLink(link, secret, options) {
  const verify = artifacts.verifyArtifactDeliveryLink
  if (typeof verify !== 'function') {
    throw new Error('verifyArtifactDeliveryLink is not available')
  }
  const token = verify(link, secret, options)
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
  const response = new Response(text, { status, headers: JSON_HEADERS })
  RESPONSE_TEXT.set(response, text)
  return response
}

// ---------------------------------------------------------------------------------------
// toNodeListener

const HOST_RE = /^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/

function plainFailure(res, status, code, message) {
  if (res.headersSent || res.destroyed) {
    res.destroy()
    return
  }
  const body = JSON.stringify({ error: { code, message } })
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(body), connection: 'close' })
  res.end(body)
}

/** True when the request announces a body (Content-Length > 0 or chunked). */
function announcesBody(req) {
  const cl = req.headers['content-length']
  if (cl !== undefined && cl !== '0') return true
  return req.headers['transfer-encoding'] !== undefined
}

/** The request body as a pull-driven web stream: nothing is read until the handler reads. */
function nodeBody(req, abortSignal) {
  return new ReadableStream(
    {
      start(controller) {
        const fail = (err) => {
          try {
            controller.error(err)
          } catch {
            /* already closed */
          }
        }
        if (abortSignal.aborted) fail(abortSignal.reason)
        else abortSignal.addEventListener('abort', () => fail(abortSignal.reason), { once: true })
        req.on('error', fail)
        req.on('end', () => {
          try {
            controller.close()
          } catch {
            /* already errored */
          }
        })
        req.on('data', (chunk) => {
          try {
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          } catch {
            req.pause()
            return
          }
          if (controller.desiredSize <= 0) req.pause()
        })
        req.pause()
      },
      pull() {
        req.resume()
      },
      cancel() {
        // Stop reading; the listener closes the connection after the response, so the
        // rest of the body is never read.
        req.pause()
      },
    },
    { highWaterMark: 0 },
  )
}

function toRequest(req, signal) {
  if (typeof req.url !== 'string') return null
  let target = req.url
  if (/^https?:\/\//i.test(target)) {
    // Absolute-form (as sent to proxies): keep only the path and query.
    const u = new URL(target)
    target = u.pathname + u.search
  }
  if (!target.startsWith('/')) return null
  const hostHeader = req.headers.host
  const host = typeof hostHeader === 'string' && HOST_RE.test(hostHeader) ? hostHeader : 'localhost'
  const proto = req.socket && req.socket.encrypted ? 'https' : 'http'
  const headers = new Headers()
  const raw = req.rawHeaders
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1])
  const init = { method: req.method, headers, signal }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    init.body = nodeBody(req, signal)
    init.duplex = 'half'
  }
  return new Request(`${proto}://${host}${target}`, init)
}

function waitDrain(res) {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
  })
}

async function writeResponse(req, res, response) {
  res.statusCode = response.status
  for (const [k, v] of response.headers) {
    if (k !== 'set-cookie') res.setHeader(k, v)
  }
  const cookies = typeof response.headers.getSetCookie === 'function' ? response.headers.getSetCookie() : []
  if (cookies.length > 0) res.setHeader('set-cookie', cookies)
  // A body the handler did not read to the end is never read: close the connection.
  if (announcesBody(req) && !req.complete) res.setHeader('connection', 'close')
  const text = RESPONSE_TEXT.get(response)
  if (text !== undefined && !response.bodyUsed) {
    res.end(req.method === 'HEAD' ? undefined : text)
    return
  }
  if (response.body === null || req.method === 'HEAD') {
    if (response.body !== null) response.body.cancel().catch(() => {})
    res.end()
    return
  }
  const reader = response.body.getReader()
  let held = null
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (res.destroyed) {
        reader.cancel().catch(() => {})
        return
      }
      if (held !== null && !res.write(held)) await waitDrain(res)
      held = value
    }
  } catch {
    res.destroy()
    return
  }
  if (held !== null) res.end(held)
  else res.end()
}

async function serve(handler, req, res) {
  const controller = new AbortController()
  res.on('close', () => {
    if (!res.writableFinished) controller.abort()
  })
  let request
  try {
    request = toRequest(req, controller.signal)
  } catch {
    request = null
  }
  if (request === null) {
    plainFailure(res, 400, 'invalid_input', 'the request cannot be represented as a fetch Request')
    return
  }
  let response
  try {
    response = await handler(request)
  } catch {
    response = null
  }
  if (controller.signal.aborted || res.destroyed) {
    if (response instanceof Response && response.body !== null) response.body.cancel().catch(() => {})
    return
  }
  if (!(response instanceof Response)) {
    plainFailure(res, 500, 'internal', 'internal error')
    return
  }
  await writeResponse(req, res, response)
}

/**
 * `toNodeListener(handler)` → `(req, res) => void` for `http.createServer`. The request
 * handed to `handler` carries an AbortSignal that aborts when the client connection closes
 * before the response is complete.
 */
function toNodeListener(handler) {
  if (typeof handler !== 'function') {
    throw typeError('toNodeListener(handler): handler must be a function (request) => Promise<Response>')
  }
  return function nodeListener(req, res) {
    serve(handler, req, res).catch(() => {
      if (!res.headersSent && !res.destroyed) plainFailure(res, 500, 'internal', 'internal error')
      else res.destroy()
    })
  }
}

module.exports = { createArtifactHandler, toNodeListener }
