// Runs every __test__/*.test.mjs with node:test, one file at a time, and reports which
// store backends ran and which tests were skipped. `node --test <dir>` only works on Node
// 20 (Node 22 takes the argument as a file or glob) and a shell glob does not expand on
// Windows, so the files are listed here; this works on every Node and shell.
// In CI (CI=true) a skipped backend or test is a failure.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { resolveBackends, describeBackends, isCI } from './test-backends.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const backends = await resolveBackends()
// Files named on the command line run alone; other arguments go to `node --test`.
const args = process.argv.slice(2)
const named = args.filter((a) => a.endsWith('.test.mjs'))
const flags = args.filter((a) => !a.endsWith('.test.mjs'))
const files = named.length
  ? named
  : readdirSync(join(root, '__test__'))
      .filter((f) => f.endsWith('.test.mjs'))
      .sort()
      .map((f) => join('__test__', f))
// A TAP copy of the results goes to a file, read afterwards for skipped tests; the
// terminal gets the usual reporter (spec on a terminal, TAP otherwise).
const scratch = mkdtempSync(join(tmpdir(), 'prism-test-'))
const tap = join(scratch, 'results.tap')
const reporters = ['--test-reporter', process.stdout.isTTY ? 'spec' : 'tap', '--test-reporter-destination', 'stdout', '--test-reporter', 'tap', '--test-reporter-destination', tap]
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...reporters, ...flags, ...files], { cwd: root, stdio: 'inherit' })
let skipped = []
try {
  skipped = readFileSync(tap, 'utf8')
    .split('\n')
    .map((l) => /^\s*ok \d+ - (.*?) # SKIP\b ?(.*)$/.exec(l))
    .filter(Boolean)
    .map((m) => `${m[1]}${m[2] ? ` (${m[2]})` : ''}`)
} catch {}
rmSync(scratch, { recursive: true, force: true })

console.log(`\nprism-review node tests: store backends\n${describeBackends(backends)}`)
if (skipped.length > 0) console.log(`skipped tests (${skipped.length}):\n${skipped.map((s) => `  ${s}`).join('\n')}`)
let status = r.status ?? 1
// A name pattern or a list of files leaves tests out on purpose: only a full run must skip nothing.
const filtered = named.length > 0 || flags.some((a) => a.startsWith('--test-name-pattern') || a.startsWith('--test-only'))
if (isCI() && !filtered && (skipped.length > 0 || backends.some((b) => !b.runs))) {
  console.error('prism-review tests: in CI every backend must run and no test may be skipped')
  status = status || 1
}
process.exit(status)
