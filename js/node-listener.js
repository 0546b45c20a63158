'use strict'
// toNodeListener: mounts any WHATWG fetch handler, `(request) => Promise<Response>`, in
// node:http. The request handed to the handler carries an AbortSignal that aborts when
// the client connection closes before the response is complete; its body is a
// pull-driven stream (nothing is read until the handler reads). Generic: it knows nothing
// of artifacts.

const { typeError } = require('./errors.js')

const JSON_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
}
// Responses built by `jsonTextResponse`, with their JSON text: the listener writes that
// text directly instead of reading the Response body stream back (same bytes, less work).
/** @type {WeakMap<Response, string>} */
const RESPONSE_TEXT = new WeakMap()

/** @typedef {import('node:http').IncomingMessage} IncomingMessage */
/** @typedef {import('node:http').ServerResponse} ServerResponse */
/** @typedef {(request: Request) => Response | Promise<Response>} FetchHandler */

/**
 * A JSON `Response` of `text` that this listener can write without reading its stream.
 * @param {string} text
 * @param {number} status
 */
function jsonTextResponse(text, status) {
  const response = new Response(text, { status, headers: JSON_HEADERS })
  RESPONSE_TEXT.set(response, text)
  return response
}


const HOST_RE = /^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/

/**
 * @param {ServerResponse} res
 * @param {number} status
 * @param {string} code
 * @param {string} message
 */
function plainFailure(res, status, code, message) {
  if (res.headersSent || res.destroyed) {
    res.destroy()
    return
  }
  const body = JSON.stringify({ error: { code, message } })
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(body), connection: 'close' })
  res.end(body)
}

/**
 * True when the request announces a body (Content-Length > 0 or chunked).
 * @param {IncomingMessage} req
 */
function announcesBody(req) {
  const cl = req.headers['content-length']
  if (cl !== undefined && cl !== '0') return true
  return req.headers['transfer-encoding'] !== undefined
}

/**
 * The request body as a pull-driven web stream: nothing is read until the handler reads.
 * @param {IncomingMessage} req
 * @param {AbortSignal} abortSignal
 * @returns {ReadableStream<Uint8Array>}
 */
function nodeBody(req, abortSignal) {
  return new ReadableStream(
    {
      start(controller) {
        const fail = (/** @type {unknown} */ err) => {
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
        req.on('data', (/** @type {Buffer} */ chunk) => {
          try {
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          } catch {
            req.pause()
            return
          }
          // (A byte stream's desiredSize is null only once it is errored or closed.)
          if (/** @type {number} */ (controller.desiredSize) <= 0) req.pause()
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

/**
 * @param {IncomingMessage} req
 * @param {AbortSignal} signal
 */
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
  const proto = req.socket && /** @type {import('node:tls').TLSSocket} */ (req.socket).encrypted ? 'https' : 'http'
  const headers = new Headers()
  const raw = req.rawHeaders
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1])
  // `duplex` is Node's (undici's) member for a streamed request body; DOM's RequestInit lacks it.
  /** @type {RequestInit & { duplex?: 'half' }} */
  const init = { method: req.method, headers, signal }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    init.body = nodeBody(req, signal)
    init.duplex = 'half'
  }
  return new Request(`${proto}://${host}${target}`, init)
}

/**
 * @param {ServerResponse} res
 * @returns {Promise<void>}
 */
function waitDrain(res) {
  return new Promise((/** @type {() => void} */ resolve) => {
    const done = () => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
  })
}

/**
 * @param {IncomingMessage} req
 * @param {ServerResponse} res
 * @param {Response} response
 */
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
  /** @type {Uint8Array | null} */
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

/**
 * @param {FetchHandler} handler
 * @param {IncomingMessage} req
 * @param {ServerResponse} res
 */
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
 * @param {FetchHandler} handler
 * @returns {import('../types/http').NodeRequestListener}
 */
function toNodeListener(handler) {
  if (typeof handler !== 'function') {
    throw typeError('toNodeListener(handler): handler must be a function (request) => Promise<Response>')
  }
  /**
   * @param {IncomingMessage} req
   * @param {ServerResponse} res
   */
  return function nodeListener(req, res) {
    serve(handler, req, res).catch(() => {
      if (!res.headersSent && !res.destroyed) plainFailure(res, 500, 'internal', 'internal error')
      else res.destroy()
    })
  }
}

module.exports = { toNodeListener }

// Internal, for the artifact handler: non-enumerable, so `index.js` does not export it.
Object.defineProperty(module.exports, 'jsonTextResponse', { value: jsonTextResponse, enumerable: false })
