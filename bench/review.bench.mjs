// `npm run bench -- review`: a coding patch review manifest with 1 500 changed paths,
// 1 500 diffstat rows and 500 diagnostic summaries, against the floor of JSON.stringify +
// SHA-256 (node:crypto) of the same input. Target: at most 2x the floor.
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { medianMs, fmt } from './util.mjs'

const require = createRequire(import.meta.url)
const { createCodingPatchReviewManifest, assertCodingPatchAccepted } = require('../index.js')

function workload(paths = 1500, diagnostics = 500) {
  const files = Array.from({ length: paths }, (_, i) => `packages/module-${i % 41}/src/components/file-${i}.ts`)
  return {
    threadId: 'thread-bench',
    artifactId: 'patch-bench',
    identity: { repositoryId: 'acme/app', remoteFingerprint: 'a'.repeat(64), defaultBranch: 'main', worktreePath: 'worktrees/bench' },
    base: 'main',
    head: 'feature/bench',
    patch: { kind: 'patch', uri: 'artifacts/patch-bench.patch', sha256: 'b'.repeat(64), bytes: 1_234_567 },
    changedPaths: files,
    diffstat: files.map((file, i) => ({ file, additions: (i * 7) % 300, deletions: (i * 3) % 120 })),
    checks: [
      { name: 'build', exitCode: 0, summary: 'compiled 1 500 files' },
      { name: 'test', exitCode: 1, summary: '3 failing tests\n- a\n- b\n- c' },
      { name: 'lint', exitCode: 0 },
    ],
    diagnostics: files.slice(0, diagnostics).map((file, i) => ({ file, errors: i % 3, warnings: i % 5, information: i % 2, hints: 0 })),
    limits: { maxManifestBytes: 256 * 1024, maxDiagnosticSummaries: diagnostics },
  }
}

export default async function main() {
  const input = workload()
  const runs = { runs: 41, warmup: 10 }
  // Floor: what any implementation must at least do with this input in JavaScript.
  const floor = await medianMs(() => {
    const text = JSON.stringify(input)
    createHash('sha256').update(text).digest('hex')
  }, runs)
  const manifest = await medianMs(() => createCodingPatchReviewManifest(input), runs)
  const { review } = createCodingPatchReviewManifest(input)
  const manifestBytes = Buffer.byteLength(JSON.stringify(review))
  const inputBytes = Buffer.byteLength(JSON.stringify(input))
  console.log(`input ${inputBytes} bytes of JSON, manifest ${manifestBytes} bytes`)
  console.log(`floor  JSON.stringify + sha256 of input   ${fmt(floor, 3)} ms`)
  console.log(`manifest (1500 paths, 1500 diffstat, 500 diagnostics)   ${fmt(manifest, 3)} ms   ratio ${fmt(manifest / floor)}x (target <= 2x)`)

  // Acceptance over a record whose preview embeds that manifest (not a target; for reference).
  const record = {
    id: 'patch-bench',
    threadId: 'thread-bench',
    revisions: [{ version: 1, uri: input.patch.uri, mime: 'application/x-patch', hash: input.patch.sha256, preview: { review } }],
    approvals: [{ version: 1, state: 'approved', reviewer: 'user:ann', decidedAt: '2026-01-01T00:00:00.000Z' }],
  }
  const assertInput = { review, artifact: record }
  const floor2 = await medianMs(() => {
    const text = JSON.stringify(assertInput)
    createHash('sha256').update(text).digest('hex')
  }, runs)
  const accept = await medianMs(() => assertCodingPatchAccepted(assertInput), runs)
  console.log(`assert floor  JSON.stringify + sha256 of { review, artifact }   ${fmt(floor2, 3)} ms`)
  console.log(`assertCodingPatchAccepted (two digests of the manifest)   ${fmt(accept, 3)} ms   ratio ${fmt(accept / floor2)}x (reference)`)
}
