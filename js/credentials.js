'use strict'
// Credential redaction for free text: createCredentialRedactor. The rules (which
// environment names hold secrets, which shapes are credentials) live in Rust
// (src/credentials); this file only carries arguments across.

const native = require('./native.js')
const { callNative, toJson, typeError, describe, isObject } = require('./errors.js')
const { readInput } = require('./input.js')

/**
 * A redactor for text a host is about to store or show (a command's output): the values of
 * secret-named variables of `options.env`, `options.secrets`, and well-known credential
 * shapes become "[REDACTED]".
 * @param {import('../types/credentials').CredentialRedactorOptions} [options]
 * @returns {import('../types/credentials').CredentialRedactor}
 */
function createCredentialRedactor(options) {
  if (options !== undefined && !isObject(options)) {
    throw typeError(`createCredentialRedactor(options): options must be an object, got ${describe(options)}`)
  }
  // Read once: a throwing getter or Proxy trap of the caller's is a TypeError with it as
  // `cause`. `process.env` and other env-like objects: own enumerable values.
  const { env, envType, envEntries, secrets, secretsType } = readInput('createCredentialRedactor(options)', () => {
    const { env, secrets } = options ?? {}
    const envOk = env === undefined || (typeof env === 'object' && env !== null && !Array.isArray(env))
    return {
      env,
      envType: envOk ? null : describe(env),
      envEntries: envOk && env ? Object.keys(env).map((name) => /** @type {const} */ ([name, /** @type {Record<string, unknown>} */ (env)[name]])) : [],
      secrets: Array.isArray(secrets) ? Array.from(secrets) : secrets,
      secretsType: secrets === undefined || Array.isArray(secrets) ? null : describe(secrets),
    }
  })
  if (envType !== null) {
    throw typeError(`createCredentialRedactor(options): options.env must be an object of strings, got ${envType}`)
  }
  if (secretsType !== null) {
    throw typeError(`createCredentialRedactor(options): options.secrets must be an array of strings, got ${secretsType}`)
  }
  /** @type {Record<string, string>} */
  const plainEnv = {}
  if (env) {
    for (const [name, value] of envEntries) {
      if (value === undefined) continue
      if (typeof value !== 'string') throw typeError(`createCredentialRedactor(options): options.env.${name} must be a string, got ${describe(value)}`)
      plainEnv[name] = value
    }
  }
  const handle = callNative(() => new native.CredentialRedactorHandle(toJson({ env: plainEnv, secrets: secrets ?? [] }, typeError)))
  return Object.freeze({
    /** @param {unknown} value */
    redact(value) {
      if (typeof value === 'string') return callNative(() => handle.redactText(value))
      if (value === undefined) return undefined
      return JSON.parse(callNative(() => handle.redactJson(toJson(value, typeError))))
    },
  })
}

module.exports = { createCredentialRedactor }
