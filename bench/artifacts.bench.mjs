// Artifact service: attach→revise→approve→get cycles on the memory and SQLite stores,
// sequential and with 32 concurrent reviewers, with the p99 event-loop delay measured
// alongside. Each workload is reported as a ratio to a floor measured in the same run on
// the same store: one raw saveCheckpoint + loadCheckpoint pair (the least any cycle costs).
import { performance } from 'node:perf_hooks'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { fmt, sampleLoopDelay, fmtDelay } from './util.mjs'

const require = createRequire(import.meta.url)
const prism = require('../index.js')

const ownership = { tenantId: 'bench' }
const REVIEWERS = 32

async function cycle(svc, threadId, id) {
  const rec = await svc.attach({ ownership, threadId, id, uri: `https://blob.example/${id}`, mime: 'text/markdown', hash: 'sha256:1' })
  await svc.revise({ ownership, threadId, artifactId: rec.id, uri: `https://blob.example/${id}-v2`, hash: 'sha256:2' })
  await svc.approve({ ownership, threadId, artifactId: rec.id, version: 2, reviewer: 'user:bench' })
  await svc.get({ ownership, threadId, artifactId: rec.id })
}

async function measure(fn) {
  const loop = sampleLoopDelay()
  const t0 = performance.now()
  const n = await fn()
  const ms = performance.now() - t0
  const { p99, max } = loop.stop()
  return { n, ms, p99, max }
}

async function floorPairs(store, n, round) {
  return measure(async () => {
    for (let i = 0; i < n; i++) {
      const key = `floor:${round}:${i}`
      await store.saveCheckpoint({ namespace: 'bench.floor', key, ...ownership, version: 1, value: { i } })
      await store.loadCheckpoint({ namespace: 'bench.floor', key, ...ownership })
    }
    return n
  })
}

async function sequential(svc, n, tag) {
  return measure(async () => {
    for (let i = 0; i < n; i++) await cycle(svc, `seq-${tag}-${Math.floor(i / 50)}`, `s${i}`)
    return n
  })
}

async function concurrent(svc, perReviewer, tag) {
  return measure(async () => {
    await Promise.all(
      Array.from({ length: REVIEWERS }, async (_, r) => {
        // Threads of 50 artifacts keep every thread under the per-thread artifact cap.
        for (let i = 0; i < perReviewer; i++) await cycle(svc, `rev-${tag}-${r}-${Math.floor(i / 50)}`, `c${i}`)
      }),
    )
    return REVIEWERS * perReviewer
  })
}

function report(name, floor, m) {
  const perCycle = m.ms / m.n
  const floorPer = floor.ms / floor.n
  console.log(
    `${name.padEnd(34)} ${fmt(m.n / (m.ms / 1000), 0).padStart(7)} cycles/s  ${fmt(perCycle, 3)} ms/cycle  ` +
      `x${fmt(perCycle / floorPer, 1)} of floor (${fmt(floorPer, 3)} ms/save+load)  event-loop delay p99 ${fmtDelay(m.p99)} (max ${fmtDelay(m.max)})`,
  )
}

async function idle(ms) {
  return measure(async () => {
    await new Promise((r) => setTimeout(r, ms))
    return 1
  })
}

async function cyclesBench() {
  const scale = Number(process.env.BENCH_SCALE ?? 1)
  const quiet = await idle(1000)
  console.log(`idle event loop (floor for the delay figures): delay p99 ${fmtDelay(quiet.p99)} (max ${fmtDelay(quiet.max)})`)
  const dir = mkdtempSync(join(tmpdir(), 'prism-artifacts-bench-'))
  try {
    const kinds = [
      { name: 'memory', open: () => ({ store: prism.createMemoryCheckpointStore({ maxRecords: 1_000_000 }), close: async () => {} }), n: 1000 },
      {
        name: 'sqlite',
        open: () => {
          const p = prism.createSqlitePersistence({ filename: join(dir, 'bench.db') })
          return { store: p.checkpoints, close: () => p.close() }
        },
        n: 200,
      },
    ]
    const pgUrl = process.env.PRISM_TEST_POSTGRES_URL
    if (pgUrl && typeof prism.createPostgresPersistence === 'function') {
      kinds.push({
        name: 'postgresql',
        open: () => {
          const schema = `prism_art_bench_${process.pid}`
          const p = prism.createPostgresPersistence({ connectionString: pgUrl, schema, maxConnections: 16 })
          return {
            store: p.checkpoints,
            close: async () => {
              await p.close()
              const { execFileSync } = await import('node:child_process')
              execFileSync('psql', [pgUrl, '-qc', `DROP SCHEMA IF EXISTS "${schema}" CASCADE`], { stdio: 'ignore' })
            },
          }
        },
        n: 200,
      })
    }
    for (const kind of kinds) {
      const { store, close } = kind.open()
      const svc = prism.createArtifactService(store, {
        redactor: prism.createSecretRedactor(['bench-secret-value']),
        linkSecret: 'bench-link-secret-0123456789abcdef',
      })
      const n = Math.max(10, Math.round(kind.n * scale))
      const perReviewer = Math.max(2, Math.round(n / REVIEWERS))
      await sequential(svc, 20, 'warm')
      // Three interleaved rounds (floor, sequential, concurrent); the median round of each
      // is reported, which damps the noise of a shared machine.
      const rounds = { floor: [], seq: [], conc: [] }
      for (let round = 0; round < 3; round++) {
        rounds.floor.push(await floorPairs(store, n, round))
        rounds.seq.push(await sequential(svc, n, `r${round}`))
        rounds.conc.push(await concurrent(svc, perReviewer, `r${round}`))
      }
      const med = (list) => [...list].sort((a, b) => a.ms / a.n - b.ms / b.n)[1]
      const floor = med(rounds.floor)
      report(`${kind.name}: sequential cycles`, floor, med(rounds.seq))
      report(`${kind.name}: ${REVIEWERS} concurrent reviewers`, floor, med(rounds.conc))
      await close()
    }
    console.log('(cycle = attach → revise → approve → get; event-loop delay: beyond the 1 ms timer that samples it)')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}


export default async function main() {
  await cyclesBench()
  const { default: sbs } = await import('./sidebyside.mjs')
  await sbs()
}
