/**
 * HTTP adapter: a WHATWG fetch handler over the artifact review service, and a small
 * adapter that mounts any fetch handler in `node:http`.
 *
 * @packageDocumentation
 */

import type { AgentIdentity, ArtifactDeliveryToken, ArtifactLimits, ArtifactService, SecretRedactor } from './artifacts'
import type { OwnershipScope } from './store'

/** The `operation` passed to `authorize` (`@arnilo/prism`'s names). */
export type ArtifactOperation =
  | 'artifact.attach'
  | 'artifact.list'
  | 'artifact.get'
  | 'artifact.revise'
  | 'artifact.compare'
  | 'artifact.approve'
  | 'artifact.reject'
  | 'artifact.last-validated'
  | 'artifact.delivery-link'
  | 'artifact.download'

/** What `authorize` receives. Ownership comes only from its answer, never from the body. */
export interface ArtifactAuthorizationInput {
  /** The incoming request (headers, URL). Do not read its body. */
  readonly request: Request
  /** What the request wants to do. */
  readonly operation: ArtifactOperation
  /** Thread id from the path (or from the verified link on download). */
  readonly threadId?: string
  /** Artifact id from the path (or from the verified link on download). */
  readonly artifactId?: string
  /** On download: the verified delivery token to reauthorize against (signature and expiry already checked). */
  readonly deliveryToken?: ArtifactDeliveryToken
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal
}

/** A grant: the ownership the request acts for, and optionally a host-verified identity. */
export interface PrismServerAuthorization {
  /** The owner every service call is made for. */
  readonly ownership: OwnershipScope
  /**
   * Host-verified identity; the handler refuses (403) one the artifact service would refuse:
   * malformed (an `expiresAt` that is not a timestamp), not `verified: true`, expired or
   * revoked, or whose tenant/account/user conflicts with the ownership.
   */
  readonly identity?: AgentIdentity
  /** Host data; not read by the handler. */
  readonly metadata?: Readonly<Record<string, unknown>>
}

/**
 * The host's authorization callback: `false` refuses (403); a grant allows. As additions,
 * `null`/`undefined` also refuse and a bare `OwnershipScope` is a grant without identity.
 */
export type ArtifactAuthorizer = (input: ArtifactAuthorizationInput) => AuthorizerResult | Promise<AuthorizerResult>

/**
 * What an `authorize` callback returns: a grant (`PrismServerAuthorization`, or a bare
 * `OwnershipScope` without identity), or `false`/`null`/`undefined` to refuse.
 */
export type AuthorizerResult = false | null | undefined | OwnershipScope | PrismServerAuthorization

/** Options of {@link createArtifactHandler}. */
export interface CreateArtifactHandlerOptions {
  /** The artifact service the routes call (or any object with its nine methods). */
  readonly service: ArtifactService
  /** Grants ownership (and optionally an identity) per request; `false` is 403. */
  readonly authorize: ArtifactAuthorizer
  /** The service's link secret (16..4096 bytes), to verify delivery links on download. */
  readonly linkSecret: string | Uint8Array
  /** Route prefix (default `/prism/artifacts`): absolute, no query or fragment, not `/`. */
  readonly basePath?: string
  /** Applied to every JSON response body (results and errors): `createSecretRedactor(…)` or any `{ redact(value) }`. */
  readonly redactor?: SecretRedactor | { redact(value: unknown): unknown }
  /**
   * The service's caps: `maxRequestBytes` bounds request bodies (default 64 KiB, hard
   * 1 MiB); `deliveryLinkTokenBytes` bounds links on download (default: the service's).
   */
  readonly limits?: ArtifactLimits
}

/** A WHATWG fetch handler. */
export type PrismRequestHandler = (request: Request) => Promise<Response>

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
 * artifact, 409 conflict, 410 expired link, 413 body too large, 415 a body that is not
 * `application/json` (before `authorize` runs), 422 too many artifacts/revisions, 503 the
 * store's backend failed (retry).
 *
 * A body may repeat the path's `threadId`/`artifactId` (a different one is 400), and integer
 * fields may come as decimal strings; a `ttlSeconds` over the cap is 400.
 *
 * @throws TypeError for missing or malformed options (including an unacceptable `basePath`).
 * @throws RangeError for a limit outside `1..hard`.
 */
export declare function createArtifactHandler(options: CreateArtifactHandlerOptions): PrismRequestHandler

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
