// The seed's LanguageIntelligence example, compiled under --strict.
import {
  createLanguageIntelligence,
  LanguageIntelligence,
  LanguageIntelligenceError,
  encodeLspFrame,
  LspFrameReader,
  type LanguageDiagnosticDeltaResult,
  type LanguageIntelligencePolicyAction,
} from 'prism-review'

declare const workspaceRoot: string
declare let previous: LanguageDiagnosticDeltaResult | undefined

const policy = {
  check(action: LanguageIntelligencePolicyAction) {
    return { allowed: action.paths.length < 10, reason: 'too many files' }
  },
}

async function seed() {
  const lang = createLanguageIntelligence({
    workspaceRoot,
    servers: { ts: { command: 'typescript-language-server', args: ['--stdio'], languages: ['typescript'] } },
    policy,
  })
  await lang.syncDocument('src/app.ts') // full-content didChange, monotonic version
  const delta = await lang.diagnosticDelta({ files: ['src/app.ts', 'src/lib.ts'], previous })
  previous = delta
  const incomplete: readonly string[] = delta.incomplete
  for (const [file, d] of Object.entries(delta.files)) {
    const n: number = d.added.length + d.removed.length + d.unchanged.length
    void file, n
  }
  const ac = new AbortController()
  const hover = await lang.hover({ file: 'src/app.ts', line: 0, character: 3 }, { signal: ac.signal })
  const text: string | undefined = hover?.text
  const defs = await lang.definitions({ file: 'src/app.ts', line: 0, character: 3 })
  const line: number = defs[0].endLine
  const { edits } = await lang.rename({ file: 'src/app.ts', line: 0, character: 3, newName: 'renamed' })
  const newText: string = edits[0].newText
  const syms = await lang.workspaceSymbols('App')
  const kind: number = syms[0].kind
  const kindName: string = syms[0].kindName
  void kindName
  const diags = await lang.diagnostics('src/app.ts')
  const { version } = await lang.syncDocument('src/app.ts')
  await lang.dispose()
  const ok: boolean = lang instanceof LanguageIntelligence
  void incomplete, text, line, newText, kind, diags, version, ok
}

try {
  void seed()
} catch (e) {
  if (e instanceof LanguageIntelligenceError) {
    const code: 'ERR_PRISM_LSP_FRAMING' | 'ERR_PRISM_LSP_SERVER' | 'ERR_PRISM_LSP_TIMEOUT' | 'ERR_PRISM_LSP_LIMIT' | 'ERR_PRISM_LSP_UNSUPPORTED' | 'ERR_PRISM_LSP_WORKSPACE' = e.code
    void code
  }
}

const frame: Buffer = encodeLspFrame({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })
const reader = new LspFrameReader({ maxMessageBytes: 1024 })
const messages: unknown[] = reader.push(frame)
const pending: number = reader.buffered
void messages, pending
