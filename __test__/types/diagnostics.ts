// Compiles under tsc --strict: the diagnostics API as the seed describes it.
import {
  normalizeDiagnostics,
  diagnosticDelta,
  diagnosticIdentity,
  type RawDiagnostic,
  type NormalizedDiagnostic,
  type DiagnosticDelta,
  type DiagnosticSeverity,
} from 'prism-review'

const raw: RawDiagnostic[] = [
  { file: 'src/a.ts', line: 3, character: 4, severity: 'error', message: 'bad', source: 'ts', code: 2322 },
  { file: '/work/repo/src/b.ts', line: 1, severity: 2, message: 'warn', code: 'no-unused' },
]
const previous: readonly NormalizedDiagnostic[] = normalizeDiagnostics(raw, { workspaceRoot: '/work/repo', generation: 1 })
const next = normalizeDiagnostics(raw, {
  workspaceRoot: '/work/repo',
  generation: 2,
  maxDiagnosticsPerFile: 500,
  maxMessageBytes: 4096,
})
const delta: DiagnosticDelta = diagnosticDelta({ next, previous })
const cleared = diagnosticDelta({ next: [], previous, generation: 3 })
export const ids: string[] = delta.added.map(diagnosticIdentity)
export const severities: DiagnosticSeverity[] = delta.unchanged.map((d) => d.severity)
export const gen: number = cleared.generation + (next[0]?.endLine ?? 0)
export const code: string | number | undefined = delta.removed[0]?.code
export const truncated: boolean = delta.truncated
// @ts-expect-error results are readonly
delta.added.push(next[0]!)
