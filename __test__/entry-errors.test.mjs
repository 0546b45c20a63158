// Issue 17 point 5: a throwing getter or Proxy trap given to an artifact or store entry
// point is one of our errors with the caller's error as `cause`, never the caller's raw
// error.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  createArtifactService,
  createMemoryCheckpointStore,
  createSqlitePersistence,
  createPostgresPersistence,
  createSecretRedactor,
  signArtifactDeliveryLink,
  verifyArtifactDeliveryLink,
  ArtifactError,
  CheckpointConflictError,
} from '../index.mjs'

const boom = new Error('boom')
boom.code = 'ERR_OUT_OF_RANGE' // looks like ours: must still be wrapped, not passed through
const getter = (obj, key) => Object.defineProperty({ ...obj }, key, { get() { throw boom }, enumerable: true })
const trap = (target = {}) => new Proxy(target, { get() { throw boom }, ownKeys() { throw boom }, getOwnPropertyDescriptor() { throw boom } })
const ours = (e) =>
  e !== boom &&
  (e instanceof ArtifactError || e instanceof CheckpointConflictError || (e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE')) &&
  e.cause === boom

const store = createMemoryCheckpointStore()
const redactor = createSecretRedactor([])
const linkSecret = 'link-secret-0123456789abcdef'
const token = { v: 1, tenantId: 't', threadId: 'th', artifactId: 'a', version: 1, uri: 'https://x/y', expiresAt: 1 }

test('entry points: a throwing getter or Proxy trap is our error with the caller\'s error as cause', async () => {
  const calls = [
    () => createArtifactService(store, trap()),
    () => createArtifactService(store, getter({ redactor, linkSecret }, 'limits')),
    () => createArtifactService(store, getter({ redactor, linkSecret }, 'redactor')),
    () => createArtifactService(trap(), { redactor, linkSecret }),
    () => createArtifactService(getter(store, 'loadCheckpoint'), { redactor, linkSecret }),
    () => createArtifactService(store, { redactor: trap(), linkSecret }),
    () => createArtifactService(store, { redactor, linkSecret, limits: getter({}, 'citations') }),
    () => signArtifactDeliveryLink(getter(token, 'uri'), linkSecret),
    () => signArtifactDeliveryLink(trap(), linkSecret),
    () => verifyArtifactDeliveryLink('x.y', linkSecret, undefined, trap(new Date())),
    () => createMemoryCheckpointStore(getter({}, 'maxRecords')),
    () => createMemoryCheckpointStore(trap()),
    () => createSqlitePersistence(getter({}, 'filename')),
    () => createSqlitePersistence(trap()),
    () => createPostgresPersistence(getter({}, 'connectionString')),
    () => createPostgresPersistence(trap()),
  ]
  for (const fn of calls) assert.throws(fn, ours, String(fn))
  const svc = createArtifactService(store, { redactor, linkSecret })
  for (const input of [trap(), getter({ ownership: { tenantId: 't' }, threadId: 'th' }, 'artifactId')]) {
    await assert.rejects(svc.get(input), ours, 'service.get')
  }
  for (const input of [trap(), getter({ namespace: 'n', key: 'k' }, 'tenantId')]) {
    await assert.rejects(store.loadCheckpoint(input), ours, 'store.loadCheckpoint')
  }
})
