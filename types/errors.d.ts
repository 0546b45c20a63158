/** Every `reason` an {@link ArtifactError} can carry. */
export type ArtifactErrorReason =
  | 'invalid_input'
  | 'invalid_id'
  | 'ownership'
  | 'not_found'
  | 'not_validated'
  | 'conflict'
  | 'too_many_artifacts'
  | 'too_many_revisions'
  | 'too_many_citations'
  | 'record_too_large'
  | 'preview_too_large'
  | 'citation_too_large'
  | 'mime_too_large'
  | 'hash_too_large'
  | 'uri_too_large'
  | 'note_too_large'
  | 'title_too_large'
  | 'unsafe_uri'
  | 'invalid_link'
  | 'link_expired'
  | 'link_too_large'

/**
 * An artifact service failure. `reason` says which rule refused the call. Constructed as
 * `new ArtifactError(message, reason)`, the argument order of @arnilo/prism.
 */
export declare class ArtifactError extends Error {
  constructor(message: string, reason: ArtifactErrorReason | (string & {}), options?: ErrorOptions)
  readonly name: 'ArtifactError'
  readonly code: 'ERR_PRISM_ARTIFACT'
  readonly reason: ArtifactErrorReason | (string & {})
}

/** The `code` of every checkpoint store conflict, {@link CheckpointConflictError}'s among them. */
export declare const CHECKPOINT_CONFLICT_CODE: 'ERR_PRISM_CHECKPOINT_CONFLICT'

/**
 * A compare-and-swap conflict in a checkpoint store. A host's own store rejects with
 * this (or any error whose `code` is `"ERR_PRISM_CHECKPOINT_CONFLICT"`) when
 * `expectedVersion` does not match.
 */
export declare class CheckpointConflictError extends Error {
  constructor(message?: string, options?: ErrorOptions)
  readonly name: 'CheckpointConflictError'
  readonly code: 'ERR_PRISM_CHECKPOINT_CONFLICT'
}

/** Every `code` a {@link CodingPatchReviewError} can carry. */
export type CodingPatchReviewErrorCode =
  | 'ERR_PRISM_REVIEW_INPUT'
  | 'ERR_PRISM_REVIEW_LIMIT'
  | 'ERR_PRISM_REVIEW_BINDING'
  | 'ERR_PRISM_REVIEW_STATE'
  | 'ERR_PRISM_REVIEW_OWNERSHIP'

/** A coding patch review failure; fail-closed. */
export declare class CodingPatchReviewError extends Error {
  /** `code` may be given with or without the `ERR_PRISM_REVIEW_` prefix. */
  constructor(code: CodingPatchReviewErrorCode | 'INPUT' | 'LIMIT' | 'BINDING' | 'STATE' | 'OWNERSHIP', message?: string, options?: ErrorOptions)
  readonly name: 'CodingPatchReviewError'
  readonly code: CodingPatchReviewErrorCode
}

/** Every `code` a {@link LanguageIntelligenceError} can carry. */
export type LanguageIntelligenceErrorCode =
  | 'ERR_PRISM_LSP_FRAMING'
  | 'ERR_PRISM_LSP_SERVER'
  | 'ERR_PRISM_LSP_TIMEOUT'
  | 'ERR_PRISM_LSP_LIMIT'
  | 'ERR_PRISM_LSP_UNSUPPORTED'
  | 'ERR_PRISM_LSP_WORKSPACE'

/** A language intelligence (LSP client) failure. */
export declare class LanguageIntelligenceError extends Error {
  /** `code` may be given with or without the `ERR_PRISM_LSP_` prefix. */
  constructor(code: LanguageIntelligenceErrorCode | 'FRAMING' | 'SERVER' | 'TIMEOUT' | 'LIMIT' | 'UNSUPPORTED' | 'WORKSPACE', message?: string, options?: ErrorOptions)
  readonly name: 'LanguageIntelligenceError' | 'LspFrameError'
  readonly code: LanguageIntelligenceErrorCode
}

/** Every `code` an {@link ArtifactBodyStoreError} can carry. */
export type ArtifactBodyStoreErrorCode =
  | 'ERR_PRISM_ARTIFACT_BODY_OWNERSHIP'
  | 'ERR_PRISM_ARTIFACT_BODY_HASH_MISMATCH'
  | 'ERR_PRISM_ARTIFACT_BODY_SIZE_MISMATCH'
  | 'ERR_PRISM_ARTIFACT_BODY_MIME_MISMATCH'
  | 'ERR_PRISM_ARTIFACT_BODY_HELD'
  | 'ERR_PRISM_ARTIFACT_BODY_STORE'

/** Why an artifact body store refused or failed: the keys of {@link ARTIFACT_BODY_ERROR_CODES}. */
export type ArtifactBodyErrorCode = 'OWNERSHIP' | 'HASH_MISMATCH' | 'SIZE_MISMATCH' | 'MIME_MISMATCH' | 'HELD' | 'STORE'

/** The `code` of an {@link ArtifactBodyStoreError} for each reason. */
export declare const ARTIFACT_BODY_ERROR_CODES: Readonly<{ [R in ArtifactBodyErrorCode]: `ERR_PRISM_ARTIFACT_BODY_${R}` }>

/**
 * An artifact body store failure, constructed as `new ArtifactBodyStoreError(message, reason)`
 * (the argument order of @arnilo/prism); `code` is derived from `reason`.
 */
export declare class ArtifactBodyStoreError extends Error {
  constructor(message: string, reason: ArtifactBodyErrorCode, options?: ErrorOptions)
  readonly name: 'ArtifactBodyStoreError'
  readonly reason: ArtifactBodyErrorCode
  readonly code: ArtifactBodyStoreErrorCode
}
