// Compiles under tsc --strict: the seed 001 "Implementation example" with only the import
// paths changed to 'prism-review' (and its body inside a function: this file is not a
// module with top-level await). `hostAuthorize` is the host's, so it is declared.
import { createSecretRedactor } from 'prism-review'
import { createSqlitePersistence } from 'prism-review'
import { createArtifactService, createArtifactHandler } from 'prism-review'
import type { CreateArtifactHandlerOptions } from 'prism-review'
import { createMemoryCheckpointStore } from 'prism-review'
import type {
  AgentIdentity,
  ArtifactRecord,
  ArtifactRevision,
  ArtifactDeliveryToken,
  OwnershipScope,
  ArtifactLimits,
  ArtifactDecisionEvent,
} from 'prism-review'
import {
  resolveArtifactLimits,
  signArtifactDeliveryLink,
  verifyArtifactDeliveryLink,
  artifactApprovalState,
  checkCitationIntegrity,
  citationBindingDigest,
  approvalEvidenceIntact,
  ArtifactError,
} from 'prism-review'

declare const ownership: OwnershipScope
declare const identity: AgentIdentity
declare const hostAuthorize: CreateArtifactHandlerOptions['authorize']

export async function seedExample(): Promise<string> {
  const persistence = createSqlitePersistence({ filename: "prism.db" });
  const artifacts = createArtifactService(persistence.checkpoints, {
    redactor: createSecretRedactor([/* host secrets */]),
    linkSecret: process.env.PRISM_ARTIFACT_LINK_SECRET!,
  });

  const record = await artifacts.attach({ ownership, identity, threadId: "thread-1", uri: "https://blob.example/doc", mime: "text/markdown", hash: "sha256:aaa" })
  await artifacts.revise({ ownership, threadId: "thread-1", artifactId: record.id, uri: "https://blob.example/doc-v2", hash: "sha256:bbb" })
  await artifacts.approve({ ownership, identity, threadId: "thread-1", artifactId: record.id, version: 2 })
  const { link } = await artifacts.deliveryLink({ ownership, threadId: "thread-1", artifactId: record.id })

  // Framework-free HTTP adapter (default base /prism/artifacts); ownership only from authorize.
  const handler = createArtifactHandler({ service: artifacts, authorize: hostAuthorize, linkSecret: process.env.PRISM_ARTIFACT_LINK_SECRET! });
  const response: Response = await handler(new Request('http://localhost/prism/artifacts/thread-1'))
  void response
  return link
}

export async function typedUsage(): Promise<void> {
  const limits: ArtifactLimits = resolveArtifactLimits({ revisionsPerArtifact: 64, recordBytes: 64 * 1024 })
  const svc = createArtifactService(createMemoryCheckpointStore(), {
    redactor: { redact: <T>(v: T): T => v },
    linkSecret: new Uint8Array(32),
    limits,
    onDecision: async (e: ArtifactDecisionEvent) => {
      const t: 'artifact_attached' | 'artifact_revised' | 'artifact_approved' | 'artifact_rejected' = e.type
      void t
    },
  })
  const ac = new AbortController()
  const rec: ArtifactRecord = await svc.get({ ownership, threadId: 't', artifactId: 'a', signal: ac.signal })
  const state: 'pending' | 'approved' | 'rejected' | undefined = rec.state
  const rev: ArtifactRevision = await svc.lastValidated({ ownership, threadId: 't', artifactId: 'a' })
  const cmp = await svc.compare({ ownership, threadId: 't', artifactId: 'a', from: 1, to: 2 })
  const changed: boolean = cmp.changed.hash || cmp.changed.citations
  const page = await svc.list({ ownership, threadId: 't', limit: 10 })
  const next: string | undefined = page.nextCursor
  const token: ArtifactDeliveryToken = { artifactId: 'a', threadId: 't', version: rev.version, ...ownership, issuedAt: 'i', expiresAt: 'e' }
  const link: string = signArtifactDeliveryLink(token, 'secret-of-16-bytes!')
  const verified: ArtifactDeliveryToken = verifyArtifactDeliveryLink(link, 'secret-of-16-bytes!', 4096, new Date())
  const report = checkCitationIntegrity({ citations: rev.citations ?? [], snapshots: [{ sourceId: 's', readable: false }] })
  const reasons: readonly ('missing' | 'hash_mismatch' | 'revision_mismatch' | 'span_out_of_range' | 'acl_denied' | 'tenant_mismatch')[] = report.results[0]?.reasons ?? []
  const digest: string = citationBindingDigest(rev.citations ?? [])
  const intact: boolean = approvalEvidenceIntact(rec) && approvalEvidenceIntact(rec, 2)
  const approval: 'pending' | 'approved' | 'rejected' = artifactApprovalState(rec)
  try {
    await svc.reject({ ownership, threadId: 't', artifactId: 'a', version: 1, reviewer: 'user:r', note: 'changes' })
  } catch (e) {
    if (e instanceof ArtifactError && e.reason === 'conflict') return
  }
  void [state, changed, next, token, verified, reasons, digest, intact, approval]
}
