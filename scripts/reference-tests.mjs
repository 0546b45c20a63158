// `node scripts/reference-tests.mjs <reference checkout>`: runs @arnilo/prism's own tests of
// the exports this package shares, twice: against the reference itself, and with every
// import of a shared name taken from this package instead (names this package does not
// export stay the reference's). Prints each file's pass / fail counts both ways and the
// names of the tests that fail here only, to be read against README "Differences from
// @arnilo/prism". A development check, not part of `npm test`: it needs a built checkout
// of ashiqrniloy/prism 0.3.0 (README, "Develop", says how; the same one `npm run bench`
// compares with), and PRISM_TEST_POSTGRES_URL for the PostgreSQL files. The persistence
// packages' files test much that the native persistences do not have (sessions, run
// ledgers, leases, events): there only their checkpoint tests say anything of this package.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = process.argv[2] ?? process.env.PRISM_BENCH_REFERENCE
if (!root || !existsSync(join(root, 'dist', 'index.js'))) {
  console.error('usage: node scripts/reference-tests.mjs <built checkout of ashiqrniloy/prism 0.3.0>')
  process.exit(2)
}
const ours = join(dirname(fileURLToPath(import.meta.url)), '..', 'index.mjs')
const shared = new Set(Object.keys(await import(pathToFileURL(ours).href)))

/** The reference's compiled test files that exercise exports both packages have. */
const FILES = [
  'dist/__tests__/checkpoint-event-primitives.test.js',
  'dist/__tests__/artifacts-coverage.test.js',
  'dist/__tests__/runtime-redaction.test.js',
  'dist/__tests__/state-concurrency-conformance.test.js',
  'packages/server/dist/__tests__/artifacts.test.js',
  'packages/server/dist/__tests__/artifact-bodies.test.js',
  'packages/session-store-sqlite/dist/__tests__/sqlite-persistence.test.js',
  'packages/session-store-sqlite/dist/__tests__/state-concurrency-conformance.test.js',
  'packages/session-store-postgres/dist/__tests__/postgres-integration.test.js',
  'packages/session-store-postgres/dist/__tests__/state-concurrency-conformance.integration.test.js',
  'packages/session-store-postgres/dist/__tests__/root-exports.test.js',
  'packages/coding-agent/dist/__tests__/review.test.js',
  'packages/coding-agent/dist/__tests__/language-diagnostics.test.js',
  'packages/coding-agent/dist/__tests__/language-intelligence.test.js',
]

/**
 * `source` (the compiled test at `file`) with each static import of the reference's own
 * modules split: shared names from this package, the rest from the reference by absolute URL.
 * @param {string} source
 * @param {string} file
 */
function rewrite(source, file) {
  const where = (spec) =>
    spec.startsWith('.')
      ? pathToFileURL(resolve(dirname(file), spec)).href
      : execFileSync(process.execPath, ['--input-type=module', '-e', `console.log(import.meta.resolve(${JSON.stringify(spec)}))`], { cwd: dirname(file), encoding: 'utf8' }).trim()
  const theirs = (spec) => spec.startsWith('.') || spec.startsWith('@arnilo/')
  return source
    .replace(/import\s+(\{[^}]*\}|\*\s+as\s+\w+|\w+)\s+from\s+(["'])([^"']+)\2;?/g, (all, clause, _q, spec) => {
      if (!theirs(spec)) return all
      const named = /^\{([^}]*)\}$/.exec(clause)
      if (!named) return `import ${clause} from ${JSON.stringify(where(spec))};`
      const items = named[1].split(',').map((s) => s.trim()).filter(Boolean)
      const here = items.filter((item) => shared.has(item.split(/\s+as\s+/)[0]))
      const there = items.filter((item) => !here.includes(item))
      return [
        here.length > 0 ? `import { ${here.join(', ')} } from ${JSON.stringify(pathToFileURL(ours).href)};` : '',
        there.length > 0 ? `import { ${there.join(', ')} } from ${JSON.stringify(where(spec))};` : '',
      ].join('\n')
    })
    .replace(/import\((["'])(\.[^"']+|@arnilo\/[^"']+)\1\)/g, (_all, _q, spec) => `import(${JSON.stringify(where(spec))})`)
}

/**
 * `node --test file` → its pass and fail counts (tests and suites, nested ones included)
 * and the names of the failing ones, indented by depth.
 */
function run(file) {
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { cwd: dirname(file), encoding: 'utf8', timeout: 300_000 })
  const out = r.stdout ?? ''
  const count = (name) => Number(new RegExp(`^# ${name} (\\d+)`, 'm').exec(out)?.[1] ?? 0)
  const failed = [...out.matchAll(/^( *)not ok \d+ - (.*)$/gm)].map((m) => `${m[1]}${m[2]}`)
  return { pass: count('pass'), fail: count('fail'), failed }
}

let differs = 0
for (const rel of FILES) {
  const file = join(resolve(root), rel)
  if (!existsSync(file)) {
    console.log(`${rel}: not built (skipped)`)
    continue
  }
  // Beside the original, so that its fixtures (found from import.meta.url) and the
  // reference's dependencies (pg, better-sqlite3) resolve as they do for it.
  const copy = file.replace(/\.test\.js$/, '.prism-review.test.js')
  writeFileSync(copy, rewrite(readFileSync(file, 'utf8'), file))
  try {
    const base = run(file)
    const here = run(copy)
    const only = here.failed.filter((name) => !base.failed.includes(name))
    differs += only.filter((name) => !name.startsWith(' ')).length
    console.log(`${rel}: reference ${base.pass}/${base.pass + base.fail}, prism-review ${here.pass}/${here.pass + here.fail}`)
    for (const name of only) console.log(`  fails here only: ${name}`)
  } finally {
    rmSync(copy, { force: true })
  }
}
console.log(`${differs} top-level test(s) fail here only; read them against README "Differences from @arnilo/prism"`)
