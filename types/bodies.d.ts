// Artifact bodies: the ArtifactBodyStore contract (@arnilo/prism's `src/artifacts.ts`) and
// the native S3-compatible adapter (@arnilo/prism-server's `artifact-bodies`).
import type { OwnershipScope } from './store'

/**
 * An opaque, ownership-scoped reference to one revision's body. `size` and `hash` (64 hex
 * SHA-256) are what the body must be; both are verified on every put and get.
 */
export interface ArtifactBodyRef extends OwnershipScope {
  readonly artifactId: string
  readonly threadId: string
  readonly version: number
  readonly mime: string
  /** Expected body byte length. */
  readonly size: number
  /** Expected SHA-256 hex digest of the body. */
  readonly hash: string
}

/** Transfer options shared by put/get/delete. */
export interface ArtifactBodyTransferOptions {
  /** Aborts the transfer; the operation rejects with the signal's reason. */
  readonly signal?: AbortSignal
}

/** Presign options: a bounded TTL for the returned URL. */
export interface ArtifactBodyPresignOptions extends ArtifactBodyTransferOptions {
  /** Bounded by the store's `presignTtlMs`; defaults to it. */
  readonly ttlMs?: number
  /**
   * (Addition) Epoch milliseconds the URL must not outlive; the artifact service passes
   * its delivery link's expiry. Stores that do not know it may ignore it.
   */
  readonly notAfter?: number
}

/**
 * Host-owned blob storage. Implementations verify ownership on every operation,
 * size/SHA-256/MIME on put and get (fail closed), refuse delete under legal hold, and never
 * disclose bucket, path or key in errors, telemetry or records.
 */
export interface ArtifactBodyStore {
  /** Store a body; verifies size and SHA-256 against the ref. */
  put(ref: ArtifactBodyRef, body: Uint8Array | ReadableStream<Uint8Array>, options?: ArtifactBodyTransferOptions): Promise<void>
  /** Retrieve a body; verified (size, MIME, SHA-256) before the first byte is returned. */
  get(ref: ArtifactBodyRef, options?: ArtifactBodyTransferOptions): Promise<ReadableStream<Uint8Array>>
  /** Delete a body; idempotent; refused under legal hold. */
  delete(ref: ArtifactBodyRef, options?: ArtifactBodyTransferOptions): Promise<void>
  /** A bounded-TTL URL for this one object. */
  presign(ref: ArtifactBodyRef, options?: ArtifactBodyPresignOptions): Promise<string>
}

/** Host-resolved S3 credentials; never inline, never logged. */
export interface S3Credentials {
  readonly accessKeyId: string
  readonly secretAccessKey: string
  /** STS session token: sent (and signed) on every request, presigned or not. */
  readonly sessionToken?: string
}

/** Body store caps; each an integer in `1..hard` (`RangeError` otherwise). */
export interface ArtifactBodyLimits {
  /** Default 64 MiB, hard 512 MiB. */
  readonly maxBodyBytes?: number
  /** Transfers (put, get, delete) in flight at once: default 4, hard 16. */
  readonly maxConcurrentTransfers?: number
  /** Longest presigned URL, in ms: default 600 000 (10 min), hard 86 400 000 (24 h). */
  readonly presignTtlMs?: number
  /** Largest ref (JSON bytes): default 256, hard 1 KiB. */
  readonly maxRefBytes?: number
}

/** Resolved body store caps. */
export interface ResolvedArtifactBodyLimits {
  readonly maxBodyBytes: number
  readonly maxConcurrentTransfers: number
  readonly presignTtlMs: number
  readonly maxRefBytes: number
}

export declare const DEFAULT_ARTIFACT_BODY_LIMITS: ResolvedArtifactBodyLimits
export declare const HARD_ARTIFACT_BODY_LIMITS: ResolvedArtifactBodyLimits

/** The resolved caps; a value outside `1..hard` is a `RangeError`. */
export declare function resolveArtifactBodyLimits(input?: ArtifactBodyLimits): ResolvedArtifactBodyLimits

/** Options of {@link createS3ArtifactBodyStore}. */
export interface S3ArtifactBodyStoreOptions {
  /** https URL of the S3-compatible endpoint (http only for loopback); a path prefix is kept. */
  readonly endpoint: string
  /** Bucket (path-style addressing). */
  readonly bucket: string
  /** SigV4 region; default `"us-east-1"` (R2: `"auto"`). */
  readonly region?: string
  /** Called once per operation; its own error text never appears in an error. */
  readonly credentials: () => S3Credentials | Promise<S3Credentials>
  /** Host-owned client-side encryption; hash and size refer to the plaintext. */
  readonly kms?: (op: 'encrypt' | 'decrypt', body: Uint8Array) => Promise<Uint8Array>
  /** Legal hold: delete refuses (`HELD`) when true, fails (`STORE`) when it throws. */
  readonly isHeld?: (ref: ArtifactBodyRef) => boolean | Promise<boolean>
  readonly limits?: ArtifactBodyLimits
}

/** Why the S3 adapter failed. */
export type S3ArtifactBodyErrorCode = 'PRESIGN' | 'UPLOAD' | 'DOWNLOAD' | 'DELETE' | 'CREDENTIALS'

/** An S3 adapter failure: `code` is `ERR_PRISM_S3_<reason>`. */
export declare class S3ArtifactBodyError extends Error {
  constructor(message: string, reason: S3ArtifactBodyErrorCode, options?: ErrorOptions)
  readonly name: 'S3ArtifactBodyError'
  readonly reason: S3ArtifactBodyErrorCode
  readonly code: `ERR_PRISM_S3_${S3ArtifactBodyErrorCode}`
}

/**
 * The native S3-compatible body store (AWS S3, MinIO, Cloudflare R2). `put` reads the body's
 * bytes in place (no copy) until it settles: leave them unchanged until then (a body changed
 * meanwhile is refused, never stored). `get` yields 1 MiB chunks.
 */
export declare function createS3ArtifactBodyStore(options: S3ArtifactBodyStoreOptions): ArtifactBodyStore

/** The object key a ref's body lives under (unencoded segments joined by `/`). */
export declare function s3ObjectKey(ref: ArtifactBodyRef): string

/** The reference's `SigV4SignInput` (lowercase header names; `path` already encoded). */
export interface SigV4SignInput {
  readonly method: string
  readonly path: string
  readonly query?: Readonly<Record<string, string>>
  readonly headers: Readonly<Record<string, string>>
  readonly signedHeaders: readonly string[]
  readonly payloadHash: string
  readonly region: string
  readonly service: string
  /** `YYYYMMDDTHHMMSSZ`. */
  readonly amzDate: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly sessionToken?: string
}

/** (Addition) AWS Signature V4 of a request, for hosts that verify or build S3 requests. */
export declare function signV4(input: SigV4SignInput): Promise<{ readonly signature: string; readonly canonicalRequest: string }>

/** (Addition) Lowercase hex SHA-256. */
export declare function sha256Hex(data: Uint8Array): Promise<string>
