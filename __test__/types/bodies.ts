// Compiles under tsc --strict: a host's own body store and the native S3 adapter both
// satisfy ArtifactBodyStore, and the service takes either, as code written for
// @arnilo/prism and @arnilo/prism-server/artifact-bodies does.
import {
  type ArtifactBodyRef,
  type ArtifactBodyStore,
  ArtifactBodyStoreError,
  type ArtifactDeliveryResult,
  type ResolvedArtifactBodyLimits,
  S3ArtifactBodyError,
  type S3ArtifactBodyStoreOptions,
  createArtifactService,
  createMemoryCheckpointStore,
  createS3ArtifactBodyStore,
  createSecretRedactor,
  resolveArtifactBodyLimits,
  s3ObjectKey,
  sha256Hex,
  signV4,
} from 'prism-review'

const hostStore: ArtifactBodyStore = {
  async put(_ref: ArtifactBodyRef, _body: Uint8Array | ReadableStream<Uint8Array>) {},
  async get() {
    return new ReadableStream<Uint8Array>()
  },
  async delete() {},
  async presign(ref, options) {
    return `https://bodies.example/${ref.artifactId}?ttl=${options?.ttlMs ?? 0}`
  },
}

const options: S3ArtifactBodyStoreOptions = {
  endpoint: 'https://s3.us-east-1.amazonaws.com',
  bucket: 'prism-throwaway',
  region: 'auto',
  credentials: async () => ({ accessKeyId: 'a', secretAccessKey: 's', sessionToken: 't' }),
  isHeld: (ref) => ref.artifactId === 'held',
  kms: async (op, body) => (op === 'encrypt' ? body : body),
  limits: { maxBodyBytes: 1024, maxConcurrentTransfers: 2, presignTtlMs: 60_000 },
}
export const s3: ArtifactBodyStore = createS3ArtifactBodyStore(options)

export const service = createArtifactService(createMemoryCheckpointStore(), {
  redactor: createSecretRedactor([]),
  linkSecret: 'link-secret-0123456789abcdef',
  bodies: Math.random() > 0.5 ? s3 : hostStore,
})

export async function deliver(): Promise<string | undefined> {
  const out: ArtifactDeliveryResult = await service.deliveryLink({ ownership: { tenantId: 't' }, threadId: 'th', artifactId: 'a' })
  return out.url
}

export const limits: ResolvedArtifactBodyLimits = resolveArtifactBodyLimits({ presignTtlMs: 1000 })
export const key: string = s3ObjectKey({ tenantId: 't', artifactId: 'a', threadId: 'th', version: 1, mime: 'text/plain', size: 0, hash: '0'.repeat(64) })
export const digest: Promise<string> = sha256Hex(new Uint8Array(0))
export const signature: Promise<string> = signV4({
  method: 'GET',
  path: '/',
  headers: { host: 'example.amazonaws.com' },
  signedHeaders: ['host'],
  payloadHash: 'UNSIGNED-PAYLOAD',
  region: 'us-east-1',
  service: 's3',
  amzDate: '20150830T123600Z',
  accessKeyId: 'a',
  secretAccessKey: 's',
}).then((s) => s.signature)

export function code(e: unknown): string {
  if (e instanceof ArtifactBodyStoreError) return `${e.code}:${e.reason}`
  if (e instanceof S3ArtifactBodyError) {
    const c: 'ERR_PRISM_S3_CREDENTIALS' | `ERR_PRISM_S3_${string}` = e.code
    return `${c}:${e.reason}`
  }
  return 'other'
}
