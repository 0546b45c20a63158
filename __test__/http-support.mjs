// Shared helpers for the HTTP adapter suites: a loopback node:http server around a
// handler, a seeded PRNG, and an in-test fake artifact service that follows the service
// contract (seed 001 + API-NOTES). The fake runs beside the real service, never instead
// of it: it lets the suites force what the real service only does under races (a
// conflict on demand) and count what the handler asks of it.
import http from 'node:http'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createRequire } from 'node:module'
import * as prism from '../index.mjs'

const require = createRequire(import.meta.url)
export const { ArtifactError, createArtifactHandler, toNodeListener } = prism

/** Start `http.createServer(toNodeListener(handler))` on 127.0.0.1; returns { url, server, close }. */
export async function serve(handler, { requestTimeout } = {}) {
  const server = http.createServer(toNodeListener(handler))
  if (requestTimeout !== undefined) server.requestTimeout = requestTimeout
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
// Delivery links. The real signer/verifier come from the artifact service work; until
// they are exported, the fake signs with the documented format and the verifier the
// handler uses is this one.

const b64u = (buf) => Buffer.from(buf).toString('base64url')

export function testSign(payload, secret) {
  const body = b64u(JSON.stringify(payload))
  const sig = b64u(createHmac('sha256', secret).update(body).digest())
  return `${body}.${sig}`
}

function testVerify(link, secret) {
  if (typeof link !== 'string' || link.length > 16384) throw new ArtifactError('link_too_large', 'link too large')
  const [body, sig, extra] = link.split('.')
  if (!body || !sig || extra !== undefined) throw new ArtifactError('invalid_link', 'malformed link')
  const want = createHmac('sha256', secret).update(body).digest()
  const got = Buffer.from(sig, 'base64url')
  if (got.length !== want.length || !timingSafeEqual(got, want)) throw new ArtifactError('invalid_link', 'bad signature')
  let token
  try {
    token = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
  } catch {
    throw new ArtifactError('invalid_link', 'bad payload')
  }
  if (Date.parse(token.expiresAt) <= Date.now()) throw new ArtifactError('link_expired', 'link expired')
  return token
}

const artifactsModule = require('../js/artifacts.js')
export const realLinks = typeof artifactsModule.verifyArtifactDeliveryLink === 'function'
if (!realLinks) artifactsModule.verifyArtifactDeliveryLink = testVerify

/** Sign a link for `token` with whatever verifier the handler uses. */
export function signLink(token, secret) {
  if (realLinks && typeof prism.signArtifactDeliveryLink === 'function') {
    return prism.signArtifactDeliveryLink(token, secret)
  }
  return testSign(token, secret)
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
    if (!input.ownership || typeof input.ownership !== 'object') throw new ArtifactError('invalid_input', 'ownership required')
  }
  const load = (input) => {
    const entry = records.get(`${input.threadId}:${input.artifactId}`)
    if (!entry || !sameOwner(entry.ownership, input.ownership)) throw new ArtifactError('not_found', 'artifact not found')
    return entry
  }
  const save = (key, entry, expected) => {
    const cur = records.get(key)
    if ((cur?.version ?? 0) !== expected) throw new ArtifactError('conflict', 'version conflict')
    records.set(key, { ...entry, version: expected + 1 })
  }
  const clone = (r) => structuredClone(r)
  const reviewer = (input) =>
    input.reviewer ?? (input.identity ? `${input.identity.principal.kind}:${input.identity.principal.id}` : 'user:anonymous')
  const decide = async (input, state) => {
    check(input)
    const key = `${input.threadId}:${input.artifactId}`
    const entry = load(input)
    const expected = entry.version
    await tick()
    const record = clone(entry.record)
    if (!record.revisions.some((r) => r.version === input.version)) throw new ArtifactError('invalid_input', 'no such revision')
    record.approvals = record.approvals.filter((a) => a.version !== input.version)
    record.approvals.push({ version: input.version, state, reviewer: reviewer(input) })
    if (state === 'approved') record.lastValidatedVersion = Math.max(record.lastValidatedVersion ?? 0, input.version)
    record.state = record.approvals.find((a) => a.version === record.revisions.at(-1).version)?.state ?? 'pending'
    save(key, { ...entry, record }, expected)
    return clone(record)
  }
  return Object.assign(self, {
    records,
    async attach(input) {
      check(input)
      const id = input.id ?? `art_${++seq}`
      const key = `${input.threadId}:${id}`
      const existing = records.get(key)
      if (existing) {
        if (!sameOwner(existing.ownership, input.ownership)) throw new ArtifactError('not_found', 'artifact not found')
        return clone(existing.record)
      }
      const inThread = [...records.values()].filter((e) => e.record.threadId === input.threadId).length
      if (inThread >= maxArtifacts) throw new ArtifactError('too_many_artifacts', 'too many artifacts in this thread')
      if (String(input.uri).startsWith('file:')) throw new ArtifactError('unsafe_uri', 'local paths are refused')
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
      check(input)
      const key = `${input.threadId}:${input.artifactId}`
      const entry = load(input)
      const expected = entry.version
      await tick()
      const record = clone(entry.record)
      if (record.revisions.length >= maxRevisions) throw new ArtifactError('too_many_revisions', 'too many revisions')
      const prev = record.revisions.at(-1)
      record.revisions.push({ version: prev.version + 1, uri: input.uri, mime: input.mime ?? prev.mime, hash: input.hash })
      record.state = 'pending'
      save(key, { ...entry, record }, expected)
      return clone(record)
    },
    async compare(input) {
      check(input)
      const record = load(input).record
      const a = record.revisions.find((r) => r.version === input.from)
      const b = record.revisions.find((r) => r.version === input.to)
      if (!a || !b || input.from === input.to) throw new ArtifactError('invalid_input', 'compare needs two distinct revisions')
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
      if (record.lastValidatedVersion === undefined) throw new ArtifactError('not_validated', 'no approved revision')
      return clone(record.revisions.find((r) => r.version === record.lastValidatedVersion))
    },
    async deliveryLink(input) {
      check(input)
      const record = load(input).record
      const version = input.version ?? record.lastValidatedVersion ?? record.revisions.at(-1).version
      const issuedAt = new Date().toISOString()
      const expiresAt = new Date(Date.now() + (input.ttlSeconds ?? 300) * 1000).toISOString()
      const token = { artifactId: record.id, threadId: record.threadId, version, ownership: input.ownership, issuedAt, expiresAt }
      return { link: signLink(token, linkSecret), token }
    },
  })
}
