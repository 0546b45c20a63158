// `--check "<name>=<command>"`: runs each command (through the system shell: it is the
// user's own command line, like an npm script) in the repository root and records its exit
// code and a bounded summary of its output. The command itself and the environment are
// never recorded.
import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { UsageError } from './errors.mjs'

// The manifest's rule for check names (createCodingPatchReviewManifest refuses others).
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/
const KEEP_BYTES = 64 * 1024
export const SUMMARY_BYTES = 2048

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

/** The last `max` bytes of UTF-8 text, cut on a character boundary. */
function tailBytes(text, max) {
  const buf = Buffer.from(text, 'utf8')
  if (buf.length <= max) return text
  let start = buf.length - max
  while (start < buf.length && (buf[start] & 0xc0) === 0x80) start++
  return buf.subarray(start).toString('utf8')
}

/** Plain summary: exit code plus the tail of the output, control characters removed. */
export function summarize(exitCode, output) {
  const clean = output
    .replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
    .trim()
  const head = exitCode === 0 ? 'ok' : `failed (exit ${exitCode})`
  if (!clean) return head
  const room = SUMMARY_BYTES - Buffer.byteLength(head + '\n…', 'utf8')
  const tail = tailBytes(clean, room)
  return tail.length < clean.length ? `${head}\n…${tail}` : `${head}\n${tail}`
}

/** Runs one check; resolves `{ name, exitCode, summary }`. */
export function runCheck({ name, command }, cwd) {
  return new Promise((resolve) => {
    let out = ''
    const child = spawn(command, { cwd, shell: true, stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true })
    const take = (chunk) => {
      out += chunk.toString('utf8')
      if (out.length > KEEP_BYTES * 2) out = out.slice(-KEEP_BYTES)
    }
    child.stdout.on('data', take)
    child.stderr.on('data', take)
    child.on('error', (err) => resolve({ name, exitCode: 127, summary: summarize(127, `cannot start: ${err.code || err.message}`) }))
    child.on('close', (code, signal) => {
      const exitCode = typeof code === 'number' ? code : 128 + (constants.signals[signal] ?? 0)
      resolve({ name, exitCode, summary: summarize(exitCode, out) })
    })
  })
}

export async function runChecks(specs, cwd) {
  const results = []
  for (const spec of specs) results.push(await runCheck(spec, cwd))
  return results
}
