// normalize+delta of n raw diagnostics (one in five with a 6 KiB non-ASCII message)
// against the floor: a JSON round trip (JSON.parse(JSON.stringify(input))) of the same
// input, measured in the same run. Targets: ≤3x at n ≥ 10 000, ≤5x at n = 100.
import { createRequire } from 'node:module'
import { normalizeDiagnostics, diagnosticDelta } from '../index.mjs'
import { medianMs, fmt } from './util.mjs'

// The alternative that was measured against: JSON text both ways (the package default).
const native = createRequire(import.meta.url)('../js/native.js')
function jsonTextNormalizeDelta(raw, options, previous) {
  const next = JSON.parse(native.diagnosticsNormalizeJson(JSON.stringify(raw), JSON.stringify(options)))
  const r = JSON.parse(native.diagnosticsDeltaIndicesJson(JSON.stringify({ next, previous })))
  return { added: r.added.map((i) => next[i]), removed: r.removed.map((i) => previous[i]), unchanged: r.unchanged.map((i) => next[i]) }
}

const ROOT = '/work/project'
const UNIT = 'Ошибка типа: значение 型「Foo」は割り当てできません 😀 — ';

function bigMessage(i) {
  let s = `${i}: `
  while (Buffer.byteLength(s) < 6 * 1024) s += UNIT
  return s
}

/** n raw diagnostics of generation `gen`; `shift` changes about a tenth of them. */
export function makeRaw(n, shift = 0) {
  const files = Math.max(1, Math.ceil(n / 100))
  const raw = new Array(n)
  for (let i = 0; i < n; i++) {
    const f = i % files
    const file = i % 2 === 0 ? `${ROOT}/src/mod${f}/file${f}.ts` : `./src/mod${f}/../mod${f}/file${f}.ts`
    const line = Math.floor(i / files) + (i % 10 === 0 ? shift : 0)
    raw[i] = {
      file,
      line,
      character: i % 80,
      endLine: line,
      endCharacter: (i % 80) + 5,
      severity: i % 3 === 0 ? 'warning' : 1,
      message: i % 5 === 0 ? bigMessage(i) : `Type 'string' is not assignable to type 'number' (${i}).\u001b[0m`,
      source: 'ts',
      code: 2322 + (i % 7),
    }
  }
  return raw
}

export default async function run() {
  const rows = []
  for (const n of [100, 10_000, 50_000]) {
    const raw = makeRaw(n, 0)
    const previous = normalizeDiagnostics(makeRaw(n, 1), { workspaceRoot: ROOT, generation: 1 })
    const runs = n >= 50_000 ? 5 : n >= 10_000 ? 7 : 51
    const warmup = n >= 10_000 ? 1 : 10
    const floor = await medianMs(() => JSON.parse(JSON.stringify(raw)), { runs, warmup })
    let check
    const work = await medianMs(
      () => {
        const next = normalizeDiagnostics(raw, { workspaceRoot: ROOT, generation: 2 })
        check = diagnosticDelta({ next, previous })
      },
      { runs, warmup },
    )
    const jsonText = await medianMs(
      () => jsonTextNormalizeDelta(raw, { workspaceRoot: ROOT, generation: 2 }, previous),
      { runs, warmup },
    )
    const normOnly = await medianMs(() => normalizeDiagnostics(raw, { workspaceRoot: ROOT, generation: 2 }), {
      runs,
      warmup,
    })
    const target = n >= 10_000 ? 3 : 5
    const ratio = work / floor
    rows.push({
      n,
      'floor ms': fmt(floor),
      'normalize+delta ms': fmt(work),
      'normalize ms': fmt(normOnly),
      ratio: fmt(ratio),
      'JSON-text ratio': fmt(jsonText / floor),
      target: `≤${target}x`,
      ok: ratio <= target ? 'yes' : 'NO',
      added: check.added.length,
      removed: check.removed.length,
      unchanged: check.unchanged.length,
    })
  }
  console.table(rows)
}
