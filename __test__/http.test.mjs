// HTTP adapter over a real node:http server on 127.0.0.1 with fetch as the client:
// options, every route and status, download reauthorization, body caps, identity checks,
// redaction and aborts.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import * as prism from '../index.mjs'
import { serve, createFakeService, createRealService, createRacyStore, createArtifactHandler, toNodeListener, ArtifactError, signLink, OWNER, IDENTITY } from './http-support.mjs'

const linkSecret = 'link-secret-do-not-leak-0123456789'
const OTHER = { tenantId: 'tenant-2', userId: 'user-2' }
const noop = { attach() {}, list() {}, get() {}, revise() {}, compare() {}, approve() {}, reject() {}, lastValidated() {}, deliveryLink() {} }

/** authorize: header `x-owner: other` → OTHER, `x-deny` → false, otherwise OWNER + IDENTITY. */
function makeAuthorize(log = []) {
  return async (args) => {
    log.push(args)
    const h = args.request.headers
    if (h.get('x-deny')) return false
    if (h.get('x-owner') === 'other') return { ownership: OTHER }
    if (h.get('x-identity') === 'expired') return { ownership: OWNER, identity: { ...IDENTITY, expiresAt: new Date(Date.now() - 1000).toISOString() } }
    if (h.get('x-identity') === 'unverified') return { ownership: OWNER, identity: { ...IDENTITY, verified: false } }
    if (h.get('x-identity') === 'revoked') return { ownership: OWNER, identity: { ...IDENTITY, revokedAt: new Date(Date.now() - 1000).toISOString() } }
    if (h.get('x-identity') === 'other-tenant') return { ownership: OWNER, identity: { ...IDENTITY, tenantId: 'tenant-2' } }
    if (h.get('x-identity') === 'none') return OWNER
    return { ownership: OWNER, identity: IDENTITY }
  }
}

const JSON_TYPE = { 'content-type': 'application/json' }
const json = (body) => ({ method: 'POST', headers: JSON_TYPE, body: JSON.stringify(body) })

describe('createArtifactHandler options', () => {
  const base = { service: noop, authorize: () => false, linkSecret }
  test('refuses missing or wrongly typed options with TypeError', () => {
    for (const bad of [undefined, null, 1, 'x']) assert.throws(() => createArtifactHandler(bad), TypeError)
    assert.throws(() => createArtifactHandler({ ...base, service: null }), TypeError)
    assert.throws(() => createArtifactHandler({ ...base, service: { ...noop, approve: 1 } }), /service\.approve/)
    assert.throws(() => createArtifactHandler({ ...base, authorize: undefined }), /authorize/)
    assert.throws(() => createArtifactHandler({ ...base, linkSecret: '' }), /linkSecret/)
    assert.throws(() => createArtifactHandler({ ...base, linkSecret: 42 }), /linkSecret/)
    assert.throws(() => createArtifactHandler({ ...base, linkSecret: 'short' }), /16\.\.4096/)
    assert.throws(() => createArtifactHandler({ ...base, linkSecret: 'x'.repeat(4097) }), /linkSecret/)
    createArtifactHandler({ ...base, linkSecret: new Uint8Array(32) })
    assert.throws(() => createArtifactHandler({ ...base, redactor: {} }), /redactor/)
    assert.throws(() => createArtifactHandler({ ...base, limits: 5 }), /limits/)
    assert.throws(() => createArtifactHandler({ ...base, basePath: 5 }), TypeError)
    assert.throws(() => createArtifactHandler({ ...base, ownership: { tenantId: 't' } }), /options\.ownership is not a known option/)
    assert.throws(() => createArtifactHandler({ ...base, limits: { nope: 10 } }), /limits\.nope/)
    // The handler takes the service's ArtifactLimits (it reads maxRequestBytes and deliveryLinkTokenBytes).
    createArtifactHandler({ ...base, limits: { recordBytes: 10, maxRequestBytes: 100, deliveryLinkTokenBytes: 2048 } })
  })
  test('validates basePath: absolute, no query or fragment, not "/"', () => {
    for (const bad of ['', '/', 'prism', 'https://x/prism', '/prism?x=1', '/prism#x', '//prism', '/a/../b', '/a b']) {
      assert.throws(() => createArtifactHandler({ ...base, basePath: bad }), (e) => e instanceof TypeError && /basePath/.test(e.message), bad)
    }
    assert.equal(typeof createArtifactHandler({ ...base, basePath: '/api/v1/artifacts/' }), 'function')
  })
  test('maxRequestBytes outside 1..1 MiB is a RangeError, never clamped', () => {
    for (const bad of [0, -1, 1048577, 1.5, NaN, Infinity]) {
      assert.throws(() => createArtifactHandler({ ...base, limits: { maxRequestBytes: bad } }), RangeError, String(bad))
    }
    assert.throws(() => createArtifactHandler({ ...base, limits: { maxRequestBytes: '10' } }), TypeError)
    for (const ok of [1, 65536, 1048576]) createArtifactHandler({ ...base, limits: { maxRequestBytes: ok } })
  })
  test('the handler takes a Request and toNodeListener a function', async () => {
    const h = createArtifactHandler(base)
    await assert.rejects(h({ url: 'http://x/prism/artifacts/t' }), TypeError)
    assert.throws(() => toNodeListener('x'), TypeError)
  })
})

// The same suite over the real service (on a store whose loads pause, so concurrent
// writers really race) and over the in-test fake.
const KINDS = [
  {
    name: 'createArtifactService',
    make: (calls) => createRealService({ linkSecret, calls, store: createRacyStore(), limits: { artifactsPerThread: 3, revisionsPerArtifact: 3 } }),
    race: (svc, on) => (svc.store.delayMs = on ? 25 : 0),
  },
  {
    name: 'in-test fake service',
    make: (calls) => createFakeService({ linkSecret, calls, maxArtifacts: 3, maxRevisions: 3 }),
    race: (svc, on) => (svc.raceWindowMs = on ? 25 : 0),
  },
]

for (const kind of KINDS) describe(`routes and statuses over node:http (${kind.name})`, () => {
  let srv, service, calls, authLog
  const url = (p) => srv.url + '/prism/artifacts' + p
  before(async () => {
    calls = []
    authLog = []
    service = kind.make(calls)
    const handler = createArtifactHandler({ service, authorize: makeAuthorize(authLog), linkSecret })
    srv = await serve(handler)
  })
  after(() => srv.close())

  test('attach 201, list, get, revise, compare, approve, reject, last-validated, delivery-link, download', async () => {
    let r = await fetch(url('/thread-1'), json({ id: 'a1', uri: 'https://blob.example/v1', mime: 'text/markdown', hash: 'sha256:aaa' }))
    assert.equal(r.status, 201)
    assert.match(r.headers.get('content-type'), /^application\/json/)
    const rec = await r.json()
    assert.equal(rec.id, 'a1')
    assert.equal(rec.revisions.length, 1)

    r = await fetch(url('/thread-1'))
    assert.equal(r.status, 200)
    assert.deepEqual((await r.json()).items.map((x) => x.id), ['a1'])

    r = await fetch(url('/thread-1/a1'))
    assert.equal(r.status, 200)
    assert.equal((await r.json()).id, 'a1')

    r = await fetch(url('/thread-1/a1/revise'), json({ uri: 'https://blob.example/v2', hash: 'sha256:bbb' }))
    assert.equal(r.status, 200)
    assert.equal((await r.json()).revisions.length, 2)

    r = await fetch(url('/thread-1/a1/compare'), json({ from: 1, to: 2 }))
    assert.equal(r.status, 200)
    assert.deepEqual((await r.json()).changed, { hash: true, mime: false, uri: true, citations: false })

    r = await fetch(url('/thread-1/a1/last-validated'))
    assert.equal(r.status, 404, 'not validated before any approval')
    assert.equal((await r.json()).error.code, 'not_validated')

    r = await fetch(url('/thread-1/a1/approve'), json({ version: 2 }))
    assert.equal(r.status, 200)
    const approved = await r.json()
    assert.equal(approved.lastValidatedVersion, 2)
    assert.equal(approved.approvals[0].reviewer, 'user:user-1', 'identity from authorize reaches the service')

    r = await fetch(url('/thread-1/a1/reject'), json({ version: 1, note: 'no' }))
    assert.equal(r.status, 200)
    assert.equal((await r.json()).lastValidatedVersion, 2)

    r = await fetch(url('/thread-1/a1/last-validated'))
    assert.equal(r.status, 200)
    assert.equal((await r.json()).version, 2)

    r = await fetch(url('/thread-1/a1/delivery-link'), json({}))
    assert.equal(r.status, 200)
    const { link, token } = await r.json()
    assert.equal(token.version, 2)

    r = await fetch(url('/download?link=' + encodeURIComponent(link)))
    assert.equal(r.status, 200)
    const dl = await r.json()
    assert.deepEqual(Object.keys(dl).sort(), ['artifactId', 'revision', 'threadId'])
    assert.equal(dl.artifactId, 'a1')
    assert.equal(dl.threadId, 'thread-1')
    assert.equal(dl.revision.version, 2)
    assert.equal(dl.revision.uri, 'https://blob.example/v2')
  })

  test('ownership comes only from authorize: reserved body keys are 400 and ids come from the path', async () => {
    for (const key of ['ownership', 'identity', 'signal']) {
      const r = await fetch(url('/thread-1/a1/approve'), json({ version: 2, [key]: key === 'ownership' ? OTHER : 'x' }))
      assert.equal(r.status, 400, key)
      const body = await r.json()
      assert.equal(body.error.code, 'invalid_input')
      assert.match(body.error.message, new RegExp(key))
    }
    // A body may repeat the path's ids (the reference's clients send them); a different one is a 400.
    for (const [key, value] of [['threadId', 'thread-2'], ['artifactId', 'a2']]) {
      const r = await fetch(url('/thread-1/a1/approve'), json({ version: 2, [key]: value }))
      assert.equal(r.status, 400, key)
      assert.match((await r.json()).error.message, new RegExp(`body.${key} differs`))
    }
    calls.length = 0
    let r = await fetch(url('/thread-1/a1/approve'), json({ version: 2, threadId: 'thread-1', artifactId: 'a1' }))
    assert.equal(r.status, 200)
    r = await fetch(url('/thread-1'), json({ threadId: 'thread-1', id: 'repeats', uri: 'https://blob.example/r', mime: 'text/plain', hash: 'h' }))
    assert.equal(r.status, 201, 'an attach body repeating the path threadId')
    r = await fetch(url('/thread-1'), json({ threadId: 'thread-9', id: 'differs', uri: 'https://blob.example/r', mime: 'text/plain', hash: 'h' }))
    assert.equal(r.status, 400)
    assert.deepEqual(calls.map((c) => c.threadId), ['thread-1', 'thread-1'], 'the service gets the path ids')
    assert.deepEqual(calls.map((c) => c.artifactId), ['a1', undefined])
    calls.length = 0
    await fetch(url('/thread-1/a1'), { headers: { 'x-owner': 'other' } })
    assert.deepEqual(calls.at(-1).ownership, OTHER)
    const seen = authLog.at(-1)
    assert.equal(seen.operation, 'artifact.get', 'the reference\'s ArtifactOperation names')
    assert.equal(seen.threadId, 'thread-1')
    assert.equal(seen.artifactId, 'a1')
    assert.ok(seen.request instanceof Request)
    assert.ok(seen.signal instanceof AbortSignal)
  })

  test('400: malformed JSON, non-object bodies, wrongly typed fields, invalid ids, bad query', async () => {
    const cases = [
      ['/thread-1/a1/approve', { method: 'POST', headers: JSON_TYPE, body: '{"version":' }, 'invalid_json'],
      ['/thread-1/a1/approve', { method: 'POST', headers: JSON_TYPE, body: '[1,2]' }, 'invalid_input'],
      ['/thread-1/a1/approve', { method: 'POST', headers: JSON_TYPE, body: '"x"' }, 'invalid_input'],
      ['/thread-1/a1/approve', { method: 'POST', headers: JSON_TYPE, body: 'null' }, 'invalid_input'],
      ['/thread-1/a1/approve', { method: 'POST', headers: JSON_TYPE, body: Buffer.from([0x7b, 0xff, 0x7d]) }, 'invalid_json'],
      ['/thread-1/a1/approve', json({ version: 'two' }), 'invalid_input'],
      ['/thread-1/a1/approve', json({ version: '-2' }), 'invalid_input'],
      ['/thread-1/a1/approve', json({}), 'invalid_input'],
      ['/thread-1', json({ uri: 'https://x', mime: 'text/plain', hash: 5 }), 'invalid_input'],
      ['/thread-1/a1/delivery-link', json({ ttlSeconds: 'soon' }), 'invalid_input'],
      ['/' + 'x'.repeat(300), {}, 'invalid_id'],
      ['/thread-1/..%2F..', {}, 'invalid_id'],
      ['/thread-1/a%2Fb', {}, 'invalid_id'],
      ['/thread-1/%ff', {}, 'invalid_id'],
      ['/thread-1?limit=abc', {}, 'invalid_input'],
      ['/download', {}, 'invalid_input'],
      ['/thread-1/a1/compare', json({ from: 1, to: 1 }), 'invalid_input'],
      ['/thread-1', json({ uri: 'file:///etc/passwd', mime: 'text/plain', hash: 'h' }), 'unsafe_uri'],
    ]
    for (const [p, init, code] of cases) {
      const r = await fetch(url(p), init)
      assert.equal(r.status, 400, p)
      const body = await r.json()
      assert.deepEqual(Object.keys(body), ['error'])
      assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message'])
      assert.equal(body.error.code, code, `${p}: ${body.error.message}`)
    }
  })

  test('403: authorize false, identity refused; service never called', async () => {
    calls.length = 0
    for (const [p, init] of [
      ['/thread-1', {}],
      ['/thread-1/a1', {}],
      ['/thread-1/a1/approve', json({ version: 2 })],
    ]) {
      const r = await fetch(url(p), { ...init, headers: { ...(init.headers ?? {}), 'x-deny': '1' } })
      assert.equal(r.status, 403, p)
      assert.equal((await r.json()).error.code, 'forbidden')
    }
    for (const kind of ['expired', 'unverified', 'revoked', 'other-tenant']) {
      const r = await fetch(url('/thread-1/a1'), { headers: { 'x-identity': kind } })
      assert.equal(r.status, 403, kind)
      assert.match((await r.json()).error.message, /identity refused/)
    }
    assert.equal(calls.length, 0)
    const r = await fetch(url('/thread-1/a1'), { headers: { 'x-identity': 'none' } })
    assert.equal(r.status, 200, 'a bare ownership without identity is accepted')
    assert.equal(calls.at(-1).identity, undefined)
  })

  test('404: unknown routes and methods, unknown or foreign artifacts', async () => {
    for (const [m, p] of [
      ['GET', '/'],
      ['DELETE', '/thread-1/a1'],
      ['PUT', '/thread-1'],
      ['POST', '/thread-1/a1'],
      ['GET', '/thread-1/a1/approve'],
      ['POST', '/thread-1/a1/publish'],
      ['GET', '/thread-1/a1/x/y'],
      ['POST', '/download'],
      ['PATCH', '/thread-1/a1/approve'],
      // The URL parser resolves dot segments (also %2e%2e): this leaves the base path.
      ['GET', '/%2e%2e/a1'],
      ['GET', '/thread-1/../../x'],
    ]) {
      const r = await fetch(url(p), { method: m })
      assert.equal(r.status, 404, `${m} ${p}`)
      assert.equal((await r.json()).error.code, 'unknown_route')
    }
    let r = await fetch(srv.url + '/elsewhere')
    assert.equal(r.status, 404)
    r = await fetch(url('/thread-1/missing'))
    assert.equal(r.status, 404)
    assert.equal((await r.json()).error.code, 'not_found')
    r = await fetch(url('/thread-1/a1'), { headers: { 'x-owner': 'other' } })
    assert.equal(r.status, 404, 'cross-owner access is not_found')
  })

  test('409 conflict, 422 too many artifacts and revisions', async () => {
    kind.race(service, true)
    try {
      const racers = await Promise.all(Array.from({ length: 8 }, (_, i) => fetch(url('/thread-1/a1/approve'), json({ version: 1 + (i % 2) }))))
      const statuses = racers.map((r) => r.status)
      assert.ok(statuses.includes(409), `a lost CAS race is 409: ${statuses}`)
      assert.ok(statuses.every((s) => s === 200 || s === 409), String(statuses))
      for (const r of racers) if (r.status === 409) assert.equal((await r.json()).error.code, 'conflict')
    } finally {
      kind.race(service, false)
    }

    await fetch(url('/thread-1/a1/revise'), json({ uri: 'https://blob.example/v3', hash: 'sha256:ccc' }))
    let r = await fetch(url('/thread-1/a1/revise'), json({ uri: 'https://blob.example/v4', hash: 'sha256:ddd' }))
    assert.equal(r.status, 422)
    assert.equal((await r.json()).error.code, 'too_many_revisions')

    await fetch(url('/thread-cap'), json({ uri: 'https://x/1', mime: 'text/plain', hash: 'h1' }))
    await fetch(url('/thread-cap'), json({ uri: 'https://x/2', mime: 'text/plain', hash: 'h2' }))
    await fetch(url('/thread-cap'), json({ uri: 'https://x/3', mime: 'text/plain', hash: 'h3' }))
    r = await fetch(url('/thread-cap'), json({ uri: 'https://x/4', mime: 'text/plain', hash: 'h4' }))
    assert.equal(r.status, 422)
    assert.equal((await r.json()).error.code, 'too_many_artifacts')
  })

  test('download: tampered 401, expired 410, foreign owner 403, deleted 404, only the revision reference', async () => {
    let r = await fetch(url('/thread-1/a1/delivery-link'), json({ version: 1 }))
    const { link, token } = await r.json()
    const [payload, sig] = link.split('.')
    const flipped = sig[0] === 'A' ? 'B' + sig.slice(1) : 'A' + sig.slice(1)
    for (const bad of [`${payload}.${flipped}`, `${payload}x.${sig}`, 'garbage', `${payload}.${sig}.x`]) {
      r = await fetch(url('/download?link=' + encodeURIComponent(bad)))
      assert.equal(r.status, 401, bad)
      assert.equal((await r.json()).error.code, 'invalid_link')
    }
    // A payload naming another owner, re-signed by an attacker without the secret: 401.
    const forged = Buffer.from(JSON.stringify({ ...token, ...OTHER })).toString('base64url')
    r = await fetch(url('/download?link=' + encodeURIComponent(`${forged}.${sig}`)))
    assert.equal(r.status, 401)

    const expired = signLink({ ...token, issuedAt: new Date(Date.now() - 20_000).toISOString(), expiresAt: new Date(Date.now() - 10_000).toISOString() }, linkSecret)
    r = await fetch(url('/download?link=' + encodeURIComponent(expired)))
    assert.equal(r.status, 410)
    assert.equal((await r.json()).error.code, 'link_expired')

    authLog.length = 0
    calls.length = 0
    r = await fetch(url('/download?link=' + encodeURIComponent(link)), { headers: { 'x-owner': 'other' } })
    assert.equal(r.status, 403, 'reauthorized against the token ownership')
    assert.equal(calls.length, 0, 'the artifact is not read for a foreign owner')
    assert.equal(authLog[0].operation, 'artifact.download')
    assert.deepEqual([authLog[0].deliveryToken.tenantId, authLog[0].deliveryToken.userId], [OWNER.tenantId, OWNER.userId])
    assert.equal(authLog[0].threadId, 'thread-1')
    assert.equal(authLog[0].artifactId, 'a1')

    r = await fetch(url('/download?link=' + encodeURIComponent(link)), { headers: { 'x-deny': '1' } })
    assert.equal(r.status, 403)

    r = await fetch(url('/download?link=' + encodeURIComponent(link)))
    assert.equal(r.status, 200)
    const dl = await r.json()
    assert.deepEqual(Object.keys(dl).sort(), ['artifactId', 'revision', 'threadId'])
    assert.equal(dl.revision.version, 1)
    assert.equal(calls.at(-1).threadId, 'thread-1', 're-reads the artifact')

    // A valid link for a revision that no longer exists (the record was removed): 404.
    const gone = signLink({ ...token, artifactId: 'never-attached' }, linkSecret)
    r = await fetch(url('/download?link=' + encodeURIComponent(gone)))
    assert.equal(r.status, 404)
  })

  test('413: a declared Content-Length over the cap is refused before authorize or reading', async () => {
    authLog.length = 0
    const big = JSON.stringify({ version: 1, note: 'x'.repeat(70 * 1024) })
    const r = await fetch(url('/thread-1/a1/approve'), { method: 'POST', headers: JSON_TYPE, body: big })
    assert.equal(r.status, 413)
    assert.equal((await r.json()).error.code, 'body_too_large')
    assert.equal(authLog.length, 0)
  })
})

test('download verifies links under the service\'s own deliveryLinkTokenBytes cap, or the handler\'s', async () => {
  const owner = { tenantId: 'tenant-1', userId: 'u'.repeat(250) }
  const service = createRealService({ linkSecret, limits: { deliveryLinkTokenBytes: 512 } })
  const now = Date.now()
  const link = prism.signArtifactDeliveryLink(
    { artifactId: 'a1', threadId: 'thread-1', version: 1, ...owner, issuedAt: new Date(now).toISOString(), expiresAt: new Date(now + 60_000).toISOString() },
    linkSecret,
  )
  assert.ok(link.length > 512)
  const request = () => new Request('http://h/prism/artifacts/download?link=' + encodeURIComponent(link))
  const handler = createArtifactHandler({ service, authorize: () => owner, linkSecret })
  let r = await handler(request())
  assert.equal(r.status, 400)
  assert.equal((await r.json()).error.code, 'link_too_large')
  const roomy = createArtifactHandler({ service, authorize: () => owner, linkSecret, limits: { deliveryLinkTokenBytes: 1024 } })
  r = await roomy(request())
  assert.equal(r.status, 404, 'within the handler\'s own cap the link verifies (and names no artifact)')
})

test('a ttlSeconds over the cap is a RangeError from the service: 400', async () => {
  const service = createRealService({ linkSecret })
  const handler = createArtifactHandler({ service, authorize: () => OWNER, linkSecret })
  const post = (path, body) => handler(new Request(`http://h/prism/artifacts${path}`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(body) }))
  assert.equal((await post('/t', { id: 'a', uri: 'https://x', mime: 'm', hash: 'h', size: '12', changeNote: 'n', producerRunId: 'run:1' })).status, 201)
  await assert.rejects(service.deliveryLink({ ownership: OWNER, threadId: 't', artifactId: 'a', ttlSeconds: 999_999 }), RangeError)
  const r = await post('/t/a/delivery-link', { ttlSeconds: 999_999 })
  assert.equal(r.status, 400)
  const body = await r.json()
  assert.equal(body.error.code, 'invalid_input')
  assert.match(body.error.message, /ttlSeconds/)
  const ok = await post('/t/a/delivery-link', { ttlSeconds: '60', version: '1' })
  assert.equal(ok.status, 200, 'numbers may come as decimal strings, as the reference reads them')
  const { token } = await ok.json()
  assert.equal(Date.parse(token.expiresAt) - Date.parse(token.issuedAt), 60_000)
  const rec = await (await handler(new Request('http://h/prism/artifacts/t/a'))).json()
  assert.deepEqual([rec.revisions[0].size, rec.revisions[0].changeNote, rec.revisions[0].producerRunId], [12, 'n', 'run:1'])
})

describe('body cap is enforced while streaming', () => {
  test('an endless body stops being read just past the cap (handler called directly)', async () => {
    const service = createRealService({ linkSecret })
    const handler = createArtifactHandler({ service, authorize: () => OWNER, linkSecret, limits: { maxRequestBytes: 1000 } })
    let pulled = 0
    const chunk = new Uint8Array(100).fill(0x20)
    const body = new ReadableStream({
      pull(c) {
        pulled += chunk.length
        c.enqueue(chunk)
      },
    })
    const r = await handler(new Request('http://h/prism/artifacts/t/a/approve', { method: 'POST', headers: JSON_TYPE, body, duplex: 'half' }))
    assert.equal(r.status, 413)
    assert.ok(pulled <= 1000 + 100 + 200, `pulled ${pulled} bytes of an endless body`)
  })

  test('a slow chunked upload over the cap gets its 413 before the client finishes sending', async () => {
    const service = createRealService({ linkSecret })
    const srv = await serve(createArtifactHandler({ service, authorize: () => OWNER, linkSecret }))
    try {
      const total = 1024 * 1024
      let sent = 0
      let finished = false
      const chunk = new Uint8Array(8192).fill(0x20)
      const body = new ReadableStream({
        async pull(c) {
          if (sent >= total) {
            finished = true
            c.close()
            return
          }
          await new Promise((r) => setTimeout(r, 2))
          sent += chunk.length
          c.enqueue(chunk)
        },
      })
      const r = await fetch(srv.url + '/prism/artifacts/t/a/approve', { method: 'POST', headers: JSON_TYPE, body, duplex: 'half' })
      assert.equal(r.status, 413)
      assert.equal(r.headers.get('connection'), 'close')
      assert.equal(finished, false, 'the response arrived while the client was still sending')
      assert.ok(sent < total / 2, `client had sent ${sent} of ${total} bytes`)
      await r.body?.cancel()
    } finally {
      await srv.close()
    }
  })

  test('over a raw socket: the server answers 413 and never asks for the rest', async () => {
    const service = createRealService({ linkSecret })
    const srv = await serve(createArtifactHandler({ service, authorize: () => OWNER, linkSecret }))
    try {
      const sock = net.connect(srv.port, '127.0.0.1')
      await new Promise((r) => sock.once('connect', r))
      sock.write('POST /prism/artifacts/t/a/approve HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n')
      const piece = 'x'.repeat(16 * 1024)
      for (let i = 0; i < 5; i++) sock.write(`${piece.length.toString(16)}\r\n${piece}\r\n`)
      // The body is never terminated: a server that buffered the whole body would never answer.
      const reply = await new Promise((resolve) => {
        let buf = ''
        sock.on('data', (d) => {
          buf += d
          if (buf.includes('\r\n\r\n') && buf.includes('}}')) resolve(buf)
        })
      })
      assert.match(reply, /^HTTP\/1\.1 413/)
      assert.match(reply, /body_too_large/)
      sock.destroy()
    } finally {
      await srv.close()
    }
  })
})

describe('no stack, no secret, every response redacted', () => {
  test('unexpected service errors are a generic 500 without message or stack', async () => {
    const service = { ...noop, get: async () => { throw new Error(`db password ${linkSecret} at /srv/app.js:10`) } }
    const srv = await serve(createArtifactHandler({ service, authorize: () => OWNER, linkSecret }))
    try {
      const r = await fetch(srv.url + '/prism/artifacts/t/a')
      assert.equal(r.status, 500)
      const text = await r.text()
      assert.deepEqual(JSON.parse(text), { error: { code: 'internal', message: 'internal error' } })
      assert.doesNotMatch(text, /password|app\.js|\bat\b/)
    } finally {
      await srv.close()
    }
  })

  test('results and error messages pass the redactor; the link secret never leaves', async () => {
    const redactor = { redact: (v) => JSON.parse(JSON.stringify(v).replaceAll('hunter2', '[REDACTED]')) }
    const service = {
      ...noop,
      get: async () => ({ id: 'a', note: 'password hunter2', leaked: linkSecret }),
      list: async () => { throw new ArtifactError('no thread hunter2', 'not_found') },
    }
    const srv = await serve(createArtifactHandler({ service, authorize: () => OWNER, linkSecret, redactor }))
    try {
      let text = await (await fetch(srv.url + '/prism/artifacts/t/a')).text()
      assert.doesNotMatch(text, /hunter2/)
      assert.ok(!text.includes(linkSecret))
      assert.match(text, /\[REDACTED\]/)
      const r = await fetch(srv.url + '/prism/artifacts/t')
      assert.equal(r.status, 404)
      text = await r.text()
      assert.doesNotMatch(text, /hunter2/)
    } finally {
      await srv.close()
    }
  })

  test('a throwing authorize or redactor is a 500 with the constant body', async () => {
    const srv = await serve(
      createArtifactHandler({ service: noop, authorize: () => { throw new Error('secret token xyz') }, linkSecret }),
    )
    try {
      const r = await fetch(srv.url + '/prism/artifacts/t')
      assert.equal(r.status, 500)
      assert.doesNotMatch(await r.text(), /xyz/)
    } finally {
      await srv.close()
    }
    const h = createArtifactHandler({ service: { ...noop, get: async () => ({ a: 1 }) }, authorize: () => OWNER, linkSecret, redactor: { redact() { throw new Error('boom') } } })
    const r = await h(new Request('http://h/prism/artifacts/t/a'))
    assert.equal(r.status, 500)
    assert.deepEqual(await r.json(), { error: { code: 'internal', message: 'internal error' } })
  })

  test('authorize returning a malformed ownership fails closed with 403', async () => {
    for (const bad of [true, 'tenant', {}, { tenantId: '' }, { tenantId: 5 }, { ownership: null }, { ownership: { userId: [] } }]) {
      const h = createArtifactHandler({ service: noop, authorize: () => bad, linkSecret })
      const r = await h(new Request('http://h/prism/artifacts/t'))
      assert.equal(r.status, 403, JSON.stringify(bad))
    }
  })
})

describe('slow and aborted clients leave no work running', () => {
  test('a client that disconnects during authorize: the signal aborts and the service is never called', async () => {
    const calls = []
    let authSignal
    let release
    const authorize = ({ signal }) => {
      authSignal = signal
      return new Promise((resolve) => {
        release = () => resolve(OWNER)
      })
    }
    const service = createRealService({ linkSecret, calls })
    const srv = await serve(createArtifactHandler({ service, authorize, linkSecret }))
    try {
      const ac = new AbortController()
      const pending = fetch(srv.url + '/prism/artifacts/t/a', { signal: ac.signal }).catch((e) => e)
      while (!authSignal) await new Promise((r) => setTimeout(r, 5))
      const aborted = new Promise((r) => authSignal.addEventListener('abort', r, { once: true }))
      ac.abort()
      await aborted
      assert.equal(authSignal.aborted, true)
      release()
      assert.equal((await pending).name, 'AbortError')
      await new Promise((r) => setTimeout(r, 20))
      assert.equal(calls.length, 0, 'nothing ran after the client left')
    } finally {
      await srv.close()
    }
  })

  test('a client that disconnects during a slow service call: the service sees its signal abort', async () => {
    let serviceSignal
    const started = Promise.withResolvers ? Promise.withResolvers() : null
    let onStart
    const startedP = started ? started.promise : new Promise((r) => (onStart = r))
    const service = {
      ...noop,
      approve: ({ signal }) =>
        new Promise((resolve, reject) => {
          serviceSignal = signal
          ;(started ? started.resolve : onStart)()
          signal.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })), { once: true })
        }),
    }
    const srv = await serve(createArtifactHandler({ service, authorize: () => OWNER, linkSecret }))
    try {
      const ac = new AbortController()
      const pending = fetch(srv.url + '/prism/artifacts/t/a/approve', { ...json({ version: 1 }), signal: ac.signal }).catch((e) => e)
      await startedP
      ac.abort()
      await pending
      await new Promise((resolve) => (serviceSignal.aborted ? resolve() : serviceSignal.addEventListener('abort', resolve, { once: true })))
      assert.equal(serviceSignal.aborted, true)
    } finally {
      await srv.close()
    }
  })

  test('a client that stalls mid-body and goes away: the body read ends and the service is never called', async () => {
    const calls = []
    let authSignal
    const service = createRealService({ linkSecret, calls })
    const srv = await serve(createArtifactHandler({ service, authorize: ({ signal }) => ((authSignal = signal), OWNER), linkSecret }))
    try {
      const sock = net.connect(srv.port, '127.0.0.1')
      await new Promise((r) => sock.once('connect', r))
      sock.write('POST /prism/artifacts/t/a/approve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"vers')
      while (!authSignal) await new Promise((r) => setTimeout(r, 5))
      await new Promise((r) => setTimeout(r, 30))
      sock.destroy()
      await new Promise((resolve) => (authSignal.aborted ? resolve() : authSignal.addEventListener('abort', resolve, { once: true })))
      await new Promise((r) => setTimeout(r, 20))
      assert.equal(calls.length, 0)
    } finally {
      await srv.close()
    }
  })
})

describe('a slow client is cut off', () => {
  test('a client that stalls mid-body hits the server requestTimeout: the signal aborts, the service never runs', async () => {
    const calls = []
    let authSignal
    const service = createRealService({ linkSecret, calls })
    const srv = await serve(createArtifactHandler({ service, authorize: ({ signal }) => ((authSignal = signal), OWNER), linkSecret }), { requestTimeout: 300 })
    try {
      const sock = net.connect(srv.port, '127.0.0.1')
      await new Promise((r) => sock.once('connect', r))
      let reply = ''
      sock.on('data', (d) => (reply += d))
      const closed = new Promise((r) => sock.once('close', r))
      sock.write('POST /prism/artifacts/t/a/approve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ver')
      // Never send the rest: the server, not the client, has to end this.
      await closed
      assert.ok(authSignal, 'authorize ran')
      assert.equal(authSignal.aborted, true)
      assert.ok(reply === '' || /^HTTP\/1\.1 408/.test(reply), reply)
      assert.equal(calls.length, 0)
    } finally {
      await srv.close()
    }
  })
})

describe('toNodeListener with any fetch handler', () => {
  test('status, headers (set-cookie), streamed body, HEAD, custom base path', async () => {
    const handler = async (req) => {
      if (req.method === 'HEAD') return new Response(null, { status: 204, headers: { 'x-m': 'head' } })
      const h = new Headers({ 'content-type': 'text/plain' })
      h.append('set-cookie', 'a=1')
      h.append('set-cookie', 'b=2')
      const parts = ['one,', 'two,', 'three']
      const body = new ReadableStream({ pull: (c) => (parts.length ? c.enqueue(new TextEncoder().encode(parts.shift())) : c.close()) })
      return new Response(body, { status: 202, headers: h })
    }
    const srv = await serve(handler)
    try {
      const r = await fetch(srv.url + '/anything?x=1')
      assert.equal(r.status, 202)
      assert.deepEqual(r.headers.getSetCookie(), ['a=1', 'b=2'])
      assert.equal(await r.text(), 'one,two,three')
      const h = await fetch(srv.url + '/x', { method: 'HEAD' })
      assert.equal(h.status, 204)
      assert.equal(h.headers.get('x-m'), 'head')
    } finally {
      await srv.close()
    }
    const service = createRealService({ linkSecret })
    const srv2 = await serve(createArtifactHandler({ service, authorize: () => OWNER, linkSecret, basePath: '/api/v1/art/' }))
    try {
      assert.equal((await fetch(srv2.url + '/api/v1/art/t', json({ uri: 'https://x', mime: 'a/b', hash: 'h' }))).status, 201)
      assert.equal((await fetch(srv2.url + '/prism/artifacts/t')).status, 404)
    } finally {
      await srv2.close()
    }
  })

  test('origin-form and absolute-form targets reach the handler; asterisk-form is a 400', async () => {
    const seen = []
    const srv = await serve(async (req) => (seen.push(new URL(req.url).pathname + new URL(req.url).search), Response.json({ ok: true })))
    try {
      const raw = (target) =>
        new Promise((resolve) => {
          const sock = net.connect(srv.port, '127.0.0.1', () => sock.end(`OPTIONS ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`))
          let buf = ''
          sock.on('data', (d) => (buf += d))
          sock.on('close', () => resolve(buf))
        })
      assert.match(await raw('/a/b?c=1'), /^HTTP\/1\.1 200/)
      assert.match(await raw('http://elsewhere.example/x/y?z=2'), /^HTTP\/1\.1 200/)
      assert.match(await raw('*'), /^HTTP\/1\.1 400/)
      assert.deepEqual(seen, ['/a/b?c=1', '/x/y?z=2'])
    } finally {
      await srv.close()
    }
  })

  test('a handler that throws or returns a non-Response is a 500, and the server keeps serving', async () => {
    let n = 0
    const srv = await serve(async () => {
      n++
      if (n === 1) throw new Error('boom with secret')
      if (n === 2) return 'not a response'
      return Response.json({ ok: true })
    })
    try {
      let r = await fetch(srv.url + '/')
      assert.equal(r.status, 500)
      assert.doesNotMatch(await r.text(), /secret/)
      r = await fetch(srv.url + '/')
      assert.equal(r.status, 500)
      r = await fetch(srv.url + '/')
      assert.deepEqual(await r.json(), { ok: true })
    } finally {
      await srv.close()
    }
  })
})

test('over real HTTP, a lone surrogate in a body reads as the service reads it: U+FFFD in content, 400 in the reviewer', async () => {
  const service = createRealService({ linkSecret })
  const s = await serve(createArtifactHandler({ service, authorize: () => OWNER, linkSecret }))
  try {
    const cut = 'cut 😀'.slice(0, 5)
    const post = (path, body) => fetch(`${s.url}/prism/artifacts${path}`, { method: 'POST', headers: JSON_TYPE, body: JSON.stringify(body) })
    const created = await post('/t', { id: 'a', uri: 'https://x', mime: 'm', hash: 'h', title: cut })
    assert.equal(created.status, 201)
    assert.equal((await created.json()).title, 'cut \ufffd')
    const refused = await post('/t/a/approve', { version: 1, reviewer: `user:${cut}` })
    assert.equal(refused.status, 400)
    const { error } = await refused.json()
    assert.equal(error.code, 'invalid_input')
    assert.match(error.message, /lone UTF-16 surrogate/)
    const approved = await post('/t/a/approve', { version: 1, reviewer: 'user:r', note: cut })
    assert.equal(approved.status, 200)
    assert.equal((await approved.json()).approvals[0].note, 'cut \ufffd')
  } finally {
    await s.close()
  }
})
