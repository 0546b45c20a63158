'use strict'
// createWorkDraftHandler: a WHATWG fetch handler over the work draft service, the sibling
// of createArtifactHandler. Routes, body checks and the reason → status table are Rust
// (src/http/drafts.rs); the request size rule, body reading, authorize, abort handling and
// error bodies are the artifact handler's own (js/http.js). Mount it in node:http with
// toNodeListener.

const native = require('./native.js')
const { callNative, typeError } = require('./errors.js')
const http = require('./http.js')
const { DRAFT_CONSTANTS, resolveWorkDraftLimits } = require('./drafts.js')

const OPTION_KEYS = ['service', 'authorize', 'basePath', 'redactor', 'limits']
const SERVICE_METHODS = ['list', 'get', 'decide']
const { HttpFailure } = http

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
  return { service, authorize, base, redactor, maxRequestBytes, secretText: null }
}

/** `createWorkDraftHandler({ service, authorize, basePath?, redactor?, limits? })` → `(request) => Promise<Response>`. */
function createWorkDraftHandler(options) {
  const ctx = resolveOptions(options)
  return async function workDraftHandler(request) {
    if (!(request instanceof Request)) throw typeError('workDraftHandler(request): request must be a WHATWG Request')
    try {
      return await handle(ctx, request)
    } catch (err) {
      return http.failureResponse(ctx, toFailure(err, request.signal))
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
  const route = JSON.parse(callNative(native.draftsMatchRoute, ctx.base, request.method, url.pathname))
  if (route.error) throw new HttpFailure(route.error.status, route.error.code, route.error.message)
  const { operation, method, threadId, draftId } = route
  const signal = request.signal
  if (route.body) http.checkContentLength(ctx, request)
  const auth = await http.authorizeRequest(ctx, { request, operation, threadId, draftId, signal })
  let input = {}
  if (route.body) {
    const text = await http.readBody(ctx, request, signal)
    const checked = JSON.parse(callNative(native.draftsCheckResumeBody, text, threadId, draftId))
    if (checked.error) throw new HttpFailure(checked.error.status, checked.error.code, checked.error.message)
    input = checked.body
  } else if (method === 'list') {
    input = http.listQuery(url.searchParams)
  }
  input.ownership = auth.ownership
  if (auth.identity !== undefined) input.identity = auth.identity
  input.threadId = threadId
  if (draftId !== undefined) input.draftId = draftId
  input.signal = signal
  const result = await http.raced(ctx.service[method](input), signal)
  return http.jsonResponse(ctx, 200, result)
}

/** A WorkDraftError → its status from the native table; anything else as the artifact handler maps it. */
function toFailure(err, signal) {
  if (err !== null && typeof err === 'object' && err.code === 'ERR_PRISM_WORK_DRAFT' && typeof err.reason === 'string' && !(signal && signal.aborted)) {
    const status = DRAFT_CONSTANTS.reasons[err.reason]
    if (status !== undefined) return new HttpFailure(status, err.reason, http.clip(err.message))
  }
  return http.toFailure(err, signal)
}

module.exports = { createWorkDraftHandler }
