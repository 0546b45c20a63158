// Shared helpers for the HTTP adapter suites: a loopback node:http server around a
// handler, a seeded PRNG, the real artifact service (with a call log and a store that
// makes concurrent writers race), and an in-test fake service that follows the same
// contract. The fake only ever runs beside the real service: it shows the handler takes
// any service object and gives a second, independent implementation to check against.
import http from 'node:http'
import * as prism from '../index.mjs'

export const { ArtifactError, createArtifactHandler, toNodeListener } = prism

/** The owner the HTTP suites' authorize grants, and its verified identity (issued a minute ago). */
export const OWNER = { tenantId: 'tenant-1', userId: 'user-1' }
export const IDENTITY = {
  tenantId: 'tenant-1',
  userId: 'user-1',
  principal: { kind: 'user', id: 'user-1' },
  scopes: ['artifacts'],
  issuedAt: new Date(Date.now() - 60_000).toISOString(),
  verified: true,
}

/** Start `http.createServer(toNodeListener(handler))` on 127.0.0.1; returns { url, server, close }. */
export async function serve(handler, { requestTimeout } = {}) {
  const options = requestTimeout === undefined ? {} : { requestTimeout, connectionsCheckingInterval: 50 }
  const server = http.createServer(options, toNodeListener(handler))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.()
        server.close(() => resolve())
      }),
  }
}

/** mulberry32: a small seeded PRNG, so every randomized run is reproducible. */
export function prng(seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (arr) => arr[Math.floor(next() * arr.length)],
  }
}

// ---------------------------------------------------------------------------------------
// Delivery links: signed with the package's own signer, so the handler's verifier (the
// package's verifyArtifactDeliveryLink) accepts exactly what the service issues.

/** Sign exactly `token` ({ artifactId, threadId, version, tenantId?, accountId?, userId?, issuedAt, expiresAt }). */
export function signLink(token, secret) {
  return prism.signArtifactDeliveryLink(token, secret)
}

// ---------------------------------------------------------------------------------------
// The real service.

const OPERATIONS = ['attach', 'list', 'get', 'revise', 'compare', 'approve', 'reject', 'lastValidated', 'deliveryLink']

/**
 * A host CheckpointStore over the native memory store that pauses `delayMs` after each
 * load, so concurrent read-modify-write cycles of the real service overlap and the CAS
 * loser gets a real `conflict`.
 */
export function createRacyStore() {
  const inner = prism.createMemoryCheckpointStore()
  const store = {
    delayMs: 0,
    saveCheckpoint: (input) => inner.saveCheckpoint(input),
    async loadCheckpoint(input) {
      const out = await inner.loadCheckpoint(input)
      await new Promise((r) => (store.delayMs > 0 ? setTimeout(r, store.delayMs) : setImmediate(r)))
      return out
    },
    listCheckpoints: (input) => inner.listCheckpoints(input),
    deleteCheckpoint: (input) => inner.deleteCheckpoint(input),
  }
  return store
}

/**
 * `createArtifactService` over `store` (default: the native memory store), wrapped so the
 * suites can see every input the handler passes (`calls`). The wrapper only records.
 */
export function createRealService({ linkSecret, limits, store = prism.createMemoryCheckpointStore(), calls = [], redactor } = {}) {
  const service = prism.createArtifactService(store, { redactor: redactor ?? prism.createSecretRedactor([]), linkSecret, ...(limits ? { limits } : {}) })
  const logged = { store, calls, inner: service, limits: service.limits }
  for (const op of OPERATIONS) {
    logged[op] = (input) => {
      calls.push(input)
      return service[op](input)
    }
  }
  return logged
}

// ---------------------------------------------------------------------------------------
// The fake service.

const sameOwner = (a, b) => ['tenantId', 'accountId', 'userId'].every((k) => (a[k] ?? undefined) === (b[k] ?? undefined))

/**
 * An in-memory artifact service following the contract: CAS on a per-record version with
 * a yield between load and save (so concurrent writers really race and the loser gets a
 * `conflict`), cross-owner access is `not_found`, caps give `too_many_*`.
 */
export function createFakeService({ linkSecret, maxArtifacts = 64, maxRevisions = 32, calls = [] } = {}) {
  const records = new Map()
  let seq = 0
  const self = { raceWindowMs: 0 }
  // The pause between load and save: concurrent writers that load in it race.
  const tick = () => new Promise((r) => (self.raceWindowMs > 0 ? setTimeout(r, self.raceWindowMs) : setImmediate(r)))
  const check = (input) => {
    calls.push(input)
    if (input.signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' })
    if (!input.ownership || typeof input.ownership !== 'object') throw new ArtifactError('ownership required', 'invalid_input')
  }
  const load = (input) => {
    const entry = records.get(`${input.threadId}:${input.artifactId}`)
    if (!entry || !sameOwner(entry.ownership, input.ownership)) throw new ArtifactError('artifact not found', 'not_found')
    return entry
  }
  const save = (key, entry, expected) => {
    const cur = records.get(key)
    if ((cur?.version ?? 0) !== expected) throw new ArtifactError('version conflict', 'conflict')
    records.set(key, { ...entry, version: expected + 1 })
  }
  const clone = (r) => structuredClone(r)
  const reviewer = (input) =>
    input.reviewer ?? (input.identity ? `${input.identity.principal.kind}:${input.identity.principal.id}` : 'user:anonymous')
  // One change to a stored record: `change(record)` edits a copy, saved if the version held.
  const update = async (input, change) => {
    check(input)
    const key = `${input.threadId}:${input.artifactId}`
    const entry = load(input)
    const expected = entry.version
    await tick()
    const record = clone(entry.record)
    change(record)
    save(key, { ...entry, record }, expected)
    return clone(record)
  }
  const decide = (input, state) =>
    update(input, (record) => {
      if (!record.revisions.some((r) => r.version === input.version)) throw new ArtifactError('no such revision', 'invalid_input')
      record.approvals = record.approvals.filter((a) => a.version !== input.version)
      record.approvals.push({ version: input.version, state, reviewer: reviewer(input) })
      if (state === 'approved') record.lastValidatedVersion = Math.max(record.lastValidatedVersion ?? 0, input.version)
      record.state = record.approvals.find((a) => a.version === record.revisions.at(-1).version)?.state ?? 'pending'
    })
  return Object.assign(self, {
    records,
    async attach(input) {
      check(input)
      const id = input.id ?? `art_${++seq}`
      const key = `${input.threadId}:${id}`
      const existing = records.get(key)
      if (existing) {
        if (!sameOwner(existing.ownership, input.ownership)) throw new ArtifactError('artifact not found', 'not_found')
        return clone(existing.record)
      }
      const inThread = [...records.values()].filter((e) => e.record.threadId === input.threadId).length
      if (inThread >= maxArtifacts) throw new ArtifactError('too many artifacts in this thread', 'too_many_artifacts')
      if (String(input.uri).startsWith('file:')) throw new ArtifactError('local paths are refused', 'unsafe_uri')
      await tick()
      const record = {
        id,
        threadId: input.threadId,
        revisions: [{ version: 1, uri: input.uri, mime: input.mime, hash: input.hash }],
        approvals: [],
        state: 'pending',
      }
      save(key, { ownership: input.ownership, record }, 0)
      return clone(record)
    },
    async list(input) {
      check(input)
      const items = [...records.values()]
        .filter((e) => e.record.threadId === input.threadId && sameOwner(e.ownership, input.ownership))
        .map((e) => clone(e.record))
      return { items }
    },
    async get(input) {
      check(input)
      return clone(load(input).record)
    },
    async revise(input) {
      return update(input, (record) => {
        if (record.revisions.length >= maxRevisions) throw new ArtifactError('too many revisions', 'too_many_revisions')
        const prev = record.revisions.at(-1)
        record.revisions.push({ version: prev.version + 1, uri: input.uri, mime: input.mime ?? prev.mime, hash: input.hash })
        record.state = 'pending'
      })
    },
    async compare(input) {
      check(input)
      const record = load(input).record
      const a = record.revisions.find((r) => r.version === input.from)
      const b = record.revisions.find((r) => r.version === input.to)
      if (!a || !b || input.from === input.to) throw new ArtifactError('compare needs two distinct revisions', 'invalid_input')
      return {
        artifactId: record.id,
        from: a.version,
        to: b.version,
        changed: { hash: a.hash !== b.hash, mime: a.mime !== b.mime, uri: a.uri !== b.uri, citations: false },
      }
    },
    approve: (input) => decide(input, 'approved'),
    reject: (input) => decide(input, 'rejected'),
    async lastValidated(input) {
      check(input)
      const record = load(input).record
      if (record.lastValidatedVersion === undefined) throw new ArtifactError('no approved revision', 'not_validated')
      return clone(record.revisions.find((r) => r.version === record.lastValidatedVersion))
    },
    async deliveryLink(input) {
      check(input)
      const record = load(input).record
      const version = input.version ?? record.lastValidatedVersion ?? record.revisions.at(-1).version
      const issuedAt = new Date().toISOString()
      const expiresAt = new Date(Date.now() + (input.ttlSeconds ?? 300) * 1000).toISOString()
      const token = { artifactId: record.id, threadId: record.threadId, version, ...input.ownership, issuedAt, expiresAt }
      return { link: signLink(token, linkSecret), token }
    },
  })
}
