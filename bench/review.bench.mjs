// `npm run bench -- review`: a coding patch review manifest with 1 500 changed paths,
// 1 500 diffstat rows and 500 diagnostic summary rows, against the floor of JSON.stringify +
// SHA-256 (node:crypto) of the same input, measured in the same run. Target: at most 2x.
// Two orders of the same content: git's (paths sorted, as `git diff --numstat` prints them)
// and shuffled (the manifest sorts them).
//
// Two paths (js/review.js): the columns path, which plain inputs like this one take, reads
// the three bulk lists in JS once (no JSON.stringify of them), sends one joined string, a
// length per string and a Float64Array of counts, and gets back only the positions of the
// retained entries plus the small rest of the manifest as JSON text, building the result
// from its own copies (no JSON.parse of the 261 KB manifest). The JSON text path (all other
// inputs) is printed as a reference.
//
// Where the time goes (process CPU time, this workload, 2-core shared machine, noisy):
// floor ~0.75-1.0 ms (JSON.stringify + SHA-256). Columns path ~0.8-1.5 ms: reading the
// lists in JS ~0.06-0.09, joining the 3 500 strings ~0.13-0.18, the native call ~0.6-1.0
// (UTF-16 copy in, validation, sorting, canonical JSON, SHA-256, the small JSON out),
// building the result objects and parsing the small JSON ~0.1. Shuffled order costs a
// little more (sorting 3 500 long, common-prefixed strings). Measured ratios: 1.04-1.13x
// in git order, 1.21-1.36x shuffled. The JSON text path pays JSON.stringify + copying
// 2 x 261 KB + JSON.parse on top of the same Rust work: 2.6-3.0x.
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { fmt } from './util.mjs'

const require = createRequire(import.meta.url)
const { createCodingPatchReviewManifest, assertCodingPatchAccepted } = require('../index.js')
const { internal } = require('../js/review.js')

function shuffled(list, seed) {
  const out = [...list]
  let s = seed
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648
    const j = s % (i + 1)
    ;[out[i], out[j]] = [out[j], out[i]]
  }
  return out
}

export function workload({ shuffle }) {
  let files = Array.from({ length: 1500 }, (_, i) => `packages/module-${String(i % 41).padStart(2, '0')}/src/components/file-${String(i).padStart(4, '0')}.ts`).sort()
  const diffstat = files.map((file, i) => ({ file, additions: (i * 7) % 300, deletions: (i * 3) % 120 }))
  const severities = ['error', 'warning', 'info', 'hint']
  let diagnostics = files.filter((_, i) => i % 3 === 0).map((file, i) => ({ file, severity: severities[i % 4], count: 1 + (i % 5), generation: 3 }))
  let rows = diffstat
  if (shuffle) {
    files = shuffled(files, 1)
    rows = shuffled(diffstat, 2)
    diagnostics = shuffled(diagnostics, 3)
  }
  return {
    threadId: 'thread-bench',
    artifactId: 'patch-bench',
    identity: { repositoryId: 'acme-app', remoteFingerprint: 'a'.repeat(64), defaultBranch: 'main', worktreePath: 'worktrees/bench' },
    base: 'main',
    head: 'feature/bench',
    patch: { kind: 'patch', uri: 'artifacts/patch-bench.patch', sha256: 'b'.repeat(64), bytes: 1_234_567 },
    changedPaths: files,
    diffstat: rows,
    checks: [
      { name: 'build', exitCode: 0, summary: 'compiled 1 500 files' },
      { name: 'test', exitCode: 1, summary: '3 failing tests\n- a\n- b\n- c' },
      { name: 'lint', exitCode: 0, summary: '' },
    ],
    diagnostics,
    limits: { maxManifestBytes: 256 * 1024 },
  }
}

function floorOf(input) {
  const text = JSON.stringify(input)
  createHash('sha256').update(text).digest('hex')
}

/**
 * The machine is shared, so wall time swings with other processes. Each round runs `n`
 * calls of the floor, then `n` of the subject, and records both as process CPU time
 * (process.cpuUsage: descheduled time is not counted) and wall time; the report is the
 * median over rounds of each, and the median of the per-round ratios.
 */
function compare(floor, subject, { rounds = 15, n = 20, warmup = 20 } = {}) {
  for (let i = 0; i < warmup; i++) { floor(); subject() }
  const cpu = (fn) => {
    const w0 = performance.now()
    const c0 = process.cpuUsage()
    for (let i = 0; i < n; i++) fn()
    const c = process.cpuUsage(c0)
    return { cpu: (c.user + c.system) / 1000 / n, wall: (performance.now() - w0) / n }
  }
  const f = []
  const s = []
  const r = []
  const fw = []
  const sw = []
  for (let i = 0; i < rounds; i++) {
    const a = cpu(floor)
    const b = cpu(subject)
    f.push(a.cpu)
    s.push(b.cpu)
    fw.push(a.wall)
    sw.push(b.wall)
    r.push(b.cpu / a.cpu)
  }
  const med = (v) => [...v].sort((x, y) => x - y)[v.length >> 1]
  return { floor: med(f), subject: med(s), ratio: med(r), floorWall: med(fw), subjectWall: med(sw) }
}

export default async function main() {
  for (const shuffle of [false, true]) {
    const input = workload({ shuffle })
    assert500(input)
    const m = compare(() => floorOf(input), () => createCodingPatchReviewManifest(input))
    const { review } = createCodingPatchReviewManifest(input)
    console.log(`manifest, ${shuffle ? 'shuffled order' : 'git order     '}: input ${Buffer.byteLength(JSON.stringify(input))} B, manifest ${Buffer.byteLength(JSON.stringify(review))} B`)
    console.log(`  CPU  floor ${fmt(m.floor, 3)} ms, manifest ${fmt(m.subject, 3)} ms, ratio ${fmt(m.ratio)}x (target <= 2x)`)
    console.log(`  wall floor ${fmt(m.floorWall, 3)} ms, manifest ${fmt(m.subjectWall, 3)} ms, ratio ${fmt(m.subjectWall / m.floorWall)}x`)
    if (internal.manifestViaColumns(input) === null) throw new Error('the columns path declined the workload')
    const j = compare(() => floorOf(input), () => internal.manifestViaJson(input), { rounds: 7, n: 10 })
    console.log(`  JSON text path (reference, inputs the columns path declines): CPU ${fmt(j.subject, 3)} ms, ratio ${fmt(j.ratio)}x`)
  }

  // Acceptance over a record whose preview embeds that manifest (reference, no target).
  const input = workload({ shuffle: false })
  const { review } = createCodingPatchReviewManifest(input)
  const record = {
    id: 'patch-bench',
    threadId: 'thread-bench',
    revisions: [{ version: 1, uri: input.patch.uri, mime: 'application/x-patch', hash: input.patch.sha256, preview: { review } }],
    approvals: [{ version: 1, state: 'approved', reviewer: 'user:ann', decidedAt: '2026-01-01T00:00:00.000Z' }],
  }
  const assertInput = { review, artifact: record }
  const a = compare(() => floorOf(assertInput), () => assertCodingPatchAccepted(assertInput), { rounds: 7, n: 10 })
  console.log(`assertCodingPatchAccepted over that record (reference, no target): CPU floor ${fmt(a.floor, 3)} ms, ${fmt(a.subject, 3)} ms, ratio ${fmt(a.ratio)}x`)
}

function assert500(input) {
  if (input.changedPaths.length !== 1500 || input.diffstat.length !== 1500 || input.diagnostics.length !== 500) {
    throw new Error('workload shape changed')
  }
}
