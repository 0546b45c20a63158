/**
 * Credential redaction for free text a host is about to store or show (a command's output,
 * a log line). Not part of `@arnilo/prism`: an addition of this package.
 * @packageDocumentation
 */

/** Options of {@link createCredentialRedactor}. */
export interface CredentialRedactorOptions {
  /**
   * An environment (for example `process.env`). The value of every variable whose name
   * contains, in any case, `KEY`, `SECRET`, `TOKEN`, `PASS`, `CREDENTIAL`, `AUTH`, `PRIVATE`,
   * `SESSION`, `COOKIE` or `DSN` is redacted wherever it occurs, when it is at least 6 bytes
   * long; so is every value that is a URL carrying userinfo (`scheme://user:pass@host`),
   * whatever the variable's name. Default: none.
   */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Further exact values to redact, whatever their length (empty strings are ignored). */
  readonly secrets?: readonly string[]
}

/**
 * Redacts, besides the exact values of its options, well-known credential shapes:
 * private-key blocks (also cut at either end), AWS access key ids and secret access keys,
 * GitHub, GitLab, npm, Slack, Stripe, Google API and `sk-` tokens, JWTs, the userinfo of
 * URLs, `Authorization:`/`Bearer` values and `password=`-style pairs (`password`, `secret`,
 * `token`, `api_key`, `key`, … followed by `=` or `:`). Every match becomes `"[REDACTED]"`.
 */
export interface CredentialRedactor {
  /**
   * A string comes back redacted; any other JSON value comes back as a redacted copy
   * (strings and object keys; nesting deeper than 64 becomes the marker). A value over
   * 16 MiB (as text or JSON) is a `RangeError`; a value JSON cannot carry is a `TypeError`.
   */
  redact<T>(value: T): T
}

/** Create a credential redactor. Bad options are a `TypeError`. */
export declare function createCredentialRedactor(options?: CredentialRedactorOptions): CredentialRedactor
