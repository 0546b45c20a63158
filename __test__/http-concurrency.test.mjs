// 2 000 requests from 32 concurrent fetch clients over a real node:http server: attach,
// revise, approve and get mixed on shared artifacts, retrying 409s. No response is a 5xx,
// and the final state matches exactly what the successful responses said happened.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { serve, createFakeService, createRealService, createRacyStore, createArtifactHandler, prng } from './http-support.mjs'

const linkSecret = 'concurrency-link-secret-0123456789'
const OWNER = { tenantId: 'tenant-c' }
const IDENTITY = { tenantId: 'tenant-c', principal: { kind: 'agent', id: 'host' }, scopes: [], issuedAt: new Date().toISOString(), verified: true }
const TOTAL = 2000
const CLIENTS = 32
const THREADS = ['shared-a', 'shared-b', 'shared-c', 'shared-d']

export async function runMix(service) {
  const handler = createArtifactHandler({ service, authorize: () => ({ ownership: OWNER, identity: IDENTITY }), linkSecret })
  const srv = await serve(handler)
  const base = srv.url + '/prism/artifacts'
  const post = (p, body) => fetch(base + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

  let sent = 0
  const statuses = new Map()
  const count = (s) => statuses.set(s, (statuses.get(s) ?? 0) + 1)
  // What the successful responses say happened.
  const attached = new Map() // "thread/id" → { threadId, id }
  const revised = new Map() // "thread/id" → Map(uri → version)
  const approved = new Map() // "thread/id" → Map(version → reviewer)
  const pendingApproval = [] // versions a client created and may approve: { key, version }
  let conflicts = 0
  let uriSeq = 0

  try {
    // Seed: two artifacts per shared thread.
    for (const threadId of THREADS) {
      for (const n of [1, 2]) {
        const id = `seed-${n}`
        const r = await post(`/${threadId}`, { id, uri: `https://blob.example/${threadId}/${id}/v1`, mime: 'text/plain', hash: 'sha256:seed' })
        assert.equal(r.status, 201)
        attached.set(`${threadId}/${id}`, { threadId, id })
        revised.set(`${threadId}/${id}`, new Map())
        approved.set(`${threadId}/${id}`, new Map())
      }
    }

    /** Send one request, retrying 409s; every attempt counts toward TOTAL. */
    async function attempt(make) {
      for (;;) {
        if (sent >= TOTAL) return null
        sent++
        const res = await make()
        count(res.status)
        if (res.status !== 409) return res
        conflicts++
        await res.body?.cancel()
      }
    }

    async function client(c) {
      const rnd = prng(1000 + c)
      let n = 0
      while (sent < TOTAL) {
        n++
        const keys = [...attached.keys()]
        const key = rnd.pick(keys)
        const { threadId, id } = attached.get(key)
        const roll = rnd.next()
        if (roll < 0.08) {
          const threadId2 = rnd.pick(THREADS)
          const newId = `c${c}-${n}`
          const res = await attempt(() => post(`/${threadId2}`, { id: newId, uri: `https://blob.example/${threadId2}/${newId}/v1`, mime: 'text/plain', hash: 'sha256:new' }))
          if (!res) return
          if (res.status === 201) {
            const rec = await res.json()
            assert.equal(rec.id, newId)
            attached.set(`${threadId2}/${newId}`, { threadId: threadId2, id: newId })
            revised.set(`${threadId2}/${newId}`, new Map())
            approved.set(`${threadId2}/${newId}`, new Map())
          } else await res.body?.cancel()
        } else if (roll < 0.4) {
          if (revised.get(key).size >= 28) continue
          const res = await attempt(() => {
            const uri = `https://blob.example/${threadId}/${id}/u${++uriSeq}`
            return post(`/${threadId}/${id}/revise`, { uri, hash: `sha256:${uriSeq}` })
          })
          if (!res) return
          if (res.status === 200) {
            const rec = await res.json()
            const mine = rec.revisions.at(-1)
            revised.get(key).set(mine.uri, mine.version)
            pendingApproval.push({ key, threadId, id, version: mine.version })
          } else await res.body?.cancel()
        } else if (roll < 0.65 && pendingApproval.length > 0) {
          const target = pendingApproval.splice(rnd.int(pendingApproval.length), 1)[0]
          const reviewer = `reviewer:c${c}-${n}`
          const decision = rnd.next() < 0.8 ? 'approve' : 'reject'
          const res = await attempt(() => post(`/${target.threadId}/${target.id}/${decision}`, { version: target.version, reviewer }))
          if (!res) return
          if (res.status === 200) {
            const rec = await res.json()
            const entry = rec.approvals.find((a) => a.version === target.version)
            assert.equal(entry.reviewer, reviewer)
            approved.get(target.key).set(target.version, { reviewer, state: decision === 'approve' ? 'approved' : 'rejected' })
          } else await res.body?.cancel()
        } else {
          const res = await attempt(() => fetch(`${base}/${threadId}/${id}`))
          if (!res) return
          if (res.status === 200) {
            const rec = await res.json()
            assert.equal(rec.id, id)
          } else await res.body?.cancel()
        }
      }
    }

    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)))

    assert.equal(sent, TOTAL)
    const fivexx = [...statuses].filter(([s]) => s >= 500)
    assert.deepEqual(fivexx, [], `no 5xx: ${JSON.stringify([...statuses])}`)
    for (const s of statuses.keys()) assert.ok([200, 201, 409].includes(s), `unexpected status ${s}`)

    // Final state: exactly what the successful responses said.
    for (const threadId of THREADS) {
      const r = await fetch(`${base}/${threadId}`)
      assert.equal(r.status, 200)
      const page = await r.json()
      const ids = page.items.map((x) => x.id).sort()
      const want = [...attached.values()].filter((a) => a.threadId === threadId).map((a) => a.id).sort()
      assert.deepEqual(ids, want, `artifacts of ${threadId}`)
    }
    for (const [key, { threadId, id }] of attached) {
      const r = await fetch(`${base}/${threadId}/${id}`)
      const rec = await r.json()
      const versions = rec.revisions.map((x) => x.version)
      assert.deepEqual(versions, versions.map((_, i) => i + 1), `${key}: contiguous revisions`)
      const finalUris = new Map(rec.revisions.slice(1).map((x) => [x.uri, x.version]))
      assert.deepEqual(finalUris, revised.get(key), `${key}: revisions are exactly the successful revises`)
      const finalDecisions = new Map(rec.approvals.map((a) => [a.version, { reviewer: a.reviewer, state: a.state }]))
      assert.equal(finalDecisions.size, rec.approvals.length, `${key}: one decision per version`)
      assert.deepEqual(finalDecisions, approved.get(key), `${key}: decisions are exactly the successful ones`)
      const approvedVersions = [...approved.get(key)].filter(([, d]) => d.state === 'approved').map(([v]) => v)
      if (approvedVersions.length > 0) assert.ok(approvedVersions.includes(rec.lastValidatedVersion), key)
      else assert.equal(rec.lastValidatedVersion, undefined, key)
    }
    if (process.env.HTTP_MIX_DEBUG) console.log(JSON.stringify([...statuses]), 'conflicts', conflicts)
    return { statuses, conflicts }
  } finally {
    await srv.close()
  }
}

// Records hold up to ~29 revisions and their decisions here: above the default 8 KiB
// aggregate backstop, so the runs raise recordBytes (hard cap 64 KiB).
const limits = { recordBytes: 65536 }

test('2 000 requests from 32 concurrent clients: createArtifactService on the native memory store', async () => {
  await runMix(createRealService({ linkSecret, limits }))
})

test('2 000 requests from 32 concurrent clients: createArtifactService on a host store whose loads pause (forced races)', async () => {
  const { statuses, conflicts } = await runMix(createRealService({ linkSecret, limits, store: createRacyStore() }))
  assert.ok(conflicts > 0, `the mix really raced: ${JSON.stringify([...statuses])}`)
})

test('2 000 requests from 32 concurrent clients: the in-test fake service', async () => {
  const { statuses, conflicts } = await runMix(createFakeService({ linkSecret }))
  assert.ok(conflicts > 0, `the mix really raced: ${JSON.stringify([...statuses])}`)
})
