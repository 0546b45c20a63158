// Language intelligence benchmarks. Each workload is printed next to a floor measured in
// the same run:
// - hover round trips through LanguageIntelligence vs raw JSON-RPC from Node to the same
//   stdio server (the fake server: the server's own time is ~0, so the ratio is the
//   client's overhead; target ≤ 1.5x);
// - frame decoding throughput of LspFrameReader (MB/s) vs a minimal JS decoder;
// - syncDocument → complete diagnosticDelta with typescript-language-server vs raw
//   didChange → the same tsserver diagnostics requests from Node (and the first publish).
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { performance } from 'node:perf_hooks'
import { createLanguageIntelligence, encodeLspFrame, LspFrameReader } from '../index.mjs'
import { fmt } from './util.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const fakeServer = join(root, '__test__', 'fixtures', 'fake-lsp-server.mjs')
const tsCli = join(root, 'node_modules', 'typescript-language-server', 'lib', 'cli.mjs')

/** A raw JSON-RPC client over a spawned stdio server, written directly in Node. */
function rawClient(command, args, cwd) {
  const child = spawn(command, args, { cwd, stdio: ['pipe', 'pipe', 'ignore'] })
  let buf = Buffer.alloc(0)
  let nextId = 1
  const waiting = new Map()
  const listeners = []
  child.stdout.on('data', (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk
    for (;;) {
      const end = buf.indexOf('\r\n\r\n')
      if (end === -1) return
      const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, end).toString('latin1'))[1])
      if (buf.length < end + 4 + len) return
      const msg = JSON.parse(buf.subarray(end + 4, end + 4 + len).toString('utf8'))
      buf = buf.subarray(end + 4 + len)
      if (msg.id !== undefined && msg.method === undefined) {
        waiting.get(msg.id)?.(msg)
        waiting.delete(msg.id)
      } else if (msg.id !== undefined) {
        send({ jsonrpc: '2.0', id: msg.id, result: null })
      } else {
        for (const l of listeners) l(msg)
      }
    }
  })
  function send(msg) {
    const body = Buffer.from(JSON.stringify(msg))
    child.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]))
  }
  return {
    request(method, params) {
      const id = nextId++
      return new Promise((resolve) => {
        waiting.set(id, resolve)
        send({ jsonrpc: '2.0', id, method, params })
      })
    },
    notify: (method, params) => send({ jsonrpc: '2.0', method, params }),
    onNotification: (l) => listeners.push(l),
    async close() {
      await this.request('shutdown', null)
      this.notify('exit', null)
      child.stdin.end()
      await new Promise((r) => child.once('exit', r))
    },
  }
}

async function hoverBench() {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'prism-bench-')))
  const text = 'const alpha = 1\nconst beta = alpha + 1\n'
  writeFileSync(join(ws, 'a.ts'), text)
  const uri = pathToFileURL(join(ws, 'a.ts')).href
  const N = 200
  const raw = rawClient(process.execPath, [fakeServer, '{}'], ws)
  await raw.request('initialize', { processId: process.pid, rootUri: pathToFileURL(ws).href, capabilities: {} })
  raw.notify('initialized', {})
  raw.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'typescript', version: 1, text } })
  const li = createLanguageIntelligence({
    workspaceRoot: ws,
    servers: { fake: { command: process.execPath, args: [fakeServer, '{}'], languages: ['typescript'] } },
  })
  await li.syncDocument('a.ts')
  const rawBatch = async () => {
    for (let i = 0; i < N; i++) await raw.request('textDocument/hover', { textDocument: { uri }, position: { line: 1, character: 15 } })
  }
  const ourBatch = async () => {
    for (let i = 0; i < N; i++) await li.hover({ file: 'a.ts', line: 1, character: 15 })
  }
  // Interleaved batches, so load changes on a shared machine hit both sides alike.
  const rawTimes = []
  const ourTimes = []
  for (let r = 0; r < 13; r++) {
    const t0 = performance.now()
    await rawBatch()
    const t1 = performance.now()
    await ourBatch()
    const t2 = performance.now()
    if (r >= 2) {
      rawTimes.push(t1 - t0)
      ourTimes.push(t2 - t1)
    }
  }
  await raw.close()
  await li.dispose()
  // The cost of one call into the native runtime and back, without any I/O.
  const idle = createLanguageIntelligence({ workspaceRoot: ws, servers: {} })
  const idleTimes = []
  for (let r = 0; r < 7; r++) {
    const t0 = performance.now()
    for (let i = 0; i < N; i++) await idle.diagnostics()
    idleTimes.push(performance.now() - t0)
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]
  const perRaw = (med(rawTimes) * 1000) / N
  const perOurs = (med(ourTimes) * 1000) / N
  const perIdle = (med(idleTimes) * 1000) / N
  rmSync(ws, { recursive: true, force: true })
  console.log(`hover round trip (fake stdio server, ${N} sequential, 11 interleaved batches): LanguageIntelligence ${fmt(perOurs, 1)} µs, raw Node JSON-RPC ${fmt(perRaw, 1)} µs, ratio ${fmt(perOurs / perRaw)}x (target ≤ 1.5x); a native call without I/O costs ${fmt(perIdle, 1)} µs`)
}

function frameBench() {
  const msgs = []
  for (let i = 0; i < 4000; i++) {
    msgs.push({ jsonrpc: '2.0', method: 'textDocument/publishDiagnostics', params: { uri: `file:///w/f${i}.ts`, version: i, diagnostics: [{ range: { start: { line: i, character: 3 }, end: { line: i, character: 9 } }, severity: 1, message: 'Type é🙂 is not assignable '.repeat(8), source: 'ts', code: 2322 }] } })
  }
  const bytes = Buffer.concat(msgs.map((m) => encodeLspFrame(m)))
  const chunk = 64 * 1024
  const mb = bytes.length / (1024 * 1024)
  const time = (fn) => {
    fn()
    const runs = []
    for (let r = 0; r < 7; r++) {
      const t0 = performance.now()
      fn()
      runs.push(performance.now() - t0)
    }
    runs.sort((a, b) => a - b)
    return runs[3]
  }
  const ours = time(() => {
    const reader = new LspFrameReader()
    let n = 0
    for (let i = 0; i < bytes.length; i += chunk) n += reader.push(bytes.subarray(i, i + chunk)).length
    if (n !== msgs.length) throw new Error('frame count')
  })
  const floor = time(() => {
    let buf = Buffer.alloc(0)
    let n = 0
    for (let i = 0; i < bytes.length; i += chunk) {
      buf = Buffer.concat([buf, bytes.subarray(i, i + chunk)])
      for (;;) {
        const end = buf.indexOf('\r\n\r\n')
        if (end === -1) break
        const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, end).toString('latin1'))[1])
        if (buf.length < end + 4 + len) break
        JSON.parse(buf.subarray(end + 4, end + 4 + len).toString('utf8'))
        n++
        buf = buf.subarray(end + 4 + len)
      }
    }
    if (n !== msgs.length) throw new Error('frame count')
  })
  console.log(`frame decoding (${fmt(mb)} MB, 64 KiB chunks, bodies parsed to JS objects): LspFrameReader ${fmt(mb / (ours / 1000), 1)} MB/s, minimal JS decoder ${fmt(mb / (floor / 1000), 1)} MB/s, time ratio ${fmt(ours / floor)}x`)
}

async function diagnosticsBench() {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'prism-bench-ts-')))
  const bad = 'export const total: number = "ten"\n'
  const good = 'export const total: number = 10\n'
  writeFileSync(join(ws, 'app.ts'), good)
  const runs = 6
  const li = createLanguageIntelligence({
    workspaceRoot: ws,
    servers: { ts: { command: process.execPath, args: [tsCli, '--stdio'], languages: ['typescript'] } },
    limits: { requestTimeoutMs: 60000 },
  })
  await li.diagnosticDelta({ files: ['app.ts'] }) // start + first check
  const ours = []
  for (let i = 0; i < runs; i++) {
    writeFileSync(join(ws, 'app.ts'), i % 2 === 0 ? bad : good)
    const t0 = performance.now()
    await li.syncDocument('app.ts')
    const d = await li.diagnosticDelta({ files: ['app.ts'] })
    ours.push(performance.now() - t0)
    if (d.incomplete.length) throw new Error('incomplete')
  }
  await li.dispose()

  const uri = pathToFileURL(join(ws, 'app.ts')).href
  const raw = rawClient(process.execPath, [tsCli, '--stdio'], ws)
  await raw.request('initialize', { processId: process.pid, rootUri: pathToFileURL(ws).href, capabilities: { textDocument: { publishDiagnostics: {} } } })
  raw.notify('initialized', {})
  let onPublish = null
  raw.onNotification((m) => {
    if (m.method === 'textDocument/publishDiagnostics' && m.params.uri === uri && onPublish) onPublish()
  })
  const published = () => new Promise((r) => { onPublish = r })
  let p = published()
  raw.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'typescript', version: 1, text: good } })
  await p
  const askAll = async () => {
    for (const kind of ['syntacticDiagnosticsSync', 'semanticDiagnosticsSync', 'suggestionDiagnosticsSync']) {
      await raw.request('workspace/executeCommand', { command: 'typescript.tsserverRequest', arguments: [kind, { file: uri }] })
    }
  }
  await askAll()
  // Floors, interleaved: the first publish after a change (what a push-only client could
  // wait for at best, complete or not), and the same three tsserver requests LanguageIntelligence
  // sends, from Node.
  const published1 = []
  const asked = []
  let version = 2
  for (let i = 0; i < runs; i++) {
    const text = i % 2 === 0 ? bad : good
    await new Promise((r) => setTimeout(r, 1000)) // let the previous change's publishes pass
    p = published()
    let t0 = performance.now()
    raw.notify('textDocument/didChange', { textDocument: { uri, version: version++ }, contentChanges: [{ text }] })
    await p
    published1.push(performance.now() - t0)
    t0 = performance.now()
    raw.notify('textDocument/didChange', { textDocument: { uri, version: version++ }, contentChanges: [{ text: text + ' ' }] })
    await askAll()
    asked.push(performance.now() - t0)
  }
  await raw.close()
  rmSync(ws, { recursive: true, force: true })
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)]
  console.log(`syncDocument → complete diagnosticDelta (typescript-language-server, error toggled): ${fmt(med(ours), 1)} ms median; raw didChange → the same three tsserverRequest diagnostics requests from Node ${fmt(med(asked), 1)} ms (ratio ${fmt(med(ours) / med(asked))}x); raw didChange → first publishDiagnostics ${fmt(med(published1), 0)} ms`)
}

export default async function () {
  // LSP_BENCH=hover|frames|diagnostics runs one workload.
  const only = process.env.LSP_BENCH
  if (!only || only === 'hover') await hoverBench()
  if (!only || only === 'frames') frameBench()
  if (!only || only === 'diagnostics') await diagnosticsBench()
}
