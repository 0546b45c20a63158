// Written against the types of @arnilo/prism (packages/coding-agent: diagnostics.ts,
// language/types.ts, language/framing.ts) in the style of its tests, with only the import
// path changed: it must compile under --strict against prism-review.
import {
  applyTextEdits,
  createLanguageIntelligence,
  diagnosticDelta,
  diagnosticIdentity,
  encodeLspFrame,
  LanguageIntelligenceError,
  LspFrameError,
  LspFrameReader,
  normalizeDiagnostics,
  resolveDiagnosticsLimits,
  resolveLanguageIntelligenceLimits,
  type CreateLanguageIntelligenceOptions,
  type DiagnosticDelta,
  type DiagnosticDeltaRequest,
  type DiagnosticSeverity,
  type LanguageDiagnostic,
  type LanguageDiagnosticDeltaRequest,
  type LanguageDiagnosticDeltaResult,
  type LanguageFileDiagnostics,
  type LanguageIntelligence,
  type LanguageIntelligenceErrorCode,
  type LanguageIntelligenceLimits,
  type LanguageLocation,
  type LanguageServerSpec,
  type LanguageSymbol,
  type LanguageTextEdit,
  type LanguageWorkspaceEdit,
  type LspFrameErrorCode,
  type NormalizeDiagnosticsOptions,
  type NormalizedDiagnostic,
  type RawDiagnostic,
  type ResolvedDiagnosticsLimits,
  type ResolvedLanguageIntelligenceLimits,
} from 'prism-review'

function diag(file: string, overrides?: Partial<NormalizedDiagnostic>): NormalizedDiagnostic {
  return {
    file,
    line: 0,
    character: 0,
    endLine: 0,
    endCharacter: 1,
    severity: 'error',
    message: 'm',
    source: 'check',
    generation: 1,
    ...overrides,
  }
}

// diagnostics.ts
const raw: readonly RawDiagnostic[] = [
  { file: 'src/a.ts', message: 'ok', source: 'tsc' },
  { file: 'src/b.ts', message: 'positioned', line: 1, character: 2, endLine: 1, endCharacter: 4, severity: 'info', code: 101 },
  { file: 'src/c.ts', message: 'hint', severity: 'hint', code: 'H1' },
]
const normalizeOptions: NormalizeDiagnosticsOptions = { workspaceRoot: '/work', generation: 7, maxDiagnosticsPerFile: 5, maxMessageBytes: 16 }
const out: readonly NormalizedDiagnostic[] = normalizeDiagnostics(raw, normalizeOptions)
const first: NormalizedDiagnostic | undefined = out[0]
const line: number = first ? first.endLine + first.endCharacter + first.line + first.character : 0
const source: string | undefined = first?.source
const severity: DiagnosticSeverity | undefined = first?.severity
const code: string | number | undefined = first?.code
const limits: ResolvedDiagnosticsLimits = resolveDiagnosticsLimits({ maxDiagnosticsPerFile: 5 })
const request: DiagnosticDeltaRequest = {
  next: [diag('src/a.ts'), diag('src/a.ts', { source: 'lsp', code: 101 })],
  previous: [diag('src/z.ts', { generation: 9 })],
}
const delta: DiagnosticDelta = diagnosticDelta(request)
const truncated: boolean = delta.truncated
const counts: number = delta.added.length + delta.removed.length + delta.unchanged.length + delta.generation
const key: string = diagnosticIdentity(diag('src/a.ts', { code: 101 }))

// language/types.ts
const spec: LanguageServerSpec = { command: process.execPath, args: ['fake-lsp.mjs'], languages: ['typescript'], env: { FAKE_LSP_PULL: '1' } }
const languageLimits: LanguageIntelligenceLimits = {
  maxMessageBytes: 1024,
  maxDiagnosticsPerFile: 1,
  maxPendingRequests: 1,
  maxResultsPerQuery: 10,
  requestTimeoutMs: 10_000,
  maxServers: 1,
  maxRestartsPerServer: 3,
}
const resolved: ResolvedLanguageIntelligenceLimits = resolveLanguageIntelligenceLimits(languageLimits)
const restarts: number = resolved.maxRestartsPerServer + resolved.maxResultsPerQuery
const options: CreateLanguageIntelligenceOptions = {
  workspaceRoot: '/work',
  servers: { ts: spec },
  limits: languageLimits,
  policy: { check: () => ({ allowed: false, reason: 'nope' }) },
}

async function use(): Promise<void> {
  const lang: LanguageIntelligence = createLanguageIntelligence(options)
  try {
    const loc: LanguageLocation = { file: 'src/a.ts', line: 0, character: 6 }
    const defs: readonly LanguageLocation[] = await lang.definitions(loc)
    const refs: readonly LanguageLocation[] = await lang.references(loc, { signal: AbortSignal.timeout(1000) })
    const syms: readonly LanguageSymbol[] = await lang.workspaceSymbols('foo')
    const kind: number = syms[0]?.kind ?? 0
    const hover: { text: string } | undefined = await lang.hover(loc)
    const diags: readonly LanguageDiagnostic[] = await lang.diagnostics('src/a.ts')
    const all: readonly LanguageDiagnostic[] = await lang.diagnostics()
    const { version }: { version: number } = await lang.syncDocument('src/a.ts')
    const previous: LanguageFileDiagnostics = { generation: 2, diagnostics: [diag('src/a.ts', { generation: 2 })] }
    const deltaRequest: LanguageDiagnosticDeltaRequest = { files: ['src/a.ts'], previous: { 'src/a.ts': previous } }
    const result: LanguageDiagnosticDeltaResult = await lang.diagnosticDelta(deltaRequest)
    const fileDelta: DiagnosticDelta | undefined = result.files['src/a.ts']
    const generation: number = result.generation
    const edit: LanguageWorkspaceEdit = await lang.rename({ ...loc, newName: 'bar' })
    const edited: readonly LanguageTextEdit[] = edit.edits
    void defs, refs, kind, hover, diags, all, version, fileDelta, generation, edited
  } catch (e: unknown) {
    if (e instanceof LanguageIntelligenceError) {
      const c: LanguageIntelligenceErrorCode = e.code
      void c
    }
  } finally {
    await lang.dispose()
  }
}

// language/framing.ts and applyTextEdits
const reader = new LspFrameReader(1024)
const frames: unknown[] = reader.push(encodeLspFrame({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }))
try {
  new LspFrameReader(32).push(Buffer.from(`Content-Length: 100\r\n\r\n${'x'.repeat(100)}`))
} catch (e: unknown) {
  if (e instanceof LspFrameError) {
    const c: LspFrameErrorCode = e.code
    void c
  }
}
const made = new LspFrameError('ERR_PRISM_LSP_FRAMING', 'bad frame')
const next: string = applyTextEdits('foo bar foo', [
  { file: 'a.ts', newText: 'qux', range: { start: { line: 0, character: 0 }, end: { line: 0, character: 3 } } },
  { file: 'a.ts', newText: 'baz', range: { start: { line: 0, character: 8 }, end: { line: 0, character: 11 } } },
])
const typed: LanguageTextEdit = { file: 'a.ts', newText: 'x', range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } } }
const again: string = applyTextEdits(next, [typed])

void line, source, severity, code, limits, truncated, counts, key, restarts, use, frames, made, again
