// Route fuzzer: random methods, raw paths (percent-encoding, `..`, overlong ids, empty
// segments, Unicode), random query strings and random bodies, from a seeded PRNG, over a
// real node:http server (raw node:http client, so paths reach the server unnormalised)
// and straight into the fetch handler. Never a 5xx, never a crash, every error body is
// `{ error: { code, message } }`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { serve, createFakeService, createRealService, createArtifactHandler, prng } from './http-support.mjs'

const linkSecret = 'fuzz-link-secret-0123456789'
const OWNER = { tenantId: 'tenant-f' }
const COUNT = 2500
const SEED = 0x5eed4

const METHODS = ['GET', 'GET', 'POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND']
const ACTIONS = ['revise', 'compare', 'approve', 'reject', 'delivery-link', 'last-validated', 'download', 'x', '', 'APPROVE']

function segment(r) {
  switch (r.int(12)) {
    case 0:
      return '..'
    case 1:
      return '.'
    case 2:
      return '%2e%2e'
    case 3:
      return ''
    case 4:
      return 'a'.repeat(200 + r.int(2000))
    case 5:
      return Array.from({ length: 1 + r.int(6) }, () => '%' + r.int(256).toString(16).padStart(2, '0')).join('')
    case 6:
      return '%' + r.pick(['', 'z', 'g1', '2', 'ZZ'])
    case 7:
      return encodeURIComponent(r.pick(['é', '💥', 'a b', 'a/b', 'a\\b', ' lead', 'trail ', '\u0000', '\u202e']))
    case 8:
      return 'download'
    case 9:
      return r.pick(['t1', 'a1', 'seed'])
    case 10:
      return r.pick(ACTIONS)
    default:
      return 'x' + r.int(1000)
  }
}

function path(r) {
  const base = r.next() < 0.9 ? '/prism/artifacts' : r.pick(['', '/prism', '/prism/artifactsX', '/other'])
  let p = base
  if (r.next() < 0.5) {
    // A well-formed route shape, one part of it sometimes mutated.
    const parts = [r.pick(['t1', 't2', 'deny']), r.pick(['a1', 'a2']), r.pick(ACTIONS.slice(0, 6))].slice(0, 1 + r.int(3))
    if (r.next() < 0.4) parts[r.int(parts.length)] = segment(r)
    p += '/' + parts.join('/')
  } else {
    const n = r.int(5)
    for (let i = 0; i < n; i++) p += '/' + segment(r)
  }
  if (r.next() < 0.3) {
    const q = r.pick([
      'link=' + Buffer.from(String(r.next())).toString('base64url') + '.' + Buffer.from(String(r.next())).toString('base64url'),
      'link=',
      'link=' + 'A'.repeat(r.int(20000)),
      'limit=' + r.pick(['5', '-1', 'abc', '99999999999', '1e3']),
      'cursor=' + segment(r),
      'link=a.b.c&link=d',
    ])
    p += '?' + q
  }
  return p
}

function body(r) {
  switch (r.int(16)) {
    case 0:
      return ''
    case 1:
      return '{'
    case 2:
      return JSON.stringify({ version: r.pick([1, 2, -1, 1.5, '1', null, 1e308, [], {}]) })
    case 13:
      return JSON.stringify({ version: 1, note: 'n'.repeat(66000) })
    case 3:
      return JSON.stringify({ uri: r.pick(['https://x/y', 'file:///etc/passwd', 'C:\\x', '/abs', '', 5]), mime: 'text/plain', hash: 'h' })
    case 4:
      return '[' + '['.repeat(r.int(3000)) + ']'.repeat(3000) + ']'
    case 5:
      return JSON.stringify({ ownership: { tenantId: 'evil' }, version: 1 })
    case 6:
      return '{"__proto__":{"polluted":1},"version":1}'
    case 7:
      return Buffer.from(Array.from({ length: r.int(200) }, () => r.int(256)))
    case 8:
      return 'x'.repeat(60000 + r.int(20000))
    case 9:
      return JSON.stringify({ from: r.int(4), to: r.int(4) })
    case 10:
      return JSON.stringify({ uri: 'https://x/' + 'y'.repeat(r.int(20000)), hash: 'h', mime: 'm'.repeat(r.int(1000)) })
    case 11:
      return 'null'
    case 12:
      return JSON.stringify({ ttlSeconds: r.pick([0, 1, 1e9, -5]), version: r.int(5) })
    default:
      return JSON.stringify({ id: segment(r), uri: 'https://x/' + r.int(100), mime: 'text/plain', hash: 'h' + r.int(9) })
  }
}

function rawRequest(agent, port, method, p, payload) {
  return new Promise((resolve) => {
    let req
    try {
      req = http.request({ host: '127.0.0.1', port, method, path: p, agent, headers: payload === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
        const chunks = []
        res.on('data', (d) => chunks.push(d))
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }))
        res.on('error', () => resolve({ status: 0, text: '' }))
      })
    } catch (err) {
      // The client refused to send it (e.g. characters node:http will not put in a path).
      resolve({ status: -1, text: String(err.code) })
      return
    }
    req.on('error', (err) => resolve({ status: 0, text: String(err.code) }))
    if (payload !== undefined && method !== 'GET' && method !== 'HEAD') req.end(payload)
    else req.end()
  })
}

function checkErrorBody(status, text, where) {
  if (status < 400 || status === 413 || text === '') return
  let parsed
  try {
    parsed = JSON.parse(text)
  } catch {
    // node:http itself answers some malformed requests (e.g. unknown methods) with 400.
    assert.equal(status, 400, `${where}: non-JSON ${status} body ${text.slice(0, 80)}`)
    return
  }
  assert.equal(typeof parsed.error?.code, 'string', where)
  assert.equal(typeof parsed.error?.message, 'string', where)
  assert.doesNotMatch(text, /\n\s+at |linkSecret|fuzz-link-secret/, where)
}

test(`route fuzzer: ${COUNT} seeded random requests over node:http into createArtifactService, never a 5xx`, async () => {
  const service = createRealService({ linkSecret })
  const handler = createArtifactHandler({ service, authorize: ({ threadId }) => threadId !== 'deny' && OWNER, linkSecret })
  const srv = await serve(handler)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 })
  const r = prng(SEED)
  const seen = new Map()
  try {
    // Give the fuzzer real records to hit.
    await rawRequest(agent, srv.port, 'POST', '/prism/artifacts/t1', JSON.stringify({ id: 'a1', uri: 'https://x/1', mime: 'text/plain', hash: 'h' }))
    const jobs = Array.from({ length: COUNT }, () => {
      const method = r.pick(METHODS)
      return { method, p: path(r), payload: r.next() < 0.7 ? body(r) : undefined }
    })
    let next = 0
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < jobs.length) {
          const job = jobs[next++]
          const res = await rawRequest(agent, srv.port, job.method, job.p, job.payload)
          seen.set(res.status, (seen.get(res.status) ?? 0) + 1)
          const where = `${job.method} ${job.p.slice(0, 120)}`
          assert.ok(res.status < 500, `${where} → ${res.status} ${res.text.slice(0, 200)}`)
          checkErrorBody(res.status, res.text, where)
        }
      }),
    )
    // Still serving, and nothing was polluted.
    const ok = await rawRequest(agent, srv.port, 'GET', '/prism/artifacts/t1/a1')
    assert.equal(ok.status, 200)
    assert.equal({}.polluted, undefined)
    if (process.env.HTTP_FUZZ_DEBUG) console.log([...seen].sort())
    for (const s of [200, 201, 400, 401, 403, 404, 413]) assert.ok((seen.get(s) ?? 0) > 0, `fuzzer reached ${s}: ${JSON.stringify([...seen])}`)
  } finally {
    agent.destroy()
    await srv.close()
  }
})

for (const [name, make] of [
  ['createArtifactService', () => createRealService({ linkSecret })],
  ['in-test fake service', () => createFakeService({ linkSecret })],
]) test(`route fuzzer straight into the fetch handler (${name}, no server in between)`, async () => {
  const service = make()
  const handler = createArtifactHandler({ service, authorize: () => OWNER, linkSecret, limits: { maxRequestBytes: 4096 } })
  const r = prng(SEED + 1)
  for (let i = 0; i < 1500; i++) {
    const method = r.pick(METHODS.filter((m) => m !== 'PROPFIND'))
    const p = path(r)
    const payload = method === 'GET' || method === 'HEAD' ? undefined : body(r)
    let request
    try {
      request = new Request('http://h' + p, { method, body: payload })
    } catch {
      continue
    }
    const res = await handler(request)
    const text = await res.text()
    assert.ok(res.status < 500, `${method} ${p.slice(0, 120)} → ${res.status} ${text.slice(0, 200)}`)
    checkErrorBody(res.status, text, `${method} ${p.slice(0, 80)}`)
  }
})
