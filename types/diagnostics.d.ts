/** Severity of a normalized diagnostic, most to least severe. */
export type DiagnosticSeverity = 'error' | 'warning' | 'information' | 'hint'

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
  file: string
  /** Start line: a non-negative integer (passed through; no base conversion). */
  line: number
  /** Start column: a non-negative integer; defaults to 0. */
  character?: number
  /** End line: a non-negative integer, not before `line`. */
  endLine?: number
  /** End column: a non-negative integer, not before `character` on the same line. */
  endCharacter?: number
  /** A severity name, or the LSP number 1 (error) … 4 (hint); defaults to `"error"`. */
  severity?: DiagnosticSeverity | 1 | 2 | 3 | 4
  /** Must keep at least one non-whitespace character after control characters are stripped. */
  message: string
  /** Tool that produced it (e.g. `"ts"`); empty means absent; over 1024 bytes drops the entry. */
  source?: string
  /** Tool-specific code; an integer becomes its decimal string; over 1024 bytes drops the entry. */
  code?: string | number
}

/** A validated, bounded diagnostic. Optional fields are absent, never `null`. */
export interface NormalizedDiagnostic {
  /** Workspace-relative path with `/` separators. */
  readonly file: string
  readonly line: number
  readonly character: number
  readonly endLine?: number
  readonly endCharacter?: number
  readonly severity: DiagnosticSeverity
  /** Control characters stripped (tab and newline kept); at most `maxMessageBytes` UTF-8 bytes. */
  readonly message: string
  readonly source?: string
  readonly code?: string
  /** The `generation` the entry was normalized with (e.g. a document version). */
  readonly generation: number
}

/** Options of {@link normalizeDiagnostics}. */
export interface NormalizeDiagnosticsOptions {
  /** Absolute path (`/…`, `C:\…`) or `file://` URI of the workspace root. */
  workspaceRoot: string
  /** Non-negative safe integer stamped on every entry. */
  generation: number
  /** Valid entries kept per file, first come first kept: 1..5000, default 500. */
  maxDiagnosticsPerFile?: number
  /** Message cap in UTF-8 bytes (cut on a character boundary, no suffix): 1..16384, default 4096. */
  maxMessageBytes?: number
}

/** Input of {@link diagnosticDelta}. */
export interface DiagnosticDeltaInput {
  /** The incoming view. */
  next: readonly NormalizedDiagnostic[]
  /** The view it replaces. */
  previous?: readonly NormalizedDiagnostic[]
  /**
   * Generation of the incoming view. Defaults to the newest generation in `next`; an
   * empty `next` without it is older than nothing, so every previous entry is removed.
   */
  generation?: number
}

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
}

/**
 * Validate and bound host-parsed diagnostics: workspace containment, positions, severity,
 * non-empty message, control characters stripped, UTF-8 message cap, per-file cap
 * charged before retention. Malformed entries are dropped whole; output keeps input order.
 *
 * @throws TypeError (`ERR_INVALID_ARG_TYPE`) when `raw` is not an array or `options` is
 *   malformed; RangeError (`ERR_OUT_OF_RANGE`) for a limit or generation out of range.
 */
export declare function normalizeDiagnostics(
  raw: readonly RawDiagnostic[],
  options: NormalizeDiagnosticsOptions,
): readonly NormalizedDiagnostic[]

/**
 * Deterministic `added` / `removed` / `unchanged` between two views by
 * {@link diagnosticIdentity}: duplicates deduped per side, previous entries newer than
 * the incoming generation ignored as stale, one canonical order.
 *
 * @throws TypeError when an entry is not a normalized diagnostic; RangeError for a bad `generation`.
 */
export declare function diagnosticDelta(input: DiagnosticDeltaInput): DiagnosticDelta

/**
 * The stable key `file:source:line:character:code` (empty text for an absent source or code).
 *
 * @throws TypeError when `diagnostic` lacks a valid file, line or character.
 */
export declare function diagnosticIdentity(
  diagnostic: Pick<NormalizedDiagnostic, 'file' | 'line' | 'character' | 'source' | 'code'>,
): string
