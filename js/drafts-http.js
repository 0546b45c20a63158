'use strict'
// createWorkDraftHandler: a WHATWG fetch handler over the work draft service, the sibling
// of createArtifactHandler. Routes, body checks and the reason → status table are Rust
// (src/http/drafts.rs); the request size rule, body reading, authorize, abort handling and
// error bodies are the artifact handler's own (js/http.js). Mount it in node:http with
// toNodeListener.

const native = require('./native.js')
const { callNative, typeError } = require('./errors.js')
const http = require('./http.js').internal
const { DRAFT_CONSTANTS, resolveWorkDraftLimits } = require('./drafts.js')

const OPTION_KEYS = ['service', 'authorize', 'basePath', 'redactor', 'limits']
const SERVICE_METHODS = /** @type {const} */ (['list', 'get', 'decide'])
const { HttpFailure } = http

/** @typedef {import('./http.js').HandlerContext} HandlerContext */

/**
 * @param {import('../types/drafts').CreateWorkDraftHandlerOptions} options
 * @returns {HandlerContext}
 */
function resolveOptions(options) {
  if (options === null || typeof options !== 'object') {
    throw typeError('createWorkDraftHandler(options): options must be an object')
  }
  for (const k of Object.keys(options)) {
    if (!OPTION_KEYS.includes(k)) throw typeError(`createWorkDraftHandler: options.${k} is not a known option`)
  }
  const { service, authorize, redactor, limits } = options
  if (service === null || typeof service !== 'object' || SERVICE_METHODS.some((m) => typeof service[m] !== 'function')) {
    throw typeError(`createWorkDraftHandler: options.service must be a work draft service (${SERVICE_METHODS.join(', ')})`)
  }
  if (typeof authorize !== 'function') throw typeError('createWorkDraftHandler: options.authorize must be a function')
  const basePath = options.basePath === undefined ? DRAFT_CONSTANTS.defaultBasePath : options.basePath
  if (typeof basePath !== 'string') throw typeError('createWorkDraftHandler: options.basePath must be a string')
  const base = callNative(native.httpValidateBasePath, basePath)
  if (redactor !== undefined && (redactor === null || typeof redactor !== 'object' || typeof redactor.redact !== 'function')) {
    throw typeError('createWorkDraftHandler: options.redactor must be an object with a redact(value) method')
  }
  const { maxRequestBytes } = resolveWorkDraftLimits(limits)
  // The shared handler plumbing sees the service and authorize untyped: handle() calls
  // them with the inputs they declare.
  return {
    service: /** @type {import('./http.js').ServiceLike} */ (/** @type {unknown} */ (service)),
    authorize: /** @type {(input: object) => unknown} */ (/** @type {unknown} */ (authorize)),
    base,
    redactor,
    maxRequestBytes,
    secretText: null,
  }
}

/**
 * `createWorkDraftHandler({ service, authorize, basePath?, redactor?, limits? })` → `(request) => Promise<Response>`.
 * @param {import('../types/drafts').CreateWorkDraftHandlerOptions} options
 * @returns {import('../types/http').PrismRequestHandler}
 */
function createWorkDraftHandler(options) {
  return http.fetchHandler('workDraftHandler', resolveOptions(options), handle, toFailure)
}

/**
 * @param {HandlerContext} ctx
 * @param {Request} request
 * @returns {Promise<Response>}
 */
async function handle(ctx, request) {
  const url = http.requestUrl(request)
  const route = JSON.parse(callNative(native.draftsMatchRoute, ctx.base, request.method, url.pathname))
  if (route.error) throw new HttpFailure(route.error.status, route.error.code, route.error.message)
  const { operation, method, threadId, draftId } = route
  const signal = request.signal
  if (route.body) http.checkContentLength(ctx, request)
  const auth = await http.authorizeRequest(ctx, { request, operation, threadId, draftId, signal })
  /** @type {Record<string, unknown>} */
  let input = {}
  if (route.body) {
    const text = await http.readBody(ctx, request, signal)
    const checked = JSON.parse(callNative(native.draftsCheckResumeBody, text, threadId, draftId))
    if (checked.error) throw new HttpFailure(checked.error.status, checked.error.code, checked.error.message)
    input = checked.body
  } else if (method === 'list') {
    input = http.listQuery(url.searchParams)
  }
  const result = await http.callService(ctx, method, http.serviceInput(input, auth, threadId, 'draftId', draftId, signal), signal)
  return http.jsonResponse(ctx, 200, result)
}

/**
 * A WorkDraftError → its status from the native table; anything else as the artifact handler maps it.
 * @param {unknown} err
 * @param {AbortSignal | undefined} signal
 */
function toFailure(err, signal) {
  const e = /** @type {{ code?: unknown, reason?: unknown, message?: unknown } | null} */ (err)
  if (e !== null && typeof e === 'object' && e.code === 'ERR_PRISM_WORK_DRAFT' && typeof e.reason === 'string' && !(signal && signal.aborted)) {
    /** @type {number | undefined} */
    const status = DRAFT_CONSTANTS.reasons[e.reason]
    if (status !== undefined) return new HttpFailure(status, e.reason, http.clip(e.message))
  }
  return http.toFailure(err, signal)
}

module.exports = { createWorkDraftHandler }
