// The secret redactor (@arnilo/prism's `createSecretRedactor`). Redaction runs natively:
// an artifact service given a redactor made here redacts in Rust without calling back.

/** Redacts registered secrets out of any value. */
export interface SecretRedactor {
  /**
   * A redacted copy of `value`: every occurrence of each secret in strings, object and
   * `Map` keys (and number or BigInt texts) becomes `"[REDACTED]"`.
   *
   * Shape, as @arnilo/prism's: arrays are copied; a `Map` becomes a plain object of its
   * stringified keys and a `Set` an array, their contents redacted; other objects become
   * plain objects of their own enumerable string keys (an `Error` also keeps `name` and
   * `message`); `Date`, `RegExp`, `ArrayBuffer`, typed arrays, booleans, `undefined`,
   * functions and symbols come back as they are. A reference back to an enclosing object is
   * `"[Circular]"`; an object nested 32 levels deep is `"[MaxDepth]"`. Keys that redact to
   * the same text are all kept: `key`, `key__2`, `key__3`, … in their order. Never throws:
   * a getter that throws yields `"[REDACTED]"`. With no non-empty secret it returns `value`
   * itself.
   */
  redact<T>(value: T): T
}

/**
 * A redactor over `secrets`; `undefined`, `null` and empty entries are ignored.
 *
 * @throws {TypeError} `secrets` is not an array, an entry is neither a string nor
 *   `undefined`/`null`, more than 1024 secrets, a secret over 4096 bytes, or a secret that
 *   occurs inside `"[REDACTED]"` (it could never be removed from the output).
 */
export declare function createSecretRedactor(secrets: readonly (string | undefined | null)[]): SecretRedactor
