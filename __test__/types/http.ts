// Compiles under tsc --strict: the seed's HTTP adapter example and the node:http mount.
import http from 'node:http'
import {
  createArtifactService,
  createMemoryCheckpointStore,
  createSecretRedactor,
  createArtifactHandler,
  toNodeListener,
  type ArtifactAuthorizer,
  type ArtifactAuthorizationInput,
  type ArtifactService,
  type ArtifactHttpErrorBody,
  type ArtifactOperation,
} from 'prism-review'

const artifacts = createArtifactService(createMemoryCheckpointStore(), {
  redactor: createSecretRedactor([/* host secrets */]),
  linkSecret: process.env.PRISM_ARTIFACT_LINK_SECRET!,
})
// Any object with the service methods is accepted, e.g. a host wrapper.
export const wrapped: ArtifactService = { ...artifacts, get: (input) => artifacts.get(input) }

const hostAuthorize: ArtifactAuthorizer = async ({ request, operation, threadId, deliveryToken, signal }: ArtifactAuthorizationInput) => {
  if (signal.aborted) return false
  const op: ArtifactOperation = operation
  if (op === 'artifact.download' && deliveryToken) {
    const { tenantId, accountId, userId } = deliveryToken
    return { ownership: { tenantId, accountId, userId } }
  }
  const user = request.headers.get('x-user')
  if (!user || !threadId) return false
  return {
    ownership: { tenantId: 'tenant-1', userId: user },
    identity: {
      tenantId: 'tenant-1',
      userId: user,
      principal: { kind: 'user', id: user },
      scopes: ['artifacts'],
      issuedAt: new Date().toISOString(),
      verified: true,
    },
  }
}

// Seed 001: framework-free HTTP adapter (default base /prism/artifacts); ownership only from authorize.
export const handler = createArtifactHandler({ service: artifacts, authorize: hostAuthorize, linkSecret: process.env.PRISM_ARTIFACT_LINK_SECRET! })

export const custom = createArtifactHandler({
  service: wrapped,
  authorize: () => ({ tenantId: 't' }),
  linkSecret: new Uint8Array(32),
  basePath: '/api/artifacts',
  redactor: createSecretRedactor(['hunter2']),
  limits: { maxRequestBytes: 128 * 1024, deliveryLinkTokenBytes: 8192 },
})

export const server = http.createServer(toNodeListener(handler))

export async function call(): Promise<number> {
  const res: Response = await handler(new Request('http://localhost/prism/artifacts/thread-1'))
  if (!res.ok) {
    const body = (await res.json()) as ArtifactHttpErrorBody
    return body.error.code.length
  }
  return res.status
}
