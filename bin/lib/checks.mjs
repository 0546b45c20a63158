// `--check "<name>=<command>"`: runs each command (through the system shell: it is the
// user's own command line, like an npm script) in the repository root and records its exit
// code and a bounded summary of its output. The command itself and the environment are
// never recorded, and secrets in the output are redacted before anything is kept
// (`createCredentialRedactor`: values of secret-named environment variables and well-known
// credential shapes).
//
// Each check runs in its own process group (its own session on POSIX), so everything it
// starts can be stopped together: when its time (`--check-timeout`) is up, when its main
// process exits and leaves children behind, and when prism-review gets SIGINT or SIGTERM
// (then nothing is recorded and prism-review exits 128 + the signal number).
import { spawn, execFile } from 'node:child_process'
import { constants } from 'node:os'
import { StringDecoder } from 'node:string_decoder'
import { UsageError, CliError } from './errors.mjs'
import { progress } from './output.mjs'

// The manifest's rule for check names (createCodingPatchReviewManifest refuses others).
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/
const KEEP_BYTES = 64 * 1024
export const SUMMARY_BYTES = 2048
/** Default time a check may take: five minutes. */
export const DEFAULT_TIMEOUT_MS = 5 * 60 * 1000
const MAX_TIMEOUT_MS = 24 * 60 * 60 * 1000
/** After SIGTERM, a check's group has this long to exit before SIGKILL. */
const KILL_GRACE_MS = 2000
/** The exit code recorded for a check that ran out of time (as timeout(1) reports). */
export const TIMEOUT_EXIT_CODE = 124

/** Parses `name=command`; bad shapes are usage errors. */
export function parseCheckSpec(spec) {
  const eq = spec.indexOf('=')
  if (eq <= 0 || eq === spec.length - 1) throw new UsageError(`--check needs "<name>=<command>", got "${spec}"`)
  const name = spec.slice(0, eq).trim()
  const command = spec.slice(eq + 1).trim()
  if (!NAME.test(name)) throw new UsageError(`--check name "${name}" must be 1-64 letters, digits, _ or -, starting with a letter`)
  if (!command) throw new UsageError(`--check "${name}" has an empty command`)
  return { name, command }
}

/** `--check-timeout`: seconds (`90`, `90s`), minutes (`5m`) or hours (`1h`), 1 s to 24 h. */
export function parseTimeout(text) {
  if (text === undefined) return DEFAULT_TIMEOUT_MS
  const m = /^(\d{1,6})(s|m|h)?$/.exec(text)
  const ms = m ? Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? 's'] : NaN
  if (!(ms >= 1000 && ms <= MAX_TIMEOUT_MS)) {
    throw new UsageError(`--check-timeout must be a duration from 1s to 24h (for example 90, 90s, 10m, 1h), got "${text}"`)
  }
  return ms
}

export function formatDuration(ms) {
  const s = Math.round(ms / 1000)
  if (s % 3600 === 0) return `${s / 3600}h`
  if (s % 60 === 0) return `${s / 60}m`
  return `${s}s`
}

/** The last `max` bytes of UTF-8 text, cut on a character boundary. */
function tailBytes(text, max) {
  const buf = Buffer.from(text, 'utf8')
  if (buf.length <= max) return text
  let start = buf.length - max
  while (start < buf.length && (buf[start] & 0xc0) === 0x80) start++
  return buf.subarray(start).toString('utf8')
}

function clean(output) {
  return output
    .replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
}

/**
 * Plain summary: a first line (`ok`, `failed (exit N)` or `timed out after …`), then the
 * tail of the output with control characters removed and secrets redacted. Redaction runs
 * on the whole kept output before it is cut (and again after cleaning, which can join a
 * secret that escape sequences split), so a cut never leaves part of a secret.
 */
export function summarize(exitCode, output, { redact = (s) => s, head } = {}) {
  const text = redact(clean(redact(output))).trim()
  head ??= exitCode === 0 ? 'ok' : `failed (exit ${exitCode})`
  if (!text) return head
  const room = SUMMARY_BYTES - Buffer.byteLength(head + '\n…', 'utf8')
  const tail = tailBytes(text, room)
  return tail.length < text.length ? `${head}\n…${tail}` : `${head}\n${tail}`
}

/** Stops a check's whole process group (POSIX) or process tree (Windows). */
function killGroup(child, signal) {
  if (child.pid === undefined) return
  if (process.platform === 'win32') {
    execFile('taskkill', ['/pid', String(child.pid), '/T', '/F'], { windowsHide: true }, () => {})
    return
  }
  try {
    process.kill(-child.pid, signal)
  } catch {}
}

/**
 * Runs one check; resolves `{ name, exitCode, summary }`. `stop` is an object whose
 * `signal` is set (and `onStop` called) when the run must end early.
 */
export function runCheck({ name, command }, cwd, { timeoutMs = DEFAULT_TIMEOUT_MS, redact, stop } = {}) {
  return new Promise((resolve) => {
    let out = ''
    let cut = false
    let timedOut = false
    const child = spawn(command, {
      cwd,
      shell: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
      detached: process.platform !== 'win32',
    })
    const take = (decoder) => (chunk) => {
      out += decoder.write(chunk)
      if (out.length > KEEP_BYTES * 2) {
        out = out.slice(-KEEP_BYTES)
        cut = true
      }
    }
    child.stdout.on('data', take(new StringDecoder('utf8')))
    child.stderr.on('data', take(new StringDecoder('utf8')))
    let killTimer = null
    const terminate = () => {
      killGroup(child, 'SIGTERM')
      killTimer ??= setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS)
    }
    const timer = setTimeout(() => {
      timedOut = true
      terminate()
    }, timeoutMs)
    if (stop) stop.onStop = terminate
    // The main process is done: whatever it left running in its group is stopped too (and
    // its output pipes close).
    child.on('exit', () => {
      killGroup(child, 'SIGTERM')
      killTimer ??= setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS)
    })
    child.on('error', (err) => {
      clearTimeout(timer)
      clearTimeout(killTimer)
      resolve({ name, exitCode: 127, summary: summarize(127, `cannot start: ${err.code || err.message}`, { redact }) })
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      clearTimeout(killTimer)
      if (stop) stop.onStop = null
      // A cut buffer starts inside a line: drop that partial line.
      if (cut) out = out.slice(out.indexOf('\n') + 1)
      if (timedOut) {
        const head = `timed out after ${formatDuration(timeoutMs)} (--check-timeout)`
        resolve({ name, exitCode: TIMEOUT_EXIT_CODE, summary: summarize(TIMEOUT_EXIT_CODE, out, { redact, head }) })
        return
      }
      const exitCode = typeof code === 'number' ? code : 128 + (constants.signals[signal] ?? 0)
      resolve({ name, exitCode, summary: summarize(exitCode, out, { redact }) })
    })
  })
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP']

/**
 * Runs the checks one after another. On SIGINT, SIGTERM or SIGHUP the running check's
 * group is stopped and this rejects with a CliError whose exit code is 128 + the signal
 * number; nothing after it runs.
 */
export async function runChecks(specs, cwd, { timeoutMs = DEFAULT_TIMEOUT_MS, redact } = {}) {
  const results = []
  if (specs.length === 0) return results
  const stop = { signal: null, during: null, onStop: null }
  let current = null
  const handlers = SIGNALS.map((sig) => {
    const h = () => {
      if (!stop.signal) {
        stop.signal = sig
        stop.during = current
      }
      stop.onStop?.()
    }
    process.on(sig, h)
    return [sig, h]
  })
  try {
    for (const spec of specs) {
      if (stop.signal) break
      current = spec.name
      const p = progress(`running check ${spec.name}`)
      try {
        results.push(await runCheck(spec, cwd, { timeoutMs, redact, stop }))
      } finally {
        p.done()
        current = null
      }
    }
  } finally {
    for (const [sig, h] of handlers) process.removeListener(sig, h)
  }
  if (stop.signal) {
    throw new CliError(
      `interrupted by ${stop.signal}${stop.during ? ` while check "${stop.during}" ran (its processes were stopped)` : ''}: nothing was recorded`,
      128 + (constants.signals[stop.signal] ?? 0),
    )
  }
  return results
}
