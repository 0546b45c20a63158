// The tokio runtime our waiting work runs on (src/napi/runtime.rs, issue 13) leaves the
// JavaScript thread a core: one worker per core beyond it, at least one, unless
// TOKIO_WORKER_THREADS says otherwise. Counted from the process's threads (Linux).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'

const entry = fileURLToPath(new URL('../index.js', import.meta.url))
const linux = existsSync('/proc/self/task')

/** The runtime's workers in a fresh process that loaded the addon, with `env` over ours. */
function workers(env) {
  const script = `
    const fs = require('node:fs')
    require(${JSON.stringify(entry)})
    const names = fs.readdirSync('/proc/self/task').map((t) => fs.readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim())
    process.stdout.write(String(names.filter((n) => n === 'tokio-rt-worker').length))`
  const merged = { ...process.env, ...env }
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k]
  return Number(execFileSync(process.execPath, ['-e', script], { env: merged, encoding: 'utf8' }))
}

test('the runtime has one worker per core beyond the JavaScript thread, at least one', { skip: !linux && 'counts threads in /proc' }, () => {
  assert.equal(workers({ TOKIO_WORKER_THREADS: undefined }), Math.max(1, availableParallelism() - 1))
})

test('TOKIO_WORKER_THREADS decides the workers when set', { skip: !linux && 'counts threads in /proc' }, () => {
  assert.equal(workers({ TOKIO_WORKER_THREADS: '3' }), 3)
})
