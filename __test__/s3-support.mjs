// s3s-fs, a real S3-compatible server that checks every SigV4 signature, for the body
// store suites. The binary comes from PRISM_S3S_FS (default: the cache path `.ci/run`
// installs to); each suite starts its own on a free loopback port over a fresh directory.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs'
import http from 'node:http'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'

export const S3S_FS_DEFAULT = join(homedir(), '.cache', 'prism-review', 's3s-fs', 'bin', 's3s-fs')
export const s3sFsPath = () => process.env.PRISM_S3S_FS || S3S_FS_DEFAULT
export const ACCESS_KEY = 'AKIDPRISMTEST0001'
export const SECRET_KEY = 'prism-secret-do-not-leak-9f8e7d'
export const BUCKET = 'prism-bucket-secret-name'

/** Why the S3 suites cannot run here, or null when they can. */
export function s3sFsMissing() {
  const path = s3sFsPath()
  if (existsSync(path)) return null
  return `s3s-fs not found at ${path}: install it with "cargo install s3s-fs --version 0.14.1 --features binary --locked --root ~/.cache/prism-review/s3s-fs" or set PRISM_S3S_FS (see README, "Develop")`
}

/** Start s3s-fs; resolves { endpoint, root, bucketDir, pid, stop }. */
export async function startS3sFs() {
  const root = mkdtempSync(join(tmpdir(), 'prism-s3s-'))
  const bucketDir = join(root, BUCKET)
  mkdirSync(bucketDir)
  const child = spawn(s3sFsPath(), ['--host', '127.0.0.1', '--port', '0', '--access-key', ACCESS_KEY, '--secret-key', SECRET_KEY, root], {
    env: { ...process.env, RUST_LOG: 'info', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const endpoint = await new Promise((resolve, reject) => {
    let out = ''
    const onData = (d) => {
      out += d.toString()
      const m = /running at (http:\/\/127\.0\.0\.1:\d+)/.exec(out.replace(/\x1b\[[0-9;]*m/g, ''))
      if (m) resolve(m[1])
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.once('exit', (code) => reject(new Error(`s3s-fs exited (${code}) before listening: ${out.slice(0, 500)}`)))
    child.once('error', reject)
  })
  child.stdout.resume()
  child.stderr.resume()
  return {
    endpoint,
    root,
    bucketDir,
    pid: child.pid,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      rmSync(root, { recursive: true, force: true })
    },
  }
}

/**
 * A loopback HTTP proxy in front of `target` that forwards every request as is (the Host
 * header too, so signatures still verify) and counts requests in flight.
 */
export async function startCountingProxy(target) {
  const t = new URL(target)
  let inFlight = 0
  let peak = 0
  const requests = []
  const waiters = []
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method, url: req.url, headers: req.headers })
    inFlight += 1
    peak = Math.max(peak, inFlight)
    for (const w of waiters.splice(0)) w()
    let done = false
    const finish = () => {
      if (!done) {
        done = true
        inFlight -= 1
      }
    }
    const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
      res.writeHead(upRes.statusCode, upRes.headers)
      upRes.pipe(res)
      upRes.on('end', finish)
    })
    up.on('error', () => {
      finish()
      res.destroy()
    })
    req.on('aborted', finish)
    req.pipe(up)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    endpoint: `http://127.0.0.1:${server.address().port}`,
    requests,
    inFlight: () => inFlight,
    peak: () => peak,
    /** Resolves once `n` requests are in flight at once. */
    reach: async (n) => {
      while (inFlight < n) await new Promise((resolve) => waiters.push(resolve))
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.()
        server.close(() => resolve())
      }),
  }
}

/** Read a ReadableStream to one Buffer. */
export async function readAll(stream) {
  const chunks = []
  for await (const c of stream) chunks.push(c)
  return Buffer.concat(chunks)
}
