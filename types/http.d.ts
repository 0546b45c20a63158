/**
 * HTTP adapter: a WHATWG fetch handler over the artifact review service, and a small
 * adapter that mounts any fetch handler in `node:http`.
 *
 * @packageDocumentation
 */

import type { AgentIdentity, ArtifactDeliveryToken, SecretRedactor } from './artifacts'
import type { OwnershipScope } from './store'

/** The `operation` passed to `authorize`: the service method a route calls, or `download`. */
export type ArtifactHttpOperation =
  | 'attach'
  | 'list'
  | 'get'
  | 'revise'
  | 'compare'
  | 'approve'
  | 'reject'
  | 'lastValidated'
  | 'deliveryLink'
  | 'download'

/** What `authorize` receives. Ownership comes only from its answer, never from the body. */
export interface ArtifactAuthorizeArgs {
  /** The incoming request (headers, URL). Do not read its body. */
  readonly request: Request
  /** What the request wants to do. */
  readonly operation: ArtifactHttpOperation
  /** Thread id from the path (or from the verified link on download). */
  readonly threadId?: string
  /** Artifact id from the path (or from the verified link on download). */
  readonly artifactId?: string
  /** On download: the verified link payload (signature and expiry already checked). */
  readonly deliveryToken?: ArtifactDeliveryToken
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal
}

/**
 * What `authorize` answers: `false` (or `null`/`undefined`) refuses with 403; an ownership
 * alone, or `{ ownership, identity? }`, grants. The handler refuses (403) an identity that
 * is not `verified: true`, is expired or revoked, or whose tenant/account/user conflicts
 * with the ownership; the service checks it again.
 */
export type ArtifactAuthorizeResult =
  | false
  | null
  | undefined
  | OwnershipScope
  | { readonly ownership: OwnershipScope; readonly identity?: AgentIdentity }

/** The host's authorization callback. */
export type ArtifactAuthorize = (args: ArtifactAuthorizeArgs) => ArtifactAuthorizeResult | PromiseLike<ArtifactAuthorizeResult>

/**
 * The service methods the handler calls: an `ArtifactService` from `createArtifactService`,
 * or any object with the same methods (a host wrapper, a test double). Each takes one input object carrying `ownership`,
 * `identity?`, `threadId`, `artifactId?`, the body fields and `signal`, and rejects with an
 * `ArtifactError` whose `reason` picks the status.
 */
export interface ArtifactHandlerService {
  /** `POST {base}/:thread` (201). */
  attach(input: any): PromiseLike<unknown>
  /** `GET {base}/:thread` (`?cursor=&limit=`). */
  list(input: any): PromiseLike<unknown>
  /** `GET {base}/:thread/:artifact`, and the re-read on download. */
  get(input: any): PromiseLike<unknown>
  /** `POST …/revise`. */
  revise(input: any): PromiseLike<unknown>
  /** `POST …/compare`. */
  compare(input: any): PromiseLike<unknown>
  /** `POST …/approve`. */
  approve(input: any): PromiseLike<unknown>
  /** `POST …/reject`. */
  reject(input: any): PromiseLike<unknown>
  /** `GET …/last-validated`. */
  lastValidated(input: any): PromiseLike<unknown>
  /** `POST …/delivery-link`. */
  deliveryLink(input: any): PromiseLike<unknown>
}

/** Caps of the handler. */
export interface ArtifactHandlerLimits {
  /** Largest request body in bytes, enforced while streaming (default 65 536, hard 1 048 576; outside `1..hard` is a RangeError). */
  readonly maxRequestBytes?: number
}

/** Options of {@link createArtifactHandler}. */
export interface ArtifactHandlerOptions {
  /** The artifact service the routes call. */
  readonly service: ArtifactHandlerService
  /** Grants ownership (and optionally an identity) per request; `false` is 403. */
  readonly authorize: ArtifactAuthorize
  /** The service's link secret (16..4096 bytes), to verify delivery links on download. */
  readonly linkSecret: string | Uint8Array
  /** Route prefix (default `/prism/artifacts`): absolute, no query or fragment, not `/`. */
  readonly basePath?: string
  /** Applied to every JSON response body (results and errors): `createSecretRedactor(…)` or any `{ redact(value) }`. */
  readonly redactor?: SecretRedactor | { redact(value: unknown): unknown }
  /** Caps; see {@link ArtifactHandlerLimits}. */
  readonly limits?: ArtifactHandlerLimits
}

/** A WHATWG fetch handler. */
export type ArtifactFetchHandler = (request: Request) => Promise<Response>

/** The JSON body of every error response. */
export interface ArtifactHttpErrorBody {
  readonly error: {
    /** An `ArtifactError` reason (`not_found`, `conflict`, …) or an adapter code (`invalid_json`, `body_too_large`, `forbidden`, `unknown_route`, `internal`). */
    readonly code: string
    /** What went wrong; never a stack trace or a secret. */
    readonly message: string
  }
}

/**
 * Build the fetch handler for the artifact routes under `basePath`:
 * `POST {base}/:thread` attach (201), `GET {base}/:thread` list, `GET {base}/:thread/:artifact` get,
 * `POST …/revise|compare|approve|reject|delivery-link`, `GET …/last-validated`,
 * `GET {base}/download?link=…` (verify, reauthorize against the link's ownership, re-read,
 * return `{ artifactId, threadId, revision }`).
 * Statuses: 400 bad input or JSON, 401 bad link signature, 403 refused, 404 unknown route or
 * artifact, 409 conflict, 410 expired link, 413 body too large, 422 too many artifacts/revisions.
 *
 * @throws TypeError for missing or malformed options (including an unacceptable `basePath`).
 * @throws RangeError for `limits.maxRequestBytes` outside `1..1048576`.
 */
export declare function createArtifactHandler(options: ArtifactHandlerOptions): ArtifactFetchHandler

/** A `node:http` request listener. */
export type NodeRequestListener = (
  req: import('node:http').IncomingMessage,
  res: import('node:http').ServerResponse,
) => void

/**
 * Mount a fetch handler in `node:http`: `http.createServer(toNodeListener(handler))`.
 * The request body streams on demand, the request's `signal` aborts when the client
 * connection closes before the response is complete, and a body the handler did not
 * read to the end is never read (the connection closes after the response).
 *
 * @throws TypeError when `handler` is not a function.
 */
export declare function toNodeListener(handler: (request: Request) => Response | Promise<Response>): NodeRequestListener
