'use strict'
// Language intelligence: LanguageIntelligence / createLanguageIntelligence (a robust LSP
// client whose process I/O runs on the native tokio runtime), encodeLspFrame and
// LspFrameReader.
//
// Every call crosses as JSON text with a numeric token and completes through the
// environment's call port, as store and artifact calls do (js/calls.js; src/napi/lsp.rs
// explains why); an AbortSignal calls the native `cancel(token)`, which drops the Rust
// request (sending `$/cancelRequest`). The rename policy is consulted here, between the
// native plan (nothing written) and the native apply.

const native = require('./native.js')
const { invoke, callPort } = require('./calls.js')
const { callNative, translate, LanguageIntelligenceError, typeError, describe, isObject } = require('./errors.js')
// A getter or Proxy trap that throws while the input is read is a TypeError with the
// caller's error as `cause` (js/input.js).
const { readInput, callReading, jsonOf, isNative, fromCaller } = require('./input.js')

const LSP_CONSTANTS = JSON.parse(native.lspConstants())

/** @typedef {import('../types/lsp').LanguageIntelligenceCallOptions} CallOptions */

/**
 * The signal of a call's `options`, checked.
 * @param {CallOptions | undefined} options
 * @returns {AbortSignal | undefined}
 */
function callOptions(options) {
  const { type, signal, ok } = readInput('options', () => {
    if (options === undefined) return { type: null }
    if (!isObject(options)) return { type: describe(options) }
    const signal = options.signal
    if (signal === undefined) return { type: null }
    const ok = isObject(signal) && typeof signal.aborted === 'boolean' && typeof signal.addEventListener === 'function'
    return { type: null, signal, ok }
  })
  if (type !== null) throw typeError(`options must be an object, got ${type}`)
  if (signal === undefined) return undefined
  if (!ok) throw typeError('options.signal must be an AbortSignal')
  // An object with `aborted` and `addEventListener`: used as an AbortSignal.
  return /** @type {AbortSignal} */ (signal)
}

/**
 * What the policy threw, as text: its truthy `message`, else the value itself.
 * @param {unknown} err
 */
function thrownMessage(err) {
  const message = err ? /** @type {{ message?: unknown }} */ (err).message : undefined
  return message ? String(message) : String(err)
}

/** @param {AbortSignal} signal */
function abortReason(signal) {
  if (signal.reason !== undefined) return signal.reason
  const e = new Error('This operation was aborted')
  e.name = 'AbortError'
  return e
}

/** A language-server client over a workspace; see README "Language intelligence". */
class LanguageIntelligence {
  /** @type {import('../binding.js').NativeLanguageIntelligence} */
  #native
  /** @type {import('../types/lsp').LanguageIntelligencePolicy | undefined} */
  #policy

  /** @param {import('../types/lsp').LanguageIntelligenceOptions} options */
  constructor(options) {
    const type = readInput('options', () => (isObject(options) ? null : describe(options)))
    if (type !== null) throw typeError(`options must be an object, got ${type}`)
    const { policy, rest, policyOk } = readInput('options', () => {
      const { policy, ...rest } = options
      const policyOk = policy === undefined || (isObject(policy) && typeof policy.check === 'function')
      return { policy, rest, policyOk }
    })
    if (!policyOk) {
      throw typeError('options.policy must be an object with a check(action) function')
    }
    this.#policy = policy
    this.#native = callNative((json) => new native.NativeLanguageIntelligence(json, callPort()), jsonOf('options', rest))
  }

  /**
   * Start a native operation; resolves with its result's JSON text.
   * @param {string} op
   * @param {string} json
   * @param {boolean} cancellable
   * @returns {{ token: number, promise: Promise<string> }}
   */
  #start(op, json, cancellable) {
    let token = 0
    // The native start answers nothing: the outcome comes later, under `token`. Without a
    // record of call times `invoke` lets the event loop sleep meanwhile rather than turn
    // for the answer: the language server is another process, and on two cores a turning
    // loop took the core it needed (src/napi/lsp.rs).
    const promise = /** @type {Promise<string>} */ (
      invoke((_, t) => {
        token = t
        this.#native.start(op, json, t, cancellable)
        return null
      })
    )
    return { token, promise }
  }

  /**
   * @param {string} op
   * @param {unknown} input
   * @param {CallOptions} [options]
   */
  async #call(op, input, options) {
    const signal = callOptions(options)
    const json = jsonOf('input', input)
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

  /**
   * Open (version 1) or re-send (full-content didChange, version + 1) a file.
   * @param {string} file
   * @param {CallOptions} [options]
   * @returns {Promise<import('../types/lsp').LanguageSyncResult>}
   */
  async syncDocument(file, options) {
    if (typeof file !== 'string') throw typeError(`file must be a string, got ${describe(file)}`)
    return this.#call('syncDocument', { file }, options)
  }

  /**
   * Refresh the diagnostics of `files` and diff them against `previous`.
   * @param {import('../types/lsp').LanguageDiagnosticDeltaInput} input
   * @param {CallOptions} [options]
   * @returns {Promise<import('../types/lsp').LanguageDiagnosticDeltaResult>}
   */
  async diagnosticDelta(input, options) {
    const { type, files, previous } = readInput('input', () =>
      isObject(input) ? { type: null, files: input.files, previous: input.previous } : { type: describe(input) },
    )
    if (type !== null) throw typeError(`input must be an object with files, got ${type}`)
    if (!readInput('input.files', () => Array.isArray(files))) {
      throw typeError(`input.files must be an array, got ${readInput('input.files', () => describe(files))}`)
    }
    /** @type {{ files: unknown, previous?: unknown }} */
    const payload = { files }
    if (previous !== undefined) payload.previous = previous
    return this.#call('diagnosticDelta', payload, options)
  }

  /**
   * The current diagnostics of one file (waiting for its version), or of every open document.
   * @param {string} [file]
   * @param {CallOptions} [options]
   * @returns {Promise<import('../types/diagnostics').NormalizedDiagnostic[]>}
   */
  async diagnostics(file, options) {
    if (file !== undefined && typeof file !== 'string') throw typeError(`file must be a string, got ${describe(file)}`)
    return this.#call('diagnostics', file === undefined ? {} : { file }, options)
  }

  /**
   * Hover text at a location, or undefined.
   * @param {Location} loc
   * @param {CallOptions} [options]
   * @returns {Promise<import('../types/lsp').LanguageHover | undefined>}
   */
  async hover(loc, options) {
    const r = await this.#call('hover', location(loc), options)
    return r === null ? undefined : r
  }

  /**
   * Definition locations of the symbol at a location.
   * @param {Location} loc
   * @param {CallOptions} [options]
   * @returns {Promise<import('../types/lsp').LanguageRange[]>}
   */
  async definitions(loc, options) {
    return this.#call('definitions', location(loc), options)
  }

  /**
   * Reference locations (declaration included) of the symbol at a location.
   * @param {Location} loc
   * @param {CallOptions} [options]
   * @returns {Promise<import('../types/lsp').LanguageRange[]>}
   */
  async references(loc, options) {
    return this.#call('references', location(loc), options)
  }

  /**
   * Symbols matching `query` across every configured server.
   * @param {string} query
   * @param {CallOptions} [options]
   * @returns {Promise<import('../types/lsp').LanguageSymbol[]>}
   */
  async workspaceSymbols(query, options) {
    if (typeof query !== 'string') throw typeError(`query must be a string, got ${describe(query)}`)
    return this.#call('workspaceSymbols', { query }, options)
  }

  /**
   * Rename the symbol at a location: policy-checked, then atomic writes.
   * @param {import('../types/lsp').LanguageRenameInput} input
   * @param {CallOptions} [options]
   * @returns {Promise<import('../types/lsp').LanguageRenameResult>}
   */
  async rename(input, options) {
    const loc = location(input)
    const newName = readInput('input', () => input.newName)
    if (typeof newName !== 'string') throw typeError(`newName must be a string, got ${describe(newName)}`)
    const plan = await this.#call('renamePlan', { ...loc, newName }, options)
    if (plan.edits.length === 0) return { edits: [] }
    if (this.#policy !== undefined) {
      let decision
      try {
        decision = await this.#policy.check({ kind: 'edit', operation: 'rename', paths: [...plan.paths], risk: 'high' })
      } catch (err) {
        await this.#discard(plan.plan)
        throw new LanguageIntelligenceError(
          'WORKSPACE',
          `rename refused: the policy check failed: ${thrownMessage(err)}`,
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

  /** @param {unknown} plan */
  async #discard(plan) {
    try {
      await this.#call('renameDiscard', { plan })
    } catch {
      // The plan expires on its own.
    }
  }

  /**
   * shutdown, exit, close stdin, SIGTERM, then SIGKILL every server's process group.
   * @returns {Promise<void>}
   */
  async dispose() {
    await this.#start('dispose', '{}', false).promise
  }
}

/** @typedef {import('../types/lsp').LanguageLocation} Location */

/**
 * @param {Location} loc
 * @returns {Location}
 */
function location(loc) {
  const { type, file, line, character } = readInput('location', () => {
    if (!isObject(loc)) return { type: describe(loc) }
    const { file, line, character } = loc
    return { type: null, file, line, character }
  })
  if (type !== null) throw typeError(`location must be an object { file, line, character }, got ${type}`)
  if (typeof file !== 'string') throw typeError(`location.file must be a string, got ${describe(file)}`)
  for (const [k, v] of [['line', line], ['character', character]]) {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw typeError(`location.${k} must be a non-negative integer, got ${describe(v) === 'number' ? v : describe(v)}`)
    }
  }
  return { file, line, character }
}

/**
 * Create a LanguageIntelligence. Nothing is spawned until the first call that needs a server.
 * @param {import('../types/lsp').LanguageIntelligenceOptions} options
 */
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

/**
 * A native frame call: its `LanguageIntelligenceError`s as `LspFrameError`, its other
 * errors translated; anything else (a value napi could not convert) a TypeError with it
 * as `cause`.
 * @template {unknown[]} A
 * @template R
 * @param {string} what
 * @param {(...args: A) => R} fn
 * @param {A} args
 * @returns {R}
 */
function frameCall(what, fn, ...args) {
  try {
    return fn(...args)
  } catch (err) {
    if (!isNative(err)) throw fromCaller(err, what)
    const e = translate(err)
    if (e instanceof LanguageIntelligenceError) throw new LspFrameError(e.code, e.message)
    throw e
  }
}

/**
 * One LSP frame (`Content-Length` header + UTF-8 JSON body) for a JSON-RPC message.
 * @param {object} message
 * @returns {Buffer}
 */
function encodeLspFrame(message) {
  const type = readInput('message', () => (isObject(message) || Array.isArray(message) ? null : describe(message)))
  if (type !== null) throw typeError(`message must be an object, got ${type}`)
  // The hard cap is charged while the message is written: a hostile one costs at most that.
  const hard = LSP_CONSTANTS.maxMessageBytesHard
  const tooLarge = () => new LspFrameError('LIMIT', `message of more than ${hard} bytes exceeds ${hard} bytes`)
  return frameCall('message', native.lspEncodeFrame, jsonOf('message', message, { maxChars: hard, tooLarge }))
}

/**
 * Incremental, bounded frame decoder: push bytes, get complete messages. Its unconsumed
 * bytes live in a JavaScript `Buffer`, so V8 accounts for them and collects them; the
 * framing rules (src/lsp/framing.rs) scan that buffer natively.
 */
class LspFrameReader {
  /** @type {number} */
  #max
  /**
   * Unconsumed bytes are `#buf[#start..#end]`.
   * @type {Buffer | null}
   */
  #buf = null
  #start = 0
  #end = 0
  /** @type {unknown} */
  #failed = null

  /**
   * `new LspFrameReader(maxMessageBytes)` (as @arnilo/prism) or `new LspFrameReader({ maxMessageBytes })`.
   * @param {number | import('../types/lsp').LspFrameReaderOptions} [options]
   */
  constructor(options) {
    const { type, max } = readInput('options', () => {
      if (isObject(options)) return { type: null, max: options.maxMessageBytes }
      if (options !== undefined && typeof options !== 'number') return { type: describe(options) }
      return { type: null, max: options }
    })
    if (type !== null) throw typeError(`maxMessageBytes must be a number or { maxMessageBytes }, got ${type}`)
    if (max !== undefined && typeof max !== 'number') {
      throw typeError(`maxMessageBytes must be a number, got ${describe(max)}`)
    }
    this.#max = callNative(native.lspFrameMax, max)
  }

  /**
   * Append bytes; returns the messages completed by them (possibly none).
   * @param {Uint8Array} bytes
   * @returns {unknown[]}
   */
  push(bytes) {
    const chunk = readInput('bytes', () => {
      if (!(bytes instanceof Uint8Array)) return null
      return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    })
    if (chunk === null) throw typeError(`bytes must be a Uint8Array, got ${readInput('bytes', () => describe(bytes))}`)
    if (this.#failed !== null) throw this.#failed
    // Nothing pending: scan the caller's bytes in place and keep only an unfinished tail.
    const pending = this.#end > this.#start
    const view = pending ? this.#append(chunk) : chunk
    let scan
    try {
      scan = frameCall('bytes', native.lspFrameScan, view, this.#max)
    } catch (err) {
      // The stream cannot be resynchronised: the reader stays failed.
      this.#failed = err
      this.#buf = null
      this.#start = this.#end = 0
      throw err
    }
    if (pending) {
      this.#start += scan.consumed
    } else if (scan.consumed < chunk.length) {
      this.#append(chunk.subarray(scan.consumed))
    }
    if (this.#start === this.#end) {
      this.#start = this.#end = 0
      // A buffer grown for a large message is given back once it is empty.
      if (this.#buf !== null && this.#buf.length > 64 * 1024) this.#buf = null
    }
    return JSON.parse(scan.messages)
  }

  /**
   * Copy `chunk` after the pending bytes (compacting or growing the buffer); returns the pending view.
   * @param {Buffer} chunk
   */
  #append(chunk) {
    const pending = this.#end - this.#start
    const need = pending + chunk.length
    let buf = this.#buf
    if (buf === null || need > buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, buf === null ? 0 : buf.length * 2, 1024))
      // Bytes are pending only in a buffer that exists.
      if (pending > 0 && buf !== null) buf.copy(grown, 0, this.#start, this.#end)
      buf = this.#buf = grown
      this.#start = 0
      this.#end = pending
    } else if (this.#end + chunk.length > buf.length) {
      buf.copy(buf, 0, this.#start, this.#end)
      this.#start = 0
      this.#end = pending
    }
    chunk.copy(buf, this.#end)
    this.#end += chunk.length
    return buf.subarray(this.#start, this.#end)
  }

  /** Bytes received but not yet returned as a message. */
  get buffered() {
    return this.#end - this.#start
  }
}

/**
 * `text` with LSP text edits applied (0-based lines, UTF-16 characters; each edit
 * `{ range: { start, end }, newText }` or `{ line, character, endLine, endCharacter,
 * newText }`). Positions past a line's or the text's end clamp to it; overlapping edits
 * are a RangeError.
 * @param {string} text
 * @param {readonly import('../types/lsp').LanguageTextEditInput[]} edits
 * @returns {string}
 */
function applyTextEdits(text, edits) {
  if (typeof text !== 'string') throw typeError(`text must be a string, got ${describe(text)}`)
  if (!readInput('edits', () => Array.isArray(edits))) throw typeError(`edits must be an array, got ${readInput('edits', () => describe(edits))}`)
  // Read once: the JSON the native side checks is the text spliced in.
  const json = jsonOf('edits', edits)
  /** @type {unknown[]} */
  const parsed = JSON.parse(json)
  const newTexts = parsed.map((e) => (isObject(e) ? e.newText : undefined))
  const spans = JSON.parse(callReading('edits', native.lspTextEditSpans, text, json))
  let out = ''
  let at = 0
  for (const [start, end, index] of spans) {
    out += text.slice(at, start) + newTexts[index]
    at = end
  }
  return out + text.slice(at)
}

/**
 * Every cap of a LanguageIntelligence for `limits` (defaults filled in); RangeError outside `1..hard`.
 * @param {import('../types/lsp').LanguageIntelligenceLimits} [limits]
 * @returns {import('../types/lsp').ResolvedLanguageIntelligenceLimits}
 */
function resolveLanguageIntelligenceLimits(limits) {
  const type = readInput('limits', () => (limits === undefined || isObject(limits) ? null : describe(limits)))
  if (type !== null) throw typeError(`limits must be an object, got ${type}`)
  return JSON.parse(callReading('limits', native.lspResolveLimits, jsonOf('limits', limits ?? null)))
}

module.exports = {
  resolveLanguageIntelligenceLimits,
  LanguageIntelligence, createLanguageIntelligence, encodeLspFrame, LspFrameReader, LspFrameError, applyTextEdits }
