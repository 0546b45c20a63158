// No language server outlives its Node process, even when the host never calls dispose().
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { writeFileSync } from 'node:fs'
import { here, alive, waitFor, workspace, fake } from './fixtures/lsp-helpers.mjs'

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

test('an instance garbage-collected without dispose() stops its servers, and the process stays up', () => {
  // The instance's native side must be collectable: nothing it owns may hold it strongly.
  const ws = workspace('prism-gc-')
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  const script = `
    import { createLanguageIntelligence } from ${JSON.stringify(new URL('../index.mjs', import.meta.url).href)}
    import { descendants, waitFor } from ${JSON.stringify(new URL('./fixtures/lsp-helpers.mjs', import.meta.url).href)}
    let li = createLanguageIntelligence({ workspaceRoot: ${JSON.stringify(ws)}, servers: { fake: ${JSON.stringify(fake())} } })
    await li.hover({ file: 'a.ts', line: 0, character: 1 })
    const before = descendants(process.pid)
    li = null
    const gone = await waitFor(() => { globalThis.gc(); return descendants(process.pid).length === 0 }, 15000)
    console.log(JSON.stringify({ before: before.length, gone }))`
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60000 })
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout.trim().split('\n').pop())
  assert.ok(out.before >= 1, `the server ran (${r.stdout})`)
  assert.equal(out.gone, true, 'collected instance stopped its servers')
})
