// Artifact bodies: put and get of 64 MiB and 512 MiB through the native S3 adapter
// against a local s3s-fs, each next to curl doing the same transfer in the same run (the
// ratio is the figure: the machine is shared and noisy), with the peak RSS of the Node
// child process that did the transfer (it must not grow with the body).
// - "ratio" is the median adapter time over the median curl time; "paired" the median of
//   each run's adapter/curl ratio (each pair runs back to back, so it follows the
//   machine's load better; its range in brackets shows how noisy the run was). A get's
//   adapter time also shows when the body had verified (the rest is reading it back into
//   JavaScript). Which side goes first alternates from run to run, and every timed
//   transfer starts after `sync` (untimed), so neither side inherits the other's
//   page-cache writeback.
// - Both sides time the transfer alone: the child from its call to the last byte (not
//   Node's start-up), curl its own `time_total` (not its process start).
// - "adapter CPU" is the child's user + system time over the transfer; "server CPU" the
//   s3s-fs time over the adapter's and over curl's transfer (Linux only). s3s-fs reads
//   objects 4 KiB at a time through tokio::fs, so it costs far more CPU than either
//   client and sets the pace (both clients' receive queues stay near empty); on a loaded
//   machine the clients' CPU competes with it, so the adapter's extra work (SHA-256, the
//   spool, the read-back) shows in the ratio roughly as its share of the CPU spent.
// - "put" streams the file as a web ReadableStream of fresh 1 MiB chunks read straight
//   from the file (as curl -T reads into its buffer); `Readable.toWeb(createReadStream())`
//   would copy each chunk once more inside Node's adapter, a host's cost, not the store's.
//   "put (bytes)" puts the body as one Uint8Array read into memory first: its RSS beyond
//   the body shows the body is not copied into the native side.
// Needs s3s-fs (PRISM_S3S_FS or the cache path; see README, "Develop").
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ACCESS_KEY, BUCKET, SECRET_KEY, s3sFsMissing, startS3sFs } from '../__test__/s3-support.mjs'
import { fmt } from './util.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const MiB = 1024 * 1024

// The child: one transfer, then its time and CPU (ms, the transfer alone) and peak RSS (KiB).
const CHILD = `
const { createS3ArtifactBodyStore } = require(${JSON.stringify(join(root, 'index.js'))})
const fs = require('node:fs')
const [op, endpoint, file, refJson] = process.argv.slice(1)
const ref = JSON.parse(refJson)
const store = createS3ArtifactBodyStore({ endpoint, bucket: ${JSON.stringify(BUCKET)}, credentials: () => ({ accessKeyId: ${JSON.stringify(ACCESS_KEY)}, secretAccessKey: ${JSON.stringify(SECRET_KEY)} }), limits: { maxBodyBytes: 512 * 1024 * 1024 } })
function fileStream(path) {
  let fh
  return new ReadableStream({
    async start() { fh = await fs.promises.open(path) },
    async pull(c) {
      const buf = Buffer.allocUnsafeSlow(1024 * 1024)
      const { bytesRead } = await fh.read(buf, 0, buf.length, null)
      if (bytesRead === 0) { await fh.close(); c.close(); return }
      c.enqueue(bytesRead === buf.length ? buf : buf.subarray(0, bytesRead))
    },
    async cancel() { await fh.close() },
  }, { highWaterMark: 0 })
}
;(async () => {
  const whole = op === 'put-bytes' ? fs.readFileSync(file) : null
  const t0 = performance.now()
  const c0 = process.cpuUsage()
  let verifiedMs
  if (op === 'put') {
    await store.put(ref, fileStream(file))
  } else if (op === 'put-bytes') {
    await store.put(ref, whole)
  } else {
    const stream = await store.get(ref)
    verifiedMs = performance.now() - t0
    let n = 0
    for await (const c of stream) n += c.byteLength
    if (n !== ref.size) throw new Error('short read')
  }
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(c0)
  process.stdout.write(JSON.stringify({ ms, verifiedMs, cpuMs: (cpu.user + cpu.system) / 1000, rssKiB: process.resourceUsage().maxRSS }))
})().catch((e) => { console.error(e); process.exit(1) })
`

function child(op, endpoint, file, ref) {
  const r = spawnSync(process.execPath, ['-e', CHILD, op, endpoint, file, JSON.stringify(ref)], { encoding: 'utf8', maxBuffer: 1 << 20 })
  if (r.status !== 0) throw new Error(`bench child failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

function curl(args) {
  const out = execFileSync('curl', ['-sS', '-f', '-o', '/dev/null', '-w', '%{time_total}', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  return { ms: Number(out.trim()) * 1000 }
}

/** Flush dirty pages (untimed), so a transfer never pays for the previous one's writeback. */
function settle() {
  try {
    execFileSync('sync')
  } catch {
    // No sync command: the comparison is then only as fair as the alternating order.
  }
}

/** CPU milliseconds s3s-fs has used so far, or null where /proc is not there. */
function serverCpu(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS
  } catch {
    return null
  }
}
let TICKS = 100
try {
  TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
} catch {
  // Linux's usual value.
}

function timed(pid, fn) {
  settle()
  const c0 = serverCpu(pid)
  const out = fn()
  const c1 = serverCpu(pid)
  return { ...out, serverMs: c0 === null || c1 === null ? NaN : c1 - c0 }
}

function makeFile(dir, size) {
  const file = join(dir, `body-${size}`)
  const fd = openSync(file, 'w')
  const hash = createHash('sha256')
  const chunk = Buffer.alloc(MiB)
  for (let off = 0; off < size; off += MiB) {
    for (let i = 0; i < MiB; i += 4096) chunk.writeUInt32LE((off + i) >>> 0, i)
    writeSync(fd, chunk)
    hash.update(chunk)
  }
  closeSync(fd)
  return { file, hash: hash.digest('hex') }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

function report(size, op, ours, theirs) {
  const ms = median(ours.map((o) => o.ms))
  const c = median(theirs.map((o) => o.ms))
  const ratios = ours.map((o, i) => o.ms / theirs[i].ms)
  const paired = `${fmt(median(ratios))}x (${fmt(Math.min(...ratios), 1)}-${fmt(Math.max(...ratios), 1)})`
  const verified = op === 'get' ? ` (${fmt(median(ours.map((o) => o.verifiedMs)), 0)} verified)` : ''
  const cpu = median(ours.map((o) => o.cpuMs))
  const server = `${fmt(median(ours.map((o) => o.serverMs)), 0)} / ${fmt(median(theirs.map((o) => o.serverMs)), 0)}`
  const rss = Math.max(...ours.map((o) => o.rssKiB)) / 1024
  const beyond = op === 'put (bytes)' ? ` (${fmt(rss - size / MiB, 0)} MiB beyond the body)` : ''
  console.log(`| ${size / MiB} MiB | ${op} | ${fmt(ms, 0)}${verified} | ${fmt(c, 0)} | ${fmt(ms / c)}x | ${paired} | ${fmt(cpu, 0)} | ${server} | ${fmt(rss, 0)} MiB${beyond} |`)
}

export default async function run() {
  const missing = s3sFsMissing()
  if (missing) {
    console.log(`skipped: ${missing}`)
    return
  }
  const s3 = await startS3sFs()
  const dir = mkdtempSync(join(tmpdir(), 'prism-bodies-bench-'))
  const { createS3ArtifactBodyStore } = await import('../index.mjs')
  const presigner = createS3ArtifactBodyStore({ endpoint: s3.endpoint, bucket: BUCKET, credentials: () => ({ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY }), limits: { maxBodyBytes: 512 * MiB } })
  try {
    console.log(`load average at start: ${loadavg().map((l) => fmt(l)).join(' ')}`)
    console.log('| body | op | adapter ms | curl ms | ratio | paired | adapter CPU ms | server CPU ms (adapter / curl) | child peak RSS |')
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for (const size of [64 * MiB, 512 * MiB]) {
      const { file, hash } = makeFile(dir, size)
      const runs = size > 64 * MiB ? 5 : 9
      const ref = { tenantId: 'bench', threadId: 'th', artifactId: `a${size}`, version: 1, mime: 'application/octet-stream', size, hash }
      const curlRef = { ...ref, artifactId: `curl${size}` }
      const url = `${s3.endpoint}/${BUCKET}/prism-artifacts/bench/th/${curlRef.artifactId}/1`
      const curlPut = () => curl(['-X', 'PUT', '--aws-sigv4', 'aws:amz:us-east-1:s3', '--user', `${ACCESS_KEY}:${SECRET_KEY}`, '-H', `x-amz-content-sha256: ${hash}`, '-H', 'content-type: application/octet-stream', '-T', file, url])
      const getUrl = await presigner.presign(curlRef)
      const pairs = {
        put: [() => child('put', s3.endpoint, file, ref), curlPut],
        'put (bytes)': [() => child('put-bytes', s3.endpoint, file, ref), curlPut],
        get: [() => child('get', s3.endpoint, file, ref), () => curl([getUrl])],
      }
      const rows = Object.fromEntries(Object.keys(pairs).map((op) => [op, [[], []]]))
      for (let i = 0; i < runs; i++) {
        for (const [op, [ours, theirs]] of Object.entries(pairs)) {
          // Even runs: the adapter first; odd runs: curl first.
          const order = i % 2 === 0 ? [0, 1] : [1, 0]
          for (const side of order) rows[op][side].push(timed(s3.pid, side === 0 ? ours : theirs))
        }
      }
      for (const [op, [ours, theirs]] of Object.entries(rows)) report(size, op, ours, theirs)
      rmSync(file)
    }
    console.log(`load average at end: ${loadavg().map((l) => fmt(l)).join(' ')}`)
  } finally {
    await s3.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
