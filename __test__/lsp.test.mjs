// LanguageIntelligence against the scriptable fake server: every robustness rule.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, readFileSync, symlinkSync, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import {
  createLanguageIntelligence,
  LanguageIntelligence,
  LanguageIntelligenceError,
  encodeLspFrame,
  LspFrameReader,
  LspFrameError,
  applyTextEdits,
  resolveLanguageIntelligenceLimits,
} from '../index.mjs'
import { workspace, fake, readLog, received, alive, waitFor } from './fixtures/lsp-helpers.mjs'

function setup(opts = {}, extra = {}) {
  const ws = workspace()
  const log = join(ws, '.fake-log.jsonl')
  const li = createLanguageIntelligence({
    workspaceRoot: ws,
    servers: { fake: fake({ log, ...opts }) },
    ...extra,
  })
  return { ws, log, li }
}

const code = (c) => (err) => {
  assert.ok(err instanceof LanguageIntelligenceError, `expected LanguageIntelligenceError, got ${err && err.stack}`)
  assert.equal(err.code, c)
  return true
}

test('construction spawns nothing and returns a LanguageIntelligence', async () => {
  const { ws, log, li } = setup()
  assert.ok(li instanceof LanguageIntelligence)
  writeFileSync(join(ws, 'a.ts'), 'const a = 1\n')
  await new Promise((r) => setTimeout(r, 100))
  assert.equal(existsSync(log), false)
  await li.syncDocument('a.ts')
  assert.equal(received(log, 'initialize').length, 1)
  await li.dispose()
})

test('options are validated: types, caps, limits outside 1..hard', () => {
  const ws = workspace()
  assert.throws(() => createLanguageIntelligence(null), TypeError)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws }), TypeError)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: 1, servers: {} }), TypeError)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: join(ws, 'missing'), servers: {} }), code('ERR_PRISM_LSP_WORKSPACE'))
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: { a: { command: 'x', languages: 'ts' } } }), TypeError)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: { a: { command: '', languages: ['ts'] } } }), TypeError)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: { a: { command: 'x', languages: [] } } }), TypeError)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: {}, policy: {} }), TypeError)
  const five = Object.fromEntries([1, 2, 3, 4, 5].map((i) => [`s${i}`, fake()]))
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: five }), code('ERR_PRISM_LSP_LIMIT'))
  // Raised within the hard cap, five servers are fine.
  createLanguageIntelligence({ workspaceRoot: ws, servers: five, limits: { maxServers: 5 } })
  const hard = {
    maxMessageBytes: 32 * 1024 * 1024,
    maxDiagnosticsPerFile: 1000,
    maxPendingRequests: 128,
    maxResultsPerQuery: 5000,
    requestTimeoutMs: 120000,
    maxServers: 8,
    maxRestartsPerServer: 10,
  }
  for (const [name, max] of Object.entries(hard)) {
    createLanguageIntelligence({ workspaceRoot: ws, servers: {}, limits: { [name]: max } })
    for (const bad of [0, max + 1, 1.5, -1]) {
      assert.throws(
        () => createLanguageIntelligence({ workspaceRoot: ws, servers: {}, limits: { [name]: bad } }),
        (e) => e instanceof RangeError,
        `${name}=${bad}`,
      )
    }
  }
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: {}, limits: { maxResult: 5 } }), TypeError)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: {}, limits: { maxResultsPerQuery: '5' } }), TypeError)
  // The names of @arnilo/prism; the old ones say what they are called now.
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: {}, limits: { maxResults: 5 } }), (e) => e instanceof TypeError && /maxResultsPerQuery/.test(e.message))
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: {}, limits: { maxRestarts: 5 } }), (e) => e instanceof TypeError && /maxRestartsPerServer/.test(e.message))
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: {}, big: 1n }), TypeError)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: JSON.parse('{"__proto__": {"command": 1, "languages": ["x"]}}') }), TypeError)
  const cyclic = { workspaceRoot: ws, servers: {} }
  cyclic.self = cyclic
  assert.throws(() => createLanguageIntelligence(cyclic), TypeError)
})

test('files without a server are UNSUPPORTED; paths outside the workspace are WORKSPACE', async () => {
  const { ws, li } = setup()
  const outside = workspace('prism-outside-')
  writeFileSync(join(outside, 'o.ts'), 'x\n')
  writeFileSync(join(ws, 'a.py'), 'x = 1\n')
  symlinkSync(join(outside, 'o.ts'), join(ws, 'link.ts'))
  await assert.rejects(li.syncDocument('a.py'), code('ERR_PRISM_LSP_UNSUPPORTED'))
  await assert.rejects(li.syncDocument('../' + outside.split('/').pop() + '/o.ts'), code('ERR_PRISM_LSP_WORKSPACE'))
  await assert.rejects(li.syncDocument(join(outside, 'o.ts')), code('ERR_PRISM_LSP_WORKSPACE'))
  await assert.rejects(li.syncDocument('link.ts'), code('ERR_PRISM_LSP_WORKSPACE'))
  await assert.rejects(li.syncDocument('missing.ts'), code('ERR_PRISM_LSP_WORKSPACE'))
  // The language is checked before the file (as @arnilo/prism): a file no server handles
  // is UNSUPPORTED whether or not it exists; a path climbing out is WORKSPACE first.
  await assert.rejects(li.syncDocument('src/missing.py'), code('ERR_PRISM_LSP_UNSUPPORTED'))
  await assert.rejects(li.diagnosticDelta({ files: ['missing.py'] }), code('ERR_PRISM_LSP_UNSUPPORTED'))
  await assert.rejects(li.hover({ file: 'missing.py', line: 0, character: 0 }), code('ERR_PRISM_LSP_UNSUPPORTED'))
  await assert.rejects(li.syncDocument('../missing.py'), code('ERR_PRISM_LSP_WORKSPACE'))
  await assert.rejects(li.syncDocument(42), TypeError)
  await assert.rejects(li.hover({ file: 'a.ts', line: -1, character: 0 }), TypeError)
  await assert.rejects(li.hover(null), TypeError)
  await assert.rejects(li.diagnosticDelta({ files: 'a.ts' }), TypeError)
  await assert.rejects(li.diagnosticDelta({ files: [1] }), TypeError)
  await assert.rejects(li.diagnosticDelta({ files: ['a.py'], previous: 5 }), TypeError)
  await assert.rejects(li.hover({ file: 'a.ts', line: NaN, character: 0 }), TypeError)
  await assert.rejects(li.rename({ file: 'a.py', line: 0, character: 0, newName: 7 }), TypeError)
  await assert.rejects(li.workspaceSymbols('x'.repeat(2000)), code('ERR_PRISM_LSP_LIMIT'))
  await assert.rejects(li.syncDocument('x'.repeat(10000)), code('ERR_PRISM_LSP_WORKSPACE'))
  await li.dispose()
})

test('first sync opens (version 1), later syncs send full-content didChange with version + 1', async () => {
  const { ws, log, li } = setup()
  const file = join(ws, 'a.ts')
  writeFileSync(file, 'one\n')
  assert.deepEqual(await li.syncDocument('a.ts'), { version: 1 })
  writeFileSync(file, 'two\n')
  assert.deepEqual(await li.syncDocument('a.ts'), { version: 2 })
  writeFileSync(file, 'three\n')
  assert.deepEqual(await li.syncDocument('./a.ts'), { version: 3 })
  await li.diagnosticDelta({ files: ['a.ts'] })
  const opens = received(log, 'textDocument/didOpen')
  assert.equal(opens.length, 1)
  assert.equal(opens[0].params.textDocument.version, 1)
  assert.equal(opens[0].params.textDocument.languageId, 'typescript')
  assert.equal(opens[0].params.textDocument.text, 'one\n')
  const changes = received(log, 'textDocument/didChange')
  assert.deepEqual(changes.map((c) => c.params.textDocument.version), [2, 3])
  assert.deepEqual(changes.map((c) => c.params.contentChanges), [[{ text: 'two\n' }], [{ text: 'three\n' }]])
  // Real client capabilities.
  const init = received(log, 'initialize')[0].params
  assert.deepEqual(init.capabilities.general.positionEncodings, ['utf-8', 'utf-16'])
  assert.equal(init.capabilities.textDocument.publishDiagnostics.versionSupport, true)
  assert.ok(init.capabilities.textDocument.diagnostic)
  assert.equal(init.capabilities.workspace.configuration, true)
  assert.equal(received(log, 'initialized').length, 1)
  await li.dispose()
})

test('language ids come from extensions; servers get their env and run in the workspace', async () => {
  const ws = workspace()
  const log = join(ws, '.log')
  const li = createLanguageIntelligence({
    workspaceRoot: ws,
    servers: {
      web: { ...fake({ log }, ['typescriptreact', 'javascript', 'json', 'markdown', 'css', 'html', 'plaintext']), env: { PRISM_FAKE_ENV: 'from-host' } },
    },
  })
  const files = { 'a.tsx': 'typescriptreact', 'b.mjs': 'javascript', 'c.cjs': 'javascript', 'd.json': 'json', 'e.md': 'markdown', 'f.css': 'css', 'g.html': 'html', 'h.txt': 'plaintext' }
  for (const f of Object.keys(files)) {
    writeFileSync(join(ws, f), '{}\n')
    await li.syncDocument(f)
  }
  await waitFor(() => received(log, 'textDocument/didOpen').length === Object.keys(files).length)
  const opened = Object.fromEntries(received(log, 'textDocument/didOpen').map((m) => [m.params.textDocument.uri.split('/').pop(), m.params.textDocument.languageId]))
  assert.deepEqual(opened, files)
  const start = readLog(log).find((e) => e.env !== undefined)
  assert.equal(start.env, 'from-host')
  assert.equal(start.cwd, ws)
  writeFileSync(join(ws, 'x.ts'), '\n')
  await assert.rejects(li.syncDocument('x.ts'), code('ERR_PRISM_LSP_UNSUPPORTED'))
  await li.dispose()
})

/**
 * Write `a.ts` as `before`, sync it and take its delta; then as `after`, sync, and take the
 * delta against the first.
 */
async function refreshTwice(ws, li, before, after) {
  const file = join(ws, 'a.ts')
  writeFileSync(file, before)
  await li.syncDocument('a.ts')
  const first = await li.diagnosticDelta({ files: ['a.ts'] })
  writeFileSync(file, after)
  await li.syncDocument('a.ts')
  const second = await li.diagnosticDelta({ files: ['a.ts'], previous: first })
  return { first, second }
}

test('push diagnostics: added after an error, removed after the fix, never the stale set', async () => {
  // The server re-publishes the previous version's set before the current one, late.
  const { ws, li } = setup({ staleFirst: true, publishDelayMs: 50 })
  const { first, second } = await refreshTwice(ws, li, 'let a = 1\nERROR\n', 'let a = 1\nfine\n')
  assert.deepEqual(first.incomplete, [])
  const d1 = first.files['a.ts']
  assert.equal(d1.added.length, 1)
  assert.equal(d1.added[0].line, 1)
  assert.equal(d1.added[0].severity, 'error')
  assert.equal(d1.added[0].generation, 1)
  const d2 = second.files['a.ts']
  assert.equal(d2.removed.length, 1, JSON.stringify(second))
  assert.equal(d2.added.length, 0)
  assert.equal(d2.unchanged.length, 0)
  assert.equal(d2.generation, 2)
  // The result's generation is the newest document version refreshed.
  assert.equal(first.generation, 1)
  assert.equal(second.generation, 2)
  // Same set again: unchanged, no churn.
  const third = await li.diagnosticDelta({ files: ['a.ts'], previous: second })
  assert.deepEqual(third.files['a.ts'].added, [])
  assert.deepEqual(third.files['a.ts'].removed, [])
  await li.dispose()
})

test('a set that never arrives is incomplete, never clean', async () => {
  const { ws, li } = setup({ skipPublishFor: [2] }, { limits: { requestTimeoutMs: 2000 } })
  const { first, second } = await refreshTwice(ws, li, 'ERROR\n', 'clean\n')
  assert.equal(first.files['a.ts'].added.length, 1)
  assert.deepEqual(second.incomplete, ['a.ts'])
  assert.equal(second.files['a.ts'], undefined)
  await assert.rejects(li.diagnostics('a.ts'), code('ERR_PRISM_LSP_TIMEOUT'))
  await li.dispose()
})

test('unversioned publishes after the sync count for the synced version', async () => {
  const { ws, li } = setup({ noVersion: true })
  const { first, second } = await refreshTwice(ws, li, 'ERROR ERROR\n', 'ERROR\n')
  assert.equal(first.files['a.ts'].added.length, 2)
  assert.equal(second.files['a.ts'].removed.length, 1)
  assert.equal(second.files['a.ts'].unchanged.length, 1)
  const all = await li.diagnostics()
  assert.equal(all.length, 1)
  await li.dispose()
})

test('diagnosticDelta opens files it has not seen, and drops stale previous views', async () => {
  const { ws, li } = setup()
  writeFileSync(join(ws, 'a.ts'), 'ERROR\n')
  writeFileSync(join(ws, 'b.ts'), 'ok\nERROR\n')
  const r = await li.diagnosticDelta({ files: ['a.ts', 'b.ts', 'a.ts'] })
  assert.deepEqual(Object.keys(r.files).sort(), ['a.ts', 'b.ts'])
  // A previous view newer than the refresh is not overwritten: the file is omitted (in
  // every shape of previous), while the refresh itself still happened.
  const newer = { ...r.files['a.ts'].added[0], line: 7, generation: 99 }
  for (const previous of [{ 'a.ts': [newer] }, { 'a.ts': { generation: 99, diagnostics: [newer] } }, { 'a.ts': { ...r.files['a.ts'], generation: 99 } }]) {
    const again = await li.diagnosticDelta({ files: ['a.ts', 'b.ts'], previous })
    assert.equal(again.files['a.ts'], undefined, JSON.stringify(previous))
    assert.equal(again.files['b.ts'].added.length, 1)
    assert.deepEqual(again.incomplete, [])
    assert.equal(again.generation, 1)
  }
  // @arnilo/prism's shape { generation, diagnostics } is a previous view like the others.
  const same = await li.diagnosticDelta({ files: ['a.ts'], previous: { 'a.ts': { generation: 1, diagnostics: r.files['a.ts'].added } } })
  assert.deepEqual([same.files['a.ts'].added.length, same.files['a.ts'].unchanged.length], [0, 1])
  // Any other shape is a TypeError, never silently an empty view.
  for (const previous of [{ 'a.ts': [{ nope: 1 }] }, { 'a.ts': {} }, { 'a.ts': { generation: 1 } }, { 'a.ts': { diagnostics: [] } }, { 'a.ts': 'x' }, []]) {
    await assert.rejects(li.diagnosticDelta({ files: ['a.ts'], previous }), TypeError, JSON.stringify(previous))
  }
  const list = await li.diagnostics('b.ts')
  assert.equal(list.length, 1)
  assert.equal(list[0].file, 'b.ts')
  await li.dispose()
})

test('pull diagnostics reuse previousResultId and honour unchanged', async () => {
  const { ws, log, li } = setup({ pull: true })
  const file = join(ws, 'a.ts')
  writeFileSync(file, 'ERROR\n')
  await li.syncDocument('a.ts')
  const first = await li.diagnosticDelta({ files: ['a.ts'] })
  assert.equal(first.files['a.ts'].added.length, 1)
  await li.syncDocument('a.ts') // same content: the server will answer `unchanged`
  const second = await li.diagnosticDelta({ files: ['a.ts'], previous: first })
  assert.equal(second.files['a.ts'].unchanged.length, 1)
  assert.equal(second.files['a.ts'].generation, 2)
  const pulls = received(log, 'textDocument/diagnostic')
  assert.equal(pulls.length, 2)
  assert.equal(pulls[0].params.previousResultId, undefined)
  assert.equal(pulls[0].params.identifier, 'fake')
  assert.equal(typeof pulls[1].params.previousResultId, 'string')
  writeFileSync(file, 'fixed\n')
  await li.syncDocument('a.ts')
  const third = await li.diagnosticDelta({ files: ['a.ts'], previous: second })
  assert.equal(third.files['a.ts'].removed.length, 1)
  // Never a push wait in pull mode.
  assert.equal(readLog(log).filter((e) => e.out === 'publish').length, 0)
  await li.dispose()
})

test('a server offering typescript.tsserverRequest is asked, not waited for; positions convert from UTF-16', async () => {
  // It never publishes for these versions, and negotiates UTF-8: only an exact answer to
  // the probe, converted to the API's UTF-16, can pass.
  const { ws, log, li } = setup({ probe: true, encoding: 'utf-8', skipPublishFor: [1, 2, 3] }, { limits: { requestTimeoutMs: 60000 } })
  const line = 'é🙂 ERROR, ERROR'
  writeFileSync(join(ws, 'a.ts'), `${line}\n`)
  const first = await li.diagnosticDelta({ files: ['a.ts'] })
  assert.deepEqual(first.incomplete, [])
  assert.deepEqual(first.files['a.ts'].added.map((d) => [d.line, d.character, d.endCharacter, d.code, d.source, d.severity]), [
    [0, line.indexOf('ERROR'), line.indexOf('ERROR') + 5, 2322, 'typescript', 'error'],
    [0, line.lastIndexOf('ERROR'), line.lastIndexOf('ERROR') + 5, 2322, 'typescript', 'error'],
  ])
  writeFileSync(join(ws, 'a.ts'), 'fine\n')
  await li.syncDocument('a.ts')
  const second = await li.diagnosticDelta({ files: ['a.ts'], previous: first })
  assert.deepEqual(second.incomplete, [])
  assert.equal(second.files['a.ts'].removed.length, 2)
  assert.equal(second.files['a.ts'].added.length, 0)
  // The set asked for is the document's known set.
  assert.deepEqual(await li.diagnostics(), [])
  const asked = received(log, 'workspace/executeCommand').map((m) => [m.params.command, m.params.arguments[0]])
  assert.deepEqual(asked.slice(0, 3), [
    ['typescript.tsserverRequest', 'syntacticDiagnosticsSync'],
    ['typescript.tsserverRequest', 'semanticDiagnosticsSync'],
    ['typescript.tsserverRequest', 'suggestionDiagnosticsSync'],
  ])
  await li.dispose()
})

test('when asking fails, the client waits for publishes instead', async () => {
  const { ws, log, li } = setup({ probe: true, probeFails: true })
  writeFileSync(join(ws, 'a.ts'), 'ERROR\n')
  const d = await li.diagnosticDelta({ files: ['a.ts'] })
  assert.deepEqual(d.incomplete, [])
  assert.equal(d.files['a.ts'].added[0].source, 'fake', 'the published set')
  assert.ok(received(log, 'workspace/executeCommand').length >= 1)
  await li.dispose()
})

test('a delta over more files than maxPendingRequests asks at most half that many at once', async () => {
  for (const opts of [{ pull: true }, { probe: true }]) {
    const { ws, li } = setup(opts, { limits: { maxPendingRequests: 4 } })
    const files = Array.from({ length: 40 }, (_, i) => `f${i}.ts`)
    for (const f of files) writeFileSync(join(ws, f), 'ERROR\n')
    const d = await li.diagnosticDelta({ files })
    assert.deepEqual(d.incomplete, [])
    assert.deepEqual(Object.keys(d.files).sort(), [...files].sort())
    for (const f of files) assert.equal(d.files[f].added.length, 1, f)
    await li.dispose()
  }
})

test('workspace/diagnostic/refresh is acknowledged and followed by a re-pull', async () => {
  // The server asks for a refresh right after answering our one pull.
  const { ws, log, li } = setup({ pull: true, refreshAfterPull: true })
  writeFileSync(join(ws, 'a.ts'), 'ERROR\n')
  await li.diagnosticDelta({ files: ['a.ts'] })
  const ok = await waitFor(() => received(log, 'textDocument/diagnostic').length === 2)
  assert.ok(ok, 'a second pull follows the refresh')
  const entries = readLog(log)
  const ack = entries.findIndex((e) => e.response === 'workspace/diagnostic/refresh')
  assert.ok(ack !== -1)
  assert.equal(entries[ack].result, null)
  assert.equal(entries[ack].error, undefined)
  const repull = entries.findLastIndex((e) => e.in && e.in.method === 'textDocument/diagnostic')
  assert.ok(repull > ack, 'the re-pull comes after the acknowledgement')
  await li.dispose()
})

test('every server→client request is answered; unknown ones get MethodNotFound', async () => {
  const { ws, log, li } = setup({ serverRequests: true })
  writeFileSync(join(ws, 'a.ts'), 'x\n')
  await li.syncDocument('a.ts')
  const ok = await waitFor(() => readLog(log).filter((e) => e.response !== undefined || e.id).length >= 7)
  assert.ok(ok)
  const byMethod = Object.fromEntries(readLog(log).filter((e) => e.response).map((e) => [e.response, e]))
  assert.deepEqual(byMethod['workspace/configuration'].result, [null, null])
  assert.equal(byMethod['window/workDoneProgress/create'].result, null)
  assert.equal(byMethod['client/registerCapability'].result, null)
  assert.equal(byMethod['client/unregisterCapability'].result, null)
  assert.equal(byMethod['workspace/workspaceFolders'].result[0].uri, `file://${ws}`)
  assert.equal(byMethod['workspace/applyEdit'].result.applied, false)
  assert.equal(byMethod['custom/unknownThing'].error.code, -32601)
  await li.dispose()
})

test('a timed-out request sends $/cancelRequest and fails with TIMEOUT', async () => {
  const { ws, log, li } = setup({ slowMs: 10000 }, { limits: { requestTimeoutMs: 2000 } })
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  await assert.rejects(li.hover({ file: 'a.ts', line: 0, character: 1 }), code('ERR_PRISM_LSP_TIMEOUT'))
  const hoverId = received(log, 'textDocument/hover')[0].id
  assert.ok(await waitFor(() => received(log, '$/cancelRequest').some((c) => c.params.id === hoverId)))
  await li.dispose()
})

test('an aborted request rejects with the abort reason and sends $/cancelRequest', async () => {
  const { ws, log, li } = setup({ slowMs: 10000 })
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  await li.syncDocument('a.ts')
  const ac = new AbortController()
  const p = li.hover({ file: 'a.ts', line: 0, character: 1 }, { signal: ac.signal })
  await waitFor(() => received(log, 'textDocument/hover').length === 1)
  ac.abort()
  await assert.rejects(p, (e) => e.name === 'AbortError')
  const hoverId = received(log, 'textDocument/hover')[0].id
  assert.ok(await waitFor(() => received(log, '$/cancelRequest').some((c) => c.params.id === hoverId)))
  // Already aborted: nothing is sent.
  await assert.rejects(li.hover({ file: 'a.ts', line: 0, character: 1 }, { signal: AbortSignal.abort() }), (e) => e.name === 'AbortError')
  assert.equal(received(log, 'textDocument/hover').length, 1)
  await assert.rejects(li.hover({ file: 'a.ts', line: 0, character: 1 }, { signal: 'nope' }), TypeError)
  await li.dispose()
})

test('pending requests are capped', async () => {
  const { ws, li } = setup({ slowMs: 1000 }, { limits: { maxPendingRequests: 2 } })
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  await li.syncDocument('a.ts')
  const loc = { file: 'a.ts', line: 0, character: 1 }
  const results = await Promise.allSettled([li.hover(loc), li.hover(loc), li.hover(loc)])
  const limited = results.filter((r) => r.status === 'rejected')
  assert.equal(limited.length, 1)
  assert.equal(limited[0].reason.code, 'ERR_PRISM_LSP_LIMIT')
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 2)
  await li.dispose()
})

for (const [name, opt, want] of [['oversized', { oversizedOn: 'hover' }, 'ERR_PRISM_LSP_LIMIT'], ['malformed', { garbageOn: 'hover' }, 'ERR_PRISM_LSP_FRAMING']]) {
  test(`an ${name} frame fails pending requests with ${want} and the server restarts`, async () => {
    const ws = workspace()
    const log = join(ws, '.log')
    // The first process misbehaves; a marker file makes the next one behave.
    const li = createLanguageIntelligence({
      workspaceRoot: ws,
      servers: { fake: fake({ log, ...opt }) },
      limits: { maxMessageBytes: 1024 * 1024 },
    })
    writeFileSync(join(ws, 'a.ts'), 'hello\n')
    await li.syncDocument('a.ts')
    const firstPid = readLog(log)[0].pid
    const loc = { file: 'a.ts', line: 0, character: 1 }
    await assert.rejects(li.hover(loc), code(want))
    assert.ok(await waitFor(() => !alive(firstPid)), 'the misbehaving server is killed')
    // The next call restarts the server (which misbehaves again: same error, new pid).
    await assert.rejects(li.hover(loc), code(want))
    const pids = new Set(readLog(log).map((e) => e.pid))
    assert.equal(pids.size, 2)
    await li.dispose()
  })
}

test('a crash fails the request; a crash loop exhausts the restart budget, then fails fast', async () => {
  const { ws, log, li } = setup({ crashOn: 'hover' }, { limits: { maxRestartsPerServer: 2 } })
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  const loc = { file: 'a.ts', line: 0, character: 1 }
  for (let i = 0; i < 3; i++) {
    await assert.rejects(li.hover(loc), code('ERR_PRISM_LSP_SERVER'))
  }
  assert.equal(received(log, 'initialize').length, 3)
  await assert.rejects(li.hover(loc), (e) => e.code === 'ERR_PRISM_LSP_SERVER' && /restart budget \(2 restarts per 60000 ms\)/.test(e.message))
  await assert.rejects(li.syncDocument('a.ts'), (e) => /restart budget/.test(e.message))
  assert.equal(received(log, 'initialize').length, 3, 'no new process once the budget is spent')
  await li.dispose()
})

test('a server that dies during initialize is a SERVER error', async () => {
  const { ws, li } = setup({ crashOn: 'initialize' })
  writeFileSync(join(ws, 'a.ts'), 'x\n')
  await assert.rejects(li.syncDocument('a.ts'), code('ERR_PRISM_LSP_SERVER'))
  const bad = createLanguageIntelligence({ workspaceRoot: ws, servers: { x: { command: join(ws, 'no-such-binary'), languages: ['typescript'] } } })
  await assert.rejects(bad.syncDocument('a.ts'), code('ERR_PRISM_LSP_SERVER'))
  await li.dispose()
  await bad.dispose()
})

test('dispose: shutdown, exit, stdin closed; no process of the group survives', async () => {
  const { ws, log, li } = setup({ grandchild: true })
  writeFileSync(join(ws, 'a.ts'), 'x\n')
  await li.syncDocument('a.ts')
  const pid = readLog(log)[0].pid
  const grandchild = await waitFor(() => readLog(log).find((e) => e.grandchild)?.grandchild)
  assert.ok(alive(pid) && alive(grandchild))
  await li.dispose()
  assert.equal(received(log, 'shutdown').length, 1)
  assert.equal(received(log, 'exit').length, 1)
  assert.ok(await waitFor(() => !alive(pid) && !alive(grandchild)), 'server and grandchild are gone')
  await assert.rejects(li.syncDocument('a.ts'), code('ERR_PRISM_LSP_SERVER'))
  await li.dispose() // idempotent
})

test('requests made while the server starts wait for initialize/initialized', async () => {
  const { ws, log, li } = setup({ initDelayMs: 300 })
  writeFileSync(join(ws, 'a.ts'), 'hello world\n')
  const loc = { file: 'a.ts', line: 0, character: 1 }
  const [h1, h2, sync] = await Promise.all([li.hover(loc), li.hover({ ...loc, character: 8 }), li.syncDocument('a.ts')])
  assert.match(h1.text, /word:hello/)
  assert.match(h2.text, /word:world/)
  assert.equal(sync.version >= 1, true)
  const methods = readLog(log).filter((e) => e.in).map((e) => e.in.method)
  assert.deepEqual(methods.slice(0, 2), ['initialize', 'initialized'])
  assert.equal(methods.filter((m) => m === 'initialize').length, 1, 'one server for concurrent callers')
  await li.dispose()
})

test('dispose escalates: a server that ignores shutdown, exit and SIGTERM is SIGKILLed', async () => {
  const { ws, log, li } = setup({ stubborn: true }, { limits: { requestTimeoutMs: 2000 } })
  writeFileSync(join(ws, 'a.ts'), 'x\n')
  await li.syncDocument('a.ts')
  const pid = readLog(log)[0].pid
  await li.dispose()
  assert.equal(received(log, 'shutdown').length, 1)
  // (It may log the SIGTERM it ignores; whether it gets to before the SIGKILL depends
  // on load, so that is not asserted.)
  assert.ok(await waitFor(() => !alive(pid)), 'killed despite ignoring everything')
})

test('run-time caps: message bytes, diagnostics per file, results per query', async () => {
  const { ws, li } = setup({}, { limits: { maxMessageBytes: 4096, maxDiagnosticsPerFile: 2, maxResultsPerQuery: 3 } })
  writeFileSync(join(ws, 'big.ts'), 'x'.repeat(5000))
  await assert.rejects(li.syncDocument('big.ts'), code('ERR_PRISM_LSP_LIMIT'))
  writeFileSync(join(ws, 'a.ts'), 'ERROR ERROR ERROR ERROR\nfoo foo foo foo foo\n')
  const d = await li.diagnosticDelta({ files: ['a.ts'] })
  assert.equal(d.files['a.ts'].added.length, 2)
  const refs = await li.references({ file: 'a.ts', line: 1, character: 0 })
  assert.equal(refs.length, 3)
  await assert.rejects(li.diagnosticDelta({ files: ['a.ts', 'b.ts', 'c.ts', 'd.ts'] }), code('ERR_PRISM_LSP_LIMIT'))
  await assert.rejects(li.rename({ file: 'a.ts', line: 1, character: 0, newName: 'bar' }), code('ERR_PRISM_LSP_LIMIT'))
  assert.equal(readFileSync(join(ws, 'a.ts'), 'utf8'), 'ERROR ERROR ERROR ERROR\nfoo foo foo foo foo\n')
  await li.dispose()
})

test('UTF-8 negotiated: positions convert exactly on emoji and accents; rename edits every reference', async () => {
  const { ws, li } = setup({ encoding: 'utf-8' })
  const a = 'const café = "🙂"; // 🙂🙂 é\nlet 𝒳 = café + café // ERROR\n'
  const b = 'export {}\n/* ü 🙂 */ café()\n'
  writeFileSync(join(ws, 'a.ts'), a)
  writeFileSync(join(ws, 'b.ts'), b)
  await li.syncDocument('b.ts')
  const line1 = a.split('\n')[1]
  const at = line1.indexOf('café')
  const hover = await li.hover({ file: 'a.ts', line: 1, character: at + 2 })
  assert.match(hover.text, /word:café$/)
  const d = await li.diagnosticDelta({ files: ['a.ts'] })
  assert.equal(d.files['a.ts'].added[0].character, line1.indexOf('ERROR'))
  assert.equal(d.files['a.ts'].added[0].endCharacter, line1.indexOf('ERROR') + 5)
  const refs = await li.references({ file: 'a.ts', line: 1, character: at })
  assert.equal(refs.length, 4)
  const bLine = b.split('\n')[1]
  assert.ok(refs.some((r) => r.file === 'b.ts' && r.line === 1 && r.character === bLine.indexOf('café') && r.endCharacter === bLine.indexOf('café') + 4))
  const defs = await li.definitions({ file: 'a.ts', line: 1, character: at })
  // The fake answers with the first occurrence in its first open document (b.ts).
  assert.deepEqual(defs, [{ file: 'b.ts', line: 1, character: bLine.indexOf('café'), endLine: 1, endCharacter: bLine.indexOf('café') + 4 }])
  const { edits } = await li.rename({ file: 'a.ts', line: 1, character: at, newName: 'naïve🙂' })
  assert.equal(edits.length, 4)
  assert.equal(readFileSync(join(ws, 'a.ts'), 'utf8'), a.replaceAll('café', 'naïve🙂'))
  assert.equal(readFileSync(join(ws, 'b.ts'), 'utf8'), b.replaceAll('café', 'naïve🙂'))
  for (const e of edits) {
    const src = (e.file === 'a.ts' ? a : b).split('\n')[e.line]
    assert.equal(src.slice(e.character, e.endCharacter), 'café')
  }
  // The server saw the renamed text (re-synced after the write).
  const h2 = await li.hover({ file: 'a.ts', line: 0, character: 7 })
  assert.match(h2.text, /word:naïve$/)
  const syms = await li.workspaceSymbols('')
  assert.ok(Array.isArray(syms))
  await li.dispose()
})

test('rename consults the policy before writing; denied or throwing policy writes nothing', async () => {
  const ws = workspace()
  const text = 'function foo() {}\nfoo()\n'
  writeFileSync(join(ws, 'a.ts'), text)
  writeFileSync(join(ws, 'b.ts'), 'foo()\n')
  const actions = []
  let verdict = { allowed: false, reason: 'read-only session' }
  let abortDuringCheck
  const li = createLanguageIntelligence({
    workspaceRoot: ws,
    servers: { fake: fake() },
    policy: {
      async check(action) {
        actions.push(action)
        if (verdict === 'throw') throw new Error('policy backend down')
        if (verdict === 'abort') {
          abortDuringCheck.abort()
          return { allowed: true }
        }
        return verdict
      },
    },
  })
  await li.syncDocument('b.ts')
  const input = { file: 'a.ts', line: 1, character: 0, newName: 'bar' }
  await assert.rejects(li.rename(input), (e) => e instanceof LanguageIntelligenceError && /read-only session/.test(e.message))
  assert.deepEqual(actions[0], { kind: 'edit', operation: 'rename', paths: ['a.ts', 'b.ts'], risk: 'high' })
  assert.equal(readFileSync(join(ws, 'a.ts'), 'utf8'), text)
  verdict = 'throw'
  await assert.rejects(li.rename(input), (e) => e instanceof LanguageIntelligenceError && e.cause instanceof Error)
  assert.equal(readFileSync(join(ws, 'a.ts'), 'utf8'), text)
  // Aborted while the policy decides: nothing is written.
  const ac = new AbortController()
  verdict = 'abort'
  abortDuringCheck = ac
  await assert.rejects(li.rename(input, { signal: ac.signal }), (e) => e.name === 'AbortError')
  verdict = { allowed: true }
  assert.equal(readFileSync(join(ws, 'a.ts'), 'utf8'), text)
  const { edits } = await li.rename(input)
  assert.equal(edits.length, 3)
  assert.equal(readFileSync(join(ws, 'a.ts'), 'utf8'), 'function bar() {}\nbar()\n')
  assert.equal(readFileSync(join(ws, 'b.ts'), 'utf8'), 'bar()\n')
  assert.deepEqual(readdirSync(ws).filter((f) => f.includes('.prism-')), [], 'no temporary files left')
  await li.dispose()
})

test('a rename that would edit outside the workspace is refused and writes nothing', async () => {
  const outside = workspace('prism-outside-')
  mkdirSync(join(outside, 'd'))
  const victim = join(outside, 'd', 'victim.ts')
  writeFileSync(victim, 'keep\n')
  const { ws, li } = setup({ outsideEdit: victim })
  writeFileSync(join(ws, 'a.ts'), 'foo foo\n')
  await assert.rejects(li.rename({ file: 'a.ts', line: 0, character: 0, newName: 'bar' }), code('ERR_PRISM_LSP_WORKSPACE'))
  assert.equal(readFileSync(victim, 'utf8'), 'keep\n')
  assert.equal(readFileSync(join(ws, 'a.ts'), 'utf8'), 'foo foo\n')
  await li.dispose()
})

test('a definition only outside the workspace is WORKSPACE; stale-version rename edits are refused', async () => {
  const outside = workspace('prism-outside-')
  writeFileSync(join(outside, 'lib.d.ts'), 'declare const x: 1\n')
  const { ws, li } = setup({ outsideDefinition: join(outside, 'lib.d.ts') })
  writeFileSync(join(ws, 'a.ts'), 'foo\n')
  await assert.rejects(li.definitions({ file: 'a.ts', line: 0, character: 0 }), code('ERR_PRISM_LSP_WORKSPACE'))
  await li.dispose()
  const stale = setup({ staleRename: true })
  writeFileSync(join(stale.ws, 'a.ts'), 'foo foo\n')
  await stale.li.syncDocument('a.ts')
  await assert.rejects(stale.li.rename({ file: 'a.ts', line: 0, character: 0, newName: 'bar' }), code('ERR_PRISM_LSP_SERVER'))
  assert.equal(readFileSync(join(stale.ws, 'a.ts'), 'utf8'), 'foo foo\n')
  await stale.li.dispose()
})

test('hover on nothing is undefined; positions outside the document are RangeErrors', async () => {
  const { ws, li } = setup()
  writeFileSync(join(ws, 'a.ts'), 'a  b\n')
  assert.equal(await li.hover({ file: 'a.ts', line: 0, character: 2 }), undefined)
  await assert.rejects(li.hover({ file: 'a.ts', line: 9, character: 0 }), RangeError)
  await assert.rejects(li.hover({ file: 'a.ts', line: 0, character: 99 }), RangeError)
  await li.dispose()
})

test('concurrent calls each settle with their own answer or error', async () => {
  // Every call completes through one callback per instance, routed by token: answers,
  // errors and aborts must never cross between calls.
  const { ws, li } = setup({ slowMs: 30 }, { limits: { maxPendingRequests: 128 } })
  const words = Array.from({ length: 40 }, (_, i) => `w${i}x`)
  writeFileSync(join(ws, 'a.ts'), words.join(' ') + '\n')
  await li.syncDocument('a.ts')
  const ac = new AbortController()
  const calls = words.map((w, i) => {
    const character = words.slice(0, i).join(' ').length + (i > 0 ? 1 : 0) + 1
    if (i % 5 === 4) return li.hover({ file: 'a.ts', line: 7 + i, character: 0 }).then(() => 'resolved', (e) => (e instanceof RangeError ? 'range' : e))
    if (i % 7 === 6) return li.hover({ file: 'a.ts', line: 0, character }, { signal: ac.signal }).then(() => 'resolved', (e) => (e.name === 'AbortError' ? 'aborted' : e))
    return li.hover({ file: 'a.ts', line: 0, character }).then((h) => h.text.split('word:')[1])
  })
  ac.abort()
  const got = await Promise.all(calls)
  got.forEach((g, i) => {
    const want = i % 5 === 4 ? 'range' : i % 7 === 6 ? 'aborted' : words[i]
    assert.equal(g, want, `call ${i}`)
  })
  await li.dispose()
})

test('an outstanding call keeps Node alive; an idle instance never does', () => {
  const ws = workspace()
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  const script = (body) => `
    import { createLanguageIntelligence } from ${JSON.stringify(new URL('../index.mjs', import.meta.url).href)}
    const li = createLanguageIntelligence({ workspaceRoot: ${JSON.stringify(ws)}, servers: { fake: ${JSON.stringify(fake({ slowMs: 400 }))} } })
    ${body}`
  // Nothing but the pending hover holds the event loop: its answer must still arrive.
  const pending = spawnSync(process.execPath, ['--input-type=module', '-e', script(
    "li.hover({ file: 'a.ts', line: 0, character: 1 }).then((h) => console.log('hover', h.text.split('word:')[1]))",
  )], { encoding: 'utf8', timeout: 30000 })
  assert.equal(pending.status, 0, pending.stderr)
  assert.match(pending.stdout, /^hover hello$/m)
  // After the last call settles the process ends on its own, without dispose().
  const t0 = Date.now()
  const idle = spawnSync(process.execPath, ['--input-type=module', '-e', script(
    "await li.hover({ file: 'a.ts', line: 0, character: 1 }); console.log('done')",
  )], { encoding: 'utf8', timeout: 30000 })
  assert.equal(idle.status, 0, `exit ${idle.status} ${idle.signal} ${idle.stderr}`)
  assert.match(idle.stdout, /^done$/m)
  assert.ok(Date.now() - t0 < 25000, 'the process ended by itself')
})

/** CPU time (ms) of this process's thread named `name`, from /proc; undefined when none. */
function threadCpuMs(name) {
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== name) continue
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime: fields 14 and 15 of stat(5), in clock ticks (100 per second).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  }
  return undefined
}

test('the LSP thread polls for the next call only briefly, then sleeps', { skip: process.platform !== 'linux' && 'reads /proc' }, async () => {
  const { ws, li } = setup()
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  await li.syncDocument('a.ts')
  for (let i = 0; i < 200; i++) await li.hover({ file: 'a.ts', line: 0, character: 1 })
  const afterCalls = threadCpuMs('prism-lsp')
  assert.notEqual(afterCalls, undefined, 'the LSP thread runs')
  // Idle for a second: a thread that kept polling would spend most of it on the CPU.
  await new Promise((r) => setTimeout(r, 1000))
  const idleMs = threadCpuMs('prism-lsp') - afterCalls
  assert.ok(idleMs < 100, `the idle LSP thread spent ${idleMs} ms of CPU in 1 s`)
  await li.dispose()
})

test('encodeLspFrame and LspFrameReader round-trip in any chunking and stay bounded', () => {
  const msgs = [{ jsonrpc: '2.0', id: 1, result: { text: 'é🙂' } }, { jsonrpc: '2.0', method: 'x', params: [] }]
  const bytes = Buffer.concat(msgs.map((m) => encodeLspFrame(m)))
  assert.ok(bytes.subarray(0, 16).toString().startsWith('Content-Length: '))
  for (const step of [1, 3, 7, bytes.length]) {
    const r = new LspFrameReader()
    const got = []
    for (let i = 0; i < bytes.length; i += step) got.push(...r.push(bytes.subarray(i, i + step)))
    assert.deepEqual(got, msgs)
    assert.equal(r.buffered, 0)
  }
  // A body over the cap is LIMIT, a malformed frame FRAMING; both are LspFrameErrors.
  const frameErr = (c) => (e) => e instanceof LspFrameError && e instanceof LanguageIntelligenceError && e.name === 'LspFrameError' && e.code === c
  for (const small of [new LspFrameReader({ maxMessageBytes: 8 }), new LspFrameReader(8)]) {
    assert.throws(() => small.push(encodeLspFrame({ long: 'message' })), frameErr('ERR_PRISM_LSP_LIMIT'))
    assert.throws(() => small.push(Buffer.from('x')), frameErr('ERR_PRISM_LSP_LIMIT'), 'a failed reader stays failed')
  }
  assert.deepEqual(new LspFrameReader(64).push(encodeLspFrame({ short: 1 })), [{ short: 1 }])
  // A message over the hard cap (32 MiB) is refused while it is written: no element of a
  // 20M-hole array is read (issue 17 point 7).
  let reads = 0
  const holes = new Proxy(new Array(20_000_000), {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++
      return Reflect.get(target, key, receiver)
    },
  })
  assert.throws(() => encodeLspFrame({ jsonrpc: '2.0', method: 'x', params: holes }), frameErr('ERR_PRISM_LSP_LIMIT'))
  assert.equal(reads, 0)
  assert.throws(() => new LspFrameReader().push(Buffer.from('Content-Length: 3\r\n\r\nabc')), frameErr('ERR_PRISM_LSP_FRAMING'))
  assert.throws(() => new LspFrameReader().push(Buffer.from('Content-Length: x\r\n\r\n')), frameErr('ERR_PRISM_LSP_FRAMING'))
  assert.throws(() => new LspFrameReader(0), RangeError)
  assert.throws(() => new LspFrameReader('8'), TypeError)
  const constructed = new LspFrameError('ERR_PRISM_LSP_FRAMING', 'host-made')
  assert.ok(constructed instanceof LanguageIntelligenceError)
  assert.deepEqual([constructed.code, constructed.message, constructed.name], ['ERR_PRISM_LSP_FRAMING', 'host-made', 'LspFrameError'])
  assert.throws(() => new LspFrameReader().push('text'), TypeError)
  assert.throws(() => new LspFrameReader({ maxMessageBytes: 0 }), RangeError)
  assert.throws(() => new LspFrameReader({ maxMessageBytes: 33554433 }), RangeError)
  assert.throws(() => encodeLspFrame('x'), TypeError)
  assert.throws(() => encodeLspFrame({ n: 1n }), TypeError)
})

test('applyTextEdits applies LSP edits from their end, in UTF-16, and refuses overlaps', () => {
  const range = (l, c, el, ec) => ({ start: { line: l, character: c }, end: { line: el, character: ec } })
  // @arnilo/prism's shape, in any order.
  assert.equal(applyTextEdits('foo bar foo', [
    { file: 'a.ts', newText: 'qux', range: range(0, 0, 0, 3) },
    { file: 'a.ts', newText: 'baz', range: range(0, 8, 0, 11) },
  ]), 'qux bar baz')
  // Astral characters count two UTF-16 units; a lone surrogate elsewhere survives.
  const text = '🙂 café\r\nx \ud800 y\n'
  assert.equal(applyTextEdits(text, [{ newText: 'tea', range: range(0, 3, 0, 7) }, { newText: 'Z', range: range(1, 0, 1, 1) }]), '🙂 tea\r\nZ \ud800 y\n')
  // The flat shape rename returns; positions past a line end clamp to it.
  assert.equal(applyTextEdits('ab\ncd', [{ line: 0, character: 99, endLine: 0, endCharacter: 99, newText: '!' }]), 'ab!\ncd')
  // Inserts at one position keep their order.
  assert.equal(applyTextEdits('ab', [{ newText: 'x', range: range(0, 1, 0, 1) }, { newText: 'y', range: range(0, 1, 0, 1) }]), 'axyb')
  assert.throws(() => applyTextEdits('abcdef', [{ newText: 'x', range: range(0, 0, 0, 3) }, { newText: 'y', range: range(0, 2, 0, 4) }]), RangeError)
  assert.throws(() => applyTextEdits('abc', [{ newText: 'x', range: range(0, 2, 0, 1) }]), RangeError)
  assert.throws(() => applyTextEdits('abc', [{ newText: 1, range: range(0, 0, 0, 1) }]), TypeError)
  assert.throws(() => applyTextEdits('abc', [{ newText: 'x' }]), TypeError)
  assert.throws(() => applyTextEdits(5, []), TypeError)
  assert.equal(applyTextEdits('same', []), 'same')
})

test('resolveLanguageIntelligenceLimits fills the defaults under the names of @arnilo/prism', () => {
  assert.deepEqual(resolveLanguageIntelligenceLimits(), {
    maxMessageBytes: 4 * 1024 * 1024,
    maxDiagnosticsPerFile: 200,
    maxPendingRequests: 32,
    maxResultsPerQuery: 500,
    requestTimeoutMs: 30000,
    maxServers: 4,
    maxRestartsPerServer: 3,
    restartWindowMs: 60000,
  })
  assert.equal(resolveLanguageIntelligenceLimits({ maxServers: 8 }).maxServers, 8)
  assert.throws(() => resolveLanguageIntelligenceLimits({ maxServers: 9 }), RangeError)
  assert.throws(() => resolveLanguageIntelligenceLimits({ maxResults: 9 }), TypeError)
})

// Issue 17 point 4: every call settles within its own requestTimeoutMs.
const settle = async (p) => {
  const t0 = Date.now()
  try {
    await p
    return { ms: Date.now() - t0, at: performance.now(), ok: true }
  } catch (e) {
    return { ms: Date.now() - t0, at: performance.now(), code: e.code, error: e }
  }
}

test('with a server that never answers initialize, every call settles within its own timeout; callers share one start', async () => {
  const { ws, log, li } = setup({ neverInit: true }, { limits: { requestTimeoutMs: 1000 } })
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  const loc = { file: 'a.ts', line: 0, character: 1 }
  const calls = [
    ...Array.from({ length: 4 }, () => li.hover(loc)),
    li.syncDocument('a.ts'),
    li.diagnosticDelta({ files: ['a.ts'] }),
    li.diagnostics('a.ts'),
    li.workspaceSymbols('x'),
  ]
  const got = await Promise.all(calls.map(settle))
  for (const [i, g] of got.entries()) {
    assert.equal(g.code, 'ERR_PRISM_LSP_TIMEOUT', `call ${i}: ${JSON.stringify(g)}`)
    assert.ok(g.ms < 1000 + 400, `call ${i} settled after ${g.ms} ms`)
  }
  assert.equal(received(log, 'initialize').length, 1, 'one start for every concurrent caller')
  await li.dispose()
})

test('a slow start counts against the call: diagnosticDelta still settles within its timeout, reporting incomplete', async () => {
  // The server starts after 500 ms and never publishes: the wait for the set gets only
  // what is left of the call's 1500 ms (it stops a tenth early, to report what is missing).
  const { ws, li } = setup({ initDelayMs: 500, skipPublishFor: [1] }, { limits: { requestTimeoutMs: 1500 } })
  writeFileSync(join(ws, 'a.ts'), 'ERROR\n')
  const t0 = Date.now()
  const d = await li.diagnosticDelta({ files: ['a.ts'] })
  const took = Date.now() - t0
  assert.deepEqual(d.incomplete, ['a.ts'])
  assert.ok(took < 1500 + 300, `settled after ${took} ms`)
  await li.dispose()
})

test('the server start counts against the call: a slow start then a slow answer is a TIMEOUT within the call\'s timeout', async () => {
  // A call that restarted its clock after the start would settle at 1200 + 2000 ms or
  // later; the bound leaves 800 ms for a loaded machine and still tells the two apart.
  const { ws, log, li } = setup({ initDelayMs: 1200, slowMs: 1200 }, { limits: { requestTimeoutMs: 2000 } })
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  const r = await settle(li.hover({ file: 'a.ts', line: 0, character: 1 }))
  assert.equal(r.code, 'ERR_PRISM_LSP_TIMEOUT')
  assert.ok(r.ms < 2000 + 800, `settled after ${r.ms} ms`)
  const hoverId = received(log, 'textDocument/hover')[0].id
  assert.ok(await waitFor(() => received(log, '$/cancelRequest').some((c) => c.params.id === hoverId)), 'the request is cancelled on the wire')
  await li.dispose()
})

test('a caller leaving does not cancel the shared start: the others get the server it started', async () => {
  const { ws, log, li } = setup({ initDelayMs: 600 }, { limits: { requestTimeoutMs: 5000 } })
  writeFileSync(join(ws, 'a.ts'), 'hello\n')
  const loc = { file: 'a.ts', line: 0, character: 1 }
  const ac = new AbortController()
  const first = settle(li.hover(loc, { signal: ac.signal }))
  const secondCall = li.hover(loc)
  const second = settle(secondCall)
  await waitFor(() => received(log, 'initialize').length === 1)
  ac.abort()
  // Not a timing threshold (the machine may be slow): the aborted caller settles, with the
  // abort, before the start it was waiting on has finished (the server holds it 600 ms).
  const left = await first
  assert.equal(left.ok, undefined, 'the aborted caller rejects')
  assert.equal(left.error?.name, 'AbortError', 'with the signal\'s reason')
  const stayed = await second
  assert.ok(left.at < stayed.at, 'the aborted caller leaves before the shared start completes')
  assert.equal(stayed.ok, true, 'the other caller gets its answer')
  assert.match((await secondCall).text, /word:hello/)
  assert.match((await li.hover(loc)).text, /word:hello/)
  assert.equal(received(log, 'initialize').length, 1, 'one start, not cancelled by the caller that left')
  await li.dispose()
})

test('restarts are budgeted over a window: a burst costs one start, the budget comes back', async () => {
  // Every start fails (the server dies during initialize).
  const { ws, log, li } = setup({ crashOn: 'initialize' }, { limits: { maxRestartsPerServer: 1, restartWindowMs: 1500 } })
  writeFileSync(join(ws, 'a.ts'), 'x\n')
  const burst = await Promise.allSettled(Array.from({ length: 8 }, () => li.syncDocument('a.ts')))
  for (const r of burst) assert.equal(r.reason?.code, 'ERR_PRISM_LSP_SERVER')
  assert.equal(received(log, 'initialize').length, 1, 'eight concurrent callers, one start')
  await assert.rejects(li.syncDocument('a.ts'), (e) => e.code === 'ERR_PRISM_LSP_SERVER' && !/budget/.test(e.message))
  assert.equal(received(log, 'initialize').length, 2, 'the one restart of the window')
  await assert.rejects(li.syncDocument('a.ts'), (e) => e.code === 'ERR_PRISM_LSP_SERVER' && /restart budget \(1 restarts per 1500 ms\)/.test(e.message))
  assert.equal(received(log, 'initialize').length, 2, 'no start while the budget is spent')
  await new Promise((r) => setTimeout(r, 1600))
  await assert.rejects(li.syncDocument('a.ts'), (e) => e.code === 'ERR_PRISM_LSP_SERVER' && !/budget/.test(e.message))
  assert.equal(received(log, 'initialize').length, 3, 'the window passed: the server starts again')
  await li.dispose()
})

test('dispose with a server that never answers initialize finishes at once and kills it', async () => {
  const { ws, log, li } = setup({ neverInit: true, grandchild: true }, { limits: { requestTimeoutMs: 10000 } })
  writeFileSync(join(ws, 'a.ts'), 'x\n')
  const pending = settle(li.syncDocument('a.ts'))
  const pid = await waitFor(() => readLog(log).find((e) => e.in?.method === 'initialize')?.pid)
  const grandchild = await waitFor(() => readLog(log).find((e) => e.grandchild)?.grandchild)
  assert.ok(alive(pid) && alive(grandchild))
  const t0 = Date.now()
  await li.dispose()
  const took = Date.now() - t0
  assert.ok(took < 500, `dispose took ${took} ms`)
  const p = await pending
  assert.equal(p.code, 'ERR_PRISM_LSP_SERVER')
  assert.ok(p.ms < 1000, `the waiting call settled after ${p.ms} ms`)
  assert.ok(await waitFor(() => !alive(pid) && !alive(grandchild), 2000), 'server and its group are gone')
})

// Issue 17 point 5: input that throws while it is read is one of our errors, with the
// caller's error as cause.
test('a throwing getter or Proxy trap in any input is a TypeError with the caller\'s error as cause', async () => {
  const boom = new Error('boom')
  boom.code = 'ERR_INVALID_ARG_TYPE' // looks like ours: must still be wrapped, not passed through
  const getter = (obj, key) => Object.defineProperty({ ...obj }, key, { get() { throw boom }, enumerable: true })
  const trap = new Proxy({}, { get() { throw boom }, ownKeys() { throw boom }, getPrototypeOf() { throw boom } })
  const revoked = Proxy.revocable({}, {})
  revoked.revoke()
  const wrapped = (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE' && e.cause === boom
  const wrappedAny = (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE' && e.cause instanceof Error
  const ws = workspace()
  assert.throws(() => createLanguageIntelligence(getter({ workspaceRoot: ws, servers: {} }, 'servers')), wrapped)
  assert.throws(() => createLanguageIntelligence(getter({ workspaceRoot: ws, servers: {} }, 'policy')), wrapped)
  assert.throws(() => createLanguageIntelligence({ workspaceRoot: ws, servers: {}, policy: { get check() { throw boom } } }), wrapped)
  assert.throws(() => createLanguageIntelligence(trap), wrapped)
  assert.throws(() => createLanguageIntelligence(revoked.proxy), wrappedAny)
  assert.throws(() => new LspFrameReader(getter({}, 'maxMessageBytes')), wrapped)
  assert.throws(() => new LspFrameReader(trap), wrapped)
  const reader = new LspFrameReader()
  assert.throws(() => reader.push(trap), wrapped)
  assert.throws(() => reader.push(new Proxy(Buffer.from('x'), {})), wrappedAny)
  assert.throws(() => reader.push(revoked.proxy), wrappedAny)
  assert.throws(() => encodeLspFrame(getter({ jsonrpc: '2.0' }, 'id')), wrapped)
  assert.throws(() => encodeLspFrame(trap), wrapped)
  assert.throws(() => encodeLspFrame({ toJSON() { throw boom } }), wrapped)
  assert.throws(() => applyTextEdits('x', [getter({ newText: 'y' }, 'range')]), wrapped)
  assert.throws(() => resolveLanguageIntelligenceLimits(trap), wrapped)
  const li = createLanguageIntelligence({ workspaceRoot: ws, servers: { fake: fake() } })
  writeFileSync(join(ws, 'a.ts'), 'x\n')
  await assert.rejects(li.hover(getter({ file: 'a.ts', line: 0, character: 0 }, 'line')), wrapped)
  await assert.rejects(li.hover({ file: 'a.ts', line: 0, character: 0 }, trap), wrapped)
  await assert.rejects(li.hover({ file: 'a.ts', line: 0, character: 0 }, getter({}, 'signal')), wrapped)
  await assert.rejects(li.diagnosticDelta(getter({ files: ['a.ts'] }, 'previous')), wrapped)
  await assert.rejects(li.diagnosticDelta({ files: ['a.ts'], previous: trap }), wrapped)
  await assert.rejects(li.rename(getter({ file: 'a.ts', line: 0, character: 0 }, 'newName')), wrapped)
  await assert.rejects(li.syncDocument('a.ts', trap), wrapped)
  await li.dispose()
})

// Issue 17 point 7: frame memory is visible to V8, so a synchronous loop stays bounded.
test('a million encodeLspFrame calls and a million LspFrameReaders in a synchronous loop stay bounded', () => {
  const script = `
    import { encodeLspFrame, LspFrameReader } from ${JSON.stringify(new URL('../index.mjs', import.meta.url).href)}
    const msg = { jsonrpc: '2.0', id: 1, method: 'textDocument/hover', params: { textDocument: { uri: 'file:///a.ts' }, position: { line: 1, character: 2 } } }
    const frame = encodeLspFrame(msg)
    const part = frame.subarray(0, 40)
    let peak = 0
    for (let i = 0; i < 1e6; i++) {
      encodeLspFrame(msg)
      new LspFrameReader().push(part)
      if (i % 20000 === 0) peak = Math.max(peak, process.memoryUsage().rss)
    }
    console.log(JSON.stringify({ peakMb: Math.round(Math.max(peak, process.memoryUsage().rss) / 1048576) }))`
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120000 })
  assert.equal(r.status, 0, r.stderr)
  const { peakMb } = JSON.parse(r.stdout)
  assert.ok(peakMb < 200, `peak RSS ${peakMb} MB`)
})
