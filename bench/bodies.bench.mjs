// Artifact bodies: put and get of 64 MiB and 512 MiB through the native S3 adapter
// against a local s3s-fs, each next to curl doing the same transfer in the same run (the
// ratio is the figure: the machine is shared and noisy), with the peak RSS of the Node
// child process that did the transfer (it must not grow with the body). "ratio" is the
// median adapter time over the median curl time; "paired" the median of each run's
// adapter/curl ratio (each pair ran back to back, so it follows the machine's load
// better). "put (bytes)" puts the body as one Uint8Array read into memory first: its RSS
// beyond the body shows the body is not copied into the native side.
// Needs s3s-fs (PRISM_S3S_FS or the cache path; see README, "Develop").
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { ACCESS_KEY, BUCKET, SECRET_KEY, s3sFsMissing, startS3sFs } from '../__test__/s3-support.mjs'
import { fmt } from './util.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const MiB = 1024 * 1024

// The child: one transfer, then its time (ms, the transfer alone) and peak RSS (KiB).
const CHILD = `
const { createS3ArtifactBodyStore } = require(${JSON.stringify(join(root, 'index.js'))})
const { createReadStream } = require('node:fs')
const { Readable } = require('node:stream')
const [op, endpoint, file, refJson] = process.argv.slice(1)
const ref = JSON.parse(refJson)
const store = createS3ArtifactBodyStore({ endpoint, bucket: ${JSON.stringify(BUCKET)}, credentials: () => ({ accessKeyId: ${JSON.stringify(ACCESS_KEY)}, secretAccessKey: ${JSON.stringify(SECRET_KEY)} }), limits: { maxBodyBytes: 512 * 1024 * 1024 } })
;(async () => {
  let t0 = performance.now()
  if (op === 'put') {
    await store.put(ref, Readable.toWeb(createReadStream(file, { highWaterMark: 1024 * 1024 })))
  } else if (op === 'put-bytes') {
    const body = require('node:fs').readFileSync(file)
    t0 = performance.now()
    await store.put(ref, body)
  } else {
    let n = 0
    for await (const c of await store.get(ref)) n += c.byteLength
    if (n !== ref.size) throw new Error('short read')
  }
  const ms = performance.now() - t0
  process.stdout.write(JSON.stringify({ ms, rssKiB: process.resourceUsage().maxRSS }))
})().catch((e) => { console.error(e); process.exit(1) })
`

function child(op, endpoint, file, ref) {
  const r = spawnSync(process.execPath, ['-e', CHILD, op, endpoint, file, JSON.stringify(ref)], { encoding: 'utf8', maxBuffer: 1 << 20 })
  if (r.status !== 0) throw new Error(`bench child failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

function curl(args) {
  const t0 = performance.now()
  execFileSync('curl', ['-sS', '-f', ...args], { stdio: ['ignore', 'ignore', 'inherit'] })
  return performance.now() - t0
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
    console.log('| body | op | adapter ms | curl ms | ratio | paired | child peak RSS |')
    console.log('| --- | --- | --- | --- | --- | --- | --- |')
    for (const size of [64 * MiB, 512 * MiB]) {
      const { file, hash } = makeFile(dir, size)
      const runs = size > 64 * MiB ? 3 : 5
      const ref = { tenantId: 'bench', threadId: 'th', artifactId: `a${size}`, version: 1, mime: 'application/octet-stream', size, hash }
      const curlRef = { ...ref, artifactId: `curl${size}` }
      const url = `${s3.endpoint}/${BUCKET}/prism-artifacts/bench/th/${curlRef.artifactId}/1`
      const rows = { put: [[], []], 'put (bytes)': [[], []], get: [[], []] }
      const curlPut = () => curl(['-X', 'PUT', '--aws-sigv4', 'aws:amz:us-east-1:s3', '--user', `${ACCESS_KEY}:${SECRET_KEY}`, '-H', `x-amz-content-sha256: ${hash}`, '-H', 'content-type: application/octet-stream', '-T', file, url])
      for (let i = 0; i < runs; i++) {
        rows.put[0].push(child('put', s3.endpoint, file, ref))
        rows.put[1].push(curlPut())
        rows['put (bytes)'][0].push(child('put-bytes', s3.endpoint, file, ref))
        rows['put (bytes)'][1].push(curlPut())
        rows.get[0].push(child('get', s3.endpoint, file, ref))
        rows.get[1].push(curl(['-o', '/dev/null', await presigner.presign(curlRef)]))
      }
      for (const [op, [ours, theirs]] of Object.entries(rows)) {
        const ms = median(ours.map((o) => o.ms))
        const c = median(theirs)
        const paired = median(ours.map((o, i) => o.ms / theirs[i]))
        const rss = Math.max(...ours.map((o) => o.rssKiB)) / 1024
        const beyond = op === 'put (bytes)' ? ` (${fmt(rss - size / MiB, 0)} MiB beyond the body)` : ''
        console.log(`| ${size / MiB} MiB | ${op} | ${fmt(ms, 0)} | ${fmt(c, 0)} | ${fmt(ms / c)}x | ${fmt(paired)}x | ${fmt(rss, 0)} MiB${beyond} |`)
      }
      rmSync(file)
    }
    console.log(`load average at end: ${loadavg().map((l) => fmt(l)).join(' ')}`)
  } finally {
    await s3.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}
