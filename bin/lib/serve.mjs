// `prism-review serve`: the artifact HTTP API (createArtifactHandler + toNodeListener) on
// 127.0.0.1 over the same store the commands use. The only authorization is
// `Authorization: Bearer <PRISM_REVIEW_TOKEN>`; every authorized request acts as the local owner.
import { createServer } from 'node:http'
import { timingSafeEqual, createHash } from 'node:crypto'
import { UsageError, CliError } from './errors.mjs'
import { openStore, requireApi, LOCAL_OWNERSHIP } from './context.mjs'
import { repoRoot } from './git.mjs'
import { printJson, println } from './output.mjs'

export const DEFAULT_PORT = 7420
export const BASE_PATH = '/prism/artifacts'
const MIN_TOKEN = 16

function digest(s) {
  return createHash('sha256').update(String(s), 'utf8').digest()
}

/** Constant-time comparison of the request's bearer token with the configured one. */
export function bearerMatches(header, token) {
  if (typeof header !== 'string') return false
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header)
  if (!m) return false
  return timingSafeEqual(digest(m[1]), digest(token))
}

/**
 * PRISM_REVIEW_TOKEN must be at least MIN_TOKEN characters with no whitespace: a token with
 * a space or newline (a paste accident) could never match a bearer header, so every request
 * would get 401; refuse it at start instead.
 */
export function checkToken(token) {
  if (typeof token !== 'string' || token === '') {
    throw new UsageError(`serve needs PRISM_REVIEW_TOKEN set to a token of at least ${MIN_TOKEN} characters without whitespace`)
  }
  if (/\s/.test(token)) {
    throw new UsageError('PRISM_REVIEW_TOKEN contains whitespace (a space, tab or newline); set it to the token alone')
  }
  if (token.length < MIN_TOKEN) {
    throw new UsageError(`PRISM_REVIEW_TOKEN is ${token.length} characters; serve needs at least ${MIN_TOKEN}`)
  }
}

export function parsePort(text) {
  if (text === undefined) return DEFAULT_PORT
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) throw new UsageError(`--port must be an integer 0..65535, got "${text}"`)
  return Number(text)
}

export async function serve(values) {
  const port = parsePort(values.port)
  const token = process.env.PRISM_REVIEW_TOKEN
  checkToken(token)
  const root = values.db === undefined ? await repoRoot(process.cwd()) : undefined
  const { createArtifactHandler, toNodeListener } = await requireApi('createArtifactHandler', 'toNodeListener')
  const store = await openStore({ root, db: values.db, extraSecrets: [token], create: true })
  const authorize = ({ request }) => {
    const header = request && request.headers && typeof request.headers.get === 'function' ? request.headers.get('authorization') : null
    return bearerMatches(header, token) ? { ownership: LOCAL_OWNERSHIP } : false
  }
  const handler = createArtifactHandler({ service: store.service, authorize, linkSecret: store.secret, basePath: BASE_PATH, redactor: store.redactor })
  const listener = toNodeListener(handler)
  const server = createServer((req, res) => {
    // The token check runs before the handler sees the request: no token, no work.
    if (!bearerMatches(req.headers.authorization, token)) {
      req.resume()
      const body = JSON.stringify({ error: { code: 'unauthorized', message: 'missing or wrong bearer token' } })
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer', 'content-length': Buffer.byteLength(body) })
      res.end(body)
      return
    }
    listener(req, res)
  })
  await new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new CliError(`cannot listen on 127.0.0.1:${port}: ${err.code || err.message}`)))
    server.listen(port, '127.0.0.1', resolve)
  })
  const actual = server.address().port
  const url = `http://127.0.0.1:${actual}${BASE_PATH}`
  if (values.json) printJson({ url, port: actual, basePath: BASE_PATH, db: store.dbPath })
  else {
    println(`serving the artifact API on ${url} (database ${store.dbPath})`)
    println('authorization: Authorization: Bearer $PRISM_REVIEW_TOKEN; stop with Ctrl-C')
  }
  return new Promise((resolve) => {
    let stopping = false
    const stop = () => {
      if (stopping) return
      stopping = true
      server.close(async () => {
        await store.close().catch(() => {})
        resolve(0)
      })
      server.closeAllConnections?.()
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
}
