// The hand-written typings against the native tables they describe: every error reason and
// code a class can carry, and every cap's documented default and hard maximum. A reason
// added in Rust without its typing, or a default changed in one place, fails here.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const prism = require('../index.js')
const native = require('../binding.js')
const typings = (file) => readFileSync(join(root, 'types', file), 'utf8')

/** The string literals of `export type <name> = 'a' | 'b' …`. */
function union(source, name) {
  const m = new RegExp(`export type ${name} =([^;]*?)(?:\\n\\n|\\n/\\*\\*|\\nexport )`).exec(source)
  assert.ok(m, `types declare ${name}`)
  return [...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1]).sort()
}

/** `{ name: { default, hard } }` from the TSDoc "Default D, hard H" of each member of a limits type. */
function documentedCaps(source, name) {
  const m = new RegExp(`export (?:interface|type) ${name}\\b[^{]*\\{([\\s\\S]*?)\\n\\}`).exec(source)
  assert.ok(m, `types declare ${name}`)
  const caps = {}
  for (const [, doc, prop] of m[1].matchAll(/\/\*\*([\s\S]*?)\*\/\s*readonly (\w+)\?: number/g)) {
    const n = String.raw`(\d+(?: \d{3})*(?: [KM]iB)?)`
    const d = new RegExp(`default ${n}(?: \\([^)]*\\))?, hard ${n}`, 'i').exec(doc.replace(/\n\s*\*/g, ' '))
    assert.ok(d, `${name}.${prop} documents "Default D, hard H"`)
    caps[prop] = { default: bytes(d[1]), hard: bytes(d[2]) }
  }
  assert.ok(Object.keys(caps).length > 0, `${name} has caps`)
  return caps
}

function bytes(text) {
  const [, n, unit] = /^(\d+(?: \d{3})*)(?: (KiB|MiB))?$/.exec(text.trim())
  return Number(n.replace(/ /g, '')) * (unit === 'KiB' ? 1024 : unit === 'MiB' ? 1024 * 1024 : 1)
}

test('error reasons and codes in the typings are exactly the native ones', () => {
  const tables = JSON.parse(native.errorTables())
  const errors = typings('errors.d.ts')
  assert.deepEqual(union(errors, 'ArtifactErrorReason'), [...tables.artifactReasons].sort())
  const prefixed = (p, xs) => xs.map((x) => p + x).sort()
  assert.deepEqual(union(errors, 'CodingPatchReviewErrorCode'), prefixed('ERR_PRISM_REVIEW_', tables.reviewCodes))
  assert.deepEqual(union(errors, 'LanguageIntelligenceErrorCode'), prefixed('ERR_PRISM_LSP_', tables.lspCodes))
  assert.deepEqual(union(errors, 'ArtifactBodyErrorCode'), [...tables.bodyCodes].sort())
  assert.deepEqual(union(errors, 'ArtifactBodyStoreErrorCode'), prefixed('ERR_PRISM_ARTIFACT_BODY_', tables.bodyCodes))
  assert.deepEqual(Object.keys(prism.ARTIFACT_BODY_ERROR_CODES).sort(), [...tables.bodyCodes].sort())
  assert.deepEqual(union(typings('drafts.d.ts'), 'WorkDraftErrorReason'), [...tables.workDraftReasons].sort())
  assert.deepEqual([...prism.WORK_DRAFT_ERROR_REASONS].sort(), [...tables.workDraftReasons].sort())
  assert.deepEqual(union(typings('bodies.d.ts'), 'S3ArtifactBodyErrorCode'), [...tables.s3Codes].sort())
})

const resolvers = [
  ['artifacts.d.ts', 'ArtifactLimits', (l) => prism.resolveArtifactLimits(l)],
  ['review.d.ts', 'CodingReviewLimits', (l) => prism.resolveCodingReviewLimits(l)],
  ['diagnostics.d.ts', 'NormalizeDiagnosticsOptions', (l) => prism.resolveDiagnosticsLimits(l)],
  ['lsp.d.ts', 'LanguageIntelligenceLimits', (l) => prism.resolveLanguageIntelligenceLimits(l)],
  ['drafts.d.ts', 'WorkDraftLimits', (l) => prism.resolveWorkDraftLimits(l)],
  ['bodies.d.ts', 'ArtifactBodyLimits', (l) => prism.resolveArtifactBodyLimits(l)],
]

for (const [file, name, resolve] of resolvers) {
  test(`${name}: documented defaults and hard maxima are the native ones`, () => {
    const caps = documentedCaps(typings(file), name)
    const defaults = resolve(undefined)
    assert.deepEqual(Object.keys(caps).sort(), Object.keys(defaults).sort(), 'the same caps')
    for (const [cap, { default: d, hard }] of Object.entries(caps)) {
      assert.equal(defaults[cap], d, `${name}.${cap} default`)
      assert.equal(resolve({ [cap]: hard })[cap], hard, `${name}.${cap} accepts its hard maximum`)
      assert.throws(() => resolve({ [cap]: hard + 1 }), RangeError, `${name}.${cap} refuses hard + 1`)
    }
  })
}

test('store options: documented hard maxima are the native ones', () => {
  const store = typings('store.d.ts')
  const constructors = [
    ['MemoryCheckpointStoreOptions', (o) => prism.createMemoryCheckpointStore(o)],
    ['SqlitePersistenceOptions', (o) => prism.createSqlitePersistence({ filename: ':memory:', ...o })],
    ['PostgresPersistenceOptions', (o) => prism.createPostgresPersistence({ connectionString: 'postgres://u@127.0.0.1:1/db', ...o })],
  ]
  for (const [name, make] of constructors) {
    for (const [cap, { hard }] of Object.entries(documentedCaps(store, name))) {
      const made = make({ [cap]: hard })
      made.close?.()
      assert.throws(() => make({ [cap]: hard + 1 }), RangeError, `${name}.${cap} refuses hard + 1`)
    }
  }
})
