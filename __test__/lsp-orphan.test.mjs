// No language server outlives its Node process, even when the host never calls dispose().
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { here, alive, waitFor } from './fixtures/lsp-helpers.mjs'

for (const how of ['exit', 'kill']) {
  test(`a host that ends by ${how === 'exit' ? 'process.exit()' : 'SIGKILL'} without dispose() leaves no server process`, async () => {
    const r = spawnSync(process.execPath, [join(here, 'orphan-child.mjs'), how], { encoding: 'utf8', timeout: 60000 })
    const line = r.stdout.split('\n').find((l) => l.startsWith('['))
    assert.ok(line, `child printed its descendants (stderr: ${r.stderr})`)
    const pids = JSON.parse(line)
    // typescript-language-server + its tsserver processes + the fake server + its grandchild (+ watchdogs).
    assert.ok(pids.length >= 4, `expected several server processes, got ${pids}`)
    const gone = await waitFor(() => pids.every((p) => !alive(p)), 15000)
    assert.ok(gone, `still alive: ${pids.filter(alive)}`)
  })
}
