import type { NormalizedDiagnostic, DiagnosticDelta, DiagnosticSpan } from './diagnostics'
import type { LanguageIntelligenceError, LanguageIntelligenceErrorCode } from './errors'

/** One language server, chosen by the host (never by a model). */
export interface LanguageServerConfig {
  /** Executable to spawn (no shell). */
  readonly command: string
  /** Arguments, at most 256. */
  readonly args?: readonly string[]
  /** Language ids this server handles (`typescript`, `javascript`, `python`, `json`, …), 1..64. */
  readonly languages: readonly string[]
  /** Extra environment variables, on top of the host's environment. */
  readonly env?: Readonly<Record<string, string>>
}

/** @arnilo/prism's name of {@link LanguageServerConfig}. */
export type LanguageServerSpec = LanguageServerConfig

/** Caps (the names of @arnilo/prism): each is `1..hard`; a value outside that range is a `RangeError`. */
export interface LanguageIntelligenceLimits {
  /** Largest LSP message (and synced file) in bytes. Default 4 MiB, hard 32 MiB. */
  readonly maxMessageBytes?: number
  /** Diagnostics kept per file. Default 200, hard 1000. */
  readonly maxDiagnosticsPerFile?: number
  /** Requests in flight per server. Default 32, hard 128. */
  readonly maxPendingRequests?: number
  /** Results per query (locations, symbols, rename edits, files per delta). Default 500, hard 5000. */
  readonly maxResultsPerQuery?: number
  /** Every call settles within it (server start, sync and request included). Default 30000, hard 120000. */
  readonly requestTimeoutMs?: number
  /** Configured servers. Default 4, hard 8. */
  readonly maxServers?: number
  /** Restarts (starts after the first) per server within any `restartWindowMs`. Default 3, hard 10. */
  readonly maxRestartsPerServer?: number
  /** The window over which restarts are counted, in ms. Default 60000, hard 3600000. */
  readonly restartWindowMs?: number
}

/** Every cap, defaults filled in ({@link resolveLanguageIntelligenceLimits}). */
export interface ResolvedLanguageIntelligenceLimits {
  readonly maxMessageBytes: number
  readonly maxDiagnosticsPerFile: number
  readonly maxPendingRequests: number
  readonly maxResultsPerQuery: number
  readonly requestTimeoutMs: number
  readonly maxServers: number
  readonly maxRestartsPerServer: number
  readonly restartWindowMs: number
}

/** What the policy is asked before a rename writes files. */
export interface LanguageIntelligencePolicyAction {
  readonly kind: 'edit'
  readonly operation: 'rename'
  /** Workspace-relative paths the rename would write. */
  readonly paths: readonly string[]
  readonly risk: 'high'
}

/** The policy's answer. */
export interface LanguageIntelligencePolicyDecision {
  readonly allowed: boolean
  readonly reason?: string
}

/** Host policy consulted before rename writes. */
export interface LanguageIntelligencePolicy {
  check(action: LanguageIntelligencePolicyAction): LanguageIntelligencePolicyDecision | Promise<LanguageIntelligencePolicyDecision>
}

/** Options of {@link createLanguageIntelligence}. */
export interface LanguageIntelligenceOptions {
  /** Workspace root; every path and returned location resolves inside it (after symlinks). */
  readonly workspaceRoot: string
  /** Servers by name, in priority order (the first whose `languages` matches a file serves it). */
  readonly servers: Readonly<Record<string, LanguageServerConfig>>
  readonly limits?: LanguageIntelligenceLimits
  /** Consulted before a rename writes; without it renames are allowed. */
  readonly policy?: LanguageIntelligencePolicy
}

/** @arnilo/prism's name of {@link LanguageIntelligenceOptions}. */
export type CreateLanguageIntelligenceOptions = LanguageIntelligenceOptions

/** Options of every call. */
export interface LanguageIntelligenceCallOptions {
  /** Aborting rejects with the signal's reason and sends `$/cancelRequest`. */
  readonly signal?: AbortSignal
}

/** A position: workspace-relative file, 0-based line, 0-based UTF-16 character (a JS string index). */
export interface LanguageLocation {
  readonly file: string
  readonly line: number
  readonly character: number
}

/** A range in a workspace file, UTF-16 positions. */
export interface LanguageRange {
  readonly file: string
  readonly line: number
  readonly character: number
  readonly endLine: number
  readonly endCharacter: number
}

/** One workspace symbol. */
export interface LanguageSymbol extends LanguageRange {
  readonly name: string
  /** The LSP `SymbolKind` number (12 function, 5 class, 13 variable, …; 0 when the server gave none). */
  readonly kind: number
  /** `kind` as a name: `function`, `class`, `variable`, `enumMember`, … (`unknown` otherwise). */
  readonly kindName: string
  readonly containerName?: string
}

/** An LSP position: 0-based line, UTF-16 character. */
export interface LanguagePosition {
  readonly line: number
  readonly character: number
}

/** A text edit in one workspace file (@arnilo/prism's shape): 0-based lines, UTF-16 characters. */
export interface LanguageTextEdit {
  readonly file: string
  readonly newText: string
  readonly range: { readonly start: LanguagePosition; readonly end: LanguagePosition }
}

/** One applied rename edit, positions in the text before the rename: an LSP `range` and the same range flat. */
export interface LanguageRenameEdit extends LanguageTextEdit, LanguageRange {}

/** An edit {@link applyTextEdits} takes: `{ range, newText }` (`file` is not read), or the flat shape. */
export type LanguageTextEditInput =
  | { readonly file?: string; readonly newText: string; readonly range: { readonly start: LanguagePosition; readonly end: LanguagePosition } }
  | { readonly file?: string; readonly newText: string; readonly line: number; readonly character: number; readonly endLine: number; readonly endCharacter: number }

/** A diagnostic as {@link LanguageIntelligence.diagnostics} reports it (@arnilo/prism's shape; ours also carries `generation`). */
export interface LanguageDiagnostic extends DiagnosticSpan {
  readonly message: string
  readonly source?: string
  readonly code?: string | number
}

/** Input of {@link LanguageIntelligence.rename}. */
export interface LanguageRenameInput extends LanguageLocation {
  readonly newName: string
}

/** A set of text edits (@arnilo/prism's `LanguageWorkspaceEdit`). */
export interface LanguageWorkspaceEdit {
  readonly edits: readonly LanguageTextEdit[]
}

/** Result of {@link LanguageIntelligence.rename}: the edits written. */
export interface LanguageRenameResult extends LanguageWorkspaceEdit {
  readonly edits: readonly LanguageRenameEdit[]
}

/** Result of {@link LanguageIntelligence.syncDocument}. */
export interface LanguageSyncResult {
  /** The document version sent: 1 on open, then + 1 per sync. */
  readonly version: number
}

/** Hover information. */
export interface LanguageHover {
  /** Markdown or plain text from the server. */
  readonly text: string
}

/** One file's previous view as @arnilo/prism passes it. */
export interface LanguageFileDiagnostics {
  readonly generation: number
  readonly diagnostics: readonly NormalizedDiagnostic[]
}

/**
 * A previous view for {@link LanguageIntelligence.diagnosticDelta}: a map file →
 * `{ generation, diagnostics }`, file → `DiagnosticDelta` (its current view is `added` +
 * `unchanged`) or file → `NormalizedDiagnostic[]`; or the previous result itself. Any
 * other shape is a `TypeError`.
 */
export type LanguageDiagnosticPrevious =
  | LanguageDiagnosticDeltaResult
  | Readonly<Record<string, LanguageFileDiagnostics | DiagnosticDelta | readonly NormalizedDiagnostic[]>>

/** Input of {@link LanguageIntelligence.diagnosticDelta}. */
export interface LanguageDiagnosticDeltaInput {
  /** Workspace-relative files to refresh (never the whole workspace). */
  readonly files: readonly string[]
  readonly previous?: LanguageDiagnosticPrevious
}

/** @arnilo/prism's name of {@link LanguageDiagnosticDeltaInput}. */
export type LanguageDiagnosticDeltaRequest = LanguageDiagnosticDeltaInput

/** Result of {@link LanguageIntelligence.diagnosticDelta}. */
export interface LanguageDiagnosticDeltaResult {
  /**
   * Per file whose set for its current version arrived; each delta's `generation` is the
   * document version. A file whose previous view is newer than its refreshed version is
   * omitted (a stale refresh never overwrites a newer view).
   */
  readonly files: Readonly<Record<string, DiagnosticDelta>>
  /** The newest document version refreshed (0 when no set arrived). */
  readonly generation: number
  /** Requested files whose set did not arrive in time: absent from `files`, never reported as clean. */
  readonly incomplete: readonly string[]
}

/**
 * A robust LSP client over one workspace. Nothing is spawned on construction; servers
 * start on first use and stop on {@link LanguageIntelligence.dispose}. All process I/O runs
 * on a native runtime: the JavaScript thread never blocks.
 */
export declare class LanguageIntelligence {
  constructor(options: LanguageIntelligenceOptions)
  /** Symbols matching `query` from every configured server that offers them. */
  workspaceSymbols(query: string, options?: LanguageIntelligenceCallOptions): Promise<LanguageSymbol[]>
  /** Definition locations of the symbol at `loc`; locations outside the workspace are omitted (only such: `ERR_PRISM_LSP_WORKSPACE`). */
  definitions(loc: LanguageLocation, options?: LanguageIntelligenceCallOptions): Promise<LanguageRange[]>
  /** References (declaration included) of the symbol at `loc`. */
  references(loc: LanguageLocation, options?: LanguageIntelligenceCallOptions): Promise<LanguageRange[]>
  /** Current diagnostics of `file` (waiting for its synced version), or of every open document whose set is known. */
  diagnostics(file?: string, options?: LanguageIntelligenceCallOptions): Promise<NormalizedDiagnostic[]>
  /** Hover text at `loc`, or `undefined`. */
  hover(loc: LanguageLocation, options?: LanguageIntelligenceCallOptions): Promise<LanguageHover | undefined>
  /** Rename the symbol at a location after the policy allowed it; each file is written atomically. */
  rename(input: LanguageRenameInput, options?: LanguageIntelligenceCallOptions): Promise<LanguageRenameResult>
  /** Read `file` and send it: `didOpen` (version 1) the first time, then a full-content `didChange` (version + 1). */
  syncDocument(file: string, options?: LanguageIntelligenceCallOptions): Promise<LanguageSyncResult>
  /** Refresh the diagnostics of `files` and diff each against `previous`. */
  diagnosticDelta(input: LanguageDiagnosticDeltaInput, options?: LanguageIntelligenceCallOptions): Promise<LanguageDiagnosticDeltaResult>
  /** `shutdown`, `exit`, close stdin, SIGTERM, then SIGKILL every server's process group. */
  dispose(): Promise<void>
}

/** Create a {@link LanguageIntelligence} (nothing is spawned until first use). @throws TypeError/RangeError for bad options, LanguageIntelligenceError for too many servers or a missing workspace. */
export declare function createLanguageIntelligence(options: LanguageIntelligenceOptions): LanguageIntelligence

/** Every cap for `limits`, defaults filled in. @throws RangeError for a cap outside `1..hard`; TypeError for an unknown name. */
export declare function resolveLanguageIntelligenceLimits(limits?: LanguageIntelligenceLimits): ResolvedLanguageIntelligenceLimits

/**
 * `text` with LSP text edits applied (0-based lines, UTF-16 characters). A position past
 * the end of its line (or the text) is that end; inserts at one position apply in the
 * order given.
 *
 * @throws RangeError (`ERR_OUT_OF_RANGE`) when edits overlap or one ends before it starts;
 *   TypeError for a malformed edit.
 */
export declare function applyTextEdits(text: string, edits: readonly LanguageTextEditInput[]): string

/**
 * One LSP frame (`Content-Length` header and UTF-8 JSON body) of a JSON-RPC message.
 * @throws LspFrameError (`ERR_PRISM_LSP_LIMIT`) over 32 MiB; TypeError for a non-object.
 */
export declare function encodeLspFrame(message: object): Buffer

/** Codes of {@link LspFrameError}. */
export type LspFrameErrorCode = 'ERR_PRISM_LSP_FRAMING' | 'ERR_PRISM_LSP_LIMIT'

/** A frame that cannot be read or written: malformed (`ERR_PRISM_LSP_FRAMING`) or over the cap (`ERR_PRISM_LSP_LIMIT`). */
export declare class LspFrameError extends LanguageIntelligenceError {
  constructor(code: LspFrameErrorCode | 'FRAMING' | 'LIMIT', message?: string, options?: ErrorOptions)
  readonly name: 'LspFrameError'
  readonly code: LspFrameErrorCode & LanguageIntelligenceErrorCode
}

/** Options of {@link LspFrameReader}. */
export interface LspFrameReaderOptions {
  /** Largest body accepted; default 4 MiB, hard 32 MiB. */
  readonly maxMessageBytes?: number
}

/**
 * Incremental, bounded LSP frame decoder. A malformed frame throws an {@link LspFrameError}
 * `ERR_PRISM_LSP_FRAMING`, a body over the cap `ERR_PRISM_LSP_LIMIT`; the reader then stays failed.
 */
export declare class LspFrameReader {
  /** `maxMessageBytes` as a number (as @arnilo/prism) or in an options object. */
  constructor(options?: number | LspFrameReaderOptions)
  /** Append bytes; returns the messages they completed (possibly none). */
  push(bytes: Uint8Array): unknown[]
  /** Bytes received but not yet returned as a message. */
  readonly buffered: number
}
