// LanguageIntelligence against real language servers from npm (devDependencies):
// typescript-language-server + typescript (diagnostics asked of tsserver, and, with that
// command hidden by a transparent proxy, push diagnostics), the JSON server of
// vscode-langservers-extracted (pull diagnostics) and pyright (pull, registered).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, readFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { createLanguageIntelligence, LanguageIntelligenceError } from '../index.mjs'
import { workspace, root, here, alive, descendants, waitFor } from './fixtures/lsp-helpers.mjs'

/** typescript-language-server behind `fixtures/ts-proxy.mjs`, which logs what the client sends. */
function tsProxied(ws, mode) {
  const log = join(ws, '.ts-proxy.jsonl')
  const server = {
    command: process.execPath,
    args: [join(here, 'ts-proxy.mjs'), JSON.stringify({ log, hideProbe: mode === 'published' })],
    languages: ['typescript', 'javascript'],
  }
  const sent = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [])
  return { server, sent }
}
const MODES = ['asked', 'published']
const jsonServer = {
  command: process.execPath,
  args: [join(root, 'node_modules/vscode-langservers-extracted/bin/vscode-json-language-server'), '--stdio'],
  languages: ['json'],
}

for (const mode of MODES) test(`typescript-language-server (diagnostics ${mode}): added then removed, hover, definitions, references, rename, dispose`, async () => {
  const ws = workspace()
  const { server, sent } = tsProxied(ws, mode)
  const before = new Set(descendants(process.pid))
  const a = [
    'export function café(n: number): number {',
    '  return n + 1',
    '}',
    'const s: string = café(1) // 🙂 ünïcödé',
    '',
  ].join('\n')
  const b = ['import { café } from "./a"', 'export const 𝒳 = "🙂🙂"; export const r = café(2) + café(3)', ''].join('\n')
  writeFileSync(join(ws, 'a.ts'), a)
  writeFileSync(join(ws, 'b.ts'), b)
  const li = createLanguageIntelligence({ workspaceRoot: ws, servers: { ts: server } })
  assert.deepEqual(await li.syncDocument('a.ts'), { version: 1 })
  await li.syncDocument('b.ts')
  const first = await li.diagnosticDelta({ files: ['a.ts', 'b.ts'] })
  assert.deepEqual(first.incomplete, [])
  const err = first.files['a.ts'].added.find((d) => d.code === 2322)
  assert.ok(err, JSON.stringify(first))
  assert.equal(err.severity, 'error')
  assert.equal(err.source, 'typescript')
  assert.equal(err.line, 3)
  assert.equal(err.character, 6)
  assert.equal(first.files['b.ts'].added.filter((d) => d.severity === 'error').length, 0)

  // Fix it: the error shows up in removed.
  const fixed = a.replace('const s: string', 'const s: number')
  writeFileSync(join(ws, 'a.ts'), fixed)
  assert.deepEqual(await li.syncDocument('a.ts'), { version: 2 })
  const second = await li.diagnosticDelta({ files: ['a.ts'], previous: first })
  assert.deepEqual(second.incomplete, [])
  assert.ok(second.files['a.ts'].removed.some((d) => d.code === 2322), JSON.stringify(second))
  assert.ok(!second.files['a.ts'].added.some((d) => d.severity === 'error'))

  const bLine = b.split('\n')[1]
  const useAt = bLine.indexOf('café')
  const hover = await li.hover({ file: 'b.ts', line: 1, character: useAt + 1 })
  assert.match(hover.text, /café\(n: number\): number/)

  const defs = await li.definitions({ file: 'b.ts', line: 1, character: useAt })
  assert.ok(defs.some((d) => d.file === 'a.ts' && d.line === 0 && d.character === 'export function '.length), JSON.stringify(defs))

  const refs = await li.references({ file: 'a.ts', line: 0, character: 'export function '.length })
  // Declaration, the call in a.ts, the import and two calls in b.ts.
  assert.equal(refs.length, 5, JSON.stringify(refs))
  for (const r of refs) {
    const text = (r.file === 'a.ts' ? fixed : b).split('\n')[r.line]
    assert.equal(text.slice(r.character, r.endCharacter), 'café')
  }

  const symbols = await li.workspaceSymbols('caf')
  assert.ok(symbols.some((s) => s.name === 'café' && s.kind === 12 && s.kindName === 'function' && s.file === 'a.ts'), JSON.stringify(symbols))

  // Renamed at the declaration, every reference in both files changes.
  const { edits } = await li.rename({ file: 'a.ts', line: 0, character: 'export function '.length + 2, newName: 'naïveΩ' })
  assert.equal(edits.length, 5)
  assert.equal(readFileSync(join(ws, 'a.ts'), 'utf8'), fixed.replaceAll('café', 'naïveΩ'))
  assert.equal(readFileSync(join(ws, 'b.ts'), 'utf8'), b.replaceAll('café', 'naïveΩ'))

  // After the rename the server sees the new text: the unused-variable hint keeps its
  // set non-empty, so the server publishes for the new version, and there is no error.
  const third = await li.diagnosticDelta({ files: ['a.ts'], previous: second })
  assert.deepEqual(third.incomplete, [])
  assert.ok(!third.files['a.ts'].added.some((d) => d.severity === 'error'), JSON.stringify(third))
  assert.equal(third.files['a.ts'].generation, 3)

  // The sets came the way the mode says.
  const probes = sent().filter((e) => e.command === 'typescript.tsserverRequest').map((e) => e.tsserver)
  if (mode === 'asked') {
    for (const kind of ['syntacticDiagnosticsSync', 'semanticDiagnosticsSync', 'suggestionDiagnosticsSync']) {
      assert.ok(probes.includes(kind), `asked for ${kind}: ${probes}`)
    }
  } else {
    assert.deepEqual(probes, [])
  }

  const servers = descendants(process.pid).filter((p) => !before.has(p))
  assert.ok(servers.length >= 3, 'the proxy, typescript-language-server and tsserver are running')
  await li.dispose()
  assert.ok(await waitFor(() => servers.every((p) => !alive(p))), `still alive: ${servers.filter(alive)}`)
  await assert.rejects(li.hover({ file: 'a.ts', line: 0, character: 0 }), LanguageIntelligenceError)
})

test('typescript-language-server: a file that stays clean is reported clean when asked, never when only published', async () => {
  // typescript-language-server publishes nothing when a file's sets stay empty, so with
  // publishes alone the second set never arrives (20 s: the first needs the project loaded).
  for (const mode of MODES) {
    const ws = workspace()
    const { server } = tsProxied(ws, mode)
    writeFileSync(join(ws, 'ok.ts'), 'export const n: number = 1\n')
    const li = createLanguageIntelligence({ workspaceRoot: ws, servers: { ts: server }, limits: { requestTimeoutMs: mode === 'asked' ? 60000 : 20000 } })
    try {
      // The first set needs the project loaded, which a loaded machine can take past one
      // timeout: ask again (a late publish is kept) before judging the first set.
      let first = await li.diagnosticDelta({ files: ['ok.ts'] })
      for (let i = 0; i < 3 && first.incomplete.length > 0; i++) first = await li.diagnosticDelta({ files: ['ok.ts'] })
      assert.deepEqual(first.incomplete, [], mode)
      assert.deepEqual(first.files['ok.ts'].added, [], mode)
      writeFileSync(join(ws, 'ok.ts'), 'export const n: number = 2 // still clean\n')
      await li.syncDocument('ok.ts')
      const second = await li.diagnosticDelta({ files: ['ok.ts'], previous: first })
      if (mode === 'asked') {
        assert.deepEqual(second.incomplete, [])
        assert.deepEqual(second.files['ok.ts'], { added: [], removed: [], unchanged: [], generation: 2, truncated: false })
      } else {
        assert.deepEqual(second.incomplete, ['ok.ts'])
        assert.equal(second.files['ok.ts'], undefined)
      }
    } finally {
      await li.dispose()
    }
  }
})

test('vscode-json-language-server (pull diagnostics): added then removed, hover, unsupported definitions, dispose', async () => {
  const ws = workspace()
  const before = new Set(descendants(process.pid))
  writeFileSync(join(ws, 'conf.json'), '{\n  "name": "x",\n  "n": \n}\n')
  const li = createLanguageIntelligence({ workspaceRoot: ws, servers: { json: jsonServer } })
  const first = await li.diagnosticDelta({ files: ['conf.json'] })
  assert.deepEqual(first.incomplete, [])
  const added = first.files['conf.json'].added
  assert.equal(added.length, 1, JSON.stringify(first))
  assert.equal(added[0].message, 'Value expected')
  assert.equal(added[0].line, 3)
  assert.equal(added[0].generation, 1)
  // Same content again: the server answers from previousResultId / full; nothing churns.
  await li.syncDocument('conf.json')
  const same = await li.diagnosticDelta({ files: ['conf.json'], previous: first })
  assert.equal(same.files['conf.json'].unchanged.length, 1)
  assert.equal(same.files['conf.json'].added.length, 0)

  writeFileSync(join(ws, 'conf.json'), '{\n  "name": "x",\n  "n": 2\n}\n')
  assert.deepEqual(await li.syncDocument('conf.json'), { version: 3 })
  const second = await li.diagnosticDelta({ files: ['conf.json'], previous: same })
  assert.equal(second.files['conf.json'].removed.length, 1)
  assert.equal(second.files['conf.json'].added.length, 0)
  assert.equal(second.files['conf.json'].generation, 3)
  assert.deepEqual(await li.diagnostics('conf.json'), [])

  // No schema: no hover text; the JSON server offers no definitions.
  assert.equal(await li.hover({ file: 'conf.json', line: 1, character: 4 }), undefined)
  await assert.rejects(li.definitions({ file: 'conf.json', line: 1, character: 4 }), (e) => e.code === 'ERR_PRISM_LSP_UNSUPPORTED')

  const servers = descendants(process.pid).filter((p) => !before.has(p))
  assert.ok(servers.length >= 1)
  await li.dispose()
  assert.ok(await waitFor(() => servers.every((p) => !alive(p))), `still alive: ${servers.filter(alive)}`)
})

test('pyright (pull diagnostics registered dynamically): added then removed with previousResultId, hover, definitions, references, rename, dispose', async () => {
  const ws = workspace()
  const log = join(workspace('prism-tap-'), 'tap.jsonl')
  const before = new Set(descendants(process.pid))
  const a = ['def café(n: int) -> int:', '    return n + 1', '', 'x: str = café(1)  # 🙂 ünï', ''].join('\n')
  const b = ['from a import café', '', 'y = "🙂🙂" + str(café(2)) + str(café(3))', ''].join('\n')
  writeFileSync(join(ws, 'a.py'), a)
  writeFileSync(join(ws, 'b.py'), b)
  const li = createLanguageIntelligence({
    workspaceRoot: ws,
    servers: {
      py: {
        command: process.execPath,
        args: [join(here, 'lsp-tap.mjs'), log, process.execPath, join(root, 'node_modules/pyright/langserver.index.js'), '--stdio'],
        languages: ['python'],
      },
    },
    limits: { requestTimeoutMs: 60000 },
  })
  await li.syncDocument('b.py')
  const first = await li.diagnosticDelta({ files: ['a.py', 'b.py'] })
  assert.deepEqual(first.incomplete, [])
  const err = first.files['a.py'].added.find((d) => d.code === 'reportAssignmentType')
  assert.ok(err, JSON.stringify(first))
  assert.equal(err.line, 3)
  assert.equal(err.character, 'x: str = '.length)
  assert.equal(first.files['b.py'].added.length, 0)

  const fixed = a.replace('x: str', 'x: int')
  writeFileSync(join(ws, 'a.py'), fixed)
  assert.deepEqual(await li.syncDocument('a.py'), { version: 2 })
  const second = await li.diagnosticDelta({ files: ['a.py'], previous: first })
  assert.ok(second.files['a.py'].removed.some((d) => d.code === 'reportAssignmentType'), JSON.stringify(second))
  assert.equal(second.files['a.py'].added.length, 0)

  // Over the wire: the server registered pull diagnostics; we pulled, reusing result ids.
  const wire = readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const reg = wire.find((e) => e.dir === 'out' && e.msg.method === 'client/registerCapability')
  assert.ok(reg.msg.params.registrations.some((r) => r.method === 'textDocument/diagnostic'))
  const pulls = wire.filter((e) => e.dir === 'in' && e.msg.method === 'textDocument/diagnostic' && e.msg.params.textDocument.uri.endsWith('/a.py'))
  assert.ok(pulls.length >= 2)
  assert.equal(typeof pulls[pulls.length - 1].msg.params.previousResultId, 'string')

  const bLine = b.split('\n')[2]
  const at = bLine.indexOf('café')
  const hover = await li.hover({ file: 'b.py', line: 2, character: at + 1 })
  assert.match(hover.text, /def café\(n: int\) -> int/)
  const defs = await li.definitions({ file: 'b.py', line: 2, character: at })
  assert.deepEqual(defs, [{ file: 'a.py', line: 0, character: 4, endLine: 0, endCharacter: 8 }])
  const refs = await li.references({ file: 'a.py', line: 0, character: 5 })
  assert.equal(refs.length, 5, JSON.stringify(refs))
  for (const r of refs) {
    const text = (r.file === 'a.py' ? fixed : b).split('\n')[r.line]
    assert.equal(text.slice(r.character, r.endCharacter), 'café')
  }
  const { edits } = await li.rename({ file: 'b.py', line: 2, character: bLine.lastIndexOf('café'), newName: 'naïveΩ' })
  assert.equal(edits.length, 5)
  assert.equal(readFileSync(join(ws, 'a.py'), 'utf8'), fixed.replaceAll('café', 'naïveΩ'))
  assert.equal(readFileSync(join(ws, 'b.py'), 'utf8'), b.replaceAll('café', 'naïveΩ'))

  const servers = descendants(process.pid).filter((p) => !before.has(p))
  assert.ok(servers.length >= 2, 'tap and pyright are running')
  await li.dispose()
  assert.ok(await waitFor(() => servers.every((p) => !alive(p))), `still alive: ${servers.filter(alive)}`)
})
