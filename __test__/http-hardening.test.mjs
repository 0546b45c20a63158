// The HTTP handler against a hostile caller (issue 17 points 5, 6, 8; issue 16 point 1):
// only JSON bodies (415 before authorize), one set of identity rules shared with the
// service, hostile options typed, store backend failures 503. Real HTTP over loopback,
// the real artifact service, a real PostgreSQL port that refuses connections.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import * as prism from '../index.mjs'
import { serve, createRealService, createArtifactHandler, OWNER, IDENTITY } from './http-support.mjs'

const linkSecret = 'link-secret-hardening-0123456789'
const DOC = { id: 'a1', uri: 'https://blob.example/doc', mime: 'text/markdown', hash: 'sha256:aaa' }

/** A handler over the real service on loopback; `authorize` returns `auth()`, logged. */
async function setup(auth = () => ({ ownership: OWNER, identity: IDENTITY })) {
  const calls = []
  const authLog = []
  const service = createRealService({ linkSecret, calls })
  const authorize = (args) => (authLog.push(args.operation), auth(args))
  const srv = await serve(createArtifactHandler({ service, authorize, linkSecret }))
  const url = (p) => `${srv.url}/prism/artifacts${p}`
  return { calls, authLog, service, srv, url }
}

/** A POST over a raw socket, so no client adds or normalises a Content-Type. */
function rawPost(port, path, body, contentType) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1')
    let reply = ''
    sock.on('data', (d) => (reply += d))
    sock.on('error', reject)
    sock.on('end', () => resolve(reply))
    const type = contentType === undefined ? '' : `Content-Type: ${contentType}\r\n`
    sock.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${type}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  })
}

describe('bodies are JSON only: anything else is 415 before authorize (issue 17 point 6)', () => {
  test('form, text and missing Content-Types never reach authorize or the service', async () => {
    const { calls, authLog, service, srv, url } = await setup()
    try {
      await service.attach({ ownership: OWNER, threadId: 't', ...DOC })
      calls.length = 0
      const forms = [
        ['text/plain', JSON.stringify(DOC)],
        ['text/plain;charset=UTF-8', JSON.stringify(DOC)],
        ['application/x-www-form-urlencoded', 'uri=https%3A%2F%2Fx&mime=m&hash=h'],
        ['multipart/form-data; boundary=b', '--b\r\nContent-Disposition: form-data; name="uri"\r\n\r\nx\r\n--b--'],
        ['application/jsonp', JSON.stringify(DOC)],
        ['application/json, text/plain', JSON.stringify(DOC)],
        [undefined, JSON.stringify(DOC)],
      ]
      for (const [type, body] of forms) {
        for (const [path, payload] of [
          ['/prism/artifacts/t', body],
          ['/prism/artifacts/t/a1/approve', type?.startsWith('text/') ? '{"version":1}' : body],
          ['/prism/artifacts/t/a1/delivery-link', ''],
        ]) {
          const reply = await rawPost(srv.port, path, payload, type)
          assert.match(reply, /^HTTP\/1\.1 415 /, `${type} ${path}`)
          assert.match(reply, /"code":"unsupported_media_type"/)
        }
      }
      // A string body through fetch goes as text/plain, as a cross-site form post would.
      const r = await fetch(url('/t/a1/approve'), { method: 'POST', body: '{"version":1}' })
      assert.equal(r.status, 415)
      assert.deepEqual(authLog, [], 'authorize never ran')
      assert.equal(calls.length, 0, 'the service never ran')
      const rec = await service.get({ ownership: OWNER, threadId: 't', artifactId: 'a1' })
      assert.deepEqual(rec.approvals, [])
    } finally {
      await srv.close()
    }
  })

  test('application/json in any case, with parameters, is read; GET routes need no type', async () => {
    const { srv, url } = await setup()
    try {
      const post = (p, type, body) => fetch(url(p), { method: 'POST', headers: { 'content-type': type }, body: JSON.stringify(body) })
      assert.equal((await post('/t', 'application/json; charset=utf-8', DOC)).status, 201)
      assert.equal((await post('/t/a1/approve', 'Application/JSON', { version: 1 })).status, 200)
      assert.equal((await post('/t/a1/delivery-link', 'application/json ;charset=UTF-8', {})).status, 200)
      assert.equal((await fetch(url('/t/a1'))).status, 200)
      assert.equal((await fetch(url('/t/a1/last-validated'))).status, 200)
      // An unknown route stays a 404 whatever its type.
      assert.equal((await post('/t/a1/publish', 'text/plain', {})).status, 404)
    } finally {
      await srv.close()
    }
  })
})

describe('identity and ownership from authorize: the service rules, in one place (issue 16 point 1)', () => {
  const withIdentity = (extra) => () => ({ ownership: OWNER, identity: { ...IDENTITY, ...extra } })

  test('an expiresAt that is no timestamp is 403 whether it reads as future or past; the service never runs', async () => {
    for (const expiresAt of ['Jan 1 2999', 'Jan 1 1999', 'tomorrow', '2999-13-01T00:00:00Z']) {
      const { calls, srv, url } = await setup(withIdentity({ expiresAt }))
      try {
        const r = await fetch(url('/t'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(DOC) })
        assert.equal(r.status, 403, expiresAt)
        const { error } = await r.json()
        assert.equal(error.code, 'forbidden')
        assert.match(error.message, /^identity refused: .*expiresAt/, expiresAt)
        assert.equal(calls.length, 0)
      } finally {
        await srv.close()
      }
    }
  })

  test('valid expiry spellings pass and the service receives the identity as checked', async () => {
    const future = Date.now() + 3_600_000
    for (const expiresAt of ['2999-01-01T00:00:00Z', '2999-01-01T00:00:00.000+02:00', future, new Date(future)]) {
      const { calls, srv, url } = await setup(withIdentity({ expiresAt }))
      try {
        const r = await fetch(url('/t'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(DOC) })
        assert.equal(r.status, 201, String(expiresAt))
        const seen = calls.at(-1).identity
        assert.deepEqual(seen, JSON.parse(JSON.stringify({ ...IDENTITY, expiresAt })))
      } finally {
        await srv.close()
      }
    }
  })

  test('expired, revoked, unverified, conflicting and malformed identities are 403 with the same rules as the service', async () => {
    const past = new Date(Date.now() - 1000).toISOString()
    const cases = [
      [{ expiresAt: past }, /expired/],
      [{ revokedAt: past }, /revoked/],
      [{ verified: false }, /not verified/],
      [{ verified: 'true' }, /not verified/],
      [{ tenantId: 'tenant-2' }, /conflicts/],
      [{ principal: { kind: 'user' } }, /principal/],
      [{ issuedAt: undefined }, /issuedAt/],
      [{ scopes: 'all' }, /scopes/],
    ]
    for (const [extra, why] of cases) {
      const { calls, srv, url } = await setup(withIdentity(extra))
      try {
        const r = await fetch(url('/t/a1'))
        assert.equal(r.status, 403, JSON.stringify(extra))
        assert.match((await r.json()).error.message, why)
        assert.equal(calls.length, 0)
        // The service, given the same identity directly, refuses it too.
        const identity = { ...IDENTITY, ...extra }
        await assert.rejects(
          prism.createArtifactService(prism.createMemoryCheckpointStore(), { redactor: prism.createSecretRedactor([]), linkSecret }).get({ ownership: OWNER, identity, threadId: 't', artifactId: 'a1' }),
          (e) => e instanceof prism.ArtifactError && ['ownership', 'invalid_input'].includes(e.reason),
        )
      } finally {
        await srv.close()
      }
    }
  })

  test('authorize results that cannot be read are a 500, never a crash; bad ownerships 403', async () => {
    const hostile = [
      [() => ({ ownership: OWNER, identity: { get principal() { throw new Error('trap') } } }), 500],
      [() => ({ ownership: { tenantId: 1n } }), 500],
      [() => new Proxy({}, { ownKeys() { throw new Error('trap') } }), 500],
      [() => ({ ownership: { tenantId: 'x'.repeat(300) } }), 403],
      [() => ({ ownership: { tenantId: 't\u0000' } }), 403],
      [() => ({ ownership: [] }), 403],
      [() => 'tenant-1', 403],
      [() => true, 403],
      [() => undefined, 403],
    ]
    for (const [auth, status] of hostile) {
      const { calls, srv, url } = await setup(auth)
      try {
        const r = await fetch(url('/t/a1'))
        assert.equal(r.status, status, String(auth))
        assert.equal(calls.length, 0)
      } finally {
        await srv.close()
      }
    }
  })
})

describe('hostile options are typed errors with the caller error as cause (issue 17 point 5)', () => {
  const noop = Object.fromEntries(['attach', 'list', 'get', 'revise', 'compare', 'approve', 'reject', 'lastValidated', 'deliveryLink'].map((m) => [m, () => {}]))
  const base = { service: noop, authorize: () => false, linkSecret }
  const boom = new Error('caller boom')
  const throws = () => {
    throw boom
  }
  const revoked = Proxy.revocable({}, {})
  revoked.revoke()
  class BadBytes extends Uint8Array {
    get byteLength() {
      throw boom
    }
  }
  const cases = {
    'a Proxy whose get trap throws': new Proxy(base, { get: throws }),
    'a Proxy whose ownKeys trap throws': new Proxy(base, { ownKeys: throws }),
    'a revoked Proxy': revoked.proxy,
    'a throwing getter': Object.defineProperty({ ...base }, 'authorize', { get: throws, enumerable: true }),
    'a throwing service method getter': { ...base, service: Object.defineProperty({ ...noop }, 'approve', { get: throws }) },
    'a Proxy service': { ...base, service: new Proxy(noop, { get: throws }) },
    'a throwing service.limits': { ...base, service: Object.defineProperty({ ...noop }, 'limits', { get: throws }) },
    'a Proxy linkSecret': { ...base, linkSecret: new Proxy(new Uint8Array(32), { getPrototypeOf: throws }) },
    'a linkSecret whose byteLength throws': { ...base, linkSecret: new BadBytes(32) },
    'a Proxy redactor': { ...base, redactor: new Proxy({}, { get: throws }) },
    'a Proxy limits': { ...base, limits: new Proxy({}, { ownKeys: throws }) },
    'a throwing limits getter': { ...base, limits: Object.defineProperty({}, 'maxRequestBytes', { get: throws, enumerable: true }) },
  }
  for (const [name, options] of Object.entries(cases)) {
    test(name, () => {
      assert.throws(
        () => createArtifactHandler(options),
        (e) => {
          assert.ok(e instanceof TypeError, `${name}: ${e}`)
          assert.equal(e.code, 'ERR_INVALID_ARG_TYPE')
          assert.notEqual(e, boom)
          if (name !== 'a revoked Proxy') assert.equal(e.cause, boom)
          return true
        },
      )
    })
  }
})

describe('store backend failures are ERR_PRISM_STORE_UNAVAILABLE and 503 (issue 17 point 8)', () => {
  test('a PostgreSQL that refuses connections: the service rejects retryably, the handler answers 503', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const db = prism.createPostgresPersistence({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectTimeoutMs: 2000 })
    const service = prism.createArtifactService(db.checkpoints, { redactor: prism.createSecretRedactor([]), linkSecret })
    await assert.rejects(service.get({ ownership: OWNER, threadId: 't', artifactId: 'a1' }), (e) => {
      assert.equal(e.code, 'ERR_PRISM_STORE_UNAVAILABLE', e.message)
      assert.ok(e instanceof Error)
      assert.doesNotMatch(e.message, /postgres:\/\//)
      return true
    })
    const srv = await serve(createArtifactHandler({ service, authorize: () => OWNER, linkSecret }))
    try {
      const r = await fetch(`${srv.url}/prism/artifacts/t/a1`)
      assert.equal(r.status, 503)
      assert.deepEqual(await r.json(), { error: { code: 'store_unavailable', message: 'the store is unavailable; retry' } })
      const p = await fetch(`${srv.url}/prism/artifacts/t`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(DOC) })
      assert.equal(p.status, 503)
    } finally {
      await srv.close()
      await db.close()
    }
  })
})
