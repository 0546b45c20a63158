/** Severity of a normalized diagnostic, most to least severe (the names of @arnilo/prism). */
export type DiagnosticSeverity = 'error' | 'warning' | 'info' | 'hint'

/**
 * A host-parsed diagnostic before normalization (compiler, linter or LSP output).
 * Every entry is validated; an entry that breaks any rule is dropped whole.
 */
export interface RawDiagnostic {
  /**
   * Workspace-relative path, absolute path inside the workspace root, or `file://` URI.
   * `\` counts as a separator; `.`/`..` are resolved lexically; anything that escapes the
   * root is dropped.
   */
  readonly file: string
  /** Start line: a non-negative integer (passed through; no base conversion); defaults to 0. */
  readonly line?: number
  /** Start column: a non-negative integer; defaults to 0. */
  readonly character?: number
  /** End line: a non-negative integer, not before `line`; defaults to `line`. */
  readonly endLine?: number
  /** End column: a non-negative integer, not before `character` on the same line; defaults to `character`. */
  readonly endCharacter?: number
  /**
   * A severity name (`"information"` is read as `"info"`), or the LSP number 1 (error) …
   * 4 (hint); defaults to `"error"`.
   */
  readonly severity?: DiagnosticSeverity | 'information' | 1 | 2 | 3 | 4
  /** Must keep at least one non-whitespace character after control characters are stripped. */
  readonly message: string
  /** Tool that produced it (e.g. `"ts"`); absent or empty means `"check"`; over 1024 bytes drops the entry. */
  readonly source?: string
  /** Tool-specific code: a string, or a safe integer (kept a number); over 1024 bytes drops the entry. */
  readonly code?: string | number
}

/** Where a diagnostic is: a workspace-relative file and a zero-based range (UTF-16 characters). */
export interface DiagnosticSpan {
  /** Workspace-relative path with `/` separators. */
  readonly file: string
  readonly line: number
  readonly character: number
  readonly endLine: number
  readonly endCharacter: number
  readonly severity: DiagnosticSeverity
}

/** A validated, bounded diagnostic (as @arnilo/prism's). `code` is absent, never `null`, when there is none. */
export interface NormalizedDiagnostic extends DiagnosticSpan {
  /** Control characters stripped (tab and newline kept); at most `maxMessageBytes` UTF-8 bytes. */
  readonly message: string
  /** `"check"` from {@link normalizeDiagnostics} when the raw entry named none, `"lsp"` from a language server. */
  readonly source: string
  /** A string, or an integer kept a number; `2322` and `"2322"` are one identity. */
  readonly code?: string | number
  /** The `generation` the entry was normalized with (e.g. a document version). */
  readonly generation: number
}

/** Options of {@link normalizeDiagnostics}. */
export interface NormalizeDiagnosticsOptions {
  /** Absolute path (`/…`, `C:\…`) or `file://` URI of the workspace root. */
  readonly workspaceRoot: string
  /** Non-negative safe integer stamped on every entry. */
  readonly generation: number
  /** Valid entries kept per file, first come first kept. Default 500, hard 5000. */
  readonly maxDiagnosticsPerFile?: number
  /** Message cap in UTF-8 bytes (cut on a character boundary, no suffix). Default 4096, hard 16384. */
  readonly maxMessageBytes?: number
}

/** The effective caps of {@link normalizeDiagnostics}. */
export interface ResolvedDiagnosticsLimits {
  readonly maxDiagnosticsPerFile: number
  readonly maxMessageBytes: number
}

/** Input of {@link diagnosticDelta} (@arnilo/prism calls it `DiagnosticDeltaRequest`). */
export interface DiagnosticDeltaInput {
  /**
   * The incoming view. Entries handed back need `file`, `line`, `character`, `severity`,
   * `message` and `generation`; `endLine`, `endCharacter`, `source` and `code` may be absent.
   */
  readonly next: readonly NormalizedDiagnostic[]
  /** The view it replaces. */
  readonly previous?: readonly NormalizedDiagnostic[]
  /**
   * Generation of the incoming view. Defaults to the newest generation in `next`; an
   * empty `next` without it is older than nothing, so every previous entry is removed.
   */
  readonly generation?: number
  /**
   * Not supported: identity is always {@link diagnosticIdentity}, so deltas stay in one
   * canonical order. Passing a function is a `TypeError`.
   */
  readonly identity?: undefined
}

/** @arnilo/prism's name of {@link DiagnosticDeltaInput}. */
export type DiagnosticDeltaRequest = DiagnosticDeltaInput

/** Result of {@link diagnosticDelta}; each list sorted by file, line, character, source, code. */
export interface DiagnosticDelta {
  /** In `next`, not in the live `previous`. */
  readonly added: readonly NormalizedDiagnostic[]
  /** In the live `previous` (not newer than the incoming generation), not in `next`. */
  readonly removed: readonly NormalizedDiagnostic[]
  /** In both (the `next` version). */
  readonly unchanged: readonly NormalizedDiagnostic[]
  /** The incoming generation (for an empty `next` without one: the newest previous, else 0). */
  readonly generation: number
  /** `next` held more than one entry of some identity; all but one were dropped. */
  readonly truncated: boolean
}

/**
 * Validate and bound host-parsed diagnostics: workspace containment, positions, severity,
 * non-empty message, control characters stripped, UTF-8 message cap, per-file cap
 * charged before retention. Malformed entries are dropped whole; output keeps input order.
 *
 * @throws TypeError (`ERR_INVALID_ARG_TYPE`) when `raw` is not an array or `options` is
 *   malformed or cannot be read (the reader's error is the `cause`); RangeError
 *   (`ERR_OUT_OF_RANGE`) for a limit or generation out of range.
 */
export declare function normalizeDiagnostics(
  raw: readonly RawDiagnostic[],
  options: NormalizeDiagnosticsOptions,
): readonly NormalizedDiagnostic[]

/**
 * The effective caps for `options` (defaults filled in).
 *
 * @throws RangeError (`ERR_OUT_OF_RANGE`) for a limit outside `1..hard`; TypeError for a non-number.
 */
export declare function resolveDiagnosticsLimits(options?: {
  readonly maxDiagnosticsPerFile?: number
  readonly maxMessageBytes?: number
}): ResolvedDiagnosticsLimits

/**
 * Deterministic `added` / `removed` / `unchanged` between two views by
 * {@link diagnosticIdentity}: duplicates deduped per side, previous entries newer than
 * the incoming generation ignored as stale, one canonical order.
 *
 * @throws TypeError when an entry is not a normalized diagnostic or the input cannot be
 *   read (the reader's error is the `cause`); RangeError for a bad `generation`.
 */
export declare function diagnosticDelta(input: DiagnosticDeltaInput): DiagnosticDelta

/**
 * The stable key `file:source:line:character:code` (empty text for an absent source or
 * code; an integer code in decimal).
 *
 * @throws TypeError when `diagnostic` lacks a valid file, line or character.
 */
export declare function diagnosticIdentity(
  diagnostic: Pick<NormalizedDiagnostic, 'file' | 'line' | 'character'> & {
    readonly source?: string
    readonly code?: string | number
  },
): string
