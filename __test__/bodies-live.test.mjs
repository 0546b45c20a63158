// The operator-gated live probe of the native S3 body store against a real endpoint (use
// a throwaway bucket): PRISM_TEST_S3_ENDPOINT, PRISM_TEST_S3_KEY, PRISM_TEST_S3_SECRET,
// PRISM_TEST_S3_BUCKET (and PRISM_TEST_S3_REGION, default us-east-1). Four requests: put,
// get (verified), delete twice (idempotent); the presigned URL is made, not fetched.
// Without the variables it reports one line and passes (a skip would fail CI).
import assert from 'node:assert/strict'
import { createHash, randomUUID } from 'node:crypto'
import { it } from 'node:test'
import { createS3ArtifactBodyStore } from '../index.mjs'

const env = process.env
const names = ['PRISM_TEST_S3_ENDPOINT', 'PRISM_TEST_S3_KEY', 'PRISM_TEST_S3_SECRET', 'PRISM_TEST_S3_BUCKET']
const missing = names.filter((n) => !env[n])

it('live S3 probe: put, verified get, presigned URL, idempotent double delete', async (t) => {
  if (missing.length > 0) {
    t.diagnostic(`live S3 probe not run: set ${missing.join(', ')}`)
    return
  }
  const store = createS3ArtifactBodyStore({
    endpoint: env.PRISM_TEST_S3_ENDPOINT,
    bucket: env.PRISM_TEST_S3_BUCKET,
    region: env.PRISM_TEST_S3_REGION || 'us-east-1',
    credentials: () => ({ accessKeyId: env.PRISM_TEST_S3_KEY, secretAccessKey: env.PRISM_TEST_S3_SECRET }),
  })
  const body = Buffer.from(`prism-review live probe ${new Date().toISOString()}`)
  const ref = { tenantId: 'prism-live-probe', threadId: 'probe', artifactId: randomUUID(), version: 1, mime: 'text/plain', size: body.length, hash: createHash('sha256').update(body).digest('hex') }
  await store.put(ref, body)
  const chunks = []
  for await (const c of await store.get(ref)) chunks.push(c)
  assert.deepEqual(Buffer.concat(chunks), body)
  assert.ok(new URL(await store.presign(ref, { ttlMs: 60_000 })).searchParams.get('X-Amz-Signature'))
  await store.delete(ref)
  await store.delete(ref)
})
