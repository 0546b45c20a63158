import type { NormalizedDiagnostic, DiagnosticDelta } from './diagnostics'

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

/** Caps: each is `1..hard`; a value outside that range is a `RangeError`. */
export interface LanguageIntelligenceLimits {
  /** Largest LSP message (and synced file) in bytes. Default 4 MiB, hard 32 MiB. */
  readonly maxMessageBytes?: number
  /** Diagnostics kept per file. Default 200, hard 1000. */
  readonly maxDiagnosticsPerFile?: number
  /** Requests in flight per server. Default 32, hard 128. */
  readonly maxPendingRequests?: number
  /** Results per query (locations, symbols, rename edits, files per delta). Default 500, hard 5000. */
  readonly maxResults?: number
  /** Timeout of every request, and of the wait for diagnostics. Default 30000, hard 120000. */
  readonly requestTimeoutMs?: number
  /** Configured servers. Default 4, hard 8. */
  readonly maxServers?: number
  /** Restarts per server after a crash or a framing error. Default 3, hard 10. */
  readonly maxRestarts?: number
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
  /** LSP SymbolKind as a name: `function`, `class`, `variable`, `enumMember`, … (`unknown` otherwise). */
  readonly kind: string
  readonly containerName?: string
}

/** One applied rename edit, positions in the text before the rename. */
export interface LanguageTextEdit extends LanguageRange {
  readonly newText: string
}

/** Input of {@link LanguageIntelligence.rename}. */
export interface LanguageRenameInput extends LanguageLocation {
  readonly newName: string
}

/** Result of {@link LanguageIntelligence.rename}. */
export interface LanguageRenameResult {
  readonly edits: readonly LanguageTextEdit[]
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

/**
 * A previous view for {@link LanguageIntelligence.diagnosticDelta}: the previous result
 * itself, or a map file → `DiagnosticDelta` (its current view is `added` + `unchanged`)
 * or file → `NormalizedDiagnostic[]`.
 */
export type LanguageDiagnosticPrevious =
  | LanguageDiagnosticDeltaResult
  | Readonly<Record<string, DiagnosticDelta | readonly NormalizedDiagnostic[]>>

/** Input of {@link LanguageIntelligence.diagnosticDelta}. */
export interface LanguageDiagnosticDeltaInput {
  /** Workspace-relative files to refresh (never the whole workspace). */
  readonly files: readonly string[]
  readonly previous?: LanguageDiagnosticPrevious
}

/** Result of {@link LanguageIntelligence.diagnosticDelta}. */
export interface LanguageDiagnosticDeltaResult {
  /** Per file whose set for its current version arrived; each delta's `generation` is the document version. */
  readonly files: Readonly<Record<string, DiagnosticDelta>>
  /** Increases by one per call on this instance. */
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

/** Create a {@link LanguageIntelligence} (nothing is spawned until first use). */
export declare function createLanguageIntelligence(options: LanguageIntelligenceOptions): LanguageIntelligence

/** One LSP frame (`Content-Length` header and UTF-8 JSON body) of a JSON-RPC message. */
export declare function encodeLspFrame(message: object): Buffer

/** Options of {@link LspFrameReader}. */
export interface LspFrameReaderOptions {
  /** Largest body accepted; default 4 MiB, hard 32 MiB. */
  readonly maxMessageBytes?: number
}

/**
 * Incremental, bounded LSP frame decoder. A malformed or oversized frame throws a
 * `LanguageIntelligenceError` (`ERR_PRISM_LSP_FRAMING`) and the reader stays failed.
 */
export declare class LspFrameReader {
  constructor(options?: LspFrameReaderOptions)
  /** Append bytes; returns the messages they completed (possibly none). */
  push(bytes: Uint8Array): unknown[]
  /** Bytes received but not yet returned as a message. */
  readonly buffered: number
}
