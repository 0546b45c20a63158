// The artifact service and its HTTP handler with a body store wired: the native S3 store
// over s3s-fs (see s3-support.mjs), and a host's own JavaScript body store.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import {
  ArtifactBodyStoreError,
  ArtifactError,
  createArtifactHandler,
  createArtifactService,
  createMemoryCheckpointStore,
  createS3ArtifactBodyStore,
  createSecretRedactor,
} from '../index.mjs'
import { serve } from './http-support.mjs'
import { ACCESS_KEY, BUCKET, SECRET_KEY, s3sFsMissing, startS3sFs } from './s3-support.mjs'

const missing = s3sFsMissing()
if (missing) console.log(`# S3 body store service suite skipped: ${missing}`)

const LINK_SECRET = 'link-secret-for-bodies-0123456789abcdef'
const ownership = { tenantId: 'tenant-bodies', userId: 'user-1' }
const sha = (b) => createHash('sha256').update(b).digest('hex')
const text = 'the artifact body, stored in S3'
const body = Buffer.from(text)

function makeService(bodies, extra = {}) {
  const events = []
  const service = createArtifactService(createMemoryCheckpointStore(), {
    redactor: createSecretRedactor([]),
    linkSecret: LINK_SECRET,
    onDecision: (e) => events.push(e),
    ...(bodies ? { bodies } : {}),
    ...extra,
  })
  return { service, events }
}

async function attach(service, overrides = {}) {
  return service.attach({ ownership, threadId: 'thread-b', uri: 'https://example.com/out.txt', mime: 'text/plain', hash: `sha256:${sha(body)}`, size: body.length, ...overrides })
}

function refOf(record, version = 1) {
  const rev = record.revisions.find((r) => r.version === version)
  return { ...ownership, artifactId: record.id, threadId: record.threadId, version, mime: rev.mime, size: rev.size, hash: rev.hash.replace(/^sha256:/, '') }
}

describe('service and HTTP download with the native S3 body store', { skip: missing ? 's3s-fs missing' : false }, () => {
  let s3
  let bodies
  before(async () => {
    s3 = await startS3sFs()
    bodies = createS3ArtifactBodyStore({ endpoint: s3.endpoint, bucket: BUCKET, credentials: () => ({ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY }) })
  })
  after(async () => {
    await s3?.stop()
  })

  it('deliveryLink returns a presigned url for the revision that never outlives the link', async () => {
    const { service, events } = makeService(bodies)
    const record = await attach(service)
    await bodies.put(refOf(record), body)
    const out = await service.deliveryLink({ ownership, threadId: 'thread-b', artifactId: record.id, ttlSeconds: 60 })
    assert.equal(typeof out.link, 'string')
    const url = new URL(out.url)
    const expiresAt = Date.parse(url.searchParams.get('X-Amz-Date').replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z')) + Number(url.searchParams.get('X-Amz-Expires')) * 1000
    assert.ok(expiresAt <= Date.parse(out.token.expiresAt), 'the URL expires no later than the link')
    assert.equal(await (await fetch(out.url)).text(), text)
    const noUrl = await makeService(undefined).service
    const r2 = await attach(noUrl)
    assert.equal((await noUrl.deliveryLink({ ownership, threadId: 'thread-b', artifactId: r2.id })).url, undefined)
    // Bucket and key never enter records or audit events.
    const stored = JSON.stringify([record, events, await service.get({ ownership, threadId: 'thread-b', artifactId: record.id })])
    assert.ok(!stored.includes(BUCKET) && !stored.includes('prism-artifacts'))
  })

  it('fails closed on a revision without a recorded size', async () => {
    const { service } = makeService(bodies)
    const record = await attach(service, { size: undefined })
    await assert.rejects(service.deliveryLink({ ownership, threadId: 'thread-b', artifactId: record.id }), (e) => e instanceof ArtifactError && e.reason === 'invalid_input')
  })

  it('the HTTP download route answers the revision and a fresh presigned url', async () => {
    const { service } = makeService(bodies)
    const record = await attach(service)
    await bodies.put(refOf(record), body)
    const handler = createArtifactHandler({ service, authorize: () => ({ ownership }), linkSecret: LINK_SECRET })
    const server = await serve(handler)
    try {
      const { link } = await service.deliveryLink({ ownership, threadId: 'thread-b', artifactId: record.id, ttlSeconds: 120 })
      const res = await fetch(`${server.url}/prism/artifacts/download?link=${encodeURIComponent(link)}`)
      assert.equal(res.status, 200)
      const json = await res.json()
      assert.equal(json.revision.version, 1)
      assert.equal(json.artifactId, record.id)
      assert.ok(Number(new URL(json.url).searchParams.get('X-Amz-Expires')) <= 120)
      assert.equal(await (await fetch(json.url)).text(), text)
      const plain = createArtifactHandler({ service: makeService(undefined).service, authorize: () => ({ ownership }), linkSecret: LINK_SECRET })
      const res2 = await plain(new Request(`http://x/prism/artifacts/download?link=${encodeURIComponent(link)}`))
      assert.equal(res2.status, 404, 'another service does not know the artifact')
    } finally {
      await server.close()
    }
  })
})

describe('a host JavaScript body store backing the service', () => {
  function hostStore() {
    const objects = new Map()
    const calls = []
    const key = (r) => `${r.tenantId}/${r.threadId}/${r.artifactId}/${r.version}`
    return {
      calls,
      objects,
      async put(ref, data) {
        calls.push(['put', ref])
        objects.set(key(ref), Buffer.from(data))
      },
      async get(ref) {
        const b = objects.get(key(ref))
        if (!b) throw new ArtifactBodyStoreError('missing', 'STORE')
        return new ReadableStream({ start: (c) => (c.enqueue(b), c.close()) })
      },
      async delete(ref) {
        objects.delete(key(ref))
      },
      async presign(ref, options) {
        calls.push(['presign', ref, options])
        return `https://bodies.example/${ref.artifactId}/${ref.version}?ttl=${options.ttlMs}`
      },
    }
  }

  it('is called with the revision ref (bare hash), the link TTL and expiry', async () => {
    const store = hostStore()
    const { service } = makeService(store)
    const record = await attach(service)
    const out = await service.deliveryLink({ ownership, threadId: 'thread-b', artifactId: record.id, ttlSeconds: 60 })
    assert.equal(out.url, `https://bodies.example/${record.id}/1?ttl=60000`)
    const [, ref, options] = store.calls.find((c) => c[0] === 'presign')
    assert.deepEqual(ref, refOf(record))
    assert.equal(options.ttlMs, 60000)
    assert.equal(options.notAfter, Date.parse(out.token.expiresAt))
  })

  it('its errors fail the delivery closed', async () => {
    const store = hostStore()
    store.presign = async () => {
      throw new ArtifactBodyStoreError('object store unreachable', 'STORE')
    }
    const { service } = makeService(store)
    const record = await attach(service)
    await assert.rejects(service.deliveryLink({ ownership, threadId: 'thread-b', artifactId: record.id }), (e) => e instanceof ArtifactBodyStoreError && e.reason === 'STORE')
  })

  it('the HTTP download route adds its fresh url; a store missing a method is refused', async () => {
    const store = hostStore()
    const { service } = makeService(store)
    const record = await attach(service)
    const handler = createArtifactHandler({ service, authorize: () => ({ ownership }), linkSecret: LINK_SECRET })
    const { link } = await service.deliveryLink({ ownership, threadId: 'thread-b', artifactId: record.id, ttlSeconds: 30 })
    const res = await handler(new Request(`http://x/prism/artifacts/download?link=${encodeURIComponent(link)}`))
    assert.equal(res.status, 200)
    const json = await res.json()
    assert.match(json.url, new RegExp(`^https://bodies.example/${record.id}/1\\?ttl=\\d+$`))
    assert.ok(Number(/ttl=(\d+)/.exec(json.url)[1]) <= 30000)
    assert.throws(() => makeService({ ...store, presign: undefined }), TypeError)
  })
})
