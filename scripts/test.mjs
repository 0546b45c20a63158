// `npm test`: the JS type check, the Rust tests, the node:test suite and the type test, in
// one build profile.
// `cargo test` runs in the release profile for the host target, exactly as `npm run build`
// (napi build --release --target <host>) compiles the addon, so the dependency graph is
// compiled once for both (see Cargo.toml for the two feature notes that keep it so).
// PostgreSQL: see scripts/test-backends.mjs. In CI (CI=true) a skipped backend fails.
import { spawnSync, execFileSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { resolveBackends, describeBackends, isCI } from './test-backends.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

function run(what, command, args) {
  const started = Date.now()
  const r = spawnSync(command, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' })
  const secs = Math.round((Date.now() - started) / 1000)
  if (r.status !== 0) {
    console.error(`prism-review tests: ${what} failed (${secs} s)`)
    process.exit(r.status ?? 1)
  }
  console.log(`prism-review tests: ${what} passed (${secs} s)`)
}

const backends = await resolveBackends()
console.log(`prism-review tests: store backends\n${describeBackends(backends)}`)
const postgres = backends.find((b) => b.name === 'postgresql')
if (isCI() && !postgres.runs) {
  console.error('prism-review tests: in CI every backend must run (start PostgreSQL or set PRISM_TEST_POSTGRES_URL)')
  process.exit(1)
}

const tsc = join('node_modules', 'typescript', 'bin', 'tsc')
// The JS glue against types/*.d.ts and the generated binding.d.ts (tsconfig.json: checkJs,
// strict); first, as it takes seconds. `npm test` builds the addon (and binding.d.ts) first.
run('JS type check', process.execPath, [tsc, '-p', 'tsconfig.json'])

const host = /^host: (\S+)$/m.exec(execFileSync('rustc', ['-vV'], { encoding: 'utf8' }))[1]
// The one ignored Rust test is the PostgreSQL conformance run: it runs whenever PostgreSQL does.
// `--features test-exports`, as `npm run build` has it, so the library is not compiled twice.
run('cargo test', 'cargo', ['test', '--release', '--target', host, '--features', 'test-exports', '--quiet', ...(postgres.runs ? ['--', '--include-ignored'] : [])])
run('node tests', process.execPath, [join('scripts', 'test-node.mjs')])
run('type test', process.execPath, [tsc, '-p', join('__test__', 'types', 'tsconfig.json')])
