// The native S3 ArtifactBodyStore against s3s-fs, a real S3-compatible server that checks
// every SigV4 signature (see s3-support.mjs). Locally the suite skips with one line when
// s3s-fs is missing; in CI that is a failure (scripts/test-node.mjs).
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  ArtifactBodyStoreError,
  S3ArtifactBodyError,
  createS3ArtifactBodyStore,
  resolveArtifactBodyLimits,
  s3ObjectKey,
} from '../index.mjs'
import { ACCESS_KEY, BUCKET, SECRET_KEY, readAll, s3sFsMissing, startCountingProxy, startS3sFs } from './s3-support.mjs'

const missing = s3sFsMissing()
if (missing) console.log(`# S3 body store suite skipped: ${missing}`)

const sha = (b) => createHash('sha256').update(b).digest('hex')
const TENANT = 'tenant-secret-7'
let n = 0
function refFor(body, overrides = {}) {
  n += 1
  return { tenantId: TENANT, accountId: 'acct-1', threadId: 'thread-1', artifactId: `art-${n}`, version: 1, mime: 'text/plain', size: body.length, hash: sha(body), ...overrides }
}

/** Every error a test saw, searched at the end for what must never leak. */
const seen = []
async function rejects(promise, code) {
  const err = await promise.then(
    () => assert.fail(`expected ${code}`),
    (e) => e,
  )
  seen.push(err)
  assert.equal(err.code, code, `${err.code}: ${err.message}`)
  return err
}

function streamOf(chunks, { gate } = {}) {
  let i = 0
  return new ReadableStream({
    async pull(c) {
      if (gate && i === 1) await gate
      if (i < chunks.length) c.enqueue(chunks[i++])
      else c.close()
    },
  })
}

describe('S3 body store over s3s-fs', { skip: missing ? 's3s-fs missing' : false }, () => {
  let s3
  let store
  const creds = () => ({ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY })
  const make = (options = {}) => createS3ArtifactBodyStore({ endpoint: s3.endpoint, bucket: BUCKET, credentials: creds, ...options })
  const onDisk = (ref) => join(s3.bucketDir, s3ObjectKey(ref))

  before(async () => {
    s3 = await startS3sFs()
    store = make()
  })
  after(async () => {
    await s3?.stop()
  })

  it('round-trips 1 byte, 1 MiB, 1 MiB + 1 and 64 MiB (whole and streamed)', async () => {
    for (const size of [1, 1024 * 1024, 1024 * 1024 + 1, 64 * 1024 * 1024]) {
      const body = Buffer.alloc(size)
      for (let i = 0; i < size; i += 4096) body[i] = (i / 4096) & 255
      const whole = refFor(body, { mime: 'application/octet-stream' })
      await store.put(whole, new Uint8Array(body.buffer, body.byteOffset, body.length))
      assert.ok(sha(await readAll(await store.get(whole))) === whole.hash)
      const streamed = refFor(body, { mime: 'application/octet-stream' })
      const chunks = []
      for (let i = 0; i < size; i += 256 * 1024) chunks.push(body.subarray(i, i + 256 * 1024))
      await store.put(streamed, streamOf(chunks))
      const back = await readAll(await store.get(streamed))
      assert.equal(back.length, size)
      assert.equal(sha(back), streamed.hash)
    }
  })

  it('reads a download in 1 MiB chunks and can stop early', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024 + 5, 9)
    const ref = refFor(body, { mime: 'application/octet-stream' })
    await store.put(ref, body)
    const sizes = []
    for await (const c of await store.get(ref)) sizes.push(c.byteLength)
    assert.deepEqual(sizes, [1024 * 1024, 1024 * 1024, 1024 * 1024, 5])
    const reader = (await store.get(ref)).getReader()
    assert.equal((await reader.read()).value.byteLength, 1024 * 1024)
    await reader.cancel()
    assert.equal((await reader.closed), undefined)
  })

  it('reads a Uint8Array body in place: changed while the put is pending, it is refused, never stored', async () => {
    // Not copied into the native side, so the change reaches the transfer: the local check
    // or the server's check of the signed x-amz-content-sha256 refuses it.
    const body = Buffer.alloc(16 * 1024 * 1024, 7)
    const ref = refFor(body, { mime: 'application/octet-stream' })
    const put = store.put(ref, new Uint8Array(body.buffer, body.byteOffset, body.length))
    body.fill(8)
    const err = await put.then(() => assert.fail('a body changed mid-put was stored'), (e) => e)
    seen.push(err)
    assert.ok(['ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH', 'ERR_PRISM_S3_UPLOAD'].includes(err.code), `${err.code}: ${err.message}`)
    assert.equal(existsSync(onDisk(ref)), false)
  })

  it('presigns a URL plain fetch can use, which stops working after expiry and when tampered', async () => {
    const body = Buffer.from('presigned body')
    const ref = refFor(body)
    await store.put(ref, body)
    // The working checks use a long-lived URL so a loaded machine cannot expire it
    // mid-test; expiry is checked on a 1-second URL afterwards.
    const url = await store.presign(ref, { ttlMs: 60_000 })
    assert.equal(new URL(url).searchParams.get('X-Amz-Expires'), '60')
    const ok = await fetch(url)
    assert.equal(ok.status, 200)
    assert.equal(await ok.text(), 'presigned body')
    const tampered = new URL(url)
    const sig = tampered.searchParams.get('X-Amz-Signature')
    tampered.searchParams.set('X-Amz-Signature', (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1))
    assert.equal((await fetch(tampered)).status, 403)
    const longer = new URL(url)
    longer.searchParams.set('X-Amz-Expires', '86400')
    assert.equal((await fetch(longer)).status, 403)
    const short = await store.presign(ref, { ttlMs: 1000 })
    assert.equal(new URL(short).searchParams.get('X-Amz-Expires'), '1')
    await new Promise((resolve) => setTimeout(resolve, 2500))
    assert.equal((await fetch(short)).status, 403, 'expired URL refused')
    await rejects(store.presign(ref, { ttlMs: 0 }), 'ERR_PRISM_ARTIFACT_BODY_STORE')
    await rejects(store.presign(ref, { ttlMs: 10 * 60 * 1000 + 1 }), 'ERR_PRISM_ARTIFACT_BODY_STORE')
  })

  it('refuses a put whose size or hash does not match, whole or streamed, storing nothing', async () => {
    const body = Buffer.from('hello world')
    const short = refFor(body, { size: body.length - 1 })
    await rejects(store.put(short, body), 'ERR_PRISM_ARTIFACT_BODY_SIZE_MISMATCH')
    const wrongHash = refFor(body, { hash: sha('other') })
    await rejects(store.put(wrongHash, body), 'ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH')
    await rejects(store.put(wrongHash, streamOf([body.subarray(0, 4), body.subarray(4)])), 'ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH')
    await rejects(store.put(short, streamOf([body.subarray(0, 4), body.subarray(4)])), 'ERR_PRISM_ARTIFACT_BODY_SIZE_MISMATCH')
    const long = refFor(body, { size: body.length + 5 })
    await rejects(store.put(long, streamOf([body])), 'ERR_PRISM_ARTIFACT_BODY_SIZE_MISMATCH')
    for (const ref of [short, wrongHash, long]) assert.equal(existsSync(onDisk(ref)), false)
    await rejects(store.put(refFor(body, { mime: '' }), body), 'ERR_PRISM_ARTIFACT_BODY_STORE')
    await rejects(store.put(refFor(body, { hash: 'sha256:' + sha(body) }), body), 'ERR_PRISM_ARTIFACT_BODY_STORE')
  })

  it('hashes a whole body over 1 MiB as it is sent: a mismatch is refused once, never whole on the wire, never stored', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024 + 11, 4)
    const other = Buffer.from(body)
    other[other.length - 1] = 5
    const proxy = await startCountingProxy(s3.endpoint)
    try {
      const counted = createS3ArtifactBodyStore({ endpoint: proxy.endpoint, bucket: BUCKET, credentials: creds })
      const wrong = refFor(body, { mime: 'application/octet-stream', hash: sha(other) })
      await rejects(counted.put(wrong, body), 'ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH')
      assert.equal(existsSync(onDisk(wrong)), false)
      const short = refFor(body, { size: body.length - 1 })
      await rejects(counted.put(short, body), 'ERR_PRISM_ARTIFACT_BODY_SIZE_MISMATCH')
      const right = refFor(body, { mime: 'application/octet-stream' })
      await counted.put(right, body)
      assert.deepEqual(readFileSync(onDisk(right)), body)
      // The refused body went out once (its attempts all ran before the put rejected: no
      // retry), the size mismatch not at all, then the good body.
      const puts = proxy.requests.filter((r) => r.method === 'PUT').map((r) => r.url.split('/').at(-2))
      assert.deepEqual(puts, [wrong.artifactId, right.artifactId])
    } finally {
      await proxy.close()
    }
  })

  it('retries a whole body after a 5xx that came once it was sent and verified', async () => {
    const body = Buffer.alloc(2 * 1024 * 1024 + 3, 6)
    const ref = refFor(body, { mime: 'application/octet-stream' })
    const target = new URL(s3.endpoint)
    const received = []
    const flaky = http.createServer((req, res) => {
      let n = 0
      if (received.length === 0) {
        // First attempt: read the whole body, then fail as a server error.
        req.on('data', (c) => (n += c.length))
        req.on('end', () => {
          received.push(n)
          res.writeHead(503).end()
        })
        return
      }
      const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
        res.writeHead(upRes.statusCode, upRes.headers)
        upRes.pipe(res)
      })
      req.on('data', (c) => (n += c.length))
      req.on('end', () => received.push(n))
      req.pipe(up)
    })
    await new Promise((resolve) => flaky.listen(0, '127.0.0.1', resolve))
    try {
      const retrying = createS3ArtifactBodyStore({ endpoint: `http://127.0.0.1:${flaky.address().port}`, bucket: BUCKET, credentials: creds })
      await retrying.put(ref, body)
      assert.deepEqual(received, [body.length, body.length])
      assert.deepEqual(readFileSync(onDisk(ref)), body)
    } finally {
      flaky.closeAllConnections()
      await new Promise((resolve) => flaky.close(resolve))
    }
  })

  it('refuses a get whose stored object was altered behind its back, or whose MIME differs', async () => {
    const body = Buffer.from('original content')
    const ref = refFor(body, { mime: 'text/plain; charset=utf-8' })
    await store.put(ref, body)
    assert.equal((await readAll(await store.get({ ...ref, mime: 'TEXT/PLAIN' }))).toString(), 'original content')
    await rejects(store.get({ ...ref, mime: 'application/json' }), 'ERR_PRISM_ARTIFACT_BODY_MIME_MISMATCH')
    writeFileSync(onDisk(ref), 'original CONTENT')
    await rejects(store.get(ref), 'ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH')
    writeFileSync(onDisk(ref), 'original content, longer')
    await rejects(store.get(ref), 'ERR_PRISM_ARTIFACT_BODY_SIZE_MISMATCH')
    const big = Buffer.alloc(3 * 1024 * 1024, 1)
    const bigRef = refFor(big, { mime: 'application/octet-stream' })
    await store.put(bigRef, big)
    big[big.length - 1] = 2
    writeFileSync(onDisk(bigRef), big)
    await rejects(store.get(bigRef), 'ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH')
  })

  it('refuses delete under legal hold; a failing hold check is STORE without its text', async () => {
    const body = Buffer.from('held')
    const held = make({ isHeld: (r) => r.artifactId.endsWith('-held') })
    const ref = refFor(body, { artifactId: 'x-held' })
    await held.put(ref, body)
    await rejects(held.delete(ref), 'ERR_PRISM_ARTIFACT_BODY_HELD')
    assert.ok(existsSync(onDisk(ref)), 'held body survives')
    const throwing = make({
      isHeld: () => {
        throw new Error('hold-service-secret-text')
      },
    })
    const err = await rejects(throwing.delete(ref), 'ERR_PRISM_ARTIFACT_BODY_STORE')
    assert.doesNotMatch(err.message, /hold-service-secret-text/)
    assert.ok(existsSync(onDisk(ref)))
    await store.delete(ref)
    assert.equal(existsSync(onDisk(ref)), false)
  })

  it('runs a kms hook: ciphertext stored, plaintext verified and returned', async () => {
    const xor = async (_op, b) => Uint8Array.from(b, (x) => x ^ 0x5a)
    const sealed = make({ kms: xor })
    const body = Buffer.from('plaintext body')
    const ref = refFor(body)
    await sealed.put(ref, body)
    assert.notDeepEqual(readFileSync(onDisk(ref)), body)
    assert.equal((await readAll(await sealed.get(ref))).toString(), 'plaintext body')
    await rejects(sealed.put(refFor(body, { hash: sha('x') }), body), 'ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH')
    await rejects(store.get(ref), 'ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH')
  })

  it('deletes idempotently', async () => {
    const body = Buffer.from('bye')
    const ref = refFor(body)
    await store.put(ref, body)
    await store.delete(ref)
    await store.delete(ref)
    assert.equal(existsSync(onDisk(ref)), false)
    await rejects(store.get(ref), 'ERR_PRISM_S3_DOWNLOAD')
  })

  it('keeps owners apart: another owner never reaches a body; ownership is required', async () => {
    const body = Buffer.from('mine')
    const ref = refFor(body)
    await store.put(ref, body)
    await rejects(store.get({ ...ref, tenantId: 'other-tenant' }), 'ERR_PRISM_S3_DOWNLOAD')
    const scoped = { ...ref, tenantId: undefined, accountId: 'acct-a' }
    await store.put(scoped, body)
    await rejects(store.get({ ...scoped, accountId: 'acct-b' }), 'ERR_PRISM_S3_DOWNLOAD')
    await rejects(store.get({ ...scoped, accountId: undefined, userId: 'acct-a' }), 'ERR_PRISM_S3_DOWNLOAD')
    assert.equal((await readAll(await store.get(scoped))).toString(), 'mine')
    assert.doesNotMatch(s3ObjectKey(scoped), /undefined/)
    const none = { ...ref, tenantId: undefined, accountId: undefined }
    // One call at a time: a second call's rejection must not wait unhandled behind the first.
    for (const op of [() => store.put(none, body), () => store.get(none), () => store.delete(none), () => store.presign(none)]) {
      await rejects(op(), 'ERR_PRISM_ARTIFACT_BODY_OWNERSHIP')
    }
  })

  it('signs ids with !\'()* and other reserved characters', async () => {
    const body = Buffer.from('odd ids')
    const ref = refFor(body, { tenantId: "t!'()*", threadId: 'th read/1%2F', artifactId: 'a+b=c&d' })
    await store.put(ref, body)
    assert.equal((await readAll(await store.get(ref))).toString(), 'odd ids')
    assert.equal(await (await fetch(await store.presign(ref))).text(), 'odd ids')
    await store.delete(ref)
  })

  it('refuses bad credentials with ERR_PRISM_S3_CREDENTIALS, the resolver text never shown', async () => {
    const body = Buffer.from('creds')
    const ref = refFor(body)
    const wrong = make({ credentials: () => ({ accessKeyId: ACCESS_KEY, secretAccessKey: 'wrong-secret-value' }) })
    await rejects(wrong.put(ref, body), 'ERR_PRISM_S3_CREDENTIALS')
    const unknown = make({ credentials: async () => ({ accessKeyId: 'AKIDUNKNOWN', secretAccessKey: SECRET_KEY }) })
    await rejects(unknown.put(ref, body), 'ERR_PRISM_S3_CREDENTIALS')
    const empty = make({ credentials: () => ({ accessKeyId: '', secretAccessKey: '' }) })
    await rejects(empty.put(ref, body), 'ERR_PRISM_S3_CREDENTIALS')
    const throwing = make({
      credentials: async () => {
        throw new Error('vault-token-secret-text')
      },
    })
    const err = await rejects(throwing.presign(ref), 'ERR_PRISM_S3_CREDENTIALS')
    assert.ok(err instanceof S3ArtifactBodyError)
    assert.equal(err.reason, 'CREDENTIALS')
    assert.doesNotMatch(err.message, /vault-token-secret-text/)
  })

  it('sends the session token on every request, signed, presigned or not', async () => {
    const body = Buffer.from('token')
    const ref = refFor(body)
    const proxy = await startCountingProxy(s3.endpoint)
    try {
      const tokened = createS3ArtifactBodyStore({
        endpoint: proxy.endpoint,
        bucket: BUCKET,
        credentials: () => ({ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY, sessionToken: 'session-token-1' }),
      })
      await tokened.put(ref, body)
      await readAll(await tokened.get(ref))
      await tokened.delete(ref)
      const presigned = new URL(await tokened.presign(ref))
      assert.equal(presigned.searchParams.get('X-Amz-Security-Token'), 'session-token-1')
      assert.equal(proxy.requests.length, 3)
      for (const r of proxy.requests) {
        const q = new URL(r.url, 'http://x').searchParams
        if (q.has('X-Amz-Signature')) {
          assert.equal(q.get('X-Amz-Security-Token'), 'session-token-1')
        } else {
          assert.equal(r.headers['x-amz-security-token'], 'session-token-1')
          const signed = /SignedHeaders=([^,]+)/.exec(r.headers.authorization)[1].split(';')
          for (const h of ['host', 'x-amz-date', 'x-amz-content-sha256', 'x-amz-security-token']) assert.ok(signed.includes(h), h)
          if (r.method === 'PUT') {
            assert.ok(signed.includes('content-length') && signed.includes('content-type'))
            assert.equal(r.headers['x-amz-content-sha256'], ref.hash)
            assert.equal(r.headers['content-length'], String(body.length))
          }
        }
      }
    } finally {
      await proxy.close()
    }
  })

  it('fails fast with a typed error when the server is down', async () => {
    const down = createS3ArtifactBodyStore({ endpoint: 'http://127.0.0.1:9', bucket: BUCKET, credentials: creds })
    const body = Buffer.from('down')
    const ref = refFor(body)
    await rejects(down.put(ref, body), 'ERR_PRISM_S3_UPLOAD')
    await rejects(down.get(ref), 'ERR_PRISM_S3_DOWNLOAD')
    await rejects(down.delete(ref), 'ERR_PRISM_S3_DELETE')
  })

  it('aborts mid-transfer with the signal\'s reason, storing nothing', async () => {
    const chunk = Buffer.alloc(64 * 1024, 3)
    const total = Buffer.concat(Array(8).fill(chunk))
    const ref = refFor(total)
    const controller = new AbortController()
    let release
    const gate = new Promise((resolve) => (release = resolve))
    const put = store.put(ref, streamOf(Array(8).fill(chunk), { gate }), { signal: controller.signal })
    setImmediate(() => {
      controller.abort(new Error('stop now'))
      release()
    })
    await assert.rejects(put, /stop now/)
    assert.equal(existsSync(onDisk(ref)), false)
    const aborted = AbortSignal.abort(new Error('already'))
    await assert.rejects(store.get(ref, { signal: aborted }), /already/)
  })

  it('bounds 16 concurrent puts to maxConcurrentTransfers 4 (put, get, delete share it)', async () => {
    const proxy = await startCountingProxy(s3.endpoint)
    try {
      const bounded = createS3ArtifactBodyStore({ endpoint: proxy.endpoint, bucket: BUCKET, credentials: creds, limits: { maxConcurrentTransfers: 4 } })
      let release
      const gate = new Promise((resolve) => (release = resolve))
      const body = Buffer.from('concurrent body')
      const refs = Array.from({ length: 16 }, () => refFor(body))
      const puts = refs.map((ref) => bounded.put(ref, streamOf([body.subarray(0, 4), body.subarray(4)], { gate })))
      await proxy.reach(4)
      const gets = refs.slice(0, 2).map((ref) => bounded.get(ref).then(readAll).catch((e) => e))
      release()
      await Promise.all(puts)
      await Promise.all(gets)
      assert.equal(proxy.peak(), 4)
      for (const ref of refs) assert.ok(existsSync(onDisk(ref)))
      await Promise.all(refs.map((ref) => bounded.delete(ref)))
      assert.ok(proxy.peak() <= 4)
    } finally {
      await proxy.close()
    }
  })

  it('holds a get\'s transfer slot until its body is downloaded, not just its headers', async () => {
    const body = Buffer.alloc(4 * 1024 * 1024, 5)
    const ref = refFor(body, { mime: 'application/octet-stream' })
    await store.put(ref, body)
    const proxy = await startCountingProxy(s3.endpoint)
    try {
      const bounded = createS3ArtifactBodyStore({ endpoint: proxy.endpoint, bucket: BUCKET, credentials: creds, limits: { maxConcurrentTransfers: 2 } })
      const streams = await Promise.all(Array.from({ length: 8 }, () => bounded.get(ref)))
      assert.equal(proxy.requests.length, 8)
      assert.ok(proxy.peak() <= 2, `peak ${proxy.peak()}`)
      for (const s of streams) assert.equal(sha(await readAll(s)), ref.hash)
    } finally {
      await proxy.close()
    }
  })

  it('checks its options: https only off loopback, no userinfo/query/fragment, limits 1..hard', () => {
    const base = { bucket: BUCKET, credentials: creds }
    for (const endpoint of ['http://s3.example.com', 'https://user:pw@s3.example.com', 'https://s3.example.com/?x=1', 'https://s3.example.com/#f', 'ftp://s3.example.com', 'not a url']) {
      assert.throws(() => createS3ArtifactBodyStore({ ...base, endpoint }), (e) => e instanceof ArtifactBodyStoreError && e.reason === 'STORE', endpoint)
    }
    createS3ArtifactBodyStore({ ...base, endpoint: 'https://s3.example.com/prefix/path' })
    createS3ArtifactBodyStore({ ...base, endpoint: 'http://localhost:9000', region: 'auto' })
    assert.throws(() => createS3ArtifactBodyStore({ ...base, endpoint: s3.endpoint, bucket: 'bad/bucket' }), ArtifactBodyStoreError)
    for (const limits of [{ maxBodyBytes: 0 }, { maxBodyBytes: 512 * 1024 * 1024 + 1 }, { maxConcurrentTransfers: 17 }, { presignTtlMs: 24 * 3600 * 1000 + 1 }]) {
      assert.throws(() => createS3ArtifactBodyStore({ ...base, endpoint: s3.endpoint, limits }), RangeError)
      assert.throws(() => resolveArtifactBodyLimits(limits), RangeError)
    }
    assert.deepEqual(resolveArtifactBodyLimits(), { maxBodyBytes: 64 * 1024 * 1024, maxConcurrentTransfers: 4, presignTtlMs: 600000, maxRefBytes: 256 })
  })

  it('never shows bucket, key, endpoint path or credentials in an error', () => {
    assert.ok(seen.length > 20)
    for (const err of seen) {
      const text = JSON.stringify({ message: err.message, stack: err.stack, ...err })
      for (const secret of [BUCKET, 'prism-artifacts', TENANT, SECRET_KEY, ACCESS_KEY, 'vault-token', 'hold-service', 'session-token-1', 'wrong-secret']) {
        assert.ok(!text.includes(secret), `${secret} leaked in ${text}`)
      }
    }
  })
})
