// Opening the local review store: the database, the link secret beside it, the artifact
// service over the embedded SQLite store. Everything here uses the package's public API.
import { mkdirSync, readFileSync, writeFileSync, statSync, chmodSync, existsSync, renameSync, rmSync } from 'node:fs'
import { randomBytes, createHash } from 'node:crypto'
import { dirname, join, resolve } from 'node:path'
import { CliError, UsageError } from './errors.mjs'

/** The one owner every local review belongs to; `serve` authorizes requests to the same owner. */
export const LOCAL_OWNERSHIP = Object.freeze({ tenantId: 'local', userId: 'prism-review' })

/**
 * Every revision of a review carries its whole manifest in `preview.review`, so the record
 * and preview caps are raised to their hard maximum (64 KiB); a review whose artifact is
 * full anyway continues in a new artifact (see review.mjs).
 */
export const SERVICE_LIMITS = Object.freeze({ recordBytes: 64 * 1024, previewBytes: 64 * 1024 })

let apiPromise
/** The package's public API (`import('prism-review')`), loaded on first use. */
export function loadApi() {
  apiPromise ??= import('prism-review')
  return apiPromise
}

/** Requires the named exports, with one clear error when this build lacks them. */
export async function requireApi(...names) {
  const api = await loadApi()
  const missing = names.filter((n) => typeof api[n] !== 'function')
  if (missing.length > 0) {
    throw new CliError(`this build of prism-review does not provide ${missing.join(', ')} yet`)
  }
  return api
}

/** `.prism/` under the repository root, with a `.gitignore` so git never sees it. */
export function prismDir(root) {
  const dir = join(root, '.prism')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const ignore = join(dir, '.gitignore')
  if (!existsSync(ignore)) writeFileSync(ignore, '# written by prism-review: keep the review store out of git\n*\n')
  return dir
}

export function defaultDbPath(root) {
  return join(root, '.prism', 'review.db')
}

/**
 * The link secret stored beside the database (`<db folder>/link-secret`), generated once
 * (32 random bytes, hex) and written with mode 0600; a looser mode found later is tightened.
 */
export function loadLinkSecret(dbPath) {
  const file = join(dirname(dbPath), 'link-secret')
  try {
    writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' })
  } catch (err) {
    if (err.code !== 'EEXIST') throw new CliError(`cannot create the link secret ${file}: ${err.code || err.message}`)
  }
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600)
  const secret = readFileSync(file, 'utf8').trim()
  if (secret.length < 32) throw new CliError(`the link secret ${file} is too short; delete it to generate a new one`)
  return { secret, file }
}

/** The database path: `--db` (relative to `cwd`), else `.prism/review.db` at the repository root. */
export function dbPathFor({ root, db, cwd = process.cwd() }) {
  return db ? resolve(cwd, db) : defaultDbPath(root)
}

/** The link secret beside `dbPath` when it exists, without creating or changing anything. */
export function existingLinkSecret(dbPath) {
  try {
    const secret = readFileSync(join(dirname(dbPath), 'link-secret'), 'utf8').trim()
    return secret.length >= 32 ? secret : null
  } catch {
    return null
  }
}

/**
 * Opens the store: `{ api, service, persistence, dbPath, secret, close }`.
 * `dbPath` defaults to `.prism/review.db` at the repository root.
 *
 * With `create: false` (the read-only commands) nothing is created: a missing database is
 * `null` when it is the default one (nothing was reviewed yet) and a UsageError when `--db`
 * names it (a mistyped path must not become an empty database); the link secret is read
 * when it exists, else a random one lives for this process only (nothing here signs links).
 */
export async function openStore({ root, db, cwd = process.cwd(), extraSecrets = [], create = true }) {
  const api = await requireApi('createSqlitePersistence', 'createArtifactService', 'createSecretRedactor')
  const dbPath = dbPathFor({ root, db, cwd })
  let secret
  if (create) {
    if (root) prismDir(root)
    mkdirSync(dirname(dbPath), { recursive: true, mode: 0o700 })
    secret = loadLinkSecret(dbPath).secret
  } else {
    if (!existsSync(dbPath)) {
      if (db) throw new UsageError(`no database at ${dbPath}: check --db (\`prism-review review\` creates the database)`)
      return null
    }
    secret = existingLinkSecret(dbPath) ?? randomBytes(32).toString('hex')
  }
  const persistence = await api.createSqlitePersistence({ filename: dbPath })
  const redactor = api.createSecretRedactor([secret, ...extraSecrets.filter((s) => typeof s === 'string' && s)])
  const service = api.createArtifactService(persistence.checkpoints, { redactor, linkSecret: secret, limits: SERVICE_LIMITS })
  let closed = false
  return {
    api,
    service,
    persistence,
    redactor,
    dbPath,
    secret,
    async close() {
      if (closed) return
      closed = true
      if (typeof persistence.close === 'function') await persistence.close()
    },
  }
}

/**
 * The credential redactor for check output: the values of secret-named environment
 * variables, the link secret when there is one, and credential shapes.
 */
export async function checkOutputRedactor(secrets = []) {
  const { createCredentialRedactor } = await requireApi('createCredentialRedactor')
  const r = createCredentialRedactor({ env: process.env, secrets: secrets.filter((s) => typeof s === 'string' && s) })
  return (text) => r.redact(text)
}

/**
 * Writes the patch body to `.prism/patches/<sha256>.patch`: once, and again only when the
 * file there no longer hashes to its name.
 */
export function storePatch(root, sha256, bytes) {
  const dir = join(prismDir(root), 'patches')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = join(dir, `${sha256}.patch`)
  const existed = existsSync(file)
  if (!existed || createHash('sha256').update(readFileSync(file)).digest('hex') !== sha256) {
    const tmp = `${file}.${process.pid}.tmp`
    writeFileSync(tmp, bytes, { mode: 0o600 })
    renameSync(tmp, file)
  }
  return {
    file,
    uri: `.prism/patches/${sha256}.patch`,
    /** Removes the file again when this call created it (a review that failed keeps nothing). */
    discard() {
      if (!existed) rmSync(file, { force: true })
    },
  }
}
