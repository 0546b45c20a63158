'use strict'
// Language intelligence: LanguageIntelligence / createLanguageIntelligence (a robust LSP
// client whose process I/O runs on the native tokio runtime), encodeLspFrame and
// LspFrameReader.
//
// Every call crosses as JSON text with a numeric token and completes through one callback
// per instance (src/napi/lsp.rs explains why); an AbortSignal calls the native
// `cancel(token)`, which drops the Rust request (sending `$/cancelRequest`). The rename
// policy is consulted here, between the native plan (nothing written) and the native apply.

const native = require('./native.js')
const { callNative, translate, toJson, LanguageIntelligenceError, typeError, describe, isObject } = require('./errors.js')

function callOptions(options) {
  if (options === undefined) return undefined
  if (!isObject(options)) throw typeError(`options must be an object, got ${describe(options)}`)
  const signal = options.signal
  if (signal === undefined) return undefined
  if (!isObject(signal) || typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
    throw typeError('options.signal must be an AbortSignal')
  }
  return signal
}

function abortReason(signal) {
  if (signal.reason !== undefined) return signal.reason
  const e = new Error('This operation was aborted')
  e.name = 'AbortError'
  return e
}

/** A language-server client over a workspace; see README "Language intelligence". */
class LanguageIntelligence {
  #native
  #policy
  /** token → { resolve, reject } of every outstanding native call. */
  #calls = new Map()
  #nextToken = 1

  constructor(options) {
    if (!isObject(options)) throw typeError(`options must be an object, got ${describe(options)}`)
    const { policy, ...rest } = options
    if (policy !== undefined && (!isObject(policy) || typeof policy.check !== 'function')) {
      throw typeError('options.policy must be an object with a check(action) function')
    }
    this.#policy = policy
    const calls = this.#calls
    // One completion callback for every call (see src/napi/lsp.rs). It must not hold the
    // native handle or `this`: the native side holds it strongly.
    const done = (token, ok, text) => {
      const call = calls.get(token)
      if (call === undefined) return
      calls.delete(token)
      if (ok) call.resolve(text)
      else call.reject(translate(new Error(text)))
    }
    this.#native = callNative((json) => new native.NativeLanguageIntelligence(json, done), toJson(rest, typeError))
  }

  /** Start a native operation; resolves with its result's JSON text. */
  #start(op, json, cancellable) {
    const token = this.#nextToken
    this.#nextToken = token >= 0xfffffff0 ? 1 : token + 1
    return {
      token,
      promise: new Promise((resolve, reject) => {
        this.#calls.set(token, { resolve, reject })
        try {
          this.#native.start(op, json, token, cancellable)
        } catch (err) {
          this.#calls.delete(token)
          throw translate(err)
        }
      }),
    }
  }

  async #call(op, input, options) {
    const signal = callOptions(options)
    const json = toJson(input, typeError)
    if (signal && signal.aborted) throw abortReason(signal)
    if (!signal) return JSON.parse(await this.#start(op, json, false).promise)
    const { token, promise } = this.#start(op, json, true)
    const onAbort = () => this.#native.cancel(token)
    signal.addEventListener('abort', onAbort, { once: true })
    try {
      return JSON.parse(await promise)
    } catch (err) {
      if (signal.aborted) throw abortReason(signal)
      throw err
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  /** Open (version 1) or re-send (full-content didChange, version + 1) a file. */
  async syncDocument(file, options) {
    if (typeof file !== 'string') throw typeError(`file must be a string, got ${describe(file)}`)
    return this.#call('syncDocument', { file }, options)
  }

  /** Refresh the diagnostics of `files` and diff them against `previous`. */
  async diagnosticDelta(input, options) {
    if (!isObject(input)) throw typeError(`input must be an object with files, got ${describe(input)}`)
    if (!Array.isArray(input.files)) throw typeError(`input.files must be an array, got ${describe(input.files)}`)
    const payload = { files: input.files }
    if (input.previous !== undefined) payload.previous = input.previous
    return this.#call('diagnosticDelta', payload, options)
  }

  /** The current diagnostics of one file (waiting for its version), or of every open document. */
  async diagnostics(file, options) {
    if (file !== undefined && typeof file !== 'string') throw typeError(`file must be a string, got ${describe(file)}`)
    return this.#call('diagnostics', file === undefined ? {} : { file }, options)
  }

  /** Hover text at a location, or undefined. */
  async hover(loc, options) {
    const r = await this.#call('hover', location(loc), options)
    return r === null ? undefined : r
  }

  /** Definition locations of the symbol at a location. */
  async definitions(loc, options) {
    return this.#call('definitions', location(loc), options)
  }

  /** Reference locations (declaration included) of the symbol at a location. */
  async references(loc, options) {
    return this.#call('references', location(loc), options)
  }

  /** Symbols matching `query` across every configured server. */
  async workspaceSymbols(query, options) {
    if (typeof query !== 'string') throw typeError(`query must be a string, got ${describe(query)}`)
    return this.#call('workspaceSymbols', { query }, options)
  }

  /** Rename the symbol at a location: policy-checked, then atomic writes. */
  async rename(input, options) {
    const loc = location(input)
    if (typeof input.newName !== 'string') throw typeError(`newName must be a string, got ${describe(input.newName)}`)
    const plan = await this.#call('renamePlan', { ...loc, newName: input.newName }, options)
    if (plan.edits.length === 0) return { edits: [] }
    if (this.#policy !== undefined) {
      let decision
      try {
        decision = await this.#policy.check({ kind: 'edit', operation: 'rename', paths: [...plan.paths], risk: 'high' })
      } catch (err) {
        await this.#discard(plan.plan)
        throw new LanguageIntelligenceError(
          'WORKSPACE',
          `rename refused: the policy check failed: ${err && err.message ? err.message : String(err)}`,
          { cause: err },
        )
      }
      if (!isObject(decision) || decision.allowed !== true) {
        await this.#discard(plan.plan)
        const reason = isObject(decision) && typeof decision.reason === 'string' ? `: ${decision.reason}` : ''
        throw new LanguageIntelligenceError('WORKSPACE', `rename denied by policy${reason}`)
      }
    }
    // Once writing starts it finishes: an abort after this point does not stop it.
    const signal = callOptions(options)
    if (signal && signal.aborted) {
      await this.#discard(plan.plan)
      throw abortReason(signal)
    }
    return this.#call('renameApply', { plan: plan.plan })
  }

  async #discard(plan) {
    try {
      await this.#call('renameDiscard', { plan })
    } catch {
      // The plan expires on its own.
    }
  }

  /** shutdown, exit, close stdin, SIGTERM, then SIGKILL every server's process group. */
  async dispose() {
    await this.#start('dispose', '{}', false).promise
  }
}

function location(loc) {
  if (!isObject(loc)) throw typeError(`location must be an object { file, line, character }, got ${describe(loc)}`)
  const { file, line, character } = loc
  if (typeof file !== 'string') throw typeError(`location.file must be a string, got ${describe(file)}`)
  for (const [k, v] of [['line', line], ['character', character]]) {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw typeError(`location.${k} must be a non-negative integer, got ${describe(v) === 'number' ? v : describe(v)}`)
    }
  }
  return { file, line, character }
}

/** Create a LanguageIntelligence. Nothing is spawned until the first call that needs a server. */
function createLanguageIntelligence(options) {
  return new LanguageIntelligence(options)
}

/**
 * A frame that cannot be read or written: `ERR_PRISM_LSP_FRAMING` (malformed) or
 * `ERR_PRISM_LSP_LIMIT` (over the cap). A `LanguageIntelligenceError`; the constructor
 * takes `(code, message)` as @arnilo/prism's.
 */
class LspFrameError extends LanguageIntelligenceError {}
Object.defineProperty(LspFrameError.prototype, 'name', { value: 'LspFrameError', writable: true, configurable: true })

/** Native frame failures as `LspFrameError`; anything else as translated. */
function frameCall(fn, ...args) {
  try {
    return fn(...args)
  } catch (err) {
    const e = translate(err)
    if (e instanceof LanguageIntelligenceError && !(e instanceof LspFrameError)) throw new LspFrameError(e.code, e.message)
    throw e
  }
}

/** One LSP frame (`Content-Length` header + UTF-8 JSON body) for a JSON-RPC message. */
function encodeLspFrame(message) {
  if (!isObject(message) && !Array.isArray(message)) {
    throw typeError(`message must be an object, got ${describe(message)}`)
  }
  return frameCall(native.lspEncodeFrame, toJson(message, typeError))
}

/** Incremental, bounded frame decoder: push bytes, get complete messages. */
class LspFrameReader {
  #native

  /** `new LspFrameReader(maxMessageBytes)` (as @arnilo/prism) or `new LspFrameReader({ maxMessageBytes })`. */
  constructor(options) {
    let max = options
    if (isObject(options)) max = options.maxMessageBytes
    else if (options !== undefined && typeof options !== 'number') {
      throw typeError(`maxMessageBytes must be a number or { maxMessageBytes }, got ${describe(options)}`)
    }
    if (max !== undefined && typeof max !== 'number') {
      throw typeError(`maxMessageBytes must be a number, got ${describe(max)}`)
    }
    this.#native = callNative((m) => new native.NativeLspFrameReader(m), max)
  }

  /** Append bytes; returns the messages completed by them (possibly none). */
  push(bytes) {
    if (!(bytes instanceof Uint8Array)) throw typeError(`bytes must be a Uint8Array, got ${describe(bytes)}`)
    const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    return JSON.parse(frameCall((b) => this.#native.push(b), buf))
  }

  /** Bytes received but not yet returned as a message. */
  get buffered() {
    return this.#native.buffered
  }
}

/**
 * `text` with LSP text edits applied (0-based lines, UTF-16 characters; each edit
 * `{ range: { start, end }, newText }` or `{ line, character, endLine, endCharacter,
 * newText }`). Positions past a line's or the text's end clamp to it; overlapping edits
 * are a RangeError.
 */
function applyTextEdits(text, edits) {
  if (typeof text !== 'string') throw typeError(`text must be a string, got ${describe(text)}`)
  if (!Array.isArray(edits)) throw typeError(`edits must be an array, got ${describe(edits)}`)
  const spans = JSON.parse(callNative(native.lspTextEditSpans, text, toJson(edits, typeError)))
  let out = ''
  let at = 0
  for (const [start, end, index] of spans) {
    out += text.slice(at, start) + edits[index].newText
    at = end
  }
  return out + text.slice(at)
}

/** Every cap of a LanguageIntelligence for `limits` (defaults filled in); RangeError outside `1..hard`. */
function resolveLanguageIntelligenceLimits(limits) {
  if (limits !== undefined && !isObject(limits)) throw typeError(`limits must be an object, got ${describe(limits)}`)
  return JSON.parse(callNative(native.lspResolveLimits, toJson(limits ?? null, typeError)))
}

module.exports = {
  resolveLanguageIntelligenceLimits,
  LanguageIntelligence, createLanguageIntelligence, encodeLspFrame, LspFrameReader, LspFrameError, applyTextEdits }
