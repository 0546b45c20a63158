/**
 * prism-review: artifact review, coding patch review, diagnostics and a robust LSP
 * client for Node agent runtimes, implemented in Rust.
 *
 * Every failure is one of the exported error classes (or a `RangeError` for a limit
 * outside `1..hard`); inputs are plain objects and results are plain objects whose
 * optional fields are absent, never `null`.
 *
 * @packageDocumentation
 */

export * from './types/errors'
export * from './types/review'
export * from './types/diagnostics'
export * from './types/store'
export * from './types/artifacts'
export * from './types/bodies'
export * from './types/http'
export * from './types/drafts'
export * from './types/lsp'
export * from './types/credentials'
