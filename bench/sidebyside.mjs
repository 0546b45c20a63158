// The reference-style workload of issue 13: single service and store calls, the
// attach→revise→approve→get cycle, and 32 concurrent reviewers (attach+approve), on
// prism-review and, when PRISM_BENCH_REFERENCE points at a build of @arnilo/prism 0.3.0
// (its dist/ and packages/*/dist/), on the reference too, in the same process and run.
// Every row is a ratio measured in that run; the machine is shared and noisy.
import { performance } from 'node:perf_hooks'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { execFileSync } from 'node:child_process'
import { fmt, sampleLoopDelay, worseDelay, fmtDelay, fmtSteal } from './util.mjs'
import { sampleStalls } from './stalls.mjs'

const require = createRequire(import.meta.url)
const ownership = { tenantId: 'bench' }
const REVIEWERS = 32
const SECRET = 'bench-secret-value'
const LINK = 'bench-link-secret-0123456789abcdef'
/** Connections each implementation's PostgreSQL pool may open (PRISM_BENCH_PG_CONNECTIONS, default 8). */
const PG_CONNECTIONS = Math.max(1, Number(process.env.PRISM_BENCH_PG_CONNECTIONS ?? 8))
/** Measured passes per store kind (PRISM_BENCH_PASSES, default 3). */
const PASSES = Math.max(1, Number(process.env.PRISM_BENCH_PASSES ?? 3))

function ours() {
  const prism = require('../index.js')
  return {
    name: 'prism-review',
    memory: () => ({ store: prism.createMemoryCheckpointStore({ maxRecords: 1_000_000 }), close: async () => {} }),
    sqlite: async (file) => {
      const p = prism.createSqlitePersistence({ filename: file })
      return { store: p.checkpoints, close: () => p.close() }
    },
    postgres: async (url, schema) => {
      const p = prism.createPostgresPersistence({ connectionString: url, schema, maxConnections: PG_CONNECTIONS })
      return { store: p.checkpoints, close: () => p.close() }
    },
    service: (store) => prism.createArtifactService(store, { redactor: prism.createSecretRedactor([SECRET]), linkSecret: LINK }),
  }
}

async function reference(root) {
  const load = (p) => import(pathToFileURL(join(root, p)).href)
  const [core, server, sqlite, pg] = await Promise.all([
    load('dist/index.js'),
    load('packages/server/dist/artifacts.js'),
    load('packages/session-store-sqlite/dist/index.js'),
    load('packages/session-store-postgres/dist/index.js'),
  ])
  const impl = {
    name: 'reference',
    memory: () => ({ store: core.createMemoryCheckpointStore({ maxRecords: 1_000_000 }), close: async () => {} }),
    sqlite: async (file) => {
      const p = sqlite.createSqlitePersistence({ filename: file })
      return { store: p.checkpoints, close: async () => p.close() }
    },
    postgres: async (url, schema) => {
      const p = await pg.createPostgresPersistence({ connectionString: url, schema, poolMax: PG_CONNECTIONS })
      return { store: p.checkpoints, close: () => p.close() }
    },
    service: (store) => server.createArtifactService(store, { redactor: core.createSecretRedactor([SECRET]), linkSecret: LINK }),
  }
  // The reference's SQLite store as shipped commits without fsync: better-sqlite3 builds
  // SQLite with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1 (NORMAL in WAL mode; `strace -c` counts
  // 4 fsyncs per 100 commits). Ours keeps synchronous=FULL (one fsync per commit, or per
  // group commit), so the reference is measured a second time with FULL set explicitly.
  const Database = createRequire(join(root, 'packages/session-store-sqlite/package.json'))('better-sqlite3')
  const full = {
    name: 'reference (synchronous=FULL)',
    sqlite: async (file) => {
      const db = new Database(file)
      db.pragma('journal_mode = WAL')
      db.pragma('synchronous = FULL')
      const p = sqlite.createSqlitePersistence({ database: db })
      return { store: p.checkpoints, close: async () => { p.close(); db.close() } }
    },
    service: impl.service,
  }
  return [impl, full]
}

/** Runs `fn` with the event-loop delay sampled; returns ms and the p99 delay in ms. */
async function timed(fn) {
  const loop = sampleLoopDelay()
  const t0 = performance.now()
  await fn()
  const ms = performance.now() - t0
  return { ms, p99: loop.stop().p99 }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
/** The median of delay figures, leaving out NaN (no sample); NaN when none has one. */
function medianDelay(xs) {
  const sampled = xs.filter((x) => !Number.isNaN(x))
  return sampled.length > 0 ? median(sampled) : NaN
}

let seq = 0
const tid = (tag, i) => `${tag}-${seq}-${Math.floor(i / 40)}`
const attachInput = (threadId, id) => ({ ownership, threadId, id, uri: `https://blob.example/${id}`, mime: 'text/markdown', hash: 'sha256:1' })

/**
 * One row: `n` sequential calls of `call(ctx, i)`, each batch after `ctx = await prep(n)`.
 * @typedef {{ n: number, prep: (n: number) => Promise<any>, call: (ctx: any, i: number) => Promise<unknown> }} Row
 */
const row = (n, prep, call) => ({ n, prep, call })

/** One batch of `r`: µs per call and the p99 event-loop delay while it ran. */
async function batch(r) {
  seq++
  const ctx = await r.prep(r.n)
  const t = await timed(async () => {
    for (let i = 0; i < r.n; i++) await r.call(ctx, i)
  })
  return { us: (t.ms * 1000) / r.n, p99: t.p99 }
}

/** µs per call of row `r` (median of `rounds` batches). */
async function perCall(r, rounds = 3) {
  const out = []
  let p99 = NaN
  for (let k = 0; k < rounds; k++) {
    const b = await batch(r)
    out.push(b.us)
    p99 = worseDelay(p99, b.p99)
  }
  return { us: median(out), p99 }
}

/** Each row of `rows` measured `rounds` times. */
async function measureRows(rows, rounds = 3) {
  const out = {}
  for (const [name, r] of Object.entries(rows)) out[name] = await perCall(r, rounds)
  return out
}

/** `count` artifacts attached, 40 to a thread, under threads tagged `tag`: their ids. */
async function attachMany(svc, tag, count) {
  const ids = []
  for (let i = 0; i < count; i++) {
    const rec = await svc.attach(attachInput(tid(tag, i), `a${i}`))
    ids.push({ threadId: tid(tag, i), artifactId: rec.id })
  }
  return ids
}

/** The single calls of the first store: rows over `svc`, a service on `store`. */
function singleRows(svc, store, n) {
  const attachN = (count) => attachMany(svc, `p${seq}`, count)
  const save = (key) => store.saveCheckpoint({ namespace: 'bench.cp', key, ...ownership, version: 1, value: { record: 'x'.repeat(400) } })
  return {
    'service.get': row(n, async () => attachN(40), (ids, i) => svc.get({ ownership, ...ids[i % ids.length] })),
    'store.loadCheckpoint': row(
      n,
      async () => {
        await save(`k${seq}`)
        return `k${seq}`
      },
      (key) => store.loadCheckpoint({ namespace: 'bench.cp', key, ...ownership }),
    ),
    'store.saveCheckpoint': row(n, async () => `s${seq}`, (key, i) => save(`${key}-${i}`)),
    'service.attach': row(n, async () => `t${seq}`, (tag, i) => svc.attach(attachInput(tid(tag, i), `a${i}`))),
    'service.approve': row(n, attachN, (ids, i) => svc.approve({ ownership, ...ids[i], version: 1, reviewer: 'user:bench' })),
  }
}

/** The other service and store calls (issue 13: every call), each on records made for it. */
function otherRows(svc, store, n) {
  const attachN = (count) => attachMany(svc, `o${seq}`, count)
  const rows = {}
  const revised = async (count) => {
    const ids = await attachN(count)
    for (const id of ids) await svc.revise({ ownership, ...id, uri: 'https://blob.example/v2', hash: 'sha256:2' })
    return ids
  }
  const approved = async (count) => {
    const ids = await attachN(count)
    for (const id of ids) await svc.approve({ ownership, ...id, version: 1, reviewer: 'user:bench' })
    return ids
  }
  rows['service.reject'] = row(n, attachN, (ids, i) => svc.reject({ ownership, ...ids[i], version: 1, reviewer: 'user:bench' }))
  rows['service.revise'] = row(n, attachN, (ids, i) => svc.revise({ ownership, ...ids[i], uri: `https://blob.example/v2-${i}`, hash: 'sha256:2' }))
  rows['service.compare'] = row(n, async () => revised(40), (ids, i) => svc.compare({ ownership, ...ids[i % ids.length], from: 1, to: 2 }))
  rows['service.lastValidated'] = row(n, async () => approved(40), (ids, i) => svc.lastValidated({ ownership, ...ids[i % ids.length] }))
  rows['service.deliveryLink'] = row(n, async () => approved(40), (ids, i) => svc.deliveryLink({ ownership, ...ids[i % ids.length], version: 1 }))
  // A thread of 40 artifacts, listed whole.
  rows['service.list (40)'] = row(Math.max(4, Math.round(n / 10)), async () => attachN(40), (ids) => svc.list({ ownership, threadId: ids[0].threadId }))
  rows['store.listCheckpoints (40)'] = row(
    Math.max(4, Math.round(n / 10)),
    async () => {
      const namespace = `bench.list${seq}`
      for (let i = 0; i < 40; i++) await store.saveCheckpoint({ namespace, key: `k${i}`, ...ownership, version: 1, value: { record: 'x'.repeat(400) } })
      return namespace
    },
    (namespace) => store.listCheckpoints({ namespace, ...ownership, limit: 40 }),
  )
  rows['store.deleteCheckpoint'] = row(
    n,
    async (count) => {
      const key = `d${seq}`
      for (let i = 0; i < count; i++) await store.saveCheckpoint({ namespace: 'bench.cp', key: `${key}-${i}`, ...ownership, version: 1, value: { record: 'x'.repeat(400) } })
      return key
    },
    (key, i) => store.deleteCheckpoint({ namespace: 'bench.cp', key: `${key}-${i}`, ...ownership }),
  )
  return rows
}

async function cycle(svc, threadId, id) {
  const rec = await svc.attach(attachInput(threadId, id))
  await svc.revise({ ownership, threadId, artifactId: rec.id, uri: `https://blob.example/${id}-v2`, hash: 'sha256:2' })
  await svc.approve({ ownership, threadId, artifactId: rec.id, version: 2, reviewer: 'user:bench' })
  await svc.get({ ownership, threadId, artifactId: rec.id })
}

async function cycles(svc, n) {
  const ms = []
  let p99 = NaN
  for (let r = 0; r < 3; r++) {
    seq++
    const tag = `c${seq}`
    const t = await timed(async () => {
      for (let i = 0; i < n; i++) await cycle(svc, tid(tag, i), `c${i}`)
    })
    ms.push(t.ms / n)
    p99 = worseDelay(p99, t.p99)
  }
  return { ms: median(ms), p99 }
}

/**
 * One round of 32 reviewers, each attaching and approving its own artifacts: ops (attach or
 * approve) per second, the p99 event-loop delay, and the CPU time this process spent per
 * op on all its threads (`cpuUs`; a database server's processes are not counted).
 */
async function reviewersRound(svc, perReviewer) {
  seq++
  const tag = `r${seq}`
  const cpu = process.cpuUsage()
  const t = await timed(() =>
    Promise.all(
      Array.from({ length: REVIEWERS }, async (_, w) => {
        for (let i = 0; i < perReviewer; i++) {
          const threadId = `${tag}-${w}-${Math.floor(i / 40)}`
          const rec = await svc.attach(attachInput(threadId, `a${i}`))
          await svc.approve({ ownership, threadId, artifactId: rec.id, version: 1, reviewer: `user:r${w}` })
        }
      }),
    ),
  )
  const used = process.cpuUsage(cpu)
  const ops = REVIEWERS * perReviewer * 2
  return { perSec: (ops * 1000) / t.ms, p99: t.p99, cpuUs: (used.user + used.system) / ops }
}

/** Three rounds of 32 reviewers: the median rate, the worst p99. */
async function reviewers(svc, perReviewer) {
  const rates = []
  let p99 = NaN
  for (let r = 0; r < 3; r++) {
    const round = await reviewersRound(svc, perReviewer)
    rates.push(round.perSec)
    p99 = worseDelay(p99, round.p99)
  }
  return { perSec: median(rates), p99 }
}

/** A plain-JS Map lookup plus structuredClone of the same record (the floor for `get`). */
async function mapFloor(record, n) {
  const m = new Map([['k', record]])
  const out = []
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now()
    for (let i = 0; i < n; i++) await structuredClone(m.get('k'))
    out.push(((performance.now() - t0) * 1000) / n)
  }
  return median(out)
}

async function measureKind(impl, kind, open, sizes, stalls = false) {
  let measured
  // The delay over the whole workload: one histogram, thousands of samples (a row alone
  // holds a few dozen, so its p99 is nearly its maximum).
  const whole = sampleLoopDelay()
  const first = await open()
  try {
    // PRISM_BENCH_STALLS=1: where the long event-loop stalls of our runs go (bench/stalls.mjs).
    const sampler = stalls ? sampleStalls() : undefined
    const svc = impl.service(first.store)
    const rows = await measureRows(singleRows(svc, first.store, sizes.single))
    const cyc = await cycles(svc, sizes.cycles)
    const rev = await reviewers(svc, sizes.perReviewer)
    measured = { rows, cyc, rev, stalls: sampler?.stop() }
  } finally {
    await first.close()
  }
  // The other calls on a store opened again (a fresh one for memory): the reference's
  // memory store lists and counts by walking all its records, so the records the rows
  // above left would tilt these rows (and these rows' records the ones above).
  const second = await open()
  try {
    Object.assign(measured.rows, await measureRows(otherRows(impl.service(second.store), second.store, sizes.single)))
  } finally {
    await second.close()
  }
  measured.loop = whole.stop()
  return measured
}

/**
 * Open a store for each implementation, make each side of it (`side(impl, store)`), run
 * `measure(sides)`, then close every store opened, whatever happened.
 */
async function onOpenStores(impls, open, side, measure) {
  const opened = []
  try {
    const sides = []
    for (const impl of impls) {
      const { store, close } = await open(impl)
      opened.push(close)
      sides.push(await side(impl, store))
    }
    await measure(sides)
  } finally {
    for (const close of opened) await close()
  }
}

/** The order `n` implementations take their turns in round `turn`: forwards, then backwards, alternately. */
const turnOrder = (n, turn) => Array.from({ length: n }, (_, j) => (turn % 2 === 0 ? j : n - 1 - j))

/**
 * The single-call rows once more, each implementation's batches alternating with the
 * others' (the order turned every round), so that a slow phase of the shared machine lands
 * on every side: it lasts seconds (issue 13 saw one process's `approve` batches go from 11
 * to 15 µs and back), longer than a batch, shorter than a pass. Stores are opened and
 * grown as in the passes (`measureKind`: three batches per row on a store, the rows of the
 * first store and those of the second each on stores opened for them), `passes` times.
 * Per row and implementation: the median batch, and the median over the rounds of that
 * implementation's batch over ours in the same round (`paired`).
 */
async function pairedRows(impls, open, n, passes) {
  /** row → per implementation, its batches in round order */
  const batches = {}
  for (let pass = 0; pass < passes; pass++) {
    for (const rowsOf of [singleRows, otherRows]) {
      await onOpenStores(impls, open, (impl, store) => rowsOf(impl.service(store), store, n), async (sides) => {
        for (const name of Object.keys(sides[0])) {
          batches[name] ??= sides.map(() => [])
          for (let k = 0; k < 3; k++) {
            for (const j of turnOrder(sides.length, pass + k)) batches[name][j].push((await batch(sides[j][name])).us)
          }
        }
      })
    }
  }
  const out = {}
  for (const [name, us] of Object.entries(batches)) {
    out[name] = us.map((xs) => ({ us: median(xs), paired: median(xs.map((x, k) => x / us[0][k])) }))
  }
  return out
}

/**
 * The 32-reviewer rounds once more, each implementation's rounds alternating with the
 * others' (the order turned every round) on stores opened for them and warmed by one
 * unmeasured round, as `pairedRows` does for single calls: a round takes tens of
 * milliseconds, a slow phase of the machine seconds, so it lands on every side. Per
 * implementation: the median rate, the median over the rounds of ours over that
 * implementation's rate in the same round (`paired`: how many times ours beats it), and
 * the median CPU time per op (`cpuUs`).
 */
async function pairedReviewers(impls, open, perReviewer, passes) {
  const rates = impls.map(() => [])
  const cpu = impls.map(() => [])
  for (let pass = 0; pass < passes; pass++) {
    const warmed = async (impl, store) => {
      const svc = impl.service(store)
      // Unmeasured: the store's first writes (connections, statements) and a warm pool.
      await reviewersRound(svc, perReviewer)
      return svc
    }
    await onOpenStores(impls, open, warmed, async (services) => {
      for (let k = 0; k < 5; k++) {
        for (const j of turnOrder(services.length, pass + k)) {
          const round = await reviewersRound(services[j], perReviewer)
          rates[j].push(round.perSec)
          cpu[j].push(round.cpuUs)
        }
      }
    })
  }
  return rates.map((xs, j) => ({ perSec: median(xs), paired: median(xs.map((x, k) => rates[0][k] / x)), cpuUs: median(cpu[j]) }))
}

/** Measured passes of one implementation: per figure, the median over the passes (p99: the worst). */
function combine(passes) {
  const pick = (f) => median(passes.map(f))
  const worst = (f) => passes.map(f).reduce(worseDelay, NaN)
  const rows = Object.fromEntries(
    Object.keys(passes[0].rows).map((name) => [name, { us: pick((p) => p.rows[name].us), p99: worst((p) => p.rows[name].p99) }]),
  )
  return {
    rows,
    cyc: { ms: pick((p) => p.cyc.ms), p99: worst((p) => p.cyc.p99) },
    rev: { perSec: pick((p) => p.rev.perSec), p99: worst((p) => p.rev.p99) },
    loop: {
      median: medianDelay(passes.map((p) => p.loop.p99)),
      worst: worst((p) => p.loop.p99),
      samples: passes.reduce((n, p) => n + p.loop.samples, 0),
      // The host's steal over every pass (NaN where the machine does not report it).
      stealMs: passes.reduce((n, p) => n + p.loop.stealMs, 0),
    },
    stalls: passes[0].stalls,
  }
}

function line(label, a, refs, unit, better, target) {
  // `better`: 'lower' (latencies) or 'higher' (throughput); x = how many times ours beats that reference.
  let text = `${label.padEnd(44)} ${fmt(a, 1).padStart(8)} ${unit}`
  for (const [name, b] of refs) {
    if (b === undefined) continue
    const ratio = better === 'lower' ? b / a : a / b
    const verdict = target === undefined || name !== 'reference' ? '' : ` (target x${target}: ${ratio >= target ? 'met' : 'NOT met'})`
    text += ` | ${name} ${fmt(b, 1)} ${unit} x${fmt(ratio, 2)}${verdict}`
  }
  console.log(text)
}

/**
 * A figure measured in pairs: ours, then per other implementation its median and `x` its
 * paired ratio (how many times ours beats it). `value` picks the figure of a side: µs per
 * call (the default) or, with `unit` 'ops/s', its rate.
 */
function pairedLine(label, impls, sides, target, unit = 'µs', value = (side) => side.us) {
  let text = `${label.padEnd(44)} ${fmt(value(sides[0]), 1).padStart(8)} ${unit}`
  for (let j = 1; j < impls.length; j++) {
    const ratio = sides[j].paired
    const verdict = target === undefined || impls[j].name !== 'reference' ? '' : ` (target x${target}: ${ratio >= target ? 'met' : 'NOT met'})`
    text += ` | ${impls[j].name} ${fmt(value(sides[j]), 1)} ${unit} x${fmt(ratio, 2)}${verdict}`
  }
  console.log(text)
}

export default async function sideBySide() {
  const refRoot = process.env.PRISM_BENCH_REFERENCE
  const impls = [ours()]
  if (refRoot) impls.push(...(await reference(refRoot)))
  else console.log('reference: not loaded (set PRISM_BENCH_REFERENCE to a build of @arnilo/prism 0.3.0 for side-by-side rows)')
  const pgUrl = process.env.PRISM_TEST_POSTGRES_URL
  const scale = Number(process.env.BENCH_SCALE ?? 1)
  const dir = mkdtempSync(join(tmpdir(), 'prism-sbs-'))
  const results = {}
  /** kind → the implementations measured and their rows measured in pairs (`pairedRows`). */
  const paired = {}
  // The machine's own event-loop noise, next to the p99 figures.
  const idle = await timed(() => new Promise((r) => setTimeout(r, 1000)))
  try {
    const kinds = [
      ['memory', (impl) => impl.memory(), { single: 2000, cycles: 500, perReviewer: 30 }],
      ['sqlite', (impl) => impl.sqlite(join(dir, `${impl.name}.db`)), { single: 300, cycles: 150, perReviewer: 10 }],
    ]
    if (pgUrl) {
      kinds.push([
        'postgresql',
        (impl) => {
          const schema = `prism_sbs_${impl.name.replace(/\W/g, '_')}_${process.pid}`
          return impl.postgres(pgUrl, schema).then(({ store, close }) => ({
            store,
            close: async () => {
              await close()
              execFileSync('psql', [pgUrl, '-qc', `DROP SCHEMA IF EXISTS "${schema}" CASCADE`], { stdio: 'ignore' })
            },
          }))
        },
        { single: 200, cycles: 100, perReviewer: 8 },
      ])
      console.log(`postgresql: each implementation's pool opens at most ${PG_CONNECTIONS} connections (PRISM_BENCH_PG_CONNECTIONS)`)
    } else console.log('postgresql: skipped (PRISM_TEST_POSTGRES_URL is not set)')
    // PRISM_BENCH_STORES=memory,sqlite limits the stores measured.
    const only = process.env.PRISM_BENCH_STORES?.split(',')
    if (only) kinds.splice(0, kinds.length, ...kinds.filter(([k]) => only.includes(k)))
    for (const [kind, open, base] of kinds) {
      const sizes = Object.fromEntries(Object.entries(base).map(([k, v]) => [k, Math.max(4, Math.round(v * scale))]))
      const measured = impls.filter((i) => i[kind === 'postgresql' ? 'postgres' : kind] !== undefined)
      for (const impl of measured) {
        // Warm-up (JIT, pools, migrations) before the measured passes.
        await measureKind(impl, kind, open.bind(null, impl), { single: 50, cycles: 20, perReviewer: 2 })
      }
      // PASSES passes, each measuring every implementation in turn, so a slow phase of the
      // shared machine lands on both sides; each figure is the median over the passes.
      const runs = new Map(measured.map((impl) => [impl, []]))
      for (let pass = 0; pass < PASSES; pass++) {
        for (const impl of measured) {
          const stalls = impl === impls[0] && pass === 0 && process.env.PRISM_BENCH_STALLS === '1'
          runs.get(impl).push(await measureKind(impl, kind, open.bind(null, impl), sizes, stalls))
        }
      }
      for (const [impl, passes] of runs) results[`${impl.name}/${kind}`] = combine(passes)
      if (measured.length > 1) {
        paired[kind] = {
          impls: measured,
          rows: await pairedRows(measured, open, sizes.single, PASSES),
          reviewers: await pairedReviewers(measured, open, sizes.perReviewer, PASSES),
        }
      }
    }
    const record = await (async () => {
      const { store } = impls[0].memory()
      const svc = impls[0].service(store)
      await svc.attach(attachInput('floor', 'a1'))
      return svc.get({ ownership, threadId: 'floor', artifactId: 'a1' })
    })()
    const floor = await mapFloor(record, 20000)
    console.log('\n### reference-style workload (x = times faster than the reference; µs per call, sequential)')
    if (Object.keys(paired).length > 0) {
      console.log(`(single calls: each implementation's batches alternating, ${3 * PASSES} rounds; µs = the median batch, x = the median over the rounds of the reference's batch over ours in the same round; 32 reviewers likewise, ${5 * PASSES} rounds alternating: ops/s = the median round, x = the median of ours over theirs in the same round)`)
    }
    for (const [kind] of kinds) {
      const o = results[`prism-review/${kind}`]
      const refs = impls.slice(1).map((i) => [i.name, results[`${i.name}/${kind}`]])
      const single = kind === 'memory' ? 2 : kind === 'sqlite' ? 1 : undefined
      const pairs = paired[kind]
      for (const name of Object.keys(o.rows)) {
        if (pairs) pairedLine(`${name} (${kind})`, pairs.impls, pairs.rows[name], single)
        else line(`${name} (${kind})`, o.rows[name].us, refs.map(([n, r]) => [n, r?.rows[name].us]), 'µs', 'lower', single)
      }
      line(`cycle attach→revise→approve→get (${kind})`, o.cyc.ms * 1000, refs.map(([n, r]) => [n, r && r.cyc.ms * 1000]), 'µs', 'lower', single)
      const target = kind === 'sqlite' ? 3 : undefined
      if (pairs) {
        pairedLine(`${REVIEWERS} reviewers attach+approve (${kind})`, pairs.impls, pairs.reviewers, target, 'ops/s', (side) => side.perSec)
        const [own, ...others] = pairs.reviewers
        const cpuOf = others.map((side, j) => ` | ${pairs.impls[j + 1].name} ${fmt(side.cpuUs, 1)} µs x${fmt(side.cpuUs / own.cpuUs, 2)}`).join('')
        const server = kind === 'postgresql' ? '; the server\'s processes not counted' : ''
        console.log(`${`  CPU per op, all threads (${kind})`.padEnd(44)} ${fmt(own.cpuUs, 1).padStart(8)} µs${cpuOf}  (median round${server})`)
      } else line(`${REVIEWERS} reviewers attach+approve (${kind})`, o.rev.perSec, refs.map(([n, r]) => [n, r?.rev.perSec]), 'ops/s', 'higher', target)
      // The target's figure: the p99 over each pass's whole workload (the worst pass decides).
      const { worst, samples } = o.loop
      const verdict = Number.isNaN(worst) ? 'nothing to measure' : worst < 1 ? 'met' : 'NOT met'
      const over = samples === 0 ? '' : ` over the whole workload (${samples} samples; median pass ${fmtDelay(o.loop.median)})`
      console.log(`${`event-loop p99 delay, prism-review (${kind})`.padEnd(44)} ${fmtDelay(worst).padStart(11)}${over}  (target < 1 ms: ${verdict}; idle loop ${fmtDelay(idle.p99)}${fmtSteal(o.loop.stealMs)})`)
      const rowWorst = [o.cyc.p99, o.rev.p99, ...Object.values(o.rows).map((x) => x.p99)].reduce(worseDelay, NaN)
      if (!Number.isNaN(rowWorst)) console.log(`${`highest p99 of one row (${kind})`.padEnd(44)} ${fmtDelay(rowWorst).padStart(11)}  (a row holds a few dozen samples: its p99 is nearly its maximum)`)
      if (o.stalls) {
        console.log(`${`event-loop stalls, prism-review (${kind})`.padEnd(44)} ${o.stalls}`)
        const byRow = [...Object.entries(o.rows).map(([n, r]) => [n, r.p99]), ['cycle', o.cyc.p99], ['reviewers', o.rev.p99]]
        console.log(`${`event-loop p99 by row (${kind})`.padEnd(44)} ${byRow.map(([n, v]) => `${n} ${fmtDelay(v)}`).join(', ')}`)
      }
    }
    if (!results['prism-review/memory']) return
    const get = results['prism-review/memory'].rows['service.get'].us
    console.log(
      `${'Map.get + structuredClone of the record'.padEnd(44)} ${fmt(floor, 1).padStart(8)} µs  service.get (memory) = x${fmt(get / floor, 2)} of it (target ≤ x3: ${get <= 3 * floor ? 'met' : 'NOT met'})`,
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
