// Runs every __test__/*.test.mjs with node:test, one file at a time. `node --test <dir>` only
// works on Node 20 (Node 22 takes the argument as a file or glob) and a shell glob does not
// expand on Windows, so the files are listed here; this works on every Node and shell.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const files = readdirSync(join(root, '__test__'))
  .filter((f) => f.endsWith('.test.mjs'))
  .sort()
  .map((f) => join('__test__', f))
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...process.argv.slice(2), ...files], { cwd: root, stdio: 'inherit' })
process.exit(r.status ?? 1)
