// HTTP adapter: requests/s and p99 latency at 32 concurrent keep-alive connections on
// loopback, for GET {base}/:thread/:artifact and POST …/approve, next to a bare node:http
// handler returning a fixed JSON body (the floor). The server runs in a worker thread so
// the load generator does not share its event loop.
import http from 'node:http'
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { performance } from 'node:perf_hooks'
import { percentile, fmt } from './util.mjs'

const CONNECTIONS = 32
const SECONDS = Number(process.env.HTTP_BENCH_SECONDS ?? 1)
const ROUNDS = Number(process.env.HTTP_BENCH_ROUNDS ?? 4)
const ARTIFACTS = CONNECTIONS
const OWNER = { tenantId: 'bench-tenant' }
const IDENTITY = { tenantId: 'bench-tenant', principal: { kind: 'user', id: 'bench' }, scopes: [], issuedAt: new Date().toISOString(), verified: true }
const linkSecret = 'bench-link-secret-0123456789abcdef'

async function makeService(prism) {
  if (typeof prism.createArtifactService === 'function' && typeof prism.createMemoryCheckpointStore === 'function') {
    const service = prism.createArtifactService(prism.createMemoryCheckpointStore(), {
      redactor: prism.createSecretRedactor([]),
      linkSecret,
    })
    return { service, kind: 'createArtifactService over createMemoryCheckpointStore' }
  }
  // Before the artifact service lands: the suites' contract-following fake.
  const { createFakeService } = await import('../__test__/http-support.mjs')
  return { service: createFakeService({ linkSecret }), kind: 'in-memory fake service (artifact service not built)' }
}

async function serverMain() {
  const prism = await import('../index.mjs')
  let server
  let kind = 'bare'
  if (workerData.mode === 'floor') {
    const body = JSON.stringify({ id: 'a0', threadId: 'bench', state: 'pending', revisions: [{ version: 1 }] })
    server = http.createServer((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
      res.end(body)
    })
  } else if (workerData.mode === 'constant') {
    // The adapter alone: every service method answers a fixed record at once.
    const record = { id: 'a0', threadId: 'bench', state: 'pending', revisions: [{ version: 1 }] }
    const service = {}
    for (const m of ['attach', 'list', 'get', 'revise', 'compare', 'approve', 'reject', 'lastValidated', 'deliveryLink']) service[m] = async () => record
    kind = 'constant'
    server = http.createServer(prism.toNodeListener(prism.createArtifactHandler({ service, authorize: () => ({ ownership: OWNER, identity: IDENTITY }), linkSecret })))
  } else {
    const made = await makeService(prism)
    kind = made.kind
    const ownership = OWNER
    for (let i = 0; i < ARTIFACTS; i++) {
      await made.service.attach({ ownership, identity: IDENTITY, threadId: 'bench', id: `a${i}`, uri: `https://blob.example/a${i}`, mime: 'text/plain', hash: 'sha256:aaaa' })
    }
    const handler = prism.createArtifactHandler({
      service: made.service,
      authorize: () => ({ ownership, identity: IDENTITY }),
      linkSecret,
    })
    server = http.createServer(prism.toNodeListener(handler))
  }
  server.keepAliveTimeout = 60_000
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  parentPort.postMessage({ port: server.address().port, kind })
  parentPort.on('message', (m) => {
    if (m === 'stop') server.close(() => process.exit(0)) && server.closeAllConnections()
  })
}

async function startServer(mode) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { httpBenchServer: true, mode } })
  const info = await new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  return { ...info, stop: () => new Promise((r) => (worker.once('exit', r), worker.postMessage('stop'))) }
}

function once(agent, port, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent, headers: body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {} }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Run `CONNECTIONS` closed loops for `SECONDS` after a warm-up; returns { lat, seconds, statuses }. */
async function load(port, makeRequest) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })
  const statuses = new Map()
  const lat = []
  let stopAt = performance.now() + 250 // warm-up
  let measuring = false
  const loop = async (c) => {
    let n = 0
    while (performance.now() < stopAt) {
      const { method, path, body } = makeRequest(c, n++)
      const t0 = performance.now()
      const status = await once(agent, port, method, path, body)
      if (measuring) {
        lat.push(performance.now() - t0)
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
      }
    }
  }
  await Promise.all(Array.from({ length: CONNECTIONS }, (_, c) => loop(c)))
  measuring = true
  const t0 = performance.now()
  stopAt = t0 + SECONDS * 1000
  await Promise.all(Array.from({ length: CONNECTIONS }, (_, c) => loop(c)))
  const elapsed = (performance.now() - t0) / 1000
  agent.destroy()
  return { lat, seconds: elapsed, statuses }
}

export default async function main() {
  // Both servers stay up and the workloads alternate in short rounds, so a change in
  // machine load hits the floor and the handler alike.
  const floorSrv = await startServer('floor')
  const srv = await startServer('handler')
  const constSrv = await startServer('constant')
  const workloads = [
    ['floor: bare node:http, fixed JSON', floorSrv.port, () => ({ method: 'GET', path: '/prism/artifacts/bench/a0' })],
    ['GET, adapter alone (service answers a constant)', constSrv.port, (c) => ({ method: 'GET', path: `/prism/artifacts/bench/a${c % ARTIFACTS}` })],
    ['GET {base}/:thread/:artifact', srv.port, (c) => ({ method: 'GET', path: `/prism/artifacts/bench/a${c % ARTIFACTS}` })],
    [
      'POST {base}/:thread/:artifact/approve',
      srv.port,
      (c, n) => ({ method: 'POST', path: `/prism/artifacts/bench/a${c % ARTIFACTS}/approve`, body: JSON.stringify({ version: 1, note: `n${n % 10}` }) }),
    ],
  ]
  const totals = workloads.map(() => ({ count: 0, seconds: 0, lat: [], statuses: new Map() }))
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [, port, make]] of workloads.entries()) {
      const r = await load(port, make)
      const t = totals[i]
      t.count += r.lat.length
      t.seconds += r.seconds
      t.lat.push(...r.lat)
      for (const [s, n] of r.statuses) t.statuses.set(s, (t.statuses.get(s) ?? 0) + n)
    }
  }
  await floorSrv.stop()
  await srv.stop()
  await constSrv.stop()
  const floorRps = totals[0].count / totals[0].seconds
  console.log(`service: ${srv.kind}; ${CONNECTIONS} keep-alive connections on 127.0.0.1; ${ROUNDS} alternating rounds of ${SECONDS}s per workload; servers in worker threads`)
  console.log('workload | req/s | p50 ms | p99 ms | req/s vs floor | statuses')
  for (const [i, [name]] of workloads.entries()) {
    const t = totals[i]
    const rps = t.count / t.seconds
    const st = [...t.statuses].map(([s, n]) => `${s}:${n}`).join(' ')
    console.log(`${name} | ${fmt(rps, 0)} | ${fmt(percentile(t.lat, 50))} | ${fmt(percentile(t.lat, 99))} | ${fmt(rps / floorRps, 3)}x | ${st}`)
  }
}

if (!isMainThread && workerData?.httpBenchServer) {
  serverMain()
} else if (isMainThread && import.meta.url === `file://${process.argv[1]}`) {
  main()
}
